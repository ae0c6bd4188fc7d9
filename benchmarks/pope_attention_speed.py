"""Forward+backward time of PoPE attention vs RoPE attention, both through F.scaled_dot_product_attention.

    python benchmarks/pope_attention_speed.py            # T = 1024, d = 64, B = 1, H = 8, CPU single thread
    python benchmarks/pope_attention_speed.py --device cuda --batch 8 --dtype bfloat16

Each timed call: encode q/k (PoPE: softplus + cos/sin to width 2d; RoPE: rotation), causal SDPA, backward into
q, k, v (and PoPE's delta). Arms are interleaved and the median over repeats is reported, plus
- "pope_unpadded_v": PoPE without zero-padding v to 2d (SDPA then falls back to its unfused math kernel);
- "sdpa_2d" / "sdpa_d": bare SDPA fwd+bwd with q/k/v width 2d (v zero-padded, output sliced) vs d - the cost of the
  doubled width alone, without the encoding (a fused in-kernel PoPE, as in the paper, avoids it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from icml26.common.lm import sdpa
from icml26.pope import PoPE, RoPE, attention


def _time(fn, device: str) -> float:
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def main() -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--T", type=int, default=1024)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    dtype = getattr(torch, a.dtype)
    g = torch.Generator().manual_seed(0)
    shape = (a.batch, a.heads, a.T, a.d)
    q, k, v = (torch.randn(*shape, generator=g).to(a.device, dtype).requires_grad_() for _ in range(3))
    pope, rope = PoPE(a.d, a.heads).to(a.device), RoPE(a.d, a.heads).to(a.device)

    def step(enc, pad=True):
        def fn():
            out = attention(q, k, v, enc, causal=True, pad_values=pad)
            out.sum().backward()
            for t in (q, k, v):
                t.grad = None
        return fn

    q2 = torch.randn(a.batch, a.heads, a.T, 2 * a.d, generator=g).to(a.device, dtype).requires_grad_()
    k2 = torch.randn(a.batch, a.heads, a.T, 2 * a.d, generator=g).to(a.device, dtype).requires_grad_()

    def bare(qq, kk):
        def fn():
            sdpa(qq, kk, v, is_causal=True, scale=a.d ** -0.5).sum().backward()  # v zero-padded to q/k's width
        return fn

    arms = {"pope": step(pope), "rope": step(rope), "pope_unpadded_v": step(pope, pad=False),
            "sdpa_2d": bare(q2, k2), "sdpa_d": bare(q, k)}
    for fn in arms.values():
        for _ in range(a.warmup):
            fn()
    times: dict[str, list[float]] = {n: [] for n in arms}
    for _ in range(a.repeats):
        for n, fn in arms.items():
            times[n].append(_time(fn, a.device))
    med = {n: statistics.median(t) for n, t in times.items()}
    res = {"config": vars(a), "torch": torch.__version__, "median_s": med,
           "pope_over_rope": med["pope"] / med["rope"],
           "pope_unpadded_v_over_rope": med["pope_unpadded_v"] / med["rope"],
           "sdpa_2d_over_d": med["sdpa_2d"] / med["sdpa_d"]}
    print(json.dumps(res, indent=2))
    return res


if __name__ == "__main__":
    main()
