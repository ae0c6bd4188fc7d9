"""CPU reproduction of MeshTok (spec section 6, amended by its review notes) and the paper-scale entry (section 7).

Data: 2-D viscous Burgers on the periodic unit square (64 x 64, nu = 2e-3, burn-in to t = 0.25, 12 frames every
0.05), 192 train / 64 test trajectories, generated in two parallel chunks and cached as .npz (keyed by the
generator config) under `icml26.common.paths.cache_dir("meshtok")`.
Arms (identical model and training except the tokenizer; the same seed gives the same initial weights and window
sequence in every arm): MeshTok (physical indicator, K = 16, 112 tokens/frame), Random-refine (K = 16, 112),
Uniform-coarse (K = 0, 64); Uniform-fine (K = 64, 256) in `medium`. Each (arm, seed) is one single-thread job
(`run_parallel`, 2 processes; on CUDA the jobs run one after another in this process).
Indicator padding (`boundary`): "auto" takes the data's boundary condition (`data.BOUNDARY`: Burgers is periodic),
so the stencils wrap around instead of seeing a jump against a zero pad at the border.
Model: D 64, 3 layers, 4 heads, FFN 128 (GELU), RMSNorm + QK-norm, geometry FiLM, time embedding, decoder width 16
(review note 1b), residual head; context 4 frames (window of 5), AdamW 1e-3 (wd 1e-4), one-cycle with 10 % warmup,
clip 1.0, batch 8. Steps: one count for all arms, chosen from a timed arm so that data + jobs fit the 5-minute
budget (review note 1c): 3 seeds x 140 steps in small. `medium` is the same experiment on 5 seeds with the
Uniform-fine arm (M4), for the gates that 3 seeds cannot decide.
Claims (see claims.py): M1, M2 (and M4 when Uniform-fine is run) gate, M3 sanity, D1-D4 report.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from icml26.common.parallel import run_parallel
from icml26.common.validation import check_bool, check_choice, check_float, check_int, check_seed, require_keys
from icml26.results import Result

SLUG = "meshtok"

_MODEL = {"dim": 64, "depth": 3, "heads": 4, "ffn": 128, "mlp": "gelu", "dec_width": 16, "max_time_len": 20,
          "residual": True, "attn_impl": "sdpa"}
_TRAIN = {"lr": 1e-3, "weight_decay": 1e-4, "warmup_frac": 0.1, "grad_clip": 1.0, "input_noise": 0.0,
          "batch_size": 8, "context": 4, "eval_stride": 3, "eval_batch": 32}
_DATA = {"n_train": 192, "n_test": 64, "grid": 64, "patch": 8, "refine_ratio": 0.25, "n_frames": 12, "nu": 2e-3,
         "data_seed": 0, "cache": True, "boundary": "auto", "device": "cpu"}

CONFIGS: dict[str, dict[str, Any]] = {
    "smoke": {
        "seed": 0, "n_seeds": 1, "workers": 1, "arms": ["meshtok", "random", "coarse", "fine"],
        "n_train": 6, "n_test": 4, "grid": 32, "patch": 8, "refine_ratio": 0.25, "n_frames": 6, "nu": 2e-3,
        "data_seed": 0, "cache": True, "boundary": "auto", "device": "cpu",
        **_MODEL, "dim": 16, "depth": 1, "heads": 2, "ffn": 32, "dec_width": 4,
        **_TRAIN, "steps": 3, "batch_size": 2, "rollout_steps": 2, "rollout_n": 2,
    },
    # 3 seeds x 140 steps: the step count that fits 3 seeds into the budget at 0.43-0.57 s per MeshTok step, timed
    # single-threaded under the lock on 2026-12-01 (review note 1c; 3 x 228 steps took 552 s there; M1/M2 at
    # 2 seeds had t = 12.7 intervals)
    "small": {
        "seed": 0, "n_seeds": 3, "workers": 0, "arms": ["meshtok", "random", "coarse"], **_DATA,
        **_MODEL, **_TRAIN, "steps": 140, "rollout_steps": 4, "rollout_n": 16,
    },
}
# medium: the small experiment on 5 seeds (a 3-seed t interval uses t = 4.30, 5 seeds t = 2.78: at the spread seen
# in the issue-38 audit, sd ~0.034 of the per-seed ratio, 5 seeds clear M1's band) plus Uniform-fine for M4
MEDIUM_SEEDS = 5
CONFIGS["medium"] = {**CONFIGS["small"], "n_seeds": MEDIUM_SEEDS, "arms": ["meshtok", "random", "coarse", "fine"],
                     "device": "auto"}

CONFIG_HELP: dict[str, str] = {
    "seed": "first training seed (seeds seed .. seed + n_seeds - 1)", "n_seeds": "training seeds per arm",
    "workers": "parallel single-thread processes (0 = one per CPU)",
    "arms": "tokenizations: meshtok (physical), random (same K), coarse (K = 0), fine (K = n^2)",
    "n_train": "training trajectories", "n_test": "test trajectories", "grid": "H = W, cells",
    "patch": "coarse patch size P, cells (n = grid / P)", "refine_ratio": "K / n^2 refined per frame",
    "n_frames": "frames per trajectory (every 0.05 time units after burn-in to t = 0.25)",
    "nu": "Burgers viscosity", "data_seed": "seed of the simulated data (train uses it, test uses + 1)",
    "cache": "cache generated data as .npz under the icml26 cache dir",
    "boundary": "indicator padding: auto (the data's boundary condition; Burgers: periodic) | periodic | zero",
    "device": "cpu | cuda | auto (cuda when available; the jobs then run one after another on it)",
    "dim": "token width D", "depth": "transformer layers", "heads": "attention heads", "ffn": "FFN hidden width",
    "mlp": "gelu | swiglu", "dec_width": "decoder feature channels", "max_time_len": "time-embedding length",
    "residual": "predict u_{t+1} - u_t (True) or the frame (official: False)",
    "attn_impl": "sdpa | math | flex", "lr": "AdamW peak learning rate", "weight_decay": "AdamW weight decay",
    "warmup_frac": "one-cycle warmup fraction", "grad_clip": "gradient-norm clip", "input_noise":
    "Gaussian input noise, in units of the window std (official 0.01; 0 in the CPU recipe)",
    "batch_size": "windows per step", "context": "input frames per window (targets: the next frame of each)",
    "eval_stride": "test windows start every eval_stride frames", "eval_batch": "windows per evaluation batch",
    "steps": "optimizer steps per arm (one count for all arms)",
    "rollout_steps": "report: sliding-context rollout steps",
    "rollout_n": "report: test trajectories rolled out",
    "scale": "smoke | small | medium | paper (set by the CLI)",
}

# small: 9 jobs of 140 steps (0.43-0.57 s per MeshTok step single-threaded) on 2 processes, spec budget 5 min;
# medium: 5 seeds x 4 arms (Uniform-fine ~3x a MeshTok step), ~200 s per seed on 2 processes
EXPECTED_RUNTIME_S = {"smoke": 15, "small": 280, "medium": 1100, "paper": 6 * 3600}


def _paper_config() -> dict[str, Any]:
    from icml26.meshtok.scale import PAPER_CONFIG

    return dict(PAPER_CONFIG)


CONFIGS["paper"] = _paper_config()


def validate_config(config: dict) -> None:
    """Raise ValueError/TypeError naming the first bad key (called by the CLI before compute and by `run`)."""
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict, got {type(config).__name__}")
    if config.get("scale") == "paper":
        from icml26.meshtok.scale import validate_paper_config

        validate_paper_config(config)
        return
    require_keys(config, CONFIGS["small"], "config")
    c = config
    check_seed(c["seed"], "seed")
    check_int(c["n_seeds"], "n_seeds", min=1)
    check_int(c["workers"], "workers", min=0)
    arms = c["arms"]
    if isinstance(arms, str) or not isinstance(arms, (list, tuple)) or not arms:
        raise TypeError(f"arms must be a non-empty list, got {arms!r}")
    for i, a in enumerate(arms):
        check_choice(a, f"arms[{i}]", ("meshtok", "random", "coarse", "fine"))
    if len(set(arms)) != len(arms) or "meshtok" not in arms:
        raise ValueError(f"arms must be distinct and include 'meshtok', got {arms!r}")
    check_int(c["n_train"], "n_train", min=1)
    check_int(c["n_test"], "n_test", min=1)
    grid = check_int(c["grid"], "grid", min=4)
    patch = check_int(c["patch"], "patch", min=2)
    check_float(c["refine_ratio"], "refine_ratio", min=0.0, max=1.0)
    from icml26.meshtok.meshtok import refined_count

    refined_count(grid, patch, c["refine_ratio"])
    nf = check_int(c["n_frames"], "n_frames", min=2)
    check_float(c["nu"], "nu", min=0.0, min_open=True)
    check_seed(c["data_seed"], "data_seed")
    check_bool(c["cache"], "cache")
    check_choice(c["boundary"], "boundary", ("auto", "periodic", "zero"))
    check_choice(c["device"], "device", ("cpu", "cuda", "auto"))
    if c["device"] == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ValueError("device is 'cuda' but CUDA is not available (use 'auto' or 'cpu')")
    dim = check_int(c["dim"], "dim", min=2)
    if dim % 2:
        raise ValueError(f"dim={dim} must be even (geometry FiLM)")
    check_int(c["depth"], "depth", min=1)
    heads = check_int(c["heads"], "heads", min=1)
    if dim % heads:
        raise ValueError(f"dim={dim} must be divisible by heads={heads}")
    check_int(c["ffn"], "ffn", min=1)
    check_choice(c["mlp"], "mlp", ("gelu", "swiglu"))
    check_int(c["dec_width"], "dec_width", min=1)
    mtl = check_int(c["max_time_len"], "max_time_len", min=1)
    check_bool(c["residual"], "residual")
    check_choice(c["attn_impl"], "attn_impl", ("sdpa", "math"))
    check_float(c["lr"], "lr", min=0.0, min_open=True)
    check_float(c["weight_decay"], "weight_decay", min=0.0)
    check_float(c["warmup_frac"], "warmup_frac", min=0.0, max=1.0, min_open=True, max_open=True)
    check_float(c["grad_clip"], "grad_clip", min=0.0, min_open=True)
    check_float(c["input_noise"], "input_noise", min=0.0)
    check_int(c["batch_size"], "batch_size", min=1)
    ctx = check_int(c["context"], "context", min=1)
    if ctx + 1 > nf:
        raise ValueError(f"context={ctx} needs n_frames >= context + 1, got n_frames={nf}")
    if ctx > mtl:
        raise ValueError(f"context={ctx} must be <= max_time_len={mtl}")
    check_int(c["eval_stride"], "eval_stride", min=1)
    check_int(c["eval_batch"], "eval_batch", min=1)
    check_int(c["steps"], "steps", min=1)
    check_int(c["rollout_n"], "rollout_n", min=1)
    r = check_int(c["rollout_steps"], "rollout_steps", min=0)
    if r and ctx + r > nf:
        raise ValueError(f"rollout_steps={r} needs n_frames >= context + rollout_steps = {ctx + r}, got {nf}")
    if "scale" in c:
        check_choice(c["scale"], "scale", ("smoke", "small", "medium", "paper"))


def _gen_chunk(n_traj: int, grid: int, n_frames: int, nu: float, seed: int, offset: int) -> np.ndarray:
    from icml26.meshtok.data import burgers2d

    return burgers2d(n_traj, grid=grid, n_frames=n_frames, nu=nu, seed=seed, offset=offset)


def make_data(cfg: dict[str, Any], workers: int | None = None) -> tuple[Path | None, np.ndarray, np.ndarray]:
    """(cache path or None, train (n_train, T, H, W, 1), test (n_test, T, H, W, 1)); generated in parallel chunks."""
    import hashlib
    import json

    from icml26.common.paths import cache_dir

    spec = {k: cfg[k] for k in ("n_train", "n_test", "grid", "n_frames", "nu", "data_seed")}
    spec["generator"] = "burgers2d-v1"
    key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
    path = cache_dir("meshtok") / f"burgers_{key}.npz" if cfg["cache"] else None
    if path is not None and path.is_file():
        with np.load(path) as z:
            return path, z["train"], z["test"]
    jobs = []
    for name, n, seed in (("train", cfg["n_train"], cfg["data_seed"]), ("test", cfg["n_test"], cfg["data_seed"] + 1)):
        half = (n + 1) // 2
        for lo, hi in ((0, half), (half, n)):
            if hi > lo:
                jobs.append({"n_traj": hi - lo, "grid": cfg["grid"], "n_frames": cfg["n_frames"], "nu": cfg["nu"],
                             "seed": seed, "offset": lo, "_name": name})
    names = [j.pop("_name") for j in jobs]
    outs = run_parallel(_gen_chunk, jobs, workers=workers, desc="Burgers data") if (workers or 2) > 1 \
        else [_gen_chunk(**j) for j in jobs]
    train = np.concatenate([o for o, n in zip(outs, names) if n == "train"])
    test = np.concatenate([o for o, n in zip(outs, names) if n == "test"])
    if path is not None:
        import os

        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.npz")
        np.savez(tmp, train=train, test=test)
        os.replace(tmp, path)
    return path, train, test


def _job(arm: str, seed: int, cfg: dict[str, Any], data_path: str | None, data: Any = None,
         device: str = "cpu") -> dict[str, Any]:
    import torch

    from icml26.meshtok.train import train_arm

    t0 = time.perf_counter()
    if device == "cpu":
        torch.set_num_threads(1)
    if data_path:
        with np.load(data_path) as z:
            train, test = z["train"], z["test"]
    else:
        train, test = data
    out = train_arm(cfg, arm, seed, train, test, device=device)
    out["job_s"] = time.perf_counter() - t0  # training + evaluation
    return out


def resolve_boundary(config: dict[str, Any]) -> str:
    """The indicator's padding: the data's boundary condition (`data.BOUNDARY`) for "auto"."""
    from icml26.meshtok.data import BOUNDARY

    b = config["boundary"]
    return BOUNDARY["burgers2d"] if b == "auto" else b


def resolve_device(config: dict[str, Any]) -> str:
    import torch

    d = config["device"]
    return ("cuda" if torch.cuda.is_available() else "cpu") if d == "auto" else d


def _medium_text(scale: str) -> str:
    med = CONFIGS["medium"]
    if scale == "medium":
        return "more seeds than this medium run's (the hint gives the number); `--set n_seeds=N`."
    return (f"`icml26 run meshtok --scale medium` (the same experiment on {med['n_seeds']} seeds with Uniform-fine for "
            f"M4; about {EXPECTED_RUNTIME_S['medium'] / 60:.0f} min on 2 cores, on CUDA when available).")


def run(config: dict) -> Result:
    """Run the reproduction for `config` (one of CONFIGS, plus "scale"); see the module docstring."""
    validate_config(config)
    scale = config.get("scale", "small")
    if scale == "paper":
        from icml26.meshtok.scale import run_paper

        return run_paper(config)
    import torch

    from icml26.meshtok.claims import (border_share, fig_error_vs_flops, fig_refinement_maps, make_claims,
                                       shock_fraction)
    from icml26.meshtok.indicators import patch_scores, select_patches
    from icml26.meshtok.meshtok import refined_count

    t0 = time.perf_counter()
    cfg = dict(config)
    boundary, device = resolve_boundary(cfg), resolve_device(cfg)
    cfg["periodic"] = boundary == "periodic"  # read by train.build_model (MODEL_KEYS)
    workers = cfg["workers"] or None
    path, train, test = make_data(cfg, workers)
    data_s = time.perf_counter() - t0
    seeds = [cfg["seed"] + i for i in range(cfg["n_seeds"])]
    arms = list(cfg["arms"])
    jobs = [{"arm": a, "seed": s, "cfg": cfg, "data_path": str(path) if path else None,
             "data": None if path else (train, test), "device": device} for s in seeds for a in arms]
    if device == "cpu" and (workers or 2) > 1:
        runs = run_parallel(_job, jobs, workers=workers, desc="meshtok arms x seeds")
    else:
        runs = [_job(**j) for j in jobs]
    train_s = time.perf_counter() - t0 - data_s

    ctx = cfg["context"]
    inputs = test[:, :-1] if test.shape[1] > ctx else test
    k = refined_count(cfg["grid"], cfg["patch"], cfg["refine_ratio"])
    frames = torch.from_numpy(inputs.reshape(-1, *inputs.shape[2:])).permute(0, 3, 1, 2)
    diag = {"shock_patch_fraction": shock_fraction(inputs, cfg["patch"]),
            "border": border_share(frames, cfg["patch"], k, boundary) if k else None}
    # one more seed of every arm: its jobs' seconds spread over the parallel processes
    n_par = 1 if device != "cpu" else min(len(jobs), workers or 2)
    cost_per_seed = float(sum(r["job_s"] for r in runs)) / len(seeds) / n_par
    claims = make_claims(runs, seeds, arms, diag, cost_per_seed_s=cost_per_seed, medium=_medium_text(scale))
    table = {a: {"rel_l2_mean": float(np.mean([r["rel_l2"] for r in runs if r["arm"] == a])),
                 "rel_l2_std": float(np.std([r["rel_l2"] for r in runs if r["arm"] == a], ddof=1))
                 if len(seeds) > 1 else 0.0,
                 "rel_l2_per_seed": [r["rel_l2"] for s in seeds for r in runs if r["arm"] == a and r["seed"] == s],
                 "rollout_rel_l2_mean": float(np.mean([r.get("rollout_rel_l2", np.nan) for r in runs
                                                       if r["arm"] == a])),
                 "tokens_per_frame": next(r["tokens_per_frame"] for r in runs if r["arm"] == a),
                 "gflops_window": next(r["gflops_window"] for r in runs if r["arm"] == a),
                 "gflops_attention": next(r["gflops_attention"] for r in runs if r["arm"] == a),
                 "params": next(r["params"] for r in runs if r["arm"] == a),
                 "s_per_step": float(np.mean([r["s_per_step"] for r in runs if r["arm"] == a])),
                 "train_s_per_arm": float(np.mean([r["train_s"] for r in runs if r["arm"] == a]))}
             for a in arms}
    metrics: dict[str, Any] = {
        "arms": table, "persistence_rel_l2": float(np.mean([r["persistence"] for r in runs])),
        "runs": [{k: v for k, v in r.items() if k not in ("rel_l2_windows", "persistence_windows")} for r in runs],
        "per_window_rel_l2": {f"{r['arm']}/{r['seed']}": r["rel_l2_windows"] for r in runs},
        "data": {**diag, "train_shape": list(train.shape), "test_shape": list(test.shape), "data_s": data_s,
                 "cache": str(path) if path else None},
        "steps": cfg["steps"], "train_wall_s": train_s, "boundary": boundary, "device": device,
        "seeds": seeds, "cost_per_seed_s": cost_per_seed,
    }
    result = Result(slug=SLUG, scale=scale, config=config, metrics=metrics, claims=claims)
    result.add_figure("error_vs_flops", fig_error_vs_flops(runs, seeds, arms, metrics["persistence_rel_l2"]),
                      "test one-step rel-L2 vs GFLOPs per forward window (B = 1, context frames) for every "
                      "tokenization; bars: std over seeds, dots: seeds; dotted: persistence")
    # refined-patch maps on three test frames: physical vs random selection (selection needs no training)
    fr = torch.from_numpy(test[: min(3, test.shape[0]), ctx - 1, :, :, :1]).permute(0, 3, 1, 2)
    z = (fr - fr.mean((1, 2, 3), keepdim=True)) / fr.std((1, 2, 3), keepdim=True).clamp_min(1e-6)
    n2 = (cfg["grid"] // cfg["patch"]) ** 2
    maps = {}
    for name, idx in ((f"MeshTok (physical, {boundary} padding)",
                       select_patches(patch_scores(z, cfg["patch"], periodic=cfg["periodic"]), k)),
                      ("Random-refine", select_patches(torch.zeros(z.shape[0], n2), k, "random",
                                                       torch.Generator().manual_seed(0)))):
        maps[name] = torch.zeros(z.shape[0], n2, dtype=torch.bool).scatter_(1, idx, True).numpy()
    result.add_figure("refinement_maps", fig_refinement_maps(fr[:, 0].numpy(), maps, cfg["patch"]),
                      f"refined patches (outlined, K = {k} of {n2}) over the Burgers solution u of test frames: the "
                      "physical indicator follows the shocks; random refinement does not")
    mt = table["meshtok"]
    where = "single thread, 2 parallel jobs" if device == "cpu" else device
    result.notes = (f"data {data_s:.0f} s ({train.shape[0]} + {test.shape[0]} trajectories), training+eval "
                    f"{train_s:.0f} s for {len(jobs)} jobs of {cfg['steps']} steps; MeshTok "
                    f"{mt['s_per_step'] * 1e3:.0f} ms/step, {mt['train_s_per_arm']:.0f} s per arm ({where}); "
                    f"indicator padding {boundary}; one more seed of every arm ~{cost_per_seed:.0f} s.")
    return result
