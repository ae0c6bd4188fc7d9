"""Benchmarks: the Indirect Indexing generator (paper's diagnostic task) and the length-extrapolation evaluation.

Indirect Indexing (spec 6C; the paper's exact alphabet, shift range and model sizes were not readable, so this
generator is *reconstructed* from the spec): a source string of L distinct characters, then a source character
and a signed shift; the answer is the character `shift` positions right (+) or left (-) of the source
character. Solving it needs a content lookup ("where is char_i") followed by a relative-position offset
("what sits s to the right of it"), exactly the what/where composition PoPE decouples.

Token layout (vocab = alphabet + 1 + 2 * max_shift):
    0..V-1 characters, V = SEP (delimiter ',' and left padding), V+1.. shift tokens for -S..-1, 1..S
    sequence = [SEP]*pad + chars + [SEP, char_i, SHIFT(s)]   -> predict char_{i+s} at the final position
With `queries_per_sequence = q > 1` the sequence packs q queries, each followed by its answer:
    chars + [SEP, c1, SH1, t1, SEP, c2, SH2, t2, ..., SEP, cq, SHq]  (targets after every SH)
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from icml26.common.generation import lm_logits
from icml26.common.text import fixed_windows
from icml26.common.validation import check_int, check_seed, check_tensor

IGNORE = -100

II_LONG_CONFIG = {  # spec 6C long configuration (run on demand)
    "ii_run": False, "ii_seeds": [0, 1, 2], "ii_arms": ["pope", "rope"], "ii_layers": 4, "ii_d_model": 256,
    "ii_heads": 8, "ii_batch": 256, "ii_steps": 20000, "ii_lr": 1e-3, "ii_weight_decay": 0.1,
    "ii_alphabet": 24, "ii_min_len": 8, "ii_max_len": 16, "ii_max_shift": 4, "ii_queries": 1,
    "ii_test_size": 1000, "ii_device": "auto",
}


@dataclass
class IndirectIndexing:
    """Seeded generator of Indirect Indexing examples (spec 6C defaults; the paper uses lengths 20..40).

    Args:
        alphabet: V distinct character tokens (24).
        min_len, max_len: source string length L ~ U{min_len..max_len} (8..16), L <= alphabet.
        max_shift: shifts s uniform in {-S..-1, 1..S} (4), resampled until 0 <= i + s < L.
        queries_per_sequence: queries packed per sequence (1).
    """

    alphabet: int = 24
    min_len: int = 8
    max_len: int = 16
    max_shift: int = 4
    queries_per_sequence: int = 1

    def __post_init__(self) -> None:
        for name in ("alphabet", "min_len", "max_len", "max_shift", "queries_per_sequence"):
            setattr(self, name, check_int(getattr(self, name), name, min=1))
        if not 2 <= self.min_len <= self.max_len <= self.alphabet:
            raise ValueError(f"need 2 <= min_len <= max_len <= alphabet, got {self.min_len}, {self.max_len}, "
                             f"{self.alphabet}")

    @property
    def sep(self) -> int:
        return self.alphabet

    @property
    def vocab_size(self) -> int:
        return self.alphabet + 1 + 2 * self.max_shift

    @property
    def seq_len(self) -> int:
        """Length of every (left-padded) input sequence."""
        return self.max_len + 4 * self.queries_per_sequence - 1

    def shift_token(self, s: int) -> int:
        if s == 0 or abs(s) > self.max_shift:
            raise ValueError(f"shift must be in [-{self.max_shift}, {self.max_shift}] \\ {{0}}, got {s}")
        return self.alphabet + 1 + (s + self.max_shift if s < 0 else s + self.max_shift - 1)

    def sample(self, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """n examples -> (inputs (n, seq_len) long, targets (n, seq_len) long with -100 except at answers)."""
        self.__post_init__()  # fields may have been reassigned since construction
        n = check_int(n, "n", min=1)
        rng = np.random.default_rng(check_seed(seed))
        T = self.seq_len
        x = np.full((n, T), self.sep, dtype=np.int64)
        y = np.full((n, T), IGNORE, dtype=np.int64)
        for row in range(n):
            L = int(rng.integers(self.min_len, self.max_len + 1))
            chars = rng.permutation(self.alphabet)[:L]
            seq: list[int] = list(chars)
            answers: list[tuple[int, int]] = []
            for qi in range(self.queries_per_sequence):
                i = int(rng.integers(L))
                while True:
                    s = int(rng.integers(1, self.max_shift + 1)) * (1 if rng.random() < 0.5 else -1)
                    if 0 <= i + s < L:
                        break
                seq += [self.sep, int(chars[i]), self.shift_token(s)]
                answers.append((len(seq) - 1, int(chars[i + s])))
                if qi < self.queries_per_sequence - 1:
                    seq.append(int(chars[i + s]))
            pad = T - len(seq)
            x[row, pad:] = seq
            for pos, tgt in answers:
                y[row, pad + pos] = tgt
        return torch.from_numpy(x), torch.from_numpy(y)

    def test_set(self, n: int = 1000) -> tuple[torch.Tensor, torch.Tensor]:
        """The fixed test set (seed 999, spec 6C)."""
        return self.sample(n, seed=999)


def indexing_loss(model, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Cross-entropy on the answer positions only (targets != -100)."""
    logits = lm_logits(model, x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1), ignore_index=IGNORE)


