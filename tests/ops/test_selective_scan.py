"""The fused selective scan (sst_core.ops.selective_scan) against its per-step reference,
on both paths (the C loops of sst_core.ops.native_selective and the torch path), under
vmap, and inside the Mamba models against the previous path (linear_scan)."""
from __future__ import annotations

import os
import shutil
import time

import pytest
import torch
from torch.func import functional_call, grad, jacrev, stack_module_state, vmap

from sst_core.models import build
from sst_core.ops import native, native_selective
from sst_core.ops import selective_scan as ss_module
from sst_core.ops.selective_scan import selective_scan, selective_scan_ref

f64 = torch.float64
LENGTHS = [1, 63, 1000, 4096]
NAMES = ["x_dt", "A", "x", "B", "C", "h0"]

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(params=["c", "torch"])
def path(request):
    """Run a test with the C loops (native_selective.c) and again on the torch path."""
    if request.param == "torch":
        with native.disabled():
            yield "torch"
        return
    if native_selective.library() is None:
        pytest.skip(f"no C loops here: {native_selective.status()}")
    yield "c"


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of a few steps and blocks of a few samples at the tests' tiny sizes
    (E = 3, N = 4 in float64: 96 bytes of state per sample): the torch path's blocks of
    <= 4 samples and chunks of >= 3 steps, the C loops' chunks of 5 steps."""
    monkeypatch.setattr(ss_module, "CHUNK_BYTES", 96 * 2 * 7)  # 1344
    monkeypatch.setattr(ss_module, "MIN_STEPS", 3)  # blocks of <= 4 samples, T >= 3
    monkeypatch.setattr(ss_module, "NATIVE_CHUNK_BYTES", 2 * 96 * 5)  # T = 5


def inputs(b, L, E=3, N=4, G=None, seed=0, dtype=f64):
    """dt in (0.01, 1), A in (-2, -0.1) (per model if G), x, B, C, h0 ~ N(0, 1)."""
    g = torch.Generator().manual_seed(seed)
    dt = 0.01 + 0.99 * torch.rand(b, L, E, generator=g, dtype=dtype)
    A = -(0.1 + 1.9 * torch.rand(*(() if G is None else (G,)), E, N, generator=g,
                                 dtype=dtype))
    x, B, C = (torch.randn(b, L, n, generator=g, dtype=dtype) for n in (E, N, N))
    h0 = torch.randn(b, E, N, generator=g, dtype=dtype)
    return dt, A, x, B, C, h0


def run(fn, args, negative, seed=1, **options):
    """y, h_L and the gradients of a random weighting of both w.r.t. every input given
    (and the tensors among ``options``: D, z, dt_bias, in that order)."""
    leaves = [t.detach().clone().requires_grad_() for t in args]
    opts = {k: (v.detach().clone().requires_grad_() if isinstance(v, torch.Tensor) else v)
            for k, v in options.items()}
    y, h_last = fn(*leaves, *[None] * (6 - len(leaves)), negative=negative, return_last=True,
                   **opts)
    g = torch.Generator().manual_seed(seed)
    w_y = torch.randn(y.shape, generator=g, dtype=f64).to(y.dtype)
    w_h = torch.randn(h_last.shape, generator=g, dtype=f64).to(y.dtype)
    ((w_y * y).sum() + (w_h * h_last).sum()).backward()
    return ([y.detach(), h_last.detach()] + [t.grad for t in leaves]
            + [v.grad for v in opts.values() if isinstance(v, torch.Tensor)])


def assert_matches_reference(args, negative, **options):
    got = run(selective_scan, args, negative, **options)
    want = run(selective_scan_ref, args, negative, **options)
    assert [t.shape for t in got] == [t.shape for t in want]
    names = ["y", "h_L"] + NAMES + [k for k, v in options.items() if isinstance(v, torch.Tensor)]
    for name, x, y in zip(names, got, want):
        torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-11, msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("L", LENGTHS)
