"""Benchmark cases: our fused selective scan against two public CPU selective scans
(:mod:`sst_core.bench.anchors`), the scan part of a Mamba training step.

One call of each contender is the forward and the backward of the scan with Mamba's
skip and gate, ``out = (scan(dt, A, x, B, C) + D x) * silu(z)``, gradients of
``sum(out)`` with respect to dt, A, x, B, C, D and z (``torch.autograd.grad``):

- ours: :func:`sst_core.ops.selective_scan.selective_scan` and the skip and gate in torch;
- ``mamba_ref``: state-spaces/mamba's ``selective_scan_ref`` (channel-first inputs, as
  Mamba keeps them; the (b, E, L, N) ``deltaA`` and ``deltaB_u``, a loop over L, autograd);
- ``pscan``: alxndrTL/mamba.py's ``selective_scan`` (a Blelloch parallel scan over the
  (b, L, E, N) tensors, hand-written backward).

Sizes (``SIZES``): ``quick``, the quick profile's tracking model (b 64, L 60, d_model 16:
E = 32, N 16), and ``cpu``, a CPU-scale model (b 256, L 60, d_model 64: E = 128, N 16);
``small`` sizes keep E and N and use batch 2. Inputs as a Mamba layer makes them: dt
log-uniform in [1e-3, 1e-1], A = -(1, ..., N) per channel (S4D-real), the rest N(0, 1).
Ratio = ours / anchor; target: under 1 (ours faster).
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable

import torch
from torch.nn import functional as F

from sst_core.bench.harness import (
    SEED,
    Context,
    make_entry,
    register,
    time_side_by_side,
)
from sst_core.bench.roofline import count_work

# (batch, length, E, N) per name
SIZES = {"quick": (64, 60, 32, 16), "cpu": (256, 60, 128, 16)}


SMALL_BATCH = 2


TARGET = 1.0  # ours / anchor


ANCHOR_NAMES = {
    "mamba_ref": "state-spaces/mamba selective_scan_ref (per-step loop, (b, E, L, N) "
                 "deltaA / deltaB_u, autograd)",
    "pscan": "alxndrTL/mamba.py selective_scan (Blelloch pscan over L, hand-written backward)",
}


def scan_inputs(b: int, L: int, E: int, N: int, device: torch.device
                ) -> dict[str, torch.Tensor]:
    """Fixed-seed leaves dt, A, x, B, C, D, z (time-major, as ours takes them)."""
    g = torch.Generator().manual_seed(SEED)
    dt = torch.exp(torch.empty(b, L, E).uniform_(-4.6052, -2.3026, generator=g))
    ins = {"dt": dt, "A": -torch.arange(1.0, N + 1).repeat(E, 1),
           "x": torch.randn(b, L, E, generator=g), "B": torch.randn(b, L, N, generator=g),
           "C": torch.randn(b, L, N, generator=g), "D": torch.randn(E, generator=g),
           "z": torch.randn(b, L, E, generator=g)}
    return {k: v.to(device).requires_grad_() for k, v in ins.items()}


def ours_step(ins: dict[str, torch.Tensor]) -> Callable[[], None]:
    from sst_core.ops.selective_scan import selective_scan

    leaves = list(ins.values())

    def run() -> None:
        y = selective_scan(ins["dt"], ins["A"], ins["x"], ins["B"], ins["C"])
        out = (y + ins["D"] * ins["x"]) * F.silu(ins["z"])
        torch.autograd.grad(out.sum(), leaves)

    return run


def anchor_step(anchor: str, ins: dict[str, torch.Tensor]) -> Callable[[], None]:
    from sst_core.bench import anchors

    if anchor == "mamba_ref":  # channel-first leaves, as Mamba keeps them
        cf = {k: (v.detach().transpose(1, 2).contiguous().requires_grad_()
                  if v.dim() == 3 else v) for k, v in ins.items()}
        leaves = list(cf.values())

        def run() -> None:
            out = anchors.mamba_selective_scan_ref(cf["x"], cf["dt"], cf["A"], cf["B"],
                                                   cf["C"], D=cf["D"], z=cf["z"])
            torch.autograd.grad(out.sum(), leaves)

        return run
    leaves = list(ins.values())

    def run_pscan() -> None:
        out = anchors.pscan_selective_scan(ins["x"], ins["dt"], ins["A"], ins["B"], ins["C"],
                                           D=ins["D"], z=ins["z"])
        torch.autograd.grad(out.sum(), leaves)

    return run_pscan


def scan_against_anchor(ctx: Context, *, name: str, size: str, anchor: str
                        ) -> list[dict[str, Any]]:
    b, L, E, N = SIZES[size]
    if ctx.size == "small":
        b = SMALL_BATCH
    ins = scan_inputs(b, L, E, N, ctx.device)
    ours = ours_step(ins)
    t_ours, t_ref = time_side_by_side([ours, anchor_step(anchor, ins)], ctx.repeat,
                                      ctx.sizes.warmup, ctx.device)
    return [make_entry(name, "train", "selective_scan + D skip + z gate", ctx,
                       {"batch": b, "length": L, "E": E, "N": N}, t_ours, t_ref,
                       ANCHOR_NAMES[anchor], TARGET, work=count_work(ours))]


for _size in SIZES:
    for _anchor in ANCHOR_NAMES:
        _name = f"selective_scan_vs_{_anchor}_{_size}"
        register(_name)(partial(scan_against_anchor, name=_name, size=_size, anchor=_anchor))


del _size, _anchor, _name
