"""Throughput of the MuRGAt evaluator: responses scored per second with the rule-based judges, and judge calls per
response (entailment calls of the rule pipeline; all four roles when every role is an LLM, counted with a stub
generator that answers instantly, i.e. what a served LLM judge would be asked).

    flock /tmp/icml26-cpu.lock .venv/bin/python benchmarks/murgat_throughput.py [--items 100] [--json out.json]

Single process, one thread. Responses: the 7 reference responders on `--items` synthetic items (seed 0).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=100)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    from icml26.murgat import (
        LLMJudge,
        MurgatEvaluator,
        PronounDecontextualizer,
        RuleDecomposer,
        RuleVerifiabilityJudge,
        TimelineEntailmentJudge,
        generate_benchmark,
        reference_responders,
    )
    from icml26.murgat.experiment import train_verifier

    items = generate_benchmark(args.items, seed=0)
    resp = [(it, r.respond(it, np.random.default_rng([0, j, i]))) for j, r in enumerate(reference_responders())
            for i, it in enumerate(items)]
    learned, _ = train_verifier(100, 0)
    out = {"n_responses": len(resp)}
    for name, verifier in (("rule_verifier", RuleVerifiabilityJudge()), ("learned_verifier", learned)):
        ev = MurgatEvaluator(verifier, RuleDecomposer(), TimelineEntailmentJudge(), PronounDecontextualizer())
        t0 = time.perf_counter()
        calls = [ev.score_response(r.text, it.media).n_judge_calls for it, r in resp]
        dt = time.perf_counter() - t0
        out[name] = {"responses_per_s": len(resp) / dt, "entailment_calls_per_response": float(np.mean(calls)),
                     "seconds": dt}
    n = {"calls": 0}

    def stub(messages):
        n["calls"] += 1
        return "YES"

    j = LLMJudge(stub)
    ev = MurgatEvaluator(j, RuleDecomposer(), j, j)  # LLM for decontextualization, verifiability, entailment
    for it, r in resp:
        ev.score_response(r.text, it.media)
    out["llm_roles_except_decomposition_calls_per_response"] = n["calls"] / len(resp)
    n["calls"] = 0
    ev = MurgatEvaluator(j, j, j, j)
    for it, r in resp:
        ev.score_response(r.text, it.media)
    out["llm_all_roles_calls_per_response"] = n["calls"] / len(resp)
    print(json.dumps(out, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
