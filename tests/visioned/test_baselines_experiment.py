"""Baselines, data helpers and one smoke run of the experiment."""

import numpy as np
import pytest
import torch

from icml26.visioned import ECFPRegressor, PointCloudRegressor, PointNetPPLite, ecfp_features
from icml26.visioned.baselines import fps_torch
from icml26.visioned.data import enumerate_small_molecules, random_split, stratified_sample


def test_ecfp_features_and_bad_smiles():
    X = ecfp_features(["CCO", "c1ccccc1"])
    assert X.shape == (2, 2048) and X.dtype == np.uint8 and X.sum() > 0
    with pytest.raises(ValueError, match=r"smiles\[1\]"):
        ecfp_features(["CCO", "not a smiles"])
    est = ECFPRegressor("rf", n_estimators=10).fit(["CCO", "CCN", "CCC", "CCCl"], [1.0, 2.0, 3.0, 4.0])
    assert est.predict(["CCO"]).shape == (1,)


def test_pointnetpp_shapes_and_fps_prefix_property():
    pts = torch.randn(2, 256, 4).abs()
    assert PointNetPPLite(n_out=3)(pts).shape == (2, 3)
    idx = fps_torch(pts[..., :3], 32)
    assert (idx[:, :8] == fps_torch(pts[..., :3], 8)).all()
    with pytest.raises(ValueError, match="X"):
        PointCloudRegressor(epochs=1).fit(np.zeros((4, 64, 3)), np.zeros(4))
    # FPS-ordered input: prefix centroids == running FPS in the network (same output)
    order = fps_torch(pts[..., :3] / 5.0, 256)
    ordered = pts[torch.arange(2)[:, None], order]
    torch.manual_seed(0)
    a = PointNetPPLite(n_out=2, fps_ordered=True)
    b = PointNetPPLite(n_out=2, fps_ordered=False)
    b.load_state_dict(a.state_dict())
    assert torch.allclose(a(ordered), b(ordered), atol=1e-6)


def test_molecule_library_is_deterministic():
    lib = enumerate_small_molecules(8)
    assert len(lib) == 332 and lib == enumerate_small_molecules(8)
    s = stratified_sample(lib, 160, seed=0)
    assert len(s) == 160 and len({m["smiles"] for m in s}) == 160
    assert s == stratified_sample(lib, 160, seed=0)
    tr, va, te = random_split(160, seed=0)
    assert len(tr) == 112 and len(set(tr) | set(va) | set(te)) == 160


def test_smoke_run(tmp_path, monkeypatch):
    from icml26.visioned.experiment import CONFIGS, run

    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    res = run(CONFIGS["smoke"] | {"scale": "smoke"})
    assert res.slug == "visioned" and res.scale == "smoke"
    assert [c.id for c in res.claims][:3] == ["V1", "V2", "V3"]
    for c in res.claims:
        assert isinstance(c.held, bool) and c.measured is not None
    assert np.isfinite(res.metrics["mae_eV"]["vit_pre"]["1"]["mean"])
    assert res.metrics["efficiency"]["featurise_speedup_image"] > 0
    assert set(res._pending_figures) == {"multishot_images", "mae_vs_label_fraction", "pretraining_losses"}
