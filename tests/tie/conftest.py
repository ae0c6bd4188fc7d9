import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def _single_thread_torch():
    """2 shared cores: single-thread torch is several times faster than the default under contention."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)
