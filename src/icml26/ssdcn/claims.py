"""Claim checks of the CPU reproduction (spec 6 as amended by review notes 1-7) and the issue's report-only
versions. Each function takes measurements and returns a `Claim` whose `held` is computed from them; the tests
feed deliberately broken measurements through the same functions to show each gate can fail.

Per-image inputs are lists per seed: `psnr[model][seed_index][image]`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from icml26.results import Claim

__all__ = [
    "attention_flops_analytic",
    "block_flops",
    "claim_complexity",
    "claim_efficiency",
    "claim_global_mixing",
    "claim_issue_efficiency",
    "claim_issue_quality",
    "claim_vs_bicubic",
    "claim_vs_cnn",
    "paired",
]

PAPER = "abstract only: beats SOTA with significantly fewer params and FLOPs (no numbers)"


def block_flops(block: nn.Module, dim: int, sizes: Sequence[int]) -> dict[int, int]:
    """FLOPs (FlopCounterMode, 2 per MAC) of one forward of `block` on (1, dim, s, s) for each s in `sizes`,
    counted on the meta device (no compute, no memory for the N x N attention matrix)."""
    meta = copy.deepcopy(block).to("meta")
    out = {}
    for s in sizes:
        x = torch.empty(1, dim, int(s), int(s), device="meta")
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            meta.mix(x) if hasattr(meta, "mix") else meta(x)
        out[int(s)] = int(counter.get_total_flops())
    return out


def attention_flops_analytic(n_tokens: int, dim: int) -> int:
    """4 N^2 d: q k^T and (softmax) v, 2 FLOPs per multiply-add, summed over heads (d = total width)."""
    return 4 * n_tokens * n_tokens * dim


def paired(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> dict[str, object]:
    """Paired difference a - b. a, b: [seed][image]. Returns per-seed mean differences, their mean and
    max - min, and the per-image difference (averaged over seeds) with its standard error and 95 % CI."""
    a_, b_ = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a_.shape != b_.shape or a_.ndim != 2:
        raise ValueError(f"paired needs two [seed][image] arrays of one shape, got {a_.shape} and {b_.shape}")
    d = a_ - b_
    per_seed = d.mean(axis=1)
    per_image = d.mean(axis=0)
    se = float(per_image.std(ddof=1) / math.sqrt(per_image.size)) if per_image.size > 1 else float("nan")
    mean = float(per_seed.mean())
    return {"mean": mean, "per_seed": per_seed.tolist(), "spread": float(per_seed.max() - per_seed.min()),
            "se": se, "ci95": [mean - 1.96 * se, mean + 1.96 * se], "n_images": int(per_image.size),
            "n_seeds": int(per_seed.size)}


def _decidability(p: dict, margin: float) -> str:
    if p["n_seeds"] == 1:
        return ("one training seed: the seed-to-seed spread is not measured at this run, so a margin this small "
                "cannot be called decided (run with --set seeds=0,1,2)")
    if p["spread"] > margin:
        return (f"cannot decide at this size: the per-seed differences span {p['spread']:.3f} dB, more than the "
                f"{margin:.2f} dB margin")
    return f"seed spread {p['spread']:.3f} dB <= margin {margin:.2f} dB"


def _fmt(p: dict) -> str:
    return (f"paired diff {p['mean']:+.3f} dB (per seed {', '.join(f'{v:+.3f}' for v in p['per_seed'])}; "
            f"per-image SE {p['se']:.3f}, 95% CI [{p['ci95'][0]:+.3f}, {p['ci95'][1]:+.3f}], "
            f"{p['n_images']} images)")


def claim_complexity(ssdcb: dict[int, int], transformer: dict[int, int], attn_measured: int, attn_analytic: int,
                     lo: float = 3.5, hi: float = 4.5, attn_ratio_min: float = 8.0) -> Claim:
    """C1 (gate): SSDCB FLOPs x4 per doubling of side (32 -> 64 and 64 -> 128 in [lo, hi]); the transformer
    block's 32 -> 64 ratio > attn_ratio_min, measured by FlopCounterMode from the explicit-matmul attention,
    cross-checked against the analytic 4 N^2 d within 2 %."""
    r1, r2 = ssdcb[64] / ssdcb[32], ssdcb[128] / ssdcb[64]
    rt = transformer[64] / transformer[32]
    cross = abs(attn_measured - attn_analytic) / attn_analytic
    held = lo <= r1 <= hi and lo <= r2 <= hi and rt > attn_ratio_min and cross <= 0.02
    return Claim(
        id="C1", statement="SSDCB's global mixing is linear in the number of pixels, unlike full self-attention",
        metric="FLOPs ratio when the side doubles (x4 pixels)",
        measured={"ssdcb_64_over_32": r1, "ssdcb_128_over_64": r2, "transformer_block_64_over_32": rt,
                  "attention_flops_vs_analytic_rel_err": cross},
        threshold=f"SSDCB ratios in [{lo}, {hi}]; transformer block ratio > {attn_ratio_min}; attention FLOPs "
                  "within 2 % of 4 N^2 d",
        held=bool(held), gate=True, paper="abstract: global modelling in O(KN) (no numbers)",
        details=(f"SSDCB FLOPs {ssdcb}; transformer block FLOPs {transformer}. Sanity (holds by design): every "
                 "SSDCB op is per-pixel or O(K N F), so its ratio is ~4 by construction; the transformer's ratio is "
                 "measured from its explicit q k^T / softmax / v matmuls (counted by FlopCounterMode), and "
                 f"the measured attention FLOPs at N=1024 differ from 4 N^2 d by {100 * cross:.2f} %."))


def claim_efficiency(psnr_ssdcn, psnr_tf, psnr_bicubic, gflops_ssdcn: float, gflops_tf: float,
                     margin: float = 0.10) -> Claim:
    """C2 (gate): PSNR(SSDCN) >= PSNR(SmallTransformer) - margin with GFLOPs(SSDCN) <= GFLOPs(SmallTransformer)."""
    p = paired(psnr_ssdcn, psnr_tf)
    gain_tf = paired(psnr_tf, psnr_bicubic)["mean"]
    held = p["mean"] >= -margin and gflops_ssdcn <= gflops_tf
    implied = (f"SmallTransformer gains only {gain_tf:+.3f} dB over bicubic (< 0.15 dB), so this check is implied "
               "by C3 at this size") if gain_tf < 0.15 else f"SmallTransformer gains {gain_tf:+.3f} dB over bicubic"
    return Claim(
        id="C2", statement="clustering-based global mixing matches full self-attention at lower cost",
        metric="PSNR(SSDCN) - PSNR(SmallTransformer), dB; GFLOPs at a 32x32x31 LR input",
        measured={"psnr_diff_db": p["mean"], "gflops_ssdcn": gflops_ssdcn, "gflops_transformer": gflops_tf,
                  "flops_ratio": gflops_ssdcn / gflops_tf, "transformer_gain_over_bicubic_db": gain_tf},
        threshold=f"diff >= -{margin:.2f} dB and GFLOPs(SSDCN) <= GFLOPs(SmallTransformer)",
        held=bool(held), gate=True, paper=PAPER, per_seed=p["per_seed"],
        details=(f"{_fmt(p)}. {_decidability(p, margin)}. {implied}. The FLOPs clause holds by design (dim 40 "
                 "was chosen for it); the PSNR clause can fail."))


def claim_vs_bicubic(psnr_ssdcn, psnr_bicubic, sam_ssdcn, sam_bicubic, margin: float = 0.05) -> Claim:
    """C3 (gate): PSNR(SSDCN) >= PSNR(Bicubic) + margin (SAM reported, not gated: review note 6)."""
    p = paired(psnr_ssdcn, psnr_bicubic)
    s = paired(sam_ssdcn, sam_bicubic)
    return Claim(
        id="C3", statement="SSDCN improves on bicubic interpolation (sanity)",
        metric="PSNR(SSDCN) - PSNR(Bicubic), dB (SAM difference reported)",
        measured={"psnr_diff_db": p["mean"], "sam_diff_deg": s["mean"]},
        threshold=f"PSNR diff >= +{margin:.2f} dB", held=bool(p["mean"] >= margin), gate=True, paper=PAPER,
        per_seed=p["per_seed"],
        details=(f"{_fmt(p)}. {_decidability(p, margin)}. SAM diff {s['mean']:+.3f} deg (per seed "
                 f"{', '.join(f'{v:+.3f}' for v in s['per_seed'])}), not gated (review note 6). Can fail."))


def claim_vs_cnn(psnr_ssdcn, psnr_cnn, margin: float = 0.3) -> Claim:
    """C4 (report): PSNR(SSDCN) >= PSNR(SmallCNN) - margin, the paper's direction."""
    p = paired(psnr_ssdcn, psnr_cnn)
    return Claim(
        id="C4", statement="SSDCN is at least as accurate as a conventional CNN (paper's SOTA direction)",
        metric="PSNR(SSDCN) - PSNR(SmallCNN), dB", measured={"psnr_diff_db": p["mean"]},
        threshold=f">= -{margin:.1f} dB", held=bool(p["mean"] >= -margin), gate=False, paper=PAPER,
        per_seed=p["per_seed"],
        details=f"{_fmt(p)}. {_decidability(p, margin)}. Reported, not gated (spec 6 check 4; prototype -0.68 dB).")


