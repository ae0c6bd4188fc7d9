"""Paper-scale path (spec section 7): real Hugging Face target/verbalizer pairs, LIT with LoRA under torchrun DDP.

    # 1. train a LIT decoder (LoRA) on LatentQA-style data, one process per GPU
    torchrun --nproc_per_node 8 -m icml26.verbalization.scale train --config my_paper.json
    # 2. evaluate zero-shot, LIT (every read layer) and the Patchscopes grid on PersonaQA
    icml26 run verbalization --scale paper --set lit_checkpoint=runs/verbalization/paper/lit_decoder.pt ...

Inputs are the user's files (nothing is downloaded by us; `from_pretrained` may use the HF cache):
- `lit_data`: JSON list of {"read_prompt", "question", "answer"} (LatentQA format flattened).
- `personaqa_dir/<variant>/*.json`: the paper's published eval prompts, {idx: {"prompt", "question", "target"}}.
Engine: plain torch + transformers; DDP through `icml26.common.distributed` (nccl on GPU, gloo on CPU); the
decoder is LoRA-tuned (peft adapters on the attention projections). Each step reads the target's activations at
a read layer drawn from `read_layers` (LatentQA samples the layer), writes them at `write_layer` of the decoder.
This module never imports experiment.py: it takes the config as an argument.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from icml26.common import distributed as D
from icml26.common.validation import check_float, check_int, require_keys
from icml26.results import Claim, Result
from icml26.verbalization.baselines import ZeroShotBaseline
from icml26.verbalization.controls import any_layer_accuracy, contains_match, mcnemar
from icml26.verbalization.data import EvalItem
from icml26.verbalization.hooks import num_layers
from icml26.verbalization.verbalize import LITVerbalizer, PatchscopesVerbalizer, _pad_id, _words, lit_batch_loss

__all__ = ["validate_paper_config", "run_paper", "train_lit", "load_personaqa", "load_lit_data", "main"]

PAPER_KEYS = ("seed", "target_model", "decoder_model", "personaqa_dir", "personaqa_variant", "lit_data",
              "lit_steps", "lit_lr", "lit_batch_size", "lora_rank", "read_layers", "write_layer",
              "ps_source_layers", "ps_target_layers", "max_new_tokens", "dtype", "out_dir", "eval_limit")
PAPER_OPTIONAL = ("lit_checkpoint", "placeholder", "save_all_ranks")  # with defaults '' / '?' / False


def validate_paper_config(cfg: dict) -> None:
    """Raise ValueError/TypeError naming the first bad key of a paper-scale config."""
    require_keys(cfg, PAPER_KEYS, optional=("scale", *PAPER_OPTIONAL))
    check_int(cfg["seed"], "seed", min=0)
    for k in ("target_model", "decoder_model", "personaqa_variant", "out_dir"):
        if not isinstance(cfg[k], str) or not cfg[k]:
            raise ValueError(f"{k} must be a non-empty string")
    for k in ("personaqa_dir", "lit_data"):
        if not isinstance(cfg[k], str):
            raise TypeError(f"{k} must be a path string ('' for none)")
    check_int(cfg["lit_steps"], "lit_steps", min=0)
    check_float(cfg["lit_lr"], "lit_lr", min=0.0, min_open=True)
    check_int(cfg["lit_batch_size"], "lit_batch_size", min=1)
    if cfg["lora_rank"] is not None:
        check_int(cfg["lora_rank"], "lora_rank", min=1)
    check_int(cfg["write_layer"], "write_layer", min=0)
    check_int(cfg["max_new_tokens"], "max_new_tokens", min=1)
    check_int(cfg["eval_limit"], "eval_limit", min=0)
    for k in ("read_layers", "ps_source_layers", "ps_target_layers"):
        if not isinstance(cfg[k], (list, tuple)) or not cfg[k]:
            raise ValueError(f"{k} must be a non-empty list of layers")
        for x in cfg[k]:
            check_int(x, k, min=0)
    if cfg["dtype"] not in ("bfloat16", "float16", "float32"):
        raise ValueError(f"dtype must be bfloat16, float16 or float32, got {cfg['dtype']!r}")


def _dtype(name: str) -> torch.dtype:
    return {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[name]


def load_pair(cfg: dict, device: torch.device):
    """(target, decoder, tokenizer_t, tokenizer_v) from `target_model` / `decoder_model` (paths or hub names)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dt = _dtype(cfg["dtype"])
    tok_t = AutoTokenizer.from_pretrained(cfg["target_model"])
    tok_v = tok_t if cfg["decoder_model"] == cfg["target_model"] else AutoTokenizer.from_pretrained(cfg["decoder_model"])
    target = AutoModelForCausalLM.from_pretrained(cfg["target_model"], dtype=dt).to(device).eval()
    decoder = AutoModelForCausalLM.from_pretrained(cfg["decoder_model"], dtype=dt).to(device)
    for p in target.parameters():
        p.requires_grad_(False)
    return target, decoder, tok_t, tok_v


