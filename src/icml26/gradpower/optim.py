"""GradPower optimizers: AdamWPower (paper Alg. 1), the GradPower wrapper for any torch optimizer, MuonPower.

GradPower (paper section 3, Eq. (2)) replaces every gradient g_t by phi_p(g_t) = sign(g_t) |g_t|^p *before* the
base optimizer sees it and changes nothing else (lr schedule, betas, eps, weight decay, clipping, Newton-Schulz).
It is stateless. AdamWPower is the AdamW instance (spec section 2.2), per parameter tensor at step t:

    g   <- grad (after global-norm clipping, done by the training loop)
    gt  <- sign(g) * (|g| + power_eps)^p              # the GradPower line
    m   <- b1 m + (1 - b1) gt ;  v <- b2 v + (1 - b2) gt^2
    theta <- theta (1 - lr wd) - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)

Implementation notes
--------------------
- The transform runs in place on `p.grad`, under `torch.no_grad()`, in the gradient's dtype (bf16/fp16 grads are
  transformed in fp32 and cast back). After `step()` the `.grad` tensors hold phi_p(g); zero them as usual.
- It runs inside `optimizer.step()`, i.e. after gradient accumulation, after DDP all-reduce / FSDP2
  reduce-scatter (phi is elementwise, so transforming a shard equals sharding the transformed gradient) and
  after `GradScaler.unscale_` (phi is not scale-equivariant for p != 1). A fused AdamWPower driven by a
  GradScaler that did *not* unscale first raises instead of transforming scaled gradients.
- `power` and `power_eps` are per-parameter-group hyperparameters (saved in `state_dict`): give a group
  `power=1.0` to exclude it. With power == 1 and power_eps == 0 nothing is touched, so AdamWPower is
  bit-identical to `torch.optim.AdamW`.
- `power_eps` defaults to 0.0 (the paper's pure form); the authors' script uses (|g| + 1e-8)^p, reproduced by
  `power_eps=1e-8` (spec section 2.3).
- MuonPower: phi is applied to the raw gradient of every parameter (Muon side and AdamW side of the usual
  Muon+AdamW split); the paper only says "apply phi before Muon" (spec section 2.2; our documented choice).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from torch import nn
from torch.optim import AdamW, Optimizer

from icml26.common.validation import check_float
from icml26.gradpower.functional import check_power, foreach_sign_power_

__all__ = ["AdamWPower", "GradPower", "CombinedOptimizer", "MuonPower", "build_muon_adamw", "split_muon_params"]


def _group_grads(group: dict[str, Any], owner: str) -> list[torch.Tensor]:
    grads = []
    for p in group["params"]:
        if p.grad is None:
            continue
        if p.grad.is_sparse:
            raise RuntimeError(f"{owner} does not support sparse gradients (GradPower needs dense gradients)")
        if torch.is_complex(p.grad):
            raise RuntimeError(f"{owner} does not support complex parameters (phi_p is defined for real values)")
        grads.append(p.grad)
    return grads


def _check_adamw_hparams(lr, betas, eps, weight_decay) -> None:
    """AdamW's own hyperparameters, refused by name when NaN/inf or out of range (torch accepts lr = inf)."""
    if isinstance(lr, torch.Tensor):
        if lr.numel() != 1 or not bool(torch.isfinite(lr).all()) or float(lr) < 0:
            raise ValueError(f"lr must be a finite number >= 0 (or a 1-element tensor), got {lr!r}")
    else:
        check_float(lr, "lr", min=0.0)
    if isinstance(betas, (str, bytes)) or not hasattr(betas, "__len__") or len(betas) != 2:
        raise ValueError(f"betas must be a pair (b1, b2), got {betas!r}")
    for i, b in enumerate(betas):
        if not isinstance(b, torch.Tensor):
            check_float(b, f"betas[{i}]", min=0.0, max=1.0, max_open=True)
    check_float(eps, "eps", min=0.0)
    check_float(weight_decay, "weight_decay", min=0.0)


def _set_group_power(group: dict[str, Any], power: float, power_eps: float) -> None:
    """Fill a group's `power`/`power_eps` if absent and validate whatever the group holds."""
    group.setdefault("power", power)
    group.setdefault("power_eps", power_eps)
    group["power"], group["power_eps"] = check_power(
        group["power"], group["power_eps"], p_name="param_group['power']", eps_name="param_group['power_eps']"
    )


