"""SSDCN CPU reproduction: x4 SR on synthetic hyperspectral cubes (spec 6, amended by its review notes).

Data (generated once in this process, handed to the workers through a temporary file): train 256 HR cubes
64 x 64 x 31 (seed 1), validation 16 x 128 x 128 (seed 3), test 64 x 128 x 128 (seed 2, review note 7); LR =
antialiased bicubic x4. Models, trained as parallel single-thread processes with the same recipe (AdamW, 5 %
warm-up + cosine, batch 8, L1 + 0.1 SAM; SSDCN adds the level-1 L1 term): SSDCN (dim 40), its local-only ablation
(clustering and FRRB off, review note 3), SmallCNN, SmallTransformer; Bicubic.

Learning rate (review note 4): every learned model is trained at each lr of `lr_grid` on the first seed, the lr with
the best *validation* PSNR is kept for that model, and the other seeds are trained at it (the first seed's run at
the chosen lr is reused). A one-value grid skips the sweep. `small` fits the 5-minute budget with one seed and no
sweep (its model comparisons are inconclusive: one seed cannot bound a training spread); `medium` is the same
experiment with the sweep and 4 seeds (~23 min on 2 cores, on CUDA when present). Claims in
`icml26.ssdcn.claims`. `--scale paper` runs `icml26.ssdcn.scale` on the user's `.mat` cubes.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

import numpy as np
import torch

from icml26.common import seed_everything
from icml26.common.parallel import default_workers, run_graph
from icml26.common.plotting import new_figure
from icml26.common.validation import check_choice, check_float, check_int, check_seed, require_keys
from icml26.results import Result
from icml26.ssdcn import claims as C
from icml26.ssdcn.baselines import Bicubic, SmallCNN, SmallTransformer, TransformerBlock, attention
from icml26.ssdcn.data import degrade, photo_hsi, synthetic_hsi
from icml26.ssdcn.losses import PyramidJointLoss
from icml26.ssdcn.scale import PAPER_CONFIG, PAPER_CONFIG_HELP, run_paper, validate_paper_config
from icml26.ssdcn.ssdcn import SSDCB, SSDCN
from icml26.ssdcn.train import evaluate, fit, predict

SLUG = "ssdcn"
MODELS = ("ssdcn", "ssdcn_local", "small_cnn", "small_transformer")

_SMALL: dict[str, Any] = {
    "seeds": [0], "bands": 31, "scale_factor": 4,
    "n_train": 256, "train_size": 64, "train_seed": 1, "n_val": 16, "val_seed": 3, "n_test": 64, "test_size": 128,
    "test_seed": 2, "n_photo": 8, "photo_seed": 4, "models": list(MODELS),
    "steps": 150, "batch_size": 8, "lr_grid": [1e-3], "weight_decay": 1e-4, "warmup_frac": 0.05, "sam_weight": 0.1,
    "level_weight": 1.0,
    "ssdcn_dim": 40, "blocks_per_level": 2, "k_spatial": 16, "k_spectral": 8, "iters": 1, "rank_spectral": 16,
    "rank_spatial": 8, "cnn_dim": 48, "cnn_blocks": 6, "tf_dim": 48, "tf_blocks": 4, "tf_heads": 4,
    "flops_lr_size": 32, "flop_sizes": [16, 32, 64, 128], "time_reps": 3, "workers": 0, "device": "cpu",
}
_SMOKE = {"n_train": 16, "train_size": 32, "n_val": 2, "n_test": 4, "test_size": 64, "n_photo": 1, "steps": 3,
          "batch_size": 2, "ssdcn_dim": 8, "blocks_per_level": 1, "k_spatial": 4, "k_spectral": 4,
          "rank_spectral": 4, "rank_spatial": 4, "cnn_dim": 8, "cnn_blocks": 1, "tf_dim": 8, "tf_blocks": 1,
          "tf_heads": 2, "flops_lr_size": 16, "time_reps": 1, "workers": 1}
CONFIGS: dict[str, dict[str, Any]] = {
    "smoke": {**_SMALL, **_SMOKE},
    "small": dict(_SMALL),
    # the decisive version of small (issue 31): the lr sweep of review note 4 on the validation split and 3 seeds
    "medium": {**_SMALL, "seeds": [0, 1, 2, 3], "lr_grid": [5e-4, 1e-3, 2e-3], "device": "auto"},
    "paper": dict(PAPER_CONFIG),
}

CONFIG_HELP: dict[str, str] = {
    "seeds": "training seeds (model init and batch order); one run per model and seed",
    "bands": "spectral bands C of the synthetic cubes (400-700 nm)", "scale_factor": "SR factor (power of 2)",
    "n_train": "training HR cubes", "train_size": "training HR side, px", "train_seed": "generator seed of train",
    "n_val": "validation cubes (test_size side; reported, for tuning)", "val_seed": "generator seed of validation",
    "n_test": "test cubes", "test_size": "validation/test HR side, px", "test_seed": "generator seed of test",
    "n_photo": "photo-derived cubes (scikit-learn sample photos as abundances; domain shift, reported)",
    "photo_seed": "seed of the photo crops",
    "models": f"learned models to train, a subset of {list(MODELS)} containing 'ssdcn'",
    "steps": "optimizer steps per model (same for all)", "batch_size": "cubes per step",
    "lr_grid": "AdamW peak learning rates tried for every model on the first seed; each model keeps the one with the "
               "best validation PSNR (one value: no sweep)", "weight_decay": "AdamW weight decay",
    "warmup_frac": "fraction of steps of linear warm-up before cosine decay",
    "sam_weight": "mu: weight of the SAM term (radians), all models",
    "level_weight": "lambda: weight of SSDCN's intermediate-level L1 term",
    "ssdcn_dim": "SSDCN feature width", "blocks_per_level": "SSDCBs per pyramid level",
    "k_spatial": "spatial clusters K_s (perfect square)", "k_spectral": "channel clusters K_c",
    "iters": "soft k-means refinements", "rank_spectral": "FRRB r_c", "rank_spatial": "FRRB r_h = r_w",
    "cnn_dim": "SmallCNN width", "cnn_blocks": "SmallCNN residual blocks", "tf_dim": "SmallTransformer width",
    "tf_blocks": "SmallTransformer blocks", "tf_heads": "SmallTransformer heads",
    "flops_lr_size": "LR side of the FLOPs/params/time comparison input (1 x bands x s x s)",
    "flop_sizes": "feature-map sides of the per-block FLOPs curves (must include 32, 64, 128)",
    "time_reps": "forwards timed per model", "workers": "parallel single-thread processes (0 = one per CPU)",
    "device": "where the models train: cpu, cuda, or auto (cuda when available)",
}
CONFIG_HELP.update({k: v for k, v in PAPER_CONFIG_HELP.items() if k not in CONFIG_HELP})

EXPECTED_RUNTIME_S = {"smoke": 15, "small": 270, "medium": 1400, "paper": 24 * 3600}


def validate_config(config: dict[str, Any]) -> None:
    """Raise ValueError/TypeError naming the first bad key of `config` (the CLI calls this before compute)."""
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict, got {type(config).__name__}")
    if config.get("scale", "small") == "paper":
        validate_paper_config(config)
        return
    require_keys(config, _SMALL)
    seeds = config["seeds"]
    if not isinstance(seeds, list) or not seeds:
        raise ValueError(f"seeds must be a non-empty list of distinct seeds, got {seeds!r}")
    if len({check_seed(s, f"seeds[{i}]") for i, s in enumerate(seeds)}) != len(seeds):
        raise ValueError(f"seeds must be a non-empty list of distinct seeds, got {seeds!r}")
    for key in ("bands", "n_train", "n_val", "n_test", "n_photo", "steps", "batch_size", "ssdcn_dim",
                "blocks_per_level", "k_spatial", "k_spectral", "iters", "rank_spectral", "rank_spatial", "cnn_dim",
                "cnn_blocks", "tf_dim", "tf_blocks", "tf_heads", "time_reps"):
        check_int(config[key], key, min=1)
    for key in ("train_seed", "val_seed", "test_seed", "photo_seed"):
        check_seed(config[key], key)
    check_int(config["workers"], "workers", min=0)
    sf = check_int(config["scale_factor"], "scale_factor", min=2)
    if sf & (sf - 1):
        raise ValueError(f"scale_factor must be a power of 2, got {sf}")
    for key in ("train_size", "test_size"):
        size = check_int(config[key], key, min=1)
        if size % sf:
            raise ValueError(f"{key} ({size}) must be divisible by scale_factor ({sf})")
        if size // sf < config["rank_spatial"]:
            raise ValueError(f"{key} / scale_factor = {size // sf} must be >= rank_spatial ({config['rank_spatial']})")
    if config["test_size"] < 11:
        raise ValueError(f"test_size must be >= 11 (SSIM window), got {config['test_size']}")
    if int(config["k_spatial"]) != int(np.sqrt(config["k_spatial"])) ** 2:
        raise ValueError(f"k_spatial must be a perfect square, got {config['k_spatial']}")
    if config["k_spectral"] > config["ssdcn_dim"] or config["rank_spectral"] > config["ssdcn_dim"]:
        raise ValueError("k_spectral and rank_spectral must be <= ssdcn_dim")
    if config["tf_dim"] % config["tf_heads"]:
        raise ValueError(f"tf_dim ({config['tf_dim']}) must be divisible by tf_heads ({config['tf_heads']})")
    models = config["models"]
    if not isinstance(models, list) or len(set(models)) != len(models) or "ssdcn" not in models:
        raise ValueError(f"models must be a list of distinct names from {list(MODELS)} containing 'ssdcn', "
                         f"got {models!r}")
    for m in models:
        check_choice(m, "models", MODELS)
    grid = config["lr_grid"]
    if not isinstance(grid, list) or not grid:
        raise ValueError(f"lr_grid must be a non-empty list of learning rates, got {grid!r}")
    for i, v in enumerate(grid):
        check_float(v, f"lr_grid[{i}]", min=0.0, min_open=True)
    if len(set(grid)) != len(grid):
        raise ValueError(f"lr_grid must hold distinct learning rates, got {grid!r}")
    check_choice(config["device"], "device", ("cpu", "cuda", "auto"))
    if config["device"] == "cuda" and not torch.cuda.is_available():
        raise ValueError("device is 'cuda' but torch sees no CUDA device (use 'auto' or 'cpu')")
    check_float(config["weight_decay"], "weight_decay", min=0.0)
    check_float(config["warmup_frac"], "warmup_frac", min=0.0, max=1.0, max_open=True)
    check_float(config["sam_weight"], "sam_weight", min=0.0)
    check_float(config["level_weight"], "level_weight", min=0.0)
    check_int(config["flops_lr_size"], "flops_lr_size", min=config["rank_spatial"])
    fs = config["flop_sizes"]
    if not isinstance(fs, list) or not {32, 64, 128} <= {check_int(s, "flop_sizes", min=1) for s in fs}:
        raise ValueError(f"flop_sizes must be a list of sides including 32, 64 and 128, got {fs!r}")


_INT_KEYS = ("bands", "scale_factor", "n_train", "train_size", "n_val", "n_test", "test_size", "n_photo", "steps",
             "batch_size", "ssdcn_dim", "blocks_per_level", "k_spatial", "k_spectral", "iters", "rank_spectral",
             "rank_spatial", "cnn_dim", "cnn_blocks", "tf_dim", "tf_blocks", "tf_heads", "flops_lr_size", "time_reps",
             "workers", "train_seed", "val_seed", "test_seed", "photo_seed")


def normalized(config: dict[str, Any]) -> dict[str, Any]:
    """A validated copy of `config` with integral floats read as ints (``steps=160.0`` means 160, as
    `check_int` reads it everywhere else) and learning rates as floats."""
    validate_config(config)
    cfg = dict(config)
    for k in _INT_KEYS:
        cfg[k] = check_int(cfg[k], k)
    cfg["seeds"] = [check_seed(v, f"seeds[{i}]") for i, v in enumerate(cfg["seeds"])]
    cfg["flop_sizes"] = [check_int(v, "flop_sizes") for v in cfg["flop_sizes"]]
    cfg["lr_grid"] = [float(v) for v in cfg["lr_grid"]]
    return cfg


def resolve_device(device: str) -> str:
    """"auto" -> "cuda" when torch sees a GPU, else "cpu"."""
    check_choice(device, "device", ("cpu", "cuda", "auto"))
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def build_model(name: str, cfg: dict[str, Any]) -> torch.nn.Module:
    """One of MODELS (or "bicubic") with the config's sizes."""
    c, s = cfg["bands"], cfg["scale_factor"]
    if name in ("ssdcn", "ssdcn_local"):
        full = name == "ssdcn"
        return SSDCN(c, s, cfg["ssdcn_dim"], cfg["blocks_per_level"], cfg["k_spatial"], cfg["k_spectral"],
                     use_frrb=full, use_global=full, iters=cfg["iters"], rank_spectral=cfg["rank_spectral"],
                     rank_spatial=cfg["rank_spatial"])
    if name == "small_cnn":
        return SmallCNN(c, s, cfg["cnn_dim"], cfg["cnn_blocks"])
    if name == "small_transformer":
        return SmallTransformer(c, s, cfg["tf_dim"], cfg["tf_blocks"], cfg["tf_heads"])
    if name == "bicubic":
        return Bicubic(c, s)
    raise ValueError(f"model must be one of {list(MODELS) + ['bicubic']}, got {name!r}")


