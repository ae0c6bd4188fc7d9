"""PoPE - Polar Coordinate Position Embedding (arXiv 2509.10534): decouple "what" (magnitudes) from "where" (phases).

    from icml26.pope import PoPE, apply_pope, attention

    pope = PoPE(head_dim=64, n_heads=8)                 # learnable phase bias delta (8, 64), init 0
    out = attention(q, k, v, pope, causal=True)         # q (B, 8, T, 64), k/v (B, H_kv, T, 64) -> (B, 8, T, 64)
    q2, k2 = apply_pope(q, k, pope(T))                  # explicit Cartesian form: (B, H, T, 128)

Plug-ins: `TinyDecoder` / `position_factory` for `icml26.common.lm.TinyLM`, `patch_llama_attention` for
Hugging Face Llama-style models. Baselines with the same interface: `RoPE`, `ALiBi`, `NoPE`,
`yarn_scale_frequencies`. Benchmarks: `IndirectIndexing`, `length_extrapolation_eval`.
"""

from icml26.pope.attention import AttentionCache, attention
from icml26.pope.baselines import ALiBi, NoPE, RoPE, RotaryFreqs, alibi_slopes, apply_rope, yarn_scale_frequencies
from icml26.pope.hf import patch_llama_attention
from icml26.pope.models import TinyDecoder, param_groups, position_factory
from icml26.pope.pope import PolarFreqs, PoPE, apply_pope, pope_frequencies
from icml26.pope.tasks import IndirectIndexing, indexing_accuracy, length_extrapolation_eval

__all__ = [
    "PoPE", "PolarFreqs", "apply_pope", "pope_frequencies", "attention", "AttentionCache",
    "RoPE", "RotaryFreqs", "apply_rope", "ALiBi", "alibi_slopes", "NoPE", "yarn_scale_frequencies",
    "TinyDecoder", "position_factory", "param_groups", "patch_llama_attention",
    "IndirectIndexing", "indexing_accuracy", "length_extrapolation_eval",
]
