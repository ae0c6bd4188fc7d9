"""Scoring, McNemar, the linear probe and the persona-split probe (spec 8 and review note 1)."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.verbalization import (LinearProbe, bonferroni, contains_match, first_token_match,
                                  grouped_probe_accuracy, mcnemar)


def test_contains_match_case_and_whole_words():
    got = contains_match(["The answer is Sushi .", "goodness", "go home", "new york city"],
                         ["sushi", "go", "go", "New York"])
    assert got.tolist() == [True, False, True, True]
    assert contains_match(["goodness"], ["go"], word_boundary=False).tolist() == [True]
    assert first_token_match(["sushi and tacos", "tacos sushi"], ["Sushi", "sushi"]).tolist() == [True, False]
    with pytest.raises(ValueError, match="empty answer"):
        contains_match(["x"], [""])
    with pytest.raises(ValueError, match="same length"):
        contains_match(["x", "y"], ["x"])
    with pytest.raises(TypeError, match="not single strings"):
        contains_match("abc", "a")


def test_mcnemar_exact_values():
    a = np.array([True] * 5 + [False] * 5)
    b = np.array([False] * 5 + [False] * 5)
    assert mcnemar(a, b) == pytest.approx(2 * 0.5 ** 5)
    assert mcnemar(a, a) == 1.0
    assert mcnemar([1, 0, 1], [1, 0, 1]) == 1.0
    assert bonferroni([0.01, 0.5]) == [0.02, 1.0]
    with pytest.raises(TypeError, match="booleans"):
        mcnemar([0.5, 1], [1, 1])


def test_linear_probe_recovers_planted_signal_and_is_at_chance_on_shuffled():
    rng = np.random.default_rng(0)
    n, d, k = 600, 20, 4
    y = rng.integers(0, k, n)
    centers = rng.normal(size=(k, d)) * 2
    X = centers[y] + rng.normal(size=(n, d))
    probe = LinearProbe().fit(X[:400], y[:400])
    assert probe.score(X[400:], y[400:]) > 0.95
    assert probe.predict_proba(X[:3]).sum(1) == pytest.approx(np.ones(3))
    shuffled = rng.permutation(y)
    assert abs(LinearProbe().fit(X[:400], shuffled[:400]).score(X[400:], shuffled[400:]) - 1 / k) < 0.1
    labels = np.array(["a", "b"])[y % 2]
    assert set(LinearProbe().fit(X, labels).predict(X[:10])) <= {"a", "b"}


def test_persona_split_probe_does_not_leak_identity():
    """Review note 1: random labels per group are at chance when groups are held out (and not when shared)."""
    rng = np.random.default_rng(1)
    groups = np.repeat(np.arange(48), 4)
    ident = rng.normal(size=(48, 16))[groups] + 0.1 * rng.normal(size=(192, 16))
    labels = rng.integers(0, 8, 48)[groups]  # a label per persona, unrelated to any feature direction
    held_out = grouped_probe_accuracy({"site": ident}, labels, groups, n_folds=4, seed=0, max_iter=100)["accuracy"]
    assert held_out < 0.25
    par = np.arange(192) % 4  # paraphrase index: train on 3 paraphrases, test on the 4th
    shared = LinearProbe().fit(ident[par != 0], labels[par != 0]).score(ident[par == 0], labels[par == 0])
    assert shared > 0.9  # the leaky split of the spec's first draft "decodes" random labels
    planted = rng.normal(size=(8, 16))[labels] * 2 + ident
    res = grouped_probe_accuracy({"noise": ident, "signal": planted}, labels, groups, n_folds=4, seed=0, max_iter=100)
    assert res["accuracy"] > 0.8 and set(res["sites"]) == {"signal"}
    tuned = grouped_probe_accuracy({"noise": ident, "signal": planted}, labels, groups, n_folds=4, seed=0,
                                   max_iter=100, l2=[1e-2, 1e4])
    assert set(tuned["l2"]) == {1e-2} and tuned["accuracy"] > 0.8  # a crushing penalty loses the inner CV
    with pytest.raises(ValueError, match="l2"):
        grouped_probe_accuracy({"s": ident}, labels, groups, n_folds=4, l2=[])


def test_probe_errors():
    with pytest.raises(ValueError, match="finite"):
        LinearProbe().fit([[0.0, np.nan], [1, 2]], [0, 1])
    with pytest.raises(ValueError, match="2 classes"):
        LinearProbe().fit([[0.0], [1.0]], [1, 1])
    with pytest.raises(ValueError, match="rows"):
        LinearProbe().fit([[0.0], [1.0]], [0, 1, 1])
    with pytest.raises(ValueError, match="not fitted"):
        LinearProbe().predict([[0.0]])
    p = LinearProbe().set_params(l2=-1)
    with pytest.raises(ValueError, match="l2"):
        p.fit([[0.0], [1.0]], [0, 1])
    with pytest.raises(ValueError, match="features"):
        LinearProbe().fit([[0.0], [1.0]], [0, 1]).predict([[0.0, 1.0]])
    with pytest.raises(ValueError, match="n_folds"):
        grouped_probe_accuracy({"s": np.zeros((4, 2))}, [0, 1, 0, 1], [0, 0, 1, 1], n_folds=4)
