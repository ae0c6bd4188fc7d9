"""Paper-scale PCA and the unified benchmark (spec 7): ImageFolder data (ImageNet-1K), ResNet students, DDP.

    # one node, 8 GPUs; ImageNet as an ImageFolder tree root/train/<class>/*.JPEG and root/val/<class>/*.JPEG:
    torchrun --standalone --nproc_per_node 8 -m icml26.dataset_compression.scale \\
        configs/paper/dataset_compression/imagenet_pca.json --set data_root=/data/imagenet
    # or through the CLI (one process, or under torchrun the same way):
    icml26 run dataset_compression --scale paper --set data_root=/data/imagenet --set ipc=10

Pipeline (one process per GPU, `icml26.common.distributed`):
1. Score (methods "pca", "el2n_easy", "el2n_hard"): EL2N from `score_models` independently initialised
   `score_model`s, each trained `score_epochs` epochs on the whole train set; the K models are sharded over the
   ranks (embarrassingly parallel) and the score sums are all-reduced.
2. Select (rank 0, broadcast) `ipc * f^2` (PCA, Random+C+A) or `ipc` images per class; combine PCA's into
   canvases of f x f tiles (R/f each; 112 px at R = 224) with `combine_tiles`; the stored set (uint8) is saved to
   `out_dir`.
3. Evaluate: a fresh `student` trained by DDP for `epochs` epochs over the stored set (AdamW 1e-3, wd 0.01,
   cosine per epoch, global batch 128; RandomResizedCrop(R, (0.08, 1)) + flip for ordinary images, the
   tile-constrained crop at `crop_scale` + flip for canvases; hard labels, or soft labels from a `teacher`
   checkpoint computed online on each crop), then top-1 on the val set (Resize `val_resize`, CenterCrop R).

Images are decoded with PIL (no torchvision needed); stored images are resized (shorter side R) and centre
cropped to R x R. The student's BatchNorm buffers are broadcast from rank 0 at the end so every rank holds the
same model. Herding, forgetting and DM are not run at this scale (CPU reproduction only). A CPU test drives this
file end to end at toy size, in one process and as 2 gloo ranks.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

from icml26.common import distributed as D
from icml26.common.validation import check_bool, check_choice, check_float, check_int, check_seed
from icml26.dataset_compression.augment import RandomResizedCrop, TileConstrainedRandomResizedCrop
from icml26.dataset_compression.benchmark import kd_loss
from icml26.dataset_compression.models import build_model, make_model
from icml26.dataset_compression.pca import combine_tiles
from icml26.dataset_compression.selection import rank_order

METHODS = ("pca", "random", "random_ca", "el2n_easy", "el2n_hard")
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
IMG_EXT = (".jpg", ".jpeg", ".png", ".bmp", ".webp")

PAPER_CONFIG: dict[str, Any] = {  # spec 7 (the experiment's CONFIGS["paper"] is this dict)
    "seed": 0, "data_root": "", "train_dir": "train", "val_dir": "val", "method": "pca", "ipc": 10,
    "factor": 2, "resolution": 224, "val_resize": 256, "score_model": "resnet18", "score_models": 2,
    "score_epochs": 15, "score_batch_size": 256, "score_lr": 1e-3, "student": "resnet18", "epochs": 300,
    "batch_size": 128, "lr": 1e-3, "weight_decay": 0.01, "crop_scale": [0.5, 1.0],
    "benchmark_crop_scale": [0.08, 1.0], "flip": True, "label_mode": "hard", "teacher": "",
    "teacher_model": "resnet18", "temperature": 20.0, "num_workers": 8, "amp": True,
    "out_dir": "runs/dataset_compression/paper/artifacts",
}

PAPER_CONFIG_HELP: dict[str, str] = {
    "data_root": "ImageFolder root holding train_dir/<class>/* and val_dir/<class>/* (required)",
    "train_dir": "training split folder under data_root", "val_dir": "validation split folder under data_root",
    "method": f"one of {METHODS}: PCA, random real images, random + combine + augment, EL2N easy / hard",
    "ipc": "stored images (canvases for PCA) per class", "resolution": "stored and training resolution R, px",
    "factor": "PCA combine factor f (f x f tiles of R/f px per canvas)", "seed": "seed of scoring, selection, "
    "student", "batch_size": "global student batch (split over ranks)", "lr": "student AdamW learning rate",
    "weight_decay": "AdamW weight decay", "crop_scale": "PCA's tile-constrained crop scale",
    "temperature": "soft-label temperature",
    "val_resize": "validation: resize the shorter side to this, then centre-crop R",
    "score_model": "EL2N scorer architecture (build_model name)", "score_models": "EL2N models K",
    "score_epochs": "epochs each EL2N model trains", "score_batch_size": "EL2N training batch (per model)",
    "score_lr": "EL2N AdamW learning rate", "student": "student architecture: resnet18, resnet18-tiny, convnet, "
    "timm:<name>, torchvision:<name>", "epochs": "student epochs over the stored set",
    "benchmark_crop_scale": "RandomResizedCrop scale of ordinary images (the benchmark's (0.08, 1))",
    "flip": "horizontal flips (natural images)", "label_mode": "'hard' (PCA's setting) or 'soft' (needs teacher)", "teacher": "teacher checkpoint (state_dict .pt) for soft labels",
    "teacher_model": "teacher architecture", "num_workers": "DataLoader worker processes per rank",
    "amp": "bfloat16 autocast on CUDA", "out_dir": "where the stored set and the student are saved (rank 0)",
}


def validate_paper_config(config: dict[str, Any]) -> None:
    """Raise ValueError/TypeError naming the first bad key of a paper-scale config."""
    missing = [k for k in PAPER_CONFIG if k not in config]
    if missing:
        raise ValueError(f"config is missing {', '.join(map(repr, missing))}")
    unknown = sorted(set(config) - set(PAPER_CONFIG) - {"scale"})
    if unknown:
        raise ValueError(f"config has unknown key(s) {unknown} (a typo would be silently ignored)")
    check_seed(config["seed"], "seed")
    for k in ("data_root", "train_dir", "val_dir", "teacher", "out_dir"):
        if not isinstance(config[k], str):
            raise TypeError(f"{k} must be a string, got {type(config[k]).__name__}")
    check_choice(config["method"], "method", METHODS)
    for k in ("ipc", "factor", "resolution", "val_resize", "score_models", "score_epochs", "score_batch_size",
              "epochs", "batch_size"):
        check_int(config[k], k, min=1)
    check_int(config["num_workers"], "num_workers", min=0)
    if config["resolution"] % config["factor"]:
        raise ValueError(f"factor {config['factor']} must divide resolution {config['resolution']}")
    if config["val_resize"] < config["resolution"]:
        raise ValueError(f"val_resize ({config['val_resize']}) must be >= resolution ({config['resolution']})")
    for k in ("score_lr", "lr", "temperature"):
        check_float(config[k], k, min=0.0, min_open=True)
    check_float(config["weight_decay"], "weight_decay", min=0.0)
    for k in ("crop_scale", "benchmark_crop_scale"):
        v = config[k]
        if not isinstance(v, list) or len(v) != 2 or not 0 < check_float(v[0], f"{k}[0]") <= \
                check_float(v[1], f"{k}[1]") <= 1:
            raise ValueError(f"{k} must be [lo, hi] with 0 < lo <= hi <= 1, got {v!r}")
    check_bool(config["flip"], "flip")
    check_bool(config["amp"], "amp")
    check_choice(config["label_mode"], "label_mode", ("hard", "soft"))
    if config["label_mode"] == "soft" and not config["teacher"]:
        raise ValueError("label_mode 'soft' needs teacher (a state_dict checkpoint path)")
    for k in ("score_model", "student", "teacher_model"):
        if not isinstance(config[k], str):
            raise TypeError(f"{k} must be a model name string, got {type(config[k]).__name__}")


# ------------------------------------------------------------------------------------------- data
def list_image_folder(root: str | os.PathLike) -> tuple[list[str], np.ndarray, list[str]]:
    """(file paths, labels, class names) of an ImageFolder tree root/<class>/<image>, classes sorted by name."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"data folder {str(root)!r} does not exist")
    classes = sorted(p.name for p in root.iterdir() if p.is_dir())
    if len(classes) < 2:
        raise ValueError(f"data folder {str(root)!r} must hold >= 2 class sub-folders, found {len(classes)}")
    files, labels = [], []
    for c, name in enumerate(classes):
        for p in sorted((root / name).rglob("*")):
            if p.suffix.lower() in IMG_EXT:
                files.append(str(p))
                labels.append(c)
    return files, np.array(labels, dtype=np.int64), classes


