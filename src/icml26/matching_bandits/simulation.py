"""Run a policy in a market: `simulate` -> `Trace`, `regret_curves` at checkpoints, `fit_growth_exponent`.

Metrics per round t (spec section 2):
- stable regret of player i: u_i(t, m*_t(i)) - u_i(t, m_t(i)) against the market's benchmark m*_t (player-optimal
  stable matching by default); can be negative when m_t is unstable - never clipped. An unmatched player's
  utility is 0.
- instability Inst_t(m_t) (`market.instability`), the adversarial "tractable regret" increment [R].
- refined: the policy's ``last_refined_`` flag (refine round of AdaptiveCertifiedGS, exploration round of ETC,
  every round of RandomMatching); cert_size: ``last_cert_size_``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from icml26.common.validation import check_array, check_int
from icml26.matching_bandits.algorithms import MatchingPolicy
from icml26.matching_bandits.env import ContextualMarket
from icml26.matching_bandits.market import instability_batch

__all__ = ["Trace", "simulate", "regret_curves", "fit_growth_exponent"]


@dataclass
class Trace:
    """Per-round record of one run. Arrays: stable_regret (T, N), instability (T,), refined (T,) bool,
    cert_size (T,) int, matches (T, N) int32 (played), benchmark (T, N) int32."""

    stable_regret: np.ndarray
    instability: np.ndarray
    refined: np.ndarray
    cert_size: np.ndarray
    matches: np.ndarray
    benchmark: np.ndarray
    policy: str = ""

    @property
    def T(self) -> int:
        return self.instability.shape[0]

    def cumulative_regret(self) -> np.ndarray:
        """(T,) cumulative welfare gap sum_i R_i(t)."""
        return np.cumsum(self.stable_regret.sum(axis=1))

    def cumulative_player_regret(self) -> np.ndarray:
        """(T, N) cumulative stable regret R_i(t) of every player."""
        return np.cumsum(self.stable_regret, axis=0)

    def max_player_regret(self) -> np.ndarray:
        """(T,) max_i R_i(t)."""
        return self.cumulative_player_regret().max(axis=1)

    def cumulative_instability(self) -> np.ndarray:
        """(T,) instability regret I(t) = sum_{s <= t} Inst_s(m_s)."""
        return np.cumsum(self.instability)

    @property
    def n_refine(self) -> int:
        return int(self.refined.sum())


def simulate(env: ContextualMarket, policy: MatchingPolicy, T: int, seed: int | None = None,
             progress: bool = False) -> Trace:
    """Run ``policy`` for ``T`` rounds in ``env`` (both are reset first; ``seed`` reseeds the policy).

    The market's streams are reset too, so every policy run on the same market sees the same contexts, arm
    preferences and reward noise. Returns a `Trace`.
    """
    if not isinstance(env, ContextualMarket):
        raise TypeError(f"env must be a ContextualMarket, got {type(env).__name__}")
    if not isinstance(policy, MatchingPolicy):
        raise TypeError(f"policy must be a MatchingPolicy, got {type(policy).__name__}")
    T = check_int(T, "T", min=1)
    env.reset()
    policy.reset(seed)
    N, K = env.n_players, env.n_arms
    regret = np.empty((T, N))
    inst = np.empty(T)
    refined = np.zeros(T, dtype=bool)
    cert = np.zeros(T, dtype=np.int64)
    matches = np.empty((T, N), dtype=np.int32)
    bench = np.empty((T, N), dtype=np.int32)
    blk = min(T, 1024)
    bU = np.empty((blk, N, K))
    bR = np.empty((blk, K, N), dtype=np.int64)
    bM = np.empty((blk, N), dtype=np.int64)
    bB = np.empty((blk, N), dtype=np.int64)

    def flush(t_end: int, n: int) -> None:
        s = slice(t_end - n, t_end)
        U, R, M, B = bU[:n], bR[:n], bM[:n], bB[:n]
        rows = np.arange(n)[:, None]
        cols = np.arange(N)[None, :]
        u_play = np.where(M >= 0, U[rows, cols, np.maximum(M, 0)], 0.0)
        u_star = np.where(B >= 0, U[rows, cols, np.maximum(B, 0)], 0.0)
        regret[s] = u_star - u_play
        inst[s] = instability_batch(U, R, M)
        matches[s] = M
        bench[s] = B

    bar = tqdm(total=T, disable=not progress, leave=False, desc=getattr(policy, "name", "policy"), miniters=T // 50)
    k = 0
    for t in range(T):
        X, R = env.observe()
        bU[k] = env.true_utilities()
        bR[k] = R
        bB[k] = env.benchmark()
        m = policy.select(X, R)
        bM[k] = m
        refined[t] = policy.last_refined_
        cert[t] = policy.last_cert_size_
        r = env.pull(m)
        policy.update(X, m, r)
        k += 1
        if k == blk:
            flush(t + 1, k)
            k = 0
            bar.update(blk)
    if k:
        flush(T, k)
        bar.update(k)
    bar.close()
    return Trace(regret, inst, refined, cert, matches, bench, policy=repr(policy))


def regret_curves(traces: list[Trace], checkpoints: list[int] | np.ndarray) -> dict[str, np.ndarray]:
    """Cumulative metrics of several traces after ``checkpoints`` rounds (1 <= c <= T).

    Returns a dict of (n_traces, n_checkpoints) arrays: "sum_regret" (sum_i R_i), "max_regret" (max_i R_i),
    "instability" (I), "n_refine" (refine rounds so far).
    """
    cps = check_array(checkpoints, "checkpoints", dtype=np.int64, min_size=0)
    if cps.ndim != 1 or cps.size == 0:
        raise ValueError(f"checkpoints must be a non-empty 1-D list of round counts, got {checkpoints!r}")
    if not traces:
        raise ValueError("traces must be a non-empty list of Trace")
    for tr in traces:
        if cps.min() < 1 or cps.max() > tr.T:
            raise ValueError(f"checkpoints must lie in [1, T={tr.T}], got {cps.tolist()}")
    idx = cps - 1
    return {
        "sum_regret": np.stack([tr.cumulative_regret()[idx] for tr in traces]),
        "max_regret": np.stack([tr.max_player_regret()[idx] for tr in traces]),
        "instability": np.stack([tr.cumulative_instability()[idx] for tr in traces]),
        "n_refine": np.stack([np.cumsum(tr.refined)[idx] for tr in traces]),
    }


def fit_growth_exponent(T_grid: list[float] | np.ndarray, R: list[float] | np.ndarray) -> float:
    """Growth exponent alpha of R(T) ~ C T^alpha: least-squares slope of log R against log T.

    T_grid: (C,) horizons > 0; R: (C,) values > 0 (e.g. a median regret curve at those horizons). C >= 2.
    """
    T_grid = check_array(T_grid, "T_grid", finite=False, min_size=0)
    R = check_array(R, "R", finite=False, min_size=0)
    if T_grid.ndim != 1 or T_grid.size < 2:
        raise ValueError(f"T_grid must be 1-D with at least 2 points, got shape {T_grid.shape}")
    if R.shape != T_grid.shape:
        raise ValueError(f"R must have the same shape as T_grid {T_grid.shape}, got {R.shape}")
    if np.any(T_grid <= 0) or not np.all(np.isfinite(T_grid)):
        raise ValueError("T_grid must be finite and > 0")
    if np.ptp(np.log(T_grid)) == 0:
        raise ValueError(f"T_grid must hold at least 2 distinct horizons, got {T_grid.tolist()}")
    if np.any(R <= 0) or not np.all(np.isfinite(R)):
        raise ValueError(f"R must be finite and > 0 for a log-log fit, got {R.tolist()}")
    return float(np.polyfit(np.log(T_grid), np.log(R), 1)[0])
