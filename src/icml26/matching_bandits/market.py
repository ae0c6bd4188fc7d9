"""Two-sided matching utilities: Gale-Shapley (both proposers), stability, blocking pairs, instability.

Conventions (used by every module of this package)
--------------------------------------------------
- ``U`` (N, K): players' utilities, ``U[i, j]`` = player i's (mean) utility for arm j. A player prefers a
  higher utility; **ties are broken by arm index** (the lower index is preferred), so every player has a
  strict order ``np.argsort(-U[i], kind="stable")``.
- ``arm_rank`` (K, N): the arms' preferences as rank positions, ``arm_rank[j, i]`` = position of player i in
  arm j's order (0 = most preferred). Every row must be a permutation of ``0..N-1``.
  `arm_rank_from_scores` converts scores (higher = preferred) into this form.
- ``match`` (N,) int: ``match[i]`` = arm of player i, or ``-1`` when player i is unmatched. All arms are
  acceptable to every player and vice versa (spec section 2), so with K >= N a stable matching matches
  every player.
- An unmatched player's utility (outside option) is 0 in `instability` and in the regret of `run.simulate`.

`gale_shapley` is the sequential deferred-acceptance algorithm (pure Python; fastest for one market of up
to a few hundred agents). `gale_shapley_batch` runs B independent markets at once in numpy with synchronous
proposal rounds (all free proposers propose together, each receiver keeps its best offer); deferred
acceptance ends in the same proposer-optimal stable matching whatever the proposal order, so both agree
exactly (tested).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from icml26.common.validation import check_array

__all__ = [
    "gale_shapley",
    "gale_shapley_batch",
    "player_optimal",
    "player_pessimal",
    "is_stable",
    "blocking_pairs",
    "instability",
    "instability_batch",
    "all_stable_matchings",
    "arm_rank_from_scores",
    "player_order",
    "check_match",
]

_PROPOSERS = ("players", "arms")


# ---------------------------------------------------------------------------------------------- validation
def _check_utilities(U: np.ndarray, name: str = "U") -> np.ndarray:
    U = check_array(U, f"{name} (utilities, shape (n_players, n_arms))", ndim=2, min_size=0)
    if U.shape[0] < 1 or U.shape[1] < 1:
        raise ValueError(f"{name} must have at least one player and one arm, got shape {U.shape}")
    return U


def _check_arm_rank(arm_rank: np.ndarray, n_players: int, n_arms: int, name: str = "arm_rank") -> np.ndarray:
    arm_rank = check_array(arm_rank, name, dtype=np.int64, min_size=0)  # integer positions, never truncated
    if arm_rank.shape != (n_arms, n_players):
        raise ValueError(f"{name} must have shape (n_arms, n_players) = ({n_arms}, {n_players}), "
                         f"got {arm_rank.shape}")
    if not np.array_equal(np.sort(arm_rank, axis=1), np.broadcast_to(np.arange(n_players), arm_rank.shape)):
        raise ValueError(f"{name}: every row must be a permutation of 0..{n_players - 1} "
                         "(arm_rank[j, i] = position of player i in arm j's order, 0 = best)")
    return arm_rank.astype(np.int64, copy=False)


def check_match(match: np.ndarray, n_players: int, n_arms: int, name: str = "match") -> np.ndarray:
    """Validate a matching: shape (n_players,), ints in [-1, n_arms), no arm used twice. Returns int64 copy."""
    if isinstance(match, (str, bytes)) or match is None:
        raise TypeError(f"{name} must be an integer array (-1 = unmatched), got {type(match).__name__}")
    m = np.asarray(match)
    if m.dtype.kind not in "iu" and m.size:
        raise TypeError(f"{name} must be an integer array (-1 = unmatched), got dtype {m.dtype}")
    if m.shape != (n_players,):
        raise ValueError(f"{name} must have shape ({n_players},), got {m.shape}")
    m = m.astype(np.int64)
    if np.any((m < -1) | (m >= n_arms)):
        raise ValueError(f"{name} entries must be in [-1, {n_arms - 1}], got {m.tolist()}")
    used = m[m >= 0]
    if used.size and np.bincount(used).max() > 1:
        raise ValueError(f"{name} assigns an arm to two players: {m.tolist()}")
    return m


def _check_proposer(proposer: str) -> str:
    if proposer not in _PROPOSERS:
        raise ValueError(f"proposer must be one of {_PROPOSERS}, got {proposer!r}")
    return proposer


# ---------------------------------------------------------------------------------------------- helpers
def player_order(U: np.ndarray) -> np.ndarray:
    """Each player's arms from best to worst, ties by arm index. (..., N, K) -> (..., N, K) int."""
    return np.argsort(-np.asarray(U, dtype=float), axis=-1, kind="stable")


