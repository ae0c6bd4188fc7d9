"""Relative L2 errors of predicted PDE frames (spec section 2, evaluation)."""

from __future__ import annotations

from typing import Any

import torch

from icml26.common.validation import check_tensor

__all__ = ["rel_l2", "rollout_rel_l2", "masked_rel_l2"]


def _pair(pred: Any, true: Any) -> tuple[torch.Tensor, torch.Tensor]:
    p = check_tensor(pred, "pred", ndim=(4, 5))
    t = check_tensor(true, "true", ndim=(4, 5))
    if p.shape != t.shape:
        raise ValueError(f"pred and true must have the same shape, got {tuple(p.shape)} and {tuple(t.shape)}")
    return p.to(torch.float64), t.to(torch.float64)


def rel_l2(pred: Any, true: Any, eps: float = 1e-12) -> torch.Tensor:
    """||u_hat - u||_2 / ||u||_2 per frame, over space x channels.

    pred, true: (N, H, W, C) -> (N,), or (B, T, H, W, C) -> (B, T). A frame with ||u|| = 0 gives ||u_hat|| / eps.
    """
    p, t = _pair(pred, true)
    dims = tuple(range(p.dim() - 3, p.dim()))
    return torch.linalg.vector_norm(p - t, dim=dims) / torch.linalg.vector_norm(t, dim=dims).clamp_min(eps)


def rollout_rel_l2(pred: Any, true: Any) -> dict[str, float]:
    """Mean rel-L2 over samples of a rollout (B, T, H, W, C): all steps, step 1, first 5, first 10."""
    e = rel_l2(pred, true)
    if e.dim() != 2:
        raise ValueError("rollout_rel_l2 needs (B, T, H, W, C) arrays")
    out = {"all": float(e.mean()), "step1": float(e[:, 0].mean())}
    for k in (5, 10):
        if e.shape[1] >= k:
            out[f"first{k}"] = float(e[:, :k].mean())
    return out


def masked_rel_l2(pred: Any, true: Any, mask: Any) -> torch.Tensor:
    """rel-L2 per frame restricted to the pixels where `mask` (N, H, W) is True: (N,) (NaN where mask is empty)."""
    p, t = _pair(pred, true)
    if p.dim() != 4:
        raise ValueError("masked_rel_l2 takes (N, H, W, C) frames")
    m = check_tensor(mask, "mask", floating=False, shape=(p.shape[0], p.shape[1], p.shape[2]))
    m = m.to(torch.float64).unsqueeze(-1)
    num = (((p - t) ** 2) * m).sum((1, 2, 3)).sqrt()
    den = ((t ** 2) * m).sum((1, 2, 3)).sqrt()
    out = num / den.clamp_min(1e-12)
    return torch.where(m.sum((1, 2, 3)) > 0, out, torch.full_like(out, float("nan")))
