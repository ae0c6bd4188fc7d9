"""Frozen-embedding probes for the map-enrichment tasks (spec section 2.7, `mepoi.probe`).

`EmbedProbe(modality, task)` follows the released `EmbedTuner`: modality "text" -> MLP(d_text -> h -> out);
"poi" -> MLP(d -> h -> ReLU -> Dropout(0.5) -> out); "both" -> one branch per modality (-> h each), concatenated,
-> MLP(2h -> h -> out). Trained with AdamW (weight decay 1e-10), early stopping on the validation loss (patience
10), the best epoch kept; decision thresholds of binary/multilabel outputs are tuned on the validation set for max
F1 (the released code tunes them on the evaluated split itself; we tune on validation and apply to test).
CPU defaults (spec section 6): hidden 128, lr 1e-3 (the released 1e-5 is far too slow at 1.5 k POIs), <= 200
epochs. Deviation [choice]: inputs are standardised per feature on the training split (`standardize=True`),
which puts unit-norm text embeddings and N(0, 1)-initialised POI tables on one scale for the MLP.

Tasks (`TASKS`): opening_hours (168-bit multilabel; BCE; macro AUROC), closure (binary; BCE with
pos_weight = N / N_pos; AUROC), busyness (24-d profile in [0, 1]; BCE on sigmoid outputs; MAE), price (3 classes;
CE; macro F1), function (category x subtype; CE; accuracy). Any other task works through `kind=`:
"multilabel", "binary", "profile" or "multiclass".
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.base import BaseEstimator

from icml26.common.validation import check_array, check_bool, check_choice, check_float, check_int, check_seed

__all__ = ["TASKS", "TaskSpec", "EmbedProbe", "evaluate_tasks", "make_splits", "task_metrics"]


@dataclass(frozen=True)
class TaskSpec:
    kind: str          # multilabel | binary | profile | multiclass
    metric: str        # headline metric
    higher_is_better: bool


TASKS: dict[str, TaskSpec] = {
    "opening_hours": TaskSpec("multilabel", "macro_auroc", True),
    "closure": TaskSpec("binary", "auroc", True),
    "busyness": TaskSpec("profile", "mae", False),
    "price": TaskSpec("multiclass", "macro_f1", True),
    "function": TaskSpec("multiclass", "accuracy", True),
}
KINDS = {"multilabel": "macro_auroc", "binary": "auroc", "profile": "mae", "multiclass": "accuracy"}


def _spec(task: Any, kind: Any) -> TaskSpec:
    if kind is not None:
        check_choice(kind, "kind", tuple(KINDS))
        return TaskSpec(kind, KINDS[kind], kind != "profile")
    check_choice(task, "task", tuple(TASKS))
    return TASKS[task]


class _Net(nn.Module):
    def __init__(self, modality: str, d_text: int, d_poi: int, out: int, hidden: int, dropout: float,
                 architecture: str = "mlp"):
        super().__init__()
        self.modality, self.architecture = modality, architecture
        if architecture == "linear":  # logistic / linear probe on the concatenated inputs
            self.head = nn.Linear({"text": d_text, "poi": d_poi, "both": d_text + d_poi}[modality], out)
        elif modality == "text":
            self.head = nn.Sequential(nn.Linear(d_text, hidden), nn.ReLU(), nn.Linear(hidden, out))
        elif modality == "poi":
            self.head = nn.Sequential(nn.Linear(d_poi, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, out))
        else:
            self.text = nn.Sequential(nn.Linear(d_text, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
            self.poi = nn.Sequential(nn.Linear(d_poi, hidden), nn.ReLU(), nn.Dropout(dropout),
                                     nn.Linear(hidden, hidden))
            self.head = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.ReLU(), nn.Linear(hidden, out))

    def forward(self, t: torch.Tensor | None, p: torch.Tensor | None) -> torch.Tensor:
        if self.architecture == "linear":
            return _apply(self.head, torch.cat([x for x in (p, t) if x is not None], dim=1))
        if self.modality == "text":
            return _apply(self.head, t)
        if self.modality == "poi":
            return _apply(self.head, p)
        return _apply(self.head, torch.cat([_apply(self.poi, p), _apply(self.text, t)], dim=1))


def _apply(layers: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """`layers(x)` for a Linear or a Sequential of Linear / ReLU / Dropout, as the functional calls those
    modules' `forward`s make (the same kernels, so the same numbers and random draws) without the per-module
    call overhead, which is a large part of a small probe's step."""
    for m in (layers,) if isinstance(layers, nn.Linear) else layers:
        if isinstance(m, nn.Linear):
            x = F.linear(x, m.weight, m.bias)
        elif isinstance(m, nn.ReLU):
            x = F.relu(x, inplace=m.inplace)
        elif isinstance(m, nn.Dropout):
            x = F.dropout(x, m.p, m.training, m.inplace)
        else:
            x = m(x)
    return x


