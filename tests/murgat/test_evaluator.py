"""Known answers of the MuRGAt-Score (spec §8): aggregation, precision modes, oracle judge, invariances, judges."""

import numpy as np
import pytest

from icml26.murgat import (
    AlwaysYesEntailmentJudge,
    AtomicFact,
    Event,
    LLMJudge,
    LogisticVerifiabilityJudge,
    Media,
    MurgatEvaluator,
    OracleEntailmentJudge,
    PronounDecontextualizer,
    RuleDecomposer,
    RuleVerifiabilityJudge,
    TimelineEntailmentJudge,
    attribute_fact,
    parse_citations,
    parse_yes_no,
)

MEDIA = Media(60, [Event("v", "visual", 10, 12), Event("a", "audio", 10, 12), Event("w", "visual", 20, 23)],
              {"visual": [(10, 11, "the red-shirted guy lifts the mug"), (11, 12, "the red-shirted guy lifts the mug"),
                          (20, 21, "a lady polishes the flask"), (21, 22, "a lady polishes the flask"),
                          (22, 23, "a lady polishes the flask")],
               "audio": [(10, 11, "a chime rings out"), (11, 12, "a chime rings out")]})


class ListVerifier:
    """Verifiable iff the sentence contains one of the words."""

    def __init__(self, *words):
        self.words = words

    def is_verifiable(self, sentence, context=""):
        return any(w in sentence for w in self.words)


class OneFact:
    """Each sentence is one fact carrying all its citations."""

    def decompose(self, sentence, context=""):
        from icml26.murgat import strip_citations

        return [AtomicFact(strip_citations(sentence), tuple(parse_citations(sentence)))]


def oracle(mapping):
    return OracleEntailmentJudge(mapping)


def ev(verifier, entailer, **kw):
    return MurgatEvaluator(verifier, OneFact(), entailer, **kw)


def test_coverage_and_score_known_answers():
    e = ev(ListVerifier("cup", "box"), oracle({"He lifts the cup.": ["v"], "He opens the box.": ["w"]}))
    s = e.score_response("He lifts the cup (visual, 0:10-0:12). He opens the box. So B.", MEDIA)
    assert (s.n_sentences, s.n_verifiable, s.n_covered) == (3, 2, 1)
    assert s.coverage == 0.5 and s.precision == 1.0 and s.recall == 1.0
    assert s.murgat_score == pytest.approx(0.5)  # coverage x F1 = 0.5 x 1
    assert s.sentences[1].facts[0].precision is None  # the uncited fact is excluded from P/R


def test_no_verifiable_sentence_scores_zero():
    s = ev(ListVerifier("zzz"), AlwaysYesEntailmentJudge()).score_response("Therefore B. (visual, 0:10)", MEDIA)
    assert s.n_verifiable == 0 and s.coverage == 0.0 and s.murgat_score == 0.0


def test_precision_modes_cross_modal_fact():
    j = oracle({"Someone speaks.": ["v", "a"]})
    text = "Someone speaks (audio, 0:10-0:12; visual, 0:10-0:12)."
    alce = ev(ListVerifier("speaks"), j).score_response(text, MEDIA)
    ind = ev(ListVerifier("speaks"), j, precision_mode="individual").score_response(text, MEDIA)
    assert (alce.precision, alce.recall) == (1.0, 1.0)
    assert (ind.precision, ind.recall) == (0.0, 1.0)


def test_alce_redundant_and_irrelevant_citations():
    j = oracle({"He lifts the cup.": ["v"]})
    dup = ev(ListVerifier("cup"), j).score_response("He lifts the cup (visual, 0:10-0:12; visual, 0:10-0:12).", MEDIA)
    assert dup.precision == 1.0 and dup.recall == 1.0
    half = ev(ListVerifier("cup"), j).score_response("He lifts the cup (visual, 0:10-0:12; visual, 0:40-0:44).",
                                                     MEDIA)
    assert half.precision == 0.5 and half.recall == 1.0
    # for K = 1 both modes agree
    for mode in ("alce", "individual"):
        one = ev(ListVerifier("cup"), j, precision_mode=mode).score_response("He lifts the cup (visual, 0:11).", MEDIA)
        assert (one.precision, one.recall) == (1.0, 1.0)


