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


def test_smoke_run():
    cfg = {**E.CONFIGS["smoke"], "scale": "smoke"}
    res = E.run(cfg)
    ids = {c.id for c in res.claims}
    assert {"C1", "C2", "C3a", "C3b"} <= ids
    assert all(c.gate for c in res.claims if c.id in ("C1", "C2", "C3a", "C3b"))
    assert all(c.paper for c in res.claims)
    assert {"round_categories", "cross_attack_matrix", "training_asr"} <= set(res._pending_figures)
    perf = res.metrics["performance"]
    assert perf["gfn"]["attacker_samples_per_s"] > 0 and "aa_overhead_vs_gfn" in perf


@pytest.mark.parametrize("key,value,exc", [
    ("steps", 0, ValueError), ("steps", 2.5, ValueError), ("arms", ["gfn", "ppo"], ValueError),
    ("q", [0.5, 0.5, 0.1, 0.0, 0.0, 0.0], ValueError), ("victim_top_p", 0.0, ValueError),
    ("safety_batch", 1, ValueError), ("lr", float("nan"), ValueError), ("real_judge", 1, TypeError),
    ("reward_temp", [2.0, 1.0], TypeError), ("d_model", 30, ValueError),
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
