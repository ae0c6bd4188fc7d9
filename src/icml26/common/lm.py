"""TinyLM: a small decoder-only transformer with a pluggable position encoding.

Pre-norm, causal, configurable width/depth/heads (GQA via `n_kv_heads`), GELU or SwiGLU MLP, RMSNorm or
LayerNorm, optional biases and tied embeddings, and a KV cache for generation. Attention runs through
`F.scaled_dot_product_attention` with softmax scale 1/sqrt(head_dim) of the *model's* head dim, so a position
encoding may change the width of q/k (PoPE doubles it) without changing the temperature.

Position encodings
------------------
`config.pos` picks a built-in: "none" (NoPE), "learned" (absolute embedding added to the tokens, at most
`config.ctx` positions) or "rope". Any other encoding plugs in through `pos_encoding=`: a callable
`factory(head_dim, n_heads) -> nn.Module`, called once per layer, whose module implements

    forward(q, k, q_pos, k_pos) -> (q, k)       # q: (B, H, Tq, d), k: (B, H_kv, Tk, d); positions (T,) or (B, T)
    attn_bias(q_pos, k_pos) -> Tensor | None    # optional additive bias broadcastable to (B, H, Tq, Tk) (ALiBi)

Keys are transformed once, when they enter the cache, with their own absolute positions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

PositionFactory = Callable[[int, int], nn.Module]


@dataclass
class TinyLMConfig:
    """Hyperparameters of `TinyLM`. `d_ff=None` means 4*d_model (GELU) or 8/3*d_model rounded to 8 (SwiGLU)."""

    vocab_size: int = 256
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int | None = None
    ctx: int = 128
    d_ff: int | None = None
    mlp: str = "gelu"
    norm: str = "rmsnorm"
    bias: bool = False
    tie_embeddings: bool = False
    pos: str = "rope"
    rope_base: float = 10000.0
    dropout: float = 0.0
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "ctx"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        kv = self.n_kv_heads or self.n_heads
        if self.n_heads % kv:
            raise ValueError(f"n_heads ({self.n_heads}) must be divisible by n_kv_heads ({kv})")
        if self.mlp not in ("gelu", "swiglu"):
            raise ValueError(f"mlp must be 'gelu' or 'swiglu', got {self.mlp!r}")
        if self.norm not in ("rmsnorm", "layernorm"):
            raise ValueError(f"norm must be 'rmsnorm' or 'layernorm', got {self.norm!r}")
        if self.pos not in ("none", "learned", "rope"):
            raise ValueError(f"pos must be 'none', 'learned' or 'rope' (or pass pos_encoding=), got {self.pos!r}")
        if self.pos == "rope" and (self.d_model // self.n_heads) % 2:
            raise ValueError(f"RoPE needs an even head dim, got {self.d_model // self.n_heads}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def ff_dim(self) -> int:
        if self.d_ff is not None:
            return self.d_ff
        if self.mlp == "swiglu":
            return int(math.ceil(8 * self.d_model / 3 / 8) * 8)
        return 4 * self.d_model


# ----------------------------------------------------------------------------------------------- RoPE
def rope_frequencies(head_dim: int, base: float = 10000.0) -> torch.Tensor:
    """RoPE's d/2 angular frequencies theta_c = base^(-2(c-1)/d), c = 1..d/2 (float64)."""
    if head_dim < 2 or head_dim % 2:
        raise ValueError(f"RoPE needs an even head_dim >= 2, got {head_dim}")
    if base <= 0:
        raise ValueError(f"base must be > 0, got {base}")
    return base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)


