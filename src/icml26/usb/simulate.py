"""Population simulator with discrete births and deaths (spec section 2.3).

Works with any callable drift / rates, so it serves the fitted USB model, the baselines and the
ground-truth data generator alike. Per Euler-Maruyama step of length h every particle

    1. draws an event with probability 1 - exp(-(beta + delta) h) (competing risks, rates at the
       particle's position before the step); an event is a division with probability beta/(beta + delta),
       else a death;
    2. moves x <- x + f(x, t) h + sigma sqrt(h) xi;
    3. a dividing particle leaves a copy at its new position (same lineage id, new cell id); a dying one is
       removed.

Modes: "discrete" (the above; the paper's distinguishing output), "weighted" (fixed particles of the SDE
with weights w <- w exp(g h), the continuous-mass view) and "ode" (deterministic x <- x + f h with weights;
pass the probability-flow velocity as the drift).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm

from icml26.common.validation import check_array, check_bool, check_choice, check_float, check_int, check_seed

__all__ = ["SimulationResult", "simulate_population", "MODES"]

MODES = ("discrete", "weighted", "ode")

Field = Callable[[torch.Tensor, float], torch.Tensor]
Rates = Callable[[torch.Tensor, float], tuple[torch.Tensor, torch.Tensor]]


@dataclass
class SimulationResult:
    """A simulated population at the requested times.

    Attributes:
        times: (T,) recording times.
        positions: T arrays (n_t, d) of particle positions.
        weights: T arrays (n_t,) of particle masses ("weighted"/"ode"), None for "discrete" (unit masses).
        lineage: T int arrays (n_t,): index of each particle's ancestor in x0.
        cell_ids: T int arrays (n_t,): unique ids (x0 cells are 0..n0-1, daughters get new ids).
        events: dict of arrays {"time", "position" (n_e, d), "kind" (+1 division, -1 death), "lineage",
            "cell_id"} for "discrete" with record_events=True, else None.
        mode: the simulation mode.
    """

    times: np.ndarray
    positions: list[np.ndarray]
    weights: list[np.ndarray] | None
    lineage: list[np.ndarray]
    cell_ids: list[np.ndarray]
    events: dict[str, np.ndarray] | None = None
    mode: str = "discrete"
    meta: dict = field(default_factory=dict)

    def mass(self) -> np.ndarray:
        """(T,) total mass: particle count ("discrete") or total weight."""
        if self.weights is None:
            return np.array([len(p) for p in self.positions], dtype=float)
        return np.array([float(w.sum()) for w in self.weights])

    def counts(self) -> np.ndarray:
        """(T,) number of particles."""
        return np.array([len(p) for p in self.positions])


def _as_tensor(v, like: torch.Tensor) -> torch.Tensor:
    if not isinstance(v, torch.Tensor):
        v = torch.as_tensor(np.asarray(v), device=like.device)
    return v.to(like.dtype)


def simulate_population(
    x0,
    t_eval: Sequence[float],
    drift: Field,
    sigma: float = 0.0,
    *,
    rates: Rates | None = None,
    growth: Field | None = None,
    mode: str = "discrete",
    t0: float | None = None,
    dt: float = 0.01,
    seed: int = 0,
    weights0=None,
    max_particles: int = 200_000,
    record_events: bool = True,
    device: str | torch.device | None = None,
    dtype: torch.dtype = torch.float32,
    progress: bool = False,
) -> SimulationResult:
    """Simulate a branching diffusion from `x0` and record it at `t_eval`.

    Args:
        x0: (n0, d) initial cells (numpy or torch).
        t_eval: increasing recording times >= t0 (a sequence; a scalar is refused, and a single time is
            refused without t0 since the simulation would then start and end there).
        drift: f(x (n, d) tensor, t float) -> (n, d) tensor (SDE drift; velocity for mode="ode").
        sigma: diffusion coefficient (ignored in mode "ode").
        rates: (x, t) -> (beta, delta), each (n,), birth and death rates per unit time (mode "discrete").
        growth: (x, t) -> g (n,), net growth per unit time (modes "weighted"/"ode"; defaults to beta - delta).
            In "discrete" mode with only `growth` given, rates are the minimal-jump split (max(g,0), max(-g,0)).
        mode: "discrete" | "weighted" | "ode".
        t0: start time (default t_eval[0]).
        dt: largest Euler step; each interval between recording times is split into equal steps <= dt.
        seed: seed of the torch generator (same seed -> identical simulation).
        weights0: (n0,) initial weights for "weighted"/"ode" (default ones).
        max_particles: raise ValueError instead of growing beyond this many particles.
        record_events: keep the event log (discrete mode).
    Returns:
        SimulationResult.
    """
    check_choice(mode, "mode", MODES)
    if not callable(drift):
        raise TypeError("drift must be callable (x, t) -> tensor")
    for name, fn in (("rates", rates), ("growth", growth)):
        if fn is not None and not callable(fn):
            raise TypeError(f"{name} must be callable (x, t) -> tensor(s) or None")
    sigma = check_float(sigma, "sigma", min=0.0)
    dt = check_float(dt, "dt", min=0.0, min_open=True)
    seed = check_seed(seed, "seed")
    max_particles = check_int(max_particles, "max_particles", min=1)
    record_events = check_bool(record_events, "record_events")
    if isinstance(x0, torch.Tensor):
        x = x0.detach()
        if x.is_complex() or not (x.is_floating_point() or x.dtype in (torch.int32, torch.int64)):
            raise TypeError(f"x0 must hold real numbers, got dtype {x.dtype}")
    else:
        x = torch.from_numpy(check_array(x0, "x0", finite=False, min_size=0))
    device = torch.device(device) if device is not None else x.device
    x = x.to(device=device, dtype=dtype).clone()
    if x.ndim != 2 or len(x) == 0 or x.shape[1] == 0:
        raise ValueError(f"x0 must be a non-empty (n_cells, n_dims) array, got shape {tuple(x.shape)}")
    if not torch.isfinite(x).all():
        raise ValueError("x0 contains NaN or inf")
    if len(x) > max_particles:
        raise ValueError(f"x0 has {len(x)} cells, more than max_particles={max_particles}")
    if np.ndim(t_eval) == 0 and not isinstance(t_eval, (str, bytes)) and t_eval is not None:
        raise ValueError(f"t_eval must be a sequence of recording times, got the scalar {t_eval!r} "
                         f"(pass [t_start, {t_eval!r}])")
    t_eval = check_array(t_eval, "t_eval", ndim=1)
    if np.any(np.diff(t_eval) <= 0):
        raise ValueError(f"t_eval must be a non-empty strictly increasing sequence, got {t_eval}")
    if len(t_eval) == 1 and t0 is None:
        raise ValueError(f"t_eval={t_eval.tolist()} without t0 starts and ends at {t_eval[0]:g} and would return "
                         "x0 unchanged; pass t0 or t_eval=[t_start, ...]")
    t_start = float(t_eval[0]) if t0 is None else check_float(t0, "t0")
    if t_eval[0] < t_start:
        raise ValueError(f"t_eval must start at or after t0={t_start}, got {t_eval[0]}")
    if mode == "discrete" and rates is None and growth is None:
        raise ValueError("mode='discrete' needs rates=(x,t)->(beta, delta) or growth=(x,t)->g")

    def net_growth(xx: torch.Tensor, t: float) -> torch.Tensor:
        if growth is not None:
            return _as_tensor(growth(xx, t), xx).reshape(-1)
        if rates is not None:
            b, d = rates(xx, t)
            return (_as_tensor(b, xx) - _as_tensor(d, xx)).reshape(-1)
        return torch.zeros(len(xx), dtype=xx.dtype, device=xx.device)

    def jump_rates(xx: torch.Tensor, t: float) -> tuple[torch.Tensor, torch.Tensor]:
        if rates is not None:
            b, d = rates(xx, t)
            return _as_tensor(b, xx).reshape(-1).clamp(min=0), _as_tensor(d, xx).reshape(-1).clamp(min=0)
        g = net_growth(xx, t)
        return g.clamp(min=0), (-g).clamp(min=0)

    gen = torch.Generator(device=device)
    gen.manual_seed(int(seed))
    n0 = len(x)
    lineage = torch.arange(n0, device=device)
    ids = torch.arange(n0, device=device)
    next_id = n0
    w = None
    if mode != "discrete":
        if weights0 is None:
            w = torch.ones(n0, dtype=torch.float64, device=device)
        else:
            w0 = weights0.detach().cpu().numpy() if isinstance(weights0, torch.Tensor) else weights0
            w = torch.from_numpy(check_array(w0, "weights0", finite=False)).to(device=device,
                                                                               dtype=torch.float64).reshape(-1)
        if w.shape != (n0,) or not torch.isfinite(w).all() or (w < 0).any():
            raise ValueError(f"weights0 must be ({n0},) finite non-negative, got shape {tuple(w.shape)}")
    noise = 0.0 if mode == "ode" else float(sigma)
    ev_t, ev_x, ev_k, ev_l, ev_id = [], [], [], [], []
    out_x, out_w, out_l, out_id = [], [], [], []
    t = t_start
    n_steps_total = sum(max(1, math.ceil((b - a) / dt - 1e-9)) for a, b in zip([t_start, *t_eval[:-1]], t_eval)
                        if b > a)
    bar = tqdm(total=n_steps_total, disable=not progress, desc=f"simulate[{mode}]", leave=False)

    def record() -> None:
        out_x.append(x.detach().cpu().numpy().astype(np.float64))
        out_l.append(lineage.cpu().numpy().copy())
        out_id.append(ids.cpu().numpy().copy())
        if w is not None:
            out_w.append(w.cpu().numpy().copy())

    with torch.no_grad():
        for t_next in t_eval:
            span = float(t_next) - t
            n_steps = max(1, math.ceil(span / dt - 1e-9)) if span > 0 else 0
            h = span / n_steps if n_steps else 0.0
            for _ in range(n_steps):
                if len(x) == 0:
                    t += h
                    continue
                if mode == "discrete":
                    beta, delta = jump_rates(x, t)
                    lam = beta + delta
                    if not bool(torch.isfinite(lam).all()):
                        raise ValueError(f"rates/growth returned NaN or inf at t={t:.4g}")
                    p_event = -torch.expm1(-lam * h)
                    u1 = torch.rand(len(x), generator=gen, device=device, dtype=x.dtype)
                    u2 = torch.rand(len(x), generator=gen, device=device, dtype=x.dtype)
                    event = u1 < p_event
                    birth = event & (u2 * lam < beta)
                    death = event & ~birth
                else:
                    g = net_growth(x, t).to(torch.float64)
                    if not bool(torch.isfinite(g).all()):
                        raise ValueError(f"growth/rates returned NaN or inf at t={t:.4g}")
                    w = w * torch.exp(g * h)
                f = _as_tensor(drift(x, t), x)
                if f.shape != x.shape or not bool(torch.isfinite(f).all()):
                    raise ValueError(f"drift must return a finite tensor of shape {tuple(x.shape)} at t={t:.4g}, "
                                     f"got shape {tuple(f.shape)}" + ("" if f.shape != x.shape else " with NaN/inf"))
                x = x + f * h
                if noise > 0:
                    x = x + noise * math.sqrt(h) * torch.randn(x.shape, generator=gen, device=device, dtype=x.dtype)
                t += h
                if mode == "discrete" and bool(event.any()):
                    n_birth = int(birth.sum())
                    if len(x) + n_birth - int(death.sum()) > max_particles:
                        raise ValueError(
                            f"population exceeded max_particles={max_particles} at t={t:.3f} "
                            f"({len(x) + n_birth - int(death.sum())} cells); raise max_particles or simulate "
                            "fewer starting cells")
                    if record_events:
                        for mask, kind in ((birth, 1), (death, -1)):
                            if bool(mask.any()):
                                ev_t.append(np.full(int(mask.sum()), t))
                                ev_x.append(x[mask].cpu().numpy().astype(np.float64))
                                ev_k.append(np.full(int(mask.sum()), kind, dtype=np.int8))
                                ev_l.append(lineage[mask].cpu().numpy())
                                ev_id.append(ids[mask].cpu().numpy())
                    keep = ~death
                    new_ids = torch.arange(next_id, next_id + n_birth, device=device)
                    next_id += n_birth
                    x = torch.cat([x[keep], x[birth]])
                    lineage = torch.cat([lineage[keep], lineage[birth]])
                    ids = torch.cat([ids[keep], new_ids])
                bar.update()
            t = float(t_next)
            record()
    bar.close()
    events = None
    if mode == "discrete" and record_events:
        d = x.shape[1]
        events = {
            "time": np.concatenate(ev_t) if ev_t else np.zeros(0),
            "position": np.concatenate(ev_x) if ev_x else np.zeros((0, d)),
            "kind": np.concatenate(ev_k) if ev_k else np.zeros(0, dtype=np.int8),
            "lineage": np.concatenate(ev_l) if ev_l else np.zeros(0, dtype=np.int64),
            "cell_id": np.concatenate(ev_id) if ev_id else np.zeros(0, dtype=np.int64),
        }
    return SimulationResult(times=t_eval.copy(), positions=out_x, weights=out_w if w is not None else None,
                            lineage=out_l, cell_ids=out_id, events=events, mode=mode)
