"""Paper-scale PoPE vs RoPE (spec 7): GPT-2-sized Llama-style decoders, single GPU or `torchrun` DDP / FSDP2.

    # one node, 8 GPUs, OpenWebText tokenised nanoGPT-style (uint16 train.bin / val.bin, GPT-2 BPE):
    torchrun --standalone --nproc_per_node 8 -m icml26 run pope --scale paper --set data_dir=/data/owt \\
        --set extrap_data_dir=/data/pg19 --set model=gpt2-124m
    # or with a JSON file from configs/paper/pope/:
    torchrun --standalone --nproc_per_node 8 -m icml26.pope.scale configs/paper/pope/gpt2_124m.json

Models are Hugging Face `LlamaForCausalLM`s built from a config (RMSNorm, no biases, tied embeddings, SwiGLU
MLP sized to GPT-2's 4x-GELU parameter count) with `patch_llama_attention(model, "pope")` for the PoPE arm and the
native RoPE for the baseline, so the trained models are ordinary HF models usable with `Trainer`,
`generate` and lm-eval-harness (`zero_shot_eval`). Sizes: 124M = 12 x 768 (GPT-2 small), 253M = 16 x 1024
(reconstructed: the paper states only the parameter count; 16 layers of width 1024 with GPT-2's vocabulary
give 253M), 774M = 36 x 1280 (GPT-2 large).

Evaluation: validation loss at the training length on `data_dir/val.bin` and zero-shot length extrapolation
(absolute positions 0..T-1, no interpolation) on `extrap_data_dir/val.bin` (PG-19 test tokenised the same way;
falls back to `data_dir`) at `eval_lengths`; optionally lm-eval-harness tasks (`pip install lm-eval`).
With `data_dir=""` the run falls back to the byte-level stdlib corpus (vocab 256) so the code path can be
exercised anywhere; the result then says so and is not a reproduction of the paper's numbers.
"""

from __future__ import annotations

import functools
import json
import math
import os
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from icml26.common import distributed as D
from icml26.common.generation import lm_logits
from icml26.common.validation import check_bool, check_choice, check_float, check_int, check_seed
from icml26.pope.claims import (
    DECOUPLING_DEFAULTS,
    claim_a,
    claim_b,
    claim_c,
    decoupling_check,
    fig_extrapolation,
    fig_ii,
)
from icml26.pope.tasks import II_LONG_CONFIG, train_indirect_indexing

MODELS: dict[str, dict[str, int]] = {
    "tiny": {"n_layers": 2, "d_model": 64, "n_heads": 4},  # for checking the code path on a CPU
    "gpt2-124m": {"n_layers": 12, "d_model": 768, "n_heads": 12},
    "gpt2-253m": {"n_layers": 16, "d_model": 1024, "n_heads": 16},
    "gpt2-774m": {"n_layers": 36, "d_model": 1280, "n_heads": 20},
}

PAPER_CONFIG: dict[str, Any] = {  # spec 7 (the experiment's CONFIGS["paper"] is this dict)
    "seed": 0, "model": "gpt2-124m", "arms": ["pope", "rope"], "data_dir": "", "ctx": 1024,
    "batch_size": 32, "grad_accum": 16, "steps": 20000, "lr": 6e-4, "min_lr_ratio": 0.1, "warmup_steps": 700,
    "weight_decay": 0.1, "eval_lengths": [1024, 2048, 4096, 8192, 10240], "eval_windows": 16,
    "extrap_data_dir": "", "zero_shot_tasks": ["lambada_openai", "blimp", "cbt", "hellaswag", "piqa", "arc_easy"],
    "dtype": "bfloat16", "fsdp": False, "compile": False, "out_dir": "runs/pope/paper/checkpoints",
    **DECOUPLING_DEFAULTS, **{**II_LONG_CONFIG, "ii_run": True, "ii_device": "cuda"},
}

