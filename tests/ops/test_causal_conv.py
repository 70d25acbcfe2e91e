"""The fused causal conv + SiLU (sst_core.ops.causal_conv) against its torch formula and
the layer's CausalConv, on both paths, with a window, per model and under vmap."""
from __future__ import annotations

import pytest
import torch
from torch.func import vmap
from torch.nn import functional as F

from sst_core.models.selective import CausalConv
from sst_core.ops import native, native_selective
from sst_core.ops.causal_conv import conv_silu, conv_silu_ref

f64 = torch.float64

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(params=["c", "torch"])
def path(request):
    if request.param == "torch":
        with native.disabled():
            yield "torch"
        return
    if native_selective.library() is None:
        pytest.skip(f"no C loops here: {native_selective.status()}")
    yield "c"


def inputs(b, L, E, K, G=None, seed=0, dtype=f64):
    """x as the first half of a (b, L, 2E) projection (a strided view), weight, bias,
    window."""
    g = torch.Generator().manual_seed(seed)
    models = () if G is None else (G,)
    xz = torch.randn(b, L, 2 * E, generator=g, dtype=dtype)
    return (xz[..., :E], torch.randn(*models, E, K, generator=g, dtype=dtype),
            torch.randn(*models, E, generator=g, dtype=dtype),
            torch.randn(b, (K - 1) * E, generator=g, dtype=dtype))


def value_and_grads(fn, x, w, bias, window):
    leaves = [t.detach().clone().requires_grad_() for t in (x, w, bias)]
    win = None if window is None else window.detach().clone().requires_grad_()
    y = fn(*leaves, win)
    weight = torch.randn(y.shape, generator=torch.Generator().manual_seed(1), dtype=f64)
    (weight.to(y.dtype) * y).sum().backward()
    return [y.detach()] + [t.grad for t in leaves] + ([] if win is None else [win.grad])


@pytest.mark.parametrize("K", [1, 2, 4])
@pytest.mark.parametrize("L", [1, 3, 63])
@pytest.mark.parametrize("with_window", [True, False])
def test_equals_the_torch_formula(path, K, L, with_window):
    x, w, bias, window = inputs(5, L, 6, K, seed=L)
    window = window if with_window and K > 1 else None
    got = value_and_grads(conv_silu, x, w, bias, window)
    want = value_and_grads(conv_silu_ref, x, w, bias, window)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-13)


def test_the_torch_formula_is_causal_conv():
    """conv_silu_ref is SiLU of the layer's CausalConv (bit for bit)."""
    conv = CausalConv(6, 4).double()
    x, _, _, window = inputs(3, 20, 6, 4)
    for win in (None, window):
        assert torch.equal(conv_silu_ref(x, conv.weight, conv.bias, win),
                           F.silu(conv.outputs(x, win)))


@pytest.mark.parametrize("dtype", [torch.float32, f64])
def test_per_model_parameters(path, dtype):
    """weight (G, E, K) and bias (G, E): model g on the g-th block of samples."""
    x, w, bias, window = inputs(6, 30, 5, 4, G=3, dtype=dtype)
    got = value_and_grads(conv_silu, x, w, bias, window)
    want = value_and_grads(conv_silu_ref, x, w, bias, window)
    tol = dict(rtol=1e-12, atol=1e-13) if dtype == f64 else dict(rtol=1e-5, atol=1e-5)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, **tol)
    for g in range(3):  # one model at a time
        rows = slice(2 * g, 2 * g + 2)
        torch.testing.assert_close(got[0][rows], conv_silu_ref(x[rows], w[g], bias[g],
                                                               window[rows]), **tol)


def test_vmap_over_stacked_weights(path):
    x, w, bias, window = inputs(4, 25, 5, 4, G=3)
    ws, bs = w.clone().requires_grad_(), bias.clone().requires_grad_()
    xs = torch.stack([x * (k + 1) for k in range(3)]).requires_grad_()
    y = vmap(conv_silu)(xs, ws, bs, window.expand(3, *window.shape))
    weight = torch.randn_like(y)
    got = torch.autograd.grad((weight * y).sum(), [xs, ws, bs])
    leaves = [t.detach().clone().requires_grad_() for t in (xs, ws, bs)]
    want_y = torch.stack([conv_silu_ref(leaves[0][k], leaves[1][k], leaves[2][k], window)
                          for k in range(3)])
    want = torch.autograd.grad((weight * want_y).sum(), leaves)
    torch.testing.assert_close(y, want_y, rtol=1e-12, atol=1e-13)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("b,E", [(5, 20), (1, 37)])
def test_split_between_threads(monkeypatch, b, E):
    """Samples split (5), channels split for one sample (37, not a multiple of 16)."""
    if native_selective.library() is None:
        pytest.skip(f"no C loops here: {native_selective.status()}")
    monkeypatch.setattr(native_selective, "_MIN_PARALLEL_LIGHT", 0)
    n = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        x, w, bias, window = inputs(b, 40, E, 4)
        first = value_and_grads(conv_silu, x, w, bias, window)
        second = value_and_grads(conv_silu, x, w, bias, window)
        want = value_and_grads(conv_silu_ref, x, w, bias, window)
    finally:
        torch.set_num_threads(n)
    for a, c, ref in zip(first, second, want):
        assert torch.equal(a, c)
        torch.testing.assert_close(a, ref, rtol=1e-12, atol=1e-13)


def test_gradcheck(path):
    x, w, bias, window = inputs(2, 6, 3, 3)
    args = [t.detach().clone().requires_grad_() for t in (x, w, bias, window)]
    assert torch.autograd.gradcheck(conv_silu, args)
