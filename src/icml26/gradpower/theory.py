"""The paper's mechanism (section 4): Adam's stationary normalised update under the sign-power transform.

For a scalar gradient g ~ Uniform(mu - sigma, mu + sigma), Adam's update in the stationary regime is
m / sqrt(v) -> r(p) = E[phi_p(g)] / sqrt(E[phi_p(g)^2]) with phi_p(g) = sign(g) |g|^p (spec section 2.4).

Closed form (a = mu - sigma, b = mu + sigma; antiderivatives of sign(g)|g|^p and |g|^(2p)):
    E[phi_p(g)]   = (|b|^(p+1) - |a|^(p+1)) / ((p + 1)(b - a))
    E[phi_p(g)^2] = (sign(b)|b|^(2p+1) - sign(a)|a|^(2p+1)) / ((2p + 1)(b - a))
High noise (sigma >> mu): r(p) ~= (mu / sigma) sqrt(2p + 1), increasing in p (p > 1 speeds up noise-dominated
directions). Low noise (sigma << mu): r(p) decreases with p toward r = 1 (signSGD) as p -> 0.
"""

from __future__ import annotations

import math

import numpy as np

from icml26.common.validation import check_int

__all__ = ["normalized_drift", "high_noise_drift"]


def normalized_drift(mu: float, sigma: float, p: float, n_samples: int | None = None, seed: int = 0) -> float:
    """r(p) = E[phi_p(g)] / sqrt(E[phi_p(g)^2]) for g ~ Uniform(mu - sigma, mu + sigma).

    Args:
        mu: mean gradient (signal), any real.
        sigma: half-width of the uniform noise, >= 0 (sigma = 0 gives sign(mu)).
        p: exponent > 0.
        n_samples: None for the exact closed form; otherwise a Monte Carlo estimate from `n_samples` stratified
            uniform draws (one uniform draw in each of n equal strata: the same estimator as plain MC, with the
            variance of the smooth integrand removed to O(n^-3)).
        seed: seed of the Monte Carlo draws.
    Returns:
        r(p), a float in [-1, 1] (dimensionless).
    """
    for name, v in (("mu", mu), ("sigma", sigma), ("p", p)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)) or not math.isfinite(v):
            raise ValueError(f"{name} must be a finite real number, got {v!r}")
    if sigma < 0:
        raise ValueError(f"sigma must be >= 0, got {sigma}")
    if p <= 0:
        raise ValueError(f"p must be > 0, got {p}")
    if mu == 0:
        return 0.0
    if sigma == 0:
        return float(np.sign(mu))
    if n_samples is not None:
        n_samples = check_int(n_samples, "n_samples", min=1)
        rng = np.random.default_rng(seed)
        u = (np.arange(n_samples) + rng.random(n_samples)) / n_samples  # stratified U(0, 1)
        g = mu - sigma + 2.0 * sigma * u
        phi = np.sign(g) * np.abs(g) ** p
        return float(phi.mean() / math.sqrt(float(np.mean(phi * phi))))
    a, b = mu - sigma, mu + sigma
    m1 = (abs(b) ** (p + 1) - abs(a) ** (p + 1)) / ((p + 1) * (b - a))
    m2 = (math.copysign(abs(b) ** (2 * p + 1), b) - math.copysign(abs(a) ** (2 * p + 1), a)) / ((2 * p + 1) * (b - a))
    return float(m1 / math.sqrt(m2))


def high_noise_drift(mu: float, sigma: float, p: float) -> float:
    """The high-noise approximation r(p) ~= (mu / sigma) sqrt(2p + 1) (valid for sigma >> |mu|)."""
    if sigma <= 0 or p <= 0:
        raise ValueError(f"sigma and p must be > 0, got sigma={sigma}, p={p}")
    return mu / sigma * math.sqrt(2 * p + 1)
