"""The paper's position-encoding baselines behind PoPE's interface: RoPE, YaRN frequency scaling, ALiBi, NoPE.

Every encoding module has
    forward(positions_or_len, offset=0) -> its frequency table (or None)
    encode(q, k, q_positions=None, k_positions=None, layout="bhtd") -> (q', k')
    attn_bias(q_positions, k_positions) -> additive bias (H, Tq, Tk) / (B, H, Tq, Tk), or None
so `icml26.pope.attention` and the TinyLM / Hugging Face plug-ins take any of them.

- RoPE (Su et al.): d/2 frequencies theta_c = base^(-2(c-1)/d) rotating feature pairs (i, i + d/2) (the
  "rotate_half" layout of HF / `icml26.common.lm`, so a RoPE TinyLM built with this module equals the built-in
  one). Odd head dims raise ValueError.
- YaRN (Peng et al. 2023): NTK-by-parts frequency interpolation with a ramp over the number of rotations a
  frequency makes within the original context, and attention temperature 0.1 ln(s) + 1. We write the ramp in
  terms of r_c = L theta_c / (2 pi) (YaRN paper eq. 17-18), so it applies to any frequency vector (RoPE's or
  PoPE's); Hugging Face rounds the ramp ends to integer dims (floor/ceil), a negligible difference.
- ALiBi (Press et al.): bias -m_h (t - s) with geometric slopes m_h = 2^(-8 h / H), h = 1..H.
- NoPE: identity (causal masking alone carries position).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn as nn

from icml26.common.lm import rope_frequencies, rotate_half
from icml26.common.validation import check_bool, check_float, check_int, check_tensor
from icml26.pope.pope import _angles, check_positions, check_qk_tensor, positions_tensor, to_bhtd


class RotaryFreqs(NamedTuple):
    """What `RoPE.forward` returns: angles (..., T, rotate_dim/2) (float64) and the frequencies (rotate_dim/2,)."""

    freqs: torch.Tensor
    inv_freq: torch.Tensor
    attention_scaling: float = 1.0


def apply_rope(q: torch.Tensor, k: torch.Tensor, freqs: RotaryFreqs, *, q_positions: torch.Tensor | None = None,
               k_positions: torch.Tensor | None = None, layout: str = "bhtd",
               check_finite: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotate the first `rotate_dim` features of q (B, H, Tq, d) and k (B, H_kv, Tk, d) (or "bthd"); widths kept.

    Same position conventions as `apply_pope`: explicit positions override the table; otherwise keys use the
    table's last Tk rows and queries its last Tq rows. `freqs.attention_scaling` multiplies both q and k
    (YaRN's temperature, as in Hugging Face). The rotation is the foundation's `rotate_half` (one implementation
    for TinyLM's built-in RoPE and this baseline). `check_finite` refuses NaN/inf in q and k.
    """
    if not isinstance(freqs, RotaryFreqs):
        raise TypeError(f"freqs must be a RotaryFreqs (from RoPE.forward), got {type(freqs).__name__}")
    check_finite = check_bool(check_finite, "check_finite")
    q4 = to_bhtd(check_qk_tensor(q, "q", check_finite), layout, "q")
    k4 = to_bhtd(check_qk_tensor(k, "k", check_finite), layout, "k")
    if min(q4.shape) < 1 or min(k4.shape) < 1 or q4.shape[0] != k4.shape[0]:
        raise ValueError(f"q and k must be non-empty with one batch size, got q {tuple(q4.shape)}, k {tuple(k4.shape)}")
    d = q4.shape[-1]
    if k4.shape[-1] != d:
        raise ValueError(f"q and k must have the same head dim, got q {q4.shape[-1]} and k {k4.shape[-1]}")
    r = 2 * freqs.inv_freq.shape[-1]
    if r > d:
        raise ValueError(f"rotate_dim ({r}) must be <= the head dim of q/k ({d})")
    if q_positions is not None:
        q_positions = check_positions(q_positions, "q_positions", q4.shape[2], q4.shape[0])
    if k_positions is not None:
        k_positions = check_positions(k_positions, "k_positions", k4.shape[2], k4.shape[0])
    ang_q = _angles(q_positions, freqs.freqs, freqs.inv_freq, q4.shape[2], "q_positions")
    ang_k = _angles(k_positions, freqs.freqs, freqs.inv_freq, k4.shape[2], "k_positions")
    s = float(freqs.attention_scaling)
    q2 = torch.cat((rotate_half(q4[..., :r], ang_q, s), q4[..., r:] * s), dim=-1) if r < d else \
        rotate_half(q4, ang_q, s)
    k2 = torch.cat((rotate_half(k4[..., :r], ang_k, s), k4[..., r:] * s), dim=-1) if r < d else \
        rotate_half(k4, ang_k, s)
    if layout == "bthd":
        q2, k2 = q2.transpose(1, 2), k2.transpose(1, 2)
    return q2, k2


