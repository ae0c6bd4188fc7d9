"""Birth/death split of a net growth rate and the branching-Schrodinger growth penalty (spec section 2.1).

The jump part of the branching Schrodinger cost (relative entropy to a reference branching Brownian motion
with birth rate q_b and death rate q_d, Baradat & Lavenant 2021) per particle and unit time is

    [beta log(beta/q_b) - beta + q_b] + [delta log(delta/q_d) - delta + q_d].

Minimising it at a fixed net growth g = beta - delta gives beta = q_b e^psi, delta = q_d e^-psi, hence the
key identity beta * delta = q_b * q_d and the closed forms below. The derivation is ours (the paper's own
parametrisation was not visible; spec section 2.1 marks it as reconstructed). Every function takes numpy
arrays or torch tensors and returns the same kind.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from icml26.common.validation import check_array, check_float

__all__ = ["split_birth_death", "growth_penalty"]


def _check_rates(q_b: float, q_d: float) -> tuple[float, float]:
    try:
        q_b, q_d = check_float(q_b, "q_b"), check_float(q_d, "q_d")
    except (TypeError, ValueError) as e:
        raise type(e)(f"reference rates (q_b, q_d) must be finite and >= 0: {e}") from None
    if q_b < 0 or q_d < 0:
        raise ValueError(f"reference rates (q_b, q_d) must be finite and >= 0, got ({q_b}, {q_d})")
    return q_b, q_d


def _check_g(g: Any) -> Any:
    """g as a finite float tensor (torch input) or float array (anything else); ValueError naming g."""
    if isinstance(g, torch.Tensor):
        if not g.is_floating_point():
            g = g.to(torch.get_default_dtype())
        if not bool(torch.isfinite(g).all()):
            raise ValueError(f"g must be finite; it has {int((~torch.isfinite(g)).sum())} NaN/inf value(s)")
        return g
    return check_array(g, "g", min_size=0)


def split_birth_death(g: Any, q_b: float = 0.0, q_d: float = 0.0) -> tuple[Any, Any]:
    """Split net growth `g` (per unit time, any shape) into birth and death rates `(beta, delta)`.

    beta(g) = (g + sqrt(g^2 + 4 q_b q_d)) / 2 and delta = beta - g, so that beta - delta = g, beta, delta >= 0
    and beta * delta = q_b * q_d. With q_b * q_d = 0 this is the minimal-jump split beta = max(g, 0),
    delta = max(-g, 0).

    Args:
        g: net growth rate, numpy array or torch tensor (or a float).
        q_b, q_d: reference birth and death rates (>= 0), default 0.
    Returns:
        (beta, delta), same type and shape as `g`.
    """
    q_b, q_d = _check_rates(q_b, q_d)
    scalar = np.ndim(g) == 0 and not isinstance(g, torch.Tensor)
    g = _check_g(g)
    qq = 4.0 * q_b * q_d
    if isinstance(g, torch.Tensor):
        if qq == 0.0:
            return torch.clamp(g, min=0.0), torch.clamp(-g, min=0.0)
        root = torch.sqrt(g * g + qq)
        # beta = (g + root)/2 loses precision for g << 0; use beta = q_b q_d * 2 / (root - g) there.
        beta = torch.where(g >= 0, 0.5 * (g + root), 0.5 * qq / (root - g))
        delta = torch.where(g >= 0, 0.5 * qq / (root + g), 0.5 * (root - g))
        return beta, delta
    g_arr = np.asarray(g, dtype=float)
    if qq == 0.0:
        beta, delta = np.maximum(g_arr, 0.0), np.maximum(-g_arr, 0.0)
    else:
        root = np.sqrt(g_arr * g_arr + qq)
        with np.errstate(divide="ignore", invalid="ignore"):
            beta = np.where(g_arr >= 0, 0.5 * (g_arr + root), 0.5 * qq / (root - g_arr))
            delta = np.where(g_arr >= 0, 0.5 * qq / (root + g_arr), 0.5 * (root - g_arr))
    if scalar:
        return float(beta), float(delta)
    return beta, delta


def growth_penalty(g: Any, q_b: float = 0.0, q_d: float = 0.0) -> Any:
    """Minimal jump cost Psi(g) per particle and unit time of net growth `g` (spec section 2.1).

    Psi(g) = g psi - sqrt(g^2 + 4 q_b q_d) + q_b + q_d with psi = log(beta(g)/q_b); for q_b = q_d = q:
    Psi(g) = g asinh(g/2q) - sqrt(g^2 + 4q^2) + 2q, Psi(0) = 0, Psi >= 0, convex, Psi(g) ~ g^2/(4q) near 0.
    With a zero reference rate the relative entropy of any jump is infinite (Psi(g) = inf for g != 0), so
    both rates must be positive here.

    Args:
        g: net growth rate (numpy or torch, any shape).
        q_b, q_d: reference rates, both > 0.
    Returns:
        Psi(g), same type and shape as `g`.
    """
    q_b, q_d = _check_rates(q_b, q_d)
    if q_b <= 0 or q_d <= 0:
        raise ValueError(
            f"growth_penalty needs positive reference rates (q_b, q_d), got ({q_b}, {q_d}); "
            "with a zero reference rate the relative entropy of any jump is infinite")
    scalar = np.ndim(g) == 0 and not isinstance(g, torch.Tensor)
    g = _check_g(g)
    beta, _ = split_birth_death(g, q_b, q_d)
    if isinstance(g, torch.Tensor):
        root = torch.sqrt(g * g + 4.0 * q_b * q_d)
        return g * torch.log(beta / q_b) - root + q_b + q_d
    g_arr = np.asarray(g, dtype=float)
    out = g_arr * np.log(np.asarray(beta) / q_b) - np.sqrt(g_arr * g_arr + 4.0 * q_b * q_d) + q_b + q_d
    return float(out) if scalar else out
