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



@pytest.fixture
def fail_on_second_call(monkeypatch):
    """``patch(module, name, error)``: replace the function ``module.name`` (for this test)
    by one that raises ``error`` on its second call and calls the original otherwise;
    returns the list of the calls' arguments. For a diagnostic computed before and after
    training that fails only after it."""
    def patch(module, name, error):
        real, calls = getattr(module, name), []

        def wrapper(*args):
            calls.append(args)
            if len(calls) == 2:
                raise error
            return real(*args)

        monkeypatch.setattr(module, name, wrapper)
        return calls
    return patch
