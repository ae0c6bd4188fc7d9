"""MeshTok: adaptive-mesh-refinement tokenization for block-causal PDE transformers (arXiv 2606.04366).

Read next to spec section 2 (the paper's full text was not available; the spec reconstructs the method from the
official code, SCAILab-USTC/MeshTok, built on the BCAT codebase):

  step 1  coarse n x n patch grid of P x P pixels                                     `MultiScaleTokenizer`
  step 2  per-frame physical indicator, K = refine_ratio * n^2 patches refined        `indicators.py`
  step 3  coarse tokens (kernel = stride = P) on the frame with refined patches zeroed, fine tokens
          (kernel = stride = P/2) inside refined patches, each refined patch replaced in place by its 4 children
          (row-major): L = n^2 + 3K tokens per frame; each token has (x, y) centre and depth level
  step 4  learnable per-frame time embedding + geometry FiLM (gamma = 1, beta = 0 at init)  `GeometryFiLM`
  step 5  block-causal transformer: frame t attends to all tokens of frames <= t; KV cache  `BlockCausalTransformer`
  step 6  decode frame t's tokens into frame t+1 with frame t's layout: ConvTranspose (P) on the coarse grid +
          ConvTranspose (P/2) on the fine grid, summed, then GELU -> 1x1 -> GELU -> 1x1 head    `.decode`

Implementation notes and deviations (also in docs/meshtok.md):
- Every conv / transposed conv whose kernel equals its stride is written as one `nn.Linear` per patch (plus a
  reshape), which is the same linear map (spec review note 1a); the fine encoder only runs on refined patches,
  which equals running it on the frame with non-refined patches zeroed and gathering. The two decoder branches
  have no bias (a bias there would leak into the other branch's cells); the head's 1x1 layers have biases.
- Residual head (`residual=True`, spec section 6): the decoder predicts u_{t+1} - u_t in normalised space. The
  official code predicts the full frame (`residual=False`).
- Per-sample, per-channel mean/std normalisation from the *input* frames only, inside `forward`/`loss`/`rollout`
  (so a user passes raw frames and gets raw predictions back).
- `flops()` counts with `torch.utils.flop_counter.FlopCounterMode` while the attention runs as explicit
  matmul-softmax-matmul (FlopCounterMode counts 0 for SDPA on CPU); the attention term equals
  4 * B * T_q * T_k * D per layer (full T x T even where masked).
- One refinement level only (`levels=1`, as the released code). Selection modes "physical" and "random"; the
  official "model" (learned CNN scorer) and "compare" (frozen UNet scorer) modes are not implemented.
- The FiLM block is applied to the input tokens (equivalently: inside the first layer, before its attention).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from icml26.common.validation import check_bool, check_choice, check_float, check_int, check_tensor
from icml26.meshtok.indicators import SELECTION_MODES, _weights, patch_scores, select_patches

__all__ = ["TokenBatch", "MultiScaleTokenizer", "GeometryFiLM", "BlockCausalTransformer", "KVCache",
           "block_causal_mask", "MeshTok", "refined_count"]

ATTN_IMPLS = ("sdpa", "math", "flex")


def refined_count(grid: int, patch: int, refine_ratio: float) -> int:
    """K = refine_ratio * n^2 with n = grid / patch; raises ValueError unless the geometry is consistent.

    grid must be divisible by patch, patch must be even (fine patches are P/2) and K must be an integer.
    """
    grid = check_int(grid, "grid", min=2)
    patch = check_int(patch, "patch", min=2)
    r = check_float(refine_ratio, "refine_ratio", min=0.0, max=1.0)
    if grid % patch:
        raise ValueError(f"grid={grid} must be divisible by patch={patch}")
    if patch % 2:
        raise ValueError(f"patch={patch} must be even (refined patches split into patch/2 children)")
    n2 = (grid // patch) ** 2
    k = r * n2
    if abs(k - round(k)) > 1e-9:
        raise ValueError(f"refine_ratio * n^2 = {r} * {n2} = {k} must be an integer number of patches")
    return int(round(k))


@dataclass
class TokenBatch:
    """One frame batch as MeshTok tokens. N frames, L = n^2 + 3K tokens each, D channels.

    Attributes:
        tokens: (N, L, D) (None in a layout-only batch).
        coords: (N, L, 2) cell centres (x = column, y = row) in [0, 1]^2.
        level: (N, L) long, 0 = coarse, 1 = fine.
        refined: (N, n*n) bool, True where the coarse patch is refined (raster order).
        refined_idx: (N, K) long, sorted ascending.
        perm: (N, L) long, sequence position -> index into [non-refined coarse tokens ; children of refined
            patches] (the internal order used by `decode`).
    """

    tokens: torch.Tensor | None
    coords: torch.Tensor
    level: torch.Tensor
    refined: torch.Tensor
    refined_idx: torch.Tensor
    perm: torch.Tensor

    def __len__(self) -> int:
        return int(self.coords.shape[0])


def _patchify(x: torch.Tensor, p: int) -> torch.Tensor:
    """(N, C, H, W) -> (N, n*n, C, p, p), raster order."""
    N, C, H, W = x.shape
    n_h, n_w = H // p, W // p
    return x.reshape(N, C, n_h, p, n_w, p).permute(0, 2, 4, 1, 3, 5).reshape(N, n_h * n_w, C, p, p)


def _unpatchify(x: torch.Tensor, n: int) -> torch.Tensor:
    """(N, n*n, C, p, p) -> (N, C, n*p, n*p)."""
    N, _, C, p, _ = x.shape
    return x.reshape(N, n, n, C, p, p).permute(0, 3, 1, 4, 2, 5).reshape(N, C, n * p, n * p)


class MultiScaleTokenizer(nn.Module):
    """AMR-style two-level tokenizer: encode frames to n^2 + 3K tokens, decode tokens back to frames.

    Args:
        in_channels: C, channels of a frame.
        grid: H = W, frame size in pixels.
        patch: coarse patch size P (even, divides grid); n = grid / P coarse patches per side.
        refine_ratio: share of the n^2 coarse patches refined per frame (K = refine_ratio * n^2 must be an
            integer); 0 = uniform coarse grid, 1 = uniform fine grid. Default 0.25 (official).
        dim: token width D.
        levels: refinement levels; only 1 (the released code's quadtree depth) is implemented.
        dec_width: channels of the decoder's full-resolution features (official 32).
        selection: "physical" (indicator top-K) or "random" (K random patches per frame).
        indicator_weights: (gradient, laplacian, mean-anomaly) weights of the physical score.
        periodic: circular padding in the indicator stencils.
        faithful_norm: the official (max + 1e-6) normalisation of the indicator terms.
        activation: "gelu" (official) or "identity" (a linear tokenizer, for checks).
    """

    def __init__(self, in_channels: int, grid: int, patch: int, refine_ratio: float = 0.25, dim: int = 64,
                 levels: int = 1, dec_width: int = 32, selection: str = "physical",
                 indicator_weights: Sequence[float] = (1.0, 1.0, 1.0), periodic: bool = False,
                 faithful_norm: bool = False, activation: str = "gelu") -> None:
        super().__init__()
        self.in_channels = check_int(in_channels, "in_channels", min=1)
        self.k = refined_count(grid, patch, refine_ratio)
        self.grid, self.patch, self.refine_ratio = int(grid), int(patch), float(refine_ratio)
        self.dim = check_int(dim, "dim", min=1)
        levels = check_int(levels, "levels", min=1)
        if levels != 1:
            raise ValueError(f"levels={levels}: only one refinement level is implemented (as the released code)")
        self.levels = levels
        self.dec_width = check_int(dec_width, "dec_width", min=1)
        self.selection = check_choice(selection, "selection", SELECTION_MODES)
        self.indicator_weights = _weights(indicator_weights)
        self.periodic = check_bool(periodic, "periodic")
        self.faithful_norm = check_bool(faithful_norm, "faithful_norm")
        self.activation = check_choice(activation, "activation", ("gelu", "identity"))
        self.n = self.grid // self.patch
        C, P, h, D, Wd = self.in_channels, self.patch, self.patch // 2, self.dim, self.dec_width
        # encoder: Conv2d(C, D, P, stride P) -> act -> 1x1 conv, no biases (as Linear per patch)
        self.coarse_in = nn.Linear(C * P * P, D, bias=False)
        self.coarse_mix = nn.Linear(D, D, bias=False)
        self.fine_in = nn.Linear(C * h * h, D, bias=False)
        self.fine_mix = nn.Linear(D, D, bias=False)
        # decoder: ConvTranspose2d(D, Wd, P, stride P) + ConvTranspose2d(D, Wd, P/2, stride P/2), then the head;
        # output features ordered (row, column, channel) so the pixels come out channels-last without a permute
        self.coarse_out = nn.Linear(D, P * P * Wd, bias=False)
        self.fine_out = nn.Linear(D, h * h * Wd, bias=False)
        self.head1 = nn.Linear(Wd, Wd)
        self.head2 = nn.Linear(Wd, C)

    # -- bookkeeping -------------------------------------------------------------------------------------------
    @property
    def tokens_per_frame(self) -> int:
        """L = n^2 + 3K."""
        return self.n ** 2 + 3 * self.k

    def _act(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x) if self.activation == "gelu" else x

    def _check_frames(self, frames: Any, name: str = "frames") -> torch.Tensor:
        x = check_tensor(frames, name, ndim=4)
        want = (self.in_channels, self.grid, self.grid)
        if tuple(x.shape[1:]) != want:
            raise ValueError(f"{name} must have shape (N, {want[0]}, {want[1]}, {want[2]}), got {tuple(x.shape)}")
        if x.shape[0] < 1:
            raise ValueError(f"{name} must hold at least one frame, got shape {tuple(x.shape)}")
        return x.to(self.coarse_in.weight.dtype)

    def scores(self, frames: torch.Tensor) -> torch.Tensor:
        """Physical indicator scores (N, n*n) of frames (N, C, H, W)."""
        return patch_scores(frames, self.patch, self.indicator_weights, self.periodic, self.faithful_norm)

    def select(self, frames: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """Refined patch indices (N, K), sorted, by this tokenizer's selection mode."""
        check_choice(self.selection, "selection", SELECTION_MODES)  # attributes may have been reassigned
        if self.selection == "physical":
            s = self.scores(frames)
        else:
            s = torch.zeros(frames.shape[0], self.n ** 2, dtype=frames.dtype, device=frames.device)
        return select_patches(s, self.k, self.selection, generator)

    def _check_refined(self, refined_idx: Any, N: int) -> torch.Tensor:
        if not isinstance(refined_idx, torch.Tensor):
            refined_idx = torch.as_tensor(check_tensor(refined_idx, "refined_idx", floating=False, min_size=0))
        if refined_idx.dtype.is_floating_point or refined_idx.dtype == torch.bool:
            raise TypeError(f"refined_idx must hold integers, got dtype {refined_idx.dtype}")
        if tuple(refined_idx.shape) != (N, self.k):
            raise ValueError(f"refined_idx must have shape ({N}, {self.k}), got {tuple(refined_idx.shape)}")
        idx = refined_idx.long()
        if idx.numel() and (idx.min() < 0 or idx.max() >= self.n ** 2):
            raise ValueError(f"refined_idx must lie in [0, {self.n ** 2 - 1}]")
        srt = torch.sort(idx, dim=1).values
        if self.k > 1 and bool((srt[:, 1:] == srt[:, :-1]).any()):
            raise ValueError("refined_idx must hold distinct patches per frame")
        return srt

    def layout(self, refined_idx: torch.Tensor, device: torch.device | None = None) -> TokenBatch:
        """Geometry (coords, level, perm) of the token sequence for refined indices (N, K) (no tokens)."""
        N, K, n = refined_idx.shape[0], self.k, self.n
        dev = device or refined_idx.device
        mask = torch.zeros(N, n * n, dtype=torch.bool, device=dev)
        mask.scatter_(1, refined_idx, True)
        nonref = torch.sort(mask.to(torch.int8), dim=1, stable=True).indices[:, : n * n - K]  # ascending
        child = torch.arange(4, device=dev)
        keys = torch.cat([4 * nonref, (4 * refined_idx.unsqueeze(-1) + child).reshape(N, 4 * K)], dim=1)
        perm = torch.argsort(keys, dim=1)
        # geometry in the internal order, then permuted
        r, c = nonref // n, nonref % n
        xy_c = torch.stack([(c + 0.5) / n, (r + 0.5) / n], -1)
        rr, cc = (refined_idx // n).unsqueeze(-1), (refined_idx % n).unsqueeze(-1)
        a, b = child // 2, child % 2
        xy_f = torch.stack([(2 * cc + b + 0.5) / (2 * n), (2 * rr + a + 0.5) / (2 * n)], -1).reshape(N, 4 * K, 2)
        xy = torch.cat([xy_c, xy_f], 1).to(torch.get_default_dtype())
        lev = torch.cat([torch.zeros(N, n * n - K, dtype=torch.long, device=dev),
                         torch.ones(N, 4 * K, dtype=torch.long, device=dev)], 1)
        coords = xy.gather(1, perm.unsqueeze(-1).expand(-1, -1, 2))
        return TokenBatch(None, coords, lev.gather(1, perm), mask, refined_idx, perm)

    # -- encode / decode ---------------------------------------------------------------------------------------
    def encode(self, frames: Any, refined_idx: Any = None, generator: torch.Generator | None = None) -> TokenBatch:
        """Frames (N, C, H, W) -> TokenBatch with tokens (N, n^2 + 3K, D).

        `refined_idx` (N, K) fixes the refined patches (e.g. a layout to reuse); default: chosen by `selection`.
        """
        x = self._check_frames(frames)
        N, K, n, P, h = x.shape[0], self.k, self.n, self.patch, self.patch // 2
        idx = self.select(x, generator) if refined_idx is None else self._check_refined(refined_idx, N)
        lay = self.layout(idx.to(x.device), x.device)
        patches = _patchify(x, P)  # (N, n^2, C, P, P)
        keep = (~lay.refined).nonzero()[:, 1].reshape(N, n * n - K)  # non-refined patches, ascending
        pc = patches.flatten(2).gather(1, keep.unsqueeze(-1).expand(-1, -1, patches[0, 0].numel()))
        tc = self.coarse_mix(self._act(self.coarse_in(pc)))  # (N, n^2 - K, D)
        pf = patches.gather(1, idx.view(N, K, 1, 1, 1).expand(-1, -1, *patches.shape[2:]))  # (N, K, C, P, P)
        C = x.shape[1]
        pf = pf.reshape(N, K, C, 2, h, 2, h).permute(0, 1, 3, 5, 2, 4, 6).reshape(N, 4 * K, C * h * h)
        tf = self.fine_mix(self._act(self.fine_in(pf)))  # (N, 4K, D)
        tok = torch.cat([tc, tf], 1).gather(1, lay.perm.unsqueeze(-1).expand(-1, -1, self.dim))
        lay.tokens = tok
        return lay

    def decode(self, tokens: Any, layout: TokenBatch) -> torch.Tensor:
        """Tokens (N, L, D) with a layout from `encode`/`layout` -> frames (N, C, H, W)."""
        if not isinstance(layout, TokenBatch):
            raise TypeError(f"layout must be a TokenBatch from encode()/layout(), got {type(layout).__name__}")
        N, L = layout.perm.shape
        t = check_tensor(tokens, "tokens", shape=(N, L, self.dim)).to(self.coarse_out.weight.dtype)
        K, n, P, h, Wd = self.k, self.n, self.patch, self.patch // 2, self.dec_width
        inner = torch.zeros_like(t).scatter(1, layout.perm.unsqueeze(-1).expand(-1, -1, self.dim), t)
        tc, tf = inner[:, : n * n - K], inner[:, n * n - K:]
        C = self.in_channels
        # each pixel belongs to exactly one branch (coarse cell or fine child), so the head runs per branch and
        # only its C-channel output is scattered into place (same result as summing the two zero-padded maps)
        out = t.new_zeros(N, n * n, P, P, C)
        if K < n * n:
            keep = (~layout.refined).nonzero()[:, 1].reshape(N, n * n - K)
            oc = self._head(self.coarse_out(tc).view(N, n * n - K, P, P, Wd))  # rows of coarse_out are (P, P, Wd)
            out = out.scatter(1, keep.view(N, -1, 1, 1, 1).expand(-1, -1, P, P, C), oc)
        if K:
            of = self.fine_out(tf).view(N, K, 2, 2, h, h, Wd).permute(0, 1, 2, 4, 3, 5, 6).reshape(N, K, P, P, Wd)
            out = out.scatter(1, layout.refined_idx.view(N, K, 1, 1, 1).expand(-1, -1, P, P, C), self._head(of))
        return _unpatchify(out.permute(0, 1, 4, 2, 3), n)

    def _head(self, feat: torch.Tensor) -> torch.Tensor:
        return self.head2(self._act(self.head1(self._act(feat))))


class GeometryFiLM(nn.Module):
    """Geometry-conditioned FiLM (spec step 4): tokens <- gamma(x, y, level) * tokens + beta(x, y, level).

    cond = [GELU(Linear(2, D/2)(x, y)), GELU(Embedding(2, D/2)(level))]; (gamma, beta) = MLP(cond) with
    MLP = Linear(D, D) -> GELU -> Linear(D, 2D), the last layer initialised so gamma = 1 and beta = 0.
    Input tokens (..., L, D), coords (..., L, 2), level (..., L) in {0, 1}. D must be even.
    """

    def __init__(self, dim: int, n_levels: int = 2) -> None:
        super().__init__()
        self.dim = check_int(dim, "dim", min=2)
        if self.dim % 2:
            raise ValueError(f"dim={dim} must be even (half for position, half for level)")
        self.n_levels = check_int(n_levels, "n_levels", min=1)
        self.pos = nn.Linear(2, dim // 2)
        self.lev = nn.Embedding(self.n_levels, dim // 2)
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, 2 * dim))
        nn.init.zeros_(self.mlp[2].weight)
        with torch.no_grad():
            self.mlp[2].bias.copy_(torch.cat([torch.ones(dim), torch.zeros(dim)]))

    def forward(self, tokens: torch.Tensor, coords: torch.Tensor, level: torch.Tensor) -> torch.Tensor:
        t = check_tensor(tokens, "tokens", min_size=1)
        if t.shape[-1] != self.dim:
            raise ValueError(f"tokens must have last dimension {self.dim}, got {tuple(t.shape)}")
        xy = check_tensor(coords, "coords", shape=(*t.shape[:-1], 2)).to(t.dtype)
        if not isinstance(level, torch.Tensor) or level.dtype.is_floating_point or tuple(level.shape) != t.shape[:-1]:
            raise ValueError(f"level must be an integer tensor of shape {tuple(t.shape[:-1])}")
        if level.numel() and (level.min() < 0 or level.max() >= self.n_levels):
            raise ValueError(f"level must lie in [0, {self.n_levels - 1}]")
        cond = torch.cat([F.gelu(self.pos(xy)), F.gelu(self.lev(level))], -1)
        gamma, beta = self.mlp(cond).chunk(2, -1)
        return gamma * t + beta


def block_causal_mask(tokens_per_frame: int, n_frames: int, device: torch.device | str | None = None
                      ) -> torch.Tensor:
    """Boolean (T*L, T*L) mask, True where query token i may attend key token j: frame(j) <= frame(i)."""
    L = check_int(tokens_per_frame, "tokens_per_frame", min=1)
    T = check_int(n_frames, "n_frames", min=1)
    f = torch.arange(T * L, device=device) // L
    return f.unsqueeze(1) >= f.unsqueeze(0)


class KVCache:
    """Per-layer keys/values of the frames seen so far (B, heads, T_seen * L, head_dim). One rollout each:
    `BlockCausalTransformer.generate` makes a fresh cache per call."""

    def __init__(self, depth: int) -> None:
        self.k: list[torch.Tensor | None] = [None] * depth
        self.v: list[torch.Tensor | None] = [None] * depth

    @property
    def length(self) -> int:
        return 0 if self.k[0] is None else int(self.k[0].shape[2])


def _norm_layer(kind: str, dim: int) -> nn.Module:
    return nn.RMSNorm(dim, eps=1e-6) if kind == "rms" else nn.LayerNorm(dim)


class _Attention(nn.Module):
    def __init__(self, dim: int, heads: int, qk_norm: bool, norm: str) -> None:
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.q_norm = _norm_layer(norm, self.hd) if qk_norm else nn.Identity()
        self.k_norm = _norm_layer(norm, self.hd) if qk_norm else nn.Identity()

    def forward(self, x: torch.Tensor, L: int, impl: str, cache: KVCache | None, layer: int) -> torch.Tensor:
        B, S, D = x.shape
        q, k, v = self.qkv(x).view(B, S, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4)
        q, k = self.q_norm(q), self.k_norm(k)
        past = 0
        if cache is not None:
            if cache.k[layer] is not None:
                past = cache.k[layer].shape[2]
                k = torch.cat([cache.k[layer], k], 2)
                v = torch.cat([cache.v[layer], v], 2)
            cache.k[layer], cache.v[layer] = k, v
        qf = (torch.arange(S, device=x.device) + past) // L
        kf = torch.arange(k.shape[2], device=x.device) // L
        if impl == "flex" and past == 0:
            from torch.nn.attention.flex_attention import create_block_mask, flex_attention

            def mask_mod(b, h, qi, ki):
                return (qi // L) >= (ki // L)

            bm = create_block_mask(mask_mod, None, None, S, S, device=x.device)
            o = flex_attention(q, k, v, block_mask=bm)
        elif impl == "math":
            att = (q @ k.transpose(-1, -2)) / math.sqrt(self.hd)
            att = att.masked_fill(~(qf.unsqueeze(1) >= kf.unsqueeze(0)), float("-inf")).softmax(-1)
            o = att @ v
        else:
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=qf.unsqueeze(1) >= kf.unsqueeze(0))
        return self.out(o.transpose(1, 2).reshape(B, S, D))


class _FFN(nn.Module):
    def __init__(self, dim: int, ffn: int, mlp: str) -> None:
        super().__init__()
        self.mlp = mlp
        self.w1 = nn.Linear(dim, ffn, bias=False)
        self.w2 = nn.Linear(ffn, dim, bias=False)
        self.w3 = nn.Linear(dim, ffn, bias=False) if mlp == "swiglu" else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.w3 is not None:
            return self.w2(F.silu(self.w1(x)) * self.w3(x))
        return self.w2(F.gelu(self.w1(x)))


class _Block(nn.Module):
    def __init__(self, dim: int, heads: int, ffn: int, qk_norm: bool, norm: str, mlp: str) -> None:
        super().__init__()
        self.n1, self.n2 = _norm_layer(norm, dim), _norm_layer(norm, dim)
        self.attn = _Attention(dim, heads, qk_norm, norm)
        self.ffn = _FFN(dim, ffn, mlp)

    def forward(self, x, L, impl, cache, layer):
        x = x + self.attn(self.n1(x), L, impl, cache, layer)
        return x + self.ffn(self.n2(x))


class BlockCausalTransformer(nn.Module):
    """Pre-norm transformer over a sequence of frames of L tokens each, block-causal across frames.

    Args:
        dim: D. depth: layers. heads: attention heads (D divisible by heads). ffn: hidden width of the FFN.
        qk_norm: normalise queries and keys per head (official: True). norm: "rms" (official) or "layer".
        mlp: "gelu" (the CPU reproduction) or "swiglu" (official). attn_impl: "sdpa" (default), "math"
            (explicit softmax; what `MeshTok.flops` counts) or "flex" (FlexAttention block mask, for long
            contexts on GPU; cached steps fall back to SDPA).
    forward(x (B, T*L, D), tokens_per_frame=L, cache=None) -> (B, T*L, D); with a `KVCache` the new frames attend
    to the cached ones too and are appended to it.
    """

    def __init__(self, dim: int, depth: int, heads: int, ffn: int, qk_norm: bool = True, norm: str = "rms",
                 mlp: str = "gelu", attn_impl: str = "sdpa") -> None:
        super().__init__()
        self.dim = check_int(dim, "dim", min=1)
        self.depth = check_int(depth, "depth", min=1)
        self.heads = check_int(heads, "heads", min=1)
        if self.dim % self.heads:
            raise ValueError(f"dim={dim} must be divisible by heads={heads}")
        self.ffn_dim = check_int(ffn, "ffn", min=1)
        qk_norm = check_bool(qk_norm, "qk_norm")
        norm = check_choice(norm, "norm", ("rms", "layer"))
        mlp = check_choice(mlp, "mlp", ("gelu", "swiglu"))
        self.attn_impl = check_choice(attn_impl, "attn_impl", ATTN_IMPLS)
        self.blocks = nn.ModuleList(_Block(dim, heads, ffn, qk_norm, norm, mlp) for _ in range(self.depth))
        self.norm = _norm_layer(norm, dim)

    def forward(self, x: torch.Tensor, tokens_per_frame: int, cache: KVCache | None = None) -> torch.Tensor:
        x = check_tensor(x, "x", ndim=3)
        if x.shape[-1] != self.dim:
            raise ValueError(f"x must have last dimension {self.dim}, got {tuple(x.shape)}")
        L = check_int(tokens_per_frame, "tokens_per_frame", min=1)
        if x.shape[1] % L or x.shape[1] == 0:
            raise ValueError(f"x length {x.shape[1]} must be a positive multiple of tokens_per_frame={L}")
        if cache is not None and not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache or None, got {type(cache).__name__}")
        if cache is not None and cache.length % L:
            raise ValueError(f"cache holds {cache.length} tokens, not a multiple of tokens_per_frame={L}")
        impl = self.attn_impl
        for i, blk in enumerate(self.blocks):
            x = blk(x, L, impl, cache, i)
        return self.norm(x)

    @torch.no_grad()
    def generate(self, prefix: torch.Tensor, n_frames: int, next_tokens: Callable[[torch.Tensor, int], torch.Tensor],
                 tokens_per_frame: int) -> list[torch.Tensor]:
        """KV-cache rollout: run `prefix` (B, T0*L, D), then `n_frames` times turn the last frame's outputs into
        the next frame's input tokens with `next_tokens(out_last (B, L, D), step) -> (B, L, D)` and extend.

        Returns the last-frame outputs of every step: n_frames + 1 tensors (B, L, D) (the first is the prefix's).
        """
        n_frames = check_int(n_frames, "n_frames", min=0)
        L = check_int(tokens_per_frame, "tokens_per_frame", min=1)
        cache = KVCache(self.depth)
        out = self(prefix, L, cache)[:, -L:]
        outs = [out]
        for s in range(n_frames):
            out = self(next_tokens(out, s), L, cache)[:, -L:]
            outs.append(out)
        return outs


class MeshTok(nn.Module):
    """MeshTok next-frame PDE surrogate: multi-scale tokenizer + geometry FiLM + block-causal transformer.

    Args (shapes: frames are (B, T, H, W, C), channels last as in the official HDF5 layout):
        in_channels: C. grid: H = W. patch: coarse patch size P. refine_ratio: K / n^2 (0.25 official).
        dim, depth, heads, ffn: transformer size (CPU repro: 64, 3, 4, 128; official: 512, 8, 8, 1280).
        mlp: "gelu" | "swiglu". qk_norm, norm: see `BlockCausalTransformer`. dec_width: decoder feature width.
        max_time_len: frames the learnable time embedding covers (official 20).
        selection, indicator_weights, periodic, faithful_norm: see `MultiScaleTokenizer`.
        residual: predict u_{t+1} - u_t (default True; the official code predicts the frame: False).
        attn_impl: "sdpa" | "math" | "flex".
    forward(frames) returns predictions (B, T, H, W, C) where output t predicts frame t+1.
    """

    def __init__(self, in_channels: int, grid: int, patch: int, refine_ratio: float = 0.25, dim: int = 64,
                 depth: int = 3, heads: int = 4, ffn: int = 128, mlp: str = "gelu", qk_norm: bool = True,
                 norm: str = "rms", dec_width: int = 32, max_time_len: int = 20, selection: str = "physical",
                 indicator_weights: Sequence[float] = (1.0, 1.0, 1.0), periodic: bool = False,
                 faithful_norm: bool = False, residual: bool = True, attn_impl: str = "sdpa") -> None:
        super().__init__()
        self.tokenizer = MultiScaleTokenizer(in_channels, grid, patch, refine_ratio, dim, 1, dec_width, selection,
                                             indicator_weights, periodic, faithful_norm)
        self.film = GeometryFiLM(dim)
        self.transformer = BlockCausalTransformer(dim, depth, heads, ffn, qk_norm, norm, mlp, attn_impl)
        self.max_time_len = check_int(max_time_len, "max_time_len", min=1)
        self.time_emb = nn.Parameter(torch.zeros(self.max_time_len, dim))
        nn.init.normal_(self.time_emb, std=0.02)
        self.residual = check_bool(residual, "residual")

    # -- helpers ------------------------------------------------------------------------------------------------
    def token_count(self) -> int:
        """Tokens per frame, n^2 + 3K."""
        return self.tokenizer.tokens_per_frame

    def _check_video(self, frames: Any, name: str, min_t: int = 1) -> torch.Tensor:
        x = check_tensor(frames, name, ndim=5)
        tk = self.tokenizer
        want = (tk.grid, tk.grid, tk.in_channels)
        if tuple(x.shape[2:]) != want:
            raise ValueError(f"{name} must have shape (B, T, {want[0]}, {want[1]}, {want[2]}), got {tuple(x.shape)}")
        if x.shape[0] < 1 or x.shape[1] < min_t:
            raise ValueError(f"{name} needs B >= 1 and T >= {min_t}, got shape {tuple(x.shape)}")
        if x.shape[1] > self.max_time_len:
            raise ValueError(f"{name} has T={x.shape[1]} frames, more than max_time_len={self.max_time_len}")
        return x.to(self.time_emb.dtype)

    @staticmethod
    def _stats(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-sample, per-channel mean/std over (T, H, W) of channels-last frames (B, T, H, W, C)."""
        mu = x.mean((1, 2, 3), keepdim=True)
        sd = x.std((1, 2, 3), keepdim=True, unbiased=False).clamp_min(1e-6)
        return mu, sd

    def _embed(self, z: torch.Tensor, t0: int, refined_idx=None, generator=None) -> TokenBatch:
        """z (B, T, C, H, W) normalised -> TokenBatch over B*T frames with time embedding + FiLM applied."""
        B, T = z.shape[:2]
        tb = self.tokenizer.encode(z.flatten(0, 1), refined_idx, generator)
        L = tb.tokens.shape[1]
        tok = tb.tokens.view(B, T, L, -1) + self.time_emb[t0:t0 + T].view(1, T, 1, -1)
        tb.tokens = self.film(tok.flatten(0, 1), tb.coords, tb.level)
        return tb

    def _predict_z(self, z: torch.Tensor, generator=None) -> tuple[torch.Tensor, TokenBatch]:
        B, T = z.shape[:2]
        tb = self._embed(z, 0, generator=generator)
        L = tb.tokens.shape[1]
        h = self.transformer(tb.tokens.reshape(B, T * L, -1), L)
        dz = self.tokenizer.decode(h.reshape(B * T, L, -1), tb).view_as(z)
        return (z + dz if self.residual else dz), tb

    # -- public API ----------------------------------------------------------------------------------------------
    def forward(self, frames: Any, generator: torch.Generator | None = None, targets: Any = None) -> torch.Tensor:
        """Next-frame predictions (B, T, H, W, C) for frames (B, T, H, W, C): output t predicts frame t+1.

        With `targets` (B, T, H, W, C) = frames 1..T, returns instead the teacher-forced MSE in the normalised
        space of the inputs (what `loss` computes; routed through forward so DDP wrappers sync gradients).
        """
        x = self._check_video(frames, "frames")
        mu, sd = self._stats(x)
        z = ((x - mu) / sd).permute(0, 1, 4, 2, 3)
        check_bool(self.residual, "residual")
        pz, _ = self._predict_z(z, generator)
        if targets is not None:
            tg = check_tensor(targets, "targets", shape=tuple(x.shape)).to(x.dtype)
            return F.mse_loss(pz, ((tg - mu) / sd).permute(0, 1, 4, 2, 3))
        return pz.permute(0, 1, 3, 4, 2) * sd + mu

    def loss(self, window: Any, generator: torch.Generator | None = None) -> torch.Tensor:
        """Teacher-forced MSE in normalised space on a window (B, T+1, H, W, C): inputs frames 0..T-1, targets
        1..T, statistics from the inputs only."""
        w = check_tensor(window, "window", ndim=5)
        if w.shape[1] < 2:
            raise ValueError(f"window needs at least 2 frames, got shape {tuple(w.shape)}")
        return self(w[:, :-1], generator, targets=w[:, 1:])

    @torch.no_grad()
    def rollout(self, context: Any, n_steps: int, use_cache: bool = True, window: int | None = None,
                generator: torch.Generator | None = None) -> torch.Tensor:
        """Autoregressive rollout from context frames (B, T0, H, W, C): returns (B, n_steps, H, W, C).

        Each predicted frame is re-tokenized (new refinement layout from the predicted state) and appended.
        use_cache=True: KV cache (`BlockCausalTransformer.generate`); False: full recomputation each step (same
        result up to float rounding in "physical" mode). window=w: slide a w-frame context instead (time indices
        0..w-1 as in training), no cache. Normalisation statistics come from the context and stay fixed.
        Without `window`, T0 + n_steps - 1 must not exceed max_time_len.
        """
        n_steps = check_int(n_steps, "n_steps", min=1)
        use_cache = check_bool(use_cache, "use_cache")
        x = self._check_video(context, "context")
        T0 = x.shape[1]
        if window is not None:
            window = check_int(window, "window", min=1, max=self.max_time_len)
        elif T0 + n_steps - 1 > self.max_time_len:
            raise ValueError(f"context T0={T0} + n_steps={n_steps} - 1 exceeds max_time_len={self.max_time_len}; "
                             "pass window= for a sliding context")
        mu, sd = self._stats(x)
        z = ((x - mu) / sd).permute(0, 1, 4, 2, 3)  # (B, T, C, H, W)
        B = z.shape[0]
        preds = []
        if window is not None or not use_cache:
            frames = z
            for _ in range(n_steps):
                inp = frames[:, -window:] if window is not None else frames
                pz, _ = self._predict_z(inp, generator)
                nxt = pz[:, -1:]
                preds.append(nxt)
                frames = torch.cat([frames, nxt], 1)
        else:
            tb = self._embed(z, 0, generator=generator)
            L = tb.tokens.shape[1]
            state = {"z": z[:, -1], "layout": _last_layout(tb, B, z.shape[1]), "t": T0}

            def step(out_last: torch.Tensor, s: int) -> torch.Tensor:
                dz = self.tokenizer.decode(out_last, state["layout"])
                nz = state["z"] + dz if self.residual else dz
                preds.append(nz.unsqueeze(1))
                if s == n_steps - 1:  # the last prediction is not fed back
                    return out_last
                nb = self._embed(nz.unsqueeze(1), state["t"], generator=generator)
                state.update(z=nz, layout=nb, t=state["t"] + 1)
                return nb.tokens.view(B, L, -1)

            outs = self.transformer.generate(tb.tokens.reshape(B, -1, tb.tokens.shape[-1]), n_steps - 1, step, L)
            step(outs[-1], n_steps - 1)  # decode the last frame (its re-encoding is not used)
        return torch.cat(preds, 1).permute(0, 1, 3, 4, 2) * sd + mu

    def flops(self, input_shape: Sequence[int]) -> dict[str, int]:
        """FLOPs of one forward on frames of `input_shape` = (B, T, H, W, C).

        Counted with FlopCounterMode while attention runs as explicit matmuls (SDPA counts 0 on CPU).
        Returns {"total", "attention" (= 4 * B * (T L)^2 * D * depth, full T x T), "non_attention", "tokens"}.
        """
        from torch.utils.flop_counter import FlopCounterMode

        if isinstance(input_shape, (str, bytes)) or not isinstance(input_shape, Sequence) or len(input_shape) != 5:
            raise TypeError(f"input_shape must be a sequence (B, T, H, W, C), got {input_shape!r}")
        shape = [check_int(v, f"input_shape[{i}]", min=1) for i, v in enumerate(input_shape)]
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(0)).to(self.time_emb.dtype)
        self._check_video(x, "input_shape")
        old = self.transformer.attn_impl
        self.transformer.attn_impl = "math"
        try:
            with torch.no_grad(), FlopCounterMode(display=False) as fc:
                self(x)
        finally:
            self.transformer.attn_impl = old
        total = int(fc.get_total_flops())
        S = shape[1] * self.token_count()
        att = 4 * shape[0] * S * S * self.transformer.dim * self.transformer.depth
        return {"total": total, "attention": att, "non_attention": total - att, "tokens": S * shape[0]}


def _last_layout(tb: TokenBatch, B: int, T: int) -> TokenBatch:
    """The layout of frame T-1 of each sample from a TokenBatch over B*T frames."""
    sel = torch.arange(B) * T + (T - 1)
    return TokenBatch(None, tb.coords[sel], tb.level[sel], tb.refined[sel], tb.refined_idx[sel], tb.perm[sel])
