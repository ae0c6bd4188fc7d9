"""AdamWPower / GradPower / MuonPower: equivalences, a NumPy reference step, state, schedulers, errors."""

import copy

import numpy as np
import pytest
import torch
from torch import nn

from icml26.gradpower import (
    AdamWPower,
    CombinedOptimizer,
    GradPower,
    MuonPower,
    TinyLlama,
    build_muon_adamw,
    sign_power,
    split_muon_params,
)


def _model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(7, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3))


def _train(model, opt, steps=20, seed=123, grad_hook=None):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randn(32, 7, generator=g)
        y = torch.randn(32, 3, generator=g)
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        if grad_hook is not None:
            grad_hook(model)
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


HP = dict(lr=3e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)


@pytest.mark.parametrize("impl", [{"foreach": False}, {"foreach": True}, {"fused": True}])
def test_power_one_bit_identical_to_adamw(impl):
    ref = _train(m := _model(), torch.optim.AdamW(m.parameters(), **HP, **impl))
    got = _train(m := _model(), AdamWPower(m.parameters(), **HP, power=1.0, **impl))
    got2 = _train(m := _model(), GradPower(torch.optim.AdamW(m.parameters(), **HP, **impl), power=1.0))
    for a, b, c in zip(ref, got, got2):
        assert torch.equal(a, b) and torch.equal(a, c)


@pytest.mark.parametrize("impl", [{"foreach": False}, {"foreach": True}, {"fused": True}])
def test_power_equals_adamw_on_transformed_grads(impl):
    def transform(model):
        for p in model.parameters():
            p.grad.copy_(sign_power(p.grad, 1.2))

    ref = _train(m := _model(), torch.optim.AdamW(m.parameters(), **HP, **impl), grad_hook=transform)
    got = _train(m := _model(), AdamWPower(m.parameters(), **HP, power=1.2, **impl))
    wrapped = _train(m := _model(), GradPower(torch.optim.AdamW(m.parameters(), **HP, **impl), power=1.2))
    for a, b, c in zip(ref, got, wrapped):
        assert torch.equal(a, b) and torch.equal(a, c)
    plain = _train(m := _model(), torch.optim.AdamW(m.parameters(), **HP, **impl))
    assert not all(torch.equal(a, b) for a, b in zip(plain, got))  # the transform does something


def _numpy_adamw_step(theta, g, m, v, t, lr, b1, b2, eps, wd, p, peps=0.0):
    gt = np.sign(g) * (np.abs(g) + peps) ** p
    m = b1 * m + (1 - b1) * gt
    v = b2 * v + (1 - b2) * gt * gt
    mh, vh = m / (1 - b1 ** t), v / (1 - b2 ** t)
    theta = theta * (1 - lr * wd)
    return theta - lr * mh / (np.sqrt(vh) + eps), m, v


def test_matches_numpy_reference_with_group_powers():
    rng = np.random.default_rng(0)
    w0, b0 = rng.normal(size=(4, 5)), rng.normal(size=5)
    w = nn.Parameter(torch.tensor(w0))
    b = nn.Parameter(torch.tensor(b0))
    opt = AdamWPower([{"params": [w]}, {"params": [b], "power": 0.7, "power_eps": 1e-3}], lr=0.05,
                     betas=(0.8, 0.9), eps=1e-6, weight_decay=0.3, power=1.5)
    assert [g["power"] for g in opt.param_groups] == [1.5, 0.7]
    state = {"w": (w0, 0 * w0, 0 * w0), "b": (b0, 0 * b0, 0 * b0)}
    for t in (1, 2, 3):  # several steps: bias correction changes with t
        gw, gb = rng.normal(size=(4, 5)) * 10 ** rng.uniform(-4, 1, (4, 5)), rng.normal(size=5)
        w.grad, b.grad = torch.tensor(gw), torch.tensor(gb)
        opt.step()
        state["w"] = _numpy_adamw_step(*state["w"][:1], gw, *state["w"][1:], t, 0.05, 0.8, 0.9, 1e-6, 0.3, 1.5)
        state["b"] = _numpy_adamw_step(*state["b"][:1], gb, *state["b"][1:], t, 0.05, 0.8, 0.9, 1e-6, 0.3, 0.7,
                                       1e-3)
        np.testing.assert_allclose(w.detach().numpy(), state["w"][0], rtol=1e-6, atol=1e-12)
        np.testing.assert_allclose(b.detach().numpy(), state["b"][0], rtol=1e-6, atol=1e-12)
        np.testing.assert_allclose(opt.state[w]["exp_avg_sq"].numpy(), state["w"][2], rtol=1e-6)


