"""The two verbalizer families the paper evaluates (spec section 2): Patchscopes and LIT/LatentQA.

Notation: target model M1 (whose activations are read), verbalizer M2 (which answers), h_l^i = residual stream at
layer l, token i (`hooks` module: layer 0 = embedding output, layer l = output of block l).

**Patchscopes** (training-free). Run M1 on a source prompt and take h_ls^last, the state of its last token at the
source layer ls. Run M2 on an inspection prompt (default just the question, e.g. "the favorite food of x :") and
overwrite M2's state at the placeholder token "x" at target layer lt with that vector (a `mapping` such as an affine
map first when the widths differ); decode greedily. `verbalize_sweep` covers a grid of (ls, lt); the paper's summary
is "correct for ANY target layer, averaged over source layers" (`controls.any_layer_accuracy`).
The inspection prompt is patched once, in the prefill pass ("sequential" patching in the official code's terms).

**LIT / LatentQA** (trained decoder). Every token of the read prompt contributes h_lr^i from M1 at the read layer;
M2's prompt is [BOS] + one placeholder per read token + the question, and the placeholders' states at the write
layer lw (default 0, the embedding output) are replaced by those vectors. `fit` trains M2 (a copy, or LoRA adapters
when `lora_rank` is set) with cross-entropy on the answer tokens only; the activations used in training come from a
`read_model` (the base model in the paper) and at test time the decoder reads the given target zero-shot.

Both classes take a TinyLM or any Hugging Face causal LM with its tokenizer (`encode(text, add_special_tokens)`,
`decode(ids, skip_special_tokens)`, `eos_token_id`, `pad_token_id`; `data.WordTokenizer` mirrors these), and
return plain completion strings. Questions and answers are tokenized with a leading space.
"""

from __future__ import annotations

import copy as _copy
from collections.abc import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from icml26.common.generation import generate, lm_logits
from icml26.common.train import warmup_cosine
from icml26.common.validation import check_bool, check_choice, check_float, check_int, check_seed
from icml26.verbalization.hooks import (_check_layer, hidden_size, is_causal_lm, num_layers, patch_activations,
                                        read_activations)
from icml26.verbalization.models import pad_right

__all__ = ["PatchscopesVerbalizer", "LITVerbalizer", "check_texts", "check_str_list", "generate_patched",
           "lit_batch_loss", "merge_lora", "InputMLP", "make_adapter", "ADAPTERS"]


# ------------------------------------------------------------------------------------------- shared helpers
def check_str_list(texts, name: str) -> list[str]:
    """`texts` as a list of non-empty strings (one string is refused: it is not a list of texts)."""
    if isinstance(texts, str):
        raise TypeError(f"{name} must be a sequence of strings, not one string")
    try:
        out = list(texts)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of strings, got {type(texts).__name__}") from None
    for s in out:
        if not isinstance(s, str):
            raise TypeError(f"{name} must hold strings, got {type(s).__name__} {s!r}")
        if not s.strip():
            raise ValueError(f"{name} must hold non-empty strings")
    return out


def check_texts(source_texts, questions, name_a: str = "source_texts", name_b: str = "questions"
                ) -> tuple[list[str], list[str]]:
    """Two aligned lists of non-empty strings; a single question string is used for every source."""
    src = check_str_list(source_texts, name_a)
    qs = [questions] * len(src) if isinstance(questions, str) and questions.strip() else \
        check_str_list(questions, name_b) if not isinstance(questions, str) else None
    if qs is None:
        raise ValueError(f"{name_b} must hold non-empty strings")
    if len(src) != len(qs):
        raise ValueError(f"{name_a} ({len(src)}) and {name_b} ({len(qs)}) must have the same length")
    return src, qs


def _check_model(model, name: str) -> None:
    if not is_causal_lm(model):
        raise TypeError(f"{name} must be a TinyLM or a Hugging Face causal LM, got {type(model).__name__}")


def _check_tokenizer(tok, name: str) -> None:
    for attr in ("encode", "decode"):
        if not callable(getattr(tok, attr, None)):
            raise TypeError(f"{name} must be a tokenizer with encode/decode, got {type(tok).__name__}")


