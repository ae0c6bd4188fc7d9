"""Property tests (hypothesis): the public entry points either give a valid answer or raise a
ValueError/TypeError that names the offending argument - never NaN from finite input, never a silent
truncation."""

import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LinearRegression

from icml26.cqacp import TAU_GRID, CornishFisherQuantileCurve, CQACPRegressor, NexCP, QRFLearner, coverage, width_tv

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_y = np.cumsum(np.random.default_rng(0).normal(size=140)) * 0.1 + np.random.default_rng(1).normal(size=140)
X_OK, Y_OK = np.stack([_y[1:-1], _y[:-2]], 1), _y[2:]

bad_number = st.one_of(st.just(float("nan")), st.just(float("inf")), st.just("3"), st.just(None), st.just(True),
                       st.floats(-5, 5), st.integers(-3, 3))
sizes = st.one_of(st.integers(-2, 12), st.floats(-2, 12), st.just("4"), st.just(None))
levels = st.one_of(st.floats(-0.5, 1.5), st.just(float("nan")), st.lists(st.floats(0.01, 0.99), min_size=0, max_size=4),
                   st.just([0.9, float("nan")]), st.just("0.9"))


def _names_argument(err: Exception, names) -> bool:
    return any(n in str(err) for n in names)


@SETTINGS
@given(window=sizes, refit_every=sizes, gamma=bad_number, confidence_level=levels,
       adapt=st.sampled_from([None, "aci", "ACI"]), score=st.sampled_from(["signed", "absolute", "abs"]),
       via_set_params=st.booleans())
def test_cqacp_regressor_parameters(window, refit_every, gamma, confidence_level, adapt, score, via_set_params):
    params = dict(window=window, refit_every=refit_every, gamma=gamma, confidence_level=confidence_level,
                  adapt=adapt, score=score)
    try:
        if via_set_params:
            est = CQACPRegressor(LinearRegression(), QRFLearner(n_estimators=3, random_state=0)).set_params(**params)
        else:
            est = CQACPRegressor(LinearRegression(), QRFLearner(n_estimators=3, random_state=0), **params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            est.fit(X_OK[:60], Y_OK[:60]).conformalize(X_OK[60:100], Y_OK[60:100])
            yp, pis = est.rolling_predict_interval(X_OK[100:], Y_OK[100:])
    except (ValueError, TypeError) as e:
        assert _names_argument(e, params), f"{type(e).__name__} names no argument: {e}"
        return
    L = np.atleast_1d(confidence_level).size
    assert yp.shape == (len(Y_OK) - 100,) and pis.shape == (len(Y_OK) - 100, 2, L)
    assert not np.isnan(pis).any() and np.all(pis[:, 1] >= pis[:, 0])
    assert est._w == window and isinstance(est._w, int)          # the size used is the size given


@st.composite
def arrays(draw):
    n = draw(st.integers(0, 70))
    d = draw(st.sampled_from([1, 2, 3]))
    x = np.asarray(draw(st.lists(st.floats(-10, 10), min_size=n * d, max_size=n * d)), dtype=float).reshape(n, d)
    if n and draw(st.booleans()):
        x[draw(st.integers(0, n - 1)), 0] = draw(st.sampled_from([np.nan, np.inf]))
    return x


@SETTINGS
@given(X=arrays(), y_len_delta=st.integers(-2, 1), as_list=st.booleans(), method=st.sampled_from(["cqacp", "nexcp"]))
def test_online_methods_data(X, y_len_delta, as_list, method):
    n = len(X)
    y = X[:, 0] + 0.5 * np.sin(np.arange(n)) if n else np.empty(0)
    y = y[:max(0, n + y_len_delta)] if y_len_delta <= 0 else np.append(y, 0.0)
    est = (CQACPRegressor(LinearRegression(), QRFLearner(n_estimators=3, random_state=0), window=3, refit_every=7)
           if method == "cqacp" else NexCP(LinearRegression()))
    names = ("X_train", "y_train", "X_conformalize", "y_conformalize", "window", "X", "y")
    a, b = n // 3, 2 * n // 3
    Xi, yi = (X.tolist(), y.tolist()) if as_list else (X, y)
    try:
        est.fit(Xi, yi)                                 # whole arrays first: a length mismatch must be caught
        est.fit(Xi[:a], yi[:a]).conformalize(Xi[a:b], yi[a:b])
        yp, pis = est.rolling_predict_interval(Xi[b:], yi[b:])
    except (ValueError, TypeError) as e:
        assert _names_argument(e, names), f"{type(e).__name__} names no argument: {e}"
        return
    assert np.isfinite(X).all() and len(y) == n
    assert not np.isnan(pis).any() and np.all(pis[:, 1] >= pis[:, 0])


@SETTINGS
@given(q=st.lists(st.one_of(st.floats(-1e3, 1e3), st.sampled_from([np.nan, np.inf])), min_size=0, max_size=16),
       taus=st.one_of(st.just(TAU_GRID), st.lists(st.floats(-0.2, 1.2), min_size=0, max_size=16)),
       monotone=st.sampled_from(["range", "global", "none", "Range"]),
       weights=st.one_of(st.none(), st.lists(st.one_of(st.floats(-1, 2), st.just(np.nan)), min_size=0, max_size=16)))
def test_cornish_fisher_fit(q, taus, monotone, weights):
    names = ("quantiles", "taus", "Q", "weights", "monotone", "levels")
    try:
        cf = CornishFisherQuantileCurve(monotone=monotone).fit(taus, q, weights=weights)
    except (ValueError, TypeError) as e:
        assert _names_argument(e, names), f"{type(e).__name__} names no argument: {e}"
        return
    assert np.isfinite(q).all()
    out = cf.quantile(np.linspace(0.001, 0.999, 200))
    assert np.isfinite(out).all()
    if monotone != "none":
        assert np.all(np.diff(out) >= -1e-9 * (1 + np.abs(out[:-1])))


@SETTINGS
@given(n=st.integers(0, 6), L=st.integers(1, 3), nan=st.booleans(), inf=st.booleans(), shape_off=st.booleans())
def test_metrics(n, L, nan, inf, shape_off):
    rng = np.random.default_rng(n * 7 + L)
    lo = rng.normal(size=(n, L)) - 1
    pis = np.stack([lo, lo + 2], 1)
    y = rng.normal(size=n + (1 if shape_off else 0))
    if nan and n:
        pis[0, 0, 0] = np.nan
    if inf and n:
        pis[-1, 1, -1] = np.inf
    try:
        cov = coverage(y, pis)
        tv = width_tv(pis)
    except (ValueError, TypeError) as e:
        assert _names_argument(e, ("y_pis", "y")), str(e)
        return
    assert n > 1 and not (nan or shape_off)
    assert np.all((0 <= cov) & (cov <= 1))
    assert np.asarray(tv).shape == (L,)
