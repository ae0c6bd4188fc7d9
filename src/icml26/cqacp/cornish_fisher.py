"""Monotone Cornish-Fisher (CF) fit of a quantile curve - the step that makes CQACP intervals nested.

Given quantile estimates q_k at levels tau_k (possibly noisy and crossing), fit the 4-term CF expansion
(spec section 2, step 5)

    w(z; S, K) = z + (z^2 - 1) S/6 + (z^3 - 3z) K/24 - (2z^3 - 5z) S^2/36              (CF-1)
    q_CF(tau; m, s, S, K) = m + s * w(Phi^{-1}(tau); S, K),   s >= 0                     (CF-2)

by (weighted) least squares  sum_k omega_k (q_k - q_CF(tau_k))^2  under a monotonicity constraint on
w'(z) = a z^2 + b z + c,  a = K/8 - S^2/6,  b = S/3,  c = 1 - K/8 + 5 S^2/36                 (CF-3)

- monotone="global": w'(z) > 0 for every z  <=>  (S = K = 0) or (a > 0 and b^2 < 4ac)  (the classical
  CF domain of validity);
- monotone="range" (default): w'(z) >= eps on [z_lo, z_hi] (the fitted levels plus any level the caller
  declares).  Outside [z_lo, z_hi] the curve is continued by its tangent line in z, so `quantile` is
  monotone in tau everywhere (an implementation choice [R]: the CF polynomial itself may turn outside the
  range; levels beyond the range are an extrapolation and CQACPRegressor warns about them).

Solver (spec step 6): for fixed (S, K) the model is linear in (m, s), so (m, s) are profiled out in closed
form (s clipped at 0); the profile objective is minimised over a feasible 2-D (S, K) grid (vectorised over
all grid points and all rows), then polished by a few rounds of local grid refinement around the argmin
(feasibility re-checked analytically).  No per-row SLSQP, so `fit_many` on 1000 rows takes well under 1 s.

Everything about CF in CQACP is a reconstruction [R] from the abstract (full text unavailable); see
docs/cqacp.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from icml26.common.validation import check_array, check_choice, check_float, check_int

__all__ = ["CornishFisherQuantileCurve", "CFParams", "cf_w", "cf_w_prime", "cf_quantile", "is_cf_monotone"]

_MONOTONE = ("range", "global", "none")


# ------------------------------------------------------------------------------------------ formulas
def cf_w(z: np.ndarray, skew: np.ndarray | float, exkurt: np.ndarray | float) -> np.ndarray:
    """The CF transform w(z; S, K) of eq. (CF-1); broadcasts over all arguments."""
    z = np.asarray(z, dtype=float)
    S = np.asarray(skew, dtype=float)
    K = np.asarray(exkurt, dtype=float)
    return z + (z**2 - 1) * S / 6 + (z**3 - 3 * z) * K / 24 - (2 * z**3 - 5 * z) * S**2 / 36


def _abc(skew, exkurt):
    S = np.asarray(skew, dtype=float)
    K = np.asarray(exkurt, dtype=float)
    return K / 8 - S**2 / 6, S / 3, 1 - K / 8 + 5 * S**2 / 36


def cf_w_prime(z: np.ndarray, skew, exkurt) -> np.ndarray:
    """dw/dz = a z^2 + b z + c of eq. (CF-3); broadcasts."""
    a, b, c = _abc(skew, exkurt)
    z = np.asarray(z, dtype=float)
    return a * z**2 + b * z + c


def cf_quantile(taus, mean, scale, skew, exkurt) -> np.ndarray:
    """q_CF(tau) of eq. (CF-2) with plain CF (no tangent extension); broadcasts."""
    return np.asarray(mean) + np.asarray(scale) * cf_w(ndtri(np.asarray(taus, dtype=float)), skew, exkurt)


def _min_w_prime(skew, exkurt, z_lo: float, z_hi: float) -> np.ndarray:
    """Minimum of w'(z) over [z_lo, z_hi] (analytic: endpoints and, if a > 0, the vertex)."""
    a, b, c = _abc(skew, exkurt)
    m = np.minimum(a * z_lo**2 + b * z_lo + c, a * z_hi**2 + b * z_hi + c)
    with np.errstate(divide="ignore", invalid="ignore"):
        zv = np.where(a > 0, -b / (2 * np.where(a > 0, a, 1.0)), np.nan)
    inside = (a > 0) & (zv > z_lo) & (zv < z_hi)
    vert = c - np.where(inside, b**2 / (4 * np.where(a > 0, a, 1.0)), 0.0)
    return np.where(inside, np.minimum(m, vert), m)


