"""Reading-row pilot of issue 37: which LIT data and decoder make the toy decoder read (claim PCr) and retrieve (PC)?

Seed 0 of the small config, one LIT decoder (M2', the mismatch knowledge model) reading M1, as `lit_job` trains it,
with one change per setup. Measures on the held-out generic people's exception facts (never in LIT training):
PCr (the fact stated in the read text), PC (the fact known from text only), claim 1's belief / target on (d), and
the fit of the reading rows themselves (a sample of 200 training rows).

    flock /tmp/icml26-cpu.lock .venv/bin/python benchmarks/verbalization_reading_pilot.py [--setups a,b] [--out F]

Setups: `fixed4` (one pass of reading rows copied 4x: memorisable name -> value pairs), `fresh4` / `fresh8` (4 / 8
passes with fresh values, `PersonaWorld.reading_examples(repeat)`, the default since issue 37), and on fresh8: a
frozen decoder with a trained input map (`adapter`, lr 2e-3 and 1e-2), LoRA rank 8 (`lora`), LoRA + map
(`lora_adapter`), a write at layer 1 (`write1`), read at layer 2 and write at 1 (`read2_write1`). B, M1 and M2' are
trained once (about 3 min on 2 cores) and cached in /tmp; each setup then takes about 25-40 s.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import time

import torch

from icml26.verbalization import experiment as E
from icml26.verbalization.controls import contains_match
from icml26.verbalization.verbalize import LITVerbalizer

SETUPS = {
    "fixed4": dict(passes=1, copies=4), "fresh4": dict(passes=4), "fresh8": dict(passes=8),
    "adapter": dict(passes=8, dec="adapter"), "adapter_lr1e-2": dict(passes=8, dec="adapter", lr=1e-2),
    "lora": dict(passes=8, dec="lora"), "lora_adapter": dict(passes=8, dec="lora+adapter"),
    "write1": dict(passes=8, write=1), "read2_write1": dict(passes=8, read=2, write=1),
}


def _states(cfg: dict, seed: int) -> dict:
    cache = f"/tmp/icml26_verbalization_reading_pilot_{seed}.pt"
    if os.path.exists(cache):
        return torch.load(cache)
    b = E.train_base_job(seed, cfg)["state"]
    st = {"M1": E.finetune_job(seed, cfg, b, "target", "M1")["state"],
          "M2p": E.finetune_job(seed, cfg, b, "mismatch", "M2p")["state"]}
    torch.save(st, cache)
    return st


def _acc(lit: LITVerbalizer, sources, questions, targets) -> float:
    return float(contains_match(lit.verbalize(list(sources), list(questions)), list(targets)).mean())


def run_setup(name: str, cfg: dict, seed: int, st: dict) -> dict:
    s = SETUPS[name]
    w, f, tok, _ = E._setup(cfg, seed)
    texts, qas = w.lit_examples()
    t2, q2 = f.lit_examples()
    t3, q3 = w.reading_examples(s["passes"])
    t3, q3 = t3 * s.get("copies", 1), q3 * s.get("copies", 1)
    texts = texts + t2 * cfg["lit_relation_repeat"] + t3
    qas = qas + q2 * cfg["lit_relation_repeat"] + q3
    kind, lr = s.get("dec", "full"), s.get("lr", cfg["lit_lr"])
    t0 = time.perf_counter()
    m1, dec = E._model(cfg, tok, st["M1"]), E._model(cfg, tok, st["M2p"])
    torch.manual_seed(seed * 10 + 5)
    lit = LITVerbalizer(m1, dec, tok, tok, s.get("read", cfg["read_layer"]), s.get("write", cfg["write_layer"]),
                        max_new_tokens=cfg["max_new_tokens"], copy=False,
                        lora_rank=cfg["lit_lora_rank"] if "lora" in kind else None,
                        input_adapter="adapter" in kind, train_decoder=kind == "full")
    lit.fit(texts, qas, steps=cfg["lit_steps"], lr=lr, batch_size=cfg["batch_size"], seed=seed * 10 + 5,
            read_model=m1, rehearsal_texts=w.persona_corpus("mismatch"),
            rehearsal_fraction=cfg["rehearsal_fraction"])
    rd = [i for i in w.reading_items() if i.meta["exception"]]
    ho = [i for i in w.holdout_items() if i.meta["exception"]]
    d = w.eval_items("fantasy", "mismatch")
    comp = lit.verbalize([i.source for i in d], [i.question for i in d])
    sample = range(0, len(t3), max(1, len(t3) // 200))
    return {
        "setup": name, "decoder": kind, "lr": lr, "read_layer": s.get("read", cfg["read_layer"]),
        "write_layer": s.get("write", cfg["write_layer"]), "reading_rows": len(t3),
        "PCr": _acc(lit, (i.source for i in rd), (i.question for i in rd), (i.target for i in rd)),
        "PC": _acc(lit, (i.source for i in ho), (i.question for i in ho), (i.target for i in ho)),
        "d_belief": float(contains_match(comp, [i.belief for i in d]).mean()),
        "d_target": float(contains_match(comp, [i.target for i in d]).mean()),
        "reading_rows_fit": _acc(lit, (t3[i] for i in sample), (q3[i][0][0] for i in sample),
                                 (q3[i][0][1] for i in sample)),
        "n_items": {"PCr": len(rd), "PC": len(ho), "d": len(d)}, "seconds": round(time.perf_counter() - t0, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--setups", default=",".join(SETUPS), help="comma-separated, from: " + ", ".join(SETUPS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="benchmarks/verbalization_reading_pilot.json")
    args = ap.parse_args()
    names = [n for n in args.setups.split(",") if n]
    unknown = [n for n in names if n not in SETUPS]
    if unknown:
        ap.error(f"unknown setups {unknown}; choose from {list(SETUPS)}")
    torch.set_num_threads(2)
    cfg = copy.deepcopy(E.CONFIGS["small"])
    st = _states(cfg, args.seed)
    rows = []
    for n in names:
        rows.append(run_setup(n, cfg, args.seed, st))
        print(json.dumps(rows[-1]), flush=True)
    with open(args.out, "w") as fh:
        json.dump({"seed": args.seed, "lit_steps": cfg["lit_steps"], "setups": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
