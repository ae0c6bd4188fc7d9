"""Paper-scale Active Attacks (spec 7): Hugging Face attacker/victim/judge, torch DDP through torchrun.

    torchrun --nproc_per_node 8 -m icml26.active_attacks.scale --config my_paper_config.json
    # or, single process:  icml26 run active_attacks --scale paper --set sft_data=prompts.txt

Per rank: the attacker (e.g. Qwen2.5-1.5B + LoRA r 32 / alpha 16) is wrapped in `DistributedDataParallel`
(`icml26.common.distributed`), so the TB/REINFORCE gradients are averaged over ranks; the log Z head is averaged
by an all-reduce. Each rank samples and scores its own share of the batch (batch_size x grad_accum prompts per
update, split over ranks) against its own copy of the victim (e.g. Qwen2.5-1.5B-Instruct + LoRA) and judge
(Llama-Guard-3-8B: probability of "unsafe"). At a round boundary the ranks all-gather the round's successful
prompts, so every rank safety-tunes its victim on the same data with the same seed. Rank 0 runs MLE smoothing
and the cross-attack evaluation and saves prompts, adapters and the result.

Deviations: the official code samples the victim/judge with vLLM; here they run through `transformers.generate`-
style sampling on each rank (`VictimModel.respond`), which is slower but needs no extra engine; the linear LR
warm-up/decay is not applied (constant LR, as at CPU scale). `attacker="toy"` (with victim/classifier "toy") builds
tiny Llama models over the ToxWorld vocabulary: the CPU test of this path.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from icml26.active_attacks.active_attacks import ActiveAttacks, mle_smoothing
from icml26.active_attacks.claims import cross_attack_claim
from icml26.active_attacks.classifiers import BagOfWordsToxicityClassifier, HFToxicityClassifier
from icml26.active_attacks.data import REFUSAL_TEXT, ToxWorld
from icml26.active_attacks.metrics import attack_success_rate, diversity
from icml26.active_attacks.models import AttackerPolicy, VictimModel, default_refusal
from icml26.active_attacks.redteam import GFlowNetRedTeamer, ReplayBuffer
from icml26.common import distributed as D
from icml26.common.validation import check_choice, check_float, check_int, check_seed, require_keys
from icml26.results import Result

PAPER_KEYS = ("seed", "attacker", "victim", "classifier", "classifier_kind", "sft_data", "instruction", "sft_steps",
              "sft_lr", "sft_batch", "steps", "batch_size", "grad_accum", "lr", "lr_log_z", "lora_r", "lora_alpha",
              "beta", "gamma", "reward_temp", "temp_range", "buffer_size", "sim_tolerance", "min_len", "max_len",
              "n_responses", "victim_temp", "victim_top_p", "victim_max_new_tokens", "interval", "safety_steps",
              "safety_lr", "safety_batch", "mle_steps", "mle_lr", "n_eval", "arms", "dtype", "out_dir",
              "seed_batches", "p_offline")


def validate_paper_config(config: dict[str, Any]) -> None:
    """Raise ValueError/TypeError naming the first bad key of a paper-scale config."""
    # save_all_ranks: optional, for the 2-process test (every rank saves its attacker weights)
    require_keys(config, PAPER_KEYS, optional=("scale", "save_all_ranks"))
    check_seed(config["seed"])
    for k in ("sft_steps", "sft_batch", "steps", "batch_size", "grad_accum", "lora_r", "lora_alpha", "buffer_size",
              "min_len", "max_len", "n_responses", "victim_max_new_tokens", "interval", "safety_steps", "safety_batch",
              "mle_steps", "n_eval"):
        check_int(config[k], k, min=1)
    check_int(config["seed_batches"], "seed_batches", min=0)
    for k in ("sft_lr", "lr", "lr_log_z", "beta", "gamma", "safety_lr", "mle_lr", "victim_temp"):
        check_float(config[k], k, min=0.0, min_open=True)
    check_float(config["victim_top_p"], "victim_top_p", min=0.0, max=1.0, min_open=True)
    check_float(config["sim_tolerance"], "sim_tolerance", min=0.0, max=1.0)
    check_float(config["p_offline"], "p_offline", min=0.0, max=1.0)
    check_choice(config["classifier_kind"], "classifier_kind", ("guard", "sequence"))
    check_choice(config["dtype"], "dtype", ("float32", "bfloat16", "float16"))
    for a in config["arms"]:
        check_choice(a, "arms", ("gfn", "aa"))
    for k in ("attacker", "victim", "classifier", "instruction", "out_dir"):
        if not isinstance(config[k], str) or not config[k]:
            raise TypeError(f"{k} must be a non-empty string")
    if config["attacker"] != "toy" and not config["sft_data"]:
        raise ValueError("sft_data must name a text file of seed attack prompts (one per line) for the SFT warm-up")


# ------------------------------------------------------------------------------------------------ models
def _toy_world() -> ToxWorld:
    return ToxWorld()


def _toy_llama(vocab: int, seed: int):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, pad_token_id=0,
                      bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)
    return LlamaForCausalLM(cfg)


def _lora(model, r: int, alpha: int):
    from peft import LoraConfig, get_peft_model

    return get_peft_model(model, LoraConfig(r=r, lora_alpha=alpha, lora_dropout=0.0, target_modules="all-linear",
                                            task_type="CAUSAL_LM"))


def load_models(config: dict[str, Any], device: torch.device):
    """(attacker policy (SFT init, LoRA), victim, classifier, SFT prompts, retain prompts) for `config`."""
    seed = config["seed"]
    dtype = getattr(torch, config["dtype"])
    if config["attacker"] == "toy":
        world = _toy_world()
        tok = world.tokenizer
        rng = np.random.default_rng(seed)
        att_lm = _lora(_toy_llama(tok.vocab_size, seed), config["lora_r"], config["lora_alpha"]).to(device)
        victim_lm = _toy_llama(tok.vocab_size, seed + 1).to(device)
        texts, labels = world.classifier_corpus(200, rng)
        clf = BagOfWordsToxicityClassifier().fit(texts, labels)
        sft_prompts = world.sft_prompts(200, rng)
        retain = world.benign_prompts(50, rng)
        policy = AttackerPolicy(att_lm, tok, "", min_len=config["min_len"], max_len=config["max_len"],
                                allowed_token_ids=world.attacker_token_ids)
        victim = VictimModel(victim_lm, tok, {"temperature": config["victim_temp"], "top_p": config["victim_top_p"],
                                              "max_new_tokens": config["victim_max_new_tokens"]}, lora=True,
                             lora_r=config["lora_r"], lora_alpha=config["lora_alpha"])
        return policy, victim, clf, sft_prompts, retain, (lambda p: REFUSAL_TEXT)
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer

    a_tok = AutoTokenizer.from_pretrained(config["attacker"])
    att_lm = AutoModelForCausalLM.from_pretrained(config["attacker"], dtype=dtype).to(device)
    att_lm = _lora(att_lm, config["lora_r"], config["lora_alpha"])
    newline = a_tok.encode("\n", add_special_tokens=False)
    policy = AttackerPolicy(att_lm, a_tok, config["instruction"], min_len=config["min_len"], max_len=config["max_len"],
                            eos_token_id=newline[-1] if newline else None)  # the paper stops prompts at a newline
    v_tok = AutoTokenizer.from_pretrained(config["victim"])
    v_lm = AutoModelForCausalLM.from_pretrained(config["victim"], dtype=dtype).to(device)
    victim = VictimModel(v_lm, v_tok, {"temperature": config["victim_temp"], "top_p": config["victim_top_p"],
                                       "max_new_tokens": config["victim_max_new_tokens"]}, lora=True,
                         lora_r=config["lora_r"], lora_alpha=config["lora_alpha"])
    c_tok = AutoTokenizer.from_pretrained(config["classifier"])
    if config["classifier_kind"] == "guard":
        c_lm = AutoModelForCausalLM.from_pretrained(config["classifier"], dtype=dtype).to(device)
    else:
        c_lm = AutoModelForSequenceClassification.from_pretrained(config["classifier"], dtype=dtype).to(device)
    clf = HFToxicityClassifier(c_lm, c_tok, kind=config["classifier_kind"])
    lines = [ln.strip() for ln in Path(config["sft_data"]).read_text().splitlines() if ln.strip()]
    if not lines:
        raise ValueError(f"sft_data {config['sft_data']} holds no prompts")
    retain_file = config.get("retain_data") or ""
    retain = [ln.strip() for ln in Path(retain_file).read_text().splitlines() if ln.strip()] if retain_file else None
    return policy, victim, clf, lines, retain, default_refusal


# ------------------------------------------------------------------------------------------------ training
def _average_grads(params) -> None:
    for p in params:
        if p.grad is not None:
            p.grad.copy_(D.mean_reduce(p.grad))


def _gather_attacks(env):
    def gather(attacks):
        if not env.is_distributed:
            return attacks
        box = [None] * env.world_size
        torch.distributed.all_gather_object(box, attacks)
        return [a for part in box for a in part]

    return gather


def train_arm(arm: str, config: dict, env, policy: AttackerPolicy, sft: AttackerPolicy, victim: VictimModel, clf,
              retain, refusal_fn) -> tuple[list[str], AttackerPolicy, dict]:
    """One arm (gfn / aa) on this rank; returns the gathered distinct successful prompts, the attacker, stats."""
    seed = config["seed"]
    per_rank = max(1, config["batch_size"] * config["grad_accum"] // env.world_size)
    policy.model = D.wrap_ddp(policy.model, env)
    trainer = GFlowNetRedTeamer(policy, victim, clf, reference=sft, beta=config["beta"], gamma=config["gamma"],
                                reward_temp=tuple(config["reward_temp"]), lr_log_z=config["lr_log_z"],
                                buffer=ReplayBuffer(config["buffer_size"], "edit", config["sim_tolerance"]),
                                p_offline=config["p_offline"], temp_range=tuple(config["temp_range"]),
                                seed_batches=config["seed_batches"], n_responses=config["n_responses"],
                                batch_size=per_rank, lr=config["lr"], seed=seed * 1009 + env.rank)
    trainer._sync_gradients = lambda: _average_grads(policy.log_z_parameters())
    T = config["steps"]
    interval = config["interval"] if arm == "aa" else T + 1
    aa = ActiveAttacks(trainer, interval, config["safety_steps"], refusal_fn, safety_lr=config["safety_lr"],
                       safety_batch_size=config["safety_batch"], retain_prompts=retain,
                       gather_fn=_gather_attacks(env), seed=seed)
    t0 = time.perf_counter()
    aa.train(T, progress=f"{arm} rank {env.rank}" if env.is_main else False)
    stats = {"train_s": time.perf_counter() - t0, "safety_finetune_s": aa.finetune_seconds, **trainer.timing,
             **trainer.counts}
    attacks = _gather_attacks(env)(trainer.collected)
    policy.model = D.unwrap(policy.model)
    return list(dict.fromkeys(a.prompt for a in attacks)), policy, stats


def run_paper(config: dict[str, Any]) -> Result:
    """The paper-scale run (single process, or one rank of a torchrun job); see the module docstring."""
    validate_paper_config(config)
    t_start = time.perf_counter()
    env = D.init_distributed()
    seed = config["seed"]
    torch.manual_seed(seed)
    policy, victim0, clf, sft_prompts, retain, refusal_fn = load_models(config, env.device)
    # SFT warm-up of the attacker on the seed prompts (same seed on every rank; DDP then broadcasts rank 0's weights)
    sft = mle_smoothing(policy, sft_prompts, steps=config["sft_steps"], lr=config["sft_lr"],
                        batch_size=config["sft_batch"], seed=seed)
    datasets, attackers, stats = {}, {}, {}
    for arm in config["arms"]:
        torch.manual_seed(seed)
        pol = copy.deepcopy(sft)
        D.barrier()
        datasets[arm], attackers[arm], stats[arm] = train_arm(arm, config, env, pol, sft, victim0.clone(), clf,
                                                             retain, refusal_fn)
    out = Path(config["out_dir"])
    if config.get("save_all_ranks"):  # for the 2-process test: every rank's attacker weights
        out.mkdir(parents=True, exist_ok=True)
        for arm, pol in attackers.items():
            torch.save({k: v.detach().cpu() for k, v in pol.state_dict().items()}, out / f"{arm}_rank{env.rank}.pt")
    metrics: dict[str, Any] = {"dataset_size": {a: len(d) for a, d in datasets.items()}, "timing": stats,
                               "world_size": env.world_size}
    claims = []
    if env.is_main:
        g = torch.Generator().manual_seed(seed)
        names = [a for a in datasets if datasets[a]]
        tuned = {}
        for b in names:
            v = victim0.clone()
            v.safety_finetune(datasets[b], refusal_fn, steps=config["safety_steps"], lr=config["safety_lr"],
                              batch_size=config["safety_batch"], retain_prompts=retain, generator=g)
            tuned[b] = v
        rng = np.random.default_rng(seed)
        cross = {}
        for a in names:
            draw = [datasets[a][j] for j in rng.integers(len(datasets[a]), size=config["n_eval"])]
            cross[a] = {b: attack_success_rate(draw, tuned[b], clf, n=config["n_responses"], generator=g)
                        for b in names}
            cross[a]["original"] = attack_success_rate(draw, victim0, clf, n=config["n_responses"], generator=g)
        metrics["cross"] = cross
        metrics["diversity"] = {a: diversity(d) for a, d in datasets.items() if len(d) > 1}
        if {"gfn", "aa"} <= set(names):
            claims.append(cross_attack_claim([cross["aa"]["gfn"]], [cross["gfn"]["aa"]]))
        out.mkdir(parents=True, exist_ok=True)
        for a, d in datasets.items():
            (out / f"prompts_{a}.txt").write_text("\n".join(d))
            mle = mle_smoothing(sft, d, steps=config["mle_steps"], lr=config["mle_lr"], seed=seed) if d else None
            if mle is not None:
                torch.save({k: v.detach().cpu() for k, v in mle.state_dict().items() if "lora" in k or "z_head" in k},
                           out / f"mle_{a}.pt")
    D.barrier()
    result = Result(slug="active_attacks", scale="paper", config=config, metrics=metrics, claims=claims)
    result.runtime_s = time.perf_counter() - t_start
    return result


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True, help="JSON file with a paper-scale config (see CONFIGS['paper'])")
    args = ap.parse_args(argv)
    config = json.loads(Path(args.config).read_text())
    config.setdefault("scale", "paper")
    result = run_paper(config)
    env = D.init_distributed()
    if env.is_main:
        from icml26.results import save_result

        save_result(result, Path(config["out_dir"]).parent)
    D.shutdown()


if __name__ == "__main__":
    main()


__all__ = ["load_models", "main", "run_paper", "train_arm", "validate_paper_config"]
