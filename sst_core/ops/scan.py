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
  recurrences). The loops run in C (:mod:`sst_core.ops.native`: the whole recurrence in
  one call, rows split between threads, ``dL/da`` written during the reverse pass) when
  a and b share a dtype and a C compiler is at hand; otherwise as torch ops, one per
  step, while a helper thread has the kernel map the output's pages (``_Prefault``).
  Under ``torch.func.vmap`` (K stacked models) a batching rule folds the vmapped
  dimension into the batch and runs one scan for all K; under the other ``torch.func``
  transforms (grad, jacrev) the reference loop runs. On CUDA it is a chunked scan: a
  Hillis-Steele scan inside chunks of ``CHUNK`` steps and a sequential carry between
  chunks (no cumulative products over the whole length, which underflow, and no
  divisions), plain differentiable torch ops, so every ``torch.func`` transform runs it
  too.

The path follows the device: ``parallel=None`` (the default) takes the chunked scan on
CUDA and the loops elsewhere; ``parallel=True`` / ``False`` picks one on any device, and
inside :func:`parallel_scans` every scan of :mod:`sst_core.ops` that has a parallel path
takes it (:func:`use_parallel`): how the tests run the GPU's path on the CPU. The
selective and unitary scans take the same keyword.

The backward pass is the same recurrence run in reverse with the conjugate transition
(PyTorch's complex gradients are conjugate Wirtinger derivatives, so ``dL/dx`` of
``y = a x`` is ``conj(a) dL/dy``)::

    g_L = dL/dh_L,   g_t = dL/dh_t + conj(a_{t+1}) g_{t+1}
    dL/db_t = g_t,   dL/da_t = g_t conj(h_{t-1}),   dL/dh0 = conj(a_1) g_1

summed over the dimensions in which ``a`` (or ``b``) was broadcast.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading

import torch
from torch.autograd.function import once_differentiable

from sst_core.ops import native

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


def linear_scan(a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None = None, *,
                parallel: bool | None = None) -> torch.Tensor:
    """Fast ``h_t = a_t * h_{t-1} + b_t``; same signature and results as ``linear_scan_ref``
    (``parallel``: the path, module docstring)."""
    a, b, h0, shape = _prepare(a, b, h0)
    if use_parallel(b, parallel):
        return _chunked_scan(a, b, h0, shape)
    if torch._C._are_functorch_transforms_active() and not only_vmap():
        return linear_scan_ref(a, b, h0)  # torch.func grad / jacrev of a scan
    return _SequentialScan.apply(a, b, h0)


_PARALLEL = {"forced": False}  # inside parallel_scans()


@contextlib.contextmanager
def parallel_scans():
    """Inside the block every scan of :mod:`sst_core.ops` with a parallel path (the linear,
    selective and unitary scans) takes it on every device, unless a call says
    ``parallel=False``: the path they take on CUDA, run on the CPU (tests, benchmarks)."""
    before = _PARALLEL["forced"]
    _PARALLEL["forced"] = True
    try:
        yield
    finally:
        _PARALLEL["forced"] = before


def use_parallel(x: torch.Tensor, parallel: bool | None) -> bool:
    """Whether a scan on ``x`` takes its parallel path: ``parallel`` when given (True or
    False), else on CUDA or inside :func:`parallel_scans`."""
    if parallel is not None and not isinstance(parallel, bool):
        raise ValueError(f"parallel must be None (by device), True or False, got {parallel!r}")
    if parallel is not None:
        return parallel
    return x.is_cuda or _PARALLEL["forced"]


def only_vmap() -> bool:
    """Whether every active ``torch.func`` transform is a ``vmap`` (which the CPU scan
    handles with its batching rule, ``_SequentialScan.vmap``)."""
    try:
        from torch._C._functorch import TransformType
        from torch._functorch.pyfunctorch import retrieve_all_functorch_interpreters
    except ImportError:  # a torch without these internals: take the plain loop
        return False
    return all(i.key() == TransformType.Vmap for i in retrieve_all_functorch_interpreters())


