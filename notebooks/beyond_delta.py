# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Affine trackers that should not work but do
#
# Theorem 1 of the error-control paper {cite}`chung2026errorcontrol` proves that an affine
# recurrence whose return maps fix the centroids is the identity on the symbolic subspace
# $U$: it can never contract an error there. The paper's experiments use *diagonal* affine
# models, and they fail beyond their training length. Yet the affine models that hold the
# current records on this task are *not* diagonal: DeltaNet
# {cite}`schlag2021fastweight,yang2024deltanet` with transitions $I - \beta_t k_t k_t^\top$
# and $\beta_t \in [0, 2]$ {cite}`grazzi2025unlocking`, and DeltaProduct, which multiplies
# $n_h$ such factors per token {cite}`siems2025deltaproduct`, are reported to track $S_3$ and
# larger groups far beyond their training length. This chapter asks: **how do these models
# square with Theorem 1, and do the paper's diagnostics predict how far they extrapolate?**
#
# **What we find.** DeltaProduct reaches $m_p$ = {glue:text}`dp_S3` on $S_3$ and
# {glue:text}`dp_A5` on $A_5$, where no diagonal affine model passes the training length;
# DeltaNet with $\beta \le 1$ fails on every group, as the reflection count predicts
# ({numref}`tab-dl-predictions`, {numref}`tab-dl-table2`). They do not contradict Theorem 1:
# DeltaProduct's return map on $U$ is nearly orthogonal (singular values {glue:text}`dp_smin`
# to {glue:text}`dp_smax`), neutral rather than contracting, and its error grows by a small
# drift. The measured $T_{\text{cross}}$ predicts $m_p$ for {glue:text}`measured_hh`
# Householder models that pass the training length ({numref}`tab-dl-theory`); for a model
# that fails at 60 the test has next to no power, since any crossing before twice the
# training length counts as a hit. The theorem's dichotomy is not between diagonal and
# non-diagonal transitions but between no drift and some drift ({numref}`tab-dl-exact`).
# The diagnostics miss for a state-dependent model whose $q$ crosses early, for an affine
# one whose return map is exactly the identity on $U$ ({ref}`sec-dl-misses`), and for a
# perturbed exact tracker ({numref}`tab-dl-exact`); for DeltaProduct with 3 steps the
# measured $T_{\text{cross}}$ predicts $m_p$, but Corollary 1's crossing time, from the
# drift, does not.
#
# At this book's scale: the grid of the other "Beyond" chapters, {glue:text}`per_cell:d` runs
# per cell at $d_{\text{model}}$ = {glue:text}`d_model:d`, at most {glue:text}`max_steps:d`
# training steps, diagnostics on {glue:text}`samples:d` held-out words.
#
# ## The models
#
# `sst_core.models.delta` (without the short convolution and output norm of the
# flash-linear-attention versions; the recurrence is the same): per head a state $S_t$,
#
# $$
# S_t = (I - \beta_t k_t k_t^\top)\, S_{t-1} + \beta_t k_t v_t^\top, \qquad
# o_t = S_t^\top q_t, \qquad \lVert k_t \rVert = 1,
# $$
#
# with $\beta_t = \sigma(\cdot) \in [0, 1]$ (DeltaNet) or $2\sigma(\cdot) \in [0, 2]$
# (DeltaNet, $\beta \in [0, 2]$: transition eigenvalues in $[-1, 1]$), and DeltaProduct
# taking $n_h$ such steps per token ($n_h = 2$, and a variant with 3). The transition depends
# on the token only, so all four are affine in the paper's sense (the tests check it
# numerically). PyTorch's GRU and LSTM are trained and diagnosed beside them, like every
# other model of the book.

# %% tags=["parameters", "remove-cell"]
# Papermill parameters: `profile`, and None = take the profile's value.
profile = "quick"
track_max_steps = None
track_batch = None
track_eval_samples = None
diag_samples = None
diag_rollout = None
track_stack = None