def is_cf_monotone(skew, exkurt, monotone: str = "range", z_range: tuple[float, float] = (-2.33, 2.33),
                   eps: float = 0.0) -> np.ndarray:
    """Feasibility of (S, K): "global" = CF domain of validity, "range" = w' >= eps on z_range."""
    S = np.asarray(skew, dtype=float)
    K = np.asarray(exkurt, dtype=float)
    if monotone == "global":
        a, b, c = _abc(S, K)
        zero = (np.abs(S) < 1e-12) & (np.abs(K) < 1e-12)
        return zero | ((a > 0) & (b**2 < 4 * a * c))
    if monotone == "range":
        return _min_w_prime(S, K, float(z_range[0]), float(z_range[1])) >= eps
    if monotone == "none":
        return np.ones(np.broadcast(S, K).shape, dtype=bool)
    raise ValueError(f"monotone must be one of {_MONOTONE}, got {monotone!r}")


# ------------------------------------------------------------------------------------------ fit result
@dataclass
class CFParams:
    """CF fits of n quantile rows (all arrays shape (n,)).

    mean, scale, skew, exkurt: the "conditional moments" (m, s, S, K) of eq. (CF-2).
    residual: root weighted-mean-square fit residual, in the units of the quantiles (spec pitfall: report it).
    z_range: the z interval on which monotonicity was enforced ("range" mode), else None.
    """

    mean: np.ndarray
    scale: np.ndarray
    skew: np.ndarray
    exkurt: np.ndarray
    residual: np.ndarray
    z_range: tuple[float, float] | None = None

    def __len__(self) -> int:
        return len(self.mean)

    def quantile(self, taus) -> np.ndarray:
        """Quantiles at `taus` for every row: (n, L) for taus of shape (L,), or (n,) for a per-row (n,) array
        when `taus` has the same length as the rows and `per_row=True` is wanted use `quantile_per_row`."""
        taus = _check_taus(taus, "taus", open_interval=True)
        z = ndtri(taus)[None, :]
        return self._q_of_z(z)

    def quantile_per_row(self, taus) -> np.ndarray:
        """One level per row: taus of shape (n,) -> (n,)."""
        taus = np.asarray(taus, dtype=float)
        if taus.shape != self.mean.shape:
            raise ValueError(f"taus must have shape {self.mean.shape}, got {taus.shape}")
        return self._q_of_z(ndtri(taus)[:, None])[:, 0]

    def _q_of_z(self, z: np.ndarray) -> np.ndarray:
        m, s, S, K = (v[:, None] for v in (self.mean, self.scale, self.skew, self.exkurt))
        w = cf_w(z, S, K)
        if self.z_range is not None:  # tangent continuation outside the enforced range (monotone everywhere)
            lo, hi = self.z_range
            zb = np.broadcast_to(z, w.shape)
            w_lo, w_hi = cf_w(lo, S, K), cf_w(hi, S, K)
            d_lo, d_hi = cf_w_prime(lo, S, K), cf_w_prime(hi, S, K)
            w = np.where(zb < lo, w_lo + d_lo * (zb - lo), w)
            w = np.where(zb > hi, w_hi + d_hi * (zb - hi), w)
        return m + s * w


