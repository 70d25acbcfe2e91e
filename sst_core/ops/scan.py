"""The diagonal linear scan ``h_t = a_t * h_{t-1} + b_t`` that every diagonal SSM runs.

Both functions take ``a`` and ``b`` of shape ``(b, L, ...)`` (any trailing shape; ``a``
may have size-1 dimensions that broadcast against ``b``, e.g. one decay per head), real
or complex, any length ``L >= 1``, and an optional initial state ``h0`` of shape
``(b, ...)`` (zero when omitted). They return every state ``h_1 .. h_L`` as one
``(b, L, ...)`` tensor, elementwise

    h_t = a_t * h_{t-1} + b_t,        t = 1 .. L,  h_0 = h0.

- ``linear_scan_ref``: the plain per-step loop; autograd differentiates it.
- ``linear_scan``: the fast path with the same signature and results. On CPU it is a
  sequential loop into a preallocated output with a hand-written backward, which beats
  every parallel scan on a 2-core machine (``cpu-performance-notes.md``, diagonal
  recurrences). On CUDA it is a chunked scan: a Hillis-Steele scan inside chunks of
  ``CHUNK`` steps and a sequential carry between chunks (no cumulative products over
  the whole length, which underflow, and no divisions).

The backward pass is the same recurrence run in reverse with the conjugate transition
(PyTorch's complex gradients are conjugate Wirtinger derivatives, so ``dL/dx`` of
``y = a x`` is ``conj(a) dL/dy``)::

    g_L = dL/dh_L,   g_t = dL/dh_t + conj(a_{t+1}) g_{t+1}
    dL/db_t = g_t,   dL/da_t = g_t conj(h_{t-1}),   dL/dh0 = conj(a_1) g_1

summed over the dimensions in which ``a`` (or ``b``) was broadcast.
"""
from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

__all__ = ["linear_scan", "linear_scan_ref", "CHUNK"]

CHUNK = 64  # steps per chunk of the CUDA scan


def _prepare(a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None):
    """Check shapes, promote to one dtype; return a, b, h0 and the output shape."""
    if b.dim() < 2 or b.shape[1] < 1:
        raise ValueError(f"b must have shape (batch, L, ...) with L >= 1, got {tuple(b.shape)}")
    if a.dim() != b.dim():
        raise ValueError(f"a and b must have the same number of dimensions, got a "
                         f"{tuple(a.shape)} and b {tuple(b.shape)}")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"a and b must have the same length L (dim 1), got a "
                         f"{tuple(a.shape)} and b {tuple(b.shape)}")
    try:
        shape = torch.broadcast_shapes(a.shape, b.shape)  # (b, L, ...)
    except RuntimeError:
        raise ValueError(f"a {tuple(a.shape)} and b {tuple(b.shape)} do not broadcast") from None
    dtype = torch.promote_types(a.dtype, b.dtype)
    if h0 is not None:
        if tuple(h0.shape) != (shape[0], *shape[2:]):
            raise ValueError(f"h0 must have shape {(shape[0], *shape[2:])} (batch, ...), "
                             f"got {tuple(h0.shape)}")
        dtype = torch.promote_types(dtype, h0.dtype)
        h0 = h0.to(dtype)
    return a.to(dtype), b.to(dtype), h0, shape


def linear_scan_ref(a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None = None
                    ) -> torch.Tensor:
    """Plain reference: ``h = a_t * h + b_t`` for t = 1..L, autograd through it.

    (``unbind`` rather than ``a[:, t]``: the backward of each index op would write a
    full-size zero tensor, making the reference quadratic in L.)
    """
    a, b, h0, shape = _prepare(a, b, h0)
    h = torch.zeros((shape[0], *shape[2:]), dtype=b.dtype, device=b.device) if h0 is None else h0
    hs = []
    for a_t, b_t in zip(a.expand(shape).unbind(1), b.expand(shape).unbind(1)):
        h = a_t * h + b_t  # (b, ...)
        hs.append(h)
    return torch.stack(hs, 1)  # (b, L, ...)


def linear_scan(a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None = None
                ) -> torch.Tensor:
    """Fast ``h_t = a_t * h_{t-1} + b_t``; same signature and results as ``linear_scan_ref``."""
    a, b, h0, shape = _prepare(a, b, h0)
    if torch._C._are_functorch_transforms_active():  # torch.func (jacrev, vmap) of a scan
        return linear_scan_ref(a, b, h0)
    if b.is_cuda:
        return _chunked_scan(a, b, h0, shape)
    return _SequentialScan.apply(a, b, h0)


