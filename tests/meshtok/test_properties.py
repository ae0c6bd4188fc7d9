"""Hypothesis drives the public entry points with generated bad and edge-case inputs: each call returns a valid
answer or raises ValueError/TypeError naming the argument."""

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icml26.meshtok import (
    MeshTok,
    MultiScaleTokenizer,
    burgers2d,
    patch_scores,
    rel_l2,
    select_patches,
    trajectory_windows,
)

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

torch.manual_seed(0)
_MODEL = MeshTok(1, 16, 4, 0.25, dim=8, depth=1, heads=2, ffn=8, dec_width=2, max_time_len=6)
_TOK = MultiScaleTokenizer(1, 16, 4, 0.25, dim=8)

special = st.sampled_from([0.0, 1.0, -1.0, 1e30, -1e30, float("nan"), float("inf"), 1e-30])


@st.composite
def arrays(draw, max_dims=6):
    nd = draw(st.integers(0, max_dims))
    shape = tuple(draw(st.lists(st.sampled_from([0, 1, 2, 3, 4, 5, 8, 16]), min_size=nd, max_size=nd)))
    if int(np.prod(shape)) > 4096:  # keep examples small (a list of 16^6 floats takes minutes to build)
        shape = shape[:3]
    size = int(np.prod(shape)) if shape else 1
    base = np.random.default_rng(draw(st.integers(0, 1000))).standard_normal(size)
    if size and draw(st.booleans()):
        base[draw(st.integers(0, size - 1))] = draw(special)
    arr = base.reshape(shape)
    kind = draw(st.sampled_from(["np", "torch", "list", "int"]))
    if kind == "torch":
        return torch.from_numpy(arr).float()
    if kind == "list":
        return arr.tolist()
    if kind == "int":
        return np.round(arr).astype(np.int64) if np.all(np.isfinite(arr)) else arr
    return arr


@st.composite
def shaped(draw, shapes):
    """Arrays of one of `shapes` (valid for the entry point), sometimes with one special value."""
    shape = draw(st.sampled_from(shapes))
    arr = np.random.default_rng(draw(st.integers(0, 1000))).standard_normal(shape).astype(np.float32)
    if arr.size and draw(st.booleans()):
        arr.reshape(-1)[draw(st.integers(0, arr.size - 1))] = draw(special)
    return torch.from_numpy(arr) if draw(st.booleans()) else arr


def _ok_error(e: Exception, *names: str) -> None:
    assert isinstance(e, (ValueError, TypeError)), repr(e)
    assert any(n in str(e) for n in names), f"error {e!r} names none of {names}"


@SETTINGS
@given(x=st.one_of(arrays(), shaped([(2, 1, 16, 16), (1, 3, 8, 8), (1, 1, 16, 8)])), patch=st.one_of(st.integers(-2, 9), st.floats(allow_nan=True), st.just("4")))
def test_patch_scores(x, patch):
    try:
        s = patch_scores(x, patch)
    except Exception as e:  # noqa: BLE001
        _ok_error(e, "x", "patch")
        return
    assert s.dim() == 2 and torch.isfinite(s).all() and (s >= 0).all()


@SETTINGS
@given(seed=st.integers(0, 10_000), shift=st.tuples(st.integers(0, 3), st.integers(0, 3)))
def test_periodic_scores_follow_a_shift_of_the_field(seed, shift):
    # on a periodic domain there is no border: moving the field by whole patches moves the scores with it
    x = torch.from_numpy(np.random.default_rng(seed).standard_normal((1, 2, 16, 16)))
    s = patch_scores(x, 4, periodic=True).view(1, 4, 4)
    moved = patch_scores(torch.roll(x, (4 * shift[0], 4 * shift[1]), (-2, -1)), 4, periodic=True).view(1, 4, 4)
    torch.testing.assert_close(moved, torch.roll(s, shift, (-2, -1)))


@SETTINGS
@given(s=arrays(max_dims=3), k=st.one_of(st.integers(-2, 20), st.floats(), st.none()),
       mode=st.sampled_from(["physical", "random", "learned", 3]))
def test_select_patches(s, k, mode):
    try:
        idx = select_patches(s, k, mode)
    except Exception as e:  # noqa: BLE001
        _ok_error(e, "scores", "k", "mode")
        return
    assert idx.shape[1] == int(k) and (idx[:, 1:] > idx[:, :-1]).all()


@SETTINGS
@given(x=st.one_of(arrays(), shaped([(2, 1, 16, 16), (1, 2, 16, 16), (0, 1, 16, 16)])),
       refined=st.one_of(st.none(), arrays(max_dims=3), st.just([[0, 5, 9, 15], [1, 2, 3, 4]])))
