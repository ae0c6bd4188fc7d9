"""Known answers of the Jacobian penalties and losses (spec section 8)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from icml26.sparse_transfer import (
    JacobianSparsityPenalty,
    anchor_loss,
    jacobian_l1_exact,
    jacobian_l1_fd,
    mlp,
    mmd2,
)
from icml26.sparse_transfer.jacobian import probe_size


def _linear(A: torch.Tensor) -> nn.Linear:
    lin = nn.Linear(A.shape[1], A.shape[0], bias=True).to(A.dtype)
    with torch.no_grad():
        lin.weight.copy_(A)
        lin.bias.normal_()
    return lin


def test_fd_linear_k1_is_unbiased_for_l1_over_dout():
    g = torch.Generator().manual_seed(0)
    A = torch.randn(4, 6, generator=g, dtype=torch.float64)
    f = _linear(A)
    x = torch.randn(64, 6, generator=g, dtype=torch.float64)
    est = jacobian_l1_fd(f, x, n_probes=400, probe_frac=1 / 6, sigma=0.01, generator=g)
    assert est.item() == pytest.approx(A.abs().sum().item() / 4, rel=0.05)


def test_fd_diagonal_exact_for_every_probe_and_independent_of_sigma():
    a = torch.tensor([0.5, -2.0, 3.0], dtype=torch.float64)
    f = _linear(torch.diag(a))
    x = torch.randn(8, 3, dtype=torch.float64)
    for sigma in (1e-4, 0.01, 1.0, 10.0):
        # probe_frac = 1 moves every coordinate: ||A z||_1 = sum |a_ii| exactly, whatever the probe
        v = jacobian_l1_fd(f, x, n_probes=1, probe_frac=1.0, sigma=sigma, generator=torch.Generator().manual_seed(3))
        assert v.item() == pytest.approx(a.abs().sum().item() / 3, rel=1e-9)
    # equal-magnitude diagonal: every single-coordinate probe gives the same value
    f2 = _linear(torch.diag(torch.tensor([2.0, -2.0, 2.0], dtype=torch.float64)))
    for s in range(5):
        v = jacobian_l1_fd(f2, x, n_probes=1, probe_frac=0.2, sigma=0.3, generator=torch.Generator().manual_seed(s))
        assert v.item() == pytest.approx(2.0, rel=1e-9)


def test_exact_equals_closed_form_and_fd_on_mlp():
    A = torch.randn(3, 5, dtype=torch.float64)
    f = _linear(A)
    x = torch.randn(10, 5, dtype=torch.float64)
    assert jacobian_l1_exact(f, x).item() == pytest.approx(A.abs().sum().item(), rel=1e-12)
    assert jacobian_l1_exact(f, x, normalize=True).item() == pytest.approx(A.abs().sum().item() / 3, rel=1e-12)
    torch.manual_seed(0)
    net = mlp(3, 3, (16, 16)).double()
    xs = torch.randn(100, 3, dtype=torch.float64)
    exact = jacobian_l1_exact(net, xs, normalize=True).item()
    fd = jacobian_l1_fd(net, xs, n_probes=400, probe_frac=1 / 3, sigma=1e-4,
                        generator=torch.Generator().manual_seed(0)).item()
    assert fd == pytest.approx(exact, rel=0.02)


def test_exact_hinge_and_constant_map():
    f = _linear(torch.eye(2, dtype=torch.float64))
    x = torch.randn(4, 2, dtype=torch.float64)
    assert jacobian_l1_exact(f, x, hinge=1.0).item() == pytest.approx(1.0)
    assert jacobian_l1_exact(f, x, hinge=5.0).item() == 0.0
    const = lambda z: torch.zeros(z.shape[0], 3, dtype=z.dtype) + 2.0
    assert jacobian_l1_exact(const, x).item() == 0.0
    assert jacobian_l1_fd(const, x).item() == 0.0


def test_sparsity_prefers_the_permutation_map_over_a_rotated_one():
    x = torch.randn(256, 2, dtype=torch.float64)
    f = lambda z: torch.stack([z[:, 1] + 0.4 * torch.sin(z[:, 1]), z[:, 0] ** 3 / 3 + z[:, 0]], 1)
    c = np.cos(np.pi / 4)
    R = torch.tensor([[c, -c], [c, c]], dtype=torch.float64)
    rot = lambda z: f(z) @ R.T
    for pen in (JacobianSparsityPenalty("exact"), JacobianSparsityPenalty("fd", n_probes=64, probe_frac=0.5, seed=0)):
        assert pen(f, x).item() < pen(rot, x).item() / 1.2


def test_gradients_flow_to_parameters_only():
    torch.manual_seed(0)
    net = mlp(3, 3, (8,))
    x = torch.randn(16, 3, requires_grad=True)
    for pen in (JacobianSparsityPenalty("exact"), JacobianSparsityPenalty("fd", seed=1)):
        net.zero_grad()
        pen(net, x).backward()
        weights = [m.weight for m in net if isinstance(m, nn.Linear)]
        assert all(w.grad is not None and torch.isfinite(w.grad).all() and w.grad.abs().sum() > 0 for w in weights)
        assert x.grad is None  # x is detached: the penalty shapes the map, not the data


def test_probe_size_never_zero():
    assert probe_size(0.1, 3) == 1
    assert probe_size(0.1, 100) == 10
    assert probe_size(1.0, 7) == 7


def test_fd_seeded_module_is_reproducible_and_images_work():
    conv = nn.Conv2d(1, 1, 3, padding=1)
    x = torch.randn(4, 1, 8, 8)
    v1 = JacobianSparsityPenalty("fd", seed=5)(conv, x)
    v2 = JacobianSparsityPenalty("fd", seed=5)(conv, x)
    assert v1.item() == pytest.approx(v2.item()) and v1.item() > 0


def test_mmd_and_anchor_loss_known_answers():
    a = torch.randn(50, 2)
    assert mmd2(a, a).item() == pytest.approx(0.0, abs=1e-6)
    assert mmd2(a, a + 3.0).item() > 1.0
    b = torch.randn(60, 2)
    # unbiased differs from the biased V-statistic by the diagonal terms only
    assert mmd2(a, b, unbiased=True).item() < mmd2(a, b).item()
    f = _linear(torch.eye(2))
    xa = torch.tensor([1.0, 2.0])
    assert anchor_loss(f, xa, f(xa[None])[0].detach()).item() == pytest.approx(0.0, abs=1e-12)
    assert anchor_loss(f, xa, f(xa[None])[0].detach() + 1.0, kind="l1").item() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="y_a"):
        anchor_loss(f, xa, torch.zeros(3))


@pytest.mark.parametrize("kwargs, name", [
    ({"probe_frac": 0.0}, "probe_frac"), ({"probe_frac": 1.5}, "probe_frac"), ({"sigma": 0.0}, "sigma"),
    ({"sigma": -1.0}, "sigma"), ({"n_probes": 0}, "n_probes"), ({"n_probes": 2.5}, "n_probes"),
])
def test_fd_bad_arguments(kwargs, name):
    f = _linear(torch.eye(2))
    with pytest.raises(ValueError, match=name):
        jacobian_l1_fd(f, torch.randn(4, 2), **kwargs)
    with pytest.raises(ValueError, match=name):
        JacobianSparsityPenalty("fd", **kwargs)


def test_bad_inputs_name_the_argument():
    f = _linear(torch.eye(2))
    with pytest.raises(ValueError, match="x"):
        jacobian_l1_fd(f, torch.tensor([[float("nan"), 0.0]]))
    with pytest.raises(ValueError, match="x"):
        jacobian_l1_exact(f, torch.zeros(4, 0))
    with pytest.raises(ValueError, match="x"):
        jacobian_l1_fd(f, torch.zeros(3))
    with pytest.raises(TypeError, match="f"):
        jacobian_l1_fd("net", torch.zeros(3, 2))
    with pytest.raises(ValueError, match="mode"):
        JacobianSparsityPenalty("adjoint")
    with pytest.raises(ValueError, match="per_element_eps"):
        jacobian_l1_fd(_linear(torch.randn(3, 2)), torch.zeros(4, 2), per_element_eps=True)
    with pytest.raises(ValueError, match="bandwidths"):
        mmd2(torch.zeros(3, 2), torch.zeros(3, 2), bandwidths=(0.0,))
    with pytest.raises(ValueError, match="feature"):
        mmd2(torch.zeros(3, 2), torch.zeros(3, 3))


def test_torch_func_failures_become_value_errors_naming_the_fix():
    bn = nn.Sequential(nn.Linear(3, 8), nn.BatchNorm1d(8), nn.Linear(8, 3))
    x = torch.randn(6, 3)
    with pytest.raises(ValueError, match=r"jacobian_l1_exact.*BatchNorm.*eval\(\)"):
        jacobian_l1_exact(bn, x)
    with pytest.raises(ValueError, match="BatchNorm"):
        JacobianSparsityPenalty("exact")(bn, x)
    bn.eval()  # the fix the message names: a per-sample map again
    assert torch.isfinite(jacobian_l1_exact(bn, x))

    class RunningMean(nn.Module):  # in-place update of a buffer from the input
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.register_buffer("mean", torch.zeros(3))

        def forward(self, z: torch.Tensor) -> torch.Tensor:
            self.mean.add_(z.mean(0))
            return self.lin(z)

    with pytest.raises(ValueError, match=r"could not trace f \(RunningMean\).*out of place"):
        jacobian_l1_exact(RunningMean(), x)


def test_integer_inputs_are_cast_and_the_fd_step_fits_the_float_type():
    from icml26.sparse_transfer.jacobian import min_step

    f = lambda z: 2.0 * z  # noqa: E731  (a plain callable: no module dtype to borrow)
    xi = torch.randint(-3, 4, (16, 3))
    g = torch.Generator().manual_seed(0)
    assert jacobian_l1_fd(f, xi, n_probes=4, probe_frac=1 / 3, generator=g).item() == pytest.approx(2.0, rel=1e-3)
    assert jacobian_l1_exact(f, xi, normalize=True).item() == pytest.approx(2.0)
    assert min_step(torch.float32) == pytest.approx(torch.finfo(torch.float32).eps ** 0.5)
    assert min_step(torch.float64) == pytest.approx(1.49e-8, rel=0.01)
    # a tiny sigma: the official 1e-8 clamp would vanish in float32 (x + 1e-8 == x at |x| = 100); ours does not
    big = torch.full((8, 3), 100.0)
    est = jacobian_l1_fd(f, big, n_probes=4, probe_frac=1 / 3, sigma=1e-9, generator=g)
    assert est.item() == pytest.approx(2.0, rel=0.05)


def _grads(net: nn.Module) -> list[torch.Tensor | None]:
    return [None if p.grad is None else p.grad.clone() for p in net.parameters()]


def test_written_out_mlp_jacobian_is_bit_identical_to_torch_func(monkeypatch):
    """The plain-MLP fast path of batch_jacobian (the small run's exact penalty) runs the same ops as jvp + vmap:
    the same values and the same parameter gradients, bit for bit, also with the hinge and next to another loss."""
    import icml26.sparse_transfer.jacobian as jac_mod

    for seed, hidden, d, dtype in [(0, (64, 64), 3, torch.float32), (1, (32,), 2, torch.float32),
                                   (2, (16, 8), 4, torch.float64)]:
        torch.manual_seed(seed)
        net, x = mlp(d, d + 1, hidden).to(dtype), torch.randn(50, d, dtype=dtype)
        assert jac_mod._is_plain_mlp(net, x)
        for hinge in (None, 0.5):
            out = []
            for fast in (True, False):
                monkeypatch.setattr(jac_mod, "_is_plain_mlp", (lambda f, x: True) if fast else (lambda f, x: False))
                net.zero_grad()
                pen = jacobian_l1_exact(net, x, hinge=hinge, normalize=True)
                (pen + net(x).pow(2).mean()).backward()
                out.append((pen.detach(), _grads(net)))
            monkeypatch.undo()
            assert torch.equal(out[0][0], out[1][0])
            for a, b in zip(out[0][1], out[1][1]):
                assert (a is None and b is None) or torch.equal(a, b)
    # anything else (here: a Tanh layer) takes the torch.func path
    assert not jac_mod._is_plain_mlp(nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 3)), torch.zeros(2, 3))


def test_mmd_exp_floor_leaves_values_and_gradients_unchanged():
    """The kernel floors its exp argument (exp's slow denormal path); with the default bandwidths the MMD^2 and its
    gradient equal the unfloored kernel's bit for bit, also where a third of the h = 0.2 terms are denormal."""
    from icml26.sparse_transfer.losses import DEFAULT_BANDWIDTHS

    torch.manual_seed(0)
    a, b = (1.5 * torch.randn(128, 3)).requires_grad_(True), torch.randn(128, 3)

    def reference(a, b):
        z = torch.cat([a, b])
        sq = (z * z).sum(1)
        d2 = (sq[:, None] + sq[None, :] - 2.0 * z @ z.T).clamp_min(0.0)
        assert float((d2 * (-0.5 / 0.04)).detach().min()) < -104  # the floor bites here
        k = sum(torch.exp(d2 * (-0.5 / (h * h))) for h in DEFAULT_BANDWIDTHS)
        return k[:128, :128].mean() + k[128:, 128:].mean() - 2.0 * k[:128, 128:].mean()

    ref = reference(a, b)
    (g_ref,) = torch.autograd.grad(ref, a)
    val = mmd2(a, b)
    (g,) = torch.autograd.grad(val, a)
    assert torch.equal(val, ref) and torch.equal(g, g_ref)