def test_invalid_citations_count_against_precision():
    j = oracle({"He lifts the cup.": ["v"]})
    s = ev(ListVerifier("cup"), j).score_response("He lifts the cup (visual, 0:10-0:12; visual, 0:xx).", MEDIA)
    assert s.precision == 0.5 and s.recall == 1.0 and s.coverage == 1.0
    s = ev(ListVerifier("cup"), j).score_response("He lifts the cup (visual, 5:00).", MEDIA)  # past the duration
    assert s.coverage == 1.0 and s.precision == 0.0 and s.recall == 0.0


def test_attribute_fact_calls_and_errors():
    calls = []

    def judge(subset):
        calls.append(subset)
        return subset == (0,) or 0 in subset

    p, r, singles, precise = attribute_fact(judge, [True, True, False])
    assert (p, r) == (pytest.approx(1 / 3), 1.0) and precise == [True, False, False]
    assert len(calls) == len(set(calls)) <= 1 + 2 * 3  # memoised, at most 1 + 2K calls
    with pytest.raises(ValueError, match="precision_mode"):
        attribute_fact(judge, [True], "fancy")
    with pytest.raises(ValueError, match="valid"):
        attribute_fact(judge, [])


def test_oracle_judge_rule():
    j = OracleEntailmentJudge()
    def c(t):
        return parse_citations(t)
    assert j.supports(["v"], c("(visual, 0:10-0:12)"), MEDIA)
    assert not j.supports(["v"], c("(audio, 0:10-0:12)"), MEDIA)  # right range, wrong modality
    assert not j.supports(["w"], c("(visual, 0:00-1:00)"), MEDIA)  # whole video for a 3 s event: broadness cap
    assert j.supports(["w"], c("(visual, 0:21)"), MEDIA) and j.supports(["w"], c("(visual, 0:24)"), MEDIA)
    assert not j.supports(["w"], c("(visual, 0:25)"), MEDIA)  # point beyond the 1 s tolerance
    assert not j.supports(["w"], c("(visual, 0:22-0:30)"), MEDIA)  # covers only 1/3 of the event
    assert not j.supports([], c("(visual, 0:21)"), MEDIA)  # hallucinated fact
    with pytest.raises(ValueError, match="fact_text"):
        j.entails("unknown fact", c("(visual, 0:21)"), MEDIA)
    with pytest.raises(ValueError, match="event_id"):
        j.supports(["nope"], c("(visual, 0:21)"), MEDIA)
    with pytest.raises(ValueError, match="tau_cov"):
        OracleEntailmentJudge(tau_cov=0)


def test_timeline_judge_reads_only_the_cited_modality_and_window():
    j = TimelineEntailmentJudge()
    c = parse_citations
    assert j.entails("The man in the red shirt picks up the cup", c("(visual, 0:10-0:12)"), MEDIA)
    assert not j.entails("The man in the red shirt picks up the cup", c("(audio, 0:10-0:12)"), MEDIA)
    assert not j.entails("The man in the red shirt picks up the cup", c("(visual, 0:20-0:23)"), MEDIA)
    assert not j.entails("The man in the red shirt throws the cup", c("(visual, 0:10-0:12)"), MEDIA)
    assert not j.entails("The woman in the red shirt picks up the cup", c("(visual, 0:10-0:12)"), MEDIA)
    assert j.entails("A bell rings", c("(audio, 0:11)"), MEDIA)
    assert not j.entails("A bell rings", c("(visual, 0:11)"), MEDIA)
    assert j.entails("A woman cleans the bottle", c("(visual, 0:21-0:23)"), MEDIA)
    assert not j.entails("A woman cleans the bottle", c("(visual, 0:00-0:59)"), MEDIA)  # broadness cap
    assert not j.entails("The video is nice", c("(visual, 0:21)"), MEDIA)  # unknown words must match literally
    # the judge never reads the gold events
    blind = Media(60, [], MEDIA.observations)
    assert j.entails("A woman cleans the bottle", c("(visual, 0:21-0:23)"), blind)