def claim_global_mixing(psnr_ssdcn, psnr_local) -> Claim:
    """C5 (report): the measured value of global mixing, SSDCN minus its local-only ablation (review note 3)."""
    p = paired(psnr_ssdcn, psnr_local)
    return Claim(
        id="C5", statement="the clustering branches and FRRB add accuracy over the same network without them",
        metric="PSNR(SSDCN) - PSNR(SSDCN local-only: clustering and FRRB off), dB",
        measured={"psnr_diff_db": p["mean"]}, threshold="> 0 dB (reported, not gated)",
        held=bool(p["mean"] > 0), gate=False, paper=PAPER, per_seed=p["per_seed"], details=_fmt(p) + ".")


def claim_issue_quality(psnr_ssdcn, psnr_bicubic, sam_ssdcn, sam_bicubic) -> Claim:
    """I1 (report): the issue's stricter check 1: PSNR >= bicubic + 2 dB and SAM <= 0.9 x bicubic's."""
    p = paired(psnr_ssdcn, psnr_bicubic)
    sam_ratio = float(np.mean(sam_ssdcn) / np.mean(sam_bicubic))
    held = p["mean"] >= 2.0 and sam_ratio <= 0.9
    return Claim(
        id="I1", statement="SSDCN is far better than bicubic (issue 20's check 1)",
        metric="PSNR(SSDCN) - PSNR(Bicubic), dB; SAM(SSDCN) / SAM(Bicubic)",
        measured={"psnr_diff_db": p["mean"], "sam_ratio": sam_ratio},
        threshold=">= +2 dB and SAM ratio <= 0.9", held=bool(held), gate=False, paper=PAPER,
        per_seed=p["per_seed"],
        details=(f"{_fmt(p)}. Reported, not gated: the spec's review notes set the gates (C1-C3); the spec's "
                 "prototype reached only +0.11 to +0.15 dB on this synthetic data."))


