"""Robust-U1 end to end: recover the corrupted image first, then reason over the corrupted AND the recovered
image together (paper Sec. 3; the official inference context shows the original image, then tells the model
to answer from the restored image and shows it).

    model = RobustU1(GaussianRestorationPolicy(TinyRestorer()), TinyVQA())
    model.fit(images, labels, reward=CompositeReward({...}))   # Stage I SFT, Stage II GRPO, Stage III joint SFT
    x_r = model.recover(x_c)                                  # the policy mean (N, C, H, W)
    answers = model.predict(x_c, question_ids)                # TinyVQA([x_c, x_r], q).argmax

`fit` runs the three stages in order on the user's clean images (corruptions drawn with `RandomCorruption`);
each stage is also available alone: `fit_restorer` (I), `align` (II) and `fit_reasoner` (III). Stage III here
fine-tunes the joint model for answers with cross-entropy (our CPU stand-in for SFT on interleaved reasoning
chains: the digit questions have no chain to supervise).
"""

from __future__ import annotations

import copy
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from icml26.common.validation import check_int
from icml26.robust_u1._checks import check_images
from icml26.robust_u1.corruptions import RandomCorruption
from icml26.robust_u1.data import CachedStream, PairStream, VQABatch, VQAStream
from icml26.robust_u1.models import SLOT_INITS, GaussianRestorationPolicy, TinyVQA
from icml26.robust_u1.training import GRPOConfig, GRPORestorationTrainer, restore, sft_restorer, train_vqa

__all__ = ["RobustU1"]


