"""`torch.optim.AdamW` (+ `LambdaLR`) as its CPU single-tensor update, batched with `torch._foreach_*` ops.

The reproduction trains ~150 small ConvNets of 6 parameter tensors; torch's optimizer step (hooks, profiler
records, per-tensor Python loop) was ~10 % of a student's time. `AdamW.step(lr)` applies the same tensor
operations in the same order as `torch.optim.adamw`'s single-tensor path (the CPU default: no foreach, fused,
amsgrad, maximize or capturable), so the weights are bit for bit those of `torch.optim.AdamW` stepped by a
`LambdaLR` (tests/dataset_compression/test_fast_paths.py). On CPU each `_foreach_*` op is a loop of the
per-tensor op. Step counts are Python ints (torch keeps float32 tensors; both give the same float step).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


class AdamW:
    """AdamW on CPU parameters; `step(lr)` takes this step's learning rate (a scheduler's value)."""

    def __init__(self, params: Iterable[torch.Tensor], weight_decay: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.wd, (self.b1, self.b2), self.eps = float(weight_decay), (float(betas[0]), float(betas[1])), float(eps)
        self.m = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]
        self.v = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]
        self.t = [0] * len(self.params)

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self, lr: float) -> None:
        live = [i for i, p in enumerate(self.params) if p.grad is not None]  # torch skips a parameter without grad
        if not live:
            return
        ps = [self.params[i] for i in live]
        gs = [self.params[i].grad for i in live]
        ms = [self.m[i] for i in live]
        vs = [self.v[i] for i in live]
        for i in live:
            self.t[i] += 1
        ts = [float(self.t[i]) for i in live]
        b1, b2 = self.b1, self.b2
        if self.wd != 0:
            torch._foreach_mul_(ps, 1 - lr * self.wd)
        torch._foreach_lerp_(ms, gs, 1 - b1)
        torch._foreach_mul_(vs, b2)
        torch._foreach_addcmul_(vs, gs, gs, 1 - b2)
        denom = torch._foreach_sqrt(vs)
        torch._foreach_div_(denom, [(1 - b2 ** t) ** 0.5 for t in ts])
        torch._foreach_add_(denom, self.eps)
        torch._foreach_addcdiv_(ps, ms, denom, [-(lr / (1 - b1 ** t)) for t in ts])
