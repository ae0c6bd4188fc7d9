"""Read and patch residual-stream activations of a TinyLM or any Hugging Face causal LM.

Layer convention (spec 9, "be explicit about off-by-one"): layer 0 is the embedding output, i.e. the input of
the first decoder block; layer l >= 1 is the output of the l-th decoder block (1-indexed), before any final norm.
This equals Hugging Face's `output_hidden_states[l]` for l < L (HF applies the final norm to its last entry; we do
not). The official code's `layers[l].output[0]` is our layer l + 1.

- `get_decoder_layers(model)` finds the block list (`model.model.layers`, `model.transformer.h`,
  `model.gpt_neox.layers`, `model.model.decoder.layers`, TinyLM `blocks`; through DDP and PEFT wrappers).
- `read_activations(model, input_ids, attention_mask, layer, positions)` -> float tensor (B, P, d). The forward
  pass stops once the layer is read (a later block never runs), so reading early layers of a big model is cheap.
- `patch_activations(model, layer, positions, vectors, mode)` is a context manager that replaces (or adds to) the
  hidden state at given positions. It works inside `generate`: a pass that continues a KV cache (its position ids
  do not start at 0) or is too short to hold the positions is left untouched, so only the prefill is patched and
  the cached later steps see the patched keys/values only through the cache, as in the paper's Patchscopes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import numpy as np
import torch
import torch.nn as nn

from icml26.common.generation import is_hf_model, lm_logits
from icml26.common.lm import TinyLM
from icml26.common.validation import check_array, check_choice, check_tensor

__all__ = ["get_decoder_layers", "hidden_size", "read_activations", "patch_activations", "num_layers"]

_LAYER_PATHS = ("model.layers", "transformer.h", "gpt_neox.layers", "model.decoder.layers", "layers")


def _unwrap(model: nn.Module) -> nn.Module:
    """The model inside DDP/FSDP (`.module`) and PEFT (`.base_model.model`) wrappers."""
    for _ in range(8):
        inner = getattr(model, "module", None)
        if isinstance(inner, nn.Module):
            model = inner
            continue
        base = getattr(model, "base_model", None)
        if isinstance(base, nn.Module) and base is not model and isinstance(getattr(base, "model", None), nn.Module) \
                and type(model).__name__.startswith("Peft"):
            model = base.model
            continue
        break
    return model


def get_decoder_layers(model: nn.Module) -> list[nn.Module]:
    """The decoder blocks of `model`, in order (TinyLM `blocks` or the usual Hugging Face attribute paths)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    inner = _unwrap(model)
    if isinstance(inner, TinyLM):
        return list(inner.blocks)
    for path in _LAYER_PATHS:
        obj = inner
        for part in path.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if isinstance(obj, nn.ModuleList) and len(obj):
            return list(obj)
    raise ValueError(f"cannot find the decoder layers of {type(inner).__name__}: expected TinyLM blocks or one of "
                     f"{', '.join(_LAYER_PATHS)}")


def num_layers(model: nn.Module) -> int:
    """Number of decoder blocks L (valid layer indices are 0..L)."""
    return len(get_decoder_layers(model))


def hidden_size(model: nn.Module) -> int:
    """Residual-stream width d of `model`."""
    inner = _unwrap(model)
    if isinstance(inner, TinyLM):
        return inner.config.d_model
    cfg = getattr(inner, "config", None)
    for key in ("hidden_size", "n_embd", "d_model"):
        if cfg is not None and isinstance(getattr(cfg, key, None), int):
            return getattr(cfg, key)
    if cfg is not None and hasattr(cfg, "get_text_config"):
        return hidden_size_from_config(cfg.get_text_config())
    raise ValueError(f"cannot tell the hidden size of {type(inner).__name__}")


def hidden_size_from_config(cfg) -> int:
    for key in ("hidden_size", "n_embd", "d_model"):
        if isinstance(getattr(cfg, key, None), int):
            return getattr(cfg, key)
    raise ValueError("cannot tell the hidden size from the model config")