def _reduce(grad: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Sum ``grad`` over the dimensions where an input of ``shape`` was broadcast."""
    dims = [i for i, (n, m) in enumerate(zip(shape, grad.shape)) if n == 1 and m != 1]
    return grad.sum(dims, keepdim=True) if dims else grad


class _SequentialScan(torch.autograd.Function):
    """CPU scan: a loop into a preallocated output, and the reverse loop as its backward."""

    @staticmethod
    def forward(ctx, a, b, h0):
        shape = torch.broadcast_shapes(a.shape, b.shape)
        out = torch.empty(shape, dtype=b.dtype, device=b.device)  # (b, L, ...)
        ctx.b_shape = b.shape
        b = b.expand(shape)
        if h0 is None:
            out[:, 0] = b[:, 0]
        else:
            torch.addcmul(b[:, 0], a[:, 0], h0, out=out[:, 0])
        for t in range(1, shape[1]):
            torch.addcmul(b[:, t], a[:, t], out[:, t - 1], out=out[:, t])
        ctx.save_for_backward(a, out, h0)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        a, out, h0 = ctx.saved_tensors
        L = out.shape[1]
        a_conj = a.conj()  # a lazy view: cheaper than resolving it up front
        g = torch.empty_like(out)  # g_t = dL/dh_t through every later step
        g[:, L - 1] = grad_out[:, L - 1]
        for t in range(L - 2, -1, -1):
            torch.addcmul(grad_out[:, t], a_conj[:, t + 1], g[:, t + 1], out=g[:, t])
        grad_a = grad_b = grad_h0 = None
        if ctx.needs_input_grad[0]:
            grad_a = torch.empty_like(out)  # g_t conj(h_{t-1})
            torch.mul(g[:, 1:], out[:, :-1].conj(), out=grad_a[:, 1:])
            if h0 is None:
                grad_a[:, 0] = 0
            else:
                torch.mul(g[:, 0], h0.conj(), out=grad_a[:, 0])
            grad_a = _reduce(grad_a, a.shape)
        if ctx.needs_input_grad[1]:
            grad_b = _reduce(g, ctx.b_shape)
        if ctx.needs_input_grad[2]:
            grad_h0 = a_conj[:, 0] * g[:, 0]  # (b, ...)
        return grad_a, grad_b, grad_h0


def _chunked_scan(a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None,
                  shape: torch.Size, chunk: int = CHUNK) -> torch.Tensor:
    """GPU scan from differentiable torch ops; equals ``linear_scan_ref`` up to rounding.

    Inside each chunk of ``chunk`` steps, a Hillis-Steele scan composes the affine maps
    ``(A, B)_t <- (A_t A_{t-k}, A_t B_{t-k} + B_t)`` for k = 1, 2, 4, ...; afterwards
    ``h_t = A_t h_start + B_t`` with ``h_start`` the last state of the previous chunk.
    The tail is padded with the identity map (a = 1, b = 0).
    """
    n_b, L, rest = shape[0], shape[1], tuple(shape[2:])
    a, b = a.expand(shape), b.expand(shape)
    pad = (-L) % chunk
    if pad:
        a = torch.cat([a, a.new_ones((n_b, pad, *rest))], 1)
        b = torch.cat([b, b.new_zeros((n_b, pad, *rest))], 1)
    A = a.reshape(n_b, -1, chunk, *rest)  # (b, n_chunks, chunk, ...)
    B = b.reshape(n_b, -1, chunk, *rest)
    k = 1
    while k < chunk:
        B = torch.cat([B[:, :, :k], A[:, :, k:] * B[:, :, :-k] + B[:, :, k:]], 2)
        A = torch.cat([A[:, :, :k], A[:, :, k:] * A[:, :, :-k]], 2)
        k *= 2
    h = b.new_zeros((n_b, *rest)) if h0 is None else h0  # (b, ...)
    outs = []
    for c in range(A.shape[1]):
        hc = A[:, c] * h.unsqueeze(1) + B[:, c]  # (b, chunk, ...)
        outs.append(hc)
        h = hc[:, -1]
    return torch.cat(outs, 1)[:, :L]  # (b, L, ...)