def load_lit_data(path: str | os.PathLike) -> tuple[list[str], list[tuple[str, str]]]:
    """LatentQA-style training data: a JSON list of {"read_prompt", "question", "answer"}."""
    rows = json.loads(Path(path).read_text())
    if not isinstance(rows, list) or not rows:
        raise ValueError(f"{path}: expected a non-empty JSON list of {{read_prompt, question, answer}}")
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or not all(isinstance(r.get(k), str) and r[k] for k in
                                              ("read_prompt", "question", "answer")):
            raise ValueError(f"{path}[{i}] must hold non-empty read_prompt, question and answer strings")
    return [r["read_prompt"] for r in rows], [(r["question"], r["answer"]) for r in rows]


def load_personaqa(folder: str | os.PathLike, variant: str, limit: int = 0) -> list[EvalItem]:
    """PersonaQA eval prompts: every `folder/variant/*.json` of {idx: {"prompt", "question", "target"}}."""
    d = Path(folder) / variant
    files = sorted(d.glob("*.json"))
    if not files:
        raise ValueError(f"no PersonaQA JSON files in {d}")
    items = []
    for f in files:
        data = json.loads(f.read_text())
        for k in sorted(data, key=lambda x: int(x) if str(x).isdigit() else str(x)):
            r = data[k]
            items.append(EvalItem(r["prompt"], r["question"], r["target"], None, {"file": f.stem, "idx": k}))
    return items[:limit] if limit else items


def _decoder_trainable(lit: LITVerbalizer, decoder):
    params = lit._trainable(decoder)
    if not params:
        raise ValueError("the decoder has no trainable parameter")
    return params


