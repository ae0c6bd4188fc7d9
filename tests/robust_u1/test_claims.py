"""Each gate can fail and can stay undecided: the claim functions the experiment uses, fed with per-item results
where one arm is deliberately broken (the verdict becomes "not held") or the sample is tiny ("inconclusive")."""

import numpy as np
import pytest

from icml26.robust_u1.claims import (
    GENERAL_SHARE,
    HELP_SHARE,
    claim_quality_ranks,
    claim_recovery,
    claim_recovery_helps,
    claim_understanding,
    image_interval,
    per_image_mean,
)

N_IMG, N_KIND = 60, 10
IMAGE = np.tile(np.arange(N_IMG), N_KIND)
RNG = np.random.default_rng(0)


def _c1(gain=0.25, rl_margin=0.02, ssim_margin=0.0, n_img=N_IMG):
    image = np.tile(np.arange(n_img), N_KIND)
    base = RNG.uniform(0.4, 0.7, len(image))
    sftc = base + 0.2
    noise = RNG.normal(0, 0.01, len(image))
    return {"image": image, "ssim_identity": base, "ssim_sft": base + gain, "ssim_rl": sftc + ssim_margin + noise,
            "ssim_sftc": sftc, "reward_sft": sftc + 0.1, "reward_rl": sftc + 0.1 + rl_margin + noise,
            "reward_sftc": sftc + 0.1}


def test_recovery_gate_holds_and_each_clause_can_fail():
    assert claim_recovery([_c1() for _ in range(3)], n_boot=200).verdict == "held"
    assert claim_recovery([_c1(gain=0.0) for _ in range(3)], n_boot=200).verdict == "not held"  # untrained restorer
    c = claim_recovery([_c1(rl_margin=0.0) for _ in range(3)], n_boot=200)  # RL no better than continued SFT
    assert c.verdict == "not held" and c.decision.parts[1].verdict == "not held"
    c = claim_recovery([_c1(ssim_margin=-0.01) for _ in range(3)], n_boot=200)
    assert c.verdict == "not held" and c.decision.parts[2].verdict == "not held"
    assert c.measured["sft_ssim_gain"] == pytest.approx(0.25)


def test_recovery_gate_is_inconclusive_on_a_tiny_sample():
    # RL margin right at the bar on 3 images: the interval straddles 0.005
    c = claim_recovery([_c1(rl_margin=0.005, n_img=3)], n_boot=100, seconds_per_seed=90.0)
    assert c.verdict == "inconclusive" and c.decision.parts[1].verdict == "inconclusive"
    assert "What would decide it" in c.details and "seeds" in c.details


def _acc(p, n=len(IMAGE), rng=None):
    return ((RNG if rng is None else rng).uniform(size=n) < p).astype(np.int8)


class _Arms:
    """0/1 answers per item: arms share one uniform draw per item (their differences are then exact, the
    paired interval narrow) unless `shared` is False (independent arms: a noisy, small sample)."""

    def __init__(self, n, seed, shared=True):
        self.rng, self.n, self.shared = np.random.default_rng(seed), n, shared
        self.u = self.rng.uniform(size=n)

    def __call__(self, p):
        u = self.u if self.shared else self.rng.uniform(size=self.n)
        return (u < p).astype(np.int8)


def _c2(ru1=0.75, general=0.5, cft=0.65, clean_ru1=0.95, n_img=N_IMG, seed=0, shared=True):
    image = np.tile(np.arange(n_img), N_KIND)
    ci = np.tile(np.arange(n_img), 3)
    a, c = _Arms(len(image), seed, shared), _Arms(len(ci), seed + 100, shared)
    corr = {"robust_u1": a(ru1), "general": a(general), "corrupted_ft": a(cft), "fare": a(0.65),
            "degradation_aware": a(0.65)}
    return {"image": image, "correct": corr, "clean_image": ci,
            "clean_correct": {"robust_u1": c(clean_ru1), "general": c(0.95)}}


