"""FLOPs and wall time per forward of MeshTok vs Uniform-fine (and Uniform-coarse), as ratios (issue 19).

    flock /tmp/icml26_heavy.lock .venv/bin/python benchmarks/meshtok_forward.py [--paper-flops]

CPU scale: the small reproduction's model (64^2, patch 8, D 64, 3 layers, context 4), batch 8 windows, single
thread, no grad; wall time = median of 7 forwards after 2 warm-ups. With --paper-flops also the FLOPs of one
paper-scale window (128^2, patch 16, D 512, 8 layers, SwiGLU 1280, context 10; counted, not timed).
FLOPs come from `MeshTok.flops` (FlopCounterMode with attention as explicit matmuls).
"""

import json
import statistics
import sys
import time

import torch

from icml26.meshtok import make_arm


def bench(arms, cfg, shape, timed=True):
    out = {}
    for arm in arms:
        torch.manual_seed(0)
        m = make_arm(arm, shape[-1], cfg["grid"], cfg["patch"], 0.25, **cfg["model"]).eval()
        f = m.flops((1, *shape[1:]))
        row = {"tokens_per_frame": m.token_count(), "gflops_window": f["total"] / 1e9,
               "gflops_attention": f["attention"] / 1e9}
        if timed:
            x = torch.randn(*shape)
            with torch.no_grad():
                for _ in range(2):
                    m(x)
                ts = []
                for _ in range(7):
                    t0 = time.perf_counter()
                    m(x)
                    ts.append(time.perf_counter() - t0)
            row["ms_per_forward_batch"] = 1e3 * statistics.median(ts)
        out[arm] = row
    for k in ("gflops_window", "ms_per_forward_batch"):
        if k in out["fine"]:
            for arm in arms:
                out[arm][f"{k}_ratio_vs_fine"] = out[arm][k] / out["fine"][k]
    return out


if __name__ == "__main__":
    torch.set_num_threads(1)
    small = {"grid": 64, "patch": 8, "model": {"dim": 64, "depth": 3, "heads": 4, "ffn": 128, "dec_width": 16}}
    res = {"cpu_scale": bench(["meshtok", "coarse", "fine"], small, (8, 4, 64, 64, 1))}
    if "--paper-flops" in sys.argv:
        paper = {"grid": 128, "patch": 16, "model": {"dim": 512, "depth": 8, "heads": 8, "ffn": 1280, "mlp": "swiglu",
                                                     "dec_width": 32, "residual": False}}
        res["paper_scale_flops"] = bench(["meshtok", "coarse", "fine"], paper, (1, 10, 128, 128, 1), timed=False)
    print(json.dumps(res, indent=1))
