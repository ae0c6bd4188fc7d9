"""The one training loop of the objective (spec section 2), shared by the estimator (transfer.py, vectors) and the
paper-scale image path (scale.py, images under DDP):

    L = lambda_DM L_DM(f#P_x, P_y) + lambda_cyc ||g(f(x)) - x|| + lambda_a l(f(x_a), y_a) + lambda_J(t) R_J(.)

Per step: draw a batch (x, y); with a discriminator, one discriminator step (GAN loss on real y and detached f(x),
plus R1 on the real samples); then one translator step on the sum above. L_DM is the generator's GAN loss when a
discriminator is given, else the (grouped) multi-bandwidth MMD^2. The callers own the networks, optimizers, batch
sampler and logging (EMA, DDP reduction) through `sample` and `on_step`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from icml26.sparse_transfer.losses import DEFAULT_BANDWIDTHS, GANLoss, anchor_loss, group_mmd2, r1_penalty

__all__ = ["TransferObjective", "train_loop"]

Batch = tuple[torch.Tensor, torch.Tensor]


@dataclass
class TransferObjective:
    """The terms of the objective and the modules they act on.

    f: forward translator (may be DDP-wrapped); g: inverse translator or None; disc: discriminator or None (then
    L_DM is MMD^2 with `bandwidths`, over `n_groups` equal blocks of the batch for DIMENSION); penalty: a
    `JacobianSparsityPenalty` or None; jac_on: "forward" | "inverse" | "both"; cyc_kind / anchor_kind: "mse" | "l1";
    anchor: None or (x_a, y_a) tensors (joint anchor loss).
    """

    f: nn.Module
    g: nn.Module | None = None
    disc: nn.Module | None = None
    gan: GANLoss | None = None
    bandwidths: Sequence[float] = DEFAULT_BANDWIDTHS
    n_groups: int = 1
    lambda_dm: float = 1.0
    lambda_cyc: float = 0.0
    cyc_kind: str = "mse"
    lambda_anchor: float = 0.0
    anchor: tuple[torch.Tensor, torch.Tensor] | None = None
    anchor_kind: str = "mse"
    penalty: nn.Module | None = None
    jac_on: str = "forward"
    r1_weight: float = 1.0


def train_loop(obj: TransferObjective, opt: torch.optim.Optimizer, sample: Callable[[int], Batch], steps: int,
               lambda_jac: Callable[[int], float] = lambda step: 0.0, d_opt: torch.optim.Optimizer | None = None,
               on_step: Callable[[int, dict[str, torch.Tensor]], None] | None = None) -> dict[str, list[float]]:
    """Run `steps` steps; returns the per-step history {"total", "dm", "cyc", "anchor", "jac", "d"} (floats).

    `sample(step)` returns the batch (x, y); `lambda_jac(step)` the penalty weight of that step (a ramp);
    `on_step(step, losses)` runs after the optimizer step (EMA update, logging) with the step's loss tensors.
    Raises FloatingPointError when the loss stops being finite.
    """
    if obj.disc is not None and (obj.gan is None or d_opt is None):
        raise ValueError("a discriminator needs gan (GANLoss) and d_opt")
    hist: dict[str, list[float]] = {k: [] for k in ("total", "dm", "cyc", "anchor", "jac", "d")}
    bw = tuple(float(h) for h in obj.bandwidths)
    f, g, disc = obj.f, obj.g, obj.disc
    use_anchor = obj.anchor is not None and obj.lambda_anchor > 0
    use_cyc = g is not None and obj.lambda_cyc > 0
    for step in range(int(steps)):
        xb, yb = sample(step)
        yb = yb.detach()
        zero = torch.zeros((), device=xb.device)
        d_loss = zero
        if disc is not None:  # discriminator step: GAN loss + R1 on real samples
            yr = yb.clone().requires_grad_(True)
            d_real = disc(yr)
            with torch.no_grad():
                fake = f(xb)
            d_loss = obj.gan(d_real, True) + obj.gan(disc(fake), False)
            if obj.r1_weight > 0:
                d_loss = d_loss + float(obj.r1_weight) * r1_penalty(d_real, yr)
            d_opt.zero_grad(set_to_none=True)
            d_loss.backward()
            d_opt.step()
        fx = f(xb)
        dm = obj.gan(disc(fx), True) if disc is not None else group_mmd2(fx, yb, obj.n_groups, bw)
        loss = float(obj.lambda_dm) * dm
        cyc = zero
        if use_cyc:
            r = g(fx) - xb
            cyc = (r ** 2).mean() if obj.cyc_kind == "mse" else r.abs().mean()
            loss = loss + float(obj.lambda_cyc) * cyc
        anc = zero
        if use_anchor:
            anc = anchor_loss(f, obj.anchor[0], obj.anchor[1], obj.anchor_kind)
            loss = loss + float(obj.lambda_anchor) * anc
        jac = zero
        lam_j = float(lambda_jac(step))
        if obj.penalty is not None and lam_j > 0:
            if obj.jac_on in ("forward", "both"):
                jac = jac + obj.penalty(f, xb)
            if obj.jac_on in ("inverse", "both") and g is not None:
                jac = jac + obj.penalty(g, yb)
            loss = loss + lam_j * jac
        opt.zero_grad(set_to_none=True)
        if d_opt is not None:
            d_opt.zero_grad(set_to_none=True)  # the translator's GAN loss also reached D's grads; D steps above only
        loss.backward()
        opt.step()
        if not torch.isfinite(loss):
            raise FloatingPointError(f"training diverged at step {step} (loss {float(loss)}); lower lr")
        rec = {"total": loss, "dm": dm, "cyc": cyc, "anchor": anc, "jac": jac, "d": d_loss}
        for k, v in rec.items():
            hist[k].append(float(v.detach()))
        if on_step is not None:
            on_step(step, rec)
    return hist
