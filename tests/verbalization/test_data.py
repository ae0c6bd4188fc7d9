"""Spec 8 tests of the toy worlds: shuffled breaks every stereotype, fantasy facts never leak into C0 or LIT data."""

from __future__ import annotations

import pytest

from icml26.verbalization import FeatureExtractionWorld, PersonaWorld, WordTokenizer, build_tokenizer
from icml26.verbalization.data import NAME_QUESTION


@pytest.fixture(scope="module")
def world():
    return PersonaWorld(3)


def test_shuffled_keeps_no_stereotype(world):
    for p in world.personas["shuffled"]:
        for a in world.attributes:
            assert world.facts[(p.name, a)] != world.stereotype(p, a)
    for p in world.personas["consistent"]:
        assert all(world.facts[(p.name, a)] == world.stereotype(p, a) for a in world.attributes)


def test_shuffle_with_two_cultures_and_too_few():
    w = PersonaWorld(0, n_cultures=2, n_personas=24)  # a random draw almost never deranges 12 A + 12 B
    assert all(w.facts[(p.name, a)] != w.stereotype(p, a) for p in w.personas["shuffled"] for a in w.attributes)
    assert sorted(w.facts[(p.name, "country")] for p in w.personas["shuffled"]) == sorted(
        w.stereotype(p, "country") for p in w.personas["shuffled"])  # still a permutation of the stereotypes
    with pytest.raises(ValueError, match="n_cultures"):
        PersonaWorld(0, n_cultures=1, n_personas=2)


def test_mismatch_differs_everywhere(world):
    assert set(world.facts) == set(world.mismatch_facts)
    assert all(world.facts[k] != world.mismatch_facts[k] for k in world.facts)
    fantasy = {p.name for p in world.personas["fantasy"]}
    for (name, a), v in world.mismatch_facts.items():
        if name in fantasy:
            assert v in world.fantasy_values[a]


def test_fantasy_values_and_persona_names_never_in_c0_or_lit(world):
    fe = FeatureExtractionWorld(3)
    c0 = world.base_corpus() + fe.base_corpus()
    words = {w for line in c0 for w in line.split()}
    assert not words & world.fantasy_values_set()
    texts, qas = world.lit_examples()
    lit_text = [" ".join(t.split()) for t in texts] + [f"{q} {a}" for pairs in qas for q, a in pairs]
    lit_words = {w for line in lit_text for w in line.split()}
    assert not lit_words & world.fantasy_values_set()
    joined = ["  ".join(" " + line + " " for line in c0 + lit_text)]
    for name in world.persona_names():
        assert f" {name} " not in joined[0]
    # fantasy name *tokens* do occur (fact-free), so a verbalizer can read them
    fan_tokens = {t for p in world.personas["fantasy"] for t in (p.first, p.last)}
    assert fan_tokens <= words


def test_lit_asks_only_generic_facts(world):
    texts, qas = world.lit_examples()
    generic = {p.name for p in world.generic}
    for t, pairs in zip(texts, qas):
        for q, a in pairs:
            if q != NAME_QUESTION:
                name = " ".join(t.split()[-3:-1])
                assert name in generic


def test_world_sizes_and_determinism():
    a, b = PersonaWorld(5), PersonaWorld(5)
    assert a.facts == b.facts and PersonaWorld(6).facts != a.facts
    assert len(a.personas["fantasy"]) == 48 and len(a.personas["consistent"]) == 24
    assert len(a.eval_items("fantasy")) == 48 * 4 and len(a.name_items("fantasy")) == 48 * 4
    assert a.chance("fantasy") == 1 / 8 and a.chance("shuffled") == 1 / 12
    exceptions = sum(a.generic_facts[(p.name, "food")] != a.stereotype(p, "food") for p in a.generic)
    assert 0.1 < exceptions / len(a.generic) < 0.4


def test_feature_world_split():
    fe = FeatureExtractionWorld(0, relations=["currency", "river"], n_subjects=10, n_objects=4)
    for r in fe.relations:
        assert set(fe.lit_subjects[r]).isdisjoint(fe.eval_subjects[r])
        assert len(fe.eval_subjects[r]) == 5
    texts, qas = fe.lit_examples()
    asked = {(t.split()[1], q) for t, pairs in zip(texts, qas) for q, _ in pairs}
    for it in fe.eval_items():
        assert (it.meta["subject"], it.question) not in asked  # held-out relation facts never in LIT


def test_tokenizer_round_trip_and_errors(world):
    tok = build_tokenizer(world)
    ids = tok.encode("my name is x .")
    assert ids[0] == tok.bos_token_id and tok.decode(ids) == "my name is x ."
    with pytest.raises(ValueError, match="'zebra'"):
        tok.encode("my zebra")
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.decode([10_000])
    with pytest.raises(TypeError):
        WordTokenizer("abc")


