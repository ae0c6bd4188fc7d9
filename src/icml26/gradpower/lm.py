"""TinyLlama: the LLaMA recipe (RMSNorm, RoPE, SwiGLU, no biases, untied embeddings) at toy size.

A thin `icml26.common.lm.TinyLM` subclass, so everything that takes a TinyLM (generation, scoring, the
`pretrain` loop) takes it. The CPU reproduction uses d_model 32, 2 layers, 4 heads, SwiGLU hidden 80, ctx 64
(about 40k parameters, spec section 6).
"""

from __future__ import annotations

from icml26.common.lm import TinyLM, TinyLMConfig

__all__ = ["TinyLlama"]


class TinyLlama(TinyLM):
    """LLaMA-style decoder: pre-RMSNorm, RoPE, SwiGLU MLP, no biases, untied input/output embeddings.

    Args:
        vocab_size: number of tokens (256 for bytes).
        d_model: width; must be divisible by `n_heads` with an even head dim (RoPE).
        n_layers: transformer blocks.
        n_heads: attention heads.
        ctx: maximum context length used for training (RoPE itself has no hard limit).
        d_ff: SwiGLU hidden width (None: 8/3 d_model rounded up to a multiple of 8).
    `forward(idx (B, T) long) -> logits (B, T, vocab_size)`.
    """

    def __init__(self, vocab_size: int = 256, d_model: int = 32, n_layers: int = 2, n_heads: int = 4,
                 ctx: int = 64, d_ff: int | None = None, rope_base: float = 10000.0) -> None:
        super().__init__(TinyLMConfig(vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
                                      ctx=ctx, d_ff=d_ff, mlp="swiglu", norm="rmsnorm", bias=False,
                                      tie_embeddings=False, pos="rope", rope_base=rope_base))