# %% tags=["remove-input"]
import matplotlib.pyplot as plt
import sympy as sp
from myst_nb import glue

from sst_core.book import params
from sst_core.experiments import beyond
from sst_core.experiments.paper1 import figure4_selection
from sst_core.experiments.runs import run_all, run_analyses
from sst_core.figures import beyond as plots_beyond
from sst_core.figures import common as plots
from sst_core.reports import beyond as rb
from sst_core.reports import format_value as fv  # a dash for None
from sst_core.reports import paper1 as rp1
from sst_core.theory import householder

P = params.from_notebook("beyond_delta", globals())  # fails here on a typo or a wrong type

# %% [markdown]
# ## What Theorem 1 allows: neutral, not contracting
#
# Theorem 1 forbids an affine tracker to *correct* an error along $U$; it does not forbid one
# that never *makes* an error there. A transition that acts on $U$ as an orthogonal map (a
# permutation of the centroids, for instance) is neutral: an error along $U$ keeps its size,
# and if the map is exact there is no drift to accumulate; Corollary 1 puts the crossing time
# at infinity. Which Householder products can be orthogonal? Three facts:
#
# 1. $H = I - \beta k k^\top$ with $\lVert k\rVert = 1$ has the eigenvalue $1 - \beta$ on $k$
#    and 1 on its complement, and $H^\top H - I = \beta(\beta - 2)\, k k^\top$: it is
#    orthogonal only at $\beta \in \{0, 2\}$ (the identity and a reflection).
# 2. With $k = (e_0 - e_1)/\sqrt 2$ and $\beta = 2$, $H$ is the permutation matrix of the
#    transposition $(0\ 1)$.
# 3. An orthogonal $g$ is the product of exactly $\operatorname{rank}(g - I)$ reflections
#    and no fewer (Cartan–Dieudonné), so an element of order above 2 needs at least two.
#
# SymPy derives the first two for a symbolic $k$ (and numeric twins check them):

# %%
hh = householder.derive_householder(3)  # a symbolic k in R^3
(hh["eigen_on_k"], sp.factor(hh["gram_coefficient"]),
 hh["orthogonal_at"], hh["holds"])

# %%
householder.derive_transposition(3, 0, 1)["holds"]

# %% [markdown]
# Applied to the generator tokens of the book's groups, in the orthogonal representation
# we use for each (the sign for $C_2$, a rotation for $C_6$, the standard
# representation for $S_3$, the rotations of the icosahedron for $A_5$, whose standard
# representation would need four reflections for a 5-cycle), this says in advance which
# model *can* track which group exactly with one layer ({numref}`tab-dl-predictions`).
# DeltaNet ($\beta \le 1$) has no orthogonal factor but the identity; one reflection per token
# is enough for parity but for no group with an element of order above 2; two are enough for
# $C_6$, $S_3$ and $A_5$. "Can" is not "will": training decides whether a solution is found.

#
# :::{table} Which groups one layer of each Householder model can track exactly, by the reflection count (theory; no runs): *yes* when every token's transition can be orthogonal on $U$ with the states a faithful image of the group, which takes at least $\operatorname{rank}(g - I)$ reflections ($\beta = 2$) per token $g$, attained here by the representations named above.
# :name: tab-dl-predictions
# ```{glue:md} tab_predictions
# :format: myst
# ```
# :::
#
# ## Table 2's protocol, with them in it
#
# The grid and protocol of Table 2 (narrowed as in the other "Beyond" chapters), on $C_2$,
# $C_6$, $S_3$ and $A_5$, for the four Householder models, torch's GRU and LSTM and the
# models of Table 2 they are compared with; then the diagnostics of every $S_3$ run:

# %% tags=["remove-output"]
records = run_all(beyond.delta_grid(P), desc="delta", stack=P.track_stack)
diag = run_analyses(beyond.delta_diagnostics(P), "diagnostics, S3",
                    P.track_stack)

