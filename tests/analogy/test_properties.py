"""Hypothesis drives the public entry points with bad and edge-case inputs: each gives a valid answer or raises
ValueError/TypeError naming the argument."""

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icml26.analogy import (
    AnalogyWorld,
    CurriculumTrainer,
    FactorizedTransformer,
    Premise,
    TwoHopWorld,
    fit,
    predict,
    two_hop_accuracy,
)
from icml26.analogy import experiment

BAD_NUMBERS = st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e300, 2.5, -1, -3.0, "2", None, True,
                               [2], 0.5])
SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
_W = AnalogyWorld(n_groups=3, group_size=2, n_individual=1, seed=0)


def _raises_naming(fn, name):
    with pytest.raises((ValueError, TypeError)) as e:
        fn()
    assert name in str(e.value)


@SETTINGS
@given(key=st.sampled_from(["n_groups", "group_size", "n_features", "n_individual", "seed"]), bad=BAD_NUMBERS)
def test_world_sizes(key, bad):
    ok_small = {"n_groups": 2, "group_size": 2, "n_features": 1, "n_individual": 0, "seed": 0}
    _raises_naming(lambda: AnalogyWorld(**{key: bad}), key)
    w = AnalogyWorld(**ok_small)
    assert len(w.test) == 2 and w.vocab_size == 2 * 2 + 2 + 2 + 3


@SETTINGS
@given(G=st.integers(2, 4), k=st.integers(2, 4), F=st.integers(1, 2), n_ind=st.integers(0, 2),
       seed=st.integers(0, 10))
def test_world_valid_sizes(G, k, F, n_ind, seed):
    w = AnalogyWorld(G, k, F, n_ind, seed=seed)
    assert w.vocab_size == G * k + G * F + G + G * k * n_ind + 3
    assert len(w.similarity) == G * k * F and len(w.test) == G * (k - 1) and len(w.individual) == G * k * n_ind
    t = TwoHopWorld(n_chains=G, bridge=bool(seed % 2), n_individual=n_ind, seed=seed)
    assert len(t.facts) == 2 * G + (G if seed % 2 else 0) + 3 * G * n_ind


@SETTINGS
@given(key=st.sampled_from(["vocab_size", "d_model", "init_std", "seed"]), bad=BAD_NUMBERS)
def test_model_args(key, bad):
    if key == "init_std" and isinstance(bad, float) and math.isfinite(bad) and bad >= 0:
        FactorizedTransformer(5, init_std=bad)  # a finite non-negative sigma is valid
        return
    _raises_naming(lambda: FactorizedTransformer(**{"vocab_size": 5, key: bad}), key)


@SETTINGS
@given(inputs=st.one_of(
    st.lists(st.lists(st.integers(-3, 30), min_size=0, max_size=4), min_size=0, max_size=4),
    st.sampled_from([None, "ab", 3, [[1.5, 2]], [[True, 1]], np.zeros((2, 2)), torch.zeros(2, 2),
                     torch.zeros(2, 2, 2, dtype=torch.long), [[float("nan")]]])))
def test_forward_inputs(inputs):
    m = FactorizedTransformer(_W.vocab_size, answer_sets=_W.answer_sets)
    try:
        z = m(inputs)
    except (ValueError, TypeError) as e:
        assert "batch_inputs" in str(e)
        return
    assert z.shape == (len(inputs), _W.vocab_size)
    assert torch.isfinite(z).sum(dim=1).min() >= 1  # every row has its answer set
    assert predict(m, inputs).shape == (len(inputs),)


@SETTINGS
@given(key=st.sampled_from(["steps", "lr"]), bad=BAD_NUMBERS)
def test_fit_args(key, bad):
    m = FactorizedTransformer(_W.vocab_size, answer_sets=_W.answer_sets)
    kw = {"steps": 2, "lr": 1.0, key: bad}
    if key == "lr" and isinstance(bad, float) and math.isfinite(bad) and 0 < bad <= 1e3:
        assert len(fit(m, _W.premises, **kw)) == 3
        return
    _raises_naming(lambda: fit(m, _W.premises, **kw), key)


@SETTINGS
@given(premises=st.sampled_from([[], None, "x", [(0, 1)], [Premise((0, _W.IS), 10_000)],
                                 [Premise((0, _W.IS), 2.0)], [Premise((), 0)]]))
def test_fit_premises(premises):
    m = FactorizedTransformer(_W.vocab_size, answer_sets=_W.answer_sets)
    with pytest.raises((ValueError, TypeError)):
        fit(m, premises, 1)


@SETTINGS
@given(key=st.sampled_from(["schedule", "steps_per_stage", "lr", "eval_every"]),
       bad=st.one_of(BAD_NUMBERS, st.sampled_from(["nope", (1, 2, 3)])))
def test_trainer_args_also_after_construction(key, bad):
    m = FactorizedTransformer(_W.vocab_size, answer_sets=_W.answer_sets)
    kw = {"schedule": "sim_then_attr", "steps_per_stage": 2, "lr": 1.0, "eval_every": 0}
    t = CurriculumTrainer(m, **kw)
    setattr(t, key, bad)
    try:
        out = t.run(_W)
    except (ValueError, TypeError) as e:
        assert key in str(e)
        return
    assert len(out["losses"]) == 2  # only a valid value (e.g. a finite lr) may get here
    # only valid values get here: a finite positive lr, or an integral eval_every (1e300: log only at the ends)
    assert key == "lr" and isinstance(bad, float) or key == "eval_every" and bad == 1e300
    if key == "eval_every":
        assert out["time_course"]["step"] == [0, 2, 4]


@SETTINGS
@given(form=st.sampled_from(["composed", "analogical", "x", None, 1]))
def test_two_hop_form(form):
    w = TwoHopWorld(n_chains=3)
    m = FactorizedTransformer(w.vocab_size, answer_sets=w.answer_sets)
    if form in ("composed", "analogical"):
        assert 0 <= two_hop_accuracy(m, w, form) <= 1
    else:
        _raises_naming(lambda: two_hop_accuracy(m, w, form), "form")
    _raises_naming(lambda: two_hop_accuracy(m, _W, "composed"), "world")


@SETTINGS
@given(key=st.sampled_from(sorted(experiment._INTS) + ["init_std", "lr"]), bad=BAD_NUMBERS)
def test_validate_config(key, bad):
    cfg = dict(experiment.CONFIGS["smoke"], **{key: bad})
    try:
        experiment.validate_config(cfg)
    except (ValueError, TypeError) as e:
        assert key in str(e)
        return
    assert key in ("init_std", "lr") and isinstance(bad, float) and bad > 0 and math.isfinite(bad)
