"""The fused selective scan (sst_core.ops.selective_scan) against its per-step reference,
under vmap, and inside the Mamba models against the previous path (linear_scan)."""
from __future__ import annotations

import pytest
import torch
from torch.func import functional_call, grad, jacrev, stack_module_state, vmap

from sst_core.models import build
from sst_core.ops import selective_scan as ss_module
from sst_core.ops.selective_scan import selective_scan, selective_scan_ref

f64 = torch.float64
LENGTHS = [1, 63, 1000, 4096]
NAMES = ["x_dt", "A", "x", "B", "C", "h0"]

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of a few steps and blocks of a few samples at the tests' tiny sizes
    (E = 3, N = 4 in float64: 96 bytes of state per sample)."""
    monkeypatch.setattr(ss_module, "CHUNK_BYTES", 96 * 2 * 7)  # 1344
    monkeypatch.setattr(ss_module, "MIN_STEPS", 3)  # blocks of <= 4 samples, T >= 3


def inputs(b, L, E=3, N=4, G=None, seed=0, dtype=f64):
    """dt in (0.01, 1), A in (-2, -0.1) (per model if G), x, B, C, h0 ~ N(0, 1)."""
    g = torch.Generator().manual_seed(seed)
    dt = 0.01 + 0.99 * torch.rand(b, L, E, generator=g, dtype=dtype)
    A = -(0.1 + 1.9 * torch.rand(*(() if G is None else (G,)), E, N, generator=g,
                                 dtype=dtype))
    x, B, C = (torch.randn(b, L, n, generator=g, dtype=dtype) for n in (E, N, N))
    h0 = torch.randn(b, E, N, generator=g, dtype=dtype)
    return dt, A, x, B, C, h0


def run(fn, args, negative, seed=1):
    """y, h_L and the gradients of a random weighting of both w.r.t. every input given."""
    leaves = [t.detach().clone().requires_grad_() for t in args]
    y, h_last = fn(*leaves, *[None] * (6 - len(leaves)), negative=negative, return_last=True)
    g = torch.Generator().manual_seed(seed)
    w_y = torch.randn(y.shape, generator=g, dtype=y.dtype)
    w_h = torch.randn(h_last.shape, generator=g, dtype=y.dtype)
    ((w_y * y).sum() + (w_h * h_last).sum()).backward()
    return [y.detach(), h_last.detach()] + [t.grad for t in leaves]


def assert_matches_reference(args, negative, **tol):
    got, want = run(selective_scan, args, negative), run(selective_scan_ref, args, negative)
    assert [t.shape for t in got] == [t.shape for t in want]
    for name, x, y in zip(["y", "h_L"] + NAMES, got, want):
        torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-11, msg=lambda m: f"{name}: {m}",
                                   **tol)


@pytest.mark.parametrize("L", LENGTHS)
@pytest.mark.parametrize("negative", [False, True])
@pytest.mark.parametrize("with_h0", [True, False])
def test_fused_equals_reference(small_chunks, L, negative, with_h0):
    """Every output and gradient, many chunks (3 to 7 steps) of 2 blocks (5 samples)."""
    args = inputs(5, L, seed=L)
    assert_matches_reference(args if with_h0 else args[:5], negative)


@pytest.mark.parametrize("negative", [False, True])
@pytest.mark.parametrize("b,G", [(6, 3), (8, 2), (4, 4), (3, 1)])
def test_one_A_per_model(small_chunks, negative, b, G):
    """A (G, E, N): blocks of whole models (6, 3), parts of one model (8, 2), one sample
    per model (4, 4); (3, 1) a single model given as (1, E, N)."""
    assert_matches_reference(inputs(b, 23, G=G, seed=b), negative)


@pytest.mark.parametrize("L", [1, 50])
def test_default_chunks(L):
    """At the default CHUNK_BYTES the tiny case is one block and one chunk; a batch of
    2 x 100 samples of 32 x 16 states runs in 8 blocks of 25."""
    assert_matches_reference(inputs(3, L), False)
    assert_matches_reference(inputs(200, 9, E=32, N=16, G=2), True)


def test_recurrence_by_hand():
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
def test_some_inputs_without_grad(small_chunks, wrt):
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


def test_only_the_last_state_used(small_chunks):
    """The gradient arrives through h_L alone (no gradient for y; C's is zero)."""
    args = [t.requires_grad_() for t in inputs(5, 20)]
    got = torch.autograd.grad(selective_scan(*args, return_last=True)[1].sum(), args)
    want = torch.autograd.grad(selective_scan_ref(*args, return_last=True)[1].sum(), args,
                               allow_unused=True, materialize_grads=True)
    assert not got[4].any()
    for x, y in zip(got, want):
        torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-11)


def test_gradcheck(small_chunks):
    args = [t.requires_grad_() for t in inputs(5, 11, E=2, N=3, G=1)]
    assert torch.autograd.gradcheck(lambda *a: selective_scan(*a, negative=True), args)


def test_single_precision():
    args = inputs(4, 200, E=8, N=16, dtype=torch.float32)
    got, want = run(selective_scan, args, False), run(selective_scan_ref, args, False)
    for x, y in zip(got, want):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-4)


def _per_model(K):
    """inputs of K independent models, stacked: (K, b, ...) and A (K, E, N)."""
    per = [inputs(3, 17, seed=10 + k) for k in range(K)]
    return [torch.stack(ts) for ts in zip(*per)]


@pytest.mark.parametrize("negative", [False, True])
@pytest.mark.parametrize("with_h0", [True, False])
def test_vmap_equals_a_loop_over_models(small_chunks, negative, with_h0):
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


def test_vmap_with_shared_and_moved_inputs(small_chunks):
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
def test_model_equals_previous_path(small_chunks, monkeypatch, name, L):
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
def test_layer_outputs_from_a_state_equal_scan(small_chunks, name):
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
def test_stacked_models_equal_a_loop(small_chunks, name):
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
