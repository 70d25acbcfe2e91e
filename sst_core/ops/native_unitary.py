"""AUSSM's unitary scan in C (``native_unitary.c``), compiled on first use.

The C loops run the recurrence of :mod:`sst_core.ops.unitary_scan` a sample at a time,
state by state, compute cos and sin with a polynomial the compiler vectorises, and split
the samples (or the channels, for a batch smaller than the thread count) between
``torch.get_num_threads()`` threads, as the selective scan's loops do
(:mod:`sst_core.ops.native_selective`, whose build, switches and thread split this module
uses). The library is its own, so that the Mamba models' code fingerprints do not cover it
when this source changes (``CODE_FILES`` count for the models that reach this module).
"""
from __future__ import annotations

import ctypes
from pathlib import Path

import torch

from sst_core.ops.native_selective import SUFFIX, Library, parts, ptr, run_calls

__all__ = ["library", "loaded", "status", "forward", "backward", "sincos"]

CODE_FILES = ("native_unitary.c",)  # counted in the code fingerprint (sst_core.store.codeversion)
SOURCE = Path(__file__).with_name(CODE_FILES[0])

_i64, _p = ctypes.c_int64, ctypes.c_void_p
_LIBRARY = Library(SOURCE, "native_unitary", {
    "uni_fwd": [_p] * 9 + [_i64] * 10, "uni_bwd": [_p] * 14 + [_i64] * 10,
    "uni_sincos": [_p] * 3 + [_i64]})


def library() -> ctypes.CDLL | None:
    """The loaded C library, or None (no compiler, a failed build, or switched off by
    ``SST_NATIVE=0`` or inside :func:`sst_core.ops.native.disabled`)."""
    return _LIBRARY.get()


def loaded() -> bool:
    """Whether this process has loaded the C library (without building it)."""
    return _LIBRARY.loaded()


def status() -> str:
    """Which loops the CPU unitary scan runs, and why."""
    return _LIBRARY.status()


def forward(lib: ctypes.CDLL, theta, u, s, B, C, h0, y, h_last, starts, T: int) -> None:
    """Fill ``y`` (b, L, D), ``h_last`` (b, N, 2, D) and, unless None, ``starts``
    (ceil(L / T), b, N, 2, D), from contiguous angles ``theta`` (b, L, N, D), gains ``u``
    and scales ``s`` (b, L, D; s may be None), ``B`` and ``C`` (G, N, 2) and ``h0`` (b, N,
    2, D) or None. One dtype throughout (``native_unitary.c`` says what is computed)."""
    b, L, N, D = theta.shape
    fn = getattr(lib, f"uni_fwd_{SUFFIX[theta.dtype]}")
    args = (ptr(theta), ptr(u), ptr(s), ptr(B), ptr(C), ptr(h0), ptr(y), ptr(h_last),
            ptr(starts), b, L, N, D, B.shape[0], T)
    run_calls(fn, [args + p for p in parts(b, D, b * L * D * N)])


def backward(lib: ctypes.CDLL, theta, u, s, B, C, starts, gy, g_last, h0_grad: bool,
             T: int) -> dict:
    """The gradients of :func:`forward` from its ``starts``, dL/dy ``gy`` (b, L, D) and
    dL/dh_L ``g_last`` (b, N, 2, D) or None: a dict with ``theta`` (b, L, N, D), ``u`` and
    ``s`` (b, L, D; None without s), ``B`` and ``C`` per sample (b, N, 2), and ``h0`` (b,
    N, 2, D) if asked."""
    b, L, N, D = theta.shape
    new = theta.new_empty
    grads = {"theta": torch.empty_like(theta), "u": new(b, L, D),
             "s": None if s is None else new(b, L, D), "h0": new(b, N, 2, D) if h0_grad else None}
    splits = parts(b, D, b * L * D * N)
    k = len(splits) if splits[0][3] - splits[0][2] < D else 1  # channel parts: partial sums
    gB, gC = new(k, b, N, 2), new(k, b, N, 2)
    fn = getattr(lib, f"uni_bwd_{SUFFIX[theta.dtype]}")
    calls = []
    for i, p in enumerate(splits):
        part = i if k > 1 else 0
        calls.append((ptr(theta), ptr(u), ptr(s), ptr(B), ptr(C), ptr(starts), ptr(gy),
                      ptr(g_last), ptr(grads["theta"]), ptr(grads["u"]), ptr(grads["s"]),
                      ptr(gB[part]), ptr(gC[part]), ptr(grads["h0"]), b, L, N, D, B.shape[0],
                      T) + p)
    run_calls(fn, calls)
    grads["B"], grads["C"] = (gB[0], gC[0]) if k == 1 else (gB.sum(0), gC.sum(0))
    return grads


def sincos(lib: ctypes.CDLL, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The scan's own sin and cos of a float32 or float64 tensor (new tensors), for the
    tests."""
    x = v.contiguous()
    sn, cs = torch.empty_like(x), torch.empty_like(x)
    getattr(lib, f"uni_sincos_{SUFFIX[x.dtype]}")(ptr(x), ptr(sn), ptr(cs), x.numel())
    return sn, cs
