"""Positive-control pilot (issue 37): is the PC failure structural in a 2-layer toy?

Hypothesis: a frozen knowledge model self-patched at layer l (its own layer-l states of "my name is NAME ."
written at the placeholders of [BOS] + placeholders + question) leaves only blocks l+1..L of the question tokens
to see the name. In 2 layers (l = 1) that is one block; a deeper model written at its middle layer leaves more
blocks after the write point for the retrieval, so the frozen self-patch (and then a LIT decoder) might recall
text-only knowledge. The cheap check, done first: B (the base model, which knows the held-out people from C0
text only) self-patched at every layer, scored on the held-out people's exception facts of seed 0 (the PC
items). A frozen self-patch under 0.5 means no LIT decoder reading the same site is expected to pass PC (0.5),
so the LIT stage is not run (stopping rule set before the pilot).

    flock /tmp/icml26-cpu.lock .venv/bin/python benchmarks/verbalization_pc_depth_pilot.py   # ~2 min

Writes benchmarks/verbalization_pc_depth_pilot.json. Everything else is the small config (seed 0, 1,500 base
steps, d 64, 4 heads); only `n_layers` changes (2 and 4).
"""

from __future__ import annotations

import json
import pathlib
import time

import torch

from icml26.verbalization import experiment as E
from icml26.verbalization.baselines import ZeroShotBaseline
from icml26.verbalization.controls import contains_match
from icml26.verbalization.verbalize import LITVerbalizer


def pilot(n_layers: int, seed: int = 0) -> dict:
    cfg = dict(E.CONFIGS["small"], n_layers=n_layers)
    w, _, tok, _ = E._setup(cfg, seed)
    hold = [i for i in w.holdout_items() if i.meta["exception"]]
    src, q, ans = [i.source for i in hold], [i.question for i in hold], [i.target for i in hold]
    b = E.train_base_job(seed, cfg)
    B = E._model(cfg, tok, b["state"])
    mnt = cfg["max_new_tokens"]
    out = {"n_layers": n_layers, "seed": seed, "n_items": len(hold), "B_train_s": round(b["time_s"], 1),
           "text_mode": float(contains_match(ZeroShotBaseline(B, tok, max_new_tokens=mnt).verbalize(src, q), ans).mean())}
    for layer in range(n_layers):  # read = write layer; layer 0 is the text itself (a sanity check)
        v = LITVerbalizer(B, B, tok, tok, layer, layer, max_new_tokens=mnt, trained=True)
        out[f"self_patch_L{layer}"] = float(contains_match(v.verbalize(src, q), ans).mean())
    return out


def main() -> None:
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    rows = [pilot(2), pilot(4)]
    for r in rows:
        print(json.dumps(r))
    path = pathlib.Path(__file__).with_suffix(".json")
    path.write_text(json.dumps({"rows": rows, "total_s": round(time.perf_counter() - t0, 1)}, indent=1) + "\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
