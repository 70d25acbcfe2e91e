"""The benchmark cases: each registers ``fn(ctx) -> entries`` with
:func:`sst_core.bench.harness.register`, ours beside its anchor (a torch reference, or a
plain loop), sized by the context (the harness's module docstring states the protocol).

- dense RNNs against ``torch.nn.RNN`` / ``torch.nn.GRU`` (training step and a forward
  pass at length 1000), and the throughput of every Table 2 model (at the quick
  profile's sizes, and a training step at d_model 64 with a roofline goal);
- the S4D kernel (time and peak memory) against the materialised Vandermonde kernel;
- the diagonal scan against a per-step autograd loop, with memory bandwidth;
- K stacked models against K sequential training steps (at the quick profile's sizes, and
  at the sweep's thread count and the standard profile's sizes: the rows the sweep
  decides from whether to stack each model, :mod:`sst_core.sweep.stacking`);
- the semi-affine models against their affine originals.

Every training-step row also counts the flops, matrix products and bytes of one step
(:func:`sst_core.bench.roofline.count_work`) for the limit columns; the rows with the
roofline goal also profile one step (:func:`sst_core.bench.roofline.profile_step`).
"""
from __future__ import annotations

import statistics
from functools import partial
from typing import Any, Callable

import torch
from torch import nn
from torch.nn import functional as F

from sst_core.bench.harness import (
    SEED,
    Context,
    copy_bandwidth,
    make_entry,
    peak_bytes,
    register,
    time_side_by_side,
)
from sst_core.bench.roofline import ROOFLINE_TARGET, count_work, profile_step
from sst_core.sweep.stacking import ROW_PREFIX

GROUP = "S3"  # the tracking task's data: order 6, vocabulary identity + generators


TOKENS = "generators"


LR = 1e-3


WEIGHT_DECAY = 0.01  # as TrackingConfig


GRAD_CLIP = 1.0  # as TrackingConfig


TRAIN_TARGET = 1.2  # ours / anchor for a training step, at most (the bar)


RNN_WIDTHS = (64, 128)  # the d of the dense-RNN comparisons


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
                       target, work=count_work(f_ours) if kind == "train" else None)]


# The roofline rows of every Table 2 model (``throughput_<model>_train_d64``): d_model 64,
# the RNN family's hidden width 64, the other families' N the paper's smallest (32).
ROOFLINE_D_MODEL = 64


ROOFLINE_D_STATE = 32


def model_throughput(ctx: Context, *, name: str, model: str, kind: str,
                     d_model: int | None = None, d_state: int | None = None,
                     roofline_target: float | None = None, **kw: Any) -> list[dict[str, Any]]:
    """One registered model, no anchor: time and tokens/s, at the quick profile's sizes
    unless ``d_model`` / ``d_state`` are given (the RNN family's width is its d_state).
    Training steps also count their flops and bytes (the roofline columns)."""
    from sst_core.experiments.paper1 import d_state_grid
    from sst_core.models.registry import REGISTRY
    from sst_core.spec.profiles import get_profile

    P = get_profile("quick")
    d_model = P.track_d_model if d_model is None else d_model
    d_state = d_state_grid(P, model)[0] if d_state is None else d_state
    _, _, n_tokens = task_data(1, 1, ctx.device)
    ours = _ours(model, n_tokens, d_model, d_state, ctx.device, **kw)
    fn, sizes = _call(kind, ours, ctx)
    (t_ours,) = time_side_by_side([fn], ctx.repeat, ctx.sizes.warmup, ctx.device)
    widths = ({"d": d_state} if REGISTRY[model].family == "rnn"  # d_model is unused there
              else {"d_model": d_model, "d_state": d_state})
    sizes = {**sizes, **widths, "n_tokens": n_tokens, **kw}
    label = ours.name if hasattr(ours, "name") else model
    entry = make_entry(name, kind, label, ctx, sizes, t_ours,
                       work=count_work(fn) if kind == "train" else None,
                       roofline_target=roofline_target)
    if roofline_target is not None:  # where the time goes (the chapter, beyond the goal)
        entry["profile"] = profile_step(fn)
    return [entry]


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
    from sst_core.models.registry import REGISTRY

    for model in TABLE2_MODELS:
        name = f"throughput_{model}_train_d{ROOFLINE_D_MODEL}"
        d_state = ROOFLINE_D_MODEL if REGISTRY[model].family == "rnn" else ROOFLINE_D_STATE
        register(name)(partial(model_throughput, name=name, model=model, kind="train",
                               d_model=ROOFLINE_D_MODEL, d_state=d_state,
                               roofline_target=ROOFLINE_TARGET))


