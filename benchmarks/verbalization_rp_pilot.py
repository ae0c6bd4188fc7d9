"""One pilot of the real-LM persona arm (claim RP, issue 37) on SmolLM2-135M-Instruct, seed 0, default sizes.

    flock /tmp/icml26-cpu.lock timeout 600 .venv/bin/python benchmarks/verbalization_rp_pilot.py
Writes benchmarks/verbalization_rp_pilot.json (the arm's result, also cached for `--set real_lm_persona=true`).
"""

import json
import time
from pathlib import Path

import torch

from icml26.verbalization.real_lm import smollm2_lit_persona

t0 = time.perf_counter()
print("torch threads", torch.get_num_threads(), flush=True)
res = smollm2_lit_persona(ft_steps=100, lit_steps=80)
res["pilot_wall_s"] = time.perf_counter() - t0
print(json.dumps(res["accuracy"], indent=1), res["time_s"], res["loss"], flush=True)
for e in res["examples"]:
    print(e)
Path(__file__).with_suffix(".json").write_text(json.dumps(res, indent=1))
