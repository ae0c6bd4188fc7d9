"""Wall-time benchmark of LSD (spec section 6D): serial vs speculative with numpy and torch targets.

    flock /tmp/icml26_heavy.lock .venv/bin/python benchmarks/lsd_walltime.py [--steps 3000] [--device cpu]

Prints, per target backend, the steps per sequential target round (latency speedup), target evaluations
per produced step, the measured wall speedup and the cost model of spec 2.4 (batched-call cost b_{K+1},
draft cost ratio rho_d) and, for torch, the asynchronous variant.
"""

from __future__ import annotations

import argparse
import json

from icml26.lsd.experiment import CONFIGS, job_walltime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--lookahead", type=int, default=16)
    ap.add_argument("--A", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    cfg = dict(CONFIGS["small"], d_steps=args.steps, device=args.device, b_main_lookahead=args.lookahead,
               c_A=args.A)
    print(json.dumps(job_walltime(cfg, args.seed), indent=2))


if __name__ == "__main__":
    main()
