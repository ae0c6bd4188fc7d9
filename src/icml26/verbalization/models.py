"""Tiny word-level causal LMs for the controlled worlds, and a padded-batch training loop.

`TinyCausalLM` is `icml26.common.lm.TinyLM` with the spec's toy settings (d_model 64, 2 layers, 4 heads, tied
embeddings, RoPE, GELU, RMSNorm) and a greedy `.generate`. `train_lm` trains any causal LM (TinyLM or Hugging Face)
on whole short texts: each batch is right-padded to its longest sequence (review note 6: the templates are at most
16 tokens, so padding to a fixed 32 would double the cost), the loss skips padding, and an optional second corpus is
mixed into every batch at a fixed share (the 1:1 persona/C0 mix and the rehearsal of spec 6).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from icml26.common.generation import generate, lm_logits
from icml26.common.lm import TinyLM, TinyLMConfig
from icml26.common.train import warmup_cosine
from icml26.common.validation import check_bool, check_float, check_int, check_seed

__all__ = ["TinyCausalLM", "train_lm", "encode_texts", "pad_right"]


class TinyCausalLM(TinyLM):
    """Word-level decoder-only LM (nn.Module): `forward(idx (B, T) long) -> logits (B, T, vocab)`.

    Args:
        vocab_size: number of tokens.
        d_model: residual width (default 64).
        n_layers: decoder blocks (default 2).
        n_heads: attention heads (default 4).
        max_len: longest sequence `generate`/`train_lm` accept (default 32).
    Embeddings are tied to the output head; positions use RoPE (explicit position ids work with left padding).
    """

    def __init__(self, vocab_size: int, d_model: int = 64, n_layers: int = 2, n_heads: int = 4,
                 max_len: int = 32) -> None:
        vocab_size = check_int(vocab_size, "vocab_size", min=2)
        d_model = check_int(d_model, "d_model", min=2)
        n_layers = check_int(n_layers, "n_layers", min=1)
        n_heads = check_int(n_heads, "n_heads", min=1)
        max_len = check_int(max_len, "max_len", min=2)
        if d_model % n_heads or (d_model // n_heads) % 2:
            raise ValueError(f"d_model ({d_model}) must split into n_heads ({n_heads}) heads of even width")
        super().__init__(TinyLMConfig(vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
                                      ctx=max_len, tie_embeddings=True, pos="rope", mlp="gelu", norm="rmsnorm"))
        self.max_len = max_len

    def generate(self, prompts: Sequence[Sequence[int]] | torch.Tensor, max_new_tokens: int = 20, *,
                 eos_token_id: int | None = None, pad_token_id: int = 0) -> list[list[int]]:
        """Greedy continuations of token-id prompts (left-padded, KV cache); stops after `eos_token_id`."""
        max_new_tokens = check_int(max_new_tokens, "max_new_tokens", min=0)
        rows = prompts.tolist() if isinstance(prompts, torch.Tensor) else [list(p) for p in prompts]
        if not rows:
            return []
        longest = max(len(r) for r in rows)
        if longest + max_new_tokens > self.max_len:
            raise ValueError(f"prompt length {longest} + max_new_tokens {max_new_tokens} exceeds max_len "
                             f"{self.max_len}")
        for r in rows:
            for t in r:
                if not isinstance(t, (int, np.integer)) or isinstance(t, bool) or not 0 <= t < self.config.vocab_size:
                    raise ValueError(f"prompts must hold token ids in [0, {self.config.vocab_size}), got {t!r}")
        return generate(self, rows, max_new_tokens, temperature=0.0, eos_token_id=eos_token_id,
                        pad_token_id=pad_token_id)


def encode_texts(tokenizer, texts: Sequence[str], *, add_eos: bool = True) -> list[list[int]]:
    """Token ids of each text (`<bos>` first when the tokenizer adds one, `<eos>` last with `add_eos`)."""
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, not one string")
    out = []
    for t in texts:
        ids = list(tokenizer.encode(t, add_special_tokens=True))
        if add_eos and tokenizer.eos_token_id is not None:
            ids.append(int(tokenizer.eos_token_id))
        out.append(ids)
    return out


def pad_right(seqs: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad token lists -> (ids (B, T) long, mask (B, T) bool, True for real tokens)."""
    T = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), T), dtype=torch.bool)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.as_tensor(list(s), dtype=torch.long)
        mask[i, :len(s)] = True
    return ids, mask


def train_lm(model: torch.nn.Module, tokenizer, texts: Sequence[str], *, steps: int, lr: float, batch_size: int,
             seed: int, mix_texts: Sequence[str] | None = None, mix_fraction: float = 0.5,
             weight_decay: float = 0.01, warmup_frac: float = 0.05, clip: float = 1.0,
             progress: bool | str = False) -> list[float]:
    """Next-token training on whole texts (AdamW, warmup + cosine LR, grad clip); returns the loss per step.

    Args:
        model: a TinyLM/`TinyCausalLM` or a Hugging Face causal LM (trained in place).
        tokenizer: `WordTokenizer` or a Hugging Face tokenizer (`<bos>` text `<eos>` per sequence).
        texts: the training texts; batches are sampled uniformly with replacement.
        steps, lr, batch_size, seed: optimisation budget and the seed of the batch order.
        mix_texts: optional second corpus; `round(mix_fraction * batch_size)` rows of every batch come from it
            (e.g. the base corpus C0 mixed 1:1 into persona fine-tuning).
        weight_decay, warmup_frac, clip: AdamW decay, warmup share of the steps, global grad-norm clip.
    """
    steps = check_int(steps, "steps", min=1)
    lr = check_float(lr, "lr", min=0.0, min_open=True)
    batch_size = check_int(batch_size, "batch_size", min=1)
    seed = check_seed(seed)
    mix_fraction = check_float(mix_fraction, "mix_fraction", min=0.0, max=1.0)
    weight_decay = check_float(weight_decay, "weight_decay", min=0.0)
    warmup_frac = check_float(warmup_frac, "warmup_frac", min=0.0, max=1.0)
    clip = check_float(clip, "clip", min=0.0, min_open=True)
    if not isinstance(progress, str):
        check_bool(progress, "progress")
    data = encode_texts(tokenizer, texts)
    if not data:
        raise ValueError("texts must hold at least one text")
    mix = encode_texts(tokenizer, mix_texts) if mix_texts is not None else []
    if mix_texts is not None and not mix:
        raise ValueError("mix_texts must hold at least one text when given")
    n_mix = int(round(mix_fraction * batch_size)) if mix else 0
    max_len = getattr(model, "max_len", None)
    if max_len is not None:
        longest = max(len(s) for s in data + mix)
        if longest > max_len:
            raise ValueError(f"a training text has {longest} tokens, more than the model's max_len {max_len}")
    pad = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0)
    rng = np.random.default_rng(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(steps, warmup_frac))
    model.train()
    losses = []
    for _ in tqdm(range(steps), desc=progress if isinstance(progress, str) else "train", disable=not progress,
                  leave=False):
        rows = [data[i] for i in rng.integers(0, len(data), batch_size - n_mix)]
        rows += [mix[i] for i in rng.integers(0, len(mix), n_mix)] if n_mix else []
        ids, mask = pad_right(rows, pad)
        logits = lm_logits(model, ids[:, :-1])
        target = ids[:, 1:].masked_fill(~mask[:, 1:], -100)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), target.reshape(-1), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses
