"""Smoke run of the reproduction, config contract, and tests that every gate can fail: each gate's claim function
is driven with a deliberately broken arm (verdict "not held") and with a tiny sample ("inconclusive"); the frozen-E
mutation passes C2 and is caught by the two controls only. The gate tests' runs (fixture `gate_runs`, 2 seeds per
arm, sizes in conftest.py) train in a background worker while the other tests run."""

import copy

import pytest

from icml26.analogy import experiment
from icml26.analogy.baselines import run_gpt_curriculum
from icml26.results import Result


def _col(runs, key):
    return [r[key] for r in runs]


def test_smoke_run_structure():
    cfg = copy.deepcopy(experiment.CONFIGS["smoke"])
    # the smoke config with fewer steps (the structure, not the numbers, is under test here): 40 GD steps per
    # stage instead of 300, 2 GPT steps instead of 20
    cfg.update(scale="smoke", steps_per_stage=40, short_first_stage=10, two_hop_steps=20, eval_every=20,
               gpt_steps_per_stage=2)
    res = experiment.run(cfg)
    assert isinstance(res, Result) and res.slug == "analogy"
    assert [c.id for c in res.claims] == ["C1", "C2", "C2-short", "C2-noind", "C3", "C3-nobridge", "R1", "R3", "R2"]
    assert [c.kind for c in res.claims] == ["gate"] * 5 + ["sanity"] + ["report"] * 3
    assert all(c.paper and c.per_seed for c in res.claims)
    # one seed bounds nothing: every gate is inconclusive and says what would decide it
    for c in res.claims[:5]:
        assert c.verdict == "inconclusive" and not c.held
        assert "one seed cannot bound" in c.details and "--scale medium" in c.details
    assert res.claims[6].verdict == "measured" and res.claims[7].verdict == "measured"
    assert set(res._pending_figures) == {"accuracy_per_schedule", "cosine_matrices", "stage2_time_course"}
    tc = res.metrics["time_course"]["attr_then_sim"]
    assert tc["step"][-1] == 2 * cfg["steps_per_stage"] and 1 in tc["stage"]
    assert "retention" in res.metrics["gpt_arm"][0] and "gap_ci95" in res.claims[8].measured


def test_configs_contract():
    assert set(experiment.CONFIGS) == {"smoke", "small", "medium", "paper"}
    assert set(experiment.EXPECTED_RUNTIME_S) == set(experiment.CONFIGS)
    for cfg in experiment.CONFIGS.values():
        experiment.validate_config(cfg)
        experiment.validate_config(dict(cfg, scale="small"))
        assert set(cfg) == set(experiment.CONFIG_HELP)
    small = experiment.CONFIGS["small"]
    assert small["n_seeds"] == 5 and small["steps_per_stage"] == 3000 and small["short_first_stage"] == 200
    assert small["gpt_seeds"] >= 3
    paper = experiment.CONFIGS["paper"]
    assert (paper["gpt_layers"], paper["gpt_d_model"], paper["gpt_heads"]) == (12, 768, 12)  # GPT-2 small
    assert paper["device"] == "auto" and experiment.CONFIGS["medium"]["device"] == "auto"


@pytest.mark.parametrize("key,value,exc", [("n_seeds", 0, ValueError), ("steps_per_stage", 2.5, ValueError),
                                           ("init_std", float("nan"), ValueError), ("lr", "1", TypeError),
                                           ("short_first_stage", 5000, ValueError), ("workers", None, TypeError),
                                           ("gpt_heads", 5, ValueError), ("gpt_lr", 0.0, ValueError)])
def test_validate_config_names_the_key(key, value, exc):
    cfg = dict(experiment.CONFIGS["small"], **{key: value})
    with pytest.raises(exc, match=key):
        experiment.validate_config(cfg)
    cfg = dict(experiment.CONFIGS["small"])
    del cfg["lr"]
    with pytest.raises(ValueError, match="lr"):
        experiment.run(cfg)


