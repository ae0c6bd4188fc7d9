"""The paper's baselines behind the same interface: each gives an (n_poi, d) embedding table aligned with the POI
table, probed by `EmbedProbe` exactly like the ME-POI table (spec section 4).

* `text_embeddings`: the text-only baseline, a frozen sentence model on the section-2.1 prompt.
* mobility-only = the ME-POI table alone (`EmbedProbe(modality="poi")`); text + mobility = `modality="both"`;
  the no-propagation ablation = `MEPOITrainer(lambda_kl=0)`. Nothing extra is needed for these.
* `handcrafted_mobility`: 168-bin visit-arrival histogram, log visit count, mean dwell, last-seen day (a strong,
  honest reference; reported, never gated).
* `random_embeddings`: a random table of the same shape (the control that shows a probe learns from the table).
* `SkipGramPOI`: POI2Vec-style skip-gram with negative sampling on each user's POI sequence (window 5), the
  classic "movement regularity" baseline.
The released MLM variant (POI id inside the token, masked-POI prediction) is not implemented here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
from sklearn.base import BaseEstimator

from icml26.common.validation import check_int, check_float, check_seed
from icml26.mepoi.data import POITable, VisitTable, time_features
from icml26.mepoi.text import CachedEncoder, TextEncoder, build_prompts

__all__ = ["text_embeddings", "handcrafted_mobility", "random_embeddings", "SkipGramPOI"]


def text_embeddings(pois: pd.DataFrame, encoder: TextEncoder, *, k: int = 10,
                    cache: str | None = None) -> np.ndarray:
    """Frozen text embeddings of every POI's prompt (k nearest POIs): (n_poi, encoder.dim), L2-normalised.

    `cache`: a folder for `CachedEncoder` (None: no cache)."""
    if not (hasattr(encoder, "encode") and hasattr(encoder, "name")):
        raise TypeError(f"encoder must implement TextEncoder (name, dim, encode), got {type(encoder).__name__}")
    enc = CachedEncoder(encoder, cache) if cache is not None else encoder
    return np.asarray(enc.encode(build_prompts(pois, k)), np.float32)


def handcrafted_mobility(visits: pd.DataFrame, pois: pd.DataFrame, tz: str | None = None) -> np.ndarray:
    """(n_poi, 171): share of arrivals per hour of the week (168), log(1 + visits), mean dwell (hours), last
    arrival (days since the first visit); zero rows for POIs without visits."""
    P = pois if isinstance(pois, POITable) else POITable.from_frame(pois)
    V = visits if isinstance(visits, VisitTable) else VisitTable.from_frame(visits, P)
    tf = time_features(V.frame, tz)
    n = len(P)
    idx = V.poi_index
    how = np.minimum((tf["arr_w"].to_numpy() * 168).astype(np.int64), 167)
    hist = np.zeros((n, 168))
    np.add.at(hist, (idx, how), 1.0)
    cnt = hist.sum(1)
    hist = hist / np.maximum(cnt[:, None], 1)
    dwell_h = (tf["dep_days"].to_numpy() - tf["arr_days"].to_numpy()) * 365 * 24
    mean_dwell = np.bincount(idx, weights=dwell_h, minlength=n) / np.maximum(cnt, 1)
    last = np.zeros(n)
    np.maximum.at(last, idx, tf["arr_days"].to_numpy() * 365)
    return np.concatenate([hist, np.log1p(cnt)[:, None], mean_dwell[:, None], last[:, None]], 1).astype(np.float32)


def random_embeddings(n_poi: int, d: int, seed: int = 0) -> np.ndarray:
    """A N(0, 1) table of shape (n_poi, d) (control)."""
    return np.random.default_rng(check_seed(seed)).normal(
        size=(check_int(n_poi, "n_poi", min=1), check_int(d, "d", min=1))).astype(np.float32)


class SkipGramPOI(BaseEstimator):
    """POI2Vec-style skip-gram with negative sampling over users' time-ordered POI sequences.

    Args: d (64), window (5), negatives (5), epochs (5), lr (Adam, 1e-2), batch_size (4096 pairs), seed.
    `fit(visits, pois)` -> `embeddings_` (n_poi, d); POIs never visited keep their random init."""

    def __init__(self, d: int = 64, window: int = 5, negatives: int = 5, epochs: int = 5, lr: float = 1e-2,
                 batch_size: int = 4096, seed: int = 0):
        self.d, self.window, self.negatives, self.epochs = d, window, negatives, epochs
        self.lr, self.batch_size, self.seed = lr, batch_size, seed
        self._check_params()

    def _check_params(self) -> dict[str, Any]:
        return {"d": check_int(self.d, "d", min=1), "window": check_int(self.window, "window", min=1),
                "negatives": check_int(self.negatives, "negatives", min=1),
                "epochs": check_int(self.epochs, "epochs", min=1),
                "lr": check_float(self.lr, "lr", min=0, min_open=True),
                "batch_size": check_int(self.batch_size, "batch_size", min=1), "seed": check_seed(self.seed)}

    def fit(self, visits: pd.DataFrame, pois: pd.DataFrame) -> SkipGramPOI:
        p = self._check_params()
        P = pois if isinstance(pois, POITable) else POITable.from_frame(pois)
        V = visits if isinstance(visits, VisitTable) else VisitTable.from_frame(visits, P)
        seq, users = V.poi_index, pd.factorize(V.frame["user_id"])[0]
        centre, context = [], []
        for off in range(1, p["window"] + 1):  # pairs within `window` positions of the same user, both ways
            same = users[off:] == users[:-off]
            a, b = seq[:-off][same], seq[off:][same]
            centre += [a, b]
            context += [b, a]
        c = np.concatenate(centre) if centre else np.zeros(0, np.int64)
        o = np.concatenate(context) if context else np.zeros(0, np.int64)
        n = len(P)
        torch.manual_seed(p["seed"])
        emb_in, emb_out = nn.Embedding(n, p["d"]), nn.Embedding(n, p["d"])
        nn.init.normal_(emb_in.weight, std=0.1)
        nn.init.zeros_(emb_out.weight)
        freq = np.bincount(seq, minlength=n) ** 0.75
        noise = torch.as_tensor(freq / freq.sum() if freq.sum() > 0 else np.full(n, 1 / n), dtype=torch.float)
        opt = torch.optim.Adam(list(emb_in.parameters()) + list(emb_out.parameters()), lr=p["lr"])
        gen = torch.Generator().manual_seed(p["seed"])
        ct, ot = torch.as_tensor(c), torch.as_tensor(o)
        for _ in range(p["epochs"] if len(c) else 0):
            perm = torch.randperm(len(c), generator=gen)
            for i in range(0, len(c), p["batch_size"]):
                b = perm[i:i + p["batch_size"]]
                u = emb_in(ct[b])
                pos = (u * emb_out(ot[b])).sum(-1)
                neg_idx = torch.multinomial(noise, len(b) * p["negatives"], replacement=True, generator=gen)
                neg = torch.einsum("bd,bkd->bk", u, emb_out(neg_idx.view(len(b), p["negatives"])))
                loss = -(nn.functional.logsigmoid(pos).mean() + nn.functional.logsigmoid(-neg).sum(1).mean())
                opt.zero_grad()
                loss.backward()
                opt.step()
        self.embeddings_ = emb_in.weight.detach().numpy().astype(np.float32)
        self.n_pairs_ = int(len(c))
        return self
