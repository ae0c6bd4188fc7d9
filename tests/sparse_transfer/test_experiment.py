"""The experiment's config contract and a smoke run (plumbing only)."""

from __future__ import annotations

import pytest

from icml26.sparse_transfer import experiment as E


def test_configs_validate_and_bad_keys_are_named():
    for scale in ("smoke", "small", "paper"):
        E.validate_config({**E.CONFIGS[scale], "scale": scale})
    for key, bad in (("steps", 0), ("steps", 2.5), ("d", 7), ("lr", float("nan")), ("fd_probe_frac", 0.0),
                     ("regression_pairs", []), ("hidden", "64"), ("report_arms", 1)):
        with pytest.raises((ValueError, TypeError), match=key):
            E.validate_config({**E.CONFIGS["small"], key: bad})
    with pytest.raises(ValueError, match="seed"):
        E.validate_config({k: v for k, v in E.CONFIGS["small"].items() if k != "seed"})
    assert set(E.CONFIG_HELP) >= set(E.CONFIGS["small"])
    assert E.CONFIGS["small"]["gate_seeds"] == 5 and E.CONFIGS["small"]["steps"] == 1500


def test_smoke_run_computes_every_claim(tmp_path):
    from icml26.results import load_result, save_result

    res = E.run({**E.CONFIGS["smoke"], "scale": "smoke"})
    ids = [c.id for c in res.claims]
    assert ids[:4] == ["C1", "C2", "C3", "C4"] and all(c.gate for c in res.claims[:4])
    assert {"R1", "R2", "R3", "R4", "R5"} <= set(ids) and not any(c.gate for c in res.claims[4:])
    c3 = res.claims[2].measured["median_te"]
    assert set(c3) == {"dm", "dm_anchor_joint", "dm_resolve", "dm_sparsity_no_anchor", "ot"}
    save_result(res, tmp_path)
    back = load_result(tmp_path)
    assert {"learned_vs_true.png", "jacobian_support.png"} <= set(back.figures)
