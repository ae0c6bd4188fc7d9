"""Scoring and sampling that work the same on a `TinyLM` and on a Hugging Face causal LM.

Every function takes `model` as either an `icml26.common.lm.TinyLM` or any `transformers`
`PreTrainedModel` with a causal-LM head (e.g. `LlamaForCausalLM`, loaded or built from a config).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F

from icml26.common.lm import KVCache, TinyLM


def is_hf_model(model) -> bool:
    """True for a Hugging Face `transformers` model (duck-typed, so transformers need not be imported)."""
    return hasattr(model, "config") and hasattr(model, "generate") and not isinstance(model, TinyLM)


def _hf_cache_kwarg(model) -> str:
    """transformers >= 5 names the KV-cache argument `cache`; older releases `past_key_values`."""
    import inspect

    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _device(model) -> torch.device:
    return next(model.parameters()).device


def lm_logits(model, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Next-token logits (B, T, V) for `input_ids` (B, T); `attention_mask` (B, T) marks real tokens (1).

    A DDP/FSDP-wrapped model is called through its wrapper (so gradients synchronise) and typed by its module.
    """
    inner = getattr(model, "module", None)
    if isinstance(inner, torch.nn.Module) and isinstance(model, torch.nn.Module):
        if isinstance(inner, TinyLM):
            return model(input_ids, attention_mask=attention_mask)
        if is_hf_model(inner):
            return model(input_ids=input_ids, attention_mask=attention_mask).logits
    if isinstance(model, TinyLM):
        return model(input_ids, attention_mask=attention_mask)
    if is_hf_model(model):
        return model(input_ids=input_ids, attention_mask=attention_mask).logits
    raise TypeError(f"model must be a TinyLM or a transformers causal LM, got {type(model).__name__}")


def token_logprobs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """log p(x_t | x_<t) for t = 1..T-1 -> (B, T-1) float; padded targets (mask 0) get 0."""
    if input_ids.ndim != 2 or input_ids.shape[1] < 2:
        raise ValueError(f"input_ids must be (B, T) with T >= 2, got {tuple(input_ids.shape)}")
    logits = lm_logits(model, input_ids, attention_mask).float()
    lp = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, input_ids[:, 1:, None]).squeeze(-1)
    if attention_mask is not None:
        lp = lp * attention_mask[:, 1:].to(lp.dtype)
    return lp


def left_pad(seqs: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-pad variable-length token lists -> (ids (B, T) long, attention_mask (B, T) long)."""
    if not seqs or any(len(s) == 0 for s in seqs):
        raise ValueError("every prompt must have at least one token")
    T = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), T), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, T - len(s):] = torch.as_tensor(list(s), dtype=torch.long)
        mask[i, T - len(s):] = 1
    return ids, mask


def top_p_filter(logits: torch.Tensor, top_p: float | None) -> torch.Tensor:
    """Nucleus filter on (B, V) logits: keep the smallest set of most likely tokens whose probability reaches
    `top_p` (the most likely token is always kept); the rest get -inf. `None` or >= 1 returns `logits`."""
    if top_p is None or top_p >= 1.0:
        return logits
    if not top_p > 0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    sorted_logits, idx = torch.sort(logits, dim=-1, descending=True)
    p = torch.softmax(sorted_logits, -1)
    drop = p.cumsum(-1) - p >= top_p  # the nucleus was already full before this token
    return torch.empty_like(logits).scatter_(-1, idx, sorted_logits.masked_fill(drop, float("-inf")))


def sample_next(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                generator: torch.Generator | None = None, top_p: float | None = None) -> torch.Tensor:
    """Sample token ids (B,) from last-step logits (B, V); temperature 0 means greedy. `top_k` then `top_p`
    (nucleus) filter the tempered distribution."""
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if temperature == 0:
        return logits.argmax(-1)
    logits = logits.float() / temperature
    if top_k is not None:
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        kth = torch.topk(logits, min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = F.softmax(top_p_filter(logits, top_p), dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


@torch.no_grad()
def generate(
    model,
    prompts: Sequence[Sequence[int]] | torch.Tensor,
    max_new_tokens: int,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    eos_token_id: int | None = None,
    pad_token_id: int = 0,
    generator: torch.Generator | None = None,
    logits_hook: Callable[[int, torch.Tensor], torch.Tensor] | None = None,
) -> list[list[int]]:
    """Sample continuations for a batch of prompts (variable lengths are left-padded), with a KV cache.

    Returns the new tokens of each prompt; a continuation stops after `eos_token_id` (kept as its last token).
    Works for `TinyLM` and Hugging Face causal LMs alike (a DDP-wrapped model is unwrapped); `generator` makes
    sampling reproducible. `logits_hook(step, logits (B, V) float) -> logits` edits the next-token logits before
    temperature, top-k and top-p (vocabulary masks, forced stops; score with the same hook to get the exact
    log-probability of what was sampled).
    """
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    if isinstance(prompts, torch.Tensor):
        if prompts.ndim != 2:
            raise ValueError(f"prompt tensor must be (B, T), got {tuple(prompts.shape)}")
        prompts = prompts.tolist()
    inner = getattr(model, "module", None)
    if isinstance(inner, torch.nn.Module) and (isinstance(inner, TinyLM) or is_hf_model(inner)):
        model = inner
    was_training = model.training
    model.eval()
    dev = _device(model)
    ids, mask = left_pad(prompts, pad_token_id)
    ids, mask = ids.to(dev), mask.to(dev)
    B = ids.shape[0]
    out: list[list[int]] = [[] for _ in range(B)]
    done = torch.zeros(B, dtype=torch.bool, device=dev)
    hf = is_hf_model(model)
    state = None if hf else KVCache.empty(model.config.n_layers)
    cache_kw = _hf_cache_kwarg(model) if hf else ""
    step_ids = ids
    try:
        for step in range(max_new_tokens):
            if hf:
                positions = (mask.cumsum(-1) - 1).clamp_min(0)[:, -step_ids.shape[1]:]
                res = model(input_ids=step_ids, attention_mask=mask, position_ids=positions,
                            use_cache=True, **{cache_kw: state})
                logits = res.logits[:, -1]
                # transformers >= 5 returns `cache` (reading `past_key_values` there warns it is deprecated)
                state = res["cache"] if "cache" in res else getattr(res, "past_key_values", None)
            else:
                logits = model(step_ids, attention_mask=mask, cache=state)[:, -1]
            logits = logits.float()
            if logits_hook is not None:
                logits = logits_hook(step, logits)
            nxt = sample_next(logits, temperature, top_k, generator, top_p)
            nxt = torch.where(done, torch.full_like(nxt, pad_token_id), nxt)
            for i in torch.nonzero(~done).flatten().tolist():
                out[i].append(int(nxt[i]))
            if eos_token_id is not None:
                done |= nxt == eos_token_id
            if bool(done.all()):
                break
            step_ids = nxt[:, None]
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
    finally:
        model.train(was_training)
    return out
