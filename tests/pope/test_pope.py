"""PoPE: spec section 8 correctness tests (score identity, relative positions, decoupling, clamp, shapes, KV
cache, frequencies, errors) plus attention / baselines / plug-in equivalences."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from icml26.common.lm import KVCache, TinyLM, TinyLMConfig
from icml26.pope import (
    ALiBi,
    AttentionCache,
    NoPE,
    PoPE,
    RoPE,
    TinyDecoder,
    alibi_slopes,
    apply_pope,
    attention,
    pope_frequencies,
    position_factory,
    yarn_scale_frequencies,
)

torch.set_default_dtype(torch.float32)


def _rand(*shape, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=dtype)


def _direct_scores(q, k, qp, kp, theta, delta):
    """sum_c softplus(q_c) softplus(k_c) cos((s - t) theta_c + delta_hc) for q (B,H,Tq,d), k (B,H,Tk,d)."""
    mq, mk = F.softplus(q), F.softplus(k)
    rel = (kp[None, :] - qp[:, None]).double()  # (Tq, Tk) = s - t
    ang = rel[..., None] * theta + delta[:, None, None, :]  # (H, Tq, Tk, d)
    return torch.einsum("bhtc,bhsc,htsc->bhts", mq, mk, torch.cos(ang))


# ------------------------------------------------------------------------------------------ method
def test_frequencies_known_answer():
    th = pope_frequencies(8, base=10000.0)
    assert th.shape == (8,) and th[0] == 1.0
    assert torch.allclose(th, torch.tensor([10000.0 ** (-(c - 1) / 8) for c in range(1, 9)], dtype=torch.float64))
    assert torch.all(th[1:] < th[:-1])
    assert torch.equal(PoPE(8, 2).inv_freq, th)


def test_score_identity_fp64():
    B, H, Tq, Tk, d = 2, 3, 5, 7, 6
    pope = PoPE(d, H, delta_init="uniform")
    q, k = _rand(B, H, Tq, d, seed=1), _rand(B, H, Tk, d, seed=2)
    qp, kp = torch.tensor([3, 9, 0, 4, 11]), torch.arange(Tk) * 2
    q2, k2 = apply_pope(q, k, pope(kp), q_positions=qp, k_positions=kp)
    got = q2 @ k2.transpose(-1, -2)
    want = _direct_scores(q, k, qp, kp, pope.inv_freq, pope.clamped_delta().detach().double())
    assert torch.allclose(got, want, atol=1e-10, rtol=0)


def test_relative_position_invariance():
    H, d = 2, 8
    pope = PoPE(d, H, delta_init="uniform")
    rope = RoPE(d, H)
    q, k = _rand(1, H, 6, d, seed=3), _rand(1, H, 6, d, seed=4)
    pos = torch.arange(6)
    for enc in (pope, rope):
        a = enc.encode(q, k, pos, pos)
        b = enc.encode(q, k, pos + 1000, pos + 1000)
        sa, sb = a[0] @ a[1].transpose(-1, -2), b[0] @ b[1].transpose(-1, -2)
        assert torch.allclose(sa, sb, atol=1e-9)
        assert not torch.allclose(a[0], b[0])  # the features themselves do move


def test_decoupling_peak_at_zero_offset_and_rope_contrast():
    d = 8
    pope, rope = PoPE(d, 1), RoPE(d, 1)
    t, kp = 5, torch.arange(11)
    moved = 0
    for trial in range(50):
        q = _rand(1, 1, 1, d, seed=100 + trial)
        k = _rand(1, 1, 1, d, seed=200 + trial).expand(1, 1, 11, d)
        for sign in (1.0, -1.0):  # the sign/phase of the content never moves PoPE's peak
            q2, k2 = pope.encode(sign * q, k, torch.tensor([t]), kp)
            assert int((q2 @ k2.transpose(-1, -2)).argmax()) == t
        # RoPE: rotating q's feature pairs (a content phase) moves the preferred offset
        qa, ka = rope.encode(q, k, torch.tensor([t]), kp)
        rot = rope.encode(q, q, torch.tensor([3]), torch.tensor([3]))[0]  # q rotated by a content phase 3*theta
        qb, kb = rope.encode(rot, k, torch.tensor([t]), kp)
        moved += int((qa @ ka.transpose(-1, -2)).argmax()) != int((qb @ kb.transpose(-1, -2)).argmax())
    assert moved >= 25


def test_delta_clamp_and_gradients():
    pope = PoPE(4, 2)
    with torch.no_grad():
        pope.delta.copy_(torch.tensor([[-10.0, 1.0, -1.0, -3.0], [0.5, -7.0, -0.1, -6.0]]))
    d = pope(3).delta
    assert d.min() >= -2 * math.pi and d.max() <= 0.0
    assert torch.allclose(d, pope.delta.clamp(-2 * math.pi, 0.0))
    q, k = _rand(1, 2, 3, 4, seed=5, dtype=torch.float32), _rand(1, 2, 3, 4, seed=6, dtype=torch.float32)
    q2, k2 = pope.encode(q, k)
    (q2 @ k2.transpose(-1, -2)).sum().backward()
    g = pope.delta.grad
    inside = (pope.delta > -2 * math.pi) & (pope.delta < 0)
    assert torch.all(g[~inside] == 0)
    assert torch.all(g[inside] != 0)


def test_magnitudes_shapes_partial_and_layout():
    B, H, T, d = 2, 3, 4, 5  # odd head dim is fine for PoPE
    pope = PoPE(d, H, delta_init="uniform")
    q, k = _rand(B, H, T, d, seed=7), _rand(B, H, T, d, seed=8)
    q2, k2 = pope.encode(q, k)
    assert q2.shape == (B, H, T, 2 * d) and k2.shape == (B, H, T, 2 * d)
    mag = q2.view(B, H, T, d, 2).norm(dim=-1)
    assert torch.allclose(mag, F.softplus(q)) and torch.all(mag >= 0)
    # (B, T, H, d) layout gives the same numbers, transposed
    q3, k3 = pope.encode(q.transpose(1, 2), k.transpose(1, 2), layout="bthd")
    assert torch.allclose(q3.transpose(1, 2), q2) and torch.allclose(k3.transpose(1, 2), k2)
    # partial rotation: trailing d - r features are magnitude-only (phase 0, no position)
    part = PoPE(d, H, rotate_dim=2)
    pq, pk = part.encode(q, k, torch.arange(T) + 50, torch.arange(T) + 50)
    assert pq.shape[-1] == 2 * d
    rest = pq[..., 4:].view(B, H, T, d - 2, 2)
    assert torch.allclose(rest[..., 0], F.softplus(q[..., 2:])) and torch.all(rest[..., 1] == 0)
    pq0, _ = part.encode(q, k)
    assert torch.allclose(pq0[..., 4:], pq[..., 4:]) and not torch.allclose(pq0[..., :4], pq[..., :4])


def test_errors_name_the_argument():
    PoPE(7, 2)  # odd head dim works
    with pytest.raises(ValueError, match="head_dim"):
        RoPE(7)
    with pytest.raises(ValueError, match="base"):
        PoPE(8, 2, base=0.0)
    with pytest.raises(ValueError, match="base"):
        PoPE(8, 2, base=-1.0)
    with pytest.raises(ValueError, match="delta"):
        PoPE(8, 2, delta_init=torch.zeros(3, 8))
    with pytest.raises(ValueError, match="rotate_dim"):
        PoPE(8, 2, rotate_dim=9)
    pope = PoPE(8, 2)
    with pytest.raises(ValueError, match="head dim"):
        apply_pope(torch.zeros(1, 2, 3, 8), torch.zeros(1, 2, 3, 6), pope(3))
    with pytest.raises(ValueError, match="delta"):
        apply_pope(torch.zeros(1, 4, 3, 8), torch.zeros(1, 4, 3, 8), pope(3))  # 4 heads vs delta (2, 8)
    with pytest.raises(ValueError, match="rotate_dim"):
        apply_pope(torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3, 4), pope(3))
    with pytest.raises(ValueError, match="layout"):
        pope.encode(torch.zeros(1, 2, 3, 8), torch.zeros(1, 2, 3, 8), layout="bdht")
    with pytest.raises(ValueError, match="delta_init"):
        PoPE(8, 2, delta_init="normal")


# ------------------------------------------------------------------------------------------ attention
def _manual_attention(q2, k2, v, scale, bias=None):
    w = (q2 @ k2.transpose(-1, -2)) * scale
    if bias is not None:
        w = w + bias
    T, S = w.shape[-2:]
    w = w.masked_fill(~torch.ones(T, S, dtype=torch.bool).tril(S - T), float("-inf"))
    return torch.softmax(w, -1) @ v


def test_attention_matches_manual_with_original_scale():
    B, H, T, d = 2, 2, 6, 4
    pope = PoPE(d, H, delta_init="uniform")
    q, k, v = (_rand(B, H, T, d, seed=s) for s in (10, 11, 12))
    out = attention(q, k, v, pope)
    q2, k2 = pope.encode(q, k)
    assert torch.allclose(out, _manual_attention(q2, k2, v, 1 / math.sqrt(d)), atol=1e-10)
    assert not torch.allclose(out, _manual_attention(q2, k2, v, 1 / math.sqrt(2 * d)), atol=1e-6)
    assert torch.allclose(attention(q, k, v, pope, pad_values=False), out, atol=1e-10)  # padding v is exact
    # causal: changing the last token does not change earlier outputs
    k_b = k.clone()
    k_b[:, :, -1] += 1.0
    out_b = attention(q, k_b, v, pope)
    assert torch.allclose(out[:, :, :-1], out_b[:, :, :-1]) and not torch.allclose(out[:, :, -1], out_b[:, :, -1])


def test_attention_kv_cache_and_gqa():
    B, H, Hkv, T, d = 2, 4, 2, 9, 6
    pope = PoPE(d, H, delta_init="uniform")
    q, k, v = _rand(B, H, T, d, seed=13), _rand(B, Hkv, T, d, seed=14), _rand(B, Hkv, T, d, seed=15)
    full = attention(q, k, v, pope)
    # GQA equals plain multi-head attention with the k/v heads repeated (delta moves to the query side)
    rep = attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), pope)
    assert torch.allclose(full, rep, atol=1e-10)
    # incremental decoding through the cache: a prefix of 4, then one token at a time
    cache = AttentionCache()
    outs = [attention(q[:, :, :4], k[:, :, :4], v[:, :, :4], pope, kv_cache=cache)]
    for t in range(4, T):
        outs.append(attention(q[:, :, t:t + 1], k[:, :, t:t + 1], v[:, :, t:t + 1], pope, kv_cache=cache))
    assert cache.length == T and cache.keys[0].shape[-1] == 2 * d
    assert torch.allclose(torch.cat(outs, dim=2), full, atol=1e-10)
    # one cache type for the project: the TinyLM cache drives two attention layers in turn
    assert AttentionCache is KVCache
    two = KVCache.empty(2)
    for t0, t1 in ((0, 4), (4, 5), (5, T)):
        for layer in (0, 1):
            o = attention(q[:, :, t0:t1], k[:, :, t0:t1], v[:, :, t0:t1], pope, kv_cache=two, layer=layer)
            assert torch.allclose(o, full[:, :, t0:t1], atol=1e-10)
    assert two.layer_length(1) == T and torch.equal(two.positions, torch.arange(T))
    with pytest.raises(ValueError, match="fresh cache"):  # a different batch cannot continue the cached sequence
        attention(q[:1, :, :1], k[:1, :, :1], v[:1, :, :1], pope, kv_cache=cache)


def test_kv_cache_filled_by_one_encoding_is_refused_with_another():
    B, H, T, d = 1, 2, 5, 4
    q, k, v = (_rand(B, H, T, d, seed=s) for s in (22, 23, 24))
    pope, rope = PoPE(d, H), RoPE(d, H)
    cache = AttentionCache()
    attention(q[:, :, :3], k[:, :, :3], v[:, :, :3], pope, kv_cache=cache)
    assert cache.encoding == "PoPE" and cache.length == 3
    # PoPE stores 2d-wide keys, RoPE rotated d-wide ones: reusing the cache would mix encodings
    for other in (rope, NoPE(), None):
        with pytest.raises(ValueError, match="PoPE"):
            attention(q[:, :, 3:4], k[:, :, 3:4], v[:, :, 3:4], other, kv_cache=cache)
    assert cache.length == 3 and cache.encoding == "PoPE"  # the refusal left the cache untouched
    out = attention(q[:, :, 3:4], k[:, :, 3:4], v[:, :, 3:4], pope, kv_cache=cache)  # the same encoding goes on
    assert torch.allclose(out, attention(q[:, :, :4], k[:, :, :4], v[:, :, :4], pope)[:, :, 3:4], atol=1e-10)
    fresh = AttentionCache()
    attention(q[:, :, :3], k[:, :, :3], v[:, :, :3], rope, kv_cache=fresh)  # a fresh cache takes any encoding
    assert fresh.encoding == "RoPE"


def test_attention_padding_mask():
    B, H, T, d = 2, 2, 5, 4
    pope = PoPE(d, H)
    q, k, v = (_rand(B, H, T, d, seed=s) for s in (19, 20, 21))
    keep = torch.ones(B, 1, 1, T, dtype=torch.bool)
    keep[0, ..., :2] = False  # first two keys of sequence 0 are padding
    out = attention(q, k, v, pope, attn_mask=keep)
    q2, k2 = pope.encode(q, k)
    w = (q2 @ k2.transpose(-1, -2)) / math.sqrt(d)
    w = w.masked_fill(~(torch.ones(T, T, dtype=torch.bool).tril() & keep), float("-inf"))
    want = torch.softmax(w, -1) @ v
    assert torch.allclose(out[:, :, 2:], want[:, :, 2:], atol=1e-10)  # rows with at least one visible key
    assert torch.allclose(out[1], attention(q, k, v, pope)[1], atol=1e-10)


def test_alibi_and_nope_through_attention():
    B, H, T, d = 1, 4, 5, 4
    q, k, v = (_rand(B, H, T, d, seed=s) for s in (16, 17, 18))
    slopes = alibi_slopes(4)
    assert torch.allclose(slopes, torch.tensor([2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8], dtype=torch.float64))
    alibi = ALiBi(d, H)
    pos = torch.arange(T)
    bias = -slopes.view(-1, 1, 1) * (pos[:, None] - pos[None, :]).double()
    assert torch.allclose(alibi.attn_bias(pos, pos).double(), bias)
    assert torch.allclose(attention(q, k, v, alibi), _manual_attention(q, k, v, 0.5, bias), atol=1e-6)
    assert torch.allclose(attention(q, k, v, NoPE()), _manual_attention(q, k, v, 0.5), atol=1e-10)


def test_yarn_scaling():
    inv = RoPE(64).inv_freq
    same, f1 = yarn_scale_frequencies(inv, 1.0, 1024)
    assert torch.allclose(same, inv) and f1 == 1.0
    scaled, att = yarn_scale_frequencies(inv, 4.0, 1024)
    assert att == pytest.approx(0.1 * math.log(4) + 1)
    assert scaled[0] == inv[0]  # high frequency: many rotations in 1024 tokens, kept
    assert torch.isclose(scaled[-1], inv[-1] / 4)  # lowest frequency: interpolated
    assert torch.all(scaled <= inv + 1e-15) and torch.all(scaled >= inv / 4 - 1e-15)
    # works on PoPE's d frequencies too
    pscaled, _ = yarn_scale_frequencies(pope_frequencies(64), 4.0, 1024)
    PoPE(64, 2, inv_freq=pscaled)
    with pytest.raises(ValueError, match="factor"):
        yarn_scale_frequencies(inv, 0.5, 1024)


# ------------------------------------------------------------------------------------------ TinyLM plug-in
def test_tinylm_kv_cache_matches_full_recompute():
    torch.manual_seed(0)
    model = TinyDecoder(64, 32, 2, 4, 32, "pope", n_kv_heads=2, pos_kwargs={"delta_init": "uniform"}).eval()
    x = torch.randint(0, 64, (2, 32))
    with torch.no_grad():
        full = model(x)
        cache = KVCache.empty(2)
        steps = [model(x[:, :8], cache=cache)]
        for t in range(8, 32):
            steps.append(model(x[:, t:t + 1], cache=cache))
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5)
    assert cache.keys[0].shape == (2, 2, 32, 2 * 8)  # encoded, 2d-wide keys of the 2 kv heads


def test_tinydecoder_rope_equals_builtin_rope_and_parameters():
    torch.manual_seed(0)
    ours = TinyDecoder(64, 32, 2, 4, 32, "rope")
    builtin = TinyLM(TinyLMConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=4, ctx=32, pos="rope"))
    builtin.load_state_dict(ours.state_dict())
    x = torch.randint(0, 64, (2, 20))
    assert torch.allclose(ours(x), builtin(x), atol=1e-5)
    pope_model = TinyDecoder(64, 32, 2, 4, 32, "pope")
    names = [n for n, _ in pope_model.named_parameters() if n.endswith("delta")]
    assert len(names) == 2 and pope_model.encodings()[0].delta.shape == (4, 8)
    assert isinstance(ours.blocks[0].mlp.up, torch.nn.Linear) and ours.blocks[0].mlp.up.bias is None
    with pytest.raises(ValueError, match="kind"):
        position_factory("sinusoid")
    for kind in ("alibi", "nope"):
        assert TinyDecoder(64, 32, 1, 4, 32, kind)(x).shape == (2, 20, 64)
