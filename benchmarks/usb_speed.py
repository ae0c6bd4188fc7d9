"""USB vs OT-CFM speed: training time per iteration and simulated cells per second (single thread).

Run under the heavy lock:  flock /tmp/icml26_heavy.lock .venv/bin/python benchmarks/usb_speed.py
Data: the spec's branching data (seed 0), all four time points. Both models use the same MLP (3 x 64),
batch 256 and the same simulation step (shortest interval / 50). USB trains three networks (velocity,
score, growth) and simulates discrete births/deaths (three networks per step); OT-CFM trains and integrates
one velocity network.
"""

from __future__ import annotations

import argparse
import json
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--sims", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from icml26.usb import UnbalancedSchrodingerBridge, simulate_branching
    from icml26.usb.baselines import OTCFM

    d = simulate_branching(seed=0)
    out = {}
    for name, cls, mode in (("USB", UnbalancedSchrodingerBridge, "discrete"), ("OTCFM", OTCFM, "ode")):
        cls(n_iter=20, seed=0).fit(d.snapshots, d.times)  # warm-up (lazy imports, allocator)
        m = cls(n_iter=args.iters, seed=0).fit(d.snapshots, d.times)
        t0 = time.perf_counter()
        cells = steps = 0
        for s in range(args.sims):
            sim = m.simulate(d.snapshots[0], d.times, mode=mode, seed=s, record_events=False)
            cells += sim.counts()[-1]
            steps += sum(sim.counts()[1:]) * 50  # approx. particle-steps (50 steps per unit interval)
        dt = time.perf_counter() - t0
        out[name] = {"ms_per_iter": 1e3 * m.train_time_s_ / args.iters, "sim_cells_per_s": cells / dt,
                     "particle_steps_per_s": steps / dt, "cells_at_t3": cells / args.sims}
    out["ratio_train_time_per_iter"] = out["USB"]["ms_per_iter"] / out["OTCFM"]["ms_per_iter"]
    out["ratio_sim_cells_per_s"] = out["USB"]["sim_cells_per_s"] / out["OTCFM"]["sim_cells_per_s"]
    out["ratio_particle_steps_per_s"] = out["USB"]["particle_steps_per_s"] / out["OTCFM"]["particle_steps_per_s"]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