PAPER_CONFIG_HELP: dict[str, str] = {
    "model": f"decoder size, one of {sorted(MODELS)} (tiny: a CPU check of the code path)",
    "arms": "position encodings to train, subset of ['pope', 'rope'] (both needed for claim A)",
    "data_dir": "folder with nanoGPT-style train.bin/val.bin (uint16 GPT-2 BPE); '' = stdlib byte corpus fallback",
    "extrap_data_dir": "folder with the extrapolation set's val.bin (PG-19 test); '' = data_dir",
    "ctx": "training context length, tokens",
    "batch_size": "sequences per micro-batch per process",
    "grad_accum": "micro-batches per optimizer step",
    "steps": "optimizer steps",
    "lr": "AdamW peak learning rate",
    "min_lr_ratio": "cosine floor as a fraction of lr",
    "warmup_steps": "linear warmup steps",
    "weight_decay": "AdamW decoupled weight decay on matrices",
    "eval_lengths": "zero-shot evaluation lengths, tokens (the first is the in-distribution length)",
    "eval_windows": "consecutive evaluation windows per length",
    "zero_shot_tasks": "lm-eval-harness tasks (needs lm-eval and the GPT-2 tokenizer; [] = none)",
    "dtype": "autocast dtype: bfloat16, float16 or float32",
    "fsdp": "FSDP2 fully_shard per decoder layer instead of DDP (under torchrun)",
    "compile": "torch.compile the model",
    "out_dir": "checkpoint folder ('' = no checkpoints)",
}


def validate_paper_config(config: dict[str, Any]) -> None:
    """ValueError/TypeError naming the first bad key of a paper-scale config (called before any compute)."""
    from icml26.common.validation import require_keys

    require_keys(config, PAPER_CONFIG)
    check_seed(config["seed"], "seed")
    check_choice(config["model"], "model", sorted(MODELS))
    arms = config["arms"]
    if not isinstance(arms, list) or not arms or any(a not in ("pope", "rope") for a in arms) or len(set(arms)) < len(arms):
        raise ValueError(f"arms must be a non-empty list of distinct 'pope'/'rope', got {arms!r}")
    for key in ("data_dir", "extrap_data_dir", "out_dir"):
        if not isinstance(config[key], str):
            raise TypeError(f"{key} must be a string path ('' for none), got {type(config[key]).__name__}")
    for key in ("ctx", "batch_size", "grad_accum", "steps", "eval_windows"):
        check_int(config[key], key, min=1)
    check_int(config["warmup_steps"], "warmup_steps", min=0)
    check_float(config["lr"], "lr", min=0.0, min_open=True)
    check_float(config["min_lr_ratio"], "min_lr_ratio", min=0.0, max=1.0)
    check_float(config["weight_decay"], "weight_decay", min=0.0)
    lengths = config["eval_lengths"]
    if not isinstance(lengths, list) or not lengths:
        raise ValueError(f"eval_lengths must be a non-empty list of ints, got {lengths!r}")
    for i, t in enumerate(lengths):
        check_int(t, f"eval_lengths[{i}]", min=2)
    if not isinstance(config["zero_shot_tasks"], list):
        raise TypeError("zero_shot_tasks must be a list of task names")
    check_choice(config["dtype"], "dtype", ("bfloat16", "float16", "float32"))
    check_bool(config["fsdp"], "fsdp")
    check_bool(config["compile"], "compile")
    validate_shared_checks(config)