def _forward_time(model: torch.nn.Module, shape: tuple[int, ...], reps: int) -> float:
    x = torch.rand(shape, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        model(x)
        t0 = time.process_time()
        for _ in range(reps):
            model(x)
    return (time.process_time() - t0) / reps


def train_model(name: str, seed: int, lr: float, cfg: dict[str, Any], data_path: str,
                splits: tuple[str, ...] = ("val", "test", "photo"), save: str | None = None,
                reuse: dict[str, Any] | None = None) -> dict[str, Any]:
    """Train (or, with `reuse`, reload) one model at learning rate `lr` and evaluate it on `splits` (module-level,
    so worker processes can run it). `save` writes the trained weights; `reuse` = {"path", "train_time_s",
    "final_loss"} of an earlier run with the same model, seed and lr (the sweep's)."""
    data = torch.load(data_path)
    seed_everything(seed)
    model = build_model(name, cfg)
    device = resolve_device(cfg["device"])
    if reuse is not None:
        model.load_state_dict(torch.load(reuse["path"]))
        train_time, final_loss = reuse["train_time_s"], reuse["final_loss"]
    else:
        model.to(device)
        weights = [cfg["level_weight"]] * (cfg["scale_factor"].bit_length() - 2) if name.startswith("ssdcn") else []
        loss = PyramidJointLoss(weights=weights, sam_weight=cfg["sam_weight"])
        # baselines return one output: their loss is L1 + mu SAM; SSDCN adds lambda * L1 at the coarser levels
        hist = fit(model, data["train_lr"], data["train_hr"], steps=cfg["steps"], batch_size=cfg["batch_size"],
                   lr_rate=lr, weight_decay=cfg["weight_decay"], warmup_frac=cfg["warmup_frac"], seed=seed,
                   loss=loss, progress=f"{name} seed {seed} lr {lr:g}")
        train_time, final_loss = hist["time_s"], float(np.mean(hist["loss"][-20:]))
        if save is not None:
            torch.save({k: v.cpu() for k, v in model.state_dict().items()}, save)
    model.to(device)
    t0 = time.perf_counter()
    out: dict[str, Any] = {"model": name, "seed": seed, "lr": lr, "train_time_s": train_time,
                           "final_loss": final_loss}
    for split in splits:
        out[split] = evaluate(model, data[f"{split}_lr"], data[f"{split}_hr"], full=split == "test")
    out["eval_s"] = time.perf_counter() - t0
    if "test" in splits:
        model.cpu()
        lr_shape = (1, cfg["bands"], cfg["flops_lr_size"], cfg["flops_lr_size"])
        out.update(params=model.count_params(), gflops=model.flops(lr_shape) / 1e9,
                   forward_cpu_s=_forward_time(model, lr_shape, cfg["time_reps"]))
        if name == "ssdcn":
            out["example_sr"] = predict(model, data["test_lr"][:1])[0].numpy()
    return out


_COST = ("ssdcn", "small_transformer", "ssdcn_local", "small_cnn")  # CPU-s per step, costliest first


def train_all(cfg: dict[str, Any], data_path: str, ckpt_dir: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every model at every seed, after the per-model lr sweep on the first seed (see the module docstring).

    Returns (final runs, sweep) where sweep[model] = {"val_psnr": {lr: mean validation PSNR}, "lr": chosen lr}.
    """
    seeds, grid, models = cfg["seeds"], cfg["lr_grid"], cfg["models"]
    jobs: dict[Any, Any] = {}
    deps: dict[Any, list[Any]] = {}
    sweeping = len(grid) > 1
    common = {"cfg": cfg, "data_path": data_path}
    for m in models:
        if sweeping:
            for i, lr in enumerate(grid):
                jobs[("sweep", m, lr)] = {"name": m, "seed": seeds[0], "lr": lr, "splits": ("val",),
                                          "save": os.path.join(ckpt_dir, f"{m}_{i}.pt"), **common}
        for s in seeds:
            key = ("final", m, s)
            if not sweeping:
                jobs[key] = {"name": m, "seed": s, "lr": grid[0], **common}
                continue
            deps[key] = [("sweep", m, lr) for lr in grid]

            def make(inputs, m=m, s=s):
                best = _best_lr(m, grid, inputs)
                if s != seeds[0]:
                    return {"name": m, "seed": s, "lr": best, **common}
                i = grid.index(best)
                run = inputs[("sweep", m, best)]
                return {"name": m, "seed": s, "lr": best, "reuse": {
                    "path": os.path.join(ckpt_dir, f"{m}_{i}.pt"), "train_time_s": run["train_time_s"],
                    "final_loss": run["final_loss"]}, **common}

            jobs[key] = make

    def priority(key):
        stage = 0 if key[0] == "sweep" else 1
        return (stage, _COST.index(key[1]))

    done = run_graph(train_model, jobs, deps, workers=cfg["workers"] or None, priority=priority,
                     desc="train models")
    sweep = {}
    for m in models:
        if sweeping:
            val = {lr: float(np.mean(done[("sweep", m, lr)]["val"]["psnr"])) for lr in grid}
            sweep[m] = {"val_psnr": val, "lr": _best_lr(m, grid, done)}
        else:
            sweep[m] = {"val_psnr": {}, "lr": grid[0]}
    runs = [done[("final", m, s)] for s in seeds for m in sorted(models, key=_COST.index)]
    return runs, sweep


def _best_lr(model: str, grid: list[float], results: dict[Any, Any]) -> float:
    """The lr of `grid` with the best mean validation PSNR of `model` (ties: the first)."""
    return max(grid, key=lambda lr: float(np.mean(results[("sweep", model, lr)]["val"]["psnr"])))


def _rgb(cube: np.ndarray) -> np.ndarray:
    c = cube.shape[0]
    idx = [round(0.83 * (c - 1)), round(0.5 * (c - 1)), round(0.17 * (c - 1))]  # ~650, 550, 450 nm
    return np.clip(np.moveaxis(cube[idx], 0, -1) / max(1e-6, float(cube[idx].max())), 0, 1)


def fig_reconstruction(lr: np.ndarray, bic: np.ndarray, sr: np.ndarray, hr: np.ndarray):
    fig, axes = new_figure(4, 2, width=2.8, height=2.9)
    band = hr.shape[0] // 2
    lr_up = np.kron(lr, np.ones((1, hr.shape[1] // lr.shape[1], hr.shape[2] // lr.shape[2])))
    for j, (title, cube) in enumerate([("LR (nearest)", lr_up), ("Bicubic", bic), ("SSDCN", sr),
                                       ("Ground truth", hr)]):
        axes[0, j].grid(False)
        axes[1, j].grid(False)
        axes[0, j].imshow(cube[band], cmap="gray", vmin=0, vmax=float(hr[band].max()))
        axes[0, j].set_title(f"{title}, band {band}")
        axes[1, j].imshow(_rgb(cube))
        axes[1, j].set_title(f"{title}, RGB composite")
        for a in axes[:, j]:
            a.set_xticks([])
            a.set_yticks([])
    return fig


def fig_flops(ssdcb: dict[int, int], tf: dict[int, int]):
    fig, ax = new_figure(width=5.5, height=4.0)
    s = sorted(ssdcb)
    ax.loglog([x * x for x in s], [ssdcb[x] / 1e9 for x in s], "o-", label="SSDCB (clustering)")
    ax.loglog([x * x for x in s], [tf[x] / 1e9 for x in s], "s-", label="transformer block (full attention)")
    ax.set_xlabel("pixels N = side^2")
    ax.set_ylabel("GFLOPs per block (batch 1)")
    ax.legend()
    ax.set_title("FLOPs vs image size")
    return fig


def _make_data(cfg: dict[str, Any]) -> dict[str, torch.Tensor]:
    sf, c = cfg["scale_factor"], cfg["bands"]
    out = {}
    for split, n, size, seed in (("train", cfg["n_train"], cfg["train_size"], cfg["train_seed"]),
                                 ("val", cfg["n_val"], cfg["test_size"], cfg["val_seed"]),
                                 ("test", cfg["n_test"], cfg["test_size"], cfg["test_seed"])):
        hr = synthetic_hsi(n, size, c, 6, seed)
        out[f"{split}_hr"], out[f"{split}_lr"] = hr, degrade(hr, sf)
    hr = photo_hsi(cfg["n_photo"], cfg["test_size"], c, cfg["photo_seed"])
    out["photo_hr"], out["photo_lr"] = hr, degrade(hr, sf)
    return out


def run(config: dict[str, Any]) -> Result:
    """Run the reproduction for `config` (one of CONFIGS, plus "scale"); see the module docstring."""
    validate_config(config)
    scale = config.get("scale", "small")
    if scale == "paper":
        return run_paper(config)
    t0 = time.perf_counter()
    cfg = normalized(config)
    seeds = cfg["seeds"]
    data = _make_data(cfg)
    t_train = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ssdcn_") as tmp:
        path = os.path.join(tmp, "data.pt")
        torch.save(data, path)
        runs, sweep = train_all(cfg, path, tmp)
    t_train = time.perf_counter() - t_train
    # seconds one more seed of every model costs (training + evaluation, spread over the workers): the hints'
    # unit cost
    n_workers = max(1, min(cfg["workers"] or default_workers(), len(cfg["models"])))
    cost_per_seed = float(sum(r["train_time_s"] + r["eval_s"] for r in runs) / len(seeds) / n_workers)
    bic = Bicubic(cfg["bands"], cfg["scale_factor"])
    bic_test = evaluate(bic, data["test_lr"], data["test_hr"])
    bic_val = evaluate(bic, data["val_lr"], data["val_hr"], full=False)
    bic_photo = evaluate(bic, data["photo_lr"], data["photo_hr"], full=False)

    def per_seed(model: str, metric: str, split: str = "test") -> list[list[float]]:
        if model == "bicubic":
            return [{"test": bic_test, "val": bic_val, "photo": bic_photo}[split][metric]] * len(seeds)
        return [next(r for r in runs if r["model"] == model and r["seed"] == s)[split][metric] for s in seeds]

    one = {r["model"]: r for r in runs if r["seed"] == seeds[0]}
    # -- complexity (C1)
    ssdcb = SSDCB(cfg["ssdcn_dim"], cfg["k_spatial"], cfg["k_spectral"], cfg["iters"])
    tblock = TransformerBlock(cfg["tf_dim"], cfg["tf_heads"])
    f_ssdcb = C.block_flops(ssdcb, cfg["ssdcn_dim"], cfg["flop_sizes"])
    f_tf = C.block_flops(tblock, cfg["tf_dim"], cfg["flop_sizes"])
    q = torch.empty(1, cfg["tf_heads"], 1024, cfg["tf_dim"] // cfg["tf_heads"], device="meta")
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        attention(q, q, q)
    attn_measured = int(counter.get_total_flops())
    claims = [C.claim_complexity(f_ssdcb, f_tf, attn_measured, C.attention_flops_analytic(1024, cfg["tf_dim"]))]
    table = {"bicubic": {"params": 0, "gflops": 0.0, **{k: float(np.mean(v)) for k, v in bic_test.items()},
                         "val_psnr": float(np.mean(bic_val["psnr"])), "photo_psnr": float(np.mean(bic_photo["psnr"]))}}
    for m in cfg["models"]:
        rs = [r for r in runs if r["model"] == m]
        table[m] = {"params": rs[0]["params"], "gflops": rs[0]["gflops"],
                    "forward_cpu_s": float(np.mean([r["forward_cpu_s"] for r in rs])),
                    "train_time_s": float(np.mean([r["train_time_s"] for r in rs])),
                    **{k: float(np.mean([np.mean(r["test"][k]) for r in rs])) for k in bic_test},
                    "val_psnr": float(np.mean([np.mean(r["val"]["psnr"]) for r in rs])),
                    "photo_psnr": float(np.mean([np.mean(r["photo"]["psnr"]) for r in rs])),
                    "psnr_per_seed": [float(np.mean(r["test"]["psnr"])) for r in rs],
                    "sam_per_seed": [float(np.mean(r["test"]["sam"])) for r in rs],
                    "lr": sweep[m]["lr"], "sweep_val_psnr": sweep[m]["val_psnr"]}
    ps = per_seed("ssdcn", "psnr")
    cost = {"cost_per_seed_s": cost_per_seed}
    claims.append(C.claim_learnability({m: per_seed(m, "psnr") for m in cfg["models"]}, per_seed("bicubic", "psnr"),
                                       **cost))
    if "small_transformer" in cfg["models"]:
        claims.append(C.claim_efficiency(ps, per_seed("small_transformer", "psnr"), per_seed("bicubic", "psnr"),
                                         table["ssdcn"]["gflops"], table["small_transformer"]["gflops"], **cost))
    claims.append(C.claim_vs_bicubic(ps, per_seed("bicubic", "psnr"), per_seed("ssdcn", "sam"),
                                     per_seed("bicubic", "sam"), **cost))
    if "small_cnn" in cfg["models"]:
        claims.append(C.claim_vs_cnn(ps, per_seed("small_cnn", "psnr"), **cost))
    if "ssdcn_local" in cfg["models"]:
        claims.append(C.claim_global_mixing(ps, per_seed("ssdcn_local", "psnr")))
    claims.append(C.claim_issue_quality(ps, per_seed("bicubic", "psnr"), per_seed("ssdcn", "sam"),
                                        per_seed("bicubic", "sam"), **cost))
    if {"small_cnn", "small_transformer"} <= set(cfg["models"]):
        best = max(["bicubic", "small_cnn", "small_transformer"], key=lambda m: table[m]["psnr"])
        claims.append(C.claim_issue_efficiency(ps, best, per_seed(best, "psnr"), table["ssdcn"]["gflops"],
                                               table["small_transformer"]["gflops"], table["ssdcn"]["params"],
                                               table["small_cnn"]["params"], **cost))
    claims.append(C.claim_domain_shift({m: per_seed(m, "psnr", "photo") for m in cfg["models"]},
                                       per_seed("bicubic", "psnr", "photo")))
    tuning = ("lr per model from the validation sweep over " + str(cfg["lr_grid"]) + " on seed " + str(seeds[0])
              + ": " + ", ".join(f"{m} {sweep[m]['lr']:g}" for m in cfg["models"])) if len(cfg["lr_grid"]) > 1 \
        else f"lr {cfg['lr_grid'][0]:g} for every model (a one-value grid: no sweep at this scale; medium sweeps)"
    for c in claims:
        if c.id in ("L", "C2", "C3", "C4", "C5", "I1", "I2", "D"):
            c.details = c.details.rstrip(". ") + f". Tuning: {tuning}."
    metrics = {"table": table, "ssdcb_flops": f_ssdcb, "train_wall_s": t_train, "cost_per_seed_s": cost_per_seed,
               "transformer_block_flops": f_tf,
               "attention_flops_n1024": attn_measured,
               "runs": [{k: v for k, v in r.items() if k != "example_sr"} for r in runs],
               "bicubic_test": bic_test}
    result = Result(slug=SLUG, scale=scale, config=config, metrics=metrics, claims=claims)
    bic_sr = predict(bic, data["test_lr"][:1])[0].numpy()
    result.add_figure("reconstruction", fig_reconstruction(data["test_lr"][0].numpy(), bic_sr,
                                                           one["ssdcn"]["example_sr"], data["test_hr"][0].numpy()),
                      f"test cube 0, x{cfg['scale_factor']}: middle band (top) and an RGB composite of bands "
                      "~650/550/450 nm (bottom): LR, bicubic, SSDCN (seed "
                      f"{seeds[0]}), ground truth")
    result.add_figure("flops_vs_size", fig_flops(f_ssdcb, f_tf),
                      "FLOPs of one block (FlopCounterMode, meta device) vs pixels: SSDCB grows linearly, the "
                      "full-attention block quadratically")
    result.runtime_s = time.perf_counter() - t0
    result.notes = (f"{len(runs)} final trainings ({', '.join(cfg['models'])} x seeds {seeds}), {cfg['steps']} steps "
                    f"each, as parallel single-thread processes on {resolve_device(cfg['device'])}; {tuning}.")
    return result


__all__ = [
    "CONFIGS",
    "CONFIG_HELP",
    "EXPECTED_RUNTIME_S",
    "MODELS",
    "build_model",
    "normalized",
    "resolve_device",
    "run",
    "train_all",
    "train_model",
    "validate_config",
]
