"""PoPE's claim checks and figures, shared by the CPU reproduction (`experiment`) and the paper-scale path (`scale`).

A (gate): length extrapolation, mean over seeds of (loss_RoPE(L) - loss_RoPE(l)) - (loss_PoPE(L) - loss_PoPE(l))
    >= 0.15 nats/byte AND loss_PoPE(l) - loss_RoPE(l) <= 0.05 (l = training length, L = longest eval length);
    each part decided by a bootstrap over evaluation windows within seeds.
B (gate): deterministic decoupling check (spec 6B): delta = 0, one query at t, one key replicated at 0..max_pos:
    PoPE's score peaks at s = t in every trial (exact), RoPE's elsewhere in most (bootstrap over trials).
B0 (sanity): the 2d-wide dot product equals the polar formula (fp64, exact).
C (gate, only when run): Indirect Indexing, mean acc(PoPE) - mean acc(RoPE) >= 40 points (paired t over seeds).
Every verdict comes from `icml26.common.stats`.

Every function here takes its inputs as arguments (no config module), so both entry points share them.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from icml26.common import stats
from icml26.common.plotting import new_figure
from icml26.common.seeding import torch_generator
from icml26.common.validation import check_int, check_seed
from icml26.pope.baselines import RoPE
from icml26.pope.pope import PoPE
from icml26.results import Claim

CLAIM_A_MARGIN = 0.15  # nats/byte (spec 6A)
CLAIM_A_PENALTY = 0.05
CLAIM_C_POINTS = 40.0

DECOUPLING_DEFAULTS = {"decoupling_trials": 100, "decoupling_head_dim": 8, "decoupling_t": 5,
                       "decoupling_max_pos": 10}

PAPER_A = ("trained at 1024 and evaluated zero-shot on PG-19 up to 10240 tokens, PoPE's perplexity stays flat to "
           "10x the training length while RoPE's blows up beyond 1024; in distribution PoPE is better (OWT "
           "perplexity 21.55 -> 21.33 at 124M, 18.88 -> 18.55 at 253M, 15.85 -> 15.45 at 774M)")
PAPER_B = ("qualitative (paper Sec. 2): in PoPE the score depends on content only through non-negative magnitudes, "
           "so content cannot shift the preferred relative offset, while RoPE's content phases phi_k - phi_q do; "
           "no trial counts are given (the spec's prototype: RoPE's peak elsewhere in 87/100 trials)")
PAPER_C = "Indirect Indexing accuracy PoPE 94.82 +- 2.91 % vs RoPE 11.16 +- 2.45 % (mean +- std, 3 seeds)"


def _stratified(runs_by: dict, seeds: list[int], arm_a: str, arm_b: str, length: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-window loss differences arm_a - arm_b at `length` for every seed (same windows for both arms), and the
    seed of each window."""
    vals, strata = [], []
    for s in seeds:
        a = np.asarray(runs_by[(arm_a, s)]["window_losses"][length], dtype=float)
        b = np.asarray(runs_by[(arm_b, s)]["window_losses"][length], dtype=float)
        if a.shape != b.shape:
            raise ValueError(f"window_losses of {arm_a} and {arm_b} at length {length} (seed {s}) must pair the "
                             f"same windows, got {a.shape} and {b.shape}")
        vals.append(a - b)
        strata.append(np.full(a.shape, s))
    return np.concatenate(vals), np.concatenate(strata)


def _diff_of_means(a: np.ndarray, b: np.ndarray) -> float:
    return float(a.mean() - b.mean())


