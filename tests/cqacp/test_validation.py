"""Issue 14 / 15 fixes: parameters checked after set_params, state tied to its parameters, one bootstrap,
the documented level coupling, config validation, and claim checks that can fail."""

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

from icml26.cqacp import (
    ACI,
    SPCI,
    AgACI,
    ConformalPID,
    CornishFisherQuantileCurve,
    CQACPRegressor,
    EnbPI,
    NexCP,
    QRFLearner,
    coverage,
    experiment,
    nestedness_rate,
)
from icml26.cqacp.data import lag_matrix, simulate_ar_garch


@pytest.fixture(scope="module")
def data():
    y, _ = simulate_ar_garch(T=330, seed=1)
    return lag_matrix(y, 3)


def _cq(**kw):
    kw.setdefault("quantile_learner", QRFLearner(n_estimators=5, random_state=0))
    kw.setdefault("window", 6)
    kw.setdefault("refit_every", 25)
    return CQACPRegressor(LinearRegression(), **kw)


# ------------------------------------------------------------------------------------------ set_params
@pytest.mark.parametrize("param, value, exc", [
    ("window", 0, ValueError), ("window", 4.5, ValueError), ("refit_every", -1, ValueError),
    ("gamma", "fast", TypeError), ("gamma", float("nan"), ValueError), ("n_max", 1, ValueError),
    ("tails", "narrow", ValueError), ("confidence_level", [0.9, 1.0], ValueError),
    ("tau_grid", [0.1, float("nan"), 0.9], ValueError), ("random_state", -3, ValueError),
    ("quantile_learner", LinearRegression(), TypeError), ("prefit", "yes", TypeError),
])
def test_set_params_is_validated_in_fit_and_conformalize(data, param, value, exc):
    X, y = data
    est = _cq().set_params(**{param: value})
    with pytest.raises(exc, match=param):
        est.fit(X[:150], y[:150]).conformalize(X[150:230], y[150:230])
    with pytest.raises(exc, match=param):  # the constructor says the same
        _cq(**{param: value})


def test_gamma_string_names_gamma_everywhere():
    for make in (lambda: CQACPRegressor(gamma="fast"), lambda: ACI(gamma="fast")):
        with pytest.raises(TypeError, match="gamma"):
            make()


@pytest.mark.parametrize("est, param, value", [
    (ACI(LinearRegression()), "gamma", -0.1), (ACI(LinearRegression()), "window", 0),
    (AgACI(LinearRegression()), "gammas", [0.01, float("inf")]), (NexCP(LinearRegression()), "rho", 0.0),
    (ConformalPID(LinearRegression()), "burnin", 1), (ConformalPID(LinearRegression()), "lr", "big"),
    (EnbPI(LinearRegression(), n_bootstrap=3), "n_bootstrap", 1.5),
    (SPCI(LinearRegression(), window=5), "n_beta", 1),
])
def test_baselines_validate_after_set_params(data, est, param, value):
    X, y = data
    est.set_params(**{param: value})
    with pytest.raises((ValueError, TypeError), match=param):
        est.fit(X[:150], y[:150]).conformalize(X[150:230], y[150:230])


def test_changed_parameters_refuse_the_old_state(data):
    X, y = data
    est = _cq().fit(X[:150], y[:150]).conformalize(X[150:230], y[150:230])
    est.set_params(window=7)
    for call in (lambda: est.predict_interval(X[230:232]), lambda: est.update(X[230:232], y[230:232]),
                 lambda: est.rolling_predict_interval(X[230:260], y[230:260])):
        with pytest.raises(ValueError, match="window changed since conformalize"):
            call()
    est.conformalize(X[150:230], y[150:230])               # rebuilding the state makes it usable again
    assert est.predict_interval(X[230:232])[1].shape == (2, 2, 1)
    nex = NexCP(LinearRegression()).fit(X[:150], y[:150]).conformalize(X[150:230], y[150:230])
    nex.set_params(rho=0.5)
    with pytest.raises(ValueError, match="rho"):
        nex.predict_interval(X[230:231])


