"""Claim checks of spec section 6 (as amended by the review notes), computed from per-seed measurements.

Every check takes the run's per-seed values and compares a median with the spec's threshold; nothing here is a
constant verdict. The same functions are used by the experiment and by the tests that show each gate can fail.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from icml26.results import Claim

__all__ = [
    "PAPER_FIGURE",
    "claim_c1",
    "claim_c2",
    "claim_c3",
    "claim_c4",
    "paired_ci",
    "report_claim",
    "seed_decidable",
]

PAPER_FIGURE = ("qualitative (no numbers retrievable): with GAN matching + one anchor + Jacobian regularisation "
                "the learned map recovers the ground truth (small TE); without the regulariser or the anchor it "
                "does not")


def _vals(x: Sequence[float]) -> list[float]:
    return [float(v) for v in x]


def _fmt(vals: Sequence[float]) -> str:
    return "[" + ", ".join(f"{v:.3f}" for v in vals) + "]"


def seed_decidable(vals: Sequence[float], threshold: float) -> bool:
    """False when the seed-to-seed spread (sample std) is larger than the median's margin to the threshold."""
    v = np.asarray(vals, dtype=float)
    if v.size < 2:
        return False
    return bool(np.std(v, ddof=1) <= abs(float(np.median(v)) - threshold))


