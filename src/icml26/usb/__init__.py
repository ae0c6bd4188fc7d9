"""USB: unbalanced Schrodinger bridge with discrete birth-death jumps for single-cell snapshots.

Ying, Wang, Yang, Zhou, Zhang, "Beyond Continuity: Simulation-free Reconstruction of Discrete Branching
Dynamics from Single-cell Snapshots", ICML 2026 (arXiv 2605.00545). The training objective is a
reconstruction (the paper's text was not accessible): see bridge.py and coupling.py.

    from icml26.usb import UnbalancedSchrodingerBridge
    model = UnbalancedSchrodingerBridge(sigma=0.2).fit(snapshots, times)   # or fit(adata, time_key="day")
    pop = model.simulate(snapshots[0], times, mode="discrete")            # divisions, deaths, lineages
"""

from icml26.usb.bridge import MLP, NotFittedError, UnbalancedSchrodingerBridge, check_snapshots, snapshots_from_anndata
from icml26.usb.coupling import (
    UOTPlan,
    balanced_plan,
    bridge_sample,
    bridge_targets,
    semi_relaxed_uot,
    tune_reg_m,
    unbalanced_plan,
)
from icml26.usb.data import BranchingData, embed_highdim, simulate_branching
from icml26.usb.metrics import false_transition_rate, relative_mass_error, wasserstein
from icml26.usb.rates import growth_penalty, split_birth_death
from icml26.usb.simulate import SimulationResult, simulate_population

__all__ = [
    "UnbalancedSchrodingerBridge",
    "NotFittedError",
    "MLP",
    "check_snapshots",
    "snapshots_from_anndata",
    "UOTPlan",
    "semi_relaxed_uot",
    "balanced_plan",
    "unbalanced_plan",
    "tune_reg_m",
    "bridge_sample",
    "bridge_targets",
    "split_birth_death",
    "growth_penalty",
    "SimulationResult",
    "simulate_population",
    "BranchingData",
    "simulate_branching",
    "embed_highdim",
    "wasserstein",
    "relative_mass_error",
    "false_transition_rate",
]
