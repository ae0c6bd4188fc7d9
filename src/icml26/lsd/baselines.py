"""Baselines of the LSD paper behind the same interface (spec section 4).

* `serial_langevin`: the reference, serial BAOAB with the target (exact; one target call per step, strictly
  sequential). Uses the same RNG streams as `LangevinSpeculativeDynamics` (noise z_n for step n), so LSD with
  draft == target reproduces it bit for bit.
* `draft_only`: serial BAOAB with the draft (fast, biased: samples the draft's Boltzmann distribution).
* `respa`: multiple time stepping (RESPA / impulse MTS): `inner_steps` BAOAB steps with the draft force inside
  an outer impulse of the correction (F_t - F_d) every `inner_steps` steps (half kicks of inner_steps h at
  both ends of the outer cycle). Fewer target calls, no exactness guarantee (resonances, bias).
All return a `Trajectory` whose `stats` use the LSD counters (rounds = sequential target calls).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from icml26.lsd.integrator import BAOAB
from icml26.lsd.speculative import (LSDStats, NoiseStream, Trajectory, _bar, _check_potential, _Recorder,
                                    check_forces, check_run_args, make_streams, prepare_initial)

__all__ = ["serial_langevin", "draft_only", "respa"]


def serial_langevin(potential: Any, integrator: BAOAB, x0: Any, v0: Any = None, n_steps: int = 1000,
                    seed: int | None = 0, record_every: int = 1, progress: bool = False) -> Trajectory:
    """Serial BAOAB Langevin dynamics of `potential` from (x0 (N, D), v0 or None); returns a `Trajectory`."""
    _check_potential(potential, "potential")
    n_steps, record_every = check_run_args(n_steps, record_every)
    nrng, _, vrng = make_streams(seed)
    x, v0 = prepare_initial(integrator, x0, v0, vrng)
    noise = NoiseStream(nrng, x.shape)
    sigma = integrator.sigma(x.shape[0])
    stats = LSDStats()
    t0 = time.perf_counter()
    f = check_forces(potential.forces(x), x.shape, "target", 0)
    w = integrator.initial_w(v0, f)
    rec = _Recorder(integrator, record_every)
    rec.add(0, x, w, f)
    bar = _bar(n_steps, progress)
    for n in range(1, n_steps + 1):
        mu, vplus = integrator.mean(x, w, f)
        x_new = mu + sigma * noise.get(n)
        noise.release(n)
        w = integrator.next_w(x, x_new, vplus)
        x = x_new
        f = check_forces(potential.forces(x), x.shape, "target", n)
        rec.add(n, x, w, f)
        bar.update()
    bar.close()
    stats.steps = stats.rounds = n_steps
    stats.target_evals = n_steps + 1
    stats.round_lengths = np.ones(n_steps, dtype=int)
    stats.wall_time = time.perf_counter() - t0
    return rec.build(integrator.timestep, stats, (x, w))


def draft_only(draft: Any, integrator: BAOAB, x0: Any, v0: Any = None, n_steps: int = 1000,
               seed: int | None = 0, record_every: int = 1, progress: bool = False) -> Trajectory:
    """Serial Langevin with the draft alone (biased toward the draft's Boltzmann law); stats count draft calls."""
    traj = serial_langevin(draft, integrator, x0, v0, n_steps, seed, record_every, progress)
    s = traj.stats
    s.draft_evals, s.target_evals, s.rounds = s.target_evals, 0, 0
    return traj


def respa(target: Any, draft: Any, integrator: BAOAB, x0: Any, v0: Any = None, n_steps: int = 1000,
          inner_steps: int = 4, seed: int | None = 0, record_every: int = 1, progress: bool = False
          ) -> Trajectory:
    """Impulse multiple time stepping: draft forces every step, the correction F_t - F_d every `inner_steps`.

    One outer cycle (k = inner_steps, h the integrator timestep):
        v += (k h / 2m) (F_t - F_d)(x);  k BAOAB steps with F_d;  v += (k h / 2m) (F_t - F_d)(x)
    Frames are recorded at outer-cycle boundaries that are multiples of `record_every`.
    """
    _check_potential(target, "target")
    _check_potential(draft, "draft")
    if not isinstance(inner_steps, (int, np.integer)) or inner_steps < 1:
        raise ValueError(f"inner_steps must be an int >= 1, got {inner_steps!r}")
    n_steps, record_every = check_run_args(n_steps, record_every)
    nrng, _, vrng = make_streams(seed)
    x, v = prepare_initial(integrator, x0, v0, vrng)
    noise = NoiseStream(nrng, x.shape)
    sigma = integrator.sigma(x.shape[0])
    m = integrator.masses_for(x.shape[0])
    h, k = integrator.timestep, int(inner_steps)
    stats = LSDStats()
    t0 = time.perf_counter()
    fd = check_forces(draft.forces(x), x.shape, "draft", 0)
    ft = check_forces(target.forces(x), x.shape, "target", 0)
    stats.target_evals, stats.draft_evals = 1, 1
    frames_x, frames_v, frames_n = [x], [v], [0]
    n = 0
    bar = _bar(n_steps, progress)
    while n < n_steps:
        v = v + (k * h / (2 * m)) * (ft - fd)
        for _ in range(min(k, n_steps - n)):
            # BAOAB with the draft: B A O A (the final B merges into the next step's first B)
            w = v - (h / (2 * m)) * fd
            mu, vplus = integrator.mean(x, w, fd)
            n += 1
            x_new = mu + sigma * noise.get(n)
            noise.release(n)
            w = integrator.next_w(x, x_new, vplus)
            x = x_new
            fd = check_forces(draft.forces(x), x.shape, "draft", n)
            stats.draft_evals += 1
            v = w + (h / (2 * m)) * fd
        ft = check_forces(target.forces(x), x.shape, "target", n)
        stats.target_evals += 1
        stats.rounds += 1
        v = v + (k * h / (2 * m)) * (ft - fd)
        if n % record_every == 0:
            frames_x.append(x)
            frames_v.append(v)
            frames_n.append(n)
        bar.update(min(k, n_steps - n + k))
    bar.close()
    stats.steps = n
    stats.wall_time = time.perf_counter() - t0
    steps = np.array(frames_n, dtype=int)
    return Trajectory(positions=np.array(frames_x), velocities=np.array(frames_v), times=steps * h, steps=steps,
                      stats=stats, final_state=(x, integrator.initial_w(v, ft)))
