"""Reflection-maximal coupling of two Gaussians with the same diagonal covariance (spec section 2.2).

From De Bortoli, Galashov, Gretton, Doucet, *Accelerated Diffusion Models via Speculative Sampling* (ICML 2025),
used by LSD as the "transport map draft -> target". Draft law p = N(mu_d, diag sigma^2), target law
q = N(mu_t, diag sigma^2). Given a draft sample x_d = mu_d + sigma z:

* accept with probability min(1, q(x_d) / p(x_d)) (computed in log space) and output x_d itself;
* otherwise output y = mu_t + sigma (z - 2 (e . z) e), with e = (mu_d - mu_t) / sigma normalised.

The output is exactly N(mu_t, diag sigma^2) and P(accept) = 1 - TV(p, q) = 2 Phi(-delta / 2) =
erfc(delta / (2 sqrt 2)), delta = ||(mu_t - mu_d) / sigma|| (the maximal coupling). With delta = 0 the draft
is always accepted (the division by |e| is guarded).
"""

from __future__ import annotations

import math

import numpy as np

from icml26.common.validation import check_array, check_float

__all__ = ["reflection_maximal_coupling", "CouplingResult"]


class CouplingResult(tuple):
    """(output, accepted, delta): a named tuple-like result of `reflection_maximal_coupling`."""

    __slots__ = ()

    def __new__(cls, output: np.ndarray, accepted: bool, delta: float):
        return super().__new__(cls, (output, accepted, delta))

    output = property(lambda self: self[0])
    accepted = property(lambda self: self[1])
    delta = property(lambda self: self[2])


def reflection_maximal_coupling(
    x_draft: np.ndarray,
    mu_draft: np.ndarray,
    mu_target: np.ndarray,
    sigma: np.ndarray | float,
    u: float | np.random.Generator,
) -> CouplingResult:
    """Couple a draft sample of N(mu_draft, sigma^2) to the target law N(mu_target, sigma^2).

    Args:
        x_draft: the draft sample, any shape (e.g. (N, D) positions).
        mu_draft, mu_target: the two means, same shape as `x_draft`.
        sigma: per-coordinate standard deviation, broadcastable to `x_draft` (e.g. (N, 1) per atom); > 0.
        u: a Uniform(0, 1) number for the accept test, or a `np.random.Generator` to draw it from.

    Returns:
        (output, accepted, delta): `output` is `x_draft` itself (the same object, bit for bit) when accepted,
        else the reflected target sample; `delta` = ||(mu_target - mu_draft) / sigma||.
    """
    x_draft = check_array(x_draft, "x_draft")
    mu_draft = check_array(mu_draft, "mu_draft")
    mu_target = check_array(mu_target, "mu_target")
    if mu_draft.shape != x_draft.shape or mu_target.shape != x_draft.shape:
        raise ValueError(f"x_draft, mu_draft and mu_target must have the same shape, got {x_draft.shape}, "
                         f"{mu_draft.shape}, {mu_target.shape}")
    sig = check_array(sigma, "sigma")
    if np.any(sig <= 0):
        raise ValueError("sigma must be > 0")
    try:
        np.broadcast_to(sig, x_draft.shape)
    except ValueError:
        raise ValueError(f"sigma (shape {sig.shape}) must broadcast to x_draft's shape {x_draft.shape}") from None
    if isinstance(u, np.random.Generator):
        u = u.random()
    u = check_float(u, "u", min=0.0, max=1.0)
    return couple(x_draft, mu_draft, mu_target, sig, u)


def couple(x_draft: np.ndarray, mu_draft: np.ndarray, mu_target: np.ndarray, sigma: np.ndarray | float,
           u: float) -> CouplingResult:
    """`reflection_maximal_coupling` without input checks (the drivers' hot path; arguments already valid)."""
    z = (x_draft - mu_draft) / sigma          # whitened draft noise
    gap = (mu_draft - mu_target) / sigma      # whitened mean gap
    delta2 = float(np.vdot(gap, gap))
    delta = math.sqrt(delta2)
    if delta2 == 0.0:
        return CouplingResult(x_draft, True, 0.0)
    if not math.isfinite(delta2):  # means too far apart for floats: P(accept) = 0; mu_t + sigma z has the target law
        return CouplingResult(mu_target + sigma * z, False, math.inf)
    # log q(x_d) - log p(x_d) = -|z + gap|^2 / 2 + |z|^2 / 2 = -(z . gap) - |gap|^2 / 2
    log_ratio = -float(np.vdot(z, gap)) - 0.5 * delta2
    if log_ratio >= 0.0 or (u > 0.0 and math.log(u) <= log_ratio):
        return CouplingResult(x_draft, True, delta)
    e = gap / delta
    y = mu_target + sigma * (z - 2.0 * float(np.vdot(e, z)) * e)
    return CouplingResult(y, False, delta)
