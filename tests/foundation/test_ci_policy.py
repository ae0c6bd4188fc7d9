"""Under CI=true, a test skipped for a missing import fails (tests/conftest.py); other skips stay skips."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"
TEST = '''
import pytest

def test_missing_dependency():
    pytest.importorskip("no_such_module_icml26")

def test_gpu_only():
    pytest.skip("needs a GPU")
'''


@pytest.mark.parametrize("ci, failed", [("true", 1), ("", 0)])
def test_missing_import_skip_fails_only_in_ci(tmp_path, ci, failed):
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_inner.py").write_text(TEST)
    env = {**os.environ, "CI": ci}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                          str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120).stdout
    assert (f"{failed} failed" in out) == bool(failed), out
    assert "1 skipped" in out or "2 skipped" in out, out
