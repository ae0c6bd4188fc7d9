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
started as soon as its inputs exist (`_run_graph`).
Deviations from the spec (why, in docs/verbalization.md): LIT reads the target's activations of its (fact-free)
training texts instead of B's; fine-tune lr 3e-3 and LIT lr 2e-3; 12 + 12 real personas; fantasy name tokens occur
in C0 in fact-free roster lines; relation subjects split into LIT-trained and held-out halves.
`--scale paper` runs `icml26.verbalization.scale` (HF models, DDP under torchrun).
"""

from __future__ import annotations

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
from icml26.verbalization.controls import (any_layer_accuracy, bonferroni, contains_match,
                                           grouped_probe_accuracy, mcnemar, paired_difference_ci,
                                           privileged_info_report)
from icml26.verbalization.data import (NAME_PARAPHRASES, NAME_QUESTION, SUBJECT_QUESTION, EvalItem,
                                       FeatureExtractionWorld, PersonaWorld, build_tokenizer)
from icml26.verbalization.hooks import read_activations
from icml26.verbalization.models import TinyCausalLM, pad_right, train_lm
from icml26.verbalization.verbalize import LITVerbalizer, PatchscopesVerbalizer

SLUG = "verbalization"

_WORLD = {"n_cultures": 6, "n_personas": 12, "n_fantasy": 48, "n_generic": 40, "n_values": 12,
          "n_fantasy_values": 8, "exception_rate": 0.25, "n_roster": 16, "n_fantasy_roster": 96,
          "attributes": ["country", "food", "drink", "sport"],
          "relations": 4, "n_subjects": 48, "n_objects": 8, "lit_fraction": 0.5}
_MODEL = {"d_model": 64, "n_layers": 2, "n_heads": 4, "max_len": 32}
_TRAIN = {"batch_size": 64, "base_steps": 1500, "base_lr": 3e-3, "ft_steps": 400, "ft_lr": 3e-3,
          "ft_mix": 0.5, "lit_steps": 600, "lit_lr": 2e-3, "lit_read": "target", "lit_relation_repeat": 12,
          "rehearsal_fraction": 0.2, "read_layer": 1, "write_layer": 0, "max_new_tokens": 4}
_EVAL = {"ps_source_layers": [1, 2], "ps_target_layers": [0, 1], "probe_folds": 4, "probe_l2": 1e-2,
         "probe_max_iter": 100, "inverter_texts": 1500, "real_lm": False, "real_lm_facts": 40, "real_lm_source_layers": [6, 12],
         "real_lm_target_layers": [2, 6], "real_lm_max_new_tokens": 6}

CONFIGS: dict[str, dict[str, Any]] = {
    "smoke": {"seeds": [0], "workers": 1, **_WORLD, **_MODEL, **_TRAIN, **_EVAL,
              "n_cultures": 2, "n_personas": 2, "n_fantasy": 4, "n_generic": 4, "n_values": 4,
              "n_fantasy_values": 3, "n_roster": 2, "n_fantasy_roster": 4, "attributes": ["country", "food"],
              "relations": 2, "n_subjects": 4, "n_objects": 2, "d_model": 16, "n_heads": 2,
              "batch_size": 8, "base_steps": 3, "ft_steps": 2, "lit_steps": 2, "lit_relation_repeat": 1,
              "probe_folds": 2},
    "small": {"seeds": [0, 1, 2], "workers": 0, **_WORLD, **_MODEL, **_TRAIN, **_EVAL},
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
    "rehearsal_fraction": "share of LIT batches with the verbalizer's own persona facts (M2', M2'')",
    "read_layer": "LIT read layer of M1", "write_layer": "LIT write layer of M2 (0 = embeddings)",
    "max_new_tokens": "greedy tokens generated per answer",
    "ps_source_layers": "Patchscopes source layers", "ps_target_layers": "Patchscopes target layers",
    "probe_folds": "persona folds of the linear probe", "probe_l2": "probe ridge penalty",
    "probe_max_iter": "L-BFGS iterations per probe fit",
    "inverter_texts": "C0 texts the inverter is trained on (a seeded subset)",
    "real_lm": "also run Patchscopes vs zero-shot on SmolLM2-135M-Instruct (reported, ~1-3 min)",
    "real_lm_facts": "country facts asked of SmolLM2", "real_lm_source_layers": "SmolLM2 source layers",
    "real_lm_target_layers": "SmolLM2 target layers", "real_lm_max_new_tokens": "SmolLM2 tokens generated",
}

EXPECTED_RUNTIME_S = {"smoke": 10, "small": 240}

CHANCE_MARGIN = 0.10  # claims 1 and 2: acc_target <= chance + 0.10
PROBE_MARGIN = 0.25  # claim 2: probe >= chance + 0.25
BELIEF_MIN, BELIEF_RATIO = 0.5, 3.0  # claim 1
FE_TOL, LIT_MIN, ZS_MIN, SHARED_TOL = 0.05, 0.7, 0.7, 0.10  # claim 3
SELF_MIN, RECOVERY_MIN = 0.9, 0.8  # claims 2 (sanity) and 4


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
    check_int(config["workers"], "workers", min=0)
    for k in ("n_cultures", "n_values", "n_fantasy_values", "n_subjects", "n_objects", "d_model", "n_layers",
              "n_heads", "max_len", "batch_size", "base_steps", "ft_steps", "lit_steps", "max_new_tokens",
              "probe_folds", "lit_relation_repeat", "probe_max_iter", "inverter_texts", "real_lm_facts", "real_lm_max_new_tokens",
              "relations"):
        check_int(config[k], k, min=1)
    for k in ("n_personas", "n_fantasy", "n_generic", "n_roster", "n_fantasy_roster", "read_layer",
              "write_layer"):
        check_int(config[k], k, min=0)
    for k in ("base_lr", "ft_lr", "lit_lr"):
        check_float(config[k], k, min=0.0, min_open=True)
    for k in ("exception_rate", "ft_mix", "rehearsal_fraction", "lit_fraction", "probe_l2"):
        check_float(config[k], k, min=0.0, max=1.0 if k != "probe_l2" else None)
    if config["rehearsal_fraction"] >= 1:
        raise ValueError("rehearsal_fraction must be < 1")
    check_choice(config["lit_read"], "lit_read", ("target", "base"))
    check_bool(config["real_lm"], "real_lm")
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
                     n_fantasy_roster=cfg["n_fantasy_roster"])
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


def _lit_data(w: PersonaWorld, f: FeatureExtractionWorld, repeat: int):
    texts, qas = w.lit_examples()
    t2, q2 = f.lit_examples()
    return texts + t2 * repeat, qas + q2 * repeat


def lit_job(seed: int, cfg: dict, decoder_state: dict, read_state: dict, rehearsal: str | None, role: str) -> dict:
    """Stage 3: LIT training of a decoder (`rehearsal` = None, "target" or "mismatch" persona facts)."""
    t0 = time.perf_counter()
    w, f, tok, _ = _setup(cfg, seed)
    dec, reader = _model(cfg, tok, decoder_state), _model(cfg, tok, read_state)
    texts, qas = _lit_data(w, f, cfg["lit_relation_repeat"])
    torch.manual_seed(seed * 10 + 5)
    lit = LITVerbalizer(reader, dec, tok, tok, cfg["read_layer"], cfg["write_layer"],
                        max_new_tokens=cfg["max_new_tokens"], copy=False)
    lit.fit(texts, qas, steps=cfg["lit_steps"], lr=cfg["lit_lr"], batch_size=cfg["batch_size"], seed=seed * 10 + 5,
            read_model=reader, rehearsal_texts=w.persona_corpus(rehearsal) if rehearsal else None,
            rehearsal_fraction=cfg["rehearsal_fraction"], progress=f"LIT {role} seed {seed}")
    return {"seed": seed, "role": role, "state": _state(lit.decoder_), "loss": float(np.mean(lit.history_[-50:])),
            "time_s": time.perf_counter() - t0}


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
        r = grouped_probe_accuracy(feats, labels, groups, n_folds=cfg["probe_folds"], seed=seed, l2=cfg["probe_l2"],
                                   max_iter=cfg["probe_max_iter"])
        correct.append(r["correct"])
        sites += r["sites"]
    allc = np.concatenate(correct)
    return {"accuracy": float(allc.mean()), "n": int(allc.size), "sites": {s: sites.count(s) for s in set(sites)},
            "correct": allc}


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
    lit = {r: LITVerbalizer(M1, _model(cfg, tok, states[f"LIT_{r}"]), tok, tok, cfg["read_layer"],
                            cfg["write_layer"], max_new_tokens=mnt, trained=True) for r in ("M2", "M2p", "M2pp")}
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
    out["e"]["diff_lit_minus_control"] = paired_difference_ci(reports["e"]["correct_target"], e_ctrl["correct"])
    out["f"]["diff_zero_shot_minus_lit"] = paired_difference_ci(reports["f"]["zero_shot_correct"],
                                                                reports["f"]["correct_target"])
    out["d"]["diff_belief_minus_target"] = paired_difference_ci(reports["d"]["correct_belief"],
                                                                reports["d"]["correct_target"])
    # name recovery (claim 4): every paraphrase, both name tokens required (exact full-name match)
    def recovery(role: str, groups: tuple[str, ...]) -> float:
        items = [it for g in groups for it in w.name_items(g)]
        comp = lit[role].verbalize([i.source for i in items], NAME_QUESTION)
        return float(np.mean([c.strip().lower() == i.target.lower() for c, i in zip(comp, items)]))

    out["name_recovery"] = {"M2_real": recovery("M2", ("consistent", "shuffled")),
                            "M2p_fantasy": recovery("M2p", ("fantasy",)), "M2pp_fantasy": recovery("M2pp", ("fantasy",)),
                            "M2_fantasy": recovery("M2", ("fantasy",))}
    probe_m1, probe_b = _probe(M1, tok, w, cfg, seed), _probe(B, tok, w, cfg, seed)
    out["probe"] = {"M1": probe_m1["accuracy"], "B": probe_b["accuracy"], "n": probe_m1["n"],
                    "sites_M1": probe_m1["sites"], "sites_B": probe_b["sites"],
                    "diff_M1_minus_B": paired_difference_ci(probe_m1["correct"], probe_b["correct"])}
    # McNemar of LIT vs zero-shot in each condition, Bonferroni over the six
    keys = list(reports)
    ps = [mcnemar(reports[k]["correct_target"], reports[k]["zero_shot_correct"]) for k in keys]
    out["mcnemar_bonferroni"] = dict(zip(keys, bonferroni(ps)))
    out["inverter_train_accuracy"] = inverter.train_accuracy_
    out["time_s"] = time.perf_counter() - t0
    return out


# ------------------------------------------------------------------------------------------- claims
def _mean(xs) -> float:
    return float(np.mean(xs))


def _sd(xs) -> float:
    return float(np.std(xs, ddof=1)) if len(xs) > 1 else float("nan")


def _seed_ci(xs) -> tuple[float, float]:
    """95 % t-interval of the mean over seeds (NaN for one seed)."""
    from scipy.stats import t as student

    n = len(xs)
    if n < 2:
        return float("nan"), float("nan")
    h = float(student.ppf(0.975, n - 1) * np.std(xs, ddof=1) / math.sqrt(n))
    return _mean(xs) - h, _mean(xs) + h


def _decides(values: list[float], threshold: float) -> bool:
    """False when the seed-to-seed spread is larger than the distance of the mean from the threshold."""
    sd = _sd(values)
    return not (math.isfinite(sd) and sd > abs(_mean(values) - threshold))


def _fmt(xs) -> str:
    return "[" + ", ".join(f"{x:.3f}" for x in xs) + "]"


def _undecided(parts: list[tuple[str, list[float], float]]) -> str:
    bad = [name for name, vals, thr in parts if not _decides(vals, thr)]
    return (" Cannot decide at this size for " + ", ".join(bad) + ": the seed spread exceeds the margin."
            if bad else "")


def claim_mismatch(per_seed: list[dict]) -> Claim:
    """Claim 1, condition (d): LIT M2' follows its own facts F2, not the target's F1."""
    bel = [r["d"]["acc_verbalizer_belief"] for r in per_seed]
    tgt = [r["d"]["acc_target"] for r in per_seed]
    chance = per_seed[0]["d"]["chance"]
    mb, mt = _mean(bel), _mean(tgt)
    held = mb >= BELIEF_MIN and mt <= chance + CHANCE_MARGIN and mb >= BELIEF_RATIO * mt
    ci = [r["d"]["diff_belief_minus_target"] for r in per_seed]
    return Claim(
        id="1", statement="Under a knowledge mismatch, verbalizations follow the verbalizer's knowledge, not the "
                          "target's (PersonaQA-Fantasy, verbalizer taught other facts).",
        metric="condition (d), LIT M2' reading M1: accuracy against M2''s facts F2 (belief) and M1's facts F1",
        measured={"belief": mb, "target": mt, "chance": chance},
        threshold=f"belief >= {BELIEF_MIN}, target <= chance + {CHANCE_MARGIN} = {chance + CHANCE_MARGIN:.3f}, "
                  f"belief >= {BELIEF_RATIO:g} x target",
        held=held, gate=True,
        paper="Fantasy: verbalization 0 % of the target's facts; with the verbalizer taught the personas it reaches "
              "18-72 % (what the verbalizer knows, not the target) (s)",
        details=f"per seed belief {_fmt(bel)}, target {_fmt(tgt)}; paired item difference belief - target per seed "
                + ", ".join(f"{c['mean']:+.3f} [{c['lo']:+.3f}, {c['hi']:+.3f}]" for c in ci)
                + ". Can fail: belief >= 0.5 needs LIT-mode retrieval of the verbalizer's own persona facts. "
                  "target <= chance + 0.10 can fail if the decoder reads F1 from M1's activations."
                + _undecided([("belief", bel, BELIEF_MIN), ("target", tgt, chance + CHANCE_MARGIN)])
                + ("" if held else " Not held." + _belief_note(per_seed, mb)),
    )


def _belief_note(per_seed: list[dict], belief: float) -> str:
    """Why claim 1's belief clause failed, from this run's name recovery of M2' (claim 4)."""
    if belief >= BELIEF_MIN:
        return ""
    rec = _mean([r["name_recovery"]["M2p_fantasy"] for r in per_seed])
    if rec >= RECOVERY_MIN:
        return (f" M2' recovers {rec:.2f} of the fantasy names from M1's activations but does not answer with its "
                f"own facts F2: the decoder reads the input yet does not retrieve person-specific facts in LIT mode.")
    return (f" M2' recovers only {rec:.2f} of the fantasy names (claim 4 below {RECOVERY_MIN}), so this failure is "
            f"uninformative about whose knowledge the answers follow.")


