"""The fused unitary scan (sst_core.ops.unitary_scan) against its reference: values and
gradients (with groups, angle scale, initial and final state), blocks, the torch
fallback, vmap and the other torch.func transforms."""
from __future__ import annotations

import shutil

import pytest
import torch
from torch.func import grad, jacrev, vmap

from sst_core.ops import native, native_selective, native_unitary
from sst_core.ops import unitary_scan as us_module
from sst_core.ops.scan import parallel_scans
from sst_core.ops.unitary_scan import unitary_scan, unitary_scan_ref

f64 = torch.float64
NAMES = ["x", "X", "c", "u", "B", "C", "h0", "s"]

pytestmark = pytest.mark.usefixtures("one_thread")


def inputs(b, L, R=3, D=2, N=3, G=None, h0=True, scale=False, seed=0, dtype=f64):
    """x, u ~ N(0, 1), angles of order 1 to 3, a random start state, scale in (0, 1)."""
    g = torch.Generator().manual_seed(seed)
    lead = () if G is None else (G,)
    x = torch.randn(b, L, R, generator=g, dtype=dtype)
    X = torch.randn(*lead, D * N, R, generator=g, dtype=dtype)
    c = 3 * torch.rand(*lead, D, N, generator=g, dtype=dtype)
    u = torch.randn(b, L, D, generator=g, dtype=dtype)
    B, C = (torch.randn(*lead, N, 2, generator=g, dtype=dtype) for _ in range(2))
    start = torch.randn(b, D, N, 2, generator=g, dtype=dtype) if h0 else None
    s = torch.rand(b, L, D, generator=g, dtype=dtype) if scale else None
    return [x, X, c, u, B, C, start, s]


def run(fn, args, seed=1):
    """y, h_L and the gradients of a random weighting of both w.r.t. every input given."""
    leaves = [None if t is None else t.detach().clone().requires_grad_() for t in args]
    y, h_last = fn(*leaves)
    g = torch.Generator().manual_seed(seed)
    w_y = torch.randn(y.shape, generator=g, dtype=y.dtype)
    w_h = torch.randn(h_last.shape, generator=g, dtype=y.dtype)
    ((w_y * y).sum() + (w_h * h_last).sum()).backward()
    return [y.detach(), h_last.detach()] + [None if t is None else t.grad for t in leaves]


def assert_matches_reference(args, **tol):
    got, want = run(unitary_scan, args), run(unitary_scan_ref, args)
    for name, a, b in zip(["y", "h_L"] + NAMES, got, want):
        if b is None:
            assert a is None, name
            continue
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-11, msg=lambda m: f"{name}: {m}",
                                   **tol)


@pytest.mark.parametrize("L", [1, 63, 1000])
@pytest.mark.parametrize("h0", [False, True])
@pytest.mark.parametrize("scale", [False, True])
def test_equals_reference_in_value_and_gradient(L, h0, scale):
    assert_matches_reference(inputs(3, L, h0=h0, scale=scale))


def parallel_unitary_scan(*args):
    return unitary_scan(*args, parallel=True)


@pytest.mark.parametrize("L", [1, 63, 1000])
@pytest.mark.parametrize("h0", [False, True])
@pytest.mark.parametrize("G", [None, 3])
def test_parallel_path_equals_reference(L, h0, G):
    """The path CUDA takes (``parallel=True``: linear_scan's chunked parallel scan), here on
    the CPU: every output and gradient, with the angle scale, and G models side by side."""
    args = inputs(3 if G is None else 6, L, h0=h0, scale=True, G=G, seed=L)
    got, want = run(parallel_unitary_scan, args), run(unitary_scan_ref, args)
    for name, a, b in zip(["y", "h_L"] + NAMES, got, want):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10, msg=lambda m: f"{name}: {m}")


def test_parallel_path_under_vmap_and_grad():
    """The parallel path is plain torch ops: vmap (stacked models) and grad run it as is."""
    x, X, c, u, B, C, h0, s = inputs(2, 40, scale=True)
    Xs = torch.stack([X * (1 + k / 5) for k in range(3)])
    with parallel_scans():
        y = vmap(lambda XX: unitary_scan(x, XX, c, u, B, C, h0, s)[0])(Xs)
        gu = grad(lambda uu: unitary_scan(x, X, c, uu, B, C, h0, s)[0].sum())(u)
    torch.testing.assert_close(y, torch.stack([unitary_scan_ref(x, XX, c, u, B, C, h0, s)[0]
                                               for XX in Xs]), rtol=1e-10, atol=1e-11)
    torch.testing.assert_close(gu, grad(lambda uu: unitary_scan_ref(x, X, c, uu, B, C, h0, s)[0]
                                        .sum())(u), rtol=1e-10, atol=1e-11)


