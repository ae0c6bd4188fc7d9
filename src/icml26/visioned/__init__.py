"""VisionED: multi-shot electron-density images + physics-informed pretraining (ICML 2026), as components.

    from icml26.visioned import EDCalculator, render_multishot, ed_point_cloud, VisionEDViT, \
        VisionEDPretrainer, VisionEDRegressor

`EDCalculator` (RDKit conformers + PySCF densities on a grid, disk cache, parallel workers) -> `EDRecord`;
`render_multishot` (RGB-D isosurface shots coloured by ESP) and `ed_point_cloud` (threshold + FPS) featurise a
record; `VisionEDViT` + `VisionEDPretrainer` (MIM + physics + composition + cross-shot contrastive pretext
tasks) + `VisionEDRegressor` (fine-tuning) are the model. Baselines: `ECFPRegressor`, `PointCloudRegressor`
(PointNet++-lite / PointNet). Heavy optional dependencies (pyscf, rdkit, scikit-learn: extra [visioned]) are
imported only when used.
"""

from icml26.visioned.baselines import ECFPRegressor, PointCloudRegressor, PointNet, PointNetPPLite, ecfp_features
from icml26.visioned.data import enumerate_small_molecules, random_split, scaffold_split, stratified_sample
from icml26.visioned.density import (
    COMP_KEYS,
    LABEL_KEYS,
    PHYS_KEYS,
    EDCalculator,
    EDRecord,
    canonical_frame,
    check_no_leakage,
    esp_charges,
    esp_exact,
    read_cube,
    write_cube,
)
from icml26.visioned.metrics import representation_bytes, training_step_memory
from icml26.visioned.model import VisionEDPretrainer, VisionEDRegressor, VisionEDViT, mim_loss
from icml26.visioned.render import ed_point_cloud, farthest_point_sampling, render_multishot

__all__ = [
    "EDCalculator", "EDRecord", "canonical_frame", "esp_exact", "esp_charges", "read_cube", "write_cube",
    "render_multishot", "ed_point_cloud", "farthest_point_sampling",
    "VisionEDViT", "VisionEDPretrainer", "VisionEDRegressor", "mim_loss",
    "ECFPRegressor", "PointCloudRegressor", "PointNetPPLite", "PointNet", "ecfp_features",
    "enumerate_small_molecules", "stratified_sample", "random_split", "scaffold_split",
    "representation_bytes", "training_step_memory", "PHYS_KEYS", "COMP_KEYS", "LABEL_KEYS", "check_no_leakage",
]
