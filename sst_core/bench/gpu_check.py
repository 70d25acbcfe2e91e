"""The GPU check (``scripts/gpu_check.sh``, ``sst gpu-check``): CUDA results equal CPU ones.

Never part of CI or the tests' requirements (the tests run it CPU against CPU). On a
machine with CUDA it

1. runs every registry model (``rnn_phi`` with every phi) forward and backward on the
   same words on the CPU and on the device, in float32 with TF32 off, and compares the
   logits and every parameter's gradient;
2. compares the fast operations whose device code differs from the CPU code: the
   diagonal scan (the chunked CUDA scan against the CPU loop; real and complex, lengths
   1, 63, 1000), the S4D Vandermonde kernel with its FFT convolution, and one stacked
   training step of several models;
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
    """``fn(device) -> (output, gradients)`` on the CPU and on ``device``, compared."""
    out_cpu, grads_cpu = fn(torch.device("cpu"))
    out_dev, grads_dev = fn(device)
    d_out, ok_out = _err(out_cpu, out_dev)
    d_grad, ok_grad = 0.0, True
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


def _scan_case(L: int, complex_: bool):
    from sst_core.ops.scan import linear_scan

    def run(device: torch.device):
        gen = torch.Generator().manual_seed(SEED)
        mag = torch.rand(2, L, 8, generator=gen) * 0.5 + 0.45
        if complex_:
            a = torch.polar(mag, torch.rand(2, L, 8, generator=gen) * 6.28)
            b = torch.randn(2, L, 8, generator=gen, dtype=torch.complex64)
        else:
            a, b = mag, torch.randn(2, L, 8, generator=gen)
        a, b = a.to(device).requires_grad_(), b.to(device).requires_grad_()
        h = linear_scan(a, b)  # (2, L, 8)
        (h.real if complex_ else h).sum().backward()
        return h, [a.grad, b.grad]

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


def cases() -> dict[str, Callable]:
    """Every comparison by name."""
    from sst_core.models.registry import PHIS, REGISTRY

    out = {}
    for name in REGISTRY:
        if name == "rnn_phi":
            for phi in PHIS:
                out[f"model {name}[{phi}]"] = _model_case(name, phi=phi)
        else:
            out[f"model {name}"] = _model_case(name)
    for L in (1, 63, 1000):
        for c in (False, True):
            out[f"linear_scan {'complex' if c else 'real'} L={L}"] = _scan_case(L, c)
    out["S4D layer L=1024"] = _s4d_case()
    out["stacked training step (mamba x3)"] = _stacked_case()
    return out


def compare_devices(device: str = "cuda", only: Iterable[str] | None = None
                    ) -> list[dict[str, Any]]:
    """Run the comparisons (all, or the names in ``only``) on the CPU and on ``device``."""
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' asked for, but torch.cuda.is_available() is False "
                         f"(torch {torch.__version__}); the GPU check needs a CUDA build of "
                         "torch and a GPU")
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
