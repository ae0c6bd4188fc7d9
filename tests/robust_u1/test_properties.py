"""Property tests (hypothesis): the public entry points, driven with generated bad and edge-case input, either
return a valid answer or raise ValueError/TypeError naming the argument; never NaN from finite input and never
a silently truncated size."""

import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from icml26.robust_u1 import (
    KINDS,
    GRPOConfig,
    RandomCorruption,
    SSIMReward,
    TinyVQA,
    answers_for,
    corrupt,
    grpo_advantages,
    psnr,
    ssim,
    stratified_split,
)
from icml26.robust_u1.experiment import CONFIGS, validate_config

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
floats = st.one_of(st.floats(-0.5, 1.5, width=32), st.just(float("nan")), st.just(float("inf")), st.just(0.0),
                   st.just(1.0))
shapes = st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 14), st.integers(0, 14))
sizes = st.one_of(st.integers(-2, 8), st.floats(-2, 8), st.just(float("nan")), st.none(), st.text(max_size=2),
                  st.booleans())


def _named(err, *names):
    return any(n in str(err) for n in names)


@FAST
@given(x=hnp.arrays(np.float32, shapes, elements=floats), kind=st.sampled_from(list(KINDS) + ["snow", 3]),
       sev=sizes, as_list=st.booleans())
def test_corrupt(x, kind, sev, as_list):
    inp = x.tolist() if as_list else torch.from_numpy(x)
    try:
        out = corrupt(inp, kind, sev, torch.Generator().manual_seed(0))
    except (ValueError, TypeError) as e:
        assert _named(e, "x", "kind", "severity"), e
        return
    assert out.shape == x.shape and torch.isfinite(out).all()
    assert float(out.min()) >= 0 and float(out.max()) <= 1
    assert isinstance(sev, (int, float)) and float(sev) == int(sev)  # 2.5 was refused, never truncated


@FAST
@given(x=hnp.arrays(np.float64, shapes, elements=floats), noise=st.floats(0, 0.5), win=sizes)
def test_ssim_and_psnr(x, noise, win):
    y = np.clip(np.nan_to_num(x) + noise, 0, 1)
    try:
        s = ssim(x, y, win_size=win if win is not None else 11)
    except (ValueError, TypeError) as e:
        assert _named(e, "x", "y", "win_size"), e
    else:
        assert s.shape == (x.shape[0],) and torch.isfinite(s).all() and bool((s <= 1 + 1e-9).all())
    try:
        p = psnr(x, y)
    except (ValueError, TypeError) as e:
        assert _named(e, "x", "y"), e
    else:
        assert not torch.isnan(p).any()


@FAST
@given(a=hnp.arrays(np.float32, shapes, elements=floats), b_n=st.integers(0, 4))
def test_ssim_reward(a, b_n):
    ref = torch.rand(b_n, a.shape[1] if a.ndim == 4 else 1, 12, 12)
    try:
        r, parts = SSIMReward()(a, ref)
    except (ValueError, TypeError) as e:
        assert _named(e, "images", "ref_images", "x", "y"), e
        return
    assert r.shape == (a.shape[0],) and torch.isfinite(r).all()


@FAST
@given(r=hnp.arrays(np.float64, st.tuples(st.integers(0, 4), st.integers(0, 6)), elements=floats),
       scope=st.sampled_from(["group", "batch", "prompt"]))
def test_advantages(r, scope):
    try:
        a = grpo_advantages(r, scope)
    except (ValueError, TypeError) as e:
        assert _named(e, "rewards", "std_scope"), e
        return
    assert a.shape == r.shape and torch.isfinite(a).all() and bool((a.abs() <= 5).all())


@FAST
@given(kinds=st.one_of(st.none(), st.lists(st.sampled_from(list(KINDS) + ["snow"]), max_size=3), st.text(max_size=3)),
       sev=st.lists(sizes, max_size=3), p=floats, n=st.integers(0, 5))
def test_random_corruption(kinds, sev, p, n):
    try:
        rc = RandomCorruption(kinds, tuple(sev), p)
        xc, k, s = rc(torch.rand(n, 1, 12, 12), generator=torch.Generator().manual_seed(0))
    except (ValueError, TypeError) as e:
        assert _named(e, "kinds", "severities", "p_clean", "x"), e
        return
    assert xc.shape == (n, 1, 12, 12) and k.shape == s.shape == (n,)
    assert bool((s[k < len(rc._validate()[0])] >= 1).all())


VQA = TinyVQA()


@FAST
@given(n=st.integers(0, 4), q=st.lists(st.one_of(st.integers(-2, 13), st.floats(-1, 12)), max_size=5),
       two=st.booleans(), size=st.sampled_from([24, 12]))
def test_vqa_forward(n, q, two, size):
    x = torch.rand(n, 1, size, size)
    try:
        out = VQA([x, x] if two else [x], q)
    except (ValueError, TypeError) as e:
        assert _named(e, "images", "question_ids"), e
        return
    assert out.shape == (n, 12) and torch.isfinite(out).all() and len(q) == n


@FAST
@given(labels=st.lists(st.one_of(st.integers(-1, 11), st.floats(0, 9)), max_size=6),
       q=st.lists(st.integers(-1, 12), max_size=6))
def test_answers(labels, q):
    try:
        a = answers_for(labels, q)
    except (ValueError, TypeError) as e:
        assert _named(e, "labels", "question_ids"), e
        return
    assert len(a) == len(labels) and bool(((a >= 0) & (a < 12)).all())


@FAST
@given(frac=st.lists(st.one_of(st.floats(-0.5, 1.5), st.just(float("nan"))), min_size=1, max_size=4),
       seed=st.one_of(st.integers(-1, 3), st.none(), st.floats(0, 2)))
def test_split(frac, seed):
    y = np.repeat(np.arange(3), 10)
    try:
        parts = stratified_split(y, frac, seed)
    except (ValueError, TypeError) as e:
        assert _named(e, "fractions", "seed"), e
        return
    assert sum(len(p) for p in parts) == 30 and len(np.unique(np.concatenate(parts))) == 30


@FAST
@given(key=st.sampled_from(sorted(CONFIGS["small"])), value=st.one_of(sizes, floats, st.lists(st.integers(-1, 6),
                                                                                               max_size=3)))
def test_validate_config(key, value):
    cfg = {**CONFIGS["small"], key: value}
    try:
        validate_config(cfg)
    except (ValueError, TypeError) as e:
        assert key in str(e) or "split" in str(e), (key, value, e)


@FAST
@given(field=st.sampled_from(["group_size", "std", "lr", "kl_beta", "clip_range", "steps", "std_scope"]),
       value=st.one_of(sizes, floats))
def test_grpo_config(field, value):
    try:
        GRPOConfig(**{field: value})
    except (ValueError, TypeError) as e:
        assert field in str(e), e
