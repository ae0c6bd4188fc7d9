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

from icml26.common.validation import check_array, check_bool, check_choice, check_float, check_int, check_tensor

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
    dim = check_int(dim, "dim", min=1)
    base = check_float(base, "base", min=0.0, min_open=True)
    return base ** (-torch.arange(dim, dtype=torch.float64) / dim)


def positions_tensor(positions_or_len: int | torch.Tensor, offset: int | float = 0,
                     device: torch.device | None = None) -> torch.Tensor:
    """`arange(n) + offset` for an int, or the given (T,) / (B, T) positions + offset, as float64.

    Raises ValueError for a negative / non-integer length, NaN/inf positions or offset, and wrong position shapes;
    TypeError for a bool, a string or a complex tensor.
    """
    offset = check_float(offset, "offset")
    if isinstance(positions_or_len, torch.Tensor):
        if positions_or_len.is_complex() or positions_or_len.dtype == torch.bool:
            raise TypeError(f"positions must be a real integer or float tensor, got {positions_or_len.dtype}")
        if positions_or_len.ndim not in (1, 2):
            raise ValueError(f"positions must be (T,) or (B, T), got shape {tuple(positions_or_len.shape)}")
        pos = positions_or_len.to(torch.float64)
        if not bool(torch.isfinite(pos).all()):
            raise ValueError("positions must be finite (no NaN/inf)")
        return pos + offset
    n = check_int(positions_or_len, "positions_or_len", min=0)
    return torch.arange(n, dtype=torch.float64, device=device) + offset


def check_positions(positions, name: str, T: int, B: int) -> torch.Tensor:
    """Validate explicit positions for a batch of B sequences of T tokens: a (T,) or (B, T) real tensor (a list is
    read like a tensor), finite; returned unchanged (float positions are allowed: they are angles' multipliers)."""
    if not isinstance(positions, torch.Tensor):
        positions = torch.as_tensor(check_array(positions, name, ndim=(1, 2), dtype=None, min_size=0))
    if positions.is_complex() or positions.dtype == torch.bool:
        raise TypeError(f"{name} must be a real integer or float tensor, got {positions.dtype}")
    if positions.ndim not in (1, 2) or positions.shape[-1] != T or (positions.ndim == 2 and positions.shape[0]
                                                                      not in (1, B)):
        raise ValueError(f"{name} must have shape ({T},) or ({B}, {T}), got {tuple(positions.shape)}")
    if positions.is_floating_point() and not bool(torch.isfinite(positions).all()):
        raise ValueError(f"{name} must be finite (no NaN/inf)")
    return positions


