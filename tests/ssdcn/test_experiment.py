"""Smoke run of the experiment, config validation, and one failing case per gated claim."""

import pytest

from icml26.ssdcn import claims as C
from icml26.ssdcn.experiment import CONFIGS, run, validate_config


def test_smoke_run():
    res = run({**CONFIGS["smoke"], "scale": "smoke"})
    ids = {c.id for c in res.claims}
    assert {"C1", "C2", "C3", "C4", "C5", "I1", "I2", "D"} <= ids
    assert {c.id for c in res.claims if c.gate} == {"C1", "C2", "C3"}
    t = res.metrics["table"]
    assert set(t) == {"bicubic", "ssdcn", "ssdcn_local", "small_cnn", "small_transformer"}
    assert t["ssdcn"]["params"] > t["ssdcn_local"]["params"] > 0 and t["bicubic"]["params"] == 0
    c1 = next(c for c in res.claims if c.id == "C1")
    assert 3.5 <= c1.measured["ssdcb_64_over_32"] <= 4.5
    assert {"reconstruction", "flops_vs_size"} <= set(res._pending_figures)


@pytest.mark.parametrize("key,value,err", [("seeds", [], ValueError), ("steps", 2.5, ValueError),
                                           ("models", ["small_cnn"], ValueError), ("k_spatial", 5, ValueError),
                                           ("scale_factor", 3, ValueError), ("train_size", 30, ValueError),
                                           ("lr", float("nan"), ValueError), ("steps", "10", TypeError),
                                           ("flop_sizes", [16, 32], ValueError)])
def test_validate_config_names_the_key(key, value, err):
    cfg = {**CONFIGS["small"], key: value}
    with pytest.raises(err, match=key):
        validate_config(cfg)


def test_paper_config_needs_user_data():
    validate_config({**CONFIGS["paper"], "scale": "paper"})  # the shipped paper config is well formed
    with pytest.raises(ValueError, match="scale_factors"):
        validate_config({**CONFIGS["paper"], "scale": "paper", "scale_factors": [3]})


PS = [[30.0, 31.0, 29.5, 30.5]]


def _shift(v, d):
    return [[x + d for x in row] for row in v]


def test_c1_fails_for_quadratic_block():
    lin = {32: 100, 64: 400, 128: 1600}
    quad = {32: 100, 64: 1600, 128: 25600}
    assert C.claim_complexity(lin, quad, 1000, 1000).held
    assert not C.claim_complexity(quad, quad, 1000, 1000).held  # a quadratic "SSDCB" fails
    assert not C.claim_complexity(lin, lin, 1000, 1000).held  # a linear "transformer" fails
    assert not C.claim_complexity(lin, quad, 1100, 1000).held  # attention FLOPs off the analytic term


def test_c2_fails_when_worse_or_costlier():
    assert C.claim_efficiency(_shift(PS, -0.05), PS, _shift(PS, -1), 1.0, 2.0).held
    assert not C.claim_efficiency(_shift(PS, -0.2), PS, _shift(PS, -1), 1.0, 2.0).held
    assert not C.claim_efficiency(PS, PS, _shift(PS, -1), 2.5, 2.0).held
    c = C.claim_efficiency(PS, PS, _shift(PS, -0.1), 1.0, 2.0)
    assert "implied by C3" in c.details


def test_c3_fails_for_bicubic_copy_and_reports_spread():
    assert C.claim_vs_bicubic(_shift(PS, 0.2), PS, PS, PS).held
    assert not C.claim_vs_bicubic(PS, PS, PS, PS).held  # returning bicubic exactly fails
    two = [PS[0], [x + 0.3 for x in PS[0]]]
    c = C.claim_vs_bicubic(_shift(two, 0.0), [PS[0], PS[0]], two, two)
    assert "cannot decide" in c.details and len(c.per_seed) == 2


def test_paired_statistics():
    p = C.paired([[1.0, 2.0, 3.0]], [[0.0, 0.0, 0.0]])
    assert p["mean"] == pytest.approx(2.0) and p["se"] == pytest.approx(1 / 3 ** 0.5)
    with pytest.raises(ValueError):
        C.paired([[1.0]], [[1.0, 2.0]])
