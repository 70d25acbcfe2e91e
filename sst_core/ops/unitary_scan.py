"""AUSSM's recurrence fused: a diagonal unitary scan whose angles are a linear map of the
input, with a rank-one input term and a readout (:mod:`sst_core.models.unitary`), without
any ``(b, L, D, N)`` tensor outside the cache.

Inputs, for b sequences of length L, D channels and N complex states per channel: ``x``
(b, L, R), the angle map ``X`` (D N, R) and bias ``c`` (D, N), the input gains ``u`` (b,
L, D), the complex vectors ``B`` and ``C`` as real pairs ``(N, 2)`` = ``[Re, Im]``, an
optional initial state ``h0`` (b, D, N, 2) (zero when omitted) and an optional angle
scale ``s`` (b, L, D) (AUSSM's ``angle_times_dt``). For t = 1 .. L, elementwise in (b, D,
N)::

    theta_t = (x_t X^T).view(D, N) + c      (times s_t[:, :, None] if given)
    h_t = e^{i theta_t} h_{t-1} + u_t[:, :, None] B,     y_t = Re(sum_n C_n h_t[:, :, n])

Returns y (b, L, D) and the last state h_L (b, D, N, 2). The parameters ``X``, ``c``,
``B``, ``C`` may also carry a leading group dimension G dividing b: G models side by side,
the samples of model g being the g-th of G equal consecutive blocks of the batch (how the
``torch.func.vmap`` rule folds K stacked models into one call).

- ``unitary_scan_ref``: the maths above as torch ops around ``linear_scan_ref``.
- ``unitary_scan``: the same results as one ``autograd.Function``. The batch runs in
  blocks of about ``BLOCK_BYTES`` of complex state per thread squared, which stay in cache: in each
  block the angles are one matrix product, ``e^{i theta}`` is written as real cos and
  sin (complex ``exp`` is ~50x slower than a real one), the input term is one broadcast
  product, the recurrence runs in the C loops of :mod:`sst_core.ops.native` and the
  readout is one matrix-vector product. Only y and h_L leave the block; the backward
  recomputes a block's angles, transitions and states from the inputs (cheaper than
  writing them to memory and reading them back), then runs the reverse scan and the
  parameter gradients on it. Where the C loops are missing (or off the CPU) it runs as
  torch ops around ``linear_scan``; under ``torch.func.vmap`` a batching rule folds the
  vmapped dimension into the batch; under the other ``torch.func`` transforms the
  reference runs.

Backward (PyTorch's conjugate convention for complex gradients), with ``gy_t = dL/dy_t``,
``g_t`` the total ``dL/dh_t`` and ``a_t = e^{i theta_t}``::

    g_L = gy_L conj(C) + dL/dh_L,   g_t = gy_t conj(C) + conj(a_{t+1}) g_{t+1}
    dL/dtheta_t = Im(g_t conj(h_{t-1}) conj(a_t)),   then through the linear map
    dL/du_t = sum_n Re(g_t conj(B)),   dL/dB = sum_{b, t, d} u_t g_t
    dL/dC = sum_{b, t, d} gy_t conj(h_t),   dL/dh0 = conj(a_1) g_1
"""
from __future__ import annotations

import math

import torch

from sst_core.ops import native
from sst_core.ops.scan import linear_scan, linear_scan_ref, only_vmap

__all__ = ["unitary_scan", "unitary_scan_ref", "BLOCK_BYTES"]

# Bytes of complex state per batch block with one thread (a few such buffers are live in
# the backward); blocks grow with the square of torch's thread count, since every op of a
# block is split between the threads (on 2 cores: 512 KB best with one thread, 2 MB with
# two, 10-25% faster than either size with the other count).
BLOCK_BYTES = 1 << 19
NAMES = ("x", "X", "c", "u", "B", "C", "h0", "s")
PARAMS = ("X", "c", "B", "C")  # may carry a leading group dimension


