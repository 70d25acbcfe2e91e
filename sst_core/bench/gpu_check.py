"""The GPU check (``scripts/gpu_check.sh``, ``sst gpu-check``): CUDA results equal CPU ones.

Never part of CI or the tests' requirements (the tests run it CPU against CPU). On a
machine with CUDA it

1. runs every registry model (``rnn_phi`` with every phi) forward and backward on the
   same words on the CPU and on the device, in float32 with TF32 off, and compares the
   logits and every parameter's gradient;
2. compares every fast op of :mod:`sst_core.ops` (:func:`fast_ops`: the public
   functions of its modules that are not ``*_ref`` references, found by import, so a new
   kernel is never left out; its inputs come from ``OP_CASES``, and an op without
   inputs there is a failing check): the diagonal scan (the chunked CUDA scan against
   the CPU loops; real and complex, lengths 1, 63, 1000), the dense RNN scan (each
   gate), the selective scan (blocks and chunks, Negative Mamba, an initial state, A per
   model, Mamba's options at lengths 1, 63, 1000; on the CPU its C kernel, on CUDA its
   parallel path), the unitary scan (AUSSM's angle scale, two models' parameters); for
   the three scans with a parallel path also that path on both devices and the
   step-by-step path on both (``parallel=True`` / ``False``: the same code on the CPU
   and the GPU, so a difference is the device's), the S4D Vandermonde kernel, the FFT
   convolution, the discretisation and the chunked delta-rule scan (DeltaNet,
   DeltaProduct; lengths 1, 63, 1000); then the S4D layer and one stacked training
   step of every Table 2 model (``torch.func.vmap`` over stacked weights);
3. (in the CLI) runs the benchmarks on the device and stores both as records under
   ``results/bench/``.

A comparison passes when ``max |cuda - cpu| <= RTOL * max |cpu| + ATOL`` for the output and
for every gradient.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import torch
from torch.nn import functional as F

RTOL = 1e-3  # recurrences over dozens of steps amplify float32 rounding differences
ATOL = 1e-6
SEED = 0


def _err(a: torch.Tensor, b: torch.Tensor) -> tuple[float, bool]:
    """Largest absolute difference and whether it is within tolerance of ``a``'s scale."""
    a, b = a.detach().cpu(), b.detach().cpu()
    diff = float((a - b).abs().max()) if a.numel() else 0.0
    scale = float(a.abs().max()) if a.numel() else 0.0
    return diff, diff <= RTOL * scale + ATOL


def _compare(name: str, fn: Callable[[torch.device], tuple[torch.Tensor, list[torch.Tensor]]],
             device: torch.device) -> dict[str, Any]:
    """``fn(device) -> (output, gradients)`` on the CPU and on ``device``, compared. A
    case that raises fails, with the error in ``error``."""
    try:
        out_cpu, grads_cpu = fn(torch.device("cpu"))
        out_dev, grads_dev = fn(device)
    except Exception as err:  # noqa: BLE001  (reported as a failed check, the rest go on)
        return {"check": name, "max_abs_diff_output": float("nan"),
                "max_abs_diff_grad": float("nan"), "ok": False,
                "error": f"{type(err).__name__}: {err}"}
    d_out, ok_out = _err(out_cpu, out_dev)
    d_grad, ok_grad = 0.0, len(grads_cpu) == len(grads_dev)
    for g_cpu, g_dev in zip(grads_cpu, grads_dev):
        if g_cpu is None and g_dev is None:
            continue
        if (g_cpu is None) != (g_dev is None):
            ok_grad = False
            continue
        d, ok = _err(g_cpu, g_dev)
        d_grad, ok_grad = max(d_grad, d), ok_grad and ok
    return {"check": name, "max_abs_diff_output": d_out, "max_abs_diff_grad": d_grad,
            "ok": ok_out and ok_grad}


def _model_case(model: str, **kw: Any):
    from sst_core.models import build

    def run(device: torch.device):
        torch.manual_seed(SEED)
        m = build(model, 6, 6, d_model=16, d_state=16, n_layers=2, **kw).to(device)
        gen = torch.Generator().manual_seed(SEED)
        x = torch.randint(0, 6, (4, 64), generator=gen).to(device)  # (b, L)
        y = torch.randint(0, 6, (4, 64), generator=gen).to(device)
        logits = m(x)  # (b, L, 6)
        F.cross_entropy(logits.reshape(-1, 6), y.reshape(-1)).backward()
        return logits, [p.grad for p in m.parameters()]

    return run


