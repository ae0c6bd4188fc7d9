"""Synthetic hyperspectral cubes (linear mixing model), the degradation, and a `.mat` loader (spec 6, 5).

`synthetic_hsi` follows spec 6: a shared library of endmember spectra (drawn from `library_seed`, so train and
test share it), Voronoi regions each dominated by one of the image's E endmembers, abundances = softmax of
(8 one-hot + 1.5 GRF(sigma 6 px) + 0.3 GRF(sigma 3 px)) / 0.7, a smooth illumination field, N(0, 0.002^2) noise,
clipped to [0, 1]. GRF = white noise filtered by a Gaussian in Fourier space, rescaled to unit std.
`degrade` is the bicubic (antialiased) downsampling used for the LR input and the intermediate pyramid targets.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from icml26.common.validation import check_choice, check_int, check_seed, check_tensor

__all__ = ["SyntheticHSI", "degrade", "endmember_library", "load_mat", "photo_hsi", "synthetic_hsi", "wavelengths"]


def wavelengths(bands: int) -> np.ndarray:
    """`bands` wavelengths (nm) evenly spaced over 400-700 nm."""
    return np.linspace(400.0, 700.0, check_int(bands, "bands", min=1))


def endmember_library(n: int = 12, bands: int = 31, seed: int = 0) -> np.ndarray:
    """(n, bands) reflectance spectra in [0.05, 0.95] (spec 6), smoothed by a 3-band moving average."""
    n = check_int(n, "n", min=1)
    lam = wavelengths(bands)
    rng = np.random.default_rng(check_seed(seed, "seed"))
    out = np.empty((n, lam.size))
    for i in range(n):
        s = rng.uniform(0.1, 0.5) + rng.uniform(-0.3, 0.3) * (lam - 550.0) / 300.0
        for _ in range(rng.integers(2, 5)):
            c, wdt, hgt = rng.uniform(400, 700), rng.uniform(15, 80), rng.uniform(-0.3, 0.6)
            s = s + hgt * np.exp(-0.5 * ((lam - c) / wdt) ** 2)
        s = np.clip(s, 0.05, 0.95)
        padded = np.pad(s, 1, mode="edge")
        out[i] = (padded[:-2] + padded[1:-1] + padded[2:]) / 3.0
    return out


def _field(rng: np.random.Generator, size: int, sigma: float, count: int = 1) -> np.ndarray:
    """`count` Gaussian random fields (count, size, size) with correlation length `sigma` px, unit std each."""
    noise = rng.standard_normal((count, size, size))
    f = np.fft.fftfreq(size)
    filt = np.exp(-2.0 * (np.pi * sigma) ** 2 * (f[:, None] ** 2 + f[None, :] ** 2))
    out = np.real(np.fft.ifft2(np.fft.fft2(noise) * filt))
    out -= out.mean(axis=(1, 2), keepdims=True)
    return out / np.maximum(out.std(axis=(1, 2), keepdims=True), 1e-12)


@dataclass
class SyntheticHSI:
    """hr (n, bands, size, size) float32 in [0, 1]; abundances (n, E, size, size), non-negative, summing to 1
    over E; endmembers (n, E, bands), each image's E spectra."""

    hr: torch.Tensor
    abundances: torch.Tensor
    endmembers: torch.Tensor


