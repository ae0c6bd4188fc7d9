"""Couplings between consecutive snapshots and the Brownian-bridge targets (spec section 2.2, steps 1-3).

**[reconstructed]** The paper's training objective was not visible; what follows is the spec's
reconstruction from the abstract, the branching Schrodinger problem (Baradat & Lavenant 2021: branching
Schrodinger bridge = regularised unbalanced OT) and the CytoBridge matcher of the same group.

Step 1 - semi-relaxed entropic unbalanced OT between cells of t_k (mass m_k each) and t_{k+1} (m_{k+1}):

    G = argmin <C, G> + eps KL(G | a (x) b) + reg_m KL(G 1 | a)   s.t.  G^T 1 = b,   C_ij = |x_i - y_j|^2,

with eps = 2 sigma^2 Delta_k (the Brownian-bridge entropic scale). The source marginal is relaxed, so the
row factor r_i = (G 1)_i / a_i is the expected number of descendants of cell i, and Sum_i a_i r_i = Sum_j b_j
exactly (total mass is matched by construction).

Step 2 - log-growth target per unit time: g_i = log(clip(r_i, e^-5, e^5)) / Delta_k.

Step 3 - Brownian bridge between a pair (x, y) over an interval of length Delta, at fraction tau in (0, 1):
    mu = (1 - tau) x + tau y,   x_tau = mu + sigma sqrt(Delta tau (1 - tau)) eps,   eps ~ N(0, I),
    flow target  u = (y - x)/Delta + (1 - 2 tau) / (2 tau (1 - tau) Delta) (x_tau - mu)    (per unit time),
    score target s = -(x_tau - mu) / (sigma^2 Delta tau (1 - tau)) = -eps / (sigma sqrt(Delta tau (1 - tau))).
These are the SF2M targets (Tong et al. 2024) with the interval length made explicit.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from icml26.common.validation import check_array, check_float, check_int, check_tensor

__all__ = [
    "UOTPlan",
    "semi_relaxed_uot",
    "balanced_plan",
    "unbalanced_plan",
    "tune_reg_m",
    "bridge_sample",
    "bridge_targets",
    "squared_distances",
]

LOG_R_CLIP = 5.0


def _ot():
    try:
        import ot
    except ImportError as e:  # pragma: no cover - POT is in the [usb] extra
        raise ImportError("icml26.usb needs POT: pip install 'icml26[usb]' (or pip install pot)") from e
    return ot


def _as_points(x, name: str) -> np.ndarray:
    x = check_array(x, name, ndim=2, finite=False, min_size=0)
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array (n_cells, n_dims), got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} contains NaN or inf")
    return x


def squared_distances(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Squared Euclidean cost matrix C_ij = |x_i - y_j|^2, shape (n, m), float64."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    c = (x * x).sum(1)[:, None] + (y * y).sum(1)[None, :] - 2.0 * x @ y.T
    return np.maximum(c, 0.0)


def _same_dim(x0: np.ndarray, x1: np.ndarray) -> None:
    if x0.shape[1] != x1.shape[1]:
        raise ValueError(f"x0 and x1 must have the same number of dimensions, got {x0.shape[1]} and {x1.shape[1]}")


def _normalise_cost(c: np.ndarray, eps: float) -> tuple[np.ndarray, float, float]:
    """CytoBridge's rule: divide the cost (and eps with it) by its max only when the mean cost exceeds 100."""
    scale = 1.0
    if c.mean() > 100.0:
        scale = float(c.max())
    return c / scale, eps / scale, scale


@dataclass
class UOTPlan:
    """A coupling between the cells of two snapshots.

    Attributes:
        plan: (N_k, N_{k+1}) transport plan G in mass units (Sum_ij G_ij = Sum_j b_j for the semi-relaxed plan).
        row_factor: (N_k,) r_i = (G 1)_i / a_i, expected descendants per source cell, clipped to [e^-5, e^5].
        log_growth: (N_k,) log(r_i) / dt, log-growth target per unit time.
        a: (N_k,) source masses; b: (N_{k+1},) target masses.
        eps: entropic regularisation used (in the original cost units); reg_m: source-marginal KL weight.
        dt: interval length Delta_k.
        cost_scale: the factor the cost was divided by before solving (1 unless mean cost > 100).
    """

    plan: np.ndarray
    row_factor: np.ndarray
    log_growth: np.ndarray
    a: np.ndarray
    b: np.ndarray
    eps: float
    reg_m: float
    dt: float = 1.0
    cost_scale: float = 1.0


