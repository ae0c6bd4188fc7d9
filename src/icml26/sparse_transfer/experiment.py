"""sparse_transfer reproduction (spec section 6 with the review notes of section 11).

Main task "Gauss-swap" (d = 3, known ground truth, MPA-rich): per seed, trainings of the MLP 3 -> 64 -> 64 -> 3
with MMD^2 (bandwidths 0.2, 0.5, 1, 2), batch 128 per domain, Adam 2e-3, 1500 steps (review note 1), lambda_J
ramped to 0.05 over the first 30 % of steps:

    dm            DM only                      -> "DM" (raw) and "DM + resolve" (C3)        seeds: c3_seeds (10)
    dm_anchor     DM + anchor (joint)          -> C3                                        c3_seeds
    sparse_exact  DM + exact l1 + resolve      -> C1, C4, "no anchor" (raw, C3-sanity)      gate_seeds (5)
    sparse_fd     DM + fd surrogate + resolve  -> C2 (k = 1, S = 2, sigma = 0.01)           gate_seeds
    ot            POT EMD on 2000 samples + 10-NN out of sample (C3-sanity; the truth's l1 and MMD floor)
    sparse_joint  DM + exact l1 + joint anchor -> R2, the paper's formulation (gate)        joint_seeds (5)
    sparse_hinge  DM + hinged exact l1 + resolve -> R6 (report)                             hinge_seeds (3)
    dim2, dim8    DIMENSION with K = 2 / K = 8 -> R3 (report)                               report_seeds (2)

The anchor is drawn by the seed among training pairs with genericity m(y_a) >= 0.5 (review note 2); the
unfiltered-anchor variant is R1 (report). Verdicts come from `icml26.common.stats` (claims.py). The `medium` scale
decides what small cannot: every gate on 10 seeds (C3's DM arms on 20), R2 at 3x the steps and also with the
official-size 1x32 network (R2b), and the official-style 2-D task (uniform_dependent + swap, NS-GAN + R1, cycle,
joint anchor, hinged exact l1 on the decoder vs the lambda_J = 0 ablation: R5, report) at the official 7000 steps
of batch 1024 (small skips it: at 1500 steps both arms are optimisation failures, spec section 6).

Trainings run as parallel single-thread processes (`run_parallel`). `--scale paper` runs the image-to-image path of
`icml26.sparse_transfer.scale` (MNIST -> rotated MNIST, convolutional translators, GAN, DDP under torchrun).
"""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np
import torch

from icml26.common import run_parallel
from icml26.common.validation import check_bool, check_choice, check_float, check_int, check_seed, require_keys
from icml26.results import Result
from icml26.sparse_transfer.baselines import OTMap, PairedRegression
from icml26.common import stats
from icml26.sparse_transfer.claims import (
    PAPER_JOINT,
    claim_c1,
    claim_c2,
    claim_c3,
    claim_c3_sanity,
    claim_c4,
    claim_r2,
    report_claim,
)
from icml26.sparse_transfer.data import anchor_genericity, choose_anchor, gauss_swap, uniform_dependent
from icml26.sparse_transfer.losses import mmd2
from icml26.sparse_transfer.metrics import jacobian_support_f1, translation_error
from icml26.sparse_transfer.scale import PAPER_CONFIG, PAPER_CONFIG_HELP, run_paper, validate_paper_config
from icml26.sparse_transfer.transfer import AnchoredSparseTransfer, oracle_resolved_te

SLUG = "sparse_transfer"

_SMALL: dict[str, Any] = {
    "seed": 0, "gate_seeds": 5, "c3_seeds": 10, "joint_seeds": 5, "report_seeds": 2, "d": 3, "c": 0.4,
    "n_train": 4000, "n_test": 2000, "hidden": [64, 64], "batch_size": 128, "steps": 1500, "lr": 2e-3,
    "lambda_jac": 0.05, "jac_ramp": 0.3, "fd_probes": 2, "fd_probe_frac": 0.34, "fd_sigma": 0.01,
    "anchor_min_genericity": 0.5, "joint_steps": 1500, "joint_hidden": [64, 64], "joint_official_net": False,
    "hinge": 1.0, "hinge_seeds": 3, "ot_samples": 2000, "ot_neighbors": 10, "mmd_eval_n": 2000, "jac_eval_n": 500,
    "regression_pairs": [1, 100], "report_arms": True, "od_run": False, "od_seeds": 2, "od_n_train": 27000,
    "od_n_test": 3000, "od_steps": 1500, "od_batch_size": 256, "od_hidden": 32, "od_lr": 1e-3,
    "od_lambda_jac": 0.2, "od_hinge": 0.5, "device": "cpu", "workers": 0,
}