def _check(x, X, c, u, B, C, h0, s):
    if x.dim() != 3 or x.shape[1] < 1:
        raise ValueError(f"x must have shape (b, L, R) with L >= 1, got {tuple(x.shape)}")
    b, L, R = x.shape
    if c.dim() not in (2, 3):
        raise ValueError(f"c must have shape (D, N) or (G, D, N), got {tuple(c.shape)}")
    D, N = c.shape[-2:]
    want = {"X": (D * N, R), "B": (N, 2), "C": (N, 2)}
    for name, p in (("X", X), ("B", B), ("C", C)):
        if p.dim() not in (2, 3) or tuple(p.shape[-2:]) != want[name]:
            raise ValueError(f"{name} must have shape {want[name]} (or with a leading group "
                             f"dimension), got {tuple(p.shape)}")
    for name, p in (("X", X), ("c", c), ("B", B), ("C", C)):
        if p.dim() == 3 and b % p.shape[0]:
            raise ValueError(f"{name}'s group count {p.shape[0]} must divide the batch {b}")
    for name, t in (("u", u), ("s", s)):
        if t is not None and tuple(t.shape) != (b, L, D):
            raise ValueError(f"{name} must have shape {(b, L, D)} (b, L, D), got {tuple(t.shape)}")
    if h0 is not None and tuple(h0.shape) != (b, D, N, 2):
        raise ValueError(f"h0 must have shape {(b, D, N, 2)} (b, D, N, 2), got "
                         f"{tuple(h0.shape)}")


def _per_sample(p: torch.Tensor, b: int) -> torch.Tensor:
    """A parameter as (1, ...), or (G, ...) repeated to one copy per sample (b, ...)."""
    if p.dim() == 2:
        return p[None]
    G = p.shape[0]
    return p[:, None].expand(G, b // G, *p.shape[1:]).reshape(b, *p.shape[1:])


def _composed(x, X, c, u, B, C, h0, s, scan):
    """The recurrence as torch ops around ``scan`` (linear_scan or linear_scan_ref)."""
    b, L, _ = x.shape
    D, N = c.shape[-2:]
    theta = (x @ _per_sample(X, b).transpose(-1, -2)).unflatten(-1, (D, N)) \
        + _per_sample(c, b)[:, None]  # (b, L, D, N)
    if s is not None:
        theta = theta * s[..., None]
    a = torch.complex(torch.cos(theta), torch.sin(theta))  # no complex exp
    Bc, Cc = (torch.view_as_complex(_per_sample(p, b).contiguous()) for p in (B, C))  # (b|1, N)
    h = scan(a, u[..., None] * Bc[:, None, None, :], None if h0 is None
             else torch.view_as_complex(h0.contiguous()))  # (b, L, D, N)
    y = (h * Cc[:, None, None, :]).real.sum(-1)  # (b, L, D)
    return y, torch.view_as_real(h[:, -1])


def unitary_scan_ref(x, X, c, u, B, C, h0=None, s=None):
    """Plain reference: y (b, L, D) and h_L (b, D, N, 2); autograd through it."""
    _check(x, X, c, u, B, C, h0, s)
    return _composed(x, X, c, u, B, C, h0, s, linear_scan_ref)


def unitary_scan(x, X, c, u, B, C, h0=None, s=None):
    """Fused ``unitary_scan_ref``: same signature and results."""
    _check(x, X, c, u, B, C, h0, s)
    if ((torch._C._are_functorch_transforms_active() and not only_vmap())
            or x.device.type != "cpu" or x.dtype not in (torch.float32, torch.float64)
            or native.library() is None):
        return _composed(x, X, c, u, B, C, h0, s, linear_scan)
    args = [None if t is None else t.to(x.dtype) for t in (x, X, c, u, B, C, h0, s)]
    keep = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in args)
    return _UnitaryScan.apply(*args, keep)[:2]


