"""The instance families of the reproduction (spec section 6) and a factory for the policies.

- "finite"  (E1/E2): unit-norm prototypes, each round K distinct ones drawn uniformly, theta_i unit norm,
  rejection-sampled until the minimum preference gap is >= min_gap; arm prefs linear (W Gaussian).
- "sphere"  (E3): contexts uniform on the unit sphere (no gap).
- "adversarial" (E4): sphere contexts, arm 1 = arm 0 + eps (-1)^t theta_0 + spread v (near-tie for player 0)
  and the last coordinate zeroed in alternate blocks of ``period`` rounds (`NearTieAdversary` over
  `SubspaceSwitchAdversary`).
- "gaussian": N(0, I/d) projected on the unit ball (offered for user studies, not in the claim checks).
"""

from __future__ import annotations

from typing import Any

from icml26.matching_bandits.algorithms import AdaptiveCertifiedGS, MatchingPolicy, OptimisticGS
from icml26.matching_bandits.baselines import ExploreThenCommitGS, GreedyGS, OracleGS, RandomMatching
from icml26.matching_bandits.env import ContextualMarket, NearTieAdversary, SphereContexts, SubspaceSwitchAdversary

__all__ = ["make_market", "make_policy", "POLICY_NAMES"]

MARKET_KEYS = ("n_players", "n_arms", "dim", "contexts", "n_prototypes", "min_gap", "noise", "arm_prefs",
               "benchmark", "period", "eps", "spread")


def make_market(spec: dict[str, Any], seed: int) -> ContextualMarket:
    """Build a market from an instance dict (keys of MARKET_KEYS; contexts in finite|sphere|gaussian|adversarial)."""
    unknown = set(spec) - set(MARKET_KEYS) - {"policies"}
    if unknown:
        raise ValueError(f"unknown instance keys {sorted(unknown)}; allowed: {MARKET_KEYS}")
    kind = spec.get("contexts", "finite")
    kw = dict(n_players=spec["n_players"], n_arms=spec["n_arms"], dim=spec["dim"], noise=spec["noise"],
              arm_prefs=spec.get("arm_prefs", "linear"), benchmark=spec.get("benchmark", "players"), seed=seed)
    if kind == "finite":
        return ContextualMarket(contexts="finite", n_prototypes=spec.get("n_prototypes", 6),
                                min_gap=spec.get("min_gap"), **kw)
    if kind in ("sphere", "gaussian"):
        return ContextualMarket(contexts=kind, **kw)
    if kind == "adversarial":
        sampler = NearTieAdversary(player=0, eps=spec.get("eps", 0.01), spread=spec.get("spread", 0.3),
                                   base=SubspaceSwitchAdversary(period=spec.get("period", 2000),
                                                                base=SphereContexts()))
        return ContextualMarket(contexts=sampler, **kw)
    raise ValueError(f"contexts must be finite|sphere|gaussian|adversarial, got {kind!r}")


POLICY_NAMES = ("adaptive", "adaptive_opt", "optimistic", "greedy", "etc20", "etc300", "etc2000", "random",
                "oracle")


def make_policy(name: str, env: ContextualMarket, *, beta_scale: float, lam: float = 1.0) -> MatchingPolicy:
    """Policy by name: adaptive (force), adaptive_opt (optimistic refine), optimistic, greedy, etc<T0>, random,
    oracle. The learning policies use the market's noise level as sigma and S = 1 (theta_i are unit norm)."""
    sigma = env.noise
    if name == "adaptive":
        return AdaptiveCertifiedGS(lam=lam, noise=sigma, S=1.0, beta_scale=beta_scale, refine="force")
    if name == "adaptive_opt":
        return AdaptiveCertifiedGS(lam=lam, noise=sigma, S=1.0, beta_scale=beta_scale, refine="optimistic")
    if name == "optimistic":
        return OptimisticGS(lam=lam, noise=sigma, S=1.0, beta_scale=beta_scale)
    if name == "greedy":
        return GreedyGS(lam=lam)
    if name.startswith("etc") and name[3:].isdigit():
        return ExploreThenCommitGS(int(name[3:]), lam=lam)
    if name == "random":
        return RandomMatching()
    if name == "oracle":
        return OracleGS(env.theta, proposer=env.benchmark_proposer)
    raise ValueError(f"unknown policy {name!r}; known: {POLICY_NAMES} (etc<T0> for any T0)")
