"""linear_scan (and the CUDA chunked scan) against the plain loop linear_scan_ref."""
from __future__ import annotations

import os
import shutil
import time

import pytest
import torch
from torch.func import jacrev, vmap

from sst_core.ops import linear_scan, linear_scan_ref, native
from sst_core.ops import scan as scan_module
from sst_core.ops.scan import _chunked_scan, parallel_scans

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]
LENGTHS = [1, 63, 1000, 4096]


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(params=["c", "torch"])
def loops(request):
    """Run a test with the C loops (native_scan.c) and again with the torch loops."""
    if request.param == "torch":
        with native.disabled():
            yield "torch"
        return
    if native.library() is None:
        pytest.skip(f"no C loops here: {native.status()}")
    yield "c"


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


def assert_matches_reference(a, b, h0, dtype):
    w = torch.randn(b.shape, dtype=dtype)
    got, want = run(linear_scan, a, b, h0, w), run(linear_scan_ref, a, b, h0, w)
    assert [x.shape for x in got] == [x.shape for x in want]
    for x, y in zip(got, want):
        torch.testing.assert_close(x, y, **tol(dtype))


@pytest.mark.parametrize("dtype,L", [(d, L) for d in DTYPES for L in LENGTHS
                                     if L < 4096 or d in (torch.float32, torch.complex64)])