# ------------------------------------------------------------------------------------------- claim A
def claim_a(runs: list[dict], lengths: list[int], seeds: list[int]) -> tuple[Claim, dict]:
    """Claim A from extrapolation runs [{"arm", "seed", "losses": {str(T): loss}}] of both arms for every seed.

    With per-window losses (`"window_losses": {str(T): [...]}`, the same windows for both arms) both parts are
    decided by a bootstrap over evaluation windows within seeds (`stats.bootstrap_interval(..., strata=seed)`, the
    rliable stratified bootstrap: arms paired on the same windows; the two lengths' windows are resampled
    independently). Without them (the paper path) by a t interval over seeds.
    """
    lo, hi = str(lengths[0]), str(lengths[-1])
    by = {(r["arm"], r["seed"]): r for r in runs}
    loss = {k: r["losses"] for k, r in by.items()}
    deg = {a: [loss[(a, s)][hi] - loss[(a, s)][lo] for s in seeds] for a in ("pope", "rope")}
    in_dist = {a: [loss[(a, s)][lo] for s in seeds] for a in ("pope", "rope")}
    margins = [r - p for r, p in zip(deg["rope"], deg["pope"])]
    gaps = [p - r for p, r in zip(in_dist["pope"], in_dist["rope"])]
    margin = float(np.mean(margins))
    penalty = float(np.mean(gaps))
    if all("window_losses" in by[(a, s)] for a in ("pope", "rope") for s in seeds):
        d_hi, st_hi = _stratified(by, seeds, "rope", "pope", hi)  # RoPE - PoPE per window at the longest length
        d_lo, st_lo = _stratified(by, seeds, "rope", "pope", lo)
        if not np.array_equal(st_hi, st_lo):
            raise ValueError("window_losses must hold as many windows at every length")
        iv_m = stats.bootstrap_interval((d_hi, d_lo), _diff_of_means, strata=st_hi)
        iv_g = stats.bootstrap_interval(-d_lo, strata=st_lo)  # PoPE - RoPE per window at the training length
        how = (f"bootstrap over {len(d_lo) // len(seeds)} evaluation windows within each of {len(seeds)} seed(s) "
               "(stratified; arms paired on the same windows)")
    else:
        iv_m, iv_g = stats.t_interval(margins), stats.t_interval(gaps)
        how = f"t interval over {len(seeds)} seed(s)"
    d_margin = stats.decide(margin, iv_m, CLAIM_A_MARGIN, ">=", label="extrapolation margin")
    # the gap's natural scale is near 0: a resolution of 0.005 nats/byte (a tenth of the allowed penalty)
    d_gap = stats.decide(penalty, iv_g, CLAIM_A_PENALTY, "<=", atol=0.005, label="in-distribution gap")
    dec = stats.all_of(d_margin, d_gap, label="A")
    per_seed = "; ".join(
        f"seed {s}: PoPE " + " / ".join(f"{loss[('pope', s)][str(t)]:.3f}" for t in lengths)
        + ", RoPE " + " / ".join(f"{loss[('rope', s)][str(t)]:.3f}" for t in lengths)
        + f" (degradation PoPE {deg['pope'][i]:+.3f}, RoPE {deg['rope'][i]:+.3f}; margin {margins[i]:+.3f}, "
          f"in-distribution gap {gaps[i]:+.3f})"
        for i, s in enumerate(seeds))
    expl = ""
    if dec.verdict == "not held":
        expl = (" Not held: " + ("the extrapolation margin is below 0.15 nats/byte. "
                                 if d_margin.verdict == "not held" else "")
                + ("PoPE's in-distribution loss exceeds RoPE's by more than 0.05. "
                   if d_gap.verdict == "not held" else ""))
    seed_note = ""
    if len(seeds) > 1 and "bootstrap" in how:
        sm = stats.t_interval(margins)
        seed_note = (f" The windows' interval treats the trained models as fixed; across seeds the margin's t "
                     f"interval is [{sm.low:.3f}, {sm.high:.3f}] over {len(seeds)} seeds (seed-to-seed training "
                     "noise, not in the bootstrap).")
    details = (f"{dec.text()}. Intervals: {how}. nats/byte at ctx {' / '.join(map(str, lengths))}, trained at ctx "
               f"{lengths[0]}: {per_seed}.{expl}"
               " Nothing here holds by construction: both parts come from trained models and can fail (the "
               "paired design, same seed for init and batches in both arms, is the only sanity element)."
               + seed_note)
    claim = Claim(
        id="A",
        statement="PoPE extrapolates to longer contexts than it was trained on much better than RoPE, "
                  "without an in-distribution penalty.",
        metric=f"mean over seeds of (loss_RoPE({hi}) - loss_RoPE({lo})) - (loss_PoPE({hi}) - loss_PoPE({lo})) "
               f"and loss_PoPE({lo}) - loss_RoPE({lo}), nats/byte",
        measured={"extrapolation_margin": margin, "in_distribution_gap": penalty},
        threshold=f"margin >= {CLAIM_A_MARGIN} and gap <= {CLAIM_A_PENALTY} nats/byte",
        decision=dec, kind="gate", details=details, paper=PAPER_A, per_seed=margins,
    )
    return claim, {"degradation": deg, "in_distribution": in_dist, "margin_per_seed": margins,
                   "gap_per_seed": gaps}


