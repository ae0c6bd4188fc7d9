"""PoPE and its baselines as plug-ins for `icml26.common.lm.TinyLM`, and the spec's `TinyDecoder`.

`TinyLM(config, pos_encoding=position_factory("pope"))` builds one encoding per layer through the foundation's
hook `factory(head_dim, n_heads) -> module` with `forward(q, k, q_pos, k_pos) -> (q, k)` (and `attn_bias` for
ALiBi). TinyLM's SDPA scale is 1/sqrt(head_dim) of the model, so PoPE's doubled q/k width keeps the original
temperature (spec 2.3). Its KV cache stores the encoded keys with their absolute positions.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn as nn

from icml26.common.lm import TinyLM, TinyLMConfig
from icml26.common.validation import check_choice, check_float
from icml26.pope.baselines import ALiBi, NoPE, RoPE
from icml26.pope.pope import PoPE

ENCODINGS: dict[str, type[nn.Module]] = {"pope": PoPE, "rope": RoPE, "alibi": ALiBi, "nope": NoPE}


class TinyLMPositionEncoding(nn.Module):
    """Adapts an encoding module (`encode(q, k, q_pos, k_pos)`) to TinyLM's `forward(q, k, q_pos, k_pos)` hook."""

    def __init__(self, encoding: nn.Module) -> None:
        super().__init__()
        self.encoding = encoding

    def forward(self, q: torch.Tensor, k: torch.Tensor, q_pos: torch.Tensor, k_pos: torch.Tensor):
        # activations from the model's own projections: skip the NaN scan (a sync per layer on GPUs)
        return self.encoding.encode(q, k, q_pos, k_pos, check_finite=False)


class TinyLMBiasEncoding(TinyLMPositionEncoding):
    """The same, for encodings that add an attention bias (ALiBi)."""

    def attn_bias(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        return self.encoding.attn_bias(q_pos, k_pos)


def position_factory(kind: str = "pope", **kwargs) -> Callable[[int, int], nn.Module]:
    """A TinyLM `pos_encoding=` factory for "pope" | "rope" | "alibi" | "nope"; kwargs go to the module
    (e.g. `position_factory("pope", delta_init="uniform", rotate_dim=16)`)."""
    check_choice(kind, "kind", sorted(ENCODINGS))
    cls = ENCODINGS[kind]
    wrapper = TinyLMBiasEncoding if kind == "alibi" else TinyLMPositionEncoding

    def factory(head_dim: int, n_heads: int) -> nn.Module:
        return wrapper(cls(head_dim, n_heads, **kwargs))

    return factory


class TinyDecoder(TinyLM):
    """The spec's small decoder: a `TinyLM` (pre-norm RMSNorm, causal, no biases, untied) with one of
    PoPE / RoPE / ALiBi / NoPE in every attention layer.

    Args:
        vocab: vocabulary size (256 for bytes).
        d_model, n_layers, n_heads: width, depth and heads (head dim = d_model / n_heads).
        ctx: nominal training context (recorded in the config; none of the four encodings limits the length).
        pos_emb: "pope" | "rope" | "alibi" | "nope".
        mlp: "gelu" (spec 6: FFN 4x GELU, the default) or "swiglu" (spec 5).
        n_kv_heads: grouped-query attention (default = n_heads).
        pos_kwargs: passed to the encoding module (base, delta_init, rotate_dim, ...).
    """

    def __init__(self, vocab: int = 256, d_model: int = 128, n_layers: int = 2, n_heads: int = 4, ctx: int = 64,
                 pos_emb: str = "pope", *, mlp: str = "gelu", n_kv_heads: int | None = None,
                 pos_kwargs: dict | None = None, **config_kwargs) -> None:
        cfg = TinyLMConfig(vocab_size=vocab, d_model=d_model, n_layers=n_layers, n_heads=n_heads, ctx=ctx,
                           n_kv_heads=n_kv_heads, mlp=mlp, norm="rmsnorm", bias=False, pos="none",
                           **config_kwargs)
        super().__init__(cfg, pos_encoding=position_factory(pos_emb, **(pos_kwargs or {})))
        self.pos_emb_kind = pos_emb

    def encodings(self) -> list[nn.Module]:
        """The per-layer encoding modules (e.g. to read PoPE's learned delta)."""
        return [b.attn.pos.encoding for b in self.blocks]


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """AdamW groups: decay on matrices (dim >= 2), none on norms, and none on PoPE's phase bias delta."""
    decay, no_decay = [], []
    weight_decay = check_float(weight_decay, "weight_decay", min=0.0)
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (decay if p.ndim >= 2 and not name.endswith(".delta") else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


__all__ = ["ENCODINGS", "TinyDecoder", "TinyLMPositionEncoding", "position_factory", "param_groups"]
