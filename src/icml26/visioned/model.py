"""VisionED backbone, physics-informed pretraining and the property regressor (spec §2.2-§2.3).

Reconstructed ([EDG] ImageED + [ours]; the VisionED paper's exact architecture and pretext tasks were not
available, every choice is a constructor argument):
- `VisionEDViT`: one patch embedding shared by all shots ("view-agnostic"), fixed 2-D sin-cos positional
  embedding repeated per shot plus a learned shot embedding, one CLS token, pre-norm transformer blocks.
- `VisionEDPretrainer`, total loss L = L_MIM + lambda_phys L_phys + lambda_comp L_comp + lambda_con L_con
  (defaults 1, 0.5, 0.1):
    L_MIM  [EDG]  mask floor(L * mask_ratio) of the L = S * P patch tokens over all shots, encode the visible
                  ones, a light decoder predicts every patch's pixels; per-patch-normalised MSE on the masked
                  patches plus the same MSE on the visible ones ("recovery" term), both weight 1 (ImageED).
    L_phys [ours] MSE on z-scored label-free physics quantities of the same SCF (`density.PHYS_KEYS`).
    L_comp [ours] MSE on element counts (H, C, N, O, F, S, Cl).
    L_con  [ours] shots split into two random disjoint halves per molecule, each half encoded, symmetric
                  InfoNCE between the projected CLS embeddings (temperature 0.1).
  [ours] L_phys and L_comp read the CLS token of the *masked* MIM pass, and the two contrastive halves are
  masked with the same ratio: one cheap encoder pass per term instead of an extra full pass (CPU budget).
- `VisionEDRegressor`: CLS -> MLP(d -> 64 -> n_targets) on z-scored targets, MSE (or L1), AdamW with lr 3e-4
  for the backbone and 1e-3 for the head, weight decay 0.05, early stopping on validation MAE (the best
  epoch's weights are restored). scikit-learn style fit / predict.
Images enter as uint8 (B, S, C, H, W) and are scaled by 1/255; other integer types must hold 0..255 and are
scaled the same way; float images must already be in [0, 1] (a float image in 0..255 is refused, never used
unscaled). NaN/inf pixels, NaN pretext targets and NaN labels raise a ValueError naming the argument.
"""

from __future__ import annotations

import copy
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from icml26.common.validation import check_array, check_bool, check_choice, check_float, check_int, check_seed
from icml26.visioned.density import COMP_KEYS, PHYS_KEYS, check_no_leakage

__all__ = [
    "VisionEDViT",
    "VisionEDPretrainer",
    "VisionEDRegressor",
    "sincos_2d",
    "patchify",
    "mim_loss",
    "info_nce",
    "random_masking",
    "train_regressor",
]


