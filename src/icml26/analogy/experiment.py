"""CPU reproduction of spec section 6 (as amended by its review notes) and the paper-scale configuration.

Arms (each seed s draws its own world token layout and init; seeds seed..seed+n_seeds-1, five by default):
  joint, sim_then_attr, attr_then_sim (each stage `steps_per_stage` GD steps), the two gated controls of review
  note 1 (attr_then_sim with a `short_first_stage`-step attribute stage; attr_then_sim with n_individual = 0),
  attribute_only (chance baseline, report-only) and two-hop with / without identity bridges.
Claims: C1 joint transfer + aligned representations, C2 curriculum asymmetry with retention, C2-short and
C2-noind controls, C3 two-hop with bridges (gates); C3-nobridge (sanity, holds almost by construction) and R1
attribute-only chance (report-only). Every gate tests the spec's minimal factorized model, not a transformer.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from scipy import stats

from icml26.analogy.baselines import run_curriculum, run_gpt_curriculum, run_two_hop
from icml26.common import run_parallel
from icml26.common.plotting import new_figure
from icml26.common.validation import check_float, check_int, check_seed, require_keys
from icml26.results import Claim, Result

SLUG = "analogy"
_MODEL = "the spec's minimal factorized model (one-layer linear attention + readout, float64, GD), not a transformer"

_BASE = {"n_groups": 8, "group_size": 4, "n_features": 1, "n_individual": 3, "d_model": 32, "init_std": 0.01,
         "lr": 1.0, "two_hop_chains": 16, "device": "cpu"}
CONFIGS: dict[str, dict[str, Any]] = {
    "smoke": {"seed": 0, "n_seeds": 1, **_BASE, "steps_per_stage": 300, "short_first_stage": 50,
              "two_hop_steps": 200, "eval_every": 50, "workers": 1, "gpt_seeds": 1, "gpt_steps_per_stage": 20},
    # spec section 6 + review notes 1-3: seeds 0-4, 3000 GD steps per stage, 600 two-hop steps
    "small": {"seed": 0, "n_seeds": 5, **_BASE, "steps_per_stage": 3000, "short_first_stage": 200,
              "two_hop_steps": 600, "eval_every": 100, "workers": 2, "gpt_seeds": 3, "gpt_steps_per_stage": 400},
    # spec section 7, synthetic half: the same model on a much larger world and more seeds (CPU or GPU, no
    # engine needed). The real-LM half (HF Trainer fine-tune of premise sentences) is `icml26.analogy.scale`.
    "paper": {"seed": 0, "n_seeds": 10, **_BASE, "n_groups": 256, "d_model": 256, "two_hop_chains": 512,
              "steps_per_stage": 6000, "short_first_stage": 200, "two_hop_steps": 2000, "eval_every": 200,
              "workers": 1, "device": "auto", "gpt_seeds": 10, "gpt_steps_per_stage": 2000},
}
CONFIG_HELP = {
    "seed": "first seed (world token layout and init); seeds seed..seed+n_seeds-1",
    "n_seeds": "number of seeds (review note 2: five)",
    "n_groups": "G, groups of entities (each with one attribute held by its source entity)",
    "group_size": "kappa, entities per group (>= 2; entities 1.. are the test entities)",
    "n_features": "shared features per group (similarity premises per entity)",
    "n_individual": "entity-specific facts per entity (the asymmetry needs >= 1)",
    "d_model": "d, representation width",
    "init_std": "sigma of the N(0, sigma^2) init of E and U",
    "lr": "full-batch gradient-descent step size",
    "steps_per_stage": "GD steps per curriculum stage (joint has one stage)",
    "short_first_stage": "attribute-stage length of the short-first-stage control (steps)",
    "two_hop_chains": "n, chains a -> b -> c",
    "two_hop_steps": "GD steps of the two-hop runs",
    "eval_every": "time-course logging interval (steps)",
    "workers": "worker processes (0 = all CPUs; 1 on a GPU)",
    "gpt_seeds": "seeds of the report-only 2-layer GPT arm (0 = skip it)",
    "gpt_steps_per_stage": "full-batch AdamW steps per stage of the GPT arm",
    "device": "torch device of the runs: cpu, cuda[:i] or auto (cuda when available)",
}
EXPECTED_RUNTIME_S = {"smoke": 6, "small": 105}  # small: 103 s measured under the lock (2 cores)
_INTS = {"seed": (0, 2**63 - 1), "n_seeds": (1, 1000), "n_groups": (2, 100_000), "group_size": (2, 100_000),
         "n_features": (1, 100_000), "n_individual": (0, 100_000), "d_model": (1, 100_000),
         "steps_per_stage": (1, 10**8), "short_first_stage": (1, 10**8), "two_hop_chains": (2, 100_000),
         "two_hop_steps": (1, 10**8), "eval_every": (1, 10**8), "workers": (0, 1024),
         "gpt_seeds": (0, 1000), "gpt_steps_per_stage": (1, 10**8)}


def validate_config(config: dict[str, Any]) -> None:
    """Raise ValueError/TypeError naming the first bad key."""
    require_keys(config, list(CONFIG_HELP))
    for k, (lo, hi) in _INTS.items():
        check_int(config[k], k, min=lo, max=hi)
    check_seed(config["seed"])
    check_float(config["init_std"], "init_std", min=0.0, min_open=True)
    check_float(config["lr"], "lr", min=0.0, min_open=True)
    if not isinstance(config["device"], str) or not (config["device"] in ("cpu", "auto")
                                                     or config["device"].startswith("cuda")):
        raise ValueError(f"device must be 'cpu', 'cuda[:i]' or 'auto', got {config['device']!r}")
    if config["short_first_stage"] >= config["steps_per_stage"]:
        raise ValueError(f"short_first_stage ({config['short_first_stage']}) must be shorter than steps_per_stage "
                         f"({config['steps_per_stage']})")


# ----------------------------------------------------------------------------------------- claim checks
def _mean_sd(x: Any) -> tuple[float, float]:
    a = np.asarray(x, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0


def _undecided(x: Any, thr: float) -> bool:
    """True when the seed spread is at least the margin to the threshold (the check cannot decide)."""
    m, sd = _mean_sd(x)
    return sd > 0 and abs(m - thr) <= sd


def _fmt(x: Any) -> str:
    return "[" + ", ".join(f"{v:.3f}" for v in np.asarray(x, dtype=float)) + "]"


def _decide_note(parts: dict[str, tuple[Any, float]]) -> str:
    bad = [k for k, (x, thr) in parts.items() if _undecided(x, thr)]
    return (" CANNOT DECIDE at this size: the seed SD is at least the margin for " + ", ".join(bad) + "."
            if bad else " Decidable: every margin exceeds its seed SD.")


def paired_ci(a: Any, b: Any, level: float = 0.95) -> tuple[float, float, float]:
    """Mean of the per-seed differences a - b and its t confidence interval (lo, hi)."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    m = float(d.mean())
    if d.size < 2:
        return m, float("nan"), float("nan")
    half = float(stats.t.ppf(0.5 + level / 2, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size))
    return m, m - half, m + half


