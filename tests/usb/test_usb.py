"""Correctness tests of icml26.usb (spec section 8). Fast tier <= 30 s; statistical tier marked slow."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

ot = pytest.importorskip("ot")

from icml26.usb import (  # noqa: E402
    NotFittedError,
    UnbalancedSchrodingerBridge,
    bridge_sample,
    bridge_targets,
    false_transition_rate,
    growth_penalty,
    semi_relaxed_uot,
    simulate_population,
    split_birth_death,
    tune_reg_m,
    wasserstein,
)
from icml26.usb.baselines import OTCFM, SF2M, UOTCFM, TIGONLike  # noqa: E402
from icml26.usb.coupling import squared_distances  # noqa: E402


def _zero_drift(x, t):
    return torch.zeros_like(x)


def _const(value):
    return lambda x, t: torch.full((len(x),), value, dtype=x.dtype)


def _toy(seed=0, n=40):
    rng = np.random.default_rng(seed)
    x0 = rng.normal(0, 0.2, (n, 2))
    x1 = rng.normal(0, 0.2, (n + 10, 2)) + [1.0, 0.5]
    x2 = rng.normal(0, 0.2, (n + 20, 2)) + [2.0, 0.0]
    return [x0, x1, x2], np.array([0.0, 1.0, 2.0])


# ------------------------------------------------------------------------------------------ coupling
def test_semi_relaxed_matches_balanced_sinkhorn_for_large_reg_m():
    rng = np.random.default_rng(0)
    x0, x1 = rng.normal(size=(30, 2)), rng.normal(size=(30, 2)) + 0.3
    eps = 0.5
    p = semi_relaxed_uot(x0, x1, eps=eps, reg_m=1e4)
    a = np.full(30, 1 / 30)
    ref = ot.sinkhorn(a, a, squared_distances(x0, x1), eps, method="sinkhorn_log", numItermax=20000, stopThr=1e-12)
    assert np.abs(p.plan / p.plan.sum() - ref).max() < 1e-3 * ref.max() + 1e-6
    assert np.abs(np.log(p.row_factor)).max() < 1e-2


def test_semi_relaxed_mass_invariant_and_hard_target():
    rng = np.random.default_rng(1)
    x0, x1 = rng.normal(size=(25, 3)), rng.normal(size=(60, 3))
    p = semi_relaxed_uot(x0, x1, m0=1.0, m1=np.linspace(0.5, 1.5, 60), eps=0.3, reg_m=1.0)
    assert abs((p.a * p.row_factor).sum() - p.b.sum()) / p.b.sum() < 1e-3
    np.testing.assert_allclose(p.plan.sum(0), p.b, rtol=1e-6)
    assert p.plan.shape == (25, 60) and p.log_growth.shape == (25,)


def test_growth_target_sign_two_static_clusters():
    rng = np.random.default_rng(2)
    a0, b0 = rng.normal(0, 0.05, (100, 2)), rng.normal(0, 0.05, (100, 2)) + [3, 0]
    a1, b1 = rng.normal(0, 0.05, (200, 2)), rng.normal(0, 0.05, (50, 2)) + [3, 0]
    sigma = 0.05
    p = semi_relaxed_uot(np.vstack([a0, b0]), np.vstack([a1, b1]), eps=2 * sigma**2, reg_m=1.0)
    logr = np.log(p.row_factor)
    assert abs(logr[:100].mean() - math.log(2)) < 0.2
    assert abs(logr[100:].mean() - math.log(0.5)) < 0.2


def test_tune_reg_m_returns_grid_value():
    rng = np.random.default_rng(3)
    x0, x1 = rng.normal(size=(40, 2)), np.vstack([rng.normal(size=(30, 2)), rng.normal(size=(30, 2)) + 2])
    best, rows = tune_reg_m(x0, x1, eps=0.2, grid=(0.1, 1.0, 10.0, 100.0))
    assert best in (0.1, 1.0, 10.0, 100.0) and len(rows) == 4
    kl = [r["kl"] for r in rows]
    assert kl[0] > kl[-1]  # stronger marginal penalty -> smaller marginal change


# ------------------------------------------------------------------------------------------ bridge
def test_bridge_moments_and_targets():
    n, d, tau0, sigma, dt = 10_000, 2, 0.3, 0.5, 2.0
    g = torch.Generator().manual_seed(0)
    x0 = torch.tensor([[0.0, 1.0]]).expand(n, d)
    x1 = torch.tensor([[2.0, -1.0]]).expand(n, d)
    tau = torch.full((n,), tau0)
    xt, mu, eps = bridge_sample(x0, x1, tau, sigma, dt, g)
    var = sigma**2 * dt * tau0 * (1 - tau0)
    se_mean = math.sqrt(var / n)
    assert (xt.mean(0) - mu[0]).abs().max() < 4 * se_mean
    se_var = var * math.sqrt(2 / (n - 1))
    assert (xt.var(0) - var).abs().max() < 4 * se_var
    u, s = bridge_targets(x0, x1, xt, tau, sigma, dt)
    torch.testing.assert_close(s, -eps / (sigma * math.sqrt(dt * tau0 * (1 - tau0))), rtol=1e-4, atol=1e-4)
    # sigma -> 0: the flow target is the straight velocity (y - x)/dt
    xt0, _, _ = bridge_sample(x0[:5], x1[:5], tau[:5], 0.0, dt, g)
    u0, _ = bridge_targets(x0[:5], x1[:5], xt0, tau[:5], 0.0, dt)
    torch.testing.assert_close(u0, (x1[:5] - x0[:5]) / dt)


# ------------------------------------------------------------------------------------------ birth/death split
def test_split_birth_death_identities():
    g = np.linspace(-3, 3, 101)
    for qb, qd in ((0.3, 0.7), (1.0, 1.0), (0.01, 2.0)):
        b, d = split_birth_death(g, qb, qd)
        np.testing.assert_allclose(b - d, g, atol=1e-12)
        assert (b >= 0).all() and (d >= 0).all()
        np.testing.assert_allclose(b * d, qb * qd, atol=1e-8)
        bt, dt_ = split_birth_death(torch.tensor(g), qb, qd)
        np.testing.assert_allclose(bt.numpy(), b, atol=1e-12)
        np.testing.assert_allclose(dt_.numpy(), d, atol=1e-12)
    b, d = split_birth_death(g, 0.0, 0.0)
    np.testing.assert_array_equal(b, np.maximum(g, 0))
    np.testing.assert_array_equal(d, np.maximum(-g, 0))


def test_growth_penalty_properties():
    q = 0.4
    g = np.linspace(-2, 2, 81)
    psi = growth_penalty(g, q, q)
    assert abs(growth_penalty(0.0, q, q)) < 1e-12
    assert (psi >= -1e-12).all()
    assert (np.diff(psi, 2) > 0).all()  # convex
    h = 1e-3
    second = (growth_penalty(h, q, q) - 2 * growth_penalty(0.0, q, q) + growth_penalty(-h, q, q)) / h**2
    assert abs(second - 1 / (2 * q)) < 1e-4
    np.testing.assert_allclose(growth_penalty(torch.tensor(g), q, q).numpy(), psi, atol=1e-12)
    with pytest.raises(ValueError, match="reference rates"):
        growth_penalty(g, 0.0, 0.0)
    with pytest.raises(ValueError, match="reference rates"):
        split_birth_death(g, -1.0, 0.0)


# ------------------------------------------------------------------------------------------ simulator
def test_weighted_mass_is_exponential():
    x0 = np.zeros((50, 2))
    sim = simulate_population(x0, [0.0, 1.0, 2.0], _zero_drift, 0.3, growth=_const(0.7), mode="weighted", dt=1e-3)
    np.testing.assert_allclose(sim.mass(), 50 * np.exp(0.7 * np.array([0.0, 1.0, 2.0])), rtol=1e-2)


def test_discrete_pure_birth_mean_and_lineage():
    n0, beta, t = 2000, 0.5, 1.0
    sim = simulate_population(np.zeros((n0, 1)), [0.0, t], _zero_drift, 0.0,
                              rates=lambda x, s: (torch.full((len(x),), beta), torch.zeros(len(x))), dt=0.01, seed=3)
    mean = n0 * math.exp(beta * t)
    sd = math.sqrt(n0 * math.exp(beta * t) * (math.exp(beta * t) - 1))
    assert abs(sim.counts()[-1] - mean) < 3 * sd
    ev = sim.events
    assert sim.counts()[-1] == n0 + (ev["kind"] == 1).sum() - (ev["kind"] == -1).sum()
    lin, ids = sim.lineage[-1], sim.cell_ids[-1]
    assert len(np.unique(ids)) == len(ids) and lin.max() < n0 and (ids[:n0] < n0).all()


def test_discrete_pure_death_survival():
    n0, delta = 3000, 0.8
    sim = simulate_population(np.zeros((n0, 2)), [0.0, 1.0], _zero_drift, 0.1,
                              rates=lambda x, s: (torch.zeros(len(x)), torch.full((len(x),), delta)), dt=0.01, seed=4)
    p = math.exp(-delta)
    assert abs(sim.counts()[-1] / n0 - p) < 3 * math.sqrt(p * (1 - p) / n0)


def test_max_particles_guard():
    with pytest.raises(ValueError, match="max_particles"):
        simulate_population(np.zeros((100, 1)), [0.0, 3.0], _zero_drift, rates=lambda x, s: (
            torch.full((len(x),), 2.0), torch.zeros(len(x))), max_particles=500)


@pytest.mark.slow
def test_simulator_statistics_slow():
    n0, g, t = 100, 0.4, 1.5
    counts = [simulate_population(np.zeros((n0, 1)), [0, t], _zero_drift, growth=_const(g), dt=0.01, seed=s,
                                  record_events=False).counts()[-1] for s in range(200)]
    assert abs(np.mean(counts) - n0 * math.exp(g * t)) < 3 * np.std(counts) / math.sqrt(200)
    # Yule process variance
    beta = 0.5
    yule = [simulate_population(np.zeros((n0, 1)), [0, t], _zero_drift, rates=lambda x, s: (
        torch.full((len(x),), beta), torch.zeros(len(x))), dt=0.005, seed=s, record_events=False).counts()[-1]
        for s in range(300)]
    var_true = n0 * math.exp(beta * t) * (math.exp(beta * t) - 1)
    assert abs(np.var(yule, ddof=1) / var_true - 1) < 0.2


# ------------------------------------------------------------------------------------------ estimator
def test_fit_simulate_save_load_roundtrip(tmp_path):
    snaps, times = _toy()
    m = UnbalancedSchrodingerBridge(n_iter=30, seed=0).fit(snaps, times)
    x = snaps[1]
    b, d = m.birth_death_rates(x, 1.0)
    np.testing.assert_allclose(b - d, m.growth(x, 1.0), atol=1e-6)
    np.testing.assert_allclose(m.drift(x, 1.0), m.velocity(x, 1.0) + 0.5 * 0.2**2 * m.score(x, 1.0), atol=1e-5)
    sim = m.simulate(snaps[0], times, mode="discrete", seed=1)
    assert len(sim.positions) == 3 and sim.weights is None and sim.events is not None
    for mode in ("weighted", "ode"):
        s2 = m.simulate(snaps[0], times, mode=mode, seed=1)
        assert s2.counts()[-1] == len(snaps[0]) and s2.weights is not None
    path = tmp_path / "usb.pt"
    m.save(path)
    m2 = UnbalancedSchrodingerBridge.load(path)
    np.testing.assert_array_equal(m2.drift(x, 0.5), m.drift(x, 0.5))
    np.testing.assert_array_equal(m2.growth(x, 0.5), m.growth(x, 0.5))
    sim2 = m2.simulate(snaps[0], times, mode="discrete", seed=1)
    np.testing.assert_array_equal(sim2.positions[-1], sim.positions[-1])
    with pytest.raises(ValueError, match="SF2M"):
        SF2M.load(path)


def test_determinism_same_seed():
    snaps, times = _toy()
    m1 = UnbalancedSchrodingerBridge(n_iter=50, seed=7).fit(snaps, times)
    m2 = UnbalancedSchrodingerBridge(n_iter=50, seed=7).fit(snaps, times)
    for p1, p2 in zip(m1.plans_, m2.plans_):
        np.testing.assert_array_equal(p1.plan, p2.plan)
    for n1, n2 in zip(m1._nets(), m2._nets()):
        for a, b in zip(n1.parameters(), n2.parameters()):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
    s1, s2 = m1.simulate(snaps[0], times, seed=3), m2.simulate(snaps[0], times, seed=3)
    np.testing.assert_array_equal(s1.positions[-1], s2.positions[-1])
    m3 = UnbalancedSchrodingerBridge(n_iter=50, seed=8).fit(snaps, times)
    assert not np.array_equal(m3.velocity(snaps[0], 0.0), m1.velocity(snaps[0], 0.0))


def test_anndata_input_equals_arrays():
    anndata = pytest.importorskip("anndata")
    snaps, times = _toy()
    x = np.vstack(snaps)
    obs = {"day": np.concatenate([np.full(len(s), t) for s, t in zip(snaps, times)])}
    import pandas as pd

    adata = anndata.AnnData(X=np.zeros((len(x), 3), dtype=np.float32), obs=pd.DataFrame(obs))
    adata.obsm["X_pca"] = x
    m1 = UnbalancedSchrodingerBridge(n_iter=20, seed=0).fit(adata, time_key="day")
    m2 = UnbalancedSchrodingerBridge(n_iter=20, seed=0).fit(snaps, times)
    np.testing.assert_array_equal(m1.times_, times)
    np.testing.assert_allclose(m1.growth(snaps[0], 0.0), m2.growth(snaps[0], 0.0), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="time_key"):
        UnbalancedSchrodingerBridge(n_iter=1).fit(adata, time_key="nope")
    with pytest.raises(ValueError, match="basis"):
        UnbalancedSchrodingerBridge(n_iter=1).fit(adata, time_key="day", basis="X_umap")


def test_growth_targets_follow_masses_and_balanced_limit():
    snaps, times = _toy()
    # masses: population doubles each step though the sampled counts hardly change
    m = UnbalancedSchrodingerBridge(n_iter=1, seed=0).fit(snaps, times, masses=[1.0, 2.0, 4.0])
    for k, g in enumerate(m.growth_targets_):
        assert abs(np.mean(g) - math.log(2)) < 0.25
    big = UnbalancedSchrodingerBridge(n_iter=1, reg_m=1e4, seed=0).fit([snaps[0], snaps[0] + 0.5], [0.0, 1.0])
    assert np.abs(big.growth_targets_[0]).max() < 0.05


def test_baselines_share_interface():
    snaps, times = _toy()
    for cls in (SF2M, OTCFM, UOTCFM):
        m = cls(n_iter=20, seed=0).fit(snaps, times)
        sim = m.simulate(snaps[0], times)
        assert sim.mass()[-1] == len(snaps[0])  # mass-conserving
        np.testing.assert_array_equal(m.growth(snaps[0], 0.0), 0.0)
    tig = TIGONLike(n_iter=2, n_particles=32, steps_per_unit=4, seed=0).fit(snaps, times)
    sim = tig.simulate(snaps[0], times)
    assert sim.weights is not None and np.isfinite(sim.mass()).all()


def test_not_fitted_and_bad_inputs():
    snaps, times = _toy()
    m = UnbalancedSchrodingerBridge(n_iter=1)
    with pytest.raises(NotFittedError, match="not fitted"):
        m.simulate(snaps[0], times)
    with pytest.raises(NotFittedError):
        TIGONLike().simulate(snaps[0], times)
    with pytest.raises(ValueError, match="at least 2"):
        m.fit(snaps[:1], times[:1])
    with pytest.raises(ValueError, match="strictly increasing"):
        m.fit(snaps, [0.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="length"):
        m.fit(snaps, [0.0, 1.0])
    with pytest.raises(ValueError, match="differing dimensions"):
        m.fit([snaps[0], snaps[1][:, :1]], [0.0, 1.0])
    bad = snaps[1].copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match=r"snapshots\[1\].*NaN"):
        m.fit([snaps[0], bad], [0.0, 1.0])
    with pytest.raises(ValueError, match="masses"):
        m.fit(snaps, times, masses=[1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match="masses"):
        m.fit(snaps, times, masses=[1.0, 1.0])
    with pytest.raises(ValueError, match="sigma"):
        UnbalancedSchrodingerBridge(sigma=0.0)
    with pytest.raises(ValueError, match="reg_m"):
        UnbalancedSchrodingerBridge(reg_m=0.0)
    with pytest.raises(ValueError, match="reference_rates"):
        UnbalancedSchrodingerBridge(reference_rates=(-0.1, 0.0))
    fitted = UnbalancedSchrodingerBridge(n_iter=5).fit(snaps, times)
    with pytest.raises(ValueError, match="max_particles"):
        fitted.simulate(snaps[0], times, max_particles=10)
    with pytest.raises(ValueError, match="mode"):
        fitted.simulate(snaps[0], times, mode="jump")
    with pytest.raises(ValueError, match="shape"):
        fitted.drift(np.zeros((3, 5)), 0.0)


# ------------------------------------------------------------------------------------------ metrics
def test_metrics_known_answers():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 2))
    assert wasserstein(x, x + [0.3, 0.4]) == pytest.approx(0.5, abs=1e-9)
    assert wasserstein(x, x + [0.3, 0.4], p=2) == pytest.approx(0.5, abs=1e-9)
    w = np.r_[np.ones(25), np.zeros(25)]
    assert wasserstein(x, x[:25], wx=w) == pytest.approx(0.0, abs=1e-6)
    anc = np.array([0, 0, 0, 0, 1, 1])
    fin = np.array([0, 1, 0, 0, 1, 0])
    assert false_transition_rate(anc, fin, from_label=0, to_label=1) == pytest.approx(0.25)
    assert false_transition_rate(anc, fin, weights=[1, 3, 0, 0, 1, 1], from_label=0) == pytest.approx(0.75)
    assert false_transition_rate(anc, fin) == pytest.approx(2 / 6)


# ------------------------------------------------------------------------------------------ experiment smoke
def test_experiment_smoke():
    from icml26.usb import experiment

    cfg = dict(experiment.CONFIGS["smoke"], scale="smoke")
    res = experiment.run(cfg)
    assert res.slug == "usb" and res.scale == "smoke"
    assert {c.id for c in res.claims} == {"C1", "C2", "C2-data", "C3", "C4", "C4g"}
    for c in res.claims:
        assert c.measured is not None and c.verdict in ("held", "not held", "inconclusive")
    assert {"C1", "C2", "C3"} == {c.id for c in res.claims if c.gate}
    assert [c.id for c in res.claims if c.kind == "sanity"] == ["C2-data"]
    assert set(res.metrics["table"]) >= {"USB", "SF2M", "OTCFM", "UOTCFM", "TIGON", "truth"}
    assert np.isfinite(res.metrics["speed_vs_otcfm"]["train_time_per_iter_ratio"])
    assert {"embeddings", "counts", "heldout_t2"} <= set(res._pending_figures)
    for name in ("smoke", "small", "paper"):
        assert isinstance(experiment.CONFIGS[name]["seed"], int)


def test_paper_path_reads_h5ad(tmp_path):
    anndata = pytest.importorskip("anndata")
    import pandas as pd

    from icml26.usb import experiment

    snaps, times = _toy(n=30)
    snaps.append(snaps[-1] + [1.0, 0.0])
    times = np.append(times, 3.0)
    x = np.vstack(snaps)
    obs = pd.DataFrame({"day": np.concatenate([np.full(len(s), t) for s, t in zip(snaps, times)])})
    obs.index = obs.index.astype(str)
    adata = anndata.AnnData(X=np.zeros((len(x), 2), dtype=np.float32), obs=obs)
    adata.obsm["X_pca"] = x
    path = tmp_path / "toy.h5ad"
    adata.write_h5ad(path)
    cfg = dict(experiment.CONFIGS["paper"], scale="paper", h5ad=str(path), time_key="day", device="cpu",
               n_iter=10, batch_size=32, hidden=[16, 16])
    res = experiment.run(cfg)
    assert res.metrics["n_cells"] == [len(s) for s in snaps]
    assert set(res.metrics["table"]) == {"USB", "SF2M", "OTCFM", "UOTCFM"}
    assert res.claims[0].id == "C1"


@pytest.mark.slow
def test_balanced_limit_on_ou_series_slow():
    """Constant-size OU snapshots: USB learns ~zero growth and predicts the held-out time as well as SF2M."""
    rng = np.random.default_rng(0)
    theta, sig, n = 1.0, 0.3, 200
    times = np.array([0.0, 1.0, 2.0, 3.0])

    def marginal(t):
        mean = np.array([2.0, -1.0]) * math.exp(-theta * t)
        var = 0.1**2 * math.exp(-2 * theta * t) + sig**2 / (2 * theta) * (1 - math.exp(-2 * theta * t))
        return mean + math.sqrt(var) * rng.normal(size=(n, 2))

    snaps = [marginal(t) for t in times]
    keep = [0, 1, 3]
    usb = UnbalancedSchrodingerBridge(sigma=sig, n_iter=1500, seed=0).fit([snaps[i] for i in keep], times[keep])
    sf2m = SF2M(sigma=sig, n_iter=1500, seed=0).fit([snaps[i] for i in keep], times[keep])
    g = np.concatenate([usb.growth(snaps[i], times[i]) for i in range(4)])
    assert abs(g.mean()) < 0.1
    w_usb = np.mean([wasserstein(usb.simulate(snaps[1], [1.0, 2.0], seed=s).positions[-1], snaps[2]) for s in range(5)])
    w_sf = np.mean([wasserstein(sf2m.simulate(snaps[1], [1.0, 2.0], seed=s).positions[-1], snaps[2]) for s in range(5)])
    assert w_usb <= 1.15 * w_sf
