"""The scan's CPU loops in C (``native_scan.c``), compiled on first use, called by ctypes.

The torch loop of :class:`~sst_core.ops.scan._SequentialScan` launches one kernel per time
step; at the quick profile's sizes (64 x 256 complex channels) the launch costs more than
the arithmetic, and the backward reads every state twice. The C loops run the whole
recurrence in one call, write ``dL/da`` during the reverse pass, and split rows (or
channels, for a batch smaller than the thread count) between ``torch.get_num_threads()``
threads (ctypes releases the GIL).

The library is built with the system's C compiler (``cc``, or ``$CC``) into a cache
directory (``$SST_CACHE_DIR``, default ``~/.cache/sst_core``), once per source, compiler
flags and CPU; building takes about a second. Where there is no compiler or the build
fails, :func:`library` returns None and the scan runs its torch loop, which gives the same
results up to float rounding; :func:`status` says which and why. ``SST_NATIVE=0`` turns the
C loops off; :func:`disabled` does so inside a ``with`` block (the tests use it to compare
both paths).
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

__all__ = ["library", "loaded", "status", "disabled", "switched_off", "build_library", "scan_forward",
           "scan_backward", "SUFFIX"]

CODE_FILES = ("native_scan.c",)  # counted in the code fingerprint (sst_core.store.codeversion)
SOURCE = Path(__file__).with_name(CODE_FILES[0])
FLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-fno-math-errno")
SUFFIX = {torch.float32: "f32", torch.float64: "f64", torch.complex64: "c64",
          torch.complex128: "c128"}
_MIN_PARALLEL = 1 << 15  # elements below which one thread does all the work

_lock = threading.Lock()
_state: dict = {"lib": None, "tried": False, "reason": "not built yet"}
_off = threading.local()
_pool: tuple[int, ThreadPoolExecutor] | None = None  # (pid that made it, pool)


def _cpu_id() -> str:
    """The CPU model and feature flags (``-march=native`` code is only valid there)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine()
    keep = [ln for ln in text.splitlines() if ln.startswith(("model name", "flags"))]
    return "\n".join(sorted(set(keep)))


def switched_off() -> bool:
    """Whether the C loops are off: ``SST_NATIVE=0``, or inside :func:`disabled`."""
    return os.environ.get("SST_NATIVE", "1") == "0" or getattr(_off, "on", False)


