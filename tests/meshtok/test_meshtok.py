"""Spec section 8 correctness tests: tokenizer bookkeeping, round trip, indicator known answers, selection,
block-causal mask, KV-cache rollout, FLOP accounting, geometry errors; plus the simulators and HDF5 layout."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from icml26.meshtok import (
    BlockCausalTransformer,
    GeometryFiLM,
    MeshTok,
    MultiScaleTokenizer,
    block_causal_mask,
    burgers2d,
    allen_cahn2d,
    gray_scott2d,
    patch_scores,
    read_hdf5,
    refined_count,
    rel_l2,
    select_patches,
    uniform_coarse,
    uniform_fine,
    random_refine,
    write_hdf5,
)

torch.manual_seed(0)


def _tok(ratio, C=2, grid=16, patch=4, dim=8, **kw):
    torch.manual_seed(0)
    return MultiScaleTokenizer(C, grid, patch, ratio, dim=dim, **kw)


def test_k0_equals_uniform_coarse_conv_sequence():
    tk = _tok(0.0)
    x = torch.randn(3, 2, 16, 16)
    tb = tk.encode(x)
    w = tk.coarse_in.weight.view(8, 2, 4, 4)  # the Conv2d(C, D, P, stride P) this Linear is
    ref = F.conv2d(F.gelu(F.conv2d(x, w, stride=4)), tk.coarse_mix.weight.view(8, 8, 1, 1))
    assert tb.tokens.shape == (3, 16, 8)
    torch.testing.assert_close(tb.tokens, ref.flatten(2).transpose(1, 2), rtol=1e-5, atol=1e-5)
    assert (tb.level == 0).all() and tk.tokens_per_frame == 16


def test_full_refinement_equals_uniform_fine_sequence_up_to_quadtree_order():
    tk = _tok(1.0)
    x = torch.randn(2, 2, 16, 16)
    tb = tk.encode(x)
    w = tk.fine_in.weight.view(8, 2, 2, 2)
    ref = F.conv2d(F.gelu(F.conv2d(x, w, stride=2)), tk.fine_mix.weight.view(8, 8, 1, 1)).flatten(2).transpose(1, 2)
    n = 4
    order = [(2 * (j // n) + a) * 2 * n + (2 * (j % n) + b) for j in range(n * n) for a in (0, 1) for b in (0, 1)]
    torch.testing.assert_close(tb.tokens, ref[:, order], rtol=1e-5, atol=1e-5)
    assert (tb.level == 1).all() and tb.tokens.shape[1] == 64


@pytest.mark.parametrize("ratio", [0.0, 0.0625, 0.25, 0.5, 1.0])
def test_length_coords_and_levels(ratio):
    tk = _tok(ratio)
    K = refined_count(16, 4, ratio)
    tb = tk.encode(torch.randn(2, 2, 16, 16))
    assert tb.tokens.shape[1] == 16 + 3 * K == tk.tokens_per_frame
    assert int((tb.level == 1).sum(1)[0]) == 4 * K and int(tb.refined.sum(1)[0]) == K
    # every pixel is covered by exactly one token: cell areas sum to 1
    area = torch.where(tb.level == 0, torch.tensor(1 / 16), torch.tensor(1 / 64)).sum(1)
    torch.testing.assert_close(area, torch.ones(2))
    # a refined patch's 4 children follow each other, in row-major order, at its place in raster order
    if K:
        j = int(tb.refined_idx[0, 0])
        pos = int((tb.level[0] == 1).nonzero()[0])
        xy = tb.coords[0, pos:pos + 4]
        r, c = j // 4, j % 4
        exp = torch.tensor([[(2 * c + b + 0.5) / 8, (2 * r + a + 0.5) / 8] for a in (0, 1) for b in (0, 1)])
        torch.testing.assert_close(xy, exp)
        assert pos == int((torch.arange(16) < j).sum() - tb.refined[0, :j].sum())  # coarse tokens before it


def test_round_trip_of_linear_averaging_tokenizer():
    tk = _tok(0.25, C=1, dim=4, dec_width=1, activation="identity")
    P, h = 4, 2
    with torch.no_grad():
        for m in (tk.coarse_in, tk.fine_in, tk.coarse_mix, tk.fine_mix, tk.coarse_out, tk.fine_out):
            m.weight.zero_()
        tk.coarse_in.weight[0] = 1 / P ** 2       # token channel 0 = patch mean
        tk.fine_in.weight[0] = 1 / h ** 2         # = child mean
        tk.coarse_mix.weight[0, 0] = tk.fine_mix.weight[0, 0] = 1
        tk.coarse_out.weight[:, 0] = 1            # constant upsampling of channel 0
        tk.fine_out.weight[:, 0] = 1
        tk.head1.weight.fill_(1), tk.head1.bias.zero_(), tk.head2.weight.fill_(1), tk.head2.bias.zero_()
    x = torch.randn(2, 1, 16, 16)
    tb = tk.encode(x)
    y = tk.decode(tb.tokens, tb)
    coarse = F.interpolate(F.avg_pool2d(x, P), scale_factor=P)
    fine = F.interpolate(F.avg_pool2d(x, h), scale_factor=h)
    ref_mask = F.interpolate(tb.refined.view(2, 1, 4, 4).float(), scale_factor=P).bool()
    torch.testing.assert_close(y, torch.where(ref_mask, fine, coarse), rtol=1e-5, atol=1e-6)


def test_indicator_step_and_constant_frame():
    x = torch.zeros(1, 1, 32, 32)
    x[..., 10:14, 18:22] = 1.0  # a sharp-edged block inside patch (row 1, column 2) = raster index 6
    for periodic in (False, True):
        s = patch_scores(x, 8, periodic=periodic)
        assert int(s.argmax()) == 6 and s[0, 6] == s.max() and (s[0, torch.arange(16) != 6] < s[0, 6]).all()
    y = torch.zeros(1, 1, 32, 32)
    y[..., :, 21:] = 1.0  # a vertical step at column 21 (patch column 2), periodic: also at the wrap (column 0)
    s = patch_scores(y, 8, weights=(1, 1, 0), periodic=True).view(4, 4)
    assert set(select_patches(s.view(1, 16), 4)[0].tolist()) == {2, 6, 10, 14}
    # the wrap-around step straddles columns 31 | 0: patch columns 3 and 0 share it, column 1 is flat
    torch.testing.assert_close(s[:, 0], s[:, 3])
    assert (s[:, 2] > s[:, 0]).all() and (s[:, 0] > s[:, 1]).all()
    const = patch_scores(torch.full((2, 3, 16, 16), 0.7), 4, periodic=True)
    assert torch.equal(const, torch.zeros_like(const))
    assert select_patches(const, 3).tolist() == [[0, 1, 2], [0, 1, 2]]  # ties: lowest raster indices
    # zero padding (the official stencil) sees an edge at the border of a non-zero constant frame; a zero frame
    # (what MeshTok's per-sample normalisation makes of any constant frame) scores all-equal
    border = patch_scores(torch.full((1, 1, 16, 16), 0.7), 4).view(4, 4)
    assert border[0, 0] > border[1, 1]
    zero = patch_scores(torch.zeros(1, 1, 16, 16), 4)
    assert torch.equal(zero, torch.zeros_like(zero))


def test_periodic_indicator_refines_a_shock_across_the_boundary_on_both_sides():
    # Burgers-like sawtooth: u rises across the domain and drops at the seam x = 1 | 0, a shock crossing the periodic
    # boundary; the offset 1 makes a zero pad see a spurious jump along every border
    W, P = 32, 8
    ramp = (1 + (torch.arange(W) + 0.5) / W).expand(W, W).clone()[None, None]
    s = patch_scores(ramp, P, periodic=True).view(4, 4)
    assert set(select_patches(s.view(1, 16), 8)[0].tolist()) == {0, 3, 4, 7, 8, 11, 12, 15}  # columns 0 and 3
    torch.testing.assert_close(s[:, 0], s[:, 3])  # both sides of the shock score the same
    # periodic padding is translation-equivariant: move the shock one patch into the domain, the refinement follows
    moved = torch.roll(ramp, P, -1)
    sm = patch_scores(moved, P, periodic=True).view(4, 4)
    torch.testing.assert_close(sm, torch.roll(s, 1, -1))
    assert set(select_patches(sm.view(1, 16), 8)[0].tolist()) == {0, 1, 4, 5, 8, 9, 12, 13}
    # zero padding (the official stencil) on the same periodic field: every refined patch is a border patch and the
    # shock's right side in the interior rows (patches 5, 9) is not refined
    z = set(select_patches(patch_scores(moved, P, periodic=False), 8)[0].tolist())
    assert not {5, 9} & z and z <= {0, 1, 2, 3, 4, 7, 8, 11, 12, 13, 14, 15}


def test_border_share_diagnostic():
    from icml26.meshtok.claims import border_share

    ramp = (1 + (torch.arange(32) + 0.5) / 32).expand(32, 32).clone()[None, None]
    moved = torch.roll(ramp, 8, -1)
    b = border_share(moved, 8, 8, "periodic")
    assert b["border_fraction"] == pytest.approx(12 / 16) and b["used"] == b["periodic"]
    assert b["zero"] == 1.0 and b["periodic"] == pytest.approx(6 / 8)  # columns 0, 1: 4 + 2 border patches


def test_normalisation_options_differ_only_by_offset_handling():
    x = torch.randn(3, 1, 16, 16)
    a = patch_scores(x, 4, weights=(1, 0, 0))
    assert torch.isclose(a.min(1).values, torch.zeros(3)).all() and torch.isclose(a.max(1).values, torch.ones(3),
                                                                                  atol=1e-4).all()
    b = patch_scores(x, 4, weights=(1, 0, 0), faithful_norm=True)
    assert (b.max(1).values < 1).all() and torch.equal(a.argsort(1), b.argsort(1))  # same ranking for one term


def test_selection_sorted_unique_exact_k():
    s = torch.randn(5, 64)
    for mode in ("physical", "random"):
        idx = select_patches(s, 16, mode, generator=torch.Generator().manual_seed(1))
        assert idx.shape == (5, 16)
        assert (idx[:, 1:] > idx[:, :-1]).all()
    assert torch.equal(select_patches(s, 16), torch.sort(torch.topk(s, 16).indices, 1).values)


def test_block_causal_mask_and_future_perturbation():
    m = block_causal_mask(3, 2)
    assert m.shape == (6, 6) and m[:3, :3].all() and not m[:3, 3:].any() and m[3:].all()
    torch.manual_seed(0)
    model = MeshTok(1, 16, 4, 0.25, dim=16, depth=2, heads=2, ffn=32, dec_width=4)
    x = torch.randn(2, 3, 16, 16, 1)
    y0 = model(x)
    x2 = x.clone()
    # shuffle frame 2's pixels: a different future frame with the same per-sample mean/std (the normalisation
    # statistics are taken over all input frames, so this isolates the attention mask)
    perm = torch.randperm(256)
    x2[:, 2] = x[:, 2].reshape(2, 256, 1)[:, perm].reshape(2, 16, 16, 1)
    y1 = model(x2)
    torch.testing.assert_close(y0[:, :2], y1[:, :2], rtol=1e-5, atol=1e-6)
    assert (y0[:, 2] - y1[:, 2]).abs().max() > 1e-3


@pytest.mark.parametrize("ratio,selection", [(0.25, "physical"), (0.0, "physical"), (1.0, "physical")])
def test_kv_cache_rollout_equals_full_recomputation(ratio, selection):
    torch.manual_seed(0)
    model = MeshTok(1, 16, 4, ratio, dim=16, depth=2, heads=2, ffn=32, dec_width=4, selection=selection)
    ctx = torch.randn(2, 3, 16, 16, 1)
    a = model.rollout(ctx, 4)
    b = model.rollout(ctx, 4, use_cache=False)
    assert a.shape == (2, 4, 16, 16, 1)
    torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    # the first rolled-out frame is the forward pass's last prediction
    torch.testing.assert_close(a[:, 0], model(ctx)[:, -1], rtol=1e-4, atol=1e-5)


def test_flex_attention_matches_sdpa():
    torch.manual_seed(0)
    t = BlockCausalTransformer(16, 2, 2, 32, attn_impl="sdpa")
    x = torch.randn(2, 3 * 8, 16)
    with torch.no_grad():  # FlexAttention has no backward on CPU (the paper-scale path uses it on GPU)
        y = t(x, 8)
        for impl in ("math", "flex"):
            t.attn_impl = impl
            torch.testing.assert_close(t(x, 8), y, rtol=1e-4, atol=1e-5)


def test_film_is_identity_at_init():
    f = GeometryFiLM(8)
    tok = torch.randn(2, 5, 8)
    out = f(tok, torch.rand(2, 5, 2), torch.randint(0, 2, (2, 5)))
    torch.testing.assert_close(out, tok)


def test_flop_accounting_monotone_in_k():
    shape = (1, 2, 16, 16, 1)
    prev, tokens = -1, []
    for ratio in (0.0, 0.25, 0.5, 1.0):
        torch.manual_seed(0)
        m = MeshTok(1, 16, 4, ratio, dim=16, depth=2, heads=2, ffn=32, dec_width=4)
        f = m.flops(shape)
        assert f["total"] > prev and f["non_attention"] > 0
        L = m.token_count()
        assert L == 16 + 3 * refined_count(16, 4, ratio)
        assert f["attention"] == 4 * (2 * L) ** 2 * 16 * 2
        prev = f["total"]
        tokens.append(L)
    assert tokens == [16, 28, 40, 64]


@pytest.mark.parametrize("kwargs,match", [
    (dict(grid=30, patch=4), "divisible"),
    (dict(grid=15, patch=5), "even|divisible"),
    (dict(grid=21, patch=3), "even"),
    (dict(grid=16, patch=4, refine_ratio=0.1), "integer"),
    (dict(grid=16, patch=4, refine_ratio=1.5), "refine_ratio"),
])
def test_geometry_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MultiScaleTokenizer(1, dim=8, **kwargs)


def test_select_k_larger_than_patches():
    with pytest.raises(ValueError, match="k"):
        select_patches(torch.zeros(1, 16), 17)


def test_baselines_share_the_interface():
    kw = dict(dim=16, depth=1, heads=2, ffn=16, dec_width=4)
    assert uniform_coarse(1, 16, 4, **kw).token_count() == 16
    assert uniform_fine(1, 16, 4, **kw).token_count() == 64
    r = random_refine(1, 16, 4, 0.25, **kw)
    assert r.token_count() == 28 and r.tokenizer.selection == "random"
    with pytest.raises(TypeError, match="refine_ratio"):
        uniform_coarse(1, 16, 4, refine_ratio=0.5)


def test_burgers_data():
    a = burgers2d(3, grid=32, n_frames=3, seed=5)
    b = burgers2d(1, grid=32, n_frames=3, seed=5)
    assert a.shape == (3, 3, 32, 32, 1) and a.dtype == np.float32 and np.isfinite(a).all()
    np.testing.assert_array_equal(a[:1], b)  # a trajectory does not depend on its batch-mates
    # inviscid-ish Burgers keeps max|u| from growing (TVD scheme + viscosity)
    assert np.abs(a).max() <= 1.5 + 1e-4
    # conservation of the mean on the periodic square (finite volumes)
    np.testing.assert_allclose(a.mean((2, 3, 4)), a[:, :1].mean((2, 3, 4)).repeat(3, 1), atol=1e-5)


def test_other_simulators_and_hdf5(tmp_path):
    ac = allen_cahn2d(2, grid=16, n_frames=3)
    gs = gray_scott2d(1, grid=16, n_frames=2, burn_in_steps=10, steps_per_frame=5)
    assert ac.shape == (2, 3, 16, 16, 1) and np.abs(ac).max() <= 1.0 + 1e-6
    assert gs.shape == (1, 2, 16, 16, 2) and np.isfinite(gs).all()
    p = write_hdf5(tmp_path / "d.h5", ac)
    np.testing.assert_array_equal(read_hdf5(p), ac)
    np.testing.assert_array_equal(read_hdf5(p, index=slice(1, 2)), ac[1:2])
    with pytest.raises(ValueError, match="no dataset"):
        read_hdf5(p, key="u")


def test_rel_l2():
    t = torch.ones(2, 4, 4, 1)
    assert torch.allclose(rel_l2(1.5 * t, t), torch.full((2,), 0.5, dtype=torch.float64))
    with pytest.raises(ValueError, match="same shape"):
        rel_l2(t, t[:1])