def _leaves(*ts: torch.Tensor, device: torch.device) -> list[torch.Tensor]:
    return [t.to(device).requires_grad_() for t in ts]


def _scan_case(L: int, complex_: bool, path: str = "default"):
    from sst_core.ops.scan import linear_scan

    def run(device: torch.device):
        gen = torch.Generator().manual_seed(SEED)
        mag = torch.rand(2, L, 8, generator=gen) * 0.5 + 0.45
        if complex_:
            a = torch.polar(mag, torch.rand(2, L, 8, generator=gen) * 6.28)
            b = torch.randn(2, L, 8, generator=gen, dtype=torch.complex64)
        else:
            a, b = mag, torch.randn(2, L, 8, generator=gen)
        a, b = _leaves(a, b, device=device)
        h = linear_scan(a, b, parallel=_on(path))  # (2, L, 8)
        (h.real if complex_ else h).sum().backward()
        return h, [a.grad, b.grad]

    return run


def _rnn_scan_case(gate: str, L: int):
    from sst_core.ops.rnn_scan import rnn_scan

    def run(device: torch.device):
        gen = torch.Generator().manual_seed(SEED)
        b, d = 3, 8
        c, q = torch.randn(b, L, d, generator=gen), torch.randn(b, L, d, generator=gen)
        W_h, U_g = (torch.randn(d, d, generator=gen) * 0.3 for _ in range(2))
        h0 = torch.randn(b, d, generator=gen)
        c, q, W_h, U_g, h0 = _leaves(c, q, W_h, U_g, h0, device=device)
        h = rnn_scan(gate, c, W_h, None if gate == "none" else q,
                     U_g if gate == "state" else None, h0)  # (b, L, d)
        grads = torch.autograd.grad(h.square().mean(), [c, W_h, h0] + (
            [q] if gate != "none" else []) + ([U_g] if gate == "state" else []))
        return h, list(grads)

    return run


def _on(path: str) -> bool | None:
    """The ``parallel`` argument of a scan for a comparison's ``path``: ``"default"`` (by
    device: the CPU's loops against CUDA's parallel scan), ``"parallel"`` (the parallel
    path on both devices) or ``"steps"`` (the step-by-step path on both: the CPU's C loops
    against CUDA's torch loops)."""
    return {"default": None, "parallel": True, "steps": False}[path]


def _selective_case(b: int, L: int, E: int, N: int, negative: bool = False,
                    h0: bool = False, groups: int = 0, options: bool = False,
                    path: str = "default"):
    """``selective_scan`` with the last state (on the CPU its C loops; on CUDA its parallel
    path; ``path``: :func:`_on`); ``groups`` > 0: A of shape (G, E, N); ``options``: D, z,
    dt_bias and softplus as Mamba passes them."""
    from sst_core.ops.selective_scan import selective_scan

    def run(device: torch.device):
        gen = torch.Generator().manual_seed(SEED)
        dt = torch.exp(torch.empty(b, L, E).uniform_(-4.6, -1.0, generator=gen))
        A = -torch.exp(torch.randn(*((groups,) if groups else ()), E, N, generator=gen) * 0.5)
        x, B, C = (torch.randn(b, L, k, generator=gen) for k in (E, N, N))
        s0 = torch.randn(b, E, N, generator=gen) if h0 else None
        opts = ([torch.randn(E, generator=gen), torch.randn(b, L, E, generator=gen),
                 torch.randn(E, generator=gen)] if options else [])  # D, z, dt_bias
        leaves = _leaves(dt, A, x, B, C, *([s0] if h0 else []), *opts, device=device)
        kw = dict(zip(("D", "z", "dt_bias"), leaves[-3:]), dt_softplus=True) if options else {}
        y, last = selective_scan(*leaves[:5], leaves[5] if h0 else None, negative,
                                 return_last=True, parallel=_on(path), **kw)
        out = torch.cat([y.flatten(), last.flatten()])
        return out, list(torch.autograd.grad(out.square().mean(), leaves))

    return run