# %% tags=["remove-input"]
best = rb.best_by_model(diag)
order = [m for m in beyond.DELTA_MODELS + beyond.TORCH_RNNS + beyond.DELTA_COMPARED if m in best]
lens_map, lens_drift = rb.delta_lens(P).split(keys=2, at=6)  # two tables, for the page's width
shown = {"tab_predictions": rb.delta_predictions().grid(), "tab_table2": rb.delta(P).grid(),
         "tab_lens": lens_map.grid(), "tab_drift": lens_drift.grid(),
         "tab_theory": rb.delta_theory_table(P).grid(),
         "fig_accuracy": plots.fig_accuracy_vs_length(
             [r for r in rp1.best_runs(records)
              if r["config"]["model"] in beyond.DELTA_MODELS + beyond.TORCH_RNNS],
             beyond.DELTA_GROUPS),
         "fig_recovery": plots_beyond.fig_q_recovery([best[m] for m in order],
                                                     beyond.DELTA_MODELS),
         "fig_figure4": plots_beyond.fig_figure4_placement(
             figure4_selection(rb.figure4_records(P, "S3")),
             [r for r in diag if r["status"] == "ok"
              and r["config"]["run"]["model"] in beyond.DELTA_MODELS])}
for name, value in shown.items():
    glue(name, value, display=False)
plt.close("all")