def _check_eps_regm(eps: float, reg_m: float) -> tuple[float, float]:
    return (check_float(eps, "eps", min=0.0, min_open=True),
            check_float(reg_m, "reg_m", min=0.0, min_open=True, allow_inf=False))


def _masses(m, n: int, name: str) -> np.ndarray:
    m_arr = check_array(m, name, finite=False)
    if m_arr.ndim == 0:
        m_arr = np.full(n, float(m_arr))
    if m_arr.shape != (n,):
        raise ValueError(f"{name} must be a scalar or have shape ({n},), got {m_arr.shape}")
    if not np.isfinite(m_arr).all() or (m_arr <= 0).any():
        raise ValueError(f"{name} must be finite and > 0")
    return m_arr


def semi_relaxed_uot(
    x0,
    x1,
    m0: float | np.ndarray = 1.0,
    m1: float | np.ndarray = 1.0,
    eps: float = 0.08,
    reg_m: float = 1.0,
    *,
    dt: float = 1.0,
    num_iter: int = 5000,
    stop_thr: float = 1e-9,
) -> UOTPlan:
    """Semi-relaxed entropic UOT plan between two snapshots (spec 2.2 step 1) and its growth targets.

    Args:
        x0: (N0, d) cells at t_k. x1: (N1, d) cells at t_{k+1}.
        m0, m1: per-cell masses (scalar or (N,) arrays), default 1 (unit cell masses).
        eps: entropic regularisation; use 2 sigma^2 dt for a Brownian bridge of diffusion sigma.
        reg_m: KL weight of the relaxed source marginal (default 1; large values approach balanced OT).
        dt: interval length, only used to express log-growth per unit time.
        num_iter, stop_thr: Sinkhorn iterations and tolerance (POT `sinkhorn_unbalanced`, reg_type="kl").
    Returns:
        UOTPlan with plan, row factors r, log-growth targets log(r)/dt.
    """
    ot = _ot()
    x0 = _as_points(x0, "x0")
    x1 = _as_points(x1, "x1")
    if x0.shape[1] != x1.shape[1]:
        raise ValueError(f"x0 and x1 must have the same number of dimensions, got {x0.shape[1]} and {x1.shape[1]}")
    eps, reg_m = _check_eps_regm(eps, reg_m)
    dt = check_float(dt, "dt", min=0.0, min_open=True)
    num_iter = check_int(num_iter, "num_iter", min=1)
    stop_thr = check_float(stop_thr, "stop_thr", min=0.0)
    a = _masses(m0, len(x0), "m0")
    b = _masses(m1, len(x1), "m1")
    c, eps_n, scale = _normalise_cost(squared_distances(x0, x1), float(eps))
    plan = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in ("sinkhorn", "sinkhorn_stabilized"):
            plan = ot.unbalanced.sinkhorn_unbalanced(
                a, b, c, reg=eps_n, reg_m=(float(reg_m), np.inf), reg_type="kl", method=method,
                numItermax=int(num_iter), stopThr=stop_thr)
            if _target_ok(plan, b):
                break
    if plan is None or not _target_ok(plan, b):   # under/overflow (e.g. cost / eps ~ 1e3): log domain
        plan = _log_semi_relaxed(a, b, c, eps_n, float(reg_m), int(num_iter), stop_thr)
    r = plan.sum(1) / a
    r = np.clip(r, math.exp(-LOG_R_CLIP), math.exp(LOG_R_CLIP))
    return UOTPlan(plan=plan, row_factor=r, log_growth=np.log(r) / dt, a=a, b=b, eps=float(eps),
                   reg_m=float(reg_m), dt=float(dt), cost_scale=scale)


def _target_ok(plan: np.ndarray, b: np.ndarray, rtol: float = 1e-6) -> bool:
    """A usable semi-relaxed plan: finite, and its columns carry the target masses (the hard constraint)."""
    return bool(np.isfinite(plan).all() and plan.sum() > 0 and np.abs(plan.sum(0) / b - 1).max() <= rtol)


def _log_semi_relaxed(a, b, c, eps, reg_m, num_iter, tol):
    """Log-domain Sinkhorn for the semi-relaxed problem (fallback when POT under/overflows).

    G_ij = a_i b_j exp((f_i + g_j - C_ij)/eps); the hard column constraint fixes g, the KL-relaxed row
    marginal gives the damped update f = reg_m/(reg_m + eps) * (-eps log Sum_j b_j exp((g_j - C_ij)/eps)).
    """
    from scipy.special import logsumexp

    la, lb = np.log(a), np.log(b)
    f = np.zeros_like(a)
    g = np.zeros_like(b)
    damp = reg_m / (reg_m + eps)
    for _ in range(num_iter):
        f_old = f
        f = -damp * eps * logsumexp(lb[None, :] + (g[None, :] - c) / eps, axis=1)
        g = -eps * logsumexp(la[:, None] + (f[:, None] - c) / eps, axis=0)
        if np.max(np.abs(f - f_old)) < tol:
            break
    return np.exp(la[:, None] + lb[None, :] + (f[:, None] + g[None, :] - c) / eps)