def check_joint(acc: Any, same: Any, cross: Any) -> Claim:
    """C1: joint accuracy mean >= 0.95 and same-group cosine >= cross-group cosine + 0.2 (means over seeds)."""
    margin = np.asarray(same, dtype=float) - np.asarray(cross, dtype=float)
    m_acc, m_gap = float(np.mean(acc)), float(np.mean(margin))
    held = m_acc >= 0.95 and m_gap >= 0.2
    return Claim(
        id="C1", statement="Joint training on similarity + attribution premises transfers the attribute to "
        "analogous entities, whose representations align (feature resemblance).",
        metric="analogical accuracy (mean over seeds); same-group minus cross-group entity cosine",
        measured={"accuracy": m_acc, "same_minus_cross_cos": m_gap, "same_cos": float(np.mean(same)),
                  "cross_cos": float(np.mean(cross))},
        threshold="accuracy >= 0.95 and same_cos >= cross_cos + 0.2", held=held, gate=True, per_seed=list(acc),
        paper="joint training: ~100% analogical success; aligned entities show higher cosine similarity",
        details=f"Tests {_MODEL}. Per-seed accuracy {_fmt(acc)}, same-cross cosine {_fmt(margin)}. Can fail "
        "(e.g. lazy init or no similarity premises)." + _decide_note({"accuracy": (acc, 0.95),
                                                                        "cosine margin": (margin, 0.2)}))


