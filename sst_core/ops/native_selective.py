"""The selective scan's CPU loops in C (``native_selective.c``), compiled on first use.

The torch path of :class:`~sst_core.ops.selective_scan._SelectiveScan` runs a handful of
torch operations per chunk of steps and writes ``(T, block, E, N)`` buffers between
them; at the training sizes of the book (32 to 128 channels of 16 states) that is most of
a Mamba training step. The C loops run a whole sequence per call, keep one sample's
state ``(N, E)`` in cache, compute ``exp(dt A)`` with a polynomial the compiler
vectorises, and split the samples (or the channels, for a batch smaller than the thread
count) between ``torch.get_num_threads()`` threads (ctypes releases the GIL).

Built like :mod:`sst_core.ops.native` (whose switches it obeys: ``SST_NATIVE=0`` and
:func:`sst_core.ops.native.disabled` turn both off), into the same cache directory, once
per source, compiler flags and CPU. Where there is no compiler or the build fails,
:func:`library` returns None and the scan runs its torch path; :func:`status` says which
and why. The library is separate from the linear scan's, so that the fingerprints of
models that use only the linear scan do not cover it (this module's ``CODE_FILES`` count
for the Mamba models alone).
"""
from __future__ import annotations

import ctypes
import os
import platform
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from sst_core.ops import native

__all__ = ["Library", "library", "loaded", "status", "flags", "forward", "backward",
           "conv_forward", "conv_backward", "elementwise", "parts", "run_calls", "ptr", "LANES"]

CODE_FILES = ("native_selective.c",)  # counted in the code fingerprint (sst_core.store.codeversion)
SOURCE = Path(__file__).with_name(CODE_FILES[0])
SUFFIX = {torch.float32: "f32", torch.float64: "f64"}
LANES = 16  # channels per thread's share, in multiples of (SEL_LANES in the C source)
_MIN_PARALLEL = 1 << 16  # b L E N below which one thread does all the work
# b L E K for the conv: its work per element is lighter (a pool call costs some 50 us)
_MIN_PARALLEL_LIGHT = 1 << 20

_pool: tuple[int, ThreadPoolExecutor] | None = None  # (pid that made it, pool)


def flags() -> tuple[str, ...]:
    """The linear scan's flags; on x86, 512-bit vectors where the CPU has them (the exp
    polynomial runs 1.3-1.4x faster than with gcc's default 256)."""
    if platform.machine().lower() in ("x86_64", "amd64"):
        return (*native.FLAGS, "-mprefer-vector-width=512")
    return native.FLAGS


class Library:
    """One C source built and loaded once per process (:func:`sst_core.ops.native.build_library`
    with :func:`flags`), its functions typed from ``signatures`` (name without the dtype
    suffix -> ctypes argument types, one function per dtype of SUFFIX)."""

    def __init__(self, source: Path, name: str, signatures: dict[str, list]):
        self.source, self.name, self.signatures = source, name, signatures
        self._lock = threading.Lock()
        self._lib: ctypes.CDLL | None = None
        self._tried, self._reason = False, "not built yet"

    def _build(self) -> tuple[ctypes.CDLL | None, str]:
        lib, how = native.build_library(self.source, self.name, flags())
        if lib is None:
            return None, how
        for suf in SUFFIX.values():
            for name, types in self.signatures.items():
                fn = getattr(lib, f"{name}_{suf}")
                fn.argtypes, fn.restype = types, None
        return lib, how

    def get(self) -> ctypes.CDLL | None:
        """The loaded library, or None (no compiler, a failed build, or switched off by
        ``SST_NATIVE=0`` or inside :func:`sst_core.ops.native.disabled`)."""
        if native.switched_off():
            return None
        if not self._tried:
            with self._lock:
                if not self._tried:
                    self._lib, self._reason = self._build()
                    self._tried = True
        return self._lib

    def fresh(self) -> Library:
        """The same library not loaded yet (the next ``get`` builds or loads it again)."""
        return Library(self.source, self.name, self.signatures)

    def loaded(self) -> bool:
        """Whether this process has loaded the library (without building it)."""
        return self._lib is not None

    def status(self) -> str:
        """Which loops run, and why."""
        if os.environ.get("SST_NATIVE", "1") == "0":
            return "torch path (SST_NATIVE=0)"
        lib = self.get()
        return ("C loops: " if lib is not None else "torch path: ") + self._reason


