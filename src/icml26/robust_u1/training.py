"""Training stages: Stage I SFT of the restorer, Stage II GRPO of the restoration policy, and the VQA loops.

Stage II follows Flow-GRPO (Liu et al. 2025) as Robust-U1 uses it: for each corrupted input x sample a group
of G restorations y_1..y_G ~ pi_theta_old(. | x), score r_i = R(y_i, x_clean), and

    A_i = clip((r_i - mean_group(r)) / (std(r) + eps), -adv_clip, adv_clip)        (group-relative advantage)
    L(theta) = -E_i[min(rho_i A_i, clip(rho_i, 1 - eps_clip, 1 + eps_clip) A_i)] + beta KL(pi_theta || pi_ref)
    rho_i = exp(log pi_theta(y_i | x) - log pi_theta_old(y_i | x))

with std over the group ("group", per-prompt statistics) or over the whole batch ("batch", Flow-GRPO's global
std option); population std; log-probs are means over pixels (spec 9). With one inner epoch rho = 1 and the
loss is the advantage-weighted log-likelihood. The KL between equal-sigma Gaussians is
|mu_theta - mu_ref|^2 / (2 sigma^2) per pixel (spec 6.2). Deviations from Flow-GRPO: the policy is a one-step
Gaussian around the restorer output rather than a multi-step SDE sampler; no EMA of weights and no LoRA (the
restorer has 7k parameters); samples are clamped to [0, 1] before scoring (`clamp_samples`), log-probs use
the unclamped samples.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from icml26.common.validation import check_bool, check_choice, check_float, check_int, check_seed
from icml26.robust_u1._checks import check_generator, check_images, check_module
from icml26.robust_u1.models import GaussianRestorationPolicy

__all__ = [
    "GRPOConfig",
    "GRPORestorationTrainer",
    "grpo_advantages",
    "grpo_loss",
    "restore",
    "sft_restorer",
    "train_encoder",
    "train_vqa",
]


def _cycle(data: Iterable, name: str) -> Iterator:
    """Endless batches: re-iterate `data` whenever it is exhausted (a one-shot iterator that runs dry raises)."""
    while True:
        it = iter(data)
        got = False
        for b in it:
            got = True
            yield b
        if not got or it is data:
            raise ValueError(f"{name} ran out of batches: pass a re-iterable (e.g. a PairStream or a list)")


def _pair(batch: Any, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise TypeError(f"{name} must yield (x_corrupted, x_clean) pairs, got {type(batch).__name__}")
    xc = check_images(batch[0], f"{name} x_corrupted")
    x = check_images(batch[1], f"{name} x_clean")
    if xc.shape != x.shape:
        raise ValueError(f"{name}: x_corrupted {tuple(xc.shape)} and x_clean {tuple(x.shape)} differ in shape")
    return xc, x


# ------------------------------------------------------------------------------------------- Stage I
def sft_restorer(restorer: nn.Module, loader: Iterable, epochs: int = 10, lr: float = 1e-3, loss: str = "l1",
                 checkpoint_epochs: Sequence[int] = (), progress: str | None = None,
                 optimizer: torch.optim.Optimizer | None = None) -> dict[str, Any]:
    """Supervised restoration (Stage I): minimise L1 (or MSE) between restorer(x_c) and x over `epochs` passes.

    Args:
        restorer: nn.Module (N, C, H, W) -> (N, C, H, W); trained in place.
        loader: re-iterable of (x_corrupted, x_clean) batches, one pass per epoch (e.g. `PairStream`, which
            draws fresh corruptions each epoch).
        epochs: passes (>= 1); lr: Adam learning rate (default 1e-3, spec 6.2); loss: "l1" or "mse".
        checkpoint_epochs: epochs (1-based) after which to keep a copy of the weights.
        optimizer: continue with this optimizer instead of a fresh Adam(lr).
    Returns:
        {"loss": mean training loss per epoch, "checkpoints": {epoch: state_dict}, "time_s": seconds}.
    """
    check_module(restorer, "restorer")
    epochs = check_int(epochs, "epochs", min=1)
    lr = check_float(lr, "lr", min=0.0, min_open=True)
    check_choice(loss, "loss", ("l1", "mse"))
    ckpt = {check_int(e, "checkpoint_epochs", min=1, max=epochs) for e in checkpoint_epochs}
    opt = optimizer or torch.optim.Adam(restorer.parameters(), lr=lr)
    fn = F.l1_loss if loss == "l1" else F.mse_loss
    hist: dict[str, Any] = {"loss": [], "checkpoints": {}}
    t0 = time.perf_counter()
    restorer.train()
    for ep in tqdm(range(1, epochs + 1), desc=progress, disable=progress is None, leave=False):
        tot, n = 0.0, 0
        for batch in loader:
            xc, x = _pair(batch, "loader")
            out = restorer(xc)
            lo = fn(out, x)
            opt.zero_grad(set_to_none=True)
            lo.backward()
            opt.step()
            tot += float(lo.detach()) * len(x)
            n += len(x)
        if n == 0:
            raise ValueError("loader yielded no batches")
        hist["loss"].append(tot / n)
        if ep in ckpt:
            hist["checkpoints"][ep] = {k: v.detach().clone() for k, v in restorer.state_dict().items()}
    hist["time_s"] = time.perf_counter() - t0
    return hist


@torch.no_grad()
def restore(restorer: Callable[[torch.Tensor], torch.Tensor], x: Any, batch_size: int = 1024) -> torch.Tensor:
    """restorer(x) in eval mode and batches of `batch_size`, without gradients; x (N, C, H, W) in [0, 1]."""
    x = check_images(x, "x")
    bs = check_int(batch_size, "batch_size", min=1)
    was = getattr(restorer, "training", None)
    if isinstance(restorer, nn.Module):
        restorer.eval()
        x = x.to(next(restorer.parameters(), x).dtype)  # lists / float64 arrays are read in the module's dtype
    try:
        return torch.cat([restorer(x[s:s + bs]) for s in range(0, len(x), bs)])
    finally:
        if isinstance(restorer, nn.Module) and was:
            restorer.train()


# ------------------------------------------------------------------------------------------- Stage II
@dataclass
class GRPOConfig:
    """GRPO hyper-parameters (spec 5/6.2 defaults; batch_size 64 per review note 3).

    group_size: samples G per input (>= 2); std: policy sigma (image units) of a policy built by
    `GRPORestorationTrainer.from_restorer`; lr: Adam learning rate (spec 9: keep <= 1e-4); kl_beta: weight of
    KL(pi || pi_ref) (>= 0); clip_range: PPO ratio clip eps (> 0); adv_clip: advantages clipped to
    [-adv_clip, adv_clip]; std_scope: "group" or "batch"; inner_epochs: updates per sampled batch (>= 1);
    steps: optimiser steps per `train` call; batch_size: inputs per step for `stream`; adv_eps: added to the
    std (1e-4); eval_every: held-out log interval in steps; max_grad_norm: gradient clip (None = off);
    clamp_samples: score clamp(y, 0, 1) (rewards take images in [0, 1]).
    """

    group_size: int = 8
    std: float = 0.05
    lr: float = 5e-5
    kl_beta: float = 0.01
    clip_range: float = 0.2
    adv_clip: float = 5.0
    std_scope: str = "group"
    inner_epochs: int = 1
    steps: int = 200
    batch_size: int = 64
    adv_eps: float = 1e-4
    eval_every: int = 25
    max_grad_norm: float | None = None
    clamp_samples: bool = True

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> GRPOConfig:
        """Raise ValueError/TypeError naming the first bad field (also call after changing fields)."""
        check_int(self.group_size, "group_size", min=2)
        check_float(self.std, "std", min=0.0, min_open=True)
        check_float(self.lr, "lr", min=0.0, min_open=True)
        check_float(self.kl_beta, "kl_beta", min=0.0)
        check_float(self.clip_range, "clip_range", min=0.0, min_open=True)
        check_float(self.adv_clip, "adv_clip", min=0.0, min_open=True)
        check_choice(self.std_scope, "std_scope", ("group", "batch"))
        check_int(self.inner_epochs, "inner_epochs", min=1)
        check_int(self.steps, "steps", min=0)
        check_int(self.batch_size, "batch_size", min=1)
        check_float(self.adv_eps, "adv_eps", min=0.0, min_open=True)
        check_int(self.eval_every, "eval_every", min=1)
        if self.max_grad_norm is not None:
            check_float(self.max_grad_norm, "max_grad_norm", min=0.0, min_open=True)
        check_bool(self.clamp_samples, "clamp_samples")
        return self


def grpo_advantages(rewards: Any, std_scope: str = "group", eps: float = 1e-4, clip: float = 5.0) -> torch.Tensor:
    """Group-relative advantages of rewards (N, G): (r - row mean) / (std + eps), clipped to [-clip, clip].

    std: population std of each row ("group") or of all N G rewards ("batch"). Equal rewards give exactly 0.
    """
    from icml26.common.validation import check_tensor

    r = check_tensor(rewards, "rewards", ndim=2)
    if r.shape[1] < 2:
        raise ValueError(f"rewards must have a group of >= 2 samples per input, got shape {tuple(r.shape)}")
    check_choice(std_scope, "std_scope", ("group", "batch"))
    eps = check_float(eps, "eps", min=0.0, min_open=True)
    clip = check_float(clip, "clip", min=0.0, min_open=True)
    centred = r - r.mean(dim=1, keepdim=True)
    std = r.std(dim=1, keepdim=True, unbiased=False) if std_scope == "group" else r.std(unbiased=False)
    adv = (centred / (std + eps)).clamp(-clip, clip)
    # a group of equal rewards carries no preference: exactly zero (its float mean can differ from the values
    # by one ulp, which the 1e-4 denominator would blow up to ~1e-3)
    return torch.where((r.amax(1) == r.amin(1)).unsqueeze(1), torch.zeros_like(adv), adv)


def grpo_loss(logp: torch.Tensor, logp_old: torch.Tensor, advantages: torch.Tensor, clip_range: float,
              kl: torch.Tensor | None = None, kl_beta: float = 0.0) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped-ratio policy loss plus beta * mean KL; all of logp, logp_old, advantages (N, G), kl (N,)."""
    ratio = torch.exp(logp - logp_old)
    clipped = ratio.clamp(1.0 - clip_range, 1.0 + clip_range)
    pg = -torch.minimum(ratio * advantages, clipped * advantages).mean()
    kl_mean = kl.mean() if kl is not None else torch.zeros((), dtype=logp.dtype)
    loss = pg + kl_beta * kl_mean
    return loss, {"policy_loss": float(pg.detach()), "kl": float(kl_mean.detach()),
                  "clip_frac": float(((ratio - 1).abs() > clip_range).float().mean())}


