"""Claim checks of the CPU reproduction (spec 6 as amended by review notes 1-7) and the issue's report-only
versions. Each function takes measurements and returns a `Claim` whose verdict `icml26.common.stats` computes; the
tests feed deliberately broken measurements and tiny samples through the same functions.

Per-image inputs are lists per seed: `psnr[seed_index][image]`, the arms run on the same seeds and scored on the
same test images. A model comparison is decided by the paired t interval over training seeds (the seed is the
unit of replication: one seed cannot bound a training-to-training spread, so it is always inconclusive); the
details add the paired bootstrap over test images within seeds (test-set noise only) for reference. FLOP and
parameter counts are exact (`stats.exact`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from icml26.common import stats
from icml26.common.validation import check_int
from icml26.results import Claim

__all__ = [
    "attention_flops_analytic",
    "block_flops",
    "claim_complexity",
    "claim_domain_shift",
    "claim_efficiency",
    "claim_global_mixing",
    "claim_issue_efficiency",
    "claim_issue_quality",
    "claim_learnability",
    "claim_vs_bicubic",
    "claim_vs_cnn",
    "paired",
]

PAPER = "abstract only: beats SOTA with significantly fewer params and FLOPs (no numbers)"
# PSNR differences between two trained models below this are within what a different CPU's last digits change
# (a trained SR model amplifies BLAS rounding to ~0.01 dB): the resolution of claims whose threshold is 0 dB
PSNR_ATOL_DB = 0.02


def block_flops(block: nn.Module, dim: int, sizes: Sequence[int]) -> dict[int, int]:
    """FLOPs (FlopCounterMode, 2 per MAC) of one forward of `block` on (1, dim, s, s) for each s in `sizes`,
    counted on the meta device (no compute, no memory for the N x N attention matrix)."""
    dim = check_int(dim, "dim", min=1)
    sides = [check_int(s, f"sizes[{i}]", min=1) for i, s in enumerate(sizes)]
    meta = copy.deepcopy(block).to("meta")
    out = {}
    for s in sides:
        x = torch.empty(1, dim, s, s, device="meta")
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            meta.mix(x) if hasattr(meta, "mix") else meta(x)
        out[s] = int(counter.get_total_flops())
    return out


def attention_flops_analytic(n_tokens: int, dim: int) -> int:
    """4 N^2 d: q k^T and (softmax) v, 2 FLOPs per multiply-add, summed over heads (d = total width)."""
    return 4 * check_int(n_tokens, "n_tokens", min=1) ** 2 * check_int(dim, "dim", min=1)


def paired(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> dict[str, object]:
    """Paired difference a - b of two arms scored on the same seeds and images. a, b: [seed][image].

    Returns the per-seed mean differences and their mean, the paired t interval over seeds (`interval`, what
    decides a claim) and the paired bootstrap over images within seeds (`item_interval`, test-set noise only;
    None with fewer than 2 images).
    """
    a_, b_ = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a_.shape != b_.shape or a_.ndim != 2 or a_.shape[1] < 1:
        raise ValueError(f"paired needs two [seed][image] arrays of one shape, got {a_.shape} and {b_.shape}")
    d = a_ - b_
    per_seed = d.mean(axis=1)
    item = None
    if d.shape[1] >= 2:
        strata = np.repeat(np.arange(d.shape[0]), d.shape[1])
        item = stats.bootstrap_interval(d.ravel(), strata=strata, n_resamples=1000)
    return {"mean": float(per_seed.mean()), "per_seed": per_seed.tolist(), "interval": stats.t_interval(per_seed),
            "item_interval": item, "n_images": int(d.shape[1]), "n_seeds": int(d.shape[0])}


def _fmt(p: dict, unit: str = "dB") -> str:
    item = p["item_interval"]
    items = f"; over the {p['n_images']} test images within seeds: {item.text('+.3f')}" if item else ""
    return (f"paired diff {p['mean']:+.3f} {unit} (per seed {', '.join(f'{v:+.3f}' for v in p['per_seed'])}; "
            f"{p['interval'].text('+.3f')}{items})")


MEDIUM_SEEDS = 4  # seeds of the `medium` scale (experiment.CONFIGS["medium"])


def _undecided(d: stats.Decision, n_seeds: int) -> str:
    """What would decide an inconclusive verdict (seeds, and the scale that runs them)."""
    if d.verdict != "inconclusive":
        return ""
    hint = f"; {d.hint}" if d.hint else ""
    if n_seeds < MEDIUM_SEEDS:
        return (" Inconclusive: the training seed is the unit of replication; `--scale medium` runs the validation "
                f"lr sweep and {MEDIUM_SEEDS} seeds of every model (~23 min on 2 cores, minutes on a GPU){hint}.")
    return f" Inconclusive at {n_seeds} seeds{hint} (`--set seeds=...` adds seeds)."


def claim_complexity(ssdcb: dict[int, int], transformer: dict[int, int], attn_measured: int, attn_analytic: int,
                     lo: float = 3.5, hi: float = 4.5, attn_ratio_min: float = 8.0) -> Claim:
    """C1 (sanity): SSDCB FLOPs x4 per doubling of side (32 -> 64 and 64 -> 128 in [lo, hi]); the transformer
    block's 32 -> 64 ratio > attn_ratio_min, measured by FlopCounterMode from the explicit-matmul attention,
    cross-checked against the analytic 4 N^2 d within 2 %. Exact FLOP counts, decided by `stats.exact`."""
    r1, r2 = ssdcb[64] / ssdcb[32], ssdcb[128] / ssdcb[64]
    rt = transformer[64] / transformer[32]
    cross = abs(attn_measured - attn_analytic) / attn_analytic
    d = stats.all_of(stats.exact(r1, lo, ">=", label="SSDCB 64/32 >= lo"),
                     stats.exact(r1, hi, "<=", label="SSDCB 64/32 <= hi"),
                     stats.exact(r2, lo, ">=", label="SSDCB 128/64 >= lo"),
                     stats.exact(r2, hi, "<=", label="SSDCB 128/64 <= hi"),
                     stats.exact(rt, attn_ratio_min, ">=", label="attention block 64/32"),
                     stats.exact(cross, 0.02, "<=", label="attention FLOPs vs 4 N^2 d"), label="C1")
    return Claim(
        id="C1", statement="SSDCB's global mixing is linear in the number of pixels, unlike full self-attention",
        metric="FLOPs ratio when the side doubles (x4 pixels)",
        measured={"ssdcb_64_over_32": r1, "ssdcb_128_over_64": r2, "transformer_block_64_over_32": rt,
                  "attention_flops_vs_analytic_rel_err": cross},
        threshold=f"SSDCB ratios in [{lo}, {hi}]; transformer block ratio >= {attn_ratio_min}; attention FLOPs "
                  "within 2 % of 4 N^2 d", decision=d, kind="sanity",
        paper="abstract: global modelling in O(KN) (no numbers)",
        details=(f"SSDCB FLOPs {ssdcb}; transformer block FLOPs {transformer}. Sanity (holds by design, exact FLOP "
                 "counts): every SSDCB op is per-pixel or O(K N F), so its ratio is ~4 by construction; the "
                 "transformer's ratio is measured from its explicit q k^T / softmax / v matmuls (counted by "
                 f"FlopCounterMode), and the measured attention FLOPs at N=1024 differ from 4 N^2 d by "
                 f"{100 * cross:.2f} %. {d.text()}"))


def claim_learnability(gains: dict[str, Sequence[Sequence[float]]], psnr_bicubic, margin: float = 0.3,
                       cost_per_seed_s: float | None = None) -> Claim:
    """L (sanity, positive control): every learned model beats bicubic by >= `margin` dB on the test images, so
    the comparisons C2, C4 and C5 are between models that each learn. gains: model -> psnr [seed][image]."""
    if not gains:
        raise ValueError("gains must name at least one learned model")
    ps = {m: paired(v, psnr_bicubic) for m, v in gains.items()}
    d = stats.all_of(*[stats.decide(p["mean"], p["interval"], margin, ">=", label=m, cost_per_unit_s=cost_per_seed_s)
                       for m, p in ps.items()], label="L")
    return Claim(
        id="L", statement="every learned model learns: it beats bicubic interpolation (positive control)",
        metric="PSNR(model) - PSNR(Bicubic) on the test cubes, dB",
        measured={f"{m}_gain_db": p["mean"] for m, p in ps.items()}, threshold=f"every model >= +{margin:.1f} dB",
        decision=d, kind="sanity", paper="n/a (a precondition of the comparisons, not a claim of the paper)",
        per_seed=ps.get("ssdcn", next(iter(ps.values())))["per_seed"],
        details=("; ".join(f"{m}: {_fmt(p)}" for m, p in ps.items()) + f". {d.text()}"
                 + _undecided(d, next(iter(ps.values()))["n_seeds"])))


def claim_efficiency(psnr_ssdcn, psnr_tf, psnr_bicubic, gflops_ssdcn: float, gflops_tf: float,
                     margin: float = 0.10, cost_per_seed_s: float | None = None) -> Claim:
    """C2 (gate): PSNR(SSDCN) >= PSNR(SmallTransformer) - margin with GFLOPs(SSDCN) <= GFLOPs(SmallTransformer)."""
    p = paired(psnr_ssdcn, psnr_tf)
    gain_tf = paired(psnr_tf, psnr_bicubic)["mean"]
    d = stats.all_of(stats.decide(p["mean"], p["interval"], -margin, ">=", label="PSNR clause",
                                  cost_per_unit_s=cost_per_seed_s),
                     stats.exact(gflops_ssdcn, gflops_tf, "<=", label="FLOPs clause (exact)"), label="C2")
    implied = (f"SmallTransformer gains only {gain_tf:+.3f} dB over bicubic (< 0.15 dB), so this check is implied "
               "by C3 at this size") if gain_tf < 0.15 else f"SmallTransformer gains {gain_tf:+.3f} dB over bicubic"
    return Claim(
        id="C2", statement="clustering-based global mixing matches full self-attention at lower cost",
        metric="PSNR(SSDCN) - PSNR(SmallTransformer), dB; GFLOPs at a 32x32x31 LR input",
        measured={"psnr_diff_db": p["mean"], "gflops_ssdcn": gflops_ssdcn, "gflops_transformer": gflops_tf,
                  "flops_ratio": gflops_ssdcn / gflops_tf, "transformer_gain_over_bicubic_db": gain_tf},
        threshold=f"diff >= -{margin:.2f} dB and GFLOPs(SSDCN) <= GFLOPs(SmallTransformer)", decision=d,
        kind="gate", paper=PAPER, per_seed=p["per_seed"],
        details=(f"{_fmt(p)}. {implied}. The FLOPs clause holds by design (dim 40 was chosen for it, an exact "
                 f"count); the PSNR clause can fail. {d.text()}" + _undecided(d, p["n_seeds"])))


def claim_vs_bicubic(psnr_ssdcn, psnr_bicubic, sam_ssdcn, sam_bicubic, margin: float = 0.05,
                     target: float = 0.5, cost_per_seed_s: float | None = None) -> Claim:
    """C3 (gate): PSNR(SSDCN) >= PSNR(Bicubic) + margin (SAM reported, not gated: review note 6)."""
    p = paired(psnr_ssdcn, psnr_bicubic)
    s = paired(sam_ssdcn, sam_bicubic)
    d = stats.decide(p["mean"], p["interval"], margin, ">=", label="C3", cost_per_unit_s=cost_per_seed_s)
    reach = ("reaches" if p["mean"] >= target else "falls short of")
    return Claim(
        id="C3", statement="SSDCN improves on bicubic interpolation",
        metric="PSNR(SSDCN) - PSNR(Bicubic), dB (SAM difference reported)",
        measured={"psnr_diff_db": p["mean"], "sam_diff_deg": s["mean"]},
        threshold=f"PSNR diff >= +{margin:.2f} dB", decision=d, kind="gate", paper=PAPER, per_seed=p["per_seed"],
        details=(f"{_fmt(p)}. The mean gain {reach} issue 31's +{target:.1f} dB target for a block that learns. "
                 f"SAM diff {s['mean']:+.3f} deg (per seed {', '.join(f'{v:+.3f}' for v in s['per_seed'])}), not "
                 f"gated (review note 6). Can fail (an SSDCN returning bicubic does). {d.text()}"
                 + _undecided(d, p["n_seeds"])))


def claim_vs_cnn(psnr_ssdcn, psnr_cnn, margin: float = 0.3, cost_per_seed_s: float | None = None) -> Claim:
    """C4 (report): PSNR(SSDCN) >= PSNR(SmallCNN) - margin, the paper's direction."""
    p = paired(psnr_ssdcn, psnr_cnn)
    d = stats.decide(p["mean"], p["interval"], -margin, ">=", label="C4", cost_per_unit_s=cost_per_seed_s)
    return Claim(
        id="C4", statement="SSDCN is at least as accurate as a conventional CNN (paper's SOTA direction)",
        metric="PSNR(SSDCN) - PSNR(SmallCNN), dB", measured={"psnr_diff_db": p["mean"]},
        threshold=f">= -{margin:.1f} dB", decision=d, kind="report", paper=PAPER, per_seed=p["per_seed"],
        details=(f"{_fmt(p)}. Reported, not gated (spec 6 check 4; prototype -0.68 dB). {d.text()}"
                 + _undecided(d, p["n_seeds"])))


