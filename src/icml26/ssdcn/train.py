"""Training and evaluation helpers shared by the CPU reproduction and the paper-scale path.

`fit` trains any model with the package's interface (forward(lr) -> (sr, outputs)) with AdamW, a linear warm-up
then cosine decay (review note 2: 5 % warm-up for every model), random minibatches of paired (lr, hr) cubes drawn
by a seeded generator, and `PyramidJointLoss`. `evaluate` returns per-image metrics.
"""

from __future__ import annotations

import math
import time
from typing import Any

import torch
from torch import nn
from tqdm.auto import tqdm

from icml26.common.validation import check_float, check_int, check_seed, check_tensor
from icml26.ssdcn.losses import PyramidJointLoss
from icml26.ssdcn.metrics import cc, ergas, psnr, rmse, sam_degrees, ssim

__all__ = ["evaluate", "fit", "predict", "warmup_cosine_lambda"]


def warmup_cosine_lambda(steps: int, warmup_frac: float = 0.05):
    """LambdaLR factor: linear warm-up over warmup_frac * steps, then cosine decay to 0 at `steps`."""
    steps = check_int(steps, "steps", min=1)
    warm = max(1, round(check_float(warmup_frac, "warmup_frac", min=0.0, max=1.0, max_open=True) * steps))

    def f(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, (step - warm) / max(1, steps - warm))))

    return f


def _check_pairs(lr: Any, hr: Any) -> tuple[torch.Tensor, torch.Tensor]:
    lr = check_tensor(lr, "lr", ndim=4)
    hr = check_tensor(hr, "hr", ndim=4)
    if lr.shape[0] != hr.shape[0] or lr.shape[1] != hr.shape[1]:
        raise ValueError(f"lr {tuple(lr.shape)} and hr {tuple(hr.shape)} must have the same images and bands")
    if hr.shape[-2] % lr.shape[-2] or hr.shape[-1] % lr.shape[-1] or \
            hr.shape[-2] // lr.shape[-2] != hr.shape[-1] // lr.shape[-1]:
        raise ValueError(f"hr {tuple(hr.shape)} must be lr {tuple(lr.shape)} upscaled by one integer factor")
    return lr, hr


def _check_model_scale(model: nn.Module, lr: torch.Tensor, hr: torch.Tensor) -> None:
    """hr must be lr upscaled by the model's `scale` (when the model has one): a mismatched pair would otherwise
    fail deep inside the loss or metrics, or score the wrong resolution."""
    model_scale = getattr(model, "scale", None)
    if isinstance(model_scale, int) and (hr.shape[-2] != lr.shape[-2] * model_scale
                                         or hr.shape[-1] != lr.shape[-1] * model_scale):
        raise ValueError(f"hr {tuple(hr.shape)} must be lr {tuple(lr.shape)} upscaled by the model's scale "
                         f"({model_scale})")


def _device(model: nn.Module) -> torch.device:
    p = next(model.parameters(), None)
    return p.device if p is not None else torch.device("cpu")


def fit(model: nn.Module, lr: Any, hr: Any, *, steps: int = 800, batch_size: int = 8, lr_rate: float = 1e-3,
        weight_decay: float = 1e-4, warmup_frac: float = 0.05, seed: int = 0, loss: nn.Module | None = None,
        clip: float | None = 1.0, progress: str | None = None) -> dict[str, Any]:
    """Train `model` in place on paired cubes lr (N, C, h, w) and hr (N, C, h*s, w*s), s = the model's scale.

    The cubes may stay on the CPU: each minibatch moves to the model's device (a model on CUDA trains there).
    Models without parameters (Bicubic) are returned untouched. Returns {"loss": per-step losses, "time_s"}.
    """
    lr, hr = _check_pairs(lr, hr)
    _check_model_scale(model, lr, hr)
    steps = check_int(steps, "steps", min=1)
    batch_size = check_int(batch_size, "batch_size", min=1)
    lr_rate = check_float(lr_rate, "lr_rate", min=0.0, min_open=True)
    weight_decay = check_float(weight_decay, "weight_decay", min=0.0)
    seed = check_seed(seed)
    if clip is not None:
        clip = check_float(clip, "clip", min=0.0, min_open=True)
    params = [p for p in model.parameters() if p.requires_grad]
    t0 = time.perf_counter()
    if not params:
        return {"loss": [], "time_s": 0.0}
    loss_fn = loss if loss is not None else PyramidJointLoss()
    opt = torch.optim.AdamW(params, lr=lr_rate, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine_lambda(steps, warmup_frac))
    gen = torch.Generator().manual_seed(seed)
    dev = _device(model)
    model.train()
    losses: list[float] = []
    for _ in tqdm(range(steps), desc=progress, disable=progress is None, leave=False, mininterval=2.0):
        idx = torch.randint(0, lr.shape[0], (batch_size,), generator=gen)
        _, outs = model(lr[idx].to(dev))
        value = loss_fn(outs, hr[idx].to(dev))
        opt.zero_grad(set_to_none=True)
        value.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()
        sched.step()
        losses.append(float(value.detach()))
        if not math.isfinite(losses[-1]):
            raise FloatingPointError(f"training loss became {losses[-1]} at step {len(losses)}")
    model.eval()
    return {"loss": losses, "time_s": time.perf_counter() - t0}


@torch.no_grad()
def predict(model: nn.Module, lr: Any, batch_size: int = 8) -> torch.Tensor:
    """model's sr for lr (N, C, h, w), in batches (on the model's device), clipped to [0, 1], on the CPU."""
    lr = check_tensor(lr, "lr", ndim=4)
    batch_size = check_int(batch_size, "batch_size", min=1)
    was = model.training
    dev = _device(model)
    model.eval()
    out = torch.cat([model(lr[i:i + batch_size].to(dev))[0].cpu() for i in range(0, lr.shape[0], batch_size)])
    model.train(was)
    return out.clamp(0.0, 1.0)


def evaluate(model: nn.Module, lr: Any, hr: Any, batch_size: int = 8, full: bool = True) -> dict[str, list[float]]:
    """Per-image metrics of model on (lr, hr): {"psnr", "ssim", "sam", "ergas", "cc", "rmse"} -> lists
    (`full=False`: only "psnr" and "sam"). hr must be lr upscaled by the model's `scale`."""
    lr, hr = _check_pairs(lr, hr)
    _check_model_scale(model, lr, hr)
    scale = hr.shape[-1] // lr.shape[-1]
    sr = predict(model, lr, batch_size)
    if not full:
        return {"psnr": psnr(sr, hr, reduction="none").tolist(), "sam": sam_degrees(sr, hr, reduction="none").tolist()}
    return {"psnr": psnr(sr, hr, reduction="none").tolist(), "ssim": ssim(sr, hr, reduction="none").tolist(),
            "sam": sam_degrees(sr, hr, reduction="none").tolist(),
            "ergas": ergas(sr, hr, scale, reduction="none").tolist(), "cc": cc(sr, hr, reduction="none").tolist(),
            "rmse": rmse(sr, hr, reduction="none").tolist()}
