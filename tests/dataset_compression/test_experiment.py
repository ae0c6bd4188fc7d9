"""The experiment contract, a smoke run through run(), and every gate's ability to fail (same claim functions)."""

import ast
import copy
from pathlib import Path

import numpy as np
import pytest

from icml26.dataset_compression.claims import build_claims, key, paired_stats
from icml26.dataset_compression.experiment import (
    CONFIG_HELP,
    CONFIGS,
    EXPECTED_RUNTIME_S,
    aggregate,
    run,
    validate_config,
)

PKG = Path(__file__).parents[2] / "src" / "icml26" / "dataset_compression"


def test_paper_scale_and_claims_never_import_the_experiment():
    for name in ("scale.py", "claims.py"):
        tree = ast.parse((PKG / name).read_text())
        mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not any(m.endswith("experiment") for m in mods), name


def test_config_contract():
    for scale, cfg in CONFIGS.items():
        assert set(cfg) <= set(CONFIG_HELP), scale
        validate_config({**cfg, "scale": scale})
    assert set(EXPECTED_RUNTIME_S) == set(CONFIGS) and EXPECTED_RUNTIME_S["small"] <= 300


@pytest.mark.parametrize(("key_", "value", "exc"), [
    ("n_seeds", 0, ValueError), ("n_seeds", 1.5, ValueError), ("seed", -1, ValueError), ("steps", "400", TypeError),
    ("ipcs", [2, 5], ValueError), ("ipcs", [1, 1], ValueError), ("ipcs", [1, 30], ValueError),
    ("factor", 3, ValueError), ("dataset", "cifar", ValueError), ("crop_scale", [0.5], ValueError),
    ("crop_scale", [0.9, 0.5], ValueError), ("lr", float("nan"), ValueError), ("soft_draws", 4, ValueError),
    ("lossy", "yes", TypeError), ("widths", [16], ValueError), ("temperature", 0, ValueError),
])
def test_validate_config_names_the_bad_key(key_, value, exc):
    cfg = {**copy.deepcopy(CONFIGS["small"]), key_: value, "scale": "small"}
    with pytest.raises(exc, match=key_):
        validate_config(cfg)
    with pytest.raises(exc, match=key_):
        run(cfg)  # run() validates before any compute
    with pytest.raises(ValueError, match="missing"):
        validate_config({"scale": "small", "seed": 0})
    with pytest.raises(ValueError, match="lossy"):
        validate_config({**CONFIGS["small"], "dataset": "mnist"})
    with pytest.raises(ValueError, match="unknown key.*'ipc'"):
        validate_config({**CONFIGS["small"], "ipc": 2})  # a typo of 'ipcs' is not silently ignored
    with pytest.raises(ValueError, match="unknown key.*'epoch'"):
        validate_config({**CONFIGS["paper"], "scale": "paper", "epoch": 3})


def test_smoke_run_end_to_end():
    res = run({**CONFIGS["smoke"], "scale": "smoke"})
    ids = {c.id for c in res.claims}
    assert {"C1-ipc1", "C1L-ipc1", "C2a-ipc1", "C2b-ipc1", "C3", "C4", "C4b", "C5", "C5L", "CP", "C6a",
            "C6b"} <= ids
    for c in res.claims:
        assert isinstance(c.held, bool) and c.paper and len(c.per_seed) == 1
        assert "cannot decide" in c.details  # one seed: never presented as informative
    t = res.metrics["table"]
    assert all(0 <= v["mean"] <= 100 for v in t.values())
    assert res.metrics["storage_bytes"]["1"]["pca"]["image_bytes"] == res.metrics["storage_bytes"]["1"]["random"][
        "image_bytes"] == 10 * 16 * 16
    assert set(res._pending_figures) == {"accuracy_vs_ipc", "canvas_and_crops"}


