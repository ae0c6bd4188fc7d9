"""The TIE output-length predictor (spec §2.3): prompt -> (μ, σ) of a log-t length distribution.

Architecture (official `train/model_train.py`): encoder features -> two independent branches (μ and σ), each
Linear(d→256)-LayerNorm-GELU-Dropout(0.2)-Linear(256→256)-LayerNorm-GELU-Dropout(0.2) -> head
Linear(256→128)-GELU-Dropout(0.1)-Linear(128→1). Targets normalised: μ z-scored; σ -> log1p(σ) then z-scored
(train-split statistics, saved with the model). Loss MSE(μ) + w_σ·MSE(σ), w_σ rising linearly 3 -> 4 over the
epochs; AdamW (weight decay 0.01), linear warmup over 10% of the steps then linear decay, grad-clip 1.0, batch 32,
WeightedRandomSampler (weight 1.5 if μ > 5.5 or σ > 1.0; 2.0 if μ > 6.0 or σ > 1.3).

Deviations (CPU version, spec §2.3): the encoder is frozen (embeddings computed once, e.g. MiniLM, 384-d),
so only the head trains; with a frozen encoder the paper's fine-tuning learning rates (2e-5 / 5e-5) are far too
small for a freshly initialised head, so the default is lr = 1e-3 (documented in docs/tie.md). Input features
are standardised with training statistics. No validation split inside `fit` (the caller holds out data).
Optional [R] `target="nll"`: train directly on observed lengths with the (censored) log-t negative
log-likelihood, σ = softplus(head) + 1e-3 — usable with a single sample per prompt.
`family="lognormal"` gives the identically trained log-normal ablation (targets from `fit_lognormal`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from icml26.common.validation import check_array, check_bool, check_choice, check_float, check_int, check_seed
from icml26.tie.dist import LogNormal, LogT, _t_logsf_torch, fit_lognormal, fit_logt
from icml26.tie.encoders import check_texts
from icml26.tie.score import adaptive_beta, tie_score

__all__ = ["LogTLengthPredictor", "Branch", "TwoBranchHead", "encode_features"]


class Branch(nn.Module):
    """One branch + head of the official model: (n, d) -> (n,)."""

    def __init__(self, in_dim: int, hidden: int = 256, dropout: float = 0.2, head_dropout: float = 0.1) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.LayerNorm(hidden), nn.GELU(), nn.Dropout(dropout),
            nn.Linear(hidden, hidden), nn.LayerNorm(hidden), nn.GELU(), nn.Dropout(dropout))
        self.head = nn.Sequential(nn.Linear(hidden, 128), nn.GELU(), nn.Dropout(head_dropout), nn.Linear(128, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x)).squeeze(-1)


class TwoBranchHead(nn.Module):
    """Independent μ and σ branches: features (n, d) -> (μ-output (n,), σ-output (n,))."""

    def __init__(self, in_dim: int, hidden: int = 256, dropout: float = 0.2) -> None:
        super().__init__()
        self.mu = Branch(in_dim, hidden, dropout)
        self.sigma = Branch(in_dim, hidden, dropout)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.mu(x), self.sigma(x)


def encode_features(encoder: Any, prompts: Sequence[str]) -> np.ndarray:
    """Run `encoder.encode(prompts)` and check the result is a finite (n, d) array."""
    if not hasattr(encoder, "encode"):
        raise TypeError(f"encoder must have encode(list[str]) -> array, got {type(encoder).__name__}")
    X = np.asarray(encoder.encode(list(prompts)), dtype=np.float32)
    if X.ndim != 2 or X.shape[0] != len(prompts):
        raise ValueError(f"encoder returned shape {X.shape}, expected ({len(prompts)}, dim)")
    if not np.all(np.isfinite(X)):
        raise ValueError("encoder returned non-finite features")
    return X


def sampler_weights(mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """Official WeightedRandomSampler weights: 1, 1.5 if μ > 5.5 or σ > 1.0, 2.0 if μ > 6.0 or σ > 1.3."""
    w = np.ones(len(mu))
    w[(mu > 5.5) | (sigma > 1.0)] = 1.5
    w[(mu > 6.0) | (sigma > 1.3)] = 2.0
    return w


def warmup_linear(step: int, total: int, warmup_frac: float = 0.1) -> float:
    warm = max(1, int(round(warmup_frac * total)))
    if step < warm:
        return (step + 1) / warm
    return max(0.0, (total - step) / max(1, total - warm))


class _TorchEstimator:
    """Shared plumbing: feature standardisation, seeding, the training loop and save/load."""

    @property
    def _dev(self) -> torch.device:
        return torch.device(getattr(self, "device", "cpu"))

    def _seed(self) -> torch.Generator:
        torch.manual_seed(self.seed)
        g = torch.Generator()
        g.manual_seed(self.seed)
        return g

    def _features(self, prompts: Sequence[str], fit: bool = False) -> torch.Tensor:
        prompts = check_texts(prompts)
        if fit and hasattr(self.encoder, "fit"):
            self.encoder.fit(prompts)
        X = encode_features(self.encoder, prompts)
        if fit:
            self.x_mean_ = X.mean(0)
            self.x_std_ = X.std(0) + 1e-6
        if not hasattr(self, "x_mean_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted: call fit() first")
        if X.shape[1] != self.x_mean_.shape[0]:
            raise ValueError(f"encoder dimension {X.shape[1]} != {self.x_mean_.shape[0]} seen in fit")
        return torch.as_tensor((X - self.x_mean_) / self.x_std_, dtype=torch.float32).to(self._dev)

    def _train(self, n: int, batch_loss, weights: np.ndarray | None, gen: torch.Generator) -> list[float]:
        """Minibatch AdamW loop; batch_loss(idx (b,) long, epoch) -> scalar loss. Returns per-epoch mean loss."""
        opt = torch.optim.AdamW(self.model_.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        per_epoch = max(1, math.ceil(n / self.batch_size))
        total = per_epoch * self.epochs
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: warmup_linear(s, total))
        hist = []
        self.model_.train()
        for ep in range(self.epochs):
            if weights is not None:
                order = torch.multinomial(torch.as_tensor(weights, dtype=torch.float64), n, replacement=True,
                                          generator=gen)
            else:
                order = torch.randperm(n, generator=gen)
            tot = 0.0
            for b in range(per_epoch):
                idx = order[b * self.batch_size:(b + 1) * self.batch_size]
                if len(idx) == 0:
                    continue
                loss = batch_loss(idx, ep)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(self.model_.parameters(), 1.0)
                opt.step()
                sched.step()
                tot += float(loss.detach()) * len(idx)
            hist.append(tot / n)
        self.model_.eval()
        return hist

    def _state(self) -> dict[str, Any]:
        raise NotImplementedError

    def save(self, path: str | Path) -> None:
        """Weights + normalisation statistics + constructor arguments (the encoder is not saved)."""
        if not hasattr(self, "model_"):
            raise RuntimeError("nothing to save: call fit() first")
        torch.save({"state_dict": self.model_.state_dict(), **self._state()}, Path(path))

    @classmethod
    def load(cls, path: str | Path, encoder: Any):
        """Rebuild a fitted estimator saved with `save`, using `encoder` (must be the one used in fit)."""
        blob = torch.load(Path(path), map_location="cpu", weights_only=False)
        est = cls(encoder, **blob["params"])
        for k, v in blob["stats"].items():
            setattr(est, k, v)
        est.model_ = est._build(len(est.x_mean_)).to(est._dev)
        est.model_.load_state_dict(blob["state_dict"])
        est.model_.eval()
        return est


class LogTLengthPredictor(_TorchEstimator):
    """Predicts the log-t (μ, σ) of a prompt's output length; scikit-learn style, torch inside.

    Args:
        encoder: object with `encode(list[str]) -> (n, d)` (MiniLMEncoder, HFEncoder, HashingEncoder, ...).
        hidden: branch width (256).
        nu: Student-t degrees of freedom (3.5).
        target: "fit" (regress per-prompt fitted (μ, σ); paper) or "nll" (log-t NLL on observed lengths, [R]).
        family: "logt" (default) or "lognormal" (ablation; same training, Gaussian instead of t).
        epochs, lr, batch_size, weight_decay, dropout: training (defaults: 20 as the paper's recipe, 1e-3, 32,
            0.01, 0.2).
        device: torch device of the head ("cpu", "cuda"); features are computed by the encoder on its own device.
        sample_weighting: the official WeightedRandomSampler.
        sigma_weight: (start, end) of the linearly rising σ-loss weight (3 -> 4).
        max_tokens: L for scores and censoring (2048).
        seed: torch seed (deterministic on a given machine).
    Attributes after fit: model_ (TwoBranchHead), mu_mean_, mu_std_, ls_mean_, ls_std_, loss_history_.
    """

    def __init__(self, encoder: Any, hidden: int = 256, nu: float = 3.5, target: str = "fit",
                 family: str = "logt", epochs: int = 20, lr: float = 1e-3, batch_size: int = 32,
                 weight_decay: float = 0.01, dropout: float = 0.2, sample_weighting: bool = True,
                 sigma_weight: tuple[float, float] = (3.0, 4.0), max_tokens: int = 2048, seed: int = 0,
                 device: str = "cpu") -> None:
        self.encoder, self.hidden, self.nu, self.target, self.family = encoder, hidden, nu, target, family
        self.epochs, self.lr, self.batch_size = epochs, lr, batch_size
        self.weight_decay, self.dropout, self.sample_weighting = weight_decay, dropout, sample_weighting
        self.sigma_weight, self.max_tokens, self.seed = sigma_weight, max_tokens, seed
        self.device = device
        self._check_params()

    def _check_params(self) -> None:
        """Validate (and normalise) the hyperparameters; called by __init__ and again by fit (attributes may
        have been changed in between)."""
        _check_encoder(self.encoder)
        check_choice(self.target, "target", ("fit", "nll"))
        check_choice(self.family, "family", ("logt", "lognormal"))
        self.hidden = check_int(self.hidden, "hidden", min=1)
        self.epochs = check_int(self.epochs, "epochs", min=1)
        self.batch_size = check_int(self.batch_size, "batch_size", min=1)
        self.lr = check_float(self.lr, "lr", min=0.0, min_open=True)
        self.nu = check_float(self.nu, "nu", min=0.0, min_open=True)
        self.weight_decay = check_float(self.weight_decay, "weight_decay", min=0.0)
        self.dropout = check_float(self.dropout, "dropout", min=0.0, max=1.0, max_open=True)
        self.sample_weighting = check_bool(self.sample_weighting, "sample_weighting")
        sw = self.sigma_weight
        if isinstance(sw, str) or not hasattr(sw, "__len__") or len(sw) != 2:
            raise TypeError(f"sigma_weight must be a (start, end) pair of numbers, got {sw!r}")
        self.sigma_weight = (check_float(sw[0], "sigma_weight[0]", min=0.0),
                             check_float(sw[1], "sigma_weight[1]", min=0.0))
        self.max_tokens = check_int(self.max_tokens, "max_tokens", min=1)
        self.seed = check_seed(self.seed)
        if not isinstance(self.device, (str, torch.device)):
            raise TypeError(f"device must be a str such as 'cpu' or 'cuda', got {type(self.device).__name__}")
        self.device = str(self.device)

    def _params(self) -> dict[str, Any]:
        return dict(hidden=self.hidden, nu=self.nu, target=self.target, family=self.family, epochs=self.epochs,
                    lr=self.lr, batch_size=self.batch_size, weight_decay=self.weight_decay, dropout=self.dropout,
                    sample_weighting=self.sample_weighting, sigma_weight=self.sigma_weight,
                    max_tokens=self.max_tokens, seed=self.seed, device=self.device)

    def _build(self, d: int) -> TwoBranchHead:
        return TwoBranchHead(d, self.hidden, self.dropout)

    def _state(self) -> dict[str, Any]:
        keys = ("x_mean_", "x_std_", "mu_mean_", "mu_std_", "ls_mean_", "ls_std_")
        return {"params": self._params(), "stats": {k: getattr(self, k) for k in keys}}

    def fit(self, prompts: Sequence[str], mu=None, sigma=None, lengths=None) -> LogTLengthPredictor:
        """Train on prompts with either per-prompt fitted (mu, sigma) or raw `lengths`.

        Args:
            prompts: n prompt strings.
            mu, sigma: (n,) targets (target="fit").
            lengths: (n, k) array / ragged list of observed lengths (tokens >= 1); with target="fit" they are
                fitted per prompt (`fit_logt`/`fit_lognormal`), with target="nll" they are the training data
                ((n,) = one sample per prompt is allowed).
        """
        self._check_params()
        prompts = check_texts(prompts)
        n = len(prompts)
        gen = self._seed()
        if self.target == "fit":
            if (mu is None) != (sigma is None):
                raise ValueError("mu and sigma must be given together (or neither, with lengths)")
            if mu is None:
                if lengths is None:
                    raise ValueError("target='fit' needs mu and sigma, or lengths to fit them from")
                fitter = fit_logt if self.family == "logt" else fit_lognormal
                kw = {"nu": self.nu} if self.family == "logt" else {}
                mu, sigma, _ = fitter(_as_rows(lengths, n), **kw)
            elif lengths is not None:
                raise ValueError("give either mu and sigma or lengths, not both")
            mu = check_array(mu, "mu", shape=(n,))
            sigma = check_array(sigma, "sigma", shape=(n,))
            if np.any(sigma <= 0):
                raise ValueError("sigma must be > 0")
        else:
            if lengths is None:
                raise ValueError("target='nll' needs lengths")
            rows = _as_rows(lengths, n)
            mu0, sigma0, _ = fit_logt(rows, nu=self.nu) if self.family == "logt" else fit_lognormal(rows)
            mu, sigma = mu0, np.maximum(sigma0, 0.05)  # only for normalisation stats / sampler weights
        X = self._features(prompts, fit=True)
        self.mu_mean_, self.mu_std_ = float(mu.mean()), float(mu.std() + 1e-6)
        ls = np.log1p(sigma)
        self.ls_mean_, self.ls_std_ = float(ls.mean()), float(ls.std() + 1e-6)
        self.model_ = self._build(X.shape[1]).to(self._dev)
        weights = sampler_weights(mu, sigma) if self.sample_weighting else None
        if self.target == "fit":
            zm = torch.as_tensor((mu - self.mu_mean_) / self.mu_std_, dtype=torch.float32).to(self._dev)
            zs = torch.as_tensor((ls - self.ls_mean_) / self.ls_std_, dtype=torch.float32).to(self._dev)
            w0, w1 = self.sigma_weight

            def batch_loss(idx, ep):
                idx = idx.to(self._dev)
                pm, ps = self.model_(X[idx])
                ws = w0 + (w1 - w0) * ep / max(1, self.epochs - 1)
                return ((pm - zm[idx]) ** 2).mean() + ws * ((ps - zs[idx]) ** 2).mean()
        else:
            Y, M, C = (t.to(self._dev) for t in _nll_tensors(rows, self.max_tokens))

            def batch_loss(idx, ep):
                idx = idx.to(self._dev)
                pm, ps = self.model_(X[idx])
                m = pm * self.mu_std_ + self.mu_mean_
                s = nn.functional.softplus(ps) * float(np.expm1(self.ls_mean_)) + 1e-3
                return _nll(Y[idx], M[idx], C[idx], m, s, self.nu, self.family, self.max_tokens)

        self.loss_history_ = self._train(n, batch_loss, weights, gen)
        return self

    @torch.no_grad()
    def predict_params(self, prompts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(mu (n,), sigma (n,)) of log X for each prompt."""
        if not hasattr(self, "model_"):
            raise RuntimeError("LogTLengthPredictor is not fitted: call fit() first")
        X = self._features(prompts)
        pm, ps = self.model_(X)
        pm, ps = pm.cpu(), ps.cpu()
        mu = pm.numpy() * self.mu_std_ + self.mu_mean_
        if self.target == "fit":
            sigma = np.expm1(ps.numpy() * self.ls_std_ + self.ls_mean_)
        else:
            sigma = nn.functional.softplus(ps).numpy() * float(np.expm1(self.ls_mean_)) + 1e-3
        return mu.astype(float), np.maximum(sigma, 1e-2).astype(float)

    def predict_dist(self, prompts: Sequence[str]) -> LogT | LogNormal:
        """The predicted length distributions (vectorised `LogT`, or `LogNormal` for family='lognormal')."""
        mu, sigma = self.predict_params(prompts)
        if self.family == "logt":
            return LogT(mu, sigma, nu=self.nu, max_tokens=self.max_tokens)
        return LogNormal(mu, sigma, max_tokens=self.max_tokens)

    def predict(self, prompts: Sequence[str]) -> np.ndarray:
        """Predicted median length exp(mu) in tokens (n,) - the point estimate."""
        return np.exp(self.predict_params(prompts)[0])

    def predict_score(self, prompts: Sequence[str], beta: float | str = 0.1, queue_len: int = 0,
                      max_num_seqs: int = 32, alpha: float = 0.9) -> np.ndarray:
        """TIE scores (n,) = E[min(X,L)] + beta·CVaR_alpha (Eq. 11); beta="adaptive" uses Eq. 12 with queue_len."""
        if isinstance(beta, str):
            if beta != "adaptive":
                raise ValueError(f"beta must be a float or 'adaptive', got {beta!r}")
            beta = adaptive_beta(queue_len, max_num_seqs)
        else:
            beta = check_float(beta, "beta", min=0.0)
        mu, sigma = self.predict_params(prompts)
        return tie_score(mu, sigma, alpha=alpha, beta=beta, nu=self.nu, max_tokens=self.max_tokens,
                         family=self.family)