def check_asymmetry(sim: Any, attr: Any, retention: dict[str, Any]) -> Claim:
    """C2: sim_then_attr >= 0.95, attr_then_sim <= 0.60, gap >= 0.35, premise retention >= 0.95 everywhere."""
    m_s, m_a = float(np.mean(sim)), float(np.mean(attr))
    gap, lo, hi = paired_ci(sim, attr)
    ret = {k: float(np.mean(v)) for k, v in retention.items()}
    held = m_s >= 0.95 and m_a <= 0.60 and gap >= 0.35 and min(ret.values()) >= 0.95
    return Claim(
        id="C2", statement="Similarity must be learned before attributes: similarity-first transfers, "
        "attribute-first does not, and neither forgets its premises.",
        metric="analogical accuracy of sim_then_attr and attr_then_sim (means over seeds), their paired gap, "
        "premise retention per schedule",
        measured={"sim_then_attr": m_s, "attr_then_sim": m_a, "gap": gap, "gap_ci95": [lo, hi],
                  **{f"retention_{k}": v for k, v in ret.items()}},
        threshold="sim_then_attr >= 0.95, attr_then_sim <= 0.60, gap >= 0.35, retention >= 0.95 in every schedule",
        held=held, gate=True, per_seed=list(np.asarray(sim, float) - np.asarray(attr, float)),
        paper="attribute-later (= our sim_then_attr) ~100%; similarity-later (= our attr_then_sim) ~50%, chance "
        "of the paper's binary evaluation (ours has G-way chance 0.125)",
        details=f"Tests {_MODEL}. Per-seed sim_then_attr {_fmt(sim)}, attr_then_sim {_fmt(attr)}; paired gap "
        f"{gap:.3f} (95% t-CI [{lo:.3f}, {hi:.3f}]). attr_then_sim <= 0.60 alone would also pass for a pipeline "
        "bug that blocks transfer; the controls C2-short and C2-noind rule that out; retention rules out "
        "forgetting." + _decide_note({"sim_then_attr": (sim, 0.95), "attr_then_sim": (attr, 0.60),
                                       "gap": (np.asarray(sim, float) - np.asarray(attr, float), 0.35)}))


def check_control(cid: str, values: Any, threshold: float, what: str) -> Claim:
    """C2-short / C2-noind: the control arm of attr_then_sim transfers (mean >= threshold)."""
    m = float(np.mean(values))
    return Claim(
        id=cid, statement=f"Control: attr_then_sim transfers when {what}, so its failure in C2 comes from "
        "converged entity-specific directions, not from the pipeline.",
        metric="analogical accuracy of the control arm (mean over seeds)", measured=m,
        threshold=f">= {threshold:.2f}", held=m >= threshold, gate=True, per_seed=list(values),
        paper="not in the paper (spec review note 1 control; spec measured "
        + ("0.875/0.958/1.000)" if cid == "C2-short" else "1.000 x3)"),
        details=f"Tests {_MODEL}. Per-seed {_fmt(values)}. Same code as C2's attr_then_sim arm with one "
        "setting changed; can fail." + _decide_note({"accuracy": (values, threshold)}))


def check_two_hop(composed: Any, analogical: Any) -> Claim:
    """C3: two-hop with identity bridges >= 0.95 on both query forms."""
    mc, ma = float(np.mean(composed)), float(np.mean(analogical))
    return Claim(
        id="C3", statement="Two-hop reasoning is analogy with identity bridges: with the bridge facts the "
        "second hop transfers to the composed query.",
        metric="two-hop accuracy with bridges, composed (a,R1,R2) and analogical (a,R2) queries (means)",
        measured={"composed": mc, "analogical": ma}, threshold=">= 0.95 for both forms",
        held=mc >= 0.95 and ma >= 0.95, gate=True, per_seed=list(composed),
        paper="two-hop with identity bridges > 99%",
        details=f"Tests {_MODEL}. Per-seed composed {_fmt(composed)}, analogical {_fmt(analogical)} (16 queries "
        "per seed, SE ~0.09 each); can fail (without bridges it does)."
        + _decide_note({"composed": (composed, 0.95), "analogical": (analogical, 0.95)}))


