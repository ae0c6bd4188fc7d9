"""Hypothesis: the public entry points return a valid answer or raise ValueError/TypeError naming the argument."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icml26.active_attacks import (
    ActiveAttacks,
    BagOfWordsToxicityClassifier,
    KeywordHarmOracle,
    ReplayBuffer,
    TabularAttacker,
    ToxWorld,
    attack_success_rate,
    category_entropy,
    diversity,
    gfn_log_reward,
    score,
)
from icml26.active_attacks.experiment import CONFIGS, validate_config

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
weird = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True, allow_infinity=True),
                  st.text(max_size=4), st.lists(st.integers(-2, 5), max_size=3))


class EchoVictim:
    version = 0

    def respond(self, prompts, n=5, generator=None):
        return [[p] * n for p in prompts]


class FixedClassifier:
    def __init__(self, values):
        self.values = values

    def __call__(self, prompts, responses):
        return torch.tensor(self.values[: len(responses)], dtype=torch.float64)


def _named(err: Exception, *names: str) -> bool:
    return any(n in str(err) for n in names)


@SETTINGS
@given(capacity=weird, dedup=st.one_of(st.sampled_from(["edit", "exact", "fuzzy"]), weird), tolerance=weird)
def test_replay_buffer_constructor(capacity, dedup, tolerance):
    try:
        buf = ReplayBuffer(capacity, dedup, tolerance)
    except (ValueError, TypeError) as e:
        assert _named(e, "capacity", "dedup", "tolerance")
        return
    assert buf.capacity >= 1 and len(buf) == 0


@SETTINGS
@given(seqs=st.lists(st.lists(st.integers(0, 6), max_size=5), max_size=6),
       pr=st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=6))
def test_replay_buffer_add(seqs, pr):
    buf = ReplayBuffer(3)
    texts = [" ".join(map(str, s)) for s in seqs]
    try:
        buf.add(seqs, texts, [0.0] * len(seqs), [0.0] * len(seqs), pr)
    except (ValueError, TypeError) as e:
        assert _named(e, "same length", "finite", "texts")
        return
    assert len(buf) <= 3
    assert [it.priority for it in buf.items] == sorted((it.priority for it in buf.items), reverse=True)


@SETTINGS
@given(values=st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=0, max_size=4),
       n_prompts=st.integers(0, 3), threshold=weird)
def test_asr_with_arbitrary_classifier_output(values, n_prompts, threshold):
    prompts = [f"p{i}" for i in range(n_prompts)]
    try:
        asr = attack_success_rate(prompts, EchoVictim(), FixedClassifier(values * 5), threshold=threshold
                                  if threshold is not None else 0.5, n=1)
    except (ValueError, TypeError) as e:
        assert _named(e, "prompts", "threshold", "outside [0, 1]", "one probability", "FixedClassifier")
        return
    assert 0.0 <= asr <= 1.0
    v = np.asarray(values[:n_prompts], dtype=float)
    assert asr == pytest.approx(float(np.mean(v > (0.5 if threshold is None else float(threshold)))))


@SETTINGS
@given(c=st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=3), beta=weird, gamma=weird, temp=weird)
def test_gfn_log_reward(c, beta, gamma, temp):
    try:
        out = gfn_log_reward(c, [0.0] * len(c), beta, gamma, temp)
    except (ValueError, TypeError, RuntimeError) as e:
        assert _named(e, "beta", "gamma", "temperature", "size", "tensor")
        return
    assert out.shape == (len(c),)


@SETTINGS
@given(cats=st.one_of(st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "c"]))), st.text(max_size=3)))
def test_category_entropy(cats):
    try:
        h = category_entropy(cats)
    except (ValueError, TypeError) as e:
        assert _named(e, "categories", "labelled")
        return
    assert 0.0 <= h <= math.log(3) + 1e-9


@SETTINGS
@given(prompts=st.one_of(st.lists(st.text(alphabet="ab ", max_size=6), max_size=5), weird),
       max_prompts=st.integers(-1, 4))
def test_diversity(prompts, max_prompts):
    try:
        d = diversity(prompts, max_prompts=max_prompts)
    except (ValueError, TypeError) as e:
        assert _named(e, "prompts", "max_prompts", "at least 2")
        return
    assert -1e-9 <= d <= 1.0 + 1e-9


@SETTINGS
@given(vocab=weird, length=weird)
def test_tabular_attacker(vocab, length):
    try:
        att = TabularAttacker(vocab, length)
    except (ValueError, TypeError) as e:
        assert _named(e, "vocab_size", "length")
        return
    toks, texts = att.sample(3)
    assert torch.isfinite(att.log_prob(toks)).all() and len(texts) == 3
    with pytest.raises(ValueError, match="tokens"):
        att.log_prob([[att.vocab_size] * att.length])


@SETTINGS
@given(labels=st.lists(st.one_of(st.integers(-1, 2), st.floats(allow_nan=True)), min_size=1, max_size=4), C=weird)
def test_bow_classifier_fit(labels, C):
    texts = ["idiot", "hello", "moron day", "nice"][: len(labels)]
    try:
        clf = BagOfWordsToxicityClassifier(C=C if C is not None else 1.0).fit(texts, labels)
    except (ValueError, TypeError) as e:
        assert _named(e, "labels", "C", "texts")
        return
    p = clf.predict_proba(["idiot", "unseen words"])
    assert np.all((p >= 0) & (p <= 1))


@SETTINGS
@given(words=st.one_of(st.dictionaries(st.text(max_size=3), st.lists(st.text(max_size=3), max_size=2), max_size=3),
                       weird))
def test_keyword_oracle(words):
    try:
        oracle = KeywordHarmOracle(words)
    except (ValueError, TypeError) as e:
        assert _named(e, "harm_words", "harm word")
        return
    out = oracle(["p"], ["some text"])
    assert out.shape == (1,)


@SETTINGS
@given(interval=weird, steps=weird, lr=weird)
def test_active_attacks_arguments(interval, steps, lr):
    class Dummy:
        pass

    from icml26.active_attacks.redteam import RedTeamTrainer

    tr = RedTeamTrainer.__new__(RedTeamTrainer)

    class V:
        def safety_finetune(self, *a, **k):
            return self

    tr.victim = V()
    try:
        ActiveAttacks(tr, interval, steps, safety_lr=lr)
    except (ValueError, TypeError) as e:
        assert _named(e, "interval", "safety_steps", "safety_lr")


@SETTINGS
@given(key=st.sampled_from(sorted(k for k in CONFIGS["small"] if k != "q")), value=weird)
def test_validate_config(key, value):
    cfg = {**CONFIGS["small"], key: value}
    try:
        validate_config(cfg)
    except (ValueError, TypeError) as e:
        assert key.split("_")[0] in str(e) or key in str(e), (key, str(e))


@SETTINGS
@given(q=st.one_of(st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=7), weird),
       lo=weird, hi=weird)
def test_toxworld(q, lo, hi):
    try:
        w = ToxWorld(q=q, min_len=lo if lo is not None else 4, max_len=hi if hi is not None else 6)
    except (ValueError, TypeError) as e:
        assert _named(e, "q", "min_len", "max_len")
        return
    ps = w.sft_prompts(3, np.random.default_rng(0))
    assert all(w.min_len <= len(p.split()) <= w.max_len for p in ps)


@SETTINGS
@given(n=st.integers(0, 3), bad=st.sampled_from([1.5, -0.1, float("nan"), float("inf")]))
def test_score_rejects_bad_probabilities(n, bad):
    prompts = ["x"] * (n + 1)
    with pytest.raises(ValueError, match="outside \\[0, 1\\]"):
        score(FixedClassifier([0.2] * n + [bad]), prompts, prompts)
