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
# fixed by its eigenvalues, through the memory function. This chapter applies Paper 2's tools
# to the trained trackers of Paper 1 and asks what they explain about $m_p$ and what they do not.
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
# - for the state-dependent models the same quantities are those of the linearisation
#   along the words, and are labelled so.
#
# The memory function here is computed per *channel* (the independent inputs of a diagonal
# SSM are separate systems) with the spectrum reduced as `sst_core.analysis.spectra` documents.

# %% tags=["parameters", "remove-cell"]
# Papermill parameters: `profile`, and None = take the profile's value.
profile = "quick"
track_max_steps = None
track_batch = None
track_eval_samples = None
diag_rollout = None
track_stack = None

# %%
from sst_core.book import params

P = params.from_notebook("beyond_spectra", globals())  # fails here on a typo or a wrong type
KNOBS = ("track_d_model", "track_d_states", "track_rnn_widths", "fig4_lrs",
          "track_max_steps", "diag_rollout")
SCALE = P.scale(*KNOBS)  # for captions and table notes
print(P.banner(*KNOBS))

# %%
import matplotlib.pyplot as plt
from IPython.display import Markdown, display
from myst_nb import glue

from sst_core.experiments import beyond
from sst_core.experiments import runs as experiments_runs
from sst_core.figures import spectra as plots_spectra
from sst_core.reports import beyond as rb
from sst_core.reports import compute_text

# %%
records = experiments_runs.run_analyses(beyond.spectra_grid(P), "spectra", P.track_stack)
ok = [r for r in records if r["status"] == "ok"]
glue("sp_n", len(ok), display=False)
glue("sp_compute", compute_text(records), display=False)
table = rb.spectra(P)
for part in table.split(keys=3, at=8):  # ten columns: per-token transitions, then return maps
    display(part)

# %% [markdown]
# {glue:text}`sp_n:d` trackers analysed in {glue:text}`sp_compute`.
#
# The best $S_3$ run of each model, its eigenvalues in the complex plane:

# %%
shown = rb.best_spectra(ok)
fig = plots_spectra.fig_spectra(shown, SCALE)
plt.show()

# %%
fig = plots_spectra.fig_memory(shown, SCALE)
plt.show()

# %% [markdown]
# ## What the spectra explain about $m_p$
#
# Over the affine $S_3$ runs that pass the training length, each spectral summary is
# rank-correlated with $m_p$, beside the paper's own predictor $T_{\text{cross}}$ on the
# same runs.

# %%
pred = rb.spectra_predictors(P)
display(pred)
rho = {d["predictor"]: d for d in pred.data}
for key, d in rho.items():
    short = key.split(" (")[0].replace(" ", "_").replace(":", "").replace("(", "").replace(")", "")
    glue(f"sp_rho_{short}", "—" if d["rho"] is None else f"{d['rho']:.2f} (n = {d['n']})",
         display=False)
tracking = [d for d in table.data if d["is_affine"] and d["m_p"] is not None]
failing = [d for d in table.data if d["is_affine"] and d["m_p"] is None]
glue("sp_theorem", sum(d["return_near_one"] >= d["dim_U"] for d in tracking), display=False)
glue("sp_affine", len(tracking), display=False)
glue("sp_failing", sum(d["return_near_one"] >= d["dim_U"] for d in failing), display=False)
glue("sp_n_failing", len(failing), display=False)
spec = [d for k, d in rho.items() if not k.startswith("T_cross") and d["rho"] is not None]
tc = next((d for k, d in rho.items() if k.startswith("T_cross")), None)
if tc is None or tc["rho"] is None or not spec:
    verdict = ("too few affine runs pass the training length at this scale to compare the "
               "predictors")
else:
    top = max(spec, key=lambda d: abs(d["rho"]))
    better = "T_cross" if abs(tc["rho"]) >= abs(top["rho"]) else top["predictor"]
    verdict = (f"at this scale the stronger rank correlation with m_p is {better}'s "
               f"(T_cross: {tc['rho']:.2f}; best spectral summary, {top['predictor']}: "
               f"{top['rho']:.2f})")
glue("sp_verdict", verdict, display=False)

# %% [markdown]
# **What they explain.** Theorem 1 speaks about an affine model that *tracks* (its return
# maps fix the centroids): then at least $\dim U$ eigenvalues of a return map sit at 1, the
# neutral directions, visible without any labels. Of the {glue:text}`sp_affine:d` affine
# models shown that pass the training length, {glue:text}`sp_theorem:d` have that many within
# 0.01 of 1; of the {glue:text}`sp_n_failing:d` that fail at 60, and so track nothing the
# theorem could be about, {glue:text}`sp_failing:d` do. The per-token
# spectra say *how* each architecture stores the state: a diagonal real model (Mamba) must
# keep eigenvalues at 1 for as long as the state must persist, a negative eigenvalue (Negative
# Mamba) lets it flip a sign, unit-modulus complex ones (AUSSM) rotate. The memory horizon of a
# typical transition bounds how long an *input* stays readable, and its rank correlation with
# $m_p$ is {glue:text}`sp_rho_Ax_memory_horizon`; the spectral radius gives
# {glue:text}`sp_rho_Ax_spectral_radius`.
#
# **What they do not.** An eigenvalue exactly 1 has a flat memory function ($M = 1/T$ at
# every delay): it stores the *sum* of its inputs, not any one of them, and that sum is what
# tracking keeps. The memory function therefore cannot tell a mode that carries the group state
# from one that accumulates errors: both sit at 1, and Theorem 1 says they are the same modes.
# What decides $m_p$ is how fast the error in those neutral directions grows (the drift and
# noise of the inputs along $U$, Corollary 1), which is a property of the *inputs* $b(x)$ and
# of the readout, not of the eigenvalues. The distinguishability ratio measures exactly that
# growth, so one expects $T_{\text{cross}}$ ({glue:text}`sp_rho_T_cross`) to predict $m_p$
# better than any summary of the spectrum; measured: {glue:text}`sp_verdict`.

# %% [markdown]
# ## The larger sweep so far
#
# The CPU-scale `standard` sweep of this chapter runs over many sessions, and `best` shows it
# only once every run is stored. While it is under way, this section shows the spectra table
# and the predictors of m_p from its stored runs alone (the sentence at its end says whether
# it is):

# %%
so_far = params.under_way("beyond_spectra", P.name)
if so_far:
    display(rb.spectra(so_far.profile))
    display(rb.spectra_predictors(so_far.profile))
glue("dsp_so_far", Markdown(params.under_way_text(so_far, P.name)), display=False)

# %% [markdown]
# {glue:md}`dsp_so_far`