# ------------------------------------------------------------------------------------------ estimator
class CornishFisherQuantileCurve:
    """Monotone Cornish-Fisher fit of quantile estimates (works alone as a quantile-crossing fix).

    Args:
        monotone: "range" (default; w' >= eps on the declared z range), "global" (CF domain of validity)
            or "none" (unconstrained, may cross).
        z_range: (z_lo, z_hi) where monotonicity is enforced in "range" mode; default: the span of the fitted
            levels, widened to include `extra_taus`.
        extra_taus: levels (in (0, 1)) that will be queried later and must lie in the monotone range.
        skew_bounds, exkurt_bounds: the (S, K) search box; default (-2.5, 2.5) and (-1, 20).
        grid_size: (n_S, n_K) points of the coarse grid (default (101, 101); S = 0 and K = 0 are always on it).
        refine: rounds of local 7x7 grid refinement around the argmin (default 4; 0 = grid only).
        eps: margin of the "range" constraint, w'(z) >= eps (default 1e-6).

    Attributes after `fit`: mean_, scale_, skew_, exkurt_ (floats), residual_ (RMS fit residual), params_
    (a one-row `CFParams`).
    """

    def __init__(self, monotone: str = "range", z_range: tuple[float, float] | None = None,
                 extra_taus=None, skew_bounds: tuple[float, float] = (-2.5, 2.5),
                 exkurt_bounds: tuple[float, float] = (-1.0, 20.0), grid_size: tuple[int, int] = (101, 101),
                 refine: int = 4, eps: float = 1e-6) -> None:
        check_choice(monotone, "monotone", _MONOTONE)
        if z_range is not None:
            z_range = _pair(z_range, "z_range")
        skew_bounds, exkurt_bounds = _pair(skew_bounds, "skew_bounds"), _pair(exkurt_bounds, "exkurt_bounds")
        if isinstance(grid_size, (str, bytes)) or not hasattr(grid_size, "__len__") or len(grid_size) != 2:
            raise ValueError(f"grid_size must be two ints >= 3, got {grid_size!r}")
        self.monotone = monotone
        self.z_range = z_range
        self.extra_taus = None if extra_taus is None else _check_taus(extra_taus, "extra_taus", True)
        self.skew_bounds = skew_bounds
        self.exkurt_bounds = exkurt_bounds
        self.grid_size = (check_int(grid_size[0], "grid_size[0]", min=3),
                          check_int(grid_size[1], "grid_size[1]", min=3))
        self.refine = check_int(refine, "refine", min=0)
        self.eps = check_float(eps, "eps", min=0.0)
        self._cache: dict = {}

    # -------------------------------------------------------------------- public
    def fit(self, taus, quantiles, weights=None) -> CornishFisherQuantileCurve:
        """Fit one curve. taus (m,) in (0, 1), quantiles (m,) (any order, may cross), weights (m,) >= 0."""
        q = check_array(quantiles, "quantiles", finite=False)
        if q.ndim != 1:
            raise ValueError(f"quantiles must be 1-D (m,), got shape {q.shape}; use fit_many for batches")
        p = self.fit_many(taus, q[None, :], weights)
        self.params_ = p
        self.mean_, self.scale_ = float(p.mean[0]), float(p.scale[0])
        self.skew_, self.exkurt_ = float(p.skew[0]), float(p.exkurt[0])
        self.residual_ = float(p.residual[0])
        return self

    def quantile(self, taus) -> np.ndarray:
        """Fitted quantiles at `taus` (scalar or (L,)) -> same shape; monotone in tau."""
        self._check_fitted()
        scalar = np.ndim(taus) == 0
        out = self.params_.quantile(np.atleast_1d(taus))[0]
        return float(out[0]) if scalar else out

    def is_monotone(self, z_range: tuple[float, float] | None = None, n_grid: int = 2001,
                    tol: float = 1e-9) -> bool:
        """Whether w'(z) >= -tol on a dense grid of `z_range` (default: the enforced range, or [-3, 3])."""
        self._check_fitted()
        zr = _pair(z_range, "z_range") if z_range is not None else (self.params_.z_range or (-3.0, 3.0))
        z = np.linspace(zr[0], zr[1], check_int(n_grid, "n_grid", min=2))
        tol = check_float(tol, "tol", min=0.0)
        return bool(np.all(self.scale_ * cf_w_prime(z, self.skew_, self.exkurt_) >= -tol))

    def fit_many(self, taus, Q, weights=None) -> CFParams:
        """Vectorised fit of many rows: taus (m,), Q (n, m), weights (m,) or None -> CFParams of length n."""
        taus = _check_taus(taus, "taus", open_interval=True)
        Q = check_array(Q, "Q", finite=False, min_size=0)
        if Q.ndim != 2 or Q.shape[1] != taus.size:
            raise ValueError(f"Q must have shape (n, {taus.size}) matching taus, got {Q.shape}")
        if taus.size < 3:
            raise ValueError(f"need at least 3 levels to fit (m, s, S, K), got {taus.size}")
        if not np.all(np.isfinite(Q)):
            raise ValueError("Q (quantiles) contains NaN or inf")
        omega = np.ones(taus.size) if weights is None else check_array(weights, "weights", finite=False)
        if omega.shape != taus.shape or np.any(omega < 0) or not np.any(omega > 0) or not np.all(np.isfinite(omega)):
            raise ValueError(f"weights must be finite, >= 0, not all zero, shape {taus.shape}")
        omega = omega / omega.sum()
        z = ndtri(taus)
        z_rng = self._z_range(taus) if self.monotone == "range" else None
        if len(Q) == 0:
            e = np.empty(0)
            return CFParams(mean=e, scale=e.copy(), skew=e.copy(), exkurt=e.copy(), residual=e.copy(), z_range=z_rng)
        S_g, K_g = self._grid(z_rng)
        key = ("proj", z_rng, self.monotone, taus.tobytes(), omega.tobytes())
        if key not in self._cache:   # grid projections depend only on (taus, weights, range): reuse them
            if len(self._cache) > 64:
                self._cache.clear()
            self._cache[key] = _grid_projection(z, omega, S_g, K_g)
        S_best, K_best, _ = _profile_argmin(Q, omega, S_g, K_g, *self._cache[key])
        qbar = Q @ omega
        flat = ((Q - qbar[:, None]) ** 2) @ omega <= 1e-28 * (1 + qbar**2)    # constant rows: S = K = 0, s = 0
        S_best, K_best = np.where(flat, 0.0, S_best), np.where(flat, 0.0, K_best)
        dS = (self.skew_bounds[1] - self.skew_bounds[0]) / (self.grid_size[0] - 1)
        dK = (self.exkurt_bounds[1] - self.exkurt_bounds[0]) / (self.grid_size[1] - 1)
        offs = np.linspace(-1, 1, 7)
        for _ in range(self.refine):  # local refinement, per row, vectorised
            cS = np.clip(S_best[:, None, None] + dS * offs[None, :, None], *self.skew_bounds)
            cK = np.clip(K_best[:, None, None] + dK * offs[None, None, :], *self.exkurt_bounds)
            cS, cK = np.broadcast_arrays(cS, cK)
            cS, cK = cS.reshape(len(Q), -1), cK.reshape(len(Q), -1)
            feas = is_cf_monotone(cS, cK, self.monotone, z_rng or (0, 1), self.eps)
            S_best, K_best = _local_argmin(z, omega, Q, cS, cK, feas, S_best, K_best)
            S_best, K_best = np.where(flat, 0.0, S_best), np.where(flat, 0.0, K_best)
            dS, dK = dS / 3, dK / 3
        m, s, sse = _profile_ms(z, omega, Q, S_best, K_best)
        return CFParams(mean=m, scale=s, skew=S_best, exkurt=K_best, residual=np.sqrt(np.maximum(sse, 0)),
                        z_range=z_rng)

    # -------------------------------------------------------------------- internals
    def _z_range(self, taus: np.ndarray) -> tuple[float, float]:
        if self.z_range is not None:
            return self.z_range
        t = taus if self.extra_taus is None else np.concatenate([taus, self.extra_taus])
        return float(ndtri(t.min())), float(ndtri(t.max()))

    def _grid(self, z_rng) -> tuple[np.ndarray, np.ndarray]:
        key = (z_rng, self.monotone)
        if key not in self._cache:
            S = np.union1d(np.linspace(*self.skew_bounds, self.grid_size[0]), [0.0])
            K = np.linspace(*self.exkurt_bounds, self.grid_size[1])
            if self.exkurt_bounds[0] <= 0 <= self.exkurt_bounds[1]:
                K = np.union1d(K, [0.0])
            S_g, K_g = (a.ravel() for a in np.meshgrid(S, K, indexing="ij"))
            ok = is_cf_monotone(S_g, K_g, self.monotone, z_rng or (0, 1), self.eps)
            if self.monotone == "global":
                ok |= (S_g == 0) & (K_g == 0)
            if not ok.any():
                raise ValueError("no (S, K) on the grid satisfies the monotonicity constraint")
            self._cache[key] = (S_g[ok], K_g[ok])
        return self._cache[key]

    def _check_fitted(self) -> None:
        if not hasattr(self, "params_"):
            raise RuntimeError("CornishFisherQuantileCurve is not fitted; call fit(taus, quantiles) first")


