"""Gale-Shapley, stability, blocking pairs, instability, brute force (spec section 8)."""

import numpy as np
import pytest

from icml26.matching_bandits import (
    all_stable_matchings,
    arm_rank_from_scores,
    blocking_pairs,
    gale_shapley,
    gale_shapley_batch,
    instability,
    is_stable,
    player_optimal,
    player_pessimal,
)
from icml26.matching_bandits.baselines import random_matching


def _prank(U):
    order = np.argsort(-U, axis=1, kind="stable")
    return np.argsort(order, axis=1)


def _random_market(rng, N, K, ties=False):
    U = rng.integers(0, 3, size=(N, K)).astype(float) if ties else rng.normal(size=(N, K))
    return U, arm_rank_from_scores(rng.normal(size=(K, N)))


def test_gs_is_player_optimal_and_arm_gs_player_pessimal_against_brute_force():
    rng = np.random.default_rng(0)
    shapes = set()
    for it in range(200):
        N, K = int(rng.integers(1, 5)), int(rng.integers(1, 6))
        U, R = _random_market(rng, N, K, ties=it % 4 == 0)
        stable = all_stable_matchings(U, R)
        assert stable, "a stable matching always exists"
        m, mp = player_optimal(U, R), player_pessimal(U, R)
        assert is_stable(U, R, m) and is_stable(U, R, mp)
        assert any(np.array_equal(m, s) for s in stable) and any(np.array_equal(mp, s) for s in stable)
        pr = _prank(U)
        pos = lambda match: np.where(match >= 0, pr[np.arange(N), np.maximum(match, 0)], K)  # noqa: E731
        for s in stable:  # every player weakly prefers m to s, and s to mp
            assert np.all(pos(m) <= pos(s)) and np.all(pos(s) <= pos(mp))
        if N <= K:
            assert np.all(m >= 0)
        else:
            assert np.sum(m >= 0) == K
        shapes.add(np.sign(K - N))
    assert shapes == {-1, 0, 1}  # K < N, K = N and K > N all exercised


def test_batch_gs_equals_sequential_gs():
    rng = np.random.default_rng(1)
    for N, K in [(3, 4), (5, 5), (6, 3), (20, 30)]:
        U = rng.normal(size=(40, N, K))
        R = arm_rank_from_scores(rng.normal(size=(40, K, N)))
        for prop in ("players", "arms"):
            batch = gale_shapley_batch(U, R, prop)
            seq = np.stack([gale_shapley(U[b], R[b], prop) for b in range(40)])
            np.testing.assert_array_equal(batch, seq)


def test_ties_broken_by_arm_index():
    R = np.array([[0], [0], [0]])
    assert gale_shapley(np.array([[1.0, 2.0, 2.0]]), R).tolist() == [1]
    assert gale_shapley(np.array([[5.0, 5.0, 5.0]]), R).tolist() == [0]
    # two players, identical utilities everywhere: arm 0 goes to the player it ranks first
    U = np.zeros((2, 2))
    R = np.array([[1, 0], [0, 1]])
    assert gale_shapley(U, R).tolist() == [1, 0]


def test_known_answer_two_by_two_both_proposers():
    # players prefer (0: arm0 > arm1), (1: arm1 > arm0); arms prefer the other way round: two stable matchings
    U = np.array([[1.0, 0.0], [0.0, 1.0]])
    R = np.array([[1, 0], [0, 1]])  # arm 0 ranks player 1 first, arm 1 ranks player 0 first
    assert player_optimal(U, R).tolist() == [0, 1]
    assert player_pessimal(U, R).tolist() == [1, 0]
    assert [s.tolist() for s in all_stable_matchings(U, R)] == [[0, 1], [1, 0]]


def test_instability_zero_on_stable_nonnegative_elsewhere_and_known_value():
    rng = np.random.default_rng(2)
    for _ in range(100):
        N, K = int(rng.integers(1, 6)), int(rng.integers(1, 7))
        U, R = _random_market(rng, N, K)
        assert instability(U, R, gale_shapley(U, R)) == 0.0
        m = random_matching(rng, N, K)
        val = instability(U, R, m)
        assert val >= 0.0
        assert (val > 0) <= (not is_stable(U, R, m))
    # hand-made 2x2: both players prefer arm 0; arm 0 prefers player 1, but the matching gives arm 0 to player 0
    U = np.array([[0.9, 0.2], [0.7, 0.4]])
    R = np.array([[1, 0], [0, 1]])
    m = np.array([0, 1])
    assert blocking_pairs(U, R, m) == [(1, 0)]
    assert instability(U, R, m) == pytest.approx(0.7 - 0.4)
    assert is_stable(U, R, np.array([1, 0]))


def test_instability_is_1_lipschitz():
    rng = np.random.default_rng(3)
    for _ in range(50):
        U, R = _random_market(rng, 4, 5)
        m = random_matching(rng, 4, 5)
        E = rng.uniform(-0.05, 0.05, size=U.shape)
        assert abs(instability(U + E, R, m) - instability(U, R, m)) <= 2 * np.abs(E).max() + 1e-12


def test_bad_inputs_raise_clear_errors():
    U = np.zeros((2, 3))
    good = np.array([[0, 1], [1, 0], [0, 1]])
    with pytest.raises(ValueError, match="arm_rank"):
        gale_shapley(U, np.array([[0, 0], [1, 0], [0, 1]]))  # not a permutation
    with pytest.raises(ValueError, match="arm_rank"):
        gale_shapley(U, good[:2])
    with pytest.raises(ValueError, match="proposer"):
        gale_shapley(U, good, proposer="nobody")
    with pytest.raises(ValueError, match="U"):
        gale_shapley(np.zeros((2, 0)), np.zeros((0, 2)))
    with pytest.raises(ValueError, match="match"):
        instability(U, good, np.array([0, 0]))
    with pytest.raises(ValueError, match="match"):
        is_stable(U, good, np.array([0, 3]))
    with pytest.raises(ValueError, match="n_players and n_arms"):
        all_stable_matchings(np.zeros((6, 6)), np.tile(np.arange(6), (6, 1)))
