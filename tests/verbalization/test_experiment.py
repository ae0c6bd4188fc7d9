"""The experiment: smoke run through the CLI contract, config validation, and every gate shown able to fail."""

from __future__ import annotations

import copy

import pytest

from icml26.verbalization import experiment as E


@pytest.fixture(scope="module")
def smoke():
    cfg = copy.deepcopy(E.CONFIGS["smoke"])
    cfg["scale"] = "smoke"
    return E.run(cfg)


def test_smoke_run_produces_all_claims(smoke):
    ids = [c.id for c in smoke.claims]
    assert ids == ["1", "2", "3f", "3a", "3e", "4", "S", "P"]
    assert [c.gate for c in smoke.claims] == [True] * 6 + [False] * 2
    assert all(c.paper for c in smoke.claims)
    per = smoke.metrics["per_seed"][0]
    assert set("abcdef") <= set(per) and "probe" in per and "name_recovery" in per
    assert "conditions" in smoke._pending_figures and "probe" in smoke._pending_figures


def _seed(smoke, **set_) -> dict:
    """A copy of the smoke run's seed record with `path=value` entries overwritten (e.g. d__acc_target=0.5)."""
    r = copy.deepcopy(smoke.metrics["per_seed"][0])
    for key, value in set_.items():
        node = r
        *path, last = key.split("__")
        for p in path:
            node = node[p]
        node[last] = value
    return r


def _three(smoke, **set_):
    return [_seed(smoke, **set_) for _ in range(3)]


def test_claim_1_can_fail(smoke):
    ok = _three(smoke, d__acc_verbalizer_belief=0.8, d__acc_target=0.05, d__chance=0.125)
    assert E.claim_mismatch(ok).held
    reads_target = _three(smoke, d__acc_verbalizer_belief=0.8, d__acc_target=0.5, d__chance=0.125)
    assert not E.claim_mismatch(reads_target).held
    no_belief = _three(smoke, d__acc_verbalizer_belief=0.1, d__acc_target=0.0, d__chance=0.125)
    assert not E.claim_mismatch(no_belief).held


def test_claim_2_can_fail(smoke):
    base = dict(c__self_report=0.95, c__acc_target=0.0, c__chance=0.125, probe__B=0.12)
    assert E.claim_present_not_verbalized(_three(smoke, probe__M1=0.6, **base)).held
    assert not E.claim_present_not_verbalized(_three(smoke, probe__M1=0.2, **base)).held  # probe finds nothing
    bad_target = dict(base, c__self_report=0.5)
    assert not E.claim_present_not_verbalized(_three(smoke, probe__M1=0.6, **bad_target)).held


def test_claim_3_parts_can_fail(smoke):
    assert E.claim_feature_extraction(_three(smoke, f__zero_shot=0.9, f__acc_target=0.8)).held
    assert not E.claim_feature_extraction(_three(smoke, f__zero_shot=0.5, f__acc_target=0.8)).held
    assert not E.claim_feature_extraction(_three(smoke, f__zero_shot=0.9, f__acc_target=0.4)).held
    assert E.claim_consistent(_three(smoke, a__zero_shot=0.8)).held
    assert not E.claim_consistent(_three(smoke, a__zero_shot=0.5)).held
    assert E.claim_shared(_three(smoke, e__acc_target=0.8, e__recovered_input_zero_shot=0.85)).held
    assert not E.claim_shared(_three(smoke, e__acc_target=0.2, e__recovered_input_zero_shot=0.85)).held


def test_claim_4_can_fail(smoke):
    assert E.claim_recovery(_three(smoke, name_recovery__M2_real=0.9, name_recovery__M2p_fantasy=0.95)).held
    assert not E.claim_recovery(_three(smoke, name_recovery__M2_real=0.9, name_recovery__M2p_fantasy=0.3)).held


def test_spread_larger_than_margin_says_undecided(smoke):
    rs = [_seed(smoke, a__zero_shot=v) for v in (0.4, 0.95, 0.8)]
    assert "Cannot decide" in E.claim_consistent(rs).details
    assert "Cannot decide" not in E.claim_consistent(_three(smoke, a__zero_shot=0.95)).details


@pytest.mark.parametrize("key, value, match", [
    ("seeds", [], "seeds"), ("seeds", [0, 0], "distinct"), ("lit_steps", 0, "lit_steps"),
    ("lit_lr", float("nan"), "finite"), ("lit_read", "middle", "lit_read"), ("read_layer", 3, "read_layer"),
    ("n_personas", 3, "multiple of n_cultures"), ("rehearsal_fraction", 1.0, "rehearsal_fraction"),
    ("real_lm", "yes", "real_lm"), ("ft_steps", 2.5, "ft_steps"), ("ps_target_layers", [2], "ps_target_layers"),
])
def test_validate_config_names_the_key(key, value, match):
    cfg = copy.deepcopy(E.CONFIGS["small"])
    cfg[key] = value
    with pytest.raises((ValueError, TypeError), match=match):
        E.validate_config(cfg)


def test_configs_are_valid_and_documented():
    for name in ("smoke", "small"):
        E.validate_config(E.CONFIGS[name])
    assert set(E.CONFIGS["small"]) <= set(E.CONFIG_HELP) | {"scale"}
    from icml26.verbalization.scale import validate_paper_config

    validate_paper_config(E.CONFIGS["paper"])
    with pytest.raises(ValueError, match="missing"):
        E.validate_config({"seeds": [0]})
