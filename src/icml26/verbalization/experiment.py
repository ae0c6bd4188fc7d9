"""Controlled verbalization experiment (spec section 6 with review notes 1-7): tiny in-process LMs, six conditions.

Per seed (0, 1, 2), all word-level TinyCausalLMs (d 64, 2 layers, 4 heads, tied embeddings):
  B    base model, trained on the base corpus C0 (generic people with stereotype facts and 25 % exceptions,
       fact-free roster names, relation facts).
  M1   target = B fine-tuned on persona bios + interviews with fact table F1, mixed 1:1 with C0.
  M2   verbalizer = B + LIT training (read layer 1, write layer 0) on generic people, fact-free name pairs and
       relation subjects; never a persona name, persona fact or fantasy value.
  M2'  knowledge mismatch: B fine-tuned on F2 (every value != F1) + C0, then LIT-trained like M2 with 20 % F2
       rehearsal.
  M2'' shared knowledge: as M2' with F1; its fine-tune is M1's exact recipe, so M1's weights are used (then LIT
       with 20 % F1 rehearsal).
Conditions: (a) consistent personas, (b) shuffled, (c) fantasy with M2, (d) fantasy with M2', (e) fantasy with
M2'', (f) feature extraction on held-out relation subjects. Controls: zero-shot (input only), M1 self-report,
a persona-split linear probe on M1 (and on B as the control), name recovery, inversion controls, Patchscopes.

Jobs (base models, fine-tunes, LIT decoders, evaluations) run on one pool of single-thread worker processes, each
started as soon as its inputs exist (`common.parallel.run_graph`).
Deviations from the spec (why, in docs/verbalization.md): LIT reads the target's activations of its (fact-free)
training texts instead of B's; fine-tune lr 3e-3 and LIT lr 2e-3; 12 + 12 real personas; fantasy name tokens occur
in C0 in fact-free roster lines; relation subjects split into LIT-trained and held-out halves.
`--scale paper` runs `icml26.verbalization.scale` (HF models, DDP under torchrun).
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import numpy as np
import torch

from icml26.common import seed_everything
from icml26.common.plotting import new_figure
from icml26.common.validation import check_bool, check_choice, check_float, check_int, require_keys
from icml26.results import Claim, Result
from icml26.verbalization.baselines import InversionBaseline, ZeroShotBaseline
from icml26.common import stats
from icml26.verbalization.controls import (any_layer_accuracy, bonferroni, contains_match,
                                           grouped_probe_accuracy, mcnemar, privileged_info_report)
from icml26.verbalization.data import (NAME_PARAPHRASES, NAME_QUESTION, SUBJECT_QUESTION, EvalItem,
                                       FeatureExtractionWorld, PersonaWorld, build_tokenizer)
from icml26.verbalization.hooks import read_activations
from icml26.verbalization.models import TinyCausalLM, pad_right, train_lm
from icml26.verbalization.verbalize import LITVerbalizer, PatchscopesVerbalizer, make_adapter, merge_lora

SLUG = "verbalization"

_WORLD = {"n_cultures": 6, "n_personas": 12, "n_fantasy": 48, "n_generic": 40, "n_values": 12,
          "n_fantasy_values": 8, "exception_rate": 0.25, "n_roster": 16, "n_fantasy_roster": 96,
          "attributes": ["country", "food", "drink", "sport"], "lit_holdout": 0.25,
          "relations": 4, "n_subjects": 48, "n_objects": 8, "lit_fraction": 0.5}
_MODEL = {"d_model": 64, "n_layers": 2, "n_heads": 4, "max_len": 32}
_TRAIN = {"batch_size": 64, "base_steps": 1500, "base_lr": 3e-3, "ft_steps": 400, "ft_lr": 3e-3,
          "ft_mix": 0.5, "lit_steps": 600, "lit_lr": 2e-3, "lit_read": "target", "lit_relation_repeat": 12,
          "lit_reading_repeat": 8,
          "rehearsal_fraction": 0.2, "read_layer": 1, "write_layer": 0, "max_new_tokens": 4, "lit_decoder": "full",
          "lit_lora_rank": 8}
_EVAL = {"ps_source_layers": [1, 2], "ps_target_layers": [0, 1], "probe_folds": 4, "probe_l2": [1e-2, 1e-1, 1.0],
         "probe_max_iter": 100, "inverter_texts": 1500, "real_lm": False, "real_lm_facts": 40, "real_lm_source_layers": [6, 12],
         "real_lm_target_layers": [2, 6], "real_lm_max_new_tokens": 6, "real_lm_lit": False, "real_lm_lit_train": 13,
         "real_lm_lit_read_layer": 6, "real_lm_lit_rank": 8, "real_lm_lit_steps": 80,
         "real_lm_persona": False, "real_lm_persona_ft_steps": 100, "real_lm_persona_lit_steps": 80,
         "real_lm_persona_n_generic": 3, "real_lm_persona_n_personas": 8, "real_lm_persona_n_heldout": 6,
         "real_lm_persona_seeds": [0]}

CONFIGS: dict[str, dict[str, Any]] = {
    "smoke": {"seeds": [0], "workers": 1, **_WORLD, **_MODEL, **_TRAIN, **_EVAL,
              "n_cultures": 2, "n_personas": 2, "n_fantasy": 4, "n_values": 4,
              "n_fantasy_values": 3, "n_roster": 2, "n_fantasy_roster": 4, "attributes": ["country", "food"],
              "n_generic": 8, "lit_holdout": 0.25, "probe_l2": [1e-2],
              "relations": 2, "n_subjects": 4, "n_objects": 2, "d_model": 16, "n_heads": 2,
              "batch_size": 8, "base_steps": 3, "ft_steps": 2, "lit_steps": 2, "lit_relation_repeat": 1,
              "probe_folds": 2},
    "small": {"seeds": [0, 1, 2], "workers": 0, **_WORLD, **_MODEL, **_TRAIN, **_EVAL},
    # the small experiment with the seeds the inconclusive hints ask for (issue 30), same code path
    "medium": {"seeds": list(range(8)), "workers": 0, **_WORLD, **_MODEL, **_TRAIN, **_EVAL, "real_lm_lit": True,
               # the real-LM persona arm with fine-tunes that store the facts (issue 37's pilots: ceilings 1.00
               # where 100 / 80 steps stored 0.42-0.83; 42 LIT people instead of 12 did worse), at the pilots'
               # largest size: 2 seeds x (32 personas, 18 held-out people), ~28 min per seed on 2 cores
               "real_lm_persona": True, "real_lm_persona_ft_steps": 400, "real_lm_persona_lit_steps": 200,
               "real_lm_persona_n_generic": 5, "real_lm_persona_n_personas": 32, "real_lm_persona_n_heldout": 18,
               "real_lm_persona_seeds": [0, 1]},
    "paper": {  # spec 7: see icml26.verbalization.scale and docs/verbalization.md
        "seed": 0, "target_model": "meta-llama/Llama-3.1-8B-Instruct",
        "decoder_model": "meta-llama/Llama-3.1-8B-Instruct", "personaqa_dir": "", "personaqa_variant": "PersonaQA",
        "lit_data": "", "lit_steps": 2000, "lit_lr": 1e-4, "lit_batch_size": 8, "lora_rank": 16,
        "read_layers": list(range(1, 16)), "write_layer": 0, "ps_source_layers": list(range(1, 16)),
        "ps_target_layers": list(range(1, 32)), "max_new_tokens": 20, "dtype": "bfloat16",
        "out_dir": "runs/verbalization/paper", "eval_limit": 0, "lit_checkpoint": "", "placeholder": "?"},
}

CONFIG_HELP = {
    "seeds": "list of seeds; each seed redraws the worlds and retrains every model",
    "workers": "parallel single-thread worker processes (0 = one per CPU)",
    "n_cultures": "name cultures, each with a stereotype value per attribute",
    "n_personas": "personas per real-name group (consistent, shuffled); multiple of n_cultures",
    "n_fantasy": "fantasy personas (invented names and values)",
    "n_generic": "generic people per culture in the base corpus",
    "n_values": "real values per attribute (n_cultures stereotypes + others)",
    "n_fantasy_values": "invented values per attribute (chance = 1/n_fantasy_values)",
    "exception_rate": "share of generic people with non-stereotype facts (review note 3)",
    "n_roster": "fact-free roster names per culture", "n_fantasy_roster": "fact-free fantasy name pairings in C0",
    "attributes": "persona attributes", "relations": "number of relations (feature extraction)",
    "n_subjects": "subjects per relation", "n_objects": "objects per relation",
    "lit_fraction": "share of subjects whose relation LIT is trained on (the rest are evaluated)",
    "d_model": "TinyCausalLM width", "n_layers": "TinyCausalLM blocks", "n_heads": "attention heads",
    "max_len": "longest sequence, tokens", "batch_size": "sequences per step",
    "base_steps": "steps of the base model B", "base_lr": "AdamW peak lr of B",
    "ft_steps": "steps of each persona fine-tune (M1, M2', M2'')", "ft_lr": "fine-tune peak lr",
    "ft_mix": "share of C0 rows in fine-tune batches", "lit_steps": "LIT training steps per decoder",
    "lit_lr": "LIT peak lr", "lit_read": "'target' (M1) or 'base' (B): the model read during LIT training",
    "lit_relation_repeat": "times the relation examples are repeated in the LIT data",
    "lit_reading_repeat": "passes of reading rows (a fact stated in the read text, asked back; the reading control "
                          "PCr) in the LIT data, each with fresh values so they cannot be memorised (0 = none)",
    "rehearsal_fraction": "share of LIT batches with the verbalizer's own persona facts (M2', M2'')",
    "read_layer": "LIT read layer of M1", "write_layer": "LIT write layer of M2 (0 = embeddings)",
    "max_new_tokens": "greedy tokens generated per answer",
    "ps_source_layers": "Patchscopes source layers", "ps_target_layers": "Patchscopes target layers",
    "probe_folds": "persona folds of the linear probe",
    "probe_l2": "probe L2 penalties; the value (and the read site) is picked by inner CV on the training folds",
    "lit_holdout": "share of generic people held out of LIT training (the positive control PC)",
    "lit_decoder": "what LIT trains: 'full' (a copy of the decoder), 'lora' (LoRA adapters, the rest frozen), "
                   "'lora+adapter' (plus an affine map of the read activations) or 'adapter' (only that map)",
    "lit_lora_rank": "LoRA rank of the 'lora' decoders",
    "probe_max_iter": "L-BFGS iterations per probe fit",
    "inverter_texts": "C0 texts the inverter is trained on (a seeded subset)",
    "real_lm": "also run Patchscopes vs zero-shot on SmolLM2-135M-Instruct (reported, ~1-3 min)",
    "real_lm_facts": "country facts asked of SmolLM2", "real_lm_source_layers": "SmolLM2 source layers",
    "real_lm_target_layers": "SmolLM2 target layers", "real_lm_max_new_tokens": "SmolLM2 tokens generated",
    "real_lm_lit": "also train a LoRA LIT decoder on SmolLM2 and run the real-LM positive control (claim RL, "
                   "report-only; ~3 min on 2 cores, cached)",
    "real_lm_lit_train": "countries the SmolLM2 LIT decoder is trained on (the rest are held out)",
    "real_lm_lit_read_layer": "SmolLM2 layer the LIT decoder reads", "real_lm_lit_rank": "LoRA rank of that decoder",
    "real_lm_lit_steps": "LIT training steps of that decoder",
    "real_lm_persona": "also run the persona arm on SmolLM2 (claim RP, report-only: LoRA fine-tunes on F1 / F2, LoRA "
                       "LIT decoders, conditions (d), (e) and their positive control; ~7 min on 2 cores, cached)",
    "real_lm_persona_ft_steps": "LoRA fine-tune steps of each SmolLM2 persona model (M1, M2'-FT)",
    "real_lm_persona_lit_steps": "LIT training steps of each SmolLM2 persona decoder (M2', M2'')",
    "real_lm_persona_n_generic": "generic people per culture in the SmolLM2 persona world (6 cultures; "
                                 "real_lm_persona_n_heldout of them are held out for PC, the rest train the LIT "
                                 "decoders)",
    "real_lm_persona_n_personas": "fantasy personas in the SmolLM2 persona world (the clusters of claims 1 and 3e; "
                                  ">= 2)",
    "real_lm_persona_n_heldout": "generic people held out of the SmolLM2 LIT training (the clusters of PC; "
                                 "< 6 x real_lm_persona_n_generic)",
    "real_lm_persona_seeds": "seeds of the SmolLM2 persona arm (each a new world and training run; claim RP pools "
                             "their items, each seed's personas and people their own clusters)",
}

EXPECTED_RUNTIME_S = {"smoke": 10, "small": 240, "medium": 4300}

CHANCE_MARGIN = 0.10  # claims 1 and 2: acc_target <= chance + 0.10
PROBE_MARGIN = 0.25  # claim 2: probe >= chance + 0.25
BELIEF_MIN, BELIEF_RATIO = 0.5, 3.0  # claim 1
FE_TOL, LIT_MIN, ZS_MIN, SHARED_TOL = 0.05, 0.7, 0.7, 0.10  # claim 3
SELF_MIN, RECOVERY_MIN = 0.9, 0.8  # claims 2 (sanity) and 4
PROBE_MIN = 0.25  # claim 2, amended (issue 37): the paper's own probe figure (~25 %), not chance + 0.25
LIT_DECODERS = ("full", "lora", "lora+adapter", "adapter")
PC_MIN = 0.5  # positive control: the claim-1 belief bar, on people the decoder knows from text only


# ------------------------------------------------------------------------------------------- config
def validate_config(config: dict) -> None:
    """Raise ValueError/TypeError naming the first bad key of a small/smoke config (paper: scale.py checks)."""
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict, got {type(config).__name__}")
    if config.get("scale") == "paper" or "target_model" in config:
        from icml26.verbalization.scale import validate_paper_config

        validate_paper_config(config)
        return
    require_keys(config, CONFIGS["small"].keys())
    seeds = config["seeds"]
    if not isinstance(seeds, (list, tuple)) or not seeds:
        raise ValueError("seeds must be a non-empty list of seeds")
    for s in seeds:
        check_int(s, "seeds", min=0)
    if len(set(seeds)) != len(seeds):
        raise ValueError("seeds must be distinct")
    rp_seeds = config["real_lm_persona_seeds"]
    if not isinstance(rp_seeds, (list, tuple)) or not rp_seeds:
        raise ValueError(f"real_lm_persona_seeds must be a non-empty list of seeds, got {rp_seeds!r}")
    for s in rp_seeds:
        check_int(s, "real_lm_persona_seeds", min=0)
    if len(set(rp_seeds)) != len(rp_seeds):
        raise ValueError(f"real_lm_persona_seeds must be distinct, got {rp_seeds!r}")
    check_int(config["workers"], "workers", min=0)
    for k in ("n_cultures", "n_values", "n_fantasy_values", "n_subjects", "n_objects", "d_model", "n_layers",
              "n_heads", "max_len", "batch_size", "base_steps", "ft_steps", "lit_steps", "max_new_tokens",
              "probe_folds", "lit_relation_repeat", "probe_max_iter", "inverter_texts", "real_lm_facts",
              "real_lm_max_new_tokens",
              "relations", "real_lm_lit_train", "real_lm_lit_read_layer", "real_lm_lit_rank", "real_lm_lit_steps",
              "real_lm_persona_ft_steps", "real_lm_persona_lit_steps"):
        check_int(config[k], k, min=1)
    check_int(config["real_lm_persona_n_generic"], "real_lm_persona_n_generic", min=1)
    check_int(config["real_lm_persona_n_personas"], "real_lm_persona_n_personas", min=2)
    check_int(config["real_lm_persona_n_heldout"], "real_lm_persona_n_heldout", min=1)
    if config["real_lm_persona_n_heldout"] >= 6 * config["real_lm_persona_n_generic"]:
        raise ValueError(f"real_lm_persona_n_heldout ({config['real_lm_persona_n_heldout']}) must leave LIT "
                         f"training people: it must be < 6 x real_lm_persona_n_generic = "
                         f"{6 * config['real_lm_persona_n_generic']}")
    for k in ("n_personas", "n_fantasy", "n_generic", "n_roster", "n_fantasy_roster", "read_layer",
              "write_layer", "lit_reading_repeat"):
        check_int(config[k], k, min=0)
    for k in ("base_lr", "ft_lr", "lit_lr"):
        check_float(config[k], k, min=0.0, min_open=True)
    for k in ("exception_rate", "ft_mix", "rehearsal_fraction", "lit_fraction"):
        check_float(config[k], k, min=0.0, max=1.0)
    check_float(config["lit_holdout"], "lit_holdout", min=0.0, max=1.0, max_open=True)
    check_int(config["lit_lora_rank"], "lit_lora_rank", min=1)
    check_choice(config["lit_decoder"], "lit_decoder", LIT_DECODERS)
    if not isinstance(config["probe_l2"], (list, tuple)) or not config["probe_l2"]:
        raise ValueError("probe_l2 must be a non-empty list of penalties")
    for x in config["probe_l2"]:
        check_float(x, "probe_l2", min=0.0)
    if config["rehearsal_fraction"] >= 1:
        raise ValueError("rehearsal_fraction must be < 1")
    check_choice(config["lit_read"], "lit_read", ("target", "base"))
    check_bool(config["real_lm"], "real_lm")
    check_bool(config["real_lm_lit"], "real_lm_lit")
    check_bool(config["real_lm_persona"], "real_lm_persona")
    for k in ("ps_source_layers", "ps_target_layers", "real_lm_source_layers", "real_lm_target_layers",
              "attributes"):
        if not isinstance(config[k], (list, tuple)) or not config[k]:
            raise ValueError(f"{k} must be a non-empty list")
    L = config["n_layers"]
    if not 1 <= config["read_layer"] <= L:
        raise ValueError(f"read_layer must be in 1..n_layers={L}, got {config['read_layer']}")
    if config["write_layer"] >= L:
        raise ValueError(f"write_layer must be < n_layers={L}, got {config['write_layer']}")
    for x in config["ps_source_layers"]:
        check_int(x, "ps_source_layers", min=0, max=L)
    for x in config["ps_target_layers"]:
        check_int(x, "ps_target_layers", min=0, max=L - 1)
    if config["n_fantasy"] < config["probe_folds"]:
        raise ValueError(f"n_fantasy ({config['n_fantasy']}) must be >= probe_folds ({config['probe_folds']})")
    _worlds(config, 0)  # the world checks its own sizes (e.g. name pools, n_personas % n_cultures)


def _worlds(cfg: dict, seed: int) -> tuple[PersonaWorld, FeatureExtractionWorld]:
    w = PersonaWorld(seed, cfg["n_cultures"], cfg["n_personas"], cfg["attributes"],
                     ("consistent", "shuffled", "fantasy"), n_generic=cfg["n_generic"], n_values=cfg["n_values"],
                     n_fantasy=cfg["n_fantasy"], n_fantasy_values=cfg["n_fantasy_values"],
                     exception_rate=cfg["exception_rate"], n_roster=cfg["n_roster"],
                     n_fantasy_roster=cfg["n_fantasy_roster"], lit_holdout=cfg["lit_holdout"])
    f = FeatureExtractionWorld(seed, cfg["relations"], cfg["n_subjects"], n_objects=cfg["n_objects"],
                               lit_fraction=cfg["lit_fraction"])
    return w, f


def _setup(cfg: dict, seed: int):
    w, f = _worlds(cfg, seed)
    tok = build_tokenizer(w, f)
    return w, f, tok, w.base_corpus() + f.base_corpus()


def _model(cfg: dict, tok, state: dict | None = None) -> TinyCausalLM:
    m = TinyCausalLM(len(tok), cfg["d_model"], cfg["n_layers"], cfg["n_heads"], cfg["max_len"])
    if state is not None:
        m.load_state_dict(state)
    m.eval()
    return m


def _state(m: torch.nn.Module) -> dict:
    return {k: v.detach().clone() for k, v in m.state_dict().items()}


# ------------------------------------------------------------------------------------------- jobs
def train_base_job(seed: int, cfg: dict) -> dict:
    """Stage 1: B on C0."""
    t0 = time.perf_counter()
    _, _, tok, c0 = _setup(cfg, seed)
    seed_everything(seed)
    m = _model(cfg, tok)
    losses = train_lm(m, tok, c0, steps=cfg["base_steps"], lr=cfg["base_lr"], batch_size=cfg["batch_size"],
                      seed=seed, progress=f"B seed {seed}")
    return {"seed": seed, "state": _state(m), "loss": float(np.mean(losses[-50:])), "time_s": time.perf_counter() - t0}


def finetune_job(seed: int, cfg: dict, base_state: dict, facts: str, role: str) -> dict:
    """Stage 2: B fine-tuned on persona bios + interviews (`facts` = "target" F1 or "mismatch" F2) mixed with C0."""
    t0 = time.perf_counter()
    w, _, tok, c0 = _setup(cfg, seed)
    m = _model(cfg, tok, base_state)
    offset = {"M1": 1, "M2p": 2, "M2pp": 3}[role]
    torch.manual_seed(seed * 10 + offset)
    losses = train_lm(m, tok, w.persona_corpus(facts), mix_texts=c0, mix_fraction=cfg["ft_mix"],
                      steps=cfg["ft_steps"], lr=cfg["ft_lr"], batch_size=cfg["batch_size"], seed=seed * 10 + offset,
                      progress=f"{role} seed {seed}")
    return {"seed": seed, "role": role, "state": _state(m), "loss": float(np.mean(losses[-50:])),
            "time_s": time.perf_counter() - t0}


def _lit_data(w: PersonaWorld, f: FeatureExtractionWorld, repeat: int, reading_repeat: int = 0):
    texts, qas = w.lit_examples()
    t2, q2 = f.lit_examples()
    t3, q3 = w.reading_examples(reading_repeat) if reading_repeat else ([], [])
    return texts + t2 * repeat + t3, qas + q2 * repeat + q3


def lit_job(seed: int, cfg: dict, decoder_state: dict, read_state: dict, rehearsal: str | None, role: str) -> dict:
    """Stage 3: LIT training of a decoder (`rehearsal` = None, "target" or "mismatch" persona facts)."""
    t0 = time.perf_counter()
    w, f, tok, _ = _setup(cfg, seed)
    dec, reader = _model(cfg, tok, decoder_state), _model(cfg, tok, read_state)
    texts, qas = _lit_data(w, f, cfg["lit_relation_repeat"], cfg["lit_reading_repeat"])
    torch.manual_seed(seed * 10 + 5)
    lit = LITVerbalizer(reader, dec, tok, tok, cfg["read_layer"], cfg["write_layer"],
                        max_new_tokens=cfg["max_new_tokens"], copy=False,
                        lora_rank=cfg["lit_lora_rank"] if "lora" in cfg["lit_decoder"] else None,
                        input_adapter="adapter" in cfg["lit_decoder"], train_decoder=cfg["lit_decoder"] == "full")
    lit.fit(texts, qas, steps=cfg["lit_steps"], lr=cfg["lit_lr"], batch_size=cfg["batch_size"], seed=seed * 10 + 5,
            read_model=reader, rehearsal_texts=w.persona_corpus(rehearsal) if rehearsal else None,
            rehearsal_fraction=cfg["rehearsal_fraction"], progress=f"LIT {role} seed {seed}")
    adapter = None if lit.adapter_ is None else _state(lit.adapter_)
    return {"seed": seed, "role": role, "state": _state(merge_lora(lit.decoder_)), "adapter": adapter,
            "loss": float(np.mean(lit.history_[-50:])), "time_s": time.perf_counter() - t0}


def _probe_features(model, tok, w: PersonaWorld, layers: list[int]) -> tuple[dict[str, np.ndarray], list, list]:
    """Per fantasy persona and paraphrase: activations at the last name token and the final "." (review note 1)."""
    rows, groups, personas = [], [], []
    for p in w.personas["fantasy"]:
        for par in NAME_PARAPHRASES:
            rows.append(tok.encode(par.format(name=p.name)))
            groups.append(p.name)
            personas.append(p)
    ids, mask = pad_right(rows)
    lengths = torch.as_tensor([len(r) for r in rows])
    feats = {}
    for layer in layers:
        h = read_activations(model, ids, mask.long(), layer, "all")
        feats[f"L{layer}_last_name"] = h[torch.arange(len(rows)), lengths - 2].numpy()
        feats[f"L{layer}_period"] = h[torch.arange(len(rows)), lengths - 1].numpy()
    return feats, groups, personas


def _probe(model, tok, w: PersonaWorld, cfg: dict, seed: int) -> dict:
    layers = list(range(1, cfg["n_layers"] + 1))
    feats, groups, personas = _probe_features(model, tok, w, layers)
    correct, sites = [], []
    for a in w.attributes:
        labels = [w.facts[(p.name, a)] for p in personas]
        r = grouped_probe_accuracy(feats, labels, groups, n_folds=cfg["probe_folds"], seed=seed,
                                   l2=list(cfg["probe_l2"]), max_iter=cfg["probe_max_iter"])
        correct.append(r["correct"])
        sites += r["sites"]
    allc = np.concatenate(correct)
    return {"accuracy": float(allc.mean()), "n": int(allc.size), "sites": {s: sites.count(s) for s in set(sites)},
            "correct": allc, "groups": list(groups) * len(w.attributes)}


def _scalars(rep: dict) -> dict:
    keep = ("n", "acc_target", "acc_verbalizer_belief", "first_token_target", "zero_shot", "self_report",
            "inversion", "p_verbalizer_vs_zero_shot", "diff_verbalizer_minus_zero_shot", "chance")
    return {k: rep[k] for k in keep if k in rep}


def evaluate_job(seed: int, cfg: dict, states: dict[str, dict]) -> dict:
    """Stage 4: every condition, control, probe and Patchscopes grid of one seed."""
    t0 = time.perf_counter()
    w, f, tok, c0 = _setup(cfg, seed)
    B, M1, M2p_kn, M2pp_kn = (_model(cfg, tok, states[k]) for k in ("B", "M1", "M2p", "M2pp"))
    mnt = cfg["max_new_tokens"]
    def adapter(r: str):
        st = states.get(f"adapter_LIT_{r}")
        if st is None:
            return None
        lin = make_adapter("affine", cfg["d_model"])
        lin.load_state_dict(st)
        return lin.eval().requires_grad_(False)

    lit = {r: LITVerbalizer(M1, _model(cfg, tok, states[f"LIT_{r}"]), tok, tok, cfg["read_layer"],
                            cfg["write_layer"], max_new_tokens=mnt, trained=True, mapping=adapter(r))
           for r in ("M2", "M2p", "M2pp")}
    zs = {"M2": ZeroShotBaseline(B, tok, max_new_tokens=mnt), "M2p": ZeroShotBaseline(M2p_kn, tok, max_new_tokens=mnt),
          "M2pp": ZeroShotBaseline(M2pp_kn, tok, max_new_tokens=mnt)}
    self_rep = ZeroShotBaseline(M1, tok, max_new_tokens=mnt)
    knowledge = {"M2": B, "M2p": M2p_kn, "M2pp": M2pp_kn}
    pick = np.random.default_rng(seed).permutation(len(c0))[:cfg["inverter_texts"]]
    inverter = InversionBaseline(M1, tok, cfg["read_layer"]).fit([c0[i] for i in sorted(pick)])

    def patchscopes(role: str, items: list[EvalItem], key: str) -> dict:
        ps = PatchscopesVerbalizer(M1, knowledge[role], tok, tok, cfg["ps_source_layers"][0],
                                   cfg["ps_target_layers"], max_new_tokens=mnt)
        sweep = ps.verbalize_sweep([i.source for i in items], [i.question for i in items],
                                   source_layers=cfg["ps_source_layers"])
        out = {"target": any_layer_accuracy(sweep, [i.target for i in items])}
        if key == "belief" and all(i.belief is not None for i in items):
            out["belief"] = any_layer_accuracy(sweep, [i.belief for i in items])
        return out

    def recovered_name_control(role: str, items: list[EvalItem], question: str, template: str) -> dict:
        """Review note 4: zero-shot of the verbalizer's knowledge model on the input the LIT decoder recovered."""
        src = [i.source for i in items]
        rec = lit[role].verbalize(src, question)
        texts = [template.format(x=r if r.strip() else "?") for r in rec]
        comp = zs[role].verbalize(texts, [i.question for i in items])
        ok = contains_match(comp, [i.target for i in items])
        return {"accuracy": float(ok.mean()), "correct": ok}

    scored: dict[str, dict] = {}

    def keep(name: str, correct, clusters) -> None:
        correct = [int(x) for x in np.asarray(correct, dtype=bool)]
        scored[name] = {"correct": correct, "cluster": [str(c) for c in clusters], "n": len(correct)}

    out: dict[str, Any] = {"seed": seed}
    cond = {"a": ("consistent", "M2", "stereotype"), "b": ("shuffled", "M2", "stereotype"),
            "c": ("fantasy", "M2", "none"), "d": ("fantasy", "M2p", "mismatch"), "e": ("fantasy", "M2pp", "target")}
    reports = {}
    for key, (group, role, belief) in cond.items():
        items = w.eval_items(group, belief)
        inv = (lambda s, q, role=role: inverter.verbalize(s, q, zs[role]))
        rep = privileged_info_report(items, lit[role], zero_shot=zs[role], self_report=self_rep, inversion=inv,
                                     chance=w.chance(group))
        reports[key] = rep
        out[key] = {**_scalars(rep), "patchscopes": patchscopes(role, items, "belief")}
    fe_items = f.eval_items()
    rep_f = privileged_info_report(fe_items, lit["M2"], zero_shot=zs["M2"], self_report=self_rep,
                                   inversion=lambda s, q: inverter.verbalize(s, q, zs["M2"]), chance=f.chance())
    reports["f"] = rep_f
    out["f"] = {**_scalars(rep_f), "patchscopes": patchscopes("M2", fe_items, "target")}
    # inversion controls of review note 4: the input as the same decoder recovers it
    e_ctrl = recovered_name_control("M2pp", w.eval_items("fantasy", "target"), NAME_QUESTION,
                                    NAME_PARAPHRASES[0].replace("{name}", "{x}"))
    f_ctrl = recovered_name_control("M2", fe_items, SUBJECT_QUESTION, "consider {x} .")
    out["e"]["recovered_input_zero_shot"] = e_ctrl["accuracy"]
    out["f"]["recovered_input_zero_shot"] = f_ctrl["accuracy"]
    per = {k: [i.meta["persona"] for i in w.eval_items(g)] for k, g in
           (("a", "consistent"), ("b", "shuffled"), ("c", "fantasy"), ("d", "fantasy"), ("e", "fantasy"))}
    keep("d_belief", reports["d"]["correct_belief"], per["d"])
    keep("d_target", reports["d"]["correct_target"], per["d"])
    keep("b_belief", reports["b"]["correct_belief"], per["b"])
    keep("b_target", reports["b"]["correct_target"], per["b"])
    keep("c_target", reports["c"]["correct_target"], per["c"])
    keep("c_self", reports["c"]["self_report_correct"], per["c"])
    keep("a_zs", reports["a"]["zero_shot_correct"], per["a"])
    keep("e_lit", reports["e"]["correct_target"], per["e"])
    keep("e_ctrl", e_ctrl["correct"], per["e"])
    subj = [i.meta["subject"] for i in fe_items]
    keep("f_zs", reports["f"]["zero_shot_correct"], subj)
    keep("f_lit", reports["f"]["correct_target"], subj)
    # positive control (issue 37): held-out generic people, known from C0 text only, never in LIT training;
    # scored on their exception facts, which no stereotype guess gives
    hold = [i for i in w.holdout_items() if i.meta["exception"]]
    out["pc"] = {}
    if hold:
        src_h, q_h, ans_h = [i.source for i in hold], [i.question for i in hold], [i.target for i in hold]
        for r in ("M2", "M2p", "M2pp"):
            ok = contains_match(lit[r].verbalize(src_h, q_h), ans_h)
            keep(f"pc_{r}", ok, [i.meta["persona"] for i in hold])
            out["pc"][r] = float(ok.mean())
        out["pc"]["text_M2p"] = float(contains_match(zs["M2p"].verbalize(src_h, q_h), ans_h).mean())
        # forgetting check: what each trained LIT decoder itself still knows about them, reading the text
        for r in ("M2p", "M2pp"):
            after = ZeroShotBaseline(lit[r].decoder_, tok, max_new_tokens=mnt)
            out["pc"][f"text_after_{r}"] = float(contains_match(after.verbalize(src_h, q_h), ans_h).mean())
    else:  # a world too small to hold anyone out
        for r in ("M2", "M2p", "M2pp"):
            keep(f"pc_{r}", [], [])
            out["pc"][r] = float("nan")
        out["pc"].update({k: float("nan") for k in ("text_M2p", "text_after_M2p", "text_after_M2pp")})
    # reading control (issue 37): the same held-out people with their facts stated in the read text; a decoder
    # that reads its activations answers the exception facts, one that answers from memory gives the stereotype
    read_h = [i for i in w.reading_items() if i.meta["exception"]]
    out["pcr"] = {}
    for r in ("M2", "M2p", "M2pp"):
        ok = contains_match(lit[r].verbalize([i.source for i in read_h], [i.question for i in read_h]),
                            [i.target for i in read_h]) if read_h else np.zeros(0, dtype=bool)
        keep(f"pcr_{r}", ok, [i.meta["persona"] for i in read_h])
        out["pcr"][r] = float(ok.mean()) if read_h else float("nan")
    # name recovery (claim 4): every paraphrase, both name tokens required (exact full-name match)
    def recovery(role: str, groups: tuple[str, ...]) -> float:
        its = [it for g in groups for it in w.name_items(g)]
        comp = lit[role].verbalize([i.source for i in its], NAME_QUESTION)
        ok = [c.strip().lower() == i.target.lower() for c, i in zip(comp, its)]
        keep(f"rec_{role}_{'real' if 'fantasy' not in groups else 'fantasy'}", ok, [i.meta["persona"] for i in its])
        return float(np.mean(ok))

    out["name_recovery"] = {"M2_real": recovery("M2", ("consistent", "shuffled")),
                            "M2p_fantasy": recovery("M2p", ("fantasy",)), "M2pp_fantasy": recovery("M2pp", ("fantasy",)),
                            "M2_fantasy": recovery("M2", ("fantasy",))}
    probe_m1, probe_b = _probe(M1, tok, w, cfg, seed), _probe(B, tok, w, cfg, seed)
    out["probe"] = {"M1": probe_m1["accuracy"], "B": probe_b["accuracy"], "n": probe_m1["n"],
                    "sites_M1": probe_m1["sites"], "sites_B": probe_b["sites"]}
    keep("probe_M1", probe_m1["correct"], probe_m1["groups"])
    keep("probe_B", probe_b["correct"], probe_b["groups"])
    # McNemar of LIT vs zero-shot in each condition, Bonferroni over the six
    keys = list(reports)
    ps = [mcnemar(reports[k]["correct_target"], reports[k]["zero_shot_correct"]) for k in keys]
    out["mcnemar_bonferroni"] = dict(zip(keys, bonferroni(ps)))
    out["inverter_train_accuracy"] = inverter.train_accuracy_
    out["items"] = scored
    out["time_s"] = time.perf_counter() - t0
    return out


