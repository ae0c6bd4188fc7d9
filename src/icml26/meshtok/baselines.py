"""The paper's uniform-grid baselines and the equal-cost random ablation, behind MeshTok's interface.

Each returns a `MeshTok` (same tokenizer code, transformer, decoder and training loss) that differs only in the
tokenization, so an arm comparison isolates where the tokens go:

- `uniform_coarse`: K = 0, the BCAT-style uniform grid of n^2 patches of size P.
- `uniform_fine`: K = n^2, every patch split: (2n)^2 patches of size P/2 (each coarse cell's 4 children contiguous).
- `random_refine`: K = refine_ratio * n^2 uniformly random patches per frame, the same token count as MeshTok.
"""

from __future__ import annotations

from typing import Any

from icml26.meshtok.meshtok import MeshTok

__all__ = ["uniform_coarse", "uniform_fine", "random_refine", "make_arm", "ARMS"]

ARMS = ("meshtok", "random", "coarse", "fine")


def _reject(kwargs: dict[str, Any], *names: str) -> None:
    for n in names:
        if n in kwargs:
            raise TypeError(f"{n} is fixed by this baseline; use MeshTok(...) to set it")


def uniform_coarse(in_channels: int, grid: int, patch: int, **kwargs: Any) -> MeshTok:
    """MeshTok with no refinement (refine_ratio = 0): n^2 tokens per frame."""
    _reject(kwargs, "refine_ratio", "selection")
    return MeshTok(in_channels, grid, patch, refine_ratio=0.0, **kwargs)


def uniform_fine(in_channels: int, grid: int, patch: int, **kwargs: Any) -> MeshTok:
    """MeshTok with every patch refined (refine_ratio = 1): 4 n^2 tokens per frame (patch P/2)."""
    _reject(kwargs, "refine_ratio", "selection")
    return MeshTok(in_channels, grid, patch, refine_ratio=1.0, **kwargs)


def random_refine(in_channels: int, grid: int, patch: int, refine_ratio: float = 0.25, **kwargs: Any) -> MeshTok:
    """MeshTok refining K = refine_ratio * n^2 random patches per frame (equal token count to MeshTok)."""
    _reject(kwargs, "selection")
    return MeshTok(in_channels, grid, patch, refine_ratio=refine_ratio, selection="random", **kwargs)


def make_arm(arm: str, in_channels: int, grid: int, patch: int, refine_ratio: float = 0.25, **kwargs: Any) -> MeshTok:
    """One of ARMS: "meshtok" (physical indicator), "random", "coarse", "fine"."""
    if arm == "meshtok":
        return MeshTok(in_channels, grid, patch, refine_ratio=refine_ratio, **kwargs)
    if arm == "random":
        return random_refine(in_channels, grid, patch, refine_ratio, **kwargs)
    if arm == "coarse":
        return uniform_coarse(in_channels, grid, patch, **kwargs)
    if arm == "fine":
        return uniform_fine(in_channels, grid, patch, **kwargs)
    raise ValueError(f"arm must be one of {', '.join(map(repr, ARMS))}; got {arm!r}")
