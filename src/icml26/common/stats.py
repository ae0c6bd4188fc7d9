"""Intervals and three-valued verdicts: the one place where a claim's "held / not held / inconclusive" is decided.

Every paper states a claim as an estimate compared with a threshold in one direction (``>=`` or ``<=``). A
verdict is only as good as the interval around the estimate, so `decide` looks at the interval, never the
point:

- **held** when the whole interval lies on the claim's side of the threshold, clear of it by the resolution;
- **not held** when the whole interval lies on the other side, clear of it by the resolution;
- **inconclusive** otherwise, with a hint: about how many seeds (or items) the observed spread says would decide it.

The *resolution* (default 2 % of max(|estimate|, |threshold|), floored at `atol`) is the size of the differences
seen between two CPUs running the same commit and config: BLAS kernels change the last digits and a trained model
amplifies them. A verdict that a 2 % nudge could flip from held to not held is not a verdict, so an interval that
touches the band ``threshold +- resolution`` is inconclusive. Property tests (tests/foundation/test_stats.py)
check that perturbing every per-seed or per-item value by up to 2 % never turns a decided verdict into the
opposite one.

Intervals:

- `t_interval(values)`: Student-t interval of a mean over seeds (the values may be per-seed differences of
  two arms run on the same seed, i.e. a paired t interval: `paired_t_interval(a, b)`). One seed gives an
  infinite interval, so one seed is always inconclusive, unless the claim is exact by design (`exact`).
- `bootstrap_interval(...)`: scipy.stats.bootstrap (BCa by default, ``paired=True`` for two arms scored on the
  same items) over test items; with ``strata`` (the seed of each item) items are resampled within their seed and
  the per-seed statistics averaged (rliable's stratified bootstrap); with ``clusters`` whole clusters (videos,
  POIs) are resampled.
- `exact(value, threshold)`: a quantity measured without sampling noise (a FLOP count, a bit-for-bit equality).

Compound claims ("accuracy >= 0.95 and gap >= 0.2") combine their parts with `all_of`: held when every part is
held, not held when any part is not held, otherwise inconclusive.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

VERDICTS = ("held", "not held", "inconclusive")
MEASURED = "measured"  # the verdict of a number reported without a threshold (`measured`); never counts as evidence
DIRECTIONS = (">=", "<=")
DEFAULT_RTOL = 0.02
DEFAULT_LEVEL = 0.95

__all__ = [
    "Interval", "Decision", "t_interval", "paired_t_interval", "bootstrap_interval", "decide", "exact",
    "all_of", "measured", "n_to_decide", "DEFAULT_RTOL", "DEFAULT_LEVEL", "VERDICTS", "MEASURED",
]


@dataclass(frozen=True)
class Interval:
    """A two-sided confidence interval of an estimate.

    Attributes:
        low, high: the bounds (may be -inf / inf when the sample cannot bound the estimate, e.g. one seed).
        level: the confidence level, e.g. 0.95.
        method: how it was computed: "t" (Student t over seeds), "bootstrap-bca", "bootstrap-percentile",
            "stratified-bootstrap", "cluster-bootstrap", or "exact".
        n: the number of independent units behind it (seeds, items or clusters).
        unit: what `n` counts: "seeds", "items", "clusters" ...
        sd: the per-unit standard deviation (for the sample-size hint); NaN when unknown.
    """

    low: float
    high: float
    level: float = DEFAULT_LEVEL
    method: str = "t"
    n: int = 0
    unit: str = "seeds"
    sd: float = float("nan")

    def __post_init__(self) -> None:
        for name in ("low", "high", "level", "sd"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)):
                raise TypeError(f"Interval.{name} must be a number, got {type(v).__name__} {v!r}")
            object.__setattr__(self, name, float(v))
        if math.isnan(self.low) or math.isnan(self.high):
            raise ValueError(f"Interval bounds must not be NaN, got [{self.low}, {self.high}]")
        if self.low > self.high:
            raise ValueError(f"Interval low must be <= high, got [{self.low}, {self.high}]")
        if not 0.0 < self.level < 1.0:
            raise ValueError(f"Interval.level must be in (0, 1), got {self.level}")
        if isinstance(self.n, bool) or not isinstance(self.n, (int, np.integer)) or self.n < 0:
            raise TypeError(f"Interval.n must be a non-negative int, got {self.n!r}")
        object.__setattr__(self, "n", int(self.n))

    @property
    def width(self) -> float:
        return self.high - self.low

    def contains(self, x: float) -> bool:
        return self.low <= x <= self.high

    def to_dict(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "level": self.level, "method": self.method, "n": self.n,
                "unit": self.unit, "sd": self.sd}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Interval:
        return cls(**{k: d[k] for k in ("low", "high", "level", "method", "n", "unit", "sd") if k in d})

    def text(self, fmt: str = ".4g") -> str:
        pct = f"{self.level * 100:g} %"
        if self.method == "exact":
            return "exact"
        return f"{pct} {self.method} interval [{self.low:{fmt}}, {self.high:{fmt}}] over {self.n} {self.unit}"


@dataclass(frozen=True)
class Decision:
    """The verdict of one claim (or one part of a compound claim), with everything that decided it.

    Made by `decide`, `exact` or `all_of`, never by hand: `verdict` must agree with the estimate, interval,
    threshold and resolution it carries (checked on construction, and again when a result is loaded).
    """

    verdict: str
    estimate: float
    threshold: float
    direction: str
    interval: Interval | None
    resolution: float
    hint: str = ""
    label: str = ""
    parts: tuple[Decision, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", tuple(self.parts))
        if self.verdict == MEASURED:
            if not math.isnan(self.threshold) or self.parts:
                raise ValueError("a 'measured' decision has no threshold (NaN) and no parts; use decide() for a claim "
                                 "with a threshold")
            return
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS} (or {MEASURED!r}), got {self.verdict!r}")
        expected = _combine([p.verdict for p in self.parts]) if self.parts else _rule(
            self.estimate, self.interval, self.threshold, self.direction, self.resolution)
        if expected != self.verdict:
            raise ValueError(f"verdict {self.verdict!r} disagrees with its numbers (they give {expected!r}); "
                             "verdicts come from icml26.common.stats.decide, never by hand")

    @property
    def held(self) -> bool:
        """True only for a decided "held"."""
        return self.verdict == "held"

    @property
    def decided(self) -> bool:
        return self.verdict != "inconclusive"

    @property
    def exact(self) -> bool:
        return self.interval is not None and self.interval.method == "exact"

    @property
    def distance(self) -> float:
        """Signed distance of the estimate from the threshold, positive on the claim's side."""
        return (self.estimate - self.threshold) * (1.0 if self.direction == ">=" else -1.0)

    def text(self) -> str:
        """One sentence: the verdict and why (what decided it, or what would)."""
        if self.parts:
            inner = "; ".join(f"{p.label or 'part'}: {p.text()}" for p in self.parts)
            return f"{self.verdict} (all parts must hold) — {inner}"
        if self.verdict == MEASURED:
            iv = f"; {self.interval.text()}" if self.interval is not None and not self.exact else ""
            return f"measured {self.estimate:.4g}{iv} (reported, no threshold)"
        side = "above" if self.direction == ">=" else "below"
        est = f"estimate {self.estimate:.4g} vs threshold {self.direction} {self.threshold:.4g}"
        if self.interval is None or self.exact:
            return f"{self.verdict}: {est} (exact, no sampling noise)"
        iv = self.interval.text()
        if self.verdict == "held":
            why = f"the {iv} lies {side} the threshold by more than the resolution {self.resolution:.2g}"
        elif self.verdict == "not held":
            other = "below" if self.direction == ">=" else "above"
            why = f"the {iv} lies {other} the threshold by more than the resolution {self.resolution:.2g}"
        else:
            why = (f"the {iv} reaches the threshold +- resolution {self.resolution:.2g}"
                   + (f"; {self.hint}" if self.hint else ""))
        return f"{self.verdict}: {est}; {why}"

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "estimate": self.estimate, "threshold": self.threshold,
                "direction": self.direction, "interval": self.interval.to_dict() if self.interval else None,
                "resolution": self.resolution, "hint": self.hint, "label": self.label,
                "parts": [p.to_dict() for p in self.parts]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Decision:
        """Rebuild a Decision from JSON; raises ValueError when the stored verdict disagrees with its numbers."""
        if not isinstance(d, dict):
            raise TypeError(f"decision must be an object, got {type(d).__name__}")
        iv = d.get("interval")
        return cls(verdict=d["verdict"], estimate=_f(d["estimate"]), threshold=_f(d["threshold"]),
                   direction=d["direction"], interval=Interval.from_dict(iv) if iv else None,
                   resolution=_f(d.get("resolution", 0.0)), hint=d.get("hint", ""), label=d.get("label", ""),
                   parts=tuple(cls.from_dict(p) for p in d.get("parts", [])))


