"""Pyramid Hierarchical Reconstruction Joint Loss (spec 2, reconstructed: the paper's weights are unknown).

L = L1(X^_J, X) + sum_{l<J} lambda_l L1(X^_l, D_{s_l}(X)) + mu SAM(X^_J, X)

with D_{s_l} the same degradation that made the LR input (`icml26.ssdcn.data.degrade`), applied to the HR
target down to level l's resolution, lambda_l = 1 and mu = 0.1 (SAM in radians) by default.
`balance="magnitude"` rescales each intermediate term to the final L1's magnitude as SCPSN did:
L1_J + lambda_l L_l / (L_l / L1_J).detach().
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from icml26.common.validation import check_array, check_choice, check_float, check_tensor
from icml26.ssdcn.data import degrade

__all__ = ["PyramidJointLoss", "sam_loss"]


def sam_loss(pred: torch.Tensor, target: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Differentiable mean spectral angle (radians) over pixels of (B, C, H, W) tensors."""
    cos = (pred * target).sum(dim=1) / (pred.norm(dim=1) * target.norm(dim=1)).clamp_min(eps)
    return torch.arccos(cos.clamp(-1.0 + 1e-7, 1.0 - 1e-7)).mean()


class PyramidJointLoss(nn.Module):
    """Joint loss over the pyramid's outputs.

    Args:
        weights: lambda_l for the J-1 intermediate levels (coarse to fine); None = 1 for each (the length is
            then taken from the outputs).
        sam_weight: mu, the weight of the final output's spectral angle (radians).
        balance: "fixed" (lambda_l as given) or "magnitude" (SCPSN's magnitude matching).
        kernel: the degradation kernel of the intermediate targets (must match the LR input's).

    `forward(outputs, target)`: outputs is the list of J estimates (coarse to fine, the last at target's size,
    each a factor 2 finer than the previous) or one tensor; target (B, C, H, W). Returns a scalar tensor.
    """

    def __init__(self, weights: Sequence[float] | None = None, sam_weight: float = 0.1, balance: str = "fixed",
                 kernel: str = "bicubic") -> None:
        super().__init__()
        self.weights = None if weights is None else [float(w) for w in check_array(weights, "weights", ndim=1,
                                                                                    min_size=0)]
        if self.weights is not None and any(w < 0 for w in self.weights):
            raise ValueError(f"weights must be >= 0, got {self.weights}")
        self.sam_weight = check_float(sam_weight, "sam_weight", min=0.0)
        self.balance = check_choice(balance, "balance", ("fixed", "magnitude"))
        self.kernel = check_choice(kernel, "kernel", ("bicubic", "gaussian"))

    def forward(self, outputs: torch.Tensor | Sequence[torch.Tensor], target: torch.Tensor) -> torch.Tensor:
        if isinstance(outputs, torch.Tensor):
            outputs = [outputs]
        if not isinstance(outputs, (list, tuple)) or not outputs:
            raise TypeError("outputs must be a tensor or a non-empty list of tensors")
        target = check_tensor(target, "target", ndim=4)
        outs = [check_tensor(o, f"outputs[{i}]", ndim=4) for i, o in enumerate(outputs)]
        final = outs[-1]
        if final.shape != target.shape:
            raise ValueError(f"outputs[-1] must have target's shape {tuple(target.shape)}, got {tuple(final.shape)}")
        weights = self.weights if self.weights is not None else [1.0] * (len(outs) - 1)
        if len(weights) != len(outs) - 1:
            raise ValueError(f"weights has {len(weights)} entries for {len(outs) - 1} intermediate outputs")
        main = F.l1_loss(final, target)
        loss = main
        for lvl, (o, w) in enumerate(zip(outs[:-1], weights)):
            factor = 2 ** (len(outs) - 1 - lvl)
            if o.shape[0] != target.shape[0] or o.shape[1] != target.shape[1] or \
                    tuple(o.shape[-2:]) != (target.shape[-2] // factor, target.shape[-1] // factor):
                raise ValueError(f"outputs[{lvl}] must be target downsampled by {factor}, got {tuple(o.shape)}")
            if w == 0:
                continue
            with torch.no_grad():
                sub = degrade(target, factor, self.kernel)
            aux = F.l1_loss(o, sub)
            if self.balance == "magnitude":
                aux = aux / (aux / main).detach().clamp_min(1e-12)
            loss = loss + w * aux
        if self.sam_weight:
            loss = loss + self.sam_weight * sam_loss(final, target)
        return loss
