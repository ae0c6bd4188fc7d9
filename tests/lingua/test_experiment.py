"""The reproduction: smoke run, config validation, and every gate driven through its claim function both ways
(a broken arm -> "not held", a tiny sample -> "inconclusive"), with real agents where the gate's failure case is
about the method (issue 35)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from icml26.lingua import (DenseCaptionAgent, HashingEmbedder, KitchenWorld, LinguaConfig, RandomProjectionEncoder,
                           RuleBasedSRL, SymbolicCaptioner, SymbolicDetector, WorldConfig, perceive)
from icml26.lingua import experiment as E
from icml26.lingua.baselines import RevealedAnswers, WithRevealedAnswers
from icml26.lingua.lingua import LinguaAgent
from icml26.lingua.synthetic import span_seen

# one encoder for the agents and perception calls here: its only state is the random matrix W per frame size, fixed
# by the seed, so sharing it only saves re-drawing W (12 ms per use)
ENCODER = RandomProjectionEncoder(seed=0)


def test_smoke_run():
    cfg = {**copy.deepcopy(E.CONFIGS["smoke"]), "scale": "smoke", "n_stream": 4, "window": 2, "snapshots": [0, 2],
           "n_heldout": 2}  # the least the claims accept: 2 held-out videos, windows of 2 stream videos
    res = E.run(cfg)
    ids = [c.id for c in res.claims]
    assert ids == ["C1", "C1r", "C2", "C2nc", "C2b", "C3", "C4", "C4nc", "C4g", "C4w", "C4n", "C4f", "C5", "C5alt",
                   "C5r"]
    assert {c.id for c in res.claims if c.kind == "gate"} == {"C1", "C2", "C2nc", "C2b", "C4", "C4nc"}
    assert [c.id for c in res.claims if c.kind == "sanity"] == ["C3", "C5"]  # C5: order-free by design (path off)
    assert all(c.paper and c.verdict in ("held", "not held", "inconclusive") for c in res.claims)
    assert all("inconclusive" not in c.details or "would decide" in c.details or c.kind != "gate"
               for c in res.claims if c.verdict == "inconclusive")
    assert set(res._pending_figures) == {"kept_frames", "detection_sweep", "continual_learning"}
    h = res.metrics["arms"]
    assert {"lingua", "lingua_rev", "lingua_alt", "uniform", "dense", "dense_pm1", "snap0", "stream_nolearn"} <= set(h)
    assert h["lingua"]["n"] == h["dense"]["n"] == h["uniform"]["n"] == 6 * cfg["n_heldout"]
    assert res.metrics["cost"]["dense_caption_calls"] == res.metrics["cost"]["frames"]
    assert [s["rate"] for s in res.metrics["detection_sweep_seed100"]] == [0.0, 12.0]


def test_every_config_validates_and_typos_are_refused():
    for scale, c in E.CONFIGS.items():
        cfg = {**copy.deepcopy(c), "scale": scale}
        if scale == "paper":
            cfg.update(nextgqa_csv="a.csv", nextgqa_gsub="g.json", video_dir="v", encoder_path="/m")
        E.validate_config(cfg)
    with pytest.raises(ValueError, match="n_stram"):
        E.validate_config({**E.CONFIGS["small"], "n_stram": 5})
    with pytest.raises(ValueError, match="missing"):
        E.validate_config({"scale": "small"})
    with pytest.raises(ValueError, match="nextgqa_csv"):
        E.validate_config(dict(E.CONFIGS["paper"], scale="paper"))
    assert set(E.EXPECTED_RUNTIME_S) >= {"smoke", "small"}
    assert all(k in E.CONFIG_HELP for k in E.CONFIGS["small"])


@pytest.mark.parametrize("key, value, match", [("n_stream", 1, "n_stream"), ("window", 4, "window"),
                                               ("snapshots", [7], "snapshots"), ("smollm2", "maybe", "smollm2"),
                                               ("error_rate", 1.5, "error_rate"), ("n_seeds", 2.5, "n_seeds"),
                                               ("off_event_rate", -1, "off_event_rate"),
                                               ("use_reliability", "no", "use_reliability"),
                                               ("workers", -1, "workers")])
def test_validate_config_names_the_key(key, value, match):
    cfg = {**copy.deepcopy(E.CONFIGS["smoke"]), "scale": "smoke", key: value}
    with pytest.raises((ValueError, TypeError), match=match):
        E.validate_config(cfg)


def _arms(p_l, p_d, n=600, seed=0, per_video=6):
    rng = np.random.default_rng(seed)
    return (rng.random(n) < p_l).astype(float), (rng.random(n) < p_d).astype(float), np.arange(n) // per_video


# ------------------------------------------------------------------------------------------------ C1 event recall
def _recall(world, n=4, cfg=None):
    seen, cl = [], []
    for i in range(n):
        v, qs = world.video(i)
        p = perceive(v, ENCODER, SymbolicDetector(world), SymbolicCaptioner(world),
                     cfg or LinguaConfig())
        seen += [span_seen(v, p.kept_idx, q.gt_spans) for q in qs]
        cl += [i] * len(qs)
    return np.array(seen, float), np.array(cl)


def test_event_recall_holds_in_a_clean_world_and_fails_in_an_off_event_heavy_one():
    clean = KitchenWorld(WorldConfig(off_event_rate=0.0), seed=5)
    assert E.claim_event_recall(*_recall(clean), n_boot=200).verdict == "held"
    # occlusions only, 40 per minute: the actor is hidden most of the time and question events go unseen
    heavy = KitchenWorld(WorldConfig(off_event_rate=40.0, off_event_mix=(0, 0, 0, 1)), seed=5)
    seen, cl = _recall(heavy)
    c = E.claim_event_recall(seen, cl, n_boot=200)
    assert c.verdict == "not held" and c.kind == "gate" and seen.mean() < 0.8
    tiny = E.claim_event_recall(np.array([1, 1, 0, 1.0]), np.array([0, 0, 1, 1]), n_boot=200)
    assert tiny.verdict == "inconclusive" and "would decide" in tiny.details


# ------------------------------------------------------------------------------------------------ C2 grounding
def _grounding_arrays(world, lcfg, n=4):
    """LINGUA (config lcfg) and Dense on the same videos, both with the same revealed answers (every true answer
    revealed twice beforehand, so both answer nearly every question right and the spans make the difference; a
    question text that recurs with another answer in another video is left to the agents)."""
    emb, srl = HashingEmbedder(), RuleBasedSRL(world.lexicon)
    mem = RevealedAnswers()
    vids = [world.video(i) for i in range(n)]
    for _, qs in vids:
        for q in qs:
            mem.add(q.question, q.options[q.answer_idx])
            mem.add(q.question, q.options[q.answer_idx])
    lingua = WithRevealedAnswers(LinguaAgent(lcfg, encoder=ENCODER,
                                             detector=SymbolicDetector(world), embedder=emb, srl=srl), mem)
    out = {"gl": [], "gd": [], "al": [], "ad": [], "cl": []}
    from icml26.lingua.metrics import best_iou_iop

    for i, (v, qs) in enumerate(vids):
        lingua.ingest(perceive(v, lingua.encoder, lingua.detector, SymbolicCaptioner(world, seed=i), lcfg))
        dense = WithRevealedAnswers(DenseCaptionAgent(SymbolicCaptioner(world, seed=i), embedder=emb, srl=srl), mem)
        dense.observe(v)
        for q in qs:
            for key, agent in (("l", lingua), ("d", dense)):
                r = agent.answer(q.question, q.options)
                ok = float(r.option_index == q.answer_idx)
                out["a" + key].append(ok)
                out["g" + key].append(ok * (best_iou_iop(r.span, q.gt_spans)[0] >= 0.5))
            out["cl"].append(i)
    return {k: np.array(x, float) for k, x in out.items()}


def test_dense_with_the_same_answers_closes_the_gap_when_memory_is_disabled(world):
    a = _grounding_arrays(world, LinguaConfig(use_merging=False, use_procedural=False), n=4)
    assert a["al"].mean() >= 0.9 and a["ad"].mean() >= 0.9  # the revealed answers decide nearly every answer
    c = E.claim_grounding(a["gl"], a["gd"], a["al"], a["ad"], a["cl"], 200)
    assert c.verdict == "not held" and c.decision.parts[0].verdict == "not held"
    gl, gd, cl = _arms(0.6, 0.5, n=12, per_video=6)
    tiny = E.claim_grounding(gl, gd, gl, gl, cl, 200)
    assert tiny.verdict == "inconclusive" and "would decide" in tiny.details


def test_uniform_gate_both_ways():
    rl = np.ones(600)
    ru, _, cl = _arms(0.6, 0, seed=2)
    assert E.claim_uniform(rl, ru, cl, 200).verdict == "held"
    assert E.claim_uniform(ru, ru, cl, 200).verdict == "not held"   # uniform sampling in place of event-driven
    tiny = E.claim_uniform(np.array([1, 1, 1, 0.0]), np.array([1, 0, 1, 1.0]), np.array([0, 0, 1, 1]), 200)
    assert tiny.verdict == "inconclusive"


# ------------------------------------------------------------------------------------------------ C4 learning
def test_continual_gate_both_ways():
    fl, fn, cl = _arms(0.85, 0.65, seed=3)
    assert E.claim_continual(fl, fn, cl, 200).verdict == "held"
    assert E.claim_continual(fn, fn, cl, 200).verdict == "not held"  # the learning arm replaced by learning=False
    two_videos = np.array([0, 0, 0, 1, 1, 1])
    tiny = E.claim_continual(np.ones(6), np.array([1, 0, 1, 1, 1, 1.0]), two_videos, 200)
    assert tiny.verdict == "inconclusive" and "would decide" in tiny.details


# ------------------------------------------------------------------------------------------------ C5 order
def _train(world, order, cfg):
    agent = LinguaAgent(cfg, encoder=ENCODER, detector=SymbolicDetector(world),
                        embedder=HashingEmbedder(), srl=RuleBasedSRL(world.lexicon))
    for i in order:
        v, qs = world.video(i)
        agent.ingest(perceive(v, agent.encoder, agent.detector, SymbolicCaptioner(world, seed=i), cfg))
        for q in qs:
            r = agent.answer(q.question, q.options)
            agent.feedback(r, r.option_index == q.answer_idx, q.answer_idx)
    return agent.freeze()


def test_learned_memory_is_order_independent_without_the_reliability_path(world):
    cfg = LinguaConfig(n_min=2, mine_every=4, use_reliability=False)
    fwd, rev = _train(world, range(8), cfg), _train(world, range(7, -1, -1), cfg)
    assert {s.name: s.goal for s in fwd.procedural.active()} == {s.name: s.goal for s in rev.procedural.active()}
    answers = []
    for agent in (fwd, rev):
        got = []
        for i in (20, 21):
            v, qs = world.video(i)
            agent.ingest(perceive(v, agent.encoder, agent.detector, SymbolicCaptioner(world, seed=i), cfg))
            got += [(agent.answer(q.question, q.options).option_index) for q in qs]
        answers.append(got)
    assert answers[0] == answers[1]


def test_order_gate_both_ways():
    a, _, cl = _arms(0.9, 0, seed=5)
    assert E.claim_order(a, a.copy(), cl, 200).verdict == "held"
    b = a * (np.random.default_rng(6).random(600) > 0.2)  # the reversed stream's memory loses a fifth of the answers
    assert E.claim_order(a, b, cl, 200).verdict == "not held"
    two_videos = np.array([0, 0, 0, 1, 1, 1])
    assert E.claim_order(np.ones(6), np.array([1, 0, 1, 1, 1, 1.0]), two_videos, 200).verdict == "inconclusive"


def test_revealed_answers_lookup_and_wrapper(world):
    m = RevealedAnswers(min_count=2)
    m.add("Why did the person open the fridge?", "to chill a beverage")
    opts = ["to warm up dinner", "to chill a beverage"]
    assert m.lookup("why did the person open the fridge?", opts) is None  # seen once
    m.add("Why did the person open the fridge?", "to chill a beverage")
    assert m.lookup("Why did the person  open the fridge?", opts) == 1
    m.add("What did the person cut?", "the onion")
    m.add("What did the person cut?", "the tomato")
    m.add("What did the person cut?", "the tomato")
    assert m.lookup("What did the person cut?", ["the tomato", "the onion"]) is None  # depends on the video
    with pytest.raises(ValueError, match="answer"):
        m.add("q", "")
    v, qs = world.video(0)
    q = qs[0]
    wrong = (q.answer_idx + 1) % len(q.options)
    m2 = RevealedAnswers(min_count=1)
    m2.add(q.question, q.options[wrong])
    agent = WithRevealedAnswers(LinguaAgent(LinguaConfig(), detector=SymbolicDetector(world),
                                            captioner=SymbolicCaptioner(world, seed=0)), m2)
    agent.observe(v)
    r = agent.answer(q.question, q.options)
    assert r.option_index == wrong and r.from_revealed and r.raw_index is not None
    agent.feedback(r, r.option_index == q.answer_idx, q.answer_idx)
    assert m2.lookup(q.question, q.options) is None  # two different reveals now
    with pytest.raises(TypeError, match="agent"):
        WithRevealedAnswers(object())


def test_docs(docs_example):
    ns = docs_example("lingua")
    assert "agent" in ns and "report" in ns