_i64, _p = ctypes.c_int64, ctypes.c_void_p
_LIBRARY = Library(SOURCE, "native_selective", {
    "sel_fwd": [_p] * 9 + [_i64] * 2 + [_p] * 3 + [_i64] * 12,
    "sel_bwd": [_p] * 8 + [_i64] * 2 + [_p] * 12 + [_i64] * 12,
    "sel_exp": [_p, _i64], "sel_softplus": [_p, _i64],
    "conv_fwd": [_p, _i64, _i64] + [_p] * 4 + [_i64] * 9,
    "conv_bwd": [_p, _i64, _i64] + [_p] * 8 + [_i64] * 9})


def library() -> ctypes.CDLL | None:
    """The loaded C library, or None (no compiler, a failed build, or switched off by
    ``SST_NATIVE=0`` or inside :func:`sst_core.ops.native.disabled`)."""
    return _LIBRARY.get()


def loaded() -> bool:
    """Whether this process has loaded the C library (without building it)."""
    return _LIBRARY.loaded()


def status() -> str:
    """Which loops the CPU selective scan runs, and why."""
    return _LIBRARY.status()


def ptr(x: torch.Tensor | None) -> int | None:
    """The data pointer of x, or None (NULL) for None."""
    return None if x is None else x.data_ptr()


