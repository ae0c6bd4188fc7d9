"""Smoke run of the experiment, the medium path at toy size, config validation, and each gate's verdict driven
through its claim function (a broken arm -> not held, a tiny sample -> inconclusive)."""

import pytest

from icml26.ssdcn import claims as C
from icml26.ssdcn.experiment import CONFIGS, EXPECTED_RUNTIME_S, _SMOKE, normalized, run, validate_config

# the plumbing at the smallest sizes the config allows (LR sides = rank_spatial = 4; test side 32 > SSIM window):
# keeps `pytest tests/ssdcn` within 30 s. CONFIGS["smoke"] itself is checked by the validation test below.
TINY = {"n_train": 4, "train_size": 16, "n_val": 2, "n_test": 2, "test_size": 32, "steps": 2,
        "flop_sizes": [32, 64, 128]}


def test_smoke_run():
    res = run({**CONFIGS["smoke"], **TINY, "scale": "smoke"})
    ids = {c.id for c in res.claims}
    assert {"L", "C1", "C2", "C3", "C4", "C5", "I1", "I2", "D"} <= ids
    assert {c.id for c in res.claims if c.gate} == {"C2", "C3"}
    assert {c.id for c in res.claims if c.kind == "sanity"} == {"C1", "L"}
    t = res.metrics["table"]
    assert set(t) == {"bicubic", "ssdcn", "ssdcn_local", "small_cnn", "small_transformer"}
    assert t["ssdcn"]["params"] > t["ssdcn_local"]["params"] > 0 and t["bicubic"]["params"] == 0
    c1 = next(c for c in res.claims if c.id == "C1")
    assert 3.5 <= c1.measured["ssdcb_64_over_32"] <= 4.5 and c1.verdict == "held"
    assert len(c1.decision.parts) == 6 and all(p.exact for p in c1.decision.parts)  # exact FLOP counts
    c3 = next(c for c in res.claims if c.id == "C3")
    assert c3.verdict == "inconclusive" and "medium" in c3.details  # one seed never decides a comparison
    assert {"reconstruction", "flops_vs_size"} <= set(res._pending_figures)


def test_medium_path_at_toy_size():
    """The medium config's sweep + seeds path: each model keeps the lr with the best validation PSNR, the first
    seed's run at that lr is reused, the other seeds train at it."""
    cfg = {**CONFIGS["medium"], **_SMOKE, **TINY, "scale": "medium", "seeds": [0, 1], "lr_grid": [1e-3, 3e-2],
           "models": ["ssdcn", "small_cnn"], "steps": 2}
    res = run(cfg)
    t = res.metrics["table"]
    for m in ("ssdcn", "small_cnn"):
        val = t[m]["sweep_val_psnr"]
        assert set(val) == {1e-3, 3e-2} and t[m]["lr"] == max(val, key=val.get)
        runs = [r for r in res.metrics["runs"] if r["model"] == m]
        assert [r["seed"] for r in runs] == [0, 1] and {r["lr"] for r in runs} == {t[m]["lr"]}
        assert runs[0]["val"]["psnr"] and abs(sum(runs[0]["val"]["psnr"]) / len(runs[0]["val"]["psnr"])
                                              - val[t[m]["lr"]]) < 1e-9  # the sweep's run, reused
    c3 = next(c for c in res.claims if c.id == "C3")
    assert len(c3.per_seed) == 2 and c3.interval.n == 2 and "validation sweep" in c3.details
    assert EXPECTED_RUNTIME_S["medium"] <= 1800


def test_every_config_validates_and_typos_are_refused():
    for scale, cfg in CONFIGS.items():
        validate_config({**cfg, "scale": scale})
    with pytest.raises(ValueError, match="stpes"):
        validate_config({**CONFIGS["small"], "stpes": 10})
    with pytest.raises(ValueError, match="lr"):  # the old single-lr key is refused, not ignored
        validate_config({**CONFIGS["small"], "lr": 1e-3})


@pytest.mark.parametrize("key,value,err", [("seeds", [], ValueError), ("seeds", [0, 0.0], ValueError),
                                           ("steps", 2.5, ValueError),
                                           ("models", ["small_cnn"], ValueError), ("k_spatial", 5, ValueError),
                                           ("scale_factor", 3, ValueError), ("train_size", 30, ValueError),
                                           ("lr_grid", [float("nan")], ValueError), ("steps", "10", TypeError),
                                           ("lr_grid", [], ValueError), ("lr_grid", [1e-3, 1e-3], ValueError),
                                           ("device", "tpu", ValueError), ("flop_sizes", [16, 32], ValueError)])
def test_validate_config_names_the_key(key, value, err):
    cfg = {**CONFIGS["small"], key: value}
    with pytest.raises(err, match=key):
        validate_config(cfg)


