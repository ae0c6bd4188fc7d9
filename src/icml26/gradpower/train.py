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
from icml26.common.validation import check_float, check_int, check_tensor

__all__ = ["PretrainResult", "pretrain", "model_vocab_size", "token_ids"]


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
    on_eval: Callable[[int, nn.Module], None] | None = None,
) -> PretrainResult:
    """Train `model` for `steps` optimizer steps on random windows of `ctx + 1` tokens of `train_tokens`.

    Args:
        model: a TinyLM/TinyLlama or a `transformers` causal LM (e.g. `LlamaForCausalLM(LlamaConfig(...))`).
        optimizer_factory: `model -> optimizer`, e.g. `lambda m: AdamWPower(m.parameters(), lr=2e-3)`.
        train_tokens: 1-D tensor (or list) of integer token ids in [0, vocab) (checked against the model's vocab).
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
        on_eval: optional `on_eval(step, model)` called after every evaluation (e.g. to measure the gradient
            noise scale at those checkpoints); it must leave the model's parameters unchanged.
    Returns:
        `PretrainResult` with the validation curve (`eval_steps`, `val_loss`), train losses and lrs.
    Raises:
        TypeError: an optimizer / scheduler instance where a factory is expected, non-integer token ids, ...
        ValueError: token ids outside the model's vocabulary, non-integer or non-positive sizes, a stream too
            short for the context.
    """
    steps = check_int(steps, "steps", min=1)
    batch_size = check_int(batch_size, "batch_size", min=1)
    ctx = check_int(ctx, "ctx", min=1)
    grad_accum = check_int(grad_accum, "grad_accum", min=1)
    eval_every = check_int(eval_every, "eval_every", min=0)
    if clip is not None:
        clip = check_float(clip, "clip", min=0.0, min_open=True)
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (TinyLM or a transformers causal LM), got "
                        f"{type(model).__name__}")
    vocab = model_vocab_size(model)
    train_tokens = token_ids(train_tokens, "train_tokens", vocab, ndim=1)
    if len(train_tokens) <= ctx + 1:
        raise ValueError(f"train_tokens has {len(train_tokens)} tokens, too few for windows of ctx + 1 = {ctx + 1}")
    if val_windows is not None:
        val_windows = token_ids(val_windows, "val_windows", vocab, ndim=2)
        if val_windows.shape[1] < 2:
            raise ValueError(f"val_windows must be (N, T) with T >= 2, got {tuple(val_windows.shape)}")
    if optimizer_factory is None:
        raise TypeError("optimizer_factory must be a function model -> optimizer, got None")
    for name, f in (("optimizer_factory", optimizer_factory), ("scheduler_factory", scheduler_factory)):
        if isinstance(f, (torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler)):
            what = "optimizer" if name == "optimizer_factory" else "scheduler"
            raise TypeError(f"{name} must be a function building the {what}, got an already built "
                            f"{type(f).__name__}; pass e.g. `lambda m: AdamWPower(m.parameters(), lr=2e-3)`"
                            if what == "optimizer" else
                            f"{name} must be a function building the {what}, got an already built "
                            f"{type(f).__name__}; pass e.g. `lambda opt: wsd(opt, steps)`")
        if f is not None and not callable(f):
            raise TypeError(f"{name} must be callable, got {type(f).__name__}")
    if on_eval is not None and not callable(on_eval):
        raise TypeError(f"on_eval must be callable, got {type(on_eval).__name__}")
    if grad_scaler is not None and not isinstance(grad_scaler, torch.amp.GradScaler):
        raise TypeError(f"grad_scaler must be a torch.amp.GradScaler, got {type(grad_scaler).__name__}")
    dev = torch.device(device) if device is not None else next(model.parameters()).device
    model.to(dev)
    optimizer = optimizer_factory(model)
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer_factory must return a torch.optim.Optimizer, got {type(optimizer).__name__}")
    own = {id(p) for p in model.parameters()}
    if not any(id(p) in own for g in optimizer.param_groups for p in g["params"]):
        raise ValueError("optimizer_factory built an optimizer over none of the model's parameters")
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
            if on_eval is not None:
                on_eval(step + 1, model)
    res.wall_s = time.perf_counter() - t0
    return res


def model_vocab_size(model: nn.Module) -> int | None:
    """Vocabulary size of a TinyLM (`config.vocab_size`) or a HF causal LM (its input embedding rows)."""
    get = getattr(model, "get_input_embeddings", None)
    if callable(get):
        emb = get()
        if isinstance(emb, nn.Embedding):
            return emb.num_embeddings
    v = getattr(getattr(model, "config", None), "vocab_size", None)
    return v if isinstance(v, int) else None


def token_ids(x, name: str, vocab: int | None, *, ndim: int) -> torch.Tensor:
    """`x` (tensor, array or list) as a long tensor of token ids in [0, vocab), with `ndim` dimensions."""
    t = check_tensor(x, name, ndim=ndim, floating=False)
    if t.is_floating_point() or t.dtype == torch.bool or t.is_complex():
        raise TypeError(f"{name} must hold integer token ids, got dtype {t.dtype}")
    t = t.long()
    lo, hi = int(t.min()), int(t.max())
    if lo < 0 or (vocab is not None and hi >= vocab):
        bound = f"the model's vocabulary [0, {vocab})" if vocab is not None else "[0, inf)"
        raise ValueError(f"{name} holds token ids in [{lo}, {hi}], outside {bound}")
    return t
