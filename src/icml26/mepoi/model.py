"""ME-POIs: contrastive alignment of visits with learnable POI embeddings plus usage propagation
(spec sections 2.4-2.6, `mepoi.model`).

Losses, per batch of visit windows (B x W, padding masked):

* **L_CL** (section 2.4): U = the unique POIs visited in the batch; logits `l_{v,q} = h_v . (W E_q)` for q in U
  (W: d x d, no bias); `L_CL = CE(l_v / tau, index(p_v))` averaged over real (non-padded) visits, tau = 0.1.
* **L_KL** (section 2.5): `KL(p~_s || q_theta(s))` averaged over the sparse (non-anchor) POIs S of the batch,
  with `p~_s` the per-POI mixture of the multi-scale propagated priors and `q_theta = softmax(MLP(E_s))`.
  S = sparse POIs visited in the batch, plus a "prior batch" of `prior_batch` sparse POIs sampled uniformly each
  step [choice, spec pitfall]: a POI with no visit never appears in a visit window, so without it its embedding
  would never move from the random init.
* Optional, weight 0 by default as in the released loss (implemented but not summed there): `L_anchor` =
  `KL(p_a || q_theta(a))` over anchors in the batch, and `L_align` = 1 - cos(MLP(e_text_p), E_p) over U.

`L = L_CL + lambda_kl L_KL + lambda_anchor L_anchor + lambda_align L_align` (lambda_kl = 1). Training as released:
Adafactor (`torch.optim.Adafactor` defaults) or AdamW, early stopping on the training loss (patience 10), the
best epoch's weights kept. With `val_fraction > 0` a random share of the visit windows is held out and early
stopping watches their contrastive loss instead (the CPU reproduction: training runs until the held-out loss
flattens); with `max_steps` the epoch budget follows optimizer steps (`ceil(max_steps / steps per epoch)`), so a
city with fewer visits gets more epochs, not fewer updates. The ME-POI representation is z_p = E_p (`MEPOITrainer.embeddings_`).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.base import BaseEstimator

from icml26.common.validation import (check_array, check_bool, check_choice, check_float, check_int, check_seed)
from icml26.mepoi.data import POITable, VisitTable, gather_batch, make_windows, visit_features
from icml26.mepoi.modules import POIEmbedding, VisitEncoder
from icml26.mepoi.usage import UsagePriors, build_priors

__all__ = ["contrastive_loss", "kl_batchmean", "MEPOI", "MEPOITrainer", "visit_hours_of_week"]


def contrastive_loss(h: torch.Tensor, candidates: torch.Tensor, target: torch.Tensor, tau: float) -> torch.Tensor:
    """In-batch contrastive loss (Eq. of section 2.4) over real visits.

    Args:
        h: (N, d) contextual embeddings of the N real visits. candidates: (U, d) projected POI embeddings W E_q.
        target: (N,) long, each visit's row in `candidates`. tau: temperature.
    """
    logits = h @ candidates.T / tau
    return F.cross_entropy(logits, target)


def kl_batchmean(p: torch.Tensor, log_q: torch.Tensor) -> torch.Tensor:
    """KL(p || q) summed over bins and averaged over rows (`batchmean`); 0 * log 0 = 0. (n, bins) each."""
    if p.shape[0] == 0:
        return log_q.sum() * 0.0
    return (torch.xlogy(p, p) - p * log_q).sum() / p.shape[0]


class MEPOI(nn.Module):
    """Visit encoder + POI table + usage head, with `forward(batch) -> dict of losses` (a DDP-friendly module).

    Priors are buffers (`set_priors`), so a saved state_dict carries them. `batch` is a `gather_batch` dict,
    optionally with `prior_poi` (long) = extra sparse POIs for the KL term.
    """

    def __init__(self, n_poi: int, n_categories: int, *, d: int = 512, layers: int = 4, heads: int = 8,
                 ffn: int = 1024, dropout: float = 0.3, tau: float = 0.1, lambda_kl: float = 1.0,
                 lambda_anchor: float = 0.0, lambda_align: float = 0.0, use_absolute_time: bool = True,
                 n_scales: int = 3, bins: int = 100, text_dim: int | None = None, max_len: int = 512):
        super().__init__()
        self.n_poi = check_int(n_poi, "n_poi", min=1)
        self.tau = check_float(tau, "tau", min=0, min_open=True)
        self.lambda_kl = check_float(lambda_kl, "lambda_kl", min=0)
        self.lambda_anchor = check_float(lambda_anchor, "lambda_anchor", min=0)
        self.lambda_align = check_float(lambda_align, "lambda_align", min=0)
        self.encoder = VisitEncoder(n_categories, d, layers, heads, ffn, dropout, use_absolute_time=use_absolute_time,
                                    max_len=max_len)
        self.poi = POIEmbedding(self.n_poi, d, n_scales=n_scales, bins=bins)
        self.W = nn.Linear(d, d, bias=False)
        self.text_tuner = None
        if self.lambda_align > 0:
            if text_dim is None:
                raise ValueError("lambda_align > 0 needs text_dim (and text embeddings in set_priors)")
            self.text_tuner = nn.Sequential(nn.Linear(check_int(text_dim, "text_dim", min=1), d), nn.LayerNorm(d),
                                            nn.GELU(), nn.Linear(d, d))
        self.register_buffer("transfer", torch.zeros(self.n_poi, n_scales, bins))
        self.register_buffer("anchor_curves", torch.zeros(self.n_poi, bins))
        self.register_buffer("is_sparse", torch.ones(self.n_poi, dtype=torch.bool))
        self.register_buffer("text", torch.zeros(self.n_poi, text_dim or 1))

    def set_priors(self, priors: UsagePriors, text: np.ndarray | None = None) -> None:
        if priors.transfer.shape != tuple(self.transfer.shape):
            raise ValueError(f"priors.transfer must have shape {tuple(self.transfer.shape)}, got "
                             f"{priors.transfer.shape}")
        self.transfer.copy_(torch.as_tensor(priors.transfer, dtype=torch.float32))
        self.anchor_curves.copy_(torch.as_tensor(priors.curves, dtype=torch.float32))
        self.is_sparse.copy_(torch.as_tensor(~np.asarray(priors.is_anchor, bool)))
        if text is not None:
            self.text.copy_(torch.as_tensor(text, dtype=torch.float32))

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        mask = batch["mask"]
        h = self.encoder(batch)[mask]                                  # (N, d) real visits only
        uniq, target = torch.unique(batch["poi"][mask], return_inverse=True)
        cl = contrastive_loss(h, self.W(self.poi(uniq)), target, self.tau)
        sparse = uniq[self.is_sparse[uniq]]
        extra = batch.get("prior_poi")
        if extra is not None and extra.numel():
            sparse = torch.unique(torch.cat([sparse, extra]))
        kl = kl_batchmean(self.poi.mixture(sparse, self.transfer[sparse]), self.poi.log_usage(sparse))
        anchors = uniq[~self.is_sparse[uniq]]
        kl_a = kl_batchmean(self.anchor_curves[anchors], self.poi.log_usage(anchors))
        loss = cl + self.lambda_kl * kl + self.lambda_anchor * kl_a
        out = {"cl": cl, "kl_sparse": kl, "kl_anchor": kl_a}
        if self.text_tuner is not None:
            align = (1 - F.cosine_similarity(self.text_tuner(self.text[uniq]), self.poi(uniq), dim=-1)).mean()
            loss = loss + self.lambda_align * align
            out["align"] = align
        out["loss"] = loss
        return out


def visit_hours_of_week(visits: VisitTable, tz: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(arrival, departure) in hours since Monday 00:00 local time, arrival inside the first week (for
    `popular_times`); the duration of each visit is kept."""
    from icml26.mepoi.data import time_features

    tf = time_features(visits.frame, tz)
    arr = tf["arr_w"].to_numpy(float) * 168.0
    dur = (tf["dep_days"].to_numpy(float) - tf["arr_days"].to_numpy(float)) * 365.0 * 24.0
    return arr, arr + np.maximum(dur, 0.0)