class RobustU1:
    """Visual self-recovery + joint reasoning.

    Args:
        policy: a `GaussianRestorationPolicy` whose mean is the restorer (trained in place by Stages I-II).
        vqa: a `TinyVQA` with max_images >= 2 (or any module with its `forward([x_c, x_r], q)` signature),
            ideally pretrained on clean images; Stage III fine-tunes a copy (`vqa_`), `vqa` is kept.
    """

    def __init__(self, policy: GaussianRestorationPolicy, vqa: nn.Module) -> None:
        if not isinstance(policy, GaussianRestorationPolicy):
            raise TypeError(f"policy must be a GaussianRestorationPolicy, got {type(policy).__name__}")
        if not isinstance(vqa, nn.Module):
            raise TypeError(f"vqa must be an nn.Module (e.g. TinyVQA), got {type(vqa).__name__}")
        if isinstance(vqa, TinyVQA) and vqa.max_images < 2:
            raise ValueError("vqa must accept two images (max_images >= 2) for joint reasoning")
        self.policy, self.vqa = policy, vqa
        self.vqa_: nn.Module | None = None

    # --------------------------------------------------------------------------------- inference
    def recover(self, x: Any, batch_size: int = 1024) -> torch.Tensor:
        """The restored images: the policy mean (N, C, H, W) in [0, 1], no gradients."""
        return restore(self.policy.mean, check_images(x, "x"), batch_size)

    def logits(self, x: Any, question_ids: Any, x_r: Any = None) -> torch.Tensor:
        """Answer logits (N, n_answers) of the joint model on [x, x_r]; x_r defaults to recover(x) (pass it when
        already computed with this policy)."""
        x = check_images(x, "x")
        x_r = self.recover(x) if x_r is None else check_images(x_r, "x_r")
        if x_r.shape != x.shape:
            raise ValueError(f"x_r {tuple(x_r.shape)} must match x {tuple(x.shape)}")
        model = self.vqa_ if self.vqa_ is not None else self.vqa
        return model([x, x_r], question_ids)

    @torch.no_grad()
    def predict(self, x: Any, question_ids: Any, batch_size: int = 512, x_r: Any = None) -> torch.Tensor:
        """(N,) answer ids from the corrupted images x (N, C, H, W) and question ids (N,)."""
        x = check_images(x, "x")
        q = torch.as_tensor(question_ids)
        if q.dim() != 1 or len(q) != len(x):
            raise ValueError(f"question_ids must be (N,) with N = {len(x)}, got shape {tuple(q.shape)}")
        if x_r is not None:
            x_r = check_images(x_r, "x_r")
            if x_r.shape != x.shape:
                raise ValueError(f"x_r {tuple(x_r.shape)} must match x {tuple(x.shape)}")
        bs = check_int(batch_size, "batch_size", min=1)
        model = self.vqa_ if self.vqa_ is not None else self.vqa
        was = model.training
        model.eval()
        try:
            return torch.cat([self.logits(x[s:s + bs], q[s:s + bs], None if x_r is None else x_r[s:s + bs])
                              .argmax(-1) for s in range(0, len(q), bs)])
        finally:
            model.train(was)

    # --------------------------------------------------------------------------------- stages
    def fit_restorer(self, images: Any, epochs: int = 10, lr: float = 1e-3, batch_size: int = 64, copies: int = 2,
                     corruption: RandomCorruption | None = None, seed: int = 0, loss: str = "l1",
                     progress: str | None = None) -> dict[str, Any]:
        """Stage I: supervised self-recovery on fresh corruptions of clean `images` (spec 6.2 defaults)."""
        pairs = PairStream(images, batch_size=batch_size, copies=copies, corruption=corruption, seed=seed)
        return sft_restorer(self.policy.restorer, pairs, epochs=epochs, lr=lr, loss=loss, progress=progress)

    def align(self, images: Any, reward: Any, config: GRPOConfig | None = None,
              corruption: RandomCorruption | None = None, seed: int = 0, eval_pairs: Any = None,
              progress: str | None = None) -> dict[str, Any]:
        """Stage II: GRPO of the policy with `reward(images, ref_images)`; KL to the policy as it is now."""
        trainer = GRPORestorationTrainer(self.policy, reward, config or GRPOConfig())
        pairs = trainer.stream(images, corruption, seed)
        return trainer.train(pairs, generator=torch.Generator().manual_seed(seed + 1), eval_pairs=eval_pairs,
                             progress=progress)

    def loss(self, batch: VQABatch) -> torch.Tensor:
        """Stage III loss: CE of the joint model on [x_c, recover(x_c)] (the batch's x_r when the stream carries
        it: it must come from this policy, frozen)."""
        x_r = batch.x_r if batch.x_r is not None else self.recover(batch.x_c)
        return F.cross_entropy(self.vqa_([batch.x_c, x_r], batch.question), batch.answer)

    def fit_reasoner(self, stream: VQAStream, epochs: int = 8, lr: float = 1e-3, progress: str | None = None,
                     init: str = "restored") -> dict[str, Any]:
        """Stage III: fine-tune a fresh copy of `vqa` on [x_c, recover(x_c)] with the restorer frozen.

        init: how a `TinyVQA` pretrained on one image starts seeing two (`TinyVQA.init_slots`): "restored" (the
        default: it starts as the general model answering from the restored image), "corrupted" (the
        restored-image path starts at zero weights) or "both"; ignored for other models."""
        if not isinstance(stream, (VQAStream, CachedStream)):
            raise TypeError(f"stream must be a VQAStream or CachedStream, got {type(stream).__name__}")
        if init not in SLOT_INITS:
            raise ValueError(f"init must be one of {SLOT_INITS}, got {init!r}")
        self.vqa_ = copy.deepcopy(self.vqa)
        if isinstance(self.vqa_, TinyVQA) and not bool(self.vqa_.fuse.weight[:, self.vqa_.dim:2 * self.vqa_.dim].any()):
            self.vqa_.init_slots(init)  # only a one-image model (slot 2 still at zero) is re-initialised
        return train_vqa(self.vqa_, stream, self.loss, epochs=epochs, lr=lr, progress=progress)

    def fit(self, images: Any, labels: Any, reward: Any, *, sft_epochs: int = 10, grpo: GRPOConfig | None = None,
            vqa_epochs: int = 8, vqa_lr: float = 1e-3, batch_size: int = 64,
            corruption: RandomCorruption | None = None, seed: int = 0, progress: bool = False) -> RobustU1:
        """All three stages on clean `images` (N, C, H, W) in [0, 1] with digit `labels` (N,).

        Returns self; the stage histories are in `history_` ({"sft", "grpo", "reasoner"}).
        """
        x = check_images(images, "images")
        stream = VQAStream(x, labels, batch_size=batch_size, corruption=corruption, seed=seed)
        h1 = self.fit_restorer(x, epochs=sft_epochs, batch_size=batch_size, corruption=corruption, seed=seed,
                               progress="stage I" if progress else None)
        h2 = self.align(x, reward, grpo, corruption, seed, progress="stage II" if progress else None)
        h3 = self.fit_reasoner(stream, epochs=vqa_epochs, lr=vqa_lr, progress="stage III" if progress else None)
        self.history_ = {"sft": h1, "grpo": h2, "reasoner": h3}
        return self