def _prefix(tok) -> list[int]:
    """The special tokens the tokenizer puts before any text (e.g. [BOS]); may be empty."""
    return list(tok.encode("", add_special_tokens=True))


def _pad_id(tok) -> int:
    for attr in ("pad_token_id", "eos_token_id"):
        v = getattr(tok, attr, None)
        if isinstance(v, int):
            return v
    return 0


def _words(tok, text: str) -> list[int]:
    return list(tok.encode(" " + text, add_special_tokens=False))


def _map(vectors: torch.Tensor, mapping, d_out: int) -> torch.Tensor:
    out = vectors if mapping is None else mapping(vectors)
    if not isinstance(out, torch.Tensor) or out.shape[:-1] != vectors.shape[:-1] or out.shape[-1] != d_out:
        raise ValueError(f"mapping must send (..., {vectors.shape[-1]}) activations to (..., {d_out}), got "
                         f"{getattr(out, 'shape', type(out).__name__)}")
    return out


def _check_widths(target, verbalizer, mapping, name: str = "mapping") -> None:
    dt, dv = hidden_size(target), hidden_size(verbalizer)
    if mapping is None and dt != dv:
        raise ValueError(f"the target's hidden size {dt} differs from the verbalizer's {dv}: pass {name}= "
                         f"(e.g. torch.nn.Linear({dt}, {dv}) fitted between the two models)")
    if mapping is not None and not callable(mapping):
        raise TypeError(f"{name} must be callable (tensor -> tensor), got {type(mapping).__name__}")


@torch.no_grad()
def generate_patched(model, tokenizer, prompts: Sequence[Sequence[int]], layer: int,
                     local_positions: Sequence[Sequence[int]], vectors: Sequence[torch.Tensor],
                     max_new_tokens: int) -> list[str]:
    """Greedy completions of left-padded `prompts` with row i's `vectors[i]` (P_i, d) written at its
    `local_positions[i]` (indices into the unpadded prompt) of `layer` during the prefill."""
    T = max(len(p) for p in prompts)
    P = max(1, max(len(p) for p in local_positions))
    d = vectors[0].shape[-1]
    pos = torch.zeros(len(prompts), P, dtype=torch.long)
    vec = torch.zeros(len(prompts), P, d)
    valid = torch.zeros(len(prompts), P, dtype=torch.bool)
    for i, (p, lp, v) in enumerate(zip(prompts, local_positions, vectors)):
        off = T - len(p)
        pos[i, :len(lp)] = torch.as_tensor(list(lp), dtype=torch.long) + off
        vec[i, :len(lp)] = v.float().cpu()
        valid[i, :len(lp)] = True
    eos = getattr(tokenizer, "eos_token_id", None)
    with patch_activations(model, layer, pos, vec, valid=valid):
        out = generate(model, [list(p) for p in prompts], max_new_tokens, temperature=0.0, eos_token_id=eos,
                       pad_token_id=_pad_id(tokenizer))
    return [tokenizer.decode(o, skip_special_tokens=True).strip() for o in out]


def lit_batch_loss(decoder, seqs: Sequence[Sequence[int]], label_starts: Sequence[int],
                   places: Sequence[Sequence[int]], acts: Sequence[torch.Tensor], write_layer: int,
                   pad_id: int = 0) -> torch.Tensor:
    """LIT cross-entropy of one batch: rows `seqs` (right-padded here), labels from `label_starts[i]` on.

    The first `len(places)` rows get `acts[i]` (n_i, d) written at `places[i]` of `write_layer`; any further rows
    (rehearsal text) are plain next-token rows labelled from `label_starts[i]`. `decoder` may be DDP-wrapped.
    """
    ids, mask = pad_right(seqs, pad_id)
    B = len(seqs)
    P = max(1, max((len(p) for p in places), default=1))
    d = acts[0].shape[-1] if len(acts) else hidden_size(decoder)
    pos = torch.zeros(B, P, dtype=torch.long)
    vec = torch.zeros(B, P, d)
    valid = torch.zeros(B, P, dtype=torch.bool)
    for r, (pl, a) in enumerate(zip(places, acts)):
        pos[r, :len(pl)] = torch.as_tensor(list(pl), dtype=torch.long)
        vec[r, :len(pl)] = a.float().cpu()
        valid[r, :len(pl)] = True
    target = ids.clone()
    cols = torch.arange(ids.shape[1])[None]
    target[(cols < torch.as_tensor(list(label_starts))[:, None]) | ~mask] = -100
    dev = next(decoder.parameters()).device
    ids, target = ids.to(dev), target.to(dev)
    with patch_activations(decoder, write_layer, pos, vec, valid=valid):
        logits = lm_logits(decoder, ids[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), target[:, 1:].reshape(-1),
                           ignore_index=-100)


