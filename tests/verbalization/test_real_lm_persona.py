"""The real-LM persona arm (claim RP) at toy size: LoRA fine-tunes and LoRA LIT decoders on a tiny HF Llama
(briefly pre-trained on another seed's world text, as SmolLM2 comes pre-trained) with a word-level tokenizer."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("peft")
pytest.importorskip("transformers")

import torch  # noqa: E402

from icml26.verbalization import experiment as E  # noqa: E402
from icml26.verbalization.baselines import ZeroShotBaseline  # noqa: E402
from icml26.verbalization.controls import contains_match  # noqa: E402
from icml26.verbalization.data import PersonaWorld, build_tokenizer  # noqa: E402
from icml26.verbalization.models import train_lm  # noqa: E402
from icml26.verbalization.real_lm import lit_persona_arm, lora_finetune  # noqa: E402
from icml26.verbalization.verbalize import LITVerbalizer  # noqa: E402

ARM = dict(n_personas=2, n_cultures=2, n_generic=2, n_heldout=1, attributes=("country", "food"), ft_rank=4,
           ft_steps=3, lit_rank=4, lit_steps=3, read_layer=1, batch_size=8, n_name_pairs=2, max_new_tokens=3)


def _world(seed: int) -> PersonaWorld:
    return PersonaWorld(seed, 2, 0, ("country", "food"), ("fantasy",), n_generic=2, n_values=12, n_fantasy=2,
                        exception_rate=1.0, n_roster=0, n_fantasy_roster=0)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, hf_factory):
    make_hf_tokenizer, make_hf_llama = hf_factory
    tok = make_hf_tokenizer(build_tokenizer(_world(0)).vocab[3:], tmp_path_factory.mktemp("tiny_llama_rp"))
    model = make_hf_llama(len(tok), hidden=32, layers=2)
    other = _world(1)  # the "pre-training": another seed's people and facts (same words and formats)
    train_lm(model, tok, other.base_corpus() + other.persona_corpus("mismatch"), steps=60, lr=1e-2, batch_size=16,
             seed=0)
    for p in model.parameters():
        p.requires_grad_(False)
    return model.eval(), tok


@pytest.fixture(scope="module")
def arm(tiny):
    model, tok = tiny
    before = {k: v.clone() for k, v in model.state_dict().items()}
    res = lit_persona_arm(model, tok, **ARM)
    res["unchanged"] = all((model.state_dict()[k] == v).all() for k, v in before.items())
    return res


def test_persona_arm_scores_every_condition(arm):
    it = arm["items"]
    personas = set(it["d_belief"]["cluster"])
    assert len(personas) == 2
    for k in ("d_belief", "d_target", "e_lit", "e_ctrl", "self_M1", "text_M2p"):
        assert it[k]["n"] == 2 * 2 and set(it[k]["cluster"]) == personas  # personas x attributes, by persona
    assert it["pc_M2p"]["n"] == 2 == it["pc_M2pp"]["n"] == it["pc_text_M2p"]["n"]  # 1 held-out person x 2
    assert it["train_M2p"]["n"] == (2 * 2 - 1) * 2  # the other generic people
    assert set(it["pc_M2p"]["cluster"]).isdisjoint(it["train_M2p"]["cluster"])  # held out of LIT training
    assert it["rec_M2p"]["n"] == 2 == it["rec_M2pp"]["n"]
    assert all(0.0 <= v <= 1.0 for v in arm["accuracy"].values())
    assert arm["unchanged"]  # fine-tunes and decoders are copies: the model passed in is untouched
    # F2 differs from F1 everywhere: one completion word cannot score both
    assert not any(a and b for a, b in zip(it["d_belief"]["correct"], it["d_target"]["correct"]))
    assert arm["chance"] == 1 / 8


def test_lora_finetune_teaches_facts_and_a_lit_decoder_answers_them(tiny):
    model, tok = tiny
    items = _world(0).eval_items("fantasy", "target")  # 2 personas x 2 attributes the model never saw
    src, qs, ans = [i.source for i in items], [i.question for i in items], [i.target for i in items]
    before = contains_match(ZeroShotBaseline(model, tok, max_new_tokens=2).verbalize(src, qs), ans).mean()
    ft, losses = lora_finetune(model, tok, [f"{s} {q} {a}" for s, q, a in zip(src, qs, ans)], rank=8, steps=120,
                               lr=2e-2, batch_size=4, seed=0)
    after = contains_match(ZeroShotBaseline(ft, tok, max_new_tokens=2).verbalize(src, qs), ans).mean()
    assert before <= 0.25 and after >= 0.75 and losses[-1] < losses[0]
    assert not any(p.requires_grad for p in ft.parameters()) and not hasattr(ft, "peft_config")
    assert set(ft.state_dict()) == set(model.state_dict())  # LoRA merged into plain weights
    lit = LITVerbalizer(ft, ft, tok, tok, 1, 0, lora_rank=8, max_new_tokens=2)
    lit.fit(src, list(zip(qs, ans)), steps=120, lr=2e-2, batch_size=4)
    assert contains_match(lit.verbalize(src, qs), ans).mean() >= 0.75  # from the activations, not the text


def _fake(pc: int, belief: int, target: int, e_lit: int, e_ctrl: int, n: int = 12, seed: int = 0) -> dict:
    cl = [f"p{i}" for i in range(n) for _ in range(2)]

    def col(v):
        return {"correct": [v] * len(cl), "cluster": cl, "n": len(cl)}

    items = {"pc_M2p": col(pc), "pc_M2pp": col(pc), "d_belief": col(belief), "d_target": col(target),
             "e_lit": col(e_lit), "e_ctrl": col(e_ctrl)}
    acc = {k: float(np.mean(v["correct"])) for k, v in items.items()}
    acc.update({k: 0.9 for k in ("pc_text_M2p", "pc_text_M1", "self_M1", "text_M2p", "train_M2p", "train_M2pp",
                                 "rec_M2p", "rec_M2pp")})
    return {"seed": seed, "items": items, "accuracy": acc, "chance": 0.125, "read_layer": 6, "write_layer": 0,
            "n_personas": n, "attributes": ["country", "food"], "n_heldout": n, "n_train_people": 24,
            "ft_rank": 16, "ft_steps": 100, "lit_rank": 8, "lit_steps": 80}


def test_claim_real_persona_can_hold_fail_and_says_whether_pc_passed(arm):
    c = E.claim_real_persona(arm)
    assert c.id == "RP" and c.kind == "report"
    held = E.claim_real_persona(_fake(pc=1, belief=1, target=0, e_lit=1, e_ctrl=1))
    assert held.verdict == "held" and "passed their positive control" in held.details
    no_pc = E.claim_real_persona(_fake(pc=0, belief=1, target=0, e_lit=1, e_ctrl=1))
    assert no_pc.verdict == "not held" and "did NOT pass" in no_pc.details
    follows_target = E.claim_real_persona(_fake(pc=1, belief=0, target=1, e_lit=1, e_ctrl=1))
    assert follows_target.verdict == "not held"  # privileged reading of M1 fails claim 1


def test_claim_real_persona_pools_seeds_as_separate_clusters():
    """Two seeds of 3 personas: one seed all right, one all wrong. Alone, 3 clusters cannot place 1.0 vs 0.0 items
    away from nothing; pooled, the estimate is the item mean (0.5) over 6 clusters, each seed's own."""
    a, b = _fake(pc=1, belief=1, target=0, e_lit=1, e_ctrl=1, n=3), _fake(pc=0, belief=0, target=0, e_lit=1,
                                                                         e_ctrl=1, n=3, seed=1)
    c = E.claim_real_persona([a, b])
    assert c.measured["pc_M2p"] == 0.5 and c.measured["belief"] == 0.5
    pc_part = c.decision.parts[0]
    assert pc_part.interval.n == 6 and "seeds 0, 1" in c.details
    assert E.claim_real_persona([a]).measured == E.claim_real_persona(a).measured
    with pytest.raises(ValueError, match="distinct seeds"):
        E.claim_real_persona([a, a])
    with pytest.raises(ValueError, match="share sizes"):
        E.claim_real_persona([a, _fake(pc=1, belief=1, target=0, e_lit=1, e_ctrl=1, n=4, seed=1)])
    with pytest.raises(TypeError, match="res"):
        E.claim_real_persona([])