# the toy sizes of the tests (every code path, seconds)
TOY: dict[str, Any] = {
    "gate_seeds": 1, "c3_seeds": 2, "joint_seeds": 1, "report_seeds": 1, "hinge_seeds": 1, "n_train": 300,
    "n_test": 200, "steps": 20, "joint_steps": 20, "batch_size": 64, "ot_samples": 200, "mmd_eval_n": 200,
    "jac_eval_n": 50, "regression_pairs": [1, 20], "od_seeds": 1, "od_n_train": 300, "od_n_test": 100,
    "od_steps": 10, "od_batch_size": 64, "workers": 1,
}

CONFIGS: dict[str, dict[str, Any]] = {
    "smoke": {**_SMALL, **TOY},
    "small": dict(_SMALL),
    # what small cannot decide: every gate on 10 seeds (C3's DM arms on 20), and the paper's joint-anchor form (R2)
    # at 3x the steps, also with the official-size 1x32 network (R2b); the official-style 2-D GAN task (R5) at the
    # official 7000 steps of batch 1024. About 17 min on 2 CPU cores; on CUDA when present.
    "medium": {**_SMALL, "gate_seeds": 10, "c3_seeds": 20, "joint_seeds": 10, "hinge_seeds": 10, "report_seeds": 3,
               "joint_steps": 4500, "joint_official_net": True, "od_run": True, "od_seeds": 3, "od_steps": 7000,
               "od_batch_size": 1024, "device": "auto"},
    "paper": dict(PAPER_CONFIG),
}

CONFIG_HELP: dict[str, str] = {
    "seed": "first seed; gated arms use seed .. seed + gate_seeds - 1 (data, anchor, init, batches)",
    "gate_seeds": "seeds of the gated arms C1, C2, C4 and the sanity arms (review note 3: 5)",
    "c3_seeds": "seeds of C3's DM and DM + joint anchor arms (>= gate_seeds; the first gate_seeds also feed C4)",
    "joint_seeds": "seeds of R2 (exact l1 + the paper's joint anchor)",
    "joint_steps": "Adam steps of the R2 trainings", "joint_hidden": "hidden widths of the R2 translator",
    "joint_official_net": "also run R2 with the official-size 1x32 network (R2b, report)",
    "hinge": "hinge h of the R6 arm: exact penalty relu(||J||_1 / d - h) per sample",
    "hinge_seeds": "seeds of the R6 (hinged penalty) arm",
    "report_seeds": "seeds of the report-only DIMENSION arms and the paired regression",
    "device": "'cpu', 'cuda' or 'auto' (CUDA when available) for the Gauss-swap trainings",
    "d": "dimension of the Gauss-swap task (2..4; resolve enumerates 2^d d! signed permutations)",
    "c": "source nonlinearity x_i = y_{i+1} + c cos(y_{i+1}), |c| < 1",
    "n_train": "unpaired training samples per domain", "n_test": "held-out paired test samples",
    "hidden": "hidden widths of the translator MLP", "batch_size": "samples per domain per step",
    "steps": "Adam steps per training", "lr": "Adam learning rate", "lambda_jac": "final Jacobian-penalty weight",
    "jac_ramp": "fraction of steps over which lambda_J ramps up from 0", "fd_probes": "fd surrogate probes S",
    "fd_probe_frac": "fd probe fraction rho (k = max(1, round(rho d)))", "fd_sigma": "fd step std sigma",
    "anchor_min_genericity": "anchors are drawn among pairs with m(y_a) >= this (0 = any pair)",
    "ot_samples": "samples in the OT coupling", "ot_neighbors": "k of the OT map's k-NN extension",
    "mmd_eval_n": "samples of the final MMD^2 (claim C4)", "jac_eval_n": "test points for the Jacobian metrics",
    "regression_pairs": "pair counts of the paired-regression oracle", "report_arms": "run the report-only arms",
    "od_run": "run the official-style 2-D task (report only)", "od_seeds": "seeds of the 2-D task",
    "od_n_train": "2-D task training samples", "od_n_test": "2-D task test pairs", "od_steps": "2-D task GAN steps",
    "od_batch_size": "2-D task batch size", "od_hidden": "2-D encoder/decoder hidden width", "od_lr": "2-D Adam lr",
    "od_lambda_jac": "2-D Jacobian weight on the normalised l1 (0.2 = the official 0.1 on the raw l1 at d = 2)",
    "od_hinge": "2-D hinge on the normalised l1 (0.5 = the official 1 on the raw l1 at d = 2)",
    "workers": "parallel single-thread processes (0 = one per CPU)",
}
CONFIG_HELP.update({k: v for k, v in PAPER_CONFIG_HELP.items() if k not in CONFIG_HELP})

