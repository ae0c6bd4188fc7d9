"""The unified dataset-compression (DC) benchmark (spec 2.1): one evaluator for pruned, distilled and PCA sets.

A compressed set stores IPC images per class, all at the same resolution R, so storage compares fairly between
real (pruned) and synthetic (distilled) images and PCA's canvases. Evaluation trains a fresh student from scratch
on the stored images and reports top-1 on the real test set:

- hard labels: cross-entropy on the integer label;
- soft labels: a teacher labels *each augmented batch online*, loss `KL(softmax(t / T) || log_softmax(s / T))`
  with reduction "batchmean" (no T^2 factor, as in the released evaluator); storing those per-crop outputs is
  what `storage_bytes(..., label_mode="soft")` charges.

CPU protocol (spec 6): AdamW lr 3e-3, weight decay 0.01, cosine over `steps` optimiser steps (stepped per step;
the released evaluator steps per epoch over 300 epochs), batch 64 drawn *with replacement* (a 10-image set gets
the same 400 x 64 draws as any other), RandomResizedCrop(R, scale=(0.5, 1)) or, for canvases of f x f tiles,
the same crop confined to one tile. Deterministic per `seed` (initialisation, batches, crops).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm.auto import tqdm

from icml26.common.validation import (
    check_array,
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_seed,
    check_tensor,
)
from icml26.dataset_compression import _optim
from icml26.dataset_compression.augment import TileConstrainedRandomResizedCrop
from icml26.dataset_compression.models import ModelFactory, make_model
from icml26.dataset_compression.scoring import default_factory


@dataclass
class CompressedSet:
    """A compressed training set: `images` (N, C, R, R) float, `labels` (N,) class ids, `factor` tiles per side
    (1 for ordinary images, f for PCA canvases holding f x f images each), and a display `name`.

    Lists and arrays are read like tensors; images must be finite; labels must be integers >= 0. The images are
    held as float32 for training; `stored_dtype` (default: the dtype of `images` as given, e.g. uint8 for 8-bit
    pictures, float32 for synthetic tensors) is what `storage_bytes` charges per pixel. uint8 images are 8-bit
    pictures and are held as value / 255 (in [0, 1], like the reproduction's test images; `evaluate` reads a uint8
    X_test the same way).
    """

    images: Any
    labels: Any
    factor: int = 1
    name: str = ""
    stored_dtype: Any = None

    def __post_init__(self) -> None:
        if self.stored_dtype is None:
            dt = getattr(self.images, "dtype", None)
            if isinstance(dt, torch.dtype):
                self.stored_dtype = dt
            else:  # numpy array / list: numpy's dtype; float64 (how lists read) counts as float32, as held
                try:
                    nd = np.asarray(self.images).dtype
                    self.stored_dtype = (torch.float32 if nd.kind == "f" and nd.itemsize == 8
                                         else torch.from_numpy(np.zeros(1, dtype=nd)).dtype)
                except (TypeError, ValueError):
                    self.stored_dtype = torch.float32  # check_tensor below names the bad input
        if not isinstance(self.stored_dtype, torch.dtype):
            raise TypeError(f"stored_dtype must be a torch dtype or None, got {self.stored_dtype!r}")
        self.images = _as_float_images(self.images, "images")
        lab = check_tensor(self.labels, "labels", ndim=1, floating=False)
        if lab.is_floating_point():
            if not bool((lab == lab.round()).all()):
                raise ValueError("labels must hold integers, got non-integer values (not truncated)")
        elif lab.dtype == torch.bool:
            raise TypeError("labels must hold integers, got booleans")
        self.labels = lab.long()
        if len(self.labels) != len(self.images):
            raise ValueError(f"labels must have one entry per image ({len(self.images)}), got {len(self.labels)}")
        if int(self.labels.min()) < 0:
            raise ValueError(f"labels must be class ids >= 0, got {int(self.labels.min())}")
        self.factor = check_int(self.factor, "factor", min=1)
        _, _, h, w = self.images.shape
        if h % self.factor or w % self.factor:
            raise ValueError(f"factor {self.factor} must divide the image sides {h}x{w}")
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string, got {type(self.name).__name__}")

    @property
    def n_images(self) -> int:
        return int(self.images.shape[0])

    @property
    def resolution(self) -> tuple[int, int]:
        return int(self.images.shape[2]), int(self.images.shape[3])

    def images_per_class(self) -> dict[int, int]:
        vals, counts = torch.unique(self.labels, return_counts=True)
        return {int(v): int(c) for v, c in zip(vals, counts)}


def _as_float_images(x: Any, name: str) -> torch.Tensor:
    """float32 (N, C, H, W); a uint8 tensor / array is an 8-bit picture and becomes value / 255."""
    is_u8 = getattr(x, "dtype", None) in (torch.uint8, np.uint8)
    t = check_tensor(x, name, ndim=4, dtype=torch.float32)
    return t / 255.0 if is_u8 else t


def as_compressed(obj: Any) -> CompressedSet:
    """A `CompressedSet` from itself, an (images, labels) pair, or a fitted object with `compressed_`."""
    if isinstance(obj, CompressedSet):
        return obj
    if hasattr(obj, "compressed_"):
        return obj.compressed_
    if isinstance(obj, (tuple, list)) and len(obj) == 2:
        return CompressedSet(obj[0], obj[1])
    if hasattr(obj, "fit") and not hasattr(obj, "compressed_"):
        raise ValueError(f"{type(obj).__name__} is not fitted: call fit(X, y) first")
    raise TypeError(f"compressed must be a CompressedSet, an (images, labels) pair or a fitted compressor, got "
                    f"{type(obj).__name__}")


def soft_targets(teacher_logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax(teacher_logits / T) along the last dimension; T -> inf tends to the uniform distribution."""
    t = check_float(temperature, "temperature", min=0.0, min_open=True)
    return F.softmax(teacher_logits / t, dim=-1)


