"""Causal attention with a scalar decay (sst_core.ops.ssd) against its reference: both
forms (factorised decay and decay matrix), pieces, vmap and the other torch.func
transforms."""
from __future__ import annotations

import pytest
import torch
from torch.func import grad, jacrev, vmap

from sst_core.ops import ssd
from sst_core.ops.ssd import decayed_attention, decayed_attention_ref

f64 = torch.float64
NAMES = ["A", "Q", "K", "V", "e", "g"]

pytestmark = pytest.mark.usefixtures("one_thread")


def inputs(lead, C, N=5, P=3, decay=0.3, seed=0, dtype=f64):
    """Cumulative log decays with steps in (-decay, 0), Q, K, V ~ N(0, 1), e, g in (0, 1)."""
    g = torch.Generator().manual_seed(seed)
    A = (-decay * torch.rand(*lead, C, generator=g, dtype=dtype)).cumsum(-1)
    Q, K = (torch.randn(*lead, N, C, generator=g, dtype=dtype) for _ in range(2))
    V = torch.randn(*lead, C, P, generator=g, dtype=dtype)
    e, gg = (torch.rand(*lead, C, generator=g, dtype=dtype) for _ in range(2))
    return [A, Q, K, V, e, gg]


def run(fn, args, seed=1):
    leaves = [t.detach().clone().requires_grad_() for t in args]
    y = fn(*leaves)
    w = torch.randn(y.shape, generator=torch.Generator().manual_seed(seed), dtype=y.dtype)
    (w * y).sum().backward()
    return [y.detach()] + [t.grad for t in leaves]


def assert_matches_reference(args, **tol):
    for name, got, want in zip(["y"] + NAMES, run(decayed_attention, args),
                               run(decayed_attention_ref, args)):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12,
                                   msg=lambda m: f"{name}: {m}", **tol)


@pytest.mark.parametrize("C", [1, 2, 7, 60])
@pytest.mark.parametrize("decay", [0.3, 30.0])  # spans below SPAN (factorised) and far above
@pytest.mark.parametrize("piece_bytes", [None, 1])  # one piece; one block per piece
def test_equals_reference_in_value_and_gradient(C, decay, piece_bytes, monkeypatch):
    if piece_bytes is not None:
        monkeypatch.setattr(ssd, "PIECE_BYTES", piece_bytes)
    assert_matches_reference(inputs((3, 2), C, decay=decay))


def test_pieces_of_both_forms():
    """Blocks with small and with large spans in one call, pieces of a few blocks, so
    that pieces of each form (and of mixed blocks, built as decay matrices) occur."""
    args = inputs((12,), 20, decay=1.0)
    args[0] = args[0] * torch.arange(12, dtype=f64)[:, None] / 1.5  # spans 0 .. ~70
    spans = args[0][:, 0] - args[0][:, -1]
    assert spans.min() < ssd.SPAN < spans.max()
    old = ssd.PIECE_BYTES
    try:
        ssd.PIECE_BYTES = 3 * 20 * 20 * 8  # three blocks a piece
        assert_matches_reference(args)
    finally:
        ssd.PIECE_BYTES = old


def test_matches_the_recurrence_it_unrolls():
    """y_t by the per-step recurrence of a decayed outer-product state."""
    A, Q, K, V, e, g = inputs((2,), 9)
    S = torch.zeros(2, V.shape[-1], Q.shape[-2], dtype=f64)  # state (P, N)
    ys = []
    for t in range(9):
        a = torch.exp(A[:, t] - (A[:, t - 1] if t else 0))[:, None, None]
        ys.append((S * a) @ Q[..., t, None] + g[:, t, None, None] * V[:, t, :, None]
                  * (Q[..., t] * K[..., t]).sum(-1)[:, None, None])
        S = S * a + e[:, t, None, None] * V[:, t, :, None] * K[:, None, :, t]
    torch.testing.assert_close(decayed_attention(A, Q, K, V, e, g),
                               torch.cat(ys, -1).transpose(-1, -2), rtol=1e-12, atol=1e-12)


def test_float32_decays_beyond_the_floor_stay_finite():
    args = inputs((4,), 60, decay=100.0, dtype=torch.float32)
    y, *grads = run(decayed_attention, args)
    assert all(torch.isfinite(t).all() for t in [y, *grads])


@pytest.mark.parametrize("in_dims", [0, (0, 1, None, 2, 0, None)])
def test_vmap_equals_a_loop(in_dims):
    """vmap over K = 3 copies (as the stacked models do), some inputs shared or vmapped
    along another dimension; values and gradients."""
    K = 3
    base = inputs((2,), 11)
    dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * 6
    stacked = [x if d is None else torch.stack([x * (1 + k / 4) for k in range(K)], d)
               for x, d in zip(base, dims)]
    leaves = [x.clone().requires_grad_() for x in stacked]
    y = vmap(decayed_attention, in_dims=dims)(*leaves)
    w = torch.randn(y.shape, dtype=f64)
    got = [y] + list(torch.autograd.grad((w * y).sum(), leaves))
    leaves_ref = [x.clone().requires_grad_() for x in stacked]
    ys = [decayed_attention_ref(*[x if d is None else x.select(d, k)
                                  for x, d in zip(leaves_ref, dims)]) for k in range(K)]
    y_ref = torch.stack(ys)
    want = [y_ref] + list(torch.autograd.grad((w * y_ref).sum(), leaves_ref))
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_under_grad_and_jacrev_the_reference_runs():
    A, Q, K, V, e, g = inputs((2,), 6)
    J = jacrev(lambda a: decayed_attention(a, Q, K, V, e, g))(A)
    torch.testing.assert_close(J, jacrev(lambda a: decayed_attention_ref(a, Q, K, V, e, g))(A))
    gq = grad(lambda q: decayed_attention(A, q, K, V, e, g).sum())(Q)
    torch.testing.assert_close(gq, grad(lambda q: decayed_attention_ref(A, q, K, V, e, g)
                                        .sum())(Q))


@pytest.mark.parametrize("i,shape,match", [
    (1, (3, 2, 5, 6), "Q and K must have shape"),
    (2, (3, 4, 5, 7), "Q and K must have shape"),
    (3, (3, 2, 6, 3), "V must have shape"),
    (4, (3, 2, 6), "e must have"),
])
def test_bad_shapes_raise(i, shape, match):
    args = inputs((3, 2), 7)
    args[i] = torch.zeros(shape, dtype=f64)
    with pytest.raises(ValueError, match=match):
        decayed_attention(*args)
