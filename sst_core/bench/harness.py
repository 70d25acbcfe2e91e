"""Throughput benchmarks, ours beside a torch reference in one run (``sst bench``).

A *benchmark* is one registered function ``fn(ctx: Context) -> list[dict]`` in
:data:`BENCHMARKS`, under a name that is also the name of (or the prefix of) the entries
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
from functools import partial
from typing import Any, Callable, Iterable, Sequence

import torch
from torch import nn
from torch.nn import functional as F

from sst_core.ops import native

DEVICES = ("auto", "cpu", "cuda")
SEED = 0
GROUP = "S3"  # the tracking task's data: order 6, vocabulary identity + generators
TOKENS = "generators"
LR = 1e-3
WEIGHT_DECAY = 0.01  # as TrackingConfig
GRAD_CLIP = 1.0  # as TrackingConfig
TRAIN_TARGET = 1.2  # ours / anchor for a training step, at most (the bar)
RNN_WIDTHS = (64, 128)  # the d of the dense-RNN comparisons


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


# -- the registry --------------------------------------------------------------------

BENCHMARKS: dict[str, Callable[[Context], list[dict[str, Any]]]] = {}


def register(name: str):
    """Decorator: add ``fn(ctx) -> entries`` to :data:`BENCHMARKS` under ``name``."""

    def add(fn):
        if name in BENCHMARKS:
            raise ValueError(f"benchmark {name!r} is already registered")
        BENCHMARKS[name] = fn
        return fn

    return add


def names() -> tuple[str, ...]:
    return tuple(BENCHMARKS)


def select(only: Iterable[str] | None = None) -> list[str]:
    """The registered names to run, in registry order; unknown names raise ValueError."""
    if not only:
        return list(BENCHMARKS)
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


# -- timing --------------------------------------------------------------------------

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


def train_step(model: nn.Module, tokens: torch.Tensor, targets: torch.Tensor
               ) -> Callable[[], None]:
    """One call = one training step of ``sst_core.training.tracking`` on fixed data (see module doc)."""
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    loss_fn = nn.CrossEntropyLoss()

    def step() -> None:
        logits = model(tokens)  # (b, L, n_classes)
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        opt.step()

    return step


def eval_forward(model: nn.Module, tokens: torch.Tensor) -> Callable[[], None]:
    """One call = one forward pass in eval mode, without gradients."""
    model.eval()

    def run() -> None:
        with torch.no_grad():
            model(tokens)

    return run


# -- models and data -----------------------------------------------------------------

class TorchRNN(nn.Module):
    """The anchor: one-hot tokens -> ``torch.nn.RNN`` (tanh) or ``torch.nn.GRU`` -> linear head.

    The same sizes as our RNN family, whose cells fold the embedding into ``W_x`` and so
    read one-hot rows too (an embedding plus a d x d projection would slow the anchor).
    """

    KINDS = {"rnn": partial(nn.RNN, nonlinearity="tanh"), "gru": nn.GRU}

    def __init__(self, kind: str, n_tokens: int, n_classes: int, d: int):
        super().__init__()
        self.n_tokens = n_tokens
        self.rnn = self.KINDS[kind](n_tokens, d, batch_first=True)
        self.head = nn.Linear(d, n_classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = F.one_hot(tokens, self.n_tokens).to(self.head.weight.dtype)  # (b, L, n_tokens)
        return self.head(self.rnn(x)[0])  # (b, L, n_classes)


ANCHOR_NAMES = {"rnn": "torch.nn.RNN(tanh)", "gru": "torch.nn.GRU"}


def task_data(batch: int, length: int, device: torch.device
              ) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Fixed-seed words of the tracking task: tokens, targets (b, L) and the group order."""
    from sst_core.groups import get_group
    from sst_core.tasks.tracking import sample

    group = get_group(GROUP)
    words, states = sample(group, batch, length, tokens=TOKENS, seed=SEED)
    return (torch.from_numpy(words).to(device), torch.from_numpy(states).to(device),
            group.order)


def build_model(model: str, n_tokens: int, d_model: int, d_state: int, device: torch.device,
                **kw: Any) -> nn.Module:
    """A one-layer registry model (its weights drawn from the current torch seed)."""
    from sst_core.models import build

    return build(model, n_tokens, n_tokens, d_model=d_model, d_state=d_state, n_layers=1,
                 **kw).to(device)


