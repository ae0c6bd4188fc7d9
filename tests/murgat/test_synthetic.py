"""The procedural benchmark, the reference responders and the simulated human (spec §6.1-6.3)."""

import dataclasses

import numpy as np
import pytest

from icml26.murgat import (
    HELDOUT_OBSERVATION_LEXICON,
    OBSERVATION_LEXICON,
    RESPONDER_LEXICON,
    HallucinatedCitationResponder,
    OracleResponder,
    ProgramAidedResponder,
    SimulatedHuman,
    SyntheticBenchmarkConfig,
    extract_reasoning,
    generate_benchmark,
    reference_responders,
    split_sentences,
)
from icml26.murgat.data import TEMPLATE_HOLDOUT, TEMPLATES, template_ids
from icml26.murgat.judges import JUDGE_LEXICON, analyse_text


@pytest.fixture(scope="module")
def items():
    return generate_benchmark(24, seed=5)


def test_benchmark_invariants(items):
    assert [it.qtype for it in items[:4]] == ["count", "who_says", "after_sound", "attribute"]
    for it in items:
        m = it.media
        assert 40 <= m.duration <= 120 and len(it.options) == 4 and len(set(it.options)) == 4
        cast = {e.slots["agent_info"]["id"]: e.slots["agent_info"] for e in m.events if "agent_info" in e.slots}
        assert 4 <= len(cast) <= 6 and len({c["colour"] for c in cast.values()}) == len(cast)
        for e in m.events:
            assert 2 <= e.length <= 8 and 0 <= e.start < e.end <= m.duration
        speech = sorted((e.start, e.end) for e in m.events if e.slots["type"] == "speech")
        assert all(a[1] <= b[0] for a, b in zip(speech, speech[1:]))  # speech never overlaps speech
        for c in m.observations["audio"]:  # audio captions never say who speaks
            assert "shirt" not in c[2] and "top" not in c[2]
        evs = [m.event(e) for e in it.evidence]
        if it.qtype == "count":
            assert int(it.options["ABCD".index(it.answer)]) == len(evs)
        if it.qtype == "who_says":
            assert {e.modality for e in evs} == {"audio", "visual"}


def test_generator_is_deterministic_and_validates():
    a, b = generate_benchmark(5, seed=1), generate_benchmark(5, seed=1)
    assert [x.to_dict() for x in a] == [x.to_dict() for x in b]
    assert generate_benchmark(5, seed=2)[0].to_dict() != a[0].to_dict()
    with pytest.raises(ValueError, match="n_items"):
        generate_benchmark(0)
    with pytest.raises(ValueError, match="n_items"):
        generate_benchmark(2.5)
    with pytest.raises(ValueError, match="n_characters"):
        generate_benchmark(2, config=SyntheticBenchmarkConfig(n_characters=(2, 3)))
    with pytest.raises(ValueError, match="question_types"):
        generate_benchmark(2, config=SyntheticBenchmarkConfig(question_types=("vibes",)))
    fig = generate_benchmark(3, seed=0, config=SyntheticBenchmarkConfig(modalities=("visual", "audio", "figure")))
    assert all("figure" in it.media.observations for it in fig)


def test_heldout_lexicon_changes_only_the_captions():
    base = generate_benchmark(6, seed=4)
    held = generate_benchmark(6, seed=4, config=dataclasses.replace(SyntheticBenchmarkConfig(),
                                                                    observation_lexicon=HELDOUT_OBSERVATION_LEXICON))
    for a, b in zip(base, held):
        assert (a.question, a.options, a.answer, a.evidence) == (b.question, b.options, b.answer, b.evidence)
        assert a.media.observations != b.media.observations


