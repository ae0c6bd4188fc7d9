"""The experiment's smoke run, config validation, the docs example, and the paper-scale path at toy size
(single process and 2 gloo processes under torchrun, whose ranks must end with identical weights)."""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch

from icml26.active_attacks import experiment as E
from icml26.active_attacks import scale as S
from icml26.common.distributed import launch_local

# the smoke run and the toy paper-scale run are session fixtures computed in a background worker (conftest.py);
# `smoke_cfg` / `toy_paper_config` are their configs
needs_hf = pytest.mark.skipif(not all(importlib.util.find_spec(m) for m in ("transformers", "peft")),
                              reason="the paper-scale path needs transformers and peft")


def test_smoke_run(smoke_result, smoke_cfg):
    cfg = smoke_cfg
    res = smoke_result
    ids = {c.id for c in res.claims}
    assert {"C1", "C2", "C3a", "C3b", "K1", "R5", "R1"} <= ids  # smoke keeps the MLE report (mle_report)
    assert all(c.gate for c in res.claims if c.id in ("C1", "C2", "C3a", "C3b"))
    assert all(c.kind == "sanity" for c in res.claims if c.id in ("K1", "S1", "R3"))
    assert all(c.verdict in ("held", "not held", "inconclusive", "measured") for c in res.claims)
    # one evaluation seed cannot bound a mean over seeds: every gate is inconclusive and says what would decide it
    gates = [c for c in res.claims if c.gate]
    assert all(c.verdict == "inconclusive" and "medium" in c.details for c in gates), [
        (c.id, c.verdict) for c in gates]
    assert all(c.paper for c in res.claims)
    figs = {"round_categories", "probe_asr_per_round", "cross_attack_matrix", "training_asr"}
    assert figs <= set(res._pending_figures)
    cal = res.metrics["calibration"]
    assert cal["seeds"] == [100] and cal["chosen"] in [
        {"safety_lr": lr, "safety_steps": st} for st in cfg["calibration_steps"] for lr in cfg["calibration_lrs"]]
    assert len(cal["per_seed"][0]["after"]) == len(cal["table"]) == 2
    rounds = res.metrics["per_arm"]["aa"]["rounds"][0]
    assert len(rounds) == cfg["steps"] // cfg["interval"] and set(rounds[0]["probe_asr"]) == set(E.CATEGORIES)
    perf = res.metrics["performance"]
    assert perf["gfn"]["attacker_samples_per_s"] > 0 and "aa_overhead_vs_gfn" in perf


def test_every_config_validates_and_typos_are_refused():
    for name in ("smoke", "small", "medium"):
        E.validate_config({**E.CONFIGS[name], "scale": name})
    assert E.CONFIGS["medium"]["n_seeds"] > E.CONFIGS["small"]["n_seeds"]
    assert E.CONFIGS["medium"]["calibration_seeds"] == E.CONFIGS["small"]["calibration_seeds"]
    assert E.CONFIGS["medium"]["mle_report"] and not E.CONFIGS["small"]["mle_report"]  # R1 runs at medium
    assert set(E.EXPECTED_RUNTIME_S) >= {"smoke", "small", "medium"}
    assert set(E.CONFIG_HELP) >= set(E.CONFIGS["medium"])
    with pytest.raises(ValueError, match="safty_lr"):
        E.validate_config({**E.CONFIGS["small"], "safty_lr": 1e-4})
    with pytest.raises(ValueError, match="calibration_seeds must not include evaluation seeds"):
        E.validate_config({**E.CONFIGS["small"], "calibration_seeds": [2, 100]})
    with pytest.raises(ValueError, match="calibration_shown"):
        E.validate_config({**E.CONFIGS["small"], "calibration_shown": ["insult", "spam"]})
    with pytest.raises(ValueError, match="round_probes"):
        E.validate_config({**E.CONFIGS["small"], "round_probes": 500})


def test_calibration_only_measures_a_subset_with_the_grid_streams(smoke_result, smoke_cfg):
    """small measures 2 of the 6 grid candidates (issue 33's runtime): each keeps its grid position's random stream,
    so its numbers equal the whole grid's, and the rule chooses among the measured ones."""
    cfg = dict(smoke_cfg)
    assert cfg["calibration_lrs"] == [1e-3, 1e-4] and cfg["calibration_steps"] == [3] and not cfg["calibration_only"]
    full = smoke_result.metrics["calibration"]["per_seed"][0]  # the smoke run's whole-grid calibration of seed 100
    assert full["seed"] == 100 and len(full["after"]) == 2
    sub_cfg = {**cfg, "calibration_only": [[1e-4, 3]]}
    E.validate_config(sub_cfg)
    assert E.calibration_candidates(sub_cfg) == [(1, {"safety_lr": 1e-4, "safety_steps": 3})]
    sub = E.calibration_job(100, sub_cfg)
    assert sub["before"] == full["before"] and sub["after"] == [full["after"][1]]
    assert E.choose_safety(sub_cfg, [sub])["chosen"] == {"safety_lr": 1e-4, "safety_steps": 3}
    small = E.CONFIGS["small"]
    assert [c for _, c in E.calibration_candidates(small)] == [{"safety_lr": 1e-3, "safety_steps": 60},
                                                               {"safety_lr": 3e-5, "safety_steps": 200}]
    assert len(E.calibration_candidates(E.CONFIGS["medium"])) == len(E.safety_grid(E.CONFIGS["medium"])) == 6