def check_no_bridge(composed: Any, analogical: Any) -> Claim:
    """C3-nobridge (sanity, not gated): without bridges both forms <= 0.25."""
    mc, ma = float(np.mean(composed)), float(np.mean(analogical))
    return Claim(
        id="C3-nobridge", statement="Without identity bridges two-hop reasoning fails.",
        metric="two-hop accuracy without bridges, composed and analogical (means)",
        measured={"composed": mc, "analogical": ma}, threshold="<= 0.25 for both forms (sanity)",
        held=mc <= 0.25 and ma <= 0.25, gate=False, per_seed=list(composed),
        paper="without identity bridges: near failure",
        details=f"SANITY, holds almost by construction (review note 3: nothing links a to b). Per-seed composed "
        f"{_fmt(composed)}, analogical {_fmt(analogical)}; chance 1/16.")


def check_attribute_only(acc: Any, n_groups: int) -> Claim:
    """R1 (report-only): with no similarity premises the test accuracy stays near chance 1/G."""
    m = float(np.mean(acc))
    ch = 1.0 / n_groups
    return Claim(
        id="R1", statement="Without similarity premises there is no analogical transfer (chance).",
        metric="analogical accuracy of the attribute_only schedule (mean)", measured=m,
        threshold=f"report only (chance {ch:.3f})", held=bool(abs(m - ch) <= 0.15), gate=False, per_seed=list(acc),
        paper="attribute-only: chance (spec section 4)",
        details=f"Per-seed {_fmt(acc)}. Reported; 'held' means within 0.15 of chance.")


def check_gpt(acc: dict[str, Any], retention: dict[str, Any]) -> Claim:
    """R2 (report-only, review note 4): the curricula on a 2-layer softmax-attention GPT."""
    m = {k: float(np.mean(v)) for k, v in acc.items()}
    gap = m["sim_then_attr"] - m["attr_then_sim"]
    return Claim(
        id="R2", statement="The curriculum asymmetry on a small softmax-attention transformer trained from scratch "
        "on the same sentences (the paper's synthetic setting is a GPT-2).",
        metric="analogical accuracy per schedule of a 2-layer GPT (d=64, untyped next-token CE, AdamW)",
        measured={**m, "gap": gap, **{f"retention_SA_{k}": float(np.mean(v)) for k, v in retention.items()}},
        threshold="report only (direction held if sim_then_attr - attr_then_sim >= 0.35)", held=gap >= 0.35,
        gate=False, per_seed=list(np.asarray(acc["sim_then_attr"], float) - np.asarray(acc["attr_then_sim"], float)),
        paper="GPT-2 on synthetic data: joint / attribute-later ~100%, similarity-later ~50% (binary chance)",
        details="Per-seed accuracy " + "; ".join(f"{k} {_fmt(v)}" for k, v in acc.items()) + ". Untyped softmax: "
        "retention of the S+A premises per schedule " + "; ".join(f"{k} {_fmt(v)}" for k, v in retention.items())
        + " (a later stage can overwrite an earlier one, the forgetting confound of spec section 9). Report-only.")


# -------------------------------------------------------------------------------------------------- run
def _jobs(cfg: dict[str, Any]) -> tuple[list[dict], list[dict]]:
    seeds = range(cfg["seed"], cfg["seed"] + cfg["n_seeds"])
    common = {k: cfg[k] for k in ("n_groups", "group_size", "n_features", "n_individual", "d_model", "init_std",
                                  "lr", "device")}
    S, ev = cfg["steps_per_stage"], cfg["eval_every"]
    arms = {
        "joint": dict(schedule="joint", steps_per_stage=S),
        "sim_then_attr": dict(schedule="sim_then_attr", steps_per_stage=S, eval_every=ev),
        "attr_then_sim": dict(schedule="attr_then_sim", steps_per_stage=S, eval_every=ev),
        "attr_then_sim_short": dict(schedule="attr_then_sim", steps_per_stage=(cfg["short_first_stage"], S),
                                    eval_every=ev),
        "attr_then_sim_noind": dict(schedule="attr_then_sim", steps_per_stage=S, n_individual=0),
        "attribute_only": dict(schedule="attribute_only", steps_per_stage=S),
    }
    cur = []
    for arm, kw in arms.items():
        for s in seeds:
            job = {**common, **kw, "seed": s, "keep_cosines": s == cfg["seed"]}
            cur.append({"arm": arm, "kwargs": job})
    th = [{"bridge": b, "seed": s, "n_chains": cfg["two_hop_chains"], "d_model": cfg["d_model"],
           "init_std": cfg["init_std"], "lr": cfg["lr"], "steps": cfg["two_hop_steps"],
           "device": cfg["device"]}
          for b in (True, False) for s in seeds]
    return cur, th


