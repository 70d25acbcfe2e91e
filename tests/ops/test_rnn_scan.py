"""rnn_scan (the identity-phi dense RNN scan with a hand-written backward) against the
plain loop rnn_scan_ref, and the dense cell under torch.func transforms."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch.func import functional_call, grad, stack_module_state, vmap

from sst_core.models.cells import Cell
from sst_core.ops import rnn_scan as rnn_scan_module
from sst_core.ops.rnn_scan import GATES, rnn_scan, rnn_scan_ref

pytestmark = pytest.mark.usefixtures("one_thread")

TOL = dict(rtol=1e-10, atol=1e-10)


def inputs(gate, b, L, d, dtype=torch.float64, seed=0):
    """c, W_h, q, U_g, h0 (q and U_g None where the gate has none). ``W_h`` is 0.9 times an
    orthogonal matrix, so the states neither blow up nor vanish over thousands of steps."""
    g = torch.Generator().manual_seed(seed)
    c = torch.randn(b, L, d, generator=g, dtype=dtype)
    W_h = 0.9 * torch.linalg.qr(torch.randn(d, d, generator=g, dtype=dtype))[0]
    q = torch.randn(b, L, d, generator=g, dtype=dtype) if gate != "none" else None
    U_g = torch.randn(d, d, generator=g, dtype=dtype) / d ** 0.5 if gate == "state" else None
    h0 = torch.randn(b, d, generator=g, dtype=dtype)
    return c, W_h, q, U_g, h0


def run(fn, gate, args, w):
    """Output of fn and the gradients of sum(w * h) w.r.t. every given input (None: absent)."""
    leaves = [None if x is None else x.detach().clone().requires_grad_() for x in args]
    h = fn(gate, *leaves)
    (w * h).sum().backward()
    return [h.detach()] + [x.grad for x in leaves if x is not None]


def assert_all_close(got, want, **tol):
    assert len(got) == len(want)
    for i, (x, y) in enumerate(zip(got, want)):
        torch.testing.assert_close(x, y, **(tol or TOL), msg=lambda m: f"item {i}: {m}")


# -- the fast scan against the reference -------------------------------------------------

@pytest.mark.parametrize("gate", GATES)
@pytest.mark.parametrize("L,b,d", [(1, 3, 5), (63, 3, 5), (1000, 2, 4), (4096, 2, 3)])
@pytest.mark.parametrize("with_h0", [True, False])
def test_fast_equals_reference(gate, L, b, d, with_h0):
    c, W_h, q, U_g, h0 = inputs(gate, b, L, d, seed=L)
    args = (c, W_h, q, U_g, h0 if with_h0 else None)
    w = torch.randn(b, L, d, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    got, want = run(rnn_scan, gate, args, w), run(rnn_scan_ref, gate, args, w)
    assert got[0].shape == (b, L, d)
    assert len(got) == 3 + (gate != "none") + (gate == "state") + with_h0  # h, then grads
    assert_all_close(got, want)


@pytest.mark.parametrize("gate", GATES)
def test_float32_at_training_width(gate):
    """The sizes the benchmarks run (width 64), in float32."""
    args = inputs(gate, 16, 60, 64, dtype=torch.float32)
    w = torch.randn(16, 60, 64, generator=torch.Generator().manual_seed(1))
    assert_all_close(run(rnn_scan, gate, args, w), run(rnn_scan_ref, gate, args, w),
                     rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("gate", GATES)
def test_gradcheck(gate):
    args = [None if x is None else x.requires_grad_()
            for x in inputs(gate, 2, 5, 3)]
    assert torch.autograd.gradcheck(lambda *x: rnn_scan(gate, *x), args)


@pytest.mark.parametrize("gate", GATES)
def test_no_grad_forward_and_partial_gradients(gate):
    c, W_h, q, U_g, h0 = inputs(gate, 3, 40, 5)
    want = rnn_scan_ref(gate, c, W_h, q, U_g, h0)
    with torch.no_grad():  # the lean forward, nothing saved
        torch.testing.assert_close(rnn_scan(gate, c, W_h, q, U_g, h0), want, **TOL)
    torch.testing.assert_close(rnn_scan(gate, c, W_h, q, U_g), rnn_scan_ref(gate, c, W_h, q, U_g),
                               **TOL)
    W_h.requires_grad_()  # only W_h; h.sum(): an expanded (stride-0) output gradient
    rnn_scan(gate, c, W_h, q, U_g, h0).sum().backward()
    got, W_h.grad = W_h.grad, None
    rnn_scan_ref(gate, c, W_h, q, U_g, h0).sum().backward()
    torch.testing.assert_close(got, W_h.grad, **TOL)


def test_recurrence_by_hand():
    """d = 1, state gate: h_t = c_t + sigma(q_t + u h_{t-1}) w h_{t-1}."""
    c = torch.tensor([[[1.0], [2.0]]], dtype=torch.float64)  # (1, 2, 1)
    q = torch.tensor([[[0.0], [-3.0]]], dtype=torch.float64)
    W_h = torch.tensor([[0.5]], dtype=torch.float64)
    U_g = torch.tensor([[2.0]], dtype=torch.float64)
    h = rnn_scan("state", c, W_h, q, U_g, torch.tensor([[4.0]], dtype=torch.float64))
    sigma = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    h1 = 1.0 + sigma(8.0) * 2.0  # q_1 + u h_0 = 8, w h_0 = 2
    h2 = 2.0 + sigma(-3.0 + 2 * h1) * 0.5 * h1
    assert h.flatten().tolist() == pytest.approx([h1, h2], rel=1e-14)


def test_bad_arguments():
    c, W_h, q, U_g, h0 = inputs("state", 2, 4, 3)
    with pytest.raises(ValueError, match="unknown gate"):
        rnn_scan("both", c, W_h, q, U_g)
    with pytest.raises(ValueError, match="needs a gate input"):
        rnn_scan("token", c, W_h)
    with pytest.raises(ValueError, match="takes no gate input"):
        rnn_scan("none", c, W_h, q)
    with pytest.raises(ValueError, match="U_g"):
        rnn_scan("token", c, W_h, q, U_g)
    with pytest.raises(ValueError, match="h0 must have shape"):
        rnn_scan("state", c, W_h, q, U_g, h0[:1])
    with pytest.raises(ValueError, match="L >= 1"):
        rnn_scan("none", c[:, :0], W_h)


# -- the cell ------------------------------------------------------------------------------

def cell(phi, gate, d_in=3, d=6, seed=0):
    """A float64 cell, every parameter moved off its init (U_g != 0)."""
    torch.manual_seed(seed)
    c = Cell(d_in, d, phi, gate).double()
    with torch.no_grad():
        for p in c.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return c


@pytest.mark.parametrize("gate", GATES)
def test_cell_scan_equals_step_with_gradients(gate):
    """The identity cell's scan (the fast path) against step unrolled, w.r.t. every
    parameter, the input and h0."""
    c = cell("identity", gate)
    g = torch.Generator().manual_seed(2)
    u = torch.randn(3, 63, 3, generator=g, dtype=torch.float64)
    h0 = torch.randn(3, 6, generator=g, dtype=torch.float64)
    w = torch.randn(3, 63, 6, generator=g, dtype=torch.float64)
    results = []
    for scan in (c.scan, super(Cell, c).scan):  # the base class: step in a loop
        c.zero_grad()
        u_, h0_ = u.clone().requires_grad_(), h0.clone().requires_grad_()
        hs, ys = scan(u_, h0_)
        assert ys is hs or torch.equal(ys, hs)
        (w * hs).sum().backward()
        results.append([hs.detach(), u_.grad, h0_.grad] + [p.grad for p in c.parameters()])
    assert_all_close(*results)


class ScanOf(nn.Module):
    """A layer's ``scan`` as ``forward`` (what ``functional_call`` calls): u -> hs."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, u):
        return self.layer.scan(u)[0]


