"""Interval metrics (spec section 5).  Intervals are MAPIE-shaped: y_pis (n, 2, L) or (n, 2) for one level;
per-level metrics return (L,) arrays (a float for (n, 2) input).  Bounds may be infinite (ACI gives
infinite intervals) but not NaN; y must be finite; at least one interval is needed."""

from __future__ import annotations

import numpy as np

from icml26.common.validation import check_array, check_int

__all__ = ["coverage", "mean_width", "width_tv", "width_roughness", "nestedness_rate", "crossing_rate",
           "interval_score", "conditional_coverage_by_bin"]


def _pis(y_pis) -> tuple[np.ndarray, bool]:
    p = check_array(y_pis, "y_pis", finite=False)
    if np.isnan(p).any():
        raise ValueError(f"y_pis must not contain NaN ({int(np.isnan(p).sum())} NaN bound(s))")
    if p.ndim == 2 and p.shape[1] == 2:
        return p[:, :, None], True
    if p.ndim != 3 or p.shape[1] != 2:
        raise ValueError(f"y_pis must have shape (n, 2, L) or (n, 2), got {p.shape}")
    return p, False


def _out(v: np.ndarray, single: bool):
    return float(v[0]) if single else v


def _levels(confidence_levels, L: int) -> np.ndarray:
    lv = np.atleast_1d(check_array(confidence_levels, "confidence_levels", ndim=(0, 1)))
    if lv.size != L:
        raise ValueError(f"confidence_levels has {lv.size} levels but y_pis has {L}")
    if np.any(lv <= 0) or np.any(lv >= 1):
        raise ValueError(f"confidence_levels must lie strictly inside (0, 1), got {lv.tolist()}")
    return lv


def _y(y, n: int) -> np.ndarray:
    y = check_array(y, "y", ndim=(1, 2)).ravel()
    if len(y) != n:
        raise ValueError(f"y must have {n} values (one per interval), got {len(y)}")
    return y


def coverage(y, y_pis):
    """Fraction of y inside [lower, upper] per level."""
    p, single = _pis(y_pis)
    y = _y(y, len(p))[:, None]
    return _out(((y >= p[:, 0]) & (y <= p[:, 1])).mean(0), single)


def _widths(p: np.ndarray) -> np.ndarray:
    return p[:, 1] - p[:, 0]                                  # (n, L)


def mean_width(y_pis):
    """Mean interval width per level (inf if any interval is infinite)."""
    p, single = _pis(y_pis)
    return _out(_widths(p).mean(0), single)


def width_tv(y_pis):
    """Width total variation: mean |w_t - w_{t-1}| / mean w (unitless; smaller = smoother)."""
    p, single = _pis(y_pis)
    if len(p) < 2:
        raise ValueError(f"width_tv needs at least 2 intervals in y_pis, got {len(p)}")
    w = _widths(p)
    with np.errstate(invalid="ignore", divide="ignore"):
        return _out(np.abs(np.diff(w, axis=0)).mean(0) / w.mean(0), single)


def width_roughness(y_pis):
    """Width roughness: mean |w_t - 2 w_{t-1} + w_{t-2}| / mean w."""
    p, single = _pis(y_pis)
    if len(p) < 3:
        raise ValueError(f"width_roughness needs at least 3 intervals in y_pis, got {len(p)}")
    w = _widths(p)
    with np.errstate(invalid="ignore", divide="ignore"):
        return _out(np.abs(np.diff(w, n=2, axis=0)).mean(0) / w.mean(0), single)


def nestedness_rate(y_pis, confidence_levels, tol: float = 1e-9) -> float:
    """Fraction of t at which C(level_i) contains C(level_j) for every pair level_i > level_j."""
    p, _ = _pis(y_pis)
    lv = _levels(confidence_levels, p.shape[2])
    order = np.argsort(lv)
    lo, hi = p[:, 0, order], p[:, 1, order]                  # increasing level -> should widen
    with np.errstate(invalid="ignore"):
        ok = np.all(np.diff(lo, axis=1) <= tol, axis=1) & np.all(np.diff(hi, axis=1) >= -tol, axis=1)
    return float(ok.mean())


def crossing_rate(quantiles, tol: float = 1e-9) -> float:
    """Fraction of rows of raw quantiles (n, m) (columns in increasing tau) that are not non-decreasing."""
    Q = check_array(quantiles, "quantiles")
    if Q.ndim != 2:
        raise ValueError(f"quantiles must be 2-D (n, m), got shape {Q.shape}")
    return float(np.any(np.diff(Q, axis=1) < -tol, axis=1).mean())


def interval_score(y, y_pis, confidence_levels):
    """Winkler interval score: width + (2/alpha)(lower - y)_+ + (2/alpha)(y - upper)_+, mean per level."""
    p, single = _pis(y_pis)
    y = _y(y, len(p))[:, None]
    a = 1 - _levels(confidence_levels, p.shape[2])[None, :]
    s = _widths(p) + 2 / a * np.maximum(p[:, 0] - y, 0) + 2 / a * np.maximum(y - p[:, 1], 0)
    return _out(s.mean(0), single)


def conditional_coverage_by_bin(y, y_pis, volatility, n_bins: int = 3) -> np.ndarray:
    """Coverage per volatility quantile bin (default terciles): (n_bins, L) (or (n_bins,) for (n, 2) input)."""
    p, single = _pis(y_pis)
    y = _y(y, len(p))
    n_bins = check_int(n_bins, "n_bins", min=1)
    v = check_array(volatility, "volatility", ndim=(1, 2)).ravel()
    if len(v) != len(y):
        raise ValueError(f"volatility must have {len(y)} values, got {len(v)}")
    edges = np.quantile(v, np.linspace(0, 1, n_bins + 1))
    b = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, n_bins - 1)
    cov = (y[:, None] >= p[:, 0]) & (y[:, None] <= p[:, 1])
    out = np.array([cov[b == k].mean(0) if np.any(b == k) else np.full(p.shape[2], np.nan) for k in range(n_bins)])
    return out[:, 0] if single else out
