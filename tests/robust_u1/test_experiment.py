"""The experiment's plumbing: a smoke run through `run`, the config checks, and the docs example as written."""

import pytest

from icml26.robust_u1.experiment import CONFIG_HELP, CONFIGS, EXPECTED_RUNTIME_S, run, validate_config


def test_toy_medium_run_computes_every_claim_from_the_run():
    # one toy-sized run covers smoke and medium: the smoke sizes with medium's extra arm (the Stage III init
    # ablation) and 2 seeds, so the second seed runs each Stage II arm at the lr chosen on the first; a narrower,
    # shallower restorer, fewer training images and the smallest GRPO groups (it tests the wiring, not numbers)
    toy = {"restorer_channels": 4, "restorer_depth": 2, "split": [0.05, 0.05, 0.9], "test_fraction": 0.007,
           "grpo_batch": 8, "group_size": 2, "n_boot": 20}
    res = run({**CONFIGS["smoke"], **toy, "n_seeds": 2, "methods": CONFIGS["medium"]["methods"], "scale": "medium"})
    ids = [c.id for c in res.claims]
    assert ids[:4] == ["C1", "C2", "C3", "C4"] and all(c.kind == "gate" for c in res.claims[:4])
    assert all(c.kind == "report" and c.verdict == "measured" for c in res.claims[4:]) and {"R1", "R2", "R4"} <= set(ids)
    assert all(c.verdict in ("held", "not held", "inconclusive") for c in res.claims[:4])
    assert len(res.claims[0].per_seed) == 2
    assert {"examples", "accuracy_per_corruption", "quality_vs_accuracy", "grpo_heldout_reward"} <= \
        set(res._pending_figures)
    c4 = res.claims[3]
    # identity, 2 filters, ridge, 1 SFT checkpoint, SFT, SFT+RL, SFT-continued
    assert len(c4.measured["ssim"]) == 8 and "sft_continued" in c4.measured["ssim"]
    assert res.metrics["performance"]["restorations_per_s_single_thread"] > 0
    assert 0 <= res.metrics["accuracy_sev5"]["robust_u1"] <= 1
    lr = res.metrics["stage2_lr"]  # each arm's lr picked on validation from the same grid
    assert lr["rl"] in CONFIGS["smoke"]["stage2_lrs"] and lr["sft_continued"] in CONFIGS["smoke"]["stage2_lrs"]
    assert set(lr["validation_reward"]["rl"]) == set(lr["validation_reward"]["sftc"]) == \
        {str(v) for v in CONFIGS["smoke"]["stage2_lrs"]}
    assert "chosen on the first seed's validation" in res.claims[0].details
    jobs = [j["job"] for j in res.metrics["timing_s"]["schedule"]]
    assert "rl/1/chosen" in jobs and "rl/0/0.0001" in jobs and "rl/1/0.0001" not in jobs


def test_configs_are_valid_and_documented():
    for scale in ("smoke", "small", "medium"):
        validate_config({**CONFIGS[scale], "scale": scale})
        with pytest.raises(ValueError, match="unknown key"):
            validate_config({**CONFIGS[scale], "scale": scale, "grpo_lrr": 1e-4})
    validate_config({**CONFIGS["paper"], "scale": "paper"})
    assert set(CONFIGS["medium"]) <= set(CONFIG_HELP) and {"small", "medium"} <= set(EXPECTED_RUNTIME_S)
    assert CONFIGS["small"]["grpo_batch"] == 32 and CONFIGS["small"]["n_seeds"] == 3
    assert CONFIGS["medium"]["n_seeds"] > CONFIGS["small"]["n_seeds"]
    # check 4 has at least the nine restorers of review note 1 (identity, filters, ridge, checkpoints, SFT, RL)
    assert 1 + len(CONFIGS["small"]["filters"]) + 1 + len(CONFIGS["small"]["sft_checkpoints"]) + 3 >= 9


@pytest.mark.parametrize("key,value,err,match", [
    ("n_seeds", 0, ValueError, "n_seeds"), ("sft_epochs", 2.5, ValueError, "sft_epochs"),
    ("stage2_lrs", [float("nan")], ValueError, "stage2_lrs"),
    ("stage2_lrs", [1e-4, 1e-4], ValueError, "stage2_lrs"), ("filters", ["box3"], ValueError, "filters"),
    ("stage3_init", "zero", ValueError, "stage3_init"), ("dataset", "cifar", ValueError, "dataset"), ("methods", ["robust_u1"], ValueError, "methods"),
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
