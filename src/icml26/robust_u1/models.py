"""The CPU-scale models of the reproduction (spec 5, 6.2): restorer, Gaussian restoration policy, frozen
semantic encoder and the one-or-two-image VQA model.

- `TinyRestorer(channels=16, depth=5)`: `depth` 3x3 convolutions (ReLU between; edge-replicate padding),
  residual output clamp(x + f(x), 0, 1); 7.3k parameters and a receptive field of 11 px at the defaults.
  Stands in for BAGEL's image-generation branch (Stage I).
- `GaussianRestorationPolicy(restorer, std=0.05)`: pi(y | x) = N(mu(x), std^2 I) with mu the restorer: the
  stochastic sampler that Stage II's GRPO explores with (Flow-GRPO's SDE sampler in the paper). `log_prob` is
  the MEAN over pixels of the per-pixel Gaussian log-density (spec 9: summed log-probs over thousands of pixels
  make PPO ratios explode).
- `TinyEncoder`: a small CNN digit classifier whose unit-norm 64-d penultimate features are the frozen
  "CLIP" image embedding of the semantic reward (distinct from the VQA model, spec 9).
- `TinyVQA`: shared image encoder -> per-slot features, question embedding, fusion MLP -> answer logits;
  `forward(images: list of 1 or 2 tensors, question_ids)`. Slot 1 is the first image (the corrupted one in
  Robust-U1's joint mode, as the official context first shows the original image), slot 2 the second (the
  restored one); an absent slot contributes zeros. The fusion layer's slot-2 (and extra-feature) weights start
  at zero, so pretraining on one image leaves them at zero. `init_slots(mode)` prepares such a one-image model
  for joint reasoning (issue 34): "restored" (Stage III's default) moves the pretrained slot-1 weights to slot 2,
  so the joint model starts as the general model answering from the restored image and learns to use the
  corrupted one; "corrupted" keeps them (the restored-image path starts blind, zero weights: the earlier
  reading); "both" puts half in each slot (the general model on the mean of the two images' features).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from icml26.common.validation import check_bool, check_float, check_int, check_tensor
from icml26.robust_u1._checks import check_images, check_module
from icml26.robust_u1.data import N_ANSWERS, N_QUESTIONS

SLOT_INITS = ("restored", "corrupted", "both")

__all__ = ["SLOT_INITS", "ConvFeatures", "GaussianRestorationPolicy", "TinyEncoder", "TinyRestorer", "TinyVQA"]


class TinyRestorer(nn.Module):
    """Residual CNN restorer: y = clamp(x + f(x), 0, 1), f = `depth` conv3x3 layers with ReLU between.

    Args:
        channels: hidden width (default 16); depth: number of conv layers, >= 2 (default 5);
        in_channels: image channels (default 1). PyTorch's default initialisation everywhere (a zero-initialised
        last layer, i.e. starting from the identity map, trained markedly worse: validation SSIM 0.71 vs 0.78
        after the spec's 10 SFT epochs).
    Shapes: (N, in_channels, H, W) in [0, 1] -> same.
    """

    def __init__(self, channels: int = 16, depth: int = 5, in_channels: int = 1) -> None:
        super().__init__()
        channels = check_int(channels, "channels", min=1)
        depth = check_int(depth, "depth", min=2)
        in_channels = check_int(in_channels, "in_channels", min=1)
        dims = [in_channels] + [channels] * (depth - 1) + [in_channels]
        self.convs = nn.ModuleList(nn.Conv2d(a, b, 3, padding=1, padding_mode="replicate")
                                   for a, b in zip(dims[:-1], dims[1:]))
        self.in_channels = in_channels

    def residual(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        inplace = not torch.is_grad_enabled()  # no graph to keep: ReLU in place (same values, one buffer less)
        for i, conv in enumerate(self.convs):
            h = conv(h)
            if i < len(self.convs) - 1:
                h = F.relu(h, inplace=inplace)
        return h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x + self.residual(x)).clamp(0.0, 1.0)


class GaussianRestorationPolicy(nn.Module):
    """pi_theta(y | x) = N(mu_theta(x), sigma^2 I), mu_theta = `restorer` (any nn.Module image -> image).

    Args:
        restorer: the mean network; std: sigma > 0 (default 0.05, in image units);
        learn_std: when True sigma is a learnable scalar (log-parametrised), else a fixed buffer.
    Methods (x: (N, C, H, W)):
        mean(x) -> (N, C, H, W); sample(x, group_size, generator) -> (y (N, G, C, H, W), mu);
        log_prob(x, y, mu=None) -> per-sample mean-over-pixels log-density, shape y.shape[:-3];
        kl_to(ref, x) -> (N,) mean-over-pixels KL(pi || ref) (equal sigmas: |mu - mu_ref|^2 / (2 sigma^2)).
    """

    def __init__(self, restorer: nn.Module, std: float = 0.05, learn_std: bool = False) -> None:
        super().__init__()
        self.restorer = check_module(restorer, "restorer")
        std = check_float(std, "std", min=0.0, min_open=True)
        self.learn_std = check_bool(learn_std, "learn_std")
        log_std = torch.tensor(float(std)).log()
        if self.learn_std:
            self.log_std = nn.Parameter(log_std)
        else:
            self.register_buffer("log_std", log_std)

    @property
    def std(self) -> torch.Tensor:
        return self.log_std.exp()

    def mean(self, x: Any) -> torch.Tensor:
        x = check_images(x, "x")
        return self.restorer(x.to(next(self.restorer.parameters(), x).dtype))

    forward = mean

    def sample(self, x: Any, group_size: int = 8, generator: torch.Generator | None = None
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """G samples per input: y = mu + sigma eps, (N, G, C, H, W) (not clamped), and mu (N, C, H, W)."""
        g = check_int(group_size, "group_size", min=1)
        with torch.no_grad():
            mu = self.mean(x)
            eps = torch.randn((mu.shape[0], g, *mu.shape[1:]), generator=generator, dtype=mu.dtype, device=mu.device)
            return mu.unsqueeze(1) + self.std.detach() * eps, mu

    def log_prob(self, x: Any, y: Any, mu: torch.Tensor | None = None) -> torch.Tensor:
        """Mean over (C, H, W) of log N(y; mu(x), sigma^2); y is (N, C, H, W) or (N, G, C, H, W)."""
        y = check_tensor(y, "y", ndim=(4, 5))
        if mu is None:
            mu = self.mean(x)
        m = mu if y.dim() == 4 else mu.unsqueeze(1)
        if m.shape[0] != y.shape[0] or m.shape[-3:] != y.shape[-3:]:
            raise ValueError(f"y must be (N, [G,] C, H, W) matching the mean {tuple(mu.shape)}, got {tuple(y.shape)}")
        std = self.std
        lp = -((y - m) ** 2) / (2 * std ** 2) - torch.log(std) - 0.5 * math.log(2 * math.pi)
        return lp.flatten(-3).mean(-1)

    def kl_to(self, ref_policy: GaussianRestorationPolicy, x: Any, mu: torch.Tensor | None = None) -> torch.Tensor:
        """(N,) mean-over-pixels KL(pi_theta(.|x) || ref(.|x)); gradients flow to this policy only."""
        if not isinstance(ref_policy, GaussianRestorationPolicy):
            raise TypeError(f"ref_policy must be a GaussianRestorationPolicy, got {type(ref_policy).__name__}")
        x = check_images(x, "x")
        if mu is None:
            mu = self.mean(x)
        with torch.no_grad():
            mu_r = ref_policy.mean(x)
            s_r = ref_policy.std
        s = self.std
        kl = torch.log(s_r / s) + (s ** 2 + (mu - mu_r) ** 2) / (2 * s_r ** 2) - 0.5
        return kl.flatten(1).mean(1)

    def frozen_copy(self) -> GaussianRestorationPolicy:
        """A deep copy with gradients off (the reference policy of the KL term)."""
        ref = copy.deepcopy(self)
        for p in ref.parameters():
            p.requires_grad_(False)
        return ref.eval()


def _max_pool2_values(h: torch.Tensor) -> torch.Tensor:
    """2 x 2, stride-2 max pooling (floor mode) as two element-wise maxima of strided views: the values of
    `F.max_pool2d(h, 2)` (max is exact), 5-8x faster than its CPU kernel on these small NCHW maps. Inference
    only: with a graph `ConvFeatures` keeps max_pool2d (a hand-written backward was no faster)."""
    h = h[..., : h.shape[-2] // 2 * 2, : h.shape[-1] // 2 * 2]
    t = torch.maximum(h[..., 0::2, :], h[..., 1::2, :])
    return torch.maximum(t[..., 0::2], t[..., 1::2])


class ConvFeatures(nn.Module):
    """conv3x3(16) - ReLU - maxpool2 - conv3x3(32) - ReLU - maxpool2 - linear(dim) - ReLU: (N, C, H, W) -> (N, dim)."""

    def __init__(self, in_channels: int = 1, image_size: int = 24, dim: int = 64, width: int = 16) -> None:
        super().__init__()
        in_channels = check_int(in_channels, "in_channels", min=1)
        image_size = check_int(image_size, "image_size", min=4)
        dim = check_int(dim, "dim", min=1)
        width = check_int(width, "width", min=1)
        self.c1 = nn.Conv2d(in_channels, width, 3, padding=1)
        self.c2 = nn.Conv2d(width, 2 * width, 3, padding=1)
        side = image_size // 4
        self.fc = nn.Linear(2 * width * side * side, dim)
        self.image_size, self.in_channels, self.dim = image_size, in_channels, dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.image_size or x.shape[-2] != self.image_size or x.shape[1] != self.in_channels:
            raise ValueError(f"images must be (N, {self.in_channels}, {self.image_size}, {self.image_size}), got "
                             f"{tuple(x.shape)}")
        if not torch.is_grad_enabled():
            # inference: pool first, then ReLU in place on the 4x smaller map. max and ReLU commute exactly
            # (ReLU is monotone), so the values are bit for bit those of the training path below (and of
            # F.max_pool2d(F.relu(.), 2))
            h = F.relu_(_max_pool2_values(self.c1(x)))
            h = F.relu_(_max_pool2_values(self.c2(h)))
            return F.relu_(self.fc(h.flatten(1)))
        h = F.max_pool2d(F.relu(self.c1(x)), 2)  # with a graph: max_pool2d's own backward (first maximum)
        h = F.max_pool2d(F.relu(self.c2(h)), 2)
        return F.relu(self.fc(h.flatten(1)))


class TinyEncoder(nn.Module):
    """Frozen "CLIP" stand-in: a digit classifier; `embed(x)` = unit-norm penultimate features (N, dim).

    Args: in_channels (1), image_size (24), dim (64), n_classes (10). `forward(x)` -> class logits.
    """

    def __init__(self, in_channels: int = 1, image_size: int = 24, dim: int = 64, n_classes: int = 10) -> None:
        super().__init__()
        self.features = ConvFeatures(in_channels, image_size, dim)
        self.head = nn.Linear(dim, check_int(n_classes, "n_classes", min=2))

    def forward(self, x: Any) -> torch.Tensor:
        return self.head(self.features(check_images(x, "x")))

    def embed(self, x: Any) -> torch.Tensor:
        return F.normalize(self.features(check_images(x, "x")), dim=-1)

    def freeze(self) -> TinyEncoder:
        for p in self.parameters():
            p.requires_grad_(False)
        return self.eval()


class TinyVQA(nn.Module):
    """Image(s) + question id -> answer logits (N, n_answers).

    Args:
        n_questions (11), n_answers (12), image_size (24), in_channels (1), dim: image feature width (64),
        q_dim: question embedding width (32), hidden: fusion MLP width (128), max_images: slots (2),
        extra_dim: width of optional extra fusion inputs (e.g. degradation estimates; 0 = none).
    forward(images, question_ids, extra=None): images is a list/tuple of 1..max_images tensors
    (N, C, H, W) in [0, 1] (one tensor alone is read as [tensor]); question_ids (N,) ints in 0..n_questions-1;
    extra (N, extra_dim) when extra_dim > 0.
    """

    def __init__(self, n_questions: int = N_QUESTIONS, n_answers: int = N_ANSWERS, image_size: int = 24,
                 in_channels: int = 1, dim: int = 64, q_dim: int = 32, hidden: int = 128, max_images: int = 2,
                 extra_dim: int = 0) -> None:
        super().__init__()
        self.n_questions = check_int(n_questions, "n_questions", min=1)
        self.n_answers = check_int(n_answers, "n_answers", min=2)
        self.max_images = check_int(max_images, "max_images", min=1)
        self.extra_dim = check_int(extra_dim, "extra_dim", min=0)
        q_dim, hidden = check_int(q_dim, "q_dim", min=1), check_int(hidden, "hidden", min=1)
        self.encoder = ConvFeatures(in_channels, image_size, dim)
        self.question = nn.Embedding(self.n_questions, q_dim)
        self.fuse = nn.Linear(self.max_images * dim + q_dim + self.extra_dim, hidden)
        self.out = nn.Sequential(nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, self.n_answers))
        self.dim, self.q_dim = dim, q_dim
        with torch.no_grad():  # slots 2.. and extra features start switched off (see module docstring)
            self.fuse.weight[:, dim:self.max_images * dim].zero_()
            if self.extra_dim:
                self.fuse.weight[:, -self.extra_dim:].zero_()

    @torch.no_grad()
    def init_slots(self, mode: str = "restored") -> TinyVQA:
        """Share slot 1's fusion weights with slot 2 for a model trained on one image (see the module docstring):
        mode "restored" (move them to slot 2), "corrupted" (keep: slot 2 stays at zero) or "both" (half each).
        Returns self."""
        if mode not in SLOT_INITS:
            raise ValueError(f"mode must be one of {SLOT_INITS}, got {mode!r}")
        if self.max_images < 2:
            raise ValueError("init_slots needs max_images >= 2")
        w, d = self.fuse.weight, self.dim
        if mode == "restored":
            w[:, d:2 * d] = w[:, :d]
            w[:, :d] = 0.0
        elif mode == "both":
            w[:, :d] *= 0.5
            w[:, d:2 * d] = w[:, :d]
        return self

    def _images(self, images: Any) -> list[torch.Tensor]:
        if isinstance(images, torch.Tensor):
            images = [images]
        if not isinstance(images, Sequence) or isinstance(images, (str, bytes)) or not 1 <= len(images) <= self.max_images:
            raise ValueError(f"images must be a list of 1..{self.max_images} image tensors (N, C, H, W), got "
                             f"{type(images).__name__}{'' if not isinstance(images, Sequence) else f' of {len(images)}'}")
        out = [check_images(im, f"images[{i}]") for i, im in enumerate(images)]
        if any(im.shape != out[0].shape for im in out):
            raise ValueError(f"images must share one shape, got {[tuple(im.shape) for im in out]}")
        return out

    def image_features(self, images: Any) -> torch.Tensor:
        """(N, max_images * dim): per-slot encoder features, zeros for absent slots."""
        ims = self._images(images)
        dt = self.fuse.weight.dtype
        feats = [self.encoder(im.to(dt)) for im in ims]
        n = ims[0].shape[0]
        feats += [torch.zeros(n, self.dim, dtype=dt, device=feats[0].device)] * (self.max_images - len(ims))
        return torch.cat(feats, dim=1)

    def forward(self, images: Any, question_ids: Any, extra: torch.Tensor | None = None) -> torch.Tensor:
        f = self.image_features(images)
        q = check_tensor(question_ids, "question_ids", ndim=1, floating=False)
        if q.is_floating_point():
            if not bool((q == q.round()).all()):
                raise ValueError("question_ids must be integers (not truncated)")
        q = q.long()
        if len(q) != f.shape[0]:
            raise ValueError(f"question_ids must have one id per image ({f.shape[0]}), got {len(q)}")
        if len(q) and (int(q.min()) < 0 or int(q.max()) >= self.n_questions):
            raise ValueError(f"question_ids must lie in 0..{self.n_questions - 1}, got [{int(q.min())}, {int(q.max())}]")
        parts = [f, self.question(q)]
        if self.extra_dim:
            if extra is None:
                raise ValueError(f"extra must be given: this model has extra_dim={self.extra_dim}")
            extra = check_tensor(extra, "extra", shape=(f.shape[0], self.extra_dim))
            parts.append(extra.to(f.dtype))
        elif extra is not None:
            raise ValueError("extra was given but this model has extra_dim=0")
        return self.out(self.fuse(torch.cat(parts, dim=1)))

    @torch.no_grad()
    def predict(self, images: Any, question_ids: Any, batch_size: int = 512) -> torch.Tensor:
        """(N,) argmax answers, evaluated in eval mode in batches of `batch_size`."""
        ims = self._images(images)
        q = check_tensor(question_ids, "question_ids", ndim=1, floating=False, min_size=0)
        if len(q) != ims[0].shape[0]:
            raise ValueError(f"question_ids must have one id per image ({ims[0].shape[0]}), got {len(q)}")
        bs = check_int(batch_size, "batch_size", min=1)
        was = self.training
        self.eval()
        try:
            return torch.cat([self([im[s:s + bs] for im in ims], q[s:s + bs]).argmax(-1)
                              for s in range(0, len(q), bs)]) if len(q) else torch.zeros(0, dtype=torch.long)
        finally:
            self.train(was)
