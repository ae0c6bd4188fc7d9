"""Suite-wide test settings and helpers.

- torch runs single-threaded (tiny tensors on a shared 2-core machine).
- Under CI (`CI=true`) a test skipped because an import is missing FAILS: CI installs every extra, so such a
  skip means a dependency was dropped from pyproject.toml.
- `docs_example(slug)` runs every ```python block of docs/<slug>.md, in order and in one namespace, exactly as
  written (a broken example fails the suite). Blocks fenced as ```python no-run are shown, not run.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_MISSING_IMPORT = re.compile(r"could not import|No module named|needs the optional package")


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(autouse=True, scope="session")
def _single_thread_torch():
    """Tests use tiny tensors and arrays on a shared 2-core machine: one torch thread and one BLAS/OpenMP thread are
    faster and steadier than several (multi-threaded BLAS made scipy-heavy tests ~20x slower on a busy box)."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        limits = None
    else:
        limits = threadpool_limits(limits=1)
    yield
    if limits is not None:
        limits.restore_original_limits()
    torch.set_num_threads(old)


def _fail_missing_import_skip(report) -> None:
    if not (_in_ci() and report.skipped):
        return
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    if _MISSING_IMPORT.search(str(reason)):
        report.outcome = "failed"
        report.longrepr = f"CI=true: skipped for a missing import, so an extra lacks a dependency: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_missing_import_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_missing_import_skip(outcome.get_result())


def docs_code_blocks(slug: str) -> list[str]:
    """The runnable ```python blocks of docs/<slug>.md, in order."""
    text = (ROOT / "docs" / f"{slug}.md").read_text()
    return [m.group(2) for m in re.finditer(r"^```(\w[^\n]*)\n(.*?)^```", text, flags=re.S | re.M)
            if m.group(1).strip() == "python"]


@pytest.fixture
def docs_example(tmp_path, monkeypatch):
    """Run docs/<slug>.md's python blocks as written, in a scratch working directory; returns the namespace."""

    def run(slug: str) -> dict:
        blocks = docs_code_blocks(slug)
        assert blocks, f"docs/{slug}.md has no ```python block to run"
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("MPLBACKEND", "Agg")
        ns: dict = {"__name__": f"docs_{slug}"}
        for i, code in enumerate(blocks):
            exec(compile(code, f"docs/{slug}.md[block {i + 1}]", "exec"), ns)  # noqa: S102 - our own docs
        return ns

    return run
