"""Optional ablation of the CPU reproduction (spec section 6, report only), seed 0 of the small config.

    flock /tmp/icml26_heavy.lock .venv/bin/python benchmarks/gradpower_ablation.py [--out ablation.json]

Runs (each AdamW vs AdamWPower pair shares init and batches):
- p in {0.8, 1.5} on the spec configuration (p = 1.0 and 1.2 come from `icml26 run gradpower --scale small`);
- regime: d_model 64 x 4000 steps (~26 bytes/param) and d_model 128 x 1000 steps (~4 bytes/param,
  signal-dominated), AdamW vs AdamWPower p = 1.2;
- learning-rate context: AdamW and AdamWPower at lr 1e-3 and 3e-3 (the spec fixes 2e-3 as "AdamW-tuned"; this
  checks whether it is AdamW's best lr on this machine's corpus; the gate is *not* re-evaluated at another lr).
`icml26 run gradpower --scale small --set ablation=true` runs the first two groups inside the experiment instead.
"""

from __future__ import annotations

import argparse
import copy
import json

from icml26.common.parallel import run_parallel
from icml26.gradpower.experiment import CONFIGS, train_arm


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    base = copy.deepcopy(CONFIGS["small"])
    base["scale"] = "small"
    jobs = []
    for q in (0.8, 1.5):
        jobs.append(dict(config=base, seed=0, optimizer="adamwpower", power=q, d_model=32, steps=4000,
                         label=f"p{q}"))
    for width, steps in ((64, 4000), (128, 1000)):
        for name, q in (("adamw", 1.0), ("adamwpower", 1.2)):
            jobs.append(dict(config=base, seed=0, optimizer=name, power=q, d_model=width, steps=steps,
                             label=f"d{width}_{name}"))
    for lr in (1e-3, 3e-3):
        cfg = {**base, "lr": lr}
        for name, q in (("adamw", 1.0), ("adamwpower", 1.2)):
            jobs.append(dict(config=cfg, seed=0, optimizer=name, power=q, d_model=32, steps=4000,
                             label=f"lr{lr}_{name}"))
    jobs.sort(key=lambda j: -(j["d_model"] ** 2 * j["steps"] / 1024 + j["steps"]))
    outs = run_parallel(train_arm, jobs, workers=args.workers, desc=f"ablation {len(jobs)} runs")
    res = {o["label"]: {"final": o["final"], "val_loss": o["val_loss"], "n_params": o["n_params"],
                        "wall_s": o["wall_s"]} for o in outs}
    summary = {k: round(v["final"], 4) for k, v in res.items()}
    for key in ("d64", "d128"):
        summary[f"{key}_gap"] = round(res[f"{key}_adamw"]["final"] - res[f"{key}_adamwpower"]["final"], 4)
    for lr in (1e-3, 3e-3):
        summary[f"lr{lr}_gap"] = round(res[f"lr{lr}_adamw"]["final"] - res[f"lr{lr}_adamwpower"]["final"], 4)
    print(json.dumps(summary, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"summary": summary, "runs": res}, f, indent=1)


if __name__ == "__main__":
    main()
