"""Metrics: translation error (TE), Jacobian support F1 and label preservation (spec sections 2 and 5)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from icml26.common.validation import check_array, check_float

__all__ = ["jacobian_support_f1", "label_preservation_acc", "mean_abs_jacobian", "translation_error"]


def translation_error(Y_hat: np.ndarray, Y: np.ndarray) -> float:
    """TE = mean_i ||y_hat_i - y_i||_2 / sqrt(d) over paired rows (n, d) (the official synthetic metric)."""
    Y_hat = check_array(Y_hat, "Y_hat", ndim=2)
    Y = check_array(Y, "Y", ndim=2)
    if Y_hat.shape != Y.shape:
        raise ValueError(f"Y_hat and Y must have the same shape, got {Y_hat.shape} and {Y.shape}")
    return float(np.linalg.norm(Y_hat - Y, axis=1).mean() / np.sqrt(Y.shape[1]))


def mean_abs_jacobian(J: np.ndarray) -> np.ndarray:
    """E_x |J(x)| (d_out, d_in) from per-sample Jacobians (n, d_out, d_in) (or one (d_out, d_in) matrix)."""
    J = check_array(J, "J", ndim=(2, 3))
    return np.abs(J).mean(0) if J.ndim == 3 else np.abs(J)


def jacobian_support_f1(J_hat: np.ndarray, J_true: np.ndarray, tol: float = 0.1) -> float:
    """F1 of the estimated Jacobian support against the true one.

    Args:
        J_hat: (d_out, d_in) or per-sample (n, d_out, d_in) Jacobians of the learned map (averaged in |.|).
        J_true: the true support, a bool (d_out, d_in) mask, or Jacobians as for J_hat (support |J| > 0).
        tol: in [0, 1); an entry of J_hat is in the support when E|J_ij| > tol * max_ij E|J_ij| (relative).
    """
    A = mean_abs_jacobian(J_hat)
    T = np.asarray(J_true)
    T = T.astype(bool) if T.dtype == bool else mean_abs_jacobian(T) > 0
    if A.shape != T.shape:
        raise ValueError(f"J_hat and J_true must describe the same (d_out, d_in), got {A.shape} and {T.shape}")
    tol = check_float(tol, "tol", min=0.0, max=1.0, max_open=True)
    pred = A > tol * A.max() if A.max() > 0 else np.zeros_like(T)
    tp = float(np.sum(pred & T))
    denom = float(pred.sum() + T.sum())
    return 2.0 * tp / denom if denom > 0 else 1.0


def label_preservation_acc(classifier: Callable, Y_hat, labels) -> float:
    """Share of translated samples whose target-domain class equals the source label.

    Args:
        classifier: callable on Y_hat returning class scores (n, K) or labels (n,) (numpy or torch).
        Y_hat: translated samples (n, ...) as the classifier takes them.
        labels: (n,) integer source labels.
    """
    if not callable(classifier):
        raise TypeError(f"classifier must be callable, got {type(classifier).__name__}")
    labels = check_array(labels, "labels", ndim=1, dtype=np.int64)
    out = classifier(Y_hat)
    if hasattr(out, "detach"):
        out = out.detach().cpu().numpy()
    out = np.asarray(out)
    pred = out.argmax(1) if out.ndim == 2 else out.astype(np.int64)
    if pred.shape != labels.shape:
        raise ValueError(f"classifier returned {pred.shape[0] if pred.ndim else 0} predictions for {labels.shape[0]} "
                         "labels")
    return float(np.mean(pred == labels))