def test_group_power_one_excludes_group():
    a, b = nn.Parameter(torch.ones(3)), nn.Parameter(torch.ones(3))
    opt = AdamWPower([{"params": [a], "power": 1.0}, {"params": [b]}], lr=0.1, power=2.0)
    a.grad, b.grad = torch.full((3,), 0.5), torch.full((3,), 0.5)
    opt.step()
    assert torch.equal(a.grad, torch.full((3,), 0.5))  # untouched
    assert torch.equal(b.grad, torch.full((3,), 0.25))  # transformed in place


def test_maximize_equals_transform_of_negated_grad():
    def run(maximize, sign):
        torch.manual_seed(0)
        w = nn.Parameter(torch.randn(6))
        opt = AdamWPower([w], lr=0.1, power=1.3, maximize=maximize)
        g = torch.Generator().manual_seed(1)
        for _ in range(5):
            w.grad = sign * torch.randn(6, generator=g)
            opt.step()
        return w.detach()

    assert torch.equal(run(True, -1.0), run(False, 1.0))


def test_state_dict_roundtrip_restores_power_and_moments():
    m = _model()
    opt = AdamWPower([{"params": list(m[0].parameters()), "power": 1.0}, {"params": list(m[2].parameters())},
                      {"params": list(m[4].parameters()), "power_eps": 1e-8}], lr=1e-2, power=1.2)
    _train(m, opt, steps=3)
    sd = copy.deepcopy(opt.state_dict())
    assert [g["power"] for g in sd["param_groups"]] == [1.0, 1.2, 1.2]
    assert [g["power_eps"] for g in sd["param_groups"]] == [0.0, 0.0, 1e-8]
    m2 = copy.deepcopy(m)
    opt2 = AdamWPower([{"params": list(m2[0].parameters())}, {"params": list(m2[2].parameters())},
                       {"params": list(m2[4].parameters())}], lr=1e-2, power=3.0)
    opt2.load_state_dict(sd)
    assert [g["power"] for g in opt2.param_groups] == [1.0, 1.2, 1.2]
    for p, q in zip(m.parameters(), m2.parameters()):
        assert torch.equal(opt.state[p]["exp_avg"], opt2.state[q]["exp_avg"])
        assert torch.equal(opt.state[p]["exp_avg_sq"], opt2.state[q]["exp_avg_sq"])
    a, b = _train(m, opt, steps=4, seed=9), _train(m2, opt2, steps=4, seed=9)  # resumed runs continue identically
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    # a plain AdamW checkpoint loads into AdamWPower and gets its default power
    plain = torch.optim.AdamW(_model().parameters(), lr=1e-2)
    opt3 = AdamWPower(_model().parameters(), lr=1e-2, power=1.2)
    opt3.load_state_dict(plain.state_dict())
    assert opt3.param_groups[0]["power"] == 1.2


def test_wrapper_state_dict_and_schedulers():
    m = _model()
    opt = GradPower(torch.optim.AdamW(m.parameters(), lr=1e-2), power=1.2)
    assert opt.param_groups is opt.base.param_groups and opt.param_groups[0]["power"] == 1.2
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 ** s)
    for _ in range(3):
        _train(m, opt, steps=1)
        sched.step()
    assert opt.base.param_groups[0]["lr"] == pytest.approx(1e-2 / 8)
    sd = copy.deepcopy(opt.state_dict())
    assert sd["param_groups"][0]["power"] == 1.2 and len(sd["state"]) == 6
    m2 = copy.deepcopy(m)
    opt2 = GradPower(torch.optim.AdamW(m2.parameters(), lr=1e-2), power=2.0)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["power"] == 1.2 and opt2.param_groups[0]["lr"] == pytest.approx(1e-2 / 8)
    # OneCycleLR needs betas in defaults and mutates them per group
    opt3 = GradPower(torch.optim.AdamW(_model().parameters(), lr=1e-2), power=1.2)
    one = torch.optim.lr_scheduler.OneCycleLR(opt3, max_lr=0.1, total_steps=10)
    for _ in range(5):
        opt3.step()
        one.step()
    assert opt3.base.param_groups[0]["lr"] == pytest.approx(one.get_last_lr()[0])
    assert opt3.base.param_groups[0]["betas"][0] < 0.95  # momentum cycled through the wrapper


