"""The evaluation protocol shared by the CPU reproduction and the paper-scale path: probe jobs per (task, seed),
5-fold cross-fitting for the long-tail check, the propagation ceiling of the world, summary tables and figures.

Jobs are module-level functions of plain arguments so that `icml26.common.parallel.run_graph` can ship them to worker
processes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from icml26.mepoi.probe import TASKS, EmbedProbe, make_splits

__all__ = ["probe_task_job", "crossfit_job", "propagation_ceiling", "ceiling_tables", "ceiling_summary", "neighbour_usage", "prior_spread", "collect", "score_table", "figure_scores",
           "figure_map", "figure_losses"]

Arm = tuple[str, Any, Any]  # (modality, text table or None, poi table or None)


def _X(arm: Arm, idx: np.ndarray) -> dict[str, np.ndarray]:
    _, t, p = arm
    return {k: v[idx] for k, v in (("text", t), ("poi", p)) if v is not None}


def _better(task: str, a: float, b: float) -> bool:
    """Whether validation score `a` beats `b` for `task` (MAE: lower is better)."""
    if not np.isfinite(b):
        return bool(np.isfinite(a))
    return bool(a > b) if TASKS[task].higher_is_better else bool(a < b)


def probe_task_job(task: str, seed: int, y: np.ndarray, arms: Mapping[str, Arm], sparse: np.ndarray,
                   probe_params: Mapping[str, Any], keep_preds: Sequence[str] = (),
                   split: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
                   families: Sequence[str] = ("mlp", "linear")) -> dict[str, Any]:
    """Fit one probe per arm and probe family (MLP, linear) on the seed's 60/20/20 split; the family with the
    better validation metric is the arm's probe (`chosen`). Test metrics of the chosen probe on all test POIs
    (`scores`) and on the sparse ones (`sparse` mask, <= 5 visits); every family's validation and test headline
    metric (`by_family`); test predictions of the chosen probe for the `keep_preds` arms (for the bootstrap)."""
    y = np.asarray(y)
    tr, va, te = split if split is not None else make_splits(len(y), seed)
    out: dict[str, Any] = {"task": task, "seed": seed, "scores": {}, "sparse_scores": {}, "preds": {},
                           "chosen": {}, "by_family": {}, "val": {}, "n_test": int(len(te)),
                           "n_test_sparse": int(sparse[te].sum())}
    te_s = te[sparse[te]]
    metric = TASKS[task].metric
    for name, arm in arms.items():
        best, best_val = None, np.nan
        out["by_family"][name] = {}
        for fam in families:
            pr = EmbedProbe(arm[0], task, seed=seed, architecture=fam, **probe_params).fit(
                _X(arm, tr), y[tr], _X(arm, va), y[va])
            test = pr.metrics(_X(arm, te), y[te])
            out["by_family"][name][fam] = {"val": float(pr.val_score_), "test": float(test[metric])}
            if best is None or _better(task, pr.val_score_, best_val):
                best, best_val, best_test = pr, float(pr.val_score_), test
        out["chosen"][name] = best.architecture
        out["val"][name] = best_val
        out["scores"][name] = best_test
        if len(te_s) >= 5:
            out["sparse_scores"][name] = best.metrics(_X(arm, te_s), y[te_s])
        if name in keep_preds:
            out["preds"][name] = best.predict_proba(_X(arm, te))
    out["y_test"] = y[te]
    return out


def crossfit_job(seed: int, y: np.ndarray, tables: Mapping[str, np.ndarray], probe_params: Mapping[str, Any],
                 n_folds: int = 5, task: str = "busyness", families: Mapping[str, Sequence[str]] | None = None
                 ) -> dict[str, Any]:
    """Per-POI T3 error of every table in `tables` with each POI predicted by a probe not trained on it
    (`n_folds`-fold cross-fitting over all POIs; 20 % of the other folds for early stopping and for choosing the
    probe family among `families[table]`, default the MLP)."""
    y = np.asarray(y)
    n = len(y)
    folds = np.random.default_rng(1000 + seed).permutation(n) % n_folds
    errs = {k: np.zeros(n) for k in tables}
    for f in range(n_folds):
        te = np.flatnonzero(folds == f)
        rest = np.random.default_rng(seed * 31 + f).permutation(np.flatnonzero(folds != f))
        va, tr = rest[: len(rest) // 5], rest[len(rest) // 5:]
        for k, E in tables.items():
            best, best_val = None, np.nan
            for fam in (families or {}).get(k, ("mlp",)):
                pr = EmbedProbe("poi", task, seed=seed, architecture=fam, **probe_params).fit(E[tr], y[tr], E[va],
                                                                                             y[va])
                if best is None or _better(task, pr.val_score_, best_val):
                    best, best_val = pr, pr.val_score_
            errs[k][te] = np.abs(best.predict(E[te]) - y[te]).mean(1)
    return {"seed": seed, "errs": errs}


def neighbour_usage(latlon: np.ndarray, usage: np.ndarray, is_anchor: np.ndarray,
                    sigmas_km: Sequence[float] = (0.3, 1.0, 3.0)) -> np.ndarray:
    """The generator's true usage (e.g. T3 busyness labels) of each POI's anchor neighbours, Gaussian-weighted at
    each scale as propagation does (a POI never sees its own label): (n, K * usage_dim). What propagation could
    transfer if the anchors' curves were exact: the ceiling of propagation."""
    from icml26.mepoi.data import local_km
    from icml26.mepoi.usage import transfer_gaussian

    xy = local_km(latlon[:, 0], latlon[:, 1])
    a = np.flatnonzero(is_anchor)
    out = []
    for s in sigmas_km:
        t = transfer_gaussian(xy, xy[a], usage[a], s)
        for i in np.flatnonzero(is_anchor):  # an anchor's own label is excluded: leave-one-out weights
            d2 = ((xy[a] - xy[i]) ** 2).sum(1) / (2 * s * s)
            w = np.exp(-(d2 - d2[a != i].min()))
            w[a == i] = 0.0
            t[i] = (w / w.sum()) @ usage[a] if w.sum() > 0 else 0.0
        out.append(t)
    return np.concatenate(out, 1).astype(np.float32)


