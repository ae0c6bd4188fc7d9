"""Patchscopes, LIT and the baselines: exact special cases, learning on the toy world, errors."""

from __future__ import annotations

import copy

import pytest
import torch

from icml26.common.generation import generate
from icml26.verbalization import (InversionBaseline, LITVerbalizer, PatchscopesVerbalizer, TinyCausalLM,
                                  ZeroShotBaseline, train_lm)
from icml26.verbalization.data import NAME_QUESTION


@pytest.fixture(scope="module")
def base(toy):
    torch.manual_seed(0)
    m = TinyCausalLM(len(toy["tok"]), d_model=32, n_layers=2, n_heads=2, max_len=32)
    train_lm(m, toy["tok"], toy["c0"], steps=60, lr=3e-3, batch_size=32, seed=0)
    return m


def _greedy(model, tok, text, n=4):
    out = generate(model, [tok.encode(text)], n, temperature=0.0, eos_token_id=tok.eos_token_id)[0]
    return tok.decode(out).strip()


def test_patchscopes_self_patch_equals_plain_generation(base, toy):
    """Source = the inspection prompt up to the placeholder, same model, ls = lt: the patch is a no-op."""
    tok = toy["tok"]
    q = "the favorite food of x :"
    for layer in (0, 1):
        ps = PatchscopesVerbalizer(base, base, tok, tok, source_layer=layer, target_layers=layer, max_new_tokens=4)
        assert ps.verbalize(["the favorite food of x"], [q]) == [_greedy(base, tok, q)]


def test_lit_with_embedding_reads_equals_reading_the_text(base, toy):
    """read layer 0 of the decoder itself, written at layer 0: the placeholders become the source tokens."""
    tok = toy["tok"]
    lit = LITVerbalizer(base, base, tok, tok, read_layer=0, write_layer=0, max_new_tokens=4, trained=True)
    src = [it.source for it in toy["world"].eval_items("consistent")]
    qs = [it.question for it in toy["world"].eval_items("consistent")]
    zs = ZeroShotBaseline(base, tok, max_new_tokens=4)
    assert lit.verbalize(src, qs) == zs.verbalize(src, qs)
    assert zs.verbalize(src[:1], qs[:1]) == [_greedy(base, tok, f"{src[0]} {qs[0]}")]


def test_patchscopes_sweep_and_placeholder(base, toy):
    tok = toy["tok"]
    ps = PatchscopesVerbalizer(base, base, tok, tok, 1, [0, 1], max_new_tokens=3)
    sweep = ps.verbalize_sweep(["my name is x ."] * 2, "the favorite food of x :", source_layers=[1, 2])
    assert set(sweep) == {(1, 0), (1, 1), (2, 0), (2, 1)} and all(len(v) == 2 for v in sweep.values())
    ids, pos = ps.inspection_prompt("the favorite food of x :")
    assert tok.decode([ids[pos]]) == "x"
    with pytest.raises(ValueError, match="verbalize_sweep"):
        ps.verbalize(["my name is x ."], "the favorite food of x :")
    with pytest.raises(ValueError, match="placeholder"):
        PatchscopesVerbalizer(base, base, tok, tok, 1, 0, template="no slot here")
    ps1 = PatchscopesVerbalizer(base, base, tok, tok, 1, 0)
    with pytest.raises(ValueError, match="holds no placeholder"):
        ps1.verbalize(["my name is x ."], "the favorite food of :")


def test_width_mismatch_needs_a_mapping(base, toy):
    tok = toy["tok"]
    wide = TinyCausalLM(len(tok), d_model=48, n_layers=2, n_heads=2)
    with pytest.raises(ValueError, match="mapping"):
        PatchscopesVerbalizer(base, wide, tok, tok, 1, 0)
    with pytest.raises(ValueError, match="mapping"):
        LITVerbalizer(base, wide, tok, tok)
    ps = PatchscopesVerbalizer(base, wide, tok, tok, 1, 0, mapping=torch.nn.Linear(32, 48), max_new_tokens=2)
    assert len(ps.verbalize(["my name is x ."], "the favorite food of x :")) == 1
    bad = PatchscopesVerbalizer(base, wide, tok, tok, 1, 0, mapping=torch.nn.Linear(32, 40))
    with pytest.raises(ValueError, match="mapping must send"):
        bad.verbalize(["my name is x ."], "the favorite food of x :")