def _vandermonde_case(L: int):
    from sst_core.ops.ssm_kernel import vandermonde_kernel

    def run(device: torch.device):
        gen = torch.Generator().manual_seed(SEED)
        H, n = 8, 16
        re, im = torch.rand(H, n, generator=gen) * 0.02, torch.rand(H, n, generator=gen) * 3
        Cr, Ci = torch.randn(H, n, generator=gen), torch.randn(H, n, generator=gen)
        re, im, Cr, Ci = _leaves(re, im, Cr, Ci, device=device)
        K = vandermonde_kernel(torch.complex(Cr, Ci), torch.complex(-re, im), L)  # (H, L)
        return K, list(torch.autograd.grad(K.square().mean(), [re, im, Cr, Ci]))

    return run


def _fft_conv_case(L: int, bidirectional: bool):
    from sst_core.ops.ssm_kernel import fft_conv

    def run(device: torch.device):
        gen = torch.Generator().manual_seed(SEED)
        u = torch.randn(2, 8, L, generator=gen)
        K = torch.randn(8, 2 * L if bidirectional else L, generator=gen) / L ** 0.5
        D = torch.randn(8, generator=gen)
        u, K, D = _leaves(u, K, D, device=device)
        y = fft_conv(u, K, D)  # (2, 8, L)
        return y, list(torch.autograd.grad(y.square().mean(), [u, K, D]))

    return run


def _discretize_case(method: str):
    from sst_core.ops.ssm_kernel import discretize_diag

    def run(device: torch.device):
        gen = torch.Generator().manual_seed(SEED)
        re, im = torch.rand(8, 16, generator=gen), torch.randn(8, 16, generator=gen) * 3
        log_dt = torch.empty(8).uniform_(-6.9, -2.3, generator=gen)
        re, im, log_dt = _leaves(re, im, log_dt, device=device)
        log_A, B_bar = discretize_diag(torch.complex(-re, im), log_dt.exp(), method)
        out = torch.cat([torch.view_as_real(log_A).flatten(), torch.view_as_real(B_bar).flatten()])
        return out, list(torch.autograd.grad(out.square().mean(), [re, im, log_dt]))

    return run


def _layer_norm_channels_case(L: int, affine: bool):
    from sst_core.ops.channels_first import layer_norm_channels

    def run(device: torch.device):
        gen = torch.Generator().manual_seed(SEED)
        x = torch.randn(4, 16, L, generator=gen)  # (b, C, L)
        w, b = 1 + 0.1 * torch.randn(16, generator=gen), 0.1 * torch.randn(16, generator=gen)
        x, w, b = _leaves(x, w, b, device=device)
        out = layer_norm_channels(x, w if affine else None, b if affine else None)
        leaves = [x, w, b] if affine else [x]
        return out, list(torch.autograd.grad(out.square().mean(), leaves))

    return run


def _conv_silu_case(L: int, window: bool):
    from sst_core.ops.causal_conv import conv_silu

    def run(device: torch.device):
        gen = torch.Generator().manual_seed(SEED)
        x = torch.randn(3, L, 8, generator=gen)  # (b, L, E)
        w, b = torch.randn(8, 4, generator=gen), torch.randn(8, generator=gen)  # (E, K), (E,)
        win = torch.randn(3, 3 * 8, generator=gen)  # (b, (K - 1) E)
        x, w, b, win = _leaves(x, w, b, win, device=device)
        out = conv_silu(x, w, b, win if window else None)
        leaves = [x, w, b, win] if window else [x, w, b]
        return out, list(torch.autograd.grad(out.square().mean(), leaves))

    return run


def _decayed_attention_case(C: int):
    from sst_core.ops.ssd import decayed_attention

    def run(device: torch.device):
        gen = torch.Generator().manual_seed(SEED)
        lead, N, P = (2, 3), 5, 3  # (b, heads) before the C positions of a chunk
        A = (-0.3 * torch.rand(*lead, C, generator=gen)).cumsum(-1)  # cumulative log decays
        Q, K = (torch.randn(*lead, N, C, generator=gen) for _ in range(2))
        V = torch.randn(*lead, C, P, generator=gen)
        e, g = (torch.rand(*lead, C, generator=gen) for _ in range(2))
        leaves = _leaves(A, Q, K, V, e, g, device=device)
        out = decayed_attention(*leaves)
        return out, list(torch.autograd.grad(out.square().mean(), leaves))

    return run


