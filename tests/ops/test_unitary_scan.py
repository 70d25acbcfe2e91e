"""The fused unitary scan (sst_core.ops.unitary_scan) against its reference: values and
gradients (with groups, angle scale, initial and final state), blocks, the torch
fallback, vmap and the other torch.func transforms."""
from __future__ import annotations

import pytest
import torch
from torch.func import grad, jacrev, vmap

from sst_core.ops import native
from sst_core.ops import unitary_scan as us_module
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


@pytest.mark.parametrize("block_bytes", [1, 2 * 63 * 6 * 16 + 1])  # one sample; two or three
def test_blocks_and_groups(block_bytes, monkeypatch):
    """Blocks of one sample and blocks of a few (never straddling models), G = 3 models."""
    monkeypatch.setattr(us_module, "BLOCK_BYTES", block_bytes)
    assert_matches_reference(inputs(12, 63, G=3, scale=True))
    assert_matches_reference(inputs(5, 63))


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
