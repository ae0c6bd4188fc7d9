"""sign_power: known answers, invariants, dtypes and input validation (spec section 8)."""

import math

import pytest
import torch

from icml26.gradpower import foreach_sign_power_, sign_power, sign_power_

X = torch.tensor([-8.0, -1.0, 0.0, 0.25, 4.0])


@pytest.mark.parametrize("p, expected", [(1.5, [-22.627417, -1.0, 0.0, 0.125, 8.0]),
                                         (0.5, [-2.828427, -1.0, 0.0, 0.5, 2.0])])
def test_known_answers(p, expected):
    out = sign_power(X, p)
    torch.testing.assert_close(out, torch.tensor(expected), rtol=1e-6, atol=1e-6)
    assert out[2].item() == 0.0  # exact zero stays exactly zero


def test_odd_monotone_zero_nan():
    g = torch.randn(1000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    for p in (0.3, 1.2, 2.7):
        assert torch.equal(sign_power(-g, p), -sign_power(g, p))
        s = torch.sort(g).values
        assert bool((sign_power(s, p).diff() >= 0).all())  # monotone
        assert torch.equal(torch.sign(sign_power(g, p)), torch.sign(g))  # sign pattern kept
    z = torch.zeros(7)
    assert torch.equal(sign_power(z, 1.2), z)
    assert torch.equal(sign_power(z, 1.2, eps=1e-8), z)  # sign(0) = 0 even with the shift
    out = sign_power(torch.tensor([float("nan"), 2.0]), 1.2)
    assert math.isnan(out[0].item()) and out[1].item() == pytest.approx(2.0 ** 1.2)


def test_p1_bit_identical_and_inplace():
    g = torch.randn(64, 33)
    out = sign_power(g, 1.0)
    assert torch.equal(out, g) and out.data_ptr() != g.data_ptr()
    h = g.clone()
    assert sign_power_(h, 1.0) is h and torch.equal(h, g)
    ref = torch.sign(g) * g.abs() ** 1.2
    assert sign_power_(h, 1.2) is h
    torch.testing.assert_close(h, ref, rtol=0, atol=0)


def test_power_eps_reproduces_script_exactly():
    g = torch.randn(4096) * torch.logspace(-9, 1, 4096)
    g[::97] = 0.0
    for p in (1.2, 0.8):
        ref = torch.sign(g) * (torch.abs(g) + 1e-8) ** p
        assert torch.equal(sign_power(g, p, eps=1e-8), ref)
        h = g.clone()
        sign_power_(h, p, eps=1e-8)
        assert torch.equal(h, ref)


def test_foreach_matches_single_tensor():
    ts = [torch.randn(5, 7), torch.randn(3, dtype=torch.float64), torch.randn(11).bfloat16(), torch.zeros(2)]
    ref = [sign_power(t, 1.3, 1e-6) for t in ts]
    foreach_sign_power_(ts, 1.3, 1e-6)
    for a, b in zip(ts, ref):
        assert a.dtype == b.dtype and torch.equal(a, b)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_computed_in_fp32(dtype):
    lo, hi = (-6, 2) if dtype == torch.bfloat16 else (-4, 2)  # fp16 cannot hold 1e-6^1.2 ~ 6e-8 as a normal
    mags = torch.logspace(lo, hi, 2001)
    g = torch.cat([mags, -mags]).to(dtype)
    for p in (1.2, 1.5, 0.8):
        ref = sign_power(g.float(), p).to(dtype)
        out = sign_power(g, p)
        assert out.dtype == dtype and torch.equal(out, ref)
        assert bool((out != 0).all())  # no non-zero input maps to 0
        h = g.clone()
        sign_power_(h, p)
        assert torch.equal(h, ref)


@pytest.mark.parametrize("bad_p", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_power_raises(bad_p):
    with pytest.raises(ValueError, match="p must be a finite number > 0"):
        sign_power(X, bad_p)
    with pytest.raises(ValueError, match="p must be"):
        sign_power_(X.clone(), bad_p)


def test_bad_eps_and_types_raise():
    with pytest.raises(ValueError, match="eps must be a finite number >= 0"):
        sign_power(X, 1.2, eps=-1e-8)
    with pytest.raises(ValueError, match="eps"):
        sign_power(X, 1.2, eps=float("nan"))
    with pytest.raises(TypeError, match="p must be a real number"):
        sign_power(X, "1.2")
    with pytest.raises(TypeError, match="floating dtype"):
        sign_power(torch.tensor([1, 2]), 1.2)
    with pytest.raises(TypeError, match="torch.Tensor"):
        sign_power([1.0, 2.0], 1.2)
    with pytest.raises(RuntimeError, match="sparse"):
        sign_power(torch.eye(3).to_sparse(), 1.2)


def test_inplace_chunked_and_strided_paths_are_bit_identical():
    g = torch.randn(3 * (1 << 16) + 123, generator=torch.Generator().manual_seed(0))  # several chunks + a tail
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        x = g.to(dtype)
        ref = sign_power(x, 1.2, 1e-8)
        h = x.clone()
        sign_power_(h, 1.2, 1e-8)
        assert torch.equal(h, ref)
    m = torch.randn(64, 48)
    t = m.t()  # non-contiguous: the temporary-tensor path
    ref = sign_power(t, 0.7)
    sign_power_(t, 0.7)
    assert torch.equal(t, ref) and torch.equal(m, ref.t())
