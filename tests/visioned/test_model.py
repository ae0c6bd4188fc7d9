"""ViT, pretext losses, pretrainer and regressor tests (spec §8)."""

import numpy as np
import pytest
import torch

from icml26.visioned import VisionEDPretrainer, VisionEDRegressor, VisionEDViT, mim_loss
from icml26.visioned.model import patchify, random_masking

CFG = dict(img_size=16, patch=8, in_chans=4, n_shots=6, dim=32, depth=1, heads=2)


def _imgs(n=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (n, 6, 4, 16, 16), generator=g, dtype=torch.uint8)


def test_output_shapes_and_bad_shapes():
    m = VisionEDViT(**CFG)
    assert m(_imgs(3)).shape == (3, 32)
    with pytest.raises(ValueError, match="images"):
        m(torch.zeros(2, 6, 4, 32, 32, dtype=torch.uint8))
    with pytest.raises(ValueError, match="images"):
        m(torch.zeros(2, 6, 3, 16, 16, dtype=torch.uint8))
    with pytest.raises(ValueError, match="patch"):
        VisionEDViT(img_size=30, patch=8)


def test_mask_ratio_is_exact():
    for L, r in ((24, 0.5), (96, 0.25), (97, 0.75)):
        keep, mask, restore = random_masking(4, L, r, torch.Generator().manual_seed(0))
        assert (mask.sum(1) == int(np.floor(L * r))).all()
        assert keep.shape == (4, L - int(np.floor(L * r)))
        assert not mask.gather(1, keep).any()


def test_mim_loss_zero_for_perfect_reconstruction():
    x = _imgs(2).float() / 255
    t = patchify(x, 8)
    mu, sd = t.mean(-1, keepdim=True), (t.var(-1, keepdim=True, unbiased=False) + 1e-6).sqrt()
    mask = torch.rand(2, t.shape[1]) < 0.5
    assert mim_loss((t - mu) / sd, t, mask).item() < 1e-10
    assert mim_loss(torch.zeros_like(t), t, mask).item() > 0.5


def test_pretrain_step_decreases_loss_on_fixed_batch():
    torch.manual_seed(0)
    m = VisionEDViT(**CFG)
    pt = VisionEDPretrainer(m, mask_ratio=0.5)
    x = _imgs(8)
    phys, comp = torch.randn(8, 9), torch.randint(0, 5, (8, 7)).float()
    opt = torch.optim.AdamW(pt.parameters(), lr=1e-3)
    losses = []
    for _ in range(20):
        terms = pt.loss_terms(x, phys, comp, torch.Generator().manual_seed(1))
        opt.zero_grad()
        terms["total"].backward()
        opt.step()
        losses.append(terms["total"].item())
    assert set(terms) == {"mim", "phys", "comp", "con", "total"}
    assert losses[-1] < 0.8 * losses[0]


def test_pretrainer_rejects_label_leakage():
    from icml26.visioned import COMP_KEYS, PHYS_KEYS

    pre = {k: np.zeros(4) for k in PHYS_KEYS + COMP_KEYS} | {"gap_eV": np.zeros(4)}
    with pytest.raises(ValueError, match="gap_eV"):
        VisionEDPretrainer(VisionEDViT(**CFG), epochs=1).fit(_imgs(4).numpy(), pre)
    with pytest.raises(ValueError, match="weights"):
        VisionEDPretrainer(VisionEDViT(**CFG), weights={"bogus": 1.0})


def test_save_load_roundtrip(tmp_path):
    m = VisionEDViT(**CFG)
    m.save_pretrained(tmp_path / "m")
    m2 = VisionEDViT.from_pretrained(tmp_path / "m")
    x = _imgs(2)
    m.eval(), m2.eval()
    assert torch.equal(m(x), m2(x))


def test_regressor_learns_a_simple_target():
    g = torch.Generator().manual_seed(0)
    level = torch.rand(24, generator=g)
    x = (level[:, None, None, None, None] * 200 + torch.rand(24, 6, 4, 16, 16, generator=g) * 50).to(torch.uint8)
    y = level.numpy() * 3.0  # a brightness-driven target: learnable from pixels
    reg = VisionEDRegressor(backbone_config=CFG, epochs=25, batch_size=8, lr_backbone=1e-3, seed=0).fit(x.numpy(), y)
    pred = reg.predict(x.numpy())
    assert pred.shape == (24,)
    assert np.mean(np.abs(pred - y)) < 0.5 * np.mean(np.abs(y - y.mean()))
    with pytest.raises(ValueError, match="X"):
        reg.fit(x.numpy()[:, :3], y)
