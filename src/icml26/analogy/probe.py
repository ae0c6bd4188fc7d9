"""Run the same analogy premises through any Hugging Face causal LM (spec sections 3 and 7, real-model half).

`premise_sentences(world)` turns an `AnalogyWorld` into templated natural-language sentences (made-up names, so
a pretrained LM has no prior about them; the paper used an LLM to write its premises, a templated generator is the
spec's stand-in). `probe_conclusions(model, tokenizer, world)` scores each test conclusion "b is ___" by
next-token log-probability of every candidate attribute (summed over the candidate's tokens) and reports the
argmax accuracy over the G attributes and the probability of the right one renormalised over the candidates.
Works with any `transformers` causal LM (or an `icml26.common.lm.TinyLM`) and any tokenizer with `encode`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from icml26.analogy.data import AnalogyWorld
from icml26.common.generation import left_pad, token_logprobs
from icml26.common.validation import check_int

__all__ = ["token_names", "premise_sentences", "probe_conclusions"]

_SYL = ["ka", "lo", "mi", "ru", "te", "zo", "ni", "fa", "gu", "pe", "vi", "do", "sa", "bu", "re", "xo"]
_TEMPLATES = {"HAS": "{s} has {o}.", "IS": "{s} is {o}.", "ID": "{s} owns {o}."}


def _name(i: int, prefix: str) -> str:
    s = ""
    i0 = i
    for _ in range(3):
        s += _SYL[i % len(_SYL)]
        i //= len(_SYL)
    return f"{prefix}{s}" if i == 0 else f"{prefix}{s}{i0}"


def token_names(world: AnalogyWorld) -> dict[int, str]:
    """Token id -> a made-up word: entities "Kalomi"-like, features "with-...", attributes "...ish", values "the ..."."""
    if not isinstance(world, AnalogyWorld):
        raise TypeError(f"world must be an AnalogyWorld, got {type(world).__name__}")
    out: dict[int, str] = {}
    counters = {"entity": 0, "feature": 0, "attribute": 0, "value": 0}
    for name, t in sorted(world.layout.items(), key=lambda kv: kv[0]):
        kind = name[0]
        if kind in counters:
            w = _name(counters[kind] * 7 + {"entity": 0, "feature": 1, "attribute": 2, "value": 3}[kind], "")
            counters[kind] += 1
            out[t] = {"entity": w.capitalize(), "feature": "a " + w + " tail", "attribute": w + "ish",
                      "value": "the " + w + " stone"}[kind]
        else:
            out[t] = kind
    return out


def premise_sentences(world: AnalogyWorld) -> dict[str, list[str] | list[tuple[str, str]]]:
    """Sentences of the world's premises: {"similarity", "attribution", "individual": list of sentences,
    "test": list of (prompt, answer) with answer starting with a space, "candidates": the G attribute words}."""
    names = token_names(world)
    rel = {world.HAS: "HAS", world.IS: "IS", world.ID: "ID"}

    def sent(p) -> str:
        return _TEMPLATES[rel[p.inputs[-1]]].format(s=names[p.inputs[0]], o=names[p.target])

    return {"similarity": [sent(p) for p in world.similarity], "attribution": [sent(p) for p in world.attribution],
            "individual": [sent(p) for p in world.individual],
            "test": [(f"{names[p.inputs[0]]} is", " " + names[p.target]) for p in world.test],
            "candidates": [names[int(t)] for t in world.attr_tokens]}


def _encode(tokenizer: Any, text: str, special: bool) -> list[int]:
    if not hasattr(tokenizer, "encode"):
        raise TypeError(f"tokenizer must have an encode(text) method, got {type(tokenizer).__name__}")
    try:
        ids = tokenizer.encode(text, add_special_tokens=special)
    except TypeError:
        ids = tokenizer.encode(text)
    ids = list(ids)
    if not ids:
        raise ValueError(f"tokenizer encoded {text!r} to no tokens")
    return ids


@torch.no_grad()
def probe_conclusions(model: Any, tokenizer: Any, world: AnalogyWorld, batch_size: int = 64,
                      pad_id: int = 0) -> dict[str, Any]:
    """Score every test conclusion of `world` with `model` (next-token log-probabilities).

    Returns {"accuracy": argmax over the G candidate attributes == right one (chance 1/G), "conclusion_prob":
    mean probability of the right candidate renormalised over the candidates, "per_query": (n_test, G) array of
    summed candidate log-probabilities}.
    """
    batch_size = check_int(batch_size, "batch_size", min=1)
    pad_id = check_int(pad_id, "pad_id", min=0)
    if not callable(model):
        raise TypeError(f"model must be a causal LM (callable), got {type(model).__name__}")
    sents = premise_sentences(world)
    cands = [_encode(tokenizer, " " + c, False) for c in sents["candidates"]]
    seqs, n_tail = [], []
    for prompt, _ in sents["test"]:
        p = _encode(tokenizer, prompt, True)
        for c in cands:
            seqs.append(p + c)
            n_tail.append(len(c))
    scores = []
    was_training = getattr(model, "training", False)
    if hasattr(model, "eval"):
        model.eval()
    try:
        for i in range(0, len(seqs), batch_size):
            ids, mask = left_pad(seqs[i:i + batch_size], pad_id)
            lp = token_logprobs(model, ids, mask)  # (B, T-1); candidates are the last tokens (left padding)
            for row, n in zip(lp, n_tail[i:i + batch_size]):
                scores.append(float(row[-n:].sum()))
    finally:
        if was_training and hasattr(model, "train"):
            model.train()
    S = np.asarray(scores).reshape(len(sents["test"]), len(cands))
    right = np.array([sents["candidates"].index(a[1:]) for _, a in sents["test"]])
    P = np.exp(S - S.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    return {"accuracy": float(np.mean(S.argmax(axis=1) == right)),
            "conclusion_prob": float(P[np.arange(len(right)), right].mean()), "per_query": S}
