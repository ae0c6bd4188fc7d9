"""CPU reproduction of spec section 6 (as amended by its review notes and issue 41) and the medium / paper configs.

Arms (each seed s draws its own world token layout and init; seeds seed..seed+n_seeds-1, five by default):
  joint, sim_then_attr, attr_then_sim (each stage `steps_per_stage` GD steps), the two gated controls of review
  note 1 (attr_then_sim with a `short_first_stage`-step attribute stage; attr_then_sim with n_individual = 0), the
  boundary arm (attr_then_sim with `boundary_n_individual` = 1 individual fact per entity), attribute_only (chance
  baseline) and two-hop with / without identity bridges; and the GPT arm: a GPT-2-architecture transformer with
  typed answer logits, trained from scratch on the same sentences in the three schedules.
Claims (verdicts from icml26.common.stats, t intervals over seeds, paired for the gap): C1 joint transfer + aligned
representations, C2 curriculum asymmetry with retention, C2-short and C2-noind controls, C3 two-hop with bridges
(gates); C3-nobridge (sanity, holds almost by construction); R1 attribute-only chance and R3 the one-fact boundary
(measured); R2 C2's check on the GPT arm (report-only). Every gate tests the spec's minimal factorized model, not a
transformer.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from icml26.analogy.baselines import run_curriculum, run_gpt_curriculum, run_two_hop
from icml26.common import run_parallel, stats
from icml26.common.parallel import default_workers
from icml26.common.plotting import new_figure
from icml26.common.validation import check_float, check_int, check_seed, require_keys
from icml26.results import Claim, Result

SLUG = "analogy"
_MODEL = "the spec's minimal factorized model (one-layer linear attention + readout, float64, GD), not a transformer"

_BASE = {"n_groups": 8, "group_size": 4, "n_features": 1, "n_individual": 3, "d_model": 32, "init_std": 0.01,
         "lr": 1.0, "two_hop_chains": 16, "device": "cpu", "boundary_n_individual": 1}
# the GPT arm (report-only R2): a GPT-2-architecture TinyLM; small is 2 layers, d = 64
_GPT_SMALL = {"gpt_seeds": 3, "gpt_steps_per_stage": 400, "gpt_layers": 2, "gpt_d_model": 64, "gpt_heads": 4,
              "gpt_lr": 3e-3}
CONFIGS: dict[str, dict[str, Any]] = {
    "smoke": {"seed": 0, "n_seeds": 1, **_BASE, "steps_per_stage": 300, "short_first_stage": 50,
              "two_hop_steps": 200, "eval_every": 50, "workers": 1,
              **_GPT_SMALL, "gpt_seeds": 1, "gpt_steps_per_stage": 20},
    # spec section 6 + review notes 1-3: seeds 0-4, 3000 GD steps per stage, 600 two-hop steps
    "small": {"seed": 0, "n_seeds": 5, **_BASE, "steps_per_stage": 3000, "short_first_stage": 200,
              "two_hop_steps": 600, "eval_every": 100, "workers": 2, **_GPT_SMALL},
}
# medium: every gate of the minimal model decides at small, so medium exists for the report-only GPT arm: the same
# experiment on 10 seeds, with a 4-layer d = 128 GPT-2-architecture model on 8 seeds (<= 30 min on 2 cores; on CUDA
# when available).
CONFIGS["medium"] = {**CONFIGS["small"], "n_seeds": 10, "device": "auto", "gpt_seeds": 8, "gpt_steps_per_stage": 600,
                     "gpt_layers": 4, "gpt_d_model": 128, "gpt_heads": 4, "gpt_lr": 1e-3}
# spec section 7, synthetic half: the minimal model on a much larger world and more seeds, and GPT-2 small
# (12 layers, d = 768, 12 heads) trained from scratch on the same sentences, for a GPU. The real-LM half (HF Trainer
# fine-tune of premise sentences) is `icml26.analogy.scale`.
CONFIGS["paper"] = {"seed": 0, "n_seeds": 10, **_BASE, "n_groups": 256, "d_model": 256, "two_hop_chains": 512,
                    "steps_per_stage": 6000, "short_first_stage": 200, "two_hop_steps": 2000, "eval_every": 200,
                    "workers": 1, "device": "auto", "gpt_seeds": 10, "gpt_steps_per_stage": 2000,
                    "gpt_layers": 12, "gpt_d_model": 768, "gpt_heads": 12, "gpt_lr": 3e-4}
CONFIG_HELP = {
    "seed": "first seed (world token layout and init); seeds seed..seed+n_seeds-1",
    "n_seeds": "number of seeds (review note 2: five)",
    "n_groups": "G, groups of entities (each with one attribute held by its source entity)",
    "group_size": "kappa, entities per group (>= 2; entities 1.. are the test entities)",
    "n_features": "shared features per group (similarity premises per entity)",
    "n_individual": "entity-specific facts per entity (the asymmetry needs >= 1)",
    "boundary_n_individual": "n_individual of the report-only boundary arm R3 (attr_then_sim with few facts)",
    "d_model": "d, representation width",
    "init_std": "sigma of the N(0, sigma^2) init of E and U",
    "lr": "full-batch gradient-descent step size",
    "steps_per_stage": "GD steps per curriculum stage (joint has one stage)",
    "short_first_stage": "attribute-stage length of the short-first-stage control (steps)",
    "two_hop_chains": "n, chains a -> b -> c",
    "two_hop_steps": "GD steps of the two-hop runs",
    "eval_every": "time-course logging interval (steps; first seed only)",
    "workers": "worker processes (0 = all CPUs; 1 on a GPU)",
    "gpt_seeds": "seeds of the report-only GPT arm R2 (0 = skip it)",
    "gpt_steps_per_stage": "full-batch AdamW steps per stage of the GPT arm",
    "gpt_layers": "layers of the GPT arm (GPT-2 architecture; 12 = GPT-2 small)",
    "gpt_d_model": "width of the GPT arm (768 = GPT-2 small)",
    "gpt_heads": "attention heads of the GPT arm (12 = GPT-2 small)",
    "gpt_lr": "AdamW learning rate of the GPT arm",
    "device": "torch device of the runs: cpu, cuda[:i] or auto (cuda when available)",
}
EXPECTED_RUNTIME_S = {"smoke": 6, "small": 105, "medium": 1500, "paper": 4 * 3600}
_INTS = {"seed": (0, 2**63 - 1), "n_seeds": (1, 1000), "n_groups": (2, 100_000), "group_size": (2, 100_000),
         "n_features": (1, 100_000), "n_individual": (0, 100_000), "boundary_n_individual": (0, 100_000),
         "d_model": (1, 100_000), "steps_per_stage": (1, 10**8), "short_first_stage": (1, 10**8),
         "two_hop_chains": (2, 100_000), "two_hop_steps": (1, 10**8), "eval_every": (1, 10**8), "workers": (0, 1024),
         "gpt_seeds": (0, 1000), "gpt_steps_per_stage": (1, 10**8), "gpt_layers": (1, 1000),
         "gpt_d_model": (1, 100_000), "gpt_heads": (1, 1000)}


def validate_config(config: dict[str, Any]) -> None:
    """Raise ValueError/TypeError naming the first bad key."""
    require_keys(config, list(CONFIG_HELP))
    for k, (lo, hi) in _INTS.items():
        check_int(config[k], k, min=lo, max=hi)
    check_seed(config["seed"])
    check_float(config["init_std"], "init_std", min=0.0, min_open=True)
    check_float(config["lr"], "lr", min=0.0, min_open=True)
    check_float(config["gpt_lr"], "gpt_lr", min=0.0, min_open=True)
    if config["gpt_d_model"] % config["gpt_heads"]:
        raise ValueError(f"gpt_d_model ({config['gpt_d_model']}) must be divisible by gpt_heads "
                         f"({config['gpt_heads']})")
    if not isinstance(config["device"], str) or not (config["device"] in ("cpu", "auto")
                                                     or config["device"].startswith("cuda")):
        raise ValueError(f"device must be 'cpu', 'cuda[:i]' or 'auto', got {config['device']!r}")
    if config["short_first_stage"] >= config["steps_per_stage"]:
        raise ValueError(f"short_first_stage ({config['short_first_stage']}) must be shorter than steps_per_stage "
                         f"({config['steps_per_stage']})")


# ----------------------------------------------------------------------------------------- claim checks
# Every verdict comes from icml26.common.stats: Student-t intervals over seeds (paired over seeds for the gap of two
# arms run on the same seeds), three-valued decisions, compound claims through all_of.
def _fmt(x: Any) -> str:
    return "[" + ", ".join(f"{v:.3f}" for v in np.asarray(x, dtype=float)) + "]"


def _arr(x: Any, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=float).reshape(-1)
    if a.size == 0:
        raise ValueError(f"{name} must hold one value per seed, got none")
    return a


def _part(x: Any, thr: float, direction: str, label: str, cost: float | None) -> stats.Decision:
    a = _arr(x, label)
    return stats.decide(float(a.mean()), stats.t_interval(a), thr, direction, label=label, cost_per_unit_s=cost)


def _gap_part(a: Any, b: Any, thr: float, label: str, cost: float | None) -> stats.Decision:
    x, y = _arr(a, label), _arr(b, label)
    iv = stats.paired_t_interval(x, y)
    return stats.decide(float((x - y).mean()), iv, thr, ">=", label=label, cost_per_unit_s=cost)


def _verdict_text(d: stats.Decision, decide_by: str) -> str:
    """The decision in words and, for an inconclusive one, what would decide it."""
    out = " Verdict: " + d.text() + "."
    if d.verdict == "inconclusive":
        out += f" To decide it: {decide_by}"
    return out


def _decide_by(cost: float | None) -> str:
    med = CONFIGS["medium"]
    return (f"more seeds (the hint gives the number; `--set n_seeds=N`), or `icml26 run analogy --scale medium` "
            f"({med['n_seeds']} seeds, about {EXPECTED_RUNTIME_S['medium'] / 60:.0f} min on 2 cores)."
            + (f" One seed of this run took about {cost:.1f} s." if cost else ""))


def check_joint(acc: Any, same: Any, cross: Any, cost_per_seed_s: float | None = None) -> Claim:
    """C1: joint accuracy >= 0.95 and same-group cosine >= cross-group cosine + 0.2 (t intervals over seeds)."""
    acc, same, cross = _arr(acc, "accuracy"), _arr(same, "same_cos"), _arr(cross, "cross_cos")
    margin = same - cross
    d = stats.all_of(_part(acc, 0.95, ">=", "accuracy", cost_per_seed_s),
                     _gap_part(same, cross, 0.2, "same_minus_cross_cos", cost_per_seed_s), label="C1")
    return Claim(
        id="C1", statement="Joint training on similarity + attribution premises transfers the attribute to "
        "analogous entities, whose representations align (feature resemblance).",
        metric="analogical accuracy (mean over seeds); same-group minus cross-group entity cosine",
        measured={"accuracy": float(acc.mean()), "same_minus_cross_cos": float(margin.mean()),
                  "same_cos": float(same.mean()), "cross_cos": float(cross.mean())},
        threshold="accuracy >= 0.95 and same_cos >= cross_cos + 0.2", decision=d, kind="gate", per_seed=list(acc),
        paper="joint training: ~100% analogical success; aligned entities show higher cosine similarity",
        details=f"Tests {_MODEL}. Per-seed accuracy {_fmt(acc)}, same-cross cosine {_fmt(margin)}. Can fail "
        "(lazy init sigma = 0.1 gives 0.68; no similarity premises give chance)."
        + _verdict_text(d, _decide_by(cost_per_seed_s)))


def asymmetry_decision(sim: Any, attr: Any, retention: dict[str, Any], cost_per_seed_s: float | None = None,
                       label: str = "C2") -> stats.Decision:
    """sim_then_attr >= 0.95, attr_then_sim <= 0.60, paired gap >= 0.35 and retention >= 0.95 in every schedule:
    the compound check of C2, applied unchanged to the GPT arm (R2)."""
    parts = [_part(sim, 0.95, ">=", "sim_then_attr", cost_per_seed_s),
             _part(attr, 0.60, "<=", "attr_then_sim", cost_per_seed_s),
             _gap_part(sim, attr, 0.35, "gap", cost_per_seed_s)]
    parts += [_part(v, 0.95, ">=", f"retention_{k}", cost_per_seed_s) for k, v in retention.items()]
    return stats.all_of(*parts, label=label)


def check_asymmetry(sim: Any, attr: Any, retention: dict[str, Any], cost_per_seed_s: float | None = None) -> Claim:
    """C2: sim_then_attr >= 0.95, attr_then_sim <= 0.60, gap >= 0.35, premise retention >= 0.95 everywhere."""
    sim, attr = _arr(sim, "sim_then_attr"), _arr(attr, "attr_then_sim")
    d = asymmetry_decision(sim, attr, retention, cost_per_seed_s)
    gap = next(p for p in d.parts if p.label == "gap")
    ret = {k: float(np.mean(v)) for k, v in retention.items()}
    return Claim(
        id="C2", statement="Similarity must be learned before attributes: similarity-first transfers, "
        "attribute-first does not, and neither forgets its premises.",
        metric="analogical accuracy of sim_then_attr and attr_then_sim (means over seeds), their paired gap, "
        "premise retention per schedule",
        measured={"sim_then_attr": float(sim.mean()), "attr_then_sim": float(attr.mean()), "gap": gap.estimate,
                  "gap_ci95": [gap.interval.low, gap.interval.high], **{f"retention_{k}": v for k, v in ret.items()}},
        threshold="sim_then_attr >= 0.95, attr_then_sim <= 0.60, gap >= 0.35, retention >= 0.95 in every schedule",
        decision=d, kind="gate", per_seed=list(sim - attr),
        paper="attribute-later (= our sim_then_attr) ~100%; similarity-later (= our attr_then_sim) ~50%, chance "
        "of the paper's binary evaluation (ours has G-way chance 0.125)",
        details=f"Tests {_MODEL}. Per-seed sim_then_attr {_fmt(sim)}, attr_then_sim {_fmt(attr)}. "
        "attr_then_sim <= 0.60 alone also passes for a pipeline bug that blocks transfer (freezing E in stage 2 "
        "gives about 0.11 and still passes C2): the controls C2-short and C2-noind catch that; retention rules out "
        "forgetting (an untyped softmax fails it)." + _verdict_text(d, _decide_by(cost_per_seed_s)))


def check_control(cid: str, values: Any, threshold: float, what: str, cost_per_seed_s: float | None = None) -> Claim:
    """C2-short / C2-noind: the control arm of attr_then_sim transfers (mean >= threshold, t interval)."""
    a = _arr(values, cid)
    d = _part(a, threshold, ">=", cid, cost_per_seed_s)
    return Claim(
        id=cid, statement=f"Control: attr_then_sim transfers when {what}, so its failure in C2 comes from "
        "converged entity-specific directions, not from the pipeline.",
        metric="analogical accuracy of the control arm (mean over seeds)", measured=float(a.mean()),
        threshold=f">= {threshold:.2f}", decision=d, kind="gate", per_seed=list(a),
        paper="not in the paper (spec review note 1 control; spec measured "
        + ("0.875/0.958/1.000)" if cid == "C2-short" else "1.000 x3)"),
        details=f"Tests {_MODEL}. Per-seed {_fmt(a)}. Same code as C2's attr_then_sim arm with one setting changed; "
        "can fail (freezing E in stage 2 drops it to about 0.1)." + _verdict_text(d, _decide_by(cost_per_seed_s)))


def check_two_hop(composed: Any, analogical: Any, cost_per_seed_s: float | None = None) -> Claim:
    """C3: two-hop with identity bridges >= 0.95 on both query forms."""
    c, a = _arr(composed, "composed"), _arr(analogical, "analogical")
    d = stats.all_of(_part(c, 0.95, ">=", "composed", cost_per_seed_s),
                     _part(a, 0.95, ">=", "analogical", cost_per_seed_s), label="C3")
    return Claim(
        id="C3", statement="Two-hop reasoning is analogy with identity bridges: with the bridge facts the "
        "second hop transfers to the composed query.",
        metric="two-hop accuracy with bridges, composed (a,R1,R2) and analogical (a,R2) queries (means)",
        measured={"composed": float(c.mean()), "analogical": float(a.mean())}, threshold=">= 0.95 for both forms",
        decision=d, kind="gate", per_seed=list(c), paper="two-hop with identity bridges > 99%",
        details=f"Tests {_MODEL}. Per-seed composed {_fmt(c)}, analogical {_fmt(a)} (16 queries per seed); can fail "
        "(without bridges it does: 0.04)." + _verdict_text(d, _decide_by(cost_per_seed_s)))


def check_no_bridge(composed: Any, analogical: Any) -> Claim:
    """C3-nobridge (sanity): without bridges both forms <= 0.25."""
    c, a = _arr(composed, "composed"), _arr(analogical, "analogical")
    d = stats.all_of(_part(c, 0.25, "<=", "composed", None), _part(a, 0.25, "<=", "analogical", None),
                     label="C3-nobridge")
    return Claim(
        id="C3-nobridge", statement="Without identity bridges two-hop reasoning fails.",
        metric="two-hop accuracy without bridges, composed and analogical (means)",
        measured={"composed": float(c.mean()), "analogical": float(a.mean())},
        threshold="<= 0.25 for both forms", decision=d, kind="sanity", per_seed=list(c),
        paper="without identity bridges: near failure",
        details=f"SANITY, holds almost by construction (review note 3: nothing links a to b). Per-seed composed "
        f"{_fmt(c)}, analogical {_fmt(a)}; chance 1/16. " + d.text())


def check_attribute_only(acc: Any, n_groups: int) -> Claim:
    """R1 (report): with no similarity premises the test accuracy stays near chance 1/G."""
    a = _arr(acc, "accuracy")
    d = stats.measured(float(a.mean()), stats.t_interval(a) if a.size > 1 else None)
    return Claim(
        id="R1", statement="Without similarity premises there is no analogical transfer (chance).",
        metric="analogical accuracy of the attribute_only schedule (mean)", measured=float(a.mean()),
        threshold="report only", decision=d, kind="report", per_seed=list(a),
        paper="attribute-only: chance (spec section 4)",
        details=f"Per-seed {_fmt(a)}; chance 1/G = {1.0 / n_groups:.3f}. " + d.text())


def check_one_fact(acc: Any, retention: Any, n_individual: int) -> Claim:
    """R3 (report): attr_then_sim with few individual facts per entity, the boundary of C2 (issue 41)."""
    a = _arr(acc, "accuracy")
    d = stats.measured(float(a.mean()), stats.t_interval(a) if a.size > 1 else None)
    iv = d.interval
    side = ("" if iv is None else " Its interval lies above C2's 0.60 bar: attribute-first TRANSFERS here."
            if iv.low > 0.60 else " Its interval lies below C2's 0.60 bar." if iv.high < 0.60 else
            " Its interval reaches C2's 0.60 bar.")
    return Claim(
        id="R3", statement=f"Boundary of the asymmetry: with {n_individual} individual fact(s) per entity, "
        "attribute-first training is measured (the asymmetry needs entity-specific directions that outweigh the "
        "shared feature).",
        metric=f"analogical accuracy of attr_then_sim with n_individual = {n_individual} (mean over seeds)",
        measured={"accuracy": float(a.mean()), "retention": float(np.mean(retention))},
        threshold="report only", decision=d, kind="report", per_seed=list(a),
        paper="not in the paper (spec section 9: with n_ind = 0 attribute-first also succeeds)",
        details=f"Tests {_MODEL}. Per-seed accuracy {_fmt(a)}, retention {_fmt(retention)}. " + d.text() + "." + side)


def check_gpt(acc: dict[str, Any], retention: dict[str, Any], arch: str, cost_per_seed_s: float | None = None) -> Claim:
    """R2 (report, review note 4 / issue 41): C2's compound check on a GPT-2-architecture transformer with typed
    answer logits."""
    m = {k: float(np.mean(v)) for k, v in acc.items()}
    sim, attr = _arr(acc["sim_then_attr"], "sim_then_attr"), _arr(acc["attr_then_sim"], "attr_then_sim")
    d = asymmetry_decision(sim, attr, retention, cost_per_seed_s, label="R2")
    gap = next(p for p in d.parts if p.label == "gap")
    rets = {k: next(p for p in d.parts if p.label == f"retention_{k}") for k in retention}
    ret_ok = all(p.verdict == "held" for p in rets.values())
    return Claim(
        id="R2", statement="The curriculum asymmetry on a softmax-attention transformer trained from scratch on the "
        "same sentences (the paper's synthetic setting is a GPT-2), with typed answer logits so that a later stage "
        "cannot simply overwrite an earlier one.",
        metric=f"analogical accuracy per schedule, paired gap sim_then_attr - attr_then_sim and premise retention "
        f"per schedule of a {arch}",
        measured={**m, "gap": gap.estimate, "gap_ci95": [gap.interval.low, gap.interval.high],
                  **{f"retention_{k}": float(np.mean(v)) for k, v in retention.items()},
                  **{f"retention_{k}_ci95": [p.interval.low, p.interval.high] for k, p in rets.items()}},
        threshold="report only, C2's check: sim_then_attr >= 0.95, attr_then_sim <= 0.60, gap >= 0.35, retention "
        ">= 0.95 in every schedule", decision=d, kind="report",
        per_seed=list(sim - attr),
        paper="GPT-2 on synthetic data: joint / attribute-later ~100%, similarity-later ~50% (binary chance)",
        details="Per-seed accuracy " + "; ".join(f"{k} {_fmt(v)}" for k, v in acc.items())
        + "; retention (the minimal model's top-k check over all S + A + I premises) "
        + "; ".join(f"{k} {_fmt(v)}" for k, v in retention.items()) + ". "
        + ("Retention holds in every schedule, so the gap is not forgetting. " if ret_ok else
           "Retention is not shown >= 0.95 in every schedule, so a gap here may be forgetting, not the asymmetry. ")
        + "Report-only: it does not gate the paper." + _verdict_text(d, "more GPT seeds (`--set gpt_seeds=N`) or "
        "`--scale medium` (a larger GPT-2-architecture model, more seeds); `--scale paper` trains GPT-2 small "
        "(12 layers, d = 768) from scratch on a GPU."))


# -------------------------------------------------------------------------------------------------- run
def _jobs(cfg: dict[str, Any]) -> tuple[list[dict], list[dict], list[dict]]:
    seeds = range(cfg["seed"], cfg["seed"] + cfg["n_seeds"])
    common = {k: cfg[k] for k in ("n_groups", "group_size", "n_features", "n_individual", "d_model", "init_std",
                                  "lr", "device")}
    S = cfg["steps_per_stage"]
    arms = {
        "joint": dict(schedule="joint", steps_per_stage=S),
        "sim_then_attr": dict(schedule="sim_then_attr", steps_per_stage=S),
        "attr_then_sim": dict(schedule="attr_then_sim", steps_per_stage=S),
        "attr_then_sim_short": dict(schedule="attr_then_sim", steps_per_stage=(cfg["short_first_stage"], S)),
        "attr_then_sim_noind": dict(schedule="attr_then_sim", steps_per_stage=S, n_individual=0),
        "attr_then_sim_boundary": dict(schedule="attr_then_sim", steps_per_stage=S,
                                       n_individual=cfg["boundary_n_individual"]),
        "attribute_only": dict(schedule="attribute_only", steps_per_stage=S),
    }
    timed = {"sim_then_attr", "attr_then_sim", "attr_then_sim_short"}  # the time-course figure (first seed only)
    cur = []
    for arm, kw in arms.items():
        for s in seeds:
            first = s == cfg["seed"]
            job = {**common, **kw, "seed": s, "keep_cosines": first,
                   "eval_every": cfg["eval_every"] if first and arm in timed else 0}
            cur.append({"arm": arm, "kwargs": job})
    th = [{"bridge": b, "seed": s, "n_chains": cfg["two_hop_chains"], "d_model": cfg["d_model"],
           "init_std": cfg["init_std"], "lr": cfg["lr"], "steps": cfg["two_hop_steps"],
           "device": cfg["device"]}
          for b in (True, False) for s in seeds]
    gpt = [{"schedule": sch, "seed": s, "n_groups": cfg["n_groups"], "group_size": cfg["group_size"],
            "n_features": cfg["n_features"], "n_individual": cfg["n_individual"],
            "steps_per_stage": cfg["gpt_steps_per_stage"], "n_layers": cfg["gpt_layers"],
            "d_model": cfg["gpt_d_model"], "n_heads": cfg["gpt_heads"], "lr": cfg["gpt_lr"], "device": cfg["device"]}
           for sch in GPT_SCHEDULES for s in range(cfg["seed"], cfg["seed"] + cfg["gpt_seeds"])]
    return cur, th, gpt


GPT_SCHEDULES = ("joint", "sim_then_attr", "attr_then_sim")


def _curriculum_cost(job: dict[str, Any]) -> int:
    """GD steps of a curriculum job (its schedule's stages), the sort key of the longest-first job order."""
    kw = job["kwargs"]
    s = kw["steps_per_stage"]
    return int(sum(s)) if isinstance(s, (tuple, list)) else s * (1 if kw["schedule"] in ("joint", "attribute_only")
                                                                  else 2)


def _curriculum_job(arm: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    return {"arm": arm, **run_curriculum(**kwargs)}


_KINDS = {"curriculum": _curriculum_job, "two_hop": run_two_hop, "gpt": run_gpt_curriculum}


def _timed_job(kind: str, kwargs: dict[str, Any]) -> tuple[str, float, Any]:
    """One job of any kind, with its own seconds (the jobs share one pool, so no stage has its own wall time)."""
    t0 = time.perf_counter()
    out = _KINDS[kind](**kwargs)
    return kind, time.perf_counter() - t0, out


def _gpt_arch(cfg: dict[str, Any]) -> str:
    L, d, h = cfg["gpt_layers"], cfg["gpt_d_model"], cfg["gpt_heads"]
    name = "GPT-2 small" if (L, d, h) == (12, 768, 12) else "GPT-2-architecture transformer"
    return (f"{name} ({L} layers, d = {d}, {h} heads, LayerNorm, GELU, learned positions, tied embeddings) trained "
            f"from scratch, typed answer logits, full-batch AdamW lr {cfg['gpt_lr']:g}, {cfg['gpt_steps_per_stage']} "
            "steps per stage")


def run(config: dict[str, Any]) -> Result:
    cfg = dict(config)
    validate_config(cfg)
    scale = cfg.get("scale", "small")
    t0 = time.time()
    cur_jobs, th_jobs, gpt_jobs = _jobs(cfg)
    workers = None if cfg["workers"] == 0 else cfg["workers"]
    # one pool for every job, longest first (GPT jobs, then the curricula by step count, then two-hop), so neither
    # worker idles at a stage boundary; each job is a deterministic single-thread run, so the order changes nothing
    tagged = ([("gpt", i, j) for i, j in enumerate(gpt_jobs)]
              + sorted((("curriculum", i, j) for i, j in enumerate(cur_jobs)), key=lambda t: -_curriculum_cost(t[2]))
              + [("two_hop", i, j) for i, j in enumerate(th_jobs)])
    done = run_parallel(_timed_job, [{"kind": k, "kwargs": j} for k, _, j in tagged], workers=workers,
                        desc="analogy")
    out: dict[str, list] = {"gpt": [None] * len(gpt_jobs), "curriculum": [None] * len(cur_jobs),
                            "two_hop": [None] * len(th_jobs)}
    for (kind, i, _), (_, _, r) in zip(tagged, done):
        out[kind][i] = r
    cur, th, gpt = out["curriculum"], out["two_hop"], out["gpt"]
    job_s = {k: float(sum(s for kind, s, _ in done if kind == k)) for k in _KINDS}
    n_w = min(workers or default_workers(), len(tagged))
    # seconds per extra seed on this many workers (for the hints: "about N seeds ... about T min")
    cost = (job_s["curriculum"] + job_s["two_hop"]) / n_w / cfg["n_seeds"]
    cost_gpt = job_s["gpt"] / n_w / cfg["gpt_seeds"] if cfg["gpt_seeds"] else None

    by: dict[str, list[dict]] = {}
    for r in cur:
        by.setdefault(r["arm"], []).append(r)
    col = lambda arm, key: [r[key] for r in by[arm]]  # noqa: E731
    tb = [r for r in th if r["bridge"]]
    tn = [r for r in th if not r["bridge"]]
    claims = [
        check_joint(col("joint", "accuracy"), col("joint", "same_cos"), col("joint", "cross_cos"), cost),
        check_asymmetry(col("sim_then_attr", "accuracy"), col("attr_then_sim", "accuracy"),
                        {a: col(a, "retention") for a in ("joint", "sim_then_attr", "attr_then_sim")}, cost),
        check_control("C2-short", col("attr_then_sim_short", "accuracy"), 0.80,
                      f"its attribute stage is short ({cfg['short_first_stage']} steps)", cost),
        check_control("C2-noind", col("attr_then_sim_noind", "accuracy"), 0.90,
                      "entities have no individual facts (n_individual = 0)", cost),
        check_two_hop([r["composed"] for r in tb], [r["analogical"] for r in tb], cost),
        check_no_bridge([r["composed"] for r in tn], [r["analogical"] for r in tn]),
        check_attribute_only(col("attribute_only", "accuracy"), cfg["n_groups"]),
        check_one_fact(col("attr_then_sim_boundary", "accuracy"), col("attr_then_sim_boundary", "retention"),
                       cfg["boundary_n_individual"]),
    ]
    gpt_acc = {sch: [r["accuracy"] for r in gpt if r["schedule"] == sch] for sch in GPT_SCHEDULES}
    if gpt:
        claims.append(check_gpt(gpt_acc, {sch: [r["retention"] for r in gpt if r["schedule"] == sch]
                                          for sch in GPT_SCHEDULES}, _gpt_arch(cfg), cost_gpt))
    table = {arm: {k: _mean_sd(col(arm, k)) for k in ("accuracy", "conclusion_prob", "retention", "same_cos",
                                                       "cross_cos")} for arm in by}
    per_seed = {arm: {k: col(arm, k) for k in ("accuracy", "conclusion_prob", "retention", "same_cos",
                                                "cross_cos", "final_loss")} for arm in by}
    two_hop = {name: {k: [r[k] for r in rs] for k in ("composed", "analogical", "retention", "final_loss")}
               for name, rs in (("bridge", tb), ("no_bridge", tn))}
    metrics = {"table_mean_sd": table, "per_seed": per_seed, "two_hop": two_hop, "gpt_arm": gpt,
               "gpt_arch": _gpt_arch(cfg) if gpt else "",
               "time_course": {a: by[a][0]["time_course"] for a in ("sim_then_attr", "attr_then_sim",
                                                                     "attr_then_sim_short")},
               "seeds": list(range(cfg["seed"], cfg["seed"] + cfg["n_seeds"])),
               "job_s": job_s, "workers": n_w}
    res = Result(slug=SLUG, scale=scale, config=cfg, metrics=metrics, claims=claims)
    _figures(res, by, tb, tn, cfg)
    res.runtime_s = time.time() - t0
    res.notes = (f"{cfg['n_seeds']} seeds x 7 curriculum arms + 2 two-hop arms of {_MODEL}; "
                 f"{cfg['steps_per_stage']} GD steps per stage; GPT arm (report-only): {cfg['gpt_seeds']} seeds x 3 "
                 f"schedules of a {_gpt_arch(cfg)}.")
    return res


def _mean_sd(x: Any) -> tuple[float, float]:
    a = np.asarray(x, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0


def _figures(res: Result, by: dict, tb: list, tn: list, cfg: dict) -> None:
    arms = list(by) + ["two_hop_bridge", "two_hop_no_bridge"]
    vals = [[r["accuracy"] for r in by[a]] for a in by] + [[r["composed"] for r in tb], [r["composed"] for r in tn]]
    fig, ax = new_figure(width=8.0)
    ax.bar(range(len(arms)), [np.mean(v) for v in vals], color="#9ecae1")
    for i, v in enumerate(vals):
        ax.plot([i] * len(v), v, "k.", alpha=0.7)
    ax.axhline(1.0 / cfg["n_groups"], ls=":", c="grey", label="chance (analogy)")
    ax.set_xticks(range(len(arms)), arms, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("test accuracy")
    ax.legend(fontsize=8)
    res.add_figure("accuracy_per_schedule", fig, caption="Analogical accuracy per schedule / control (bars: mean, "
                   "dots: seeds) and two-hop composed-query accuracy.")
    names = ["joint", "sim_then_attr", "attr_then_sim"]
    fig, axes = new_figure(ncols=3, width=3.6, height=3.4)
    for ax, a in zip(np.ravel(axes), names):
        C = np.asarray(by[a][0]["cosines"])
        im = ax.imshow(C, vmin=-1, vmax=1, cmap="RdBu_r")
        ax.set_title(a, fontsize=9)
        ax.set_xticks([]), ax.set_yticks([])
    fig.colorbar(im, ax=list(np.ravel(axes)), shrink=0.8)
    res.add_figure("cosine_matrices", fig, caption=f"Cosine similarity of entity representations E[:, e] (seed "
                   f"{cfg['seed']}; entities ordered by group, {cfg['group_size']} per group).")
    fig, ax = new_figure(width=6.0)
    for a, ls in (("sim_then_attr", "-"), ("attr_then_sim", "-"), ("attr_then_sim_short", "--")):
        tc = by[a][0]["time_course"]
        st, acc = np.asarray(tc["stage"]), np.asarray(tc["accuracy"])
        step = np.asarray(tc["step"])
        k = st == 1
        ax.plot(step[k] - step[k].min(), acc[k], ls, label=a, lw=2 if ls == "-" else 1.5)
    ax.set_xlabel("stage-2 GD step")
    ax.set_ylabel("analogical accuracy")
    ax.axhline(1.0 / cfg["n_groups"], ls=":", c="grey")
    ax.legend(fontsize=8)
    res.add_figure("stage2_time_course", fig, caption=f"Analogical accuracy during the second stage (seed "
                   f"{cfg['seed']}); attr_then_sim has no transient when its first stage converged.")
