"""Speed of the TIE serving simulator: simulated requests per second (one core), fast path vs step-by-step.

    flock /tmp/icml26_heavy.lock .venv/bin/python benchmarks/tie_sim_speed.py [--n 2000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from icml26.tie import (EngineConfig, FCFSQueue, ScoreQueue, ServingSimulator, TIEQueue, Workload, capacity_rps,
                        poisson_arrivals, tie_terms)
from icml26.tie.data import make_prompts, sample_lengths


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--load", type=float, default=0.95)
    args = ap.parse_args()
    torch.set_num_threads(1)
    ps = make_prompts(args.n, 0)
    T = sample_lengths(ps, 1, 1)[:, 0]
    m, c = tie_terms(ps.mu, ps.sigma)
    feats = [{"tie_mean": float(a), "tie_cvar": float(b)} for a, b in zip(m, c)]
    rate = args.load * capacity_rps(float(sample_lengths(make_prompts(3000, 9), 4, 2).mean()))
    w = Workload(ps.prompt_len, T, poisson_arrivals(args.n, rate, 3), features=feats)
    out = {}
    for kv in (60_000, 12_000):
        for name, make in (("fcfs", FCFSQueue), ("tie", TIEQueue), ("oracle", lambda: ScoreQueue(lambda r: T[r.id]))):
            for fast in (True, False):
                best = float("inf")
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    met = ServingSimulator(EngineConfig(kv_capacity_tokens=kv), make(), fast=fast).run(w)
                    best = min(best, time.perf_counter() - t0)
                key = f"kv={kv}/{name}/{'fast' if fast else 'stepwise'}"
                out[key] = {"seconds": best, "requests_per_s": args.n / best, "steps": met["n_steps"],
                            "preemptions": met["n_preemptions"]}
                print(f"{key:32s} {best * 1e3:8.1f} ms  {args.n / best:9.0f} req/s  steps={met['n_steps']}  "
                      f"preemptions={met['n_preemptions']}")
    print(json.dumps({"n": args.n, "load": args.load, "results": out}))


if __name__ == "__main__":
    main()
