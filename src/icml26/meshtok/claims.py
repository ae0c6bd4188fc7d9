"""Claim checks of the MeshTok reproduction (spec section 6 as amended by its review notes) and its figures.

Gates: M1 rel-L2(MeshTok) <= 0.92 x Uniform-coarse, M2 <= 0.95 x Random-refine (both on seed means), M3 every
arm beats persistence (sanity: holds almost by construction with a residual head). Report only: M4 MeshTok vs
Uniform-fine (when run), D1-D3 diagnostics (gradient-energy share, shock fraction, rel-L2 inside/outside the
refined patches).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats as sps

from icml26.results import Claim

__all__ = ["ratio_check", "make_claims", "shock_fraction", "fig_error_vs_flops", "fig_refinement_maps",
           "PAPER_FIGURE"]

PAPER_FIGURE = ("no number accessible (only the abstract was readable): MeshTok 'consistently improves the "
                "efficiency-accuracy trade-off compared to uniform-grid baselines' on PDEBench / The Well / PDENNeval")


def _by(runs: list[dict], arm: str, key: str, seeds: list[int]) -> list[float]:
    d = {r["seed"]: r[key] for r in runs if r["arm"] == arm}
    return [float(d[s]) for s in seeds]


def ratio_check(num: list[float], den: list[float], threshold: float) -> dict[str, Any]:
    """Ratio of seed means num/den against `threshold` (held when <=), with per-seed ratios, a t-interval over
    seeds of the per-seed ratio (95 %, n - 1 df; None for one seed) and a decidability flag.

    `decidable` is False with one seed, or when the per-seed ratios straddle the threshold or the interval
    contains it.
    """
    a, b = np.asarray(num, float), np.asarray(den, float)
    if a.shape != b.shape or a.size == 0:
        raise ValueError("num and den must be non-empty and the same length (one value per seed)")
    per = a / b
    ratio = float(a.mean() / b.mean())
    ci = None
    if per.size > 1:
        half = float(sps.t.ppf(0.975, per.size - 1) * per.std(ddof=1) / math.sqrt(per.size))
        ci = (float(per.mean() - half), float(per.mean() + half))
    straddle = bool(per.min() <= threshold < per.max())
    inside = ci is not None and ci[0] <= threshold <= ci[1]
    return {"ratio": ratio, "per_seed": per.tolist(), "ci95": ci, "held": bool(ratio <= threshold),
            "decidable": per.size > 1 and not (straddle or inside), "threshold": threshold}


def _decide_text(chk: dict[str, Any]) -> str:
    per = ", ".join(f"{v:.3f}" for v in chk["per_seed"])
    ci = "" if chk["ci95"] is None else f"; 95 % t-interval over seeds of the per-seed ratio [{chk['ci95'][0]:.3f}, " \
                                       f"{chk['ci95'][1]:.3f}]"
    if chk["decidable"]:
        verdict = ""
    elif len(chk["per_seed"]) < 2:
        verdict = " CANNOT DECIDE: one seed, so the seed-to-seed spread is unknown."
    else:
        verdict = (" CANNOT DECIDE at this size: the per-seed ratios or their interval straddle the threshold "
                   f"{chk['threshold']}, so the verdict from the seed means is not informative.")
    return f"per-seed ratios {per}{ci}.{verdict}"


def make_claims(runs: list[dict], seeds: list[int], arms: list[str], data_diag: dict[str, float]) -> list[Claim]:
    """The claims from the per-(arm, seed) training runs (dicts from `train.train_arm`)."""
    claims: list[Claim] = []
    e = {a: _by(runs, a, "rel_l2", seeds) for a in arms}
    em = {a: float(np.mean(v)) for a, v in e.items()}
    gf = {a: float(np.mean(_by(runs, a, "gflops_window", seeds))) for a in arms}
    tok = {a: int(_by(runs, a, "tokens_per_frame", seeds)[0]) for a in arms}
    per_arm = "; ".join(f"{a} {em[a]:.4f} (seeds {', '.join(f'{v:.4f}' for v in e[a])}), {tok[a]} tokens/frame, "
                        f"{gf[a]:.3f} GFLOPs/window" for a in arms)
    if "coarse" in arms:
        c = ratio_check(e["meshtok"], e["coarse"], 0.92)
        claims.append(Claim(
            id="M1", statement="Adaptive refinement lowers next-frame error versus the uniform coarse grid.",
            metric="test one-step rel-L2 ratio MeshTok / Uniform-coarse (seed means)", measured={
                "ratio": c["ratio"], "meshtok": em["meshtok"], "coarse": em["coarse"],
                "token_ratio": tok["meshtok"] / tok["coarse"], "gflops_ratio": gf["meshtok"] / gf["coarse"],
                "decidable": c["decidable"], "ci95": c["ci95"]},
            threshold="<= 0.92", held=c["held"], gate=True, paper=PAPER_FIGURE, per_seed=c["per_seed"],
            details=f"{_decide_text(c)} Uniform-coarse uses {tok['meshtok'] / tok['coarse']:.2f}x fewer tokens and "
                    f"{gf['meshtok'] / gf['coarse']:.2f}x fewer GFLOPs per window, so this ratio alone does not show a "
                    f"better trade-off (M2 is the equal-cost test). The issue's wording (<= 0.90x) "
                    f"{'holds' if c['ratio'] <= 0.90 else 'does not hold'} at ratio {c['ratio']:.3f}. Can fail: yes "
                    f"(a tokenizer that refines the wrong patches or a model that does not use the fine tokens gives a "
                    f"ratio near 1). Arms: {per_arm}."))
    if "random" in arms:
        c = ratio_check(e["meshtok"], e["random"], 0.95)
        claims.append(Claim(
            id="M2", statement="The physical indicator beats random refinement at the same token count.",
            metric="test one-step rel-L2 ratio MeshTok / Random-refine (seed means), both 112-token arms",
            measured={"ratio": c["ratio"], "meshtok": em["meshtok"], "random": em["random"],
                      "token_ratio": tok["meshtok"] / tok["random"], "gflops_ratio": gf["meshtok"] / gf["random"],
                      "decidable": c["decidable"], "ci95": c["ci95"]},
            threshold="<= 0.95", held=c["held"], gate=True, paper=PAPER_FIGURE, per_seed=c["per_seed"],
            details=f"{_decide_text(c)} Equal tokens ({tok['meshtok']} vs {tok['random']}) and FLOPs "
                    f"({gf['meshtok']:.3f} vs {gf['random']:.3f} GFLOPs/window: the indicator's stencils are the only "
                    "difference). Can fail: yes (if where the tokens go does not matter, the ratio is ~1)."))
    per_ok = {a: bool(np.all(np.asarray(e[a]) < np.asarray(_by(runs, a, "persistence", seeds)))) for a in arms}
    pers = float(np.mean(_by(runs, arms[0], "persistence", seeds)))
    claims.append(Claim(
        id="M3", statement="Every arm beats persistence (u_{t+1} = u_t) on the test frames.",
        metric="test one-step rel-L2 per arm and seed vs persistence", measured={
            "persistence": pers, **{a: em[a] for a in arms}},
        threshold="every arm < persistence on every seed", held=all(per_ok.values()), gate=True,
        paper="sanity check (not a paper claim)",
        per_seed=[float(v) for v in _by(runs, "meshtok", "rel_l2", seeds)],
        details="SANITY: with the residual head a zero output is persistence, so this holds almost by construction "
                "once training does anything; it fails only for a broken model or training loop. Per arm: "
                + ", ".join(f"{a} {'<' if per_ok[a] else 'NOT <'} persistence" for a in arms) + "."))
    if "fine" in arms:
        fr = gf["meshtok"] / gf["fine"]
        er = em["meshtok"] / em["fine"]
        claims.append(Claim(
            id="M4", statement="MeshTok approaches the uniform fine grid's accuracy at a fraction of its cost.",
            metric="GFLOPs and rel-L2 ratios MeshTok / Uniform-fine", measured={
                "gflops_ratio": fr, "rel_l2_ratio": er, "token_ratio": tok["meshtok"] / tok["fine"]},
            threshold="report: GFLOPs ratio <= 0.6 and rel-L2 ratio <= 1.15", held=bool(fr <= 0.6 and er <= 1.15),
            gate=False, paper=PAPER_FIGURE,
            per_seed=[a / b for a, b in zip(e["meshtok"], e["fine"])],
            details=f"Uniform-fine: {em['fine']:.4f}, {tok['fine']} tokens/frame, {gf['fine']:.3f} GFLOPs/window. "
                    "Report only (optional arm in the spec). At CPU scale the full-resolution decoder dominates the "
                    "FLOPs, so the token saving shows less in FLOPs than at paper scale."))
    if "random" in arms:
        gs = {a: float(np.mean(_by(runs, a, "grad_energy_share", seeds))) for a in ("meshtok", "random")}
        claims.append(Claim(
            id="D1", statement="The physical indicator puts the refined tokens where the gradient energy is.",
            metric="share of sum |grad u|^2 inside the arm's refined patches (last input frame)",
            measured=gs, threshold="report (physical >> random; random ~ K / n^2 by construction)",
            held=bool(gs["meshtok"] > gs["random"]), gate=False, paper="diagnostic (review note 3)",
            details="Random's share is ~25 % by construction; a high physical share with no error gain would point "
                    "at the model, not the indicator."))
    claims.append(Claim(
        id="D2", statement="Shocks occupy a minority of patches (refinement has something to prioritise).",
        metric="fraction of coarse patches with a per-cell jump > 0.2 (test input frames)",
        measured=data_diag, threshold="report (spec section 9: well under 25 %)",
        held=bool(data_diag["shock_patch_fraction"] < 0.25), gate=False, paper="diagnostic (review note 3)",
        details="Data property, not a model result."))
    ins = {a: {"inside": float(np.mean(_by(runs, a, "rel_l2_inside", seeds))),
               "outside": float(np.mean(_by(runs, a, "rel_l2_outside", seeds)))} for a in arms}
    claims.append(Claim(
        id="D3", statement="Where the gain comes from: error inside vs outside the physically refined patches.",
        metric="rel-L2 restricted to the physical indicator's top-K patches of the last input frame (same region "
               "for every arm) and to the rest", measured=ins,
        threshold="report", held=bool("coarse" in arms and ins["meshtok"]["inside"] < ins["coarse"]["inside"]),
        gate=False, paper="diagnostic (review note 3)",
        details="held = MeshTok's inside error below Uniform-coarse's (report only)."))
    return claims


def shock_fraction(data: np.ndarray, patch: int, jump: float = 0.2) -> float:
    """Fraction of (frame, patch) pairs with a neighbour-cell jump > `jump` (periodic), data (N, T, H, W, C)."""
    u = np.asarray(data, np.float32)
    j = np.maximum(np.abs(np.roll(u, -1, 3) - u), np.abs(np.roll(u, -1, 2) - u)).max(-1)
    N, T, H, W = j.shape
    J = j.reshape(N, T, H // patch, patch, W // patch, patch).max(axis=(3, 5))
    return float((J > jump).mean())


def fig_error_vs_flops(runs: list[dict], seeds: list[int], arms: list[str], persistence: float):
    from icml26.common.plotting import new_figure

    fig, ax = new_figure()
    names = {"meshtok": "MeshTok", "random": "Random-refine", "coarse": "Uniform-coarse", "fine": "Uniform-fine"}
    for i, a in enumerate(arms):
        e = np.array(_by(runs, a, "rel_l2", seeds))
        g = float(np.mean(_by(runs, a, "gflops_window", seeds)))
        tok = int(_by(runs, a, "tokens_per_frame", seeds)[0])
        col = f"C{i}"
        ax.errorbar([g], [e.mean()], yerr=[e.std(ddof=1) if e.size > 1 else 0], fmt="o", capsize=4, color=col,
                    label=f"{names.get(a, a)} ({tok} tok/frame)")
        ax.scatter([g] * e.size, e, s=10, alpha=0.5, color=col)
    ax.axhline(persistence, ls=":", color="grey", label="persistence")
    ax.set_xlabel("GFLOPs per forward window (B = 1, 4 frames, incl. attention)")
    ax.set_ylabel("test one-step rel-L2")
    ax.set_title("error vs FLOPs per tokenization (mean +- std over seeds; dots: seeds)")
    ax.legend(fontsize=8)
    return fig


def fig_refinement_maps(frames: np.ndarray, refined: dict[str, np.ndarray], patch: int):
    """frames (M, H, W) scalar fields; refined: name -> (M, n*n) bool masks. One row per frame, one column per
    selection rule, refined patches outlined."""
    from matplotlib.patches import Rectangle

    from icml26.common.plotting import new_figure

    M = frames.shape[0]
    names = list(refined)
    fig, axes = new_figure(nrows=M, ncols=len(names), width=3.2, height=3.0)
    axes = np.atleast_2d(np.asarray(axes).reshape(M, len(names)))
    n = frames.shape[1] // patch
    for i in range(M):
        for j, name in enumerate(names):
            ax = axes[i, j]
            ax.imshow(frames[i], cmap="RdBu_r", origin="upper")
            for p in np.flatnonzero(refined[name][i]):
                r, c = divmod(int(p), n)
                ax.add_patch(Rectangle((c * patch - 0.5, r * patch - 0.5), patch, patch, fill=False, lw=1.2,
                                       ec="k"))
            ax.set_xticks([]), ax.set_yticks([])
            if i == 0:
                ax.set_title(name)
    return fig
