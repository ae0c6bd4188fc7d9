"""Restoration rewards of Robust-U1's Stage II (visual quality alignment), after the official `rewards/`.

Every reward is a callable `reward(images, ref_images) -> (total (N,), parts: dict[str, (N,)])` on floating
(N, C, H, W) batches in [0, 1]:

- `SSIMReward`: r_ssim = SSIM(y, x_clean) (11-tap Gaussian window, sigma 1.5, data range 1, valid
  convolution: the official `structure_score`); a reference of another size is resized bilinearly to the
  output's size (align_corners=False), as the official reward does.
- `EmbeddingSimilarityReward(encoder, alpha=5)`: c = cos(E(y), E(x_clean)) for any frozen image encoder E,
  r = exp(-alpha (1 - clamp(c, 0, 1))) (the official `tinyclip_score` term; alpha from
  TINYCLIP_SIMILARITY_ALPHA there).
- `CLIPSimilarityReward`: the same term with an open_clip image tower (ViT-B-32 by default; TinyCLIP or
  OpenAI weights) loaded from a local weights file. Nothing is downloaded: without `weights_path` (or the
  TINYCLIP_WEIGHTS_PATH environment variable) it raises. Preprocessing in torch: grey -> 3 channels, bicubic
  resize to the tower's input size, CLIP mean/std (the official code goes through PIL and open_clip's
  transform, which also centre-crops: identical for square images).
- `CompositeReward({"ssim": (SSIMReward(), 1.0), "clip": (EmbeddingSimilarityReward(E), 0.2)})`: the
  weighted sum (the official README config `reward_fn = {"restoration": 1.0, "tinyclip": 0.2}`).

`to_flow_grpo(reward)` wraps a reward into Flow-GRPO's reward-function shape (`(list[float], dict)`), and
`register_flow_grpo_rewards(score_functions)` adds builders under the official registry names.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from icml26.common.validation import check_bool, check_float, check_int
from icml26.robust_u1._checks import check_images, check_module
from icml26.robust_u1.metrics import ssim

__all__ = [
    "FLOW_GRPO_REFERENCE_REWARD_NAMES",
    "CLIPSimilarityReward",
    "CompositeReward",
    "EmbeddingSimilarityReward",
    "SSIMReward",
    "grouped_reward",
    "register_flow_grpo_rewards",
    "similarity_term",
    "to_flow_grpo",
]

RewardOutput = tuple[torch.Tensor, dict[str, torch.Tensor]]


def similarity_term(cos: Any, alpha: float = 5.0) -> torch.Tensor:
    """exp(-alpha (1 - clamp(cos, 0, 1))): 1 at cos 1, exp(-alpha) for cos <= 0, monotone in between."""
    alpha = check_float(alpha, "alpha", min=0.0)
    c = torch.as_tensor(cos, dtype=torch.get_default_dtype()) if not isinstance(cos, torch.Tensor) else cos
    if not bool(torch.isfinite(c).all()):
        raise ValueError("cos must be finite")
    return torch.exp(-alpha * (1.0 - c.clamp(0.0, 1.0)))


def _pair(images: Any, ref_images: Any, resize: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    y = check_images(images, "images")
    r = check_images(ref_images, "ref_images")
    if y.shape[0] != r.shape[0]:
        raise ValueError(f"images and ref_images must hold the same number of items, got {y.shape[0]} and "
                         f"{r.shape[0]}")
    if y.shape[1] != r.shape[1]:
        raise ValueError(f"images and ref_images must have the same channels, got {y.shape[1]} and {r.shape[1]}")
    if r.shape[2:] != y.shape[2:]:
        if not resize:
            raise ValueError(f"images {tuple(y.shape)} and ref_images {tuple(r.shape)} differ in size")
        r = F.interpolate(r.to(y.dtype), size=y.shape[2:], mode="bilinear", align_corners=False)
    return y, r.to(y.dtype)


class SSIMReward:
    """r = SSIM(images, ref_images) per item, (N,); see `icml26.robust_u1.metrics.ssim`."""

    name = "ssim"

    def __init__(self, win_size: int = 11, win_sigma: float = 1.5, data_range: float = 1.0) -> None:
        self.win_size, self.win_sigma, self.data_range = win_size, win_sigma, data_range
        self._check()

    def _check(self) -> None:
        check_int(self.win_size, "win_size", min=1)
        check_float(self.win_sigma, "win_sigma", min=0.0, min_open=True)
        check_float(self.data_range, "data_range", min=0.0, min_open=True)

    def __call__(self, images: Any, ref_images: Any) -> RewardOutput:
        self._check()
        y, r = _pair(images, ref_images)
        s = ssim(y, r, data_range=self.data_range, win_size=self.win_size, win_sigma=self.win_sigma)
        return s, {"ssim": s}

    def __repr__(self) -> str:
        return f"SSIMReward(win_size={self.win_size}, win_sigma={self.win_sigma}, data_range={self.data_range})"


class EmbeddingSimilarityReward:
    """r = exp(-alpha (1 - clamp(cos(E(y), E(x_ref)), 0, 1))) for a frozen encoder E.

    Args:
        encoder: an nn.Module mapping (N, C, H, W) to (N, D) embeddings (or a module with an `embed` method,
            which is used instead, e.g. `TinyEncoder`). It is put in eval mode and never updated here.
        alpha: sharpness (official default 5.0).
        differentiable: keep the graph to the images (default False: rewards are scores, computed under
            torch.no_grad()).
    Parts returned: "cos" (the raw cosine) and "sim" (the reward term).
    """

    name = "embedding"

    def __init__(self, encoder: torch.nn.Module, alpha: float = 5.0, differentiable: bool = False) -> None:
        self.encoder, self.alpha, self.differentiable = encoder, alpha, differentiable
        self._check()

    def _check(self) -> None:
        check_module(self.encoder, "encoder")
        check_float(self.alpha, "alpha", min=0.0)
        check_bool(self.differentiable, "differentiable")

    def _embed(self, x: torch.Tensor) -> torch.Tensor:
        fn = getattr(self.encoder, "embed", None) or self.encoder
        e = fn(x)
        if not isinstance(e, torch.Tensor) or e.dim() != 2 or e.shape[0] != x.shape[0]:
            raise ValueError(f"encoder must return (N, D) embeddings, got "
                             f"{tuple(e.shape) if isinstance(e, torch.Tensor) else type(e).__name__}")
        return F.normalize(e, dim=-1)

    def __call__(self, images: Any, ref_images: Any) -> RewardOutput:
        self._check()
        y, r = _pair(images, ref_images)
        was_training = self.encoder.training
        self.encoder.eval()
        try:
            with torch.set_grad_enabled(self.differentiable and torch.is_grad_enabled()):
                dt = next((p.dtype for p in self.encoder.parameters()), y.dtype)
                cos = (self._embed(y.to(dt)) * self._embed(r.to(dt))).sum(-1)
        finally:
            self.encoder.train(was_training)
        sim = similarity_term(cos, self.alpha)
        return sim, {"cos": cos, "sim": sim}

    def grouped(self, images: torch.Tensor, ref_images: torch.Tensor) -> RewardOutput:
        """Rewards of G samples per reference, images (N, G, C, H, W) vs ref_images (N, C, H, W), flattened to
        (N G,): each reference is embedded once instead of G times (same values as `__call__`)."""
        self._check()
        n, g = images.shape[:2]
        y = check_images(images.flatten(0, 1), "images")
        r = check_images(ref_images, "ref_images")
        if r.shape[0] != n or r.shape[1:] != images.shape[2:]:
            raise ValueError(f"ref_images must be (N, C, H, W) = ({n}, {', '.join(map(str, images.shape[2:]))}), "
                             f"got {tuple(r.shape)}")
        was_training = self.encoder.training
        self.encoder.eval()
        try:
            with torch.set_grad_enabled(self.differentiable and torch.is_grad_enabled()):
                dt = next((p.dtype for p in self.encoder.parameters()), y.dtype)
                cos = (self._embed(y.to(dt)) * self._embed(r.to(dt)).repeat_interleave(g, dim=0)).sum(-1)
        finally:
            self.encoder.train(was_training)
        sim = similarity_term(cos, self.alpha)
        return sim, {"cos": cos, "sim": sim}


class CLIPSimilarityReward(EmbeddingSimilarityReward):
    """The official TinyCLIP term with an open_clip image tower from a local weights file (never downloaded).

    Args:
        model_name: open_clip architecture (default "ViT-B-32", as the official reward).
        weights_path: .safetensors / .pt / .pth state dict of that architecture; default the
            TINYCLIP_WEIGHTS_PATH environment variable. Missing -> ValueError (we never fetch "openai" weights).
        alpha: default float(TINYCLIP_SIMILARITY_ALPHA) or 5.0. device: where the tower runs.
    Needs the optional package open_clip_torch (`pip install open_clip_torch`; it pulls torchvision, so it is
    not part of the [robust_u1] extra).
    """

    name = "clip"
    MEAN = (0.48145466, 0.4578275, 0.40821073)
    STD = (0.26862954, 0.26130258, 0.27577711)

    def __init__(self, model_name: str = "ViT-B-32", weights_path: str | os.PathLike | None = None,
                 alpha: float | None = None, device: str | torch.device = "cpu") -> None:
        if not isinstance(model_name, str) or not model_name:
            raise TypeError(f"model_name must be a non-empty string, got {model_name!r}")
        path = weights_path if weights_path is not None else os.environ.get("TINYCLIP_WEIGHTS_PATH", "").strip()
        if not path:
            raise ValueError("weights_path is required (or set TINYCLIP_WEIGHTS_PATH): CLIPSimilarityReward loads "
                             "local open_clip weights and never downloads them")
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise ValueError(f"weights_path {path!r} is not a file")
        if alpha is None:
            alpha = float(os.environ.get("TINYCLIP_SIMILARITY_ALPHA", "5.0"))
        try:
            import open_clip
        except ImportError as e:
            raise ImportError("CLIPSimilarityReward needs the optional package open_clip_torch "
                              "(pip install open_clip_torch)") from e
        model = open_clip.create_model(model_name, pretrained=None)
        if path.endswith(".safetensors"):
            from safetensors.torch import load_file

            state = load_file(path)
        else:
            state = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(state)
        model = model.to(device).eval()
        for p in model.parameters():
            p.requires_grad_(False)
        size = model.visual.image_size
        self.image_size = size if isinstance(size, int) else int(size[0])
        self.model_name, self.weights_path, self.device = model_name, path, torch.device(device)
        tower = _CLIPTower(model, self.image_size, self.MEAN, self.STD)
        super().__init__(tower, alpha=alpha)


class _CLIPTower(torch.nn.Module):
    def __init__(self, model: torch.nn.Module, size: int, mean, std) -> None:
        super().__init__()
        self.model, self.size = model, size
        self.register_buffer("mean", torch.tensor(mean).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(std).view(1, 3, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.to(self.mean.device, self.mean.dtype)
        if x.shape[1] == 1:
            x = x.expand(-1, 3, -1, -1)
        x = F.interpolate(x, size=(self.size, self.size), mode="bicubic", align_corners=False).clamp(0, 1)
        return self.model.encode_image((x - self.mean) / self.std)


class CompositeReward:
    """Weighted sum of rewards: total = sum_k w_k r_k. `parts` maps each name to its (N,) reward; each
    part's own sub-parts appear as "name/sub".

    Args:
        parts: {name: (reward, weight)}; weights finite (negative allowed, e.g. penalties); at least one part.
    """

    def __init__(self, parts: Mapping[str, tuple[Callable[..., RewardOutput], float]]) -> None:
        self.parts = parts
        self._check()

    def _check(self) -> dict[str, tuple[Callable[..., RewardOutput], float]]:
        if not isinstance(self.parts, Mapping) or not self.parts:
            raise TypeError(f"parts must be a non-empty mapping name -> (reward, weight), got {self.parts!r}")
        out = {}
        for k, v in self.parts.items():
            if not isinstance(k, str):
                raise TypeError(f"parts keys must be strings, got {k!r}")
            if not isinstance(v, tuple) or len(v) != 2 or not callable(v[0]):
                raise TypeError(f"parts[{k!r}] must be a (reward, weight) tuple, got {v!r}")
            out[k] = (v[0], check_float(v[1], f"parts[{k!r}] weight"))
        return out

    def __call__(self, images: Any, ref_images: Any) -> RewardOutput:
        parts = self._check()
        y, r = _pair(images, ref_images)
        total = None
        details: dict[str, torch.Tensor] = {}
        for name, (fn, w) in parts.items():
            val, sub = fn(y, r)
            if not isinstance(val, torch.Tensor) or val.shape != (y.shape[0],):
                raise ValueError(f"reward {name!r} must return an (N,) = ({y.shape[0]},) tensor, got "
                                 f"{tuple(val.shape) if isinstance(val, torch.Tensor) else type(val).__name__}")
            details[name] = val
            details.update({f"{name}/{k}": v for k, v in sub.items()})
            total = w * val if total is None else total + w * val
        return total, details

    def grouped(self, images: torch.Tensor, ref_images: torch.Tensor) -> RewardOutput:
        """Like `__call__` for images (N, G, C, H, W) against ref_images (N, C, H, W); (N G,) outputs. Parts with
        a `grouped` method use it (e.g. one embedding per reference)."""
        parts = self._check()
        total = None
        details: dict[str, torch.Tensor] = {}
        for name, (fn, w) in parts.items():
            val, sub = grouped_reward(fn, images, ref_images)
            details[name] = val
            details.update({f"{name}/{k}": v for k, v in sub.items()})
            total = w * val if total is None else total + w * val
        return total, details

    def __repr__(self) -> str:
        return "CompositeReward({" + ", ".join(f"{k!r}: ({v[0]!r}, {v[1]})" for k, v in self.parts.items()) + "})"


def grouped_reward(reward: Callable[..., RewardOutput], images: Any, ref_images: Any) -> RewardOutput:
    """Score G samples per reference: images (N, G, C, H, W), ref_images (N, C, H, W) -> (N G,) rewards in
    sample-major order (sample g of input n at n G + g). Uses `reward.grouped` when it has one, else repeats
    each reference G times."""
    from icml26.common.validation import check_tensor

    y = check_tensor(images, "images", ndim=5)
    r = check_tensor(ref_images, "ref_images", ndim=4)
    if r.shape[0] != y.shape[0]:
        raise ValueError(f"images ({y.shape[0]} groups) and ref_images ({r.shape[0]}) must have one reference per "
                         "group")
    if hasattr(reward, "grouped"):
        return reward.grouped(y, r)
    return reward(y.flatten(0, 1), r.repeat_interleave(y.shape[1], dim=0))


# ------------------------------------------------------------------------------------------- Flow-GRPO
FLOW_GRPO_REFERENCE_REWARD_NAMES = frozenset({"restoration", "structure", "robust_structure", "tinyclip",
                                              "robust_tinyclip"})


def _as_batch(images: Any, name: str) -> torch.Tensor:
    """Flow-GRPO hands rewards NCHW float tensors in [0, 1], uint8 tensors/arrays (0..255, by dtype) or a list
    of CHW images; NHWC input is transposed when the last axis has 1 or 3 channels and the second does not."""
    if isinstance(images, (list, tuple)):
        if not images:
            raise ValueError(f"{name} must hold at least one image")
        images = torch.stack([_as_batch(im, name)[0] for im in images])
        return images
    if isinstance(images, np.ndarray):
        images = torch.from_numpy(np.ascontiguousarray(images))
    if not isinstance(images, torch.Tensor):
        raise TypeError(f"{name} must be a tensor, an array or a list of images, got {type(images).__name__}")
    t = images.detach().cpu()
    if t.dim() == 3:
        t = t.unsqueeze(0)
    if t.dim() != 4:
        raise ValueError(f"{name} must be (N, C, H, W) or (C, H, W), got shape {tuple(t.shape)}")
    if t.shape[1] not in (1, 3) and t.shape[-1] in (1, 3):
        t = t.permute(0, 3, 1, 2)
    if t.dtype == torch.uint8:
        t = t.float() / 255.0
    elif not t.is_floating_point():
        raise TypeError(f"{name} must be uint8 (0..255) or floating in [0, 1], got dtype {t.dtype}")
    return t.float()


def to_flow_grpo(reward: Callable[..., RewardOutput]) -> Callable[..., tuple[list[float], dict[str, Any]]]:
    """Wrap a reward into Flow-GRPO's reward-function shape.

    The returned `fn(images, ref_images, *args, **kwargs) -> (list[float], dict)`: images/ref_images as
    Flow-GRPO passes them (see `_as_batch`); extra positional/keyword arguments (prompts, metadata) are
    ignored, as by the official reference rewards; the dict holds each part as a list of floats.
    """
    if not callable(reward):
        raise TypeError(f"reward must be callable, got {type(reward).__name__}")

    def fn(images: Any, ref_images: Any = None, *args: Any, **kwargs: Any) -> tuple[list[float], dict[str, Any]]:
        if ref_images is None:
            ref_images = kwargs.get("ref_images")
        if ref_images is None:
            raise ValueError("ref_images is required: restoration rewards score against the clean reference")
        with torch.no_grad():
            total, parts = reward(_as_batch(images, "images"), _as_batch(ref_images, "ref_images"))
        return total.detach().cpu().double().tolist(), {k: v.detach().cpu().double().tolist()
                                                        for k, v in parts.items()}

    return fn


def register_flow_grpo_rewards(score_functions: MutableMapping[str, Callable[..., Any]], *,
                               override: bool = True, embedding_encoder: torch.nn.Module | None = None
                               ) -> MutableMapping[str, Callable[..., Any]]:
    """Add builders `name -> builder(device) -> fn(images, ref_images)` to Flow-GRPO's `score_functions`.

    Names as the official adapter: "restoration", "structure", "robust_structure" (SSIM) and "tinyclip",
    "robust_tinyclip" (`CLIPSimilarityReward`, local weights via TINYCLIP_WEIGHTS_PATH; or, given
    `embedding_encoder`, `EmbeddingSimilarityReward(embedding_encoder)`). With override=False names already
    present are kept. Flow-GRPO must pass `ref_images` to these (their names are in
    `FLOW_GRPO_REFERENCE_REWARD_NAMES`).
    """
    if not isinstance(score_functions, MutableMapping):
        raise TypeError(f"score_functions must be a mutable mapping, got {type(score_functions).__name__}")
    check_bool(override, "override")
    if embedding_encoder is not None:
        check_module(embedding_encoder, "embedding_encoder")

    def structure(device: Any = "cpu"):
        return to_flow_grpo(SSIMReward())

    def semantic(device: Any = "cpu"):
        if embedding_encoder is not None:
            return to_flow_grpo(EmbeddingSimilarityReward(embedding_encoder))
        return to_flow_grpo(CLIPSimilarityReward(device=device))

    builders = {"restoration": structure, "structure": structure, "robust_structure": structure,
                "tinyclip": semantic, "robust_tinyclip": semantic}
    for name, b in builders.items():
        if override or name not in score_functions:
            score_functions[name] = b
    return score_functions
