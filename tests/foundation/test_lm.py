import math

import pytest
import torch

from icml26.common.generation import generate, left_pad, token_logprobs, top_p_filter
from icml26.common.lm import KVCache, RotaryEmbedding, TinyLM, TinyLMConfig, apply_rotary, rope_frequencies
from icml26.common.train import evaluate_loss, train_lm


def small_lm(**kw):
    torch.manual_seed(0)
    cfg = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, ctx=32)
    cfg.update(kw)
    return TinyLM(**cfg).eval()


@pytest.mark.parametrize("pos", ["none", "learned", "rope"])
@pytest.mark.parametrize("mlp", ["gelu", "swiglu"])
def test_causal_masking(pos, mlp):
    m = small_lm(pos=pos, mlp=mlp)
    x = torch.randint(0, 64, (2, 16))
    y = x.clone()
    y[:, 9:] = torch.randint(0, 64, (2, 7))
    with torch.no_grad():
        a, b = m(x), m(y)
    assert torch.allclose(a[:, :9], b[:, :9], atol=1e-6)
    assert not torch.allclose(a[:, 9:], b[:, 9:], atol=1e-3)


def test_rope_score_depends_only_on_offset():
    torch.manual_seed(0)
    rope = RotaryEmbedding(16)
    q = torch.randn(1, 1, 1, 16, dtype=torch.float64)
    k = torch.randn(1, 1, 1, 16, dtype=torch.float64)
    scores = {}
    for t, s in [(3, 1), (10, 8), (100, 98), (7, 7), (50, 50)]:
        qr, kr = rope(q, k, torch.tensor([t]), torch.tensor([s]))
        scores[(t, s)] = float((qr * kr).sum())
    assert scores[(3, 1)] == pytest.approx(scores[(10, 8)], abs=1e-9) == pytest.approx(scores[(100, 98)], abs=1e-9)
    assert scores[(7, 7)] == pytest.approx(float((q * k).sum()), abs=1e-9)  # offset 0: no rotation effect
    assert scores[(3, 1)] != pytest.approx(scores[(7, 7)], abs=1e-6)


def test_rope_rotation_preserves_norm_and_known_frequencies():
    f = rope_frequencies(8, 10000.0)
    assert torch.allclose(f, torch.tensor([1.0, 10000 ** -0.25, 10000 ** -0.5, 10000 ** -0.75], dtype=torch.float64))
    x = torch.randn(2, 3, 5, 8)
    y = apply_rotary(x, torch.arange(5), f)
    assert torch.allclose(x.norm(dim=-1), y.norm(dim=-1), atol=1e-5)
    with pytest.raises(ValueError, match="even head_dim"):
        rope_frequencies(7)


