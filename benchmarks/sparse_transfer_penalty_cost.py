"""Cost of the randomized masked finite-difference Jacobian penalty vs the exact one, per training step, as d grows.

For d in (3, 32, 256): an MLP translator d -> max(64, d) -> max(64, d) -> d (LeakyReLU 0.2), a batch of 128, and
one step = penalty forward + backward to the parameters. fd uses the reproduction's setting (S = 2 probes,
k = max(1, round(rho d)) with rho = 0.34 at d = 3 and rho = 0.1 otherwise, as in the official image config); the
exact penalty is ||J||_1 / d_out, d Jacobian-vector products of the batch: through the written-out forward-mode
path that plain Linear/LeakyReLU MLPs take (`exact_ms`, bit-identical) and through torch.func jvp + vmap, the
path of any other network (`exact_func_ms`). Median wall time over repeats, one torch thread. Run under the shared lock:

    flock /tmp/icml26_heavy.lock .venv/bin/python benchmarks/sparse_transfer_penalty_cost.py
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import torch

import icml26.sparse_transfer.jacobian as jac_mod
from icml26.sparse_transfer import JacobianSparsityPenalty, mlp


def time_func_path(pen: JacobianSparsityPenalty, net: torch.nn.Module, x: torch.Tensor, repeats: int) -> float:
    """`time_step` with the plain-MLP fast path switched off (the torch.func jvp + vmap path)."""
    fast = jac_mod._is_plain_mlp
    jac_mod._is_plain_mlp = lambda f, x: False
    try:
        return time_step(pen, net, x, repeats)
    finally:
        jac_mod._is_plain_mlp = fast


def time_step(pen: JacobianSparsityPenalty, net: torch.nn.Module, x: torch.Tensor, repeats: int) -> float:
    for _ in range(2):  # warm-up
        net.zero_grad()
        pen(net, x).backward()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        net.zero_grad()
        pen(net, x).backward()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main(dims=(3, 32, 256), batch: int = 128) -> list[dict]:
    torch.set_num_threads(1)
    rows = []
    for d in dims:
        torch.manual_seed(0)
        h = max(64, d)
        net = mlp(d, d, (h, h))
        x = torch.randn(batch, d)
        rho = 0.34 if d == 3 else 0.1
        fd = JacobianSparsityPenalty("fd", n_probes=2, probe_frac=rho, sigma=0.01, seed=0)
        ex = JacobianSparsityPenalty("exact")
        reps = 20 if d < 256 else 5
        t_fd, t_ex = time_step(fd, net, x, reps), time_step(ex, net, x, reps)
        t_func = time_func_path(ex, net, x, reps)
        rows.append({"d": d, "hidden": h, "fd_ms": 1e3 * t_fd, "exact_ms": 1e3 * t_ex, "exact_func_ms": 1e3 * t_func,
                     "exact_over_fd": t_ex / t_fd})
        print(f"d = {d:4d} (hidden {h}): fd {1e3 * t_fd:8.2f} ms  exact {1e3 * t_ex:8.2f} ms  "
              f"exact via torch.func {1e3 * t_func:8.2f} ms  exact / fd = {t_ex / t_fd:6.1f}x", flush=True)
    return rows


if __name__ == "__main__":
    out = main()
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(out, f, indent=2)