def prior_spread(transfer: np.ndarray, curves: np.ndarray, is_anchor: np.ndarray) -> dict[str, float]:
    """How much the propagated priors vary across sparse POIs (mean KL of each sparse POI's alpha = 0 mixture to
    the mean of those mixtures), next to the spread of the anchors' own curves: a propagation whose priors are all
    alike can only give the city average."""
    def spread(p: np.ndarray) -> float:
        if len(p) == 0:
            return float("nan")
        p = p / np.maximum(p.sum(1, keepdims=True), 1e-12)
        m = p.mean(0, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            kl = np.where(p > 0, p * np.log(np.maximum(p, 1e-12) / np.maximum(m, 1e-12)), 0.0).sum(1)
        return float(kl.mean())

    sparse = ~np.asarray(is_anchor, bool)
    mix = transfer[sparse].mean(1)
    return {"kl_sparse_priors_to_mean": spread(mix[mix.sum(1) > 0]),
            "kl_anchor_curves_to_mean": spread(curves[np.asarray(is_anchor, bool)]),
            "n_sparse": int(sparse.sum()), "n_anchors": int((~sparse).sum())}


def propagation_ceiling(y: np.ndarray, category_index: np.ndarray, prior: np.ndarray, visit_counts: np.ndarray,
                        probe_params: Mapping[str, Any], seed: int = 0, neighbours: np.ndarray | None = None,
                        families: Sequence[str] = ("mlp", "linear")) -> dict[str, Any]:
    """Review note 6 and issue 32: cross-fitted T3 errors on all POIs of probes on [true category one-hot],
    [category, propagated prior] and [category, true usage of the anchor neighbours] (`neighbours`, the ceiling
    of what propagation can add); the family chosen per fold on validation. Per-POI errors and the summary on
    POIs with 1-5 visits."""
    tables = ceiling_tables(category_index, prior, neighbours)
    res = crossfit_job(seed, y, tables, probe_params, families={k: tuple(families) for k in tables})
    return ceiling_summary(res["errs"], visit_counts)


def ceiling_tables(category_index: np.ndarray, prior: np.ndarray, neighbours: np.ndarray | None = None
                   ) -> dict[str, np.ndarray]:
    """The inputs of `propagation_ceiling`: [category one-hot], [category, prior], [category, true neighbours]."""
    onehot = np.eye(int(category_index.max()) + 1)[category_index].astype(np.float32)
    tables = {"cat": onehot, "cat+prior": np.concatenate([onehot, prior], 1).astype(np.float32)}
    if neighbours is not None:
        tables["cat+true_neighbours"] = np.concatenate([onehot, neighbours], 1).astype(np.float32)
    return tables


def ceiling_summary(errs: Mapping[str, np.ndarray], visit_counts: np.ndarray) -> dict[str, Any]:
    """Mean cross-fitted error per ceiling table on POIs with 1-5 visits, their number and the per-POI errors.
    (Cross-fitting is per table, so the tables can be cross-fitted in separate jobs with the same result.)"""
    m = (visit_counts >= 1) & (visit_counts <= 5)
    out: dict[str, Any] = {k: float(v[m].mean()) for k, v in errs.items()}
    out.update({"n": int(m.sum()), "errs": dict(errs)})
    return out


def collect(jobs: Sequence[Mapping[str, Any]], seeds: Sequence[int], metric_of: Mapping[str, str] | None = None
            ) -> dict[str, dict]:
    """Gather probe jobs by task and arm, in seed order:

    scores[task][arm] = per-seed test metric (chosen probe); sparse[task][arm] = the same on POIs with <= 5 visits;
    val[task][arm] = per-seed validation metric; chosen[task][arm] = per-seed probe family; by_family[task][arm]
    [family] = {"val": [...], "test": [...]}; preds[task][arm] = per-seed (y_test, pred) pairs."""
    metric_of = metric_of or {t: s.metric for t, s in TASKS.items()}
    out: dict[str, dict] = {k: {} for k in ("scores", "sparse", "val", "chosen", "by_family", "preds")}
    for seed in seeds:
        for j in jobs:
            if j["seed"] != seed:
                continue
            t, m = j["task"], metric_of[j["task"]]
            for arm, v in j["scores"].items():
                out["scores"].setdefault(t, {}).setdefault(arm, []).append(float(v[m]))
                out["val"].setdefault(t, {}).setdefault(arm, []).append(float(j["val"][arm]))
                out["chosen"].setdefault(t, {}).setdefault(arm, []).append(j["chosen"][arm])
                for fam, fv in j["by_family"][arm].items():
                    d = out["by_family"].setdefault(t, {}).setdefault(arm, {}).setdefault(fam, {"val": [], "test": []})
                    d["val"].append(fv["val"])
                    d["test"].append(fv["test"])
            for arm, v in j["sparse_scores"].items():
                out["sparse"].setdefault(t, {}).setdefault(arm, []).append(float(v[m]))
            for arm, p in j["preds"].items():
                out["preds"].setdefault(t, {}).setdefault(arm, []).append((j["y_test"], p))
    return out


def figure_losses(histories: Mapping[str, Sequence[Mapping[str, float]]]):
    """Training and held-out contrastive loss per epoch of each ME-POI training (the convergence record)."""
    from icml26.common.plotting import new_figure

    fig, ax = new_figure(width=6.0, height=3.6)
    for i, (tag, hist) in enumerate(histories.items()):
        ep = [h["epoch"] + 1 for h in hist]
        col = f"C{i % 10}"
        ax.plot(ep, [h["cl"] for h in hist], color=col, lw=1, alpha=0.6, label=f"{tag} train")
        if hist and "val_cl" in hist[0]:
            ax.plot(ep, [h["val_cl"] for h in hist], color=col, lw=1.8, ls="--", label=f"{tag} held-out")
    ax.set_xlabel("epoch")
    ax.set_ylabel("contrastive loss")
    ax.set_yscale("log")
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("ME-POI training until the held-out loss flattens (early stopping)", fontsize=10)
    return fig


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
               color=[f"C{i % 10}" for i in range(len(arms))], capsize=3)
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
