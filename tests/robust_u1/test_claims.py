"""Each gate can fail: the claim functions the experiment uses, fed with per-item results where one arm is
deliberately broken, flip their verdict; plus the bootstrap and the cannot-decide note."""

import numpy as np
import pytest

from icml26.robust_u1.claims import (
    claim_quality_ranks,
    claim_recovery,
    claim_recovery_helps,
    claim_understanding,
    decide_note,
    paired_image_bootstrap,
)

N_IMG, N_KIND = 60, 10
IMAGE = np.tile(np.arange(N_IMG), N_KIND)
RNG = np.random.default_rng(0)


def _c1(gain=0.25, rl_margin=0.02, ssim_margin=0.0):
    base = RNG.uniform(0.4, 0.7, len(IMAGE))
    sftc = base + 0.2
    return {"image": IMAGE, "ssim_identity": base, "ssim_sft": base + gain, "ssim_rl": sftc + ssim_margin,
            "ssim_sftc": sftc, "reward_sft": sftc + 0.1, "reward_rl": sftc + 0.1 + rl_margin, "reward_sftc": sftc + 0.1}


def test_recovery_gate_holds_and_each_clause_can_fail():
    assert claim_recovery([_c1()] * 3).held
    assert not claim_recovery([_c1(gain=0.0)] * 3).held  # untrained restorer
    assert not claim_recovery([_c1(rl_margin=0.0)] * 3).held  # RL no better than continued SFT
    c = claim_recovery([_c1(ssim_margin=-0.01)] * 3)
    assert not c.held and "RL SSIM NOT held" in c.details
    assert c.measured["sft_ssim_gain"] == pytest.approx(0.25)


def _acc(p):
    return (RNG.uniform(size=len(IMAGE)) < p).astype(np.int8)


def _c2(ru1=0.75, general=0.5, cft=0.74, clean_ru1=0.95):
    corr = {"robust_u1": _acc(ru1), "general": _acc(general), "corrupted_ft": _acc(cft), "fare": _acc(0.7),
            "degradation_aware": _acc(0.7)}
    ci = np.tile(np.arange(N_IMG), 3)
    return {"image": IMAGE, "correct": corr, "clean_image": ci,
            "clean_correct": {"robust_u1": (RNG.uniform(size=len(ci)) < clean_ru1).astype(np.int8),
                              "general": (RNG.uniform(size=len(ci)) < 0.95).astype(np.int8)}}


def test_understanding_gate_fails_for_a_broken_arm():
    assert claim_understanding([_c2() for _ in range(3)]).held
    assert not claim_understanding([_c2(ru1=0.52) for _ in range(3)]).held  # no gain over the general model
    assert not claim_understanding([_c2(cft=0.9) for _ in range(3)]).held  # a baseline far better
    assert not claim_understanding([_c2(clean_ru1=0.6) for _ in range(3)]).held  # clean accuracy lost


def test_recovery_helps_gate():
    def seed(rl):
        return {"image": IMAGE, "general_correct": {"corrupted": _acc(0.5), "rl": _acc(rl), "sft": _acc(rl)}}

    assert claim_recovery_helps([seed(0.7) for _ in range(3)]).held
    c = claim_recovery_helps([seed(0.5) for _ in range(3)])
    assert not c.held and abs(c.measured["rl_gain_points"]) < 5


def test_quality_ranks_gate():
    names = [f"r{i}" for i in range(9)]
    ssim_ = np.linspace(0.5, 0.9, 9)
    good = {"restorers": {n: {"ssim": s, "acc": 0.4 + 0.5 * s} for n, s in zip(names, ssim_)}}
    bad = {"restorers": {n: {"ssim": s, "acc": 0.9 - 0.5 * s} for n, s in zip(names, ssim_)}}
    assert claim_quality_ranks([good] * 3).held and claim_quality_ranks([good] * 3).measured["spearman"] == 1.0
    assert not claim_quality_ranks([bad] * 3).held


def test_bootstrap_and_cannot_decide():
    a, b = _acc(0.7), _acc(0.7)
    m, se = paired_image_bootstrap(a, b, IMAGE, 500, 0)
    d = (a - b).reshape(N_KIND, N_IMG).mean(0)
    assert m == pytest.approx(d.mean()) and se == pytest.approx(d.std(ddof=1) / np.sqrt(N_IMG), rel=0.25)
    note, decides = decide_note([0.1, 2.0, -1.5], 0.0, "x")
    assert not decides and "CANNOT DECIDE" in note
    note, decides = decide_note([5.0, 5.2, 5.1], 0.0, "x", ci=(4.0, 6.0))
    assert decides
    assert not decide_note([5.0, 5.2, 5.1], 0.0, "x", ci=(-1.0, 6.0))[1]
