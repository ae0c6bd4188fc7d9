"""Distribution matching and the unified evaluator (spec 8): known answers, determinism, soft labels, storage."""

import numpy as np
import pytest
import torch
import torch.nn as nn

from icml26.dataset_compression import (
    CompressedSet,
    DistributionMatching,
    PCACompressor,
    RandomSelector,
    dm_loss,
    evaluate,
    kd_loss,
    soft_targets,
    storage_bytes,
)
from icml26.dataset_compression.models import ConvNet, MLPEmbedding, make_model


def test_dm_loss_decreases(digits8):
    dm = DistributionMatching(ipc=1, iters=60, lr=0.05, random_state=0).fit(digits8["X"], digits8["y"])
    h = dm.loss_history_
    assert len(h) == 60 and h[-10:].mean() < 0.5 * h[:10].mean()
    assert dm.images_.shape == (10, 1, 8, 8) and float(dm.images_.min()) >= 0 and float(dm.images_.max()) <= 1
    assert dm.labels_.tolist() == list(range(10))
    again = DistributionMatching(ipc=1, iters=60, lr=0.05, random_state=0).fit(digits8["X"], digits8["y"])
    assert torch.equal(dm.images_, again.images_)


@pytest.mark.parametrize("factory", [None, lambda: nn.Sequential(nn.Conv2d(1, 4, 3), nn.Tanh(), nn.Flatten())])
def test_dm_loss_is_exactly_zero_with_the_whole_class(digits8, factory):
    # synthetic set = all real images of each class, real batch = the whole class: any embedding matches exactly
    dm = DistributionMatching(ipc=20, iters=3, batch_real=64, embed_factory=factory).fit(digits8["X"], digits8["y"])
    assert dm.loss_history_.tolist() == [0.0, 0.0, 0.0]
    by_class = [digits8["X"][digits8["y"] == c] for c in range(10)]
    assert torch.equal(dm.images_, torch.cat(by_class))  # zero gradient: the images did not move
    emb = make_model(lambda: MLPEmbedding(64), 0)
    assert float(dm_loss(emb, by_class, by_class).detach()) == 0.0
    assert float(dm_loss(emb, by_class, [b.flip(0) for b in by_class]).detach()) < 1e-10  # order-invariant mean


def test_dm_errors(digits8):
    with pytest.raises(ValueError, match="ipc"):
        DistributionMatching(ipc=21).fit(digits8["X"], digits8["y"])
    with pytest.raises(ValueError, match="init"):
        DistributionMatching(ipc=1, init="zeros")
    with pytest.raises(ValueError, match="clip"):
        DistributionMatching(ipc=1, clip=(1.0, 0.0))
    dm = DistributionMatching(ipc=1)
    dm.set_params(lr=-1.0)
    with pytest.raises(ValueError, match="lr"):
        dm.fit(digits8["X"], digits8["y"])


def test_dm_init_indices_start_from_those_images(digits8):
    X, y = digits8["X"], digits8["y"]
    idx = RandomSelector(3).fit(X, y).select(2)
    dm = DistributionMatching(ipc=2, iters=0).fit(X, y, init_indices=idx)
    assert torch.equal(dm.images_, X[torch.as_tensor(idx)]) and dm.labels_.tolist() == y[idx].tolist()
    # any order: classes are laid out 0..K-1, each class's images in the order given (a list reads like an array)
    rev = DistributionMatching(ipc=2, iters=0).fit(X, y, init_indices=list(idx[::-1]))
    assert torch.equal(rev.images_, X[torch.as_tensor(idx.reshape(10, 2)[:, ::-1].reshape(-1).copy())])
    with pytest.raises(ValueError, match="init_indices"):
        DistributionMatching(ipc=2, iters=0).fit(X, y, init_indices=idx[:-1])  # class 9 has one
    with pytest.raises(ValueError, match="init_indices"):
        DistributionMatching(ipc=2, iters=0).fit(X, y, init_indices=[len(X)] + list(idx[1:]))
    with pytest.raises(ValueError, match="init_indices"):
        DistributionMatching(ipc=2, iters=0).fit(X, y, init_indices=np.asarray(idx, float) + 0.5)


def _random_set(d, ipc=1, seed=0):
    idx = RandomSelector(seed).fit(d["X"], d["y"]).select(ipc)
    return CompressedSet(d["X"][idx], d["y"][idx], name="random")


