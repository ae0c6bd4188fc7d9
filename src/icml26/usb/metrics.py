"""Evaluation metrics of the reproduction (spec section 6)."""

from __future__ import annotations

import numpy as np

from icml26.common.validation import check_array, check_choice, check_float

__all__ = ["wasserstein", "relative_mass_error", "false_transition_rate"]


def _weights(w, n: int, name: str) -> np.ndarray:
    if w is None:
        return np.full(n, 1.0 / n)
    w = check_array(w, name, finite=False).reshape(-1)
    if w.shape != (n,) or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"{name} must be ({n},) finite, non-negative, with positive sum")
    return w / w.sum()


def wasserstein(x, y, p: int = 1, wx=None, wy=None) -> float:
    """Exact p-Wasserstein distance (POT `emd2`, Euclidean ground cost) between point clouds.

    Args:
        x: (n, d), y: (m, d) points; p: 1 or 2; wx, wy: optional non-negative weights (normalised here,
            so a weighted prediction is compared as a distribution; compare masses separately).
    """
    import ot

    x = check_array(x, "x", ndim=2)
    y = check_array(y, "y", ndim=2)
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"x and y must be non-empty (n, d) arrays with the same d, got {x.shape} and {y.shape}")
    if isinstance(p, bool):
        raise TypeError(f"p must be 1 or 2, got {p!r}")
    check_choice(p, "p", (1, 2))
    a, b = _weights(wx, len(x), "wx"), _weights(wy, len(y), "wy")
    c = ot.dist(x, y, metric="euclidean")
    if p == 2:
        c = c**2
    val = float(ot.emd2(a, b, c, numItermax=1_000_000))
    return val if p == 1 else float(np.sqrt(max(val, 0.0)))


def relative_mass_error(pred: float, true: float) -> float:
    """|pred - true| / true (cell count or total mass)."""
    true = check_float(true, "true", min=0.0, min_open=True)
    pred = check_float(pred, "pred", min=0.0)
    return float(abs(pred - true) / true)


def false_transition_rate(ancestor_labels, final_labels, weights=None, from_label=None, to_label=None) -> float:
    """Fraction (by count or weight) of descendants whose fate label changed since their ancestor.

    Args:
        ancestor_labels: (n,) label of each final cell's ancestor (e.g. branch at t=2).
        final_labels: (n,) label of each final cell (branch at t=3).
        weights: optional (n,) masses of the final cells (weighted methods).
        from_label: restrict to descendants of ancestors with this label (e.g. the shrinking branch).
        to_label: count only transitions into this label (default: any different label).
    Returns:
        the fraction in [0, 1]; NaN when no descendant qualifies.
    """
    anc = np.asarray(ancestor_labels).reshape(-1)      # labels: any comparable values (ints, strings)
    fin = np.asarray(final_labels).reshape(-1)
    if anc.shape != fin.shape:
        raise ValueError(f"ancestor_labels and final_labels must have the same length, got {anc.shape} and {fin.shape}")
    w = np.ones(len(anc)) if weights is None else check_array(weights, "weights", min_size=0).reshape(-1)
    if w.shape != anc.shape:
        raise ValueError(f"weights must have shape {anc.shape}, got {w.shape}")
    if (w < 0).any():
        raise ValueError("weights must be >= 0")
    sel = np.ones(len(anc), dtype=bool) if from_label is None else anc == from_label
    if not sel.any() or w[sel].sum() <= 0:
        return float("nan")
    moved = fin != anc if to_label is None else fin == to_label
    return float(w[sel & moved].sum() / w[sel].sum())
