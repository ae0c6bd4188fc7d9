"""Property tests (hypothesis): PoPE's public entry points, given generated bad and edge-case input, either return a
valid answer (right shape, finite for finite input) or raise ValueError/TypeError naming the argument."""

from __future__ import annotations

import math
import re

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icml26.pope import PoPE, RoPE, TinyDecoder, attention, length_extrapolation_eval

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NUMBERS = st.one_of(st.integers(-3, 12), st.floats(-3, 12), st.sampled_from([float("nan"), float("inf"), "4", True]),
                    st.none())


def _raises_named(fn, names: tuple[str, ...]):
    """Call fn(); return its value, or check that its ValueError/TypeError names one of `names`."""
    try:
        return fn(), None
    except (ValueError, TypeError) as e:
        assert any(re.search(rf"\b{re.escape(n)}\b", str(e)) for n in names), \
            f"{type(e).__name__} does not name one of {names}: {e}"
        return None, e


@SETTINGS
@given(head_dim=NUMBERS, n_heads=NUMBERS, base=NUMBERS, rotate_dim=NUMBERS)
def test_pope_constructor(head_dim, n_heads, base, rotate_dim):
    base = 10000.0 if base is None else base
    mod, err = _raises_named(lambda: PoPE(head_dim, n_heads, base=base, rotate_dim=rotate_dim),
                             ("head_dim", "n_heads", "base", "rotate_dim"))
    if err is None:
        assert isinstance(head_dim, (int, float)) and not isinstance(head_dim, bool) and float(head_dim).is_integer()
        assert mod.delta.shape == (mod.n_heads, mod.rotate_dim) and 1 <= mod.rotate_dim <= mod.head_dim
        assert base > 0 and math.isfinite(base)


SHAPES = st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(0, 4), st.integers(0, 5))


@SETTINGS
@given(qs=SHAPES, kv_heads=st.integers(0, 3), kv_len=st.integers(0, 4), dtype=st.sampled_from(
    [torch.float32, torch.float64, torch.int64, torch.bool]), poison=st.sampled_from([None, "nan", "inf"]),
    kind=st.sampled_from(["pope", "rope", "string", "class", "none"]), causal=st.sampled_from([True, False, 1]))
def test_attention(qs, kv_heads, kv_len, dtype, poison, kind, causal):
    B, H, T, d = qs
    g = torch.Generator().manual_seed(0)
    q = torch.randn(B, H, T, d, generator=g).to(dtype)
    k = torch.randn(B, kv_heads, kv_len, d, generator=g).to(dtype)
    v = torch.randn(B, kv_heads, kv_len, d, generator=g).to(dtype)
    if poison and dtype.is_floating_point and k.numel():
        k.view(-1)[0] = float(poison)
    enc = {"pope": lambda: PoPE(max(d, 1), max(H, 1)), "rope": lambda: RoPE(2 * max(d // 2, 1)),
           "string": lambda: "pope", "class": lambda: PoPE, "none": lambda: None}[kind]()
    out, err = _raises_named(lambda: attention(q, k, v, enc, causal=causal),
                             ("pope", "q", "k", "v", "causal", "dtype", "heads", "rotate_dim", "delta"))
    if err is None:
        assert out.shape == (B, H, T, d) and dtype.is_floating_point and poison is None
        assert bool(torch.isfinite(out).all())  # never NaN out of finite input


@SETTINGS
@given(lengths=st.lists(st.one_of(st.integers(-2, 40), st.floats(-2, 40), st.just(float("nan")), st.just("16")),
                        max_size=3),
       n_windows=NUMBERS, shift=st.sampled_from([0, -300, 300]), as_list=st.booleans())
def test_length_extrapolation_eval(lengths, n_windows, shift, as_list):
    torch.manual_seed(0)
    model = TinyDecoder(256, 16, 1, 2, 16, "pope").eval()
    data = torch.randint(0, 256, (400,))
    data[7] += shift  # -1 or 300: one token outside the vocabulary
    data = data.tolist() if as_list else data
    nw = 2 if n_windows is None else n_windows
    out, err = _raises_named(lambda: length_extrapolation_eval(model, data, lengths, n_windows=nw),
                             ("lengths", "n_windows", "data"))
    if err is None:
        assert shift == 0 and lengths and all(float(t).is_integer() for t in lengths)
        assert set(out) == {int(t) for t in lengths} and all(math.isfinite(x) for x in out.values())
