"""Ten ImageNet-C-style corruptions at five severities, in pure torch (no torchvision, no PIL, no skimage).

    from icml26.robust_u1 import CORRUPTIONS, corrupt, RandomCorruption

    x_c = corrupt(x, "motion_blur", 5, generator=torch.Generator().manual_seed(0))   # x: (N, C, H, W) in [0, 1]
    x_c, kind, sev = RandomCorruption()(x, generator=g)    # a fresh (kind, severity ~ U{1..5}) per image

Every corruption is `f(x, severity, generator) -> Tensor` of x's shape and dtype, values clipped to [0, 1].
The severity tables (spec 6.1, ours, sized for 24 x 24 digits) are the module constants `SEVERITY_TABLES`. The
definitions follow the corruption suites they come from (Hendrycks & Dietterich's ImageNet-C, as packaged in
`imagecorruptions`):

- gaussian_noise: x + sigma * N(0, 1).                          shot_noise: Poisson(lambda * x) / lambda.
- impulse_noise: salt-and-pepper, a fraction `amount` of the pixels set to 0 or 1 with equal odds
  (skimage `random_noise(mode="s&p")`); per pixel and channel.
- gaussian_blur: separable Gaussian, radius int(4 sigma + 0.5), edge pixels repeated (skimage `gaussian`
  defaults: truncate 4, mode "nearest").
- motion_blur [ours: ImageNet-C uses ImageMagick's one-sided motion blur]: a centred line kernel of `length`
  pixels at an angle drawn per image from {0, 45, 90, 135} degrees, edge pixels repeated.
- contrast: (x - mean) * c + mean, the mean per image and channel.
- jpeg: 8 x 8 block DCT-II quantisation with the standard (ITU-T T.81 Annex K) luminance table scaled by the IJG
  quality formula, 8-bit rounding before and after; images whose sides are not multiples of 8 are padded by
  edge repetition and cropped back. Multi-channel input is quantised per channel with the luminance table (no
  YCbCr transform, no chroma subsampling: a deviation from a real JPEG codec).
- pixelate: PIL BOX resampling down to int(c * side) and back up (as ImageNet-C does with PIL), written as
  two separable resampling matrices that follow Pillow's BOX filter tap by tap.
- occlusion [not in ImageNet-C; spec 6.1]: a square of side s at a uniformly random position, fully inside the
  image, filled with a uniformly random grey.
- fog: an additive low-frequency field F in [0, 1] (four octaves of bilinearly upsampled Gaussian noise on 2x2
  ... 16x16 grids, weights 1, 1/2, 1/4, 1/8, min-max normalised per image: our stand-in for ImageNet-C's plasma
  fractal), then ImageNet-C's rescaling: (x + a F) * max(x) / (max(x) + a).

Randomness comes only from `generator` (a `torch.Generator`; None uses torch's global RNG), so a seed gives
the same output. Draws are laid out so that, for one seed, a higher severity makes the same corruption
stronger: the same Gaussian noise, impulse mask, blur angle, relative square position and grey, and fog field
(shot noise's Poisson draws are the exception: they depend on lambda).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F

from icml26.common.validation import check_int, check_probability
from icml26.robust_u1._checks import check_generator, check_images

__all__ = [
    "CORRUPTIONS",
    "KINDS",
    "SEVERITY_TABLES",
    "RandomCorruption",
    "check_kind",
    "check_severity",
    "corrupt",
    "jpeg_quant_table",
]

SEVERITY_TABLES: dict[str, tuple[float, ...]] = {
    "gaussian_noise": (0.08, 0.12, 0.18, 0.26, 0.38),   # sigma
    "shot_noise": (60, 25, 12, 5, 3),                     # lambda (photons at intensity 1)
    "impulse_noise": (0.03, 0.06, 0.09, 0.17, 0.27),    # fraction of pixels
    "gaussian_blur": (0.6, 0.9, 1.2, 1.6, 2.2),          # sigma, px
    "motion_blur": (3, 5, 7, 9, 11),                      # kernel length, px
    "contrast": (0.6, 0.5, 0.4, 0.3, 0.2),               # factor around the mean
    "jpeg": (40, 25, 15, 10, 6),                          # IJG quality
    "pixelate": (0.8, 0.65, 0.5, 0.4, 0.3),              # downsampling factor
    "occlusion": (4, 6, 8, 10, 12),                       # square side, px
    "fog": (0.15, 0.25, 0.35, 0.45, 0.55),               # field amplitude
}

_LUMA = torch.tensor([
    [16, 11, 10, 16, 24, 40, 51, 61], [12, 12, 14, 19, 26, 58, 60, 55], [14, 13, 16, 24, 40, 57, 69, 56],
    [14, 17, 22, 29, 51, 87, 80, 62], [18, 22, 37, 56, 68, 109, 103, 77], [24, 35, 55, 64, 81, 104, 113, 92],
    [49, 64, 78, 87, 103, 121, 120, 101], [72, 92, 95, 98, 112, 100, 103, 99]], dtype=torch.float64)


def check_severity(severity: Any, name: str = "severity") -> int:
    """An integer severity in 1..5 (3.0 is read as 3; 0, 6, 2.5 and bools are refused)."""
    return check_int(severity, name, min=1, max=5)


def check_kind(kind: Any, name: str = "kind") -> str:
    if not isinstance(kind, str) or kind not in SEVERITY_TABLES:
        raise ValueError(f"{name} must be one of {', '.join(SEVERITY_TABLES)}; got {kind!r}")
    return kind


def _replicate_conv(x: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
    """Depthwise 2-D convolution of (N, C, H, W) with one (kh, kw) kernel per image (N, kh, kw), edge repeat."""
    n, c, h, w = x.shape
    kh, kw = kernel.shape[-2:]
    xp = F.pad(x.reshape(1, n * c, h, w), (kw // 2, kw // 2, kh // 2, kh // 2), mode="replicate")
    k = kernel.to(x.device, x.dtype).repeat_interleave(c, dim=0).unsqueeze(1)  # (N*C, 1, kh, kw)
    return F.conv2d(xp, k, groups=n * c).reshape(n, c, h, w)


def gaussian_kernel1d(sigma: float, truncate: float = 4.0, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    radius = int(truncate * sigma + 0.5)
    t = torch.arange(-radius, radius + 1, dtype=dtype)
    g = torch.exp(-t ** 2 / (2 * sigma ** 2))
    return g / g.sum()


def _gaussian_noise(x, severity, generator):
    s = SEVERITY_TABLES["gaussian_noise"][severity - 1]
    return x + s * torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device)


def _shot_noise(x, severity, generator):
    lam = SEVERITY_TABLES["shot_noise"][severity - 1]
    return torch.poisson(x * lam, generator=generator) / lam


def _impulse_noise(x, severity, generator):
    amount = SEVERITY_TABLES["impulse_noise"][severity - 1]
    u = torch.rand(x.shape, generator=generator, dtype=x.dtype, device=x.device)
    salt = torch.rand(x.shape, generator=generator, dtype=x.dtype, device=x.device) < 0.5
    hit = u < amount
    return torch.where(hit, salt.to(x.dtype), x)


def _gaussian_blur(x, severity, generator):
    g = gaussian_kernel1d(SEVERITY_TABLES["gaussian_blur"][severity - 1])
    n = x.shape[0]
    x = _replicate_conv(x, g.view(1, 1, -1).expand(n, 1, -1))
    return _replicate_conv(x, g.view(1, -1, 1).expand(n, -1, 1))


def motion_kernel(length: int, angle_deg: int) -> torch.Tensor:
    """(length, length) line kernel through the centre at 0/45/90/135 degrees, summing to 1."""
    k = torch.zeros(length, length, dtype=torch.float64)
    c = length // 2
    idx = torch.arange(length)
    if angle_deg == 0:
        k[c, :] = 1
    elif angle_deg == 90:
        k[:, c] = 1
    elif angle_deg == 45:
        k[length - 1 - idx, idx] = 1
    elif angle_deg == 135:
        k[idx, idx] = 1
    else:
        raise ValueError(f"angle_deg must be 0, 45, 90 or 135, got {angle_deg!r}")
    return k / k.sum()


def _motion_blur(x, severity, generator):
    length = int(SEVERITY_TABLES["motion_blur"][severity - 1])
    angles = torch.randint(0, 4, (x.shape[0],), generator=generator, device=x.device).cpu()
    kernels = torch.stack([motion_kernel(length, 45 * int(a)) for a in angles])
    return _replicate_conv(x, kernels)


def _contrast(x, severity, generator):
    c = SEVERITY_TABLES["contrast"][severity - 1]
    m = x.mean(dim=(2, 3), keepdim=True)
    return (x - m) * c + m


def jpeg_quant_table(quality: int) -> torch.Tensor:
    """The 8 x 8 luminance quantisation table at IJG `quality` (1..100)."""
    q = check_int(quality, "quality", min=1, max=100)
    scale = 5000.0 / q if q < 50 else 200.0 - 2.0 * q
    return torch.clamp(torch.floor((_LUMA * scale + 50.0) / 100.0), 1.0, 255.0)


def _dct_matrix(n: int = 8) -> torch.Tensor:
    k = torch.arange(n, dtype=torch.float64).view(-1, 1)
    i = torch.arange(n, dtype=torch.float64).view(1, -1)
    m = torch.cos(math.pi * (2 * i + 1) * k / (2 * n)) * math.sqrt(2.0 / n)
    m[0] /= math.sqrt(2.0)
    return m  # orthonormal DCT-II: coefficients = M @ block @ M.T


def _jpeg(x, severity, generator):
    quality = int(SEVERITY_TABLES["jpeg"][severity - 1])
    n, c, h, w = x.shape
    ph, pw = (-h) % 8, (-w) % 8
    v = torch.round(x.to(torch.float64) * 255.0)
    if ph or pw:
        v = F.pad(v, (0, pw, 0, ph), mode="replicate")
    hh, ww = v.shape[-2:]
    blocks = (v - 128.0).reshape(n, c, hh // 8, 8, ww // 8, 8).permute(0, 1, 2, 4, 3, 5)
    m, q = _dct_matrix().to(x.device), jpeg_quant_table(quality).to(x.device)
    coef = m @ blocks @ m.T
    coef = torch.round(coef / q) * q
    rec = (m.T @ coef @ m).permute(0, 1, 2, 4, 3, 5).reshape(n, c, hh, ww) + 128.0
    rec = torch.clamp(torch.round(rec), 0, 255)[..., :h, :w] / 255.0
    return rec.to(x.dtype)


@functools.lru_cache(maxsize=64)
def box_resize_matrix(in_size: int, out_size: int) -> torch.Tensor:
    """(out_size, in_size) weights of PIL's BOX resampling along one axis (Pillow's Resample.c: a box filter
    of support 0.5 * max(in/out, 1) around each output centre (i + 0.5) * in / out, taps normalised)."""
    scale = in_size / out_size
    filterscale = max(scale, 1.0)
    support = 0.5 * filterscale
    m = torch.zeros(out_size, in_size, dtype=torch.float64)
    for i in range(out_size):
        centre = (i + 0.5) * scale
        lo = max(int(centre - support + 0.5), 0)
        hi = min(int(centre + support + 0.5), in_size)
        for j in range(lo, hi):
            t = (j - centre + 0.5) / filterscale
            m[i, j] = 1.0 if -0.5 < t <= 0.5 else 0.0
        m[i] /= m[i].sum()
    return m


def _resize_box(x: torch.Tensor, h: int, w: int) -> torch.Tensor:
    mh = box_resize_matrix(int(x.shape[-2]), int(h)).to(x.device, x.dtype)  # cached: do not modify in place
    mw = box_resize_matrix(int(x.shape[-1]), int(w)).to(x.device, x.dtype)
    return mh @ x @ mw.T


def _pixelate(x, severity, generator):
    c = SEVERITY_TABLES["pixelate"][severity - 1]
    h, w = x.shape[-2:]
    small = _resize_box(x, max(1, int(h * c)), max(1, int(w * c)))
    return _resize_box(small, h, w)


def _occlusion(x, severity, generator):
    side = int(SEVERITY_TABLES["occlusion"][severity - 1])
    n, c, h, w = x.shape
    sh, sw = min(side, h), min(side, w)
    u = torch.rand(n, 3, generator=generator, dtype=torch.float64, device=x.device)
    top = torch.floor(u[:, 0] * (h - sh + 1)).long().clamp(max=h - sh)
    left = torch.floor(u[:, 1] * (w - sw + 1)).long().clamp(max=w - sw)
    rows = torch.arange(h, device=x.device).view(1, h, 1)
    cols = torch.arange(w, device=x.device).view(1, 1, w)
    mask = ((rows >= top.view(n, 1, 1)) & (rows < (top + sh).view(n, 1, 1)) &
            (cols >= left.view(n, 1, 1)) & (cols < (left + sw).view(n, 1, 1))).unsqueeze(1)
    grey = u[:, 2].to(x.dtype).view(n, 1, 1, 1)
    return torch.where(mask, grey, x)


def fog_field(n: int, h: int, w: int, generator: torch.Generator | None, dtype=torch.float32,
              device: torch.device | str = "cpu") -> torch.Tensor:
    """(n, 1, h, w) low-frequency field in [0, 1]: octaves on 2x2, 4x4, 8x8, 16x16 grids, weights 1/2^o."""
    field = torch.zeros(n, 1, h, w, dtype=torch.float64, device=device)
    for o in range(4):
        g = 2 ** (o + 1)
        coarse = torch.randn(n, 1, g, g, generator=generator, dtype=torch.float64, device=device)
        field += F.interpolate(coarse, size=(h, w), mode="bilinear", align_corners=True) / 2 ** o
    lo = field.amin(dim=(2, 3), keepdim=True)
    hi = field.amax(dim=(2, 3), keepdim=True)
    return ((field - lo) / (hi - lo).clamp_min(1e-12)).to(dtype)


def _fog(x, severity, generator):
    a = SEVERITY_TABLES["fog"][severity - 1]
    n, _, h, w = x.shape
    f = fog_field(n, h, w, generator, x.dtype, x.device)
    mx = x.amax(dim=(1, 2, 3), keepdim=True)
    return (x + a * f) * mx / (mx + a)


CORRUPTIONS: dict[str, Callable[[torch.Tensor, int, torch.Generator | None], torch.Tensor]] = {
    "gaussian_noise": _gaussian_noise, "shot_noise": _shot_noise, "impulse_noise": _impulse_noise,
    "gaussian_blur": _gaussian_blur, "motion_blur": _motion_blur, "contrast": _contrast, "jpeg": _jpeg,
    "pixelate": _pixelate, "occlusion": _occlusion, "fog": _fog,
}
KINDS: tuple[str, ...] = tuple(CORRUPTIONS)


def corrupt(x: Any, kind: str, severity: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """Apply corruption `kind` at `severity` (1..5) to images `x` (N, C, H, W) in [0, 1].

    Returns a new tensor of x's shape and floating dtype with values in [0, 1]; the input is not modified.
    Raises ValueError for an unknown kind, a severity outside 1..5, values outside [0, 1] or NaN/inf.
    """
    check_kind(kind)
    s = check_severity(severity)
    x = check_images(x, "x")
    check_generator(generator)
    return CORRUPTIONS[kind](x, s, generator).clamp(0.0, 1.0).to(x.dtype)


class RandomCorruption:
    """Draw a corruption kind and severity per image, uniformly (the training stream of spec 6.1).

    Args:
        kinds: corruption names (default: all ten, in `KINDS` order); kind indices refer to this tuple.
        severities: severities to draw from, each in 1..5 (default 1..5).
        p_clean: probability that an image is left clean (kind index len(kinds), severity 0), in [0, 1].

    `__call__(x, generator=None) -> (x_c, kind_idx, severity)`: x_c of x's shape, kind_idx and severity are
    int64 tensors of shape (N,).
    """

    def __init__(self, kinds: Sequence[str] | None = None, severities: Sequence[int] = (1, 2, 3, 4, 5),
                 p_clean: float = 0.0) -> None:
        self.kinds = kinds
        self.severities = severities
        self.p_clean = p_clean
        self._validate()

    def _validate(self) -> tuple[tuple[str, ...], tuple[int, ...], float]:
        kinds = KINDS if self.kinds is None else self.kinds
        if isinstance(kinds, str) or not isinstance(kinds, Sequence) or len(kinds) == 0:
            raise TypeError(f"kinds must be a non-empty sequence of corruption names or None, got {kinds!r}")
        kinds = tuple(check_kind(k, f"kinds[{i}]") for i, k in enumerate(kinds))
        if len(set(kinds)) != len(kinds):
            raise ValueError(f"kinds must be distinct, got {kinds}")
        sev = self.severities
        if isinstance(sev, (str, bytes)) or not isinstance(sev, Sequence) or len(sev) == 0:
            raise TypeError(f"severities must be a non-empty sequence of integers in 1..5, got {sev!r}")
        sev = tuple(check_severity(s, f"severities[{i}]") for i, s in enumerate(sev))
        p = check_probability(self.p_clean, "p_clean")
        return kinds, sev, p

    @property
    def n_kinds(self) -> int:
        return len(self._validate()[0])

    def __call__(self, x: Any, generator: torch.Generator | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        kinds, sev, p = self._validate()
        x = check_images(x, "x")
        check_generator(generator)
        n = x.shape[0]
        dev = x.device
        kind_idx = torch.randint(0, len(kinds), (n,), generator=generator, device=dev)
        severity = torch.tensor(sev, device=dev)[torch.randint(0, len(sev), (n,), generator=generator, device=dev)]
        if p > 0:
            clean = torch.rand(n, generator=generator, device=dev) < p
            kind_idx[clean] = len(kinds)
            severity[clean] = 0
        out = x.clone()
        for k in range(len(kinds)):
            for s in sev:
                sel = torch.nonzero((kind_idx == k) & (severity == s)).flatten()
                if len(sel):
                    out[sel] = CORRUPTIONS[kinds[k]](x[sel], s, generator).clamp(0.0, 1.0).to(x.dtype)
        return out, kind_idx, severity

    def __repr__(self) -> str:
        return f"RandomCorruption(kinds={self.kinds!r}, severities={self.severities!r}, p_clean={self.p_clean!r})"