def test_lit_learns_to_recover_names_and_leaves_decoder_alone(base, toy):
    tok, w = toy["tok"], toy["world"]
    texts, qas = w.lit_examples()
    rows = [(t, pairs) for t, pairs in zip(texts, qas) if pairs[0][0] == NAME_QUESTION]  # name recovery only
    texts, qas = [t for t, _ in rows], [pairs for _, pairs in rows]
    before = copy.deepcopy(base.state_dict())
    lit = LITVerbalizer(base, base, tok, tok, 1, 0, max_new_tokens=3)
    lit.fit(texts, qas, steps=250, lr=3e-3, batch_size=32, seed=0)
    assert all(torch.equal(v, base.state_dict()[k]) for k, v in before.items())  # copy=True
    train_names = [t for t, pairs in zip(texts, qas) if pairs[0][0] == NAME_QUESTION][:40]
    answers = [pairs[0][1] for t, pairs in zip(texts, qas) if pairs[0][0] == NAME_QUESTION][:40]
    got = lit.verbalize(train_names, NAME_QUESTION)
    assert sum(g == a for g, a in zip(got, answers)) / len(got) > 0.5
    assert lit.history_[-1] < lit.history_[0]
    # the untrained decoder cannot do it (the check can fail)
    untrained = LITVerbalizer(base, base, tok, tok, 1, 0, max_new_tokens=3, trained=True)
    assert sum(g == a for g, a in zip(untrained.verbalize(train_names, NAME_QUESTION), answers)) / len(got) < 0.3


def test_lit_state_rules(base, toy):
    tok = toy["tok"]
    lit = LITVerbalizer(base, copy.deepcopy(base), tok, tok, 1, 0, copy=False)
    with pytest.raises(ValueError, match="not fitted"):
        lit.verbalize(["my name is x ."], NAME_QUESTION)
    lit.fit(["my name is x ."], [(NAME_QUESTION, "x")], steps=1, batch_size=2)
    with pytest.raises(ValueError, match="in place already"):
        lit.fit(["my name is x ."], [(NAME_QUESTION, "x")], steps=1, batch_size=2)
    again = LITVerbalizer(base, base, tok, tok, 1, 0)
    with pytest.raises(ValueError, match="one entry per read text"):
        again.fit(["my name is x .", "i am x ."], [(NAME_QUESTION, "x")], steps=1)
    with pytest.raises(ValueError, match="non-empty strings"):
        again.fit(["my name is x ."], [[(NAME_QUESTION, "")]], steps=1)
    with pytest.raises(ValueError, match="exactly one token"):
        LITVerbalizer(base, base, tok, tok, placeholder="my name")
    with pytest.raises(IndexError, match="read_layer"):
        LITVerbalizer(base, base, tok, tok, read_layer=5)
    with pytest.raises(ValueError, match="steps"):
        again.fit(["my name is x ."], [(NAME_QUESTION, "x")], steps=2.5)


def test_inversion_baseline_reconstructs_training_text(base, toy):
    tok = toy["tok"]
    inv = InversionBaseline(base, tok, layer=1).fit(toy["c0"])
    assert inv.train_accuracy_ > 0.9
    text = toy["c0"][0]
    assert inv.invert_texts([text]) == [text]
    with pytest.raises(ValueError, match="width"):
        inv.invert(torch.zeros(3, 5))
    with pytest.raises(ValueError, match="not fitted"):
        InversionBaseline(base, tok, 1).invert(torch.zeros(2, 32))
    zs = ZeroShotBaseline(base, tok, max_new_tokens=3)
    assert len(inv.verbalize([text], "the favorite food of x :", zs)) == 1


def test_zero_shot_errors(base, toy):
    tok = toy["tok"]
    with pytest.raises(ValueError, match="prompt_format"):
        ZeroShotBaseline(base, tok, prompt_format="{question}")
    zs = ZeroShotBaseline(base, tok)
    with pytest.raises(ValueError, match="same length"):
        zs.verbalize(["a", "b"], ["x :"])
    with pytest.raises(TypeError, match="source_texts"):
        zs.verbalize("my name is x .", "x")
    zs.max_new_tokens = 0  # attribute change bypasses __init__: checked again
    with pytest.raises(ValueError, match="max_new_tokens"):
        zs.verbalize(["my name is x ."], "the favorite food of x :")
    with pytest.raises(TypeError, match="model"):
        ZeroShotBaseline(object(), tok)