LORA_TARGETS = frozenset({"q_proj", "k_proj", "v_proj", "o_proj", "c_attn", "query_key_value", "up", "down", "gate",
                          "up_proj", "down_proj", "gate_proj"})


def add_lora(model: torch.nn.Module, rank: int, name: str = "rank") -> list[torch.nn.Parameter]:
    """Inject peft LoRA adapters (rank `rank`, alpha 2 x rank, no dropout) into `model`'s attention/MLP projections
    (the Linear layers named in `LORA_TARGETS`), in place; only the adapters stay trainable. Returns them."""
    try:
        from peft import LoraConfig, inject_adapter_in_model
    except ImportError as e:  # pragma: no cover - peft is in the [verbalization] extra
        raise ImportError(f"{name} needs the optional package peft: pip install icml26[verbalization]") from e
    names = {n.rsplit(".", 1)[-1] for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    targets = sorted(names & LORA_TARGETS)
    if not targets:
        raise ValueError(f"{name}: the model has none of the attention/MLP projections {sorted(LORA_TARGETS)}")
    inject_adapter_in_model(LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=targets, lora_dropout=0.0), model)
    for n, p in model.named_parameters():
        p.requires_grad_("lora_" in n)
    return [p for p in model.parameters() if p.requires_grad]


def merge_lora(model: torch.nn.Module) -> torch.nn.Module:
    """Fold peft LoRA adapters into their base layers, in place: each adapted Linear becomes a plain Linear with
    W + scale * B A, so `state_dict()` has the original model's keys (a TinyLM can load it). Returns `model`."""
    for name, mod in list(model.named_modules()):
        if hasattr(mod, "base_layer") and hasattr(mod, "lora_A") and callable(getattr(mod, "merge", None)):
            mod.merge()
            parent = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
            setattr(parent, name.rsplit(".", 1)[-1], mod.get_base_layer())
    for p in model.parameters():
        p.requires_grad_(True)
    return model


def _batches(n: int, size: int):
    for i in range(0, n, size):
        yield slice(i, min(n, i + size))


