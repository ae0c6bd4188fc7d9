import pytest
import torch


@pytest.fixture(autouse=True)
def _single_thread():
    """Tiny tensors: one thread is faster and steadier than several on a shared 2-core machine."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)
