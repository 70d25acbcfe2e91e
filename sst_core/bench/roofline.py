"""The roofline of ``sst bench``'s training-step rows: the work of one step beside the
machine's two limits.

Per entry (:func:`count_work`, one extra untimed call of the step):

- ``flops``: floating-point operations of one step, ``flops_matmul + flops_elementwise``.
  ``flops_matmul`` is what ``torch.utils.flop_counter.FlopCounterMode`` counts (mm, bmm,
  addmm, baddbmm, convolutions, attention; 2 per multiply-add). It counts no elementwise
  op, so ``flops_elementwise`` adds one per output element of every op torch tags
  ``pointwise`` (a transcendental such as exp or tanh counts as one, though it costs
  several) and one per input element of every ``reduction`` (sum, mean, max, ...).
- ``bytes``: an estimate of the memory traffic: every op's tensor inputs read and tensor
  outputs written once (broadcast dimensions of stride 0 not counted; views, factories
  of uninitialised memory and ``out=`` arguments as inputs not counted). It assumes no
  reuse between ops through the caches, so it is an upper estimate of DRAM traffic
  (at these sizes much of a step's working set stays in the caches).

The custom scans (:mod:`sst_core.ops`) are counted like the rest: their forward and
backward are torch ops inside an ``autograd.Function``, which the dispatcher sees. The C
loops of the CPU linear scan (:mod:`sst_core.ops.native`, called through ctypes) are
not seen by the dispatcher, so the step is counted under ``native.disabled()``: its
torch loops do the same arithmetic. A kernel that bypasses the dispatcher and does not
honour ``native.disabled()`` would be missing from the count (it would lower ``flops``).

The machine (:func:`sst_core.bench.harness.measure_roofline`, once per run, on the run's
thread count, the best of several calls): ``matmul_flops_per_s``, a large float32 matmul
(the compute peak torch reaches), and ``copy_bytes_per_s``
(:func:`~sst_core.bench.harness.copy_bandwidth`, DRAM). Other processes on a shared
machine lower both, and cached data moves faster than DRAM, so a ``roofline_ratio``
below 1 means that the byte estimate is too high (data reused through the caches) or the
measured bandwidth too low, not that a limit was broken.

From these (:func:`annotate`): ``gflops_per_s`` achieved, ``intensity`` = flops / bytes,
``compute_s`` = flops / peak and ``memory_s`` = bytes / bandwidth, ``bound`` = the larger
of the two (``"compute"`` when the intensity is above the ridge peak / bandwidth, else
``"memory"``), ``roofline_s`` = max(compute_s, memory_s), the least time the two limits
allow, and ``roofline_ratio`` = ours_s / roofline_s. Rows with a ``roofline_target``
(the Table 2 models at d_model 64, ``ROOFLINE_TARGET`` = 5) meet their goal when
``roofline_ratio <= 5``: the step is within 5x of the better of the two limits.
"""
from __future__ import annotations

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


class _Traffic(TorchDispatchMode):
    """Counts elementwise flops and estimated bytes of every op dispatched inside it."""

    def __init__(self) -> None:
        super().__init__()
        self.elementwise = 0
        self.bytes = 0
        self.ops = 0

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
        tags = func.tags
        if torch.Tag.pointwise in tags:
            self.elementwise += sum(t.numel() for t in outs)
        elif torch.Tag.reduction in tags and ins:
            self.elementwise += ins[0].numel()
        return out


def count_work(fn: Callable[[], Any]) -> dict[str, Any]:
    """Flops and estimated bytes of one call of ``fn`` (see the module docstring)."""
    from sst_core.ops import native

    flops = FlopCounterMode(display=False)
    traffic = _Traffic()
    with native.disabled(), flops, traffic:
        fn()
    matmul = int(flops.get_total_flops())
    return {"flops": matmul + traffic.elementwise, "flops_matmul": matmul,
            "flops_elementwise": traffic.elementwise, "bytes": traffic.bytes,
            "ops_counted": traffic.ops,
            "flops_method": "FlopCounterMode (matmul-like ops) + 1 per output element of "
                            "pointwise ops and per input element of reductions; bytes: "
                            "inputs + outputs of every op, no cache reuse"}


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
    """Add achieved GFLOP/s, intensity, bound and the roofline ratio (and the goal's
    status where the entry has a ``roofline_target``) to an entry with ``flops``."""
    flops, nbytes, t = entry["flops"], entry["bytes"], entry["ours_s"]
    peak, bw = roof["matmul_flops_per_s"], roof["copy_bytes_per_s"]
    compute_s, memory_s = flops / peak, nbytes / bw
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
