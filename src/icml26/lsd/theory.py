"""Speedup theory of LSD as a function of physical parameters (spec section 2.4, our derivation **[ours]**).

* Acceptance of one verified step: alpha = 1 - TV = 2 Phi(-delta/2) = erfc(delta / (2 sqrt 2)).
* First step of a round (draft and target start from the same state): the mean gap is
  (h/2)(1+c)(h/m_i) dF_i, so delta^2 = h^2 (1+c)/(1-c) sum_i |dF_i|^2 / (m_i kT); for equal masses and
  i.i.d. force errors of RMS eps per Cartesian component, delta^2 = 3 N h^2 eps^2 (1+c) / ((1-c) m kT)
  ~ 6 N h eps^2 / (gamma m kT) for small gamma h. gamma -> 0 (NVE) gives delta -> infinity.
* Steps per round E[L] = sum_{k<K} prod_{j<k} alpha_j; constant alpha: (1 - alpha^K) / (1 - alpha).
* Latency speedup (synchronous, ideal parallel target hardware): S = E[L] / (b_{K+1} + K rho_d + overhead),
  rho_d = draft-step cost / target-call latency, b_{K+1} = cost of one batched call on K+1 configurations
  relative to one single call (1 on ideal parallel hardware).
* Asynchronous with enough workers: S ~ 1 / ((1 - alpha) + rho_d) <= min(1/(1 - alpha), 1/rho_d).
* Extra target work: (K + 1) / E[L] force evaluations per produced step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from icml26.common.validation import check_array, check_float, check_int

__all__ = ["acceptance_probability", "first_step_delta", "rms_force_delta", "expected_steps_per_round",
           "latency_speedup", "async_speedup", "target_evals_per_step"]


def acceptance_probability(delta: float | np.ndarray) -> float | np.ndarray:
    """P(accept) = 2 Phi(-delta/2) = erfc(delta / (2 sqrt 2)) of the reflection-maximal coupling (delta >= 0)."""
    d = check_array(delta, "delta", min_size=0, finite=False)
    if np.any(np.isnan(d)) or np.any(d < 0):
        raise ValueError("delta must be >= 0 (inf allowed: acceptance 0)")
    from scipy.special import erfc

    out = erfc(d / (2.0 * math.sqrt(2.0)))
    return float(out) if out.ndim == 0 else out


def _c(timestep: float, friction: float) -> float:
    timestep = check_float(timestep, "timestep", min=0.0, min_open=True)
    try:
        friction = check_float(friction, "friction", min=0.0, min_open=True)
    except ValueError:
        raise ValueError(f"friction must be positive (gamma = 0 means no noise: delta is infinite), got "
                         f"{friction!r}") from None
    return math.exp(-friction * timestep)


def first_step_delta(delta_forces: np.ndarray, masses: float | np.ndarray, timestep: float, friction: float,
                     kT: float) -> float:
    """delta of the first step of a round: sqrt(h^2 (1+c)/(1-c) sum_i |dF_i|^2 / (m_i kT)).

    Args:
        delta_forces: F_t - F_d at the round's start, shape (N, D).
        masses: scalar or (N,) masses.
    """
    df = check_array(delta_forces, "delta_forces (shape (N, D))", ndim=2)
    kT = check_float(kT, "kT", min=0.0, min_open=True)
    m = check_array(masses, "masses")
    if m.ndim == 1:
        if m.shape[0] != df.shape[0]:
            raise ValueError(f"masses has shape {m.shape} but delta_forces has {df.shape[0]} atoms")
        m = m[:, None]
    elif m.ndim != 0:
        raise ValueError(f"masses must be a scalar or (N,), got shape {m.shape}")
    if np.any(m <= 0):
        raise ValueError("masses must be positive")
    c = _c(timestep, friction)
    return math.sqrt(timestep ** 2 * (1 + c) / (1 - c) * float(np.sum(df * df / m)) / kT)


def rms_force_delta(n_atoms: int, rms_error: float, mass: float, timestep: float, friction: float, kT: float,
                    dim: int = 3) -> float:
    """delta for N equal-mass atoms with i.i.d. force errors of RMS `rms_error` per Cartesian component."""
    n_atoms = check_int(n_atoms, "n_atoms", min=1)
    dim = check_int(dim, "dim", min=1)
    rms_error = check_float(rms_error, "rms_error", min=0.0)
    mass = check_float(mass, "mass", min=0.0, min_open=True)
    kT = check_float(kT, "kT", min=0.0, min_open=True)
    c = _c(timestep, friction)
    return math.sqrt(dim * n_atoms * timestep ** 2 * rms_error ** 2 * (1 + c) / ((1 - c) * mass * kT))


def expected_steps_per_round(alphas: float | Sequence[float], lookahead: int | None = None) -> float:
    """E[L] = sum_{k<K} prod_{j<k} alpha_j.

    Args:
        alphas: a constant acceptance alpha (then `lookahead` K is required) or per-position alphas
            (alpha_0..alpha_{K-1}; K = len(alphas) unless `lookahead` is given).
    """
    if lookahead is not None:
        lookahead = check_int(lookahead, "lookahead", min=1)
    if np.ndim(alphas) == 0:
        if lookahead is None:
            raise ValueError("lookahead is required with a constant alpha")
        a0 = check_float(alphas, "alphas", min=0.0, max=1.0)
        return float(lookahead) if a0 == 1.0 else float((1.0 - a0 ** lookahead) / (1.0 - a0))  # closed form
    else:
        a = check_array(alphas, "alphas", ndim=1)
        if lookahead is not None:
            if lookahead > len(a):
                raise ValueError(f"lookahead {lookahead} exceeds the {len(a)} alphas given")
            a = a[:lookahead]
    if np.any((a < 0) | (a > 1)):
        raise ValueError("alphas must lie in [0, 1]")
    survive = np.concatenate([[1.0], np.cumprod(a[:-1])])
    return float(np.sum(survive))


def latency_speedup(expected_steps: float, lookahead: int, draft_cost_ratio: float = 0.0,
                    batch_cost: float = 1.0, overhead: float = 0.0) -> float:
    """S = E[L] / (b_{K+1} + K rho_d + overhead) (all costs relative to one target call)."""
    expected_steps = check_float(expected_steps, "expected_steps", min=0.0)
    lookahead = check_int(lookahead, "lookahead", min=1)
    draft_cost_ratio = check_float(draft_cost_ratio, "draft_cost_ratio", min=0.0)
    batch_cost = check_float(batch_cost, "batch_cost", min=0.0, min_open=True)
    overhead = check_float(overhead, "overhead", min=0.0)
    return float(expected_steps) / (batch_cost + lookahead * draft_cost_ratio + overhead)


def async_speedup(alpha: float, draft_cost_ratio: float) -> float:
    """S ~ 1 / ((1 - alpha) + rho_d) for the asynchronous variant with enough target workers."""
    alpha = check_float(alpha, "alpha", min=0.0, max=1.0)
    draft_cost_ratio = check_float(draft_cost_ratio, "draft_cost_ratio", min=0.0)
    den = (1.0 - alpha) + draft_cost_ratio
    return math.inf if den == 0 else 1.0 / den


def target_evals_per_step(expected_steps: float, lookahead: int) -> float:
    """(K + 1) / E[L] target force evaluations per produced step."""
    lookahead = check_int(lookahead, "lookahead", min=1)
    expected_steps = check_float(expected_steps, "expected_steps", min=0.0, min_open=True)
    return (lookahead + 1) / float(expected_steps)
