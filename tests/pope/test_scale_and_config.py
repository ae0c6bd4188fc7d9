"""PoPE's experiment contract (validate_config, CONFIG_HELP, EXPECTED_RUNTIME_S), the paper-scale module's
independence from experiment.py, its torchrun path as 2 gloo ranks, and the claim checks' ability to fail."""

from __future__ import annotations

import ast
import copy
from pathlib import Path

import pytest
import torch

from icml26.pope import PoPE
from icml26.pope.claims import claim_a, claim_b, claim_c, decoupling_check
from icml26.pope.experiment import CONFIG_HELP, CONFIGS, EXPECTED_RUNTIME_S, run, validate_config

PKG = Path(__file__).parents[2] / "src" / "icml26" / "pope"


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_paper_scale_module_never_imports_the_experiment():
    for name in ("scale.py", "claims.py", "tasks.py"):
        assert not any(m.startswith("icml26.pope.experiment") for m in _imports(PKG / name)), name


def test_config_contract():
    for scale, cfg in CONFIGS.items():
        assert set(cfg) <= set(CONFIG_HELP), scale
        validate_config({**cfg, "scale": scale})
    assert set(EXPECTED_RUNTIME_S) == set(CONFIGS) and EXPECTED_RUNTIME_S["small"] <= 300


@pytest.mark.parametrize(("key", "value", "exc"), [
    ("n_seeds", 0, ValueError), ("n_seeds", 1.5, ValueError), ("seed", -1, ValueError), ("steps", "600", TypeError),
    ("arms", ["pope"], ValueError), ("arms", ["pope", "rope", "sinusoid"], ValueError),
    ("eval_lengths", [64, 256.5], ValueError), ("eval_lengths", [32, 256], ValueError),
    ("eval_lengths", [64, 512, 256], ValueError), ("val_frac", 1.0, ValueError), ("lr", float("nan"), ValueError),
    ("n_heads", 3, ValueError), ("eval_windows", 10_000, ValueError), ("ii_device", "tpu", ValueError),
    ("decoupling_t", 11, ValueError), ("ii_run", "yes", TypeError),
])
def test_validate_config_names_the_bad_key(key, value, exc):
    cfg = {**copy.deepcopy(CONFIGS["small"]), key: value, "scale": "small"}
    with pytest.raises(exc, match=key):
        validate_config(cfg)
    with pytest.raises(exc, match=key):  # run() validates before any compute
        run(cfg)


def test_validate_paper_config_names_the_bad_key():
    cfg = {**CONFIGS["paper"], "scale": "paper"}
    for key, value in (("model", "gpt5"), ("grad_accum", 0), ("dtype", "int8"), ("eval_lengths", [])):
        with pytest.raises(ValueError, match=key):
            validate_config({**cfg, key: value})
    with pytest.raises(ValueError, match="missing"):
        validate_config({"scale": "small", "seed": 0})


# ---------------------------------------------------------------------------------- claims can fail
def _runs(pope_losses, rope_losses, seeds=(0, 1)):
    return ([{"arm": "pope", "seed": s, "losses": dict(zip(("64", "512"), pope_losses[i]))} for i, s in
             enumerate(seeds)]
            + [{"arm": "rope", "seed": s, "losses": dict(zip(("64", "512"), rope_losses[i]))} for i, s in
               enumerate(seeds)])


def test_claim_a_flips_when_pope_degrades_like_rope_or_pays_in_distribution():
    good, _ = claim_a(_runs([(1.5, 2.2), (1.5, 2.2)], [(1.5, 2.6), (1.5, 2.7)]), [64, 512], [0, 1])
    assert good.held and good.per_seed == pytest.approx([0.4, 0.5])
    same, _ = claim_a(_runs([(1.5, 2.6), (1.5, 2.7)], [(1.5, 2.6), (1.5, 2.7)]), [64, 512], [0, 1])
    assert not same.held and "margin is below" in same.details
    costly, _ = claim_a(_runs([(1.6, 2.2), (1.6, 2.2)], [(1.5, 2.6), (1.5, 2.7)]), [64, 512], [0, 1])
    assert not costly.held and "in-distribution" in costly.details
    noisy, _ = claim_a(_runs([(1.5, 2.2), (1.5, 2.2)], [(1.5, 2.3), (1.5, 2.9)]), [64, 512], [0, 1])
    assert "cannot decide" in noisy.details  # per-seed margins 0.1 / 0.7 around the 0.15 threshold
    assert good.paper and "cannot decide" not in good.details.split("Margin:")[1].split(".")[0]


def test_claim_b_flips_for_a_broken_encoding():
    ok = claim_b(decoupling_check(40, 8, 5, 10, seed=0), 40)
    assert ok.held and ok.measured["pope_peak_at_t"] == 40
    # signed magnitudes (no softplus) let content move the peak: the check must catch it
    broken = claim_b(decoupling_check(40, 8, 5, 10, seed=0, encoding=PoPE(8, 1, magnitude=lambda x: x)), 40)
    assert not broken.held and broken.measured["pope_peak_at_t"] < 40
    assert broken.measured["identity_max_abs_err"] > 1e-10


def test_claim_c_flips_with_the_accuracy_gap():
    runs = [{"arm": a, "seed": s, "accuracy": acc} for s in (0, 1) for a, acc in (("pope", 0.9), ("rope", 0.1))]
    assert claim_c(runs).held
    runs = [{"arm": a, "seed": s, "accuracy": acc} for s in (0, 1) for a, acc in (("pope", 0.3), ("rope", 0.1))]
    c = claim_c(runs)
    assert not c.held and c.per_seed == pytest.approx([20.0, 20.0])


# ---------------------------------------------------------------------------------- torchrun, 2 gloo ranks
def test_paper_scale_loop_as_two_gloo_ranks_ends_with_identical_weights(tmp_path):
    from icml26.common import distributed as D

    proc = D.launch_local(Path(__file__).with_name("ddp_scale.py"), [tmp_path], nproc=2, timeout=240)
    assert proc.stdout.count("world 2 losses") == 1  # rank-0-only logging
    r0, r1 = torch.load(tmp_path / "rank0.pt"), torch.load(tmp_path / "rank1.pt")
    assert r0.keys() == r1.keys() and any(k.endswith("encoding.delta") for k in r0)
    for k in r0:
        assert torch.equal(r0[k], r1[k]), k
    from icml26.pope.models import TinyDecoder

    torch.manual_seed(0)
    init = TinyDecoder(256, 32, 1, 2, 16, "pope").state_dict()
    assert any(not torch.equal(init[k], r0[k]) for k in init)  # it trained
