"""Meta-evaluation (spec §2.3 step 6, review notes 1 and 3): how well automatic scores track human scores.

- `correlate(auto, human)`: response-level Pearson / Spearman / Kendall with paired bootstrap CIs
  (`icml26.common.stats.bootstrap_interval`, scipy's bootstrap; `correlation_interval` returns the `Interval`).
- `within_group_r(auto, human, groups)`: Pearson r after centring both by their group (responder) mean, pooled
  over groups: it measures whether the evaluator tracks differences BETWEEN responses of the same system, which the
  pooled r mostly does not (between-system gaps carry it; review note 1).
- `group_mean_control(human, groups)`: the "responder-mean" control: every response scored by its group's mean
  human score (judging no content).
- `system_agreement(auto_by_model, human_by_model)`: Kendall tau over systems with the discordant pairs listed.

Intervals and verdicts come from `icml26.common.stats` (this module has no resampling of its own).

Undefined correlations (a constant input) are NaN, never a number that looks informative.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

from icml26.common import stats as _stats
from icml26.common.validation import check_array, check_float, check_int, check_seed

__all__ = ["correlate", "correlation_interval", "within_group_r", "within_r_codes", "group_mean_control",
           "system_agreement", "METHODS"]

METHODS = ("pearson", "spearman", "kendall")


def _pair(auto: Any, human: Any) -> tuple[np.ndarray, np.ndarray]:
    a = check_array(auto, "auto", ndim=1, min_size=3)
    h = check_array(human, "human", ndim=1, min_size=3)
    if a.shape != h.shape:
        raise ValueError(f"auto and human must have the same length, got {len(a)} and {len(h)}")
    return a, h


def _corr(a: np.ndarray, h: np.ndarray, method: str) -> float:
    if np.ptp(a) == 0 or np.ptp(h) == 0:
        return math.nan
    if method == "pearson":
        return _pearson(a - a.mean(), h - h.mean())
    if method == "spearman":
        return float(stats.spearmanr(a, h).statistic)
    return float(stats.kendalltau(a, h).statistic)


def correlate(auto: Sequence[float], human: Sequence[float], methods: Sequence[str] = METHODS, n_boot: int = 1000,
              seed: int = 0, level: float = 0.95) -> dict[str, dict[str, float]]:
    """Correlations of paired scores with bootstrap CIs.

    Args:
        auto, human: 1-D arrays/lists of equal length >= 3, finite.
        methods: any of "pearson", "spearman", "kendall".
        n_boot: bootstrap resamples (0 skips the CIs: they are NaN; otherwise >= 50).
        seed: bootstrap seed. level: CI level in (0, 1).
    Returns:
        method -> {"r", "ci_low", "ci_high", "n"} (paired BCa bootstrap over responses; NaN bounds when r is
        undefined, e.g. a constant input).
    """
    a, h = _pair(auto, human)
    if isinstance(methods, str):
        methods = (methods,)
    methods = list(methods)
    if not methods:
        raise ValueError("methods must name at least one of " + ", ".join(METHODS))
    for m in methods:
        if m not in METHODS:
            raise ValueError(f"methods must be among {METHODS}, got {m!r}")
    n_boot = check_int(n_boot, "n_boot", min=0)
    if 0 < n_boot < 50:
        raise ValueError(f"n_boot must be 0 (no CIs) or >= 50, got {n_boot}")
    level = check_float(level, "level", min=0.0, max=1.0, min_open=True, max_open=True)
    seed = check_seed(seed)
    out = {}
    for m in methods:
        r = _corr(a, h, m)
        lo = hi = math.nan
        if n_boot and math.isfinite(r):
            iv = correlation_interval(a, h, m, n_boot=n_boot, seed=seed, level=level)
            if math.isfinite(iv.low) and math.isfinite(iv.high):
                lo, hi = iv.low, iv.high
        out[m] = {"r": r, "ci_low": float(lo), "ci_high": float(hi), "n": int(len(a))}
    return out


def correlation_interval(auto: Sequence[float], human: Sequence[float], method: str = "pearson", *,
                         n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> _stats.Interval:
    """Paired bootstrap `Interval` of the correlation of auto vs human scores (responses resampled together),
    for `icml26.common.stats.decide`."""
    a, h = _pair(auto, human)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    # BCa for the smooth Pearson r; percentile for the rank statistics (their jackknife is unstable with ties)
    return _stats.bootstrap_interval((a, h), lambda x, y: _corr(x, y, method), paired=True, n_resamples=n_boot,
                                     seed=seed, level=level, method="BCa" if method == "pearson" else "percentile")


def _groups(groups: Any, n: int) -> np.ndarray:
    if isinstance(groups, (str, bytes)):
        raise TypeError("groups must be a sequence of labels, one per response")
    g = np.asarray(list(groups), dtype=object)
    if g.ndim != 1 or len(g) != n:
        raise ValueError(f"groups must have one label per response ({n}), got {len(g)}")
    return g


def _codes(g: np.ndarray) -> np.ndarray:
    lut: dict[Any, int] = {}
    return np.fromiter((lut.setdefault(x, len(lut)) for x in g.tolist()), int, len(g))


def _centre(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    codes = g if g.dtype.kind in "iu" else _codes(g)
    sums = np.bincount(codes, weights=x)
    counts = np.bincount(codes)
    return x - (sums / np.maximum(counts, 1))[codes]


def within_group_r(auto: Sequence[float], human: Sequence[float], groups: Sequence[Any]) -> float:
    """Pearson r of group-centred auto vs group-centred human scores, pooled over groups (NaN if undefined)."""
    a, h = _pair(auto, human)
    g = _groups(groups, len(a))
    return within_r_codes(a, h, _codes(g))


def within_r_codes(a: np.ndarray, h: np.ndarray, codes: np.ndarray) -> float:
    """`within_group_r` on float arrays and integer group codes, without input checks (for bootstrap loops)."""
    return _pearson(_centre(a, codes), _centre(h, codes))


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    """r of already-centred vectors, scaled first so that huge values cannot overflow (NaN when undefined)."""
    mx, my = float(np.max(np.abs(x), initial=0.0)), float(np.max(np.abs(y), initial=0.0))
    if not (mx > 0 and my > 0) or not (math.isfinite(mx) and math.isfinite(my)):
        return math.nan
    x, y = x / mx, y / my
    den = float(np.sqrt((x @ x) * (y @ y)))
    return float(np.clip((x @ y) / den, -1.0, 1.0)) if den > 1e-24 else math.nan


def group_mean_control(human: Sequence[float], groups: Sequence[Any]) -> np.ndarray:
    """Each response's score replaced by its group's mean human score (the responder-mean control)."""
    h = check_array(human, "human", ndim=1, min_size=1)
    g = _groups(groups, len(h))
    return h - _centre(h, g)


def system_agreement(auto_by_model: Mapping[str, float], human_by_model: Mapping[str, float]) -> dict[str, Any]:
    """Kendall tau (and Spearman) between per-system mean scores, with the discordant pairs.

    Returns {"kendall_tau", "spearman", "n_models", "discordant_pairs": [(a, b, auto_a - auto_b,
    human_a - human_b)], "auto_rank", "human_rank"} (ranks: best first).
    """
    for name, d in (("auto_by_model", auto_by_model), ("human_by_model", human_by_model)):
        if not isinstance(d, Mapping):
            raise TypeError(f"{name} must be a mapping model -> score, got {type(d).__name__}")
    if set(auto_by_model) != set(human_by_model):
        raise ValueError("auto_by_model and human_by_model must name the same models; differ in "
                         f"{sorted(set(auto_by_model) ^ set(human_by_model))}")
    models = list(auto_by_model)
    if len(models) < 2:
        raise ValueError(f"auto_by_model must name >= 2 models, got {len(models)}")
    a = check_array([auto_by_model[m] for m in models], "auto_by_model values", ndim=1)
    h = check_array([human_by_model[m] for m in models], "human_by_model values", ndim=1)
    disc = []
    for i in range(len(models)):
        for j in range(i + 1, len(models)):
            da, dh = a[i] - a[j], h[i] - h[j]
            if np.sign(da) * np.sign(dh) < 0:
                disc.append((models[i], models[j], float(da), float(dh)))
    return {"kendall_tau": _corr(a, h, "kendall") if len(models) > 1 else math.nan,
            "spearman": _corr(a, h, "spearman"), "n_models": len(models), "discordant_pairs": disc,
            "auto_rank": [models[i] for i in np.argsort(-a, kind="stable")],
            "human_rank": [models[i] for i in np.argsort(-h, kind="stable")]}
