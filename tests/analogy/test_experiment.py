"""Smoke run of the reproduction, config contract, and tests that every gate can fail on a broken arm."""

import copy

import numpy as np
import pytest

from icml26.analogy import experiment
from icml26.analogy.baselines import run_curriculum, run_two_hop
from icml26.results import Result


def test_smoke_run_structure():
    cfg = copy.deepcopy(experiment.CONFIGS["smoke"])
    cfg["scale"] = "smoke"
    res = experiment.run(cfg)
    assert isinstance(res, Result) and res.slug == "analogy"
    assert [c.id for c in res.claims] == ["C1", "C2", "C2-short", "C2-noind", "C3", "C3-nobridge", "R1", "R2"]
    assert [c.gate for c in res.claims] == [True] * 5 + [False] * 3
    assert all(c.paper and c.per_seed for c in res.claims)
    assert set(res._pending_figures) == {"accuracy_per_schedule", "cosine_matrices", "stage2_time_course"}
    tc = res.metrics["time_course"]["attr_then_sim"]
    assert tc["step"][-1] == 2 * cfg["steps_per_stage"] and 1 in tc["stage"]


def test_configs_contract():
    assert set(experiment.CONFIGS) == {"smoke", "small", "paper"}
    for cfg in experiment.CONFIGS.values():
        experiment.validate_config(cfg)
    small = experiment.CONFIGS["small"]
    assert small["n_seeds"] == 5 and small["steps_per_stage"] == 3000 and small["short_first_stage"] == 200
    assert set(experiment.CONFIG_HELP) <= set(small)


@pytest.mark.parametrize("key,value,exc", [("n_seeds", 0, ValueError), ("steps_per_stage", 2.5, ValueError),
                                           ("init_std", float("nan"), ValueError), ("lr", "1", TypeError),
                                           ("short_first_stage", 5000, ValueError), ("workers", None, TypeError)])
def test_validate_config_names_the_key(key, value, exc):
    cfg = dict(experiment.CONFIGS["small"], **{key: value})
    with pytest.raises(exc, match=key):
        experiment.validate_config(cfg)
    cfg = dict(experiment.CONFIGS["small"])
    del cfg["lr"]
    with pytest.raises(ValueError, match="lr"):
        experiment.run(cfg)


_FAST = dict(steps_per_stage=1500)


def test_joint_gate_fails_without_training_or_similarity():
    ok = [run_curriculum("joint", s, **_FAST) for s in (0,)]
    good = experiment.check_joint([r["accuracy"] for r in ok], [r["same_cos"] for r in ok],
                                  [r["cross_cos"] for r in ok])
    broken = [run_curriculum("attribute_only", s, steps_per_stage=800) for s in (0,)]  # the similarity premises dropped
    bad = experiment.check_joint([r["accuracy"] for r in broken], [r["same_cos"] for r in broken],
                                 [r["cross_cos"] for r in broken])
    assert good.held and not bad.held


def test_asymmetry_gate_fails_when_the_arms_are_swapped_or_forgotten():
    sim, attr = [1.0, 1.0, 1.0], [0.25, 0.21, 0.38]
    ret = {"joint": [1, 1, 1], "sim_then_attr": [1, 1, 1], "attr_then_sim": [1, 1, 1]}
    assert experiment.check_asymmetry(sim, attr, ret).held
    assert not experiment.check_asymmetry(attr, sim, ret).held
    untyped = run_curriculum("attr_then_sim", 0, typed=False, **_FAST)  # untyped softmax forgets "a is c"
    assert not experiment.check_asymmetry(sim, attr, dict(ret, attr_then_sim=[untyped["retention"]])).held


def test_control_gate_fails_on_the_converged_arm():
    conv = run_curriculum("attr_then_sim", 1, **_FAST)
    short = run_curriculum("attr_then_sim", 1, steps_per_stage=(200, 1500))
    assert experiment.check_control("C2-short", [short["accuracy"]], 0.80, "short").held
    assert not experiment.check_control("C2-short", [conv["accuracy"]], 0.80, "short").held


def test_two_hop_gate_fails_without_bridges():
    on = [run_two_hop(True, s, steps=600) for s in (0, 1)]
    off = [run_two_hop(False, s, steps=600) for s in (0, 1)]
    assert experiment.check_two_hop([r["composed"] for r in on], [r["analogical"] for r in on]).held
    assert not experiment.check_two_hop([r["composed"] for r in off], [r["analogical"] for r in off]).held
    assert experiment.check_no_bridge([r["composed"] for r in off], [r["analogical"] for r in off]).held


def test_undecidable_check_says_so():
    c = experiment.check_control("C2-short", [0.5, 1.0, 0.95], 0.80, "short")
    assert "CANNOT DECIDE" in c.details
    m, lo, hi = experiment.paired_ci([1.0, 1.0, 1.0], [0.2, 0.3, 0.4])
    assert np.isclose(m, 0.7) and lo < 0.7 < hi


def test_paper_config_code_path_at_toy_size():
    cfg = dict(experiment.CONFIGS["paper"], scale="paper", n_seeds=1, n_groups=3, d_model=8, two_hop_chains=4,
               steps_per_stage=20, short_first_stage=5, two_hop_steps=10, eval_every=10, gpt_seeds=1,
               gpt_steps_per_stage=2)
    assert experiment.CONFIGS["paper"]["device"] == "auto" and experiment.CONFIGS["paper"]["n_groups"] == 256
    res = experiment.run(cfg)
    assert res.scale == "paper" and len(res.claims) == 8
    with pytest.raises(ValueError, match="device"):
        experiment.validate_config(dict(cfg, device="tpu"))