def test_tokenizer_encode_decode(x, refined):
    try:
        tb = _TOK.encode(x, refined)
    except Exception as e:  # noqa: BLE001
        _ok_error(e, "frames", "refined_idx")
        return
    assert tb.tokens.shape[1:] == (28, 8) and torch.isfinite(tb.tokens).all()
    y = _TOK.decode(tb.tokens, tb)
    assert y.shape == tuple(torch.as_tensor(np.asarray(x, dtype=np.float32)).shape)


@SETTINGS
@given(x=st.one_of(arrays(), shaped([(2, 3, 16, 16, 1), (1, 6, 16, 16, 1), (1, 7, 16, 16, 1), (1, 2, 16, 16, 2)])),
       n_steps=st.one_of(st.integers(-1, 4), st.floats(-2, 6), st.sampled_from([3.0, 2.5, float("nan"), float("inf")])),
       window=st.one_of(st.none(), st.integers(-1, 8)))
def test_meshtok_forward_and_rollout(x, n_steps, window):
    # n_steps stays small: an integral float such as 1e12 is a valid length, and with a sliding window nothing
    # bounds it, so an unbounded draw would run a trillion-step rollout (it hung a full test run)
    try:
        y = _MODEL(x)
    except Exception as e:  # noqa: BLE001
        _ok_error(e, "frames")
    else:
        assert y.shape == tuple(np.asarray(x).shape) and torch.isfinite(y).all()
    try:
        r = _MODEL.rollout(x, n_steps, window=window)
    except Exception as e:  # noqa: BLE001
        _ok_error(e, "context", "n_steps", "window", "max_time_len")
    else:
        assert r.shape[1] == int(n_steps) and torch.isfinite(r).all()


@SETTINGS
@given(a=st.one_of(arrays(), shaped([(2, 4, 4, 1)])), b=st.one_of(arrays(), shaped([(2, 4, 4, 1)])))
def test_rel_l2(a, b):
    try:
        e = rel_l2(a, b)
    except Exception as e:  # noqa: BLE001
        _ok_error(e, "pred", "true")
        return
    assert torch.isfinite(e).all() and (e >= 0).all()


@SETTINGS
@given(n=st.one_of(st.integers(-1, 2), st.floats(0, 3)), grid=st.sampled_from([2, 8, 8.0, 8.5]),
       nu=st.one_of(st.floats(-10, 10), st.sampled_from([float("nan"), float("inf"), 0.0, 1e-2, 1e300])),
       amp=st.sampled_from([(0.8, 1.5), (1.5, 0.8), (0.0, 1.0), [1.0], (float("nan"), 1.0)]))
def test_burgers_arguments(n, grid, nu, amp):
    try:
        d = burgers2d(n, grid=grid, n_frames=2, nu=nu, dt_frame=0.01, t_burn=0.0, amp=amp)
    except Exception as e:  # noqa: BLE001
        _ok_error(e, "n_traj", "grid", "nu", "amp")
        return
    assert d.shape == (int(n), 2, int(grid), int(grid), 1) and np.isfinite(d).all()


@SETTINGS
@given(data=arrays(), length=st.integers(-1, 6), stride=st.one_of(st.none(), st.integers(-1, 3)))
def test_trajectory_windows(data, length, stride):
    try:
        w = trajectory_windows(data, length, stride=stride)
    except Exception as e:  # noqa: BLE001
        _ok_error(e, "data", "length", "stride", "starts")
        return
    assert w.shape[1] == length


def test_set_params_style_mutation_is_rechecked():
    m = MeshTok(1, 16, 4, 0.25, dim=8, depth=1, heads=2, ffn=8, dec_width=2)
    with pytest.raises(ValueError, match="frames"):
        m(torch.randn(1, 2, 16, 16, 2))  # wrong channel count
    with pytest.raises(ValueError, match="finite"):
        m(torch.full((1, 2, 16, 16, 1), math.nan))
    with pytest.raises(TypeError, match="n_steps"):
        m.rollout(torch.randn(1, 2, 16, 16, 1), "3")
    with pytest.raises(ValueError, match="n_steps"):
        m.rollout(torch.randn(1, 2, 16, 16, 1), 2.5)
    with pytest.raises(ValueError, match="max_time_len"):
        m.rollout(torch.randn(1, 2, 16, 16, 1), 30)
    with pytest.raises(ValueError, match="refined_idx"):
        m.tokenizer.encode(torch.randn(1, 1, 16, 16), [[0, 0, 1, 2]])  # duplicate patch
