"""Training and evaluation of one MeshTok arm (used by the CPU reproduction and the paper-scale path).

`train_arm(cfg, arm, seed, train, test)` trains one tokenization arm on random windows of `train` trajectories
(teacher forcing: inputs frames 0..T-1 of a window, targets 1..T, MSE in per-window normalised space), AdamW with a
one-cycle schedule (10 % warmup) and gradient clipping, then evaluates it on `test`:

- one-step rel-L2 of the last target frame of windows starting every `eval_stride` frames;
- persistence (u_{t+1} = u_t) on the same frames;
- rel-L2 inside / outside the physical indicator's top-K patches of the last input frame (the same region for
  every arm, so arms are compared on the same pixels), and the share of gradient energy |grad u|^2 that the
  arm's own refined patches hold;
- an n-step rollout with a sliding context of `context` frames (time indices as in training).

Under torchrun (`env.is_distributed`) the model is wrapped in DDP, each rank draws its own windows and the
gradients are averaged; rank 0 evaluates.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from icml26.common import distributed as D
from icml26.meshtok.baselines import make_arm
from icml26.meshtok.indicators import patch_scores, select_patches
from icml26.meshtok.meshtok import MeshTok, refined_count
from icml26.meshtok.metrics import masked_rel_l2, rel_l2

__all__ = ["build_model", "train_arm", "evaluate_arm", "MODEL_KEYS"]

MODEL_KEYS = ("dim", "depth", "heads", "ffn", "mlp", "dec_width", "max_time_len", "residual", "attn_impl", "periodic")


def build_model(cfg: dict[str, Any], arm: str, in_channels: int) -> MeshTok:
    """The arm's MeshTok from a config with grid, patch, refine_ratio and the MODEL_KEYS."""
    kw = {k: cfg[k] for k in MODEL_KEYS if k in cfg}
    return make_arm(arm, in_channels, cfg["grid"], cfg["patch"], cfg["refine_ratio"], **kw)


def _windows(data: np.ndarray, idx: np.ndarray, starts: np.ndarray, length: int) -> torch.Tensor:
    return torch.from_numpy(np.stack([data[i, s:s + length] for i, s in zip(idx, starts)]))