@pytest.mark.parametrize("negative", [False, True])
@pytest.mark.parametrize("with_h0", [True, False])
def test_fused_equals_reference(path, small_chunks, L, negative, with_h0):
    """Every output and gradient, many chunks (3 to 7 steps) of 2 blocks (5 samples)."""
    args = inputs(5, L, seed=L)
    assert_matches_reference(args if with_h0 else args[:5], negative)


@pytest.mark.parametrize("negative", [False, True])
@pytest.mark.parametrize("b,G", [(6, 3), (8, 2), (4, 4), (3, 1)])
def test_one_A_per_model(path, small_chunks, negative, b, G):
    """A (G, E, N): blocks of whole models (6, 3), parts of one model (8, 2), one sample
    per model (4, 4); (3, 1) a single model given as (1, E, N)."""
    assert_matches_reference(inputs(b, 23, G=G, seed=b), negative)


@pytest.mark.parametrize("L", [1, 50])
def test_default_chunks(path, L):
    """At the default CHUNK_BYTES the tiny case is one block and one chunk; a batch of
    2 x 100 samples of 32 x 16 states runs in 8 blocks of 25."""
    assert_matches_reference(inputs(3, L), False)
    assert_matches_reference(inputs(200, 9, E=32, N=16, G=2), True)


def test_recurrence_by_hand(path):
    dt, A, x, B, C, h0 = inputs(1, 2, E=1, N=1)
    a = torch.exp(dt[0, :, 0] * A[0, 0])
    h1 = a[0] * h0[0, 0, 0] + dt[0, 0, 0] * x[0, 0, 0] * B[0, 0, 0]
    h2 = a[1] * h1 + dt[0, 1, 0] * x[0, 1, 0] * B[0, 1, 0]
    y, h_last = selective_scan(dt, A, x, B, C, h0, return_last=True)
    torch.testing.assert_close(y[0, :, 0], torch.stack([h1 * C[0, 0, 0], h2 * C[0, 1, 0]]))
    torch.testing.assert_close(h_last[0, 0, 0], h2)
    y_neg = selective_scan(dt[:, :1], A, x[:, :1], B[:, :1], C[:, :1], h0, negative=True)
    h1_neg = (2 * a[0] - 1) * h0[0, 0, 0] + dt[0, 0, 0] * x[0, 0, 0] * B[0, 0, 0]
    torch.testing.assert_close(y_neg[0, 0, 0], h1_neg * C[0, 0, 0])


@pytest.mark.parametrize("wrt", [[0], [1], [3, 4], [5], []])
def test_some_inputs_without_grad(path, small_chunks, wrt):
    args = inputs(5, 30)
    leaves = [t.clone().requires_grad_(i in wrt) for i, t in enumerate(args)]
    y = selective_scan(*leaves, negative=True)
    want = selective_scan_ref(*args, negative=True)
    torch.testing.assert_close(y, want, rtol=1e-10, atol=1e-11)
    if wrt:
        got = torch.autograd.grad(y.sum(), [leaves[i] for i in wrt])
        ref_leaves = [t.clone().requires_grad_(i in wrt) for i, t in enumerate(args)]
        ref = torch.autograd.grad(selective_scan_ref(*ref_leaves, negative=True).sum(),
                                  [ref_leaves[i] for i in wrt])
        for x, y_ in zip(got, ref):
            torch.testing.assert_close(x, y_, rtol=1e-10, atol=1e-11)


def test_only_the_last_state_used(path, small_chunks):
    """The gradient arrives through h_L alone (no gradient for y; C's is zero)."""
    args = [t.requires_grad_() for t in inputs(5, 20)]
    got = torch.autograd.grad(selective_scan(*args, return_last=True)[1].sum(), args)
    want = torch.autograd.grad(selective_scan_ref(*args, return_last=True)[1].sum(), args,
                               allow_unused=True, materialize_grads=True)
    assert not got[4].any()
    for x, y in zip(got, want):
        torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-11)


def test_gradcheck(path, small_chunks):
    args = [t.requires_grad_() for t in inputs(5, 11, E=2, N=3, G=1)]
    assert torch.autograd.gradcheck(lambda *a: selective_scan(*a, negative=True), args)