def synthetic_hsi(n: int, size: int = 64, bands: int = 31, n_endmembers: int = 6, seed: int = 0, *,
                  library_size: int = 12, library_seed: int = 0, noise_std: float = 0.002,
                  return_all: bool = False) -> torch.Tensor | SyntheticHSI:
    """`n` seeded HR cubes (n, bands, size, size) float32 in [0, 1] from the linear mixing model of spec 6.

    Each image draws `n_endmembers` of the `library_size` shared spectra (`endmember_library(library_seed)`).
    `return_all=True` returns a `SyntheticHSI` with the abundances and endmembers too.
    """
    n = check_int(n, "n", min=1)
    size = check_int(size, "size", min=2)
    bands = check_int(bands, "bands", min=1)
    library_size = check_int(library_size, "library_size", min=1)
    e = check_int(n_endmembers, "n_endmembers", min=1, max=library_size)
    rng = np.random.default_rng(check_seed(seed, "seed"))
    if not isinstance(noise_std, (int, float)) or isinstance(noise_std, bool) or not np.isfinite(noise_std) \
            or noise_std < 0:
        raise ValueError(f"noise_std must be a finite number >= 0, got {noise_std!r}")
    lib = endmember_library(library_size, bands, library_seed)
    yy, xx = np.mgrid[0:size, 0:size]
    hr = np.empty((n, bands, size, size), np.float32)
    ab = np.empty((n, e, size, size), np.float32)
    em = np.empty((n, e, bands), np.float32)
    for i in range(n):
        spectra = lib[rng.choice(library_size, e, replace=False)]  # (E, bands)
        k = int(rng.integers(8, 21))
        pts = rng.uniform(0, size, (k, 2))
        d2 = (yy[None] - pts[:, 0, None, None]) ** 2 + (xx[None] - pts[:, 1, None, None]) ** 2
        region = d2.argmin(axis=0)  # Voronoi label per pixel
        dominant = rng.integers(0, e, k)[region]  # (size, size) endmember index
        logits = 8.0 * (np.arange(e)[:, None, None] == dominant[None]) + 1.5 * _field(rng, size, 6.0, e) \
            + 0.3 * _field(rng, size, 3.0, e)
        z = logits / 0.7
        z = np.exp(z - z.max(axis=0, keepdims=True))
        a = z / z.sum(axis=0, keepdims=True)
        illum = 0.9 + 0.2 * np.clip(0.5 * _field(rng, size, 12.0)[0], -1.0, 1.0)
        cube = np.einsum("ehw,eb->bhw", a, spectra) * illum[None] + noise_std * rng.standard_normal(
            (bands, size, size))
        hr[i], ab[i], em[i] = np.clip(cube, 0.0, 1.0), a, spectra
    hr_t = torch.from_numpy(hr)
    if return_all:
        return SyntheticHSI(hr_t, torch.from_numpy(ab), torch.from_numpy(em))
    return hr_t


def photo_hsi(n: int, size: int = 128, bands: int = 31, seed: int = 0, *, library_seed: int = 0,
              noise_std: float = 0.002) -> torch.Tensor:
    """`n` photo-derived cubes (n, bands, size, size) in [0, 1] (review note 9, ../shared/DATA.md recipe): random
    crops of scikit-learn's two sample photos (427 x 640 RGB) whose R, G, B and a dark component (1 - max) become
    the abundances of 4 spectra of the shared library. Real image structure (pixel-scale texture, sharp edges),
    unlike `synthetic_hsi`'s smooth fields: the domain-shift test set."""
    n = check_int(n, "n", min=1)
    size = check_int(size, "size", min=2, max=427)
    bands = check_int(bands, "bands", min=1)
    rng = np.random.default_rng(check_seed(seed, "seed"))
    try:
        from sklearn.datasets import load_sample_images
    except ImportError:  # pragma: no cover - scikit-learn is in the [ssdcn] extra
        raise ImportError("photo_hsi needs scikit-learn and pillow: pip install icml26[ssdcn]") from None
    photos = [np.asarray(im, dtype=np.float64) / 255.0 for im in load_sample_images().images]
    lib = endmember_library(12, bands, library_seed)
    out = np.empty((n, bands, size, size), np.float32)
    for i in range(n):
        im = photos[int(rng.integers(len(photos)))]
        y, x = int(rng.integers(im.shape[0] - size + 1)), int(rng.integers(im.shape[1] - size + 1))
        rgb = im[y:y + size, x:x + size]
        a = np.concatenate([rgb, 1.0 - rgb.max(axis=2, keepdims=True)], axis=2) + 1e-3
        a = a / a.sum(axis=2, keepdims=True)  # (size, size, 4), sums to 1
        spectra = lib[rng.choice(12, 4, replace=False)]
        cube = np.einsum("hwe,eb->bhw", a, spectra) + noise_std * rng.standard_normal((bands, size, size))
        out[i] = np.clip(cube, 0.0, 1.0)
    return torch.from_numpy(out)


