"""Smoke run of the reproduction, the config contract, and each gate's check shown to be able to fail."""

import copy

import numpy as np
import pytest

from icml26.murgat import experiment as E
from icml26.results import Result


@pytest.fixture(scope="module")
def seed_data():
    cfg = {**E.CONFIGS["smoke"], "scale": "smoke"}
    return E.seed_job(cfg, 0)


def _with(d, **arrays):
    out = dict(d)
    out.update(arrays)
    return out


def test_smoke_run_through_run():
    cfg = copy.deepcopy(E.CONFIGS["smoke"])
    cfg["scale"] = "smoke"
    res = E.run(cfg)
    assert isinstance(res, Result) and res.slug == "murgat"
    ids = [c.id for c in res.claims]
    assert ids == ["C1", "C1cov", "C1pooled", "C2", "C3", "C3acc", "C4", "C4acc", "C5", "C5r", "R1", "R2", "R3"]
    gates = {c.id for c in res.claims if c.gate}
    assert gates == {"C1", "C1cov", "C2", "C3", "C4", "C5"}
    for c in res.claims:
        assert isinstance(c.held, bool) and c.paper and c.details
    assert set(res._pending_figures) == {"auto_vs_human", "accuracy_vs_score"}
    table = res.metrics["per_responder"]
    assert table["Oracle"]["ceil_score"] == 1.0 and table["Overbroad"]["ceil_score"] == 0.0
    assert res.metrics["performance"]["responses_scored_per_s_auto"] > 0


def test_validate_config_names_the_key():
    good = {**E.CONFIGS["small"], "scale": "small"}
    E.validate_config(good)
    for key, bad, err in (("n_items", 2.5, ValueError), ("n_items", 3, ValueError), ("flip_prob", 1.5, ValueError),
                          ("precision_mode", "x", ValueError), ("heldout_lexicon", "yes", TypeError),
                          ("minilm", "maybe", ValueError), ("seed", -1, ValueError), ("n_boot", float("nan"), ValueError)):
        with pytest.raises(err, match=key):
            E.validate_config({**good, key: bad})
    with pytest.raises(ValueError, match="missing"):
        E.validate_config({"scale": "small"})
    paper = {**E.CONFIGS["paper"], "scale": "paper"}
    E.validate_config(paper)
    with pytest.raises(ValueError, match="styles"):
        E.validate_config({**paper, "styles": ["fancy"]})
    with pytest.raises(ValueError, match="n_parallel"):
        E.validate_config({**paper, "n_parallel": 0})
    assert set(E.CONFIG_HELP) >= set(E.CONFIGS["small"]) | set(E.CONFIGS["paper"])


def test_c1_can_fail(seed_data):
    d = seed_data
    ok = _with(d, auto_score=d["ceil_score"].copy(), auto_cov=d["ceil_cov"].copy())
    assert all(c.held for c in E.claim_alignment([ok]))
    rng = np.random.default_rng(0)
    noise = _with(d, auto_score=rng.random(len(d["auto_score"])), auto_cov=rng.random(len(d["auto_cov"])))
    assert not any(c.held for c in E.claim_alignment([noise]))


def test_c2_can_fail(seed_data):
    d = seed_data
    assert E.claim_system([_with(d, auto_score=d["ceil_score"].copy())]).held
    assert not E.claim_system([_with(d, auto_score=1.0 - d["human_score"])]).held


def _set(d, key, responder, values):
    arr = d[key].astype(float).copy()
    arr[d["responder"] == responder] = values
    return _with(d, **{key: arr})


def test_c3_can_fail(seed_data):
    d = _with(seed_data, auto_score=seed_data["ceil_score"].copy())
    assert E.claim_decoupling([d])[0].held
    oracle = d["auto_score"][d["responder"] == "Oracle"]
    assert not E.claim_decoupling([_set(d, "auto_score", "HallucinatedCitation", oracle)])[0].held
    assert not E.claim_decoupling([_set(d, "auto_score", "Random", 0.5)])[0].held


def test_c4_can_fail(seed_data):
    d = _with(seed_data, auto_score=seed_data["ceil_score"].copy())
    assert E.claim_tradeoff([d])[0].held
    hall = d["auto_score"][d["responder"] == "HallucinatedCitation"]
    assert not E.claim_tradeoff([_set(d, "auto_score", "ProgramAided", hall)])[0].held


def test_c5_can_fail(seed_data):
    d = seed_data
    assert E.claim_verification([d])[0].held == (E.claim_verification([d])[0].measured["rise"] >= 0.2)
    assert not E.claim_verification([_with(d, yes_score=d["auto_score"].copy())])[0].held
    assert E.claim_verification([_with(d, auto_score=np.zeros_like(d["auto_score"]),
                                       yes_score=np.ones_like(d["auto_score"]))])[0].held


def test_seed_note_flags_undecidable_checks():
    note, decided = E._seed_note([0.31, 0.10, 0.45], 0.3)
    assert "CANNOT DECIDE" in note and not decided
    note, decided = E._seed_note([0.50, 0.51, 0.52], 0.3)
    assert decided


def test_docs(docs_example):
    ns = docs_example("murgat")
    assert 0.0 <= ns["score"].murgat_score <= 1.0


def test_module_cli_evaluate(tmp_path, capsys):
    from icml26.murgat import OracleResponder, generate_benchmark, load_responses, save_benchmark, save_responses
    from icml26.murgat.__main__ import main
    from icml26.murgat.schema import load_jsonl

    items = generate_benchmark(3, seed=2)
    save_benchmark(items, tmp_path / "b.jsonl")
    save_responses([OracleResponder().respond(it, i) for i, it in enumerate(items)], tmp_path / "r.jsonl")
    assert main(["evaluate", "--bench", str(tmp_path / "b.jsonl"), "--responses", str(tmp_path / "r.jsonl"),
                 "--out", str(tmp_path / "s.jsonl")]) == 0
    rows = load_jsonl(tmp_path / "s.jsonl")
    assert len(rows) == 3 and all(r["correct"] for r in rows) and "Oracle" in capsys.readouterr().out
    assert len(load_responses(tmp_path / "r.jsonl")) == 3
    assert main(["evaluate", "--bench", str(tmp_path / "missing.jsonl"), "--responses", str(tmp_path / "r.jsonl"),
                 "--out", str(tmp_path / "s.jsonl")]) == 2
    assert main(["evaluate", "--bench", str(tmp_path / "b.jsonl"), "--responses", str(tmp_path / "r.jsonl"),
                 "--out", str(tmp_path / "s.jsonl"), "--judge", "llm"]) == 2  # --model missing