def test_validate_config_refuses_a_typo():
    cfg = dict(experiment.CONFIGS["small"], n_seed=3)
    with pytest.raises(ValueError, match="n_seed"):
        experiment.validate_config(cfg)


def test_joint_gate_held_not_held_inconclusive(gate_runs):
    ok, broken = gate_runs["joint"], gate_runs["attribute_only"]  # attribute_only: the similarity premises dropped
    good = experiment.check_joint(_col(ok, "accuracy"), _col(ok, "same_cos"), _col(ok, "cross_cos"))
    bad = experiment.check_joint(_col(broken, "accuracy"), _col(broken, "same_cos"), _col(broken, "cross_cos"))
    assert good.verdict == "held" and bad.verdict == "not held"
    one = experiment.check_joint(_col(ok, "accuracy")[:1], _col(ok, "same_cos")[:1], _col(ok, "cross_cos")[:1])
    assert one.verdict == "inconclusive" and "one seed cannot bound" in one.details


def test_asymmetry_gate_fails_when_the_arms_are_swapped_or_forgotten(gate_runs):
    sim, attr = [1.0, 1.0, 1.0], [0.25, 0.21, 0.38]
    ret = {"joint": [1, 1, 1], "sim_then_attr": [1, 1, 1], "attr_then_sim": [1, 1, 1]}
    assert experiment.check_asymmetry(sim, attr, ret).verdict == "held"
    assert experiment.check_asymmetry(attr, sim, ret).verdict == "not held"
    untyped = gate_runs["untyped"]  # untyped softmax forgets "a is c"
    assert max(_col(untyped, "retention")) < 0.9
    c = experiment.check_asymmetry(sim[:2], attr[:2], dict(ret, attr_then_sim=_col(untyped, "retention")))
    assert c.verdict == "not held"
    # a tiny sample: two seeds straddling the 0.60 bar -> inconclusive, with the number of seeds that would decide
    c = experiment.check_asymmetry([1.0, 1.0], [0.30, 0.70], {"joint": [1, 1]}, cost_per_seed_s=10.0)
    assert c.verdict == "inconclusive" and "would decide it" in c.details and "--scale medium" in c.details


def test_control_gate_held_not_held_inconclusive(gate_runs):
    short, frozen = gate_runs["short"], gate_runs["frozen_short"]
    # two seeds of the working control: held, or inconclusive when one seed dips (t with 1 df is wide)
    assert experiment.check_control("C2-short", _col(short, "accuracy"), 0.80, "short").verdict != "not held"
    assert experiment.check_control("C2-short", _col(frozen, "accuracy"), 0.80, "short").verdict == "not held"
    c = experiment.check_control("C2-short", _col(short, "accuracy")[:1], 0.80, "short")
    assert c.verdict == "inconclusive" and "one seed cannot bound" in c.details


def _c2_and_controls(runs, attr, short, noind):
    """Verdicts of C2 and its two controls on the given attr_then_sim arms (the same sim_then_attr arm for C2)."""
    sim, a = runs["sim"], runs[attr]
    c2 = experiment.check_asymmetry(_col(sim, "accuracy"), _col(a, "accuracy"),
                                    {"sim_then_attr": _col(sim, "retention"), "attr_then_sim": _col(a, "retention")})
    return {"C2": c2,
            "C2-short": experiment.check_control("C2-short", _col(runs[short], "accuracy"), 0.80, "short"),
            "C2-noind": experiment.check_control("C2-noind", _col(runs[noind], "accuracy"), 0.90, "noind")}


