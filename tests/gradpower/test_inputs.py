"""Bad input to gradpower's public API gets a ValueError/TypeError naming the argument (issue 14); the docs example
runs as written; the `_foreach_` path of the transform is reached and bit-identical."""

from __future__ import annotations

from unittest import mock

import pytest
import torch

from icml26.gradpower import AdamWPower, TinyLlama, foreach_sign_power_, pretrain, sign_power, wsd


def _stream(n=3000, vocab=64, seed=0):
    return torch.randint(0, vocab, (n,), generator=torch.Generator().manual_seed(seed))


def _model():
    torch.manual_seed(0)
    return TinyLlama(64, 16, 1, 2, 16, d_ff=32)


def _factory(m):
    return AdamWPower(m.parameters(), lr=1e-2)


def test_pretrain_refuses_token_ids_outside_the_vocabulary():
    with pytest.raises(ValueError, match=r"train_tokens holds token ids in \[0, 99\], outside the model's vocab"):
        pretrain(_model(), _factory, _stream(vocab=100), steps=2, batch_size=4, ctx=16)
    with pytest.raises(ValueError, match="train_tokens holds token ids"):
        pretrain(_model(), _factory, _stream() - 1, steps=2, batch_size=4, ctx=16)
    with pytest.raises(ValueError, match="val_windows holds token ids"):
        pretrain(_model(), _factory, _stream(), steps=2, batch_size=4, ctx=16,
                 val_windows=torch.full((2, 17), 64), eval_every=1)
    with pytest.raises(TypeError, match="integer token ids"):
        pretrain(_model(), _factory, _stream().float(), steps=2, batch_size=4, ctx=16)
    # a list is read like the tensor: same batches, same result
    a = pretrain(_model(), _factory, _stream(), steps=3, batch_size=4, ctx=16,
                 generator=torch.Generator().manual_seed(1))
    b = pretrain(_model(), _factory, _stream().tolist(), steps=3, batch_size=4, ctx=16,
                 generator=torch.Generator().manual_seed(1))
    assert a.train_loss == b.train_loss


def test_pretrain_refuses_an_optimizer_where_a_factory_goes():
    m = _model()
    with pytest.raises(TypeError, match=r"optimizer_factory must be a function building the optimizer, got an "
                                        r"already built AdamWPower; pass e.g. `lambda m: AdamWPower"):
        pretrain(m, AdamWPower(m.parameters()), _stream(), steps=2, batch_size=4, ctx=16)
    opt = AdamWPower(m.parameters())
    with pytest.raises(TypeError, match="scheduler_factory must be a function building the scheduler"):
        pretrain(m, _factory, _stream(), steps=2, batch_size=4, ctx=16, scheduler_factory=wsd(opt, 2))
    with pytest.raises(ValueError, match="none of the model's parameters"):
        pretrain(m, lambda _: AdamWPower(_model().parameters()), _stream(), steps=2, batch_size=4, ctx=16)
    with pytest.raises(TypeError, match="optimizer_factory must return"):
        pretrain(m, lambda _: "adamw", _stream(), steps=2, batch_size=4, ctx=16)


@pytest.mark.parametrize(("kw", "exc", "name"), [
    ({"steps": 2.5}, ValueError, "steps"), ({"steps": 0}, ValueError, "steps"), ({"batch_size": "4"}, TypeError,
                                                                                   "batch_size"),
    ({"ctx": 5000}, ValueError, "ctx"), ({"grad_accum": -1}, ValueError, "grad_accum"),
    ({"clip": float("nan")}, ValueError, "clip"), ({"eval_every": 1.5}, ValueError, "eval_every"),
    ({"on_eval": 3}, TypeError, "on_eval"),
])
def test_pretrain_sizes_are_integers_never_truncated(kw, exc, name):
    args = dict(steps=2, batch_size=4, ctx=16) | kw
    with pytest.raises(exc, match=name):
        pretrain(_model(), _factory, _stream(), **args)


def test_foreach_kernel_path_is_reached_and_bit_identical():
    g = torch.Generator().manual_seed(0)
    ts = [torch.randn(1000, generator=g) * 10.0 ** e for e in range(-6, 3)] + [torch.randn(7, dtype=torch.float64),
                                                                              torch.randn(5).bfloat16()]
    for p, eps in ((1.2, 0.0), (1.2, 1e-8), (0.7, 0.0)):
        ref = [sign_power(t, p, eps) for t in ts]
        got = [t.clone() for t in ts]
        with mock.patch.object(torch, "_foreach_pow_", wraps=torch._foreach_pow_) as spy:
            foreach_sign_power_(got, p, eps, use_foreach=True)
        assert spy.call_count == 1 and len(spy.call_args[0][0]) == len(ts) - 1  # every fp32/fp64 tensor, not bf16
        assert all(a.dtype == b.dtype and torch.equal(a, b) for a, b in zip(got, ref))
        auto = [t.clone() for t in ts]
        with mock.patch.object(torch, "_foreach_pow_", wraps=torch._foreach_pow_) as spy:
            foreach_sign_power_(auto, p, eps)  # CPU tensors: the chunked in-place path
        assert spy.call_count == 0 and all(torch.equal(a, b) for a, b in zip(auto, ref))
    with pytest.raises(TypeError, match="use_foreach"):
        foreach_sign_power_(ts, 1.2, use_foreach="yes")
    with pytest.raises(TypeError, match="tensors must be a list"):
        foreach_sign_power_(ts[0], 1.2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU (the auto foreach path runs on accelerators)")
def test_foreach_path_on_gpu_is_bit_identical():  # pragma: no cover - no GPU in CI
    ts = [torch.randn(4096, device="cuda") * 10.0 ** e for e in range(-6, 3)]
    ref = [sign_power(t, 1.2) for t in ts]
    foreach_sign_power_(ts, 1.2)
    assert all(torch.equal(a, b) for a, b in zip(ts, ref))


def test_docs(docs_example):
    ns = docs_example("gradpower")
    names = {n for n, _ in ns["model"].named_parameters()}
    rest = {id(p) for p in ns["rest"]}
    assert {"norm.weight", "lm_head.weight"} <= names  # the per-group example trains the final norm and the head
    assert all(id(p) in rest for n, p in ns["model"].named_parameters() if n in ("norm.weight", "lm_head.weight"))
    assert len(ns["res"].val_loss) == 2