def paired_ci(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """Mean of a - b over seeds with a t confidence interval (mean, low, high); NaN bounds for < 2 seeds."""
    from scipy import stats

    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    m = float(d.mean()) if d.size else float("nan")
    if d.size < 2:
        return m, float("nan"), float("nan")
    half = float(stats.t.ppf(0.5 + level / 2, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size))
    return m, m - half, m + half


def _decide_note(vals: Sequence[float], threshold: float) -> str:
    if seed_decidable(vals, threshold):
        return "decidable at this size (seed std <= margin of the median to the threshold)"
    return ("CANNOT DECIDE at this size: the seed-to-seed spread (std) is larger than the median's margin to the "
            "threshold, so the verdict below rests on which seeds were drawn")


def claim_c1(te: Sequence[float], oracle: Sequence[float], genericity: Sequence[float],
             threshold: float = 0.20) -> Claim:
    """C1: DM + sparsity (exact l1) + one anchor (resolve): median TE <= threshold."""
    te, oracle = _vals(te), _vals(oracle)
    med = float(np.median(te))
    held = bool(med <= threshold)
    details = (f"per-seed anchor-resolved TE {_fmt(te)}; oracle-resolved TE (best of the 48 signed permutations) "
               f"{_fmt(oracle)}; anchor genericity m(y_a) {_fmt(genericity)} (anchors drawn among pairs with "
               f"m >= 0.5, review note 2). Can fail: training (sparsity/optimisation: high oracle TE) or the anchor "
               f"(low oracle, high resolved TE). {_decide_note(te, threshold)}. Prototype [0.093, 0.121, 0.150].")
    return Claim("C1", "DM + Jacobian sparsity + ONE anchor pair identifies the ground-truth transfer map",
                 "median TE over seeds, held-out pairs (resolve mode, exact l1 penalty)",
                 {"median_te": med, "per_seed_te": te, "per_seed_oracle_te": oracle,
                  "decidable": seed_decidable(te, threshold)},
                 f"median TE <= {threshold}", held, gate=True, details=details, paper=PAPER_FIGURE, per_seed=te)


def claim_c2(te: Sequence[float], oracle: Sequence[float], threshold: float = 0.25) -> Claim:
    """C2: the same with the randomized finite-difference surrogate: median TE <= threshold.

    Review note 3: if it fails and the failing seeds' oracle-resolved TE is also above the threshold (a training
    failure, not an anchor failure), the result says the check cannot decide at this size.
    """
    te, oracle = _vals(te), _vals(oracle)
    med = float(np.median(te))
    held = bool(med <= threshold)
    bad = [i for i, v in enumerate(te) if v > threshold]
    train_fail = [i for i in bad if oracle[i] > threshold]
    note = _decide_note(te, threshold)
    if not held and train_fail:
        note = (f"CANNOT DECIDE at this size (review note 3): seeds {train_fail} fail in training (oracle-resolved "
                f"TE {_fmt([oracle[i] for i in train_fail])} > {threshold}), not through the anchor")
    details = (f"per-seed anchor-resolved TE {_fmt(te)}; oracle-resolved TE {_fmt(oracle)}; failing seeds {bad} "
               f"(training failures {train_fail}). fd surrogate k = 1, S = 2, sigma = 0.01. {note}. "
               "Prototype [0.109, 0.095, 0.89].")
    return Claim("C2", "The cheap randomized masked finite-difference penalty gives the same identifiability",
                 "median TE over seeds (resolve mode, fd surrogate)",
                 {"median_te": med, "per_seed_te": te, "per_seed_oracle_te": oracle, "training_failures": train_fail,
                  "decidable": seed_decidable(te, threshold) and not (not held and train_fail)},
                 f"median TE <= {threshold}", held, gate=True, details=details, paper=PAPER_FIGURE, per_seed=te)


SANITY_ARMS = ("dm_sparsity_no_anchor", "ot")


def claim_c3(arms: dict[str, Sequence[float]], ours: Sequence[float] | None = None,
             threshold: float = 0.60) -> Claim:
    """C3: every MPA-prone baseline fails: median TE >= threshold for each arm in `arms` (name -> per-seed TE)."""
    meds = {k: float(np.median(_vals(v))) for k, v in arms.items()}
    held = bool(all(m >= threshold for m in meds.values()))
    parts = []
    for k, v in arms.items():
        tag = " (sanity: holds by construction, review note 5)" if k in SANITY_ARMS else ""
        ci = ""
        if ours is not None and len(ours) == len(v):
            m, lo, hi = paired_ci(v, ours)
            ci = f", paired TE gap to ours {m:.3f} [95% CI {lo:.3f}, {hi:.3f}]"
        parts.append(f"{k}: median {meds[k]:.3f}, per seed {_fmt(_vals(v))}{ci}{tag}; "
                     f"{_decide_note(_vals(v), threshold)}")
    details = ("; ".join(parts) + ". dm, dm_anchor_joint and dm_resolve can fail (DM + resolve can land below 0.6 "
               "by geometry, review note 4). Prototype: DM [1.31, 1.31, 1.51], DM + anchor [1.38, 1.25], DM + resolve "
               "[0.85, 1.24, 1.09], DM + sparsity [1.23, 1.22, 1.25], OT 1.20-1.22.")
    return Claim("C3", "Distribution matching without sparsity, or without the anchor, is not identifiable "
                       "(measure-preserving automorphisms)", "median TE over seeds per baseline",
                 {"median_te": meds}, f"every median TE >= {threshold}", held, gate=True, details=details,
                 paper=PAPER_FIGURE, per_seed=_vals(arms.get("dm", [])))


def claim_c4(l1_ours: Sequence[float], l1_dm: Sequence[float], l1_true: float, mmd_ours: Sequence[float],
             mmd_dm: Sequence[float], mmd_floor: Sequence[float], rel_tol: float = 0.15, dm_factor: float = 1.3,
             mmd_margin: float = 0.01) -> Claim:
    """C4 (mechanism sanity): the learned map of C1 has mean l1/d within rel_tol of the truth's, DM's is
    >= dm_factor x the truth's, and the final MMD^2 of C1's map <= DM's + mmd_margin (medians over seeds)."""
    lo, ld, mo, md = map(_vals, (l1_ours, l1_dm, mmd_ours, mmd_dm))
    med_lo, med_ld, med_mo, med_md = (float(np.median(v)) for v in (lo, ld, mo, md))
    a = abs(med_lo - l1_true) <= rel_tol * l1_true
    b = med_ld >= dm_factor * l1_true
    c = med_mo <= med_md + mmd_margin
    held = bool(a and b and c)
    m, clo, chi = paired_ci(mo, md)
    gap = [a_ - b_ for a_, b_ in zip(mo, md)]
    mmd_note = (f"MMD part decidable (seed std of ours - DM <= its margin to +{mmd_margin})"
                if seed_decidable(gap, mmd_margin) else
                f"MMD part CANNOT DECIDE at this size: the per-seed gap ours - DM {_fmt(gap)} spreads more than its "
                f"margin to +{mmd_margin}")
    details = (f"mean l1/d of J: truth {l1_true:.3f}; ours per seed {_fmt(lo)} (median {med_lo:.3f}, "
               f"{'within' if a else 'NOT within'} {rel_tol:.0%}); DM per seed {_fmt(ld)} (median {med_ld:.3f} = "
               f"{med_ld / l1_true:.2f}x truth, needs >= {dm_factor}x). Final MMD^2 (sum of 4 RBF kernels, biased, "
               f"n = 2000, one independent target sample per seed shared by all arms): ours {_fmt(mo)}, DM {_fmt(md)}, "
               f"floor MMD^2(f*(X), Y') {_fmt(_vals(mmd_floor))}; paired ours - DM {m:.4f} [95% CI {clo:.4f}, "
               f"{chi:.4f}]. The +{mmd_margin} margin is a ~12% global scale error, so it only catches gross breakage "
               f"(review note 6). {mmd_note}. All three parts can fail. Prototype: l1/d 1.08-1.12 vs DM ~2.1; MMD^2 0.007-0.009 "
               "vs 0.005-0.006.")
    return Claim("C4", "Sparsity buys alignment by choosing the sparse map, not by breaking the marginal match",
                 "median mean-l1/d of the Jacobian and median final MMD^2",
                 {"l1_true": l1_true, "l1_ours_median": med_lo, "l1_dm_median": med_ld, "mmd_ours_median": med_mo,
                  "mmd_dm_median": med_md, "l1_within_tol": bool(a), "dm_l1_ratio_ok": bool(b), "mmd_ok": bool(c),
                  "mmd_part_decidable": seed_decidable(gap, mmd_margin)},
                 f"|l1 - {l1_true:.3f}| <= {rel_tol:.0%}; DM l1 >= {dm_factor}x truth; MMD^2 <= DM + {mmd_margin}",
                 held, gate=True, details=details, paper="mechanism (spec section 2): the sparsity preference "
                 "rules out non-permutation MPAs", per_seed=lo)


def report_claim(cid: str, statement: str, metric: str, measured, threshold: str, held: bool, details: str,
                 paper: str, per_seed: Sequence[float] = ()) -> Claim:
    """A report-only (gate=False) claim."""
    return Claim(cid, statement, metric, measured, threshold, bool(held), gate=False, details=details, paper=paper,
                 per_seed=_vals(per_seed))