def _ours(model: str, n_tokens: int, d_model: int, d_state: int, device: torch.device,
          **kw: Any) -> nn.Module:
    torch.manual_seed(SEED)
    return build_model(model, n_tokens, d_model, d_state, device, **kw)


# -- entries -------------------------------------------------------------------------

def _median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


def status(ratio: float | None, target: float | None) -> str:
    if ratio is None or target is None:
        return ""
    return "meets" if ratio <= target else "misses"


def make_entry(name: str, kind: str, model: str, ctx: Context, sizes: dict[str, Any],
               ours: list[float], anchor: list[float] | None = None,
               anchor_name: str | None = None, target: float | None = None
               ) -> dict[str, Any]:
    """An entry from the timed samples (seconds per call) of ours and, if any, the anchor."""
    n_tokens = sizes.get("models", 1) * sizes["batch"] * sizes["length"]
    ours_s = _median(ours)
    anchor_s = _median(anchor) if anchor else None
    ratio = ours_s / anchor_s if anchor_s else None  # None: no anchor (or a 0 s reading)
    return {
        "name": name, "kind": kind, "model": model, "anchor": anchor_name,
        "ours_s": ours_s, "anchor_s": anchor_s, "ratio": ratio,
        "target": target, "status": status(ratio, target),
        "sizes": sizes, "device": str(ctx.device), "repeat": ctx.repeat,
        "warmup": ctx.sizes.warmup,
        "tokens_per_s": n_tokens / ours_s if ours_s else None,
        "anchor_tokens_per_s": n_tokens / anchor_s if anchor_s else None,
        "ours_samples_s": ours, "anchor_samples_s": anchor,
    }


def _call(kind: str, model: nn.Module, ctx: Context) -> tuple[Callable[[], None], dict]:
    s = ctx.sizes
    batch, length = (s.train_batch, s.train_length) if kind == "train" else (s.eval_batch,
                                                                               s.eval_length)
    tokens, targets, _ = task_data(batch, length, ctx.device)
    fn = train_step(model, tokens, targets) if kind == "train" else eval_forward(model, tokens)
    return fn, {"batch": batch, "length": length}


def compare_rnn(ctx: Context, *, name: str, model: str, anchor: str, kind: str, d: int,
                target: float | None) -> list[dict[str, Any]]:
    """Our dense RNN ``model`` of width ``d`` against the torch ``anchor`` ("rnn" or "gru")."""
    _, _, n_tokens = task_data(1, 1, ctx.device)
    ours = _ours(model, n_tokens, d, d, ctx.device)
    torch.manual_seed(SEED)
    ref = TorchRNN(anchor, n_tokens, n_tokens, d).to(ctx.device)
    f_ours, sizes = _call(kind, ours, ctx)
    f_ref, _ = _call(kind, ref, ctx)
    t_ours, t_ref = time_side_by_side([f_ours, f_ref], ctx.repeat, ctx.sizes.warmup, ctx.device)
    sizes = {**sizes, "d": d, "n_tokens": n_tokens, "n_classes": n_tokens}
    return [make_entry(name, kind, model, ctx, sizes, t_ours, t_ref, ANCHOR_NAMES[anchor],
                       target)]


def model_throughput(ctx: Context, *, name: str, model: str, kind: str,
                     **kw: Any) -> list[dict[str, Any]]:
    """One registered model at the quick profile's sizes, no anchor: time and tokens/s."""
    from sst_core.experiments.paper1 import d_state_grid
    from sst_core.models.registry import REGISTRY
    from sst_core.spec.profiles import get_profile

    P = get_profile("quick")
    d_state = d_state_grid(P, model)[0]
    _, _, n_tokens = task_data(1, 1, ctx.device)
    ours = _ours(model, n_tokens, P.track_d_model, d_state, ctx.device, **kw)
    fn, sizes = _call(kind, ours, ctx)
    (t_ours,) = time_side_by_side([fn], ctx.repeat, ctx.sizes.warmup, ctx.device)
    widths = ({"d": d_state} if REGISTRY[model].family == "rnn"  # d_model is unused there
              else {"d_model": P.track_d_model, "d_state": d_state})
    sizes = {**sizes, **widths, "n_tokens": n_tokens, **kw}
    label = ours.name if hasattr(ours, "name") else model
    return [make_entry(name, kind, label, ctx, sizes, t_ours)]