def test_tinylm_overfits_a_short_sequence():
    torch.manual_seed(0)
    m = TinyLM(vocab_size=32, d_model=32, n_layers=1, n_heads=2, ctx=32)
    seq = torch.randint(0, 32, (1, 17))
    opt = torch.optim.Adam(m.parameters(), lr=1e-2)
    start = evaluate_loss(m, seq)
    for _ in range(150):
        loss = torch.nn.functional.cross_entropy(m(seq[:, :-1])[0], seq[0, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
    end = evaluate_loss(m, seq)
    assert start > math.log(32) - 0.5 and end < 0.05


def test_kv_cache_matches_full_recompute():
    m = small_lm(n_kv_heads=2)  # GQA
    x = torch.randint(0, 64, (2, 12))
    cache = KVCache.empty(2)
    with torch.no_grad():
        parts = [m(x[:, :5], cache=cache)] + [m(x[:, i:i + 1], cache=cache) for i in range(5, 12)]
        full = m(x)
    assert torch.allclose(torch.cat(parts, 1), full, atol=1e-5)
    assert cache.length == 12


def test_left_padding_does_not_change_outputs():
    m = small_lm()
    a = [5, 6, 7, 8, 9]
    ids, mask = left_pad([a, [1, 2]], pad_id=0)
    with torch.no_grad():
        padded = m(ids, attention_mask=mask)
        alone = m(torch.tensor([[1, 2]]))
    assert torch.allclose(padded[1, -2:], alone[0], atol=1e-5)


def test_generate_greedy_batch_equals_single_and_respects_eos():
    m = small_lm()
    prompts = [[1, 2, 3, 4], [9, 8]]
    batch = generate(m, prompts, 6, temperature=0)
    for p, out in zip(prompts, batch):
        assert out == generate(m, [p], 6, temperature=0)[0]
        # greedy continuation equals argmax of the full forward pass
        seq = torch.tensor([p + out])
        with torch.no_grad():
            ref = m(seq)[0, len(p) - 1:-1].argmax(-1).tolist()
        assert ref == out
    eos = batch[0][2]
    stopped = generate(m, [prompts[0]], 6, temperature=0, eos_token_id=eos)[0]
    assert stopped[-1] == eos and len(stopped) == batch[0].index(eos) + 1


def test_sampling_is_reproducible_with_generator_and_top_k():
    m = small_lm()
    a = generate(m, [[1, 2]], 8, temperature=1.0, top_k=3, generator=torch.Generator().manual_seed(1))
    b = generate(m, [[1, 2]], 8, temperature=1.0, top_k=3, generator=torch.Generator().manual_seed(1))
    assert a == b
    with torch.no_grad():
        seq = torch.tensor([[1, 2] + a[0]])
        top3 = m(seq)[0, 1:-1].topk(3, dim=-1).indices
    assert all(tok in top3[i].tolist() for i, tok in enumerate(a[0]))


def test_top_p_filter_keeps_the_smallest_nucleus():
    logits = torch.log(torch.tensor([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]))
    kept = torch.isfinite(top_p_filter(logits, 0.6))
    assert kept.tolist() == [[False, True, True], [False, False, True]]      # 0.5 + 0.3 reaches 0.6; 0.8 alone
    assert torch.isfinite(top_p_filter(logits, 0.5)).sum(-1).tolist() == [1, 1]  # the top token is always kept
    assert torch.equal(top_p_filter(logits, 1.0), logits) and torch.equal(top_p_filter(logits, None), logits)
    with pytest.raises(ValueError, match="top_p"):
        top_p_filter(logits, 0.0)


def test_generate_top_p_and_logits_hook():
    m = small_lm()
    g = torch.Generator().manual_seed(0)
    nucleus = generate(m, [[1, 2]], 8, temperature=1.0, top_p=1e-6, generator=g)   # tiny nucleus = greedy
    assert nucleus == generate(m, [[1, 2]], 8, temperature=0)
    steps = []

    def only_token_5(step, logits):
        steps.append(step)
        out = torch.full_like(logits, float("-inf"))
        out[:, 5] = 0.0
        return out

    forced = generate(m, [[1, 2], [3]], 4, temperature=1.0, logits_hook=only_token_5, generator=g)
    assert forced == [[5] * 4, [5] * 4] and steps == [0, 1, 2, 3]
    ddp_like = torch.nn.Module()
    ddp_like.module = m                                   # a wrapper with .module (DDP) is unwrapped
    assert generate(ddp_like, [[1, 2]], 5, temperature=0) == generate(m, [[1, 2]], 5, temperature=0)


def test_token_logprobs_match_manual_softmax():
    m = small_lm()
    x = torch.randint(0, 64, (2, 7))
    with torch.no_grad():
        lp = token_logprobs(m, x)
        ref = torch.log_softmax(m(x), -1)[:, :-1].gather(-1, x[:, 1:, None]).squeeze(-1)
    assert lp.shape == (2, 6) and torch.allclose(lp, ref, atol=1e-6)


def test_train_lm_lowers_loss():
    torch.manual_seed(0)
    m = TinyLM(vocab_size=16, d_model=32, n_layers=1, n_heads=2, ctx=16)
    stream = torch.arange(16).repeat(40)  # periodic: learnable
    opt = torch.optim.AdamW(m.parameters(), lr=3e-3)
    hist = train_lm(m, stream, steps=60, batch_size=8, ctx=16, optimizer=opt,
                    generator=torch.Generator().manual_seed(0), eval_windows=stream[:64].view(4, 16), eval_every=30)
    assert hist.eval_loss[-1] < 0.5 * math.log(16) and len(hist.train_loss) == 60


def test_config_errors_are_clear():
    with pytest.raises(ValueError, match="divisible"):
        TinyLMConfig(d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="mlp"):
        TinyLMConfig(mlp="relu")
    with pytest.raises(ValueError, match="pos"):
        TinyLMConfig(pos="alibi")
    m = small_lm(pos="learned", ctx=8)
    with pytest.raises(ValueError, match="ctx=8"):
        m(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="idx"):
        m(torch.zeros(9))


def test_pluggable_position_encoding_with_bias():
    calls = []

    class Bias(torch.nn.Module):  # ALiBi-like: penalise distance, touch nothing else
        def forward(self, q, k, q_pos, k_pos):
            calls.append(1)
            return q, k

        def attn_bias(self, q_pos, k_pos):
            return -(q_pos[:, None] - k_pos[None, :]).abs().float()[None]

    m = TinyLM(TinyLMConfig(vocab_size=16, d_model=16, n_layers=2, n_heads=2, pos="none"),
               pos_encoding=lambda hd, nh: Bias())
    x = torch.randint(0, 16, (2, 6))
    y = x.clone()
    y[:, 4:] = (y[:, 4:] + 1) % 16
    with torch.no_grad():
        a, b = m(x), m(y)
    assert len(calls) == 4 and torch.allclose(a[:, :4], b[:, :4], atol=1e-6)
    cache = KVCache.empty(2)
    with torch.no_grad():
        inc = torch.cat([m(x[:, :3], cache=cache), m(x[:, 3:], cache=cache)], 1)
    assert torch.allclose(inc, a, atol=1e-5)


def test_widening_encoding_keeps_attention_exact():
    class Widen(torch.nn.Module):  # duplicate q and k features: q'.k' = 2 q.k, so halve q to keep the score
        def forward(self, q, k, q_pos, k_pos):
            return torch.cat([q, q], -1) / 2, torch.cat([k, k], -1)

    torch.manual_seed(0)
    cfg = TinyLMConfig(vocab_size=16, d_model=16, n_layers=1, n_heads=2, pos="none")
    plain = TinyLM(cfg)
    wide = TinyLM(cfg, pos_encoding=lambda hd, nh: Widen())
    wide.load_state_dict(plain.state_dict())
    x = torch.randint(0, 16, (2, 7))
    with torch.no_grad():
        assert torch.allclose(plain(x), wide(x), atol=1e-5)
