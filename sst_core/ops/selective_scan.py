"""Mamba's selective scan, fused: the outputs ``y`` without the ``(b, L, E, N)`` tensors.

Inputs, for a batch of b sequences of length L, E channels and N states per channel:
``dt`` and ``x`` of shape ``(b, L, E)``, ``A`` of shape ``(E, N)``, ``B`` and ``C`` of shape
``(b, L, N)``, an optional initial state ``h0`` of shape ``(b, E, N)`` (zero when
omitted). For t = 1 .. L, elementwise in (b, E, N)::

    a_t = exp(dt_t[:, :, None] A)            (Negative Mamba: a_t = 2 exp(dt_t A) - 1)
    h_t = a_t h_{t-1} + (dt_t x_t)[:, :, None] B_t[:, None, :],        h_0 = h0
    y_t = sum_n h_t[:, :, n] C_t[:, None, n]                            (b, E)

As in Mamba's ``selective_scan_fn``, the keywords ``dt_bias`` (E) and ``dt_softplus``
turn the given ``dt`` into ``softplus(dt + dt_bias)`` first, and ``D`` (E) and ``z``
(b, L, E) the output into ``(y_t + D x_t) SiLU(z_t)`` (what
:class:`~sst_core.models.selective.MambaLayer` needs around the recurrence). ``A`` may
also be ``(G, E, N)``, and then ``D`` and ``dt_bias`` ``(G, E)``, with G dividing b: G
models side by side, the samples of model g being the g-th of G equal consecutive blocks
of the batch (this is how the ``torch.func.vmap`` rules fold K stacked models into one
call).

- ``selective_scan_ref``: the per-step maths above in a loop; autograd differentiates it.
- ``selective_scan``: the same signature and results without any ``(b, L, E, N)``
  tensor, on one of two paths. On the CPU in float32 and float64 the C loops of
  :mod:`sst_core.ops.native_selective` run everything, the options included, in one call
  forward and one backward (samples, or channels of a small batch, split between
  ``torch.get_num_threads()`` threads; the forward keeps the state entering each chunk of
  ``T`` steps, ``T`` from ``NATIVE_CHUNK_BYTES``, and nothing under ``no_grad``; the
  backward recomputes each chunk from it). Elsewhere (CUDA, other dtypes, no C compiler,
  ``SST_NATIVE=0`` or :func:`sst_core.ops.native.disabled`) the torch path runs, the
  options as torch operations around one ``autograd.Function``. On CUDA (or with
  ``parallel=True``, or inside :func:`sst_core.ops.scan.parallel_scans`) the *parallel
  path* runs instead (:func:`_parallel`): ``a`` and ``B dt x`` for every step as
  ``(b, L, E, N)`` tensors, the recurrence by ``linear_scan``'s chunked Hillis-Steele scan
  (``parallel=True``: log2 of its chunk of steps in whole-tensor operations, then one
  carry per chunk), ``y`` one batched product; plain differentiable torch ops, so autograd
  gives the backward and every ``torch.func`` transform runs it, at the memory of those
  tensors (what a GPU has; the step-by-step paths are for the CPU, where one operation
  per step costs microseconds, not a kernel launch). The batch runs in blocks of samples and time in
  chunks of ``T`` steps, sized so that one ``(T, block, E, N)`` buffer has about
  ``CHUNK_BYTES`` with ``T >= MIN_STEPS`` (:func:`_plan`); inside a chunk ``a`` and
  ``B dt x`` are computed for all its steps at once, the recurrence runs step by step in
  place, and ``y`` is one batched product. The forward keeps only the state entering
  each chunk; the backward recomputes ``a`` and ``h`` of one chunk at a time from it, in
  reverse chunk order (recomputing measured as fast as keeping every state, at a
  fraction of the memory). Under ``torch.func.vmap`` (K stacked models) a batching rule
  folds K into the batch (and into A's model dimension); under the other ``torch.func``
  transforms the reference runs.

Backward, with ``gy_t = dL/dy_t`` (b, E) and ``gL = dL/dh_L`` (zero unless the final
state is an output that is used), ``g_t`` the total ``dL/dh_t``::

    g_L = gy_L C_L + gL,     g_t = gy_t[:, :, None] C_t[:, None, :] + a_{t+1} g_{t+1}
    dL/dh0  = a_1 g_1
    dL/dC_t = sum_e gy_t[:, e] h_t[:, e, :]
    dL/dB_t = sum_e (dt_t x_t)[:, e] g_t[:, e, :]
    w_t     = sum_n g_t[:, :, n] B_t[:, None, n]                 (= dL/d(dt_t x_t))
    z_t     = g_t h_{t-1} exp(dt_t A)       (Negative Mamba: 2 exp(dt_t A) = a_t + 1)
    dL/dx_t  = w_t dt_t,     dL/ddt_t = w_t x_t + sum_n z_t[:, :, n] A[None, :, n]
    dL/dA    = sum_{b, t} z_t dt_t[:, :, None]        (per model when A is (G, E, N))
"""
from __future__ import annotations

