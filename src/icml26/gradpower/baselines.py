"""The paper's optimizers behind one factory: the AdamW / Muon baselines and their GradPower versions.

Every arm takes the same hyperparameters (the AdamW-tuned ones, never retuned for the power arm, spec section 4):
    "adamw"           torch.optim.AdamW (the primary baseline, unwrapped)
    "adamwpower"      AdamWPower(power=p)                      (the method)
    "gradpower_adamw" GradPower(torch.optim.AdamW(...), p)     (the wrapper; equals "adamwpower")
    "muon_adamw"      Muon on hidden matrices + AdamW elsewhere (baseline of MuonPower)
    "muonpower"       the same with phi_p on every gradient     (MuonPower)
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from icml26.gradpower.optim import AdamWPower, GradPower, build_muon_adamw

__all__ = ["OPTIMIZERS", "make_optimizer"]

OPTIMIZERS = ("adamw", "adamwpower", "gradpower_adamw", "muon_adamw", "muonpower")


def make_optimizer(name: str, model: nn.Module, *, lr: float, betas: tuple[float, float] = (0.9, 0.95),
                   eps: float = 1e-8, weight_decay: float = 0.1, power: float = 1.2, power_eps: float = 0.0,
                   lr_muon: float = 0.02, **adamw_kwargs: Any) -> torch.optim.Optimizer:
    """Build optimizer `name` (one of `OPTIMIZERS`) over `model`'s parameters with shared hyperparameters."""
    if name not in OPTIMIZERS:
        raise ValueError(f"name must be one of {OPTIMIZERS}, got {name!r}")
    betas = tuple(betas)
    params = [p for p in model.parameters() if p.requires_grad]
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, **adamw_kwargs)
    if name == "adamwpower":
        return AdamWPower(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, power=power,
                          power_eps=power_eps, **adamw_kwargs)
    if name == "gradpower_adamw":
        base = torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, **adamw_kwargs)
        return GradPower(base, power=power, power_eps=power_eps)
    return build_muon_adamw(model, lr_muon=lr_muon, lr_adamw=lr, power=1.0 if name == "muon_adamw" else power,
                            power_eps=power_eps, weight_decay=weight_decay, betas=betas, eps=eps,
                            adamw_kwargs=adamw_kwargs or None)
