"""PoPE plug-ins and benchmarks: Hugging Face Llama patch, Indirect Indexing generator, length-extrapolation eval,
and one smoke run of the experiment."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from icml26.pope import IndirectIndexing, TinyDecoder, length_extrapolation_eval, patch_llama_attention

transformers = pytest.importorskip("transformers")


def _tiny_llama(n_kv_heads=2, seed=0):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=n_kv_heads,
                                   max_position_embeddings=128, attn_implementation="sdpa")
    return transformers.LlamaForCausalLM(cfg).eval()


def test_hf_patch_rope_reproduces_the_unpatched_model():
    model = _tiny_llama()
    x = torch.randint(0, 97, (2, 12))
    with torch.no_grad():
        ref = model(x).logits
        patch_llama_attention(model, pos_emb="rope")
        got = model(x).logits
    assert torch.allclose(ref, got, atol=1e-5)


def test_hf_patch_qwen2():
    torch.manual_seed(0)
    cfg = transformers.Qwen2Config(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    model = transformers.Qwen2ForCausalLM(cfg).eval()
    x = torch.randint(0, 97, (1, 9))
    with torch.no_grad():
        ref = model(x).logits
        assert torch.allclose(patch_llama_attention(model, "rope")(x).logits, ref, atol=1e-5)
        model2 = transformers.Qwen2ForCausalLM(cfg).eval()
        patch_llama_attention(model2, "pope")
        assert model2(x).logits.shape == (1, 9, 97)


@pytest.mark.parametrize("impl", ["sdpa", "eager"])
def test_hf_patch_pope_forward_cache_and_state_dict(impl):
    model = _tiny_llama()
    model.config._attn_implementation = impl
    before = set(model.state_dict())
    patch_llama_attention(model, pos_emb="pope", delta_init="uniform")
    after = set(model.state_dict())
    assert before <= after and sorted(after - before) == [f"model.layers.{i}.self_attn.pos_encoding.delta"
                                                          for i in range(2)]
    x = torch.randint(0, 97, (2, 10))
    with torch.no_grad():
        full = model(x).logits
        out = model(x[:, :6], use_cache=True)
        cache = out.cache if hasattr(out, "cache") else out.past_key_values
        steps = [out.logits]
        for t in range(6, 10):
            out = model(x[:, t:t + 1], cache=cache, use_cache=True) if hasattr(out, "cache") else \
                model(x[:, t:t + 1], past_key_values=cache, use_cache=True)
            cache = out.cache if hasattr(out, "cache") else out.past_key_values
            steps.append(out.logits)
    assert torch.allclose(torch.cat(steps, 1), full, atol=1e-5)
    # the PoPE model is a different function from the RoPE one, and its delta trains
    loss = F.cross_entropy(model(x).logits[:, :-1].reshape(-1, 97), x[:, 1:].reshape(-1))
    loss.backward()
    assert model.model.layers[0].self_attn.pos_encoding.delta.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="pos_emb"):
        patch_llama_attention(_tiny_llama(), pos_emb="alibi")


def test_indirect_indexing_targets_are_correct():
    task = IndirectIndexing(alphabet=10, min_len=4, max_len=7, max_shift=2)
    x, y = task.sample(200, seed=3)
    assert x.shape == (200, task.seq_len) == y.shape and task.vocab_size == 10 + 1 + 4
    shift_of = {task.shift_token(s): s for s in (-2, -1, 1, 2)}
    for row in range(200):
        seq = x[row].tolist()
        chars = [c for c in seq[: -3] if c != task.sep]
        assert len(set(chars)) == len(chars) and 4 <= len(chars) <= 7
        assert seq[-3] == task.sep
        i, s = chars.index(seq[-2]), shift_of[seq[-1]]
        assert y[row, -1] == chars[i + s] and (y[row, :-1] == -100).all()
    x2, y2 = task.sample(200, seed=3)
    assert torch.equal(x, x2) and torch.equal(y, y2)
    assert not torch.equal(task.test_set(200)[0], x)
    packed = IndirectIndexing(alphabet=10, min_len=4, max_len=7, max_shift=2, queries_per_sequence=3)
    px, py = packed.sample(5, seed=0)
    assert ((py != -100).sum(1) == 3).all() and px.shape[1] == packed.seq_len
    with pytest.raises(ValueError, match="max_len"):
        IndirectIndexing(alphabet=5, max_len=8)


def test_length_extrapolation_eval_known_answer():
    torch.manual_seed(0)
    model = TinyDecoder(256, 32, 1, 2, 16, "pope").eval()
    data = torch.randint(0, 256, (2000,))
    out = length_extrapolation_eval(model, data, [16, 48], n_windows=3, batch_size=2)
    assert set(out) == {16, 48}
    w = data[:3 * 49].view(3, 49)
    with torch.no_grad():
        logits = model(w[:, :-1])
    want = F.cross_entropy(logits.reshape(-1, 256), w[:, 1:].reshape(-1)).item()
    assert out[48] == pytest.approx(want, rel=1e-5)
    with pytest.raises(ValueError, match="lengths"):
        length_extrapolation_eval(model, data, [])


def test_experiment_smoke_run():
    from icml26.pope.experiment import CONFIGS, run

    cfg = copy.deepcopy(CONFIGS["smoke"])
    cfg["scale"] = "smoke"
    result = run(cfg)
    assert result.slug == "pope" and result.scale == "smoke"
    ids = [c.id for c in result.claims]
    assert ids == ["A", "B", "B0", "C"]
    assert [c.kind for c in result.claims] == ["gate", "gate", "sanity", "gate"]
    a = result.claims[0]
    assert set(a.measured) == {"extrapolation_margin", "in_distribution_gap"}
    assert a.verdict in ("held", "not held", "inconclusive") and a.interval.method == "stratified-bootstrap"
    b = result.claims[1]
    assert b.measured["pope_peak_at_t"] == b.measured["trials"] == 100 and b.held and result.claims[2].held
    assert result.claims[3].verdict == "inconclusive"  # C on one seed
    assert set(result._pending_figures) == {"extrapolation", "decoupling_argmax", "indirect_indexing"}
    runs = result.metrics["extrapolation_runs"]
    assert {r["arm"] for r in runs} == {"pope", "rope"} and all(set(r["losses"]) == {"32", "64"} for r in runs)


def test_paper_scale_code_path_on_cpu():
    """`--scale paper` with the tiny model on the byte-corpus fallback: the GPU code path runs end to end."""
    from icml26.pope.experiment import CONFIGS, run

    cfg = copy.deepcopy(CONFIGS["paper"])
    cfg.update(scale="paper", model="tiny", steps=2, batch_size=2, grad_accum=2, ctx=32, warmup_steps=1,
               eval_lengths=[32, 64], eval_windows=2, zero_shot_tasks=[], out_dir="", ii_run=False,
               dtype="float32")
    result = run(cfg)
    assert [c.id for c in result.claims] == ["A", "B", "B0"]
    assert result.claims[0].verdict == "inconclusive"  # one seed, no per-window losses: a t interval over 1 seed
    assert {r["arm"] for r in result.metrics["runs"]} == {"pope", "rope"}
    assert all(set(r["losses"]) == {"32", "64"} for r in result.metrics["runs"])
    assert "NOT the paper" in result.notes