class _AdamW:
    """`torch.optim.AdamW`'s single-tensor update (CPU default: no amsgrad / maximize / capturable / foreach) as
    the same tensor operations in the same order, so the weights are bit-identical (tests/mepoi/test_model.py), but
    without the optimizer's per-step dispatch (hooks, profiler records, dynamo guards), which is most of a small
    probe's step time; the update of all parameters goes through `torch._foreach_*` (on CPU a loop over the same
    per-tensor kernels). Step counts are Python ints (torch keeps float32 tensors; both give the same float `t`)."""

    def __init__(self, params, lr: float, weight_decay: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8):
        self.params = [q for q in params if q.requires_grad]
        self.lr, self.wd, (self.b1, self.b2), self.eps = float(lr), float(weight_decay), betas, float(eps)
        # torch multiplies by (1 - lr * wd) even when that factor is 1.0 in float32 (wd 1e-10 at lr 1e-3: the
        # probes' setting); x * 1.0 is x for every float32 (NaN, inf, -0 and subnormals too), so that multiply
        # is skipped: the weights stay bit-identical (tests/mepoi/test_model.py)
        self.decays = self.wd != 0 and float(np.float32(1.0 - self.lr * self.wd)) != 1.0
        self.m = [torch.zeros_like(q, memory_format=torch.preserve_format) for q in self.params]
        self.v = [torch.zeros_like(q, memory_format=torch.preserve_format) for q in self.params]
        self.t = [0] * len(self.params)

    def zero_grad(self, set_to_none: bool = True) -> None:  # torch's default: gradients become None
        for q in self.params:
            q.grad = None

    @torch.no_grad()
    def step(self) -> None:
        lr, b1, b2 = self.lr, self.b1, self.b2
        live = [i for i, q in enumerate(self.params) if q.grad is not None]  # torch skips a gradient-less one
        for i in live:
            self.t[i] += 1
        if live and len({self.t[i] for i in live}) == 1:
            # one step count for all: the same per-tensor operations as below through torch's _foreach_ ops,
            # which on CPU loop over the tensors calling those very kernels (bit-identical, less dispatch)
            t = float(self.t[live[0]])
            qs, gs = [self.params[i] for i in live], [self.params[i].grad for i in live]
            ms, vs = [self.m[i] for i in live], [self.v[i] for i in live]
            if self.decays:
                torch._foreach_mul_(qs, 1 - lr * self.wd)
            torch._foreach_lerp_(ms, gs, 1 - b1)
            torch._foreach_mul_(vs, b2)
            torch._foreach_addcmul_(vs, gs, gs, value=1 - b2)
            denom = torch._foreach_sqrt(vs)
            torch._foreach_div_(denom, (1 - b2 ** t) ** 0.5)
            torch._foreach_add_(denom, self.eps)
            torch._foreach_addcdiv_(qs, ms, denom, value=-(lr / (1 - b1 ** t)))
            return
        for i in live:
            q, g = self.params[i], self.params[i].grad
            t = float(self.t[i])
            if self.decays:
                q.mul_(1 - lr * self.wd)
            self.m[i].lerp_(g, 1 - b1)
            self.v[i].mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (self.v[i].sqrt() / ((1 - b2 ** t) ** 0.5)).add_(self.eps)
            q.addcdiv_(self.m[i], denom, value=-(lr / (1 - b1 ** t)))


