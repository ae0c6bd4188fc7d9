"""The speed-ups are bit for bit: the ConvNet's 2x2 pooling against `F.avg_pool2d` (forward and backward), and
the CPU training loops (`_optim.AdamW`, stepped with the cosine lr) against `torch.optim.AdamW` + `LambdaLR` with
torch's pooling kernel, compared with `torch.equal` on every weight after training."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from icml26.dataset_compression import models, scoring
from icml26.dataset_compression.augment import RandomResizedCrop, TileConstrainedRandomResizedCrop
from icml26.dataset_compression.benchmark import cosine_lr, kd_loss, train_student
from icml26.dataset_compression.models import convnet_factory, make_model
from icml26.dataset_compression.pca import combine_tiles


@pytest.mark.parametrize("shape", [(3, 2, 4, 6), (64, 16, 16, 16), (7, 32, 8, 8), (1, 1, 2, 2)])
def test_pool2_equals_avg_pool2d(shape):
    g = torch.Generator().manual_seed(sum(shape))
    x = torch.randn(shape, generator=g).relu().requires_grad_()
    xr = x.detach().clone().requires_grad_()
    out, ref = models._pool2(x), F.avg_pool2d(xr, 2)
    assert torch.equal(out, ref) and out.stride() == ref.stride()
    up = torch.randn(ref.shape, generator=g)
    out.backward(up)
    ref.backward(up)
    assert torch.equal(x.grad, xr.grad)


def _reference_student(model, images, labels, *, augment, label_mode, teacher, temperature, steps, batch_size, lr,
                       weight_decay, seed):
    """The evaluator's loop before the speed-ups: torch.optim.AdamW + LambdaLR (cosine per step)."""
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: cosine_lr(s, steps))
    losses = []
    for _ in range(steps):
        idx = torch.randint(len(images), (batch_size,), generator=g)
        x = augment(images[idx], generator=g)
        logits = model(x)
        if label_mode == "soft":
            with torch.no_grad():
                t_logits = teacher(x)
            loss = kd_loss(logits, t_logits, temperature)
        else:
            loss = F.cross_entropy(logits, labels[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.detach())
    return float(torch.stack(losses[-max(1, steps // 10):]).mean())


def _torch_pool(monkeypatch):
    monkeypatch.setattr(models, "_pool2", lambda x: F.avg_pool2d(x, 2))


@pytest.mark.parametrize("case", ["tile_hard", "rrc_soft"])
def test_train_student_bit_identical_to_torch_adamw(digits, monkeypatch, case):
    X, y = digits["X"][::5], digits["y"][::5]
    if case == "tile_hard":
        images, labels = combine_tiles(X[:16], y[:16] * 0, 2)  # 4 canvases of 4 tiles each
        augment, label_mode, teacher = TileConstrainedRandomResizedCrop(16, 2), "hard", None
    else:
        images, labels = X[:12], y[:12]
        augment, label_mode = RandomResizedCrop(16, scale=(0.5, 1.0)), "soft"
        teacher = make_model(convnet_factory(1, 10, 16), 5)
    kw = dict(augment=augment, label_mode=label_mode, teacher=teacher, temperature=4.0, steps=40, batch_size=16,
              lr=3e-3, weight_decay=0.01, seed=3)
    fast = make_model(convnet_factory(1, 10, 16), 3)
    out = train_student(fast, images, labels, **kw)
    _torch_pool(monkeypatch)
    ref = make_model(convnet_factory(1, 10, 16), 3)
    ref_loss = _reference_student(ref, images, labels, **kw)
    assert out["train_loss"] == ref_loss
    for (name, a), (_, b) in zip(fast.state_dict().items(), ref.state_dict().items()):
        assert torch.equal(a, b), name


def _reference_recording(model, X, y, epochs, batch_size, lr, weight_decay, seed, record=None):
    """The scorers' loop before the speed-ups (torch.optim.AdamW, constant lr)."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    g = torch.Generator().manual_seed(seed)
    model.train()
    for epoch in range(epochs):
        perm = torch.randperm(len(X), generator=g)
        for start in range(0, len(X), batch_size):
            idx = perm[start:start + batch_size]
            logits = model(X[idx])
            if record is not None:
                record(epoch, idx, logits.detach())
            loss = F.cross_entropy(logits, y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()


def test_scoring_training_bit_identical_to_torch_adamw(digits, monkeypatch):
    X, y = digits["X"][::3], digits["y"][::3]
    el2n = scoring.el2n_scores(X, y, n_models=2, epochs=2, batch_size=16, random_state=1)
    forg = scoring.forgetting_scores(X, y, epochs=3, batch_size=16, random_state=1)
    _torch_pool(monkeypatch)
    monkeypatch.setattr(scoring, "_train_recording", _reference_recording)
    assert np.array_equal(el2n, scoring.el2n_scores(X, y, n_models=2, epochs=2, batch_size=16, random_state=1))
    assert np.array_equal(forg, scoring.forgetting_scores(X, y, epochs=3, batch_size=16, random_state=1))


def test_pool2_without_a_graph_equals_avg_pool2d():
    x = torch.randn(5, 8, 6, 4, generator=torch.Generator().manual_seed(1)).relu()
    with torch.no_grad():
        out = models._pool2(x.clone().requires_grad_())
    assert torch.equal(out, F.avg_pool2d(x, 2)) and not out.requires_grad
    assert torch.equal(models._pool2(x), F.avg_pool2d(x, 2))


class _TorchAdam:
    """The DM loop's optimiser before the speed-up: torch.optim.Adam, stepped with the same lr."""

    def __init__(self, params, weight_decay):
        assert weight_decay == 0.0
        self.params, self.opt = list(params), None

    def zero_grad(self):
        for p in self.params:
            p.grad = None

    def step(self, lr):
        if self.opt is None:
            self.opt = torch.optim.Adam(self.params, lr=lr)
        self.opt.step()


def test_dm_bit_identical_to_torch_adam(digits, monkeypatch):
    from icml26.dataset_compression import baselines

    X, y = digits["X"][::2], digits["y"][::2]
    kw = dict(iters=25, lr=0.05, batch_real=6, random_state=4)
    fast = [baselines.DistributionMatching(ipc, **kw).fit(X, y) for ipc in (1, 2)]
    monkeypatch.setattr(baselines._optim, "AdamW", _TorchAdam)
    ref = [baselines.DistributionMatching(ipc, **kw).fit(X, y) for ipc in (1, 2)]
    for a, b in zip(fast, ref):
        assert torch.equal(a.images_, b.images_) and np.array_equal(a.loss_history_, b.loss_history_)