def load_image(path: str, resize: int, crop: int) -> torch.Tensor:
    """RGB image as a uint8 (3, crop, crop) tensor: shorter side resized to `resize` (bilinear), centre crop."""
    from PIL import Image

    with Image.open(path) as im:
        im = im.convert("RGB")
        w, h = im.size
        s = resize / min(w, h)
        im = im.resize((max(crop, round(w * s)), max(crop, round(h * s))), Image.BILINEAR)
        w, h = im.size
        left, top = (w - crop) // 2, (h - crop) // 2
        im = im.crop((left, top, left + crop, top + crop))
        return torch.from_numpy(np.asarray(im, dtype=np.uint8).copy()).permute(2, 0, 1)


class ImageFiles(Dataset):
    """(uint8 image (3, R, R), label) for a list of files (`load_image(path, resize, R)`)."""

    def __init__(self, files: list[str], labels: np.ndarray, resize: int, resolution: int) -> None:
        self.files, self.labels, self.resize, self.resolution = files, labels, resize, resolution

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int):
        return load_image(self.files[i], self.resize, self.resolution), int(self.labels[i]), i


def _normalise(x_uint8: torch.Tensor, device) -> torch.Tensor:
    x = x_uint8.to(device, non_blocking=True).float() / 255.0
    mean = torch.tensor(IMAGENET_MEAN, device=device)[:, None, None]
    std = torch.tensor(IMAGENET_STD, device=device)[:, None, None]
    return (x - mean[: x.shape[1]]) / std[: x.shape[1]]


