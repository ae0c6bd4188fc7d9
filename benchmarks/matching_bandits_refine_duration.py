"""How long AdaptiveCertifiedGS keeps refining at small preference gaps (issue 15: the docs did not say).

    flock /tmp/icml26_heavy.lock .venv/bin/python benchmarks/matching_bandits_refine_duration.py \\
        [--players 4 --arms 5 --gap 0.06 --T 40000 --seeds 5]

For each seed, a finite-gap market (min_gap rejection sampling, sigma = 0.2, c_beta = 0.5 as in the claim checks)
is run for T rounds; prints the realised gap, the number of refine rounds, the last refine round and the
refine rounds after T/2, and the same for the small-run E1/E2 markets (N = 3, K = 4) at the default horizon.
Seeds run as parallel single-thread processes.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from icml26.common.parallel import run_parallel


def job(n_players: int, n_arms: int, gap: float, T: int, seed: int) -> dict:
    from icml26.matching_bandits import AdaptiveCertifiedGS, ContextualMarket, simulate

    env = ContextualMarket(n_players, n_arms, 3, contexts="finite", n_prototypes=6, min_gap=gap, noise=0.2,
                           seed=seed)
    tr = simulate(env, AdaptiveCertifiedGS(noise=0.2, beta_scale=0.5), T, seed=seed)
    idx = np.nonzero(tr.refined)[0]
    return {"N": n_players, "K": n_arms, "gap_requested": gap, "gap": float(env.min_gap), "T": T, "seed": seed,
            "n_refine": int(tr.refined.sum()), "last_refine_round": int(idx.max() + 1) if idx.size else 0,
            "refine_after_half": int(tr.refined[T // 2:].sum())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--players", type=int, default=4)
    ap.add_argument("--arms", type=int, default=5)
    ap.add_argument("--gap", type=float, default=0.06)
    ap.add_argument("--T", type=int, default=40_000)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    jobs = [{"n_players": a.players, "n_arms": a.arms, "gap": a.gap, "T": a.T, "seed": s} for s in range(a.seeds)]
    jobs += [{"n_players": 3, "n_arms": 4, "gap": g, "T": 8000, "seed": s} for g in (0.06, 0.1) for s in range(a.seeds)]
    out = run_parallel(job, jobs, desc="refine duration")
    for r in out:
        print(f"N={r['N']} K={r['K']} gap>={r['gap_requested']} (realised {r['gap']:.3f}) T={r['T']} seed {r['seed']}: "
              f"{r['n_refine']} refine rounds, last at {r['last_refine_round']}, {r['refine_after_half']} after T/2")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