def test_refit_discards_the_calibration_state(data):
    X, y = data
    est = _cq().fit(X[:150], y[:150]).conformalize(X[150:230], y[150:230])
    est.fit(X[:100], y[:100])                             # new point model: the old scores are stale
    with pytest.raises(RuntimeError, match="conformalize"):
        est.predict_interval(X[230:231])


def test_integral_floats_are_sizes_and_lists_read_like_arrays(data):
    X, y = data
    a = _cq(window=6, refit_every=25, confidence_level=[0.8, 0.9])
    b = _cq(window=6.0, refit_every=25.0, confidence_level=np.array([0.8, 0.9]))
    pa = a.fit(X[:150], y[:150]).conformalize(X[150:230], y[150:230]).rolling_predict_interval(X[230:], y[230:])[1]
    pb = b.fit(X[:150].tolist(), y[:150].tolist()).conformalize(X[150:230], y[150:230]).rolling_predict_interval(
        X[230:].tolist(), list(y[230:]))[1]
    np.testing.assert_array_equal(pa, pb)


def test_bad_data_names_the_argument(data):
    X, y = data
    est = _cq()
    with pytest.raises(TypeError, match="X_train"):
        est.fit("abc", y[:10])
    with pytest.raises(ValueError, match="y_train"):
        est.fit(X[:150], y[:149])
    est.fit(X[:150], y[:150]).conformalize(X[150:230], y[150:230])
    with pytest.raises(ValueError, match="X must have at least 1"):
        est.rolling_predict_interval(np.empty((0, 3)), np.empty(0))
    with pytest.raises(ValueError, match="X must be finite"):
        est.predict_interval(np.full((1, 3), np.inf))


@pytest.mark.parametrize("make", [lambda: _cq(), lambda: NexCP(LinearRegression()),
                                  lambda: EnbPI(LinearRegression(), n_bootstrap=3, random_state=0)])
def test_feature_count_must_match_the_point_model(data, make):
    X, y = data
    est = make().fit(X[:150], y[:150])
    with pytest.raises(ValueError, match="X_conformalize must have 3 feature"):
        est.conformalize(X[150:230, :2], y[150:230])
    est.conformalize(X[150:230], y[150:230])
    for call in (lambda: est.predict_interval(X[230:232, :2]), lambda: est.update(X[230:232, :2], y[230:232]),
                 lambda: est.rolling_predict_interval(X[230:240, :2], y[230:240])):
        with pytest.raises(ValueError, match="X must have 3 feature"):
            call()


def test_cf_curve_and_metrics_refuse_truncation_and_nan():
    with pytest.raises(ValueError, match="refine"):
        CornishFisherQuantileCurve(refine=2.5)
    with pytest.raises(ValueError, match=r"grid_size\[0\]"):
        CornishFisherQuantileCurve(grid_size=(50.5, 50))
    with pytest.raises(TypeError, match="taus"):
        CornishFisherQuantileCurve().fit("abc", [1, 2, 3])
    with pytest.raises(ValueError, match="z_range"):
        CornishFisherQuantileCurve(z_range=(0.0, float("nan")))
    pis = np.zeros((3, 2, 1))
    pis[0, 1, 0] = np.nan
    with pytest.raises(ValueError, match="y_pis"):
        coverage(np.zeros(3), pis)
    with pytest.raises(ValueError, match="y must be finite"):
        coverage([0.0, np.nan, 1.0], np.zeros((3, 2)))
    with pytest.raises(ValueError, match="confidence_levels"):
        nestedness_rate(np.zeros((3, 2, 1)), [1.5])
    assert coverage([0.0, 1.0], [[-np.inf, np.inf], [2.0, 3.0]]) == 0.5   # infinite bounds are allowed


