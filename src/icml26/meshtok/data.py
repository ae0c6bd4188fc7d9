"""PDE trajectories for MeshTok: three seeded simulators and an HDF5 reader/writer in the official layout.

All arrays are float32 of shape (N, T, H, W, C) (trajectories, frames, rows, columns, channels), the layout the
official loaders convert PDEBench / PDENNeval / The Well data into (`data` dataset of an HDF5 file).

- `burgers2d`: viscous Burgers u_t + (u^2/2)_x + (u^2/2)_y = nu Laplace(u) on the periodic unit square (spec 6):
  finite volumes, MUSCL (minmod) + Rusanov flux, SSP-RK2, dt = min(0.4 dx / max|u|, 0.2 dx^2 / nu) per trajectory
  (clipped to land on the output times, so a trajectory does not depend on which others share its batch).
- `allen_cahn2d`: u_t = eps^2 Laplace(u) + u - u^3 (periodic), explicit Euler; long two-phase interfaces.
- `gray_scott2d`: u_t = Du Lap u - u v^2 + F (1 - u), v_t = Dv Lap v + u v^2 - (F + k) v (grid units, periodic),
  explicit Euler; two channels (u, v).
- `read_hdf5` / `write_hdf5`: an HDF5 file with a `data` dataset (N, T, H, W, C) (h5py, extra `[meshtok]`).
- `trajectory_windows`: windows (M, T_w, H, W, C) cut from trajectories at given starts.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from icml26.common.validation import check_array, check_float, check_int, check_seed

__all__ = ["burgers2d", "allen_cahn2d", "gray_scott2d", "read_hdf5", "write_hdf5", "trajectory_windows",
           "burgers_ic", "cached", "BOUNDARY"]

# the boundary condition of each simulator's domain: the refinement indicator pads its stencils to match (a zero
# pad on periodic data sees a jump at the border that is not in the field)
BOUNDARY = {"burgers2d": "periodic", "allen_cahn2d": "periodic", "gray_scott2d": "periodic"}


def _lap(u: np.ndarray, dx: float) -> np.ndarray:
    return (np.roll(u, 1, -1) + np.roll(u, -1, -1) + np.roll(u, 1, -2) + np.roll(u, -1, -2) - 4 * u) / dx ** 2


def _minmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum(0, np.minimum(a, b)) + np.minimum(0, np.maximum(a, b))


def _flux_div_last(u: np.ndarray, dx: float) -> np.ndarray:
    """d/dx of f(u) = u^2 / 2 along the last axis: MUSCL-minmod states and the Rusanov flux (periodic)."""
    n = u.shape[-1]
    up = np.concatenate([u[..., -2:], u, u[..., :2]], -1)  # two ghost cells per side; cell i is up[i + 2]
    d = up[..., 1:] - up[..., :-1]
    s = _minmod(d[..., :-1], d[..., 1:])                    # slope of padded cells 1 .. n + 2
    uL = up[..., 1:n + 2] + 0.5 * s[..., :n + 1]            # interfaces i + 1/2, i = -1 .. n - 1
    uR = up[..., 2:n + 3] - 0.5 * s[..., 1:n + 2]
    F = 0.25 * (uL * uL + uR * uR) - 0.5 * np.maximum(np.abs(uL), np.abs(uR)) * (uR - uL)
    return (F[..., 1:] - F[..., :-1]) / dx


def _flux_div(u: np.ndarray, axis: int, dx: float) -> np.ndarray:
    if axis in (-1, u.ndim - 1):
        return _flux_div_last(u, dx)
    return np.swapaxes(_flux_div_last(np.swapaxes(u, axis, -1), dx), axis, -1)


def burgers_ic(n_traj: int, grid: int, seed: int, max_mode: int = 4, amp: Sequence[float] = (0.8, 1.5),
               offset: int = 0) -> np.ndarray:
    """Random smooth initial fields (n_traj, grid, grid): sum over modes 0 < |k|_inf <= max_mode, ky >= 0, of
    N(0,1) / |k|^2 * sin(2 pi (kx x + ky y) + phase), normalised to max|u| = 1, scaled by U(amp).
    Trajectory i is drawn from its own generator seeded (seed, offset + i)."""
    x = (np.arange(grid) + 0.5) / grid
    X, Y = np.meshgrid(x, x)  # X varies along columns (axis -1), Y along rows
    modes = [(kx, ky) for ky in range(0, max_mode + 1) for kx in range(-max_mode, max_mode + 1)
             if max(abs(kx), ky) > 0]
    k2 = np.array([kx * kx + ky * ky for kx, ky in modes], float)
    arg = 2 * np.pi * np.stack([kx * X + ky * Y for kx, ky in modes])  # (M, grid, grid)
    u = np.zeros((n_traj, grid, grid))
    for i in range(n_traj):  # one generator per trajectory: trajectory i depends on (seed, i) only
        rng = np.random.default_rng([seed, offset + i])
        c = rng.standard_normal(len(modes)) / k2
        ph = rng.uniform(0, 2 * np.pi, len(modes))
        v = np.tensordot(c, np.sin(arg + ph[:, None, None]), 1)
        u[i] = v / np.abs(v).max() * rng.uniform(amp[0], amp[1])
    return u


def burgers2d(n_traj: int, grid: int = 64, n_frames: int = 12, nu: float = 2e-3, dt_frame: float = 0.05,
              t_burn: float = 0.25, seed: int = 0, max_mode: int = 4, amp: Sequence[float] = (0.8, 1.5),
              cfl: float = 0.4, offset: int = 0) -> np.ndarray:
    """Viscous 2-D Burgers trajectories (n_traj, n_frames, grid, grid, 1), float32.

    Frame 0 is the state at t = t_burn (shocks have formed), then one frame every dt_frame. Trajectory i depends
    only on (seed, offset + i) and the physical parameters (per-trajectory time steps), so a data set can be
    generated in chunks (`offset`) by parallel workers.
    """
    n_traj = check_int(n_traj, "n_traj", min=1)
    grid = check_int(grid, "grid", min=4)
    n_frames = check_int(n_frames, "n_frames", min=1)
    nu = check_float(nu, "nu", min=0.0, min_open=True)
    dt_frame = check_float(dt_frame, "dt_frame", min=0.0, min_open=True)
    t_burn = check_float(t_burn, "t_burn", min=0.0)
    seed = check_seed(seed)
    max_mode = check_int(max_mode, "max_mode", min=1)
    a = check_array(amp, "amp", shape=(2,))
    if not 0 < a[0] <= a[1]:
        raise ValueError(f"amp must be (low, high) with 0 < low <= high, got {tuple(a)}")
    cfl = check_float(cfl, "cfl", min=0.0, max=0.5, min_open=True)
    offset = check_int(offset, "offset", min=0)
    dx = 1.0 / grid
    t_end = t_burn + dt_frame * (n_frames - 1)
    if t_end / (0.2 * dx * dx / nu) > 1e5:
        raise ValueError(f"nu={nu} needs more than 1e5 explicit time steps at grid={grid} (dt <= 0.2 dx^2 / nu)")
    u = burgers_ic(n_traj, grid, seed, max_mode, (float(a[0]), float(a[1])), offset).astype(np.float32)

    def rhs(v: np.ndarray) -> np.ndarray:
        return -_flux_div(v, 2, dx) - _flux_div(v, 1, dx) + nu * _lap(v, dx)

    out = np.empty((n_traj, n_frames, grid, grid, 1), np.float32)
    t = np.zeros(n_traj)
    targets = t_burn + dt_frame * np.arange(n_frames)
    for f, tt in enumerate(targets):
        while True:
            left = tt - t
            active = left > 1e-12
            if not active.any():
                break
            umax = np.abs(u).max(axis=(1, 2))
            dt = np.minimum(cfl * dx / np.maximum(umax, 1e-8), 0.2 * dx * dx / nu)
            dt = np.where(active, np.minimum(dt, left), 0.0)
            d = dt[:, None, None].astype(np.float32)
            u1 = u + d * rhs(u)
            u = 0.5 * (u + u1 + d * rhs(u1))
            t = np.where(active, t + dt, t)
            t = np.where(np.abs(tt - t) < 1e-12, tt, t)
        out[:, f, :, :, 0] = u
    if not np.all(np.isfinite(out)):
        raise ValueError("burgers2d produced non-finite values: unstable parameters (nu, cfl, amp)")
    return out


def allen_cahn2d(n_traj: int, grid: int = 64, n_frames: int = 12, eps: float = 0.02, dt: float = 0.02,
                 steps_per_frame: int = 10, burn_in_steps: int = 50, seed: int = 0) -> np.ndarray:
    """Allen-Cahn u_t = eps^2 Lap u + u - u^3 on the periodic unit square, (n_traj, n_frames, grid, grid, 1).

    Initial state: uniform noise in [-0.5, 0.5] smoothed by 3 Jacobi sweeps; explicit Euler with time step dt
    (requires dt <= dx^2 / (4 eps^2) and dt < 0.5 for stability; checked).
    """
    n_traj = check_int(n_traj, "n_traj", min=1)
    grid = check_int(grid, "grid", min=4)
    n_frames = check_int(n_frames, "n_frames", min=1)
    eps = check_float(eps, "eps", min=0.0, min_open=True)
    dt = check_float(dt, "dt", min=0.0, min_open=True)
    spf = check_int(steps_per_frame, "steps_per_frame", min=1)
    burn = check_int(burn_in_steps, "burn_in_steps", min=0)
    seed = check_seed(seed)
    dx = 1.0 / grid
    if dt > dx * dx / (4 * eps * eps) or dt >= 0.5:
        raise ValueError(f"dt={dt} is unstable for eps={eps}, grid={grid} (need dt <= dx^2/(4 eps^2) and < 0.5)")
    rng = np.random.default_rng(seed)
    u = rng.uniform(-0.5, 0.5, (n_traj, grid, grid))
    for _ in range(3):
        u = 0.2 * (u + np.roll(u, 1, -1) + np.roll(u, -1, -1) + np.roll(u, 1, -2) + np.roll(u, -1, -2))
    out = np.empty((n_traj, n_frames, grid, grid, 1), np.float32)
    for _ in range(burn):
        u = u + dt * (eps * eps * _lap(u, dx) + u - u ** 3)
    for f in range(n_frames):
        out[:, f, :, :, 0] = u
        for _ in range(spf):
            u = u + dt * (eps * eps * _lap(u, dx) + u - u ** 3)
    return out


def gray_scott2d(n_traj: int, grid: int = 64, n_frames: int = 12, F: float = 0.035, k: float = 0.065,
                 Du: float = 0.16, Dv: float = 0.08, steps_per_frame: int = 100, burn_in_steps: int = 1000,
                 seed: int = 0) -> np.ndarray:
    """Gray-Scott reaction-diffusion in grid units (dx = 1, dt = 1), (n_traj, n_frames, grid, grid, 2) = (u, v).

    Initial state u = 1, v = 0 with 3 random square seeds (u = 0.5, v = 0.25) plus 1 % noise.
    """
    n_traj = check_int(n_traj, "n_traj", min=1)
    grid = check_int(grid, "grid", min=8)
    n_frames = check_int(n_frames, "n_frames", min=1)
    F = check_float(F, "F", min=0.0)
    k = check_float(k, "k", min=0.0)
    Du = check_float(Du, "Du", min=0.0, max=0.25)
    Dv = check_float(Dv, "Dv", min=0.0, max=0.25)
    spf = check_int(steps_per_frame, "steps_per_frame", min=1)
    burn = check_int(burn_in_steps, "burn_in_steps", min=0)
    seed = check_seed(seed)
    rng = np.random.default_rng(seed)
    u = np.ones((n_traj, grid, grid))
    v = np.zeros((n_traj, grid, grid))
    s = max(2, grid // 10)
    for i in range(n_traj):
        for _ in range(3):
            r, c = rng.integers(0, grid - s, 2)
            u[i, r:r + s, c:c + s] = 0.5
            v[i, r:r + s, c:c + s] = 0.25
    u += 0.01 * rng.standard_normal(u.shape)
    v += 0.01 * rng.standard_normal(v.shape)

    def step(u, v):
        uvv = u * v * v
        return u + Du * _lap(u, 1.0) - uvv + F * (1 - u), v + Dv * _lap(v, 1.0) + uvv - (F + k) * v

    for _ in range(burn):
        u, v = step(u, v)
    out = np.empty((n_traj, n_frames, grid, grid, 2), np.float32)
    for f in range(n_frames):
        out[:, f, :, :, 0], out[:, f, :, :, 1] = u, v
        for _ in range(spf):
            u, v = step(u, v)
    return out


def _h5py():
    try:
        import h5py
    except ImportError as e:  # pragma: no cover - h5py is in the [meshtok] extra
        raise ImportError("read_hdf5/write_hdf5 need the optional package h5py: pip install 'icml26[meshtok]'") from e
    return h5py


def write_hdf5(path: str | os.PathLike, data: Any, key: str = "data") -> Path:
    """Write trajectories (N, T, H, W, C) to `path` as dataset `key` (float32)."""
    arr = check_array(data, "data", ndim=5, dtype=np.float32)
    if not isinstance(key, str) or not key:
        raise TypeError(f"key must be a non-empty string, got {key!r}")
    h5py = _h5py()
    path = Path(path)
    with h5py.File(path, "w") as f:
        f.create_dataset(key, data=arr)
    return path


def read_hdf5(path: str | os.PathLike, key: str = "data", index: Any = None) -> np.ndarray:
    """Read trajectories (N, T, H, W, C) float32 from an HDF5 file in the official layout.

    `index`: optional slice / index array over N (read only those trajectories). A file whose dataset is not
    5-D, or holds NaN/inf, raises ValueError.
    """
    if not isinstance(key, str) or not key:
        raise TypeError(f"key must be a non-empty string, got {key!r}")
    h5py = _h5py()
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path {str(path)!r} is not a file")
    with h5py.File(path, "r") as f:
        if key not in f:
            raise ValueError(f"{str(path)!r} has no dataset {key!r} (has {sorted(f.keys())})")
        ds = f[key]
        if ds.ndim != 5:
            raise ValueError(f"dataset {key!r} must be (N, T, H, W, C), got shape {ds.shape}")
        arr = ds[()] if index is None else ds[index]
    return check_array(arr, f"{path.name}:{key}", ndim=5, dtype=np.float32)


def trajectory_windows(data: Any, length: int, starts: Sequence[int] | None = None, stride: int | None = None
                       ) -> np.ndarray:
    """Windows (N * len(starts), length, H, W, C) of `length` consecutive frames from each trajectory.

    `starts`: first frames (default: every `stride` frames, stride default `length`, while the window fits).
    """
    arr = check_array(data, "data", ndim=5, dtype=np.float32)
    T = arr.shape[1]
    length = check_int(length, "length", min=1, max=T)
    if starts is None:
        stride = check_int(length if stride is None else stride, "stride", min=1)
        starts = list(range(0, T - length + 1, stride))
    st = [check_int(s, f"starts[{i}]", min=0, max=T - length) for i, s in enumerate(starts)]
    if not st:
        raise ValueError("starts must not be empty")
    return np.concatenate([arr[:, s:s + length] for s in st], 0)


def cached(fn_name: str, cache: str | os.PathLike | None, **kwargs: Any) -> np.ndarray:
    """`burgers2d` / `allen_cahn2d` / `gray_scott2d` (by name) with an .npz cache keyed by the arguments."""
    fns = {"burgers2d": burgers2d, "allen_cahn2d": allen_cahn2d, "gray_scott2d": gray_scott2d}
    if fn_name not in fns:
        raise ValueError(f"fn_name must be one of {sorted(fns)}, got {fn_name!r}")
    if cache is None:
        return fns[fn_name](**kwargs)
    key = hashlib.sha256(json.dumps([fn_name, kwargs], sort_keys=True, default=str).encode()).hexdigest()[:16]
    path = Path(cache) / f"{fn_name}_{key}.npz"
    if path.is_file():
        with np.load(path) as z:
            return z["data"]
    arr = fns[fn_name](**kwargs)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}.npz")
    np.savez(tmp, data=arr)
    os.replace(tmp, path)
    return arr