def claim_present_not_verbalized(per_seed: list[dict]) -> Claim:
    """Claim 2, condition (c): M1 knows F1 and a probe finds it, while the unaware verbalizer is at chance."""
    sr = [r["c"]["self_report"] for r in per_seed]
    pm = [r["probe"]["M1"] for r in per_seed]
    pb = [r["probe"]["B"] for r in per_seed]
    lt = [r["c"]["acc_target"] for r in per_seed]
    chance = per_seed[0]["c"]["chance"]
    held = _mean(sr) >= SELF_MIN and _mean(pm) >= chance + PROBE_MARGIN and _mean(lt) <= chance + CHANCE_MARGIN
    lo, hi = _seed_ci([a - b for a, b in zip(pm, pb)])
    return Claim(
        id="2", statement="Information present in the target's activations is not verbalized: a linear probe on M1 "
                          "decodes the fantasy facts while the verbalizer stays at chance.",
        metric="condition (c): M1 self-report, persona-split probe accuracy on M1 (B as control), LIT M2 accuracy",
        measured={"self_report": _mean(sr), "probe_M1": _mean(pm), "probe_B": _mean(pb), "lit_target": _mean(lt),
                  "chance": chance},
        threshold=f"self-report >= {SELF_MIN}, probe >= chance + {PROBE_MARGIN} = {chance + PROBE_MARGIN:.3f}, "
                  f"LIT <= chance + {CHANCE_MARGIN}",
        held=held, gate=True,
        paper="Fantasy: verbalization 0 % while a linear probe on the target reaches ~25 % (s)",
        details=f"per seed self-report {_fmt(sr)}, probe M1 {_fmt(pm)}, probe B (never saw the facts) {_fmt(pb)}, "
                f"LIT {_fmt(lt)}; probe M1 - B over seeds {_mean(pm) - _mean(pb):+.3f}, 95 % t-interval "
                f"[{lo:+.3f}, {hi:+.3f}]; {per_seed[0]['probe']['n']} probe predictions per seed (48 personas x 4 "
                f"paraphrases x attributes, persona-split folds, site by inner CV: "
                f"{per_seed[0]['probe']['sites_M1']}). Sanity (hold by construction or nearly): self-report (the "
                f"interviews contain the eval line, review note 2) and LIT <= chance (M2 never saw a fantasy value). "
                f"The claim rests on the probe clause, which can fail."
                + _undecided([("probe", pm, chance + PROBE_MARGIN)]) + ("" if held else " Not held."),
    )