EXPECTED_RUNTIME_S = {"smoke": 20, "small": 240, "medium": 1050, "paper": 12 * 3600}

ARMS = ("dm", "dm_anchor", "sparse_exact", "sparse_fd", "ot", "sparse_joint", "sparse_joint_1x32", "sparse_hinge",
        "dim2", "dim8")


def validate_config(config: dict[str, Any]) -> None:
    """Raise ValueError/TypeError naming the first bad key of `config` (the CLI calls this before compute)."""
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict, got {type(config).__name__}")
    if config.get("scale", "small") == "paper":
        validate_paper_config(config)
        return
    require_keys(config, _SMALL)
    check_seed(config["seed"], "seed")
    check_int(config["gate_seeds"], "gate_seeds", min=1)
    check_int(config["c3_seeds"], "c3_seeds", min=int(config["gate_seeds"]))
    for key in ("report_seeds", "joint_seeds", "hinge_seeds", "joint_steps"):
        check_int(config[key], key, min=1)
    check_choice(config["device"], "device", ("cpu", "cuda", "auto"))
    check_int(config["d"], "d", min=2, max=4)
    check_float(config["c"], "c", min=-1.0, max=1.0, min_open=True, max_open=True)
    for key in ("n_train", "n_test", "batch_size", "steps", "fd_probes", "ot_neighbors", "od_seeds", "od_steps",
                "od_hidden"):
        check_int(config[key], key, min=1)
    check_int(config["n_train"], "n_train", min=10)
    check_int(config["n_test"], "n_test", min=2)
    check_int(config["batch_size"], "batch_size", min=2)
    check_int(config["ot_samples"], "ot_samples", min=2)
    check_int(config["mmd_eval_n"], "mmd_eval_n", min=2, max=int(config["n_test"]))
    check_int(config["jac_eval_n"], "jac_eval_n", min=1, max=int(config["n_test"]))
    check_int(config["od_n_train"], "od_n_train", min=10)
    check_int(config["od_n_test"], "od_n_test", min=2)
    check_int(config["od_batch_size"], "od_batch_size", min=2)
    check_int(config["workers"], "workers", min=0)
    for key in ("hidden", "joint_hidden"):
        hidden = config[key]
        if not isinstance(hidden, list) or not hidden:
            raise ValueError(f"{key} must be a non-empty list of widths, got {hidden!r}")
        for i, h in enumerate(hidden):
            check_int(h, f"{key}[{i}]", min=1)
    for key in ("lr", "fd_sigma", "od_lr"):
        check_float(config[key], key, min=0.0, min_open=True)
    for key in ("lambda_jac", "anchor_min_genericity", "od_lambda_jac", "od_hinge", "hinge"):
        check_float(config[key], key, min=0.0)
    check_float(config["jac_ramp"], "jac_ramp", min=0.0, max=1.0)
    check_float(config["fd_probe_frac"], "fd_probe_frac", min=0.0, max=1.0, min_open=True)
    pairs = config["regression_pairs"]
    if not isinstance(pairs, list) or not pairs:
        raise ValueError(f"regression_pairs must be a non-empty list of pair counts, got {pairs!r}")
    for i, p in enumerate(pairs):
        check_int(p, f"regression_pairs[{i}]", min=1, max=int(config["n_train"]))
    check_bool(config["report_arms"], "report_arms")
    check_bool(config["od_run"], "od_run")
    check_bool(config["joint_official_net"], "joint_official_net")


# ------------------------------------------------------------------------------------------- one training
def _task(seed: int, cfg: dict):
    return gauss_swap(int(cfg["n_train"]), int(cfg["n_test"]), int(cfg["d"]), float(cfg["c"]), seed=seed)


def _anchor(task, seed: int, min_gen: float) -> tuple[np.ndarray, np.ndarray]:
    i = choose_anchor(task.Y_train_paired, seed, min_gen)
    return task.X_train[i], task.Y_train_paired[i]


def _eval_target(seed: int, cfg: dict) -> np.ndarray:
    """One independent target sample Y' per seed, shared by all arms (review note 6)."""
    return np.random.default_rng(10_000 + seed).standard_normal((int(cfg["mmd_eval_n"]), int(cfg["d"])))