def sincos_2d(grid: int, dim: int) -> torch.Tensor:
    """Fixed 2-D sin-cos positional embedding (MAE): (grid*grid, dim), dim divisible by 4."""
    if dim % 4:
        raise ValueError(f"dim must be divisible by 4 for the 2-D sin-cos embedding, got {dim}")
    omega = 1.0 / 10000 ** (torch.arange(dim // 4, dtype=torch.float64) / (dim / 4))
    ys, xs = torch.meshgrid(torch.arange(grid, dtype=torch.float64), torch.arange(grid, dtype=torch.float64),
                            indexing="ij")
    out = []
    for pos in (ys.reshape(-1), xs.reshape(-1)):
        arg = pos[:, None] * omega[None]
        out += [torch.sin(arg), torch.cos(arg)]
    return torch.cat(out, 1).float()


def patchify(x: torch.Tensor, patch: int) -> torch.Tensor:
    """(B, S, C, H, W) -> (B, S * (H/p) * (W/p), C * p * p), shot-major, row-major patches."""
    B, S, C, H, W = x.shape
    h, w = H // patch, W // patch
    x = x.reshape(B, S, C, h, patch, w, patch).permute(0, 1, 3, 5, 2, 4, 6)
    return x.reshape(B, S * h * w, C * patch * patch)


def random_masking(B: int, L: int, mask_ratio: float, generator: torch.Generator | None = None,
                   device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-sample random masking of exactly floor(L * mask_ratio) tokens.

    Returns (ids_keep (B, L_keep), mask (B, L) bool with True = masked, ids_restore (B, L)).
    """
    B, L = check_int(B, "B", min=1), check_int(L, "L", min=1)
    mask_ratio = check_float(mask_ratio, "mask_ratio", min=0.0, max=1.0, max_open=True)
    n_mask = int(math.floor(L * mask_ratio))
    noise = torch.rand(B, L, generator=generator).to(device)  # CPU generator: same masks on any device
    ids_shuffle = torch.argsort(noise, dim=1)
    ids_restore = torch.argsort(ids_shuffle, dim=1)
    ids_keep = ids_shuffle[:, : L - n_mask]
    mask = torch.ones(B, L, dtype=torch.bool, device=device)
    mask[:, : L - n_mask] = False
    mask = torch.gather(mask, 1, ids_restore)
    return ids_keep, mask, ids_restore


def mim_loss(pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor, norm_pix: bool = True,
             recovery_weight: float = 1.0) -> torch.Tensor:
    """ImageED reconstruction loss: per-patch-normalised MSE on masked patches + weight * MSE on visible ones.

    pred, target: (B, L, D) patch pixels; mask: (B, L) bool, True = masked. With `norm_pix`, each target patch
    is standardised by its own mean/std (MAE's norm_pix_loss).
    """
    if pred.shape != target.shape or pred.ndim != 3:
        raise ValueError(f"pred and target must have the same shape (B, L, D), got {tuple(pred.shape)} and "
                         f"{tuple(target.shape)}")
    if mask.shape != pred.shape[:2]:
        raise ValueError(f"mask must have shape (B, L) = {tuple(pred.shape[:2])}, got {tuple(mask.shape)}")
    if norm_pix:
        mu = target.mean(-1, keepdim=True)
        var = target.var(-1, keepdim=True, unbiased=False)
        target = (target - mu) / (var + 1e-6).sqrt()
    err = (pred - target).pow(2).mean(-1)
    m = mask.float()
    loss = (err * m).sum() / m.sum().clamp_min(1)
    if recovery_weight:
        loss = loss + recovery_weight * (err * (1 - m)).sum() / (1 - m).sum().clamp_min(1)
    return loss


def info_nce(za: torch.Tensor, zb: torch.Tensor, temperature: float = 0.1) -> torch.Tensor:
    """Symmetric InfoNCE between paired embeddings za, zb (B, d): positives on the diagonal."""
    if za.shape != zb.shape or za.ndim != 2:
        raise ValueError(f"za and zb must have the same shape (B, d), got {tuple(za.shape)} and {tuple(zb.shape)}")
    temperature = check_float(temperature, "temperature", min=0.0, min_open=True)
    za = F.normalize(za, dim=-1)
    zb = F.normalize(zb, dim=-1)
    logits = za @ zb.T / temperature
    labels = torch.arange(len(za), device=za.device)
    logits = logits.float()
    return 0.5 * (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels))


class VisionEDViT(nn.Module):
    """Multi-shot ViT over all shots jointly (spec §2.2).

    Args:
        img_size: image height = width (pixels). patch: patch size (pixels). in_chans: channels (RGB-D = 4).
        n_shots: shots per molecule S. dim, depth, heads, mlp_ratio: transformer size.
    Input: (B, S, C, H, W) uint8 (scaled by 1/255) or float in [0, 1]. forward() returns the CLS embedding (B, dim).
    """

    def __init__(self, img_size: int = 32, patch: int = 8, in_chans: int = 4, n_shots: int = 6, dim: int = 96,
                 depth: int = 4, heads: int = 4, mlp_ratio: float = 4.0, dropout: float = 0.0) -> None:
        super().__init__()
        img_size, patch = check_int(img_size, "img_size", min=1), check_int(patch, "patch", min=1)
        in_chans, n_shots = check_int(in_chans, "in_chans", min=1), check_int(n_shots, "n_shots", min=1)
        dim, depth = check_int(dim, "dim", min=4), check_int(depth, "depth", min=1)
        heads = check_int(heads, "heads", min=1)
        mlp_ratio = check_float(mlp_ratio, "mlp_ratio", min=0.0, min_open=True)
        dropout = check_float(dropout, "dropout", min=0.0, max=1.0, max_open=True)
        if img_size % patch:
            raise ValueError(f"img_size ({img_size}) must be divisible by patch ({patch})")
        if dim % heads:
            raise ValueError(f"dim ({dim}) must be divisible by heads ({heads})")
        self.config = dict(img_size=img_size, patch=patch, in_chans=in_chans, n_shots=n_shots, dim=dim,
                           depth=depth, heads=heads, mlp_ratio=mlp_ratio, dropout=dropout)
        self.img_size, self.patch, self.in_chans, self.n_shots, self.dim = img_size, patch, in_chans, n_shots, dim
        self.grid = img_size // patch
        self.n_patches = self.grid ** 2  # per shot
        self.patch_embed = nn.Conv2d(in_chans, dim, patch, stride=patch)
        self.register_buffer("pos_embed", sincos_2d(self.grid, dim), persistent=False)
        self.shot_embed = nn.Parameter(torch.zeros(n_shots, dim))
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.blocks = nn.ModuleList([
            nn.TransformerEncoderLayer(dim, heads, int(dim * mlp_ratio), dropout, activation="gelu",
                                       batch_first=True, norm_first=True) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        nn.init.normal_(self.shot_embed, std=0.02)
        nn.init.normal_(self.cls_token, std=0.02)
        w = self.patch_embed.weight.data
        nn.init.xavier_uniform_(w.view(w.shape[0], -1))

    def check_images(self, x: torch.Tensor | np.ndarray, name: str = "images") -> torch.Tensor:
        """Validate (B, S, C, H, W) images (S <= n_shots) and return them as float in [0, 1].

        uint8 and other integer images (values 0..255) are scaled by 1/255; float images must already lie in
        [0, 1]: a float image with values above 1 (e.g. 0..255 cast to float) raises a ValueError rather than
        being used unscaled. NaN/inf pixels and booleans are refused.
        """
        x = _as_image_tensor(x, name)
        want = (self.n_shots, self.in_chans, self.img_size, self.img_size)
        if x.ndim != 5 or tuple(x.shape[2:]) != want[1:] or not 1 <= x.shape[1] <= self.n_shots or len(x) == 0:
            raise ValueError(f"{name} must have shape (B, {want[0]}, {want[1]}, {want[2]}, {want[3]}) for this "
                             f"model config, got {tuple(x.shape)}")
        if x.dtype == torch.uint8:
            return x.float() / 255.0
        if not x.is_floating_point():  # other integer types: the same 0..255 scale as uint8
            lo, hi = int(x.min()), int(x.max())
            if lo < 0 or hi > 255:
                raise ValueError(f"{name}: integer images must hold 0..255, got values in [{lo}, {hi}]")
            return x.float() / 255.0
        x = x.float()
        if not bool(torch.isfinite(x).all()):
            raise ValueError(f"{name} must be finite; it has NaN/inf pixels")
        lo, hi = float(x.min()), float(x.max())
        if lo < 0.0 or hi > 1.0:
            raise ValueError(f"{name}: float images must be scaled to [0, 1], got values in [{lo:g}, {hi:g}]; pass "
                             "uint8 images (0..255) or divide by 255")
        return x

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """Patch tokens with positional + shot embeddings: (B, S, C, H, W) -> (B, S, P, dim)."""
        return self._embed(self.check_images(x))

    def _embed(self, x: torch.Tensor) -> torch.Tensor:
        B, S = x.shape[:2]
        tok = self.patch_embed(x.flatten(0, 1)).flatten(2).transpose(1, 2)  # (B*S, P, dim)
        tok = tok.reshape(B, S, self.n_patches, self.dim)
        return tok + self.pos_embed[None, None] + self.shot_embed[None, :S, None]

    def encode(self, tokens: torch.Tensor) -> torch.Tensor:
        """(B, L, dim) tokens -> (B, 1 + L, dim) after the CLS token, the blocks and the final norm."""
        x = torch.cat([self.cls_token.expand(len(tokens), -1, -1), tokens], 1)
        for blk in self.blocks:
            x = blk(x)
        return self.norm(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """CLS embedding (B, dim) of all shots."""
        x = self.check_images(x)
        if x.shape[1] != self.n_shots:
            raise ValueError(f"images must have {self.n_shots} shots for this model config, got {x.shape[1]}")
        return self.encode(self._embed(x).flatten(1, 2))[:, 0]

    def save_pretrained(self, directory: str | Path) -> Path:
        """Write config.json + model.pt to a local directory (no hub)."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.json").write_text(json.dumps(self.config, indent=2))
        torch.save(self.state_dict(), d / "model.pt")
        return d

    @classmethod
    def from_pretrained(cls, directory: str | Path) -> VisionEDViT:
        """Load a model written by `save_pretrained` (local directories only)."""
        d = Path(directory)
        if not (d / "config.json").exists():
            raise FileNotFoundError(f"directory {d} has no config.json (written by save_pretrained)")
        model = cls(**json.loads((d / "config.json").read_text()))
        model.load_state_dict(torch.load(d / "model.pt", map_location="cpu", weights_only=True))
        return model


def _as_image_tensor(x: Any, name: str) -> torch.Tensor:
    """numpy array / list / tensor -> tensor (dtype kept), or a TypeError naming `name`."""
    if isinstance(x, torch.Tensor):
        t = x
    elif isinstance(x, (np.ndarray, list, tuple)):
        arr = np.asarray(x)
        if arr.dtype.kind not in "uif":
            raise TypeError(f"{name} must hold numbers (uint8 0..255 or float 0..1), got dtype {arr.dtype}")
        t = torch.from_numpy(np.ascontiguousarray(arr))
    else:
        raise TypeError(f"{name} must be a numpy array or torch tensor, got {type(x).__name__}")
    if t.dtype == torch.bool or t.is_complex():
        raise TypeError(f"{name} must hold numbers (uint8 0..255 or float 0..1), got {t.dtype}")
    return t


class _MIMDecoder(nn.Module):
    """Light MAE decoder: visible latents + mask tokens -> per-patch pixels."""

    def __init__(self, enc: VisionEDViT, dim: int = 64, depth: int = 1, heads: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(enc.dim, dim)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.register_buffer("pos", sincos_2d(enc.grid, dim), persistent=False)
        self.shot = nn.Parameter(torch.zeros(enc.n_shots, dim))
        self.blocks = nn.ModuleList([nn.TransformerEncoderLayer(dim, heads, 4 * dim, 0.0, activation="gelu",
                                                                batch_first=True, norm_first=True)
                                     for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, enc.in_chans * enc.patch ** 2)
        nn.init.normal_(self.mask_token, std=0.02)
        nn.init.normal_(self.shot, std=0.02)
        self.n_patches = enc.n_patches

    def forward(self, latent: torch.Tensor, ids_restore: torch.Tensor, n_shots: int) -> torch.Tensor:
        x = self.proj(latent)
        B, L = ids_restore.shape
        vis = x[:, 1:]
        full = torch.cat([vis, self.mask_token.expand(B, L - vis.shape[1], -1)], 1)
        full = torch.gather(full, 1, ids_restore[..., None].expand(-1, -1, full.shape[-1]))
        pe = (self.pos[None] + self.shot[:n_shots, None]).reshape(1, n_shots * self.n_patches, -1)
        full = torch.cat([x[:, :1], full + pe], 1)
        for blk in self.blocks:
            full = blk(full)
        return self.head(self.norm(full))[:, 1:]


def _mlp(d_in: int, d_hidden: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, d_hidden), nn.GELU(), nn.Linear(d_hidden, d_out))


class VisionEDPretrainer(nn.Module):
    """Physics-informed, cross-scale pretraining of a `VisionEDViT` (spec §2.3). See the module docstring.

    Args:
        model: the backbone (trained in place).
        mask_ratio: fraction of patch tokens masked (EDG 0.25; default 0.5).
        weights: {"phys": lambda_phys, "comp": lambda_comp, "con": lambda_con}; a weight of 0 switches a head off
            (defaults 1.0, 0.5, 0.1). `mim` (default 1) may be given too.
        decoder_dim, decoder_depth: the light MIM decoder. temperature: InfoNCE temperature (0.1).
        lr, weight_decay, epochs, batch_size, seed: AdamW training loop settings. device: where to train.
    After `fit`: `history_` (per-epoch mean of every loss term), `phys_mean_`, `phys_std_`.
    """

    def __init__(self, model: VisionEDViT, mask_ratio: float = 0.5, weights: dict[str, float] | None = None,
                 decoder_dim: int = 64, decoder_depth: int = 1, temperature: float = 0.1, lr: float = 1e-3,
                 weight_decay: float = 0.05, epochs: int = 30, batch_size: int = 32, seed: int = 0,
                 progress: bool = False, device: str | torch.device = "cpu") -> None:
        super().__init__()
        self.device = torch.device(device)
        if not isinstance(model, VisionEDViT):
            raise TypeError(f"model must be a VisionEDViT, got {type(model).__name__}")
        if weights is not None and not isinstance(weights, dict):
            raise TypeError(f"weights must be a dict like {{'phys': 1.0}}, got {type(weights).__name__}")
        w = {"mim": 1.0, "phys": 1.0, "comp": 0.5, "con": 0.1}
        unknown = set(weights or {}) - set(w)
        if unknown:
            raise ValueError(f"weights: unknown keys {sorted(unknown)}; expected a subset of {sorted(w)}")
        w.update(weights or {})
        self.model, self.mask_ratio, self.weights, self.temperature = model, mask_ratio, w, temperature
        self.lr, self.weight_decay, self.epochs, self.batch_size, self.seed = lr, weight_decay, epochs, batch_size, seed
        self.progress = progress
        decoder_dim, decoder_depth = check_int(decoder_dim, "decoder_dim", min=4), check_int(decoder_depth,
                                                                                             "decoder_depth", min=1)
        if decoder_dim % 4:
            raise ValueError(f"decoder_dim must be divisible by 4 (4 attention heads, 2-D sin-cos), got {decoder_dim}")
        self._check_params()
        d = model.dim
        self.decoder = _MIMDecoder(model, decoder_dim, decoder_depth)
        self.phys_head = _mlp(d, d, len(PHYS_KEYS))
        self.comp_head = _mlp(d, d, len(COMP_KEYS))
        self.proj_head = _mlp(d, d, 64)
        self.history_: list[dict[str, float]] = []

    def _check_params(self) -> None:
        """Validate the settings (run by __init__ and again by fit, since attributes may be changed in between)."""
        self.mask_ratio = check_float(self.mask_ratio, "mask_ratio", min=0.0, max=1.0, max_open=True)
        for k, v in self.weights.items():
            self.weights[k] = check_float(v, f"weights[{k!r}]", min=0.0)
        self.temperature = check_float(self.temperature, "temperature", min=0.0, min_open=True)
        self.lr = check_float(self.lr, "lr", min=0.0, min_open=True)
        self.weight_decay = check_float(self.weight_decay, "weight_decay", min=0.0)
        self.epochs = check_int(self.epochs, "epochs", min=1)
        self.batch_size = check_int(self.batch_size, "batch_size", min=2)  # InfoNCE and batches need >= 2
        self.seed = check_seed(self.seed)
        check_bool(self.progress, "progress")

    # ------------------------------------------------------------------ losses
    def _masked_encode(self, tokens: torch.Tensor, g: torch.Generator | None):
        B, L, _ = tokens.shape
        ids_keep, mask, ids_restore = random_masking(B, L, self.mask_ratio, g, tokens.device)
        vis = torch.gather(tokens, 1, ids_keep[..., None].expand(-1, -1, tokens.shape[-1]))
        return self.model.encode(vis), mask, ids_restore

    def loss_terms(self, images: torch.Tensor, phys: torch.Tensor | None = None, comp: torch.Tensor | None = None,
                   generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
        """All enabled loss terms for one batch (images uint8 (B, S, C, H, W); phys z-scored (B, 9); comp (B, 7)).

        Returns {"mim", "phys", "comp", "con", "total"} (disabled terms are absent, except "total").
        """
        x = self.model.check_images(images)
        B, S = x.shape[:2]
        tok = self.model._embed(x)  # (B, S, P, d)
        out: dict[str, torch.Tensor] = {}
        latent, mask, ids_restore = self._masked_encode(tok.flatten(1, 2), generator)
        if self.weights["mim"]:
            pred = self.decoder(latent, ids_restore, S)
            out["mim"] = mim_loss(pred, patchify(x, self.model.patch), mask)
        cls = latent[:, 0]
        if self.weights["phys"] and phys is not None:
            out["phys"] = F.mse_loss(self.phys_head(cls), phys)
        if self.weights["comp"] and comp is not None:
            out["comp"] = F.mse_loss(self.comp_head(cls), comp)
        if self.weights["con"] and S >= 2 and B >= 2:
            perm = torch.argsort(torch.rand(B, S, generator=generator), dim=1).to(tok.device)
            half = S // 2
            views = []
            for idx in (perm[:, :half], perm[:, half:2 * half]):
                sel = torch.gather(tok, 1, idx[:, :, None, None].expand(-1, -1, tok.shape[2], tok.shape[3]))
                lat, _, _ = self._masked_encode(sel.flatten(1, 2), generator)
                views.append(self.proj_head(lat[:, 0]))
            out["con"] = info_nce(views[0], views[1], self.temperature)
        total = sum(self.weights[k] * v for k, v in out.items())
        out["total"] = total if isinstance(total, torch.Tensor) else torch.zeros(())
        return out

    def forward(self, batch: tuple) -> dict[str, torch.Tensor]:
        """`loss_terms(*batch)`: the module call that DistributedDataParallel wraps (its gradients are synced)."""
        return self.loss_terms(*batch)

    # ------------------------------------------------------------------ training
    def _targets(self, pretext: dict[str, Sequence[float]] | None, n: int):
        if pretext is None:
            return None, None
        if not isinstance(pretext, dict):
            raise TypeError(f"pretext must be a dict {{key: (N,) values}}, got {type(pretext).__name__}")
        check_no_leakage(list(pretext), [])
        missing = [k for k in PHYS_KEYS + COMP_KEYS if k not in pretext]
        if missing:
            raise ValueError(f"pretext is missing keys {missing} (from EDRecord.pretext)")
        cols = {k: check_array(pretext[k], f"pretext[{k!r}]", shape=(n,)) for k in PHYS_KEYS + COMP_KEYS}
        phys = np.stack([cols[k] for k in PHYS_KEYS], 1)
        comp = np.stack([cols[k] for k in COMP_KEYS], 1)
        self.phys_mean_ = phys.mean(0)
        self.phys_std_ = phys.std(0) + 1e-8
        phys = (phys - self.phys_mean_) / self.phys_std_
        return torch.tensor(phys, dtype=torch.float32), torch.tensor(comp, dtype=torch.float32)

    def fit(self, images: np.ndarray | torch.Tensor, pretext: dict[str, Sequence[float]] | None = None
            ) -> VisionEDPretrainer:
        """Pretrain on `images` (N, S, C, H, W) uint8 with label-free `pretext` {key: (N,)} (PHYS_KEYS + COMP_KEYS).

        A second `fit` continues from the current weights (warm start: backbone, heads and decoder are the
        same modules) with a fresh optimizer; `history_` is reset, it holds this fit's epochs only.
        """
        from tqdm.auto import tqdm

        self._check_params()
        X = _as_image_tensor(images, "images")
        self.model.check_images(X)  # validates shape, range and NaN of every image once
        n = len(X)
        if n < 2:
            raise ValueError(f"images must hold at least 2 molecules to pretrain, got {n}")
        phys, comp = self._targets(pretext, n)
        self.history_ = []
        torch.manual_seed(self.seed)
        g = torch.Generator().manual_seed(self.seed)
        self.to(self.device)
        params = [p for p in self.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=self.lr, weight_decay=self.weight_decay)
        self.train()
        dev = self.device
        for ep in tqdm(range(self.epochs), desc="pretrain", disable=not self.progress, leave=False):
            order = torch.randperm(n, generator=g)
            sums: dict[str, float] = {}
            nb = 0
            for s in range(0, n, self.batch_size):
                idx = order[s:s + self.batch_size]
                if len(idx) < 2:
                    continue
                terms = self.loss_terms(X[idx].to(dev), None if phys is None else phys[idx].to(dev),
                                        None if comp is None else comp[idx].to(dev), g)
                opt.zero_grad(set_to_none=True)
                terms["total"].backward()
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                opt.step()
                for k, v in terms.items():
                    sums[k] = sums.get(k, 0.0) + float(v.detach())
                nb += 1
            self.history_.append({k: v / max(nb, 1) for k, v in sums.items()} | {"epoch": ep})
        self.eval()
        return self


# ---------------------------------------------------------------------------------------------- fine-tuning
def _batches(n: int, bs: int, g: torch.Generator | None):
    order = torch.randperm(n, generator=g) if g is not None else torch.arange(n)
    return [order[s:s + bs] for s in range(0, n, bs)]


def train_regressor(net: nn.Module, param_groups: list[dict[str, Any]], X: torch.Tensor, y: torch.Tensor,
                    X_val: torch.Tensor | None = None, y_val: torch.Tensor | None = None, *, epochs: int = 30,
                    batch_size: int = 32, weight_decay: float = 0.05, loss: str = "mse", patience: int | None = None,
                    seed: int = 0, progress: bool = False, desc: str = "fine-tune",
                    device: str | torch.device = "cpu") -> dict[str, Any]:
    """Shared AdamW loop for the neural regressors: net(X[idx]) -> (B, T) on z-scored y (N, T).

    X (and X_val) may be a tuple of tensors indexed together (net(*[x[idx] for x in X])), e.g. point clouds
    with precomputed neighbour indices.

    Early stopping on validation MAE (z-scored units averaged over targets): the best epoch's weights are
    restored. Returns {"best_epoch", "val_mae", "epoch_times", "train_loss"}.
    """
    from tqdm.auto import tqdm

    check_choice(loss, "loss", ("mse", "l1"))
    epochs, batch_size = check_int(epochs, "epochs", min=1), check_int(batch_size, "batch_size", min=1)
    patience = None if patience is None else check_int(patience, "patience", min=0)
    lossf = F.mse_loss if loss == "mse" else F.l1_loss
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(param_groups, weight_decay=weight_decay)
    X = X if isinstance(X, tuple) else (X,)
    if X_val is not None and not isinstance(X_val, tuple):
        X_val = (X_val,)
    best, best_state, best_ep, bad = math.inf, None, -1, 0
    net.to(device)
    hist: dict[str, list[float]] = {"epoch_times": [], "val_mae": [], "train_loss": []}
    for ep in tqdm(range(epochs), desc=desc, disable=not progress, leave=False):
        net.train()
        t0 = time.perf_counter()
        tot = 0.0
        for idx in _batches(len(y), batch_size, g):
            opt.zero_grad(set_to_none=True)
            lv = lossf(net(*[x[idx].to(device) for x in X]), y[idx].to(device))
            lv.backward()
            opt.step()
            tot += float(lv.detach()) * len(idx)
        hist["epoch_times"].append(time.perf_counter() - t0)
        hist["train_loss"].append(tot / len(y))
        if X_val is not None:
            net.eval()
            with torch.no_grad():
                pv = torch.cat([net(*[x[idx].to(device) for x in X_val]).cpu()
                                for idx in _batches(len(y_val), 64, None)])
            mae = float((pv - y_val).abs().mean())
            hist["val_mae"].append(mae)
            if mae < best:
                best, best_ep, bad = mae, ep, 0
                best_state = copy.deepcopy(net.state_dict())
            else:
                bad += 1
                if patience is not None and bad > patience:
                    break
    if best_state is not None:
        net.load_state_dict(best_state)
    net.eval()
    return {"best_epoch": best_ep, "val_mae": best, **hist}


def _as_2d(y, name: str = "y") -> np.ndarray:
    y = check_array(y, name, ndim=(1, 2))
    return y[:, None] if y.ndim == 1 else y


class _Head(nn.Module):
    def __init__(self, backbone: nn.Module, d: int, n_out: int, hidden: int = 64) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = _mlp(d, hidden, n_out)

    def forward(self, x):
        return self.head(self.backbone(x))


class VisionEDRegressor:
    """Property regressor on multi-shot images: CLS -> MLP(d -> 64 -> n_targets) (spec §2.3, fine-tuning).

    Args:
        backbone: a (pretrained) `VisionEDViT`, deep-copied at every fit; None -> a fresh one from
            `backbone_config` (the "VisionED-scratch" baseline).
        targets: target names, e.g. ["gap_eV"] (checked against the pretext names: no leakage).
        hidden (64), lr_backbone (3e-4), lr_head (1e-3), weight_decay (0.05), epochs (30, the most epochs),
        batch_size (32), loss ("mse" | "l1"), patience (None = run all epochs; k = stop after k epochs without a
        better validation MAE; either way the best validation epoch's weights are kept), seed, device.
    fit(X, y, X_val=None, y_val=None): X (N, S, C, H, W) uint8 (or float in [0, 1]); y (N,) or (N, T), finite.
    predict(X) -> (N,) or (N, T). Each fit starts from the given backbone again (no state carried over).
    """

    def __init__(self, backbone: VisionEDViT | None = None, targets: Sequence[str] = ("gap_eV",), hidden: int = 64,
                 lr_backbone: float = 3e-4, lr_head: float = 1e-3, weight_decay: float = 0.05, epochs: int = 30,
                 batch_size: int = 32, loss: str = "mse", patience: int | None = None, seed: int = 0,
                 backbone_config: dict[str, Any] | None = None, progress: bool = False,
                 device: str | torch.device = "cpu") -> None:
        self.device = torch.device(device)
        self.backbone, self.targets, self.hidden = backbone, targets, hidden
        self.lr_backbone, self.lr_head, self.weight_decay = lr_backbone, lr_head, weight_decay
        self.epochs, self.batch_size, self.loss, self.patience, self.seed = epochs, batch_size, loss, patience, seed
        self.backbone_config = backbone_config
        self.progress = progress
        self._check_params()

    def _check_params(self) -> None:
        """Validate the settings (run by __init__ and again by fit, since attributes may be changed in between)."""
        if self.backbone is not None and not isinstance(self.backbone, VisionEDViT):
            raise TypeError(f"backbone must be a VisionEDViT or None, got {type(self.backbone).__name__}")
        t = [self.targets] if isinstance(self.targets, str) else list(self.targets)
        if not t or not all(isinstance(k, str) and k for k in t):
            raise ValueError(f"targets must be a non-empty list of names, got {self.targets!r}")
        self.targets = t
        check_no_leakage(PHYS_KEYS + COMP_KEYS, self.targets)
        self.hidden = check_int(self.hidden, "hidden", min=1)
        self.lr_backbone = check_float(self.lr_backbone, "lr_backbone", min=0.0)
        self.lr_head = check_float(self.lr_head, "lr_head", min=0.0, min_open=True)
        self.weight_decay = check_float(self.weight_decay, "weight_decay", min=0.0)
        self.epochs = check_int(self.epochs, "epochs", min=1)
        self.batch_size = check_int(self.batch_size, "batch_size", min=1)
        check_choice(self.loss, "loss", ("mse", "l1"))
        self.patience = None if self.patience is None else check_int(self.patience, "patience", min=0)
        self.seed = check_seed(self.seed)
        if self.backbone_config is None:
            self.backbone_config = {}
        if not isinstance(self.backbone_config, dict):
            raise TypeError(f"backbone_config must be a dict of VisionEDViT arguments, got "
                            f"{type(self.backbone_config).__name__}")
        check_bool(self.progress, "progress")

    def fit(self, X, y, X_val=None, y_val=None) -> VisionEDRegressor:
        self._check_params()
        torch.manual_seed(self.seed)
        bb = copy.deepcopy(self.backbone) if self.backbone is not None else VisionEDViT(**self.backbone_config)
        Xt = _check_shots(bb, X, "X")
        Y = _as_2d(y)
        if len(Y) != len(Xt):
            raise ValueError(f"X has {len(Xt)} rows but y has {len(Y)}")
        if Y.shape[1] != len(self.targets):
            raise ValueError(f"y has {Y.shape[1]} columns but targets={self.targets}")
        if (X_val is None) != (y_val is None):
            raise ValueError("X_val and y_val must be given together (or neither)")
        self.y_mean_, self.y_std_ = Y.mean(0), Y.std(0) + 1e-8
        self.net_ = _Head(bb, bb.dim, Y.shape[1], self.hidden)
        Xv = Yv = None
        if X_val is not None:
            Xv = _check_shots(bb, X_val, "X_val")
            Yv_raw = _as_2d(y_val, "y_val")
            if Yv_raw.shape != (len(Xv), Y.shape[1]):
                raise ValueError(f"y_val must have shape ({len(Xv)}, {Y.shape[1]}) to match X_val and y, got "
                                 f"{Yv_raw.shape}")
            Yv = torch.tensor((Yv_raw - self.y_mean_) / self.y_std_, dtype=torch.float32)
        groups = [{"params": list(self.net_.backbone.parameters()), "lr": self.lr_backbone},
                  {"params": list(self.net_.head.parameters()), "lr": self.lr_head}]
        self.history_ = train_regressor(
            self.net_, groups, Xt, torch.tensor((Y - self.y_mean_) / self.y_std_, dtype=torch.float32), Xv, Yv,
            epochs=self.epochs, batch_size=self.batch_size, weight_decay=self.weight_decay, loss=self.loss,
            patience=self.patience, seed=self.seed, progress=self.progress, desc="VisionED fine-tune",
            device=self.device)
        return self

    def predict(self, X) -> np.ndarray:
        if not hasattr(self, "net_"):
            raise RuntimeError("call fit before predict")
        Xt = _check_shots(self.net_.backbone, X, "X")
        self.net_.eval()
        with torch.no_grad():
            p = torch.cat([self.net_(Xt[idx].to(self.device)).cpu() for idx in _batches(len(Xt), 64, None)]).numpy()
        p = p * self.y_std_ + self.y_mean_
        return p[:, 0] if p.shape[1] == 1 else p


def _check_shots(model: VisionEDViT, X: Any, name: str) -> torch.Tensor:
    """All of `X` validated once (shape, shot count, range, NaN); returned in its own dtype for batching."""
    Xt = _as_image_tensor(X, name)
    model.check_images(Xt, name)
    if Xt.shape[1] != model.n_shots:
        raise ValueError(f"{name} must have {model.n_shots} shots for this backbone, got {Xt.shape[1]}")
    return Xt
