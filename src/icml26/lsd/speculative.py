"""Langevin Speculative Dynamics (LSD): draft Langevin steps with a cheap model, verify them in parallel with
the target model, and couple draft and target transitions exactly (spec sections 2.2-2.3).

Kosmala, Guennemann, Gao, Wood, *Speculative Sampling For Faster Molecular Dynamics*, ICML 2026
(arXiv 2606.02455). The paper's full text was not available: the round structure below is the spec's
section 2.3, which is reconstructed from the abstract and Figure 1 ("draft model proposes a stream of
steps; target instances recompute forces on draft steps in parallel and asynchronously; a reflection-
maximal coupling accepts each draft step as often as possible, otherwise overrides it").

One synchronous round (lookahead K), from the verified state (x, w) at step n:
  1. the draft runs K BAOAB steps: positions x^d_1..x^d_K and means mu^d_0..mu^d_{K-1};
  2. ONE batched (or threaded) target call evaluates F_t at x^d_0 = x, x^d_1, ..., x^d_K (x^d_0 is skipped
     when its forces are already known, i.e. after an all-accepted round);
  3. scan k = 0..K-1: the target mean mu^t_k from the current verified state and F_t; couple x^d_{k+1} to
     N(mu^t_k, sigma_x^2) with `reflection_maximal_coupling`; the new verified velocity is ALWAYS the
     target-consistent w = (2/h)(y - x) - v+_t (spec pitfall 9.1); stop at the first rejection;
  4. the round produces (#accepted + 1) steps, or K if all were accepted; the draft restarts from the
     corrected, target-consistent state.
The verified chain has exactly the law of the serial target chain (same integrator).

RNG contract (spec section 5). Two streams from `np.random.SeedSequence(seed)`: a Gaussian stream for the
integrator noise and a separate uniform stream for the accept tests (a third one draws v0 when v0 is None).
The Gaussian stream is indexed by the step number: the proposal for step n+1 always uses z_{n+1}, the
(n+1)-th standard-normal draw of shape (N, D), whichever draft (first try or restart) proposes it. The uniform
stream gives one number per verified step, in order. Consequences: with draft == target every proposal is
accepted and the trajectory is bit-identical to `serial_langevin` with the same seed; the asynchronous variant
produces the same trajectory whatever the thread timing. Exactness is unaffected: a restarted draft's
z_{n+2} was used only by discarded proposals, and is independent of everything verified up to step n+1
(the rejected step n+1 itself is produced by the reflection of z_{n+1}; z_{n+1} is never reused).
This indexing is our choice; the spec says "fresh noise for every draft proposal" and this satisfies it in
the sense that matters (independent of the verified past).
"""

from __future__ import annotations

import math
import threading
import time
import warnings
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml26.common.validation import check_array, check_bool, check_float, check_int
from icml26.lsd.coupling import couple as reflection_maximal_coupling  # inputs validated by the drivers
from icml26.lsd.integrator import BAOAB

__all__ = ["LangevinSpeculativeDynamics", "AsyncLSD", "Trajectory", "LSDStats", "NoiseStream",
           "LowAcceptanceWarning", "WARN_BELOW_ACCEPTANCE"]

# Below this acceptance rate a draft is too far from the target to pay: steps per round E[L] <= 1/(1 - alpha)
# = 1.43 whatever the lookahead, while each produced step costs up to (K + 1)/E[L] target evaluations.
WARN_BELOW_ACCEPTANCE = 0.3
_MIN_VERIFIED_FOR_WARNING = 50  # fewer verified steps estimate the acceptance too poorly to warn about it


class LowAcceptanceWarning(UserWarning):
    """The draft's acceptance rate was below the driver's `warn_below_acceptance` threshold."""

VERIFIERS = ("serial", "batch", "threads")