def test_evaluate_is_deterministic_and_trains(digits):
    cs = _random_set(digits, ipc=2)
    a = evaluate(cs, digits["X_test"], digits["y_test"], steps=40, seed=3)
    b = evaluate((cs.images.tolist(), cs.labels.tolist()), digits["X_test"], digits["y_test"].tolist(), steps=40,
                 seed=3)  # lists are read like the tensors
    assert a["acc"] == b["acc"] and a["train_loss"] == b["train_loss"]
    assert 0.2 < a["acc"] <= 1.0  # well above chance (0.1) after 40 steps on 20 real digits
    c = evaluate(cs, digits["X_test"], digits["y_test"], steps=40, seed=4)
    assert c["train_loss"] != a["train_loss"]


def test_soft_labels(digits):
    cs = _random_set(digits)
    with pytest.raises(ValueError, match="teacher"):
        evaluate(cs, digits["X_test"], digits["y_test"], label_mode="soft", steps=2)
    logits = torch.randn(8, 10) * 5
    assert torch.allclose(soft_targets(logits, 1e6), torch.full((8, 10), 0.1), atol=1e-5)
    assert torch.allclose(soft_targets(logits, 1.0), torch.softmax(logits, 1))
    assert float(kd_loss(logits, logits, 4.0)) == pytest.approx(0.0, abs=1e-6)
    assert float(kd_loss(torch.zeros(8, 10), logits, 4.0)) > 0
    teacher = make_model(lambda: ConvNet(1, 10, 16), 0)
    r = evaluate(cs, digits["X_test"], digits["y_test"], label_mode="soft", teacher=teacher, steps=5)
    assert 0 <= r["acc"] <= 1 and r["label_mode"] == "soft"


def test_storage_is_equal_across_methods_at_equal_ipc(digits):
    X, y = digits["X"], digits["y"]
    pca = PCACompressor(ipc=1).fit(X, y, scores=np.zeros(len(y)), tiles=digits["half"])
    dm = DistributionMatching(ipc=1, iters=1).fit(X, y)
    rnd = _random_set(digits)
    sizes = {storage_bytes(s)["image_bytes"] for s in (pca, dm, rnd)}
    assert sizes == {10 * 16 * 16 * 4}  # float32 tensors: 4 bytes per stored value
    assert {storage_bytes(s, pixel_bytes=1)["image_bytes"] for s in (pca, dm, rnd)} == {10 * 16 * 16}
    hard, soft = storage_bytes(rnd), storage_bytes(rnd, label_mode="soft", soft_label_steps=400, batch_size=64)
    assert soft["label_bytes"] - hard["label_bytes"] == 400 * 64 * 10 * 4
    assert storage_bytes(rnd, pixel_bytes=1)["image_bytes"] * 4 == hard["image_bytes"]


def test_storage_follows_the_stored_dtype(digits):
    """Issue 39: storage_bytes counted one byte per pixel whatever the dtype."""
    X8 = (digits["X"][:10] * 255).round().to(torch.uint8)
    y = torch.arange(10)
    u8, f32 = CompressedSet(X8, y), CompressedSet(digits["X"][:10], y)
    f16 = CompressedSet(digits["X"][:10].half(), y)
    assert u8.stored_dtype == torch.uint8 and float(u8.images.max()) <= 1.0  # 8-bit pictures read as value / 255
    assert torch.allclose(u8.images, digits["X"][:10], atol=1 / 255)
    assert [storage_bytes(c)["image_bytes"] for c in (u8, f16, f32)] == [2560, 2 * 2560, 4 * 2560]
    assert storage_bytes(CompressedSet(X8.numpy(), y))["image_bytes"] == 2560
    assert storage_bytes(CompressedSet(digits["X"][:10], y, stored_dtype=torch.uint8))["image_bytes"] == 2560
    with pytest.raises(TypeError, match="stored_dtype"):
        CompressedSet(X8, y, stored_dtype="uint8")


@pytest.mark.parametrize("augment", [None, "auto", "module"])
def test_evaluate_refuses_a_test_set_at_another_resolution(digits, augment):
    """Issue 39: augment=None with 8x8 test images crashed deep in the model; every augment setting is checked."""
    from icml26.dataset_compression import RandomResizedCrop

    cs = _random_set(digits)
    aug = RandomResizedCrop(16, scale=(0.5, 1.0)) if augment == "module" else augment
    with pytest.raises(ValueError, match="X_test"):
        evaluate(cs, digits["half"][:50], digits["y"][:50], augment=aug, steps=1)
    # a crop that outputs the test resolution is fine: train 16x16 stored images on 8x8 crops, test at 8x8
    if augment == "module":
        r = evaluate(cs, digits["half"][:50], digits["y"][:50], augment=RandomResizedCrop(8, scale=(0.5, 1.0)),
                     steps=2, model_factory=lambda: nn.Sequential(nn.Flatten(), nn.Linear(64, 10)))
        assert 0.0 <= r["acc"] <= 1.0
    else:
        assert 0.0 <= evaluate(cs, digits["X_test"], digits["y_test"], augment=aug, steps=2)["acc"] <= 1.0


