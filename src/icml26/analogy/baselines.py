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
    retention_from_logits,
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
                   keep_cosines: bool = False, device: str = "cpu",
                   freeze: Any = None) -> dict[str, Any]:
    """Train one schedule from seed `seed` (world and init) and measure it. `freeze` (one tuple of parameter
    names per stage, e.g. `((), ("E",))`) holds parameters fixed per stage: the frozen-E mutation of the tests.

    Returns: accuracy, conclusion_prob, retention (all trained premises), same_cos / cross_cos (entity
    representations), final_loss per stage, and optionally the time course and the entity cosine matrix
    (entities ordered by group).
    """
    world = AnalogyWorld(n_groups, group_size, n_features, n_individual, seed=seed)
    model = FactorizedTransformer(world.vocab_size, d_model=d_model, init_std=init_std,
                                  answer_sets=world.answer_sets if typed else None, seed=seed).to(_device(device))
    out = CurriculumTrainer(model, schedule, steps_per_stage=steps_per_stage, lr=lr, eval_every=eval_every,
                            freeze=freeze).run(world)
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


def _answer_mask(prompts: list[tuple[int, ...]], answer_sets: dict[int, Any], vocab_size: int) -> torch.Tensor:
    """(N, V) bool: True on the answer type of each prompt's relation (its last token)."""
    mask = torch.zeros(len(prompts), vocab_size, dtype=torch.bool)
    for i, p in enumerate(prompts):
        mask[i, torch.as_tensor(answer_sets[p[-1]], dtype=torch.long)] = True
    return mask


def run_gpt_curriculum(schedule: str, seed: int, *, n_groups: int = 8, group_size: int = 4, n_features: int = 1,
                       n_individual: int = 3, d_model: int = 64, n_layers: int = 2, n_heads: int = 4,
                       lr: float = 3e-3, steps_per_stage: int = 400, typed: bool = True,
                       device: str = "cpu") -> dict[str, Any]:
    """Optional arm of spec section 4 / review note 4 (report-only): a GPT-2-architecture softmax-attention
    transformer (`icml26.common.lm.TinyLM` with LayerNorm, GELU MLP, learned positions, biases and tied
    embeddings, as GPT-2; `n_layers=12, d_model=768, n_heads=12` is GPT-2 small) trained from scratch on the same
    2-token prompts, full-batch AdamW (no weight decay) per stage.

    With `typed=True` (default, issue 41) the object's logits are masked to the answer type of the prompt's
    relation, as the minimal model's typed softmax: without it a later stage pushes the earlier stage's answers
    down and the model forgets them (the confound of spec section 9), so the curriculum cannot be tested.
    Returns accuracy (argmax over the G attribute tokens), conclusion_prob, retention (the minimal model's check,
    `retention_from_logits`, over all S + A + I premises), retention_SA (S + A only) and final_loss per stage.
    """
    from icml26.analogy.model import SCHEDULES
    from icml26.common.lm import TinyLM, TinyLMConfig

    dev = _device(device)
    world = AnalogyWorld(n_groups, group_size, n_features, n_individual, seed=seed)
    torch.manual_seed(seed)
    model = TinyLM(TinyLMConfig(vocab_size=world.vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
                                ctx=4, pos="learned", mlp="gelu", norm="layernorm", bias=True,
                                tie_embeddings=True)).to(dev)
    # foreach: one fused loop over the parameters (bit-identical to the per-tensor loop, 1.4x faster on CPU)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0, foreach=True)
    V = world.vocab_size

    def batch(premises):
        prompts = [tuple(p.inputs) for p in premises]
        mask = (_answer_mask(prompts, world.answer_sets, V) if typed
                else torch.ones(len(prompts), V, dtype=torch.bool))
        return (torch.tensor(prompts, dtype=torch.long, device=dev),
                torch.tensor([p.target for p in premises], dtype=torch.long, device=dev), mask.to(dev))

    def logits(x, mask):
        return model(x)[:, -1].float().masked_fill(~mask, float("-inf"))

    final_loss = []
    for groups in SCHEDULES[schedule]:
        premises = [p for g in groups for p in getattr(world, g)]
        if not premises:
            continue
        x, y, mask = batch(premises)
        model.train()
        for _ in range(steps_per_stage):
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(logits(x, mask), y)
            loss.backward()
            opt.step()
        final_loss.append(float(loss.detach()))
    model.eval()
    with torch.no_grad():
        xt, yt, mt = batch(world.test)
        z = logits(xt, mt)
        attr = torch.as_tensor(world.attr_tokens, device=dev)
        za = z[:, attr]
        acc = float((attr[za.argmax(1)] == yt).double().mean())
        prob = float(torch.softmax(za, 1)[torch.arange(len(yt)), (attr[None] == yt[:, None]).int().argmax(1)].mean())
        xa, _, ma = batch(world.premises)
        ret = retention_from_logits(logits(xa, ma), world.premises)
        sa = world.similarity + world.attribution
        xs, _, ms = batch(sa)
        ret_sa = retention_from_logits(logits(xs, ms), sa)
    return {"schedule": schedule, "seed": seed, "accuracy": acc, "conclusion_prob": prob, "retention": ret,
            "retention_SA": ret_sa, "final_loss": final_loss}