# ------------------------------------------------------------------------------------------- claim B
@torch.no_grad()
def decoupling_check(trials: int = 100, head_dim: int = 8, t: int = 5, max_pos: int = 10, seed: int = 0, *,
                     encoding: torch.nn.Module | None = None) -> dict:
    """Spec 6B: one query at position t, one key replicated at positions 0..max_pos, delta = 0.

    Args:
        trials: random (q, k) draws; head_dim: d; t: query position (0 <= t <= max_pos); seed: the draws' seed.
        encoding: the PoPE-like module under test (default `PoPE(head_dim, 1)`; tests pass a broken one).
    Returns:
        the argmax offsets s* - t of the PoPE and RoPE scores per trial, and the max abs error of the score
        identity (2d-dim dot product of the encoded q/k vs. the polar formula with softplus magnitudes, fp64).
    """
    trials = check_int(trials, "trials", min=1)
    head_dim = check_int(head_dim, "head_dim", min=2)
    max_pos = check_int(max_pos, "max_pos", min=1)
    t = check_int(t, "t", min=0, max=max_pos)
    g = torch_generator(check_seed(seed))
    pope = PoPE(head_dim, 1) if encoding is None else encoding
    rope = RoPE(head_dim - head_dim % 2, 1)
    S = max_pos + 1
    pope_off, rope_off, err = [], [], 0.0
    theta = PoPE(head_dim, 1).inv_freq  # the formula's frequencies, independent of the module under test
    for _ in range(trials):
        q = torch.randn(1, 1, 1, head_dim, generator=g, dtype=torch.float64)
        k = torch.randn(1, 1, 1, head_dim, generator=g, dtype=torch.float64).expand(1, 1, S, head_dim)
        qp, kp = torch.tensor([t]), torch.arange(S)
        q2, k2 = pope.encode(q, k, qp, kp)
        sp = (q2 @ k2.transpose(-1, -2))[0, 0, 0]
        d = rope.head_dim
        qr, kr = rope.encode(q[..., :d], k[..., :d], qp, kp)
        sr = (qr @ kr.transpose(-1, -2))[0, 0, 0]
        pope_off.append(int(sp.argmax()) - t)
        rope_off.append(int(sr.argmax()) - t)
        direct = (F.softplus(q[0, 0, 0]) * F.softplus(k[0, 0, 0]) * torch.cos((kp[:, None] - t).double() * theta)
                  ).sum(-1)
        err = max(err, float((direct - sp).abs().max()))
    return {"pope_offsets": pope_off, "rope_offsets": rope_off, "identity_max_abs_err": err}


def _hist(offsets: list[int]) -> dict[int, int]:
    vals, counts = np.unique(np.asarray(offsets), return_counts=True)
    return {int(v): int(c) for v, c in zip(vals, counts)}


def claim_b(dec: dict, trials: int) -> tuple[Claim, Claim]:
    """Claims B (gate) and B0 (sanity) from `decoupling_check`'s output.

    B: PoPE's peak stays at s = t in every trial (deterministic draws: exact) while RoPE's moves in more than half
    of them (a proportion over the random trials: bootstrap interval). B0: the encoded dot product equals the polar
    formula (exact; holds by construction for a correct implementation)."""
    pope_at = sum(o == 0 for o in dec["pope_offsets"])
    away = np.array([float(o != 0) for o in dec["rope_offsets"]])
    rope_away = int(away.sum())
    err = dec["identity_max_abs_err"]
    if len(away) >= 2:
        iv = stats.bootstrap_interval(away)
    else:
        iv = stats.t_interval(away, unit="trials")
    d_pope = stats.exact(pope_at, trials, ">=", label=f"PoPE peak at s = t in {trials}/{trials} trials")
    d_rope = stats.decide(float(away.mean()), iv, 0.5, ">=", label="RoPE peak elsewhere in > 1/2 of the trials")
    dec_b = stats.all_of(d_pope, d_rope, label="B")
    b = Claim(
        id="B",
        statement="With zero phase bias PoPE's attention score peaks exactly at the query position for any "
                  "content (what and where are decoupled), while RoPE's preferred offset moves with the content.",
        metric="trials with PoPE argmax at s = t; fraction of trials with RoPE argmax elsewhere",
        measured={"pope_peak_at_t": pope_at, "rope_peak_elsewhere": rope_away, "trials": trials},
        threshold=f"PoPE {trials}/{trials}, RoPE elsewhere in > {trials // 2}/{trials}",
        decision=dec_b, kind="gate", paper=PAPER_B,
        details=f"{dec_b.text()}. Query at t, one random key replicated at every position s, delta = 0, {trials} "
                f"trials; argmax offset s* - t histograms: PoPE {_hist(dec['pope_offsets'])}, RoPE "
                f"{_hist(dec['rope_offsets'])}. The PoPE part holds by construction for a correct PoPE (with "
                "delta = 0 every term softplus(q_c) softplus(k_c) cos((s - t) theta_c) is largest at s = t) and "
                "fails only if the encoding is wrong (e.g. a signed magnitude or a content phase; tested); the "
                "RoPE part, an empirical property of random content, can fail.",
    )
    b0 = Claim(
        id="B0",
        statement="PoPE's encoded q.k equals the polar score formula sum_c softplus(q_c) softplus(k_c) "
                  "cos((s - t) theta_c) (implementation check).",
        metric="max |2d-dim dot product of the encoded q, k - polar formula| over trials and positions (fp64)",
        measured={"identity_max_abs_err": err},
        threshold="<= 1e-10",
        decision=stats.exact(err, 1e-10, "<="), kind="sanity", paper=PAPER_B,
        details="Holds by construction for a correct implementation (deterministic, fp64, so exact); a signed "
                f"magnitude or a content phase breaks it (tested). max abs error {err:.2g}.",
    )
    return b, b0