def _unitary_scan_case(L: int, scale: bool = False, groups: int = 0, path: str = "default"):
    """``unitary_scan`` (on the CPU its C loops, on CUDA its parallel path; ``path``:
    :func:`_on`); ``scale``: AUSSM's angle scale s; ``groups`` > 0: G models' parameters."""
    from sst_core.ops.unitary_scan import unitary_scan

    def run(device: torch.device):
        gen = torch.Generator().manual_seed(SEED)
        b, R, D, N = 3 * max(1, groups), 4, 2, 3
        lead = (groups,) if groups else ()
        x = torch.randn(b, L, R, generator=gen)
        X = torch.randn(*lead, D * N, R, generator=gen)
        c = 3 * torch.rand(*lead, D, N, generator=gen)
        u = torch.randn(b, L, D, generator=gen)
        B, C = (torch.randn(*lead, N, 2, generator=gen) for _ in range(2))
        h0 = torch.randn(b, D, N, 2, generator=gen)
        s = torch.rand(b, L, D, generator=gen) if scale else None
        leaves = _leaves(x, X, c, u, B, C, h0, *([s] if scale else []), device=device)
        y, h_last = unitary_scan(*leaves[:7], leaves[7] if scale else None,
                                 parallel=_on(path))
        out = torch.cat([y.flatten(), h_last.flatten()])
        return out, list(torch.autograd.grad(out.square().mean(), leaves))

    return run


def _delta_scan_case(L: int):
    from sst_core.ops.delta_scan import delta_scan

    def run(device: torch.device):
        gen = torch.Generator().manual_seed(SEED)
        b, H, dk, dv = 3, 2, 5, 4
        q, k = (F.normalize(torch.randn(b, L, H, dk, generator=gen), dim=-1) for _ in range(2))
        v = torch.randn(b, L, H, dv, generator=gen)
        beta = 2 * torch.rand(b, L, H, generator=gen)  # eigenvalues 1 - beta in [-1, 1]
        S0 = torch.randn(b, H, dk, dv, generator=gen)
        leaves = _leaves(q, k, v, beta, S0, device=device)
        o, S = delta_scan(*leaves)
        out = torch.cat([o.flatten(), S.flatten()])
        return out, list(torch.autograd.grad(out.square().mean(), leaves))

    return run


def _s4d_case(L: int = 1024):
    from sst_core.models.s4 import S4DLayer

    def run(device: torch.device):
        torch.manual_seed(SEED)
        layer = S4DLayer(H=8, N=16).to(device)
        x = torch.randn(2, L, 8, generator=torch.Generator().manual_seed(SEED)).to(device)
        y = layer(x)  # (b, L, H)
        y.square().mean().backward()
        return y, [p.grad for p in layer.parameters()]

    return run


def _stacked_case(model: str = "mamba"):
    from sst_core.models import build
    from sst_core.training.stacked import StackedTracker

    def run(device: torch.device):
        models = []
        for k in range(3):
            torch.manual_seed(SEED + k)
            models.append(build(model, 6, 6, d_model=16, d_state=16, n_layers=1).to(device))
        stack = StackedTracker(models, weight_decay=0.01, grad_clip=1.0)
        gen = torch.Generator().manual_seed(SEED)
        x = torch.randint(0, 6, (3, 4, 32), generator=gen).to(device)  # (K, b, L)
        y = torch.randint(0, 6, (3, 4, 32), generator=gen).to(device)
        logits = stack.logits(x)  # (K, b, L, 6)
        ce = F.cross_entropy(logits.reshape(-1, 6), y.reshape(-1), reduction="none")
        stack.step(ce.view(3, -1).mean(1), [1e-3, 3e-3, 1e-2])
        return logits, list(stack.params.values())  # parameters after one AdamW step

    return run


