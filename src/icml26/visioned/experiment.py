"""VisionED CPU reproduction (spec §6): ED images + physics-informed pretraining vs scratch / point clouds / ECFP.

Data: the spec's core x substituent library (`data.enumerate_small_molecules`, <= 8 heavy atoms); the small run
takes all of it (N = 332, the spec's 160 left V1 unable to decide: 24 test molecules per seed); ETKDG(seed 0) +
MMFF94 conformers; PySCF RHF/STO-3G densities on a 0.25 A cube (computed once, in parallel, cached per
molecule on disk); labels = HOMO-LUMO gap (eV) from the same SCF. No labelled QM data ships offline, so every
label is computed here. Images: 6 shots x RGB-D x 32 x 32 at iso 0.05, Mulliken-charge ESP. Pretraining: all N
molecules, label-free pretext targets only (mask 0.5; phys / comp / contrastive weights 1 / 0.5 / 0.1), one
pretraining run (seed = config seed) shared by the fine-tunes of every split seed. Fine-tuning and the neural
baselines: random 70/15/15 splits with seeds seed, seed+1, ...; 25% and 100% of the training labels; AdamW until
the validation MAE has not improved for `patience` epochs (at most `finetune_epochs`), best validation epoch
kept. Baselines: the same ViT from scratch, PointNet++-lite on 1024-point ED clouds, ECFP MLP / RF, and the
training-label mean.

Claims (`v1_claim`, `v2_claim`, `v3_claim` compute them from per-molecule errors / timings, so tests can feed
them broken arms): V1 MAE(pretrained) <= 0.90 x MAE(scratch) at 25% labels; V2 MAE(pretrained) <=
MAE(PointNet++-lite) at 100%; V3 featurisation (render 6 shots vs threshold + FPS 1024) >= 2x faster for
images. Each ratio is pooled over seeds and test molecules (mean absolute errors over all (seed, molecule)
pairs) with a paired bootstrap confidence interval that resamples seeds and, within each, test molecules.
[ours] ViT width 64 (spec: 96) to fit the 5-minute CPU budget; see docs/visioned.md.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from icml26.common import stats
from icml26.common.validation import check_bool, check_choice, check_float, check_int, check_seed, require_keys
from icml26.results import Claim, Result

SLUG = "visioned"

__all__ = ["CONFIGS", "CONFIG_HELP", "EXPECTED_RUNTIME_S", "validate_config", "run", "v1_claim", "v2_claims",
           "v3_claim"]

_COMMON: dict[str, Any] = {
    "seed": 0, "n_seeds": 3, "data_seed": 0, "target": "gap_eV",
    "method": "HF", "basis": "sto-3g", "grid_spacing": 0.25, "margin": 4.0, "conformer_seed": 0,
    "n_views": 6, "isovalues": [0.05], "esp": "charges", "fov": 12.0,
    "mask_ratio": 0.5, "w_phys": 1.0, "w_comp": 0.5, "w_con": 0.1, "pretrain_lr": 1e-3, "batch_size": 32,
    "label_fractions": [0.25, 1.0], "patience": 8, "report_arms": False,
    "pc_threshold": 1e-3, "pc_arch": "pointnet++", "workers": 2,
    "n_boot": 2000, "ci": 0.95, "report_ood": False, "cache": "", "device": "cpu", "backend": "cpu",
    "v1_seeds": 3,
}
CONFIGS: dict[str, dict[str, Any]] = {
    "smoke": _COMMON | {
        "n_molecules": 8, "max_heavy_atoms": 3, "n_seeds": 1, "img_size": 16, "patch": 8, "dim": 32, "depth": 1,
        "heads": 2, "pretrain_epochs": 1, "finetune_epochs": 2, "n_points": 128, "label_fractions": [0.5, 1.0],
        "workers": 1, "n_boot": 200, "v1_seeds": 1,
    },
    "small": _COMMON | {
        "n_molecules": 332, "max_heavy_atoms": 8, "img_size": 32, "patch": 8, "dim": 64, "depth": 4, "heads": 4,
        "pretrain_epochs": 30, "finetune_epochs": 40, "n_points": 1024,
    },
    # V1 where small leaves it inconclusive (per-seed ratios 0.70-0.93 at 3 seeds; small's hint: ~39 seeds): the
    # same experiment, with the two V1 arms (pretrained and scratch ViT at 25 % labels) on 50 split seeds; one
    # pretraining as in small. ~21 s of wall per extra seed on 2 cores: ~17 min + the small run; CUDA when present.
    "medium": _COMMON | {
        "n_molecules": 332, "max_heavy_atoms": 8, "img_size": 32, "patch": 8, "dim": 64, "depth": 4, "heads": 4,
        "pretrain_epochs": 30, "finetune_epochs": 40, "n_points": 1024, "v1_seeds": 50, "device": "auto",
    },
    # GPU configuration toward the paper (not run in CI): B3LYP/6-31G** densities, exact ESP, 224 px, ViT-B/16.
    # At this scale use `icml26.visioned.scale` (sharded storage, GPU4PySCF, DDP); `run` keeps the same
    # pipeline on the enumerated library so the code path is exercised end to end on one GPU.
    "paper": _COMMON | {
        "n_molecules": 332, "max_heavy_atoms": 8, "method": "B3LYP", "basis": "6-31g**", "grid_spacing": 0.2,
        "esp": "exact", "img_size": 224, "patch": 16, "dim": 768, "depth": 12, "heads": 12, "mask_ratio": 0.25,
        "pretrain_epochs": 100, "finetune_epochs": 200, "patience": 20, "n_points": 2048, "pretrain_lr": 1.5e-4,
        "report_ood": True, "workers": 8, "device": "cuda", "backend": "gpu",
    },
}

CONFIG_HELP: dict[str, str] = {
    "seed": "pretraining seed and first split seed (split seeds are seed .. seed + n_seeds - 1)",
    "n_seeds": "number of random 70/15/15 splits (each fine-tune and baseline is run once per split)",
    "data_seed": "seed of the stratified molecule sample",
    "target": "downstream label: gap_eV (HOMO-LUMO gap, eV) or another of density.LABEL_KEYS (e.g. dipole_D)",
    "n_molecules": "molecules taken from the library by a stratified sample over cores (all if >= library size)",
    "max_heavy_atoms": "library filter: molecules with at most this many heavy atoms",
    "method": "PySCF method: HF (RHF), UHF, or an XC functional such as B3LYP",
    "basis": "PySCF basis set name",
    "grid_spacing": "density cube spacing, Angstrom",
    "margin": "cube padding around the atoms, Angstrom",
    "conformer_seed": "ETKDG random seed of the conformer",
    "n_views": "shots per isovalue (1..6: +x, -x, +y, -y, +z, -z cameras)",
    "isovalues": "isosurface values, e/bohr^3 (two values = cross-scale shots)",
    "esp": "surface colouring: charges (Mulliken point charges) or exact (PySCF ESP on the hit points)",
    "fov": "field of view and depth range of every shot, Angstrom",
    "img_size": "image height = width, pixels",
    "patch": "ViT patch size, pixels",
    "dim": "ViT width", "depth": "ViT blocks", "heads": "ViT attention heads",
    "mask_ratio": "fraction of patch tokens masked in pretraining",
    "w_phys": "weight of the physics-quantity pretext loss", "w_comp": "weight of the element-count loss",
    "w_con": "weight of the cross-shot contrastive loss",
    "pretrain_epochs": "pretraining epochs over all molecules", "pretrain_lr": "pretraining AdamW learning rate",
    "batch_size": "batch size of pretraining and every neural fit",
    "finetune_epochs": "most epochs of each neural fit (fine-tunes and the point-cloud model)",
    "patience": "early stopping: epochs without a better validation MAE before a fit stops",
    "label_fractions": "fractions of the training split that keep their labels (V1 uses the smallest, V2 the largest)",
    "report_arms": "also run the report-only neural arms (scratch ViT at the largest and point cloud at the smallest "
                   "fraction)",
    "pc_threshold": "point-cloud density threshold, e/bohr^3",
    "pc_arch": "point-cloud model: pointnet++ (PointNet++-lite) or pointnet",
    "n_points": "points per ED point cloud (farthest-point sampled)",
    "workers": "parallel single-thread worker processes (QM, featurisation, fits)",
    "n_boot": "bootstrap resamples of the V3 interval (over molecules)",
    "ci": "confidence level of the intervals (two-sided)",
    "report_ood": "also run the out-of-distribution split (train 6-ring + acyclic, test 5-ring; report only)",
    "cache": "density cache folder ('' = icml26.common.cache_dir('visioned')/ed)",
    "device": "torch device of the fits (cpu / cuda / auto = cuda when available)",
    "v1_seeds": "split seeds of claim V1 (>= n_seeds: the extra seeds fit only the two V1 arms)",
    "backend": "SCF backend: cpu (PySCF) or gpu (GPU4PySCF)",
}
EXPECTED_RUNTIME_S = {"smoke": 20, "small": 290, "medium": 1500, "paper": 24 * 3600}

V1_THRESHOLD, V2_THRESHOLD, V3_THRESHOLD = 0.90, 1.0, 2.0


def validate_config(config: dict[str, Any]) -> None:
    """Raise ValueError/TypeError naming the first bad key of `config` (called by the CLI before any compute and
    by `run`)."""
    from icml26.visioned.density import COMP_KEYS, LABEL_KEYS, PHYS_KEYS

    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict, got {type(config).__name__}")
    require_keys(config, list(CONFIGS["small"]), "config")
    c = config
    for k in ("seed", "data_seed", "conformer_seed"):
        check_seed(c[k], k)
    for k, lo in (("n_seeds", 1), ("n_molecules", 8), ("max_heavy_atoms", 1), ("n_views", 1), ("img_size", 4),
                  ("patch", 1), ("dim", 4), ("depth", 1), ("heads", 1), ("pretrain_epochs", 1), ("batch_size", 2),
                  ("finetune_epochs", 1), ("patience", 0), ("n_points", 16), ("workers", 1), ("n_boot", 100),
                  ("v1_seeds", 1)):
        check_int(c[k], k, min=lo)
    if c["v1_seeds"] < c["n_seeds"]:
        raise ValueError(f"v1_seeds must be >= n_seeds ({c['n_seeds']}), got {c['v1_seeds']}")
    check_int(c["n_views"], "n_views", max=6)
    if c["target"] not in LABEL_KEYS:
        raise ValueError(f"target must be one of {LABEL_KEYS}, got {c['target']!r}")
    if c["target"] in PHYS_KEYS + COMP_KEYS:  # pragma: no cover - the key lists are disjoint (asserted)
        raise ValueError(f"target {c['target']!r} is a pretext target")
    for k in ("method", "basis", "device", "cache"):
        if not isinstance(c[k], str) or (k != "cache" and not c[k]):
            raise TypeError(f"{k} must be a{' non-empty' if k != 'cache' else ''} string, got {c[k]!r}")
    check_float(c["grid_spacing"], "grid_spacing", min=0.0, min_open=True)
    check_float(c["margin"], "margin", min=0.0)
    check_float(c["fov"], "fov", min=0.0, min_open=True)
    check_float(c["pc_threshold"], "pc_threshold", min=0.0, min_open=True)
    check_float(c["mask_ratio"], "mask_ratio", min=0.0, max=1.0, max_open=True)
    for k in ("w_phys", "w_comp", "w_con"):
        check_float(c[k], k, min=0.0)
    check_float(c["pretrain_lr"], "pretrain_lr", min=0.0, min_open=True)
    check_float(c["ci"], "ci", min=0.5, max=1.0, max_open=True)
    for k, opts in (("esp", ("charges", "exact")), ("pc_arch", ("pointnet++", "pointnet")),
                    ("backend", ("cpu", "gpu"))):
        check_choice(c[k], k, opts)
    for k in ("report_ood", "report_arms"):
        check_bool(c[k], k)
    for k in ("isovalues", "label_fractions"):
        v = c[k]
        if isinstance(v, (str, bytes)) or not isinstance(v, (list, tuple)) or not v:
            raise TypeError(f"{k} must be a non-empty list of numbers, got {v!r}")
        if len(set(map(float, v))) != len(v):
            raise ValueError(f"{k} has duplicates: {v!r}")
    for i, v in enumerate(c["isovalues"]):
        check_float(v, f"isovalues[{i}]", min=0.0, min_open=True)
    for i, v in enumerate(c["label_fractions"]):
        check_float(v, f"label_fractions[{i}]", min=0.0, max=1.0, min_open=True)
    if c["img_size"] % c["patch"]:
        raise ValueError(f"img_size ({c['img_size']}) must be divisible by patch ({c['patch']})")
    if c["dim"] % c["heads"] or c["dim"] % 4:
        raise ValueError(f"dim ({c['dim']}) must be divisible by heads ({c['heads']}) and by 4")
    if "scale" in c:
        check_choice(c["scale"], "scale", ("smoke", "small", "medium", "paper"))


# ---------------------------------------------------------------------------------------------- claims
def _per_seed_ratio(err_a: Sequence[np.ndarray], err_b: Sequence[np.ndarray]) -> dict[str, Any]:
    """Per split seed, MAE(a) / MAE(b) on the same test molecules (a and b paired within each seed)."""
    a = [np.asarray(x, float).ravel() for x in err_a]
    b = [np.asarray(x, float).ravel() for x in err_b]
    if not a or len(a) != len(b) or any(len(x) != len(y) or len(x) == 0 for x, y in zip(a, b)):
        raise ValueError("err_a and err_b must hold, per seed, paired non-empty error arrays of equal length")
    if any(not np.all(np.isfinite(x)) for x in a + b):
        raise ValueError("err_a / err_b must be finite")
    per = [float(x.mean() / max(y.mean(), 1e-300)) for x, y in zip(a, b)]
    return {"per_seed": per, "mae_a": [float(x.mean()) for x in a], "mae_b": [float(y.mean()) for y in b]}


def _ratio_decision(r: dict[str, Any], threshold: float, direction: str, ci: float, label: str,
                    cost_per_seed_s: float | None = None) -> stats.Decision:
    """Mean over split seeds of the per-seed ratio, with a t interval over seeds: the seed (split, labelled
    subset, initialisation) is the unit of replication; each per-seed ratio already averages its test molecules."""
    per = r["per_seed"]
    return stats.decide(float(np.mean(per)), stats.t_interval(per, level=ci), threshold, direction, label=label,
                        cost_per_unit_s=cost_per_seed_s)


def _fmt(v: Sequence[float]) -> str:
    return ", ".join(f"{x:.3f}" for x in v)


def v1_claim(err_pre: Sequence[np.ndarray], err_scratch: Sequence[np.ndarray], *, frac: float = 0.25,
             target: str = "gap_eV", ci: float = 0.95, mean_mae: Sequence[float] | None = None,
             cost_per_seed_s: float | None = None, n_seeds_main: int | None = None) -> Claim:
    """V1 (gate): mean over split seeds of MAE(pretrained) / MAE(scratch) at the scarce label fraction <= 0.90
    (paired per seed, t interval over seeds)."""
    r = _per_seed_ratio(err_pre, err_scratch)
    d = _ratio_decision(r, V1_THRESHOLD, "<=", ci, "V1", cost_per_seed_s)
    unit = target.rsplit("_", 1)[-1]
    ref = f"; training-mean predictor per seed [{_fmt(mean_mae)}] {unit}" if mean_mae is not None else ""
    n = len(r["per_seed"])
    extra = (f" ({n_seeds_main} seeds with every arm, {n - n_seeds_main} more with the two V1 arms only)"
             if n_seeds_main is not None and n_seeds_main < n else "")
    more = ("" if d.decided else " Inconclusive here: `icml26 run visioned --scale medium` fits the two V1 arms on "
            "50 split seeds (about 25 min on 2 cores, on CUDA when present).")
    return Claim(
        "V1", "Physics-informed pretraining helps under label scarcity.",
        f"MAE(pretrained) / MAE(scratch), {target}, {frac:.0%} labels, mean over {n} split seeds{extra} "
        f"({sum(len(np.ravel(e)) for e in err_pre)} test predictions)",
        {"ratio": d.estimate, "ci_lo": d.interval.low, "ci_hi": d.interval.high, "n_seeds": n},
        f"<= {V1_THRESHOLD:g}", decision=d, kind="gate",
        details=d.text() + f".{more} Per seed: ratio [{_fmt(r['per_seed'])}], pretrained MAE [{_fmt(r['mae_a'])}], "
        f"scratch MAE [{_fmt(r['mae_b'])}] {unit}{ref}. By construction (sanity): both arms share the split, the "
        "labelled subset, the test molecules, the recipe and the architecture; only the initialisation differs. "
        "Can fail: the ratio itself (a pretraining that does not help gives ~1).",
        paper="qualitative: 'more robust under data scarcity' (abstract); no pretrained-vs-scratch figure given",
        per_seed=r["per_seed"])


def v2_claims(err_pre: Sequence[np.ndarray], err_pc: Sequence[np.ndarray], err_mean: Sequence[np.ndarray], *,
              frac: float = 1.0, target: str = "gap_eV", arch: str = "pointnet++", ci: float = 0.95) -> list[Claim]:
    """V2 (gate): mean over seeds of MAE(pretrained ViT) / MAE(point-cloud model) <= 1 at the full label fraction;
    and V2-control (report): both models beat the training-mean predictor (positive control of the comparison)."""
    r = _per_seed_ratio(err_pre, err_pc)
    m = _per_seed_ratio(err_pc, err_mean)
    vm = _per_seed_ratio(err_pre, err_mean)
    d = _ratio_decision(r, V2_THRESHOLD, "<=", ci, "V2")
    dc = stats.all_of(_ratio_decision(m, 1.0, "<=", ci, f"{arch} / mean predictor < 1"),
                      _ratio_decision(vm, 1.0, "<=", ci, "pretrained ViT / mean predictor < 1"), label="V2-control")
    unit = target.rsplit("_", 1)[-1]
    v2 = Claim(
        "V2", "ED images beat ED point clouds.",
        f"MAE(pretrained ViT) / MAE({arch}), {target}, {frac:.0%} labels, mean over split seeds; relative gain = "
        "1 - ratio",
        {"ratio": d.estimate, "ci_lo": d.interval.low, "ci_hi": d.interval.high, "gain": 1 - d.estimate},
        f"ratio <= {V2_THRESHOLD:g} (image MAE <= point-cloud MAE)", decision=d, kind="gate",
        details=d.text() + f". Per seed: ratio [{_fmt(r['per_seed'])}], pretrained MAE [{_fmt(r['mae_a'])}], point "
        f"cloud MAE [{_fmt(r['mae_b'])}], training-mean MAE [{_fmt(m['mae_b'])}] {unit}. Whether the point-cloud "
        "model learned at all is V2-control. By construction (sanity): same splits, labels, early-stopping recipe "
        "and cached densities for both representations. Can fail: the ratio.",
        paper="+26.2% performance of ED images over ED point clouds (abstract)", per_seed=r["per_seed"])
    ctl = Claim(
        "V2-control", "Both representations' models learn: each beats the training-label mean (positive control; "
                      "V2 is only informative if the point-cloud model learned).",
        f"MAE(model) / MAE(training-label mean), {frac:.0%} labels, mean over split seeds",
        {f"{arch}_over_mean": float(np.mean(m["per_seed"])), "vit_pre_over_mean": float(np.mean(vm["per_seed"]))},
        "< 1 for both", decision=dc, kind="report",
        details=dc.text() + f". Per seed {arch} / mean [{_fmt(m['per_seed'])}], pretrained ViT / mean "
        f"[{_fmt(vm['per_seed'])}]. Report only (a control of the comparison, not a claim of the paper).",
        paper="no figure (a control of our comparison)", per_seed=m["per_seed"])
    return [v2, ctl]


def v3_claim(t_img: Sequence[float], t_pc: Sequence[float], *, n_points: int = 1024, n_boot: int = 2000,
             ci: float = 0.95, seed: int = 0, extra: str = "") -> Claim:
    """V3 (gate): median featurisation time of a point cloud / of the 6 shots >= 2, per molecule from the cache
    (paired bootstrap over molecules)."""
    ti, tp = np.asarray(t_img, float), np.asarray(t_pc, float)
    if ti.shape != tp.shape or ti.ndim != 1 or len(ti) < 2 or np.any(ti <= 0) or np.any(tp <= 0):
        raise ValueError("t_img and t_pc must be paired positive per-molecule times of equal length (>= 2)")

    def speedup(p, i):
        return float(np.median(p) / np.median(i))

    ratio = speedup(tp, ti)
    iv = stats.bootstrap_interval((tp, ti), speedup, paired=True, level=ci, n_resamples=n_boot, seed=seed)
    d = stats.decide(ratio, iv, V3_THRESHOLD, ">=", label="V3")
    return Claim(
        "V3", "Images are cheaper than point clouds.",
        f"featurisation speed-up from the cached cube: median t(threshold + FPS {n_points}) / median t(render 6 "
        "shots), per molecule, one thread, both in the same worker",
        {"speedup": ratio, "ci_lo": iv.low, "ci_hi": iv.high}, f">= {V3_THRESHOLD:g}x (gate); bytes, epoch time "
        "and memory reported", decision=d, kind="gate",
        details=d.text() + f". Median render {1e3 * np.median(ti):.1f} ms vs point cloud {1e3 * np.median(tp):.1f} "
        f"ms per molecule (both vectorised numpy: shared-volume ray casting; gemv-based exact FPS). {extra} By "
        "construction (sanity): both start from the same cached cube in the same process. Can fail: the ratio.",
        paper="2.6x less memory and 4.6x less time for ED images than ED point clouds (abstract); the paper does not "
              "say which part of the pipeline it timed")


# ---------------------------------------------------------------------------------------------- workers
def _featurise(records: list, cfg: dict[str, Any]) -> dict[str, Any]:
    """Render images and point clouds for `records`, timing each (one thread)."""
    from icml26.visioned.render import ed_point_cloud, render_multishot

    def img(r):
        return render_multishot(r, n_views=cfg["n_views"], size=cfg["img_size"], isovalues=cfg["isovalues"],
                                esp=cfg["esp"], fov=cfg["fov"])

    def pc(r):
        return ed_point_cloud(r, threshold=cfg["pc_threshold"], n_points=cfg["n_points"], seed=0)

    img(records[0]), pc(records[0])  # warm-up (imports, caches)
    ims, pcs, t_img, t_pc = [], [], [], []
    for r in records:
        t0 = time.perf_counter()
        ims.append(img(r))
        t_img.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        pcs.append(pc(r))
        t_pc.append(time.perf_counter() - t0)
    return {"images": np.stack(ims), "pcs": np.stack(pcs), "t_img": t_img, "t_pc": t_pc}


def _vit_config(cfg: dict[str, Any]) -> dict[str, Any]:
    return {"img_size": cfg["img_size"], "patch": cfg["patch"], "in_chans": 4,
            "n_shots": cfg["n_views"] * len(cfg["isovalues"]), "dim": cfg["dim"], "depth": cfg["depth"],
            "heads": cfg["heads"]}


def _pretrain_job(images: np.ndarray, pretext: dict[str, list[float]], cfg: dict[str, Any]) -> dict[str, Any]:
    import torch

    from icml26.visioned.model import VisionEDPretrainer, VisionEDViT

    torch.manual_seed(cfg["seed"])
    model = VisionEDViT(**_vit_config(cfg))
    t0 = time.perf_counter()
    pt = VisionEDPretrainer(model, mask_ratio=cfg["mask_ratio"],
                            weights={"phys": cfg["w_phys"], "comp": cfg["w_comp"], "con": cfg["w_con"]},
                            lr=cfg["pretrain_lr"], epochs=cfg["pretrain_epochs"], batch_size=cfg["batch_size"],
                            seed=cfg["seed"], device=cfg["device"]).fit(images, pretext)
    return {"kind": "pretrain", "state": {k: v.cpu().numpy() for k, v in model.state_dict().items()},
            "history": pt.history_, "time_s": time.perf_counter() - t0}


def _fit_job(kind: str, seed: int, frac: float, split: tuple, X: Any, y: np.ndarray, cfg: dict[str, Any],
             state: dict[str, np.ndarray] | None = None, tag: str = "") -> dict[str, Any]:
    """One downstream fit: kind in vit_pre | vit_scratch | pointcloud | ecfp_mlp | ecfp_rf."""
    import torch

    from icml26.visioned.baselines import ECFPRegressor, PointCloudRegressor
    from icml26.visioned.model import VisionEDRegressor, VisionEDViT

    tr, va, te = split
    t0 = time.perf_counter()
    common = {"epochs": cfg["finetune_epochs"], "patience": cfg["patience"], "batch_size": cfg["batch_size"],
              "seed": seed, "device": cfg["device"]}
    if kind in ("vit_pre", "vit_scratch"):
        bb = None
        if kind == "vit_pre":
            bb = VisionEDViT(**_vit_config(cfg))
            bb.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
        est = VisionEDRegressor(backbone=bb, targets=[cfg["target"]], backbone_config=_vit_config(cfg), **common)
        est.fit(X[tr], y[tr], X[va], y[va])
    elif kind == "pointcloud":
        est = PointCloudRegressor(arch=cfg["pc_arch"], **common).fit(X[tr], y[tr], X[va], y[va])
    elif kind in ("ecfp_mlp", "ecfp_rf"):
        Xs = np.asarray(X, dtype=object)
        est = ECFPRegressor(kind.split("_")[1], seed=seed).fit(list(Xs[tr]), y[tr])
        err = np.abs(est.predict(list(Xs[te])) - y[te])
        return {"kind": kind, "seed": seed, "frac": frac, "tag": tag, "mae": float(err.mean()), "err": err,
                "test": np.asarray(te), "time_s": time.perf_counter() - t0, "epoch_times": [], "n_train": len(tr)}
    else:
        raise ValueError(f"unknown kind {kind!r}")
    err = np.abs(est.predict(X[te]) - y[te])
    h = est.history_
    return {"kind": kind, "seed": seed, "frac": frac, "tag": tag, "mae": float(err.mean()), "err": err,
            "test": np.asarray(te), "time_s": time.perf_counter() - t0, "epoch_times": h["epoch_times"],
            "best_epoch": h["best_epoch"], "n_epochs": len(h["epoch_times"]), "val_curve": h["val_mae"],
            "n_train": len(tr)}


def _epoch_time(net, X: tuple, bsz: int) -> float:
    """Seconds for one training epoch of `net` on the inputs X (tuple indexed together; MSE to zeros, AdamW),
    after one warm-up step."""
    import torch

    opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
    net.train()

    def step(sl):
        xb = [x[sl] for x in X]
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(net(*xb), torch.zeros(len(xb[0]), 1)).backward()
        opt.step()

    step(slice(0, bsz))
    t0 = time.perf_counter()
    for s in range(0, len(X[0]), bsz):
        step(slice(s, s + bsz))
    return time.perf_counter() - t0


def _run_job(job: dict[str, Any]) -> dict[str, Any]:
    job = dict(job)
    fn = job.pop("fn")
    return _pretrain_job(**job) if fn == "pretrain" else _fit_job(**job)


def _dispatch(**job: Any) -> dict[str, Any]:
    return _run_job(job)


def _schedule(jobs: list[tuple[dict[str, Any], float]], after_pretrain, workers: int):
    """Run jobs in `workers` single-thread processes, most expensive first; the pretrained fine-tunes become
    eligible as soon as pretraining finishes (no barrier between the phases). Returns (pretrain result, fits)."""
    import multiprocessing as mp

    from tqdm.auto import tqdm

    pending = list(jobs)
    total = len(jobs) + len(after_pretrain({"state": None}))
    bar = tqdm(total=total, desc="pretrain + fine-tunes + baselines", leave=False)
    pre, fits = None, []

    def collect(r: dict[str, Any]) -> None:
        nonlocal pre
        bar.update()
        if r["kind"] == "pretrain":
            pre = r
            pending.extend(after_pretrain(r))
        else:
            fits.append(r)

    if workers <= 1:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):  # one BLAS thread, as in the workers (multi-threaded BLAS on tiny fits crawls)
            while pending:
                pending.sort(key=lambda j: -j[1])
                job, _ = pending.pop(0)
                collect(_dispatch(**job))
        bar.close()
        return pre, fits
    ctx = mp.get_context("spawn")
    from icml26.common.parallel import init_worker

    with ctx.Pool(workers, initializer=init_worker) as pool:
        running: list = []
        while pending or running:
            pending.sort(key=lambda j: -j[1])
            while pending and len(running) < workers:
                job, _ = pending.pop(0)
                running.append(pool.apply_async(_dispatch, kwds=job))
            done = [a for a in running if a.ready()]
            if not done:
                time.sleep(0.05)
                continue
            for a in done:
                running.remove(a)
                collect(a.get())
    bar.close()
    return pre, fits


# ---------------------------------------------------------------------------------------------- run
def _splits(n: int, seed: int, fractions: list[float]) -> dict[float, tuple]:
    from icml26.visioned.data import random_split

    tr, va, te = random_split(n, (0.7, 0.15, 0.15), seed=seed)
    perm = np.random.default_rng(seed + 1000).permutation(tr)
    return {f: (np.sort(perm[: max(2, int(math.ceil(f * len(tr))))]), va, te) for f in fractions}


def run(config: dict[str, Any]) -> Result:
    import torch

    from icml26.common import run_parallel, seed_everything
    from icml26.common.plotting import new_figure
    from icml26.visioned.data import enumerate_small_molecules, ring_class, stratified_sample
    from icml26.visioned.density import COMP_KEYS, PHYS_KEYS, EDCalculator, check_no_leakage
    from icml26.visioned.metrics import representation_bytes, training_step_memory

    validate_config(config)
    cfg = dict(config)
    scale = cfg.get("scale", "small")
    if cfg["device"] == "auto":
        cfg["device"] = "cuda" if torch.cuda.is_available() else "cpu"
    t_start = time.perf_counter()
    seed_everything(cfg["seed"])
    check_no_leakage(PHYS_KEYS + COMP_KEYS, [cfg["target"]])
    timings: dict[str, float] = {}

    # 1. molecules + densities (computed once, in parallel, cached on disk)
    lib = enumerate_small_molecules(cfg["max_heavy_atoms"])
    mols = stratified_sample(lib, min(cfg["n_molecules"], len(lib)), seed=cfg["data_seed"])
    smiles = [m["smiles"] for m in mols]
    calc = EDCalculator(method=cfg["method"], basis=cfg["basis"], grid_spacing=cfg["grid_spacing"],
                        margin=cfg["margin"], cache_dir=cfg["cache"] or None, n_workers=cfg["workers"],
                        backend=cfg["backend"])
    n_cached = sum(1 for s in smiles if calc.cache_path(s, cfg["conformer_seed"]).exists()) if calc.cache_dir else 0
    t0 = time.perf_counter()
    recs = calc.compute(smiles, conformer_seed=cfg["conformer_seed"])
    timings["densities_s"] = time.perf_counter() - t0
    y = np.array([r.props[cfg["target"]] for r in recs])
    N = len(recs)

    # 2. featurisation, timed per molecule (both representations from the same cached cube, same worker)
    t0 = time.perf_counter()
    w = max(1, min(cfg["workers"], N // 2))
    chunks = [recs[i::w] for i in range(w)]
    feats = run_parallel(_featurise, [{"records": c, "cfg": cfg} for c in chunks], workers=w, desc="featurise")
    images = np.zeros((N,) + feats[0]["images"].shape[1:], np.uint8)
    pcs = np.zeros((N,) + feats[0]["pcs"].shape[1:], np.float32)
    t_img, t_pc = np.zeros(N), np.zeros(N)
    for i, f in enumerate(feats):
        images[i::w], pcs[i::w], t_img[i::w], t_pc[i::w] = f["images"], f["pcs"], f["t_img"], f["t_pc"]
    timings["featurise_s"] = time.perf_counter() - t0
    pretext = {k: [r.pretext[k] for r in recs] for k in PHYS_KEYS + COMP_KEYS}

    # 3. jobs: pretraining + every fit that does not need it, then the pretrained fine-tunes as soon as it is done
    seeds = [cfg["seed"] + i for i in range(cfg["n_seeds"])]
    v1_extra = [cfg["seed"] + i for i in range(cfg["n_seeds"], cfg["v1_seeds"])]  # V1's two arms only
    fracs = sorted(float(f) for f in cfg["label_fractions"])
    lo_f, hi_f = fracs[0], fracs[-1]
    splits = {s: _splits(N, s, fracs) for s in seeds + v1_extra}
    inputs = {"vit_scratch": images, "pointcloud": pcs, "ecfp_mlp": np.array(smiles, dtype=object),
              "ecfp_rf": np.array(smiles, dtype=object), "vit_pre": images}

    def arms(frac: float) -> list[str]:
        """The fits at one label fraction: the gated comparisons always, the rest if `report_arms`."""
        need = {"vit_pre", "ecfp_mlp", "ecfp_rf"}
        if frac == lo_f or cfg["report_arms"]:
            need.add("vit_scratch")
        if frac == hi_f or cfg["report_arms"]:
            need.add("pointcloud")
        return sorted(need)

    ood = None
    if cfg["report_ood"]:
        cls = np.array([ring_class(m["core"]) for m in mols])
        te = np.nonzero(cls == "5ring")[0]
        rest = np.random.default_rng(cfg["seed"]).permutation(np.nonzero(cls != "5ring")[0])
        n_va = max(2, len(rest) // 6)
        ood = (np.sort(rest[n_va:]), np.sort(rest[:n_va]), te)
    # expected cost (relative) so that the longest jobs start first
    cost = {"pointcloud": 4.0, "vit_scratch": 2.0, "vit_pre": 2.0, "ecfp_mlp": 0.3, "ecfp_rf": 0.2}
    jobs = [({"fn": "pretrain", "images": images, "pretext": pretext, "cfg": cfg}, 1e3)]
    for frac in fracs:
        for kind in arms(frac):
            if kind == "vit_pre":
                continue
            for s in seeds:
                jobs.append(({"fn": "fit", "kind": kind, "seed": s, "frac": frac, "split": splits[s][frac],
                              "X": inputs[kind], "y": y, "cfg": cfg}, cost[kind] * frac))
    for s in v1_extra:
        jobs.append(({"fn": "fit", "kind": "vit_scratch", "seed": s, "frac": lo_f, "split": splits[s][lo_f],
                      "X": images, "y": y, "cfg": cfg, "tag": "v1"}, cost["vit_scratch"] * lo_f))
    if ood is not None:
        for kind in ("pointcloud", "vit_scratch", "ecfp_rf"):
            jobs.append(({"fn": "fit", "kind": kind, "seed": seeds[0], "frac": 1.0, "split": ood,
                          "X": inputs[kind], "y": y, "cfg": cfg, "tag": "ood"}, cost[kind]))

    def after_pretrain(pre: dict[str, Any]) -> list[tuple[dict[str, Any], float]]:
        out = [({"fn": "fit", "kind": "vit_pre", "seed": s, "frac": f, "split": splits[s][f], "X": images, "y": y,
                 "cfg": cfg, "state": pre["state"]}, cost["vit_pre"] * f) for f in fracs for s in seeds]
        out += [({"fn": "fit", "kind": "vit_pre", "seed": s, "frac": lo_f, "split": splits[s][lo_f], "X": images,
                  "y": y, "cfg": cfg, "state": pre["state"], "tag": "v1"}, cost["vit_pre"] * lo_f) for s in v1_extra]
        if ood is not None:
            out.append(({"fn": "fit", "kind": "vit_pre", "seed": seeds[0], "frac": 1.0, "split": ood, "X": images,
                         "y": y, "cfg": cfg, "state": pre["state"], "tag": "ood"}, cost["vit_pre"]))
        return out

    t0 = time.perf_counter()
    pre, fits = _schedule(jobs, after_pretrain, cfg["workers"])
    fits.sort(key=lambda r: (r["kind"], r["tag"], r["frac"], r["seed"]))  # completion order varies: fix it
    timings["models_s"] = time.perf_counter() - t0
    timings["pretrain_s"] = pre["time_s"]

    # 4. aggregate: per (model, fraction) the per-seed test errors, and the training-mean reference
    models = ["vit_pre", "vit_scratch", "pointcloud", "ecfp_mlp", "ecfp_rf"]
    errs: dict[str, dict[float, dict[int, np.ndarray]]] = {m: {} for m in models}
    v1_errs: dict[str, dict[int, np.ndarray]] = {"vit_pre": {}, "vit_scratch": {}}
    for r in fits:
        if r["tag"] == "":
            errs[r["kind"]].setdefault(r["frac"], {})[r["seed"]] = r["err"]
        if r["tag"] in ("", "v1") and r["kind"] in v1_errs and r["frac"] == lo_f:
            v1_errs[r["kind"]][r["seed"]] = r["err"]
    errs["mean_predictor"] = {f: {s: np.abs(y[splits[s][f][2]] - y[splits[s][f][0]].mean()) for s in seeds}
                              for f in fracs}
    summary = {m: {f"{f:g}": {"mean": float(np.mean([e.mean() for e in d.values()])),
                              "std": float(np.std([e.mean() for e in d.values()])),
                              "per_seed": [float(d[s].mean()) for s in seeds]}
                   for f, d in by_f.items()} for m, by_f in errs.items()}
    lo, hi = f"{lo_f:g}", f"{hi_f:g}"

    def mean(m, f):
        return summary[m][f]["mean"]

    def per_seed_errs(m: str, f: float) -> list[np.ndarray]:
        return [errs[m][f][s] for s in seeds]

    # efficiency: featurisation, bytes, epoch time and training-step memory (same batch size, one thread)
    bytes_img, bytes_pc = representation_bytes(images[0]), representation_bytes(pcs[0])
    from icml26.visioned.baselines import PointNet, PointNetPPLite
    from icml26.visioned.model import VisionEDViT, _Head

    torch.manual_seed(0)
    bsz = min(cfg["batch_size"], N)
    vit_net = _Head(VisionEDViT(**_vit_config(cfg)), cfg["dim"], 1)
    pc_net = PointNetPPLite(1) if cfg["pc_arch"] == "pointnet++" else PointNet(1)
    old_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    mem_img = training_step_memory(vit_net, torch.as_tensor(images[:bsz]), torch.zeros(bsz, 1))
    mem_pc = training_step_memory(pc_net, torch.as_tensor(pcs[:bsz]), torch.zeros(bsz, 1))
    # training time per epoch, measured back to back in this process (the fits' own epoch times depend on what
    # ran next to them): one epoch over the largest training set of the first seed, after a warm-up step
    n_tr = len(splits[seeds[0]][hi_f][0])
    pc_in = torch.as_tensor(pcs[:n_tr])
    pc_in = (pc_in,) + (pc_net.neighbours(pc_in) if isinstance(pc_net, PointNetPPLite) else ())  # as in the fits
    ep_time = {"image": _epoch_time(vit_net, (torch.as_tensor(images[:n_tr]),), bsz),
               "point_cloud": _epoch_time(pc_net, pc_in, bsz)}
    torch.set_num_threads(old_threads)
    eff = {
        "featurise_ms_per_molecule": {"image": 1e3 * float(np.median(t_img)),
                                      "point_cloud": 1e3 * float(np.median(t_pc))},
        "featurise_speedup_image": float(np.median(t_pc) / np.median(t_img)),
        "bytes_per_molecule": {"image": bytes_img, "point_cloud": bytes_pc, "pc_over_image": bytes_pc / bytes_img},
        "train_epoch_s_largest_fraction": ep_time,
        "epoch_time_pc_over_image": ep_time["point_cloud"] / ep_time["image"],
        "fit_epoch_s_median": {k: float(np.median([np.median(r["epoch_times"]) for r in fits
                                                   if r["kind"] == k and r["tag"] == "" and r["epoch_times"]]))
                               for k in ("vit_pre", "vit_scratch", "pointcloud")
                               if any(r["kind"] == k and r["epoch_times"] for r in fits)},
        "train_step_peak_bytes": {"image": mem_img, "point_cloud": mem_pc},
        "train_memory_pc_over_image": mem_pc["total"] / mem_img["total"],
        "architectures": {"image": f"VisionEDViT dim {cfg['dim']} depth {cfg['depth']} patch {cfg['patch']} "
                                   f"on {images.shape[1:]} uint8",
                          "point_cloud": f"{cfg['pc_arch']} (FPS 512->128, kNN 16, MLP 64/128) on {pcs.shape[1:]} "
                                         "float32"},
    }

    # 5. claims
    unit = cfg["target"].rsplit("_", 1)[-1]  # gap_eV -> eV, dipole_D -> D
    v1_seed_list = seeds + v1_extra
    v1_cost = float(sum(r["time_s"] for r in fits if r["kind"] in v1_errs and r["frac"] == lo_f and r["tag"] != "ood")
                    / max(1, len(v1_seed_list)) / max(1, cfg["workers"]))  # wall per seed of the two V1 fits
    claims = [
        v1_claim([v1_errs["vit_pre"][s] for s in v1_seed_list], [v1_errs["vit_scratch"][s] for s in v1_seed_list],
                 frac=lo_f, target=cfg["target"], mean_mae=summary["mean_predictor"][lo]["per_seed"], ci=cfg["ci"],
                 cost_per_seed_s=v1_cost, n_seeds_main=len(seeds)),
        *v2_claims(per_seed_errs("vit_pre", hi_f), per_seed_errs("pointcloud", hi_f),
                   per_seed_errs("mean_predictor", hi_f), frac=hi_f, target=cfg["target"], arch=cfg["pc_arch"],
                   ci=cfg["ci"]),
        v3_claim(t_img, t_pc, n_points=cfg["n_points"], n_boot=cfg["n_boot"], ci=cfg["ci"], seed=cfg["seed"], extra=(
            f"Bytes/molecule image {bytes_img} vs pc {bytes_pc}; epoch time ({hi_f:.0%} labels, {n_tr} molecules) "
            f"ViT {ep_time['image']:.2f} s vs {cfg['pc_arch']} {ep_time['point_cloud']:.2f} s (pc/image "
            f"{eff['epoch_time_pc_over_image']:.2f}x); training-step memory image {mem_img['total'] / 2**20:.1f} "
            f"MiB vs pc {mem_pc['total'] / 2**20:.1f} MiB (pc/image {eff['train_memory_pc_over_image']:.2f}x), "
            "report only.")),
    ]
    best_ecfp = min(mean("ecfp_mlp", hi), mean("ecfp_rf", hi))
    best_k = "ecfp_mlp" if mean("ecfp_mlp", hi) <= mean("ecfp_rf", hi) else "ecfp_rf"
    r1_diff = [a_ - b_ for a_, b_ in zip(summary["vit_pre"][hi]["per_seed"], summary[best_k][hi]["per_seed"])]
    # an MAE difference with threshold 0: resolution 2 % of the best fingerprint MAE (the default relative band)
    d_r1 = stats.decide(float(np.mean(r1_diff)), stats.t_interval(r1_diff, level=cfg["ci"]), 0.0, "<=",
                        atol=0.02 * best_ecfp, label="R1")
    claims.append(Claim(
        "R1", "VisionED (pretrained) beats fingerprint baselines (report only).",
        f"MAE {cfg['target']} at {hi_f:.0%} labels: pretrained ViT vs best of ECFP-MLP / ECFP-RF",
        {"vit_pre": mean("vit_pre", hi), "ecfp_mlp": mean("ecfp_mlp", hi), "ecfp_rf": mean("ecfp_rf", hi)},
        "pretrained <= best ECFP (paired per seed)", decision=d_r1, kind="report",
        details=d_r1.text() + f". Best ECFP: {best_k}. Per seed at {hi_f:.0%}: pretrained "
        f"[{_fmt(summary['vit_pre'][hi]['per_seed'])}], ECFP-MLP "
        f"[{_fmt(summary['ecfp_mlp'][hi]['per_seed'])}], ECFP-RF [{_fmt(summary['ecfp_rf'][hi]['per_seed'])}] {unit}; "
        f"at {lo_f:.0%}: pretrained {mean('vit_pre', lo):.3f}, ECFP-MLP {mean('ecfp_mlp', lo):.3f}, ECFP-RF "
        f"{mean('ecfp_rf', lo):.3f} {unit}. Report only (the spec does not gate it); can fail.",
        paper="up to 27.0% better than state-of-the-art baselines on photovoltaic and chromophore benchmarks "
              "(abstract; the baselines are not named)"))
    if ood is not None:
        o = {r["kind"]: r["mae"] for r in fits if r["tag"] == "ood"}
        gap = o["vit_pre"] - min(v for k, v in o.items() if k != "vit_pre")
        d_r2 = stats.decide(gap, stats.t_interval([gap]), 0.0, "<=", label="R2")  # one split: unbounded
        claims.append(Claim("R2", "More robust under distribution shift (report only).",
                            f"MAE {cfg['target']}, train 6-ring + acyclic cores, test 5-ring heteroaromatics, "
                            "one seed", o,
                            "pretrained <= every baseline", decision=d_r2, kind="report",
                            details=d_r2.text() + f". {len(ood[0])} train / {len(ood[2])} test molecules, one split: "
                            "a single seed cannot bound the difference; report only.",
                            paper="qualitative: 'more robust under distribution shift' (abstract)"))

    # 6. figures
    result = Result(slug=SLUG, scale=scale, config=cfg, claims=claims)
    from icml26.visioned.render import VIEW_NAMES

    show = [0, N // 2, N - 1]
    n_sh = images.shape[1]
    fig, axes = new_figure(ncols=n_sh, nrows=2 * len(show), width=1.3, height=1.35)
    for row, i in enumerate(show):
        for s in range(n_sh):
            for k, (chan, title) in enumerate(((slice(0, 3), "ESP"), (3, "depth"))):
                ax = axes[2 * row + k, s]
                im = images[i, s, chan]
                ax.imshow(im.transpose(1, 2, 0) if k == 0 else im, cmap=None if k == 0 else "gray",
                          interpolation="nearest")
                ax.set_xticks([]), ax.set_yticks([])
                ax.grid(False)
                if s == 0:
                    ax.set_ylabel(f"{smiles[i][:14]}\n{title}", fontsize=6)
                if row == 0 and k == 0:
                    ax.set_title(VIEW_NAMES[s % 6], fontsize=7)
    result.add_figure("multishot_images", fig)
    fig, ax = new_figure()
    labels = {"vit_pre": "VisionED (pretrained)", "vit_scratch": "VisionED (scratch)",
              "pointcloud": f"ED point cloud ({cfg['pc_arch']})", "ecfp_mlp": "ECFP-MLP", "ecfp_rf": "ECFP-RF",
              "mean_predictor": "training-label mean"}
    for m in models + ["mean_predictor"]:
        fs = sorted(summary[m], key=float)
        ax.errorbar([100 * float(f) for f in fs], [summary[m][f]["mean"] for f in fs],
                    yerr=[summary[m][f]["std"] for f in fs], marker="o", capsize=3, label=labels[m])
    ax.set_xlabel("% of training labels")
    ax.set_ylabel(f"test MAE, {cfg['target']}")
    ax.set_title(f"N = {N}, {len(seeds)} seeds (mean ± std over seeds)")
    ax.legend(fontsize=7)
    result.add_figure("mae_vs_label_fraction", fig)
    fig, ax = new_figure()
    for r in fits:
        if r["tag"] == "" and r.get("val_curve") and r["seed"] == seeds[0]:
            ax.plot(r["val_curve"], label=f"{labels[r['kind']]} {r['frac']:.0%}")
    ax.set_xlabel("epoch")
    ax.set_ylabel("validation MAE (z-scored)")
    ax.set_title(f"early stopping (patience {cfg['patience']}), split seed {seeds[0]}")
    ax.legend(fontsize=6)
    result.add_figure("validation_curves", fig)
    fig, ax = new_figure()
    hist = pre["history"]
    for k in ("total", "mim", "phys", "comp", "con"):
        if k in hist[0]:
            ax.plot([h[k] for h in hist], label=k)
    ax.set_xlabel("pretraining epoch")
    ax.set_ylabel("loss")
    ax.legend(fontsize=7)
    result.add_figure("pretraining_losses", fig)

    timings["total_s"] = time.perf_counter() - t_start
    result.metrics = {
        "n_molecules": N, "n_cached_before_run": n_cached, "timings_s": timings, "mae": summary,
        "efficiency": eff, "label_stats": {"mean": float(y.mean()), "std": float(y.std()), "min": float(y.min()),
                                           "max": float(y.max()), "unit": unit},
        "split_sizes": {f"{f:g}": {"train": len(splits[seeds[0]][f][0]), "val": len(splits[seeds[0]][f][1]),
                                   "test": len(splits[seeds[0]][f][2])} for f in fracs},
        "pretrain_history_first_last": [hist[0], hist[-1]],
        "qm_time_s_per_molecule_median": float(np.median([r.timings.get("scf_s", 0) + r.timings.get("cube_s", 0)
                                                          for r in recs])),
        "epochs_run_and_best": {m: {f"{r['frac']:g}/{r['seed']}": [r.get("n_epochs"), r.get("best_epoch")]
                                    for r in fits if r["kind"] == m and r["tag"] == ""}
                                for m in ("vit_pre", "vit_scratch", "pointcloud")},
    }
    result.notes = (f"{N} molecules ({n_cached} densities cached before the run); {cfg['target']} std {y.std():.2f} "
                    f"{unit} (predicting the training mean gives MAE ~{np.mean(np.abs(y - y.mean())):.2f} {unit}). "
                    "Timings (s): " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    return result
