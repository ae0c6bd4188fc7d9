"""Paper-scale path (spec section 7): fine-tune a real causal LM on the premise sentences, in a curriculum, with
Hugging Face `Trainer`, then probe the conclusions by next-token probability (`probe.probe_conclusions`).

Engine: `Trainer` itself, which runs data-parallel (DDP) when launched under `torchrun`/`accelerate launch`
(`torchrun --nproc_per_node 8 -m icml26.analogy.scale --model Qwen/Qwen2.5-1.5B --out runs/analogy/lm`), and
DeepSpeed ZeRO-2 for > 1B models by passing `deepspeed=<json>` through `training_overrides`. The model is loaded
from a local path or the HF cache by the caller: nothing is downloaded by this module's tests.
This module takes its configuration as arguments and never imports `experiment.py`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch

from icml26.analogy.data import AnalogyWorld
from icml26.analogy.probe import _encode, premise_sentences, probe_conclusions
from icml26.common.validation import check_choice, check_float, check_int

__all__ = ["LM_SCHEDULES", "finetune_curriculum", "main"]

# stages of sentence groups, as the minimal model's SCHEDULES
LM_SCHEDULES = {
    "joint": (("similarity", "attribution", "individual"),),
    "sim_then_attr": (("similarity",), ("attribution", "individual")),
    "attr_then_sim": (("attribution", "individual"), ("similarity",)),
}


class _Sentences(torch.utils.data.Dataset):
    def __init__(self, ids: list[list[int]]) -> None:
        self.ids = ids

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, list[int]]:
        return {"input_ids": self.ids[i]}


def _collate(pad_id: int):
    def collate(batch: list[dict[str, list[int]]]) -> dict[str, torch.Tensor]:
        T = max(len(b["input_ids"]) for b in batch)
        ids = torch.full((len(batch), T), pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), T), dtype=torch.long)
        for i, b in enumerate(batch):
            ids[i, :len(b["input_ids"])] = torch.tensor(b["input_ids"])
            mask[i, :len(b["input_ids"])] = 1
        labels = ids.masked_fill(mask == 0, -100)
        return {"input_ids": ids, "attention_mask": mask, "labels": labels}

    return collate


def finetune_curriculum(model: Any, tokenizer: Any, world: AnalogyWorld, schedule: str = "joint", *,
                        output_dir: str | Path, steps_per_stage: int = 500, lr: float = 1e-5, batch_size: int = 16,
                        seed: int = 0, pad_id: int | None = None, use_cpu: bool = False,
                        training_overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Fine-tune `model` (a `transformers` causal LM, trained in place) on the world's premise sentences in
    `schedule` ("joint", "sim_then_attr", "attr_then_sim"), each stage `steps_per_stage` optimizer steps of
    HF `Trainer` (AdamW, constant lr), then probe the conclusions.

    Returns {"schedule", "stage_losses": final training loss per stage, "probe": probe_conclusions(...)}.
    """
    from transformers import Trainer, TrainingArguments

    check_choice(schedule, "schedule", list(LM_SCHEDULES))
    steps_per_stage = check_int(steps_per_stage, "steps_per_stage", min=1, max=10**7)
    lr = check_float(lr, "lr", min=0.0, min_open=True)
    batch_size = check_int(batch_size, "batch_size", min=1)
    seed = check_int(seed, "seed", min=0, max=2**31 - 1)
    if pad_id is None:
        pad_id = getattr(tokenizer, "pad_token_id", None) or getattr(tokenizer, "eos_token_id", None) or 0
    sents = premise_sentences(world)
    losses = []
    for k, groups in enumerate(LM_SCHEDULES[schedule]):
        ids = [_encode(tokenizer, s, True) for g in groups for s in sents[g]]
        if not ids:
            continue
        args = TrainingArguments(
            output_dir=str(Path(output_dir) / f"stage{k}"), max_steps=steps_per_stage,
            per_device_train_batch_size=batch_size, learning_rate=lr, lr_scheduler_type="constant",
            weight_decay=0.0, warmup_steps=0, logging_steps=max(1, steps_per_stage // 10), save_strategy="no",
            report_to=[], seed=seed + k, data_seed=seed + k, use_cpu=use_cpu, disable_tqdm=True,
            dataloader_num_workers=0, **(training_overrides or {}))
        trainer = Trainer(model=model, args=args, train_dataset=_Sentences(ids), data_collator=_collate(pad_id))
        out = trainer.train()
        losses.append(float(out.training_loss))
    return {"schedule": schedule, "stage_losses": losses,
            "probe": {k: v for k, v in probe_conclusions(model, tokenizer, world, pad_id=pad_id).items()
                      if k != "per_query"}}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """CLI: `python -m icml26.analogy.scale --model PATH --out DIR [--schedule ...]` (torchrun-able)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="local path or HF name of a causal LM (already cached)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--schedule", default="all", choices=["all", *LM_SCHEDULES])
    ap.add_argument("--n-groups", type=int, default=64)
    ap.add_argument("--steps-per-stage", type=int, default=500)
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bf16", action="store_true")
    a = ap.parse_args(argv)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    world = AnalogyWorld(n_groups=a.n_groups, seed=a.seed)
    results = {}
    for schedule in (LM_SCHEDULES if a.schedule == "all" else [a.schedule]):
        tok = AutoTokenizer.from_pretrained(a.model)
        model = AutoModelForCausalLM.from_pretrained(a.model, torch_dtype=torch.bfloat16 if a.bf16 else None)
        results[schedule] = finetune_curriculum(
            model, tok, world, schedule, output_dir=Path(a.out) / schedule, steps_per_stage=a.steps_per_stage,
            lr=a.lr, batch_size=a.batch_size, seed=a.seed, training_overrides={"bf16": a.bf16})
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "lm_curricula.json").write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
