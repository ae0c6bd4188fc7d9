"""Hypothesis: the public entry points return a valid answer or raise ValueError/TypeError naming the argument."""

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icml26.ssdcn import FRRB, SSDCB, SSDCN, PyramidJointLoss, degrade, ergas, psnr, sam_degrees, ssim, synthetic_hsi

SET = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAMES = ("lr", "x", "x_up", "pred", "target", "hr", "scale", "bands", "dim", "k_spatial", "k_spectral", "n", "size",
         "n_endmembers", "seed", "in_bands", "rank", "outputs", "weights", "sam_weight", "kernel", "reduction",
         "data_range", "iters", "blocks_per_level", "library_size", "noise_std", "core", "u_c", "new_shape")
odd_numbers = st.one_of(st.integers(-3, 40), st.floats(allow_nan=True, allow_infinity=True, width=32),
                        st.just("3"), st.none(), st.booleans(), st.just(2.5))


def _named(err: Exception) -> bool:
    return any(n in str(err) for n in NAMES)


def _shape(draw_list):
    return tuple(draw_list)


@SET
@given(shape=st.lists(st.integers(0, 9), min_size=2, max_size=5), bad=st.sampled_from(["ok", "nan", "inf", "int"]),
       bands=st.integers(1, 4))
def test_ssdcn_forward_any_shape(shape, bad, bands):
    torch.manual_seed(0)
    net = SSDCN(bands, 4, dim=4, blocks_per_level=1, k_spatial=4, k_spectral=2, rank_spectral=2, rank_spatial=2)
    x = torch.rand(*shape)
    if bad == "nan" and x.numel():
        x.view(-1)[0] = float("nan")
    if bad == "inf" and x.numel():
        x.view(-1)[-1] = float("inf")
    if bad == "int":
        x = (x * 10).long()
    try:
        sr, outs = net(x)
    except (ValueError, TypeError) as e:
        assert _named(e), e
        return
    assert x.dim() == 4 and x.shape[1] == bands and bad in ("ok", "int")
    assert sr.shape == (x.shape[0], bands, 4 * x.shape[2], 4 * x.shape[3]) and torch.isfinite(sr).all()
    assert len(outs) == 2


@SET
@given(dim=odd_numbers, ks=odd_numbers, kc=odd_numbers, iters=odd_numbers)
def test_ssdcb_constructor(dim, ks, kc, iters):
    try:
        blk = SSDCB(dim, ks, kc, iters)
    except (ValueError, TypeError) as e:
        assert _named(e), e
        return
    x = torch.rand(1, blk.dim, 5, 4)
    assert blk(x).shape == x.shape and torch.isfinite(blk(x)).all()


@SET
@given(in_bands=odd_numbers, scale=odd_numbers, dim=odd_numbers)
def test_ssdcn_constructor(in_bands, scale, dim):
    try:
        SSDCN(in_bands, scale, dim, k_spatial=1, k_spectral=1, rank_spectral=1, rank_spatial=1)
    except (ValueError, TypeError) as e:
        assert _named(e), e


@SET
@given(a=st.lists(st.floats(-1, 2, width=32), min_size=1, max_size=48), shift=st.floats(-0.5, 0.5),
       ndim=st.sampled_from([2, 3, 4]), bad=st.sampled_from(["ok", "nan", "shape", "list"]))
def test_metrics(a, shift, ndim, bad):
    n = len(a)
    arr = np.asarray(a, dtype=np.float64)
    shape = {2: (1, n), 3: (1, 1, n), 4: (1, 1, 1, n)}[ndim]
    pred = arr.reshape(shape)
    target = pred + shift
    if bad == "nan":
        pred = pred.copy()
        pred.flat[0] = np.nan
    if bad == "shape":
        target = np.concatenate([target, target], axis=-1)
    if bad == "list":
        pred = pred.tolist()
    for fn in (psnr, sam_degrees, ssim, lambda p, t: ergas(p, t, 4)):
        try:
            v = fn(pred, target)
        except (ValueError, TypeError) as e:
            assert _named(e), e
            continue
        assert bad in ("ok", "list") and ndim >= 3
        assert isinstance(v, float)
        if fn is psnr and abs(shift) > 1e-3:  # a uniform error e gives -20 log10 |e|
            assert v == pytest.approx(-20 * math.log10(abs(shift)), rel=1e-6)


@SET
@given(side=st.integers(1, 20), scale=odd_numbers, kernel=st.sampled_from(["bicubic", "gaussian", "box", 3]))
def test_degrade(side, scale, kernel):
    hr = torch.rand(1, 2, side, side)
    try:
        lr = degrade(hr, scale, kernel)
    except (ValueError, TypeError) as e:
        assert _named(e), e
        return
    assert lr.shape == (1, 2, side // scale, side // scale) and side % scale == 0
    assert lr.min() >= 0 and lr.max() <= 1


@SET
@given(n=odd_numbers, size=odd_numbers, bands=odd_numbers, e=odd_numbers, seed=odd_numbers)
def test_synthetic_hsi(n, size, bands, e, seed):
    try:
        hr = synthetic_hsi(n, size if not isinstance(size, int) else min(size, 24), bands, e, seed)
    except (ValueError, TypeError) as e_:
        assert _named(e_), e_
        return
    assert hr.dim() == 4 and hr.min() >= 0 and hr.max() <= 1 and hr.dtype == torch.float32


@SET
@given(weights=st.one_of(st.none(), st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=3)),
       sam=odd_numbers, n_out=st.integers(0, 3), balance=st.sampled_from(["fixed", "magnitude", "other"]))
def test_pyramid_loss(weights, sam, n_out, balance):
    hr = torch.rand(1, 2, 16, 16)
    outs = [torch.rand(1, 2, 16 // 2 ** (n_out - 1 - i), 16 // 2 ** (n_out - 1 - i)) for i in range(n_out)]
    try:
        loss = PyramidJointLoss(weights, sam, balance)(outs, hr)
    except (ValueError, TypeError) as e:
        assert _named(e), e
        return
    assert torch.isfinite(loss) and loss >= 0


@SET
@given(h=st.integers(1, 9), w=st.integers(1, 9), r=st.integers(1, 6), rc=odd_numbers)
def test_frrb(h, w, r, rc):
    try:
        fr = FRRB(6, rc, r)
        core, u_c, _, _ = fr.factorize(torch.rand(1, 6, h, w))
        out = fr.reconstruct(core, u_c, (2 * h, 2 * w), torch.rand(1, 6, 2 * h, 2 * w))
    except (ValueError, TypeError) as e:
        assert _named(e), e
        return
    assert out.shape == (1, 6, 2 * h, 2 * w) and torch.isfinite(out).all() and min(h, w) >= r


def test_reuse_and_set_attributes_are_checked():
    net = SSDCN(3, 4, dim=4, blocks_per_level=1, k_spatial=4, k_spectral=2, rank_spectral=2, rank_spatial=2)
    x = torch.rand(1, 3, 4, 4)
    a, b = net(x)[0], net(x)[0]
    assert torch.equal(a, b)  # a module call is stateless: reuse gives the same answer
    with pytest.raises(ValueError, match="lr"):
        net([[[[float("nan")] * 4] * 4] * 3])
    assert net(x.tolist())[0].shape == (1, 3, 16, 16)  # a list is read like the tensor
