"""The GradPower transform phi_p (paper Eq. (1)): phi_p(g) = sign(g) * |g|^p, elementwise.

Properties (spec section 2.1): odd, monotone, keeps the sign pattern and exact zeros, phi_1 = identity.
`eps > 0` gives the authors' script variant sign(g) * (|g| + eps)^p (zeros still map to 0 because sign(0) = 0).

Low-precision tensors (bf16 / fp16) are transformed in fp32 and cast back once, so small magnitudes do not
underflow inside the power (spec section 2.3). NaN propagates (sign(NaN) * NaN^p = NaN).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

__all__ = ["sign_power", "sign_power_", "foreach_sign_power_", "check_power"]

_LOW_PRECISION = (torch.bfloat16, torch.float16)


def check_power(p: float, eps: float = 0.0, *, p_name: str = "p", eps_name: str = "eps") -> tuple[float, float]:
    """Validate an exponent and a power epsilon; returns them as floats.

    Raises:
        TypeError: `p` or `eps` is not a real number (bool and tensors are rejected too).
        ValueError: `p` is not finite and > 0, or `eps` is not finite and >= 0.
    """
    for name, v in ((p_name, p), (eps_name, eps)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"{name} must be a real number, got {type(v).__name__}")
    p, eps = float(p), float(eps)
    if not math.isfinite(p) or p <= 0.0:
        raise ValueError(f"{p_name} must be a finite number > 0, got {p}")
    if not math.isfinite(eps) or eps < 0.0:
        raise ValueError(f"{eps_name} must be a finite number >= 0, got {eps}")
    return p, eps


def _check_tensor(t: torch.Tensor, name: str = "t") -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if not t.is_floating_point():
        raise TypeError(f"{name} must have a real floating dtype, got {t.dtype}")
    if t.is_sparse:
        raise RuntimeError(f"{name}: sparse tensors are not supported (GradPower needs dense gradients)")


def _phi(x: torch.Tensor, p: float, eps: float) -> torch.Tensor:
    """sign(x) * (|x| + eps)^p for a tensor already in its compute dtype (returns a new tensor)."""
    mag = x.abs()
    if eps:
        mag.add_(eps)
    return mag.pow_(p).mul_(torch.sign(x))


# Chunk size of the CPU in-place path: 64k elements (256 KB fp32 scratch) stay in L2 across the five passes and
# avoid allocating (and page-faulting) a gradient-sized temporary, which costs more than the arithmetic.
_CHUNK = 1 << 16


def _chunked_(t: torch.Tensor, p: float, eps: float, scratch: dict) -> None:
    """In-place sign(t) * (|t| + eps)^p on a contiguous tensor, chunk by chunk with reusable scratch buffers.

    Same elementwise operations in the same order as `_phi`, hence bit-identical results.
    """
    flat = t.view(-1)
    low = t.dtype in _LOW_PRECISION
    cdtype = torch.float32 if low else t.dtype
    key = (cdtype, t.device, low)
    if key not in scratch:
        scratch[key] = (torch.empty(_CHUNK, dtype=cdtype, device=t.device),
                        torch.empty(_CHUNK, dtype=cdtype, device=t.device) if low else None)
    buf, sbuf = scratch[key]
    n = flat.numel()
    for start in range(0, n, _CHUNK):
        c = flat[start:start + _CHUNK]
        m = c.numel()
        b = buf[:m]
        if low:
            b.copy_(c).abs_()
        else:
            torch.abs(c, out=b)
        if eps:
            b.add_(eps)
        b.pow_(p)
        if low:
            s = sbuf[:m]
            s.copy_(c).sign_()
            c.copy_(b.mul_(s))
        else:
            c.sign_().mul_(b)


def _inplace(t: torch.Tensor, p: float, eps: float, scratch: dict) -> None:
    if t.device.type == "cpu" and t.is_contiguous():
        _chunked_(t, p, eps, scratch)
    elif t.dtype in _LOW_PRECISION:
        t.copy_(_phi(t.float(), p, eps))
    else:
        s = torch.sign(t)
        t.abs_()
        if eps:
            t.add_(eps)
        t.pow_(p).mul_(s)


def sign_power(t: torch.Tensor, p: float, eps: float = 0.0) -> torch.Tensor:
    """phi_p(t) = sign(t) * (|t| + eps)^p, elementwise, as a new tensor of t's shape and dtype.

    Args:
        t: any real floating tensor (fp64/fp32 are computed natively, bf16/fp16 in fp32 then cast back).
        p: exponent, finite and > 0 (the paper's default for LM pre-training is 1.2).
        eps: shift inside the power, >= 0 (0 = the paper's pure form; 1e-8 = the authors' script).
    Returns:
        A new tensor; with p == 1 and eps == 0 it is a bit-identical copy of `t`.
    """
    p, eps = check_power(p, eps)
    _check_tensor(t)
    if p == 1.0 and eps == 0.0:
        return t.clone()
    if t.dtype in _LOW_PRECISION:
        return _phi(t.float(), p, eps).to(t.dtype)
    return _phi(t, p, eps)


@torch.no_grad()
def sign_power_(t: torch.Tensor, p: float, eps: float = 0.0) -> torch.Tensor:
    """In-place `sign_power`: overwrites and returns `t` (p == 1, eps == 0 leaves it untouched).

    Bit-identical to `sign_power`; on CPU it works chunk-wise with small scratch buffers (no tensor-sized
    temporary), elsewhere with one temporary.
    """
    p, eps = check_power(p, eps)
    _check_tensor(t)
    if p == 1.0 and eps == 0.0:
        return t
    _inplace(t, p, eps, {})
    return t


@torch.no_grad()
def foreach_sign_power_(tensors: Sequence[torch.Tensor], p: float, eps: float = 0.0, *,
                        use_foreach: bool | None = None) -> None:
    """In-place `sign_power_` on a list of tensors (every parameter's gradient in `AdamWPower` / `GradPower`).

    Args:
        tensors: real floating tensors, transformed in place.
        p, eps: as `sign_power`.
        use_foreach: None (default) sends fp32/fp64 tensors on accelerators (CUDA, ...) through the multi-tensor
            `torch._foreach_*` kernels and CPU tensors through the chunked in-place path; True sends every
            fp32/fp64 tensor through the `_foreach_*` kernels (also on CPU, where torch runs them tensor by
            tensor); False never uses them. bf16/fp16 are always computed in fp32 and cast back.
    All paths are bit-identical to `sign_power` tensor by tensor (tested, the `_foreach_` path included).
    """
    p, eps = check_power(p, eps)
    if use_foreach is not None and not isinstance(use_foreach, bool):
        raise TypeError(f"use_foreach must be None, True or False, got {type(use_foreach).__name__}")
    if isinstance(tensors, torch.Tensor) or not isinstance(tensors, Sequence):
        raise TypeError(f"tensors must be a list or tuple of tensors, got {type(tensors).__name__}")
    for i, t in enumerate(tensors):
        _check_tensor(t, f"tensors[{i}]")
    if p == 1.0 and eps == 0.0:
        return
    fast: list[torch.Tensor] = []
    scratch: dict = {}
    for t in tensors:
        foreach_ok = t.dtype not in _LOW_PRECISION
        if foreach_ok and (use_foreach or (use_foreach is None and t.device.type != "cpu")):
            fast.append(t)
        else:
            _inplace(t, p, eps, scratch)
    if not fast:
        return
    signs = torch._foreach_sign(fast)
    torch._foreach_abs_(fast)
    if eps:
        torch._foreach_add_(fast, eps)
    torch._foreach_pow_(fast, p)
    torch._foreach_mul_(fast, signs)
