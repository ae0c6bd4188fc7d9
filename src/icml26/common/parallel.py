"""Run independent arms/seeds as parallel single-thread processes.

On a 2-core machine, two single-thread torch processes beat one multi-threaded process by a wide margin
(multi-threaded torch on a busy box can be many times slower).
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable, Sequence
from typing import Any

from tqdm.auto import tqdm


def _init_worker() -> None:
    import torch

    torch.set_num_threads(1)
    os.environ["OMP_NUM_THREADS"] = "1"


def _call(args: tuple[Callable[..., Any], dict[str, Any]]) -> Any:
    fn, kwargs = args
    return fn(**kwargs)


def default_workers() -> int:
    """Worker count: `$ICML26_WORKERS` if set, else the number of CPUs available to this process."""
    env = os.environ.get("ICML26_WORKERS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def run_parallel(
    fn: Callable[..., Any],
    jobs: Sequence[dict[str, Any]],
    *,
    workers: int | None = None,
    desc: str | None = None,
) -> list[Any]:
    """Call `fn(**job)` for every job, in `workers` single-thread processes; results keep the jobs' order.

    `fn` must be a module-level function (picklable). With `workers == 1` (or one job) everything runs in
    this process, still single-threaded for torch, which keeps tests and debugging simple.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    jobs = list(jobs)
    workers = default_workers() if workers is None else int(workers)
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    bar = tqdm(total=len(jobs), desc=desc, disable=desc is None, leave=False)
    if workers == 1 or len(jobs) <= 1:
        import torch

        old = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            out = []
            for job in jobs:
                out.append(fn(**job))
                bar.update()
            return out
        finally:
            torch.set_num_threads(old)
            bar.close()
    ctx = mp.get_context("spawn")  # fork after torch has started threads can deadlock
    results: list[Any] = [None] * len(jobs)
    with ctx.Pool(min(workers, len(jobs)), initializer=_init_worker) as pool:
        it = pool.imap(_call, [(fn, job) for job in jobs])
        for i, r in enumerate(it):
            results[i] = r
            bar.update()
    bar.close()
    return results
