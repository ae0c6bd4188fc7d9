"""Where a result came from: the code it ran (a hash and the git commit), the libraries, the machine, the command.

`reproduce` reuses a saved result only when both its config hash and its `code_hash` (the paper's package,
`icml26/common/` and `icml26/results.py`) match the current ones, so a result never outlives the code that made it.
Nothing here imports a paper package.
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import icml26
from icml26.registry import Paper

PACKAGE_DIR = Path(icml26.__file__).resolve().parent
_SKIP_DIRS = {"__pycache__", ".pytest_cache"}
_SKIP_SUFFIXES = {".pyc", ".pyo"}


def _files(folder: Path) -> list[Path]:
    out = []
    for f in sorted(folder.rglob("*")):
        if f.is_file() and not (_SKIP_DIRS & set(f.relative_to(folder).parts)) and f.suffix not in _SKIP_SUFFIXES:
            out.append(f)
    return out


def code_hash(paper: Paper) -> str:
    """Short sha256 of the code a paper's run executes: its package, `icml26/common/` and `icml26/results.py`."""
    h = hashlib.sha256()
    pkg = paper.package_dir()
    groups = [("paper", pkg)] if pkg is not None else []
    groups += [("common", PACKAGE_DIR / "common")]
    for label, folder in groups:
        for f in _files(folder):
            h.update(f"{label}/{f.relative_to(folder).as_posix()}\0".encode())
            h.update(f.read_bytes())
            h.update(b"\0")
    h.update(b"results.py\0" + (PACKAGE_DIR / "results.py").read_bytes())
    return h.hexdigest()[:16]


def git_info(path: Path = PACKAGE_DIR) -> dict[str, Any]:
    """{"commit", "dirty"} when `path` is inside a git checkout, else {} (an installed wheel)."""
    try:
        top = subprocess.run(["git", "-C", str(path), "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, timeout=5)
        if top.returncode != 0:
            return {}
        commit = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=5).stdout.strip()
        status = subprocess.run(["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10).stdout
        return {"commit": commit, "dirty": bool(status.strip())}
    except (OSError, subprocess.SubprocessError):
        return {}


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict[str, Any]:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        usable = os.cpu_count()
    info: dict[str, Any] = {"cpu": cpu_model(), "cores": os.cpu_count(), "usable_cores": usable,
                            "hostname": platform.node(), "platform": platform.platform()}
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        info["torch_threads"] = torch.get_num_threads()
        info["cuda"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    for var in ("OMP_NUM_THREADS", "ICML26_WORKERS"):
        if os.environ.get(var):
            info[var] = os.environ[var]
    return info


def extra_versions(paper: Paper) -> dict[str, str]:
    out = {}
    for dist in paper.extra_requirements():
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def package_version() -> str:
    try:
        return metadata.version("icml26")
    except metadata.PackageNotFoundError:
        return icml26.__version__


def collect(paper: Paper, argv: list[str] | None = None) -> dict[str, Any]:
    """Everything `Result.provenance` records for a run of `paper`."""
    return {"icml26": package_version(), "code_hash": code_hash(paper), **git_info(),
            "extra_versions": extra_versions(paper), "machine": machine_info(),
            "command": " ".join(argv if argv is not None else sys.argv)}


def is_stale(paper: Paper, result: Any) -> bool:
    """True when the code `paper` runs changed since `result` was made (or the result predates code hashes or
    three-valued verdicts)."""
    from icml26.results import SCHEMA

    if getattr(result, "schema", 1) < SCHEMA:
        return True
    return (getattr(result, "provenance", None) or {}).get("code_hash") != code_hash(paper)