def _f(x: Any) -> float:
    if x is None:
        return float("nan")
    return float(x)


# ---------------------------------------------------------------------------------------------- the rule
def _rule(estimate: float, interval: Interval | None, threshold: float, direction: str, resolution: float) -> str:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    if math.isnan(estimate) or math.isnan(threshold):
        return "inconclusive"
    if interval is None or interval.method == "exact":
        lo = hi = estimate
        resolution = 0.0  # exact quantities carry no sampling noise: the comparison is the verdict
    else:
        lo, hi = interval.low, interval.high
    sign = 1.0 if direction == ">=" else -1.0
    # map "<=" onto ">=" by negation: the rule is symmetric in direction by construction
    a, b, t = (lo, hi, threshold) if sign > 0 else (-hi, -lo, -threshold)
    if resolution == 0.0:
        if a >= t:
            return "held"
        if b < t:
            return "not held"
        return "inconclusive"
    if a >= t + resolution:
        return "held"
    if b <= t - resolution:
        return "not held"
    return "inconclusive"


def _combine(verdicts: Sequence[str]) -> str:
    if any(v == "not held" for v in verdicts):
        return "not held"
    if verdicts and all(v == "held" for v in verdicts):
        return "held"
    return "inconclusive"


def _as_1d(values: Any, name: str) -> np.ndarray:
    if isinstance(values, (str, bytes)) or values is None:
        raise TypeError(f"{name} must be a sequence of numbers, got {type(values).__name__}")
    try:
        a = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of numbers, got {values!r}") from None
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-d (one value per seed or item), got shape {a.shape}")
    return a


