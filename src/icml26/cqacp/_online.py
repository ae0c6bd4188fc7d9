"""Shared plumbing of every online interval method here (CQACP and the baselines): the point model, input
validation, MAPIE-shaped outputs and the online loop.

API (MAPIE v1 style, spec section 5):
    est.fit(X_train, y_train)            fit the point model (skipped when prefit=True)
    est.conformalize(X_c, y_c)           out-of-sample scores of a calibration block -> score history
    est.predict(X) -> (n,)               point forecasts
    est.predict_interval(X)              -> y_pred (n,), y_pis (n, 2, L): [:, 0, l] lower, [:, 1, l] upper bound
                                         at confidence_level[l] (L levels in the order given)
    est.update(X, y)                     observe new points (online), one row at a time in order
    est.rolling_predict_interval(X, y)   the full online loop over a test block: predict row t from
                                         information before t, then observe it; -> y_pred (n,), y_pis (n, 2, L)

`predict_interval` is one step ahead: every row of X gets the interval for the next time step (the
calibration state is that of "now"); use `rolling_predict_interval` to walk through a block.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

__all__ = ["OnlineIntervalRegressor", "check_confidence_level", "block_bootstrap_indices"]


def check_confidence_level(confidence_level) -> np.ndarray:
    """float or sequence of floats in (0, 1) -> (L,) array; ValueError naming `confidence_level` otherwise."""
    lv = np.atleast_1d(np.asarray(confidence_level, dtype=float))
    if lv.ndim != 1 or lv.size == 0:
        raise ValueError(f"confidence_level must be a float or a 1-D list of floats, got {confidence_level!r}")
    if not np.all(np.isfinite(lv)) or np.any(lv <= 0) or np.any(lv >= 1):
        raise ValueError(f"confidence_level must lie strictly inside (0, 1), got {confidence_level!r}")
    return lv


def check_X(X, name: str = "X") -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name} contains NaN or inf")
    return X


def check_Xy(X, y, xname: str = "X", yname: str = "y") -> tuple[np.ndarray, np.ndarray]:
    X = check_X(X, xname)
    y = np.asarray(y, dtype=float)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1 or len(y) != len(X):
        raise ValueError(f"{yname} must be 1-D with {len(X)} values (one per row of {xname}), got shape {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{yname} contains NaN or inf")
    return X, y


def block_bootstrap_indices(n: int, n_resamplings: int, block_length: int, rng: np.random.Generator) -> list:
    """Moving-block bootstrap of range(n): blocks of `block_length` consecutive indices, concatenated to n."""
    if block_length < 1 or block_length > n:
        raise ValueError(f"block_length must be in [1, {n}], got {block_length}")
    n_blocks = int(np.ceil(n / block_length))
    out = []
    for _ in range(n_resamplings):
        starts = rng.integers(0, n - block_length + 1, size=n_blocks)
        idx = (starts[:, None] + np.arange(block_length)[None, :]).ravel()[:n]
        out.append(idx)
    return out


class OnlineIntervalRegressor(BaseEstimator):
    """Base of the online methods: subclasses implement `_conformalize_scores`, `_offsets`, `_observe`.

    A scikit-learn `BaseEstimator` (get_params / set_params / clone / repr work as usual).

    `_offsets()` returns (lo, hi), each (L,), added to the point forecast; `_observe(y, y_hat)` takes one
    observation and updates the method's state.
    """

    def __init__(self, estimator: Any = None, confidence_level: float | list[float] = 0.9,
                 prefit: bool = False) -> None:
        self.estimator = estimator
        self.confidence_level = confidence_level
        self.prefit = prefit
        check_confidence_level(confidence_level)

    # ---------------------------------------------------------------- point model
    def fit(self, X_train, y_train) -> OnlineIntervalRegressor:
        """Fit the point model on a training block (a clone of `estimator`; skipped when prefit=True)."""
        X, y = check_Xy(X_train, y_train, "X_train", "y_train")
        if self.estimator is None:
            from sklearn.linear_model import LinearRegression

            self.estimator_ = LinearRegression().fit(X, y)
        elif self.prefit:
            self.estimator_ = self.estimator
        else:
            from sklearn.base import clone

            self.estimator_ = clone(self.estimator).fit(X, y)
        return self

    def predict(self, X) -> np.ndarray:
        """Point forecasts (n,)."""
        if not hasattr(self, "estimator_"):
            if self.prefit and self.estimator is not None:
                self.estimator_ = self.estimator
            else:
                raise RuntimeError(f"{type(self).__name__} is not fitted; call fit(X_train, y_train) first")
        return np.asarray(self.estimator_.predict(check_X(X)), dtype=float).ravel()

    # ---------------------------------------------------------------- conformal API
    def conformalize(self, X_conformalize, y_conformalize) -> OnlineIntervalRegressor:
        """Compute out-of-sample scores on a calibration block and start the online state from them."""
        X, y = check_Xy(X_conformalize, y_conformalize, "X_conformalize", "y_conformalize")
        self.levels_ = check_confidence_level(self.confidence_level)
        self._conformalize_scores(X, y, self.predict(X))
        self.is_conformalized_ = True
        return self

    def predict_interval(self, X) -> tuple[np.ndarray, np.ndarray]:
        """One-step-ahead intervals: y_pred (n,), y_pis (n, 2, L)."""
        self._check_conformalized()
        y_pred = self.predict(X)
        lo, hi = self._offsets()
        y_pis = np.empty((len(y_pred), 2, len(self.levels_)))
        y_pis[:, 0, :] = y_pred[:, None] + lo[None, :]
        y_pis[:, 1, :] = y_pred[:, None] + hi[None, :]
        return y_pred, y_pis

    def update(self, X, y) -> OnlineIntervalRegressor:
        """Observe new (X, y) rows in time order (online update of the calibration state)."""
        self._check_conformalized()
        X, y = check_Xy(X, y)
        y_hat = self.predict(X)
        for yt, ht in zip(y, y_hat):
            self._observe(float(yt), float(ht))
        return self

    def rolling_predict_interval(self, X, y) -> tuple[np.ndarray, np.ndarray]:
        """Online loop over a test block: interval for row t from data before t, then observe row t."""
        self._check_conformalized()
        X, y = check_Xy(X, y)
        y_pred = self.predict(X)
        y_pis = np.empty((len(y), 2, len(self.levels_)))
        for t in range(len(y)):
            lo, hi = self._offsets()
            y_pis[t, 0], y_pis[t, 1] = y_pred[t] + lo, y_pred[t] + hi
            self._observe(float(y[t]), float(y_pred[t]))
        return y_pred, y_pis

    # ---------------------------------------------------------------- hooks
    def _conformalize_scores(self, X, y, y_hat) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _offsets(self) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _observe(self, y: float, y_hat: float) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _check_conformalized(self) -> None:
        if not getattr(self, "is_conformalized_", False):
            raise RuntimeError(f"{type(self).__name__} is not conformalized; call conformalize(X_c, y_c) first")


def check_positive_int(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)
