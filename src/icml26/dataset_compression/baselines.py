"""The paper's baselines behind the same interfaces as PCA (spec 4).

Selectors (`fit(X, y)` then `select(ipc) -> indices`, class-balanced, see `selection`):
- `RandomSelector`: a uniform sample of `ipc` images per class.
- `HerdingSelector` (Welling 2009): per class, greedily add the sample that keeps the mean of the selected
  features closest to the class mean; features from `feature_fn` (the reproduction passes the penultimate
  layer of a ConvNet trained on the pool), flattened pixels by default.
- EL2N-hard / Forgetting-hard / EL2N-easy are `selection.ScoreSelector(metric, keep)`.
- `CCSSelector` (Zheng et al. 2023): drop the hardest `beta` fraction, split the rest into `n_strata` equal-width
  score strata and spread the budget evenly over them, smallest strata first.

Distillation:
- `DistributionMatching` (Zhao & Bilen 2023): synthetic images per class, initialised from random real images,
  optimised so that `sum_c || mean psi(real_c) - mean psi(S_c) ||^2` is small for a freshly initialised random
  embedding psi each iteration (spec 6: a 2-layer ReLU MLP of width 128, 300 iterations, Adam lr 0.05 on the
  pixels, 32 real images per class per iteration, pixels clipped to [0, 1]). No differentiable siamese
  augmentation (DSA) and no ConvNet embedding by default (spec 6); pass `embed_factory` for one.
- The unconstrained-augmentation baseline is `augment.RandomResizedCrop` over whole canvases.

Not implemented: gradient matching (spec 4 marks it optional).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from sklearn.base import BaseEstimator

from icml26.common.validation import check_array, check_choice, check_float, check_int, check_seed
from icml26.dataset_compression import _optim
from icml26.dataset_compression.benchmark import CompressedSet
from icml26.dataset_compression.models import ModelFactory, make_model, mlp_embedding_factory
from icml26.dataset_compression.scoring import SCORERS, DIFFICULTY_SIGN, check_images, check_pixel_range
from icml26.dataset_compression.selection import (
    DEFAULT_EPOCHS,
    METRICS,
    _fitted,
    check_ipc,
    check_scores,
    fit_labels,
    rank_order,
)


class RandomSelector(BaseEstimator):
    """`ipc` images per class drawn uniformly without replacement; the same `random_state` gives the same draw."""

    def __init__(self, random_state: int = 0) -> None:
        self.random_state = random_state
        check_seed(random_state, "random_state")

    def fit(self, X, y) -> RandomSelector:
        check_seed(self.random_state, "random_state")
        check_pixel_range(check_images(X), "X")
        _, self.n_classes_, self._by_class = fit_labels(X, y)
        self.class_sizes_ = [len(i) for i in self._by_class]
        self.scores_ = None
        return self

    def select(self, ipc: int) -> np.ndarray:
        _fitted(self, "class_sizes_")
        ipc = check_ipc(ipc, self.class_sizes_)
        rng = np.random.default_rng(check_seed(self.random_state, "random_state"))
        return np.concatenate([rng.choice(idx, ipc, replace=False) for idx in self._by_class]).astype(np.int64)


class HerdingSelector(BaseEstimator):
    """Kernel-herding selection per class on features phi(x) (Welling 2009; DeepCore's "Herding").

    Step t picks, among unselected samples, argmin_i || mu_c - (sum_selected phi + phi_i) / t ||_2, so the first
    pick is the sample closest to the class mean and ipc = class size returns the whole class.

    Args:
        feature_fn: callable mapping the (N, C, H, W) image tensor to (N, D) features (e.g. a trained model's
            `features`); None = flattened pixels.
    """

    def __init__(self, feature_fn: Callable[[torch.Tensor], torch.Tensor] | None = None) -> None:
        self.feature_fn = feature_fn
        if feature_fn is not None and not callable(feature_fn):
            raise TypeError(f"feature_fn must be callable or None, got {type(feature_fn).__name__}")

    def fit(self, X, y) -> HerdingSelector:
        if self.feature_fn is not None and not callable(self.feature_fn):
            raise TypeError(f"feature_fn must be callable or None, got {type(self.feature_fn).__name__}")
        x = check_pixel_range(check_images(X), "X")
        _, self.n_classes_, self._by_class = fit_labels(x, y)
        if self.feature_fn is None:
            feats = x.flatten(1)
        else:
            with torch.no_grad():
                feats = self.feature_fn(x)
        self.features_ = check_array(feats, "feature_fn(X)", ndim=2, shape=(len(x), None))
        self.class_sizes_ = [len(i) for i in self._by_class]
        return self

    def select(self, ipc: int) -> np.ndarray:
        _fitted(self, "features_")
        ipc = check_ipc(ipc, self.class_sizes_)
        return np.concatenate([self._herd(idx, ipc) for idx in self._by_class]).astype(np.int64)

    def _herd(self, idx: np.ndarray, k: int) -> np.ndarray:
        phi = self.features_[idx]
        mu = phi.mean(0)
        chosen: list[int] = []
        running = np.zeros_like(mu)
        free = np.ones(len(idx), dtype=bool)
        for t in range(1, k + 1):
            dist = np.linalg.norm(mu - (running + phi) / t, axis=1)
            dist[~free] = np.inf
            j = int(np.argmin(dist))
            chosen.append(j)
            free[j] = False
            running += phi[j]
        return idx[np.array(chosen, dtype=np.int64)]


class CCSSelector(BaseEstimator):
    """Coverage-centric coreset selection (Zheng et al. 2023), per class.

    Drops the hardest `beta` fraction of each class, bins the remaining difficulties into `n_strata` equal-width
    strata, and fills the budget stratum by stratum from the smallest, each taking an even share of what is left
    (leftover slots go to random strata with room); samples inside a stratum are drawn at random.

    Args:
        metric: difficulty metric as in `ScoreSelector` ("el2n" default); beta: hard-cut fraction in [0, 1)
            (default 0.1); n_strata: strata per class (default 10: our classes are ~100 samples, CCS uses 50
            for whole CIFAR); the scorer options as in `ScoreSelector`; random_state seeds scorer and sampling.
    """

    def __init__(self, metric: str = "el2n", beta: float = 0.1, n_strata: int = 10, *, n_models: int = 4,
                 epochs: int | None = None, model_factory: ModelFactory | None = None,
                 random_state: int = 0) -> None:
        self.metric, self.beta, self.n_strata = metric, beta, n_strata
        self.n_models, self.epochs, self.model_factory, self.random_state = n_models, epochs, model_factory, random_state
        self._check_params()

    def _check_params(self) -> None:
        check_choice(self.metric, "metric", METRICS)
        check_float(self.beta, "beta", min=0.0, max=1.0, max_open=True)
        check_int(self.n_strata, "n_strata", min=1)
        check_int(self.n_models, "n_models", min=1)
        if self.epochs is not None:
            check_int(self.epochs, "epochs", min=1)
        check_seed(self.random_state, "random_state")

    def fit(self, X, y, scores=None) -> CCSSelector:
        self._check_params()
        check_pixel_range(check_images(X), "X")
        yy, self.n_classes_, self._by_class = fit_labels(X, y)
        if scores is None:
            kw = dict(model_factory=self.model_factory, random_state=self.random_state,
                      epochs=DEFAULT_EPOCHS[self.metric] if self.epochs is None else self.epochs)
            if self.metric == "el2n":
                kw["n_models"] = self.n_models
            s = SCORERS[self.metric](check_images(X), yy, **kw)
        else:
            s = check_scores(scores, len(yy))
        self.scores_ = s
        self.difficulty_ = DIFFICULTY_SIGN[self.metric] * s
        self._tiebreak = np.random.default_rng(int(self.random_state)).permutation(len(yy))
        # classes after the hard cut: the budget must fit in what remains
        self.class_sizes_ = [len(i) - int(np.floor(float(self.beta) * len(i))) for i in self._by_class]
        return self

    def select(self, ipc: int) -> np.ndarray:
        _fitted(self, "difficulty_")
        self._check_params()
        ipc = check_ipc(ipc, self.class_sizes_)
        rng = np.random.default_rng(int(self.random_state))
        return np.concatenate([self._class_select(idx, ipc, rng) for idx in self._by_class]).astype(np.int64)

    def _class_select(self, idx: np.ndarray, budget: int, rng: np.random.Generator) -> np.ndarray:
        order = rank_order(self.difficulty_, idx, self._tiebreak)  # easiest first
        kept = order[:len(order) - int(np.floor(float(self.beta) * len(order)))]
        d = self.difficulty_[kept]
        edges = np.linspace(d.min(), d.max(), int(self.n_strata) + 1)
        bins = np.clip(np.searchsorted(edges, d, side="right") - 1, 0, int(self.n_strata) - 1)
        strata = [kept[bins == b] for b in range(int(self.n_strata)) if np.any(bins == b)]
        strata.sort(key=len)
        take = np.zeros(len(strata), dtype=np.int64)
        left = budget
        for i, s in enumerate(strata):
            take[i] = min(len(s), left // (len(strata) - i))
            left -= take[i]
        while left > 0:  # budgets below the number of strata: one extra slot to random strata with room
            room = np.flatnonzero(take < np.array([len(s) for s in strata]))
            take[rng.choice(room)] += 1
            left -= 1
        return np.concatenate([rng.choice(s, t, replace=False) for s, t in zip(strata, take) if t > 0])


def dm_loss(embed: torch.nn.Module, real_by_class: list[torch.Tensor], syn_by_class: list[torch.Tensor]) -> torch.Tensor:
    """Distribution-matching loss sum_c || mean psi(real_c) - mean psi(S_c) ||^2 (Zhao & Bilen 2023, eq. 4)."""
    loss = torch.zeros(())
    for real, syn in zip(real_by_class, syn_by_class):
        loss = loss + ((embed(real).mean(0) - embed(syn).mean(0)) ** 2).sum()
    return loss


class DistributionMatching(BaseEstimator):
    """Distill `ipc` synthetic images per class by distribution matching with random embeddings (DM).

    Args:
        ipc: synthetic images per class.
        iters: optimisation iterations (default 300); lr: Adam learning rate on the pixels (default 0.05).
        batch_real: real images per class per iteration (default 32; the whole class, in index order, when the
            class is smaller or equal).
        embed_factory: zero-argument callable returning a fresh embedding net (re-drawn every iteration with
            seed random_state * 100003 + iteration); default the 2-layer ReLU MLP of width 128.
        init: "real" (random real images of the class; all of them, in index order, when ipc = class size) or
            "noise" (uniform [0, 1]).
        clip: (lo, hi) pixel range enforced after every step, or None (default (0, 1)); X must already lie in
            it (a ValueError otherwise: 0..255 images would be squashed into [0, 1] by the first clip).
        random_state: seeds initialisation, real batches and embeddings.
    Attributes after `fit`: `images_` (K * ipc, C, H, W), `labels_`, `loss_history_` (iters,), `compressed_`.
    """

    def __init__(self, ipc: int, iters: int = 300, lr: float = 0.05, *, batch_real: int = 32,
                 embed_factory: ModelFactory | None = None, init: str = "real",
                 clip: tuple[float, float] | None = (0.0, 1.0), random_state: int = 0) -> None:
        self.ipc, self.iters, self.lr, self.batch_real = ipc, iters, lr, batch_real
        self.embed_factory, self.init, self.clip, self.random_state = embed_factory, init, clip, random_state
        self._check_params()

    def _check_params(self) -> None:
        check_int(self.ipc, "ipc", min=1)
        check_int(self.iters, "iters", min=0)
        check_float(self.lr, "lr", min=0.0, min_open=True)
        check_int(self.batch_real, "batch_real", min=1)
        if self.embed_factory is not None and not callable(self.embed_factory):
            raise TypeError(f"embed_factory must be callable, got {type(self.embed_factory).__name__}")
        check_choice(self.init, "init", ("real", "noise"))
        if self.clip is not None:
            if not hasattr(self.clip, "__len__") or isinstance(self.clip, str) or len(self.clip) != 2:
                raise TypeError(f"clip must be a pair (lo, hi) or None, got {self.clip!r}")
            lo, hi = (check_float(v, f"clip[{i}]") for i, v in enumerate(self.clip))
            if lo >= hi:
                raise ValueError(f"clip must have lo < hi, got {tuple(self.clip)}")
        check_seed(self.random_state, "random_state")

    def fit(self, X, y, init_indices=None) -> DistributionMatching:
        """Distill from (X (N, C, H, W) in `clip`, y (N,)). `init_indices` (optional): indices into X of the
        initial synthetic images, `ipc` of each class (e.g. a `RandomSelector`'s `select(ipc)`), used in place of
        `init`'s own draw (the reproduction pairs DM with the Random arm this way: same starting images)."""
        self._check_params()
        # DM clips its pixels to `clip` after every step: 0..255 images would be silently squashed into [0, 1]
        x = check_images(X)
        if self.clip is not None:
            try:
                check_pixel_range(x, "X", low=float(self.clip[0]), high=float(self.clip[1]))
            except ValueError as e:
                raise ValueError(f"{e} (DM's clip={tuple(self.clip)}; pass clip=None to keep any range)") from None
        yy, k, by_class = fit_labels(x, y)
        ipc = check_ipc(self.ipc, [len(i) for i in by_class])
        seed = int(self.random_state)
        g = torch.Generator().manual_seed(seed)
        factory = self.embed_factory or mlp_embedding_factory(int(np.prod(x.shape[1:])))
        reals = [x[torch.from_numpy(i)] for i in by_class]
        syn: list[torch.Tensor] = []
        if init_indices is not None:
            ii = check_array(init_indices, "init_indices", ndim=1, dtype=np.int64)
            if len(ii) and (ii.min() < 0 or ii.max() >= len(yy)):
                raise ValueError(f"init_indices must index X (0..{len(yy) - 1}), got values in [{ii.min()}, "
                                 f"{ii.max()}]")
            per_class = [ii[yy[ii] == c] for c in range(k)]
            if any(len(v) != ipc for v in per_class):
                raise ValueError(f"init_indices must hold ipc={ipc} indices of each class, got "
                                 f"{[len(v) for v in per_class]} per class")
            syn = [x[torch.from_numpy(v)].clone() for v in per_class]
        else:
            for r in reals:
                if self.init == "noise":
                    syn.append(torch.rand((ipc, *x.shape[1:]), generator=g))
                elif ipc == len(r):
                    syn.append(r.clone())
                else:
                    syn.append(r[torch.randperm(len(r), generator=g)[:ipc]].clone())
        syn_t = torch.cat(syn).requires_grad_(True)
        lr = float(self.lr)
        # torch.optim.Adam's CPU single-tensor update bit for bit (AdamW without weight decay is Adam), without its
        # per-step dispatch and the imports of its first step (tests/dataset_compression/test_fast_paths.py)
        cpu = syn_t.device.type == "cpu"
        opt = _optim.AdamW([syn_t], weight_decay=0.0) if cpu else torch.optim.Adam([syn_t], lr=lr)
        history = []
        br = int(self.batch_real)
        for it in range(int(self.iters)):
            embed = make_model(factory, seed * 100003 + it)
            for p in embed.parameters():
                p.requires_grad_(False)
            batch = [r if br >= len(r) else r[torch.randperm(len(r), generator=g)[:br]] for r in reals]
            loss = dm_loss(embed, batch, list(syn_t.split(ipc)))
            opt.zero_grad()
            loss.backward()
            opt.step(lr) if cpu else opt.step()
            if self.clip is not None:
                with torch.no_grad():
                    syn_t.clamp_(float(self.clip[0]), float(self.clip[1]))
            history.append(float(loss.detach()))
        self.images_ = syn_t.detach().clone()
        self.labels_ = torch.arange(k).repeat_interleave(ipc)
        self.loss_history_ = np.array(history)
        self.compressed_ = CompressedSet(self.images_, self.labels_, name="DM")
        self.n_classes_ = k
        return self


__all__ = ["RandomSelector", "HerdingSelector", "CCSSelector", "DistributionMatching", "dm_loss"]