@pytest.mark.parametrize("L", LENGTHS)
@pytest.mark.parametrize("negative", [False, True])
def test_single_precision(path, L, negative):
    """float32 against the float64 reference (the same draws): values and gradients to a
    few 1e-6 of their largest entry (the float32 reference itself is that far)."""
    args = inputs(3, L, E=5, N=7, seed=L)
    got = run(selective_scan, [t.float() for t in args], negative)
    want = run(selective_scan_ref, args, negative)
    for name, x, y in zip(["y", "h_L"] + NAMES, got, want):
        assert x.dtype == torch.float32
        torch.testing.assert_close(x.double(), y, rtol=1e-4, atol=2e-5 * y.abs().max().item(),
                                   msg=lambda m: f"{name}: {m}")


def _per_model(K):
    """inputs of K independent models, stacked: (K, b, ...) and A (K, E, N)."""
    per = [inputs(3, 17, seed=10 + k) for k in range(K)]
    return [torch.stack(ts) for ts in zip(*per)]


@pytest.mark.parametrize("negative", [False, True])
@pytest.mark.parametrize("with_h0", [True, False])
def test_vmap_equals_a_loop_over_models(path, small_chunks, negative, with_h0):
    """vmap over K = 4 stacked models (the batching rule folds K into the batch and A's
    models), forward and every gradient, against one call per model."""
    stacked = [t.requires_grad_() for t in _per_model(4)]
    if not with_h0:
        stacked = stacked[:5]
    n = len(stacked)

    def fn(*a):
        return selective_scan(*a, *[None] * (6 - n), negative=negative, return_last=True)

    y, h_last = vmap(fn)(*stacked)  # (K, b, L, E), (K, b, E, N)
    w_y, w_h = torch.randn_like(y), torch.randn_like(h_last)
    got = torch.autograd.grad((w_y * y).sum() + (w_h * h_last).sum(), stacked)
    ys, hs, grads = [], [], []
    for k in range(4):
        leaves = [t[k].detach().clone().requires_grad_() for t in stacked]
        yk, hk = selective_scan_ref(*leaves, *[None] * (6 - n), negative=negative,
                                    return_last=True)
        grads.append(torch.autograd.grad((w_y[k] * yk).sum() + (w_h[k] * hk).sum(), leaves))
        ys.append(yk)
        hs.append(hk)
    torch.testing.assert_close(y, torch.stack(ys), rtol=1e-10, atol=1e-11)
    torch.testing.assert_close(h_last, torch.stack(hs), rtol=1e-10, atol=1e-11)
    for name, g, want in zip(NAMES, got, zip(*grads)):
        torch.testing.assert_close(g, torch.stack(want), rtol=1e-10, atol=1e-11,
                                   msg=lambda m: f"{name}: {m}")


def test_vmap_with_shared_and_moved_inputs(path, small_chunks):
    """Inputs that are not vmapped (B shared by the K copies, one A (E, N) for all), an
    A of G = 2 models per copy, and a vmapped dimension that is not the first."""
    K, (dt, A, x, B, C, h0) = 3, inputs(4, 15, G=2)
    dts = torch.stack([dt * (k + 1) / K for k in range(K)], 2)  # vmapped dim 2
    y = vmap(lambda d: selective_scan(d, A, x, B, C, h0), in_dims=2)(dts)
    want = torch.stack([selective_scan_ref(dts[:, :, k], A, x, B, C, h0) for k in range(K)])
    torch.testing.assert_close(y, want, rtol=1e-10, atol=1e-11)
    A1 = A[0]
    Cs = torch.stack([C + k for k in range(K)])
    y = vmap(lambda c: selective_scan(dt, A1, x, B, c))(Cs)
    want = torch.stack([selective_scan_ref(dt, A1, x, B, c) for c in Cs])
    torch.testing.assert_close(y, want, rtol=1e-10, atol=1e-11)