# ------------------------------------------------------------------------------------------- claim C
def claim_c(runs: list[dict]) -> Claim:
    """Claim C from Indirect Indexing runs [{"arm", "seed", "accuracy" in [0, 1]}]."""
    acc = {a: [100 * r["accuracy"] for r in sorted(runs, key=lambda r: r["seed"]) if r["arm"] == a]
           for a in ("pope", "rope")}
    gap = float(np.mean(acc["pope"]) - np.mean(acc["rope"]))
    gaps = [p - r for p, r in zip(acc["pope"], acc["rope"])]
    dec = stats.decide(gap, stats.paired_t_interval(acc["pope"], acc["rope"]), CLAIM_C_POINTS, ">=")
    return Claim(
        id="C",
        statement="On Indirect Indexing PoPE reaches high accuracy (paper 94.8 %) where RoPE stays near chance "
                  "(11.2 %).",
        metric="mean test accuracy PoPE - RoPE over seeds, percentage points",
        measured={"gap_points": gap, "pope_mean": float(np.mean(acc["pope"])),
                  "rope_mean": float(np.mean(acc["rope"]))},
        threshold=f">= {CLAIM_C_POINTS} points",
        decision=dec, kind="gate", paper=PAPER_C, per_seed=gaps,
        details=f"{dec.text()} (paired t interval over the seeds). per-seed accuracy (%): "
                + "; ".join(f"{a}: {[round(v, 1) for v in acc[a]]}" for a in acc)
                + ". Nothing holds by construction: both arms are trained; chance is 1/alphabet."
                + ("" if dec.held else
                   " At short training budgets neither encoding learns the task (spec 6 calibration), "
                   "so a small-budget run says nothing about the paper's claim."),
    )


# ------------------------------------------------------------------------------------------- figures
NAMES = {"pope": "PoPE", "rope": "RoPE", "alibi": "ALiBi", "nope": "NoPE"}


def fig_extrapolation(runs: list[dict], lengths: list[int], seeds: list[int]):
    fig, ax = new_figure()
    colors = {"pope": "#1f77b4", "rope": "#d62728", "alibi": "#2ca02c", "nope": "#7f7f7f"}
    for r in runs:
        ls = ["-", "--", ":", "-."][seeds.index(r["seed"]) % 4]
        ax.plot(lengths, [r["losses"][str(t)] for t in lengths], ls, marker="o", color=colors.get(r["arm"]),
                label=f"{NAMES.get(r['arm'], r['arm'])} seed {r['seed']}")
    ax.axvline(lengths[0], color="k", lw=0.8, alpha=0.5)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("evaluation context length (trained at %d)" % lengths[0])
    ax.set_ylabel("validation loss (nats/byte)")
    ax.set_title("Length extrapolation, byte-level stdlib corpus")
    ax.legend(fontsize=7)
    return fig


def fig_decoupling(dec: dict, max_pos: int, t: int):
    fig, ax = new_figure()
    bins = np.arange(-t - 0.5, max_pos - t + 1.5)
    ax.hist([dec["pope_offsets"], dec["rope_offsets"]], bins=bins, label=["PoPE (delta = 0)", "RoPE"])
    ax.set_xlabel("argmax offset s* - t of the score over key positions")
    ax.set_ylabel("trials")
    ax.set_title("Content cannot move PoPE's preferred offset")
    ax.legend()
    return fig


def fig_ii(runs: list[dict]):
    fig, ax = new_figure()
    arms = sorted({r["arm"] for r in runs})
    for i, a in enumerate(arms):
        accs = [100 * r["accuracy"] for r in runs if r["arm"] == a]
        ax.bar(i, np.mean(accs), yerr=np.std(accs) if len(accs) > 1 else None, capsize=4)
        ax.scatter([i] * len(accs), accs, color="k", s=10, zorder=3)
    ax.set_xticks(range(len(arms)), [NAMES.get(a, a) for a in arms])
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("Indirect Indexing")
    return fig


__all__ = ["CLAIM_A_MARGIN", "CLAIM_A_PENALTY", "CLAIM_C_POINTS", "DECOUPLING_DEFAULTS", "claim_a", "claim_b",
           "claim_c", "decoupling_check", "fig_extrapolation", "fig_decoupling", "fig_ii"]