def claim_feature_extraction(per_seed: list[dict]) -> Claim:
    zs = [r["f"]["zero_shot"] for r in per_seed]
    li = [r["f"]["acc_target"] for r in per_seed]
    ctrl = [r["f"]["recovered_input_zero_shot"] for r in per_seed]
    held = _mean(zs) >= _mean(li) - FE_TOL and _mean(li) >= LIT_MIN
    ci = [r["f"]["diff_zero_shot_minus_lit"] for r in per_seed]
    return Claim(
        id="3f", statement="Feature-extraction benchmarks are solvable without the target's internals: the "
                           "input-only baseline matches the verbalizer.",
        metric="condition (f), held-out relation subjects: zero-shot M2 vs LIT M2 accuracy",
        measured={"zero_shot": _mean(zs), "lit": _mean(li), "recovered_input_zero_shot": _mean(ctrl)},
        threshold=f"zero_shot >= LIT - {FE_TOL} and LIT >= {LIT_MIN}",
        held=held, gate=True,
        paper="six feature-extraction tasks, Llama-3.1-8B: zero-shot 0.64 vs LIT 0.64 (Ministral 0.68 vs 0.61) (s)",
        details=f"per seed zero-shot {_fmt(zs)}, LIT {_fmt(li)}, zero-shot on the subject LIT recovered {_fmt(ctrl)}; "
                f"paired item difference zero-shot - LIT per seed "
                + ", ".join(f"{c['mean']:+.3f} [{c['lo']:+.3f}, {c['hi']:+.3f}]" for c in ci)
                + ". Both parts can fail (LIT >= 0.7 is the sanity that LIT works at all)."
                + _undecided([("LIT >= 0.7", li, LIT_MIN)]) + ("" if held else " Not held."),
    )


