"""Smoke run of the reproduction: structure of the Result and computed claims."""

import copy

from icml26.matching_bandits import experiment
from icml26.results import Result


def test_smoke_run_structure():
    cfg = copy.deepcopy(experiment.CONFIGS["smoke"])
    cfg["scale"] = "smoke"
    res = experiment.run(cfg)
    assert isinstance(res, Result) and res.slug == "matching_bandits"
    ids = [c.id for c in res.claims]
    assert ids == ["C1", "C1-random", "C2", "C3", "C4", "C4-random", "E3", "G"]
    assert [c.kind for c in res.claims] == ["gate", "sanity", "gate", "gate", "gate", "sanity", "report", "report"]
    for c in res.claims:
        assert c.verdict in ("held", "not held", "inconclusive") and c.measured
    table = res.metrics["median_over_seeds"]
    assert table["E1/oracle"]["R(T)"] == 0.0 and table["E1/oracle"]["I(T)"] == 0.0
    assert table["E1/random"]["R(T)"] > 0
    assert set(res._pending_figures) == {"regret_vs_T", "instability_adversarial", "refine_rounds_vs_gap"}


def test_configs_contract():
    for scale, cfg in experiment.CONFIGS.items():
        assert isinstance(cfg["seed"], int)
        for name, spec in cfg["instances"].items():
            assert spec["policies"], name


def test_paper_config_code_path_runs_on_a_tiny_horizon():
    cfg = copy.deepcopy(experiment.CONFIGS["paper"])
    cfg.update(scale="paper", T=40, n_seeds=1, backend="processes", workers=1)
    cfg["instances"] = {k: cfg["instances"][k] for k in ("E2_gap0.02", "E4_pessimal")}
    res = experiment.run(cfg)
    assert res.metrics["median_over_seeds"]["E4_pessimal/oracle"]["R(T)"] == 0.0
    assert res.metrics["median_over_seeds"]["E4_pessimal/random"]["I(T)"] > 0


def test_backends():
    import pytest

    pytest.importorskip("joblib")
    cfg = copy.deepcopy(experiment.CONFIGS["smoke"])
    cfg.update(scale="smoke", T=30, n_seeds=1, backend="joblib", workers=1)
    cfg["instances"] = {"E1": dict(cfg["instances"]["E1"], policies=["greedy", "random"])}
    res = experiment.run(cfg)
    assert res.metrics["median_over_seeds"]["E1/random"]["R(T)"] > 0
    cfg["backend"] = "carrier-pigeon"
    with pytest.raises(ValueError, match="backend"):
        experiment.run(cfg)


def test_medium_config_runs_at_toy_size():
    """The medium scale (C2 on many markets) is the small experiment with more C2 markets: run it at toy size."""
    cfg = copy.deepcopy(experiment.CONFIGS["medium"])
    assert cfg["c2_seeds"] > experiment.CONFIGS["small"]["c2_seeds"]
    cfg.update(scale="medium", T=60, n_seeds=2, c2_seeds=4, workers=1)
    cfg["instances"] = {"E1": cfg["instances"]["E1"]}
    res = experiment.run(cfg)
    c2 = next(c for c in res.claims if c.id == "C2")
    assert c2.measured["n_markets"] == 4 and c2.verdict in ("held", "not held", "inconclusive")