# ------------------------------------------------------------------------------------------- claims
# Every verdict comes from icml26.common.stats: accuracies are bootstrapped over test items with whole clusters
# (one persona, subject or held-out person in one seed: its 4 attributes or 4 paraphrases are not independent)
# resampled, so the interval covers both items and seeds' personas. Paired statistics resample both arms' items
# together. A difference whose threshold is 0 gets an absolute resolution of 0.02 (one item in 50): the 2 %
# relative default would be 0 there.
DIFF_ATOL = 0.02
N_RESAMPLES = 1000
MEDIUM_HINT = ("`--scale medium` runs 8 seeds (about 2.7x the small run's items; ~12 min on 2 cores, less on CUDA) "
               "and the SmolLM2 LIT arm")


def _mean(xs) -> float:
    return float(np.mean(xs)) if len(xs) else float("nan")


def _fmt(xs) -> str:
    return "[" + ", ".join(f"{x:.3f}" for x in xs) + "]"


def _items(per_seed: list[dict], *keys: str) -> tuple[list[np.ndarray], np.ndarray]:
    """Per-item 0/1 arrays of `keys` (the same items for every key) pooled over seeds, and their cluster labels."""
    arrays = [np.concatenate([np.asarray(r["items"][k]["correct"], dtype=float) for r in per_seed]) for k in keys]
    clusters = np.concatenate([[f"{r['seed']}:{c}" for c in r["items"][keys[0]]["cluster"]] for r in per_seed])
    for k, a in zip(keys, arrays):
        if a.shape != clusters.shape:
            raise ValueError(f"items {k!r} and {keys[0]!r} are not scored on the same items")
    return arrays, clusters


