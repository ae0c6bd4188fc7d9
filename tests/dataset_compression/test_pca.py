"""PCA's combine/split and the tile-constrained crop (spec 8), and the PCACompressor pipeline."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from icml26.dataset_compression import (
    PCACompressor,
    RandomResizedCrop,
    TileConstrainedRandomResizedCrop,
    area_downsample,
    combine_tiles,
    sample_boxes,
    split_tiles,
)


def _images(n, c=1, r=8, seed=0):
    return torch.rand(n, c, r, r, generator=torch.Generator().manual_seed(seed))


def test_combine_then_split_returns_the_downsampled_inputs_exactly():
    x = _images(16, c=3, r=8)
    y = torch.tensor([0] * 8 + [1] * 8)
    canv, lab = combine_tiles(x, y, 2)
    assert canv.shape == (4, 3, 8, 8) and lab.tolist() == [0, 0, 1, 1]
    assert torch.equal(split_tiles(canv, 2), F.avg_pool2d(x, 2))
    canv1, _ = combine_tiles(F.avg_pool2d(x, 2), y, 2, downsample=False)  # pasting ready-made tiles: lossless
    assert torch.equal(split_tiles(canv1, 2), F.avg_pool2d(x, 2)) and torch.equal(canv1, canv)


def test_canvas_count_is_ceil_per_class_and_never_mixes_classes():
    y = torch.tensor([2] * 5 + [0] * 4 + [1] * 9)
    x = torch.arange(len(y), dtype=torch.float32)[:, None, None, None].expand(-1, 1, 6, 6).clone()
    canv, lab, index = combine_tiles(x, y, 3, return_index=True)
    counts = {c: int((lab == c).sum()) for c in (0, 1, 2)}
    assert counts == {0: math.ceil(4 / 9), 1: math.ceil(9 / 9), 2: math.ceil(5 / 9)}
    for i in range(len(lab)):  # every tile of a canvas comes from that canvas's class
        assert set(y[index[i]].tolist()) == {int(lab[i])}
        tiles = split_tiles(canv[i:i + 1], 3)
        assert torch.equal(tiles[:, 0, 0, 0], x[index[i], 0, 0, 0])
    # the short class-2 canvas repeats its own images cyclically
    assert index[lab == 2][0].tolist() == [0, 1, 2, 3, 4, 0, 1, 2, 3]


def test_combine_refuses_a_factor_that_does_not_divide_the_side():
    with pytest.raises(ValueError, match="factor"):
        combine_tiles(_images(4, r=9), torch.zeros(4, dtype=torch.long), 2)
    with pytest.raises(ValueError, match="factor"):
        split_tiles(_images(1, r=9), 2)
    with pytest.raises(ValueError, match="labels"):
        combine_tiles(_images(4), torch.tensor([0.0, 0.5, 1.0, 1.0]), 2)


def _painted(n, factor, tile):
    """Canvases whose tile k holds the constant k + 1 everywhere."""
    vals = torch.arange(1, factor * factor + 1, dtype=torch.float32).reshape(factor, factor)
    one = vals.repeat_interleave(tile, 0).repeat_interleave(tile, 1)
    return one[None, None].expand(n, 1, -1, -1).clone(), vals.flatten()


@pytest.mark.parametrize("scale", [(0.08, 1.0), (0.5, 1.0)])
def test_a_thousand_crops_each_read_a_single_tile(scale):
    x, vals = _painted(1000, 2, 8)
    out = TileConstrainedRandomResizedCrop(16, 2, scale=scale)(x, generator=torch.Generator().manual_seed(1))
    lo, hi = out.amin((1, 2, 3)), out.amax((1, 2, 3))
    nearest = vals[(out.mean((1, 2, 3))[:, None] - vals[None]).abs().argmin(1)]
    assert torch.allclose(lo, nearest, atol=1e-5) and torch.allclose(hi, nearest, atol=1e-5)
    assert set(nearest.tolist()) == set(vals.tolist())  # every tile gets picked
    # the unconstrained crop over the same canvases does straddle tiles
    wide = RandomResizedCrop(16, scale=(0.08, 1.0))(x, generator=torch.Generator().manual_seed(1))
    assert (wide.amax((1, 2, 3)) - wide.amin((1, 2, 3)) > 0.5).float().mean() > 0.3


def test_full_scale_square_crop_is_the_tile_upsampled():
    x = _images(50, c=2, r=8)
    out = TileConstrainedRandomResizedCrop(16, 2, scale=(1.0, 1.0), ratio=(1.0, 1.0))(
        x, generator=torch.Generator().manual_seed(0))
    ups = F.interpolate(split_tiles(x, 2), size=(16, 16), mode="bilinear", align_corners=False).reshape(50, 4, 2, 16,
                                                                                                        16)
    err = (out[:, None] - ups).abs().amax((2, 3, 4))  # (50, 4): distance to each tile's upsampling
    assert float(err.min(1).values.max()) < 1e-6


def test_factor_one_is_ordinary_random_resized_crop():
    x = _images(64, r=16)
    a = TileConstrainedRandomResizedCrop(16, 1, scale=(0.3, 1.0))(x, generator=torch.Generator().manual_seed(5))
    b = RandomResizedCrop(16, scale=(0.3, 1.0))(x, generator=torch.Generator().manual_seed(5))
    assert torch.equal(a, b)
    # an identity box (whole image, same size) returns the image itself
    same = RandomResizedCrop(16, scale=(1.0, 1.0), ratio=(1.0, 1.0))(x)
    assert torch.allclose(same, x, atol=1e-6)


def test_boxes_follow_the_torchvision_rule():
    b = sample_boxes(5000, 20, 20, scale=(0.25, 0.5), ratio=(0.5, 2.0), generator=torch.Generator().manual_seed(0))
    top, left, h, w = b.T
    assert bool(((top >= 0) & (left >= 0) & (top + h <= 20) & (left + w <= 20)).all())
    frac = (h * w).double() / 400
    assert 0.2 < float(frac.min()) and float(frac.max()) < 0.56  # U(0.25, 0.5) up to whole-pixel rounding
    assert 0.3 < float((w > h).double().mean()) < 0.7
    # an impossible aspect range on a square region falls back to the largest centred box of that aspect
    fb = sample_boxes(10, 8, 8, scale=(1.0, 1.0), ratio=(2.0, 2.0))
    assert fb.tolist() == [[2, 0, 4, 8]] * 10


def test_flip_flips_about_half():
    x = torch.zeros(400, 1, 8, 8)
    x[..., :4] = 1.0
    out = TileConstrainedRandomResizedCrop(8, 1, scale=(1.0, 1.0), ratio=(1.0, 1.0), flip=True)(
        x, generator=torch.Generator().manual_seed(0))
    flipped = (out[:, 0, 0, 0] < 0.5).float().mean()
    assert 0.4 < float(flipped) < 0.6


def test_pca_compressor_selects_easiest_and_tiles_them(digits):
    X, y = digits["X"], digits["y"]
    scores = np.random.default_rng(0).random(len(y))
    pca = PCACompressor(ipc=2, factor=2).fit(X, y, scores=scores, tiles=digits["half"])
    assert pca.canvases_.shape == (20, 1, 16, 16) and pca.canvas_labels_.tolist() == sorted(list(range(10)) * 2)
    sel = pca.selected_indices_.reshape(10, 8)
    for c in range(10):
        cls = np.flatnonzero(y.numpy() == c)
        assert set(sel[c]) == set(cls[np.argsort(scores[cls])[:8]])  # the 8 lowest scores
        assert np.all(np.diff(scores[sel[c]]) >= 0)  # ascending within the class
    # tiles are the native images of the selected samples, in tile_indices_ order
    assert torch.equal(split_tiles(pca.canvases_, 2), digits["half"][torch.from_numpy(pca.tile_indices_.ravel())])
    ds = pca.to_dataset(train=True, seed=0)
    img, lab = ds[3]
    assert img.shape == (1, 16, 16) and lab == int(pca.canvas_labels_[3])
    tiles = pca.to_dataset(train=False)
    assert len(tiles) == 80 and torch.allclose(tiles[0][0], F.interpolate(
        digits["half"][pca.tile_indices_[0, :1]], size=(16, 16), mode="bilinear", align_corners=False)[0])
    hard = PCACompressor(ipc=2, keep="hard").fit(X, y, scores=scores)
    assert not set(hard.selected_indices_) & set(pca.selected_indices_)  # 8 + 8 <= 20 per class


def test_pca_compressor_random_ablation_and_downsampling(digits):
    X, y = digits["X"], digits["y"]
    a = PCACompressor(ipc=1, metric="random", random_state=3).fit(X, y)
    b = PCACompressor(ipc=1, metric="random", random_state=3).fit(X, y)
    assert a.scores_ is None and np.array_equal(a.selected_indices_, b.selected_indices_)
    assert torch.equal(split_tiles(a.canvases_, 2), area_downsample(X[torch.from_numpy(a.tile_indices_.ravel())], 2))
    with pytest.raises(ValueError, match="tiles"):
        PCACompressor(ipc=1).fit(X, y, scores=np.zeros(len(y)), tiles=digits["X"])
