"""Claim checks of spec section 6 (as amended by the review notes), decided by `icml26.common.stats`.

The spec gates medians over seeds (so one bad restart cannot flip a check). Each median gets a percentile
bootstrap interval over the seeds (`stats.bootstrap_interval`, the rliable-style interval over runs): TE over
seeds is bimodal (a run lands on the right signed permutation or on a wrong one), so a t interval of the mean
would assume a shape the data do not have. With 5 seeds that interval is about [min, max] of the seeds, which is
what a distribution-free 95 % statement about a median over 5 runs can say. Differences between two arms run on
the same seeds (C4's MMD clause) use the paired t interval of the mean gap. Every verdict is three-valued
(held / not held / inconclusive) and an inconclusive one names the seeds (and time) that would decide it.
The same functions are used by the experiment and by the tests that show each gate can fail.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from icml26.common import stats
from icml26.results import Claim

__all__ = [
    "PAPER_FIGURE",
    "PAPER_JOINT",
    "claim_c1",
    "claim_c2",
    "claim_c3",
    "claim_c3_sanity",
    "claim_c4",
    "claim_r2",
    "median_decision",
    "report_claim",
]

PAPER_FIGURE = ("qualitative (no numbers retrievable): with GAN matching + one anchor + Jacobian regularisation "
                "the learned map recovers the ground truth (small TE); without the regulariser or the anchor it "
                "does not")
PAPER_JOINT = ("the paper's own anchor usage (anchor loss inside the objective); qualitative: one anchor + "
               "regularisation recovers f*")
MEDIUM = "`icml26 run sparse_transfer --scale medium`"


def _vals(x: Sequence[float]) -> list[float]:
    return [float(v) for v in x]


def _fmt(vals: Sequence[float]) -> str:
    return "[" + ", ".join(f"{v:.3f}" for v in vals) + "]"


def median_decision(vals: Sequence[float], threshold: float, direction: str, *, label: str = "",
                    cost_per_seed_s: float | None = None) -> stats.Decision:
    """Median over seeds vs `threshold`, decided on a percentile bootstrap interval over the seeds.

    One seed gives an unbounded interval (inconclusive by design)."""
    v = np.asarray(_vals(vals), dtype=float)
    if v.size < 2:
        iv = stats.t_interval(v)  # (-inf, inf) for one seed
    else:
        iv = dataclasses.replace(stats.bootstrap_interval(v, np.median, method="percentile", seed=0), unit="seeds")
    return stats.decide(float(np.median(v)), iv, threshold, direction, label=label, cost_per_unit_s=cost_per_seed_s)


def _medium_note(d: stats.Decision, what: str) -> str:
    if d.verdict != "inconclusive":
        return ""
    return f" What would decide it: {what} ({MEDIUM})."


def claim_c1(te: Sequence[float], oracle: Sequence[float], genericity: Sequence[float], threshold: float = 0.20,
             cost_per_seed_s: float | None = None) -> Claim:
    """C1: DM + sparsity (exact l1) + one anchor (resolve): median TE <= threshold."""
    te, oracle = _vals(te), _vals(oracle)
    d = median_decision(te, threshold, "<=", label="C1", cost_per_seed_s=cost_per_seed_s)
    details = (f"{d.text()}. Per-seed anchor-resolved TE {_fmt(te)}; oracle-resolved TE (best of the 48 signed "
               f"permutations) {_fmt(oracle)}; anchor genericity m(y_a) {_fmt(genericity)} (anchors drawn among "
               "pairs with m >= 0.5, review note 2). Can fail: training (sparsity/optimisation: high oracle TE) or "
               "the anchor (low oracle, high resolved TE). The resolve step is ours (spec section 6); the paper's "
               "joint form is R2." + _medium_note(d, "10 seeds") + " Prototype [0.093, 0.121, 0.150].")
    return Claim("C1", "DM + Jacobian sparsity + ONE anchor pair identifies the ground-truth transfer map (our "
                       "resolve step)",
                 "median TE over seeds, held-out pairs (resolve mode, exact l1 penalty)",
                 {"median_te": d.estimate, "per_seed_te": te, "per_seed_oracle_te": oracle},
                 f"median TE <= {threshold}", decision=d, kind="gate", details=details, paper=PAPER_FIGURE,
                 per_seed=te)


def claim_r2(te: Sequence[float], oracle: Sequence[float], threshold: float = 0.20, steps: int | None = None,
             hidden: Sequence[int] | None = None, cost_per_seed_s: float | None = None) -> Claim:
    """R2: the paper's formulation (anchor MSE inside the loss from step 0) with exact sparsity: median TE <=
    threshold (C1's bar). The oracle-resolved TE says whether sparsity found a signed permutation (low) that the
    anchor then failed to fix."""
    te, oracle = _vals(te), _vals(oracle)
    d = median_decision(te, threshold, "<=", label="R2", cost_per_seed_s=cost_per_seed_s)
    wrong = [i for i, (a, o) in enumerate(zip(te, oracle)) if a > threshold and o <= threshold]
    setting = f" ({steps} steps, hidden {list(hidden)})" if steps is not None and hidden is not None else ""
    details = (f"{d.text()}. Per-seed TE {_fmt(te)}; oracle-resolved TE {_fmt(oracle)}{setting}; seeds "
               f"{wrong} found a sparse signed permutation (oracle TE <= {threshold}) but the anchor inside the loss "
               "did not move it to the right one. Why resolve (C1) is needed at this size: a single anchor term is a "
               "1-sample loss next to a 128-sample MMD; the network satisfies it with a local bump around x_a "
               "while the global map stays on the permutation the early DM phase chose (spec section 9), so the "
               "anchor never selects among the finite set of sparse MPAs. What would test the paper's form: more "
               "steps (the anchor keeps pulling after the MMD has converged), the official-size 1x32 network "
               "(less room for a local bump) and 10 seeds, i.e. the medium scale (" + MEDIUM + ").")
    return Claim("R2", "The paper's formulation (one anchor inside the loss, with Jacobian sparsity) identifies the "
                       "ground-truth map",
                 "median TE over seeds (exact l1 + joint anchor)",
                 {"median_te": d.estimate, "per_seed_te": te, "per_seed_oracle_te": oracle,
                  "wrong_permutation_seeds": wrong},
                 f"median TE <= {threshold}", decision=d, kind="gate", details=details, paper=PAPER_JOINT,
                 per_seed=te)


def claim_c2(te: Sequence[float], oracle: Sequence[float], threshold: float = 0.25,
             cost_per_seed_s: float | None = None) -> Claim:
    """C2: the same with the randomized finite-difference surrogate: median TE <= threshold.

    Review note 3: failing seeds whose oracle-resolved TE is also above the threshold are training failures (not
    anchor failures); the details say so."""
    te, oracle = _vals(te), _vals(oracle)
    d = median_decision(te, threshold, "<=", label="C2", cost_per_seed_s=cost_per_seed_s)
    bad = [i for i, v in enumerate(te) if v > threshold]
    train_fail = [i for i in bad if oracle[i] > threshold]
    details = (f"{d.text()}. Per-seed anchor-resolved TE {_fmt(te)}; oracle-resolved TE {_fmt(oracle)}; failing "
               f"seeds {bad} (training failures, oracle TE > {threshold}: {train_fail}). fd surrogate k = 1, S = 2, "
               "sigma = 0.01." + _medium_note(d, "10 seeds") + " Prototype [0.109, 0.095, 0.89].")
    return Claim("C2", "The cheap randomized masked finite-difference penalty gives the same identifiability",
                 "median TE over seeds (resolve mode, fd surrogate)",
                 {"median_te": d.estimate, "per_seed_te": te, "per_seed_oracle_te": oracle,
                  "training_failures": train_fail},
                 f"median TE <= {threshold}", decision=d, kind="gate", details=details, paper=PAPER_FIGURE,
                 per_seed=te)


C3_ARMS = ("dm", "dm_anchor_joint", "dm_resolve")
SANITY_ARMS = ("dm_sparsity_no_anchor", "ot")


def claim_c3(arms: dict[str, Sequence[float]], threshold: float = 0.60,
             cost_per_seed_s: float | None = None) -> Claim:
    """C3: every MPA-prone baseline that can fail (DM, DM + joint anchor, DM + resolve) has median TE >=
    threshold; `arms` maps each name of `C3_ARMS` to its per-seed TE."""
    missing = [k for k in C3_ARMS if k not in arms]
    if missing:
        raise ValueError(f"arms must give per-seed TE for {C3_ARMS}, missing {missing}")
    parts = [median_decision(arms[k], threshold, ">=", label=k, cost_per_seed_s=cost_per_seed_s) for k in C3_ARMS]
    d = stats.all_of(*parts, label="C3")
    per = "; ".join(f"{k}: per seed {_fmt(_vals(arms[k]))}, {sum(v < threshold for v in _vals(arms[k]))} of "
                    f"{len(arms[k])} below {threshold}" for k in C3_ARMS)
    details = (f"{d.text()}. {per}. All three can fail (DM + resolve can land below 0.6 by geometry, review note 4); "
               "the two arms that hold by construction are C3-sanity." + _medium_note(d, "the seeds the hint names")
               + " Prototype: DM [1.31, 1.31, 1.51], DM + anchor [1.38, 1.25], DM + resolve [0.85, 1.24, 1.09].")
    return Claim("C3", "Distribution matching without sparsity, with or without the anchor, is not identifiable "
                       "(measure-preserving automorphisms)", "median TE over seeds per baseline",
                 {"median_te": {k: p.estimate for k, p in zip(C3_ARMS, parts)},
                  "n_seeds": {k: len(arms[k]) for k in C3_ARMS}},
                 f"every median TE >= {threshold}", decision=d, kind="gate", details=details, paper=PAPER_FIGURE,
                 per_seed=_vals(arms["dm_anchor_joint"]))


def claim_c3_sanity(arms: dict[str, Sequence[float]], threshold: float = 0.60) -> Claim:
    """C3-sanity: the two C3 arms that hold by construction (review note 5): DM + sparsity without an anchor (every
    non-identity candidate has TE >= 0.92) and OT (a coordinate-wise monotone Brenier map, TE = sqrt(pi/2))."""
    parts = [median_decision(arms[k], threshold, ">=", label=k) for k in SANITY_ARMS]
    d = stats.all_of(*parts, label="C3-sanity")
    details = (f"{d.text()}. " + "; ".join(f"{k}: per seed {_fmt(_vals(arms[k]))}" for k in SANITY_ARMS)
               + ". Holds by construction (review note 5): without an anchor nothing picks the identity among the "
               "48 sparse candidates, and OT's map of independent coordinates is a cyclic permutation of y "
               "(TE = sqrt(pi/2) ~ 1.25). Prototype: DM + sparsity [1.23, 1.22, 1.25], OT 1.20-1.22.")
    return Claim("C3-sanity", "Sparsity without the anchor, and the OT (Brenier) map, return a wrong correspondence",
                 "median TE over seeds", {"median_te": {k: p.estimate for k, p in zip(SANITY_ARMS, parts)}},
                 f"every median TE >= {threshold}", decision=d, kind="sanity", details=details, paper=PAPER_FIGURE,
                 per_seed=_vals(arms["ot"]))


def claim_c4(l1_ours: Sequence[float], l1_dm: Sequence[float], l1_true: Sequence[float], mmd_ours: Sequence[float],
             mmd_dm: Sequence[float], mmd_floor: Sequence[float], rel_tol: float = 0.15, dm_factor: float = 1.3,
             mmd_margin: float = 0.01, cost_per_seed_s: float | None = None) -> Claim:
    """C4 (mechanism): per seed, the learned map of C1 has mean l1/d within rel_tol of the truth's (median ratio in
    [1 - rel_tol, 1 + rel_tol]), DM's is >= dm_factor x the truth's (median ratio), and the final MMD^2 of C1's map
    exceeds DM's by at most mmd_margin (mean paired gap ours - DM, paired t interval over seeds)."""
    lo, ld, lt, mo, md = map(_vals, (l1_ours, l1_dm, l1_true, mmd_ours, mmd_dm))
    if not (len(lo) == len(ld) == len(lt) == len(mo) == len(md)):
        raise ValueError("l1_ours, l1_dm, l1_true, mmd_ours and mmd_dm must give one value per seed (same lengths)")
    r_ours = [a / t for a, t in zip(lo, lt)]
    r_dm = [a / t for a, t in zip(ld, lt)]
    gap = [a - b for a, b in zip(mo, md)]
    c = cost_per_seed_s
    p_lo = median_decision(r_ours, 1 - rel_tol, ">=", label="l1 ratio >= 0.85", cost_per_seed_s=c)
    p_hi = median_decision(r_ours, 1 + rel_tol, "<=", label="l1 ratio <= 1.15", cost_per_seed_s=c)
    p_dm = median_decision(r_dm, dm_factor, ">=", label=f"DM l1 ratio >= {dm_factor}", cost_per_seed_s=c)
    if len(gap) >= 2:
        iv = stats.paired_t_interval(mo, md)
    else:
        iv = stats.t_interval(gap)
    # a gap of MMD^2 values ~1e-2: the default 2 % resolution of 0.01 (2e-4) is below the seed-to-seed noise of
    # the 2000-sample MMD^2 estimate (floor sd ~5e-4, review note 6), so resolve at 5e-4
    p_mmd = stats.decide(float(np.mean(gap)), iv, mmd_margin, "<=", atol=5e-4, label=f"MMD^2 gap <= {mmd_margin}",
                         cost_per_unit_s=c)
    d = stats.all_of(p_lo, p_hi, p_dm, p_mmd, label="C4")
    details = (f"{d.text()}. Mean l1/d of J: truth per seed {_fmt(lt)}; ours {_fmt(lo)} (ratio {_fmt(r_ours)}); DM "
               f"{_fmt(ld)} (ratio {_fmt(r_dm)}). Final MMD^2 (sum of 4 RBF kernels, biased, n = 2000, one "
               f"independent target sample per seed shared by all arms): ours {_fmt(mo)}, DM {_fmt(md)}, paired gap "
               f"{_fmt(gap)}; floor MMD^2(f*(X), Y') {_fmt(_vals(mmd_floor))}. The +{mmd_margin} margin is a ~12 % "
               "global scale error (review note 6). The plain l1 penalty shrinks the map (ratio < 1), which costs "
               "marginal match; R6 reports the hinged penalty." + _medium_note(d, "10 seeds") + " All parts can "
               "fail. Prototype: l1/d 1.08-1.12 vs DM ~2.1; MMD^2 0.007-0.009 vs 0.005-0.006.")
    return Claim("C4", "Sparsity buys alignment by choosing the sparse map, not by breaking the marginal match",
                 "median l1/d ratio to the truth (ours, DM) and mean paired final-MMD^2 gap ours - DM",
                 {"l1_ratio_ours_median": p_lo.estimate, "l1_ratio_dm_median": p_dm.estimate,
                  "mmd_gap_mean": p_mmd.estimate, "mmd_ours": mo, "mmd_dm": md},
                 f"l1 ratio in [{1 - rel_tol:.2f}, {1 + rel_tol:.2f}]; DM ratio >= {dm_factor}; MMD^2 gap <= "
                 f"{mmd_margin}", decision=d, kind="gate", details=details,
                 paper="mechanism (spec section 2): the sparsity preference rules out non-permutation MPAs",
                 per_seed=r_ours)


def report_claim(cid: str, statement: str, metric: str, measured, value: float, details: str, paper: str,
                 per_seed: Sequence[float] = (), interval: stats.Interval | None = None) -> Claim:
    """A number reported without a threshold (kind "report", verdict "measured")."""
    return Claim(cid, statement, metric, measured, "report only", decision=stats.measured(float(value), interval),
                 kind="report", details=details, paper=paper, per_seed=_vals(per_seed))
