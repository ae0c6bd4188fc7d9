"""A plain pre-training loop for next-token LMs (TinyLM / TinyLlama or any Hugging Face causal LM).

Order per optimizer step (spec sections 2.3 and 9): `grad_accum` micro-batches forward/backward (loss divided by
`grad_accum`), `GradScaler.unscale_` when a scaler is used, global grad-norm clipping of the *raw* gradient,
`optimizer.step()` (AdamWPower / GradPower transform the accumulated, unscaled, clipped gradient there, once),
scheduler step, `zero_grad`. Batches are random windows drawn with a caller-supplied `torch.Generator`, so two
optimizers see the same data order (paired design).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn
from tqdm.auto import tqdm

from icml26.common.text import random_windows
from icml26.common.train import evaluate_loss, lm_loss

__all__ = ["PretrainResult", "pretrain"]


@dataclass
class PretrainResult:
    """Curves of one run. Losses in nats/token (nats/byte for byte-level data)."""

    eval_steps: list[int] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)  # per optimizer step (mean over micro-batches)
    lr: list[float] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def final_val_loss(self) -> float:
        if not self.val_loss:
            raise ValueError("no validation loss was recorded (pass val_windows and eval_every)")
        return self.val_loss[-1]


def pretrain(
    model: nn.Module,
    optimizer_factory: Callable[[nn.Module], torch.optim.Optimizer],
    train_tokens: torch.Tensor,
    *,
    steps: int,
    batch_size: int,
    ctx: int,
    scheduler_factory: Callable[[torch.optim.Optimizer], torch.optim.lr_scheduler.LRScheduler] | None = None,
    clip: float | None = 1.0,
    grad_accum: int = 1,
    generator: torch.Generator | None = None,
    val_windows: torch.Tensor | None = None,
    eval_every: int = 0,
    autocast_dtype: torch.dtype | None = None,
    grad_scaler: torch.amp.GradScaler | None = None,
    device: str | torch.device | None = None,
    progress: bool | str = False,
) -> PretrainResult:
    """Train `model` for `steps` optimizer steps on random windows of `ctx + 1` tokens of `train_tokens`.

    Args:
        model: a TinyLM/TinyLlama or a `transformers` causal LM (e.g. `LlamaForCausalLM(LlamaConfig(...))`).
        optimizer_factory: `model -> optimizer`, e.g. `lambda m: AdamWPower(m.parameters(), lr=2e-3)`.
        train_tokens: 1-D long tensor of token ids.
        steps, batch_size, ctx: optimizer steps, windows per micro-batch, tokens of context per window.
        scheduler_factory: `optimizer -> LRScheduler` stepped once per optimizer step (e.g. `schedules.wsd`).
        clip: global grad-norm threshold applied to the raw (accumulated, unscaled) gradient; None = no clip.
        grad_accum: micro-batches per optimizer step.
        generator: `torch.Generator` for batch sampling (same seed -> same batches for every optimizer).
        val_windows: (N, T) fixed windows evaluated every `eval_every` steps and after the last step.
        autocast_dtype: e.g. torch.bfloat16 for mixed precision (None = full precision).
        grad_scaler: a `torch.amp.GradScaler` for fp16; gradients are unscaled before clipping/transforming.
        device: where to train (default: the model's device); train_tokens stay on the CPU until sampled.
        progress: show a tqdm bar (a string is used as its description).
    Returns:
        `PretrainResult` with the validation curve (`eval_steps`, `val_loss`), train losses and lrs.
    """
    for name, v in (("steps", steps), ("batch_size", batch_size), ("ctx", ctx), ("grad_accum", grad_accum)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if eval_every < 0:
        raise ValueError(f"eval_every must be >= 0, got {eval_every}")
    if not isinstance(train_tokens, torch.Tensor) or train_tokens.ndim != 1:
        raise ValueError("train_tokens must be a 1-D tensor of token ids")
    dev = torch.device(device) if device is not None else next(model.parameters()).device
    model.to(dev)
    optimizer = optimizer_factory(model)
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer_factory must return a torch.optim.Optimizer, got {type(optimizer).__name__}")
    scheduler = scheduler_factory(optimizer) if scheduler_factory is not None else None
    params = [p for g in optimizer.param_groups for p in g["params"]]
    res = PretrainResult()
    val = val_windows.to(dev) if val_windows is not None else None
    t0 = time.perf_counter()
    model.train()
    bar = tqdm(range(steps), desc=progress if isinstance(progress, str) else "pretrain", disable=not progress,
               leave=False)
    for step in bar:
        total = 0.0
        for _ in range(grad_accum):
            batch = random_windows(train_tokens, batch_size, ctx + 1, generator).to(dev)
            with torch.autocast(dev.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
                loss = lm_loss(model, batch) / grad_accum
            (grad_scaler.scale(loss) if grad_scaler is not None else loss).backward()
            total += float(loss.detach())
        if grad_scaler is not None:
            grad_scaler.unscale_(optimizer)  # phi_p is not scale-equivariant: transform unscaled grads
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(params, clip)
        res.lr.append(float(optimizer.param_groups[0]["lr"]))
        if grad_scaler is not None:
            grad_scaler.step(optimizer)
            grad_scaler.update()
        else:
            optimizer.step()
        if scheduler is not None:
            scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        res.train_loss.append(total)
        if val is not None and eval_every and ((step + 1) % eval_every == 0 or step + 1 == steps):
            with torch.autocast(dev.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
                res.val_loss.append(evaluate_loss(model, val))
            res.eval_steps.append(step + 1)
            bar.set_postfix(val=f"{res.val_loss[-1]:.4f}")
    res.wall_s = time.perf_counter() - t0
    return res
