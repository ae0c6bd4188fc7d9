"""Swap the positional encoding of a Hugging Face Llama-style causal LM (Llama, Qwen2, Mistral, ...) for PoPE.

`patch_llama_attention(model, pos_emb="pope")` (in place, returns the model):
- replaces `model.model.rotary_emb` by a module that hands the integer `position_ids` down the layers instead
  of RoPE's (cos, sin);
- gives every `self_attn` a `pos_encoding` submodule (PoPE with its learnable delta, or RoPE/NoPE from this
  package) and a forward that encodes q/k with it, stores the encoded (2d-wide) keys in the HF cache and
  calls the model's configured attention function (sdpa / eager) with the original 1/sqrt(head_dim) scale.
The projection weights keep their names, so `state_dict` round-trips; PoPE adds `self_attn.pos_encoding.delta`.
Works on models built from a config (no download); trained weights of a RoPE model are *not* a PoPE model -
the patched model has to be trained (or fine-tuned) with PoPE.

Written against transformers 5.x (`LlamaAttention.forward(hidden_states, position_embeddings, attention_mask,
cache, **kwargs)`); older 4.x versions with `past_key_value` / `cache_position` are handled too.
"""

from __future__ import annotations

import types

import torch
import torch.nn as nn

from icml26.common.lm import pad_values
from icml26.pope.models import ENCODINGS

HF_ENCODINGS = ("pope", "rope", "nope")


class PositionIdsEmbedding(nn.Module):
    """Stands in for `LlamaRotaryEmbedding`: returns (position_ids, position_ids) for the attention layers."""

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return position_ids, position_ids


def _patched_forward(self, hidden_states, position_embeddings=None, attention_mask=None, cache=None,
                     past_key_values=None, past_key_value=None, **kwargs):
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    cache = cache if cache is not None else (past_key_values if past_key_values is not None else past_key_value)
    input_shape = hidden_states.shape[:-1]
    hidden_shape = (*input_shape, -1, self.head_dim)
    q = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
    k = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
    v = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
    positions = position_embeddings[0] if position_embeddings is not None else kwargs.get("position_ids")
    if positions is None:
        raise ValueError("patched attention needs position_ids (is model.model.rotary_emb patched?)")
    if positions.ndim == 2 and positions.shape[0] == 1:
        positions = positions[0]
    q, k = self.pos_encoding.encode(q, k, positions, positions, check_finite=False)
    if cache is not None:
        if "cache_position" in kwargs:  # transformers 4.x
            k, v = cache.update(k, v, self.layer_idx, {"cache_position": kwargs["cache_position"]})
        else:
            k, v = cache.update(k, v, self.layer_idx)
    interface = ALL_ATTENTION_FUNCTIONS.get_interface(self.config._attn_implementation, _eager) \
        if hasattr(ALL_ATTENTION_FUNCTIONS, "get_interface") else \
        ALL_ATTENTION_FUNCTIONS.get(self.config._attn_implementation, _eager)
    kwargs.pop("position_ids", None)
    if getattr(self, "sliding_window", None) is not None:  # Qwen2 / Mistral sliding-window layers
        kwargs.setdefault("sliding_window", self.sliding_window)
    dv = v.shape[-1]
    v = pad_values(v, q.shape[-1])  # equal q/k/v widths keep the fused SDPA kernels (exact; see common.lm)
    out, weights = interface(self, q, k, v, attention_mask, dropout=0.0 if not self.training else
                             self.attention_dropout, scaling=self.scaling, **kwargs)
    out = out[..., :dv].reshape(*input_shape, -1).contiguous()
    return self.o_proj(out), weights


def _eager(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """Plain softmax attention (the "eager" implementation), q/k may be wider than v."""
    groups = query.shape[1] // key.shape[1]
    key = key.repeat_interleave(groups, dim=1)
    value = value.repeat_interleave(groups, dim=1)
    w = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            w = w.masked_fill(~attention_mask[..., : key.shape[2]], float("-inf"))
        else:
            w = w + attention_mask[..., : key.shape[2]]
    elif query.shape[2] > 1:
        S, T = key.shape[2], query.shape[2]
        causal = torch.ones(T, S, dtype=torch.bool, device=w.device).tril(S - T)
        w = w.masked_fill(~causal, float("-inf"))
    w = torch.softmax(w.float(), dim=-1).to(query.dtype)
    w = nn.functional.dropout(w, p=dropout, training=module.training)
    return torch.matmul(w, value).transpose(1, 2).contiguous(), w


def patch_llama_attention(model: nn.Module, pos_emb: str = "pope", **pos_kwargs) -> nn.Module:
    """Give a Llama-style HF causal LM PoPE (or "rope" | "alibi" | "nope" from this package) in place.

    Args:
        model: a `LlamaForCausalLM` / `Qwen2ForCausalLM` / ... (anything with `model.model.layers[i].self_attn`
            holding q_proj/k_proj/v_proj/o_proj, `head_dim`, `scaling`, and `model.model.rotary_emb`).
        pos_emb: "pope" (default), "rope" (this package's RoPE: same as the model's own default RoPE, a
            sanity baseline) or "nope".
        pos_kwargs: passed to the encoding (base, delta_init, rotate_dim, ...).
    Returns:
        the same model, patched (new parameters follow the model's device and dtype).
    """
    if pos_emb not in HF_ENCODINGS:
        raise ValueError(f"pos_emb must be one of {HF_ENCODINGS} (ALiBi is TinyLM-only), got {pos_emb!r}")
    inner = getattr(model, "model", model)
    layers = getattr(inner, "layers", None)
    if layers is None or not hasattr(inner, "rotary_emb"):
        raise TypeError(f"model must be a Llama-style HF model with .model.layers and .model.rotary_emb, "
                        f"got {type(model).__name__}")
    inner.rotary_emb = PositionIdsEmbedding()
    ref = next(model.parameters())
    for layer in layers:
        attn = layer.self_attn
        if not all(hasattr(attn, n) for n in ("q_proj", "k_proj", "v_proj", "o_proj", "head_dim")):
            raise TypeError(f"{type(attn).__name__} does not look like Llama attention")
        n_heads = attn.q_proj.out_features // attn.head_dim
        attn.pos_encoding = ENCODINGS[pos_emb](attn.head_dim, n_heads, **pos_kwargs).to(ref.device)
        if pos_emb == "pope" and attn.pos_encoding.delta.is_floating_point():
            attn.pos_encoding.delta.data = attn.pos_encoding.delta.data.to(ref.dtype)
        attn.forward = types.MethodType(_patched_forward, attn)
    model.config.pope_pos_emb = pos_emb
    return model
