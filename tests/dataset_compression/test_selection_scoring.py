"""Selectors and pruning scores (spec 8): balance, determinism, disjoint easy/hard, errors, known answers."""

import numpy as np
import pytest
import torch
import torch.nn as nn

from icml26.dataset_compression import (
    CCSSelector,
    HerdingSelector,
    RandomSelector,
    ScoreSelector,
    aum_scores,
    el2n_scores,
    forgetting_events,
    forgetting_scores,
)


def _selectors(scores):
    return [RandomSelector(random_state=1), HerdingSelector(), ScoreSelector("el2n", "easy"),
            ScoreSelector("el2n", "hard"), CCSSelector("el2n", beta=0.1, n_strata=4)], scores


@pytest.mark.parametrize("ipc", [1, 3, 7])
def test_selectors_are_class_balanced_and_deterministic(digits, ipc):
    X, y = digits["X"], digits["y"]
    scores = np.random.default_rng(0).random(len(y))
    sels, _ = _selectors(scores)
    for sel in sels:
        kw = {"scores": scores} if isinstance(sel, (ScoreSelector, CCSSelector)) else {}
        idx = sel.fit(X, y, **kw).select(ipc)
        assert np.bincount(y.numpy()[idx], minlength=10).tolist() == [ipc] * 10, type(sel).__name__
        assert len(set(idx)) == len(idx)
        assert np.array_equal(idx, sel.select(ipc)), type(sel).__name__  # same answer when asked twice
    other = RandomSelector(random_state=2).fit(X, y).select(ipc)
    assert not np.array_equal(other, RandomSelector(random_state=1).fit(X, y).select(ipc))


def test_easy_and_hard_are_disjoint_and_ordered(digits):
    X, y = digits["X"], digits["y"]
    scores = np.round(np.random.default_rng(1).random(len(y)), 1)  # many ties
    easy = ScoreSelector("el2n", "easy", random_state=0).fit(X, y, scores=scores).select(10)
    hard = ScoreSelector("el2n", "hard", random_state=0).fit(X, y, scores=scores).select(10)
    assert not set(easy) & set(hard)  # 2 * 10 <= 20 per class, even with tied scores
    for c in range(10):
        e, h = easy[c * 10:(c + 1) * 10], hard[c * 10:(c + 1) * 10]
        assert scores[e].max() <= scores[h].min()
    # AUM: high = easy, so keep="easy" takes the highest AUM
    aum_easy = ScoreSelector("aum", "easy").fit(X, y, scores=scores).select(2)
    assert all(scores[aum_easy[2 * c:2 * c + 2]].min() >= np.sort(scores[y.numpy() == c])[-2] for c in range(10))


def test_selector_errors(digits):
    X, y = digits["X"], digits["y"]
    with pytest.raises(ValueError, match="ipc"):
        RandomSelector().fit(X, y).select(21)  # classes hold 20
    with pytest.raises(ValueError, match="ipc"):
        RandomSelector().fit(X, y).select(0)
    with pytest.raises(ValueError, match="ipc"):
        RandomSelector().fit(X, y).select(2.5)
    with pytest.raises(ValueError, match="y"):
        RandomSelector().fit(X, y + 1)  # class 0 missing
    with pytest.raises(ValueError, match="y"):
        RandomSelector().fit(X, y[:-1])
    with pytest.raises(ValueError, match="y"):
        RandomSelector().fit(X, y.numpy() - 1)
    with pytest.raises(ValueError, match="keep"):
        ScoreSelector("el2n", "medium")
    with pytest.raises(ValueError, match="metric"):
        ScoreSelector("grand")
    s = ScoreSelector()
    s.set_params(keep="both")  # set_params bypasses __init__; fit re-checks
    with pytest.raises(ValueError, match="keep"):
        s.fit(X, y, scores=np.zeros(len(y)))
    with pytest.raises(ValueError, match="scores"):
        ScoreSelector().fit(X, y, scores=np.r_[np.zeros(len(y) - 1), np.nan])
    with pytest.raises(ValueError, match="not fitted"):
        ScoreSelector().select(1)
    with pytest.raises(ValueError, match="ipc"):  # CCS: 20 - floor(0.5 * 20) = 10 left per class
        CCSSelector(beta=0.5).fit(X, y, scores=np.zeros(len(y))).select(11)