_register_defaults()


S4D_KERNEL_LENGTHS = (1024, 4096, 16384)


# (batch, H) per size; N = 64 always. ``small`` keeps the lengths (the names say them).
S4D_KERNEL_SIZES = {"full": (16, 256), "small": (1, 4)}


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


SCAN_LENGTHS = (1000, 4096)


# (batch, channels) per size: channels = d_inner * N of a small Mamba (128 x 16)
SCAN_SIZES = {"full": (8, 2048), "small": (1, 4)}


SCAN_TARGETS = {"cpu": 0.5, "cuda": 0.1}  # ours / per-step autograd loop: 2x (CPU), 10x (CUDA)


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


# (batch, E, N) per size of the scan-path rows: a small Mamba's 2 x 32 channels, N 16
PATH_SIZES = {"full": (8, 64, 16), "small": (1, 4, 4)}


PATH_LENGTH = 1000


def scan_paths(ctx: Context, *, op: str) -> list[dict[str, Any]]:
    """The two paths of a scan on this device, forward and backward of a random weighting
    of its output: the device's own (by device: the C loops on the CPU, the parallel
    chunked scan on CUDA) against the other one (``parallel=True`` / ``False``), Mamba's
    selective scan with its options or AUSSM's unitary scan, length ``PATH_LENGTH``. No
    target: on CUDA the ratio is what the parallel path gains over one kernel per step;
    on the CPU what the C loops gain over the parallel path."""
    from sst_core.ops.selective_scan import selective_scan
    from sst_core.ops.unitary_scan import unitary_scan

    b, E, N = PATH_SIZES[ctx.size]
    L = PATH_LENGTH
    gen = torch.Generator().manual_seed(SEED)
    if op == "selective":
        ins = [torch.randn(b, L, E, generator=gen) - 2, -torch.rand(E, N, generator=gen) - 0.1,
               torch.randn(b, L, E, generator=gen), torch.randn(b, L, N, generator=gen),
               torch.randn(b, L, N, generator=gen), torch.randn(E, generator=gen),
               torch.randn(b, L, E, generator=gen), torch.randn(E, generator=gen)]
        leaves = [t.to(ctx.device).requires_grad_() for t in ins]

        def call(parallel):
            dt, A, x, B, C, D, z, bias = leaves
            return selective_scan(dt, A, x, B, C, D=D, z=z, dt_bias=bias, dt_softplus=True,
                                  parallel=parallel)
    else:
        D_ = E // 2
        ins = [torch.randn(b, L, E, generator=gen), torch.randn(D_ * N, E, generator=gen) / E,
               torch.rand(D_, N, generator=gen), torch.randn(b, L, D_, generator=gen),
               torch.randn(N, 2, generator=gen), torch.randn(N, 2, generator=gen)]
        leaves = [t.to(ctx.device).requires_grad_() for t in ins]

        def call(parallel):
            return unitary_scan(*leaves, parallel=parallel)[0]

    own = ctx.device.type == "cuda"  # the device's own path: parallel on CUDA

    def step(parallel: bool) -> Callable[[], None]:
        def run() -> None:
            torch.autograd.grad(call(parallel).square().mean(), leaves)

        return run

    t_own, t_other = time_side_by_side([step(own), step(not own)], ctx.repeat,
                                       ctx.sizes.warmup, ctx.device)
    paths = {True: "parallel path", False: "step-by-step path"}
    return [make_entry(f"scan_paths_{op}_L{L}", "train", f"{op}_scan ({paths[own]})", ctx,
                       {"batch": b, "length": L, "channels": E, "d_state": N}, t_own, t_other,
                       f"{op}_scan ({paths[not own]})")]


