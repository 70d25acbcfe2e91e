"""The selective scan's C loops against its torch (chunked) path, forward and backward.

One call is what :class:`~sst_core.models.selective.MambaLayer` asks of
:func:`~sst_core.ops.selective_scan.selective_scan` in a training step: raw ``dt`` with
``dt_bias`` and softplus, A (E, N), x, B, C, the skip ``D`` and the gate ``z``, then the
gradient of a random weighting of the output with respect to all of them. Ours runs the
C loops of :mod:`sst_core.ops.native_selective`; the anchor is the same call on the torch
path (under :func:`sst_core.ops.native.disabled`), both on the same inputs, interleaved.
Sizes: the quick profile's tracking layer (d_model 16: E = 32 channels, batch 64) and the
CPU-scale one (d_model 64: E = 128, batch 256), N = 16 states, length 60; Mamba and
Negative Mamba. ``small`` shrinks the batch to 2 (times mean nothing).
"""
from __future__ import annotations

import statistics
from functools import partial
from typing import Any, Callable

import torch

from sst_core.bench.harness import SEED, Context, make_entry, register, time_side_by_side
from sst_core.bench.roofline import count_work

# name suffix -> (batch, channels E, states N, length L)
SIZES = {"quick": (64, 32, 16, 60), "cpu": (256, 128, 16, 60)}
TARGET = 1 / 3  # ours / torch path, at most: the 3x


def _inputs(batch: int, E: int, N: int, L: int, device: torch.device) -> list[torch.Tensor]:
    """dt (raw, before softplus), A, x, B, C, D, z, dt_bias, the output weighting: fixed
    seed, Mamba-like scales (softplus(dt + bias) around 0.01-0.1, A = -(1..N))."""
    g = torch.Generator().manual_seed(SEED)
    dt = torch.randn(batch, L, E, generator=g) * 0.5
    bias = torch.log(torch.expm1(torch.rand(E, generator=g) * 0.09 + 0.01))  # softplus^-1
    A = -torch.arange(1, N + 1.0).repeat(E, 1) * (0.5 + torch.rand(E, N, generator=g))
    x, z = (torch.randn(batch, L, E, generator=g) for _ in range(2))
    B, C = (torch.randn(batch, L, N, generator=g) for _ in range(2))
    D, w = torch.ones(E), torch.randn(batch, L, E, generator=g)
    return [t.to(device) for t in (dt, A, x, B, C, D, z, bias, w)]


def _training_call(ctx: Context, size: str, negative: bool
                   ) -> tuple[Callable[[], None], tuple[int, int, int, int]]:
    """One training step's call of the scan at ``size`` (forward and the gradient of a
    fixed weighting of the output), and its (batch, E, N, L)."""
    from sst_core.ops.selective_scan import selective_scan

    batch, E, N, L = SIZES[size]
    if ctx.size == "small":
        batch = 2
    *tensors, w = _inputs(batch, E, N, L, ctx.device)
    leaves = [t.requires_grad_() for t in tensors]
    dt, A, x, B, C, D, z, bias = leaves

    def step() -> None:
        y = selective_scan(dt, A, x, B, C, None, negative, D=D, z=z, dt_bias=bias,
                           dt_softplus=True)
        torch.autograd.grad((w * y).sum(), leaves)

    return step, (batch, E, N, L)


def selective_scan_fwd_bwd(ctx: Context, *, size: str, negative: bool) -> list[dict[str, Any]]:
    from sst_core.ops import native, native_selective

    step, (batch, E, N, L) = _training_call(ctx, size, negative)

    def torch_path() -> None:
        with native.disabled():
            step()

    fns: list[Callable[[], None]] = [step, torch_path]
    t_ours, t_ref = time_side_by_side(fns, ctx.repeat, ctx.sizes.warmup, ctx.device)
    model = "negative_mamba" if negative else "mamba"
    name = f"selective_scan_{model}_{size}"
    ours = ("selective_scan, C loops" if native_selective.library() is not None
            and ctx.device.type == "cpu" else "selective_scan (no C loops here: torch path)")
    return [make_entry(name, "train", ours, ctx,
                       {"batch": batch, "length": L, "E": E, "N": N, "model": model}, t_ours,
                       t_ref, "selective_scan, torch path (chunked)", TARGET,
                       work=count_work(step))]


for _size in SIZES:
    for _negative in (False, True):
        _name = f"selective_scan_{'negative_mamba' if _negative else 'mamba'}_{_size}"
        register(_name)(partial(selective_scan_fwd_bwd, size=_size, negative=_negative))


del _size, _negative, _name


def selective_scan_dispatch(ctx: Context, *, size: str, threads: int) -> list[dict[str, Any]]:
    """The selective scan's C loops with their parts on torch's OpenMP team (ours) against
    the torch path, on ``threads`` torch threads (the rows for one and two threads run in
    one ``sst bench``): the three calls (team, the Python pool the parts ran on before,
    the torch path) alternate within each round, so the pool's time is measured beside the
    team's (``pool_s``, ``pool_ratio``). With one thread a call is one part, and the team
    and the pool are the same call."""
    from sst_core.ops import native, native_selective

    step, (batch, E, N, L) = _training_call(ctx, size, negative=False)

    def pool() -> None:
        with native_selective.dispatch("pool"):
            step()

    def torch_path() -> None:
        with native.disabled():
            step()

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        t_team, t_pool, t_ref = time_side_by_side([step, pool, torch_path], ctx.repeat,
                                                  ctx.sizes.warmup, ctx.device)
        work = count_work(step)
    finally:
        torch.set_num_threads(before)
    entry = make_entry(
        f"selective_scan_dispatch_{size}_t{threads}", "train",
        f"selective_scan, C loops on torch's OpenMP team, {threads} thread(s)", ctx,
        {"batch": batch, "length": L, "E": E, "N": N, "model": "mamba", "threads": threads},
        t_team, t_ref, "selective_scan, torch path (chunked)", TARGET, work=work)
    pool_s = statistics.median(t_pool)
    entry.update(pool_s=pool_s, pool_ratio=pool_s / entry["anchor_s"])
    return [entry]


for _size in SIZES:
    for _threads in (1, 2):
        register(f"selective_scan_dispatch_{_size}_t{_threads}")(
            partial(selective_scan_dispatch, size=_size, threads=_threads))
del _size, _threads
