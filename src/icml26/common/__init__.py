"""Code that two or more papers share: seeding, parallel runs, statistics of verdicts, text corpus, the tiny LM,
training helpers.

The names below are loaded on first use (PEP 562), so `import icml26.common.stats` (which `icml26.results` needs)
does not import torch: `icml26 list` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {"seed_everything": "seeding", "torch_generator": "seeding", "run_parallel": "parallel",
         "cache_dir": "paths"}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"icml26.common.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'icml26.common' has no attribute {name!r}")