def _amp(config: dict, device: torch.device):
    return torch.autocast("cuda", dtype=torch.bfloat16) if config["amp"] and device.type == "cuda" else nullcontext()


# ------------------------------------------------------------------------------------------- 1. score
def el2n_scores_distributed(config: dict, files: list[str], labels: np.ndarray, n_classes: int,
                            env: D.DistEnv) -> np.ndarray:
    """EL2N over the whole train set; this rank trains models shard(range(K)); score sums are all-reduced."""
    R = config["resolution"]
    ds = ImageFiles(files, labels, R, R)
    aug = RandomResizedCrop(R, scale=tuple(config["benchmark_crop_scale"]), flip=config["flip"])
    total = torch.zeros(len(files), dtype=torch.float64, device=env.device)
    for m in D.shard(list(range(config["score_models"])), env):
        seed = config["seed"] * 1000 + m
        model = make_model(lambda: build_model(config["score_model"], n_classes, 3, R), seed).to(env.device)
        opt = torch.optim.AdamW(model.parameters(), lr=config["score_lr"], weight_decay=config["weight_decay"])
        g = torch.Generator().manual_seed(seed)
        loader = DataLoader(ds, batch_size=config["score_batch_size"], shuffle=True, generator=g,
                            num_workers=config["num_workers"], drop_last=False)
        model.train()
        for epoch in range(config["score_epochs"]):
            for x, y, _ in loader:
                x = aug(_normalise(x, env.device), generator=g, check_finite=False)
                with _amp(config, env.device):
                    loss = F.cross_entropy(model(x), y.to(env.device))
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            D.log(env, f"EL2N model {m}: epoch {epoch + 1}/{config['score_epochs']} loss {float(loss.detach()):.3f}")
        model.eval()
        with torch.no_grad():
            for x, y, idx in DataLoader(ds, batch_size=config["score_batch_size"], num_workers=config["num_workers"]):
                with _amp(config, env.device):
                    p = F.softmax(model(_normalise(x, env.device)).float(), 1)
                onehot = F.one_hot(y.to(env.device), n_classes).float()
                total[idx.to(env.device)] += torch.linalg.vector_norm(p - onehot, dim=1).double()
    if dist.is_available() and dist.is_initialized():
        t = total.cpu() if env.backend == "gloo" else total
        dist.all_reduce(t)
        total = t
    return (total / config["score_models"]).cpu().numpy()


