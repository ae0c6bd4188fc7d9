"""Baselines of the CQACP paper (spec section 4), all with CQACPRegressor's online interface
(fit / conformalize / predict_interval -> (n,), (n, 2, L) / update / rolling_predict_interval).

- ACI        Gibbs & Candes (2021): split-conformal quantile of past |scores| at the adapted level 1 - alpha_t,
             alpha_{t+1} = alpha_t + gamma (alpha - err_t); alpha_t <= 0 -> infinite interval.
- AgACI      Zaffran et al. (2022): ACI experts over a gamma grid, lower / upper bounds aggregated separately by
             Bernstein Online Aggregation (BOA) on the pinball loss at alpha/2 and 1 - alpha/2; infinite
             expert bounds replaced by the largest observed |score|.
- EnbPI      Xu & Xie (2021): block-bootstrap ensemble, leave-one-out residuals, interval from empirical
             quantiles of the last W residuals with a beta-search over 5 points of [0, alpha] (SPCI code,
             `binning`), sliding residual window, no refit.  score="absolute": symmetric version (MAPIE's).
- SPCI       Xu & Xie (2023): CQACP's features and a QRF (10 trees, depth 2) predicting quantiles at beta_i and
             1 - alpha + beta_i for 5 betas in [0, alpha]; narrowest chosen.  "CQACP without the CF step".
- NexCP      Barber et al. (2023): weighted split-conformal quantile of past |scores| with weights rho^(t-i),
             plus a unit mass at +inf for the test point.
- ConformalPID  Angelopoulos, Candes & Tibshirani (2023): quantile tracking (P) + saturating integrator (I)
             (+ optional Theta scorecaster, D) on |scores|.
- QRDirect   the base learner's own quantiles at alpha/2 and 1 - alpha/2 (no CF step): the ablation.

Reconstruction notes [R]: ACI/NexCP/PID use symmetric |score| intervals; AgACI's BOA is the adaptive-rate
gradient version (Wintenberger 2017) with a uniform prior; PID's K_I defaults to the largest calibration
|score| (R conformalForecast's default) and its quantile starts at the calibration split-conformal quantile (the reference code
starts at 0 after a burn-in); EnbPI's quantiles are `np.quantile` (linear) rather than SPCI's percentiles at
ceil(100 tau).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26.common.validation import check_array, check_choice, check_float, check_int
from icml26.cqacp._online import (
    EnsembleMean,
    OnlineIntervalRegressor,
    bootstrap_loo,
    check_optional_int,
    check_random_state,
    check_Xy,
)
from icml26.cqacp.quantile_learners import QRFLearner, linear_qr_learner
from icml26.cqacp.regressor import CQACPRegressor

__all__ = ["ACI", "AgACI", "EnbPI", "SPCI", "NexCP", "ConformalPID", "QRDirect", "conformal_quantile",
           "weighted_conformal_quantile"]


# ------------------------------------------------------------------------------------------ helpers
def conformal_quantile(scores: np.ndarray, level: float) -> float:
    """Split-conformal quantile: the ceil((n + 1) level)-th smallest score (+inf if > n, -inf... 0 if < 1)."""
    s = np.sort(np.asarray(scores, dtype=float))
    n = len(s)
    if level <= 0:
        return -np.inf if n == 0 else min(s[0], 0.0)
    k = int(np.ceil((n + 1) * level - 1e-12))
    if k > n:
        return np.inf
    return float(s[max(k, 1) - 1])


def weighted_conformal_quantile(scores: np.ndarray, weights: np.ndarray, level: float) -> float:
    """Quantile at `level` of sum_i w~_i delta_{s_i} + w~_{n+1} delta_{+inf}, w~ = w / (sum w + 1) (NexCP)."""
    s = np.asarray(scores, dtype=float)
    w = np.asarray(weights, dtype=float)
    order = np.argsort(s, kind="stable")
    cw = np.cumsum(w[order]) / (w.sum() + 1.0)
    k = np.searchsorted(cw, level - 1e-12)
    return float(s[order][k]) if k < len(s) else np.inf


class _AbsScoreMethod(OnlineIntervalRegressor):
    """Symmetric |score| methods: the interval is y_hat -/+ max(q, 0) with q (L,) from `_current_q()`
    (+inf stays infinite); subclasses set their state in `_conformalize_scores` and update it in `_observe`."""

    def __init__(self, estimator=None, confidence_level=0.9, window: int | None = None, prefit: bool = False):
        self.window = window
        super().__init__(estimator, confidence_level, prefit)

    def _validate_params(self) -> dict[str, Any]:
        p = super()._validate_params()
        p["window"] = check_optional_int(self.window, "window", 1)
        return p

    def _recent(self) -> np.ndarray:
        return self.scores_ if self._p["window"] is None else self.scores_[-self._p["window"]:]

    def _current_q(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _offsets(self):
        q = np.maximum(self._current_q(), 0.0)
        return -q, q

    def _push(self, y: float, y_hat: float) -> float:
        s = abs(y - y_hat)
        self.scores_ = np.append(self.scores_, s)
        if self._p["window"] is not None and len(self.scores_) > 4 * self._p["window"]:
            self.scores_ = self.scores_[-self._p["window"]:]
        return s


# ------------------------------------------------------------------------------------------ ACI
class ACI(_AbsScoreMethod):
    """Adaptive conformal inference (Gibbs & Candes 2021), one alpha_t per level.

    Args: estimator, confidence_level, gamma (0.005), window (None = all past scores; else the last `window`),
    prefit.  gamma=0 is split conformal on the window.
    """

    def __init__(self, estimator=None, confidence_level=0.9, gamma: float = 0.005, window: int | None = None,
                 prefit: bool = False):
        self.gamma = gamma
        super().__init__(estimator, confidence_level, window, prefit)

    def _validate_params(self) -> dict[str, Any]:
        p = super()._validate_params()
        p["gamma"] = check_float(self.gamma, "gamma", min=0.0)
        return p

    def _conformalize_scores(self, X, y, y_hat):
        self.scores_ = np.abs(y - y_hat)
        self.alpha_t_ = 1 - self.levels_.copy()

    def _current_q(self):
        r = self._recent()
        return np.array([np.inf if a <= 0 else conformal_quantile(r, 1 - a) for a in self.alpha_t_])

    def _observe(self, y, y_hat):
        q = self._current_q()
        err = (abs(y - y_hat) > q).astype(float)
        self.alpha_t_ = self.alpha_t_ + self._p["gamma"] * ((1 - self.levels_) - err)
        self._push(y, y_hat)


# ------------------------------------------------------------------------------------------ AgACI
class _BOA:
    """Bernstein Online Aggregation with adaptive per-expert rates (Wintenberger 2017), uniform prior."""

    def __init__(self, k: int) -> None:
        self.R = np.zeros(k)
        self.B = np.zeros(k)
        self.E = 0.0
        self.eta = np.full(k, np.inf)
        self.k = k

    def weights(self) -> np.ndarray:
        if not np.isfinite(self.eta).all():
            return np.full(self.k, 1.0 / self.k)
        logit = np.log(self.eta) + self.eta * self.R
        p = np.exp(logit - logit.max())
        return p / p.sum()

    def update(self, regret: np.ndarray) -> None:
        self.B += regret**2
        self.E = max(self.E, float(np.abs(regret).max()))
        if self.E <= 0:
            return
        eta = np.minimum(1 / (2 * self.E), np.sqrt(np.log(self.k) / np.maximum(self.B, 1e-300)))
        self.R += regret - eta * regret**2
        self.eta = eta


class AgACI(_AbsScoreMethod):
    """Aggregated ACI (Zaffran et al. 2022): ACI experts for each gamma in `gammas`, BOA aggregation of the
    lower (pinball at alpha/2) and upper (pinball at 1 - alpha/2) bounds separately."""

    GAMMAS = (0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064)

    def __init__(self, estimator=None, confidence_level=0.9, gammas=GAMMAS, window: int | None = None,
                 prefit: bool = False):
        self.gammas = gammas
        super().__init__(estimator, confidence_level, window, prefit)

    def _validate_params(self) -> dict[str, Any]:
        p = super()._validate_params()
        g = check_array(self.gammas, "gammas", ndim=1)
        if np.any(g < 0):
            raise ValueError(f"gammas must be a non-empty list of finite floats >= 0, got {self.gammas!r}")
        p["gammas"] = g
        return p

    def _conformalize_scores(self, X, y, y_hat):
        self.scores_ = np.abs(y - y_hat)
        g = self._p["gammas"]
        self.alpha_t_ = np.tile((1 - self.levels_)[:, None], (1, len(g)))      # (L, K)
        self._boa = [(_BOA(len(g)), _BOA(len(g))) for _ in self.levels_]

    def _expert_q(self):
        r = self._recent()
        cap = float(np.max(np.abs(self.scores_)))
        q = np.array([[np.inf if a <= 0 else conformal_quantile(r, 1 - a) for a in row] for row in self.alpha_t_])
        return np.where(np.isfinite(q), np.maximum(q, 0.0), cap)                  # (L, K)

    def _offsets(self):
        q = self._expert_q()
        lo = np.array([self._boa[i][0].weights() @ (-q[i]) for i in range(len(q))])
        hi = np.array([self._boa[i][1].weights() @ q[i] for i in range(len(q))])
        return lo, hi

    def _observe(self, y, y_hat):
        q = self._expert_q()
        e = y - y_hat
        g = self._p["gammas"]
        for i, lv in enumerate(self.levels_):
            a = 1 - lv
            for side, (tau, x) in enumerate(((a / 2, -q[i]), (1 - a / 2, q[i]))):
                boa = self._boa[i][side]
                agg = boa.weights() @ x
                grad = (1 - tau) if e < agg else -tau          # d/dx pinball_tau(e - x)
                boa.update(grad * (agg - x))
            err = (abs(e) > q[i]).astype(float)
            self.alpha_t_[i] = self.alpha_t_[i] + g * (a - err)
        self._push(y, y_hat)


# ------------------------------------------------------------------------------------------ EnbPI
class EnbPI(OnlineIntervalRegressor):
    """EnbPI (Xu & Xie 2021) with its own block-bootstrap ensemble of `estimator`.

    Args: estimator, confidence_level, n_bootstrap (20), block_length (None = n_train // 20),
    score ("signed": beta-search over `n_beta`=5 points of [0, alpha]; "absolute": symmetric |residual|
    split-conformal quantile as MAPIE), window (None = the size of the initial residual set),
    random_state.  `fit` builds the ensemble and its LOO residuals; `conformalize` (optional) appends
    out-of-sample residuals of a calibration block.
    """

    def __init__(self, estimator=None, confidence_level=0.9, n_bootstrap: int = 20, block_length: int | None = None,
                 score: str = "signed", n_beta: int = 5, window: int | None = None,
                 random_state: int | None = None):
        self.n_bootstrap, self.block_length, self.score = n_bootstrap, block_length, score
        self.n_beta, self.window, self.random_state = n_beta, window, random_state
        super().__init__(estimator, confidence_level, prefit=False)

    def _validate_params(self) -> dict[str, Any]:
        p = super()._validate_params()
        check_choice(self.score, "score", ("signed", "absolute"))
        p["n_bootstrap"] = check_int(self.n_bootstrap, "n_bootstrap", min=2)
        p["block_length"] = check_optional_int(self.block_length, "block_length", 1)
        p["n_beta"] = check_int(self.n_beta, "n_beta", min=1)
        p["window"] = check_optional_int(self.window, "window", 1)
        p["random_state"] = check_random_state(self.random_state)
        return p

    def fit(self, X_train, y_train) -> EnbPI:
        """Build the block-bootstrap ensemble; its LOO residuals start the residual window."""
        p = self._validate_params()
        X, y = check_Xy(X_train, y_train, "X_train", "y_train")
        self.n_features_in_ = X.shape[1]
        self.ensemble_, self.bootstrap_indices_, loo, keep = bootstrap_loo(
            self.estimator, X, y, p["n_bootstrap"], p["block_length"], p["random_state"])
        self.estimator_ = EnsembleMean(self.ensemble_)
        self.levels_ = p["levels"]
        self._p = p
        r = y[keep] - loo[keep]
        self.W_ = p["window"] or len(r)
        self.resid_ = r[-self.W_:]
        self._mark_conformalized()
        return self

    def _conformalize_scores(self, X, y, y_hat):
        p = self._p
        prev = getattr(self, "resid_", np.empty(0))
        r = np.concatenate([prev, y - y_hat])
        self.W_ = p["window"] or len(r)
        self.resid_ = r[-self.W_:]

    def _offsets(self):
        lo, hi = np.empty(len(self.levels_)), np.empty(len(self.levels_))
        r = self.resid_
        for i, lv in enumerate(self.levels_):
            a = 1 - lv
            if self.score == "absolute":
                q = conformal_quantile(np.abs(r), lv)
                lo[i], hi[i] = -q, q
                continue
            betas = np.linspace(0, a, self._p["n_beta"])
            ql = np.quantile(r, betas)
            qh = np.quantile(r, 1 - a + betas)
            j = int(np.argmin(qh - ql))
            lo[i], hi[i] = ql[j], qh[j]
        return lo, hi

    def _observe(self, y, y_hat):
        self.resid_ = np.append(self.resid_, y - y_hat)[-self.W_:]


# ------------------------------------------------------------------------------------------ quantile-learner baselines
class _DirectQuantiles(CQACPRegressor):
    """CQACP's machinery without the CF step: bounds are the learner's own quantiles at the needed levels."""

    _uses_cf = False

    def _validate_params(self) -> dict[str, Any]:
        p = super()._validate_params()
        if self.adapt is not None:
            raise ValueError("adapt is only supported by CQACPRegressor (needs the continuous CF curve)")
        return p

    def _curve_block(self, Z):
        taus = np.unique(np.round(self._needed, 12))
        raw = self.learner_.predict_quantiles(Z, taus)
        self._last_raw = raw
        return (taus, raw)

    def _quantiles(self, curve, taus):
        avail, Q = curve
        j = np.array([int(np.argmin(np.abs(avail - t))) for t in np.atleast_1d(taus)])
        if np.any(np.abs(avail[j] - taus) > 1e-8):
            raise RuntimeError("requested a level the learner was not evaluated at")
        return Q[:, j]


class SPCI(_DirectQuantiles):
    """SPCI (Xu & Xie 2023): QRF on past-residual features, beta-search over `n_beta` points of [0, alpha].

    Defaults follow the SPCI code: QRFLearner(n_estimators=10, max_depth=2, max_samples_leaf=None),
    n_beta=5 (beta in linspace(0, alpha, 5), endpoints included), window=20, refit_every=10, signed scores.
    """

    def __init__(self, estimator=None, quantile_learner=None, confidence_level=0.9, window: int = 20,
                 refit_every: int = 10, n_beta: int = 5, n_max: int | None = None, prefit: bool = False,
                 random_state: int | None = None):
        ql = quantile_learner if quantile_learner is not None else QRFLearner(
            n_estimators=10, max_depth=2, min_samples_leaf=1, max_features=1.0,
            random_state=check_random_state(random_state))
        self.n_beta = n_beta
        super().__init__(estimator, ql, confidence_level, window=window, tails="optimal", monotone="none",
                         refit_every=refit_every, n_max=n_max, prefit=prefit, random_state=random_state)

    def _validate_params(self) -> dict[str, Any]:
        p = super()._validate_params()
        p["n_beta"] = check_int(self.n_beta, "n_beta", min=2)
        return p

    @property
    def _beta_fractions(self) -> np.ndarray:
        return np.linspace(0.0, 1.0, check_int(self.n_beta, "n_beta", min=2))


class QRDirect(_DirectQuantiles):
    """Direct (uncorrected) quantile regression: [f + Q(alpha/2 | Z), f + Q(1 - alpha/2 | Z)] from the base
    learner (default per-level linear QR), no CF step and no sorting - the ablation of CQACP."""

    def __init__(self, estimator=None, quantile_learner=None, confidence_level=0.9, window: int = 20,
                 refit_every: int = 10, score: str = "signed", n_max: int | None = None, prefit: bool = False,
                 random_state: int | None = None):
        ql = quantile_learner if quantile_learner is not None else linear_qr_learner()
        super().__init__(estimator, ql, confidence_level, window=window, score=score, tails="equal",
                         monotone="none", refit_every=refit_every, n_max=n_max, prefit=prefit,
                         random_state=random_state)


# ------------------------------------------------------------------------------------------ NexCP
class NexCP(_AbsScoreMethod):
    """Non-exchangeable split conformal (Barber et al. 2023) with weights rho^(t - i) (default rho = 0.99)."""

    def __init__(self, estimator=None, confidence_level=0.9, rho: float = 0.99, window: int | None = None,
                 prefit: bool = False):
        self.rho = rho
        super().__init__(estimator, confidence_level, window, prefit)

    def _validate_params(self) -> dict[str, Any]:
        p = super()._validate_params()
        p["rho"] = check_float(self.rho, "rho", min=0.0, max=1.0, min_open=True)
        return p

    def _conformalize_scores(self, X, y, y_hat):
        self.scores_ = np.abs(y - y_hat)

    def _current_q(self):
        r = self._recent()
        w = self._p["rho"] ** np.arange(len(r) - 1, -1, -1, dtype=float)
        return np.array([weighted_conformal_quantile(r, w, lv) for lv in self.levels_])

    def _observe(self, y, y_hat):
        self._push(y, y_hat)


# ------------------------------------------------------------------------------------------ conformal PID
class ConformalPID(_AbsScoreMethod):
    """Conformal PID control (Angelopoulos, Candes & Tibshirani 2023) on |scores|, one tracker per level.

    q_{t+1} = qP_{t+1} + r_t(sum_{i<=t} (err_i - alpha)) [+ scorecast],  qP_{t+1} = qP_t + eta_t (err_t - alpha),
    eta_t = lr * (max - min of the last `burnin` scores), r_t(x) = K_I tan(x log(t) / (t C_sat)) saturated at
    +-pi/2, C_sat = (2/pi)(ceil(log(T) delta) - 1/log(T)).

    Args: lr (0.1), KI (None = max |calibration score|, as R conformalForecast), T (horizon used in C_sat, 1000), delta (0.01),
    burnin (100), scorecaster (None or "theta": a statsmodels ThetaModel forecast of the next score, refitted
    every step on the last `burnin` scores; slow).
    """

    def __init__(self, estimator=None, confidence_level=0.9, lr: float = 0.1, KI: float | None = None,
                 T: int = 1000, delta: float = 0.01, burnin: int = 100, scorecaster: str | None = None,
                 prefit: bool = False):
        self.lr, self.KI, self.T, self.delta = lr, KI, T, delta
        self.burnin = burnin
        self.scorecaster = scorecaster
        super().__init__(estimator, confidence_level, None, prefit)

    def _validate_params(self) -> dict[str, Any]:
        p = super()._validate_params()
        p["lr"] = check_float(self.lr, "lr", min=0.0, min_open=True)
        p["KI"] = None if self.KI is None else check_float(self.KI, "KI", min=0.0)
        p["T"] = check_int(self.T, "T", min=3)
        p["delta"] = check_float(self.delta, "delta", min=0.0, min_open=True)
        p["burnin"] = check_int(self.burnin, "burnin", min=2)
        check_choice(self.scorecaster, "scorecaster", (None, "theta"))
        return p

    def _conformalize_scores(self, X, y, y_hat):
        p = self._p
        self.scores_ = np.abs(y - y_hat)
        self.qP_ = np.array([conformal_quantile(self.scores_, lv) for lv in self.levels_])
        self.qP_ = np.where(np.isfinite(self.qP_), self.qP_, self.scores_.max())
        self.KI_ = float(np.max(self.scores_)) if p["KI"] is None else p["KI"]
        logT = np.log(p["T"])
        self.Csat_ = 2 / np.pi * (np.ceil(logT * p["delta"]) - 1 / logT)
        self.err_sum_ = np.zeros(len(self.levels_))
        self.t_ = 0
        self.q_ = self.qP_.copy()

    def _current_q(self):
        return self.q_

    def _observe(self, y, y_hat):
        s = abs(y - y_hat)
        alpha = 1 - self.levels_
        err = (s > self.q_).astype(float)
        recent = self.scores_[-self._p["burnin"]:]
        eta = self._p["lr"] * (recent.max() - recent.min())
        self.qP_ = self.qP_ + eta * (err - alpha)
        self.t_ += 1
        self.err_sum_ += err - alpha
        t = self.t_ + 1
        arg = self.err_sum_ * np.log(t) / (self.Csat_ * t)
        integ = np.where(arg >= np.pi / 2, np.inf, np.where(arg <= -np.pi / 2, -np.inf, np.tan(np.clip(arg, -1.5707, 1.5707))))
        self.q_ = self.qP_ + self.KI_ * integ
        self._push(y, y_hat)
        if self.scorecaster == "theta":
            self.q_ = self.q_ + self._scorecast()

    def _scorecast(self) -> float:
        from statsmodels.tsa.forecasting.theta import ThetaModel

        r = self.scores_[-self._p["burnin"]:]
        try:
            fc = float(ThetaModel(r, period=1, deseasonalize=False).fit().forecast(1)[0])
        except Exception:  # noqa: BLE001 - degenerate windows: no correction
            return 0.0
        return fc - float(np.mean(r))
