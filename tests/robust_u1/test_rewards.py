"""Rewards (spec 8): the CLIP term's known answers, composite = weighted sum, grouped fast path, Flow-GRPO
adapter and registry, and clear failures."""

import math

import pytest
import torch

from icml26.robust_u1 import (
    CLIPSimilarityReward,
    CompositeReward,
    EmbeddingSimilarityReward,
    SSIMReward,
    TinyEncoder,
    grouped_reward,
    register_flow_grpo_rewards,
    similarity_term,
    ssim,
    to_flow_grpo,
)
from icml26.robust_u1.rewards import FLOW_GRPO_REFERENCE_REWARD_NAMES

G = torch.Generator().manual_seed(0)
X = torch.rand(6, 1, 24, 24, generator=G)
Y = (X + 0.1 * torch.randn(6, 1, 24, 24, generator=G)).clamp(0, 1)
ENC = TinyEncoder().freeze()


def test_similarity_term_known_answers_and_monotone():
    assert float(similarity_term(1.0)) == pytest.approx(1.0)
    assert float(similarity_term(0.5)) == pytest.approx(math.exp(-2.5), abs=1e-6)  # 0.082085
    assert float(similarity_term(0.5)) == pytest.approx(0.082085, abs=1e-6)
    for c in (0.0, -0.3, -1.0):
        assert float(similarity_term(c)) == pytest.approx(0.0067379, abs=1e-7)
    c = torch.linspace(-1, 1, 41)
    assert bool((similarity_term(c).diff() >= 0).all())
    with pytest.raises(ValueError, match="cos must be finite"):
        similarity_term(float("nan"))


def test_ssim_reward_resizes_reference_like_the_official_reward():
    r, parts = SSIMReward()(Y, X)
    torch.testing.assert_close(r, ssim(Y, X))
    big = torch.nn.functional.interpolate(X, size=(48, 48), mode="bilinear", align_corners=False)
    r2, _ = SSIMReward()(Y, big)
    back = torch.nn.functional.interpolate(big, size=(24, 24), mode="bilinear", align_corners=False)
    torch.testing.assert_close(r2, ssim(Y, back))
    assert set(parts) == {"ssim"}


def test_embedding_reward_is_one_on_identical_images_and_never_trains_the_encoder():
    rew = EmbeddingSimilarityReward(ENC)
    r, parts = rew(X, X)
    torch.testing.assert_close(r, torch.ones(6), atol=1e-5, rtol=0)
    r, parts = rew(Y, X)
    torch.testing.assert_close(r, similarity_term(parts["cos"]))
    assert not r.requires_grad


def test_composite_is_the_weighted_sum_and_grouped_equals_plain():
    comp = CompositeReward({"ssim": (SSIMReward(), 1.0), "clip": (EmbeddingSimilarityReward(ENC), 0.2)})
    r, parts = comp(Y, X)
    torch.testing.assert_close(r, parts["ssim"] + 0.2 * parts["clip"])
    assert "clip/cos" in parts
    ys = torch.stack([Y, (Y * 0.9), Y.flip(-1)], dim=1)  # (6, 3, 1, 24, 24)
    fast, _ = grouped_reward(comp, ys, X)
    slow, _ = comp(ys.flatten(0, 1), X.repeat_interleave(3, 0))
    torch.testing.assert_close(fast, slow, atol=1e-6, rtol=0)


def test_mismatched_batches_and_bad_parts_raise():
    comp = CompositeReward({"ssim": (SSIMReward(), 1.0)})
    with pytest.raises(ValueError, match="same number of items"):
        comp(Y[:3], X)
    with pytest.raises(ValueError, match="images must lie in \\[0, 1\\]"):
        comp(Y * 2, X)
    with pytest.raises(TypeError, match="parts"):
        CompositeReward({})
    with pytest.raises(TypeError, match="\\(reward, weight\\)"):
        CompositeReward({"ssim": SSIMReward()})
    with pytest.raises(ValueError, match="weight"):
        CompositeReward({"ssim": (SSIMReward(), float("nan"))})


def test_flow_grpo_adapter_and_registry():
    fn = to_flow_grpo(SSIMReward())
    vals, info = fn((Y * 255).round().to(torch.uint8), X, ["a prompt"] * 6, [{}] * 6)  # uint8 read by dtype
    assert isinstance(vals, list) and len(vals) == 6 and isinstance(vals[0], float)
    ref = ssim((Y * 255).round() / 255, X)
    assert vals == pytest.approx(ref.double().tolist(), abs=1e-6) and len(info["ssim"]) == 6
    nhwc, _ = fn(Y.permute(0, 2, 3, 1), X)
    assert nhwc == pytest.approx(ssim(Y, X).double().tolist(), abs=1e-6)
    with pytest.raises(ValueError, match="ref_images is required"):
        fn(Y)
    reg = register_flow_grpo_rewards({"tinyclip": "theirs"}, override=False, embedding_encoder=ENC)
    assert reg["tinyclip"] == "theirs" and {"restoration", "structure", "robust_structure", "robust_tinyclip"} <= set(reg)
    assert set(reg) - {"tinyclip"} <= FLOW_GRPO_REFERENCE_REWARD_NAMES
    s, _ = reg["restoration"]("cpu")(Y, X)
    assert s == pytest.approx(ssim(Y, X).double().tolist(), abs=1e-6)
    c, _ = reg["robust_tinyclip"]("cpu")(X, X)
    assert c == pytest.approx([1.0] * 6, abs=1e-5)


def test_clip_reward_never_downloads(monkeypatch, tmp_path):
    monkeypatch.delenv("TINYCLIP_WEIGHTS_PATH", raising=False)
    with pytest.raises(ValueError, match="never downloads"):
        CLIPSimilarityReward()
    with pytest.raises(ValueError, match="is not a file"):
        CLIPSimilarityReward(weights_path=tmp_path / "missing.safetensors")
