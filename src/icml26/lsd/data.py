"""Model systems and known answers for the LSD reproduction (spec section 6). Everything is generated in code.

* `icosahedron(radius, noise, rng)`: the 13-atom Mackay icosahedron (centre + 12 vertices at `radius`).
* `quenched_cluster(n, radius, rng)`: n LJ atoms at random in a sphere, quenched by gradient descent on LJ.
* `harmonic_exact_law(...)`: the exact mean and covariance of (x_n, w_n) of the BAOAB chain in a harmonic
  well (linear-Gaussian recursion; spec section 6A), per Cartesian coordinate.
* `radius_of_gyration(positions)`: Rg of (..., N, D) frames.
"""

from __future__ import annotations

import math

import numpy as np

from icml26.lsd.potentials import LennardJones

__all__ = ["icosahedron", "quenched_cluster", "harmonic_exact_law", "radius_of_gyration"]


def icosahedron(radius: float = 1.1, noise: float = 0.01, rng: np.random.Generator | None = None) -> np.ndarray:
    """LJ-13 start: centre atom + 12 icosahedron vertices at distance `radius`, plus N(0, noise^2); (13, 3)."""
    phi = (1 + math.sqrt(5)) / 2
    v = []
    for a in (-1.0, 1.0):
        for b in (-phi, phi):
            v += [(0.0, a, b), (a, b, 0.0), (b, 0.0, a)]
    v = np.array(v)
    v = v / np.linalg.norm(v, axis=1, keepdims=True) * radius
    x = np.vstack([np.zeros((1, 3)), v])
    if noise:
        rng = rng if rng is not None else np.random.default_rng(0)
        x = x + noise * rng.standard_normal(x.shape)
    return x


def quenched_cluster(n_atoms: int, radius: float | None = None, rng: np.random.Generator | None = None,
                     n_iter: int = 3000, step: float = 2e-3) -> np.ndarray:
    """n_atoms at random in a sphere (default radius at LJ liquid density), quenched on LJ by gradient descent.

    Gradient descent with a capped step (max displacement 0.05 sigma per iteration); returns (n_atoms, 3).
    """
    if n_atoms < 2:
        raise ValueError(f"n_atoms must be >= 2, got {n_atoms}")
    rng = rng if rng is not None else np.random.default_rng(0)
    radius = radius if radius is not None else 0.62 * n_atoms ** (1 / 3)
    x = []
    while len(x) < n_atoms:  # rejection sampling in the sphere with a minimum distance (no overlaps)
        p = rng.uniform(-radius, radius, 3)
        if np.linalg.norm(p) <= radius and all(np.linalg.norm(p - q) > 0.85 for q in x):
            x.append(p)
    x = np.array(x)
    lj = LennardJones()
    for _ in range(n_iter):
        f = lj.forces(x)
        d = step * f
        mx = np.max(np.abs(d))
        if mx > 0.05:
            d *= 0.05 / mx
        x = x + d
    return x - x.mean(0)


def harmonic_exact_law(k: float, mass: float, kT: float, friction: float, timestep: float, x0: float,
                       w0: float, n_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact law of (x_n, w_n) for BAOAB in E = k x^2 / 2 (one coordinate), from a fixed (x0, w0).

    The step is linear-Gaussian: with a = (h/2)(1+c), sigma = (h/2) sqrt((1-c^2) kT/m),
        x' = (1 - a h k / m) x + a w + sigma xi,     w' = -c (h k / m) x + c w + (2 sigma / h) xi.
    Returns (mean (2,), covariance (2, 2)) of (x_n, w_n).
    """
    h, c = timestep, math.exp(-friction * timestep)
    a = 0.5 * h * (1 + c)
    sig = 0.5 * h * math.sqrt((1 - c * c) * kT / mass)
    M = np.array([[1 - a * h * k / mass, a], [-c * h * k / mass, c]])
    b = np.array([sig, 2 * sig / h])
    mean = np.array([x0, w0], dtype=float)
    cov = np.zeros((2, 2))
    for _ in range(n_steps):
        mean = M @ mean
        cov = M @ cov @ M.T + np.outer(b, b)
    return mean, cov


def radius_of_gyration(positions: np.ndarray) -> np.ndarray:
    """Rg = sqrt(mean_i |x_i - x_bar|^2) for frames of shape (..., N, D)."""
    p = np.asarray(positions)
    d = p - p.mean(axis=-2, keepdims=True)
    return np.sqrt(np.mean(np.sum(d * d, axis=-1), axis=-1))
