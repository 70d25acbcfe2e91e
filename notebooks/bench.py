# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Speed: benchmarks
#
# The paper profile trains hundreds of small models (Table 2 alone is ten architectures
# times three groups, two depths, three widths, three learning rates and three seeds, and
# the Figure 4 sweep adds more), so how fast one training step runs decides whether the
# book can be regenerated at full scale. This chapter shows the measurements that
# `make bench` (`sst bench`) takes. Every comparison times our code and a reference side
# by side in one run (ours, reference, ours, reference, ... after warm-up calls) and
# reports medians; no test asserts a time, because times depend on the machine.
#
# {numref}`tab-bench-targets` says what is compared, and the bar each comparison is held to.
#
# :::{table} What each benchmark compares, and its target.
# :name: tab-bench-targets
#
# | comparison | reference | target (ours / reference) |
# |---|---|---|
# | tanh RNN and state-gated RNN: training step (forward, backward, AdamW) at $d$ = 64 and 128, batch 256, length 60; evaluation at length 1000 | `torch.nn.RNN` (tanh), `torch.nn.GRU` (fused kernels) | at most 1.2 |
# | diagonal affine scan $h_t = a_t h_{t-1} + b_t$ (Mamba family, AUSSM; real and complex), forward and backward, lengths 1000 and 4096 | a per-step loop that autograd differentiates | at most 0.5 on the CPU, 0.1 on CUDA; bandwidth at least 40% of the measured copy bandwidth |
# | $K = 16$ small models that differ in seed and learning rate, one training step as one stacked computation | 16 ordinary training steps one after the other | at most 0.5 on the CPU, 0.1 on CUDA |
# | S4D kernel and FFT convolution at lengths 1024 to 16384 | the published S4D kernel's formula | time, and peak memory at most 0.25 |
# :::
#
# The stacked training is `sst_core.training.stacked`: the $K$ models' weights are stacked along a
# new leading dimension and one `torch.func.vmap` runs all $K$ forward passes; the loss is
# the sum of the $K$ losses, so one backward pass gives each model its own gradient, and
# AdamW and gradient clipping act row by row. `tests/test_stacked.py` checks that it gives
# the results of $K$ separate runs, and the Table 2, Table 3 and Figure 4 sweeps use it
# (`track_stack` models at a time).

# %% tags=["parameters", "remove-cell"]
# Papermill parameters: `profile` (this chapter only reads stored benchmark records).
profile = "quick"

# %% tags=["remove-input"]
from sst_core.book import params

P = params.from_notebook("bench", globals())  # fails here on a typo or a wrong type

# %%
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Markdown, display
from myst_nb import glue

from sst_core.bench import records as bench_records
from sst_core.figures import common as plots
from sst_core.reports import bench as bench_report

records = bench_records.load_records()
checks = bench_records.load_records(experiment="gpu_check")
cpu, cuda = bench_report.latest(records, "cpu"), bench_report.latest(records, "cuda")

# %% [markdown]
# ## On the CPU
#
# The newest CPU record. The machine is named in the collapsed block below; on a shared
# machine repeated runs differ by up to about 30%, so a ratio within 1.3x of its target is
# noise rather than a verdict.

# %% tags=["remove-input"]
def tables_md(tables):
    """Several report tables as one Markdown output, for one numbered figure."""
    return Markdown("\n\n".join(t.to_markdown() for t in tables))


if cpu is None:
    glue("bench_cpu_tables", Markdown("No CPU benchmark record yet: run "
                                      "`make bench BENCH_ARGS=--record`."), display=False)
else:
    display(Markdown(":::{admonition} Where and how this benchmark was measured\n"
                     ":class: dropdown provenance\n\n" + bench_report.provenance(cpu) + "\n:::"))
    glue("bench_cpu_tables", tables_md(bench_report.bench_tables(cpu)), display=False)

# %% [markdown]
# ```{glue:figure} bench_cpu_tables
# :name: "tab-bench-cpu"
#
# Each of our operations beside its reference of the same sizes, interleaved in one run
# (ratio = ours / reference), with its target where it has one: the newest CPU benchmark.
# ```

# %% [markdown]
# The figure puts every comparison that has a target on one axis: the measured ratio
# divided by its target, so that everything left of the line meets its bar.