def test_reasoning_sentences_do_not_change_scores():
    e = MurgatEvaluator(RuleVerifiabilityJudge(), RuleDecomposer(), TimelineEntailmentJudge())
    base = "The man in the red shirt picks up the cup (visual, 0:10-0:12). A woman polishes the bottle (visual, 0:25)."
    a = e.score_response(base, MEDIA)
    b = e.score_response("Let me think about the options. " + base + " Therefore the answer is B.", MEDIA)
    assert (a.coverage, a.precision, a.recall) == (b.coverage, b.precision, b.recall)
    assert b.n_sentences == a.n_sentences + 2


def test_shifted_oracle_citations_lose_recall():
    from icml26.murgat import OracleResponder, SimulatedHuman, generate_benchmark
    from icml26.murgat.judges import LogisticVerifiabilityJudge  # noqa: F401

    items = generate_benchmark(6, seed=3)
    e = MurgatEvaluator(RuleVerifiabilityJudge(), RuleDecomposer(), TimelineEntailmentJudge(),
                        PronounDecontextualizer())
    rec, rec_shift = [], []
    import re

    from icml26.murgat import format_timestamp, parse_timestamp

    def shift(m):
        return format_timestamp(min(parse_timestamp(m.group(0)) + 30, 999))

    for i, it in enumerate(items):
        r = OracleResponder().respond(it, i)
        rec.append(e.score_response(r.text, it.media).recall)
        shifted = re.sub(r"\d+:\d\d", shift, r.text)
        big = Media(it.media.duration + 40, [], it.media.observations)
        rec_shift.append(e.score_response(shifted, big).recall)
        assert SimulatedHuman(0.0).score(r, it).murgat_score == 1.0
    assert np.mean(rec) > 0.9 and np.mean(rec_shift) < 0.1


def test_evaluator_is_deterministic_and_validates():
    e = MurgatEvaluator(RuleVerifiabilityJudge(), RuleDecomposer(), TimelineEntailmentJudge(),
                        PronounDecontextualizer())
    t = "The man in the red shirt picks up the cup (visual, 0:10-0:12). He picks up the cup again (visual, 0:11)."
    assert e.score_response(t, MEDIA) == e.score_response(t, MEDIA)
    with pytest.raises(ValueError, match="text"):
        e.score_response(None, MEDIA)
    with pytest.raises(ValueError, match="text"):
        e.score_response(b"bytes", MEDIA)
    with pytest.raises(TypeError, match="media"):
        e.score_response(t, {"duration": 5})
    e.precision_mode = "strict"  # attribute assignment bypasses __init__: still checked
    with pytest.raises(ValueError, match="precision_mode"):
        e.score_response(t, MEDIA)
    with pytest.raises(ValueError, match="precision_mode"):
        MurgatEvaluator(RuleVerifiabilityJudge(), RuleDecomposer(), TimelineEntailmentJudge(), precision_mode="x")
    with pytest.raises(TypeError, match="entailer"):
        MurgatEvaluator(RuleVerifiabilityJudge(), RuleDecomposer(), object())


def test_pronoun_decontextualizer_is_forward_only():
    d = PronounDecontextualizer()
    t = "The man in the red shirt picks up the cup. He drops it. The woman in the blue shirt waves. She says \"he left\"."
    out = d.rewrite(t)
    assert "The man in the red shirt drops it." in out
    assert "The woman in the blue shirt says \"he left\"" in out  # quotes untouched
    assert d.rewrite("He waves. The man in the red shirt smiles.") == "He waves. The man in the red shirt smiles."


