"""The limits of ``sst bench``'s training-step rows: what the step's work allows on this
machine, and how far the step is from it.

Per entry (:func:`count_work`, two extra untimed calls of the step):

- **Arithmetic** (one call on the torch paths, ``native.disabled()``, where the C loops'
  arithmetic is torch ops the dispatcher sees; the same arithmetic either way): ``flops``
  = ``flops_matmul + flops_elementwise``. ``flops_matmul`` is what
  ``torch.utils.flop_counter.FlopCounterMode`` counts (mm, bmm, addmm, baddbmm,
  convolutions, attention; 2 per multiply-add); ``flops_elementwise`` adds one per output
  element of every op torch tags ``pointwise`` (a transcendental such as exp or tanh
  counts as one, though it costs several) and one per input element of every
  ``reduction``.
- **The fast path** (one call as the step runs, C loops on): every matrix product the
  dispatcher sees, by shape (``matmul_calls``, ``flops_mm`` their flops), and the bytes it
  moves (``bytes``): every dispatched op's tensor inputs read and outputs written once
  (broadcast dimensions of stride 0 not counted; views, factories of uninitialised memory
  and ``out=`` arguments as inputs not counted; no reuse between ops through the caches
  assumed, so for these ops an upper estimate), plus the C loops' own traffic
  (``bytes_kernels``, :data:`KERNELS`): each call reads every array it is given and
  writes every array it fills or returns, once. That is what their loops do: they walk
  the time steps of one sample (or a block of channels) once forward; the backward
  recomputes each chunk of ``T`` steps from the state kept at its start into a per-thread
  buffer sized for the L2 cache (``NATIVE_CHUNK_BYTES`` of the selective scan, the
  unitary scan's ``CHUNK_BYTES``), so a chunk's second pass reads that buffer, not memory;
  the diagonal scan's backward reads ``a``, ``h``, ``h0`` and the incoming gradient once
  and writes ``g`` and ``dL/da`` once. The per-thread buffers themselves are not counted.

The machine (:func:`sst_core.bench.harness.measure_roofline`, once per run, on the run's
thread count, the best of several calls): ``matmul_flops_per_s`` of a large float32
matmul (the arithmetic peak torch reaches) and ``copy_bytes_per_s``
(:func:`~sst_core.bench.harness.copy_bandwidth`, DRAM). Besides, each distinct matrix
product of the step is timed alone at its own shapes (:func:`matmul_seconds`, the best of
``MATMUL_REPEAT`` calls): small products run far below the large one's rate.

From these (:func:`annotate`), the two limits of a step:

- ``compute_s``, the **flop limit**: the step's matrix products at the rates measured at
  their own shapes (``matmul_shapes_s``), plus the rest of its arithmetic (``flops -
  flops_mm``: elementwise work, the C loops' arithmetic, convolutions) at the large
  matmul's rate, which no arithmetic on this machine beats;
- ``memory_s``, the **byte limit**: ``bytes`` / copy bandwidth;

and ``roofline_s`` = the better (larger) of the two, the least time both allow; ``bound``
names it; ``roofline_ratio`` = ours_s / roofline_s, how far the step is from it;
``gflops_per_s`` and ``intensity`` = flops / bytes as before. Rows with a
``roofline_target`` (the Table 2 models at d_model 64, ``ROOFLINE_TARGET`` = 5) meet it
when ``roofline_ratio <= 5``; for them :func:`profile_step` also records where one step's
time goes (``profile``: the operations with the most self time, the C loops among them).

Records made before this count (no ``matmul_shapes_s``) counted flops at the large
matmul's rate and bytes on the torch paths (``native.disabled()``): their reference path's
tensors, a byte count the fast path never moves. :func:`annotate` keeps their fields;
``limit_method`` says which count an entry has.
"""
from __future__ import annotations

import contextlib
import math
import time
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import FlopCounterMode

ROOFLINE_TARGET = 5.0  # ours_s / roofline_s, at most (the goal)


# ops that move no data (metadata, or memory handed out uninitialised)
_FREE = {"_unsafe_view", "alias", "lift_fresh", "empty", "empty_like", "empty_strided",
         "new_empty", "new_empty_strided", "resize_", "set_", "_to_copy_no_op", "detach_"}


def _touched(t: torch.Tensor) -> int:
    """Bytes of a tensor's elements, broadcast (stride 0) dimensions counted once."""
    n = 1
    for size, stride in zip(t.shape, t.stride()):
        if stride != 0:
            n *= size
    return n * t.element_size() if t.numel() else 0


# matrix products timed at their own shapes: name -> the positions of the two factors
_MM = {"mm": (0, 1), "addmm": (1, 2), "bmm": (0, 1), "baddbmm": (1, 2)}


