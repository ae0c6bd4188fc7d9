"""The experiment: smoke run through the CLI contract, config validation, and the gates driven through their claim
functions: a broken arm makes a gate "not held", a tiny sample makes it "inconclusive" (issue 30)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from icml26.verbalization import experiment as E


@pytest.fixture(scope="module")
def smoke():
    cfg = copy.deepcopy(E.CONFIGS["smoke"])
    cfg["scale"] = "smoke"
    return E.run(cfg)


def test_smoke_run_produces_all_claims(smoke):
    ids = [c.id for c in smoke.claims]
    assert ids == ["PCr", "PC", "1", "2", "3f", "3a", "3e", "4", "S", "P"]
    assert [c.kind for c in smoke.claims] == ["sanity"] + ["gate"] * 7 + ["report"] * 2
    assert all(c.paper and c.verdict in ("held", "not held", "inconclusive") for c in smoke.claims)
    assert all(c.decision.text() in c.details for c in smoke.claims)
    per = smoke.metrics["per_seed"][0]
    assert set("abcdef") <= set(per) and "probe" in per and "name_recovery" in per and "pc" in per and "pcr" in per
    assert {"d_belief", "d_target", "pc_M2p", "pcr_M2p", "pcr_M2pp", "probe_M1", "probe_B", "e_ctrl", "f_zs"} <= set(per["items"])
    assert "conditions" in smoke._pending_figures and "probe" in smoke._pending_figures
    sched = smoke.metrics["timings"]["schedule"]
    assert len(sched) == 7 and sched[0]["job"] == "B"  # run_graph: the base model first


def _seeds(smoke, n_seeds: int, n_clusters: int, **arms) -> list[dict]:
    """Synthetic per-seed records over n_clusters x 4 items: `arms[name] = p` draws items correct with probability
    p; a list gives each cluster's items one fixed value (for an exactly known tiny sample)."""
    rng = np.random.default_rng(0)
    out = []
    for s in range(n_seeds):
        r = copy.deepcopy(smoke.metrics["per_seed"][0])
        r["seed"] = s
        cl = [f"p{i}" for i in range(n_clusters) for _ in range(4)]
        for name, p in arms.items():
            vals = [int(v) for v in p for _ in range(4)] if isinstance(p, list) else \
                [int(x) for x in rng.random(len(cl)) < p]
            r["items"][name] = {"correct": vals, "cluster": cl, "n": len(cl)}
        out.append(r)
    return out


def test_claim_1_broken_arm_and_tiny_sample(smoke):
    good = _seeds(smoke, 3, 48, d_belief=0.9, d_target=0.05)
    for r in good:
        r["d"]["chance"] = 0.125
    assert E.claim_mismatch(good).verdict == "held"
    reads_target = _seeds(smoke, 3, 48, d_belief=0.9, d_target=0.8, pc_M2p=0.9)  # reads M1's facts
    for r in reads_target:
        r["d"]["chance"] = 0.125
    assert E.claim_mismatch(reads_target).verdict == "not held"
    tiny = _seeds(smoke, 1, 2, d_belief=[1, 0], d_target=[0, 0])  # one persona right, one wrong
    for r in tiny:
        r["d"]["chance"] = 0.125
    c = E.claim_mismatch(tiny)
    assert c.verdict == "inconclusive" and "What would decide it" in c.details


def test_claim_2_probe_gate_can_fail(smoke):
    base = dict(c_self=1.0, c_target=0.0)
    held = _seeds(smoke, 3, 48, probe_M1=0.6, probe_B=0.12, **base)
    assert E.claim_present_not_verbalized(held).verdict == "held"
    no_signal = _seeds(smoke, 3, 48, probe_M1=0.1, probe_B=0.12, **base)  # the probe finds nothing in M1
    assert E.claim_present_not_verbalized(no_signal).verdict == "not held"
    tiny = _seeds(smoke, 1, 2, probe_M1=[1, 0], probe_B=[0, 0], c_self=[1, 1], c_target=[0, 0])
    assert E.claim_present_not_verbalized(tiny).verdict == "inconclusive"


