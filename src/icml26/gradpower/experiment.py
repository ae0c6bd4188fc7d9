"""CPU reproduction of GradPower (spec section 6): AdamW vs AdamWPower (p = 1.2) on a byte-level TinyLlama.

Regime (the paper's own theory, section 4): p > 1 helps when late-training gradients are noise-dominated, i.e.
many tokens per parameter and small batches. So: a ~40k-parameter TinyLlama (d_model 32, 2 layers, 4 heads,
SwiGLU 80, RoPE, RMSNorm, no biases, untied) trained 4000 steps of 16 x 64 bytes (~100 bytes/param) on the stdlib
byte corpus, WSD schedule (5 % warmup, stable to 80 %, linear decay to 0), AdamW(0.9, 0.95, eps 1e-8, wd 0.1),
clip 1.0, lr_max 2e-3 for both arms (AdamW-tuned, not retuned for AdamWPower). Paired design: for seed s both
arms use torch.manual_seed(s) for the init and torch.Generator(1234 + s) for the batches. Seeds s, s+1, s+2
run as single-thread processes, 2 in parallel. At every `noise_every` steps each run measures the simple
gradient noise scale B_noise = tr(Sigma)/|G|^2 on `noise_examples` fixed training windows (same for both arms).

Claims (spec section 6, with issue 15's additions), every verdict from `icml26.common.stats`:
- G (gate): non-inferiority, d_s = L_AdamW(s) - L_AdamWPower(s): mean_s d_s >= -0.005, decided by the paired t
  interval over seeds (both arms on the same seeds). The spec's min_s d_s >= -0.015 is reported: a minimum over
  seeds cannot be decided by more seeds. `scale="medium"` reruns small on the seeds G's hint asks for.
- P (report): the paper's direction, mean_s d_s > 0 (same interval).
- M (gate): the mechanism, measured through the optimizer: AdamWPower fed synthetic gradient streams of known
  mean/noise (`mechanism.optimizer_drift`) drifts faster with p under high noise, slower under low noise, and
  within 2 % of the closed form r(p) = E[phi]/sqrt(E[phi^2]); each part a t interval over the coordinates.
- M0 (sanity, exact): the closed form / stratified MC of r(p) follows (mu/sigma) sqrt(2p+1) within 2 %.
- R (report): the regime, B_noise / batch > 1 at every checkpoint from mid-training on, both arms, every seed
  (each checkpoint decided on tr(Sigma)/B - |G|^2 > 0 with its jackknife interval).
- A (report, optional `ablation=True`): p in {0.8, 1.5} for the first seed, and wider models (d_model 64,
  4000 steps; d_model 128, 1000 steps, ~4 bytes/param, signal-dominated) where the gap should shrink or reverse
  (one seed: inconclusive by design).

`scale="paper"` runs the GPU configuration of spec section 7 (`icml26.gradpower.scale`, which takes the config
and never imports this module).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import torch

from icml26.common import stats
from icml26.common.parallel import run_parallel
from icml26.common.plotting import new_figure
from icml26.common.text import random_windows
from icml26.common.validation import check_bool, check_choice, check_float, check_int, check_seed, require_keys
from icml26.gradpower.baselines import make_optimizer
from icml26.gradpower.data import load_corpus
from icml26.gradpower.lm import TinyLlama
from icml26.gradpower.mechanism import gradient_noise_scale, optimizer_drift
from icml26.gradpower.scale import PAPER_CONFIG, PAPER_CONFIG_HELP, run_paper, validate_paper_config
from icml26.gradpower.schedules import wsd
from icml26.gradpower.theory import high_noise_drift, normalized_drift
from icml26.gradpower.train import pretrain
from icml26.results import Claim, Result

SLUG = "gradpower"
LN2 = math.log(2.0)
MECH_POWERS = (0.8, 1.0, 1.2, 1.5)
MECH_HIGH, MECH_LOW = (0.05, 1.0), (1.0, 0.2)  # (mu, sigma) of the noise- and signal-dominated streams
MECH_TOL = 0.02  # relative, spec section 6

PAPER_G = ("AdamWPower (p = 1.2, AdamW's tuned hyperparameters) ends below tuned AdamW in every reported LLaMA "
           "66M-2B / Qwen2-MoE run on C4 and OpenWebText, cosine and WSD (LLaMA-2B C4: 0.022 nats lower; "
           "Qwen2MoE-2B WSD: 0.028)")
PAPER_M = ("paper section 4 (uniform noise model): r(p) ~ (mu/sigma) sqrt(2p+1) when sigma >> mu, i.e. 1.732 mu/sigma "
           "at p = 1 and 1.844 mu/sigma at p = 1.2 (+6.5 %); r(p) decreases in p when sigma << mu")
PAPER_R = ("paper section 4: p > 1 is argued for noise-dominated (small-batch, long) pre-training and p < 1 for "
           "large batches; ResNet-34/CIFAR-10 best p falls from 1.0 (batch 32) to 0.8 (batch 128)")
PAPER_A = ("the best p shrinks as the gradient noise falls: ResNet-34/CIFAR-10 best p 1.0 at batch 32, 0.8-0.9 at "
           "64, 0.8 at 128; LLaMA gains at p = 1.2 for small/noisy pre-training")

_SMALL: dict[str, Any] = {
    "seed": 0,
    "n_seeds": 3,
    "nbytes": 3_000_000,
    "n_val_windows": 256,
    "d_model": 32,
    "n_layers": 2,
    "n_heads": 4,
    "d_ff": 80,
    "ctx": 64,
    "batch_size": 16,
    "steps": 4000,
    "lr": 2e-3,
    "betas": [0.9, 0.95],
    "eps": 1e-8,
    "weight_decay": 0.1,
    "clip": 1.0,
    "warmup_frac": 0.05,
    "decay_frac": 0.2,
    "min_ratio": 0.0,
    "power": 1.2,
    "power_eps": 0.0,
    "fused": True,  # torch's fused CPU AdamW kernel for both arms (speed only; same update rule)
    "eval_every": 500,
    "noise_every": 1000,
    "noise_examples": 512,
    "workers": 2,
    "mc_samples": 1_000_000,
    "mech_coords": 4096,
    "mech_steps": 2000,
    "mech_burn_in": 300,
    "ablation": False,
    "ablation_powers": [0.8, 1.5],
    "ablation_widths": [[64, 4000], [128, 1000]],
    "device": "cpu",
}

# medium: the small configuration on the number of paired seeds the small run's hint asks for (the paired t
# interval of G's mean gap: sd 0.023 over seeds 0-2 against a distance of 0.0099 from the margin, minus the
# resolution, gives ~25 seeds). The noise scale is measured at the last step only (claim R needs a late checkpoint;
# the four checkpoints of small cost ~18 s a run). About 60 s a seed on 2 cores; "auto" trains on CUDA when present.
MEDIUM_SEEDS = 25

CONFIGS: dict[str, dict[str, Any]] = {
    "smoke": {**_SMALL, "n_seeds": 1, "nbytes": 300_000, "n_val_windows": 16, "steps": 20, "eval_every": 10,
              "noise_every": 10, "noise_examples": 8, "workers": 1, "mc_samples": 20_000, "mech_coords": 256,
              "mech_steps": 200, "mech_burn_in": 50, "ablation_widths": [[64, 20]]},
    "small": _SMALL,
    "medium": {**_SMALL, "n_seeds": MEDIUM_SEEDS, "noise_every": 4000, "device": "auto"},
    "paper": dict(PAPER_CONFIG),
}

CONFIG_HELP: dict[str, str] = {
    "seed": "first seed; seeds seed..seed+n_seeds-1 (init torch.manual_seed(s), batches Generator(1234 + s))",
    "n_seeds": "paired seeds (>= 1; the spec's 3)",
    "nbytes": "bytes of the stdlib *.py corpus (first nbytes; 90 % train, 10 % validation)",
    "n_val_windows": "fixed validation windows of ctx + 1 bytes at stride ctx + 1 from the validation start",
    "d_model": "TinyLlama width (head dim d_model / n_heads must be even)", "n_layers": "TinyLlama blocks",
    "n_heads": "attention heads", "d_ff": "SwiGLU hidden width at d_model 32 (scaled with d_model in the ablation)",
    "ctx": "training context, bytes", "batch_size": "windows per optimizer step", "steps": "optimizer steps",
    "lr": "lr_max of both arms (AdamW-tuned, not retuned for AdamWPower)", "betas": "AdamW (b1, b2)",
    "eps": "AdamW eps", "weight_decay": "AdamW decoupled weight decay", "clip": "global grad-norm clip (raw grads)",
    "warmup_frac": "WSD linear warmup fraction", "decay_frac": "WSD final linear decay fraction",
    "min_ratio": "WSD final lr as a fraction of lr_max", "power": "AdamWPower exponent p",
    "power_eps": "shift inside the power (0 = pure form; 1e-8 = authors' script)",
    "fused": "use torch's fused CPU AdamW kernel in both arms (speed only)",
    "eval_every": "steps between validation evaluations (also the last step)",
    "noise_every": "steps between gradient-noise-scale measurements (multiple of eval_every)",
    "noise_examples": "training windows for the per-example gradients of the noise scale (>= 2)",
    "workers": "parallel single-thread processes", "mc_samples": "stratified Monte Carlo samples of r(p) (M sanity)",
    "mech_coords": "coordinates per (regime, p) of M's synthetic gradient streams",
    "mech_steps": "measured optimizer steps of M's streams", "mech_burn_in": "unmeasured steps before them",
    "ablation": "also run the report-only ablation A (p sweep and wider models, first seed)",
    "ablation_powers": "A: exponents for the first seed", "ablation_widths": "A: [d_model, steps] pairs",
    "device": "cpu, cuda, or auto (cuda when available); each run trains single-threaded on it",
}
CONFIG_HELP.update({k: v for k, v in PAPER_CONFIG_HELP.items() if k not in CONFIG_HELP})

# medium: 25 seeds x ~62 s on 2 cores; paper: 0.2B x 2 arms on 8 GPUs, roughly
EXPECTED_RUNTIME_S = {"smoke": 15, "small": 240, "medium": 1560, "paper": 2 * 24 * 3600}


def validate_config(config: dict[str, Any]) -> None:
    """Raise ValueError/TypeError naming the first bad key of `config` (the CLI calls this before compute)."""
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict, got {type(config).__name__}")
    if config.get("scale", "small") == "paper":
        validate_paper_config(config)
        return
    require_keys(config, _SMALL)
    check_seed(config["seed"], "seed")
    for key in ("n_seeds", "nbytes", "n_val_windows", "d_model", "n_layers", "n_heads", "d_ff", "ctx",
                "batch_size", "steps", "eval_every", "noise_every", "workers", "mc_samples", "mech_coords",
                "mech_steps"):
        check_int(config[key], key, min=1)
    check_int(config["noise_examples"], "noise_examples", min=2)
    check_int(config["mech_burn_in"], "mech_burn_in", min=0)
    if config["d_model"] % config["n_heads"] or (config["d_model"] // config["n_heads"]) % 2:
        raise ValueError(f"d_model ({config['d_model']}) / n_heads ({config['n_heads']}) must be an even head dim")
    if config["noise_every"] % config["eval_every"]:
        raise ValueError(f"noise_every ({config['noise_every']}) must be a multiple of eval_every "
                         f"({config['eval_every']}): the noise scale is measured at evaluation checkpoints")
    for key in ("lr", "clip", "power"):
        check_float(config[key], key, min=0.0, min_open=True)
    for key in ("eps", "weight_decay", "power_eps"):
        check_float(config[key], key, min=0.0)
    betas = config["betas"]
    if not isinstance(betas, (list, tuple)) or len(betas) != 2:
        raise ValueError(f"betas must be a pair [b1, b2], got {betas!r}")
    for i, b in enumerate(betas):
        check_float(b, f"betas[{i}]", min=0.0, max=1.0, max_open=True)
    check_float(config["warmup_frac"], "warmup_frac", min=0.0, max=1.0, max_open=True)
    check_float(config["decay_frac"], "decay_frac", min=0.0, max=1.0)
    if config["warmup_frac"] + config["decay_frac"] > 1.0:
        raise ValueError(f"warmup_frac + decay_frac must be <= 1, got {config['warmup_frac']} + {config['decay_frac']}")
    check_float(config["min_ratio"], "min_ratio", min=0.0, max=1.0)
    check_bool(config["fused"], "fused")
    check_bool(config["ablation"], "ablation")
    check_choice(config["device"], "device", ("cpu", "cuda", "auto"))
    if config["device"] == "cuda" and not torch.cuda.is_available():
        raise ValueError("device is 'cuda' but CUDA is not available (use 'auto' or 'cpu')")
    powers = config["ablation_powers"]
    if not isinstance(powers, list):
        raise TypeError(f"ablation_powers must be a list of exponents, got {type(powers).__name__}")
    for i, q in enumerate(powers):
        check_float(q, f"ablation_powers[{i}]", min=0.0, min_open=True)
    widths = config["ablation_widths"]
    if not isinstance(widths, list) or not widths or any(not isinstance(w, (list, tuple)) or len(w) != 2
                                                         for w in widths):
        raise ValueError(f"ablation_widths must be a non-empty list of [d_model, steps] pairs, got {widths!r}")
    for i, (w, n) in enumerate(widths):
        check_int(w, f"ablation_widths[{i}][0]", min=1)
        check_int(n, f"ablation_widths[{i}][1]", min=1)
        if w % config["n_heads"] or (w // config["n_heads"]) % 2:
            raise ValueError(f"ablation_widths[{i}][0] ({w}) / n_heads must be an even head dim")
    n_train = int(config["nbytes"] * 0.9)
    if config["n_val_windows"] * (config["ctx"] + 1) > config["nbytes"] - n_train:
        raise ValueError(f"n_val_windows x (ctx + 1) = {config['n_val_windows'] * (config['ctx'] + 1)} exceeds the "
                         f"{config['nbytes'] - n_train} validation bytes of nbytes")


# ------------------------------------------------------------------------------------------------ one run
def train_arm(config: dict[str, Any], seed: int, optimizer: str, power: float, d_model: int, steps: int,
              label: str) -> dict[str, Any]:
    """One training run (module level so `run_parallel` can spawn it). Returns the validation curve and the
    gradient noise scale at every `noise_every` steps (on fixed training windows shared by the arms)."""
    torch.set_num_threads(1)
    corpus = load_corpus(config["nbytes"], n_val_windows=config["n_val_windows"], window=config["ctx"] + 1)
    probe = random_windows(corpus.train, config["noise_examples"], config["ctx"] + 1,
                           torch.Generator().manual_seed(999_983 + seed))  # same probe for both arms of a seed
    torch.manual_seed(seed)  # same init for both arms of a seed
    model = TinyLlama(256, d_model, config["n_layers"], config["n_heads"], config["ctx"],
                      d_ff=config["d_ff"] * d_model // 32)
    gen = torch.Generator().manual_seed(1234 + seed)  # same batches for both arms of a seed
    kw = {"fused": True} if config["fused"] else {}
    device = config.get("device", "cpu")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    noise: dict[str, dict[str, float]] = {}
    every = config["noise_every"]

    def measure(step: int, m: torch.nn.Module) -> None:
        if step % every == 0 or step == steps:
            noise[str(step)] = gradient_noise_scale(m, probe, config["batch_size"])

    res = pretrain(
        model,
        lambda m: make_optimizer(optimizer, m, lr=config["lr"], betas=tuple(config["betas"]), eps=config["eps"],
                                 weight_decay=config["weight_decay"], power=power, power_eps=config["power_eps"],
                                 **kw),
        corpus.train,
        steps=steps,
        batch_size=config["batch_size"],
        ctx=config["ctx"],
        scheduler_factory=lambda o: wsd(o, steps, config["warmup_frac"], config["decay_frac"], config["min_ratio"]),
        clip=config["clip"],
        generator=gen,
        val_windows=corpus.val_windows,
        eval_every=min(config["eval_every"], steps),
        on_eval=measure,
        device=device,
    )
    return {"label": label, "seed": seed, "optimizer": optimizer, "power": power, "d_model": d_model,
            "steps": steps, "n_params": model.num_params(), "eval_steps": res.eval_steps, "val_loss": res.val_loss,
            "final": res.final_val_loss, "wall_s": res.wall_s, "noise_scale": noise}


# ------------------------------------------------------------------------------------------------ claims
# The gap d_s is a difference of two final losses of ~1.8 nats/byte: differences between CPUs move each final loss
# in its last digits, so a band of 5e-4 nats/byte (a tenth of the non-inferiority margin) around the thresholds is
# the resolution of the seed-mean comparisons (the default 2 % of |estimate| would be ~3e-4 near the margin).
GAP_ATOL = 5e-4
G_MARGIN = -0.005  # non-inferiority margin of the gate (spec section 6)


def paired_claims(d: dict[int, float], la: dict[int, float], lp: dict[int, float], regime: str,
                  cost_per_seed_s: float | None = None) -> list[Claim]:
    """Claims G (gate) and P (reported) from the per-seed paired gaps d_s = L_AdamW(s) - L_AdamWPower(s).

    Both arms run on the same seeds (same init, same batches), so the mean gap is decided by a paired t interval
    over seeds (`stats.paired_t_interval`). `cost_per_seed_s` (wall seconds one more seed costs) lets an
    inconclusive verdict say how long the seeds it asks for would take.
    """
    seeds = list(d)
    if not seeds:
        raise ValueError("d must hold at least one seed's gap")
    a, b = [la[s] for s in seeds], [lp[s] for s in seeds]
    dv = np.array([d[s] for s in seeds])
    mean_d, min_d = float(dv.mean()), float(dv.min())
    n_pos, n = int((dv > 0).sum()), len(seeds)
    iv = stats.paired_t_interval(a, b)  # mean over seeds of L_AdamW - L_AdamWPower
    dec_g = stats.decide(mean_d, iv, G_MARGIN, ">=", atol=GAP_ATOL, cost_per_unit_s=cost_per_seed_s)
    dec_p = stats.decide(mean_d, iv, 0.0, ">=", atol=GAP_ATOL, cost_per_unit_s=cost_per_seed_s)
    per_seed = "; ".join(f"seed {s}: AdamW {la[s]:.4f}, AdamWPower {lp[s]:.4f}, d {d[s]:+.4f}" for s in seeds)
    sanity = (" Holds by construction: nothing (both arms are trained; the paired design, same init and batches "
              "per seed, is the sanity element, and AdamWPower at p = 1 equals AdamW bit for bit, tested). "
              "Can fail: every part.")
    medium = (" The `medium` scale (`icml26 run gradpower --scale medium`: the same configuration on "
              f"{CONFIGS['medium']['n_seeds']} paired seeds, the number the small run's hint asks for; about "
              f"{EXPECTED_RUNTIME_S['medium'] // 60} min on 2 cores, on CUDA when available) is the run sized to "
              "decide it.") if dec_g.verdict == "inconclusive" else ""
    return [
        Claim(
            id="G",
            statement="AdamWPower (p=1.2) with the AdamW-tuned hyperparameters is not worse than AdamW "
                      "(non-inferiority gate of the CPU reproduction).",
            metric="mean over paired seeds of d_s = L_AdamW - L_AdamWPower, final validation loss (nats/byte)",
            measured={"mean_d": mean_d, "min_d": min_d, **{f"d_seed{s}": d[s] for s in seeds}},
            threshold=f"mean_s d_s >= {G_MARGIN} nats/byte (paired t interval over seeds)",
            decision=dec_g, kind="gate", paper=PAPER_G, per_seed=[d[s] for s in seeds],
            details=f"{dec_g.text()}. {per_seed}." + medium
                    + " The spec's second part (min_s d_s >= -0.015 over its 3 seeds) is reported, not decided: a "
                      "minimum over seeds falls as seeds are added, so no number of seeds decides it; the interval "
                      f"of the mean accounts for the spread instead (min here {min_d:+.4f})." + sanity
                    + f" Regime: {regime}",
        ),
        Claim(
            id="P",
            statement="AdamWPower (p=1.2) reaches a lower final loss than AdamW (the paper's direction; "
                      "fragile at CPU scale, reported not gated).",
            metric="mean over paired seeds of d_s = L_AdamW - L_AdamWPower, final validation loss (nats/byte)",
            measured={"mean_d": mean_d, "n_seeds_improved": n_pos, "n_seeds": n},
            threshold="mean_s d_s > 0 (paired t interval over seeds)",
            decision=dec_p, kind="report", paper=PAPER_G, per_seed=[d[s] for s in seeds],
            details=f"{dec_p.text()}. {per_seed}; d_s > 0 on {n_pos} of {n} seeds." + sanity
                    + f" Regime: {regime}"
                    + ("" if dec_p.held else " Not decided held here: at CPU scale the gap is of the size of seed "
                       "noise and its sign depends on corpus/batch (spec section 6); the paper's gain is a "
                       "large-scale, long-training effect."),
        ),
    ]


def mechanism_check(n_samples: int, seed: int = 0, *, coords: int = 4096, steps: int = 2000, burn_in: int = 300,
                    optimizer_factory=None) -> tuple[dict[str, Any], Claim, Claim]:
    """Claim M (gate): AdamWPower's drift measured on synthetic streams vs the closed form; and M0 (sanity): the
    closed form / stratified MC of r(p) against the sqrt(2p+1) law (maths, holds by construction).

    Every part of M is decided by a t interval over the stream's coordinates (independent draws per coordinate,
    the same draws for every p, so differences between powers are paired per coordinate).
    `optimizer_factory` (see `mechanism.optimizer_drift`) replaces AdamWPower, e.g. by a deliberately wrong one.
    """
    powers = list(MECH_POWERS)
    # sanity (pure maths, holds for any correct closed form): stratified MC of r(p) vs the sqrt(2p+1) law
    hi_mc = [normalized_drift(*MECH_HIGH, p, n_samples=n_samples, seed=seed) for p in powers]
    law = [high_noise_drift(*MECH_HIGH, p) for p in powers]
    law_err = max(abs(h - a) / abs(a) for h, a in zip(hi_mc, law))
    closed = {k: [normalized_drift(*reg, p) for p in powers] for k, reg in (("high", MECH_HIGH), ("low", MECH_LOW))}
    # can fail: the optimizer's measured drift
    meas = optimizer_drift([MECH_HIGH, MECH_LOW], powers, n_coords=coords, n_steps=steps, burn_in=burn_in, seed=seed,
                           optimizer_factory=optimizer_factory, per_coord=True)
    rows = meas.pop("per_coord")
    keys = {"high": f"mu={MECH_HIGH[0]:g},sigma={MECH_HIGH[1]:g}", "low": f"mu={MECH_LOW[0]:g},sigma={MECH_LOW[1]:g}"}
    got = {k: [meas["drift"][keys[k]][f"{p:g}"] for p in powers] for k in keys}
    rel = {k: [(g - c) / abs(c) for g, c in zip(got[k], closed[k])] for k in keys}  # signed relative errors
    parts = []
    for k, direction in (("high", ">="), ("low", "<=")):  # increasing in p under high noise, decreasing under low
        for p, q in zip(powers, powers[1:]):
            diff = rows[keys[k]][f"{q:g}"] - rows[keys[k]][f"{p:g}"]
            parts.append(stats.decide(float(diff.mean()), stats.t_interval(diff, unit="coordinates"), 0.0,
                                      direction, label=f"{k} noise r({q:g}) - r({p:g}) {direction} 0"))
    for k in keys:  # |relative error vs the closed form| <= tol: the side the error lies on is the one at stake
        for i, p in enumerate(powers):
            e = rows[keys[k]][f"{p:g}"] / abs(closed[k][i]) - closed[k][i] / abs(closed[k][i])
            iv = stats.t_interval(e, unit="coordinates")
            side = ("<=", MECH_TOL) if rel[k][i] >= 0 else (">=", -MECH_TOL)
            parts.append(stats.decide(rel[k][i], iv, side[1], side[0],
                                      label=f"{k} noise p={p:g}: relative error {side[0]} {side[1]:+g}"))
    dec = stats.all_of(*parts, label="M")
    inc = all(b > a for a, b in zip(got["high"], got["high"][1:]))
    dec_ok = all(b < a for a, b in zip(got["low"], got["low"][1:]))
    max_rel = max(abs(x) for v in rel.values() for x in v)
    measured = {"optimizer_high_noise_r": dict(zip(map(str, powers), got["high"])),
                "optimizer_low_noise_r": dict(zip(map(str, powers), got["low"])),
                "max_rel_err_vs_closed_form": max_rel}
    fmt = lambda xs: ", ".join(f"{x:.4f}" for x in xs)  # noqa: E731
    details = (f"{dec.verdict}: every part decided by a 95 % t interval over the {coords} coordinates. "
               f"AdamWPower (betas 0.9/0.999, lr 1e-3, wd 0, float64) fed g = mu + sigma U(-1, 1) on {coords} "
               f"coordinates per (regime, p), {burn_in} burn-in + {steps} measured steps, draws shared across p. "
               f"Measured drift at (mu, sigma) = {MECH_HIGH}: {fmt(got['high'])} (closed form {fmt(closed['high'])}); "
               f"at {MECH_LOW}: {fmt(got['low'])} (closed form {fmt(closed['low'])}) for p = "
               f"{', '.join(map(str, powers))}; increasing={inc}, decreasing={dec_ok}, max relative error vs closed "
               f"form {max_rel:.4f} (tolerance {MECH_TOL}). Can fail: this optimizer part (a wrong power, no "
               "transform, or a transform outside the moments moves it; tests show p + 0.3 and plain AdamW failing). "
               f"Parts: {dec.text()}")
    claim = Claim(
        id="M",
        statement="Under Adam's normalisation, p > 1 raises the stationary drift of noise-dominated coordinates "
                  "(r(p) ~ (mu/sigma) sqrt(2p+1)) and lowers it for signal-dominated ones.",
        metric="AdamWPower's mean update / lr on synthetic streams g ~ U(mu - sigma, mu + sigma), p in "
               "{0.8, 1, 1.2, 1.5}, vs r(p) = E[phi_p(g)]/sqrt(E[phi_p(g)^2])",
        measured=measured,
        threshold=f"increasing in p at (mu, sigma) = {MECH_HIGH}; decreasing at {MECH_LOW}; within "
                  f"{100 * MECH_TOL:.0f} % of the closed form",
        decision=dec, kind="gate", paper=PAPER_M, details=details,
    )
    sanity = Claim(
        id="M0",
        statement="The closed form of r(p) follows the paper's high-noise law (mu/sigma) sqrt(2p+1).",
        metric=f"max relative error of the stratified MC ({n_samples} samples, fixed seed) of r(p) at (mu, sigma) = "
               f"{MECH_HIGH} vs (mu/sigma) sqrt(2p+1), p in {{0.8, 1, 1.2, 1.5}}",
        measured={"theory_max_rel_err_vs_sqrt_law": law_err},
        threshold=f"<= {MECH_TOL}",
        decision=stats.exact(law_err, MECH_TOL, "<="), kind="sanity", paper=PAPER_M,
        details="Holds by construction (maths: the spec's theory check, deterministic for a fixed MC seed, so exact). "
                f"max relative error {law_err:.4f}.",
    )
    return {"optimizer": meas, "closed_form": closed, "theory_mc_high_noise": hi_mc, "sqrt_law": law}, claim, sanity


def _jackknife_interval(value: float, se: float, groups: int = 8) -> stats.Interval:
    """A t interval (groups - 1 degrees of freedom) from a leave-one-group-out jackknife standard error;
    unbounded when the SE is unknown."""
    from scipy import stats as sps

    if not (math.isfinite(value) and math.isfinite(se)):
        return stats.Interval(-math.inf, math.inf, n=groups, method="jackknife-t", unit="jackknife groups")
    half = float(sps.t.ppf(0.975, groups - 1)) * se
    return stats.Interval(value - half, value + half, method="jackknife-t", n=groups, unit="jackknife groups",
                          sd=se * math.sqrt(groups))


def regime_claim(noise: dict[str, dict[str, dict[str, float]]], seeds: list[int], steps: int,
                 batch_size: int) -> tuple[Claim, str]:
    """Claim R (reported) from per-run noise scales {label: {str(step): gradient_noise_scale(...)}}; also a one-line
    regime summary for the other claims' details.

    noise > signal  <=>  excess = tr(Sigma)/B - |G|^2 > 0, and the excess is linear in the per-example sums, so each
    late checkpoint's part is decided on the excess with its jackknife interval (the ratio's own SE is unstable
    when |G|^2 is near 0); R holds when every part does."""
    late = {lab: {int(k): v["noise_to_signal"] for k, v in ns.items() if int(k) >= steps // 2}
            for lab, ns in noise.items()}
    min_ratio = min(min(v.values()) for v in late.values())
    last = {lab: ns[max(ns, key=int)] for lab, ns in noise.items()}
    mean_last = {arm: float(np.mean([last[f"{arm}_s{s}"]["noise_to_signal"] for s in seeds]))
                 for arm in ("adamw", "adamwpower")}
    frac_last = {arm: float(np.mean([last[f"{arm}_s{s}"]["frac_coords_noise_dominated"] for s in seeds]))
                 for arm in ("adamw", "adamwpower")}
    per_seed = [min(late[f"{arm}_s{s}"].values()) for s in seeds for arm in ("adamw", "adamwpower")]
    parts = []
    for lab, ns in noise.items():
        for k, v in sorted(ns.items(), key=lambda kv: int(kv[0])):
            if int(k) < steps // 2:
                continue
            ex = float(v.get("excess_noise", (v["noise_to_signal"] - 1.0)))
            se = float(v.get("excess_noise_se", math.nan))
            parts.append(stats.decide(ex, _jackknife_interval(ex, se), 0.0, ">=", label=f"{lab}@{k}"))
    dec = stats.all_of(*parts, label="R")

    def fmt(v: dict[str, float]) -> str:
        r, se = v["noise_to_signal"], v.get("noise_to_signal_se", float("nan"))
        return f"{r:.2f}" + (f" +- {se:.2f}" if math.isfinite(se) else "")

    table = "; ".join(f"{lab}: " + ", ".join(f"{k}: {fmt(v)}" for k, v in sorted(
        ns.items(), key=lambda kv: int(kv[0]))) for lab, ns in noise.items())
    undecided = [p.label for p in parts if p.verdict != "held"]
    summary = (f"B_noise/B at the last step {mean_last['adamw']:.2f} (AdamW) / {mean_last['adamwpower']:.2f} "
               f"(AdamWPower), seed means; min from mid-training on {min_ratio:.2f} -> "
               + ("noise-dominated (the regime of the paper's argument)." if dec.held else
                  "noise-dominated at every late checkpoint by its point estimate, some checkpoints undecided."
                  if dec.verdict == "inconclusive" and min_ratio > 1.0 else
                  "NOT noise-dominated throughout, so this run does not test the paper's regime."))
    claim = Claim(
        id="R",
        statement="The run is in the noise-dominated regime the paper's mechanism is about: the batch gradient's "
                  "noise exceeds its signal late in training.",
        metric=f"simple noise scale tr(Sigma)/|G|^2 (per-window gradients) / batch size {batch_size}, at every "
               f"checkpoint >= step {steps // 2}, each arm and seed; decided on tr(Sigma)/B - |G|^2 > 0",
        measured={"min_noise_to_signal_late": min_ratio, "mean_noise_to_signal_last": mean_last,
                  "frac_coords_noise_dominated_last": frac_last},
        threshold="> 1 at every late checkpoint of every run (tr(Sigma)/B - |G|^2 > 0, jackknife t interval)",
        decision=dec, kind="report", paper=PAPER_R, per_seed=per_seed,
        details=(f"{dec.verdict}: "
                 + (f"not decided at {', '.join(undecided)} (the jackknife interval of tr(Sigma)/B - |G|^2 reaches "
                    "0 or lies below; more noise_examples would narrow it). " if undecided else
                    "every late checkpoint's interval lies above 0. ")
                 + "B_noise/B per run and step: " + table + ". Fraction of coordinates whose batch noise exceeds "
                 f"their mean at the last step: {frac_last['adamw']:.2f} / {frac_last['adamwpower']:.2f}. "
                 "inf: the unbiased |G|^2 estimate is <= 0, i.e. the mean gradient is below the estimate's noise "
                 "floor tr(Sigma)/n (B_noise >~ n examples). +- is a leave-one-group-out jackknife SE of the ratio "
                 "(8 groups). Measured, can fail (nothing by construction); per_seed lists each run's late "
                 "minimum (AdamW, AdamWPower per seed)."),
    )
    return claim, summary

# ------------------------------------------------------------------------------------------------ figures
def _curve_figure(arms: dict[tuple[str, int], dict[str, Any]], seeds: list[int], power: float):
    fig, axes = new_figure(ncols=2, width=5.2)
    ax, ax2 = axes[0, 0], axes[0, 1]
    steps = arms[("adamw", seeds[0])]["eval_steps"]
    for name, lab, color in (("adamw", "AdamW", "C0"), ("adamwpower", f"AdamWPower p={power}", "C1")):
        curves = np.array([arms[(name, s)]["val_loss"] for s in seeds])
        for c in curves:
            ax.plot(steps, c, color=color, alpha=0.25, lw=0.8)
        ax.plot(steps, curves.mean(0), color=color, lw=2, label=f"{lab} (mean of {len(seeds)})")
    ax.set_xlabel("step")
    ax.set_ylabel("validation loss (nats/byte)")
    lo = min(min(a["val_loss"]) for a in arms.values())
    ax.set_ylim(lo - 0.02, lo + 0.5)
    ax.legend(fontsize=8)
    ax.set_title("validation loss (thin: per seed)")
    for s in seeds:
        d = np.array(arms[("adamw", s)]["val_loss"]) - np.array(arms[("adamwpower", s)]["val_loss"])
        ax2.plot(steps, d, marker="o", ms=3, label=f"seed {s}")
    ax2.axhline(0, color="k", lw=0.8)
    ax2.set_xlabel("step")
    ax2.set_ylabel("L_AdamW - L_AdamWPower (nats/byte)")
    ax2.set_title("paired gap (> 0: AdamWPower better)")
    ax2.legend(fontsize=8)
    return fig


def _drift_figure():
    ps = np.linspace(0.1, 2.5, 60)
    fig, axes = new_figure(ncols=2, width=4.6)
    ax, ax2 = axes[0, 0], axes[0, 1]
    for mu, sigma in ((0.05, 1.0), (0.2, 1.0)):
        ax.plot(ps, [normalized_drift(mu, sigma, p) / (mu / sigma) for p in ps], label=f"exact, mu/sigma={mu/sigma:g}")
    ax.plot(ps, np.sqrt(2 * ps + 1), "k--", lw=1, label="sqrt(2p+1)")
    ax.axvline(1.2, color="gray", lw=0.8, ls=":")
    ax.set_xlabel("p")
    ax.set_ylabel("r(p) / (mu/sigma)")
    ax.set_title("high noise: drift grows with p")
    ax.legend(fontsize=8)
    for mu, sigma in ((1.0, 0.2), (1.0, 0.5)):
        ax2.plot(ps, [normalized_drift(mu, sigma, p) for p in ps], label=f"mu=1, sigma={sigma}")
    ax2.axvline(1.2, color="gray", lw=0.8, ls=":")
    ax2.set_xlabel("p")
    ax2.set_ylabel("r(p)")
    ax2.set_title("low noise: drift falls with p")
    ax2.legend(fontsize=8)
    return fig


def _noise_figure(noise: dict[str, dict[str, dict[str, float]]], seeds: list[int], batch_size: int):
    fig, ax = new_figure()
    for arm, color, name in (("adamw", "C0", "AdamW"), ("adamwpower", "C1", "AdamWPower")):
        for i, s in enumerate(seeds):
            ns = noise[f"{arm}_s{s}"]
            steps = sorted(map(int, ns))
            ax.plot(steps, [ns[str(k)]["noise_to_signal"] for k in steps], marker="o", ms=3, color=color,
                    alpha=0.9 if i == 0 else 0.5, label=name if i == 0 else None)
    ax.axhline(1.0, color="k", lw=0.8, ls="--")
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel(f"tr(Sigma) / |G|^2 / B   (B = {batch_size})")
    ax.set_title("gradient noise scale (> 1: noise-dominated)")
    ax.legend(fontsize=8)
    return fig


# ------------------------------------------------------------------------------------------------ run
def run(config: dict[str, Any]) -> Result:
    """Run the reproduction at `config["scale"]` and return its Result (claims computed from the runs)."""
    validate_config(config)
    scale = config.get("scale", "small")
    if scale == "paper":
        return run_paper(config)
    t0 = time.perf_counter()
    n_seeds = int(config["n_seeds"])
    seeds = [int(config["seed"]) + i for i in range(n_seeds)]
    p, d0, steps = config["power"], config["d_model"], config["steps"]
    jobs = []
    for s in seeds:
        jobs.append(dict(config=config, seed=s, optimizer="adamw", power=1.0, d_model=d0, steps=steps,
                         label=f"adamw_s{s}"))
        jobs.append(dict(config=config, seed=s, optimizer="adamwpower", power=p, d_model=d0, steps=steps,
                         label=f"adamwpower_s{s}"))
    if config["ablation"]:
        s = seeds[0]
        for q in config["ablation_powers"]:
            jobs.append(dict(config=config, seed=s, optimizer="adamwpower", power=float(q), d_model=d0,
                             steps=steps, label=f"ablation_p{q}_s{s}"))
        for width, n_steps in config["ablation_widths"]:
            for name, q in (("adamw", 1.0), ("adamwpower", p)):
                jobs.append(dict(config=config, seed=s, optimizer=name, power=q, d_model=int(width),
                                 steps=int(n_steps), label=f"ablation_d{width}_{name}_s{s}"))
    # longest jobs first so the two workers finish together
    order = sorted(range(len(jobs)), key=lambda i: -jobs[i]["d_model"] ** 2 * jobs[i]["steps"] / 1024
                   - jobs[i]["steps"])
    outs = run_parallel(train_arm, [jobs[i] for i in order], workers=config["workers"],
                        desc=f"gradpower {len(jobs)} runs")
    by_label = {o["label"]: o for o in outs}
    arms = {(n, s): by_label[f"{n}_s{s}"] for s in seeds for n in ("adamw", "adamwpower")}

    la = {s: arms[("adamw", s)]["final"] for s in seeds}
    lp = {s: arms[("adamwpower", s)]["final"] for s in seeds}
    d = {s: la[s] - lp[s] for s in seeds}
    noise = {f"{n}_s{s}": a["noise_scale"] for (n, s), a in arms.items()}
    claim_r, regime = regime_claim(noise, seeds, steps, config["batch_size"])
    # one more seed costs its two arms' training time spread over the workers
    per_seed_s = float(np.mean([arms[("adamw", s)]["wall_s"] + arms[("adamwpower", s)]["wall_s"] for s in seeds]))
    claims = paired_claims(d, la, lp, regime, cost_per_seed_s=per_seed_s / max(1, min(config["workers"], 2)))
    mech, mclaim, m0 = mechanism_check(config["mc_samples"], seed=config["seed"], coords=config["mech_coords"],
                                       steps=config["mech_steps"], burn_in=config["mech_burn_in"])
    claims += [mclaim, claim_r, m0]
    dv = np.array(list(d.values()))

    metrics: dict[str, Any] = {
        "n_params": arms[("adamw", seeds[0])]["n_params"],
        "bytes_per_param": steps * config["batch_size"] * config["ctx"] / arms[("adamw", seeds[0])]["n_params"],
        "final_val_loss_adamw": la,
        "final_val_loss_adamwpower": lp,
        "mean_val_loss_adamw": float(np.mean(list(la.values()))),
        "mean_val_loss_adamwpower": float(np.mean(list(lp.values()))),
        "std_val_loss_adamw": float(np.std(list(la.values()))),
        "std_val_loss_adamwpower": float(np.std(list(lp.values()))),
        "mean_bits_per_byte_adamw": float(np.mean(list(la.values())) / LN2),
        "mean_bits_per_byte_adamwpower": float(np.mean(list(lp.values())) / LN2),
        "delta_per_seed": d,
        "delta_mean": float(dv.mean()),
        "delta_std": float(dv.std()),
        "curves": {f"{n}_s{s}": {"steps": a["eval_steps"], "val_loss": a["val_loss"]} for (n, s), a in arms.items()},
        "noise_scale": noise,
        "wall_s_per_run": {o["label"]: o["wall_s"] for o in outs},
        "mechanism": mech,
    }
    if config["ablation"]:
        s = seeds[0]
        abl: dict[str, Any] = {f"p={p}": lp[s], "p=1.0 (AdamW)": la[s]}
        for q in config["ablation_powers"]:
            abl[f"p={q}"] = by_label[f"ablation_p{q}_s{s}"]["final"]
        gaps = {f"d{d0} x {steps} steps": d[s]}
        for width, n_steps in config["ablation_widths"]:
            a = by_label[f"ablation_d{width}_adamw_s{s}"]
            b = by_label[f"ablation_d{width}_adamwpower_s{s}"]
            gaps[f"d{width} x {n_steps} steps"] = a["final"] - b["final"]
            abl[f"d{width}: AdamW / AdamWPower / bytes per param"] = [
                a["final"], b["final"], n_steps * config["batch_size"] * config["ctx"] / a["n_params"]]
        metrics["ablation"] = {"seed": s, "final_val_loss": abl, "gap_by_regime": gaps}
        last_w, last_steps = config["ablation_widths"][-1]
        g_sig = gaps[f"d{last_w} x {last_steps} steps"]
        claims.append(Claim(
            id="A",
            statement="The gain of p=1.2 depends on the noise regime: it shrinks or reverses in the "
                      "signal-dominated regime (wide model, few bytes per parameter).",
            metric=f"gap L_AdamW - L_AdamWPower (nats/byte), seed {s}, by model width / training length",
            measured=gaps,
            threshold=f"gap(d{last_w}, {last_steps} steps) < gap(d{d0}, {steps} steps)",
            # one seed: a single difference of gaps cannot bound its mean, so A stays inconclusive (report only)
            decision=stats.decide(g_sig - d[s], stats.t_interval([g_sig - d[s]]), 0.0, "<=", atol=GAP_ATOL),
            kind="report", paper=PAPER_A,
            details="; ".join(f"{k}: {v:.4f}" if isinstance(v, float) else f"{k}: {v}" for k, v in abl.items())
                    + ". One seed: its seed spread is unknown (the main runs' spread of d is "
                      f"{float(dv.max() - dv.min()):.4f}), so the ablation reports, it does not decide; repeating "
                      "it on the seeds G asks for would.",
        ))

    result = Result(slug=SLUG, scale=config["scale"], config=config, metrics=metrics, claims=claims,
                    notes=f"{n_seeds} paired seeds; {metrics['n_params']} params; "
                          f"{metrics['bytes_per_param']:.0f} bytes/param; WSD; lr {config['lr']} for both arms. "
                          f"Regime: {regime}")
    result.add_figure("val_loss_curves", _curve_figure(arms, seeds, p),
                      "validation loss per arm (thin: seeds) and the paired gap per seed")
    result.add_figure("noise_scale", _noise_figure(noise, seeds, config["batch_size"]),
                      "gradient noise scale / batch size at the checkpoints, per arm and seed")
    result.add_figure("drift_vs_p", _drift_figure(), "closed-form normalised drift r(p) in both noise regimes")
    result.runtime_s = time.perf_counter() - t0
    return result


__all__ = ["CONFIGS", "CONFIG_HELP", "EXPECTED_RUNTIME_S", "validate_config", "run", "train_arm",
           "mechanism_check", "paired_claims", "regime_claim"]
