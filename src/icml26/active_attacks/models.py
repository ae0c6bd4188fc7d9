"""The attacker policy `p_theta(x)`, the victim `p_phi(y | x)` with safety fine-tuning, and a tabular attacker.

Every model argument is a `icml26.common.lm.TinyLM` or any Hugging Face causal LM (a DDP-wrapped one too); a
tokenizer is a Hugging Face tokenizer or `icml26.active_attacks.WordTokenizer` (same `encode`/`decode`).

- `AttackerPolicy(model, tokenizer, instruction)`: samples one-line attack prompts after a fixed instruction `c`,
  scores them (`log_prob`, eq. for TB: sum_t log p_theta(x_t | x_<t, c)), and carries the GFlowNet `log Z(c)`
  head (a linear layer on the mean-pooled last hidden state of `c`, spec 2).
- `VictimModel(model, tokenizer, gen_kwargs)`: `respond(prompts, n)` samples n replies per prompt (temperature
  0.7, top-p 0.92 by default); `safety_finetune(prompts, ...)` trains it in place on (prompt -> refusal) pairs,
  mixed 1:1 with benign retain pairs when given (LoRA for HF models when `peft` is installed, full fine-tuning
  for tiny models).
- `TabularAttacker(vocab_size, length)`: a per-position categorical policy with the same interface (exactly
  analysable; used by tests and as a diagnostic).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from icml26.active_attacks.classifiers import check_texts
from icml26.common.generation import generate, is_hf_model, lm_logits, sample_next, top_p_filter
from icml26.common.lm import KVCache, TinyLM
from icml26.common.validation import check_bool, check_float, check_int

DEFAULT_REFUSAL = "Sorry, I cannot."


def default_refusal(prompt: str) -> str:
    """The fixed refusal template used as the safety fine-tuning target (spec 2: "fixed refusal templates")."""
    return DEFAULT_REFUSAL


def _inner(model):
    inner = getattr(model, "module", None)
    return inner if isinstance(inner, nn.Module) else model


def _check_model(model, name: str) -> None:
    m = _inner(model)
    if not (isinstance(m, TinyLM) or is_hf_model(m)):
        raise TypeError(f"{name} must be a TinyLM or a Hugging Face causal LM, got {type(model).__name__}")


def _check_tokenizer(tok, name: str = "tokenizer") -> None:
    for attr in ("encode", "decode"):
        if not callable(getattr(tok, attr, None)):
            raise TypeError(f"{name} must have encode/decode methods (a HF tokenizer or WordTokenizer)")


def _device(model) -> torch.device:
    return next(model.parameters()).device


# ----------------------------------------------------------------------------------------------- sampling
def sample_tokens(model, prompts: Sequence[Sequence[int]], max_new_tokens: int, *, temperature: float = 1.0,
                  top_p: float = 1.0, eos_token_id: int | None = None, pad_token_id: int = 0,
                  generator: torch.Generator | None = None,
                  logits_hook: Callable[[int, torch.Tensor], torch.Tensor] | None = None) -> list[list[int]]:
    """Sample continuations (KV cache; left padding) with temperature and top-p; stops at EOS (kept).

    `icml26.common.generation.generate` with this package's defaults. `logits_hook(step, logits (B, V)) ->
    logits` edits the next-token logits before temperature/top-p (vocabulary masks and forced stops; the same
    hook must then be used when scoring). Works for a TinyLM and a Hugging Face causal LM alike.
    """
    return generate(_inner(model), [list(p) for p in prompts], max_new_tokens, temperature=temperature,
                    top_p=top_p, eos_token_id=eos_token_id, pad_token_id=pad_token_id, generator=generator,
                    logits_hook=logits_hook)


@torch.inference_mode()
def sample_replies(model: TinyLM, prompts: Sequence[Sequence[int]], max_new_tokens: int, *, temperature: float = 1.0,
                   top_p: float = 1.0, eos_token_id: int | None = None, pad_token_id: int = 0,
                   generator: torch.Generator | None = None,
                   logits_hook: Callable[[int, torch.Tensor], torch.Tensor] | None = None) -> list[list[int]]:
    """`sample_tokens` for a TinyLM: the same tokens from the same `generator` draws, faster.

    The loop of `icml26.common.generation.generate` (left padding, KV cache, temperature, top-p, stop after EOS)
    with two savings that leave every token unchanged:
    - identical prompts (a victim's n replies of one prompt) run their prompt forward once; the keys, values and
      last logits are copied to each row;
    - rows that have ended leave the forward passes; the sampler still draws for every row (each row's draw does
      not depend on the other rows' probabilities), so the generator's stream is the one `generate` consumes.
      An ended row's logits are zeros (then `logits_hook`, which must act row by row); its draw is discarded.
    Both rely on a row of a TinyLM forward not depending on the other rows of the batch (tested for equality with
    `generate` in tests/active_attacks).
    """
    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be a TinyLM, got {type(model).__name__}")
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", min=0)
    if not len(prompts) or any(len(p) == 0 for p in prompts):
        raise ValueError("every prompt must have at least one token")
    first: dict[tuple[int, ...], int] = {}  # distinct prompt -> its row among the distinct ones
    inv_rows = []
    for p in prompts:
        inv_rows.append(first.setdefault(tuple(int(t) for t in p), len(first)))
    B = len(prompts)
    out: list[list[int]] = [[] for _ in range(B)]
    if max_new_tokens == 0:
        return out
    # `left_pad` of the distinct prompts; the batch's width is the longest prompt, as in `generate`
    distinct = list(first)
    T = max(len(p) for p in distinct)
    ids_np = np.full((len(distinct), T), pad_token_id, dtype=np.int64)
    mask_np = np.zeros((len(distinct), T), dtype=np.int64)
    for i, p in enumerate(distinct):
        ids_np[i, T - len(p):] = p
        mask_np[i, T - len(p):] = 1
    was_training = model.training
    model.eval()
    dev = _device(model)
    inv = torch.tensor(inv_rows, device=dev)
    ids_u, mask_u = torch.from_numpy(ids_np).to(dev), torch.from_numpy(mask_np).to(dev)
    mask = mask_u[inv]
    try:
        shared = KVCache.empty(model.config.n_layers)
        logits = model(ids_u, attention_mask=mask_u, cache=shared)[:, -1].float()[inv]
        cache = KVCache([k[inv] for k in shared.keys], [v[inv] for v in shared.values], shared.positions[inv],
                        encoding=shared.encoding)
        active = torch.arange(B, device=dev)  # rows still sampling, in order
        done = torch.zeros(B, dtype=torch.bool, device=dev)
        for step in range(max_new_tokens):
            if step:
                lg = model(nxt[active][:, None], attention_mask=mask, cache=cache)[:, -1].float()
                logits = torch.zeros((B, lg.shape[-1]), dtype=lg.dtype, device=dev)
                logits[active] = lg
            if logits_hook is not None:
                logits = logits_hook(step, logits)
            nxt = sample_next(logits, temperature, None, generator, top_p)
            nxt = torch.where(done, torch.full_like(nxt, pad_token_id), nxt)
            vals = nxt.tolist()
            for i in active.tolist():
                out[i].append(vals[i])
            if eos_token_id is not None:
                done |= nxt == eos_token_id
            if bool(done.all()):
                break
            keep = ~done[active]
            if not bool(keep.all()):
                active = active[keep]
                cache = KVCache([k[keep] for k in cache.keys], [v[keep] for v in cache.values],
                                cache.positions[keep], encoding=cache.encoding)
                mask = mask[keep]
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
    finally:
        model.train(was_training)
    return out


# ----------------------------------------------------------------------------------------------- attacker
class AttackerPolicy(nn.Module):
    """An LM attacker `p_theta(x | c)` for a fixed instruction `c`, with the GFlowNet `log Z(c)` head.

    Args:
        model: TinyLM or Hugging Face causal LM (trained in place; wrap it with peft/DDP beforehand if wanted).
        tokenizer: encodes the instruction and decodes prompts.
        instruction: the attacker instruction `c` (str), or its token ids.
        min_len: prompts shorter than this (in tokens, EOS excluded) get the reward's length penalty (spec: 5).
        max_len: prompts are cut at this many tokens: EOS is forced after `max_len` tokens (spec: 20).
        allowed_token_ids: optional vocabulary the attacker may emit (others are masked out in sampling *and*
            scoring, so `log_prob` is the exact log-probability of the sampling distribution).
        eos_token_id: the stop token (default `tokenizer.eos_token_id`; the paper stops at a newline).
        bos: prepend `tokenizer.bos_token_id` to the instruction (default: True when the tokenizer has one).
    """

    def __init__(self, model, tokenizer, instruction: str | Sequence[int] = "", *, min_len: int = 5,
                 max_len: int = 20, allowed_token_ids: Sequence[int] | None = None, eos_token_id: int | None = None,
                 bos: bool | None = None) -> None:
        super().__init__()
        _check_model(model, "model")
        _check_tokenizer(tokenizer)
        self.model, self.tokenizer = model, tokenizer
        self.min_len = check_int(min_len, "min_len", min=0)
        self.max_len = check_int(max_len, "max_len", min=max(1, self.min_len))
        eos = tokenizer.eos_token_id if eos_token_id is None else eos_token_id
        if eos is None:
            raise ValueError("eos_token_id is required (the tokenizer has none)")
        self.eos_token_id = check_int(eos, "eos_token_id", min=0)
        self.pad_token_id = int(getattr(tokenizer, "pad_token_id", None) or 0)
        if isinstance(instruction, str):
            ids = list(tokenizer.encode(instruction, add_special_tokens=False)) if instruction else []
        else:
            ids = [check_int(i, "instruction", min=0) for i in instruction]
        bos_id = getattr(tokenizer, "bos_token_id", None)
        if (bos is None and bos_id is not None) or bos:
            if bos_id is None:
                raise ValueError("bos=True but the tokenizer has no bos_token_id")
            ids = [int(bos_id)] + ids
        if not ids:
            raise ValueError("the instruction must have at least one token (give an instruction or a BOS token)")
        self.register_buffer("prefix", torch.tensor(ids, dtype=torch.long), persistent=False)
        vocab = self._vocab_size()
        if allowed_token_ids is not None:
            allowed = torch.zeros(vocab, dtype=torch.bool)
            ids_ok = [check_int(i, "allowed_token_ids", min=0, max=vocab - 1) for i in allowed_token_ids]
            if not ids_ok:
                raise ValueError("allowed_token_ids must not be empty")
            allowed[ids_ok] = True
            allowed[self.eos_token_id] = True
            self.register_buffer("allowed", allowed, persistent=False)
        else:
            self.allowed = None
        self.z_head = nn.Linear(self._hidden_size(), 1)
        nn.init.zeros_(self.z_head.weight)
        nn.init.zeros_(self.z_head.bias)
        self.to(_device(model))

    def _vocab_size(self) -> int:
        m = _inner(self.model)
        return m.config.vocab_size

    def _hidden_size(self) -> int:
        m = _inner(self.model)
        return m.config.d_model if isinstance(m, TinyLM) else m.config.hidden_size

    def _hook(self, t: int, logits: torch.Tensor) -> torch.Tensor:
        if self.allowed is not None:
            logits = logits.masked_fill(~self.allowed.to(logits.device), float("-inf"))
        if t >= self.max_len:  # force the stop after max_len tokens
            forced = torch.full_like(logits, float("-inf"))
            forced[:, self.eos_token_id] = 0.0
            logits = forced
        return logits

    def sample(self, n: int, temperature: float = 1.0, generator: torch.Generator | None = None
               ) -> tuple[list[list[int]], list[str]]:
        """`n` prompts: token lists (EOS included as the last action) and their decoded texts (EOS stripped)."""
        n = check_int(n, "n", min=1)
        temperature = check_float(temperature, "temperature", min=0.0)
        pre = self.prefix.tolist()
        sampler = sample_replies if isinstance(_inner(self.model), TinyLM) else sample_tokens  # same tokens
        toks = sampler(_inner(self.model), [pre] * n, self.max_len + 1, temperature=temperature,
                             eos_token_id=self.eos_token_id, pad_token_id=self.pad_token_id, generator=generator,
                             logits_hook=self._hook)
        return toks, [self.decode(t) for t in toks]

    def decode(self, tokens: Sequence[int]) -> str:
        body = [t for t in tokens if t != self.eos_token_id]
        return self.tokenizer.decode(body, skip_special_tokens=True).strip()

    def encode_prompt(self, text: str) -> list[int]:
        """Token ids of an attack prompt as an action sequence (cut to `max_len`, EOS appended)."""
        if not isinstance(text, str):
            raise TypeError(f"prompt must be a str, got {type(text).__name__}")
        ids = list(self.tokenizer.encode(text, add_special_tokens=False))[: self.max_len]
        return ids + [self.eos_token_id]

    def prompt_lengths(self, tokens: Sequence[Sequence[int]]) -> list[int]:
        """Tokens before EOS of each action sequence."""
        return [len([t for t in seq if t != self.eos_token_id]) for seq in tokens]

    def _pad(self, tokens: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        if not tokens or any(len(t) == 0 for t in tokens):
            raise ValueError("tokens must be a non-empty list of non-empty token lists")
        L = max(len(t) for t in tokens)
        if L > self.max_len + 1:
            raise ValueError(f"a token sequence is longer than max_len + 1 = {self.max_len + 1}")
        vocab = self._vocab_size()
        x = torch.full((len(tokens), L), self.pad_token_id, dtype=torch.long)
        m = torch.zeros((len(tokens), L), dtype=torch.bool)
        for i, t in enumerate(tokens):
            t = list(t)
            if any((not isinstance(v, (int, np.integer))) or v < 0 or v >= vocab for v in t):
                raise ValueError(f"tokens[{i}] holds ids outside [0, {vocab})")
            x[i, :len(t)] = torch.tensor(t)
            m[i, :len(t)] = True
        return x.to(self.prefix.device), m.to(self.prefix.device)

    def _forward(self, inp: torch.Tensor, hidden: bool):
        m = _inner(self.model)
        if isinstance(m, TinyLM):
            return self.model(inp, return_hidden=True) if hidden else (self.model(inp), None)
        out = self.model(input_ids=inp, output_hidden_states=hidden)
        return out.logits, (out.hidden_states[-1] if hidden else None)

    def _masked_logits(self, logits: torch.Tensor) -> torch.Tensor:
        """`_hook` applied to (n, L, V) logits at once (allowed vocabulary; EOS forced at step max_len)."""
        if self.allowed is not None:
            logits = logits.masked_fill(~self.allowed.to(logits.device), float("-inf"))
        L = logits.shape[1]
        if L > self.max_len:
            forced = torch.full_like(logits[:, self.max_len:], float("-inf"))
            forced[..., self.eos_token_id] = 0.0
            logits = torch.cat([logits[:, :self.max_len], forced], 1)
        return logits

    def log_prob_and_log_z(self, tokens: Sequence[Sequence[int]], need_log_z: bool = True
                           ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(sum_t log p_theta(x_t | x_<t, c) per sequence (n,), log Z(c)) from one forward pass.

        log Z reads the instruction's hidden states, which causal attention keeps independent of x.
        """
        x, m = self._pad(tokens)
        n, L = x.shape
        P = len(self.prefix)
        inp = torch.cat([self.prefix[None].expand(n, P), x], 1)
        logits, h = self._forward(inp, need_log_z)
        logits = self._masked_logits(logits[:, P - 1:P - 1 + L].float())  # predictions of x_1..x_L
        lp = torch.log_softmax(logits, -1).gather(-1, x[..., None]).squeeze(-1)
        log_pf = torch.where(m, lp, torch.zeros_like(lp)).sum(1)
        log_z = self.z_head(h[:1, :P].float().mean(1)).squeeze() if need_log_z else None
        return log_pf, log_z

    def log_prob(self, tokens: Sequence[Sequence[int]]) -> torch.Tensor:
        """sum_t log p_theta(x_t | x_<t, c) over each action sequence (EOS included) -> (n,), differentiable."""
        return self.log_prob_and_log_z(tokens, need_log_z=False)[0]

    def log_z(self) -> torch.Tensor:
        """log Z(c): the linear head on the mean-pooled last hidden state of the instruction (scalar)."""
        _, h = self._forward(self.prefix[None], True)
        return self.z_head(h.float().mean(1)).squeeze()

    def policy_parameters(self) -> list[nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def log_z_parameters(self) -> list[nn.Parameter]:
        return list(self.z_head.parameters())


# ----------------------------------------------------------------------------------------------- tabular
class TabularAttacker(nn.Module):
    """Per-position categorical policy over fixed-length prompts, with the `AttackerPolicy` interface.

    p_theta(x) = prod_t softmax(logits_t)[x_t]; `log Z` is a free scalar. No EOS: every prompt has `length`
    tokens, so `min_len = max_len = length`.

    Args:
        vocab_size: number of tokens per position.
        length: prompt length.
        prior_logits: initial (length, vocab_size) logits (default zeros: uniform).
        vocab: optional words for `decode` (default: the ids as strings).
    """

    def __init__(self, vocab_size: int, length: int, prior_logits=None, vocab: Sequence[str] | None = None) -> None:
        super().__init__()
        self.vocab_size = check_int(vocab_size, "vocab_size", min=1, max=10_000_000)
        self.length = check_int(length, "length", min=1, max=10_000)
        if self.vocab_size * self.length > 50_000_000:
            raise ValueError(f"vocab_size x length = {self.vocab_size * self.length} logits is too large for a table")
        if prior_logits is None:
            init = torch.zeros(self.length, self.vocab_size)
        else:
            from icml26.common.validation import check_tensor

            init = check_tensor(prior_logits, "prior_logits", shape=(self.length, self.vocab_size),
                                dtype=torch.float32)
        self.logits = nn.Parameter(init.clone().float())
        self.z = nn.Parameter(torch.zeros(()))
        if vocab is not None:
            vocab = list(vocab)
            if len(vocab) != self.vocab_size or any(not isinstance(w, str) for w in vocab):
                raise ValueError(f"vocab must be {self.vocab_size} strings")
        self.vocab = vocab
        self.min_len = self.max_len = self.length
        self.eos_token_id = -1

    def sample(self, n: int, temperature: float = 1.0, generator: torch.Generator | None = None
               ) -> tuple[list[list[int]], list[str]]:
        n = check_int(n, "n", min=1)
        temperature = check_float(temperature, "temperature", min=0.0)
        with torch.no_grad():
            lg = self.logits.detach()
            if temperature == 0:
                x = lg.argmax(-1).expand(n, -1)
            else:
                probs = torch.softmax(lg / temperature, -1)
                x = torch.multinomial(probs.repeat(n, 1), 1, generator=generator).view(n, self.length)
        toks = x.tolist()
        return toks, [self.decode(t) for t in toks]

    def decode(self, tokens: Sequence[int]) -> str:
        return " ".join(self.vocab[t] if self.vocab else str(t) for t in tokens)

    def encode_prompt(self, text: str) -> list[int]:
        if not isinstance(text, str):
            raise TypeError(f"prompt must be a str, got {type(text).__name__}")
        words = text.split()
        index = {w: i for i, w in enumerate(self.vocab)} if self.vocab else None
        try:
            ids = [index[w] if index else int(w) for w in words]
        except (KeyError, ValueError):
            raise ValueError(f"prompt {text!r} is not a sequence of this attacker's tokens") from None
        if len(ids) != self.length or any(not 0 <= i < self.vocab_size for i in ids):
            raise ValueError(f"prompt {text!r} must have {self.length} tokens in [0, {self.vocab_size})")
        return ids

    def prompt_lengths(self, tokens: Sequence[Sequence[int]]) -> list[int]:
        return [len(t) for t in tokens]

    def log_prob(self, tokens: Sequence[Sequence[int]]) -> torch.Tensor:
        if not len(tokens):
            raise ValueError("tokens must not be empty")
        x = torch.as_tensor([list(t) for t in tokens], dtype=torch.long)
        if x.ndim != 2 or x.shape[1] != self.length:
            raise ValueError(f"tokens must be (n, {self.length}), got {tuple(x.shape)}")
        if bool((x < 0).any()) or bool((x >= self.vocab_size).any()):
            raise ValueError(f"tokens must be ids in [0, {self.vocab_size})")
        lp = torch.log_softmax(self.logits, -1)  # (L, V)
        return lp.gather(1, x.T).T.sum(1)

    def log_z(self) -> torch.Tensor:
        return self.z

    def log_prob_and_log_z(self, tokens: Sequence[Sequence[int]], need_log_z: bool = True):
        return self.log_prob(tokens), (self.z if need_log_z else None)

    def distribution(self) -> torch.Tensor:
        """The full joint distribution over vocab_size ** length prompts (row-major ids), for small spaces."""
        if self.vocab_size ** self.length > 1_000_000:
            raise ValueError("the prompt space is too large to enumerate")
        p = torch.ones(())
        for t in range(self.length):
            p = (p[..., None] * torch.softmax(self.logits[t].detach(), -1))
        return p.flatten()

    def policy_parameters(self) -> list[nn.Parameter]:
        return [self.logits]

    def log_z_parameters(self) -> list[nn.Parameter]:
        return [self.z]


# ----------------------------------------------------------------------------------------------- victim
class VictimModel:
    """The victim LM `p_phi(y | x)`: samples replies and is safety fine-tuned in place.

    Args:
        model: TinyLM or Hugging Face causal LM.
        tokenizer: its tokenizer. A `WordTokenizer` victim reads `<bos> prompt <sep>` and answers until `<eos>`;
            a HF victim gets the prompt through the tokenizer's chat template (`chat_template=True`, default when
            the tokenizer has one) or as raw text.
        gen_kwargs: `temperature` (0.7), `top_p` (0.92), `max_new_tokens` (30) of the replies (spec 2).
        lora: fine-tune through LoRA adapters (peft) - default: True for a HF model when peft is installed,
            False (full fine-tuning) for a TinyLM.
        lora_r, lora_alpha: LoRA rank and scale (spec: r 32, alpha 16).
    """

    def __init__(self, model, tokenizer, gen_kwargs: dict[str, Any] | None = None, *, chat_template: bool | None = None,
                 lora: bool | None = None, lora_r: int = 32, lora_alpha: int = 16) -> None:
        _check_model(model, "model")
        _check_tokenizer(tokenizer)
        self.model, self.tokenizer = model, tokenizer
        self.gen_kwargs = {"temperature": 0.7, "top_p": 0.92, "max_new_tokens": 30, **(gen_kwargs or {})}
        unknown = set(self.gen_kwargs) - {"temperature", "top_p", "max_new_tokens"}
        if unknown:
            raise ValueError(f"gen_kwargs has unknown keys {sorted(unknown)}; use temperature, top_p, max_new_tokens")
        self._check_gen()
        hf = is_hf_model(_inner(model))
        self.hf = hf
        has_template = bool(getattr(tokenizer, "chat_template", None))
        self.chat_template = has_template if chat_template is None else check_bool(chat_template, "chat_template")
        if self.chat_template and not has_template:
            raise ValueError("chat_template=True but the tokenizer has no chat template")
        self.sep_token_id = getattr(tokenizer, "sep_token_id", None)
        self.bos_token_id = getattr(tokenizer, "bos_token_id", None)
        self.eos_token_id = getattr(tokenizer, "eos_token_id", None)
        if self.eos_token_id is None:
            raise ValueError("the victim's tokenizer needs an eos_token_id (replies stop there)")
        self.pad_token_id = int(getattr(tokenizer, "pad_token_id", None) or 0)
        if lora is None:
            import importlib.util

            lora = hf and importlib.util.find_spec("peft") is not None
        self.lora = check_bool(lora, "lora")
        if self.lora and not hf:
            raise ValueError("lora=True needs a Hugging Face model (use full fine-tuning for a TinyLM)")
        self.lora_r, self.lora_alpha = check_int(lora_r, "lora_r", min=1), check_int(lora_alpha, "lora_alpha", min=1)
        self._lora_ready = False
        self.version = 0  # increments at every safety fine-tuning (reward caches key on it)
        self.finetune_seconds = 0.0

    def _check_gen(self) -> None:
        g = self.gen_kwargs
        g["temperature"] = check_float(g["temperature"], "gen_kwargs['temperature']", min=0.0)
        g["top_p"] = check_float(g["top_p"], "gen_kwargs['top_p']", min=0.0, max=1.0, min_open=True)
        g["max_new_tokens"] = check_int(g["max_new_tokens"], "gen_kwargs['max_new_tokens']", min=1)

    # ------------------------------------------------------------------ encoding
    def encode_prompt(self, prompt: str) -> list[int]:
        tok = self.tokenizer
        if self.chat_template:
            ids = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                          tokenize=True)
            if isinstance(ids, dict) or hasattr(ids, "keys"):
                ids = ids["input_ids"]
            return list(ids)
        ids = list(tok.encode(prompt, add_special_tokens=False))
        if self.bos_token_id is not None:
            ids = [int(self.bos_token_id)] + ids
        if self.sep_token_id is not None:
            ids = ids + [int(self.sep_token_id)]
        if not ids:
            raise ValueError("an empty prompt with no BOS/SEP token cannot be encoded")
        return ids

    def encode_response(self, response: str) -> list[int]:
        ids = list(self.tokenizer.encode(response, add_special_tokens=False))
        if not ids:
            raise ValueError(f"response {response!r} encodes to no tokens")
        return ids + [int(self.eos_token_id)]

    # ------------------------------------------------------------------ generation
    def respond(self, prompts: list[str], n: int = 5, generator: torch.Generator | None = None,
                batch_size: int = 512) -> list[list[str]]:
        """`n` sampled replies for each prompt -> list (len(prompts)) of lists (n) of str."""
        prompts = check_texts(prompts, "prompts")
        n = check_int(n, "n", min=1)
        batch_size = check_int(batch_size, "batch_size", min=1)
        self._check_gen()
        g = self.gen_kwargs
        enc = [self.encode_prompt(p) for p in prompts]
        flat = [e for e in enc for _ in range(n)]
        outs: list[list[int]] = []
        # a TinyLM victim samples through `sample_replies` (the same tokens as `sample_tokens`, faster)
        sampler = sample_replies if isinstance(_inner(self.model), TinyLM) else sample_tokens
        for i in range(0, len(flat), batch_size):
            outs += sampler(_inner(self.model), flat[i:i + batch_size], g["max_new_tokens"],
                            temperature=g["temperature"], top_p=g["top_p"], eos_token_id=self.eos_token_id,
                            pad_token_id=self.pad_token_id, generator=generator)
        texts = [self.tokenizer.decode([t for t in o if t != self.eos_token_id], skip_special_tokens=True).strip()
                 for o in outs]
        return [texts[i * n:(i + 1) * n] for i in range(len(prompts))]

    # ------------------------------------------------------------------ fine-tuning
    def _ensure_lora(self) -> None:
        if not self.lora or self._lora_ready:
            return
        from peft import LoraConfig, get_peft_model

        cfg = LoraConfig(r=self.lora_r, lora_alpha=self.lora_alpha, lora_dropout=0.0, target_modules="all-linear",
                         task_type="CAUSAL_LM")
        self.model = get_peft_model(self.model, cfg)
        self._lora_ready = True

    def finetune(self, prompts: list[str], responses: list[str], *, steps: int, lr: float, batch_size: int,
                 generator: torch.Generator | None = None, weights: Sequence[float] | None = None,
                 weight_decay: float = 0.0) -> list[float]:
        """Supervised fine-tuning on (prompt -> response) pairs, loss on response tokens only; returns losses.

        Each step draws `batch_size` pairs uniformly (or by `weights`) with replacement.
        """
        prompts, responses = check_texts(prompts, "prompts"), check_texts(responses, "responses")
        if len(prompts) != len(responses):
            raise ValueError(f"prompts and responses must have the same length ({len(prompts)} vs {len(responses)})")
        steps = check_int(steps, "steps", min=1)
        lr = check_float(lr, "lr", min=0.0, min_open=True)
        batch_size = check_int(batch_size, "batch_size", min=1)
        self._ensure_lora()
        pairs = []
        for p, r in zip(prompts, responses):
            x, y = self.encode_prompt(p), self.encode_response(r)
            pairs.append((x + y, len(x)))
        import time

        t0 = time.perf_counter()
        params = [p for p in self.model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
        dev = _device(self.model)
        w = None
        if weights is not None:
            from icml26.common.validation import check_array

            w = check_array(weights, "weights", shape=(len(pairs),))
            if np.any(w < 0) or w.sum() <= 0:
                raise ValueError("weights must be non-negative with a positive sum")
            w = torch.as_tensor(w / w.sum())
        self.model.train()
        losses = []
        for _ in range(steps):
            idx = (torch.multinomial(w, batch_size, replacement=True, generator=generator) if w is not None
                   else torch.randint(len(pairs), (batch_size,), generator=generator))
            batch = [pairs[i] for i in idx.tolist()]
            L = max(len(s) for s, _ in batch)
            ids = torch.full((batch_size, L), self.pad_token_id, dtype=torch.long)
            tgt_mask = torch.zeros((batch_size, L), dtype=torch.bool)
            for j, (s, k) in enumerate(batch):  # right padding: causal attention never sees it
                ids[j, :len(s)] = torch.tensor(s)
                tgt_mask[j, k:len(s)] = True
            ids, tgt_mask = ids.to(dev), tgt_mask.to(dev)
            logits = lm_logits(self.model, ids[:, :-1]).float()
            lp = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
            m = tgt_mask[:, 1:]
            loss = -(lp * m).sum() / m.sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            losses.append(float(loss.detach()))
        self.model.eval()
        self.finetune_seconds += time.perf_counter() - t0
        return losses

    def safety_finetune(self, prompts: list[str], refusal_fn: Callable[[str], str] = default_refusal, *,
                        steps: int = 200, lr: float = 3e-5, batch_size: int = 32,
                        retain_prompts: list[str] | None = None, retain_responses: list[str] | None = None,
                        generator: torch.Generator | None = None) -> VictimModel:
        """Teach the victim to refuse `prompts`, in place (continues from its current weights); returns self.

        Each step's batch is half attack prompts (-> `refusal_fn(prompt)`), half retain pairs when
        `retain_prompts` is given (their `retain_responses`, or the victim's own greedy replies when None), so the
        victim does not learn to refuse everything (spec 9). Duplicates in `prompts` are dropped first (uniform
        sampling over distinct prompts). Increments `version`.
        """
        prompts = list(dict.fromkeys(check_texts(prompts, "prompts")))
        if not callable(refusal_fn):
            raise TypeError("refusal_fn must be a callable prompt -> refusal text")
        refusals = []
        for p in prompts:
            r = refusal_fn(p)
            if not isinstance(r, str) or not r.strip():
                raise ValueError(f"refusal_fn must return a non-empty string, got {r!r}")
            refusals.append(r)
        steps = check_int(steps, "steps", min=1)
        batch_size = check_int(batch_size, "batch_size", min=1)
        if retain_prompts is None:
            if retain_responses is not None:
                raise ValueError("retain_responses given without retain_prompts")
            self.finetune(prompts, refusals, steps=steps, lr=lr, batch_size=batch_size, generator=generator)
        else:
            retain_prompts = check_texts(retain_prompts, "retain_prompts")
            if retain_responses is None:
                retain_responses = [r[0] for r in self._greedy(retain_prompts)]
            retain_responses = check_texts(retain_responses, "retain_responses")
            if len(retain_responses) != len(retain_prompts):
                raise ValueError("retain_responses must have one reply per retain prompt")
            if batch_size < 2:
                raise ValueError("batch_size must be >= 2 to mix attack and retain pairs 1:1")
            na, nr = len(prompts), len(retain_prompts)
            weights = [0.5 / na] * na + [0.5 / nr] * nr  # 1:1 in expectation, uniform within each part
            self.finetune(prompts + retain_prompts, refusals + retain_responses, steps=steps, lr=lr,
                          batch_size=batch_size, generator=generator, weights=weights)
        self.version += 1
        return self

    def _greedy(self, prompts: list[str]) -> list[list[str]]:
        old = dict(self.gen_kwargs)
        self.gen_kwargs["temperature"] = 0.0
        try:
            return self.respond(prompts, n=1)
        finally:
            self.gen_kwargs = old

    # ------------------------------------------------------------------ copies
    def clone(self) -> VictimModel:
        """An independent deep copy (same weights, version and settings)."""
        return copy.deepcopy(self)

    def state_dict(self) -> dict[str, torch.Tensor]:
        """CPU copy of the trainable weights (the LoRA adapters for a LoRA victim)."""
        return {k: v.detach().cpu().clone() for k, v in self.model.state_dict().items()
                if not self.lora or "lora_" in k}


def refusal_rate(victim: VictimModel, prompts: list[str], refusal_text: str = DEFAULT_REFUSAL, n: int = 1,
                 generator: torch.Generator | None = None) -> float:
    """Fraction of sampled replies that equal the refusal (after the victim's own tokenisation)."""
    want = victim.tokenizer.decode(victim.tokenizer.encode(refusal_text, add_special_tokens=False)).strip()
    reps = victim.respond(prompts, n=n, generator=generator)
    return float(np.mean([r == want for rs in reps for r in rs]))


__all__ = [
    "DEFAULT_REFUSAL",
    "AttackerPolicy",
    "TabularAttacker",
    "VictimModel",
    "default_refusal",
    "refusal_rate",
    "sample_tokens",
    "top_p_filter",
]