def kd_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """KL(softmax(t / T) || softmax(s / T)), summed over classes and averaged over the batch ("batchmean")."""
    return F.kl_div(F.log_softmax(student_logits / temperature, -1), soft_targets(teacher_logits, temperature),
                    reduction="batchmean")


def cosine_lr(step: int, steps: int) -> float:
    """lr multiplier 0.5 (1 + cos(pi step / steps)) (the benchmark's cosine schedule)."""
    return 0.5 * (1.0 + math.cos(math.pi * step / steps))


@torch.no_grad()
def accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor, batch: int = 1024) -> float:
    """Top-1 accuracy of `model` on (X, y), in [0, 1] (model in eval mode)."""
    was = model.training
    model.eval()
    correct = 0
    dev = next(iter(model.parameters()), torch.empty(0)).device
    for i in range(0, len(X), batch):
        correct += int((model(X[i:i + batch].to(dev)).argmax(1).cpu() == y[i:i + batch]).sum())
    model.train(was)
    return correct / len(X)


def evaluate(compressed: Any, X_test, y_test, *, model_factory: ModelFactory | None = None, augment: Any = "auto",
             label_mode: str = "hard", teacher: nn.Module | None = None, temperature: float = 4.0, steps: int = 400,
             batch_size: int = 64, lr: float = 3e-3, weight_decay: float = 0.01, seed: int = 0,
             num_classes: int | None = None, return_model: bool = False, progress: str | None = None,
             device: Any = "cpu") -> dict:
    """Train a fresh student on `compressed` under the unified protocol; test top-1 on (X_test, y_test).

    Args:
        compressed: a `CompressedSet`, an (images (N, C, R, R), labels (N,)) pair, or a fitted compressor
            (`PCACompressor`, `DistributionMatching`) whose `compressed_` is used.
        X_test: (M, C, R, R) real test images; y_test: (M,) labels.
        model_factory: zero-argument callable returning the student (default: the reproduction's ConvNet).
        augment: "auto" = RandomResizedCrop(R, scale=(0.5, 1)) confined to one tile when the set's factor > 1;
            None = no augmentation; or any module/callable `augment(x, generator=g) -> x'`. Whatever the setting,
            what the student trains on (the stored images, or the augment's output) must have X_test's spatial
            size, else a ValueError naming both (checked on one image before training).
        label_mode: "hard" or "soft" (needs `teacher`, an nn.Module mapping crops to logits).
        temperature: soft-label temperature T (default 4, spec 6).
        steps, batch_size, lr, weight_decay: AdamW protocol (defaults 400, 64, 3e-3, 0.01).
        seed: initialisation, batch draws and crops.
        num_classes: student outputs (default max label of the set and the test labels + 1).
        return_model: also return the trained student under "model".
        progress: a tqdm description to show a progress bar (None = silent).
        device: where the student (and teacher) train and test: "cpu" (default), "cuda" or a torch.device;
            batches are drawn and augmented on the CPU (the same random stream on every device).
    Returns:
        {"acc": test top-1 in [0, 1], "train_loss": mean loss over the last 10 % of steps, "steps", "n_images",
         "label_mode", "time_s"} (+ "model").
    """
    cs = as_compressed(compressed)
    label_mode = check_choice(label_mode, "label_mode", ("hard", "soft"))
    steps = check_int(steps, "steps", min=1)
    batch_size = check_int(batch_size, "batch_size", min=1)
    lr = check_float(lr, "lr", min=0.0, min_open=True)
    weight_decay = check_float(weight_decay, "weight_decay", min=0.0)
    seed = check_seed(seed)
    return_model = check_bool(return_model, "return_model")
    if label_mode == "soft":
        temperature = check_float(temperature, "temperature", min=0.0, min_open=True)
        if not isinstance(teacher, nn.Module):
            raise ValueError(f"label_mode='soft' needs a teacher nn.Module, got {type(teacher).__name__}")
    xt = _as_float_images(X_test, "X_test")
    yt = torch.from_numpy(_test_labels(y_test, len(xt)))
    if xt.shape[1] != cs.images.shape[1]:
        raise ValueError(f"X_test has {xt.shape[1]} channel(s), the compressed images {cs.images.shape[1]}")
    k = max(int(cs.labels.max()), int(yt.max())) + 1
    if num_classes is not None:
        nc = check_int(num_classes, "num_classes", min=2)
        if nc < k:
            raise ValueError(f"num_classes={nc} is below the largest label + 1 ({k})")
        k = nc
    if augment == "auto":
        r = cs.resolution
        if r[0] != r[1] or tuple(xt.shape[2:]) != r:
            raise ValueError(f"augment='auto' resizes crops to the stored resolution {r}; X_test has "
                             f"{tuple(xt.shape[2:])} (pass augment= explicitly for other shapes)")
        augment = TileConstrainedRandomResizedCrop(r[0], cs.factor, scale=(0.5, 1.0))
    elif augment is not None and not callable(augment):
        raise TypeError(f"augment must be 'auto', None or a callable, got {type(augment).__name__}")
    _check_train_resolution(cs, xt, augment)
    dev = _check_device(device)
    factory = default_factory(xt, k) if model_factory is None else model_factory

    t0 = time.perf_counter()
    model = make_model(factory, seed).to(dev)
    if teacher is not None and label_mode == "soft":
        teacher = teacher.to(dev)
    out = train_student(model, cs.images, cs.labels, augment=augment, label_mode=label_mode, teacher=teacher,
                        temperature=temperature, steps=steps, batch_size=batch_size, lr=lr,
                        weight_decay=weight_decay, seed=seed, progress=progress, device=dev)
    res = {"acc": accuracy(model, xt, yt), "train_loss": out["train_loss"], "steps": steps,
           "n_images": cs.n_images, "label_mode": label_mode, "time_s": time.perf_counter() - t0}
    if return_model:
        res["model"] = model.cpu()  # picklable across processes and usable by CPU-side feature functions
    return res


