"""Property tests (hypothesis): the public entry points either give a valid answer or raise a ValueError/TypeError
naming the offending argument, for generated bad and edge-case inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("ot")

from icml26.sparse_transfer import (
    AnchoredSparseTransfer,
    JacobianSparsityPenalty,
    OTMap,
    PairedRegression,
    jacobian_l1_fd,
    mlp,
    mmd2,
    translation_error,
)

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
odd = st.sampled_from([float("nan"), float("inf"), -1.0, 0.0, "x", None, True, 2.5])
num = lambda lo, hi: st.one_of(st.floats(lo, hi), odd)
size = lambda lo, hi: st.one_of(st.integers(lo, hi), st.floats(lo, hi), odd)
RNG = np.random.default_rng(0)
XS, YS = RNG.standard_normal((40, 2)), RNG.standard_normal((40, 2))
NET = mlp(2, 2, (4,))


def _names(err: Exception, names) -> bool:
    return any(n in str(err) for n in names)


@st.composite
def arrays(draw, d=None):
    n = draw(st.integers(0, 6))
    d = d if d is not None else draw(st.integers(0, 3))
    x = np.asarray(draw(st.lists(st.floats(-3, 3), min_size=n * d, max_size=n * d)), dtype=float).reshape(n, d)
    if x.size and draw(st.booleans()):
        x.flat[draw(st.integers(0, x.size - 1))] = draw(st.sampled_from([np.nan, np.inf]))
    kind = draw(st.sampled_from(["array", "list", "tensor", "1d"]))
    if kind == "list":
        return x.tolist()
    if kind == "tensor":
        return torch.as_tensor(x, dtype=torch.float32)
    return x.ravel() if kind == "1d" else x


@SETTINGS
@given(n_probes=size(0, 4), probe_frac=num(0.0, 1.0), sigma=num(0.0, 1.0), mode=st.sampled_from(["fd", "exact", "x"]),
       x=arrays(d=2))
def test_penalty(n_probes, probe_frac, sigma, mode, x):
    params = dict(n_probes=n_probes, probe_frac=probe_frac, sigma=sigma, mode=mode)
    try:
        pen = JacobianSparsityPenalty(**params)
        v = pen(NET, x)
    except (ValueError, TypeError) as e:
        assert _names(e, list(params) + ["x"]), f"{type(e).__name__} names no argument: {e}"
        return
    assert v.dim() == 0 and torch.isfinite(v) and v >= 0


@SETTINGS
@given(a=arrays(), b=arrays(), unbiased=st.sampled_from([False, True, 1]))
def test_mmd(a, b, unbiased):
    try:
        v = mmd2(a, b, unbiased=unbiased)
    except (ValueError, TypeError) as e:
        assert _names(e, ["a", "b", "unbiased"]), str(e)
        return
    assert torch.isfinite(v) and (unbiased or v >= -1e-6)


@SETTINGS
@given(steps=size(0, 3), batch_size=size(0, 8), lr=num(1e-4, 1e-2), lambda_jac=num(0.0, 0.1),
       jac_ramp=num(0.0, 1.0), anchor_mode=st.sampled_from(["joint", "resolve", "both"]),
       jac_on=st.sampled_from(["forward", "inverse", "both"]), lambda_cyc=st.sampled_from([0.0, 1.0, -1.0]),
       hidden=st.sampled_from([(4,), [4.0], (4.5,), (), (0,), "4"]), seed=size(0, 3),
       via_set_params=st.booleans())
def test_estimator_parameters(steps, batch_size, lr, lambda_jac, jac_ramp, anchor_mode, jac_on, lambda_cyc, hidden,
                              seed, via_set_params):
    params = dict(steps=steps, batch_size=batch_size, lr=lr, lambda_jac=lambda_jac, jac_ramp=jac_ramp,
                  anchor_mode=anchor_mode, jac_on=jac_on, lambda_cyc=lambda_cyc, hidden=hidden, seed=seed)
    try:
        est = AnchoredSparseTransfer().set_params(**params) if via_set_params else AnchoredSparseTransfer(**params)
        est.fit(XS, YS, anchors=(XS[0], YS[0]))
    except (ValueError, TypeError) as e:
        assert _names(e, list(params)), f"{type(e).__name__} names no argument: {e}"
        return
    out = est.transform(XS)
    assert out.shape == (40, 2) and np.isfinite(out).all()


FITTED = AnchoredSparseTransfer(steps=2, batch_size=8, hidden=(4,), lambda_cyc=1.0).fit(XS, YS)


@SETTINGS
@given(X=arrays(), Y=arrays(), anchor=st.sampled_from([None, "ok", "short", "nan", "pairs"]))
def test_estimator_inputs(X, Y, anchor):
    anchors = {"ok": (XS[0], YS[0]), "short": (XS[0], YS[0][:1]), "nan": (XS[0], [np.nan, 0.0]),
               "pairs": (XS[:2], YS[:3]), None: None}[anchor]
    est = AnchoredSparseTransfer(steps=2, batch_size=8, hidden=(4,), lambda_cyc=0.0, anchor_mode="resolve")
    try:
        est.fit(X, Y, anchors=anchors)
    except (ValueError, TypeError) as e:
        assert _names(e, ["X_source", "Y_target", "anchors"]), str(e)
        return
    assert est.transform(X).shape == (len(X), est.n_features_out_)


@SETTINGS
@given(X=arrays())
def test_transform_inputs(X):
    for fn in (FITTED.transform, FITTED.inverse_transform):
        try:
            out = fn(X)
        except (ValueError, TypeError) as e:
            assert _names(e, ["X", "Y"]), str(e)
            continue
        assert out.shape == (len(X), 2) and np.isfinite(out).all()


@SETTINGS
@given(method=st.sampled_from(["emd", "sinkhorn", "x"]), n_neighbors=size(0, 5), max_samples=size(0, 50),
       reg=num(0.01, 1.0), X=arrays(d=2))
def test_ot_map(method, n_neighbors, max_samples, reg, X):
    params = dict(method=method, n_neighbors=n_neighbors, max_samples=max_samples, reg=reg)
    try:
        ot = OTMap(**params).fit(XS, YS)
        out = ot.transform(X)
    except (ValueError, TypeError) as e:
        assert _names(e, list(params) + ["X"]), str(e)
        return
    assert out.shape == (len(X), 2) and np.isfinite(out).all()


@SETTINGS
@given(n_pairs=size(0, 60), degree=size(0, 4), alpha=num(0.0, 1.0), a=arrays(), b=arrays())
def test_regression_and_te(n_pairs, degree, alpha, a, b):
    params = dict(n_pairs=n_pairs, degree=degree, alpha=alpha)
    try:
        out = PairedRegression(**params).fit(XS, YS).transform(XS)
        assert out.shape == (40, 2) and np.isfinite(out).all()
    except (ValueError, TypeError) as e:
        assert _names(e, list(params)), str(e)
    try:
        te = translation_error(a, b)
    except (ValueError, TypeError) as e:
        assert _names(e, ["Y_hat", "Y"]), str(e)
        return
    assert te >= 0


def test_fd_refuses_zero_sized_and_wrong_generator():
    with pytest.raises(ValueError, match="x"):
        jacobian_l1_fd(NET, torch.zeros(0, 2))
    with pytest.raises(TypeError, match="generator"):
        jacobian_l1_fd(NET, torch.zeros(3, 2), generator=0)