def validate_shared_checks(config: dict[str, Any]) -> None:
    """The decoupling-check and Indirect Indexing keys, common to every scale."""
    check_int(config["decoupling_trials"], "decoupling_trials", min=1)
    check_int(config["decoupling_head_dim"], "decoupling_head_dim", min=2)
    check_int(config["decoupling_max_pos"], "decoupling_max_pos", min=1)
    check_int(config["decoupling_t"], "decoupling_t", min=0, max=int(config["decoupling_max_pos"]))
    check_bool(config["ii_run"], "ii_run")
    seeds = config["ii_seeds"]
    if not isinstance(seeds, list) or not seeds:
        raise ValueError(f"ii_seeds must be a non-empty list of seeds, got {seeds!r}")
    for i, s in enumerate(seeds):
        check_seed(s, f"ii_seeds[{i}]")
    arms = config["ii_arms"]
    if not isinstance(arms, list) or not arms or any(a not in ("pope", "rope", "alibi", "nope") for a in arms):
        raise ValueError(f"ii_arms must be a non-empty list of 'pope'/'rope'/'alibi'/'nope', got {arms!r}")
    for key in ("ii_layers", "ii_d_model", "ii_heads", "ii_batch", "ii_steps", "ii_alphabet", "ii_min_len",
                "ii_max_len", "ii_max_shift", "ii_queries", "ii_test_size"):
        check_int(config[key], key, min=1)
    if config["ii_d_model"] % config["ii_heads"]:
        raise ValueError(f"ii_d_model ({config['ii_d_model']}) must be divisible by ii_heads ({config['ii_heads']})")
    if not 2 <= config["ii_min_len"] <= config["ii_max_len"] <= config["ii_alphabet"]:
        raise ValueError("ii_min_len, ii_max_len, ii_alphabet must satisfy 2 <= ii_min_len <= ii_max_len <= "
                         f"ii_alphabet, got {config['ii_min_len']}, {config['ii_max_len']}, {config['ii_alphabet']}")
    check_float(config["ii_lr"], "ii_lr", min=0.0, min_open=True)
    check_float(config["ii_weight_decay"], "ii_weight_decay", min=0.0)
    check_choice(config["ii_device"], "ii_device", ("auto", "cpu", "cuda"))


def build_model(name: str, arm: str, vocab_size: int, ctx: int):
    """A Llama-style causal LM of the named size with PoPE ("pope") or its native RoPE ("rope")."""
    import transformers

    from icml26.pope.hf import patch_llama_attention

    if name not in MODELS:
        raise ValueError(f"model must be one of {sorted(MODELS)}, got {name!r}")
    m = MODELS[name]
    d = m["d_model"]
    cfg = transformers.LlamaConfig(
        vocab_size=vocab_size, hidden_size=d, intermediate_size=int(math.ceil(8 * d / 3 / 64) * 64),
        num_hidden_layers=m["n_layers"], num_attention_heads=m["n_heads"], num_key_value_heads=m["n_heads"],
        max_position_embeddings=ctx, rms_norm_eps=1e-6, tie_word_embeddings=True, attention_bias=False,
        mlp_bias=False, attn_implementation="sdpa", initializer_range=0.02,
    )
    model = transformers.LlamaForCausalLM(cfg)
    if arm == "pope":
        patch_llama_attention(model, "pope")
    elif arm != "rope":
        raise ValueError(f"arm must be 'pope' or 'rope', got {arm!r}")
    return model


def load_tokens(data_dir: str, split: str) -> tuple[np.ndarray | torch.Tensor, int]:
    """nanoGPT-format uint16 tokens `<data_dir>/<split>.bin` (memory-mapped) and the vocab size (GPT-2: 50304
    padded); `data_dir=""` gives the stdlib byte corpus (vocab 256)."""
    if not data_dir:
        tr, va = _byte_corpus()
        return (tr if split == "train" else va), 256
    path = Path(data_dir) / f"{split}.bin"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: data_dir must hold nanoGPT-style {split}.bin (uint16 tokens)")
    return np.memmap(path, dtype=np.uint16, mode="r"), 50304


@functools.lru_cache(maxsize=1)
def _byte_corpus(nbytes: int = 4_000_000) -> tuple[np.ndarray, np.ndarray]:
    from icml26.common.text import bytes_to_tensor, stdlib_python_bytes, train_val_split

    tr, va = train_val_split(bytes_to_tensor(stdlib_python_bytes(nbytes)), 0.1)
    return tr.numpy(), va.numpy()


def _batch(tokens, batch_size: int, ctx: int, rng: np.random.Generator, device) -> torch.Tensor:
    starts = rng.integers(0, len(tokens) - ctx - 1, size=batch_size)
    x = np.stack([np.asarray(tokens[s:s + ctx + 1], dtype=np.int64) for s in starts])
    return torch.from_numpy(x).to(device, non_blocking=True)


@torch.no_grad()
def extrapolation_losses(model, tokens, lengths: list[int], n_windows: int, device, amp) -> dict[str, float]:
    """Mean next-token loss over `n_windows` consecutive windows at every length (zero-shot, positions 0..T-1)."""
    model.eval()
    out = {}
    for T in lengths:
        if len(tokens) < n_windows * (T + 1):
            continue
        total = 0.0
        for i in range(n_windows):
            w = torch.from_numpy(np.asarray(tokens[i * (T + 1):(i + 1) * (T + 1)], dtype=np.int64))[None].to(device)
            with amp:
                logits = lm_logits(model, w[:, :-1])
            total += float(F.cross_entropy(logits[0].float(), w[0, 1:]))
        out[str(T)] = total / n_windows
    model.train()
    return out


