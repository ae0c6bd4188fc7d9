"""Ground-truth branching SDE of the CPU reproduction (spec section 6), also a public data generator.

2-D cells move right and commit to y = +1 or -1 once x passes ~0.5; the upper fate proliferates, the lower
fate dies:
    f(x, y) = (1, -a(x) y (y^2 - 1)),  a(x) = 3 clip(x, 0, 1),  sigma = 0.2,
    beta(x, y) = 0.8 sigmoid(6 y),     delta(x, y) = 0.6 sigmoid(-6 y),
from 200 cells ~ N(0, 0.1^2 I), Euler-Maruyama dt = 0.01 with competing exponential events, observed at
t = 0, 1, 2, 3 (expected counts about 200 / 241 / 378 / 756).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from icml26.common.validation import check_array, check_float, check_int, check_seed
from icml26.usb.simulate import SimulationResult, simulate_population

__all__ = ["BranchingData", "simulate_branching", "true_drift", "true_rates", "true_growth", "embed_highdim"]

SIGMA_TRUE = 0.2


def true_drift(x: torch.Tensor, t: float) -> torch.Tensor:
    """Ground-truth drift f(x, y) = (1, -3 clip(x,0,1) y (y^2 - 1)); x: (n, 2) tensor."""
    a = 3.0 * x[:, 0].clamp(0.0, 1.0)
    y = x[:, 1]
    return torch.stack([torch.ones_like(y), -a * y * (y * y - 1.0)], dim=1)


def true_rates(x: torch.Tensor, t: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Ground-truth birth 0.8 sigmoid(6y) and death 0.6 sigmoid(-6y), each (n,)."""
    y = x[:, 1]
    return 0.8 * torch.sigmoid(6.0 * y), 0.6 * torch.sigmoid(-6.0 * y)


def true_growth(x) -> np.ndarray:
    """Ground-truth net growth beta - delta at points x (n, 2) (numpy in, numpy out)."""
    xt = torch.as_tensor(np.asarray(x, dtype=np.float64))
    b, d = true_rates(xt, 0.0)
    return (b - d).numpy()


@dataclass
class BranchingData:
    """Snapshots of one simulated population.

    snapshots: list of (N_k, d) arrays at `times`; lineage: ancestor index in the t=0 population per cell;
    simulation: the full SimulationResult (event log included).
    """

    snapshots: list[np.ndarray]
    times: np.ndarray
    lineage: list[np.ndarray]
    simulation: SimulationResult


def simulate_branching(
    n0: int = 200,
    times=(0.0, 1.0, 2.0, 3.0),
    *,
    sigma: float = SIGMA_TRUE,
    dt: float = 0.01,
    seed: int = 0,
    x0: np.ndarray | None = None,
    init_std: float = 0.1,
    max_particles: int = 200_000,
) -> BranchingData:
    """Simulate the spec's branching + proliferation system and return its snapshots.

    Args:
        n0: number of initial cells (ignored when x0 is given).
        times: observation times (the first is the start time).
        sigma: diffusion; dt: Euler step; seed: RNG seed (initial cells and dynamics).
        x0: optional (n0, 2) initial cells (for replicate simulations from the same X_0).
    """
    rng = np.random.default_rng(check_seed(seed, "seed"))
    init_std = check_float(init_std, "init_std", min=0.0)
    if x0 is None:
        x0 = rng.normal(0.0, init_std, size=(check_int(n0, "n0", min=1), 2))
    else:
        x0 = check_array(x0, "x0", shape=(None, 2))
    sim = simulate_population(x0, times, true_drift, sigma, rates=true_rates, mode="discrete", dt=dt,
                              seed=int(rng.integers(2**31)), max_particles=max_particles, dtype=torch.float64)
    return BranchingData(snapshots=sim.positions, times=np.asarray(times, dtype=float), lineage=sim.lineage,
                         simulation=sim)


def embed_highdim(snapshots: list[np.ndarray], dim: int = 20, noise: float = 0.05, seed: int = 0
                  ) -> tuple[list[np.ndarray], np.ndarray]:
    """Embed 2-D snapshots in `dim` dimensions with a fixed random orthonormal map plus N(0, noise^2) in
    the extra dimensions (spec section 6, optional variant). Returns (embedded snapshots, (dim, dim) basis Q;
    the first two columns of Q span the signal)."""
    dim = check_int(dim, "dim", min=2)
    noise = check_float(noise, "noise", min=0.0)
    rng = np.random.default_rng(check_seed(seed, "seed"))
    q, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
    out = []
    for s in snapshots:
        z = np.concatenate([s, noise * rng.normal(size=(len(s), dim - 2))], axis=1)
        out.append(z @ q.T)
    return out, q
