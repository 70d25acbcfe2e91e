"""Fixtures shared by the whole test suite."""
import pytest
import torch


@pytest.fixture(scope="module")
def one_thread():
    """Tiny tensors: a second torch thread only adds synchronisation (up to 100x slower on
    a busy 2-core machine), so the model and scan tests run on one."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture
def two_threads():
    """The C loops' split between two threads (samples or channels)."""
    n = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(n)