def test_under_grad_and_jacrev_the_reference_runs(small_chunks):
    dt, A, x, B, C, h0 = inputs(2, 9)
    J = jacrev(lambda a: selective_scan(dt, a, x, B, C, h0, negative=True))(A)
    J_ref = jacrev(lambda a: selective_scan_ref(dt, a, x, B, C, h0, negative=True))(A)
    torch.testing.assert_close(J, J_ref)
    g = grad(lambda xx: selective_scan(dt, A, xx, B, C).sum())(x)
    xx = x.clone().requires_grad_()
    torch.testing.assert_close(g, torch.autograd.grad(selective_scan(dt, A, xx, B, C).sum(),
                                                      xx)[0])


@pytest.mark.parametrize("bad,match", [
    (dict(dt=torch.zeros(2, 0, 3)), "dt must have shape"),
    (dict(A=torch.zeros(4, 4)), "A must have shape"),
    (dict(A=torch.zeros(3, 3, 4)), "must divide the batch"),
    (dict(x=torch.zeros(2, 5, 4)), "x must have shape"),
    (dict(C=torch.zeros(2, 5, 3)), "C must have shape"),
    (dict(h0=torch.zeros(2, 4, 3)), "h0 must have shape"),
])
def test_bad_shapes_raise(bad, match):
    args = dict(zip(["dt", "A", "x", "B", "C", "h0"], inputs(2, 5, dtype=torch.float32)))
    args.update(bad)
    with pytest.raises(ValueError, match=match):
        selective_scan(**args)


def options(b, L, E=3, G=None, seed=5, dtype=f64):
    """D and dt_bias ((E) or (G, E)) and z (b, L, E) ~ N(0, 1)."""
    g = torch.Generator().manual_seed(seed)
    models = () if G is None else (G,)
    return dict(D=torch.randn(*models, E, generator=g, dtype=dtype),
                z=torch.randn(b, L, E, generator=g, dtype=dtype),
                dt_bias=torch.randn(*models, E, generator=g, dtype=dtype))


@pytest.mark.parametrize("L", [1, 63, 1000])
@pytest.mark.parametrize("negative", [False, True])
@pytest.mark.parametrize("which", ["D", "z", "dt_bias", "softplus", "all"])
def test_options_equal_reference(path, small_chunks, L, negative, which):
    """dt_bias, softplus, D and the gate z (as Mamba's selective_scan_fn), one at a time
    and all together, in value and every gradient; dt may be negative before softplus."""
    args = list(inputs(5, L, seed=L))
    opts = options(5, L)
    if which == "softplus" or which == "all":
        args[0] = torch.randn(args[0].shape, generator=torch.Generator().manual_seed(9),
                              dtype=f64)  # raw dt, any sign
    chosen = opts if which == "all" else {k: v for k, v in opts.items() if k == which}
    chosen["dt_softplus"] = which in ("softplus", "all")
    if which == "dt_bias":  # without softplus: keep dt > 0 (no growing states)
        chosen["dt_bias"] = 0.1 * chosen["dt_bias"].abs()
    assert_matches_reference(args, negative, **chosen)


@pytest.mark.parametrize("negative", [False, True])
@pytest.mark.parametrize("shared", [False, True])
def test_options_per_model(path, small_chunks, negative, shared):
    """A of G = 2 models with D and dt_bias per model (G, E), or one D, dt_bias for both."""
    args = inputs(6, 23, G=2, seed=3)
    opts = options(6, 23, G=None if shared else 2)
    assert_matches_reference(args, negative, dt_softplus=True, **opts)


@pytest.mark.parametrize("L", LENGTHS)
def test_options_in_single_precision(path, L):
    args = inputs(3, L, E=5, N=7, seed=L)
    opts = options(3, L, E=5)
    got = run(selective_scan, [t.float() for t in args], True, dt_softplus=True,
              **{k: v.float() for k, v in opts.items()})
    want = run(selective_scan_ref, args, True, dt_softplus=True, **opts)
    for name, x, y in zip(["y", "h_L"] + NAMES + list(opts), got, want):
        torch.testing.assert_close(x.double(), y, rtol=1e-4, atol=2e-5 * y.abs().max().item(),
                                   msg=lambda m: f"{name}: {m}")


