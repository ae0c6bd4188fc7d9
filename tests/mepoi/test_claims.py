"""Each gate can come out either way: the claim functions the experiment uses give "held" for a better arm,
"not held" for a broken one (a copy of the text control) and "inconclusive" on a tiny sample."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.common import stats
from icml26.mepoi import claims as C
from icml26.mepoi.probe import auroc_columns, task_metrics


def _task_data(task, rng, n=150):
    """Labels, a weak "text" prediction and a strong "text + ME-POIs" prediction (hours: 24 columns, fast)."""
    if task == "busyness":
        y = rng.uniform(0, 1, (n, 24))
        weak = np.clip(0.4 * y + 0.3 + rng.normal(0, 0.05, y.shape), 0, 1)
        strong = np.clip(y + rng.normal(0, 0.02, y.shape), 0, 1)
    elif task in ("function", "price"):
        y = rng.integers(0, 5, n)
        weak = rng.normal(size=(n, 5)) + 0.8 * np.eye(5)[y]
        strong = rng.normal(size=(n, 5)) + 6 * np.eye(5)[y]
    else:
        y = (rng.random(n if task == "closure" else (n, 24)) < 0.4).astype(int)
        weak = rng.normal(size=y.shape) + 0.6 * y
        strong = rng.normal(size=y.shape) + 4 * y
    return y, weak, strong


def _arms(task, n=150, seeds=3, broken=False):
    rng = np.random.default_rng(0)
    preds = {"category": [], "minilm": [], "category+poi": [], "minilm+poi": []}
    for _ in range(seeds):
        y, weak, strong = _task_data(task, rng, n)
        preds["category"].append((y, weak))
        preds["minilm"].append((y, weak))
        preds["category+poi"].append((y, weak if broken else strong))
        preds["minilm+poi"].append((y, weak if broken else strong))
    lower = task == "busyness"
    val = {"category": [0.3 if lower else 0.7] * seeds, "minilm": [0.4 if lower else 0.6] * seeds}
    return preds, val


@pytest.mark.parametrize("task", ["opening_hours", "closure", "busyness", "function"])
def test_check1_held_for_a_better_arm_not_held_for_a_copy_inconclusive_on_a_tiny_sample(task):
    preds, val = _arms(task)
    held = C.claim_both_vs_text(task, preds, val, n_boot=200)
    assert held.verdict == "held" and held.gate and held.measured["text_control"] == "category"
    assert held.interval.low > C.MARGINS[task][1] and len(held.per_seed) == 3
    preds_b, _ = _arms(task, broken=True)
    broken = C.claim_both_vs_text(task, preds_b, val, n_boot=200)
    assert broken.verdict == "not held" and broken.measured["improvement"] == pytest.approx(0.0)
    rng = np.random.default_rng(3)
    tiny = {k: [] for k in preds}
    for _ in range(2):  # 2 seeds of 10 test POIs: the arm is better on half of them and scrambled on the others
        y, weak, strong = _task_data(task, rng, 10)
        half = (rng.random(len(y)) < 0.5).reshape((-1,) + (1,) * (weak.ndim - 1))
        for k in ("category", "minilm"):
            tiny[k].append((y, weak))
            tiny[f"{k}+poi"].append((y, np.where(half, strong, weak[::-1])))
    t = C.claim_both_vs_text(task, tiny, {k: v[:2] for k, v in val.items()}, n_boot=200)
    assert t.verdict == "inconclusive" and "would decide it" in t.details


def test_the_gate_compares_with_the_text_control_that_is_better_on_validation():
    preds, val = _arms("function")
    val2 = {"category": [0.5] * 3, "minilm": [0.6] * 3}
    assert C.stronger_text(val2, "function") == "minilm"
    assert C.stronger_text({"category": [0.1] * 3, "minilm": [0.2] * 3}, "busyness") == "category"  # MAE
    assert C.claim_both_vs_text("function", preds, val2, n_boot=100).measured["text_control"] == "minilm"
    with pytest.raises(ValueError, match="text controls"):
        C.stronger_text({"hand": [0.1]}, "function")


def test_scorer_matches_the_task_metrics_and_reranked_resamples():
    rng = np.random.default_rng(1)
    for task in ("opening_hours", "closure", "busyness", "function", "price"):
        y, weak, _ = _task_data(task, rng, 60)
        sc = C.Scorer(task, y, weak)
        kind = {"opening_hours": "multilabel", "closure": "binary", "busyness": "profile"}.get(task, "multiclass")
        prob = weak if task in ("busyness", "function", "price") else 1 / (1 + np.exp(-weak))
        want = task_metrics(kind, y, prob)[C.MARGINS[task][0]]
        assert sc(np.ones(60)) == pytest.approx(want, abs=1e-9)
    y = (rng.random(80) < 0.4).astype(int)
    s = rng.normal(size=80) + y
    sc = C.Scorer("closure", y, s)
    for _ in range(10):
        idx = rng.integers(0, 80, 80)
        assert sc(np.bincount(idx, minlength=80)) == pytest.approx(float(auroc_columns(y[idx], s[idx])), abs=1e-12)
    with pytest.raises(ValueError, match="task"):
        C.Scorer("colour", y, s)


def test_check2_two_of_three_from_the_second_best_part():
    iv = lambda lo, hi: stats.Interval(lo, hi, method="t", n=3, sd=0.01)  # noqa: E731
    h = stats.decide(0.2, iv(0.15, 0.25), 0.05, label="a")
    n = stats.decide(-0.1, iv(-0.15, -0.05), 0.05, label="b")
    i = stats.decide(0.05, iv(-0.05, 0.15), 0.05, label="c")
    assert C.second_best([h, h, n]).verdict == "held"
    assert C.second_best([h, n, n]).verdict == "not held"
    assert C.second_best([h, i, n]).verdict == "inconclusive"
    assert C.second_best([i, i, h]).verdict == "inconclusive"
    with pytest.raises(ValueError, match="3"):
        C.second_best([h, h])
    task_preds = {t: _arms(t)[0] for t in ("opening_hours", "closure", "busyness")}
    vals = {t: _arms(t)[1] for t in task_preds}
    for t in task_preds:
        task_preds[t]["poi"] = task_preds[t]["category+poi"]
    assert C.claim_poi_vs_text(task_preds, vals, n_boot=100).verdict == "held"
    for t in ("closure", "busyness"):
        task_preds[t]["poi"] = task_preds[t]["category"]  # broken: ME-POIs alone = a copy of the text control
    c = C.claim_poi_vs_text(task_preds, vals, n_boot=100)
    assert c.verdict == "not held" and c.measured["wins_decided"] == 1


def test_check3_ratio_held_not_held_and_inconclusive():
    rng = np.random.default_rng(0)
    counts = np.r_[np.zeros(50, int), rng.integers(1, 6, 120), np.full(100, 40)]
    e0 = [rng.uniform(0.1, 0.2, len(counts)) for _ in range(3)]
    better = [e * 0.8 for e in e0]
    held = C.claim_propagation(better, e0, counts, n_boot=200)
    assert held.verdict == "held" and held.measured["n_sparse"] == 120 and held.measured["ratio"] == pytest.approx(0.8)
    assert C.claim_propagation(e0, e0, counts, n_boot=200).verdict == "not held"  # the ablation against itself
    assert C.claim_propagation(better, e0, counts, min_n=200, n_boot=200).verdict == "inconclusive"  # too few POIs
    few = np.r_[np.full(8, 3), np.full(100, 40)]
    noisy = [rng.uniform(0.05, 0.3, 108) for _ in range(2)]
    ref = [rng.uniform(0.05, 0.3, 108) for _ in range(2)]
    assert C.claim_propagation(noisy, ref, few, min_n=5, n_boot=200).verdict == "inconclusive"
    # zero-visit POIs are not in the gate: improving only them does not make it hold; they are a sanity claim
    only_zero = [np.where(counts == 0, e * 0.5, e) for e in e0]
    assert C.claim_propagation(only_zero, e0, counts, n_boot=200).verdict == "not held"
    z = C.claim_zero_visit(only_zero, e0, counts, n_boot=200)
    assert z.verdict == "held" and z.kind == "sanity"


def test_price_is_reported_and_controls_are_sanity():
    preds, val = _arms("price")
    p = C.claim_price(preds, val, n_boot=100)
    assert p.kind == "report" and p.verdict == "held"
    s = C.claim_controls({"function": {"poi": [0.5, 0.52, 0.49], "random": [0.1, 0.12, 0.11]}})
    assert s.kind == "sanity" and s.verdict == "held"
    assert C.claim_controls({"function": {"poi": [0.12, 0.1, 0.11], "random": [0.1, 0.11, 0.1]}}).verdict == \
        "not held"
