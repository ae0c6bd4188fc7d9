"""CQACPRegressor: shapes, nestedness, equivariance, online equivalence, degenerate and bad inputs."""

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression, Ridge

from icml26.cqacp import CQACPRegressor, QRFLearner, linear_qr_learner, nestedness_rate
from icml26.cqacp.data import lag_matrix, simulate_ar_garch


@pytest.fixture(scope="module")
def data():
    y, _ = simulate_ar_garch(T=420, seed=3)
    return lag_matrix(y, 3)


def _fit(X, y, **kw):
    kw.setdefault("quantile_learner", QRFLearner(n_estimators=10, random_state=0))
    kw.setdefault("window", 8)
    kw.setdefault("refit_every", 20)
    est = CQACPRegressor(kw.pop("estimator", LinearRegression()), **kw)
    return est.fit(X[:150], y[:150]).conformalize(X[150:250], y[150:250])


def test_shapes_and_nestedness_for_any_levels(data):
    X, y = data
    levels = [0.5, 0.97, 0.8, 0.9, 0.95, 0.66]
    est = _fit(X, y, confidence_level=levels)
    y_pred, y_pis = est.predict_interval(X[250:253])
    assert y_pred.shape == (3,) and y_pis.shape == (3, 2, 6)
    yp, pis = est.rolling_predict_interval(X[250:350], y[250:350])
    assert pis.shape == (100, 2, 6)
    assert nestedness_rate(pis, levels) == 1.0
    assert np.all(pis[:, 1] >= pis[:, 0])


def test_single_level_output_shape(data):
    X, y = data
    est = _fit(X, y, confidence_level=0.9)
    _, pis = est.predict_interval(X[250:260])
    assert pis.shape == (10, 2, 1)