for _op in ("selective", "unitary"):
    register(f"scan_paths_{_op}_L{PATH_LENGTH}")(partial(scan_paths, op=_op))


del _op


STACK_K = {"full": 16, "small": 2}  # models per stack


STACK_TARGETS = {"cpu": 0.5, "cuda": 0.1}  # stacked / K sequential steps: 2x (CPU), 10x (CUDA)


def _stack_and_sequence(ctx: Context, model: str, K: int, batch: int, length: int,
                        d_model: int, d_state: int, one_model: bool = False):
    """K models of one architecture (seeds SEED .. SEED + K - 1): a zero-argument call of
    one stacked training step of all K (:class:`sst_core.training.stacked.StackedTracker`:
    ``vmap`` over stacked weights, per-row clipping and AdamW), one of K ordinary training
    steps one after the other (each model with its own ``torch.optim.AdamW``, as K
    separate runs do it), and, with ``one_model``, one of a single model's training step
    on all K b sequences at once."""
    from sst_core.training.stacked import StackedTracker

    _, _, n_tokens = task_data(1, 1, ctx.device)
    models = []
    for k in range(K):
        torch.manual_seed(SEED + k)
        models.append(build_model(model, n_tokens, d_model, d_state, ctx.device))
    stack = StackedTracker([m for m in models], WEIGHT_DECAY, GRAD_CLIP)
    gen = torch.Generator().manual_seed(SEED)
    x = torch.randint(0, n_tokens, (K, batch, length), generator=gen).to(ctx.device)
    y = torch.randint(0, n_tokens, (K, batch, length), generator=gen).to(ctx.device)

    def stacked() -> None:
        logits = stack.logits(x)  # (K, b, L, n)
        ce = F.cross_entropy(logits.reshape(-1, n_tokens), y.reshape(-1), reduction="none")
        stack.step(ce.view(K, -1).mean(1), [LR] * K)

    steps = [train_step(m, x[k], y[k]) for k, m in enumerate(models)]

    def sequential() -> None:
        for step in steps:
            step()

    if not one_model:
        return stacked, sequential, None
    torch.manual_seed(SEED)
    wide = build_model(model, n_tokens, d_model, d_state, ctx.device)
    return stacked, sequential, train_step(wide, x.reshape(K * batch, length),
                                           y.reshape(K * batch, length))


def stacked_training(ctx: Context, *, model: str) -> list[dict[str, Any]]:
    """One training step of K models at the quick profile's sizes stacked into one
    computation against K ordinary training steps one after the other
    (:func:`_stack_and_sequence`), on the run's thread count.

    Timed in the same rounds, one model's ordinary training step on all K b sequences at
    once (``one_model_s``; ``ceiling_ratio`` = that / the K sequential steps): the stack's
    arithmetic with one set of weights instead of K, run by this implementation's kernels.
    It bounds what stacking can gain *with these kernels* (a stack runs the same kernels
    on the same tensor sizes, plus K sets of weights), not what the machine allows: the
    one-model step is itself far from the machine's limits (the roofline rows)."""
    from sst_core.experiments.paper1 import d_state_grid
    from sst_core.spec.profiles import get_profile

    P = get_profile("quick")
    K = STACK_K[ctx.size]
    batch, length = (P.track_batch, 60) if ctx.size == "full" else (2, 8)
    d_state = d_state_grid(P, model)[0]
    ours, sequential, one_model = _stack_and_sequence(ctx, model, K, batch, length,
                                                      P.track_d_model, d_state, True)
    t_ours, t_ref, t_one = time_side_by_side([ours, sequential, one_model], ctx.repeat,
                                             ctx.sizes.warmup, ctx.device)
    sizes = {"models": K, "batch": batch, "length": length, "d_state": d_state,
             "d_model": P.track_d_model}
    entry = make_entry(f"stacked_train_K{STACK_K['full']}_{model}", "train",
                       f"{model} x{K}, stacked", ctx, sizes, t_ours, t_ref,
                       f"{K} sequential training steps", STACK_TARGETS[ctx.device.type],
                       work=count_work(ours))
    one_s = statistics.median(t_one)
    entry.update(one_model_s=one_s, one_model_samples_s=t_one,
                 ceiling_ratio=one_s / entry["anchor_s"])
    return [entry]