def test_understanding_gate_fails_for_a_broken_arm():
    c = claim_understanding([_c2(seed=i) for i in range(3)], n_boot=200)
    assert c.verdict == "held" and c.measured["share_vs_general"] == pytest.approx(0.25 / 0.45, abs=0.08)
    assert claim_understanding([_c2(ru1=0.5, seed=i) for i in range(3)], n_boot=200).verdict == "not held"  # no gain
    assert claim_understanding([_c2(cft=0.9, seed=i) for i in range(3)], n_boot=200).verdict == "not held"
    assert claim_understanding([_c2(clean_ru1=0.6, seed=i) for i in range(3)], n_boot=200).verdict == "not held"


def test_understanding_gate_is_inconclusive_on_a_tiny_sample():
    # the right share (0.5 + 0.45 * 0.22 = 0.599 vs 0.5 corrupted, 0.95 clean) on 4 images of one seed
    c = claim_understanding([_c2(ru1=0.5 + 0.45 * GENERAL_SHARE, cft=0.3, n_img=4, shared=False)], n_boot=100)
    assert c.decision.parts[0].verdict == "inconclusive" and c.verdict != "held"


def _c3(rl, n_img=N_IMG, seed=0, shared=True):
    image = np.tile(np.arange(n_img), N_KIND)
    ci = np.tile(np.arange(n_img), 3)
    a = _Arms(len(image), seed, shared)
    return {"image": image, "general_correct": {"corrupted": a(0.5), "rl": a(rl), "sft": a(rl)},
            "clean_image": ci, "clean_correct": _Arms(len(ci), seed + 100)(0.95)}


def test_recovery_helps_gate():
    assert claim_recovery_helps([_c3(0.7, seed=i) for i in range(3)], n_boot=200).verdict == "held"
    c = claim_recovery_helps([_c3(0.5, seed=i) for i in range(3)], n_boot=200)  # an identity "restorer"
    assert c.verdict == "not held" and abs(c.measured["rl_share"]) < HELP_SHARE
    c = claim_recovery_helps([_c3(0.5 + 0.45 * HELP_SHARE, n_img=4, shared=False)], n_boot=100)
    assert c.verdict == "inconclusive" and "What would decide it" in c.details


def _c4(sign, noise, n_img=N_IMG, k=9):
    image = np.tile(np.arange(n_img), N_KIND)
    ssim_ = np.linspace(0.5, 0.9, k)
    return {"image": image, "restorers": {
        f"r{i}": {"ssim": s + RNG.normal(0, 0.05, len(image)),
                  "acc": (RNG.uniform(size=len(image)) < 0.7 + sign * 0.5 * (s - 0.7) + RNG.normal(0, noise)
                          ).astype(np.int8)} for i, s in enumerate(ssim_)}}


def test_quality_ranks_gate():
    good = claim_quality_ranks([_c4(+1, 0.0, 400) for _ in range(3)], n_boot=200)
    assert good.verdict == "held" and good.measured["spearman"] > 0.9
    assert claim_quality_ranks([_c4(-1, 0.0, 400) for _ in range(3)], n_boot=200).verdict == "not held"
    tiny = claim_quality_ranks([_c4(+1, 0.0, 5)], n_boot=100)  # 5 test images: Spearman cannot be pinned down
    assert tiny.verdict == "inconclusive"


def test_image_interval_resamples_images_within_seeds():
    a, b = _acc(0.7), _acc(0.7)
    seeds = [{"a": a, "b": b, "image": IMAGE}]
    m, ps, iv = image_interval(seeds, lambda s: (per_image_mean(s["a"], s["image"]), per_image_mean(s["b"], s["image"])),
                               lambda x, y: float(x.mean() - y.mean()), 500)
    d = (a - b).reshape(N_KIND, N_IMG).mean(0)
    assert m == pytest.approx(d.mean()) and ps == [pytest.approx(d.mean())]
    assert iv.n == N_IMG and iv.width == pytest.approx(2 * 1.96 * d.std(ddof=1) / np.sqrt(N_IMG), rel=0.3)
    with pytest.raises(ValueError, match="image"):
        per_image_mean(np.zeros(3), np.zeros(4, int))