def claim_global_mixing(psnr_ssdcn, psnr_local) -> Claim:
    """C5 (report, measured): the value of global mixing, SSDCN minus its local-only ablation (review note 3)."""
    p = paired(psnr_ssdcn, psnr_local)
    d = stats.measured(p["mean"], p["interval"], label="C5")
    return Claim(
        id="C5", statement="the clustering branches and FRRB add accuracy over the same network without them",
        metric="PSNR(SSDCN) - PSNR(SSDCN local-only: clustering and FRRB off), dB",
        measured={"psnr_diff_db": p["mean"]}, threshold="none (measured, review note 3)", decision=d,
        kind="report", paper=PAPER, per_seed=p["per_seed"],
        details=(f"{_fmt(p)}. Reported without a threshold: the interval over seeds says whether global mixing "
                 "adds accuracy at this size."))


def claim_issue_quality(psnr_ssdcn, psnr_bicubic, sam_ssdcn, sam_bicubic,
                        cost_per_seed_s: float | None = None) -> Claim:
    """I1 (report): the issue's stricter check 1: PSNR >= bicubic + 2 dB and SAM <= 0.9 x bicubic's."""
    p = paired(psnr_ssdcn, psnr_bicubic)
    ratios = np.mean(np.asarray(sam_ssdcn, float), axis=1) / np.mean(np.asarray(sam_bicubic, float), axis=1)
    sam_ratio = float(ratios.mean())
    d = stats.all_of(stats.decide(p["mean"], p["interval"], 2.0, ">=", label="PSNR gain",
                                  cost_per_unit_s=cost_per_seed_s),
                     stats.decide(sam_ratio, stats.t_interval(ratios), 0.9, "<=", label="SAM ratio",
                                  cost_per_unit_s=cost_per_seed_s), label="I1")
    return Claim(
        id="I1", statement="SSDCN is far better than bicubic (issue 20's check 1)",
        metric="PSNR(SSDCN) - PSNR(Bicubic), dB; SAM(SSDCN) / SAM(Bicubic)",
        measured={"psnr_diff_db": p["mean"], "sam_ratio": sam_ratio},
        threshold=">= +2 dB and SAM ratio <= 0.9", decision=d, kind="report", paper=PAPER, per_seed=p["per_seed"],
        details=(f"{_fmt(p)}; SAM ratio per seed {', '.join(f'{r:.3f}' for r in ratios)}. Reported, not gated: the "
                 "spec's review notes set the gates (C2, C3). " + d.text()))