import math

import torch
from torch.autograd.function import once_differentiable
from torch.nn import functional as F

from sst_core.ops import native_selective
from sst_core.ops.scan import linear_scan, only_vmap, use_parallel

__all__ = ["selective_scan", "selective_scan_ref", "CHUNK_BYTES",
           "MIN_STEPS", "NATIVE_CHUNK_BYTES"]
# fold_batch and fold_models are public for the vmap rules of other ops (causal_conv), not
# ops of their own: __all__ lists this module's ops (the GPU check reads it)

# Bytes of one (T, block, E, N) chunk buffer; three are live in the backward. At the
# quick profile's sizes (batch 64 x E 32 x N 16, float32; and 16 models stacked) 512 KB
# to 4 MB time alike, smaller chunks lose to the per-op overhead (256 KB: 1.4x slower).
CHUNK_BYTES = 1 << 20
# Steps per chunk at least: larger batches run in blocks (_plan). With 16 models stacked,
# 8 beat 4 and 2 (fewer, larger blocks) by 5-15%.
MIN_STEPS = 8
# The C loops' chunk: the backward recomputes exp(dt A) and h for T steps of one sample
# (T x E x N, twice) in a per-thread buffer of about this size (L2-resident: 2 MB a core).
NATIVE_CHUNK_BYTES = 1 << 19


def _check(dt, A, x, B, C, h0, D=None, z=None, dt_bias=None):
    """Shapes (raising ValueError) and one common dtype; returns the promoted inputs."""
    if dt.dim() != 3 or dt.shape[1] < 1:
        raise ValueError(f"dt must have shape (b, L, E) with L >= 1, got {tuple(dt.shape)}")
    b, L, E = dt.shape
    if A.dim() not in (2, 3) or A.shape[-2] != E:
        raise ValueError(f"A must have shape (E, N) or (G, E, N) with E = {E}, "
                         f"got {tuple(A.shape)}")
    N = A.shape[-1]
    if A.dim() == 3 and b % A.shape[0]:
        raise ValueError(f"A's group count {A.shape[0]} must divide the batch {b}")
    if tuple(x.shape) != (b, L, E):
        raise ValueError(f"x must have shape {(b, L, E)} like dt, got {tuple(x.shape)}")
    for name, t in (("B", B), ("C", C)):
        if tuple(t.shape) != (b, L, N):
            raise ValueError(f"{name} must have shape {(b, L, N)} (b, L, N), got "
                             f"{tuple(t.shape)}")
    if h0 is not None and tuple(h0.shape) != (b, E, N):
        raise ValueError(f"h0 must have shape {(b, E, N)} (b, E, N), got {tuple(h0.shape)}")
    per_model = (E,) if A.dim() == 2 else (A.shape[0], E)
    for name, t in (("D", D), ("dt_bias", dt_bias)):
        if t is not None and tuple(t.shape) not in ((E,), per_model):
            raise ValueError(f"{name} must have shape {(E,)} or, with A of G models, "
                             f"{per_model}, got {tuple(t.shape)}")
    if z is not None and tuple(z.shape) != (b, L, E):
        raise ValueError(f"z must have shape {(b, L, E)} like dt, got {tuple(z.shape)}")
    ts = [dt, A, x, B, C, h0, D, z, dt_bias]
    dtype = dt.dtype
    for t in ts[1:]:
        if t is not None:
            dtype = torch.promote_types(dtype, t.dtype)
    return [None if t is None else t.to(dtype) for t in ts]


