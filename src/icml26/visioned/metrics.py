"""Efficiency measurements for the image vs point-cloud comparison (spec §6 V3) and error metrics.

- `representation_bytes`: bytes of a stored representation (numpy nbytes: uint8 images, float32 points).
- `median_time`: median wall time (s) of a featurisation function over items, after one warm-up call.
- `training_step_memory`: peak training memory of one optimisation step, counted deterministically as
  parameters + gradients + two AdamW moments + the input batch + every tensor autograd saves for the
  backward pass (`torch.autograd.graph.saved_tensors_hooks`, de-duplicated by storage). On CPU the process
  RSS is too noisy for this; the same count is what `torch.cuda.max_memory_allocated` tracks on a GPU, up to
  allocator slack and transient buffers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

__all__ = ["representation_bytes", "median_time", "training_step_memory", "mae"]


def representation_bytes(x: np.ndarray | torch.Tensor) -> int:
    """Bytes needed to store one representation (array nbytes)."""
    if isinstance(x, torch.Tensor):
        return int(x.numel() * x.element_size())
    return int(np.asarray(x).nbytes)


def median_time(fn: Callable[[Any], Any], items: Sequence[Any], warmup: bool = True) -> tuple[float, list[float]]:
    """Median seconds of fn(item) over `items` (after one untimed warm-up call); returns (median, all times)."""
    if not items:
        raise ValueError("items must be non-empty")
    if warmup:
        fn(items[0])
    ts = []
    for it in items:
        t0 = time.perf_counter()
        fn(it)
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)), ts


def training_step_memory(net: torch.nn.Module, batch: torch.Tensor, target: torch.Tensor) -> dict[str, int]:
    """Peak-memory components (bytes) of one MSE training step of `net` on `batch` (see module docstring)."""
    seen: dict[tuple[int, int], int] = {}

    def pack(t: torch.Tensor):
        try:
            key = (t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
            seen[key] = t.untyped_storage().nbytes()
        except RuntimeError:  # pragma: no cover - tensors without storage
            pass
        return t

    net.train()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = torch.nn.functional.mse_loss(net(batch), target)
    loss.backward()
    net.zero_grad(set_to_none=True)
    params = sum(p.numel() * p.element_size() for p in net.parameters())
    act = int(sum(seen.values()))
    inp = representation_bytes(batch)
    return {"params": params, "grads": params, "adam_state": 2 * params, "activations": act, "input": inp,
            "total": 4 * params + act + inp}


def mae(pred: np.ndarray, y: np.ndarray) -> float:
    """Mean absolute error."""
    return float(np.mean(np.abs(np.asarray(pred, float) - np.asarray(y, float))))
