"""Per-sample difficulty scores for dataset pruning: EL2N, forgetting events and AUM (spec 2.2 step 1, 4).

All three train fresh networks on the *whole* pool (never the test split) and are deterministic given
`random_state`. Inputs: X (N, C, H, W) real images, y (N,) integer labels 0..K-1 (every class present).

- EL2N (Paul et al. 2021): `s_i = mean_k || softmax(h_k(x_i)) - onehot(y_i) ||_2` over K independently
  initialised models, each after `epochs` early epochs. High = hard.
- Forgetting (Toneva et al. 2019): the number of correct -> incorrect transitions between consecutive
  presentations of a sample during training (accuracy read from the forward pass of the minibatch that presents
  it, before the update). A sample never classified correctly gets `epochs` (more than any count can reach, at
  most floor(epochs / 2)), so it ranks hardest. High = hard.
- AUM (Pleiss et al. 2020): mean over presentations of (assigned-class logit - largest other logit). High =
  *easy* (the paper's sign; `ScoreSelector` turns it into a difficulty).

Training: AdamW (lr 3e-3, weight decay 0.01, constant), batches of 64 in a fresh random order per epoch, no
augmentation [our choice; the papers train their standard pipeline for a few epochs].
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from icml26.common.validation import check_array, check_float, check_int, check_seed, check_tensor
from icml26.dataset_compression import _optim
from icml26.dataset_compression.models import ModelFactory, convnet_factory, make_model


def check_labels(y, n: int | None = None, name: str = "y") -> tuple[np.ndarray, int]:
    """(labels as int64 array, number of classes K); labels must be 0..K-1 with every class present."""
    arr = check_array(y, name, ndim=1, dtype=np.int64)
    if n is not None and len(arr) != n:
        raise ValueError(f"{name} must have one label per image ({n}), got {len(arr)}")
    if arr.min() < 0:
        raise ValueError(f"{name} must hold class ids 0..K-1, got {int(arr.min())}")
    k = int(arr.max()) + 1
    missing = sorted(set(range(k)) - set(arr.tolist()))
    if missing:
        raise ValueError(f"{name} must hold every class 0..{k - 1}; classes {missing[:5]} have no sample")
    if k < 2:
        raise ValueError(f"{name} must hold at least 2 classes, got {k}")
    return arr, k


def check_images(X, name: str = "X", *, min_n: int = 1) -> torch.Tensor:
    """X as a float32 (N, C, H, W) tensor, finite, with at least `min_n` images."""
    x = check_tensor(X, name, ndim=4, dtype=torch.float32, min_size=1)
    if x.shape[0] < min_n:
        raise ValueError(f"{name} must hold at least {min_n} image(s), got shape {tuple(x.shape)}")
    return x


def check_pixel_range(x: torch.Tensor, name: str = "X", *, low: float = 0.0, high: float = 1.0) -> torch.Tensor:
    """Refuse pixel values outside [low, high] (default [0, 1]): 8-bit images (0..255) must be divided by 255
    first, or DM's clipping and the stored canvases silently change them."""
    if x.numel():
        lo, hi = float(x.min()), float(x.max())
        if lo < low - 1e-6 or hi > high + 1e-6:
            raise ValueError(f"{name} must hold pixel values in [{low:g}, {high:g}], got values in [{lo:g}, {hi:g}]"
                             + ("; divide 8-bit images by 255" if hi > 1.5 else ""))
    return x


def default_factory(X: torch.Tensor, num_classes: int) -> ModelFactory:
    """The reproduction's ConvNet for square images of side divisible by 4 (else pass your own factory)."""
    _, c, h, w = X.shape
    if h != w or h % 4:
        raise ValueError(f"the default ConvNet needs square images with a side divisible by 4, got {h}x{w}; pass "
                         f"model_factory")
    return convnet_factory(c, num_classes, h)


def _train_options(epochs, batch_size, lr, weight_decay, random_state) -> tuple[int, int, float, float, int]:
    return (check_int(epochs, "epochs", min=1), check_int(batch_size, "batch_size", min=1),
            check_float(lr, "lr", min=0.0, min_open=True), check_float(weight_decay, "weight_decay", min=0.0),
            check_seed(random_state, "random_state"))


def _train_recording(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor, epochs: int, batch_size: int,
                     lr: float, weight_decay: float, seed: int,
                     record: Callable[[int, torch.Tensor, torch.Tensor], None] | None = None) -> None:
    """Plain minibatch training; `record(epoch, idx, logits)` sees each batch's pre-update logits (detached)."""
    params = list(model.parameters())
    fast = all(p.device.type == "cpu" and p.dtype == torch.float32 for p in params)
    # on CPU: torch.optim.AdamW's update bit for bit, without its per-step dispatch (_optim)
    opt = _optim.AdamW(params, weight_decay=weight_decay) if fast else torch.optim.AdamW(params, lr=lr,
                                                                                          weight_decay=weight_decay)
    g = torch.Generator().manual_seed(seed)
    model.train()
    for epoch in range(epochs):
        perm = torch.randperm(len(X), generator=g)
        for start in range(0, len(X), batch_size):
            idx = perm[start:start + batch_size]
            logits = model(X[idx])
            if record is not None:
                record(epoch, idx, logits.detach())
            loss = F.cross_entropy(logits, y[idx])
            opt.zero_grad()
            loss.backward()
            if fast:
                opt.step(lr)
            else:
                opt.step()