def _check_layer(model: nn.Module, layer, name: str = "layer") -> int:
    L = num_layers(model)
    if isinstance(layer, bool) or not hasattr(layer, "__index__"):
        raise TypeError(f"{name} must be an integer in 0..{L}, got {type(layer).__name__} {layer!r}")
    layer = int(layer)
    if not 0 <= layer <= L:
        raise IndexError(f"{name} {layer} is out of range: valid layers are 0..{L} (0 = embedding output, "
                         f"{L} = last block output)")
    return layer


def _hidden_from(args: tuple, kwargs: dict) -> torch.Tensor:
    if args:
        return args[0]
    if "hidden_states" in kwargs:
        return kwargs["hidden_states"]
    raise RuntimeError("cannot find the hidden states in the decoder layer's inputs")


def _positions_from(module_is_tiny: bool, args: tuple, kwargs: dict) -> torch.Tensor | None:
    """Position ids of the tokens of this pass, where the layer receives them."""
    if module_is_tiny:
        return args[1] if len(args) > 1 and isinstance(args[1], torch.Tensor) else None
    pos = kwargs.get("position_ids")
    if pos is None and len(args) > 2 and isinstance(args[2], torch.Tensor) and not args[2].is_floating_point():
        pos = args[2]
    if pos is None:
        pos = kwargs.get("cache_position")
    return pos if isinstance(pos, torch.Tensor) else None


def _as_ids(input_ids, name: str = "input_ids") -> torch.Tensor:
    if isinstance(input_ids, torch.Tensor):
        if input_ids.is_floating_point() or input_ids.is_complex() or input_ids.dtype == torch.bool:
            raise TypeError(f"{name} must hold integer token ids, got dtype {input_ids.dtype}")
        ids = input_ids.long()
    else:
        ids = check_tensor(input_ids, name, dtype=torch.float64, floating=False)
        if not torch.all(ids == ids.round()):
            raise ValueError(f"{name} must hold integer token ids (not truncated)")
        ids = ids.long()
    if ids.dim() != 2 or ids.shape[1] == 0 or ids.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty (B, T) array of token ids, got shape {tuple(ids.shape)}")
    if int(ids.min()) < 0:
        raise ValueError(f"{name} must hold non-negative token ids, got {int(ids.min())}")
    return ids


def _check_vocab(model: nn.Module, ids: torch.Tensor, name: str = "input_ids") -> None:
    """Token ids beyond the model's embedding table raise a ValueError naming `name` (not an opaque IndexError)."""
    emb = getattr(model, "tok_emb", None)  # TinyLM
    if not isinstance(emb, nn.Embedding):
        get = getattr(model, "get_input_embeddings", None)
        emb = get() if callable(get) else None
    n = getattr(emb, "num_embeddings", None)
    if isinstance(n, int) and int(ids.max()) >= n:
        raise ValueError(f"{name} must hold token ids < the model's vocabulary size {n}, got {int(ids.max())}")


def _as_mask(attention_mask, ids: torch.Tensor) -> torch.Tensor | None:
    if attention_mask is None:
        return None
    m = attention_mask if isinstance(attention_mask, torch.Tensor) else check_tensor(attention_mask, "attention_mask",
                                                                                     floating=False)
    if tuple(m.shape) != tuple(ids.shape):
        raise ValueError(f"attention_mask must have the shape of input_ids {tuple(ids.shape)}, got {tuple(m.shape)}")
    if m.is_floating_point():
        if not torch.all((m == 0) | (m == 1)):
            raise ValueError("attention_mask must hold 0/1 values")
    m = m.long()
    if not torch.all((m == 0) | (m == 1)):
        raise ValueError("attention_mask must hold 0/1 values")
    if bool((m.sum(1) == 0).any()):
        raise ValueError("attention_mask has a row without any real token")
    return m


def _as_positions(positions) -> torch.Tensor:
    """Token indices as a (R, P) long tensor (R = 1 for indices shared by every row)."""
    if isinstance(positions, bool) or positions is None:
        raise TypeError(f"positions must be an int, (P,) or (B, P) integer indices, got {positions!r}")
    if isinstance(positions, int) or (hasattr(positions, "__index__") and not hasattr(positions, "shape")):
        positions = [int(positions)]
    if isinstance(positions, torch.Tensor):
        if positions.is_floating_point() or positions.is_complex() or positions.dtype == torch.bool:
            raise TypeError(f"positions must hold integer indices, got dtype {positions.dtype}")
        pos = positions.detach().cpu().long()
    else:
        pos = torch.from_numpy(check_array(positions, "positions", ndim=(1, 2), dtype=np.int64))
    if pos.dim() == 1:
        pos = pos[None]
    if pos.dim() != 2 or pos.numel() == 0:
        raise ValueError(f"positions must be an int, (P,) or (B, P) indices, got shape {tuple(pos.shape)}")
    if int(pos.min()) < 0:
        raise ValueError(f"positions must be >= 0, got {int(pos.min())}")
    return pos


