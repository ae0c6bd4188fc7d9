"""PoPE: Polar Coordinate Position Embedding (Gopalakrishnan, Csordás, Schmidhuber, Mozer; arXiv 2509.10534).

RoPE in polar form (paper Sec. 2, spec 2.1) scores a query at position t against a key at position s as

    a_ts(RoPE) = sum_{c=1}^{d/2} mu_q,tc mu_k,sc cos((s - t) theta_c + phi_k,sc - phi_q,tc)

so the content-dependent phases phi of q and k shift the preferred relative offset ("what" leaks into
"where"). PoPE (spec 2.2) turns each of the d real features into one complex number whose *magnitude* is
content and whose *phase* is position only:

    mu_q,tc = softplus(q_tc),  mu_k,sc = softplus(k_sc),                      c = 1..d
    phase_q,tc = t theta_c,    phase_k,sc = s theta_c + delta_c,  theta_c = base^(-(c-1)/d)
    a_ts(PoPE) = Re[q~_t^H k~_s] = sum_{c=1}^{d} mu_q,tc mu_k,sc cos((s - t) theta_c + delta_c)      (*)

with a learnable phase bias delta of shape (n_heads, d), clamped to [-2 pi, 0] in the forward pass.

Computation (spec 2.3): in Cartesian form with interleaved real/imaginary parts

    q^ = [mu_q cos(t theta_c), mu_q sin(t theta_c)]_c,   k^ = [mu_k cos(s theta_c + delta_c), mu_k sin(...)]_c

q^ . k^ equals (*), so any dot-product kernel (SDPA, FlashAttention, a KV cache) works unchanged on head dim
2d. Values are untouched. The softmax scale stays 1/sqrt(d) of the *original* head dim (see `attention`).

Implementation notes / deviations
- Angles t * theta_c are formed in float64 and cast to the activations' dtype after cos/sin, so long
  positions (10k+) stay exact.
- delta is added to the key phase (spec). With grouped-query attention (fewer key heads than delta heads) one
  key is shared by several query heads, so we add -delta to the *query* phase instead; the score (*) is
  identical (cos((s - t) theta + delta) either way) and the cached keys stay head-group shared.
- Partial PoPE (`rotate_dim < head_dim`, spec 5): the first `rotate_dim` features are rotated; the remaining
  features keep their softplus magnitude with phase 0 (imaginary part 0), so the output is still 2 * head_dim
  wide and interleaved and those channels contribute mu_q mu_k (position-free) to the score. The community
  implementation (PoPE-pytorch) instead passes the raw remaining features through; ours keeps the "magnitude
  only" semantics the spec asks for.
- Default delta init 0 (the paper: best for length extrapolation); "uniform" = U(-2 pi, 0).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

LAYOUTS = ("bhtd", "bthd")


class PolarFreqs(NamedTuple):
    """What `PoPE.forward` returns.

    freqs: (..., T, rotate_dim) float64 angles position * theta_c for the requested positions.
    delta: (n_heads, rotate_dim) phase bias, already clamped.
    inv_freq: (rotate_dim,) float64 theta_c, for positions passed explicitly to `apply_pope`.
    """

    freqs: torch.Tensor
    delta: torch.Tensor
    inv_freq: torch.Tensor


def pope_frequencies(dim: int, base: float = 10000.0) -> torch.Tensor:
    """PoPE's d angular frequencies theta_c = base^(-(c-1)/d), c = 1..d (float64, first = 1; spec 2.2).

    Note: d frequencies, twice RoPE's d/2, with exponent (c-1)/d instead of 2(c-1)/d.
    """
    if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
        raise ValueError(f"dim must be a positive int, got {dim!r}")
    if not base > 0:
        raise ValueError(f"base must be > 0, got {base!r}")
    return float(base) ** (-torch.arange(dim, dtype=torch.float64) / dim)


def positions_tensor(positions_or_len: int | torch.Tensor, offset: int | float = 0,
                     device: torch.device | None = None) -> torch.Tensor:
    """`arange(n) + offset` for an int, or the given (T,) / (B, T) positions + offset, as float64."""
    if isinstance(positions_or_len, torch.Tensor):
        if positions_or_len.ndim not in (1, 2):
            raise ValueError(f"positions must be (T,) or (B, T), got shape {tuple(positions_or_len.shape)}")
        return positions_or_len.to(torch.float64) + offset
    if isinstance(positions_or_len, bool) or not isinstance(positions_or_len, int) or positions_or_len < 0:
        raise ValueError(f"positions_or_len must be a non-negative int or a tensor, got {positions_or_len!r}")
    return torch.arange(positions_or_len, dtype=torch.float64, device=device) + offset


def to_bhtd(x: torch.Tensor, layout: str, name: str) -> torch.Tensor:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if not isinstance(x, torch.Tensor) or x.ndim != 4:
        raise ValueError(f"{name} must be a 4-D tensor ({'B, H, T, d' if layout == 'bhtd' else 'B, T, H, d'}), "
                         f"got {getattr(x, 'shape', type(x).__name__)}")
    return x if layout == "bhtd" else x.transpose(1, 2)


def _angles(positions: torch.Tensor | None, table: torch.Tensor, inv_freq: torch.Tensor, T: int,
            name: str) -> torch.Tensor:
    """Angles (T, r) or (B, 1, T, r) for a (B, H, T, d) tensor: from explicit positions, else the table's tail."""
    if positions is not None:
        pos = positions_tensor(positions)
        if pos.shape[-1] != T:
            raise ValueError(f"{name} has {pos.shape[-1]} positions for a sequence of length {T}")
        ang = pos.to(inv_freq.device)[..., None] * inv_freq.to(torch.float64)
    else:
        if table.shape[-2] < T:
            raise ValueError(f"freqs cover {table.shape[-2]} positions, fewer than the {T} of {name[:1]}; "
                             f"pass {name} or compute freqs for more positions")
        ang = table[..., table.shape[-2] - T:, :].to(torch.float64)
    return ang[:, None] if ang.ndim == 3 else ang