def test_vmap_with_options(path, small_chunks):
    """K = 3 stacked models, each with its own A, D, dt_bias, under vmap: every gradient
    equals one call per model."""
    K = 3
    per = [list(inputs(4, 19, seed=20 + k)) + list(options(4, 19, seed=30 + k).values())
           for k in range(K)]
    stacked = [torch.stack(ts).requires_grad_() for ts in zip(*per)]

    def fn(dt, A, x, B, C, h0, D, z, bias):
        return selective_scan(dt, A, x, B, C, h0, True, D=D, z=z, dt_bias=bias,
                              dt_softplus=True)

    y = vmap(fn)(*stacked)
    w = torch.randn_like(y)
    got = torch.autograd.grad((w * y).sum(), stacked)
    for k in range(K):
        leaves = [t[k].detach().clone().requires_grad_() for t in stacked]
        yk = selective_scan_ref(*leaves[:6], True, D=leaves[6], z=leaves[7],
                                dt_bias=leaves[8], dt_softplus=True)
        want = torch.autograd.grad((w[k] * yk).sum(), leaves)
        torch.testing.assert_close(y[k], yk, rtol=1e-10, atol=1e-11)
        for g, wk in zip(got, want):
            torch.testing.assert_close(g[k], wk, rtol=1e-10, atol=1e-11)


def test_no_grad_keeps_no_states(path, monkeypatch):
    """Under no_grad (or with no input requiring grad) the forward keeps no chunk-entry
    states: only the running state and y; with gradients, one state per chunk."""
    seen = []
    for cls in (ss_module._NativeScan, ss_module._SelectiveScan):
        def spy(*a, cls=cls, apply=cls.apply):
            out = apply(*a)
            seen.append(out[2].shape[0])
            return out
        monkeypatch.setattr(cls, "apply", spy)
    args = inputs(4, 100)
    with torch.no_grad():
        y = selective_scan(*args)
    selective_scan(*args)  # nothing requires grad
    assert seen == [0, 0]
    leaves = [t.clone().requires_grad_() for t in args]
    selective_scan(*leaves).sum().backward()
    assert seen[-1] > 0
    torch.testing.assert_close(y, selective_scan_ref(*args), rtol=1e-10, atol=1e-11)


def test_backward_without_kept_states_raises(path):
    leaves = [t.clone().requires_grad_() for t in inputs(2, 5)]
    if path == "c":
        out = ss_module._NativeScan.apply(*leaves, None, None, None, False, False, False)
    else:
        out = ss_module._SelectiveScan.apply(*leaves, False, False)
    with pytest.raises(RuntimeError, match="without keeping its states"):
        out[0].sum().backward()


@pytest.mark.parametrize("bad,match", [
    (dict(D=torch.zeros(4)), "D must have shape"),
    (dict(dt_bias=torch.zeros(2, 3)), "dt_bias must have shape"),
    (dict(z=torch.zeros(2, 4, 3)), "z must have shape"),
])
def test_bad_option_shapes_raise(bad, match):
    with pytest.raises(ValueError, match=match):
        selective_scan(*inputs(2, 5, dtype=torch.float32), **bad)


# -- the C loops (sst_core.ops.native_selective) ---------------------------------------------
def _need_c():
    if native_selective.library() is None:
        pytest.skip(f"no C loops here: {native_selective.status()}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("b,L,E,G", [(5, 63, 3, None), (6, 40, 20, 2), (1, 100, 37, None),
                                     (1, 30, 40, None), (2, 1, 40, None)])