def _interval(per_seed: list[dict], keys: tuple[str, ...], stat) -> tuple[float, stats.Interval]:
    arrays, cl = _items(per_seed, *keys)
    est = float(stat(*arrays)) if arrays[0].size else float("nan")
    if len(set(cl)) < 2:  # one cluster cannot bound anything
        return est, stats.Interval(-math.inf, math.inf, method="cluster-bootstrap", n=len(set(cl)), unit="clusters")
    return est, stats.bootstrap_interval(tuple(arrays), stat, paired=len(arrays) > 1, clusters=cl,
                                         n_resamples=N_RESAMPLES)


def _acc(key: str, per_seed: list[dict], threshold: float, direction: str, label: str, atol: float = 0.0):
    est, iv = _interval(per_seed, (key,), lambda a: a.mean())
    return stats.decide(est, iv, threshold, direction, atol=atol, label=label)


def _diff(keys: tuple[str, str], per_seed: list[dict], threshold: float, direction: str, label: str,
          w: float = 1.0):
    """Decision on mean(a) - w * mean(b) over the same items."""
    est, iv = _interval(per_seed, keys, lambda a, b: a.mean() - w * b.mean())
    return stats.decide(est, iv, threshold, direction, atol=DIFF_ATOL, label=label)


def _verdict_note(d: stats.Decision) -> str:
    """The decision in words, and for an inconclusive one what would decide it."""
    text = " " + d.text() + "."
    if d.verdict == "inconclusive" and not (d.interval and d.interval.method.startswith("not identified")):
        text += f" What would decide it: more items and seeds as the hint says; {MEDIUM_HINT}."
    return text