# the sweep's choice (sst_core.sweep.stacking): the threads of a sweep worker and the
# profile whose sizes it decides for
SWEEP_THREADS = 1


SWEEP_PROFILE = "standard"


def stack_or_not(ctx: Context, *, model: str, wide: bool = False) -> list[dict[str, Any]]:
    """What the sweep decides whether to stack ``model`` from
    (:mod:`sst_core.sweep.stacking`): at the sweep's thread count (``SWEEP_THREADS``, set
    for the row and restored) and the ``standard`` profile's sizes (its ``track_stack``
    models, batch, d_model (with ``wide``: ``track_d_model_wide``, the recompute's) and
    smallest d_state, length 60, the curriculum's last and longest), one stacked training
    step against K sequential ones (:func:`_stack_and_sequence`). ratio = stacked /
    sequential, the same K models either way: below 1 the stack is faster. No target: the
    sweep reads the ratio, per model and d_model."""
    from sst_core.experiments.paper1 import d_state_grid
    from sst_core.spec.profiles import get_profile

    P = get_profile(SWEEP_PROFILE)
    K, batch, length = ((P.track_stack, P.track_batch, 60) if ctx.size == "full"
                        else (2, 2, 8))
    d_model = P.track_d_model_wide if wide else P.track_d_model
    d_state = d_state_grid(P, model)[0]
    before = torch.get_num_threads()
    torch.set_num_threads(SWEEP_THREADS)
    try:
        ours, sequential, _ = _stack_and_sequence(ctx, model, K, batch, length, d_model,
                                                  d_state)
        t_ours, t_ref = time_side_by_side([ours, sequential], ctx.repeat, ctx.sizes.warmup,
                                          ctx.device)
    finally:
        torch.set_num_threads(before)
    sizes = {"models": K, "batch": batch, "length": length, "d_state": d_state,
             "d_model": d_model}
    name = f"{ROW_PREFIX}{model}" + (f"_d{d_model}" if wide else "")
    entry = make_entry(name, "train", f"{model} x{K}, stacked" + (f", d_model {d_model}" if wide
                                                                  else ""),
                       ctx, sizes, t_ours, t_ref, f"{K} sequential training steps")
    entry.update(threads=SWEEP_THREADS, profile=SWEEP_PROFILE, sweep_model=model)
    return [entry]


def _register_stacked() -> None:
    from sst_core.experiments.paper1 import TABLE2_MODELS
    from sst_core.models.registry import REGISTRY
    from sst_core.spec.profiles import get_profile

    for model in TABLE2_MODELS:
        register(f"stacked_train_K{STACK_K['full']}_{model}")(partial(stacked_training,
                                                                      model=model))
    for model in TABLE2_MODELS:
        register(f"{ROW_PREFIX}{model}")(partial(stack_or_not, model=model))
    # the recompute's width (sst_core.experiments.paper1.widened): the families it widens
    wide = get_profile(SWEEP_PROFILE).track_d_model_wide
    for model in TABLE2_MODELS:
        if REGISTRY[model].family != "rnn":
            register(f"{ROW_PREFIX}{model}_d{wide}")(partial(stack_or_not, model=model,
                                                             wide=True))


_register_stacked()


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
                       f"{anchor}, the affine original (ratio: cost of the correction)",
                       work=count_work(fns[0]) if kind == "train" else None)]


register("semi_affine_train_s3")(partial(semi_affine_cost, name="semi_affine_train_s3",
                                         kind="train"))


register("semi_affine_eval_L1000")(partial(semi_affine_cost, name="semi_affine_eval_L1000",
                                           kind="eval"))