class GRPORestorationTrainer:
    """GRPO for any image policy with a Gaussian head (Stage II).

    Args:
        policy: a `GaussianRestorationPolicy` (trained in place).
        reward: callable (images (M, C, H, W), ref_images (M, C, H, W)) -> ((M,) rewards, parts dict).
        config: `GRPOConfig` (validated again at every `train` call).
        ref_policy: the KL reference; default a frozen copy of `policy` taken at construction (the SFT policy).
    `train(pairs, generator=None, eval_pairs=None, progress=None)` runs `config.steps` steps on batches from
    `pairs` (a re-iterable of (x_corrupted, x_clean), re-iterated when exhausted) and returns the history of
    that call. A second call continues from the current weights with the same Adam state.
    """

    def __init__(self, policy: GaussianRestorationPolicy, reward: Callable[..., Any], config: GRPOConfig | None = None,
                 ref_policy: GaussianRestorationPolicy | None = None) -> None:
        if not isinstance(policy, GaussianRestorationPolicy):
            raise TypeError(f"policy must be a GaussianRestorationPolicy, got {type(policy).__name__}")
        if not callable(reward):
            raise TypeError(f"reward must be callable, got {type(reward).__name__}")
        self.config = (config or GRPOConfig())
        if not isinstance(self.config, GRPOConfig):
            raise TypeError(f"config must be a GRPOConfig, got {type(self.config).__name__}")
        self.config.validate()
        if ref_policy is not None and not isinstance(ref_policy, GaussianRestorationPolicy):
            raise TypeError(f"ref_policy must be a GaussianRestorationPolicy or None, got {type(ref_policy).__name__}")
        self.policy, self.reward = policy, reward
        self.ref_policy = ref_policy if ref_policy is not None else policy.frozen_copy()
        self.optimizer = torch.optim.Adam([p for p in policy.parameters() if p.requires_grad], lr=self.config.lr)

    @classmethod
    def from_restorer(cls, restorer: nn.Module, reward: Callable[..., Any], config: GRPOConfig | None = None
                      ) -> GRPORestorationTrainer:
        """Wrap `restorer` in a `GaussianRestorationPolicy(std=config.std)` and build the trainer."""
        config = config or GRPOConfig()
        return cls(GaussianRestorationPolicy(restorer, std=config.std), reward, config)

    def stream(self, images: Any, corruption: Any = None, seed: int = 0):
        """A `PairStream` of `config.batch_size` fresh corruptions of `images` per step."""
        from icml26.robust_u1.data import PairStream

        return PairStream(images, batch_size=self.config.batch_size, copies=1, corruption=corruption, seed=seed)

    def _score(self, y: torch.Tensor, x_ref: torch.Tensor) -> torch.Tensor:
        from icml26.robust_u1.rewards import grouped_reward

        n, g = y.shape[:2]
        r, _ = grouped_reward(self.reward, y.clamp(0.0, 1.0) if self.config.clamp_samples else y, x_ref)
        if not isinstance(r, torch.Tensor) or r.shape != (n * g,):
            raise ValueError(f"reward must return an (M,) tensor with M = {n * g}, got "
                             f"{tuple(r.shape) if isinstance(r, torch.Tensor) else type(r).__name__}")
        if not bool(torch.isfinite(r).all()):
            raise ValueError("reward returned NaN/inf")
        return r.detach().view(n, g).to(y.dtype)

    @torch.no_grad()
    def evaluate(self, x_c: Any, x_ref: Any, batch_size: int = 512) -> dict[str, float]:
        """Reward and SSIM of the policy MEAN output on held-out pairs (spec 9: compare policies by their mean)."""
        from icml26.robust_u1.metrics import ssim

        xc, xr = _pair((x_c, x_ref), "eval_pairs")
        mu = restore(self.policy.mean, xc, batch_size)
        r, _ = self.reward(mu, xr)
        return {"reward": float(r.mean()), "ssim": float(ssim(mu, xr).mean())}

    def step(self, x_c: torch.Tensor, x_ref: torch.Tensor, generator: torch.Generator | None = None) -> dict[str, float]:
        """One GRPO step on a batch; returns its logs."""
        cfg = self.config
        self.policy.train()
        mu = self.policy.mean(x_c)  # theta_old = theta at the first inner epoch: one forward serves both
        with torch.no_grad():
            eps = torch.randn((mu.shape[0], cfg.group_size, *mu.shape[1:]), generator=generator, dtype=mu.dtype,
                              device=mu.device)
            y = mu.detach().unsqueeze(1) + self.policy.std.detach() * eps
            logp_old = self.policy.log_prob(x_c, y, mu=mu.detach())
        r = self._score(y, x_ref)
        adv = grpo_advantages(r, cfg.std_scope, cfg.adv_eps, cfg.adv_clip)
        logs: dict[str, float] = {}
        for epoch in range(cfg.inner_epochs):
            if epoch > 0:
                mu = self.policy.mean(x_c)
            logp = self.policy.log_prob(x_c, y, mu=mu)
            kl = self.policy.kl_to(self.ref_policy, x_c, mu=mu) if cfg.kl_beta > 0 else None
            loss, logs = grpo_loss(logp, logp_old, adv, cfg.clip_range, kl, cfg.kl_beta)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.max_grad_norm is not None:
                nn.utils.clip_grad_norm_(self.policy.parameters(), cfg.max_grad_norm)
            self.optimizer.step()
        logs.update(reward=float(r.mean()), reward_std=float(r.std(unbiased=False)))
        return logs

    def train(self, pairs: Iterable, generator: torch.Generator | None = None, eval_pairs: Any = None,
              progress: str | None = None) -> dict[str, Any]:
        cfg = self.config
        if not isinstance(cfg, GRPOConfig):
            raise TypeError(f"config must be a GRPOConfig, got {type(cfg).__name__}")
        cfg.validate()
        for group in self.optimizer.param_groups:  # config.lr may have been changed since construction
            group["lr"] = cfg.lr
        check_generator(generator)
        if eval_pairs is not None:
            eval_pairs = _pair(eval_pairs, "eval_pairs")
        hist: dict[str, Any] = {"step": [], "reward": [], "kl": [], "policy_loss": [], "eval": []}
        t0 = time.perf_counter()
        if eval_pairs is not None:
            hist["eval"].append({"step": 0, **self.evaluate(*eval_pairs)})
        batches = _cycle(pairs, "pairs")
        for step in tqdm(range(1, cfg.steps + 1), desc=progress, disable=progress is None, leave=False):
            xc, x = _pair(next(batches), "pairs")
            logs = self.step(xc, x, generator)
            hist["step"].append(step)
            for k in ("reward", "kl", "policy_loss"):
                hist[k].append(logs[k])
            if eval_pairs is not None and (step % cfg.eval_every == 0 or step == cfg.steps):
                hist["eval"].append({"step": step, **self.evaluate(*eval_pairs)})
        hist["time_s"] = time.perf_counter() - t0
        hist["step_time_s"] = hist["time_s"] / max(cfg.steps, 1)
        return hist