def _polar(mag: torch.Tensor, ang: torch.Tensor, shift: torch.Tensor | None = None) -> torch.Tensor:
    """Interleave mag * cos(ang + shift), mag * sin(ang + shift) on the last dim: (..., r) -> (..., 2r).

    `ang` (positions, float64) gives small (T, r) cos/sin tables; the per-head phase `shift` (H, 1, r) is added
    with the angle-sum identity in (at least) float32, so the (H, T, r) table and delta's gradient never touch
    float64 trigonometry; one broadcast multiply then builds the output.
    """
    work = torch.promote_types(mag.dtype, torch.float32)
    c, s = ang.cos().to(work), ang.sin().to(work)
    if shift is not None:
        shift = shift.to(work)
        cd, sd = shift.cos(), shift.sin()
        c, s = c * cd - s * sd, s * cd + c * sd
    return (mag.unsqueeze(-1) * torch.stack((c, s), dim=-1).to(mag.dtype)).flatten(-2)


def apply_pope(
    q: torch.Tensor,
    k: torch.Tensor,
    freqs: PolarFreqs,
    *,
    q_positions: torch.Tensor | None = None,
    k_positions: torch.Tensor | None = None,
    layout: str = "bhtd",
    magnitude: Callable[[torch.Tensor], torch.Tensor] = F.softplus,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Map queries and keys to PoPE's Cartesian form (spec 2.3), so q2 . k2 = sum_c mu_q mu_k cos((s-t)theta_c+delta_c).

    Args:
        q: (B, H, Tq, d) queries, or (B, Tq, H, d) with layout="bthd".
        k: (B, H_kv, Tk, d) keys (H_kv may divide H: grouped-query attention), same layout.
        freqs: `PolarFreqs` from `PoPE.forward` (angles for the key positions; queries use the last Tq rows).
        q_positions, k_positions: optional (T,) or (B, T) absolute positions overriding the table in `freqs`.
        layout: "bhtd" (default) or "bthd".
        magnitude: the non-negative magnitude map (softplus in the paper; ablations use relu / identity).
    Returns:
        (q2, k2) in the input layout with last dim 2d: interleaved (re, im) pairs, re at even indices.
    """
    if not isinstance(freqs, PolarFreqs):
        raise TypeError(f"freqs must be a PolarFreqs (from PoPE.forward), got {type(freqs).__name__}")
    q4, k4 = to_bhtd(q, layout, "q"), to_bhtd(k, layout, "k")
    d = q4.shape[-1]
    if k4.shape[-1] != d:
        raise ValueError(f"q and k must have the same head dim, got q {q4.shape[-1]} and k {k4.shape[-1]}")
    if q4.shape[0] != k4.shape[0]:
        raise ValueError(f"q and k must have the same batch size, got {q4.shape[0]} and {k4.shape[0]}")
    r = freqs.inv_freq.shape[-1]
    if r > d:
        raise ValueError(f"rotate_dim ({r}) must be <= the head dim of q/k ({d})")
    H, Hkv = q4.shape[1], k4.shape[1]
    if freqs.delta.shape != (H, r):
        raise ValueError(f"delta must have shape (n_heads, rotate_dim) = {(H, r)} for these queries, "
                         f"got {tuple(freqs.delta.shape)}")
    if H % Hkv:
        raise ValueError(f"the number of query heads ({H}) must be a multiple of the key heads ({Hkv})")
    ang_q = _angles(q_positions, freqs.freqs, freqs.inv_freq, q4.shape[2], "q_positions")
    ang_k = _angles(k_positions, freqs.freqs, freqs.inv_freq, k4.shape[2], "k_positions")
    delta = freqs.delta.to(q4.device)[:, None, :]  # (H, 1, r)
    # spec 2.2: the bias sits on the key phase; with GQA, -delta on the query phase gives the same score
    shift_q, shift_k = (None, delta) if Hkv == H else (-delta, None)
    mq, mk = magnitude(q4), magnitude(k4)
    q2 = _polar(mq[..., :r], ang_q, shift_q)
    k2 = _polar(mk[..., :r], ang_k, shift_k)
    if r < d:  # partial PoPE: magnitude on the real axis, imaginary part 0, no position
        zq, zk = torch.zeros_like(mq[..., r:]), torch.zeros_like(mk[..., r:])
        q2 = torch.cat((q2, torch.stack((mq[..., r:], zq), -1).flatten(-2)), dim=-1)
        k2 = torch.cat((k2, torch.stack((mk[..., r:], zk), -1).flatten(-2)), dim=-1)
    if layout == "bthd":
        q2, k2 = q2.transpose(1, 2), k2.transpose(1, 2)
    return q2, k2


class PoPE(nn.Module):
    """Polar Coordinate Position Embedding for one attention layer.

    Args:
        head_dim: d, the per-head width of q/k (any d >= 1; no pairing, odd d works).
        n_heads: number of query heads (delta has one row per head).
        base: frequency base (10000; theta_c = base^(-(c-1)/rotate_dim)).
        rotate_dim: features that get a positional phase (default head_dim; fewer = partial PoPE).
        delta_init: "zeros" (default, best extrapolation), "uniform" (U(-2 pi, 0)) or a tensor (n_heads, rotate_dim).
        learn_delta: make delta a trainable `nn.Parameter` (else a buffer).
        clamp: (low, high) clamp of delta in the forward pass, default (-2 pi, 0); None disables it.
        magnitude: map from features to non-negative magnitudes (default softplus).
        inv_freq: optional custom (rotate_dim,) frequencies (e.g. from `yarn_scale_frequencies`).

    `forward(positions_or_len, offset=0) -> PolarFreqs` (angles for positions `arange(n) + offset` or a given
    (T,) / (B, T) position tensor); `encode(q, k, q_positions, k_positions)` applies the embedding directly.
    """

    def __init__(
        self,
        head_dim: int,
        n_heads: int,
        base: float = 10000.0,
        rotate_dim: int | None = None,
        delta_init: str | torch.Tensor = "zeros",
        learn_delta: bool = True,
        clamp: tuple[float, float] | None = (-2 * math.pi, 0.0),
        magnitude: Callable[[torch.Tensor], torch.Tensor] = F.softplus,
        inv_freq: torch.Tensor | None = None,
    ) -> None:
        super().__init__()
        for name, v in (("head_dim", head_dim), ("n_heads", n_heads)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if not base > 0:
            raise ValueError(f"base must be > 0, got {base!r}")
        rotate_dim = head_dim if rotate_dim is None else rotate_dim
        if not isinstance(rotate_dim, int) or isinstance(rotate_dim, bool) or not 1 <= rotate_dim <= head_dim:
            raise ValueError(f"rotate_dim must be an int in [1, head_dim={head_dim}], got {rotate_dim!r}")
        if clamp is not None and (len(clamp) != 2 or not clamp[0] <= clamp[1]):
            raise ValueError(f"clamp must be None or (low, high) with low <= high, got {clamp!r}")
        if not callable(magnitude):
            raise TypeError(f"magnitude must be callable, got {type(magnitude).__name__}")
        self.head_dim, self.n_heads, self.rotate_dim, self.base = head_dim, n_heads, rotate_dim, float(base)
        self.clamp = None if clamp is None else (float(clamp[0]), float(clamp[1]))
        self.magnitude = magnitude
        if inv_freq is None:
            inv_freq = pope_frequencies(rotate_dim, base)
        elif inv_freq.shape != (rotate_dim,):
            raise ValueError(f"inv_freq must have shape (rotate_dim,) = ({rotate_dim},), got {tuple(inv_freq.shape)}")
        self.register_buffer("inv_freq", inv_freq.to(torch.float64), persistent=False)
        if isinstance(delta_init, torch.Tensor):
            if delta_init.shape != (n_heads, rotate_dim):
                raise ValueError(f"delta_init must have shape (n_heads, rotate_dim) = {(n_heads, rotate_dim)}, "
                                 f"got {tuple(delta_init.shape)}")
            delta = delta_init.detach().clone().float()
        elif delta_init == "zeros":
            delta = torch.zeros(n_heads, rotate_dim)
        elif delta_init == "uniform":
            delta = torch.empty(n_heads, rotate_dim).uniform_(-2 * math.pi, 0.0)
        else:
            raise ValueError(f"delta_init must be 'zeros', 'uniform' or a tensor, got {delta_init!r}")
        if learn_delta:
            self.delta = nn.Parameter(delta)
        else:
            self.register_buffer("delta", delta)

    def extra_repr(self) -> str:
        return (f"head_dim={self.head_dim}, n_heads={self.n_heads}, rotate_dim={self.rotate_dim}, "
                f"base={self.base:g}, clamp={self.clamp}")

    def clamped_delta(self) -> torch.Tensor:
        """delta clamped to `clamp` (gradients flow where delta is inside the range)."""
        return self.delta if self.clamp is None else self.delta.clamp(*self.clamp)

    def forward(self, positions_or_len: int | torch.Tensor, offset: int | float = 0) -> PolarFreqs:
        pos = positions_tensor(positions_or_len, offset, self.inv_freq.device).to(self.inv_freq.device)
        freqs = pos[..., None] * self.inv_freq.to(torch.float64)
        return PolarFreqs(freqs, self.clamped_delta(), self.inv_freq.to(torch.float64))

    def encode(self, q: torch.Tensor, k: torch.Tensor, q_positions: torch.Tensor | None = None,
               k_positions: torch.Tensor | None = None, *, layout: str = "bhtd") -> tuple[torch.Tensor, torch.Tensor]:
        """`apply_pope` with this module's frequencies, delta and magnitude; default positions are 0..Tk-1 for
        keys and the last Tq of those for queries."""
        Tk = to_bhtd(k, layout, "k").shape[2]
        table = self(k_positions if k_positions is not None else Tk)
        return apply_pope(q, k, table, q_positions=q_positions, k_positions=k_positions, layout=layout,
                          magnitude=self.magnitude)

    @staticmethod
    def qk_dim(head_dim: int) -> int:
        """Width of q/k after the embedding (2 * head_dim)."""
        return 2 * head_dim
