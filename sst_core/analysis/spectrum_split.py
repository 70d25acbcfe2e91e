"""What claim 3's summed memory counts when real eigenvalues leave the real axis.

Summed over the delays of a window, a channel's exact memory function is its number of
distinct eigenvalues (the memory capacity, :func:`sst_core.theory.memory.memory_capacity`:
the trace of a projection). A real eigenvalue is its own conjugate, so a channel of the
real-axis spectrum (S4D-Real) holds N/2 distinct eigenvalues where a complex spectrum holds
N; an imaginary part of any size splits each real one into a conjugate pair and doubles the
count. :func:`split_real_axis` measures what that split alone does to the quantity the LRA
chapter's claim 3 compares (the supremum memory function of a layer, summed over delays),
on an initial real-axis layer whose eigenvalues are moved off the axis and nothing else,
and what it does to the memory read with noise
(:func:`sst_core.theory.memory.memory_function_noisy`). The chapter reads it as a record
(:func:`run_spectrum_split`, experiment ``memory_split``): the exact memory functions of
every channel take minutes at the chapter's ``standard`` size.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch

from sst_core.models.s4 import S4DLayer, channel_spectra, memory_functions
from sst_core.theory.memory import memory_function_noisy

__all__ = ["run_spectrum_split", "split_real_axis"]


def split_real_axis(H: int, N: int, T: int, *, eps: float, noise: Sequence[float],
                    dt_min: float, dt_max: float, disc: str, seed: int = 0) -> dict[str, Any]:
    """One initial real-axis S4D layer (``H`` channels, state size ``N``, steps drawn in
    [``dt_min``, ``dt_max``] by generator ``seed`` as an LRA run draws them), before and
    after its eigenvalues are moved off the real axis by ``i * eps``, nothing else changed,
    over a window of ``T`` delays:

    - ``capacity_before`` / ``capacity_after``: each channel's memory function summed over
      the delays (its number of distinct eigenvalues), sorted distinct values over channels;
    - ``sup_before`` / ``sup_after``: the layer's supremum memory function (the largest
      over channels at each delay) summed over the delays, and ``sup_ratio`` = after /
      before;
    - ``noisy_ratio``: per level of ``noise``, the first channel's memory read with that
      noise (with its ``B_bar`` as input gain), summed over the delays, after / before.
    """
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < 1:
        raise ValueError(f"eps={eps!r} must be a number in (0, 1): how far the eigenvalues "
                         "leave the real axis")
    layer = S4DLayer(H, N, dt_min=dt_min, dt_max=dt_max, init="real", disc=disc, seed=seed)
    before = memory_functions(layer, T)  # (H, T)
    (mu0, gain0), *_ = channel_spectra(layer)  # the first channel's (N,) each
    with torch.no_grad():
        layer.kernel.imag += eps  # (H, N/2): each real eigenvalue and its conjugate differ
    after = memory_functions(layer, T)  # (H, T)
    (mu1, gain1), *_ = channel_spectra(layer)
    noisy = []
    for d in noise:
        m0 = memory_function_noisy(mu0, T, noise=d, gain=gain0)  # (T,)
        m1 = memory_function_noisy(mu1, T, noise=d, gain=gain1)  # (T,)
        noisy.append(float(m1.sum() / m0.sum()))
    sup0, sup1 = float(before.max(0).sum()), float(after.max(0).sum())
    return {"capacity_before": sorted({round(float(s), 6) for s in before.sum(1)}),
            "capacity_after": sorted({round(float(s), 6) for s in after.sum(1)}),
            "sup_before": sup0, "sup_after": sup1, "sup_ratio": sup1 / sup0,
            "noise": [float(d) for d in noise], "noisy_ratio": noisy}


def run_spectrum_split(cfg) -> dict[str, Any]:
    """:func:`split_real_axis` of a ``SpectrumSplitConfig`` (the record's metrics), with
    the seconds it took (``compute_s``)."""
    import time

    start = time.perf_counter()
    out = split_real_axis(cfg.H, cfg.N, cfg.T, eps=cfg.eps, noise=cfg.noise,
                          dt_min=cfg.dt_min, dt_max=cfg.dt_max, disc=cfg.disc, seed=cfg.seed)
    return {**out, "compute_s": round(time.perf_counter() - start, 3)}
