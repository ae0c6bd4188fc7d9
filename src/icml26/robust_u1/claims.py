"""Robust-U1's claim checks (spec 6.3 as amended by review notes 1, 2, 6, 7 and issue 34), decided by
`icml26.common.stats`.

Each function takes per-seed measurements (plain dicts of numpy arrays, as the experiment collects them) and
returns a `Claim` whose verdict ("held" / "not held" / "inconclusive") comes from `stats.decide`; the tests drive
the same functions with a broken arm (not held) and with a tiny sample (inconclusive).

Per-item arrays are indexed like the test set of `data.corrupted_test_set`: every test image x every kind
(kind-major), so `image` maps items to test images. The ten corrupted items of one image are not independent, so
items are averaged per image and images are resampled, within their seed (review note 6; the stratified
bootstrap of `stats.bootstrap_interval(..., strata=seed)`, rliable's few-seed aggregate): every estimate is the
mean over seeds of the per-seed statistic.

Gates C2 and C3 are shares of the corruption-induced error removed (issue 34): with acc_clean the general model's
clean-image accuracy (the ceiling), acc_c its accuracy on the corrupted images and acc_m the method's,
share = (acc_m - acc_c) / (acc_clean - acc_c). The spec's +10 and +8 points were set on a prototype whose general
model scored 49 % at severity 5 and (like ours) ~95 % clean: 46 points of room, so +10 and +8 points are shares
0.22 and 0.17 of it, the thresholds used here. The absolute points are reported beside.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from icml26.common import stats
from icml26.results import Claim

__all__ = [
    "CLEAN_POINTS",
    "GENERAL_SHARE",
    "HELP_SHARE",
    "NONINF_POINTS",
    "PROTOTYPE_ROOM_POINTS",
    "RECOVERY_GAIN",
    "RL_REWARD_MARGIN",
    "RL_SSIM_TOL",
    "SPEARMAN_MIN",
    "claim_quality_ranks",
    "claim_recovery",
    "claim_recovery_helps",
    "claim_understanding",
    "image_interval",
    "per_image_mean",
    "spearman",
]

RECOVERY_GAIN = 0.15        # SSIM(SFT(x_c), x) - SSIM(x_c, x) (spec 6.3.1)
RL_REWARD_MARGIN = 0.005    # reward(RL) - reward(SFT-continued) (note 2)
RL_SSIM_TOL = 0.002         # SSIM(RL) >= SSIM(SFT-continued) - 0.002
PROTOTYPE_ROOM_POINTS = 46.0  # spec 6.3 prototype: general 49 % at severity 5, ~95 % clean
GENERAL_SHARE = round(10.0 / PROTOTYPE_ROOM_POINTS, 2)  # 0.22: the spec's +10 points as a share (issue 34)
HELP_SHARE = round(8.0 / PROTOTYPE_ROOM_POINTS, 2)      # 0.17: the spec's +8 points as a share
NONINF_POINTS = 1.0         # Robust-U1 >= baseline - 1 point
CLEAN_POINTS = 3.0          # clean accuracy within 3 points of the general model
SPEARMAN_MIN = 0.7          # over >= 9 restorers (note 1)
# Margins whose threshold sits near 0 get an absolute resolution (stats.decide's default is 2 % of the larger of
# |estimate| and |threshold|, i.e. 4e-5 SSIM here): 2e-4 SSIM / reward is ~5 % of the RL reward margin and about the
# size of the seed-to-seed differences of a trained restorer's mean SSIM; 0.1 point for accuracy margins.
ATOL_SSIM = 2e-4
ATOL_POINTS = 0.1

PAPER_RECOVERY = ("qualitative: Stage I teaches BAGEL to restore corrupted images and Stage II (Flow-GRPO with "
                  "reward 1.0 SSIM + 0.2 TinyCLIP) raises restoration quality further; no SSIM table was accessible")
PAPER_UNDERSTANDING = ("R-Bench overall 0.7398 vs base BAGEL 0.5770 (+16.3 points: 38.5 % of BAGEL's whole error, "
                       "so at least that share of its corruption-induced error); MMMB at 100 % corruption 83.18 vs "
                       "BAGEL 78.48 vs Robust-R1 75.35 (strict wins over every baseline)")
PAPER_HELPS = ("qualitative: recovered images support the right answer where reasoning from the corrupted image "
               "fails (case study); no number for a frozen model on recovered images")
PAPER_RANKS = "qualitative (analysis section): better recovery quality goes with better reasoning accuracy"


def per_image_mean(values: np.ndarray, image: np.ndarray, n_images: int | None = None) -> np.ndarray:
    """Mean of per-item `values` per test image (items -> images), shape (n_images,)."""
    values, image = np.asarray(values, dtype=np.float64), np.asarray(image, dtype=np.int64)
    if values.shape != image.shape:
        raise ValueError(f"values {values.shape} and image {image.shape} must give one image per item")
    n = int(image.max()) + 1 if n_images is None else n_images
    counts = np.bincount(image, minlength=n)
    return np.bincount(image, weights=values, minlength=n) / np.maximum(counts, 1)


def _stack(seeds: Sequence[Mapping[str, Any]], arrays: Callable[[Mapping[str, Any]], Sequence[np.ndarray]]
           ) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """The per-image arrays of every seed, concatenated, and the seed index (stratum) of each image."""
    if not seeds:
        raise ValueError("seeds must hold at least one seed's measurements")
    per = [tuple(np.asarray(a, dtype=np.float64) for a in arrays(s)) for s in seeds]
    cols = tuple(np.concatenate([p[j] for p in per]) for j in range(len(per[0])))
    strata = np.concatenate([np.full(len(p[0]), i) for i, p in enumerate(per)])
    return cols, strata


def image_interval(seeds: Sequence[Mapping[str, Any]], arrays: Callable[[Mapping[str, Any]], Sequence[np.ndarray]],
                   statistic: Callable[..., float], n_boot: int = 1000, seed: int = 0
                   ) -> tuple[float, list[float], stats.Interval]:
    """(mean over seeds of `statistic`, its per-seed values, the stratified bootstrap interval over test images).

    `arrays(seed_dict)` gives equal-length per-image arrays; `statistic(*arrays)` is computed per seed."""
    cols, strata = _stack(seeds, arrays)
    per_seed = [float(statistic(*(c[strata == i] for c in cols))) for i in range(len(seeds))]
    iv = stats.bootstrap_interval(cols, statistic, paired=True, strata=strata, n_resamples=max(50, n_boot),
                                  seed=seed)
    return float(np.mean(per_seed)), per_seed, iv


def _mean_diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(a.mean() - b.mean())


def _share(m: np.ndarray, corrupted: np.ndarray, clean: np.ndarray) -> float:
    """Share of the corruption-induced error removed; NaN when corruption costs nothing (no room to close)."""
    room = clean.mean() - corrupted.mean()
    return float((m.mean() - corrupted.mean()) / room) if room > 0 else float("nan")


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rho; NaN (no warning) when either side is constant, where the rank correlation is undefined."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def _fmt(v: Sequence[float], nd: int = 4) -> str:
    return "[" + ", ".join(f"{x:.{nd}f}" for x in v) + "]"


def _what_decides(d: stats.Decision, n_seeds: int, seconds_per_seed: float | None) -> str:
    """For an inconclusive gate (or part): the seeds that the hint's number of test images means, and how long."""
    out = []
    for p in (d.parts or (d,)):
        if p.verdict != "inconclusive" or p.interval is None:
            continue
        iv = p.interval
        need = stats.n_to_decide(iv.sd, p.distance, p.resolution, iv.level)
        per_seed_units = iv.n / max(1, n_seeds)
        if need is None:
            out.append(f"{p.label or 'gate'}: no number of seeds decides it at this effect size (the estimate sits "
                       "within the resolution of the threshold)")
            continue
        k = max(n_seeds + 1, math.ceil(need / per_seed_units))
        t = "" if not seconds_per_seed else f", ~{k * seconds_per_seed / 60:.0f} min on 2 CPU cores"
        out.append(f"{p.label or 'gate'}: ~{k} seeds of {per_seed_units:.0f} test images would decide it{t} "
                   "(`--scale medium` runs 12 seeds)")
    return (" What would decide it: " + "; ".join(out) + ".") if out else ""


