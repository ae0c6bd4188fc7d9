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

__all__ = ["run_curriculum", "run_two_hop", "run_gpt_curriculum"]


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


def run_gpt_curriculum(schedule: str, seed: int, *, n_groups: int = 8, group_size: int = 4, n_features: int = 1,
                       n_individual: int = 3, d_model: int = 64, n_layers: int = 2, n_heads: int = 4,
                       lr: float = 3e-3, steps_per_stage: int = 600) -> dict[str, Any]:
    """Optional arm of spec section 4 / review note 4 (report-only): a 2-layer softmax-attention GPT
    (`icml26.common.lm.TinyLM`, GELU MLP, learned positions) trained from scratch on the same 2-token prompts,
    next-token cross-entropy of the object over the whole vocabulary (untyped, as a plain LM), full-batch AdamW
    (lr 3e-3, no weight decay) per stage. Accuracy is argmax over the G attribute tokens."""
    from icml26.analogy.model import SCHEDULES
    from icml26.common.lm import TinyLM, TinyLMConfig

    world = AnalogyWorld(n_groups, group_size, n_features, n_individual, seed=seed)
    torch.manual_seed(seed)
    model = TinyLM(TinyLMConfig(vocab_size=world.vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
                                ctx=4, pos="learned", mlp="gelu"))
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)

    def batch(premises):
        return (torch.tensor([p.inputs for p in premises], dtype=torch.long),
                torch.tensor([p.target for p in premises], dtype=torch.long))

    def last_logits(x):
        return model(x)[:, -1]

    for groups in SCHEDULES[schedule]:
        premises = [p for g in groups for p in getattr(world, g)]
        if not premises:
            continue
        x, y = batch(premises)
        for _ in range(steps_per_stage):
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(last_logits(x), y).backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        xt, yt = batch(world.test)
        z = last_logits(xt)[:, torch.as_tensor(world.attr_tokens)]
        acc = float((torch.as_tensor(world.attr_tokens)[z.argmax(1)] == yt).double().mean())
        xs, ys = batch(world.similarity + world.attribution)
        ret = float((last_logits(xs).argmax(1) == ys).double().mean())
    return {"schedule": schedule, "seed": seed, "accuracy": acc, "retention_SA": ret}