# The comparisons of every fast op of sst_core.ops, by "<module>.<function>": (variant,
# case) pairs. :func:`fast_ops` finds the ops; an op without an entry here gets a check
# that fails, naming what is missing, and ``tests/test_gpu_check.py`` fails as well.
OP_CASES: dict[str, Callable[[], list[tuple[str, Callable]]]] = {
    "scan.linear_scan": lambda: [(f"{'complex' if c else 'real'} L={L}", _scan_case(L, c))
                                 for L in (1, 63, 1000) for c in (False, True)] + [
        (f"{'complex' if c else 'real'} L={L}, {path} path on both", _scan_case(L, c, path))
        for path in ("parallel", "steps") for L in (63, 1000) for c in (False, True)],
    "rnn_scan.rnn_scan": lambda: [(f"{gate} L={L}", _rnn_scan_case(gate, L))
                                  for gate in ("none", "token", "state") for L in (1, 63)],
    "selective_scan.selective_scan": lambda: [
        ("L=1", _selective_case(2, 1, 8, 4)),
        # 130 samples of E 32 x N 16: several batch blocks and chunks (its _plan)
        ("blocks and chunks b=130 L=63 E=32 N=16", _selective_case(130, 63, 32, 16)),
        ("negative, h0, 2 models' A, L=100", _selective_case(4, 100, 8, 4, negative=True,
                                                             h0=True, groups=2)),
        # Mamba's options (softplus(dt + dt_bias), D, the gate z) at lengths 1, 63, 1000,
        # by device (the CPU's C loops against CUDA's parallel path), then the parallel
        # path on both devices and the step-by-step path on both
        *((f"options, {'negative, ' if neg else ''}{path} path"
           f"{'' if path == 'default' else ' on both'}, L={L}",
           _selective_case(3, L, 16, 8, negative=neg, h0=True, options=True, path=path))
          for path in ("default", "parallel", "steps") for L in (1, 63, 1000)
          for neg in ((False, True) if L == 63 else (False,))),
    ],
    "ssm_kernel.vandermonde_kernel": lambda: [(f"L={L}", _vandermonde_case(L))
                                              for L in (1, 1024, 4096)],
    "ssm_kernel.fft_conv": lambda: [(f"{'bidirectional' if bi else 'causal'} L={L}",
                                     _fft_conv_case(L, bi))
                                    for L in (1, 1000) for bi in (False, True)],
    "ssm_kernel.discretize_diag": lambda: [(m, _discretize_case(m)) for m in ("zoh", "bilinear")],
    "causal_conv.conv_silu": lambda: [(f"{'window' if w else 'no window'} L={L}",
                                       _conv_silu_case(L, w))
                                      for L in (1, 63, 1000) for w in (False, True)],
    "ssd.decayed_attention": lambda: [(f"C={C}", _decayed_attention_case(C)) for C in (1, 63, 200)],
    "unitary_scan.unitary_scan": lambda: [(f"L={L}", _unitary_scan_case(L)) for L in (1, 63, 1000)]
    + [(f"angle scale, 2 models, {path} path{'' if path == 'default' else ' on both'}, L={L}",
        _unitary_scan_case(L, scale=True, groups=2, path=path))
       for path in ("default", "parallel", "steps") for L in (63, 1000)],
    "delta_scan.delta_scan": lambda: [(f"L={L}", _delta_scan_case(L)) for L in (1, 63, 1000)],
    "channels_first.layer_norm_channels": lambda: [(f"{'affine' if a else 'plain'} L={L}",
                                                    _layer_norm_channels_case(L, a))
                                                   for L in (1, 1000) for a in (False, True)],
}


# modules of sst_core.ops with no device code of their own: the C loops behind a public
# op run on the CPU side of that op's comparison (CPU against CUDA)
CPU_ONLY_PREFIXES = ("native",)


def fast_ops() -> list[str]:
    """Every fast op of :mod:`sst_core.ops`, as ``"<module>.<function>"``: the public
    functions (a module's ``__all__``, or else its own functions not starting with ``_``)
    that are not plain references (``*_ref``), in every module but the CPU-only ones
    (``CPU_ONLY_PREFIXES``)."""
    import importlib
    import inspect
    import pkgutil

    import sst_core.ops as pkg

    out = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if info.name.startswith(CPU_ONLY_PREFIXES) or info.ispkg:
            continue
        mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
        names = getattr(mod, "__all__", None)
        if names is None:
            names = [n for n, v in vars(mod).items() if not n.startswith("_")
                     and inspect.isfunction(v) and v.__module__ == mod.__name__]
        for name in names:
            obj = getattr(mod, name)
            if inspect.isfunction(obj) and not name.endswith("_ref"):
                out.append(f"{info.name}.{name}")
    return out


