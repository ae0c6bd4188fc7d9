"""The paper's baselines behind the same fit/transform/score interface (spec section 4).

* `make_baseline(name, **params)`: the distribution-matching family as configured `AnchoredSparseTransfer`s:
  "dm" (DM only), "dm_anchor" (DM + anchor, joint), "dm_resolve" (DM + the resolve step, no sparsity),
  "dm_sparsity" (DM + sparsity, no anchor: pass no anchors), "dimension" (conditional DM; pass
  `conditional_groups` to fit).
* `OTMap`: exact (EMD) or entropic (Sinkhorn) optimal-transport coupling of source and target samples (POT),
  barycentric projection, extended out of sample by k-nearest-neighbour regression on the source samples. It
  recovers the Brenier map (gradient of a convex function), which is not f* when f* is e.g. a coordinate swap.
* `PairedRegression`: the supervised oracle with N pairs: ridge regression on polynomial features of degree 3
  (our choice of regressor: closed form, deterministic, and exact for the smooth per-coordinate maps here).
"""

from __future__ import annotations

from itertools import combinations_with_replacement
from typing import Any

import numpy as np

from icml26.common.validation import check_array, check_choice, check_float, check_int, check_seed
from icml26.sparse_transfer.metrics import translation_error
from icml26.sparse_transfer.transfer import AnchoredSparseTransfer, NotFittedError

__all__ = ["BASELINES", "OTMap", "PairedRegression", "make_baseline"]

BASELINES: dict[str, dict[str, Any]] = {
    "dm": {"lambda_jac": 0.0, "lambda_anchor": 0.0},
    "dm_anchor": {"lambda_jac": 0.0, "anchor_mode": "joint"},
    "dm_resolve": {"lambda_jac": 0.0, "anchor_mode": "resolve"},
    "dm_sparsity": {"anchor_mode": "resolve"},  # fit without anchors
    "dimension": {"lambda_jac": 0.0, "lambda_anchor": 0.0},  # fit with conditional_groups
}


def make_baseline(name: str, **params: Any) -> AnchoredSparseTransfer:
    """A distribution-matching baseline (see BASELINES) as an `AnchoredSparseTransfer`; params override."""
    check_choice(name, "name", tuple(BASELINES))
    return AnchoredSparseTransfer(**{**BASELINES[name], **params})


def _knn_mean(train_x: np.ndarray, values: np.ndarray, query: np.ndarray, k: int, chunk: int = 2048) -> np.ndarray:
    out = np.empty((query.shape[0], values.shape[1]))
    sq = (train_x ** 2).sum(1)
    for s in range(0, query.shape[0], chunk):
        q = query[s: s + chunk]
        d2 = (q ** 2).sum(1)[:, None] + sq[None, :] - 2.0 * q @ train_x.T
        idx = np.argpartition(d2, k - 1, axis=1)[:, :k] if k < train_x.shape[0] else np.argsort(d2, 1)
        out[s: s + chunk] = values[idx].mean(1)
    return out