def _img(s: Mapping[str, Any], values: Any, key: str = "image", n: int | None = None) -> np.ndarray:
    return per_image_mean(values, s[key], n)


def _cost(seconds_per_seed: float | None, n_images: int) -> float | None:
    return None if not seconds_per_seed else seconds_per_seed / max(1, n_images)


def _seed_view(per_seed: Sequence[float], nd: int = 4) -> str:
    if len(per_seed) < 2:
        return f"per seed {_fmt(per_seed, nd)}"
    return f"per seed {_fmt(per_seed, nd)} (over seeds: {stats.t_interval(per_seed).text()})"


# ------------------------------------------------------------------------------------------- check 1
def claim_recovery(seeds: Sequence[Mapping[str, Any]], n_boot: int = 1000, seconds_per_seed: float | None = None,
                   lr_note: str = "") -> Claim:
    """Check 1. Each seed dict has per-item arrays (severity-5 test set) "image", "ssim_identity", "ssim_sft",
    "ssim_rl", "ssim_sftc", "reward_sft", "reward_rl", "reward_sftc" (reward of each policy's MEAN output)."""
    n_img = len(_img(seeds[0], seeds[0]["ssim_sft"]))
    cost = _cost(seconds_per_seed, n_img)

    def pair(a: str, b: str) -> Callable[[Mapping[str, Any]], tuple[np.ndarray, np.ndarray]]:
        return lambda s: (_img(s, s[a]), _img(s, s[b]))

    g, g_ps, g_iv = image_interval(seeds, pair("ssim_sft", "ssim_identity"), _mean_diff, n_boot, 11)
    r, r_ps, r_iv = image_interval(seeds, pair("reward_rl", "reward_sftc"), _mean_diff, n_boot, 12)
    q, q_ps, q_iv = image_interval(seeds, pair("ssim_rl", "ssim_sftc"), _mean_diff, n_boot, 13)
    r0, r0_ps, r0_iv = image_interval(seeds, pair("reward_rl", "reward_sft"), _mean_diff, n_boot, 14)
    d = stats.all_of(
        stats.decide(g, g_iv, RECOVERY_GAIN, ">=", label="SFT gain", cost_per_unit_s=cost),
        stats.decide(r, r_iv, RL_REWARD_MARGIN, ">=", atol=ATOL_SSIM, label="RL reward margin", cost_per_unit_s=cost),
        stats.decide(q, q_iv, -RL_SSIM_TOL, ">=", atol=ATOL_SSIM, label="RL SSIM", cost_per_unit_s=cost), label="C1")
    details = (f"{d.text()}{_what_decides(d, len(seeds), seconds_per_seed)} SFT gain {_seed_view(g_ps)} (SSIM "
               f"identity {_fmt([np.mean(s['ssim_identity']) for s in seeds])}, SFT "
               f"{_fmt([np.mean(s['ssim_sft']) for s in seeds])}); reward(RL) - reward(SFT-continued) "
               f"{_seed_view(r_ps)}; SSIM(RL) - SSIM(SFT-continued) {_seed_view(q_ps)}; vs plain SFT: "
               f"reward(RL) - reward(SFT) {r0:.4f}, {r0_iv.text()}. {lr_note} Every clause can fail (an untrained "
               "restorer gives gain 0, an RL arm no better than continued SFT fails the margin). Intervals: "
               "bootstrap over test images (10 corrupted items each) within seeds.")
    return Claim(id="C1", statement="Stage I SFT recovers corrupted images and Stage II RL improves its own "
                                    "reward beyond continued SFT without losing SSIM",
                 metric="severity-5 test set, mean over 10 kinds: SSIM gain of SFT over the corrupted input; "
                        "reward / SSIM of the RL policy mean minus the SFT-continued arm's",
                 measured={"sft_ssim_gain": g, "rl_minus_sftc_reward": r, "rl_minus_sftc_ssim": q,
                           "rl_minus_sft_reward": r0, "reward_interval": [r_iv.low, r_iv.high],
                           "ssim_interval": [q_iv.low, q_iv.high], "reward_margin_per_seed": r_ps},
                 threshold=f"gain >= {RECOVERY_GAIN} AND reward margin >= {RL_REWARD_MARGIN} AND SSIM margin >= "
                           f"-{RL_SSIM_TOL}",
                 decision=d, kind="gate", details=details, paper=PAPER_RECOVERY, per_seed=r_ps)


