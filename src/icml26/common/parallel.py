"""Run independent arms/seeds as parallel single-thread processes.

On a 2-core machine, two single-thread torch processes beat one multi-threaded process by a wide margin
(multi-threaded torch on a busy box can be many times slower).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from collections.abc import Callable, Sequence
from typing import Any

from tqdm.auto import tqdm


def _init_worker() -> None:
    # Ctrl-C is the parent's to handle: it cancels pending jobs and terminates the workers. A worker that also
    # caught SIGINT would print a traceback per process and could die mid-write.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # torch (and BLAS) read these when first imported, so a worker that never imports torch pays nothing
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = "1"
    if "torch" in sys.modules:  # pragma: no cover - spawn starts clean; kept for other start methods
        sys.modules["torch"].set_num_threads(1)


def _call(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    return fn(**kwargs)


def worker_probe(**kwargs: Any) -> dict[str, Any]:
    """Echo `kwargs` with the calling process's pid and torch thread count (for checking a worker setup)."""
    import torch

    return {"pid": os.getpid(), "threads": torch.get_num_threads(), **kwargs}


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
    # spawn: fork after torch has started threads can deadlock. A worker that dies raises BrokenProcessPool
    # here instead of hanging the run.
    ctx = mp.get_context("spawn")
    results: list[Any] = [None] * len(jobs)
    pool = ProcessPoolExecutor(min(workers, len(jobs)), mp_context=ctx, initializer=_init_worker)
    try:
        futures = {pool.submit(_call, fn, job): i for i, job in enumerate(jobs)}
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
            bar.update()
    except BaseException:
        # Ctrl-C (KeyboardInterrupt) or a failed job: cancel what has not started and stop the workers now,
        # instead of the executor's default of waiting for every queued job to finish.
        _terminate(pool)
        raise
    else:
        pool.shutdown(wait=True)
    finally:
        bar.close()
    return results


def _terminate(pool: ProcessPoolExecutor) -> None:
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=2)
        if p.is_alive():  # pragma: no cover - a worker ignoring SIGTERM
            p.kill()
