"""The minimal transformer abstraction of analogical reasoning (Xu, Yan, Zhang; ICML 2026, arXiv:2603.05143).

RECONSTRUCTED MODEL (spec section 1/2): the paper's full text was not available, so the exact parametrization of
its theorems is not reproduced. This module implements the spec's normative minimal model, which matches the
paper's description (orthogonal one-hot input codes, uniform linear attention, a factorized OV/readout,
cross-entropy, small initialization, gradient descent):

    h(s)   = sum_{t in s} E e_t              E in R^{d x V}   (column t = representation of token t)     (2.1)
    z_y(s) = U_y . h(s),  y in Omega(r)      U in R^{V x d}   (readout; r = last token of s)             (2.2)
    loss   = mean over premises of -log softmax_{Omega(r)}(z)_target                                     (2.3)

`Omega(r)` is the answer type of the prompt's relation token (typed softmax); logits outside it are -inf.
Feature resemblance is the cosine between entity representations E[:, a] and E[:, b].
Init E, U ~ N(0, sigma^2) with sigma = 0.01, d = 32, float64, full-batch gradient descent with lr = 1.0.

Deviations / additions: the model takes a `seed` (the spec's signature has none) so that runs are reproducible;
`CurriculumTrainer.run` re-draws the model's initial weights first, so a trainer can be run twice with the same
answer; a per-stage `steps_per_stage` tuple gives the short-first-stage control of spec section 4/9; the
`attribute_only` schedule (A + I, no similarity premises) is the chance baseline of spec section 4.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from icml26.analogy.data import AnalogyWorld, Premise, TwoHopWorld
from icml26.common.validation import check_choice, check_float, check_int

__all__ = ["TokenIndexError", "FactorizedTransformer", "fit", "CurriculumTrainer", "SCHEDULES", "predict",
           "analogical_accuracy", "conclusion_prob", "premise_retention", "feature_resemblance", "cosine_matrix",
           "two_hop_accuracy", "retention_from_logits"]

MAX_STEPS = 10**8  # a larger step count is refused rather than run for days

# schedule -> stages; each stage is a tuple of premise groups of an AnalogyWorld (S, A, I)
SCHEDULES: dict[str, tuple[tuple[str, ...], ...]] = {
    "joint": (("similarity", "attribution", "individual"),),
    "sim_then_attr": (("similarity",), ("attribution", "individual")),
    "attr_then_sim": (("attribution", "individual"), ("similarity",)),
    "attribute_only": (("attribution", "individual"),),
}


class TokenIndexError(IndexError, ValueError):
    """A token id outside [0, vocab_size): an `IndexError` (spec section 8) that is also a `ValueError`."""


def _as_prompts(batch_inputs: Any, name: str, vocab_size: int) -> list[tuple[int, ...]]:
    """A list of token-id tuples from Premises, sequences of ints or a 2-D integer array/tensor."""
    if isinstance(batch_inputs, (str, bytes)) or batch_inputs is None:
        raise TypeError(f"{name} must be a sequence of prompts (token-id sequences), got {type(batch_inputs).__name__}")
    if isinstance(batch_inputs, torch.Tensor):
        if batch_inputs.is_floating_point() or batch_inputs.dtype == torch.bool or batch_inputs.is_complex():
            raise TypeError(f"{name} must hold integer token ids, got dtype {batch_inputs.dtype}")
        if batch_inputs.dim() != 2:
            raise ValueError(f"{name} must be 2-dimensional (n_prompts, length), got shape {tuple(batch_inputs.shape)}")
        batch_inputs = batch_inputs.tolist()
    elif isinstance(batch_inputs, np.ndarray):
        if batch_inputs.dtype.kind not in "iu":
            raise TypeError(f"{name} must hold integer token ids, got dtype {batch_inputs.dtype}")
        if batch_inputs.ndim != 2:
            raise ValueError(f"{name} must be 2-dimensional (n_prompts, length), got shape {batch_inputs.shape}")
        batch_inputs = batch_inputs.tolist()
    try:
        items = list(batch_inputs)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of prompts, got {type(batch_inputs).__name__}") from None
    if not items:
        raise ValueError(f"{name} must hold at least one prompt, got none")
    out = []
    for i, p in enumerate(items):
        seq = p.inputs if isinstance(p, Premise) else p
        if isinstance(seq, (str, bytes)) or not hasattr(seq, "__len__"):
            raise TypeError(f"{name}[{i}] must be a sequence of token ids, got {type(seq).__name__}")
        seq = list(seq.tolist() if hasattr(seq, "tolist") else seq)
        if not seq:
            raise ValueError(f"{name}[{i}] is an empty prompt")
        ids = []
        for t in seq:
            if isinstance(t, (bool, np.bool_)) or not isinstance(t, (int, np.integer)):
                raise TypeError(f"{name}[{i}] must hold integer token ids, got {type(t).__name__} {t!r}")
            if not 0 <= int(t) < vocab_size:
                raise TokenIndexError(f"{name}[{i}] has token id {int(t)} outside [0, vocab_size={vocab_size})")
            ids.append(int(t))
        out.append(tuple(ids))
    return out


class FactorizedTransformer(nn.Module):
    """One-layer linear-attention transformer with factorized readout and typed softmax, eqs. (2.1)-(2.3).

    Args:
        vocab_size: V, the number of tokens (one-hot input codes).
        d_model: d, the representation width (default 32).
        init_std: sigma of the N(0, sigma^2) init of E and U (default 0.01: the rich, feature-learning regime).
        answer_sets: relation token id -> token ids of its answer type (typed softmax); None = untyped softmax
            over all V tokens (the forgetting ablation of spec section 9).
        dtype: parameter dtype (default float64).
        seed: seed of the init; `reset_parameters()` re-draws exactly the same weights.

    Parameters: `E` (d, V), `U` (V, d).
    """

    def __init__(self, vocab_size: int, d_model: int = 32, init_std: float = 0.01,
                 answer_sets: dict[int, Any] | None = None, dtype: torch.dtype = torch.float64, seed: int = 0) -> None:
        super().__init__()
        self.vocab_size = check_int(vocab_size, "vocab_size", min=1, max=10**7)
        self.d_model = check_int(d_model, "d_model", min=1, max=10**5)
        self.init_std = check_float(init_std, "init_std", min=0.0)
        if dtype not in (torch.float64, torch.float32):
            raise TypeError(f"dtype must be torch.float64 or torch.float32, got {dtype!r}")
        self.seed = check_int(seed, "seed", min=0, max=2**63 - 1)
        self.answer_sets = self._check_answer_sets(answer_sets)
        self.E = nn.Parameter(torch.empty(self.d_model, self.vocab_size, dtype=dtype))
        self.U = nn.Parameter(torch.empty(self.vocab_size, self.d_model, dtype=dtype))
        self.reset_parameters()

    def _check_answer_sets(self, answer_sets: Any) -> dict[int, torch.Tensor] | None:
        if answer_sets is None:
            return None
        if not isinstance(answer_sets, dict):
            raise TypeError(f"answer_sets must be a dict relation -> token ids or None, got {type(answer_sets).__name__}")
        out = {}
        for r, ids in answer_sets.items():
            (r_,) = _as_prompts([[r]], "answer_sets (relation)", self.vocab_size)
            arr = _as_prompts([list(np.asarray(ids).tolist())], f"answer_sets[{r}]", self.vocab_size)[0]
            if len(set(arr)) != len(arr):
                raise ValueError(f"answer_sets[{r}] has repeated token ids")
            out[r_[0]] = torch.tensor(sorted(arr), dtype=torch.long)
        return out

    def reset_parameters(self) -> None:
        """Re-draw E and U ~ N(0, init_std^2) from `seed` (the same weights every time)."""
        g = torch.Generator().manual_seed(self.seed)
        with torch.no_grad():
            self.E.copy_(torch.randn(self.E.shape, generator=g, dtype=torch.float64) * self.init_std)
            self.U.copy_(torch.randn(self.U.shape, generator=g, dtype=torch.float64) * self.init_std)

    def encode(self, batch_inputs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Prompts -> (counts (N, V) in the parameter dtype, answer mask (N, V) bool). Validates token ids."""
        if self.E.shape != (self.d_model, self.vocab_size) or self.U.shape != (self.vocab_size, self.d_model):
            raise ValueError(f"E/U shapes {tuple(self.E.shape)}/{tuple(self.U.shape)} do not match "
                             f"d_model={self.d_model}, vocab_size={self.vocab_size}")
        prompts = _as_prompts(batch_inputs, "batch_inputs", self.vocab_size)
        X = torch.zeros(len(prompts), self.vocab_size, dtype=self.E.dtype)
        mask = torch.zeros(len(prompts), self.vocab_size, dtype=torch.bool)
        for i, p in enumerate(prompts):
            for t in p:
                X[i, t] += 1.0
            if self.answer_sets is None:
                mask[i] = True
            elif p[-1] not in self.answer_sets:
                raise ValueError(f"batch_inputs[{i}] ends in token {p[-1]}, which is not a relation of answer_sets "
                                 f"({sorted(self.answer_sets)})")
            else:
                mask[i, self.answer_sets[p[-1]]] = True
        dev = self.E.device
        return X.to(dev), mask.to(dev)

    def logits_from_counts(self, X: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Eqs. (2.1)-(2.2) on pre-encoded prompts: (N, V) logits, -inf outside each prompt's answer set."""
        h = X @ self.E.T  # (N, d): uniform attention sums the prompt's token representations
        return (h @ self.U.T).masked_fill(~mask, float("-inf"))

    def forward(self, batch_inputs: Any) -> torch.Tensor:
        """Logits (N, V) of a batch of prompts (Premises, token-id sequences or an (N, L) int tensor)."""
        return self.logits_from_counts(*self.encode(batch_inputs))

    def representations(self) -> torch.Tensor:
        """E (d, V), detached: column t is token t's representation."""
        return self.E.detach().clone()


def _targets(premises: Any, name: str, vocab_size: int) -> torch.Tensor:
    items = list(premises)
    for i, p in enumerate(items):
        if not isinstance(p, Premise):
            raise TypeError(f"{name}[{i}] must be a Premise, got {type(p).__name__}")
        if isinstance(p.target, (bool, np.bool_)) or not isinstance(p.target, (int, np.integer)):
            raise TypeError(f"{name}[{i}].target must be an integer token id, got {p.target!r}")
        if not 0 <= int(p.target) < vocab_size:
            raise TokenIndexError(f"{name}[{i}].target {int(p.target)} outside [0, vocab_size={vocab_size})")
    return torch.tensor([int(p.target) for p in items], dtype=torch.long)


def _premise_batch(model: FactorizedTransformer, premises: Any, name: str = "premises"):
    if not isinstance(model, FactorizedTransformer):
        raise TypeError(f"model must be a FactorizedTransformer, got {type(model).__name__}")
    if isinstance(premises, Premise):
        premises = [premises]
    if isinstance(premises, (str, bytes)) or not isinstance(premises, Sequence):
        raise TypeError(f"{name} must be a list of Premise, got {type(premises).__name__}")
    if len(premises) == 0:
        raise ValueError(f"{name} must hold at least one Premise, got none")
    y = _targets(premises, name, model.vocab_size).to(model.E.device)
    X, mask = model.encode(premises)
    bad = ~mask[torch.arange(len(y)), y]
    if bool(bad.any()):
        i = int(torch.nonzero(bad)[0])
        raise ValueError(f"{name}[{i}].target {int(y[i])} is not in the answer set of its relation")
    return X, mask, y


def fit(model: FactorizedTransformer, premises: Sequence[Premise], steps: int, lr: float = 1.0,
        optimizer: str | Callable[..., torch.optim.Optimizer] = "gd",
        callback: Callable[[int, FactorizedTransformer], None] | None = None, log_every: int = 0,
        freeze: Sequence[str] = ()) -> list[float]:
    """Full-batch training on `premises` with the mean cross-entropy of eq. (2.3).

    Args:
        model: the model (trained in place). premises: non-empty list of `Premise`.
        steps: number of updates (>= 0). lr: step size (default 1.0).
        optimizer: "gd" (plain full-batch gradient descent, the default) or a factory
            `f(params, lr=lr) -> torch.optim.Optimizer` (e.g. `torch.optim.Adam`; changes the implicit bias).
        callback: called as `callback(step, model)` at step 0 and after every `log_every` updates (0 = never).
        freeze: names of parameters ("E", "U") held fixed (default none). Freezing E in a later curriculum stage
            is the mutation that the C2 controls must catch (it blocks transfer without causing forgetting).

    Returns: the loss before each update and after the last one (length steps + 1), in nats.
    """
    steps = check_int(steps, "steps", min=0, max=MAX_STEPS)
    lr = check_float(lr, "lr", min=0.0, min_open=True)
    log_every = check_int(log_every, "log_every", min=0)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {type(callback).__name__}")
    if isinstance(freeze, str) or not all(isinstance(f, str) for f in freeze):
        raise TypeError(f"freeze must be a sequence of parameter names, got {freeze!r}")
    bad = [f for f in freeze if f not in ("E", "U")]
    if bad or len(set(freeze)) == 2:
        raise ValueError(f"freeze must name at most one of 'E', 'U' (training nothing is not training), got {freeze!r}")
    X, mask, y = _premise_batch(model, premises)
    names = [n for n in ("E", "U") if n not in freeze]
    params = [getattr(model, n) for n in names]
    if isinstance(optimizer, str):
        check_choice(optimizer, "optimizer", ["gd"])
        opt = None
    elif callable(optimizer):
        opt = optimizer(params, lr=lr)
        if not isinstance(opt, torch.optim.Optimizer):
            raise TypeError(f"optimizer must return a torch.optim.Optimizer, got {type(opt).__name__}")
    else:
        raise TypeError(f"optimizer must be 'gd' or an optimizer factory, got {type(optimizer).__name__}")

    def loss_fn() -> torch.Tensor:
        return nn.functional.cross_entropy(model.logits_from_counts(X, mask), y)

    # Plain GD on prompts of two distinct tokens of count 1 each (every training premise): the same arithmetic as
    # autograd through eqs. (2.1)-(2.3), without its overhead. h = X E^T is the sum of two columns of E (the exact
    # value of the dense product: every other term is 0), and the grads are autograd's own mm's of its backward
    # (grad_U = gz^T h, grad_h = gz U, grad_E = grad_h^T X); only gz = dloss/dz goes through autograd. Bit-identical
    # to the autograd loop (tests/analogy/test_model.py checks it); 1.5x faster. Anything else: the autograd loop.
    nz = X.nonzero()
    pair = opt is None and bool((X.sum(1) == 2).all()) and nz.shape[0] == 2 * X.shape[0]
    if pair:
        first, second = nz[0::2, 1], nz[1::2, 1]  # nonzero() is row-major: two entries per row
    E_, U_ = model.E, model.U
    train_E, train_U = "E" not in freeze, "U" not in freeze

    def fast_step() -> torch.Tensor:
        with torch.no_grad():
            Et = E_.T
            h = Et[first] + Et[second]
            z = (h @ U_.T).requires_grad_()
        with torch.enable_grad():
            loss = nn.functional.cross_entropy(z.masked_fill(~mask, float("-inf")), y)
            (gz,) = torch.autograd.grad(loss, [z])
        with torch.no_grad():
            gE = gz.mm(U_).t().mm(X) if train_E else None
            if train_U:
                U_.sub_(lr * gz.t().mm(h))
            if gE is not None:
                E_.sub_(lr * gE)
        return loss

    losses = []
    if callback is not None and log_every:
        callback(0, model)
    for step in range(1, steps + 1):
        loss = fast_step() if pair else loss_fn()
        if pair:
            pass  # fast_step updated E and U
        elif opt is None:
            grads = torch.autograd.grad(loss, params)
            with torch.no_grad():
                for p_, g_ in zip(params, grads):
                    p_.sub_(lr * g_)
        else:
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        losses.append(float(loss.detach()))
        if callback is not None and log_every and step % log_every == 0:
            callback(step, model)
    with torch.no_grad():
        losses.append(float(loss_fn()))
    if not np.isfinite(losses[-1]):
        raise ValueError(f"training diverged (loss {losses[-1]}): lower lr={lr}")
    return losses


class CurriculumTrainer:
    """Trains a `FactorizedTransformer` on an `AnalogyWorld` in one of the schedules of spec section 2.

    Args:
        model: the model; `run` re-draws its init first (`reset_parameters`), so runs repeat exactly.
        schedule: "joint" (S+A+I), "sim_then_attr" (S, then A+I), "attr_then_sim" (A+I, then S) or
            "attribute_only" (A+I; no similarity premises, the chance baseline).
        steps_per_stage: GD steps per stage (default 3000, loss ~1e-3), or one int per stage.
        lr: GD step size (default 1.0). optimizer: as in `fit`.
        eval_every: log analogical accuracy and conclusion probability every this many steps (0 = off).
        freeze: per stage, the parameter names held fixed (as `fit`), e.g. `((), ("E",))` freezes E in stage 2;
            default: nothing frozen.
    """

    def __init__(self, model: FactorizedTransformer, schedule: str = "joint",
                 steps_per_stage: int | Sequence[int] = 3000, lr: float = 1.0,
                 optimizer: str | Callable[..., torch.optim.Optimizer] = "gd", eval_every: int = 0,
                 freeze: Sequence[Sequence[str]] | None = None) -> None:
        self.model, self.schedule, self.steps_per_stage = model, schedule, steps_per_stage
        self.lr, self.optimizer, self.eval_every, self.freeze = lr, optimizer, eval_every, freeze
        self._stage_steps()
        self._stage_freeze()

    def _stage_freeze(self) -> list[tuple[str, ...]]:
        n = len(SCHEDULES[self.schedule])
        if self.freeze is None:
            return [()] * n
        if isinstance(self.freeze, (str, bytes)) or not isinstance(self.freeze, Sequence) or len(self.freeze) != n:
            raise ValueError(f"freeze must give one tuple of parameter names per stage ({n} for {self.schedule!r}), "
                             f"got {self.freeze!r}")
        out = []
        for i, f in enumerate(self.freeze):
            if isinstance(f, (str, bytes)) or not isinstance(f, Sequence) or not all(x in ("E", "U") for x in f):
                raise ValueError(f"freeze[{i}] must be a tuple of 'E' / 'U', got {f!r}")
            out.append(tuple(f))
        return out

    def _stage_steps(self) -> list[int]:
        if not isinstance(self.model, FactorizedTransformer):
            raise TypeError(f"model must be a FactorizedTransformer, got {type(self.model).__name__}")
        check_choice(self.schedule, "schedule", list(SCHEDULES))
        check_float(self.lr, "lr", min=0.0, min_open=True)
        check_int(self.eval_every, "eval_every", min=0)
        n = len(SCHEDULES[self.schedule])
        s = self.steps_per_stage
        if isinstance(s, (list, tuple, np.ndarray)):
            if len(s) != n:
                raise ValueError(f"steps_per_stage must have one entry per stage ({n} for {self.schedule!r}), "
                                 f"got {len(s)}")
            return [check_int(v, f"steps_per_stage[{i}]", min=0, max=MAX_STEPS) for i, v in enumerate(s)]
        return [check_int(s, "steps_per_stage", min=0, max=MAX_STEPS)] * n

    def run(self, world: AnalogyWorld) -> dict[str, Any]:
        """Train from the model's init through every stage.

        Returns a dict: `stages` (premise groups per stage), `steps` (per stage), `losses` (per stage, as `fit`),
        and with `eval_every > 0` a `time_course` {"stage", "step" (global), "accuracy", "conclusion_prob"}.
        """
        steps, frozen = self._stage_steps(), self._stage_freeze()
        if not isinstance(world, AnalogyWorld):
            raise TypeError(f"world must be an AnalogyWorld, got {type(world).__name__}")
        if world.vocab_size != self.model.vocab_size:
            raise ValueError(f"world.vocab_size={world.vocab_size} != model.vocab_size={self.model.vocab_size}")
        self.model.reset_parameters()
        course: dict[str, list] = {"stage": [], "step": [], "accuracy": [], "conclusion_prob": []}
        out: dict[str, Any] = {"schedule": self.schedule, "stages": SCHEDULES[self.schedule], "steps": steps,
                               "losses": []}
        offset = 0
        for k, (groups, n_steps, frz) in enumerate(zip(SCHEDULES[self.schedule], steps, frozen)):
            premises = [p for g in groups for p in getattr(world, g)]
            if not premises:  # e.g. individual facts with n_individual = 0 and nothing else in the stage
                out["losses"].append([])
                continue

            def log(step: int, model: FactorizedTransformer, k: int = k, offset: int = offset) -> None:
                if step == 0 and k > 0:
                    return  # already logged as the previous stage's last point
                course["stage"].append(k)
                course["step"].append(offset + step)
                course["accuracy"].append(analogical_accuracy(model, world))
                course["conclusion_prob"].append(conclusion_prob(model, world))

            cb = log if self.eval_every else None
            out["losses"].append(fit(self.model, premises, n_steps, lr=self.lr, optimizer=self.optimizer,
                                     callback=cb, log_every=self.eval_every, freeze=frz))
            if self.eval_every and n_steps % self.eval_every:
                log(n_steps, self.model)
            offset += n_steps
        if self.eval_every:
            out["time_course"] = course
        return out


# ------------------------------------------------------------------------------------------------ metrics
@torch.no_grad()
def predict(model: FactorizedTransformer, batch_inputs: Any) -> np.ndarray:
    """Argmax token id per prompt (within its answer set), shape (N,)."""
    if not isinstance(model, FactorizedTransformer):
        raise TypeError(f"model must be a FactorizedTransformer, got {type(model).__name__}")
    return model(batch_inputs).argmax(dim=1).cpu().numpy()


@torch.no_grad()
def _accuracy(model: FactorizedTransformer, premises: Sequence[Premise], restrict: np.ndarray | None = None) -> float:
    X, mask, y = _premise_batch(model, premises)
    z = model.logits_from_counts(X, mask)
    if restrict is not None:  # argmax over a given token set only
        keep = torch.zeros(model.vocab_size, dtype=torch.bool, device=z.device)
        keep[torch.as_tensor(restrict, dtype=torch.long)] = True
        z = z.masked_fill(~keep, float("-inf"))
    return float((z.argmax(dim=1) == y).double().mean())


def _check_world(world: Any, cls: type, model: Any = None) -> None:
    if not isinstance(world, cls):
        raise TypeError(f"world must be a {cls.__name__}, got {type(world).__name__}")
    if isinstance(model, FactorizedTransformer) and world.vocab_size != model.vocab_size:
        raise ValueError(f"world.vocab_size={world.vocab_size} does not match model.vocab_size={model.vocab_size}: "
                         "the model was built for another world")


def analogical_accuracy(model: FactorizedTransformer, world: AnalogyWorld) -> float:
    """Fraction of test queries `(e_{g,j}, IS)`, j >= 1, whose argmax over the G attribute tokens is c_g
    (chance 1/G)."""
    _check_world(world, AnalogyWorld, model)
    return _accuracy(model, world.test, restrict=world.attr_tokens)


@torch.no_grad()
def conclusion_prob(model: FactorizedTransformer, world: AnalogyWorld) -> float:
    """Mean typed-softmax probability p(c_g | e_{g,j}, IS) over the test queries (1/G at sigma -> 0)."""
    _check_world(world, AnalogyWorld, model)
    X, mask, y = _premise_batch(model, world.test)
    p = torch.softmax(model.logits_from_counts(X, mask), dim=1)
    return float(p[torch.arange(len(y)), y].mean())


@torch.no_grad()
def premise_retention(model: FactorizedTransformer, world_or_premises: Any) -> float:
    """Fraction of trained prompts whose top-k predictions are exactly their k targets (k = number of premises
    sharing the prompt, e.g. the n_individual facts of an entity). Takes a world (all its training premises) or a
    list of premises."""
    if isinstance(world_or_premises, (AnalogyWorld, TwoHopWorld)):
        _check_world(world_or_premises, type(world_or_premises), model)
    if isinstance(world_or_premises, AnalogyWorld):
        premises = world_or_premises.premises
    elif isinstance(world_or_premises, TwoHopWorld):
        premises = world_or_premises.facts
    else:
        premises = world_or_premises
    X, mask, y = _premise_batch(model, premises, "world_or_premises")
    return retention_from_logits(model.logits_from_counts(X, mask), premises)


@torch.no_grad()
def retention_from_logits(logits: torch.Tensor, premises: Sequence[Premise]) -> float:
    """The retention check of `premise_retention` on any model's (N, V) logits of `premises` (row i scores
    premises[i]; mask them to the answer types first for a typed model): a prompt with k targets is retained when
    its top-k logits are exactly its k targets. Shared by the minimal model and the GPT arm."""
    if not isinstance(logits, torch.Tensor) or logits.dim() != 2 or logits.shape[0] != len(premises):
        raise ValueError(f"logits must be a (len(premises), V) tensor, got "
                         f"{tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__}")
    prompts: dict[tuple, list[int]] = {}
    for i, p in enumerate(premises):
        prompts.setdefault(tuple(p.inputs), []).append(i)
    ok = 0
    for rows in prompts.values():
        want = set(int(premises[i].target) for i in rows)
        top = torch.topk(logits[rows[0]], len(want)).indices.cpu().tolist()
        ok += set(top) == want
    return ok / len(prompts)


def cosine_matrix(model: FactorizedTransformer, tokens: Any) -> np.ndarray:
    """(n, n) cosine similarities of the representations E[:, t] of the given token ids."""
    if not isinstance(model, FactorizedTransformer):
        raise TypeError(f"model must be a FactorizedTransformer, got {type(model).__name__}")
    ids = _as_prompts([np.asarray(tokens).reshape(-1).tolist()], "tokens", model.vocab_size)[0]
    R = model.E.detach()[:, list(ids)].double()
    R = R / R.norm(dim=0, keepdim=True).clamp_min(1e-300)
    return (R.T @ R).cpu().numpy()


def feature_resemblance(model: FactorizedTransformer, world: AnalogyWorld) -> tuple[float, float]:
    """(mean cosine of entity pairs in the same group, mean cosine of pairs in different groups)."""
    _check_world(world, AnalogyWorld, model)
    C = cosine_matrix(model, world.groups.reshape(-1))
    grp = np.repeat(np.arange(world.n_groups), world.group_size)
    same = (grp[:, None] == grp[None, :]) & ~np.eye(len(grp), dtype=bool)
    cross = grp[:, None] != grp[None, :]
    return float(C[same].mean()), float(C[cross].mean())


def two_hop_accuracy(model: FactorizedTransformer, world: TwoHopWorld, form: str = "composed") -> float:
    """Accuracy (argmax over the C entities, chance 1/n) of the composed `(a, R1, R2) -> c` or the analogical
    `(a, R2) -> c` query."""
    _check_world(world, TwoHopWorld, model)
    check_choice(form, "form", ["composed", "analogical"])
    tests = world.test_composed if form == "composed" else world.test_analogical
    return _accuracy(model, tests, restrict=world.c_tokens)
