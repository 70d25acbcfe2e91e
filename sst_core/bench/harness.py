"""The benchmark harness: ours beside a reference in one run (``sst bench``).

A *benchmark* is one registered function ``fn(ctx: Context) -> list[dict]`` in
:data:`BENCHMARKS` (the cases live in :data:`CASE_MODULES`, imported by name on first use,
so that the harness imports none of them), under a name that is also the name of (or the prefix of) the entries
it returns. Adding a comparison is adding one function::

    @register("diag_scan_fwd_bwd_L1000")
    def _diag_scan(ctx):
        ours, ref = ...  # zero-argument callables, sized by ctx.sizes, on ctx.device
        t_ours, t_ref = time_side_by_side([ours, ref], ctx.repeat, ctx.sizes.warmup, ctx.device)
        return [make_entry("diag_scan_fwd_bwd_L1000", "train", "linear_scan", ctx,
                           {"batch": b, "length": L}, t_ours, t_ref, "linear_scan_ref")]

Each entry is a JSON-ready dict::

    name, kind ("train" | "eval"), model, anchor (a description, or None),
    ours_s, anchor_s (None: no anchor), ratio = ours_s / anchor_s (None: no anchor),
    target (a ratio to stay under, or None), status ("meets" | "misses" | ""),
    sizes {...}, device, repeat, warmup, tokens_per_s (ours), anchor_tokens_per_s,
    ours_samples_s, anchor_samples_s (every timed repetition)

and, for a training step, its limits (:mod:`sst_core.bench.roofline`): flops,
flops_matmul, flops_elementwise, flops_mm and matmul_calls (the fast path's matrix
products by shape), matmul_shapes_s, bytes (what the fast path moves), bytes_kernels,
gflops_per_s, intensity, bound ("compute" | "memory"), compute_s (the flop limit),
memory_s (the byte limit), roofline_s, roofline_ratio = ours_s / roofline_s,
limit_method, and where a goal applies roofline_target, roofline_status and profile. The run's
``hardware["roofline"]`` holds the machine's two limits, measured once per run on its
thread count (float32 matmul flops/s, copy bandwidth).

Protocol. Fixed seeds for weights and data (S3 words from the training sampler, 6-way
one-hot input, 6 classes, as in ``sst_core.training.tracking``). ``warmup`` untimed calls of each
contender, then ``repeat`` rounds in which ours and the anchor run alternately (ours,
anchor, ours, anchor, ...), each call timed alone with ``time.perf_counter`` between
``torch.cuda.synchronize`` calls on CUDA. Reported times are medians. On a shared
2-core machine repeats differ by up to about 30% (``cpu-performance-notes.md``): read
ratios within 1.3x of a target as noise, and rerun on a quiet machine before concluding.

A *training step* is what ``sst_core.training.tracking.train_tracking`` does per step: forward,
cross-entropy over every position, backward, gradient clipping at 1.0, an AdamW step
with weight decay 0.01. *Eval* is a forward pass in ``eval()`` mode under ``no_grad``.
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import torch

from sst_core.bench import roofline
from sst_core.ops import native, native_selective

DEVICES = ("auto", "cpu", "cuda")


SEED = 0


@dataclass(frozen=True)
class Sizes:
    """Batch and length of the training-step and eval benchmarks, and warm-up calls."""

    train_batch: int
    train_length: int
    eval_batch: int
    eval_length: int
    warmup: int


# ``small`` keeps widths and lengths (the names say them) and shrinks the batch to 2, so
# that the test suite runs every benchmark in seconds; its times mean nothing.
SIZES: dict[str, Sizes] = {
    "full": Sizes(train_batch=256, train_length=60, eval_batch=250, eval_length=1000, warmup=2),
    "small": Sizes(train_batch=2, train_length=60, eval_batch=2, eval_length=1000, warmup=1),
}


@dataclass(frozen=True)
class Context:
    """What every benchmark function receives."""

    device: torch.device
    size: str = "full"
    repeat: int = 5

    @property
    def sizes(self) -> Sizes:
        return SIZES[self.size]


BENCHMARKS: dict[str, Callable[[Context], list[dict[str, Any]]]] = {}


OPT_IN: set[str] = set()  # benchmarks that run only when named (--only): minutes long


def register(name: str, opt_in: bool = False):
    """Decorator: add ``fn(ctx) -> entries`` to :data:`BENCHMARKS` under ``name``;
    ``opt_in``: not part of the default run (it runs when ``--only`` names it)."""

    def add(fn):
        if name in BENCHMARKS:
            raise ValueError(f"benchmark {name!r} is already registered")
        BENCHMARKS[name] = fn
        if opt_in:
            OPT_IN.add(name)
        return fn

    return add


# the modules whose import registers the benchmarks (resolved lazily, like the model registry)
CASE_MODULES = ("sst_core.bench.cases", "sst_core.bench.cases_selective", "sst_core.bench.cases_s4d",
                "sst_core.bench.cases_anchors", "sst_core.bench.cases_sweep")


def load_cases() -> dict[str, Callable[[Context], list[dict[str, Any]]]]:
    """:data:`BENCHMARKS`, after importing the modules that register them."""
    import importlib

    for module in CASE_MODULES:
        importlib.import_module(module)
    return BENCHMARKS


def names(opt_in: bool = False) -> tuple[str, ...]:
    """The benchmarks of the default run, in registry order (``opt_in``: every one)."""
    return tuple(n for n in load_cases() if opt_in or n not in OPT_IN)


def opt_in_names() -> tuple[str, ...]:
    """The benchmarks that run only when named."""
    return tuple(n for n in load_cases() if n in OPT_IN)


def select(only: Iterable[str] | None = None) -> list[str]:
    """The registered names to run, in registry order (none given: the default run, every
    benchmark but the opt-in ones); unknown names raise ValueError."""
    load_cases()
    if not only:
        return list(names())
    wanted = list(dict.fromkeys(only))
    unknown = [n for n in wanted if n not in BENCHMARKS]
    if unknown:
        raise ValueError(f"unknown benchmark(s) {', '.join(map(repr, unknown))}; "
                         f"allowed: {', '.join(BENCHMARKS)}")
    return [n for n in BENCHMARKS if n in wanted]


def resolve_device(device: str) -> torch.device:
    """``auto`` -> CUDA when available, else CPU; ``cuda`` without CUDA raises ValueError."""
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; allowed: {', '.join(DEVICES)}")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device 'cuda' requested but CUDA is not available "
                         f"(torch {torch.__version__}); use --device cpu or auto")
    return torch.device(device)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_side_by_side(fns: Sequence[Callable[[], Any]], repeat: int, warmup: int,
                      device: torch.device) -> list[list[float]]:
    """Seconds per call of each function: ``warmup`` untimed rounds, then ``repeat``
    rounds calling them in turn (f0, f1, f0, f1, ...). Returns one list per function."""
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    for _ in range(warmup):
        for f in fns:
            f()
    _sync(device)
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for f, out in zip(fns, samples):
            _sync(device)
            start = time.perf_counter()
            f()
            _sync(device)
            out.append(time.perf_counter() - start)
    return samples


def _median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


def status(ratio: float | None, target: float | None) -> str:
    if ratio is None or target is None:
        return ""
    return "meets" if ratio <= target else "misses"


def make_entry(name: str, kind: str, model: str, ctx: Context, sizes: dict[str, Any],
               ours: list[float], anchor: list[float] | None = None,
               anchor_name: str | None = None, target: float | None = None,
               work: dict[str, Any] | None = None, roofline_target: float | None = None
               ) -> dict[str, Any]:
    """An entry from the timed samples (seconds per call) of ours and, if any, the anchor.

    ``work``: :func:`sst_core.bench.roofline.count_work` of one call of ours (training
    steps give it): its flops and estimated bytes join the entry, and :func:`run` adds the
    roofline columns (:func:`sst_core.bench.roofline.annotate`); ``roofline_target``: the
    goal for ``ours_s / roofline_s``."""
    n_tokens = sizes.get("models", 1) * sizes["batch"] * sizes["length"]
    ours_s = _median(ours)
    anchor_s = _median(anchor) if anchor else None
    ratio = ours_s / anchor_s if anchor_s else None  # None: no anchor (or a 0 s reading)
    extra: dict[str, Any] = dict(work or {})
    if roofline_target is not None:
        extra["roofline_target"] = roofline_target
    return {
        "name": name, "kind": kind, "model": model, "anchor": anchor_name,
        "ours_s": ours_s, "anchor_s": anchor_s, "ratio": ratio,
        "target": target, "status": status(ratio, target),
        "sizes": sizes, "device": str(ctx.device), "repeat": ctx.repeat,
        "warmup": ctx.sizes.warmup,
        "tokens_per_s": n_tokens / ours_s if ours_s else None,
        "anchor_tokens_per_s": n_tokens / anchor_s if anchor_s else None,
        "ours_samples_s": ours, "anchor_samples_s": anchor, **extra,
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def hardware(device: torch.device) -> dict[str, Any]:
    """Where the numbers come from."""
    cpu = _cpu_model()
    return {
        "cpu_model": cpu,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch_version": torch.__version__,
        "python": platform.python_version(),
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else cpu,
        "THP_MEM_ALLOC_ENABLE": os.environ.get("THP_MEM_ALLOC_ENABLE"),
        "load_avg_1m": _loadavg(),
    }


def _loadavg() -> float | None:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def run(only: Iterable[str] | None = None, device: str = "auto", size: str = "full",
        repeat: int = 5, threads: int | None = None) -> dict[str, Any]:
    """Run the selected benchmarks: ``{"hardware": {...}, "settings": {...}, "entries": [...]}``.

    ``threads`` sets torch's intra-op threads for the run (restored afterwards).
    """
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; allowed: {', '.join(SIZES)}")
    if not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat must be a positive int, got {repeat!r}")
    if threads is not None and (not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be a positive int, got {threads!r}")
    chosen = select(only)
    ctx = Context(resolve_device(device), size, repeat)
    before = torch.get_num_threads()
    try:
        if threads is not None:
            torch.set_num_threads(threads)
        hw = hardware(ctx.device)
        hw["roofline"] = measure_roofline(ctx.device, size)
        entries = [e for name in chosen for e in BENCHMARKS[name](ctx)]
        for e in entries:
            if "flops" in e:
                roofline.annotate(e, hw["roofline"])
        hw["load_avg_1m_end"] = _loadavg()  # other processes slow the run: look at both
        hw["scan_loops"] = native.status()  # C or torch loops for the CPU linear scan
        hw["selective_scan_loops"] = native_selective.status()  # and the selective scan
    finally:
        torch.set_num_threads(before)
    return {"hardware": hw,
            "settings": {"size": size, "repeat": repeat, "warmup": ctx.sizes.warmup,
                         "statistic": "median", "interleaved": True, "seed": SEED},
            "entries": entries}


def to_json(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=2)


def _ms(x: float | None) -> str:
    return "" if x is None else f"{1e3 * x:.2f}"


def _load(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _sizes(s: dict[str, Any]) -> str:
    short = {"batch": "b", "length": "L", "n_tokens": "tokens", "n_classes": "classes"}
    return " ".join(f"{short.get(k, k)}={v}" for k, v in s.items())


def _roofline_line(roof: dict[str, Any] | None) -> list[str]:
    if not roof:
        return []
    return [f"- roofline ({roof['threads']} threads): float32 matmul "
            f"{roof['matmul_flops_per_s'] / 1e9:.1f} GFLOP/s (n = {roof['matmul_n']}), copy "
            f"{roof['copy_bytes_per_s'] / 1e9:.1f} GB/s, ridge "
            f"{roof['ridge_flops_per_byte']:.1f} flop/byte"]


def to_markdown(result: dict[str, Any]) -> str:
    hw, st = result["hardware"], result["settings"]
    lines = [
        "# sst bench",
        "",
        f"- CPU: {hw['cpu_model']} ({hw['cpu_count']} logical cores); load average "
        f"(1 min) {_load(hw.get('load_avg_1m'))} at start, {_load(hw.get('load_avg_1m_end'))} at end",
        f"- torch {hw['torch_version']}, {hw['torch_threads']} threads, "
        f"THP_MEM_ALLOC_ENABLE={hw['THP_MEM_ALLOC_ENABLE']}",
        f"- CPU linear scan: {hw.get('scan_loops', 'torch loops (before the C loops)')}",
        f"- CPU selective scan: {hw.get('selective_scan_loops', 'torch path (before the C loops)')}",
        f"- device: {hw['device']} ({hw['device_name']})",
        *_roofline_line(hw.get("roofline")),
        f"- size {st['size']}: median of {st['repeat']} after {st['warmup']} warm-up call(s), "
        "ours and anchor interleaved; ratio = ours / anchor; gaps under 1.3x are noise on a "
        "shared machine; tokens/s: ours" + (" (small sizes: the times mean nothing)"
                                            if st["size"] == "small" else ""),
        "",
        "| name | sizes | ours ms | anchor ms | ratio | target | status | tokens/s |",
        "|---|---|---:|---:|---:|---:|---|---:|",
    ]
    for e in result["entries"]:
        ratio = "" if e["ratio"] is None else f"{e['ratio']:.2f}"
        target = "" if e["target"] is None else f"<= {e['target']:g}"
        tps = "" if e["tokens_per_s"] is None else f"{e['tokens_per_s']:,.0f}"
        anchor = _ms(e["anchor_s"]) + (f" ({e['anchor']})" if e["anchor"] else "")
        lines.append(f"| {e['name']} | {_sizes(e['sizes'])} | {_ms(e['ours_s'])} | {anchor} "
                     f"| {ratio} | {target} | {e['status']} | {tps} |")
    bandwidth = [e for e in result["entries"] if "achieved_bandwidth" in e]
    if bandwidth:
        lines += ["", "Memory bandwidth of the fast path (goal: at least 40% of the copy bandwidth):",
                  "", "| name | achieved GB/s | copy GB/s | share |", "|---|---:|---:|---:|"]
        for e in bandwidth:
            lines.append(f"| {e['name']} | {e['achieved_bandwidth'] / 1e9:.2f} | "
                         f"{e['copy_bandwidth'] / 1e9:.2f} | {e['bandwidth_share']:.0%} |")
    work = [e for e in result["entries"] if "roofline_ratio" in e]
    if work:
        lines += ["", "Limits of the training steps (sst_core.bench.roofline: flop limit = "
                  "the step's matrix products at the rates measured at their shapes + the "
                  "rest of its flops at the matmul peak; byte limit = the bytes the fast "
                  "path moves, the C loops' arrays included, at the copy bandwidth; "
                  "x limit = ours / the larger; goal for the Table 2 models at d_model 64: "
                  f"x limit <= {roofline.ROOFLINE_TARGET:g}):", "",
                  "| name | GFLOP | GB moved | GFLOP/s | flop limit ms | byte limit ms | bound "
                  "| x limit | goal |", "|---|---:|---:|---:|---:|---:|---|---:|---|"]
        for e in work:
            goal = (f"<= {e['roofline_target']:g}: {e['roofline_status']}"
                    if e.get("roofline_target") is not None else "")
            ratio = "" if e["roofline_ratio"] is None else f"{e['roofline_ratio']:.1f}"
            lines.append(f"| {e['name']} | {e['flops'] / 1e9:.3f} | {e['bytes'] / 1e9:.3f} | "
                         f"{(e['gflops_per_s'] or 0):.2f} | {_ms(e['compute_s'])} | "
                         f"{_ms(e['memory_s'])} | {e['bound']} | {ratio} | {goal} |")
    for e in result["entries"]:
        if "runs_per_hour" in e and "layout" not in e:  # before / after, one layout
            lines += ["", f"Sweep throughput ({e['name']}, {e['sizes']['runs']} runs): "
                      f"{e['runs_per_hour']:,.0f} runs per hour ({e['model']}) against "
                      f"{e['anchor_runs_per_hour']:,.0f} ({e['anchor']})."]
        elif "runs_per_hour" in e:
            other = ("" if e["anchor_runs_per_hour"] is None else
                     f" ({e['anchor_runs_per_hour']:,.0f} with {e['anchor_layout'][0]} x "
                     f"{e['anchor_layout'][1]})")
            lines += ["", f"Sweep throughput ({e['name']}): {e['runs_per_hour']:,.0f} runs "
                      f"per hour of at most {e['sizes']['max_steps']} steps with "
                      f"{e['layout'][0]} worker(s) x {e['layout'][1]} thread(s), the "
                      f"default{other}."]
    memory = [e for e in result["entries"] if "ours_peak_bytes" in e]
    if memory:
        lines += ["", "Peak memory (torch tensors; method in the JSON's `peak_method`):", "",
                  "| name | ours MB | anchor MB | ratio | target | status |",
                  "|---|---:|---:|---:|---:|---|"]
        for e in memory:
            lines.append(f"| {e['name']} | {e['ours_peak_bytes'] / 1e6:,.1f} | "
                         f"{e['anchor_peak_bytes'] / 1e6:,.1f} | {e['memory_ratio']:.2f} | "
                         f"<= {e['memory_target']:g} | {e['memory_status']} |")
    return "\n".join(lines)


def peak_bytes(fn: Callable[[], Any], device: torch.device) -> int:
    """Peak bytes of tensors allocated during one call of ``fn`` (beyond those alive before).

    CUDA: ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``, minus what
    was allocated before. CPU: ``torch.profiler`` with ``profile_memory=True`` records every
    allocation (+bytes) and free (-bytes) of torch's CPU allocator, in order, as
    ``[memory]`` events; the peak of their running sum is the measured peak. Frees of
    tensors allocated before the call are not reported, so ``fn`` must free what it
    allocates (take gradients with ``torch.autograd.grad``, not into ``.grad``). This counts
    torch tensors only, not the process's RSS (no allocator caches, no FFT plans).
    """
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        fn()
        torch.cuda.synchronize(device)
        return int(torch.cuda.max_memory_allocated(device) - base)
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    running = peak = 0
    for e in sorted(events, key=lambda e: e.start_ns()):
        running += e.nbytes()
        peak = max(peak, running)
    return int(peak)


def copy_bandwidth(device: torch.device, n_bytes: int = 1 << 28, repeat: int = 5,
                   best: bool = False) -> float:
    """The machine's measured copy bandwidth in bytes/s: ``dst.copy_(src)`` of ``n_bytes``
    (read + write counted), median of ``repeat`` (``best``: the fastest of them)."""
    src = torch.empty(n_bytes // 4, device=device)
    dst = torch.empty_like(src)
    src.fill_(1.0)
    dst.copy_(src)  # touch the pages once
    times = []
    for _ in range(repeat):
        _sync(device)
        start = time.perf_counter()
        dst.copy_(src)
        _sync(device)
        times.append(time.perf_counter() - start)
    return 2 * n_bytes / (min(times) if best else _median(times))


# (matmul n, copy bytes) of the machine's limits per size (small: quick and meaningless)
ROOFLINE_SIZES = {"full": (2048, 1 << 28), "small": (256, 1 << 20)}


ROOFLINE_REPEAT = 7


def measure_roofline(device: torch.device, size: str = "full") -> dict[str, Any]:
    """The machine's two limits on the current thread count (the ``roofline`` of a run's
    hardware section): a float32 matmul's flops/s and the copy bandwidth, each the best of
    ``ROOFLINE_REPEAT`` calls (limits: what the machine reaches, least disturbed by other
    processes), and the ridge intensity (flops per byte) where they meet."""
    n, n_bytes = ROOFLINE_SIZES[size]
    peak = roofline.matmul_flops_per_s(device, n, repeat=ROOFLINE_REPEAT)
    bw = copy_bandwidth(device, n_bytes=n_bytes, repeat=ROOFLINE_REPEAT, best=True)
    return {"matmul_flops_per_s": peak, "copy_bytes_per_s": bw, "ridge_flops_per_byte": peak / bw,
            "matmul_n": n, "copy_bytes": n_bytes, "threads": torch.get_num_threads(),
            "statistic": f"best of {ROOFLINE_REPEAT}", "target": roofline.ROOFLINE_TARGET}
