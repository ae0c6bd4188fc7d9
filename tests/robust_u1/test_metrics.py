"""SSIM / PSNR (spec 8): known answers, the float64 reference, pytorch_msssim equality, invariants, errors."""

import numpy as np
import pytest
import torch

from icml26.robust_u1 import corrupt, load_digits_images, psnr, ssim


def _numpy_ssim(x: np.ndarray, y: np.ndarray, win: int = 11, sigma: float = 1.5) -> np.ndarray:
    """Independent float64 reference: valid separable Gaussian window, C1 = 0.01^2, C2 = 0.03^2."""
    t = np.arange(win) - win // 2
    g = np.exp(-t ** 2 / (2 * sigma ** 2))
    g /= g.sum()

    def blur(a):  # (H, W) -> valid
        h = np.stack([np.convolve(r, g[::-1], mode="valid") for r in a])
        return np.stack([np.convolve(c, g[::-1], mode="valid") for c in h.T]).T

    out = []
    for xi, yi in zip(x, y):
        vals = []
        for a, b in zip(xi, yi):
            mx, my = blur(a), blur(b)
            sxx, syy, sxy = blur(a * a) - mx ** 2, blur(b * b) - my ** 2, blur(a * b) - mx * my
            c1, c2 = 0.01 ** 2, 0.03 ** 2
            m = (2 * mx * my + c1) * (2 * sxy + c2) / ((mx ** 2 + my ** 2 + c1) * (sxx + syy + c2))
            vals.append(m.mean())
        out.append(np.mean(vals))
    return np.array(out)


def _rand(n=4, c=2, h=32, w=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, c, h, w, generator=g, dtype=torch.float64)
    y = (x + 0.2 * torch.randn(n, c, h, w, generator=g, dtype=torch.float64)).clamp(0, 1)
    return x, y


def test_matches_float64_numpy_reference():
    x, y = _rand()
    ours = ssim(x, y).numpy()
    np.testing.assert_allclose(ours, _numpy_ssim(x.numpy(), y.numpy()), atol=1e-5)
    assert ours.min() < 0.9  # a non-trivial pair


def test_equals_pytorch_msssim():
    pm = pytest.importorskip("pytorch_msssim")
    x, y = _rand(c=3, h=40, w=33, seed=1)
    ref = pm.ssim(x.float(), y.float(), data_range=1.0, win_size=11, size_average=False)
    torch.testing.assert_close(ssim(x.float(), y.float()), ref, atol=1e-6, rtol=0)


def test_identity_symmetry_and_bound():
    x, y = _rand(seed=2)
    torch.testing.assert_close(ssim(x, x), torch.ones(4, dtype=torch.float64))
    torch.testing.assert_close(ssim(x, y), ssim(y, x))
    assert bool((ssim(x, y) <= 1).all())
    assert ssim(x, y, reduction="mean").dim() == 0


def test_strictly_decreasing_in_gaussian_noise():
    x = load_digits_images()[0][:64]
    vals = [float(ssim(corrupt(x, "gaussian_noise", s, torch.Generator().manual_seed(0)), x).mean())
            for s in range(1, 6)]
    assert all(a > b for a, b in zip(vals, vals[1:])), vals


def test_small_images_and_bad_windows_raise():
    x = torch.rand(1, 1, 10, 20)
    with pytest.raises(ValueError, match="win_size=11"):
        ssim(x, x)
    assert ssim(x, x, win_size=7).shape == (1,)
    with pytest.raises(ValueError, match="win_size must be odd"):
        ssim(x, x, win_size=6)
    with pytest.raises(ValueError, match="same shape"):
        ssim(torch.rand(1, 1, 12, 12), torch.rand(2, 1, 12, 12))
    with pytest.raises(ValueError, match="x must be finite"):
        ssim(torch.full((1, 1, 12, 12), float("nan")), torch.rand(1, 1, 12, 12))
    with pytest.raises(ValueError, match="4-dimensional"):
        ssim(torch.rand(12, 12), torch.rand(12, 12))
    with pytest.raises(ValueError, match="reduction"):
        ssim(torch.rand(1, 1, 12, 12), torch.rand(1, 1, 12, 12), reduction="sum")


def test_gradient_flows_to_first_argument():
    x, y = _rand(n=2, c=1, seed=3)
    x = x.clone().requires_grad_(True)
    ssim(x, y).sum().backward()
    assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0


def test_psnr_known_answer_and_inf():
    x = torch.zeros(2, 1, 4, 4)
    y = torch.full((2, 1, 4, 4), 0.1)
    torch.testing.assert_close(psnr(x, y), torch.full((2,), 20.0))
    assert torch.isinf(psnr(x, x)).all()
    with pytest.raises(ValueError, match="data_range"):
        psnr(x, y, data_range=0)
