"""The experiment's plumbing: a smoke run through `run`, the config checks, and the docs example as written."""

import pytest

from icml26.robust_u1.experiment import CONFIG_HELP, CONFIGS, EXPECTED_RUNTIME_S, run, validate_config


def test_smoke_run_computes_every_claim_from_the_run():
    res = run({**CONFIGS["smoke"], "scale": "smoke"})
    ids = [c.id for c in res.claims]
    assert ids[:4] == ["C1", "C2", "C3", "C4"] and all(c.gate for c in res.claims[:4])
    assert all(not c.gate for c in res.claims[4:]) and "R1" in ids
    assert {"examples", "accuracy_per_corruption", "quality_vs_accuracy", "grpo_heldout_reward"} <= \
        set(res._pending_figures)
    c4 = res.claims[3]
    assert len(c4.measured["ssim"]) >= 9 - 2  # smoke keeps one SFT checkpoint: 8 restorers
    assert res.metrics["performance"]["restorations_per_s_single_thread"] > 0
    assert 0 <= res.metrics["accuracy_sev5"]["robust_u1"] <= 1


def test_configs_are_valid_and_documented():
    for scale in ("smoke", "small"):
        validate_config({**CONFIGS[scale], "scale": scale})
    validate_config({**CONFIGS["paper"], "scale": "paper"})
    assert set(CONFIGS["small"]) <= set(CONFIG_HELP) and "small" in EXPECTED_RUNTIME_S
    assert CONFIGS["small"]["grpo_batch"] == 32 and CONFIGS["small"]["n_seeds"] == 3


@pytest.mark.parametrize("key,value,err,match", [
    ("n_seeds", 0, ValueError, "n_seeds"), ("sft_epochs", 2.5, ValueError, "sft_epochs"),
    ("grpo_lr", float("nan"), ValueError, "grpo_lr"), ("methods", ["robust_u1"], ValueError, "methods"),
    ("severities", [6], ValueError, "severities"), ("split", [0.5, 0.5], ValueError, "split"),
    ("sft_checkpoints", [20], ValueError, "sft_checkpoints"), ("std_scope", "x", ValueError, "std_scope"),
    ("image_size", 8, ValueError, "image_size"), ("workers", True, TypeError, "workers")])
def test_bad_config_values_are_refused_by_name(key, value, err, match):
    with pytest.raises(err, match=match):
        validate_config({**CONFIGS["small"], key: value})
    with pytest.raises(ValueError, match="missing"):
        validate_config({k: v for k, v in CONFIGS["small"].items() if k != "grpo_steps"})


def test_docs(docs_example):
    docs_example("robust_u1")
