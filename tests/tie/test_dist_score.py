"""Length distributions, fit_logt and the TIE score (spec §8)."""

import numpy as np
import pytest

from icml26.tie import LogNormal, LogT, adaptive_beta, fit_lognormal, fit_logt, starvation_decay, tie_score

# scipy.quad references of spec §2.4 (nu = 3.5, L = 2048): (mu, sigma, E[min(X,L)], CVaR_0.9)
REF = [(5.0, 0.8, 256.06, 1111.55), (4.0, 1.2, 171.97, 1064.44), (6.5, 0.3, 719.85, 1417.79),
       (3.0, 0.5, 28.72, 108.37)]


def test_quantile_inverts_cdf():
    d = LogT([3.0, 5.0, 6.5], [0.4, 1.0, 0.3])
    q = np.linspace(0.01, 0.99, 25)[:, None]
    np.testing.assert_allclose(d.cdf(d.quantile(q)), np.broadcast_to(q, (25, 3)), rtol=1e-9, atol=1e-12)
    ln = LogNormal(4.0, 0.7)
    np.testing.assert_allclose(ln.cdf(ln.quantile([0.2, 0.5, 0.8])), [0.2, 0.5, 0.8], rtol=1e-10)


def test_censored_mean_and_cvar_match_reference():
    mu, sg, e, c = map(np.array, zip(*REF))
    d = LogT(mu, sg, nu=3.5, max_tokens=2048)
    np.testing.assert_allclose(d.censored_mean(), e, rtol=1e-3)
    np.testing.assert_allclose(d.cvar(0.9), c, rtol=1e-3)


def test_censored_mean_matches_monte_carlo():
    d = LogT(4.5, 0.9)
    x = d.sample(200_000, rng=0, discrete=False)
    np.testing.assert_allclose(d.censored_mean(), x.mean(), rtol=3e-2)
    tail = np.sort(x)[int(0.9 * len(x)):]
    np.testing.assert_allclose(d.cvar(0.9), tail.mean(), rtol=3e-2)


def test_risk_ordering_and_bounds():
    d = LogT(np.linspace(2, 7, 11), np.linspace(0.2, 1.5, 11))
    assert np.all(d.cvar(0.9) >= d.var(0.9) - 1e-9)
    assert np.all(d.var(0.9) >= np.minimum(d.median(), 2048) - 1e-9)
    for beta in (0.0, 0.1, 0.5, 2.0):
        s = tie_score(d.mu, d.sigma, beta=beta)
        assert np.all(s <= (1 + beta) * 2048 + 1e-6) and np.all(s >= 1)


def test_tie_monotone_in_sigma_and_beta_and_beta0_is_mean():
    sig = np.linspace(0.1, 2.0, 20)
    s = tie_score(4.0, sig, beta=0.1)
    assert np.all(np.diff(s) > 0)
    b = tie_score(4.0, 0.8, beta=np.linspace(0, 1, 11))
    assert np.all(np.diff(b) > 0)
    np.testing.assert_allclose(tie_score(4.0, 0.8, beta=0.0), LogT(4.0, 0.8).censored_mean())


def test_fit_logt_recovers_parameters():
    x = LogT(4.2, 0.7).sample(200, rng=1, discrete=False)
    mu, sigma, ks = fit_logt(x[None, :])
    assert abs(mu[0] - 4.2) < 0.1 and abs(sigma[0] - 0.7) < 0.1
    assert 0 <= ks[0] <= 1


def test_fit_logt_vectorised_equals_rows_and_ragged():
    X = LogT([3.0, 5.0, 6.0], [0.5, 1.0, 0.3]).sample(16, rng=2).T
    mu, sg, ks = fit_logt(X)
    for i in range(3):
        m1, s1, k1 = fit_logt(X[i:i + 1])
        np.testing.assert_allclose([mu[i], sg[i], ks[i]], [m1[0], s1[0], k1[0]], rtol=1e-10)
    mr, sr, _ = fit_logt([X[0], X[1][:10], X[2]])
    m10, s10, _ = fit_logt(X[1:2, :10])
    np.testing.assert_allclose([mr[1], sr[1]], [m10[0], s10[0]], rtol=1e-10)
    np.testing.assert_allclose([mr[0], mr[2]], [mu[0], mu[2]], rtol=1e-10)


def test_fit_degenerate_rows_floor_sigma():
    mu, sg, ks = fit_logt(np.array([[7, 7, 7, 7], [1, 1, 1, 1]]), sigma_floor=1e-2)
    assert np.all(np.isfinite(mu)) and np.all(np.isfinite(ks))
    np.testing.assert_allclose(sg, 1e-2)
    np.testing.assert_allclose(mu, np.log([7, 1]))


def test_censored_fit_corrects_truncation_bias():
    d = LogT(np.full(300, 5.5), np.full(300, 1.0))
    X = np.minimum(d.sample(32, rng=3, discrete=False).T, 512.0)
    m_plain, _, _ = fit_logt(X)
    m_cens, _, _ = fit_logt(X, censor_at=512)
    assert abs(m_cens.mean() - 5.5) < abs(m_plain.mean() - 5.5)
    assert abs(m_cens.mean() - 5.5) < 0.1


def test_lognormal_fit_is_log_moments():
    X = np.exp(np.random.default_rng(0).normal(3, 0.5, (4, 50)))
    mu, sg, _ = fit_lognormal(X)
    np.testing.assert_allclose(mu, np.log(X).mean(1))
    np.testing.assert_allclose(sg, np.log(X).std(1))


def test_adaptive_beta_known_values():
    assert adaptive_beta(0, 32) == pytest.approx(0.1)
    assert adaptive_beta(96, 32) == pytest.approx(0.3)
    assert adaptive_beta(10_000, 32) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="max_num_seqs"):
        adaptive_beta(5, 0)
    with pytest.raises(ValueError, match="max_num_seqs"):
        adaptive_beta(5, -3)


def test_starvation_decay():
    w = np.linspace(0, 300, 50)
    s = starvation_decay(1000.0, w)
    assert s[0] == pytest.approx(1000.0) and np.all(np.diff(s) <= 0)
    assert starvation_decay(1000.0, 30.0, gamma=0.9, tau=30.0) == pytest.approx(900.0)
    for g in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="gamma"):
            starvation_decay(1.0, 1.0, gamma=g)
    with pytest.raises(ValueError, match="wait_s"):
        starvation_decay(1.0, -1.0)


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="alpha"):
        tie_score(4.0, 0.5, alpha=1.0)
    with pytest.raises(ValueError, match="alpha"):
        LogT(4.0, 0.5).cvar(0.0)
    with pytest.raises(ValueError, match="max_tokens"):
        LogT(4.0, 0.5, max_tokens=0)
    with pytest.raises(ValueError, match="max_tokens"):
        tie_score(4.0, 0.5, max_tokens=0)
    with pytest.raises(ValueError, match="sigma"):
        LogT(4.0, -1.0)
    with pytest.raises(ValueError, match="lengths"):
        fit_logt(np.array([[3.0, -2.0]]))
    with pytest.raises(ValueError, match="lengths"):
        LogT(4.0, 0.5).cdf(-1.0)
    with pytest.raises(ValueError, match="samples"):
        fit_logt([])
    with pytest.raises(ValueError, match="beta"):
        tie_score(4.0, 0.5, beta=-0.1)