# ------------------------------------------------------------------------------------------ one bootstrap
def test_bootstrap_loo_known_answer_and_shared_by_both_users(data):
    from icml26.cqacp._online import bootstrap_loo

    X, y = data
    models, idx, loo, keep = bootstrap_loo(LinearRegression(), X[:120], y[:120], 6, 10, 3)
    preds = np.stack([m.predict(X[:120]) for m in models])
    for i in (0, 37, 119):
        out = [b for b in range(6) if i not in idx[b]]
        assert keep[i] == bool(out)
        if out:
            assert loo[i] == pytest.approx(preds[out, i].mean(), rel=1e-12)
    enb = EnbPI(LinearRegression(), n_bootstrap=6, block_length=10, random_state=3).fit(X[:120], y[:120])
    cq = _cq(residuals="enbpi", n_bootstrap=6, block_length=10, random_state=3, score="signed").fit(X[:120], y[:120])
    np.testing.assert_array_equal(enb.resid_, y[:120][keep] - loo[keep])
    np.testing.assert_array_equal(cq.scores_, enb.resid_)


def test_shared_steps_have_one_implementation():
    # the symmetric |score| baselines use the one _AbsScoreMethod._offsets; CQACP keeps the base conformalize
    for cls in (ACI, NexCP, ConformalPID):
        assert "_offsets" not in vars(cls)
    assert "conformalize" not in vars(CQACPRegressor)


def test_abs_score_offsets_clip_negative_and_keep_infinite(data):
    X, y = data
    est = ACI(LinearRegression(), [0.8, 0.9]).fit(X[:150], y[:150]).conformalize(X[150:230], y[150:230])
    est.alpha_t_ = np.array([1.5, -0.1])                 # alpha_t >= 1: a point; alpha_t <= 0: infinite
    lo, hi = est._offsets()
    assert lo[0] == 0.0 and hi[0] == 0.0 and hi[1] == np.inf and lo[1] == -np.inf


# ------------------------------------------------------------------------------------------ level coupling
@pytest.mark.filterwarnings("ignore:levels")
def test_levels_inside_the_grid_are_independent_and_outside_ones_are_flagged(data):
    X, y = data
    base = _cq(confidence_level=[0.8, 0.9]).fit(X[:150], y[:150]).conformalize(X[150:230], y[150:230])
    more = _cq(confidence_level=[0.8, 0.9, 0.95]).fit(X[:150], y[:150]).conformalize(X[150:230], y[150:230])
    p1 = base.rolling_predict_interval(X[230:], y[230:])[1]
    p2 = more.rolling_predict_interval(X[230:], y[230:])[1]
    np.testing.assert_array_equal(p1, p2[:, :, :2])          # 95 % needs taus inside the grid: no coupling
    with pytest.warns(UserWarning, match="changes the fit at the other levels"):
        _cq(confidence_level=[0.8, 0.9, 0.99]).fit(X[:150], y[:150]).conformalize(X[150:230], y[150:230])


# ------------------------------------------------------------------------------------------ config
def test_validate_config_rejects_bad_values_naming_the_key():
    ok = dict(experiment.CONFIGS["small"])
    for name in experiment.CONFIGS:
        experiment.validate_config({**experiment.CONFIGS[name], "scale": name})
    for key, value in (("n_seeds", 0), ("window", 2.5), ("levels", [0.8, 0.95]), ("methods", ["CQACP(XYZ)"]),
                       ("train_frac", 1.0), ("backend", "ray"), ("sim_series", "ar_garch"), ("seed", None)):
        with pytest.raises((ValueError, TypeError), match=key):
            experiment.validate_config({**ok, key: value})
    with pytest.raises(ValueError, match="unknown key"):
        experiment.validate_config({**ok, "widnow": 3})
    with pytest.raises(ValueError, match="n_seeds"):
        experiment.run({**experiment.CONFIGS["smoke"], "n_seeds": 0})   # run validates before compute
    assert set(experiment.CONFIG_HELP) == set(experiment.CONFIGS["small"])
    assert set(experiment.EXPECTED_RUNTIME_S) == set(experiment.CONFIGS)


