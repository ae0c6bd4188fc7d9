"""Seeding and determinism helpers."""

from __future__ import annotations

import os
import random

import numpy as np
import torch


def seed_everything(seed: int, *, deterministic: bool = False) -> np.random.Generator:
    """Seed Python, NumPy and torch; returns a fresh `np.random.Generator(seed)` for local use.

    With `deterministic=True`, torch is asked to use deterministic kernels (errors on ops that have none).
    """
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    os.environ.setdefault("PYTHONHASHSEED", str(seed))
    if deterministic:
        torch.use_deterministic_algorithms(True)
    return np.random.default_rng(seed)


def torch_generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A `torch.Generator` seeded with `seed` (for data order independent of the global RNG)."""
    g = torch.Generator(device=device)
    g.manual_seed(int(seed))
    return g
