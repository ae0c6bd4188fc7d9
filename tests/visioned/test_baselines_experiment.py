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
    # the medium scale's code path at toy size: extra V1-only split seeds and the device picked at run time
    assert CONFIGS["medium"]["v1_seeds"] > CONFIGS["small"]["v1_seeds"] and CONFIGS["medium"]["device"] == "auto"
    same = {k for k in CONFIGS["small"] if k not in ("v1_seeds", "device")}
    assert set(CONFIGS["medium"]) == set(CONFIGS["small"]) and all(CONFIGS["medium"][k] == CONFIGS["small"][k]
                                                                   for k in same)
    res = run(CONFIGS["smoke"] | {"scale": "smoke", "v1_seeds": 2, "device": "auto"})
    assert res.slug == "visioned" and res.scale == "smoke"
    assert res.claims[0].measured["n_seeds"] == 2 and len(res.claims[0].per_seed) == 2
    assert [c.id for c in res.claims][:5] == ["V1", "V2", "V2-control", "V3", "R1"]
    assert [c.kind for c in res.claims][:5] == ["gate", "gate", "report", "gate", "report"]
    for c in res.claims:
        assert c.verdict in ("held", "not held", "inconclusive") and c.measured is not None
    assert res.claims[1].verdict == "inconclusive"  # V2 on one split seed
    assert np.isfinite(res.metrics["mae"]["vit_pre"]["1"]["mean"])
    assert res.metrics["efficiency"]["featurise_speedup_image"] > 0
    assert set(res._pending_figures) == {"multishot_images", "mae_vs_label_fraction", "pretraining_losses",
                                        "validation_curves"}
    assert all(c.paper for c in res.claims)


def _errs(scale, n_seeds=3, n=40, seed=0):
    rng = np.random.default_rng(seed)
    base = [np.abs(rng.normal(size=n)) + 0.2 for _ in range(n_seeds)]
    return base, [scale * b * (1 + 0.05 * rng.normal(size=n)) for b in base]


def test_v1_claim_can_fail_and_says_when_it_cannot_decide():
    from icml26.visioned.experiment import v1_claim

    scratch, pre = _errs(0.6)
    good = v1_claim(pre, scratch)
    assert good.verdict == "held" and good.gate and good.measured["ci_hi"] < 0.9
    # a deliberately broken arm: a pretraining that makes things worse (ratio 1.3 on every seed)
    worse = v1_claim([1.3 * e for e in scratch], [e * (1 + 0.01 * i) for i, e in enumerate(scratch)])
    assert worse.verdict == "not held" and worse.measured["ci_lo"] > 0.9
    # a tiny sample: one split seed cannot bound a mean over seeds
    one = v1_claim(pre[:1], scratch[:1])
    assert one.verdict == "inconclusive" and "at least 3 seeds" in one.details and "medium" in one.details
    rng = np.random.default_rng(1)  # a noisy arm around the threshold: the interval straddles 0.90
    noisy = [s * (0.85 + 0.1 * (i - 1)) for i, s in enumerate(scratch)]
    c = v1_claim(noisy, scratch)
    assert c.measured["ci_lo"] < 0.9 < c.measured["ci_hi"] and c.verdict == "inconclusive"
    assert "would decide it" in c.details and c.paper
    del rng


def test_v2_claims_can_fail_and_check_the_point_cloud_learned():
    from icml26.visioned.experiment import v2_claims

    mean, pc = _errs(0.5)
    pre = [0.8 * e for e in pc]
    v2, ctl = v2_claims(pre, pc, mean)
    assert v2.verdict == "held" and ctl.verdict == "held" and ctl.kind == "report"
    worse, _ = v2_claims([1.3 * e for e in pc], pc, mean)  # images worse than point clouds
    assert worse.verdict == "not held" and worse.measured["gain"] < 0
    _, c = v2_claims(pre, [1.0 * e for e in mean], mean)  # a point-cloud model no better than the mean predictor
    assert c.verdict != "held"


def test_v3_claim_can_fail():
    from icml26.visioned.experiment import v3_claim

    rng = np.random.default_rng(0)
    t_img = 0.005 * (1 + 0.1 * rng.random(50))
    assert v3_claim(t_img, 3 * t_img, n_boot=300).verdict == "held"
    slow_render = v3_claim(t_img, 1.5 * t_img, n_boot=300)
    assert slow_render.verdict == "not held" and "not held" in slow_render.details
    with pytest.raises(ValueError, match="t_img"):
        v3_claim(t_img, t_img[:3])


def test_validate_config_rejects_bad_values():
    from icml26.visioned.experiment import CONFIG_HELP, CONFIGS, EXPECTED_RUNTIME_S, validate_config

    for scale in CONFIGS:
        validate_config(CONFIGS[scale] | {"scale": scale})
        assert set(CONFIGS[scale]) <= set(CONFIG_HELP)
    assert EXPECTED_RUNTIME_S["small"] <= 300
    for key, bad in (("n_seeds", 0), ("n_seeds", 1.5), ("target", "esp_min"), ("label_fractions", []),
                     ("label_fractions", [0.25, 1.5]), ("patch", 7), ("esp", "exactly"), ("workers", 0),
                     ("report_arms", "yes"), ("isovalues", [0.05, -1]), ("ci", 1.0), ("v1_seeds", 2),
                     ("n_seedz", 3)):
        with pytest.raises((ValueError, TypeError), match=key if key != "patch" else "patch"):
            validate_config(CONFIGS["small"] | {key: bad})


def test_docs(docs_example):
    ns = docs_example("visioned")
    assert ns["imgs"].shape == (8, 6, 4, 16, 16) and ns["clouds"].shape == (8, 128, 4)


def test_neighbour_max_equals_gather_then_max_in_value_and_gradient():
    from icml26.visioned.baselines import _neighbour_max

    torch.manual_seed(0)
    h = torch.randn(3, 50, 6, requires_grad=True)
    nbr = torch.randint(0, 50, (3, 20, 7))
    ref = h[torch.arange(3)[:, None, None], nbr].max(2).values
    out = _neighbour_max(h, nbr)
    assert torch.equal(out, ref)
    w = torch.randn_like(ref)
    g_ref, = torch.autograd.grad((ref * w).sum(), h)
    g_out, = torch.autograd.grad((out * w).sum(), h)
    assert torch.allclose(g_ref, g_out)