# ------------------------------------------------------------------------------------------- check 2
def claim_understanding(seeds: Sequence[Mapping[str, Any]], baselines: Sequence[str] = ("corrupted_ft", "fare",
                        "degradation_aware"), n_boot: int = 1000, seconds_per_seed: float | None = None) -> Claim:
    """Check 2. Each seed dict: "image" (items -> images), "correct": {method: per-item 0/1 at severity 5}
    with "robust_u1", "general" and every name in `baselines`, and "clean_image", "clean_correct":
    {"robust_u1", "general"} per clean item (the same test images)."""
    def n_of(s: Mapping[str, Any]) -> int:
        return int(max(np.max(s["image"]), np.max(s["clean_image"]))) + 1

    def acc(s: Mapping[str, Any], m: str) -> np.ndarray:
        return 100 * _img(s, s["correct"][m], n=n_of(s))

    def clean(s: Mapping[str, Any], m: str) -> np.ndarray:
        return 100 * _img(s, s["clean_correct"][m], "clean_image", n_of(s))

    n_img = n_of(seeds[0])
    cost = _cost(seconds_per_seed, n_img)
    share, sh_ps, sh_iv = image_interval(seeds, lambda s: (acc(s, "robust_u1"), acc(s, "general"),
                                                           clean(s, "general")), _share, n_boot, 21)
    parts = [stats.decide(share, sh_iv, GENERAL_SHARE, ">=", label="share vs general", cost_per_unit_s=cost)]
    out: dict[str, Any] = {"share_vs_general": share, "share_interval": [sh_iv.low, sh_iv.high],
                           "share_per_seed": sh_ps}
    pts, pts_ps, pts_iv = image_interval(seeds, lambda s: (acc(s, "robust_u1"), acc(s, "general")), _mean_diff,
                                         n_boot, 22)
    out["margin_vs_general_points"] = pts
    out["margin_vs_general_interval"] = [pts_iv.low, pts_iv.high]
    room = [float(np.mean(clean(s, "general")) - np.mean(acc(s, "general"))) for s in seeds]
    out["room_points"] = float(np.mean(room))
    lines = [f"share of the corruption-induced error removed {share:.3f} {_seed_view(sh_ps, 3)}: Robust-U1 - general "
             f"{pts:+.2f} points ({pts_iv.text('.3g')}) of {np.mean(room):.2f} points of room (general clean - "
             "general corrupted)"]
    for k, b in enumerate(baselines):
        m, ps, iv = image_interval(seeds, lambda s, b=b: (acc(s, "robust_u1"), acc(s, b)), _mean_diff, n_boot, 23 + k)
        parts.append(stats.decide(m, iv, -NONINF_POINTS, ">=", atol=ATOL_POINTS, label=f"vs {b}",
                                  cost_per_unit_s=cost))
        out[f"margin_vs_{b}"] = m
        out[f"margin_vs_{b}_interval"] = [iv.low, iv.high]
        lines.append(f"Robust-U1 - {b} {m:+.2f} points {_seed_view(ps, 2)}")
    m, ps, iv = image_interval(seeds, lambda s: (clean(s, "robust_u1"), clean(s, "general")), _mean_diff, n_boot, 29)
    parts.append(stats.decide(m, iv, -CLEAN_POINTS, ">=", atol=ATOL_POINTS, label="clean", cost_per_unit_s=cost))
    out["clean_margin_vs_general"] = m
    out["clean_margin_interval"] = [iv.low, iv.high]
    lines.append(f"clean: Robust-U1 - general {m:+.2f} points {_seed_view(ps, 2)}")
    accs = {mm: float(np.mean([np.mean(s["correct"][mm]) for s in seeds])) * 100 for mm in seeds[0]["correct"]}
    accs["general_clean"] = float(np.mean([np.mean(s["clean_correct"]["general"]) for s in seeds])) * 100
    out["accuracy_points"] = accs
    d = stats.all_of(*parts, label="C2")
    details = (f"{d.text()}{_what_decides(d, len(seeds), seconds_per_seed)} " + "; ".join(lines)
               + ". Accuracies (points, mean over seeds): " + ", ".join(f"{k} {v:.2f}" for k, v in accs.items())
               + f". Share threshold {GENERAL_SHARE}: the spec's +10 points over {PROTOTYPE_ROOM_POINTS:g} points of "
                 "room in its prototype. The paper claims strict wins over the baselines; we gate non-inferiority "
                 "(spec 6.3.2) and print the signed margins. Every part can fail (a Robust-U1 arm that learns "
                 "nothing removes no error; a baseline far better fails non-inferiority). Intervals: bootstrap over "
                 "test images within seeds.")
    return Claim(id="C2", statement="Reasoning over the corrupted and the recovered image removes a large share of "
                                    "the error corruption causes the general model, is non-inferior to the robustness "
                                    "baselines and keeps clean accuracy",
                 metric="severity 5: (acc Robust-U1 - acc general) / (acc general clean - acc general) (share); "
                        "Robust-U1 minus each baseline and clean Robust-U1 minus clean general (points)",
                 measured=out, threshold=f"share >= {GENERAL_SHARE}; >= -{NONINF_POINTS:g} point vs "
                                         f"{', '.join(baselines)}; clean >= -{CLEAN_POINTS:g}",
                 decision=d, kind="gate", details=details, paper=PAPER_UNDERSTANDING, per_seed=sh_ps)


