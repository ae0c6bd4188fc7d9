"""Paper-scale path (spec §7): real videos, a real MLLM responder and LLM judges behind OpenAI-compatible servers.

    vllm serve Qwen/Qwen2.5-Omni-7B --port 8000 --allowed-local-media-path /data   # responder + entailment judge
    vllm serve Qwen/Qwen3-8B --port 8001                                           # text judge roles
    icml26 run murgat --scale paper --set bench_path=/data/murgat.jsonl --set n_parallel=64

The engine that scales out is the serving engine: vLLM batches the concurrent requests this module sends from
`n_parallel` threads (continuous batching across GPUs with `--tensor-parallel-size`/several replicas behind a
load balancer). Every responder and judge call is cached in JSONL files keyed by the exact request, so an
interrupted or repeated run costs nothing for the calls already made. Clips are cut with `FFmpegClipper`
(frame / video-only / audio-only, as the official evaluator) and sent as base64 data URLs.

Inputs: `bench_path` (BenchmarkItem JSONL with `media.path`; the MuRGAt release converted to this format),
optionally `responses_path` (skip generation) and `human_path` (JSONL {item_id, model, murgat_score, coverage}:
then the response-level and system-level agreement are computed). This module takes the config as an argument
and never imports experiment.py.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from icml26.common import stats
from icml26.common.validation import check_choice, check_int, check_seed, require_keys
from icml26.results import Claim, Result

__all__ = ["validate_paper_config", "run_paper", "cached_generate", "PAPER_KEYS"]

PAPER_KEYS = ("bench_path", "responses_path", "human_path", "out_dir", "responder_url", "responder_model", "styles",
              "judge_url", "judge_model", "entail_url", "entail_model", "api_key_env", "n_parallel", "max_tokens",
              "precision_mode", "cache_path", "clip_dir", "max_items", "n_boot")


def validate_paper_config(config: dict[str, Any]) -> None:
    """Raise ValueError/TypeError naming the first bad key of a paper-scale config."""
    require_keys(config, PAPER_KEYS, optional=("scale", "seed"))
    check_seed(config.get("seed", 0), "seed")
    for k in ("bench_path", "responses_path", "human_path", "out_dir", "responder_url", "responder_model",
              "judge_url", "judge_model", "entail_url", "entail_model", "api_key_env", "cache_path", "clip_dir"):
        if not isinstance(config[k], str):
            raise TypeError(f"{k} must be a str, got {type(config[k]).__name__}")
    if not config["out_dir"]:
        raise ValueError("out_dir must not be empty")
    styles = config["styles"]
    if isinstance(styles, str) or not isinstance(styles, list) or not styles:
        raise TypeError("styles must be a non-empty list among base, cited, posthoc, program")
    for s in styles:
        check_choice(s, "styles", ("base", "cited", "posthoc", "program"))
    check_int(config["n_parallel"], "n_parallel", min=1)
    check_int(config["max_tokens"], "max_tokens", min=1)
    check_int(config["max_items"], "max_items", min=0)
    n_boot = check_int(config["n_boot"], "n_boot", min=0)
    if 0 < n_boot < 50:
        raise ValueError(f"n_boot must be 0 (no intervals) or >= 50, got {n_boot}")
    check_choice(config["precision_mode"], "precision_mode", ("alce", "individual"))


def cached_generate(fn: Callable[[list[dict[str, Any]]], str], cache: Any) -> Callable[[list[dict[str, Any]]], str]:
    """`fn` with its replies cached in `cache` (dict-like) under the JSON of the messages."""
    def call(messages: list[dict[str, Any]]) -> str:
        key = "gen:" + json.dumps(messages, sort_keys=True)
        if key in cache:
            return str(cache[key])
        out = fn(messages)
        cache[key] = out
        return out

    return call


def run_paper(config: dict[str, Any], *, responder_fn: Callable | None = None, judge_fn: Callable | None = None,
              entail_fn: Callable | None = None) -> Result:
    """Generate (or load) responses, score them with LLM judges on FFmpeg clips, compare with human scores if given.

    The `*_fn` arguments replace the OpenAI-compatible clients (tests pass a transformers model or a stub).
    """
    from icml26.murgat.cache import JsonlCache
    from icml26.murgat.clips import FFmpegClipper, find_ffmpeg
    from icml26.murgat.evaluator import DatasetReport, MurgatEvaluator
    from icml26.murgat.generation import MLLMResponder, OpenAIChat, parallel_map
    from icml26.murgat.judges import LLMJudge
    from icml26.murgat.schema import load_benchmark, load_jsonl, load_responses, save_jsonl, save_responses

    validate_paper_config(config)
    if not config["bench_path"]:
        raise ValueError("bench_path must point to the benchmark JSONL (the MuRGAt release in our format); "
                         "see docs/murgat.md")
    t0 = time.perf_counter()
    out = Path(config["out_dir"])
    out.mkdir(parents=True, exist_ok=True)
    items = load_benchmark(config["bench_path"])
    if int(config["max_items"]):
        items = items[: int(config["max_items"])]
    key = os.environ.get(config["api_key_env"]) if config["api_key_env"] else None
    n_par = int(config["n_parallel"])
    gen_cache = JsonlCache(out / "generation_cache.jsonl")
    judge_cache = JsonlCache(config["cache_path"] or out / "judge_cache.jsonl")

    if config["responses_path"]:
        responses = load_responses(config["responses_path"])
    else:
        base = responder_fn or OpenAIChat(config["responder_url"], config["responder_model"], api_key=key,
                                          max_tokens=int(config["max_tokens"]))
        gen = cached_generate(base, gen_cache)
        responses = []
        for style in config["styles"]:
            r = MLLMResponder(gen, style=style, name=f"{config['responder_model']}:{style}")
            responses += parallel_map(r.respond, items, n_par, desc=f"respond ({style})")
        save_responses(responses, out / "responses.jsonl")

    text_llm = judge_fn or OpenAIChat(config["judge_url"], config["judge_model"], api_key=key, max_tokens=512)
    mm_llm = entail_fn or OpenAIChat(config["entail_url"], config["entail_model"], api_key=key, max_tokens=16)
    clipper = None
    if any(it.media.path for it in items) and find_ffmpeg():
        clipper = FFmpegClipper(config["clip_dir"] or out / "clips")
    text_judge = LLMJudge(text_llm, cache=judge_cache)
    mm_judge = LLMJudge(mm_llm, clipper=clipper, cache=judge_cache)
    ev = MurgatEvaluator(text_judge, text_judge, mm_judge, text_judge, precision_mode=config["precision_mode"])
    by_id = {it.id: it for it in items}
    unknown = [r.item_id for r in responses if r.item_id not in by_id]
    if unknown and not int(config["max_items"]):
        raise ValueError(f"responses name items that are not in bench_path: {unknown[:5]}")
    responses = [r for r in responses if r.item_id in by_id]
    t_eval = time.perf_counter()
    rows = parallel_map(lambda r: ev.score_dataset([by_id[r.item_id]], [r]).rows[0], responses, n_par,
                        desc="evaluate")
    report = DatasetReport(rows, seconds=time.perf_counter() - t_eval)
    save_jsonl(report.to_json(trace=True), out / "scores.jsonl")
    per_model = report.per_model()

    claims = [Claim(
        id="P1", statement="Answer accuracy and attribution quality are decoupled across generation settings.",
        metric="per model/style: answer accuracy and mean MuRGAt-Score", measured=per_model,
        threshold="report only", kind="report",
        decision=stats.measured(float(np.mean([r["score"].murgat_score for r in rows])) if rows else math.nan,
                                label="mean MuRGAt-Score"),
        details="Compare the settings (base/cited/posthoc/program) of the served model: the paper finds correct "
                "answers with poor citations and program-style grounding raising the score while lowering accuracy.",
        paper="program-style grounding ≈ +9.6 MuRGAt-Score on average, lower accuracy (secondary summaries)")]
    metrics: dict[str, Any] = {"per_model": per_model, "n_items": len(items), "n_responses": len(rows),
                               "judge_calls_made": text_judge.n_calls + mm_judge.n_calls,
                               "clips_cut": clipper.n_cuts if clipper else 0}
    if config["human_path"]:
        from icml26.murgat.meta import correlate, correlation_interval, system_agreement, within_group_r

        human = {(h["item_id"], h["model"]): h for h in load_jsonl(config["human_path"])}
        pairs = [(r, human[(r["item_id"], r["model"])]) for r in rows if (r["item_id"], r["model"]) in human]
        if len(pairs) >= 3:
            a = np.array([r["score"].murgat_score for r, _ in pairs])
            h = np.array([float(x["murgat_score"]) for _, x in pairs])
            g = [r["model"] for r, _ in pairs]
            c = correlate(a, h, n_boot=int(config["n_boot"]), seed=int(config.get("seed", 0)))
            if int(config["n_boot"]):
                iv = correlation_interval(a, h, n_boot=int(config["n_boot"]), seed=int(config.get("seed", 0)))
            else:  # no resampling asked for: no interval, so the gate cannot be decided
                iv = stats.Interval(-math.inf, math.inf, method="none", n=len(a), unit="responses")
            dec = stats.decide(float(c["pearson"]["r"]), iv, 0.75, ">=", label="Pearson r >= 0.75")
            models = sorted(set(g))
            sa = system_agreement({m: float(a[np.array(g) == m].mean()) for m in models},
                                  {m: float(h[np.array(g) == m].mean()) for m in models}) if len(models) > 1 else {}
            metrics["human_agreement"] = {"correlation": c, "within_model_r": within_group_r(a, h, g),
                                          "system": sa}
            claims.append(Claim(
                id="P2", statement="The automatic MuRGAt-Score correlates with human judgments.",
                metric="response-level Pearson r, automatic vs human MuRGAt-Score", measured=c["pearson"],
                threshold=">= 0.75", decision=dec, kind="gate",
                details=f"{dec.text()} {len(pairs)} responses with human scores; within-model r "
                        f"{metrics['human_agreement']['within_model_r']:.3f}; system agreement {sa}",
                paper="Pearson r ≈ 0.84-0.86 (secondary summaries)"))
    res = Result(slug="murgat", scale="paper", config=dict(config), metrics=metrics, claims=claims,
                 notes=f"outputs in {out}")
    res.runtime_s = time.perf_counter() - t0
    return res
