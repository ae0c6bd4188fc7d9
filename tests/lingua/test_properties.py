"""Property tests: the public entry points return a valid answer or raise ValueError/TypeError naming the argument."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icml26.lingua import (HashingEmbedder, LinguaAgent, LinguaConfig, RandomProjectionEncoder, ReliabilityTracker,
                           grounded_qa_report, select_frames, temporal_iop, temporal_iou, uniform_indices)
from icml26.lingua.prompts import parse_answer

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
weird = st.one_of(st.none(), st.booleans(), st.text(max_size=4), st.floats(allow_nan=True, allow_infinity=True),
                  st.integers(-5, 5), st.lists(st.floats(allow_nan=True), max_size=3))


def _ok_or_named_error(fn, names):
    try:
        return fn()
    except (ValueError, TypeError) as e:
        assert any(n in str(e) for n in names), f"error does not name the argument: {e}"
        return None


@SETTINGS
@given(a=st.floats(-1e6, 1e6), b=st.floats(-1e6, 1e6), c=st.floats(-1e6, 1e6), d=st.floats(-1e6, 1e6))
def test_iou_iop_in_unit_interval(a, b, c, d):
    p, g = (min(a, b), max(a, b)), (min(c, d), max(c, d))
    iou, iop = temporal_iou(p, g), temporal_iop(p, g)
    assert 0.0 <= iou <= 1.0 + 1e-12 and 0.0 <= iop <= 1.0 + 1e-12
    assert iou <= iop + 1e-12 or p[0] == p[1]


@SETTINGS
@given(x=weird, y=weird)
def test_iou_bad_spans(x, y):
    _ok_or_named_error(lambda: temporal_iou(x, y), ["pred", "gt"])


@SETTINGS
@given(n=st.integers(1, 8), data=st.data())
def test_report_on_generated_predictions(n, data):
    preds = [{"option_index": data.draw(st.integers(0, 4)),
              "span": sorted(data.draw(st.lists(st.floats(0, 50), min_size=2, max_size=2)))} for _ in range(n)]
    gts = [{"answer_idx": data.draw(st.integers(0, 4)),
            "gt_spans": [sorted(data.draw(st.lists(st.floats(0, 50), min_size=2, max_size=2)))],
            "qtype": data.draw(st.sampled_from(["CW", "TN", "DO", "causal", None]))} for _ in range(n)]
    r = grounded_qa_report(preds, gts, data.draw(st.sampled_from(["iou", "iop"])))
    assert 0 <= r["acc@gqa"] <= r["accuracy"] <= 1 and r["n"] == n


@SETTINGS
@given(bad=weird, key=st.sampled_from(["option_index", "span"]))
def test_report_bad_fields(bad, key):
    p = {"option_index": 1, "span": (0, 1)}
    p[key] = bad
    _ok_or_named_error(lambda: grounded_qa_report([p], [{"answer_idx": 1, "gt_spans": [(0, 1)]}]), ["preds[0]"])


@SETTINGS
@given(T=st.integers(1, 12), D=st.integers(1, 6), tau=st.floats(0, 2), nan=st.booleans(), seed=st.integers(0, 99))
def test_select_frames_properties(T, D, tau, nan, seed):
    E = np.random.default_rng(seed).standard_normal((T, D))
    if nan:
        E[T // 2, 0] = np.nan
        with pytest.raises(ValueError, match="embeddings"):
            select_frames(E, None, tau)
        return
    kept, deltas, reasons = select_frames(E, None, tau)
    assert kept[0] == 0 and kept == sorted(set(kept)) and len(reasons) == len(kept) and deltas.shape == (T,)
    assert all(deltas[t] > tau for t in kept[1:])
    assert np.all((deltas >= -1e-9) & (deltas <= 2 + 1e-9))


@SETTINGS
@given(n=weird, b=weird)
def test_uniform_indices_bad(n, b):
    _ok_or_named_error(lambda: uniform_indices(n, b), ["n_frames", "budget"])


@SETTINGS
@given(field=st.sampled_from(["tau_delta", "gamma_post", "n_min", "max_cycles", "merge_embedding", "learning",
                              "mine_every", "temperature", "prior_alpha"]), bad=weird)
def test_config_fields_validated(field, bad):
    cfg = LinguaConfig()
    setattr(cfg, field, bad)
    _ok_or_named_error(cfg.validate, [field])


@pytest.fixture(scope="module")
def observed_agent(world):
    from icml26.lingua import SymbolicCaptioner, SymbolicDetector

    a = LinguaAgent(LinguaConfig(), detector=SymbolicDetector(world), captioner=SymbolicCaptioner(world),
                    embedder=HashingEmbedder())
    v, qs = world.video(0)
    a.observe(v)
    return a, qs


@SETTINGS
@given(question=st.one_of(st.text(max_size=30), weird),
       options=st.one_of(st.lists(st.text(max_size=8), max_size=12), weird))
def test_answer_any_question(observed_agent, question, options):
    agent, _ = observed_agent
    r = _ok_or_named_error(lambda: agent.answer(question, options), ["question", "options"])
    if r is not None:
        assert 0 <= r.option_index < len(options) and r.span[0] <= r.span[1]


@SETTINGS
@given(T=st.integers(0, 4), H=st.integers(1, 5), C=st.integers(1, 3), fps=weird, dtype=st.sampled_from(
    ["float32", "float64", "int64", "bool"]), nan=st.booleans())
def test_observe_any_frames(T, H, C, fps, dtype, nan):
    class Cap:
        def caption(self, frame, detections):
            return "the person stands"

    agent = LinguaAgent(LinguaConfig(), encoder=RandomProjectionEncoder(8), captioner=Cap())
    frames = np.random.default_rng(0).random((T, H, H, C)).astype(dtype)
    if nan and dtype.startswith("float") and frames.size:
        frames.flat[0] = np.nan
    rep = _ok_or_named_error(lambda: agent.observe(frames, fps=fps), ["frames", "fps"])
    if rep is not None:
        assert rep.kept_idx[0] == 0 and 0 < rep.retention <= 1


@SETTINGS
@given(reply=st.text(max_size=40), n=st.integers(2, 10))
def test_parse_answer_total(reply, n):
    idx, ev = parse_answer(reply, n)
    assert idx is None or 0 <= idx < n
    assert ev is None or ev >= 0


@SETTINGS
@given(ops=st.lists(st.tuples(st.sampled_from(["a", "b"]), st.booleans()), max_size=20))
def test_tracker_counts(ops):
    tr = ReliabilityTracker()
    for sid, ok in ops:
        tr.update(sid, ok)
    for sid in ("a", "b"):
        a, b = tr.get(sid)
        assert a + b == 2 + sum(1 for s, _ in ops if s == sid)
        assert 0 < tr.expected(sid) < 1 and tr.entropy(sid) <= 1e-12