# ------------------------------------------------------------------------------------------ records
@dataclass
class LSDStats:
    """Counters of one run.

    Attributes:
        rounds: sequential target rounds (one batched/threaded call each; for `AsyncLSD`: draft (re)starts).
        steps: produced (verified) steps.
        target_evals, draft_evals: single-configuration force evaluations of each model.
        accepted: bool per verified step (the final step of a round is always verified; all-accepted rounds
            verify K steps).
        deltas: whitened mean gap delta = ||(mu_t - mu_d) / sigma_x|| per verified step.
        position_in_round: 0-based position of each verified step within its round.
        round_lengths: steps produced by each round.
        wall_time: seconds spent in `run`.
    """

    rounds: int = 0
    steps: int = 0
    target_evals: int = 0
    draft_evals: int = 0
    accepted: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    deltas: np.ndarray = field(default_factory=lambda: np.zeros(0))
    position_in_round: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    round_lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    wall_time: float = 0.0

    @property
    def steps_per_round(self) -> float:
        """Steps per sequential target round: the latency speedup over serial MD (serial = 1)."""
        return self.steps / self.rounds if self.rounds else float("nan")

    @property
    def acceptance_rate(self) -> float:
        """Fraction of verified draft steps accepted."""
        return float(np.mean(self.accepted)) if len(self.accepted) else float("nan")

    @property
    def target_evals_per_step(self) -> float:
        """Target force evaluations per produced step (serial = 1 + 1/n_steps)."""
        return self.target_evals / self.steps if self.steps else float("nan")

    def summary(self) -> dict[str, float]:
        """Plain-number summary for reports."""
        return {"rounds": self.rounds, "steps": self.steps, "target_evals": self.target_evals,
                "draft_evals": self.draft_evals, "steps_per_round": self.steps_per_round,
                "acceptance_rate": self.acceptance_rate, "target_evals_per_step": self.target_evals_per_step,
                "wall_time": self.wall_time}


@dataclass
class Trajectory:
    """Recorded frames of a run.

    Attributes:
        positions: (T, N, D) positions at steps 0, r, 2r, ... (r = record_every), unwrapped.
        velocities: (T, N, D) physical velocities v_n = w_n + (h/2m) F_t(x_n).
        times: (T,) simulation times n h.
        steps: (T,) step indices n.
        stats: `LSDStats` of the run.
        final_state: (x, w) chain state after the last step (to continue a run).
    """

    positions: np.ndarray
    velocities: np.ndarray
    times: np.ndarray
    steps: np.ndarray
    stats: LSDStats
    final_state: tuple[np.ndarray, np.ndarray] | None = None


class NoiseStream:
    """Step-indexed standard-normal stream: `get(n)` is the n-th draw of shape `shape` (n = 1, 2, ...).

    Draws are generated in order from `rng` and cached until `release(n)` says steps <= n are verified.
    """

    def __init__(self, rng: np.random.Generator, shape: tuple[int, ...]):
        self.rng, self.shape = rng, shape
        self._buf: deque[np.ndarray] = deque()
        self._first = 1  # step index of _buf[0]

    def get(self, n: int) -> np.ndarray:
        if n < self._first:
            raise RuntimeError(f"noise for step {n} was already released")
        while n >= self._first + len(self._buf):
            self._buf.append(self.rng.standard_normal(self.shape))
        return self._buf[n - self._first]

    def release(self, n: int) -> None:
        while self._buf and self._first <= n:
            self._buf.popleft()
            self._first += 1


def make_streams(seed: int | None) -> tuple[np.random.Generator, np.random.Generator, np.random.Generator]:
    """(Gaussian integrator-noise stream, uniform accept-test stream, initial-velocity stream) for a seed."""
    if seed is not None:
        seed = check_int(seed, "seed", min=0)
    ss = np.random.SeedSequence(seed)
    a, b, c = ss.spawn(3)
    return np.random.default_rng(a), np.random.default_rng(b), np.random.default_rng(c)


# ------------------------------------------------------------------------------------------ validation
def _check_potential(p: Any, name: str) -> None:
    if not callable(getattr(p, "forces", None)):
        raise TypeError(f"{name} must be a Potential with a forces(x) method, got {type(p).__name__}")


