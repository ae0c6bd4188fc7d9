"""Property tests (hypothesis): the public entry points, driven with generated bad and edge-case input, either
return a valid answer or raise ValueError/TypeError naming the argument; never NaN out of finite input, never a
silent truncation."""

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from icml26.visioned import (
    EDRecord,
    VisionEDViT,
    canonical_frame,
    ed_point_cloud,
    farthest_point_sampling,
    random_split,
    render_multishot,
)
from icml26.visioned.experiment import CONFIGS, v1_claim, validate_config

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])

floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64), st.integers(-5, 5))
sizes = st.one_of(st.integers(-3, 40), st.floats(-3, 40), st.just(float("nan")), st.none(), st.text(max_size=2),
                  st.booleans())


def _named(err: Exception, *names: str) -> bool:
    return any(n in str(err) for n in names)


def _record(rho_scale: float = 1.0, shape=(17, 17, 17), spacing=0.4) -> EDRecord:
    ax = (np.arange(shape[0]) - shape[0] // 2) * spacing
    r = np.sqrt(sum(g ** 2 for g in np.meshgrid(ax, ax, ax, indexing="ij")))
    cube = (rho_scale * np.exp(-2 * r / 0.529)).astype(np.float16)
    return EDRecord(name="H", atoms=np.array([1]), coords=np.zeros((1, 3)), cube=cube, spacing=spacing,
                    origin=np.full(3, ax[0]), mulliken=np.zeros(1))


REC = _record()


@FAST
@given(coords=hnp.arrays(np.float64, st.tuples(st.integers(0, 6), st.integers(1, 4)), elements=floats),
       z=st.lists(st.one_of(st.integers(-1, 20), st.sampled_from(["C", "H", "Xx", ""])), max_size=6))
def test_canonical_frame(coords, z):
    try:
        axes, centre = canonical_frame(z, coords)
    except (ValueError, TypeError) as e:
        assert _named(e, "coords", "atoms", "tol"), e
        return
    assert np.allclose(axes @ axes.T, np.eye(3), atol=1e-8) and np.all(np.isfinite(centre))
    x = (np.asarray(coords) - centre) @ axes.T
    assert np.all(np.isfinite(x))


@FAST
@given(pts=hnp.arrays(np.float64, st.tuples(st.integers(0, 30), st.integers(1, 5)), elements=floats), n=sizes,
       seed=st.one_of(st.integers(-2, 5), st.none(), st.floats(0, 3)))
def test_farthest_point_sampling(pts, n, seed):
    try:
        idx = farthest_point_sampling(pts, n, seed=seed)
    except (ValueError, TypeError) as e:
        assert _named(e, "points", "n_points", "seed"), e
        return
    assert len(idx) == n  # no truncation of a size such as 3.5 (refused above)
    assert len(np.unique(idx)) == n or len(np.unique(pts[:, :3], axis=0)) < n  # repeats only once all are taken
    assert idx.min() >= 0 and idx.max() < len(pts)


@FAST
@given(n_views=sizes, size=sizes, iso=st.lists(floats, min_size=0, max_size=3), fov=floats,
       esp=st.sampled_from(["charges", "exact", "bogus", None]))
def test_render_multishot(n_views, size, iso, fov, esp):
    try:
        img = render_multishot(REC, n_views=n_views, size=size, isovalues=iso, fov=fov, esp=esp)
    except (ValueError, TypeError) as e:
        assert _named(e, "n_views", "size", "isovalues", "fov", "esp", "rec."), e
        return
    assert img.dtype == np.uint8 and img.shape == (int(n_views) * len(iso), 4, int(size), int(size))


@FAST
@given(threshold=floats, n_points=sizes, method=st.sampled_from(["fps", "random", "kmeans"]),
       seed=st.one_of(st.integers(-1, 3), st.none()))
def test_ed_point_cloud(threshold, n_points, method, seed):
    try:
        pc = ed_point_cloud(REC, threshold=threshold, n_points=n_points, method=method, seed=seed)
    except (ValueError, TypeError) as e:
        assert _named(e, "threshold", "n_points", "method", "seed"), e
        return
    assert pc.shape == (int(n_points), 4) and np.all(np.isfinite(pc)) and np.all(pc[:, 3] >= threshold * 0.999)


@FAST
@given(x=hnp.arrays(st.sampled_from([np.uint8, np.int64, np.float32, np.float64, np.bool_]),
                    st.tuples(st.integers(0, 2), st.integers(0, 7), st.sampled_from([3, 4]), st.just(8),
                              st.sampled_from([8, 9]))))
def test_vit_images(x):
    m = VisionEDViT(img_size=8, patch=4, in_chans=4, n_shots=6, dim=8, depth=1, heads=2)
    m.eval()
    try:
        out = m(x)
    except (ValueError, TypeError) as e:
        assert _named(e, "images"), e
        return
    assert out.shape == (len(x), 8) and bool(torch.isfinite(out).all())


@FAST
@given(a=st.lists(hnp.arrays(np.float64, st.integers(0, 5), elements=floats), min_size=0, max_size=3))
def test_v1_claim(a):
    b = [np.abs(x[::-1]) + 0.1 if np.all(np.isfinite(x)) else x for x in a]
    try:
        c = v1_claim(a, b)
    except (ValueError, TypeError) as e:
        assert _named(e, "err_a"), e
        return
    assert c.verdict in ("held", "not held", "inconclusive") and c.measured["ci_lo"] <= c.measured["ci_hi"]


@FAST
@given(n=sizes, fr=st.lists(floats, min_size=0, max_size=4), seed=st.one_of(st.integers(-1, 3), st.none()))
def test_random_split(n, fr, seed):
    try:
        tr, va, te = random_split(n, fr, seed=seed)
    except (ValueError, TypeError) as e:
        assert _named(e, "n", "fractions", "seed"), e
        return
    assert len(tr) + len(va) + len(te) == n and len(set(tr) | set(va) | set(te)) == n


@SLOW
@given(key=st.sampled_from(sorted(CONFIGS["small"])), value=st.one_of(floats, sizes, st.lists(floats, max_size=2),
                                                                        st.text(max_size=3)))
def test_validate_config(key, value):
    cfg = dict(CONFIGS["small"]) | {key: value}
    try:
        validate_config(cfg)
    except (ValueError, TypeError) as e:
        assert key in str(e) or (key in ("img_size", "patch", "dim", "heads") and _named(e, "img_size", "dim")), e


@pytest.mark.parametrize("missing", ["seed", "n_boot"])
def test_validate_config_missing_key(missing):
    cfg = {k: v for k, v in CONFIGS["small"].items() if k != missing}
    with pytest.raises(ValueError, match=missing):
        validate_config(cfg)


@SLOW
@given(y=hnp.arrays(np.float64, st.integers(0, 7), elements=floats), epochs=sizes, batch=sizes,
       n_pts=st.integers(1, 12))
def test_point_cloud_regressor(y, epochs, batch, n_pts):
    from icml26.visioned import PointCloudRegressor

    X = np.abs(np.random.default_rng(0).normal(size=(6, n_pts, 4))).astype(np.float32) + 1e-3
    try:
        est = PointCloudRegressor(arch="pointnet", epochs=epochs, batch_size=batch).fit(X, y)
    except (ValueError, TypeError) as e:
        assert _named(e, "y", "X", "epochs", "batch_size"), e
        return
    p = est.predict(X)
    assert p.shape == (6,) and np.all(np.isfinite(p))


@SLOW
@given(y=hnp.arrays(np.float64, st.integers(0, 5), elements=floats),
       targets=st.one_of(st.just(["gap_eV"]), st.just([]), st.just(["esp_min"]), st.just("gap_eV"),
                         st.just(["a", "b"])), lr=floats)
def test_vit_regressor(y, targets, lr):
    from icml26.visioned import VisionEDRegressor

    X = np.random.default_rng(0).integers(0, 256, (4, 6, 4, 8, 8), dtype=np.uint8)
    cfg = dict(img_size=8, patch=4, in_chans=4, n_shots=6, dim=8, depth=1, heads=2)
    try:
        reg = VisionEDRegressor(backbone_config=cfg, targets=targets, lr_head=lr, epochs=1).fit(X, y)
    except (ValueError, TypeError) as e:
        assert _named(e, "y", "X", "targets", "lr_head", "pretext"), e
        return
    p = reg.predict(X)
    assert p.shape == (4,) and np.all(np.isfinite(p))
