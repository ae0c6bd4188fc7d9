"""Corruption suite (spec 8 and 6.1): shapes, ranges, determinism, severity monotonicity, reference details."""

import numpy as np
import pytest
import torch

from icml26.robust_u1 import CORRUPTIONS, KINDS, SEVERITY_TABLES, RandomCorruption, corrupt, load_digits_images, ssim
from icml26.robust_u1.corruptions import box_resize_matrix, jpeg_quant_table, motion_kernel

X = load_digits_images()[0][:50]


def test_ten_kinds_five_severities():
    assert len(CORRUPTIONS) == 10 and set(KINDS) == set(SEVERITY_TABLES)
    assert all(len(v) == 5 for v in SEVERITY_TABLES.values())


@pytest.mark.parametrize("kind", KINDS)
def test_shape_dtype_range_and_determinism(kind):
    for dtype in (torch.float32, torch.float64):
        x = X[:8].to(dtype)
        a = corrupt(x, kind, 5, torch.Generator().manual_seed(3))
        b = corrupt(x, kind, 5, torch.Generator().manual_seed(3))
        assert a.shape == x.shape and a.dtype == dtype
        assert float(a.min()) >= 0 and float(a.max()) <= 1
        assert torch.equal(a, b)
        assert not torch.equal(a, x)  # every kind changes a digit at severity 5


@pytest.mark.parametrize("kind", KINDS)
def test_ssim_non_increasing_in_severity(kind):
    vals = [float(ssim(corrupt(X, kind, s, torch.Generator().manual_seed(1)), X).mean()) for s in range(1, 6)]
    assert all(b <= a + 0.005 for a, b in zip(vals, vals[1:])), (kind, vals)


def test_bad_severity_and_kind():
    for s in (0, 6, 2.5):
        with pytest.raises(ValueError, match="severity"):
            corrupt(X[:2], "fog", s)
    with pytest.raises(TypeError, match="severity"):
        corrupt(X[:2], "fog", True)
    with pytest.raises(ValueError, match="kind must be one of"):
        corrupt(X[:2], "snow", 3)
    assert torch.equal(corrupt(X[:2], "contrast", 3.0), corrupt(X[:2], "contrast", 3))
    with pytest.raises(ValueError, match="x must lie in \\[0, 1\\]"):
        corrupt(X[:2] * 255, "fog", 1)
    with pytest.raises(TypeError, match="x must be a floating tensor"):
        corrupt((X[:2] * 255).to(torch.uint8), "fog", 1)
    with pytest.raises(TypeError, match="generator"):
        corrupt(X[:2], "fog", 1, generator=0)


def test_jpeg_quality_50_is_the_standard_table_and_contrast_is_exact():
    q = jpeg_quant_table(50)
    assert q[0, 0] == 16 and q[7, 7] == 99 and q[0, 1] == 11
    assert jpeg_quant_table(100).max() == 1
    x = X[:4]
    c = SEVERITY_TABLES["contrast"][2]
    m = x.mean(dim=(2, 3), keepdim=True)
    torch.testing.assert_close(corrupt(x, "contrast", 3), ((x - m) * c + m).clamp(0, 1))


def test_pixelate_follows_pil_box_resampling():
    from PIL import Image

    x = X[:3]
    for sev, c in enumerate(SEVERITY_TABLES["pixelate"], start=1):
        ours = corrupt(x, "pixelate", sev)
        for i in range(3):
            p = Image.fromarray(x[i, 0].numpy().astype(np.float32), mode="F")
            ref = np.asarray(p.resize((int(24 * c),) * 2, Image.BOX).resize((24, 24), Image.BOX))
            np.testing.assert_allclose(ours[i, 0].numpy(), np.clip(ref, 0, 1), atol=1e-5)
    assert torch.allclose(box_resize_matrix(24, 12).sum(1), torch.ones(12, dtype=torch.float64))


def test_noise_statistics_and_impulse_fraction():
    x = torch.full((4, 1, 64, 64), 0.5)
    n = corrupt(x, "gaussian_noise", 1, torch.Generator().manual_seed(0)) - x
    assert abs(float(n.std()) - SEVERITY_TABLES["gaussian_noise"][0]) < 0.005
    imp = corrupt(x, "impulse_noise", 5, torch.Generator().manual_seed(0))
    frac = float(((imp == 0) | (imp == 1)).float().mean())
    assert abs(frac - SEVERITY_TABLES["impulse_noise"][4]) < 0.01
    k = motion_kernel(5, 45)
    assert float(k.sum()) == pytest.approx(1.0) and int((k > 0).sum()) == 5


def test_random_corruption_per_image_kinds_and_clean():
    rc = RandomCorruption(p_clean=0.3)
    xc, kind, sev = rc(X, generator=torch.Generator().manual_seed(0))
    assert kind.shape == sev.shape == (50,)
    clean = kind == 10
    assert clean.any() and (~clean).any()
    assert torch.equal(xc[clean], X[clean]) and bool((sev[clean] == 0).all())
    assert bool((sev[~clean] >= 1).all())
    for i in torch.nonzero(~clean).flatten()[:5].tolist():  # each item is its own kind at its own severity
        assert not torch.equal(xc[i], X[i])
    with pytest.raises(ValueError, match="kinds\\[0\\]"):
        RandomCorruption(kinds=["snow"])
    with pytest.raises(ValueError, match="severities\\[1\\]"):
        RandomCorruption(severities=(1, 7))
    with pytest.raises(ValueError, match="p_clean"):
        RandomCorruption(p_clean=1.5)
    rc2 = RandomCorruption()
    rc2.severities = (0,)  # changed after construction: checked again at call time
    with pytest.raises(ValueError, match="severities"):
        rc2(X[:2])
