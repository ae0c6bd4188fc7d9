"""PoPE reproduction: length extrapolation (claim A), decoupling checks (claim B), Indirect Indexing (claim C).

Spec section 6. A: byte-level TinyDecoders (2 layers, d 128, 4 heads, FFN 4x GELU, RMSNorm, no biases) with
PoPE and RoPE trained at ctx 64 on the stdlib *.py corpus (first 2 MB, last 10 % validation), evaluated
zero-shot at ctx 64 / 256 / 512 over seeds {0, 1}; arms and seeds run as parallel single-thread processes.
B: deterministic score checks (no training). C: the Indirect Indexing benchmark, only when `ii_run` is set
(its long configuration needs a GPU or a long CPU job; at CPU budgets neither encoding learns it, spec 6).
The claim checks live in `icml26.pope.claims` (shared with the paper-scale path).

`--scale paper` runs the GPT-2-style (124M by default) Llama+PoPE vs Llama+RoPE comparison of spec 7 through
`icml26.pope.scale` (single process, or DDP/FSDP2 under torchrun); see docs/pope.md.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from icml26.common import run_parallel, seed_everything, torch_generator
from icml26.common.text import bytes_to_tensor, stdlib_python_bytes, train_val_split
from icml26.common.train import train_lm, warmup_cosine
from icml26.common.validation import check_float, check_int, check_seed, require_keys
from icml26.pope.claims import (
    DECOUPLING_DEFAULTS,
    claim_a,
    claim_b,
    claim_c,
    decoupling_check,
    fig_decoupling,
    fig_extrapolation,
    fig_ii,
)
from icml26.pope.models import ENCODINGS, TinyDecoder, param_groups
from icml26.pope.scale import PAPER_CONFIG, PAPER_CONFIG_HELP, run_paper, validate_paper_config, validate_shared_checks
from icml26.pope.tasks import II_LONG_CONFIG, length_extrapolation_eval, train_indirect_indexing
from icml26.results import Result

SLUG = "pope"

CONFIGS: dict[str, dict[str, Any]] = {
    "smoke": {
        "seed": 0, "n_seeds": 1, "arms": ["pope", "rope"], "n_bytes": 200_000, "val_frac": 0.1,
        "d_model": 32, "n_layers": 1, "n_heads": 2, "ctx": 32, "batch_size": 8, "steps": 15, "lr": 2e-3,
        "weight_decay": 0.1, "warmup_frac": 0.05, "eval_lengths": [32, 64], "eval_windows": 4, "workers": 1,
        **DECOUPLING_DEFAULTS,
        **{**II_LONG_CONFIG, "ii_run": True, "ii_seeds": [0], "ii_layers": 1, "ii_d_model": 32, "ii_heads": 2,
           "ii_batch": 16, "ii_steps": 5, "ii_test_size": 50, "ii_device": "cpu"},
    },
    "small": {  # spec 6A, seeds {0, 1}
        "seed": 0, "n_seeds": 2, "arms": ["pope", "rope"], "n_bytes": 2_000_000, "val_frac": 0.1,
        "d_model": 128, "n_layers": 2, "n_heads": 4, "ctx": 64, "batch_size": 32, "steps": 600, "lr": 2e-3,
        "weight_decay": 0.1, "warmup_frac": 0.05, "eval_lengths": [64, 256, 512], "eval_windows": 40,
        "workers": 0, **DECOUPLING_DEFAULTS, **II_LONG_CONFIG,
    },
    "paper": dict(PAPER_CONFIG),  # spec 7: see icml26.pope.scale and docs/pope.md
}

CONFIG_HELP: dict[str, str] = {
    "seed": "first seed; seeds seed..seed+n_seeds-1 (init and batch order per seed, shared by the arms)",
    "n_seeds": "number of seeds (>= 1)",
    "arms": "position encodings, must include 'pope' and 'rope' (also 'alibi', 'nope', report only)",
    "n_bytes": "bytes of the stdlib *.py corpus (first n_bytes)",
    "val_frac": "trailing fraction of the corpus used for validation, in (0, 1)",
    "d_model": "model width", "n_layers": "transformer blocks", "n_heads": "attention heads (d_model / n_heads "
                                                                             "= head dim)",
    "ctx": "training context length, bytes (also the in-distribution evaluation length)",
    "batch_size": "windows per step", "steps": "optimizer steps", "lr": "AdamW peak learning rate",
    "weight_decay": "AdamW decoupled weight decay (matrices only; not on delta or norms)",
    "warmup_frac": "fraction of steps of linear warmup before the cosine decay, in [0, 1)",
    "eval_lengths": "evaluation context lengths, bytes, increasing; the first is the training length",
    "eval_windows": "non-overlapping validation windows per evaluation length",
    "workers": "parallel single-thread processes (0 = one per CPU)",
    "decoupling_trials": "random (q, k) draws of claim B",
    "decoupling_head_dim": "head dim of claim B's check",
    "decoupling_t": "query position of claim B's check",
    "decoupling_max_pos": "keys sit at positions 0..decoupling_max_pos",
    "ii_run": "also run Indirect Indexing (claim C; long, GPU-sized by default)",
    "ii_seeds": "Indirect Indexing seeds", "ii_arms": "Indirect Indexing encodings",
    "ii_layers": "II model depth", "ii_d_model": "II model width", "ii_heads": "II heads",
    "ii_batch": "II examples per step", "ii_steps": "II optimizer steps", "ii_lr": "II AdamW peak lr",
    "ii_weight_decay": "II AdamW weight decay", "ii_alphabet": "II distinct character tokens",
    "ii_min_len": "II shortest source string", "ii_max_len": "II longest source string",
    "ii_max_shift": "II largest |shift|", "ii_queries": "II queries packed per sequence",
    "ii_test_size": "II fixed test examples (seed 999)", "ii_device": "II device: auto, cpu or cuda",
}
# keys only the paper scale has (shared keys mean the same there, per process: see scale.PAPER_CONFIG_HELP)
CONFIG_HELP.update({k: v for k, v in PAPER_CONFIG_HELP.items() if k not in CONFIG_HELP})

EXPECTED_RUNTIME_S = {"smoke": 10, "small": 150, "paper": 7 * 24 * 3600}  # paper: 2 x 124M on 8 GPUs, roughly


def validate_config(config: dict[str, Any]) -> None:
    """Raise ValueError/TypeError naming the first bad key of `config` (the CLI calls this before compute)."""
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict, got {type(config).__name__}")
    if config.get("scale", "small") == "paper":
        validate_paper_config(config)
        return
    require_keys(config, CONFIGS["small"])
    check_seed(config["seed"], "seed")
    check_int(config["n_seeds"], "n_seeds", min=1)
    arms = config["arms"]
    if not isinstance(arms, list) or len(set(arms)) != len(arms) or not {"pope", "rope"} <= set(arms) or \
            any(a not in ENCODINGS for a in arms):
        raise ValueError(f"arms must be a list of distinct names from {sorted(ENCODINGS)} including 'pope' and "
                         f"'rope', got {arms!r}")
    for key in ("n_bytes", "d_model", "n_layers", "n_heads", "ctx", "batch_size", "steps", "eval_windows"):
        check_int(config[key], key, min=1)
    check_int(config["workers"], "workers", min=0)
    if config["d_model"] % config["n_heads"] or (config["d_model"] // config["n_heads"]) % 2:
        raise ValueError(f"d_model ({config['d_model']}) / n_heads ({config['n_heads']}) must be an even head dim "
                         "(RoPE pairs features)")
    check_float(config["val_frac"], "val_frac", min=0.0, max=1.0, min_open=True, max_open=True)
    check_float(config["lr"], "lr", min=0.0, min_open=True)
    check_float(config["weight_decay"], "weight_decay", min=0.0)
    check_float(config["warmup_frac"], "warmup_frac", min=0.0, max=1.0, max_open=True)
    lengths = config["eval_lengths"]
    if not isinstance(lengths, list) or len(lengths) < 2:
        raise ValueError(f"eval_lengths must be a list of >= 2 increasing lengths, got {lengths!r}")
    lengths = [check_int(t, f"eval_lengths[{i}]", min=2) for i, t in enumerate(lengths)]
    if lengths != sorted(set(lengths)):
        raise ValueError(f"eval_lengths must be strictly increasing, got {lengths}")
    if lengths[0] != config["ctx"]:
        raise ValueError(f"eval_lengths[0] must be the training length ctx={config['ctx']}, got {lengths[0]}")
    n_val = int(config["n_bytes"] * config["val_frac"])
    need = config["eval_windows"] * (lengths[-1] + 1)
    if n_val < need:
        raise ValueError(f"n_bytes * val_frac = {n_val} validation bytes, fewer than the eval_windows x "
                         f"(eval_lengths[-1] + 1) = {need} the evaluation needs")
    validate_shared_checks(config)


# ------------------------------------------------------------------------------------------- claim A
def train_extrapolation_arm(arm: str, seed: int, cfg: dict) -> dict:
    """Train one TinyDecoder (module-level so `run_parallel` can spawn it) and evaluate it at every length."""
    t0 = time.perf_counter()
    data = bytes_to_tensor(stdlib_python_bytes(cfg["n_bytes"]))
    train, val = train_val_split(data, cfg["val_frac"])
    seed_everything(seed)
    model = TinyDecoder(256, cfg["d_model"], cfg["n_layers"], cfg["n_heads"], cfg["ctx"], arm)
    opt = torch.optim.AdamW(param_groups(model, cfg["weight_decay"]), lr=cfg["lr"])
    hist = train_lm(model, train, steps=cfg["steps"], batch_size=cfg["batch_size"], ctx=cfg["ctx"], optimizer=opt,
                    lr_lambda=warmup_cosine(cfg["steps"], cfg["warmup_frac"]), clip=1.0,
                    generator=torch_generator(seed), progress=f"{arm} seed {seed}")
    windows = length_extrapolation_eval(model, val, cfg["eval_lengths"], n_windows=cfg["eval_windows"],
                                        per_window=True)
    out = {"arm": arm, "seed": seed, "losses": {str(k): float(np.mean(v)) for k, v in windows.items()},
           "window_losses": {str(k): v for k, v in windows.items()},
           "final_train_loss": float(np.mean(hist.train_loss[-20:])), "time_s": time.perf_counter() - t0}
    if arm == "pope":
        deltas = torch.stack([e.clamped_delta().detach() for e in model.encodings()])
        out["delta_mean"], out["delta_min"] = float(deltas.mean()), float(deltas.min())
    return out


# ------------------------------------------------------------------------------------------- run
def run(config: dict) -> Result:
    """Run the reproduction for `config` (one of CONFIGS, plus "scale"); see the module docstring."""
    validate_config(config)
    scale = config.get("scale", "small")
    if scale == "paper":
        return run_paper(config)
    t0 = time.perf_counter()
    seeds = [config["seed"] + i for i in range(config["n_seeds"])]
    arms = list(config["arms"])
    lengths = [int(t) for t in config["eval_lengths"]]
    workers = config.get("workers") or None
    jobs = [{"arm": a, "seed": s, "cfg": config} for s in seeds for a in arms]
    runs = run_parallel(train_extrapolation_arm, jobs, workers=workers, desc="length extrapolation")
    claim_a_, stats_a = claim_a(runs, lengths, seeds)

    dec = decoupling_check(config["decoupling_trials"], config["decoupling_head_dim"], config["decoupling_t"],
                           config["decoupling_max_pos"], seed=config["seed"])
    claims = [claim_a_, *claim_b(dec, config["decoupling_trials"])]
    metrics: dict[str, Any] = {
        "extrapolation_runs": runs, **stats_a,
        "mean_loss": {a: {str(t): float(np.mean([r["losses"][str(t)] for r in runs if r["arm"] == a]))
                          for t in lengths} for a in arms},
        "decoupling": dec,
    }
    result = Result(slug=SLUG, scale=scale, config=config, metrics=metrics, claims=claims)
    result.add_figure("extrapolation", fig_extrapolation(runs, lengths, seeds),
                      "validation loss (nats/byte) vs evaluation length, per encoding and seed; trained at the "
                      "first length")
    result.add_figure("decoupling_argmax", fig_decoupling(dec, config["decoupling_max_pos"], config["decoupling_t"]),
                      "claim B: where each trial's score peaks, relative to the query position")
    if config["ii_run"]:
        ii_jobs = [{"arm": a, "seed": s, "cfg": config} for s in config["ii_seeds"] for a in config["ii_arms"]]
        on_gpu = config["ii_device"] == "cuda" or (config["ii_device"] == "auto" and torch.cuda.is_available())
        ii_runs = (run_parallel(train_indirect_indexing, ii_jobs, workers=1 if on_gpu else workers,
                                desc="indirect indexing"))
        metrics["indirect_indexing"] = ii_runs
        if {"pope", "rope"} <= set(config["ii_arms"]):
            result.claims.append(claim_c(ii_runs))
        result.add_figure("indirect_indexing", fig_ii(ii_runs), "Indirect Indexing test accuracy per encoding")
    result.runtime_s = time.perf_counter() - t0
    result.notes = (f"{len(runs)} extrapolation runs ({', '.join(arms)} x seeds {seeds}) as parallel single-thread "
                    f"processes; claim C {'computed' if config['ii_run'] else 'not run (set ii_run=true)'}.")
    return result


__all__ = ["CONFIGS", "CONFIG_HELP", "EXPECTED_RUNTIME_S", "validate_config", "run", "decoupling_check",
           "train_extrapolation_arm"]
