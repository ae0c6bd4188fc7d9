"""The experiment's config contract and a toy run of the medium structure (plumbing only)."""

from __future__ import annotations

import pytest

from icml26.sparse_transfer import experiment as E


def test_configs_validate_and_bad_keys_are_named():
    for scale in ("smoke", "small", "medium", "paper"):
        E.validate_config({**E.CONFIGS[scale], "scale": scale})
        assert scale in E.EXPECTED_RUNTIME_S
    for key, bad in (("steps", 0), ("steps", 2.5), ("d", 7), ("lr", float("nan")), ("fd_probe_frac", 0.0),
                     ("regression_pairs", []), ("hidden", "64"), ("report_arms", 1), ("joint_hidden", []),
                     ("c3_seeds", 2), ("device", "tpu"), ("hinge", -1.0)):
        with pytest.raises((ValueError, TypeError), match=key):
            E.validate_config({**E.CONFIGS["small"], key: bad})
    with pytest.raises(ValueError, match="seed"):
        E.validate_config({k: v for k, v in E.CONFIGS["small"].items() if k != "seed"})
    for scale in ("small", "medium", "paper"):  # a typo'd key fails before compute
        with pytest.raises(ValueError, match="gate_seed"):
            E.validate_config({**E.CONFIGS[scale], "gate_seed": 5, "scale": scale})
    assert set(E.CONFIG_HELP) >= set(E.CONFIGS["medium"]) | set(E.CONFIGS["paper"])
    small, medium = E.CONFIGS["small"], E.CONFIGS["medium"]
    assert small["gate_seeds"] == 5 and small["c3_seeds"] == 10 and small["steps"] == 1500
    assert medium["gate_seeds"] == 10 and medium["joint_steps"] == 3 * small["joint_steps"]
    assert medium["device"] == "auto" and medium["od_steps"] == 7000 and medium["od_batch_size"] == 1024


def test_medium_structure_at_toy_size_computes_every_claim(tmp_path):
    from icml26.results import load_result, save_result

    tiny = {"steps": 8, "joint_steps": 8, "od_steps": 4, "n_train": 200, "n_test": 120, "mmd_eval_n": 100,
            "jac_eval_n": 20, "ot_samples": 100, "od_n_train": 200, "od_n_test": 60}  # plumbing, not claims
    res = E.run({**E.CONFIGS["medium"], **E.TOY, **tiny, "scale": "medium"})
    kinds = {c.id: c.kind for c in res.claims}
    assert [c.id for c in res.claims][:6] == ["C1", "R2", "C2", "C3", "C3-sanity", "C4"]
    assert {k for k, v in kinds.items() if v == "gate"} == {"C1", "R2", "C2", "C3", "C4"}
    assert kinds["C3-sanity"] == "sanity"
    assert {k for k, v in kinds.items() if v == "report"} == {"R1", "R2b", "R3", "R4", "R5", "R6"}
    for c in res.claims:
        assert c.verdict in ("held", "not held", "inconclusive", "measured")
        if c.gate and c.id != "C3":  # one seed bounds nothing: inconclusive, saying what would decide it
            assert c.verdict == "inconclusive" and c.decision.hint, c.id
    assert res.claims[3].measured["n_seeds"]["dm_anchor_joint"] == E.TOY["c3_seeds"]
    save_result(res, tmp_path)
    back = load_result(tmp_path)
    assert {"learned_vs_true.png", "jacobian_support.png"} <= set(back.figures)
    assert [c.verdict for c in back.claims] == [c.verdict for c in res.claims]
