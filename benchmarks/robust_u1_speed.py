"""Robust-U1 performance figures (issue 22): restorations per second and GRPO step time, one CPU thread.

    flock /tmp/icml26_heavy.lock .venv/bin/python benchmarks/robust_u1_speed.py [--steps 20]

- restorations/s: TinyRestorer (16 ch, 5 layers, 7.3k parameters) forward on 24 x 24 digits, batch 256;
- corruptions/s: RandomCorruption (all kinds, severities 1..5) on batches of 64;
- GRPO step: B 64 inputs x G 8 samples, reward 1.0 SSIM + 0.2 embedding similarity (TinyEncoder), KL to the
  SFT copy, one inner epoch; with the grouped reward path (each reference embedded once) and without it;
- SFT step: batch 64, L1, Adam.
Median of repeated timings; prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from icml26.robust_u1 import (
    CompositeReward,
    EmbeddingSimilarityReward,
    GaussianRestorationPolicy,
    GRPOConfig,
    GRPORestorationTrainer,
    RandomCorruption,
    SSIMReward,
    TinyEncoder,
    TinyRestorer,
    load_digits_images,
    restore,
)


class _Ungrouped:
    """The same reward without its `grouped` fast path (each reference scored G times)."""

    def __init__(self, reward):
        self.reward = reward

    def __call__(self, images, refs):
        return self.reward(images, refs)


def _median_time(fn, repeats: int) -> float:
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20, help="GRPO steps timed per variant")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    x, y = load_digits_images()
    restorer = TinyRestorer()
    batch = x[:256]
    restore(restorer, batch)  # warm-up
    t_rest = _median_time(lambda: restore(restorer, batch), 10)
    rc = RandomCorruption()
    g = torch.Generator().manual_seed(0)
    t_corr = _median_time(lambda: rc(x[:64], generator=g), 10)
    enc = TinyEncoder().freeze()
    reward = CompositeReward({"ssim": (SSIMReward(), 1.0), "clip": (EmbeddingSimilarityReward(enc), 0.2)})
    out = {"threads": torch.get_num_threads(), "restorations_per_s": 256 / t_rest, "corruptions_per_s": 64 / t_corr}
    for name, rew in (("grouped", reward), ("ungrouped", _Ungrouped(reward))):
        pol = GaussianRestorationPolicy(TinyRestorer(), std=0.05)
        tr = GRPORestorationTrainer(pol, rew, GRPOConfig(steps=args.steps, batch_size=64, group_size=8))
        xc = rc(x[:64], generator=g)[0]
        tr.step(xc, x[:64], g)  # warm-up
        out[f"grpo_step_s_{name}"] = _median_time(lambda tr=tr, xc=xc: tr.step(xc, x[:64], g), args.steps)
    opt = torch.optim.Adam(restorer.parameters(), lr=1e-3)

    def sft_step():
        loss = torch.nn.functional.l1_loss(restorer(xc), x[:64])
        opt.zero_grad()
        loss.backward()
        opt.step()

    out["sft_step_s_batch64"] = _median_time(sft_step, 20)
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in out.items()}))


if __name__ == "__main__":
    main()
