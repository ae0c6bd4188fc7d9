"""USB: the unbalanced Schrodinger bridge estimator (spec sections 2.1-2.3).

`UnbalancedSchrodingerBridge` learns from snapshots X_0, ..., X_K (destructive measurements at times
t_0 < ... < t_K) three networks, simulation-free:
    v_theta(x, t)  probability-flow velocity,
    s_phi(x, t)    score grad log rho_t,
    g_psi(x, t)    net growth rate beta - delta (per unit time),
and simulates the branching diffusion dX = f dt + sigma dW, f = v + (sigma^2/2) s, with divisions at rate
beta and deaths at rate delta, (beta, delta) = split_birth_death(g, *reference_rates) (beta delta = q_b q_d).

**[reconstructed]** Training (spec 2.2), per interval k -> k+1 (Delta_k = t_{k+1} - t_k):
  1. semi-relaxed entropic UOT plan G_k with eps = 2 sigma^2 Delta_k, reg_m (coupling.semi_relaxed_uot);
  2. growth targets g_i = log r_i / Delta_k, r_i = (G_k 1)_i / a_i clipped to [e^-5, e^5];
  3. minibatches: interval k uniform, pairs (i, j) ~ G_k, tau ~ U(tau_min, 1 - tau_min), Brownian bridge
     x_tau, targets u (flow), -eps/(sigma sqrt(Delta tau(1-tau))) (score, noise form), g_i (growth), and
     importance weight w = r_i^(tau - 1) normalised to batch mean 1 (CytoBridge's lineage-mass weight);
  4. loss L = mean[w |v - u|^2] + mean[w |sigma sqrt(Delta tau(1-tau)) s + eps|^2]
             + growth_weight mean[w (g - g_i)^2] + energy_weight mean[Psi(g)].
The paper's exact loss, split of (beta, delta) and hyper-parameters were not visible; these are the spec's
choices and every one of them is a constructor argument.

The same class, with a different coupling and some heads switched off, gives the baselines SF2M, OT-CFM
and UOT-CFM (see baselines.py).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from icml26.common.validation import check_array, check_choice, check_float, check_int, check_seed, check_tensor
from icml26.usb.coupling import _bridge_sample, _bridge_targets, balanced_plan, semi_relaxed_uot, unbalanced_plan
from icml26.usb.rates import growth_penalty, split_birth_death
from icml26.usb.simulate import MODES, SimulationResult, simulate_population

__all__ = ["UnbalancedSchrodingerBridge", "FittedDynamics", "NotFittedError", "MLP", "snapshots_from_anndata",
           "check_snapshots"]


class NotFittedError(ValueError, AttributeError):
    """Raised when a model is used before `fit` (sklearn convention)."""


ACTIVATIONS = ("silu", "leaky_relu", "relu", "tanh", "selu")


def _check_hidden(hidden: Any) -> tuple[int, ...]:
    """Layer widths: a non-empty sequence of integers >= 1 (64.5 is refused, not truncated)."""
    h = check_array(hidden, "hidden", ndim=1, dtype=np.int64)
    if (h < 1).any():
        raise ValueError(f"hidden must be a non-empty sequence of positive widths, got {list(hidden)}")
    return tuple(int(v) for v in h)


class MLP(nn.Module):
    """MLP on [x, t] -> out_dim: Linear-act blocks of widths `hidden`, then Linear. x: (n, d), t: (n, 1)."""

    def __init__(self, in_dim: int, out_dim: int, hidden: Sequence[int] = (64, 64, 64), activation: str = "silu"):
        super().__init__()
        acts = {"silu": nn.SiLU, "leaky_relu": nn.LeakyReLU, "relu": nn.ReLU, "tanh": nn.Tanh, "selu": nn.SELU}
        check_choice(activation, "activation", ACTIVATIONS)
        layers: list[nn.Module] = []
        width = in_dim + 1
        for h in hidden:
            layers += [nn.Linear(width, int(h)), acts[activation]()]
            width = int(h)
        layers.append(nn.Linear(width, out_dim))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([x, t], dim=1))


# ------------------------------------------------------------------------------------------ input checks
def snapshots_from_anndata(adata: Any, time_key: str = "time", basis: str | None = "X_pca",
                           times: Sequence[float] | None = None) -> tuple[list[np.ndarray], np.ndarray]:
    """Split an AnnData into per-time snapshots (scanpy convention).

    Args:
        adata: AnnData with a numeric `adata.obs[time_key]` and the embedding `adata.obsm[basis]`
            (basis=None uses `adata.X`).
        times: optional subset of time values to keep (default: all, sorted).
    Returns:
        (snapshots, times): list of (N_k, d) float arrays and the (K+1,) sorted time values.
    """
    if not hasattr(adata, "obs") or not hasattr(adata, "obsm"):
        raise TypeError(f"snapshots must be a list of arrays or an AnnData, got {type(adata).__name__}")
    if time_key not in adata.obs:
        raise ValueError(f"time_key {time_key!r} not in adata.obs (columns: {list(adata.obs.columns)})")
    try:
        tcol = np.asarray(adata.obs[time_key].astype(float))
    except (TypeError, ValueError):
        raise ValueError(f"adata.obs[{time_key!r}] must be numeric (e.g. days); got non-numeric values") from None
    if basis is None:
        data = adata.X
        if hasattr(data, "toarray"):
            data = data.toarray()
    else:
        if basis not in adata.obsm:
            raise ValueError(f"basis {basis!r} not in adata.obsm (keys: {list(adata.obsm.keys())})")
        data = adata.obsm[basis]
    data = np.asarray(data, dtype=np.float64)
    values = np.unique(tcol) if times is None else np.asarray(times, dtype=float)
    snaps = []
    for v in values:
        mask = tcol == v
        if not mask.any():
            raise ValueError(f"no cells with {time_key} == {v}")
        snaps.append(data[mask])
    return snaps, values


def check_snapshots(snapshots: Any, times: Any, masses: Any = None) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Validate snapshots/times/masses; returns (float64 arrays, times, per-cell masses m_k).

    m_k = (M_k / N_k) * (N_0 / M_0), i.e. masses are relative to t_0 with M_0 normalised to N_0
    (default M_k = N_k gives m_k = 1, so m_0 = 1 always).
    """
    if isinstance(snapshots, np.ndarray) or not isinstance(snapshots, (list, tuple)):
        raise TypeError("snapshots must be a list of (N_k, d) arrays (one per time) or an AnnData")
    if len(snapshots) < 2:
        raise ValueError(f"snapshots: need at least 2 snapshots, got {len(snapshots)}")
    snaps = []
    for k, s in enumerate(snapshots):
        s = check_array(s, f"snapshots[{k}]", ndim=2, finite=False)
        if len(s) == 0 or s.shape[1] == 0:
            raise ValueError(f"snapshots[{k}] must be a non-empty (n_cells, n_dims) array, got shape {s.shape}")
        if not np.isfinite(s).all():
            raise ValueError(f"snapshots[{k}] contains NaN or inf")
        if snaps and s.shape[1] != snaps[0].shape[1]:
            raise ValueError(f"snapshots have differing dimensions: snapshots[0] has {snaps[0].shape[1]}, "
                             f"snapshots[{k}] has {s.shape[1]}")
        snaps.append(s)
    if times is None:
        raise ValueError("times is required with array snapshots")
    times = check_array(times, "times", ndim=(0, 1)).reshape(-1)
    if len(times) != len(snaps):
        raise ValueError(f"times has length {len(times)} but there are {len(snaps)} snapshots")
    if np.any(np.diff(times) <= 0):
        raise ValueError(f"times must be finite and strictly increasing, got {times.tolist()}")
    counts = np.array([len(s) for s in snaps], dtype=np.float64)
    if masses is None:
        m = np.ones(len(snaps))
    else:
        masses = check_array(masses, "masses", ndim=(0, 1)).reshape(-1)
        if len(masses) != len(snaps):
            raise ValueError(f"masses has length {len(masses)} but there are {len(snaps)} snapshots")
        if (masses <= 0).any():
            raise ValueError(f"masses must be finite and > 0, got {masses.tolist()}")
        m = (masses / counts) * (counts[0] / masses[0])
    return snaps, times, m