def _mmd(a: np.ndarray, b: np.ndarray) -> float:
    """The pinned claim-C4 kernel: biased MMD^2, sum of the 4 RBF kernels (float32)."""
    return float(mmd2(torch.as_tensor(a, dtype=torch.float32), torch.as_tensor(b, dtype=torch.float32)))


def _estimator(arm: str, seed: int, cfg: dict) -> AnchoredSparseTransfer:
    common = dict(dm="mmd", lambda_cyc=0.0, hidden=tuple(cfg["hidden"]), steps=int(cfg["steps"]),
                  batch_size=int(cfg["batch_size"]), lr=float(cfg["lr"]), jac_ramp=float(cfg["jac_ramp"]),
                  n_probes=int(cfg["fd_probes"]), probe_frac=float(cfg["fd_probe_frac"]),
                  sigma=float(cfg["fd_sigma"]), seed=seed, device=str(cfg["device"]))
    joint = dict(lambda_jac=float(cfg["lambda_jac"]), jac_mode="exact", anchor_mode="joint",
                 steps=int(cfg["joint_steps"]))
    spec = {
        "dm": dict(lambda_jac=0.0, anchor_mode="resolve"),
        "dm_anchor": dict(lambda_jac=0.0, anchor_mode="joint"),
        "sparse_exact": dict(lambda_jac=float(cfg["lambda_jac"]), jac_mode="exact", anchor_mode="resolve"),
        "sparse_fd": dict(lambda_jac=float(cfg["lambda_jac"]), jac_mode="fd", anchor_mode="resolve"),
        "sparse_joint": {**joint, "hidden": tuple(cfg["joint_hidden"])},
        "sparse_joint_1x32": {**joint, "hidden": (32,)},  # the official synthetic network size
        "sparse_hinge": dict(lambda_jac=float(cfg["lambda_jac"]), jac_mode="exact", jac_hinge=float(cfg["hinge"]),
                             anchor_mode="resolve"),
        "dim2": dict(lambda_jac=0.0, lambda_anchor=0.0),
        "dim8": dict(lambda_jac=0.0, lambda_anchor=0.0),
    }[arm]
    return AnchoredSparseTransfer(**{**common, **spec})


def train_arm(arm: str, seed: int, cfg: dict) -> dict[str, Any]:
    """Train/evaluate one arm on one seed of the Gauss-swap task (module level, so run_parallel can spawn it)."""
    t0 = time.perf_counter()
    task = _task(seed, cfg)
    xa, ya = _anchor(task, seed, float(cfg["anchor_min_genericity"]))
    out: dict[str, Any] = {"arm": arm, "seed": seed, "anchor_genericity": anchor_genericity(ya)}
    n_pred = min(300, task.X_test.shape[0])
    if arm == "ot":
        ot = OTMap("emd", n_neighbors=int(cfg["ot_neighbors"]), max_samples=int(cfg["ot_samples"]), seed=seed)
        pred = ot.fit(task.X_train, task.Y_train).transform(task.X_test)
        Jt = task.f_star_jacobian(task.X_test[: int(cfg["jac_eval_n"])])
        out.update(te=translation_error(pred, task.Y_test), te_oracle=oracle_resolved_te(pred, task.Y_test),
                   pred=pred[:n_pred].tolist(), l1_true=float(np.abs(Jt).sum((1, 2)).mean() / Jt.shape[1]),
                   mmd_floor=_mmd(task.Y_test[: int(cfg["mmd_eval_n"])], _eval_target(seed, cfg)),
                   time_s=time.perf_counter() - t0)
        return out
    est = _estimator(arm, seed, cfg)
    groups = None
    if arm in ("dim2", "dim8"):
        def lab(Y: np.ndarray) -> np.ndarray:
            return (Y[:, 0] > 0).astype(int) if arm == "dim2" else ((Y > 0) * (2 ** np.arange(Y.shape[1]))).sum(1)
        groups = (lab(task.Y_train_paired), lab(task.Y_train))  # labels known for every sample (DIMENSION)
    anchors = None if arm in ("dim2", "dim8") else (xa, ya)
    est.fit(task.X_train, task.Y_train, anchors=anchors, conditional_groups=groups)
    raw = est.transform(task.X_test, resolved=False)
    pred = est.transform(task.X_test)
    xj = task.X_test[: int(cfg["jac_eval_n"])]
    J = est.jacobian(xj)
    d = task.Y_test.shape[1]
    out.update(te_raw=translation_error(raw, task.Y_test), te=translation_error(pred, task.Y_test),
               te_oracle=oracle_resolved_te(raw, task.Y_test), l1=float(np.abs(J).sum((1, 2)).mean() / d),
               J_mean=np.abs(J).mean(0).tolist(), f1=jacobian_support_f1(J, task.support),
               mmd=_mmd(est.transform(task.X_test[: int(cfg["mmd_eval_n"])]), _eval_target(seed, cfg)),
               pred=pred[:n_pred].tolist(), raw=raw[:n_pred].tolist(), final_dm=float(np.mean(est.history_["dm"][-50:])))
    if est.resolver_ is not None:
        out["resolved_to"] = est.resolver_.chosen
        xu, yu = _anchor(task, seed, 0.0)  # the unfiltered-anchor variant (review note 2, report only)
        res = copy.deepcopy(est.resolver_).fit(est.transform(xu[None], resolved=False), yu[None])
        out["te_unfiltered_anchor"] = translation_error(res.transform(raw), task.Y_test)
        out["unfiltered_anchor_genericity"] = anchor_genericity(yu)
    out["time_s"] = time.perf_counter() - t0
    return out