def train_arm(config: dict, arm: str, *, env: D.DistEnv | None = None, model: torch.nn.Module | None = None,
              return_model: bool = False) -> dict[str, Any]:
    """Train one arm with the paper-scale loop (AdamW, warmup + cosine, grad accumulation, bf16, DDP/FSDP2).

    Under torchrun (`icml26.common.distributed`: nccl on GPUs, gloo on CPU) every rank draws its own batches
    (seed * 1000 + rank) and DDP averages the gradients, so all ranks end with the same weights; one process
    without torchrun is the single-GPU run. `model` replaces the `MODELS` Llama (e.g. a `TinyDecoder` with this
    arm's encoding, seeded by the caller; checkpoints then need `out_dir=""` or a model with `save_pretrained`).
    `return_model` adds the trained (unwrapped) model as out["model"].
    """
    env = D.init_distributed() if env is None else env
    world, rank, device = env.world_size, env.rank, env.device
    train, vocab = load_tokens(config["data_dir"], "train")
    val, _ = load_tokens(config["data_dir"], "val")
    extrap = val if not config["extrap_data_dir"] else load_tokens(config["extrap_data_dir"], "val")[0]
    if model is None:
        torch.manual_seed(config["seed"])
        model = build_model(config["model"], arm, vocab, config["ctx"])
    model = model.to(device)
    if world > 1 and config["fsdp"]:
        from torch.distributed.fsdp import fully_shard

        for layer in model.model.layers:
            fully_shard(layer)
        fully_shard(model)
        train_model = model
    else:
        train_model = D.wrap_ddp(model, env)  # the model itself in a single process
    if config["compile"]:
        train_model = torch.compile(train_model)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": config["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}], lr=config["lr"], betas=(0.9, 0.95),
                            fused=device.type == "cuda")
    steps, warm, min_ratio = config["steps"], config["warmup_steps"], config["min_lr_ratio"]

    def lr_at(s: int) -> float:
        if s < warm:
            return (s + 1) / warm
        t = min(1.0, (s - warm) / max(1, steps - warm))
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * t))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[config["dtype"]]
    amp = torch.autocast(device.type, dtype=dtype) if dtype != torch.float32 else nullcontext()
    rng = np.random.default_rng(config["seed"] * 1000 + rank)
    accum = config["grad_accum"]
    t0 = time.perf_counter()
    from tqdm.auto import tqdm

    for step in tqdm(range(steps), desc=f"{arm} {config['model']}", disable=not env.is_main):
        for micro in range(accum):
            b = _batch(train, config["batch_size"], config["ctx"], rng, device)
            sync = nullcontext() if (micro == accum - 1 or world == 1 or config["fsdp"]) else train_model.no_sync()
            with sync, amp:
                logits = lm_logits(train_model, b[:, :-1])  # HF model or TinyLM, DDP-wrapped or not
                loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), b[:, 1:].reshape(-1)) / accum
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
    train_time = time.perf_counter() - t0
    val_loss = extrapolation_losses(model, val, [config["ctx"]], config["eval_windows"], device, amp)
    losses = extrapolation_losses(model, extrap, config["eval_lengths"], config["eval_windows"], device, amp)
    val_loss, losses = D.mean_reduce(val_loss), D.mean_reduce(losses)  # identical windows: a no-op check of sync
    out = {"arm": arm, "seed": config["seed"], "val_loss": val_loss, "losses": losses, "train_time_s": train_time,
           "n_params": sum(p.numel() for p in model.parameters()), "world_size": world}
    if config["out_dir"]:
        path = Path(config["out_dir"]) / f"{config['model']}-{arm}"
        D.save_on_main(env, lambda: model.save_pretrained(path))
        out["checkpoint"] = str(path)
    if config["zero_shot_tasks"] and config["data_dir"]:
        out["zero_shot"] = zero_shot_eval(model, config["zero_shot_tasks"]) if env.is_main else {}
    if return_model:
        out["model"] = model
    return out


