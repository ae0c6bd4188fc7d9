"""Optimizer step time of AdamWPower vs torch.optim.AdamW on a ~10M-parameter TinyLlama (closing-note figure).

    flock /tmp/icml26_heavy.lock .venv/bin/python benchmarks/gradpower_step_time.py [--threads 1] [--reps 30]

Times `optimizer.step()` only (gradients are refilled from a saved copy outside the timed region, because the
transform overwrites `.grad`). Arms are interleaved and the median over repetitions is reported, so load
fluctuations on a shared machine hit every arm alike. Prints a JSON line with ms/step and ratios vs AdamW.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from icml26.gradpower import AdamWPower, GradPower, TinyLlama


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--e2e-reps", type=int, default=6, help="full training steps (fwd+bwd+step) per arm; 0 = skip")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = TinyLlama(256, 384, 6, 6, 256, d_ff=1024).to(args.device)
    n = model.num_params()
    grads = [torch.randn_like(p) * 1e-3 for p in model.parameters()]
    hp = dict(lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    arms = {
        "adamw_foreach": lambda ps: torch.optim.AdamW(ps, foreach=True, **hp),
        "adamwpower_foreach": lambda ps: AdamWPower(ps, foreach=True, power=1.2, **hp),
        "gradpower(adamw_foreach)": lambda ps: GradPower(torch.optim.AdamW(ps, foreach=True, **hp), power=1.2),
        "adamw_fused": lambda ps: torch.optim.AdamW(ps, fused=True, **hp),
        "adamwpower_fused": lambda ps: AdamWPower(ps, fused=True, power=1.2, **hp),
    }
    params = list(model.parameters())
    opts = {k: f(params) for k, f in arms.items()}
    times: dict[str, list[float]] = {k: [] for k in arms}

    def sync():
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()

    for rep in range(args.reps + 3):
        for k, opt in opts.items():
            with torch.no_grad():
                for p, g in zip(params, grads):
                    p.grad = g.clone()
            sync()
            t0 = time.perf_counter()
            opt.step()
            sync()
            if rep >= 3:  # warm-up (state allocation) excluded
                times[k].append(time.perf_counter() - t0)
    med = {k: 1e3 * statistics.median(v) for k, v in times.items()}
    out = {"n_params": n, "device": args.device, "threads": args.threads, "reps": args.reps,
           "median_ms": {k: round(v, 3) for k, v in med.items()},
           "ratio_adamwpower_vs_adamw_foreach": round(med["adamwpower_foreach"] / med["adamw_foreach"], 3),
           "ratio_gradpower_vs_adamw_foreach": round(med["gradpower(adamw_foreach)"] / med["adamw_foreach"], 3),
           "ratio_adamwpower_fused_vs_adamw_fused": round(med["adamwpower_fused"] / med["adamw_fused"], 3),
           "ratio_adamwpower_fused_vs_adamw_foreach": round(med["adamwpower_fused"] / med["adamw_foreach"], 3)}
    if args.e2e_reps:
        # whole training step (batch 8 x 128 tokens): the overhead a user sees
        x = torch.randint(0, 256, (8, 129), device=args.device)
        e2e = {"adamw_foreach": opts["adamw_foreach"], "adamwpower_foreach": opts["adamwpower_foreach"]}
        t_e2e: dict[str, list[float]] = {k: [] for k in e2e}
        for rep in range(args.e2e_reps + 1):
            for k, opt in e2e.items():
                sync()
                t0 = time.perf_counter()
                logits = model(x[:, :-1])
                loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 256), x[:, 1:].reshape(-1))
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                sync()
                if rep:
                    t_e2e[k].append(time.perf_counter() - t0)
        m2 = {k: 1e3 * statistics.median(v) for k, v in t_e2e.items()}
        out["train_step_median_ms"] = {k: round(v, 1) for k, v in m2.items()}
        out["train_step_ratio"] = round(m2["adamwpower_foreach"] / m2["adamw_foreach"], 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