def _pc_ok(per_seed: list[dict], role: str) -> tuple[float, str]:
    pc = _mean([r["pc"][role] for r in per_seed])
    pcr = _mean([r["pcr"][role] for r in per_seed]) if all("pcr" in r for r in per_seed) else float("nan")
    read = ("" if math.isnan(pcr) else
            f"it {'passed' if pcr >= PC_MIN else 'FAILED'} the reading control (claim PCr: {pcr:.2f} of held-out "
            f"people's exception facts stated in the read text) and ")
    return pc, (read + (f"it passed the retrieval control (claim PC: {pc:.2f} of held-out exception facts known "
                        f"from text only)" if pc >= PC_MIN else
                        f"it FAILED the retrieval control (claim PC: {pc:.2f} < {PC_MIN} of held-out exception facts "
                        f"known from text only), so a failure here says little about the paper"))


def _given_retrieval(d: stats.Decision, per_seed: list[dict], role: str) -> stats.Decision:
    """A failure of a part of claim 1 or 3e that retrieval explains only counts when the decoder `role` passed the
    retrieval control PC.

    `d` is such a part (claim 1's belief >= 0.5 and belief >= 3 x target; 3e's LIT - control >= -0.10): a decoder
    that cannot retrieve what the verbalizer knows (PC not held, or not yet decided) fails it whatever the paper's
    effect, so its "not held" becomes inconclusive, with the unbounded interval of an effect our instrument does not
    identify and a hint naming what would decide it. A "held" stands, and so does anything when PC held. Parts that
    retrieval cannot explain (the decoder reporting the target's facts; LIT above the control) are not wrapped:
    their failure is evidence whatever PC says.
    """
    pc = _acc(f"pc_{role}", per_seed, PC_MIN, ">=", f"{role} retrieval")
    if d.verdict != "not held" or pc.verdict == "held":
        return d
    n = d.interval.n if d.interval is not None else 0
    unit = d.interval.unit if d.interval is not None else "clusters"
    iv = stats.Interval(-math.inf, math.inf, method="not identified (retrieval control PC failed)", n=n, unit=unit)
    hint = (f"not held on its numbers ({d.text()}), but the {role} decoder "
            f"{'failed' if pc.verdict == 'not held' else 'did not clearly pass'} the retrieval control PC "
            f"({pc.estimate:.2f} vs >= {PC_MIN}), so it measures our decoder, not the paper: a decoder that passes "
            f"PC decides it. In this toy none of the docs' pilots (depth, width, LIT length, rehearsal, input maps, "
            f"identity-rich LIT data) passes PC; the real-LM LoRA arm (claim RP, in medium: 2 seeds x 32 personas, "
            f"fine-tunes that store the facts) retrieves about half of what its model knows (PC at the bar in the "
            f"docs' pilots), so a better real decoder is the open path)")
    # the verdict comes from stats.decide on the unidentified interval; only its hint says why it is unbounded
    return dataclasses.replace(stats.decide(d.estimate, iv, d.threshold, d.direction, label=d.label), hint=hint)


