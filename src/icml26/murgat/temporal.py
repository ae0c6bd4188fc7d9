"""Temporal overlap of (start, end) segments in seconds; a point is a segment with start == end.

    temporal_iou(a, b)                 |a ∩ b| / |a ∪ b|             (NExT-GQA / Charades-STA tIoU)
    temporal_iop(pred, gt)             |pred ∩ gt| / |pred|           (intersection over prediction)
    interval_coverage(segments, iv)    |(∪ segments) ∩ iv| / |iv|
    union_length(segments)             |∪ segments|

Degenerate cases are defined, never NaN: two equal points have IoU 1 (unequal points 0); a point prediction has
IoP 1 when it lies inside gt (endpoints included) and 0 otherwise; a point interval is covered (1.0) when some
segment contains it. Every segment must be a pair of finite numbers with start <= end.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["check_segment", "temporal_iou", "temporal_iop", "interval_coverage", "union_length", "merge_segments"]


def check_segment(seg: object, name: str = "segment") -> tuple[float, float]:
    """`seg` as a (start, end) tuple of floats; a list/array/tuple of two finite numbers with start <= end."""
    if isinstance(seg, (str, bytes)) or seg is None:
        raise TypeError(f"{name} must be a (start, end) pair of numbers, got {type(seg).__name__}")
    if isinstance(seg, (list, tuple)) and any(isinstance(v, (bool, np.bool_)) for v in seg):
        raise TypeError(f"{name} must hold numbers, not bools, got {seg!r}")
    try:
        arr = np.asarray(seg)
    except ValueError:
        raise ValueError(f"{name} must be a (start, end) pair, got a ragged sequence") from None
    if arr.dtype.kind not in "iuf" or arr.dtype.kind == "b":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if arr.shape != (2,):
        raise ValueError(f"{name} must be a (start, end) pair, got shape {arr.shape}")
    a, b = float(arr[0]), float(arr[1])
    if not (np.isfinite(a) and np.isfinite(b)):
        raise ValueError(f"{name} must be finite, got ({a}, {b})")
    if b < a:
        raise ValueError(f"{name} must have start <= end, got ({a}, {b})")
    return a, b


def _segments(segments: Iterable[object], name: str) -> list[tuple[float, float]]:
    if isinstance(segments, (str, bytes)) or segments is None:
        raise TypeError(f"{name} must be a sequence of (start, end) pairs, got {type(segments).__name__}")
    if isinstance(segments, np.ndarray) and segments.ndim == 1 and segments.shape == (2,):
        raise ValueError(f"{name} must be a sequence of (start, end) pairs; wrap a single pair in a list")
    return [check_segment(s, f"{name}[{i}]") for i, s in enumerate(segments)]


def merge_segments(segments: Iterable[object]) -> list[tuple[float, float]]:
    """Sorted, disjoint union of the segments (touching segments merge; points are kept)."""
    segs = sorted(_segments(segments, "segments"))
    out: list[list[float]] = []
    for a, b in segs:
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def union_length(segments: Iterable[object]) -> float:
    """Total length of the union of `segments`, seconds."""
    return float(sum(b - a for a, b in merge_segments(segments)))


def _inter(a: tuple[float, float], b: tuple[float, float]) -> float:
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def temporal_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two segments (1.0 for two equal points, 0.0 for a point and anything else)."""
    a, b = check_segment(a, "a"), check_segment(b, "b")
    union = (a[1] - a[0]) + (b[1] - b[0]) - _inter(a, b)
    if union <= 0:
        return 1.0 if a == b else 0.0
    return _inter(a, b) / union


def temporal_iop(pred: Sequence[float], gt: Sequence[float]) -> float:
    """Intersection over the prediction's length (a point prediction: 1.0 inside gt, else 0.0)."""
    pred, gt = check_segment(pred, "pred"), check_segment(gt, "gt")
    length = pred[1] - pred[0]
    if length <= 0:
        return 1.0 if gt[0] <= pred[0] <= gt[1] else 0.0
    return _inter(pred, gt) / length


def interval_coverage(segments: Iterable[object], interval: Sequence[float]) -> float:
    """Fraction of `interval` covered by the union of `segments` (a point interval: 1.0 if contained, else 0.0)."""
    iv = check_segment(interval, "interval")
    merged = merge_segments(segments)
    length = iv[1] - iv[0]
    if length <= 0:
        return 1.0 if any(a <= iv[0] <= b for a, b in merged) else 0.0
    return min(1.0, sum(_inter(s, iv) for s in merged) / length)