class _Stop(Exception):
    """Raised by a read hook to end the forward pass early."""


@torch.no_grad()
def read_activations(model: nn.Module, input_ids, attention_mask=None, layer: int = 1,
                     positions: str | Sequence[int] | torch.Tensor = "last") -> torch.Tensor:
    """Residual-stream activations of `model` at `layer` (see the module docstring for the convention).

    Args:
        model: TinyLM or Hugging Face causal LM.
        input_ids: (B, T) token ids (tensor, array or nested list).
        attention_mask: optional (B, T) 0/1, 1 for real tokens (left or right padding).
        layer: 0..L.
        positions: "last" (the last real token of each row), "all" (every position, padding included) or
            indices: (P,) for every row or (B, P) per row, each in [0, T).
    Returns:
        float tensor (B, P, d) on the model's device (P = 1 for "last", T for "all"); no gradient.
    """
    ids = _as_ids(input_ids)
    _check_vocab(model, ids)
    mask = _as_mask(attention_mask, ids)
    layer = _check_layer(model, layer)
    B, T = ids.shape
    if isinstance(positions, str):
        check_choice(positions, "positions", ("last", "all"))
    else:
        pos = _as_positions(positions)
        if pos.shape[0] not in (1, B):
            raise ValueError(f"positions must be (P,) or (B={B}, P), got shape {tuple(pos.shape)}")
        pos = pos.expand(B, -1)
        if int(pos.max()) >= T:
            raise IndexError(f"positions must lie in [0, {T}), got up to {int(pos.max())}")
    layers = get_decoder_layers(model)
    store: dict[str, torch.Tensor] = {}
    if layer == 0:
        def pre(mod, args, kwargs):
            store["h"] = _hidden_from(args, kwargs)
            raise _Stop
        handle = layers[0].register_forward_pre_hook(pre, with_kwargs=True)
    else:
        def post(mod, args, kwargs, output):
            store["h"] = output[0] if isinstance(output, (tuple, list)) else output
            raise _Stop
        handle = layers[layer - 1].register_forward_hook(post, with_kwargs=True)
    dev = next(model.parameters()).device
    was = model.training
    model.eval()
    try:
        lm_logits(model, ids.to(dev), None if mask is None else mask.to(dev))
    except _Stop:
        pass
    finally:
        handle.remove()
        model.train(was)
    h = store["h"].float()
    if isinstance(positions, str):
        if positions == "all":
            return h
        last = torch.full((B,), T - 1, dtype=torch.long) if mask is None else \
            (T - 1 - torch.argmax(mask.flip(1), dim=1))  # index of each row's last real token
        return h[torch.arange(B), last.to(h.device)][:, None]
    return h[torch.arange(B)[:, None], pos.to(h.device)]