@pytest.mark.parametrize("with_h0", [True, False])
def test_fast_equals_reference(loops, dtype, L, with_h0):
    """Single precision at 4096 steps (the benchmark's dtypes); every dtype at 4096 steps
    in test_broadcast_transition."""
    a, b, h0 = inputs((3, L, 5, 7), dtype, seed=L)
    assert_matches_reference(a, b, h0 if with_h0 else None, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("L", LENGTHS)
@pytest.mark.parametrize("a_shape,with_h0", [((3, 1, 7), True), ((1, 5, 1), False)])
def test_broadcast_transition(loops, dtype, L, a_shape, with_h0):
    """One a for several channels (e.g. one decay per head, or per batch row): the
    gradient of a is summed over the channels that share it."""
    a_shape = (a_shape[0], L, *a_shape[1:])
    a, b, h0 = inputs((3, L, 5, 7), dtype, a_shape=a_shape, seed=L)
    assert_matches_reference(a, b, h0 if with_h0 else None, dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("block", [1, 7, 64])
@pytest.mark.parametrize("L", [2, 63, 1000])
def test_blocks_of_the_backward(monkeypatch, dtype, block, L):
    """The CPU backward's complex dL/da pass runs in blocks of _BLOCK_ELEMS elements:
    block edges inside the sequence and a ragged last block."""
    monkeypatch.setattr(scan_module, "_BLOCK_ELEMS", block * 5 * 7)
    a, b, h0 = inputs((3, L, 5, 7), dtype, a_shape=(3, L, 1, 7), seed=L)
    assert_matches_reference(a, b, h0, dtype)
    a, b, h0 = inputs((2, L, 5, 7), dtype, seed=L)
    assert_matches_reference(a, b, None, dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("with_h0", [True, False])
def test_gradcheck(loops, dtype, with_h0):
    a, b, h0 = inputs((2, 5, 3), dtype)
    args = [x.requires_grad_() for x in (a, b, h0 if with_h0 else None) if x is not None]
    assert torch.autograd.gradcheck(lambda *x: linear_scan(*x), args)
    a_head = inputs((2, 5, 1), dtype)[0].requires_grad_()  # broadcast over the last dim
    assert torch.autograd.gradcheck(lambda x, y: linear_scan(x, y), (a_head, args[1]))


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("wrt", ["a", "b", "h0", "a_h0"])
def test_some_inputs_without_grad(loops, dtype, wrt):
    a, b, h0 = inputs((2, 50, 3), dtype)
    grads = []
    for fn in (linear_scan, linear_scan_ref):
        leaves = {k: x.clone().requires_grad_(k in wrt.split("_")) for k, x in
                  (("a", a), ("b", b), ("h0", h0))}
        h = fn(leaves["a"], leaves["b"], leaves["h0"])
        grads.append(torch.autograd.grad(h.real.sum(), [x for x in leaves.values()
                                                         if x.requires_grad]))
    for x, y in zip(*grads):
        torch.testing.assert_close(x, y)


@pytest.fixture
def prefault_small_tensors(monkeypatch):
    """Two torch threads (the helper thread runs only then) and a prefault of every
    output, however small; records the address ranges handed to madvise."""
    calls = []
    populate = scan_module._populate
    monkeypatch.setattr(scan_module, "_PREFAULT_MIN_BYTES", 0)
    monkeypatch.setattr(scan_module, "_populate", lambda r: (calls.append(r), populate(r)))
    n = torch.get_num_threads()
    torch.set_num_threads(2)
    yield calls
    torch.set_num_threads(n)


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex128])
@pytest.mark.parametrize("L", [1, 63, 1000])
def test_with_pages_mapped_by_the_helper_thread(prefault_small_tensors, dtype, L):
    a, b, h0 = inputs((3, L, 5, 7), dtype, a_shape=(3, L, 1, 7), seed=L)
    with native.disabled():  # the helper thread serves the torch loops
        assert_matches_reference(a, b, h0, dtype)
    if scan_module._madvise() is not None:  # Linux: forward (out), backward (g, grad_a)
        assert len(prefault_small_tensors) == 2


def test_without_madvise(prefault_small_tensors, monkeypatch):
    monkeypatch.setattr(scan_module, "_madvise", lambda: None)
    a, b, h0 = inputs((3, 63, 5, 7), torch.complex64)
    assert_matches_reference(a, b, h0, torch.complex64)
    assert prefault_small_tensors == []


@pytest.mark.parametrize("backwards", [False, True])
def test_page_order_covers_each_output_once_in_loop_order(monkeypatch, backwards):
    monkeypatch.setattr(scan_module, "_PREFAULT_MIN_BYTES", 0)
    x = torch.empty(3, 1000, 700)  # 2.8 kB per step of a row: 748 steps per range
    ranges = scan_module._page_order(x, backwards)
    start, step = x.data_ptr(), 700 * 4
    assert sorted(ranges) == sorted(set(ranges))
    assert sum(e - s for s, e in ranges) == x.numel() * 4
    assert {s for s, _ in ranges} | {start + x.numel() * 4} == {e for _, e in ranges} | {start}
    first_steps = [((s - start) % (1000 * step)) // step for s, _ in ranges]
    assert first_steps == ([748] * 3 + [0] * 3 if backwards else [0] * 3 + [748] * 3)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_unusual_incoming_gradients(loops, dtype):
    """dL/dh as a lazily conjugated tensor (what h.conj() passes back), expanded along
    time (a loss that weights every step alike), and in another memory layout."""
    a, b, h0 = inputs((2, 40, 3, 4), dtype)
    w = torch.randn(b.shape, dtype=dtype)
    for grad_h in (w.conj(), w[:, :1].expand(b.shape), w.transpose(0, 1).contiguous()
                   .transpose(0, 1)):
        grads = []
        for fn in (linear_scan, linear_scan_ref):
            leaves = [x.clone().requires_grad_() for x in (a, b, h0)]
            grads.append(torch.autograd.grad(fn(*leaves), leaves, grad_outputs=grad_h))
        for x, y in zip(*grads):
            torch.testing.assert_close(x, y)


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


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("L", [1, 63, 1000])
def test_parallel_argument_and_context_take_the_chunked_scan(dtype, L):
    """``parallel=True`` (or parallel_scans()) runs CUDA's chunked scan on the CPU; it
    equals the reference in value and gradient; ``parallel=False`` keeps the loops."""
    a, b, h0 = inputs((3, L, 5, 7), dtype, seed=L)
    w = torch.randn(b.shape, dtype=dtype)
    want = run(linear_scan_ref, a, b, h0, w)
    argument = run(lambda *x: linear_scan(*x, parallel=True), a, b, h0, w)
    with parallel_scans():
        context = run(linear_scan, a, b, h0, w)
    for got in (argument, context):
        for x, ref in zip(got, want):
            torch.testing.assert_close(x, ref, rtol=1e-9, atol=1e-9)
    with parallel_scans():
        h = linear_scan(a.requires_grad_(), b, h0, parallel=False)
    assert type(h.grad_fn).__name__ == "_SequentialScanBackward"


def test_parallel_path_under_vmap_grad_and_jacrev():
    """The chunked scan is plain torch ops: every torch.func transform runs it (on CUDA,
    stacked training goes through vmap)."""
    a, b, h0 = inputs((2, 70, 3), torch.float64)
    As = torch.stack([a, a * 0.9, a * 0.8])
    with parallel_scans():
        hs = vmap(lambda aa: linear_scan(aa, b, h0))(As)
        J = jacrev(lambda h: linear_scan(a, b, h))(h0)
    torch.testing.assert_close(hs, torch.stack([linear_scan_ref(aa, b, h0) for aa in As]))
    torch.testing.assert_close(J, jacrev(lambda h: linear_scan_ref(a, b, h))(h0))


def test_parallel_must_be_a_bool_or_none():
    a, b, h0 = inputs((2, 4, 3), torch.float64)
    with pytest.raises(ValueError, match="parallel must be None"):
        linear_scan(a, b, h0, parallel="yes")


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


# -- the C loops (sst_core.ops.native) ---------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 63, 3, 7), (1, 100, 37), (2, 1, 40)])
def test_c_loops_split_between_threads(two_threads, monkeypatch, dtype, shape):
    """Rows split between the threads (5 rows), channels split (1 row of 37, not a multiple
    of the 16-channel split unit), and more threads than work (2 rows, 1 step)."""
    if native.library() is None:
        pytest.skip(f"no C loops here: {native.status()}")
    monkeypatch.setattr(native, "_MIN_PARALLEL", 0)
    a, b, h0 = inputs(shape, dtype, seed=shape[1])
    assert_matches_reference(a, b, h0, dtype)
    assert_matches_reference(a, b, None, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64])
def test_c_loops_are_deterministic(two_threads, dtype):
    a, b, h0 = inputs((4, 300, 50), dtype)
    w = torch.randn(b.shape, dtype=dtype)
    first, second = run(linear_scan, a, b, h0, w), run(linear_scan, a, b, h0, w)
    for x, y in zip(first, second):
        assert torch.equal(x, y)


def test_c_and_torch_loops_agree_to_rounding():
    a, b, h0 = inputs((3, 1000, 5, 7), torch.complex128)
    w = torch.randn(b.shape, dtype=torch.complex128)
    if native.library() is None:
        pytest.skip(f"no C loops here: {native.status()}")
    with native.disabled():
        torch_loops = run(linear_scan, a, b, h0, w)
    for x, y in zip(run(linear_scan, a, b, h0, w), torch_loops):
        torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-12)


