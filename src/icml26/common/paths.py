"""Where reproductions keep caches (computed data, converted models)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(name: str) -> Path:
    """A per-paper cache folder: `$ICML26_CACHE/<name>` (default `~/.cache/icml26/<name>`), created on demand."""
    root = Path(os.environ.get("ICML26_CACHE", Path.home() / ".cache" / "icml26"))
    path = root / name
    path.mkdir(parents=True, exist_ok=True)
    return path
