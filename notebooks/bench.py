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
# The paper profile trains many small models (Table 2 alone is
# {glue:text}`t2_runs` runs: {glue:text}`t2_models` architectures times
# {glue:text}`t2_groups` groups, {glue:text}`t2_depths` depths, {glue:text}`t2_sizes` state
# sizes or widths, {glue:text}`t2_schedules` learning-rate schedules,
# {glue:text}`t2_lrs` learning rates and {glue:text}`t2_seeds` seeds, and the Figure 4
# sweep adds more), so how fast one training step runs decides whether the
# book can be regenerated at full scale. This chapter shows the measurements that
# `make bench` (`sst bench`) takes. Every comparison times our code and a reference side
# by side in one run (ours, reference, ours, reference, ... after warm-up calls) and
# reports medians; no test asserts a time, because times depend on the machine.
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
# | selective scan (Mamba, Negative Mamba): the C loops, forward and backward | its own torch (chunked) path | at most 1/3 |
# | selective scan: ours, forward and backward | public CPU implementations (mamba's `selective_scan_ref`, mamba.py's `pscan`) | at most 1 |
# | S4D classifier (paper 2's LRA model): training step | the same model built as the standalone `s4d.py` and `example.py` | at most 0.5 |
# | every Table 2 model's training step at $d_{model}$ = 64 | its flop or byte limit on this machine (below) | at most 5 |
# :::
#
# The stacked training is `sst_core.training.stacked`: the $K$ models' weights are stacked along a
# new leading dimension and one `torch.func.vmap` runs all $K$ forward passes; the loss is
# the sum of the $K$ losses, so one backward pass gives each model its own gradient, and
# AdamW and gradient clipping act row by row. `tests/test_stacked.py` checks that it gives
# the results of $K$ separate runs, and the Table 2, Table 3 and Figure 4 sweeps use it.

# %% tags=["parameters", "remove-cell"]
# Papermill parameters: `profile` (this chapter only reads stored benchmark records).
profile = "quick"

# %% tags=["remove-input"]
from sst_core.book import params

P = params.from_notebook("bench", globals())  # fails here on a typo or a wrong type
import matplotlib.pyplot as plt
from myst_nb import glue

from sst_core.bench import records as bench_records
from sst_core.figures import bench as plots_bench
from sst_core.reports import bench as bench_report

records = bench_records.load_records()  # what `sst bench --record` stored
cpu = bench_report.latest(records, "cpu")  # the newest full benchmark on a CPU
items = bench_report.chapter_items(records, bench_records.load_records(experiment="gpu_check"))
for name, value in {
        **items, **bench_report.paper_table2_counts(),
        "bench_targets": plots_bench.fig_targets(bench_report.targets(cpu) if cpu else [])}.items():
    glue(name, value, display=False)
plt.close("all")

