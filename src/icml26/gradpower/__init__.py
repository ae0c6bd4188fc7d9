"""GradPower (Wang, Wang et al., arXiv 2505.24275): sign-power gradients phi_p(g) = sign(g)|g|^p for LM pre-training.

    from icml26.gradpower import AdamWPower
    opt = AdamWPower(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, power=1.2)

`GradPower(base_optimizer)` applies the same transform in front of any torch optimizer (Muon included);
`build_muon_adamw(model)` builds MuonPower for a whole model.
"""

from icml26.gradpower.functional import foreach_sign_power_, sign_power, sign_power_
from icml26.gradpower.lm import TinyLlama
from icml26.gradpower.mechanism import gradient_noise_scale, optimizer_drift
from icml26.gradpower.optim import (
    AdamWPower,
    CombinedOptimizer,
    GradPower,
    MuonPower,
    build_muon_adamw,
    split_muon_params,
)
from icml26.gradpower.schedules import cosine_lambda, cosine_with_warmup, wsd, wsd_lambda
from icml26.gradpower.theory import high_noise_drift, normalized_drift
from icml26.gradpower.train import PretrainResult, pretrain

__all__ = [
    "sign_power", "sign_power_", "foreach_sign_power_",
    "AdamWPower", "GradPower", "CombinedOptimizer", "MuonPower", "build_muon_adamw", "split_muon_params",
    "wsd", "cosine_with_warmup", "wsd_lambda", "cosine_lambda",
    "normalized_drift", "high_noise_drift", "optimizer_drift", "gradient_noise_scale",
    "TinyLlama", "pretrain", "PretrainResult",
]