def test_dm_pca_and_selectors_refuse_pixels_outside_unit_range(digits):
    """Issue 39: DM silently clipped 0-255 images to [0, 1]; PCA and the selectors took them without a word."""
    from icml26.dataset_compression import CCSSelector, HerdingSelector, ScoreSelector

    X255, y = digits["X"] * 255, digits["y"]
    X8 = X255.round().to(torch.uint8)
    scores = np.zeros(len(y))
    for bad in (X255, X8):
        with pytest.raises(ValueError, match=r"X must hold pixel values in \[0, 1\].*255"):
            DistributionMatching(ipc=1, iters=1).fit(bad, y)
        with pytest.raises(ValueError, match=r"X must hold pixel values in \[0, 1\]"):
            PCACompressor(ipc=1).fit(bad, y, scores=scores)
        for sel in (RandomSelector(0), HerdingSelector()):
            with pytest.raises(ValueError, match=r"X must hold pixel values"):
                sel.fit(bad, y)
        for sel in (ScoreSelector("el2n"), CCSSelector("el2n")):
            with pytest.raises(ValueError, match=r"X must hold pixel values"):
                sel.fit(bad, y, scores=scores)
    with pytest.raises(ValueError, match="tiles must hold pixel values"):
        PCACompressor(ipc=1).fit(digits["X"], y, scores=scores, tiles=digits["half"] * 255)
    # a DM with another clip range takes images in that range; clip=None takes any finite images
    dm = DistributionMatching(ipc=1, iters=2, clip=(0.0, 255.0)).fit(X255, y)
    assert float(dm.images_.max()) <= 255.0
    DistributionMatching(ipc=1, iters=1, clip=None).fit(X255 - 100, y)


def test_pca_takes_a_precomputed_selection_such_as_herding(digits):
    from icml26.dataset_compression import HerdingSelector

    X, y = digits["X"], digits["y"]
    idx = HerdingSelector().fit(X, y).select(4)
    pca = PCACompressor(ipc=1, metric="random").fit(X, y, tiles=digits["half"], indices=idx)
    assert np.array_equal(pca.selected_indices_, idx) and pca.scores_ is None
    assert np.array_equal(pca.tile_indices_.ravel(), idx)  # herding pick order is the tile order
    assert torch.equal(pca.canvases_[0, :, :8, :8], digits["half"][idx[0]])
    with pytest.raises(ValueError, match="indices"):
        PCACompressor(ipc=1).fit(X, y, indices=idx[:-1])
    with pytest.raises(ValueError, match="indices"):
        PCACompressor(ipc=1).fit(X, y, indices=idx[::-1])  # not grouped by class


def test_evaluator_input_errors(digits):
    cs = _random_set(digits)
    Xt, yt = digits["X_test"], digits["y_test"]
    with pytest.raises(ValueError, match="X_test"):
        evaluate(cs, Xt[:, :, :8, :8], yt, steps=1)
    with pytest.raises(ValueError, match="y_test"):
        evaluate(cs, Xt, yt[:-1], steps=1)
    with pytest.raises(ValueError, match="steps"):
        evaluate(cs, Xt, yt, steps=2.5)
    with pytest.raises(ValueError, match="label_mode"):
        evaluate(cs, Xt, yt, label_mode="mixed")
    with pytest.raises(TypeError, match="compressed"):
        evaluate("images", Xt, yt)
    with pytest.raises(ValueError, match="not fitted"):
        evaluate(PCACompressor(ipc=1), Xt, yt)
    bad = Xt.clone()
    bad[0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="X_test"):
        evaluate(cs, bad, yt, steps=1)
    with pytest.raises(ValueError, match="images"):
        CompressedSet(torch.full((2, 1, 4, 4), float("inf")), [0, 1])
    with pytest.raises(ValueError, match="labels"):
        CompressedSet(torch.zeros(2, 1, 4, 4), [0.5, 1])
    with pytest.raises(ValueError, match="factor"):
        CompressedSet(torch.zeros(2, 1, 6, 6), [0, 1], factor=4)
    with pytest.raises(ValueError, match="num_classes"):
        evaluate(cs, Xt, yt, num_classes=5, steps=1)