def check_forces(f: Any, shape: tuple[int, ...], who: str, step: int) -> np.ndarray:
    """Validate a force array: shape equal to the positions' and all finite; ValueError names model and step."""
    f = np.asarray(f, dtype=np.float64)
    if f.shape != shape:
        raise ValueError(f"{who} forces have shape {f.shape} but positions have shape {shape} (step {step}); "
                         "draft and target must describe the same system")
    if not np.all(np.isfinite(f)):
        raise ValueError(f"{who} forces are not finite at step {step}")
    return f


def prepare_initial(integrator: Any, x0: Any, v0: Any, vrng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Validate x0 (N, D) and v0 (None -> Maxwell-Boltzmann draw) and prepare the integrator for N atoms."""
    x0 = check_array(x0, "x0 (positions, shape (N, D))", ndim=2, copy=True)
    if not callable(getattr(integrator, "prepare", None)):
        raise TypeError(f"integrator must be a BAOAB-like integrator, got {type(integrator).__name__}")
    integrator.prepare(x0.shape[0])
    if v0 is None:
        v0 = integrator.maxwell_boltzmann(x0.shape[0], x0.shape[1], vrng)
    v0 = check_array(v0, "v0 (velocities)", shape=x0.shape, copy=True)
    return x0, v0


def check_run_args(n_steps: Any, record_every: Any) -> tuple[int, int]:
    return check_int(n_steps, "n_steps", min=0), check_int(record_every, "record_every", min=1)


class _Recorder:
    """Collects frames; a frame's velocity needs F_t(x_n), which may arrive later (lazily resolved)."""

    def __init__(self, integrator: Any, record_every: int):
        self.integ, self.every = integrator, record_every
        self.frames: list[tuple[int, np.ndarray, np.ndarray, Any]] = []

    def add(self, n: int, x: np.ndarray, w: np.ndarray, forces: Any) -> None:
        if n % self.every == 0:
            self.frames.append((n, x, w, forces))

    def fill_last(self, n: int, forces: np.ndarray) -> None:
        if self.frames and self.frames[-1][0] == n and self.frames[-1][3] is None:
            step, x, w, _ = self.frames[-1]
            self.frames[-1] = (step, x, w, forces)

    def pending_last(self) -> bool:
        return bool(self.frames) and self.frames[-1][3] is None

    def build(self, h: float, stats: LSDStats, final: tuple[np.ndarray, np.ndarray]) -> Trajectory:
        steps = np.array([f[0] for f in self.frames], dtype=int)
        pos = np.array([f[1] for f in self.frames])
        vel = []
        for _, _, w, fo in self.frames:
            if hasattr(fo, "result"):  # a future (AsyncLSD)
                fo = fo.result()
            vel.append(self.integ.velocity(w, fo))
        return Trajectory(positions=pos, velocities=np.array(vel), times=steps * h, steps=steps, stats=stats,
                          final_state=final)


# ------------------------------------------------------------------------------------------ the driver
class LangevinSpeculativeDynamics:
    """Speculative Langevin MD: a cheap `draft` proposes, an expensive `target` verifies, exactly.

    Args:
        target: the Potential whose Langevin dynamics are sampled (forces(x) for (N, D) or (B, N, D)).
        draft: the cheap Potential proposing steps (same system, same shapes).
        integrator: a `BAOAB` (or any integrator with the same one-Gaussian structure).
        lookahead: K >= 1 draft steps per round (K = 1 gives the serial target chain's law, no speedup).
        verifier: "batch" (one vectorised target call on K+1 configurations), "threads" (a thread pool of
            `n_workers` evaluating configurations concurrently; the potential must be thread-safe) or
            "serial" (one configuration at a time: same chain and latency accounting, no parallelism).
        n_workers: threads for verifier="threads" (default K + 1).
        seed: base seed of the RNG streams (see the module docstring for the contract).
        progress: show a tqdm bar.
        warn_below_acceptance: after a run with at least 50 verified steps whose acceptance rate is below this
            value, a `LowAcceptanceWarning` reports the measured acceptance and steps per round (default
            `WARN_BELOW_ACCEPTANCE` = 0.3: then E[L] <= 1/(1 - 0.3) = 1.43, the draft cannot pay for itself;
            None disables the warning).

    `run(x0, v0=None, n_steps, record_every=1)` returns a `Trajectory`. A run leaves no state behind: the same
    object can run again (same seed, same trajectory).
    """

    def __init__(self, target: Any, draft: Any, integrator: BAOAB, lookahead: int = 16,
                 verifier: str = "batch", n_workers: int | None = None, seed: int | None = 0,
                 progress: bool = False, warn_below_acceptance: float | None = WARN_BELOW_ACCEPTANCE):
        _check_potential(target, "target")
        _check_potential(draft, "draft")
        if not callable(getattr(integrator, "mean", None)) or not callable(getattr(integrator, "next_w", None)):
            raise TypeError(f"integrator must be a BAOAB-like integrator, got {type(integrator).__name__}")
        self.target, self.draft, self.integrator = target, draft, integrator
        self.lookahead, self.verifier, self.n_workers = lookahead, verifier, n_workers
        self.seed, self.progress, self.warn_below_acceptance = seed, progress, warn_below_acceptance
        self._check_params()

    def _check_params(self) -> None:
        """Validate the settings (in __init__ and again in every `run`: attributes may be changed in between)."""
        _check_potential(self.target, "target")
        _check_potential(self.draft, "draft")
        self.lookahead = check_int(self.lookahead, "lookahead", min=1)
        if self.verifier not in VERIFIERS:
            raise ValueError(f"verifier must be one of {VERIFIERS}, got {self.verifier!r}")
        if self.n_workers is not None:
            self.n_workers = check_int(self.n_workers, "n_workers", min=1)
        make_streams(self.seed)  # validates the seed
        if self.warn_below_acceptance is not None:
            self.warn_below_acceptance = check_float(self.warn_below_acceptance, "warn_below_acceptance",
                                                     min=0.0, max=1.0)
        self.progress = check_bool(self.progress, "progress")

    # -------------------------------------------------------------------------------- force calls
    def _draft_forces(self, x: np.ndarray, step: int) -> np.ndarray:
        self._stats.draft_evals += 1
        return check_forces(self.draft.forces(x), x.shape, "draft", step)

    def _target_batch(self, configs: list[np.ndarray], first_step: int) -> list[np.ndarray]:
        """Target forces on a list of (N, D) configurations in one verification call."""
        self._stats.target_evals += len(configs)
        if self.verifier == "batch" and getattr(self.target, "supports_batch", False) and len(configs) > 1:
            out = list(np.asarray(self.target.forces(np.stack(configs)), dtype=np.float64))
            if len(out) != len(configs):
                raise ValueError(f"target returned {len(out)} force arrays for a batch of {len(configs)}")
        elif self.verifier == "threads" and len(configs) > 1:
            out = list(self._pool.map(self.target.forces, configs))
        else:
            out = [self.target.forces(c) for c in configs]
        return [check_forces(f, configs[0].shape, "target", first_step + i) for i, f in enumerate(out)]

    # -------------------------------------------------------------------------------- run
    def run(self, x0: Any, v0: Any = None, n_steps: int = 1000, record_every: int = 1) -> Trajectory:
        """Simulate `n_steps` Langevin steps of the target from (x0, v0); v0=None draws Maxwell-Boltzmann."""
        self._check_params()
        n_steps, record_every = check_run_args(n_steps, record_every)
        nrng, urng, vrng = make_streams(self.seed)
        integ = self.integrator
        x, v0 = prepare_initial(integ, x0, v0, vrng)
        self._stats = stats = LSDStats()
        t0 = time.perf_counter()
        self._pool = ThreadPoolExecutor(self.n_workers or self.lookahead + 1) if self.verifier == "threads" else None
        try:
            traj = self._simulate(x, v0, n_steps, record_every, NoiseStream(nrng, x.shape), urng)
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
        stats.wall_time = time.perf_counter() - t0
        self._warn_if_poor(stats)
        return traj

    def _warn_if_poor(self, stats: LSDStats) -> None:
        thr = self.warn_below_acceptance
        if thr is None or len(stats.accepted) < _MIN_VERIFIED_FOR_WARNING or stats.acceptance_rate >= thr:
            return
        warnings.warn(
            f"LSD acceptance {stats.acceptance_rate:.3f} over {len(stats.accepted)} verified steps is below "
            f"{thr:g}: {stats.steps_per_round:.2f} steps per sequential target round (serial MD = 1) and "
            f"{stats.target_evals_per_step:.2f} target evaluations per step. The draft is too far from the target "
            "for this timestep/temperature/friction (theory.first_step_delta predicts the acceptance): use a closer "
            "draft, a smaller timestep, or serial MD.", LowAcceptanceWarning, stacklevel=3)

    def _simulate(self, x, v0, n_steps, record_every, noise, urng) -> Trajectory:
        integ, stats, K = self.integrator, self._stats, self.lookahead
        sigma = integ.sigma(x.shape[0])
        (ft_x,) = self._target_batch([x], 0)
        stats.rounds = 0  # the initial force call is not a round
        w = integ.initial_w(v0, ft_x)
        rec = _Recorder(integ, record_every)
        rec.add(0, x, w, ft_x)
        acc_l, del_l, pos_l, len_l = [], [], [], []
        n = 0
        bar = _bar(n_steps, self.progress)
        while n < n_steps:
            k_eff = min(K, n_steps - n)
            # 1. draft k_eff steps from the verified state (fresh, step-indexed noise)
            xs, mus = [x], []
            xd, wd = x, w
            for k in range(k_eff):
                fd = self._draft_forces(xd, n + k)
                mu, vplus = integ.mean(xd, wd, fd)
                x_new = mu + sigma * noise.get(n + k + 1)
                wd = integ.next_w(xd, x_new, vplus)
                xd = x_new
                xs.append(x_new)
                mus.append(mu)
            # 2. one verification call on x^d_0..x^d_K (x^d_0 skipped when its forces are known)
            if ft_x is None:
                ft = self._target_batch(xs, n)
                ft_x = ft[0]
                rec.fill_last(n, ft_x)
            else:
                ft = [ft_x] + self._target_batch(xs[1:], n + 1)
            stats.rounds += 1
            # 3. scan: couple each draft step to the target step law from the verified state
            produced = 0
            for k in range(k_eff):
                mu_t, vplus_t = integ.mean(x, w, ft_x)
                y, acc, delta = reflection_maximal_coupling(xs[k + 1], mus[k], mu_t, sigma, urng.random())
                w = integ.next_w(x, y, vplus_t)  # always the target-consistent velocity
                x = y
                n += 1
                produced += 1
                acc_l.append(acc)
                del_l.append(delta)
                pos_l.append(k)
                ft_x = ft[k + 1] if acc else None
                rec.add(n, x, w, ft_x)
                if not acc:
                    break
            len_l.append(produced)
            noise.release(n)
            bar.update(produced)
        bar.close()
        if rec.pending_last():
            (ft_x,) = self._target_batch([x], n)
            rec.fill_last(n, ft_x)
        stats.steps = n
        stats.accepted = np.array(acc_l, dtype=bool)
        stats.deltas = np.array(del_l, dtype=float)
        stats.position_in_round = np.array(pos_l, dtype=int)
        stats.round_lengths = np.array(len_l, dtype=int)
        return rec.build(integ.timestep, stats, (x, w))


class AsyncLSD(LangevinSpeculativeDynamics):
    """Asynchronous (pipelined) LSD, the paper's design (spec section 2.3, last paragraph).

    The draft runs ahead in the calling thread; every draft configuration x^d_j is dispatched to a pool of
    `n_workers` target workers as soon as it exists. Verification consumes results in order: step n+1 is
    verified as soon as F_t(x_n) is back. On a rejection the in-flight work is cancelled and drafting restarts
    from the corrected state. At most `lookahead` draft steps are in flight beyond the verified step.

    The trajectory is deterministic for a given seed whatever the thread timing (step-indexed noise, see the
    module docstring); `stats.target_evals` / `draft_evals` (wasted work) depend on timing. `stats.rounds`
    counts draft (re)starts, so `steps_per_round` is the mean accepted run length (about 1 / (1 - alpha)).
    The target must be thread-safe (numpy and torch potentials are; an ASE calculator is serialised by a lock).
    """

    def __init__(self, target: Any, draft: Any, integrator: BAOAB, lookahead: int = 16,
                 n_workers: int = 2, seed: int | None = 0, progress: bool = False,
                 warn_below_acceptance: float | None = WARN_BELOW_ACCEPTANCE):
        super().__init__(target, draft, integrator, lookahead=lookahead, verifier="threads",
                         n_workers=n_workers, seed=seed, progress=progress,
                         warn_below_acceptance=warn_below_acceptance)
        self._lock = threading.Lock()

    def _submit(self, x: np.ndarray, step: int):
        def work():
            f = check_forces(self.target.forces(x), x.shape, "target", step)
            with self._lock:
                self._stats.target_evals += 1
            return f
        return self._pool.submit(work)

    def _simulate(self, x, v0, n_steps, record_every, noise, urng) -> Trajectory:
        integ, stats, window = self.integrator, self._stats, self.lookahead
        sigma = integ.sigma(x.shape[0])
        ft_fut = self._submit(x, 0)
        w = integ.initial_w(v0, ft_fut.result())
        rec = _Recorder(integ, record_every)
        rec.add(0, x, w, ft_fut)
        inflight: deque = deque()
        acc_l, del_l, pos_l, len_l = [], [], [], []
        n, m = 0, 0                  # verified step, draft step
        xd, wd = x, w
        run_len, restarts = 0, 1
        bar = _bar(n_steps, self.progress)
        while n < n_steps:
            can_draft = m - n < window and m < n_steps
            if can_draft and not (inflight and ft_fut.done()):
                fd = self._draft_forces(xd, m)
                mu, vplus = integ.mean(xd, wd, fd)
                x_new = mu + sigma * noise.get(m + 1)
                wd = integ.next_w(xd, x_new, vplus)
                xd = x_new
                m += 1
                inflight.append((x_new, mu, self._submit(x_new, m)))
                continue
            ft_x = ft_fut.result()
            xs, mu_d, fut = inflight.popleft()
            mu_t, vplus_t = integ.mean(x, w, ft_x)
            y, acc, delta = reflection_maximal_coupling(xs, mu_d, mu_t, sigma, urng.random())
            w = integ.next_w(x, y, vplus_t)
            x = y
            n += 1
            acc_l.append(acc)
            del_l.append(delta)
            pos_l.append(run_len)
            run_len += 1
            if acc:
                ft_fut = fut
            else:
                for _, _, f in inflight:
                    f.cancel()
                inflight.clear()
                ft_fut = self._submit(x, n)
                xd, wd, m = x, w, n
                len_l.append(run_len)
                run_len = 0
                restarts += int(n < n_steps)
            rec.add(n, x, w, ft_fut)
            noise.release(n)
            bar.update(1)
        bar.close()
        for _, _, f in inflight:
            f.cancel()
        if run_len:
            len_l.append(run_len)
        stats.steps = n
        stats.rounds = restarts if n_steps else 0
        stats.accepted = np.array(acc_l, dtype=bool)
        stats.deltas = np.array(del_l, dtype=float)
        stats.position_in_round = np.array(pos_l, dtype=int)
        stats.round_lengths = np.array(len_l, dtype=int)
        traj = rec.build(integ.timestep, stats, (x, w))
        return traj


def _bar(total: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not enabled, leave=False, desc="LSD", mininterval=0.5)


def steps_per_round_prediction(stats: LSDStats, lookahead: int) -> float:
    """sum_{p<K} prod_{j<p} alpha_bar_j with alpha_bar_p = mean of 2 Phi(-delta/2) over verified steps at
    position p (spec claim L3); positions never reached contribute alpha_bar = 0."""
    alphas = []
    for p in range(lookahead):
        d = stats.deltas[stats.position_in_round == p]
        alphas.append(float(np.mean([math.erfc(v / (2 * math.sqrt(2))) for v in d])) if len(d) else 0.0)
    out, prod = 0.0, 1.0
    for p in range(lookahead):
        out += prod
        prod *= alphas[p]
    return out
