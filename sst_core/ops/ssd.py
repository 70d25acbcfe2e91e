"""Causal attention with a scalar decay: the quadratic form of an SSM whose transition is
one number per head (Mamba-2's SSD; Mamba-3 in :mod:`sst_core.models.selective`).

For a batch of independent blocks (any leading shape ``...``) of C positions, with
cumulative log decays ``A`` (..., C) (non-increasing along C), queries and keys stored
feature-major, ``Q``, ``K`` (..., N, C), values ``V`` (..., C, P) and weights ``e``, ``g``
(..., C)::

    y_t = sum_{s < t} exp(A_t - A_s) (Q[:, t] . K[:, s]) e_s V_s + g_t (Q[:, t] . K[:, t]) V_t

(Mamba-3's trapezoid gives the current input one weight and the earlier ones another).
The exponent is floored at ``-FLOOR`` (``exp(-40)`` is 4e-18, below the rounding of any
sum it enters): an underflowing ``exp`` and the subnormal products it leads to are
10-50x slower than normal floats on CPU.

- ``decayed_attention_ref``: the formula in differentiable torch ops, a ``(C, C)`` decay
  matrix per block.
- ``decayed_attention``: the same results as one ``autograd.Function``, a piece of the
  blocks (``PIECE_BYTES`` of ``(C, C)`` buffers, which stay in the L2 cache) at a time.
  Where a block's decays span at most ``SPAN`` (``A_0 - A_{C-1} <= SPAN``, the usual case
  at the training length), the decay factorises, ``exp(A_t - A_s) = exp(A_t - m) exp(m -
  A_s)`` with ``m`` the middle of the span (both factors within ``exp(+-SPAN / 2)``), and
  scales Q and K: the block is a masked linear attention, two matrix products and no
  ``(C, C)`` exponential. Other pieces build the decay matrix. The backward recomputes
  each piece from the inputs. Under ``torch.func.vmap`` the vmapped dimension joins the
  leading ones; under the other ``torch.func`` transforms, and off the CPU (where one
  batched call beats pieces), the reference runs.

Backward (both forms), with ``W[t, s] = exp(A_t - A_s) e_s`` for s < t, ``W[t, t] = g_t``,
``S = Q^T K`` and ``M = W * S``::

    dL/dM = gy V^T,   dL/dV = M^T gy,   dL/dS = dL/dM * W
    dL/dQ = K (dL/dS)^T,   dL/dK = Q dL/dS,   dL/dg_t = (dL/dM * S)[t, t]
    dL/de_s = sum_{t > s} (dL/dM * S)[t, s] exp(A_t - A_s)
    dL/dA_t = sum_{s < t} G[t, s] - sum_{s > t} G[s, t],   G = dL/dM * M
"""
from __future__ import annotations

import torch

__all__ = ["decayed_attention", "decayed_attention_ref", "FLOOR", "SPAN", "PIECE_BYTES"]

FLOOR = 40.0
SPAN = 40.0  # decay spans (A_0 - A_{C-1}) at most this are factorised
# Bytes of one (blocks, C, C) buffer of a piece; a few are live at once and stay in L2.
PIECE_BYTES = 1 << 22


def _check(A, Q, K, V, e, g):
    *lead, C = A.shape
    if Q.shape != K.shape or Q.shape[:-2] != tuple(lead) or Q.shape[-1] != C:
        raise ValueError(f"Q and K must have shape (..., N, C) = (..., N, {C}) with the "
                         f"leading shape {tuple(lead)} of A, got {tuple(Q.shape)} and "
                         f"{tuple(K.shape)}")
    if V.shape[:-1] != (*lead, C):
        raise ValueError(f"V must have shape (..., C, P) = {(*lead, C)} + (P,), got "
                         f"{tuple(V.shape)}")
    for name, x in (("e", e), ("g", g)):
        if x.shape != A.shape:
            raise ValueError(f"{name} must have A's shape {tuple(A.shape)}, got {tuple(x.shape)}")


