"""Base conditional-quantile learners of the nonconformity score (spec section 2, step 3).

Protocol (duck-typed; any object with these two methods works):

    learner.fit(X, y) -> learner                      X (n, d) features, y (n,) scores
    learner.predict_quantiles(X, taus) -> (n, m)      quantiles at levels taus (m,), columns in taus' order

- `QRFLearner`: quantile regression forest (`quantile_forest.RandomForestQuantileRegressor`, PyPI
  `quantile-forest`).  `max_samples_leaf=None` keeps every training sample in the leaves; the package's
  default of 1 sample per leaf destroys the tails (spec pitfall).  One weighted empirical distribution per
  row, so its quantiles never cross.
- `PerLevelLearner(base_factory)`: one independent model per level, e.g. sklearn `QuantileRegressor`
  (`linear_qr_learner()`), `HistGradientBoostingRegressor(loss="quantile")` (`hgb_qr_learner()`).  Models
  are fitted lazily the first time a level is asked for and cached until the next `fit`, so a caller that
  only needs 6 levels pays for 6 fits.  These learners cross - the case CQACP is built for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from icml26.common.validation import check_array

__all__ = ["QuantileLearner", "QRFLearner", "PerLevelLearner", "linear_qr_learner", "hgb_qr_learner"]


@runtime_checkable
class QuantileLearner(Protocol):
    def fit(self, X: np.ndarray, y: np.ndarray) -> Any: ...

    def predict_quantiles(self, X: np.ndarray, taus: np.ndarray) -> np.ndarray: ...


class QRFLearner:
    """Quantile regression forest on (features -> score).

    Args: n_estimators (default 50), min_samples_leaf (10), max_features (0.5), max_depth (None),
    max_samples_leaf (None = all samples; do not set 1), random_state (None), **kwargs passed to
    `RandomForestQuantileRegressor`.  SPCI's forest is `QRFLearner(n_estimators=10, max_depth=2,
    min_samples_leaf=1, max_features=1.0)`.
    """

    def __init__(self, n_estimators: int = 50, min_samples_leaf: int = 10, max_features: float | str | None = 0.5,
                 max_depth: int | None = None, max_samples_leaf: int | None = None, random_state: int | None = None,
                 **kwargs: Any) -> None:
        self.n_estimators = n_estimators
        self.min_samples_leaf = min_samples_leaf
        self.max_features = max_features
        self.max_depth = max_depth
        self.max_samples_leaf = max_samples_leaf
        self.random_state = random_state
        self.kwargs = kwargs

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.kwargs.items())
        return (f"QRFLearner(n_estimators={self.n_estimators}, min_samples_leaf={self.min_samples_leaf}, "
                f"max_features={self.max_features!r}, max_depth={self.max_depth}, "
                f"max_samples_leaf={self.max_samples_leaf}, random_state={self.random_state}{extra})")

    def fit(self, X, y) -> QRFLearner:
        try:
            from quantile_forest import RandomForestQuantileRegressor
        except ImportError as e:  # pragma: no cover
            raise ImportError("QRFLearner needs quantile-forest: pip install 'icml26[cqacp]'") from e
        X, y = _check_xy(X, y)
        self.model_ = RandomForestQuantileRegressor(
            n_estimators=self.n_estimators, min_samples_leaf=self.min_samples_leaf, max_features=self.max_features,
            max_depth=self.max_depth, max_samples_leaf=self.max_samples_leaf, random_state=self.random_state,
            n_jobs=1, **self.kwargs).fit(X, y)
        return self

    def predict_quantiles(self, X, taus) -> np.ndarray:
        if not hasattr(self, "model_"):
            raise RuntimeError("QRFLearner is not fitted; call fit(X, y) first")
        X, taus = _check_predict(X, taus)
        q = self.model_.predict(X, quantiles=[float(t) for t in taus])
        return np.asarray(q, dtype=float).reshape(len(X), len(taus))


class PerLevelLearner:
    """One model per quantile level, built by `base_factory(tau)` (an unfitted sklearn-style regressor).

    Example: `PerLevelLearner(lambda tau: QuantileRegressor(quantile=tau, alpha=0.0, solver="highs"))`.
    Levels are fitted lazily on first request (rounded to 1e-9 as cache keys) and cached until `fit`.
    """

    def __init__(self, base_factory: Callable[[float], Any]) -> None:
        if not callable(base_factory):
            raise TypeError(f"base_factory must be callable tau -> estimator, got {type(base_factory).__name__}")
        self.base_factory = base_factory

    def __repr__(self) -> str:
        return f"PerLevelLearner({getattr(self.base_factory, '__name__', repr(self.base_factory))})"

    def fit(self, X, y) -> PerLevelLearner:
        self.X_, self.y_ = _check_xy(X, y)
        self.models_: dict[float, Any] = {}
        return self

    def predict_quantiles(self, X, taus) -> np.ndarray:
        if not hasattr(self, "X_"):
            raise RuntimeError("PerLevelLearner is not fitted; call fit(X, y) first")
        X, taus = _check_predict(X, taus)
        out = np.empty((len(X), np.size(taus)))
        for j, tau in enumerate(taus):
            key = round(float(tau), 9)
            if key not in self.models_:
                self.models_[key] = self.base_factory(key).fit(self.X_, self.y_)
            out[:, j] = self.models_[key].predict(X)
        return out


def _linear_qr(tau: float):
    from sklearn.linear_model import QuantileRegressor

    return QuantileRegressor(quantile=tau, alpha=0.0, solver="highs")


def linear_qr_learner() -> PerLevelLearner:
    """Per-level linear quantile regression (sklearn `QuantileRegressor(alpha=0, solver="highs")`)."""
    return PerLevelLearner(_linear_qr)


class _HGBFactory:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs

    def __call__(self, tau: float):
        from sklearn.ensemble import HistGradientBoostingRegressor

        return HistGradientBoostingRegressor(loss="quantile", quantile=tau, **self.kwargs)


def hgb_qr_learner(**kwargs: Any) -> PerLevelLearner:
    """Per-level gradient boosting (`HistGradientBoostingRegressor(loss="quantile", **kwargs)`)."""
    return PerLevelLearner(_HGBFactory(**kwargs))


def _check_xy(X, y) -> tuple[np.ndarray, np.ndarray]:
    X = check_array(X, "X", ndim=2)
    y = check_array(y, "y", ndim=1)
    if len(y) != len(X):
        raise ValueError(f"y must be 1-D with len(X)={len(X)} rows, got shape {y.shape}")
    return X, y


def _check_predict(X, taus) -> tuple[np.ndarray, np.ndarray]:
    X = np.atleast_2d(check_array(X, "X", ndim=(1, 2)))
    taus = np.atleast_1d(check_array(taus, "taus", ndim=(0, 1)))
    if np.any(taus < 0) or np.any(taus > 1):
        raise ValueError(f"taus must lie in [0, 1], got {taus.tolist()}")
    return X, taus