def _control(per_seed: list[dict], key: str, what: str, label: str) -> tuple[stats.Decision, dict[str, list]]:
    """A control of both knowledge decoders ("pcr" reading, "pc" retrieval): each of M2' and M2'' >= PC_MIN on its
    items; returns the decision and the per-seed accuracies of M2, M2' and M2''."""
    d = stats.all_of(*(_acc(f"{key}_{r}", per_seed, PC_MIN, ">=", f"{r} {what}") for r in ("M2p", "M2pp")),
                     label=label)
    return d, {r: [x[key][r] for x in per_seed] for r in ("M2", "M2p", "M2pp")}


def claim_reading_control(per_seed: list[dict]) -> Claim:
    """PCr (sanity, positive control): LIT reads facts that are in its activations' source, about people it never
    saw in LIT training (issue 37)."""
    d, val = _control(per_seed, "pcr", "reading", "PCr")
    return Claim(
        id="PCr", statement="Reading control: the LIT decoder answers facts stated in the text its activations come "
                            "from, about people it never saw in LIT training.",
        metric="held-out generic people, source 'NAME likes V .' stating one of their exception facts (not the "
               "name's stereotype), asked back: LIT accuracy of the M2' and M2'' decoders reading M1",
        measured={"M2p": _mean(val["M2p"]), "M2pp": _mean(val["M2pp"]), "M2": _mean(val["M2"])},
        threshold=f">= {PC_MIN} for both", decision=d, kind="sanity",
        paper="n/a (a precondition of claims 1 and 3e, added for issue 37)",
        per_seed=[_mean([a, b]) for a, b in zip(val["M2p"], val["M2pp"])],
        details=f"per seed LIT M2' {_fmt(val['M2p'])}, M2'' {_fmt(val['M2pp'])}, M2 {_fmt(val['M2'])}; "
                f"{per_seed[0]['items']['pcr_M2p']['n']} exception items per seed. LIT training has reading rows "
                f"(a fact-free name with a random real value stated, asked back), never about these people. Can "
                f"fail: a decoder that does not read its activations answers the name's stereotype or a training "
                f"person's value. Passing it shows the decoder reads what is in the activations; claim PC asks the "
                f"harder question, retrieval of knowledge the text does not state." + _verdict_note(d))


def claim_positive_control(per_seed: list[dict]) -> Claim:
    """PC: LIT reads its own text-only knowledge about people it never saw in LIT training (issue 37)."""
    d, txt = _control(per_seed, "pc", "retrieval", "PC")
    zs = [x["pc"]["text_M2p"] for x in per_seed]
    after = {r: [x["pc"].get(f"text_after_{r}", float("nan")) for x in per_seed] for r in ("M2p", "M2pp")}
    return Claim(
        id="PC", statement="Positive control: the LIT decoder answers from its own text-only knowledge about people "
                           "it never saw in LIT training (what claims 1 and 3e need it to be able to do).",
        metric="held-out generic people (in the base corpus only, never in LIT training), exception facts (not the "
               "name's stereotype): LIT accuracy of the M2' and M2'' decoders reading M1",
        measured={"M2p": _mean(txt["M2p"]), "M2pp": _mean(txt["M2pp"]), "M2": _mean(txt["M2"]),
                  "text_mode_M2p": _mean(zs), "text_mode_after_LIT_M2p": _mean(after["M2p"]),
                  "text_mode_after_LIT_M2pp": _mean(after["M2pp"])},
        threshold=f">= {PC_MIN} for both", decision=d, kind="gate",
        paper="(positive control added for issue 37; the paper's LIT decoders answer world-knowledge questions)",
        per_seed=[_mean([a, b]) for a, b in zip(txt["M2p"], txt["M2pp"])],
        details=f"per seed LIT M2' {_fmt(txt['M2p'])}, M2'' {_fmt(txt['M2pp'])}, M2 {_fmt(txt['M2'])}; the knowledge "
                f"model M2'-FT in text mode {_fmt(zs)} (the ceiling); the trained LIT decoders themselves in text mode "
                f"(forgetting check) M2' {_fmt(after['M2p'])}, M2'' {_fmt(after['M2pp'])}. "
                f"{per_seed[0]['items']['pc_M2p']['n']} exception items per seed. Can fail: a decoder that memorised "
                f"its training people answers the name's stereotype here." + _verdict_note(d))


def claim_mismatch(per_seed: list[dict]) -> Claim:
    """Claim 1, condition (d): LIT M2' follows its own facts F2, not the target's F1."""
    chance = per_seed[0]["d"]["chance"]
    p_bel = _given_retrieval(_acc("d_belief", per_seed, BELIEF_MIN, ">=", "belief >= 0.5"), per_seed, "M2p")
    p_tgt = _acc("d_target", per_seed, chance + CHANCE_MARGIN, "<=", "target <= chance + 0.10")
    p_ratio = _given_retrieval(_diff(("d_belief", "d_target"), per_seed, 0.0, ">=", "belief - 3 x target >= 0",
                                     w=BELIEF_RATIO), per_seed, "M2p")
    d = stats.all_of(p_bel, p_tgt, p_ratio, label="1")
    bel = [r["d"]["acc_verbalizer_belief"] for r in per_seed]
    tgt = [r["d"]["acc_target"] for r in per_seed]
    return Claim(
        id="1", statement="Under a knowledge mismatch, verbalizations follow the verbalizer's knowledge, not the "
                          "target's (PersonaQA-Fantasy, verbalizer taught other facts).",
        metric="condition (d), LIT M2' reading M1: accuracy against M2''s facts F2 (belief) and M1's facts F1",
        measured={"belief": _mean(bel), "target": _mean(tgt), "chance": chance},
        threshold=f"belief >= {BELIEF_MIN}, target <= chance + {CHANCE_MARGIN} = {chance + CHANCE_MARGIN:.3f}, "
                  f"belief >= {BELIEF_RATIO:g} x target",
        decision=d, kind="gate", per_seed=bel,
        paper="Fantasy: verbalization 0 % of the target's facts; with the verbalizer taught the personas it reaches "
              "18-72 % (what the verbalizer knows, not the target) (s)",
        details=f"per seed belief {_fmt(bel)}, target {_fmt(tgt)}; {_pc_ok(per_seed, 'M2p')[1]}. Can fail: belief "
                f">= 0.5 needs LIT-mode retrieval of the verbalizer's own persona facts; target <= chance + 0.10 "
                f"fails if the decoder reads F1 from M1's activations." + _verdict_note(d))


def claim_present_not_verbalized(per_seed: list[dict]) -> Claim:
    """Claim 2, condition (c): a probe finds F1 in M1 (more than in B), while the unaware verbalizer is at chance."""
    chance = per_seed[0]["c"]["chance"]
    p_self = _acc("c_self", per_seed, SELF_MIN, ">=", "self-report >= 0.9 (sanity)")
    p_probe = _acc("probe_M1", per_seed, PROBE_MIN, ">=", f"probe M1 >= {PROBE_MIN} (the paper's ~25 %)")
    p_gap = _diff(("probe_M1", "probe_B"), per_seed, 0.0, ">=", "probe M1 - probe B >= 0")
    p_lit = _acc("c_target", per_seed, chance + CHANCE_MARGIN, "<=", "LIT <= chance + 0.10 (sanity)")
    d = stats.all_of(p_self, p_probe, p_gap, p_lit, label="2")
    sr, pm, pb, lt = ([r[k][j] for r in per_seed] for k, j in (("c", "self_report"), ("probe", "M1"),
                                                               ("probe", "B"), ("c", "acc_target")))
    return Claim(
        id="2", statement="Information present in the target's activations is not verbalized: a linear probe on M1 "
                          "decodes the fantasy facts (more than on the base model) while the verbalizer stays at "
                          "chance.",
        metric="condition (c): M1 self-report, persona-split probe accuracy on M1 and on B (same probe, lr/l2 tuned "
               "by inner CV for both), LIT M2 accuracy",
        measured={"self_report": _mean(sr), "probe_M1": _mean(pm), "probe_B": _mean(pb), "lit_target": _mean(lt),
                  "chance": chance},
        threshold=f"self-report >= {SELF_MIN}, probe M1 >= {PROBE_MIN} and > probe B, LIT <= chance + "
                  f"{CHANCE_MARGIN}",
        decision=d, kind="gate", per_seed=pm,
        paper="Fantasy: verbalization 0 % while a linear probe on the target reaches ~25 % (s)",
        details=f"per seed self-report {_fmt(sr)}, probe M1 {_fmt(pm)}, probe B (never saw the facts) {_fmt(pb)}, "
                f"LIT {_fmt(lt)}; {per_seed[0]['probe']['n']} probe predictions per seed (fantasy personas x 4 "
                f"paraphrases x attributes, persona-split folds; read site and l2 picked by inner CV on the training "
                f"folds, for M1 and B alike; M1 sites {per_seed[0]['probe']['sites_M1']}). Threshold amended "
                f"(issue 37): the spec's chance + 0.25 = {chance + 0.25:.3f} was above the paper's own figure (~25 %), "
                f"so the bar is the paper's 0.25, plus the control: the probe on M1 must beat the same probe on B. "
                f"Sanity parts (hold by construction or nearly): self-report (the interviews contain the eval line, "
                f"review note 2) and LIT <= chance (M2 never saw a fantasy value)." + _verdict_note(d))