def decayed_attention_ref(A: torch.Tensor, Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor,
                          e: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """Plain reference (autograd through it): y (..., C, P)."""
    _check(A, Q, K, V, e, g)
    C = A.shape[-1]
    below = torch.ones(C, C, dtype=torch.bool, device=A.device).tril(-1)
    D = torch.exp((A[..., :, None] - A[..., None, :]).clamp(-FLOOR, 0)) * below
    W = D * e[..., None, :] + torch.diag_embed(g)  # (..., C, C)
    return (W * (Q.transpose(-1, -2) @ K)) @ V


def decayed_attention(A: torch.Tensor, Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor,
                      e: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """Fast ``decayed_attention_ref``: same signature and results."""
    _check(A, Q, K, V, e, g)
    if A.device.type != "cpu" or (torch._C._are_functorch_transforms_active()
                                  and not _only_vmap()):
        return decayed_attention_ref(A, Q, K, V, e, g)  # (one batched op off the CPU)
    return _DecayedAttention.apply(A, Q, K, V, e, g)


def _only_vmap() -> bool:
    from sst_core.ops.scan import only_vmap

    return only_vmap()


def _pieces(B: int, C: int, itemsize: int) -> list[tuple[int, int]]:
    """(start, end) of the flattened leading dimension, ``PIECE_BYTES`` of (C, C) at a time."""
    k = max(1, PIECE_BYTES // (C * C * itemsize))
    return [(i, min(B, i + k)) for i in range(0, B, k)]


def _factorised(A: torch.Tensor) -> bool:
    """Whether every block of the piece A (k, C) spans at most SPAN."""
    return bool((A[:, 0] - A[:, -1]).max() <= SPAN)


class _Piece:
    """The forward quantities of one piece (k blocks), in one of the two forms."""

    def __init__(self, A, Q, K, e, g, bufs):
        k, N, C = Q.shape
        self.fact = _factorised(A)
        if self.fact:
            self.diag = (Q * K).sum(1)  # Q_t . K_t, (k, C)
        else:
            S = torch.bmm(Q.transpose(1, 2), K, out=bufs[0][:k])  # (k, C, C): Q^T K
            self.S = S
            self.diag = S.diagonal(dim1=1, dim2=2).clone()
        if self.fact:
            m = (A[:, :1] + A[:, -1:]) / 2  # (k, 1): the middle of each block's span
            self.a = torch.exp(A - m)  # (k, C): exp(A_t - m)
            self.b = torch.exp(m - A)  # exp(m - A_s)
            # M = tril_-1((Q a)^T (K b e)) + diag(g Q.K): scales on the small operands
            self.Qh = Q * self.a[:, None, :]
            self.Kh = K * (self.b * e)[:, None, :]
            M = torch.bmm(self.Qh.transpose(1, 2), self.Kh, out=bufs[1][:k]).tril_(-1)
        else:
            D = torch.sub(A[:, :, None], A[:, None, :], out=bufs[1][:k])
            self.D = D.clamp_(-FLOOR, 0).exp_().tril_(-1)  # exp(A_t - A_s), s < t
            W = torch.mul(self.D, e[:, None, :], out=bufs[2][:k])
            M = torch.mul(W, S, out=bufs[3][:k])
            self.W = W
        M.diagonal(dim1=1, dim2=2).copy_(g * self.diag)
        self.M = M


class _DecayedAttention(torch.autograd.Function):
    """The formula of the module docstring on flattened leading dimensions, a piece of
    ``PIECE_BYTES`` at a time (:func:`_pieces`); the backward recomputes each piece."""

    @staticmethod
    def forward(A, Q, K, V, e, g):
        *lead, N, C = Q.shape
        P = V.shape[-1]
        A2, Q2, K2, V2, e2, g2 = _flat(A, Q, K, V, e, g)
        y = V2.new_empty(V2.shape)
        pieces = _pieces(A2.shape[0], C, A2.element_size())
        bufs = [A2.new_empty(pieces[0][1], C, C) for _ in range(4)]
        for i0, i1 in pieces:
            p = _Piece(A2[i0:i1], Q2[i0:i1], K2[i0:i1], e2[i0:i1], g2[i0:i1], bufs)
            torch.bmm(p.M, V2[i0:i1], out=y[i0:i1])
        return y.view(*lead, C, P)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(*inputs)

    @staticmethod
    def vmap(info, in_dims, A, Q, K, V, e, g):
        """The vmapped dimension becomes one more leading dimension (blocks are independent)."""
        def first(x, d):
            return x.expand(info.batch_size, *x.shape) if d is None else x.movedim(d, 0)

        args = (first(x, d) for x, d in zip((A, Q, K, V, e, g), in_dims))
        return _DecayedAttention.apply(*args), 0

    @staticmethod
    def backward(ctx, gy):
        if gy is None:
            return (None,) * 6
        A, Q, K, V, e, g = ctx.saved_tensors
        needs = ctx.needs_input_grad
        *lead, N, C = Q.shape
        P = V.shape[-1]
        A2, Q2, K2, V2, e2, g2 = _flat(A, Q, K, V, e, g)
        gy2 = gy.reshape(-1, C, P)
        grads = [x.new_empty(x.shape) if need else None
                 for x, need in zip((A2, Q2, K2, V2, e2, g2), needs)]
        gA, gQ, gK, gV, ge, gg = grads
        pieces = _pieces(A2.shape[0], C, A2.element_size())
        bufs = [A2.new_empty(pieces[0][1], C, C) for _ in range(5)]
        for i0, i1 in pieces:
            k = i1 - i0
            Ak, Qk, Kk, ek, gk = A2[i0:i1], Q2[i0:i1], K2[i0:i1], e2[i0:i1], g2[i0:i1]
            p = _Piece(Ak, Qk, Kk, ek, gk, bufs)
            if gV is not None:
                torch.bmm(p.M.transpose(1, 2), gy2[i0:i1], out=gV[i0:i1])
            gM = torch.bmm(gy2[i0:i1], V2[i0:i1].transpose(1, 2), out=bufs[4][:k])  # (k, C, C)
            gdiag = gM.diagonal(dim1=1, dim2=2)  # dL/dM_tt
            if gg is not None:
                torch.mul(gdiag, p.diag, out=gg[i0:i1])
            gQK = gdiag * gk  # dL/d(Q_t . K_t) through the diagonal
            if p.fact:
                gM.tril_(-1)  # the strictly lower part, through Qh and Kh
                gQh = torch.bmm(p.Kh, gM.transpose(1, 2))  # (k, N, C)
                gKh = torch.bmm(p.Qh, gM)
                if gA is not None or ge is not None:
                    qa = (gQh * Qk).sum(1)  # (k, C): sum_n dL/dQh Q = dL/da / 1
                    kb = (gKh * Kk).sum(1)  # dL/d(b e) / 1 ... times K
                    if gA is not None:  # a = exp(A - m), b = exp(m - A) (m is a constant)
                        torch.sub(qa * p.a, kb * p.b * ek, out=gA[i0:i1])
                    if ge is not None:
                        torch.mul(kb, p.b, out=ge[i0:i1])
                if gQ is not None:
                    torch.addcmul(gQh.mul_(p.a[:, None, :]), Kk, gQK[:, None, :], out=gQ[i0:i1])
                if gK is not None:
                    torch.addcmul(gKh.mul_((p.b * ek)[:, None, :]), Qk, gQK[:, None, :],
                                  out=gK[i0:i1])
                continue
            gdiag.zero_()  # the strictly lower part; the diagonal is done
            if gA is not None or ge is not None:
                gWS = torch.mul(gM, p.S, out=p.S)  # dL/dW = dL/dM * S
                if gA is not None:  # G = dL/dW * W = dL/dM * M
                    G = torch.mul(gWS, p.W, out=p.M)
                    torch.sub(G.sum(-1), G.sum(-2), out=gA[i0:i1])
                if ge is not None:
                    torch.sum(torch.mul(gWS, p.D, out=p.D), -2, out=ge[i0:i1])
            if gQ is not None or gK is not None:
                gS = gM.mul_(p.W)
                gS.diagonal(dim1=1, dim2=2).copy_(gQK)
                if gQ is not None:
                    torch.bmm(Kk, gS.transpose(1, 2), out=gQ[i0:i1])
                if gK is not None:
                    torch.bmm(Qk, gS, out=gK[i0:i1])
        return tuple(None if gr is None else gr.view(x.shape)
                     for gr, x in zip(grads, (A, Q, K, V, e, g)))


def _flat(A, Q, K, V, e, g):
    """The inputs with their leading dimensions flattened into one."""
    N, C = Q.shape[-2:]
    return (A.reshape(-1, C), Q.reshape(-1, N, C), K.reshape(-1, N, C),
            V.reshape(-1, C, V.shape[-1]), e.reshape(-1, C), g.reshape(-1, C))