# ------------------------------------------------------------------------------------------- VQA / encoder
def train_vqa(model: nn.Module, loader: Iterable, loss_fn: Callable[[Any], torch.Tensor], epochs: int = 8,
              lr: float = 1e-3, params: Iterable[nn.Parameter] | None = None, progress: str | None = None
              ) -> dict[str, Any]:
    """Generic VQA training loop: Adam(lr) on `params` (default model.parameters()), `epochs` passes over the
    re-iterable `loader`, minimising `loss_fn(batch)` (a scalar tensor). Returns {"loss": per epoch, "steps"}."""
    check_module(model, "model")
    epochs = check_int(epochs, "epochs", min=1)
    lr = check_float(lr, "lr", min=0.0, min_open=True)
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
    opt = torch.optim.Adam(list(params) if params is not None else model.parameters(), lr=lr)
    hist: dict[str, Any] = {"loss": [], "steps": 0}
    model.train()
    for _ in tqdm(range(epochs), desc=progress, disable=progress is None, leave=False):
        tot, n = 0.0, 0
        for batch in loader:
            loss = loss_fn(batch)
            if not isinstance(loss, torch.Tensor) or loss.dim() != 0 or not bool(torch.isfinite(loss)):
                raise ValueError(f"loss_fn must return a finite scalar tensor, got {loss!r}")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            tot, n = tot + float(loss.detach()), n + 1
            hist["steps"] += 1
        if n == 0:
            raise ValueError("loader yielded no batches")
        hist["loss"].append(tot / n)
    model.eval()
    return hist