# ------------------------------------------------------------------------------------------- check 3
def claim_recovery_helps(seeds: Sequence[Mapping[str, Any]], n_boot: int = 1000,
                         seconds_per_seed: float | None = None) -> Claim:
    """Check 3. Each seed dict: "image", "general_correct": {"corrupted", "rl", "sft"} per-item 0/1 of the
    frozen general model on the corrupted, RL-recovered and SFT-recovered images (note 7: SFT reported too), and
    "clean_image", "clean_correct" (per clean item) of the same model: the ceiling."""
    def n_of(s: Mapping[str, Any]) -> int:
        return int(max(np.max(s["image"]), np.max(s["clean_image"]))) + 1

    def arrays(arm: str) -> Callable[[Mapping[str, Any]], tuple[np.ndarray, ...]]:
        return lambda s: (100 * _img(s, s["general_correct"][arm], n=n_of(s)),
                          100 * _img(s, s["general_correct"]["corrupted"], n=n_of(s)),
                          100 * _img(s, s["clean_correct"], "clean_image", n_of(s)))

    cost = _cost(seconds_per_seed, n_of(seeds[0]))
    share, ps, iv = image_interval(seeds, arrays("rl"), _share, n_boot, 31)
    sshare, sps, siv = image_interval(seeds, arrays("sft"), _share, n_boot, 32)
    pts, pps, piv = image_interval(seeds, lambda s: arrays("rl")(s)[:2], _mean_diff, n_boot, 33)
    spts, _, spiv = image_interval(seeds, lambda s: arrays("sft")(s)[:2], _mean_diff, n_boot, 34)
    d = stats.decide(share, iv, HELP_SHARE, ">=", label="C3", cost_per_unit_s=cost)
    details = (f"{d.text()}{_what_decides(d, len(seeds), seconds_per_seed)} Frozen general model, share of the "
               f"corruption-induced error removed by RL-recovered images {_seed_view(ps, 3)}; in points "
               f"{pts:+.2f} ({piv.text('.3g')}). SFT-recovered: share {sshare:.3f} ({siv.text('.3g')}), "
               f"{spts:+.2f} points: the semantic reward's encoder is a digit classifier, so the SFT row shows how "
               f"much of the gain does not depend on it (note 7). Share threshold {HELP_SHARE}: the spec's +8 points "
               f"over {PROTOTYPE_ROOM_POINTS:g} points of room in its prototype. Can fail: an identity restorer "
               "removes exactly nothing.")
    return Claim(id="C3", statement="Self-recovered images help an untouched model: the frozen general model "
                                    "answers better from RL-recovered than from corrupted images",
                 metric="frozen general model, severity 5: (acc on RL-recovered - acc on corrupted) / (acc clean - "
                        "acc on corrupted)",
                 measured={"rl_share": share, "rl_share_interval": [iv.low, iv.high], "rl_gain_points": pts,
                           "rl_gain_interval": [piv.low, piv.high], "sft_share": sshare, "sft_gain_points": spts,
                           "sft_gain_interval": [spiv.low, spiv.high]},
                 threshold=f"share >= {HELP_SHARE}", decision=d, kind="gate", details=details, paper=PAPER_HELPS,
                 per_seed=ps)


