# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Where affine trackers fail: the distinguishability ratio
#
# The paper's Table 2 ({doc}`its chapter <p1_table2>`) says *which* models stop tracking
# $S_3$; this chapter measures *when* and *why*, with the diagnostics of the error-control
# paper {cite}`chung2026errorcontrol` (its Figures 1 to 4), computed from the trained
# weights of our runs of that table.

# %% tags=["parameters", "remove-cell"]
# Papermill parameters: `profile`, and None = take the profile's value.
profile = "quick"
track_max_steps = None
track_batch = None
track_eval_samples = None
track_stack = None
diag_samples = None
diag_rollout = None

# %% tags=["remove-input"]
import warnings

import matplotlib.pyplot as plt
from myst_nb import glue

from sst_core.analysis.stats import pearson_p_value
from sst_core.book import params
from sst_core.experiments import paper1
from sst_core.experiments import runs as experiments_runs
from sst_core.figures import error as plots_error
from sst_core.models import cells as model_cells
from sst_core.reports import error_control as ec
from sst_core.spec import paper_values

P = params.from_notebook("p1_diagnostics", globals())  # fails here on a typo or a wrong type

# %% [markdown]
# ## What is measured
#
# Let $h_t$ be the vector the readout $W_{\text{out}}$ sees at position $t$ and $g_t$ the true
# group state. On a large batch of test words (drawn fresh, not seen in training) the
# **centroids** are
# $c_g(t) = \mathbb E[h_t \mid g_t = g]$ and
#
# $$
# \begin{aligned}
# R(t) &= \mathbb E\,\lVert W_{\text{out}}(h_t - c_{g_t}(t))\rVert^2, \\
# M(t) &= \min_{g \ne g'} \lVert W_{\text{out}}(c_g(t) - c_{g'}(t))\rVert^2, \\
# q(t) &= R(t) / M(t).
# \end{aligned}
# $$
#
# $R$ is the spread inside a class and $M$ the gap between the closest two classes, so $q$ is
# a noise-to-signal ratio; $T_{\text{cross}}$ is the first $t$ with $q(t) \ge \tau = 1/2$.
# **Two conventions.** A single sample is decoded correctly by the nearest centroid when
# $\lVert W(h - c_g)\rVert < \tfrac12 \min_{g'} \lVert W(c_g - c_{g'})\rVert$: with squared norms
# that is $\lVert W(h-c_g)\rVert^2 < M/4$, so $\tau = 1/2$ is the exact bound for the *unsquared*
# ratio $\sqrt R/\sqrt M$, and it bounds only the mean, not every sample. The paper defines
# $q$ with squares; we measure both and use the paper's for $T_{\text{cross}}$.
#
# The **symbolic subspace** $U = \operatorname{span}\{c_g - c_{g'}\}$ splits the residual
# $h_t - c_{g_t}$ into a part inside $U$, which pushes the state toward
# another symbol, and a part in $U^\perp$; replacing the residual by either part in $R$ gives
# $q_U$ and $q_{U^\perp}$. Both keep $W_{\text{out}}$ and $M$; the cross term
# $2\langle W_{\text{out}} P_U r, W_{\text{out}} (I - P_U) r\rangle$ is not zero in general, so the two
# need not add up to $q$.
#
# **Which $U$.** On this page $U$ is taken in two places. For $q_U$ and $q_{U^\perp}$
# (Figure 3) it is spanned by the centroids of the vector $W_{\text{out}}$ reads (after the
# final norm) at the training length $t$ = {glue:text}`dg_rec_t_ref:d`; for the perturbations of
# Figure 1 it is spanned by the centroids of the *recurrent state* at
# $t$ = {glue:text}`dg_rec_t0:d`, where the perturbation is applied, as in the theory
# chapter's check of Theorem 1.
#
# The experiment is two calls: train the trackers (those of the Table 2 chapter on $S_3$
# and the runs that Figure 4 adds), then analyse each one's stored weights.

# %%
trained = paper1.s3_runs(P) + paper1.figure4_runs(P)
experiments_runs.run_all(trained, desc="training", stack=P.track_stack)
# seeds added where a cell's runs learn
experiments_runs.run_all(paper1.figure4_growth_runs(P),
                         desc="training, Figure 4's growth",
                         stack=P.track_stack)
s3_diagnostics = [paper1.diagnostics_config(P, c) for c in paper1.s3_runs(P)]
# overflowing states are named in the prose, not warned
with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    s3_records = experiments_runs.run_all(s3_diagnostics,
                                          desc="diagnostics, S3")
    records = experiments_runs.run_all(paper1.diagnostics_grid(P),
                                       desc="diagnostics")
    # the token-gated RNN's heavy-tailed spread, taken apart (Figure 4, below)
    experiments_runs.run_all(paper1.spread_tail_grid(P), desc="spread tail")