def test_grad_scaler_unscales_before_transform():
    def run(use_scaler, fused):
        m = _model()
        opt = AdamWPower(m.parameters(), lr=1e-2, power=1.2, fused=fused)
        scaler = torch.amp.GradScaler("cpu", init_scale=1024.0) if use_scaler else None
        g = torch.Generator().manual_seed(0)
        for _ in range(3):
            opt.zero_grad()
            loss = m(torch.randn(8, 7, generator=g)).square().mean()
            if scaler is None:
                loss.backward()
                opt.step()
            else:
                scaler.scale(loss).backward()
                scaler.unscale_(opt)
                scaler.step(opt)
                scaler.update()
        return [p.detach() for p in m.parameters()]

    for fused in (False, True):
        assert all(torch.equal(a, b) for a, b in zip(run(False, fused), run(True, fused)))
    # a fused AdamWPower stepped on still-scaled gradients refuses instead of transforming them
    m = _model()
    opt = AdamWPower(m.parameters(), lr=1e-2, power=1.2, fused=True)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    scaler.scale(m(torch.randn(4, 7)).square().mean()).backward()
    with pytest.raises(RuntimeError, match="unscale_"):
        scaler.step(opt)


def test_muon_wrapper_equivalences():
    def run(make, hook=None):
        torch.manual_seed(0)
        ws = [nn.Parameter(torch.randn(8, 5)), nn.Parameter(torch.randn(5, 5))]
        opt = make(ws)
        g = torch.Generator().manual_seed(3)
        for _ in range(4):
            for w in ws:
                w.grad = torch.randn(w.shape, generator=g)
            if hook:
                for w in ws:
                    w.grad.copy_(sign_power(w.grad, 1.2))
            opt.step()
        return [w.detach() for w in ws]

    muon = run(lambda ws: torch.optim.Muon(ws, lr=0.02))
    assert all(torch.equal(a, b) for a, b in zip(muon, run(lambda ws: GradPower(torch.optim.Muon(ws, lr=0.02), 1.0))))
    assert all(torch.equal(a, b) for a, b in zip(muon, run(lambda ws: MuonPower(ws, power=1.0, lr=0.02))))
    pre = run(lambda ws: torch.optim.Muon(ws, lr=0.02), hook=True)
    got = run(lambda ws: MuonPower(ws, power=1.2, lr=0.02))
    assert all(torch.equal(a, b) for a, b in zip(pre, got))
    assert not all(torch.equal(a, b) for a, b in zip(muon, got))


def test_build_muon_adamw_split_and_training():
    model = TinyLlama(256, 16, 1, 2, 16, d_ff=32)
    muon, adam = split_muon_params(model)
    ids = {id(p) for p in adam}
    assert id(model.tok_emb.weight) in ids and id(model.lm_head.weight) in ids
    assert all(p.ndim == 2 for p in muon) and len(muon) == 7  # q k v o up gate down
    assert len(muon) + len(adam) == len(list(model.parameters()))
    opt = build_muon_adamw(model, lr_muon=0.02, lr_adamw=1e-3, power=1.2)
    assert isinstance(opt.base, CombinedOptimizer) and len(opt.param_groups) == 2
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5)
    x = torch.randint(0, 256, (4, 17))
    before = [p.detach().clone() for p in model.parameters()]
    loss = nn.functional.cross_entropy(model(x[:, :-1]).reshape(-1, 256), x[:, 1:].reshape(-1))
    loss.backward()
    opt.step()
    sched.step()
    assert all(not torch.equal(a, p) for a, p in zip(before, model.parameters()))
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([0.01, 5e-4])
    sd = opt.state_dict()
    assert len(sd["optimizers"]) == 2 and sd["optimizers"][0]["param_groups"][0]["power"] == 1.2
    opt.load_state_dict(copy.deepcopy(sd))
    with pytest.raises(TypeError, match="ambiguous"):
        opt.add_param_group({"params": [nn.Parameter(torch.ones(2))]})


def test_errors_name_the_argument():
    params = _model().parameters
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="power must be a finite number > 0"):
            AdamWPower(params(), power=bad)
        with pytest.raises(ValueError, match="power must be"):
            GradPower(torch.optim.SGD(params(), lr=0.1), power=bad)
    with pytest.raises(ValueError, match="power_eps must be a finite number >= 0"):
        AdamWPower(params(), power_eps=-1e-8)
    with pytest.raises(ValueError, match=r"param_group\['power'\]"):
        AdamWPower([{"params": list(params()), "power": -2.0}])
    with pytest.raises(TypeError, match="base_optimizer must be a torch.optim.Optimizer"):
        GradPower(params())
    with pytest.raises(TypeError, match="applied twice"):
        GradPower(AdamWPower(params()))
    emb = nn.Embedding(10, 4, sparse=True)
    for opt in (AdamWPower(emb.parameters()), GradPower(torch.optim.SGD(emb.parameters(), lr=0.1))):
        emb(torch.tensor([1, 2])).sum().backward()
        with pytest.raises(RuntimeError, match="sparse"):
            opt.step()
        emb.zero_grad()
