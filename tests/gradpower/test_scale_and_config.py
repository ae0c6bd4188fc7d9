"""gradpower's experiment contract (validate_config, CONFIG_HELP, EXPECTED_RUNTIME_S), the paper-scale module's
independence from experiment.py, and its torchrun path as 2 gloo ranks (phi applied after the all-reduce)."""

from __future__ import annotations

import ast
import copy
import re
import sys
from pathlib import Path

import pytest
import torch

from icml26.gradpower.experiment import CONFIG_HELP, CONFIGS, EXPECTED_RUNTIME_S, run, validate_config

PKG = Path(__file__).parents[2] / "src" / "icml26" / "gradpower"
HERE = Path(__file__).parent


def test_no_module_imports_the_experiment():
    assert not (PKG / "paper.py").exists()  # the paper-scale module is scale.py, like the other papers'
    for path in PKG.glob("*.py"):
        if path.name == "experiment.py":
            continue
        mods = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                mods |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
            elif isinstance(node, ast.Import):
                mods |= {a.name for a in node.names}
        assert not any(m.startswith("icml26.gradpower.experiment") for m in mods), path.name


def test_config_contract():
    for scale, cfg in CONFIGS.items():
        assert set(cfg) <= set(CONFIG_HELP), scale
        validate_config({**cfg, "scale": scale})
    assert set(EXPECTED_RUNTIME_S) == set(CONFIGS) and EXPECTED_RUNTIME_S["small"] <= 300


@pytest.mark.parametrize(("key", "value", "exc"), [
    ("n_seeds", 0, ValueError), ("n_seeds", 2.5, ValueError), ("seed", -3, ValueError), ("steps", "4000", TypeError),
    ("lr", 0.0, ValueError), ("lr", float("inf"), ValueError), ("betas", [0.9], ValueError),
    ("betas", [0.9, 1.0], ValueError), ("power", -1.2, ValueError), ("noise_examples", 1, ValueError),
    ("noise_every", 750, ValueError), ("d_model", 36, ValueError), ("fused", 1, TypeError),
    ("warmup_frac", 0.9, ValueError), ("n_val_windows", 100_000, ValueError),
    ("ablation_widths", [[64]], ValueError), ("ablation_powers", [0.0], ValueError),
])
def test_validate_config_names_the_bad_key(key, value, exc):
    cfg = {**copy.deepcopy(CONFIGS["small"]), key: value, "scale": "small"}
    with pytest.raises(exc, match=re.escape(key)):
        validate_config(cfg)
    with pytest.raises(exc, match=re.escape(key)):  # run() validates before any compute
        run(cfg)


def test_validate_paper_config_names_the_bad_key():
    cfg = {**CONFIGS["paper"], "scale": "paper"}
    for key, value in (("model", "llama_7b"), ("schedule", "step"), ("optimizers", ["sgd"]),
                       ("micro_batch", 0), ("clip", -1.0)):
        with pytest.raises(ValueError, match=key):
            validate_config({**cfg, key: value})


def test_paper_scale_loop_as_two_gloo_ranks_matches_one_process(tmp_path):
    """2 ranks on half-batches end bit-equal to each other and equal (fp tolerance) to one process on the full
    batches: AdamWPower transforms the all-reduced gradient (phi before the reduction would differ)."""
    from icml26.common import distributed as D

    proc = D.launch_local(HERE / "ddp_scale.py", [tmp_path], nproc=2, timeout=240)
    assert proc.stdout.count("world 2 steps 3 accum 2") == 1  # rank-0-only logging
    sys.path.insert(0, str(HERE))
    try:
        import ddp_scale
    finally:
        sys.path.remove(str(HERE))
    ddp_scale.run(str(tmp_path), D.DistEnv())  # the single-process reference, in this process
    r0, r1, single = (torch.load(tmp_path / f"{m}.pt") for m in ("ddp_rank0", "ddp_rank1", "single_rank0"))
    assert r0.keys() == r1.keys() == single.keys()
    for k in r0:
        assert torch.equal(r0[k], r1[k]), k
        torch.testing.assert_close(r0[k], single[k], rtol=1e-5, atol=1e-6)
    torch.manual_seed(0)
    from icml26.gradpower.lm import TinyLlama

    init = TinyLlama(64, 16, 1, 2, 16, d_ff=32).state_dict()
    assert any(not torch.allclose(init[k], single[k]) for k in init)  # it trained


def test_validate_config_refuses_an_unknown_key():
    for scale in ("smoke", "small", "medium"):
        with pytest.raises(ValueError, match="n_seed"):  # a typo of n_seeds fails before any compute
            validate_config({**CONFIGS[scale], "n_seed": 30, "scale": scale})
    with pytest.raises(ValueError, match="device"):
        validate_config({**CONFIGS["small"], "device": "tpu", "scale": "small"})


def test_medium_is_small_on_more_seeds_and_runs_at_toy_size():
    med, small = CONFIGS["medium"], CONFIGS["small"]
    changed = {k for k in med if med[k] != small[k]}
    assert changed == {"n_seeds", "noise_every", "device"} and med["n_seeds"] > small["n_seeds"]
    assert med["device"] == "auto" and EXPECTED_RUNTIME_S["medium"] <= 30 * 60
    toy = {**med, **{k: CONFIGS["smoke"][k] for k in ("nbytes", "n_val_windows", "steps", "eval_every",
                                                      "noise_examples", "mc_samples", "mech_coords", "mech_steps",
                                                      "mech_burn_in", "workers")},
           "n_seeds": 2, "noise_every": 20, "scale": "medium"}
    res = run(toy)
    assert res.scale == "medium" and res.claims[0].id == "G" and res.claims[0].interval.n == 2
    assert sorted(res.metrics["delta_per_seed"]) == [0, 1]
