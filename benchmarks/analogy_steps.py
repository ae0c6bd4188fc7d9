"""Training throughput, one thread: full-batch GD steps per second of the float64 FactorizedTransformer, and
full-batch AdamW steps per second of the GPT arm (GPT-2 architecture, typed logits) at its small and medium sizes.

    .venv/bin/python benchmarks/analogy_steps.py            # default world (V=147) and a 4x larger one; GPT arm
Prints one JSON line per setting. Run under the shared lock for a reportable number.
"""

import json
import time

import torch

from icml26.analogy import AnalogyWorld, FactorizedTransformer, fit
from icml26.analogy.baselines import run_gpt_curriculum


def bench(n_groups: int, steps: int = 2000) -> dict:
    w = AnalogyWorld(n_groups=n_groups, seed=0)
    m = FactorizedTransformer(w.vocab_size, answer_sets=w.answer_sets, seed=0)
    fit(m, w.premises, 50)  # warm-up
    t = time.perf_counter()
    fit(m, w.premises, steps)
    dt = time.perf_counter() - t
    return {"model": "minimal", "n_groups": n_groups, "vocab_size": w.vocab_size, "n_premises": len(w.premises),
            "d_model": 32, "dtype": "float64", "threads": torch.get_num_threads(), "steps": steps,
            "steps_per_s": round(steps / dt, 1)}


def bench_gpt(n_layers: int, d_model: int, n_heads: int, steps: int = 100) -> dict:
    # joint schedule: one stage over all 136 premises of the default world
    run_gpt_curriculum("joint", 0, n_layers=n_layers, d_model=d_model, n_heads=n_heads, steps_per_stage=5)
    t = time.perf_counter()
    run_gpt_curriculum("joint", 0, n_layers=n_layers, d_model=d_model, n_heads=n_heads, steps_per_stage=steps)
    dt = time.perf_counter() - t
    return {"model": "gpt", "n_layers": n_layers, "d_model": d_model, "n_heads": n_heads, "n_premises": 136,
            "threads": torch.get_num_threads(), "steps": steps, "steps_per_s": round(steps / dt, 1)}


if __name__ == "__main__":
    torch.set_num_threads(1)
    for g in (8, 32):
        print(json.dumps(bench(g)))
    for shape in ((2, 64, 4), (4, 128, 4)):
        print(json.dumps(bench_gpt(*shape)))