class _Traffic(TorchDispatchMode):
    """Counts elementwise flops, estimated bytes and the matrix products (by shape) of
    every op dispatched inside it."""

    def __init__(self) -> None:
        super().__init__()
        self.elementwise = 0
        self.bytes = 0
        self.ops = 0
        self.matmuls: dict[tuple, int] = {}  # (op, shape a, shape b, dtype, device) -> calls

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        if func.is_view or name in _FREE:
            return out
        self.ops += 1
        ins = [t for t in tree_flatten((args, {k: v for k, v in kwargs.items()
                                              if k != "out"}))[0]
               if isinstance(t, torch.Tensor)]
        outs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        self.bytes += sum(map(_touched, ins)) + sum(map(_touched, outs))
        if name in _MM:
            i, j = _MM[name]
            a, b = args[i], args[j]
            key = (name, tuple(a.shape), tuple(b.shape), str(a.dtype), a.device.type)
            self.matmuls[key] = self.matmuls.get(key, 0) + 1
        tags = func.tags
        if torch.Tag.pointwise in tags:
            self.elementwise += sum(t.numel() for t in outs)
        elif torch.Tag.reduction in tags and ins:
            self.elementwise += ins[0].numel()
        return out


# The C loops (called through ctypes, unseen by the dispatcher): module -> the functions
# whose calls :class:`_KernelBytes` counts (each array given or returned, once)
KERNELS = {"sst_core.ops.native": ("scan_forward", "scan_backward"),
           "sst_core.ops.native_selective": ("forward", "backward", "conv_forward",
                                             "conv_backward"),
           "sst_core.ops.native_unitary": ("forward", "backward")}


def _arrays(x: Any) -> list[torch.Tensor]:
    if isinstance(x, dict):
        x = list(x.values())
    return [t for t in tree_flatten(x)[0] if isinstance(t, torch.Tensor)]


@contextlib.contextmanager
def _kernels(wrap: Callable[[str, Callable], Callable]):
    """Inside the block every function of :data:`KERNELS` is ``wrap(name, fn)``."""
    import importlib

    saved = []
    try:
        for module, names in KERNELS.items():
            mod = importlib.import_module(module)
            for n in names:
                fn = getattr(mod, n)
                saved.append((mod, n, fn))
                setattr(mod, n, wrap(f"{module.rsplit('.', 1)[1]}.{n}", fn))
        yield
    finally:
        for mod, n, fn in saved:
            setattr(mod, n, fn)


class _KernelBytes:
    """Bytes the C loops read and write inside the block (module docstring)."""

    def __init__(self) -> None:
        self.bytes = 0
        self.calls = 0

    def wrap(self, name: str, fn: Callable) -> Callable:
        def counted(*args, **kwargs):
            out = fn(*args, **kwargs)
            self.calls += 1
            self.bytes += sum(map(_touched, _arrays((args, kwargs)) + _arrays(out)))
            return out

        return counted


def count_work(fn: Callable[[], Any], time_matmuls: bool = True) -> dict[str, Any]:
    """The arithmetic, the fast path's bytes and matrix products of one call of ``fn``
    (two calls: see the module docstring); with ``time_matmuls``, also the seconds of
    those products at their own shapes (:func:`matmul_seconds`)."""
    from sst_core.ops import native

    flops = FlopCounterMode(display=False)
    torch_paths = _Traffic()
    with native.disabled(), flops, torch_paths:
        fn()
    matmul = int(flops.get_total_flops())
    fast, kernels = _Traffic(), _KernelBytes()
    with _kernels(kernels.wrap), fast:
        fn()
    calls = [{"op": k[0], "a": list(k[1]), "b": list(k[2]), "dtype": k[3], "device": k[4],
              "calls": n, "flops": n * _mm_flops(k)} for k, n in fast.matmuls.items()]
    out = {"flops": matmul + torch_paths.elementwise, "flops_matmul": matmul,
           "flops_elementwise": torch_paths.elementwise,
           "flops_mm": sum(c["flops"] for c in calls), "matmul_calls": calls,
           "bytes": fast.bytes + kernels.bytes, "bytes_kernels": kernels.bytes,
           "kernel_calls": kernels.calls, "ops_counted": fast.ops,
           "flops_method": "FlopCounterMode (matmul-like ops) + 1 per output element of "
                           "pointwise ops and per input element of reductions, on the "
                           "torch paths (the C loops' arithmetic as torch ops)",
           "bytes_method": "the fast path: inputs + outputs of every dispatched op (no "
                           "cache reuse) + every array a C loop is given or fills, once"}
    if time_matmuls:
        out["matmul_shapes_s"] = sum(c["calls"] * matmul_seconds(
            (c["op"], tuple(c["a"]), tuple(c["b"]), c["dtype"], c["device"])) for c in calls)
    return out