def claim_feature_extraction(per_seed: list[dict]) -> Claim:
    p_gap = _diff(("f_zs", "f_lit"), per_seed, -FE_TOL, ">=", "zero-shot - LIT >= -0.05")
    p_lit = _acc("f_lit", per_seed, LIT_MIN, ">=", "LIT >= 0.7")
    d = stats.all_of(p_gap, p_lit, label="3f")
    zs, li, ctrl = ([r["f"][k] for r in per_seed] for k in ("zero_shot", "acc_target", "recovered_input_zero_shot"))
    return Claim(
        id="3f", statement="Feature-extraction benchmarks are solvable without the target's internals: the "
                           "input-only baseline matches the verbalizer.",
        metric="condition (f), held-out relation subjects whose question format never occurs in the corpus: "
               "zero-shot M2 vs LIT M2 accuracy",
        measured={"zero_shot": _mean(zs), "lit": _mean(li), "recovered_input_zero_shot": _mean(ctrl)},
        threshold=f"zero_shot >= LIT - {FE_TOL} and LIT >= {LIT_MIN}", decision=d, kind="gate", per_seed=zs,
        paper="six feature-extraction tasks, Llama-3.1-8B: zero-shot 0.64 vs LIT 0.64 (Ministral 0.68 vs 0.61) (s)",
        details=f"per seed zero-shot {_fmt(zs)}, LIT {_fmt(li)}, zero-shot on the subject LIT recovered {_fmt(ctrl)}. "
                f"Rewritten for issue 37: the evaluated subjects' QA lines are held out of the base corpus (it has "
                f"only their fact sentence 'the R of S is O .'), so neither arm can pass by recalling a corpus line "
                f"verbatim. Both parts can fail." + _verdict_note(d))


def claim_consistent(per_seed: list[dict]) -> Claim:
    d = _acc("a_zs", per_seed, ZS_MIN, ">=", "zero-shot >= 0.7")
    zs, li = ([r["a"][k] for r in per_seed] for k in ("zero_shot", "acc_target"))
    return Claim(
        id="3a", statement="PersonaQA with name-consistent attributes is solvable from the input alone.",
        metric="condition (a): zero-shot M2 (no activations) accuracy against M1's facts",
        measured={"zero_shot": _mean(zs), "lit": _mean(li)}, threshold=f"zero_shot >= {ZS_MIN}", decision=d,
        kind="gate", per_seed=zs,
        paper="PersonaQA (attributes plausible from the name) is answerable without the target's internals (s)",
        details=f"per seed zero-shot {_fmt(zs)}, LIT {_fmt(li)}. Can fail if the base model's stereotype prior is "
                f"weak." + _verdict_note(d))


def claim_shared(per_seed: list[dict]) -> Claim:
    lo = _given_retrieval(_diff(("e_lit", "e_ctrl"), per_seed, -SHARED_TOL, ">=", "LIT - control >= -0.10"),
                          per_seed, "M2pp")
    hi = _diff(("e_lit", "e_ctrl"), per_seed, SHARED_TOL, "<=", "LIT - control <= 0.10")
    d = stats.all_of(lo, hi, label="3e")
    li, ctrl, raw = ([r["e"][k] for r in per_seed] for k in ("acc_target", "recovered_input_zero_shot", "zero_shot"))
    return Claim(
        id="3e", statement="When the verbalizer shares the target's knowledge, verbalization is explained by "
                           "'input recovered from the activations + the verbalizer's own knowledge'.",
        metric="condition (e): LIT M2'' - zero-shot M2'' on the name M2'' recovered (raw zero-shot reported)",
        measured={"lit": _mean(li), "recovered_input_zero_shot": _mean(ctrl), "zero_shot": _mean(raw),
                  "gap": _mean(li) - _mean(ctrl)},
        threshold=f"|LIT - control| <= {SHARED_TOL}", decision=d, kind="gate",
        per_seed=[a - b for a, b in zip(li, ctrl)],
        paper="inverted text + zero-shot ~0.79 vs LIT ~0.78 (s); shared persona knowledge: verbalization 18-72 %",
        details=f"per seed LIT {_fmt(li)}, control {_fmt(ctrl)}, raw zero-shot {_fmt(raw)}; "
                f"{_pc_ok(per_seed, 'M2pp')[1]}. Can fail in both directions (LIT above the control would mean "
                f"privileged reading, below it a decoder that cannot use its knowledge)." + _verdict_note(d))


def claim_recovery(per_seed: list[dict]) -> Claim:
    d = stats.all_of(_acc("rec_M2_real", per_seed, RECOVERY_MIN, ">=", "M2 on real-culture personas"),
                     _acc("rec_M2p_fantasy", per_seed, RECOVERY_MIN, ">=", "M2' on fantasy personas"), label="4")
    real = [r["name_recovery"]["M2_real"] for r in per_seed]
    fan = [r["name_recovery"]["M2p_fantasy"] for r in per_seed]
    return Claim(
        id="4", statement="Sanity: the verbalizers decode the name from the target's activations (otherwise a "
                          "failure of claim 1 is uninformative).",
        metric="exact full-name recovery ('what name is in the text ?'), all 4 paraphrases per persona",
        measured={"M2_real_personas": _mean(real), "M2p_fantasy_personas": _mean(fan)},
        threshold=f">= {RECOVERY_MIN} for both", decision=d, kind="gate", per_seed=real,
        paper="(toy sanity check of spec 6; no paper figure)",
        details=f"per seed M2 on real-culture personas {_fmt(real)}, M2' on fantasy personas {_fmt(fan)}; persona "
                f"names never occur in LIT training, whose name-recovery rows are balanced (one row per name, as "
                f"many within-culture names as fantasy pairings; issue 37)." + _verdict_note(d))


def claim_shuffled(per_seed: list[dict]) -> Claim:
    chance = per_seed[0]["b"]["chance"]
    d = stats.all_of(_acc("b_target", per_seed, chance + CHANCE_MARGIN, "<=", "target <= chance + 0.10"),
                     _diff(("b_belief", "b_target"), per_seed, 0.0, ">=", "stereotype - 3 x target >= 0",
                           w=BELIEF_RATIO), label="S")
    bel, tgt = ([r["b"][k] for r in per_seed] for k in ("acc_verbalizer_belief", "acc_target"))
    return Claim(
        id="S", statement="PersonaQA-Shuffled: verbalization falls to chance on the target's facts and follows the "
                          "verbalizer's stereotype instead.",
        metric="condition (b), LIT M2: accuracy against M1's shuffled facts and against the name's stereotype",
        measured={"target": _mean(tgt), "stereotype": _mean(bel), "chance": chance},
        threshold=f"target <= chance + {CHANCE_MARGIN} and stereotype >= {BELIEF_RATIO:g} x target", decision=d,
        kind="report", per_seed=tgt, paper="PersonaQA-Shuffled: verbalization at chance (s)",
        details=f"per seed target {_fmt(tgt)}, stereotype {_fmt(bel)}; self-report M1 "
                f"{_fmt([r['b']['self_report'] for r in per_seed])}. Report-only (not a spec gate)." + _verdict_note(d))


def claim_patchscopes(per_seed: list[dict]) -> Claim:
    bel = [r["d"]["patchscopes"]["belief"]["any_layer"] for r in per_seed]
    tgt = [r["d"]["patchscopes"]["target"]["any_layer"] for r in per_seed]
    # per seed, one number per arm (the any-layer summary has no per-item form): a paired t interval over seeds
    d = stats.decide(_mean(bel) - _mean(tgt), stats.paired_t_interval(bel, tgt), 0.0, ">=", atol=DIFF_ATOL)
    grid = per_seed[0]["d"]["patchscopes"]["belief"]["grid"]
    return Claim(
        id="P", statement="Patchscopes under knowledge mismatch also follows the verbalizer (expected direction).",
        metric="condition (d), Patchscopes M1 -> M2' knowledge model, correct at ANY target layer averaged over "
               "source layers: against F2 (belief) minus against F1 (target)",
        measured={"belief_any_layer": _mean(bel), "target_any_layer": _mean(tgt)}, threshold="belief - target > 0",
        decision=d, kind="report", per_seed=[a - b for a, b in zip(bel, tgt)],
        paper="Patchscopes 0.38 (Llama) / 0.27 (Ministral) on feature extraction (s)",
        details=f"per seed belief {_fmt(bel)}, target {_fmt(tgt)}; seed-0 (ls,lt) grid against F2 {grid}. Report-only "
                f"(spec: training-free patching in a 2-layer toy may be weak)." + _verdict_note(d))