def _curriculum_job(arm: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    return {"arm": arm, **run_curriculum(**kwargs)}


def run(config: dict[str, Any]) -> Result:
    cfg = dict(config)
    validate_config(cfg)
    scale = cfg.get("scale", "small")
    t0 = time.time()
    cur_jobs, th_jobs = _jobs(cfg)
    workers = None if cfg["workers"] == 0 else cfg["workers"]
    cur = run_parallel(_curriculum_job, cur_jobs, workers=workers, desc="analogy curricula")
    th = run_parallel(run_two_hop, th_jobs, workers=workers, desc="analogy two-hop")
    gpt_jobs = [{"schedule": sch, "seed": s, "n_groups": cfg["n_groups"], "group_size": cfg["group_size"],
                 "n_features": cfg["n_features"], "n_individual": cfg["n_individual"],
                 "steps_per_stage": cfg["gpt_steps_per_stage"]}
                for sch in ("joint", "sim_then_attr", "attr_then_sim")
                for s in range(cfg["seed"], cfg["seed"] + cfg["gpt_seeds"])]
    gpt = run_parallel(run_gpt_curriculum, gpt_jobs, workers=workers, desc="analogy GPT arm") if gpt_jobs else []

    by: dict[str, list[dict]] = {}
    for r in cur:
        by.setdefault(r["arm"], []).append(r)
    col = lambda arm, key: [r[key] for r in by[arm]]  # noqa: E731
    tb = [r for r in th if r["bridge"]]
    tn = [r for r in th if not r["bridge"]]
    claims = [
        check_joint(col("joint", "accuracy"), col("joint", "same_cos"), col("joint", "cross_cos")),
        check_asymmetry(col("sim_then_attr", "accuracy"), col("attr_then_sim", "accuracy"),
                        {a: col(a, "retention") for a in ("joint", "sim_then_attr", "attr_then_sim")}),
        check_control("C2-short", col("attr_then_sim_short", "accuracy"), 0.80,
                      f"its attribute stage is short ({cfg['short_first_stage']} steps)"),
        check_control("C2-noind", col("attr_then_sim_noind", "accuracy"), 0.90,
                      "entities have no individual facts (n_individual = 0)"),
        check_two_hop([r["composed"] for r in tb], [r["analogical"] for r in tb]),
        check_no_bridge([r["composed"] for r in tn], [r["analogical"] for r in tn]),
        check_attribute_only(col("attribute_only", "accuracy"), cfg["n_groups"]),
    ]
    gpt_acc = {sch: [r["accuracy"] for r in gpt if r["schedule"] == sch] for sch in ("joint", "sim_then_attr",
                                                                                   "attr_then_sim")}
    if gpt:
        claims.append(check_gpt(gpt_acc, {sch: [r["retention_SA"] for r in gpt if r["schedule"] == sch]
                                          for sch in gpt_acc}))
    table = {arm: {k: _mean_sd(col(arm, k)) for k in ("accuracy", "conclusion_prob", "retention", "same_cos",
                                                       "cross_cos")} for arm in by}
    per_seed = {arm: {k: col(arm, k) for k in ("accuracy", "conclusion_prob", "retention", "same_cos",
                                                "cross_cos", "final_loss")} for arm in by}
    two_hop = {name: {k: [r[k] for r in rs] for k in ("composed", "analogical", "retention", "final_loss")}
               for name, rs in (("bridge", tb), ("no_bridge", tn))}
    metrics = {"table_mean_sd": table, "per_seed": per_seed, "two_hop": two_hop, "gpt_arm": gpt,
               "time_course": {a: by[a][0]["time_course"] for a in ("sim_then_attr", "attr_then_sim",
                                                                     "attr_then_sim_short")},
               "seeds": list(range(cfg["seed"], cfg["seed"] + cfg["n_seeds"]))}
    res = Result(slug=SLUG, scale=scale, config=cfg, metrics=metrics, claims=claims)
    _figures(res, by, tb, tn, cfg)
    res.runtime_s = time.time() - t0
    res.notes = (f"{cfg['n_seeds']} seeds x 6 curriculum arms + 2 two-hop arms of {_MODEL}; "
                 f"{cfg['steps_per_stage']} GD steps per stage.")
    return res


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
