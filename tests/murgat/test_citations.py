"""Citation grammar, sentence splitting, answer extraction, temporal overlap, schema I/O (spec §8)."""

import math

import numpy as np
import pytest

from icml26.murgat import (
    BenchmarkItem,
    Event,
    Media,
    Response,
    answer_letter,
    clean_output,
    extract_answer,
    extract_reasoning,
    format_citation,
    format_citations,
    interval_coverage,
    load_benchmark,
    load_responses,
    parse_citations,
    parse_timestamp,
    save_benchmark,
    save_responses,
    split_sentences,
    strip_citations,
    temporal_iop,
    temporal_iou,
    union_length,
)


def test_parser_known_answers():
    (c,) = parse_citations("A cat sits (visual, 0:20).")
    assert (c.modality, c.start, c.end, c.valid, c.is_point) == ("visual", 20.0, 20.0, True, True)
    (c,) = parse_citations("It meows (audio, 1:20-1:30).")
    assert (c.start, c.end) == (80.0, 90.0)
    cs = parse_citations("x (visual, 0:02-0:04; visual, 0:16-0:19)")
    assert [(c.start, c.end) for c in cs] == [(2.0, 4.0), (16.0, 19.0)]
    assert parse_citations("x (visual, 1:02:03)")[0].start == 3723.0
    assert parse_citations("as shown (see Fig. 2) and (also called X)") == []
    assert parse_citations("(Visual, 0:05)")[0].modality == "visual"


@pytest.mark.parametrize("text,reason", [("(visual, 0:xx)", "parse"), ("(visual, 0:30-0:10)", "before"),
                                         ("(smell, 0:05)", "modality"), ("(visual, 0:75)", ">= 60")])
def test_invalid_citations_are_kept_as_invalid(text, reason):
    (c,) = parse_citations(text)
    assert not c.valid and reason in c.reason


def test_duration_and_allowed_modalities():
    (c,) = parse_citations("(audio, 2:00)", duration=100)
    assert not c.valid and "duration" in c.reason
    (c,) = parse_citations("(figure, 0:10)", allowed_modalities=("visual", "audio", "figure"))
    assert c.valid
    assert parse_citations("(anything, 0:10)", allowed_modalities=None)[0].valid
    with pytest.raises(ValueError, match="allowed_modalities"):
        parse_citations("(visual, 0:10)", allowed_modalities=[])
    with pytest.raises(TypeError, match="text"):
        parse_citations(None)
    with pytest.raises(ValueError, match="duration"):
        parse_citations("(visual, 0:10)", duration=float("nan"))


def test_parse_timestamp_errors():
    assert parse_timestamp("0:05") == 5.0
    for bad in ("5", "1:2:3:4", "a:10", "0:60", "1:60:00", ""):
        with pytest.raises(ValueError, match="text"):
            parse_timestamp(bad)
    with pytest.raises(TypeError):
        parse_timestamp(5)


def test_format_round_trip():
    assert format_citation("visual", 12) == "(visual, 0:12)"
    assert format_citation("audio", 62, 75) == "(audio, 1:02-1:15)"
    assert format_citations([("visual", 12, 15), ("audio", 3723, 3723)]) == "(visual, 0:12-0:15; audio, 1:02:03)"
    cs = parse_citations(format_citations([("visual", 12, 15), ("audio", 100, 104)]))
    assert [(c.modality, c.start, c.end) for c in cs] == [("visual", 12, 15), ("audio", 100, 104)]
    with pytest.raises(ValueError, match="end"):
        format_citation("visual", 10, 5)
    with pytest.raises(ValueError, match="seconds"):
        format_citation("visual", -1)


def test_strip_modes():
    s = "The bird, also called a robin (also called X), sings (audio, 0:05; visual, 0:06)."
    assert strip_citations(s) == "The bird, also called a robin (also called X), sings."
    assert strip_citations(s, mode="all_parentheticals") == "The bird, also called a robin, sings."
    assert strip_citations("It moves (visual, 0:xx).") == "It moves."  # an invalid citation is still a citation
    with pytest.raises(ValueError, match="mode"):
        strip_citations(s, mode="some")


def test_splitter_official_rules():
    assert split_sentences("A cat sits. (visual, 0:05) It leaves.") == ["A cat sits. (visual, 0:05)", "It leaves."]
    assert split_sentences("Wait... then it moves.") == ["Wait... then it moves."]
    assert split_sentences("It costs 3.5 dollars. Done!") == ["It costs 3.5 dollars.", "Done!"]
    assert split_sentences('He said "hi." (audio, 0:01) Then left.') == ['He said "hi." (audio, 0:01)', "Then left."]
    assert split_sentences("See (e.g. this one). Next") == ["See (e.g. this one).", "Next"]
    assert split_sentences("") == []