class RoPE(nn.Module):
    """Rotary position embedding with PoPE's interface (the paper's main baseline).

    Args:
        head_dim: d (must be even).
        n_heads: accepted for interface parity (unused).
        base: 10000.
        rotate_dim: rotated features (even, <= head_dim; default head_dim); the rest pass through.
        inv_freq: optional custom (rotate_dim/2,) frequencies (e.g. `yarn_scale_frequencies`).
        attention_scaling: multiplies q and k (YaRN temperature), default 1.
    """

    def __init__(self, head_dim: int, n_heads: int | None = None, base: float = 10000.0,
                 rotate_dim: int | None = None, inv_freq: torch.Tensor | None = None,
                 attention_scaling: float = 1.0) -> None:
        super().__init__()
        head_dim = check_int(head_dim, "head_dim", min=2)
        if head_dim % 2:
            raise ValueError(f"RoPE needs an even head_dim >= 2, got {head_dim!r}")
        base = check_float(base, "base", min=0.0, min_open=True)
        rotate_dim = head_dim if rotate_dim is None else check_int(rotate_dim, "rotate_dim", min=2, max=head_dim)
        if rotate_dim % 2:
            raise ValueError(f"rotate_dim must be an even int in [2, head_dim={head_dim}], got {rotate_dim!r}")
        if inv_freq is None:
            inv_freq = rope_frequencies(rotate_dim, base)
        else:
            inv_freq = check_tensor(inv_freq, "inv_freq", shape=(rotate_dim // 2,), dtype=torch.float64)
        self.head_dim, self.n_heads, self.rotate_dim, self.base = head_dim, n_heads, rotate_dim, base
        self.attention_scaling = check_float(attention_scaling, "attention_scaling", min=0.0, min_open=True)
        self.register_buffer("inv_freq", inv_freq.to(torch.float64), persistent=False)

    def forward(self, positions_or_len: int | torch.Tensor, offset: int | float = 0) -> RotaryFreqs:
        pos = positions_tensor(positions_or_len, offset, self.inv_freq.device).to(self.inv_freq.device)
        inv = self.inv_freq.to(torch.float64)
        return RotaryFreqs(pos[..., None] * inv, inv, self.attention_scaling)

    def encode(self, q: torch.Tensor, k: torch.Tensor, q_positions: torch.Tensor | None = None,
               k_positions: torch.Tensor | None = None, *, layout: str = "bhtd",
               check_finite: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        k4 = to_bhtd(check_qk_tensor(k, "k", False), layout, "k")
        if k_positions is not None:
            k_positions = check_positions(k_positions, "k_positions", k4.shape[2], k4.shape[0])
        table = self(k_positions if k_positions is not None else k4.shape[2])
        return apply_rope(q, k, table, q_positions=q_positions, k_positions=k_positions, layout=layout,
                          check_finite=check_finite)

    @staticmethod
    def qk_dim(head_dim: int) -> int:
        return head_dim


def yarn_scale_frequencies(inv_freq: torch.Tensor, factor: float, original_ctx: int, *, beta_fast: float = 32.0,
                           beta_slow: float = 1.0) -> tuple[torch.Tensor, float]:
    """YaRN "NTK-by-parts" interpolation of any frequency vector, plus its attention temperature.

    r_c = original_ctx * theta_c / (2 pi) counts the rotations of frequency c within the original context.
    gamma_c = clamp((r_c - beta_slow) / (beta_fast - beta_slow), 0, 1); theta'_c = (1 - gamma_c) theta_c / factor
    + gamma_c theta_c: high frequencies (many rotations) are kept, low ones interpolated by `factor`.

    Args:
        inv_freq: (n,) angular frequencies (RoPE's d/2 or PoPE's d).
        factor: context extension factor s >= 1 (e.g. 4 for 1024 -> 4096).
        original_ctx: training context length L.
    Returns:
        (scaled inv_freq (n,) float64, attention_factor 0.1 ln(s) + 1 to multiply q and k by).
    """
    factor = check_float(factor, "factor", min=1.0)
    original_ctx = check_int(original_ctx, "original_ctx", min=1)
    beta_fast, beta_slow = check_float(beta_fast, "beta_fast"), check_float(beta_slow, "beta_slow")
    if not beta_fast > beta_slow:
        raise ValueError(f"beta_fast ({beta_fast}) must exceed beta_slow ({beta_slow})")
    inv = check_tensor(inv_freq, "inv_freq", ndim=1, dtype=torch.float64)
    rotations = original_ctx * inv / (2 * math.pi)
    gamma = ((rotations - beta_slow) / (beta_fast - beta_slow)).clamp(0.0, 1.0)
    scaled = (1 - gamma) * inv / factor + gamma * inv
    return scaled, 0.1 * math.log(factor) + 1.0


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """ALiBi's head slopes 2^(-8 h / H), h = 1..H (power-of-two H; otherwise the paper's interleaving rule)."""
    n_heads = check_int(n_heads, "n_heads", min=1)

    def pow2(n: int) -> list[float]:
        start = 2 ** (-8 / n)
        return [start ** (i + 1) for i in range(n)]

    if math.log2(n_heads).is_integer():
        s = pow2(n_heads)
    else:
        closest = 2 ** math.floor(math.log2(n_heads))
        s = pow2(closest) + pow2(2 * closest)[0::2][: n_heads - closest]
    return torch.tensor(s, dtype=torch.float64)


class ALiBi(nn.Module):
    """Attention with Linear Biases: q/k untouched, additive bias -m_h * (t - s) on the scores."""

    def __init__(self, head_dim: int, n_heads: int) -> None:
        super().__init__()
        self.head_dim, self.n_heads = check_int(head_dim, "head_dim", min=1), check_int(n_heads, "n_heads", min=1)
        self.register_buffer("slopes", alibi_slopes(n_heads).float(), persistent=False)

    def forward(self, positions_or_len: int | torch.Tensor, offset: int | float = 0) -> None:
        return None

    def encode(self, q, k, q_positions=None, k_positions=None, *, layout: str = "bhtd", check_finite: bool = True):
        """q and k unchanged (after the same input checks as PoPE/RoPE)."""
        to_bhtd(check_qk_tensor(q, "q", check_finite), layout, "q")
        to_bhtd(check_qk_tensor(k, "k", check_finite), layout, "k")
        return q, k

    def attn_bias(self, q_positions: torch.Tensor, k_positions: torch.Tensor) -> torch.Tensor:
        """(H, Tq, Tk) for (T,) positions or (B, H, Tq, Tk) for (B, T) positions; float32."""
        qp, kp = positions_tensor(q_positions), positions_tensor(k_positions)
        dist = (qp[..., :, None] - kp[..., None, :]).to(self.slopes.device).float()  # t - s
        slopes = self.slopes.view(-1, 1, 1)
        return -slopes * dist if dist.ndim == 2 else -slopes[None] * dist[:, None]

    @staticmethod
    def qk_dim(head_dim: int) -> int:
        return head_dim


class NoPE(nn.Module):
    """No position encoding (identity); the causal mask is the only positional signal."""

    def __init__(self, head_dim: int | None = None, n_heads: int | None = None) -> None:
        super().__init__()
        self.head_dim, self.n_heads = head_dim, n_heads

    def forward(self, positions_or_len: int | torch.Tensor, offset: int | float = 0) -> None:
        return None

    def encode(self, q, k, q_positions=None, k_positions=None, *, layout: str = "bhtd", check_finite: bool = True):
        """q and k unchanged (after the same input checks as PoPE/RoPE)."""
        to_bhtd(check_qk_tensor(q, "q", check_finite), layout, "q")
        to_bhtd(check_qk_tensor(k, "k", check_finite), layout, "k")
        return q, k

    @staticmethod
    def qk_dim(head_dim: int) -> int:
        return head_dim
