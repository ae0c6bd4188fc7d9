"""The experiment's smoke run, config validation, the docs example, and the paper-scale path at toy size
(single process and 2 gloo processes under torchrun, whose ranks must end with identical weights)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("peft")

from icml26.active_attacks import experiment as E
from icml26.active_attacks import scale as S
from icml26.common.distributed import launch_local


def _toy_paper_config(tmp_path: Path) -> dict:
    cfg = dict(E.CONFIGS["paper"])
    cfg.update({"attacker": "toy", "victim": "toy", "classifier": "toy", "classifier_kind": "sequence",
                "dtype": "float32", "sft_steps": 3, "sft_batch": 8, "steps": 4, "batch_size": 4, "grad_accum": 1,
                "lora_r": 4, "lora_alpha": 8, "interval": 2, "safety_steps": 2, "safety_batch": 4, "mle_steps": 2,
                "n_eval": 8, "n_responses": 2, "victim_max_new_tokens": 4, "min_len": 4, "max_len": 6,
                "buffer_size": 20, "seed_batches": 1, "lr": 1e-3, "out_dir": str(tmp_path / "ckpt"),
                "save_all_ranks": True, "scale": "paper"})
    return cfg


# the smoke config with fewer evaluation draws (plumbing only; CONFIGS["smoke"] itself is unchanged): the run is
# shared by the tests below (one run per session)
_SMOKE = {**E.CONFIGS["smoke"], "scale": "smoke", "n_eval": 16, "asr_samples": 16, "benign_heldout": 8,
          "mle_samples": 16, "probes_per_category": 4, "victim_corpus": 200}


@pytest.fixture(scope="session")
def smoke_result():
    return E.run(dict(_SMOKE))


def test_smoke_run(smoke_result):
    cfg = _SMOKE
    res = smoke_result
    ids = {c.id for c in res.claims}
    assert {"C1", "C2", "C3a", "C3b", "K1", "R5"} <= ids
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


def test_calibration_only_measures_a_subset_with_the_grid_streams(smoke_result):
    """small measures 2 of the 6 grid candidates (issue 33's runtime): each keeps its grid position's random stream,
    so its numbers equal the whole grid's, and the rule chooses among the measured ones."""
    cfg = dict(_SMOKE)
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
    ("calibration_only", [[1e-3]], TypeError), ("calibration_only", 5, TypeError),
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


def test_paper_path_single_process(tmp_path):
    res = S.run_paper(_toy_paper_config(tmp_path))
    assert res.scale == "paper" and set(res.metrics["dataset_size"]) == {"gfn", "aa"}
    assert (tmp_path / "ckpt" / "aa_rank0.pt").exists()


@pytest.mark.slow  # ~17 s (two processes importing torch, transformers and peft): run with -m slow
def test_paper_path_two_gloo_ranks_identical_weights(tmp_path):
    cfg = _toy_paper_config(tmp_path)
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