def _check_device(device: Any) -> torch.device:
    try:
        dev = torch.device(device)
    except (TypeError, RuntimeError, ValueError):
        raise ValueError(f"device must be 'cpu', 'cuda' or a torch.device, got {device!r}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} but CUDA is not available")
    return dev


def _check_train_resolution(cs: CompressedSet, xt: torch.Tensor, augment: Any) -> None:
    """What the student trains on must have the test images' spatial size (else the model fails deep inside)."""
    if augment is None:
        size, what = tuple(cs.images.shape[2:]), "the stored images (augment=None trains on them as they are)"
    else:
        probe = augment(cs.images[:1], generator=torch.Generator().manual_seed(0))
        if not isinstance(probe, torch.Tensor) or probe.ndim != 4:
            raise TypeError(f"augment must map (N, C, H, W) images to (N, C, H', W') images, got "
                            f"{type(probe).__name__} {getattr(probe, 'shape', '')}")
        size, what = tuple(probe.shape[2:]), "the augment's crops"
    if size != tuple(xt.shape[2:]):
        raise ValueError(f"X_test has spatial size {tuple(xt.shape[2:])} but {what} are {size}: resize X_test or the "
                         "compressed images, or pass an augment that outputs X_test's size")


def _test_labels(y, n: int) -> np.ndarray:
    """Test labels: n integer class ids >= 0 (a test set need not hold every class)."""
    arr = check_array(y, "y_test", ndim=1, dtype=np.int64)
    if len(arr) != n:
        raise ValueError(f"y_test must have one label per test image ({n}), got {len(arr)}")
    if arr.min() < 0:
        raise ValueError(f"y_test must hold class ids >= 0, got {int(arr.min())}")
    return arr


