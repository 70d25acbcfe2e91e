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
- ``unitary_scan``: the same results as one ``autograd.Function``. The angles are one
  matrix product per model, laid out ``(b, L, N, D)`` (channels innermost); the
  recurrence, cos and sin, the input term and the readout run in the C loops of
  :mod:`sst_core.ops.native_unitary`, which keep one
  sample's state in cache, so no complex or ``(b, L, D, N)`` tensor but the angles and
  their gradient exists. With gradients the forward keeps the angles and the state entering
  every chunk of ``T`` steps (:func:`chunk_steps`); the backward recomputes a chunk's
  states from there. Without gradients the batch runs in blocks of about ``BLOCK_BYTES`` of
  angles. Where the C loops are missing (or off the CPU) it runs as torch ops around
  ``linear_scan``; under ``torch.func.vmap`` a batching rule folds the vmapped dimension
  into the batch; under the other ``torch.func`` transforms the reference runs. On CUDA
  (or with ``parallel=True``, or inside :func:`sst_core.ops.scan.parallel_scans`) the
  same torch ops run around ``linear_scan``'s chunked parallel scan (``parallel=True``),
  under every transform: the parallel path, with ``(b, L, D, N)`` complex tensors.

Backward (PyTorch's conjugate convention for complex gradients), with ``gy_t = dL/dy_t``,
``g_t`` the total ``dL/dh_t`` and ``a_t = e^{i theta_t}``::

    g_L = gy_L conj(C) + dL/dh_L,   g_t = gy_t conj(C) + conj(a_{t+1}) g_{t+1}
    dL/dtheta_t = Im(g_t conj(h_{t-1}) conj(a_t)),   then through the linear map
    dL/du_t = sum_n Re(g_t conj(B)),   dL/dB = sum_{b, t, d} u_t g_t
    dL/dC = sum_{b, t, d} gy_t conj(h_t),   dL/dh0 = conj(a_1) g_1
"""
from __future__ import annotations

import math
from functools import partial

import torch

from sst_core.ops import native_unitary
from sst_core.ops.scan import linear_scan, linear_scan_ref, only_vmap, use_parallel

__all__ = ["unitary_scan", "unitary_scan_ref", "BLOCK_BYTES"]

# Without gradients: bytes of angles per batch block (of one model).
BLOCK_BYTES = 1 << 24
# With gradients: bytes of the backward's per-thread buffer (one state's chunk of steps).
CHUNK_BYTES = 1 << 15
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


def unitary_scan(x, X, c, u, B, C, h0=None, s=None, *, parallel: bool | None = None):
    """Fused ``unitary_scan_ref``: same signature and results (``parallel``: the path,
    None by device; module docstring)."""
    _check(x, X, c, u, B, C, h0, s)
    if use_parallel(x, parallel):
        return _composed(x, X, c, u, B, C, h0, s, partial(linear_scan, parallel=True))
    if ((torch._C._are_functorch_transforms_active() and not only_vmap())
            or x.device.type != "cpu" or x.dtype not in (torch.float32, torch.float64)
            or native_unitary.library() is None):  # (on CUDA with parallel=False: the loops)
        return _composed(x, X, c, u, B, C, h0, s, partial(linear_scan, parallel=False))
    args = [None if t is None else t.to(x.dtype) for t in (x, X, c, u, B, C, h0, s)]
    keep = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in args)
    return _UnitaryScan.apply(*args, keep)[:2]


def chunk_steps(L: int, N: int, D: int, itemsize: int) -> int:
    """Steps per chunk of the backward: its buffer (the state, cos and sin of one of the N
    states, 4 D reals a step) about CHUNK_BYTES."""
    return max(1, min(L, CHUNK_BYTES // (4 * D * itemsize)))


def _blocks(b: int, G: int, L: int, D: int, N: int, itemsize: int):
    """Batch blocks ``(j0, j1, g)`` of about BLOCK_BYTES of angles, never straddling two of
    the G models (each has b / G samples)."""
    per = max(1, BLOCK_BYTES // (L * D * N * itemsize))  # samples per block
    bg = b // G
    m = math.ceil(bg / per)
    return [(g * bg + i * bg // m, g * bg + (i + 1) * bg // m, g)
            for g in range(G) for i in range(m)]


def _grouped(X, c, B, C):
    """The parameters with a leading group dimension (1 where shared), and G."""
    ps = [p if p.dim() == 3 else p[None] for p in (X, c, B, C)]
    return ps, max(p.shape[0] for p in ps)


def _channels_last(X3, c3):
    """The angle map and bias with the channels innermost: (G|1, N D, R) and (G|1, N D)."""
    Gx, DN, R = X3.shape
    D, N = c3.shape[-2:]
    return (X3.view(Gx, D, N, R).transpose(1, 2).reshape(Gx, DN, R),
            c3.transpose(1, 2).reshape(c3.shape[0], DN))


def _angles(x, Xp, cp, G: int) -> torch.Tensor:
    """theta = x X^T + c (before any scale) as (b, L, N D), the channels innermost, one
    product per model (Xp, cp from :func:`_channels_last`, with 1 or G rows)."""
    b, L, R = x.shape
    DN = Xp.shape[1]
    out = torch.baddbmm(cp.expand(G, DN)[:, None], x.reshape(G, (b // G) * L, R),
                        Xp.expand(G, DN, R).transpose(1, 2))  # (G, b/G L, N D)
    return out.view(b, L, DN)


def _per_group(p: torch.Tensor, G: int) -> torch.Tensor:
    """A (1|G, N, 2) parameter as a contiguous (G, N, 2)."""
    return p.expand(G, *p.shape[1:]).contiguous()


class _UnitaryScan(torch.autograd.Function):
    """The fused scan of the module docstring. Outputs y, h_L and, for the backward (not
    differentiable), the angles (b, L, N, D) and the chunk starts, both None without
    gradients."""

    @staticmethod
    def forward(x, X, c, u, B, C, h0, s, keep):
        b, L, _ = x.shape
        D, N = c.shape[-2:]
        (X3, c3, B3, C3), G = _grouped(X, c, B, C)
        Xp, cp = _channels_last(X3, c3)
        Bg, Cg = _per_group(B3, G), _per_group(C3, G)
        u = u.contiguous()
        s = None if s is None else s.contiguous()
        h0p = None if h0 is None else h0.permute(0, 2, 3, 1).contiguous()  # (b, N, 2, D)
        lib = native_unitary.library()
        T = chunk_steps(L, N, D, x.element_size())
        y, h_last = x.new_empty(b, L, D), x.new_empty(b, N, 2, D)
        theta = starts = None
        if keep:
            theta = _angles(x, Xp, cp, G).view(b, L, N, D)
            starts = x.new_empty(math.ceil(L / T), b, N, 2, D)
            native_unitary.forward(lib, theta, u, s, Bg, Cg, h0p, y, h_last,
                                             starts, T)
        else:  # block by block: no (b, L, N, D) tensor of the whole batch
            for j0, j1, g in _blocks(b, G, L, D, N, x.element_size()):
                rows = slice(j0, j1)
                th = _angles(x[rows], _pick(Xp, g)[None], _pick(cp, g)[None], 1)
                native_unitary.forward(
                    lib, th.view(j1 - j0, L, N, D), u[rows], None if s is None else s[rows],
                    Bg[g:g + 1], Cg[g:g + 1], None if h0p is None else h0p[rows], y[rows],
                    h_last[rows], None, T)
        return y, h_last.permute(0, 3, 1, 2).contiguous(), theta, starts

    @staticmethod
    def setup_context(ctx, inputs, output):
        theta, starts = output[2:]
        for t in (theta, starts):
            if t is not None:
                ctx.mark_non_differentiable(t)
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(*inputs[:-1], theta, starts)

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
        y, h_last, theta, starts = _UnitaryScan.apply(*(args[n] for n in NAMES), keep)
        out = (y.view(K, b, *y.shape[1:]), h_last.view(K, b, *h_last.shape[1:]),
               None if theta is None else theta.view(K, b, *theta.shape[1:]),
               None if starts is None else starts.view(starts.shape[0], K, b,
                                                       *starts.shape[2:]))
        return out, (0, 0, None if theta is None else 0, None if starts is None else 1)

    @staticmethod
    def backward(ctx, gy, g_last, _theta, _starts):
        x, X, c, u, B, C, h0, s, theta, starts = ctx.saved_tensors
        need = dict(zip(NAMES, ctx.needs_input_grad))
        b, L, R = x.shape
        D, N = c.shape[-2:]
        (X3, c3, B3, C3), G = _grouped(X, c, B, C)
        Xp, cp = _channels_last(X3, c3)
        Bg, Cg = _per_group(B3, G), _per_group(C3, G)
        u = u.contiguous()
        s = None if s is None else s.contiguous()
        lib = native_unitary.library()
        T = chunk_steps(L, N, D, x.element_size())
        if theta is None:  # (a forward that did not expect a backward): redo it, keeping
            theta = _angles(x, Xp, cp, G).view(b, L, N, D)
            starts = x.new_empty(math.ceil(L / T), b, N, 2, D)
            native_unitary.forward(
                lib, theta, u, s, Bg, Cg,
                None if h0 is None else h0.permute(0, 2, 3, 1).contiguous(),
                x.new_empty(b, L, D), x.new_empty(b, N, 2, D), starts, T)
        gy = x.new_zeros(b, L, D) if gy is None else gy.contiguous()
        if g_last is not None:
            g_last = g_last.permute(0, 2, 3, 1).contiguous()  # (b, N, 2, D)
        got = native_unitary.backward(lib, theta, u, s, Bg, Cg, starts, gy, g_last,
                                                need["h0"], T)
        grads = {"u": got["u"], "s": got["s"],
                 "h0": None if got["h0"] is None else got["h0"].permute(0, 3, 1, 2)}
        for name, p3 in (("B", B3), ("C", C3)):  # per sample -> per model
            gp = got[name].view(G, b // G, N, 2).sum(1)
            grads[name] = gp if p3.shape[0] == G else gp.sum(0, keepdim=True)
        if need["x"] or need["X"] or need["c"]:  # through theta = x X^T + c, per model
            gt2 = got["theta"].view(G, (b // G) * L, N * D)
            if need["x"]:
                grads["x"] = torch.bmm(gt2, Xp.expand(G, *Xp.shape[1:])).view(b, L, R)
            if need["X"]:
                gXp = torch.bmm(gt2.transpose(1, 2), x.reshape(G, (b // G) * L, R))
                gX = gXp.view(G, N, D, R).transpose(1, 2).reshape(G, D * N, R)
                grads["X"] = gX if X3.shape[0] == G else gX.sum(0, keepdim=True)
            if need["c"]:
                gc = gt2.sum(1).view(G, N, D).transpose(1, 2)
                grads["c"] = gc if c3.shape[0] == G else gc.sum(0, keepdim=True)
        for name, p in (("X", X), ("c", c), ("B", B), ("C", C)):
            if grads.get(name) is not None and p.dim() == 2:
                grads[name] = grads[name][0]
        return tuple(grads.get(name) if need[name] else None for name in NAMES) + (None,)


def _pick(p: torch.Tensor, g: int) -> torch.Tensor:
    return p[g if p.shape[0] > 1 else 0]