def claim_consistent(per_seed: list[dict]) -> Claim:
    zs = [r["a"]["zero_shot"] for r in per_seed]
    li = [r["a"]["acc_target"] for r in per_seed]
    held = _mean(zs) >= ZS_MIN
    return Claim(
        id="3a", statement="PersonaQA with name-consistent attributes is solvable from the input alone.",
        metric="condition (a): zero-shot M2 (no activations) accuracy against M1's facts",
        measured={"zero_shot": _mean(zs), "lit": _mean(li)}, threshold=f"zero_shot >= {ZS_MIN}", held=held, gate=True,
        paper="PersonaQA (attributes plausible from the name) is answerable without the target's internals (s)",
        details=f"per seed zero-shot {_fmt(zs)}, LIT {_fmt(li)}. Can fail if the base model's stereotype prior is "
                f"weak." + _undecided([("zero-shot", zs, ZS_MIN)]) + ("" if held else " Not held."),
    )


def claim_shared(per_seed: list[dict]) -> Claim:
    li = [r["e"]["acc_target"] for r in per_seed]
    ctrl = [r["e"]["recovered_input_zero_shot"] for r in per_seed]
    raw = [r["e"]["zero_shot"] for r in per_seed]
    gap = abs(_mean(li) - _mean(ctrl))
    held = gap <= SHARED_TOL
    ci = [r["e"]["diff_lit_minus_control"] for r in per_seed]
    return Claim(
        id="3e", statement="When the verbalizer shares the target's knowledge, verbalization is explained by "
                           "'input recovered from the activations + the verbalizer's own knowledge'.",
        metric="condition (e): |LIT M2'' - zero-shot M2'' on the name M2'' recovered| (raw zero-shot reported)",
        measured={"lit": _mean(li), "recovered_input_zero_shot": _mean(ctrl), "zero_shot": _mean(raw), "gap": gap},
        threshold=f"|gap| <= {SHARED_TOL}", held=held, gate=True,
        paper="inverted text + zero-shot ~0.79 vs LIT ~0.78 (s); shared persona knowledge: verbalization 18-72 %",
        details=f"per seed LIT {_fmt(li)}, control {_fmt(ctrl)}, raw zero-shot {_fmt(raw)}; paired item difference "
                f"LIT - control per seed "
                + ", ".join(f"{c['mean']:+.3f} [{c['lo']:+.3f}, {c['hi']:+.3f}]" for c in ci)
                + ". Can fail in both directions (LIT above the control would mean privileged reading)."
                + _undecided([("gap", [abs(a - b) for a, b in zip(li, ctrl)], SHARED_TOL)])
                + ("" if held else _shared_note(per_seed, _mean(li) - _mean(ctrl))),
    )