# %% [markdown]
# :::{table} $m_p$ of the Householder models, torch's GRU and LSTM and Table 2's models with one layer, on one grid and protocol: the best run of each cell (*fail*: no run passes 60; *diverged*: every run of the cell diverged).
# :name: tab-dl-table2
# ```{glue:md} tab_table2
# :format: myst
# ```
# :::
#
# ```{glue:figure} fig_accuracy
# :name: "fig-dl-accuracy"
#
# Token accuracy against evaluation length, the best run of each Householder model and of
# torch's GRU and LSTM (dotted: the training length 60; grey line: 90%).
# ```
#
# Against the theory: of the one-layer cells where an exact tracker exists ("yes" in
# {numref}`tab-dl-predictions`), {glue:text}`reach_yes` reach the longest evaluated length;
# of those where none exists ("no"), {glue:text}`reach_no`. A "no" cell that reached it would
# be no contradiction: every tracker of that shape drifts, so it fails at *some* length, but
# the drift may stay small enough up to the longest length evaluated.
#
# ## Through the error-control lens
#
# :::{table} $S_3$ diagnostics of the best run of each model: $m_p$, $T_{\text{cross}}$ (— : $q$ stays below 1/2), and Theorem 1's return map $J$ of state-preserving words on $U$ (median over words): the largest and smallest singular values of $Q^\top J Q$ (both 1 when $J$ is orthogonal on $U$) and its distance from the identity (0 for an affine map that fixes the centroids).
# :name: tab-dl-lens
# ```{glue:md} tab_lens
# :format: myst
# ```
# :::
#
# :::{table} The same runs' recovery $\lVert e_t \rVert / \lVert e_0 \rVert$ after a perturbation inside $U$, and, for the affine models, Corollary 1: the drift, the slope of $\sqrt{R_U(t)} = a + t \lVert W_{\text{out}} \bar\eta \rVert$ fitted over $10 \le t \le 120$, and the crossing time it predicts (—: a drift at or below 0, nothing grows over the window, and no crossing is predicted; 1: the fitted line starts at or above the threshold, so the crossing is put at the first step).
# :name: tab-dl-drift
# ```{glue:md} tab_drift
# :format: myst
# ```
# :::
#
# ```{glue:figure} fig_recovery
# :name: "fig-dl-recovery"
#
# $q(t)$ (left; at $t = 1$ each group state has a single hidden state, $R = 0$, and $q$ lies
# below the frame) and the recovery of an error placed inside $U$ (right) on $S_3$: the
# Householder models solid, everything else dashed.
# ```
#
# ```{glue:figure} fig_figure4
# :name: "fig-dl-figure4"
#
# The paper's Figure 4 with the Householder models in it: the qualifying runs of the affine
# Figure 4 sweep in grey, the Householder models' $S_3$ runs in colour (those that pass the
# training length and whose $q$ crosses $1/2$ within the rollout; a run whose $q$ never
# crosses has no point).
# ```
#
# Recovery is measured {glue:text}`rec_steps:d` steps after the perturbation
# ({numref}`tab-dl-drift`, {numref}`fig-dl-recovery`). Do Theorem 1 and Corollary 1 predict
# $m_p$? By a rule fixed before looking (the caption of {numref}`tab-dl-theory`), the
# measured $T_{\text{cross}}$ predicts
# $m_p$ for {glue:text}`measured_hh` Householder models that pass the training length, and
# Corollary 1's crossing time for {glue:text}`corollary_hh` of those whose drift could be
# fitted ({numref}`tab-dl-theory`, with the diagonal affine models beside them). The
# Householder models that fail at 60 ({glue:text}`n_untested:d`) are not counted: for them
# the rule asks only for a crossing before twice the training length, and a model that has
# lost the state crosses early (theirs by $t$ = {glue:text}`untested_T`), so there the test
# could hardly fail.
#
# :::{table} Do Theorem 1 and Corollary 1 predict $m_p$? The best $S_3$ run of each affine model. A crossing time predicts $m_p$ when it lies within a factor 2 of it; for a run that fails at the training length, when it is at most twice the training length (in parentheses: a verdict with next to no power, not counted in the text); for a run that passes the longest evaluated length, when it is no earlier than half that length (no crossing counts as past the rollout). —: no crossing, $q$ stays below 1/2 up to the rollout ($T_{\text{cross}}$) or there is no drift to fit (Cor. 1).
# :name: tab-dl-theory
# ```{glue:md} tab_theory
# :format: myst
# ```
# :::
#
# The Householder models that extrapolate sit at the top right of {numref}`fig-dl-figure4`
# (a late crossing and a large $m_p$), with both singular values of the return map near 1
# ({numref}`tab-dl-lens`) and a small drift ({numref}`tab-dl-drift`): the neutral trackers
# Theorem 1 allows. Singular values well below 1 on $U$ would have contradicted its premise
# (the return maps would not fix the centroids; {numref}`tab-dl-lens` measures it directly).
#
# (sec-dl-misses)=
# ### Where the diagnostics miss
#
# Three of the measured models do not fit that reading ({numref}`tab-dl-lens`,
# {numref}`tab-dl-theory`):
#
# - The state-gated RNN's $q$ crosses $1/2$ at $t$ = {glue:text}`sg_T`, yet its $m_p$ is
#   {glue:text}`sg_mp`. It is state-dependent, so neither Theorem 1 nor Corollary 1 covers
#   it, and for it the crossing time does not predict $m_p$ at all; why its readout keeps
#   the right answer while $q$ stays above $1/2$ we have not measured.
# - Linear attention meets Theorem 1's premise exactly: its transition is the identity for
#   every token, so its return map on $U$ is the identity ($\lVert Q^\top J Q - I\rVert$ =
#   {glue:text}`la_dev`, both singular values {glue:text}`la_gain`), yet its $q$ crosses at
#   $t$ = {glue:text}`la_T`, and its $m_p$ reads {glue:text}`la_mp` in
#   {numref}`tab-dl-lens`. With the identity as
#   transition the state is a sum of the tokens' inputs, which does not depend on their
#   order, so it cannot hold the state of a non-abelian group such as $S_3$: fixing the
#   centroids is what Theorem 1 asks of a tracker, not what makes one.
# - Corollary 1 puts the crossing of DeltaProduct with 3 steps at {glue:text}`dp3_pred`,
#   against a measured $T_{\text{cross}}$ of {glue:text}`dp3_T` and an $m_p$ of
#   {glue:text}`dp3_mp`: its error grows faster later than the drift fitted on
#   $t \le 120$ says.
#
# ## The diagnostics on anyone's model
#
# `sst_core.analysis.any_model.diagnose_any` takes any one-step map, a torch module or a
# plain callable `step(h, x)` with an initial state, plus a group, and returns $q(t)$,
# $T_{\text{cross}}$, Theorem 1's check and a failure mode (by its own rule, whether $q$
# crosses 1/2 within the training length; the diagnostics chapter reads the paper's
# modes from $q$ at the start instead), with no registry entry:
#
# ```python
# from sst_core.analysis.any_model import diagnose_any
# out = diagnose_any(step, "S3", h0=h0, n_tokens=6)            # a callable step(h, x)
# out = diagnose_any(my_gru, "S3", readout=my_linear)          # a torch.nn.GRU / LSTM as is
# out["T_cross"], out["failure_mode"], out["theorem1"]["gain"]
# ```
#
# It runs the same core as the diagnostics of every other chapter. We hand it the exact
# tracker of the theory (one product of reflections per token), exactly and
# with a small fixed rotation of each token's transition, the kind of imperfection training
# leaves ({numref}`tab-dl-exact`), and torch's GRU and LSTM trained above as plain modules:

# %% tags=["remove-output"]
plain = run_analyses(beyond.torch_module_grid(P), "plain torch modules",
                     P.track_stack)
exact_records = run_all(beyond.exact_tracker_grid(P), desc="exact trackers")

# %% tags=["remove-input"]
n = rb.delta_summary(P)  # the numbers the prose cites, typed
none = {"group": None, "T_cross": None, "drift": None, "T_pred": None, "rollout": None}
exact_s3 = n["exact_S3"] or none
no_lens = {"m_p_diag": None, "T_cross": None, "gain": None, "deviation_U": None,
           "T_pred": None}
sg, la, dp3 = (n["lens"].get(m, no_lens)
               for m in ("state_gated_rnn", "linear_attention", "deltaproduct_3"))
for name, value in {
        "d_model": P.track_d_model, "max_steps": P.track_max_steps, "samples": P.diag_samples,
        "per_cell": n["per_cell"], "rec_steps": n["recovery_steps"],
        "dp_S3": rp1.shown_text(**n["dp_S3"]), "dp_A5": rp1.shown_text(**n["dp_A5"]),
        "dp_smin": fv(n["dp_gain_min"], ".3g"), "dp_smax": fv(n["dp_gain"], ".3g"),
        "measured_hh": f"{n['measured']} of {n['n_theory']}",
        "corollary_hh": f"{n['corollary']} of {n['n_corollary']}",
        "reach_yes": f"{n['reach_yes']} of {n['n_yes']}",
        "reach_no": f"{n['reach_no']} of {n['n_no']}",
        "torch_same": f"{n['torch_same']} of {n['n_torch']}",
        "torch_qdiff": fv(n["torch_q_diff"], ".1g"), "s3_T": fv(exact_s3["T_cross"]),
        "s3_angle": fv(exact_s3["drift"], "g"), "s3_pred": fv(exact_s3["T_pred"], ".4g"),
        "exact_predicted": n["exact_predicted"],
        "exact_predicted_crossed": n["exact_predicted_crossed"], "n_untested": n["n_untested"],
        "untested_T": fv(n["untested_T_max"]),
        "sg_T": rb.crossing(sg["T_cross"]), "sg_mp": rp1.fmt(sg["m_p_diag"]),
        "la_T": rb.crossing(la["T_cross"]), "la_mp": rp1.fmt(la["m_p_diag"]),
        "la_dev": fv(la["deviation_U"], ".1g"), "la_gain": fv(la["gain"], ".3g"),
        "dp3_pred": fv(dp3["T_pred"], ".4g"), "dp3_T": rb.crossing(dp3["T_cross"]),
        "dp3_mp": rp1.fmt(dp3["m_p_diag"]),
        "tab_torch": rb.torch_module_check(P).grid(), "tab_exact": rb.exact_trackers(P).grid()
        }.items():
    glue(name, value, display=False)

