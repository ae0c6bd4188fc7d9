"""One pilot of the real-LM persona arm (claim RP, issue 37) on SmolLM2-135M-Instruct (seed 0 unless `--seed`).

    flock /tmp/icml26-cpu.lock timeout 600 .venv/bin/python benchmarks/verbalization_rp_pilot.py [--n-generic N]
        [--ft-steps S] [--lit-steps T] [--n-personas P] [--n-heldout H] [--seed K] [--read-layer L]

With the default sizes it writes benchmarks/verbalization_rp_pilot.json (the arm's result, also cached for `--set
real_lm_persona=true`). `--n-generic N` (default 3) puts N generic people per culture into the world instead, so
6 N - H of them train the LIT decoders (H = `--n-heldout`; the identity pilot: does more person-specific LIT data
make the decoder retrieve?); `--ft-steps` / `--lit-steps` (default 100 / 80) lengthen the fine-tunes and the LIT training;
`--n-personas` / `--n-heldout` (default 8 / 6) set the clusters of claims 1 / 3e and of PC; `--seed` (default 0)
draws another world and training run; `--read-layer` (default 6 of SmolLM2's 30) is the layer of M1 both decoders
read (the read-layer pilot: is PC's half-retrieval a property of layer 6?). A non-default run goes to
verbalization_rp_pilot_generic{N}[_ft{S}_lit{T}][_p{P}_h{H}][_seed{K}][_read{L}].json and is not the one claim RP
reads.
"""

import argparse
import json
import time
from pathlib import Path

import torch

from icml26.verbalization.real_lm import smollm2_lit_persona

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--n-generic", type=int, default=3, help="generic people per culture (default 3, the arm's default)")
ap.add_argument("--ft-steps", type=int, default=100, help="LoRA fine-tune steps of M1 and M2'-FT (default 100)")
ap.add_argument("--lit-steps", type=int, default=80, help="LIT steps of each decoder (default 80)")
ap.add_argument("--seed", type=int, default=0, help="world, fine-tune and LIT seed (default 0)")
ap.add_argument("--n-personas", type=int, default=8, help="fantasy personas (default 8; the clusters of claim 1)")
ap.add_argument("--n-heldout", type=int, default=6, help="generic people held out of LIT training (default 6; "
                                                         "the clusters of PC)")
ap.add_argument("--read-layer", type=int, default=6, help="layer of M1 the decoders read (default 6, the arm's "
                                                           "default; 1..30 on SmolLM2)")
args = ap.parse_args()
if args.n_generic < 2:
    ap.error(f"--n-generic must be >= 2 (6 of the 6 x n_generic people are held out), got {args.n_generic}")
for name, v in (("--ft-steps", args.ft_steps), ("--lit-steps", args.lit_steps), ("--n-heldout", args.n_heldout)):
    if v < 1:
        ap.error(f"{name} must be >= 1, got {v}")
if args.seed < 0:
    ap.error(f"--seed must be >= 0, got {args.seed}")
if not 1 <= args.read_layer <= 30:
    ap.error(f"--read-layer must be in 1..30 (SmolLM2-135M has 30 layers), got {args.read_layer}")
if args.n_personas < 2:
    ap.error(f"--n-personas must be >= 2, got {args.n_personas}")
if args.n_heldout >= 6 * args.n_generic:
    ap.error(f"--n-heldout must leave LIT training people: < 6 x --n-generic = {6 * args.n_generic}, "
             f"got {args.n_heldout}")
kwargs = {"ft_steps": args.ft_steps, "lit_steps": args.lit_steps, "n_generic": args.n_generic,
          "n_personas": args.n_personas, "n_heldout": args.n_heldout, "seed": args.seed, "read_layer": args.read_layer}
default = (args.n_generic, args.ft_steps, args.lit_steps, args.n_personas, args.n_heldout, args.seed,
           args.read_layer) == (3, 100, 80, 8, 6, 0, 6)
tag = "" if (args.ft_steps, args.lit_steps) == (100, 80) else f"_ft{args.ft_steps}_lit{args.lit_steps}"
if (args.n_personas, args.n_heldout) != (8, 6):
    tag += f"_p{args.n_personas}_h{args.n_heldout}"
if args.seed:
    tag += f"_seed{args.seed}"
if args.read_layer != 6:
    tag += f"_read{args.read_layer}"
out = Path(__file__).with_suffix(".json") if default else Path(__file__).with_name(
    f"verbalization_rp_pilot_generic{args.n_generic}{tag}.json")

t0 = time.perf_counter()
print("torch threads", torch.get_num_threads(), kwargs, flush=True)
res = smollm2_lit_persona(**kwargs)  # cached by every argument, defaults filled in
res["pilot_wall_s"] = time.perf_counter() - t0
print(json.dumps(res["accuracy"], indent=1), res["time_s"], res["loss"], flush=True)
for e in res["examples"]:
    print(e)
out.write_text(json.dumps(res, indent=1))