class OTMap:
    """Optimal-transport map between unpaired samples, with k-NN out-of-sample extension (POT).

    Args:
        method: "emd" (exact coupling, `ot.emd`) or "sinkhorn" (entropic, `ot.sinkhorn`, regularisation `reg`
            relative to the median squared distance).
        reg: Sinkhorn regularisation (> 0); ignored for "emd".
        n_neighbors: k of the k-NN regression that extends the barycentric projection to new points; default 10.
        max_samples: at most this many source and target rows enter the coupling (random subset); default 2000.
        seed: seed of that subset.
    """

    def __init__(self, method: str = "emd", reg: float = 0.05, n_neighbors: int = 10, max_samples: int = 2000,
                 seed: int = 0) -> None:
        self.method, self.reg, self.n_neighbors, self.max_samples, self.seed = method, reg, n_neighbors, max_samples, seed
        self._check()

    def _check(self) -> None:
        check_choice(self.method, "method", ("emd", "sinkhorn"))
        check_float(self.reg, "reg", min=0.0, min_open=True)
        check_int(self.n_neighbors, "n_neighbors", min=1)
        check_int(self.max_samples, "max_samples", min=2)
        check_seed(self.seed)

    def get_params(self, deep: bool = False) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("method", "reg", "n_neighbors", "max_samples", "seed")}

    def set_params(self, **params: Any) -> OTMap:
        for k, v in params.items():
            if k not in self.get_params():
                raise ValueError(f"invalid parameter {k!r} for OTMap")
            setattr(self, k, v)
        return self

    def fit(self, X_source, Y_target) -> OTMap:
        """Couple X_source (n, d_x) and Y_target (m, d_y) (same d for the squared-Euclidean cost)."""
        import ot

        self._check()
        X = check_array(X_source, "X_source", ndim=2, min_size=1)
        Y = check_array(Y_target, "Y_target", ndim=2, min_size=1)
        if X.shape[1] != Y.shape[1]:
            raise ValueError(f"OTMap needs d_x == d_y for the squared-Euclidean cost, got {X.shape[1]} and {Y.shape[1]}")
        rng = np.random.default_rng(int(self.seed))
        xs = X[rng.permutation(X.shape[0])[: int(self.max_samples)]]
        yt = Y[rng.permutation(Y.shape[0])[: int(self.max_samples)]]
        M = ot.dist(xs, yt)  # squared Euclidean
        a, b = np.full(xs.shape[0], 1.0 / xs.shape[0]), np.full(yt.shape[0], 1.0 / yt.shape[0])
        if self.method == "emd":
            G = ot.emd(a, b, M, numItermax=1_000_000)
        else:
            G = ot.sinkhorn(a, b, M / np.median(M), float(self.reg), numItermax=2000)
        w = G.sum(1, keepdims=True)
        self.support_x_ = xs
        self.support_y_ = (G @ yt) / np.where(w > 0, w, 1.0)  # barycentric projection T(x_i)
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X) -> np.ndarray:
        if not hasattr(self, "support_x_"):
            raise NotFittedError("OTMap is not fitted yet; call fit first")
        X = check_array(X, "X", ndim=2, shape=(None, self.n_features_in_), min_size=0)
        if X.shape[0] == 0:
            return np.zeros((0, self.n_features_in_))
        k = min(int(self.n_neighbors), self.support_x_.shape[0])
        return _knn_mean(self.support_x_, self.support_y_, X, k)

    def score(self, X, Y_true) -> float:
        """-TE on held-out pairs."""
        return -translation_error(self.transform(X), check_array(Y_true, "Y_true", ndim=2))


def _poly(X: np.ndarray, degree: int) -> np.ndarray:
    cols = [np.ones((X.shape[0], 1))]
    for deg in range(1, degree + 1):
        for idx in combinations_with_replacement(range(X.shape[1]), deg):
            cols.append(np.prod(X[:, list(idx)], axis=1, keepdims=True))
    return np.hstack(cols)


class PairedRegression:
    """Supervised oracle: ridge regression of Y on polynomial features of X, from the first `n_pairs` pairs.

    Args:
        n_pairs: how many of the given pairs to use (>= 1; fit refuses fewer rows than that).
        degree: polynomial degree (>= 1); default 3.
        alpha: ridge penalty (>= 0) on the non-constant features; default 1e-3.
    """

    def __init__(self, n_pairs: int = 100, degree: int = 3, alpha: float = 1e-3) -> None:
        self.n_pairs, self.degree, self.alpha = n_pairs, degree, alpha
        self._check()

    def _check(self) -> None:
        check_int(self.n_pairs, "n_pairs", min=1)
        check_int(self.degree, "degree", min=1, max=6)
        check_float(self.alpha, "alpha", min=0.0)

    def fit(self, X_pairs, Y_pairs) -> PairedRegression:
        """X_pairs (n, d_x) and Y_pairs (n, d_y) paired rows, n >= n_pairs (the first n_pairs are used)."""
        self._check()
        X = check_array(X_pairs, "X_pairs", ndim=2)
        Y = check_array(Y_pairs, "Y_pairs", ndim=2)
        if X.shape[0] != Y.shape[0]:
            raise ValueError(f"X_pairs and Y_pairs must pair rows, got {X.shape[0]} and {Y.shape[0]}")
        n = int(self.n_pairs)
        if X.shape[0] < n:
            raise ValueError(f"n_pairs = {n} but only {X.shape[0]} pairs were given")
        F = _poly(X[:n], int(self.degree))
        self.mean_ = F[:, 1:].mean(0)  # centred, so one pair gives the constant map y_a
        F[:, 1:] -= self.mean_
        reg = float(self.alpha) * np.eye(F.shape[1])
        reg[0, 0] = 0.0
        self.coef_ = np.linalg.lstsq(F.T @ F + reg + 1e-12 * np.eye(F.shape[1]), F.T @ Y[:n], rcond=None)[0]
        self.n_features_in_, self.n_features_out_ = X.shape[1], Y.shape[1]
        return self

    def transform(self, X) -> np.ndarray:
        if not hasattr(self, "coef_"):
            raise NotFittedError("PairedRegression is not fitted yet; call fit first")
        X = check_array(X, "X", ndim=2, shape=(None, self.n_features_in_), min_size=0)
        F = _poly(X, int(self.degree))
        F[:, 1:] -= self.mean_
        return F @ self.coef_

    def score(self, X, Y_true) -> float:
        return -translation_error(self.transform(X), check_array(Y_true, "Y_true", ndim=2))
