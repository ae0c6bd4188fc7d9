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

MODELS: dict[str, dict[str, int]] = {
    "tiny": {"n_layers": 2, "d_model": 64, "n_heads": 4},  # for checking the code path on a CPU
    "gpt2-124m": {"n_layers": 12, "d_model": 768, "n_heads": 12},
    "gpt2-253m": {"n_layers": 16, "d_model": 1024, "n_heads": 16},
    "gpt2-774m": {"n_layers": 36, "d_model": 1280, "n_heads": 20},
}


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


def _dist():
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1 and not torch.distributed.is_initialized():
        torch.distributed.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        torch.cuda.set_device(local)
    return world, rank, torch.device(f"cuda:{local}" if torch.cuda.is_available() else "cpu")


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
                logits = model(input_ids=w[:, :-1]).logits
            total += float(F.cross_entropy(logits[0].float(), w[0, 1:]))
        out[str(T)] = total / n_windows
    model.train()
    return out


def train_arm(config: dict, arm: str) -> dict[str, Any]:
    """Train one arm with the paper-scale loop (AdamW, warmup + cosine, grad accumulation, bf16, DDP/FSDP2)."""
    world, rank, device = _dist()
    train, vocab = load_tokens(config["data_dir"], "train")
    val, _ = load_tokens(config["data_dir"], "val")
    extrap = val if not config["extrap_data_dir"] else load_tokens(config["extrap_data_dir"], "val")[0]
    torch.manual_seed(config["seed"])
    model = build_model(config["model"], arm, vocab, config["ctx"]).to(device)
    if world > 1 and config["fsdp"]:
        from torch.distributed.fsdp import fully_shard

        for layer in model.model.layers:
            fully_shard(layer)
        fully_shard(model)
        train_model = model
    elif world > 1:
        train_model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index]
                                                                if device.type == "cuda" else None)
    else:
        train_model = model
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

    for step in tqdm(range(steps), desc=f"{arm} {config['model']}", disable=rank != 0):
        for micro in range(accum):
            b = _batch(train, config["batch_size"], config["ctx"], rng, device)
            sync = nullcontext() if (micro == accum - 1 or world == 1 or config["fsdp"]) else train_model.no_sync()
            with sync, amp:
                logits = train_model(input_ids=b[:, :-1]).logits
                loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), b[:, 1:].reshape(-1)) / accum
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
    train_time = time.perf_counter() - t0
    val_loss = extrapolation_losses(model, val, [config["ctx"]], config["eval_windows"], device, amp)
    losses = extrapolation_losses(model, extrap, config["eval_lengths"], config["eval_windows"], device, amp)
    out = {"arm": arm, "seed": config["seed"], "val_loss": val_loss, "losses": losses, "train_time_s": train_time,
           "n_params": sum(p.numel() for p in model.parameters())}
    if config["out_dir"] and rank == 0:
        path = Path(config["out_dir"]) / f"{config['model']}-{arm}"
        model.save_pretrained(path)
        out["checkpoint"] = str(path)
    if config["zero_shot_tasks"] and config["data_dir"]:
        out["zero_shot"] = zero_shot_eval(model, config["zero_shot_tasks"]) if rank == 0 else {}
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
    """The `--scale paper` run: both arms, claims A (extrapolation), B (decoupling) and C (Indirect Indexing)."""
    from icml26.pope import experiment as E
    from icml26.results import Result

    t0 = time.perf_counter()
    runs = [train_arm(config, arm) for arm in config["arms"]]
    lengths = [int(t) for t in config["eval_lengths"] if all(str(t) in r["losses"] for r in runs)]
    claim_a, stats = E._claim_a(runs, lengths, [config["seed"]])
    dec = E.decoupling_check(config["decoupling_trials"], config["decoupling_head_dim"], config["decoupling_t"],
                             config["decoupling_max_pos"], seed=config["seed"])
    result = Result(slug="pope", scale="paper", config=config, metrics={"runs": runs, **stats, "decoupling": dec},
                    claims=[claim_a, E._claim_b(dec, config["decoupling_trials"])])
    result.add_figure("extrapolation", E._fig_extrapolation(runs, lengths, [config["seed"]]))
    if config["ii_run"]:
        ii = [E.train_indirect_indexing_arm(a, s, config) for s in config["ii_seeds"] for a in config["ii_arms"]]
        result.metrics["indirect_indexing"] = ii
        result.claims.append(E._claim_c(ii))
        result.add_figure("indirect_indexing", E._fig_ii(ii))
    result.runtime_s = time.perf_counter() - t0
    result.notes = ("byte-level stdlib fallback (data_dir empty): NOT the paper's OpenWebText setting"
                    if not config["data_dir"] else f"data {config['data_dir']}, extrapolation data "
                                                   f"{config['extrap_data_dir'] or config['data_dir']}")
    return result


def main(argv: list[str] | None = None) -> int:
    """`python -m icml26.pope.scale CONFIG.json` (under torchrun for several GPUs): merge the JSON into the
    paper config, run, save to runs/pope/paper (rank 0)."""
    from icml26.pope.experiment import CONFIGS
    from icml26.results import save_result

    argv = sys.argv[1:] if argv is None else argv
    config = dict(CONFIGS["paper"])
    if argv:
        overrides = json.loads(Path(argv[0]).read_text())
        unknown = set(overrides) - set(config) - {"_comment"}
        if unknown:
            raise ValueError(f"unknown config keys in {argv[0]}: {sorted(unknown)}")
        config.update({k: v for k, v in overrides.items() if k != "_comment"})
    config["scale"] = "paper"
    result = run_paper(config)
    if int(os.environ.get("RANK", "0")) == 0:
        print(save_result(result, Path(os.environ.get("ICML26_RUNS", "runs")) / "pope" / "paper"))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
