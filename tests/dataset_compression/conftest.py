"""Shared fixtures: a small real-digit pool (20 per class at 8x8 and 16x16) and its test split, made once."""

import pytest
import torch


@pytest.fixture(scope="session")
def digits():
    from icml26.dataset_compression import load_digits_split

    d = load_digits_split(0, 16)
    keep = torch.cat([torch.nonzero(d.y_pool == c).flatten()[:20] for c in range(10)])
    return {"X": d.X_pool[keep], "y": d.y_pool[keep], "half": d.pool_half[keep], "X_test": d.X_test[:200],
            "y_test": d.y_test[:200]}


@pytest.fixture(scope="session")
def digits8(digits):
    return {"X": digits["half"], "y": digits["y"]}