def degrade(hr: Any, scale: int, kernel: str = "bicubic", sigma: float | None = None) -> torch.Tensor:
    """Downsample hr (B, C, H, W) by `scale` (H, W divisible by it); output clipped to [0, 1].

    kernel "bicubic": `F.interpolate(mode="bicubic", antialias=True)` (spec 6). kernel "gaussian": Gaussian blur
    (std `sigma`, default 0.5 * scale, kernel 2*ceil(3 sigma)+1, reflect padding) then decimation at the centre
    of each scale x scale cell.
    """
    hr = check_tensor(hr, "hr", ndim=4)
    scale = check_int(scale, "scale", min=1)
    check_choice(kernel, "kernel", ("bicubic", "gaussian"))
    h, w = hr.shape[-2:]
    if h % scale or w % scale:
        raise ValueError(f"hr height and width must be divisible by scale={scale}, got shape {tuple(hr.shape)}")
    if scale == 1:
        return hr.clamp(0.0, 1.0)
    if kernel == "bicubic":
        out = F.interpolate(hr, size=(h // scale, w // scale), mode="bicubic", antialias=True, align_corners=False)
    else:
        s = 0.5 * scale if sigma is None else float(sigma)
        if not np.isfinite(s) or s <= 0:
            raise ValueError(f"sigma must be a finite number > 0, got {sigma!r}")
        r = int(np.ceil(3 * s))
        g = torch.exp(-0.5 * (torch.arange(-r, r + 1, dtype=hr.dtype) / s) ** 2)
        g = g / g.sum()
        c = hr.shape[1]
        x = F.pad(hr, (r, r, r, r), mode="reflect") if min(h, w) > r else F.pad(hr, (r, r, r, r), mode="replicate")
        x = F.conv2d(x, g.view(1, 1, 1, -1).repeat(c, 1, 1, 1), groups=c)
        x = F.conv2d(x, g.view(1, 1, -1, 1).repeat(c, 1, 1, 1), groups=c)
        off = scale // 2
        out = x[..., off::scale, off::scale]
    return out.clamp(0.0, 1.0)


def load_mat(path: str | Path, key: str | None = None, *, bands_last: bool = True,
             normalize: str = "max") -> torch.Tensor:
    """Load one hyperspectral cube from a `.mat` file (MATLAB v5 via scipy.io, v7.3/HDF5 via h5py) as (C, H, W).

    Args:
        path: the file (CAVE / Chikusei / Pavia style).
        key: the variable name; default: the only non-meta numeric 3-D array in the file.
        bands_last: the stored array is (H, W, C) as in most releases (v7.3 files are read transposed by h5py,
            which this accounts for).
        normalize: "max" divides by the cube's maximum (values in [0, 1]); "none" keeps the raw values.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path {str(path)!r} is not a file")
    check_choice(normalize, "normalize", ("max", "none"))
    try:
        import scipy.io
        from scipy.io.matlab import MatReadError

        arrays = {k: np.asarray(v) for k, v in scipy.io.loadmat(str(path)).items() if not k.startswith("__")}
    except (NotImplementedError, ValueError, MatReadError):  # MATLAB v7.3 files are HDF5
        try:
            import h5py
        except ImportError:  # pragma: no cover - h5py is in the [ssdcn] extra
            raise ImportError("reading MATLAB v7.3 (.mat HDF5) files needs h5py: pip install icml26[ssdcn]") from None
        try:
            with h5py.File(path, "r") as f:
                # h5py sees MATLAB's column-major arrays transposed; .T restores MATLAB's (H, W, C) order
                arrays = {k: np.asarray(f[k]).T for k in f if isinstance(f[k], h5py.Dataset)}
        except OSError as e:
            raise ValueError(f"path {str(path)!r} is neither a MATLAB v5 nor a v7.3 (HDF5) .mat file: {e}") from None
    cubes = {k: v for k, v in arrays.items() if v.ndim == 3 and v.dtype.kind in "fiu"}
    if key is None:
        if len(cubes) != 1:
            raise ValueError(f"key must name the cube: {path.name} has 3-D numeric arrays {sorted(cubes)}")
        key = next(iter(cubes))
    if key not in cubes:
        raise ValueError(f"key {key!r} is not a 3-D numeric array in {path.name}; found {sorted(cubes)}")
    arr = cubes[key].astype(np.float32)
    if bands_last:
        arr = np.moveaxis(arr, -1, 0)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{path.name}:{key} has NaN/inf values")
    if normalize == "max":
        m = float(arr.max())
        if m <= 0:
            raise ValueError(f"{path.name}:{key} has no positive value to normalise by")
        arr = arr / m
    return torch.from_numpy(np.ascontiguousarray(arr))