def _profile_ms(z, omega, Q, S, K):
    """Closed-form weighted LS of (m, s >= 0) given per-row (S, K): returns m, s, weighted MSE (all (n,))."""
    W = cf_w(z[None, :], S[:, None], K[:, None])                         # (n, m)
    wbar = W @ omega
    qbar = Q @ omega
    Wc, Qc = W - wbar[:, None], Q - qbar[:, None]
    var = (Wc**2) @ omega
    cov = (Wc * Qc) @ omega
    s = np.where(var > 1e-300, np.maximum(cov, 0) / np.where(var > 1e-300, var, 1), 0.0)
    m = qbar - s * wbar
    sse = (Qc**2) @ omega - s * np.maximum(cov, 0)
    return m, s, sse


def _grid_projection(z, omega, S_g, K_g):
    """Weighted-centred CF basis of every grid point: Wo (m, G) and 1 / var (G,)."""
    W = cf_w(z[None, :], S_g[:, None], K_g[:, None])                     # (G, m)
    Wc = W - (W @ omega)[:, None]
    var = (Wc**2) @ omega                                                 # (G,)
    Wo = np.ascontiguousarray((Wc * omega[None, :]).T)                    # (m, G)
    inv_var = np.where(var > 1e-300, 1.0 / np.where(var > 1e-300, var, 1), 0.0)
    return Wo, inv_var


