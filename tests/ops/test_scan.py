"""linear_scan (and the CUDA chunked scan) against the plain loop linear_scan_ref."""
from __future__ import annotations

import pytest
import torch
from torch.func import jacrev

from sst_core.ops import linear_scan, linear_scan_ref
from sst_core.ops.scan import _chunked_scan

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]


pytestmark = pytest.mark.usefixtures("one_thread")


def inputs(shape, dtype, a_shape=None, seed=0):
    """a with |a| in (0.5, 0.99) (complex: a random phase), b and h0 ~ N(0, 1)."""
    g = torch.Generator().manual_seed(seed)
    real = torch.float32 if dtype in (torch.float32, torch.complex64) else torch.float64
    a_shape = a_shape or shape
    a = 0.5 + 0.49 * torch.rand(a_shape, generator=g, dtype=real)
    if dtype.is_complex:
        a = a * torch.exp(2j * torch.pi * torch.rand(a_shape, generator=g, dtype=real))
    b = torch.randn(shape, generator=g, dtype=dtype)
    h0 = torch.randn((shape[0], *shape[2:]), generator=g, dtype=dtype)
    return a, b, h0


def run(fn, a, b, h0, w):
    """Outputs and gradients of sum(Re(conj(w) h)) w.r.t. a, b, h0 (h0 may be None)."""
    leaves = [x.detach().clone().requires_grad_() for x in (a, b, h0) if x is not None]
    h = fn(*leaves, *([] if h0 is not None else [None]))
    (w.conj() * h).real.sum().backward()
    return [h.detach()] + [x.grad for x in leaves]


def tol(dtype):
    single = dtype in (torch.float32, torch.complex64)
    return dict(rtol=1e-4, atol=1e-4) if single else dict(rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("L", [1, 63, 1000])
@pytest.mark.parametrize("with_h0", [True, False])
def test_fast_equals_reference(dtype, L, with_h0):
    a, b, h0 = inputs((3, L, 5, 7), dtype, seed=L)
    h0 = h0 if with_h0 else None
    w = torch.randn(b.shape, dtype=dtype)
    for got, want in zip(run(linear_scan, a, b, h0, w), run(linear_scan_ref, a, b, h0, w)):
        torch.testing.assert_close(got, want, **tol(dtype))


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("a_shape", [(3, 63, 1, 7), (1, 63, 5, 1)])
def test_broadcast_transition(dtype, a_shape):
    """One a for several channels (e.g. one decay per head): gradients are summed over them."""
    a, b, h0 = inputs((3, 63, 5, 7), dtype, a_shape=a_shape)
    w = torch.randn(b.shape, dtype=dtype)
    got, want = run(linear_scan, a, b, h0, w), run(linear_scan_ref, a, b, h0, w)
    assert got[1].shape == a_shape
    for x, y in zip(got, want):
        torch.testing.assert_close(x, y, **tol(dtype))


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("with_h0", [True, False])
def test_gradcheck(dtype, with_h0):
    a, b, h0 = inputs((2, 5, 3), dtype)
    args = [x.requires_grad_() for x in (a, b, h0 if with_h0 else None) if x is not None]
    assert torch.autograd.gradcheck(lambda *x: linear_scan(*x), args)
    a_head = inputs((2, 5, 1), dtype)[0].requires_grad_()  # broadcast over the last dim
    assert torch.autograd.gradcheck(lambda x, y: linear_scan(x, y), (a_head, args[1]))


def test_recurrence_by_hand():
    a = torch.tensor([[[0.5], [2.0], [-1.0]]])  # (1, 3, 1)
    b = torch.tensor([[[1.0], [1.0], [3.0]]])
    h = linear_scan(a, b, torch.tensor([[4.0]]))
    assert h.flatten().tolist() == [3.0, 7.0, -4.0]  # 0.5*4+1, 2*3+1, -7+3
    z = linear_scan(torch.tensor([[[1j]]]), torch.tensor([[[0j]]]), torch.tensor([[1 + 0j]]))
    assert z.item() == 1j


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("L,chunk", [(1, 4), (63, 8), (64, 8), (1000, 64)])
def test_chunked_cuda_path_equals_reference(dtype, L, chunk):
    """The scan linear_scan uses on CUDA, run here on the CPU: same values and gradients."""
    a, b, h0 = inputs((3, L, 5, 7), dtype, a_shape=(3, L, 1, 7), seed=L)
    w = torch.randn(b.shape, dtype=dtype)
    fast = lambda a, b, h0: _chunked_scan(a, b, h0, torch.Size(b.shape), chunk)  # noqa: E731
    for got, want in zip(run(fast, a, b, h0, w), run(linear_scan_ref, a, b, h0, w)):
        torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-9)


def test_under_torch_func():
    """jacrev through linear_scan (the custom Function steps aside for the plain loop)."""
    a, b, h0 = inputs((2, 6, 3), torch.float64)
    J = jacrev(lambda h: linear_scan(a, b, h))(h0)
    J_ref = jacrev(lambda h: linear_scan_ref(a, b, h))(h0)
    torch.testing.assert_close(J, J_ref)


def test_dtype_promotion_and_no_grad():
    a, b, h0 = inputs((2, 9, 4), torch.float64)
    z = linear_scan(a, b.to(torch.complex128))  # real a, complex b
    assert z.dtype == torch.complex128
    with torch.no_grad():
        torch.testing.assert_close(linear_scan(a, b, h0), linear_scan_ref(a, b, h0))


@pytest.mark.parametrize("a_shape,b_shape,h0_shape,match", [
    ((2, 4, 3), (2, 5, 3), None, "length"),
    ((2, 4), (2, 4, 3), None, "number of dimensions"),
    ((2, 4, 2), (2, 4, 3), None, "broadcast"),
    ((2, 0, 3), (2, 0, 3), None, "L >= 1"),
    ((2, 4, 3), (2, 4, 3), (2, 4), "h0 must have shape"),
])
def test_bad_shapes_raise(a_shape, b_shape, h0_shape, match):
    h0 = None if h0_shape is None else torch.zeros(h0_shape)
    for fn in (linear_scan, linear_scan_ref):
        with pytest.raises(ValueError, match=match):
            fn(torch.zeros(a_shape), torch.zeros(b_shape), h0)