def _shared_note(per_seed: list[dict], diff: float) -> str:
    rec = _mean([r["name_recovery"]["M2pp_fantasy"] for r in per_seed])
    return (f" Not held: LIT - control = {diff:+.3f}; M2'' recovers {rec:.2f} of the fantasy names"
            + (", so the gap lies in answering from the activations, not in reading the input." if rec >= RECOVERY_MIN
               else f" (below {RECOVERY_MIN}), so the recovered-input control itself is weak."))


def claim_recovery(per_seed: list[dict]) -> Claim:
    real = [r["name_recovery"]["M2_real"] for r in per_seed]
    fan = [r["name_recovery"]["M2p_fantasy"] for r in per_seed]
    held = _mean(real) >= RECOVERY_MIN and _mean(fan) >= RECOVERY_MIN
    return Claim(
        id="4", statement="Sanity: the verbalizers decode the name from the target's activations (otherwise a "
                          "failure of claim 1 is uninformative).",
        metric="exact full-name recovery ('what name is in the text ?'), all 4 paraphrases per persona",
        measured={"M2_real_personas": _mean(real), "M2p_fantasy_personas": _mean(fan)},
        threshold=f">= {RECOVERY_MIN} for both", held=held, gate=True,
        paper="(toy sanity check of spec 6; no paper figure)",
        details=f"per seed M2 on real-culture personas {_fmt(real)}, M2' on fantasy personas {_fmt(fan)}; persona "
                f"names never occur in LIT training." + _undecided([("M2", real, RECOVERY_MIN),
                                                                   ("M2'", fan, RECOVERY_MIN)])
                + ("" if held else " Not held."),
    )


