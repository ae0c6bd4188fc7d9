"""Potentials for LSD: the `Potential` protocol, the spec's model systems and torch / ASE adapters (spec section 5).

A potential maps positions x of shape (N, D) (N atoms, D Cartesian components) or a batch (B, N, D) to
energies (scalar or (B,)) and forces -dE/dx of the same shape as x. `supports_batch` says whether a batch is
computed in one vectorised call; otherwise `forces` loops over the batch (the "fallback loop").

Model systems (reduced units unless stated):
    Harmonic(k, center)                     E = k/2 |x - center|^2
    DoubleWell(barrier, a, k_perp)          E = barrier ((x_0/a)^2 - 1)^2 + k_perp/2 sum_{d>=1} x_d^2, per atom
    MullerBrown(scale)                      the Mueller-Brown surface (D = 2), times `scale`
    LennardJones(epsilon, sigma, ...)       pair LJ, optional cutoff (energy shifted), periodic box, soft wall
    EmbeddedLJ(A, alpha, r0, ...)           LJ + many-body embedding -A sum_i sqrt(rho_i),
                                            rho_i = sum_{j != i} exp(-alpha (r_ij - r0)) (spec section 6B)
    TorchPotential(module)                  any nn.Module (B, N, D) -> (B,) energies; forces by autograd
    EmbeddedLJEnergy                        the EmbeddedLJ energy as a torch module (for TorchPotential)
    ASEPotential(calculator, atoms)         an ASE calculator (eV, Angstrom) as a Potential (optional `ase`)

The soft wall (spec section 6B) is E_wall = wall_k/2 sum_i max(0, |x_i - x_bar| - wall_radius)^2 around the
centroid x_bar (the centre of mass for the equal masses used in the reproduction). Periodic boxes are
handled by the minimum image inside the potential; the dynamics run in unwrapped coordinates (spec section 9).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from icml26.common.validation import check_array, check_float

__all__ = [
    "Potential", "Harmonic", "DoubleWell", "MullerBrown", "LennardJones", "EmbeddedLJ",
    "TorchPotential", "EmbeddedLJEnergy", "ASEPotential", "as_batch",
]


def as_batch(x: Any) -> tuple[np.ndarray, bool]:
    """Return (x as float64 array of shape (B, N, D), whether the input was a single (N, D) configuration)."""
    arr = check_array(x, "positions", ndim=(2, 3))
    if arr.ndim == 2:
        return arr[None], True
    return arr, False


class Potential:
    """Base of the `Potential` protocol: `forces(x)`, `energy(x)`, `energy_and_forces(x)`, `supports_batch`.

    Subclasses implement `_compute(xb)` for a batch xb of shape (B, N, D) returning (energies (B,), forces
    (B, N, D)); if `supports_batch` is False, `_compute` is called one configuration at a time (B = 1).
    Duck-typed objects with `forces`/`energy` methods work with the drivers too.
    """

    supports_batch: bool = True

    def _compute(self, xb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - interface
        raise NotImplementedError

    def energy_and_forces(self, x: Any) -> tuple[np.ndarray | float, np.ndarray]:
        """Energies and forces for x of shape (N, D) -> (float, (N, D)) or (B, N, D) -> ((B,), (B, N, D))."""
        xb, single = as_batch(x)
        if self.supports_batch or xb.shape[0] == 1:
            e, f = self._compute(xb)
        else:
            parts = [self._compute(xb[i:i + 1]) for i in range(xb.shape[0])]
            e = np.concatenate([p[0] for p in parts])
            f = np.concatenate([p[1] for p in parts])
        if single:
            return float(e[0]), f[0]
        return e, f

    def forces(self, x: Any) -> np.ndarray:
        """Forces -dE/dx, same shape as x."""
        return self.energy_and_forces(x)[1]

    def energy(self, x: Any) -> np.ndarray | float:
        """Potential energy: a float for (N, D), shape (B,) for (B, N, D)."""
        return self.energy_and_forces(x)[0]


# ------------------------------------------------------------------------------------------ simple fields
class Harmonic(Potential):
    """Isotropic harmonic well E = k/2 |x - center|^2 (k > 0; `center` broadcastable to (N, D))."""

    def __init__(self, k: float = 1.0, center: float | np.ndarray = 0.0):
        self.k = check_float(k, "k", min=0.0, min_open=True)
        self.center = check_array(center, "center")

    def _compute(self, xb):
        d = xb - self.center
        e = 0.5 * self.k * np.sum(d * d, axis=(1, 2))
        return e, -self.k * d

    def __repr__(self) -> str:
        return f"Harmonic(k={self.k})"


class DoubleWell(Potential):
    """Per-atom double well along the first coordinate: barrier ((x_0/a)^2 - 1)^2 + k_perp/2 sum_{d>=1} x_d^2."""

    def __init__(self, barrier: float = 1.0, a: float = 1.0, k_perp: float = 1.0):
        for name, v in (("barrier", barrier), ("a", a), ("k_perp", k_perp)):
            check_float(v, name, min=0.0, min_open=True)
        self.barrier, self.a, self.k_perp = float(barrier), float(a), float(k_perp)

    def _compute(self, xb):
        q = xb[..., 0] / self.a
        e = self.barrier * np.sum((q * q - 1.0) ** 2, axis=1)
        f = -self.k_perp * xb
        f[..., 0] = -self.barrier * 4.0 * q * (q * q - 1.0) / self.a
        if xb.shape[-1] > 1:
            e = e + 0.5 * self.k_perp * np.sum(xb[..., 1:] ** 2, axis=(1, 2))
        return e, f


class MullerBrown(Potential):
    """The Mueller-Brown surface (Mueller & Brown 1979) for every atom of a (N, 2) system, times `scale`."""

    A = np.array([-200.0, -100.0, -170.0, 15.0])
    a = np.array([-1.0, -1.0, -6.5, 0.7])
    b = np.array([0.0, 0.0, 11.0, 0.6])
    c = np.array([-10.0, -10.0, -6.5, 0.7])
    x0 = np.array([1.0, 0.0, -0.5, -1.0])
    y0 = np.array([0.0, 0.5, 1.5, 1.0])

    def __init__(self, scale: float = 1.0):
        self.scale = check_float(scale, "scale", min=0.0, min_open=True)

    def _compute(self, xb):
        if xb.shape[-1] != 2:
            raise ValueError(f"MullerBrown needs D = 2 coordinates, got positions of shape {xb.shape[1:]}")
        dx = xb[..., 0:1] - self.x0                      # (B, N, 4)
        dy = xb[..., 1:2] - self.y0
        t = self.scale * self.A * np.exp(self.a * dx * dx + self.b * dx * dy + self.c * dy * dy)
        e = np.sum(t, axis=(1, 2))
        gx = np.sum(t * (2 * self.a * dx + self.b * dy), axis=-1)
        gy = np.sum(t * (self.b * dx + 2 * self.c * dy), axis=-1)
        return e, -np.stack([gx, gy], axis=-1)


# ------------------------------------------------------------------------------------------ pair potentials
class LennardJones(Potential):
    """Lennard-Jones pair potential 4 eps ((s/r)^12 - (s/r)^6), vectorised over batches.

    Args:
        epsilon, sigma: LJ parameters (> 0). Default reduced units 1, 1.
        cutoff: pair cutoff (energy shifted to 0 at the cutoff) or None for all pairs.
        box: periodic box edge(s) (scalar or (D,)) for minimum-image distances, or None (open boundaries).
        wall_radius, wall_k: soft harmonic wall beyond `wall_radius` from the centroid (None: no wall).
    """

    def __init__(self, epsilon: float = 1.0, sigma: float = 1.0, cutoff: float | None = None,
                 box: float | np.ndarray | None = None, wall_radius: float | None = None, wall_k: float = 10.0):
        for name, v in (("epsilon", epsilon), ("sigma", sigma), ("wall_k", wall_k)):
            check_float(v, name, min=0.0, min_open=True)
        if cutoff is not None:
            check_float(cutoff, "cutoff", min=0.0, min_open=True)
        if wall_radius is not None:
            check_float(wall_radius, "wall_radius", min=0.0, min_open=True)
        if box is not None and np.any(check_array(box, "box") <= 0):
            raise ValueError(f"box must be positive or None, got {box}")
        self.epsilon, self.sigma = float(epsilon), float(sigma)
        self.cutoff = None if cutoff is None else float(cutoff)
        self.box = None if box is None else np.asarray(box, dtype=np.float64)
        self.wall_radius = None if wall_radius is None else float(wall_radius)
        self.wall_k = float(wall_k)

    # pair geometry shared with EmbeddedLJ
    def _pairs(self, xb):
        diff = xb[:, :, None, :] - xb[:, None, :, :]     # (B, N, N, D): x_i - x_j
        if self.box is not None:
            diff = diff - self.box * np.round(diff / self.box)
        r2 = np.sum(diff * diff, axis=-1)
        n = xb.shape[1]
        r2[:, np.arange(n), np.arange(n)] = np.inf           # no self pairs
        mask = None
        if self.cutoff is not None:
            mask = r2 < self.cutoff ** 2
            r2 = np.where(mask, r2, np.inf)
        return diff, r2, mask

    def _lj(self, r2, mask):
        s2 = self.sigma ** 2 / r2
        s6 = s2 * s2 * s2
        pair_e = 4.0 * self.epsilon * (s6 * s6 - s6)
        if self.cutoff is not None:
            c6 = (self.sigma / self.cutoff) ** 6
            pair_e = np.where(mask, pair_e - 4.0 * self.epsilon * (c6 * c6 - c6), 0.0)
        # -(dE/dr) / r
        coef = 24.0 * self.epsilon * (2.0 * s6 * s6 - s6) / r2
        return 0.5 * np.sum(pair_e, axis=(1, 2)), coef

    def _wall(self, xb):
        if self.wall_radius is None:
            return 0.0, 0.0
        com = np.mean(xb, axis=1, keepdims=True)
        d = xb - com
        r = np.sqrt(np.sum(d * d, axis=-1, keepdims=True))
        ex = np.maximum(r - self.wall_radius, 0.0)
        e = 0.5 * self.wall_k * np.sum(ex * ex, axis=(1, 2))
        g = self.wall_k * ex * d / np.where(r > 0, r, 1.0)   # dE/dd_i
        # d_i = x_i - mean(x): dE/dx_j = g_j - mean_i g_i
        return e, -(g - np.mean(g, axis=1, keepdims=True))

    def _compute(self, xb):
        diff, r2, mask = self._pairs(xb)
        e, coef = self._lj(r2, mask)
        f = np.sum(coef[..., None] * diff, axis=2)
        ew, fw = self._wall(xb)
        return e + ew, f + fw

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(epsilon={self.epsilon}, sigma={self.sigma}, cutoff={self.cutoff}, "
                f"wall_radius={self.wall_radius})")


class EmbeddedLJ(LennardJones):
    """LJ + a many-body embedding term (the spec's target of section 6B).

    E = E_LJ - A sum_i sqrt(rho_i),  rho_i = sum_{j != i} exp(-alpha (r_ij - r0)), plus the optional wall.
    A = 0 reduces to `LennardJones`; the RMS force difference to LJ grows with A (spec: about 0.13 / 0.51 /
    1.31 per component for A = 0.05 / 0.2 / 0.5 on LJ-13 at kT = 0.25).
    """

    def __init__(self, A: float = 0.2, alpha: float = 3.0, r0: float = 1.12, **lj_kwargs: Any):
        super().__init__(**lj_kwargs)
        self.A = check_float(A, "A", min=0.0)
        self.alpha = check_float(alpha, "alpha", min=0.0, min_open=True)
        self.r0 = check_float(r0, "r0")

    def _compute(self, xb):
        diff, r2, mask = self._pairs(xb)
        e, coef = self._lj(r2, mask)
        if self.A > 0:
            r = np.sqrt(r2)
            ex = np.exp(-self.alpha * (r - self.r0))                # 0 for self pairs / beyond cutoff (r = inf)
            rho = np.sum(ex, axis=2)                                # (B, N)
            sq = np.sqrt(rho)
            e = e - self.A * np.sum(sq, axis=1)
            g = 0.5 / sq                                            # d sqrt(rho) / d rho
            # dE/dr_ij = A alpha ex_ij (g_i + g_j); -(dE/dr)/r added to the pair coefficient
            coef = coef - self.A * self.alpha * ex * (g[:, :, None] + g[:, None, :]) / np.where(
                np.isfinite(r), r, 1.0)
        f = np.sum(coef[..., None] * diff, axis=2)
        ew, fw = self._wall(xb)
        return e + ew, f + fw

    def __repr__(self) -> str:
        return f"EmbeddedLJ(A={self.A}, alpha={self.alpha}, r0={self.r0}, wall_radius={self.wall_radius})"


# ------------------------------------------------------------------------------------------ torch
def _torch():
    try:
        import torch
    except ModuleNotFoundError as e:  # pragma: no cover - torch is a core dependency
        raise ModuleNotFoundError("TorchPotential needs torch", name="torch") from e
    return torch


class TorchPotential(Potential):
    """A torch energy model as a Potential: forces = -autograd grad of the energy, batched.

    Args:
        module: any `torch.nn.Module` (or callable) mapping positions (B, N, D) to energies (B,).
        dtype: torch dtype of the positions fed to the module (float64 recommended: float32 targets give
            float32-exact chains only).
        device: torch device (e.g. "cuda" for an MLIP on a GPU). Inputs/outputs stay numpy float64.
        max_batch: split larger batches into chunks of this size (None: one call).
    """

    supports_batch = True

    def __init__(self, module: Any, dtype: Any = None, device: Any = "cpu", max_batch: int | None = None):
        torch = _torch()
        if not callable(module):
            raise TypeError(f"module must be a callable torch module, got {type(module).__name__}")
        if max_batch is not None and max_batch < 1:
            raise ValueError(f"max_batch must be >= 1 or None, got {max_batch}")
        self.module = module
        self.dtype = torch.float64 if dtype is None else dtype
        self.device = torch.device(device)
        self.max_batch = max_batch

    def _compute(self, xb):
        if self.max_batch is not None and xb.shape[0] > self.max_batch:
            parts = [self._compute(xb[i:i + self.max_batch]) for i in range(0, xb.shape[0], self.max_batch)]
            return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
        torch = _torch()
        x = torch.as_tensor(xb, dtype=self.dtype, device=self.device).requires_grad_(True)
        with torch.enable_grad():
            e = self.module(x)
            if e.shape != (xb.shape[0],):
                raise ValueError(f"the energy module must return shape (B,) = ({xb.shape[0]},), got "
                                 f"{tuple(e.shape)}")
            (g,) = torch.autograd.grad(e.sum(), x)
        return (e.detach().to("cpu", torch.float64).numpy(),
                (-g).detach().to("cpu", torch.float64).numpy())


def EmbeddedLJEnergy(A: float = 0.2, alpha: float = 3.0, r0: float = 1.12, epsilon: float = 1.0,
                     sigma: float = 1.0, wall_radius: float | None = None, wall_k: float = 10.0):
    """The `EmbeddedLJ` energy (open boundaries, no cutoff) as a `torch.nn.Module`: (B, N, D) -> (B,)."""
    torch = _torch()

    class _EmbeddedLJEnergy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.A, self.alpha, self.r0 = float(A), float(alpha), float(r0)
            self.epsilon, self.sigma = float(epsilon), float(sigma)
            self.wall_radius, self.wall_k = wall_radius, float(wall_k)

        def forward(self, x):
            n = x.shape[1]
            eye = torch.eye(n, dtype=x.dtype, device=x.device)
            diff = x[:, :, None, :] - x[:, None, :, :]
            r2 = (diff * diff).sum(-1) + eye            # self pairs at r = 1 (finite gradients), masked below
            off = 1.0 - eye
            s6 = (self.sigma ** 2 / r2) ** 3
            e = 2.0 * self.epsilon * ((s6 * s6 - s6) * off).sum((1, 2))
            if self.A > 0:
                rho = (torch.exp(-self.alpha * (r2.sqrt() - self.r0)) * off).sum(2)
                e = e - self.A * rho.sqrt().sum(1)
            if self.wall_radius is not None:
                d = x - x.mean(1, keepdim=True)
                r = (d * d).sum(-1).clamp_min(1e-300).sqrt()
                ex = torch.clamp(r - self.wall_radius, min=0.0)
                e = e + 0.5 * self.wall_k * (ex * ex).sum(1)
            return e

    return _EmbeddedLJEnergy()


# ------------------------------------------------------------------------------------------ ASE
class ASEPotential(Potential):
    """An ASE calculator as a Potential (positions in Angstrom, energies in eV, forces in eV/Angstrom).

    Args:
        calculator: an ASE calculator (e.g. `ase.calculators.emt.EMT()`, a MACE/fairchem calculator).
        atoms: an `ase.Atoms` template giving numbers, cell and pbc (copied; its calculator is not used).

    Batches loop over configurations (`supports_batch = False`); calls are serialised with a lock because
    ASE calculators cache state and are not thread-safe. For parallel verification give each worker its own
    calculator (or wrap a batched MLIP with `TorchPotential`).
    """

    supports_batch = False

    def __init__(self, calculator: Any, atoms: Any):
        try:
            import ase  # noqa: F401
        except ModuleNotFoundError as e:
            raise ModuleNotFoundError("ASEPotential needs ase: pip install 'icml26[lsd]'", name="ase") from e
        if not hasattr(calculator, "calculate"):
            raise TypeError(f"calculator must be an ASE calculator, got {type(calculator).__name__}")
        self.calculator = calculator
        self.atoms = atoms.copy()
        self.atoms.calc = calculator
        self._lock = threading.Lock()

    def _compute(self, xb):
        out_e, out_f = [], []
        with self._lock:
            for x in xb:
                if x.shape != self.atoms.positions.shape:
                    raise ValueError(f"positions of shape {x.shape} do not match the atoms ({len(self.atoms)}, 3)")
                self.atoms.positions = x
                out_f.append(np.array(self.atoms.get_forces(), dtype=np.float64))
                out_e.append(float(self.atoms.get_potential_energy()))
        return np.asarray(out_e), np.stack(out_f)
