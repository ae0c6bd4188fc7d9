"""Correctness tests of the method (spec 8)."""

import pytest
import torch
import torch.nn.functional as F

from icml26.ssdcn import (
    FRRB,
    SSDCB,
    SSDCN,
    Bicubic,
    PyramidJointLoss,
    SmallCNN,
    SmallTransformer,
    attention,
    cc,
    degrade,
    ergas,
    psnr,
    rmse,
    sam_degrees,
    ssim,
    synthetic_hsi,
)
from icml26.ssdcn.claims import attention_flops_analytic, block_flops


def _x(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_ssdcb_shape_and_linear_flops():
    blk = SSDCB(16, k_spatial=4, k_spectral=4)
    assert blk(_x(2, 16, 12, 10)).shape == (2, 16, 12, 10)
    f = block_flops(blk, 16, [32, 64, 128])
    assert 3.5 <= f[64] / f[32] <= 4.5 and 3.5 <= f[128] / f[64] <= 4.5


def test_full_attention_flops_quadratic_and_analytic():
    from icml26.ssdcn import TransformerBlock

    f = block_flops(TransformerBlock(16, 2), 16, [32, 64])
    assert f[64] / f[32] > 8
    from torch.utils.flop_counter import FlopCounterMode

    q = _x(1, 2, 256, 8)
    with FlopCounterMode(display=False) as c:
        attention(q, q, q)
    assert c.get_total_flops() == attention_flops_analytic(256, 16)


def test_explicit_attention_equals_sdpa_and_chunked():
    q, k, v = _x(2, 3, 50, 8, seed=1), _x(2, 3, 50, 8, seed=2), _x(2, 3, 50, 8, seed=3)
    ref = F.scaled_dot_product_attention(q, k, v)
    assert torch.allclose(attention(q, k, v), ref, atol=1e-5)
    assert torch.allclose(attention(q, k, v, chunk=7), ref, atol=1e-5)


def test_spatial_branch_is_permutation_equivariant():
    torch.manual_seed(0)
    blk = SSDCB(8, k_spatial=4, k_spectral=2, iters=2, spectral=False, local=False, ffn=False)
    x = _x(1, 8, 6, 6)
    centres = torch.nn.functional.adaptive_avg_pool2d(x, 2).flatten(2).transpose(1, 2)
    perm = torch.randperm(36, generator=torch.Generator().manual_seed(1))
    xp = x.flatten(2)[:, :, perm].reshape(1, 8, 6, 6)
    z = blk.spatial_branch(x, centres).flatten(2)
    zp = blk.spatial_branch(xp, centres).flatten(2)
    assert torch.allclose(zp, z[:, :, perm], atol=1e-5)
    # the pooled (layout-dependent) initialisation is what breaks equivariance of the whole block
    assert not torch.allclose(blk.spatial_branch(xp).flatten(2), z[:, :, perm], atol=1e-3)


def test_assignments_are_distributions_and_k1_broadcasts_mean():
    blk = SSDCB(8, k_spatial=9, k_spectral=3)
    x = _x(2, 8, 9, 7)
    a, _ = blk.spatial_assign(x)
    s = blk.spectral_assign(x)
    for m in (a, s):
        assert (m >= 0).all() and torch.allclose(m.sum(-1), torch.ones(m.shape[:-1]), atol=1e-5)
    one = SSDCB(8, k_spatial=1, k_spectral=1)
    z = one.spatial_branch(x)
    mean = x.mean(dim=(2, 3))[:, None, :]
    expect = (mean + one.centre_mlp(mean)).transpose(1, 2)[..., None]
    assert torch.allclose(z, expect.expand_as(z), atol=1e-5)


def test_frrb_full_rank_identity_and_reuse():
    x = _x(2, 6, 5, 5)
    fr = FRRB(6, rank_spectral=6, rank_spatial=5)
    core, u_c, u_h, u_w = fr.factorize(x)
    assert torch.allclose(u_h.transpose(1, 2) @ u_h, torch.eye(5).expand(2, 5, 5), atol=1e-5) and u_w.shape == (2, 5, 5)
    assert torch.allclose(u_c.transpose(1, 2) @ u_c, torch.eye(6).expand(2, 6, 6), atol=1e-5)
    assert torch.allclose(fr.reconstruct(core, u_c, (5, 5), x), x, atol=1e-5)
    low = FRRB(6, 2, 2)
    c2, uc2, _, _ = low.factorize(x)
    assert not torch.allclose(low.reconstruct(c2, uc2, (5, 5), x), x, atol=1e-2)  # low rank loses information

    net = SSDCN(4, scale=8, dim=8, blocks_per_level=1, k_spatial=4, k_spectral=2, rank_spectral=4, rank_spatial=4)
    sr, outs = net(torch.rand(1, 4, 8, 8))
    f = net.last_factors
    assert [o.shape[-1] for o in outs] == [16, 32, 64] and sr is outs[-1]
    assert all(lv["core"] is f["core"] and lv["U_c"] is f["U_c"] for lv in f["levels"])
    assert [lv["shape"] for lv in f["levels"]] == [(16, 16), (32, 32)] and f["U_h"].shape[1] == 8


def test_loss_reduces_to_l1_and_weights_matter():
    hr = torch.rand(2, 3, 16, 16)
    outs = [torch.rand(2, 3, 8, 8), torch.rand(2, 3, 16, 16)]
    plain = PyramidJointLoss(weights=[0.0], sam_weight=0.0)(outs, hr)
    assert torch.allclose(plain, F.l1_loss(outs[-1], hr))
    full = PyramidJointLoss()(outs, hr)
    assert full > plain
    mag = PyramidJointLoss(balance="magnitude", sam_weight=0.0)(outs, hr)
    assert torch.allclose(mag, 2 * plain)  # each aux term is rescaled to the main term's magnitude


def test_metric_known_answers():
    x = torch.rand(2, 5, 16, 16) * 0.5 + 0.2
    assert psnr(x, x) == float("inf") and ssim(x, x) == pytest.approx(1.0)
    assert psnr(x + 0.1, x) == pytest.approx(20.0)
    assert sam_degrees(3.0 * x, x) == pytest.approx(0.0, abs=1e-4)
    a = torch.zeros(1, 2, 4, 4)
    b = torch.zeros(1, 2, 4, 4)
    a[:, 0], b[:, 1] = 1.0, 1.0
    assert sam_degrees(a, b) == pytest.approx(90.0)
    z = a.clone()
    z[..., 0, 0] = 0.0  # a zero-norm pixel is ignored, not counted as an angle
    assert sam_degrees(z, b) == pytest.approx(90.0)
    assert rmse(x + 0.1, x) == pytest.approx(0.1)
    assert cc(2 * x + 1, x) == pytest.approx(1.0)
    assert ergas(x, x, 4) == 0.0
    assert psnr(x + 0.1, x, reduction="none").shape == (2,)


def test_generator_invariants():
    d = synthetic_hsi(3, 32, 31, 6, seed=5, return_all=True)
    assert (d.abundances >= 0).all() and torch.allclose(d.abundances.sum(1), torch.ones(3, 32, 32), atol=1e-5)
    assert d.hr.min() >= 0 and d.hr.max() <= 1 and d.hr.dtype == torch.float32
    assert torch.equal(synthetic_hsi(3, 32, 31, 6, seed=5), d.hr)
    assert not torch.equal(synthetic_hsi(3, 32, 31, 6, seed=6), d.hr)
    assert degrade(d.hr, 4).shape == (3, 31, 8, 8)
    assert degrade(d.hr, 4, "gaussian").shape == (3, 31, 8, 8)


def test_models_shapes_and_bicubic_baseline():
    lr = torch.rand(2, 5, 8, 8)
    for m in (SSDCN(5, 4, dim=8, k_spatial=4, k_spectral=2, rank_spectral=4, rank_spatial=4), SmallCNN(5, dim=8),
              SmallTransformer(5, dim=8, n_blocks=1, heads=2), Bicubic(5)):
        sr, outs = m(lr)
        assert sr.shape == (2, 5, 32, 32) and outs[-1] is sr
        assert m.flops((1, 5, 8, 8)) > 0 or isinstance(m, Bicubic)
    bic = Bicubic(5, 4)(lr)[0]
    assert torch.allclose(bic, F.interpolate(lr, scale_factor=4, mode="bicubic", align_corners=False))


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="scale"):
        SSDCN(4, scale=3)
    with pytest.raises(ValueError, match="bands"):
        SSDCN(4, dim=8, k_spatial=4, k_spectral=2, rank_spectral=4, rank_spatial=4)(torch.rand(1, 5, 8, 8))
    with pytest.raises(ValueError, match="divisible"):
        degrade(torch.rand(1, 3, 10, 10), 4)
    with pytest.raises(ValueError, match="rank_spatial"):
        SSDCN(4, dim=8, k_spatial=4, k_spectral=2, rank_spectral=4, rank_spatial=8)(torch.rand(1, 4, 6, 6))
    with pytest.raises(ValueError, match="k_spatial"):
        SSDCB(8, k_spatial=5)
    with pytest.raises(ValueError, match="lr"):
        SmallCNN(3)(torch.full((1, 3, 4, 4), float("nan")))
    with pytest.raises(ValueError, match="pred and target"):
        psnr(torch.rand(1, 3, 4, 4), torch.rand(1, 3, 4, 5))
    with pytest.raises(TypeError, match="in_bands"):
        SSDCN("4")
    from icml26.ssdcn import fit

    with pytest.raises(ValueError, match="scale"):
        fit(SmallCNN(3, dim=4), torch.rand(2, 3, 8, 8), torch.rand(2, 3, 16, 16), steps=1)
    with pytest.raises(ValueError, match="n_endmembers"):
        synthetic_hsi(1, 8, 5, n_endmembers=20)


