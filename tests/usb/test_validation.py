"""Issue 14 / 15 fixes for icml26.usb: seeds, NaN, scalar times, extrapolation warning, shared fitted-model
code, config validation, and claim checks that can fail."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

pytest.importorskip("ot")

from icml26.usb import (  # noqa: E402
    UnbalancedSchrodingerBridge,
    bridge_sample,
    check_snapshots,
    experiment,  # noqa: E402
    simulate_population,
    split_birth_death,
)
from icml26.usb.baselines import SF2M, TIGONLike  # noqa: E402


def _toy(seed=0, n=30):
    rng = np.random.default_rng(seed)
    snaps = [rng.normal(0, 0.2, (n + 10 * k, 2)) + [k, 0.3 * k] for k in range(3)]
    return snaps, np.array([0.0, 1.0, 2.0])


@pytest.fixture(scope="module")
def fitted():
    snaps, times = _toy()
    return UnbalancedSchrodingerBridge(n_iter=20, seed=0).fit(snaps, times), snaps, times


@pytest.fixture(scope="module")
def tigon():
    snaps, times = _toy()
    return TIGONLike(n_iter=2, n_particles=16, steps_per_unit=4, seed=0).fit(snaps, times), snaps, times


# ------------------------------------------------------------------------------------------ seeds and params
def test_seed_none_is_refused_naming_seed(fitted):
    snaps, times = _toy()
    for make in (lambda: UnbalancedSchrodingerBridge(seed=None), lambda: TIGONLike(seed=None),
                 lambda: SF2M(seed=-1)):
        with pytest.raises((TypeError, ValueError), match="seed"):
            make()
    m = UnbalancedSchrodingerBridge(n_iter=2)
    m.seed = None                                   # attribute changed after construction: checked by fit
    with pytest.raises(TypeError, match="seed"):
        m.fit(snaps, times)
    model, snaps, times = fitted
    with pytest.raises(TypeError, match="seed"):
        model.simulate(snaps[0], times, seed=None)


@pytest.mark.parametrize("kw, exc", [
    ({"hidden": (64.5, 32)}, ValueError), ({"sigma": "big"}, TypeError), ({"device": "gpu"}, ValueError),
    ({"growth_weight": float("nan")}, ValueError), ({"lr": "fast"}, TypeError), ({"n_iter": 2.5}, ValueError),
    ({"reference_rates": ("a", 0.0)}, TypeError), ({"activation": "swish"}, ValueError),
])
def test_hyper_parameters_name_themselves(kw, exc):
    key = next(iter(kw))
    with pytest.raises(exc, match=key):
        UnbalancedSchrodingerBridge(**kw)


def test_integral_floats_are_sizes():
    m = UnbalancedSchrodingerBridge(n_iter=20.0, batch_size=64.0, hidden=[8.0, 8.0])
    assert m.n_iter == 20 and isinstance(m.n_iter, int) and m.hidden == (8, 8)


# ------------------------------------------------------------------------------------------ fields and simulation
def test_nan_into_the_fields_is_refused(fitted, tigon):
    for model, snaps, _ in (fitted, tigon):
        x = snaps[1].copy()
        x[0, 1] = np.nan
        for fn in (model.growth, model.velocity, model.drift, model.birth_death_rates):
            with pytest.raises(ValueError, match="x must be finite"):
                fn(x, 1.0)
        with pytest.raises(ValueError, match="t must be finite"):
            model.growth(snaps[1], float("nan"))
        assert np.isfinite(model.growth(snaps[1].tolist(), 1.0)).all()   # a list reads like the array


def test_scalar_or_single_time_is_refused(fitted):
    model, snaps, _ = fitted
    with pytest.raises(ValueError, match="t_eval must be a sequence"):
        model.simulate(snaps[0], 6.0)
    with pytest.raises(ValueError, match="returns? x0 unchanged|would return x0"):
        model.simulate(snaps[0], [1.5])
    sim = model.simulate(snaps[0], [1.5], t0=0.0, seed=1)            # explicit start: fine
    assert len(sim.positions) == 1 and not np.array_equal(sim.positions[0], snaps[0])
    with pytest.raises(ValueError, match="t_eval must be a sequence"):
        simulate_population(snaps[0], 2.0, lambda x, t: torch.zeros_like(x), mode="ode")


def test_extrapolation_in_time_warns(fitted, tigon):
    for model, snaps, times in (fitted, tigon):
        with pytest.warns(UserWarning, match="leaves the training time span"):
            model.simulate(snaps[0], [0.0, 3.0])
        with pytest.warns(UserWarning, match="leaves the training time span"):
            model.simulate(snaps[0], [0.5], t0=-1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            model.simulate(snaps[0], times)


def test_simulator_refuses_nan_from_callables():
    with pytest.raises(ValueError, match="drift"):
        simulate_population(np.zeros((5, 2)), [0.0, 1.0], lambda x, t: torch.full_like(x, float("nan")),
                            mode="weighted")
    with pytest.raises(ValueError, match="rates"):
        simulate_population(np.zeros((5, 2)), [0.0, 1.0], lambda x, t: torch.zeros_like(x),
                            rates=lambda x, t: (torch.full((len(x),), float("nan")), torch.zeros(len(x))))
    with pytest.raises(ValueError, match="dt"):
        simulate_population(np.zeros((5, 2)), [0.0, 1.0], lambda x, t: torch.zeros_like(x), mode="ode",
                            dt=float("nan"))


def test_bridge_and_rates_name_bad_arguments():
    x = torch.zeros(4, 2)
    with pytest.raises(ValueError, match="tau"):
        bridge_sample(x, x, torch.tensor([0.2, 0.5, 1.0, 0.3]), 0.1)
    with pytest.raises(ValueError, match="x1"):
        bridge_sample(x, torch.zeros(3, 2), torch.full((4,), 0.5), 0.1)
    with pytest.raises(ValueError, match="g must be finite"):
        split_birth_death(np.array([0.1, np.nan]), 0.1, 0.1)
    with pytest.raises(ValueError, match="g must be finite"):
        split_birth_death(torch.tensor([np.inf]))


# ------------------------------------------------------------------------------------------ shared code
def test_tigon_uses_the_shared_fitted_model_code(tigon, tmp_path):
    from icml26.usb.bridge import FittedDynamics

    for name in ("simulate", "growth", "velocity", "drift", "birth_death_rates", "save", "_points", "_tnorm"):
        assert name not in vars(TIGONLike), name
    assert issubclass(TIGONLike, FittedDynamics) and issubclass(UnbalancedSchrodingerBridge, FittedDynamics)
    model, snaps, times = tigon
    model.save(tmp_path / "t.pt")
    back = TIGONLike.load(tmp_path / "t.pt")
    np.testing.assert_array_equal(back.growth(snaps[1], 0.5), model.growth(snaps[1], 0.5))
    np.testing.assert_array_equal(model.drift(snaps[1], 0.5), model.velocity(snaps[1], 0.5))   # no score head


def test_first_snapshot_mass_is_one_so_counts_need_no_factor():
    snaps, times = _toy()
    for masses in (None, [3.0, 5.0, 9.0], [0.1, 0.2, 0.4]):
        assert check_snapshots(snaps, times, masses)[2][0] == 1.0


def test_growth_correlations_known_answer():
    from icml26.usb.data import true_growth

    class Oracle:
        growth_targets_ = None

        def growth(self, x, t):
            return true_growth(x)

    snaps, times = _toy()
    o = Oracle()
    o.growth_targets_ = [None, true_growth(snaps[1]), -true_growth(snaps[2])]
    r = experiment.growth_correlations(o, snaps, times, None)
    assert r["growth_r"] == pytest.approx(1.0) and r["target_r_t1"] == pytest.approx(1.0)
    assert r["target_r_t2"] == pytest.approx(-1.0)


# ------------------------------------------------------------------------------------------ config
def test_validate_config_rejects_bad_values_naming_the_key():
    ok = experiment.CONFIGS["small"]
    for name in ("smoke", "small", "paper"):
        experiment.validate_config(experiment.CONFIGS[name])
    for key, value in (("n_seeds", 0), ("seed", None), ("holdout", 3), ("times", [0.0, 2.0, 1.0, 3.0]),
                       ("ft_methods", ["USB"]), ("hidden", [64, 0]), ("device", "gpu"), ("tigon", "yes"),
                       ("n_var_sims", 1), ("sigma", 0.0), ("h5ad", "/no/such/file.h5ad")):
        with pytest.raises((ValueError, TypeError), match=key):
            experiment.validate_config({**ok, key: value})
    with pytest.raises(ValueError, match="unknown key"):
        experiment.validate_config({**ok, "n_iters": 5})
    with pytest.raises(ValueError, match="n_seeds"):
        experiment.run({**experiment.CONFIGS["smoke"], "n_seeds": 0})
    assert set(experiment.CONFIG_HELP) == set(experiment.CONFIGS["small"])
    assert set(experiment.EXPECTED_RUNTIME_S) == {"smoke", "small", "paper"}


# ------------------------------------------------------------------------------------------ gates can fail
W1 = {"USB": [0.26, 0.25, 0.28], "SF2M": [0.34, 0.35, 0.33], "OTCFM": [0.34, 0.30, 0.38], "UOTCFM": [0.36] * 3}
CE = {"USB": [0.06, 0.05, 0.08], "SF2M": [0.33, 0.30, 0.36], "OTCFM": [0.33, 0.30, 0.36], "UOTCFM": [0.33, 0.30, 0.36]}


def test_gate_c1_held_broken_arm_not_held_tiny_sample_inconclusive():
    good = experiment.reconstruction_claim(W1, (0.24, 0.47), 3)
    assert good.verdict == "held" and "implies it" in good.details and good.paper and good.interval.n == 3
    # a broken USB arm (W1 about twice the baselines' on every seed): not held
    assert experiment.reconstruction_claim({**W1, "USB": [0.7, 0.65, 0.7]}, (0.24, 0.47), 3).verdict == "not held"
    # the TIGON part runs on one seed: reported, never the verdict
    tig = experiment.reconstruction_claim(W1, (0.7, 0.47), 3)
    assert tig.verdict == "held" and "outside the bar" in tig.details
    # one seed: a single ratio cannot be bounded
    one = experiment.reconstruction_claim({m: v[:1] for m, v in W1.items()}, None, 1)
    assert one.verdict == "inconclusive" and "3 seeds" in one.details


def test_gate_c2_can_fail_only_through_usb_the_rest_is_the_data():
    good, data = experiment.mass_claim(CE, [0.33, 0.30, 0.36])
    assert good.verdict == "held" and data.kind == "sanity" and data.held and "by construction" in data.details
    bad, _ = experiment.mass_claim({**CE, "USB": [0.3, 0.32, 0.35]}, [0.33, 0.30, 0.36])  # a broken USB arm
    assert bad.verdict == "not held"
    flat = {m: [0.1, 0.1, 0.1] for m in ("SF2M", "OTCFM", "UOTCFM")}      # data that barely grow
    _, flat_data = experiment.mass_claim({**CE, **flat}, [0.1, 0.1, 0.1])
    assert flat_data.verdict == "not held"


def test_gate_c3_can_fail_and_is_inconclusive_when_seeds_cannot_decide():
    good = experiment.transition_claim([0.05, 0.03, 0.06], [0.5, 0.6, 0.55], [0.0, 0.0, 0.0])
    assert good.verdict == "held" and good.kind == "gate"
    assert experiment.transition_claim([0.3, 0.35, 0.33], [0.5, 0.6, 0.55], [0.0] * 3).verdict == "not held"
    assert experiment.transition_claim([0.05, 0.03, 0.06], [0.2, 0.25, 0.22], [0.0] * 3).verdict == "not held"
    noisy = experiment.transition_claim([0.02, 0.28, 0.10], [0.5, 0.6, 0.55], [0.0] * 3)
    assert noisy.verdict == "inconclusive" and "seeds (now 3) would decide it" in noisy.details


def test_validate_config_refuses_an_unknown_key():
    for scale in ("smoke", "small"):
        with pytest.raises(ValueError, match="n_seed"):
            experiment.validate_config({**experiment.CONFIGS[scale], "n_seed": 3, "scale": scale})



def test_underflowing_coupling_still_matches_the_target_masses():
    # cost / eps ~ 770: POT's plan underflows to ~1e-302 (was returned as is); the log-domain solver is used
    from icml26.usb import semi_relaxed_uot

    p = semi_relaxed_uot([[0.0], [0.1]], [[3.0], [3.2], [2.9]], eps=0.0117)
    np.testing.assert_allclose(p.plan.sum(0), 1.0, rtol=1e-6)
    np.testing.assert_allclose((p.a * p.row_factor).sum(), 3.0, rtol=1e-6)