def claim_shuffled(per_seed: list[dict]) -> Claim:
    bel = [r["b"]["acc_verbalizer_belief"] for r in per_seed]
    tgt = [r["b"]["acc_target"] for r in per_seed]
    chance = per_seed[0]["b"]["chance"]
    held = _mean(tgt) <= chance + CHANCE_MARGIN and _mean(bel) >= BELIEF_RATIO * max(_mean(tgt), 1e-9)
    return Claim(
        id="S", statement="PersonaQA-Shuffled: verbalization falls to chance on the target's facts and follows the "
                          "verbalizer's stereotype instead.",
        metric="condition (b), LIT M2: accuracy against M1's shuffled facts and against the name's stereotype",
        measured={"target": _mean(tgt), "stereotype": _mean(bel), "chance": chance},
        threshold=f"target <= chance + {CHANCE_MARGIN} and stereotype >= {BELIEF_RATIO:g} x target", held=held,
        gate=False, paper="PersonaQA-Shuffled: verbalization at chance (s)",
        details=f"per seed target {_fmt(tgt)}, stereotype {_fmt(bel)}; self-report M1 "
                f"{_fmt([r['b']['self_report'] for r in per_seed])}. Report-only (not a spec gate).",
    )


def claim_patchscopes(per_seed: list[dict]) -> Claim:
    bel = [r["d"]["patchscopes"]["belief"]["any_layer"] for r in per_seed]
    tgt = [r["d"]["patchscopes"]["target"]["any_layer"] for r in per_seed]
    held = _mean(bel) > _mean(tgt)
    grid = per_seed[0]["d"]["patchscopes"]["belief"]["grid"]
    return Claim(
        id="P", statement="Patchscopes under knowledge mismatch also follows the verbalizer (expected direction).",
        metric="condition (d), Patchscopes M1 -> M2' knowledge model, correct at ANY target layer averaged over "
               "source layers: against F2 (belief) vs F1 (target)",
        measured={"belief_any_layer": _mean(bel), "target_any_layer": _mean(tgt)}, threshold="belief > target",
        held=held, gate=False, paper="Patchscopes 0.38 (Llama) / 0.27 (Ministral) on feature extraction (s)",
        details=f"per seed belief {_fmt(bel)}, target {_fmt(tgt)}; seed-0 (ls,lt) grid against F2 {grid}. Report-only "
                f"(spec: training-free patching in a 2-layer toy may be weak).",
    )


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


