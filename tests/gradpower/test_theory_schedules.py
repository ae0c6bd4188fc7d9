"""Mechanism helper (section 2.4) and the WSD / cosine schedules."""

import math

import pytest
import torch

from icml26.gradpower import cosine_with_warmup, high_noise_drift, normalized_drift, wsd, wsd_lambda

POWERS = [0.8, 1.0, 1.2, 1.5]


def test_drift_monotone_and_sqrt_law():
    hi = [normalized_drift(0.05, 1.0, p, n_samples=1_000_000, seed=0) for p in POWERS]
    lo = [normalized_drift(1.0, 0.2, p, n_samples=1_000_000, seed=0) for p in POWERS]
    assert all(b > a for a, b in zip(hi, hi[1:]))
    assert all(b < a for a, b in zip(lo, lo[1:]))
    for p, h in zip(POWERS, hi):
        assert h == pytest.approx(high_noise_drift(0.05, 1.0, p), rel=0.02)
    # the paper's quoted values: p=1 -> 1.732 mu/sigma, p=1.2 -> 1.844 mu/sigma (high-noise limit)
    assert normalized_drift(1e-4, 1.0, 1.0) / 1e-4 == pytest.approx(1.732, abs=1e-3)
    assert normalized_drift(1e-4, 1.0, 1.2) / 1e-4 == pytest.approx(1.844, abs=1e-3)


def test_drift_closed_form_matches_plain_monte_carlo():
    g = torch.distributions.Uniform(-0.7, 1.3).sample((2_000_000,)).double()  # mu 0.3, sigma 1.0
    phi = torch.sign(g) * g.abs() ** 1.2
    mc = (phi.mean() / phi.pow(2).mean().sqrt()).item()
    assert normalized_drift(0.3, 1.0, 1.2) == pytest.approx(mc, abs=3e-3)
    assert normalized_drift(0.3, 1.0, 1.2, n_samples=100_000) == pytest.approx(normalized_drift(0.3, 1.0, 1.2),
                                                                              rel=1e-6)


def test_drift_limits_and_errors():
    assert normalized_drift(0.5, 0.0, 1.2) == 1.0  # no noise: sign(mu)
    assert normalized_drift(-0.5, 0.1, 1.2) == pytest.approx(-normalized_drift(0.5, 0.1, 1.2))  # odd in mu
    assert normalized_drift(1.0, 0.2, 1e-6) == pytest.approx(1.0, abs=1e-5)  # p -> 0: signSGD
    with pytest.raises(ValueError, match="p must be > 0"):
        normalized_drift(0.1, 1.0, 0.0)
    with pytest.raises(ValueError, match="sigma must be >= 0"):
        normalized_drift(0.1, -1.0, 1.2)
    with pytest.raises(ValueError, match="n_samples"):
        normalized_drift(0.1, 1.0, 1.2, n_samples=0)


def test_wsd_shape():
    f = wsd_lambda(1000, warmup_frac=0.05, decay_frac=0.2, min_ratio=0.1)
    assert f(0) == pytest.approx(1 / 50) and f(49) == 1.0
    assert f(50) == 1.0 and f(799) == 1.0
    assert f(900) == pytest.approx(1 - 0.9 * 0.5)
    assert f(1000) == pytest.approx(0.1) and f(5000) == pytest.approx(0.1)
    vals = [f(s) for s in range(800, 1000)]
    assert all(b < a for a, b in zip(vals, vals[1:]))  # strictly decreasing in the decay phase
    with pytest.raises(ValueError, match="warmup_frac \\+ decay_frac"):
        wsd_lambda(100, warmup_frac=0.5, decay_frac=0.6)
    with pytest.raises(ValueError, match="total_steps"):
        wsd_lambda(0)


def test_schedulers_drive_optimizer_lr():
    w = torch.nn.Parameter(torch.zeros(3))
    opt = torch.optim.AdamW([w], lr=1.0)
    sched = cosine_with_warmup(opt, 100, warmup_frac=0.1, min_ratio=0.1)
    lrs = []
    for _ in range(100):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)
    assert lrs[-1] == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 89 / 90)))
    opt2 = torch.optim.AdamW([w], lr=2.0)
    s2 = wsd(opt2, 10, 0.0, 0.5, 0.0)
    seen = []
    for _ in range(10):
        seen.append(opt2.param_groups[0]["lr"])
        opt2.step()
        s2.step()
    assert seen == pytest.approx([2, 2, 2, 2, 2, 2, 1.6, 1.2, 0.8, 0.4])