# ------------------------------------------------------------------------------------------- Patchscopes
class PatchscopesVerbalizer:
    """Training-free single-vector verbalization (Ghandeharioun et al. 2024) as evaluated in the paper.

    Args:
        target: M1, the model whose activations are read.
        verbalizer: M2, the model that answers (may be `target` itself, the paper's main setting).
        tokenizer_t, tokenizer_v: their tokenizers.
        source_layer: ls, read at the last token of the source text (1..L_t; 0 = embeddings).
        target_layers: lt or a list of them (0..L_v; a write at M2's last layer L_v reaches no later token, so it is
            refused with a ValueError unless the placeholder is the inspection prompt's last token).
        template: inspection prompt; "{question}" is replaced by each question.
        placeholder: the word whose (last) occurrence in the inspection prompt is overwritten.
        max_new_tokens: greedy tokens generated (official config: 20).
        mapping: optional callable mapping (..., d_t) -> (..., d_v) (required when the widths differ).
        batch_size: prompts per generation batch.
    """

    def __init__(self, target, verbalizer, tokenizer_t, tokenizer_v, source_layer: int = 1,
                 target_layers: int | Sequence[int] = 0, template: str = "{question}", placeholder: str = "x",
                 max_new_tokens: int = 20, mapping: Callable | None = None, batch_size: int = 64) -> None:
        self.target, self.verbalizer = target, verbalizer
        self.tokenizer_t, self.tokenizer_v = tokenizer_t, tokenizer_v
        self.source_layer, self.target_layers = source_layer, target_layers
        self.template, self.placeholder = template, placeholder
        self.max_new_tokens, self.mapping, self.batch_size = max_new_tokens, mapping, batch_size
        self._validate()

    def _validate(self) -> tuple[int, list[int]]:
        _check_model(self.target, "target")
        _check_model(self.verbalizer, "verbalizer")
        _check_tokenizer(self.tokenizer_t, "tokenizer_t")
        _check_tokenizer(self.tokenizer_v, "tokenizer_v")
        ls = _check_layer(self.target, self.source_layer, "source_layer")
        lts = self._layers(self.target_layers, "target_layers")
        if not isinstance(self.template, str) or not isinstance(self.placeholder, str):
            raise TypeError("template and placeholder must be strings")
        if not self.placeholder.strip():
            raise ValueError("placeholder must be a non-empty string")
        if "{question}" not in self.template and self.placeholder not in self.template:
            raise ValueError(f"template {self.template!r} holds neither '{{question}}' nor the placeholder "
                             f"{self.placeholder!r}")
        check_int(self.max_new_tokens, "max_new_tokens", min=1)
        check_int(self.batch_size, "batch_size", min=1)
        _check_widths(self.target, self.verbalizer, self.mapping)
        return ls, lts

    def _layers(self, layers, name: str) -> list[int]:
        seq = [layers] if isinstance(layers, (int, np.integer)) and not isinstance(layers, bool) else layers
        if isinstance(seq, (str, bytes)) or not hasattr(seq, "__iter__"):
            raise TypeError(f"{name} must be an int or a sequence of ints, got {type(layers).__name__}")
        seq = list(seq)
        if not seq:
            raise ValueError(f"{name} must hold at least one layer")
        return [_check_layer(self.verbalizer, lt, name) for lt in seq]

    def inspection_prompt(self, question: str) -> tuple[list[int], int]:
        """Token ids of the inspection prompt for `question` and the index of its placeholder token."""
        text = self.template.format(question=question)
        idx = text.rfind(self.placeholder)
        if idx < 0:
            raise ValueError(f"the inspection prompt {text!r} holds no placeholder {self.placeholder!r}: put it in "
                             f"the template or the questions")
        pre = _prefix(self.tokenizer_v)
        full = pre + _words(self.tokenizer_v, text)
        head = pre + _words(self.tokenizer_v, text[:idx + len(self.placeholder)])
        if full[:len(head)] != head:
            raise ValueError(f"the placeholder {self.placeholder!r} does not end on a token boundary in {text!r}")
        return full, len(head) - 1

    def source_vectors(self, source_texts: Sequence[str], layer: int) -> torch.Tensor:
        """h_ls^last of M1 for each source text -> (N, d_t)."""
        tok = self.tokenizer_t
        rows = [list(tok.encode(t, add_special_tokens=True)) for t in source_texts]
        out = []
        for sl in _batches(len(rows), self.batch_size):
            ids, mask = pad_right(rows[sl], _pad_id(tok))
            out.append(read_activations(self.target, ids, mask.long(), layer, "last")[:, 0])
        return torch.cat(out).cpu()

    def verbalize(self, source_texts: Sequence[str], questions: str | Sequence[str]) -> list[str]:
        """Completions for each (source, question) pair at (source_layer, the single target layer)."""
        _, lts = self._validate()
        if len(lts) != 1:
            raise ValueError(f"target_layers holds {len(lts)} layers: use verbalize_sweep, or set one target layer")
        return self.verbalize_sweep(source_texts, questions)[(int(self.source_layer), lts[0])]

    def verbalize_sweep(self, source_texts: Sequence[str], questions: str | Sequence[str],
                        source_layers: Sequence[int] | None = None,
                        target_layers: Sequence[int] | None = None) -> dict[tuple[int, int], list[str]]:
        """Completions for every (ls, lt) of the grid -> {(ls, lt): [completion per pair]}."""
        ls0, lts0 = self._validate()
        src, qs = check_texts(source_texts, questions)
        lss = [ls0] if source_layers is None else [_check_layer(self.target, x, "source_layers")
                                                   for x in self._seq(source_layers, "source_layers")]
        lts = lts0 if target_layers is None else self._layers(target_layers, "target_layers")
        prompts, places = zip(*[self.inspection_prompt(q) for q in qs]) if qs else ((), ())
        L_v = num_layers(self.verbalizer)
        if L_v in lts:
            # the last block's output at the placeholder feeds only that position's own next-token logits: unless
            # the placeholder is the prompt's last token, such a write cannot reach the answer (issue 37: it
            # silently returned the unpatched completion)
            late = [i for i, (p, ph) in enumerate(zip(prompts, places)) if ph != len(p) - 1]
            if late:
                raise ValueError(f"target layer {L_v} is the verbalizer's last layer: a write there only changes the "
                                 f"placeholder's own next-token logits, and in {len(late)} prompt(s) (e.g. "
                                 f"{self.template.format(question=qs[late[0]])!r}) the placeholder is not the last "
                                 f"token, so patching would have no effect; use target layers 0..{L_v - 1}")
        d_v = hidden_size(self.verbalizer)
        out: dict[tuple[int, int], list[str]] = {}
        for ls in lss:
            vecs = _map(self.source_vectors(src, ls), self.mapping, d_v) if src else torch.zeros(0, d_v)
            for lt in lts:
                res: list[str] = []
                for sl in _batches(len(src), self.batch_size):
                    res += generate_patched(self.verbalizer, self.tokenizer_v, prompts[sl], lt,
                                            [[p] for p in places[sl]], [v[None] for v in vecs[sl]],
                                            self.max_new_tokens)
                out[(ls, lt)] = res
        return out

    @staticmethod
    def _seq(x, name):
        if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
            return [x]
        if isinstance(x, (str, bytes)) or not hasattr(x, "__iter__"):
            raise TypeError(f"{name} must be an int or a sequence of ints")
        x = list(x)
        if not x:
            raise ValueError(f"{name} must hold at least one layer")
        return x


