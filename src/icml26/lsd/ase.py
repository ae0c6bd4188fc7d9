"""ASE integration: `SpeculativeLangevin`, an LSD driver for `ase.Atoms` (optional dependency `ase`).

Mirrors `ase.md.langevin.Langevin`'s argument names and units: `timestep` in ASE time units (e.g.
`1.0 * ase.units.fs`), `temperature_K` in kelvin, `friction` in inverse ASE time units (e.g. `0.01 / units.fs`).
The target is `atoms.calc`; the draft is another ASE calculator. Positions, velocities and masses are ASE's
(Angstrom, Angstrom / ASE time, amu), forces eV / Angstrom, so kT = units.kB * temperature_K.

Differences from `ase.md.langevin.Langevin`: the integrator is BAOAB (the spec's default), not ASE's Langevin
scheme; there is no `fixcm` (the centre of mass diffuses like in the target chain); constraints are rejected
(SHAKE/RATTLE-type constraints break the Gaussian step the coupling relies on, spec section 9).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26.lsd.integrator import BAOAB
from icml26.lsd.potentials import ASEPotential
from icml26.lsd.speculative import AsyncLSD, LangevinSpeculativeDynamics, Trajectory

__all__ = ["SpeculativeLangevin", "cu_lennard_jones"]


class SpeculativeLangevin:
    """Speculative Langevin MD of `atoms` with target `atoms.calc` and a cheap `draft_calc`.

    Args:
        atoms: `ase.Atoms` with a calculator (the target) and no constraints.
        draft_calc: the draft ASE calculator (e.g. EMT / a small MLIP for a large MLIP target).
        timestep: ASE time units. temperature_K: kelvin. friction: inverse ASE time units (> 0).
        lookahead: K draft steps per round. verifier: "serial" | "batch" | "threads" (ASE calculators loop
            and are serialised by a lock; wrap a batched MLIP in `TorchPotential` for real batching).
        asynchronous: use `AsyncLSD` with `n_workers` target threads instead of synchronous rounds.
        seed: base seed; each `run` call uses a new stream derived from (seed, call number).

    `run(steps)` advances `atoms` (positions and momenta) and returns the `Trajectory` of the call
    (frames every `record_every` steps).
    """

    def __init__(self, atoms: Any, draft_calc: Any, timestep: float, temperature_K: float, friction: float,
                 lookahead: int = 16, verifier: str = "serial", asynchronous: bool = False, n_workers: int = 2,
                 seed: int = 0):
        from ase import units

        if atoms.calc is None:
            raise ValueError("atoms must have a calculator attached (atoms.calc is the target model)")
        if atoms.constraints:
            raise ValueError("atoms has constraints: constrained dynamics (SHAKE/RATTLE, FixAtoms) break the "
                             "Gaussian step that the coupling needs and are not supported")
        if temperature_K is None or temperature_K <= 0:
            raise ValueError(f"temperature_K must be positive, got {temperature_K}")
        self.atoms = atoms
        self.integrator = BAOAB(timestep=timestep, friction=friction, kT=units.kB * temperature_K,
                                masses=atoms.get_masses())
        self.target = ASEPotential(atoms.calc, atoms)
        self.draft = ASEPotential(draft_calc, atoms)
        if asynchronous:
            self._make = lambda s: AsyncLSD(self.target, self.draft, self.integrator, lookahead=lookahead,
                                            n_workers=n_workers, seed=s)
        else:
            self._make = lambda s: LangevinSpeculativeDynamics(self.target, self.draft, self.integrator,
                                                               lookahead=lookahead, verifier=verifier, seed=s)
        self._make(0)  # validate the arguments now
        self.seed, self.nsteps, self._calls = int(seed), 0, 0

    def run(self, steps: int, record_every: int | None = None) -> Trajectory:
        """Advance the atoms by `steps` Langevin steps of the target; returns the call's Trajectory."""
        seed = int(np.random.SeedSequence([self.seed, self._calls]).generate_state(1)[0])
        self._calls += 1
        sim = self._make(seed)
        traj = sim.run(self.atoms.get_positions(), self.atoms.get_velocities(), n_steps=int(steps),
                       record_every=record_every or max(1, int(steps)))
        x, w = traj.final_state
        if traj.steps[-1] == steps:
            v = traj.velocities[-1]
        else:
            v = self.integrator.velocity(w, self.target.forces(x))
        self.atoms.set_positions(x)
        self.atoms.set_velocities(v)
        self.nsteps += int(steps)
        self.last_stats = traj.stats
        return traj


def cu_lennard_jones():
    """A Lennard-Jones calculator for copper (epsilon = 0.4093 eV, sigma = 2.338 Angstrom, cutoff 2.5 sigma),
    a classical draft for an EMT or MLIP copper target."""
    from ase.calculators.lj import LennardJones

    return LennardJones(epsilon=0.4093, sigma=2.338, rc=2.5 * 2.338, smooth=True)