def claim_issue_efficiency(psnr_ssdcn, best_baseline: str, psnr_best, gflops_ssdcn: float, gflops_tf: float,
                           params_ssdcn: int, params_cnn: int, cost_per_seed_s: float | None = None) -> Claim:
    """I2 (report): the issue's check 2: within 0.3 dB of the best baseline at <= 0.6x the transformer's FLOPs
    and <= the CNN's parameters."""
    p = paired(psnr_ssdcn, psnr_best)
    d = stats.all_of(stats.decide(p["mean"], p["interval"], -0.3, ">=", label="PSNR vs best baseline",
                                  cost_per_unit_s=cost_per_seed_s),
                     stats.exact(gflops_ssdcn / gflops_tf, 0.6, "<=", label="FLOPs ratio (exact)"),
                     stats.exact(params_ssdcn, params_cnn, "<=", label="params (exact)"), label="I2")
    return Claim(
        id="I2", statement="SSDCN matches the best baseline with fewer FLOPs and parameters (issue 20's check 2)",
        metric=f"PSNR(SSDCN) - PSNR(best baseline = {best_baseline}), dB; FLOPs ratio to SmallTransformer; params",
        measured={"psnr_diff_db": p["mean"], "flops_ratio_vs_transformer": gflops_ssdcn / gflops_tf,
                  "params_ssdcn": params_ssdcn, "params_cnn": params_cnn},
        threshold=">= -0.3 dB, FLOPs ratio <= 0.6, params <= SmallCNN's", decision=d, kind="report",
        paper=PAPER, per_seed=p["per_seed"],
        details=f"{_fmt(p)}. Reported, not gated (the spec's review notes set the gates). {d.text()}")


def claim_domain_shift(psnr_models: dict[str, list], psnr_bicubic) -> Claim:
    """D (report, measured): PSNR gain over bicubic of every learned model on photo-derived cubes (review note 9)."""
    gains = {m: paired(v, psnr_bicubic) for m, v in psnr_models.items()}
    if "ssdcn" not in gains:
        raise ValueError("psnr_models must include 'ssdcn'")
    d = stats.measured(gains["ssdcn"]["mean"], gains["ssdcn"]["interval"], label="D")
    return Claim(
        id="D", statement="models trained on synthetic cubes keep their gain on photo-derived cubes (not claimed)",
        metric="PSNR(model) - PSNR(Bicubic) on photo-derived cubes, dB",
        measured={f"{m}_gain_db": g["mean"] for m, g in gains.items()}, threshold="none (measured, review note 9)",
        decision=d, kind="report", paper=PAPER, per_seed=gains["ssdcn"]["per_seed"],
        details="; ".join(f"{m}: {_fmt(g)}" for m, g in gains.items())
        + ". Domain gap next to the synthetic numbers; the spec's prototype saw every learned model below bicubic.")