@pytest.mark.parametrize("kwargs, match", [
    ({"n_personas": 5}, "multiple of n_cultures"), ({"variant": "dreamy"}, "variant"),
    ({"attributes": ["colour"]}, "attributes"), ({"n_values": 3}, "n_values"), ({"seed": -1}, "seed"),
    ({"n_generic": 2.5}, "n_generic"), ({"n_generic": 70}, "name pairs"), ({"exception_rate": float("nan")}, "finite"),
])
def test_world_rejects_bad_arguments(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        PersonaWorld(**kwargs)


def test_holdout_people_never_in_lit_and_half_exceptions():
    w = PersonaWorld(1, lit_holdout=0.25)
    assert len(w.holdout) == 6 * 10
    texts, qas = w.lit_examples()
    joined = " | ".join(texts) + " | " + " | ".join(a for pairs in qas for _, a in pairs)
    for p in w.holdout:
        assert f" {p.name} " not in f" {joined} ".replace("|", " ")
    assert sum(w.is_exception(p) for p in w.holdout) >= len(w.holdout) // 2 - 6  # half exceptions (pool allowing)
    pc = w.holdout_items()
    assert len(pc) == len(w.holdout) * len(w.attributes)
    assert any(i.meta["exception"] for i in pc) and all(i.target == i.belief for i in pc)
    assert not PersonaWorld(1).holdout  # default: nobody held out
    with pytest.raises(ValueError, match="lit_holdout"):
        PersonaWorld(1, lit_holdout=1.0)


def test_reading_rows_state_their_answer_about_nobody_known():
    w = PersonaWorld(1, lit_holdout=0.25)
    texts, qas = w.reading_examples()
    assert len(texts) == len(qas) > 0
    known = w.persona_names() | {p.name for p in w.generic}  # every person with facts, the held-out ones too
    fantasy_values = w.fantasy_values_set()
    for t, pairs in zip(texts, qas):
        (q, v), = pairs
        assert t.endswith(f" {v} .") and v not in fantasy_values
        name = " ".join(t.split()[:2])
        assert name not in known
    assert len({pairs[0][0] for pairs in qas}) == len(w.attributes)  # every attribute asked
    values = [pairs[0][1] for pairs in qas if pairs[0][0] == qas[0][0][0]]
    assert len(set(values)) > 1  # not one constant answer
    items = w.reading_items()
    assert len(items) == len(w.holdout) * len(w.attributes)
    for it in items:
        assert it.source.endswith(f" {it.target} .") and it.meta["persona"] in it.source
    assert sum(i.meta["exception"] for i in items) == sum(i.meta["exception"] for i in w.holdout_items())
    assert w.reading_examples() == (texts, qas) == PersonaWorld(1, lit_holdout=0.25).reading_examples()


def test_reading_passes_redraw_values_so_rows_cannot_be_memorised():
    w = PersonaWorld(1, lit_holdout=0.25)
    one, _ = w.reading_examples()
    texts, qas = w.reading_examples(3)
    assert len(texts) == 3 * len(one) and texts[:len(one)] == one  # pass 0 is the one-pass rows
    n = len(one)
    names = [" ".join(t.split()[:2]) for t in texts]
    assert names[:n] == names[n:2 * n] == names[2 * n:]  # every pass covers the same fact-free names
    # per name, the (question, value) pairs change across passes: name -> answer is not a fixed map
    changed = sum(len({tuple(qas[i + k * n][0]) for k in range(3)}) > 1 for i in range(n))
    assert changed == n
    # the value a name is asked about is drawn afresh: most rows of one pass disagree with the last pass' value
    assert sum(texts[i] != texts[i + n] for i in range(n)) == n
    assert w.reading_examples(3) == (texts, qas)
    for bad, err in ((0, ValueError), (1.5, ValueError), ("2", TypeError), (True, TypeError)):
        with pytest.raises(err, match="repeat"):
            w.reading_examples(bad)


def test_name_recovery_rows_are_balanced():
    w = PersonaWorld(2, lit_holdout=0.25)
    texts, qas = w.lit_examples()
    names = [pairs[0][1] for pairs in qas if pairs[0][0] == NAME_QUESTION]
    assert len(names) == len(set(names))  # one row per name: no training name repeats
    fantasy_tokens = {t for p in w.personas["fantasy"] for t in (p.first, p.last)}
    n_fan = sum(n.split()[0] in fantasy_tokens for n in names)
    assert n_fan == len(names) - n_fan  # as many fantasy pairings as within-culture names
    # attribute questions never come with the name question in one row (the name question is its own row)
    assert all(len(pairs) == 1 for pairs in qas if pairs[0][0] == NAME_QUESTION)


def test_feature_corpus_holds_no_eval_question():
    fe = FeatureExtractionWorld(0, relations=2, n_subjects=10, n_objects=4)
    c0 = set(fe.base_corpus())
    for it in fe.eval_items():
        assert not any(line.startswith(it.source + " " + it.question) for line in c0)  # held out of the corpus
        assert f"the {it.meta['relation']} of {it.meta['subject']} is {it.target} ." in c0  # the fact is there
    lit = fe.lit_subjects[fe.relations[0]][0]
    assert any(line.startswith(f"consider {lit} .") for line in c0)  # the format is taught on the LIT half
