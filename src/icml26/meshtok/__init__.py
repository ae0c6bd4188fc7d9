"""MeshTok (arXiv 2606.04366): adaptive-mesh-refinement tokenization for block-causal PDE transformers.

    from icml26.meshtok import MeshTok, burgers2d

    model = MeshTok(in_channels=1, grid=64, patch=8, refine_ratio=0.25)   # 64 + 3 * 16 = 112 tokens per frame
    frames = torch.from_numpy(burgers2d(4, n_frames=5))                     # (B, T, H, W, C)
    loss = model.loss(frames)                                               # teacher-forced next-frame MSE
    future = model.rollout(frames[:, :4], n_steps=3)                        # (B, 3, H, W, C), KV cache

Parts: `patch_scores` / `select_patches` (the physical refinement indicator), `MultiScaleTokenizer`
(encode / decode), `GeometryFiLM`, `BlockCausalTransformer` (+ `block_causal_mask`, KV-cache `generate`),
`MeshTok`; baselines `uniform_coarse`, `uniform_fine`, `random_refine`; data `burgers2d`, `allen_cahn2d`,
`gray_scott2d`, `read_hdf5`, `write_hdf5`; metrics `rel_l2`, `rollout_rel_l2`.
"""

from icml26.meshtok.baselines import make_arm, random_refine, uniform_coarse, uniform_fine
from icml26.meshtok.data import allen_cahn2d, burgers2d, gray_scott2d, read_hdf5, trajectory_windows, write_hdf5
from icml26.meshtok.indicators import indicator_terms, patch_scores, select_patches
from icml26.meshtok.meshtok import (
    BlockCausalTransformer,
    GeometryFiLM,
    KVCache,
    MeshTok,
    MultiScaleTokenizer,
    TokenBatch,
    block_causal_mask,
    refined_count,
)
from icml26.meshtok.metrics import masked_rel_l2, rel_l2, rollout_rel_l2

__all__ = [
    "MeshTok", "MultiScaleTokenizer", "TokenBatch", "GeometryFiLM", "BlockCausalTransformer", "KVCache",
    "block_causal_mask", "refined_count", "patch_scores", "select_patches", "indicator_terms",
    "uniform_coarse", "uniform_fine", "random_refine", "make_arm",
    "burgers2d", "allen_cahn2d", "gray_scott2d", "read_hdf5", "write_hdf5", "trajectory_windows",
    "rel_l2", "rollout_rel_l2", "masked_rel_l2",
]