def balanced_plan(x0, x1, eps: float | None = None, *, num_iter: int = 5000) -> np.ndarray:
    """Balanced plan with uniform marginals that each sum to 1: exact OT (`ot.emd`) if `eps` is None or 0,
    else entropic (`ot.sinkhorn`, log-domain stabilised) with regularisation `eps` (SF2M uses 2 sigma^2 dt).
    Returns an (N0, N1) array summing to 1."""
    ot = _ot()
    x0 = _as_points(x0, "x0")
    x1 = _as_points(x1, "x1")
    _same_dim(x0, x1)
    if eps is not None:
        eps = check_float(eps, "eps", min=0.0)
    num_iter = check_int(num_iter, "num_iter", min=1)
    a = np.full(len(x0), 1.0 / len(x0))
    b = np.full(len(x1), 1.0 / len(x1))
    c = squared_distances(x0, x1)
    if not eps:
        return ot.emd(a, b, c, numItermax=1_000_000)
    c, eps_n, _ = _normalise_cost(c, float(eps))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = ot.sinkhorn(a, b, c, eps_n, method="sinkhorn_log", numItermax=num_iter, stopThr=1e-9)
    return plan


def unbalanced_plan(x0, x1, eps: float = 0.05, reg_m: float = 1.0, *, num_iter: int = 5000) -> np.ndarray:
    """Unbalanced plan with both marginals KL-relaxed (UOT-CFM; torchcfm's OTPlanSampler("unbalanced")):
    uniform marginals summing to 1, cost divided by its max as torchcfm does. Returns (N0, N1), normalised to
    sum 1 (a sampling distribution over pairs)."""
    ot = _ot()
    x0 = _as_points(x0, "x0")
    x1 = _as_points(x1, "x1")
    _same_dim(x0, x1)
    eps, reg_m = _check_eps_regm(eps, reg_m)
    num_iter = check_int(num_iter, "num_iter", min=1)
    a = np.full(len(x0), 1.0 / len(x0))
    b = np.full(len(x1), 1.0 / len(x1))
    c = squared_distances(x0, x1)
    c = c / c.max() if c.max() > 0 else c
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = ot.unbalanced.sinkhorn_knopp_unbalanced(a, b, c, reg=eps, reg_m=reg_m, numItermax=num_iter)
    if not np.isfinite(plan).all() or plan.sum() <= 0:
        raise FloatingPointError("unbalanced Sinkhorn diverged; increase eps")
    return plan / plan.sum()


def tune_reg_m(x0, x1, eps: float, grid=(0.1, 0.3, 1.0, 3.0, 10.0), m0=1.0, m1=1.0) -> tuple[float, list[dict]]:
    """Pick reg_m at the elbow of transport cost vs. source-marginal KL over `grid` (spec section 9).

    For each reg_m the semi-relaxed plan is solved and two numbers are recorded: the mean transport cost
    <C, G>/Sum G and KL(G 1 | a). Small reg_m gives cheap transport and large marginal changes, large reg_m
    the opposite; the elbow is the grid point farthest from the chord joining the two ends of the
    (normalised) curve. Returns (best reg_m, table of dicts with reg_m, cost, kl).
    """
    g = check_array(grid, "grid", ndim=1)
    if g.size < 3 or (g <= 0).any() or len(np.unique(g)) != g.size:
        raise ValueError(f"grid needs at least 3 distinct values > 0, got {list(grid)}")
    grid = sorted(float(v) for v in g)
    x0 = _as_points(x0, "x0")
    x1 = _as_points(x1, "x1")
    c = squared_distances(x0, x1)
    rows = []
    for rm in grid:
        p = semi_relaxed_uot(x0, x1, m0, m1, eps=eps, reg_m=rm)
        mass = p.plan.sum(1)
        kl = float(np.sum(mass * np.log(mass / p.a) - mass + p.a))
        rows.append({"reg_m": rm, "cost": float((c * p.plan).sum() / p.plan.sum()), "kl": kl})
    cost = np.array([r["cost"] for r in rows])
    kl = np.array([r["kl"] for r in rows])
    cn = (cost - cost.min()) / max(np.ptp(cost), 1e-12)
    kn = (kl - kl.min()) / max(np.ptp(kl), 1e-12)
    p0, p1 = np.array([cn[0], kn[0]]), np.array([cn[-1], kn[-1]])
    d = p1 - p0
    dist = np.abs(d[0] * (kn - p0[1]) - d[1] * (cn - p0[0])) / max(np.linalg.norm(d), 1e-12)
    return grid[int(np.argmax(dist))], rows


