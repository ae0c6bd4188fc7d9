"""Throughput of the verbalization hooks: activations read and verbalizations produced per second.

    flock /tmp/icml26-cpu.lock .venv/bin/python benchmarks/verbalization_throughput.py [--skip-smollm2] [--json F]

TinyLM: the small-config TinyCausalLM (d 64, 2 layers, the toy vocabulary), untrained (speed does not depend on
the weights), batches of 64 six-token name prompts; LIT verbalizations with 6 placeholders + question and 4 new
tokens, Patchscopes with 4 new tokens. SmolLM2-135M-Instruct (30 layers, d 576): "I visited {country}" prompts,
reads at layer 12 (the forward stops there) and at the last layer, Patchscopes / zero-shot with 6 new tokens,
batches of 16. One torch thread (as the reproduction's workers use). Reports the median of `--repeats` timings.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from icml26.verbalization import (FeatureExtractionWorld, LITVerbalizer, PatchscopesVerbalizer, PersonaWorld,
                                  TinyCausalLM, ZeroShotBaseline, build_tokenizer, read_activations)
from icml26.verbalization.data import NAME_QUESTION
from icml26.verbalization.models import pad_right


def _rate(fn, n_items: int, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return n_items / statistics.median(times)


def bench_tiny(repeats: int) -> dict:
    w, f = PersonaWorld(0), FeatureExtractionWorld(0, n_subjects=48)
    tok = build_tokenizer(w, f)
    torch.manual_seed(0)
    model = TinyCausalLM(len(tok)).eval()
    items = (w.eval_items("consistent") + w.eval_items("shuffled"))[:64]
    src, qs = [i.source for i in items], [i.question for i in items]
    ids, mask = pad_right([tok.encode(s) for s in src])
    lit = LITVerbalizer(model, model, tok, tok, 1, 0, max_new_tokens=4, trained=True)
    ps = PatchscopesVerbalizer(model, model, tok, tok, 1, 0, max_new_tokens=4)
    zs = ZeroShotBaseline(model, tok, max_new_tokens=4)
    return {
        "read_layer1_acts_per_s": _rate(lambda: read_activations(model, ids, mask.long(), 1, "all"),
                                        int(mask.sum()), repeats),
        "read_layer1_prompts_per_s": _rate(lambda: read_activations(model, ids, mask.long(), 1, "last"), 64, repeats),
        "lit_verbalizations_per_s": _rate(lambda: lit.verbalize(src, qs), 64, repeats),
        "lit_name_recoveries_per_s": _rate(lambda: lit.verbalize(src, NAME_QUESTION), 64, repeats),
        "patchscopes_verbalizations_per_s": _rate(lambda: ps.verbalize(src, qs), 64, repeats),
        "zero_shot_answers_per_s": _rate(lambda: zs.verbalize(src, qs), 64, repeats),
    }


def bench_smollm2(repeats: int) -> dict:
    from icml26.verbalization.real_lm import load_smollm2, real_fact_items

    t = time.perf_counter()
    model, tok = load_smollm2()
    load_s = time.perf_counter() - t
    rows = real_fact_items(16)
    src, q_ps, q_zs = [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    ids, mask = pad_right([tok.encode(s) for s in src], pad)
    enc = {"input_ids": ids, "attention_mask": mask.long()}
    ps = PatchscopesVerbalizer(model, model, tok, tok, 12, 6, max_new_tokens=6, batch_size=16)
    zs = ZeroShotBaseline(model, tok, prompt_format="{source}. {question}", max_new_tokens=6, batch_size=16)
    n_tok = int(enc["attention_mask"].sum())
    return {
        "load_s": load_s,
        "read_layer12_acts_per_s": _rate(lambda: read_activations(model, enc["input_ids"], enc["attention_mask"], 12,
                                                                  "all"), n_tok, repeats),
        "read_layer30_acts_per_s": _rate(lambda: read_activations(model, enc["input_ids"], enc["attention_mask"], 30,
                                                                  "all"), n_tok, repeats),
        "patchscopes_verbalizations_per_s": _rate(lambda: ps.verbalize(src, q_ps), 16, repeats),
        "zero_shot_answers_per_s": _rate(lambda: zs.verbalize(src, q_zs), 16, repeats),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--skip-smollm2", action="store_true")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    torch.set_num_threads(1)
    out = {"threads": torch.get_num_threads(), "tinylm": bench_tiny(args.repeats)}
    if not args.skip_smollm2:
        out["smollm2_135m"] = bench_smollm2(max(2, args.repeats // 2))
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
