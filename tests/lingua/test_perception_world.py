"""Perception (spec 2.1 / section 8), the synthetic world (6.1) and the symbolic backends."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.lingua import (ActivitySpec, KitchenWorld, LinguaConfig, RandomProjectionEncoder, SymbolicCaptioner,
                           SymbolicDetector, WorldConfig, perceive, select_frames, uniform_indices)
from icml26.lingua.text import has_continuity_marker


class ConstCaptioner:
    def caption(self, frame, detections):
        return "the person stands"


def test_static_noisy_video_keeps_only_frame_zero():
    rng = np.random.default_rng(0)
    base = rng.random((1, 12, 12, 3))
    frames = base + 0.01 * rng.standard_normal((40, 12, 12, 3))
    p = perceive(frames, RandomProjectionEncoder(64, seed=1), None, ConstCaptioner(), fps=5)
    assert p.kept_idx == [0] and p.reasons == ["first"] and p.n_caption_calls == 1
    assert p.retention == pytest.approx(1 / 40)


@pytest.mark.parametrize("k", [1, 3, 5])
def test_k_abrupt_changes_keep_k_plus_one_frames(k):
    rng = np.random.default_rng(k)
    scenes = rng.random((k + 1, 10, 10, 3))
    cuts = sorted(rng.choice(np.arange(2, 50), size=k, replace=False))
    seg = np.searchsorted(cuts, np.arange(50), side="right")
    frames = scenes[seg] + 0.005 * rng.standard_normal((50, 10, 10, 3))
    p = perceive(frames, RandomProjectionEncoder(64, seed=0), None, ConstCaptioner(), fps=5)
    assert p.kept_idx == [0, *cuts]


def test_affordance_set_changes_keep_frames():
    E = np.ones((6, 4))
    sets = [frozenset(), frozenset({"cup"}), frozenset({"cup"}), frozenset(), frozenset(), frozenset({"pan"})]
    kept, deltas, reasons = select_frames(E, sets, 0.15)
    assert kept == [0, 1, 3, 5] and reasons == ["first", "affordance", "affordance", "affordance"]
    assert deltas[0] == 1.0 and np.allclose(deltas[1:], 0.0)
    with pytest.raises(ValueError, match="affordance_sets"):
        select_frames(E, sets[:3])


def test_uniform_indices():
    assert uniform_indices(10, 5) == [1, 3, 5, 7, 9]
    assert uniform_indices(3, 3) == [0, 1, 2]
    with pytest.raises(ValueError, match="budget"):
        uniform_indices(10, 0)
    with pytest.raises(ValueError, match="budget"):  # never silently capped at n_frames
        uniform_indices(3, 10)


def test_world_is_deterministic_and_well_formed():
    world = KitchenWorld(seed=3)
    v1, q1 = world.video(2)
    v2, q2 = KitchenWorld(seed=3).video(2)
    assert np.array_equal(v1.frames, v2.frames) and [q.question for q in q1] == [q.question for q in q2]
    assert v1.frames.dtype == np.float32 and v1.frames.shape[1:] == (24, 24, world.n_channels)
    assert 35 <= v1.duration <= 90
    kinds = [q.meta["kind"] for q in q1]
    assert kinds.count("causal") == 2 and kinds.count("brief") == 2 and len(q1) == 6
    for q in q1:
        assert len(q.options) == 5 and len(set(q.options)) == 5 and 0 <= q.answer_idx < 5
        (s, e), = q.gt_spans
        assert 0 <= s < e <= v1.duration
    brief = [e for e in v1.meta["events"] if e["brief"]]
    assert len({e["activity"] for e in brief}) >= 2 and all(0.7 <= e["t_e"] - e["t_s"] <= 1.3 for e in brief)


def test_goals_share_no_word_with_captions_or_objects(world):
    from icml26.lingua.text import tokens

    words = set(world.objects) | {t for v in world.lexicon.verbs for t in tokens(v)}
    for a in world.config.activities:
        assert not set(tokens(a.goal)) & words, a.goal


def test_custom_domain_without_code_changes():
    acts = [ActivitySpec("brew", "to wake up", [("grind", "beans", 3.0), ("ring", "bell", 1.0)],
                         synonyms={"grind": ["mills"]}),
            ActivitySpec("read", "to relax", [("open", "book", 2.0), ("turn", "page", 1.0)]),
            ActivitySpec("sweep", "to tidy up", [("grab", "broom", 2.0), ("sweep", "floor", 4.0)])]
    cfg = WorldConfig(activities=acts, n_activities=(2, 3), min_brief=1, n_causal=1, n_brief=1, n_options=3)
    w = KitchenWorld(cfg, seed=0)
    v, qs = w.video(0)
    assert "mills" in w.lexicon.verbs["grind"] and v.frames.shape[-1] == w.n_channels
    assert {q.meta["kind"] for q in qs} >= {"causal", "brief"}
    cap = SymbolicCaptioner(w, error_rate=0.0, seed=0)
    p = perceive(v, RandomProjectionEncoder(seed=0), SymbolicDetector(w), cap, LinguaConfig())
    assert any("bell" in c for c in p.captions)


def test_world_config_errors():
    with pytest.raises(ValueError, match="n_activities"):
        KitchenWorld(WorldConfig(n_activities=(4, 2)))
    with pytest.raises(ValueError, match="min_brief"):
        KitchenWorld(WorldConfig(min_brief=6))
    with pytest.raises(ValueError, match="mean_dur"):
        ActivitySpec("x", "g", [("open", "door", float("nan"))])
    with pytest.raises(ValueError, match="steps"):
        ActivitySpec("x", "g", [])
    with pytest.raises(ValueError, match="index"):
        KitchenWorld().video(-1)


def test_symbolic_detector_and_captioner_read_the_frames(world):
    v, _ = world.video(0)
    det, cap = SymbolicDetector(world), SymbolicCaptioner(world, error_rate=0.0, seed=0)
    e = next(ev for ev in v.meta["events"] if ev["target"])
    f = v.frames[(e["f_s"] + e["f_e"]) // 2]
    assert cap.decode(f) == (e["verb"], e["obj"], e["target"])
    labels = [d.label for d in det.detect(f)]
    assert e["obj"] in labels and e["target"] in labels
    batch = det.detect_batch(v.frames[e["f_s"]:e["f_s"] + 3])
    assert [[d.label for d in b] for b in batch] == [[d.label for d in det.detect(x)] for x in
                                                      v.frames[e["f_s"]:e["f_s"] + 3]]
    first = cap.caption(f, [])
    again = cap.caption(f, [])
    assert not has_continuity_marker(first) and has_continuity_marker(again) and again.endswith(first)
    cap.reset()
    assert not has_continuity_marker(cap.caption(f, []))


def test_captioner_error_rate_is_honoured(world):
    v, _ = world.video(0)
    e = v.meta["events"][0]
    f = v.frames[e["f_s"]]
    n = 400
    for rate, lo, hi in ((0.0, 0, 0), (0.5, 0.35, 0.65)):
        cap = SymbolicCaptioner(world, error_rate=rate, seed=1)
        wrong = 0
        for _ in range(n):
            cap.reset()
            c = cap.caption(f, [])
            wrong += not (e["obj"] in c and (e["verb"] in c or any(s.split()[0] in c for s in
                                                                   world.lexicon.surface_forms(e["verb"]))))
        assert lo <= wrong / n <= hi


def test_perception_on_world_finds_the_brief_steps(world):
    v, qs = world.video(1)
    p = perceive(v, RandomProjectionEncoder(seed=0), SymbolicDetector(world), SymbolicCaptioner(world, seed=0),
                 LinguaConfig())
    assert 0.05 < p.retention < 0.2
    t = p.kept_times
    for e in v.meta["events"]:
        assert np.any((t >= e["t_s"]) & (t < e["t_e"])), e["phrase"]


def test_perceive_rejects_bad_input():
    enc, cap = RandomProjectionEncoder(), ConstCaptioner()
    with pytest.raises(ValueError, match="frames"):
        perceive(np.zeros((0, 4, 4, 1)), enc, None, cap, fps=5)
    with pytest.raises(ValueError, match="finite"):
        perceive(np.full((3, 4, 4, 1), np.nan), enc, None, cap, fps=5)
    with pytest.raises(ValueError, match="fps"):
        perceive(np.zeros((3, 4, 4, 1)), enc, None, cap, fps=0)
    with pytest.raises(ValueError, match="fps is required"):
        perceive(np.zeros((3, 4, 4, 1)), enc, None, cap)
    with pytest.raises(ValueError, match="4-dimensional"):
        perceive(np.zeros((3, 4, 4)), enc, None, cap, fps=5)
    with pytest.raises(ValueError, match="frame_idx"):
        perceive(np.zeros((3, 4, 4, 1)), enc, None, cap, fps=5, frame_idx=[5])
    with pytest.raises(TypeError, match="captioner"):
        perceive(np.zeros((3, 4, 4, 1)), enc, None, None, fps=5)


# ------------------------------------------------------------------------------------------------ issue 35's world
def test_off_events_rate_kinds_and_what_they_do_to_perception():
    from icml26.lingua.synthetic import detection_report, occluded_frames

    clean = KitchenWorld(WorldConfig(off_event_rate=0.0), seed=2)
    v0, q0 = clean.video(1)
    assert v0.meta["off_events"] == [] and not occluded_frames(v0).any()
    busy = KitchenWorld(WorldConfig(off_event_rate=30.0), seed=2)
    v1, q1 = busy.video(1)
    kinds = {o["kind"] for o in v1.meta["off_events"]}
    assert kinds == {"camera", "lighting", "passer", "occlusion"}
    # the actions, their timing and the questions do not depend on the rate (own random stream)
    assert [e["phrase"] for e in v1.meta["events"]] == [e["phrase"] for e in v0.meta["events"]]
    assert [q.question for q in q1] == [q.question for q in q0]
    enc, cap = RandomProjectionEncoder(seed=0), SymbolicCaptioner(busy, error_rate=0.0, seed=0)
    r0 = detection_report(v0, perceive(v0, enc, SymbolicDetector(clean), cap, LinguaConfig()).kept_idx)
    r1 = detection_report(v1, perceive(v1, enc, SymbolicDetector(busy), cap, LinguaConfig()).kept_idx)
    assert r0["precision"] == 1.0 and r1["precision"] < 0.9 and r1["false_alarms_per_min"] > 0
    # an occluded action is invisible to the captioner; a lighting change is not
    during = [o["f_s"] for o in v1.meta["off_events"] if o["kind"] == "occlusion"
              and any(e["f_s"] <= o["f_s"] < e["f_e"] - 1 for e in v1.meta["events"])]
    assert during and all(cap.decode(v1.frames[f])[0] == "walk" for f in during)
    e = v0.meta["events"][0]
    f = v0.frames[(e["f_s"] + e["f_e"]) // 2]
    assert cap.decode(f + np.float32(0.06)) == cap.decode(f) == (e["verb"], e["obj"], e["target"] or "")


def test_variants_make_answers_depend_on_the_video():
    w = KitchenWorld(WorldConfig(off_event_rate=0.0), seed=4)
    answers: dict[str, set] = {}
    for i in range(12):
        _, qs = w.video(i)
        for q in qs:
            answers.setdefault(q.question, set()).add(q.options[q.answer_idx])
    assert any(len(a) > 1 for a in answers.values())  # e.g. "What did the person cut?"
    assert all(len(a) == 1 for q, a in answers.items() if q.startswith("Why"))
    with pytest.raises(ValueError, match="variants"):
        ActivitySpec("x", "g", [("open", "door", 1.0)], variants={"window": ["a"]})
    with pytest.raises(ValueError, match="off_event_mix"):
        KitchenWorld(WorldConfig(off_event_mix=(0, 0, 0, 0)))
