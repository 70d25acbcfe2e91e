"""Benchmark cases of whole sweeps, both opt-in (minutes to hours).

``sweep_standard_before_after``: runs per hour of a fixed sample of the ``standard``
Table 2 grid with and without the sweep's per-model stacking choice, alternating (:func:`sweep_standard_before_after`).

``sweep_runs_per_hour`` (``sst bench --only sweep_runs_per_hour``):
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


# -- before and after: the sweep's stacking choice ------------------------------------------

# The fixed sample of the `standard` Table 2 grid (:func:`standard_sample`): every Table 2
# model's runs on this group, with one layer and the model's smallest d_state.
STANDARD_GROUP = "C2"


def standard_sample(size: str = "full"):
    """The fixed sample of the ``standard`` profile's Table 2 grid that
    ``sweep_standard_before_after`` computes: for every Table 2 model, its cell on
    ``STANDARD_GROUP`` with one layer and its smallest d_state, every schedule, learning
    rate and seed of the cell (12 runs, one stack at ``standard``'s ``track_stack``): 120
    runs, in grid order, exactly as the sweep trains them. ``small`` (for the tests): the
    tanh RNN's and Mamba's first two runs, shrunk to 2 steps and tiny evaluations."""
    from dataclasses import replace

    from sst_core.experiments.paper1 import d_state_grid, table2_grid
    from sst_core.spec.profiles import get_profile

    P = get_profile("standard")
    cells = [c for c in table2_grid(P) if c.group == STANDARD_GROUP and c.n_layers == 1
             and c.d_state == d_state_grid(P, c.model)[0]]
    if size == "full":
        return cells
    s = SAMPLE_SIZES["small"]
    few = [c for c in cells if c.model in ("tanh_rnn", "mamba") and c.seed in (0, 1)
           and c.lr == P.track_lrs[0] and c.schedule == P.track_schedules[0]]
    return [replace(c, max_steps=s["max_steps"], batch=s["batch"], post_steps=0,
                    steps_per_epoch=1, eval_lengths=s["eval_lengths"],
                    eval_samples=s["eval_samples"], eval_batch=s["eval_samples"],
                    heldout_samples=s["eval_samples"]) for c in few]


def _timed_sweep(cfgs, stack: int, unstacked: frozenset, flush: bool) -> float:
    """Wall seconds of the local executor on ``cfgs`` (the sweep's default layout for
    its tasks, :func:`sst_core.sweep.runner.choose_layout`), with denormals flushed in
    training or not (``SST_FLUSH_DENORMALS``, which the spawned workers inherit)."""
    from sst_core.sweep.runner import choose_layout, tasks_of, time_local

    workers, threads = choose_layout(len(tasks_of(cfgs, stack, unstacked)))
    before = os.environ.get("SST_FLUSH_DENORMALS")
    if not flush:
        os.environ["SST_FLUSH_DENORMALS"] = "0"
    try:
        return time_local(cfgs, workers, threads, stack=stack, unstacked=unstacked)
    finally:
        if before is None:
            os.environ.pop("SST_FLUSH_DENORMALS", None)
        else:
            os.environ["SST_FLUSH_DENORMALS"] = before


@register("sweep_standard_before_after", opt_in=True)
def sweep_standard_before_after(ctx: Context) -> list[dict[str, Any]]:
    """Runs per hour of :func:`standard_sample` as ``sst sweep`` computes it (its default
    layout, one torch thread per worker, stacks of ``track_stack``, fresh processes and a
    temporary results folder each time), *before* (every model stacked, denormals as the
    CPU leaves them) and *after* (only the models the newest benchmark record of this
    device measured faster stacked, :func:`sst_core.sweep.stacking.unstacked_models`;
    denormals flushed in training), alternating in one run: before, after, before, after,
    ... ``--repeat`` rounds (hours at ``full`` sizes: run it on an idle machine). Storing
    each run's CPU time (the third change of that step) costs two clock reads a run and
    is in both. ratio = after / before (median wall times); no target."""
    from sst_core.spec.profiles import get_profile
    from sst_core.sweep.stacking import unstacked_models

    cfgs = standard_sample(ctx.size)
    K = get_profile("standard").track_stack if ctx.size == "full" else 2
    unstacked = unstacked_models(ctx.device.type)
    before, after = [], []
    for _ in range(ctx.repeat):
        before.append(_timed_sweep(cfgs, K, frozenset(), flush=False))
        after.append(_timed_sweep(cfgs, K, unstacked, flush=True))
    sizes = {"runs": len(cfgs), "models": len({c.model for c in cfgs}), "stack": K,
             "batch": cfgs[0].batch, "length": 60, "max_steps": cfgs[0].max_steps,
             "d_model": cfgs[0].d_model}
    entry = make_entry("sweep_standard_before_after", "train",
                       "sweep of the standard sample, stacking where measured faster, "
                       "denormals flushed", ctx, sizes, after, before,
                       "the same sweep stacking every model, denormals not flushed")
    n = len(cfgs)
    entry.update(tokens_per_s=None, anchor_tokens_per_s=None,
                 runs_per_hour=3600 * n / entry["ours_s"],
                 anchor_runs_per_hour=3600 * n / entry["anchor_s"],
                 unstacked_models=sorted(unstacked),
                 sample=f"standard Table 2 grid, {STANDARD_GROUP}, 1 layer, each model's "
                        "smallest d_state, every schedule, learning rate and seed")
    return [entry]
