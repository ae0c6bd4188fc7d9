"""The paper's controls and statistics: scoring, McNemar, the persona-split probe and the privileged-info report.

- `contains_match(completions, answers)`: the paper's scoring, case-insensitive containment of the gold answer in
  the completion. We require the answer to stand as whole words (not inside a longer word), so "go" does not
  match "good"; `word_boundary=False` gives the paper's plain substring test.
- `first_token_match`: the completion's first word equals the answer's first word (spec 9: substring scoring can
  be gamed by listing many values, so both are reported).
- `mcnemar(a_correct, b_correct)`: exact two-sided McNemar test on paired booleans; `bonferroni` corrects a list.
- `any_layer_accuracy`: Patchscopes' "correct for ANY target layer, averaged over source layers".
- `grouped_probe_accuracy`: the linear probe of review note 1, split by persona (all paraphrases of a held-out
  persona in its test fold), with the read site picked by inner cross-validation on the training folds only.
- `privileged_info_report(items, verbalizer, ...)`: runs a verbalizer and the controls (zero-shot, self-report,
  inversion) on the same items and returns the metric table the claim checks use.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.stats import binom

from icml26.common.validation import check_bool, check_int, check_seed
from icml26.verbalization.baselines import LinearProbe
from icml26.verbalization.data import EvalItem
from icml26.verbalization.verbalize import check_str_list

__all__ = ["contains_match", "first_token_match", "mcnemar", "bonferroni",
           "any_layer_accuracy", "grouped_probe_accuracy", "privileged_info_report", "accuracy"]


def _pair_lists(completions, answers) -> tuple[list[str], list[str]]:
    if isinstance(completions, str) or isinstance(answers, str):
        raise TypeError("completions and answers must be sequences of strings, not single strings")
    for name, x in (("completions", completions), ("answers", answers)):
        if not hasattr(x, "__iter__"):
            raise TypeError(f"{name} must be a sequence of strings, got {type(x).__name__}")
    comp, ans = list(completions), list(answers)
    if len(comp) != len(ans):
        raise ValueError(f"completions ({len(comp)}) and answers ({len(ans)}) must have the same length")
    for c in comp:
        if not isinstance(c, str):
            raise TypeError(f"completions must hold strings, got {type(c).__name__}")
    for a in ans:
        if not isinstance(a, str):
            raise TypeError(f"answers must hold strings, got {type(a).__name__}")
        if not a.strip():
            raise ValueError("answers must be non-empty strings (an empty answer matches everything)")
    return comp, ans


def contains_match(completions: Sequence[str], answers: Sequence[str], word_boundary: bool = True) -> np.ndarray:
    """Bool array: does completion i contain answer i (case-insensitive; as whole words by default)?"""
    check_bool(word_boundary, "word_boundary")
    comp, ans = _pair_lists(completions, answers)
    out = np.zeros(len(comp), dtype=bool)
    for i, (c, a) in enumerate(zip(comp, ans)):
        a = " ".join(a.lower().split())
        c = " ".join(c.lower().split())
        if word_boundary:
            out[i] = re.search(r"(?<![0-9a-z])" + re.escape(a) + r"(?![0-9a-z])", c) is not None
        else:
            out[i] = a in c
    return out


def first_token_match(completions: Sequence[str], answers: Sequence[str]) -> np.ndarray:
    """Bool array: the completion's first word equals the answer's first word (case-insensitive)."""
    comp, ans = _pair_lists(completions, answers)
    return np.array([bool(c.split()) and c.split()[0].lower() == a.split()[0].lower() for c, a in zip(comp, ans)],
                    dtype=bool)


def accuracy(completions: Sequence[str], answers: Sequence[str | None]) -> float:
    """Mean `contains_match` over the items whose answer is not None (NaN if none)."""
    keep = [i for i, a in enumerate(answers) if a is not None]
    if not keep:
        return float("nan")
    return float(contains_match([completions[i] for i in keep], [answers[i] for i in keep]).mean())


def _bools(x, name: str) -> np.ndarray:
    if isinstance(x, str) or not hasattr(x, "__iter__"):
        raise TypeError(f"{name} must be a sequence of booleans, got {type(x).__name__}")
    try:
        arr = np.asarray(list(x) if not hasattr(x, "shape") else x)
    except ValueError:
        raise ValueError(f"{name} must be a flat sequence of booleans (got a ragged one)") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.dtype != bool:
        if arr.dtype.kind in "iuf" and np.all(np.isin(arr, (0, 1))):
            arr = arr.astype(bool)
        else:
            raise TypeError(f"{name} must hold booleans (or 0/1), got dtype {arr.dtype}")
    return arr


def mcnemar(a_correct, b_correct) -> float:
    """Exact two-sided McNemar p-value for paired correctness vectors (1.0 when no pair disagrees)."""
    a, b = _bools(a_correct, "a_correct"), _bools(b_correct, "b_correct")
    if a.shape != b.shape:
        raise ValueError(f"a_correct ({a.size}) and b_correct ({b.size}) must have the same length")
    n01, n10 = int(np.sum(~a & b)), int(np.sum(a & ~b))
    n = n01 + n10
    if n == 0:
        return 1.0
    return float(min(1.0, 2.0 * binom.cdf(min(n01, n10), n, 0.5)))


def bonferroni(pvalues: Sequence[float]) -> list[float]:
    """Bonferroni-corrected p-values min(1, m * p)."""
    ps = [float(p) for p in pvalues]
    for p in ps:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p-values must lie in [0, 1], got {p}")
    return [min(1.0, p * len(ps)) for p in ps]


def any_layer_accuracy(sweep: Mapping[tuple[int, int], Sequence[str]], answers: Sequence[str]) -> dict[str, Any]:
    """Patchscopes summary: per source layer, the share of items correct at ANY target layer; then their mean.

    Returns {"any_layer": mean over source layers, "per_source": {ls: acc}, "grid": {"ls,lt": acc}}.
    """
    if not sweep:
        raise ValueError("sweep must hold at least one (source, target) layer entry")
    ans = list(answers)
    grid, by_src = {}, {}
    for (ls, lt), comp in sweep.items():
        ok = contains_match(comp, ans)
        grid[f"{ls},{lt}"] = float(ok.mean()) if ok.size else float("nan")
        by_src[ls] = ok if ls not in by_src else (by_src[ls] | ok)
    per = {int(ls): float(ok.mean()) if ok.size else float("nan") for ls, ok in by_src.items()}
    return {"any_layer": float(np.mean(list(per.values()))), "per_source": per, "grid": grid}


def grouped_probe_accuracy(features: Mapping[str, np.ndarray], labels: Sequence, groups: Sequence, *,
                           n_folds: int = 4, seed: int = 0, l2: float | Sequence[float] = 1e-2,
                           max_iter: int = 200) -> dict[str, Any]:
    """Accuracy of a linear probe evaluated on held-out groups (e.g. personas), site and L2 chosen by inner CV.

    Args:
        features: site name -> (n, d) features (e.g. "L1_last_name", "L2_period"); same rows for every site.
        labels: (n,) labels to decode.
        groups: (n,) group ids; all rows of a group fall in the same fold.
        n_folds: outer folds over groups; the site is picked inside each training split by an inner
            (n_folds - 1)-fold CV over its groups, so the test fold never influences the choice.
        l2: one `LinearProbe` L2 penalty or a grid of them; the (site, l2) pair is picked by the inner CV, the
            same procedure for every model probed (the tuned-on-validation comparison of issue 37).
        max_iter: `LinearProbe` iterations.
    Returns:
        {"accuracy", "per_fold", "sites" (chosen site per fold), "l2" (chosen penalty per fold), "n", "correct"}.
    """
    n_folds = check_int(n_folds, "n_folds", min=2)
    seed = check_seed(seed)
    if not isinstance(features, Mapping) or not features:
        raise TypeError("features must be a non-empty mapping site -> (n, d) array")
    X = {k: np.asarray(v, dtype=float) for k, v in features.items()}
    n = next(iter(X.values())).shape[0]
    for k, v in X.items():
        if v.ndim != 2 or v.shape[0] != n:
            raise ValueError(f"features[{k!r}] must be (n={n}, d), got shape {v.shape}")
        if not np.all(np.isfinite(v)):
            raise ValueError(f"features[{k!r}] must be finite")
    y = np.asarray(list(labels))
    g = np.asarray(list(groups))
    if y.shape != (n,) or g.shape != (n,):
        raise ValueError(f"labels and groups must have one entry per row ({n})")
    uniq = np.unique(g)
    if len(uniq) < n_folds:
        raise ValueError(f"need at least n_folds={n_folds} groups, got {len(uniq)}")
    grid = [l2] if isinstance(l2, (int, float)) and not isinstance(l2, bool) else list(l2)
    if not grid:
        raise ValueError("l2 must be a penalty or a non-empty list of penalties")
    rng = np.random.default_rng(seed)
    fold_of = {grp: i % n_folds for i, grp in enumerate(rng.permutation(uniq))}
    folds = np.array([fold_of[x] for x in g])
    correct = np.zeros(n, dtype=bool)
    per_fold, sites, l2s = [], [], []
    for k in range(n_folds):
        train, test = folds != k, folds == k
        inner = [f for f in range(n_folds) if f != k]
        best, best_acc = None, -1.0
        for site, Xs in X.items():
            for pen in grid:
                accs = []
                for f in inner:
                    tr, va = train & (folds != f), folds == f
                    if len(np.unique(y[tr])) < 2:
                        continue
                    accs.append(LinearProbe(l2=pen, max_iter=max_iter).fit(Xs[tr], y[tr]).score(Xs[va], y[va]))
                score = float(np.mean(accs)) if accs else -1.0
                if score > best_acc:
                    best, best_acc = (site, pen), score
        site, pen = best if best is not None else (next(iter(X)), grid[0])  # no inner split with 2 labels
        if len(np.unique(y[train])) < 2:  # a single training label: the probe can only predict it
            pred = np.full(int(test.sum()), y[train][0], dtype=y.dtype)
        else:
            pred = LinearProbe(l2=pen, max_iter=max_iter).fit(X[site][train], y[train]).predict(X[site][test])
        correct[test] = pred == y[test]
        per_fold.append(float(np.mean(pred == y[test])))
        sites.append(site)
        l2s.append(pen)
    return {"accuracy": float(correct.mean()), "per_fold": per_fold, "sites": sites, "l2": l2s, "n": int(n),
            "correct": correct}


def privileged_info_report(items: Sequence[EvalItem], verbalizer, *, zero_shot=None, self_report=None,
                           inversion=None, chance: float | None = None) -> dict[str, Any]:
    """Run `verbalizer` and the controls on the same items; returns the metric table of one condition.

    Args:
        items: `EvalItem`s (source, question, target = M1's fact, belief = the verbalizer's own answer or None).
        verbalizer: anything with `verbalize(source_texts, questions) -> list[str]` (Patchscopes, LIT, ...).
        zero_shot: input-only control with the same interface (the verbalizer reading the text), optional.
        self_report: the target asked directly (a `ZeroShotBaseline` of M1), optional.
        inversion: a callable (source_texts, questions) -> completions (e.g. inversion + zero-shot), optional.
        chance: chance accuracy of one guess, stored for the claim checks.
    Returns:
        {"n", "acc_target", "acc_verbalizer_belief", "first_token_target", "zero_shot", "self_report",
         "inversion", "p_verbalizer_vs_zero_shot" (exact McNemar),
         "completions", "correct_target", "correct_belief", "chance"}; controls not given are omitted.
    """
    items = list(items)
    if not items:
        raise ValueError("items must hold at least one EvalItem")
    for it in items:
        if not isinstance(it, EvalItem):
            raise TypeError(f"items must hold EvalItem records, got {type(it).__name__}")
    if not callable(getattr(verbalizer, "verbalize", None)):
        raise TypeError(f"verbalizer must have verbalize(source_texts, questions), got {type(verbalizer).__name__}")
    src = check_str_list([it.source for it in items], "items.source")
    qs = check_str_list([it.question for it in items], "items.question")
    tgt = [it.target for it in items]
    comp = verbalizer.verbalize(src, qs)
    out: dict[str, Any] = {"n": len(items), "completions": comp, "chance": chance}
    ok_t = contains_match(comp, tgt)
    out["correct_target"] = ok_t
    out["acc_target"] = float(ok_t.mean())
    out["first_token_target"] = float(first_token_match(comp, tgt).mean())
    beliefs = [it.belief for it in items]
    if any(b is not None for b in beliefs):
        keep = [i for i, b in enumerate(beliefs) if b is not None]
        ok_b = contains_match([comp[i] for i in keep], [beliefs[i] for i in keep])
        out["correct_belief"] = ok_b
        out["acc_verbalizer_belief"] = float(ok_b.mean())
    for name, ctrl in (("zero_shot", zero_shot), ("self_report", self_report)):
        if ctrl is not None:
            c = ctrl.verbalize(src, qs)
            ok = contains_match(c, tgt)
            out[name] = float(ok.mean())
            out[f"{name}_correct"] = ok
            out[f"{name}_completions"] = c
    if inversion is not None:
        c = inversion(src, qs)
        ok = contains_match(c, tgt)
        out["inversion"] = float(ok.mean())
        out["inversion_correct"] = ok
    if zero_shot is not None:
        out["p_verbalizer_vs_zero_shot"] = mcnemar(ok_t, out["zero_shot_correct"])
    return out