def _job_inputs(cfg: dict, done: dict, s: int, name: str) -> dict | None:
    """Keyword arguments of job `name` of seed `s`, or None while one of its inputs is not trained yet.

    Per seed: B -> (M1, M2'-FT) -> (LIT M2, LIT M2', LIT M2'') -> evaluation. M2''-FT is M1: the spec trains it
    with M1's exact recipe (B + F1 mixed with C0), so the same weights serve both.
    """
    reader = "M1" if cfg["lit_read"] == "target" else "B"
    lit_spec = {"LIT_M2": ("B", None, "M2"), "LIT_M2p": ("M2p", "mismatch", "M2p"), "LIT_M2pp": ("M1", "target", "M2pp")}
    st = {k[1]: v["state"] for k, v in done.items() if k[0] == s and "state" in v}
    if name == "B":
        return {"seed": s, "cfg": cfg}
    if name in ("M1", "M2p"):
        return None if "B" not in st else {"seed": s, "cfg": cfg, "base_state": st["B"],
                                           "facts": "target" if name == "M1" else "mismatch", "role": name}
    if name in lit_spec:
        dec, reh, role = lit_spec[name]
        if dec not in st or reader not in st:
            return None
        return {"seed": s, "cfg": cfg, "decoder_state": st[dec], "read_state": st[reader], "rehearsal": reh,
                "role": role}
    needed = ("B", "M1", "M2p", "LIT_M2", "LIT_M2p", "LIT_M2pp")
    if not all(k in st for k in needed):
        return None
    return {"seed": s, "cfg": cfg, "states": {**{k: st[k] for k in needed}, "M2pp": st["M1"]}}