def forbid_fast_function(monkeypatch):
    """Under a torch.func transform the custom Function must not run (no vmap rule)."""
    def forbidden(*args, **kw):
        raise AssertionError("the custom autograd.Function ran under a torch.func transform")

    monkeypatch.setattr(rnn_scan_module._RNNScan, "apply", forbidden)


@pytest.mark.parametrize("phi,gate", [("identity", g) for g in GATES] + [("tanh", "none")])
def test_vmap_over_stacked_weights(phi, gate, monkeypatch):
    """K cells' weights stacked and one vmap of functional_call (as sst_core.training.stacked
    trains them): each row equals its own cell (fast path, or torch's fused tanh kernel),
    in value and in the gradient of a loss summed over the rows."""
    cells = [ScanOf(cell(phi, gate, seed=k)) for k in range(3)]
    g = torch.Generator().manual_seed(3)
    u = torch.randn(2, 50, 3, generator=g, dtype=torch.float64)
    w = torch.randn(2, 50, 6, generator=g, dtype=torch.float64)
    want = []
    for m in cells:
        hs = m(u)
        (w * hs).sum().backward()
        want.append(hs.detach())
    params, buffers = stack_module_state(cells)
    forbid_fast_function(monkeypatch)
    hs = vmap(lambda p, b, x: functional_call(cells[0], (p, b), (x,)),
              in_dims=(0, 0, None))(params, buffers, u)  # (K, b, L, d)
    assert hs.shape == (3, 2, 50, 6)
    torch.testing.assert_close(hs, torch.stack(want), **TOL)
    (w * hs).sum().backward()
    for name, p in params.items():
        torch.testing.assert_close(p.grad, torch.stack([m.get_parameter(name).grad
                                                        for m in cells]), **TOL)


@pytest.mark.parametrize("gate", GATES)
def test_vmap_over_inputs_and_grad_transform(gate, monkeypatch):
    """vmap over a leading input dimension, and torch.func.grad of a scan, both equal the
    fast path (the same cell outside any transform)."""
    m = ScanOf(cell("identity", gate))
    u = torch.randn(4, 2, 30, 3, generator=torch.Generator().manual_seed(4),
                    dtype=torch.float64)
    want = m(u.flatten(0, 1)).view(4, 2, 30, 6)
    m.zero_grad()
    m(u[0]).pow(2).sum().backward()
    want_grads = {name: p.grad for name, p in m.named_parameters()}
    forbid_fast_function(monkeypatch)
    torch.testing.assert_close(vmap(m)(u), want.detach(), **TOL)
    got = grad(lambda p, x: functional_call(m, p, (x,)).pow(2).sum())(
        {name: p.detach() for name, p in m.named_parameters()}, u[0])
    for name, g in want_grads.items():
        torch.testing.assert_close(got[name], g, **TOL)