def train_student(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, *, augment, label_mode: str,
                  teacher: nn.Module | None, temperature: float, steps: int, batch_size: int, lr: float,
                  weight_decay: float, seed: int, progress: str | None = None, device: Any = "cpu") -> dict:
    """The protocol's training loop on trusted inputs (`evaluate` validates them); trains `model` in place."""
    g = torch.Generator().manual_seed(seed)
    params = list(model.parameters())
    if all(p.device.type == "cpu" and p.dtype == torch.float32 for p in params):
        # torch.optim.AdamW + LambdaLR's update, bit for bit, without the optimizer's per-step dispatch (_optim)
        opt, sched = _optim.AdamW(params, weight_decay=weight_decay), None
    else:
        opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: cosine_lr(s, steps))
    fast = isinstance(augment, TileConstrainedRandomResizedCrop)
    if fast:
        size, factor, scale, ratio, flip = augment._validated()
    if teacher is not None and label_mode == "soft":
        teacher.eval()
    model.train()
    losses = []
    for step in tqdm(range(steps), desc=progress, disable=progress is None, leave=False):
        idx = torch.randint(len(images), (batch_size,), generator=g)
        x = images[idx]
        if fast:
            x = augment._apply(x, g, size, factor, scale, ratio, flip)
        elif augment is not None:
            x = augment(x, generator=g)
        x = x.to(device, non_blocking=True)
        logits = model(x)
        if label_mode == "soft":
            with torch.no_grad():
                t_logits = teacher(x)
            loss = kd_loss(logits, t_logits, temperature)
        else:
            loss = F.cross_entropy(logits, labels[idx].to(device))
        opt.zero_grad()
        loss.backward()
        if sched is None:
            opt.step(lr * cosine_lr(step, steps))  # LambdaLR's value: base lr x multiplier of this step
        else:
            opt.step()
            sched.step()
        losses.append(loss.detach())
    tail = max(1, steps // 10)
    return {"train_loss": float(torch.stack(losses[-tail:]).mean())}


def storage_bytes(compressed: Any, *, label_mode: str = "hard", soft_label_steps: int = 400, batch_size: int = 64,
                  num_classes: int | None = None, pixel_bytes: int | None = None, label_bytes: int = 8) -> dict:
    """Storage of a compressed set: images at `pixel_bytes` per value (default: the set's `stored_dtype`, e.g. 1
    for uint8, 4 for float32; pass 1 to count 8-bit image files), one `label_bytes` integer per stored image,
    plus for soft labels one float32 teacher vector per augmented crop the student sees
    (`soft_label_steps x batch_size x num_classes x 4` bytes, the benchmark's per-crop soft labels).

    Returns {"image_bytes", "label_bytes", "total_bytes"}.
    """
    cs = as_compressed(compressed)
    label_mode = check_choice(label_mode, "label_mode", ("hard", "soft"))
    if pixel_bytes is None:
        pixel_bytes = torch.empty(0, dtype=cs.stored_dtype).element_size()
    pixel_bytes = check_int(pixel_bytes, "pixel_bytes", min=1)
    label_bytes = check_int(label_bytes, "label_bytes", min=1)
    img = int(cs.images.numel()) * pixel_bytes
    lab = cs.n_images * label_bytes
    if label_mode == "soft":
        steps = check_int(soft_label_steps, "soft_label_steps", min=1)
        batch_size = check_int(batch_size, "batch_size", min=1)
        k = int(cs.labels.max()) + 1 if num_classes is None else check_int(num_classes, "num_classes", min=2)
        lab += steps * batch_size * k * 4
    return {"image_bytes": img, "label_bytes": lab, "total_bytes": img + lab}


__all__ = ["CompressedSet", "as_compressed", "evaluate", "train_student", "storage_bytes", "soft_targets", "kd_loss",
           "cosine_lr", "accuracy"]