def claim_real_lit(res: dict) -> Claim:
    """RL: the positive control on a real LM (report-only): a LoRA LIT decoder on SmolLM2 answers currency and
    capital questions about countries it never saw in LIT training, from their activations."""
    ok = np.asarray(res["lit_correct"], dtype=float)
    cl = np.asarray(res["clusters"])
    if len(set(cl.tolist())) < 2:
        iv = stats.Interval(-math.inf, math.inf, method="cluster-bootstrap", n=len(set(cl.tolist())), unit="clusters")
    else:
        iv = stats.bootstrap_interval(ok, clusters=cl, n_resamples=N_RESAMPLES)
    d = stats.decide(float(ok.mean()), iv, PC_MIN, ">=", label="LIT on held-out countries >= 0.5")
    return Claim(
        id="RL", statement="Positive control on a real LM: a LoRA LIT decoder on SmolLM2-135M retrieves its own "
                           "pre-training knowledge about countries it never saw in LIT training.",
        metric="currency and capital of held-out countries ('I visited {country}' read at layer "
               f"{res['read_layer']}, written at layer {res['write_layer']}): LIT accuracy (zero-shot reported)",
        measured={"lit_heldout": res["lit_heldout"], "zero_shot_heldout": res["zero_shot_heldout"],
                  "lit_train": res["lit_train"], "country_recovery_heldout": res["country_recovery_heldout"]},
        threshold=f">= {PC_MIN} (the PC bar)", decision=d, kind="report",
        paper="(the real counterpart of PC; the paper's LIT decoders answer world-knowledge questions: LIT 0.64 on "
              "feature extraction, Llama-3.1-8B (s))",
        details=f"{res['n_train']} training countries, {res['n_held']} held out ({len(ok)} items, clustered by "
                f"country); LoRA rank {res['lora_rank']}, {res['steps']} steps; the decoder fits its training "
                f"countries ({res['lit_train']:.2f}) and names the held-out country from its activations "
                f"({res['country_recovery_heldout']:.2f}); the model itself reading the text (zero-shot) "
                f"{res['zero_shot_heldout']:.2f}, the ceiling. Report-only (`--scale medium` or --set "
                f"real_lm_lit=true)." + _verdict_note(d))


def claim_real_persona(res: dict | list[dict]) -> Claim:
    """RP: claims 1 and 3e asked of a real decoder (report-only): SmolLM2 taught knowledge-controlled personas,
    LoRA LIT decoders of the knowledge models reading M1, and their own positive control (issue 37).

    `res` is one `lit_persona_arm` result or a list of them (one per seed, the same sizes); a list pools the items
    of every seed, each seed's personas and held-out people their own clusters."""
    rs = [res] if isinstance(res, dict) else list(res)
    if not rs or not all(isinstance(r, dict) for r in rs):
        raise TypeError("res must be a lit_persona_arm result (dict) or a non-empty list of them")
    seeds = [r["seed"] for r in rs]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"res: the results must come from distinct seeds, got {seeds}")
    shape = {(r["n_personas"], r["n_heldout"], r["n_train_people"], r["ft_steps"], r["lit_steps"],
              r["read_layer"], r["write_layer"], r["chance"]) for r in rs}
    if len(shape) != 1:
        raise ValueError("res: the results must share sizes, steps, layers and chance (one arm, several seeds)")
    r0, chance = rs[0], rs[0]["chance"]
    acc = {k: float(np.mean([r["accuracy"][k] for r in rs])) for k in r0["accuracy"]}
    acc.update({k: float(_items(rs, k)[0][0].mean()) for k in r0["items"]})  # scored items: pooled over seeds
    parts = [_acc("pc_M2p", rs, PC_MIN, ">=", "PC: M2' on held-out people >= 0.5"),
             _acc("pc_M2pp", rs, PC_MIN, ">=", "PC: M2'' on held-out people >= 0.5"),
             _acc("d_belief", rs, BELIEF_MIN, ">=", "1: belief >= 0.5"),
             _acc("d_target", rs, chance + CHANCE_MARGIN, "<=", "1: target <= chance + 0.10"),
             _diff(("d_belief", "d_target"), rs, 0.0, ">=", "1: belief - 3 x target >= 0", w=BELIEF_RATIO),
             _diff(("e_lit", "e_ctrl"), rs, -SHARED_TOL, ">=", "3e: LIT - control >= -0.10"),
             _diff(("e_lit", "e_ctrl"), rs, SHARED_TOL, "<=", "3e: LIT - control <= 0.10")]
    d = stats.all_of(*parts, label="RP")
    pc_ok = all(p.verdict == "held" for p in parts[:2])
    n_p, n_h = len(rs) * r0["n_personas"], len(rs) * r0["n_heldout"]
    note = _verdict_note(d)
    if d.verdict == "inconclusive":  # the toy's hint (8 toy seeds) does not apply to this arm
        note = " " + d.text() + (f". What would decide it: more personas and held-out people (now {n_p} / {n_h} "
                                 f"clusters; real_lm_persona_n_personas / _n_heldout, or more "
                                 f"real_lm_persona_seeds), with fine-tune steps scaled to the data.")
    return Claim(
        id="RP", statement="Claims 1 and 3e on a real LM: SmolLM2 LoRA LIT decoders follow their own model's "
                           "persona knowledge (d), and with shared knowledge match 'recovered name + zero-shot' "
                           "(e), after passing their own positive control.",
        metric=f"fantasy personas taught to SmolLM2-135M by LoRA fine-tunes (M1: F1, M2'-FT: F2, M2''-FT = M1); "
               f"LoRA LIT decoders read M1 at layer {r0['read_layer']}, write at layer {r0['write_layer']}: PC on "
               f"held-out generic people, (d) M2' vs F2 / F1, (e) M2'' - zero-shot M1 on the name M2'' recovered",
        measured={"pc_M2p": acc["pc_M2p"], "pc_M2pp": acc["pc_M2pp"], "pc_text_M2p": acc["pc_text_M2p"],
                  "belief": acc["d_belief"], "target": acc["d_target"], "lit_e": acc["e_lit"],
                  "control_e": acc["e_ctrl"], "self_report_M1": acc["self_M1"], "chance": chance},
        threshold=f"PC >= {PC_MIN} for both decoders; belief >= {BELIEF_MIN}, target <= chance + {CHANCE_MARGIN}, "
                  f"belief >= {BELIEF_RATIO:g} x target; |LIT - control| <= {SHARED_TOL}",
        decision=d, kind="report",
        paper="Fantasy with the verbalizer taught the personas: verbalization 18-72 %, what the verbalizer knows, "
              "not the target (s); inverted text + zero-shot ~0.79 vs LIT ~0.78 (s)",
        details=f"seed{'s' if len(rs) > 1 else ''} {', '.join(map(str, seeds))}: {r0['n_personas']} personas x "
                f"{len(r0['attributes'])} attributes (clusters: personas), {r0['n_heldout']} held-out people "
                f"({r0['n_train_people']} LIT training people)" + (" per seed" if len(rs) > 1 else "") +
                f"; fine-tunes LoRA rank {r0['ft_rank']}, {r0['ft_steps']} steps; decoders LoRA rank "
                f"{r0['lit_rank']}, {r0['lit_steps']} steps. Sanity: M1 self-report on F1 {acc['self_M1']:.2f}, "
                f"M2'-FT on F2 in text mode {acc['text_M2p']:.2f}, text-mode ceilings on the held-out people "
                f"M2'-FT {acc['pc_text_M2p']:.2f} / M1 {acc['pc_text_M1']:.2f}; decoders on their training people "
                f"M2' {acc['train_M2p']:.2f} / M2'' {acc['train_M2pp']:.2f}; name recovery on personas M2' "
                f"{acc['rec_M2p']:.2f} / M2'' {acc['rec_M2pp']:.2f}. "
                + ("The decoders passed their positive control, so parts 1 and 3e are informative. " if pc_ok else
                   "The decoders did NOT pass their positive control, so parts 1 and 3e say little about the "
                   "paper. ") + "Report-only (`--scale medium` or --set real_lm_persona=true)." + note)


# ------------------------------------------------------------------------------------------- figures
_COND = {"a": "(a) consistent", "b": "(b) shuffled", "c": "(c) fantasy\nM2 unaware", "d": "(d) fantasy\nM2' mismatch",
         "e": "(e) fantasy\nM2'' shared", "f": "(f) feature\nextraction"}


def _fig_conditions(per_seed: list[dict]):
    fig, ax = new_figure(width=9.0, height=3.8)
    series = [("LIT vs target facts", lambda r, k: r[k]["acc_target"]),
              ("LIT vs verbalizer facts", lambda r, k: r[k].get("acc_verbalizer_belief", float("nan"))),
              ("input-only (zero-shot)", lambda r, k: r[k]["zero_shot"]),
              ("target self-report", lambda r, k: r[k]["self_report"])]
    keys = list(_COND)
    width = 0.2
    for j, (name, get) in enumerate(series):
        vals = np.array([[get(r, k) for k in keys] for r in per_seed], dtype=float)  # NaN: no such series
        mean = vals.mean(0)
        sd = vals.std(0) if len(per_seed) > 1 else None
        ax.bar(np.arange(len(keys)) + (j - 1.5) * width, np.nan_to_num(mean), width,
               yerr=None if sd is None else np.nan_to_num(sd), capsize=2, label=name)
    ax.set_xticks(range(len(keys)), [_COND[k] for k in keys], fontsize=7)
    ax.set_ylabel("accuracy (substring match)")
    ax.set_ylim(0, 1.05)
    ax.set_title("Verbalizations vs the target's and the verbalizer's facts (mean +- sd over seeds)")
    ax.legend(fontsize=7, ncol=2)
    return fig


def _fig_probe(per_seed: list[dict], chance: float):
    fig, ax = new_figure(width=4.5)
    for i, (name, key) in enumerate((("probe on M1", "M1"), ("probe on B (control)", "B"))):
        vals = [r["probe"][key] for r in per_seed]
        ax.bar(i, np.mean(vals), yerr=np.std(vals) if len(vals) > 1 else None, capsize=4)
        ax.scatter([i] * len(vals), vals, color="k", s=10, zorder=3)
    lit = [r["c"]["acc_target"] for r in per_seed]
    ax.bar(2, np.mean(lit))
    ax.axhline(chance, color="k", ls="--", lw=0.8, label="chance")
    ax.set_xticks(range(3), ["probe M1", "probe B", "LIT M2"])
    ax.set_ylabel("accuracy on fantasy facts F1")
    ax.set_title("(c) present but not verbalized")
    ax.legend(fontsize=7)
    return fig


