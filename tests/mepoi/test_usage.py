"""Spec section 8: popular_times, Gaussian transfer, mixture prior, km vs bbox metric, h3 and text transfer."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import savgol_filter

from icml26.mepoi import (build_priors, mixture_prior, multiscale_priors, popular_times, select_anchors,
                          transfer_gaussian, transfer_h3, transfer_text_similarity)

MON8, MON20 = 8.0, 20.0


def _released_reference(arr_h, dep_h, bins=100):
    """The released event-interpolation algorithm written out step by step (independent of the implementation)."""
    events = sorted([((a % 168) / 24, 1) for a in arr_h] + [((d % 168) / 24, -1) for d in dep_h],
                    key=lambda e: e[0])  # Python's sort is stable
    pos = np.array([e[0] for e in events])
    val = np.cumsum([e[1] for e in events]).astype(float)
    val -= val.min()
    curve = np.interp(np.linspace(0, 7, bins), pos, val, period=7)
    curve = savgol_filter(curve, 10, 3, mode="wrap")
    curve = curve / curve.sum()
    curve = np.clip(curve, 0, None)
    return curve / curve.sum()


def test_popular_times_released_matches_reference_algorithm():
    rng = np.random.default_rng(0)
    a = rng.uniform(0, 168 * 3, 40)
    d = a + rng.uniform(0.1, 5, 40)
    np.testing.assert_allclose(popular_times(a, d), _released_reference(a, d), atol=1e-9, rtol=0)


@pytest.mark.parametrize("method", ["released", "exact"])
def test_popular_times_is_a_distribution_and_week_shift_invariant(method):
    rng = np.random.default_rng(1)
    a = rng.uniform(0, 168, 25)
    d = a + rng.uniform(0.2, 4, 25)
    c = popular_times(a, d, method=method)
    assert c.shape == (100,) and np.all(c >= 0) and abs(c.sum() - 1) < 1e-12
    np.testing.assert_allclose(popular_times(a + 168 * 3, d + 168 * 3, method=method), c, atol=1e-12)
    assert not np.allclose(popular_times(a + 24, d + 24, method=method), c)  # a one-day shift does move it


def test_popular_times_exact_long_monday_visit():
    c = popular_times([MON8], [MON20], method="exact")
    monday = np.linspace(0, 7, 100) < 1.0
    assert c[monday].sum() > 0.8


def test_released_and_exact_differ_for_short_visits():
    a = np.array([9.0, 33.0, 57.0, 81.0])  # four 30-minute visits, Mon-Thu 09:00
    c_rel = popular_times(a, a + 0.5)
    c_ex = popular_times(a, a + 0.5, method="exact")
    assert np.abs(c_rel - c_ex).sum() > 1.0  # spec: L1 about 1.5 on such a toy example


def test_popular_times_rejects_bad_input():
    with pytest.raises(ValueError, match="departure"):
        popular_times([5.0], [4.0])
    with pytest.raises(ValueError, match="same length"):
        popular_times([1.0, 2.0], [3.0])
    with pytest.raises(ValueError, match="arrival"):
        popular_times([np.nan], [1.0])
    with pytest.raises(ValueError, match="method"):
        popular_times([1.0], [2.0], method="step")


def test_transfer_gaussian_weights_normalised_copy_and_mean():
    rng = np.random.default_rng(2)
    axy = rng.uniform(0, 5, (6, 2))
    ap = rng.dirichlet(np.ones(100), 6)
    sxy = rng.uniform(0, 5, (9, 2))
    # weights sum to 1: transferring a constant curve returns it
    ones = np.full((6, 3), 0.25)
    np.testing.assert_allclose(transfer_gaussian(sxy, axy, ones, 1.0), 0.25, atol=1e-12)
    # a sparse POI on top of anchor 3 with a tiny sigma copies anchor 3
    np.testing.assert_allclose(transfer_gaussian(axy[3:4], axy, ap, 1e-4)[0], ap[3], atol=1e-12)
    # sigma -> infinity: the mean of the anchors
    np.testing.assert_allclose(transfer_gaussian(sxy, axy, ap, 1e6), np.tile(ap.mean(0), (9, 1)), atol=1e-9)
    # far away with a tiny sigma: all weights underflow -> zero row (as released)
    assert np.all(transfer_gaussian(np.array([[1e3, 1e3]]), axy, ap, 1e-3) == 0)
    with pytest.raises(ValueError, match="anchor"):
        transfer_gaussian(sxy, np.zeros((0, 2)), np.zeros((0, 100)), 1.0)


def test_mixture_prior_alpha_zero_is_the_average():
    rng = np.random.default_rng(3)
    pri = rng.dirichlet(np.ones(100), (5, 3))
    out = mixture_prior(pri, np.zeros((5, 3)))
    np.testing.assert_allclose(out, pri.mean(1), atol=1e-9)
    np.testing.assert_allclose(out.sum(1), 1, atol=1e-9)
    skew = mixture_prior(pri, np.array([[50.0, 0, 0]] * 5))
    np.testing.assert_allclose(skew, pri[:, 0], atol=1e-9)
    with pytest.raises(ValueError, match="alpha"):
        mixture_prior(pri, np.zeros((5, 2)))


def test_km_and_bbox_metrics_agree_on_a_square_box():
    rng = np.random.default_rng(4)
    lat0, lon0 = 60.0, 24.0
    half = 0.03
    dlon = half / np.cos(np.radians(lat0))  # a square box in km
    bbox = (lat0 - half, lon0 - dlon, lat0 + half, lon0 + dlon)
    pts = np.stack([rng.uniform(bbox[0], bbox[2], 60), rng.uniform(bbox[1], bbox[3], 60)], 1)
    ap = rng.dirichlet(np.ones(100), 20)
    sig = np.array([0.3, 1.0, 3.0])
    km = multiscale_priors(pts[20:], pts[:20], ap, sig, metric="km", bbox=bbox)
    # the released metric divides sigma by the bbox diagonal but normalises each axis by its side, so on a square
    # box its kernel is sigma / sqrt(2) in km: with sigma * sqrt(2) the two metrics agree
    bb = multiscale_priors(pts[20:], pts[:20], ap, sig * np.sqrt(2), metric="bbox", bbox=bbox)
    assert km.shape == (40, 3, 100)
    assert np.abs(km - bb).sum(-1).max() < 0.02
    bb_raw = multiscale_priors(pts[20:], pts[:20], ap, sig, metric="bbox", bbox=bbox)
    assert np.abs(km - bb_raw).sum(-1).max() > 0.05


def test_select_anchors_and_build_priors():
    assert select_anchors([0, 3, 5, 10], 5).tolist() == [False, False, True, True]
    rng = np.random.default_rng(5)
    idx = np.r_[np.zeros(40, int), np.ones(40, int), np.full(3, 2)]
    a = rng.uniform(0, 168, len(idx))
    latlon = np.array([[60.17, 24.94], [60.18, 24.95], [60.175, 24.945], [60.16, 24.93]])
    pr = build_priors(a, a + 1, idx, latlon, min_visits=30)
    assert pr.is_anchor.tolist() == [True, True, False, False]
    assert pr.visit_counts.tolist() == [40, 40, 3, 0]
    np.testing.assert_allclose(pr.curves[:2].sum(1), 1)
    assert np.all(pr.curves[2:] == 0) and np.all(pr.transfer[:2] == 0)
    np.testing.assert_allclose(pr.transfer[2:].sum(-1), 1, atol=1e-9)  # every scale reaches some anchor here
    with pytest.raises(ValueError, match="poi_index"):
        build_priors(a, a + 1, idx + 5, latlon, min_visits=30)


def test_transfer_h3_cell_means():
    pytest.importorskip("h3")
    ll = np.array([[60.17, 24.94], [60.1701, 24.9401], [61.5, 23.7]])
    ap = np.eye(3)[:, :3].repeat(10, 1)[:, :30]
    out = transfer_h3(np.array([[60.17005, 24.94005], [10.0, 10.0]]), ll, ap, resolutions=(9, 7))
    np.testing.assert_allclose(out[0, 0], ap[:2].mean(0))  # the two nearby anchors share the cell
    assert np.all(out[1] == 0)  # nothing near: zero prior


def test_transfer_text_similarity_picks_similar_anchors():
    at = np.eye(4)
    ap = np.eye(4).repeat(5, 1)
    out = transfer_text_similarity(np.array([[1.0, 0.05, 0, 0]]), at, ap, top_k=1)
    np.testing.assert_allclose(out[0], ap[0])
