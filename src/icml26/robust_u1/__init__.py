"""Robust-U1: visual self-recovery for robust multimodal understanding (arXiv 2606.08063, ICML 2026).

    from icml26.robust_u1 import corrupt, ssim, SSIMReward, CompositeReward, GRPORestorationTrainer, RobustU1

    x_c = corrupt(x, "gaussian_noise", 5, generator=g)            # x: (N, C, H, W) in [0, 1]
    r, parts = CompositeReward({"ssim": (SSIMReward(), 1.0),
                                "clip": (EmbeddingSimilarityReward(encoder), 0.2)})(restored, x)
    GRPORestorationTrainer(GaussianRestorationPolicy(restorer), reward, GRPOConfig()).train(pairs)
    RobustU1(policy, vqa).predict(x_c, question_ids)                # reason over [x_c, recover(x_c)]

Pieces: the corruption suite (`CORRUPTIONS`, `corrupt`, `RandomCorruption`), differentiable `ssim` / `psnr`,
rewards (SSIM, embedding similarity, CLIP, composite, Flow-GRPO adapter), models (`TinyRestorer`,
`GaussianRestorationPolicy`, `TinyEncoder`, `TinyVQA`), training (`sft_restorer`, `GRPOConfig`,
`GRPORestorationTrainer`, `train_vqa`), baselines behind one interface and the `RobustU1` pipeline.
`HFJointReasoner` (icml26.robust_u1.hf) does the joint reasoning with any Hugging Face VLM.
"""

from icml26.robust_u1.baselines import (
    CorruptedFinetune,
    DegradationAwareReasoner,
    FeatureAlignment,
    GaussianFilter,
    GeneralModel,
    Identity,
    MedianFilter,
    RecoveredOnly,
    RidgeRestorer,
    general_model,
)
from icml26.robust_u1.corruptions import CORRUPTIONS, KINDS, SEVERITY_TABLES, RandomCorruption, corrupt
from icml26.robust_u1.data import (
    CachedStream,
    PairStream,
    VQABatch,
    VQAStream,
    answers_for,
    corrupted_test_set,
    draw_questions,
    load_digits_images,
    load_mnist_images,
    question_text,
    stratified_split,
)
from icml26.robust_u1.metrics import psnr, ssim
from icml26.robust_u1.models import GaussianRestorationPolicy, TinyEncoder, TinyRestorer, TinyVQA
from icml26.robust_u1.pipeline import RobustU1
from icml26.robust_u1.rewards import (
    CLIPSimilarityReward,
    CompositeReward,
    EmbeddingSimilarityReward,
    SSIMReward,
    grouped_reward,
    register_flow_grpo_rewards,
    similarity_term,
    to_flow_grpo,
)
from icml26.robust_u1.training import (
    GRPOConfig,
    GRPORestorationTrainer,
    grpo_advantages,
    grpo_loss,
    restore,
    sft_restorer,
    train_encoder,
    train_vqa,
)

__all__ = [
    "CORRUPTIONS",
    "KINDS",
    "SEVERITY_TABLES",
    "CLIPSimilarityReward",
    "CachedStream",
    "CompositeReward",
    "CorruptedFinetune",
    "DegradationAwareReasoner",
    "EmbeddingSimilarityReward",
    "FeatureAlignment",
    "GRPOConfig",
    "GRPORestorationTrainer",
    "GaussianFilter",
    "GaussianRestorationPolicy",
    "GeneralModel",
    "Identity",
    "MedianFilter",
    "PairStream",
    "RandomCorruption",
    "RecoveredOnly",
    "RidgeRestorer",
    "RobustU1",
    "SSIMReward",
    "TinyEncoder",
    "TinyRestorer",
    "TinyVQA",
    "VQABatch",
    "VQAStream",
    "answers_for",
    "corrupt",
    "corrupted_test_set",
    "draw_questions",
    "general_model",
    "grouped_reward",
    "grpo_advantages",
    "grpo_loss",
    "load_digits_images",
    "load_mnist_images",
    "psnr",
    "question_text",
    "register_flow_grpo_rewards",
    "restore",
    "sft_restorer",
    "similarity_term",
    "ssim",
    "stratified_split",
    "to_flow_grpo",
    "train_encoder",
    "train_vqa",
]
