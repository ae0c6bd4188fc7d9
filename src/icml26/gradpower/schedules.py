"""Learning-rate schedules of the paper's recipes (spec section 2.3), as `LambdaLR` schedulers.

- WSD (warmup-stable-decay): linear warmup over `warmup_frac` of the steps, constant lr_max, then linear decay
  to `min_ratio * lr_max` over the last `decay_frac` (authors' script: decay over the last third, to lr_max/10;
  our CPU reproduction: last 20 %, to 0).
- Cosine with warmup: linear warmup, then cosine decay to `min_ratio * lr_max` (paper: lr_max / 10).

The multiplier for optimizer step s (0-based, i.e. the scheduler's count of steps already taken) is returned by
`wsd_lambda(...)(s)` / `cosine_lambda(...)(s)`; warmup gives (s + 1) / n_warmup so the first step has lr > 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR

from icml26.common.validation import check_int

__all__ = ["wsd", "cosine_with_warmup", "wsd_lambda", "cosine_lambda"]


def _check(total_steps: int, warmup_frac: float, min_ratio: float, decay_frac: float | None = None) -> None:
    check_int(total_steps, "total_steps", min=1)  # 10.0 is 10; 10.5 and bools are refused
    if not 0.0 <= warmup_frac < 1.0:
        raise ValueError(f"warmup_frac must be in [0, 1), got {warmup_frac}")
    if not 0.0 <= min_ratio <= 1.0:
        raise ValueError(f"min_ratio must be in [0, 1], got {min_ratio}")
    if decay_frac is not None:
        if not 0.0 <= decay_frac <= 1.0:
            raise ValueError(f"decay_frac must be in [0, 1], got {decay_frac}")
        if warmup_frac + decay_frac > 1.0 + 1e-12:
            raise ValueError(f"warmup_frac + decay_frac must be <= 1, got {warmup_frac} + {decay_frac}")


def wsd_lambda(total_steps: int, warmup_frac: float = 0.05, decay_frac: float = 0.2,
               min_ratio: float = 0.1) -> Callable[[int], float]:
    """LR multiplier of the WSD schedule (see module docstring)."""
    _check(total_steps, warmup_frac, min_ratio, decay_frac)
    total_steps = int(total_steps)
    n_warm = int(round(warmup_frac * total_steps))
    n_decay = int(round(decay_frac * total_steps))
    decay_start = total_steps - n_decay

    def f(step: int) -> float:
        if step < n_warm:
            return (step + 1) / n_warm
        if step < decay_start:
            return 1.0
        t = min(1.0, (step - decay_start) / max(1, n_decay))
        return 1.0 - (1.0 - min_ratio) * t

    return f


def cosine_lambda(total_steps: int, warmup_frac: float = 0.05, min_ratio: float = 0.1) -> Callable[[int], float]:
    """LR multiplier of linear warmup + cosine decay to `min_ratio`."""
    _check(total_steps, warmup_frac, min_ratio)
    total_steps = int(total_steps)
    n_warm = int(round(warmup_frac * total_steps))

    def f(step: int) -> float:
        if step < n_warm:
            return (step + 1) / n_warm
        t = min(1.0, (step - n_warm) / max(1, total_steps - n_warm))
        return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * t))

    return f


def wsd(optimizer: Optimizer, total_steps: int, warmup_frac: float = 0.05, decay_frac: float = 0.2,
        min_ratio: float = 0.1) -> LambdaLR:
    """Warmup-stable-decay `LambdaLR` on `optimizer` (any torch optimizer, `GradPower` included)."""
    return LambdaLR(optimizer, wsd_lambda(total_steps, warmup_frac, decay_frac, min_ratio))


def cosine_with_warmup(optimizer: Optimizer, total_steps: int, warmup_frac: float = 0.05,
                       min_ratio: float = 0.1) -> LambdaLR:
    """Linear warmup then cosine decay to `min_ratio * lr` as a `LambdaLR` on `optimizer`."""
    return LambdaLR(optimizer, cosine_lambda(total_steps, warmup_frac, min_ratio))