def test_c_loops_split_between_threads(two_threads, monkeypatch, dtype, b, L, E, G):
    """Samples split between the threads (5 samples; 6 samples of 2 models), channels
    split for a batch smaller than the thread count (1 sample of 37 channels, not a
    multiple of the 16-channel unit; 40), and more threads than work (2 samples, 1 step);
    with every option, in value and gradient."""
    _need_c()
    monkeypatch.setattr(native_selective, "_MIN_PARALLEL", 0)
    monkeypatch.setattr(ss_module, "NATIVE_CHUNK_BYTES", 2 * E * 4 * 8 * 7)  # T = 7 (f64)
    args = inputs(b, L, E=E, G=G, seed=L)
    opts = options(b, L, E=E, G=G)
    if dtype == torch.float64:
        assert_matches_reference(args, True, dt_softplus=True, **opts)
        assert_matches_reference(args[:5], False)
        return
    got = run(selective_scan, [t.float() for t in args], True, dt_softplus=True,
              **{k: v.float() for k, v in opts.items()})
    want = run(selective_scan_ref, args, True, dt_softplus=True, **opts)
    for x, y in zip(got, want):
        torch.testing.assert_close(x.double(), y, rtol=1e-4, atol=2e-5 * y.abs().max().item())


@pytest.mark.parametrize("b", [4, 1])
def test_c_loops_are_deterministic(two_threads, b):
    """Two runs with the same thread count give the same bits (samples or channels
    split between the threads; the parameters' gradients summed in a fixed order)."""
    _need_c()
    args = [t.float() for t in inputs(b, 300, E=40, N=16, G=2 if b == 4 else None)]
    opts = {k: v.float() for k, v in options(b, 300, E=40, G=2 if b == 4 else None).items()}
    first = run(selective_scan, args, True, dt_softplus=True, **opts)
    second = run(selective_scan, args, True, dt_softplus=True, **opts)
    for x, y in zip(first, second):
        assert torch.equal(x, y)


def test_c_and_torch_paths_agree_to_rounding():
    _need_c()
    args, opts = inputs(3, 1000, E=5, N=7), options(3, 1000, E=5)
    with native.disabled():
        torch_path = run(selective_scan, args, True, dt_softplus=True, **opts)
    for x, y in zip(run(selective_scan, args, True, dt_softplus=True, **opts), torch_path):
        torch.testing.assert_close(x, y, rtol=1e-11, atol=1e-12)


def test_without_a_compiler_the_torch_path_runs(monkeypatch, tmp_path):
    """A compiler that fails (or none) leaves the scan on its torch path, says why, and
    gives the same results; SST_NATIVE=0 switches the C loops off."""
    monkeypatch.setattr(native_selective, "_LIBRARY", native_selective._LIBRARY.fresh())
    monkeypatch.setenv("SST_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", "false")
    assert native_selective.library() is None
    assert native_selective.status().startswith("torch path: false failed")
    assert not ss_module._use_c(torch.zeros(1, 1, 1))
    assert_matches_reference(inputs(3, 40), True, **options(3, 40))
    monkeypatch.setenv("SST_NATIVE", "0")
    assert native_selective.status() == "torch path (SST_NATIVE=0)"


def test_native_off_gives_the_torch_path(monkeypatch):
    _need_c()
    assert ss_module._use_c(torch.zeros(1, 1, 1))
    monkeypatch.setenv("SST_NATIVE", "0")
    assert native_selective.library() is None and not ss_module._use_c(torch.zeros(1, 1, 1))
    monkeypatch.delenv("SST_NATIVE")
    with native.disabled():
        assert not ss_module._use_c(torch.zeros(1, 1, 1))
    assert not ss_module._use_c(torch.zeros(1, 1, 1, dtype=torch.bfloat16))


def test_c_library_is_built_once_per_cache(monkeypatch, tmp_path):
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here")
    monkeypatch.setattr(native_selective, "_LIBRARY", native_selective._LIBRARY.fresh())
    monkeypatch.setenv("SST_CACHE_DIR", str(tmp_path))
    assert native_selective.library() is not None
    built = list(tmp_path.glob("native_selective-*.so"))
    assert len(built) == 1 and native_selective.status().startswith("C loops: built with")
    monkeypatch.setattr(native_selective, "_LIBRARY", native_selective._LIBRARY.fresh())
    assert native_selective.library() is not None  # loads the cached build
    assert list(tmp_path.iterdir()) == built


