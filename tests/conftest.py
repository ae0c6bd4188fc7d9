"""Suite-wide test settings."""

import pytest


@pytest.fixture(autouse=True, scope="session")
def _single_thread_torch():
    """Tests use tiny tensors on a shared 2-core machine: one torch thread is faster and steadier than several."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)