def parts(b: int, E: int, work: int, least: int | None = None
          ) -> list[tuple[int, int, int, int]]:
    """``(r0, r1, e0, e1)`` per thread: samples split evenly, or, for fewer samples than
    threads, channels in multiples of :data:`LANES`; one part when ``work`` is below
    ``least`` (default ``_MIN_PARALLEL``)."""
    n = torch.get_num_threads()
    if n <= 1 or work < (_MIN_PARALLEL if least is None else least):
        return [(0, b, 0, E)]
    if b >= n:
        cuts = [b * i // n for i in range(n + 1)]
        return [(cuts[i], cuts[i + 1], 0, E) for i in range(n) if cuts[i] < cuts[i + 1]]
    step = -(-E // n // LANES) * LANES or E
    return [(0, b, e, min(E, e + step)) for e in range(0, E, step)]


def run_calls(fn, calls: list[tuple]) -> None:
    """``fn(*args)`` for each args tuple, the first in this thread, the rest in the pool."""
    global _pool
    if len(calls) == 1:
        fn(*calls[0])
        return
    n = len(calls) - 1
    if _pool is None or _pool[0] != os.getpid() or _pool[1]._max_workers < n:
        # a forked child inherits the pool object but not its threads: make its own
        _pool = (os.getpid(), ThreadPoolExecutor(max_workers=n, thread_name_prefix="sst-sel"))
    futures = [_pool[1].submit(fn, *args) for args in calls[1:]]
    fn(*calls[0])
    for f in futures:
        f.result()


def _strides(t: torch.Tensor | None) -> tuple[int, int]:
    """(sample, step) strides of a (b, L, E) tensor whose channels are contiguous."""
    if t is None:
        return 0, 0
    if t.stride(2) != 1:
        raise ValueError("the channels must be contiguous")
    return t.stride(0), t.stride(1)


def forward(lib: ctypes.CDLL, dt, x, At, B, C, h0, bias, D, z, out, h_last, starts, T: int,
            negative: bool, softplus: bool) -> None:
    """Fill ``out`` (b, L, E), ``h_last`` (b, E, N) and, unless None, ``starts``
    (ceil(L / T), b, N, E), from contiguous dt, x (b, L, E), At (G, N, E), B, C (b, L, N),
    h0 (b, E, N), bias and D (G, E), and z (b, L, E) with contiguous channels; h0, bias,
    D and z may be None. One dtype throughout (``native_selective.c`` says what is
    computed)."""
    b, L, E = dt.shape
    G, N = At.shape[0], At.shape[1]
    fn = getattr(lib, f"sel_fwd_{SUFFIX[dt.dtype]}")
    args = (ptr(dt), ptr(x), ptr(At), ptr(B), ptr(C), ptr(h0), ptr(bias), ptr(D),
            ptr(z), *_strides(z), ptr(out), ptr(h_last), ptr(starts), b, L, E, N, G, T,
            int(negative), int(softplus))
    run_calls(fn, [args + p for p in parts(b, E, b * L * E * N)])


def backward(lib: ctypes.CDLL, dt, x, At, B, C, bias, D, z, starts, grad_out, g_last,
             h0_grad: bool, T: int, negative: bool, softplus: bool) -> dict:
    """The gradients of :func:`forward` from its ``starts``, dL/dout ``grad_out``
    (contiguous) and dL/dh_L ``g_last`` (b, E, N) or None: a dict with ``dt``, ``x``,
    ``B``, ``C``, ``A`` (per sample, (b, N, E)), and ``z``, ``D``, ``bias`` (per sample,
    (b, E)), ``h0`` for those given (or asked)."""
    b, L, E = dt.shape
    G, N = At.shape[0], At.shape[1]
    new = dt.new_empty
    grads = {"dt": torch.empty_like(dt), "x": torch.empty_like(dt), "A": new(b, N, E),
             "z": None if z is None else new(b, L, E), "D": None if D is None else new(b, E),
             "bias": None if bias is None else new(b, E),
             "h0": new(b, E, N) if h0_grad else None}
    splits = parts(b, E, b * L * E * N)
    k = len(splits) if splits[0][3] - splits[0][2] < E else 1  # channel parts: partial sums
    gB, gC = new(k, b, L, N), new(k, b, L, N)
    fn = getattr(lib, f"sel_bwd_{SUFFIX[dt.dtype]}")
    calls = []
    for i, p in enumerate(splits):
        part = i if k > 1 else 0
        calls.append((ptr(dt), ptr(x), ptr(At), ptr(B), ptr(C), ptr(bias), ptr(D),
                      ptr(z), *_strides(z), ptr(starts), ptr(grad_out), ptr(g_last),
                      ptr(grads["dt"]), ptr(grads["x"]), ptr(grads["z"]),
                      ptr(grads["A"]), ptr(gB[part]), ptr(gC[part]), ptr(grads["D"]),
                      ptr(grads["bias"]), ptr(grads["h0"]), b, L, E, N, G, T,
                      int(negative), int(softplus)) + p)
    run_calls(fn, calls)
    grads["B"], grads["C"] = (gB[0], gC[0]) if k == 1 else (gB.sum(0), gC.sum(0))
    return grads


def conv_forward(lib: ctypes.CDLL, x, window, wT, bias, out) -> None:
    """``out`` (b, L, E) = SiLU(causal depthwise conv of x (b, L, E), channels contiguous,
    after ``window`` (b, (K-1) E) or None), taps wT (G, K, E), bias (G, E)."""
    b, L, E = x.shape
    G, K = wT.shape[0], wT.shape[1]
    fn = getattr(lib, f"conv_fwd_{SUFFIX[x.dtype]}")
    args = (ptr(x), *_strides(x), ptr(window), ptr(wT), ptr(bias), ptr(out), b, L, E, K, G)
    run_calls(fn, [args + p for p in parts(b, E, b * L * E * K, _MIN_PARALLEL_LIGHT)])


def conv_backward(lib: ctypes.CDLL, x, window, wT, bias, grad_out, window_grad: bool):
    """The gradients of :func:`conv_forward` for dL/dout ``grad_out`` (contiguous):
    ``(x (b, L, E), window or None, taps per sample (b, K, E), bias per sample (b, E))``."""
    b, L, E = x.shape
    G, K = wT.shape[0], wT.shape[1]
    gx = x.new_empty(b, L, E)
    gwin = x.new_empty(b, (K - 1) * E) if window_grad else None
    gw, gb = x.new_empty(b, K, E), x.new_empty(b, E)
    fn = getattr(lib, f"conv_bwd_{SUFFIX[x.dtype]}")
    args = (ptr(x), *_strides(x), ptr(window), ptr(wT), ptr(bias), ptr(grad_out),
            ptr(gx), ptr(gwin), ptr(gw), ptr(gb), b, L, E, K, G)
    run_calls(fn, [args + p for p in parts(b, E, b * L * E * K, _MIN_PARALLEL_LIGHT)])
    return gx, gwin, gw, gb


def elementwise(lib: ctypes.CDLL, name: str, v: torch.Tensor) -> torch.Tensor:
    """The scan's own ``exp`` or ``softplus`` of a float32 or float64 tensor (a new
    contiguous tensor), for the tests."""
    out = v.contiguous().clone()
    getattr(lib, f"sel_{name}_{SUFFIX[out.dtype]}")(ptr(out), out.numel())
    return out