def _profile_argmin(Q, omega, S_g, K_g, Wo, inv_var, chunk: int = 256):
    """argmin over the grid of the profiled objective, for every row; chunks rows to bound memory."""
    n = len(Q)
    S_out, K_out, gain_out = np.empty(n), np.empty(n), np.empty(n)
    for i in range(0, n, chunk):
        Qc = Q[i:i + chunk] - (Q[i:i + chunk] @ omega)[:, None]
        cov = np.maximum(Qc @ Wo, 0)                                      # (c, G)
        gain = cov**2 * inv_var[None, :]                                  # SSE reduction, maximise
        j = np.argmax(gain, axis=1)
        S_out[i:i + chunk], K_out[i:i + chunk] = S_g[j], K_g[j]
        gain_out[i:i + chunk] = gain[np.arange(len(j)), j]
    return S_out, K_out, gain_out


def _local_argmin(z, omega, Q, cS, cK, feas, S0, K0):
    """Best feasible candidate per row (n, C); keeps (S0, K0) unless a candidate is strictly better."""
    W = cf_w(z[None, None, :], cS[:, :, None], cK[:, :, None])           # (n, C, m)
    Wc = W - (W @ omega)[:, :, None]
    var = (Wc**2) @ omega
    Qc = Q - (Q @ omega)[:, None]
    cov = np.maximum(np.einsum("ncm,nm->nc", Wc * omega, Qc), 0)
    gain = np.where((var > 1e-300) & feas, cov**2 / np.where(var > 1e-300, var, 1), -np.inf)
    W0 = cf_w(z[None, :], S0[:, None], K0[:, None])
    W0c = W0 - (W0 @ omega)[:, None]
    v0 = (W0c**2) @ omega
    c0 = np.maximum((W0c * Qc) @ omega, 0)
    g0 = np.where(v0 > 1e-300, c0**2 / np.where(v0 > 1e-300, v0, 1), 0.0)
    j = np.argmax(gain, axis=1)
    gj = gain[np.arange(len(j)), j]
    better = gj > g0 * (1 + 1e-12) + 1e-300
    return np.where(better, cS[np.arange(len(j)), j], S0), np.where(better, cK[np.arange(len(j)), j], K0)


def _pair(value, name: str) -> tuple[float, float]:
    """(low, high) finite with low < high."""
    v = check_array(value, name, shape=(2,))
    if not v[0] < v[1]:
        raise ValueError(f"{name} must be (low, high) with low < high, got {tuple(v)}")
    return float(v[0]), float(v[1])


def _check_taus(taus, name: str, open_interval: bool) -> np.ndarray:
    t = np.atleast_1d(check_array(taus, name, finite=False))
    if t.ndim != 1 or t.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of levels, got shape {t.shape}")
    if not np.all(np.isfinite(t)) or np.any(t <= 0) or np.any(t >= 1):
        raise ValueError(f"{name} must lie strictly inside (0, 1), got {t}")
    return t
