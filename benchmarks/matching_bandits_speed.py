"""Rounds per second of the matching-market simulator and of AdaptiveCertifiedGS, as N = K grows.

    flock /tmp/icml26_heavy.lock .venv/bin/python benchmarks/matching_bandits_speed.py [--sizes 10 25 50 100 200]

Measures, single-threaded (OMP/MKL threads = 1), with sphere contexts (continuous: the certificate rarely passes,
the worst case for AdaptiveCertifiedGS) and d = 10:
- env: ContextualMarket observe + benchmark + pull per round (contexts, arm ranks, utilities and the benchmark GS
  are produced in vectorised blocks of 1024 rounds);
- simulate(RandomMatching): the full simulator loop incl. regret/instability bookkeeping, trivial policy;
- adaptive select+update: AdaptiveCertifiedGS alone (ridge widths, GS, certificate, refine, Sherman-Morrison);
- simulate(Adaptive): both together.
Also the finite-gap market (E1-like, prototypes = 2K, no min gap) where the certificate passes after learning.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

from icml26.matching_bandits import AdaptiveCertifiedGS, ContextualMarket, RandomMatching, simulate  # noqa: E402


def _rounds(N: int) -> int:
    return max(300, min(4000, 200_000 // (N * N) * 10))


def bench(N: int, d: int = 10, contexts: str = "sphere") -> dict[str, float]:
    T = _rounds(N)
    kw = dict(n_prototypes=2 * N) if contexts == "finite" else {}
    env = ContextualMarket(N, N, d, contexts=contexts, noise=0.2, seed=0, **kw)
    env.reset()
    t0 = time.perf_counter()
    for _ in range(T):
        env.observe()
        m = env.benchmark()
        env.pull(m)
    env_rps = T / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    simulate(env, RandomMatching(), T, seed=0)
    sim_rps = T / (time.perf_counter() - t0)
    pol = AdaptiveCertifiedGS(noise=0.2, beta_scale=0.5)
    env.reset()
    pol.reset(0)
    spent = 0.0
    for _ in range(T):
        X, R = env.observe()
        t1 = time.perf_counter()
        m = pol.select(X, R)
        spent += time.perf_counter() - t1
        r = env.pull(m)
        t1 = time.perf_counter()
        pol.update(X, m, r)
        spent += time.perf_counter() - t1
    pol_rps = T / spent
    refine_frac = pol.n_refine_ / T
    t0 = time.perf_counter()
    simulate(env, AdaptiveCertifiedGS(noise=0.2, beta_scale=0.5), T, seed=0)
    both_rps = T / (time.perf_counter() - t0)
    return {"N=K": N, "T": T, "env": env_rps, "simulate(random)": sim_rps, "adaptive select+update": pol_rps,
            "simulate(adaptive)": both_rps, "refine fraction": refine_frac}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 25, 50, 100, 200])
    ap.add_argument("--dim", type=int, default=10)
    args = ap.parse_args()
    for contexts in ("sphere", "finite"):
        print(f"\ncontexts={contexts}, d={args.dim}  (rounds per second)")
        rows = [bench(N, args.dim, contexts) for N in args.sizes]
        keys = list(rows[0])
        print(" | ".join(f"{k:>22s}" for k in keys))
        for r in rows:
            print(" | ".join(f"{r[k]:>22.3g}" if isinstance(r[k], float) else f"{r[k]:>22d}" for k in keys))


if __name__ == "__main__":
    main()