def build_library(source: Path, stem: str, flags) -> tuple[ctypes.CDLL | None, str]:
    """Compile ``source`` with the system's C compiler (``$CC``, ``cc`` or ``gcc``) into the
    cache folder, keyed by source, flags, compiler and CPU, and load it: ``(library, how)``,
    or ``(None, why)`` when there is no compiler or the build or the load fails. Shared by
    every C library of :mod:`sst_core.ops`."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None, "no C compiler found (cc, gcc or $CC)"
    flags = tuple(flags)
    key = hashlib.sha256(source.read_bytes() + " ".join(flags).encode() + cc.encode()
                         + _cpu_id().encode()).hexdigest()[:16]
    cache = Path(os.environ.get("SST_CACHE_DIR") or Path.home() / ".cache" / "sst_core")
    target = cache / f"{stem}-{key}.so"
    if not target.exists():
        try:
            cache.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(suffix=".so", dir=cache)
            os.close(fd)
            done = subprocess.run([cc, *flags, "-o", tmp, str(source)], capture_output=True,
                                  text=True, timeout=120)
            if done.returncode != 0:
                os.unlink(tmp)
                return None, f"{cc} failed: {done.stderr.strip()[-500:]}"
            os.replace(tmp, target)  # atomic: a concurrent build replaces it with its twin
        except (OSError, subprocess.SubprocessError) as err:
            return None, f"could not build {target}: {err}"
    try:
        lib = ctypes.CDLL(str(target))
    except OSError as err:
        return None, f"could not load {target}: {err}"
    return lib, f"built with {cc} ({' '.join(flags)}) at {target}"


def _build() -> tuple[ctypes.CDLL | None, str]:
    lib, how = build_library(SOURCE, "native_scan", FLAGS)
    if lib is None:
        return None, how
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    for suf in SUFFIX.values():
        fwd, bwd = getattr(lib, f"scan_fwd_{suf}"), getattr(lib, f"scan_bwd_{suf}")
        fwd.argtypes = [ptr] * 4 + [i64] * 6
        bwd.argtypes = [ptr] * 6 + [i64] * 6
        fwd.restype = bwd.restype = None
    return lib, how


def library() -> ctypes.CDLL | None:
    """The loaded C library, or None (no compiler, a failed build, or switched off)."""
    if switched_off():
        return None
    if not _state["tried"]:
        with _lock:
            if not _state["tried"]:
                _state["lib"], _state["reason"] = _build()
                _state["tried"] = True
    return _state["lib"]


def loaded() -> bool:
    """Whether this process has loaded the C library (without building it)."""
    return _state["lib"] is not None


def status() -> str:
    """Which loops the CPU scan runs, and why."""
    if os.environ.get("SST_NATIVE", "1") == "0":
        return "torch loops (SST_NATIVE=0)"
    lib = library()
    return ("C loops: " if lib is not None else "torch loops: ") + _state["reason"]


@contextlib.contextmanager
def disabled():
    """Run the torch loops inside this block (in this thread)."""
    before = getattr(_off, "on", False)
    _off.on = True
    try:
        yield
    finally:
        _off.on = before


def _ptr(x: torch.Tensor | None) -> int | None:
    return None if x is None else x.data_ptr()


def _run(fn, args: tuple, n_b: int, C: int, L: int) -> None:
    """``fn(*args, r0, r1, c0, c1)`` over all rows and channels, split between threads."""
    global _pool
    n = torch.get_num_threads()
    if n <= 1 or n_b * C * L < _MIN_PARALLEL:
        fn(*args, 0, n_b, 0, C)
        return
    if n_b >= n:
        cuts = [n_b * i // n for i in range(n + 1)]
        parts = [(cuts[i], cuts[i + 1], 0, C) for i in range(n) if cuts[i] < cuts[i + 1]]
    else:  # few rows: split the channels (in multiples of 16 for whole vectors)
        step = -(-C // n // 16) * 16 or C
        parts = [(0, n_b, c, min(C, c + step)) for c in range(0, C, step)]
    if _pool is None or _pool[0] != os.getpid() or _pool[1]._max_workers < n - 1:
        # a forked child inherits the pool object but not its threads: make its own
        _pool = (os.getpid(), ThreadPoolExecutor(max_workers=n - 1,
                                                 thread_name_prefix="sst-scan"))
    futures = [_pool[1].submit(fn, *args, *p) for p in parts[1:]]
    fn(*args, *parts[0])
    for f in futures:
        f.result()


def scan_forward(lib: ctypes.CDLL, a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None,
                 out: torch.Tensor) -> None:
    """``out_t = a_t out_{t-1} + b_t`` for contiguous (n_b, L, ...) a, b, out of one dtype."""
    n_b, L = out.shape[0], out.shape[1]
    C = out.numel() // (n_b * L)
    fn = getattr(lib, f"scan_fwd_{SUFFIX[out.dtype]}")
    _run(fn, (_ptr(a), _ptr(b), _ptr(h0), _ptr(out), L, C), n_b, C, L)


def scan_backward(lib: ctypes.CDLL, a: torch.Tensor, h: torch.Tensor, h0: torch.Tensor | None,
                  grad_out: torch.Tensor, g: torch.Tensor, grad_a: torch.Tensor | None) -> None:
    """``g_t = grad_out_t + conj(a_{t+1}) g_{t+1}`` and ``grad_a_t = g_t conj(h_{t-1})``."""
    n_b, L = h.shape[0], h.shape[1]
    C = h.numel() // (n_b * L)
    fn = getattr(lib, f"scan_bwd_{SUFFIX[h.dtype]}")
    _run(fn, (_ptr(a), _ptr(h), _ptr(h0), _ptr(grad_out), _ptr(g), _ptr(grad_a), L, C),
         n_b, C, L)
