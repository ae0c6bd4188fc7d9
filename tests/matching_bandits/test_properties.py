"""Property tests (hypothesis): the public entry points given generated bad and edge-case input either return a
valid answer or raise ValueError/TypeError naming an argument; never NaN out of finite input, never a silent
truncation."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from icml26.matching_bandits import (AdaptiveCertifiedGS, ContextualMarket, OptimisticGS, arm_rank_from_scores,
                                     fit_growth_exponent, gale_shapley, instability, is_stable, simulate)

FLOATS = st.floats(allow_nan=True, allow_infinity=True)
# bad values of every kind for sizes that drive loops, without valid sizes large enough to run for minutes
BAD_OR_SMALL = st.one_of(st.floats(min_value=-3, max_value=3), st.integers(-3, 3),
                         st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e300, 2.5, "2", None, True]))
SCALAR = st.one_of(FLOATS, st.integers(-10, 10**4), st.booleans(), st.none(), st.text(max_size=2))
ARRAY = st.one_of(SCALAR, st.lists(FLOATS, max_size=4),
                  hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4), elements=FLOATS))
INTS = hnp.arrays(np.int64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=4), elements=st.integers(-2, 4))
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def valid_or_named(fn, names):
    try:
        return fn()
    except (ValueError, TypeError) as e:
        assert any(n in str(e) for n in names), f"error does not name {names}: {e!r}"
        return None


@SETTINGS
@given(U=ARRAY, scores=ARRAY, ranks=st.one_of(INTS, ARRAY), proposer=st.sampled_from(["players", "arms", "both"]))
def test_gale_shapley_and_stability(U, scores, ranks, proposer):
    for rank in (ranks, valid_or_named(lambda: arm_rank_from_scores(scores), ["scores"])):
        if rank is None:
            continue
        m = valid_or_named(lambda: gale_shapley(U, rank, proposer=proposer), ["U", "arm_rank", "proposer"])
        if m is None:
            continue
        N, K = np.shape(U)
        assert m.shape == (N,) and np.all((m >= -1) & (m < K))
        used = m[m >= 0]
        assert len(set(used.tolist())) == len(used)
        assert is_stable(U, rank, m) and instability(U, rank, m) == 0.0


@SETTINGS
@given(X=ARRAY, rank=st.one_of(INTS, ARRAY), match=st.one_of(INTS, ARRAY), rewards=ARRAY,
       optimistic=st.booleans())
def test_policy_select_update(X, rank, match, rewards, optimistic):
    pol = OptimisticGS() if optimistic else AdaptiveCertifiedGS()
    m = valid_or_named(lambda: pol.select(X, rank), ["X", "arm_rank"])
    if m is None:
        return
    K = np.shape(X)[0]
    assert m.shape == (np.shape(rank)[1],) and np.all((m >= -1) & (m < K))
    before = pol.theta_.copy()
    if valid_or_named(lambda: pol.update(X, match, rewards), ["X", "match", "rewards"]) is None:
        np.testing.assert_array_equal(pol.theta_, before)   # refused feedback leaves no trace
    assert np.all(np.isfinite(pol.theta_))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_players=st.one_of(st.integers(-1, 4), BAD_OR_SMALL), n_arms=st.one_of(st.integers(-1, 5), BAD_OR_SMALL),
       dim=st.one_of(st.integers(-1, 4), BAD_OR_SMALL), noise=SCALAR, T=st.one_of(st.integers(-1, 40), BAD_OR_SMALL),
       contexts=st.sampled_from(["finite", "sphere", "gaussian", "cubes"]))
def test_market_and_simulate(n_players, n_arms, dim, noise, T, contexts):
    env = valid_or_named(lambda: ContextualMarket(n_players, n_arms, dim, contexts=contexts, noise=noise, seed=0,
                                                  n_prototypes=8),
                         ["n_players", "n_arms", "dim", "noise", "contexts", "n_prototypes", "min_gap"])
    if env is None:
        return
    tr = valid_or_named(lambda: simulate(env, AdaptiveCertifiedGS(), T), ["T"])
    if tr is not None:
        assert tr.T == T and np.all(np.isfinite(tr.stable_regret)) and np.all(tr.instability >= 0)


@SETTINGS
@given(T_grid=ARRAY, R=ARRAY)
def test_fit_growth_exponent(T_grid, R):
    a = valid_or_named(lambda: fit_growth_exponent(T_grid, R), ["T_grid", "R"])
    if a is not None:
        assert np.isfinite(a)
