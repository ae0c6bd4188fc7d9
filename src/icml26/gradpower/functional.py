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
    """In-place `sign_power`: overwrites and returns `t` (p == 1, eps == 0 leaves it untouched)."""
    p, eps = check_power(p, eps)
    _check_tensor(t)
    if p == 1.0 and eps == 0.0:
        return t
    if t.dtype in _LOW_PRECISION:
        return t.copy_(_phi(t.float(), p, eps))
    s = torch.sign(t)
    t.abs_()
    if eps:
        t.add_(eps)
    return t.pow_(p).mul_(s)


@torch.no_grad()
def foreach_sign_power_(tensors: Sequence[torch.Tensor], p: float, eps: float = 0.0) -> None:
    """In-place `sign_power_` on a list of tensors, with multi-tensor (`torch._foreach_*`) kernels.

    fp32/fp64 tensors go through the foreach kernels (bit-identical to `sign_power_` tensor by tensor);
    bf16/fp16 tensors are upcast one by one. Used by `AdamWPower` and `GradPower` on every parameter's gradient.
    """
    p, eps = check_power(p, eps)
    if p == 1.0 and eps == 0.0:
        return
    fast: list[torch.Tensor] = []
    for i, t in enumerate(tensors):
        _check_tensor(t, f"tensors[{i}]")
        if t.dtype in _LOW_PRECISION:
            sign_power_(t, p, eps)
        else:
            fast.append(t)
    if not fast:
        return
    signs = torch._foreach_sign(fast)
    torch._foreach_abs_(fast)
    if eps:
        torch._foreach_add_(fast, eps)
    torch._foreach_pow_(fast, p)
    torch._foreach_mul_(fast, signs)
