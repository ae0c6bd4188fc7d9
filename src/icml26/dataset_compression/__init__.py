"""Unified dataset-compression benchmark and PCA (Prune, Combine, Augment), arXiv 2502.06434 (ICML 2026).

    from icml26.dataset_compression import PCACompressor, evaluate

    pca = PCACompressor(ipc=1, factor=2).fit(X, y)      # X (N, C, R, R): keep the 4 easiest per class (EL2N),
    print(pca.canvases_.shape)                           # tile them 2x2 -> (K, C, R, R), one label per canvas
    print(evaluate(pca, X_test, y_test)["acc"])          # fresh ConvNet, crops confined to one tile, hard labels

Pieces: pruning scores (`el2n_scores`, `forgetting_scores`, `aum_scores`), class-balanced selectors
(`ScoreSelector`, `RandomSelector`, `HerdingSelector`, `CCSSelector`), `combine_tiles` / `split_tiles`,
batched crops (`TileConstrainedRandomResizedCrop`, `RandomResizedCrop`), the distillation baseline
`DistributionMatching`, and the benchmark evaluator (`evaluate`, `storage_bytes`, `CompressedSet`).
"""

from icml26.dataset_compression.augment import RandomResizedCrop, TileConstrainedRandomResizedCrop, sample_boxes
from icml26.dataset_compression.baselines import (
    CCSSelector,
    DistributionMatching,
    HerdingSelector,
    RandomSelector,
    dm_loss,
)
from icml26.dataset_compression.benchmark import CompressedSet, evaluate, kd_loss, soft_targets, storage_bytes
from icml26.dataset_compression.data import load_digits_split, load_mnist_split
from icml26.dataset_compression.models import ConvNet, ResNet, convnet_factory, mlp_embedding_factory
from icml26.dataset_compression.pca import PCACompressor, TileCropDataset, area_downsample, combine_tiles, split_tiles
from icml26.dataset_compression.scoring import aum_scores, el2n_scores, forgetting_events, forgetting_scores
from icml26.dataset_compression.selection import ScoreSelector

__all__ = [
    "PCACompressor", "combine_tiles", "split_tiles", "area_downsample", "TileCropDataset",
    "TileConstrainedRandomResizedCrop", "RandomResizedCrop", "sample_boxes",
    "el2n_scores", "forgetting_scores", "aum_scores", "forgetting_events",
    "ScoreSelector", "RandomSelector", "HerdingSelector", "CCSSelector",
    "DistributionMatching", "dm_loss",
    "CompressedSet", "evaluate", "storage_bytes", "soft_targets", "kd_loss",
    "ConvNet", "ResNet", "convnet_factory", "mlp_embedding_factory",
    "load_digits_split", "load_mnist_split",
]