def _reduce(grad: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Sum ``grad`` over the dimensions where an input of ``shape`` was broadcast."""
    dims = [i for i, (n, m) in enumerate(zip(shape, grad.shape)) if n == 1 and m != 1]
    return grad.sum(dims, keepdim=True) if dims else grad


# Elements per block of the complex dL/da pass, conj(h) into a reused buffer and one
# multiply: 2^21 (8-16 MB) stays in the last-level cache, and each op is still one large
# streaming (multi-threaded) op.
_BLOCK_ELEMS = 1 << 21


class _SequentialScan(torch.autograd.Function):
    """CPU scan: a loop into a preallocated output, and the reverse loop as its backward.

    Every per-step op works on one time slice ``(b, ...)`` of the ``(b, L, ...)`` tensors;
    the slices come from ``unbind(1)`` once per call (each ``x[:, t]`` inside the loop
    costs about 2 us of Python, a quarter of a step at 8 x 2048 channels). Only the truly
    sequential work runs step by step, reading its operands straight from memory;
    ``dL/da = g conj(h_{t-1})`` runs after the loop as one multiply (complex: in blocks of
    ``_BLOCK_ELEMS`` elements, conj(h) resolved into a cached buffer, not into a second
    full-size tensor). While a loop runs, ``_Prefault`` maps the pages of its output.
    """

    @staticmethod
    def forward(a, b, h0):
        shape = torch.broadcast_shapes(a.shape, b.shape)
        out = torch.empty(shape, dtype=b.dtype, device=b.device)  # (b, L, ...)
        lib = _native(a, b, h0, shape)
        if lib is not None:
            native.scan_forward(lib, _flat(a, shape), _flat(b, shape), _flat(h0), out)
            return out
        prefault = _Prefault([(out, False)])
        try:
            A, B, H = a.unbind(1), b.expand(shape).unbind(1), out.unbind(1)
            if h0 is None:
                H[0].copy_(B[0])
            else:
                torch.addcmul(B[0], A[0], h0, out=H[0])
            for t in range(1, shape[1]):
                torch.addcmul(B[t], A[t], H[t - 1], out=H[t])
        finally:
            prefault.join()
        return out

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, b, h0 = inputs
        ctx.b_shape = b.shape
        ctx.save_for_backward(a, output, h0)

    @staticmethod
    def vmap(info, in_dims, a, b, h0):
        """``torch.func.vmap`` of the scan (K stacked models, :mod:`sst_core.training.stacked`):
        the K copies are independent scans, so the vmapped dimension is folded into the
        batch dimension (``(K, B, L, ...) -> (K B, L, ...)``, contiguous as stacked) and
        one scan runs all K; the output is unfolded again, vmapped dimension 0."""
        K = info.batch_size

        def first(x, d):  # (K, batch, L, ...) (or (K, batch, ...) for h0)
            return x.expand(K, *x.shape) if d is None else x.movedim(d, 0)

        a, b = first(a, in_dims[0]), first(b, in_dims[1])
        n_b = max(a.shape[1], b.shape[1])  # a or b may broadcast along the batch
        a = a.expand(K, n_b, *a.shape[2:]).reshape(K * n_b, *a.shape[2:])
        b = b.expand(K, n_b, *b.shape[2:]).reshape(K * n_b, *b.shape[2:])
        if h0 is not None:
            h0 = first(h0, in_dims[2])  # (K, batch, ...)
            h0 = h0.reshape(K * n_b, *h0.shape[2:])
        out = _SequentialScan.apply(a, b, h0)  # (K B, L, ...)
        return out.view(K, n_b, *out.shape[1:]), 0

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        a, out, h0 = ctx.saved_tensors
        g = torch.empty_like(out)  # g_t = dL/dh_t through every later step
        grad_a = torch.empty_like(out) if ctx.needs_input_grad[0] else None
        lib = _native(a, out, h0, out.shape)
        if lib is not None:
            native.scan_backward(lib, _flat(a, out.shape), out, _flat(h0), _flat(grad_out),
                                 g, grad_a)
        else:
            # the loop writes g backwards in time, grad_a comes after it
            prefault = _Prefault([(g, True)] + ([(grad_a, False)] if grad_a is not None
                                                else []))
            try:
                _reverse_loop(a, grad_out, g)
                if grad_a is not None:
                    _grad_a(g, out, h0, grad_a)
            finally:
                prefault.join()
        grad_b = grad_h0 = None
        if grad_a is not None:
            grad_a = _reduce(grad_a, a.shape)
        if ctx.needs_input_grad[1]:
            grad_b = _reduce(g, ctx.b_shape)
        if ctx.needs_input_grad[2]:
            grad_h0 = a[:, 0].conj() * g[:, 0]  # (b, ...)
        return grad_a, grad_b, grad_h0


def _native(a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None, shape: torch.Size):
    """The C library when it can run this scan (CPU, a, b and h0 of one supported dtype,
    at least one step and row), else None (the torch loop runs). A transition that
    broadcasts (one decay per head) is expanded to the full shape first: one more
    full-size tensor, which the backward's ``dL/da`` has before its reduction anyway."""
    if (a.device.type != "cpu" or a.dtype != b.dtype or a.dtype not in native.SUFFIX
            or 0 in shape
            or (h0 is not None and (h0.dtype != a.dtype or h0.shape != shape[:1] + shape[2:]))):
        return None
    return native.library()


def _flat(x: torch.Tensor | None, shape: torch.Size | None = None) -> torch.Tensor | None:
    """x (expanded to ``shape``) as plain contiguous memory, conjugate and negative views
    resolved, for the C loops."""
    if x is None:
        return None
    if shape is not None:
        x = x.expand(shape)
    return x.resolve_conj().resolve_neg().contiguous()


def _reverse_loop(a: torch.Tensor, grad_out: torch.Tensor, g: torch.Tensor) -> None:
    """``g_t = grad_out_t + conj(a_{t+1}) g_{t+1}`` into ``g``, from t = L down to 1."""
    L = g.shape[1]
    A, G, GO = a.unbind(1), g.unbind(1), grad_out.unbind(1)
    G[L - 1].copy_(GO[L - 1])
    if not g.is_complex():
        for t in range(L - 2, -1, -1):
            torch.addcmul(GO[t], A[t + 1], G[t + 1], out=G[t])
        return
    ac = a.new_empty(A[0].shape)  # conj(a_{t+1}); a lazy a.conj() would allocate every step
    for t in range(L - 2, -1, -1):
        torch.addcmul(GO[t], torch.conj_physical(A[t + 1], out=ac), G[t + 1], out=G[t])


def _grad_a(g: torch.Tensor, out: torch.Tensor, h0: torch.Tensor | None,
            grad_a: torch.Tensor) -> None:
    """``dL/da_t = g_t conj(h_{t-1})`` into ``grad_a`` (full shape, not yet reduced)."""
    L = g.shape[1]
    if not g.is_complex():
        torch.mul(g[:, 1:], out[:, :-1], out=grad_a[:, 1:])
    elif L > 1:  # conj(h) a block at a time, not into a second full-size tensor
        n = _block_steps(out.shape, L - 1)
        buf = out.new_empty((out.shape[0], n, *out.shape[2:]))
        for s in range(1, L, n):
            e = min(L, s + n)
            hc = torch.conj_physical(out[:, s - 1:e - 1], out=buf[:, :e - s])
            torch.mul(g[:, s:e], hc, out=grad_a[:, s:e])
    if h0 is None:
        grad_a[:, 0] = 0
    else:
        torch.mul(g[:, 0], h0.conj(), out=grad_a[:, 0])


class _Prefault:
    """Map the pages of freshly allocated outputs on another core while this one computes.

    The first write to each page of a new tensor traps into the kernel, which zeroes the
    page: on the 2-core benchmark machine that costs the single-threaded per-step loop
    about as much as the loop's own writes (forward at 8 x 1000 x 2048 complex: 64 ms
    fresh, 38 ms on mapped pages). A helper thread asks the kernel for the pages first
    (``madvise(MADV_POPULATE_WRITE)``, Linux >= 5.14, which maps missing pages and never
    changes the contents of a present one, so it is safe beside the loop's writes), in
    the order the loop reaches them: a slab of time steps at a time, every batch row.
    It runs only where torch may use more than one thread, for tensors of at least
    ``_PREFAULT_MIN_BYTES``, and gives up silently wherever madvise is unavailable.
    """

    def __init__(self, plans: list[tuple[torch.Tensor, bool]]):
        ranges = []
        for x, backwards in plans:
            if x.is_contiguous() and x.device.type == "cpu" and x.dim() >= 2:
                ranges += _page_order(x, backwards)
        self.thread = None
        if ranges and torch.get_num_threads() > 1 and _madvise() is not None:
            self.thread = threading.Thread(target=_populate, args=(ranges,), daemon=True)
            self.thread.start()

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join()


_PREFAULT_MIN_BYTES = 1 << 23  # 8 MB: below that, starting a thread costs more than it saves
_MADV_POPULATE_WRITE = 23
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_madvise_fn = None  # libc.madvise once looked up; False where there is none


def _madvise():
    """libc's ``madvise`` (Linux), or None."""
    global _madvise_fn
    if _madvise_fn is None:
        _madvise_fn = False
        if sys.platform.startswith("linux"):
            try:
                fn = ctypes.CDLL(None, use_errno=True).madvise
                fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
                fn.restype = ctypes.c_int
                _madvise_fn = fn
            except (OSError, AttributeError):
                pass
    return _madvise_fn or None


def _page_order(x: torch.Tensor, backwards: bool) -> list[tuple[int, int]]:
    """Address ranges of the contiguous ``(b, L, ...)`` tensor ``x`` in the order a loop
    over time (forwards or backwards) first writes them: ~2 MB of each batch row in turn."""
    nbytes = x.numel() * x.element_size()
    if nbytes < _PREFAULT_MIN_BYTES:
        return []
    n_b, L = x.shape[0], x.shape[1]
    step = nbytes // (n_b * L)  # bytes per time step of one batch row
    row = L * step
    k = max(1, (2 << 20) // max(1, step))  # steps per range
    starts = range(0, L, k)
    ranges = []
    for t0 in (reversed(starts) if backwards else starts):
        t1 = min(L, t0 + k)
        for i in range(n_b):
            ranges.append((x.data_ptr() + i * row + t0 * step, x.data_ptr() + i * row + t1 * step))
    return ranges


def _populate(ranges: list[tuple[int, int]]) -> None:
    """The helper thread: ``madvise(MADV_POPULATE_WRITE)`` on each range in turn (ctypes
    releases the GIL during the call). On any failure (an older kernel answers EINVAL)
    it stops, and the loop faults the remaining pages itself as it would anyway."""
    madvise = _madvise()
    try:
        for start, end in ranges:
            start -= start % _PAGE
            if madvise(start, end - start, _MADV_POPULATE_WRITE) != 0:
                return
    except Exception:  # noqa: BLE001 (a helper that only saves time must never fail a scan)
        return


def _block_steps(shape: torch.Size, L: int) -> int:
    """Time steps per block of ``_BLOCK_ELEMS`` elements for a ``(b, L, ...)`` tensor."""
    per_step = max(1, shape.numel() // max(1, shape[1]))
    return max(1, min(L, _BLOCK_ELEMS // per_step))


def _chunked_scan(a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None,
                  shape: torch.Size, chunk: int = CHUNK) -> torch.Tensor:
    """The parallel scan (CUDA's path) from differentiable torch ops; equals
    ``linear_scan_ref`` up to rounding.

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