# the best S3 run of each model, as in the Table 2 chapter
best = ec.best_per_model(s3_records)

# %% tags=["remove-input"]
ranked = [best[k] for k in sorted(best, key=lambda k: (best[k]["metrics"]["is_affine"], k))]
fig2 = ([r for r in ranked if r["metrics"]["is_affine"]]
        + [r for r in ranked if not r["metrics"]["is_affine"]])
fig3 = ec.figure3_records(s3_records)
f3 = ec.figure3_table(fig3)
overflow = ec.overflow_table(records + s3_records)
nums = ec.figures12_numbers(best)
rec = ec.recovery_numbers(best)
modes = ec.mode_numbers(best)
counts = ec.analysed_counts(records)
dg = ec.diagnostics_table(P)
for name, value in {
        **dict(zip(("dg_table", "dg_modes"),  # in two, for the page's width
                   (t.grid() for t in dg.split(1, 6)))),
        "dg_d_model": P.track_d_model, "dg_d_model_wide": P.track_d_model_wide,
        "dg_runs": counts["analysed"], "dg_runs_failed": counts["failed"],
        "dg_runs_failed_models": counts["failed_models"],
        "dg_samples": P.diag_samples, "dg_rollout": P.diag_rollout,
        **{f"dg_times_{k}": v for k, v in ec.stored_times_spacing(P.diag_rollout).items()},
        "dg_boot_n": ec.BOOTSTRAP_RESAMPLES, "dg_boot_seed": ec.BOOTSTRAP_SEED,
        "dg_overflow_n": sum(d["runs"] for d in overflow.data),
        "dg_overflow_table": overflow.grid(),
        "dg_fig1": plots_error.fig_recovery(ranked),
        "dg_fig2": plots_error.fig_q_trajectories(
            fig2, modes=[ec.start_mode(r)["mode"] for r in fig2]),
        "dg_fig3": plots_error.fig_q_split(fig3),
        **dict(zip(("dg_f3_table", "dg_f3_identity"), (t.grid() for t in f3.split(2, 9)))),
        **{f"dg_f3_{k}": v for k, v in ec.figure3_numbers(f3.data).items()},
        **{f"dg_{k}": float("nan") if v is None else v for k, v in nums.items()},
        **{f"dg_rec_{k}": float("nan") if v is None else v for k, v in rec.items()},
        **{f"dg_modes_{k}": float("nan") if v is None else v for k, v in modes.items()},
        **{f"dg_paper_modes_{k}": v for k, v in ec.figure2_modes(best).items()}}.items():
    glue(name, value, display=False)
plt.close("all")

