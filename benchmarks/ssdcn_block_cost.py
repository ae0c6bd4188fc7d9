"""SSDCB vs full self-attention: FLOPs and single-thread wall time of one block at 64x64 and 128x128 (issue 20's
performance figure). Both blocks have the same width and the same local parts (local conv branch, gated DW-conv
FFN); they differ only in the global mixer. FLOPs: FlopCounterMode on the meta device (2 per multiply-add).
Wall: median of `--reps` forwards (batch 1, no grad, torch threads = 1); attention runs in query chunks of 2048
(same FLOPs, bounded memory: the 16384 x 16384 score matrix per head would need 1 GiB).

    flock /tmp/icml26-cpu.lock .venv/bin/python benchmarks/ssdcn_block_cost.py
"""

import argparse
import json
import statistics
import time

import torch

from icml26.ssdcn import SSDCB, TransformerBlock
from icml26.ssdcn.claims import block_flops


def wall(block, dim: int, side: int, reps: int) -> float:
    x = torch.rand(1, dim, side, side, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        block(x)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            block(x)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dim", type=int, default=40)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--sides", type=int, nargs="+", default=[64, 128])
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    ssdcb = SSDCB(args.dim).eval()
    attn = TransformerBlock(args.dim, args.heads, chunk=2048).eval()
    fs, fa = block_flops(ssdcb, args.dim, args.sides), block_flops(attn, args.dim, args.sides)
    rows = []
    for s in args.sides:
        ws, wa = wall(ssdcb, args.dim, s, args.reps), wall(attn, args.dim, s, args.reps)
        rows.append({"side": s, "pixels": s * s, "ssdcb_gflops": fs[s] / 1e9, "attention_gflops": fa[s] / 1e9,
                     "flops_ratio_attn_over_ssdcb": fa[s] / fs[s], "ssdcb_wall_s": ws, "attention_wall_s": wa,
                     "wall_ratio_attn_over_ssdcb": wa / ws})
        print(f"{s}x{s}: FLOPs {fs[s] / 1e9:.3f} vs {fa[s] / 1e9:.3f} G (x{fa[s] / fs[s]:.1f}); wall {ws:.3f} vs "
              f"{wa:.3f} s (x{wa / ws:.1f})", flush=True)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
