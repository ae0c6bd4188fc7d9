"""Each gate can fail and can be undecided: the claim functions the experiment uses, driven with a broken arm
(verdict "not held") and with a tiny sample (verdict "inconclusive")."""

from __future__ import annotations

import pytest

from icml26.sparse_transfer.claims import claim_c1, claim_c2, claim_c3, claim_c3_sanity, claim_c4, claim_r2

GOOD = [0.10, 0.12, 0.15, 0.11, 0.13]
WRONG = [1.0, 1.2, 0.9, 1.1, 1.3]  # every seed on a wrong signed permutation


def test_c1_held_not_held_and_inconclusive():
    c = claim_c1(GOOD, GOOD, [0.7] * 5)
    assert c.verdict == "held" and c.gate and c.interval.n == 5 and c.per_seed == GOOD
    assert claim_c1(WRONG, GOOD, [0.7] * 5).verdict == "not held"  # broken arm
    tiny = claim_c1([0.1], [0.1], [0.7])  # one seed cannot bound a median
    assert tiny.verdict == "inconclusive" and "seed" in tiny.decision.hint and "medium" in tiny.details
    mixed = claim_c1([0.10, 1.2, 0.15, 1.1, 1.3], GOOD, [0.7] * 5)  # 2 good, 3 wrong: median 1.1 but interval wide
    assert mixed.verdict == "inconclusive"


def test_c1_near_threshold_is_never_decided_by_last_digits():
    near = [0.195, 0.199, 0.201, 0.198, 0.197]
    assert claim_c1(near, near, [0.7] * 5).verdict == "inconclusive"


def test_r2_names_wrong_permutations_and_can_fail():
    te, oracle = [0.95, 0.99, 1.0, 0.97, 0.93], [0.19, 0.19, 0.16, 0.18, 0.25]
    c = claim_r2(te, oracle, steps=1500, hidden=[64, 64])
    assert c.gate and c.verdict == "not held" and c.measured["wrong_permutation_seeds"] == [0, 1, 2, 3]
    assert claim_r2([0.19] + te[1:], oracle).verdict == "inconclusive"  # one good seed of 5: a median can't say
    assert "medium" in c.details and "1x32" in c.details
    assert claim_r2(GOOD, GOOD).verdict == "held"
    assert claim_r2([0.9], [0.1]).verdict == "inconclusive"


def test_c2_flags_training_failures():
    assert claim_c2(GOOD, GOOD).verdict == "held"
    te = [0.9, 0.8, 0.85, 0.95, 0.92]
    anchor_fail = claim_c2(te, [0.1] * 5)  # low oracle TE: the anchor picked the wrong candidate
    assert anchor_fail.verdict == "not held" and anchor_fail.measured["training_failures"] == []
    train_fail = claim_c2(te, te)  # oracle also high: optimisation failure
    assert train_fail.measured["training_failures"] == [0, 1, 2, 3, 4]


ARMS = {"dm": [1.3, 1.2, 1.4, 1.25, 1.35], "dm_anchor_joint": [1.3, 1.1, 1.2, 1.15, 1.25],
        "dm_resolve": [0.9, 1.1, 1.0, 0.95, 1.05]}


def test_c3_held_not_held_inconclusive():
    assert claim_c3(ARMS).verdict == "held"
    broken = {**ARMS, "dm_resolve": [0.2, 0.3, 0.25, 0.2, 0.3]}  # one baseline recovers the map
    c = claim_c3(broken)
    assert c.verdict == "not held" and [p.verdict for p in c.decision.parts] == ["held", "held", "not held"]
    tiny = claim_c3({k: v[:1] for k, v in ARMS.items()})
    assert tiny.verdict == "inconclusive"
    split = claim_c3({**ARMS, "dm_anchor_joint": [0.25, 1.2, 1.1, 0.45, 0.8]})  # 2 of 5 below 0.6
    assert split.verdict == "inconclusive" and "seeds" in split.decision.hint
    with pytest.raises(ValueError, match="dm_resolve"):
        claim_c3({"dm": [1.0], "dm_anchor_joint": [1.0]})


def test_c3_sanity_is_kind_sanity():
    c = claim_c3_sanity({"dm_sparsity_no_anchor": [1.2, 1.3, 1.25], "ot": [1.25, 1.24, 1.26]})
    assert c.kind == "sanity" and c.verdict == "held" and not c.gate


OK = dict(l1_ours=[1.1, 1.05, 1.08, 1.07, 1.09], l1_dm=[2.0, 2.1, 1.9, 2.0, 1.95], l1_true=[1.08] * 5,
          mmd_ours=[0.008, 0.009, 0.008, 0.0085, 0.0075], mmd_dm=[0.006, 0.0065, 0.0055, 0.006, 0.0058],
          mmd_floor=[0.003] * 5)


def test_c4_each_part_can_fail_and_the_mmd_part_can_be_undecided():
    assert claim_c4(**OK).verdict == "held"
    assert claim_c4(**{**OK, "l1_ours": [1.5, 1.6, 1.4, 1.55, 1.5]}).verdict == "not held"  # sparsity not reached
    assert claim_c4(**{**OK, "l1_dm": [1.1, 1.2, 1.15, 1.1, 1.12]}).verdict == "not held"  # DM already sparse
    assert claim_c4(**{**OK, "mmd_ours": [0.05] * 5}).verdict == "not held"  # marginal match broken
    near = claim_c4(**{**OK, "mmd_ours": [0.012, 0.019, 0.016, 0.013, 0.018]})  # paired gap ~0.01 +- spread
    parts = {p.label: p.verdict for p in near.decision.parts}
    assert near.verdict == "inconclusive" and parts["MMD^2 gap <= 0.01"] == "inconclusive"
    assert "paired" in near.decision.parts[-1].interval.method or near.decision.parts[-1].interval.method == "t"
    tiny = claim_c4(**{k: v[:1] for k, v in OK.items()})
    assert tiny.verdict == "inconclusive"
    with pytest.raises(ValueError, match="same lengths"):
        claim_c4(**{**OK, "l1_dm": [2.0]})
