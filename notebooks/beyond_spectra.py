# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Memory meets error control
#
# The two papers look at the same object from two sides. For an affine tracker
# $h_t = A(x_t) h_{t-1} + b(x_t)$, the error-control paper {cite}`chung2026errorcontrol`
# says that the return map of a state-preserving word is the identity on the symbolic
# subspace $U$ (Theorem 1), so errors in $U$ are never contracted; the memory paper
# {cite}`guan2025memory` says that what a linear recurrence can remember at each delay is
# fixed by its eigenvalues, through the memory function. This chapter asks: **applied to the
# trained trackers of Paper 1, what do Paper 2's tools explain about $m_p$, and what do they
# not?**
#
# **What we find.** The spectra show *how* each architecture stores the state
# ({numref}`fig-sp-spectra`), but they do not predict how far it extrapolates. Over the
# {glue:text}`n_pred:d` affine $S_3$ runs that pass the training length, out of the
# {glue:text}`sp_runs:d` affine runs of the narrower grid of these chapters (Table 2's runs
# and the Figure 4 sweep's; {glue:text}`sp_depths`, {glue:text}`sp_d_states`,
# {glue:text}`sp_rnn_widths`, {glue:text}`sp_schedules`; not Paper 1's whole Figure 4 sweep of
# {glue:text}`f4_runs:d` runs that the harder-groups chapter analyses), the best spectral
# summary ({glue:text}`spectral_name`) has a rank correlation with $m_p$ of
# {glue:text}`rho_spectral`, the paper's $T_{\text{cross}}$ one of {glue:text}`rho_tcross`
# ({numref}`tab-sp-predictors`; $p$ = {glue:text}`p_spectral` and {glue:text}`p_tcross`):
# too few runs for either to be evidence. The last section gives the papers' theory's
# reason to expect the spectra to do no better; these runs do not test it.
#
# At this book's scale: the best $S_3$ run of each model of Table 2 on that narrower grid (so
# a model's $m_p$ can differ from Table 2's, the best over its whole grid), at
# $d_{\text{model}}$ =
# {glue:text}`d_model:d`, trained for at most {glue:text}`max_steps:d` steps.
#
# ## What is measured
#
# For each trained $S_3$ tracker (`sst_core.analysis.spectra.run_spectra`):
#
# - **per-token transitions**: the Jacobians $J_t = \partial h_t / \partial h_{t-1}$ along
#   held-out words, which for an affine one-layer model are the learned $A(x_t)$ (for Mamba
#   they also depend on the conv window of recent tokens, so they are taken along real words);
#   their eigenvalues, and the memory function of the system that repeats one typical $A(x)$;
# - **return maps**: the Jacobian of a state-preserving word (product = identity), the map
#   Theorem 1 is about; its eigenvalues near 1 against $\dim U$, and its memory function
#   (time step: one word);
# - for the state-dependent models the same quantities are those of the linearisation along
#   the words, and are labelled so.
#
# The memory function is computed per *channel* (the independent inputs of a diagonal SSM
# are separate systems; a dense state is one channel), from a reduced spectrum that the
# exact computation can handle: an eigenvalue outside the unit circle (trained gated RNNs
# have some) is moved onto it, those of modulus below {glue:text}`sp_r_fast:g` (gone after
# a few steps) become one mode at 0, eigenvalues closer than {glue:text}`sp_tol:.0e` count
# once (a larger tolerance if the computation does not converge), and a channel with more
# than {glue:text}`sp_max_modes:d` distinct eigenvalues keeps that many, spread over the
# plane with the slowest always among them. Of a model with more than
# {glue:text}`sp_max_units:d` channels, that many are computed, spread over the range of
# their spectral radii.

# %% tags=["parameters", "remove-cell"]
# Papermill parameters: `profile`, and None = take the profile's value.
profile = "quick"
track_max_steps = None
track_batch = None
track_eval_samples = None
diag_rollout = None
track_stack = None

# %% tags=["remove-input"]
import matplotlib.pyplot as plt
from myst_nb import glue

from sst_core.book import params
from sst_core.analysis import spectra as spectra_analysis
from sst_core.experiments import beyond
from sst_core.experiments.runs import run_analyses
from sst_core.figures import spectra as plots_spectra
from sst_core.reports import beyond as rb
from sst_core.reports import labelled_values
from sst_core.spec.names import model_name
from sst_core.tasks.tracking import vocabulary

P = params.from_notebook("beyond_spectra", globals())  # fails here on a typo or a wrong type

# %% tags=["remove-output"]
records = run_analyses(beyond.spectra_grid(P), "spectra", P.track_stack)