def train_official_2d(arm: str, seed: int, cfg: dict) -> dict[str, Any]:
    """The official-style 2-D run (report only): NS-GAN + R1, cycle, joint anchor, hinged exact l1 on the decoder
    ("od_full") or the lambda_J = 0 ablation ("od_ablation"); encoder/decoder MLP 2 -> 32 -> 2."""
    t0 = time.perf_counter()
    task = uniform_dependent(int(cfg["od_n_train"]), int(cfg["od_n_test"]), seed=seed)
    i = int(np.random.default_rng(seed + 7919).integers(task.X_train.shape[0]))
    lam = float(cfg["od_lambda_jac"]) if arm == "od_full" else 0.0
    est = AnchoredSparseTransfer(dm="gan", lambda_cyc=1.0, lambda_anchor=1.0, anchor_mode="joint", lambda_jac=lam,
                                 jac_mode="exact", jac_on="inverse", jac_ramp=0.0, jac_hinge=float(cfg["od_hinge"]),
                                 hidden=(int(cfg["od_hidden"]),), steps=int(cfg["od_steps"]),
                                 batch_size=int(cfg["od_batch_size"]), lr=float(cfg["od_lr"]), seed=seed,
                                 device=str(cfg["device"]))
    est.fit(task.X_train, task.Y_train, anchors=(task.X_train[i], task.Y_train_paired[i]))
    pred = est.transform(task.X_test)
    return {"arm": arm, "seed": seed, "te": translation_error(pred, task.Y_test), "time_s": time.perf_counter() - t0}


# ------------------------------------------------------------------------------------------- figures
def _fig_maps(runs: dict, task, seed: int):
    from icml26.common.plotting import new_figure

    names = [("dm", "raw", "DM"), ("dm", "pred", "DM + resolve"), ("dm_anchor", "pred", "DM + anchor (joint)"),
             ("sparse_exact", "raw", "DM + sparsity, no anchor"), ("sparse_exact", "pred", "ours (exact)"),
             ("sparse_fd", "pred", "ours (fd)"), ("ot", "pred", "OT map")]
    names = [n for n in names if (n[0], seed) in runs]
    fig, axes = new_figure(len(names), 1, width=2.6, height=2.8)
    axes = np.atleast_1d(axes).ravel()
    for ax, (arm, key, title) in zip(axes, names):
        p = np.asarray(runs[(arm, seed)][key])
        t = task.Y_test[: p.shape[0]]
        for j in range(p.shape[1]):
            ax.scatter(t[:, j], p[:, j], s=3, alpha=0.5, label=f"y{j + 1}")
        ax.plot([-3, 3], [-3, 3], "k--", lw=0.8)
        ax.set_title(f"{title}\nTE {translation_error(p, t):.2f}", fontsize=8)
        ax.set_xlabel("true y_j")
    axes[0].set_ylabel("learned f(x)_j")
    axes[0].legend(fontsize=6, markerscale=3)
    return fig


def _fig_jac(runs: dict, task, seed: int):
    from icml26.common.plotting import new_figure

    Jt = np.abs(task.f_star_jacobian(task.X_test[:500])).mean(0)
    mats = [("truth f*", Jt)]
    for arm, title in (("dm", "DM"), ("sparse_exact", "ours (exact)"), ("sparse_fd", "ours (fd)")):
        if (arm, seed) in runs:
            mats.append((title, np.asarray(runs[(arm, seed)]["J_mean"])))
    fig, axes = new_figure(len(mats), 1, width=2.6, height=2.6)
    vmax = max(m.max() for _, m in mats)
    for ax, (title, m) in zip(np.atleast_1d(axes).ravel(), mats):
        ax.grid(False)
        ax.imshow(m, vmin=0, vmax=vmax, cmap="viridis")
        for (i, j), v in np.ndenumerate(m):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", color="w", fontsize=7)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("input x_j")
        ax.set_ylabel("output y_i")
    return fig


