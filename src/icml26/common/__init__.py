"""Code that two or more papers share: seeding, parallel runs, text corpus, the tiny LM, training helpers."""

from icml26.common.seeding import seed_everything, torch_generator
from icml26.common.parallel import run_parallel
from icml26.common.paths import cache_dir

__all__ = ["seed_everything", "torch_generator", "run_parallel", "cache_dir"]