def test_integral_floats_are_read_as_ints():
    cfg = normalized({**CONFIGS["small"], "steps": 160.0, "seeds": [0.0, 2.0], "ssdcn_dim": 40.0})
    assert cfg["steps"] == 160 and type(cfg["steps"]) is int and cfg["seeds"] == [0, 2]
    assert all(type(s) is int for s in cfg["seeds"]) and type(cfg["ssdcn_dim"]) is int


def test_paper_config_needs_user_data():
    validate_config({**CONFIGS["paper"], "scale": "paper"})  # the shipped paper config is well formed
    with pytest.raises(ValueError, match="scale_factors"):
        validate_config({**CONFIGS["paper"], "scale": "paper", "scale_factors": [3]})


BIC = [30.0, 31.0, 29.5, 30.5]


def _seeds(gains, base=BIC, jitter=(0.0, 0.1, -0.1, 0.05)):
    """[seed][image] PSNRs: base + the seed's gain + a per-image jitter."""
    return [[b + g + j for b, j in zip(base, jitter)] for g in gains]


def test_c1_fails_for_quadratic_block():
    lin = {32: 100, 64: 400, 128: 1600}
    quad = {32: 100, 64: 1600, 128: 25600}
    assert C.claim_complexity(lin, quad, 1000, 1000).verdict == "held"
    assert C.claim_complexity(quad, quad, 1000, 1000).verdict == "not held"  # a quadratic "SSDCB" fails
    assert C.claim_complexity(lin, lin, 1000, 1000).verdict == "not held"  # a linear "transformer" fails
    assert C.claim_complexity(lin, quad, 1100, 1000).verdict == "not held"  # attention FLOPs off 4 N^2 d
    assert C.claim_complexity(lin, quad, 1000, 1000).kind == "sanity"


def test_c3_gate_held_not_held_inconclusive():
    bic = _seeds([0.0, 0.0, 0.0])
    good = C.claim_vs_bicubic(_seeds([1.0, 1.05, 0.95]), bic, bic, bic)
    assert good.verdict == "held" and good.gate and good.per_seed == pytest.approx([1.0, 1.05, 0.95])
    # a deliberately broken arm: an "SSDCN" that returns bicubic (plus noise) over three seeds
    broken = C.claim_vs_bicubic(_seeds([0.001, -0.002, 0.0]), bic, bic, bic)
    assert broken.verdict == "not held"
    # a tiny sample: one seed cannot bound a training spread, however large the gain
    tiny = C.claim_vs_bicubic(_seeds([1.0]), _seeds([0.0]), _seeds([0.0]), _seeds([0.0]))
    assert tiny.verdict == "inconclusive" and "seed" in tiny.details and "medium" in tiny.details


def test_c2_fails_when_worse_or_costlier():
    tf, bic = _seeds([1.0, 1.0, 1.0]), _seeds([0.0, 0.0, 0.0])
    assert C.claim_efficiency(_seeds([0.97, 0.96, 0.98]), tf, bic, 1.0, 2.0).verdict == "held"
    assert C.claim_efficiency(_seeds([0.5, 0.45, 0.55]), tf, bic, 1.0, 2.0).verdict == "not held"
    assert C.claim_efficiency(tf, tf, bic, 2.5, 2.0).verdict == "not held"  # the exact FLOPs clause
    c = C.claim_efficiency(tf, _seeds([0.1, 0.1, 0.1]), bic, 1.0, 2.0)
    assert "implied by C3" in c.details
    assert C.claim_efficiency(_seeds([0.9]), _seeds([1.0]), _seeds([0.0]), 1.0, 2.0).verdict == "inconclusive"


def test_learnability_claim_names_the_model_that_does_not_learn():
    bic = _seeds([0.0, 0.0, 0.0])
    ok = C.claim_learnability({"ssdcn": _seeds([1.0, 1.1, 0.9]), "small_cnn": _seeds([1.2, 1.1, 1.3])}, bic)
    assert ok.verdict == "held" and ok.kind == "sanity"
    bad = C.claim_learnability({"ssdcn": _seeds([0.02, 0.0, 0.01]), "small_cnn": _seeds([1.2, 1.1, 1.3])}, bic)
    assert bad.verdict == "not held" and "ssdcn" in bad.details


def test_paired_statistics():
    p = C.paired([[1.0, 2.0, 3.0], [2.0, 2.0, 2.0]], [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    assert p["mean"] == pytest.approx(2.0) and p["per_seed"] == pytest.approx([2.0, 2.0])
    assert p["interval"].method == "t" and p["interval"].n == 2 and p["item_interval"].n == 6
    with pytest.raises(ValueError):
        C.paired([[1.0]], [[1.0, 2.0]])