def test_patchscopes_refuses_a_last_layer_write_that_cannot_act(base, toy):
    """Issue 37: a write at the verbalizer's last block output reaches no later token, so it was a silent no-op."""
    tok = toy["tok"]
    ps = PatchscopesVerbalizer(base, base, tok, tok, source_layer=1, target_layers=[2], max_new_tokens=2)
    with pytest.raises(ValueError, match="last layer"):
        ps.verbalize(["my name is x ."], ["the favorite food of x :"])
    # with the placeholder as the prompt's last token the write changes the next-token logits: allowed
    ps_end = PatchscopesVerbalizer(base, base, tok, tok, source_layer=1, target_layers=[2], max_new_tokens=1,
                                   template="{question} x")
    assert len(ps_end.verbalize(["my name is x ."], ["the favorite food of"])) == 1


def test_lora_lit_with_input_adapter_trains_and_merges(base, toy):
    pytest.importorskip("peft")
    from icml26.verbalization.verbalize import merge_lora

    w, tok = toy["world"], toy["tok"]
    texts, qas = w.lit_examples()
    before = {k: v.clone() for k, v in base.state_dict().items()}
    lit = LITVerbalizer(base, base, tok, tok, read_layer=1, write_layer=0, lora_rank=2, input_adapter=True,
                        max_new_tokens=3)
    lit.fit(texts, qas, steps=15, lr=1e-2, batch_size=16, seed=0)
    assert lit.adapter_ is not None and not torch.equal(lit.adapter_.weight, torch.eye(32))  # the adapter trained
    src = [texts[0], texts[1]]
    out = lit.verbalize(src, NAME_QUESTION)
    plain = merge_lora(copy.deepcopy(lit.decoder_))
    assert set(plain.state_dict()) == set(base.state_dict())  # LoRA folded away: a plain TinyCausalLM state
    again = LITVerbalizer(base, plain, tok, tok, read_layer=1, write_layer=0, trained=True, max_new_tokens=3,
                          mapping=lit.adapter_)
    assert again.verbalize(src, NAME_QUESTION) == out
    assert all(torch.equal(v, before[k]) for k, v in base.state_dict().items())  # fit trained a copy


def test_mlp_input_map_starts_as_identity_trains_alone_and_refuses_unknown_kinds(base, toy):
    from icml26.verbalization.verbalize import InputMLP, make_adapter

    x = torch.randn(5, 7, 32)
    for kind in ("affine", "mlp"):
        assert torch.allclose(make_adapter(kind, 32)(x), x, atol=1e-6)  # identity at init: reads the states as they are
    m = InputMLP(32, hidden=8)
    with torch.no_grad():
        m.down.weight.fill_(0.1)
    assert not torch.allclose(m(x), x)  # a trained map is not the identity
    w, tok = toy["world"], toy["tok"]
    texts, qas = w.lit_examples()
    before = {k: v.clone() for k, v in base.state_dict().items()}
    lit = LITVerbalizer(base, base, tok, tok, 1, 0, input_adapter="mlp", train_decoder=False, max_new_tokens=3)
    lit.fit(texts, qas, steps=20, lr=1e-2, batch_size=16, seed=0)
    assert isinstance(lit.adapter_, InputMLP) and lit.adapter_.down.weight.abs().sum() > 0  # the map trained
    assert all(torch.equal(v, lit.decoder_.state_dict()[k]) for k, v in before.items())  # the decoder did not
    out = lit.verbalize(texts[:3], NAME_QUESTION)
    again = LITVerbalizer(base, base, tok, tok, 1, 0, trained=True, max_new_tokens=3, mapping=lit.adapter_)
    assert again.verbalize(texts[:3], NAME_QUESTION) == out  # the map is all that was learnt
    with pytest.raises(ValueError, match="input_adapter"):
        LITVerbalizer(base, base, tok, tok, input_adapter="conv")
    with pytest.raises(ValueError, match="kind"):
        make_adapter("conv", 32)