def _read_snapshots(snapshots, times, masses, time_key, basis):
    """AnnData or list of arrays -> checked (snapshots, times, per-cell masses)."""
    if not isinstance(snapshots, (list, tuple, np.ndarray)) and hasattr(snapshots, "obs"):
        snapshots, times = snapshots_from_anndata(snapshots, time_key, basis, times)
    return check_snapshots(snapshots, times, masses)


def check_device(device: Any) -> torch.device:
    """A torch device string/object ("cpu", "cuda", "cuda:1"); ValueError naming `device` otherwise."""
    try:
        return torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"device must be a torch device such as 'cpu' or 'cuda', got {device!r}") from None


# ------------------------------------------------------------------------------------------ fitted dynamics
class FittedDynamics:
    """What a fitted model offers, shared by the USB estimator (and its simulation-free baselines) and the
    simulation-based TIGONLike / DeepRUOTLike: the fields v, s, f, g and (beta, delta) at any (x, t), the
    simulator, and save/load.

    A subclass sets, when fitted, `velocity_net_`, `score_net_` (or None), `growth_net_` (or None),
    `times_`, `masses_per_cell_`, `n_features_in_`, `n_cells_`, `loss_history_`, and implements
    `get_params`, `_validate_params`, `_build_nets(d)`, `_sim_sigma(mode)` (diffusion used by `simulate`)
    and `_default_dt()`; `sigma`, `reference_rates`, `device` are its hyper-parameters.
    """

    _default_mode = "discrete"

    # ----------------------------------------------------------------------------- fields at (x, t)
    def _check_fitted(self) -> None:
        if not hasattr(self, "velocity_net_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit(snapshots, times) first")

    def _points(self, x, name: str = "x") -> torch.Tensor:
        self._check_fitted()
        xt = check_tensor(x, name, ndim=2, dtype=torch.float32, min_size=0)
        if xt.shape[1] != self.n_features_in_:
            raise ValueError(f"{name} must have shape (n, {self.n_features_in_}), got {tuple(xt.shape)}")
        return xt.to(torch.device(self.device))

    def _tnorm(self, t: torch.Tensor | float, n: int, dev) -> torch.Tensor:
        """Time fed to the networks: (t - t_0) / (t_K - t_0), as an (n, 1) column."""
        span = float(self.times_[-1] - self.times_[0])
        tt = torch.as_tensor(t, dtype=torch.float32, device=dev)
        return ((tt - float(self.times_[0])) / span).reshape(-1, 1).expand(n, 1)

    def _field(self, net: nn.Module | None, x: torch.Tensor, t: float, chunk: int = 65536) -> torch.Tensor:
        out_dim = self.n_features_in_ if net is not self.growth_net_ else 1
        if net is None:
            return torch.zeros(len(x), out_dim, device=x.device, dtype=x.dtype)
        outs = []
        for s in range(0, max(len(x), 1), chunk):
            xc = x[s:s + chunk].to(torch.float32)
            outs.append(net(xc, self._tnorm(t, len(xc), xc.device)).to(x.dtype))
        return torch.cat(outs) if outs else torch.zeros(0, out_dim, device=x.device, dtype=x.dtype)

    def _velocity_t(self, x: torch.Tensor, t: float) -> torch.Tensor:
        return self._field(self.velocity_net_, x, t)

    def _score_t(self, x: torch.Tensor, t: float) -> torch.Tensor:
        return self._field(self.score_net_, x, t)

    def _drift_t(self, x: torch.Tensor, t: float) -> torch.Tensor:
        f = self._velocity_t(x, t)
        if self.score_net_ is not None:
            f = f + 0.5 * self.sigma**2 * self._score_t(x, t)
        return f

    def _growth_t(self, x: torch.Tensor, t: float) -> torch.Tensor:
        if self.growth_net_ is None:
            return torch.zeros(len(x), device=x.device, dtype=x.dtype)
        return self._field(self.growth_net_, x, t).squeeze(1)

    def _rates_t(self, x: torch.Tensor, t: float) -> tuple[torch.Tensor, torch.Tensor]:
        return split_birth_death(self._growth_t(x, t), *self.reference_rates)

    def _np(self, fn, x, t) -> np.ndarray:
        xt = self._points(x)
        t = check_float(t, "t")
        with torch.no_grad():
            return fn(xt, t).cpu().numpy().astype(np.float64)

    def velocity(self, x, t: float) -> np.ndarray:
        """Probability-flow velocity v(x, t), (n, d); x (n, d) finite, t a finite float."""
        return self._np(self._velocity_t, x, t)

    def score(self, x, t: float) -> np.ndarray:
        """Score s(x, t) ~ grad log rho_t, (n, d) (zeros for models without a score head)."""
        return self._np(self._score_t, x, t)

    def drift(self, x, t: float) -> np.ndarray:
        """SDE drift f = v + (sigma^2/2) s, (n, d) (= v for models without a score head)."""
        return self._np(self._drift_t, x, t)

    def growth(self, x, t: float) -> np.ndarray:
        """Net growth rate g = beta - delta per unit time, (n,) (zeros for models without growth)."""
        return self._np(self._growth_t, x, t)

    def birth_death_rates(self, x, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(beta, delta), each (n,): division and death rates per unit time, beta delta = q_b q_d."""
        return split_birth_death(self.growth(x, t), *self.reference_rates)

    # ----------------------------------------------------------------------------- simulation
    def simulate(self, x0, t_eval: Sequence[float], mode: str | None = None, dt: float | None = None,
                 seed: int = 0, max_particles: int = 200_000, *, t0: float | None = None,
                 weights0=None, record_events: bool = True, progress: bool = False) -> SimulationResult:
        """Simulate the learned dynamics from cells `x0` (n0, d) and record them at `t_eval`.

        Args:
            x0: (n0, d) cells at time t0.
            t_eval: increasing recording times (a sequence, not a scalar: `[t0, t1]` simulates from t0 to t1).
            mode: "discrete" (divisions/deaths of individual cells, lineage ids and event log; USB default),
                "weighted" (SDE particles with weights w <- w exp(g dt)) or "ode" (probability-flow ODE
                dx = v dt with weights). Default: the model's own (`_default_mode`).
            dt: Euler step (default: shortest training interval / 50 for the simulation-free models).
            seed: simulation seed (int >= 0); max_particles: guard against exponential growth (ValueError).
            t0: start time (default t_eval[0]; then a single recording time is refused, as it would return x0).
        Returns:
            SimulationResult (positions, weights or None, lineage, cell ids, events).
        Warns:
            UserWarning when [t0, t_eval[-1]] leaves the training time span (the networks extrapolate).
        """
        self._check_fitted()
        self._validate_params()
        mode = self._default_mode if mode is None else mode
        check_choice(mode, "mode", MODES)
        x0t = self._points(x0, "x0")
        t_arr = _check_t_eval(t_eval, t0)
        start = float(t_arr[0]) if t0 is None else check_float(t0, "t0")
        lo, hi = float(self.times_[0]), float(self.times_[-1])
        tol = 1e-9 * max(1.0, hi - lo)
        if start < lo - tol or t_arr[-1] > hi + tol:
            warnings.warn(f"simulating over [{start:g}, {t_arr[-1]:g}] leaves the training time span [{lo:g}, {hi:g}]: "
                          "the networks extrapolate in time there", UserWarning, stacklevel=2)
        dt = self._default_dt() if dt is None else check_float(dt, "dt", min=0.0, min_open=True)
        drift = self._velocity_t if mode == "ode" else self._drift_t
        return simulate_population(
            x0t, t_arr, drift, self._sim_sigma(mode), rates=self._rates_t, growth=self._growth_t, mode=mode,
            t0=t0, dt=dt, seed=seed, weights0=weights0, max_particles=max_particles, record_events=record_events,
            device=self.device, progress=progress)

    # ----------------------------------------------------------------------------- persistence
    def _extra_params(self) -> dict[str, Any]:
        return {}

    def save(self, path: str | Path) -> None:
        """Save hyper-parameters, fitted networks and fit metadata (torch.save)."""
        self._check_fitted()
        state = {
            "class": type(self).__name__,
            "params": self.get_params(),
            "extra": self._extra_params(),
            "nets": {name: (net.state_dict() if net is not None else None) for name, net in
                     (("velocity", self.velocity_net_), ("score", self.score_net_), ("growth", self.growth_net_))},
            "times": self.times_, "masses_per_cell": self.masses_per_cell_, "n_features_in": self.n_features_in_,
            "n_cells": self.n_cells_, "loss_history": self.loss_history_,
        }
        torch.save(state, Path(path))

    @classmethod
    def load(cls, path: str | Path, device: str | None = None):
        """Load a model written by `save` (the class must match the saved one)."""
        state = torch.load(Path(path), map_location="cpu", weights_only=False)
        if state.get("class") != cls.__name__:
            raise ValueError(f"{path} holds a {state.get('class')}, not a {cls.__name__}; use {state.get('class')}.load")
        params = dict(state["params"])
        params.update(state.get("extra", {}))
        if device is not None:
            params["device"] = device
        model = cls(**params)
        model.times_ = np.asarray(state["times"])
        model.masses_per_cell_ = np.asarray(state["masses_per_cell"])
        model.n_features_in_ = int(state["n_features_in"])
        model.n_cells_ = list(state["n_cells"])
        model.loss_history_ = list(state["loss_history"])
        model._build_nets(model.n_features_in_)
        for name, net in (("velocity", model.velocity_net_), ("score", model.score_net_), ("growth", model.growth_net_)):
            if net is not None:
                net.load_state_dict(state["nets"][name])
        return model

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items() if k not in ("progress",))
        return f"{type(self).__name__}({args})"


def _check_t_eval(t_eval, t0) -> np.ndarray:
    if np.ndim(t_eval) == 0 and not isinstance(t_eval, (str, bytes)) and t_eval is not None:
        raise ValueError(f"t_eval must be a sequence of recording times, got the scalar {t_eval!r}; to simulate "
                         f"up to it pass t_eval=[t_start, {t_eval!r}] (or t_eval=[{t_eval!r}] with t0=t_start)")
    t_arr = check_array(t_eval, "t_eval", ndim=1)
    if len(t_arr) == 1 and t0 is None:
        raise ValueError(f"t_eval={t_arr.tolist()} without t0 starts and ends at {t_arr[0]:g}, i.e. returns x0 "
                         "unchanged; pass t0 (the time of x0) or t_eval=[t_start, ...]")
    return t_arr
class UnbalancedSchrodingerBridge(FittedDynamics):
    """Unbalanced Schrodinger bridge with birth-death jumps, fitted simulation-free to snapshots.

    Args:
        sigma: diffusion coefficient in data units (> 0), default 0.2.
        reg_m: KL weight of the relaxed source marginal in the UOT coupling (> 0), default 1.0.
        reference_rates: (q_b, q_d) of the reference branching Brownian motion, >= 0; (0, 0) gives the
            minimal-jump split beta = max(g, 0), delta = max(-g, 0).
        hidden: MLP widths of each of the three networks, default (64, 64, 64).
        n_iter: training iterations (default 2000); batch_size: pairs per iteration (256); lr: Adam (1e-3).
        growth_weight: alpha_g, weight of the growth regression (1.0).
        energy_weight: alpha_Psi, weight of the BSB growth energy mean[Psi(g)] (0; needs q_b, q_d > 0).
        seed: seed of initialisation, pair sampling and bridge noise.
        device: torch device ("cpu", "cuda").
        activation: "silu" (default) | "leaky_relu" | ...
        interval_sampling: "uniform" (default) or "length" (interval k with probability ~ Delta_k).
        tau_min: tau ~ U(tau_min, 1 - tau_min) (1e-3).
        sinkhorn_iter: Sinkhorn iterations of the coupling (5000).
        max_plan_cells: full plans up to this many cells per snapshot; larger snapshots are coupled in
            random chunks of this size (minibatch UOT, spec 2.2), default 5000.
        progress: show a tqdm bar during fit.
    """

    # knobs the baselines flip (see baselines.py)
    _coupling = "semi_relaxed"  # "semi_relaxed" | "entropic" | "exact" | "unbalanced"
    _bridge = True  # Brownian-bridge paths (else straight CFM paths of constant width sigma)
    _learn_score = True
    _learn_growth = True
    _default_mode = "discrete"

    def __init__(
        self,
        sigma: float = 0.2,
        reg_m: float = 1.0,
        reference_rates: tuple[float, float] = (0.0, 0.0),
        hidden: Sequence[int] = (64, 64, 64),
        n_iter: int = 2000,
        batch_size: int = 256,
        lr: float = 1e-3,
        growth_weight: float = 1.0,
        energy_weight: float = 0.0,
        seed: int = 0,
        device: str = "cpu",
        activation: str = "silu",
        interval_sampling: str = "uniform",
        tau_min: float = 1e-3,
        sinkhorn_iter: int = 5000,
        max_plan_cells: int = 5000,
        progress: bool = False,
    ):
        self.sigma = sigma
        self.reg_m = reg_m
        self.reference_rates = reference_rates
        self.hidden = hidden
        self.n_iter = n_iter
        self.batch_size = batch_size
        self.lr = lr
        self.growth_weight = growth_weight
        self.energy_weight = energy_weight
        self.seed = seed
        self.device = device
        self.activation = activation
        self.interval_sampling = interval_sampling
        self.tau_min = tau_min
        self.sinkhorn_iter = sinkhorn_iter
        self.max_plan_cells = max_plan_cells
        self.progress = progress
        self._validate_params()

    # ----------------------------------------------------------------------------- parameters
    def get_params(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in (
            "sigma", "reg_m", "reference_rates", "hidden", "n_iter", "batch_size", "lr", "growth_weight",
            "energy_weight", "seed", "device", "activation", "interval_sampling", "tau_min", "sinkhorn_iter",
            "max_plan_cells", "progress")}

    def _validate_params(self) -> None:
        """Check every hyper-parameter (ValueError/TypeError naming it) and normalise sizes to ints; called by
        __init__, fit and simulate, so attributes changed after construction are checked too."""
        needs_sigma = self._bridge or self._learn_score
        self.sigma = check_float(self.sigma, "sigma", min=0.0, min_open=needs_sigma)
        self.reg_m = check_float(self.reg_m, "reg_m", min=0.0, min_open=True)
        rr = check_array(self.reference_rates, "reference_rates", shape=(2,))
        if (rr < 0).any():
            raise ValueError(f"reference_rates must be two finite rates >= 0 (q_b, q_d), got {tuple(rr)}")
        self.reference_rates = (float(rr[0]), float(rr[1]))
        self.energy_weight = check_float(self.energy_weight, "energy_weight", min=0.0)
        if self.energy_weight > 0 and min(self.reference_rates) <= 0:
            raise ValueError("energy_weight > 0 needs positive reference_rates (q_b, q_d): Psi is infinite otherwise")
        self.growth_weight = check_float(self.growth_weight, "growth_weight", min=0.0)
        self.n_iter = check_int(self.n_iter, "n_iter", min=0)
        for name in ("batch_size", "sinkhorn_iter", "max_plan_cells"):
            setattr(self, name, check_int(getattr(self, name), name, min=1))
        self.lr = check_float(self.lr, "lr", min=0.0, min_open=True)
        self.tau_min = check_float(self.tau_min, "tau_min", min=0.0, max=0.5, min_open=True, max_open=True)
        check_choice(self.interval_sampling, "interval_sampling", ("uniform", "length"))
        check_choice(self.activation, "activation", ACTIVATIONS)
        self.hidden = _check_hidden(self.hidden)
        self.seed = check_seed(self.seed, "seed")
        check_device(self.device)
        if not isinstance(self.progress, (bool, np.bool_)):
            raise TypeError(f"progress must be True or False, got {self.progress!r}")

    def _sim_sigma(self, mode: str) -> float:
        return self.sigma if (mode != "ode" and self._bridge) else 0.0

    def _default_dt(self) -> float:
        return float(np.min(np.diff(self.times_))) / 50.0

    # ----------------------------------------------------------------------------- fitting
    def _plan(self, x0: np.ndarray, x1: np.ndarray, m0: float, m1: float, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """(pair distribution P summing to 1, row factor r) for one interval."""
        eps = 2.0 * self.sigma**2 * dt
        if self._coupling == "semi_relaxed":
            p = semi_relaxed_uot(x0, x1, m0, m1, eps=eps, reg_m=self.reg_m, dt=dt, num_iter=self.sinkhorn_iter)
            self.plans_.append(p)
            return p.plan / p.plan.sum(), p.row_factor
        if self._coupling == "entropic":
            plan = balanced_plan(x0, x1, eps, num_iter=self.sinkhorn_iter)
        elif self._coupling == "exact":
            plan = balanced_plan(x0, x1, None)
        elif self._coupling == "unbalanced":
            plan = unbalanced_plan(x0, x1, eps=self.uot_eps, reg_m=self.reg_m, num_iter=self.sinkhorn_iter)
        else:  # pragma: no cover
            raise ValueError(f"unknown coupling {self._coupling!r}")
        self.plans_.append(plan)
        return plan / plan.sum(), np.ones(len(x0))

    def _chunked_plans(self, x0, x1, m0, m1, dt, rng):
        """Full plan when both snapshots fit, else block-diagonal plans over random chunks (minibatch UOT)."""
        c = self.max_plan_cells
        if len(x0) <= c and len(x1) <= c:
            p, r = self._plan(x0, x1, m0, m1, dt)
            return [(np.arange(len(x0)), np.arange(len(x1)), p, r)]
        n_chunks = int(math.ceil(max(len(x0), len(x1)) / c))
        i_perm, j_perm = rng.permutation(len(x0)), rng.permutation(len(x1))
        out = []
        for ci, cj in zip(np.array_split(i_perm, n_chunks), np.array_split(j_perm, n_chunks)):
            p, r = self._plan(x0[ci], x1[cj], m0, m1, dt)
            out.append((ci, cj, p * (len(ci) / len(x0)), r))
        return out

    def fit(self, snapshots: Any, times: Sequence[float] | None = None, masses: Sequence[float] | None = None, *,
            time_key: str = "time", basis: str | None = "X_pca") -> UnbalancedSchrodingerBridge:
        """Fit to snapshots.

        Args:
            snapshots: list of (N_k, d) arrays, one per time, or an AnnData (cells x genes) with
                `obs[time_key]` numeric and an embedding `obsm[basis]` (basis=None: `X`).
            times: (K+1,) strictly increasing observation times (required for arrays; for AnnData an
                optional subset of the time values).
            masses: optional (K+1,) population sizes M_k (default M_k = N_k); growth is relative otherwise.
        Returns:
            self. Sets times_, n_features_in_, plans_, growth_targets_, loss_history_, train_time_s_.
        """
        self._validate_params()
        snaps, times, m = _read_snapshots(snapshots, times, masses, time_key, basis)
        rng = np.random.default_rng(self.seed)
        torch.manual_seed(self.seed)
        gen = torch.Generator(device="cpu")
        gen.manual_seed(self.seed)
        dev = torch.device(self.device)
        d = snaps[0].shape[1]
        self.times_ = times
        self.masses_per_cell_ = m
        self.n_features_in_ = d
        self.n_cells_ = [len(s) for s in snaps]
        self._build_nets(d)
        # --- step 1-2: couplings and growth targets, computed once before training
        self.plans_ = []
        dts = np.diff(times)
        blocks = []  # per interval: list of (rows, cols, P, r)
        for k in range(len(snaps) - 1):
            blocks.append(self._chunked_plans(snaps[k], snaps[k + 1], m[k], m[k + 1], float(dts[k]), rng))
        self.growth_targets_ = [
            np.log(np.concatenate([b[3] for b in blk])[np.argsort(np.concatenate([b[0] for b in blk]))]) / dts[k]
            for k, blk in enumerate(blocks)]
        # flatten every block into one sampling table per interval
        tables = []
        for k, blk in enumerate(blocks):
            rows, cols, probs, logr = [], [], [], []
            for ci, cj, p, r in blk:
                ii, jj = np.nonzero(p > 0)
                rows.append(ci[ii])
                cols.append(cj[jj])
                probs.append(p[ii, jj])
                logr.append(np.log(r)[ii])
            pr = np.concatenate(probs)
            tables.append((np.concatenate(rows), np.concatenate(cols), np.cumsum(pr / pr.sum()),
                           np.concatenate(logr)))
        xs = [torch.as_tensor(s, dtype=torch.float32, device=dev) for s in snaps]
        k_prob = np.full(len(dts), 1.0 / len(dts)) if self.interval_sampling == "uniform" else dts / dts.sum()
        params = [p for net in self._nets() for p in net.parameters()]
        opt = torch.optim.Adam(params, lr=self.lr)
        self.loss_history_ = []
        B = self.batch_size
        t0 = time.perf_counter()
        for _ in tqdm(range(self.n_iter), disable=not self.progress, desc=type(self).__name__, leave=False):
            ks = rng.choice(len(dts), size=B, p=k_prob)
            x0b, x1b, logr_b, dtb, tk = [], [], [], [], []
            for k in np.unique(ks):
                nk = int((ks == k).sum())
                rows, cols, cdf, logr = tables[k]
                idx = np.minimum(np.searchsorted(cdf, rng.random(nk) * cdf[-1], side="right"), len(cdf) - 1)
                x0b.append(xs[k][torch.as_tensor(rows[idx], device=dev)])
                x1b.append(xs[k + 1][torch.as_tensor(cols[idx], device=dev)])
                logr_b.append(logr[idx])
                dtb.append(np.full(nk, dts[k]))
                tk.append(np.full(nk, times[k]))
            x0b, x1b = torch.cat(x0b), torch.cat(x1b)
            logr_t = torch.as_tensor(np.concatenate(logr_b), dtype=torch.float32, device=dev)
            dt_t = torch.as_tensor(np.concatenate(dtb), dtype=torch.float32, device=dev)
            tk_t = torch.as_tensor(np.concatenate(tk), dtype=torch.float32, device=dev)
            tau = (self.tau_min + (1 - 2 * self.tau_min) * torch.rand(B, generator=gen)).to(dev)
            loss = self._loss(x0b, x1b, tau, dt_t, tk_t, logr_t, gen)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            self.loss_history_.append(float(loss.detach()))
        self.train_time_s_ = time.perf_counter() - t0
        return self

    def _build_nets(self, d: int) -> None:
        torch.manual_seed(self.seed)
        dev = torch.device(self.device)
        self.velocity_net_ = MLP(d, d, self.hidden, self.activation).to(dev)
        self.score_net_ = MLP(d, d, self.hidden, self.activation).to(dev) if self._learn_score else None
        self.growth_net_ = MLP(d, 1, self.hidden, self.activation).to(dev) if self._learn_growth else None

    def _nets(self) -> list[nn.Module]:
        return [n for n in (self.velocity_net_, self.score_net_, self.growth_net_) if n is not None]

    def _loss(self, x0, x1, tau, dt, tk, logr, gen) -> torch.Tensor:
        """Spec 2.2 step 4 on one minibatch of coupled pairs."""
        dev = x0.device
        tau_c = tau.reshape(-1, 1)
        if self._bridge:
            dt_c = dt.reshape(-1, 1)
            xt, _, noise = _bridge_sample(x0, x1, tau_c, self.sigma, dt_c, gen)
            std = self.sigma * torch.sqrt(dt_c * tau_c * (1 - tau_c))
            u, _ = _bridge_targets(x0, x1, xt, tau_c, self.sigma, dt_c)
        else:  # CFM: x_tau = mu + sigma eps (constant width), u = (x1 - x0)/dt
            noise = torch.randn(x0.shape, generator=gen).to(dev)
            xt = (1 - tau_c) * x0 + tau_c * x1 + self.sigma * noise
            u = (x1 - x0) / dt.reshape(-1, 1)
            std = None
        t_abs = tk + tau * dt
        tn = self._tnorm(t_abs, len(x0), dev)
        # importance weight w = r^(tau - 1): pairs ~ G carry final-time mass; rescale to lineage mass at tau
        w = torch.exp((tau - 1.0) * logr) if self._learn_growth else torch.ones_like(tau)
        w = w / w.mean()
        loss = (w * ((self.velocity_net_(xt, tn) - u) ** 2).sum(1)).mean()
        if self._learn_score:
            loss = loss + (w * ((std * self.score_net_(xt, tn) + noise) ** 2).sum(1)).mean()
        if self._learn_growth:
            g = self.growth_net_(xt, tn).squeeze(1)
            loss = loss + self.growth_weight * (w * (g - logr / dt) ** 2).mean()
            if self.energy_weight > 0:
                loss = loss + self.energy_weight * growth_penalty(g, *self.reference_rates).mean()
        return loss
