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
    assert ids == ["C1", "C1cov", "C1pooled", "C2", "C3", "C3acc", "C4", "C4ho", "C4acc", "C5", "C5r", "R1", "R2",
                   "R3"]
    assert {c.id for c in res.claims if c.kind == "gate"} == {"C1", "C1cov", "C2", "C3", "C4", "C5"}
    assert {c.id for c in res.claims if c.kind == "sanity"} == {"C3acc", "C4acc", "C5r"}
    for c in res.claims:
        assert c.verdict in ("held", "not held", "inconclusive", "measured") and c.paper and c.details
        if c.kind == "gate":
            assert c.decision.text() in c.details or c.decision.text()[:40] in c.details
            if c.verdict == "inconclusive":
                assert "would decide" in c.details  # an inconclusive gate names what would decide it
    assert set(res._pending_figures) == {"auto_vs_human", "accuracy_vs_score"}
    table = res.metrics["per_responder"]
    assert table["Oracle"]["ceil_score"] == 1.0 and table["Overbroad"]["ceil_score"] == 0.0
    assert res.metrics["performance"]["responses_scored_per_s_auto"] > 0
    assert set(res.metrics["auto_unparsed_per_responder"]) == set(E.RESPONDERS)


def test_validate_config_names_the_key():
    for scale in ("smoke", "small", *(["medium"] if "medium" in E.CONFIGS else [])):
        E.validate_config({**E.CONFIGS[scale], "scale": scale})
    good = {**E.CONFIGS["small"], "scale": "small"}
    for key, bad, err in (("n_items", 2.5, ValueError), ("n_items", 3, ValueError), ("flip_prob", 1.5, ValueError),
                          ("precision_mode", "x", ValueError), ("heldout_lexicon", "yes", TypeError),
                          ("minilm", "maybe", ValueError), ("seed", -1, ValueError), ("n_boot", float("nan"), ValueError),
                          ("n_boot", 20, ValueError)):
        with pytest.raises(err, match=key):
            E.validate_config({**good, key: bad})
    with pytest.raises(ValueError, match="missing"):
        E.validate_config({"scale": "small"})
    with pytest.raises(ValueError, match="n_item"):  # a typo'd key fails before any compute
        E.validate_config({**good, "n_item": 50})
    paper = {**E.CONFIGS["paper"], "scale": "paper"}
    E.validate_config(paper)
    with pytest.raises(ValueError, match="styles"):
        E.validate_config({**paper, "styles": ["fancy"]})
    with pytest.raises(ValueError, match="n_parallel"):
        E.validate_config({**paper, "n_parallel": 0})
    with pytest.raises(ValueError, match="n_paralel"):
        E.validate_config({**paper, "n_paralel": 4})
    keys = set().union(*(set(c) for c in E.CONFIGS.values()))
    assert set(E.CONFIG_HELP) >= keys and set(E.EXPECTED_RUNTIME_S) >= set(E.CONFIGS) - {"paper"}


def test_c1_can_fail(seed_data):
    d = seed_data
    ok = _with(d, autoho_score=d["ceil_score"].copy(), autoho_cov=d["ceil_cov"].copy())
    assert all(c.verdict == "held" for c in E.claim_alignment([ok]))
    # a broken evaluator whose judgments are inverted: within r = -ceiling, far below ceiling - 0.2
    flipped = _with(d, autoho_score=1.0 - d["ceil_score"], autoho_cov=1.0 - d["ceil_cov"])
    assert all(c.verdict == "not held" for c in E.claim_alignment([flipped]))


def test_c2_can_fail(seed_data):
    d = seed_data
    # an evaluator that agrees with a flip-free human: held (the smoke sample is too small for the flipped human)
    assert E.claim_system([_with(d, auto_score=d["ceil_score"].copy(), human_score=d["ceil_score"].copy())]
                          ).verdict == "held"
    assert E.claim_system([_with(d, auto_score=1.0 - d["human_score"])]).verdict == "not held"


