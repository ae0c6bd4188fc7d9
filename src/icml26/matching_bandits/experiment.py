"""Reproduction of spec section 6 (CPU) and the paper-scale configuration (section 7).

Instance families (seeds seed..seed+n_seeds-1; each seed draws its own market):
  E1 finite gap (Delta >= 0.1), E2 gap dependence (Delta >= 0.06 vs >= 0.2), E3 continuous (sphere),
  E4 adversarial (near-tie + subspace switch). Every (instance, policy, seed) is one job; jobs run as parallel
  single-thread processes (`icml26.common.run_parallel`), or with joblib / Ray for large sweeps
  (``backend``). Each job returns a compact summary (curves at log-spaced checkpoints), not the whole trace.

Claims (spec section 6): C1 poly-log regret, C2 adaptivity vs ETC(300), C3 instance dependence of refine rounds,
C4 adversarial sublinearity of the instability regret; reported, not gated: E3 growth exponents and the
Greedy/Optimistic vs Adaptive comparison. Deviation (stated in the claims): the welfare gap sum_i R_i(T) can be
negative (unstable matchings can over-serve players; spec pitfall), so C1's ratio is taken on absolute values and
C2 is also checked on the absolute stable regret sum_t sum_i |r_{t,i}|, which cannot be negative.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from icml26.common import run_parallel, stats
from icml26.common.plotting import new_figure
from icml26.common.validation import check_choice, check_float, check_int, check_seed, require_keys
from icml26.matching_bandits.data import make_market, make_policy
from icml26.matching_bandits.simulation import fit_growth_exponent, simulate
from icml26.results import Claim, Result

SLUG = "matching_bandits"
ALL = ["adaptive", "optimistic", "greedy", "etc20", "etc300", "random", "oracle"]
_MARKET = {"n_players": 3, "n_arms": 4, "dim": 3, "n_prototypes": 6, "noise": 0.2}


def _instances(period: int) -> dict[str, dict[str, Any]]:
    return {
        "E1": {**_MARKET, "contexts": "finite", "min_gap": 0.1, "policies": ALL + ["adaptive_opt"]},
        "E2_gap0.06": {**_MARKET, "contexts": "finite", "min_gap": 0.06, "policies": ["adaptive", "optimistic"]},
        "E2_gap0.2": {**_MARKET, "contexts": "finite", "min_gap": 0.2, "policies": ["adaptive", "optimistic"]},
        "E3": {**_MARKET, "contexts": "sphere", "policies": ALL},
        "E4": {**_MARKET, "contexts": "adversarial", "period": period, "eps": 0.01, "spread": 0.3,
               "policies": ALL},
    }


def _paper_instances() -> dict[str, dict[str, Any]]:
    big = {"n_players": 50, "n_arms": 75, "dim": 20, "noise": 0.2}
    pol = ["adaptive", "optimistic", "greedy", "etc300", "etc2000", "random", "oracle"]
    out: dict[str, dict[str, Any]] = {}
    for g in (0.0025, 0.005, 0.01, 0.02):  # gap sweep on a log grid (rejection sampling limits Delta at this size)
        out[f"E2_gap{g}"] = {"n_players": 10, "n_arms": 12, "dim": 10, "n_prototypes": 16, "noise": 0.2,
                             "contexts": "finite", "min_gap": g, "policies": ["adaptive", "optimistic", "greedy"]}
    for bench in ("players", "arms"):
        sfx = "" if bench == "players" else "_pessimal"
        out["E1" + sfx] = {"n_players": 10, "n_arms": 12, "dim": 10, "n_prototypes": 16, "noise": 0.2,
                           "contexts": "finite", "min_gap": 0.01, "benchmark": bench, "policies": pol}
        out["E3" + sfx] = {**big, "contexts": "sphere", "benchmark": bench, "policies": pol}
        out["E4" + sfx] = {**big, "contexts": "adversarial", "period": 25_000, "eps": 0.01, "spread": 0.3,
                           "benchmark": bench, "policies": pol}
    return out


CONFIGS: dict[str, dict[str, Any]] = {
    "smoke": {"seed": 0, "n_seeds": 2, "T": 240, "beta_scale": 0.5, "lam": 1.0, "workers": 1,
              "backend": "processes", "instances": _instances(period=60), "c2_seeds": 3},
    # C2 compares two arms whose per-seed ratio spreads widely (sd ~0.3 at 5 seeds): its E1 Adaptive / ETC(300)
    # pair runs on c2_seeds markets (the n_seeds ones plus extra seeds; ~5 s of CPU per extra seed)
    "small": {"seed": 0, "n_seeds": 5, "T": 8000, "beta_scale": 0.5, "lam": 1.0, "workers": 2,
              "backend": "processes", "instances": _instances(period=2000), "c2_seeds": 25},
    # Where small leaves C2 / C4 inconclusive (small's hints: ~160 markets for C2, ~6 seeds for C4): the same
    # experiment on 10 seeds, C2's Adaptive / ETC(300) pair on 200 E1 markets (~5 s of CPU each): ~15 min on
    # 2 cores. CPU-bound numpy: no GPU path.
    "medium": {"seed": 0, "n_seeds": 10, "T": 8000, "beta_scale": 0.5, "lam": 1.0, "workers": 2,
               "backend": "processes", "instances": _instances(period=2000), "c2_seeds": 200},
    # Spec section 7: N up to 50, K = 1.5 N, d = 20, T = 1e5, 50 seeds, theory radius c_beta = 1, gap sweep on a log
    # grid, player- and arm-optimal benchmarks. Not run in CI; CPU-bound (no GPU needed). workers = 0: all CPUs;
    # --set backend=joblib (pip install joblib) or backend=ray (pip install ray; one ray.remote task per job).
    "paper": {"seed": 0, "n_seeds": 50, "T": 100_000, "beta_scale": 1.0, "lam": 1.0, "workers": 0,
              "backend": "processes", "instances": _paper_instances(), "c2_seeds": 50},
}


# ---------------------------------------------------------------------------------------------- one job
def _checkpoints(T: int) -> np.ndarray:
    grid = np.geomspace(min(10, T), T, 40).astype(np.int64)
    extra = [max(1, T // 8), max(1, T // 4), max(1, T // 2), T]
    return np.unique(np.concatenate([grid, extra]))


def run_job(instance: str, spec: dict[str, Any], policy: str, seed: int, T: int, beta_scale: float,
            lam: float) -> dict[str, Any]:
    """Simulate one (instance, policy, seed); returns curves at `_checkpoints(T)` and scalars (module-level so
    that process pools can pickle it)."""
    env = make_market(spec, seed)
    pol = make_policy(policy, env, beta_scale=beta_scale, lam=lam)
    t0 = time.perf_counter()
    tr = simulate(env, pol, T, seed=seed)
    wall = time.perf_counter() - t0
    cps = _checkpoints(T)
    reg = tr.cumulative_regret()
    late = tr.refined[T - T // 4:]
    return {
        "instance": instance, "policy": policy, "seed": seed, "T": T, "wall_s": wall,
        "min_gap": env.min_gap, "checkpoints": cps.tolist(),
        "sum_regret": reg[cps - 1].tolist(),
        "max_regret": tr.max_player_regret()[cps - 1].tolist(),
        "abs_regret": np.cumsum(np.abs(tr.stable_regret).sum(axis=1))[cps - 1].tolist(),
        "instability": tr.cumulative_instability()[cps - 1].tolist(),
        "n_refine_curve": np.cumsum(tr.refined)[cps - 1].tolist(),
        "n_refine": int(tr.refined.sum()), "n_refine_last_quarter": int(late.sum()), "last_quarter_rounds": late.size,
        "last_refine_round": int(np.nonzero(tr.refined)[0].max() + 1) if tr.refined.any() else 0,
        "mismatch_rounds": int(np.any(tr.matches != tr.benchmark, axis=1).sum()),
    }


def _execute(jobs: list[dict[str, Any]], backend: str, workers: int) -> list[dict[str, Any]]:
    if backend == "processes":
        return run_parallel(run_job, jobs, workers=workers or None, desc=f"{SLUG}: {len(jobs)} runs")
    if backend == "joblib":
        try:
            from joblib import Parallel, delayed
        except ModuleNotFoundError as e:
            raise ModuleNotFoundError("backend='joblib' needs joblib: pip install joblib", name="joblib") from e

        return Parallel(n_jobs=workers or -1, verbose=5)(delayed(run_job)(**j) for j in jobs)
    if backend == "ray":
        try:
            import ray
        except ModuleNotFoundError as e:
            raise ModuleNotFoundError("backend='ray' needs ray: pip install 'ray[default]'", name="ray") from e

        if not ray.is_initialized():
            ray.init()
        remote = ray.remote(num_cpus=1)(run_job)
        return ray.get([remote.remote(**j) for j in jobs])
    raise ValueError(f"backend must be 'processes', 'joblib' or 'ray', got {backend!r}")


# ---------------------------------------------------------------------------------------------- analysis
def _at(summary: dict[str, Any], key: str, t: int) -> float:
    return float(summary[key][summary["checkpoints"].index(t)])


def _slope(T_pts: list[int], vals: list[float]) -> float:
    vals = np.asarray(vals, dtype=float)
    if np.any(vals <= 0):
        return float("nan")
    return fit_growth_exponent(T_pts, vals)


def _median_curve(runs: list[dict[str, Any]], key: str) -> np.ndarray:
    return np.median(np.asarray([r[key] for r in runs], dtype=float), axis=0)


N_BOOT = 2000  # bootstrap resamples per interval (the tests lower it: each resample calls a Python statistic)


def _boot(arrays: tuple[list[float], ...], statistic, paired: bool = True) -> stats.Interval:
    """Bootstrap over seeds (markets) of `statistic(*arrays)`, paired when the arrays come from the same markets;
    fewer than 2 seeds cannot bound anything."""
    if min(len(a) for a in arrays) < 2:
        return stats.Interval(-np.inf, np.inf, n=min(len(a) for a in arrays))
    return stats.bootstrap_interval(tuple(np.asarray(a, dtype=float) for a in arrays), statistic, paired=paired,
                                    n_resamples=N_BOOT)


def _claims(by: dict[tuple[str, str], list[dict[str, Any]]], T: int,
            extra: dict[tuple[str, str], list[dict[str, Any]]] | None = None) -> tuple[list[Claim], dict[str, Any]]:
    """Every claim from the per-run summaries. Verdicts come from icml26.common.stats: per-seed quantities with
    a t interval over seeds, medians (the spec's statistics) with a paired bootstrap over seeds. `extra`: C2's
    additional E1 markets."""
    claims: list[Claim] = []
    metrics: dict[str, Any] = {}
    extra = extra or {}
    half, quarter, eighth = T // 2, T // 4, T // 8

    def med(inst, pol, key, t=T):
        return float(np.median([_at(r, key, t) for r in by[(inst, pol)]]))

    # ---- C1 poly-log regret on E1
    if ("E1", "adaptive") in by and ("E1", "random") in by:
        ad = by[("E1", "adaptive")]
        incs = [abs(_at(r, "sum_regret", T) - _at(r, "sum_regret", half)) for r in ad]
        tots = [abs(_at(r, "sum_regret", T)) for r in ad]
        inc_ratio = [i / max(t, 1e-12) for i, t in zip(incs, tots)]
        late_seed = [r["n_refine_last_quarter"] / max(r["last_quarter_rounds"], 1) for r in ad]
        late = sum(r["n_refine_last_quarter"] for r in ad) / sum(r["last_quarter_rounds"] for r in ad)
        d1 = stats.all_of(
            stats.decide(float(np.mean(inc_ratio)), stats.t_interval(inc_ratio), 0.10, "<=",
                         label="Adaptive |R(T)-R(T/2)|/|R(T)| <= 0.10"),
            stats.decide(float(np.mean(late_seed)), stats.t_interval(late_seed), 0.01, "<=",
                         label="Adaptive late refine fraction <= 0.01"), label="C1")
        claims.append(Claim(
            "C1", "In a finite-gap market the adaptive algorithm stops refining and its stable regret flattens "
                  "(poly-log).",
            "E1: |R(T)-R(T/2)|/|R(T)| of Adaptive and its refine fraction in the last quarter, mean over seeds",
            {"adaptive_seeds_flat": int(sum(v <= 0.10 for v in inc_ratio)), "n_seeds": len(ad),
             "adaptive_late_increment_ratio_mean": float(np.mean(inc_ratio)),
             "adaptive_late_increment_ratio_median": float(np.median(inc_ratio)),
             "adaptive_late_refine_fraction": late},
            "mean over seeds: increment ratio <= 0.10 and late refine fraction <= 0.01 (Random's linear growth: the "
            "sanity claim C1-random)", decision=d1, kind="gate",
            details=d1.text() + f". Adaptive R(T) per seed {[round(_at(r, 'sum_regret', T), 1) for r in ad]}, R(T/2) "
                    f"{[round(_at(r, 'sum_regret', half), 1) for r in ad]}, increment ratio per seed "
                    f"{[round(v, 3) for v in inc_ratio]}, refine rounds "
                    f"{[r['n_refine'] for r in ad]}, last refine round {[r['last_refine_round'] for r in ad]}; "
                    "|.| because sum_i R_i can be negative (spec pitfall). Can fail: flatness and late refinement. "
                    "The spec counts flat seeds (>= 4 of 5); a count has no interval, so the mean over seeds "
                    "decides.",
            paper="instance-dependent poly-log regret (theorem; no empirical figure accessible)",
            per_seed=inc_ratio))
        rnd = by[("E1", "random")]
        r_ratio = [(_at(r, "sum_regret", T) - _at(r, "sum_regret", half)) / max(_at(r, "sum_regret", T), 1e-12)
                   for r in rnd]
        dr = stats.decide(float(np.mean(r_ratio)), stats.t_interval(r_ratio), 0.40, ">=",
                          label="Random (R(T)-R(T/2))/R(T) >= 0.40")
        claims.append(Claim(
            "C1-random", "Random matching's stable regret grows linearly (the flatness test separates the regimes).",
            "E1: Random's (R(T)-R(T/2))/R(T), mean over seeds", {"mean": float(np.mean(r_ratio))}, ">= 0.40",
            decision=dr, kind="sanity", per_seed=r_ratio, paper="no figure (a control of our check)",
            details=dr.text() + ". Sanity (holds by construction of a uniformly random matching: about 0.5)."))

    # ---- C2 adaptivity vs a mis-sized ETC, on the n_seeds markets plus C2's extra ones (paired per market)
    if ("E1", "adaptive") in by and ("E1", "etc300") in by:
        ad2 = sorted(by[("E1", "adaptive")] + extra.get(("E1", "adaptive"), []), key=lambda r: r["seed"])
        et2 = sorted(by[("E1", "etc300")] + extra.get(("E1", "etc300"), []), key=lambda r: r["seed"])
        assert [r["seed"] for r in ad2] == [r["seed"] for r in et2], "C2 pairs Adaptive and ETC on the same markets"
        sa, se = [_at(r, "sum_regret", T) for r in ad2], [_at(r, "sum_regret", T) for r in et2]
        aa_, ae = [_at(r, "abs_regret", T) for r in ad2], [_at(r, "abs_regret", T) for r in et2]

        def ratio_of_medians(x, y):
            return float(np.median(x) / np.median(y))

        a, e = float(np.median(sa)), float(np.median(se))
        aa, ea = float(np.median(aa_)), float(np.median(ae))
        cost = float(np.mean([r["wall_s"] for r in ad2 + et2])) * 2
        d2 = stats.all_of(
            stats.decide(a / e, _boot((sa, se), ratio_of_medians), 0.35, "<=", label="sum_i R_i ratio <= 0.35",
                         cost_per_unit_s=cost),
            stats.decide(aa / ea, _boot((aa_, ae), ratio_of_medians), 0.35, "<=",
                         label="absolute-regret ratio <= 0.35", cost_per_unit_s=cost), label="C2")
        per_seed = [x / max(y, 1e-12) for x, y in zip(aa_, ae)]
        claims.append(Claim(
            "C2", "Without knowing the gap or the horizon, the adaptive algorithm beats explore-then-commit with a "
                  "mis-sized exploration length.",
            "E1: median R(T) of Adaptive / median R(T) of ETC(T0=300); same for the absolute stable regret",
            {"ratio_sum_regret": a / e, "ratio_abs_regret": aa / ea, "adaptive_R": a, "etc300_R": e,
             "adaptive_abs": aa, "etc300_abs": ea, "n_markets": len(ad2)},
            "both ratios <= 0.35", decision=d2, kind="gate",
            paper="fully adaptive: no knowledge of the gap or the horizon (qualitative; no comparison figure "
                  "accessible)",
            per_seed=per_seed,
            details=d2.text() + f". {len(ad2)} markets (seeds), Adaptive and ETC(300) on the same market per seed; "
                    "the interval is a paired bootstrap over markets of the ratio of medians (the spec's "
                    f"statistic); about {cost:.1f} s of CPU per market. Per seed absolute-regret ratio "
                    f"{[round(v, 3) for v in per_seed]}. Can fail: both ratios (nothing here holds by construction); "
                    "the absolute-regret ratio is required too because sum_i R_i can be negative. Each forced "
                    "refine round costs regret; "
                    + (f"ETC(20) median R(T) = {med('E1', 'etc20', 'sum_regret'):.1f} (a well-sized ETC is strong, "
                       "but sizing T0 needs Delta and T)." if ("E1", "etc20") in by else "")
                    + ("" if d2.decided else " Inconclusive here: `icml26 run matching_bandits --scale medium` runs "
                       "C2 on 200 markets (about 15 min on 2 cores in all).")))

    # ---- C3 instance dependence: the E2 instances with the smallest and the largest requested gap
    e2 = sorted((float(i.split("gap", 1)[1]), i) for (i, p) in by if i.startswith("E2_gap") and p == "adaptive")
    if len(e2) >= 2:
        (g_lo, i_lo), (g_hi, i_hi) = e2[0], e2[-1]
        k_lo, k_hi = i_lo.replace("E2_", ""), i_hi.replace("E2_", "")
        lo, hi = by[(i_lo, "adaptive")], by[(i_hi, "adaptive")]
        n_lo = float(np.median([r["n_refine"] for r in lo]))
        n_hi = float(np.median([r["n_refine"] for r in hi]))
        r_lo, r_hi = [float(r["n_refine"]) for r in lo], [float(r["n_refine"]) for r in hi]
        # different markets per gap (each seed draws its own): an unpaired bootstrap of the ratio of medians
        iv3 = _boot((r_hi, r_lo), lambda h, l_: float(np.median(h) / max(np.median(l_), 1e-12)), paired=False)
        d3 = stats.decide(n_hi / max(n_lo, 1e-12), iv3, 0.6, "<=", label="C3")
        claims.append(Claim(
            "C3", "The regret/refinement cost is governed by the minimum preference gap: a larger gap needs fewer "
                  "refine rounds.",
            f"E2: median refine rounds of Adaptive at Delta>={g_hi:g} / at Delta>={g_lo:g}",
            {"ratio": n_hi / max(n_lo, 1e-12), f"n_refine_{k_lo}": n_lo, f"n_refine_{k_hi}": n_hi,
             f"realised_gap_{g_lo:g}": float(np.median([r["min_gap"] for r in lo])),
             f"realised_gap_{g_hi:g}": float(np.median([r["min_gap"] for r in hi])),
             f"R_{k_lo}": med(i_lo, "adaptive", "sum_regret"),
             f"R_{k_hi}": med(i_hi, "adaptive", "sum_regret")},
            "ratio <= 0.6", decision=d3, kind="gate",
            paper="regret governed by the minimum preference gap (instance-dependent bound; no number accessible)",
            details=d3.text() + ". Can fail: the ratio of medians (different markets per gap; each seed draws its "
                    f"own). Refine rounds per seed: {k_lo} {[r['n_refine'] for r in lo]} (Delta "
                    f"{[round(r['min_gap'], 3) for r in lo]}), {k_hi} {[r['n_refine'] for r in hi]} (Delta "
                    f"{[round(r['min_gap'], 3) for r in hi]}); last refine round {k_lo} "
                    f"{[r['last_refine_round'] for r in lo]}, {k_hi} {[r['last_refine_round'] for r in hi]} of T={T}",
            per_seed=r_hi))

    # ---- C4 adversarial
    if all(("E4", p) in by for p in ("optimistic", "random", "etc300")):
        pts = [quarter, half, T]

        def curves(pol):
            return tuple([_at(r, "instability", t) for r in by[("E4", pol)]] for t in pts)

        def median_slope(*cols):
            return _slope(pts, [float(np.median(c)) for c in cols])

        co, cr = curves("optimistic"), curves("random")
        eo, er = median_slope(*co), median_slope(*cr)
        etc_T = [_at(r, "instability", T) for r in by[("E4", "etc300")]]
        etc_H = [_at(r, "instability", half) for r in by[("E4", "etc300")]]

        def share(t_, h_):
            return float(np.median(t_ - h_) / max(np.median(t_), 1e-12))

        etc_share = share(np.asarray(etc_T), np.asarray(etc_H))
        d4 = stats.all_of(
            stats.decide(eo, _boot(co, median_slope), 0.8, "<=", label="Optimistic exponent <= 0.8"),
            stats.decide(etc_share, _boot((etc_T, etc_H), share), 0.25, ">=", label="ETC(300) second-half share"),
            label="C4")
        claims.append(Claim(
            "C4", "Under adversarial contexts the optimistic algorithm's instability regret grows sublinearly, "
                  "while a frozen ETC keeps accumulating instability after a switch.",
            "E4: log-log slope of the median instability regret I(t) over t in {T/4, T/2, T}; ETC(300)'s "
            "second-half increment / total (medians over seeds)",
            {"optimistic_exponent": eo, "random_exponent": er, "etc300_second_half_share": etc_share,
             "optimistic_I": [float(np.median([_at(r, "instability", t) for r in by[("E4", "optimistic")]]))
                              for t in (eighth, quarter, half, T)],
             "etc300_I": [float(np.median([_at(r, "instability", t) for r in by[("E4", "etc300")]]))
                          for t in (eighth, quarter, half, T)]},
            "Optimistic exponent <= 0.8, ETC(300) second-half share >= 0.25 (Random's exponent: the sanity claim "
            "C4-random)", decision=d4, kind="gate",
            paper="instance-independent sublinear bound on the tractable (instability) regret for adversarial "
                  "contexts (theorem; no number accessible)",
            per_seed=[float(_at(r, "instability", T)) for r in by[("E4", "optimistic")]],
            details=d4.text() + ". Exponents are fitted to the median curve over seeds; the intervals are paired "
                    "bootstraps over seeds (markets)."
                    + ("" if d4.decided else " Inconclusive here: `icml26 run matching_bandits --scale medium` runs "
                       "10 seeds (about 15 min on 2 cores).") + " Per-seed I(T) of Optimistic "
                    f"{[round(_at(r, 'instability', T), 2) for r in by[('E4', 'optimistic')]]}, per-seed exponents "
                    f"{[round(_slope(pts, [_at(r, 'instability', t) for t in pts]), 3) for r in by[('E4', 'optimistic')]]}"
                    ". "
                    "Can fail: Optimistic's exponent and ETC's post-switch share."))
        dr4 = stats.decide(er, _boot(cr, median_slope), 0.95, ">=", label="Random exponent >= 0.95")
        claims.append(Claim(
            "C4-random", "Random matching's instability regret grows linearly (the exponent test separates linear "
                         "from sublinear growth).",
            "E4: log-log slope of Random's median I(t) over t in {T/4, T/2, T}", {"random_exponent": er}, ">= 0.95",
            decision=dr4, kind="sanity", paper="no figure (a control of our check)",
            details=dr4.text() + ". Sanity (holds by construction of a uniformly random matching)."))

    # ---- report-only: E3 growth exponents and the baselines' strength
    if any(k[0] == "E3" for k in by):
        ex = {}
        pts = [eighth, quarter, half, T]
        for (inst, pol), runs in by.items():
            if inst != "E3" or pol == "oracle":
                continue
            ex[pol] = _slope(pts, [float(np.median([_at(r, "sum_regret", t) for r in runs])) for t in pts])
        if ("E3", "adaptive") in by:
            cols = tuple([_at(r, "sum_regret", t) for r in by[("E3", "adaptive")]] for t in pts)
            iv = _boot(cols, lambda *c: _slope(pts, [float(np.median(x)) for x in c]))
            de = stats.decide(ex["adaptive"], iv, 0.75, "<=", label="E3")
        else:
            de = stats.exact(float("nan"), 0.75, "<=", label="E3")
        claims.append(Claim(
            "E3", "With continuous contexts (no gap) the regret is O~(sqrt T) (instance-independent regime).",
            "E3: log-log slope of the median R(t) over t in {T/8, T/4, T/2, T} per policy (nan if <= 0)",
            ex, "Adaptive exponent <= 0.75 (sqrt(T) regime: about 0.5 expected; report only, noisy at this scale)",
            decision=de, kind="report",
            paper="instance-independent upper and matching lower bounds under a min-eigenvalue assumption on the "
                  "contexts (theorem; no number accessible)",
            details=de.text() + ". R(T) medians: " + ", ".join(f"{p}={med('E3', p, 'sum_regret'):.1f}" for p in ex)))
    comp = {}
    for inst in ("E1", "E3", "E4"):
        for pol in ("adaptive", "adaptive_opt", "optimistic", "greedy"):
            if (inst, pol) in by:
                comp[f"{inst}_{pol}_R"] = med(inst, pol, "sum_regret")
                comp[f"{inst}_{pol}_abs"] = med(inst, pol, "abs_regret")
    parts = []
    for i in ("E1", "E3"):
        if (i, "greedy") in by and (i, "adaptive") in by:
            g = [_at(r, "abs_regret", T) for r in by[(i, "greedy")]]
            ad_ = [_at(r, "abs_regret", T) for r in by[(i, "adaptive")]]
            parts.append(stats.decide(float(np.mean(np.subtract(g, ad_))), stats.paired_t_interval(g, ad_), 0.0,
                                      "<=", label=f"{i}: Greedy - Adaptive absolute regret <= 0"))
    if comp and parts:
        dg = stats.all_of(*parts, label="G")
        claims.append(Claim(
            "G", "Greedy GS (no exploration bonus) is very strong under diverse contexts; the paper's value is the "
                 "guarantee (gap-adaptivity, no linear failure), not the best constant.",
            "median R(T) and absolute regret of Adaptive / Optimistic / Greedy per family",
            comp, "report only: Greedy's absolute regret <= Adaptive's on E1 and E3 (paired per seed)",
            decision=dg, kind="report",
            paper="not in the paper's abstract (spec pitfall: the paper's value is the guarantee)",
            details=dg.text() + ". Report only. Medians over seeds in measured; Greedy has no exploration bonus and "
                    "benefits from the diversity of the contexts, which nothing here prevents."))
    return claims, metrics


# ---------------------------------------------------------------------------------------------- figures
_LABEL = {"adaptive": "AdaptiveCertifiedGS", "adaptive_opt": "Adaptive (opt. refine)", "optimistic": "OptimisticGS",
          "greedy": "GreedyGS", "etc20": "ETC(20)", "etc300": "ETC(300)", "etc2000": "ETC(2000)",
          "random": "Random", "oracle": "Oracle"}


def _figures(result: Result, by: dict[tuple[str, str], list[dict[str, Any]]]) -> None:
    fams = [f for f in ("E1", "E3", "E4") if any(k[0] == f for k in by)]
    if fams:
        fig, axes = new_figure(ncols=len(fams), width=4.6)
        axes = np.asarray(axes).ravel()
        for ax, fam in zip(axes, fams):
            lo = 0.0
            for (inst, pol), runs in by.items():
                if inst != fam or pol == "oracle":
                    continue
                cps = np.asarray(runs[0]["checkpoints"])
                curve = _median_curve(runs, "sum_regret")
                lo = min(lo, float(curve.min()))
                ax.plot(cps, curve, label=_LABEL.get(pol, pol))
            ax.set_xscale("log")
            ax.set_yscale("symlog", linthresh=1.0)
            ax.set_ylim(bottom=1.5 * lo if lo < 0 else 0.0)
            ax.set_title(f"{fam}: cumulative stable regret (median)")
            ax.set_xlabel("round t")
        axes[0].set_ylabel(r"$\sum_i R_i(t)$ (symlog)")
        axes[0].legend(fontsize=7)
        result.add_figure("regret_vs_T", fig)
    if any(k[0] == "E4" for k in by):
        fig, ax = new_figure()
        for (inst, pol), runs in by.items():
            if inst == "E4" and pol != "oracle":
                cps = np.asarray(runs[0]["checkpoints"])
                ax.plot(cps, np.maximum(_median_curve(runs, "instability"), 1e-3), label=_LABEL.get(pol, pol))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("round t")
        ax.set_ylabel("instability regret I(t) (median)")
        ax.set_title("E4 adversarial contexts")
        ax.legend(fontsize=7)
        result.add_figure("instability_adversarial", fig)
    gaps = sorted(k[0] for k in by if k[0].startswith("E2") and k[1] == "adaptive")
    if gaps:
        fig, ax = new_figure()
        for g in gaps:
            runs = by[(g, "adaptive")]
            cps = np.asarray(runs[0]["checkpoints"])
            ax.plot(cps, _median_curve(runs, "n_refine_curve"), label=f"{g} (median Delta "
                    f"{np.median([r['min_gap'] for r in runs]):.3f})")
        ax.set_xscale("log")
        ax.set_xlabel("round t")
        ax.set_ylabel("refine rounds so far (median)")
        ax.set_title("E2: AdaptiveCertifiedGS refine rounds vs gap")
        ax.legend(fontsize=7)
        result.add_figure("refine_rounds_vs_gap", fig)


# ---------------------------------------------------------------------------------------------- run
CONFIG_HELP: dict[str, str] = {
    "seed": "first seed; seeds seed..seed+n_seeds-1 each draw their own market",
    "n_seeds": "markets (seeds) per instance family", "T": "rounds per run (horizon, >= 8)",
    "beta_scale": "c_beta, scale of the OFUL confidence radius (1 = theory; the CPU claim check uses 0.5)",
    "lam": "ridge regularisation lambda", "workers": "parallel processes (0 = all CPUs)",
    "backend": "processes | joblib | ray",
    "instances": "instance families: name -> market keys (n_players, n_arms, dim, contexts, n_prototypes, min_gap, "
                 "noise, arm_prefs, benchmark, period, eps, spread) and the policies to run",
    "c2_seeds": "markets (seeds) of C2's E1 Adaptive / ETC(300) pair (>= n_seeds: the n_seeds ones plus extras)",
    "scale": "smoke | small | medium | paper (set by the CLI)",
}

# measured under the shared lock on 2 cores on 2026-12-01 with other work on the cores (idle machine: 42 s);
# paper: hours on a 64-core machine
EXPECTED_RUNTIME_S = {"smoke": 10, "small": 220, "medium": 950, "paper": 4 * 3600}


def validate_config(config: dict[str, Any]) -> None:
    """Raise ValueError/TypeError naming the first bad key (called by the CLI before compute and by `run`)."""
    from icml26.matching_bandits.data import MARKET_KEYS, POLICY_NAMES

    require_keys(config, ("seed", "n_seeds", "T", "beta_scale", "lam", "workers", "backend", "instances",
                          "c2_seeds"), "config")
    check_seed(config["seed"], "seed")
    check_int(config["n_seeds"], "n_seeds", min=1)
    check_int(config["c2_seeds"], "c2_seeds", min=1)
    if config["c2_seeds"] < config["n_seeds"]:
        raise ValueError(f"c2_seeds must be >= n_seeds ({config['n_seeds']}), got {config['c2_seeds']}")
    check_int(config["T"], "T", min=8)
    check_float(config["beta_scale"], "beta_scale", min=0.0)
    check_float(config["lam"], "lam", min=0.0, min_open=True)
    check_int(config["workers"], "workers", min=0)
    check_choice(config["backend"], "backend", ("processes", "joblib", "ray"))
    inst = config["instances"]
    if not isinstance(inst, dict) or not inst:
        raise TypeError(f"instances must be a non-empty dict of name -> instance spec, got {type(inst).__name__}")
    for name, spec in inst.items():
        if not isinstance(spec, dict):
            raise TypeError(f"instances[{name!r}] must be a dict, got {type(spec).__name__}")
        unknown = set(spec) - set(MARKET_KEYS) - {"policies"}
        if unknown:
            raise ValueError(f"instances[{name!r}] has unknown keys {sorted(unknown)}; allowed: {MARKET_KEYS}")
        for key in ("n_players", "n_arms", "dim", "noise", "policies"):
            if key not in spec:
                raise ValueError(f"instances[{name!r}] is missing '{key}'")
        for key in ("n_players", "n_arms", "dim"):
            check_int(spec[key], f"instances[{name!r}][{key!r}]", min=1)
        check_float(spec["noise"], f"instances[{name!r}]['noise']", min=0.0)
        pols = spec["policies"]
        if isinstance(pols, str) or not isinstance(pols, (list, tuple)) or not pols:
            raise TypeError(f"instances[{name!r}]['policies'] must be a non-empty list of policy names")
        for p in pols:
            if p not in POLICY_NAMES and not (isinstance(p, str) and p.startswith("etc") and p[3:].isdigit()):
                raise ValueError(f"instances[{name!r}]['policies']: unknown policy {p!r}; known: {POLICY_NAMES}")
    if "scale" in config:
        check_choice(config["scale"], "scale", ("smoke", "small", "medium", "paper"))


_check_config = validate_config  # the former name


def run(config: dict[str, Any]) -> Result:
    """Run every (instance, policy, seed) of the config, compute the claims, attach figures."""
    validate_config(config)
    t_start = time.perf_counter()
    T = int(config["T"])
    seeds = [int(config["seed"]) + s for s in range(int(config["n_seeds"]))]
    jobs = []
    for name, spec in config["instances"].items():
        for pol in spec["policies"]:
            for s in seeds:
                jobs.append({"instance": name, "spec": spec, "policy": pol, "seed": s, "T": T,
                             "beta_scale": float(config["beta_scale"]), "lam": float(config["lam"])})
    n_main = len(jobs)
    e1 = config["instances"].get("E1")
    if e1 is not None and {"adaptive", "etc300"} <= set(e1["policies"]):  # C2's extra markets
        for s in range(int(config["seed"]) + int(config["n_seeds"]), int(config["seed"]) + int(config["c2_seeds"])):
            for pol in ("adaptive", "etc300"):
                jobs.append({"instance": "E1", "spec": e1, "policy": pol, "seed": s, "T": T,
                             "beta_scale": float(config["beta_scale"]), "lam": float(config["lam"])})
    # heavy jobs first so that the process pool stays balanced
    cost = {"adaptive": 3, "adaptive_opt": 3, "optimistic": 2, "greedy": 1.5}
    order = sorted(range(len(jobs)), key=lambda k: -cost.get(jobs[k]["policy"], 1))
    done = _execute([jobs[k] for k in order], config["backend"], int(config["workers"]))
    out: list[dict[str, Any]] = [None] * len(jobs)  # type: ignore[list-item]
    for k, r in zip(order, done):
        out[k] = r
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in out[:n_main]:
        by.setdefault((r["instance"], r["policy"]), []).append(r)
    extra: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in out[n_main:]:
        extra.setdefault((r["instance"], r["policy"]), []).append(r)

    claims, metrics = _claims(by, T, extra)
    checkpoints = {"T/8": T // 8, "T/4": T // 4, "T/2": T // 2, "T": T}
    table = {}
    for (inst, pol), runs in by.items():
        row = {}
        for lab, t in checkpoints.items():
            row[f"R({lab})"] = float(np.median([_at(r, "sum_regret", t) for r in runs]))
        row["maxR(T)"] = float(np.median([_at(r, "max_regret", T) for r in runs]))
        row["absR(T)"] = float(np.median([_at(r, "abs_regret", T) for r in runs]))
        row["I(T/4)"] = float(np.median([_at(r, "instability", T // 4) for r in runs]))
        row["I(T)"] = float(np.median([_at(r, "instability", T) for r in runs]))
        row["n_refine"] = float(np.median([r["n_refine"] for r in runs]))
        row["mismatch_rounds"] = float(np.median([r["mismatch_rounds"] for r in runs]))
        row["rounds_per_s"] = float(np.median([r["T"] / r["wall_s"] for r in runs]))
        table[f"{inst}/{pol}"] = row
    metrics["median_over_seeds"] = table
    metrics["realised_min_gap"] = {inst: [r["min_gap"] for r in runs] for (inst, pol), runs in by.items()
                                   if pol == "adaptive" and runs[0]["min_gap"] is not None}
    metrics["refine_rounds_per_seed"] = {f"{i}/{p}": {"total": [r["n_refine"] for r in runs],
                                                       "last_quarter": [r["n_refine_last_quarter"] for r in runs]}
                                         for (i, p), runs in by.items() if p.startswith("adaptive")}
    metrics["per_seed_R_T"] = {f"{i}/{p}": [round(_at(r, "sum_regret", T), 3) for r in runs]
                               for (i, p), runs in by.items()}
    result = Result(slug=SLUG, scale=config.get("scale", "small"), config=config, metrics=metrics, claims=claims,
                    notes=("Reconstruction [R] of the paper's algorithms from its abstract (full text unavailable). "
                           f"Claim checks use c_beta = {config['beta_scale']} and sigma as in each instance. "
                           "R = sum_i stable regret vs the player-optimal stable matching (can be negative)."))
    _figures(result, by)
    result.runtime_s = time.perf_counter() - t_start
    return result
