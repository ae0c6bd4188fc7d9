"""Shared plumbing of every online interval method here (CQACP and the baselines): the point model, input
validation, MAPIE-shaped outputs, the block-bootstrap ensemble and the online loop.

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

Parameters are checked in `__init__` and again by every public method (scikit-learn's `set_params` bypasses
the constructor).  The online state belongs to the parameters it was built with: changing a parameter
with `set_params` after `conformalize` makes the next `predict_interval` / `update` /
`rolling_predict_interval` raise until `conformalize` (or `fit`) is called again; `fit` discards a previous
calibration state (its scores came from the old point model).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from icml26.common.validation import check_array, check_bool, check_int

__all__ = ["OnlineIntervalRegressor", "check_confidence_level", "block_bootstrap_indices", "bootstrap_loo",
           "check_X", "check_Xy", "check_optional_int", "check_random_state"]


def check_confidence_level(confidence_level) -> np.ndarray:
    """float or sequence of floats in (0, 1) -> (L,) array; ValueError/TypeError naming `confidence_level`."""
    if isinstance(confidence_level, (bool, np.bool_)):
        raise TypeError(f"confidence_level must be a float or a list of floats, got {confidence_level!r}")
    lv = np.atleast_1d(check_array(confidence_level, "confidence_level", ndim=(0, 1)))
    if np.any(lv <= 0) or np.any(lv >= 1):
        raise ValueError(f"confidence_level must lie strictly inside (0, 1), got {confidence_level!r}")
    return lv


def check_optional_int(value, name: str, minimum: int) -> int | None:
    """None or an integer >= minimum (integral floats accepted, never truncated)."""
    return None if value is None else check_int(value, name, min=minimum)


def check_random_state(value, name: str = "random_state") -> int | None:
    """None or a non-negative integer seed."""
    return None if value is None else check_int(value, name, min=0)


def check_X(X, name: str = "X") -> np.ndarray:
    """(n,) or (n, d) finite numbers -> (n, d) float array with n >= 1."""
    X = check_array(X, name, ndim=(1, 2))
    return X[:, None] if X.ndim == 1 else X


def check_Xy(X, y, xname: str = "X", yname: str = "y") -> tuple[np.ndarray, np.ndarray]:
    X = check_X(X, xname)
    y = check_array(y, yname, ndim=(1, 2))
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1 or len(y) != len(X):
        raise ValueError(f"{yname} must be 1-D with {len(X)} values (one per row of {xname}), got shape {y.shape}")
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


def bootstrap_loo(estimator: Any, X: np.ndarray, y: np.ndarray, n_bootstrap: int, block_length: int | None,
                  random_state: int | None) -> tuple[list, list, np.ndarray, np.ndarray]:
    """The EnbPI ensemble (Xu & Xie 2021) used by `EnbPI` and `CQACPRegressor(residuals="enbpi")`.

    Fits `n_bootstrap` clones of `estimator` (LinearRegression if None) on moving-block bootstrap resamples
    of (X, y) (block length `block_length`, default n // 20) and forms, for every training point, the
    leave-one-out prediction: the mean prediction of the models whose resample does not contain it.

    Returns:
        models (B fitted clones), indices (B index arrays of length n), loo (n,) LOO predictions (NaN where
        every resample contains the point), keep (n,) bool: points with a LOO prediction.
    """
    from sklearn.base import clone
    from sklearn.linear_model import LinearRegression

    base = LinearRegression() if estimator is None else estimator
    rng = np.random.default_rng(random_state)
    bl = block_length or max(1, len(y) // 20)
    idx = block_bootstrap_indices(len(y), n_bootstrap, bl, rng)
    models = [clone(base).fit(X[i], y[i]) for i in idx]
    preds = np.stack([m.predict(X) for m in models])                    # (B, n)
    out = np.ones((len(idx), len(y)), dtype=bool)
    for b, i in enumerate(idx):
        out[b, i] = False
    n_out = out.sum(0)
    keep = n_out > 0
    loo = np.full(len(y), np.nan)
    loo[keep] = (preds * out).sum(0)[keep] / n_out[keep]
    return models, idx, loo, keep


class EnsembleMean:
    """Mean prediction of a bootstrap ensemble (the EnbPI point forecast)."""

    def __init__(self, models: list) -> None:
        self.models = models

    def predict(self, X) -> np.ndarray:
        return np.mean([m.predict(X) for m in self.models], axis=0)


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return bool(np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object)))
    except Exception:  # noqa: BLE001 - incomparable values differ
        return False


class OnlineIntervalRegressor(BaseEstimator):
    """Base of the online methods: subclasses implement `_conformalize_scores`, `_offsets`, `_observe` and
    extend `_validate_params`.

    A scikit-learn `BaseEstimator` (get_params / set_params / clone / repr work as usual).  Subclasses set
    their own attributes *before* calling `super().__init__`, which validates all of them.

    `_offsets()` returns (lo, hi), each (L,), added to the point forecast; `_observe(y, y_hat)` takes one
    observation and updates the method's state.
    """

    def __init__(self, estimator: Any = None, confidence_level: float | list[float] = 0.9,
                 prefit: bool = False) -> None:
        self.estimator = estimator
        self.confidence_level = confidence_level
        self.prefit = prefit
        self._validate_params()

    def _validate_params(self) -> dict[str, Any]:
        """Check every parameter (ValueError/TypeError naming it); returns the validated values."""
        if self.estimator is not None and not (hasattr(self.estimator, "fit") and hasattr(self.estimator, "predict")):
            raise TypeError(f"estimator must be a scikit-learn regressor with fit/predict, got "
                            f"{type(self.estimator).__name__}")
        return {"levels": check_confidence_level(self.confidence_level), "prefit": check_bool(self.prefit, "prefit")}

    # ---------------------------------------------------------------- point model
    def fit(self, X_train, y_train) -> OnlineIntervalRegressor:
        """Fit the point model on a training block (a clone of `estimator`; skipped when prefit=True).

        Discards any previous calibration state (call `conformalize` next)."""
        p = self._validate_params()
        X, y = check_Xy(X_train, y_train, "X_train", "y_train")
        self.is_conformalized_ = False
        self.n_features_in_ = X.shape[1]
        if self.estimator is None:
            from sklearn.linear_model import LinearRegression

            self.estimator_ = LinearRegression().fit(X, y)
        elif p["prefit"]:
            self.estimator_ = self.estimator
        else:
            from sklearn.base import clone

            self.estimator_ = clone(self.estimator).fit(X, y)
        return self

    def predict(self, X) -> np.ndarray:
        """Point forecasts (n,) for X (n, d) with the d feature columns the point model was fitted on."""
        return self._predict(X, "X")

    def _predict(self, X, name: str) -> np.ndarray:
        if not hasattr(self, "estimator_"):
            if self.prefit is True and self.estimator is not None:
                self.estimator_ = self.estimator
            else:
                raise RuntimeError(f"{type(self).__name__} is not fitted; call fit(X_train, y_train) first")
        X = check_X(X, name)
        d = getattr(self, "n_features_in_", None)
        if d is None:                                   # prefit without fit: the estimator's own count, if any
            d = getattr(self.estimator_, "n_features_in_", None)
        if d is not None and X.shape[1] != d:
            raise ValueError(f"{name} must have {d} feature column(s), as the point model was fitted on; "
                             f"got shape {X.shape}")
        return np.asarray(self.estimator_.predict(X), dtype=float).ravel()

    # ---------------------------------------------------------------- conformal API
    def conformalize(self, X_conformalize, y_conformalize) -> OnlineIntervalRegressor:
        """Compute out-of-sample scores on a calibration block and start the online state from them."""
        p = self._validate_params()
        X, y = check_Xy(X_conformalize, y_conformalize, "X_conformalize", "y_conformalize")
        self.levels_ = p["levels"]
        self._p = p                     # validated parameters of this online state (read by the hooks)
        self._conformalize_scores(X, y, self._predict(X, "X_conformalize"))
        self._mark_conformalized()
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

    def _mark_conformalized(self) -> None:
        """The online state now exists: remember the parameters it was built with."""
        self.is_conformalized_ = True
        self._state_params = self.get_params(deep=False)

    def _check_conformalized(self) -> None:
        if not getattr(self, "is_conformalized_", False):
            raise RuntimeError(f"{type(self).__name__} is not conformalized; call conformalize(X_c, y_c) first")
        self._validate_params()
        now = self.get_params(deep=False)
        changed = [k for k, v in self._state_params.items() if not _same(v, now.get(k))]
        if changed:
            raise ValueError(f"parameter(s) {', '.join(changed)} changed since conformalize (set_params after "
                             "the online state was built); call conformalize(X_c, y_c) (or fit) again")
