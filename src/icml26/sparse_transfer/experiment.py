"""sparse_transfer reproduction (spec section 6 with the review notes of section 11).

Main task "Gauss-swap" (d = 3, known ground truth, MPA-rich): per seed, one set of trainings of the MLP
3 -> 64 -> 64 -> 3 with MMD^2 (bandwidths 0.2, 0.5, 1, 2), batch 128 per domain, Adam 2e-3, 1500 steps (review
note 1), lambda_J ramped to 0.05 over the first 30 % of steps:

    dm            DM only                      -> "DM" (raw) and "DM + resolve" (the resolve step on it)
    dm_anchor     DM + anchor (joint)
    sparse_exact  DM + exact l1 + resolve      -> "DM + sparsity, no anchor" (raw) and claim C1 (resolved)
    sparse_fd     DM + fd surrogate + resolve  -> claim C2 (k = 1, S = 2, sigma = 0.01)
    ot            POT EMD on 2000 samples + 10-NN out of sample
gated arms run on seeds seed .. seed + gate_seeds - 1 (0..4, review note 3); the report-only arms (exact l1 +
joint anchor, DIMENSION with K = 2 / K = 8, paired regression with 1 / 100 pairs) on the first report_seeds seeds.
The anchor is drawn by the seed among training pairs with genericity m(y_a) >= 0.5 (review note 2); the
unfiltered-anchor variant is reported without a gate. The official-style 2-D task (uniform_dependent + swap,
NS-GAN + R1, cycle, joint anchor, hinged exact l1 on the decoder vs the lambda_J = 0 ablation) is report-only.

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
from icml26.common.validation import check_bool, check_float, check_int, check_seed, require_keys
from icml26.results import Result
from icml26.sparse_transfer.baselines import OTMap, PairedRegression
from icml26.sparse_transfer.claims import claim_c1, claim_c2, claim_c3, claim_c4, report_claim
from icml26.sparse_transfer.data import anchor_genericity, choose_anchor, gauss_swap, uniform_dependent
from icml26.sparse_transfer.losses import mmd2
from icml26.sparse_transfer.metrics import jacobian_support_f1, translation_error
from icml26.sparse_transfer.scale import PAPER_CONFIG, PAPER_CONFIG_HELP, run_paper, validate_paper_config
from icml26.sparse_transfer.transfer import AnchoredSparseTransfer, oracle_resolved_te

SLUG = "sparse_transfer"

_SMALL: dict[str, Any] = {
    "seed": 0, "gate_seeds": 5, "report_seeds": 3, "d": 3, "c": 0.4, "n_train": 4000, "n_test": 2000,
    "hidden": [64, 64], "batch_size": 128, "steps": 1500, "lr": 2e-3, "lambda_jac": 0.05, "jac_ramp": 0.3,
    "fd_probes": 2, "fd_probe_frac": 0.34, "fd_sigma": 0.01, "anchor_min_genericity": 0.5, "ot_samples": 2000,
    "ot_neighbors": 10, "mmd_eval_n": 2000, "jac_eval_n": 500, "regression_pairs": [1, 100], "report_arms": True,
    "od_run": True, "od_seeds": 2, "od_n_train": 27000, "od_n_test": 3000, "od_steps": 1500, "od_batch_size": 256,
    "od_hidden": 32, "od_lr": 1e-3, "od_lambda_jac": 0.2, "od_hinge": 0.5, "workers": 0,
}

CONFIGS: dict[str, dict[str, Any]] = {
    "smoke": {**_SMALL, "gate_seeds": 1, "report_seeds": 1, "n_train": 300, "n_test": 200, "steps": 20,
              "batch_size": 64, "ot_samples": 200, "mmd_eval_n": 200, "jac_eval_n": 50, "regression_pairs": [1, 20],
              "od_seeds": 1, "od_n_train": 300, "od_n_test": 100, "od_steps": 10, "od_batch_size": 64, "workers": 1},
    "small": dict(_SMALL),
    "paper": dict(PAPER_CONFIG),
}

CONFIG_HELP: dict[str, str] = {
    "seed": "first seed; gated arms use seed .. seed + gate_seeds - 1 (data, anchor, init, batches)",
    "gate_seeds": "seeds of the gated arms (review note 3: 5)", "report_seeds": "seeds of the report-only arms",
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

EXPECTED_RUNTIME_S = {"smoke": 20, "small": 270, "paper": 12 * 3600}

GATED_ARMS = ("dm", "dm_anchor", "sparse_exact", "sparse_fd", "ot")
REPORT_ARMS = ("sparse_joint", "dim2", "dim8")


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
    check_int(config["report_seeds"], "report_seeds", min=1)
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
    hidden = config["hidden"]
    if not isinstance(hidden, list) or not hidden:
        raise ValueError(f"hidden must be a non-empty list of widths, got {hidden!r}")
    for i, h in enumerate(hidden):
        check_int(h, f"hidden[{i}]", min=1)
    for key in ("lr", "fd_sigma", "od_lr"):
        check_float(config[key], key, min=0.0, min_open=True)
    for key in ("lambda_jac", "anchor_min_genericity", "od_lambda_jac", "od_hinge"):
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
                  sigma=float(cfg["fd_sigma"]), seed=seed)
    spec = {
        "dm": dict(lambda_jac=0.0, anchor_mode="resolve"),
        "dm_anchor": dict(lambda_jac=0.0, anchor_mode="joint"),
        "sparse_exact": dict(lambda_jac=float(cfg["lambda_jac"]), jac_mode="exact", anchor_mode="resolve"),
        "sparse_fd": dict(lambda_jac=float(cfg["lambda_jac"]), jac_mode="fd", anchor_mode="resolve"),
        "sparse_joint": dict(lambda_jac=float(cfg["lambda_jac"]), jac_mode="exact", anchor_mode="joint"),
        "dim2": dict(lambda_jac=0.0, lambda_anchor=0.0),
        "dim8": dict(lambda_jac=0.0, lambda_anchor=0.0),
    }[arm]
    return AnchoredSparseTransfer(**common, **spec)


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
                                 batch_size=int(cfg["od_batch_size"]), lr=float(cfg["od_lr"]), seed=seed)
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
    gate_seeds = [s0 + i for i in range(int(cfg["gate_seeds"]))]
    rep_seeds = [s0 + i for i in range(int(cfg["report_seeds"]))]
    cost = {"sparse_exact": 4, "sparse_joint": 4, "dim8": 3, "sparse_fd": 2.5, "dim2": 3, "dm": 3, "dm_anchor": 3,
            "ot": 1}
    jobs = [{"arm": a, "seed": s, "cfg": cfg} for s in gate_seeds for a in GATED_ARMS]
    if cfg["report_arms"]:
        jobs += [{"arm": a, "seed": s, "cfg": cfg} for s in rep_seeds for a in REPORT_ARMS]
    jobs.sort(key=lambda j: -cost[j["arm"]])
    workers = int(cfg["workers"]) or None
    od_jobs = [{"arm": a, "seed": s0 + i, "cfg": cfg} for i in range(int(cfg["od_seeds"]))
               for a in ("od_full", "od_ablation")] if cfg["od_run"] else []
    # one pool for everything: the 2-D GAN runs are the longest, so they start first
    all_jobs = [("od", j) for j in od_jobs] + [("gs", j) for j in jobs]
    outs = run_parallel(_dispatch, [{"kind": k, "job": j} for k, j in all_jobs], workers=workers,
                        desc="sparse_transfer trainings")
    od_runs = [o for (k, _), o in zip(all_jobs, outs) if k == "od"]
    runs = {(o["arm"], o["seed"]): o for (k, _), o in zip(all_jobs, outs) if k == "gs"}

    def per(arm: str, key: str, seeds: list[int]) -> list[float]:
        return [float(runs[(arm, s)][key]) for s in seeds]

    # ground truth and floors
    l1_true, floors = per("ot", "l1_true", gate_seeds), per("ot", "mmd_floor", gate_seeds)
    l1_true_m = float(np.mean(l1_true))

    claims = [
        claim_c1(per("sparse_exact", "te", gate_seeds), per("sparse_exact", "te_oracle", gate_seeds),
                 per("sparse_exact", "anchor_genericity", gate_seeds)),
        claim_c2(per("sparse_fd", "te", gate_seeds), per("sparse_fd", "te_oracle", gate_seeds)),
        claim_c3({"dm": per("dm", "te_raw", gate_seeds), "dm_anchor_joint": per("dm_anchor", "te", gate_seeds),
                  "dm_resolve": per("dm", "te", gate_seeds),
                  "dm_sparsity_no_anchor": per("sparse_exact", "te_raw", gate_seeds),
                  "ot": per("ot", "te", gate_seeds)}, ours=per("sparse_exact", "te", gate_seeds)),
        claim_c4(per("sparse_exact", "l1", gate_seeds), per("dm", "l1", gate_seeds), l1_true_m,
                 per("sparse_exact", "mmd", gate_seeds), per("dm", "mmd", gate_seeds), floors),
    ]
    # report-only claims
    unf = per("sparse_exact", "te_unfiltered_anchor", gate_seeds)
    claims.append(report_claim(
        "R1", "With an arbitrary (unfiltered) anchor the resolve step is a lottery (review note 2)",
        "median TE of ours (exact) resolved with an anchor drawn among all training pairs", float(np.median(unf)),
        "report only (C1's threshold 0.20 shown for reference)", float(np.median(unf)) <= 0.20,
        f"per seed {['%.3f' % v for v in unf]}; genericity of those anchors "
        f"{['%.2f' % v for v in per('sparse_exact', 'unfiltered_anchor_genericity', gate_seeds)]}",
        "not in the paper (our resolve step)", unf))
    reg: dict[str, list[float]] = {}
    for n in cfg["regression_pairs"]:
        vals = []
        for s in rep_seeds:
            task = _task(s, cfg)
            pr = PairedRegression(int(n)).fit(task.X_train, task.Y_train_paired)
            vals.append(translation_error(pr.transform(task.X_test), task.Y_test))
        reg[str(n)] = vals
    reg_txt = "; ".join(f"{n} pairs: {['%.3f' % v for v in v_]}" for n, v_ in reg.items())
    if cfg["report_arms"]:
        joint = per("sparse_joint", "te", rep_seeds)
        d2, d8 = per("dim2", "te", rep_seeds), per("dim8", "te", rep_seeds)
        claims.append(report_claim(
            "R2", "The joint anchor (anchor MSE in the loss from step 0, as in the paper) with exact sparsity",
            "median TE (exact l1 + joint anchor)", float(np.median(joint)), "report only (spec: prototype 1.43, 0.97)",
            float(np.median(joint)) <= 0.20,
            f"per seed {['%.3f' % v for v in joint]}; oracle-resolved "
            f"{['%.3f' % v for v in per('sparse_joint', 'te_oracle', rep_seeds)]}: a single anchor inside the loss is "
            "easily absorbed by a local bump of the network (spec section 9)", PAPER_JOINT, joint))
        claims.append(report_claim(
            "R3", "DIMENSION (conditional DM) needs labels on every sample; richer labels (K = 8) remove more MPAs",
            "median TE, DIMENSION K = 2 and K = 8", {"K2": float(np.median(d2)), "K8": float(np.median(d8))},
            "report only (K = 8 below K = 2 expected)", float(np.median(d8)) < float(np.median(d2)),
            f"K = 2 per seed {['%.3f' % v for v in d2]}; K = 8 per seed {['%.3f' % v for v in d8]}; paired regression "
            f"{reg_txt}", "DIMENSION (ICLR 2024): diverse conditionals identify the map", d8))
    claims.append(report_claim(
        "R4", "Paired regression: how much supervision one anchor replaces", "median TE per pair count",
        {n: float(np.median(v)) for n, v in reg.items()}, "report only (more pairs, lower TE)",
        bool(np.median(reg[str(cfg["regression_pairs"][-1])]) < np.median(reg[str(cfg["regression_pairs"][0])])),
        reg_txt,
        "not reported in the abstract", reg[str(cfg["regression_pairs"][-1])]))
    if od_runs:
        full = [r["te"] for r in od_runs if r["arm"] == "od_full"]
        abl = [r["te"] for r in od_runs if r["arm"] == "od_ablation"]
        claims.append(report_claim(
            "R5", "Official-style 2-D task (uniform_dependent + swap, NS-GAN + R1): Jacobian regularisation helps",
            "median TE, full (lambda_J > 0) vs ablation (lambda_J = 0)",
            {"full": float(np.median(full)), "ablation": float(np.median(abl))}, "report only (full < ablation)",
            float(np.median(full)) < float(np.median(abl)),
            f"full per seed {['%.3f' % v for v in full]}; ablation per seed {['%.3f' % v for v in abl]}; "
            f"{cfg['od_steps']} steps at batch {cfg['od_batch_size']} (official: 7000 at 1024). This distribution has "
            "few MPAs, so failures here are optimisation, not identifiability (spec section 6)", PAPER_FIGURE_2D,
            full))

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
    result.notes = (f"{len(jobs)} Gauss-swap trainings/fits (gated arms on seeds {gate_seeds}, report arms on "
                    f"{rep_seeds}) and {len(od_jobs)} official-style 2-D GAN runs as parallel single-thread processes.")
    return result


PAPER_JOINT = "paper's own anchor usage (joint); qualitative: one anchor + regularisation recovers f*"
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