def test_lexicons_are_disjoint_where_the_study_needs_it():
    judge_forms = {f for _, forms in JUDGE_LEXICON.values() for f in forms}
    for table in (HELDOUT_OBSERVATION_LEXICON.actions, HELDOUT_OBSERVATION_LEXICON.objects,
                  HELDOUT_OBSERVATION_LEXICON.roles):
        for words in table.values():
            for w in words:
                assert not analyse_text(w).concepts, w  # the judge knows none of the held-out words
    for key, words in RESPONDER_LEXICON.actions.items():
        assert not set(words) & set(OBSERVATION_LEXICON.actions[key])  # responders and captions differ
        for w in words + OBSERVATION_LEXICON.actions[key]:
            assert analyse_text(w).concepts, w
    assert "lifts" in judge_forms


def test_template_holdout_split():
    for kind, temps in TEMPLATES.items():
        held, train = template_ids(kind, "heldout"), template_ids(kind, "train")
        assert len(held) >= len(temps) / 3 and not set(held) & set(train)
        assert sorted(held + train) == list(range(len(temps))) and held == TEMPLATE_HOLDOUT[kind]
    it = generate_benchmark(8, seed=9)
    for r in (OracleResponder(templates="train").respond(x, i) for i, x in enumerate(it)):
        assert not any(s["heldout_template"] for s in r.trace["sentences"])


def test_responses_split_like_their_trace(items):
    for resp in reference_responders():
        for i, it in enumerate(items):
            r = resp.respond(it, np.random.default_rng(i))
            assert [s["text"] for s in r.trace["sentences"]] == split_sentences(extract_reasoning(r.text))
            assert r.text.rstrip().endswith(f"Answer: {r.trace['answer']}")


def test_responder_knobs_show_in_the_scores(items):
    human = SimulatedHuman(0.0)
    mean = {}
    for resp in reference_responders():
        sc = [human.score(resp.respond(it, np.random.default_rng(i)), it) for i, it in enumerate(items)]
        mean[resp.name] = (np.mean([s.murgat_score for s in sc]), np.mean([s.coverage for s in sc]))
    assert mean["Oracle"] == (1.0, 1.0)
    assert mean["Overbroad"][0] == 0.0 and mean["Overbroad"][1] == 1.0
    assert mean["LowCoverage"][1] < 0.6 and mean["HallucinatedCitation"][0] < 0.5
    assert 0.4 < mean["Confabulating"][0] < 0.95
    knobless = HallucinatedCitationResponder(shift_sd=0.0, wrong_modality_prob=0.0, correct_prob=1.0)
    assert np.mean([human.score(knobless.respond(it, i), it).murgat_score for i, it in enumerate(items)]) == 1.0
    found_all = ProgramAidedResponder(find_prob=1.0)
    rs = [found_all.respond(it, i) for i, it in enumerate(items)]
    assert all(r.trace["answer_correct"] for r in rs)


def test_simulated_human_flips_and_validates(items):
    r = OracleResponder().respond(items[0], 0)
    assert SimulatedHuman(0.0).score(r, items[0]).murgat_score == 1.0
    flipped = [SimulatedHuman(1.0, seed=s).score(r, items[0]) for s in range(2)]
    assert all(f.n_covered == 0 for f in flipped)  # every verifiability flipped: observations become "unverifiable"
    a, b = SimulatedHuman(0.3, seed=1).score(r, items[0]), SimulatedHuman(0.3, seed=1).score(r, items[0])
    assert a == b
    with pytest.raises(ValueError, match="item_id"):
        SimulatedHuman().score(r, items[1])
    with pytest.raises(ValueError, match="flip_prob"):
        SimulatedHuman(1.5)
    from icml26.murgat import Response

    with pytest.raises(TypeError, match="trace"):
        SimulatedHuman().score(Response(items[0].id, "m", "text"), items[0])


def test_responder_input_checks(items):
    with pytest.raises(TypeError, match="rng"):
        OracleResponder().respond(items[0], "seed")
    with pytest.raises(TypeError, match="item"):
        OracleResponder().respond({"id": 1}, 0)
    bad = HallucinatedCitationResponder(shift_sd=-1.0)
    with pytest.raises(ValueError, match="shift_sd"):
        bad.respond(items[0], 0)
    with pytest.raises(ValueError, match="templates"):
        OracleResponder(templates="some").respond(items[0], 0)
