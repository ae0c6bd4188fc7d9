"""Baselines behind the same interface as Robust-U1 (spec 4), plus classical restorers for claim check 4.

Understanding baselines (each starts from the clean-pretrained "general" `TinyVQA`, deep-copied at every
`fit`, and fine-tunes it on the shared `VQAStream` for the same epochs and learning rate as Robust-U1):

- `GeneralModel(vqa)`: no robustness training; answers directly from the corrupted image (BAGEL / Qwen2.5-VL
  in the paper). `fit` is a no-op.
- `CorruptedFinetune`: cross-entropy on (corrupted image, question, answer).
- `FeatureAlignment(mode="fare")`: FARE / Robust CLIP, CE + lam |E(x_c) - E_0(x)|^2 with E the model's image
  encoder and E_0 the frozen encoder of the general model on the CLEAN image (unsupervised alignment;
  Schlarmann et al. 2024). mode="tecoa": CE + CE of the scaled cosine between E(x_c) and fixed class anchors
  (the general encoder's mean clean embedding per digit: our stand-in for TeCoA's text-class anchors; the
  perturbation is the corruption, not an adversarial attack).
- `DegradationAwareReasoner`: Robust-R1-like: auxiliary heads predict the corruption kind and severity from
  the image features; their softmax vectors are fed into the fusion MLP (the CPU analogue of reasoning
  explicitly about degradation parameters), loss CE + 0.5 (CE_kind + CE_sev).
- `RecoveredOnly(vqa, policy)`: ablation, reasons over the recovered image only.

Every method: `fit(stream, epochs=8, lr=1e-3, progress=None) -> self`, `logits(x_c, question_ids)`,
`predict(x_c, question_ids) -> (N,) answers`.

Restorers (nn.Module, (N, C, H, W) in [0, 1] -> same): `Identity`, `MedianFilter(3)`, `GaussianFilter(sigma)`,
`RidgeRestorer` (a linear map of the flattened image, fitted in closed form).
"""

from __future__ import annotations

import copy
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from icml26.common.validation import check_choice, check_float, check_int
from icml26.robust_u1._checks import check_images, check_module
from icml26.robust_u1.corruptions import KINDS, _replicate_conv, gaussian_kernel1d
from icml26.robust_u1.data import CachedStream, VQABatch, VQAStream
from icml26.robust_u1.models import GaussianRestorationPolicy, TinyVQA
from icml26.robust_u1.training import restore, train_vqa

__all__ = [
    "CorruptedFinetune",
    "DegradationAwareReasoner",
    "FeatureAlignment",
    "GaussianFilter",
    "GeneralModel",
    "Identity",
    "MedianFilter",
    "RecoveredOnly",
    "RidgeRestorer",
    "VQAMethod",
    "general_model",
]


def _check_stream(stream: Any) -> VQAStream | CachedStream:
    if not isinstance(stream, (VQAStream, CachedStream)):
        raise TypeError(f"stream must be a VQAStream or CachedStream, got {type(stream).__name__}")
    return stream


class VQAMethod:
    """Shared plumbing: holds the pretrained `vqa` (never modified) and the fitted copy `model_`."""

    def __init__(self, vqa: TinyVQA) -> None:
        if not isinstance(vqa, TinyVQA):
            raise TypeError(f"vqa must be a TinyVQA, got {type(vqa).__name__}")
        self.vqa = vqa
        self.model_: nn.Module | None = None

    def _fresh(self) -> nn.Module:
        return copy.deepcopy(self.vqa)

    def loss(self, batch: VQABatch) -> torch.Tensor:  # pragma: no cover - each method defines it
        raise NotImplementedError

    def fit(self, stream: VQAStream, epochs: int = 8, lr: float = 1e-3, progress: str | None = None) -> VQAMethod:
        """Fine-tune a fresh copy of the pretrained model on `stream` (a second fit starts over)."""
        _check_stream(stream)
        self.model_ = self._fresh()
        self.history_ = train_vqa(self.model_, stream, self.loss, epochs=epochs, lr=lr, progress=progress)
        return self

    def _model(self) -> nn.Module:
        return self.model_ if self.model_ is not None else self.vqa

    def logits(self, x_c: Any, question_ids: Any) -> torch.Tensor:
        return self._model()([x_c], question_ids)

    @torch.no_grad()
    def predict(self, x_c: Any, question_ids: Any, batch_size: int = 512) -> torch.Tensor:
        """(N,) answer ids for corrupted images x_c (N, C, H, W) and question ids (N,)."""
        x_c = check_images(x_c, "x_c")
        q = torch.as_tensor(question_ids)
        if q.dim() != 1 or len(q) != len(x_c):
            raise ValueError(f"question_ids must be (N,) with N = {len(x_c)}, got shape {tuple(q.shape)}")
        bs = check_int(batch_size, "batch_size", min=1)
        m = self._model()
        was = m.training
        m.eval()
        try:
            return torch.cat([self.logits(x_c[s:s + bs], q[s:s + bs]).argmax(-1) for s in range(0, len(q), bs)])
        finally:
            m.train(was)