# ------------------------------------------------------------------------------------------- check 4
def claim_quality_ranks(seeds: Sequence[Mapping[str, Any]], n_boot: int = 1000,
                        seconds_per_seed: float | None = None) -> Claim:
    """Check 4 (note 1). Each seed dict: "image" (items -> images) and "restorers": {name: {"ssim": per-item
    SSIM, "acc": per-item 0/1 of the general model}} over the same >= 9 restorers. Gate: the mean over seeds of
    the per-seed Spearman between the restorers' mean SSIM and mean accuracy >= 0.7; the interval resamples test
    images within seeds (the restorers are fixed)."""
    names = list(seeds[0]["restorers"])
    if len(names) < 3:
        raise ValueError(f"claim 4 needs >= 3 restorers, got {names}")
    k = len(names)

    def arrays(s: Mapping[str, Any]) -> list[np.ndarray]:
        return ([_img(s, s["restorers"][n]["ssim"]) for n in names]
                + [_img(s, s["restorers"][n]["acc"]) for n in names])

    def rho(*a: np.ndarray) -> float:
        return spearman([x.mean() for x in a[:k]], [x.mean() for x in a[k:]])

    est, ps, iv = image_interval(seeds, arrays, rho, n_boot, 41)
    ssim_m = np.array([np.mean([np.mean(s["restorers"][n]["ssim"]) for s in seeds]) for n in names])
    acc_m = np.array([np.mean([np.mean(s["restorers"][n]["acc"]) for s in seeds]) for n in names])
    rho_means = spearman(ssim_m, acc_m)
    cost = _cost(seconds_per_seed, iv.n // max(1, len(seeds)))
    d = (stats.decide(est, iv, SPEARMAN_MIN, ">=", label="C4", cost_per_unit_s=cost) if math.isfinite(est)
         else stats.exact(est, SPEARMAN_MIN, ">=", label="C4"))  # NaN: every restorer equal, rho undefined
    table = "; ".join(f"{n}: SSIM {s:.3f}, acc {100 * a:.1f}" for n, s, a in zip(names, ssim_m, acc_m))
    details = (f"{d.text()}{_what_decides(d, len(seeds), seconds_per_seed)} {k} restorers (means over seeds) - "
               f"{table}. Per-seed Spearman {_fmt(ps, 3)}; Spearman of the seed means {rho_means:.3f}. One-sided 5 % "
               f"critical value at n = 9 is 0.60 (note 1). Can fail: classical filters, a ridge map and CNN "
               "checkpoints are not ordered by training time alone.")
    return Claim(id="C4", statement="Recovery quality and reasoning accuracy rank together",
                 metric=f"Spearman over {k} restorers between test SSIM and the frozen general model's accuracy on "
                        "their outputs (severity 5), mean over seeds",
                 measured={"spearman": est, "spearman_of_means": rho_means, "per_seed": ps,
                           "ssim": dict(zip(names, ssim_m.tolist())), "accuracy": dict(zip(names, acc_m.tolist()))},
                 threshold=f">= {SPEARMAN_MIN}", decision=d, kind="gate", details=details, paper=PAPER_RANKS,
                 per_seed=ps)