# ------------------------------------------------------------------------------------------ gates can fail
def _cells(cq_nest=1.0, qd_nest=0.5, spci_nest=0.9, tv_ratio=0.8, cov=0.9, width_ratio=1.0):
    cells = []
    for series, seed in (("ar_garch", 0), ("ar_garch", 1), ("hetero_ar", 0), ("hetero_ar", 1), ("elnino", 0),
                         ("co2", 0), ("sunspots", 0), ("infl", 0)):
        m = {"CQACP(QR)": {"nestedness": cq_nest, "width_tv": [tv_ratio] * 3, "coverage": [0.8, 0.9, 0.95],
                           "width": [1.0] * 3},
             "QR-direct": {"nestedness": qd_nest, "width_tv": [1.0] * 3, "coverage": [0.78, 0.88, 0.93],
                           "width": [1.0] * 3},
             "CQACP(QRF-SPCI)": {"nestedness": 1.0, "width_tv": [1.0] * 3, "coverage": [0.8, cov, 0.95],
                                 "width": [width_ratio] * 3},
             "SPCI": {"nestedness": spci_nest, "width_tv": [1.0] * 3, "coverage": [0.8, 0.9, 0.95],
                      "width": [1.0] * 3}}
        cells.append({"series": series, "seed": seed, "n_test": 600, "methods": m})
    return cells


def _gate(cells, cid):
    cfg = {**experiment.CONFIGS["small"], "methods": ["CQACP(QR)", "QR-direct", "CQACP(QRF-SPCI)", "SPCI"]}
    claims = {c.id: c for c in experiment._claims(cfg, cells, 1)}
    return claims[cid]


@pytest.mark.parametrize("cid, broken", [
    ("C1", {"qd_nest": 0.95}), ("C1", {"spci_nest": 1.0}), ("C1-cqacp", {"cq_nest": 0.99}),
    ("C2", {"tv_ratio": 0.97}), ("C3", {"cov": 0.83}), ("C4", {"width_ratio": 1.2}),
])
def test_each_gate_can_fail(cid, broken):
    assert _gate(_cells(), cid).verdict == "held"          # the good arm holds ...
    bad = _gate(_cells(**broken), cid)
    assert bad.verdict == "not held" and bad.paper         # ... the deliberately broken one does not
    assert bad.kind == ("sanity" if cid == "C1-cqacp" else "gate")


def test_a_tiny_sample_is_inconclusive():
    # one seed of each simulated series: a t interval over one seed is unbounded, so C3 cannot be decided
    cells = [c for c in _cells() if c["seed"] == 0]
    c3 = _gate(cells, "C3")
    assert c3.verdict == "inconclusive" and "at least 3 seeds" in c3.details
    # two series: the t interval over series of C4 is too wide to clear 1.10 at a ratio of 1.05
    two = [c for c in _cells(width_ratio=1.05) if c["series"] in ("ar_garch", "elnino")]
    two[1] = {**two[1], "methods": {**two[1]["methods"], "CQACP(QRF-SPCI)": {
        **two[1]["methods"]["CQACP(QRF-SPCI)"], "width": [1.12] * 3}}}
    assert _gate(two, "C4").verdict == "inconclusive"


def test_claim_details_say_what_holds_by_construction_and_what_decides():
    c1s = _gate(_cells(), "C1-cqacp")
    assert "holds by construction" in c1s.details and c1s.decision.exact
    assert "Can fail" in _gate(_cells(), "C1").details
    cells = _cells(cov=0.86)
    cells[1]["methods"]["CQACP(QRF-SPCI)"]["coverage"][1] = 0.93        # seeds disagree by more than the margin
    c3 = _gate(cells, "C3")
    assert c3.verdict == "inconclusive" and "would decide it" in c3.details
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "held" in _gate(_cells(cov=0.9), "C3").details
