"""Regression tests of the input fixes (issue 14): each failed before its fix."""

import numpy as np
import pytest

from icml26.matching_bandits import (AdaptiveCertifiedGS, ContextSampler, ContextualMarket, ExploreThenCommitGS,
                                     OptimisticGS, arm_rank_from_scores, simulate)

RNG = np.random.default_rng(0)
X = RNG.normal(size=(4, 3)) / 3
R = arm_rank_from_scores(RNG.normal(size=(4, 3)))


def _started(policy):
    m = policy.select(X, R)
    return policy, m


def test_select_refuses_nan_contexts():
    for bad in (np.where(X > 0, np.nan, X), np.full_like(X, np.inf)):
        with pytest.raises(ValueError, match="X .*finite"):
            AdaptiveCertifiedGS().select(bad, R)


@pytest.mark.parametrize("match,err", [([0, 0, 1], "two players"), ([0, 5, 1], r"\[-1, 3\]"),
                                       ([0, 1, -2], r"\[-1, 3\]"), ([0, 1], "shape")])
def test_update_refuses_invalid_matchings(match, err):
    pol, _ = _started(OptimisticGS())
    theta = pol.theta_.copy()
    with pytest.raises(ValueError, match=err):
        pol.update(X, np.array(match), np.ones(3))
    np.testing.assert_array_equal(pol.theta_, theta)  # nothing was learned from the bad feedback


def test_update_refuses_nan_reward_of_a_matched_player_but_accepts_unmatched_nan():
    pol, m = _started(AdaptiveCertifiedGS())
    with pytest.raises(ValueError, match="rewards must be finite for every matched player"):
        pol.update(X, m, np.array([1.0, np.nan, 0.5]))
    m2 = m.copy()
    m2[1] = -1
    pol.update(X, m2, np.array([1.0, np.nan, 0.5]))  # unmatched: NaN is the documented placeholder
    assert pol.ridge.count.tolist() == [1, 0, 1]
    with pytest.raises(ValueError, match="X"):
        pol.update(X[:, :2], m, np.ones(3))


def test_parameters_changed_after_init_are_checked_at_the_next_market():
    pol = AdaptiveCertifiedGS()
    pol.lam = -1.0
    pol.reset()
    with pytest.raises(ValueError, match="lam"):
        pol.select(X, R)
    etc = ExploreThenCommitGS(T0=5)
    etc.T0 = 2.5
    etc.reset()
    with pytest.raises(ValueError, match="T0"):
        etc.select(X, R)
    with pytest.raises(ValueError, match="seed"):
        AdaptiveCertifiedGS(seed=-1)


def test_market_refuses_a_sampler_that_returns_nan():
    class NaNContexts(ContextSampler):
        def sample(self, t0, n, rng, market):
            return np.full((n, market.n_arms, market.dim), np.nan)

    env = ContextualMarket(3, 4, 3, contexts=NaNContexts(), noise=0.1, seed=0)
    with pytest.raises(ValueError, match="non-finite"):
        simulate(env, OptimisticGS(), T=5)
