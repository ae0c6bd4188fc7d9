"""Paper-scale path (spec 7): Stages I-II on ImageNet-C-style pairs at 224-512 px and Stage III with a real
Hugging Face VLM, scaled out with torch DDP under torchrun (`icml26.common.distributed`).

    torchrun --standalone --nproc_per_node 8 -m icml26.robust_u1.scale configs/paper/robust_u1/imagenet_c.json

One process per GPU: each rank trains on its shard of the clean images (fresh corruptions from the library's
suite), DDP averages the gradients, so every rank ends with the same weights.
- Stage I: SFT of the restorer (any nn.Module: by default a wide `TinyRestorer`; `restorer_factory` =
  "package.module:function" builds your own, e.g. a diffusers UNet / Restormer returning images in [0, 1]).
- Stage II: `GRPORestorationTrainer` with a Gaussian head, Flow-GRPO-sized clip range (1e-4) and KL beta 0.04,
  reward 1.0 SSIM + 0.2 CLIP similarity (`CLIPSimilarityReward`, open_clip ViT-B-32 from `clip_weights`;
  without weights the run uses SSIM alone and says so). An SFT-continued arm (same batches, its L1 loss) is the
  control of claim C1.
- Stage III (when `vlm` names a local HF checkpoint, e.g. Qwen2-VL-2B-Instruct, and `vqa_file` a JSONL of
  {"image": path, "question": ..., "answer": ...}): `HFJointReasoner` SFT on [corrupted, RL-recovered] images
  (LoRA via peft when `lora_r` > 0), then exact-match accuracy of joint reasoning vs the untouched VLM on the
  corrupted image alone.

The official route (BAGEL-7B-MoT with MathCanvas for Stages I/III and Flow-GRPO for Stage II) plugs our
rewards into Flow-GRPO with `icml26.robust_u1.rewards.register_flow_grpo_rewards`; see docs/robust_u1.md.
With an empty `data_dir` the run falls back to the 24 x 24 digits (a toy run, not the paper's setting).
This module takes its config as an argument and never imports `experiment`.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from icml26.common import distributed as D
from icml26.common.validation import check_choice, check_float, check_int, check_seed, require_keys

__all__ = [
    "PAPER_CONFIG",
    "PAPER_CONFIG_HELP",
    "build_restorer",
    "load_image_folder",
    "main",
    "run_paper",
    "train_joint_vlm",
    "train_restoration",
    "validate_paper_config",
]

PAPER_CONFIG: dict[str, Any] = {
    "seed": 0, "data_dir": "", "image_size": 256, "max_images": 0, "test_images": 500,
    "restorer_channels": 64, "restorer_depth": 12, "restorer_factory": "",
    "sft_epochs": 10, "sft_lr": 2e-4, "sft_batch": 16, "sft_loss": "l1",
    "grpo_steps": 2000, "grpo_batch": 8, "group_size": 8, "policy_std": 0.05, "grpo_lr": 1e-5, "kl_beta": 0.04,
    "clip_range": 1e-4, "adv_clip": 5.0, "std_scope": "group", "eval_every": 100, "sft_continued": True,
    "sftc_lr": 1e-5, "reward_ssim": 1.0, "reward_clip": 0.2, "clip_weights": "", "clip_model": "ViT-B-32",
    "eval_severity": 5, "vlm": "", "vqa_file": "", "vlm_epochs": 1, "vlm_lr": 1e-5, "vlm_batch": 1, "lora_r": 16,
    "max_new_tokens": 16, "dtype": "bfloat16", "out_dir": "",
}
PAPER_CONFIG_HELP: dict[str, str] = {
    "data_dir": "folder of clean images (png/jpg/jpeg/bmp/npy, searched recursively); empty = digits toy run",
    "max_images": "use at most this many images (0 = all)", "test_images": "held-out images for the evaluation (at most half of the images)",
    "restorer_factory": "'module:function' returning the restorer nn.Module (empty = TinyRestorer of "
                        "restorer_channels x restorer_depth)",
    "sft_batch": "Stage I images per rank and step", "sft_continued": "also train the SFT-continued control",
    "clip_weights": "open_clip state dict for the CLIP-similarity reward (empty = SSIM reward only)",
    "clip_model": "open_clip architecture of clip_weights", "eval_severity": "test severity (all ten kinds)",
    "vlm": "local Hugging Face VLM checkpoint for Stage III (empty = skip)",
    "vqa_file": "JSONL of {image, question, answer} for Stage III", "vlm_epochs": "Stage III epochs",
    "vlm_lr": "Stage III AdamW lr", "vlm_batch": "Stage III questions per rank and step",
    "lora_r": "LoRA rank for Stage III (0 = full fine-tuning)", "max_new_tokens": "answer length limit",
    "dtype": "VLM dtype: bfloat16, float16 or float32", "out_dir": "where rank 0 saves the weights (empty = none)",
}


def validate_paper_config(cfg: dict[str, Any]) -> None:
    """Raise ValueError/TypeError naming the first bad key."""
    if not isinstance(cfg, dict):
        raise TypeError(f"config must be a dict, got {type(cfg).__name__}")
    require_keys(cfg, PAPER_CONFIG)
    check_seed(cfg["seed"], "seed")
    for k in ("data_dir", "restorer_factory", "clip_weights", "clip_model", "vlm", "vqa_file", "out_dir"):
        if not isinstance(cfg[k], str):
            raise TypeError(f"{k} must be a string, got {type(cfg[k]).__name__}")
    if cfg["data_dir"] and not Path(cfg["data_dir"]).is_dir():
        raise ValueError(f"data_dir {cfg['data_dir']!r} is not a directory")
    if cfg["clip_weights"] and not Path(cfg["clip_weights"]).is_file():
        raise ValueError(f"clip_weights {cfg['clip_weights']!r} is not a file")
    if bool(cfg["vlm"]) != bool(cfg["vqa_file"]):
        raise ValueError("vlm and vqa_file must be given together (Stage III needs both)")
    if cfg["vqa_file"] and not Path(cfg["vqa_file"]).is_file():
        raise ValueError(f"vqa_file {cfg['vqa_file']!r} is not a file")
    check_int(cfg["image_size"], "image_size", min=11)
    check_int(cfg["max_images"], "max_images", min=0)
    for k in ("test_images", "restorer_channels", "sft_epochs", "sft_batch", "grpo_batch", "eval_every",
              "vlm_epochs", "vlm_batch", "max_new_tokens"):
        check_int(cfg[k], k, min=1)
    check_int(cfg["restorer_depth"], "restorer_depth", min=2)
    check_int(cfg["grpo_steps"], "grpo_steps", min=0)
    check_int(cfg["group_size"], "group_size", min=2)
    check_int(cfg["lora_r"], "lora_r", min=0)
    check_int(cfg["eval_severity"], "eval_severity", min=1, max=5)
    for k in ("sft_lr", "grpo_lr", "sftc_lr", "vlm_lr", "policy_std", "clip_range", "adv_clip"):
        check_float(cfg[k], k, min=0.0, min_open=True)
    for k in ("kl_beta", "reward_ssim", "reward_clip"):
        check_float(cfg[k], k, min=0.0)
    check_choice(cfg["sft_loss"], "sft_loss", ("l1", "mse"))
    check_choice(cfg["std_scope"], "std_scope", ("group", "batch"))
    check_choice(cfg["dtype"], "dtype", ("bfloat16", "float16", "float32"))
    if not isinstance(cfg["sft_continued"], bool):
        raise TypeError("sft_continued must be True or False")


# ------------------------------------------------------------------------------------------- data
_IMAGE_EXT = (".png", ".jpg", ".jpeg", ".bmp", ".npy")


def _load_one(path: Path, size: int, grey: bool) -> torch.Tensor:
    from PIL import Image

    if path.suffix.lower() == ".npy":
        a = np.load(path)
        a = a.astype(np.float32) / 255.0 if a.dtype == np.uint8 else a.astype(np.float32)
        t = torch.from_numpy(a)
    else:
        t = torch.from_numpy(np.asarray(Image.open(path).convert("L" if grey else "RGB"), dtype=np.float32) / 255.0)
    t = t.unsqueeze(0) if t.dim() == 2 else t.permute(2, 0, 1)
    if grey and t.shape[0] == 3:
        t = (0.299 * t[0] + 0.587 * t[1] + 0.114 * t[2]).unsqueeze(0)
    elif not grey and t.shape[0] == 1:
        t = t.expand(3, -1, -1)
    h, w = t.shape[-2:]
    s = min(h, w)
    t = t[:, (h - s) // 2:(h - s) // 2 + s, (w - s) // 2:(w - s) // 2 + s]
    t = torch.nn.functional.interpolate(t.unsqueeze(0), size=(size, size), mode="bilinear", antialias=True,
                                        align_corners=False)[0]
    return t.clamp(0, 1)


def load_image_folder(folder: str | os.PathLike, size: int, max_images: int = 0, grey: bool = False) -> torch.Tensor:
    """Every image under `folder` (sorted paths), centre-cropped to a square and resized to size x size
    (bilinear with antialiasing), as float32 (N, 3, size, size) in [0, 1] (or (N, 1, ...) with grey=True).
    .npy files hold one (H, W) / (H, W, C) image in [0, 1] or uint8."""
    size = check_int(size, "size", min=1)
    max_images = check_int(max_images, "max_images", min=0)
    paths = sorted(p for p in Path(folder).rglob("*") if p.suffix.lower() in _IMAGE_EXT)
    if max_images:
        paths = paths[:max_images]
    if not paths:
        raise ValueError(f"data_dir {str(folder)!r} holds no image files ({', '.join(_IMAGE_EXT)})")
    return torch.stack([_load_one(p, size, grey) for p in paths])


def _images(cfg: dict) -> tuple[torch.Tensor, str]:
    if cfg["data_dir"]:
        return load_image_folder(cfg["data_dir"], cfg["image_size"], cfg["max_images"]), cfg["data_dir"]
    from icml26.robust_u1.data import load_digits_images

    x, _ = load_digits_images(24)
    if cfg["max_images"]:
        x = x[:cfg["max_images"]]
    return x, "digits fallback (24 x 24): NOT the paper's ImageNet-C setting"


def build_restorer(cfg: dict, in_channels: int) -> nn.Module:
    """The restorer of the config: `restorer_factory` ('module:function', called with in_channels) or a
    TinyRestorer(restorer_channels, restorer_depth)."""
    if cfg["restorer_factory"]:
        mod, _, fn = cfg["restorer_factory"].partition(":")
        if not fn:
            raise ValueError(f"restorer_factory must be 'module:function', got {cfg['restorer_factory']!r}")
        model = getattr(importlib.import_module(mod), fn)(in_channels)
        if not isinstance(model, nn.Module):
            raise TypeError(f"restorer_factory must return an nn.Module, got {type(model).__name__}")
        return model
    from icml26.robust_u1.models import TinyRestorer

    return TinyRestorer(cfg["restorer_channels"], cfg["restorer_depth"], in_channels)


def _reward(cfg: dict, device: torch.device):
    from icml26.robust_u1.rewards import CLIPSimilarityReward, CompositeReward, SSIMReward

    parts = {"ssim": (SSIMReward(), cfg["reward_ssim"])}
    if cfg["clip_weights"] and cfg["reward_clip"] > 0:
        parts["clip"] = (CLIPSimilarityReward(cfg["clip_model"], cfg["clip_weights"], device=device), cfg["reward_clip"])
    return CompositeReward(parts), "clip" in parts


class _OnDevice:
    """Wrap a PairStream: move each (x_c, x) batch to `device`."""

    def __init__(self, stream, device: torch.device) -> None:
        self.stream, self.device = stream, device

    def __iter__(self):
        for a, b in self.stream:
            yield a.to(self.device), b.to(self.device)


def _shard(x: torch.Tensor, env: D.DistEnv) -> torch.Tensor:
    """This rank's images; the list is padded by wrapping so every rank holds the same count (DDP needs equal
    step counts, as torch's DistributedSampler does)."""
    n = len(x)
    per = -(-n // env.world_size)
    idx = torch.arange(per * env.world_size) % n
    return x[idx[env.rank::env.world_size]]


def train_restoration(cfg: dict, images: torch.Tensor, env: D.DistEnv | None = None) -> dict[str, Any]:
    """Stages I and II (and the SFT-continued control) on clean `images`, data-parallel over the job's ranks.

    Returns {"sft", "rl", "sftc" (state dicts, unwrapped), "grpo" (history), "clip_reward" (bool), times}.
    """
    from icml26.robust_u1.data import FirstSteps, PairStream
    from icml26.robust_u1.models import GaussianRestorationPolicy
    from icml26.robust_u1.training import GRPOConfig, GRPORestorationTrainer, sft_restorer

    env = env or D.init_distributed()
    torch.manual_seed(cfg["seed"])  # identical initial weights on every rank (DDP also broadcasts them)
    local = _shard(images, env)
    restorer = build_restorer(cfg, images.shape[1]).to(env.device)
    t0 = time.perf_counter()
    model = D.wrap_ddp(restorer, env)
    sft_restorer(model, _OnDevice(PairStream(local, cfg["sft_batch"], 1, seed=cfg["seed"] + 17 * env.rank),
                                  env.device), cfg["sft_epochs"], cfg["sft_lr"], cfg["sft_loss"],
                 progress="Stage I" if env.is_main else None)
    t_sft = time.perf_counter() - t0
    sft_state = copy.deepcopy(D.unwrap(model).state_dict())
    reward, has_clip = _reward(cfg, env.device)
    gcfg = GRPOConfig(group_size=cfg["group_size"], std=cfg["policy_std"], lr=cfg["grpo_lr"], kl_beta=cfg["kl_beta"],
                      clip_range=cfg["clip_range"], adv_clip=cfg["adv_clip"], std_scope=cfg["std_scope"],
                      steps=cfg["grpo_steps"], batch_size=cfg["grpo_batch"], eval_every=cfg["eval_every"])
    ref = GaussianRestorationPolicy(copy.deepcopy(D.unwrap(model)), std=cfg["policy_std"]).frozen_copy()
    policy = GaussianRestorationPolicy(model, std=cfg["policy_std"]).to(env.device)
    trainer = GRPORestorationTrainer(policy, reward, gcfg, ref_policy=ref)
    pairs = PairStream(local, cfg["grpo_batch"], 1, seed=cfg["seed"] + 1000 + 17 * env.rank)
    t1 = time.perf_counter()
    gen = torch.Generator(device=env.device).manual_seed(cfg["seed"] + 2000 + env.rank)
    hist = trainer.train(_OnDevice(pairs, env.device), generator=gen, progress="Stage II" if env.is_main else None)
    t_rl = time.perf_counter() - t1
    out = {"sft": sft_state, "rl": copy.deepcopy(D.unwrap(model).state_dict()), "grpo": hist, "clip_reward": has_clip,
           "time_sft_s": t_sft, "time_rl_s": t_rl, "world_size": env.world_size}
    if cfg["sft_continued"]:
        ctrl = build_restorer(cfg, images.shape[1]).to(env.device)
        ctrl.load_state_dict(sft_state)
        cm = D.wrap_ddp(ctrl, env)
        pairs = PairStream(local, cfg["grpo_batch"], 1, seed=cfg["seed"] + 1000 + 17 * env.rank)
        sft_restorer(cm, FirstSteps(_OnDevice(pairs, env.device), cfg["grpo_steps"]), 1, cfg["sftc_lr"], cfg["sft_loss"])
        out["sftc"] = copy.deepcopy(D.unwrap(cm).state_dict())
    return out


def train_joint_vlm(reasoner: Any, x_c: torch.Tensor, x_r: torch.Tensor, questions: list[str], answers: list[str],
                    epochs: int, lr: float, batch: int, env: D.DistEnv | None = None, seed: int = 0) -> list[float]:
    """Stage III SFT of `reasoner.model` (an `HFJointReasoner`) on [x_c, x_r] items, data-parallel (each rank
    its shard; DDP averages gradients). Returns the mean loss per epoch (this rank)."""
    env = env or D.init_distributed()
    n = len(questions)
    if not (len(x_c) == len(x_r) == n == len(answers)):
        raise ValueError("x_c, x_r, questions and answers must have one entry per item")
    per = -(-n // env.world_size)
    idx = (torch.arange(per * env.world_size) % n)[env.rank::env.world_size]
    model = reasoner.model
    ddp = D.wrap_ddp(model, env, find_unused_parameters=True) if env.is_distributed else model  # VLM towers have unused heads
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr)
    g = torch.Generator().manual_seed(seed)
    losses = []
    inner = copy.copy(reasoner)
    inner.model = ddp
    inner._device = reasoner._device  # type: ignore[method-assign]
    ddp.train()
    for _ in range(epochs):
        order = idx[torch.randperm(len(idx), generator=g)]
        tot, k = 0.0, 0
        for s in range(0, len(order), batch):
            b = order[s:s + batch].tolist()
            loss = inner.loss(x_c[b], x_r[b], [questions[i] for i in b], [answers[i] for i in b])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            tot, k = tot + float(loss), k + 1
        losses.append(tot / max(k, 1))
    model.eval()
    return losses


def _normalise(s: str) -> str:
    return " ".join(str(s).lower().strip().rstrip(".").split())


def _stage3(cfg: dict, rl_state: dict, env: D.DistEnv) -> dict[str, Any]:
    """Stage III on the configured VLM and VQA file; returns accuracies (rank 0 evaluates)."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from icml26.robust_u1.corruptions import RandomCorruption
    from icml26.robust_u1.hf import HFJointReasoner
    from icml26.robust_u1.training import restore

    rows = [json.loads(line) for line in Path(cfg["vqa_file"]).read_text().splitlines() if line.strip()]
    base = Path(cfg["vqa_file"]).parent
    x = torch.stack([_load_one(base / r["image"], cfg["image_size"], False) for r in rows])
    qs, ans = [r["question"] for r in rows], [str(r["answer"]) for r in rows]
    g = torch.Generator().manual_seed(cfg["seed"] + 5)
    n_test = min(cfg["test_images"], len(rows) // 5 or 1)
    xc_train = RandomCorruption()(x[n_test:], generator=g)[0]
    xc_test = RandomCorruption(severities=(cfg["eval_severity"],))(x[:n_test], generator=g)[0]
    restorer = build_restorer(cfg, x.shape[1]).to(env.device)
    restorer.load_state_dict(rl_state)
    dev = env.device
    xr_train = restore(lambda t: restorer(t.to(dev)).cpu(), xc_train)
    xr_test = restore(lambda t: restorer(t.to(dev)).cpu(), xc_test)
    dtype = getattr(torch, cfg["dtype"])
    model = AutoModelForImageTextToText.from_pretrained(cfg["vlm"], dtype=dtype).to(dev)
    processor = AutoProcessor.from_pretrained(cfg["vlm"])
    general = HFJointReasoner(model, processor)
    out: dict[str, Any] = {}
    if env.is_main:
        pred = general.answer(xc_test, None, qs[:n_test], cfg["max_new_tokens"], corrupted_only=True)
        out["general_on_corrupted"] = float(np.mean([_normalise(p) == _normalise(a) for p, a in zip(pred, ans)]))
    if cfg["lora_r"] > 0:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=cfg["lora_r"], lora_alpha=2 * cfg["lora_r"],
                                                 target_modules="all-linear"))
    joint = HFJointReasoner(model, processor)
    out["stage3_loss"] = train_joint_vlm(joint, xc_train, xr_train, qs[n_test:], ans[n_test:], cfg["vlm_epochs"],
                                         cfg["vlm_lr"], cfg["vlm_batch"], env, cfg["seed"])
    if env.is_main:
        pred = joint.answer(xc_test, xr_test, qs[:n_test], cfg["max_new_tokens"])
        out["robust_u1"] = float(np.mean([_normalise(p) == _normalise(a) for p, a in zip(pred, ans)]))
    return out


def run_paper(config: dict):
    """`--scale paper`: Stages I-II (+ the SFT-continued control) data-parallel over the torchrun job, claim C1
    on held-out images at `eval_severity`, and Stage III when a VLM is configured. Rank 0's Result is complete;
    the other ranks return the same Result object without evaluation claims."""
    from icml26.results import Result
    from icml26.robust_u1.claims import claim_recovery
    from icml26.robust_u1.data import corrupted_test_set
    from icml26.robust_u1.metrics import ssim
    from icml26.robust_u1.training import restore

    cfg = {k: v for k, v in config.items() if k != "scale"}
    validate_paper_config(cfg)
    t0 = time.perf_counter()
    env = D.init_distributed()
    x, source = _images(cfg)
    n_test = min(cfg["test_images"], max(1, len(x) // 2))  # never more than half the images
    test, train = x[:n_test], x[n_test:]
    res = train_restoration(cfg, train, env)
    claims, metrics = [], {"world_size": env.world_size, "data": source, "n_train": len(train), "n_test": n_test,
                           "time_sft_s": res["time_sft_s"], "time_rl_s": res["time_rl_s"],
                           "grpo_step_time_s": res["grpo"]["step_time_s"], "clip_reward": res["clip_reward"]}
    if env.is_main:
        items = corrupted_test_set(test, torch.zeros(len(test), dtype=torch.long), cfg["eval_severity"],
                                   seed=cfg["seed"] + 99)
        reward, _ = _reward(cfg, env.device)
        per = {"image": items["image"].numpy(), "ssim_identity": ssim(items["x_c"], items["x"]).numpy()}
        for name in ("sft", "rl", "sftc"):
            state = res.get(name, res["sft"])
            r = build_restorer(cfg, x.shape[1]).to(env.device)
            r.load_state_dict(state)
            outp = restore(lambda t, r=r: r(t.to(env.device)).cpu(), items["x_c"], batch_size=64)
            per[f"ssim_{name}"] = ssim(outp, items["x"]).numpy()
            per[f"reward_{name}"] = reward(outp, items["x"])[0].numpy()
        claims.append(claim_recovery([per], n_boot=1000))
        metrics.update({k: float(np.mean(v)) for k, v in per.items() if k != "image"})
    if cfg["vlm"]:
        metrics["stage3"] = _stage3(cfg, res["rl"], env)
    if cfg["out_dir"] and env.is_main:
        out = Path(cfg["out_dir"])
        out.mkdir(parents=True, exist_ok=True)
        for name in ("sft", "rl", "sftc"):
            if name in res:
                torch.save(res[name], out / f"restorer_{name}.pt")
    D.barrier()
    result = Result(slug="robust_u1", scale="paper", config=cfg, metrics=metrics, claims=claims)
    result.runtime_s = time.perf_counter() - t0
    result.notes = (f"data: {source}; {env.world_size} rank(s); CLIP reward "
                    f"{'on' if res['clip_reward'] else 'OFF (no clip_weights): SSIM reward only'}; Stage III "
                    f"{'run' if cfg['vlm'] else 'not run (no vlm)'}.")
    result._rank_states = res  # type: ignore[attr-defined]  (tests compare ranks)
    return result


def main(argv: list[str] | None = None) -> int:
    """`python -m icml26.robust_u1.scale CONFIG.json` (under torchrun for several GPUs): merge the JSON into
    PAPER_CONFIG, run, save to $ICML26_RUNS/robust_u1/paper (rank 0)."""
    from icml26.results import save_result

    argv = sys.argv[1:] if argv is None else argv
    config = dict(PAPER_CONFIG)
    if argv:
        overrides = json.loads(Path(argv[0]).read_text())
        unknown = set(overrides) - set(config) - {"_comment"}
        if unknown:
            raise ValueError(f"unknown config keys in {argv[0]}: {sorted(unknown)}")
        config.update({k: v for k, v in overrides.items() if k != "_comment"})
    result = run_paper(config)
    env = D.init_distributed()
    D.save_on_main(env, lambda: print(save_result(result, Path(os.environ.get("ICML26_RUNS", "runs")) / "robust_u1"
                                                  / "paper")))
    D.shutdown()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
