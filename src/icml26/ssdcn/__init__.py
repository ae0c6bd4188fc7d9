"""SSDCN (ICML 2026): spatial-spectral dual-clustering network for hyperspectral image super-resolution.

    from icml26.ssdcn import SSDCN, SSDCB, FRRB, PyramidJointLoss, synthetic_hsi, degrade, metrics

The method is reconstructed from the paper's abstract (see `icml26.ssdcn.ssdcn` and docs/ssdcn.md).
"""

from icml26.ssdcn import metrics
from icml26.ssdcn.baselines import Bicubic, SmallCNN, SmallTransformer, TransformerBlock, attention
from icml26.ssdcn.data import degrade, endmember_library, load_mat, photo_hsi, synthetic_hsi
from icml26.ssdcn.losses import PyramidJointLoss, sam_loss
from icml26.ssdcn.metrics import cc, ergas, psnr, rmse, sam_degrees, ssim
from icml26.ssdcn.ssdcn import FRRB, SSDCB, SSDCN, count_params, flops
from icml26.ssdcn.train import evaluate, fit, predict

__all__ = [
           "FRRB",
           "SSDCB",
           "SSDCN",
           "Bicubic",
           "PyramidJointLoss",
           "SmallCNN",
           "SmallTransformer",
           "TransformerBlock",
           "attention",
           "cc",
           "count_params",
           "degrade",
           "endmember_library",
           "ergas",
           "evaluate",
           "fit",
           "flops",
           "load_mat",
           "metrics",
           "photo_hsi",
           "predict",
           "psnr",
           "rmse",
           "sam_degrees",
           "sam_loss",
           "ssim",
           "synthetic_hsi",
]