def test_herding_known_answers(digits):
    X, y = digits["X"], digits["y"]
    h = HerdingSelector().fit(X, y)
    whole = h.select(20)
    assert sorted(whole) == list(range(len(y)))  # ipc = class size returns every sample
    first = h.select(1)
    feats = X.flatten(1).numpy()
    for c in range(10):
        cls = np.flatnonzero(y.numpy() == c)
        d = np.linalg.norm(feats[cls] - feats[cls].mean(0), axis=1)
        assert first[c] == cls[np.argmin(d)]
    # a feature function is used when given
    hf = HerdingSelector(feature_fn=lambda x: x.flatten(1)[:, :5]).fit(X, y)
    assert hf.features_.shape == (len(y), 5)


def test_ccs_drops_the_hardest_and_covers_strata(digits):
    X, y = digits["X"], digits["y"]
    scores = np.tile(np.arange(20, dtype=float), 10)[np.argsort(np.argsort(y.numpy(), kind="stable"))]
    idx = CCSSelector(beta=0.25, n_strata=5).fit(X, y, scores=scores).select(5)
    assert scores[idx].max() < 15  # the hardest 5 of each class (scores 15..19) are cut
    for c in range(10):  # 15 kept scores 0..14 in 5 strata of 3: one pick from each stratum
        s = np.sort(scores[idx[5 * c:5 * c + 5]])
        assert [int(v // 3) for v in s] == [0, 1, 2, 3, 4]


class _Oracle(nn.Module):
    """Reads the class from a one-hot channel: a classifier that is already perfect and confident."""

    def __init__(self, k):
        super().__init__()
        self.lin = nn.Linear(k, k, bias=False)
        with torch.no_grad():
            self.lin.weight.copy_(60 * torch.eye(k))

    def forward(self, x):
        return self.lin(x.flatten(1))


def test_el2n_of_a_perfect_classifier_is_zero():
    k = 5
    y = torch.arange(40) % k
    X = torch.eye(k)[y][:, :, None, None]  # (N, k, 1, 1)
    s = el2n_scores(X, y, model_factory=lambda: _Oracle(k), n_models=2, epochs=1, lr=1e-12)
    assert s.shape == (40,) and float(s.max()) < 1e-6
    # and is maximal (sqrt 2) when the label is the confident wrong class
    s_wrong = el2n_scores(X, (y + 1) % k, model_factory=lambda: _Oracle(k), n_models=1, epochs=1, lr=1e-12)
    assert np.allclose(s_wrong, np.sqrt(2), atol=1e-6)


def test_a_mislabeled_sample_scores_harder_than_its_clean_twin(digits8):
    X, y = digits8["X"], digits8["y"].clone()
    X = torch.cat([X, X[:1]])
    y = torch.cat([y, torch.tensor([(int(y[0]) + 5) % 10])])  # the last sample: image 0 with a wrong label
    el2n = el2n_scores(X, y, n_models=2, epochs=6, random_state=0)
    assert el2n[-1] > el2n[0] and el2n[-1] > np.median(el2n)
    aum = aum_scores(X, y, epochs=8, random_state=0)
    assert aum[-1] < aum[0]
    again = el2n_scores(X, y, n_models=2, epochs=6, random_state=0)
    assert np.array_equal(el2n, again)  # deterministic given random_state


def test_forgetting_known_answers(digits8):
    assert forgetting_events([[1, 0, 1, 0], [0, 0, 0, 0], [1, 1, 1, 1], [0, 1, 1, 0]]).tolist() == [2, 4, 0, 1]
    with pytest.raises(ValueError, match="trace"):
        forgetting_events([[1, 2]])
    X, y = digits8["X"], digits8["y"]
    f = forgetting_scores(X, y, epochs=4, random_state=0)
    assert f.shape == (len(y),) and set(np.unique(f)) <= {0, 1, 2, 4}  # at most 2 events in 4 presentations
    sel = ScoreSelector("forgetting", "hard").fit(X, y, scores=f).select(1)
    assert all(f[i] == f[y.numpy() == y[i].item()].max() for i in sel)  # never-learned ranks hardest