def test_parallel_false_keeps_the_cpu_path_inside_parallel_scans(monkeypatch):
    calls = []
    monkeypatch.setattr(us_module._UnitaryScan, "apply",
                        lambda *a, apply=us_module._UnitaryScan.apply: calls.append(1) or apply(*a))
    args = inputs(2, 9)
    with parallel_scans():
        unitary_scan(*args)
        assert not calls
        if native_unitary.library() is not None:
            unitary_scan(*args, parallel=False)
            assert calls == [1]


@pytest.mark.parametrize("block_bytes", [1, 2 * 63 * 6 * 8 + 1])  # one sample; two or three
def test_blocks_and_groups(block_bytes, monkeypatch):
    """Without gradients, blocks of one sample and of a few (never straddling models), G = 3
    models; with gradients, the same groups."""
    monkeypatch.setattr(us_module, "BLOCK_BYTES", block_bytes)
    for args in (inputs(12, 63, G=3, scale=True), inputs(5, 63)):
        with torch.no_grad():
            y, h = unitary_scan(*args)
        y_ref, h_ref = unitary_scan_ref(*args)
        torch.testing.assert_close(y, y_ref, rtol=1e-10, atol=1e-11)
        torch.testing.assert_close(h, h_ref, rtol=1e-10, atol=1e-11)
        assert_matches_reference(args)


@pytest.mark.parametrize("steps", [1, 5, 62])  # chunks of the backward: 63, 13 and 2
def test_chunks_of_the_backward(steps, monkeypatch):
    """The backward recomputes the states chunk by chunk from the kept chunk starts: any
    chunk length gives the reference's values and gradients (D = 2, float64: 64 bytes a
    step)."""
    monkeypatch.setattr(us_module, "CHUNK_BYTES", 64 * steps)
    assert us_module.chunk_steps(63, 3, 2, 8) == steps
    assert_matches_reference(inputs(3, 63, G=3, scale=True))


def _need_c():
    if native_unitary.library() is None:
        pytest.skip(f"no C loops here: {native_unitary.status()}")


@pytest.mark.parametrize("b,D,G", [(5, 2, None), (6, 3, 2), (1, 37, None), (1, 40, None)])
def test_c_loops_split_between_threads(two_threads, monkeypatch, b, D, G):
    """Samples split between two threads (5 samples; 6 samples of 2 models), and channels
    for one sample (37 channels, not a multiple of the 16-channel unit; 40): the partial
    sums of dL/dB and dL/dC over the channel parts add up; values and gradients."""
    _need_c()
    monkeypatch.setattr(native_selective, "_MIN_PARALLEL", 0)
    assert_matches_reference(inputs(b, 30, D=D, G=G, scale=True))


def test_without_a_compiler_the_torch_path_runs_and_a_build_is_reused(monkeypatch, tmp_path):
    """A compiler that fails leaves the scan on its torch path, says why, and gives the
    reference's results; with one, the library is built once per cache and its own (not
    the selective scan's)."""
    monkeypatch.setattr(native_unitary, "_LIBRARY", native_unitary._LIBRARY.fresh())
    monkeypatch.setenv("SST_CACHE_DIR", str(tmp_path / "none"))
    monkeypatch.setenv("CC", "false")
    assert native_unitary.library() is None
    assert native_unitary.status().startswith("torch path: false failed")
    assert_matches_reference(inputs(3, 20, scale=True))
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        return
    monkeypatch.delenv("CC")
    monkeypatch.setenv("SST_CACHE_DIR", str(tmp_path / "cache"))
    for _ in range(2):  # build, then load the cached build
        monkeypatch.setattr(native_unitary, "_LIBRARY", native_unitary._LIBRARY.fresh())
        assert native_unitary.library() is not None
    assert [p.name.split("-")[0] for p in (tmp_path / "cache").iterdir()] == ["native_unitary"]


def test_c_loops_are_deterministic(two_threads, monkeypatch):
    """Two runs with the same thread count give the same bits."""
    _need_c()
    monkeypatch.setattr(native_selective, "_MIN_PARALLEL", 0)
    args = inputs(1, 40, D=37, scale=True)
    first, second = run(unitary_scan, args), run(unitary_scan, args)
    for a, b in zip(first, second):
        assert (a is None and b is None) or torch.equal(a, b)


def test_sincos_is_accurate():
    """The scan's sin and cos (Cody-Waite reduction by pi/2, Taylor polynomials): within
    one float32 ulp of 1 (and 2 float64 ulps of 1) of the exact values over |x| <= 1000,
    NaN for inf and NaN."""
    _need_c()
    lib = native_unitary.library()
    v = torch.linspace(-1000, 1000, 2_000_001, dtype=f64)
    for dtype, tol in ((torch.float32, 2.0 ** -23), (f64, 2.0 ** -51)):
        x = v.to(dtype)
        sn, cs = native_unitary.sincos(lib, x)
        exact = x.double()
        assert (sn.double() - torch.sin(exact)).abs().max() <= tol
        assert (cs.double() - torch.cos(exact)).abs().max() <= tol
        edge = torch.tensor([float("inf"), -float("inf"), float("nan")], dtype=dtype)
        assert all(t.isnan().all() for t in native_unitary.sincos(lib, edge))