class GeneralModel(VQAMethod):
    """The clean-pretrained model answering from the corrupted image; `fit` does nothing."""

    def fit(self, stream: VQAStream | None = None, epochs: int = 0, lr: float = 0.0,
            progress: str | None = None) -> GeneralModel:
        return self


def general_model(vqa: TinyVQA) -> GeneralModel:
    """The general-MLLM baseline around a clean-pretrained `TinyVQA`."""
    return GeneralModel(vqa)


class CorruptedFinetune(VQAMethod):
    """Fine-tune on corrupted images with cross-entropy."""

    def loss(self, batch: VQABatch) -> torch.Tensor:
        return F.cross_entropy(self.model_([batch.x_c], batch.question), batch.answer)


class FeatureAlignment(VQAMethod):
    """Black-box feature alignment: FARE (default) or TeCoA-style anchors; see the module docstring.

    Args: vqa; mode "fare" | "tecoa"; weight lam of the alignment term (1.0); scale of the TeCoA cosine
    logits (10.0).
    """

    def __init__(self, vqa: TinyVQA, mode: str = "fare", weight: float = 1.0, scale: float = 10.0) -> None:
        super().__init__(vqa)
        self.mode, self.weight, self.scale = mode, weight, scale
        self._check()

    def _check(self) -> None:
        check_choice(self.mode, "mode", ("fare", "tecoa"))
        check_float(self.weight, "weight", min=0.0)
        check_float(self.scale, "scale", min=0.0, min_open=True)

    def fit(self, stream: VQAStream, epochs: int = 8, lr: float = 1e-3, progress: str | None = None
            ) -> FeatureAlignment:
        self._check()
        _check_stream(stream)
        self.frozen_ = copy.deepcopy(self.vqa.encoder).eval()
        for p in self.frozen_.parameters():
            p.requires_grad_(False)
        if self.mode == "tecoa":
            with torch.no_grad():
                e = F.normalize(self.frozen_(stream.images), dim=-1)
                self.anchors_ = F.normalize(torch.stack([e[stream.labels == c].mean(0) for c in range(10)]), dim=-1)
        return super().fit(stream, epochs, lr, progress)

    def alignment_loss(self, x_c: torch.Tensor, x: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        """FARE: mean_i |E(x_c_i) - E_0(x_i)|^2; TeCoA: CE(scale * cos(E(x_c), anchors), labels)."""
        model = self._model()
        frozen = getattr(self, "frozen_", None)
        if frozen is None:
            frozen = copy.deepcopy(self.vqa.encoder).eval()
        if self.mode == "fare":
            with torch.no_grad():
                target = frozen(x)
            return (model.encoder(x_c) - target).pow(2).sum(1).mean()
        if labels is None:
            raise ValueError("labels are required for mode='tecoa'")
        cos = F.normalize(model.encoder(x_c), dim=-1) @ self.anchors_.T
        return F.cross_entropy(self.scale * cos, labels)

    def loss(self, batch: VQABatch) -> torch.Tensor:
        ce = F.cross_entropy(self.model_([batch.x_c], batch.question), batch.answer)
        return ce + self.weight * self.alignment_loss(batch.x_c, batch.x, batch.label)


class _DegradationAwareVQA(nn.Module):
    def __init__(self, vqa: TinyVQA, n_kinds: int) -> None:
        super().__init__()
        self.n_kinds, self.n_sev = n_kinds + 1, 6  # kinds + "clean"; severities 0..5
        extra = self.n_kinds + self.n_sev
        self.vqa = TinyVQA(vqa.n_questions, vqa.n_answers, vqa.encoder.image_size, vqa.encoder.in_channels,
                           vqa.dim, vqa.q_dim, vqa.fuse.out_features, vqa.max_images, extra_dim=extra)
        own = self.vqa.state_dict()
        for k, v in vqa.state_dict().items():
            if k == "fuse.weight":
                own[k][:, :v.shape[1]] = v
            else:
                own[k] = v.clone()
        self.vqa.load_state_dict(own)
        self.kind_head = nn.Linear(vqa.dim, self.n_kinds)
        self.sev_head = nn.Linear(vqa.dim, self.n_sev)

    def forward(self, images: Any, question_ids: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        ims = self.vqa._images(images)
        f = self.vqa.encoder(ims[0].to(self.kind_head.weight.dtype))
        kind, sev = self.kind_head(f), self.sev_head(f)
        extra = torch.cat([kind.softmax(-1), sev.softmax(-1)], dim=1)
        return self.vqa(ims, question_ids, extra=extra), kind, sev


class DegradationAwareReasoner(VQAMethod):
    """Robust-R1-like degradation-aware reasoning (no pixels recovered); `aux_weight` 0.5 (spec 6.2).

    `degradation_logits(x)` -> (kind logits (N, n_kinds + 1), severity logits (N, 6)); the last kind is "clean".
    """

    def __init__(self, vqa: TinyVQA, n_kinds: int = len(KINDS), aux_weight: float = 0.5) -> None:
        super().__init__(vqa)
        self.n_kinds, self.aux_weight = n_kinds, aux_weight
        self._check()
        self.model_ = None

    def _check(self) -> None:
        check_int(self.n_kinds, "n_kinds", min=1)
        check_float(self.aux_weight, "aux_weight", min=0.0)

    def _fresh(self) -> nn.Module:
        self._check()
        return _DegradationAwareVQA(self.vqa, self.n_kinds)

    def _model(self) -> nn.Module:
        if self.model_ is None:  # unfitted: the general model with untrained heads (fusion inputs start at zero)
            self.model_ = self._fresh()
        return self.model_

    def logits(self, x_c: Any, question_ids: Any) -> torch.Tensor:
        return self._model()([x_c], question_ids)[0]

    def degradation_logits(self, x: Any) -> tuple[torch.Tensor, torch.Tensor]:
        m = self._model()
        x = check_images(x, "x")
        f = m.vqa.encoder(x.to(m.kind_head.weight.dtype))
        return m.kind_head(f), m.sev_head(f)

    def loss(self, batch: VQABatch) -> torch.Tensor:
        ans, kind, sev = self.model_([batch.x_c], batch.question)
        if int(batch.kind.max()) >= self.model_.n_kinds:
            raise ValueError(f"batch kind index {int(batch.kind.max())} exceeds n_kinds={self.n_kinds}")
        aux = F.cross_entropy(kind, batch.kind) + F.cross_entropy(sev, batch.severity)
        return F.cross_entropy(ans, batch.answer) + self.aux_weight * aux


class RecoveredOnly(VQAMethod):
    """Ablation: fine-tune and answer on the recovered image alone (policy mean of the corrupted input)."""

    def __init__(self, vqa: TinyVQA, policy: GaussianRestorationPolicy | nn.Module) -> None:
        super().__init__(vqa)
        self.policy = check_module(policy, "policy")

    def _recover(self, x_c: torch.Tensor) -> torch.Tensor:
        fn = self.policy.mean if isinstance(self.policy, GaussianRestorationPolicy) else self.policy
        return restore(fn, x_c)

    def logits(self, x_c: Any, question_ids: Any, x_r: torch.Tensor | None = None) -> torch.Tensor:
        """x_r: the recovered images if already computed with this policy (skips the restorer)."""
        x_c = check_images(x_c, "x_c")
        x_r = self._recover(x_c) if x_r is None else check_images(x_r, "x_r")
        if x_r.shape != x_c.shape:
            raise ValueError(f"x_r {tuple(x_r.shape)} must match x_c {tuple(x_c.shape)}")
        return self._model()([x_r], question_ids)

    @torch.no_grad()
    def predict(self, x_c: Any, question_ids: Any, batch_size: int = 512, x_r: Any = None) -> torch.Tensor:
        if x_r is None:
            return super().predict(x_c, question_ids, batch_size)
        x_c, x_r = check_images(x_c, "x_c"), check_images(x_r, "x_r")
        q = torch.as_tensor(question_ids)
        if q.dim() != 1 or len(q) != len(x_c) or x_r.shape != x_c.shape:
            raise ValueError(f"question_ids (N,) and x_r {tuple(x_r.shape)} must match x_c {tuple(x_c.shape)}")
        m = self._model()
        was = m.training
        m.eval()
        try:
            return torch.cat([self.logits(x_c[s:s + batch_size], q[s:s + batch_size], x_r[s:s + batch_size])
                              .argmax(-1) for s in range(0, len(q), check_int(batch_size, "batch_size", min=1))])
        finally:
            m.train(was)

    def loss(self, batch: VQABatch) -> torch.Tensor:
        x_r = batch.x_r if batch.x_r is not None else self._recover(batch.x_c)  # x_r: the stream's frozen restorer
        return F.cross_entropy(self.model_([x_r], batch.question), batch.answer)


# ------------------------------------------------------------------------------------------- restorers
class Identity(nn.Module):
    """No restoration."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class MedianFilter(nn.Module):
    """k x k median filter (edge pixels repeated); k odd (default 3)."""

    def __init__(self, size: int = 3) -> None:
        super().__init__()
        self.size = check_int(size, "size", min=1)
        if self.size % 2 == 0:
            raise ValueError(f"size must be odd, got {self.size}")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        r = self.size // 2
        p = F.pad(x, (r, r, r, r), mode="replicate")
        patches = F.unfold(p, self.size)  # (N, C k k, H W)
        return patches.view(n, c, self.size * self.size, h * w).median(dim=2).values.view(n, c, h, w)


class GaussianFilter(nn.Module):
    """Separable Gaussian filter of standard deviation `sigma` px (radius int(4 sigma + 0.5), edges repeated)."""

    def __init__(self, sigma: float = 1.0) -> None:
        super().__init__()
        self.sigma = check_float(sigma, "sigma", min=0.0, min_open=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = gaussian_kernel1d(self.sigma)
        n = x.shape[0]
        x = _replicate_conv(x, g.view(1, 1, -1).expand(n, 1, -1))
        return _replicate_conv(x, g.view(1, -1, 1).expand(n, -1, 1)).clamp(0.0, 1.0)


class RidgeRestorer(nn.Module):
    """Linear restorer y = clamp(W^T (x - m_x) + m_y, 0, 1) on flattened images, fitted by ridge regression.

    `fit(x_c, x, lam=1.0)`: W = (X^T X + lam I)^-1 X^T Y on centred (N, C H W) matrices (float64); inputs must
    share one image shape, which later inputs must match.
    """

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("weight", torch.zeros(0))
        self.register_buffer("mean_in", torch.zeros(0))
        self.register_buffer("mean_out", torch.zeros(0))
        self.shape: tuple[int, ...] | None = None

    def fit(self, x_c: Any, x: Any, lam: float = 1.0) -> RidgeRestorer:
        xc, xt = check_images(x_c, "x_c"), check_images(x, "x")
        if xc.shape != xt.shape:
            raise ValueError(f"x_c {tuple(xc.shape)} and x {tuple(xt.shape)} must have the same shape")
        lam = check_float(lam, "lam", min=0.0, min_open=True)
        a, b = xc.flatten(1).double(), xt.flatten(1).double()
        ma, mb = a.mean(0), b.mean(0)
        a, b = a - ma, b - mb
        gram = a.T @ a + lam * torch.eye(a.shape[1], dtype=torch.float64)
        self.weight = torch.linalg.solve(gram, a.T @ b).float()
        self.mean_in, self.mean_out = ma.float(), mb.float()
        self.shape = tuple(xc.shape[1:])
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.shape is None:
            raise ValueError("RidgeRestorer is not fitted: call fit(x_c, x) first")
        if tuple(x.shape[1:]) != self.shape:
            raise ValueError(f"x must be (N, {', '.join(map(str, self.shape))}), got {tuple(x.shape)}")
        y = (x.flatten(1).to(self.weight.dtype) - self.mean_in) @ self.weight + self.mean_out
        return y.view(x.shape).clamp(0.0, 1.0).to(x.dtype)
