"""Grounded-QA metrics with the official NExT-GQA conventions (spec section 5 and 9).

- `temporal_iou(pred, gt)`: |pred ∩ gt| / |pred ∪ gt|; a point prediction (t_s == t_e) has IoU 0.
- `temporal_iop(pred, gt)`: |pred ∩ gt| / |pred| (intersection over the PREDICTED span); a point prediction
  inside gt has IoP 1, outside 0 (the official eval_ground convention).
- With several GT segments the best one counts (max over segments).
- `grounded_qa_report(preds, gts, criterion="iou" | "iop", threshold=0.5)`: accuracy, accuracy per NExT group
  (T/C/D = temporal/causal/descriptive), mIoU, mIoP, R@{0.3, 0.5} for IoU and IoP, Acc@GQA (answer correct AND the
  criterion >= threshold; the paper's abstract uses IoU, the official NExT-GQA evaluation IoP - both are reported)
  and grounded-given-correct (review note 3).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from icml26.common.validation import check_choice, check_float

__all__ = ["temporal_iou", "temporal_iop", "best_iou_iop", "grounded_qa_report", "QTYPE_GROUPS"]

# NExT-QA type codes -> the three groups (CW/CH causal, TN/TC/TP temporal, DC/DL/DO descriptive)
QTYPE_GROUPS = {"C": "causal", "T": "temporal", "D": "descriptive"}


def _span(x: Any, name: str) -> tuple[float, float]:
    if isinstance(x, (str, bytes)) or not hasattr(x, "__len__") or len(x) != 2:
        raise ValueError(f"{name} must be a (start, end) pair of seconds, got {x!r}")
    a = check_float(x[0], f"{name}[0]")
    b = check_float(x[1], f"{name}[1]")
    if b < a:
        raise ValueError(f"{name} must have end >= start, got ({a}, {b})")
    return a, b


def temporal_iou(pred: Sequence[float], gt: Sequence[float]) -> float:
    """Temporal intersection over union of two (start, end) spans in seconds; 0 when the union is empty."""
    p0, p1 = _span(pred, "pred")
    g0, g1 = _span(gt, "gt")
    inter = max(0.0, min(p1, g1) - max(p0, g0))
    union = max(p1, g1) - min(p0, g0)
    if p1 == p0:
        return 0.0  # a point has no extent (official NExT-GQA convention)
    return inter / union if union > 0 else 0.0


def temporal_iop(pred: Sequence[float], gt: Sequence[float]) -> float:
    """Intersection over the predicted span's length; a point prediction scores 1 inside gt, else 0."""
    p0, p1 = _span(pred, "pred")
    g0, g1 = _span(gt, "gt")
    if p1 == p0:
        return 1.0 if g0 <= p0 <= g1 else 0.0
    inter = max(0.0, min(p1, g1) - max(p0, g0))
    return inter / (p1 - p0)


def best_iou_iop(pred: Sequence[float], gts: Sequence[Sequence[float]]) -> tuple[float, float]:
    """(max IoU, max IoP) of `pred` over the GT segments `gts` (each maximised separately, as the official eval)."""
    gts = _gts(gts, "gts")
    return max(temporal_iou(pred, g) for g in gts), max(temporal_iop(pred, g) for g in gts)


def _gts(gts: Any, name: str) -> list[tuple[float, float]]:
    if isinstance(gts, (str, bytes)) or not hasattr(gts, "__len__"):
        raise ValueError(f"{name} must be a list of (start, end) segments, got {gts!r}")
    if len(gts) == 2 and not hasattr(gts[0], "__len__"):
        return [_span(gts, name)]  # a single segment
    out = [_span(g, f"{name}[{i}]") for i, g in enumerate(gts)]
    if not out:
        raise ValueError(f"{name} must hold at least one segment")
    return out


def _group(q: str | None) -> str | None:
    if q is None:
        return None
    q = str(q)
    if q in ("causal", "temporal", "descriptive"):
        return q
    return QTYPE_GROUPS.get(q[:1].upper())


def grounded_qa_report(preds: Sequence[Mapping[str, Any]], gts: Sequence[Mapping[str, Any]],
                       criterion: str = "iou", threshold: float = 0.5) -> dict[str, Any]:
    """Accuracy and grounding metrics of multiple-choice predictions.

    Args:
        preds: one mapping per question with "option_index" (int) and "span" ((t_s, t_e) seconds).
        gts: one mapping per question with "answer_idx" (int), "gt_spans" (list of (t_s, t_e)) and optionally
            "qtype" ("causal"/"temporal"/"descriptive" or a NExT code such as "CW", "TN", "DC").
        criterion: "iou" (the paper's Acc@GQA) or "iop" (the official NExT-GQA Acc@GQA). threshold: default 0.5.
    Returns:
        {"n", "accuracy", "accuracy_by_type" {causal, temporal, descriptive}, "miou", "miop", "r@0.3_iou",
        "r@0.5_iou", "r@0.3_iop", "r@0.5_iop", "acc@gqa", "grounded_given_correct", "criterion", "threshold"}.
        Means over an empty group are NaN.
    """
    criterion = check_choice(criterion, "criterion", ("iou", "iop"))
    threshold = check_float(threshold, "threshold", min=0.0, max=1.0)
    if isinstance(preds, Mapping) or isinstance(gts, Mapping):
        raise TypeError("preds and gts must be sequences of mappings (one per question)")
    preds, gts = list(preds), list(gts)
    if len(preds) != len(gts):
        raise ValueError(f"preds and gts must have the same length, got {len(preds)} and {len(gts)}")
    if not preds:
        raise ValueError("preds must hold at least one prediction")
    correct, ious, iops, groups = [], [], [], []
    for i, (p, g) in enumerate(zip(preds, gts)):
        if not isinstance(p, Mapping) or not isinstance(g, Mapping):
            raise TypeError(f"preds[{i}] and gts[{i}] must be mappings")
        for key, obj, name in (("option_index", p, "preds"), ("span", p, "preds"), ("answer_idx", g, "gts"),
                               ("gt_spans", g, "gts")):
            if key not in obj:
                raise ValueError(f"{name}[{i}] is missing {key!r}")
        oi, ai = p["option_index"], g["answer_idx"]
        for v, name in ((oi, f"preds[{i}]['option_index']"), (ai, f"gts[{i}]['answer_idx']")):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"{name} must be a non-negative int, got {v!r}")
        iou, iop = best_iou_iop(_span(p["span"], f"preds[{i}]['span']"), _gts(g["gt_spans"], f"gts[{i}]['gt_spans']"))
        correct.append(int(oi) == int(ai))
        ious.append(iou)
        iops.append(iop)
        groups.append(_group(g.get("qtype")))
    c = np.array(correct)
    iou_a, iop_a = np.array(ious), np.array(iops)
    crit = iou_a if criterion == "iou" else iop_a
    grounded = crit >= threshold

    def mean(x):
        return float(np.mean(x)) if len(x) else math.nan

    by_type = {t: mean(c[[gr == t for gr in groups]]) for t in ("causal", "temporal", "descriptive")}
    return {"n": len(c), "accuracy": mean(c), "accuracy_by_type": by_type,
            "miou": mean(iou_a), "miop": mean(iop_a),
            "r@0.3_iou": mean(iou_a >= 0.3), "r@0.5_iou": mean(iou_a >= 0.5),
            "r@0.3_iop": mean(iop_a >= 0.3), "r@0.5_iop": mean(iop_a >= 0.5),
            "acc@gqa": mean(c & grounded), "grounded_given_correct": mean(grounded[c]) if c.any() else math.nan,
            "criterion": criterion, "threshold": threshold}
