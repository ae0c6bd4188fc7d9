"""LSD: Langevin Speculative Dynamics (Kosmala, Guennemann, Gao, Wood; ICML 2026, arXiv 2606.02455).

A cheap draft model proposes Langevin MD steps, the expensive target model verifies them in parallel, and a
reflection-maximal coupling accepts each draft step as often as possible, otherwise replaces it by an exact
sample of the target step: the trajectory has exactly the serial target chain's law, with fewer sequential
target rounds.

    from icml26.lsd import BAOAB, LangevinSpeculativeDynamics, EmbeddedLJ, LennardJones
    integ = BAOAB(timestep=0.005, friction=1.0, kT=0.25, masses=1.0)
    sim = LangevinSpeculativeDynamics(target=EmbeddedLJ(A=0.2), draft=LennardJones(), integrator=integ,
                                      lookahead=16, verifier="batch", seed=0)
    traj = sim.run(x0, n_steps=20000, record_every=10)   # traj.positions, traj.velocities, traj.stats

Submodules: `potentials`, `theory`, `baselines`, `data`, `ase` (optional, needs `ase`), `experiment`.
"""

from icml26.lsd import theory
from icml26.lsd.baselines import draft_only, respa, serial_langevin
from icml26.lsd.coupling import reflection_maximal_coupling
from icml26.lsd.integrator import BAOAB
from icml26.lsd.potentials import (ASEPotential, DoubleWell, EmbeddedLJ, EmbeddedLJEnergy, Harmonic, LennardJones,
                                   MullerBrown, Potential, TorchPotential)
from icml26.lsd.speculative import AsyncLSD, LangevinSpeculativeDynamics, LSDStats, Trajectory

__all__ = [
    "BAOAB", "reflection_maximal_coupling", "LangevinSpeculativeDynamics", "AsyncLSD", "Trajectory", "LSDStats",
    "Potential", "Harmonic", "DoubleWell", "MullerBrown", "LennardJones", "EmbeddedLJ", "TorchPotential",
    "EmbeddedLJEnergy", "ASEPotential", "serial_langevin", "draft_only", "respa", "theory",
]