# ------------------------------------------------------------------------------------------- run
def run(config: dict) -> Result:
    """Run the reproduction for `config` (one of CONFIGS, plus "scale"); see the module docstring."""
    validate_config(config)
    scale = config.get("scale", "small")
    if scale == "paper":
        return run_paper(config)
    t0 = time.perf_counter()
    cfg = dict(config)
    s0 = int(cfg["seed"])
    seeds = lambda key: [s0 + i for i in range(int(cfg[key]))]  # noqa: E731
    gate_seeds, c3_seeds, joint_seeds = seeds("gate_seeds"), seeds("c3_seeds"), seeds("joint_seeds")
    rep_seeds, hinge_seeds = seeds("report_seeds"), seeds("hinge_seeds")
    plan = {"dm": c3_seeds, "dm_anchor": c3_seeds, "sparse_exact": gate_seeds, "sparse_fd": gate_seeds,
            "ot": gate_seeds, "sparse_joint": joint_seeds}
    if cfg["joint_official_net"]:
        plan["sparse_joint_1x32"] = joint_seeds
    if cfg["report_arms"]:
        plan.update(sparse_hinge=hinge_seeds, dim2=rep_seeds, dim8=rep_seeds)
    cost = {"sparse_joint": 4 * int(cfg["joint_steps"]) / int(cfg["steps"]), "sparse_exact": 4, "sparse_hinge": 4,
            "sparse_joint_1x32": 3 * int(cfg["joint_steps"]) / int(cfg["steps"]), "dim8": 3, "sparse_fd": 2.5,
            "dim2": 3, "dm": 3, "dm_anchor": 3, "ot": 1}
    jobs = [{"arm": a, "seed": s, "cfg": cfg} for a, ss in plan.items() for s in ss]
    jobs.sort(key=lambda j: -cost[j["arm"]])  # longest first: the pool ends together
    workers = int(cfg["workers"]) or None
    od_jobs = [{"arm": a, "seed": s0 + i, "cfg": cfg} for i in range(int(cfg["od_seeds"]))
               for a in ("od_full", "od_ablation")] if cfg["od_run"] else []
    # one pool for everything: the 2-D GAN runs are the longest, so they start first
    all_jobs = [("od", j) for j in od_jobs] + [("gs", j) for j in jobs]
    outs = run_parallel(_dispatch, [{"kind": k, "job": j} for k, j in all_jobs], workers=workers,
                        desc="sparse_transfer trainings")
    od_runs = [o for (k, _), o in zip(all_jobs, outs) if k == "od"]
    runs = {(o["arm"], o["seed"]): o for (k, _), o in zip(all_jobs, outs) if k == "gs"}

    def per(arm: str, key: str, ss: list[int]) -> list[float]:
        return [float(runs[(arm, s)][key]) for s in ss]

    def secs(*arms: str) -> float:
        """CPU seconds of one seed of these arms (the hints' cost per extra seed, one process)."""
        return float(sum(np.mean([r["time_s"] for r in runs.values() if r["arm"] == a]) for a in arms))

    # ground truth and floors
    l1_true, floors = per("ot", "l1_true", gate_seeds), per("ot", "mmd_floor", gate_seeds)
    claims = [
        claim_c1(per("sparse_exact", "te", gate_seeds), per("sparse_exact", "te_oracle", gate_seeds),
                 per("sparse_exact", "anchor_genericity", gate_seeds), cost_per_seed_s=secs("sparse_exact")),
        claim_r2(per("sparse_joint", "te", joint_seeds), per("sparse_joint", "te_oracle", joint_seeds),
                 steps=int(cfg["joint_steps"]), hidden=cfg["joint_hidden"], cost_per_seed_s=secs("sparse_joint")),
        claim_c2(per("sparse_fd", "te", gate_seeds), per("sparse_fd", "te_oracle", gate_seeds),
                 cost_per_seed_s=secs("sparse_fd")),
        claim_c3({"dm": per("dm", "te_raw", c3_seeds), "dm_anchor_joint": per("dm_anchor", "te", c3_seeds),
                  "dm_resolve": per("dm", "te", c3_seeds)}, cost_per_seed_s=secs("dm", "dm_anchor")),
        claim_c3_sanity({"dm_sparsity_no_anchor": per("sparse_exact", "te_raw", gate_seeds),
                         "ot": per("ot", "te", gate_seeds)}),
        claim_c4(per("sparse_exact", "l1", gate_seeds), per("dm", "l1", gate_seeds), l1_true,
                 per("sparse_exact", "mmd", gate_seeds), per("dm", "mmd", gate_seeds), floors,
                 cost_per_seed_s=secs("sparse_exact", "dm", "ot")),
    ]
    # report-only claims (numbers without a threshold)
    unf = per("sparse_exact", "te_unfiltered_anchor", gate_seeds)
    claims.append(report_claim(
        "R1", "With an arbitrary (unfiltered) anchor the resolve step is a lottery (review note 2)",
        "median TE of ours (exact) resolved with an anchor drawn among all training pairs",
        {"median_te": float(np.median(unf)), "per_seed_te": unf}, float(np.median(unf)),
        f"per seed {_fmt(unf)} (C1's threshold 0.20 for reference); genericity of those anchors "
        f"{_fmt(per('sparse_exact', 'unfiltered_anchor_genericity', gate_seeds))}",
        "not in the paper (our resolve step)", unf))
    if cfg["joint_official_net"]:
        j1 = per("sparse_joint_1x32", "te", joint_seeds)
        claims.append(report_claim(
            "R2b", "The paper's joint anchor with the official-size 1x32 network", "median TE (exact l1 + joint anchor, "
            "MLP 3-32-3)", {"median_te": float(np.median(j1)), "per_seed_te": j1}, float(np.median(j1)),
            f"per seed {_fmt(j1)}; oracle-resolved {_fmt(per('sparse_joint_1x32', 'te_oracle', joint_seeds))}; "
            f"{cfg['joint_steps']} steps (a smaller network leaves less room for a local bump at the anchor, spec "
            "section 9)", PAPER_JOINT, j1))
    reg: dict[str, list[float]] = {}
    for n in cfg["regression_pairs"]:
        vals = []
        for s in rep_seeds:
            task = _task(s, cfg)
            pr = PairedRegression(int(n)).fit(task.X_train, task.Y_train_paired)
            vals.append(translation_error(pr.transform(task.X_test), task.Y_test))
        reg[str(n)] = vals
    reg_txt = "; ".join(f"{n} pairs: {_fmt(v_)}" for n, v_ in reg.items())
    if cfg["report_arms"]:
        d2, d8 = per("dim2", "te", rep_seeds), per("dim8", "te", rep_seeds)
        claims.append(report_claim(
            "R3", "DIMENSION (conditional DM) needs labels on every sample; richer labels (K = 8) remove more MPAs",
            "median TE, DIMENSION K = 8 (K = 2 alongside)", {"K2": float(np.median(d2)), "K8": float(np.median(d8))},
            float(np.median(d8)), f"K = 2 per seed {_fmt(d2)}; K = 8 per seed {_fmt(d8)} (K = 8 below K = 2 expected)",
            "DIMENSION (ICLR 2024): diverse conditionals identify the map", d8))
        claims.append(_hinge_claim(runs, hinge_seeds, cfg))
    last = str(cfg["regression_pairs"][-1])
    claims.append(report_claim(
        "R4", "Paired regression: how much supervision one anchor replaces", f"median TE with {last} pairs",
        {n: float(np.median(v)) for n, v in reg.items()}, float(np.median(reg[last])), reg_txt,
        "not reported in the abstract", reg[last]))
    if od_runs:
        full = [r["te"] for r in od_runs if r["arm"] == "od_full"]
        abl = [r["te"] for r in od_runs if r["arm"] == "od_ablation"]
        gap = [a - b for a, b in zip(full, abl)]
        iv = stats.paired_t_interval(full, abl) if len(gap) >= 2 else None
        claims.append(report_claim(
            "R5", "Official-style 2-D task (uniform_dependent + swap, NS-GAN + R1): Jacobian regularisation helps",
            "mean paired TE gap full (lambda_J > 0) - ablation (lambda_J = 0); negative = the penalty helps",
            {"full": float(np.median(full)), "ablation": float(np.median(abl))}, float(np.mean(gap)),
            f"full per seed {_fmt(full)}; ablation per seed {_fmt(abl)}; {cfg['od_steps']} steps at batch "
            f"{cfg['od_batch_size']} (official: 7000 at 1024). This distribution has few MPAs, so failures here are "
            "optimisation, not identifiability (spec section 6)", PAPER_FIGURE_2D, full, interval=iv))

    metrics: dict[str, Any] = {
        "runs": [{k: v for k, v in r.items() if k not in ("pred", "raw")} for r in runs.values()],
        "official_2d": od_runs, "l1_true_per_seed": l1_true, "mmd_floor_per_seed": floors,
        "regression_te": reg,
        "median_te": {f"{a}/{key}": float(np.median(per(a, key, gate_seeds))) for a in ("dm", "dm_anchor",
                      "sparse_exact", "sparse_fd") for key in ("te", "te_raw", "te_oracle")},
        "train_time_s": {a: float(np.mean([r["time_s"] for r in runs.values() if r["arm"] == a]))
                         for a in {r["arm"] for r in runs.values()}},
    }
    result = Result(slug=SLUG, scale=scale, config=config, metrics=metrics, claims=claims)
    task0 = _task(gate_seeds[0], cfg)
    result.add_figure("learned_vs_true", _fig_maps(runs, task0, gate_seeds[0]),
                      f"learned vs true map on 300 held-out test pairs, seed {gate_seeds[0]}: each output coordinate "
                      "f(x)_j against the true y_j (on the diagonal = correct correspondence)")
    result.add_figure("jacobian_support", _fig_jac(runs, task0, gate_seeds[0]),
                      f"mean |J_ij| over 500 test points, seed {gate_seeds[0]}: the truth has a permutation support "
                      "(3 of 9); DM spreads it, the sparsity penalty recovers it (up to the signed permutation the "
                      "resolve step fixes)")
    result.runtime_s = time.perf_counter() - t0
    result.notes = (f"{len(jobs)} Gauss-swap trainings/fits ({', '.join(f'{a} x {len(ss)}' for a, ss in plan.items())}"
                    f") and {len(od_jobs)} official-style 2-D GAN runs as parallel single-thread processes.")
    return result


