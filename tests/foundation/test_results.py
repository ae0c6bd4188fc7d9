import json

import numpy as np
import pytest

from icml26.results import Claim, Result, config_hash, load_result, save_result


def make_result(**kw):
    r = Result(slug="x", scale="smoke", config={"seed": 0, "lr": 1e-3, "arms": ["a", "b"]}, **kw)
    r.claims.append(Claim("A", "statement", "metric", {"m": np.float64(0.25), "v": np.array([1.0, 2.0])},
                          ">= 0.2", np.bool_(True)))
    r.claims.append(Claim("B", "other", "metric", 0.1, "<= 0.05", 0.1 <= 0.05, gate=False, details="why"))
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
    assert back.config_hash == r.config_hash
    assert back.gates_held  # only claim A gates
    assert load_result(tmp_path / "out").slug == "x"  # folder path works too


def test_claim_values_are_plain_json_types():
    c = Claim("A", "s", "m", np.float32(2.0), "t", np.bool_(False))
    assert type(c.held) is bool and type(c.measured) is float


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
    claims.append(Claim("A", "s", "m", 1.0, "> 0", True))
    assert r.claims is claims and len(r.claims) == 1
    r2 = Result(slug="x", scale="smoke", config={}, claims=[{"id": "B", "statement": "s", "metric": "m",
                                                            "measured": 2, "threshold": "t", "held": False}])
    assert isinstance(r2.claims[0], Claim) and r2.claims[0].held is False
