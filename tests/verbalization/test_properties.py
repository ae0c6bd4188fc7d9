"""Hypothesis: the public entry points answer validly or raise ValueError/TypeError/IndexError naming the argument."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icml26.verbalization import (LinearProbe, PersonaWorld, TinyCausalLM, contains_match, mcnemar,
                                  patch_activations, read_activations)
from icml26.verbalization.verbalize import check_texts

torch.manual_seed(0)
MODEL = TinyCausalLM(12, d_model=8, n_layers=2, n_heads=2, max_len=16).eval()
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

weird = st.one_of(st.none(), st.booleans(), st.integers(-3, 20), st.floats(allow_nan=True, allow_infinity=True),
                  st.text(max_size=3), st.lists(st.integers(-2, 14), max_size=4),
                  st.lists(st.lists(st.integers(-2, 14), min_size=0, max_size=4), max_size=3),
                  st.lists(st.floats(allow_nan=True), max_size=3))


def _named(err: Exception, *names: str) -> bool:
    msg = str(err)
    return any(n in msg for n in names)


@SETTINGS
@given(ids=weird, layer=weird, positions=st.one_of(weird, st.sampled_from(["last", "all", "first"])))
def test_read_activations(ids, layer, positions):
    try:
        out = read_activations(MODEL, ids, None, layer, positions)
    except (ValueError, TypeError, IndexError) as e:
        assert _named(e, "input_ids", "layer", "positions", "attention_mask")
        return
    assert out.ndim == 3 and out.shape[-1] == 8 and torch.isfinite(out).all()


@SETTINGS
@given(layer=weird, positions=weird, vectors=st.one_of(weird, st.just(torch.zeros(8)), st.just(torch.zeros(2, 8)),
                                                       st.just(torch.full((8,), float("inf")))),
       mode=st.sampled_from(["replace", "add", "mix"]))
def test_patch_activations(layer, positions, vectors, mode):
    ids = torch.tensor([[1, 3, 4, 5]])
    try:
        with patch_activations(MODEL, layer, positions, vectors, mode):
            out = MODEL(ids)
    except (ValueError, TypeError, IndexError) as e:
        assert _named(e, "layer", "positions", "vectors", "mode", "hidden size", "rows", "forward pass")
        return
    assert out.shape == (1, 4, 12) and torch.isfinite(out).all()


texts = st.one_of(st.text(max_size=5), st.lists(st.one_of(st.text(max_size=4), st.integers()), max_size=3),
                  st.none(), st.integers())


@SETTINGS
@given(a=texts, b=texts)
def test_check_texts_and_contains_match(a, b):
    try:
        src, qs = check_texts(a, b)
    except (ValueError, TypeError) as e:
        assert _named(e, "source_texts", "questions")
    else:
        assert len(src) == len(qs) and all(isinstance(s, str) and s.strip() for s in src + qs)
    try:
        got = contains_match(a, b)
    except (ValueError, TypeError) as e:
        assert _named(e, "completions", "answers")
    else:
        assert got.dtype == bool and len(got) == len(a)


@SETTINGS
@given(X=st.one_of(weird, st.lists(st.lists(st.floats(-5, 5), min_size=2, max_size=2), min_size=0, max_size=6)),
       y=st.one_of(weird, st.lists(st.integers(0, 2), min_size=0, max_size=6)), l2=weird)
def test_linear_probe(X, y, l2):
    try:
        probe = LinearProbe(l2=l2).fit(X, y)
    except (ValueError, TypeError) as e:
        assert _named(e, "X", "y", "l2", "classes")
        return
    pred = probe.predict(X)
    assert len(pred) == len(y) and set(np.asarray(pred).tolist()) <= set(np.asarray(y).tolist())


@SETTINGS
@given(a=weird, b=weird)
def test_mcnemar(a, b):
    try:
        p = mcnemar(a, b)
    except (ValueError, TypeError) as e:
        assert _named(e, "a_correct", "b_correct")
        return
    assert 0.0 <= p <= 1.0


@settings(max_examples=25, deadline=None)
@given(seed=weird, n_cultures=weird, n_personas=weird, variant=st.one_of(weird, st.sampled_from(
    ["consistent", "shuffled", "fantasy", ("fantasy", "fantasy")])))
def test_persona_world(seed, n_cultures, n_personas, variant):
    try:
        w = PersonaWorld(seed, n_cultures, n_personas, variant=variant, n_generic=4, n_fantasy=4)
    except (ValueError, TypeError) as e:
        assert _named(e, "seed", "n_cultures", "n_personas", "variant", "name pairs", "shuffled")
        return
    for g in w.variants:
        assert len(w.eval_items(g)) == len(w.personas[g]) * len(w.attributes)


def test_reuse_after_attribute_change_is_rechecked():
    probe = LinearProbe().fit([[0.0], [1.0], [0.1], [0.9]], [0, 1, 0, 1])
    probe.max_iter = 2.5
    with pytest.raises(ValueError, match="max_iter"):
        probe.fit([[0.0], [1.0]], [0, 1])
