"""Property tests (hypothesis): gradpower's public entry points, given generated bad and edge-case input, either
return a valid answer or raise ValueError/TypeError naming the argument; never NaN out of finite input."""

from __future__ import annotations

import math
import re

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icml26.gradpower import AdamWPower, TinyLlama, normalized_drift, pretrain, sign_power

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NUMBER = st.one_of(st.integers(-3, 5), st.floats(-3, 5), st.sampled_from([float("nan"), float("inf"), "1.2", True]),
                   st.none())


def _raises_named(fn, names):
    try:
        return fn(), None
    except (ValueError, TypeError) as e:
        assert any(re.search(rf"\b{re.escape(n)}\b", str(e)) for n in names), \
            f"{type(e).__name__} does not name one of {names}: {e}"
        return None, e


@SETTINGS
@given(p=NUMBER, eps=NUMBER, n=st.integers(0, 6), dtype=st.sampled_from([torch.float32, torch.float64, torch.bfloat16,
                                                                          torch.int64]),
       poison=st.sampled_from([None, "nan", "inf"]))
def test_sign_power(p, eps, n, dtype, poison):
    t = torch.linspace(-3, 3, n).to(dtype)
    if poison and dtype.is_floating_point and n:
        t[0] = float(poison)
    eps = 0.0 if eps is None else eps
    out, err = _raises_named(lambda: sign_power(t, p, eps), ("p", "eps", "t"))
    if err is None:
        assert out.shape == t.shape and out.dtype == t.dtype
        finite = torch.isfinite(t)
        assert bool(torch.isfinite(out[finite]).all())  # finite in, finite out
        assert torch.equal(torch.sign(out[finite]), torch.sign(t[finite]))  # odd, keeps the sign pattern


@SETTINGS
@given(lr=NUMBER, power=NUMBER, power_eps=NUMBER, group_power=NUMBER)
def test_adamwpower(lr, power, power_eps, group_power):
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 2)
    kw = {k: v for k, v in (("lr", lr), ("power", power), ("power_eps", power_eps)) if v is not None}
    groups = [{"params": [lin.weight]}, {"params": [lin.bias], **({} if group_power is None else
                                                                    {"power": group_power})}]

    def step():
        opt = AdamWPower(groups, **kw)
        lin(torch.ones(4, 3)).pow(2).sum().backward()
        opt.step()
        return opt

    opt, err = _raises_named(step, ("lr", "Learning rate", "power", "power_eps", "param_group['power']"))
    if err is None:
        assert all(bool(torch.isfinite(p).all()) for p in lin.parameters())
        assert all(g["power"] > 0 for g in opt.param_groups)


@SETTINGS
@given(steps=NUMBER, batch_size=NUMBER, ctx=st.one_of(st.integers(-1, 40), st.just(7.5)),
       vocab_shift=st.sampled_from([0, 1, -1]), as_list=st.booleans())
def test_pretrain(steps, batch_size, ctx, vocab_shift, as_list):
    torch.manual_seed(0)
    model = TinyLlama(32, 8, 1, 2, 16, d_ff=16)
    tokens = torch.randint(0, 32, (300,), generator=torch.Generator().manual_seed(0))
    if vocab_shift:
        tokens[5] = 31 + vocab_shift if vocab_shift > 0 else -1
    data = tokens.tolist() if as_list else tokens
    res, err = _raises_named(lambda: pretrain(model, lambda m: AdamWPower(m.parameters(), lr=1e-2), data,
                                              steps=steps, batch_size=batch_size, ctx=ctx),
                             ("steps", "batch_size", "ctx", "train_tokens"))
    if err is None:
        assert vocab_shift == 0 and len(res.train_loss) == int(steps) and all(map(math.isfinite, res.train_loss))


@SETTINGS
@given(mu=NUMBER, sigma=NUMBER, p=NUMBER, n=st.one_of(st.none(), st.integers(-1, 2000), st.just(10.5)))
def test_normalized_drift(mu, sigma, p, n):
    r, err = _raises_named(lambda: normalized_drift(mu, sigma, p, n_samples=n), ("mu", "sigma", "p", "n_samples"))
    if err is None:
        assert -1.0 - 1e-12 <= r <= 1.0 + 1e-12 and math.isfinite(r)