# ------------------------------------------------------------------------------------------- 2. select
def select_indices(config: dict, labels: np.ndarray, n_classes: int, scores: np.ndarray | None) -> np.ndarray:
    """Class-balanced indices: `ipc * f^2` for PCA / Random+C+A, else `ipc`; easiest first for PCA."""
    method, f = config["method"], config["factor"]
    m = config["ipc"] * (f * f if method in ("pca", "random_ca") else 1)
    rng = np.random.default_rng(config["seed"])
    tiebreak = rng.permutation(len(labels))
    out = []
    for c in range(n_classes):
        idx = np.flatnonzero(labels == c)
        if len(idx) < m:
            raise ValueError(f"ipc: class {c} has {len(idx)} images, fewer than the {m} the method stores")
        if scores is None:
            out.append(rng.choice(idx, m, replace=False))
        else:
            order = rank_order(scores, idx, tiebreak)
            out.append(order[:m] if method in ("pca", "el2n_easy") else order[::-1][:m])
    return np.concatenate(out)


def build_stored_set(config: dict, files: list[str], labels: np.ndarray, idx: np.ndarray):
    """(uint8 images (N, 3, R, R), labels (N,), factor) of the stored set: canvases for PCA / Random+C+A."""
    R, f = config["resolution"], config["factor"]
    imgs = torch.stack([load_image(files[i], R, R) for i in idx])
    lab = torch.from_numpy(labels[idx])
    if config["method"] in ("pca", "random_ca"):
        canv, clab = combine_tiles(imgs.float(), lab, f)
        return canv.round().clamp(0, 255).to(torch.uint8), clab, f
    return imgs, lab, 1


