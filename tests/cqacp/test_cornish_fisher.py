"""Known answers and invariants of the Cornish-Fisher curve fitter (spec section 8)."""

import time

import numpy as np
import pytest
from scipy import stats

from icml26.cqacp import TAU_GRID, CornishFisherQuantileCurve
from icml26.cqacp.cornish_fisher import _abc, cf_w_prime, is_cf_monotone


def test_gaussian_known_answer():
    cf = CornishFisherQuantileCurve().fit(TAU_GRID, stats.norm.ppf(TAU_GRID, loc=2, scale=3))
    assert abs(cf.mean_ - 2) < 1e-6 and abs(cf.scale_ - 3) < 1e-6
    assert abs(cf.skew_) < 1e-6 and abs(cf.exkurt_) < 1e-6
    assert cf.residual_ < 1e-9


def test_symmetric_heavy_tails_give_zero_skew_positive_kurtosis():
    cf = CornishFisherQuantileCurve().fit(TAU_GRID, stats.t.ppf(TAU_GRID, 5))
    assert abs(cf.skew_) < 1e-6
    assert cf.exkurt_ > 0.5
    assert abs(cf.mean_) < 1e-9


def test_median_identity_and_skew_sign():
    cf = CornishFisherQuantileCurve().fit(TAU_GRID, stats.lognorm.ppf(TAU_GRID, 0.4))
    assert cf.skew_ > 0  # right-skewed input
    assert cf.quantile(0.5) == pytest.approx(cf.mean_ - cf.scale_ * cf.skew_ / 6, abs=1e-12)


@pytest.mark.parametrize("dist", [stats.lognorm(0.9), stats.t(2.5), stats.expon(), stats.uniform()])
def test_range_monotone_on_declared_range(dist):
    extra = [0.001, 0.999]
    cf = CornishFisherQuantileCurve(monotone="range", extra_taus=extra).fit(TAU_GRID, dist.ppf(TAU_GRID))
    lo, hi = stats.norm.ppf(0.001), stats.norm.ppf(0.999)
    assert cf.params_.z_range == pytest.approx((lo, hi))
    z = np.linspace(lo, hi, 5001)
    assert np.all(cf.scale_ * cf_w_prime(z, cf.skew_, cf.exkurt_) >= -1e-9)
    assert cf.is_monotone()
    q = cf.quantile(np.linspace(1e-6, 1 - 1e-6, 4001))  # tangent continuation: monotone everywhere
    assert np.all(np.diff(q) >= -1e-12)


def test_global_mode_satisfies_domain_inequality():
    cf = CornishFisherQuantileCurve(monotone="global").fit(TAU_GRID, stats.t.ppf(TAU_GRID, 3) + 0.3 * TAU_GRID)
    a, b, c = _abc(cf.skew_, cf.exkurt_)
    assert (cf.skew_ == 0 and cf.exkurt_ == 0) or (a > 0 and b**2 < 4 * a * c)
    assert bool(is_cf_monotone(cf.skew_, cf.exkurt_, "global"))
    assert cf.is_monotone((-8, 8))


def test_crossing_quantiles_are_repaired():
    q = stats.norm.ppf(TAU_GRID)
    q[[3, 4]] = q[[4, 3]]  # swap two levels -> crossing input
    q[[11, 12]] = q[[12, 11]]
    assert np.any(np.diff(q) < 0)
    cf = CornishFisherQuantileCurve().fit(TAU_GRID, q)
    out = cf.quantile(TAU_GRID)
    assert np.all(np.diff(out) > 0)


def test_unconstrained_mode_can_be_non_monotone():
    # a strongly skewed bimodal-looking input: the unconstrained fit picks a non-monotone (S, K)
    q = np.concatenate([np.full(7, -1.0), np.full(8, 1.0)]) + 0.01 * np.arange(15)
    cf_none = CornishFisherQuantileCurve(monotone="none").fit(TAU_GRID, q)
    cf_rng = CornishFisherQuantileCurve(monotone="range").fit(TAU_GRID, q)
    assert cf_none.residual_ <= cf_rng.residual_ + 1e-12
    assert cf_rng.is_monotone()


def test_fit_many_matches_fit_and_is_fast():
    rng = np.random.default_rng(0)
    base = stats.norm.ppf(TAU_GRID)
    Q = base[None, :] * rng.uniform(0.5, 2, (1000, 1)) + rng.normal(0, 0.2, (1000, 15))
    cf = CornishFisherQuantileCurve()
    cf.fit_many(TAU_GRID, Q[:2])  # grid cache warm-up is part of normal use
    t0 = time.perf_counter()
    p = cf.fit_many(TAU_GRID, Q)
    assert time.perf_counter() - t0 < 1.0
    for i in (0, 17, 999):
        one = CornishFisherQuantileCurve().fit(TAU_GRID, Q[i])
        assert one.mean_ == pytest.approx(p.mean[i], abs=1e-10)
        assert one.skew_ == pytest.approx(p.skew[i], abs=1e-10)
    assert np.all(np.diff(p.quantile(TAU_GRID), axis=1) >= 0)


def test_weights_change_the_fit():
    q = stats.t.ppf(TAU_GRID, 3)
    w = np.ones(15)
    w[[0, -1]] = 0  # ignore the extreme levels
    a = CornishFisherQuantileCurve().fit(TAU_GRID, q)
    b = CornishFisherQuantileCurve().fit(TAU_GRID, q, weights=w)
    assert a.exkurt_ != b.exkurt_


def test_bad_inputs():
    cf = CornishFisherQuantileCurve()
    with pytest.raises(ValueError, match="taus"):
        cf.fit([0.0, 0.5, 0.9], [1, 2, 3])
    with pytest.raises(ValueError, match="Q must have shape"):
        cf.fit_many(TAU_GRID, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        cf.fit(TAU_GRID, np.full(15, np.nan))
    with pytest.raises(ValueError, match="weights"):
        cf.fit(TAU_GRID, TAU_GRID, weights=-np.ones(15))
    with pytest.raises(ValueError, match="monotone"):
        CornishFisherQuantileCurve(monotone="sometimes")
    with pytest.raises(RuntimeError, match="not fitted"):
        CornishFisherQuantileCurve().quantile(0.5)


def test_constant_quantiles_give_zero_scale():
    cf = CornishFisherQuantileCurve().fit(TAU_GRID, np.full(15, 1.5))
    assert abs(cf.scale_) < 1e-12 and cf.skew_ == 0 and cf.exkurt_ == 0 and cf.mean_ == pytest.approx(1.5)
    assert np.allclose(cf.quantile([0.01, 0.5, 0.99]), 1.5)
