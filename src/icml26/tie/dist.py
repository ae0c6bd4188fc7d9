"""Output-length distributions of TIE (spec §2.1-2.2): log-t (default, ν = 3.5) and log-normal (ablation).

A response length X (tokens) has log X = μ + σ·Z with Z ~ Student-t_ν (`LogT`) or N(0, 1) (`LogNormal`).
The serving engine caps lengths at L = max_tokens, so the scheduler reasons about the censored variable
min(X, L): `censored_mean()` = E[min(X, L)] and `cvar(α)` = CVaR_α[min(X, L)] = mean of min(X, L) above its
α-quantile, the two terms of the TIE score (paper Eq. 11).

Both are computed deterministically: with Q(u) = exp(μ + σ·F⁻¹(u)) the quantile function and u_L = F((log L
- μ)/σ), E[min(X, L)] = ∫₀^{u_L} Q(u) du + (1 - u_L)·L and CVaR_α = (∫_α^{max(α,u_L)} Q(u) du + (1 -
max(α, u_L))·L)/(1 - α). The integrals use Gauss-Legendre quadrature in u (after the substitution u = a + (b -
a)·(1 - (1 - s)²), which tames the steep growth of Q near u_L ≈ 1). The official code uses 10 000 Monte-Carlo
samples and censors the mean at 2028 but the CVaR at 2048 (spec §2.4); we use L for both.

`fit_logt` is the vectorised EM/IRLS maximum-likelihood fit over many prompts with ν fixed (spec §2.2).
Right-censoring at `censor_at` is a reconstruction [R] (the official fitting script is not released): when
asked for, the EM estimate is refined by maximising the censored likelihood (uncensored log-density plus
log-survival of the censored lengths) with L-BFGS over all prompts at once (sigma kept >= sigma_floor). A prompt
whose every length is censored has no finite maximum-likelihood estimate (mu -> inf); it keeps the uncensored
estimate, a lower bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from scipy import special, stats

from icml26.common.validation import check_array, check_float, check_int

ArrayLike = float | Sequence[float] | np.ndarray

_N_QUAD = 96  # Gauss-Legendre nodes per interval; rtol < 1e-4 against scipy.quad on the spec's references


@lru_cache(maxsize=4)
def _gl_nodes(n: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.legendre.leggauss(n)
    return (x + 1) / 2, w / 2  # nodes/weights on [0, 1]


class _LogLocationScale:
    """log X = mu + sigma * Z for a standard location-scale family Z; arrays broadcast elementwise."""

    family = ""

    def __init__(self, mu: ArrayLike, sigma: ArrayLike, max_tokens: float = 2048) -> None:
        mu = check_array(mu, "mu")
        sigma = check_array(sigma, "sigma")
        if np.any(sigma <= 0):
            raise ValueError("sigma must be > 0")
        try:
            mu, sigma = np.broadcast_arrays(mu, sigma)
        except ValueError:
            raise ValueError(f"mu and sigma must broadcast to one shape, got shapes {mu.shape} and "
                             f"{sigma.shape}") from None
        self.mu, self.sigma = mu, sigma
        self.max_tokens = check_float(max_tokens, "max_tokens", min=1.0)

    # the standard variable Z --------------------------------------------------------------------------------
    def _z_cdf(self, z):
        raise NotImplementedError

    def _z_ppf(self, u):
        raise NotImplementedError

    def _z_logpdf(self, z):
        raise NotImplementedError

    def _z_logsf(self, z):
        raise NotImplementedError

    # the length X (uncensored) -------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.mu.shape

    def _against(self, a: np.ndarray, name: str) -> np.ndarray:
        try:
            np.broadcast_shapes(a.shape, self.shape)
        except ValueError:
            raise ValueError(f"{name} (shape {a.shape}) must broadcast against mu/sigma (shape {self.shape})"
                             ) from None
        return a

    def _z(self, x) -> np.ndarray:
        x = self._against(check_array(x, "x (lengths)", min_size=0), "x (lengths)")
        if np.any(x < 0):
            raise ValueError("x (lengths) must be >= 0")
        with np.errstate(divide="ignore"):
            return (np.log(x) - self.mu) / self.sigma

    def cdf(self, x: ArrayLike) -> np.ndarray:
        """P(X <= x) of the uncensored length (x >= 0, broadcast against mu)."""
        return self._z_cdf(self._z(x))

    def sf(self, x: ArrayLike) -> np.ndarray:
        """P(X > x)."""
        return 1.0 - self.cdf(x)

    def logpdf(self, x: ArrayLike) -> np.ndarray:
        """log density of X at x > 0 (per token): log f_Z(z) - log sigma - log x."""
        x = self._against(check_array(x, "x (lengths)", min_size=0), "x (lengths)")
        if np.any(x <= 0):
            raise ValueError("x (lengths) must be > 0 for logpdf")
        return self._z_logpdf(self._z(x)) - np.log(self.sigma) - np.log(x)

    def censored_logpdf(self, x: ArrayLike) -> np.ndarray:
        """Log-likelihood of observed lengths with right-censoring at max_tokens: logpdf(x) for x < L and
        log P(X >= L) for x >= L (the engine stopped the response)."""
        x = self._against(check_array(x, "x (lengths)", min_size=0), "x (lengths)")
        if np.any(x <= 0):
            raise ValueError("x (lengths) must be > 0")
        cens = x >= self.max_tokens
        xs = np.where(cens, 1.0, x)
        unc = self._z_logpdf(self._z(xs)) - np.log(self.sigma) - np.log(xs)
        zl = (np.log(self.max_tokens) - self.mu) / self.sigma
        return np.where(cens, self._z_logsf(zl) + 0 * unc, unc)

    def quantile(self, q: ArrayLike, censored: bool = False) -> np.ndarray:
        """q-quantile of X (or of min(X, L) with censored=True); q in (0, 1)."""
        q = self._against(check_array(q, "q", min_size=0), "q")
        if np.any((q <= 0) | (q >= 1)):
            raise ValueError("q must be in (0, 1)")
        with np.errstate(over="ignore"):  # a quantile beyond the float range is inf (capped at L if censored)
            out = np.exp(self.mu + self.sigma * self._z_ppf(q))
        return np.minimum(out, self.max_tokens) if censored else out

    def median(self) -> np.ndarray:
        """exp(mu) (both families are symmetric in log space)."""
        return np.exp(self.mu)

    def sample(self, n: int, rng: np.random.Generator | int | None = None, discrete: bool = True) -> np.ndarray:
        """n draws per distribution -> (n, *shape). discrete=True: clip(round(X), 1, L) as int (the W1 generator);
        else the continuous X capped at L."""
        n = check_int(n, "n", min=1, max=max(1, 10**8 // max(1, self.mu.size)))
        rng = np.random.default_rng(rng)
        z = self._draw_z(rng, (n,) + self.shape)
        x = np.exp(np.minimum(self.mu + self.sigma * z, 50.0))
        if discrete:
            return np.clip(np.rint(x), 1, self.max_tokens).astype(np.int64)
        return np.minimum(x, self.max_tokens)

    def _draw_z(self, rng, size):
        raise NotImplementedError

    # the censored variable min(X, L) -------------------------------------------------------------------------
    def _int_q(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """∫_a^b Q(u) du elementwise (0 <= a <= b < 1), Gauss-Legendre after u = a + (b-a)(1-(1-s)^2)."""
        s, w = _gl_nodes(_N_QUAD)
        a, b = a[..., None], b[..., None]
        u = a + (b - a) * (1 - (1 - s) ** 2)
        du = (b - a) * 2 * (1 - s)
        u = np.clip(u, 1e-300, 1 - 1e-16)
        # every caller integrates below u_L, where Q(u) <= L: capping the log-quantile at log L is exact and keeps
        # extreme (mu, sigma) from overflowing to inf (and inf * 0 to NaN)
        with np.errstate(over="ignore", invalid="ignore"):
            logq = self.mu[..., None] + self.sigma[..., None] * self._z_ppf(u)
        q = np.exp(np.minimum(logq, np.log(self.max_tokens)))
        return np.sum(w * q * du, axis=-1)

    def _u_l(self) -> np.ndarray:
        with np.errstate(over="ignore", divide="ignore"):
            return self._z_cdf((np.log(self.max_tokens) - self.mu) / self.sigma)

    def censored_mean(self) -> np.ndarray:
        """E[min(X, L)] in tokens (shape of mu)."""
        ul = np.minimum(self._u_l(), 1 - 1e-16)
        return self._int_q(np.zeros_like(ul), ul) + (1 - ul) * self.max_tokens

    def cvar(self, alpha: float = 0.9) -> np.ndarray:
        """CVaR_alpha[min(X, L)] = E[min(X, L) | above its alpha-quantile] in tokens, alpha in (0, 1)."""
        alpha = _check_alpha(alpha)
        ul = np.minimum(self._u_l(), 1 - 1e-16)
        hi = np.maximum(ul, alpha)
        a = np.full_like(ul, alpha)
        return (self._int_q(a, hi) + (1 - hi) * self.max_tokens) / (1 - alpha)

    def var(self, alpha: float = 0.9) -> np.ndarray:
        """Value-at-risk: the alpha-quantile of min(X, L)."""
        return self.quantile(_check_alpha(alpha), censored=True)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, max_tokens={self.max_tokens:g})"


class LogT(_LogLocationScale):
    """Log-t length distribution: log X = mu + sigma * T_nu (spec §2.1; nu = 3.5 fixed in the paper's code).

    Args:
        mu, sigma: location and scale of log X (arrays broadcast; sigma > 0).
        nu: degrees of freedom (> 0).
        max_tokens: L, the engine's generation cap (censoring point of `censored_mean`/`cvar`).
    """

    family = "logt"

    def __init__(self, mu: ArrayLike, sigma: ArrayLike, nu: float = 3.5, max_tokens: float = 2048) -> None:
        super().__init__(mu, sigma, max_tokens)
        self.nu = check_float(nu, "nu", min=0.0, min_open=True)

    def _z_cdf(self, z):
        return special.stdtr(self.nu, z)

    def _z_ppf(self, u):
        return special.stdtrit(self.nu, u)

    def _z_logpdf(self, z):
        return stats.t.logpdf(z, self.nu)

    def _z_logsf(self, z):
        return stats.t.logsf(z, self.nu)

    def _draw_z(self, rng, size):
        return rng.standard_t(self.nu, size=size)


class LogNormal(_LogLocationScale):
    """Log-normal length distribution (the ablation of spec §2.1): log X = mu + sigma * N(0, 1)."""

    family = "lognormal"

    def _z_cdf(self, z):
        return special.ndtr(z)

    def _z_ppf(self, u):
        return special.ndtri(u)

    def _z_logpdf(self, z):
        return -0.5 * z * z - 0.5 * np.log(2 * np.pi)

    def _z_logsf(self, z):
        return special.log_ndtr(-z)

    def _draw_z(self, rng, size):
        return rng.standard_normal(size)


def _check_alpha(alpha: float) -> float:
    return check_float(alpha, "alpha", min=0.0, max=1.0, min_open=True, max_open=True)


# ------------------------------------------------------------------------------------------------ fitting
def _pad(samples, name: str = "samples") -> tuple[np.ndarray, np.ndarray]:
    """(n, k) array / list of equal rows, or a ragged list of 1-D rows -> (values (n, kmax), mask (n, kmax) bool).

    A flat list of numbers is read exactly like the 1-D array it equals (and refused the same way): one prompt's
    k lengths are passed as `[lengths]` (shape (1, k)).
    """
    if isinstance(samples, (str, bytes)) or samples is None:
        raise TypeError(f"{name} must be an (n_prompts, k) array or a list of 1-D arrays of lengths, got "
                        f"{type(samples).__name__}")
    if hasattr(samples, "detach") and hasattr(samples, "cpu"):  # torch tensor
        samples = samples.detach().cpu().numpy()
    try:
        raw = np.asarray(samples)
        rectangular = raw.dtype != object
    except ValueError:  # ragged nested lists
        rectangular = False
    if rectangular:
        if raw.ndim != 2:
            hint = " (one prompt's k lengths: pass [lengths], shape (1, k))" if raw.ndim == 1 else ""
            raise ValueError(f"{name} must be 2-D (n_prompts, k) or a list of 1-D arrays, got shape "
                             f"{raw.shape}{hint}")
        x = check_array(raw, name, ndim=2, finite=False)
        if x.shape[0] == 0 or x.shape[1] == 0:
            raise ValueError(f"{name} must contain at least one prompt with at least one length, got shape "
                             f"{x.shape}")
        return x, np.ones_like(x, dtype=bool)
    rows = [check_array(r, f"{name}[{i}]", ndim=1, finite=False, min_size=0) for i, r in enumerate(samples)]
    if not rows:
        raise ValueError(f"{name} must contain at least one prompt")
    if any(len(r) == 0 for r in rows):
        raise ValueError(f"every row of {name} needs at least one length")
    kmax = max(len(r) for r in rows)
    x = np.ones((len(rows), kmax))
    m = np.zeros((len(rows), kmax), dtype=bool)
    for i, r in enumerate(rows):
        x[i, :len(r)] = r
        m[i, :len(r)] = True
    return x, m


def _check_fit_args(censor_at, sigma_floor) -> tuple[float | None, float]:
    sigma_floor = check_float(sigma_floor, "sigma_floor", min=0.0, min_open=True)
    if censor_at is not None:
        censor_at = check_float(censor_at, "censor_at", min=0.0, min_open=True)
    return censor_at, sigma_floor


def _ks_pvalues(z: np.ndarray, mask: np.ndarray, cdf) -> np.ndarray:
    """One-sample KS p-value per row of standardised values z (n, k) against `cdf` (rows may be ragged)."""
    n_obs = mask.sum(1)
    zs = np.sort(np.where(mask, z, np.inf), axis=1)
    F = cdf(np.where(np.isfinite(zs), zs, 0.0))
    i = np.arange(1, zs.shape[1] + 1)[None, :]
    nn = n_obs[:, None].astype(float)
    d = np.maximum(i / nn - F, F - (i - 1) / nn)
    d = np.where(np.isfinite(zs), d, 0.0).max(1)
    return stats.kstwo.sf(d, n_obs)


def fit_logt(samples, nu: float = 3.5, censor_at: float | None = None, n_iter: int = 50,
             sigma_floor: float = 1e-2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximum-likelihood (mu, sigma) of the log-t length model per prompt, nu fixed (spec §2.2).

    EM / IRLS on y = log x, all prompts at once: w = (nu+1)/(nu + ((y-mu)/sigma)^2), mu <- Σwy/Σw,
    sigma^2 <- mean(w (y-mu)^2), `n_iter` iterations from (median, 1.4826·MAD).

    Args:
        samples: lengths (tokens, > 0) as an (n_prompts, k) array or a ragged list of 1-D arrays.
        nu: Student-t degrees of freedom (fixed).
        censor_at: if given, lengths >= censor_at are right-censored [R] (refined by censored-likelihood L-BFGS).
        n_iter: EM iterations (30-50 suffice).
        sigma_floor: lower bound of sigma (degenerate rows with identical lengths get it; no NaN).
    Returns:
        mu (n,), sigma (n,), ks_pvalue (n,): KS p-value of the fitted t_nu against the standardised log-lengths
        (parameters estimated from the same data, so it is optimistic - the official training CSV's column).
    """
    nu = check_float(nu, "nu", min=0.0, min_open=True)
    n_iter = check_int(n_iter, "n_iter", min=1)
    censor_at, sigma_floor = _check_fit_args(censor_at, sigma_floor)
    x, m = _pad(samples)
    if np.any(~np.isfinite(x[m])) or np.any(x[m] <= 0):
        raise ValueError("samples (lengths) must be finite and > 0")
    y = np.log(x)
    cnt = m.sum(1)
    mu = np.array([np.median(r[mm]) for r, mm in zip(y, m)])
    mad = np.array([np.median(np.abs(r[mm] - c)) for r, mm, c in zip(y, m, mu)])
    sigma = np.maximum(1.4826 * mad, np.maximum(y.std(1, where=m), sigma_floor))
    for _ in range(n_iter):
        r = (y - mu[:, None]) / sigma[:, None]
        w = np.where(m, (nu + 1) / (nu + r * r), 0.0)
        mu = (w * y).sum(1) / w.sum(1)
        s2 = (w * (y - mu[:, None]) ** 2).sum(1) / cnt
        sigma = np.maximum(np.sqrt(s2), sigma_floor)
    if censor_at is not None:
        mu, sigma = _censored_refine(y, m, mu, sigma, float(censor_at), sigma_floor,
                                     lambda z: _t_logpdf_torch(z, nu), lambda z: _t_logsf_torch(z, nu))
    z = (y - mu[:, None]) / sigma[:, None]
    ks = _ks_pvalues(z, m, lambda v: special.stdtr(nu, v))
    return mu, sigma, ks


def fit_lognormal(samples, censor_at: float | None = None,
                  sigma_floor: float = 1e-2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximum-likelihood (mu, sigma) of the log-normal model per prompt (mean and ML std of log lengths);
    same arguments and returns as `fit_logt`."""
    censor_at, sigma_floor = _check_fit_args(censor_at, sigma_floor)
    x, m = _pad(samples)
    if np.any(~np.isfinite(x[m])) or np.any(x[m] <= 0):
        raise ValueError("samples (lengths) must be finite and > 0")
    y = np.log(x)
    mu = (y * m).sum(1) / m.sum(1)
    sigma = np.maximum(np.sqrt((((y - mu[:, None]) ** 2) * m).sum(1) / m.sum(1)), sigma_floor)
    if censor_at is not None:
        import torch

        def logpdf(z):
            return -0.5 * z * z - 0.5 * np.log(2 * np.pi)

        def logsf(z):
            return torch.special.log_ndtr(-z)

        mu, sigma = _censored_refine(y, m, mu, sigma, float(censor_at), sigma_floor, logpdf, logsf)
    z = (y - mu[:, None]) / sigma[:, None]
    return mu, sigma, _ks_pvalues(z, m, special.ndtr)


def _t_logpdf_torch(z, nu: float):
    import torch

    c = (special.gammaln((nu + 1) / 2) - special.gammaln(nu / 2) - 0.5 * np.log(nu * np.pi))
    return c - (nu + 1) / 2 * torch.log1p(z * z / nu)


def _t_logsf_torch(z, nu: float, n_grid: int = 0):
    """log P(T > z) for T ~ t_nu, differentiable: via the regularised incomplete beta of scipy in a custom
    autograd function (derivative = -pdf/sf)."""
    import torch

    class _LogSF(torch.autograd.Function):
        @staticmethod
        def forward(ctx, zz):
            zn = zz.detach().cpu().double().numpy()
            val = torch.as_tensor(stats.t.logsf(zn, nu), dtype=zz.dtype).to(zz.device)
            ctx.save_for_backward(zz, val)
            return val

        @staticmethod
        def backward(ctx, g):
            zz, val = ctx.saved_tensors
            return -g * torch.exp(_t_logpdf_torch(zz, nu) - val)

    return _LogSF.apply(z)


def _censored_refine(y, m, mu, sigma, censor_at, sigma_floor, logpdf, logsf, steps: int = 30):
    """Maximise Σ [uncensored: logpdf(z) - log sigma ; censored: logsf(z_c)] over (mu, log sigma) per row."""
    import torch

    c = np.log(censor_at)
    cens = (y >= c - 1e-12) & m
    # a row whose every length is censored has no finite maximum (the likelihood grows as mu -> inf): it keeps its
    # uncensored EM estimate, a lower bound; the others are refined jointly
    rows = np.flatnonzero(cens.any(1) & (cens.sum(1) < m.sum(1)))
    if rows.size == 0:
        return mu, sigma
    mu, sigma = mu.copy(), sigma.copy()
    y_r, m_r, cens_r = y[rows], m[rows], cens[rows]
    Y = torch.as_tensor(y_r, dtype=torch.float64)
    M = torch.as_tensor(m_r & ~cens_r, dtype=torch.float64)
    C = torch.as_tensor(cens_r.sum(1), dtype=torch.float64)
    p_mu = torch.tensor(mu[rows], dtype=torch.float64, requires_grad=True)
    p_ls = torch.tensor(np.log(sigma[rows]), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([p_mu, p_ls], max_iter=steps, line_search_fn="strong_wolfe")
    log_floor = float(np.log(sigma_floor))

    def closure():
        opt.zero_grad()
        ls = torch.clamp(p_ls, min=log_floor)  # sigma >= sigma_floor: a lone uncensored length cannot collapse it
        s = torch.exp(ls)
        z = (Y - p_mu[:, None]) / s[:, None]
        ll = ((logpdf(z) - ls[:, None]) * M).sum() + (C * logsf((c - p_mu) / s)).sum()
        loss = -ll
        loss.backward()
        return loss

    opt.step(closure)
    new_mu = p_mu.detach().numpy()
    new_sigma = np.maximum(np.exp(p_ls.detach().numpy()), sigma_floor)
    ok = np.isfinite(new_mu) & np.isfinite(new_sigma)  # a failed line search keeps the EM estimate of its row
    mu[rows[ok]], sigma[rows[ok]] = new_mu[ok], new_sigma[ok]
    return mu, sigma