def test_untrained_models_start_at_bicubic():
    lr = torch.rand(1, 4, 8, 8)
    bic = Bicubic(4)(lr)[0]
    for m in (SSDCN(4, dim=8, k_spatial=4, k_spectral=2, rank_spectral=4, rank_spatial=4), SmallCNN(4, dim=8),
              SmallTransformer(4, dim=8, n_blocks=1, heads=2)):
        assert torch.allclose(m(lr)[0], bic, atol=1e-6)


def test_photo_cubes():
    from icml26.ssdcn import photo_hsi

    h = photo_hsi(2, 32, 8, seed=0)
    assert h.shape == (2, 8, 32, 32) and h.min() >= 0 and h.max() <= 1
    assert torch.equal(h, photo_hsi(2, 32, 8, seed=0)) and not torch.equal(h, photo_hsi(2, 32, 8, seed=1))
    with pytest.raises(ValueError, match="size"):
        photo_hsi(1, 500)


def test_blocks_start_as_identity_and_local_branch_is_not_linear():
    """Issue 31's recipe: every residual branch's last projection is zero, so each block is the identity at init;
    the local branch's activation is ReLU (GELU is ~linear at the block's input scale)."""
    from icml26.ssdcn import TransformerBlock
    from icml26.ssdcn.ssdcn import LocalBranch

    x = _x(2, 16, 8, 8) * 0.1
    assert torch.equal(SSDCB(16, k_spatial=4, k_spectral=4)(x), x)
    assert torch.equal(TransformerBlock(16, 2)(x), x)
    branch = LocalBranch(16)
    assert isinstance(branch.body[1], torch.nn.ReLU) and torch.count_nonzero(branch.body[2].weight) == 0
    torch.nn.init.normal_(branch.body[2].weight, std=0.1)
    # a linear branch would be odd: f(-x) = -f(x) up to the biases; ReLU breaks that at this scale
    f0 = branch(torch.zeros_like(x))
    assert not torch.allclose(branch(x) - f0, -(branch(-x) - f0), atol=1e-3)