# %% [markdown]
# At this book's scale {glue:text}`dg_runs:d` trained models are analysed
# ($d_{\text{model}}$ = {glue:text}`dg_d_model:d`; the statistics over
# {glue:text}`dg_samples:,d` test words of length {glue:text}`dg_rollout:,d`). The grid
# holds {glue:text}`dg_runs_failed:d` more ({glue:text}`dg_runs_failed_models`) whose
# training diverged; it is not analysed. The hidden
# states of {glue:text}`dg_overflow_n:d` of these models overflow within the rollout, at the
# times {numref}`tab-overflow` gives; from then on their $R$, $M$ and $q$ are undefined. The
# figures use the best $S_3$ run of each model (largest $m_p$), as the Table 2 chapter does;
# {numref}`tab-diagnostics` and {numref}`tab-diagnostics-modes` sum them up.
#
# :::{table} The runs whose hidden states overflow within the rollout, per model: how many, and the first stored time (every $t$ up to {glue:text}`dg_times_dense:d`, then at most {glue:text}`dg_times_step:.0%` apart) at which the spread $R$ is no longer finite, earliest and latest over those runs.
# :name: tab-overflow
# ```{glue:md} dg_overflow_table
# :format: myst
# ```
# :::
#
# ````{table} When $q$ crosses, for the best $S_3$ run of each model: $m_p$, and the crossing time $T_{\text{cross}}$, a length (tokens read), at $q \ge 1/2$ and $q \ge 1$ with the paper's squared $q = R/M$, and at $1/2$ for the unsquared $\sqrt R/\sqrt M$ (for which $1/2$ is the nearest-centroid bound on the mean spread, not on every word). —: $q$ stays below the threshold up to the rollout.
# :name: tab-diagnostics
# ```{glue:md} dg_table
# :format: myst
# ```
# ````
#
# ````{table} The same runs: $q$ at $m_p$; $q$ at $t = 2$, the first position at which a class has any spread; the failure mode of Figure 2 by the paper's wording (saturation: $q(2) \ge 1/2$; climb: $q(2) < 1/2$ and $q$ crosses $1/2$ later; none: it never crosses) beside the mode the paper names for the model; and what remains of a perturbation of the state after the last step of Figure 1, in a random direction and inside $U$.
# :name: tab-diagnostics-modes
# ```{glue:md} dg_modes
# :format: myst
# ```
# ````
#
# ## Figure 1: does a perturbation die out?
#
# The protocol: each of the first {glue:text}`dg_rec_n_perturb:d` test words is read for
# $t_0$ = {glue:text}`dg_rec_t0:d` tokens; a perturbation $\delta$ with
# $\lVert\delta\rVert$ = {glue:text}`dg_rec_eps:g` $\lVert h_{t_0}\rVert$ is added to the
# recurrent state, and the model reads the *same* word on, perturbed and unperturbed, for
# {glue:text}`dg_rec_perturb_steps:d` more tokens. The words are ordinary words, not
# state-preserving ones. In a random direction only the last layer's recurrent state is
# perturbed; inside $U$ every layer's (the span of the recurrent-state centroids at
# $t_0$ covers them all). The curve is the mean over the words of
# $\lVert e_t\rVert / \lVert e_0\rVert$, the distance to the unperturbed state over every
# layer's recurrent state. The paper's claim: the state-dependent models contract the error
# by orders of magnitude, the token-gated RNN amplifies it, and the affine models stay
# neutral along $U$, the direction Theorem 1 is about (the red curves of
# {numref}`fig-recovery`).
#
# ```{glue:figure} dg_fig1
# :name: "fig-recovery"
#
# Ours for the paper's Figure 1: the mean over the words of
# $\lVert e_t\rVert / \lVert e_0\rVert$ over the steps after a perturbation of the
# recurrent state at $t_0$, in a random direction (blue) and inside $U$ (red), one panel
# for the best $S_3$ run of each model: state-dependent models first, affine models on a
# grey ground. Each panel has a log axis of its own that spans at least a decade either
# side of 1 (dotted: the error unchanged).
# ```
#
# **Verdict.** We count a claim as reproduced when every model it names follows it: a
# state-dependent model contracts when it keeps less than {glue:text}`dg_rec_contract:g` of
# the initial error in a random direction, a token-gated RNN amplifies when its error along
# $U$ ends above the initial one, and an affine model is neutral along $U$ when its error
# there ends between {glue:text}`dg_rec_below:g` and {glue:text}`dg_rec_above:g` times the
# initial one. By that rule {glue:text}`dg_rec_claims:d` of the paper's three claims
# reproduce. In a random direction {glue:text}`dg_rec_sd_contract:d` of
# {glue:text}`dg_rec_sd_n:d` state-dependent models contract (the most any keeps is
# {glue:text}`dg_rec_sd_random_max:.2g` of the initial error). Along $U$
# {glue:text}`dg_rec_amplifier_above:d` of {glue:text}`dg_rec_amplifier_n:d` token-gated RNN
# runs amplify (the error ends at {glue:text}`dg_rec_amplifier_U_lo:,.3g` to
# {glue:text}`dg_rec_amplifier_U_hi:,.3g` times its size), and
# {glue:text}`dg_rec_affine_neutral:d` of the {glue:text}`dg_rec_affine_n:d` affine models
# are neutral; {glue:text}`dg_rec_affine_below:d` of them end with less than
# {glue:text}`dg_rec_below:g` of the initial error, shrunk by a factor of
# {glue:text}`dg_rec_factor_lo:.2g` to {glue:text}`dg_rec_factor_hi:.3g`
# ({numref}`tab-diagnostics-modes`). The classes are separated along $U$ when every
# state-dependent model leaves less error there than every affine one:
# {glue:text}`dg_recovery_affine_below_sd:d` of the {glue:text}`dg_recovery_affine_n:d`
# affine models leave less than the state-dependent model that leaves the most
# ({glue:text}`dg_recovery_sd_max:.2g` of the initial error; the smallest left by an affine
# model is {glue:text}`dg_recovery_affine_min:.2g`). Theorem 1 excludes contraction on $U$
# only *together with* exact state preservation, and the theory chapter's check measures
# how far each trained model is from returning a state to itself; why an affine model
# shrinks errors along $U$ is not measured here.
#
# ## Figure 2: two ways to fail
#
# The paper sees two modes among the affine models: **saturation** (Mamba, Mamba-3: $q$ is
# high from the start, "$q(0)$ already at or above the threshold") and **climb** (Negative
# Mamba, token-gated RNN: $q$ starts low, grows roughly linearly as drift accumulates in $U$
# and crosses at $T_{\text{cross}}$). We label each curve of {numref}`fig-q-trajectories` by
# that wording, with a rule taken from the wording alone: the start is
# $t$ = {glue:text}`dg_modes_start_t:d`, since $q(1) = 0$ for every model (after one token
# the state is a function of that token alone); a curve *saturates* when
# $q(2) \ge \tau = 1/2$, *climbs* when it starts below and crosses later, and has no mode
# when it never crosses. The rule does not test that a climb is linear. (The plots start at
# $t = 2$.)
#
# ```{glue:figure} dg_fig2
# :name: "fig-q-trajectories"
#
# Ours for the paper's Figure 2: the distinguishability ratio $q(t)$ of the best $S_3$ run of
# each model (affine models first), with the unsquared ratio $\sqrt R/\sqrt M$ in the same
# panel, $T_{\text{cross}}$
# (red dot) and $m_p$ (black triangle); each panel is titled with its failure mode by the
# rule of {numref}`tab-diagnostics-modes` ($q$ at $t = 2$ against $1/2$).
# ```
#
# **Verdict.** A mode reproduces where the runs of the models the paper assigns it to show
# it. Of the {glue:text}`dg_paper_modes_compared:d` best runs of the four models the paper
# names a mode for (both depths), {glue:text}`dg_paper_modes_agree:d` have the paper's
# mode: {glue:text}`dg_paper_modes_climb_agree:d` of the
# {glue:text}`dg_paper_modes_climb_n:d` it calls climbing, and
# {glue:text}`dg_paper_modes_saturation_agree:d` of the
# {glue:text}`dg_paper_modes_saturation_n:d` it calls saturated. The others, ours / the
# paper's: {glue:text}`dg_paper_modes_differ`. The runs of the models the paper calls
# saturated (Mamba and Mamba-3) have $q(2)$ at most
# {glue:text}`dg_modes_paper_saturation_q_start_max:.3g`, against $\tau = 1/2$, and cross
# at $t$ = {glue:text}`dg_modes_paper_saturation_T_lo:d` to
# {glue:text}`dg_modes_paper_saturation_T_hi:d`. Of all
# {glue:text}`dg_modes_affine_n:d` affine models, {glue:text}`dg_modes_saturation:d` start
# saturated ({glue:text}`dg_modes_saturation_models`). Of the
# {glue:text}`dg_modes_climb:d` that climb, {glue:text}`dg_modes_climb_in_training:d` cross
# within the training length 60, and {glue:text}`dg_modes_climb_in_training_fail:d` of
# those fail there.
#
# The paper states that $T_{\text{cross}}$ always comes before $m_p$. Of the best runs
# plotted here, {glue:text}`dg_before:d` of {glue:text}`dg_before_n:d` affine models that
# pass at 60 and whose $q$ crosses have $T_{\text{cross}} \le m_p$. Over every such affine
# run (Figure 4's selection below), {glue:text}`dg_before_runs:d` of
# {glue:text}`dg_before_runs_n:d` do. $m_p$ takes only the evaluated lengths, and a run
# already fails at the first evaluated length above its $m_p$: $T_{\text{cross}}$ comes no
# later than that length in {glue:text}`dg_before_fail:d` of
# {glue:text}`dg_before_fail_n:d` runs (those that fail within the evaluated lengths). For a
# run whose $T_{\text{cross}}$ falls between $m_p$ and that length, the data cannot say
# which comes first: its accuracy also drops below 90% somewhere in that interval.
#
# ## Figure 3: the spread flows into $U$
#
# For Negative Mamba and the token-gated RNN the paper finds that $q_U$ overtakes
# $q_{U^\perp}$ near $m_p$: failure is spread moving into the symbolic directions, while the
# tanh and state-gated RNN keep $q_U$ small. The paper reads the ratios near $m_p$, so the
# figure shows, for each of these four models, its best run over both depths (the largest
# $m_p$; a tie goes by the Table 2 chapter's rule), and only a run that passes the
# training length 60. The top row of {numref}`fig-q-split` follows the
# definition, through $W_{\text{out}}$, where the two parts of one residual can cancel: a
# spread the readout ignores can have large parts in $U$ and in $U^\perp$ whose images are
# opposite, so both ratios can exceed $q$ itself. The bottom row removes the readout
# ($W = I$, $M$ the unweighted squared gap): there the two parts are orthogonal, add up to
# the unweighted $q$, and say where the spread lives in the hidden space.
#
# ```{glue:figure} dg_fig3
# :name: "fig-q-split"
#
# Ours for the paper's Figure 3: the spread inside $U$ ($q_U$) and outside it
# ($q_{U^\perp}$) over time, read through the readout (top) and without it (bottom), for
# the best run over both depths of each model the paper shows, among the runs that pass
# the training length 60 (the largest $m_p$; ties by the Table 2 chapter's rule); the dotted line is
# $m_p$.
# ```
#
# :::{table} Figure 3's ratios through the readout (top row of the figure above), read at $t = m_p$ (at most the rollout): whether $q_U$ is below $q_{U^\perp}$ there, whether both exceed $q$, at how many of the stored times $t \ge 2$ (every $t$ up to {glue:text}`dg_times_dense:d`, then at most {glue:text}`dg_times_step:.0%` apart) $q_U$ is below $q_{U^\perp}$, and the stored time from which $q_U$ stays at or above $q_{U^\perp}$ to the end of the rollout (—: it is below at the end).
# :name: tab-f3-at-mp
# ```{glue:md} dg_f3_table
# :format: myst
# ```
# :::
#
# ````{table} The same comparison without the readout ($W = I$, bottom row of the figure above), at the same $t$ and stored times.
# :name: tab-f3-identity
# ```{glue:md} dg_f3_identity
# :format: myst
# ```
# ````
#
# The paper's contrast is one of classes: $q_U$ suppressed, below $q_{U^\perp}$, in the
# state-dependent models, and above it in the affine ones. Through the readout
# ({numref}`tab-f3-at-mp`), $q_U$ is below $q_{U^\perp}$ at $m_p$ in
# {glue:text}`dg_f3_sd_below:d` of {glue:text}`dg_f3_sd_n:d` state-dependent models and in
# {glue:text}`dg_f3_af_below:d` of {glue:text}`dg_f3_af_n:d` affine ones. Without the readout
# ({numref}`tab-f3-identity`), it is below in {glue:text}`dg_f3_sd_below_i:d` of
# {glue:text}`dg_f3_sd_n:d` state-dependent models and in {glue:text}`dg_f3_af_below_i:d` of
# {glue:text}`dg_f3_af_n:d` affine ones. Where both
# ratios through the readout are far above $q$ (the column "both above q"), the readout
# cancels most of the spread, and comparing them says little about decoding; the second table
# says where the spread lies in the hidden space.
#
# **Verdict.** By the reading that the contrast holds when $q_U$ is below $q_{U^\perp}$ at
# $m_p$ in every state-dependent model and in no affine one, it
# {glue:text}`dg_f3_contrast` through the readout, the paper's definition, and
# {glue:text}`dg_f3_contrast_i` without it (the counts above). The paper places the
# overtaking near $m_p$. In {glue:text}`dg_f3_af_early:d` of {glue:text}`dg_f3_af_n:d`
# affine models through the readout, and in {glue:text}`dg_f3_af_early_i:d` without it,
# $q_U$ stays at or above $q_{U^\perp}$ from a stored time at most half their $m_p$ (the
# last column of each table; their $m_p$ is at least {glue:text}`dg_f3_af_m_p:d`, and the
# latest such time is $t$ = {glue:text}`dg_f3_af_over:d` through the readout and
# {glue:text}`dg_f3_af_over_i:d` without it): in those models the spread is inside $U$
# early, not only near $m_p$.
#
# ## Figure 4: $T_{\text{cross}}$ predicts $m_p$
#
# Over many affine $S_3$ runs the paper finds $\log T_{\text{cross}}$ and $\log m_p$ strongly
# correlated and $q$ at $m_p$ near 1: the practical decoding threshold is about 1, not the
# $1/2$ of the bound. It does not say how its runs were chosen. Ours: every affine $S_3$ run
# of the Table 2 chapter's grid and of Figure 4's learning rates and seeds, at both
# depths, that passes the training length ($m_p \ge 60$) and whose $q$ crosses $1/2$ within the rollout. Where
# the grid alone gives far fewer such runs than the paper's, every cell (model, depth) in
# which some run passes 60 grows by the same extra seeds: the rule reads only whether a
# cell's runs pass the training length, never their $T_{\text{cross}}$, $q$ or $r$.
#
# $R$ is the paper's *mean* over words of the squared spread. A state that grows along the
# words spreads its classes with a heavy tail, and a few words far out can make $R$ many
# times what most words show, while decoding fails one word at a time. So we read Figure 4
# a second way, with the *median* over words.
# The median is our variant, not the paper's definition, and it was chosen on these runs,
# whose mean-spread $q$ at $m_p$ lies well above the paper's: its agreement with the paper's
# figure is a finding on the data that suggested it, not an independent test. Each estimate
# selects its own runs and reads its own $T_{\text{cross}}$.
#
# The Table 2 chapter's pilot decided to compute these runs again at $d_{\text{model}}$ =
# {glue:text}`dg_d_model_wide:d` ({numref}`tab-t2-before-after`); until all of them and
# their diagnostics are stored, the figure reads the runs at $d_{\text{model}}$ =
# {glue:text}`dg_d_model:d`.