# %% tags=["remove-input"]
table = rb.spectra(P)
shown = rb.best_spectra([r for r in records if r["status"] == "ok"])
token_part, return_part = table.split(keys=3, at=8)  # two tables, for the page's width
glue("tab_spectra", token_part.grid(), display=False)
glue("tab_return", return_part.grid(), display=False)
for name, draw in (("fig_spectra", plots_spectra.fig_spectra),
                   ("fig_memory", plots_spectra.fig_memory)):
    fig = draw(shown)
    glue(name, fig, display=False)
    plt.close(fig)

pred = rb.spectra_predictors(P)
rho = {d["predictor"]: d for d in pred.data}
tc = next(d for k, d in rho.items() if k.startswith("T_cross"))
spectral = [d for k, d in rho.items() if not k.startswith("T_cross") and d["rho"] is not None]
top = max(spectral, key=lambda d: abs(d["rho"]), default=None)
tracking = [d for d in table.data if d["is_affine"] and d["m_p"] is not None]
failing = [d for d in table.data if d["is_affine"] and d["m_p"] is None]
numbers = {
    "d_model": P.track_d_model, "max_steps": P.track_max_steps, "n_pred": tc["n"],
    "rho_tcross": "none" if tc["rho"] is None else f"{tc['rho']:.2f}",
    "rho_spectral": "none" if top is None else f"{top['rho']:.2f}",
    "p_tcross": "none" if tc["p"] is None else f"{tc['p']:.2g}",
    "p_spectral": "none" if top is None else f"{top['p']:.2g}",
    "spectral_name": "none" if top is None else top["predictor"],
    "n_tracking": len(tracking), "n_failing": len(failing),
    "rho_horizon": "none" if rho["A(x) memory horizon"]["rho"] is None
    else f"{rho['A(x) memory horizon']['rho']:.2f}",
}
pop = rb.spectra_population(P)  # the selection behind the correlations, by its axes
numbers.update({"sp_runs": pop["runs"],
                "f4_runs": rb.figure4_population(P, "S3")["runs"]})
for axis, labels in rb.AXIS_LABELS.items():
    numbers[f"sp_{axis}"] = labelled_values(*labels, pop[axis])
theorem = rb.theorem1_counts(table.data)
exception = next(iter(theorem.data[0]["without"]), None)  # an affine model that passes
tokens = [int(k) for k in vocabulary("S3")]  # the identity and the generators of S3
numbers.update({
    "tab_theorem": theorem.grid(),
    "n_exceptions": len(theorem.data[0]["without"]),
    "exc_model": "—" if exception is None else model_name(exception["model"]),
    "exc_mp": "—" if exception is None else exception["m_p"],
    "exc_near": "—" if exception is None else f"{exception['near_one']:g}",
    "exc_dim_U": "—" if exception is None else exception["dim_U"],
    "sp_identity": tokens[0], "sp_generators": " and ".join(map(str, tokens[1:])),
    "sp_r_fast": spectra_analysis.R_FAST, "sp_tol": spectra_analysis.MEM_TOLS[0],
    "sp_max_modes": spectra_analysis.MAX_MODES,
    "sp_max_units": spectra_analysis.MAX_UNITS})
for name, value in numbers.items():
    glue(name, value, display=False)
glue("tab_predictors", pred.grid(), display=False)