def rotate_half(x: torch.Tensor, angles: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """Rotate feature pairs (i, i + d/2) of `x` (..., T, d) by `angles` (..., T, d/2) (HF "rotate_half" layout).

    `angles` are radians (float64 recommended: long positions stay exact); cos/sin are formed in the angles'
    dtype, multiplied by `scale` (YaRN's attention temperature; 1 = plain RoPE) and cast to x's dtype once.
    The one RoPE rotation of the project: `apply_rotary` below and `icml26.pope`'s RoPE baseline use it.
    """
    cos, sin = angles.cos(), angles.sin()
    if scale != 1.0:
        cos, sin = cos * scale, sin * scale
    cos = torch.cat([cos, cos], dim=-1).to(x.dtype)
    sin = torch.cat([sin, sin], dim=-1).to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


def apply_rotary(x: torch.Tensor, positions: torch.Tensor, inv_freq: torch.Tensor) -> torch.Tensor:
    """Rotate feature pairs (i, i + d/2) of `x` (B, H, T, d) by angle position * theta (HF "rotate_half" layout).

    `positions` is (T,) or (B, T); angles are formed in float64 so long positions stay exact.
    """
    ang = positions.to(torch.float64)[..., None] * inv_freq.to(x.device)  # (T, d/2) or (B, T, d/2)
    if ang.ndim == 3:
        ang = ang[:, None]  # (B, 1, T, d/2)
    return rotate_half(x, ang)


def pad_values(v: torch.Tensor, width: int) -> torch.Tensor:
    """`v` (..., d_v) zero-padded on the last dim to `width` when a position encoding widened q/k (PoPE: 2d).

    PyTorch's fused SDPA kernels (CPU and CUDA flash) need equal q/k/v widths; with narrower values SDPA falls
    back to its unfused math kernel (~1.4-1.5x slower at T = 1024). Zero columns leave the first d_v output
    columns exact: slice the attention output back with `[..., :d_v]`. No-op when `width <= d_v`.
    """
    dv = v.shape[-1]
    return F.pad(v, (0, width - dv)) if width > dv else v


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, attn_mask: torch.Tensor | None = None,
         is_causal: bool = False, dropout_p: float = 0.0, scale: float | None = None, enable_gqa: bool = False,
         pad: bool = True) -> torch.Tensor:
    """`F.scaled_dot_product_attention` for q/k that may be wider than v: (B, H, Tq, d_qk) x (B, H_kv, S, d_v)
    -> (B, H, Tq, d_v). With `pad` the values go through `pad_values` (exact, keeps the fused kernels)."""
    dv = v.shape[-1]
    if pad:
        v = pad_values(v, q.shape[-1])
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, dropout_p=dropout_p,
                                         scale=scale, enable_gqa=enable_gqa)
    return out[..., :dv]


class RotaryEmbedding(nn.Module):
    """RoPE (Su et al.) as a TinyLM position encoding: rotates q and k, leaves widths unchanged."""

    def __init__(self, head_dim: int, n_heads: int | None = None, base: float = 10000.0) -> None:
        super().__init__()
        self.register_buffer("inv_freq", rope_frequencies(head_dim, base).float(), persistent=False)

    def forward(self, q, k, q_pos, k_pos):
        return apply_rotary(q, q_pos, self.inv_freq), apply_rotary(k, k_pos, self.inv_freq)