class AdamWPower(AdamW):
    """AdamW on sign-powered gradients phi_p(g) = sign(g) |g|^p (AdamWPower, paper Alg. 1).

    Args:
        params: iterable of parameters or of dicts defining parameter groups; a group may set its own
            `power` / `power_eps` (e.g. `power=1.0` to exclude embeddings).
        lr, betas, eps, weight_decay: as `torch.optim.AdamW` (note AdamW's defaults: betas (0.9, 0.999),
            weight_decay 1e-2; the paper's LLaMA recipe uses betas (0.9, 0.95), weight_decay 0.1).
        power: the exponent p > 0 (default 1.2, the paper's single recommended value for LM pre-training).
        power_eps: shift inside the power, >= 0 (default 0.0, pure form; 1e-8 reproduces the authors' script).
        **adamw_kwargs: any other `torch.optim.AdamW` keyword (amsgrad, maximize, foreach, fused, capturable).

    `maximize=True` works: phi is odd, so transforming g and letting AdamW negate equals transforming -g.
    `differentiable=True` is not supported with power != 1 (the transform runs under no_grad).
    """

    def __init__(
        self,
        params: Iterable[torch.Tensor] | Iterable[dict[str, Any]],
        lr: float | torch.Tensor = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        *,
        power: float = 1.2,
        power_eps: float = 0.0,
        **adamw_kwargs: Any,
    ) -> None:
        power, power_eps = check_power(power, power_eps, p_name="power", eps_name="power_eps")
        _check_adamw_hparams(lr, betas, eps, weight_decay)
        self._power_defaults = (power, power_eps)  # read by add_param_group while AdamW builds the groups
        super().__init__(params, lr, betas, eps, weight_decay, **adamw_kwargs)
        self.defaults["power"], self.defaults["power_eps"] = power, power_eps
        for group in self.param_groups:
            if group.get("differentiable") and (group["power"] != 1.0 or group["power_eps"] != 0.0):
                raise ValueError("AdamWPower does not support differentiable=True with power != 1")

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        super().add_param_group(param_group)
        _set_group_power(self.param_groups[-1], *self._power_defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # also reached from load_state_dict: a plain AdamW state dict gets this optimizer's default power
        super().__setstate__(state)
        power = (self.defaults.get("power", 1.2), self.defaults.get("power_eps", 0.0))
        if not hasattr(self, "_power_defaults"):
            self._power_defaults = power
        for group in self.param_groups:
            _set_group_power(group, *self._power_defaults)

    def _init_group(self, group, params_with_grad, grads, *rest):  # noqa: ANN001 - torch's private signature
        # Adam.step calls this once per group (after the closure, before the update): the one added line.
        # re-checked every step: a group's power may have been edited after construction
        group["power"], group["power_eps"] = check_power(group["power"], group["power_eps"],
                                                         p_name="param_group['power']",
                                                         eps_name="param_group['power_eps']")
        if group["power"] != 1.0 or group["power_eps"] != 0.0:
            grads_to_transform = _group_grads(group, type(self).__name__)
            if grads_to_transform and getattr(self, "grad_scale", None) is not None:
                raise RuntimeError(
                    "AdamWPower received still-scaled gradients from a GradScaler (fused path); call "
                    "scaler.unscale_(optimizer) before scaler.step(optimizer): phi_p is not scale-equivariant"
                )
            with torch.no_grad():
                foreach_sign_power_(grads_to_transform, group["power"], group["power_eps"])
        return super()._init_group(group, params_with_grad, grads, *rest)


def _init_wrapper_hooks(opt: torch.optim.Optimizer) -> None:
    """Set up the hook registries `Optimizer`'s methods rely on, for wrappers that skip `Optimizer.__init__`
    (calling it would rebuild the param groups the wrapped optimizers own)."""
    for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
                 "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
                 "_optimizer_load_state_dict_post_hooks"):
        setattr(opt, name, OrderedDict())
    opt._patch_step_function()


