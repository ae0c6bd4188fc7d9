"""Baselines of the paper (spec section 4), behind the USB interface: fit / velocity / drift / growth /
birth_death_rates / simulate / save / load.

Simulation-free (the USB estimator with another coupling and fewer heads):
    SF2M    balanced entropic OT (eps = 2 sigma^2 Delta) + Brownian bridges, flow + score matching; stochastic
            and mass-conserving. Equals USB with r_i = 1 and no growth net.
    OTCFM   exact (balanced) OT pairs, straight paths of constant width sigma (default 0.1), ODE, no growth.
    UOTCFM  pairs from an unbalanced plan with both marginals KL-relaxed (eps = 0.05 on the max-normalised
            cost, reg_m = 1, torchcfm's OTPlanSampler("unbalanced") defaults), otherwise OT-CFM; it reweights
            pairs but cannot predict mass.
Simulation-based:
    TIGONLike     Wasserstein-Fisher-Rao dynamic unbalanced OT: neural v and g trained by simulating
                  weighted particles from X_0; loss = sum_k [Sinkhorn divergence(normalised particles, X_k)
                  + mass_weight (W_k / M_k - 1)^2] + energy_weight int (|v|^2 + alpha g^2) rho dt.
    DeepRUOTLike  the same with stochastic particles (diffusion sigma) during training and simulation.
                  DeepRUOT also learns a score from the fitted dynamics; ours does not (a simplification).
These are in-house re-implementations (torchcfm / TIGON / DeepRUOT are not dependencies).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from icml26.common.validation import check_array, check_float, check_int, check_seed
from icml26.usb.bridge import (
    MLP,
    FittedDynamics,
    UnbalancedSchrodingerBridge,
    _check_hidden,
    _read_snapshots,
    check_device,
)

__all__ = ["SF2M", "OTCFM", "UOTCFM", "TIGONLike", "DeepRUOTLike", "sinkhorn_divergence"]


class SF2M(UnbalancedSchrodingerBridge):
    """[SF]^2M (Tong et al., AISTATS 2024): balanced entropic OT + Brownian bridge, flow and score matching.

    Same arguments as UnbalancedSchrodingerBridge (reg_m, reference_rates and growth arguments are unused).
    """

    _coupling = "entropic"
    _learn_growth = False
    _default_mode = "discrete"  # SDE particles; no birth/death events (mass-conserving)


class OTCFM(UnbalancedSchrodingerBridge):
    """OT-CFM (Tong et al., TMLR 2024): exact OT pairs, straight interpolants x_tau = mu + sigma eps, ODE.

    sigma is the Gaussian path width (default 0.1); simulation is deterministic in every mode.
    """

    _coupling = "exact"
    _bridge = False
    _learn_score = False
    _learn_growth = False
    _default_mode = "ode"

    def __init__(self, sigma: float = 0.1, **kwargs: Any):
        super().__init__(sigma=sigma, **kwargs)


class UOTCFM(OTCFM):
    """Unbalanced OT-CFM (Eyring et al., ICLR 2024): pairs ~ an unbalanced plan (both marginals relaxed).

    Args: uot_eps (0.05, on the max-normalised cost) and reg_m (1.0) of the unbalanced plan; the rest as OTCFM.
    """

    _coupling = "unbalanced"

    def __init__(self, sigma: float = 0.1, uot_eps: float = 0.05, **kwargs: Any):
        self.uot_eps = uot_eps
        super().__init__(sigma=sigma, **kwargs)

    def _validate_params(self) -> None:
        super()._validate_params()
        self.uot_eps = check_float(self.uot_eps, "uot_eps", min=0.0, min_open=True)

    def _extra_params(self) -> dict[str, Any]:
        return {"uot_eps": self.uot_eps}


# ------------------------------------------------------------------------------------------ simulation-based
def _sinkhorn_cost(x: torch.Tensor, a: torch.Tensor, y: torch.Tensor, b: torch.Tensor, eps: float,
                   n_iter: int) -> torch.Tensor:
    """Entropic OT_eps(a, b) with squared-Euclidean cost/2 in its dual form; Sinkhorn iterations run without
    gradients and one final soft-c-transform carries them (envelope theorem, as in geomloss)."""
    c = 0.5 * torch.cdist(x, y) ** 2
    la, lb = torch.log(a), torch.log(b)
    with torch.no_grad():
        f = torch.zeros_like(a)
        g = torch.zeros_like(b)
        cd = c.detach()
        for _ in range(n_iter):
            f = -eps * torch.logsumexp(lb[None, :] + (g[None, :] - cd) / eps, dim=1)
            g = -eps * torch.logsumexp(la[:, None] + (f[:, None] - cd) / eps, dim=0)
    f = -eps * torch.logsumexp(lb[None, :] + (g[None, :] - c) / eps, dim=1)
    g = -eps * torch.logsumexp(la[:, None] + (f.detach()[:, None] - c) / eps, dim=0)
    return (a * f).sum() + (b * g).sum()


def sinkhorn_divergence(x: torch.Tensor, a: torch.Tensor, y: torch.Tensor, b: torch.Tensor, eps: float = 0.05,
                        n_iter: int = 50) -> torch.Tensor:
    """Debiased Sinkhorn divergence S_eps(a, b) = OT(a,b) - OT(a,a)/2 - OT(b,b)/2 between weighted point
    clouds (weights each summing to 1); differentiable in x and a."""
    return (_sinkhorn_cost(x, a, y, b, eps, n_iter) - 0.5 * _sinkhorn_cost(x, a, x.detach(), a.detach(), eps, n_iter)
            - 0.5 * _sinkhorn_cost(y, b, y, b, eps, n_iter).detach())


class TIGONLike(FittedDynamics):
    """TIGON-like WFR baseline (Sha et al. 2024): neural ODE for velocity v and growth g, trained by
    simulating weighted particles (simulation-based, slow).

    Args:
        hidden: MLP widths (64, 64, 64); n_iter: 600; n_particles: 256 weighted particles from X_0;
        steps_per_unit: Euler steps per unit time (20); lr: 1e-3; energy_weight: 0.01 (lambda);
        growth_energy: alpha in |v|^2 + alpha g^2 (1.0); mass_weight: 1.0; ot_eps: 0.05 (Sinkhorn blur^2);
        sinkhorn_iter: 30; n_data: cells per snapshot used in each OT loss (256); sigma: training/simulation
        diffusion (0 for TIGON; DeepRUOTLike uses > 0); reference_rates: split of g for discrete simulation.
    The fitted fields, `simulate` (default mode "weighted"; "ode" is the same for TIGON; "discrete" through
    the birth/death split of g) and save/load are USB's (`FittedDynamics`).
    """

    _stochastic = False
    _default_mode = "weighted"

    def __init__(self, hidden: Sequence[int] = (64, 64, 64), n_iter: int = 600, n_particles: int = 256,
                 steps_per_unit: int = 20, lr: float = 1e-3, energy_weight: float = 0.01,
                 growth_energy: float = 1.0, mass_weight: float = 1.0, ot_eps: float = 0.05,
                 sinkhorn_iter: int = 30, n_data: int = 256, sigma: float = 0.0,
                 reference_rates: tuple[float, float] = (0.0, 0.0), seed: int = 0, device: str = "cpu",
                 progress: bool = False):
        self.hidden = hidden
        self.n_iter = n_iter
        self.n_particles = n_particles
        self.steps_per_unit = steps_per_unit
        self.lr = lr
        self.energy_weight = energy_weight
        self.growth_energy = growth_energy
        self.mass_weight = mass_weight
        self.ot_eps = ot_eps
        self.sinkhorn_iter = sinkhorn_iter
        self.n_data = n_data
        self.sigma = sigma
        self.reference_rates = reference_rates
        self.seed = seed
        self.device = device
        self.progress = progress
        self._validate_params()

    def _validate_params(self) -> None:
        self.hidden = _check_hidden(self.hidden)
        for name in ("n_iter", "n_particles", "steps_per_unit", "sinkhorn_iter", "n_data"):
            setattr(self, name, check_int(getattr(self, name), name, min=1))
        self.lr = check_float(self.lr, "lr", min=0.0, min_open=True)
        for name in ("energy_weight", "growth_energy", "mass_weight"):
            setattr(self, name, check_float(getattr(self, name), name, min=0.0))
        self.ot_eps = check_float(self.ot_eps, "ot_eps", min=0.0, min_open=True)
        self.sigma = check_float(self.sigma, "sigma", min=0.0, min_open=self._stochastic)
        rr = check_array(self.reference_rates, "reference_rates", shape=(2,))
        if (rr < 0).any():
            raise ValueError(f"reference_rates must be two rates >= 0, got {tuple(rr)}")
        self.reference_rates = (float(rr[0]), float(rr[1]))
        self.seed = check_seed(self.seed, "seed")
        check_device(self.device)
        if not isinstance(self.progress, (bool, np.bool_)):
            raise TypeError(f"progress must be True or False, got {self.progress!r}")

    def get_params(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in (
            "hidden", "n_iter", "n_particles", "steps_per_unit", "lr", "energy_weight", "growth_energy",
            "mass_weight", "ot_eps", "sinkhorn_iter", "n_data", "sigma", "reference_rates", "seed", "device",
            "progress")}

    def _build_nets(self, d: int) -> None:
        torch.manual_seed(self.seed)
        self.velocity_net_ = MLP(d, d, self.hidden).to(self.device)
        self.score_net_ = None
        self.growth_net_ = MLP(d, 1, self.hidden).to(self.device)

    def _sim_sigma(self, mode: str) -> float:
        return self.sigma if (self._stochastic and mode != "ode") else 0.0

    def _default_dt(self) -> float:
        return 1.0 / self.steps_per_unit

    def fit(self, snapshots: Any, times: Sequence[float] | None = None, masses: Sequence[float] | None = None, *,
            time_key: str = "time", basis: str | None = "X_pca") -> TIGONLike:
        """Fit by simulating weighted particles from X_0 through every observed time (see class docstring)."""
        self._validate_params()
        snaps, times, m = _read_snapshots(snapshots, times, masses, time_key, basis)
        dev = torch.device(self.device)
        rng = np.random.default_rng(self.seed)
        gen = torch.Generator().manual_seed(self.seed)
        self.times_, self.masses_per_cell_, self.n_features_in_ = times, m, snaps[0].shape[1]
        self.n_cells_ = [len(s) for s in snaps]
        self._build_nets(self.n_features_in_)
        xs = [torch.as_tensor(s, dtype=torch.float32, device=dev) for s in snaps]
        total = [float(len(s) * mk) for s, mk in zip(snaps, m)]  # M_k in units of t_0 cells
        opt = torch.optim.Adam(list(self.velocity_net_.parameters()) + list(self.growth_net_.parameters()), lr=self.lr)
        self.loss_history_ = []
        t0 = time.perf_counter()
        for _ in tqdm(range(self.n_iter), disable=not self.progress, desc=type(self).__name__, leave=False):
            n = self.n_particles
            x = xs[0][torch.as_tensor(rng.choice(len(snaps[0]), n, replace=len(snaps[0]) < n), device=dev)]
            logw = torch.full((n,), math.log(total[0] / n), device=dev)
            loss = torch.zeros((), device=dev)
            energy = torch.zeros((), device=dev)
            t = float(times[0])
            for k in range(1, len(times)):
                n_steps = max(1, math.ceil((times[k] - times[k - 1]) * self.steps_per_unit))
                h = float(times[k] - times[k - 1]) / n_steps
                for _ in range(n_steps):
                    tn = self._tnorm(t, n, dev)
                    v = self.velocity_net_(x, tn)
                    g = self.growth_net_(x, tn).squeeze(1)
                    rho = torch.exp(logw) / total[0]
                    energy = energy + h * (rho * ((v ** 2).sum(1) + self.growth_energy * g ** 2)).sum()
                    x = x + h * v
                    if self._stochastic:
                        x = x + self.sigma * math.sqrt(h) * torch.randn(x.shape, generator=gen).to(dev)
                    logw = logw + h * g
                    t += h
                t = float(times[k])
                wk = torch.exp(logw)
                sub = rng.choice(len(snaps[k]), min(self.n_data, len(snaps[k])), replace=False)
                y = xs[k][torch.as_tensor(sub, device=dev)]
                b = torch.full((len(sub),), 1.0 / len(sub), device=dev)
                loss = loss + sinkhorn_divergence(x, wk / wk.sum(), y, b, self.ot_eps, self.sinkhorn_iter)
                loss = loss + self.mass_weight * (wk.sum() / total[k] - 1.0) ** 2
            loss = loss + self.energy_weight * energy
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            self.loss_history_.append(float(loss.detach()))
        self.train_time_s_ = time.perf_counter() - t0
        return self


class DeepRUOTLike(TIGONLike):
    """DeepRUOT-like (Zhang, Li, Zhou, ICLR 2025) simplified: TIGONLike with stochastic particles (sigma > 0,
    default 0.2) in training and simulation. DeepRUOT's score network is not learned here."""

    _stochastic = True

    def __init__(self, sigma: float = 0.2, **kwargs: Any):
        super().__init__(sigma=sigma, **kwargs)
