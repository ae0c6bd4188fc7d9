"""Bad input never gives a silent wrong answer (issue 14): each case raised deep inside numpy/torch, or returned a
wrong/NaN answer, before the fix."""

import numpy as np
import pytest
import torch

from icml26.visioned import (
    EDCalculator,
    PointCloudRegressor,
    PointNetPPLite,
    VisionEDPretrainer,
    VisionEDRegressor,
    VisionEDViT,
    canonical_frame,
    ed_point_cloud,
    farthest_point_sampling,
    read_cube,
    render_multishot,
)
from icml26.visioned.density import COMP_KEYS, PHYS_KEYS, compute_record

CFG = dict(img_size=16, patch=8, in_chans=4, n_shots=6, dim=32, depth=1, heads=2)


def test_read_cube_accepts_pyscf_cubegen_output(tmp_path, water):
    """PySCF's default cube grid has a different step along x, y, z: read it exactly, render and sample it."""
    from pyscf.tools import cubegen

    mol = water.to_pyscf()
    path = tmp_path / "pyscf.cube"
    cube = cubegen.density(mol, str(path), water.dm, nx=30, ny=34, nz=26)
    rec = read_cube(path)
    assert rec.cube.shape == (30, 34, 26) and isinstance(rec.spacing, tuple) and len(set(rec.spacing)) == 3
    assert np.allclose(rec.cube.astype(float), cube, rtol=2e-3, atol=1e-6)
    assert np.allclose(rec.coords, water.coords, atol=1e-5)
    # the grid positions are where PySCF evaluated the density
    pts = cubegen.Cube(mol, 30, 34, 26).get_coords() * 0.52917721092
    assert np.allclose(rec.grid_points(), pts, atol=1e-5)
    img = render_multishot(rec, size=16)
    ref = render_multishot(water, size=16)
    hit, hit_ref = img[:, 3] > 0, ref[:, 3] > 0
    assert abs(int(hit.sum()) - int(hit_ref.sum())) < 0.05 * hit_ref.sum()  # same surface, other grid
    pc = ed_point_cloud(rec, n_points=64)
    assert pc.shape == (64, 4) and np.all(pc[:, 3] >= 1e-3 * (1 - 1e-3))
    rec.save(tmp_path / "r.npz")
    back = type(rec).load(tmp_path / "r.npz")
    assert back.spacing == rec.spacing


def test_read_cube_units_and_bad_files(tmp_path, water):
    from icml26.visioned.density import write_cube

    write_cube(water, tmp_path / "w.cube")
    lines = (tmp_path / "w.cube").read_text().splitlines()
    # Angstrom cube: negative voxel counts, lengths in Angstrom
    ang = lines[:2] + [lines[2]]
    o = water.origin
    ang[2] = f"{len(water.atoms):5d} {o[0]:12.6f} {o[1]:12.6f} {o[2]:12.6f}"
    for k, n in enumerate(water.cube.shape):
        v = [0.0, 0.0, 0.0]
        v[k] = water.spacing
        ang.append(f"{-n:5d} {v[0]:12.6f} {v[1]:12.6f} {v[2]:12.6f}")
    for zz, c in zip(water.atoms, water.coords):
        ang.append(f"{int(zz):5d} 0.0 {c[0]:12.6f} {c[1]:12.6f} {c[2]:12.6f}")
    ang += lines[6 + len(water.atoms):]
    (tmp_path / "a.cube").write_text("\n".join(ang) + "\n")
    rec = read_cube(tmp_path / "a.cube")
    assert np.allclose(rec.coords, water.coords, atol=1e-5) and abs(rec.spacing - water.spacing) < 1e-6
    (tmp_path / "short.cube").write_text("\n".join(lines[:-3]) + "\n")
    with pytest.raises(ValueError, match="path"):
        read_cube(tmp_path / "short.cube")
    (tmp_path / "junk.cube").write_text("hello\n")
    with pytest.raises(ValueError, match="path"):
        read_cube(tmp_path / "junk.cube")


