"""Paper-scale recipe (spec section 7): LSD with a GPU MLIP target, batched verification, several workers.

Run on a GPU machine after `pip install -e ".[lsd]"` plus your MLIP package (MACE, fairchem/UMA, TorchMD-Net):

    python configs/paper/lsd/mlip_target.py --model path/to/energy_model.pt --steps 100000 --lookahead 32

`--model` is a TorchScript energy model mapping positions (B, N, 3) in Angstrom to energies (B,) in eV
(wrap your MLIP's energy head; graph construction inside the module). The draft is EMT (ASE) on the same
FCC Cu supercell. Verification of the K+1 draft configurations is ONE batched GPU call
(`TorchPotential`, verifier="batch"); `--async-workers N` uses `AsyncLSD` with N target threads instead
(give each its own CUDA stream / model replica for real overlap; one model per GPU with Ray or
torch.distributed RPC scales further, see docs/lsd.md).
"""

from __future__ import annotations

import argparse
import json

import numpy as np


def main() -> None:
    import torch
    from ase import units
    from ase.build import bulk
    from ase.calculators.emt import EMT

    from icml26.lsd import BAOAB, ASEPotential, AsyncLSD, LangevinSpeculativeDynamics, TorchPotential

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="TorchScript energy model (B, N, 3) -> (B,)")
    ap.add_argument("--supercell", type=int, default=4)
    ap.add_argument("--steps", type=int, default=100000)
    ap.add_argument("--lookahead", type=int, default=32)
    ap.add_argument("--timestep-fs", type=float, default=1.0)
    ap.add_argument("--friction-per-fs", type=float, default=0.01)
    ap.add_argument("--temperature-K", type=float, default=300.0)
    ap.add_argument("--async-workers", type=int, default=0)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    atoms = bulk("Cu", "fcc", a=3.61, cubic=True).repeat([args.supercell] * 3)
    model = torch.jit.load(args.model, map_location=args.device)
    target = TorchPotential(model, dtype=getattr(torch, args.dtype), device=args.device)
    draft = ASEPotential(EMT(), atoms)
    integ = BAOAB(timestep=args.timestep_fs * units.fs, friction=args.friction_per_fs / units.fs,
                  kT=units.kB * args.temperature_K, masses=atoms.get_masses())
    if args.async_workers:
        sim = AsyncLSD(target, draft, integ, lookahead=args.lookahead, n_workers=args.async_workers, seed=args.seed,
                       progress=True)
    else:
        sim = LangevinSpeculativeDynamics(target, draft, integ, lookahead=args.lookahead, verifier="batch",
                                          seed=args.seed, progress=True)
    traj = sim.run(atoms.get_positions(), None, n_steps=args.steps, record_every=100)
    np.savez("lsd_mlip_traj.npz", positions=traj.positions, velocities=traj.velocities, times=traj.times)
    print(json.dumps(traj.stats.summary(), indent=2))


if __name__ == "__main__":
    main()
