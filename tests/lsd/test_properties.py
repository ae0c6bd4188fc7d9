"""Property tests (hypothesis): the public entry points given generated bad and edge-case input either return a
valid answer (finite, right shape) or raise ValueError/TypeError naming an argument; never NaN out of finite
input, never a silent truncation."""

import warnings

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from icml26.lsd import BAOAB, Harmonic, LangevinSpeculativeDynamics, reflection_maximal_coupling, serial_langevin, theory

FLOATS = st.floats(allow_nan=True, allow_infinity=True)
# bad values of every kind for sizes that drive loops, without valid sizes large enough to run for minutes
BAD_OR_SMALL = st.one_of(st.floats(min_value=-3, max_value=3), st.integers(-3, 3),
                         st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e300, 2.5, "2", None, True]))
SCALAR = st.one_of(FLOATS, st.integers(-10**6, 10**6), st.booleans(), st.none(), st.text(max_size=2))
ARRAY = st.one_of(SCALAR, st.lists(FLOATS, max_size=4),
                  hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4), elements=FLOATS))
SMALL = st.one_of(st.floats(1e-3, 2.0), SCALAR)
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def valid_or_named(fn, names):
    try:
        return fn()
    except (ValueError, TypeError) as e:
        assert any(n in str(e) for n in names), f"error does not name {names}: {e!r}"
        return None


@SETTINGS
@given(x=ARRAY, mu_d=ARRAY, mu_t=ARRAY, sigma=ARRAY, u=SCALAR)
def test_coupling(x, mu_d, mu_t, sigma, u):
    out = valid_or_named(lambda: reflection_maximal_coupling(x, mu_d, mu_t, sigma, u),
                         ["x_draft", "mu_draft", "mu_target", "sigma", "u"])
    if out is not None:
        y, acc, delta = out
        assert np.shape(y) == np.shape(x) and not np.any(np.isnan(y)) and delta >= 0 and isinstance(acc, bool)


@SETTINGS
@given(timestep=SMALL, friction=SMALL, kT=SMALL, masses=ARRAY)
@example(timestep=3.557264742912355e+207, friction=1.0, kT=1.021547899740211e+202, masses=1)  # overflowed to inf
def test_baoab(timestep, friction, kT, masses):
    integ = valid_or_named(lambda: BAOAB(timestep=timestep, friction=friction, kT=kT, masses=masses),
                           ["timestep", "friction", "kT", "masses"])
    if integ is None:
        return
    n = 1 if np.ndim(masses) == 0 else len(masses)
    sig = valid_or_named(lambda: integ.sigma(n), ["masses"])
    if sig is not None:
        assert sig.shape == (n, 1) and np.all(np.isfinite(sig)) and np.all(sig >= 0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(x0=st.one_of(ARRAY, hnp.arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(1, 3)),
                                      elements=st.floats(-2, 2))),
       lookahead=st.one_of(st.integers(-1, 6), BAD_OR_SMALL), n_steps=st.one_of(st.integers(-1, 30), BAD_OR_SMALL),
       record_every=st.one_of(st.integers(-1, 5), BAD_OR_SMALL), seed=st.one_of(st.integers(-1, 5), SCALAR))
def test_lsd_run(x0, lookahead, n_steps, record_every, seed):
    integ = BAOAB(timestep=0.1, friction=1.0, kT=1.0)
    sim = valid_or_named(lambda: LangevinSpeculativeDynamics(Harmonic(1.0), Harmonic(1.2), integ, lookahead=lookahead,
                                                             seed=seed), ["lookahead", "seed"])
    if sim is None:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = valid_or_named(lambda: sim.run(x0, n_steps=n_steps, record_every=record_every),
                            ["x0", "n_steps", "record_every"])
    if tr is None:
        return
    n = int(n_steps)
    assert tr.stats.steps == n and tr.stats.round_lengths.sum() == n
    assert np.all(np.isfinite(tr.positions)) and tr.positions.shape[1:] == np.shape(x0)
    ser = serial_langevin(Harmonic(1.0), integ, x0, n_steps=n, seed=seed, record_every=record_every)
    assert ser.positions.shape == tr.positions.shape


@SETTINGS
@given(delta=ARRAY, alpha=SCALAR, K=SCALAR, dF=ARRAY, masses=ARRAY, h=SMALL, gamma=SMALL, kT=SMALL)
def test_theory(delta, alpha, K, dF, masses, h, gamma, kT):
    a = valid_or_named(lambda: theory.acceptance_probability(delta), ["delta"])
    if a is not None:
        assert np.all((np.asarray(a) >= 0) & (np.asarray(a) <= 1))
    e = valid_or_named(lambda: theory.expected_steps_per_round(alpha, K), ["alphas", "lookahead"])
    if e is not None:
        assert 1 <= e <= int(K)
    d = valid_or_named(lambda: theory.first_step_delta(dF, masses, h, gamma, kT),
                       ["delta_forces", "masses", "timestep", "friction", "kT"])
    if d is not None:
        assert d >= 0 and not np.isnan(d)
