import pytest

from icml26.common.parallel import run_parallel, worker_probe
from icml26.common.seeding import seed_everything


def test_run_parallel_keeps_order_and_single_threads():
    # workers must import fn by name, so use library-level callables (test modules are not importable there)
    import os

    out = run_parallel(worker_probe, [{"a": i} for i in range(4)], workers=2)
    assert [o["a"] for o in out] == [0, 1, 2, 3]
    assert all(o["threads"] == 1 and o["pid"] != os.getpid() for o in out)
    # numpy is loaded before the initializer runs (unpickling the job imports it): its OpenBLAS pool must be
    # capped too, or its busy-waiting thread takes CPU from the other worker
    assert all(o["blas_threads"] == 1 for o in out), out
    local = run_parallel(worker_probe, [{"a": 9}], workers=1)[0]
    assert local["a"] == 9 and local["threads"] == 1 and local["pid"] == os.getpid()


def test_limit_threads_rejects_bad_counts():
    from icml26.common.parallel import limit_threads

    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="n must"):
            limit_threads(bad)


def test_run_parallel_errors():
    with pytest.raises(ValueError, match="workers"):
        run_parallel(dict, [{"x": 1}], workers=0)
    with pytest.raises(TypeError):
        run_parallel(5, [])


def test_seed_everything_is_reproducible():
    import torch

    seed_everything(3)
    a = torch.rand(3)
    seed_everything(3)
    assert torch.equal(a, torch.rand(3))
    with pytest.raises(ValueError, match="seed"):
        seed_everything(-1)
