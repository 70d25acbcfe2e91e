"""The dense RNN scan with the identity nonlinearity, ``h_t = g_t * (W_h h_{t-1}) + c_t``.

The cells of ``sst_core.models.cells`` with ``phi = identity`` split each step into the
part that reads the input, precomputed for every step by one matmul,

    c_t = W_x x_t + b,        q_t = W_g x_t + b_g     (the gate's input part),

and the part that reads the state. With ``a_t = W_h h_{t-1}`` (shapes: ``h`` (b, d),
``W_h`` (d, d), ``U_g`` (d, d)):

=========  ==================================  ===================================
gate       g_t                                 h_t
=========  ==================================  ===================================
none       1                                   c_t + a_t
token      s_t = sigma(q_t)                    c_t + s_t * a_t
state      s_t = sigma(q_t + U_g h_{t-1})      c_t + s_t * a_t
=========  ==================================  ===================================

for t = 1 .. L from ``h_0 = h0`` (zero when omitted).

- ``rnn_scan_ref``: the plain per-step loop of autograd ops.
- ``rnn_scan``: the same maths and results; a loop into preallocated buffers with a
  hand-written backward (``_RNNScan``). Under ``no_grad`` (or when no input requires a
  gradient) it runs the forward loop alone and saves nothing. Under ``torch.func``
  transforms (vmap, grad, jacrev) it runs ``rnn_scan_ref``: a custom
  ``autograd.Function`` with a hand-written backward has no batching rule.

Both take ``c``, ``q`` of shape (b, L, d) and ``h0`` (b, d), and return every state
``h_1 .. h_L`` as one contiguous (b, L, d) tensor.

Backward. Let ``G_t = dL/dh_t`` be the gradient that reaches ``h_t`` from outside the scan
and ``e_t`` the total one, through every later step. Going backwards from ``e_L = G_L``,
with ``s' = s (1 - s)`` the sigmoid's derivative (row vectors, ``a_t = h_{t-1} W_h^T``)::

    da_t = e_t * g_t                          (g_t = 1 without a gate)
    dp_t = e_t * a_t * s'_t                   (the gate's pre-activation; gated only)
    e_{t-1} = G_{t-1} + da_t W_h [+ dp_t U_g]     ([..] only for the state gate)

and then, as whole tensors after the loop (sums over t and the batch)::

    dL/dc_t = e_t,   dL/dq_t = dp_t,   dL/dh0 = da_1 W_h [+ dp_1 U_g]
    dL/dW_h = sum_t da_t^T h_{t-1},    dL/dU_g = sum_t dp_t^T h_{t-1}

The weight gradients are one matmul of the stacked ``(b L, 2d)`` matrix ``[dp, da]`` with
the stacked states (``_weight_grad``), not one per step. For the state gate each step is
one matmul with ``[W_h; U_g]`` (forward) or ``[U_g; W_h]`` (backward).

Cost (CPU, batch 256, L = 60, d = 64-128): the matmuls dominate, and the per-step
elementwise work is cheapest done inside the loop on the step's (b, d) tensors, which
are still in cache, rather than as whole (b, L, d) passes before or after it (those run
at memory speed, and fresh buffers of that size fault their pages in). So the forward
writes what the backward multiplies ``e_t`` by as it goes, and the backward does one
product and one matmul per step. Against ``rnn_scan_ref`` most of the time saved is per-op
overhead and autograd bookkeeping; the FLOPs are the same.
"""
from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

__all__ = ["rnn_scan", "rnn_scan_ref", "GATES"]

GATES = ("none", "token", "state")


def _check(gate: str, c: torch.Tensor, W_h: torch.Tensor, q: torch.Tensor | None,
           U_g: torch.Tensor | None, h0: torch.Tensor | None) -> None:
    if gate not in GATES:
        raise ValueError(f"unknown gate {gate!r}; allowed: {', '.join(GATES)}")
    if c.dim() != 3 or c.shape[1] < 1:
        raise ValueError(f"c must have shape (batch, L, d) with L >= 1, got {tuple(c.shape)}")
    b, L, d = c.shape
    if tuple(W_h.shape) != (d, d):
        raise ValueError(f"W_h must have shape {(d, d)}, got {tuple(W_h.shape)}")
    if (q is None) != (gate == "none"):
        raise ValueError(f"gate {gate!r} {'takes no' if gate == 'none' else 'needs a'} "
                         "gate input q")
    if q is not None and q.shape != c.shape:
        raise ValueError(f"q must have the shape of c {tuple(c.shape)}, got {tuple(q.shape)}")
    if (U_g is None) != (gate != "state"):
        raise ValueError(f"U_g is needed by the state gate and only by it (gate {gate!r})")
    if U_g is not None and tuple(U_g.shape) != (d, d):
        raise ValueError(f"U_g must have shape {(d, d)}, got {tuple(U_g.shape)}")
    if h0 is not None and tuple(h0.shape) != (b, d):
        raise ValueError(f"h0 must have shape {(b, d)}, got {tuple(h0.shape)}")