def test_c_loops_in_a_forked_child(two_threads, monkeypatch):
    """A child forked after the parent used the thread pool makes its own (the inherited
    pool has no threads, and waiting on it would hang)."""
    if native_selective.library() is None or not hasattr(os, "fork"):
        pytest.skip("no C loops or no fork here")
    monkeypatch.setattr(native_selective, "_MIN_PARALLEL", 0)
    args = inputs(4, 20)
    want = selective_scan(*args)
    pid = os.fork()
    if pid == 0:  # child: exit code 0 only if the scan finishes with the same result
        code = 1
        try:
            code = 0 if torch.equal(selective_scan(*args), want) else 1
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


def _ulps(got, exact, dtype):
    """|got - exact| in units of the last place of exact rounded to dtype."""
    rounded = exact.to(dtype)
    ulp = (torch.nextafter(rounded, torch.tensor(float("inf"), dtype=dtype)) - rounded)
    return (got.double() - exact.double()).abs() / ulp.double()


def test_exp_within_one_ulp():
    """The scan's exp (Cody-Waite reduction, Taylor polynomial): within 1 ulp of the exact
    value for float32 (and of torch's for float64) over the normal range, zero and inf
    where torch's are, NaN kept."""
    _need_c()
    lib = native_selective.library()
    v = torch.linspace(-87, 88, 1_000_001, dtype=f64)
    assert _ulps(native_selective.elementwise(lib, "exp", v.float()), torch.exp(v.float().double()),
                 torch.float32).max() <= 1
    assert _ulps(native_selective.elementwise(lib, "exp", v * 8), torch.exp(v * 8), f64).max() <= 1
    for dtype in (torch.float32, f64):
        edge = torch.tensor([-1e4, -800, -750, -104, -100, -90, 0, 89, 100, 710, 1e4,
                             float("inf"), -float("inf")], dtype=dtype)
        got = native_selective.elementwise(lib, "exp", edge)
        want = torch.exp(edge)
        assert torch.equal(got == 0, want == 0) and torch.equal(got.isinf(), want.isinf())
        assert native_selective.elementwise(lib, "exp", torch.tensor([float("nan")],
                                                                     dtype=dtype)).isnan().all()


def test_softplus_within_a_few_ulps():
    """The scan's softplus: torch's threshold (x above 20), within 3 ulp of the exact
    value for float32 (torch's own: 1.5) and of torch's for float64."""
    _need_c()
    lib = native_selective.library()
    v = torch.linspace(-40, 40, 400_001, dtype=f64)
    exact = torch.nn.functional.softplus(v.float().double())
    assert _ulps(native_selective.elementwise(lib, "softplus", v.float()), exact,
                 torch.float32).max() <= 3.5
    exact = torch.nn.functional.softplus(v)
    assert _ulps(native_selective.elementwise(lib, "softplus", v), exact, f64).max() <= 3


# -- inside the models -------------------------------------------------------------------
def tiny_model(name, seed=0, n_layers=2, **kw):
    """A float64 model, every parameter nudged off its init."""
    torch.manual_seed(seed)
    model = build(name, 5, 5, n_layers=n_layers, **{"d_model": 4, "d_state": 4, **kw})
    model = model.double()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return model


def previous_path(model, monkeypatch):
    """Make the layers' outputs come from ``scan`` (linear_scan over the (b, L, E, N)
    tensors), as before the fused scan."""
    for layer in model.layers:
        monkeypatch.setattr(layer, "outputs", lambda u, h0=None, layer=layer:
                            layer.scan(u, h0)[1])


