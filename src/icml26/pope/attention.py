"""Scaled dot-product attention with a pluggable position encoding (PoPE, RoPE, ALiBi, NoPE), KV cache and GQA.

PoPE doubles the q/k width (spec 2.3) while values and outputs keep width d; `F.scaled_dot_product_attention`
accepts different q/k and v widths, so the standard kernel is used unchanged. The softmax scale defaults to
1/sqrt(d) of the *original* head dim (the paper does not state it; community implementations use it, and
1/sqrt(2d) would silently lower the attention temperature, spec 9).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from icml26.pope.pope import to_bhtd


@dataclass
class AttentionCache:
    """Position-encoded keys (B, H_kv, S, d_qk), values (B, H_kv, S, d) and key positions (S,) or (B, S).

    Keys are stored after the encoding (PoPE: the 2d-wide Cartesian form), with their own absolute positions,
    so a decoding step only encodes the new token. Start with `AttentionCache()`; `attention` extends it.
    """

    keys: torch.Tensor | None = None
    values: torch.Tensor | None = None
    positions: torch.Tensor | None = None

    @property
    def length(self) -> int:
        return 0 if self.keys is None else self.keys.shape[2]


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    pope: nn.Module | None,
    causal: bool = True,
    attn_mask: torch.Tensor | None = None,
    softmax_scale: float | None = None,
    kv_cache: AttentionCache | None = None,
    *,
    q_positions: torch.Tensor | None = None,
    layout: str = "bhtd",
    dropout_p: float = 0.0,
    pad_values: bool = True,
) -> torch.Tensor:
    """Multi-head attention through `F.scaled_dot_product_attention` with a position encoding.

    Args:
        q: (B, H, Tq, d) queries (or (B, Tq, H, d) with layout="bthd").
        k, v: (B, H_kv, Tq, d) keys/values of the *same new tokens* (H divisible by H_kv: grouped-query attention).
        pope: a `PoPE`, `RoPE`, `ALiBi` or `NoPE` module (anything with `encode(q, k, q_pos, k_pos)` and an
            optional `attn_bias(q_pos, k_pos)`), or None for no encoding.
        causal: causal mask over absolute slots (a query at slot i sees cached and new keys at slots <= i).
        attn_mask: optional extra mask broadcastable to (B, H, Tq, S_total): bool (True = attend) or additive float.
        softmax_scale: default 1/sqrt(d) with d the *input* head dim (not the doubled PoPE width).
        kv_cache: optional `AttentionCache`, read and extended in place (incremental decoding).
        q_positions: (Tq,) or (B, Tq) absolute positions of the new tokens (default: cache length + arange(Tq)).
        layout: "bhtd" or "bthd" for q, k, v and the output.
        dropout_p: attention dropout (training only).
        pad_values: when the encoding widens q/k (PoPE: 2d), zero-pad v to the same width and slice the output
            back to d. PyTorch's fused SDPA kernels (CPU flash, CUDA flash) need equal q/k/v widths; without
            padding SDPA falls back to the unfused math kernel (measured ~1.4x slower fwd+bwd on CPU at
            T = 1024, d = 64). The result is identical either way.
    Returns:
        (B, H, Tq, d) attention output (in `layout`).
    """
    q4, k4, v4 = to_bhtd(q, layout, "q"), to_bhtd(k, layout, "k"), to_bhtd(v, layout, "v")
    B, H, Tq, d = q4.shape
    if k4.shape[:3] != v4.shape[:3] or k4.shape[0] != B:
        raise ValueError(f"k and v must be (B, H_kv, T, d) with B={B}, got k {tuple(k4.shape)}, v {tuple(v4.shape)}")
    if k4.shape[2] != Tq:
        raise ValueError(f"k/v must hold the same {Tq} new tokens as q (older tokens go in kv_cache), "
                         f"got {k4.shape[2]}")
    Hkv = k4.shape[1]
    if H % Hkv:
        raise ValueError(f"the number of query heads ({H}) must be a multiple of the key/value heads ({Hkv})")
    if k4.shape[-1] != d:
        raise ValueError(f"q and k must have the same head dim, got q {d} and k {k4.shape[-1]}")
    past = kv_cache.length if kv_cache is not None else 0
    if q_positions is None:
        q_positions = torch.arange(past, past + Tq, device=q4.device)
    if pope is not None:
        q4, k4 = pope.encode(q4, k4, q_positions, q_positions)
    k_positions = q_positions
    if kv_cache is not None:
        if kv_cache.keys is not None:
            k4 = torch.cat((kv_cache.keys, k4), dim=2)
            v4 = torch.cat((kv_cache.values, v4), dim=2)
            old = kv_cache.positions
            if old.ndim < q_positions.ndim:
                old = old.expand(q_positions.shape[0], -1)
            new = q_positions if q_positions.ndim >= old.ndim else q_positions.expand(old.shape[0], -1)
            k_positions = torch.cat((old, new), dim=-1)
        kv_cache.keys, kv_cache.values, kv_cache.positions = k4, v4, k_positions
    S = k4.shape[2]
    mask = None
    if causal and (past or attn_mask is not None or hasattr(pope, "attn_bias")):
        slots_q = torch.arange(past, past + Tq, device=q4.device)
        mask = torch.arange(S, device=q4.device)[None, :] <= slots_q[:, None]  # (Tq, S)
    if attn_mask is not None:
        mask = attn_mask if mask is None else _combine(mask, attn_mask)
    bias = pope.attn_bias(q_positions, k_positions) if hasattr(pope, "attn_bias") else None
    if bias is not None:
        bias = bias.to(q4.dtype)
        mask = bias if mask is None else _combine(mask, bias)
    scale = 1.0 / math.sqrt(d) if softmax_scale is None else float(softmax_scale)
    dv = v4.shape[-1]
    if pad_values and q4.shape[-1] > dv:
        v4 = F.pad(v4, (0, q4.shape[-1] - dv))
    out = F.scaled_dot_product_attention(
        q4, k4, v4, attn_mask=mask, is_causal=causal and mask is None and Tq > 1, dropout_p=dropout_p,
        scale=scale, enable_gqa=Hkv != H,
    )[..., :dv]
    return out if layout == "bhtd" else out.transpose(1, 2)


def _combine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Combine two masks (bool keep-masks or additive floats) into one SDPA mask."""
    if a.dtype == torch.bool and b.dtype == torch.bool:
        return a & b
    if a.dtype == torch.bool:
        a, b = b, a
    if b.dtype == torch.bool:  # a additive, b bool
        return a.masked_fill(~b, float("-inf"))
    return a + b
