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
from collections.abc import Callable, Hashable, Mapping, Sequence
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


def run_graph(
    fn: Callable[..., Any],
    jobs: Mapping[Hashable, dict[str, Any] | Callable[[dict[Hashable, Any]], dict[str, Any]]],
    deps: Mapping[Hashable, Sequence[Hashable]] | None = None,
    *,
    workers: int | None = None,
    priority: Callable[[Hashable], Any] | None = None,
    desc: str | None = None,
    schedule: list[dict[str, Any]] | None = None,
) -> dict[Hashable, Any]:
    """Run jobs with dependencies on one pool of single-thread worker processes; each starts once its inputs exist.

    Args:
        fn: module-level function called as ``fn(**kwargs)`` for every job.
        jobs: key -> kwargs, or key -> ``make(inputs) -> kwargs`` where ``inputs`` maps each dependency's key to
            its result (so a job can take what an earlier job produced). Keys are any hashable.
        deps: key -> keys it waits on (default: none). Unknown keys and cycles raise ValueError before any job
            runs.
        workers: worker processes (default `default_workers()`); 1 runs everything in this process.
        priority: sort key among the ready jobs (lowest first); default the order of `jobs`.
        desc: progress-bar label (no bar when None).
        schedule: if a list is given, one {"job", "start_s", "end_s"} record per job is appended to it.

    Returns key -> result. A free worker takes the best ready job at once (no barrier between stages); Ctrl-C or a
    failed job cancels what has not started and terminates the workers, as `run_parallel` does.
    """
    import time

    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if not isinstance(jobs, Mapping):
        raise TypeError(f"jobs must be a mapping key -> kwargs, got {type(jobs).__name__}")
    stray = [k for k in (deps or {}) if k not in jobs]
    if stray:
        raise ValueError(f"deps names job(s) that are not in jobs: {stray!r}")
    deps = {k: list((deps or {}).get(k, ())) for k in jobs}
    for k, ds in deps.items():
        bad = [d for d in ds if d not in jobs]
        if bad:
            raise ValueError(f"deps[{k!r}] names unknown job(s) {bad!r}")
    _check_acyclic(deps)
    order = {k: i for i, k in enumerate(jobs)}
    rank = priority if priority is not None else order.__getitem__
    pending, done = set(jobs), {}
    workers = default_workers() if workers is None else int(workers)
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    workers = min(workers, max(1, len(jobs)))
    t0 = time.perf_counter()
    bar = tqdm(total=len(jobs), desc=desc, disable=desc is None, leave=False)

    def take() -> tuple[Hashable, dict[str, Any]] | None:
        ready = [k for k in pending if all(d in done for d in deps[k])]
        if not ready:
            return None
        k = min(ready, key=lambda x: (rank(x), order[x]))
        pending.discard(k)
        spec = jobs[k]
        kw = spec({d: done[d] for d in deps[k]}) if callable(spec) else spec
        if not isinstance(kw, dict):
            raise TypeError(f"job {k!r} must give a kwargs dict, got {type(kw).__name__}")
        return k, kw

    def record(k: Hashable, start: float) -> None:
        if schedule is not None:
            schedule.append({"job": k, "start_s": start, "end_s": time.perf_counter() - t0})
        bar.update()

    try:
        if workers == 1:
            import torch

            old = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                while pending:
                    k, kw = take()  # acyclic: something is always ready
                    start = time.perf_counter() - t0
                    done[k] = fn(**kw)
                    record(k, start)
            finally:
                torch.set_num_threads(old)
            return {k: done[k] for k in jobs}
        from concurrent.futures import FIRST_COMPLETED, wait

        pool = ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"), initializer=init_worker)
        running: dict[Any, tuple[Hashable, float]] = {}
        try:
            while pending or running:
                while len(running) < workers and (job := take()) is not None:
                    running[pool.submit(_call, fn, job[1])] = (job[0], time.perf_counter() - t0)
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    k, start = running.pop(fut)
                    done[k] = fut.result()
                    record(k, start)
        except BaseException:
            _terminate(pool)
            raise
        else:
            pool.shutdown(wait=True)
        return {k: done[k] for k in jobs}
    finally:
        bar.close()


def _check_acyclic(deps: Mapping[Hashable, Sequence[Hashable]]) -> None:
    state: dict[Hashable, int] = {}
    for root in deps:
        stack = [(root, iter(deps[root]))]
        if state.get(root) == 2:
            continue
        state[root] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                raise ValueError(f"deps has a cycle through {nxt!r}")
            elif state.get(nxt) is None:
                state[nxt] = 1
                stack.append((nxt, iter(deps[nxt])))


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