def test_frozen_E_mutation_passes_C2_and_only_the_controls_catch_it(gate_runs):
    """Issue 41: a bug in attr_then_sim's similarity stage that stops it from moving the entity representations
    (E frozen in stage 2 of that arm and of its controls, which share its code) blocks transfer without
    forgetting, so C2 (attr_then_sim <= 0.60 with retention) still holds; C2-short and C2-noind must fail. The
    frozen arms have the sizes of their unfrozen twins, which pass: the freeze is the only difference."""
    ok = _c2_and_controls(gate_runs, "attr", "short", "noind")
    assert ok["C2"].verdict == "held" and ok["C2-noind"].verdict == "held", (ok["C2"].details, ok["C2-noind"].details)
    assert ok["C2-short"].verdict != "not held"  # 2 seeds of the working control: held or inconclusive
    mutated = _c2_and_controls(gate_runs, "frozen_attr", "frozen_short", "frozen_noind")
    verdicts = {cid: c.verdict for cid, c in mutated.items()}
    # C2 alone does not see the mutation; the two controls do
    assert verdicts == {"C2": "held", "C2-short": "not held", "C2-noind": "not held"}, verdicts
    assert max(_col(gate_runs["frozen_short"], "accuracy") + _col(gate_runs["frozen_noind"], "accuracy")) < 0.3
    assert min(_col(gate_runs["short"], "accuracy") + _col(gate_runs["noind"], "accuracy")) > 0.8


def test_two_hop_gate_fails_without_bridges(gate_runs):
    on, off = gate_runs["two_hop_bridge"], gate_runs["two_hop_no_bridge"]
    assert experiment.check_two_hop(_col(on, "composed"), _col(on, "analogical")).verdict == "held"
    assert experiment.check_two_hop(_col(off, "composed"), _col(off, "analogical")).verdict == "not held"
    nb = experiment.check_no_bridge(_col(off, "composed"), _col(off, "analogical"))
    assert nb.verdict == "held" and nb.kind == "sanity"


def test_gpt_arm_is_typed_and_reports_retention_and_the_gap():
    typed = run_gpt_curriculum("attr_then_sim", 0, d_model=16, n_layers=1, n_heads=2, steps_per_stage=3)
    assert set(typed) >= {"accuracy", "retention", "retention_SA", "conclusion_prob"}
    assert 0.0 <= typed["retention"] <= 1.0 and 0.0 <= typed["accuracy"] <= 1.0
    acc = {"joint": [1.0, 1.0, 1.0], "sim_then_attr": [1.0, 0.96, 1.0], "attr_then_sim": [0.2, 0.3, 0.25]}
    kept = {k: [1.0, 1.0, 1.0] for k in acc}
    r2 = experiment.check_gpt(acc, kept, "toy GPT")
    assert r2.kind == "report" and "gap_ci95" in r2.measured and "retention_attr_then_sim_ci95" in r2.measured
    lo, hi = r2.measured["gap_ci95"]
    assert lo < r2.measured["gap"] < hi
    forgot = experiment.check_gpt(acc, dict(kept, sim_then_attr=[0.2, 0.3, 0.2]), "toy GPT")
    assert forgot.verdict == "not held" and "may be forgetting" in forgot.details


def _toy(scale):
    return dict(experiment.CONFIGS[scale], scale=scale, n_seeds=2, n_groups=3, d_model=8, two_hop_chains=4,
                steps_per_stage=20, short_first_stage=5, two_hop_steps=10, eval_every=10, gpt_seeds=2,
                gpt_steps_per_stage=2, gpt_layers=2, gpt_d_model=24, gpt_heads=12 if scale == "paper" else 4,
                workers=1)


@pytest.mark.parametrize("scale", ["medium", "paper"])
def test_medium_and_paper_configs_at_toy_size(scale):
    cfg = _toy(scale)
    assert cfg["device"] == "auto"
    res = experiment.run(cfg)
    assert res.scale == scale and len(res.claims) == 9
    assert res.claims[-1].id == "R2" and "GPT-2" in res.claims[-1].metric
    with pytest.raises(ValueError, match="device"):
        experiment.validate_config(dict(cfg, device="tpu"))