# %%
def target_figure(record, device_label):
    rows = bench_report.targets(record)
    names = [r["name"] for r in rows]
    rel = np.array([r["ratio"] / r["target"] for r in rows])
    fig, ax = plt.subplots(figsize=(8, 0.28 * len(rows) + 1.4))
    colors = ["tab:green" if v <= 1 else "tab:red" for v in rel]
    ax.barh(range(len(rows)), rel, color=colors)
    ax.axvline(1.0, color="black", lw=1)
    ax.set_yticks(range(len(rows)), names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("ratio / target (left of 1: meets the target)")
    plots.suptitle(fig, f"Benchmarks against their targets, {device_label} "
                   f"({record['hardware']['device_name']}, size {record['settings']['size']})")
    fig.tight_layout()
    return fig, int((rel <= 1).sum()), len(rows)


if cpu is None:  # a results folder without benchmark records
    glue("bench_cpu_targets", Markdown("No CPU benchmark record yet."), display=False)
    glue("bench_cpu_met", "n/a", display=False)
    glue("bench_cpu_missed", "n/a", display=False)
else:
    fig, met, total = target_figure(cpu, "CPU")
    glue("bench_cpu_targets", fig, display=False)
    plt.close(fig)
    glue("bench_cpu_met", f"{met} of {total}", display=False)
    glue("bench_cpu_missed", ", ".join(r["name"] for r in bench_report.targets(cpu)
                                       if r["status"] == "misses") or "none", display=False)

# %% [markdown]
# ```{glue:figure} bench_cpu_targets
# :name: "fig-bench-targets"
#
# Every comparison with a target on one axis: the measured ratio over its target (left of
# the line: the target is met). {glue:text}`bench_cpu_met` meet it; missed:
# {glue:text}`bench_cpu_missed`.
# ```
#
# **Reading the misses.** Stacking removes per-operation overhead (Python, dispatch, kernel
# launches), not arithmetic or memory traffic, so it gains most where a sequential step is
# mostly overhead, as for the dense RNNs at these small sizes. The Mamba family and AUSSM
# spend more of theirs on elementwise work over tensors of shape (batch, length, channels,
# state), which 16 stacked models do 16 times all the same. What moves them is
# less of that work per model, which helps stacked and sequential runs alike: the fused
# selective scan (`sst_core.ops.selective_scan`) never builds those tensors for Mamba; linear
# attention trains through a blocked quadratic form that builds no state at all
# (`sst_core.models.attention.causal_linear_attention`: compare its throughput row with an
# older record under `results/bench/`); AUSSM's training skips assembling its flat states.
# On a GPU, where a small model leaves most of the device idle, stacking is where the large
# gains are expected; the CUDA section below will say once a GPU has run it.
#
# The stacked table's last two columns bound what stacking can gain *with these kernels*.
# In the same rounds, one model takes a training step on all $K b$ sequences at once: the
# stack's arithmetic with one set of weights instead of $K$, through the same kernels on
# tensors of the same sizes. Its time over the $K$ sequential steps (the ceiling) is about
# the least a stack built on these kernels reaches. It is not a limit of the CPU: that
# one-model step itself runs far below the machine's matrix-product rate, so faster
# kernels would lower the ceiling too.

# %%
def glue_missing(*names):
    """Glue "n/a" for numbers the newest record does not have (the cell says why)."""
    for name in names:
        glue(name, "n/a", display=False)


bound = bench_report.stacking_bound(cpu) if cpu is not None else None
if bound is None:
    display(Markdown("The newest CPU record predates the ceiling column "
                     "(`make bench BENCH_ARGS=--record` measures it)."))
    glue_missing("stack_K", "stack_b", "stack_ceiling_range", "stack_above",
                 "stack_one_gflops", "stack_peak")
else:
    glue("stack_K", bound["K"], display=False)
    glue("stack_b", bound["batch"], display=False)
    glue("stack_ceiling_range", f"{bound['ceiling_min']:.2f} to {bound['ceiling_max']:.2f}",
         display=False)
    glue("stack_above", f"{bound['above_target']} of {bound['models']}", display=False)
    glue("stack_one_gflops", "n/a" if bound["one_model_gflops_min"] is None else
         f"{bound['one_model_gflops_min']:.0f} to {bound['one_model_gflops_max']:.0f}",
         display=False)
    glue("stack_peak", "n/a" if bound["matmul_peak_gflops"] is None
         else f"{bound['matmul_peak_gflops']:.0f}", display=False)

# %% [markdown]
# In the newest CPU record, one model on all {glue:text}`stack_K` x {glue:text}`stack_b`
# sequences took {glue:text}`stack_ceiling_range` of the sequential steps' time, above the
# stacking target for {glue:text}`stack_above` models, and ran at
# {glue:text}`stack_one_gflops` GFLOP/s against a large matrix product's
# {glue:text}`stack_peak` GFLOP/s on the same threads.
#
# **Where the sweep stacks.** A sweep runs one torch thread per worker, and there the
# balance can differ from the table above (which runs on the benchmark's threads, at the
# quick profile's sizes). The `stack_or_not_` rows time, per Table 2 model, one stacked step
# of $K$ models against $K$ sequential steps at one thread and the `standard` profile's
# sizes ($K$ = 12, batch 64, length 60). The sweep reads them from the newest record of its
# device (`sst_core.sweep.stacking`): a model whose stacked step costs at least as much per
# model as a sequential one trains one run at a time; the others stack. Without such a
# record every model stacks, as before these rows existed.

# %%
choice = bench_report.stacking_choice(cpu) if cpu is not None else []
if not choice:
    display(Markdown("The newest CPU record predates the stack-or-not rows: the sweep "
                     "stacks every model until a record has them."))
    glue_missing("stack_yes", "stack_no")
else:
    glue("stack_yes", ", ".join(c["model"] for c in choice if c["stacked"]) or "none",
         display=False)
    glue("stack_no", ", ".join(c["model"] for c in choice if not c["stacked"]) or "none",
         display=False)

# %% [markdown]
# By the newest CPU record the sweep stacks {glue:text}`stack_yes` and trains
# {glue:text}`stack_no` one run at a time.
#
# **How far each step is from its limit.** The throughput table's training steps at
# $d_{model}$ = 64 carry two limits. The *flop limit* is the step's arithmetic at what this
# machine does: each matrix product of the step timed alone at its own shapes (small
# products run far below a large one's rate), and the rest of the arithmetic (elementwise
# work, the scans' loops) at a large float32 matrix product's rate, which no arithmetic here
# beats. The *byte limit* is what the step's fast path moves at the measured copy
# bandwidth: every operation's inputs and outputs once, and the arrays each C loop reads and
# writes, once each, as their loops walk them (`sst_core.bench.roofline` documents the
# count). The better (larger) of the two is the step's limit, and "x limit" is how far the
# step is from it. Records made before this count used the large product's rate for every
# flop and counted the bytes of the torch reference path, which the fast path never moves;
# the table's note says which count a record has.

# %%
step_profile = None  # the per-step profile of the models beyond 5x, where the record has it
rows = [r for r in (bench_report.limit_rows(cpu) if cpu is not None else [])
        if r["method"] == "shapes"]  # the present count only
if not rows:
    display(Markdown("The newest CPU record predates the present count of the limits (its "
                     "table above says which count it has): `make bench "
                     "BENCH_ARGS=--record` measures them."))
    glue_missing("limit_within", "limit_range", "limit_compute_bound")
else:
    within = [r for r in rows if r["ratio"] <= r["target"]]
    glue("limit_within", f"{len(within)} of {len(rows)}", display=False)
    glue("limit_range", f"{min(r['ratio'] for r in rows):.1f} to "
         f"{max(r['ratio'] for r in rows):.1f}", display=False)
    glue("limit_compute_bound", sum(r["bound"] == "compute" for r in rows), display=False)
    step_profile = bench_report.profile_table(cpu)
    if step_profile is not None:
        glue("bench_profile", step_profile, display=False)
    elif any(r["ratio"] > r["target"] for r in rows):
        display(Markdown("The newest CPU record predates the per-step profile: "
                         "`make bench BENCH_ARGS=--record` measures it."))
if step_profile is None:  # nothing to number: the figure below says so
    glue("bench_profile", Markdown("(this record has no per-step profile)"), display=False)

# %% [markdown]
# ```{glue:figure} bench_profile
# :name: "tab-bench-profile"
#
# Where one training step's time goes, for each model beyond 5x of its limit: the
# operations that take most of the step (a torch profile of the fast path).
# ```
#
# In the newest CPU record {glue:text}`limit_within` of these steps are within 5x of their
# limit (from {glue:text}`limit_range` times it), and the flop limit is the larger for
# {glue:text}`limit_compute_bound` of them. For each model beyond 5x, {numref}`tab-bench-profile`
# lists the operations that take most of one step's time, where the newest benchmark
# measured them.

# %% [markdown]
# **Which S4D classifiers.** The classifier rows come in two sets: three at fixed example sizes
# (H of 64 and 128, two layers; unchanged since the first record, so that records compare
# across commits), and, named `standard_...`, the models the `standard` profile trains for the
# LRA chapter, read from the profile (each task's H and depth, its batch, the task's longest
# sequence). Records made before the profile was resized have only the first set.
#
# **The scan's loops.** Where the machine has a C compiler, the CPU scan runs its loops in C
# (`sst_core/ops/native_scan.c`, compiled on first use; the "Where and how" block of the CPU
# section says which loops the record ran): the whole recurrence in one call, batch rows split between the threads, and
# $\partial L / \partial a$ written during the reverse pass. The torch loops it replaces
# launch one operation per time step and read every state twice in the backward pass; the
# bandwidth shares in {numref}`tab-bench-cpu` are measured against a two-thread copy of a large
# buffer, and vary by about as much as the other ratios between runs on a shared machine.

# %% [markdown]
# ## The same rows on another machine
#
# The machine this book is built on is not always the same one: the records under
# `results/bench/` come from more than one CPU. The table sets the newest record beside the
# newest one from another CPU model, row by row, and keeps the rows whose time differs by
# more than half.

# %%
other = bench_report.other_machine(records, cpu) if cpu is not None else None
glue("bench_machines", Markdown("Every CPU record so far comes from one CPU model.")
     if other is None else bench_report.across_machines(cpu, other), display=False)

# %% [markdown]
# ```{glue:figure} bench_machines
# :name: "tab-bench-machines"
#
# Two CPU models side by side, the newest benchmark of each: the rows whose time differs
# by more than half.
# ```

# %% [markdown]
# **Reading it.** The two machines are an Intel Xeon with AVX-512 and an AMD EPYC with
# AVX2 only. Most rows move together, by about the ratio of the two machines' speeds.
# The C selective scan of `sst_core/ops/native_selective.c` (the Mamba and Negative Mamba
# rows, and the scan's own) clamps its argument before the exp polynomial. With AVX-512's
# masked instructions gcc vectorises such loops; with AVX2 only it kept much of them scalar
# unless it may assume that comparisons raise no floating-point exception, and the first
# AMD record (2026-12-06, 04:15 UTC) shows that scan several times slower than on the Xeon.
# The source now has a block compiled only for targets without AVX-512 that gives gcc that
# permission (`#pragma GCC optimize("no-trapping-math")`); the AMD benchmark records made
# since show its effect. On a target with AVX-512 the block is not compiled.

# %% [markdown]
# ## On CUDA
#
# `scripts/gpu_check.sh` runs on a machine with CUDA: it compares every model's and every
# fast operation's output and gradients on the GPU with the CPU, then runs the same
# benchmarks on the GPU, and stores both records here. It is never part of CI.
#
# On CUDA the selective and unitary scans do not run their step-by-step loops (one kernel
# launch per step): they take a parallel path, `linear_scan`'s chunked Hillis-Steele scan
# over whole-sequence tensors (the tests run that path on the CPU against the plain
# references at lengths 1, 63 and 1000, in value and gradient). The delta-rule scan of
# DeltaNet and DeltaProduct is chunked on every device. The check compares each scan's
# parallel path with the CPU's C loops, and both paths on both devices; the `scan_paths_`
# rows time the device's own path against the other one.

# %% tags=["remove-input"]
if cuda is not None:
    display(Markdown(":::{admonition} Where and how this benchmark was measured\n"
                     ":class: dropdown provenance\n\n" + bench_report.provenance(cuda) + "\n:::"))
gpu = ([bench_report.gpu_check_table(checks[-1])] if checks else []) + (
    bench_report.bench_tables(cuda) if cuda is not None else [])
glue("bench_cuda_tables", tables_md(gpu) if gpu else Markdown(
    "No CUDA record yet: no machine with CUDA has run `scripts/gpu_check.sh` for this "
    "version of the book. The CPU tables above are all we have measured."), display=False)

# %% [markdown]
# ```{glue:figure} bench_cuda_tables
# :name: "tab-bench-cuda"
#
# On CUDA: the GPU check (every model's and fast operation's outputs and gradients against
# the CPU's) and the benchmarks of the newest CUDA record, where there are any.
# ```

# %% [markdown]
# ## Regenerating these numbers
#
# ```bash
# make bench BENCH_ARGS=--record        # every comparison on this machine, stored as a record
# make bench BENCH_ARGS='--only stacked_train_K16_mamba --repeat 9'
# scripts/gpu_check.sh                  # on a machine with CUDA
# ```
#
# `sst bench --format json` prints one entry per comparison with `ours_s`, `anchor_s`,
# `ratio` and the sizes; `--list` names every comparison.
