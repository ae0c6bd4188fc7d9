"""Paper-scale MeshTok (spec section 7): 128 x 128 PDEBench / The Well / PDENNeval trajectories on GPUs under
`torchrun` DDP, FlexAttention block-causal masks, bf16 autocast.

    # one node, 8 GPUs; data converted to HDF5 files with a `data` dataset (N, T, H, W, C) (official layout):
    torchrun --standalone --nproc_per_node 8 -m icml26.meshtok.scale configs/paper/meshtok/gray_scott.json
    # or through the CLI (one process, or under torchrun the same way):
    icml26 run meshtok --scale paper --set train_file=/data/gs_train.h5 --set test_file=/data/gs_test.h5

Official defaults: patch 16 at 128^2 (n = 8), refine_ratio 0.25 (112 tokens/frame), D 512, 8 layers, 8 heads, SwiGLU
1280, RMSNorm + QK-norm, context 10 frames of 20-frame windows, AdamW 1e-4 (wd 1e-4) cosine with 10 % warmup, clip
1.0, batch 8 per step, 80k steps, input noise 0.01. The residual head is kept off (`residual=False`, official).
Arms: MeshTok, Random-refine, Uniform-coarse, Uniform-fine, trained one after the other (each on every rank).
The claims are computed by the same `claims.make_claims` as the CPU reproduction.

With `train_file = ""` the run falls back to simulated Burgers data at the configured grid, so the code path can be
exercised anywhere; the result then says so and is not a reproduction of the paper's numbers.
This module never imports experiment.py: it takes the config as an argument.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import numpy as np
import torch

from icml26.common import distributed as D
from icml26.common.validation import check_bool, check_choice, check_float, check_int, check_seed, require_keys
from icml26.results import Result

__all__ = ["PAPER_CONFIG", "validate_paper_config", "run_paper", "train_distributed"]

PAPER_CONFIG: dict[str, Any] = {
    "seed": 0, "n_seeds": 1, "workers": 1, "arms": ["meshtok", "random", "coarse", "fine"],
    "train_file": "", "test_file": "", "h5_key": "data", "n_train": 512, "n_test": 64,
    "grid": 128, "patch": 16, "refine_ratio": 0.25, "n_frames": 20, "nu": 2e-3, "data_seed": 0, "cache": True,
    "dim": 512, "depth": 8, "heads": 8, "ffn": 1280, "mlp": "swiglu", "dec_width": 32, "max_time_len": 20,
    "residual": False, "attn_impl": "flex",
    "lr": 1e-4, "weight_decay": 1e-4, "warmup_frac": 0.1, "grad_clip": 1.0, "input_noise": 0.01,
    "batch_size": 8, "context": 10, "eval_stride": 5, "eval_batch": 8, "steps": 80000, "rollout_steps": 10, "rollout_n": 64,
    "dtype": "bfloat16", "device": "cuda", "out_dir": "runs/meshtok/paper/checkpoints",
}


def validate_paper_config(config: dict) -> None:
    """ValueError/TypeError naming the first bad key of a paper-scale config."""
    require_keys(config, PAPER_CONFIG, "config")
    c = config
    check_seed(c["seed"], "seed")
    check_int(c["n_seeds"], "n_seeds", min=1)
    arms = c["arms"]
    if isinstance(arms, str) or not isinstance(arms, (list, tuple)) or not arms or "meshtok" not in arms:
        raise ValueError(f"arms must be a list including 'meshtok', got {arms!r}")
    for i, a in enumerate(arms):
        check_choice(a, f"arms[{i}]", ("meshtok", "random", "coarse", "fine"))
    for key in ("train_file", "test_file", "h5_key", "out_dir"):
        if not isinstance(c[key], str):
            raise TypeError(f"{key} must be a string, got {type(c[key]).__name__}")
    if bool(c["train_file"]) != bool(c["test_file"]):
        raise ValueError("train_file and test_file must be given together (or both '' for simulated data)")
    for key, lo in (("n_train", 1), ("n_test", 1), ("grid", 4), ("patch", 2), ("n_frames", 2), ("dim", 2),
                    ("depth", 1), ("heads", 1), ("ffn", 1), ("dec_width", 1), ("max_time_len", 1),
                    ("batch_size", 1), ("context", 1), ("eval_stride", 1), ("eval_batch", 1), ("steps", 1),
                    ("rollout_steps", 0), ("rollout_n", 1), ("workers", 0)):
        check_int(c[key], key, min=lo)
    from icml26.meshtok.meshtok import refined_count

    refined_count(c["grid"], c["patch"], c["refine_ratio"])
    if c["dim"] % c["heads"] or c["dim"] % 2:
        raise ValueError(f"dim={c['dim']} must be even and divisible by heads={c['heads']}")
    if c["context"] + 1 > c["n_frames"] or c["context"] > c["max_time_len"]:
        raise ValueError(f"context={c['context']} needs n_frames > context and max_time_len >= context")
    for key in ("lr", "grad_clip", "nu"):
        check_float(c[key], key, min=0.0, min_open=True)
    check_float(c["weight_decay"], "weight_decay", min=0.0)
    check_float(c["input_noise"], "input_noise", min=0.0)
    check_float(c["warmup_frac"], "warmup_frac", min=0.0, max=1.0, min_open=True, max_open=True)
    check_seed(c["data_seed"], "data_seed")
    check_bool(c["cache"], "cache")
    check_bool(c["residual"], "residual")
    check_choice(c["mlp"], "mlp", ("gelu", "swiglu"))
    check_choice(c["attn_impl"], "attn_impl", ("sdpa", "math", "flex"))
    check_choice(c["dtype"], "dtype", ("float32", "bfloat16"))
    check_choice(c["device"], "device", ("cpu", "cuda"))
    if "scale" in c:
        check_choice(c["scale"], "scale", ("smoke", "small", "paper"))


def _load(cfg: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, str]:
    from icml26.meshtok.data import burgers2d, read_hdf5

    if cfg["train_file"]:
        return read_hdf5(cfg["train_file"], cfg["h5_key"]), read_hdf5(cfg["test_file"], cfg["h5_key"]), "hdf5"
    kw = {"grid": cfg["grid"], "n_frames": cfg["n_frames"], "nu": cfg["nu"]}
    return (burgers2d(cfg["n_train"], seed=cfg["data_seed"], **kw),
            burgers2d(cfg["n_test"], seed=cfg["data_seed"] + 1, **kw), "simulated Burgers (fallback)")


def train_distributed(cfg: dict[str, Any], arm: str, seed: int, train: np.ndarray, test: np.ndarray | None,
                      env: D.DistEnv, return_model: bool = False) -> dict[str, Any]:
    """`train.train_arm` on this rank's device under DDP, with bf16 autocast on CUDA (FlexAttention on GPU)."""
    from icml26.meshtok.train import train_arm

    cuda = env.device.type == "cuda"
    run_cfg = dict(cfg)
    if not cuda and run_cfg["attn_impl"] == "flex":
        run_cfg["attn_impl"] = "sdpa"  # FlexAttention has no CPU backward
    ctx = torch.autocast("cuda", dtype=torch.bfloat16) if cuda and cfg["dtype"] == "bfloat16" else _Null()
    with ctx:
        return train_arm(run_cfg, arm, seed, train, test, env=env, return_model=return_model, device=env.device,
                         progress=env.is_main)


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def run_paper(config: dict) -> Result:
    """Train and evaluate every arm at paper scale (single process or under torchrun); rank 0 returns the Result."""
    validate_paper_config(config)
    from icml26.meshtok.claims import make_claims, shock_fraction

    cfg = dict(config)
    env = D.init_distributed(device=None if cfg["device"] == "cuda" and torch.cuda.is_available() else "cpu")
    t0 = time.perf_counter()
    train, test, source = _load(cfg)
    if train.shape[2] != cfg["grid"] or train.shape[3] != cfg["grid"]:
        raise ValueError(f"data frames are {train.shape[2]} x {train.shape[3]}, config grid is {cfg['grid']}")
    seeds = [cfg["seed"] + i for i in range(cfg["n_seeds"])]
    runs = []
    for s in seeds:
        for a in cfg["arms"]:
            r = train_distributed(cfg, a, s, train, test, env)
            runs.append(r)
            D.log(env, f"{a} seed {s}: rel-L2 {r.get('rel_l2', float('nan')):.4f} in {r['train_s']:.0f} s")
    claims = make_claims(runs, seeds, list(cfg["arms"]), {"shock_patch_fraction": shock_fraction(test, cfg["patch"])}
                         ) if env.is_main else []
    result = Result(slug="meshtok", scale="paper", config=config, claims=claims,
                    metrics={"runs": [{k: v for k, v in r.items() if not k.endswith("_windows")} for r in runs],
                             "data_source": source, "world_size": env.world_size},
                    notes=("" if source == "hdf5" else "simulated Burgers data (no train_file given): not a "
                           "reproduction of the paper's numbers"))
    result.runtime_s = time.perf_counter() - t0
    D.shutdown()
    return result


def main(argv: list[str] | None = None) -> None:  # pragma: no cover - exercised through torchrun on GPUs
    argv = sys.argv[1:] if argv is None else argv
    cfg = dict(PAPER_CONFIG)
    if argv:
        with open(argv[0]) as f:
            cfg.update(json.load(f))
    cfg["scale"] = "paper"
    res = run_paper(cfg)
    if res.claims:
        from icml26.results import save_result

        save_result(res, "runs/meshtok/paper")


if __name__ == "__main__":  # pragma: no cover
    main()