def test_persona_arm_rejects_bad_arguments(tiny):
    model, tok = tiny
    with pytest.raises(ValueError, match="n_heldout"):
        lit_persona_arm(model, tok, **{**ARM, "n_heldout": 4})
    with pytest.raises(ValueError, match="n_personas"):
        lit_persona_arm(model, tok, **{**ARM, "n_personas": 1})
    with pytest.raises(ValueError, match="attributes"):
        lit_persona_arm(model, tok, **{**ARM, "attributes": ("height",)})
    with pytest.raises(IndexError):
        lit_persona_arm(model, tok, **{**ARM, "read_layer": 9})
    with pytest.raises(ValueError, match="name_max_new_tokens"):
        lit_persona_arm(model, tok, **{**ARM, "name_max_new_tokens": 0})
    with pytest.raises(ValueError, match="projections"):
        lora_finetune(torch.nn.Sequential(torch.nn.Linear(2, 2)), tok, ["x"], steps=1)


def test_smollm2_persona_cache_key_fills_defaults(tmp_path, monkeypatch):
    """A call naming a default argument (n_generic=3) reuses the entry of one leaving it out; a typo is a TypeError."""
    import functools

    from icml26.verbalization import real_lm

    calls = []

    @functools.wraps(real_lm.lit_persona_arm)
    def fake_arm(model, tokenizer, **kw):
        calls.append(kw)
        return {"time_s": {}, "kw": kw}

    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    monkeypatch.setattr(real_lm, "load_smollm2", lambda: (torch.nn.Linear(1, 1), None))
    monkeypatch.setattr(real_lm, "lit_persona_arm", fake_arm)
    first = real_lm.smollm2_lit_persona(ft_steps=7)
    again = real_lm.smollm2_lit_persona(ft_steps=7, n_generic=3)
    other = real_lm.smollm2_lit_persona(ft_steps=7, n_generic=4)
    assert len(calls) == 2 and again["kw"] == first["kw"] == {"ft_steps": 7} and other["kw"]["n_generic"] == 4
    with pytest.raises(TypeError, match="smollm2_lit_persona.*n_genric"):
        real_lm.smollm2_lit_persona(n_genric=3)