def rnn_scan_ref(gate: str, c: torch.Tensor, W_h: torch.Tensor, q: torch.Tensor | None = None,
                 U_g: torch.Tensor | None = None, h0: torch.Tensor | None = None
                 ) -> torch.Tensor:
    """Plain reference: one step of autograd ops at a time; returns (b, L, d).

    (``unbind`` rather than ``c[:, t]``: the backward of each index op would write a
    full-size zero tensor, making the reference quadratic in L.)
    """
    _check(gate, c, W_h, q, U_g, h0)
    h = c.new_zeros(c.shape[0], c.shape[2]) if h0 is None else h0  # (b, d)
    qs = q.unbind(1) if q is not None else [None] * c.shape[1]
    hs = []
    for c_t, q_t in zip(c.unbind(1), qs):
        a = h @ W_h.t()  # (b, d)
        if gate == "none":
            h = c_t + a
        else:
            p = q_t if gate == "token" else q_t + h @ U_g.t()  # (b, d)
            h = c_t + torch.sigmoid(p) * a
        hs.append(h)
    return torch.stack(hs, 1)  # (b, L, d)


def rnn_scan(gate: str, c: torch.Tensor, W_h: torch.Tensor, q: torch.Tensor | None = None,
             U_g: torch.Tensor | None = None, h0: torch.Tensor | None = None) -> torch.Tensor:
    """Fast scan; same signature and results as ``rnn_scan_ref``. Returns (b, L, d)."""
    _check(gate, c, W_h, q, U_g, h0)
    if torch._C._are_functorch_transforms_active():  # torch.func (vmap, grad) of a scan
        return rnn_scan_ref(gate, c, W_h, q, U_g, h0)
    tensors = [x for x in (c, W_h, q, U_g, h0) if x is not None]
    if torch.is_grad_enabled() and any(x.requires_grad for x in tensors):
        return _RNNScan.apply(gate, c, W_h, q, U_g, h0)
    return _forward_no_grad(gate, c, W_h, q, U_g, h0)


def _forward_no_grad(gate, c, W_h, q, U_g, h0) -> torch.Tensor:
    """The forward loop alone: nothing saved, one step's products in a reused buffer."""
    b, L, d = c.shape
    out = torch.empty_like(c, memory_format=torch.contiguous_format)  # (b, L, d)
    outs, cs = out.unbind(1), c.unbind(1)  # (b, d) each; unbind: cheaper than out[:, t]
    h = c.new_zeros(b, d) if h0 is None else h0  # (b, d)
    if gate == "none":
        Wt = W_h.t()
        for t in range(L):
            h = torch.addmm(cs[t], h, Wt, out=outs[t])  # (b, d)
        return out
    state = gate == "state"
    Wt = (torch.cat([W_h, U_g]) if state else W_h).t()  # (d, 2d) or (d, d)
    z = c.new_empty(b, 2 * d)  # [a, U_g h] (token: [a, .]), then [a, s]
    a, s = z[:, :d], z[:, d:]
    for t, q_t in enumerate(q.unbind(1)):
        torch.mm(h, Wt, out=z if state else a)
        if state:
            s.add_(q_t).sigmoid_()
        else:
            torch.sigmoid(q_t, out=s)
        h = torch.addcmul(cs[t], s, a, out=outs[t])  # (b, d)
    return out


def _weight_grad(dZ: torch.Tensor, out: torch.Tensor, h0: torch.Tensor | None
                 ) -> torch.Tensor:
    """``sum_{i, t} dZ[i, t]^T h_{t-1}[i]``: (b, L, k), states (b, L, d) -> (k, d).

    One matmul without copying the states: in the flattened (b L, .) matrices, row r of
    ``dZ`` meets row r - 1 of the states, which is ``h_{t-1}`` for every t >= 1; at
    t = 0 it met the last state of the previous sequence, and is corrected to ``h0``
    by two (b, .) products.
    """
    dW = dZ.flatten(0, 1)[1:].t() @ out.flatten(0, 1)[:-1]  # (k, d)
    dW.sub_(dZ[1:, 0].t() @ out[:-1, -1])
    if h0 is not None:
        dW.addmm_(dZ[:, 0].t(), h0)
    return dW