def _check_level(level: float) -> float:
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0.0 < level < 1.0:
        raise ValueError(f"level must be a number in (0, 1), got {level!r}")
    return float(level)


# ---------------------------------------------------------------------------------------------- intervals
def t_interval(values: Sequence[float], level: float = DEFAULT_LEVEL, unit: str = "seeds") -> Interval:
    """Student-t interval of the mean of `values` (one value per seed; NaNs dropped).

    One finite value gives (-inf, inf): a single seed cannot bound a mean. Zero finite values raise ValueError.
    """
    from scipy import stats

    level = _check_level(level)
    a = _as_1d(values, "values")
    a = a[np.isfinite(a)]
    if a.size == 0:
        raise ValueError("values must hold at least one finite number")
    n = int(a.size)
    if n == 1:
        return Interval(-math.inf, math.inf, level, "t", 1, unit, float("nan"))
    m, sd = float(a.mean()), float(a.std(ddof=1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return Interval(m - half, m + half, level, "t", n, unit, sd)


def paired_t_interval(a: Sequence[float], b: Sequence[float], level: float = DEFAULT_LEVEL) -> Interval:
    """Paired t interval of mean(a - b): `a[i]` and `b[i]` are two arms run on the same seed i."""
    x, y = _as_1d(a, "a"), _as_1d(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"a and b must pair one value per seed, got lengths {x.size} and {y.size}")
    return t_interval(x - y, level)


def bootstrap_interval(data: Sequence[Any] | np.ndarray, statistic: Callable[..., float] | None = None, *,
                       paired: bool = False, strata: Sequence[Any] | None = None,
                       clusters: Sequence[Any] | None = None, level: float = DEFAULT_LEVEL,
                       n_resamples: int = 2000, method: str = "BCa", seed: int = 0) -> Interval:
    """Bootstrap interval of `statistic` over test items, through `scipy.stats.bootstrap`.

    Args:
        data: one array of per-item values (shape (n,)), or a tuple of arrays of equal length for a statistic of
            several samples; with ``paired=True`` the arrays are scored on the same items (resampled together).
        statistic: f(*arrays) -> float; default the mean of the single array (use ``paired=True`` with a
            statistic like ``lambda a, b: a.mean() - b.mean()``).
        strata: the seed (or any group) of each item: items are resampled within their stratum, the statistic
            computed per stratum and averaged over strata (the rliable stratified bootstrap).
        clusters: the cluster (video, POI ...) of each item: whole clusters are resampled.
        level, n_resamples, method ("BCa", "percentile", "basic"), seed: as in scipy.stats.bootstrap.

    Returns an `Interval` whose `n` counts the items (or clusters) and whose `sd` is the bootstrap standard error
    times sqrt(n) (a per-unit sd, for the sample-size hint).
    """
    from scipy import stats

    level = _check_level(level)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 50:
        raise ValueError(f"n_resamples must be an int >= 50, got {n_resamples!r}")
    arrays = _arrays(data)
    n = arrays[0].shape[0]
    if any(a.shape[0] != n for a in arrays):
        raise ValueError(f"data arrays must have equal length, got {[a.shape[0] for a in arrays]}")
    if n < 2:
        raise ValueError(f"data must hold at least 2 items for a bootstrap, got {n}")
    if statistic is None:
        if len(arrays) != 1:
            raise ValueError("statistic is required when data holds several arrays")
        statistic = _mean
    if strata is not None and clusters is not None:
        raise ValueError("give strata or clusters, not both")
    rng = np.random.default_rng(seed)
    if clusters is not None or strata is not None:
        groups = np.asarray(clusters if clusters is not None else strata)
        if groups.shape != (n,):
            raise ValueError(f"{'clusters' if clusters is not None else 'strata'} must give one label per item "
                             f"(length {n}), got shape {groups.shape}")
        uniq, inv = np.unique(groups, return_inverse=True)
        members = [np.flatnonzero(inv == k) for k in range(len(uniq))]
    point = float(statistic(*arrays))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # degenerate resamples (one class) give NaN: dropped
        if clusters is not None:
            if len(members) < 2:
                raise ValueError("clusters must name at least 2 clusters")

            def by_cluster(idx: np.ndarray) -> float:
                take = np.concatenate([members[int(k)] for k in idx])
                return float(statistic(*(a[take] for a in arrays)))

            res = stats.bootstrap((np.arange(len(members)),), by_cluster, vectorized=False, paired=False,
                                  n_resamples=n_resamples, confidence_level=level, method="percentile", rng=rng)
            dist, label, units = np.asarray(res.bootstrap_distribution), "cluster-bootstrap", len(members)
            lo, hi = _percentile(dist, level)
        elif strata is not None:
            # independent bootstrap distribution per stratum (seed), averaged: rliable's stratified bootstrap
            dists = []
            for m in members:
                if m.size < 2:
                    raise ValueError("every stratum must hold at least 2 items")
                sub = tuple(a[m] for a in arrays)
                r = stats.bootstrap(sub, statistic, vectorized=False, paired=paired or len(sub) == 1,
                                    n_resamples=n_resamples, confidence_level=level, method="percentile", rng=rng)
                dists.append(np.asarray(r.bootstrap_distribution))
            dist = np.mean(dists, axis=0)
            point = float(np.mean([statistic(*(a[m] for a in arrays)) for m in members]))
            label, units = "stratified-bootstrap", n
            lo, hi = _percentile(dist, level)
        else:
            meth = {"bca": "BCa", "percentile": "percentile", "basic": "basic"}.get(str(method).lower())
            if meth is None:
                raise ValueError(f"method must be 'BCa', 'percentile' or 'basic', got {method!r}")
            res = stats.bootstrap(tuple(arrays), statistic, vectorized=False, paired=paired or len(arrays) == 1,
                                  n_resamples=n_resamples, confidence_level=level, method=meth, rng=rng)
            dist = np.asarray(res.bootstrap_distribution)
            lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
            if not (np.isfinite(lo) and np.isfinite(hi)):  # BCa degenerates (e.g. all resamples equal)
                lo, hi = _percentile(dist, level)
            label, units = f"bootstrap-{meth.lower()}", n
    dist = dist[np.isfinite(dist)]
    if dist.size == 0 or not np.isfinite(point):
        return Interval(-math.inf, math.inf, level, label, units, "items" if clusters is None else "clusters")
    se = float(dist.std(ddof=1)) if dist.size > 1 else 0.0
    lo, hi = min(lo, point), max(hi, point)  # a percentile interval can miss a skewed point estimate
    return Interval(lo, hi, level, label, units, "items" if clusters is None else "clusters", se * math.sqrt(units))


def _mean(x: np.ndarray) -> float:
    return float(np.mean(x))


def _percentile(dist: np.ndarray, level: float) -> tuple[float, float]:
    d = dist[np.isfinite(dist)]
    if d.size == 0:
        return -math.inf, math.inf
    alpha = (1 - level) / 2
    return float(np.quantile(d, alpha)), float(np.quantile(d, 1 - alpha))


def _arrays(data: Any) -> tuple[np.ndarray, ...]:
    if isinstance(data, np.ndarray):
        arrays = (data,)
    elif isinstance(data, tuple):
        arrays = data
    elif isinstance(data, list) and data and all(isinstance(x, (list, np.ndarray)) for x in data):
        arrays = tuple(data)
    else:
        arrays = (data,)
    out = []
    for i, a in enumerate(arrays):
        try:
            arr = np.asarray(a, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"data[{i}] must be numeric, got {type(a).__name__}") from None
        if arr.ndim != 1:
            raise ValueError(f"data[{i}] must be 1-d (one value per item), got shape {arr.shape}")
        out.append(arr)
    return tuple(out)


# ---------------------------------------------------------------------------------------------- verdicts
def resolution_of(estimate: float, threshold: float, rtol: float = DEFAULT_RTOL, atol: float = 0.0) -> float:
    """The band around the threshold inside which a verdict is inconclusive: rtol * max(|estimate|, |threshold|),
    floored at atol."""
    scale = max(abs(estimate), abs(threshold)) if math.isfinite(estimate) else abs(threshold)
    return max(rtol * scale, atol)


def n_to_decide(sd: float, distance: float, resolution: float = 0.0, level: float = DEFAULT_LEVEL) -> int | None:
    """Units (seeds, items) that would make an interval of per-unit spread `sd` clear the threshold band:
    n ~ (z * sd / (|distance| - resolution))^2, with z the two-sided normal quantile at `level`.

    None when the estimate sits inside the resolution band (no sample size decides it) or `sd` is unknown.
    """
    from scipy import stats

    margin = abs(distance) - resolution
    if not (math.isfinite(sd) and margin > 0):
        return None
    z = float(stats.norm.ppf(0.5 + level / 2))
    return max(2, math.ceil((z * sd / margin) ** 2))


def decide(estimate: float, interval: Interval, threshold: float, direction: str = ">=", *,
           rtol: float = DEFAULT_RTOL, atol: float = 0.0, label: str = "",
           cost_per_unit_s: float | None = None) -> Decision:
    """The verdict of "estimate `direction` threshold" given the estimate's interval.

    Held when the interval clears the threshold on the claim's side by the resolution
    (`resolution_of(estimate, threshold, rtol, atol)`); not held when it clears it on the other side; otherwise
    inconclusive, with a hint naming the number of units (seeds / items) that the observed spread says would
    decide it, and about how long that would run when `cost_per_unit_s` (seconds per seed or item) is given.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    if not isinstance(interval, Interval):
        raise TypeError(f"interval must be an icml26.common.stats.Interval, got {type(interval).__name__} "
                        "(use t_interval, paired_t_interval or bootstrap_interval; exact quantities use exact())")
    estimate, threshold = _num(estimate, "estimate"), _num(threshold, "threshold")
    if math.isinf(threshold):
        raise ValueError(f"threshold must be finite, got {threshold}")
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float)) or not 0 <= rtol < 1:
        raise ValueError(f"rtol must be in [0, 1), got {rtol!r}")
    res = resolution_of(estimate, threshold, rtol, atol)
    verdict = _rule(estimate, interval, threshold, direction, res)
    hint = ""
    if verdict == "inconclusive":
        hint = _hint(estimate, interval, threshold, res, cost_per_unit_s)
    return Decision(verdict, estimate, threshold, direction, interval, res, hint, label)


def _hint(estimate: float, interval: Interval, threshold: float, res: float, cost: float | None) -> str:
    if math.isnan(estimate):
        return "the estimate is NaN: nothing was measured"
    dist = estimate - threshold
    sd = interval.sd
    if interval.n <= 1 and not math.isfinite(sd):
        return f"one {interval.unit.rstrip('s')} cannot bound the estimate: run at least 3 {interval.unit}"
    n = n_to_decide(sd, dist, res, interval.level)
    if n is None:
        if abs(dist) <= res:
            return (f"the estimate is within the resolution {res:.2g} of the threshold: no number of "
                    f"{interval.unit} decides it at this effect size")
        return "the spread is unknown: more " + interval.unit + " would decide it"
    n = max(n, interval.n + 1)
    text = f"about {n} {interval.unit} (now {interval.n}) would decide it at the observed spread (sd {sd:.3g})"
    if cost is not None and math.isfinite(cost) and cost > 0:
        extra = (n - interval.n) * cost
        text += f", about {_duration(n * cost)} in all ({_duration(extra)} more)"
    return text


def _duration(s: float) -> str:
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def exact(value: float, threshold: float, direction: str = ">=", *, label: str = "") -> Decision:
    """The verdict of a quantity measured without sampling noise (a FLOP count, an exact equality, a deterministic
    property of the method): the comparison itself decides it."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    value, threshold = _num(value, "value"), _num(threshold, "threshold")
    iv = Interval(value, value, DEFAULT_LEVEL, "exact", 0, "exact") if math.isfinite(value) else None
    verdict = _rule(value, iv, threshold, direction, 0.0)
    return Decision(verdict, value, threshold, direction, iv, 0.0,
                    "the value is NaN: nothing was measured" if math.isnan(value) else "", label)


def measured(value: float, interval: Interval | None = None, *, label: str = "") -> Decision:
    """A number reported without a threshold (a "report" claim that gates nothing): its verdict is "measured"."""
    value = _num(value, "value")
    if interval is not None and not isinstance(interval, Interval):
        raise TypeError(f"interval must be an Interval or None, got {type(interval).__name__}")
    return Decision(MEASURED, value, float("nan"), ">=", interval, 0.0, "", label)


def all_of(*parts: Decision, label: str = "") -> Decision:
    """A compound claim: held when every part is held, not held when any is not held, otherwise inconclusive.
    The compound's estimate / threshold are those of its first part (what the report plots)."""
    if not parts:
        raise ValueError("all_of needs at least one Decision")
    for p in parts:
        if not isinstance(p, Decision):
            raise TypeError(f"all_of takes Decisions, got {type(p).__name__}")
        if p.verdict == MEASURED:
            raise ValueError("all_of combines decisions with thresholds; a 'measured' part has none")
    verdict = _combine([p.verdict for p in parts])
    head = next((p for p in parts if p.verdict == verdict), parts[0])
    hint = "; ".join(f"{p.label or 'part'}: {p.hint}" for p in parts if p.hint)
    return Decision(verdict, head.estimate, head.threshold, head.direction, head.interval, head.resolution, hint,
                    label, tuple(parts))


def _num(x: Any, name: str) -> float:
    if isinstance(x, (bool, str, bytes)) or x is None:
        raise TypeError(f"{name} must be a number, got {x!r}")
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {type(x).__name__} {x!r}") from None
    return v