def test_claims_3_4_and_pc_can_fail(smoke):
    assert E.claim_feature_extraction(_seeds(smoke, 3, 40, f_zs=1.0, f_lit=0.9)).verdict == "held"
    assert E.claim_feature_extraction(_seeds(smoke, 3, 40, f_zs=0.3, f_lit=0.9)).verdict == "not held"
    assert E.claim_consistent(_seeds(smoke, 3, 24, a_zs=0.95)).verdict == "held"
    assert E.claim_consistent(_seeds(smoke, 3, 24, a_zs=0.3)).verdict == "not held"
    assert E.claim_shared(_seeds(smoke, 3, 48, e_lit=0.95, e_ctrl=0.95)).verdict == "held"
    assert E.claim_shared(_seeds(smoke, 3, 48, e_lit=0.1, e_ctrl=0.95, pc_M2pp=0.9)).verdict == "not held"
    assert E.claim_recovery(_seeds(smoke, 3, 48, rec_M2_real=1.0, rec_M2p_fantasy=0.3)).verdict == "not held"
    assert E.claim_positive_control(_seeds(smoke, 3, 30, pc_M2p=0.95, pc_M2pp=0.95)).verdict == "held"
    assert E.claim_positive_control(_seeds(smoke, 3, 30, pc_M2p=0.05, pc_M2pp=0.95)).verdict == "not held"
    assert E.claim_reading_control(_seeds(smoke, 3, 30, pcr_M2p=0.95, pcr_M2pp=0.9)).verdict == "held"
    assert E.claim_reading_control(_seeds(smoke, 3, 30, pcr_M2p=0.9, pcr_M2pp=0.1)).verdict == "not held"
    assert E.claim_reading_control(_seeds(smoke, 1, 2, pcr_M2p=[1, 0], pcr_M2pp=[1, 0])).verdict == "inconclusive"


def test_claims_1_and_3e_name_both_controls(smoke):
    recs = _seeds(smoke, 2, 10, d_belief=0.5, d_target=0.0, e_lit=0.5, e_ctrl=0.5)
    for r, (pcr, pc) in zip(recs, ((0.9, 0.1), (0.7, 0.1))):
        r["d"]["chance"] = 0.125
        r["pcr"] = {"M2": pcr, "M2p": pcr, "M2pp": pcr}
        r["pc"] = {"M2": pc, "M2p": pc, "M2pp": pc, "text_M2p": 0.9}
    for c in (E.claim_mismatch(recs), E.claim_shared(recs)):
        assert "passed the reading control (claim PCr: 0.80" in c.details
        assert "FAILED the retrieval control (claim PC: 0.10" in c.details
    for r in recs:
        r["pcr"] = {"M2": 0.1, "M2p": 0.1, "M2pp": 0.1}
    assert "FAILED the reading control" in E.claim_mismatch(recs).details


def test_claims_1_and_3e_failures_need_a_decoder_that_passed_pc(smoke):
    """A decoder that cannot retrieve its own knowledge (PC failed) makes a retrieval failure of 1 / 3e
    inconclusive, never not held; a success stands, with PC passed the same numbers are not held, and failures
    that retrieval cannot explain stay not held."""
    def recs(pc):
        out = _seeds(smoke, 2, 24, d_belief=0.1, d_target=0.0, e_lit=0.1, e_ctrl=0.95, pc_M2p=pc, pc_M2pp=pc)
        for r in out:
            r["d"]["chance"] = 0.125
        return out
    for claim in (E.claim_mismatch, E.claim_shared):
        failed, passed = claim(recs(0.05)), claim(recs(0.95))
        assert passed.verdict == "not held"
        assert failed.verdict == "inconclusive" and "failed the retrieval control PC" in failed.details
        assert "not held on its numbers" in failed.details and "What would decide it: more items" not in failed.details
        assert failed.decision.estimate == passed.decision.estimate
    ok = _seeds(smoke, 2, 24, e_lit=0.95, e_ctrl=0.95, pc_M2pp=0.05)
    assert E.claim_shared(ok).verdict == "held"
    # failures retrieval cannot explain stay not held without PC: reporting the target's facts, LIT above control
    reads_target = _seeds(smoke, 2, 24, d_belief=0.1, d_target=0.9, pc_M2p=0.05)
    for r in reads_target:
        r["d"]["chance"] = 0.125
    assert E.claim_mismatch(reads_target).verdict == "not held"
    assert E.claim_shared(_seeds(smoke, 2, 24, e_lit=0.95, e_ctrl=0.2, pc_M2pp=0.05)).verdict == "not held"


