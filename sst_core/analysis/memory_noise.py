"""The memory a delayed-recall model can use: its initial spectrum's memory function read
with noise (:func:`sst_core.theory.memory.memory_function_noisy`).

The memory-horizon runs (:mod:`sst_core.training.horizon`) record ``M[tau]``, the exact
memory function of their spectrum at the task's delay: the share of the target's variance
that a linear readout of one channel's state recovers in exact arithmetic. Cells with
``M[tau] = 1`` can stay near chance (the real-axis spectrum at tau = 10, the step spectrum
at tau = 30), because ``M`` counts memory held by directions of the state so weak that no
finite-precision model, and no readout trained for a finite number of steps, uses them.
``M_delta[tau]``, the same quantity when the state is read with noise of variance
``delta`` times the mean state variance, keeps only the memory of well-conditioned
directions. :func:`run_memory_noise` computes it for one run's spectrum at initialisation
(what a frozen run keeps all along, and a learned one starts from) at several noise levels,
as a record of its own (config :class:`~sst_core.spec.configs.NoisyMemoryConfig`); the
report :func:`sst_core.reports.lra.memory_horizon_noise` sets it beside the runs' accuracy.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np
from torch import nn

from sst_core.models.s4 import S4DLayer, channel_spectra
from sst_core.theory.memory import memory_function_noisy

__all__ = ["noisy_memory_at", "run_memory_noise"]


def noisy_memory_at(model: nn.Module, T: int, tau: int, noise: tuple[float, ...]
                    ) -> list[list[list[float]]]:
    """``out[i][l][h]``: ``M_delta[tau]`` at noise level ``noise[i]`` of channel h of S4D
    layer l (module order), over a window of ``T`` delays, with each channel's ``B_bar``
    as the input gain of its state."""
    layers = [m for m in model.modules() if isinstance(m, S4DLayer)]
    spectra = [channel_spectra(layer) for layer in layers]  # per layer, per channel (mu, B_bar)
    return [[[memory_function_noisy(mu, T, tau, noise=d, gain=gain) for mu, gain in layer]
             for layer in spectra] for d in noise]


def run_memory_noise(cfg) -> dict[str, Any]:
    """``M_delta[tau]`` of ``cfg.run``'s initial spectrum (a ``NoisyMemoryConfig``): per
    noise level, per layer the largest over channels (``mf_tau``, the form of the horizon
    record's ``mf_tau_before``) and every channel's value (``mf_tau_channels``)."""
    from sst_core.training.horizon import build_horizon_model

    start = time.perf_counter()
    model = build_horizon_model(cfg.run)
    per = noisy_memory_at(model, cfg.run.length, cfg.run.tau, cfg.noise)
    return {
        "noise": list(cfg.noise),
        "mf_tau": [[float(np.max(ch)) for ch in layers] for layers in per],
        "mf_tau_channels": [[[round(v, 8) for v in ch] for ch in layers] for layers in per],
        "tau": cfg.run.tau,
        "length": cfg.run.length,
        "compute_s": round(time.perf_counter() - start, 3),
    }