# ------------------------------------------------------------------------------------------- LIT / LatentQA
ADAPTERS = ("affine", "mlp")


class InputMLP(torch.nn.Module):
    """Per-position residual MLP map of read activations, (..., d) -> (..., d): x + W2 gelu(W1 x) with hidden
    width `hidden` (default 4 d). W2 and its bias start at zero, so the map starts as the identity."""

    def __init__(self, d: int, hidden: int | None = None) -> None:
        super().__init__()
        d = check_int(d, "d", min=1)
        hidden = 4 * d if hidden is None else check_int(hidden, "hidden", min=1)
        self.up, self.down = torch.nn.Linear(d, hidden), torch.nn.Linear(hidden, d)
        torch.nn.init.zeros_(self.down.weight)
        torch.nn.init.zeros_(self.down.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.nn.functional.gelu(self.up(x)))


def make_adapter(kind: str, d: int) -> torch.nn.Module:
    """A fresh identity-initialised input map of width `d`: "affine" (nn.Linear) or "mlp" (`InputMLP`)."""
    check_choice(kind, "kind", ADAPTERS)
    d = check_int(d, "d", min=1)
    if kind == "mlp":
        return InputMLP(d)
    lin = torch.nn.Linear(d, d)
    with torch.no_grad():  # identity: the decoder starts by reading the activations as they are
        lin.weight.copy_(torch.eye(d))
        lin.bias.zero_()
    return lin


