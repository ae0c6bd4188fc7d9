"""Usage profiles ("popular times") and multi-scale propagation to long-tail POIs (spec section 2.5, `mepoi.usage`).

* `popular_times`: an anchor POI's weekly usage curve over `bins` points.
  `method="released"` (default, faithful to the released preprocessing): every arrival is a +1 event and every
  departure a -1 event at its position in the week (day-of-week float in [0, 7)); events are stably sorted by
  position, cumulated, shifted so the minimum is 0, and linearly interpolated *between event points*
  (`np.interp(np.linspace(0, 7, bins), pos, value, period=7)`), then Savitzky-Golay smoothed (window 10,
  order 3, wrap-around), normalised to sum 1, negatives clamped to 0 and renormalised.
  `method="exact"`: the true step occupancy (visits in progress) on a 1-minute grid, then the same resampling,
  smoothing and normalisation. The two differ a lot for short visits (the released curve ramps linearly between
  events instead of stepping); both are offered, the released one is the default.
* `select_anchors`: POIs with at least `min_visits` visits (N_min).
* `transfer_gaussian`: for one scale sigma, `w_sa ∝ exp(-||x_s - x_a||^2 / (2 sigma^2))` normalised over anchors
  (rows whose weights all underflow get a zero vector, as released), `p_s = Σ_a w_sa p_a`.
* `multiscale_priors`: `transfer_gaussian` at sigma_k in km (0.3, 1, 3). `metric="km"` (our default [choice]):
  a local metric projection in km, isotropic; `metric="bbox"` (released): lat and lon min-max normalised
  separately inside the bbox and sigma divided by the bbox diagonal in km (anisotropic when the box is not
  square).
* `transfer_h3`: the mean anchor curve of the POI's H3 cell at each resolution (9, 8, 7) (optional `h3`).
* `transfer_text_similarity`: similarity-weighted mean of the top-k most text-similar anchors [reconstructed:
  the released variant's exact weighting is not documented; we weight by clipped cosine].
* `mixture_prior`: `p~_s = Σ_k softmax(alpha_s)_k p_s^(k)`, renormalised (the per-POI mixture, section 2.5).
* `build_priors`: all of the above from a visit table, as a `UsagePriors` record the trainer consumes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from icml26.common.validation import check_array, check_choice, check_float, check_int

__all__ = ["popular_times", "select_anchors", "transfer_gaussian", "multiscale_priors", "transfer_h3",
           "transfer_text_similarity", "mixture_prior", "UsagePriors", "build_priors", "bbox_diagonal_km"]

PERIODS = {"week": (7.0, 168.0), "day": (24.0, 24.0)}  # (curve period in its unit, hours per period)


def _smooth(curve: np.ndarray, smooth: tuple[int, int] | None) -> np.ndarray:
    if smooth is None:
        return curve
    from scipy.signal import savgol_filter

    win, order = smooth
    if win > len(curve):
        raise ValueError(f"smooth window {win} exceeds bins {len(curve)}")
    return savgol_filter(curve, win, order, mode="wrap")


def _normalise(curve: np.ndarray) -> np.ndarray:
    s = curve.sum()
    curve = curve / s if s > 0 else np.full_like(curve, 1.0 / len(curve))
    curve = np.clip(curve, 0.0, None)  # as loaded in the released code: clamp filter negatives, renormalise
    s = curve.sum()
    return curve / s if s > 0 else np.full_like(curve, 1.0 / len(curve))


def popular_times(arrival: Any, departure: Any, *, bins: int = 100, period: str = "week",
                  smooth: tuple[int, int] | None = (10, 3), method: str = "released") -> np.ndarray:
    """The usage curve of one POI from its visits.

    Args:
        arrival, departure: (n,) visit times in hours since Monday 00:00 local time (any week; only the position
            in the period matters), departure >= arrival. Lists are read like arrays.
        bins: curve length (paper: 100). period: "week" (positions are day-of-week floats in [0, 7); used by the
            paper) or "day" (hour of day in [0, 24)).
        smooth: Savitzky-Golay (window, polynomial order), wrap-around; None for no smoothing.
        method: "released" (event interpolation, faithful) or "exact" (step occupancy).
    Returns:
        (bins,) non-negative curve summing to 1.
    """
    bins = check_int(bins, "bins", min=4)
    check_choice(period, "period", tuple(PERIODS))
    check_choice(method, "method", ("released", "exact"))
    if smooth is not None:
        if not isinstance(smooth, (tuple, list)) or len(smooth) != 2:
            raise TypeError(f"smooth must be a (window, order) pair or None, got {smooth!r}")
        win = check_int(smooth[0], "smooth window", min=2)
        order = check_int(smooth[1], "smooth order", min=0)
        if order >= win:
            raise ValueError(f"smooth order must be < window, got order {order} and window {win}")
        if win > bins:
            raise ValueError(f"smooth window {win} exceeds bins {bins}")
        smooth = (win, order)
    a = check_array(arrival, "arrival", ndim=1)
    d = check_array(departure, "departure", ndim=1)
    if a.shape != d.shape:
        raise ValueError(f"arrival and departure must have the same length, got {a.shape} and {d.shape}")
    if np.any(d < a):
        raise ValueError("departure must be >= arrival for every visit")
    unit, hours = PERIODS[period]
    scale = unit / hours  # hours -> curve unit (days for the week, hours for the day)
    grid = np.linspace(0.0, unit, bins)
    if method == "released":
        pos = np.concatenate([np.mod(a, hours), np.mod(d, hours)]) * scale
        val = np.concatenate([np.ones(len(a)), -np.ones(len(d))])
        order_ = np.argsort(pos, kind="stable")
        pos, val = pos[order_], np.cumsum(val[order_])
        val = val - val.min()
        curve = np.interp(grid, pos, val, period=unit)
    else:
        minutes = int(round(hours * 60))
        length = np.rint((d - a) * 60).astype(np.int64)  # visit length in minutes
        full = length // minutes                            # whole periods covered
        rem = length - full * minutes
        s0 = np.rint(np.mod(a, hours) * 60).astype(np.int64) % minutes
        end = s0 + rem
        diff = np.zeros(minutes + 1)
        np.add.at(diff, s0, 1.0)
        inside = end <= minutes
        np.add.at(diff, end[inside], -1.0)
        wrap = ~inside  # the visit runs past the period's end: continue from its start
        np.add.at(diff, np.full(int(wrap.sum()), minutes), -1.0)
        np.add.at(diff, np.zeros(int(wrap.sum()), np.int64), 1.0)
        np.add.at(diff, end[wrap] - minutes, -1.0)
        steps = np.cumsum(diff)[:-1] + float(full.sum())
        fine = (np.arange(minutes) + 0.5) / 60.0 * scale
        curve = np.interp(grid, fine, steps, period=unit)
    return _normalise(_smooth(curve.astype(float), smooth))


def select_anchors(visit_counts: Any, min_visits: int) -> np.ndarray:
    """Boolean mask of anchor POIs: at least `min_visits` (N_min) visits. `visit_counts` is (n_poi,) ints."""
    c = check_array(visit_counts, "visit_counts", ndim=1, dtype=np.int64, min_size=0)
    if np.any(c < 0):
        raise ValueError("visit_counts must be non-negative")
    return c >= check_int(min_visits, "min_visits", min=1)


def transfer_gaussian(sparse_xy: Any, anchor_xy: Any, anchor_p: Any, sigma: float, *, chunk: int = 4096) -> np.ndarray:
    """Gaussian-kernel transfer of anchor curves to sparse POIs at one scale.

    Args:
        sparse_xy: (n_s, 2) coordinates (any planar unit). anchor_xy: (n_a, 2), same unit. anchor_p: (n_a, bins)
            anchor curves. sigma: kernel width in the coordinates' unit (> 0).
        chunk: sparse POIs per block (memory is O(chunk x n_a)).
    Returns:
        (n_s, bins): sum_a w_sa p_a with w normalised over anchors; a row whose weights all underflow to 0 is 0.
    """
    s = check_array(sparse_xy, "sparse_xy", ndim=2, min_size=0)
    a = check_array(anchor_xy, "anchor_xy", ndim=2, min_size=0)
    p = check_array(anchor_p, "anchor_p", ndim=2, min_size=0)
    sigma = check_float(sigma, "sigma", min=0.0, min_open=True)
    chunk = check_int(chunk, "chunk", min=1)
    if a.shape[0] == 0:
        raise ValueError("transfer_gaussian needs at least one anchor (anchor_xy is empty)")
    if s.shape[1:] != (2,) or a.shape[1:] != (2,):
        raise ValueError(f"sparse_xy and anchor_xy must be (n, 2), got {s.shape} and {a.shape}")
    if p.shape[0] != a.shape[0]:
        raise ValueError(f"anchor_p has {p.shape[0]} rows but anchor_xy has {a.shape[0]}")
    if np.any(p < 0):
        raise ValueError("anchor_p must be non-negative curves")
    out = np.zeros((s.shape[0], p.shape[1]))
    for i in range(0, s.shape[0], chunk):
        d2 = ((s[i:i + chunk, None, :] - a[None, :, :]) ** 2).sum(-1)
        w = np.exp(-d2 / (2.0 * sigma * sigma))
        tot = w.sum(1, keepdims=True)
        w = np.divide(w, tot, out=np.zeros_like(w), where=tot > 0)
        out[i:i + chunk] = w @ p
    return out


def bbox_diagonal_km(bbox: Sequence[float]) -> float:
    """Diagonal of (min_lat, min_lon, max_lat, max_lon) in km (111 km per degree, as released)."""
    lat0, lon0, lat1, lon1 = (check_float(v, "bbox") for v in bbox)
    dy = (lat1 - lat0) * 111.0
    dx = (lon1 - lon0) * 111.0 * math.cos(math.radians((lat0 + lat1) / 2))
    return math.hypot(dx, dy)


def _coords(latlon: np.ndarray, metric: str, bbox: Sequence[float]) -> np.ndarray:
    lat0, lon0, lat1, lon1 = bbox
    if metric == "bbox":
        return np.stack([(latlon[:, 0] - lat0) / max(lat1 - lat0, 1e-12),
                         (latlon[:, 1] - lon0) / max(lon1 - lon0, 1e-12)], 1)
    mid = math.radians((lat0 + lat1) / 2)
    return np.stack([(latlon[:, 0] - lat0) * 111.32, (latlon[:, 1] - lon0) * 111.32 * math.cos(mid)], 1)


def multiscale_priors(sparse_latlon: Any, anchor_latlon: Any, anchor_p: Any,
                      sigmas_km: Sequence[float] = (0.3, 1.0, 3.0), *, metric: str = "km",
                      bbox: Sequence[float] | None = None) -> np.ndarray:
    """`transfer_gaussian` at each scale: (n_s, K, bins) for K = len(sigmas_km).

    Args:
        sparse_latlon, anchor_latlon: (n, 2) [lat, lon] in degrees. anchor_p: (n_a, bins).
        sigmas_km: kernel widths in km.
        metric: "km" (local projection, isotropic; our default) or "bbox" (released normalised coordinates with
            sigma / bbox diagonal).
        bbox: (min_lat, min_lon, max_lat, max_lon); default the box of all given points.
    """
    s = check_array(sparse_latlon, "sparse_latlon", ndim=2, min_size=0)
    a = check_array(anchor_latlon, "anchor_latlon", ndim=2, min_size=0)
    check_choice(metric, "metric", ("km", "bbox"))
    if isinstance(sigmas_km, (str, bytes)) or not hasattr(sigmas_km, "__len__") or len(sigmas_km) == 0:
        raise TypeError("sigmas_km must be a non-empty sequence of kernel widths in km")
    sig = [check_float(x, "sigmas_km", min=0, min_open=True) for x in sigmas_km]
    if s.shape[1:] != (2,) or a.shape[1:] != (2,):
        raise ValueError(f"sparse_latlon and anchor_latlon must be (n, 2), got {s.shape} and {a.shape}")
    if bbox is None:
        both = np.concatenate([s, a]) if len(s) else a
        if len(both) == 0:
            raise ValueError("transfer_gaussian needs at least one anchor (anchor_latlon is empty)")
        bbox = (both[:, 0].min(), both[:, 1].min(), both[:, 0].max(), both[:, 1].max())
    else:
        bbox = tuple(check_array(bbox, "bbox", shape=(4,)).tolist())
    if metric == "bbox":
        diag = bbox_diagonal_km(bbox)
        if diag <= 0:
            raise ValueError("bbox has zero extent; use metric='km'")
        sig = [x / diag for x in sig]
    xs, xa = _coords(s, metric, bbox), _coords(a, metric, bbox)
    return np.stack([transfer_gaussian(xs, xa, anchor_p, x) for x in sig], axis=1)


def transfer_h3(sparse_latlon: Any, anchor_latlon: Any, anchor_p: Any,
                resolutions: Sequence[int] = (9, 8, 7)) -> np.ndarray:
    """Hierarchical H3 transfer: at each resolution, the mean curve of the anchors in the sparse POI's cell
    (zero when the cell has none). Returns (n_s, len(resolutions), bins). Needs the `h3` package."""
    try:
        import h3
    except ModuleNotFoundError as e:  # pragma: no cover - exercised where the extra is missing
        raise ModuleNotFoundError("transfer_h3 needs the optional package h3: pip install 'icml26[mepoi]'",
                                  name="h3") from e
    s = check_array(sparse_latlon, "sparse_latlon", ndim=2, min_size=0)
    a = check_array(anchor_latlon, "anchor_latlon", ndim=2, min_size=0)
    p = check_array(anchor_p, "anchor_p", ndim=2, min_size=0)
    if a.shape[0] == 0:
        raise ValueError("transfer_h3 needs at least one anchor (anchor_latlon is empty)")
    if p.shape[0] != a.shape[0]:
        raise ValueError(f"anchor_p has {p.shape[0]} rows but anchor_latlon has {a.shape[0]}")
    if isinstance(resolutions, (str, bytes)) or not hasattr(resolutions, "__len__") or len(resolutions) == 0:
        raise TypeError("resolutions must be a non-empty sequence of H3 resolutions (0-15)")
    res = [check_int(r, "resolutions", min=0, max=15) for r in resolutions]
    for name, arr in (("sparse_latlon", s), ("anchor_latlon", a)):
        if arr.shape[1:] != (2,) or np.any(np.abs(arr[:, 0]) > 90) or np.any(np.abs(arr[:, 1]) > 180):
            raise ValueError(f"{name} must be (n, 2) [lat, lon] degrees")
    out = np.zeros((s.shape[0], len(res), p.shape[1]))
    for k, r in enumerate(res):
        cells_a = [h3.latlng_to_cell(float(x), float(y), r) for x, y in a]
        sums: dict[str, np.ndarray] = {}
        counts: dict[str, int] = {}
        for c, row in zip(cells_a, p):
            sums[c] = sums.get(c, 0.0) + row
            counts[c] = counts.get(c, 0) + 1
        for i, (x, y) in enumerate(s):
            c = h3.latlng_to_cell(float(x), float(y), r)
            if c in sums:
                out[i, k] = sums[c] / counts[c]
    return out


def transfer_text_similarity(sparse_text: Any, anchor_text: Any, anchor_p: Any, top_k: int = 10) -> np.ndarray:
    """Text-similarity transfer: each sparse POI takes the mean of its `top_k` most cosine-similar anchors'
    curves, weighted by the (clipped at 0) cosine. (n_s, d) and (n_a, d) embeddings; returns (n_s, bins)."""
    s = check_array(sparse_text, "sparse_text", ndim=2, min_size=0)
    a = check_array(anchor_text, "anchor_text", ndim=2, min_size=0)
    p = check_array(anchor_p, "anchor_p", ndim=2, min_size=0)
    top_k = check_int(top_k, "top_k", min=1)
    if a.shape[0] == 0:
        raise ValueError("transfer_text_similarity needs at least one anchor")
    if s.shape[1] != a.shape[1]:
        raise ValueError(f"sparse_text and anchor_text must have the same width, got {s.shape[1]} and {a.shape[1]}")
    if p.shape[0] != a.shape[0]:
        raise ValueError(f"anchor_p has {p.shape[0]} rows but anchor_text has {a.shape[0]}")
    sn = s / np.maximum(np.linalg.norm(s, axis=1, keepdims=True), 1e-12)
    an = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    sim = sn @ an.T
    k = min(top_k, a.shape[0])
    idx = np.argpartition(-sim, k - 1, axis=1)[:, :k]
    w = np.clip(np.take_along_axis(sim, idx, 1), 0.0, None)
    tot = w.sum(1, keepdims=True)
    w = np.where(tot > 0, w / np.where(tot > 0, tot, 1), 1.0 / k)
    return np.einsum("sk,skb->sb", w, p[idx])


def mixture_prior(priors: Any, alpha: Any):
    """p~ = sum_k softmax(alpha)_k priors[:, k], renormalised (eps 1e-12 as released).

    Works on numpy arrays or torch tensors (differentiable in alpha): priors (n, K, bins), alpha (n, K)."""
    try:
        import torch
    except ModuleNotFoundError:  # pragma: no cover
        torch = None
    if torch is not None and isinstance(priors, torch.Tensor):
        w = torch.softmax(alpha, dim=-1)
        p = torch.einsum("nk,nkb->nb", w, priors)
        return p / (p.sum(-1, keepdim=True) + 1e-12)
    pr = check_array(priors, "priors", ndim=3, min_size=0)
    al = check_array(alpha, "alpha", ndim=2, min_size=0)
    if al.shape != pr.shape[:2]:
        raise ValueError(f"alpha must have shape {pr.shape[:2]}, got {al.shape}")
    w = np.exp(al - al.max(1, keepdims=True)) if al.size else al
    w = w / w.sum(1, keepdims=True) if al.size else w
    p = np.einsum("nk,nkb->nb", w, pr)
    return p / (p.sum(-1, keepdims=True) + 1e-12)


@dataclass
class UsagePriors:
    """Everything the KL terms need, aligned with the POI table rows.

    Attributes:
        curves: (n_poi, bins) anchor usage curves (`popular_times`); zero rows for non-anchors.
        is_anchor: (n_poi,) bool.
        transfer: (n_poi, K, bins) propagated priors of non-anchors (zero rows for anchors).
        scales: the K scales' labels (sigma in km, or H3 resolutions).
        visit_counts: (n_poi,) visits per POI.
    """

    curves: np.ndarray
    is_anchor: np.ndarray
    transfer: np.ndarray
    scales: tuple
    visit_counts: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.is_anchor)
        if self.curves.shape[0] != n or self.transfer.shape[0] != n or len(self.visit_counts) != n:
            raise ValueError("UsagePriors fields must all have one row per POI")
        if self.transfer.shape[2] != self.curves.shape[1]:
            raise ValueError("UsagePriors.transfer and .curves must have the same number of bins")

    @property
    def n_bins(self) -> int:
        return int(self.curves.shape[1])


def build_priors(arrival: Any, departure: Any, poi_index: Any, latlon: Any, *, min_visits: int = 500,
                 sigmas_km: Sequence[float] = (0.3, 1.0, 3.0), bins: int = 100, method: str = "released",
                 backend: str = "gaussian", metric: str = "km", h3_resolutions: Sequence[int] = (9, 8, 7),
                 bbox: Sequence[float] | None = None) -> UsagePriors:
    """Anchor curves and propagated priors for every POI.

    Args:
        arrival, departure: (n_visits,) hours since Monday 00:00 local time. poi_index: (n_visits,) POI rows.
        latlon: (n_poi, 2) degrees. min_visits: N_min (paper 500; CPU reproduction 30).
        sigmas_km, metric, bbox: see `multiscale_priors`. backend: "gaussian" or "h3" (`h3_resolutions`).
        bins, method: see `popular_times`.
    """
    ll = check_array(latlon, "latlon", ndim=2)
    n_poi = ll.shape[0]
    idx = check_array(poi_index, "poi_index", ndim=1, dtype=np.int64, min_size=0)
    if idx.size and (idx.min() < 0 or idx.max() >= n_poi):
        raise ValueError(f"poi_index must be in [0, {n_poi}), got values in [{idx.min()}, {idx.max()}]")
    a = check_array(arrival, "arrival", ndim=1, min_size=0)
    d = check_array(departure, "departure", ndim=1, min_size=0)
    if not (len(a) == len(d) == len(idx)):
        raise ValueError("arrival, departure and poi_index must have the same length")
    check_choice(backend, "backend", ("gaussian", "h3"))
    bins = check_int(bins, "bins", min=4)
    counts = np.bincount(idx, minlength=n_poi)
    anchors = select_anchors(counts, min_visits)
    if idx.size and not anchors.any():
        # no anchor: every prior would be the zero curve and the KL term NaN (a silent wrong answer)
        raise ValueError(f"min_visits={min_visits}: no POI has that many visits (the busiest has {counts.max()}); "
                         "the usage priors need at least one anchor POI")
    curves = np.zeros((n_poi, bins))
    order = np.argsort(idx, kind="stable")
    starts = np.searchsorted(idx[order], np.arange(n_poi + 1))
    for p in np.flatnonzero(anchors):
        rows = order[starts[p]:starts[p + 1]]
        curves[p] = popular_times(a[rows], d[rows], bins=bins, method=method)
    if backend == "gaussian":
        scales = tuple(float(s) for s in sigmas_km)
        k = len(scales)
    else:
        scales = tuple(int(r) for r in h3_resolutions)
        k = len(scales)
    transfer = np.zeros((n_poi, k, bins))
    sparse = ~anchors
    if anchors.any() and sparse.any():
        if backend == "gaussian":
            transfer[sparse] = multiscale_priors(ll[sparse], ll[anchors], curves[anchors], sigmas_km, metric=metric,
                                                 bbox=bbox if bbox is not None else
                                                 (ll[:, 0].min(), ll[:, 1].min(), ll[:, 0].max(), ll[:, 1].max()))
        else:
            transfer[sparse] = transfer_h3(ll[sparse], ll[anchors], curves[anchors], h3_resolutions)
    return UsagePriors(curves=curves, is_anchor=anchors, transfer=transfer, scales=scales, visit_counts=counts)