def test_rule_decomposer_propagates_citations():
    d = RuleDecomposer()
    f = d.decompose("A bell rings (audio, 0:10) and right after, the man in the red shirt picks up the cup "
                    "(visual, 0:11-0:12).")
    assert [x.text for x in f] == ["A bell rings", "The man in the red shirt picks up the cup"]
    assert [[c.raw for c in x.citations] for x in f] == [["audio, 0:10"], ["visual, 0:11-0:12"]]
    f = d.decompose("The video shows that the chef, who wears a hat, picks up the cup (visual, 0:11).")
    assert [x.text for x in f] == ["The chef wears a hat", "The chef picks up the cup"]
    assert all(len(x.citations) == 1 for x in f)
    f = d.decompose("The man in the red shirt picks up the cup and wears a hat (visual, 0:11).")
    assert [x.text for x in f] == ["The man in the red shirt picks up the cup", "The man in the red shirt wears a hat"]
    assert d.decompose("Someone says \"salt and pepper\" (audio, 0:10).")[0].text == 'Someone says "salt and pepper"'
    assert d.decompose("People usually lift cups.")[0].citations == ()


def test_learned_verifier_and_fast_path():
    X = ["The man lifts the cup (visual, 0:01).", "A bell rings (audio, 0:02).", "A woman says \"hi\".",
         "Therefore the answer is B.", "Bells usually mark the time.", "Let me think step by step."]
    y = [1, 1, 1, 0, 0, 0]
    j = LogisticVerifiabilityJudge().fit(X, y)
    for s in X + ["The woman lifts the bell.", "So the answer is A.", ""]:
        assert j._proba_one(s) == pytest.approx(float(j.predict_proba([s])[0]), abs=1e-9)
    assert j.is_verifiable("The man lifts the cup.") and not j.is_verifiable("Therefore the answer is C.")
    with pytest.raises(ValueError, match="both classes"):
        LogisticVerifiabilityJudge().fit(X[:3], [1, 1, 1])
    with pytest.raises(ValueError, match="labels"):
        LogisticVerifiabilityJudge().fit(X, [1, 0])
    with pytest.raises(ValueError, match="not fitted"):
        LogisticVerifiabilityJudge().is_verifiable("x")
    j.set_params(C=-1.0)
    with pytest.raises(ValueError, match="C"):
        j.fit(X, y)
    with pytest.raises(ValueError, match="parameter"):
        j.set_params(gamma=1)


def test_parse_yes_no_robust():
    assert parse_yes_no("YES") is True and parse_yes_no("no.") is False
    assert parse_yes_no('{"answer": "YES"}') is True and parse_yes_no('```json\n{"label": "no"}\n```') is False
    assert parse_yes_no('{"label": true}') is True
    assert parse_yes_no("Answer: no") is False and parse_yes_no("<think>yes?</think> No") is False
    assert parse_yes_no("I hear a piano") is None  # the official endswith("no") would say NO
    assert parse_yes_no("eyes") is None and parse_yes_no("garbage") is None and parse_yes_no(None) is None


def test_llm_judge_with_stub_generators():
    c = parse_citations("(visual, 0:10-0:12)")
    for reply, want in (("YES", True), ("NO", False), ('{"answer": "YES"}', True), ("%%garbage%%", False),
                        ("piano", False)):
        j = LLMJudge(lambda m, r=reply: r)
        assert j.entails("The man picks up the cup", c, MEDIA) is want
        assert j.is_verifiable("The man picks up the cup", "") is want
        assert j.n_unparsed == (2 if reply in ("%%garbage%%", "piano") else 0)
    seen = []
    j = LLMJudge(lambda m: seen.append(m) or "YES", cache={})
    j.entails("The man picks up the cup", c, MEDIA)
    j.entails("The man picks up the cup", c, MEDIA)
    assert len(seen) == 1 and "lifts the mug" in seen[0][0]["content"] and "chime" not in seen[0][0]["content"]
    # decomposition: bullet lines with citations, fallback to the sentence
    j = LLMJudge(lambda m: "- A man lifts a cup (visual, 0:10)\n- A man smiles (visual, 0:11)")
    facts = j.decompose("A man lifts a cup and smiles (visual, 0:10).")
    assert [f.text for f in facts] == ["A man lifts a cup", "A man smiles"] and facts[1].citations[0].start == 11
    facts = LLMJudge(lambda m: "???").decompose("A man smiles (visual, 0:10).")
    assert [f.text for f in facts] == ["A man smiles."] and facts[0].citations[0].start == 10
    # a rewrite that drops a citation falls back to the original text
    assert LLMJudge(lambda m: "He smiles.").rewrite("He smiles (visual, 0:10).") == "He smiles (visual, 0:10)."
    with pytest.raises(TypeError, match="generate_fn"):
        LLMJudge("not callable")
    with pytest.raises(ValueError, match="prompts"):
        LLMJudge(lambda m: "", prompts={"nope": "x"})


