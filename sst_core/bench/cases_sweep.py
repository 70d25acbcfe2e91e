"""Benchmark case ``sweep_runs_per_hour`` (opt-in: ``sst bench --only sweep_runs_per_hour``):
how many runs of a CPU-scale grid a sweep computes per hour on this machine, so that a
sweep's budget can be estimated before it starts.

A fixed sample of Table 2 runs (``SAMPLE_MODELS`` on S3, one layer, d_model 32, the RNN
family's width 32 and the other families' N 16, batch 64, learning rate 1e-3, at most
``max_steps`` training steps, evaluation as the quick profile does it) is computed by the
sweep's local executor (:func:`sst_core.sweep.runner.time_local`: fresh processes, a
temporary results folder, records and weights written as in a sweep), once with the
layout the sweep chooses by default (:func:`~sst_core.sweep.runner.choose_layout`) and
once with the other one (1 worker with every core as threads, or one worker per core):
ratio = chosen / other, target 1 (the default should not be the slower). Each layout
is timed once (``--repeat`` does not apply: a sweep takes a minute); ``small`` sizes
shrink the runs to 2 steps and tiny evaluations, for the tests.

Reported: ``runs_per_hour`` (and the other layout's), the layouts, the steps per run.
A run of the real grid costs about its steps / ``max_steps`` times as much (its
curriculum decides its steps), plus one evaluation.
"""
from __future__ import annotations

import os
from typing import Any

from sst_core.bench.harness import Context, make_entry, register

SAMPLE_MODELS = ("tanh_rnn", "token_gated_rnn", "mamba", "linear_attention")


D_MODEL = 32


# per size: training steps at most, batch, evaluation lengths and samples
SAMPLE_SIZES = {
    "full": {"max_steps": 200, "batch": 64, "eval_lengths": (60,) + tuple(range(100, 1001, 100)),
             "eval_samples": 128},
    "small": {"max_steps": 2, "batch": 8, "eval_lengths": (60,), "eval_samples": 8},
}


def sample_grid(size: str = "full"):
    """The fixed sample of tracking runs (``TrackingConfig``), one per model."""
    from sst_core.models.registry import REGISTRY
    from sst_core.spec.configs import TrackingConfig

    s = SAMPLE_SIZES[size]
    return [TrackingConfig(model=m, group="S3", n_layers=1, d_model=D_MODEL,
                           d_state=D_MODEL if REGISTRY[m].family == "rnn" else 16, lr=1e-3,
                           seed=0, profile="quick", batch=s["batch"], max_steps=s["max_steps"],
                           steps_per_epoch=20, curriculum_patience=2,
                           eval_lengths=s["eval_lengths"], eval_samples=s["eval_samples"],
                           eval_batch=min(250, s["eval_samples"]))
            for m in SAMPLE_MODELS]


def _label(layout: tuple[int, int]) -> str:
    return f"{layout[0]} worker(s) x {layout[1]} thread(s)"


@register("sweep_runs_per_hour", opt_in=True)
def sweep_runs_per_hour(ctx: Context) -> list[dict[str, Any]]:
    from sst_core.sweep.runner import choose_layout, time_local

    cfgs = sample_grid(ctx.size)
    cores = os.cpu_count() or 1
    chosen = choose_layout(len(cfgs), cores)
    other = (1, cores) if chosen[0] > 1 else (min(cores, len(cfgs)), 1)
    t_chosen = time_local(cfgs, *chosen)
    t_other = time_local(cfgs, *other) if other != chosen else None
    s = SAMPLE_SIZES[ctx.size]
    sizes = {"runs": len(cfgs), "batch": s["batch"], "length": 60, "max_steps": s["max_steps"],
             "d_model": D_MODEL, "eval_samples": s["eval_samples"]}
    entry = make_entry("sweep_runs_per_hour", "train",
                       f"sweep of {', '.join(SAMPLE_MODELS)} ({_label(chosen)}, the default)",
                       ctx, sizes, [t_chosen], None if t_other is None else [t_other],
                       None if t_other is None else f"the same sweep with {_label(other)}",
                       None if t_other is None else 1.0)
    entry.update(tokens_per_s=None, anchor_tokens_per_s=None,
                 runs_per_hour=3600 * len(cfgs) / t_chosen,
                 anchor_runs_per_hour=None if t_other is None else 3600 * len(cfgs) / t_other,
                 layout=list(chosen), anchor_layout=None if t_other is None else list(other))
    return [entry]