def _blocks(b: int, G: int, L: int, D: int, N: int, itemsize: int):
    """Batch blocks ``(j0, j1, g)`` of about BLOCK_BYTES (times the thread count squared)
    of complex state, never straddling two of the G models (each has b / G samples)."""
    threads = max(1, torch.get_num_threads())
    per = max(1, BLOCK_BYTES * threads ** 2 // (L * D * N * 2 * itemsize))  # samples per block
    bg = b // G
    m = math.ceil(bg / per)
    return [(g * bg + i * bg // m, g * bg + (i + 1) * bg // m, g)
            for g in range(G) for i in range(m)]


def _grouped(X, c, B, C):
    """The parameters with a leading group dimension (1 where shared), and G."""
    ps = [p if p.dim() == 3 else p[None] for p in (X, c, B, C)]
    return ps, max(p.shape[0] for p in ps)


def _pick(p: torch.Tensor, g: int) -> torch.Tensor:
    return p[g if p.shape[0] > 1 else 0]


def _angles(x, X3, c3, G: int, out: torch.Tensor) -> torch.Tensor:
    """theta = x X^T + c (before any scale) into out (b, L, D, N), one product per model."""
    b, L, R = x.shape
    bg = b // G
    for g in range(G):
        rows = slice(g * bg, (g + 1) * bg)
        torch.addmm(_pick(c3, g).view(1, -1), x[rows].reshape(bg * L, R), _pick(X3, g).T,
                    out=out[rows].view(bg * L, -1))
    return out


class _Block:
    """Transitions, input terms and states of one block (n samples), into buffers."""

    def __init__(self, bufs, theta, u, Bg, s, h0, lib):
        n = theta.shape[0]
        a, bu, h = (buf[:n] for buf in bufs[:3])
        if s is not None:  # theta * s (the backward needs both)
            theta = torch.mul(theta, s[..., None], out=bufs[3][:n])
        cs = torch.view_as_real(bu).view(2, *theta.shape)  # (the input term's buffer, for now)
        torch.cos(theta, out=cs[0])  # (contiguous, then interleaved: faster than strided)
        torch.sin(theta, out=cs[1])
        torch.complex(cs[0], cs[1], out=a)
        torch.mul(u[..., None, None], Bg, out=torch.view_as_real(bu))  # u B, (n, L, D, N)
        native.scan_forward(lib, a, bu, h0, h)
        self.a, self.bu, self.h = a, bu, h


class _UnitaryScan(torch.autograd.Function):
    """The fused scan of the module docstring, block by block (:func:`_blocks`). The
    angles are whole-batch matrix products (in the backward too: block-sized ones are
    several times slower at D = 64); with gradients they are kept for the backward."""

    @staticmethod
    def forward(x, X, c, u, B, C, h0, s, keep):
        b, L, _ = x.shape
        D, N = c.shape[-2:]
        (X3, c3, B3, C3), G = _grouped(X, c, B, C)
        Cv = torch.stack([C3[..., 0], -C3[..., 1]], -1).flatten(1)  # (G, 2N): Re(C h)
        lib = native.library()
        blocks = _blocks(b, G, L, D, N, x.element_size())
        k = max(j1 - j0 for j0, j1, _ in blocks)
        bufs = _buffers(x, k, L, D, N)
        theta = None
        if keep:
            theta = _angles(x, X3, c3, G, x.new_empty(b, L, D, N))
        else:
            theta_buf = x.new_empty(k, L, D, N)
        y = x.new_empty(b, L, D)
        h_last = x.new_empty(b, D, N, 2)
        for j0, j1, g in blocks:
            if keep:
                th = theta[j0:j1]
            else:  # block by block: no (b, L, D, N) tensor at all
                th = _angles(x[j0:j1], _pick(X3, g)[None], _pick(c3, g)[None], 1,
                             theta_buf[:j1 - j0])
            blk = _Block(bufs, th, u[j0:j1], _pick(B3, g), None if s is None else s[j0:j1],
                         _h0(h0, j0, j1), lib)
            hr = torch.view_as_real(blk.h)  # (n, L, D, N, 2)
            torch.mv(hr.view(-1, 2 * N), _pick(Cv, g), out=y[j0:j1].view(-1))
            h_last[j0:j1] = hr[:, -1]
        return y, h_last, theta

    @staticmethod
    def setup_context(ctx, inputs, output):
        theta = output[2]
        if theta is not None:
            ctx.mark_non_differentiable(theta)
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(*inputs[:-1], theta)

    @staticmethod
    def vmap(info, in_dims, x, X, c, u, B, C, h0, s, keep):
        """``torch.func.vmap`` (K stacked models, :mod:`sst_core.training.stacked`): the K
        copies are independent, so K is folded into the batch, ``(K, b, ...) -> (K b,
        ...)``, and a vmapped parameter ``(K, [G,] ...)`` becomes ``(K G, ...)``: K G models
        of the K b samples, in the same order. One call runs all K."""
        K = info.batch_size
        dims = dict(zip(NAMES, in_dims))
        args = dict(zip(NAMES, (x, X, c, u, B, C, h0, s)))

        def first(t, d):
            return t.expand(K, *t.shape) if d is None else t.movedim(d, 0)

        b = first(x, dims["x"]).shape[1]
        for name in ("x", "u", "h0", "s"):
            if args[name] is not None:
                t = first(args[name], dims[name])  # (K, b, ...)
                args[name] = t.reshape(K * b, *t.shape[2:])
        for name in PARAMS:  # each model's parameter has two dimensions
            t = args[name]
            if dims[name] is not None:
                t = first(t, dims[name])  # (K, [G,] ...)
                args[name] = t.reshape(-1, *t.shape[-2:])  # (K [G], ...)
            elif t.dim() == 3 and t.shape[0] > 1:  # G shared models: repeat for each copy
                args[name] = t.expand(K, *t.shape).reshape(-1, *t.shape[1:])
        # (the wrapper saw batched tensors, which need not show requires_grad)
        keep = keep or (torch.is_grad_enabled() and any(
            t is not None and t.requires_grad for t in args.values()))
        out = _UnitaryScan.apply(*(args[n] for n in NAMES), keep)
        out = tuple(None if t is None else t.view(K, b, *t.shape[1:]) for t in out)
        return out, tuple(None if t is None else 0 for t in out)

    @staticmethod
    def backward(ctx, gy, g_last, _):
        x, X, c, u, B, C, h0, s, theta = ctx.saved_tensors
        need = dict(zip(NAMES, ctx.needs_input_grad))
        b, L, R = x.shape
        D, N = c.shape[-2:]
        (X3, c3, B3, C3), G = _grouped(X, c, B, C)
        Cg = torch.stack([C3[..., 0], -C3[..., 1]], -1)  # (G, N, 2): conj(C)
        Bv = B3.flatten(1)  # (G, 2N): Re(g conj(B)) = g_re B_re + g_im B_im
        lib = native.library()
        need_theta = need["x"] or need["X"] or need["c"] or need["s"]
        g_theta = x.new_empty(b, L, D, N) if need_theta else None
        g_s = x.new_empty(b, L, D) if need["s"] else None
        g_u = x.new_empty(b, L, D) if need["u"] else None
        g_h0 = x.new_empty(b, D, N, 2) if need["h0"] else None
        g_B = x.new_zeros(G, 2 * N) if need["B"] else None  # sum u g, [re, im] pairs
        g_C = x.new_zeros(G, 2 * N) if need["C"] else None  # sum gy h, before conj
        if theta is None:  # (a forward that did not expect a backward)
            theta = _angles(x, X3, c3, G, x.new_empty(b, L, D, N))
        blocks = _blocks(b, G, L, D, N, x.element_size())
        bufs = _buffers(x, max(j1 - j0 for j0, j1, _ in blocks), L, D, N)
        go_buf, g_buf = (bufs[0].new_empty(bufs[0].shape) for _ in range(2))
        for j0, j1, grp in blocks:
            n = j1 - j0
            uk, sk, h0k = u[j0:j1], None if s is None else s[j0:j1], _h0(h0, j0, j1)
            blk = _Block(bufs, theta[j0:j1], uk, _pick(B3, grp), sk, h0k, lib)
            a, h, go, g = blk.a, blk.h, go_buf[:n], g_buf[:n]
            gor, hr = torch.view_as_real(go), torch.view_as_real(h)
            if gy is None:
                gor.zero_()
            else:  # dL/dh from y: gy conj(C)
                torch.mul(gy[j0:j1, :, :, None, None], _pick(Cg, grp), out=gor)
            if g_last is not None:
                gor[:, -1] += g_last[j0:j1]
            native.scan_backward(lib, a, h, h0k, go, g, None)
            gr = torch.view_as_real(g)
            if need_theta:  # Im(g conj(a h_{t-1})) = Im(g conj(h - u B)), via go
                gt = g_theta[j0:j1]
                torch.mul(g, blk.bu.sub_(h).conj_physical_(), out=go)  # g conj(u B - h) ..
                torch.neg(go.imag, out=gt)  # .. so Im(g conj(h - u B)) = -Im(that)
                if s is not None:  # theta = theta_pre * s
                    if g_s is not None:
                        torch.sum(gt * theta[j0:j1], -1, out=g_s[j0:j1])
                    gt.mul_(sk[..., None])
            if g_u is not None:
                torch.mv(gr.view(-1, 2 * N), _pick(Bv, grp), out=g_u[j0:j1].view(-1))
            if g_B is not None:
                g_B[grp].addmv_(gr.view(-1, 2 * N).T, uk.reshape(-1))
            if g_C is not None and gy is not None:
                g_C[grp].addmv_(hr.view(-1, 2 * N).T, gy[j0:j1].reshape(-1))
            if g_h0 is not None:  # conj(a_1) g_1
                g_h0[j0:j1] = torch.view_as_real(a[:, 0].conj() * g[:, 0])
        grads = {"s": g_s, "u": g_u, "h0": g_h0}
        if need_theta:  # through theta = x X^T + c, one product per model
            gt2 = g_theta.view(G, (b // G) * L, D * N)
            x2 = x.reshape(G, (b // G) * L, R)
            if need["x"]:
                grads["x"] = torch.bmm(gt2, X3.expand(G, *X3.shape[1:])).view(b, L, R)
            if need["X"]:
                gX = torch.bmm(gt2.transpose(1, 2), x2)  # (G, D N, R)
                grads["X"] = gX if X3.shape[0] == G else gX.sum(0, keepdim=True)
            if need["c"]:
                gc = gt2.sum(1).view(G, D, N)
                grads["c"] = gc if c3.shape[0] == G else gc.sum(0, keepdim=True)
        if g_B is not None:
            g_B = g_B.view(G, N, 2)
            grads["B"] = g_B if B3.shape[0] == G else g_B.sum(0, keepdim=True)
        if g_C is not None:
            g_C = (g_C.view(G, N, 2) * g_C.new_tensor([1.0, -1.0]))  # conj
            grads["C"] = g_C if C3.shape[0] == G else g_C.sum(0, keepdim=True)
        for name, p in (("X", X), ("c", c), ("B", B), ("C", C)):
            if grads.get(name) is not None and p.dim() == 2:
                grads[name] = grads[name][0]
        return tuple(grads.get(name) for name in NAMES) + (None,)


def _h0(h0, j0, j1):
    """The complex initial state of rows j0:j1, contiguous, or None."""
    return None if h0 is None else torch.view_as_complex(h0[j0:j1].contiguous())


def _buffers(x, k, L, D, N):
    """Block buffers: transitions, input terms, states (complex) and scaled angles."""
    cdtype = torch.complex64 if x.dtype == torch.float32 else torch.complex128
    return [x.new_empty(k, L, D, N, dtype=cdtype) for _ in range(3)] + [x.new_empty(k, L, D, N)]
