"""Reading-row pilot of issue 37: which LIT data and decoder make the toy decoder read (claim PCr) and retrieve (PC)?

Seed 0 of the small config, one LIT decoder (M2', the mismatch knowledge model) reading M1, as `lit_job` trains it,
with one change per setup. Measures on the held-out generic people's exception facts (never in LIT training):
PCr (the fact stated in the read text), PC (the fact known from text only), claim 1's belief / target on (d), and
the fit of the reading rows themselves (a sample of 200 training rows).

    flock /tmp/icml26-cpu.lock .venv/bin/python benchmarks/verbalization_reading_pilot.py [--setups a,b] [--out F]

Setups: `fixed4` (one pass of reading rows copied 4x: memorisable name -> value pairs), `fresh4` / `fresh8` (4 / 8
passes with fresh values, `PersonaWorld.reading_examples(repeat)`, the default since issue 37), and on fresh8: a
frozen decoder with a trained input map (`adapter`, lr 2e-3 and 1e-2), LoRA rank 8 (`lora`), LoRA + map
(`lora_adapter`), a write at layer 1 (`write1`), read at layer 2 and write at 1 (`read2_write1`); the forgetting
check: half of the rehearsal rows from the base corpus C0 at the default 20 % share and at 40 % (`fresh8_c0`,
`fresh8_c0_r04`); a nonlinear input map (`verbalize.InputMLP`) on a frozen decoder (`mlp`, `mlp_lr1e-2`, and 2000
steps `mlp_2000`), with LoRA (`lora_mlp`) and with the full decoder (`full_mlp`); and the diagnostic
`oracle_inverter` (not a LIT decoder: the frozen decoder behind an InputMLP fitted by MSE onto its own token
embeddings, which asks whether a map that retrieves exists at all); and LIT data that reward identity, a world with
more exception people (`exc050`, `exc075`, `exc100`: exception_rate 0.5 / 0.75 / 1.0 instead of 0.25, so B, M1 and
M2'-FT are retrained on that world and cached per world), with the forgetting fix (`exc075_c0`, `exc100_c0`), with
2.5x the LIT steps (`exc075_1500`), and on a wider toy (d_model 128: `wide128`, `wide128_exc075`, and
`wide128_exc075_1500`); these also report M2'-FT's text-mode ceiling on that world (`text_before_PC`) and the
number of exception people in LIT training. Every setup also reports what the trained decoder still knows in text
mode (`text_after_PC`, `text_after_F2`). `--merge` replaces only the setups run in the output file. B, M1 and M2'
are trained once per world (about 1.5-3 min on 2 cores) and cached in /tmp; each setup then takes about 15-45 s
(`mlp_2000` about 110 s).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import time

import torch

from icml26.verbalization import experiment as E
from icml26.verbalization.baselines import ZeroShotBaseline
from icml26.verbalization.controls import contains_match
from icml26.verbalization.verbalize import InputMLP, LITVerbalizer

SETUPS = {
    "fixed4": dict(passes=1, copies=4), "fresh4": dict(passes=4), "fresh8": dict(passes=8),
    "adapter": dict(passes=8, dec="adapter"), "adapter_lr1e-2": dict(passes=8, dec="adapter", lr=1e-2),
    "lora": dict(passes=8, dec="lora"), "lora_adapter": dict(passes=8, dec="lora+adapter"),
    "write1": dict(passes=8, write=1), "read2_write1": dict(passes=8, read=2, write=1),
    # forgetting check: half of the rehearsal rows from the decoder's base corpus C0 (which states the held-out
    # people's facts), at the default 20 % rehearsal share and at 40 %
    "fresh8_c0": dict(passes=8, c0=0.5), "fresh8_c0_r04": dict(passes=8, c0=0.5, reh=0.4),
    # a nonlinear per-position input map (verbalize.InputMLP) instead of the affine one
    "mlp": dict(passes=8, dec="adapter", map="mlp"), "mlp_lr1e-2": dict(passes=8, dec="adapter", map="mlp", lr=1e-2),
    "lora_mlp": dict(passes=8, dec="lora+adapter", map="mlp"), "full_mlp": dict(passes=8, dec="full+adapter", map="mlp"),
    "mlp_2000": dict(passes=8, dec="adapter", map="mlp", lr=3e-3, steps=2000),
    # DIAGNOSTIC, not a LIT decoder: the frozen decoder behind an InputMLP fitted by MSE onto the decoder's own token
    # embeddings (an inverter of M1's states). Does a map that retrieves exist at all? (Used for claims it would make
    # claim 1 hold by construction: the decoder would only ever see the reconstructed input tokens.)
    "oracle_inverter": dict(passes=8, dec="oracle", steps=1500, lr=3e-3),
    # LIT data that reward identity: more generic people with person-specific (exception) facts, so memorising the
    # LIT-trained people's answers costs more than reusing the decoder's own lookup. The world changes (B, M1 and
    # M2'-FT are retrained on it); the held-out PC people stay 5 exception people per culture (120 items).
    "exc050": dict(passes=8, world={"exception_rate": 0.5}), "exc075": dict(passes=8, world={"exception_rate": 0.75}),
    "exc100": dict(passes=8, world={"exception_rate": 1.0}),
    # ... with the forgetting fix (half the rehearsal rows from C0 at a 40 % share), and trained 2.5x longer
    "exc075_c0": dict(passes=8, c0=0.5, reh=0.4, world={"exception_rate": 0.75}),
    "exc100_c0": dict(passes=8, c0=0.5, reh=0.4, world={"exception_rate": 1.0}),
    "exc075_1500": dict(passes=8, steps=1500, world={"exception_rate": 0.75}),
    # a wider toy (d_model 128 instead of 64), so the ceiling need not fall with many exception people; and its
    # control at the default exception rate
    "wide128": dict(passes=8, world={"d_model": 128}),
    "wide128_exc075": dict(passes=8, world={"d_model": 128, "exception_rate": 0.75}),
    "wide128_exc075_1500": dict(passes=8, steps=1500, world={"d_model": 128, "exception_rate": 0.75}),
}


def _states(cfg: dict, seed: int, world: dict | None = None) -> dict:
    tag = "".join(f"_{k}{v}" for k, v in sorted((world or {}).items()))
    cache = f"/tmp/icml26_verbalization_reading_pilot_{seed}{tag}.pt"
    if os.path.exists(cache):
        return torch.load(cache)
    b = E.train_base_job(seed, cfg)["state"]
    st = {"M1": E.finetune_job(seed, cfg, b, "target", "M1")["state"],
          "M2p": E.finetune_job(seed, cfg, b, "mismatch", "M2p")["state"]}
    torch.save(st, cache)
    return st


def _acc(lit: LITVerbalizer, sources, questions, targets) -> float:
    return float(contains_match(lit.verbalize(list(sources), list(questions)), list(targets)).mean())


def _rehearsal(persona: list[str], c0: list[str], c0_share: float) -> list[str]:
    """Rehearsal texts with `c0_share` of them (in expectation, uniform sampling) from C0: the persona text is
    repeated to keep its share (C0 is ~15x longer)."""
    if not c0_share:
        return persona
    k = max(1, round(len(c0) * (1 - c0_share) / (c0_share * len(persona))))
    return persona * k + c0


def _oracle_inverter(m1, dec, tok, cfg: dict, texts: list[str], steps: int, lr: float, seed: int) -> LITVerbalizer:
    """The frozen decoder reading M1's read-layer states through an `InputMLP` fitted by MSE (Adam, batches of 512
    token states) onto the decoder's embedding of the token at each position: the diagnostic `oracle_inverter`."""
    reader = LITVerbalizer(m1, dec, tok, tok, cfg["read_layer"], cfg["write_layer"], trained=True)
    texts = sorted(set(texts))
    x = torch.cat(reader._read(m1, texts))
    n_pre = len(tok.encode("", add_special_tokens=True))
    ids = torch.tensor([i for t in texts for i in list(tok.encode(t, add_special_tokens=True))[n_pre:]])
    y = dec.tok_emb.weight[ids].detach()
    torch.manual_seed(seed)
    inv = InputMLP(x.shape[1])
    opt = torch.optim.Adam(inv.parameters(), lr)
    for _ in range(steps):
        j = torch.randint(0, len(x), (512,))
        loss = ((inv(x[j]) - y[j]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    inv.eval().requires_grad_(False)
    return LITVerbalizer(m1, dec, tok, tok, cfg["read_layer"], cfg["write_layer"], trained=True,
                         max_new_tokens=cfg["max_new_tokens"], mapping=inv)


def run_setup(name: str, cfg: dict, seed: int, st: dict) -> dict:
    s = SETUPS[name]
    if s.get("world"):
        cfg = {**cfg, **s["world"]}
        st = _states(cfg, seed, s["world"])
    w, f, tok, c0 = E._setup(cfg, seed)
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
    if kind == "oracle":
        lit = _oracle_inverter(m1, dec, tok, cfg, texts + c0[::3], s["steps"], lr, seed)
    else:
        lit = LITVerbalizer(m1, dec, tok, tok, s.get("read", cfg["read_layer"]), s.get("write", cfg["write_layer"]),
                            max_new_tokens=cfg["max_new_tokens"], copy=False,
                            lora_rank=cfg["lit_lora_rank"] if "lora" in kind else None,
                            input_adapter=s.get("map", True) if "adapter" in kind else False,
                            train_decoder=kind.startswith("full"))
        lit.fit(texts, qas, steps=s.get("steps", cfg["lit_steps"]), lr=lr, batch_size=cfg["batch_size"],
                seed=seed * 10 + 5, read_model=m1,
                rehearsal_texts=_rehearsal(w.persona_corpus("mismatch"), c0, s.get("c0", 0.0)),
                rehearsal_fraction=s.get("reh", cfg["rehearsal_fraction"]))
    rd = [i for i in w.reading_items() if i.meta["exception"]]
    ho = [i for i in w.holdout_items() if i.meta["exception"]]
    d = w.eval_items("fantasy", "mismatch")
    comp = lit.verbalize([i.source for i in d], [i.question for i in d])
    text = ZeroShotBaseline(lit.decoder_, tok, max_new_tokens=cfg["max_new_tokens"])  # the LIT decoder, text mode
    before = ZeroShotBaseline(E._model(cfg, tok, st["M2p"]), tok, max_new_tokens=cfg["max_new_tokens"])
    n_exc = sum(w.is_exception(p) for p in w.generic if p.name not in {h.name for h in w.holdout})
    sample = range(0, len(t3), max(1, len(t3) // 200))
    return {
        "setup": name, "steps": s.get("steps", cfg["lit_steps"]), "decoder": kind, "input_map": s.get("map", "affine" if "adapter" in kind else None), "lr": lr, "read_layer": s.get("read", cfg["read_layer"]),
        "write_layer": s.get("write", cfg["write_layer"]), "reading_rows": len(t3),
        "PCr": _acc(lit, (i.source for i in rd), (i.question for i in rd), (i.target for i in rd)),
        "PC": _acc(lit, (i.source for i in ho), (i.question for i in ho), (i.target for i in ho)),
        "d_belief": float(contains_match(comp, [i.belief for i in d]).mean()),
        "d_target": float(contains_match(comp, [i.target for i in d]).mean()),
        "rehearsal_fraction": s.get("reh", cfg["rehearsal_fraction"]), "rehearsal_c0_share": s.get("c0", 0.0),
        # what the trained decoder still knows, reading the text (before LIT: M2'-FT's 0.92 on PC's items)
        "text_before_PC": _acc(before, (i.source for i in ho), (i.question for i in ho), (i.target for i in ho)),
        "world": s.get("world", {}), "lit_exception_people": int(n_exc),
        "text_after_PC": _acc(text, (i.source for i in ho), (i.question for i in ho), (i.target for i in ho)),
        "text_after_F2": _acc(text, (i.source for i in d), (i.question for i in d), (i.belief for i in d)),
        "reading_rows_fit": _acc(lit, (t3[i] for i in sample), (q3[i][0][0] for i in sample),
                                 (q3[i][0][1] for i in sample)),
        "n_items": {"PCr": len(rd), "PC": len(ho), "d": len(d)}, "seconds": round(time.perf_counter() - t0, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--setups", default=",".join(SETUPS), help="comma-separated, from: " + ", ".join(SETUPS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="benchmarks/verbalization_reading_pilot.json")
    ap.add_argument("--merge", action="store_true", help="replace only the setups run in --out, keep the others")
    args = ap.parse_args()
    names = [n for n in args.setups.split(",") if n]
    unknown = [n for n in names if n not in SETUPS]
    if unknown:
        ap.error(f"unknown setups {unknown}; choose from {list(SETUPS)}")
    torch.set_num_threads(2)
    cfg = copy.deepcopy(E.CONFIGS["small"])
    st = None if all(SETUPS[n].get("world") for n in names) else _states(cfg, args.seed)
    rows = []
    for n in names:
        rows.append(run_setup(n, cfg, args.seed, st))
        print(json.dumps(rows[-1]), flush=True)
    if args.merge and os.path.exists(args.out):
        with open(args.out) as fh:
            old = {r["setup"]: r for r in json.load(fh)["setups"]}
        new = {r["setup"]: r for r in rows}
        rows = [new.get(n, r) for n, r in old.items()] + [r for n, r in new.items() if n not in old]
    with open(args.out, "w") as fh:
        json.dump({"seed": args.seed, "lit_steps": cfg["lit_steps"], "setups": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