def train_lit(cfg: dict, env: D.DistEnv | None = None) -> dict[str, torch.Tensor]:
    """LIT training (LoRA) of `decoder_model` reading `target_model`, data-parallel over the torchrun ranks.

    Returns the trainable (adapter) weights; rank 0 saves them to `out_dir/lit_decoder.pt` (every rank saves its
    own copy too when `save_all_ranks` is set, which the tests use to compare ranks).
    """
    validate_paper_config(cfg)
    env = env or D.init_distributed()
    seed = int(cfg["seed"])
    torch.manual_seed(seed)  # same adapter init on every rank (DDP also broadcasts rank 0's weights)
    np_rng = np.random.default_rng(seed + 1000 * env.rank)
    target, decoder, tok_t, tok_v = load_pair(cfg, env.device)
    texts, qas = load_lit_data(cfg["lit_data"])
    lit = LITVerbalizer(target, decoder, tok_t, tok_v, int(cfg["read_layers"][0]), int(cfg["write_layer"]),
                        lora_rank=cfg["lora_rank"], max_new_tokens=int(cfg["max_new_tokens"]), copy=False,
                        placeholder=cfg.get("placeholder", "?"))
    for p in decoder.parameters():
        p.requires_grad_(cfg["lora_rank"] is None)
    params = _decoder_trainable(lit, decoder)
    model = D.wrap_ddp(decoder, env)
    opt = torch.optim.AdamW(params, lr=float(cfg["lit_lr"]), weight_decay=0.0)
    mine = D.shard(list(range(len(texts))), env) or list(range(len(texts)))
    eos = getattr(tok_v, "eos_token_id", None)
    pad = _pad_id(tok_v)
    model.train()
    for step in range(int(cfg["lit_steps"])):
        pick = [mine[int(i)] for i in np_rng.integers(0, len(mine), int(cfg["lit_batch_size"]))]
        lit.read_layer = int(cfg["read_layers"][int(np_rng.integers(0, len(cfg["read_layers"])))])
        acts = lit._read(target, [texts[i] for i in pick])
        seqs, starts, places = [], [], []
        for i, a in zip(pick, acts):
            prompt, ph = lit.decoder_prompt(a.shape[0], qas[i][0])
            seqs.append(prompt + _words(tok_v, qas[i][1]) + ([eos] if eos is not None else []))
            starts.append(len(prompt))
            places.append(ph)
        loss = lit_batch_loss(model, seqs, starts, places, acts, int(cfg["write_layer"]), pad)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        if step % 50 == 0 or step + 1 == int(cfg["lit_steps"]):
            D.log(env, f"LIT step {step + 1}/{cfg['lit_steps']} loss {D.mean_reduce(float(loss.detach())):.4f}")
    weights = {n: p.detach().cpu().clone() for n, p in D.unwrap(model).named_parameters() if p.requires_grad}
    out = Path(cfg["out_dir"])
    D.save_on_main(env, lambda: (out.mkdir(parents=True, exist_ok=True), torch.save(weights, out / "lit_decoder.pt")))
    if cfg.get("save_all_ranks"):
        out.mkdir(parents=True, exist_ok=True)
        torch.save(weights, out / f"lit_decoder_rank{env.rank}.pt")
    return weights


def _load_lit(cfg: dict, decoder, lit: LITVerbalizer, path: str) -> None:
    if cfg["lora_rank"] is not None:
        lit._trainable(decoder)
    state = torch.load(path, map_location="cpu")
    missing = set(state) - {n for n, _ in decoder.named_parameters()}
    if missing:
        raise ValueError(f"lit_checkpoint {path} holds weights the decoder lacks: {sorted(missing)[:3]}...")
    decoder.load_state_dict(state, strict=False)
    decoder.eval()


