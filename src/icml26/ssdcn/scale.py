"""Paper-scale path (spec 7): SSDCN on the user's real cubes (CAVE / Chikusei / Pavia `.mat` files), x4 and x8,
on a GPU, multi-GPU by torch DDP under torchrun (`icml26.common.distributed`).

    torchrun --nproc_per_node 4 -m icml26 run ssdcn --scale paper --set train_dir=/data/cave/train \
        --set test_dir=/data/cave/test

Each rank draws its own random HR patches (seed + rank) from the training cubes, degrades them with the same
bicubic kernel as the test inputs, and DDP averages the gradients, so the ranks keep identical weights. Rank 0
evaluates the test cubes (cropped to a multiple of the scale) and saves the checkpoint. This module takes the
config as an argument and never imports experiment.py.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from icml26.common import distributed as D
from icml26.common.validation import check_choice, check_float, check_int, check_seed, require_keys
from icml26.results import Result
from icml26.ssdcn.data import degrade, load_mat
from icml26.ssdcn.losses import PyramidJointLoss
from icml26.ssdcn.metrics import all_metrics
from icml26.ssdcn.ssdcn import SSDCN
from icml26.ssdcn.train import warmup_cosine_lambda

__all__ = [
    "PAPER_CONFIG",
    "PAPER_CONFIG_HELP",
    "load_cubes",
    "run_paper",
    "sample_patches",
    "train_paper",
    "validate_paper_config",
]

PAPER_CONFIG: dict[str, Any] = {
    "train_dir": "", "test_dir": "", "mat_key": "", "scale_factors": [4, 8], "patch": 128, "batch_size": 8,
    "steps": 200_000, "paper_lr": 2e-4, "paper_weight_decay": 1e-4, "paper_warmup_frac": 0.02, "dim": 64,
    "paper_blocks_per_level": 4, "paper_k_spatial": 64, "paper_k_spectral": 16, "paper_rank_spectral": 16,
    "paper_rank_spatial": 8, "paper_sam_weight": 0.1, "paper_level_weight": 1.0, "paper_seed": 0, "device": "auto",
    "out_dir": "runs/ssdcn/paper", "log_every": 1000,
}
PAPER_CONFIG_HELP: dict[str, str] = {
    "train_dir": "folder of training .mat cubes (H, W, C), provided by the user",
    "test_dir": "folder of test .mat cubes", "mat_key": "variable name in the .mat files ('' = the only 3-D array)",
    "scale_factors": "SR factors to train, one model each (powers of 2)", "patch": "HR training patch side, px",
    "steps": "optimizer steps per model", "paper_lr": "AdamW peak lr", "paper_weight_decay": "AdamW weight decay",
    "paper_warmup_frac": "linear warm-up fraction", "dim": "SSDCN width",
    "paper_blocks_per_level": "SSDCBs per level", "paper_k_spatial": "K_s", "paper_k_spectral": "K_c",
    "paper_rank_spectral": "FRRB r_c", "paper_rank_spatial": "FRRB r_h = r_w", "paper_sam_weight": "SAM weight",
    "paper_level_weight": "intermediate-level L1 weight", "paper_seed": "seed (each rank adds its rank for patches)",
    "device": "auto, cpu or cuda", "out_dir": "checkpoint folder ('' = do not save)",
    "log_every": "steps between rank-0 log lines",
}


def validate_paper_config(config: dict[str, Any]) -> None:
    """Raise ValueError/TypeError naming the first bad key of a paper-scale config."""
    require_keys(config, PAPER_CONFIG)
    for key in ("train_dir", "test_dir", "mat_key", "out_dir"):
        if not isinstance(config[key], str):
            raise TypeError(f"{key} must be a string, got {type(config[key]).__name__}")
    sfs = config["scale_factors"]
    if not isinstance(sfs, list) or not sfs:
        raise ValueError(f"scale_factors must be a non-empty list, got {sfs!r}")
    for i, s in enumerate(sfs):
        s = check_int(s, f"scale_factors[{i}]", min=2)
        if s & (s - 1):
            raise ValueError(f"scale_factors[{i}] must be a power of 2, got {s}")
        if config["patch"] % s or config["patch"] // s < config["paper_rank_spatial"]:
            raise ValueError(f"patch ({config['patch']}) must be divisible by {s} with patch / {s} >= "
                             f"paper_rank_spatial ({config['paper_rank_spatial']})")
    for key in ("patch", "batch_size", "steps", "dim", "paper_blocks_per_level", "paper_k_spatial",
                "paper_k_spectral", "paper_rank_spectral", "paper_rank_spatial", "log_every"):
        check_int(config[key], key, min=1)
    check_seed(config["paper_seed"], "paper_seed")
    check_float(config["paper_lr"], "paper_lr", min=0.0, min_open=True)
    check_float(config["paper_weight_decay"], "paper_weight_decay", min=0.0)
    check_float(config["paper_warmup_frac"], "paper_warmup_frac", min=0.0, max=1.0, max_open=True)
    check_float(config["paper_sam_weight"], "paper_sam_weight", min=0.0)
    check_float(config["paper_level_weight"], "paper_level_weight", min=0.0)
    check_choice(config["device"], "device", ("auto", "cpu", "cuda"))


def load_cubes(folder: str, key: str = "") -> list[torch.Tensor]:
    """Every `*.mat` cube of `folder` (sorted by name) as (C, H, W) tensors in [0, 1]."""
    if not folder or not Path(folder).is_dir():
        raise ValueError(f"data folder {folder!r} does not exist: set train_dir/test_dir to your .mat cubes "
                         "(CAVE / Chikusei / Pavia, not downloadable at run time)")
    files = sorted(Path(folder).glob("*.mat"))
    if not files:
        raise ValueError(f"no .mat files in {folder!r}")
    cubes = [load_mat(f, key or None) for f in files]
    if len({c.shape[0] for c in cubes}) != 1:
        raise ValueError(f"cubes in {folder!r} have different band counts: {sorted({c.shape[0] for c in cubes})}")
    return cubes


def sample_patches(cubes: list[torch.Tensor], patch: int, n: int, gen: torch.Generator) -> torch.Tensor:
    """n random patch x patch crops (random flips/rot90) of randomly chosen cubes: (n, C, patch, patch)."""
    out = []
    for _ in range(n):
        c = cubes[int(torch.randint(len(cubes), (1,), generator=gen))]
        if min(c.shape[-2:]) < patch:
            raise ValueError(f"cube {tuple(c.shape)} is smaller than patch={patch}")
        y = int(torch.randint(c.shape[1] - patch + 1, (1,), generator=gen))
        x = int(torch.randint(c.shape[2] - patch + 1, (1,), generator=gen))
        p = c[:, y:y + patch, x:x + patch]
        k = int(torch.randint(4, (1,), generator=gen))
        p = torch.rot90(p, k, dims=(1, 2))
        if int(torch.randint(2, (1,), generator=gen)):
            p = p.flip(2)
        out.append(p)
    return torch.stack(out)


def train_paper(config: dict[str, Any], cubes: list[torch.Tensor], scale_factor: int, env: D.DistEnv,
                model: SSDCN | None = None) -> tuple[SSDCN, list[float]]:
    """Train SSDCN (DDP when env is distributed) on random patches of `cubes`; returns (model, rank-mean losses)."""
    bands = cubes[0].shape[0]
    torch.manual_seed(config["paper_seed"])  # identical init on every rank (DDP also broadcasts it)
    if model is None:
        model = SSDCN(bands, scale_factor, config["dim"], config["paper_blocks_per_level"], config["paper_k_spatial"],
                      config["paper_k_spectral"], rank_spectral=config["paper_rank_spectral"],
                      rank_spatial=config["paper_rank_spatial"])
    model = model.to(env.device)
    ddp = D.wrap_ddp(model, env)
    weights = [config["paper_level_weight"]] * (model.levels - 1)
    loss_fn = PyramidJointLoss(weights=weights, sam_weight=config["paper_sam_weight"])
    opt = torch.optim.AdamW(model.parameters(), lr=config["paper_lr"], weight_decay=config["paper_weight_decay"])
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine_lambda(config["steps"], config["paper_warmup_frac"]))
    gen = torch.Generator().manual_seed(config["paper_seed"] * 1000 + env.rank)
    losses = []
    model.train()
    for step in range(config["steps"]):
        hr = sample_patches(cubes, config["patch"], config["batch_size"], gen)
        lr = degrade(hr, scale_factor)
        _, outs = ddp(lr.to(env.device))
        loss = loss_fn(outs, hr.to(env.device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(D.mean_reduce(float(loss.detach()))))
        if (step + 1) % config["log_every"] == 0:
            D.log(env, f"x{scale_factor} step {step + 1}/{config['steps']} loss {losses[-1]:.5f}")
    model.eval()
    return model, losses


@torch.no_grad()
def evaluate_cubes(model: SSDCN, cubes: list[torch.Tensor], scale_factor: int, device) -> dict[str, float]:
    """Mean metrics over full test cubes (each cropped to a multiple of the scale)."""
    rows = []
    for c in cubes:
        h, w = (c.shape[1] // scale_factor) * scale_factor, (c.shape[2] // scale_factor) * scale_factor
        hr = c[None, :, :h, :w]
        sr = model(degrade(hr, scale_factor).to(device))[0].clamp(0, 1).cpu()
        rows.append(all_metrics(sr, hr, scale_factor))
    return {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}


def run_paper(config: dict[str, Any]) -> Result:
    """Train and evaluate SSDCN for each scale factor on the user's cubes; rank 0 returns the Result."""
    validate_paper_config(config)
    t0 = time.perf_counter()
    device = None if config["device"] == "auto" else config["device"]
    env = D.init_distributed(device=device)
    train = load_cubes(config["train_dir"], config["mat_key"])
    test = load_cubes(config["test_dir"], config["mat_key"])
    metrics: dict[str, Any] = {"world_size": env.world_size}
    for s in config["scale_factors"]:
        model, losses = train_paper(config, train, int(s), env)
        metrics[f"x{s}"] = {"final_loss": float(np.mean(losses[-50:])), "params": model.count_params()}
        if env.is_main:
            metrics[f"x{s}"].update(evaluate_cubes(model, test, int(s), env.device))
            if config["out_dir"]:
                Path(config["out_dir"]).mkdir(parents=True, exist_ok=True)
                torch.save(model.state_dict(), Path(config["out_dir"]) / f"ssdcn_x{s}.pt")
        D.barrier()
    result = Result(slug="ssdcn", scale="paper", config=config, metrics=metrics, claims=[])
    result.runtime_s = time.perf_counter() - t0
    result.notes = ("paper-scale metrics on the user's cubes; no claim checks (the paper's own numbers are not "
                    "available: abstract only)")
    return result