def test_rolling_equals_step_by_step_loop(data):
    X, y = data
    for kw in ({"quantile_learner": linear_qr_learner(), "tau_grid": [0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95],
                "refit_every": 15},
               {"adapt": "aci", "gamma": 0.05, "refit_every": 7}):
        a = _fit(X, y, confidence_level=[0.8, 0.9], **kw)
        b = _fit(X, y, confidence_level=[0.8, 0.9], **kw)
        _, pis = a.rolling_predict_interval(X[250:290], y[250:290])
        step = []
        for t in range(250, 290):
            step.append(b.predict_interval(X[t:t + 1])[1][0])
            b.update(X[t:t + 1], y[t:t + 1])
        np.testing.assert_allclose(pis, np.array(step), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(a.scores_, b.scores_)
        np.testing.assert_allclose(a.alpha_t_, b.alpha_t_)


def test_affine_equivariance(data):
    X, y = data
    a, c = 3.7, -12.0
    e1 = _fit(X, y, confidence_level=[0.8, 0.95])
    e2 = _fit(a * X + c, a * y + c, confidence_level=[0.8, 0.95])
    _, p1 = e1.rolling_predict_interval(X[250:300], y[250:300])
    _, p2 = e2.rolling_predict_interval(a * X[250:300] + c, a * y[250:300] + c)
    np.testing.assert_allclose(p2, a * p1 + c, rtol=1e-5, atol=1e-6 * a)


def test_level_order_does_not_change_results(data):
    X, y = data
    _, p1 = _fit(X, y, confidence_level=[0.8, 0.9, 0.95]).rolling_predict_interval(X[250:350], y[250:350])
    _, p2 = _fit(X, y, confidence_level=[0.95, 0.8, 0.9]).rolling_predict_interval(X[250:350], y[250:350])
    np.testing.assert_allclose(p1, p2[:, :, [1, 2, 0]], rtol=1e-12)


@pytest.mark.filterwarnings("ignore:levels")
def test_optimal_tails_never_wider_than_equal_tails(data):
    X, y = data
    _, pe = _fit(X, y, confidence_level=[0.8, 0.9]).rolling_predict_interval(X[250:350], y[250:350])
    _, po = _fit(X, y, confidence_level=[0.8, 0.9], tails="optimal").rolling_predict_interval(X[250:350], y[250:350])
    assert np.all(po[:, 1] - po[:, 0] <= pe[:, 1] - pe[:, 0] + 1e-10)
    assert np.any(po[:, 1] - po[:, 0] < pe[:, 1] - pe[:, 0] - 1e-6)   # the beta-search does something


def test_absolute_score_is_symmetric(data):
    X, y = data
    yp, pis = _fit(X, y, score="absolute", confidence_level=[0.8, 0.9]).rolling_predict_interval(X[250:350], y[250:350])
    np.testing.assert_allclose(pis[:, 1] - yp[:, None], yp[:, None] - pis[:, 0])
    assert np.all(pis[:, 1] >= yp[:, None])


def test_aci_with_zero_gamma_is_plain_cqacp(data):
    X, y = data
    _, p0 = _fit(X, y).rolling_predict_interval(X[250:350], y[250:350])
    _, p1 = _fit(X, y, adapt="aci", gamma=0.0).rolling_predict_interval(X[250:350], y[250:350])
    np.testing.assert_allclose(p0, p1)


def test_enbpi_residuals(data):
    X, y = data
    est = CQACPRegressor(Ridge(1e-3), QRFLearner(n_estimators=10, random_state=0), window=8,
                         residuals="enbpi", n_bootstrap=10, random_state=0).fit(X[:200], y[:200])
    assert len(est.scores_) > 150  # LOO scores of the training block
    yp, pis = est.rolling_predict_interval(X[200:260], y[200:260])
    assert np.isfinite(pis).all() and 0.6 < np.mean((y[200:260] >= pis[:, 0, 0]) & (y[200:260] <= pis[:, 1, 0]))


def test_constant_residuals_give_zero_width():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 4.0
    est = CQACPRegressor(LinearRegression(), QRFLearner(n_estimators=5, random_state=0), window=5)
    est.fit(X[:100], y[:100]).conformalize(X[100:150], y[100:150])
    _, pis = est.rolling_predict_interval(X[150:], y[150:])
    assert np.isfinite(pis).all()
    assert np.max(pis[:, 1] - pis[:, 0]) < 1e-8


def test_bad_inputs(data):
    X, y = data
    with pytest.raises(ValueError, match="window"):
        _fit(X[:200], y[:200], window=200)
    with pytest.raises(ValueError, match="confidence_level"):
        CQACPRegressor(confidence_level=1.2)
    with pytest.raises(ValueError, match="confidence_level"):
        CQACPRegressor(confidence_level=[0.9, 0.0])
    y_nan = y.copy()
    y_nan[10] = np.nan
    with pytest.raises(ValueError, match="y_train"):
        CQACPRegressor().fit(X[:100], y_nan[:100])
    est = _fit(X, y)
    with pytest.raises(ValueError, match="y must be finite"):
        est.update(X[250:260], y_nan[5:15])
    with pytest.raises(ValueError, match="tails"):
        CQACPRegressor(tails="narrow")
    with pytest.raises(ValueError, match="tau_grid"):
        CQACPRegressor(tau_grid=[0.5, 0.1, 0.9])
    with pytest.raises(TypeError, match="quantile_learner"):
        CQACPRegressor(quantile_learner=LinearRegression())
    with pytest.raises(RuntimeError, match="conformalize"):
        CQACPRegressor().fit(X[:100], y[:100]).predict_interval(X[:2])


def test_levels_outside_tau_grid_warn(data):
    X, y = data
    with pytest.warns(UserWarning, match="extrapolates"):
        _fit(X, y, confidence_level=0.99)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _fit(X, y, confidence_level=0.95)


def test_sklearn_estimator_protocol(data):
    from sklearn.base import clone

    X, y = data
    est = CQACPRegressor(Ridge(1.0), QRFLearner(n_estimators=5, random_state=0), window=6, confidence_level=[0.8, 0.9])
    assert est.get_params()["window"] == 6 and "QRFLearner(n_estimators=5" in repr(est)
    twin = clone(est).set_params(window=7)
    assert twin.window == 7 and est.window == 6 and not hasattr(twin, "scores_")
    twin.fit(X[:150], y[:150]).conformalize(X[150:250], y[150:250])
    assert twin.predict_interval(X[250:251])[1].shape == (1, 2, 2)