def _prepare(X, y, model_factory):
    x = check_images(X)
    yy, k = check_labels(y, len(x))
    factory = default_factory(x, k) if model_factory is None else model_factory
    return x, torch.from_numpy(yy), k, factory


@torch.no_grad()
def _logits(model: torch.nn.Module, X: torch.Tensor, batch: int = 1024) -> torch.Tensor:
    model.eval()
    return torch.cat([model(X[i:i + batch]) for i in range(0, len(X), batch)])


def el2n_scores(X, y, *, model_factory: ModelFactory | None = None, n_models: int = 4, epochs: int = 3,
                batch_size: int = 64, lr: float = 3e-3, weight_decay: float = 0.01,
                random_state: int = 0) -> np.ndarray:
    """EL2N score of every sample, (N,) float64 in [0, sqrt(2)]: mean over `n_models` models trained `epochs`.

    Args:
        X: (N, C, H, W) images; y: (N,) labels 0..K-1.
        model_factory: zero-argument callable returning a fresh classifier with K outputs (default: the
            reproduction's ConvNet for X's shape).
        n_models: K independently initialised models (default 4, spec 6); epochs: early epochs each (default 3).
        random_state: seeds initialisation (model k: random_state * 1000 + k) and batch order.
    """
    x, yy, k, factory = _prepare(X, y, model_factory)
    n_models = check_int(n_models, "n_models", min=1)
    epochs, batch_size, lr, weight_decay, seed = _train_options(epochs, batch_size, lr, weight_decay, random_state)
    onehot = F.one_hot(yy, k).float()
    total = torch.zeros(len(x), dtype=torch.float64)
    for m in range(n_models):
        model = make_model(factory, seed * 1000 + m)
        _train_recording(model, x, yy, epochs, batch_size, lr, weight_decay, seed * 1000 + m)
        logits = _logits(model, x)
        if logits.shape != (len(x), k):
            raise ValueError(f"model_factory's model must map X to (N, {k}) logits, got {tuple(logits.shape)}")
        total += torch.linalg.vector_norm(F.softmax(logits, 1) - onehot, dim=1).double()
    return (total / n_models).numpy()


def forgetting_events(trace) -> np.ndarray:
    """Forgetting score per sample from a presentation-accuracy trace (N, E) of 0/1 (E presentations, in order).

    Counts 1 -> 0 transitions between consecutive presentations; a sample with no correct presentation scores E.
    Example: [1, 0, 1, 0] -> 2; [0, 0, 0] -> 3; [1, 1, 1] -> 0.
    """
    t = check_array(trace, "trace", ndim=2, dtype=np.int64)
    if not np.isin(t, (0, 1)).all():
        raise ValueError("trace must hold 0/1 (incorrect/correct) values")
    events = ((t[:, :-1] == 1) & (t[:, 1:] == 0)).sum(1).astype(np.float64)
    events[t.sum(1) == 0] = t.shape[1]
    return events


def forgetting_scores(X, y, *, model_factory: ModelFactory | None = None, epochs: int = 30, batch_size: int = 64,
                      lr: float = 3e-3, weight_decay: float = 0.01, random_state: int = 0) -> np.ndarray:
    """Forgetting events of every sample over `epochs` epochs of training on (X, y) (default 30, spec 6), (N,)."""
    x, yy, _, factory = _prepare(X, y, model_factory)
    epochs, batch_size, lr, weight_decay, seed = _train_options(epochs, batch_size, lr, weight_decay, random_state)
    trace = np.zeros((len(x), epochs), dtype=np.int64)

    def record(epoch, idx, logits):
        trace[idx.numpy(), epoch] = (logits.argmax(1) == yy[idx]).numpy()

    _train_recording(make_model(factory, seed), x, yy, epochs, batch_size, lr, weight_decay, seed, record)
    return forgetting_events(trace)


def aum_scores(X, y, *, model_factory: ModelFactory | None = None, epochs: int = 30, batch_size: int = 64,
               lr: float = 3e-3, weight_decay: float = 0.01, random_state: int = 0) -> np.ndarray:
    """Area under the margin of every sample, (N,) float64: mean over `epochs` presentations of the assigned
    logit minus the largest other logit. Low (negative) = hard or mislabeled."""
    x, yy, _, factory = _prepare(X, y, model_factory)
    epochs, batch_size, lr, weight_decay, seed = _train_options(epochs, batch_size, lr, weight_decay, random_state)
    margin = np.zeros((len(x), epochs))

    def record(epoch, idx, logits):
        assigned = logits.gather(1, yy[idx, None])[:, 0]
        other = logits.scatter(1, yy[idx, None], float("-inf")).max(1).values
        margin[idx.numpy(), epoch] = (assigned - other).double().numpy()

    _train_recording(make_model(factory, seed), x, yy, epochs, batch_size, lr, weight_decay, seed, record)
    return margin.mean(1)


SCORERS = {"el2n": el2n_scores, "forgetting": forgetting_scores, "aum": aum_scores}
# +1: a high score means hard; -1: a high score means easy (AUM)
DIFFICULTY_SIGN = {"el2n": 1.0, "forgetting": 1.0, "aum": -1.0}

__all__ = ["el2n_scores", "forgetting_scores", "aum_scores", "forgetting_events", "check_labels", "check_images",
           "default_factory", "SCORERS", "DIFFICULTY_SIGN"]
