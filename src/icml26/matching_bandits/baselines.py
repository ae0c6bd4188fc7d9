"""Baselines of spec section 4, behind the `MatchingPolicy` interface of `algorithms`.

- `GreedyGS`: GS on the ridge estimates, no bonus (strong under covariate diversity).
- `ExploreThenCommitGS`: T0 rounds of uniformly random matchings, then the estimates are FROZEN and GS on
  theta_hat^T x is played forever (CC-ETC, Li et al. 2022; ETC of Liu, Mania & Jordan 2020). An "ETC" that kept
  updating would be Greedy.
- `RandomMatching`: a uniformly random matching each round (linear-regret sanity check).
- `OracleGS`: GS on the true utilities (zero stable regret against the same benchmark).
"""

from __future__ import annotations

import numpy as np

from icml26.matching_bandits.algorithms import MatchingPolicy, _RidgePolicy
from icml26.matching_bandits.market import _gs_core

__all__ = ["GreedyGS", "ExploreThenCommitGS", "RandomMatching", "OracleGS", "random_matching"]


def random_matching(rng: np.random.Generator, n_players: int, n_arms: int) -> np.ndarray:
    """A uniformly random maximum matching: (N,) int64 (with N > K, a random set of K players is matched)."""
    perm = rng.permutation(n_arms)
    if n_players <= n_arms:
        return perm[:n_players].astype(np.int64)
    match = np.full(n_players, -1, dtype=np.int64)
    match[rng.permutation(n_players)[:n_arms]] = perm
    return match


class GreedyGS(_RidgePolicy):
    """Player-proposing GS on the ridge estimates theta_hat^T x (no exploration bonus). Args: lam (1.0)."""

    name = "greedy"

    def __init__(self, lam: float = 1.0, seed: int = 0):
        super().__init__(lam=lam, noise=0.0, S=1.0, beta_scale=0.0, seed=seed)

    def _select(self, X, arm_rank):
        return _gs_core(self.ridge.theta @ X.T, arm_rank, "players")

    def __repr__(self) -> str:
        return f"GreedyGS(lam={self.lam})"


class ExploreThenCommitGS(_RidgePolicy):
    """Explore-then-commit GS: rounds 1..T0 play uniformly random matchings and update the ridge estimates;
    afterwards the estimates are frozen (later updates are ignored) and GS(theta_hat^T x) is played.

    Args: T0 (exploration rounds, >= 0), lam (1.0), seed (exploration randomness).
    """

    name = "etc"

    def __init__(self, T0: int, lam: float = 1.0, seed: int = 0):
        if isinstance(T0, bool) or not isinstance(T0, (int, np.integer)) or T0 < 0:
            raise ValueError(f"T0 must be an int >= 0, got {T0!r}")
        self.T0 = int(T0)
        super().__init__(lam=lam, noise=0.0, S=1.0, beta_scale=0.0, seed=seed)

    def _check_params(self) -> None:
        super()._check_params()
        if isinstance(self.T0, bool) or not isinstance(self.T0, (int, np.integer)) or self.T0 < 0:
            raise ValueError(f"T0 must be an int >= 0, got {self.T0!r}")

    def _select(self, X, arm_rank):
        if self.t_ <= self.T0:
            self.last_refined_ = True
            return random_matching(self.rng, self.n_players_, X.shape[0])
        return _gs_core(self.ridge.theta @ X.T, arm_rank, "players")

    def _update(self, X, match, rewards):
        if self.t_ <= self.T0:  # freeze after the exploration phase
            super()._update(X, match, rewards)

    def __repr__(self) -> str:
        return f"ExploreThenCommitGS(T0={self.T0}, lam={self.lam})"


class RandomMatching(MatchingPolicy):
    """A uniformly random matching every round (`random_matching`). Args: seed."""

    name = "random"

    def _select(self, X, arm_rank):
        self.last_refined_ = True
        return random_matching(self.rng, self.n_players_, X.shape[0])

    def __repr__(self) -> str:
        return "RandomMatching()"


class OracleGS(MatchingPolicy):
    """GS on the true utilities theta^T x (knows theta (N, d)); proposer "players" (default) or "arms"."""

    name = "oracle"

    def __init__(self, theta: np.ndarray, proposer: str = "players", seed: int = 0):
        theta = np.asarray(theta, dtype=float)
        if theta.ndim != 2 or not np.all(np.isfinite(theta)):
            raise ValueError(f"theta must be a finite (n_players, dim) array, got shape {theta.shape}")
        if proposer not in ("players", "arms"):
            raise ValueError(f"proposer must be 'players' or 'arms', got {proposer!r}")
        self.theta = theta
        self.proposer = proposer
        super().__init__(seed)

    def _init(self, n_players, dim):
        if (n_players, dim) != self.theta.shape:
            raise ValueError(f"theta has shape {self.theta.shape} but the market has (n_players, dim) = "
                             f"({n_players}, {dim})")

    def _select(self, X, arm_rank):
        return _gs_core(self.theta @ X.T, arm_rank, self.proposer)

    def __repr__(self) -> str:
        return f"OracleGS(proposer={self.proposer!r})"