@pytest.mark.parametrize("key, value, match", [
    ("seeds", [], "seeds"), ("seeds", [0, 0], "distinct"), ("lit_steps", 0, "lit_steps"),
    ("lit_lr", float("nan"), "finite"), ("lit_read", "middle", "lit_read"), ("read_layer", 3, "read_layer"),
    ("n_personas", 3, "multiple of n_cultures"), ("rehearsal_fraction", 1.0, "rehearsal_fraction"),
    ("real_lm", "yes", "real_lm"), ("ft_steps", 2.5, "ft_steps"), ("ps_target_layers", [2], "ps_target_layers"),
    ("lit_holdout", 1.0, "lit_holdout"), ("probe_l2", [], "probe_l2"), ("lit_lora_rank", 0, "lit_lora_rank"),
    ("lit_decoder", "lora+full", "lit_decoder"), ("lit_reading_repeat", -1, "lit_reading_repeat"),
    ("real_lm_persona_n_generic", 1, "real_lm_persona_n_generic"),
    ("real_lm_persona_n_generic", 0, "real_lm_persona_n_generic"),
    ("real_lm_persona_n_personas", 1, "real_lm_persona_n_personas"),
    ("real_lm_persona_n_heldout", 0, "real_lm_persona_n_heldout"),
    ("real_lm_persona_n_heldout", 18, "real_lm_persona_n_heldout"),
    ("real_lm_persona_seeds", [], "real_lm_persona_seeds"), ("real_lm_persona_seeds", [1, 1], "distinct"),
    ("real_lm_persona_seeds", [-1], "real_lm_persona_seeds"),
])
def test_validate_config_names_the_key(key, value, match):
    cfg = copy.deepcopy(E.CONFIGS["small"])
    cfg[key] = value
    with pytest.raises((ValueError, TypeError), match=match):
        E.validate_config(cfg)


def test_configs_are_valid_documented_and_typos_refused():
    for name in ("smoke", "small", "medium"):
        E.validate_config(dict(E.CONFIGS[name], scale=name))
        assert set(E.CONFIGS[name]) <= set(E.CONFIG_HELP) | {"scale"}
        assert name in E.EXPECTED_RUNTIME_S
    from icml26.verbalization.scale import validate_paper_config

    validate_paper_config(E.CONFIGS["paper"])
    with pytest.raises(ValueError, match="missing"):
        E.validate_config({"seeds": [0]})
    with pytest.raises(ValueError, match="lit_stpes"):
        E.validate_config(dict(E.CONFIGS["small"], lit_stpes=10))


def test_job_graph_dependencies():
    jobs, deps = E.job_graph(E.CONFIGS["smoke"], [0, 1])
    assert len(jobs) == 14 and deps[(1, "eval")][0] == (1, "B")
    assert set(deps[(0, "LIT_M2p")]) == {(0, "M2p"), (0, "M1")}  # the decoder's knowledge model and the reader


def test_real_lm_persona_config_reaches_the_arm(monkeypatch):
    """`real_lm_persona_*` keys are what the SmolLM2 arm is called with, and its result becomes claim RP (report)."""
    import json
    from pathlib import Path

    from icml26.verbalization import real_lm

    saved = json.loads((Path(__file__).parents[2] / "benchmarks"
                        / "verbalization_rp_pilot_generic3_ft300_lit200.json").read_text())
    calls = []
    monkeypatch.setattr(real_lm, "smollm2_lit_persona", lambda **kw: calls.append(kw) or saved)
    cfg = dict(copy.deepcopy(E.CONFIGS["smoke"]), scale="smoke", real_lm_persona=True, real_lm_persona_ft_steps=7,
               real_lm_persona_lit_steps=5, real_lm_persona_n_generic=4, real_lm_persona_n_personas=3,
               real_lm_persona_n_heldout=2, real_lm_persona_seeds=[0])
    res = E.run(cfg)
    assert calls == [{"ft_steps": 7, "lit_steps": 5, "n_generic": 4, "n_personas": 3, "n_heldout": 2, "seed": 0}]
    rp = res.claims[-1]
    assert rp.id == "RP" and rp.kind == "report" and rp.measured["pc_M2p"] == saved["accuracy"]["pc_M2p"]
    assert res.metrics["real_lm_persona"] is saved
