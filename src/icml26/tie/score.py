"""The TIE score (paper Eq. 11), its adaptive tail weight β (Eq. 12) and starvation decay (§5).

    TIE(μ, σ) = E[min(X, L)] + β · CVaR_α[min(X, L)],  log X ~ μ + σ·t_ν,  α = 0.9, L = max_tokens = 2048
    β = min(hi, max(lo, base · L_q / B))             (Eq. 12: L_q waiting-queue length, B = max_num_seqs)
    effective = TIE · γ^(t_wait / τ)                 (starvation prevention: γ = 0.9, τ = 30 s)

The official code (`mean_add_n_cvar`) estimates both terms by Monte Carlo (10 000 samples) and censors the mean
at 2028 but the CVaR at 2048; here both are deterministic quadratures censored at L (see `tie.dist`).
"""

from __future__ import annotations

import numpy as np

from icml26.tie.dist import LogNormal, LogT, _check_alpha

__all__ = ["tie_score", "tie_terms", "adaptive_beta", "starvation_decay"]


def tie_terms(mu, sigma, alpha: float = 0.9, nu: float = 3.5, max_tokens: int = 2048,
              family: str = "logt") -> tuple[np.ndarray, np.ndarray]:
    """(E[min(X, L)], CVaR_alpha[min(X, L)]) in tokens, each of the broadcast shape of mu and sigma.

    Computing both once lets a queue re-weight them with a new β cheaply: TIE = mean + β·cvar.
    family: "logt" (default, ν = nu) or "lognormal" (ablation).
    """
    _check_alpha(alpha)
    if not np.isscalar(max_tokens) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a scalar >= 1, got {max_tokens!r}")
    if family == "logt":
        d = LogT(mu, sigma, nu=nu, max_tokens=max_tokens)
    elif family == "lognormal":
        d = LogNormal(mu, sigma, max_tokens=max_tokens)
    else:
        raise ValueError(f"family must be 'logt' or 'lognormal', got {family!r}")
    return d.censored_mean(), d.cvar(alpha)


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
    beta_arr = np.asarray(beta, dtype=float)
    if np.any(~np.isfinite(beta_arr)) or np.any(beta_arr < 0):
        raise ValueError(f"beta must be finite and >= 0, got {beta!r}")
    mean, cvar = tie_terms(mu, sigma, alpha=alpha, nu=nu, max_tokens=max_tokens, family=family)
    return mean + beta_arr * cvar


def adaptive_beta(queue_len: int, max_num_seqs: int, base: float = 0.1, lo: float = 0.1,
                  hi: float = 0.5) -> float:
    """β = min(hi, max(lo, base · queue_len / max_num_seqs)) (paper Eq. 12).

    A long waiting queue (many requests per batch slot) makes a long request more costly to everyone behind it,
    so the tail weight grows with queue pressure. Evaluated when the score is computed (prediction time).
    """
    if not isinstance(max_num_seqs, (int, np.integer)) or isinstance(max_num_seqs, bool):
        raise TypeError(f"max_num_seqs must be an int, got {type(max_num_seqs).__name__}")
    if max_num_seqs <= 0:
        raise ValueError(f"max_num_seqs must be > 0, got {max_num_seqs}")
    if queue_len < 0:
        raise ValueError(f"queue_len must be >= 0, got {queue_len}")
    if not 0 <= lo <= hi:
        raise ValueError(f"need 0 <= lo <= hi, got lo={lo}, hi={hi}")
    return float(min(hi, max(lo, base * queue_len / max_num_seqs)))


def starvation_decay(score, wait_s, gamma: float = 0.9, tau: float = 30.0):
    """Effective priority score · gamma^(wait_s / tau) (paper §5): long waiters drift to the queue head.

    Args:
        score: TIE score(s) (>= 0, tokens).
        wait_s: waiting time(s) in seconds (>= 0).
        gamma: decay per tau seconds, in (0, 1] (1 disables the decay).
        tau: time constant in seconds (> 0).
    """
    if not (np.isscalar(gamma) and 0 < gamma <= 1):
        raise ValueError(f"gamma must be in (0, 1], got {gamma!r}")
    if not (np.isscalar(tau) and tau > 0):
        raise ValueError(f"tau must be > 0, got {tau!r}")
    w = np.asarray(wait_s, dtype=float)
    if np.any(w < 0):
        raise ValueError("wait_s must be >= 0")
    out = np.asarray(score, dtype=float) * np.power(gamma, w / tau)
    return float(out) if out.ndim == 0 else out