def arm_rank_from_scores(scores: np.ndarray) -> np.ndarray:
    """Rank positions from scores (higher score = preferred; ties by player index).

    scores: (..., K, N) with ``scores[j, i]`` = arm j's score of player i. Returns (..., K, N) int64 with
    ``arm_rank[j, i]`` = position of player i in arm j's order (0 = best).
    """
    sc = check_array(scores, "scores", ndim=tuple(range(2, 33)))
    order = np.argsort(-sc, axis=-1, kind="stable")
    return _inverse_perm(order.astype(np.int64, copy=False))


def _inverse_perm(order: np.ndarray) -> np.ndarray:
    """rank[..., order[..., p]] = p."""
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(order.shape[-1]), order.shape), axis=-1)
    return rank


# ---------------------------------------------------------------------------------------------- Gale-Shapley
def _deferred_acceptance(prop_order: list[list[int]], recv_rank: list[list[int]], n_recv: int) -> list[int]:
    """Sequential deferred acceptance. prop_order[p] = receivers best-first; recv_rank[r][p] = r's rank of p.

    Returns for each proposer its receiver or -1.
    """
    n_prop = len(prop_order)
    holder = [-1] * n_recv
    nxt = [0] * n_prop
    out = [-1] * n_prop
    free = list(range(n_prop - 1, -1, -1))
    n_opts = len(prop_order[0]) if n_prop else 0
    while free:
        p = free.pop()
        while nxt[p] < n_opts:
            r = prop_order[p][nxt[p]]
            nxt[p] += 1
            h = holder[r]
            if h == -1:
                holder[r] = p
                out[p] = r
                break
            rr = recv_rank[r]
            if rr[p] < rr[h]:
                holder[r] = p
                out[p] = r
                out[h] = -1
                free.append(h)
                break
    return out


def _gs_core(U: np.ndarray, arm_rank: np.ndarray, proposer: str = "players") -> np.ndarray:
    """Gale-Shapley without input validation (arm_rank rows only need to order players consistently)."""
    N, K = U.shape
    porder = player_order(U)
    if proposer == "players":
        res = _deferred_acceptance(porder.tolist(), arm_rank.tolist(), K)
        return np.asarray(res, dtype=np.int64)
    arm_order = np.argsort(arm_rank, axis=1, kind="stable")
    prank = _inverse_perm(porder)  # (N, K): player i's rank of arm j
    res = _deferred_acceptance(arm_order.tolist(), prank.tolist(), N)  # arm -> player
    match = np.full(N, -1, dtype=np.int64)
    for j, i in enumerate(res):
        if i >= 0:
            match[i] = j
    return match


def gale_shapley(U: np.ndarray, arm_rank: np.ndarray, proposer: str = "players") -> np.ndarray:
    """Deferred acceptance (Gale & Shapley 1962) on one market.

    Args:
        U: (N, K) players' utilities (higher = preferred; ties broken by arm index, lower first).
        arm_rank: (K, N) rank positions, ``arm_rank[j, i]`` = position of player i in arm j's order (0 = best).
        proposer: "players" (player-optimal stable matching) or "arms" (player-pessimal stable matching).

    Returns:
        (N,) int64 match, ``-1`` for unmatched players (only possible when N > K).
    """
    U = _check_utilities(U)
    arm_rank = _check_arm_rank(arm_rank, *U.shape)
    return _gs_core(U, arm_rank, _check_proposer(proposer))


def player_optimal(U: np.ndarray, arm_rank: np.ndarray) -> np.ndarray:
    """The player-optimal stable matching (player-proposing Gale-Shapley). (N,) int64."""
    return gale_shapley(U, arm_rank, "players")


def player_pessimal(U: np.ndarray, arm_rank: np.ndarray) -> np.ndarray:
    """The player-pessimal (arm-optimal) stable matching (arm-proposing Gale-Shapley). (N,) int64."""
    return gale_shapley(U, arm_rank, "arms")


