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


def limit_threads(n: int = 1) -> None:
    """Cap this process's thread pools at `n`: torch's, and OpenMP/BLAS ones (numpy's OpenBLAS, MKL) too.

    The environment variables only reach libraries loaded after this call; threadpoolctl also resizes the ones
    already loaded. That matters in a spawned worker: unpickling its first job imports numpy before any job
    code runs, and numpy's OpenBLAS would otherwise keep one busy-waiting thread per core (on a 2-core box with
    two workers, a third of each worker's CPU time went to that spinning in active_attacks' run).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(n)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=n)  # a plain call (not a context): the limits stay for the process's life


def init_worker() -> None:
    """Initializer for a pool of single-thread worker processes (also for schedulers built on
    `ProcessPoolExecutor` directly): Ctrl-C is left to the parent, and every thread pool is capped at one."""
    # Ctrl-C is the parent's to handle: it cancels pending jobs and terminates the workers. A worker that also
    # caught SIGINT would print a traceback per process and could die mid-write.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    limit_threads(1)


_init_worker = init_worker  # the name papers used before it was public


def _call(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    return fn(**kwargs)


def worker_probe(**kwargs: Any) -> dict[str, Any]:
    """Echo `kwargs` with the calling process's pid, torch thread count and largest BLAS/OpenMP pool size
    (for checking a worker setup)."""
    import torch
    from threadpoolctl import threadpool_info

    blas = [p["num_threads"] for p in threadpool_info() if p.get("user_api") in ("blas", "openmp")]
    return {"pid": os.getpid(), "threads": torch.get_num_threads(), "blas_threads": max(blas, default=1), **kwargs}


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
    pool = ProcessPoolExecutor(min(workers, len(jobs)), mp_context=ctx, initializer=init_worker)
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
