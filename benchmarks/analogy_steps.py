"""Training throughput of the float64 FactorizedTransformer: full-batch GD steps per second, one thread.

    .venv/bin/python benchmarks/analogy_steps.py            # default world (V=147) and a 4x larger one
Prints one JSON line per world. Run under the shared lock for a reportable number.
"""

import json
import time

import torch

from icml26.analogy import AnalogyWorld, FactorizedTransformer, fit


def bench(n_groups: int, steps: int = 2000) -> dict:
    w = AnalogyWorld(n_groups=n_groups, seed=0)
    m = FactorizedTransformer(w.vocab_size, answer_sets=w.answer_sets, seed=0)
    fit(m, w.premises, 50)  # warm-up
    t = time.perf_counter()
    fit(m, w.premises, steps)
    dt = time.perf_counter() - t
    return {"n_groups": n_groups, "vocab_size": w.vocab_size, "n_premises": len(w.premises), "d_model": 32,
            "dtype": "float64", "threads": torch.get_num_threads(), "steps": steps,
            "steps_per_s": round(steps / dt, 1)}


if __name__ == "__main__":
    torch.set_num_threads(1)
    for g in (8, 32):
        print(json.dumps(bench(g)))
