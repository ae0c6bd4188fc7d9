import pytest

from icml26.common.parallel import run_parallel, torch_threads
from icml26.common.seeding import seed_everything


def test_run_parallel_keeps_order_and_single_threads():
    # workers must import fn by name, so use library-level callables (test modules are not importable there)
    jobs = [{"a": i} for i in range(4)]
    assert run_parallel(dict, jobs, workers=2) == jobs
    assert run_parallel(torch_threads, [{}, {}], workers=2) == [1, 1]
    assert run_parallel(torch_threads, [{}], workers=1) == [1]


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