def test_without_a_compiler_the_torch_loops_run(monkeypatch, tmp_path):
    """A compiler that fails (or none) leaves the scan on its torch loops, says why, and
    gives the same results; SST_NATIVE=0 switches the C loops off."""
    monkeypatch.setattr(native, "_state", {"lib": None, "tried": False, "reason": ""})
    monkeypatch.setenv("SST_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", "false")
    assert native.library() is None
    assert native.status().startswith("torch loops: false failed")
    a, b, h0 = inputs((2, 63, 4), torch.float64)
    assert_matches_reference(a, b, h0, torch.float64)
    monkeypatch.setenv("SST_NATIVE", "0")
    assert native.status() == "torch loops (SST_NATIVE=0)"


def test_c_library_is_built_once_per_cache(monkeypatch, tmp_path):
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here")
    monkeypatch.setattr(native, "_state", {"lib": None, "tried": False, "reason": ""})
    monkeypatch.setenv("SST_CACHE_DIR", str(tmp_path))
    assert native.library() is not None
    built = list(tmp_path.glob("native_scan-*.so"))
    assert len(built) == 1 and native.status().startswith("C loops: built with")
    monkeypatch.setattr(native, "_state", {"lib": None, "tried": False, "reason": ""})
    assert native.library() is not None  # loads the cached build
    assert list(tmp_path.iterdir()) == built


def test_c_loops_in_a_forked_child(two_threads, monkeypatch):
    """A child forked after the parent used the thread pool makes its own (the inherited
    pool has no threads, and waiting on it would hang)."""
    if native.library() is None or not hasattr(os, "fork"):
        pytest.skip("no C loops or no fork here")
    monkeypatch.setattr(native, "_MIN_PARALLEL", 0)
    a, b, h0 = inputs((4, 20, 8), torch.float64)
    want = linear_scan(a, b, h0)
    pid = os.fork()
    if pid == 0:  # child: exit code 0 only if the scan finishes with the same result
        code = 1
        try:
            code = 0 if torch.equal(linear_scan(a, b, h0), want) else 1
        finally:
            os._exit(code)
    deadline = time.time() + 60
    while time.time() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    pytest.fail("the scan in the forked child hung")