def _as_rows(lengths, n: int, name: str = "lengths") -> list[np.ndarray]:
    """(n,), (n, k) or ragged -> list of n 1-D float arrays of valid lengths (>= 1 token).

    A list is read like the equal array: [l_1, ..., l_n] is one sample per prompt, [[...], ...] one row per
    prompt (ragged rows allowed)."""
    if isinstance(lengths, (str, bytes)) or lengths is None:
        raise TypeError(f"{name} must be an array or list of lengths, got {type(lengths).__name__}")
    if hasattr(lengths, "detach") and hasattr(lengths, "cpu"):
        lengths = lengths.detach().cpu().numpy()
    try:
        raw = np.asarray(lengths)
        rectangular = raw.dtype != object
    except ValueError:
        rectangular = False
    if rectangular:
        arr = check_array(raw, name, ndim=(1, 2), min_size=0)
        rows = [r for r in (arr[:, None] if arr.ndim == 1 else arr)]
    else:
        rows = [check_array(r, f"{name}[{i}]", ndim=(0, 1), min_size=0).reshape(-1) for i, r in enumerate(lengths)]
    if len(rows) != n:
        raise ValueError(f"{name} must have one row per prompt ({n}), got {len(rows)}")
    for r in rows:
        if len(r) == 0 or np.any(r < 1):
            raise ValueError(f"{name} must be >= 1 (tokens) with at least one per prompt; negative lengths "
                             "are invalid")
    return [np.asarray(r, float) for r in rows]