def test_aggregate_averages_draws_and_pairs_the_soft_draws():
    runs = [{"setting": "main", "method": "random", "ipc": 1, "seed": s, "draw": d, "acc": 10.0 * d + s}
            for s in (0, 1) for d in range(3)]
    runs += [{"setting": "main", "method": "pca", "ipc": 1, "seed": s, "draw": 0, "acc": 50.0} for s in (0, 1)]
    t = aggregate(runs, [0, 1], soft_draws=1)
    assert t["main/random/1"] == [10.0, 11.0] and t["main/pca/1"] == [50.0, 50.0]
    assert t["main/random_hard_paired/1"] == [0.0, 1.0]


# ------------------------------------------------------------------------------- gates can fail
def _good_table():
    m, L = "main", "lossy"
    t = {}

    def put(setting, method, ipc, base):
        t[key(setting, method, ipc)] = [base, base - 1.0, base + 1.0]

    for meth, v1, v2 in (("random", 60, 75), ("pca", 82, 84), ("random_ca", 78, 88), ("herding", 70, 80),
                         ("el2n_hard", 20, 30), ("forgetting_hard", 25, 35), ("el2n_easy", 72, 78), ("dm", 81, 83),
                         ("pca_canvas_rrc", 20, 25), ("pca_tile_wide", 70, 75)):
        put(m, meth, 1, v1)
        put(m, meth, 2, v2)
    put(m, "random_soft", 1, 85)
    put(m, "random_hard_paired", 1, 60)
    put(m, "dm_soft", 1, 86)
    for meth, v1, v2 in (("random", 55, 65), ("pca", 70, 72), ("random_ca", 68, 70)):
        put(L, meth, 1, v1)
        put(L, meth, 2, v2)
    return t


def _claims(t):
    return {c.id: c for c in build_claims(t, [1, 2], lossy=True, soft=True, teacher_acc=[94.0, 93.0, 95.0])}


BREAKS = [  # (claim, table key, new mean): one arm broken so that this gate must flip
    ("C1-ipc1", "main/pca/1", 63), ("C1-ipc2", "main/random/2", 82), ("C1L-ipc1", "lossy/pca/1", 57),
    ("C1L-ipc2", "lossy/random/2", 70), ("C2a-ipc1", "main/herding/1", 81), ("C2a-ipc2", "main/el2n_easy/2", 86),
    ("C2b-ipc1", "main/dm/1", 86), ("C2b-ipc2", "main/dm/2", 87), ("C3", "main/el2n_hard/1", 60),
    ("C4", "main/pca_canvas_rrc/1", 70), ("C5", "main/random_ca/1", 65), ("C5L", "lossy/random_ca/1", 60),
    ("CP", "main/random_ca/1", 84), ("C6a", "main/random_soft/1", 62), ("C6b", "main/dm_soft/1", 90),
]


def test_every_gate_holds_on_the_good_table():
    claims = _claims(_good_table())
    gates = {cid for cid, c in claims.items() if c.gate}
    assert gates == {b[0] for b in BREAKS}
    assert all(claims[g].held for g in gates), [g for g in gates if not claims[g].held]
    assert not claims["C4b"].gate and not claims["P-trend"].gate


@pytest.mark.parametrize(("cid", "k", "mean"), BREAKS)
def test_each_gate_flips_when_its_arm_is_broken(cid, k, mean):
    t = _good_table()
    t[k] = [mean, mean - 1.0, mean + 1.0]
    c = _claims(t)[cid]
    assert not c.held, (cid, c.measured)


def test_a_noisy_check_says_it_cannot_decide():
    t = _good_table()
    t["main/pca/1"] = [90.0, 58.0, 84.0]  # mean 77.3: PCA - Random = +17.3 but per seed +30, -1, +25
    c = _claims(t)["C1-ipc1"]
    assert c.held and "cannot decide at this size" in c.details
    good = _claims(_good_table())["C1-ipc1"]
    assert "decides at this size" in good.details and good.per_seed == [22.0, 22.0, 22.0]
    st = paired_stats([1.0, 2.0, 3.0], 0.0, ">=")
    assert st["ci95"][0] == pytest.approx(2.0 - 4.303 / np.sqrt(3), rel=1e-3) and st["decided"]