class LITVerbalizer:
    """Latent Interpretation Tuning (LatentQA, Pan et al. 2024): a decoder trained to answer questions about
    activations written into its placeholder tokens.

    Args:
        target: M1 read at test time.
        decoder: M2 (trained by `fit`: a deep copy by default, so `decoder` itself is left unchanged).
        tokenizer_t, tokenizer_v: tokenizers of target and decoder.
        read_layer: lr, layer of M1 read at every token of the source (default 1).
        write_layer: lw, layer of M2 written at the placeholders (default 0 = embedding output).
        lora_rank: None trains all decoder weights; an int trains LoRA adapters of that rank on the attention
            and MLP projections (needs `peft`) and freezes the rest, as the paper's LoRA LIT decoders do.
        input_adapter: also train a map of the read activations applied before they are written (after
            `mapping`); `adapter_` after fit. True or "affine": an affine map (identity-initialised); "mlp": the
            per-position residual MLP `InputMLP` (x + W2 gelu(W1 x), hidden 4 d, W2 zero-initialised, so it also
            starts as the identity). With `lora_rank` or `train_decoder=False` this is a decoder that must reuse
            the frozen decoder's own knowledge instead of memorising its training people.
        train_decoder: False freezes the decoder's own weights when `lora_rank` is None (then only the input
            adapter trains).
        placeholder: the single-token word used for placeholder slots (its embedding is overwritten when lw = 0).
        max_new_tokens: greedy tokens generated (official config: 20).
        mapping: optional callable (..., d_t) -> (..., d_v) applied to activations (required when widths differ).
        copy: True trains a fresh copy in every `fit`; False trains `decoder` in place (then `fit` runs once).
        trained: True when `decoder` is already a LIT decoder (use `verbalize` without `fit`).
        batch_size: prompts per generation batch.
    Attributes after fit: `decoder_` (the trained decoder), `history_` (loss per step).
    """

    def __init__(self, target, decoder, tokenizer_t, tokenizer_v, read_layer: int = 1, write_layer: int = 0, *,
                 lora_rank: int | None = None, placeholder: str = "?", max_new_tokens: int = 20,
                 mapping: Callable | None = None, copy: bool = True, trained: bool = False,
                 batch_size: int = 64, input_adapter: bool | str = False, train_decoder: bool = True) -> None:
        self.target, self.decoder = target, decoder
        self.tokenizer_t, self.tokenizer_v = tokenizer_t, tokenizer_v
        self.read_layer, self.write_layer, self.lora_rank = read_layer, write_layer, lora_rank
        self.placeholder, self.max_new_tokens, self.mapping = placeholder, max_new_tokens, mapping
        self.copy, self.trained, self.batch_size = copy, trained, batch_size
        self.input_adapter, self.train_decoder = input_adapter, train_decoder
        self._validate()
        self.decoder_ = decoder if trained else None
        self.adapter_: torch.nn.Module | None = None
        self.history_: list[float] = []
        self._fits = 0

    def _validate(self, target=None) -> int:
        target = self.target if target is None else target
        _check_model(target, "target")
        _check_model(self.decoder, "decoder")
        _check_tokenizer(self.tokenizer_t, "tokenizer_t")
        _check_tokenizer(self.tokenizer_v, "tokenizer_v")
        _check_layer(target, self.read_layer, "read_layer")
        _check_layer(self.decoder, self.write_layer, "write_layer")
        if self.lora_rank is not None:
            check_int(self.lora_rank, "lora_rank", min=1)
        check_int(self.max_new_tokens, "max_new_tokens", min=1)
        check_int(self.batch_size, "batch_size", min=1)
        check_bool(self.copy, "copy")
        check_bool(self.trained, "trained")
        if not (isinstance(self.input_adapter, bool) or self.input_adapter in ADAPTERS):
            raise ValueError(f"input_adapter must be a bool or one of {ADAPTERS}, got {self.input_adapter!r}")
        check_bool(self.train_decoder, "train_decoder")
        if not self.train_decoder and self.lora_rank is None and not self.input_adapter:
            raise ValueError("train_decoder=False without lora_rank or input_adapter leaves nothing to train")
        if not isinstance(self.placeholder, str):
            raise TypeError(f"placeholder must be a string, got {type(self.placeholder).__name__}")
        ids = list(self.tokenizer_v.encode(self.placeholder, add_special_tokens=False))
        if len(ids) != 1:
            raise ValueError(f"placeholder {self.placeholder!r} must be exactly one token of tokenizer_v, got {ids}")
        _check_widths(target, self.decoder, self.mapping)
        return ids[0]

    # ---------------------------------------------------------------------------------- pieces
    def _read(self, model, texts: Sequence[str]) -> list[torch.Tensor]:
        """M1's read-layer states of every non-special token of each text -> list of (n_i, d_v) (mapped)."""
        tok = self.tokenizer_t
        n_pre = len(_prefix(tok))
        rows = [list(tok.encode(t, add_special_tokens=True)) for t in texts]
        for t, r in zip(texts, rows):
            if len(r) <= n_pre:
                raise ValueError(f"source text {t!r} has no token to read")
        d_v = hidden_size(self.decoder)
        out: list[torch.Tensor] = []
        for sl in _batches(len(rows), 256):
            ids, mask = pad_right(rows[sl], _pad_id(tok))
            h = read_activations(model, ids, mask.long(), self.read_layer, "all").cpu()
            h = _map(h, self.mapping, d_v).detach()
            out += [h[i, n_pre:len(r)] for i, r in enumerate(rows[sl])]
        return out

    def decoder_prompt(self, n_read: int, question: str) -> tuple[list[int], list[int]]:
        """M2's prompt ids ([BOS] + n_read placeholders + question) and the placeholder indices."""
        ph = self._validate()
        pre = _prefix(self.tokenizer_v)
        ids = pre + [ph] * n_read + _words(self.tokenizer_v, question)
        return ids, list(range(len(pre), len(pre) + n_read))

    # ---------------------------------------------------------------------------------- training
    def fit(self, read_texts: Sequence[str], qa_pairs: Sequence, *, steps: int = 600, lr: float = 1e-3,
            batch_size: int = 64, seed: int = 0, read_model=None, rehearsal_texts: Sequence[str] | None = None,
            rehearsal_fraction: float = 0.2, weight_decay: float = 0.01, activation_noise: float = 0.0,
            progress: bool | str = False) -> LITVerbalizer:
        """Train the decoder on (activations of read text, question) -> answer.

        Args:
            read_texts: N read prompts (their activations come from `read_model`, default `target`).
            qa_pairs: N entries, each a (question, answer) pair or a list of such pairs about that text.
            steps, lr, batch_size, seed: AdamW with warmup + cosine; one batch = `batch_size` sampled pairs.
            read_model: the model whose activations train the decoder (the paper: the base model).
            rehearsal_texts: plain texts mixed into every batch with next-token loss and no activations (keeps the
                decoder's own knowledge alive, spec 6: 20 % F2 rehearsal for the mismatch verbalizer).
            rehearsal_fraction: share of each batch taken from `rehearsal_texts`.
        """
        self._validate()
        steps = check_int(steps, "steps", min=1)
        lr = check_float(lr, "lr", min=0.0, min_open=True)
        batch_size = check_int(batch_size, "batch_size", min=1)
        seed = check_seed(seed)
        rehearsal_fraction = check_float(rehearsal_fraction, "rehearsal_fraction", min=0.0, max=1.0, max_open=True)
        weight_decay = check_float(weight_decay, "weight_decay", min=0.0)
        activation_noise = check_float(activation_noise, "activation_noise", min=0.0)
        if not isinstance(progress, str):
            check_bool(progress, "progress")
        read_model = self.target if read_model is None else read_model
        _check_model(read_model, "read_model")
        _check_widths(read_model, self.decoder, self.mapping)
        _check_layer(read_model, self.read_layer, "read_layer")
        texts = check_str_list(read_texts, "read_texts")
        if not texts:
            raise ValueError("read_texts must hold at least one text")
        if isinstance(qa_pairs, str) or len(qa_pairs) != len(texts):
            raise ValueError(f"qa_pairs must hold one entry per read text ({len(texts)}), got "
                             f"{len(qa_pairs) if not isinstance(qa_pairs, str) else 'a string'}")
        examples: list[tuple[int, str, str]] = []
        for i, entry in enumerate(qa_pairs):
            pairs = [entry] if (isinstance(entry, (tuple, list)) and len(entry) == 2
                                and all(isinstance(x, str) for x in entry)) else entry
            if isinstance(pairs, str) or not hasattr(pairs, "__iter__"):
                raise TypeError(f"qa_pairs[{i}] must be a (question, answer) pair or a list of them")
            pairs = list(pairs)
            if not pairs:
                raise ValueError(f"qa_pairs[{i}] holds no (question, answer) pair")
            for p in pairs:
                if not (isinstance(p, (tuple, list)) and len(p) == 2 and all(isinstance(x, str) and x.strip()
                                                                             for x in p)):
                    raise ValueError(f"qa_pairs[{i}] must hold (question, answer) pairs of non-empty strings, got {p!r}")
                examples.append((i, p[0], p[1]))
        if not self.copy and self._fits:
            raise ValueError("this LITVerbalizer trained its decoder in place already (copy=False): make a new one")
        tok_v = self.tokenizer_v
        eos = getattr(tok_v, "eos_token_id", None)
        acts = self._read(read_model, texts)
        scale = torch.cat(acts).std(0) if activation_noise > 0 else None
        rehearsal = []
        if rehearsal_texts is not None:
            rehearsal = [list(tok_v.encode(t, add_special_tokens=True)) + ([eos] if eos is not None else [])
                         for t in check_str_list(rehearsal_texts, "rehearsal_texts")]
            if not rehearsal:
                raise ValueError("rehearsal_texts must hold at least one text when given")
        n_reh = int(round(rehearsal_fraction * batch_size)) if rehearsal else 0
        n_qa = max(1, batch_size - n_reh)

        # pre-tokenise every example: prompt + answer + eos; labels on the answer (and eos) only
        rows, labels_from, places = [], [], []
        for i, q, a in examples:
            prompt, ph = self.decoder_prompt(acts[i].shape[0], q)
            rows.append(prompt + _words(tok_v, a) + ([eos] if eos is not None else []))
            labels_from.append(len(prompt))
            places.append(ph)
        max_len = getattr(self.decoder, "max_len", None)
        if max_len is not None and max(len(r) for r in rows + rehearsal) > max_len:
            raise ValueError(f"a LIT training sequence is longer than the decoder's max_len {max_len}")

        dec = _copy.deepcopy(self.decoder) if self.copy else self.decoder
        params = self._trainable(dec)
        adapter = None
        if self.input_adapter:
            adapter = make_adapter("mlp" if self.input_adapter == "mlp" else "affine", hidden_size(dec))
            adapter = adapter.to(next(dec.parameters()).device)
            params = params + list(adapter.parameters())
        opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(steps, 0.05))
        rng = np.random.default_rng(seed)
        gen = torch.Generator().manual_seed(seed)
        pad = _pad_id(tok_v)
        dec.train()
        history = []
        for _ in tqdm(range(steps), desc=progress if isinstance(progress, str) else "LIT", disable=not progress,
                      leave=False):
            pick = rng.integers(0, len(rows), n_qa)
            seqs = [rows[j] for j in pick]
            starts = [labels_from[j] for j in pick]
            if n_reh:
                for j in rng.integers(0, len(rehearsal), n_reh):
                    seqs.append(rehearsal[j])
                    starts.append(1)
            sel_acts = [acts[examples[j][0]] for j in pick]
            if scale is not None:
                sel_acts = [a + activation_noise * scale * torch.randn(a.shape, generator=gen) for a in sel_acts]
            if adapter is not None:
                dev = next(adapter.parameters()).device
                sel_acts = [adapter(a.to(dev)) for a in sel_acts]
            loss = lit_batch_loss(dec, seqs, starts, [places[j] for j in pick], sel_acts, self.write_layer, pad)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            history.append(float(loss.detach()))
        dec.eval()
        if adapter is not None:
            adapter.eval().requires_grad_(False)
        self.decoder_, self.history_, self.adapter_ = dec, history, adapter
        self._fits += 1
        return self

    def _trainable(self, dec) -> list[torch.nn.Parameter]:
        if self.lora_rank is None:
            if not self.train_decoder:  # only the input adapter learns: the decoder stays as it was
                for p in dec.parameters():
                    p.requires_grad_(False)
            return [p for p in dec.parameters() if p.requires_grad]
        return add_lora(dec, int(self.lora_rank), "lora_rank")

    # ---------------------------------------------------------------------------------- inference
    def verbalize(self, source_texts: Sequence[str], questions: str | Sequence[str], target=None) -> list[str]:
        """The decoder's answers about the activations of each source text (read from `target`, default M1)."""
        target = self.target if target is None else target
        self._validate(target)
        if self.decoder_ is None:
            raise ValueError("LITVerbalizer is not fitted: call fit(...) first (or pass trained=True)")
        src, qs = check_texts(source_texts, questions)
        if not src:
            return []
        acts = self._read(target, src)
        if self.adapter_ is not None:
            with torch.no_grad():
                dev = next(self.adapter_.parameters()).device
                acts = [self.adapter_(a.to(dev)).cpu() for a in acts]
        out: list[str] = []
        for sl in _batches(len(src), self.batch_size):
            prompts, places = zip(*[self.decoder_prompt(a.shape[0], q) for a, q in zip(acts[sl], qs[sl])])
            out += generate_patched(self.decoder_, self.tokenizer_v, prompts, self.write_layer, places, acts[sl],
                                    self.max_new_tokens)
        return out