def test_evaluator_with_llm_judge_end_to_end():
    j = LLMJudge(lambda m: "YES")
    s = MurgatEvaluator(j, j, j, j).score_response("Reasoning: The man lifts the cup (visual, 0:10).\nAnswer: A", MEDIA)
    assert s.murgat_score == 1.0 and s.n_judge_calls == 1


TIMER = Media(30, [], {"visual": [(5, 6, "a lady lifts the mug")], "audio": [(4, 5, "a timer beeps"),
                                                                           (5, 6, "a timer beeps")]})


def test_unreadable_sentences_are_counted_never_dropped():
    text = "Reasoning: A timer beeps (audio, 0:04-0:06). The woman picks up the cup (visual, 0:05).\nAnswer: A"
    ev = MurgatEvaluator(RuleVerifiabilityJudge(), RuleDecomposer(), TimelineEntailmentJudge())
    s = ev.score_response(text, TIMER)
    # the timer sentence is outside the rule verifier's vocabulary: still counted (verifiable), and reported
    assert s.n_verifiable == 2 and s.n_covered == 2 and s.sentences[0].verifiable
    roles = sorted(u["role"] for u in s.unparsed)
    assert roles == ["entailer", "verifier"] and s.n_unparsed == 2
    assert all("timer" in u["reason"] for u in s.unparsed) and "timer" in s.sentences[0].unparsed
    assert s.sentences[0].facts[0].recall == 1.0  # matched literally in the cited (audio) captions
    assert s.to_dict(trace=False)["n_unparsed"] == 2
    with pytest.raises(ValueError, match="timer"):
        MurgatEvaluator(RuleVerifiabilityJudge(), RuleDecomposer(), TimelineEntailmentJudge(),
                        strict=True).score_response(text, TIMER)
    old = MurgatEvaluator(RuleVerifiabilityJudge(unknown="unverifiable"), RuleDecomposer(),
                          TimelineEntailmentJudge()).score_response(text, TIMER)
    assert old.n_verifiable == 1 and old.n_unparsed == 1 and "unverifiable" in old.unparsed[0]["reason"]
    with pytest.raises(ValueError, match="unknown"):
        RuleVerifiabilityJudge(unknown="maybe")
    with pytest.raises(TypeError, match="strict"):
        MurgatEvaluator(RuleVerifiabilityJudge(), RuleDecomposer(), TimelineEntailmentJudge(), strict="yes")
    # a readable response reports nothing
    assert ev.score_response("The woman picks up the cup (visual, 0:05).", TIMER).n_unparsed == 0


def test_unparsed_counts_reach_the_dataset_report():
    from icml26.murgat import BenchmarkItem, Response

    it = BenchmarkItem("q", TIMER, "What beeps?", ["a timer", "b", "c", "d"], "A", [], "count")
    ev = MurgatEvaluator(RuleVerifiabilityJudge(), RuleDecomposer(), TimelineEntailmentJudge())
    rep = ev.score_dataset([it], [Response("q", "m", "Reasoning: A timer beeps (audio, 0:05).\nAnswer: A")])
    assert rep.means()["n_unparsed"] == 2 and rep.per_model()["m"]["n_unparsed"] == 2
    assert rep.to_json()[0]["n_unparsed"] == 2


def test_learned_verifier_reports_sentences_it_has_no_word_for():
    j = LogisticVerifiabilityJudge().fit(["The man lifts the cup.", "Therefore the answer is B."], [1, 0])
    assert j.parse_problem("The man lifts the cup (visual, 0:01).") == ""
    assert "intercept" in j.parse_problem("Zebras gallop.")
