"""Class-balanced, score-based selection: PCA's "P" (keep the easiest) and the classic DP baselines (keep the
hardest), scikit-learn style (`fit(X, y)` then `select(ipc) -> indices`).

Every selector here and in `baselines` returns exactly `ipc` indices per class, grouped by class (0, 1, ...) and,
within a class, in the selector's rank order (easiest first for keep="easy", hardest first for keep="hard"); it
raises a ValueError when a class has fewer than `ipc` samples, when `ipc <= 0`, or when labels are not 0..K-1.
`set_params` is supported (scikit-learn's BaseEstimator); parameters are re-checked in `fit` and `select`.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from icml26.common.validation import check_array, check_choice, check_float, check_int, check_seed
from icml26.dataset_compression.models import ModelFactory
from icml26.dataset_compression.scoring import DIFFICULTY_SIGN, SCORERS, check_images, check_labels, check_pixel_range

METRICS = tuple(SCORERS)
DEFAULT_EPOCHS = {"el2n": 3, "forgetting": 30, "aum": 30}  # spec 6: EL2N 4 models x 3 epochs, forgetting 30


def class_indices(y: np.ndarray, n_classes: int) -> list[np.ndarray]:
    """Indices of each class, ascending."""
    return [np.flatnonzero(y == c) for c in range(n_classes)]


def check_ipc(ipc, class_sizes: list[int], name: str = "ipc") -> int:
    """`ipc` as an int >= 1 that every class can supply."""
    ipc = check_int(ipc, name, min=1)
    small = [(c, n) for c, n in enumerate(class_sizes) if n < ipc]
    if small:
        c, n = small[0]
        raise ValueError(f"{name}={ipc} exceeds the size of class {c} ({n} samples); {len(small)} class(es) "
                         "are too small")
    return ipc


def fit_labels(X, y) -> tuple[np.ndarray, int, list[np.ndarray]]:
    """Validated labels (matching X's first dimension), K, and per-class indices."""
    n = len(X) if hasattr(X, "__len__") and not isinstance(X, (str, bytes)) else None
    if n is None:
        raise TypeError(f"X must be array-like of images, got {type(X).__name__}")
    yy, k = check_labels(y, n)
    return yy, k, class_indices(yy, k)


def check_scores(scores, n: int, name: str = "scores") -> np.ndarray:
    """Per-sample scores as a finite float64 (n,) array."""
    s = check_array(scores, name, ndim=1)
    if len(s) != n:
        raise ValueError(f"{name} must have one value per sample ({n}), got {len(s)}")
    return s


def rank_order(difficulty: np.ndarray, idx: np.ndarray, tiebreak: np.ndarray) -> np.ndarray:
    """`idx` sorted by ascending difficulty, ties broken by `tiebreak` (a seeded random key)."""
    return idx[np.lexsort((tiebreak[idx], difficulty[idx]))]


class ScoreSelector(BaseEstimator):
    """Keep, per class, the `ipc` easiest (lowest difficulty) or hardest samples by a pruning metric.

    keep="easy" is PCA's "P" step (spec 2.2: at extreme compression easy/prototypical samples win); keep="hard"
    is classic dataset pruning (EL2N-hard, Forgetting-hard).

    Args:
        metric: "el2n" | "forgetting" | "aum" (AUM's high = easy, so its difficulty is -AUM).
        keep: "easy" | "hard".
        n_models: models averaged by EL2N (default 4); epochs: training epochs of the scorer (default per
            metric: EL2N 3, forgetting 30, AUM 30).
        model_factory: scorer network factory (default: the reproduction's ConvNet for X's shape).
        batch_size, lr, weight_decay: scorer training (AdamW).
        random_state: seeds the scorer and the random tie-break between equal scores.
    Attributes after `fit`: `scores_` (N,) raw metric values, `difficulty_` (N,) signed so high = hard,
    `n_classes_`, `class_sizes_`.
    """

    def __init__(self, metric: str = "el2n", keep: str = "easy", *, n_models: int = 4, epochs: int | None = None,
                 model_factory: ModelFactory | None = None, batch_size: int = 64, lr: float = 3e-3,
                 weight_decay: float = 0.01, random_state: int = 0) -> None:
        self.metric, self.keep, self.n_models, self.epochs = metric, keep, n_models, epochs
        self.model_factory, self.batch_size, self.lr, self.weight_decay = model_factory, batch_size, lr, weight_decay
        self.random_state = random_state
        self._check_params()

    def _check_params(self) -> None:
        check_choice(self.metric, "metric", METRICS)
        check_choice(self.keep, "keep", ("easy", "hard"))
        check_int(self.n_models, "n_models", min=1)
        if self.epochs is not None:
            check_int(self.epochs, "epochs", min=1)
        if self.model_factory is not None and not callable(self.model_factory):
            raise TypeError(f"model_factory must be callable, got {type(self.model_factory).__name__}")
        check_int(self.batch_size, "batch_size", min=1)
        check_float(self.lr, "lr", min=0.0, min_open=True)
        check_float(self.weight_decay, "weight_decay", min=0.0)
        check_seed(self.random_state, "random_state")

    def fit(self, X, y, scores=None) -> ScoreSelector:
        """Score every sample of (X, y), or take precomputed `scores` (N,) in the metric's own units."""
        self._check_params()
        x = check_pixel_range(check_images(X), "X")
        yy, k, by_class = fit_labels(X, y)
        if scores is None:
            kw = dict(model_factory=self.model_factory, batch_size=self.batch_size, lr=self.lr,
                      weight_decay=self.weight_decay, random_state=self.random_state,
                      epochs=DEFAULT_EPOCHS[self.metric] if self.epochs is None else self.epochs)
            if self.metric == "el2n":
                kw["n_models"] = self.n_models
            s = SCORERS[self.metric](x, yy, **kw)
        else:
            s = check_scores(scores, len(yy))
        self.scores_ = s
        self.difficulty_ = DIFFICULTY_SIGN[self.metric] * s
        self.n_classes_, self._by_class = k, by_class
        self.class_sizes_ = [len(i) for i in by_class]
        self._tiebreak = np.random.default_rng(int(self.random_state)).permutation(len(yy))
        return self

    def ranking(self, c: int) -> np.ndarray:
        """Indices of class `c`, easiest first (the order both keep modes slice)."""
        _fitted(self, "difficulty_")
        c = check_int(c, "c", min=0, max=self.n_classes_ - 1)
        return rank_order(self.difficulty_, self._by_class[c], self._tiebreak)

    def select(self, ipc: int) -> np.ndarray:
        """`ipc` indices per class (K * ipc in all): easiest first for keep="easy", hardest first for "hard"."""
        _fitted(self, "difficulty_")
        keep = check_choice(self.keep, "keep", ("easy", "hard"))
        ipc = check_ipc(ipc, self.class_sizes_)
        out = []
        for c in range(self.n_classes_):
            order = self.ranking(c)
            out.append(order[:ipc] if keep == "easy" else order[::-1][:ipc])
        return np.concatenate(out).astype(np.int64)


def _fitted(est, attr: str) -> None:
    if not hasattr(est, attr):
        raise NotFittedError(f"{type(est).__name__} is not fitted: call fit(X, y) before select")


__all__ = ["ScoreSelector", "METRICS", "DEFAULT_EPOCHS", "check_ipc", "class_indices", "fit_labels", "check_scores",
           "rank_order"]
