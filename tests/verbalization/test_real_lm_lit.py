"""The real-LM positive control (claim RL) at toy size: a LoRA LIT decoder on a tiny random HF Llama."""

from __future__ import annotations

import pytest

pytest.importorskip("peft")
pytest.importorskip("transformers")

from icml26.verbalization import experiment as E  # noqa: E402
from icml26.verbalization.real_lm import LIT_QUESTIONS, REAL_FACTS, lit_world_knowledge  # noqa: E402

FACTS = REAL_FACTS[:4]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, hf_factory):
    make_hf_tokenizer, make_hf_llama = hf_factory
    words = ["I", "visited", "?", "."] + [w for q in LIT_QUESTIONS.values() for w in q.split()]
    words += [w for f in FACTS for x in f for w in x.split()]
    folder = tmp_path_factory.mktemp("tiny_llama_rl")
    tok = make_hf_tokenizer(words, folder)
    return make_hf_llama(len(tok), hidden=32, layers=2), tok


def test_lit_world_knowledge_runs_and_scores_held_out_countries(tiny):
    model, tok = tiny
    before = {k: v.clone() for k, v in model.state_dict().items()}
    res = lit_world_knowledge(model, tok, FACTS, n_train=2, read_layer=1, lora_rank=2, steps=3, lr=1e-2,
                              batch_size=4, max_new_tokens=2)
    assert res["n_held"] == 2 and len(res["lit_correct"]) == 4 == len(res["zero_shot_correct"])
    assert res["clusters"] == [c for c, _, _ in FACTS[2:] for _ in range(2)]  # two relations per country
    for k in ("lit_heldout", "zero_shot_heldout", "lit_train", "country_recovery_heldout"):
        assert 0.0 <= res[k] <= 1.0
    # the decoder is a LoRA copy: the model read at test time is unchanged
    assert all((model.state_dict()[k] == v).all() for k, v in before.items())
    claim = E.claim_real_lit(res)
    assert claim.kind == "report" and claim.id == "RL"


def test_lit_world_knowledge_rejects_bad_input(tiny):
    model, tok = tiny
    with pytest.raises(ValueError, match="n_train"):
        lit_world_knowledge(model, tok, FACTS, n_train=4, steps=1)
    with pytest.raises(ValueError, match="facts"):
        lit_world_knowledge(model, tok, [("France", "euro")] + FACTS, n_train=1, steps=1)
    with pytest.raises(IndexError):
        lit_world_knowledge(model, tok, FACTS, n_train=2, read_layer=9, steps=1)


def _res(correct, clusters):
    return {"lit_correct": correct, "clusters": clusters, "read_layer": 6, "write_layer": 0, "lit_heldout":
            sum(correct) / len(correct), "zero_shot_heldout": 0.6, "lit_train": 1.0, "country_recovery_heldout": 1.0,
            "n_train": 13, "n_held": len(set(clusters)), "lora_rank": 8, "steps": 80}


def test_claim_real_lit_can_fail_and_be_undecided():
    many = [f"c{i}" for i in range(12) for _ in range(2)]
    assert E.claim_real_lit(_res([0] * 24, many)).verdict == "not held"  # a decoder that retrieves nothing
    assert E.claim_real_lit(_res([1] * 24, many)).verdict == "held"
    assert E.claim_real_lit(_res([1, 0, 1, 0], ["a", "a", "b", "b"])).verdict == "inconclusive"  # two countries