def _da_batch(prop_order: np.ndarray, recv_rank: np.ndarray) -> np.ndarray:
    """Synchronous deferred acceptance over B markets.

    prop_order: (B, P, R) receivers best-first for each proposer; recv_rank: (B, R, P) receivers' ranks.
    Returns (B, P) receiver of each proposer or -1. Each proposal step costs O(#free proposers): the free set
    is carried from step to step (rejected proposers + displaced holders) instead of rescanned.
    """
    B, P, R = prop_order.shape
    out = np.full((B, P), -1, dtype=np.int64)
    holder = np.full(B * R, -1, dtype=np.int64)  # proposer held by (market, receiver)
    hrank = np.full(B * R, np.iinfo(np.int64).max, dtype=np.int64)  # its rank there
    nxt = np.zeros((B, P), dtype=np.int64)
    b = np.repeat(np.arange(B), P)
    p = np.tile(np.arange(P), B)
    if R == 0:
        return out
    while b.size:
        r = prop_order[b, p, nxt[b, p]]
        nxt[b, p] += 1
        rank = recv_rank[b, r, p]
        flat = b * R + r
        np.minimum.at(hrank, flat, rank)
        win = rank == hrank[flat]  # ranks are distinct per receiver: one winner at most
        wflat = flat[win]
        disp = holder[wflat]
        holder[wflat] = p[win]
        out[b[win], p[win]] = r[win]
        had = disp >= 0
        db, dp = b[win][had], disp[had]
        out[db, dp] = -1
        nb = np.concatenate([b[~win], db])
        npp = np.concatenate([p[~win], dp])
        keep = nxt[nb, npp] < R
        b, p = nb[keep], npp[keep]
    return out


def gale_shapley_batch(U: np.ndarray, arm_rank: np.ndarray, proposer: str = "players") -> np.ndarray:
    """Gale-Shapley on B independent markets at once (numpy, vectorised over markets and agents).

    Args:
        U: (B, N, K) utilities; arm_rank: (B, K, N) rank positions; proposer: "players" | "arms".
    Returns:
        (B, N) int64 matches, identical to ``gale_shapley`` applied market by market.
    """
    U = np.asarray(U, dtype=float)
    if U.ndim != 3:
        raise ValueError(f"U must have shape (B, n_players, n_arms), got {U.shape}")
    B, N, K = U.shape
    arm_rank = np.asarray(arm_rank)
    if arm_rank.shape != (B, K, N):
        raise ValueError(f"arm_rank must have shape (B, n_arms, n_players) = ({B}, {K}, {N}), got {arm_rank.shape}")
    _check_proposer(proposer)
    arm_rank = arm_rank.astype(np.int64, copy=False)
    porder = player_order(U)
    if proposer == "players":
        return _da_batch(porder, arm_rank)
    arm_order = np.argsort(arm_rank, axis=2, kind="stable")
    prank = _inverse_perm(porder)
    res = _da_batch(arm_order, prank)  # (B, K) player of each arm
    match = np.full((B, N), -1, dtype=np.int64)
    b, j = np.nonzero(res >= 0)
    match[b, res[b, j]] = j
    return match


# ---------------------------------------------------------------------------------------------- stability
def _partners(match: np.ndarray, n_arms: int) -> np.ndarray:
    partner = np.full(n_arms, -1, dtype=np.int64)
    idx = np.nonzero(match >= 0)[0]
    partner[match[idx]] = idx
    return partner


def _arm_prefers(arm_rank: np.ndarray, match: np.ndarray) -> np.ndarray:
    """(N, K) bool: arm j is free or ranks player i above its current partner (and j != match[i])."""
    N = match.shape[0]
    K = arm_rank.shape[0]
    partner = _partners(match, K)
    prank = np.where(partner >= 0, arm_rank[np.arange(K), np.maximum(partner, 0)], N)  # (K,)
    ok = arm_rank.T < prank[None, :]  # (N, K)
    ok[np.arange(N)[match >= 0], match[match >= 0]] = False
    return ok


