"""Diagnosis only (calibration seeds 100-102, never an evaluation seed): does a safety update between the small
grid's 3e-5 x 200 (too weak) and 1e-4 x 200 (leaks) pass the issue-33 calibration rule?

Runs `experiment.calibration_job` with lr in {1e-4, 7e-5, 5e-5} x steps in {100, 200} on 2 single-thread processes
and applies the fixed rule (`choose_safety`). Writes benchmarks/active_attacks_calibration_finer_grid.json.
    flock /tmp/icml26-cpu.lock .venv/bin/python benchmarks/active_attacks_calibration_finer_grid.py
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch

from icml26.active_attacks import experiment as E

CFG = {**E.CONFIGS["small"], "scale": "small", "calibration_lrs": [1e-4, 7e-5, 5e-5], "calibration_steps": [100, 200],
       "calibration_only": []}


def _job(seed: int) -> dict:
    torch.set_num_threads(1)
    return E.calibration_job(seed, CFG)


if __name__ == "__main__":
    t0 = time.perf_counter()
    with ProcessPoolExecutor(2) as ex:
        runs = list(ex.map(_job, CFG["calibration_seeds"]))
    out = E.choose_safety(CFG, runs)
    res = {"grid": E.safety_grid(CFG), "table": out["table"], "chosen": out["chosen"],
           "criterion_met": out["criterion_met"],
           "after": {r["seed"]: [[round(x, 3) for x in a.values()] for a in r["after"]] for r in runs},
           "categories": list(runs[0]["before"]), "wall_s": time.perf_counter() - t0}
    Path(__file__).with_suffix(".json").write_text(json.dumps(res, indent=1))
    for row in out["table"]:
        print(row)