@torch.no_grad()
def indexing_accuracy(model, x: torch.Tensor, y: torch.Tensor, batch_size: int = 500) -> float:
    """Accuracy of the *final* answer of every sequence (the paper's metric), in [0, 1].

    x: (N, T) long inputs, y: (N, T) targets (the answer at the last position), as from `IndirectIndexing.sample`.
    """
    x = _token_stream(torch.as_tensor(x).reshape(-1), "x", _vocab_size(model)).view(torch.as_tensor(x).shape)
    y = torch.as_tensor(y)
    if x.ndim != 2 or y.shape != x.shape:
        raise ValueError(f"x and y must both be (N, T), got {tuple(x.shape)} and {tuple(y.shape)}")
    batch_size = check_int(batch_size, "batch_size", min=1)
    was = model.training
    model.eval()
    correct = 0
    for i in range(0, len(x), batch_size):
        logits = lm_logits(model, x[i:i + batch_size])
        correct += int((logits[:, -1].argmax(-1) == y[i:i + batch_size, -1]).sum())
    model.train(was)
    return correct / len(x)


@torch.no_grad()
def length_extrapolation_eval(model, data: torch.Tensor, lengths: list[int] | tuple[int, ...], *,
                              n_windows: int = 40, batch_size: int = 8,
                              per_window: bool = False) -> dict[int, float] | dict[int, list[float]]:
    """Mean next-token loss (nats/token) at each evaluation length, zero-shot.

    Args:
        model: a TinyLM / TinyDecoder or HF causal LM (positions 0..T-1, causal, no interpolation).
        data: 1-D token stream (the validation split).
        lengths: context lengths T to evaluate (e.g. [64, 256, 512]).
        n_windows: non-overlapping windows of T + 1 tokens taken from the start of `data`; the model reads the
            first T (positions 0..T-1) and the loss averages all T next-token predictions (spec 6A / 9).
        batch_size: windows per forward pass.
        per_window: return each window's mean loss instead (the items of claim A's bootstrap; their mean is the
            overall loss, every window holding T predictions).
    Returns:
        {T: loss} with T as ints ({T: [loss of window 0, ...]} with `per_window`).
    Raises:
        ValueError: a non-integer or < 2 length (64.5 is refused, never truncated), token ids outside the model's
            vocabulary, a stream too short for n_windows windows; TypeError: non-integer token ids.
    """
    data = _token_stream(data, "data", _vocab_size(model))
    if isinstance(lengths, (str, bytes)) or not hasattr(lengths, "__iter__"):
        raise TypeError(f"lengths must be a list of ints >= 2, got {type(lengths).__name__}")
    lengths = [check_int(t, f"lengths[{i}]", min=2) for i, t in enumerate(lengths)]  # 64.5 is refused, not cut
    if not lengths:
        raise ValueError("lengths must be a non-empty list of ints >= 2, got []")
    n_windows = check_int(n_windows, "n_windows", min=1)
    batch_size = check_int(batch_size, "batch_size", min=1)
    for T in lengths:
        if len(data) < n_windows * (T + 1):
            raise ValueError(f"data has {len(data)} tokens, fewer than the {n_windows} x {T + 1} needed for "
                             f"{n_windows} windows at length {T}")
    if not isinstance(per_window, bool):
        raise TypeError(f"per_window must be a bool, got {type(per_window).__name__}")
    was = model.training
    model.eval()
    out: dict = {}
    for T in lengths:
        windows = fixed_windows(data, n_windows, T + 1)  # T inputs, T predictions
        rows: list[float] = []
        for i in range(0, n_windows, batch_size):
            b = windows[i:i + batch_size]
            logits = lm_logits(model, b[:, :-1])
            nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), b[:, 1:].reshape(-1),
                                  reduction="none").view(b.shape[0], -1)
            rows += nll.double().mean(1).tolist()
        out[T] = rows if per_window else float(sum(rows) / len(rows))
    model.train(was)
    return out