def _set(d, key, responder, values):
    arr = d[key].astype(float).copy()
    arr[d["responder"] == responder] = values
    return _with(d, **{key: arr})


def test_c3_broken_arm_is_not_held(seed_data):
    d = _with(seed_data, auto_score=seed_data["ceil_score"].copy())
    assert E.claim_decoupling([d])[0].verdict == "held"
    oracle = d["auto_score"][d["responder"] == "Oracle"]
    assert E.claim_decoupling([_set(d, "auto_score", "HallucinatedCitation", oracle)])[0].verdict == "not held"
    assert E.claim_decoupling([_set(d, "auto_score", "Random", 0.5)])[0].verdict == "not held"


def test_c4_can_fail(seed_data):
    d = _with(seed_data, auto_score=seed_data["ceil_score"].copy())
    assert E.claim_tradeoff([d])[0].verdict == "held"
    hall = d["auto_score"][d["responder"] == "HallucinatedCitation"]
    assert E.claim_tradeoff([_set(d, "auto_score", "ProgramAided", hall)])[0].verdict == "not held"


def test_c5_can_fail(seed_data):
    d = _with(seed_data, auto_score=seed_data["ceil_score"].copy())
    conf = d["responder"] == "Confabulating"
    # the always-YES judge gives Confabulating 0.4 more than the working judge on every item: held
    rise = _with(d, yes_score=np.where(conf, np.clip(d["auto_score"] + 0.4, 0, 1.4), d["auto_score"]))
    assert E.claim_verification([rise])[0].verdict == "held"
    assert E.claim_verification([_with(d, yes_score=d["auto_score"].copy())])[0].verdict == "not held"


def test_c5_tiny_sample_is_inconclusive(seed_data):
    keep = seed_data["item"] < 4  # 4 items per responder
    d = {k: (v[keep] if isinstance(v, np.ndarray) and v.shape[:1] == keep.shape else v) for k, v in seed_data.items()}
    d["auto_score"] = d["ceil_score"].copy()
    conf = d["responder"] == "Confabulating"
    yes = d["auto_score"].copy()
    yes[conf] = d["auto_score"][conf] + np.array([0.0, 0.45, 0.15, 0.3])  # mean rise 0.225, wide spread
    c5 = E.claim_verification([_with(d, yes_score=yes)])[0]
    assert c5.verdict == "inconclusive" and "would decide it" in c5.details and "items" in c5.details


@pytest.fixture(scope="module")
def chance_scores():
    """Auto scores of the smoke seed from an entailment judge that answers YES at random (accuracy at chance)."""
    import zlib

    from icml26.murgat import MurgatEvaluator, PronounDecontextualizer, RuleDecomposer, generate_benchmark

    class CoinJudge:
        def entails(self, fact_text, citations, media):
            key = f"{fact_text}|{[c.raw for c in citations]}|{media.key}"
            return zlib.crc32(key.encode()) % 2 == 0

    cfg = E.CONFIGS["smoke"]
    items = generate_benchmark(cfg["n_items"], seed=0)
    verifier, _ = E.train_verifier(cfg["n_train_items"], 0)
    ev = MurgatEvaluator(verifier, RuleDecomposer(), CoinJudge(), PronounDecontextualizer())
    return np.array([ev.score_response(r.text, it.media).murgat_score for _, _, it, r in E._responses(items, 0)])


def test_c2_c5_cannot_hold_when_the_judge_is_at_chance(seed_data, chance_scores):
    d = seed_data
    assert len(chance_scores) == len(d["auto_score"])
    # a judge at chance, and a judge that supports nothing (captions in a wording it lacks)
    for auto in (chance_scores, d["heldout_score"]):
        bad = _with(d, auto_score=np.asarray(auto, float))
        c2, c5 = E.claim_system([bad], n_boot=300), E.claim_verification([bad], n_boot=300)[0]
        assert c2.verdict == "not held" and c5.verdict == "not held"
        failing = {p.label for c in (c2, c5) for p in c.decision.parts if p.verdict == "not held"}
        assert failing & {"Oracle >= 0.8", "Random <= 0.15"}


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