def test_shared_round1_gives_each_arm_its_own_run(smoke_cfg):
    """The run computes round 1 once for GFlowNet and GFlowNet + Active Attacks (identical before the first update)
    and continues both from it (pickled, as between worker processes): each arm's result equals its own full run."""
    import math
    import pickle

    cfg = {**smoke_cfg, "steps": 12, "interval": 4, "mle_steps": 2}
    ws = E.build_world(0, cfg, measure=False)
    safety = {"safety_lr": 1e-4, "safety_steps": 3}
    head = pickle.loads(pickle.dumps(E.run_round1("gfn", 0, cfg, ws)))
    assert head["wrapper"].trainer.step_count == 4 and head["wrapper"].trainer.victim.version == 0

    def same(x, y):
        if isinstance(x, dict):
            return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x if not k.endswith("_s"))
        if isinstance(x, (list, tuple)):
            return len(x) == len(y) and all(same(a, b) for a, b in zip(x, y))
        return x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y))

    for arm, sf in (("gfn", None), ("aa", safety)):
        alone = E.run_arm(arm, 0, cfg, ws, sf)
        shared = E.run_arm(arm, 0, cfg, ws, sf, head=head)
        assert alone["dataset"] and same({k: v for k, v in alone.items() if k != "timing"},
                                         {k: v for k, v in shared.items() if k != "timing"}), arm
    with pytest.raises(ValueError, match="head is round 1 of gfn seed 0"):
        E.run_arm("aa", 1, cfg, ws, safety, head=head)


@pytest.mark.slow  # ~25 s: two evaluation seeds at smoke size; run with -m slow
def test_medium_at_toy_size():
    smoke = E.CONFIGS["smoke"]
    cfg = {**E.CONFIGS["medium"], **{k: v for k, v in smoke.items() if k not in ("n_seeds", "real_judge")},
           "n_seeds": 2, "scale": "medium"}
    res = E.run(cfg)
    c1 = next(c for c in res.claims if c.id == "C3a")
    assert len(c1.per_seed) == 2 and res.metrics["calibration"]["seeds"] == smoke["calibration_seeds"]


@pytest.mark.parametrize("key,value,exc", [
    ("steps", 0, ValueError), ("steps", 2.5, ValueError), ("arms", ["gfn", "ppo"], ValueError),
    ("q", [0.5, 0.5, 0.1, 0.0, 0.0, 0.0], ValueError), ("victim_top_p", 0.0, ValueError),
    ("safety_batch", 1, ValueError), ("lr", float("nan"), ValueError), ("real_judge", 1, TypeError),
    ("reward_temp", [2.0, 1.0], TypeError), ("d_model", 30, ValueError), ("calibration_lrs", [], TypeError),
    ("calibration_steps", [60, 0], ValueError), ("calibration_only", [[1e-4, 61]], ValueError),
    ("calibration_only", [[1e-3]], TypeError), ("calibration_only", 5, TypeError), ("mle_report", 1, TypeError),
])
def test_validate_config_names_the_key(key, value, exc):
    cfg = {**E.CONFIGS["small"], key: value}
    with pytest.raises(exc, match=key.split("[")[0]):
        E.validate_config(cfg)


def test_validate_paper_config():
    S.validate_paper_config({**E.CONFIGS["paper"], "sft_data": "x.txt"})
    with pytest.raises(ValueError, match="sft_data"):
        S.validate_paper_config(E.CONFIGS["paper"])
    with pytest.raises(ValueError, match="classifier_kind"):
        S.validate_paper_config({**E.CONFIGS["paper"], "sft_data": "x", "classifier_kind": "llm"})


@needs_hf
def test_paper_path_single_process(paper_run):
    res, out = paper_run
    assert res.scale == "paper" and set(res.metrics["dataset_size"]) == {"gfn", "aa"}
    assert (out / "ckpt" / "aa_rank0.pt").exists()


@needs_hf
@pytest.mark.slow  # ~17 s (two processes importing torch, transformers and peft): run with -m slow
def test_paper_path_two_gloo_ranks_identical_weights(tmp_path, toy_paper_config):
    cfg = toy_paper_config(tmp_path)
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(cfg))
    launch_local(S.__file__, ["--config", str(path)], nproc=2, timeout=240)
    for arm in ("gfn", "aa"):
        a = torch.load(tmp_path / "ckpt" / f"{arm}_rank0.pt")
        b = torch.load(tmp_path / "ckpt" / f"{arm}_rank1.pt")
        assert a.keys() == b.keys()
        for k in a:
            assert torch.equal(a[k], b[k]), (arm, k)
    assert (tmp_path / "result.json").exists()


def test_docs(docs_example):
    ns = docs_example("active_attacks")
    assert len(ns["rounds"]) == 3
    assert all(r.end_step - r.start_step + 1 == 20 for r in ns["rounds"])