# %% [markdown]
# ## The spectra of the trained trackers
#
# :::{table} Per-token transitions of the trained $S_3$ trackers, the best run of each model: the Jacobians $A(x) = \partial h_t / \partial h_{t-1}$ along held-out words (the learned transitions of an affine model, the linearisation of a state-dependent one), medians over tokens of the median over positions: spectral radius, share of eigenvalues within 0.01 of the unit circle, and memory horizon, the first delay at which Paper 2's memory function (the maximum over channels) drops below 1/2. $D_{\text{rec}}$: the size of the recurrent state.
# :name: tab-sp-spectra
# ```{glue:md} tab_spectra
# :format: myst
# ```
# :::
#
# :::{table} Return maps of the same trackers: the Jacobian of a state-preserving word of length 6 from the states after a held-out word; its eigenvalues within 0.01 of 1, median over words (so a count can end in .5), against $\dim U$ (Theorem 1 puts at least $\dim U$ of them at 1 for an affine model that tracks), and its memory horizon in words: the first delay at which the largest memory function over channels drops below 1/2, median over words ({numref}`fig-sp-memory` gives that of the median over channels, a shorter one).
# :name: tab-sp-return
# ```{glue:md} tab_return
# :format: myst
# ```
# :::
#
# ```{glue:figure} fig_spectra
# :name: "fig-sp-spectra"
#
# Eigenvalues in the complex plane, the unit circle drawn. Top of each pair: the per-token
# transitions, one colour per token (tokens are numbered as elements of $S_3$:
# {glue:text}`sp_identity` is the identity, {glue:text}`sp_generators` the two generators,
# the only tokens the words use); bottom: the return maps of state-preserving words, the
# cross at 1 where Theorem 1 puts $\dim U$ of them, and in each title the number of
# eigenvalues within 0.01 of 1, a median over words (so it can end in .5).
# ```
#
# ```{glue:figure} fig_memory
# :name: "fig-sp-memory"
#
# Memory functions $M[\tau]$ (Paper 2) of the same trackers: per-token transitions (top;
# median over channels solid, maximum dashed; delay in tokens) and return maps (bottom;
# delay in words; the median over channels of each word, and in the title the horizon of
# that median, median over words, not the maximum over channels of
# {numref}`tab-sp-return`), with $M = 1/2$ dotted (the horizon) and $m_p$ in grey.
# ```
#
# **What they explain.** Theorem 1 speaks about an affine model that *tracks* (its return
# maps fix the centroids): then at least $\dim U$ eigenvalues of a return map sit at 1, the
# neutral directions, visible without any labels. {numref}`tab-sp-theorem` counts them in
# the affine models of {numref}`tab-sp-return`; a model that fails at 60 tracks nothing the
# theorem could be about.
#
# :::{table} The affine trackers of {numref}`tab-sp-return`, those that pass the training length and those that fail at it: how many have at least $\dim U$ eigenvalues of their return maps within 0.01 of 1 (the median over state-preserving words), and which do not.
# :name: tab-sp-theorem
# ```{glue:md} tab_theorem
# :format: myst
# ```
# :::
#
# Passing without those eigenvalues ({glue:text}`n_exceptions:d` of the models that pass):
# {glue:text}`exc_model` reaches $m_p$ = {glue:text}`exc_mp` with
# {glue:text}`exc_near` of them (against $\dim U$ = {glue:text}`exc_dim_U`). This does not
# contradict Theorem 1, which is about return maps that fix the centroids: passing the
# training length does not show that they do, and a finite $m_p$ fits a tracker whose
# return maps do not. How its state stays readable up to that length without neutral
# directions is unexplained; we have not measured it.
# The per-token spectra say *how* each architecture stores the state
# ({numref}`fig-sp-spectra`): a diagonal real model (Mamba) must keep eigenvalues at 1 for as
# long as the state must persist, a negative eigenvalue (Negative Mamba) lets it flip a sign,
# unit-modulus complex ones (AUSSM) rotate.
#
# ## What the spectra say about $m_p$
#
# Over the affine $S_3$ runs that pass the training length, each spectral summary is
# rank-correlated with $m_p$, beside the paper's own predictor $T_{\text{cross}}$ on the same
# runs:
#
# :::{table} Spearman correlation of each spectral summary with $m_p$ over the affine $S_3$ runs (Table 2's and the Figure 4 sweep's, on the narrower grid of these chapters) that pass the training length, beside $T_{\text{cross}}$ on the same runs; a rank correlation because $m_p$ lives on a grid of lengths and is censored at the longest. No $\rho$ (—) with fewer than three runs or a constant column.
# :name: tab-sp-predictors
# ```{glue:md} tab_predictors
# :format: myst
# ```
# :::
#
# The memory horizon of a typical transition bounds how long an *input* stays readable
# ({numref}`fig-sp-memory`); its rank correlation with $m_p$ is {glue:text}`rho_horizon`.
#
# **What they do not explain.** An eigenvalue exactly 1 has a flat memory function
# ($M = 1/T$ at every delay): it stores the *sum* of its inputs, not any one of them, and that
# sum is what tracking keeps. The memory function therefore cannot tell a mode that carries
# the group state from one that accumulates errors: both sit at 1, and Theorem 1 says they are
# the same modes. By Corollary 1, what decides $m_p$ is how fast the error in those neutral
# directions grows (the drift and noise of the inputs along $U$), a property of the
# *inputs* $b(x)$ and of the readout, not of the eigenvalues. The distinguishability ratio
# measures exactly that growth, so one expects $T_{\text{cross}}$ to predict $m_p$ better than
# any summary of the spectrum. On {glue:text}`n_pred:d` runs the measurement cannot confirm
# it: $\rho$ = {glue:text}`rho_tcross` ($p$ = {glue:text}`p_tcross`) against
# {glue:text}`rho_spectral` ($p$ = {glue:text}`p_spectral`).

# %% tags=["remove-input"]
from sst_core.book.provenance import how_made

how_made("beyond_spectra", P)