# -- the registered benchmarks -------------------------------------------------------

def _register_defaults() -> None:
    from sst_core.experiments.paper1 import TABLE2_MODELS

    for model, anchor, target in (("tanh_rnn", "rnn", TRAIN_TARGET),
                                  ("state_gated_rnn", "gru", TRAIN_TARGET)):
        for d in RNN_WIDTHS:
            for kind, suffix, tgt in (("train", f"train_d{d}", target),
                                      ("eval", f"eval_L1000_d{d}", target)):
                name = f"{model}_{suffix}"
                register(name)(partial(compare_rnn, name=name, model=model, anchor=anchor,
                                       kind=kind, d=d, target=tgt))
    models = [(m, m, {}) for m in TABLE2_MODELS] + [("rnn_phi_tanh", "rnn_phi", {"phi": "tanh"})]
    for label, model, kw in models:
        for kind, suffix in (("train", "train_L60"), ("eval", "eval_L1000")):
            name = f"throughput_{label}_{suffix}"
            register(name)(partial(model_throughput, name=name, model=model, kind=kind, **kw))


_register_defaults()


# -- running and reporting -----------------------------------------------------------

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
        entries = [e for name in chosen for e in BENCHMARKS[name](ctx)]
        hw["load_avg_1m_end"] = _loadavg()  # other processes slow the run: look at both
        hw["scan_loops"] = native.status()  # C or torch loops for the CPU linear scan
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
        f"- device: {hw['device']} ({hw['device_name']})",
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


# -- S4D: chunked Vandermonde kernel + FFT convolution (paper 2) ---------------------------

S4D_KERNEL_LENGTHS = (1024, 4096, 16384)
# (batch, H) per size; N = 64 always. ``small`` keeps the lengths (the names say them).
S4D_KERNEL_SIZES = {"full": (16, 256), "small": (1, 4)}


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


S4D_MEMORY_TARGET = 0.25  # ours / materialising reference, peak memory (the goal)


def s4d_kernel_fwd_bwd(ctx: Context, *, L: int, batch: int | None = None) -> list[dict[str, Any]]:
    """S4D kernel generation + FFT convolution, forward and backward (gradients of
    ``sum(y)`` w.r.t. log_dt, Lambda, C, D and the input ``u`` (b, H, L)), ZOH, S4D-Inv:
    our chunked ``vandermonde_kernel`` against the standalone S4D's materialising
    ``vandermonde_kernel_ref``; the same discretisation and ``fft_conv`` around both.
    Peak memory (``peak_bytes``) from one extra, untimed call of each.

    ``batch`` overrides the size's batch: the ``_b1`` rows use one sequence, so the kernel's
    own memory is what is compared; at batch 16 the convolution's activations, the same for
    both, dominate the peak."""
    from sst_core.models.s4 import S4DKernel
    from sst_core.ops.ssm_kernel import (
        discretize_diag,
        fft_conv,
        vandermonde_kernel,
        vandermonde_kernel_ref,
    )

    size_batch, H = S4D_KERNEL_SIZES[ctx.size]
    suffix = "" if batch is None else f"_b{batch}"
    batch = size_batch if batch is None else batch
    N = 64
    torch.manual_seed(SEED)
    kernel = S4DKernel(H, N, init="inv", seed=SEED).to(ctx.device)
    D = torch.randn(H, device=ctx.device, requires_grad=True)
    u = torch.randn(batch, H, L, device=ctx.device, requires_grad=True)
    leaves = [*kernel.parameters(), D, u]

    def step(vandermonde) -> Callable[[], None]:
        def run() -> None:
            log_A_bar, B_bar = discretize_diag(kernel.Lambda, kernel.dt, "zoh")  # (H, N/2)
            K = vandermonde(torch.view_as_complex(kernel.C) * B_bar, log_A_bar, L)  # (H, L)
            y = fft_conv(u, K, D)  # (b, H, L)
            torch.autograd.grad(y.sum(), leaves)

        return run

    ours, ref = step(vandermonde_kernel), step(vandermonde_kernel_ref)
    t_ours, t_ref = time_side_by_side([ours, ref], ctx.repeat, ctx.sizes.warmup, ctx.device)
    name = f"s4d_kernel_fwd_bwd_L{L}{suffix}"
    entry = make_entry(name, "train", "vandermonde_kernel+fft_conv", ctx,
                       {"batch": batch, "length": L, "H": H, "N": N}, t_ours, t_ref,
                       "vandermonde_kernel_ref+fft_conv (materialised (H, N/2, L))")
    ours_peak, anchor_peak = peak_bytes(ours, ctx.device), peak_bytes(ref, ctx.device)
    memory_ratio = ours_peak / anchor_peak
    entry.update(ours_peak_bytes=ours_peak, anchor_peak_bytes=anchor_peak,
                 memory_ratio=memory_ratio, memory_target=S4D_MEMORY_TARGET,
                 memory_status="meets" if memory_ratio <= S4D_MEMORY_TARGET else "misses",
                 peak_method=("torch.cuda.max_memory_allocated" if ctx.device.type == "cuda"
                              else "torch.profiler profile_memory: running sum of CPU allocations"))
    return [entry]