def _check_encoder(encoder: Any) -> None:
    if not callable(getattr(encoder, "encode", None)):
        raise TypeError(f"encoder must have encode(list[str]) -> (n, d) array, got {type(encoder).__name__}")


def _nll_tensors(rows: list[np.ndarray], max_tokens: int):
    k = max(len(r) for r in rows)
    Y = np.zeros((len(rows), k))
    M = np.zeros((len(rows), k))
    for i, r in enumerate(rows):
        Y[i, :len(r)] = np.log(r)
        M[i, :len(r)] = 1
    C = (Y >= np.log(max_tokens) - 1e-9) & (M > 0)
    return (torch.as_tensor(Y, dtype=torch.float32), torch.as_tensor(M * (~C), dtype=torch.float32),
            torch.as_tensor(C, dtype=torch.float32))


def _nll(Y, M, C, mu, sigma, nu, family, max_tokens):
    """Mean censored NLL of log lengths (Jacobian term dropped: constant in the parameters)."""
    z = (Y - mu[:, None]) / sigma[:, None]
    zc = (math.log(max_tokens) - mu) / sigma
    if family == "logt":
        logpdf = -(nu + 1) / 2 * torch.log1p(z * z / nu)
        logsf = _t_logsf_torch(zc.double(), nu).to(zc.dtype)  # exact t tail (scipy, custom autograd)
    else:
        logpdf = -0.5 * z * z
        logsf = torch.special.log_ndtr(-zc)
    ll = ((logpdf - torch.log(sigma)[:, None]) * M).sum() + (logsf[:, None] * C).sum()
    return -ll / (M.sum() + C.sum())
