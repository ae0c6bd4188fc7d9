"""Regression tests of the bad-input fixes and the low-acceptance warning (issue 14): each failed before its fix."""

import warnings

import numpy as np
import pytest

from icml26.lsd import BAOAB, EmbeddedLJ, Harmonic, LangevinSpeculativeDynamics, LennardJones, serial_langevin
from icml26.lsd.data import icosahedron
from icml26.lsd.speculative import WARN_BELOW_ACCEPTANCE, LowAcceptanceWarning

INTEG = BAOAB(timestep=0.005, friction=1.0, kT=0.25)


def _x0():
    return icosahedron(1.1, 0.01, np.random.default_rng(0))


def test_x0_and_v0_errors_name_the_argument():
    sim = LangevinSpeculativeDynamics(Harmonic(), Harmonic(), INTEG)
    with pytest.raises(TypeError, match="x0"):
        sim.run("abc", n_steps=2)
    with pytest.raises(ValueError, match="x0"):
        sim.run(np.zeros(3), n_steps=2)
    with pytest.raises(ValueError, match="v0"):
        sim.run(np.zeros((2, 3)), v0=np.zeros((3, 3)), n_steps=2)
    with pytest.raises(ValueError, match="n_steps.*not truncated"):
        sim.run(np.zeros((2, 3)), n_steps=2.5)
    with pytest.raises(TypeError, match="x0"):
        serial_langevin(Harmonic(), INTEG, "abc", n_steps=2)
    with pytest.raises(TypeError, match="kT"):
        BAOAB(kT="0.25")
    with pytest.raises(ValueError, match="positions"):
        Harmonic().forces(np.array([[np.nan, 0.0, 0.0]]))


def test_settings_changed_after_init_are_checked_again():
    sim = LangevinSpeculativeDynamics(Harmonic(), Harmonic(), INTEG, lookahead=4)
    sim.lookahead = 0
    with pytest.raises(ValueError, match="lookahead"):
        sim.run(np.zeros((2, 3)), n_steps=2)
    integ = BAOAB(timestep=0.01)
    integ.friction = 0.0
    with pytest.raises(ValueError, match="friction"):
        serial_langevin(Harmonic(), integ, np.zeros((2, 3)), n_steps=2)


def test_poor_draft_warns_with_the_measured_acceptance():
    sim = LangevinSpeculativeDynamics(EmbeddedLJ(A=0.2, wall_radius=2.5), Harmonic(5.0), INTEG, lookahead=8, seed=0)
    with pytest.warns(LowAcceptanceWarning, match=r"acceptance 0\.0\d\d over 300 verified steps is below 0\.3"):
        tr = sim.run(_x0(), n_steps=300)
    assert tr.stats.acceptance_rate < WARN_BELOW_ACCEPTANCE
    quiet = LangevinSpeculativeDynamics(EmbeddedLJ(A=0.2, wall_radius=2.5), Harmonic(5.0), INTEG, lookahead=8,
                                        seed=0, warn_below_acceptance=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LowAcceptanceWarning)
        quiet.run(_x0(), n_steps=300)


def test_good_draft_does_not_warn_and_reuse_is_deterministic():
    sim = LangevinSpeculativeDynamics(EmbeddedLJ(A=0.05, wall_radius=2.5), LennardJones(wall_radius=2.5), INTEG,
                                      lookahead=8, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LowAcceptanceWarning)
        a = sim.run(_x0(), n_steps=200)
    b = sim.run(_x0(), n_steps=200)  # same object again: no state kept between runs
    assert a.stats.acceptance_rate > 0.8
    np.testing.assert_array_equal(a.positions, b.positions)
