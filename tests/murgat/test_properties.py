"""Property tests: the public entry points return a valid answer or raise ValueError/TypeError naming the argument."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icml26.murgat import (
    Event,
    Media,
    MurgatEvaluator,
    PronounDecontextualizer,
    RuleDecomposer,
    RuleVerifiabilityJudge,
    TimelineEntailmentJudge,
    correlate,
    format_timestamp,
    generate_benchmark,
    interval_coverage,
    parse_citations,
    parse_yes_no,
    split_sentences,
    strip_citations,
    system_agreement,
    temporal_iop,
    temporal_iou,
    within_group_r,
)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MEDIA = Media(90, [Event("e", "visual", 10, 14)], {"visual": [(t, t + 1, "a lady lifts the mug") for t in range(10, 14)],
                                                  "audio": [(20, 22, 'a voice: "hello there"')]})
EVAL = MurgatEvaluator(RuleVerifiabilityJudge(), RuleDecomposer(), TimelineEntailmentJudge(), PronounDecontextualizer())

cite = st.builds(lambda m, a, b, sep: f"({m}, {format_timestamp(a)}{sep}{format_timestamp(b) if sep else ''})",
                 st.sampled_from(["visual", "audio", "Visual", "smell", "x"]), st.integers(0, 4000),
                 st.integers(0, 4000), st.sampled_from(["", "-", " - "]))
piece = st.one_of(st.text(max_size=25), cite, st.sampled_from([". ", "... ", "! ", " (see Fig. 2) ", '"', "(", ")",
                                                              " and then ", "He ", "She ", "<think>", "</think>",
                                                              "Answer: B", "\\boxed{C}", "(visual, 0:xx)"]))
texts = st.lists(piece, max_size=12).map("".join)
numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5), st.booleans(), st.none(),
                    st.text(max_size=3))


@SETTINGS
@given(texts, st.one_of(st.none(), st.floats(0, 5000)))
def test_citation_parsing_never_crashes(text, duration):
    cites = parse_citations(text, duration=duration)
    for c in cites:
        assert c.valid == (c.reason == "")
        if c.valid:
            assert 0 <= c.start <= c.end and (duration is None or c.end <= duration)
            assert c.modality in ("visual", "audio")
    out = strip_citations(text)
    assert not any(c.valid for c in parse_citations(out))
    sents = split_sentences(text)
    assert "".join("".join(sents).split()) == "".join(text.split())  # splitting loses no character


@SETTINGS
@given(texts)
def test_score_response_is_bounded(text):
    s = EVAL.score_response(text, MEDIA)
    for v in (s.coverage, s.precision, s.recall, s.f1, s.murgat_score):
        assert 0.0 <= v <= 1.0 and math.isfinite(v)
    assert s.n_covered <= s.n_verifiable <= s.n_sentences


@SETTINGS
@given(st.one_of(numbers, st.lists(numbers, max_size=3), st.tuples(numbers, numbers)), st.tuples(numbers, numbers))
def test_temporal_functions_valid_or_named_error(a, b):
    for fn, names in ((temporal_iou, ("a", "b")), (temporal_iop, ("pred", "gt"))):
        try:
            v = fn(a, b)
        except (ValueError, TypeError) as e:
            assert any(n in str(e) for n in names)
        else:
            assert 0.0 <= v <= 1.0
    try:
        v = interval_coverage([a], b)
    except (ValueError, TypeError) as e:
        assert "segments" in str(e) or "interval" in str(e)
    else:
        assert 0.0 <= v <= 1.0


@SETTINGS
@given(st.lists(st.one_of(st.floats(), st.integers(-3, 3)), max_size=8),
       st.lists(st.one_of(st.floats(), st.integers(-3, 3)), max_size=8))
def test_correlate_valid_or_named_error(a, h):
    try:
        out = correlate(a, h, n_boot=50)
    except (ValueError, TypeError) as e:
        assert "auto" in str(e) or "human" in str(e)
    else:
        for m in out.values():
            assert math.isnan(m["r"]) or -1.0 - 1e-9 <= m["r"] <= 1.0 + 1e-9
    try:
        r = within_group_r(a, h, ["g"] * len(a))
    except (ValueError, TypeError) as e:
        assert any(k in str(e) for k in ("auto", "human", "groups"))
    else:
        assert math.isnan(r) or -1.0 - 1e-9 <= r <= 1.0 + 1e-9


small = st.one_of(st.integers(-3, 4), st.floats(-3, 4), st.just(math.nan), st.booleans(), st.none(),
                  st.text(max_size=2))


@settings(max_examples=25, deadline=None)
@given(small, small)
def test_generate_benchmark_sizes(n, seed):
    try:
        items = generate_benchmark(n, seed=seed)
    except (ValueError, TypeError) as e:
        assert "n_items" in str(e) or "seed" in str(e)
    else:
        assert len(items) == n >= 1 and len({it.id for it in items}) == n


@SETTINGS
@given(numbers, st.one_of(numbers, st.just(5.0)), st.one_of(numbers, st.just(2.0)))
def test_media_and_events_validate(duration, start, end):
    try:
        m = Media(duration, [Event("e", "visual", start, end)])
    except (ValueError, TypeError) as e:
        assert any(k in str(e) for k in ("duration", "Event.start", "Event.end", "Media.events"))
    else:
        assert 0 <= m.events[0].start <= m.events[0].end <= m.duration


@SETTINGS
@given(st.dictionaries(st.sampled_from("abcdefg"), st.floats(), min_size=0, max_size=7),
       st.dictionaries(st.sampled_from("abcdefg"), st.floats(), min_size=0, max_size=7))
def test_system_agreement_valid_or_named_error(a, h):
    try:
        out = system_agreement(a, h)
    except (ValueError, TypeError) as e:
        assert "by_model" in str(e)
    else:
        assert out["n_models"] == len(a) and len(out["discordant_pairs"]) <= len(a) * (len(a) - 1) // 2


@SETTINGS
@given(st.one_of(st.text(max_size=40), st.none(), st.booleans(), st.integers()))
def test_parse_yes_no_total(reply):
    assert parse_yes_no(reply) in (True, False, None)


def test_score_dataset_rejects_bad_collections():
    items = generate_benchmark(2, seed=0)
    with pytest.raises(TypeError, match="items"):
        EVAL.score_dataset("items", [])
    from icml26.murgat import Response

    with pytest.raises(ValueError, match="item_id"):
        EVAL.score_dataset(items, [Response("nope", "m", "x")])
    with pytest.raises(ValueError, match="twice"):
        EVAL.score_dataset([items[0], items[0]], [])
    rep = EVAL.score_dataset(items, [Response(items[0].id, "m", f"Answer: {items[0].answer}")])
    assert rep.means()["accuracy"] == 1.0 and np.isnan(EVAL.score_dataset(items, []).means()["accuracy"])
    df = rep.to_dataframe()
    assert list(df["model"]) == ["m"]
