"""Where C6b's seed spread comes from (issue 39): DM(soft) - Random(soft) at IPC 1, variance components.

Calibration seeds only (default 100..103; the small run's evaluation seeds are 0..2). Per seed s: the teacher and
DM(IPC 1) as in the small run (`prepare_job`), then soft-label students, each trained with K student seeds
(k = 0 is the small run's training seed s; k > 0 use s + 1000 k), on
  - "random": Random's selection draws (draw_seed(s, j), j < n_draws),
  - "dm": the small run's DM images (random_state = s, its own random initial images),
  - "dm_paired": DM started from draw j's images (random_state = draw_seed(s, j)): the paired design,
so the per-seed difference splits into student noise (spread over k, everything else fixed), draw noise (spread
over Random's draws) and seed noise (teacher, DM, split: the rest of the spread over s).

    flock /tmp/icml26-cpu.lock .venv/bin/python benchmarks/dataset_compression_c6b_variance.py \
        --seeds 100,101,102,103 --k 4 --arms random,dm,dm_paired --out runs.json
    .venv/bin/python benchmarks/dataset_compression_c6b_variance.py --analyse runs.json [more.json ...]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from icml26.common import run_parallel
from icml26.dataset_compression.baselines import DistributionMatching, RandomSelector
from icml26.dataset_compression.benchmark import CompressedSet, evaluate
from icml26.dataset_compression.data import RESOLUTIONS
from icml26.dataset_compression.experiment import CONFIGS, _augment, _data, _factory, draw_seed, prepare_job
from icml26.dataset_compression.models import ConvNet, mlp_embedding_factory


def soft_student(seed: int, arm: str, draw: int, k: int, images, labels, teacher_state, cfg) -> dict:
    R = int(images.shape[-1])
    d = _data(cfg["dataset"], seed, R)
    teacher = ConvNet(1, 10, R, tuple(cfg["widths"]))
    teacher.load_state_dict(teacher_state)
    res = evaluate(CompressedSet(images, labels), d.X_test, d.y_test, model_factory=_factory(cfg, R),
                   augment=_augment("rrc", R, 1, cfg), label_mode="soft", teacher=teacher,
                   temperature=cfg["temperature"], steps=cfg["steps"], batch_size=cfg["batch_size"], lr=cfg["lr"],
                   weight_decay=cfg["weight_decay"], seed=seed if k == 0 else seed + 1000 * k)
    return {"seed": seed, "arm": arm, "draw": draw, "k": k, "acc": 100 * res["acc"], "time_s": res["time_s"]}


def measure(seeds: list[int], K: int, arms: list[str]) -> dict:
    cfg = {**CONFIGS["small"], "ipcs": [1]}
    t0 = time.perf_counter()
    prep = run_parallel(prepare_job, [{"kind": kind, "seed": s, "cfg": cfg} for s in seeds for kind in ("teacher", "dm")],
                        desc="prepare")
    P = {(p["seed"], p["kind"]): p for p in prep}
    jobs = []
    for s in seeds:
        d = _data(cfg["dataset"], s, RESOLUTIONS[cfg["dataset"]]["main"])
        emb = mlp_embedding_factory(int(np.prod(d.X_pool.shape[1:])), cfg["dm_width"], 2)
        ts = P[(s, "teacher")]["teacher_state"]
        sets = []
        if "dm" in arms:
            sets.append(("dm", 0, P[(s, "dm")]["images"][1], torch.arange(10)))
        for j in range(cfg["n_draws"]):
            idx = RandomSelector(draw_seed(s, j)).fit(d.X_pool, d.y_pool).select(1)
            if "random" in arms:
                sets.append(("random", j, d.X_pool[idx], d.y_pool[idx]))
            if "dm_paired" in arms:
                dm = DistributionMatching(1, cfg["dm_iters"], cfg["dm_lr"], batch_real=cfg["dm_batch_real"],
                                          embed_factory=emb, random_state=draw_seed(s, j))
                dm.fit(d.X_pool, d.y_pool, init_indices=idx)
                sets.append(("dm_paired", j, dm.images_, dm.labels_))
        for k in range(K):
            for arm, j, images, labels in sets:
                jobs.append(dict(seed=s, arm=arm, draw=j, k=k, images=images, labels=labels, teacher_state=ts,
                                 cfg=cfg))
    runs = run_parallel(soft_student, jobs, desc="soft students")
    return {"seeds": seeds, "K": K, "wall_s": time.perf_counter() - t0, "runs": runs,
            "teacher_acc": {str(s): P[(s, "teacher")]["teacher_acc"] for s in seeds}}


def analyse(runs: list[dict]) -> dict:
    """Variance components of one student's accuracy and of the per-seed C6b difference, in points."""
    A = {(r["seed"], r["arm"], r["draw"], r["k"]): r["acc"] for r in runs}
    seeds = sorted({r["seed"] for r in runs})
    K = 1 + max(r["k"] for r in runs)
    D = 1 + max(r["draw"] for r in runs if r["arm"] == "random")
    rnd = np.array([[[A[(s, "random", j, k)] for k in range(K)] for j in range(D)] for s in seeds])  # (S, D, K)
    out: dict = {"seeds": seeds, "K": K, "D": D, "mean_student_s": float(np.mean([r["time_s"] for r in runs]))}
    v_student_r = float(rnd.var(2, ddof=1).mean())  # one student, draw and seed fixed
    v_draw_r = float(rnd.var(1, ddof=1).mean()) - v_student_r  # between draws, beyond student noise
    out["random"] = {"sd_student": v_student_r ** 0.5, "sd_draw": max(v_draw_r, 0) ** 0.5,
                     "mean": float(rnd.mean())}
    for arm in ("dm", "dm_paired"):
        if not any(r["arm"] == arm for r in runs):
            continue
        K = 1 + max(r["k"] for r in runs if r["arm"] == arm)  # student seeds run for both arms
        if arm == "dm":
            a = np.array([[[A[(s, "dm", 0, k)] for k in range(K)]] * D for s in seeds])  # same DM for every draw
        else:
            a = np.array([[[A[(s, arm, j, k)] for k in range(K)] for j in range(D)] for s in seeds])
        diff = a - rnd[:, :, :K]  # (S, D, K): one (DM - Random) student pair at draw j, student seed k
        per_seed_k0 = diff[:, :, 0].mean(1)  # the small run's design: k = 0, mean over D draws
        v_within = float(diff.var(2, ddof=1).mean())  # student noise of one pair
        v_draw = float(diff.mean(2).var(1, ddof=1).mean()) - v_within / K if arm == "dm_paired" else float("nan")
        v_seed_total = float(diff.mean((1, 2)).var(ddof=1))  # spread of the per-seed mean over D x K pairs
        v_pair = v_within + (max(v_draw, 0) if arm == "dm_paired" else 0)
        out[arm] = {"mean_diff": float(diff.mean()), "per_seed_mean_diff": diff.mean((1, 2)).tolist(),
                    "per_seed_diff_k0": per_seed_k0.tolist(), "sd_arm_student": float(a.var(2, ddof=1).mean()) ** 0.5,
                    "sd_pair_student": v_within ** 0.5,
                    "sd_pair_draw": max(v_draw, 0) ** 0.5 if arm == "dm_paired" else None,
                    "sd_seed_of_mean": v_seed_total ** 0.5,
                    # seed component beyond the within-seed noise averaged in the mean (method of moments)
                    "sd_seed_component": max(0.0, v_seed_total - (v_within / (D * K) + (
                        max(v_draw, 0) / D if arm == "dm_paired" else v_draw_r / D))) ** 0.5,
                    "sd_one_pair": v_pair ** 0.5,
                    "K": K,
                    "corr_with_random": float(np.corrcoef(a.reshape(-1), rnd[:, :, :K].reshape(-1))[0, 1])}
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="100,101,102,103")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--arms", default="random,dm,dm_paired")
    ap.add_argument("--out", default="")
    ap.add_argument("--analyse", nargs="*")
    a = ap.parse_args()
    if a.analyse:
        runs = [r for f in a.analyse for r in json.load(open(f))["runs"]]
    else:
        m = measure([int(s) for s in a.seeds.split(",")], a.k, a.arms.split(","))
        if a.out:
            json.dump(m, open(a.out, "w"))
        print(f"wall {m['wall_s']:.0f} s, teacher {m['teacher_acc']}")
        runs = m["runs"]
    print(json.dumps(analyse(runs), indent=1))
