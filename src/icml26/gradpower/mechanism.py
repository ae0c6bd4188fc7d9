"""Measurements behind the paper's mechanism (section 4), taken *through the optimizer* and on a real model.

1. `optimizer_drift`: AdamWPower fed synthetic gradient streams of known signal and noise. Each coordinate of a
   parameter receives g_t = mu + sigma * u_t, u_t ~ U(-1, 1) i.i.d.; after a burn-in the mean update per step,
   divided by the learning rate, is Adam's stationary normalised drift E[m / (sqrt(v) + eps)]. With beta2 close
   to 1 (0.999: v averages ~1000 steps) this equals r(p) = E[phi_p(g)] / sqrt(E[phi_p(g)^2]) of
   `theory.normalized_drift` up to O(1 - beta2) corrections, so the measured values can be compared with the
   closed form. A wrong transform (another power, no transform, a transform applied after the moments) moves the
   measured drift off the closed form, which is what claim M checks.
2. `gradient_noise_scale`: McCandlish et al.'s simple noise scale B_noise = tr(Sigma) / |G|^2 from per-example
   gradients at the current parameters (an "example" is one training window). The batch gradient of B examples
   is noise-dominated in aggregate when B_noise / B > 1, the regime the paper's argument for p > 1 is about.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from icml26.common.train import lm_loss
from icml26.common.validation import check_float, check_int, check_seed, check_tensor
from icml26.gradpower.optim import AdamWPower

__all__ = ["optimizer_drift", "gradient_noise_scale"]

OptimizerFactory = Callable[[list[dict[str, Any]], float, tuple[float, float], float], torch.optim.Optimizer]


def _adamwpower(groups: list[dict[str, Any]], lr: float, betas: tuple[float, float], eps: float):
    return AdamWPower(groups, lr=lr, betas=betas, eps=eps, weight_decay=0.0)


@torch.no_grad()
def optimizer_drift(
    regimes: Sequence[tuple[float, float]],
    powers: Sequence[float],
    *,
    n_coords: int = 4096,
    n_steps: int = 2000,
    burn_in: int = 500,
    seed: int = 0,
    lr: float = 1e-3,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
    optimizer_factory: OptimizerFactory | None = None,
    per_coord: bool = False,
) -> dict[str, Any]:
    """Measured normalised drift of AdamWPower for every (mu, sigma) regime and power p.

    One float64 parameter per power p (its own param group and `power`) holds `n_coords` coordinates per regime;
    every parameter gets the same uniform draws u_t (paired across p and regimes) every step.

    Args:
        regimes: (mu, sigma) pairs, sigma >= 0 (gradient = mu + sigma * U(-1, 1)).
        powers: exponents p > 0.
        n_coords, n_steps, burn_in: coordinates per parameter, measured steps, unmeasured steps before them.
        seed: seed of the draws.
        lr, betas, eps: the optimizer's hyperparameters (weight decay 0).
        optimizer_factory: `(param_groups, lr, betas, eps) -> Optimizer`; default AdamWPower. The groups carry
            "power" keys; tests pass a deliberately wrong factory to show the check can fail.
        per_coord: also return "per_coord": {regime_key: {str(p): float64 array of the per-coordinate drifts}}
            (independent draws per coordinate, shared across p: the unit of claim M's intervals).
    Returns:
        {"drift": {regime_key: {str(p): mean drift}}, "se": {...: standard error over coordinates}} with
        regime_key f"mu={mu},sigma={sigma}"; drift in units of lr per step (dimensionless, in [-1, 1]).
    """
    regimes = [(check_float(m, "mu"), check_float(s, "sigma", min=0.0)) for m, s in regimes]
    powers = [check_float(p, "powers", min=0.0, min_open=True) for p in powers]
    if not regimes or not powers:
        raise ValueError("regimes and powers must be non-empty")
    n_coords = check_int(n_coords, "n_coords", min=2)
    n_steps = check_int(n_steps, "n_steps", min=1)
    burn_in = check_int(burn_in, "burn_in", min=0)
    lr = check_float(lr, "lr", min=0.0, min_open=True)
    gen = torch.Generator().manual_seed(check_seed(seed))
    R = len(regimes)
    mu_vec = torch.tensor([m for m, _ in regimes], dtype=torch.float64).repeat_interleave(n_coords)
    sigma_vec = torch.tensor([s for _, s in regimes], dtype=torch.float64).repeat_interleave(n_coords)
    # one parameter per power holding every regime's coordinates back to back (fewer groups: faster steps)
    params = {p: torch.zeros(R * n_coords, dtype=torch.float64, requires_grad=True) for p in powers}
    groups = [{"params": [t], "power": p} for p, t in params.items()]
    opt = (optimizer_factory or _adamwpower)(groups, lr, tuple(betas), eps)
    start: dict = {}
    for step in range(burn_in + n_steps):
        if step == burn_in:
            start = {p: t.detach().clone() for p, t in params.items()}
        u = torch.rand(n_coords, generator=gen, dtype=torch.float64).mul_(2.0).sub_(1.0).repeat(R)
        for t in params.values():
            t.grad = u * sigma_vec + mu_vec  # a fresh tensor: the transform works in place on .grad
        opt.step()
    drift: dict[str, dict[str, float]] = {}
    se: dict[str, dict[str, float]] = {}
    rows: dict[str, dict[str, Any]] = {}
    for p, t in params.items():
        moved = ((start[p] - t.detach()) / (lr * n_steps)).view(R, n_coords)  # theta moves against g
        for (mu, sigma), row in zip(regimes, moved):
            key = f"mu={mu:g},sigma={sigma:g}"
            drift.setdefault(key, {})[f"{p:g}"] = float(row.mean())
            se.setdefault(key, {})[f"{p:g}"] = float(row.std() / math.sqrt(n_coords))
            if per_coord:
                rows.setdefault(key, {})[f"{p:g}"] = row.numpy().copy()
    return {"drift": drift, "se": se, **({"per_coord": rows} if per_coord else {})}


def _noise_stats(s1: torch.Tensor, s2: torch.Tensor, n: int, batch_size: int) -> dict[str, float]:
    """B_noise and friends from the per-coordinate sums of n per-example gradients and of their squares."""
    mean = s1 / n
    var = (s2 - n * mean * mean).clamp_min(0.0) / (n - 1)  # unbiased per-coordinate variance
    mu2 = mean * mean - var / n  # unbiased squared mean per coordinate
    trace, g2 = float(var.sum()), float(mu2.sum())
    b_noise = trace / g2 if g2 > 0 else float("inf")
    return {"b_noise": b_noise, "noise_to_signal": b_noise / batch_size, "grad_norm_sq": g2, "trace_cov": trace,
            "excess_noise": trace / batch_size - g2,
            "frac_coords_noise_dominated": float((var / batch_size > mu2).double().mean())}


def gradient_noise_scale(model: nn.Module, windows: torch.Tensor, batch_size: int, *,
                         n_groups: int = 8) -> dict[str, float]:
    """Simple gradient noise scale B_noise = tr(Sigma) / |G|^2 at the model's current parameters.

    Args:
        model: a TinyLM / HF causal LM; its `.grad`s are left as they were.
        windows: (n, T + 1) training windows, n >= 2, one "example" each (next-token loss over T predictions).
        batch_size: the training batch size B the ratio is reported for.
        n_groups: groups of examples for the leave-one-group-out jackknife standard error of B_noise / B
            (used when n >= 2 * n_groups).
    Returns:
        b_noise (examples), noise_to_signal = b_noise / B (> 1: the batch gradient is noise-dominated in
        aggregate; inf when the unbiased |G|^2 estimate is <= 0, i.e. no signal above the estimate's noise),
        noise_to_signal_se (jackknife; nan without enough examples or with an infinite estimate),
        excess_noise = tr(Sigma)/B - |G|^2 (> 0 exactly when noise_to_signal > 1; linear in the sums, so its
        jackknife SE excess_noise_se is the one to test the regime with),
        frac_coords_noise_dominated (coordinates whose batch-gradient noise variance sigma_i^2 / B exceeds
        their squared mean mu_i^2, both estimated without bias), grad_norm_sq (|G|^2, unbiased) and
        trace_cov (tr(Sigma)).
    """
    windows = check_tensor(windows, "windows", ndim=2, floating=False)
    if windows.is_floating_point() or windows.dtype == torch.bool:
        raise TypeError(f"windows must hold integer token ids, got dtype {windows.dtype}")
    if windows.shape[1] < 2:
        raise ValueError(f"windows must have at least 2 tokens per row (T + 1), got shape {tuple(windows.shape)}")
    vocab = getattr(getattr(model, "config", None), "vocab_size", None)
    if windows.numel() and (int(windows.min()) < 0 or (vocab is not None and int(windows.max()) >= int(vocab))):
        raise ValueError(f"windows must hold token ids in [0, vocab_size={vocab}), got values in "
                         f"[{int(windows.min())}, {int(windows.max())}]")
    n = windows.shape[0]
    if n < 2:
        raise ValueError(f"windows must hold at least 2 examples, got {n}")
    batch_size = check_int(batch_size, "batch_size", min=1)
    n_groups = check_int(n_groups, "n_groups", min=2)
    params = [p for p in model.parameters() if p.requires_grad]
    saved = [None if p.grad is None else p.grad.detach().clone() for p in params]
    total = sum(p.numel() for p in params)
    groups = n_groups if n >= 2 * n_groups else 1
    dev = params[0].device  # a model trained on CUDA is measured there
    windows = windows.to(dev)
    s1 = torch.zeros(groups, total, dtype=torch.float64, device=dev)
    s2 = torch.zeros(groups, total, dtype=torch.float64, device=dev)
    was = model.training
    model.train()
    for i in range(n):
        model.zero_grad(set_to_none=True)
        lm_loss(model, windows[i:i + 1]).backward()
        g = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params]).double()
        s1[i % groups] += g
        s2[i % groups] += g * g
    model.train(was)
    for p, g in zip(params, saved):
        p.grad = g
    out = _noise_stats(s1.sum(0), s2.sum(0), n, batch_size)
    out["noise_to_signal_se"] = out["excess_noise_se"] = float("nan")
    if groups > 1:
        sizes = [len(range(k, n, groups)) for k in range(groups)]
        loo = [_noise_stats(s1.sum(0) - s1[k], s2.sum(0) - s2[k], n - sizes[k], batch_size) for k in range(groups)]

        def jackknife(vals: list[float]) -> float:
            if not all(math.isfinite(v) for v in vals):
                return float("nan")
            m = sum(vals) / groups
            return math.sqrt((groups - 1) / groups * sum((v - m) ** 2 for v in vals))

        if math.isfinite(out["noise_to_signal"]):
            out["noise_to_signal_se"] = jackknife([d["noise_to_signal"] for d in loo])
        out["excess_noise_se"] = jackknife([d["excess_noise"] for d in loo])
    return out
