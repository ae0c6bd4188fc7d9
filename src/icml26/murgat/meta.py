"""Meta-evaluation (spec §2.3 step 6, review notes 1 and 3): how well automatic scores track human scores.

- `correlate(auto, human)`: response-level Pearson / Spearman / Kendall with percentile bootstrap CIs.
- `within_group_r(auto, human, groups)`: Pearson r after centring both by their group (responder) mean, pooled
  over groups: it measures whether the evaluator tracks differences BETWEEN responses of the same system, which the
  pooled r mostly does not (between-system gaps carry it; review note 1).
- `group_mean_control(human, groups)`: the "responder-mean" control: every response scored by its group's mean
  human score (judging no content).
- `system_agreement(auto_by_model, human_by_model)`: Kendall tau over systems with the discordant pairs listed.
- `paired_bootstrap_ci(stat, n, ...)`: percentile CI of any statistic of resampled indices.

Undefined correlations (a constant input) are NaN, never a number that looks informative.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

from icml26.common.validation import check_array, check_float, check_int, check_seed

__all__ = ["correlate", "within_group_r", "within_r_codes", "group_mean_control", "system_agreement",
           "paired_bootstrap_ci",
           "METHODS"]

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
        n_boot: bootstrap resamples (0 skips the CIs: they are NaN).
        seed: bootstrap seed. level: CI level in (0, 1).
    Returns:
        method -> {"r", "ci_low", "ci_high", "n"}.
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
    level = check_float(level, "level", min=0.0, max=1.0, min_open=True, max_open=True)
    rng = np.random.default_rng(check_seed(seed))
    out = {}
    idx = [rng.integers(0, len(a), len(a)) for _ in range(n_boot)]
    for m in methods:
        r = _corr(a, h, m)
        boots = np.array([_corr(a[i], h[i], m) for i in idx]) if n_boot else np.array([])
        boots = boots[np.isfinite(boots)]
        lo, hi = (np.quantile(boots, [(1 - level) / 2, (1 + level) / 2]) if len(boots) else (math.nan, math.nan))
        out[m] = {"r": r, "ci_low": float(lo), "ci_high": float(hi), "n": int(len(a))}
    return out


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


def paired_bootstrap_ci(stat: Callable[[np.ndarray], float], n: int, n_boot: int = 1000, seed: int = 0,
                        level: float = 0.95, groups: Sequence[Any] | None = None) -> tuple[float, float]:
    """Percentile CI of `stat(indices)` over bootstrap resamples of range(n) (stratified by `groups` if given)."""
    if not callable(stat):
        raise TypeError("stat must be callable (indices -> float)")
    n = check_int(n, "n", min=1)
    n_boot = check_int(n_boot, "n_boot", min=1)
    level = check_float(level, "level", min=0.0, max=1.0, min_open=True, max_open=True)
    rng = np.random.default_rng(check_seed(seed))
    strata = [np.arange(n)]
    if groups is not None:
        g = _groups(groups, n)
        strata = [np.flatnonzero(g == lab) for lab in dict.fromkeys(g.tolist())]
    vals = []
    for _ in range(n_boot):
        idx = np.concatenate([s[rng.integers(0, len(s), len(s))] for s in strata])
        v = stat(idx)
        if np.isfinite(v):
            vals.append(v)
    if not vals:
        return (math.nan, math.nan)
    lo, hi = np.quantile(vals, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)
