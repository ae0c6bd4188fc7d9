"""`ContextualMarket`: a centralized contextual matching market, gym-like, plus context samplers.

Model (spec section 2; everything beyond the paper's abstract is a reconstruction **[R]**):
N players (fixed), K arms per round (fresh each round), dimension d. In round t the contexts
x_{t,1..K} (||x|| <= 1) and every arm's order over players are revealed (`observe`). Player i's mean utility for
arm j is u_i(t, j) = theta_i^T x_{t,j} with ||theta_i|| = 1 [R: unit norm, S = 1]. The platform plays a matching;
`pull` returns r_{t,i} = u_i(t, m_t(i)) + eta, eta ~ N(0, noise^2) (NaN for an unmatched player). The benchmark
m*_t is the player-optimal stable matching of the true utilities (player-proposing Gale-Shapley), or the
player-pessimal one with ``benchmark="arms"``.

Arm preferences [R]: "linear" - arm j ranks players by the score x_{t,j}^T W (W in R^{d x N} Gaussian, fixed);
"fixed" - one global ranking shared by all arms and rounds; or a callable ``f(X (K, d)) -> arm_rank (K, N)``.

Context samplers (`ContextSampler.sample(t0, n, rng, market) -> (n, K, d)`, rounds t0..t0+n-1):
`FiniteContexts` (K distinct prototypes per round, uniformly), `GaussianContexts` (N(0, I/d) projected on the
unit ball), `SphereContexts` (uniform on the unit sphere), and the adversaries of spec section 5:
`NearTieAdversary` (two arms within eps for one player, alternating sign), `SubspaceSwitchAdversary`
(contexts confined to a coordinate subspace in alternate blocks of `period` rounds) and `SequenceContexts`
(a user array). Adversaries wrap a base sampler, so they compose.

Minimum preference gap [R]: for finite support, Delta = min_i min_{a != b prototypes} |theta_i^T (p_a - p_b)|.
``min_gap=g`` draws the instance by rejection sampling until Delta >= g; the prototypes are drawn one at a time
(each one redrawn until it keeps the gap to the ones before), which scales to large markets far better than
redrawing the whole instance; theta is redrawn only if a prototype cannot be placed [R, implementation choice].

Everything a policy could influence is separated from the randomness: contexts, arm preferences and reward
noise come from their own streams, pre-drawn in blocks, so every policy run with the same seed faces exactly the
same rounds and noise (common random numbers), and the benchmark is computed for a whole block at once with
the vectorised `gale_shapley_batch`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from icml26.common.validation import check_int

from icml26.matching_bandits.market import (
    _check_arm_rank,
    arm_rank_from_scores,
    check_match,
    gale_shapley_batch,
)

__all__ = [
    "ContextualMarket",
    "ContextSampler",
    "FiniteContexts",
    "GaussianContexts",
    "SphereContexts",
    "NearTieAdversary",
    "SubspaceSwitchAdversary",
    "SequenceContexts",
    "finite_min_gap",
]


def _pos_int(value: Any, name: str, minimum: int = 1) -> int:
    return check_int(value, name, min=minimum)  # 3.0 is read as 3, 3.5 is refused (never truncated)


def _unit_rows(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    z = rng.normal(size=shape)
    n = np.linalg.norm(z, axis=-1, keepdims=True)
    return z / np.maximum(n, 1e-300)


def finite_min_gap(theta: np.ndarray, prototypes: np.ndarray) -> float:
    """Delta = min_i min_{a != b} |theta_i^T (p_a - p_b)| for theta (N, d), prototypes (P, d), P >= 2."""
    u = np.asarray(prototypes) @ np.asarray(theta).T  # (P, N)
    P = u.shape[0]
    if P < 2:
        return float("inf")
    d = np.abs(u[:, None, :] - u[None, :, :])
    iu = np.triu_indices(P, k=1)
    return float(d[iu].min())


# ---------------------------------------------------------------------------------------------- samplers
class ContextSampler:
    """Base class of context samplers: ``sample(t0, n, rng, market) -> X (n, K, d)`` for rounds t0..t0+n-1.

    ``rng`` is the market's context stream; ``market`` gives access to ``n_arms``, ``dim`` and (for
    adversaries) ``theta``. ``support`` is the finite set of possible contexts (P, d) or None.
    """

    support: np.ndarray | None = None

    def sample(self, t0: int, n: int, rng: np.random.Generator, market: ContextualMarket) -> np.ndarray:
        raise NotImplementedError

    def horizon(self) -> int | None:
        """Number of rounds the sampler can produce (None = unlimited)."""
        return None


class FiniteContexts(ContextSampler):
    """Each round, K distinct prototypes drawn uniformly at random (in random order). prototypes: (P, d), P >= K."""

    def __init__(self, prototypes: np.ndarray):
        p = np.asarray(prototypes, dtype=float)
        if p.ndim != 2 or p.shape[0] < 1:
            raise ValueError(f"prototypes must have shape (n_prototypes, dim), got {p.shape}")
        if np.any(np.linalg.norm(p, axis=1) > 1 + 1e-9):
            raise ValueError("prototypes must have norm <= 1")
        self.support = p

    def sample(self, t0, n, rng, market):
        P = self.support.shape[0]
        K = market.n_arms
        if P < K:
            raise ValueError(f"FiniteContexts needs n_prototypes >= n_arms, got {P} < {K}")
        idx = np.argsort(rng.random((n, P)), axis=1)[:, :K]
        return self.support[idx]


class GaussianContexts(ContextSampler):
    """x ~ N(0, I/d), projected onto the unit ball (||x|| <= 1)."""

    def sample(self, t0, n, rng, market):
        x = rng.normal(size=(n, market.n_arms, market.dim)) / np.sqrt(market.dim)
        nrm = np.linalg.norm(x, axis=-1, keepdims=True)
        return x / np.maximum(nrm, 1.0)


class SphereContexts(ContextSampler):
    """x uniform on the unit sphere S^{d-1}."""

    def sample(self, t0, n, rng, market):
        return _unit_rows(rng, (n, market.n_arms, market.dim))


class SubspaceSwitchAdversary(ContextSampler):
    """Zero the last ``n_zero`` coordinates of the base contexts in the even blocks of ``period`` rounds
    (rounds t with (t // period) even), i.e. contexts are confined to a subspace, then released, alternately.

    A learner that explores only at the start (ETC) never sees the hidden directions and errs once they appear.
    """

    def __init__(self, period: int, base: ContextSampler | None = None, n_zero: int = 1):
        self.period = _pos_int(period, "period")
        self.n_zero = _pos_int(n_zero, "n_zero")
        self.base = base if base is not None else SphereContexts()

    def sample(self, t0, n, rng, market):
        if self.n_zero >= market.dim:
            raise ValueError(f"n_zero must be < dim, got {self.n_zero} >= {market.dim}")
        X = self.base.sample(t0, n, rng, market).copy()
        t = t0 + np.arange(n)
        confined = (t // self.period) % 2 == 0
        X[confined, :, market.dim - self.n_zero:] = 0.0
        return X

    def horizon(self):
        return self.base.horizon()


class NearTieAdversary(ContextSampler):
    """Arm ``arms[1]`` = arm ``arms[0]`` + eps (-1)^t theta_p / ||theta_p||^2 + spread * v, v a random unit vector
    orthogonal to theta_p (spec section 6, E4): player p's utilities of the two arms differ by exactly eps with
    alternating sign, while the other players see them differ by O(spread). Both vectors stay in the coordinate
    subspace the base contexts use in that round, and are rescaled together if the second leaves the unit ball.
    """

    def __init__(self, player: int = 0, eps: float = 0.01, base: ContextSampler | None = None,
                 spread: float = 0.3, arms: tuple[int, int] = (0, 1)):
        self.player = _pos_int(player, "player", minimum=0)
        if not np.isfinite(eps) or eps < 0:
            raise ValueError(f"eps must be a finite number >= 0, got {eps}")
        if not np.isfinite(spread) or spread < 0:
            raise ValueError(f"spread must be a finite number >= 0, got {spread}")
        if len(arms) != 2 or arms[0] == arms[1] or min(arms) < 0:
            raise ValueError(f"arms must be two distinct arm indices, got {arms}")
        self.eps = float(eps)
        self.spread = float(spread)
        self.arms = (int(arms[0]), int(arms[1]))
        self.base = base if base is not None else SphereContexts()

    def sample(self, t0, n, rng, market):
        if self.player >= market.n_players:
            raise ValueError(f"player must be < n_players={market.n_players}, got {self.player}")
        if max(self.arms) >= market.n_arms:
            raise ValueError(f"arms must be < n_arms={market.n_arms}, got {self.arms}")
        X = self.base.sample(t0, n, rng, market).copy()
        a, b = self.arms
        x0 = X[:, a, :]
        mask = (np.abs(X) > 0).any(axis=1).astype(float)  # (n, d) active coordinates of the round
        th = market.theta[self.player][None, :] * mask
        thn2 = np.maximum((th * th).sum(1, keepdims=True), 1e-300)
        v = rng.normal(size=x0.shape) * mask
        v -= (v * th).sum(1, keepdims=True) / thn2 * th
        v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-300)
        sign = np.where((t0 + np.arange(n)) % 2 == 0, 1.0, -1.0)[:, None]
        x1 = x0 + self.eps * sign * th / thn2 + self.spread * v
        scale = np.maximum(1.0, np.maximum(np.linalg.norm(x0, axis=1), np.linalg.norm(x1, axis=1)))[:, None]
        X[:, a, :] = x0 / scale
        X[:, b, :] = x1 / scale
        return X

    def horizon(self):
        return self.base.horizon()


class SequenceContexts(ContextSampler):
    """A user-given context sequence: contexts (T, K, d) with norms <= 1; round t gets contexts[t]."""

    def __init__(self, contexts: np.ndarray):
        c = np.asarray(contexts, dtype=float)
        if c.ndim != 3 or min(c.shape) < 1:
            raise ValueError(f"contexts must have shape (T, n_arms, dim), got {c.shape}")
        if not np.all(np.isfinite(c)):
            raise ValueError("contexts must be finite")
        if np.any(np.linalg.norm(c, axis=-1) > 1 + 1e-9):
            raise ValueError("contexts must have norm <= 1")
        self.contexts = c

    def sample(self, t0, n, rng, market):
        T, K, d = self.contexts.shape
        if (K, d) != (market.n_arms, market.dim):
            raise ValueError(f"contexts must have shape (T, n_arms, dim) = (T, {market.n_arms}, {market.dim}), "
                             f"got {self.contexts.shape}")
        if t0 + n > T:
            raise ValueError(f"SequenceContexts holds {T} rounds; round {t0 + n - 1} was requested")
        return self.contexts[t0:t0 + n]

    def horizon(self):
        return self.contexts.shape[0]


_SAMPLERS = {"gaussian": GaussianContexts, "sphere": SphereContexts}


# ---------------------------------------------------------------------------------------------- market
class ContextualMarket:
    """A contextual matching market (spec section 5), gym-like: ``reset`` / ``observe`` / ``pull``.

    Args:
        n_players: N >= 1. n_arms: K >= 1 arms per round. dim: d >= 1.
        contexts: "finite" (``n_prototypes`` unit-norm prototypes, K distinct per round), "gaussian", "sphere",
            or a `ContextSampler` instance.
        n_prototypes: support size for "finite" (default 6; must be >= n_arms).
        min_gap: for "finite", rejection-sample the instance until the minimum preference gap >= min_gap.
        noise: reward noise standard deviation sigma >= 0 (Gaussian).
        arm_prefs: "linear" (arm j ranks players by x_j^T W), "fixed" (one global ranking), or a callable
            ``f(X (K, d)) -> arm_rank (K, N)``.
        theta: optional (N, d) player parameters (default: random unit vectors).
        benchmark: "players" (player-optimal stable matching, default) or "arms" (player-pessimal).
        seed: instance and stream seed (int >= 0).
        max_tries: rejection-sampling budget per prototype (default 200_000 draws).
        block: max rounds pre-drawn at a time (default 1024; the first refill draws 64, then doubling).

    Attributes: ``theta`` (N, d); ``arm_weights`` (d, N) for "linear"; ``prototypes`` (P, d) or None;
    ``min_gap`` (realised minimum preference gap for finite support, else None); ``t`` (current round, 0-based).
    """

    def __init__(self, n_players: int, n_arms: int, dim: int, contexts: str | ContextSampler = "finite",
                 n_prototypes: int = 6, min_gap: float | None = None, noise: float = 0.1,
                 arm_prefs: str | Callable[[np.ndarray], np.ndarray] = "linear", theta: np.ndarray | None = None,
                 benchmark: str = "players", seed: int = 0, max_tries: int = 200_000, block: int = 1024):
        self.n_players = _pos_int(n_players, "n_players")
        self.n_arms = _pos_int(n_arms, "n_arms")
        self.dim = _pos_int(dim, "dim")
        self.seed = _pos_int(seed, "seed", minimum=0)
        self.block = _pos_int(block, "block")
        if isinstance(noise, bool) or not isinstance(noise, (int, float, np.floating, np.integer)) \
                or not np.isfinite(noise) or noise < 0:
            raise ValueError(f"noise must be a finite number >= 0, got {noise!r}")
        self.noise = float(noise)
        if benchmark not in ("players", "arms"):
            raise ValueError(f"benchmark must be 'players' or 'arms', got {benchmark!r}")
        self.benchmark_proposer = benchmark
        if not (callable(arm_prefs) or arm_prefs in ("linear", "fixed")):
            raise ValueError(f"arm_prefs must be 'linear', 'fixed' or a callable, got {arm_prefs!r}")
        self.arm_prefs = arm_prefs
        if min_gap is not None and (not np.isfinite(min_gap) or min_gap < 0):
            raise ValueError(f"min_gap must be a number >= 0 or None, got {min_gap!r}")
        if min_gap is not None and contexts != "finite":
            raise ValueError("min_gap is only supported with contexts='finite'")

        inst_ss, self._ctx_ss, self._noise_ss = np.random.SeedSequence(self.seed).spawn(3)
        rng = np.random.default_rng(inst_ss)
        N, K, d = self.n_players, self.n_arms, self.dim
        user_theta = theta is not None
        if user_theta:
            theta = np.asarray(theta, dtype=float)
            if theta.shape != (N, d):
                raise ValueError(f"theta must have shape (n_players, dim) = ({N}, {d}), got {theta.shape}")
            if not np.all(np.isfinite(theta)):
                raise ValueError("theta must be finite")
        else:
            theta = _unit_rows(rng, (N, d))
        self.prototypes: np.ndarray | None = None
        if isinstance(contexts, ContextSampler):
            self.sampler = contexts
        elif contexts == "finite":
            P = _pos_int(n_prototypes, "n_prototypes")
            if P < K:
                raise ValueError(f"n_prototypes must be >= n_arms ({K}) for contexts='finite', got {P}")
            theta, protos = self._draw_finite(rng, theta, user_theta, P, min_gap, _pos_int(max_tries, "max_tries"))
            self.prototypes = protos
            self.sampler = FiniteContexts(protos)
        elif contexts in _SAMPLERS:
            self.sampler = _SAMPLERS[contexts]()
        else:
            raise ValueError("contexts must be 'finite', 'gaussian', 'sphere' or a ContextSampler, "
                             f"got {contexts!r}")
        self.requested_min_gap = min_gap
        self.theta = theta
        self.arm_weights = rng.normal(size=(d, N)) if arm_prefs == "linear" else None
        self.fixed_rank = np.argsort(rng.permutation(N)) if arm_prefs == "fixed" else None
        self.reset()

    # ------------------------------------------------------------------ instance
    def _draw_finite(self, rng, theta, user_theta, P, min_gap, max_tries):
        d = self.dim
        if not min_gap:
            return theta, _unit_rows(rng, (P, d))
        for _restart in range(20 if not user_theta else 1):
            protos: list[np.ndarray] = []
            for _k in range(P):
                placed = False
                drawn = 0
                while drawn < max_tries:
                    cand = _unit_rows(rng, (512, d))
                    drawn += 512
                    if not protos:
                        protos.append(cand[0])
                        placed = True
                        break
                    cu = cand @ theta.T  # (512, N)
                    pu = np.asarray(protos) @ theta.T  # (m, N)
                    gap = np.abs(cu[:, None, :] - pu[None, :, :]).min(axis=(1, 2))
                    ok = np.nonzero(gap >= min_gap)[0]
                    if ok.size:
                        protos.append(cand[ok[0]])
                        placed = True
                        break
                if not placed:
                    break
            if len(protos) == P:
                return theta, np.asarray(protos)
            if not user_theta:
                theta = _unit_rows(rng, theta.shape)
        raise ValueError(f"min_gap={min_gap} could not be reached for n_players={self.n_players}, "
                         f"n_prototypes={P}, dim={d} (try a smaller min_gap or fewer prototypes)")

    @property
    def min_gap(self) -> float | None:
        """Realised minimum preference gap Delta over the finite context support; None for continuous contexts."""
        support = getattr(self.sampler, "support", None)
        if support is None:
            return None
        return finite_min_gap(self.theta, support)

    # ------------------------------------------------------------------ streams
    def reset(self) -> None:
        """Restart the context and noise streams at round 0 (the instance - theta, prototypes, W - is kept)."""
        self._ctx_rng = np.random.default_rng(self._ctx_ss)
        self._noise_rng = np.random.default_rng(self._noise_ss)
        self.t = 0
        self._start = 0
        self._X = np.zeros((0, self.n_arms, self.dim))
        self._next_block = min(64, self.block)  # grows x2 per refill up to `block`: short runs stay cheap

    def _arm_ranks(self, X: np.ndarray) -> np.ndarray:
        n = X.shape[0]
        if self.arm_prefs == "linear":
            return arm_rank_from_scores(X @ self.arm_weights)
        if self.arm_prefs == "fixed":
            return np.broadcast_to(self.fixed_rank, (n, self.n_arms, self.n_players)).copy()
        out = np.empty((n, self.n_arms, self.n_players), dtype=np.int64)
        for k in range(n):
            out[k] = _check_arm_rank(self.arm_prefs(X[k]), self.n_players, self.n_arms, name="arm_prefs(X)")
        return out

    def _fill(self) -> None:
        n = self._next_block
        self._next_block = min(2 * n, self.block)
        hz = self.sampler.horizon()
        if hz is not None:
            n = min(n, hz - self.t)
            if n <= 0:
                raise ValueError(f"the context sequence is exhausted after {hz} rounds")
        X = np.asarray(self.sampler.sample(self.t, n, self._ctx_rng, self), dtype=float)
        if X.shape != (n, self.n_arms, self.dim):
            raise ValueError(f"context sampler returned shape {X.shape}, expected ({n}, {self.n_arms}, {self.dim})")
        if not np.all(np.isfinite(X)):
            raise ValueError("context sampler returned non-finite (NaN/inf) contexts")
        if np.any(np.linalg.norm(X, axis=-1) > 1 + 1e-9):
            raise ValueError("context sampler returned contexts with norm > 1")
        self._start = self.t
        self._X = X
        self._rank = self._arm_ranks(X)
        self._U = np.einsum("nd,tkd->tnk", self.theta, X)
        self._bench = gale_shapley_batch(self._U, self._rank, self.benchmark_proposer)
        self._eta = self._noise_rng.normal(size=(n, self.n_players)) * self.noise

    def _k(self) -> int:
        k = self.t - self._start
        if k >= self._X.shape[0]:
            self._fill()
            k = 0
        return k

    def observe(self) -> tuple[np.ndarray, np.ndarray]:
        """The current round's contexts X (K, d) and arm preferences arm_rank (K, N) (rank positions, 0 = best)."""
        k = self._k()  # may refill the block: index only afterwards
        return self._X[k], self._rank[k]

    def true_utilities(self) -> np.ndarray:
        """(N, K) mean utilities theta_i^T x_j of the current round."""
        k = self._k()
        return self._U[k]

    def benchmark(self) -> np.ndarray:
        """(N,) the benchmark stable matching of the current round (player-optimal unless benchmark='arms')."""
        k = self._k()
        return self._bench[k]

    def pull(self, match: np.ndarray) -> np.ndarray:
        """Play ``match`` (N,) in the current round; returns rewards (N,) (NaN for unmatched players), next round."""
        k = self._k()
        match = check_match(match, self.n_players, self.n_arms)
        rows = np.arange(self.n_players)
        r = np.where(match >= 0, self._U[k][rows, np.maximum(match, 0)] + self._eta[k], np.nan)
        self.t += 1
        return r

    def __repr__(self) -> str:
        kind = type(self.sampler).__name__
        return (f"ContextualMarket(n_players={self.n_players}, n_arms={self.n_arms}, dim={self.dim}, "
                f"contexts={kind}, noise={self.noise}, min_gap={self.min_gap}, seed={self.seed})")
