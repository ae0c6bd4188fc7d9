"""The TIE score (paper Eq. 11), its adaptive tail weight β (Eq. 12) and starvation decay (§5).

    TIE(μ, σ) = E[min(X, L)] + β · CVaR_α[min(X, L)],  log X ~ μ + σ·t_ν,  α = 0.9, L = max_tokens = 2048
    β = min(hi, max(lo, base · L_q / B))             (Eq. 12: L_q waiting-queue length, B = max_num_seqs)
    effective = TIE · γ^(t_wait / τ)                 (starvation prevention: γ = 0.9, τ = 30 s)

The official code (`mean_add_n_cvar`) estimates both terms by Monte Carlo (10 000 samples) and censors the mean
at 2028 but the CVaR at 2048; here both are deterministic quadratures censored at L (see `tie.dist`).
"""

from __future__ import annotations

import numpy as np

from icml26.common.validation import check_array, check_choice, check_float, check_int
from icml26.tie.dist import LogNormal, LogT, _check_alpha

__all__ = ["tie_score", "tie_terms", "adaptive_beta", "starvation_decay"]


def tie_terms(mu, sigma, alpha: float = 0.9, nu: float = 3.5, max_tokens: int = 2048,
              family: str = "logt") -> tuple[np.ndarray, np.ndarray]:
    """(E[min(X, L)], CVaR_alpha[min(X, L)]) in tokens, each of the broadcast shape of mu and sigma.

    Computing both once lets a queue re-weight them with a new β cheaply: TIE = mean + β·cvar.
    family: "logt" (default, ν = nu) or "lognormal" (ablation).
    """
    alpha = _check_alpha(alpha)
    max_tokens = check_float(max_tokens, "max_tokens", min=1.0)
    check_choice(family, "family", ("logt", "lognormal"))
    if family == "logt":
        d = LogT(mu, sigma, nu=nu, max_tokens=max_tokens)
    else:
        d = LogNormal(mu, sigma, max_tokens=max_tokens)
    return d.censored_mean(), d.cvar(alpha)


def _check_beta(beta) -> np.ndarray:
    if isinstance(beta, str):
        raise TypeError(f"beta must be a number (or an array of numbers) >= 0, got the str {beta!r}; for the "
                        "adaptive tail weight of Eq. 12 pass adaptive_beta(queue_len, max_num_seqs)")
    b = check_array(beta, "beta")
    if np.any(b < 0):
        raise ValueError(f"beta must be >= 0, got {beta!r}")
    return b


def tie_score(mu, sigma, alpha: float = 0.9, beta: float = 0.1, nu: float = 3.5, max_tokens: int = 2048,
              family: str = "logt") -> np.ndarray:
    """TIE = E[min(X, L)] + beta · CVaR_alpha[min(X, L)] (paper Eq. 11), in tokens; lower = scheduled earlier.

    Args:
        mu, sigma: predicted log-t location/scale (arrays broadcast; sigma > 0).
        alpha: CVaR level in (0, 1) (code: a = 90 -> 0.9).
        beta: tail weight >= 0 (scalar or array broadcast with mu); see `adaptive_beta`.
        nu: Student-t degrees of freedom.
        max_tokens: L, the censoring point (tokens).
    Returns:
        scores with values in [1, (1 + beta)·L].
    """
    beta_arr = _check_beta(beta)
    mean, cvar = tie_terms(mu, sigma, alpha=alpha, nu=nu, max_tokens=max_tokens, family=family)
    try:
        return mean + beta_arr * cvar
    except ValueError:
        raise ValueError(f"beta (shape {beta_arr.shape}) must broadcast against mu/sigma (shape {mean.shape})"
                         ) from None


def adaptive_beta(queue_len: int, max_num_seqs: int, base: float = 0.1, lo: float = 0.1,
                  hi: float = 0.5) -> float:
    """β = min(hi, max(lo, base · queue_len / max_num_seqs)) (paper Eq. 12).

    A long waiting queue (many requests per batch slot) makes a long request more costly to everyone behind it,
    so the tail weight grows with queue pressure. Evaluated when the score is computed (prediction time).
    """
    max_num_seqs = check_int(max_num_seqs, "max_num_seqs", min=1)
    queue_len = check_int(queue_len, "queue_len", min=0)
    base = check_float(base, "base", min=0.0)
    lo = check_float(lo, "lo", min=0.0)
    hi = check_float(hi, "hi", min=0.0)
    if lo > hi:
        raise ValueError(f"need lo <= hi, got lo={lo}, hi={hi}")
    return float(min(hi, max(lo, base * queue_len / max_num_seqs)))


def starvation_decay(score, wait_s, gamma: float = 0.9, tau: float = 30.0):
    """Effective priority score · gamma^(wait_s / tau) (paper §5): long waiters drift to the queue head.

    Args:
        score: TIE score(s) (>= 0, tokens).
        wait_s: waiting time(s) in seconds (>= 0).
        gamma: decay per tau seconds, in (0, 1] (1 disables the decay).
        tau: time constant in seconds (> 0).
    """
    gamma, tau = check_decay(gamma, tau)
    w = check_array(wait_s, "wait_s", min_size=0)
    if np.any(w < 0):
        raise ValueError("wait_s must be >= 0")
    s = check_array(score, "score", min_size=0)
    if np.any(s < 0):
        raise ValueError("score must be >= 0")
    try:
        out = s * np.power(gamma, w / tau)
    except ValueError:
        raise ValueError(f"score (shape {s.shape}) and wait_s (shape {w.shape}) must broadcast") from None
    return float(out) if out.ndim == 0 else out


def check_decay(gamma, tau) -> tuple[float, float]:
    """Validated (gamma in (0, 1], tau > 0) of the starvation decay."""
    gamma = check_float(gamma, "gamma", min=0.0, max=1.0, min_open=True)
    tau = check_float(tau, "tau", min=0.0, min_open=True)
    return gamma, tau