def test_evaluate_checks_the_model_scale():
    from icml26.ssdcn import evaluate

    m = SmallCNN(3, scale=4, dim=4, n_blocks=1)
    evaluate(m, torch.rand(1, 3, 4, 4), torch.rand(1, 3, 16, 16))
    with pytest.raises(ValueError, match="scale"):
        evaluate(m, torch.rand(1, 3, 8, 8), torch.rand(1, 3, 16, 16))  # x2 pair for a x4 model


def test_integral_float_sizes_read_as_ints():
    torch.manual_seed(0)
    a = SSDCN(4.0, 4.0, dim=8.0, blocks_per_level=1.0, k_spatial=4.0, k_spectral=2.0, rank_spectral=4.0,
              rank_spatial=4.0)
    torch.manual_seed(0)
    b = SSDCN(4, 4, dim=8, blocks_per_level=1, k_spatial=4, k_spectral=2, rank_spectral=4, rank_spatial=4)
    x = torch.rand(1, 4, 8, 8)
    assert torch.equal(a(x)[0], b(x)[0]) and type(a.scale) is int
    assert block_flops(SSDCB(8, 4, 2), 8.0, [16.0]) == block_flops(SSDCB(8, 4, 2), 8, [16])
    with pytest.raises(ValueError, match="sizes"):
        block_flops(SSDCB(8, 4, 2), 8, [16.5])  # refused, not truncated
    assert degrade(torch.rand(1, 2, 8, 8), 4.0).shape == (1, 2, 2, 2)