def test_without_the_c_loops_the_torch_path_agrees():
    args = inputs(3, 40, scale=True)
    want = run(unitary_scan_ref, args)
    with native.disabled():
        got = run(unitary_scan, args)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-11)


def test_no_grad_equals_grad_path_and_float32_is_close():
    args = inputs(4, 100, scale=True)
    with torch.no_grad():
        y, h = unitary_scan(*args)
    y_ref, h_ref = unitary_scan_ref(*args)
    torch.testing.assert_close(y, y_ref, rtol=1e-10, atol=1e-11)
    torch.testing.assert_close(h, h_ref, rtol=1e-10, atol=1e-11)
    args32 = [None if t is None else t.float() for t in args]
    y32, _ = unitary_scan(*args32)
    torch.testing.assert_close(y32.double(), y_ref, rtol=1e-4, atol=1e-4)


def test_recurrence_by_hand():
    x, X, c, u, B, C, h0, _ = inputs(2, 5)
    Bc, Cc = torch.view_as_complex(B), torch.view_as_complex(C)
    h, ys = torch.view_as_complex(h0), []
    for t in range(5):
        theta = (x[:, t] @ X.T).view(2, 2, 3) + c
        h = torch.exp(1j * theta) * h + u[:, t, :, None] * Bc
        ys.append((h * Cc).real.sum(-1))
    y, h_last = unitary_scan(x, X, c, u, B, C, h0)
    torch.testing.assert_close(y, torch.stack(ys, 1))
    torch.testing.assert_close(h_last, torch.view_as_real(h))


@pytest.mark.parametrize("shared", [(), ("B", "x"), ("X", "c", "C", "u")])
def test_vmap_equals_a_loop(shared):
    """vmap over K = 3 copies (as the stacked models do); the names in ``shared`` are not
    vmapped; values and gradients."""
    K = 3
    base = inputs(2, 17, scale=True)
    stacked = [t if name in shared else torch.stack([t * (1 + k / 5) for k in range(K)])
               for name, t in zip(NAMES, base)]
    dims = [None if name in shared else 0 for name in NAMES]
    leaves = [t.clone().requires_grad_() for t in stacked]
    y, h = vmap(unitary_scan, in_dims=tuple(dims))(*leaves)
    w_y, w_h = torch.randn(y.shape, dtype=f64), torch.randn(h.shape, dtype=f64)
    got = [y, h] + list(torch.autograd.grad((w_y * y).sum() + (w_h * h).sum(), leaves))
    leaves_ref = [t.clone().requires_grad_() for t in stacked]
    outs = [unitary_scan_ref(*[t if d is None else t[k] for t, d in zip(leaves_ref, dims)])
            for k in range(K)]
    y_ref, h_ref = torch.stack([o[0] for o in outs]), torch.stack([o[1] for o in outs])
    want = [y_ref, h_ref] + list(torch.autograd.grad((w_y * y_ref).sum() + (w_h * h_ref).sum(),
                                                     leaves_ref))
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-11)


def test_under_grad_and_jacrev_the_reference_runs():
    x, X, c, u, B, C, h0, _ = inputs(2, 6)
    J = jacrev(lambda cc: unitary_scan(x, X, cc, u, B, C, h0)[0])(c)
    torch.testing.assert_close(J, jacrev(lambda cc: unitary_scan_ref(x, X, cc, u, B, C, h0)[0])(c))
    gu = grad(lambda uu: unitary_scan(x, X, c, uu, B, C, h0)[0].sum())(u)
    torch.testing.assert_close(gu, grad(lambda uu: unitary_scan_ref(x, X, c, uu, B, C, h0)[0]
                                        .sum())(u))


@pytest.mark.parametrize("i,shape,match", [
    (0, (2, 0, 3), "x must have shape"),
    (1, (6, 4), "X must have shape"),
    (2, (4, 2, 3), "group count 4 must divide"),
    (3, (2, 5, 3), "u must have shape"),
    (4, (3, 3), "B must have shape"),
    (6, (2, 2, 3), "h0 must have shape"),
    (7, (2, 5, 1), "s must have shape"),
])
def test_bad_shapes_raise(i, shape, match):
    args = inputs(2, 5, scale=True)
    args[i] = torch.zeros(shape, dtype=f64)
    with pytest.raises(ValueError, match=match):
        unitary_scan(*args)