def test_images_float_0_255_are_refused_not_used_unscaled():
    m = VisionEDViT(**CFG)
    x8 = torch.randint(0, 256, (2, 6, 4, 16, 16), dtype=torch.uint8)
    m.eval()
    ref = m(x8)
    assert torch.allclose(m(x8.float() / 255), ref)  # float in [0, 1]: the same answer
    assert torch.allclose(m(x8.long()), ref)  # other integer types: scaled like uint8
    with pytest.raises(ValueError, match="images.*\\[0, 1\\]"):
        m(x8.float())  # a float image in 0..255
    with pytest.raises(ValueError, match="images"):
        m(x8.long() * 2)  # integers above 255
    bad = x8.float() / 255
    bad[0, 0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        m(bad)
    with pytest.raises(TypeError, match="images"):
        m(x8.bool())


def test_regressor_checks_every_image_not_only_the_first():
    x = np.random.default_rng(0).random((6, 6, 4, 16, 16)).astype(np.float32)
    x[5] *= 255  # only the last molecule is on the wrong scale
    with pytest.raises(ValueError, match="X"):
        VisionEDRegressor(backbone_config=CFG, epochs=1).fit(x, np.arange(6.0))
    x[5] = np.nan
    with pytest.raises(ValueError, match="X"):
        VisionEDRegressor(backbone_config=CFG, epochs=1).fit(x, np.arange(6.0))
    ok = (x[:5] * 0).astype(np.float32)
    with pytest.raises(ValueError, match="y"):
        VisionEDRegressor(backbone_config=CFG, epochs=1).fit(ok, [0, 1, np.nan, 3, 4])
    with pytest.raises(ValueError, match="X_val"):
        VisionEDRegressor(backbone_config=CFG, epochs=1).fit(ok, np.arange(5.0), X_val=ok)
    for kw in ({"epochs": 2.5}, {"batch_size": 0}, {"loss": "huber"}, {"patience": -1}, {"seed": None}):
        with pytest.raises((ValueError, TypeError), match=list(kw)[0]):
            VisionEDRegressor(backbone_config=CFG, **kw)
    reg = VisionEDRegressor(backbone_config=CFG, epochs=1)
    reg.epochs = 0  # set after construction: caught by fit
    with pytest.raises(ValueError, match="epochs"):
        reg.fit(ok, np.arange(5.0))


def test_pretext_nan_and_bad_settings_are_refused():
    imgs = torch.randint(0, 256, (4, 6, 4, 16, 16), dtype=torch.uint8).numpy()
    pre = {k: np.ones(4) for k in PHYS_KEYS + COMP_KEYS}
    pre["esp_min"] = np.array([0.1, np.nan, 0.2, 0.3])
    with pytest.raises(ValueError, match="esp_min"):
        VisionEDPretrainer(VisionEDViT(**CFG), epochs=1).fit(imgs, pre)
    pre["esp_min"] = np.ones(3)
    with pytest.raises(ValueError, match="esp_min"):
        VisionEDPretrainer(VisionEDViT(**CFG), epochs=1).fit(imgs, pre)
    with pytest.raises(ValueError, match="batch_size"):
        VisionEDPretrainer(VisionEDViT(**CFG), batch_size=1)  # every batch of 1 would be skipped
    with pytest.raises(ValueError, match="weights"):
        VisionEDPretrainer(VisionEDViT(**CFG), weights={"phys": float("nan")})
    pt = VisionEDPretrainer(VisionEDViT(**CFG), epochs=2, batch_size=4)
    pre = {k: np.arange(4.0) for k in PHYS_KEYS + COMP_KEYS}
    pt.fit(imgs, pre)
    pt.fit(imgs, pre)  # a second fit continues training; its history holds its own epochs only
    assert len(pt.history_) == 2


def test_point_clouds_with_nan_or_bad_shape_are_refused():
    rng = np.random.default_rng(0)
    X = np.abs(rng.normal(size=(6, 64, 4))).astype(np.float32) + 1e-3
    X[2, 5, 0] = np.nan
    with pytest.raises(ValueError, match="X"):
        PointCloudRegressor(epochs=1).fit(X, np.arange(6.0))
    X[2, 5, 0] = 0.0
    est = PointCloudRegressor(epochs=1, batch_size=4).fit(X, np.arange(6.0))
    bad = X.copy()
    bad[0, 0, 3] = np.inf
    with pytest.raises(ValueError, match="X"):
        est.predict(bad)
    with pytest.raises(ValueError, match="points"):
        est.predict(X[:, :32])  # fewer points than the training clouds
    with pytest.raises(ValueError, match="point clouds"):
        PointNetPPLite()(torch.full((1, 64, 4), float("nan")))
    with pytest.raises(ValueError, match="arch"):
        PointCloudRegressor(arch="dgcnn")


def test_coordinates_wrong_shape_or_nan_are_named(calc):
    with pytest.raises(ValueError, match="coords"):
        canonical_frame([8, 1, 1], np.zeros((3, 2)))
    with pytest.raises(ValueError, match="coords"):
        canonical_frame([8, 1, 1], [[0, 0, 0], [0, np.nan, 1], [0, 1, 0]])
    with pytest.raises(ValueError, match="coords"):
        compute_record(["O", "H", "H"], np.zeros(9))  # flat coordinates are no longer reshaped silently
    with pytest.raises(ValueError, match="coords"):
        calc.compute_atoms(["O", "H"], np.zeros((3, 3)))
    with pytest.raises(ValueError, match="atoms"):
        canonical_frame(["Xx"], np.zeros((1, 3)))
    with pytest.raises((ValueError, TypeError), match="n_workers"):
        EDCalculator(n_workers=1.5)
    c = EDCalculator(cache_dir="")
    c.grid_spacing = -1  # changed after construction: caught by compute
    with pytest.raises(ValueError, match="grid_spacing"):
        c.compute_atoms(["He"], np.zeros((1, 3)))


def test_renderer_and_fps_refuse_truncation(water):
    for kw in ({"n_views": 5.5}, {"size": 31.7}, {"fov": float("nan")}, {"isovalues": [0.05, np.nan]},
               {"rotations": np.ones((2, 2))}, {"esp_range": (0.1, 0.2)}):
        with pytest.raises((ValueError, TypeError), match=list(kw)[0]):
            render_multishot(water, **kw)
    with pytest.raises(ValueError, match="n_points"):
        ed_point_cloud(water, n_points=100.5)
    with pytest.raises(ValueError, match="points"):
        farthest_point_sampling(np.full((10, 3), np.nan), 3)
    with pytest.raises(ValueError, match="esp"):
        render_multishot(water, esp=lambda p: np.zeros(3))  # one value per hit point required