# %% [markdown]
# :::{table} Exact and perturbed Householder trackers through the public diagnostics: each token applied as its reflections ($\beta = 2$) in an exact orthogonal representation, its transition then rotated by the given angle at every step. —: no crossing, $q$ stays below 1/2 up to the rollout ($T_{\text{cross}}$), or no drift for Corollary 1 (fitted over $10 \le t \le 120$); *affine*: whether the step passes the numerical check of affinity.
# :name: tab-dl-exact
# ```{glue:md} tab_exact
# :format: myst
# ```
# :::
#
# The exact trackers never cross: their return maps are the identity on $U$ (Theorem 1 with
# equality) and nothing drifts. The perturbed ones are just as affine and just as orthogonal
# (both singular values stay 1: neutral, not contracting), yet their return maps no longer fix
# the centroids, the error grows step by step, and $q$ crosses $\tau$: on $S_3$ rotated by
# {glue:text}`s3_angle` rad per step, at $t$ = {glue:text}`s3_T` measured against
# {glue:text}`s3_pred` predicted by Corollary 1 from the drift on $t \le 120$
# ({numref}`tab-dl-exact` has every group and angle). Of the
# {glue:text}`exact_predicted:d` perturbed trackers whose predicted crossing lies inside
# the rollout, $q$ crosses in {glue:text}`exact_predicted_crossed:d`; where it does not, the
# growth fitted on $t \le 120$ does not go on at that rate, for a reason we have not
# measured.
#
# ::::{dropdown} The same check on torch's GRU and LSTM
# The public entry point and the book's own diagnostics give the same crossing time for
# {glue:text}`torch_same` runs, and the largest difference between their $q(t)$, relative
# to its largest value, is {glue:text}`torch_qdiff` (0: the two curves are identical;
# {numref}`tab-dl-torch`). For a state-dependent recurrence Theorem 1 does
# not apply: its return map may contract on $U$ (largest singular value below 1).
# {numref}`tab-dl-lens` gives each model's largest singular value beside its $m_p$; whether
# such a contraction is what lets a state-dependent model extrapolate is not measured here.
#
# :::{table} torch's GRU and LSTM diagnosed twice on the same held-out words: one $S_3$ run of each (the grid's first learning rate and seed) as the book's model, and through the public entry point as the plain `nn.GRU` / `nn.LSTM` with the model's weights and $W_{\text{out}}$ as the readout; the last numeric column is the largest difference of $q(t)$ relative to its largest value. —: no crossing, $q$ stays below 1/2 up to the rollout.
# :name: tab-dl-torch
# ```{glue:md} tab_torch
# :format: myst
# ```
# :::
# ::::
#
# ## What the theory would need
#
# Theorem 1 covers these models as it stands: they are affine, and wherever their return maps
# fix the centroids they are the identity on $U$. It gives no *rate*: Corollary 1 turns a
# drift into a crossing time, and the drift is zero for an exact orthogonal representation.
# To predict $m_p$ for non-diagonal models the theory needs which transitions can realise the
# group exactly (the reflection count) and how close training gets to them (the drift). Diagonal
# transitions commute, so exactly they realise only abelian groups: real ones only products of
# $C_2$ (their orthogonal entries are $\pm 1$), complex ones any abelian group ($C_6$ by sixth
# roots of unity), never $S_3$ or $A_5$. Products of reflections realise every finite group in
# some dimension (each is a group of permutations, and a transposition is a reflection), which
# is why the Householder models can extrapolate where the diagonal ones cannot.

# %% tags=["remove-input"]
from sst_core.book.provenance import how_made

how_made("beyond_delta", P)