# %%
fig4_records = paper1.figure4_selection(
    ec.diagnostic_records(P, which="figure4"))
# Figure 4 with the mean and the median spread
both = ec.figure4_both_ways_table(P)

# %% tags=["remove-input"]
pooled = {d["estimate"]: d for d in both.data if d["n_layers"] is None}
mean, med = pooled["mean"], pooled["median"]
F4 = paper_values.FIGURE4
f4_stats = ec.figure4_stats(fig4_records)
f4_failure = ec.crossing_before_failure(fig4_records)
tail = ec.spread_tail_summary(ec.spread_tail_table(P))
tail_by = {d["measure"]: d for d in tail.data}
for name, value in {
        "dg_fig4": plots_error.fig_tcross_vs_mp(fig4_records, f4_stats),
        "dg_jitter": 100 * plots_error.MP_JITTER,
        "dg_before_runs": f4_stats["T_cross_before_m_p"], "dg_before_runs_n": f4_stats["n"],
        "dg_before_fail": f4_failure["before"], "dg_before_fail_n": f4_failure["n"],
        "dg_both_table": both.grid(),
        **{f"dg_f4_arch_{k}": v for k, v in ec.figure4_architectures(both.data).items()},
        "dg_r_mean": ec.with_interval(mean["r"], mean["r_lo"], mean["r_hi"]),
        "dg_r_median": ec.with_interval(med["r"], med["r_lo"], med["r_hi"]),
        "dg_q_mean": ec.with_interval(mean["q_median"], mean["q_lo"], mean["q_hi"], 2),
        "dg_q_median": ec.with_interval(med["q_median"], med["q_lo"], med["q_hi"], 2),
        "dg_r_stored": ec.with_interval(mean.get("r_at_stored_times")),
        "dg_p_check": ec.p_text(pearson_p_value(F4['r'], F4['n'] - 2)),
        "dg_ratio_table": ec.spread_ratio_table(P).grid(),
        "dg_tail_table": tail.grid(),
        **{f"dg_tail_{d['measure']}": float("nan") if d["median"] is None else d["median"]
           for d in tail.data},
        "dg_tail_over_lognormal_above": tail_by["over_lognormal"]["above"],
        "dg_tail_n": tail_by["over_lognormal"]["n"],
        "dg_f4_table": ec.figure4_table(P).grid(),
        "dg_within_table": ec.figure4_within_table(P).grid(),
        "dg_crossing_table": ec.crossing_table(P).grid(),
        "dg_tail_words": paper1.SPREAD_TAIL_WORDS, "dg_init_radius": model_cells.RADIUS,
        "dg_paper_runs": paper_values.TABLE2_RUNS_PER_CELL}.items():
    glue(name, value, display=False)
