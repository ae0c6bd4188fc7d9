"""`python -m icml26.murgat evaluate --bench B.jsonl --responses R.jsonl --judge timeline|llm --out S.jsonl`

timeline: the rule-based pipeline (PronounDecontextualizer, RuleVerifiabilityJudge or a verifier trained with
--train-verifier N on synthetic responses, RuleDecomposer, TimelineEntailmentJudge on media.observations).
llm: LLMJudge for every role through an OpenAI-compatible server (--base-url, --model; --entail-url/--entail-model
for a separate audio-visual judge), FFmpeg clips when media.path is set; calls cached in --cache.
Prints the per-model table (accuracy, coverage, P, R, F1, MuRGAt-Score) and writes one JSON line per response.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m icml26.murgat", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("evaluate", help="score responses against a benchmark")
    e.add_argument("--bench", required=True, help="benchmark JSONL (BenchmarkItem records)")
    e.add_argument("--responses", required=True, help="responses JSONL (Response records)")
    e.add_argument("--judge", choices=("timeline", "llm"), default="timeline")
    e.add_argument("--out", required=True, help="output JSONL of per-response scores")
    e.add_argument("--precision-mode", choices=("alce", "individual"), default="alce")
    e.add_argument("--modalities", default="visual,audio", help="allowed citation modalities, comma-separated")
    e.add_argument("--train-verifier", type=int, default=0, metavar="N",
                   help="timeline judge: train a LogisticVerifiabilityJudge on N synthetic items (0: rule verifier)")
    e.add_argument("--base-url", default="http://localhost:8000/v1")
    e.add_argument("--model", default="")
    e.add_argument("--entail-url", default="")
    e.add_argument("--entail-model", default="")
    e.add_argument("--api-key-env", default="OPENAI_API_KEY")
    e.add_argument("--cache", default="", help="JSONL cache of judge calls (llm judge)")
    e.add_argument("--trace", action="store_true", help="write the per-sentence/per-fact trace too")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from icml26.murgat.evaluator import MurgatEvaluator
    from icml26.murgat.judges import (
        LLMJudge,
        PronounDecontextualizer,
        RuleDecomposer,
        RuleVerifiabilityJudge,
        TimelineEntailmentJudge,
    )
    from icml26.murgat.schema import load_benchmark, load_responses, save_jsonl

    try:
        items = load_benchmark(args.bench)
        responses = load_responses(args.responses)
    except (OSError, ValueError, TypeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    mods = tuple(m.strip() for m in args.modalities.split(",") if m.strip())
    if args.judge == "timeline":
        verifier = RuleVerifiabilityJudge()
        if args.train_verifier:
            from icml26.murgat.experiment import train_verifier

            verifier, _ = train_verifier(args.train_verifier, 0)
        ev = MurgatEvaluator(verifier, RuleDecomposer(mods), TimelineEntailmentJudge(), PronounDecontextualizer(),
                             precision_mode=args.precision_mode, allowed_modalities=mods)
    else:
        if not args.model:
            print("error: --judge llm needs --model (and --base-url)", file=sys.stderr)
            return 2
        from icml26.murgat.cache import JsonlCache
        from icml26.murgat.clips import FFmpegClipper, find_ffmpeg
        from icml26.murgat.generation import OpenAIChat

        key = os.environ.get(args.api_key_env) if args.api_key_env else None
        cache = JsonlCache(args.cache) if args.cache else {}
        text = LLMJudge(OpenAIChat(args.base_url, args.model, api_key=key, max_tokens=512), cache=cache,
                        allowed_modalities=mods)
        clipper = FFmpegClipper() if any(it.media.path for it in items) and find_ffmpeg() else None
        mm = LLMJudge(OpenAIChat(args.entail_url or args.base_url, args.entail_model or args.model, api_key=key,
                                 max_tokens=16), clipper=clipper, cache=cache, allowed_modalities=mods)
        ev = MurgatEvaluator(text, text, mm, text, precision_mode=args.precision_mode, allowed_modalities=mods)
    try:
        report = ev.score_dataset(items, responses, progress="evaluate")
    except (ValueError, TypeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    save_jsonl(report.to_json(trace=args.trace), args.out)
    print(f"{'model':28s} {'n':>5s} {'acc':>6s} {'cov':>6s} {'P':>6s} {'R':>6s} {'F1':>6s} {'score':>6s}")
    for m, row in report.per_model().items():
        print(f"{m:28s} {row['n']:5d} " + " ".join(f"{row[k]:6.3f}" for k in ("accuracy", "coverage", "precision",
                                                                              "recall", "f1", "murgat_score")))
    n_unparsed = sum(r["score"].n_unparsed for r in report.rows)
    if n_unparsed:  # never a silent drop: say how many texts a judge could not read (listed per response in --out)
        print(f"warning: {n_unparsed} sentences/facts the judges could not fully read (see 'unparsed' in "
              f"{args.out})", file=sys.stderr)
    print(json.dumps({"responses": len(report.rows), "seconds": round(report.seconds, 2), "out": args.out,
                      "n_unparsed": n_unparsed}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