def _vocab_size(model) -> int | None:
    cfg = getattr(model, "config", None)
    v = getattr(cfg, "vocab_size", None)
    return v if isinstance(v, int) else None


def _token_stream(data, name: str, vocab: int | None) -> torch.Tensor:
    """A 1-D stream of integer token ids in [0, vocab) (a list or array is read like the tensor)."""
    t = check_tensor(data, name, ndim=1, floating=False)
    if t.is_floating_point() or t.dtype == torch.bool or t.is_complex():
        raise TypeError(f"{name} must hold integer token ids, got dtype {t.dtype}")
    t = t.long()
    lo, hi = int(t.min()), int(t.max())
    if lo < 0 or (vocab is not None and hi >= vocab):
        raise ValueError(f"{name} holds token ids in [{lo}, {hi}], outside the model's vocabulary [0, {vocab})"
                         if vocab is not None else f"{name} holds negative token ids (min {lo})")
    return t


def train_indirect_indexing(arm: str, seed: int, cfg: dict) -> dict:
    """Train one encoding on Indirect Indexing (fresh examples every step) and test on the fixed test set.

    `cfg` holds the `ii_*` keys of `II_LONG_CONFIG`. Module level so `run_parallel` can spawn it.
    """
    from tqdm.auto import tqdm

    from icml26.common.seeding import seed_everything
    from icml26.common.train import warmup_cosine
    from icml26.pope.models import TinyDecoder, param_groups

    t0 = time.perf_counter()
    dev = cfg["ii_device"]
    dev = ("cuda" if torch.cuda.is_available() else "cpu") if dev == "auto" else dev
    task = IndirectIndexing(cfg["ii_alphabet"], cfg["ii_min_len"], cfg["ii_max_len"], cfg["ii_max_shift"],
                            cfg["ii_queries"])
    seed_everything(seed)
    model = TinyDecoder(task.vocab_size, cfg["ii_d_model"], cfg["ii_layers"], cfg["ii_heads"], task.seq_len,
                        arm).to(dev)
    opt = torch.optim.AdamW(param_groups(model, cfg["ii_weight_decay"]), lr=cfg["ii_lr"])
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(cfg["ii_steps"], 0.05))
    for step in tqdm(range(cfg["ii_steps"]), desc=f"II {arm} seed {seed}", leave=False):
        x, y = task.sample(cfg["ii_batch"], seed=1_000_003 * (seed + 1) + step)  # never the test seed 999
        loss = indexing_loss(model, x.to(dev), y.to(dev))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
    xt, yt = task.test_set(cfg["ii_test_size"])
    acc = indexing_accuracy(model, xt.to(dev), yt.to(dev))
    return {"arm": arm, "seed": seed, "accuracy": acc, "final_loss": loss.item(), "time_s": time.perf_counter() - t0}