# %% [markdown]
# ## On the CPU
#
# The tables and figures below read the newest CPU benchmark, made on an
# {glue:text}`machine_here` (the collapsed block at the end of the page says how). On a shared
# machine repeated runs differ, by an amount this page does not measure, so a ratio close to
# its target is no verdict either way. In every table the ratio is ours over the reference. Each row
# is named by what it times and at which sizes: $L$ the length, $b$ the batch, $d$ or
# $d_{model}$ the model's width, $N$ the state size, $H$ an S4D layer's channels, $E$
# Mamba's expanded width, $K$ the number of models; the pointer held over a name shows the
# command that times that row again.
#
# ```{glue:figure} bench_targets
# :name: "fig-bench-targets"
#
# Every comparison with a time target on one axis: the measured ratio over its target (left of the line: the target is met). {glue:text}`bench_met` of {glue:text}`bench_goals` meet it; missed: {glue:text}`bench_missed`. Two goals of {numref}`tab-bench-targets` are not time ratios and are left out: the S4D kernel's peak memory, met by {glue:text}`bench_memory_met` of {glue:text}`bench_memory_goals` rows ({numref}`tab-bench-s4d-kernel`), and the diagonal scan's bandwidth, at least {glue:text}`bench_bandwidth_goal` of the copy bandwidth in {glue:text}`bench_bandwidth_met` of {glue:text}`bench_bandwidth_goals` rows ({numref}`tab-bench-diag-scan`).
# ```
#
# ````{table} Dense recurrences against torch's fused kernels (nn.RNN for the tanh RNN, nn.GRU for the state-gated RNN): time per call, ratio and target.
# :name: tab-bench-dense
# ```{glue:md} bench_dense
# :format: myst
# ```
# ````
#
# ````{table} The diagonal affine scan, forward and backward: linear_scan against a per-step loop that autograd differentiates, and the bandwidth it reaches as a share of the measured copy bandwidth.
# :name: tab-bench-diag-scan
# ```{glue:md} bench_diag_scan
# :format: myst
# ```
# ````
#
# ````{table} Many models at once: one stacked training step of K models against K sequential steps; one model ms: one model's step on all K b sequences at once, and ceiling: that over the K sequential steps.
# :name: tab-bench-stacked
# ```{glue:md} bench_stacked
# :format: myst
# ```
# ````
#
# **Reading the misses.** Stacking removes per-operation overhead (Python, dispatch, kernel
# launches), not arithmetic or memory traffic. The ceiling column measures what is left
# *with these kernels*: one model on all {glue:text}`stack_K` x {glue:text}`stack_b`
# sequences does the stack's arithmetic with one set of weights through the same kernels,
# and took {glue:text}`stack_ceiling` of the sequential steps' time, above the stacking
# target for {glue:text}`stack_above` of {glue:text}`stack_models` models: for those, the
# stack's work done in one call already misses the target, stacked or not (a stacked step
# can land a little on either side of its ceiling: the two are separate timings). Which
# operations keep that one-model step from scaling is not measured here ({numref}`tab-bench-profile`
# profiles single steps at other sizes). What lowers the work per model, stacked or
# sequential: the fused selective scan (`sst_core.ops.selective_scan`) never builds the
# (batch, length, channels, state) tensors for Mamba; linear attention trains through a
# blocked quadratic form that builds no state at all
# (`sst_core.models.attention.causal_linear_attention`); AUSSM's training skips assembling
# its flat states. On a GPU, where a small model leaves most of the device idle, stacking may
# gain more; only a CUDA benchmark (below) can show it. The ceiling is not a limit of the CPU: that one-model step ran at
# {glue:text}`stack_gflops` GFLOP/s against a large matrix product's
# {glue:text}`stack_peak` GFLOP/s on the same threads, so faster kernels would lower the
# ceiling too.
#
# **Where the sweep stacks.** A sweep runs one torch thread per worker, where the balance
# can differ from the table above. The stack-or-not rows ({numref}`tab-bench-stack-or-not`)
# time, per Table 2 model, one stacked step of $K$ models against $K$ sequential steps at
# one thread and the `standard` profile's sizes. The sweep reads them from the newest benchmark
# of its device (`sst_core.sweep.stacking`): a model whose stacked step costs at least as
# much per model as a sequential one trains one run at a time, the others stack (every
# model stacks without one). The rows are per model and $d_{model}$: the wider runs of the
# staged Table 2 sweep (the status page lists it) have rows of their own, timed alone
# (`sst bench --only`). By the newest row of each ({numref}`tab-bench-stack-choice`), the
# sweep stacks {glue:text}`stack_yes` and trains {glue:text}`stack_no` one run at a time.
#
# ````{table} Stack or not, what the sweep decides from: one stacked step of K models against K sequential steps of the same models, on one thread at the standard profile's sizes (below 1 the sweep stacks the model).
# :name: tab-bench-stack-or-not
# ```{glue:md} bench_stack_or_not
# :format: myst
# ```
# ````
#
# ````{table} Where the sweep stacks now: per model and $d_{model}$ (—: a row that names no width, and holds at every width), the newest stack-or-not row of any CPU benchmark, a whole one or rows timed alone: its ratio (a stacked step of K models over K sequential steps), what the sweep does with the model (below 1 it stacks it) and the day the row was made.
# :name: tab-bench-stack-choice
# ```{glue:md} bench_stack_choice
# :format: myst
# ```
# ````
#
# **What it changes for a whole sweep.** The sweep's two changes, stacking only where
# those rows say it is faster and flushing denormal floats (numbers too small for the
# normal floating-point form, which many CPUs compute with far more slowly) to zero in
# training, were timed
# together on a fixed sample of the `standard` Table 2 grid: every Table 2 model's cell on
# $C_2$ with one layer and its smallest state size, with all of the cell's schedules,
# learning rates and seeds ({glue:text}`sweep_runs` runs). `sst bench` computes the sample
# as `sst sweep` does (two workers of one thread, fresh processes, records written to a
# temporary folder), once before the changes and once after, alternating, for
# {glue:text}`sweep_rounds`, on a machine doing nothing else (load average
# {glue:text}`sweep_load` at the start). After, the sweep trains {glue:text}`sweep_alone`
# one run at a time. After took {glue:text}`sweep_ratio` times as long as before
# ({numref}`tab-bench-sweep`). Round by round, after's time over before's was
# {glue:text}`sweep_round_range`: after was the slower in {glue:text}`sweep_round_slower`
# of the rounds and the faster in {glue:text}`sweep_round_faster`. The sample is at $d_{model}$ =
# {glue:text}`sweep_width`, where the rows above set apart only models whose stacked step
# cost {glue:text}`sweep_alone_rows` of their sequential steps: training them alone could
# save at most {glue:text}`sweep_alone_gain` of their steps' time. The rows of the wider
# staged sweep are not in this sample.
# This measurement does not separate the effect of flushing denormals from that of the
# stacking choice.
#
# ````{table} The sweep before and after its two changes: wall time and runs per hour of one fixed sample of the standard Table 2 grid, computed as sst sweep computes it.
# :name: tab-bench-sweep
# ```{glue:md} bench_sweep
# :format: myst
# ```
# ````
#
# **How far each step is from its limit.** The training steps of the Table 2 models at
# $d_{model}$ = 64 ({numref}`tab-bench-limits`), and the other tables' training steps
# ({numref}`tab-bench-limits-other`), carry two limits.
# The *flop limit* (flop limit ms) is the step's arithmetic at what this machine does: each
# matrix product of the step timed alone at its own shapes (small products run far below a
# large one's rate), and the rest of the arithmetic (one flop per element of pointwise ops
# and reductions) at a large float32 matrix product's rate, which no arithmetic here beats.
# The *byte limit* is what the step's fast path moves at the measured copy bandwidth: every
# operation's inputs and outputs once, and the arrays each C loop reads and writes, once
# each (`sst_core.bench.roofline` documents the count). GFLOP/s is the step's flops per
# second; bound names the larger limit, and "x limit" is the step's time over it (goal, where
# shown: at most 5). {glue:text}`limit_within` of {glue:text}`limit_rows` Table 2 steps are
# within 5x of their limit (from {glue:text}`limit_range` times it), and the flop limit is
# the larger for {glue:text}`limit_compute_bound` of them. {numref}`tab-bench-profile`
# shows where each step's time goes, and {numref}`tab-bench-throughput` the time and
# throughput of every Table 2 model at the quick profile's sizes.
#
# ````{table} Throughput of every Table 2 model at the quick profile's sizes (no reference).
# :name: tab-bench-throughput
# ```{glue:md} bench_throughput
# :format: myst
# ```
# ````
#
# ````{table} Every Table 2 model's training step at d_model 64 and its limits: time, GFLOP/s, the flop and byte limits, the larger of them (bound), and time over it (x limit, goal at most 5).
# :name: tab-bench-limits
# ```{glue:md} bench_limits
# :format: myst
# ```
# ````
#
# ````{table} Where one training step's time goes, per Table 2 model at d_model 64 with its x limit: the three operations with the most self time under torch.profiler (after one untimed step), their share of the summed self times and their ms (native ...: the C loops, timed as regions; the profiler's overhead makes these ms larger than the step's).
# :name: tab-bench-profile
# ```{glue:md} bench_profile
# :format: myst
# ```
# ````
#
# ### The other comparisons: scans, S4D and the semi-affine correction
#
# Where the machine has a C compiler, the CPU scans run their loops in C
# (`sst_core/ops/native_scan.c` and `native_selective.c`, compiled on first use): the whole
# recurrence in one call, batch rows split between the threads, and $\partial L / \partial
# a$ written during the reverse pass. The torch loops they replace launch one operation per
# time step and read every state twice in the backward pass. The S4D classifier rows come in
# two sets: three at fixed example sizes (two layers, $H$ of 64 and 128), so that benchmarks
# compare across versions, and three at the sizes the `standard` profile trains for the
# LRA chapter.
#
# ````{table} The scans' two paths on this device, forward and backward: the device's own path (C loops on the CPU, the parallel chunked scan on CUDA) against the other.
# :name: tab-bench-scan-paths
# ```{glue:md} bench_scan_paths
# :format: myst
# ```
# ````
#
# ````{table} The selective scan's C loops against its torch (chunked) path, forward and backward, for Mamba and Negative Mamba; the rows "on torch's threads": the loops' parts on torch's thread team, on one or two threads.
# :name: tab-bench-selective
# ```{glue:md} bench_selective
# :format: myst
# ```
# ````
#
# ````{table} The selective scan against public CPU implementations (the reference named in the row: mamba's selective_scan_ref or mamba.py's pscan), forward and backward.
# :name: tab-bench-selective-vs
# ```{glue:md} bench_selective_vs
# :format: myst
# ```
# ````
#
# ````{table} The S4D kernel and FFT convolution, forward and backward: the chunked Vandermonde kernel against the published S4D kernel's formula, in time and in peak memory.
# :name: tab-bench-s4d-kernel
# ```{glue:md} bench_s4d_kernel
# :format: myst
# ```
# ````
#
# ````{table} The S4D classifier's training step (paper 2's LRA model): our S4DModel against the same model built as the standalone s4d.py and example.py.
# :name: tab-bench-s4d-classifier
# ```{glue:md} bench_s4d_classifier
# :format: myst
# ```
# ````
#
# ````{table} The cost of the semi-affine correction: semi-affine Negative Mamba against the affine original.
# :name: tab-bench-semi-affine
# ```{glue:md} bench_semi_affine
# :format: myst
# ```
# ````
#
# ````{table} The limits of the other tables' training steps, as in the table of the Table 2 models' limits; a step timed in two comparisons appears once for each timing.
# :name: tab-bench-limits-other
# ```{glue:md} bench_limits_other
# :format: myst
# ```
# ````
#
# ## The same rows on another machine
#
# The benchmarks under `results/bench/` come from more than one CPU.
# {numref}`tab-bench-machines` sets the newest beside the newest from another CPU model, an
# {glue:text}`machine_there`, and keeps the rows whose time differs by more than half; over
# all {glue:text}`machine_shared` rows the two share, the median ratio is
# {glue:text}`machine_median`.
#
# :::{table} The same rows on two CPU models, the newest benchmark of each: their ratio, ms on the first and ms on the second, for the rows whose ratio lies outside {glue:text}`machine_spread`; a step timed in two comparisons appears once for each timing.
# :name: tab-bench-machines
# ```{glue:md} bench_machines
# :format: myst
# ```
# :::
#
# Why particular rows move more than others between the two machines is not measured here.
# One difference in how the code is built is known: the C selective scan of
# `sst_core/ops/native_selective.c` (the Mamba and Negative Mamba rows, and the scan's own)
# clamps its argument before the exp polynomial, and on targets without AVX-512 it is
# compiled with `#pragma GCC optimize("no-trapping-math")`, which lets gcc vectorise that
# clamp with AVX2 alone; these rows do not separate that flag's effect from the machines'.
#
# ## On CUDA
#
# `scripts/gpu_check.sh` runs on a machine with CUDA: it compares every model's and every
# fast operation's output and gradients on the GPU with the CPU, then runs the same
# benchmarks on the GPU, and stores both results here; it is never part of CI. On CUDA the
# selective and unitary scans do not run their step-by-step loops: they take
# `linear_scan`'s chunked Hillis-Steele scan over whole-sequence tensors (tested on the CPU
# against the plain references at lengths 1, 63 and 1000, in value and gradient); the
# delta-rule scan of DeltaNet and DeltaProduct is chunked on every device. Where a machine
# with CUDA has run the check, {numref}`tab-bench-cuda-check` and {numref}`tab-bench-cuda`
# hold its results; until one has, they say so and the CPU tables above are all we have
# measured.
#
# ````{table} CUDA against the CPU, the newest GPU check: each model's and fast operation's largest difference in output and in gradients, and whether it is within the check's tolerance.
# :name: tab-bench-cuda-check
# ```{glue:md} bench_cuda_check
# :format: myst
# ```
# ````
#
# ````{table} The newest CUDA benchmark: every comparison with a target, ours against its reference (ratio = ours / reference).
# :name: tab-bench-cuda
# ```{glue:md} bench_cuda
# :format: myst
# ```
# ````

# %% tags=["remove-input"]
from sst_core.book.provenance import how_made

how_made("bench", P, measured=items["bench_provenance"],
         regenerate="Regenerate: `make bench BENCH_ARGS=--record` (every comparison on this "
         "machine, stored as a record); `make bench BENCH_ARGS='--only stacked_train_K16_mamba "
         "--repeat 9'` (one row); `scripts/gpu_check.sh` on a machine with CUDA. `sst bench "
         "--format json` prints one entry per comparison with `ours_s`, `anchor_s`, `ratio` "
         "and the sizes; `--list` names them all.")
