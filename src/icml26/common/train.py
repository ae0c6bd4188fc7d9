"""A plain next-token training loop and evaluation for small causal LMs (TinyLM or Hugging Face)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from icml26.common.generation import lm_logits
from icml26.common.text import random_windows


def lm_loss(model, batch: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy (nats/token) of a (B, T) batch: predict batch[:, 1:] from batch[:, :-1]."""
    logits = lm_logits(model, batch[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), batch[:, 1:].reshape(-1))


@torch.no_grad()
def evaluate_loss(model, windows: torch.Tensor, batch_size: int = 64) -> float:
    """Mean next-token loss (nats/token) over all positions of fixed (N, T) windows."""
    was = model.training
    model.eval()
    total, count = 0.0, 0
    for i in range(0, len(windows), batch_size):
        b = windows[i:i + batch_size]
        total += float(lm_loss(model, b)) * b[:, 1:].numel()
        count += b[:, 1:].numel()
    model.train(was)
    return total / count


@dataclass
class TrainHistory:
    steps: list[int] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    eval_steps: list[int] = field(default_factory=list)
    eval_loss: list[float] = field(default_factory=list)


def warmup_cosine(total_steps: int, warmup_frac: float = 0.05, min_ratio: float = 0.0) -> Callable[[int], float]:
    """LR multiplier: linear warmup over `warmup_frac` of the steps, then cosine down to `min_ratio`."""
    warm = max(1, int(round(warmup_frac * total_steps)))

    def f(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        t = min(1.0, (step - warm) / max(1, total_steps - warm))
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * t))

    return f


def train_lm(
    model,
    train_tokens: torch.Tensor,
    *,
    steps: int,
    batch_size: int,
    ctx: int,
    optimizer: torch.optim.Optimizer,
    lr_lambda: Callable[[int], float] | None = None,
    clip: float | None = 1.0,
    generator: torch.Generator | None = None,
    eval_windows: torch.Tensor | None = None,
    eval_every: int = 0,
    before_step: Callable[[], None] | None = None,
    progress: bool | str = False,
) -> TrainHistory:
    """Train on random windows of `ctx + 1` tokens from a 1-D stream.

    Order per step: forward, backward, clip global grad norm to `clip`, `before_step()` (a hook, e.g. a
    gradient transform), `optimizer.step()`, scheduler step. `progress` may be a description string.
    """
    if steps < 1 or batch_size < 1 or ctx < 1:
        raise ValueError(f"steps, batch_size and ctx must be >= 1, got {steps}, {batch_size}, {ctx}")
    sched = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda) if lr_lambda is not None else None
    hist = TrainHistory()
    params = [p for g in optimizer.param_groups for p in g["params"]]
    model.train()
    bar = tqdm(range(steps), desc=progress if isinstance(progress, str) else "train", disable=not progress,
               leave=False)
    for step in bar:
        batch = random_windows(train_tokens, batch_size, ctx + 1, generator)
        loss = lm_loss(model, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(params, clip)
        if before_step is not None:
            before_step()
        optimizer.step()
        if sched is not None:
            sched.step()
        hist.steps.append(step + 1)
        hist.train_loss.append(float(loss.detach()))
        if eval_windows is not None and eval_every and ((step + 1) % eval_every == 0 or step + 1 == steps):
            hist.eval_steps.append(step + 1)
            hist.eval_loss.append(evaluate_loss(model, eval_windows))
            bar.set_postfix(val=f"{hist.eval_loss[-1]:.4f}")
    return hist