def _rows(p: torch.Tensor, b: int) -> torch.Tensor:
    """A per-channel parameter, (E) as is or (G, E) as one row per sample (b, 1, E)."""
    if p.dim() == 1:
        return p
    G = p.shape[0]
    return p[:, None].expand(G, b // G, p.shape[1]).reshape(b, 1, p.shape[1])


def _dt_in(dt, dt_bias, softplus):
    """softplus(dt + dt_bias), the parts asked for."""
    if dt_bias is not None:
        dt = dt + _rows(dt_bias, dt.shape[0])
    return F.softplus(dt) if softplus else dt


def _gate(y, x, D, z):
    """(y + D x) SiLU(z), the parts given."""
    if D is not None:
        y = y + _rows(D, y.shape[0]) * x
    return y * F.silu(z) if z is not None else y


def _per_sample(A: torch.Tensor, b: int) -> torch.Tensor:
    """A (E, N) as is, or (G, E, N) repeated to one copy per sample (b, E, N)."""
    if A.dim() == 2:
        return A
    G = A.shape[0]
    return A[:, None].expand(G, b // G, *A.shape[1:]).reshape(b, *A.shape[1:])


def selective_scan_ref(dt: torch.Tensor, A: torch.Tensor, x: torch.Tensor, B: torch.Tensor,
                       C: torch.Tensor, h0: torch.Tensor | None = None, negative: bool = False,
                       return_last: bool = False, *, D: torch.Tensor | None = None,
                       z: torch.Tensor | None = None, dt_bias: torch.Tensor | None = None,
                       dt_softplus: bool = False):
    """Plain reference: the recurrence of the module docstring step by step, autograd
    through it. Returns y (b, L, E), and the last state h_L (b, E, N) if ``return_last``."""
    dt, A, x, B, C, h0, D, z, dt_bias = _check(dt, A, x, B, C, h0, D, z, dt_bias)
    y, h = _ref_loop(_dt_in(dt, dt_bias, dt_softplus), A, x, B, C, h0, negative)
    y = _gate(y, x, D, z)
    return (y, h) if return_last else y


def _ref_loop(dt, A, x, B, C, h0, negative):
    b, L, E = dt.shape
    A = _per_sample(A, b)  # (E, N) or (b, E, N)
    h = dt.new_zeros(b, E, A.shape[-1]) if h0 is None else h0  # (b, E, N)
    ys = []
    for dt_t, x_t, B_t, C_t in zip(dt.unbind(1), x.unbind(1), B.unbind(1), C.unbind(1)):
        a_t = torch.exp(dt_t[..., None] * A)  # (b, E, N)
        if negative:
            a_t = 2 * a_t - 1
        h = a_t * h + (dt_t * x_t)[..., None] * B_t[:, None, :]  # (b, E, N)
        ys.append((h @ C_t[..., None])[..., 0])  # (b, E)
    return torch.stack(ys, 1), h  # (b, L, E), (b, E, N)


def selective_scan(dt: torch.Tensor, A: torch.Tensor, x: torch.Tensor, B: torch.Tensor,
                   C: torch.Tensor, h0: torch.Tensor | None = None, negative: bool = False,
                   return_last: bool = False, *, D: torch.Tensor | None = None,
                   z: torch.Tensor | None = None, dt_bias: torch.Tensor | None = None,
                   dt_softplus: bool = False, parallel: bool | None = None):
    """Fused selective scan; same signature and results as :func:`selective_scan_ref`
    (``parallel``: the path, None by device; module docstring)."""
    dt, A, x, B, C, h0, D, z, dt_bias = _check(dt, A, x, B, C, h0, D, z, dt_bias)
    if use_parallel(dt, parallel):
        y, h_last = _parallel(_dt_in(dt, dt_bias, dt_softplus), A, x, B, C, h0, negative)
        y = _gate(y, x, D, z)
        return (y, h_last) if return_last else y
    transformed = torch._C._are_functorch_transforms_active()
    if transformed and not only_vmap():
        return selective_scan_ref(dt, A, x, B, C, h0, negative, return_last, D=D, z=z,
                                  dt_bias=dt_bias, dt_softplus=dt_softplus)  # grad, jacrev
    # keep the chunk-entry states only where a backward may follow
    keep = torch.is_grad_enabled() and (transformed or any(
        t is not None and t.requires_grad for t in (dt, A, x, B, C, h0, D, z, dt_bias)))
    if _use_c(dt):
        y, h_last, _ = _NativeScan.apply(dt, A, x, B, C, h0, D, z, dt_bias, negative,
                                         dt_softplus, keep)
    else:
        y, h_last, _ = _SelectiveScan.apply(_dt_in(dt, dt_bias, dt_softplus), A, x, B, C, h0,
                                            negative, keep)
        y = _gate(y, x, D, z)
    return (y, h_last) if return_last else y


def _parallel(dt, A, x, B, C, h0, negative):
    """The parallel path (module docstring): y (b, L, E) and h_L (b, E, N)."""
    b = dt.shape[0]
    A_ = _per_sample(A, b)  # (E, N) or (b, E, N)
    a = torch.exp(dt[..., None] * (A_ if A_.dim() == 2 else A_[:, None]))  # (b, L, E, N)
    if negative:
        a = 2 * a - 1
    bu = (dt * x)[..., None] * B[:, :, None, :]  # (b, L, E, N)
    h = linear_scan(a, bu, h0, parallel=True)  # (b, L, E, N)
    return (h @ C[..., None])[..., 0], h[:, -1]  # (b, L, E), (b, E, N)


def _plan(b: int, L: int, G: int, E: int, N: int, itemsize: int):
    """Batch blocks and steps per chunk.

    A block is a run of samples that never straddles a model: a part of one model's
    samples or whole models, ``(j0, j1, g0, g1)`` for samples ``j0:j1`` and models
    ``g0:g1``. It has at most ``CHUNK_BYTES / MIN_STEPS`` bytes of state per step, so that
    chunks of ``T >= MIN_STEPS`` steps fill buffers of about ``CHUNK_BYTES`` (K stacked
    models make the batch K times larger: without blocks a chunk would shrink to one step,
    and every step of the state would be a chunk start to keep). Returns the blocks, the
    largest block size and T.
    """
    sample = E * N * itemsize  # bytes of one sample's state
    want = max(1, CHUNK_BYTES // (MIN_STEPS * sample))  # samples per block
    bg = b // G  # samples per model
    blocks = []
    if want >= bg:  # whole models per block
        k = want // bg
        for g0 in range(0, G, k):
            g1 = min(G, g0 + k)
            blocks.append((g0 * bg, g1 * bg, g0, g1))
    else:  # each model's samples in m near-equal blocks
        m = math.ceil(bg / want)
        for g in range(G):
            blocks += [(g * bg + i * bg // m, g * bg + (i + 1) * bg // m, g, g + 1)
                       for i in range(m)]
    bb = max(j1 - j0 for j0, j1, _, _ in blocks)
    T = max(1, min(L, CHUNK_BYTES // (bb * sample)))
    n = math.ceil(L / T)  # chunks of equal size (the last may be shorter by < n steps)
    return blocks, bb, math.ceil(L / n)


def _time_major(*ts: torch.Tensor) -> list[torch.Tensor]:
    """(b, L, ...) -> contiguous (L, b, ...): every step and every chunk a contiguous block."""
    return [t.transpose(0, 1).contiguous() for t in ts]


def _decay(a: torch.Tensor, dt: torch.Tensor, A: torch.Tensor, negative: bool) -> None:
    """a_t of one chunk into the buffer ``a`` (T, b, E, N), from dt (T, b, E) and A
    (g, 1, E, N) for g models of b / g samples each."""
    T, b, E, N = a.shape
    g = A.shape[0]
    torch.mul(dt.view(T, g, b // g, E, 1), A, out=a.view(T, g, b // g, E, N))
    a.exp_()  # (T, b, E, N), as _Discretize computes it
    if negative:  # 2 a - 1 in one pass (2 a is exact: the same rounding as a * 2 - 1)
        torch.add(a.new_full((), -1.0), a, alpha=2, out=a)


def _fill_chunk(a: torch.Tensor, h: torch.Tensor, Aa: list, H: list, dt: torch.Tensor,
                dtx: torch.Tensor, B: torch.Tensor, A: torch.Tensor,
                h_in: torch.Tensor | None, negative: bool) -> None:
    """a_t and h_t of one chunk into the buffers ``a``, ``h`` (T, b, E, N) (their steps
    ``Aa``, ``H``: lists of (b, E, N)), from dt, dt x (T, b, E), B (T, b, N), A
    (g, 1, E, N) and the state before the chunk (b, E, N)."""
    _decay(a, dt, A, negative)
    torch.mul(dtx[..., None], B[:, :, None, :], out=h)  # dt x B^T, (T, b, E, N)
    if h_in is not None:
        torch.addcmul(H[0], Aa[0], h_in, out=H[0])
    for t in range(1, len(H)):
        torch.addcmul(H[t], Aa[t], H[t - 1], out=H[t])  # h_t = a_t h_{t-1} + bu_t


class _Buffers:
    """``n`` flat buffers for chunks of up to T steps of up to ``bb`` samples. ``views(k)``
    cuts a contiguous (T, k, E, N) from each, with its steps (``unbind``, about 2 us a
    step, once per block size rather than once per chunk); a chunk of Tc steps is the
    first Tc of them."""

    def __init__(self, n: int, T: int, bb: int, E: int, N: int, like: torch.Tensor):
        self.flat = [like.new_empty(T * bb * E * N) for _ in range(n)]
        self.shape = (T, E, N)
        self.cache = {}

    def views(self, k: int) -> list[tuple[torch.Tensor, tuple]]:
        if k not in self.cache:
            T, E, N = self.shape
            full = [f[:T * k * E * N].view(T, k, E, N) for f in self.flat]
            self.cache[k] = [(v, v.unbind(0)) for v in full]
        return self.cache[k]


def _torch_forward(dt, A, x, B, C, h0, negative, keep):
    """The torch path's forward, block by block (:func:`_plan`), each block chunk by
    chunk; without ``keep``, one (b, E, N) buffer instead of every chunk's entry state."""
    b, L, E = dt.shape
    N = A.shape[-1]
    A_ = (A if A.dim() == 3 else A[None])[:, None]  # (G, 1, E, N)
    blocks, bb, T = _plan(b, L, A_.shape[0], E, N, dt.element_size())
    n = math.ceil(L / T)
    bufs = _Buffers(2, T, bb, E, N, dt)
    dtx = dt * x  # (b, L, E)
    y = dt.new_empty(b, L, E)
    h_last = dt.new_empty(b, E, N)
    # the state entering each chunk (without keep: only the current one)
    starts = dt.new_empty(n if keep else 1, b, E, N)
    for j0, j1, g0, g1 in blocks:
        k = j1 - j0
        dt_, dtx_, B_, C_ = _time_major(dt[j0:j1], dtx[j0:j1], B[j0:j1], C[j0:j1])
        y_ = dt.new_empty(L, k, E)  # (L, k, E)
        h_in = None if h0 is None else h0[j0:j1]  # (k, E, N)
        (a_full, a_steps), (h_full, h_steps) = bufs.views(k)
        for i in range(n):
            s, e = i * T, min(L, (i + 1) * T)
            a, h = a_full[:e - s], h_full[:e - s]  # (T, k, E, N)
            start = starts[i if keep else 0, j0:j1]
            if h_in is None:
                start.zero_()
            else:  # (h_in may be the buffer's last step, which the chunk overwrites)
                h_in = start.copy_(h_in)
            _fill_chunk(a, h, a_steps[:e - s], h_steps[:e - s], dt_[s:e], dtx_[s:e],
                        B_[s:e], A_[g0:g1], h_in, negative)
            torch.bmm(C_[s:e].view(-1, 1, N), h.view(-1, E, N).transpose(1, 2),
                      out=y_[s:e].view(-1, 1, E))  # y_t = (h_t C_t)^T, (T k, 1, E)
            h_in = h[-1]
        y[j0:j1] = y_.transpose(0, 1)
        h_last[j0:j1] = h_in
    return y, h_last, (starts if keep else starts[:0])


def _torch_backward(dt, A, x, B, C, h0, starts, grad_y, grad_last, negative, needs):
    """The torch path's backward: each block's chunks in reverse, recomputed from their
    entry states; ``needs``: which of the six inputs want a gradient."""
    need_dt, need_A, need_x, need_B, need_C, need_h0 = needs
    b, L, E = dt.shape
    N = A.shape[-1]
    A_ = (A if A.dim() == 3 else A[None])[:, None]  # (G, 1, E, N)
    blocks, bb, T = _plan(b, L, A_.shape[0], E, N, dt.element_size())
    n = starts.shape[0]
    if grad_y is None:
        grad_y = dt.new_zeros(b, L, E)
    dtx = dt * x  # (b, L, E)
    bufs = _Buffers(3, T, bb, E, N, dt)
    ones = dt.new_ones(N)
    grad_dt = dt.new_empty(b, L, E) if need_dt else None
    grad_x = dt.new_empty(b, L, E) if need_x else None
    grad_B = dt.new_empty(b, L, N) if need_B else None
    grad_C = dt.new_empty(b, L, N) if need_C else None
    grad_A = A_.new_zeros(A_.shape) if need_A else None  # (G, 1, E, N)
    grad_h0 = dt.new_empty(b, E, N) if need_h0 else None
    for j0, j1, g0, g1 in blocks:
        k, m = j1 - j0, g1 - g0  # samples, models
        dt_, x_, dtx_, B_, C_, gy = _time_major(*(t[j0:j1] for t in (dt, x, dtx, B, C,
                                                                       grad_y)))
        # per block, time major: dL/dC, dL/dB (L, k, N); w = dL/d(dt x), dL/ddt via a
        gC = dt.new_empty(L, k, N) if need_C else None
        gB = dt.new_empty(L, k, N) if need_B else None
        w = dt.new_empty(L, k, E) if (need_dt or need_x) else None
        gdt = dt.new_empty(L, k, E) if need_dt else None
        carry = None if grad_last is None else grad_last[j0:j1]  # dL/dh, end of chunk
        (a_full, Aa), (h_full, H), (g_full, Gs) = bufs.views(k)
        for i in reversed(range(n)):
            s, e = i * T, min(L, (i + 1) * T)
            Tc = e - s
            a, h, g = a_full[:Tc], h_full[:Tc], g_full[:Tc]  # (T, k, E, N)
            h_in = starts[i, j0:j1] if (i > 0 or h0 is not None) else None  # (k, E, N)
            _fill_chunk(a, h, Aa[:Tc], H[:Tc], dt_[s:e], dtx_[s:e], B_[s:e], A_[g0:g1],
                        h_in, negative)
            if need_C:  # dL/dC_t = gy_t^T h_t, (T k, 1, N)
                torch.bmm(gy[s:e].view(-1, 1, E), h.view(-1, E, N),
                          out=gC[s:e].view(-1, 1, N))
            # g_t = gy_t C_t^T + a_{t+1} g_{t+1}, in reverse
            torch.mul(gy[s:e, :, :, None], C_[s:e, :, None, :], out=g)
            if carry is not None:
                Gs[Tc - 1].add_(carry)
            for t in range(Tc - 2, -1, -1):
                torch.addcmul(Gs[t], Aa[t + 1], Gs[t + 1], out=Gs[t])
            carry = Aa[0] * Gs[0]  # dL/dh_{s}: into the previous chunk, or dL/dh0
            if w is not None:  # w_t = (g_t B_t)^T, (T k, 1, E)
                torch.bmm(B_[s:e].view(-1, 1, N), g.view(-1, E, N).transpose(1, 2),
                          out=w[s:e].view(-1, 1, E))
            if need_B:  # dL/dB_t = (dt_t x_t)^T g_t, (T k, 1, N)
                torch.bmm(dtx_[s:e].view(-1, 1, E), g.view(-1, E, N),
                          out=gB[s:e].view(-1, 1, N))
            if not (need_dt or need_A):
                continue
            # z_t = g_t h_{t-1} a'_t into g, a' = exp(dt A) (a, or a + 1 if negative)
            g[1:].mul_(h[:-1])
            if h_in is None:
                g[0].zero_()
            else:
                g[0].mul_(h_in)
            if negative:
                torch.addcmul(g, g, a, out=g)
            else:
                g.mul_(a)
            z = g.view(Tc, m, k // m, E, N)
            if need_dt:  # sum_n z_t A, (T, k, E) (a matrix-vector product with ones
                # sums the N-wide rows about twice as fast as sum(-1))
                torch.mul(z, A_[g0:g1], out=a.view(Tc, m, k // m, E, N))
                torch.mv(a.view(-1, N), ones, out=gdt[s:e].view(-1))
            if need_A:  # sum_{t, samples} z_t dt_t, (m, 1, E, N)
                prod = torch.mul(z, dt_[s:e].view(Tc, m, k // m, E, 1),
                                 out=a.view(Tc, m, k // m, E, N))
                grad_A[g0:g1] += prod.view(Tc, m, 1, k // m, E * N).sum((0, 3)).view(
                    m, 1, E, N)
        # back to batch major, (k, L, .)
        if need_dt:  # dL/ddt = w x + (through a)
            torch.addcmul(gdt, w, x_, out=grad_dt[j0:j1].transpose(0, 1))
        if need_x:
            torch.mul(w, dt_, out=grad_x[j0:j1].transpose(0, 1))
        if need_B:
            grad_B[j0:j1] = gB.transpose(0, 1)
        if need_C:
            grad_C[j0:j1] = gC.transpose(0, 1)
        if need_h0:
            grad_h0[j0:j1] = carry
    if need_A:
        grad_A = grad_A.view(A.shape)
    return grad_dt, grad_A, grad_x, grad_B, grad_C, grad_h0


def fold_batch(t: torch.Tensor | None, d: int | None, K: int) -> torch.Tensor | None:
    """A vmapped (b, ...) input (vmapped dimension ``d``, None: shared) as (K b, ...)."""
    if t is None:
        return None
    t = t.expand(K, *t.shape) if d is None else t.movedim(d, 0)
    return t.reshape(K * t.shape[1], *t.shape[2:])


def fold_models(p: torch.Tensor | None, d: int | None, K: int, base: int
                ) -> torch.Tensor | None:
    """A vmapped parameter whose one-model shape has ``base`` dimensions, as K G models
    ``(K G, ...)`` of the K b samples :func:`fold_batch` makes: one per copy, or G per copy
    (a shared one of G models is repeated for each copy; a shared one of a single model
    stays as it is, used by all)."""
    if p is None:
        return None
    if d is None:
        return p if p.dim() == base else p.expand(K, *p.shape).reshape(-1, *p.shape[1:])
    p = p.movedim(d, 0)  # (K, [G,] ...)
    return p.reshape(-1, *p.shape[-base:])


class _SelectiveScan(torch.autograd.Function):
    """The torch path (module docstring), without the options (applied around it).
    Outputs: y (b, L, E), the last state (b, E, N) and, not differentiable, the state
    entering each chunk (n_chunks, b, E, N), which is all the backward keeps besides the
    inputs (empty without ``keep``: no gradient wanted). Both passes run block by block
    (:func:`_plan`), each block chunk by chunk."""

    @staticmethod
    def forward(dt, A, x, B, C, h0, negative, keep):
        return _torch_forward(dt, A, x, B, C, h0, negative, keep)

    @staticmethod
    def setup_context(ctx, inputs, output):
        dt, A, x, B, C, h0, negative, keep = inputs
        ctx.negative, ctx.keep = negative, keep
        ctx.mark_non_differentiable(output[2])
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(dt, A, x, B, C, h0, output[2])

    @staticmethod
    def vmap(info, in_dims, dt, A, x, B, C, h0, negative, keep):
        """``torch.func.vmap`` (K stacked models, :mod:`sst_core.training.stacked`): the K
        copies are independent, so K is folded into the batch, ``(K, b, ...) -> (K b,
        ...)``, and a vmapped A ``(K, [G,] E, N)`` becomes ``(K G, E, N)``: K G models of
        the K b samples, in the same order. One call runs all K; the outputs are unfolded
        again."""
        K = info.batch_size
        d = dict(zip(("dt", "A", "x", "B", "C", "h0"), in_dims))
        dt_ = fold_batch(dt, d["dt"], K)
        b = dt_.shape[0] // K
        y, h_last, starts = _SelectiveScan.apply(
            dt_, fold_models(A, d["A"], K, 2), fold_batch(x, d["x"], K),
            fold_batch(B, d["B"], K), fold_batch(C, d["C"], K), fold_batch(h0, d["h0"], K),
            negative, keep)
        return ((y.view(K, b, *y.shape[1:]), h_last.view(K, b, *h_last.shape[1:]),
                 starts.view(starts.shape[0], K, b, *starts.shape[2:])), (0, 0, 1))

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_y, grad_last, _):
        if not ctx.keep:
            raise RuntimeError("selective_scan ran without keeping its states (no input "
                               "required grad when it was called); cannot differentiate")
        dt, A, x, B, C, h0, starts = ctx.saved_tensors
        grads = _torch_backward(dt, A, x, B, C, h0, starts, grad_y, grad_last, ctx.negative,
                                ctx.needs_input_grad[:6])
        return (*grads, None, None)


def _use_c(dt: torch.Tensor) -> bool:
    """Whether the C loops run: CPU, float32 or float64, and the library available."""
    return (dt.device.type == "cpu" and dt.dtype in native_selective.SUFFIX
            and native_selective.library() is not None)


def _native_chunk(L: int, E: int, N: int, itemsize: int) -> int:
    """Steps per chunk of the C loops (module docstring): the forward keeps ceil(L / T)
    states of each sample, the backward's buffer holds 2 T steps of one."""
    return max(1, min(L, NATIVE_CHUNK_BYTES // (2 * E * N * itemsize)))


def _models_of(A: torch.Tensor) -> int:
    return A.shape[0] if A.dim() == 3 else 1


def _models_of_row(p: torch.Tensor) -> int:
    return p.shape[0] if p.dim() == 2 else 1


def _native_inputs(dt, A, x, B, C, D, z, dt_bias):
    """The C loops' layouts: At (G, N, E); D, dt_bias (G, E); the rest contiguous (z: its
    channels)."""
    G, E = _models_of(A), dt.shape[2]
    At = A.reshape(G, E, -1).transpose(1, 2).contiguous()
    D, dt_bias = (None if p is None else p.expand(G, E).contiguous() if p.dim() == 1
                  else p.contiguous() for p in (D, dt_bias))
    z = None if z is None else (z if z.stride(-1) == 1 else z.contiguous())
    return [t.contiguous() for t in (dt, x, B, C)] + [At, D, z, dt_bias]


class _NativeScan(torch.autograd.Function):
    """The C loops (:mod:`sst_core.ops.native_selective`), the options inside. Outputs
    as :class:`_SelectiveScan`'s; the chunk-entry states are (ceil(L / T), b, N, E)."""

    @staticmethod
    def forward(dt, A, x, B, C, h0, D, z, dt_bias, negative, softplus, keep):
        b, L, E = dt.shape
        N = A.shape[-1]
        dt, x, B, C, At, D, z, dt_bias = _native_inputs(dt, A, x, B, C, D, z, dt_bias)
        T = _native_chunk(L, E, N, dt.element_size())
        out, h_last = dt.new_empty(b, L, E), dt.new_empty(b, E, N)
        starts = dt.new_empty(-(-L // T) if keep else 0, b, N, E)
        native_selective.forward(native_selective.library(), dt, x, At, B, C,
                                 None if h0 is None else h0.contiguous(), dt_bias, D, z, out,
                                 h_last, starts if keep else None, T, negative, softplus)
        return out, h_last, starts

    @staticmethod
    def setup_context(ctx, inputs, output):
        dt, A, x, B, C, h0, D, z, dt_bias, negative, softplus, keep = inputs
        ctx.negative, ctx.softplus, ctx.keep = negative, softplus, keep
        ctx.mark_non_differentiable(output[2])
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(dt, A, x, B, C, D, z, dt_bias, output[2])

    @staticmethod
    def vmap(info, in_dims, dt, A, x, B, C, h0, D, z, dt_bias, negative, softplus, keep):
        """As :meth:`_SelectiveScan.vmap`; D and dt_bias fold like A."""
        K = info.batch_size
        d = dict(zip(("dt", "A", "x", "B", "C", "h0", "D", "z", "dt_bias"), in_dims))
        dt_ = fold_batch(dt, d["dt"], K)
        b = dt_.shape[0] // K
        out, h_last, starts = _NativeScan.apply(
            dt_, fold_models(A, d["A"], K, 2), fold_batch(x, d["x"], K),
            fold_batch(B, d["B"], K), fold_batch(C, d["C"], K), fold_batch(h0, d["h0"], K),
            fold_models(D, d["D"], K, 1), fold_batch(z, d["z"], K),
            fold_models(dt_bias, d["dt_bias"], K, 1), negative, softplus, keep)
        return ((out.view(K, b, *out.shape[1:]), h_last.view(K, b, *h_last.shape[1:]),
                 starts.view(starts.shape[0], K, b, *starts.shape[2:])), (0, 0, 1))

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out, grad_last, _):
        if not ctx.keep:
            raise RuntimeError("selective_scan ran without keeping its states (no input "
                               "required grad when it was called); cannot differentiate")
        dt, A, x, B, C, D, z, dt_bias, starts = ctx.saved_tensors
        needs = ctx.needs_input_grad
        b, L, E = dt.shape
        N, G = A.shape[-1], _models_of(A)
        D_given, bias_given = D, dt_bias
        dt, x, B, C, At, D, z, dt_bias = _native_inputs(dt, A, x, B, C, D, z, dt_bias)
        grad_out = dt.new_zeros(b, L, E) if grad_out is None else grad_out.contiguous()
        g = native_selective.backward(
            native_selective.library(), dt, x, At, B, C, dt_bias, D, z, starts, grad_out,
            None if grad_last is None else grad_last.contiguous(), needs[5],
            _native_chunk(L, E, N, dt.element_size()), ctx.negative, ctx.softplus)

        def per_model(grad, models):  # per sample (b, ...) -> per model (models, ...)
            return grad.view(models, b // models, *grad.shape[1:]).sum(1)

        grad_A = per_model(g["A"], G).transpose(1, 2).reshape(A.shape)
        grad_D, grad_bias = (None if p is None else per_model(gp, _models_of_row(p)).view(p.shape)
                             for p, gp in ((D_given, g["D"]), (bias_given, g["bias"])))
        grads = (g["dt"], grad_A, g["x"], g["B"], g["C"], g["h0"], grad_D, g["z"], grad_bias)
        return tuple(t if need else None for t, need in zip(grads, needs[:9])) + (None,) * 3