def train_arm(cfg: dict[str, Any], arm: str, seed: int, train: np.ndarray, test: np.ndarray | None = None,
              env: D.DistEnv | None = None, progress: bool = False, return_model: bool = False,
              device: str | torch.device = "cpu") -> dict[str, Any]:
    """Train one arm; returns losses, timings, evaluation metrics (if `test` is given) and optionally the model.

    cfg keys: grid, patch, refine_ratio, MODEL_KEYS, context (input frames per window), steps, batch_size, lr,
    weight_decay, warmup_frac, grad_clip, input_noise, eval_stride, rollout_steps, eval_batch.
    All arms built with the same seed get the same initial weights (their parameter shapes do not depend on K)
    and see the same window sequence, so arm differences are paired.
    """
    env = env or D.DistEnv()
    dev = torch.device(device)
    torch.manual_seed(seed)
    model = build_model(cfg, arm, train.shape[-1]).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    # a uniform arm leaves one branch of the tokenizer unused: DDP must be told
    unused = model.tokenizer.k in (0, model.tokenizer.n ** 2)
    ddp = D.wrap_ddp(model, env, find_unused_parameters=True) if unused and env.is_distributed else D.wrap_ddp(model, env)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    steps = int(cfg["steps"])
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg["lr"], total_steps=max(steps, 1),
                                                pct_start=cfg["warmup_frac"])
    rng = np.random.default_rng([seed, 7, env.rank])
    sel_gen = torch.Generator().manual_seed(seed * 1000 + 17 + env.rank)
    T = cfg["context"] + 1
    N, T_all = train.shape[:2]
    losses = []
    bar = None
    if progress and env.is_main:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, desc=f"{arm} seed {seed}", leave=False)
    t0 = time.perf_counter()
    model.train()
    for step in range(steps):
        idx = rng.integers(0, N, cfg["batch_size"])
        st = rng.integers(0, T_all - T + 1, cfg["batch_size"])
        w = _windows(train, idx, st, T).to(dev)
        if cfg.get("input_noise", 0.0):
            noise = torch.from_numpy(rng.standard_normal(w[:, :-1].shape).astype(np.float32)).to(dev)
            w = torch.cat([w[:, :-1] + cfg["input_noise"] * w[:, :-1].std() * noise, w[:, -1:]], 1)
        loss = ddp(w[:, :-1], sel_gen, targets=w[:, 1:])  # through forward(), so DDP's gradient hooks run
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg["grad_clip"])
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if bar is not None:
            bar.update(1)
            if step % 20 == 0:
                bar.set_postfix(loss=f"{losses[-1]:.4f}")
    train_s = time.perf_counter() - t0
    if bar is not None:
        bar.close()
    out: dict[str, Any] = {"arm": arm, "seed": seed, "steps": steps, "train_s": train_s,
                           "s_per_step": train_s / max(steps, 1), "params": n_params,
                           "tokens_per_frame": model.token_count(),
                           "final_loss": float(np.mean(losses[-max(1, steps // 10):])) if losses else float("nan"),
                           "loss_curve": [float(np.mean(losses[i:i + 10])) for i in range(0, len(losses), 10)]}
    f = model.flops((1, cfg["context"], cfg["grid"], cfg["grid"], train.shape[-1]))
    out["gflops_window"] = f["total"] / 1e9
    out["gflops_attention"] = f["attention"] / 1e9
    out["gflops_non_attention"] = f["non_attention"] / 1e9
    if test is not None and env.is_main:
        out.update(evaluate_arm(model, cfg, test, seed))
    if return_model:
        out["model"] = model
    return out


@torch.no_grad()
def evaluate_arm(model: MeshTok, cfg: dict[str, Any], test: np.ndarray, seed: int) -> dict[str, Any]:
    """Test metrics of a trained arm (see the module docstring); per-window values are kept for paired tests."""
    model.eval()
    dev = next(model.parameters()).device
    periodic = model.tokenizer.periodic
    ctx, stride = cfg["context"], cfg["eval_stride"]
    T_all = test.shape[1]
    starts = list(range(0, T_all - ctx, stride))
    gen = torch.Generator().manual_seed(seed * 1000 + 99)
    k_ref = refined_count(cfg["grid"], cfg["patch"], cfg["refine_ratio"])
    P, n = cfg["patch"], cfg["grid"] // cfg["patch"]
    e_all, e_per, e_in, e_out, share = [], [], [], [], []
    eb = cfg.get("eval_batch", 32)
    for s in starts:
        for lo in range(0, test.shape[0], eb):
            w = torch.from_numpy(test[lo:lo + eb, s:s + ctx + 1]).to(dev)
            inp, tgt = w[:, :ctx], w[:, ctx]
            pred = model(inp, gen)[:, -1]
            e_all.append(rel_l2(pred, tgt))
            e_per.append(rel_l2(inp[:, -1], tgt))
            # region: the physical top-K patches of the (normalised) last input frame, the same for every arm
            mu, sd = MeshTok._stats(inp)
            z = ((inp[:, -1:] - mu) / sd)[:, 0].permute(0, 3, 1, 2)
            ref = select_patches(patch_scores(z, P, periodic=periodic), k_ref)
            mask = torch.zeros(z.shape[0], n * n, dtype=torch.bool, device=dev).scatter_(1, ref, True)
            pix = mask.view(-1, n, n).repeat_interleave(P, 1).repeat_interleave(P, 2)
            e_in.append(masked_rel_l2(pred, tgt, pix))
            e_out.append(masked_rel_l2(pred, tgt, ~pix))
            # share of gradient energy in this arm's own refined patches (its selection rule on the same frame)
            gsq = _grad_energy(z, P, periodic)
            if model.tokenizer.k:
                own = model.tokenizer.select(z, gen)
                share.append(gsq.gather(1, own).sum(1) / gsq.sum(1).clamp_min(1e-12))
    e_all_t, e_per_t = torch.cat(e_all), torch.cat(e_per)
    res = {"rel_l2": float(e_all_t.mean()), "rel_l2_windows": e_all_t.tolist(),
           "persistence": float(e_per_t.mean()), "persistence_windows": e_per_t.tolist(),
           "rel_l2_inside": float(torch.nanmean(torch.cat(e_in))), "rel_l2_outside": float(torch.nanmean(torch.cat(e_out))),
           "grad_energy_share": float(torch.cat(share).mean()) if share else float("nan"),
           "eval_windows": int(e_all_t.numel())}
    r = int(cfg.get("rollout_steps", 0))
    if r and T_all >= ctx + r:
        preds, trues = [], []
        for lo in range(0, min(test.shape[0], int(cfg.get("rollout_n", test.shape[0]))), eb):
            hi = min(lo + eb, int(cfg.get("rollout_n", test.shape[0])))
            w = torch.from_numpy(test[lo:hi, : ctx + r]).to(dev)
            preds.append(model.rollout(w[:, :ctx], r, window=ctx, generator=gen))
            trues.append(w[:, ctx:])
        e = rel_l2(torch.cat(preds), torch.cat(trues))  # (B, r)
        res["rollout_rel_l2"] = float(e.mean())
        res["rollout_rel_l2_per_step"] = e.mean(0).tolist()
    return res


def _grad_energy(z: torch.Tensor, P: int, periodic: bool = False) -> torch.Tensor:
    """Per-patch mean of the squared central-difference gradient (channel mean), (N, n*n); `periodic` wraps the
    differences around the domain (otherwise the border cells get a zero gradient)."""
    if periodic:
        gx = torch.roll(z, -1, -1) - torch.roll(z, 1, -1)
        gy = torch.roll(z, -1, -2) - torch.roll(z, 1, -2)
        e = gx ** 2 + gy ** 2
    else:
        gx = z[..., :, 2:] - z[..., :, :-2]
        gy = z[..., 2:, :] - z[..., :-2, :]
        e = F.pad(gx, (1, 1)) ** 2 + F.pad(gy, (0, 0, 1, 1)) ** 2
    return F.avg_pool2d(e.mean(1, keepdim=True), P).flatten(1)