# ------------------------------------------------------------------------------------------- 3. evaluate
def train_student_ddp(config: dict, images: torch.Tensor, labels: torch.Tensor, factor: int, n_classes: int,
                      env: D.DistEnv, val_files: list[str] | None = None,
                      val_labels: np.ndarray | None = None) -> dict[str, Any]:
    """DDP training of a fresh student on the stored set, then val top-1 (all-reduced). Returns the metrics and
    the trained (unwrapped) model under "model"."""
    R = config["resolution"]
    model = make_model(lambda: build_model(config["student"], n_classes, 3, R), config["seed"]).to(env.device)
    ddp = D.wrap_ddp(model, env)
    teacher = None
    if config["label_mode"] == "soft":
        teacher = build_model(config["teacher_model"], n_classes, 3, R)
        teacher.load_state_dict(torch.load(config["teacher"], map_location="cpu"))
        teacher = teacher.to(env.device).eval()
    if factor > 1:
        aug = TileConstrainedRandomResizedCrop(R, factor, scale=tuple(config["crop_scale"]), flip=config["flip"])
    else:
        aug = RandomResizedCrop(R, scale=tuple(config["benchmark_crop_scale"]), flip=config["flip"])
    per_rank = max(1, config["batch_size"] // env.world_size)
    sampler = DistributedSampler(range(len(images)), num_replicas=env.world_size, rank=env.rank, shuffle=True,
                                 seed=config["seed"], drop_last=False) if env.is_distributed else None
    g = torch.Generator().manual_seed(config["seed"] * 7919 + env.rank)  # crops differ per rank
    opt = torch.optim.AdamW(ddp.parameters(), lr=config["lr"], weight_decay=config["weight_decay"])
    E = config["epochs"]
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda e: 0.5 * (1 + math.cos(math.pi * e / E)))
    order_g = torch.Generator().manual_seed(config["seed"])
    losses = []
    for epoch in range(E):
        if sampler is not None:
            sampler.set_epoch(epoch)
            order = torch.tensor(list(iter(sampler)))
        else:
            order = torch.randperm(len(images), generator=order_g)
        ddp.train()
        for start in range(0, len(order), per_rank):
            b = order[start:start + per_rank]
            x = aug(_normalise(images[b], env.device), generator=g, check_finite=False)
            with _amp(config, env.device):
                logits = ddp(x)
                if teacher is not None:
                    with torch.no_grad():
                        t_logits = teacher(x)
                    loss = kd_loss(logits.float(), t_logits.float(), config["temperature"])
                else:
                    loss = F.cross_entropy(logits.float(), labels[b].to(env.device))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
        sched.step()
        if (epoch + 1) % max(1, E // 10) == 0 or epoch + 1 == E:
            D.log(env, f"student epoch {epoch + 1}/{E} loss {np.mean(losses[-len(order) // per_rank - 1:]):.3f}")
    if dist.is_available() and dist.is_initialized():  # BN running stats differ per rank: take rank 0's
        for buf in model.buffers():
            dist.broadcast(buf.data, src=0)
    out: dict[str, Any] = {"train_loss": float(np.mean(losses[-max(1, len(losses) // 10):])), "model": model}
    if val_files:
        out["val_acc"] = evaluate_val(config, model, val_files, val_labels, env)
    return out


@torch.no_grad()
def evaluate_val(config: dict, model: torch.nn.Module, files: list[str], labels: np.ndarray,
                 env: D.DistEnv) -> float:
    """Top-1 on the val files (Resize val_resize, CenterCrop R), sharded over ranks and all-reduced."""
    ds = ImageFiles(files, labels, config["val_resize"], config["resolution"])
    part = D.shard(list(range(len(ds))), env)
    loader = DataLoader(torch.utils.data.Subset(ds, part), batch_size=config["batch_size"],
                        num_workers=config["num_workers"])
    model.eval()
    correct = torch.zeros(2, dtype=torch.float64)
    for x, y, _ in loader:
        with _amp(config, env.device):
            pred = model(_normalise(x, env.device)).argmax(1).cpu()
        correct += torch.tensor([float((pred == y).sum()), float(len(y))], dtype=torch.float64)
    if dist.is_available() and dist.is_initialized():
        t = correct.to(env.device) if env.backend == "nccl" else correct
        dist.all_reduce(t)
        correct = t.cpu()
    return float(correct[0] / max(correct[1], 1.0))


# ------------------------------------------------------------------------------------------- pipeline
def run_pipeline(config: dict, env: D.DistEnv | None = None) -> dict[str, Any]:
    """Score, select, combine, evaluate (steps 1-3 of the module docstring); returns metrics (+ "model")."""
    validate_paper_config({**config, "scale": "paper"})
    if not config["data_root"]:
        raise ValueError("data_root must name an ImageFolder root with train/ and val/ (the paper scale needs "
                         "user-provided data; nothing is downloaded)")
    env = D.init_distributed() if env is None else env
    t0 = time.perf_counter()
    root = Path(config["data_root"])
    files, labels, classes = list_image_folder(root / config["train_dir"])
    val_files, val_labels, val_classes = list_image_folder(root / config["val_dir"])
    if val_classes != classes:
        raise ValueError("val_dir must hold the same class folders as train_dir")
    k = len(classes)
    scores = None
    if config["method"] in ("pca", "el2n_easy", "el2n_hard"):
        scores = el2n_scores_distributed(config, files, labels, k, env)
    t_score = time.perf_counter() - t0
    idx = D.broadcast_object(select_indices(config, labels, k, scores) if env.is_main else None)
    images, stored_labels, factor = build_stored_set(config, files, labels, idx)
    t_select = time.perf_counter() - t0 - t_score
    out_dir = Path(config["out_dir"])
    D.save_on_main(env, lambda: (out_dir.mkdir(parents=True, exist_ok=True),
                                 torch.save({"images": images, "labels": stored_labels, "factor": factor,
                                             "indices": idx, "classes": classes}, out_dir / "stored_set.pt")))
    res = train_student_ddp(config, images, stored_labels, factor, k, env, val_files, val_labels)
    D.save_on_main(env, lambda: torch.save(res["model"].state_dict(), out_dir / "student.pt"))
    return {"val_acc": res["val_acc"], "train_loss": res["train_loss"], "n_stored": int(len(images)),
            "stored_bytes": int(images.numel()), "n_classes": k, "n_train": len(files), "world_size": env.world_size,
            "time_s": {"score": t_score, "select_combine": t_select, "total": time.perf_counter() - t0},
            "model": res["model"], "indices": idx}


def run_paper(config: dict):
    """The CLI's `--scale paper` entry: run the pipeline and wrap its metrics in a Result (no claim gates: the
    paper's ImageNet numbers are not available to compare against; see docs)."""
    from icml26.results import Result

    t0 = time.perf_counter()
    out = run_pipeline(config)
    metrics = {k: v for k, v in out.items() if k not in ("model", "indices")}
    result = Result(slug="dataset_compression", scale="paper", config=config, metrics=metrics, claims=[])
    result.runtime_s = time.perf_counter() - t0
    result.notes = (f"{config['method']} at IPC {config['ipc']} (f = {config['factor']}, R = {config['resolution']}), "
                    f"student {config['student']} {config['epochs']} epochs on {out['world_size']} process(es): "
                    f"val top-1 {100 * out['val_acc']:.2f} %; stored {out['n_stored']} images "
                    f"({out['stored_bytes'] / 2**20:.1f} MiB uint8).")
    return result


def main(argv: list[str] | None = None) -> int:
    """`python -m icml26.dataset_compression.scale [CONFIG.json] [--set key=json_value ...]` (under torchrun for
    several GPUs): merge into PAPER_CONFIG, run, save the result to runs/dataset_compression/paper (rank 0)."""
    from icml26.results import save_result

    argv = list(sys.argv[1:] if argv is None else argv)
    config = dict(PAPER_CONFIG)
    sets = []
    while "--set" in argv:
        i = argv.index("--set")
        sets.append(argv[i + 1])
        del argv[i:i + 2]
    if argv:
        overrides = json.loads(Path(argv[0]).read_text())
        unknown = set(overrides) - set(config) - {"_comment"}
        if unknown:
            raise ValueError(f"unknown config keys in {argv[0]}: {sorted(unknown)}")
        config.update({k: v for k, v in overrides.items() if k != "_comment"})
    for item in sets:
        k, _, v = item.partition("=")
        if k not in config:
            raise ValueError(f"--set {k}: unknown key")
        try:
            config[k] = json.loads(v)
        except json.JSONDecodeError:
            config[k] = v
    config["scale"] = "paper"
    result = run_paper(config)
    env = D.init_distributed()
    D.save_on_main(env, lambda: print(save_result(result, Path(os.environ.get("ICML26_RUNS", "runs"))
                                                  / "dataset_compression" / "paper")))
    D.shutdown()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