def _fmt(vals) -> str:
    return "[" + ", ".join(f"{float(v):.3f}" for v in vals) + "]"


def _hinge_claim(runs: dict, seeds: list[int], cfg: dict):
    """R6: the hinged exact penalty relu(||J||_1 / d - h) (the official synthetic code's form) next to the plain l1
    on the same seeds: does it stop the shrinkage of the map that costs the plain penalty its marginal match?"""
    te = [float(runs[("sparse_hinge", s)]["te"]) for s in seeds]
    r_h = [runs[("sparse_hinge", s)]["l1"] / runs[("ot", s)]["l1_true"] for s in seeds]
    r_p = [runs[("sparse_exact", s)]["l1"] / runs[("ot", s)]["l1_true"] for s in seeds]
    g_h = [runs[("sparse_hinge", s)]["mmd"] - runs[("dm", s)]["mmd"] for s in seeds]
    g_p = [runs[("sparse_exact", s)]["mmd"] - runs[("dm", s)]["mmd"] for s in seeds]
    iv = stats.t_interval(g_h) if len(g_h) >= 2 else None
    return report_claim(
        "R6", f"The hinged Jacobian penalty (h = {cfg['hinge']}) keeps identifiability without shrinking the map",
        "mean paired final-MMD^2 gap hinged - DM (C4's MMD clause for the hinged arm)",
        {"median_te": float(np.median(te)), "l1_ratio_median": float(np.median(r_h)),
         "mmd_gap_mean": float(np.mean(g_h)), "plain_mmd_gap_mean": float(np.mean(g_p))}, float(np.mean(g_h)),
        f"hinged arm on seeds {seeds}: TE {_fmt(te)}, l1/d ratio to the truth {_fmt(r_h)}, MMD^2 gap to DM "
        f"{_fmt(g_h)}; plain l1 on the same seeds: l1 ratio {_fmt(r_p)}, MMD^2 gap {_fmt(g_p)}. The hinge stops "
        f"penalising a sample once its per-output l1 is below h = {cfg['hinge']} (one unit of slope per output: both "
        "domains have unit-scale coordinates; not fitted to f*'s 1.079). Spec section 2: the official synthetic code "
        "hinges its decoder penalty", "official synthetic code: mean_x relu(||J(x)||_1 - 1), weight 0.1", te,
        interval=iv)


PAPER_FIGURE_2D = "qualitative: with the Jacobian regulariser the GAN + one anchor recovers f*; without it, not"


def _dispatch(kind: str, job: dict) -> dict:
    torch.set_num_threads(1)
    return train_official_2d(**job) if kind == "od" else train_arm(**job)


__all__ = [
    "CONFIGS",
    "CONFIG_HELP",
    "EXPECTED_RUNTIME_S",
    "run",
    "train_arm",
    "train_official_2d",
    "validate_config",
]
