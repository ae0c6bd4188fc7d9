"""Neural building blocks of ME-POIs (spec sections 2.3-2.5, `mepoi.modules`).

* `Time2Vec(d)`: `[w_0 t + phi_0, sin(w_i t + phi_i)_{i=1..d-1}]` (Kazemi et al. 2019).
* `TheoryLocationEncoder(d)`: Space2Vec "theory" multi-scale encoder: unit vectors a_1..a_3 at 120 degrees,
  S scales lambda_s = lambda_min (lambda_max / lambda_min)^{s/(S-1)}, features cos/sin(<a_j, x> / lambda_s)
  (6S values) -> Linear(6S, S) -> ReLU -> Linear(S, d) -> Dropout(0.3). Input: bbox-normalised [lat, lon] in [0, 1].
* `SinusoidalPositionalEncoding(d)`: the Transformer's sinusoidal encoding over **sequence positions**. The
  released code indexes its table by the batch dimension (`pe[:x.size(0)]` on a batch-first tensor); we add the
  intended per-position encoding (spec pitfall).
* `VisitEncoder`: the token of visit v at POI p is
  `x_v = Linear_{4d->d}([CatEmb(c_p); LocEnc(x_p); T2V_ah(h_arr) + T2V_aw(w_arr); T2V_dh(h_dep) + T2V_dw(w_dep)])`
  (a fifth block `T2V_abs(days_since_start/365)` when `use_absolute_time`, so Linear is 5d->d), plus the positional
  encoding, through a Transformer encoder with a key-padding mask -> contextual visit embeddings h_v (B, W, d).
  The POI id never enters the token (otherwise matching it back would be trivial).
* `POIEmbedding`: the free table E (|P| x d, the ME-POI representation), the usage head
  `q_theta(p) = softmax(MLP(E_p))` (d -> d -> ReLU -> bins), and the per-POI mixture logits alpha (|P| x K, init 0).
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from icml26.common.validation import check_float, check_int

__all__ = ["Time2Vec", "TheoryLocationEncoder", "SinusoidalPositionalEncoding", "VisitEncoder", "POIEmbedding"]


class Time2Vec(nn.Module):
    """Time2Vec of a scalar time: input (...), output (..., d); component 0 linear, the rest periodic (sin)."""

    def __init__(self, d: int):
        super().__init__()
        self.d = check_int(d, "d", min=2)
        self.linear = nn.Linear(1, self.d)

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        h = self.linear(t.unsqueeze(-1))
        return torch.cat([h[..., :1], torch.sin(h[..., 1:])], dim=-1)


class TheoryLocationEncoder(nn.Module):
    """Space2Vec-theory encoder of 2-D points (..., 2) -> (..., d). Defaults as released: 64 scales,
    lambda in [0.1, 1.4142] (bbox-normalised units), dropout 0.3."""

    def __init__(self, d: int, *, lambda_min: float = 0.1, lambda_max: float = 1.4142, num_scales: int = 64,
                 dropout: float = 0.3):
        super().__init__()
        self.d = check_int(d, "d", min=1)
        lambda_min = check_float(lambda_min, "lambda_min", min=0, min_open=True)
        lambda_max = check_float(lambda_max, "lambda_max", min=lambda_min, min_open=True)
        s = check_int(num_scales, "num_scales", min=2)
        dropout = check_float(dropout, "dropout", min=0, max=1, max_open=True)
        ang = torch.tensor([0.0, 2 * math.pi / 3, 4 * math.pi / 3])
        self.register_buffer("a", torch.stack([torch.cos(ang), torch.sin(ang)], 1), persistent=False)  # (3, 2)
        lam = lambda_min * (lambda_max / lambda_min) ** (torch.arange(s, dtype=torch.float32) / (s - 1))
        self.register_buffer("lam", lam, persistent=False)
        self.net = nn.Sequential(nn.Linear(6 * s, s), nn.ReLU(), nn.Linear(s, self.d), nn.Dropout(dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        proj = (x @ self.a.T).unsqueeze(-1) / self.lam            # (..., 3, S)
        proj = proj.flatten(-2)                                   # (..., 3S)
        return self.net(torch.cat([torch.cos(proj), torch.sin(proj)], dim=-1))


class SinusoidalPositionalEncoding(nn.Module):
    """x (B, W, d) + PE[position] (Vaswani et al.), then dropout."""

    def __init__(self, d: int, max_len: int = 512, dropout: float = 0.1):
        super().__init__()
        d = check_int(d, "d", min=2)
        max_len = check_int(max_len, "max_len", min=1)
        pos = torch.arange(max_len, dtype=torch.float32)[:, None]
        div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
        pe = torch.zeros(max_len, d)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div[: d // 2])
        self.register_buffer("pe", pe, persistent=False)
        self.dropout = nn.Dropout(check_float(dropout, "dropout", min=0, max=1, max_open=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[1] > self.pe.shape[0]:
            raise ValueError(f"sequence length {x.shape[1]} exceeds the positional table ({self.pe.shape[0]})")
        return self.dropout(x + self.pe[: x.shape[1]])


class VisitEncoder(nn.Module):
    """Contextual visit embeddings h_v from a batch of visit windows (section 2.3).

    Args:
        n_categories: size of the category vocabulary.
        d: model width (paper 512; CPU 64). layers, heads, ffn: Transformer encoder sizes (paper 4, 8, 1024).
        dropout: Transformer dropout (paper 0.3; CPU 0.1). loc_dropout: location-encoder dropout (0.3).
        use_absolute_time: add the fifth Time2Vec tower on arrival `days_since_start/365` [choice, spec 2.3].
        max_len: longest window supported by the positional table.
    Input batch (dict of tensors, B windows x W positions): `category` long, `loc` (B, W, 2) float, `arr_h`,
    `arr_w`, `dep_h`, `dep_w`, `arr_days` float, `mask` bool (True = real visit). Output (B, W, d), zero at padding.
    """

    def __init__(self, n_categories: int, d: int = 512, layers: int = 4, heads: int = 8, ffn: int = 1024,
                 dropout: float = 0.3, *, loc_dropout: float = 0.3, use_absolute_time: bool = True,
                 max_len: int = 512):
        super().__init__()
        self.n_categories = check_int(n_categories, "n_categories", min=1)
        self.d = check_int(d, "d", min=2)
        heads = check_int(heads, "heads", min=1)
        if self.d % heads:
            raise ValueError(f"d ({self.d}) must be divisible by heads ({heads})")
        self.use_absolute_time = bool(use_absolute_time)
        self.cat = nn.Embedding(self.n_categories, self.d)
        self.loc = TheoryLocationEncoder(self.d, dropout=loc_dropout)
        self.t_ah, self.t_aw, self.t_dh, self.t_dw = (Time2Vec(self.d) for _ in range(4))
        self.t_abs = Time2Vec(self.d) if self.use_absolute_time else None
        self.fc = nn.Linear((5 if self.use_absolute_time else 4) * self.d, self.d)
        self.pos = SinusoidalPositionalEncoding(self.d, max_len=max_len, dropout=0.1)
        layer = nn.TransformerEncoderLayer(self.d, heads, check_int(ffn, "ffn", min=1),
                                           check_float(dropout, "dropout", min=0, max=1, max_open=True),
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, check_int(layers, "layers", min=1), enable_nested_tensor=False)

    def tokens(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """x_v before the positional encoding: (B, W, d)."""
        parts = [self.cat(batch["category"]), self.loc(batch["loc"]),
                 self.t_ah(batch["arr_h"]) + self.t_aw(batch["arr_w"]),
                 self.t_dh(batch["dep_h"]) + self.t_dw(batch["dep_w"])]
        if self.t_abs is not None:
            parts.append(self.t_abs(batch["arr_days"]))
        return self.fc(torch.cat(parts, dim=-1))

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        mask = batch["mask"]
        x = self.pos(self.tokens(batch))
        # a window with no real visit would make attention all -inf (NaN): let such rows attend, then zero them
        pad = ~mask
        empty = pad.all(1)
        if empty.any():
            pad = pad.clone()
            pad[empty] = False
        h = self.encoder(x, src_key_padding_mask=pad)
        return h * mask.unsqueeze(-1).to(h.dtype)


class POIEmbedding(nn.Module):
    """The ME-POI table E with its usage head q_theta and per-POI mixture logits alpha (section 2.5)."""

    def __init__(self, n_poi: int, d: int, *, n_scales: int = 3, bins: int = 100):
        super().__init__()
        self.n_poi = check_int(n_poi, "n_poi", min=1)
        self.d = check_int(d, "d", min=1)
        self.table = nn.Embedding(self.n_poi, self.d)  # N(0, 1) init, as nn.Embedding (released)
        self.usage_head = nn.Sequential(nn.Linear(self.d, self.d), nn.ReLU(),
                                        nn.Linear(self.d, check_int(bins, "bins", min=2)))
        self.alpha = nn.Embedding(self.n_poi, check_int(n_scales, "n_scales", min=1))
        nn.init.zeros_(self.alpha.weight)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.table(idx)

    def usage(self, idx: torch.Tensor) -> torch.Tensor:
        """q_theta(p) for POI rows `idx`: (n, bins) distributions."""
        return torch.softmax(self.usage_head(self.table(idx)), dim=-1)

    def log_usage(self, idx: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(self.usage_head(self.table(idx)), dim=-1)

    def mixture(self, idx: torch.Tensor, transfer: torch.Tensor) -> torch.Tensor:
        """p~_s = sum_k softmax(alpha_s)_k transfer[:, k], renormalised; transfer (n, K, bins)."""
        w = torch.softmax(self.alpha(idx), dim=-1)
        p = torch.einsum("nk,nkb->nb", w, transfer)
        return p / (p.sum(-1, keepdim=True) + 1e-12)
