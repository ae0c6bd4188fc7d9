"""Adaptive bandit learning in contextual matching markets (Lin, Mauras, Perchet, Merlis; ICML 2026,
arXiv:2605.28290) - stable-matching utilities, a contextual market environment and bandit policies.

The paper's algorithms are reconstructions from its abstract (marked [R] in the docstrings); see
docs/matching_bandits.md.

    from icml26.matching_bandits import ContextualMarket, AdaptiveCertifiedGS, simulate
    env = ContextualMarket(3, 4, 3, contexts="finite", min_gap=0.1, noise=0.2, seed=0)
    trace = simulate(env, AdaptiveCertifiedGS(noise=0.2, beta_scale=0.5), T=8000)
    trace.cumulative_regret()[-1], trace.n_refine
"""

from icml26.matching_bandits.algorithms import (
    AdaptiveCertifiedGS,
    Certificate,
    MatchingPolicy,
    OptimisticGS,
    RidgeStats,
    certify_player_optimal,
)
from icml26.matching_bandits.baselines import ExploreThenCommitGS, GreedyGS, OracleGS, RandomMatching, random_matching
from icml26.matching_bandits.env import (
    ContextSampler,
    ContextualMarket,
    FiniteContexts,
    GaussianContexts,
    NearTieAdversary,
    SequenceContexts,
    SphereContexts,
    SubspaceSwitchAdversary,
    finite_min_gap,
)
from icml26.matching_bandits.market import (
    all_stable_matchings,
    arm_rank_from_scores,
    blocking_pairs,
    gale_shapley,
    gale_shapley_batch,
    instability,
    is_stable,
    player_optimal,
    player_pessimal,
)
from icml26.matching_bandits.simulation import Trace, fit_growth_exponent, regret_curves, simulate

__all__ = [
    "gale_shapley", "gale_shapley_batch", "player_optimal", "player_pessimal", "is_stable", "blocking_pairs",
    "instability", "all_stable_matchings", "arm_rank_from_scores",
    "ContextualMarket", "ContextSampler", "FiniteContexts", "GaussianContexts", "SphereContexts",
    "NearTieAdversary", "SubspaceSwitchAdversary", "SequenceContexts", "finite_min_gap",
    "MatchingPolicy", "RidgeStats", "Certificate", "certify_player_optimal", "AdaptiveCertifiedGS", "OptimisticGS",
    "GreedyGS", "ExploreThenCommitGS", "RandomMatching", "OracleGS", "random_matching",
    "Trace", "simulate", "regret_curves", "fit_growth_exponent",
]
