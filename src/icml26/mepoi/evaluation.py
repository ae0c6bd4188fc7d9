"""The evaluation protocol shared by the CPU reproduction and the paper-scale path: probe jobs per (task, seed),
5-fold cross-fitting for the long-tail check, the propagation ceiling of the world, summary tables and figures.

Jobs are module-level functions of plain arguments so that `icml26.common.run_parallel` can ship them to worker
processes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from icml26.mepoi.probe import TASKS, EmbedProbe, make_splits

__all__ = ["probe_task_job", "crossfit_job", "propagation_ceiling", "collect", "score_table", "figure_scores",
           "figure_map"]

Arm = tuple[str, Any, Any]  # (modality, text table or None, poi table or None)


def _X(arm: Arm, idx: np.ndarray) -> dict[str, np.ndarray]:
    _, t, p = arm
    return {k: v[idx] for k, v in (("text", t), ("poi", p)) if v is not None}


def probe_task_job(task: str, seed: int, y: np.ndarray, arms: Mapping[str, Arm], sparse: np.ndarray,
                   probe_params: Mapping[str, Any], keep_preds: Sequence[str] = ("text", "poi", "both"),
                   split: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> dict[str, Any]:
    """Fit one probe per arm on the seed's 60/20/20 split; test metrics on all test POIs and on the sparse ones
    (`sparse` mask, <= 5 visits); test predictions of `keep_preds` arms for the paired bootstrap."""
    y = np.asarray(y)
    tr, va, te = split if split is not None else make_splits(len(y), seed)
    out: dict[str, Any] = {"task": task, "seed": seed, "scores": {}, "sparse_scores": {}, "preds": {},
                           "n_test": int(len(te)), "n_test_sparse": int(sparse[te].sum())}
    te_s = te[sparse[te]]
    for name, arm in arms.items():
        pr = EmbedProbe(arm[0], task, seed=seed, **probe_params).fit(_X(arm, tr), y[tr], _X(arm, va), y[va])
        prob = pr.predict_proba(_X(arm, te))
        out["scores"][name] = pr.metrics(_X(arm, te), y[te])
        if len(te_s) >= 5:
            out["sparse_scores"][name] = pr.metrics(_X(arm, te_s), y[te_s])
        if name in keep_preds:
            out["preds"][name] = prob
    out["y_test"] = y[te]
    return out


def crossfit_job(seed: int, y: np.ndarray, tables: Mapping[str, np.ndarray], probe_params: Mapping[str, Any],
                 n_folds: int = 5, task: str = "busyness") -> dict[str, Any]:
    """Per-POI T3 error of every table in `tables` with each POI predicted by a probe not trained on it
    (`n_folds`-fold cross-fitting over all POIs; 20 % of the other folds for early stopping)."""
    y = np.asarray(y)
    n = len(y)
    folds = np.random.default_rng(1000 + seed).permutation(n) % n_folds
    errs = {k: np.zeros(n) for k in tables}
    for f in range(n_folds):
        te = np.flatnonzero(folds == f)
        rest = np.random.default_rng(seed * 31 + f).permutation(np.flatnonzero(folds != f))
        va, tr = rest[: len(rest) // 5], rest[len(rest) // 5:]
        for k, E in tables.items():
            pr = EmbedProbe("poi", task, seed=seed, **probe_params).fit(E[tr], y[tr], E[va], y[va])
            errs[k][te] = np.abs(pr.predict(E[te]) - y[te]).mean(1)
    return {"seed": seed, "errs": errs}


def propagation_ceiling(y: np.ndarray, category_index: np.ndarray, prior: np.ndarray, visit_counts: np.ndarray,
                        probe_params: Mapping[str, Any], seed: int = 0) -> dict[str, float]:
    """Review note 6: cross-fitted T3 MAE on POIs with 1-5 visits of a probe on [true category one-hot,
    propagated prior] vs [true category one-hot] (a generator-side ceiling of what propagation can add)."""
    onehot = np.eye(int(category_index.max()) + 1)[category_index].astype(np.float32)
    res = crossfit_job(seed, y, {"cat": onehot, "cat+prior": np.concatenate([onehot, prior], 1).astype(np.float32)},
                       probe_params)
    m = (visit_counts >= 1) & (visit_counts <= 5)
    a, b = float(res["errs"]["cat"][m].mean()), float(res["errs"]["cat+prior"][m].mean())
    return {"category_only": a, "with_prior": b, "ratio": b / a, "n": int(m.sum())}


def collect(jobs: Sequence[Mapping[str, Any]], seeds: Sequence[int], metric_of: Mapping[str, str] | None = None
            ) -> tuple[dict, dict, dict]:
    """(scores[task][arm] = per-seed headline metric list, sparse[task][arm] = per-seed sparse-subgroup metric,
    preds[task][arm] = per-seed (y_test, pred_arm, pred_text) triples)."""
    metric_of = metric_of or {t: s.metric for t, s in TASKS.items()}
    scores: dict[str, dict[str, list[float]]] = {}
    sparse: dict[str, dict[str, list[float]]] = {}
    preds: dict[str, dict[str, list]] = {}
    for seed in seeds:
        for j in jobs:
            if j["seed"] != seed:
                continue
            t, m = j["task"], metric_of[j["task"]]
            for arm, v in j["scores"].items():
                scores.setdefault(t, {}).setdefault(arm, []).append(float(v[m]))
            for arm, v in j["sparse_scores"].items():
                sparse.setdefault(t, {}).setdefault(arm, []).append(float(v[m]))
            for arm, p in j["preds"].items():
                if arm != "text" and "text" in j["preds"]:
                    preds.setdefault(t, {}).setdefault(arm, []).append((j["y_test"], p, j["preds"]["text"]))
    return scores, sparse, preds


def score_table(scores: Mapping[str, Mapping[str, Sequence[float]]]) -> str:
    """Markdown table task x arm of mean +- sd over seeds."""
    arms = list(dict.fromkeys(a for s in scores.values() for a in s))
    lines = ["| task (metric) | " + " | ".join(arms) + " |", "|---|" + "---|" * len(arms)]
    for t, s in scores.items():
        cells = []
        for a in arms:
            v = np.asarray(s.get(a, []), float)
            cells.append(f"{v.mean():.3f} ± {v.std(ddof=1):.3f}" if len(v) > 1 else (f"{v[0]:.3f}" if len(v) else "-"))
        lines.append(f"| {t} ({TASKS[t].metric}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def figure_scores(scores: Mapping[str, Mapping[str, Sequence[float]]], arms: Sequence[str] = ("text", "poi", "both")):
    """Bar chart per task of the probes' mean test metric (error bars: sd over seeds)."""
    from icml26.common.plotting import new_figure

    tasks = [t for t in TASKS if t in scores]
    fig, axes = new_figure(ncols=len(tasks), width=2.6, height=3.0)
    axes = np.ravel(axes)
    for ax, t in zip(axes, tasks):
        vals = [np.asarray(scores[t].get(a, [np.nan]), float) for a in arms]
        ax.bar(range(len(arms)), [v.mean() for v in vals], yerr=[v.std(ddof=1) if len(v) > 1 else 0 for v in vals],
               color=["#7f7f7f", "#1f77b4", "#2ca02c", "#d62728", "#9467bd"][: len(arms)], capsize=3)
        ax.set_xticks(range(len(arms)), arms, rotation=30)
        ax.set_title(f"{t}\n{TASKS[t].metric}" + (" (lower better)" if not TASKS[t].higher_is_better else ""),
                     fontsize=9)
        lo = min(v.mean() for v in vals)
        hi = max(v.mean() for v in vals)
        ax.set_ylim(max(0.0, lo - 0.15 * (hi - lo + 0.05)), hi + 0.15 * (hi - lo + 0.05))
    fig.suptitle("Probe test scores: text only, ME-POIs only, text + ME-POIs (mean ± sd over seeds)")
    return fig


def figure_map(lat: np.ndarray, lon: np.ndarray, emb: np.ndarray, title: str):
    """POIs on the map coloured by the first three principal components of an embedding (as RGB)."""
    from icml26.common.plotting import new_figure

    x = emb - emb.mean(0)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    pc = x @ vt[:3].T
    lo, hi = np.percentile(pc, 2, axis=0), np.percentile(pc, 98, axis=0)
    rgb = np.clip((pc - lo) / np.maximum(hi - lo, 1e-9), 0, 1)
    fig, ax = new_figure(width=5.5, height=5.0)
    ax.scatter(lon, lat, c=rgb, s=9, linewidths=0)
    ax.set_xlabel("longitude")
    ax.set_ylabel("latitude")
    ax.set_title(title, fontsize=10)
    ax.set_aspect(1 / np.cos(np.radians(float(np.mean(lat)))))
    return fig
