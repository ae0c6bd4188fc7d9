"""The paper's comparisons behind one interface: each arm is one seeded run returning a dict of metrics.

- `run_curriculum`: one schedule of `SCHEDULES` (joint / sim_then_attr / attr_then_sim / attribute_only) on an
  `AnalogyWorld`, with the spec's controls as arguments (a short first stage via `steps_per_stage=(200, 3000)`,
  no individual facts via `n_individual=0`, untyped softmax via `typed=False`, lazy init via `init_std=0.1`).
- `run_two_hop`: two-hop chains with or without identity bridges.

Both are module-level functions of plain arguments, so `icml26.common.run_parallel` can run them in workers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from icml26.analogy.data import AnalogyWorld, TwoHopWorld
from icml26.analogy.model import (
    CurriculumTrainer,
    FactorizedTransformer,
    analogical_accuracy,
    conclusion_prob,
    cosine_matrix,
    feature_resemblance,
    fit,
    premise_retention,
    two_hop_accuracy,
)

__all__ = ["run_curriculum", "run_two_hop"]


def _device(device: str) -> torch.device:
    """"cpu", "cuda[:i]" or "auto" (cuda when available)."""
    if not isinstance(device, str):
        raise TypeError(f"device must be a string, got {type(device).__name__}")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        return torch.device(device)
    except RuntimeError as e:
        raise ValueError(f"device must be 'cpu', 'cuda[:i]' or 'auto', got {device!r}") from e


def run_curriculum(schedule: str, seed: int, *, n_groups: int = 8, group_size: int = 4, n_features: int = 1,
                   n_individual: int = 3, d_model: int = 32, init_std: float = 0.01, lr: float = 1.0,
                   steps_per_stage: Any = 3000, typed: bool = True, eval_every: int = 0,
                   keep_cosines: bool = False, device: str = "cpu") -> dict[str, Any]:
    """Train one schedule from seed `seed` (world and init) and measure it.

    Returns: accuracy, conclusion_prob, retention (all trained premises), same_cos / cross_cos (entity
    representations), final_loss per stage, and optionally the time course and the entity cosine matrix
    (entities ordered by group).
    """
    world = AnalogyWorld(n_groups, group_size, n_features, n_individual, seed=seed)
    model = FactorizedTransformer(world.vocab_size, d_model=d_model, init_std=init_std,
                                  answer_sets=world.answer_sets if typed else None, seed=seed).to(_device(device))
    out = CurriculumTrainer(model, schedule, steps_per_stage=steps_per_stage, lr=lr, eval_every=eval_every).run(world)
    same, cross = feature_resemblance(model, world)
    res: dict[str, Any] = {
        "schedule": schedule, "seed": seed, "accuracy": analogical_accuracy(model, world),
        "conclusion_prob": conclusion_prob(model, world), "retention": premise_retention(model, world),
        "same_cos": same, "cross_cos": cross,
        "final_loss": [ls[-1] if ls else float("nan") for ls in out["losses"]],
    }
    if eval_every:
        res["time_course"] = out["time_course"]
    if keep_cosines:
        res["cosines"] = cosine_matrix(model, world.groups.reshape(-1)).tolist()
    return res


def run_two_hop(bridge: bool, seed: int, *, n_chains: int = 16, n_individual: int = 0, d_model: int = 32,
                init_std: float = 0.01, lr: float = 1.0, steps: int = 600, device: str = "cpu") -> dict[str, Any]:
    """Train all two-hop facts jointly (full-batch GD) and measure both query forms."""
    world = TwoHopWorld(n_chains, bridge=bridge, n_individual=n_individual, seed=seed)
    model = FactorizedTransformer(world.vocab_size, d_model=d_model, init_std=init_std,
                                  answer_sets=world.answer_sets, seed=seed).to(_device(device))
    losses = fit(model, world.facts, steps, lr=lr)
    return {"bridge": bridge, "seed": seed, "composed": two_hop_accuracy(model, world, "composed"),
            "analogical": two_hop_accuracy(model, world, "analogical"),
            "retention": premise_retention(model, world), "final_loss": float(np.asarray(losses)[-1])}