def _mm_flops(key: tuple) -> int:
    """2 per multiply-add of one product ``(op, shape a, shape b, ...)``."""
    _, a, b = key[:3]
    batch = a[0] if len(a) == 3 else 1
    return 2 * batch * a[-2] * a[-1] * b[-1]


MATMUL_REPEAT = 5

_MATMUL_S: dict[tuple, float] = {}  # (product, threads) -> seconds, once per process


def matmul_seconds(key: tuple) -> float:
    """Seconds of one matrix product ``(op, shape a, shape b, dtype, device)`` alone on the
    current thread count: the fastest of ``MATMUL_REPEAT`` calls after one warm-up, on
    random factors of those shapes (contiguous), into a preallocated output. Cached per
    process and thread count."""
    cache = (key, torch.get_num_threads())
    if cache not in _MATMUL_S:
        name, a_shape, b_shape, dtype, device = key
        dtype = getattr(torch, dtype.removeprefix("torch."))
        dev = torch.device(device)
        g = torch.Generator().manual_seed(0)
        a = torch.randn(a_shape, generator=g, dtype=dtype).to(dev)
        b = torch.randn(b_shape, generator=g, dtype=dtype).to(dev)
        out = torch.empty(*a_shape[:-1], b_shape[-1], dtype=dtype, device=dev)
        mm = torch.bmm if len(a_shape) == 3 else torch.mm
        times = []
        for i in range(MATMUL_REPEAT + 1):
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
            start = time.perf_counter()
            mm(a, b, out=out)
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
            if i:
                times.append(time.perf_counter() - start)
        _MATMUL_S[cache] = min(times)
    return _MATMUL_S[cache]


def profile_step(fn: Callable[[], Any], top: int = 8) -> list[dict[str, Any]]:
    """Where one call of ``fn`` spends its time: ``torch.profiler`` over one call (after one
    untimed call), the ``top`` operations by self CPU time, each ``{"op", "self_s",
    "share"}`` (share of the summed self times); the C loops appear as ``native
    <module>.<function>`` (a ``record_function`` around each call)."""
    from torch.profiler import ProfilerActivity, profile, record_function

    def labelled(name: str, kernel: Callable) -> Callable:
        def run(*args, **kwargs):
            with record_function(f"native {name}"):
                return kernel(*args, **kwargs)

        return run

    fn()
    with _kernels(labelled), profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    rows = [(e.key, e.self_cpu_time_total / 1e6) for e in prof.key_averages()]
    total = sum(t for _, t in rows) or 1.0
    rows.sort(key=lambda r: -r[1])
    return [{"op": k, "self_s": t, "share": t / total} for k, t in rows[:top]]


def matmul_flops_per_s(device: torch.device, n: int = 2048, repeat: int = 3) -> float:
    """Float32 ``n x n @ n x n`` (2 n^3 flops) on the current thread count, the fastest
    of ``repeat`` calls (a peak: the least disturbed by other processes)."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=g).to(device)
    b = torch.randn(n, n, generator=g).to(device)
    out = torch.empty(n, n, device=device)
    torch.mm(a, b, out=out)  # warm up
    times = []
    for _ in range(repeat):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        torch.mm(a, b, out=out)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return 2 * n ** 3 / min(times)


def annotate(entry: dict[str, Any], roof: dict[str, Any]) -> None:
    """Add achieved GFLOP/s, intensity, the two limits, the bound and the roofline ratio
    (and the goal's status where the entry has a ``roofline_target``) to an entry with
    ``flops`` (module docstring)."""
    flops, nbytes, t = entry["flops"], entry["bytes"], entry["ours_s"]
    peak, bw = roof["matmul_flops_per_s"], roof["copy_bytes_per_s"]
    if "matmul_shapes_s" in entry:  # products at their shapes, the rest at the peak
        compute_s = entry["matmul_shapes_s"] + max(0, flops - entry["flops_mm"]) / peak
        entry["limit_method"] = "shapes"
    else:  # an entry counted before the products were timed (an older record's)
        compute_s = flops / peak
        entry["limit_method"] = "peak"
    memory_s = nbytes / bw
    roofline_s = max(compute_s, memory_s)
    entry.update(
        gflops_per_s=flops / t / 1e9 if t else None,
        intensity=flops / nbytes if nbytes else math.inf,
        compute_s=compute_s, memory_s=memory_s,
        bound="compute" if compute_s >= memory_s else "memory",
        roofline_s=roofline_s,
        roofline_ratio=t / roofline_s if roofline_s else None)
    target = entry.get("roofline_target")
    if target is not None:
        ok = entry["roofline_ratio"] is not None and entry["roofline_ratio"] <= target
        entry["roofline_status"] = "meets" if ok else "misses"
