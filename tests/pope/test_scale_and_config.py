"""PoPE's experiment contract (validate_config, CONFIG_HELP, EXPECTED_RUNTIME_S), the paper-scale module's
independence from experiment.py, its torchrun path as 2 gloo ranks, and the claim checks' ability to fail."""

from __future__ import annotations

import ast
import copy
from pathlib import Path

import numpy as np
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
def _runs(pope_losses, rope_losses, seeds=(0, 1), n_windows=40, noise=0.02, long_noise=None, rng=0):
    """Runs whose per-window losses scatter around the given (loss at 64, loss at 512) per seed; window w has the
    same text difficulty for both arms (paired), as in the real evaluation; `noise` (`long_noise` at 512) is each
    arm's own per-window scatter."""
    g = np.random.default_rng(rng)
    sd = {"64": noise, "512": noise if long_noise is None else long_noise}
    out = []
    hard = {s: {t: g.normal(0, 0.3, n_windows) for t in ("64", "512")} for s in seeds}
    for arm, table in (("pope", pope_losses), ("rope", rope_losses)):
        for i, s in enumerate(seeds):
            win = {t: (table[i][j] + hard[s][t] + g.normal(0, sd[t], n_windows)).tolist()
                   for j, t in enumerate(("64", "512"))}
            out.append({"arm": arm, "seed": s, "losses": {t: float(np.mean(v)) for t, v in win.items()},
                        "window_losses": win})
    return out


def test_claim_a_held_and_a_broken_pope_arm_is_not_held():
    good, _ = claim_a(_runs([(1.5, 2.2), (1.5, 2.2)], [(1.5, 2.6), (1.5, 2.7)]), [64, 512], [0, 1])
    assert good.verdict == "held" and good.per_seed == pytest.approx([0.4, 0.5], abs=0.02)
    assert good.interval.method == "stratified-bootstrap" and good.paper
    # a broken PoPE arm that degrades exactly like RoPE: the margin is ~0, far below 0.15
    same, _ = claim_a(_runs([(1.5, 2.6), (1.5, 2.7)], [(1.5, 2.6), (1.5, 2.7)]), [64, 512], [0, 1])
    assert same.verdict == "not held" and "margin is below" in same.details
    costly, _ = claim_a(_runs([(1.6, 2.2), (1.6, 2.2)], [(1.5, 2.6), (1.5, 2.7)]), [64, 512], [0, 1])
    assert costly.verdict == "not held" and "in-distribution" in costly.details


def test_claim_a_on_a_tiny_sample_is_inconclusive():
    # one seed, 3 windows whose long-context losses scatter by 0.3: a true margin of 0.25 cannot be told from 0.15
    for rng in range(5):
        tiny, _ = claim_a(_runs([(1.5, 2.35)], [(1.5, 2.6)], seeds=(0,), n_windows=3, noise=0.0, long_noise=0.3,
                                rng=rng), [64, 512], [0])
        assert tiny.verdict == "inconclusive" and tiny.interval.n == 3, rng
    # without per-window losses (the paper path, one seed): a t interval over one seed never decides
    one = [{k: v for k, v in r.items() if k != "window_losses"} for r in _runs([(1.5, 2.2)], [(1.5, 2.6)], (0,))]
    c, _ = claim_a(one, [64, 512], [0])
    assert c.verdict == "inconclusive" and "t interval over 1 seed" in c.details


def test_claim_b_flips_for_a_broken_encoding():
    ok, ok0 = claim_b(decoupling_check(40, 8, 5, 10, seed=0), 40)
    assert ok.verdict == "held" and ok.measured["pope_peak_at_t"] == 40 and ok0.kind == "sanity" and ok0.held
    # signed magnitudes (no softplus) let content move the peak: the check must catch it
    broken, broken0 = claim_b(decoupling_check(40, 8, 5, 10, seed=0, encoding=PoPE(8, 1, magnitude=lambda x: x)),
                              40)
    assert broken.verdict == "not held" and broken.measured["pope_peak_at_t"] < 40
    assert broken0.verdict == "not held" and broken0.measured["identity_max_abs_err"] > 1e-10


def test_claim_c_flips_with_the_accuracy_gap():
    runs = [{"arm": a, "seed": s, "accuracy": acc} for s in (0, 1, 2)
            for a, acc in (("pope", 0.9 + 0.01 * s), ("rope", 0.1))]
    assert claim_c(runs).verdict == "held"
    runs = [{"arm": a, "seed": s, "accuracy": acc} for s in (0, 1, 2)
            for a, acc in (("pope", 0.3 + 0.01 * s), ("rope", 0.1))]
    c = claim_c(runs)
    assert c.verdict == "not held" and c.per_seed == pytest.approx([20.0, 21.0, 22.0])
    one = claim_c([{"arm": "pope", "seed": 0, "accuracy": 0.9}, {"arm": "rope", "seed": 0, "accuracy": 0.1}])
    assert one.verdict == "inconclusive"


def test_validate_config_refuses_an_unknown_key():
    for scale in ("smoke", "small"):
        with pytest.raises(ValueError, match="n_seed"):
            validate_config({**CONFIGS[scale], "n_seed": 3, "scale": scale})


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
