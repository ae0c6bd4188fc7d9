"""PCA = Prune, Combine, Augment (spec 2.2): hard-label dataset compression that spends the budget on images.

Notation: C classes, budget IPC stored images per class, combine factor f (f x f images per stored canvas),
full resolution R.

1. **P - prune.** Score every sample of the full pool with a DP metric (EL2N by default) and keep, per class,
   the m = IPC * f^2 samples with the *lowest* score (easiest), exactly m per class (`ScoreSelector(keep="easy")`).
2. **C - combine.** Downsample each kept image by f (R -> R/f, area averaging) and paste f x f of them, all of one
   class, into an R x R canvas (`combine_tiles`): a class stores IPC canvases holding IPC * f^2 whole images,
   one hard label per canvas. Tiles are consecutive easiest samples in ascending score, row-major [choice].
3. **A - augment.** Train on crops confined to a single tile, resized back to R, with a narrowed scale range
   (`TileConstrainedRandomResizedCrop`, default scale (0.5, 1) of the tile area [choice]).
4. **Train** the student with cross-entropy under the benchmark protocol (`benchmark.evaluate`).

Reconstructed, not bit-faithful: the paper's PCA code is not public (spec 1, 9), so the crop-scale bounds, tile
order/grouping and EL2N epochs are our choices, all configurable. When a class's m images do not fill its last
canvas (m not a multiple of f^2) the free tiles repeat that canvas's first images [choice; never another class].
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.base import BaseEstimator
from torch.utils.data import Dataset

from icml26.common.validation import check_bool, check_choice, check_int, check_seed, check_tensor
from icml26.dataset_compression.augment import TileConstrainedRandomResizedCrop, _check_range
from icml26.dataset_compression.benchmark import CompressedSet
from icml26.dataset_compression.models import ModelFactory
from icml26.dataset_compression.scoring import check_images, check_pixel_range
from icml26.dataset_compression.selection import METRICS, ScoreSelector, fit_labels


def area_downsample(images: torch.Tensor, factor: int) -> torch.Tensor:
    """(N, C, H, W) -> (N, C, H/f, W/f) by averaging f x f blocks; f must divide H and W."""
    factor = check_int(factor, "factor", min=1)
    x = check_tensor(images, "images", ndim=4)
    if x.shape[2] % factor or x.shape[3] % factor:
        raise ValueError(f"factor {factor} must divide the image sides {x.shape[2]}x{x.shape[3]}")
    return x if factor == 1 else F.avg_pool2d(x, factor)


def combine_tiles(images, labels, factor: int = 2, *, downsample: bool = True,
                  return_index: bool = False):
    """Paste images of one class f x f into canvases (PCA's "C").

    Args:
        images: (N, C, R, R) images at full resolution (or, with `downsample=False`, already tile-sized
            (N, C, R/f, R/f), e.g. the native images of an upsampled data set).
        labels: (N,) class ids; images of a class are used in the order given (PCA passes easiest first).
        factor: f, tiles per canvas side (f^2 images per canvas); must divide R when downsampling.
        downsample: area-downsample by f first (default), or paste the images as they are.
        return_index: also return (M, f^2) indices into `images` of each canvas's tiles (row-major).
    Returns:
        canvases (M, C, f * t, f * t) with t the tile side, canvas_labels (M,) int64, classes in ascending
        order; M = sum over classes of ceil(n_c / f^2). A class's last canvas, if not full, repeats its first
        images. Never mixes classes in a canvas.
    """
    factor = check_int(factor, "factor", min=1)
    x = check_tensor(images, "images", ndim=4, dtype=torch.float32)
    y = check_tensor(labels, "labels", ndim=1, floating=False)
    if y.is_floating_point() and not bool((y == y.round()).all()):
        raise ValueError("labels must hold integers, got non-integer values (not truncated)")
    if y.dtype == torch.bool:
        raise TypeError("labels must hold integers, got booleans")
    y = y.long()
    if len(y) != len(x):
        raise ValueError(f"labels must have one entry per image ({len(x)}), got {len(y)}")
    if int(y.min()) < 0:
        raise ValueError(f"labels must be class ids >= 0, got {int(y.min())}")
    check_bool(downsample, "downsample")
    tiles = area_downsample(x, factor) if downsample else x
    n, c, th, tw = tiles.shape
    per = factor * factor
    groups, glabels = [], []
    for cls in torch.unique(y).tolist():
        idx = torch.nonzero(y == cls).flatten()
        for start in range(0, len(idx), per):
            chunk = idx[start:start + per]
            if len(chunk) < per:  # fill the free tiles with this canvas's own images, cyclically
                chunk = chunk[torch.arange(per) % len(chunk)]
            groups.append(chunk)
            glabels.append(cls)
    index = torch.stack(groups)  # (M, f^2)
    m = len(index)
    canvases = (tiles[index.flatten()].reshape(m, factor, factor, c, th, tw).permute(0, 3, 1, 4, 2, 5)
                .reshape(m, c, factor * th, factor * tw))
    out = (canvases.contiguous(), torch.tensor(glabels, dtype=torch.long))
    return (*out, index) if return_index else out


def split_tiles(canvases, factor: int) -> torch.Tensor:
    """Inverse of `combine_tiles`: (M, C, H, W) canvases -> (M * f^2, C, H/f, W/f) tiles, canvas-major and
    row-major within a canvas."""
    factor = check_int(factor, "factor", min=1)
    x = check_tensor(canvases, "canvases", ndim=4)
    m, c, h, w = x.shape
    if h % factor or w % factor:
        raise ValueError(f"factor {factor} must divide the canvas sides {h}x{w}")
    th, tw = h // factor, w // factor
    return x.reshape(m, c, factor, th, factor, tw).permute(0, 2, 4, 1, 3, 5).reshape(m * factor * factor, c, th, tw)


class TileCropDataset(Dataset):
    """A `torch.utils.data.Dataset` over PCA canvases.

    train=True: item i is a fresh tile-constrained random crop of canvas i (resized to R) and its label; the
    crops follow `seed` and the order of access. train=False: item j is tile j (canvas-major) upsampled to R
    with no randomness - the stored images as the student sees them at full scale.
    """

    def __init__(self, canvases: torch.Tensor, labels: torch.Tensor, augment: TileConstrainedRandomResizedCrop,
                 train: bool = True, seed: int = 0) -> None:
        self.canvases, self.labels, self.augment = canvases, labels, augment
        self.train = check_bool(train, "train")
        self.generator = torch.Generator().manual_seed(check_seed(seed))
        f = augment.factor
        if not self.train:
            tiles = split_tiles(canvases, f)
            self.tiles = F.interpolate(tiles, size=(augment.size, augment.size), mode="bilinear",
                                       align_corners=False)
            self.tile_labels = labels.repeat_interleave(f * f)

    def __len__(self) -> int:
        return len(self.canvases) if self.train else len(self.tiles)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        i = check_int(i, "index", min=-len(self), max=len(self) - 1)
        if not self.train:
            return self.tiles[i], int(self.tile_labels[i])
        return self.augment(self.canvases[i:i + 1], generator=self.generator)[0], int(self.labels[i])


class PCACompressor(BaseEstimator):
    """Compress (X, y) to `ipc` canvases per class of f x f easy images each (Prune, Combine, Augment).

    Args:
        ipc: stored canvases per class (the benchmark's IPC: the same image storage as any method at that IPC).
        factor: f, images per canvas side (default 2: four images per canvas); must divide R.
        metric: "el2n" (default) | "forgetting" | "aum" for the prune step, or "random" (the "C + A only"
            ablation: a uniform class-balanced sample instead of the easiest).
        keep: "easy" (PCA) or "hard" (ablation).
        scale, ratio, flip: the constrained crop (default scale (0.5, 1) of the tile area, ratio (3/4, 4/3),
            no flip: set flip=True for natural images).
        n_models, epochs, model_factory: the scorer (EL2N: 4 models x 3 epochs of the reproduction's ConvNet).
        random_state: seeds scoring, tie-breaks and the random ablation.
    Attributes after `fit`: `selected_indices_` (C * ipc * f^2,) into X, grouped by class, easiest first;
    `scores_` (N,) (None for metric="random"); `canvases_` (C * ipc, channels, R, R); `canvas_labels_`;
    `tile_indices_` (C * ipc, f^2) into X; `augment_` (the crop module); `compressed_` (a `CompressedSet`
    with factor f, what `benchmark.evaluate` trains on).
    """

    def __init__(self, ipc: int, factor: int = 2, metric: str = "el2n", keep: str = "easy", *,
                 scale: tuple[float, float] = (0.5, 1.0), ratio: tuple[float, float] = (3 / 4, 4 / 3),
                 flip: bool = False, n_models: int = 4, epochs: int | None = None,
                 model_factory: ModelFactory | None = None, random_state: int = 0) -> None:
        self.ipc, self.factor, self.metric, self.keep = ipc, factor, metric, keep
        self.scale, self.ratio, self.flip = scale, ratio, flip
        self.n_models, self.epochs, self.model_factory, self.random_state = n_models, epochs, model_factory, random_state
        self._check_params()

    def _check_params(self) -> None:
        check_int(self.ipc, "ipc", min=1)
        check_int(self.factor, "factor", min=1)
        check_choice(self.metric, "metric", (*METRICS, "random"))
        check_choice(self.keep, "keep", ("easy", "hard"))
        _check_range(self.scale, "scale", low=0.0, high=1.0, positive=True)
        _check_range(self.ratio, "ratio", low=0.0, high=None, positive=True)
        check_bool(self.flip, "flip")
        check_seed(self.random_state, "random_state")

    def fit(self, X, y, *, scores=None, tiles=None, indices=None) -> PCACompressor:
        """Prune and combine (X, y); augmentation happens at training time (`augment_`, `to_dataset`).

        Args:
            X: (N, C, R, R) images of the full pool; y: (N,) labels 0..K-1.
            scores: optional precomputed metric values (N,) (skips scoring; ignored by metric="random").
            tiles: optional (N, C, R/f, R/f) low-resolution versions of X pasted instead of downsampling X
                (the reproduction passes the native 8x8 digits of its 16x16 upsampled images).
            indices: optional precomputed selection into X, exactly ipc * f^2 per class, grouped by class, in tile
                order (e.g. `HerdingSelector(...).select(ipc * f**2)`: a selection that covers the class); skips
                the metric (and `scores`).
        Pixel values must lie in [0, 1] (ValueError otherwise; divide 8-bit images by 255).
        """
        self._check_params()
        x = check_pixel_range(check_images(X), "X")
        yy, k, by_class = fit_labels(x, y)
        f = int(self.factor)
        R = x.shape[2]
        if x.shape[2] != x.shape[3]:
            raise ValueError(f"X must hold square images, got {x.shape[2]}x{x.shape[3]}")
        if R % f:
            raise ValueError(f"factor {f} must divide the image side {R}")
        m = int(self.ipc) * f * f
        if indices is not None:
            idx = _check_indices(indices, yy, k, m)
            self.scores_ = None
        elif self.metric == "random":
            from icml26.dataset_compression.baselines import RandomSelector

            sel = RandomSelector(random_state=self.random_state).fit(x, yy)
            self.scores_ = None
        else:
            sel = ScoreSelector(self.metric, self.keep, n_models=self.n_models, epochs=self.epochs,
                                model_factory=self.model_factory, random_state=self.random_state)
            sel.fit(x, yy, scores=scores)
            self.scores_ = sel.scores_
        if indices is None:
            idx = sel.select(m)  # exactly m per class; raises if a class is smaller
        if tiles is not None:
            t = check_pixel_range(check_tensor(tiles, "tiles", ndim=4, dtype=torch.float32), "tiles")
            want = (len(x), x.shape[1], R // f, R // f)
            if tuple(t.shape) != want:
                raise ValueError(f"tiles must have shape {want} (N, C, R/f, R/f), got {tuple(t.shape)}")
            src, down = t, False
        else:
            src, down = x, True
        idx_t = torch.from_numpy(idx)
        canvases, labels, index = combine_tiles(src[idx_t], torch.from_numpy(yy[idx]), f, downsample=down,
                                                return_index=True)
        self.selected_indices_ = idx
        self.tile_indices_ = idx_t[index].numpy()
        self.canvases_, self.canvas_labels_ = canvases, labels
        self.augment_ = TileConstrainedRandomResizedCrop(R, f, tuple(self.scale), tuple(self.ratio), bool(self.flip))
        name = "PCA(given selection)" if indices is not None else f"PCA({self.metric}, {self.keep})"
        self.compressed_ = CompressedSet(canvases, labels, factor=f, name=name)
        self.n_classes_ = k
        return self

    def to_dataset(self, train: bool = True, seed: int = 0) -> TileCropDataset:
        """A Dataset of constrained crops (train=True) or of the stored tiles upsampled to R (train=False)."""
        if not hasattr(self, "canvases_"):
            raise ValueError("PCACompressor is not fitted: call fit(X, y) first")
        return TileCropDataset(self.canvases_, self.canvas_labels_, self.augment_, train=train, seed=seed)


def _check_indices(indices, y: np.ndarray, k: int, m: int) -> np.ndarray:
    """A precomputed selection: int indices into X, exactly m per class, grouped by class in ascending order."""
    from icml26.common.validation import check_array

    idx = check_array(indices, "indices", ndim=1, dtype=np.int64)
    if len(idx) != k * m or idx.min() < 0 or idx.max() >= len(y):
        raise ValueError(f"indices must hold {k} x {m} = {k * m} indices into X (0..{len(y) - 1}), got {len(idx)} in "
                         f"[{int(idx.min())}, {int(idx.max())}]")
    if len(np.unique(idx)) != len(idx):
        raise ValueError("indices must not repeat an image")
    if not np.array_equal(y[idx], np.repeat(np.arange(k), m)):
        raise ValueError(f"indices must give exactly {m} per class, grouped by class 0..{k - 1}")
    return idx


__all__ = ["PCACompressor", "combine_tiles", "split_tiles", "area_downsample", "TileCropDataset"]