# ----------------------------------------------------------------------------------------------- model
@dataclass
class KVCache:
    """Keys/values (already position-encoded) per layer and the positions of the cached keys, grown in place.

    The one KV-cache type of the project: `TinyLM.forward(cache=...)`, `generation.generate` and
    `icml26.pope.attention(kv_cache=...)` (where it is also exported as `AttentionCache`) all use it.
    `KVCache()` is an empty one-layer cache, `KVCache.empty(n_layers)` one for a whole model.

    keys[i]: (B, H_kv, S, d_qk) encoded keys of layer i (None until the first step); values[i]: (B, H_kv, S, d_v).
    positions: (S,) or (B, S) absolute positions of the cached keys (shared by all layers).
    mask: (B, S) bool, False for padding (set by callers that pad).
    """

    keys: list[torch.Tensor | None] = field(default_factory=lambda: [None])
    values: list[torch.Tensor | None] = field(default_factory=lambda: [None])
    positions: torch.Tensor | None = None
    mask: torch.Tensor | None = None
    encoding: str | None = None  # which position encoding filled it (its keys are encoded by it)

    def claim(self, encoding: str) -> None:
        """Record that `encoding` fills this cache; a cache filled by another encoding is refused (its keys are
        rotated / embedded differently, so reusing it would silently mix encodings)."""
        if not isinstance(encoding, str) or not encoding:
            raise ValueError(f"encoding must be a non-empty string, got {encoding!r}")
        if self.encoding is not None and self.encoding != encoding and self.length > 0:
            raise ValueError(f"cache was filled with position encoding {self.encoding!r}; it cannot be reused with "
                             f"{encoding!r} (use a fresh KVCache)")
        self.encoding = encoding

    @classmethod
    def empty(cls, n_layers: int = 1) -> KVCache:
        if isinstance(n_layers, bool) or not isinstance(n_layers, int) or n_layers < 1:
            raise ValueError(f"n_layers must be a positive int, got {n_layers!r}")
        return cls([None] * n_layers, [None] * n_layers)

    @property
    def length(self) -> int:
        """Number of cached positions (of layer 0)."""
        return self.layer_length(0)

    def layer_length(self, layer: int) -> int:
        self._check_layer(layer)
        k = self.keys[layer]
        return 0 if k is None else k.shape[2]

    def _check_layer(self, layer: int) -> None:
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < len(self.keys):
            raise ValueError(f"layer must be an int in [0, {len(self.keys)}), got {layer!r}")

    def extend(self, layer: int, k: torch.Tensor, v: torch.Tensor,
               positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Append the new tokens' encoded keys k (B, H_kv, T, d_qk) and values v (B, H_kv, T, d_v) of `layer` at
        `positions` ((T,) or (B, T)); returns that layer's full keys, values and key positions.

        The shared `positions` grow with the first layer that reaches a new length, so calling every layer of a
        decoder in turn with the same new tokens keeps them consistent.
        """
        past = self.layer_length(layer)
        if past:
            old_k = self.keys[layer]
            if old_k.shape[0] != k.shape[0] or old_k.shape[1] != k.shape[1] or old_k.shape[3] != k.shape[3]:
                raise ValueError(f"kv_cache holds keys of shape (B, H_kv, S, d) = {tuple(old_k.shape)}; the new keys "
                                 f"{tuple(k.shape)} do not continue it (use a fresh cache for a new sequence)")
            k = torch.cat((old_k, k), dim=2)
            v = torch.cat((self.values[layer], v), dim=2)
            old = self.positions[..., :past]
            if old.ndim < positions.ndim:
                old = old.expand(positions.shape[0], -1)
            new = positions if positions.ndim >= old.ndim else positions.expand(old.shape[0], -1)
            pos_all = torch.cat((old, new), dim=-1)
        else:
            pos_all = positions
        self.keys[layer], self.values[layer] = k, v
        if self.positions is None or pos_all.shape[-1] > self.positions.shape[-1]:
            self.positions = pos_all
        return k, v, pos_all


def _norm(cfg: TinyLMConfig) -> nn.Module:
    if cfg.norm == "rmsnorm":
        return nn.RMSNorm(cfg.d_model, eps=1e-6)
    return nn.LayerNorm(cfg.d_model, bias=cfg.bias)


class Attention(nn.Module):
    def __init__(self, cfg: TinyLMConfig, pos_encoding: nn.Module | None) -> None:
        super().__init__()
        self.n_heads, self.head_dim = cfg.n_heads, cfg.head_dim
        self.n_kv = cfg.n_kv_heads or cfg.n_heads
        self.q_proj = nn.Linear(cfg.d_model, cfg.n_heads * cfg.head_dim, bias=cfg.bias)
        self.k_proj = nn.Linear(cfg.d_model, self.n_kv * cfg.head_dim, bias=cfg.bias)
        self.v_proj = nn.Linear(cfg.d_model, self.n_kv * cfg.head_dim, bias=cfg.bias)
        self.o_proj = nn.Linear(cfg.n_heads * cfg.head_dim, cfg.d_model, bias=cfg.bias)
        self.pos = pos_encoding
        self.dropout = cfg.dropout

    def forward(self, x, q_pos, k_pos_all, mask, layer_cache: tuple | None):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_kv, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n_kv, self.head_dim).transpose(1, 2)
        if self.pos is not None:
            q, k = self.pos(q, k, q_pos, q_pos)  # new keys sit at the new queries' positions
        if layer_cache is not None and layer_cache[0] is not None:
            k = torch.cat([layer_cache[0], k], dim=2)
            v = torch.cat([layer_cache[1], v], dim=2)
        new_cache = (k, v)
        if self.pos is not None and hasattr(self.pos, "attn_bias"):
            bias = self.pos.attn_bias(q_pos, k_pos_all)
            if bias is not None:
                bias = bias if bias.ndim == 4 else bias[None]
                mask = bias if mask is None else torch.where(mask, bias, torch.tensor(float("-inf"), dtype=bias.dtype))
        if self.n_kv != self.n_heads:
            rep = self.n_heads // self.n_kv
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        # an encoding may widen q/k (PoPE: 2d); `sdpa` pads v so SDPA keeps its fused kernels (exact)
        y = sdpa(q, k, v, attn_mask=mask, is_causal=mask is None, dropout_p=self.dropout if self.training else 0.0,
                 scale=1.0 / math.sqrt(self.head_dim))
        return self.o_proj(y.transpose(1, 2).reshape(B, T, -1)), new_cache


class MLP(nn.Module):
    def __init__(self, cfg: TinyLMConfig) -> None:
        super().__init__()
        self.swiglu = cfg.mlp == "swiglu"
        self.up = nn.Linear(cfg.d_model, cfg.ff_dim, bias=cfg.bias)
        self.gate = nn.Linear(cfg.d_model, cfg.ff_dim, bias=cfg.bias) if self.swiglu else None
        self.down = nn.Linear(cfg.ff_dim, cfg.d_model, bias=cfg.bias)

    def forward(self, x):
        h = F.silu(self.gate(x)) * self.up(x) if self.swiglu else F.gelu(self.up(x))
        return self.down(h)


class Block(nn.Module):
    def __init__(self, cfg: TinyLMConfig, pos_encoding: nn.Module | None) -> None:
        super().__init__()
        self.norm1, self.attn = _norm(cfg), Attention(cfg, pos_encoding)
        self.norm2, self.mlp = _norm(cfg), MLP(cfg)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x, q_pos, k_pos_all, mask, layer_cache):
        a, new_cache = self.attn(self.norm1(x), q_pos, k_pos_all, mask, layer_cache)
        x = x + self.drop(a)
        return x + self.drop(self.mlp(self.norm2(x))), new_cache


class TinyLM(nn.Module):
    """Decoder-only transformer LM.

    Args:
        config: a `TinyLMConfig` (or pass its fields as keyword arguments).
        pos_encoding: optional factory `(head_dim, n_heads) -> nn.Module` overriding `config.pos`
            (see the module docstring for the interface).

    `forward(idx (B, T) long) -> logits (B, T, vocab)`; see `forward` for padding and caching.
    """

    def __init__(self, config: TinyLMConfig | None = None, *, pos_encoding: PositionFactory | None = None,
                 **kwargs) -> None:
        super().__init__()
        if config is None:
            config = TinyLMConfig(**kwargs)
        elif kwargs:
            raise TypeError("pass either a TinyLMConfig or keyword arguments, not both")
        self.config = cfg = config
        if pos_encoding is None and cfg.pos == "rope":
            pos_encoding = lambda hd, nh: RotaryEmbedding(hd, nh, cfg.rope_base)  # noqa: E731
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.ctx, cfg.d_model) if cfg.pos == "learned" else None
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(
            Block(cfg, pos_encoding(cfg.head_dim, cfg.n_heads) if pos_encoding else None)
            for _ in range(cfg.n_layers)
        )
        self.norm = _norm(cfg)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith(("o_proj.weight", "down.weight")):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg.n_layers))
        if cfg.tie_embeddings:
            self.lm_head.weight = self.tok_emb.weight

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)

    def num_params(self, non_embedding: bool = False) -> int:
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.tok_emb.weight.numel() + (self.pos_emb.weight.numel() if self.pos_emb is not None else 0)
        return n

    def forward(
        self,
        idx: torch.Tensor,
        *,
        attention_mask: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
        cache: KVCache | None = None,
        return_hidden: bool = False,
    ):
        """Logits for token ids.

        Args:
            idx: (B, T) long token ids.
            attention_mask: optional (B, S_past + T) with 1 for real tokens and 0 for (left) padding, Hugging
                Face semantics. Positions then count real tokens only.
            positions: optional (T,) or (B, T) absolute positions of the new tokens (default: continue from the
                cache / from the mask).
            cache: a `KVCache` to read and extend in place (generation).
            return_hidden: also return the final hidden states (B, T, d_model) (after the last norm).
        Returns:
            logits (B, T, vocab) float, or (logits, hidden) with `return_hidden`.
        """
        if not isinstance(idx, torch.Tensor):
            raise TypeError(f"idx must be a (B, T) integer torch.Tensor, got {type(idx).__name__}")
        if idx.ndim != 2 or idx.dtype not in (torch.long, torch.int32, torch.int64):
            raise ValueError(f"idx must be a (B, T) integer tensor, got {tuple(idx.shape)} {idx.dtype}")
        B, T = idx.shape
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= self.config.vocab_size):
            raise ValueError(f"idx holds token ids outside [0, vocab_size={self.config.vocab_size}): "
                             f"min {int(idx.min())}, max {int(idx.max())}")
        if cache is not None:
            cache.claim(self._encoding_name())
        past = cache.length if cache is not None else 0
        if attention_mask is not None:
            if attention_mask.shape != (B, past + T):
                raise ValueError(f"attention_mask must have shape {(B, past + T)}, got {tuple(attention_mask.shape)}")
            attention_mask = attention_mask.bool()
        if positions is None:
            if attention_mask is not None:
                positions = (attention_mask.long().cumsum(-1) - 1).clamp_min(0)[:, past:]
            else:
                positions = torch.arange(past, past + T, device=idx.device)
        k_pos_all = positions if cache is None or cache.positions is None else torch.cat(
            [cache.positions.expand(*positions.shape[:-1], -1) if positions.ndim > cache.positions.ndim
             else cache.positions, positions], dim=-1)
        x = self.tok_emb(idx)
        if self.pos_emb is not None:
            if int(positions.max()) >= self.config.ctx:
                raise ValueError(f"learned positions support at most ctx={self.config.ctx} tokens")
            x = x + self.pos_emb(positions)
        x = self.drop(x)
        mask = None  # None -> SDPA's own causal mask (no cache, no padding)
        if past or attention_mask is not None:
            q_slot = torch.arange(past, past + T, device=idx.device)
            k_slot = torch.arange(past + T, device=idx.device)
            m = k_slot[None, :] <= q_slot[:, None]  # (T, S) causal over slots
            if attention_mask is not None:
                m = (m[None] & attention_mask[:, None, :]) | (k_slot[None, None, :] == q_slot[None, :, None])
                m = m[:, None]  # (B, 1, T, S); the diagonal keeps padded rows finite
            mask = m
        elif any(hasattr(b.attn.pos, "attn_bias") for b in self.blocks if b.attn.pos is not None):
            mask = torch.ones(T, T, dtype=torch.bool, device=idx.device).tril()
        for i, block in enumerate(self.blocks):
            layer_cache = (cache.keys[i], cache.values[i]) if cache is not None else None
            x, (k, v) = block(x, positions, k_pos_all, mask, layer_cache)
            if cache is not None:
                cache.keys[i], cache.values[i] = k, v
        if cache is not None:
            cache.positions = k_pos_all
        h = self.norm(x)
        logits = self.lm_head(h)
        return (logits, h) if return_hidden else logits

    def _encoding_name(self) -> str:
        pos = next((b.attn.pos for b in self.blocks if b.attn.pos is not None), None)
        if pos is None:
            return self.config.pos if self.pos_emb is not None else "none"
        return f"{type(pos).__module__}.{type(pos).__qualname__}"

    def config_dict(self) -> dict:
        return asdict(self.config)
