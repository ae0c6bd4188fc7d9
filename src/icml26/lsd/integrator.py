"""BAOAB ("Langevin middle") integrator written as a one-Gaussian-variable Markov step (spec section 2.1).

The spec's merged-half-kick form (our derivation, section 2.1 **[ours]**; BAOAB itself is the standard
Leimkuhler-Matthews scheme, OpenMM's ``LangevinMiddleIntegrator``). Per coordinate of atom i (mass m_i),
timestep h, friction gamma > 0, temperature kT, c = exp(-gamma h), s_i = sqrt((1 - c^2) kT / m_i).
The chain state is z_n = (x_n, w_n) with w_n the velocity right after the previous O-step
(w_n = v_n - (h / 2m) F(x_n)). One step with force field F:

    v+      = w_n + (h / m) F(x_n)                       (B half-kick of this step + B half-kick of the last)
    mu      = x_n + (h / 2) (1 + c) v+                   (mean of the next position)
    x_{n+1} = mu + sigma_x xi,  sigma_x,i = (h / 2) s_i,  xi ~ N(0, I)
    w_{n+1} = (2 / h) (x_{n+1} - x_n) - v+               (deterministic given x_{n+1})

The physical velocity is v_n = w_n + (h / 2m) F(x_n). Only the position update is random and its covariance
diag(sigma_x^2) does not depend on the force field: draft and target steps from one state are two Gaussians
with the same covariance and different means, which is what the reflection-maximal coupling needs.

Any other integrator can be plugged into `LangevinSpeculativeDynamics` if it offers the same five methods
(`prepare`, `mean`, `next_w`, `initial_w`, `velocity`) and the same structure (one Gaussian variable whose
covariance does not depend on the model).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from icml26.common.validation import check_array, check_float

__all__ = ["BAOAB"]


def _positive(name: str, value: float, why: str = "") -> float:
    try:
        return check_float(value, name, min=0.0, min_open=True)
    except ValueError:
        raise ValueError(f"{name} must be a positive finite number{why}, got {value!r}") from None


@dataclass
class BAOAB:
    """BAOAB Langevin integrator in the (x, w) chain-state form of the spec (section 2.1).

    Args:
        timestep: h > 0 (time units of the potential; ASE units when used with ASE calculators).
        friction: gamma > 0 (1 / time). gamma = 0 (NVE) has no noise, hence nothing to couple: rejected.
        kT: thermal energy > 0 (energy units of the potential).
        masses: a scalar or an array of shape (N,) with one mass per atom (default 1.0).

    Arrays: positions x and velocities have shape (N, D) (N atoms, D Cartesian components); `sigma(n)` and
    `inv_mass(n)` have shape (N, 1) so that they broadcast over D.
    """

    timestep: float = 0.005
    friction: float = 1.0
    kT: float = 1.0
    masses: float | np.ndarray = 1.0
    _masses_arr: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.timestep = _positive("timestep", self.timestep)
        self.friction = _positive(
            "friction", self.friction,
            " (gamma = 0 is deterministic NVE dynamics: without noise there is no Gaussian step to couple, so "
            "speculative Langevin cannot accelerate it)")
        self.kT = _positive("kT", self.kT)
        m = check_array(self.masses, "masses")
        if m.ndim > 1:
            raise ValueError(f"masses must be a scalar or an array of shape (N,), got shape {m.shape}")
        if not np.all(np.isfinite(m)) or np.any(m <= 0):
            raise ValueError("masses must be positive and finite")
        self._masses_arr = m

    # ------------------------------------------------------------------------------------------ constants
    @property
    def c(self) -> float:
        """c = exp(-gamma h), the O-step velocity damping factor."""
        return math.exp(-self.friction * self.timestep)

    def masses_for(self, n_atoms: int) -> np.ndarray:
        """Masses as an array of shape (n_atoms, 1); raises ValueError if an (N,) array has the wrong N."""
        m = self._masses_arr
        if m.ndim == 0:
            return np.full((n_atoms, 1), float(m))
        if m.shape[0] != n_atoms:
            raise ValueError(f"masses has shape {m.shape} but the positions have {n_atoms} atoms")
        return m.reshape(n_atoms, 1).copy()

    def prepare(self, n_atoms: int) -> None:
        """Precompute the per-atom constants for a system of `n_atoms` atoms (called by the drivers at the start of
        every run; the parameters are validated again, since dataclass fields can be changed after __init__)."""
        self.__post_init__()
        m = self.masses_for(n_atoms)
        h, c = self.timestep, self.c
        self._n = n_atoms
        self._h_over_m = h / m                                   # (N, 1)
        self._half_h_over_m = 0.5 * h / m
        self._drift = 0.5 * h * (1.0 + c)                        # (h/2)(1+c)
        self._two_over_h = 2.0 / h
        with np.errstate(over="ignore", invalid="ignore"):
            self._sigma = 0.5 * h * np.sqrt((1.0 - c * c) * self.kT / m)  # sigma_x,i = (h/2) s_i, (N, 1)
            finite = np.all(np.isfinite(self._h_over_m)) and np.all(np.isfinite(self._sigma))
        if not finite:
            self._n = None
            raise ValueError(f"timestep={h!r}, kT={self.kT!r} and masses give a non-finite step or noise scale "
                             "(float overflow); use physical units (e.g. fs, kJ/mol, amu)")

    def _check(self, n_atoms: int) -> None:
        if getattr(self, "_n", None) != n_atoms:
            self.prepare(n_atoms)

    def sigma(self, n_atoms: int) -> np.ndarray:
        """Standard deviation of the next position, sigma_x,i = (h/2) sqrt((1 - c^2) kT / m_i); shape (N, 1)."""
        self._check(n_atoms)
        return self._sigma

    # ------------------------------------------------------------------------------------------ the step
    def mean(self, x: np.ndarray, w: np.ndarray, forces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean of the next position and the kicked velocity: returns (mu, v+), both (N, D)."""
        self._check(x.shape[0])
        vplus = w + self._h_over_m * forces
        return x + self._drift * vplus, vplus

    def next_w(self, x: np.ndarray, x_new: np.ndarray, vplus: np.ndarray) -> np.ndarray:
        """w_{n+1} = (2/h)(x_{n+1} - x_n) - v+ (deterministic given the new position)."""
        return self._two_over_h * (x_new - x) - vplus

    def initial_w(self, v0: np.ndarray, forces0: np.ndarray) -> np.ndarray:
        """w_0 = v_0 - (h/2m) F(x_0)."""
        self._check(v0.shape[0])
        return v0 - self._half_h_over_m * forces0

    def velocity(self, w: np.ndarray, forces: np.ndarray) -> np.ndarray:
        """Physical (on-step) velocity v_n = w_n + (h/2m) F(x_n)."""
        self._check(w.shape[0])
        return w + self._half_h_over_m * forces

    def step(self, x: np.ndarray, w: np.ndarray, forces: np.ndarray, noise: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
        """One full BAOAB step with standard-normal `noise` (N, D): returns (x_{n+1}, w_{n+1})."""
        mu, vplus = self.mean(x, w, forces)
        x_new = mu + self._sigma * noise
        return x_new, self.next_w(x, x_new, vplus)

    def maxwell_boltzmann(self, n_atoms: int, dim: int, rng: np.random.Generator) -> np.ndarray:
        """Velocities drawn from the Maxwell-Boltzmann distribution at kT; shape (n_atoms, dim)."""
        m = self.masses_for(n_atoms)
        return rng.standard_normal((n_atoms, dim)) * np.sqrt(self.kT / m)