for _L in S4D_KERNEL_LENGTHS:
    register(f"s4d_kernel_fwd_bwd_L{_L}")(partial(s4d_kernel_fwd_bwd, L=_L))
for _L in S4D_KERNEL_LENGTHS:
    register(f"s4d_kernel_fwd_bwd_L{_L}_b1")(partial(s4d_kernel_fwd_bwd, L=_L, batch=1))
del _L


# -- diagonal affine recurrences: the scan every Mamba-family model runs (issue "Speed") --------

SCAN_LENGTHS = (1000, 4096)
# (batch, channels) per size: channels = d_inner * N of a small Mamba (128 x 16)
SCAN_SIZES = {"full": (8, 2048), "small": (1, 4)}
SCAN_TARGETS = {"cpu": 0.5, "cuda": 0.1}  # ours / per-step autograd loop: 2x (CPU), 10x (CUDA)


def copy_bandwidth(device: torch.device, n_bytes: int = 1 << 28, repeat: int = 5) -> float:
    """The machine's measured copy bandwidth in bytes/s: ``dst.copy_(src)`` of ``n_bytes``
    (read + write counted), median of ``repeat``."""
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
    return 2 * n_bytes / _median(times)


def diag_scan_fwd_bwd(ctx: Context, *, L: int, complex_: bool) -> list[dict[str, Any]]:
    """``linear_scan`` (hand-written backward) against ``linear_scan_ref`` (a per-step loop
    that autograd differentiates): ``h_t = a_t h_{t-1} + b_t``, forward and backward of
    ``sum(h)``, shape ``(batch, L, channels)``. Bandwidth: the fast path reads a and b and
    writes h forward, reads the gradient, a and h and writes both gradients backward,
    about 8 tensors of that shape moved, beside ``copy_bandwidth``."""
    from sst_core.ops.scan import linear_scan, linear_scan_ref

    batch, channels = SCAN_SIZES[ctx.size]
    dtype = torch.complex64 if complex_ else torch.float32
    gen = torch.Generator().manual_seed(SEED)
    mag = torch.rand(batch, L, channels, generator=gen) * 0.5 + 0.45  # |a| in (0.45, 0.95)
    if complex_:
        phase = torch.rand(batch, L, channels, generator=gen) * 6.28
        a = torch.polar(mag, phase)
        b = torch.randn(batch, L, channels, generator=gen, dtype=torch.complex64)
    else:
        a, b = mag, torch.randn(batch, L, channels, generator=gen)
    a = a.to(ctx.device).requires_grad_(True)
    b = b.to(ctx.device).requires_grad_(True)

    def step(scan) -> Callable[[], None]:
        def run() -> None:
            h = scan(a, b)  # (batch, L, channels)
            loss = h.real.sum() if complex_ else h.sum()
            torch.autograd.grad(loss, (a, b))

        return run

    t_ours, t_ref = time_side_by_side([step(linear_scan), step(linear_scan_ref)], ctx.repeat,
                                      ctx.sizes.warmup, ctx.device)
    kind = "complex" if complex_ else "real"
    name = f"diag_scan_{kind}_L{L}"
    entry = make_entry(name, "train", f"linear_scan ({kind})", ctx,
                       {"batch": batch, "length": L, "channels": channels, "dtype": str(dtype)},
                       t_ours, t_ref, "linear_scan_ref (per-step autograd loop)",
                       SCAN_TARGETS[ctx.device.type])
    moved = 8 * batch * L * channels * (8 if complex_ else 4)
    entry.update(bytes_moved=moved, achieved_bandwidth=moved / entry["ours_s"],
                 copy_bandwidth=copy_bandwidth(ctx.device,
                                               n_bytes=1 << (28 if ctx.size == "full" else 20)))
    entry["bandwidth_share"] = entry["achieved_bandwidth"] / entry["copy_bandwidth"]
    return [entry]