def claim_issue_efficiency(psnr_ssdcn, best_baseline: str, psnr_best, gflops_ssdcn: float, gflops_tf: float,
                           params_ssdcn: int, params_cnn: int) -> Claim:
    """I2 (report): the issue's check 2: within 0.3 dB of the best baseline at <= 0.6x the transformer's FLOPs
    and <= the CNN's parameters."""
    p = paired(psnr_ssdcn, psnr_best)
    held = p["mean"] >= -0.3 and gflops_ssdcn <= 0.6 * gflops_tf and params_ssdcn <= params_cnn
    return Claim(
        id="I2", statement="SSDCN matches the best baseline with fewer FLOPs and parameters (issue 20's check 2)",
        metric=f"PSNR(SSDCN) - PSNR(best baseline = {best_baseline}), dB; FLOPs ratio to SmallTransformer; params",
        measured={"psnr_diff_db": p["mean"], "flops_ratio_vs_transformer": gflops_ssdcn / gflops_tf,
                  "params_ssdcn": params_ssdcn, "params_cnn": params_cnn},
        threshold=">= -0.3 dB, FLOPs ratio <= 0.6, params <= SmallCNN's", held=bool(held), gate=False,
        paper=PAPER, per_seed=p["per_seed"],
        details=f"{_fmt(p)}. Reported, not gated (the spec's review notes set the gates).")


def claim_domain_shift(psnr_models: dict[str, list], psnr_bicubic) -> Claim:
    """D (report): PSNR gain over bicubic of every learned model on photo-derived cubes (review note 9)."""
    gains = {m: paired(v, psnr_bicubic) for m, v in psnr_models.items()}
    return Claim(
        id="D", statement="models trained on synthetic cubes keep their gain on photo-derived cubes (not claimed)",
        metric="PSNR(model) - PSNR(Bicubic) on photo-derived cubes, dB",
        measured={f"{m}_gain_db": g["mean"] for m, g in gains.items()}, threshold="SSDCN gain > 0 (reported)",
        held=bool(gains["ssdcn"]["mean"] > 0), gate=False, paper=PAPER, per_seed=gains["ssdcn"]["per_seed"],
        details="; ".join(f"{m}: {_fmt(g)}" for m, g in gains.items())
        + ". Domain gap next to the synthetic numbers; the spec's prototype saw every learned model below bicubic.")
