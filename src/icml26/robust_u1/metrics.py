"""Differentiable SSIM and PSNR for image batches (the structure reward of Robust-U1's Stage II).

`ssim` is numerically the function the official reward calls, pytorch_msssim's
`ssim(X, Y, data_range=1.0, win_size=11, size_average=False)`: a separable Gaussian window (11 taps,
sigma 1.5) applied with *valid* convolution (no padding), C1 = (0.01 R)^2, C2 = (0.03 R)^2, population
(biased) local variances, the SSIM map averaged over pixels per channel and then over channels (Wang et al.
2004, eq. 13 with the window of their Sec. III-C). It differs from pytorch_msssim in one place: an image
smaller than the window raises ValueError here, where pytorch_msssim skips the blur along that axis with a
warning (its issue tracker is mostly about this case).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from icml26.common.validation import check_choice, check_float, check_int
from icml26.robust_u1._checks import check_images

__all__ = ["gaussian_window", "psnr", "ssim"]


def gaussian_window(win_size: int = 11, win_sigma: float = 1.5, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The normalised 1-D Gaussian window (win_size,) centred on its middle tap."""
    coords = torch.arange(win_size, dtype=torch.float64) - win_size // 2
    g = torch.exp(-(coords ** 2) / (2 * win_sigma ** 2))
    return (g / g.sum()).to(dtype)


def _pair(x: Any, y: Any, min_hw: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    x = check_images(x, "x", unit_range=False, min_hw=min_hw)
    y = check_images(y, "y", unit_range=False)
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same shape, got {tuple(x.shape)} and {tuple(y.shape)}")
    if y.dtype != x.dtype:
        y = y.to(x.dtype)
    return x, y


def ssim(x: Any, y: Any, data_range: float = 1.0, win_size: int = 11, win_sigma: float = 1.5,
         reduction: str = "none", k1: float = 0.01, k2: float = 0.03) -> torch.Tensor:
    """Structural similarity of image batches x and y, both (N, C, H, W) with H, W >= win_size.

    Args:
        x, y: floating tensors (lists/arrays are read like tensors) of one shape; gradients flow to both.
        data_range: the dynamic range R of the pixel values (1.0 for images in [0, 1]).
        win_size: odd Gaussian window length (default 11); win_sigma its standard deviation (default 1.5).
        reduction: "none" -> (N,) per image; "mean" -> scalar.
    Returns:
        SSIM in [-1, 1], 1 iff x == y (up to the stabilising constants).
    """
    win_size = check_int(win_size, "win_size", min=1)
    if win_size % 2 == 0:
        raise ValueError(f"win_size must be odd, got {win_size}")
    win_sigma = check_float(win_sigma, "win_sigma", min=0.0, min_open=True)
    data_range = check_float(data_range, "data_range", min=0.0, min_open=True)
    k1 = check_float(k1, "k1", min=0.0, min_open=True)
    k2 = check_float(k2, "k2", min=0.0, min_open=True)
    check_choice(reduction, "reduction", ("none", "mean"))
    x, y = _pair(x, y)
    if x.shape[-2] < win_size or x.shape[-1] < win_size:
        raise ValueError(f"x and y must be at least win_size={win_size} pixels high and wide, got "
                         f"{tuple(x.shape[-2:])} (upsample small images first)")
    n, c = x.shape[:2]
    g = gaussian_window(win_size, win_sigma, x.dtype).to(x.device)
    gh, gw = g.view(1, 1, -1, 1).repeat(c, 1, 1, 1), g.view(1, 1, 1, -1).repeat(c, 1, 1, 1)

    def blur(t: torch.Tensor) -> torch.Tensor:  # valid separable Gaussian, per channel
        return F.conv2d(F.conv2d(t, gh, groups=c), gw, groups=c)

    c1, c2 = (k1 * data_range) ** 2, (k2 * data_range) ** 2
    mu_x, mu_y = blur(x), blur(y)
    mu_xx, mu_yy, mu_xy = mu_x * mu_x, mu_y * mu_y, mu_x * mu_y
    s_xx = blur(x * x) - mu_xx
    s_yy = blur(y * y) - mu_yy
    s_xy = blur(x * y) - mu_xy
    cs = (2 * s_xy + c2) / (s_xx + s_yy + c2)
    smap = (2 * mu_xy + c1) / (mu_xx + mu_yy + c1) * cs
    per_image = smap.flatten(2).mean(-1).mean(1)
    return per_image.mean() if reduction == "mean" else per_image


def psnr(x: Any, y: Any, data_range: float = 1.0, reduction: str = "none") -> torch.Tensor:
    """Peak signal-to-noise ratio 10 log10(R^2 / MSE) in dB per image (N,) or its mean; +inf where x == y."""
    data_range = check_float(data_range, "data_range", min=0.0, min_open=True)
    check_choice(reduction, "reduction", ("none", "mean"))
    x, y = _pair(x, y)
    mse = (x - y).pow(2).flatten(1).mean(1)
    out = 10.0 * torch.log10(data_range ** 2 / mse)  # mse == 0 gives +inf, never NaN
    return out.mean() if reduction == "mean" else out

