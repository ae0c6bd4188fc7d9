"""The reproduction: smoke run, config validation, and gates that can fail (same claim functions as the run)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from icml26.lingua import LinguaConfig, RandomProjectionEncoder, SymbolicCaptioner, SymbolicDetector, perceive
from icml26.lingua import experiment as E


def test_smoke_run():
    cfg = {**copy.deepcopy(E.CONFIGS["smoke"]), "scale": "smoke"}
    res = E.run(cfg)
    ids = [c.id for c in res.claims]
    assert ids[:5] == ["C1", "C1r", "C2", "C2b", "C3"] and "C4" in ids
    assert {c.id for c in res.claims if c.gate} == {"C1", "C2", "C2b", "C4"}
    assert all(c.paper or c.id == "C4n" for c in res.claims)
    assert set(res._pending_figures) == {"kept_frames", "continual_learning"}
    h = res.metrics["heldout"]
    assert {"lingua", "nolearn", "uniform", "dense", "dense_pm1", "snap0", "snap3"} <= set(h)
    assert h["lingua"]["n"] == h["dense"]["n"] == 12
    assert res.metrics["cost"]["dense_caption_calls"] == res.metrics["cost"]["frames"]


@pytest.mark.parametrize("key, value, match", [("n_stream", 0, "n_stream"), ("window", 4, "window"),
                                               ("snapshots", [7], "snapshots"), ("smollm2", "maybe", "smollm2"),
                                               ("error_rate", 1.5, "error_rate"), ("n_seeds", 2.5, "n_seeds"),
                                               ("workers", -1, "workers")])
def test_validate_config_names_the_key(key, value, match):
    cfg = {**copy.deepcopy(E.CONFIGS["smoke"]), "scale": "smoke", key: value}
    with pytest.raises((ValueError, TypeError), match=match):
        E.validate_config(cfg)
    with pytest.raises(ValueError, match="missing"):
        E.validate_config({"scale": "small"})
    with pytest.raises(ValueError, match="nextgqa_csv"):
        E.validate_config(dict(E.CONFIGS["paper"], scale="paper"))


def test_paired_bootstrap_ci():
    rng = np.random.default_rng(0)
    a, b = rng.random(300) < 0.7, rng.random(300) < 0.4
    m, lo, hi = E.paired_bootstrap_ci(a, b, np.arange(300) // 6, 500)
    assert m == pytest.approx(a.mean() - b.mean()) and lo < m < hi and hi - lo < 0.3
    with pytest.raises(ValueError):
        E.paired_bootstrap_ci(a, b[:10], np.arange(300))


def test_event_recall_gate_fails_when_perception_is_broken(world):
    """C1 with real perception: the default keeps every question span; a perception that keeps only frame 0 fails."""
    def recall(cfg):
        hits = []
        for i in range(2):
            v, qs = world.video(i)
            p = perceive(v, RandomProjectionEncoder(seed=0), SymbolicDetector(world), SymbolicCaptioner(world), cfg)
            hits += [E._in_span(p.kept_times, q.gt_spans) for q in qs]
        return float(np.mean(hits))

    assert E.claim_event_recall([recall(LinguaConfig())]).held
    broken = E.claim_event_recall([recall(LinguaConfig(tau_delta=1.99, affordance_trigger=False))])
    assert not broken.held and broken.gate


def _arms(p_l, p_d, n=600, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random(n) < p_l).astype(float), (rng.random(n) < p_d).astype(float), np.arange(n) // 6


def test_grounding_gate_can_fail():
    gl, gd, cl = _arms(0.8, 0.4)
    al, ad, _ = _arms(0.85, 0.7, seed=1)
    assert E.claim_grounding(gl, gd, al, ad, cl, 300).held
    assert not E.claim_grounding(gd, gd, al, ad, cl, 300).held            # no Acc@GQA gain
    assert not E.claim_grounding(gl, gd, ad - 0.2 * (ad > 0), ad, cl, 300).held  # accuracy loss > 3 points


def test_uniform_gate_can_fail_and_says_when_it_cannot_decide():
    rl = np.ones(600)
    ru, _, cl = _arms(0.6, 0, seed=2)
    ok = E.claim_uniform(rl, ru, cl, 300)
    assert ok.held and "decided" in ok.details and "cannot decide" not in ok.details
    assert not E.claim_uniform(ru, ru, cl, 300).held
    ceiling = E.claim_uniform(rl, (np.arange(600) % 10 != 0).astype(float), cl, 300)
    assert "cannot decide" in ceiling.details


def test_continual_gate_can_fail():
    fl, fn, cl = _arms(0.85, 0.65, seed=3)
    assert E.claim_continual(fl, fn, cl, 300).held
    assert not E.claim_continual(fn, fn, cl, 300).held  # the learning arm replaced by learning=False


def test_docs(docs_example):
    ns = docs_example("lingua")
    assert "agent" in ns and "report" in ns