def blocking_pairs(U: np.ndarray, arm_rank: np.ndarray, match: np.ndarray) -> list[tuple[int, int]]:
    """All blocking pairs (i, j) of ``match``: player i strictly prefers arm j to its arm (ties by arm index;
    an unmatched player prefers any arm) and arm j is free or ranks i above its partner. Sorted list."""
    U = _check_utilities(U)
    N, K = U.shape
    arm_rank = _check_arm_rank(arm_rank, N, K)
    match = check_match(match, N, K)
    prank = _inverse_perm(player_order(U))  # player i's position of arm j
    own = np.where(match >= 0, prank[np.arange(N), np.maximum(match, 0)], K)
    player_wants = prank < own[:, None]
    blk = player_wants & _arm_prefers(arm_rank, match)
    return [(int(i), int(j)) for i, j in zip(*np.nonzero(blk))]


def is_stable(U: np.ndarray, arm_rank: np.ndarray, match: np.ndarray) -> bool:
    """True iff ``match`` has no blocking pair (see `blocking_pairs`)."""
    return len(blocking_pairs(U, arm_rank, match)) == 0


def instability(U: np.ndarray, arm_rank: np.ndarray, match: np.ndarray) -> float:
    """Instability Inst(m) = max over players i and arms j != m(i) that are free or rank i above their partner
    of [U[i, j] - U[i, m(i)]]_+  (spec section 2, [R]); an unmatched player's utility is 0.

    It is 0 for every stable matching and 1-Lipschitz (sup-norm) in U.
    """
    U = _check_utilities(U)
    N, K = U.shape
    arm_rank = _check_arm_rank(arm_rank, N, K)
    match = check_match(match, N, K)
    return float(instability_batch(U[None], arm_rank[None], match[None])[0])


def instability_batch(U: np.ndarray, arm_rank: np.ndarray, match: np.ndarray) -> np.ndarray:
    """`instability` of B markets at once: U (B, N, K), arm_rank (B, K, N), match (B, N) -> (B,). No validation."""
    B, N, K = U.shape
    matched = match >= 0
    mclip = np.maximum(match, 0)
    own_u = np.where(matched, np.take_along_axis(U, mclip[:, :, None], axis=2)[:, :, 0], 0.0)  # (B, N)
    partner = np.full((B, K), -1, dtype=np.int64)
    bb, ii = np.nonzero(matched)
    partner[bb, match[bb, ii]] = ii
    prank = np.where(partner >= 0, np.take_along_axis(arm_rank, np.maximum(partner, 0)[:, :, None], axis=2)[:, :, 0],
                     N)  # (B, K) rank of each arm's partner, N if free
    willing = np.swapaxes(arm_rank, 1, 2) < prank[:, None, :]  # (B, N, K)
    willing[bb, ii, match[bb, ii]] = False
    gain = np.where(willing, U - own_u[:, :, None], 0.0)
    return np.maximum(gain.reshape(B, -1).max(axis=1), 0.0)


# ---------------------------------------------------------------------------------------------- brute force
def _all_matchings(N: int, K: int) -> Iterator[tuple[int, ...]]:
    def rec(i: int, used: frozenset[int], acc: tuple[int, ...]):
        if i == N:
            yield acc
            return
        for j in range(K):
            if j not in used:
                yield from rec(i + 1, used | {j}, acc + (j,))
        yield from rec(i + 1, used, acc + (-1,))

    return rec(0, frozenset(), ())


def all_stable_matchings(U: np.ndarray, arm_rank: np.ndarray, max_agents: int = 5) -> list[np.ndarray]:
    """Every stable matching, by brute force over all (partial) matchings; for N, K <= ``max_agents`` (5).

    Returns a list of (N,) int64 arrays in lexicographic order. Stability uses the tie-broken strict orders
    of `blocking_pairs`.
    """
    U = _check_utilities(U)
    N, K = U.shape
    arm_rank = _check_arm_rank(arm_rank, N, K)
    if N > max_agents or K > max_agents:
        raise ValueError(f"all_stable_matchings is brute force: n_players and n_arms must be <= {max_agents}, "
                         f"got U.shape={U.shape}")
    prank = _inverse_perm(player_order(U))
    out = []
    for m in _all_matchings(N, K):
        match = np.asarray(m, dtype=np.int64)
        own = np.where(match >= 0, prank[np.arange(N), np.maximum(match, 0)], K)
        if not np.any((prank < own[:, None]) & _arm_prefers(arm_rank, match)):
            out.append(match)
    out.sort(key=lambda a: tuple(a.tolist()))
    return out