def auroc_columns(y: np.ndarray, s: np.ndarray, axis: int = 0) -> np.ndarray:
    """AUROC of scores `s` against 0/1 labels `y` along `axis` (Mann-Whitney with average ranks for ties), for
    every other index at once; NaN where the labels are all one class."""
    from scipy.stats import rankdata

    y = np.asarray(y, float)
    r = rankdata(np.asarray(s, float), axis=axis)
    npos = y.sum(axis)
    nneg = y.shape[axis] - npos
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = ((r * y).sum(axis) - npos * (npos + 1) / 2) / (npos * nneg)
    return np.where((npos > 0) & (nneg > 0), auc, np.nan)


def _f1(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
    den = 2 * tp + fp + fn
    return np.where(den > 0, 2 * tp / np.maximum(den, 1e-12), 0.0)


def _best_threshold(y: np.ndarray, p: np.ndarray) -> float:
    """Threshold on probabilities maximising F1 (0.5 when the labels are constant)."""
    if y.min() == y.max():
        return 0.5
    order = np.argsort(-p)
    ys, ps = y[order], p[order]
    tp = np.cumsum(ys)
    fp = np.cumsum(1 - ys)
    f1 = 2 * tp / np.maximum(2 * tp + fp + (ys.sum() - tp), 1e-12)
    k = int(np.argmax(f1))
    return float(ps[k] - 1e-12) if k + 1 == len(ps) else float((ps[k] + ps[k + 1]) / 2)


def task_metrics(kind: str, y: np.ndarray, prob: np.ndarray, threshold: Any = 0.5) -> dict[str, float]:
    """All metrics of a task kind: y (n,) or (n, k) labels, prob (n,) / (n, k) probabilities (multiclass: (n, C)).

    multilabel: macro AUROC over the columns with both classes, macro F1; binary: AUROC, AUPRC, F1; profile:
    MAE and mean cosine similarity; multiclass: accuracy and macro F1 over the classes present (F1 of a class
    never predicted nor present is skipped, like scikit-learn's zero_division=0)."""
    check_choice(kind, "kind", tuple(KINDS))
    y = np.asarray(y)
    if kind == "profile":
        cos = (prob * y).sum(1) / np.maximum(np.linalg.norm(prob, axis=1) * np.linalg.norm(y, axis=1), 1e-12)
        return {"mae": float(np.mean(np.abs(prob - y))), "cosine": float(np.mean(cos))}
    if kind == "multiclass":
        pred = prob.argmax(1)
        c = prob.shape[1]
        tp = np.bincount(y[pred == y], minlength=c)[:c].astype(float)
        fp = np.bincount(pred, minlength=c)[:c] - tp
        fn = np.bincount(y, minlength=c)[:c] - tp
        present = (tp + fp + fn) > 0
        f1 = _f1(tp, fp, fn)
        return {"accuracy": float(np.mean(pred == y)), "macro_f1": float(f1[present].mean()) if present.any() else 0.0}
    if kind == "binary":
        from sklearn.metrics import average_precision_score

        yy = y.astype(int)
        pred = (prob >= threshold).astype(int)
        tp, fp, fn = float(((pred == 1) & (yy == 1)).sum()), float(((pred == 1) & (yy == 0)).sum()), \
            float(((pred == 0) & (yy == 1)).sum())
        return {"auroc": float(auroc_columns(yy, prob)),
                "auprc": float(average_precision_score(yy, prob)) if yy.sum() > 0 else float("nan"),
                "f1": float(_f1(np.array(tp), np.array(fp), np.array(fn)))}
    aucs = auroc_columns(y, prob, axis=0)
    pred = prob >= np.asarray(threshold)
    yb = y.astype(bool)
    f1 = _f1((pred & yb).sum(0).astype(float), (pred & ~yb).sum(0).astype(float), (~pred & yb).sum(0).astype(float))
    return {"macro_auroc": float(np.nanmean(aucs)) if np.isfinite(aucs).any() else float("nan"),
            "macro_f1": float(f1.mean())}


class EmbedProbe(BaseEstimator):
    """A small MLP on frozen embeddings for one map-enrichment task (scikit-learn style).

    Args:
        modality: "text", "poi" or "both". task: one of `TASKS` (or use `kind`). kind: task kind for a custom task.
        hidden: MLP width (paper 256, CPU 128). dropout: on the POI branch (0.5). lr (1e-3), weight_decay (1e-10),
        max_epochs (200), patience (10, on the validation loss), batch_size (64), standardize (True), seed.
        architecture: "mlp" (the released EmbedTuner, default) or "linear" (a logistic / linear probe on the
            concatenated inputs: the sigmoid/softmax of one linear layer, same losses and early stopping).
    `X` is a dict {"text": (n, d_text), "poi": (n, d_poi)} (lists read as arrays), or for a one-modality probe
    the array itself. Labels: opening_hours (n, 168) 0/1, closure (n,) 0/1, busyness (n, 24) in [0, 1],
    price / function (n,) class ints. Without `X_val`, 20 % of the training rows are held out for early stopping
    and thresholds.
    """

    def __init__(self, modality: str = "both", task: str = "function", *, kind: str | None = None,
                 hidden: int = 128, dropout: float = 0.5, lr: float = 1e-3, weight_decay: float = 1e-10,
                 max_epochs: int = 200, patience: int = 10, batch_size: int = 64, standardize: bool = True,
                 seed: int = 0, architecture: str = "mlp"):
        self.modality, self.task, self.kind = modality, task, kind
        self.hidden, self.dropout, self.lr, self.weight_decay = hidden, dropout, lr, weight_decay
        self.max_epochs, self.patience, self.batch_size = max_epochs, patience, batch_size
        self.standardize, self.seed, self.architecture = standardize, seed, architecture
        self._check_params()

    def _check_params(self) -> dict[str, Any]:
        return {"modality": check_choice(self.modality, "modality", ("text", "poi", "both")),
                "spec": _spec(self.task, self.kind), "hidden": check_int(self.hidden, "hidden", min=1),
                "dropout": check_float(self.dropout, "dropout", min=0, max=1, max_open=True),
                "lr": check_float(self.lr, "lr", min=0, min_open=True),
                "weight_decay": check_float(self.weight_decay, "weight_decay", min=0),
                "max_epochs": check_int(self.max_epochs, "max_epochs", min=1),
                "patience": check_int(self.patience, "patience", min=1),
                "batch_size": check_int(self.batch_size, "batch_size", min=1),
                "standardize": check_bool(self.standardize, "standardize"), "seed": check_seed(self.seed),
                "architecture": check_choice(self.architecture, "architecture", ("mlp", "linear"))}

    # ------------------------------------------------------------------------------------------ inputs
    def _inputs(self, X: Any, modality: str, name: str = "X") -> dict[str, np.ndarray]:
        need = ("text", "poi") if modality == "both" else (modality,)
        if isinstance(X, Mapping):
            missing = [k for k in need if X.get(k) is None]
            if missing:
                raise ValueError(f"modality={modality!r} needs {name}[{missing[0]!r}] (the {missing[0]} embeddings)")
            out = {k: check_array(X[k], f"{name}[{k!r}]", ndim=2, dtype=np.float32) for k in need}
        else:
            if modality == "both":
                raise ValueError(f"modality='both' needs {name} as a dict with 'text' and 'poi' embeddings")
            out = {modality: check_array(X, name, ndim=2, dtype=np.float32)}
        ns = {v.shape[0] for v in out.values()}
        if len(ns) != 1:
            raise ValueError(f"{name}: the text and poi embeddings have different numbers of rows {sorted(ns)}")
        return out

    def _labels(self, y: Any, spec: TaskSpec, n: int, name: str = "y") -> np.ndarray:
        if spec.kind == "multiclass":
            y = check_array(y, name, ndim=1, dtype=np.int64)
            if np.any(y < 0):
                raise ValueError(f"{name} must hold class indices >= 0")
        elif spec.kind == "binary":
            y = check_array(y, name, ndim=1)
            if not np.all((y == 0) | (y == 1)):
                raise ValueError(f"{name} must be 0/1 for a binary task")
        else:
            y = check_array(y, name, ndim=2)
            if spec.kind == "multilabel" and not np.all((y == 0) | (y == 1)):
                raise ValueError(f"{name} must be 0/1 for a multilabel task")
            if spec.kind == "profile" and (y.min() < 0 or y.max() > 1):
                raise ValueError(f"{name} must be in [0, 1] for a profile task")
        if y.shape[0] != n:
            raise ValueError(f"{name} has {y.shape[0]} rows but X has {n}")
        return y

    def _tensors(self, X: dict[str, np.ndarray]) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        conv = {}
        for k, v in X.items():
            if k in self.scalers_:
                mu, sd = self.scalers_[k]
                v = (v - mu) / sd
            conv[k] = torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32))
        return conv.get("text"), conv.get("poi")

    # ------------------------------------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any, X_val: Any = None, y_val: Any = None) -> EmbedProbe:
        p = self._check_params()
        spec, mod = p["spec"], p["modality"]
        Xtr = self._inputs(X, mod)
        n = next(iter(Xtr.values())).shape[0]
        ytr = self._labels(y, spec, n)
        if (X_val is None) != (y_val is None):
            raise ValueError("X_val and y_val must be given together")
        rng = np.random.default_rng(p["seed"])
        if X_val is None:
            if n < 5:
                raise ValueError(f"X needs at least 5 rows to hold out a validation split, got {n}")
            perm = rng.permutation(n)
            nv = max(1, n // 5)
            vi, ti = perm[:nv], perm[nv:]
            Xva, yva = {k: v[vi] for k, v in Xtr.items()}, ytr[vi]
            Xtr, ytr = {k: v[ti] for k, v in Xtr.items()}, ytr[ti]
        else:
            Xva = self._inputs(X_val, mod, "X_val")
            yva = self._labels(y_val, spec, next(iter(Xva.values())).shape[0], "y_val")
            for k in Xtr:
                if Xva[k].shape[1] != Xtr[k].shape[1]:
                    raise ValueError(f"X_val[{k!r}] has width {Xva[k].shape[1]} but X has {Xtr[k].shape[1]}")
        if spec.kind == "multiclass":
            n_out = int(max(ytr.max(), yva.max())) + 1
        elif spec.kind == "binary":
            n_out = 1
        else:
            n_out = ytr.shape[1]
            if yva.shape[1] != n_out:
                raise ValueError(f"y_val has {yva.shape[1]} columns but y has {n_out}")
        self.scalers_ = {}
        if p["standardize"]:
            for k, v in Xtr.items():
                self.scalers_[k] = (v.mean(0, keepdims=True), v.std(0, keepdims=True) + 1e-6)
        torch.manual_seed(p["seed"])
        dims = {k: v.shape[1] for k, v in Xtr.items()}
        net = _Net(mod, dims.get("text", 1), dims.get("poi", 1), n_out, p["hidden"], p["dropout"], p["architecture"])
        opt = _AdamW(net.parameters(), lr=p["lr"], weight_decay=p["weight_decay"])  # = torch AdamW, bit for bit
        if spec.kind == "binary":
            npos = float(ytr.sum())
            loss_fn = nn.BCEWithLogitsLoss(pos_weight=torch.tensor(len(ytr) / npos if npos > 0 else 1.0))
        elif spec.kind in ("multilabel", "profile"):
            loss_fn = nn.BCEWithLogitsLoss()
        else:
            loss_fn = nn.CrossEntropyLoss()
        tt, tp = self._tensors(Xtr)
        vt, vp = self._tensors(Xva)

        def target(yv):
            t = torch.from_numpy(np.asarray(yv))
            return t.long() if spec.kind == "multiclass" else t.float().reshape(len(yv), -1)

        ytt, yvt = target(ytr), target(yva)
        best, best_state, bad = np.inf, None, 0
        gen = torch.Generator().manual_seed(p["seed"])
        ntr = len(ytr)
        self.n_epochs_ = 0
        for epoch in range(p["max_epochs"]):
            net.train()
            perm = torch.randperm(ntr, generator=gen)
            # the epoch's rows gathered once in the shuffled order; each batch is then a contiguous slice holding
            # the same values as gathering its rows (cheaper per step; the same numbers: tests/mepoi)
            et, ep, ey = (None if x is None else x[perm] for x in (tt, tp, ytt))
            for i in range(0, ntr, p["batch_size"]):
                j = i + p["batch_size"]
                out = net(None if et is None else et[i:j], None if ep is None else ep[i:j])
                loss = loss_fn(out, ey[i:j])
                opt.zero_grad()
                loss.backward()
                opt.step()
            net.eval()
            with torch.no_grad():
                vloss = float(loss_fn(net(vt, vp), yvt))
            self.n_epochs_ = epoch + 1
            if vloss < best - 1e-7:
                best, bad = vloss, 0
                best_state = copy.deepcopy(net.state_dict())
            else:
                bad += 1
                if bad >= p["patience"]:
                    break
        net.load_state_dict(best_state)
        net.eval()
        self.net_, self.spec_, self.n_outputs_, self.val_loss_ = net, spec, n_out, best
        self.threshold_ = 0.5
        if spec.kind in ("binary", "multilabel"):
            pv = self._proba(Xva)
            if spec.kind == "binary":
                self.threshold_ = _best_threshold(yva.astype(int), pv)
            else:
                self.threshold_ = np.array([_best_threshold(yva[:, j].astype(int), pv[:, j])
                                            for j in range(n_out)])
        # the validation metric, for choosing between probes (e.g. MLP vs linear) without touching the test split
        self.val_score_ = task_metrics(spec.kind, yva, self._proba(Xva), self.threshold_)[spec.metric]
        return self

    # ------------------------------------------------------------------------------------------ predict
    def _fitted(self) -> None:
        if not hasattr(self, "net_"):
            raise ValueError("this EmbedProbe is not fitted yet: call fit(X, y) first")

    @torch.no_grad()
    def _proba(self, X: dict[str, np.ndarray]) -> np.ndarray:
        for k, v in X.items():
            want = self.net_.text[0].in_features if (k == "text" and self.net_.modality == "both"
                                                     and self.net_.architecture == "mlp") else None
            if want is not None and v.shape[1] != want:
                raise ValueError(f"X[{k!r}] has width {v.shape[1]}, the probe was fitted on {want}")
        t, p = self._tensors(X)
        out = self.net_(t, p)
        if self.spec_.kind == "multiclass":
            return torch.softmax(out, 1).numpy()
        prob = torch.sigmoid(out).numpy()
        return prob[:, 0] if self.spec_.kind == "binary" else prob

    def predict_proba(self, X: Any) -> np.ndarray:
        """Probabilities (binary (n,), multilabel (n, k), multiclass (n, C)) or the predicted profile (n, k)."""
        self._fitted()
        X = self._inputs(X, self.net_.modality)
        for k, v in X.items():
            mu = self.scalers_.get(k)
            if mu is not None and v.shape[1] != mu[0].shape[1]:
                raise ValueError(f"X[{k!r}] has width {v.shape[1]}, the probe was fitted on {mu[0].shape[1]}")
        return self._proba(X)

    def predict(self, X: Any) -> np.ndarray:
        """Labels (val-tuned thresholds for binary/multilabel, argmax for multiclass) or the profile."""
        prob = self.predict_proba(X)
        if self.spec_.kind == "multiclass":
            return prob.argmax(1)
        if self.spec_.kind == "profile":
            return prob
        return (prob >= self.threshold_).astype(np.int64)

    def metrics(self, X: Any, y: Any) -> dict[str, float]:
        """Every metric of the task on (X, y)."""
        prob = self.predict_proba(X)
        y = self._labels(y, self.spec_, len(prob))
        return task_metrics(self.spec_.kind, y, prob, self.threshold_)

    def score(self, X: Any, y: Any) -> float:
        """The task's headline metric (higher is better except busyness MAE)."""
        return self.metrics(X, y)[self.spec_.metric]


def make_splits(n: int, seed: int, fractions: Sequence[float] = (0.6, 0.2, 0.2)) -> tuple[np.ndarray, ...]:
    """A random POI-level (train, val, test) split of range(n) (paper: 60/20/20)."""
    n = check_int(n, "n", min=3)
    seed = check_seed(seed)
    fr = check_array(fractions, "fractions", shape=(3,))
    if np.any(fr <= 0) or abs(fr.sum() - 1) > 1e-6:
        raise ValueError(f"fractions must be 3 positive numbers summing to 1, got {fr.tolist()}")
    perm = np.random.default_rng(seed).permutation(n)
    a, b = int(round(fr[0] * n)), int(round((fr[0] + fr[1]) * n))
    return perm[:a], perm[a:b], perm[b:]


def evaluate_tasks(emb_text: Any, emb_poi: Any, labels: Mapping[str, Any], splits: Sequence[tuple] | None = None,
                   seeds: Sequence[int] = (0, 1, 2), *, modalities: Sequence[str] = ("text", "poi", "both"),
                   tasks: Sequence[str] | None = None, **probe_params: Any) -> pd.DataFrame:
    """Probe every (seed, task, modality); returns a long DataFrame (seed, task, modality, metric, value, n_test).

    Args:
        emb_text: (n_poi, d_text) or None (then only "poi"). emb_poi: (n_poi, d) or None (then only "text").
        labels: task name -> labels aligned with the embeddings (see `EmbedProbe`).
        splits: one (train, val, test) index triple per seed; default `make_splits(n, seed)`.
        seeds: probe seeds (also the default splits' seeds). modalities, tasks: what to run (default every task
            present in `labels`). probe_params: passed to `EmbedProbe`.
    """
    if not isinstance(labels, Mapping):
        raise TypeError(f"labels must be a mapping task -> labels, got {type(labels).__name__}")
    X = {"text": None if emb_text is None else check_array(emb_text, "emb_text", ndim=2, dtype=np.float32),
         "poi": None if emb_poi is None else check_array(emb_poi, "emb_poi", ndim=2, dtype=np.float32)}
    ns = {v.shape[0] for v in X.values() if v is not None}
    if not ns:
        raise ValueError("evaluate_tasks needs emb_text or emb_poi")
    if len(ns) > 1:
        raise ValueError(f"emb_text and emb_poi must have the same rows, got {sorted(ns)}")
    n = ns.pop()
    seeds = [check_seed(s, "seeds") for s in seeds]
    if splits is None:
        splits = [make_splits(n, s) for s in seeds]
    if len(splits) != len(seeds):
        raise ValueError(f"splits has {len(splits)} entries but seeds has {len(seeds)}")
    tasks = [t for t in TASKS if t in labels] if tasks is None else list(tasks)
    for m in modalities:
        check_choice(m, "modalities", ("text", "poi", "both"))
        if m in ("text", "both") and X["text"] is None:
            raise ValueError(f"modality {m!r} needs emb_text")
        if m in ("poi", "both") and X["poi"] is None:
            raise ValueError(f"modality {m!r} needs emb_poi")
    rows = []
    for seed, (tr, va, te) in zip(seeds, splits):
        sub = lambda idx: {k: v[idx] for k, v in X.items() if v is not None}  # noqa: E731
        for task in tasks:
            if task not in labels:
                raise ValueError(f"labels has no {task!r}")
            y = np.asarray(labels[task])
            if len(y) != n:
                raise ValueError(f"labels[{task!r}] has {len(y)} rows but the embeddings have {n}")
            for m in modalities:
                pr = EmbedProbe(m, task, seed=seed, **probe_params).fit(sub(tr), y[tr], sub(va), y[va])
                for metric, value in pr.metrics(sub(te), y[te]).items():
                    rows.append({"seed": seed, "task": task, "modality": m, "metric": metric, "value": value,
                                 "n_test": len(te)})
    return pd.DataFrame(rows)
