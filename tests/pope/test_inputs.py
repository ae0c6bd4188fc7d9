"""Bad input to PoPE's public API gets a ValueError/TypeError naming the argument (issue 14), never a silent
wrong answer; plus the docs example run as written."""

from __future__ import annotations

import pytest
import torch

from icml26.pope import PoPE, RoPE, TinyDecoder, apply_pope, attention, length_extrapolation_eval


def _qkv(B=1, H=2, T=4, d=8, dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(B, H, T, d, generator=g, dtype=dtype) for _ in range(3))


def test_encoding_given_as_a_string_or_a_class_is_refused_by_name():
    q, k, v = _qkv()
    with pytest.raises(TypeError, match="pope must be a position-encoding module instance.*'pope'"):
        attention(q, k, v, "pope")
    with pytest.raises(TypeError, match="got the class PoPE; instantiate it"):
        attention(q, k, v, PoPE)
    with pytest.raises(TypeError, match="encode"):
        attention(q, k, v, torch.nn.Linear(2, 2))


def test_integer_or_nan_activations_are_refused_by_name():
    q, k, v = _qkv()
    pope = PoPE(8, 2)
    with pytest.raises(TypeError, match="q must be a floating tensor"):
        attention(q.long(), k, v, pope)
    with pytest.raises(TypeError, match="k must be a floating tensor"):
        apply_pope(q, k.int(), pope(4))
    with pytest.raises(TypeError, match="one dtype"):
        attention(q, k.double(), v, pope)
    bad = v.clone()
    bad[0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="v must be finite"):
        attention(q, k, bad, pope)
    assert torch.isnan(attention(q, k, bad, pope, check_finite=False)).any()  # opt-out for hot loops
    with pytest.raises(ValueError, match="q_positions"):
        attention(q, k, v, pope, q_positions=torch.tensor([0.0, 1.0, float("inf"), 3.0]))
    with pytest.raises(ValueError, match="q_positions"):
        attention(q, k, v, pope, q_positions=torch.arange(3))
    with pytest.raises(ValueError, match="attn_mask"):
        attention(q, k, v, pope, attn_mask=torch.ones(3, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="softmax_scale"):
        attention(q, k, v, pope, softmax_scale=0.0)
    with pytest.raises(TypeError, match="kv_cache"):
        attention(q, k, v, pope, kv_cache={})


def test_float64_delta_init_keeps_its_dtype_and_lists_read_like_tensors():
    d64 = torch.full((2, 4), -0.5, dtype=torch.float64)
    pope = PoPE(4, 2, delta_init=d64)
    assert pope.delta.dtype == torch.float64 and torch.equal(pope.delta.detach(), d64)
    assert torch.equal(PoPE(4, 2, delta_init=d64.tolist()).delta.detach(), d64)
    with pytest.raises(ValueError, match="delta_init must be finite"):
        PoPE(4, 2, delta_init=torch.full((2, 4), float("nan")))
    with pytest.raises(ValueError, match="delta_init must have shape"):
        PoPE(4, 2, delta_init=torch.zeros(4, 2))
    with pytest.raises(ValueError, match="head_dim must be an integer"):
        PoPE(8.5, 2)
    assert PoPE(8.0, 2).head_dim == 8  # an integral float is that integer
    with pytest.raises(ValueError, match="base must be finite"):
        PoPE(8, 2, base=float("inf"))
    with pytest.raises(ValueError, match="clamp"):
        PoPE(8, 2, clamp=(0.0, -1.0))
    with pytest.raises(ValueError, match="positions_or_len"):
        PoPE(8, 2)(3.5)
    with pytest.raises(ValueError, match="rotate_dim"):
        RoPE(8, rotate_dim=3)


def test_length_extrapolation_eval_refuses_fractional_lengths_and_out_of_vocab_tokens():
    torch.manual_seed(0)
    model = TinyDecoder(64, 16, 1, 2, 16, "pope").eval()
    data = torch.randint(0, 64, (600,))
    with pytest.raises(ValueError, match=r"lengths\[0\] must be an integer, got 64.5"):
        length_extrapolation_eval(model, data, [64.5], n_windows=2)
    assert set(length_extrapolation_eval(model, data, [16.0], n_windows=2)) == {16}
    assert length_extrapolation_eval(model, data.tolist(), [16], n_windows=2) == \
        length_extrapolation_eval(model, data, [16], n_windows=2)  # a list is read like the tensor
    with pytest.raises(ValueError, match="vocabulary"):
        length_extrapolation_eval(model, data + 10, [16], n_windows=2)
    with pytest.raises(TypeError, match="integer token ids"):
        length_extrapolation_eval(model, data.float(), [16], n_windows=2)
    with pytest.raises(ValueError, match="fewer than"):
        length_extrapolation_eval(model, data, [400], n_windows=2)
    with pytest.raises(ValueError, match="n_windows"):
        length_extrapolation_eval(model, data, [16], n_windows=0)


def test_docs(docs_example):
    ns = docs_example("pope")
    assert ns["out"].shape == (2, 8, 128, 64)
