"""Standard hyperspectral SR metrics on (B, C, H, W) or (C, H, W) cubes (spec 5).

Every function takes `pred` and `target` of the same shape (a list is read like the array; NaN/inf refused) and
returns a float averaged over images, or with `reduction="none"` a (B,) tensor, one value per image:

- `psnr`: MPSNR, 10 log10(data_range^2 / MSE_b) per band b, averaged over bands (inf for a perfect band).
- `ssim`: band-wise SSIM with an 11 x 11 Gaussian window (sigma 1.5), K1 0.01, K2 0.03, "valid" filtering, mean
  over bands and positions (needs H, W >= 11).
- `sam_degrees`: mean spectral angle (degrees) over pixels; pixels where either spectrum has norm < eps are
  ignored (an image with none left gives NaN).
- `ergas(pred, target, scale)`: 100 / scale * sqrt(mean_b (RMSE_b / mean_b(target))^2).
- `cc`: Pearson correlation per band, averaged over bands.
- `rmse`: root mean squared error over all values.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from icml26.common.validation import check_choice, check_float, check_int, check_tensor

__all__ = ["all_metrics", "cc", "ergas", "psnr", "rmse", "sam_degrees", "ssim"]


def _pair(pred: Any, target: Any) -> tuple[torch.Tensor, torch.Tensor]:
    pred = check_tensor(pred, "pred", ndim=(3, 4), dtype=torch.float64)
    target = check_tensor(target, "target", ndim=(3, 4), dtype=torch.float64)
    if pred.shape != target.shape:
        raise ValueError(f"pred and target must have the same shape, got {tuple(pred.shape)} and "
                         f"{tuple(target.shape)}")
    if pred.dim() == 3:
        pred, target = pred.unsqueeze(0), target.unsqueeze(0)
    return pred, target


def _reduce(per_image: torch.Tensor, reduction: str) -> float | torch.Tensor:
    check_choice(reduction, "reduction", ("mean", "none"))
    return per_image if reduction == "none" else float(per_image.mean())


def psnr(pred: Any, target: Any, data_range: float = 1.0, reduction: str = "mean") -> float | torch.Tensor:
    """Mean over bands of the per-band PSNR (dB), then over images."""
    pred, target = _pair(pred, target)
    data_range = check_float(data_range, "data_range", min=0.0, min_open=True)
    mse = ((pred - target) ** 2).mean(dim=(2, 3))  # (B, C)
    with torch.no_grad():
        per_band = 10.0 * torch.log10(data_range ** 2 / mse)  # inf where mse == 0
    return _reduce(per_band.mean(dim=1), reduction)


def _gaussian_1d(size: int = 11, sigma: float = 1.5) -> torch.Tensor:
    g = torch.exp(-((torch.arange(size, dtype=torch.float64) - (size - 1) / 2) ** 2) / (2 * sigma ** 2))
    return g / g.sum()


def ssim(pred: Any, target: Any, data_range: float = 1.0, reduction: str = "mean") -> float | torch.Tensor:
    """Band-wise SSIM (Gaussian 11 x 11, sigma 1.5, K1 0.01, K2 0.03), mean over bands, then images."""
    pred, target = _pair(pred, target)
    data_range = check_float(data_range, "data_range", min=0.0, min_open=True)
    if min(pred.shape[-2:]) < 11:
        raise ValueError(f"ssim needs H and W >= 11 (11 x 11 window), got shape {tuple(pred.shape)}")
    b, _, h, w = pred.shape
    # the 2-D Gaussian window is separable: "valid" filtering = G_h M G_w^T with banded (H-10, H) matrices, in fp32
    # (fp64 convolutions are far slower on CPU; the K2 constant dwarfs fp32's error in the variances)
    pred, target = pred.float(), target.float()
    g = _gaussian_1d().float()
    gh = torch.stack([F.pad(g, (i, h - 11 - i)) for i in range(h - 10)])
    gw = torch.stack([F.pad(g, (i, w - 11 - i)) for i in range(w - 10)])
    maps = torch.stack([pred, target, pred * pred, target * target, pred * target])  # (5, B, C, H, W)
    maps = gh @ maps @ gw.T
    mu_x, mu_y, exx, eyy, exy = maps.unbind(0)
    sxx, syy, sxy = exx - mu_x ** 2, eyy - mu_y ** 2, exy - mu_x * mu_y
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    s = ((2 * mu_x * mu_y + c1) * (2 * sxy + c2)) / ((mu_x ** 2 + mu_y ** 2 + c1) * (sxx + syy + c2))
    return _reduce(s.reshape(b, -1).double().mean(dim=1), reduction)


def sam_degrees(pred: Any, target: Any, eps: float = 1e-8, reduction: str = "mean") -> float | torch.Tensor:
    """Mean spectral angle in degrees over pixels whose two spectra both have norm >= eps."""
    pred, target = _pair(pred, target)
    eps = check_float(eps, "eps", min=0.0, min_open=True)
    dot = (pred * target).sum(dim=1)
    npred, ntgt = pred.norm(dim=1), target.norm(dim=1)
    valid = (npred >= eps) & (ntgt >= eps)
    cos = (dot / (npred * ntgt).clamp_min(eps * eps)).clamp(-1.0, 1.0)
    ang = torch.rad2deg(torch.arccos(cos))
    per_image = (ang * valid).sum(dim=(1, 2)) / valid.sum(dim=(1, 2))  # NaN when no pixel is valid
    return _reduce(per_image, reduction)


def ergas(pred: Any, target: Any, scale: int, reduction: str = "mean") -> float | torch.Tensor:
    """ERGAS = 100 / scale * sqrt(mean over bands of (RMSE_b / mean_b)^2); bands with zero mean give inf."""
    pred, target = _pair(pred, target)
    scale = check_int(scale, "scale", min=1)
    rmse_b = ((pred - target) ** 2).mean(dim=(2, 3)).sqrt()
    mu_b = target.mean(dim=(2, 3))
    with torch.no_grad():
        per_image = 100.0 / scale * ((rmse_b / mu_b) ** 2).mean(dim=1).sqrt()
    return _reduce(per_image, reduction)


def cc(pred: Any, target: Any, reduction: str = "mean") -> float | torch.Tensor:
    """Pearson correlation per band, mean over bands (a constant band gives NaN)."""
    pred, target = _pair(pred, target)
    p = pred.flatten(2) - pred.flatten(2).mean(dim=2, keepdim=True)
    t = target.flatten(2) - target.flatten(2).mean(dim=2, keepdim=True)
    r = (p * t).sum(dim=2) / (p.norm(dim=2) * t.norm(dim=2))
    return _reduce(r.mean(dim=1), reduction)


def rmse(pred: Any, target: Any, reduction: str = "mean") -> float | torch.Tensor:
    """Root mean squared error over all bands and pixels of each image."""
    pred, target = _pair(pred, target)
    return _reduce(((pred - target) ** 2).mean(dim=(1, 2, 3)).sqrt(), reduction)


def all_metrics(pred: Any, target: Any, scale: int, data_range: float = 1.0) -> dict[str, float]:
    """{"psnr", "ssim", "sam", "ergas", "cc", "rmse"} averaged over images."""
    return {"psnr": psnr(pred, target, data_range), "ssim": ssim(pred, target, data_range),
            "sam": sam_degrees(pred, target), "ergas": ergas(pred, target, scale), "cc": cc(pred, target),
            "rmse": rmse(pred, target)}