for _L in SCAN_LENGTHS:
    for _c in (False, True):
        register(f"diag_scan_{'complex' if _c else 'real'}_L{_L}")(
            partial(diag_scan_fwd_bwd, L=_L, complex_=_c))
del _L, _c


# -- many models at once -------------------------------------------------------------

STACK_K = {"full": 16, "small": 2}  # models per stack
STACK_TARGETS = {"cpu": 0.5, "cuda": 0.1}  # stacked / K sequential steps: 2x (CPU), 10x (CUDA)


def stacked_training(ctx: Context, *, model: str) -> list[dict[str, Any]]:
    """One training step of K models at the quick profile's sizes stacked into one
    computation (:class:`sst_core.training.stacked.StackedTracker`: ``vmap`` over stacked weights,
    per-row clipping and AdamW) against K ordinary training steps one after the other
    (each model with its own ``torch.optim.AdamW``, as K separate runs would do it)."""
    from sst_core.experiments.paper1 import d_state_grid
    from sst_core.spec.profiles import get_profile
    from sst_core.training.stacked import StackedTracker

    P = get_profile("quick")
    K = STACK_K[ctx.size]
    batch, length = (P.track_batch, 60) if ctx.size == "full" else (2, 8)
    d_state = d_state_grid(P, model)[0]
    _, _, n_tokens = task_data(1, 1, ctx.device)
    models = []
    for k in range(K):
        torch.manual_seed(SEED + k)
        models.append(build_model(model, n_tokens, P.track_d_model, d_state, ctx.device))
    stack = StackedTracker([m for m in models], WEIGHT_DECAY, GRAD_CLIP)
    gen = torch.Generator().manual_seed(SEED)
    x = torch.randint(0, n_tokens, (K, batch, length), generator=gen).to(ctx.device)
    y = torch.randint(0, n_tokens, (K, batch, length), generator=gen).to(ctx.device)

    def ours() -> None:
        logits = stack.logits(x)  # (K, b, L, n)
        ce = F.cross_entropy(logits.reshape(-1, n_tokens), y.reshape(-1), reduction="none")
        stack.step(ce.view(K, -1).mean(1), [LR] * K)

    steps = [train_step(m, x[k], y[k]) for k, m in enumerate(models)]

    def sequential() -> None:
        for step in steps:
            step()

    t_ours, t_ref = time_side_by_side([ours, sequential], ctx.repeat, ctx.sizes.warmup,
                                      ctx.device)
    sizes = {"models": K, "batch": batch, "length": length, "d_state": d_state,
             "d_model": P.track_d_model}
    return [make_entry(f"stacked_train_K{STACK_K['full']}_{model}", "train",
                       f"{model} x{K}, stacked", ctx, sizes, t_ours, t_ref,
                       f"{K} sequential training steps", STACK_TARGETS[ctx.device.type])]


def _register_stacked() -> None:
    from sst_core.experiments.paper1 import TABLE2_MODELS

    for model in TABLE2_MODELS:
        register(f"stacked_train_K{STACK_K['full']}_{model}")(partial(stacked_training,
                                                                      model=model))


_register_stacked()


# -- the semi-affine repair: what the state-dependent block costs ------------------------

SEMI_AFFINE = ("semi_affine_negative_mamba", "negative_mamba")  # (ours, the affine anchor)