def run_paper(config: dict) -> Result:
    """Evaluate zero-shot, LIT (each read layer) and Patchscopes on PersonaQA with real HF models (spec 7).

    Trains the LIT decoder first when `lit_data` is set and no `lit_checkpoint` is given (single process here; use
    `torchrun ... -m icml26.verbalization.scale train` for several GPUs).
    """
    cfg = {k: v for k, v in config.items() if k != "scale"}
    validate_paper_config(cfg)
    t0 = time.perf_counter()
    env = D.init_distributed()
    if not cfg["personaqa_dir"]:
        raise ValueError("personaqa_dir must point at the PersonaQA eval prompts (see docs/verbalization.md)")
    ckpt = cfg.get("lit_checkpoint") or ""
    if not ckpt and cfg["lit_data"] and cfg["lit_steps"] > 0:
        train_lit(cfg, env)
        ckpt = str(Path(cfg["out_dir"]) / "lit_decoder.pt")
    target, decoder, tok_t, tok_v = load_pair(cfg, env.device)
    items = load_personaqa(cfg["personaqa_dir"], cfg["personaqa_variant"], int(cfg["eval_limit"]))
    src, qs, ans = [i.source for i in items], [i.question for i in items], [i.target for i in items]
    mnt = int(cfg["max_new_tokens"])
    zs_q = [q.replace(" x", "").strip() for q in qs]  # the paper's zero-shot question drops the placeholder
    zs = ZeroShotBaseline(decoder, tok_v, prompt_format="{source}\nComplete the sentence: {question}",
                          max_new_tokens=mnt).verbalize(src, zs_q)
    zs_ok = contains_match(zs, ans)
    metrics: dict[str, Any] = {"n": len(items), "zero_shot": float(zs_ok.mean())}
    ps = PatchscopesVerbalizer(target, decoder, tok_t, tok_v, int(cfg["ps_source_layers"][0]),
                               [x for x in cfg["ps_target_layers"] if x < num_layers(decoder)], max_new_tokens=mnt)
    metrics["patchscopes"] = any_layer_accuracy(ps.verbalize_sweep(src, qs, source_layers=cfg["ps_source_layers"]),
                                                ans)
    if ckpt:
        lit = LITVerbalizer(target, decoder, tok_t, tok_v, int(cfg["read_layers"][0]), int(cfg["write_layer"]),
                            lora_rank=cfg["lora_rank"], max_new_tokens=mnt, trained=True,
                            placeholder=cfg.get("placeholder", "?"))
        _load_lit(cfg, decoder, lit, ckpt)
        per_layer, oks = {}, []
        for layer in cfg["read_layers"]:
            lit.read_layer = int(layer)
            ok = contains_match(lit.verbalize(src, [q.replace(" x", "").strip() for q in qs]), ans)
            per_layer[int(layer)] = float(ok.mean())
            oks.append(ok)
        metrics["lit_correct"] = [[int(x) for x in ok] for ok in oks]
        metrics["lit"] = {"mean_over_layers": float(np.mean(list(per_layer.values()))), "per_layer": per_layer,
                          "p_vs_zero_shot_layer0": mcnemar(oks[0], zs_ok)}
    claims = []
    if "lit" in metrics:
        m = metrics["lit"]["mean_over_layers"]
        claims.append(Claim(
            id="3-paper", statement="PersonaQA is answered as well from the input alone as by LIT.",
            metric=f"{cfg['personaqa_variant']}: zero-shot vs LIT (mean over read layers)",
            measured={"zero_shot": metrics["zero_shot"], "lit": m}, threshold="zero_shot - LIT >= -0.05",
            decision=_zs_vs_lit(zs_ok, oks), kind="report",
            paper="feature extraction: zero-shot 0.64 vs LIT 0.64; Shuffled at chance; Fantasy 0 % (s)",
            details=f"{len(items)} items; per read layer {metrics['lit']['per_layer']}"))
    result = Result(slug="verbalization", scale="paper", config=config, metrics=metrics, claims=claims)
    result.runtime_s = time.perf_counter() - t0
    return result


def _zs_vs_lit(zs_ok: np.ndarray, lit_oks: list[np.ndarray]):
    """Paired item bootstrap of zero-shot minus LIT (LIT: mean over read layers per item) against -0.05."""
    from icml26.common import stats

    a = np.asarray(zs_ok, dtype=float)
    b = np.mean([np.asarray(o, dtype=float) for o in lit_oks], axis=0)
    est = float(a.mean() - b.mean())
    if a.size < 2:
        iv = stats.Interval(-float("inf"), float("inf"), method="bootstrap-bca", n=int(a.size), unit="items")
    else:
        iv = stats.bootstrap_interval((a, b), lambda x, y: x.mean() - y.mean(), paired=True, n_resamples=1000)
    return stats.decide(est, iv, -0.05, ">=", atol=0.02)


def main(argv: list[str] | None = None) -> int:
    """`python -m icml26.verbalization.scale train --config cfg.json` (run it under torchrun for DDP)."""
    ap = argparse.ArgumentParser(prog="icml26.verbalization.scale")
    ap.add_argument("command", choices=["train"])
    ap.add_argument("--config", required=True, help="JSON file with the paper config (see CONFIGS['paper'])")
    args = ap.parse_args(argv)
    cfg = json.loads(Path(args.config).read_text())
    env = D.init_distributed()
    try:
        train_lit(cfg, env)
    finally:
        D.shutdown()
    return 0


if __name__ == "__main__":  # pragma: no cover - exercised through torchrun in the tests
    raise SystemExit(main())