def logits_and_grads(model, tokens, targets):
    model.zero_grad()
    logits = model(tokens)
    torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten()).backward()
    return [logits.detach()] + [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("name", ["mamba", "negative_mamba"])
@pytest.mark.parametrize("L", [1, 63, 300])
def test_model_equals_previous_path(path, small_chunks, monkeypatch, name, L):
    model = tiny_model(name, seed=L, d_conv=4 if L > 1 else 1)
    g = torch.Generator().manual_seed(L)
    tokens, targets = (torch.randint(0, 5, (5, L), generator=g) for _ in range(2))
    got = logits_and_grads(model, tokens, targets)
    previous_path(model, monkeypatch)
    want = logits_and_grads(model, tokens, targets)
    names = ["logits"] + [n for n, _ in model.named_parameters()]
    for n, x, y in zip(names, got, want):
        torch.testing.assert_close(x, y, rtol=1e-9, atol=1e-12, msg=lambda m: f"{n}: {m}")


@pytest.mark.parametrize("name", ["mamba", "negative_mamba"])
def test_layer_outputs_from_a_state_equal_scan(path, small_chunks, name):
    """``outputs(u, h0)`` (SSM state and conv window from h0) == ``scan(u, h0)[1]``, with
    the gradients w.r.t. u, h0 and the parameters."""
    layer = tiny_model(name, n_layers=1).layers[0]
    g = torch.Generator().manual_seed(3)
    u = torch.randn(5, 40, layer.d_in, generator=g, dtype=f64)
    h0 = torch.randn(5, layer.state_size, generator=g, dtype=f64)
    w = torch.randn(5, 40, layer.d_out, generator=g, dtype=f64)
    results = []
    for fn in (layer.outputs, lambda u, h0: layer.scan(u, h0)[1]):
        leaves = [u.clone().requires_grad_(), h0.clone().requires_grad_()]
        layer.zero_grad()
        y = fn(*leaves)
        (w * y).sum().backward()
        results.append([y.detach()] + [t.grad for t in leaves]
                       + [p.grad.clone() for p in layer.parameters()])
    for x, y in zip(*results):
        torch.testing.assert_close(x, y, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["mamba", "negative_mamba"])
def test_stacked_models_equal_a_loop(path, small_chunks, name):
    """vmap of the model over K = 3 stacked weights (as sst_core.training.stacked trains them):
    logits and every parameter gradient equal those of each model on its own."""
    models = [tiny_model(name, seed=k) for k in range(3)]
    params, buffers = stack_module_state(models)
    base = tiny_model(name).to("meta")
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, 5, (3, 4, 30), generator=g)
    w = torch.randn(3, 4, 30, 5, generator=g, dtype=f64)

    logits = vmap(lambda p, b, x: functional_call(base, (p, b), (x,)))(params, buffers, tokens)
    (w * logits).sum().backward()
    for k, model in enumerate(models):
        want = model(tokens[k])
        (w[k] * want).sum().backward()
        torch.testing.assert_close(logits[k], want, rtol=1e-10, atol=1e-12)
        for n, p in model.named_parameters():
            torch.testing.assert_close(params[n].grad[k], p.grad, rtol=1e-9, atol=1e-12,
                                       msg=lambda m: f"{n}: {m}")


@pytest.mark.parametrize("name", ["mamba", "negative_mamba"])
@pytest.mark.parametrize("d_conv", [4, 1])
@pytest.mark.parametrize("with_h0", [True, False])
def test_evaluation_in_pieces(path, name, d_conv, with_h0):
    """Without gradients a sequence longer than EVAL_CHUNK runs in pieces, the SSM state
    and the conv window carried between them: the same outputs as in one piece."""
    from sst_core.models.selective import EVAL_CHUNK

    layer = tiny_model(name, n_layers=1, d_conv=d_conv).layers[0]
    L = 2 * EVAL_CHUNK + 45
    g = torch.Generator().manual_seed(4)
    u = torch.randn(3, L, layer.d_in, generator=g, dtype=f64)
    h0 = torch.randn(3, layer.state_size, generator=g, dtype=f64) if with_h0 else None
    whole = layer.outputs(u, h0)  # gradients on: one piece
    with torch.no_grad():
        pieces = layer.outputs(u, h0)
    torch.testing.assert_close(pieces, whole.detach(), rtol=1e-11, atol=1e-12)