@contextlib.contextmanager
def patch_activations(model: nn.Module, layer: int, positions, vectors, mode: str = "replace",
                      valid=None) -> Iterator[None]:
    """Within the `with` block, overwrite (mode "replace") or add to (mode "add") `model`'s layer-`layer` state.

    Args:
        model: TinyLM or Hugging Face causal LM.
        layer: 0..L (0 = embedding output: the input of block 1 is changed).
        positions: an int, (P,) indices applied to every row, or (B, P) per-row indices into the token axis of
            each forward pass (with left padding, count the padding).
        vectors: (d,), (P, d) or (B, P, d) values (float); finite.
        mode: "replace" or "add".
        valid: optional (B, P) bool; False entries are skipped (ragged placeholder counts in one batch).
    A pass whose position ids start above 0 (a cached generation step) or whose length cannot hold the positions
    (and that is not the first pass) is left untouched; a first pass that is too short raises `IndexError`.
    """
    layer = _check_layer(model, layer)
    check_choice(mode, "mode", ("replace", "add"))
    pos = _as_positions(positions)
    vec = check_tensor(vectors, "vectors", ndim=(1, 2, 3))
    d = hidden_size(model)
    if vec.shape[-1] != d:
        raise ValueError(f"vectors have width {vec.shape[-1]} but the model's hidden size is {d}: map them first "
                         f"(e.g. an affine map between the two models)")
    P = pos.shape[1]
    if vec.dim() == 1:
        vec = vec.expand(P, d)
    if vec.dim() == 2:
        if vec.shape[0] != P:
            raise ValueError(f"vectors must have one row per position ({P}), got shape {tuple(vec.shape)}")
        vec = vec[None]
    if vec.shape[1] != P:
        raise ValueError(f"vectors must be (B, P={P}, d), got shape {tuple(vec.shape)}")
    keep = None
    if valid is not None:
        keep = valid if isinstance(valid, torch.Tensor) else torch.as_tensor(np.asarray(valid))
        if keep.dtype != torch.bool:
            raise TypeError(f"valid must be a bool mask, got dtype {keep.dtype}")
        if keep.dim() != 2 or keep.shape[1] != P:
            raise ValueError(f"valid must be (B, P={P}) bool, got shape {tuple(keep.shape)}")
    named = [("positions", pos), ("vectors", vec)] + ([("valid", keep)] if keep is not None else [])
    rows = max(t.shape[0] for _, t in named)
    for name, t in named:
        if t.shape[0] not in (1, rows):
            raise ValueError(f"{name} has {t.shape[0]} rows but another argument has {rows}")
    if keep is None:
        max_pos = int(pos.max())
    else:
        both = max(pos.shape[0], keep.shape[0])
        chosen = pos.expand(both, P)[keep.expand(both, P)]
        max_pos = int(chosen.max()) if chosen.numel() else -1
    tiny = isinstance(_unwrap(model), TinyLM)
    state = {"passes": 0}

    def apply(h: torch.Tensor, args: tuple, kwargs: dict) -> torch.Tensor:
        state["passes"] += 1
        if max_pos < 0:
            return h
        p_ids = _positions_from(tiny, args, kwargs)
        if p_ids is not None and p_ids.numel() and int(p_ids.min()) > 0:
            return h  # continues a KV cache: leave the cached steps of generation untouched
        B, T, _ = h.shape
        if T <= max_pos:
            if (p_ids is None and state["passes"] == 1) or p_ids is not None:
                raise IndexError(f"positions reach {max_pos} but the forward pass has only {T} tokens")
            return h  # a later pass of unknown position ids: a cached generation step
        if rows not in (1, B):
            raise ValueError(f"positions/vectors have {rows} rows but the batch has {B}")
        P_ = pos.to(h.device).expand(B, P)
        V_ = vec.to(device=h.device, dtype=h.dtype).expand(B, P, d)
        b_idx = torch.arange(B, device=h.device)[:, None].expand(B, P)
        if keep is not None:
            K_ = keep.to(h.device).expand(B, P)
            b_idx, P_, V_ = b_idx[K_], P_[K_], V_[K_]
        out = h.clone()
        if mode == "replace":
            out[b_idx, P_] = V_
        else:
            out[b_idx, P_] = out[b_idx, P_] + V_
        return out

    layers = get_decoder_layers(model)
    if layer == 0:
        def pre(mod, args, kwargs):
            if args:
                return (apply(args[0], args, kwargs), *args[1:]), kwargs
            kwargs = dict(kwargs)
            kwargs["hidden_states"] = apply(kwargs["hidden_states"], args, kwargs)
            return args, kwargs
        handle = layers[0].register_forward_pre_hook(pre, with_kwargs=True)
    else:
        def post(mod, args, kwargs, output):
            if isinstance(output, (tuple, list)):
                return type(output)((apply(output[0], args, kwargs), *output[1:]))
            return apply(output, args, kwargs)
        handle = layers[layer - 1].register_forward_hook(post, with_kwargs=True)
    try:
        yield
    finally:
        handle.remove()


def is_causal_lm(model) -> bool:
    """True for a TinyLM or a Hugging Face causal LM (what every verbalizer accepts)."""
    return isinstance(_unwrap(model), TinyLM) or is_hf_model(_unwrap(model))