class _RNNScan(torch.autograd.Function):
    """The forward loop, saving per step what the backward multiplies ``e_t`` by, and the
    reverse loop.

    Gated, the forward keeps a (b, L, 2d) buffer ``Z``: step t's slot receives
    ``[a_t, U_g h_{t-1}]`` from one matmul with ``[W_h; U_g]`` (token gate: ``a_t`` alone),
    then ``s_t`` in its second half and, once ``h_t`` is out, ``a_t s'_t`` in its first:
    the backward's ``[dp_t, da_t] = e_t * [a_t s'_t, s_t]`` is then one product, and
    ``e_{t-1}`` one matmul with ``[U_g; W_h]`` (token: ``da_t W_h``). Token and state gate
    share this layout, so each sigmoid runs on the same (b, d) slices: with ``U_g = 0``
    they give the same bits (the token/state pair of ``models.cells`` starts out equal;
    a sigmoid of the whole (b, L, d) tensor at once rounds differently).
    """

    @staticmethod
    def forward(ctx, gate, c, W_h, q, U_g, h0):
        b, L, d = c.shape
        out = torch.empty_like(c, memory_format=torch.contiguous_format)  # (b, L, d)
        outs, cs = out.unbind(1), c.unbind(1)  # (b, d) each
        h = c.new_zeros(b, d) if h0 is None else h0  # (b, d)
        ctx.gate = gate
        if gate == "none":
            Wt = W_h.t()
            for t in range(L):
                h = torch.addmm(cs[t], h, Wt, out=outs[t])  # (b, d)
            ctx.save_for_backward(W_h, out, h0, None)
            return out
        state = gate == "state"
        Wt = (torch.cat([W_h, U_g]) if state else W_h).t()  # (d, 2d) or (d, d)
        Z = c.new_empty(b, L, 2 * d)
        Zs, As, Ss = Z.unbind(1), Z[..., :d].unbind(1), Z[..., d:].unbind(1)
        sigmoid_backward = torch.ops.aten.sigmoid_backward.grad_input
        for t, q_t in enumerate(q.unbind(1)):
            torch.mm(h, Wt, out=Zs[t] if state else As[t])  # [a_t, U_g h_{t-1}] or a_t
            if state:
                s = Ss[t].add_(q_t).sigmoid_()  # s_t: (b, d)
            else:
                s = torch.sigmoid(q_t, out=Ss[t])
            h = torch.addcmul(cs[t], s, As[t], out=outs[t])  # (b, d)
            sigmoid_backward(As[t], s, grad_input=As[t])  # a_t s'_t
        ctx.save_for_backward(torch.cat([U_g, W_h]) if state else W_h, out, h0, Z)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, G):
        gate = ctx.gate
        b, L, d = G.shape
        need_c, need_W, need_q, need_U, need_h0 = ctx.needs_input_grad[1:6]
        W, out, h0, Z = ctx.saved_tensors  # W: W_h, or [U_g; W_h] for the state gate
        E = torch.empty_like(G, memory_format=torch.contiguous_format)  # e_t = total dL/dh_t
        Es, Gs = E.unbind(1), G.unbind(1)  # (b, d) each
        Es[L - 1].copy_(Gs[L - 1])
        if gate == "none":
            for t in range(L - 1, 0, -1):
                torch.addmm(Gs[t - 1], Es[t], W, out=Es[t - 1])  # (b, d)
            dW_rows = E  # what multiplied W in the forward: da_t = e_t
        else:
            dZ = torch.empty_like(Z)  # [dp_t, da_t]: (b, L, 2d)
            dZs, Zs = dZ.view(b, L, 2, d).unbind(1), Z.view(b, L, 2, d).unbind(1)
            Es_ = E[:, :, None].unbind(1)  # (b, 1, d) each
            # what multiplied W in the forward: [dp_t, da_t] (state) or da_t (token)
            dW_rows = dZ if gate == "state" else dZ[..., d:]  # (b, L, 2d) or (b, L, d)
            dWs = dW_rows.unbind(1)
            for t in range(L - 1, 0, -1):
                torch.mul(Es_[t], Zs[t], out=dZs[t])  # (b, 2, d)
                torch.addmm(Gs[t - 1], dWs[t], W, out=Es[t - 1])  # (b, d)
            torch.mul(Es_[0], Zs[0], out=dZs[0])
        grad_q = grad_W = grad_U = grad_h0 = None
        if need_q:
            grad_q = dZ[..., :d]  # dp: (b, L, d)
        if need_W or need_U:
            dW = _weight_grad(dW_rows, out, h0)  # (2d, d) or (d, d)
            grad_W, grad_U = dW.split(d)[::-1] if gate == "state" else (dW, None)
        if need_h0 and h0 is not None:
            grad_h0 = dW_rows[:, 0] @ W  # (b, d)
        return (None, E if need_c else None, grad_W if need_W else None, grad_q,
                grad_U if need_U else None, grad_h0)
