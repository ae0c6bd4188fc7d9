"""Baselines: exact special cases (ACI gamma=0, NexCP rho=1), the MAPIE EnbPI cross-check, and the shared API."""

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

from icml26.cqacp import ACI, SPCI, AgACI, ConformalPID, EnbPI, NexCP, QRDirect, QRFLearner, coverage
from icml26.cqacp.baselines import conformal_quantile, weighted_conformal_quantile
from icml26.cqacp.data import lag_matrix, simulate_ar_garch


@pytest.fixture(scope="module")
def data():
    y, _ = simulate_ar_garch(T=500, seed=5)
    return lag_matrix(y, 3)


def _split_conformal_path(est, X, y, a, b, window):
    """Reference: split-conformal |residual| quantile of the last `window` scores, recomputed every step."""
    scores = list(np.abs(y[a:b] - est.predict(X[a:b])))
    out = []
    for t in range(b, len(y)):
        r = np.sort(scores[-window:])
        k = int(np.ceil((len(r) + 1) * 0.9))
        out.append(np.inf if k > len(r) else r[k - 1])
        scores.append(abs(y[t] - est.predict(X[t:t + 1])[0]))
    return np.array(out)


def test_conformal_quantile_known_answers():
    s = np.arange(1, 20, dtype=float)  # n = 19
    assert conformal_quantile(s, 0.9) == 18.0            # ceil(20 * 0.9) = 18
    assert conformal_quantile(s, 0.99) == np.inf          # ceil(19.8) = 20 > 19
    assert weighted_conformal_quantile(s, np.ones(19), 0.9) == 18.0


def test_aci_gamma_zero_is_split_conformal_on_window(data):
    X, y = data
    est = ACI(LinearRegression(), 0.9, gamma=0.0, window=50).fit(X[:200], y[:200]).conformalize(X[200:300], y[200:300])
    yp, pis = est.rolling_predict_interval(X[300:], y[300:])
    ref = _split_conformal_path(est, X, y, 200, 300, 50)
    np.testing.assert_allclose(pis[:, 1, 0] - yp, ref, rtol=1e-12)
    np.testing.assert_allclose(yp - pis[:, 0, 0], ref, rtol=1e-12)


def test_aci_adapts_level(data):
    X, y = data
    est = ACI(LinearRegression(), 0.9, gamma=0.05).fit(X[:200], y[:200]).conformalize(X[200:300], y[200:300])
    est.rolling_predict_interval(X[300:], y[300:])
    assert est.alpha_t_[0] != pytest.approx(0.1)


def test_nexcp_rho_one_is_unweighted_split_conformal(data):
    X, y = data
    est = NexCP(LinearRegression(), 0.9, rho=1.0).fit(X[:200], y[:200]).conformalize(X[200:300], y[200:300])
    yp, pis = est.rolling_predict_interval(X[300:], y[300:])
    ref = _split_conformal_path(est, X, y, 200, 300, 10_000)
    np.testing.assert_allclose(pis[:, 1, 0] - yp, ref, rtol=1e-12)


def test_enbpi_matches_mapie_time_series_regressor(data):
    mapie = pytest.importorskip("mapie")  # noqa: F841
    from mapie.regression import TimeSeriesRegressor
    from mapie.subsample import BlockBootstrap

    X, y = data
    ref = TimeSeriesRegressor(LinearRegression(), method="enbpi", agg_function="mean",
                              cv=BlockBootstrap(n_resamplings=20, length=20, overlapping=True, random_state=0))
    ref.fit(X[:350], y[:350])
    yp_ref, pis_ref = ref.predict(X[350:], ensemble=True, confidence_level=0.9)
    ours = EnbPI(LinearRegression(), 0.9, n_bootstrap=20, block_length=20, score="absolute", random_state=0)
    yp, pis = ours.fit(X[:350], y[:350]).predict_interval(X[350:])
    # different bootstrap draws: statistical tolerance
    assert np.max(np.abs(yp - yp_ref)) < 0.1 * np.std(y)
    w_ref = np.mean(pis_ref[:, 1, 0] - pis_ref[:, 0, 0])
    assert np.mean(pis[:, 1, 0] - pis[:, 0, 0]) == pytest.approx(w_ref, rel=0.1)


@pytest.mark.parametrize("make", [
    lambda: ACI(LinearRegression(), [0.8, 0.9]),
    lambda: AgACI(LinearRegression(), [0.8, 0.9]),
    lambda: EnbPI(LinearRegression(), [0.8, 0.9], n_bootstrap=5, random_state=0),
    lambda: NexCP(LinearRegression(), [0.8, 0.9]),
    lambda: ConformalPID(LinearRegression(), [0.8, 0.9]),
    lambda: SPCI(LinearRegression(), None, [0.8, 0.9], window=8, refit_every=25, random_state=0),
    lambda: QRDirect(LinearRegression(), QRFLearner(n_estimators=5, random_state=0), [0.8, 0.9], window=8,
                     refit_every=25),
])
def test_same_online_interface(make, data):
    X, y = data
    est = make().fit(X[:200], y[:200]).conformalize(X[200:300], y[200:300])
    yp, pis = est.predict_interval(X[300:302])
    assert yp.shape == (2,) and pis.shape == (2, 2, 2)
    est.update(X[300:302], y[300:302])
    yp, pis = est.rolling_predict_interval(X[302:], y[302:])
    assert pis.shape == (len(y) - 302, 2, 2)
    assert np.all(pis[:, 1] >= pis[:, 0])
    cov = coverage(y[302:], pis)
    assert 0.6 < cov[1] <= 1.0 and cov[0] <= cov[1] + 0.05


def test_agaci_bounds_are_convex_combinations(data):
    X, y = data
    est = AgACI(LinearRegression(), 0.9).fit(X[:200], y[:200]).conformalize(X[200:300], y[200:300])
    est.rolling_predict_interval(X[300:400], y[300:400])
    q = est._expert_q()[0]
    lo, hi = est._offsets()
    assert -q.max() - 1e-12 <= lo[0] <= -q.min() + 1e-12 and q.min() - 1e-12 <= hi[0] <= q.max() + 1e-12


def test_baseline_bad_inputs():
    with pytest.raises(ValueError, match="gamma"):
        ACI(gamma=-1)
    with pytest.raises(ValueError, match="rho"):
        NexCP(rho=0)
    with pytest.raises(ValueError, match="confidence_level"):
        NexCP(confidence_level=1.0)
    with pytest.raises(ValueError, match="n_beta"):
        SPCI(n_beta=1)
    with pytest.raises(ValueError, match="score"):
        EnbPI(score="squared")
