"""Active Attacks throughput: attacker samples/s, victim replies/s, and the cost of the periodic victim safety
fine-tuning relative to plain GFlowNet training (paper: about 6 % extra compute).

    flock /tmp/icml26_heavy.lock .venv/bin/python benchmarks/active_attacks_throughput.py [--steps 400]

One ToxWorld world (seed 0, the small config), then a GFlowNet arm and a GFlowNet + Active Attacks arm (K = steps/5)
run one after the other in this process, single-threaded. The overhead is reported two ways: the time spent inside
`safety_finetune` as a share of the AA arm's training time (the paper's notion), and the AA arm's total training
time over the GFlowNet arm's (which also includes the re-seeded buffers and the different prompts AA samples).
"""

from __future__ import annotations

import argparse
import json

import torch

from icml26.active_attacks.experiment import CONFIGS, build_world, run_arm


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = {**CONFIGS["small"], "steps": args.steps, "interval": max(1, args.steps // 5), "real_judge": False,
           "mle_steps": 1, "mle_samples": 8, "asr_samples": 50}
    world = build_world(args.seed, cfg)
    out = {}
    for arm in ("gfn", "aa"):
        r = run_arm(arm, args.seed, cfg, world)
        t, c = r["timing"], r["counts"]
        out[arm] = {"train_s": t["train_s"], "attacker_samples_per_s": c["attacker_samples"] / t["train_s"],
                    "victim_replies_per_s": c["victim_responses"] / t["train_s"],
                    "safety_finetune_s": t["safety_finetune_s"],
                    "breakdown_s": {k: round(v, 2) for k, v in t.items() if k.endswith("_s")}}
    out["finetune_share_of_aa_training"] = out["aa"]["safety_finetune_s"] / out["aa"]["train_s"]
    out["aa_training_time_over_gfn"] = out["aa"]["train_s"] / out["gfn"]["train_s"] - 1.0
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