class GradPower(Optimizer):
    """Wrap any torch optimizer so that it steps on phi_p(g) = sign(g) |g|^p instead of g (paper Eq. (2)).

    Args:
        base_optimizer: a constructed `torch.optim.Optimizer` (AdamW, SGD, `torch.optim.Muon`, a
            `CombinedOptimizer`, ...). Its groups, state, hyperparameters and hooks are used unchanged.
        power: default exponent p > 0 for groups that do not set their own `power` key (default 1.2).
        power_eps: default shift inside the power, >= 0 (default 0.0).

    `param_groups`, `state` and `defaults` are the base optimizer's (live views), so LR schedulers, gradient
    clipping helpers and Hugging Face `Trainer(optimizers=(GradPower(...), scheduler))` work unchanged.
    `state_dict()` is the base optimizer's (each group carries its `power` / `power_eps`).
    """

    def __init__(self, base_optimizer: Optimizer, power: float = 1.2, power_eps: float = 0.0) -> None:
        if not isinstance(base_optimizer, Optimizer):
            raise TypeError(f"base_optimizer must be a torch.optim.Optimizer, got {type(base_optimizer).__name__}")
        if isinstance(base_optimizer, (GradPower, AdamWPower)):
            raise TypeError(f"base_optimizer is already a {type(base_optimizer).__name__}: the transform would "
                            "be applied twice")
        self.power, self.power_eps = check_power(power, power_eps, p_name="power", eps_name="power_eps")
        self.base = base_optimizer
        # Optimizer.__init__ is not called (it would rebuild the groups); set up what its methods rely on.
        _init_wrapper_hooks(self)
        for group in self.param_groups:
            _set_group_power(group, self.power, self.power_eps)

    # live views of the base optimizer ------------------------------------------------------------------
    @property
    def param_groups(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return self.base.param_groups

    @param_groups.setter
    def param_groups(self, value: list[dict[str, Any]]) -> None:
        self.base.param_groups = value

    @property
    def state(self):  # type: ignore[override]
        return self.base.state

    @state.setter
    def state(self, value) -> None:
        self.base.state = value

    @property
    def defaults(self) -> dict[str, Any]:  # type: ignore[override]
        return self.base.defaults

    @defaults.setter
    def defaults(self, value: dict[str, Any]) -> None:
        self.base.defaults = value

    # the method ---------------------------------------------------------------------------------------
    @torch.no_grad()
    def transform_grads(self) -> None:
        """Apply phi_p in place to the `.grad` of every parameter, with each group's `power`/`power_eps`."""
        for group in self.param_groups:
            power, eps = group.get("power", self.power), group.get("power_eps", self.power_eps)
            foreach_sign_power_(_group_grads(group, f"GradPower({type(self.base).__name__})"), power, eps)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Optionally re-evaluate the loss with `closure`, transform the gradients, then `base.step()`."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self.transform_grads()
        self.base.step()
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.base.zero_grad(set_to_none=set_to_none)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        self.base.add_param_group(param_group)
        _set_group_power(self.base.param_groups[-1], self.power, self.power_eps)

    def state_dict(self) -> dict[str, Any]:
        return self.base.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.base.load_state_dict(state_dict)
        for group in self.param_groups:
            _set_group_power(group, self.power, self.power_eps)

    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__.copy()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._patch_step_function()

    def __repr__(self) -> str:
        return f"GradPower(power={self.power}, power_eps={self.power_eps}, base={self.base!r})"


class CombinedOptimizer(Optimizer):
    """Several optimizers over disjoint parameters acting as one (e.g. Muon for matrices + AdamW for the rest).

    `param_groups` is the concatenation of the children's groups (the same dict objects, so an LR scheduler on
    the combined optimizer scales every child's lr); `step`, `zero_grad`, `state_dict` and `load_state_dict`
    go to every child. `defaults` is empty: schedulers that cycle momentum (OneCycleLR's `cycle_momentum`)
    need homogeneous groups and therefore refuse it; use `cycle_momentum=False`.
    """

    def __init__(self, optimizers: Sequence[Optimizer]) -> None:
        optimizers = list(optimizers)
        if not optimizers or not all(isinstance(o, Optimizer) for o in optimizers):
            raise TypeError("optimizers must be a non-empty sequence of torch.optim.Optimizer")
        seen: set[int] = set()
        for o in optimizers:
            for g in o.param_groups:
                for p in g["params"]:
                    if id(p) in seen:
                        raise ValueError("optimizers must hold disjoint parameters; a parameter appears twice")
                    seen.add(id(p))
        self.optimizers = optimizers
        _init_wrapper_hooks(self)

    @property
    def param_groups(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return [g for o in self.optimizers for g in o.param_groups]

    @property
    def state(self) -> dict:  # type: ignore[override]
        return {p: s for o in self.optimizers for p, s in o.state.items()}

    @property
    def defaults(self) -> dict[str, Any]:  # type: ignore[override]
        return {}

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for o in self.optimizers:
            o.step()
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        for o in self.optimizers:
            o.zero_grad(set_to_none=set_to_none)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        raise TypeError("CombinedOptimizer.add_param_group is ambiguous: add the group to one of .optimizers")

    def state_dict(self) -> dict[str, Any]:
        return {"optimizers": [o.state_dict() for o in self.optimizers]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        sds = state_dict.get("optimizers") if isinstance(state_dict, dict) else None
        if not isinstance(sds, list) or len(sds) != len(self.optimizers):
            raise ValueError(f"state_dict must be {{'optimizers': [...]}} with {len(self.optimizers)} entries")
        for o, sd in zip(self.optimizers, sds):
            o.load_state_dict(sd)

    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__.copy()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._patch_step_function()

    def __repr__(self) -> str:
        inner = ", ".join(type(o).__name__ for o in self.optimizers)
        return f"CombinedOptimizer([{inner}])"


def MuonPower(params: Iterable[torch.Tensor] | Iterable[dict[str, Any]], power: float = 1.2,  # noqa: N802
              power_eps: float = 0.0, **muon_kwargs: Any) -> GradPower:
    """`torch.optim.Muon` on phi_p(g) (MuonPower): `GradPower(torch.optim.Muon(params, **muon_kwargs), power)`.

    Muon accepts only 2-D parameters; for a whole model use `build_muon_adamw`.
    """
    if not hasattr(torch.optim, "Muon"):
        raise ImportError("MuonPower needs torch.optim.Muon (torch >= 2.9)")
    return GradPower(torch.optim.Muon(params, **muon_kwargs), power=power, power_eps=power_eps)


def split_muon_params(model: nn.Module) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
    """Split trainable parameters into (Muon side, AdamW side), the usual Muon+AdamW split.

    Muon side: 2-D weights of hidden layers. AdamW side: every parameter with ndim != 2, every weight of an
    `nn.Embedding`, and the output head (a Hugging Face model's `get_output_embeddings()`, or a module named
    `lm_head`). Tied weights are counted once (on the AdamW side).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    adam_ids: set[int] = set()
    for name, m in model.named_modules():
        if isinstance(m, nn.Embedding) or name.split(".")[-1] == "lm_head":
            adam_ids.update(id(p) for p in m.parameters(recurse=False))
    get_out = getattr(model, "get_output_embeddings", None)
    if callable(get_out):
        head = get_out()
        if isinstance(head, nn.Module):
            adam_ids.update(id(p) for p in head.parameters(recurse=False))
    muon, adam, seen = [], [], set()
    for p in model.parameters():
        if not p.requires_grad or id(p) in seen:
            continue
        seen.add(id(p))
        (adam if (p.ndim != 2 or id(p) in adam_ids) else muon).append(p)
    return muon, adam


def build_muon_adamw(
    model: nn.Module,
    lr_muon: float = 0.02,
    lr_adamw: float = 3e-4,
    power: float = 1.2,
    *,
    power_eps: float = 0.0,
    weight_decay: float = 0.1,
    momentum: float = 0.95,
    betas: tuple[float, float] = (0.9, 0.95),
    eps: float = 1e-8,
    muon_kwargs: dict[str, Any] | None = None,
    adamw_kwargs: dict[str, Any] | None = None,
) -> GradPower:
    """MuonPower for a whole model: Muon on hidden matrices, AdamW on the rest, phi_p on every gradient.

    Returns `GradPower(CombinedOptimizer([Muon(hidden 2-D), AdamW(embeddings, head, 1-D)]), power)`. With
    `power=1.0` it is plain Muon+AdamW (the baseline). Muon defaults: momentum 0.95, Nesterov, 5 Newton-Schulz
    steps with coefficients (3.4445, -4.7750, 2.0315) (torch's defaults, the reference values).
    """
    if not hasattr(torch.optim, "Muon"):
        raise ImportError("build_muon_adamw needs torch.optim.Muon (torch >= 2.9)")
    muon_params, adam_params = split_muon_params(model)
    opts: list[Optimizer] = []
    if muon_params:
        opts.append(torch.optim.Muon(muon_params, lr=lr_muon, weight_decay=weight_decay, momentum=momentum,
                                     **(muon_kwargs or {})))
    if adam_params:
        opts.append(AdamW(adam_params, lr=lr_adamw, betas=betas, eps=eps, weight_decay=weight_decay,
                          **(adamw_kwargs or {})))
    if not opts:
        raise ValueError("model has no trainable parameters")
    return GradPower(CombinedOptimizer(opts), power=power, power_eps=power_eps)