class MEPOITrainer(BaseEstimator):
    """Learn ME-POI embeddings from a visit table (scikit-learn style: `fit`, then `embeddings_`/`transform`).

    Args (defaults = the paper-scale setting of spec section 7; the CPU reproduction uses d=64, layers=2,
    heads=4, ffn=128, dropout=0.1, window=16, batch_size=64, optimizer='adamw', lr=1e-3, epochs=8,
    min_visits=30):
        d, layers, heads, ffn, dropout: visit-encoder sizes. window: W visits per window. keep_tail: pad each
            user's last partial window instead of dropping it (released: drop).
        tau: contrastive temperature. lambda_kl: weight of the propagation KL (0 = the no-propagation ablation).
        lambda_anchor, lambda_align: weights of the optional anchor-KL and text-alignment terms (released: 0).
        use_absolute_time: the fifth Time2Vec tower on days since the start.
        min_visits: anchor threshold N_min. sigmas_km: propagation scales. bins: usage-curve length.
        prior_method: `popular_times` method ("released" | "exact"). prior_backend: "gaussian" | "h3".
        prior_batch: sparse POIs sampled per step for the KL term (0 = only the batch's own sparse POIs).
        epochs, batch_size (windows per step), optimizer ("adafactor" | "adamw"), lr (None: Adafactor's default
            1e-2, AdamW 1e-3), weight_decay (AdamW; Adafactor keeps its default), patience (epochs without a lower
            monitored loss before stopping; 0 disables), tz (time zone for datetimes), seed, device, progress
            (tqdm bar).
        val_fraction: share of the visit windows held out for early stopping (0: watch the training loss, as
            released). max_steps: optimizer-step budget; when given the epoch budget is
            `ceil(max_steps / steps_per_epoch)` and `epochs` is ignored. min_delta: the smallest decrease of the
            monitored loss that counts as an improvement.
    Fitted attributes: `embeddings_` (n_poi, d) float32, `poi_ids_`, `priors_`, `model_`, `history_` (per-epoch
    losses; `val_cl` / `val_loss` with a held-out split), `epochs_run_`, `best_epoch_` (0-based, the weights
    kept), `max_epochs_` (the budget), `stopped_early_`, `steps_run_`, `n_windows_`, `n_dropped_visits_`, `epoch_time_s_` (mean seconds per epoch), `visits_per_s_`
    (training throughput, real visits per second).
    """

    def __init__(self, d: int = 512, layers: int = 4, heads: int = 8, ffn: int = 1024, dropout: float = 0.3,
                 window: int = 32, keep_tail: bool = False, tau: float = 0.1, lambda_kl: float = 1.0,
                 lambda_anchor: float = 0.0, lambda_align: float = 0.0, use_absolute_time: bool = True,
                 min_visits: int = 500, sigmas_km: Sequence[float] = (0.3, 1.0, 3.0), bins: int = 100,
                 prior_method: str = "released", prior_backend: str = "gaussian", prior_batch: int = 64,
                 epochs: int = 50, batch_size: int = 128, optimizer: str = "adafactor", lr: float | None = None,
                 weight_decay: float = 0.01, patience: int = 10, embedding_init_std: float = 1.0,
                 absolute_time_days: float = 365.0, tz: str | None = None, seed: int = 42, device: str = "cpu",
                 progress: bool = False, val_fraction: float = 0.0, max_steps: int | None = None,
                 min_delta: float = 1e-4):
        self.d, self.layers, self.heads, self.ffn, self.dropout = d, layers, heads, ffn, dropout
        self.window, self.keep_tail, self.tau, self.lambda_kl = window, keep_tail, tau, lambda_kl
        self.lambda_anchor, self.lambda_align, self.use_absolute_time = lambda_anchor, lambda_align, use_absolute_time
        self.min_visits, self.sigmas_km, self.bins = min_visits, sigmas_km, bins
        self.prior_method, self.prior_backend, self.prior_batch = prior_method, prior_backend, prior_batch
        self.epochs, self.batch_size, self.optimizer, self.lr = epochs, batch_size, optimizer, lr
        self.weight_decay, self.patience, self.tz, self.seed = weight_decay, patience, tz, seed
        self.embedding_init_std, self.absolute_time_days = embedding_init_std, absolute_time_days
        self.device, self.progress = device, progress
        self.val_fraction, self.max_steps, self.min_delta = val_fraction, max_steps, min_delta
        self._check_params()

    # ------------------------------------------------------------------------------------------ validation
    def _check_params(self) -> dict[str, Any]:
        p = {
            "d": check_int(self.d, "d", min=2), "layers": check_int(self.layers, "layers", min=1),
            "heads": check_int(self.heads, "heads", min=1), "ffn": check_int(self.ffn, "ffn", min=1),
            "dropout": check_float(self.dropout, "dropout", min=0, max=1, max_open=True),
            "window": check_int(self.window, "window", min=1, max=4096),
            "keep_tail": check_bool(self.keep_tail, "keep_tail"),
            "tau": check_float(self.tau, "tau", min=0, min_open=True),
            "lambda_kl": check_float(self.lambda_kl, "lambda_kl", min=0),
            "lambda_anchor": check_float(self.lambda_anchor, "lambda_anchor", min=0),
            "lambda_align": check_float(self.lambda_align, "lambda_align", min=0),
            "use_absolute_time": check_bool(self.use_absolute_time, "use_absolute_time"),
            "min_visits": check_int(self.min_visits, "min_visits", min=1),
            "bins": check_int(self.bins, "bins", min=10),
            "prior_method": check_choice(self.prior_method, "prior_method", ("released", "exact")),
            "prior_backend": check_choice(self.prior_backend, "prior_backend", ("gaussian", "h3")),
            "prior_batch": check_int(self.prior_batch, "prior_batch", min=0),
            "epochs": check_int(self.epochs, "epochs", min=1),
            "batch_size": check_int(self.batch_size, "batch_size", min=1),
            "optimizer": check_choice(self.optimizer, "optimizer", ("adafactor", "adamw")),
            "weight_decay": check_float(self.weight_decay, "weight_decay", min=0),
            "patience": check_int(self.patience, "patience", min=0),
            "embedding_init_std": check_float(self.embedding_init_std, "embedding_init_std", min=0, min_open=True),
            "absolute_time_days": check_float(self.absolute_time_days, "absolute_time_days", min=0, min_open=True),
            "seed": check_seed(self.seed),
            "progress": check_bool(self.progress, "progress"),
            "val_fraction": check_float(self.val_fraction, "val_fraction", min=0, max=0.5),
            "max_steps": None if self.max_steps is None else check_int(self.max_steps, "max_steps", min=1),
            "min_delta": check_float(self.min_delta, "min_delta", min=0),
        }
        if p["d"] % p["heads"]:
            raise ValueError(f"d ({p['d']}) must be divisible by heads ({p['heads']})")
        p["lr"] = None if self.lr is None else check_float(self.lr, "lr", min=0, min_open=True)
        if isinstance(self.sigmas_km, (str, bytes)) or not hasattr(self.sigmas_km, "__len__") \
                or len(self.sigmas_km) == 0:
            raise TypeError("sigmas_km must be a non-empty sequence of kernel widths in km")
        p["sigmas_km"] = tuple(check_float(s, "sigmas_km", min=0, min_open=True) for s in self.sigmas_km)
        if self.tz is not None and not isinstance(self.tz, str):
            raise TypeError(f"tz must be a time-zone name or None, got {type(self.tz).__name__}")
        try:
            p["device"] = torch.device(self.device)
        except (RuntimeError, TypeError):
            raise ValueError(f"device must be a torch device string such as 'cpu' or 'cuda', got {self.device!r}") \
                from None
        return p

    def _check_priors(self, priors: Any, n_poi: int, p: dict[str, Any]) -> UsagePriors:
        if not isinstance(priors, UsagePriors):
            raise TypeError(f"priors must be a UsagePriors (see mepoi.usage.build_priors) or None, got "
                            f"{type(priors).__name__}")
        if len(priors.is_anchor) != n_poi:
            raise ValueError(f"priors has {len(priors.is_anchor)} POIs but the POI table has {n_poi}")
        if priors.n_bins != p["bins"]:
            raise ValueError(f"priors has {priors.n_bins} bins but bins={p['bins']}")
        for name in ("curves", "transfer"):
            arr = getattr(priors, name)
            check_array(arr, f"priors.{name}", ndim=(2, 3), min_size=0)
            if np.any(arr < 0):
                raise ValueError(f"priors.{name} must be non-negative")
        return priors

    # ------------------------------------------------------------------------------------------ fitting
    def build_priors(self, visits: VisitTable, pois: POITable) -> UsagePriors:
        """Anchor curves and propagated priors from the visits (anchors: >= min_visits visits)."""
        p = self._check_params()
        arr, dep = visit_hours_of_week(visits, self.tz)
        return build_priors(arr, dep, visits.poi_index, pois.frame[["lat", "lon"]].to_numpy(float),
                            min_visits=p["min_visits"], sigmas_km=p["sigmas_km"], bins=p["bins"],
                            method=p["prior_method"], backend=p["prior_backend"])

    def fit(self, visits: pd.DataFrame, pois: pd.DataFrame, priors: UsagePriors | None = None,
            text_embeddings: Any = None) -> MEPOITrainer:
        """Train on a visit table (see `mepoi.data` for the schemas); refits from scratch on every call.

        Args:
            visits: DataFrame `user_id, poi_id, arrival, departure`. pois: DataFrame `poi_id, name, category,
                lat, lon`. priors: precomputed `UsagePriors` (default: built from `visits`).
            text_embeddings: (n_poi, d_text) rows aligned with `pois`, needed only when lambda_align > 0.
        """
        p = self._check_params()
        P = pois if isinstance(pois, POITable) else POITable.from_frame(pois)
        V = visits if isinstance(visits, VisitTable) else VisitTable.from_frame(visits, P)
        feats = visit_features(V, P, tz=self.tz, days_scale=p["absolute_time_days"])
        win = make_windows(V.frame["user_id"], p["window"], keep_tail=p["keep_tail"])
        if len(win) == 0:
            raise ValueError(f"no user has {p['window']} visits: no training window (lower window or set "
                             "keep_tail=True)")
        priors = self.build_priors(V, P) if priors is None else self._check_priors(priors, len(P), p)
        text = None
        if p["lambda_align"] > 0:
            if text_embeddings is None:
                raise ValueError("lambda_align > 0 needs text_embeddings (one row per POI)")
            text = check_array(text_embeddings, "text_embeddings", ndim=2)
            if text.shape[0] != len(P):
                raise ValueError(f"text_embeddings has {text.shape[0]} rows but the POI table has {len(P)}")
        torch.manual_seed(p["seed"])
        rng = np.random.default_rng(p["seed"])
        device = p["device"]
        model = MEPOI(len(P), len(P.categories), d=p["d"], layers=p["layers"], heads=p["heads"], ffn=p["ffn"],
                      dropout=p["dropout"], tau=p["tau"], lambda_kl=p["lambda_kl"], lambda_anchor=p["lambda_anchor"],
                      lambda_align=p["lambda_align"], use_absolute_time=p["use_absolute_time"],
                      n_scales=priors.transfer.shape[1], bins=p["bins"],
                      text_dim=None if text is None else text.shape[1], max_len=max(p["window"], 1))
        nn.init.normal_(model.poi.table.weight, std=p["embedding_init_std"])
        model.set_priors(priors, text)
        model.to(device)
        if p["optimizer"] == "adamw" and device.type == "cpu":
            # torch's CPU AdamW update, bit for bit, without its per-step dispatch overhead (mepoi.probe._AdamW)
            from icml26.mepoi.probe import _AdamW

            opt = _AdamW(model.parameters(), lr=1e-3 if p["lr"] is None else p["lr"], weight_decay=p["weight_decay"])
        else:
            opt = make_optimizer(model, p["optimizer"], p["lr"], p["weight_decay"])
        sparse_ids = np.flatnonzero(~priors.is_anchor)
        train_idx, val_idx = win.index, win.index[:0]
        if p["val_fraction"] > 0:
            # held-out windows from a separate stream, so the training draws match a run without a split
            perm = np.random.default_rng([p["seed"], 7]).permutation(len(win))
            n_val = int(round(p["val_fraction"] * len(win)))
            if n_val < 1 or n_val >= len(win):
                raise ValueError(f"val_fraction={p['val_fraction']} leaves no validation or no training window "
                                 f"out of {len(win)}")
            val_idx, train_idx = win.index[perm[:n_val]], win.index[np.sort(perm[n_val:])]
        n_real = int((train_idx >= 0).sum())
        steps_per_epoch = math.ceil(len(train_idx) / p["batch_size"])
        max_epochs = p["epochs"] if p["max_steps"] is None else max(1, math.ceil(p["max_steps"] / steps_per_epoch))
        monitor = "val_cl" if len(val_idx) else "loss"
        history: list[dict[str, float]] = []
        best, best_state, bad, t_epochs, best_epoch = math.inf, None, 0, [], 0
        from tqdm.auto import tqdm

        bar = tqdm(total=max_epochs, desc="ME-POI", disable=not p["progress"], leave=False)
        for epoch in range(max_epochs):
            t0 = time.perf_counter()
            sums = train_epoch(model, opt, feats, train_idx, p["batch_size"], sparse_ids, p["prior_batch"], rng,
                               device)
            t_epochs.append(time.perf_counter() - t0)
            if len(val_idx):
                sums.update({f"val_{k}": v for k, v in eval_loss(model, feats, val_idx, p["batch_size"],
                                                                 device).items()})
            history.append({"epoch": epoch, **sums, "time_s": t_epochs[-1]})
            bar.update()
            bar.set_postfix(loss=f"{sums[monitor]:.3f}")
            if sums[monitor] < best - p["min_delta"]:
                best, bad, best_epoch = sums[monitor], 0, epoch
                best_state = copy.deepcopy(model.state_dict())
            else:
                bad += 1
                if p["patience"] and bad >= p["patience"]:
                    break
        bar.close()
        if best_state is not None:
            model.load_state_dict(best_state)
        model.eval()
        self.model_ = model
        self.poi_table_ = P
        self.poi_ids_ = P.frame["poi_id"].to_numpy()
        self.priors_ = priors
        self.history_ = history
        self.n_windows_ = len(win)
        self.n_val_windows_ = len(val_idx)
        self.epochs_run_ = len(history)
        self.best_epoch_ = best_epoch
        self.max_epochs_ = max_epochs
        self.stopped_early_ = len(history) < max_epochs
        self.steps_run_ = len(history) * steps_per_epoch
        self.n_dropped_visits_ = win.n_dropped
        self.epoch_time_s_ = float(np.mean(t_epochs))
        self.visits_per_s_ = float(n_real / max(np.mean(t_epochs), 1e-9))
        self.embeddings_ = model.poi.table.weight.detach().cpu().numpy().astype(np.float32)
        return self

    # ------------------------------------------------------------------------------------------ using
    def _fitted(self) -> None:
        if not hasattr(self, "embeddings_"):
            raise ValueError("this MEPOITrainer is not fitted yet: call fit(visits, pois) first")

    def transform(self, poi_ids: Any) -> np.ndarray:
        """Embeddings of the given POI ids (a list/array of ids from the POI table): (n, d) float32."""
        self._fitted()
        ids = pd.Index(self.poi_ids_)
        if isinstance(poi_ids, (str, bytes)) or not hasattr(poi_ids, "__len__"):
            raise TypeError("poi_ids must be a sequence of POI ids (wrap a single id in a list)")
        pos = ids.get_indexer(pd.Index(list(poi_ids)))
        if np.any(pos < 0):
            bad = list(poi_ids)[int(np.flatnonzero(pos < 0)[0])]
            raise ValueError(f"poi_ids contains {bad!r}, which is not in the fitted POI table")
        return self.embeddings_[pos]

    @torch.no_grad()
    def encode_visits(self, visits: pd.DataFrame, batch_size: int = 256) -> np.ndarray:
        """Contextual visit embeddings h_v of every visit (rows in the input order), (n_visits, d) float32.

        Each user's visits are cut into windows of `window` (the last one padded), encoded in eval mode."""
        self._fitted()
        batch_size = check_int(batch_size, "batch_size", min=1)
        V = VisitTable.from_frame(visits, self.poi_table_)
        feats = visit_features(V, self.poi_table_, tz=self.tz, days_scale=self._check_params()["absolute_time_days"])
        win = make_windows(V.frame["user_id"], self.window, keep_tail=True)
        model = self.model_.eval()
        dev = next(model.parameters()).device
        out = np.zeros((len(V), model.encoder.d), np.float32)
        for i in range(0, len(win), batch_size):
            idx = win.index[i:i + batch_size]
            b = {k: v.to(dev) for k, v in gather_batch(feats, idx).items()}
            h = model.encoder(b)
            m = idx >= 0
            out[idx[m]] = h[torch.from_numpy(m).to(dev)].cpu().numpy()
        res = np.zeros_like(out)
        res[V.row] = out
        return res

    def save(self, path: str | Path) -> Path:
        """Write params, weights, POI ids and embeddings to `path` (torch.save)."""
        self._fitted()
        path = Path(path)
        torch.save({"params": self.get_params(), "state_dict": self.model_.state_dict(),
                    "pois": self.poi_table_.frame, "categories": self.poi_table_.categories,
                    "priors": self.priors_, "embeddings": self.embeddings_, "history": self.history_}, path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> MEPOITrainer:
        """A fitted trainer from `save` (trusted files only: torch.load with weights_only=False)."""
        blob = torch.load(Path(path), map_location="cpu", weights_only=False)
        self = cls(**blob["params"])
        P = POITable(blob["pois"], tuple(blob["categories"]))
        pri = blob["priors"]
        p = self._check_params()
        model = MEPOI(len(P), len(P.categories), d=p["d"], layers=p["layers"], heads=p["heads"], ffn=p["ffn"],
                      dropout=p["dropout"], tau=p["tau"], lambda_kl=p["lambda_kl"], lambda_anchor=p["lambda_anchor"],
                      lambda_align=p["lambda_align"], use_absolute_time=p["use_absolute_time"],
                      n_scales=pri.transfer.shape[1], bins=p["bins"],
                      text_dim=blob["state_dict"]["text"].shape[1] if p["lambda_align"] > 0 else None,
                      max_len=p["window"])
        model.load_state_dict(blob["state_dict"])
        self.model_, self.poi_table_, self.priors_ = model.eval(), P, pri
        self.poi_ids_ = P.frame["poi_id"].to_numpy()
        self.embeddings_ = np.asarray(blob["embeddings"], np.float32)
        self.history_ = blob["history"]
        return self


def make_optimizer(model: nn.Module, name: str, lr: float | None, weight_decay: float) -> torch.optim.Optimizer:
    """Adafactor (torch defaults, released) or AdamW."""
    if name == "adafactor":
        return torch.optim.Adafactor(model.parameters(), **({} if lr is None else {"lr": lr}))
    return torch.optim.AdamW(model.parameters(), lr=1e-3 if lr is None else lr, weight_decay=weight_decay)


@torch.no_grad()
def eval_loss(model: nn.Module, feats: dict[str, np.ndarray], windows: np.ndarray, batch_size: int,
              device: torch.device) -> dict[str, float]:
    """Mean losses over held-out windows in eval mode, fixed batches in their given order (deterministic)."""
    model.eval()
    sums: dict[str, float] = {}
    n = 0
    for i in range(0, len(windows), batch_size):
        out = model({k: v.to(device) for k, v in gather_batch(feats, windows[i:i + batch_size]).items()})
        for k, v in out.items():
            sums[k] = sums.get(k, 0.0) + float(v)
        n += 1
    model.train()
    return {k: v / max(n, 1) for k, v in sums.items()}


def train_epoch(model: nn.Module, opt: Any, feats: dict[str, np.ndarray], windows: np.ndarray,
                batch_size: int, sparse_ids: np.ndarray, prior_batch: int, rng: np.random.Generator,
                device: torch.device) -> dict[str, float]:
    """One pass over the windows in a random order; returns the mean of each loss."""
    model.train()
    order = rng.permutation(len(windows))
    sums: dict[str, float] = {}
    n = 0
    for i in range(0, len(order), batch_size):
        batch = gather_batch(feats, windows[order[i:i + batch_size]])
        if prior_batch and len(sparse_ids):
            k = min(prior_batch, len(sparse_ids))
            batch["prior_poi"] = torch.from_numpy(rng.choice(sparse_ids, size=k, replace=False))
        batch = {k: v.to(device) for k, v in batch.items()}
        out = model(batch)
        opt.zero_grad(set_to_none=True)
        out["loss"].backward()
        opt.step()
        for k, v in out.items():
            sums[k] = sums.get(k, 0.0) + float(v.detach())
        n += 1
    return {k: v / max(n, 1) for k, v in sums.items()}