def bridge_sample(
    x0: torch.Tensor,
    x1: torch.Tensor,
    tau: torch.Tensor,
    sigma: float,
    dt: torch.Tensor | float = 1.0,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sample the Brownian bridge between paired endpoints (spec 2.2 step 3).

    Args:
        x0, x1: (B, d) endpoints; tau: (B,) fractions in (0, 1); sigma: diffusion (>= 0);
        dt: interval length(s) Delta, float or (B,); generator: torch RNG for the noise.
    Returns:
        (x_tau, mu, eps): (B, d) sample, bridge mean, and the standard normal noise used.
    """
    x0, x1, tau, dt_t, sigma = _check_bridge(x0, x1, tau, sigma, dt)
    return _bridge_sample(x0, x1, tau, sigma, dt_t, generator)


def _bridge_sample(x0, x1, tau, sigma: float, dt_t, generator):
    """`bridge_sample` on checked inputs (tau and dt as (B, 1) columns): the training loop's fast path."""
    mu = (1.0 - tau) * x0 + tau * x1
    noise_device = generator.device if generator is not None else x0.device
    eps = torch.randn(x0.shape, generator=generator, dtype=x0.dtype, device=noise_device).to(x0.device)
    std = sigma * torch.sqrt(dt_t * tau * (1.0 - tau))
    return mu + std * eps, mu, eps


def bridge_targets(
    x0: torch.Tensor,
    x1: torch.Tensor,
    x_tau: torch.Tensor,
    tau: torch.Tensor,
    sigma: float,
    dt: torch.Tensor | float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Probability-flow velocity and score targets of the bridge at x_tau, per unit time.

    u = (x1 - x0)/dt + (1 - 2 tau) / (2 tau (1 - tau) dt) (x_tau - mu);
    s = -(x_tau - mu) / (sigma^2 dt tau (1 - tau))   (requires sigma > 0; returned as zeros when sigma == 0).
    Returns (u, s), each (B, d).
    """
    x0, x1, tau, dt_t, sigma = _check_bridge(x0, x1, tau, sigma, dt)
    x_tau = check_tensor(x_tau, "x_tau", shape=tuple(x0.shape))
    return _bridge_targets(x0, x1, x_tau, tau, sigma, dt_t)


def _bridge_targets(x0, x1, x_tau, tau, sigma: float, dt_t):
    """`bridge_targets` on checked inputs (tau and dt as (B, 1) columns): the training loop's fast path."""
    mu = (1.0 - tau) * x0 + tau * x1
    dev = x_tau - mu
    u = (x1 - x0) / dt_t + (1.0 - 2.0 * tau) / (2.0 * tau * (1.0 - tau) * dt_t) * dev
    if sigma > 0:
        s = -dev / (sigma**2 * dt_t * tau * (1.0 - tau))
    else:
        s = torch.zeros_like(dev)
    return u, s


def _check_bridge(x0, x1, tau, sigma, dt):
    """Shapes and ranges of the bridge arguments: x0, x1 (B, d) finite, tau (B,) in (0, 1), sigma >= 0,
    dt > 0 (float or (B,)). Returns (x0, x1, tau (B, 1), dt (B or 1, 1), sigma)."""
    x0 = check_tensor(x0, "x0", ndim=2)
    x1 = check_tensor(x1, "x1", shape=tuple(x0.shape), dtype=x0.dtype)
    tau = check_tensor(tau, "tau", ndim=(0, 1), dtype=x0.dtype).reshape(-1)
    if tau.numel() not in (1, len(x0)) or bool(((tau <= 0) | (tau >= 1)).any()):
        raise ValueError(f"tau must hold {len(x0)} fractions strictly inside (0, 1), got shape {tuple(tau.shape)}")
    sigma = check_float(sigma, "sigma", min=0.0)
    dt_t = check_tensor(dt, "dt", ndim=(0, 1), dtype=x0.dtype).to(x0.device).reshape(-1, 1)
    if dt_t.numel() not in (1, len(x0)) or bool((dt_t <= 0).any()):
        raise ValueError(f"dt must be > 0 (a float or {len(x0)} values), got shape {tuple(dt_t.shape)}")
    return x0, x1, tau.to(x0.device).reshape(-1, 1), dt_t, sigma
