"""Input checks for image batches and generators (private; the public API calls these on every entry)."""

from __future__ import annotations

from typing import Any

import torch

from icml26.common.validation import check_tensor


def check_images(x: Any, name: str, *, unit_range: bool = True, channels: int | None = None,
                 min_hw: int = 1) -> torch.Tensor:
    """`x` as a floating (N, C, H, W) tensor: lists/arrays are read like the tensor, integer input is refused
    (an image's scale - 0..1 or 0..255 - is never guessed), NaN/inf are refused, and with `unit_range` every
    value must lie in [0, 1] (a tolerance of 1e-6 for float round-off)."""
    if isinstance(x, torch.Tensor) and not x.is_floating_point():
        raise TypeError(f"{name} must be a floating tensor with values in [0, 1], got dtype {x.dtype} "
                        "(convert uint8 images with x.float() / 255)")
    t = check_tensor(x, name, ndim=4, floating=False)
    if not t.is_floating_point():
        raise TypeError(f"{name} must hold floating values in [0, 1], got dtype {t.dtype} "
                        "(convert uint8 images with x / 255)")
    if t.shape[0] < 1:
        raise ValueError(f"{name} must hold at least one image, got shape {tuple(t.shape)}")
    if channels is not None and t.shape[1] != channels:
        raise ValueError(f"{name} must have {channels} channel(s), got shape {tuple(t.shape)}")
    if t.shape[1] < 1 or t.shape[2] < min_hw or t.shape[3] < min_hw:
        raise ValueError(f"{name} must have C >= 1 and H, W >= {min_hw}, got shape {tuple(t.shape)}")
    if unit_range and t.numel() and (float(t.min()) < -1e-6 or float(t.max()) > 1 + 1e-6):
        raise ValueError(f"{name} must lie in [0, 1], got values in [{float(t.min()):.4g}, {float(t.max()):.4g}]")
    return t


def check_generator(generator: Any, name: str = "generator") -> torch.Generator | None:
    """A `torch.Generator` or None (then torch's global RNG is used)."""
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"{name} must be a torch.Generator or None, got {type(generator).__name__}")
    return generator


def check_module(m: Any, name: str) -> torch.nn.Module:
    if not isinstance(m, torch.nn.Module):
        raise TypeError(f"{name} must be a torch.nn.Module, got {type(m).__name__}")
    return m
