import json

import numpy as np
import pytest

from icml26.common import stats
from icml26.results import Claim, Result, ResultSchemaError, config_hash, load_result, save_result

HELD = stats.decide(0.25, stats.t_interval([0.24, 0.25, 0.26]), 0.2)


def make_result(**kw):
    r = Result(slug="x", scale="smoke", config={"seed": 0, "lr": 1e-3, "arms": ["a", "b"]}, **kw)
    r.claims.append(Claim("A", "statement", "metric", {"m": np.float64(0.25), "v": np.array([1.0, 2.0])},
                          ">= 0.2", HELD))
    r.claims.append(Claim("B", "other", "metric", 0.1, "<= 0.05", stats.exact(0.1, 0.05, "<="), kind="report",
                          details="why"))
    return r


def test_roundtrip_preserves_everything(tmp_path):
    r = make_result(metrics={"loss": np.float32(1.5), "curve": np.arange(3)}, runtime_s=1.25, notes="n")
    path = save_result(r, tmp_path / "out")
    back = load_result(path)
    assert back.slug == "x" and back.scale == "smoke" and back.runtime_s == 1.25 and back.notes == "n"
    assert back.config == r.config
    assert back.metrics == {"loss": 1.5, "curve": [0, 1, 2]}
    assert [c.id for c in back.claims] == ["A", "B"]
    assert back.claims[0].measured == {"m": 0.25, "v": [1.0, 2.0]}
    assert back.claims[0].held is True and back.claims[1].held is False and back.claims[1].gate is False
    assert back.claims[0].verdict == "held" and back.claims[0].interval == HELD.interval
    assert back.claims[1].verdict == "not held" and back.claims[1].kind == "report"
    assert back.config_hash == r.config_hash
    assert back.gates_held  # only claim A gates
    assert load_result(tmp_path / "out").slug == "x"  # folder path works too


def test_claim_values_are_plain_json_types():
    c = Claim("A", "s", "m", np.float32(2.0), "t", stats.exact(np.float32(2.0), 3.0))
    assert type(c.held) is bool and c.held is False and type(c.measured) is float


def test_claim_needs_a_decision_and_a_known_kind():
    with pytest.raises(TypeError, match="decision"):
        Claim("A", "s", "m", 1.0, "t", True)  # a bare bool is no verdict
    with pytest.raises(ValueError, match="kind"):
        Claim("A", "s", "m", 1.0, "t", HELD, kind="proof")
    with pytest.raises(ValueError, match="measured"):
        Claim("A", "s", "m", 1.0, "t", stats.measured(1.0), kind="gate")


def test_a_hand_edited_verdict_is_refused_on_load(tmp_path):
    r = make_result()
    path = save_result(r, tmp_path)
    d = json.loads(path.read_text())
    d["claims"][1]["decision"]["verdict"] = "held"  # 0.1 <= 0.05 is not held
    path.write_text(json.dumps(d))
    with pytest.raises(ResultSchemaError, match="disagrees"):
        load_result(path)
    d["claims"][1]["decision"]["verdict"] = "not held"
    d["claims"][1]["verdict"] = "held"
    path.write_text(json.dumps(d))
    with pytest.raises(ResultSchemaError, match="disagrees"):
        load_result(path)


def test_schema_1_results_read_as_inconclusive_never_held(tmp_path):
    old = {"slug": "x", "scale": "small", "config": {}, "claims": [
        {"id": "A", "statement": "s", "metric": "m", "measured": 1.0, "threshold": "t", "held": True, "gate": True}]}
    (tmp_path / "result.json").write_text(json.dumps(old))
    r = load_result(tmp_path)
    assert r.schema == 1 and r.claims[0].verdict == "inconclusive" and not r.claims[0].held
    assert "re-run" in r.claims[0].decision.hint and not r.gates_held
    from icml26.provenance import is_stale
    from icml26.registry import PAPERS

    assert is_stale(PAPERS["tie"], r)


def test_figures_are_written_before_json(tmp_path):
    import matplotlib.pyplot as plt

    r = make_result()
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    r.add_figure("curve", fig)
    save_result(r, tmp_path)
    assert (tmp_path / "curve.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((tmp_path / "result.json").read_text())["figures"] == ["curve.png"]
    assert not list(tmp_path.glob("*.tmp"))  # atomic writes leave no temp files


def test_bad_scale_and_figure_name():
    with pytest.raises(ValueError, match="scale"):
        Result(slug="x", scale="huge", config={})
    with pytest.raises(ValueError, match="figure name"):
        make_result().add_figure("a/b", object())


def test_config_hash_is_order_independent_and_sensitive():
    assert config_hash({"a": 1, "b": 2}) == config_hash({"b": 2, "a": 1})
    assert config_hash({"a": 1}) != config_hash({"a": 2})


def test_claims_list_passed_in_stays_the_results_list():
    claims = []
    r = Result(slug="x", scale="smoke", config={}, claims=claims)
    claims.append(Claim("A", "s", "m", 1.0, "> 0", stats.exact(1.0, 0.0)))
    assert r.claims is claims and len(r.claims) == 1
    r2 = Result(slug="x", scale="smoke", config={}, claims=[{"id": "B", "statement": "s", "metric": "m",
                                                            "measured": 2, "threshold": "t",
                                                            "decision": stats.exact(2, 3).to_dict()}])
    assert isinstance(r2.claims[0], Claim) and r2.claims[0].held is False and r2.claims[0].verdict == "not held"
