"""The experiment (smoke run through `run`, config validation) and the paper-scale path (DDP, parquet tables)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from icml26.common import distributed as D
from icml26.mepoi import MEPOITrainer, make_city
from icml26.mepoi import experiment as X
from icml26.mepoi.scale import labels_from_frame, run_paper, train_ddp

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def smoke():
    # the smoke configuration shrunk to what the test needs (80 POIs, 1 week, 2-epoch probes): the same code path,
    # with every arm (extra_arms defaults to on outside small)
    return X.run(dict(X.CONFIGS["smoke"], scale="smoke", n_poi=80, n_agents=30, weeks=1, d=8, window=6, max_steps=8,
                      min_visits=5, prior_batch=8, n_boot=50, probe_hidden=8, probe_max_epochs=2, probe_patience=1))


def test_smoke_run_result(smoke):
    ids = {c.id for c in smoke.claims}
    assert ids == {"C1-opening_hours", "C1-closure", "C1-busyness", "C1-function", "C1-price", "C2", "C3", "C3-zero",
                   "S1", "W1", "R-closure"}
    gates = {c.id for c in smoke.claims if c.gate}
    assert gates == {"C1-opening_hours", "C1-closure", "C1-busyness", "C1-function", "C2", "C3"}
    assert {c.id for c in smoke.claims if c.kind == "sanity"} == {"S1", "W1", "C3-zero"}
    assert all(c.verdict in ("held", "not held", "inconclusive") and c.decision.text() in c.details
               for c in smoke.claims)
    m = smoke.metrics
    assert m["world"] == "synthetic" and m["n_poi"] == 80 and m["n_visits"] > 200
    for task in ("opening_hours", "closure", "busyness", "price", "function"):
        assert set(m["scores"][task]) >= {"category", "minilm", "poi", "category+poi", "minilm+poi"}
        assert all(len(v) == 2 for v in m["scores"][task].values())
        assert all(set(f) == {"mlp", "linear"} for f in m["probe_by_family"][task].values())
        assert m["text_control_chosen"][task] in ("category", "minilm")
    assert set(m["scores"]["busyness"]) >= {"poi_lambda0", "random", "hand"}
    c3 = next(c for c in smoke.claims if c.id == "C3")
    assert c3.measured["n_sparse"] == m["n_sparse_1_5"] and "ceiling_mae" in c3.measured
    assert set(smoke._pending_figures) == {"map_mepoi", "scores", "loss_curves"}
    assert m["performance"]["encode_visits_per_s"] > 0 and m["performance"]["epoch_s"] > 0
    for tag, t in m["training"].items():  # convergence is recorded: epochs used, budget from the step budget
        assert 1 <= t["epochs_run"] <= t["max_epochs"] and t["best_epoch"] < t["epochs_run"]
        assert "val_cl" in m["loss_history"][tag][0]
    assert m["prior_spread"]["kl_anchor_curves_to_mean"] > 0


def test_validate_config_rejects_bad_values():
    good = dict(X.CONFIGS["small"], scale="small")
    X.validate_config(good)
    for key, val, err in [("seeds", [0, 0], ValueError), ("seeds", 3, TypeError), ("world", "mars", ValueError),
                          ("d", 30, ValueError), ("window", 2.5, ValueError), ("tau", float("nan"), ValueError),
                          ("text_encoder", "bert", ValueError), ("n_boot", -1, ValueError),
                          ("sigmas_km", [], TypeError), ("world", "parquet", ValueError),
                          ("max_steps", 0, ValueError), ("val_fraction", 0.9, ValueError),
                          ("device", "tpu", ValueError)]:
        with pytest.raises(err, match=key if key != "d" else "heads"):
            X.validate_config({**good, key: val})
    with pytest.raises(ValueError, match="text_model"):
        X.validate_config({**good, "text_encoder": "st", "text_model": ""})
    with pytest.raises(ValueError, match="max_step"):  # a typo'd key fails before any compute
        X.validate_config({**good, "max_step": 10})
    assert set(X.CONFIGS) == {"smoke", "small", "medium", "paper"}
    for name, cfg in X.CONFIGS.items():
        X.validate_config({**cfg, "scale": name})
    assert all(k in X.CONFIG_HELP for cfg in X.CONFIGS.values() for k in cfg)
    assert X.EXPECTED_RUNTIME_S["small"] <= 300 and X.EXPECTED_RUNTIME_S["medium"] <= 1800


def test_medium_at_toy_size_trains_one_pair_per_seed():
    cfg = {**X.CONFIGS["medium"], "world": "synthetic", "n_poi": 80, "n_agents": 30, "weeks": 1, "seeds": [0, 1],
           "text_encoder": "hashing", "d": 8, "layers": 1, "heads": 2, "ffn": 16, "window": 6, "max_steps": 8,
           "min_visits": 5, "batch_size": 32, "prior_batch": 8, "workers": 1, "n_boot": 50, "probe_hidden": 8,
           "probe_max_epochs": 2, "probe_patience": 1, "scale": "medium",
           "extra_arms": False}  # the report-only arms are the smoke run's (test_smoke_run_result); this test is the pairing
    res = X.run(cfg)
    assert set(res.metrics["training"]) == {"lambda1_seed0", "lambda0_seed0", "lambda1_seed1", "lambda0_seed1"}
    assert res.scale == "medium" and all(c.verdict in ("held", "not held", "inconclusive") for c in res.claims)


def test_paper_config_file_matches():
    assert json.loads((ROOT / "configs/paper/mepoi/paper.json").read_text()) == X.CONFIGS["paper"]
    X.validate_config({**X.CONFIGS["paper"], "scale": "paper"})


def test_train_ddp_single_process_equals_trainer_fit():
    pois, visits, _ = make_city(1, n_poi=60, n_agents=12, weeks=1)
    params = dict(d=8, layers=1, heads=2, ffn=16, window=6, epochs=2, batch_size=4, min_visits=5, prior_batch=4,
                  optimizer="adamw", absolute_time_days=7.0, seed=2)
    a = MEPOITrainer(**params).fit(visits, pois).embeddings_
    b = train_ddp(visits, pois, params)["embeddings"]
    np.testing.assert_array_equal(a, b)


@pytest.mark.slow  # ~15-45 s (two processes importing torch, pandas, scikit-learn): run with -m slow
def test_train_ddp_two_gloo_ranks_end_identical(tmp_path):
    proc = D.launch_local(Path(__file__).with_name("ddp_scale.py"), [tmp_path], nproc=2, timeout=240)
    assert proc.stdout.count("world 2 history") == 1  # rank-0-only logging
    r0, r1 = torch.load(tmp_path / "rank0.pt"), torch.load(tmp_path / "rank1.pt")
    assert r0.keys() == r1.keys() and "poi.table.weight" in r0
    for k in r0:
        assert torch.equal(r0[k], r1[k]), k
    torch.manual_seed(0)  # the same seed builds the same initial model in every rank: training moved it
    pois, _, _ = make_city(0, n_poi=60, n_agents=12, weeks=1)
    from icml26.mepoi.data import POITable
    from icml26.mepoi.model import MEPOI

    init = MEPOI(60, len(POITable.from_frame(pois).categories), d=8, layers=1, heads=2, ffn=16).state_dict()
    enc = [k for k in init if k.startswith("encoder.") and k in r0]
    assert enc and any(not torch.equal(init[k], r0[k]) for k in enc)  # the encoder trained away from its seeded init


def test_paper_path_end_to_end_on_parquet_tables(tmp_path):
    pois, visits, labels = make_city(2, n_poi=80, n_agents=20, weeks=1)
    lab = pd.DataFrame({"poi_id": pois["poi_id"], "opening_hours": list(labels["opening_hours"]),
                        "closure": labels["closure"], "busyness": list(labels["busyness"]),
                        "function": labels["function"]})
    t0 = pd.Timestamp("2024-01-01")  # a Monday: hours since Monday 00:00 -> datetimes
    v = visits.assign(arrival=t0 + pd.to_timedelta(visits["arrival"], unit="h"),
                      departure=t0 + pd.to_timedelta(visits["departure"], unit="h"))
    paths = {}
    for name, df in (("visits", v), ("pois", pois), ("labels", lab.iloc[::-1])):
        paths[f"{name}_path"] = str(tmp_path / f"{name}.parquet")
        df.to_parquet(paths[f"{name}_path"])
    cfg = {**X.CONFIGS["paper"], **paths, "seeds": [0, 1], "text_encoder": "hashing", "device": "cpu",
           "d": 8, "layers": 1, "heads": 2, "ffn": 16, "window": 6, "batch_size": 8, "epochs": 1, "min_visits": 5,
           "optimizer": "adamw", "lr": 1e-3, "absolute_time_days": 7.0, "embedding_init_std": 0.1,
           "probe_hidden": 8, "probe_max_epochs": 2, "probe_patience": 1, "out_dir": str(tmp_path / "art"),
           "scale": "paper"}
    res = X.run(cfg)
    assert {c.id for c in res.claims} == {"C1-opening_hours", "C1-closure", "C1-busyness", "C1-function", "C2",
                                          "C3"}
    assert np.load(tmp_path / "art" / "embeddings_lambda1.npy").shape == (80, 8)
    got = labels_from_frame(lab.iloc[::-1], pois)  # rows re-aligned to the POI table
    np.testing.assert_array_equal(got["function"], labels["function"])
    with pytest.raises(ValueError, match="labels_path"):
        run_paper({**cfg, "labels_path": ""})
    with pytest.raises(ValueError, match="no row"):
        labels_from_frame(lab.iloc[1:], pois)
