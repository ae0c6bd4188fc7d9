"""Identifiable domain transfer from distribution matching, Jacobian sparsity and ONE anchor pair
(Shrestha, Timilsina, Nguyen & Fu, ICML 2026, arXiv 2605.17918).

    from icml26.sparse_transfer import AnchoredSparseTransfer, JacobianSparsityPenalty

    est = AnchoredSparseTransfer(jac_mode="exact", anchor_mode="resolve", lambda_cyc=0.0)
    est.fit(X_source, Y_target, anchors=(x_a, y_a))      # unpaired (n, d_x), (m, d_y); one paired sample
    Y_hat = est.transform(X_new)

    penalty = JacobianSparsityPenalty(mode="fd", n_probes=8, probe_frac=0.1, sigma=0.01)
    loss = gan_loss + 0.01 * penalty(generator, x)        # drop-in for any translator (B, *in) -> (B, *out)

Losses: `mmd2`, `GANLoss`, `r1_penalty`, `anchor_loss`. Baselines: `make_baseline` (DM, DM + anchor, DM + resolve,
DM + sparsity, DIMENSION), `OTMap` (POT), `PairedRegression`. Tasks and MPAs: `gauss_swap`, `uniform_dependent`,
`make_mpa`, `signed_permutations`. Metrics: `translation_error`, `jacobian_support_f1`, `label_preservation_acc`.
"""

from icml26.sparse_transfer.baselines import BASELINES, OTMap, PairedRegression, make_baseline
from icml26.sparse_transfer.data import (
    MPA,
    SyntheticTask,
    anchor_genericity,
    choose_anchor,
    gauss_swap,
    make_mpa,
    signed_permutations,
    uniform_dependent,
)
from icml26.sparse_transfer.jacobian import JacobianSparsityPenalty, batch_jacobian, jacobian_l1_exact, jacobian_l1_fd
from icml26.sparse_transfer.losses import GANLoss, anchor_loss, mmd2, r1_penalty
from icml26.sparse_transfer.metrics import jacobian_support_f1, label_preservation_acc, translation_error
from icml26.sparse_transfer.transfer import (
    AnchoredSparseTransfer,
    AnchorResolver,
    MLPDiscriminator,
    NotFittedError,
    mlp,
    oracle_resolved_te,
)

__all__ = [
    "BASELINES",
    "MPA",
    "AnchorResolver",
    "AnchoredSparseTransfer",
    "GANLoss",
    "JacobianSparsityPenalty",
    "MLPDiscriminator",
    "NotFittedError",
    "OTMap",
    "PairedRegression",
    "SyntheticTask",
    "anchor_genericity",
    "anchor_loss",
    "batch_jacobian",
    "choose_anchor",
    "gauss_swap",
    "jacobian_l1_exact",
    "jacobian_l1_fd",
    "jacobian_support_f1",
    "label_preservation_acc",
    "make_baseline",
    "make_mpa",
    "mlp",
    "mmd2",
    "oracle_resolved_te",
    "r1_penalty",
    "signed_permutations",
    "translation_error",
    "uniform_dependent",
]
