"""The paper's baselines behind the same estimator interface (spec §4).

- `PointLengthRegressor` (SSJF, Qiu et al. 2024): regresses the absolute output length from the prompt; the
  original trains a BERT-base proxy on ONE observed response per prompt with MSE on the raw length. Options:
  loss="l1" or "log_mse" (MSE on log length). Same frozen-encoder + MLP head as our TIE predictor (one branch),
  so the comparison isolates the target, not the network.
- `ListMLERanker` (LTR, Fu et al. 2024): a scorer trained with ListMLE on random lists of 16 prompts ordered
  by observed length (shortest first); schedule by score. (LTR's own starvation rule is not reproduced: all
  point baselines run without starvation prevention, as in the spec's comparison.)
- `OracleLength`: the true length (simulator only), the SJF lower bound.
Point-from-distribution ablations (SJF on e^μ, on E[min(X, L)] = TIE with β = 0) use `LogTLengthPredictor`.

With (n, k) lengths instead of (n,), `PointLengthRegressor` trains on all k (prompt, length) rows and
`ListMLERanker` ranks by the mean of the k lengths: the data-parity ablation of spec §6.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from icml26.common.validation import check_array, check_choice, check_float, check_int, check_seed
from icml26.tie.encoders import check_texts
from icml26.tie.predictors import Branch, _as_rows, _check_encoder, _TorchEstimator

__all__ = ["PointLengthRegressor", "ListMLERanker", "OracleLength", "listmle_loss"]


class PointLengthRegressor(_TorchEstimator):
    """SSJF proxy: prompt -> predicted output length (tokens).

    Args:
        encoder: `encode(list[str]) -> (n, d)`.
        loss: "mse" (raw length; SSJF), "l1" (raw length) or "log_mse" (log length).
        hidden, epochs, lr, batch_size, weight_decay, dropout, seed: as `LogTLengthPredictor`.
    """

    def __init__(self, encoder: Any, loss: str = "mse", hidden: int = 256, epochs: int = 20, lr: float = 1e-3,
                 batch_size: int = 32, weight_decay: float = 0.01, dropout: float = 0.2, seed: int = 0,
                 device: str = "cpu") -> None:
        self.encoder, self.loss, self.hidden, self.epochs, self.lr = encoder, loss, hidden, epochs, lr
        self.batch_size, self.weight_decay, self.dropout, self.seed = batch_size, weight_decay, dropout, seed
        self.device = device
        self._check_params()

    def _check_params(self) -> None:
        check_choice(self.loss, "loss", ("mse", "l1", "log_mse"))
        _check_head_params(self)
        self.batch_size = check_int(self.batch_size, "batch_size", min=1)

    def _params(self) -> dict[str, Any]:
        return dict(loss=self.loss, hidden=self.hidden, epochs=self.epochs, lr=self.lr, batch_size=self.batch_size,
                    weight_decay=self.weight_decay, dropout=self.dropout, seed=self.seed, device=self.device)

    def _build(self, d: int) -> Branch:
        return Branch(d, self.hidden, self.dropout)

    def _state(self) -> dict[str, Any]:
        return {"params": self._params(),
                "stats": {k: getattr(self, k) for k in ("x_mean_", "x_std_", "y_mean_", "y_std_")}}

    def fit(self, prompts: Sequence[str], lengths) -> PointLengthRegressor:
        """lengths: (n,) one observed length per prompt, or (n, k) / ragged (all samples: for the squared losses
        this equals training on the per-prompt mean (log-mean for log_mse); for l1 every sample is a row)."""
        self._check_params()
        prompts = check_texts(prompts)
        rows = _as_rows(lengths, len(prompts))
        gen = self._seed()
        X = self._features(prompts, fit=True)
        if self.loss == "l1":  # every sample is a training row
            pid = np.concatenate([np.full(len(r), i) for i, r in enumerate(rows)])
            y = np.concatenate(rows)
        else:  # squared loss over k rows = k·(f - row mean)^2 + const: train on the per-prompt mean (same optimum,
            # same number of steps per epoch as the 1-sample and TIE predictors)
            pid = np.arange(len(rows))
            y = np.array([np.mean(np.log(r)) if self.loss == "log_mse" else np.mean(r) for r in rows])
        self.y_mean_, self.y_std_ = float(y.mean()), float(y.std() + 1e-6)
        Y = torch.as_tensor((y - self.y_mean_) / self.y_std_, dtype=torch.float32).to(self._dev)
        P = torch.as_tensor(pid, dtype=torch.long).to(self._dev)
        self.model_ = self._build(X.shape[1]).to(self._dev)

        def batch_loss(idx, ep):
            idx = idx.to(self._dev)
            pred = self.model_(X[P[idx]])
            err = pred - Y[idx]
            return err.abs().mean() if self.loss == "l1" else (err ** 2).mean()

        self.loss_history_ = self._train(len(y), batch_loss, None, gen)
        return self

    @torch.no_grad()
    def predict(self, prompts: Sequence[str]) -> np.ndarray:
        """Predicted output length in tokens (n,) (>= 1)."""
        if not hasattr(self, "model_"):
            raise RuntimeError("PointLengthRegressor is not fitted: call fit() first")
        z = self.model_(self._features(prompts)).cpu().numpy() * self.y_std_ + self.y_mean_
        out = np.exp(z) if self.loss == "log_mse" else z
        return np.maximum(out, 1.0).astype(float)


def listmle_loss(scores: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """ListMLE (Xia et al. 2008): -log P(order | scores) under the Plackett-Luce model, averaged over lists.

    Args:
        scores: (m, K) scorer outputs (higher = should come first).
        order: (m, K) long, the target permutation (index of the item ranked first, second, ...).
    """
    s = scores.gather(1, order)
    # log-sum-exp over the items not yet placed: reverse cumulative logsumexp
    rev = torch.logcumsumexp(s.flip(1), dim=1).flip(1)
    return (rev - s).sum(1).mean()


class ListMLERanker(_TorchEstimator):
    """LTR scheduler scorer trained with ListMLE on lists of `list_size` prompts ordered shortest-first.

    `predict(prompts)` returns a scheduling score (n,): lower = schedule earlier (= minus the ranker output).
    """

    def __init__(self, encoder: Any, list_size: int = 16, hidden: int = 256, epochs: int = 20, lr: float = 1e-3,
                 batch_lists: int = 2, weight_decay: float = 0.01, dropout: float = 0.2, seed: int = 0,
                 device: str = "cpu") -> None:
        self.encoder, self.list_size, self.hidden, self.epochs, self.lr = encoder, list_size, hidden, epochs, lr
        self.batch_lists, self.weight_decay, self.dropout, self.seed = batch_lists, weight_decay, dropout, seed
        self.device = device
        self._check_params()

    def _check_params(self) -> None:
        self.list_size = check_int(self.list_size, "list_size", min=2)
        self.batch_lists = check_int(self.batch_lists, "batch_lists", min=1)
        _check_head_params(self)
        self.batch_size = self.batch_lists * self.list_size

    def _params(self) -> dict[str, Any]:
        return dict(list_size=self.list_size, hidden=self.hidden, epochs=self.epochs, lr=self.lr,
                    batch_lists=self.batch_lists, weight_decay=self.weight_decay, dropout=self.dropout,
                    seed=self.seed, device=self.device)

    def _build(self, d: int) -> Branch:
        return Branch(d, self.hidden, self.dropout)

    def _state(self) -> dict[str, Any]:
        return {"params": self._params(), "stats": {k: getattr(self, k) for k in ("x_mean_", "x_std_")}}

    def fit(self, prompts: Sequence[str], lengths) -> ListMLERanker:
        """lengths: (n,) one observed length per prompt, or (n, k) (ranked by the per-prompt mean)."""
        self._check_params()
        prompts = check_texts(prompts)
        n = len(prompts)
        if n < self.list_size:
            raise ValueError(f"need at least list_size={self.list_size} prompts, got {n}")
        rows = _as_rows(lengths, n)
        y = np.array([r.mean() for r in rows])
        gen = self._seed()
        X = self._features(prompts, fit=True)
        Yt = torch.as_tensor(y, dtype=torch.float64)
        self.model_ = self._build(X.shape[1]).to(self._dev)
        K = self.list_size

        def batch_loss(idx, ep):
            m = len(idx) // K
            if m == 0:
                idx = torch.cat([idx, torch.randint(0, n, (K - len(idx),), generator=gen)])
                m = 1
            lists = idx[: m * K].view(m, K)
            s = self.model_(X[lists.reshape(-1).to(self._dev)]).view(m, K)
            # target order: shortest first (ties broken randomly by the tiny jitter)
            jitter = torch.rand(m, K, generator=gen, dtype=torch.float64) * 1e-6
            order = torch.argsort(Yt[lists] + jitter, dim=1)
            return listmle_loss(s, order.to(s.device))

        self.loss_history_ = self._train(n, batch_loss, None, gen)
        return self

    @torch.no_grad()
    def predict(self, prompts: Sequence[str]) -> np.ndarray:
        """Scheduling scores (n,): lower = predicted shorter = served first."""
        if not hasattr(self, "model_"):
            raise RuntimeError("ListMLERanker is not fitted: call fit() first")
        return -self.model_(self._features(prompts)).cpu().numpy().astype(float)


class OracleLength:
    """The true output length as the score (simulator only): SJF with perfect information."""

    def fit(self, prompts=None, lengths=None) -> OracleLength:
        return self

    def predict(self, prompts: Sequence[str] | None = None, true_len=None) -> np.ndarray:
        if true_len is None:
            raise ValueError("OracleLength.predict needs true_len (the simulator's true output lengths)")
        t = check_array(true_len, "true_len", ndim=1)
        if np.any(t < 1):
            raise ValueError("true_len must be >= 1 (negative lengths are invalid)")
        return t


def _check_head_params(est: Any) -> None:
    """Shared hyperparameter checks of the point baselines (in __init__ and again in fit)."""
    _check_encoder(est.encoder)
    est.hidden = check_int(est.hidden, "hidden", min=1)
    est.epochs = check_int(est.epochs, "epochs", min=1)
    est.lr = check_float(est.lr, "lr", min=0.0, min_open=True)
    est.weight_decay = check_float(est.weight_decay, "weight_decay", min=0.0)
    est.dropout = check_float(est.dropout, "dropout", min=0.0, max=1.0, max_open=True)
    est.seed = check_seed(est.seed)
    est.device = str(est.device)