def zero_shot_eval(model, tasks: list[str], tokenizer_name: str = "gpt2", batch_size: int = 16) -> dict[str, float]:
    """lm-eval-harness accuracy of a (patched) HF model on `tasks` (needs `pip install lm-eval` and the GPT-2
    tokenizer files in the local HF cache)."""
    try:
        import lm_eval
        from lm_eval.models.huggingface import HFLM
    except ImportError as e:  # pragma: no cover - optional
        raise ModuleNotFoundError("zero-shot evaluation needs lm-eval-harness: pip install lm-eval", name="lm_eval") from e
    from transformers import AutoTokenizer

    lm = HFLM(pretrained=model, tokenizer=AutoTokenizer.from_pretrained(tokenizer_name), batch_size=batch_size)
    res = lm_eval.simple_evaluate(model=lm, tasks=list(tasks))["results"]
    return {t: float(r.get("acc,none", r.get("acc_norm,none", float("nan")))) for t, r in res.items()}


def run_paper(config: dict):
    """The `--scale paper` run: both arms, claims A (extrapolation), B (decoupling) and C (Indirect Indexing).

    Takes the full config (e.g. `PAPER_CONFIG` with overrides); validated before any compute.
    """
    from icml26.results import Result

    validate_paper_config(config)
    t0 = time.perf_counter()
    runs = [train_arm(config, arm) for arm in config["arms"]]
    lengths = [int(t) for t in config["eval_lengths"] if all(str(t) in r["losses"] for r in runs)]
    claims = []
    stats: dict[str, Any] = {}
    if {"pope", "rope"} <= set(config["arms"]) and len(lengths) >= 2:
        ca, stats = claim_a(runs, lengths, [config["seed"]])
        claims.append(ca)
    dec = decoupling_check(config["decoupling_trials"], config["decoupling_head_dim"], config["decoupling_t"],
                           config["decoupling_max_pos"], seed=config["seed"])
    claims.extend(claim_b(dec, config["decoupling_trials"]))
    result = Result(slug="pope", scale="paper", config=config, metrics={"runs": runs, **stats, "decoupling": dec},
                    claims=claims)
    if lengths:
        result.add_figure("extrapolation", fig_extrapolation(runs, lengths, [config["seed"]]),
                          "validation loss vs evaluation length (trained at the first length)")
    if config["ii_run"]:
        ii = [train_indirect_indexing(a, s, config) for s in config["ii_seeds"] for a in config["ii_arms"]]
        result.metrics["indirect_indexing"] = ii
        if {"pope", "rope"} <= set(config["ii_arms"]):
            result.claims.append(claim_c(ii))
        result.add_figure("indirect_indexing", fig_ii(ii), "Indirect Indexing test accuracy per encoding")
    result.runtime_s = time.perf_counter() - t0
    result.notes = ("byte-level stdlib fallback (data_dir empty): NOT the paper's OpenWebText setting"
                    if not config["data_dir"] else f"data {config['data_dir']}, extrapolation data "
                                                   f"{config['extrap_data_dir'] or config['data_dir']}")
    return result


def main(argv: list[str] | None = None) -> int:
    """`python -m icml26.pope.scale CONFIG.json` (under torchrun for several GPUs): merge the JSON into
    `PAPER_CONFIG`, run, save to runs/pope/paper (rank 0)."""
    from icml26.results import save_result

    argv = sys.argv[1:] if argv is None else argv
    config = dict(PAPER_CONFIG)
    if argv:
        overrides = json.loads(Path(argv[0]).read_text())
        unknown = set(overrides) - set(config) - {"_comment"}
        if unknown:
            raise ValueError(f"unknown config keys in {argv[0]}: {sorted(unknown)}")
        config.update({k: v for k, v in overrides.items() if k != "_comment"})
    config["scale"] = "paper"
    result = run_paper(config)
    env = D.init_distributed()
    D.save_on_main(env, lambda: print(save_result(result, Path(os.environ.get("ICML26_RUNS", "runs")) / "pope"
                                                  / "paper")))
    D.shutdown()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
