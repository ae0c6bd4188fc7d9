"""Property tests (hypothesis): the public entry points given generated bad and edge-case input either return a
valid answer (finite, right shape, in range) or raise ValueError/TypeError naming an argument; never NaN out of
finite input, never a silent truncation."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from icml26.tie import (EngineConfig, FCFSQueue, HashingEncoder, LogT, LogTLengthPredictor, Request,
                        ServingSimulator, TIEQueue, Workload, adaptive_beta, fit_logt, poisson_arrivals,
                        starvation_decay, tie_score)

FLOATS = st.floats(allow_nan=True, allow_infinity=True)
SCALAR = st.one_of(FLOATS, st.integers(-10**6, 10**6), st.booleans(), st.none(), st.text(max_size=2))
ARRAY = st.one_of(SCALAR, st.lists(FLOATS, max_size=5), st.lists(st.integers(-5, 3000), max_size=5),
                  hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4), elements=FLOATS))
POS = st.one_of(st.floats(1e-3, 1e3), SCALAR)
# sizes that drive training loops: every bad kind of value, but no valid count large enough to train for minutes
BAD_OR_SMALL = st.one_of(st.floats(min_value=-3, max_value=3),
                         st.sampled_from([math.nan, math.inf, -math.inf, 1e300, 2.5, "2", None, True]))
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def valid_or_named(fn, names):
    """fn() or a ValueError/TypeError whose message names one of `names`; returns the result or None."""
    try:
        return fn()
    except (ValueError, TypeError) as e:
        assert any(n in str(e) for n in names), f"error does not name {names}: {e!r}"
        return None


@SETTINGS
@given(mu=ARRAY, sigma=ARRAY, alpha=POS, beta=ARRAY, max_tokens=POS)
def test_tie_score(mu, sigma, alpha, beta, max_tokens):
    out = valid_or_named(lambda: tie_score(mu, sigma, alpha=alpha, beta=beta, max_tokens=max_tokens),
                         ["mu", "sigma", "alpha", "beta", "max_tokens"])
    if out is not None:
        out = np.asarray(out)
        b = np.max(np.asarray(beta, float))
        assert np.all(np.isfinite(out)) and np.all(out >= 0) and np.all(out <= (1 + b) * float(max_tokens) * (1 + 1e-9))
        assert out.shape == np.broadcast_shapes(np.shape(mu), np.shape(sigma), np.shape(beta))


@SETTINGS
@given(mu=ARRAY, sigma=ARRAY, q=ARRAY, x=ARRAY, alpha=POS)
def test_logt_methods(mu, sigma, q, x, alpha):
    d = valid_or_named(lambda: LogT(mu, sigma), ["mu", "sigma"])
    if d is None:
        return
    for fn, names in ((lambda: d.censored_mean(), []), (lambda: d.cvar(alpha), ["alpha"]),
                      (lambda: d.quantile(q, censored=True), ["q"]), (lambda: d.cdf(x), ["x"])):
        out = valid_or_named(fn, names or ["(none)"])
        if out is not None:
            assert not np.any(np.isnan(out))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(samples=st.one_of(ARRAY, st.lists(st.lists(st.integers(-3, 3000), max_size=4), max_size=4)),
       nu=POS, censor_at=st.one_of(st.none(), POS), n_iter=st.one_of(st.integers(-2, 60), SCALAR))
def test_fit_logt(samples, nu, censor_at, n_iter):
    out = valid_or_named(lambda: fit_logt(samples, nu=nu, censor_at=censor_at, n_iter=n_iter),
                         ["samples", "nu", "censor_at", "n_iter"])
    if out is not None:
        mu, sigma, ks = out
        n = len(samples)  # one row per prompt: never silently re-shaped
        assert mu.shape == sigma.shape == ks.shape == (n,)
        assert np.all(np.isfinite(mu)) and np.all(sigma > 0) and np.all((ks >= 0) & (ks <= 1))


@SETTINGS
@given(queue_len=SCALAR, max_num_seqs=SCALAR, score=ARRAY, wait=ARRAY, gamma=POS, tau=POS)
def test_beta_and_decay(queue_len, max_num_seqs, score, wait, gamma, tau):
    b = valid_or_named(lambda: adaptive_beta(queue_len, max_num_seqs), ["queue_len", "max_num_seqs"])
    if b is not None:
        assert 0.1 <= b <= 0.5
    out = valid_or_named(lambda: starvation_decay(score, wait, gamma, tau), ["score", "wait_s", "gamma", "tau"])
    if out is not None:
        assert np.all(np.isfinite(out)) and np.all(np.asarray(out) <= np.asarray(score, float) + 1e-12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prompt_len=ARRAY, true_len=st.one_of(ARRAY, st.lists(st.integers(-2, 400), min_size=1, max_size=6)),
       arrival=ARRAY, max_num_seqs=st.one_of(st.integers(-1, 4), SCALAR), kv=st.one_of(st.integers(0, 4000), SCALAR),
       tie=st.booleans())
def test_simulator(prompt_len, true_len, arrival, max_num_seqs, kv, tie):
    w = valid_or_named(lambda: Workload(prompt_len, true_len, arrival), ["prompt_len", "true_len", "arrival"])
    cfg = valid_or_named(lambda: EngineConfig(max_num_seqs=max_num_seqs, kv_capacity_tokens=kv),
                         ["max_num_seqs", "kv_capacity_tokens"])
    if w is None or cfg is None:
        return
    q = TIEQueue(beta=0.1) if tie else FCFSQueue()
    if tie:
        w = w.with_features([{"mu": 3.0, "sigma": 0.5}] * len(w))
    m = valid_or_named(lambda: ServingSimulator(cfg, q).run(w), ["kv_capacity_tokens"])
    if m is not None:
        assert np.all(np.isfinite(m.finish)) and np.all(m.finish >= m.arrival)
        np.testing.assert_array_equal(m.emitted, w.true_len)


@SETTINGS
@given(rid=st.one_of(st.integers(), st.text(max_size=3), st.lists(st.integers(), max_size=1)),
       prompt_tokens=SCALAR, arrival=SCALAR, mu=SCALAR, sigma=SCALAR, beta=st.one_of(SCALAR, st.just("adaptive")),
       starvation=st.one_of(st.none(), st.tuples(POS, POS), SCALAR))
def test_request_and_queue(rid, prompt_tokens, arrival, mu, sigma, beta, starvation):
    q = valid_or_named(lambda: TIEQueue(beta=beta, starvation=starvation), ["beta", "starvation", "gamma", "tau"])
    r = valid_or_named(lambda: Request(rid, prompt_tokens, arrival, features={"mu": mu, "sigma": sigma}),
                       ["id", "prompt_tokens", "arrival"])
    if q is None or r is None:
        return
    if valid_or_named(lambda: q.add(r), ["features['mu']", "features['sigma']"]) is None and len(q) == 0:
        return
    assert np.isfinite(q.score(r)) and q.pop() is r and len(q) == 0


@SETTINGS
@given(n=SCALAR, rate=SCALAR)
def test_poisson_arrivals(n, rate):
    a = valid_or_named(lambda: poisson_arrivals(n, rate, 0), ["n", "rate"])
    if a is not None:
        assert len(a) == n and np.all(np.isfinite(a)) and np.all(np.diff(a) >= 0)


@pytest.fixture(scope="module")
def texts():
    return [f"write {i} words about topic {i % 7}" for i in range(24)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(lengths=st.one_of(ARRAY, st.lists(st.integers(-1, 3000), min_size=24, max_size=24)),
       epochs=st.one_of(st.integers(-1, 2), BAD_OR_SMALL),
       batch_size=st.one_of(st.integers(-1, 64), BAD_OR_SMALL, st.integers(10**5, 10**6)),
       target=st.sampled_from(["fit", "nll", "mse"]))
def test_predictor_fit(texts, lengths, epochs, batch_size, target):
    est = valid_or_named(lambda: LogTLengthPredictor(HashingEncoder(svd_dim=8), epochs=epochs, batch_size=batch_size,
                                                     target=target), ["epochs", "batch_size", "target"])
    if est is None:
        return
    if valid_or_named(lambda: est.fit(texts, lengths=lengths), ["lengths", "samples"]) is None:
        return
    mu, sigma = est.predict_params(texts[:3])
    assert np.all(np.isfinite(mu)) and np.all(sigma > 0)
