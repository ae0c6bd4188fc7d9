"""Each gate can fail: the claim functions the experiment uses flip their verdict on a broken arm."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.mepoi import claims as C


def _task_data(task, rng, n=150):
    """Labels, a weak "text" prediction and a strong "both" prediction for one task (hours: 24 columns to stay fast)."""
    if task == "busyness":
        y = rng.uniform(0, 1, (n, 24))
        weak = np.clip(0.4 * y + 0.3 + rng.normal(0, 0.05, y.shape), 0, 1)
        strong = np.clip(y + rng.normal(0, 0.02, y.shape), 0, 1)
    elif task == "function":
        y = rng.integers(0, 5, n)
        weak = rng.normal(size=(n, 5)) + 0.8 * np.eye(5)[y]
        strong = rng.normal(size=(n, 5)) + 6 * np.eye(5)[y]
    else:
        y = (rng.random(n if task == "closure" else (n, 24)) < 0.4).astype(int)
        weak = rng.normal(size=y.shape) + 0.6 * y
        strong = rng.normal(size=y.shape) + 4 * y
    return y, weak, strong


def _score(task, y, p):
    if task == "busyness":
        return float(np.abs(p - y).mean())
    if task == "function":
        return float((p.argmax(1) == y).mean())
    return float(np.nanmean(C._metric_reps(task, y, p, np.arange(len(y))[None])))


@pytest.mark.parametrize("task", ["opening_hours", "closure", "busyness", "function"])
def test_check1_holds_for_a_better_arm_and_fails_for_a_copy_of_text(task):
    rng = np.random.default_rng(0)
    good, same, s_text, s_good = [], [], [], []
    for _ in range(3):
        y, weak, strong = _task_data(task, rng)
        good.append((y, strong, weak))
        same.append((y, weak, weak))
        s_text.append(_score(task, y, weak))
        s_good.append(_score(task, y, strong))
    held = C.claim_both_vs_text(task, {"text": s_text, "both": s_good}, good)
    copy = C.claim_both_vs_text(task, {"text": s_text, "both": s_text}, same)
    assert held.held and held.gate and held.measured["ci95"][0] > 0 and len(held.per_seed) == 3
    assert not copy.held and copy.measured["improvement"] == pytest.approx(0.0)
    assert "decided at this size" in copy.details  # zero spread, a 0.02 gap: an informative "not held"


def test_check2_needs_two_of_three_wins():
    base = {"opening_hours": {"text": [0.7] * 3}, "closure": {"text": [0.6] * 3}, "busyness": {"text": [0.2] * 3}}
    win = {"opening_hours": [0.75] * 3, "closure": [0.7] * 3, "busyness": [0.15] * 3}
    lose = {"opening_hours": [0.71] * 3, "closure": [0.62] * 3, "busyness": [0.19] * 3}
    mk = lambda arm: {t: {**base[t], "poi": arm[t]} for t in base}  # noqa: E731
    assert C.claim_poi_vs_text(mk(win)).held
    assert not C.claim_poi_vs_text(mk(lose)).held
    one = {**lose, "closure": win["closure"]}
    c = C.claim_poi_vs_text(mk(one))
    assert not c.held and c.measured["wins"] == 1
    two = {**one, "busyness": win["busyness"]}
    assert C.claim_poi_vs_text(mk(two)).measured["wins"] == 2


def test_check3_propagation_ratio_flips_and_needs_enough_pois():
    rng = np.random.default_rng(0)
    counts = np.r_[np.zeros(50, int), rng.integers(1, 6, 120), np.full(100, 40)]
    e0 = [rng.uniform(0.1, 0.2, len(counts)) for _ in range(3)]
    better = [e * 0.8 for e in e0]
    held = C.claim_propagation(better, e0, counts)
    assert held.held and held.measured["n_sparse"] == 120 and held.measured["ratio"] == pytest.approx(0.8)
    assert not C.claim_propagation(e0, e0, counts).held  # the no-propagation arm against itself
    assert not C.claim_propagation(better, e0, counts, min_n=200).held  # too few sparse POIs
    # zero-visit POIs are excluded from the gate: improving only them does not make it hold
    only_zero = [np.where(counts == 0, e * 0.5, e) for e in e0]
    assert not C.claim_propagation(only_zero, e0, counts).held
    assert C.claim_zero_visit(only_zero, e0, counts).held and not C.claim_zero_visit(only_zero, e0, counts).gate


def test_decide_says_when_the_spread_exceeds_the_margin():
    assert C.decide([0.01, 0.09, -0.02], 0.0267, 0.02, None).startswith("cannot decide")
    assert C.decide([0.10, 0.11, 0.12], 0.11, 0.02, (0.09, 0.13)).startswith("decided")
    assert C.decide([0.10, 0.11, 0.12], 0.11, 0.02, (0.01, 0.13)).startswith("cannot decide")


def test_price_and_control_are_reported_not_gated():
    p = C.claim_price({"text": [0.5, 0.5, 0.5], "both": [0.45, 0.46, 0.44]})
    assert not p.gate and not p.held
    s = C.claim_controls({"function": {"poi": [0.5] * 3, "random": [0.1] * 3, "hand": [0.6] * 3}})
    assert not s.gate and s.held
    assert not C.claim_controls({"function": {"poi": [0.12] * 3, "random": [0.1] * 3}}).held


def test_fast_bootstrap_auroc_equals_reranking_each_resample():
    rng = np.random.default_rng(1)
    y = (rng.random(80) < 0.4).astype(int)
    s = rng.normal(size=80) + y
    idx = rng.integers(0, 80, size=(30, 80))
    np.testing.assert_allclose(C.auroc_resamples(y, s, idx), C._auroc_rows(y[idx], s[idx]), atol=1e-12)
    assert np.isnan(C.auroc_resamples(np.zeros(5), np.arange(5.0), np.zeros((1, 5), int)))[0]