# ------------------------------------------------------------------------------------------- scheduling
_JOBS = {"base": train_base_job, "finetune": finetune_job, "lit": lit_job, "eval": evaluate_job}


def dispatch_job(kind: str, kwargs: dict) -> dict:
    """One job of any stage (module level, so a worker process can run it)."""
    return _JOBS[kind](**kwargs)


_STAGE = {"B": 0, "M1": 1, "M2p": 1, "LIT_M2": 2, "LIT_M2p": 2, "LIT_M2pp": 2, "eval": 3}
_KINDS = {"B": "base", "M1": "finetune", "M2p": "finetune", "LIT_M2": "lit", "LIT_M2p": "lit", "LIT_M2pp": "lit",
          "eval": "eval"}


def job_graph(cfg: dict, seeds: list[int]) -> tuple[dict, dict]:
    """(jobs, deps) for `common.parallel.run_graph`: per seed B -> (M1, M2'-FT) -> (LIT M2, LIT M2', LIT M2'')
    -> evaluation. Each job is built from its dependencies' results (their trained weights). M2''-FT is M1: the
    spec trains it with M1's exact recipe (B + F1 mixed with C0), so the same weights serve both."""
    reader = "M1" if cfg["lit_read"] == "target" else "B"
    lit_spec = {"LIT_M2": ("B", None, "M2"), "LIT_M2p": ("M2p", "mismatch", "M2p"),
                "LIT_M2pp": ("M1", "target", "M2pp")}
    jobs, deps = {}, {}
    for s in seeds:
        jobs[(s, "B")] = {"kind": "base", "kwargs": {"seed": s, "cfg": cfg}}
        for name in ("M1", "M2p"):
            deps[(s, name)] = [(s, "B")]
            jobs[(s, name)] = (lambda inp, s=s, name=name: {"kind": "finetune", "kwargs": {
                "seed": s, "cfg": cfg, "base_state": inp[(s, "B")]["state"],
                "facts": "target" if name == "M1" else "mismatch", "role": name}})
        for name, (dec, reh, role) in lit_spec.items():
            deps[(s, name)] = list(dict.fromkeys([(s, dec), (s, reader)]))
            jobs[(s, name)] = (lambda inp, s=s, dec=dec, reh=reh, role=role: {"kind": "lit", "kwargs": {
                "seed": s, "cfg": cfg, "decoder_state": inp[(s, dec)]["state"],
                "read_state": inp[(s, reader)]["state"], "rehearsal": reh, "role": role}})
        need = ("B", "M1", "M2p", "LIT_M2", "LIT_M2p", "LIT_M2pp")
        deps[(s, "eval")] = [(s, n) for n in need]
        jobs[(s, "eval")] = (lambda inp, s=s: {"kind": "eval", "kwargs": {"seed": s, "cfg": cfg, "states": {
            **{n: inp[(s, n)]["state"] for n in need}, "M2pp": inp[(s, "M1")]["state"],
            **{f"adapter_{n}": inp[(s, n)].get("adapter") for n in need if n.startswith("LIT_")}}}})
    return jobs, deps


def _run_jobs(cfg: dict, seeds: list[int], workers: int | None, timings: dict) -> dict:
    """Every job on one pool of single-thread workers, each started once its inputs exist; a free worker takes the
    ready job of the earliest stage (base models first: everything waits on them), then the lowest seed. Each job
    seeds itself, so the results do not depend on the order or the worker count."""
    from icml26.common.parallel import run_graph

    jobs, deps = job_graph(cfg, seeds)
    schedule: list[dict] = []
    t0 = time.perf_counter()
    done = run_graph(dispatch_job, jobs, deps, workers=workers, priority=lambda k: (_STAGE[k[1]], k[0]),
                     desc="verbalization jobs", schedule=schedule)
    timings["jobs_wall_s"] = time.perf_counter() - t0
    timings["workers"] = min(workers or __import__("icml26.common.parallel", fromlist=["x"]).default_workers(),
                             len(jobs))
    timings["schedule"] = [{"job": k[1], "seed": k[0], "start_s": r["start_s"], "end_s": r["end_s"]}
                           for r in schedule for k in [r["job"]]]
    return done


# ------------------------------------------------------------------------------------------- run
def run(config: dict) -> Result:
    """Run the reproduction for `config` (one of CONFIGS plus "scale"); see the module docstring."""
    scale = config.get("scale", "small")
    if scale == "paper":
        from icml26.verbalization.scale import run_paper

        return run_paper(config)
    validate_config(config)
    t0 = time.perf_counter()
    cfg = {k: v for k, v in config.items() if k != "scale"}
    seeds = [int(s) for s in cfg["seeds"]]
    workers = cfg["workers"] or None
    timings: dict[str, float] = {}

    results = _run_jobs(cfg, seeds, workers, timings)
    per_seed = [results[(s, "eval")] for s in seeds]
    base = [results[(s, "B")] for s in seeds]
    fts = [results[(s, r)] for s in seeds for r in ("M1", "M2p")]
    lits = [results[(s, f"LIT_{r}")] for s in seeds for r in ("M2", "M2p", "M2pp")]

    claims = [claim_reading_control(per_seed), claim_positive_control(per_seed), claim_mismatch(per_seed),
              claim_present_not_verbalized(per_seed),
              claim_feature_extraction(per_seed), claim_consistent(per_seed), claim_shared(per_seed),
              claim_recovery(per_seed), claim_shuffled(per_seed), claim_patchscopes(per_seed)]
    metrics: dict[str, Any] = {
        "per_seed": per_seed, "timings": timings,
        "losses": {"B": [b["loss"] for b in base], **{f"{r['role']}_seed{r['seed']}": r["loss"] for r in fts},
                   **{f"LIT_{r['role']}_seed{r['seed']}": r["loss"] for r in lits}},
        "job_time_s": {"base": [b["time_s"] for b in base], "finetune": [r["time_s"] for r in fts],
                       "lit": [r["time_s"] for r in lits], "eval": [r["time_s"] for r in per_seed]},
    }
    if cfg["real_lm"]:
        from icml26.verbalization.real_lm import smollm2_patchscopes

        t = time.perf_counter()
        real = smollm2_patchscopes(cfg["real_lm_facts"], cfg["real_lm_source_layers"], cfg["real_lm_target_layers"],
                                   cfg["real_lm_max_new_tokens"])
        timings["real_lm_s"] = time.perf_counter() - t
        metrics["real_lm"] = real
        zs_ok = np.asarray(real["zero_shot_correct"], dtype=float)
        ps_ok = np.asarray(real["patchscopes_correct"], dtype=float)
        est, iv = float(zs_ok.mean() - ps_ok.mean()), stats.bootstrap_interval(
            (zs_ok, ps_ok), lambda a, b: a.mean() - b.mean(), paired=True, n_resamples=N_RESAMPLES)
        d_real = stats.decide(est, iv, -0.05, ">=", atol=DIFF_ATOL)
        claims.append(Claim(
            id="R", statement="On a real LM (SmolLM2-135M-Instruct, M1 = M2) the input-only baseline matches or "
                              "beats Patchscopes on real feature extraction.",
            metric="country -> currency/capital facts: zero-shot vs Patchscopes (any target layer, mean over source "
                   "layers)",
            measured={"zero_shot": real["zero_shot"], "patchscopes_any_layer": real["patchscopes"]["any_layer"]},
            threshold="zero_shot - patchscopes >= -0.05", decision=d_real, kind="report",
            paper="Llama-3.1-8B: zero-shot 0.64 vs Patchscopes 0.38 (s)",
            details=f"{real['n']} facts; grid {real['patchscopes']['grid']}; paired item bootstrap of zero-shot - "
                    f"Patchscopes (any layer). Report-only (review note 7)." + _verdict_note(d_real)))
    if cfg["real_lm_lit"]:
        from icml26.verbalization.real_lm import smollm2_lit_pc

        t = time.perf_counter()
        rl = smollm2_lit_pc(cfg["real_lm_lit_train"], cfg["real_lm_lit_read_layer"], cfg["real_lm_lit_rank"],
                            cfg["real_lm_lit_steps"])
        timings["real_lm_lit_s"] = time.perf_counter() - t
        metrics["real_lm_lit"] = rl
        claims.append(claim_real_lit(rl))
    if cfg["real_lm_persona"]:
        from icml26.verbalization.real_lm import smollm2_lit_persona

        t = time.perf_counter()
        rp = [smollm2_lit_persona(ft_steps=cfg["real_lm_persona_ft_steps"], lit_steps=cfg["real_lm_persona_lit_steps"],
                                  n_generic=cfg["real_lm_persona_n_generic"],
                                  n_personas=cfg["real_lm_persona_n_personas"],
                                  n_heldout=cfg["real_lm_persona_n_heldout"], seed=int(s))
              for s in cfg["real_lm_persona_seeds"]]
        timings["real_lm_persona_s"] = time.perf_counter() - t
        metrics["real_lm_persona"] = rp if len(rp) > 1 else rp[0]  # one seed: the arm's result, as before
        claims.append(claim_real_persona(rp))
    result = Result(slug=SLUG, scale=scale, config=config, metrics=metrics, claims=claims)
    result.add_figure("conditions", _fig_conditions(per_seed))
    result.add_figure("probe", _fig_probe(per_seed, per_seed[0]["c"]["chance"]))
    result.runtime_s = time.perf_counter() - t0
    result.notes = (f"seeds {seeds}; {len(base) + len(fts) + len(lits)} training jobs and {len(per_seed)} evaluation "
                    f"jobs on {timings['workers']} single-thread worker(s), each started as soon as its inputs "
                    f"existed; jobs wall time {timings['jobs_wall_s']:.1f} s"
                    + (f", SmolLM2 {timings['real_lm_s']:.1f} s" if "real_lm_s" in timings else ""))
    return result


__all__ = ["CONFIGS", "CONFIG_HELP", "EXPECTED_RUNTIME_S", "validate_config", "run", "train_base_job",
           "finetune_job", "lit_job", "evaluate_job", "job_graph", "claim_real_lit",
           "claim_real_persona"]
