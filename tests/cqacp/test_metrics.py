"""Interval metrics: hand-computed known answers."""

import numpy as np
import pytest

from icml26.cqacp import (
    conditional_coverage_by_bin,
    coverage,
    crossing_rate,
    interval_score,
    mean_width,
    nestedness_rate,
    width_roughness,
    width_tv,
)


def _pis(lo, hi):
    return np.stack([np.asarray(lo, float), np.asarray(hi, float)], axis=1)


def test_coverage_width_tv_roughness():
    y = np.array([0.0, 1.0, 2.0, 3.0])
    p = _pis([-1, 0, 2.5, 2], [1, 2, 3.5, 4])           # widths 2, 2, 1, 2; third misses
    assert coverage(y, p) == 0.75
    assert mean_width(p) == pytest.approx(1.75)
    assert width_tv(p) == pytest.approx((0 + 1 + 1) / 3 / 1.75)
    assert width_roughness(p) == pytest.approx((1 + 2) / 2 / 1.75)


def test_interval_score():
    y = np.array([0.0, 5.0])
    p = _pis([-1, 0], [1, 2])                            # second: 3 above upper
    assert interval_score(y, p, 0.9) == pytest.approx(((2) + (2 + 2 / 0.1 * 3)) / 2)


def test_nestedness_rate_and_level_order():
    lv = [0.9, 0.8]
    pis = np.zeros((2, 2, 2))
    pis[0, :, 0], pis[0, :, 1] = [-2, 2], [-1, 1]        # nested
    pis[1, :, 0], pis[1, :, 1] = [-2, 2], [-3, 1]        # 80% sticks out below
    assert nestedness_rate(pis, lv) == 0.5
    with pytest.raises(ValueError, match="confidence_levels"):
        nestedness_rate(pis, [0.9])


def test_crossing_rate():
    Q = np.array([[0, 1, 2], [0, 2, 1], [1, 1, 1]], dtype=float)
    assert crossing_rate(Q) == pytest.approx(1 / 3)


def test_conditional_coverage_by_bin():
    y = np.zeros(6)
    p = _pis([-1, -1, 1, 1, -1, 1], [1, 1, 2, 2, 1, 2])  # covered where vol low or high
    vol = np.array([1, 2, 3, 4, 5, 6], dtype=float)
    np.testing.assert_allclose(conditional_coverage_by_bin(y, p, vol, n_bins=3), [1.0, 0.0, 0.5])


def test_shape_errors():
    with pytest.raises(ValueError, match="y_pis"):
        coverage(np.zeros(3), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="y must have"):
        coverage(np.zeros(2), np.zeros((3, 2)))