def _missing(op: str):
    def run(device: torch.device):
        raise ValueError(f"the fast op {op} has no GPU check: add its inputs to "
                         "sst_core.bench.gpu_check.OP_CASES")

    return run


def cases() -> dict[str, Callable]:
    """Every comparison by name: every registry model (``rnn_phi`` with every phi), every
    fast op of :mod:`sst_core.ops` (:func:`fast_ops`, inputs from ``OP_CASES``), the S4D
    layer, and one stacked training step of every Table 2 model."""
    from sst_core.experiments.paper1 import TABLE2_MODELS
    from sst_core.models.registry import PHIS, REGISTRY

    out = {}
    for name in REGISTRY:
        if name == "rnn_phi":
            for phi in PHIS:
                out[f"model {name}[{phi}]"] = _model_case(name, phi=phi)
        else:
            out[f"model {name}"] = _model_case(name)
    for op in fast_ops():
        if op not in OP_CASES:
            out[f"op {op} (no inputs registered)"] = _missing(op)
            continue
        for variant, case in OP_CASES[op]():
            out[f"op {op} {variant}"] = case
    out["S4D layer L=1024"] = _s4d_case()
    for model in TABLE2_MODELS:
        out[f"stacked training step ({model} x3)"] = _stacked_case(model)
    return out


def compare_devices(device: str = "cuda", only: Iterable[str] | None = None
                    ) -> list[dict[str, Any]]:
    """Run the comparisons (all, or the names in ``only``) on the CPU and on ``device``
    ('cuda', 'cuda:<index>', or 'cpu' to check the CPU against itself)."""
    import re

    if not (isinstance(device, str) and re.fullmatch(r"cpu|cuda(:[0-9]+)?", device)):
        raise ValueError(f"device={device!r} is not allowed: 'cuda', 'cuda:<index>' or 'cpu' "
                         "(lower case)")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' asked for, but torch.cuda.is_available() is False "
                         f"(torch {torch.__version__}); the GPU check needs a CUDA build of "
                         "torch and a GPU")
    if dev.type == "cuda" and (dev.index or 0) >= torch.cuda.device_count():
        raise ValueError(f"device {device!r} is not available here: torch sees "
                         f"{torch.cuda.device_count()} CUDA device(s) (allowed: cuda:0.."
                         f"cuda:{torch.cuda.device_count() - 1})")
    all_cases = cases()
    names = list(all_cases) if only is None else list(only)
    unknown = [n for n in names if n not in all_cases]
    if unknown:
        raise ValueError(f"unknown check(s) {unknown}; allowed: {', '.join(all_cases)}")
    tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        return [_compare(n, all_cases[n], dev) for n in names]
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32


def to_markdown(checks: list[dict[str, Any]]) -> str:
    lines = ["| check | max abs diff (output) | max abs diff (gradients) | ok |",
             "|---|---:|---:|---|"]
    for c in checks:
        lines.append(f"| {c['check']} | {c['max_abs_diff_output']:.2e} | "
                     f"{c['max_abs_diff_grad']:.2e} | {'yes' if c['ok'] else 'NO'} |")
    errors = [c for c in checks if c.get("error")]
    if errors:
        lines += [""] + [f"- {c['check']}: {c['error']}" for c in errors]
    return "\n".join(lines)


def store(checks: list[dict[str, Any]], device: str, wall: float, root=None):
    """Write the comparisons as a record ``results/bench/gpu-check-<device>-<utc>.json``."""
    from sst_core.bench.harness import hardware
    from sst_core.bench.records import write_record

    dev = torch.device(device)
    return write_record(f"gpu-check-{dev.type}", {
        "experiment": "gpu_check", "device": device, "hardware": hardware(dev),
        "rtol": RTOL, "atol": ATOL, "checks": checks,
        "all_ok": all(c["ok"] for c in checks)}, wall, root)
