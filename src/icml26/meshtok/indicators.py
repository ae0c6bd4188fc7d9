"""Refinement indicators and patch selection (spec section 2, step 2: `select = "physical"`).

For a frame u (C x H x W) split into n x n patches of P x P pixels, MeshTok scores each patch by

    g = mean_c sqrt(Sobel_x(u_c)^2 + Sobel_y(u_c)^2)            (3x3 Sobel, zero padding 1)
    h = mean_c |Laplace_5pt(u_c)|                                 (stencil [[0,-1,0],[-1,4,-1],[0,-1,0]])
    G_j = avgpool_P(g)_j,  H_j = avgpool_P(h)_j,  A_j = mean_c |mean_{patch j} u_c - mean_frame u_c|
    score_j = w_g * norm(G)_j + w_h * norm(H)_j + w_a * norm(A)_j

with `norm` a min-max normalisation over the frame's n^2 patches, and refines the K top-scoring patches.

Deviation (documented, selectable): the official code's `norm` divides by (max + 1e-6) rather than by the range;
the default here is the min-max form (v - min) / (max - min + 1e-6), so every term spans [0, 1] whatever its offset;
`faithful_norm=True` gives (v - min) / (max + 1e-6) as the spec describes the official form (reconstructed: the
official source text was not available to us, only the spec's description of it).
`periodic=True` (an extension) uses circular padding for the stencils, right for periodic domains.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.nn.functional as F

from icml26.common.validation import check_bool, check_choice, check_float, check_int, check_tensor

__all__ = ["patch_scores", "select_patches", "indicator_terms", "SELECTION_MODES"]

SELECTION_MODES = ("physical", "random")

_SOBEL_X = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]])
_LAPLACE = torch.tensor([[0.0, -1.0, 0.0], [-1.0, 4.0, -1.0], [0.0, -1.0, 0.0]])


def _check_frames(x: Any, patch: Any) -> tuple[torch.Tensor, int]:
    x = check_tensor(x, "x", ndim=4)
    p = check_int(patch, "patch", min=1)
    H, W = x.shape[-2:]
    if H % p or W % p:
        raise ValueError(f"patch={p} must divide the frame size {H} x {W}")
    if H // p != W // p:
        raise ValueError(f"x must give a square patch grid, got {H // p} x {W // p} patches of {p} pixels")
    return x, p


def _weights(weights: Any) -> tuple[float, float, float]:
    if isinstance(weights, (str, bytes)) or not isinstance(weights, (Sequence, torch.Tensor)) or len(weights) != 3:
        raise TypeError(f"weights must be three numbers (gradient, laplacian, mean-anomaly), got {weights!r}")
    w = tuple(check_float(v, f"weights[{i}]", min=0.0) for i, v in enumerate(weights))
    if sum(w) == 0:
        raise ValueError("weights must not all be zero")
    return w  # type: ignore[return-value]


def indicator_terms(x: torch.Tensor, patch: int, periodic: bool = False) -> dict[str, torch.Tensor]:
    """The three raw per-patch terms (before normalisation), each (N, n*n) in raster order.

    Args:
        x: frames (N, C, H, W), H = W = n * patch.
        patch: coarse patch size P in pixels.
        periodic: circular instead of zero padding for the 3x3 stencils.
    Returns:
        {"gradient": G, "laplacian": H, "anomaly": A}.
    """
    x, p = _check_frames(x, patch)
    periodic = check_bool(periodic, "periodic")
    N, C, Hh, Ww = x.shape
    dtype = x.dtype
    x = x.to(torch.float64)  # float32 fields near 1e30 would overflow the squared gradient otherwise
    xc = x.reshape(N * C, 1, Hh, Ww)
    if periodic:
        xp = F.pad(xc, (1, 1, 1, 1), mode="circular")
    else:
        xp = F.pad(xc, (1, 1, 1, 1))
    k = torch.stack([_SOBEL_X, _SOBEL_X.T, _LAPLACE]).unsqueeze(1).to(x.dtype)
    out = F.conv2d(xp, k)  # (N*C, 3, H, W)
    g = torch.hypot(out[:, 0], out[:, 1]).reshape(N, C, Hh, Ww).mean(1)
    h = out[:, 2].abs().reshape(N, C, Hh, Ww).mean(1)
    G = F.avg_pool2d(g.unsqueeze(1), p).flatten(1)
    Hl = F.avg_pool2d(h.unsqueeze(1), p).flatten(1)
    pm = F.avg_pool2d(x, p)  # (N, C, n, n)
    A = (pm - x.mean((2, 3), keepdim=True)).abs().mean(1).flatten(1)
    terms = {"gradient": G, "laplacian": Hl, "anomaly": A}
    for name, v in terms.items():
        if not bool(torch.isfinite(v).all()):
            raise ValueError(f"x is too large for the indicator: its {name} term overflows (rescale the field)")
    return {k: v.to(dtype) for k, v in terms.items()}


def _norm(v: torch.Tensor, faithful: bool) -> torch.Tensor:
    lo = v.min(dim=1, keepdim=True).values
    hi = v.max(dim=1, keepdim=True).values
    den = (hi + 1e-6) if faithful else (hi - lo + 1e-6)
    return (v - lo) / den


def patch_scores(x: Any, patch: int, weights: Sequence[float] = (1.0, 1.0, 1.0), periodic: bool = False,
                 faithful_norm: bool = False) -> torch.Tensor:
    """MeshTok's physical refinement score of every coarse patch.

    Args:
        x: frames (N, C, H, W) (tensor, array or list), finite; H = W = n * patch.
        patch: coarse patch size P (pixels).
        weights: (w_gradient, w_laplacian, w_anomaly) >= 0, default (1, 1, 1) as in the official code.
            (1, 0, 0) gives a gradient-only indicator.
        periodic: circular padding for the stencils (default False: zero padding, as the official code).
        faithful_norm: normalise by (max + 1e-6) as the official code (default False: by the range).
    Returns:
        scores (N, n*n), raster order (row-major over the patch grid); larger = refine first.
    """
    w = _weights(weights)
    faithful_norm = check_bool(faithful_norm, "faithful_norm")
    t = {k: v.to(torch.float64) for k, v in indicator_terms(x, patch, periodic).items()}
    dtype = torch.as_tensor(x).dtype if not isinstance(x, torch.Tensor) else x.dtype
    dtype = dtype if dtype.is_floating_point else torch.get_default_dtype()
    return (w[0] * _norm(t["gradient"], faithful_norm) + w[1] * _norm(t["laplacian"], faithful_norm) \
        + w[2] * _norm(t["anomaly"], faithful_norm)).to(dtype)


def select_patches(scores: Any, k: int, mode: str = "physical", generator: torch.Generator | None = None
                   ) -> torch.Tensor:
    """Indices of the K patches to refine per frame, sorted ascending (unique, exactly K per row).

    Args:
        scores: (N, n*n) patch scores (used by "physical"; for "random" only its shape matters).
        k: number of refined patches K, 0 <= K <= n*n.
        mode: "physical" = the K largest scores (ties go to the lower raster index, deterministically);
            "random" = K distinct patches uniformly at random per frame (the equal-cost ablation).
        generator: torch.Generator for "random" (default: torch's global RNG).
    Returns:
        LongTensor (N, K).
    """
    s = check_tensor(scores, "scores", ndim=2)
    n2 = s.shape[1]
    k = check_int(k, "k", min=0, max=n2)
    check_choice(mode, "mode", SELECTION_MODES)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    if mode == "physical":
        # stable sort of -score: equal scores keep raster order, so ties are broken towards the lower index
        idx = torch.sort(-s, dim=1, stable=True).indices[:, :k]
    else:
        r = torch.rand(s.shape, generator=generator, dtype=torch.float32)
        idx = torch.argsort(r.to(s.device), dim=1)[:, :k]
    return torch.sort(idx, dim=1).values