def test_reasoning_and_answer():
    t = "<think>scratch (visual, 0:01)</think>Reasoning: A man waves (visual, 0:03).\nAnswer: B"
    assert clean_output(t).startswith("Reasoning:")
    assert extract_reasoning(clean_output(t)) == "A man waves (visual, 0:03)."
    assert extract_answer(t) == "B"
    assert extract_answer("Answer: B\nso \\boxed{A} then \\boxed{C}") == "C"
    assert extract_answer("<think>Answer: D</think> Answer: A") == "A"
    assert extract_answer("no answer here") == ""
    assert extract_reasoning("just text") == "just text"
    assert answer_letter("B") == "B" and answer_letter("(c)") == "C" and answer_letter("Option D") == "D"
    assert answer_letter("B) the cup") == "B" and answer_letter("a red cup") is None
    assert answer_letter("E", n_options=4) is None
    with pytest.raises(ValueError, match="n_options"):
        answer_letter("A", 0)


def test_temporal_known_answers():
    assert temporal_iou([0, 10], [5, 15]) == pytest.approx(1 / 3)
    assert temporal_iop([0, 10], [5, 15]) == pytest.approx(0.5)
    assert temporal_iou((0, 1), (2, 3)) == 0.0 and temporal_iop((0, 1), (2, 3)) == 0.0
    assert temporal_iou((2, 7), (2, 7)) == 1.0 and temporal_iou((4, 4), (4, 4)) == 1.0
    assert temporal_iou((4, 4), (0, 10)) == 0.0 and temporal_iop((4, 4), (0, 10)) == 1.0
    assert union_length([(0, 2), (1, 3), (5, 6)]) == 4.0
    assert interval_coverage([(0, 2), (8, 20)], (0, 10)) == pytest.approx(0.4)
    assert interval_coverage([(0, 5)], (3, 3)) == 1.0 and interval_coverage([], (0, 4)) == 0.0
    assert temporal_iou(np.array([0.0, 10.0]), [5, 15]) == temporal_iou((0, 10), (5, 15))


@pytest.mark.parametrize("bad,err", [((5, 1), ValueError), ((0, math.inf), ValueError), ((1, 2, 3), ValueError),
                                     ("0-1", TypeError), ((True, 2), TypeError), (None, TypeError)])
def test_temporal_errors(bad, err):
    with pytest.raises(err, match="a"):
        temporal_iou(bad, (0, 1))


def _item():
    ev = [Event("e0", "visual", 2, 5, {"type": "action"}), Event("e1", "audio", 6, 8, {"type": "sound"})]
    media = Media(20, ev, {"visual": [(2, 3, "a guy lifts a mug")], "audio": [(6, 7, "chiming")]})
    return BenchmarkItem("q1", media, "What?", ["x", "y", "z", "w"], "c", ["e0"], "count")


def test_schema_round_trip(tmp_path):
    it = _item()
    assert it.answer == "C"
    save_benchmark([it], tmp_path / "b.jsonl")
    (back,) = load_benchmark(tmp_path / "b.jsonl")
    assert back.to_dict() == it.to_dict() and back.media.key == it.media.key
    r = Response("q1", "m", "Reasoning: x\nAnswer: C", {"k": 1})
    save_responses([r], tmp_path / "r.jsonl")
    assert load_responses(tmp_path / "r.jsonl")[0] == r


def test_schema_validation_names_the_field(tmp_path):
    with pytest.raises(ValueError, match="Event.end"):
        Event("e", "visual", 5, 2)
    with pytest.raises(ValueError, match="duration"):
        Media(0)
    with pytest.raises(ValueError, match="after the duration"):
        Media(3, [Event("e", "visual", 1, 5)])
    with pytest.raises(ValueError, match="answer"):
        BenchmarkItem("q", Media(5), "Q?", ["a", "b"], "C")
    with pytest.raises(ValueError, match="event_id"):
        BenchmarkItem("q", Media(9, [Event("e", "visual", 1, 5)]), "Q?", ["a", "b"], "A", ["nope"])
    with pytest.raises(TypeError, match="Response.text"):
        Response("q", "m", None)
    (tmp_path / "bad.jsonl").write_text('{"id": "q"}\n')
    with pytest.raises(ValueError, match="record 1"):
        load_benchmark(tmp_path / "bad.jsonl")
    (tmp_path / "bad2.jsonl").write_text("not json\n")
    with pytest.raises(ValueError, match="line 1"):
        load_benchmark(tmp_path / "bad2.jsonl")