def semi_affine_cost(ctx: Context, *, name: str, kind: str) -> list[dict[str, Any]]:
    """The cost of the correction ``P tanh(Q h + c)``: semi-affine Negative Mamba (a
    per-step loop, :mod:`sst_core.models.semi_affine`) against the affine Negative Mamba
    (the fused selective scan) with the same seed, at the quick profile's S3 tracking
    sizes (d_model 16, d_state 16, default rank 8; batch 64, length 60 for a training step,
    length 1000 for eval; batch 2 at ``small`` sizes). No target: the ratio is the
    price of the state-dependent block, reported, not judged."""
    from sst_core.spec.profiles import get_profile

    P = get_profile("quick")
    model, anchor = SEMI_AFFINE
    d_state = P.track_d_states[0]
    batch = P.track_batch if ctx.size == "full" else 2
    length = 60 if kind == "train" else 1000
    tokens, targets, n_tokens = task_data(batch, length, ctx.device)
    nets = [_ours(m, n_tokens, P.track_d_model, d_state, ctx.device) for m in (model, anchor)]
    fns = [train_step(net, tokens, targets) if kind == "train" else eval_forward(net, tokens)
           for net in nets]
    t_ours, t_ref = time_side_by_side(fns, ctx.repeat, ctx.sizes.warmup, ctx.device)
    sizes = {"batch": batch, "length": length, "d_model": P.track_d_model, "d_state": d_state,
             "rank": nets[0].layers[0].cfg.rank, "n_tokens": n_tokens}
    return [make_entry(name, kind, model, ctx, sizes, t_ours, t_ref,
                       f"{anchor}, the affine original (ratio: cost of the correction)")]


register("semi_affine_train_s3")(partial(semi_affine_cost, name="semi_affine_train_s3",
                                         kind="train"))
register("semi_affine_eval_L1000")(partial(semi_affine_cost, name="semi_affine_eval_L1000",
                                           kind="eval"))


# -- run records -----------------------------------------------------------------------

RECORD_DIR = "bench"  # results/bench/: benchmark records, kept in git (the chapter reads them)


def write_record(prefix: str, fields: dict[str, Any], wall: float, root=None):
    """Write ``results/bench/<prefix>-<utc>.json``: ``fields`` plus the git commit, package
    versions, wall time and creation time; return the path. Benchmark and GPU-check
    records both go through here."""
    from datetime import datetime, timezone
    from pathlib import Path

    from sst_core.store.provenance import git_commit, versions
    from sst_core.store.records import results_dir, write_atomic

    now = datetime.now(timezone.utc)
    record = {"schema": 1, **fields,
              "git_commit": git_commit(Path(__file__).resolve().parent),
              "versions": versions(), "wall_time_s": round(wall, 2),
              "created_utc": now.isoformat(timespec="seconds")}
    path = (Path(root) if root else results_dir()) / RECORD_DIR / (
        f"{prefix}-{now.strftime('%Y%m%dT%H%M%SZ')}.json")
    write_atomic(path, record)
    return path


def store(result: dict[str, Any], command: str, wall: float, root=None):
    """Write ``result`` as a run record ``results/bench/<device>-<utc>.json`` (with the git
    commit, package versions, device, wall time and the command that made it); return
    the path. The benchmark chapter of the book renders these records."""
    hw = result["hardware"]
    return write_record(hw["device"], {"experiment": "bench", "command": command,
                                       "config": result["settings"], "device": hw["device"],
                                       "device_name": hw["device_name"], **result}, wall, root)


def load_records(root=None, experiment: str = "bench") -> list[dict[str, Any]]:
    """Every record under ``results/bench/``, oldest first: benchmark records
    (``experiment="bench"``) or the GPU check's (``"gpu_check"``, files ``gpu-check-*``)."""
    from pathlib import Path

    from sst_core.store.records import results_dir

    if experiment not in ("bench", "gpu_check"):
        raise ValueError(f"unknown experiment {experiment!r}; allowed: bench, gpu_check")
    folder = (Path(root) if root else results_dir()) / RECORD_DIR
    out = []
    for path in sorted(folder.glob("*.json")):
        if path.name.startswith("gpu-check-") != (experiment == "gpu_check"):
            continue
        record = json.loads(path.read_text())
        key = "entries" if experiment == "bench" else "checks"
        if record.get("experiment") != experiment or key not in record:
            raise ValueError(f"{path} is not a {experiment} record (no {key!r})")
        record["path"] = str(path)
        out.append(record)
    return sorted(out, key=lambda r: r["created_utc"])
