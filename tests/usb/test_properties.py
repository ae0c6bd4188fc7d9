"""Property tests (hypothesis) for icml26.usb: the estimator, its fields, the simulator, the coupling and the
rate split either give a valid answer or raise a ValueError/TypeError naming the offending argument."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("ot")

from icml26.usb import UnbalancedSchrodingerBridge, semi_relaxed_uot, split_birth_death  # noqa: E402

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                          HealthCheck.function_scoped_fixture])
_RNG = np.random.default_rng(0)
SNAPS = [_RNG.normal(0, 0.2, (20 + 5 * k, 2)) + [k, 0.0] for k in range(3)]
TIMES = [0.0, 1.0, 2.0]
MODEL = UnbalancedSchrodingerBridge(n_iter=5, seed=0, hidden=(8, 8)).fit(SNAPS, TIMES)

odd = st.sampled_from([float("nan"), float("inf"), -1.0, 0.0, "x", None, True])
num = lambda lo, hi: st.one_of(st.floats(lo, hi), odd)  # noqa: E731
size = lambda lo, hi: st.one_of(st.integers(lo, hi), st.floats(lo, hi), odd)  # noqa: E731


def _names(err: Exception, names) -> bool:
    return any(n in str(err) for n in names)


@SETTINGS
@given(sigma=num(0.01, 1.0), reg_m=num(0.1, 5.0), n_iter=size(0, 4), batch_size=size(1, 64), lr=num(1e-4, 1e-1),
       seed=size(0, 5), hidden=st.one_of(st.just((8,)), st.just([8.0, 4]), st.just((8.5,)), st.just(()),
                                        st.just((0,))),
       reference_rates=st.one_of(st.just((0.0, 0.0)), st.just((0.2, 0.1)), st.just((-1.0, 0.0)),
                                 st.just((0.1,)), st.just((float("nan"), 0.0))))
def test_estimator_parameters(sigma, reg_m, n_iter, batch_size, lr, seed, hidden, reference_rates):
    params = dict(sigma=sigma, reg_m=reg_m, n_iter=n_iter, batch_size=batch_size, lr=lr, seed=seed, hidden=hidden,
                  reference_rates=reference_rates)
    try:
        m = UnbalancedSchrodingerBridge(**params).fit(SNAPS, TIMES)
    except (ValueError, TypeError) as e:
        assert _names(e, params), f"{type(e).__name__} names no argument: {e}"
        return
    assert len(m.loss_history_) == n_iter and np.isfinite(m.loss_history_).all()
    g = m.growth(SNAPS[1], 1.0)
    assert g.shape == (len(SNAPS[1]),) and np.isfinite(g).all()


@st.composite
def points(draw):
    n = draw(st.integers(0, 12))
    d = draw(st.sampled_from([1, 2, 3]))
    x = np.asarray(draw(st.lists(st.floats(-3, 3), min_size=n * d, max_size=n * d)), dtype=float).reshape(n, d)
    if n and draw(st.booleans()):
        x[draw(st.integers(0, n - 1)), 0] = draw(st.sampled_from([np.nan, np.inf]))
    return x.tolist() if draw(st.booleans()) else x


@SETTINGS
@given(x0=points(), t_eval=st.one_of(st.just([0.0, 1.0, 2.0]), st.just([1.0, 0.5]), st.just([]),
                                    st.just(1.5), st.just([0.0, float("nan")]), st.just("abc"),
                                    st.lists(st.floats(0, 2), min_size=2, max_size=3, unique=True).map(sorted)),
       mode=st.sampled_from(["discrete", "weighted", "ode", "jump"]), dt=st.one_of(st.none(), num(0.01, 0.5)),
       seed=size(0, 3), t=num(0.0, 2.0))
def test_fields_and_simulate(x0, t_eval, mode, dt, seed, t):
    names = ("x0", "x", "t_eval", "mode", "dt", "seed", "t")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        try:
            g = MODEL.growth(x0, t)
            assert g.shape == (len(np.asarray(x0)),) and np.isfinite(g).all()
        except (ValueError, TypeError) as e:
            assert _names(e, names), f"{type(e).__name__} names no argument: {e}"
        try:
            sim = MODEL.simulate(x0, t_eval, mode=mode, dt=dt, seed=seed)
        except (ValueError, TypeError) as e:
            assert _names(e, names), f"{type(e).__name__} names no argument: {e}"
            return
    arr = np.asarray(x0, dtype=float)
    assert arr.ndim == 2 and arr.shape[1] == 2 and np.isfinite(arr).all() and len(arr) > 0
    assert len(sim.positions) == len(t_eval) and all(np.isfinite(p).all() for p in sim.positions)
    if sim.weights is not None:
        assert all(np.isfinite(w).all() and (w >= 0).all() for w in sim.weights)


@SETTINGS
@given(x0=points(), x1=points(), eps=num(0.01, 1.0), reg_m=num(0.1, 10.0), m0=st.one_of(num(0.5, 2.0),
                                                                                        st.just([1.0, 2.0])))
def test_semi_relaxed_uot(x0, x1, eps, reg_m, m0):
    names = ("x0", "x1", "eps", "reg_m", "m0")
    try:
        p = semi_relaxed_uot(x0, x1, m0=m0, eps=eps, reg_m=reg_m)
    except (ValueError, TypeError) as e:
        assert _names(e, names), f"{type(e).__name__} names no argument: {e}"
        return
    assert np.isfinite(p.plan).all() and (p.plan >= 0).all()
    np.testing.assert_allclose(p.plan.sum(0), p.b, rtol=1e-5)              # target marginal is hard
    assert np.isfinite(p.log_growth).all()


@SETTINGS
@given(g=st.one_of(st.lists(st.floats(-50, 50), max_size=8), st.just([0.1, float("nan")]), st.just("g"),
                   st.floats(-5, 5)), q_b=num(0.0, 2.0), q_d=num(0.0, 2.0), as_tensor=st.booleans())
def test_split_birth_death(g, q_b, q_d, as_tensor):
    arg = torch.tensor(g, dtype=torch.float64) if as_tensor and isinstance(g, list) else g
    try:
        beta, delta = split_birth_death(arg, q_b, q_d)
    except (ValueError, TypeError) as e:
        assert _names(e, ("g", "q_b", "q_d", "reference rates")), f"{type(e).__name__} names no argument: {e}"
        return
    b, d = np.asarray(beta, dtype=float), np.asarray(delta, dtype=float)
    assert np.isfinite(b).all() and (b >= 0).all() and (d >= 0).all()
    ga = np.asarray(g, dtype=float)
    np.testing.assert_allclose(b - d, ga, atol=1e-9 * (1 + np.abs(ga).max(initial=0)))