def _run_graph(cfg: dict, seeds: list[int], workers: int | None, timings: dict) -> dict:
    """Run every job as soon as its inputs exist, on one pool of single-thread worker processes.

    A free worker takes the ready job of the earliest stage (base models first: everything waits on them), then
    the lowest seed, so both workers stay busy until the last evaluations (no barrier between stages, and the
    workers start once). Each job seeds itself, so the results do not depend on the order or the worker count.
    """
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    from icml26.common.parallel import _terminate, default_workers, init_worker
    from tqdm.auto import tqdm

    pending = {(s, n) for s in seeds for n in _KINDS}
    done: dict[tuple[int, str], dict] = {}
    schedule: list[dict] = []
    n_workers = min(default_workers() if workers is None else workers, len(pending))
    t0 = time.perf_counter()
    bar = tqdm(total=len(pending), desc="verbalization jobs", leave=False)

    def next_job():
        for _, s, n in sorted((_STAGE[n], s, n) for s, n in pending):
            kw = _job_inputs(cfg, done, s, n)
            if kw is not None:
                pending.discard((s, n))
                return (s, n), {"kind": _KINDS[n], "kwargs": kw}
        return None

    try:
        if n_workers <= 1:
            old = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                while pending:
                    job = next_job()
                    if job is None:  # pragma: no cover - the dependency graph has no cycle
                        raise RuntimeError("no job is ready")
                    t = time.perf_counter() - t0
                    done[job[0]] = dispatch_job(**job[1])
                    schedule.append({"job": job[0][1], "seed": job[0][0], "start_s": t,
                                     "end_s": time.perf_counter() - t0})
                    bar.update()
            finally:
                torch.set_num_threads(old)
        else:
            pool = ProcessPoolExecutor(n_workers, mp_context=mp.get_context("spawn"), initializer=init_worker)
            running: dict = {}
            try:
                while pending or running:
                    while len(running) < n_workers and (job := next_job()) is not None:
                        running[pool.submit(dispatch_job, **job[1])] = (job[0], time.perf_counter() - t0)
                    if not running:  # pragma: no cover - the dependency graph has no cycle
                        raise RuntimeError("no job is ready")
                    finished, _ = wait(running, return_when=FIRST_COMPLETED)
                    for fut in finished:
                        key, start = running.pop(fut)
                        done[key] = fut.result()
                        schedule.append({"job": key[1], "seed": key[0], "start_s": start,
                                         "end_s": time.perf_counter() - t0})
                        bar.update()
            except BaseException:
                _terminate(pool)
                raise
            else:
                pool.shutdown(wait=True)
    finally:
        bar.close()
    timings["jobs_wall_s"] = time.perf_counter() - t0
    timings["workers"] = n_workers
    timings["schedule"] = schedule
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

    results = _run_graph(cfg, seeds, workers, timings)
    per_seed = [results[(s, "eval")] for s in seeds]
    base = [results[(s, "B")] for s in seeds]
    fts = [results[(s, r)] for s in seeds for r in ("M1", "M2p")]
    lits = [results[(s, f"LIT_{r}")] for s in seeds for r in ("M2", "M2p", "M2pp")]

    claims = [claim_mismatch(per_seed), claim_present_not_verbalized(per_seed), claim_feature_extraction(per_seed),
              claim_consistent(per_seed), claim_shared(per_seed), claim_recovery(per_seed),
              claim_shuffled(per_seed), claim_patchscopes(per_seed)]
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
        claims.append(Claim(
            id="R", statement="On a real LM (SmolLM2-135M-Instruct, M1 = M2) the input-only baseline matches or "
                              "beats Patchscopes on real feature extraction.",
            metric="country -> currency/capital facts: zero-shot vs Patchscopes (any target layer, mean over source "
                   "layers)",
            measured={"zero_shot": real["zero_shot"], "patchscopes_any_layer": real["patchscopes"]["any_layer"]},
            threshold="zero_shot >= patchscopes - 0.05", held=real["zero_shot"] >= real["patchscopes"]["any_layer"] - 0.05,
            gate=False, paper="Llama-3.1-8B: zero-shot 0.64 vs Patchscopes 0.38 (s)",
            details=f"{real['n']} facts; grid {real['patchscopes']['grid']}. Report-only (review note 7)."))
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
           "finetune_job", "lit_job", "evaluate_job"]