def train_encoder(encoder: nn.Module, images: Any, labels: Any, epochs: int = 5, lr: float = 1e-3,
                  batch_size: int = 64, seed: int = 0) -> dict[str, Any]:
    """Train a classifier (e.g. `TinyEncoder`) with cross-entropy on clean images (N, C, H, W) and labels (N,)."""
    from icml26.common.validation import check_array

    check_module(encoder, "encoder")
    x = check_images(images, "images")
    y = torch.as_tensor(check_array(labels, "labels", ndim=1, dtype="int64"))
    if len(y) != len(x):
        raise ValueError(f"labels ({len(y)}) and images ({len(x)}) differ in length")
    encoder.eval()  # read the number of classes without touching any train-mode state
    with torch.no_grad():
        n_cls = int(encoder(x[:1]).shape[-1])
    if int(y.min()) < 0 or int(y.max()) >= n_cls:
        raise ValueError(f"labels must lie in 0..{n_cls - 1} (the encoder's {n_cls} outputs), got values in "
                         f"{int(y.min())}..{int(y.max())}")
    epochs, bs = check_int(epochs, "epochs", min=1), check_int(batch_size, "batch_size", min=1)
    lr = check_float(lr, "lr", min=0.0, min_open=True)
    g = torch.Generator().manual_seed(check_seed(seed))
    opt = torch.optim.Adam(encoder.parameters(), lr=lr)
    hist = {"loss": []}
    encoder.train()
    for _ in range(epochs):
        perm = torch.randperm(len(x), generator=g)
        tot = 0.0
        for s in range(0, len(x), bs):
            b = perm[s:s + bs]
            loss = F.cross_entropy(encoder(x[b]), y[b])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            tot += float(loss.detach()) * len(b)
        hist["loss"].append(tot / len(x))
    encoder.eval()
    return hist