def check_qk_tensor(x, name: str, check_finite: bool = True) -> torch.Tensor:
    """`x` must be a floating torch tensor (integer activations would fail inside softplus / SDPA); with
    `check_finite` it must hold no NaN/inf."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating tensor (float32/float64/bf16/fp16), got {x.dtype}; "
                        f"convert it with .float()")
    if check_finite and not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} must be finite; it holds {int((~torch.isfinite(x)).sum())} NaN/inf value(s)")
    return x


def check_encoding(enc, name: str = "pope") -> None:
    """An encoding argument must be None or a module *instance* with `encode` (not a name, not a class)."""
    if enc is None:
        return
    if isinstance(enc, str):
        raise TypeError(f"{name} must be a position-encoding module instance such as PoPE(head_dim, n_heads), got "
                        f"the string {enc!r}; build the module once and pass it (PoPE's delta is learned)")
    if isinstance(enc, type):
        raise TypeError(f"{name} must be an instance, got the class {enc.__name__}; instantiate it, e.g. "
                        f"{enc.__name__}(head_dim, n_heads)")
    if not callable(getattr(enc, "encode", None)):
        raise TypeError(f"{name} must have an encode(q, k, q_positions, k_positions) method (PoPE, RoPE, ALiBi, "
                        f"NoPE), got {type(enc).__name__}")


def to_bhtd(x: torch.Tensor, layout: str, name: str) -> torch.Tensor:
    """`x` as (B, H, T, d): unchanged for layout "bhtd", transposed for "bthd"; 4-D tensors only."""
    check_choice(layout, "layout", LAYOUTS)
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
    check_finite: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Map queries and keys to PoPE's Cartesian form (spec 2.3), so q2 . k2 = sum_c mu_q mu_k cos((s-t)theta_c+delta_c).

    Args:
        q: (B, H, Tq, d) queries, or (B, Tq, H, d) with layout="bthd".
        k: (B, H_kv, Tk, d) keys (H_kv may divide H: grouped-query attention), same layout.
        freqs: `PolarFreqs` from `PoPE.forward` (angles for the key positions; queries use the last Tq rows).
        q_positions, k_positions: optional (T,) or (B, T) absolute positions overriding the table in `freqs`.
        layout: "bhtd" (default) or "bthd".
        magnitude: the non-negative magnitude map (softplus in the paper; ablations use relu / identity).
        check_finite: refuse NaN/inf in q and k (default; models in a hot loop may pass False).
    Returns:
        (q2, k2) in the input layout with last dim 2d: interleaved (re, im) pairs, re at even indices.
    Raises:
        TypeError: q/k not floating tensors, freqs not a `PolarFreqs`; ValueError: shapes, NaN/inf, positions.
    """
    if not isinstance(freqs, PolarFreqs):
        raise TypeError(f"freqs must be a PolarFreqs (from PoPE.forward), got {type(freqs).__name__}")
    if not callable(magnitude):
        raise TypeError(f"magnitude must be callable, got {type(magnitude).__name__}")
    check_finite = check_bool(check_finite, "check_finite")
    q4 = to_bhtd(check_qk_tensor(q, "q", check_finite), layout, "q")
    k4 = to_bhtd(check_qk_tensor(k, "k", check_finite), layout, "k")
    if min(q4.shape) < 1 or min(k4.shape) < 1:
        raise ValueError(f"q and k must be non-empty, got q {tuple(q4.shape)} and k {tuple(k4.shape)}")
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
    if q_positions is not None:
        q_positions = check_positions(q_positions, "q_positions", q4.shape[2], q4.shape[0])
    if k_positions is not None:
        k_positions = check_positions(k_positions, "k_positions", k4.shape[2], k4.shape[0])
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
        head_dim = check_int(head_dim, "head_dim", min=1)
        n_heads = check_int(n_heads, "n_heads", min=1)
        base = check_float(base, "base", min=0.0, min_open=True)
        rotate_dim = head_dim if rotate_dim is None else check_int(rotate_dim, "rotate_dim", min=1, max=head_dim)
        if clamp is not None:
            if isinstance(clamp, (str, bytes)) or not hasattr(clamp, "__len__") or len(clamp) != 2:
                raise ValueError(f"clamp must be None or (low, high) with low <= high, got {clamp!r}")
            clamp = (check_float(clamp[0], "clamp[0]"), check_float(clamp[1], "clamp[1]"))
            if clamp[0] > clamp[1]:
                raise ValueError(f"clamp must be None or (low, high) with low <= high, got {clamp!r}")
        if not callable(magnitude):
            raise TypeError(f"magnitude must be callable, got {type(magnitude).__name__}")
        learn_delta = check_bool(learn_delta, "learn_delta")
        self.head_dim, self.n_heads, self.rotate_dim, self.base = head_dim, n_heads, rotate_dim, base
        self.clamp = clamp
        self.magnitude = magnitude
        if inv_freq is None:
            inv_freq = pope_frequencies(rotate_dim, base)
        else:
            inv_freq = check_tensor(inv_freq, "inv_freq", shape=(rotate_dim,), dtype=torch.float64)
        self.register_buffer("inv_freq", inv_freq.to(torch.float64), persistent=False)
        if isinstance(delta_init, str):
            check_choice(delta_init, "delta_init", ("zeros", "uniform"))
            delta = torch.zeros(n_heads, rotate_dim)
            if delta_init == "uniform":
                delta.uniform_(-2 * math.pi, 0.0)
        else:  # a tensor (or list / array) of shape (n_heads, rotate_dim); a floating dtype is kept
            try:
                delta = check_tensor(delta_init, "delta_init", shape=(n_heads, rotate_dim))
            except TypeError:
                raise TypeError(f"delta_init must be 'zeros', 'uniform' or a tensor of shape "
                                f"{(n_heads, rotate_dim)}, got {type(delta_init).__name__}") from None
            delta = delta.detach().clone()
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
               k_positions: torch.Tensor | None = None, *, layout: str = "bhtd",
               check_finite: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        """`apply_pope` with this module's frequencies, delta and magnitude; default positions are 0..Tk-1 for
        keys and the last Tq of those for queries. `check_finite` as in `apply_pope`."""
        k4 = to_bhtd(check_qk_tensor(k, "k", False), layout, "k")
        if k_positions is not None:
            k_positions = check_positions(k_positions, "k_positions", k4.shape[2], k4.shape[0])
        table = self(k_positions if k_positions is not None else k4.shape[2])
        return apply_pope(q, k, table, q_positions=q_positions, k_positions=k_positions, layout=layout,
                          magnitude=self.magnitude, check_finite=check_finite)

    @staticmethod
    def qk_dim(head_dim: int) -> int:
        """Width of q/k after the embedding (2 * head_dim)."""
        return 2 * head_dim
