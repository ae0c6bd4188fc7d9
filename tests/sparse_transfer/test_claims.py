"""Each gate can fail: the claim functions the experiment uses flip their verdict on broken inputs."""

from __future__ import annotations

from icml26.sparse_transfer.claims import claim_c1, claim_c2, claim_c3, claim_c4, seed_decidable

GOOD = [0.10, 0.12, 0.15, 0.11, 0.13]


def test_c1_flips_when_the_method_fails():
    assert claim_c1(GOOD, GOOD, [0.7] * 5).held
    broken = [0.10, 1.2, 0.15, 1.1, 1.3]  # three seeds land on a wrong signed permutation
    c = claim_c1(broken, GOOD, [0.7] * 5)
    assert not c.held and c.gate and c.per_seed == broken


def test_c2_flips_and_says_cannot_decide_for_training_failures():
    assert claim_c2(GOOD, GOOD).held
    te = [0.9, 0.8, 0.1, 0.95, 0.12]
    anchor_fail = claim_c2(te, [0.1] * 5)  # low oracle TE: the anchor picked the wrong candidate
    assert not anchor_fail.held and anchor_fail.measured["training_failures"] == []
    train_fail = claim_c2(te, te)  # oracle also high: optimisation failure
    assert not train_fail.held and "CANNOT DECIDE" in train_fail.details


def test_c3_flips_when_one_baseline_recovers_the_map():
    arms = {"dm": [1.3, 1.2, 1.4], "dm_anchor_joint": [1.3, 1.1, 1.2], "dm_resolve": [0.9, 1.1, 1.0],
            "dm_sparsity_no_anchor": [1.2, 1.25, 1.3], "ot": [1.25] * 3}
    assert claim_c3(arms, ours=[0.1, 0.1, 0.1]).held
    broken = {**arms, "dm_resolve": [0.2, 0.3, 0.9]}
    assert not claim_c3(broken).held


def test_c4_flips_on_each_part():
    ok = dict(l1_ours=[1.1, 1.05, 1.08], l1_dm=[2.0, 2.1, 1.9], l1_true=1.08, mmd_ours=[0.008] * 3,
              mmd_dm=[0.006] * 3, mmd_floor=[0.003] * 3)
    assert claim_c4(**ok).held
    assert not claim_c4(**{**ok, "l1_ours": [1.5, 1.6, 1.4]}).held  # sparsity not reached
    assert not claim_c4(**{**ok, "l1_dm": [1.1, 1.2, 1.15]}).held  # DM already sparse: no mechanism
    assert not claim_c4(**{**ok, "mmd_ours": [0.05] * 3}).held  # marginal match broken
    near = claim_c4(**{**ok, "mmd_ours": [0.012, 0.019, 0.016]})  # gap 0.006-0.013 around the +0.01 margin
    assert "MMD part CANNOT DECIDE" in near.details and not near.measured["mmd_part_decidable"]


def test_decidability():
    assert seed_decidable(GOOD, 0.20)
    assert not seed_decidable([0.1, 0.5, 0.15, 0.4, 0.19], 0.20)
