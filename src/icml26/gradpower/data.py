"""Offline byte-level corpus of the CPU reproduction (spec section 6).

The concatenated top-level `*.py` files of the running interpreter's standard library (sorted by file name),
truncated to 3,000,000 bytes; first 90 % train, last 10 % validation; validation = 256 fixed windows of 65
bytes at stride 65 from the start of the validation split. Vocabulary: 256 byte values.
Any other 1-D token stream (your own data) can be passed to `make_splits` / `pretrain` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch

from icml26.common.text import bytes_to_tensor, fixed_windows, stdlib_python_bytes, train_val_split

__all__ = ["stdlib_bytes", "ByteCorpus", "make_splits", "load_corpus"]


def stdlib_bytes(nbytes: int = 3_000_000) -> bytes:
    """The spec's corpus: stdlib top-level `*.py` files, sorted by name, truncated to `nbytes` bytes."""
    data = stdlib_python_bytes(nbytes)
    if len(data) < nbytes:
        raise ValueError(f"this Python's stdlib has only {len(data)} bytes of top-level *.py, need {nbytes}")
    return data


@dataclass
class ByteCorpus:
    """train: 1-D long token stream; val_windows: (n_windows, window) long fixed evaluation windows."""

    train: torch.Tensor
    val_windows: torch.Tensor


def make_splits(tokens: torch.Tensor, val_frac: float = 0.1, n_val_windows: int = 256,
                window: int = 65) -> ByteCorpus:
    """Leading (1 - val_frac) of a 1-D token stream for training; fixed windows from the rest for validation."""
    if not isinstance(tokens, torch.Tensor) or tokens.ndim != 1:
        raise ValueError("tokens must be a 1-D tensor of token ids")
    train, val = train_val_split(tokens, val_frac)
    return ByteCorpus(train=train, val_windows=fixed_windows(val, n_val_windows, window))


@lru_cache(maxsize=4)
def load_corpus(nbytes: int = 3_000_000, val_frac: float = 0.1, n_val_windows: int = 256,
                window: int = 65) -> ByteCorpus:
    """The spec's byte corpus split into train stream and validation windows (deterministic, offline).

    Cached per process (the tensors are shared: do not modify them in place)."""
    return make_splits(bytes_to_tensor(stdlib_bytes(nbytes)), val_frac, n_val_windows, window)