plt.close("all")

# %% [markdown]
# ```{glue:figure} dg_fig4
# :name: "fig-figure4"
#
# Ours for the paper's Figure 4, with $q$ as the paper defines it (the mean spread over
# words): $T_{\text{cross}}$ against $m_p$ for
# every selected affine $S_3$ run (left; the dotted line is $T_{\text{cross}} = m_p$).
# $m_p$ takes only the evaluated lengths, so each point is moved sideways by a random
# factor of at most {glue:text}`dg_jitter:.0f`% (the same at every build) to keep runs at
# one $m_p$ apart. Right: the distribution of $q$ at $m_p$ on a log axis, our median and its
# interval beside the paper's median and interval.
# ```
#
# :::{table} Figure 4 both ways, beside the paper: the correlation of $\log T_{\text{cross}}$ with $\log m_p$ and the median $q$ at $m_p$, each with its bootstrap 95% interval ({glue:text}`dg_boot_n:,d` resamples of the runs, seed {glue:text}`dg_boot_seed:d`), with the spread $R$ as the mean over words (the paper's definition) and as the median, over both depths and per depth. The median's $T_{\text{cross}}$ is read at the record's stored times (every $t$ up to {glue:text}`dg_times_dense:d`, then at most {glue:text}`dg_times_step:.0%` apart), the mean's at every $t$. $m_p$ averages the accuracy over the positions of a word, while $q$ is read at the single time $t = m_p$.
# :name: tab-f4-both-ways
# ```{glue:md} dg_both_table
# :format: myst
# ```
# :::
#
# With the paper's definition $r$ = {glue:text}`dg_r_mean` and $q$ at $m_p$ =
# {glue:text}`dg_q_mean`; with the median spread $r$ = {glue:text}`dg_r_median` and $q$ at
# $m_p$ = {glue:text}`dg_q_median` (the paper's numbers are the last row of
# {numref}`tab-f4-both-ways`). The selected runs per architecture, with the paper's
# estimate: {glue:text}`dg_f4_arch_mean`; with the median spread:
# {glue:text}`dg_f4_arch_median` (a row per depth holds that depth's architectures). Read
# at the stored times as the median's is, the paper's
# estimate gives $r$ = {glue:text}`dg_r_stored`, so the coarser reading is not what moves
# $r$. The pooled figure mixes one- and two-layer runs; the rows per depth show each on its
# own. Which estimate the paper used it does not say: the median spread is the one whose
# numbers match the published figure here, and the mean is the one the paper defines. The
# $p$-value the paper prints does not match its own $r$ and $n$ (a two-sided test with them
# gives {glue:text}`dg_p_check`), so we compare $r$ and its interval, not $p$.
#
# ### What makes the spread heavy-tailed?
#
# The gap between the two estimates is the token-gated RNN's ({numref}`tab-spread-ratio`).
# Its recurrence is $h_t = A(x_t) h_{t-1} + W_x e(x_t) + b$ with the token's transition
# $A(a) = \mathrm{diag}(\sigma(W_g e(a) + b_g)) W_h$, and nothing in the definition bounds
# $A(a)$ (the SSMs' transitions lie inside the unit disc by construction). A word's state is
# then a product of random matrices applied to its inputs. A yardstick for the spread such
# products make is a log-normal one, whose mean exceeds its median by $\exp(s^2/2)$ for a
# standard deviation $s$ of its log. {numref}`tab-spread-tail` measures the distance of a
# word's state to its centroid against that yardstick, on every one-layer token-gated RNN
# tracker of the selection whose weights are stored (loaded, not trained).
#
# ````{table} The ratio of the paper's mean spread to the median spread, $q / q_{\text{median}}$ at $t = m_p$, over Figure 4's selected runs (those with the paper's estimate), per architecture.
# :name: tab-spread-ratio
# ```{glue:md} dg_ratio_table
# :format: myst
# ```
# ````
#
# :::{table} The one-layer token-gated RNN trackers of Figure 4 at $t = m_p$, on {glue:text}`dg_tail_words:,d` test words each: median, lowest and highest over the trackers of the ratio $q / q_{\text{median}}$ measured for Figure 4; of the mean over the median of the per-word squared readout distance to the class centroid; of the share of its sum the farthest 1% of words carry; of $\exp(s^2/2)$, the ratio a log-normal spread with the measured standard deviation $s$ of the log would have, and of the mean over the median divided by it; of the largest spectral radius of a token's transition $A(a)$; and of the growth rate per token of the products of the transitions along the words (the top Lyapunov exponent: above 0, the state grows exponentially). The last column counts the trackers above 1 and above 0.
# :name: tab-spread-tail
# ```{glue:md} dg_tail_table
# :format: myst
# ```
# :::
#
# Where the products of the transitions grow along a typical word (a growth rate above 0)
# and some token's transition has a spectral radius above 1, training put it there: at
# initialisation $W_h$ is {glue:text}`dg_init_radius:g` times an orthogonal matrix, so
# every $A(a)$ starts with a spectral radius below {glue:text}`dg_init_radius:g`. The
# states then grow exponentially with the word's length, and a few words far out
# carry much of the mean spread. Over the trackers, the median ratio of mean to median
# spread is {glue:text}`dg_tail_mean_over_median:.3g`, against
# {glue:text}`dg_tail_lognormal_ratio:.3g` for a log-normal spread of the measured width;
# in {glue:text}`dg_tail_over_lognormal_above:d` of {glue:text}`dg_tail_n:d` trackers the
# ratio exceeds the log-normal one (the row "over the log-normal ratio"), a tail heavier
# than log-normal.
# The growth is allowed by our definition of the model, an affine recurrence whose learned
# transitions may expand: a definition that bounded the spectral norm of every $A(a)$ by 1
# would not let the states grow exponentially. Whether the paper's token-gated RNN can
# expand, and whether a bounded one would lose the heavy tail, is not measured here.
#
# `````{admonition} How the runs were chosen, and how far a second word sample moves them
# :class: dropdown
#
# ````{table} Figure 4 with the paper's $q$, ours beside theirs: how many affine $S_3$ runs are analysed and how many qualify (per architecture, and the cells grown by extra seeds), $r$ and its $p$-value, the median $q$ at $m_p$ under both estimates with bootstrap intervals, how many runs cross no later than $m_p$ and no later than the first evaluated length at which they fail, and the factor $\max(a/b, b/a)$ by which $T_{\text{cross}}$ and $q$ at $m_p$ move when a selected run's diagnostics are repeated on other test words: the spread of a single run's estimate, to set beside the spread over runs.
# :name: tab-figure4
# ```{glue:md} dg_f4_table
# :format: myst
# ```
# ````
#
# Our affine models are small, and many fail $S_3$ already at length 60 and so cannot enter
# the figure; the paper's runs come from a grid of {glue:text}`dg_paper_runs:d` runs per
# cell at its larger width (the Table 2 chapter) and a selection rule it does not state.
# `````
#
# `````{admonition} Within an architecture, or only between architectures?
# :class: dropdown
#
# A correlation over runs of several architectures can come from the architectures alone:
# if each architecture's runs sit in a cluster at its own $T_{\text{cross}}$ and $m_p$, the
# clusters line up and $r$ is large even when, among one architecture's runs,
# $T_{\text{cross}}$ says nothing about $m_p$. The paper reports only the pooled $r$; the
# stronger reading of its claim, that $T_{\text{cross}}$ predicts *where a given model
# fails*, needs the correlation within architectures. Where the within-architecture $r$ is
# about as large as the pooled one, $T_{\text{cross}}$ tracks $m_p$ from run to run and not
# only from architecture to architecture.
#
# ````{table} Figure 4's correlation (the paper's $q$) per architecture (where both $T_{\text{cross}}$ and $m_p$ vary; $m_p$ takes only the evaluated lengths), within architectures (each run's $\log T_{\text{cross}}$ and $\log m_p$ minus its architecture's means: the partial correlation given the architecture, $p$ from a $t$ test with $n - g - 1$ degrees of freedom for $g$ architectures), between the architectures' geometric means (one point each; it needs at least three architectures), and over all selected runs. —: undefined.
# :name: tab-f4-within
# ```{glue:md} dg_within_table
# :format: myst
# ```
# ````
# `````
#
# `````{admonition} Does crossing mean failing?
# :class: dropdown
#
# Figure 4 reads $T_{\text{cross}}$ for affine models only. $R$ is a mean over words while
# decoding succeeds or fails one word at a time (and through the readout, not by the nearest
# centroid), so $q \ge \tau$ is a warning, not a proof of failure. The state-dependent
# trackers test the warning from the other side: among their $S_3$ runs that still track at
# the longest evaluated length, some have a $T_{\text{cross}}$ all the same
# ({numref}`tab-crossing`). A crossing without failure is what a ratio of means allows: a
# few far-out words, or a direction the readout ignores, raise $R$ without one word being
# decoded wrongly. Figure 4's claim is about affine models, which nothing stops from
# spreading inside $U$ (Theorem 1).
#
# ````{table} The state-dependent $S_3$ runs diagnosed, those that track at the longest evaluated length, how many of those have $q = R/M$ crossing $1/2$ within the rollout all the same (and their crossing times), and in how many the median-spread variant, read at its stored times, crosses too.
# :name: tab-crossing
# ```{glue:md} dg_crossing_table
# :format: myst
# ```
# ````
# `````
#
# ````{admonition} The code behind this page
# :class: dropdown
#
# The measurements: `sst_core.analysis.error_control.diagnose` (every diagnostic of one
# trained tracker), with `distinguishability` ($R$, $M$, $q$, $\sqrt R/\sqrt M$),
# `median_ratio` (the median-spread variant), `q_split` ($q_U$, $q_{U^\perp}$),
# `perturbation_recovery` (Figure 1) and `T_cross` from `sst_core.analysis.diagnostics`;
# the heavy tail: `sst_core.analysis.spread_tail`. The tables and the choices of runs:
# `sst_core.reports.error_control` (`best_per_model`, `start_mode` for Figure 2's modes,
# `figure3_records` for Figure 3's runs, `recovery_numbers`, `figure4_both_ways`); the
# figures: `sst_core.figures.error`.
# ````

# %% tags=["remove-input"]
from sst_core.book.provenance import how_made

how_made("p1_diagnostics", P)
