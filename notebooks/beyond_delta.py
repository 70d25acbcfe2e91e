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
# larger groups far beyond their training length. The paper leaves open which shapes of the
# transition restricted to $U$ keep an affine model robust. This chapter asks: **how do these
# models square with Theorem 1, and do the paper's diagnostics predict how far they
# extrapolate?**
#
# **What we find.** Under the book's protocol DeltaProduct reaches $m_p$ =
# {glue:text}`dp_S3` on $S_3$ and {glue:text}`dp_A5` on $A_5$, where no diagonal affine model
# passes the training length; DeltaNet with $\beta \le 1$ fails on every group, as the
# reflection count predicts ({numref}`tab-dl-predictions`, {numref}`tab-dl-table2`). They do
# not contradict Theorem 1: DeltaProduct's return map on $U$ is nearly orthogonal (singular
# values {glue:text}`dp_smin` to {glue:text}`dp_smax`), neutral rather than contracting, and
# its error grows by a small drift. The measured $T_{\text{cross}}$ predicts $m_p$ for
# {glue:text}`measured_hh` Householder models ({numref}`tab-dl-theory`). The theorem's
# dichotomy is not between diagonal and non-diagonal transitions but between no drift and some
# drift ({numref}`tab-dl-exact`).
#
# At this book's scale: the grid of the other "Beyond" chapters, {glue:text}`per_cell:d` runs
# per cell at $d_{\text{model}}$ = {glue:text}`d_model:d`, at most {glue:text}`max_steps:d`
# training steps, diagnostics on {glue:text}`samples:d` held-out words.
#
# ## The models
#
# `sst_core.models.delta` (no short convolution and no output norm, unlike the
# flash-linear-attention implementations, which leaves the recurrence unchanged): per head a
# state $S_t \in \mathbb R^{d_k \times d_v}$,
#
# $$
# S_t = (I - \beta_t k_t k_t^\top)\, S_{t-1} + \beta_t k_t v_t^\top, \qquad
# o_t = S_t^\top q_t, \qquad \lVert k_t \rVert = 1,
# $$
#
# with $\beta_t = \sigma(\cdot) \in [0, 1]$ (DeltaNet) or $2\sigma(\cdot) \in [0, 2]$
# (DeltaNet, $\beta \in [0, 2]$), and DeltaProduct taking $n_h$ such steps per token
# ($n_h = 2$, and a variant with 3). The transition depends on the token only, so all four
# are affine in the paper's sense, and the tests check it numerically.

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
from IPython.display import Markdown
from myst_nb import glue

from sst_core.book import params
from sst_core.experiments import beyond
from sst_core.experiments.runs import run_all, run_analyses
from sst_core.experiments.paper1 import figure4_selection
from sst_core.figures import beyond as plots_beyond
from sst_core.figures import common as plots
from sst_core.reports import beyond as rb
from sst_core.reports import paper1 as rp1
from sst_core.theory import householder

P = params.from_notebook("beyond_delta", globals())  # fails here on a typo or a wrong type

# %% [markdown]
# ## What Theorem 1 allows: neutral, not contracting
#
# Theorem 1 forbids an affine tracker to *correct* an error along $U$; it does not forbid one
# that never *makes* an error there. A transition that acts on $U$ as an orthogonal map (a
# permutation of the centroids, for instance) is neutral: an error along $U$ keeps its size
# forever, and if the map is exact there is no drift to accumulate. Corollary 1 then puts the
# crossing time at infinity. Which Householder products can be orthogonal? Three facts:
#
# 1. $H = I - \beta k k^\top$ with $\lVert k\rVert = 1$ has the eigenvalue $1 - \beta$ on $k$
#    and 1 on its complement, and $H^\top H - I = \beta(\beta - 2)\, k k^\top$: it is
#    orthogonal only at $\beta \in \{0, 2\}$ (the identity and a reflection).
# 2. With $k = (e_0 - e_1)/\sqrt 2$ and $\beta = 2$, $H$ is the permutation matrix of the
#    transposition $(0\ 1)$.
# 3. An orthogonal $g$ is the product of exactly $\operatorname{rank}(g - I)$ reflections
#    and no fewer (Cartan–Dieudonné), so an element of order above 2 needs at least two.
#
# SymPy derives the first two for a symbolic $k$ (`tests/theory/test_householder.py` checks
# them against their numeric twins):

# %%
hh = householder.derive_householder(3)  # a symbolic k in R^3
eigen_on_k, gram = hh["eigen_on_k"], sp.factor(hh["gram_coefficient"])
eigen_on_k, gram, hh["orthogonal_at"], hh["holds"]

# %%
householder.derive_transposition(3, 0, 1)["holds"]

# %% [markdown]
# Applied to the generator tokens of the book's groups (their orders, and the factors a token
# needs in the orthogonal representation `tracking_representation` builds: the sign for
# $C_2$, a rotation for $C_6$, the standard representation for $S_3$, the rotations of the
# icosahedron for $A_5$), this says in advance which of the four models *can* track which
# group exactly with one layer ({numref}`tab-dl-predictions`). DeltaNet ($\beta \le 1$) has
# no orthogonal factor but the identity, so every tracker it can express drifts or contracts
# the symbolic state itself; one reflection per token is enough for parity but for no group
# with an element of order above 2; two factors are enough for $C_6$, $S_3$ and $A_5$. "Can"
# is not "will": the table says which exact solutions exist, training decides whether they
# are found.

# %% tags=["remove-input"]
glue("tab_predictions", rb.delta_predictions(), display=False)

# %% [markdown]
# ```{glue:figure} tab_predictions
# :name: "tab-dl-predictions"
#
# Which groups one layer of each Householder model can track exactly, by the reflection
# count (theory; no runs).
# ```
#
# ## Table 2's protocol, with them in it
#
# The same grid and protocol as Table 2 (narrowed as in the other "Beyond" chapters), on
# $C_2$, $C_6$, $S_3$ and $A_5$, for the four Householder models, torch's `nn.GRU` and
# `nn.LSTM` (as registry models) and the models of Table 2 they are compared with; then the
# diagnostics of every $S_3$ run:

# %% tags=["remove-output"]
records = run_all(beyond.delta_grid(P), desc="delta", stack=P.track_stack)
diag = run_analyses(beyond.delta_diagnostics(P), "diagnostics, S3", P.track_stack)

# %% tags=["remove-input"]
table = rb.delta(P)
rows = {d["model"]: d for d in table.data}
depth = beyond.beyond_profile(P).track_depths[0]
verdicts = [v for v in rb.delta_verdicts(P) if v["reaches_longest"] is not None]
theory = rb.delta_theory_table(P)
householders = [d for d in theory.data if d["model"] in beyond.DELTA_MODELS]
dp = rows["deltaproduct"]
numbers = {"d_model": P.track_d_model, "max_steps": P.track_max_steps,
           "samples": P.diag_samples,
           "per_cell": len(records) // max(1, len(table.data) * len(dp["cells"])),
           "dp_S3": rp1.shown_text(**dp["cells"][f"S3 L{depth}"]),
           "dp_A5": rp1.shown_text(**dp["cells"][f"A5 L{depth}"]),
           "dp_smin": "—" if dp.get("gain_min") is None else f"{dp['gain_min']:.3g}",
           "dp_smax": "—" if dp.get("gain") is None else f"{dp['gain']:.3g}",
           "measured_hh": f"{sum(d['measured'] for d in householders)} of {len(householders)}",
           "corollary_hh": f"{sum(bool(d['corollary']) for d in householders)} of "
                           f"{sum(d['corollary'] is not None for d in householders)}"}
for kind in ("yes", "no"):
    cells = [v for v in verdicts if v["predicted"] == kind]
    numbers[f"reach_{kind}"] = f"{sum(v['reaches_longest'] for v in cells)} of {len(cells)}"
glue("tab_table2", table, display=False)
lens = rb.delta_lens(P)  # nine columns: as two tables, the model's name in both
glue("tab_lens", Markdown("\n\n".join(t.to_markdown() for t in lens.split(keys=1, at=6))),
     display=False)
glue("tab_theory", theory, display=False)

best = rb.best_by_model(diag)
order = [m for m in beyond.DELTA_MODELS + beyond.TORCH_RNNS + beyond.DELTA_COMPARED if m in best]
figures = {
    "fig_accuracy": plots.fig_accuracy_vs_length(
        [r for r in rp1.best_runs(records)
         if r["config"]["model"] in beyond.DELTA_MODELS + beyond.TORCH_RNNS],
        beyond.DELTA_GROUPS),
    "fig_recovery": plots_beyond.fig_q_recovery([best[m] for m in order], beyond.DELTA_MODELS),
    "fig_figure4": plots_beyond.fig_figure4_placement(
        figure4_selection(rb.figure4_records(P, "S3")),
        [r for r in diag if r["status"] == "ok"
         and r["config"]["run"]["model"] in beyond.DELTA_MODELS]),
}
for name, fig in figures.items():
    glue(name, fig, display=False)
    plt.close(fig)

# %% [markdown]
# ```{glue:figure} tab_table2
# :name: "tab-dl-table2"
#
# $m_p$ of the Householder models, torch's GRU and LSTM and Table 2's models on one grid:
# best over the grid; "fail": no run passes 60.
# ```
#
# ```{glue:figure} fig_accuracy
# :name: "fig-dl-accuracy"
#
# Token accuracy against evaluation length, the best run of each Householder model and of
# torch's GRU and LSTM (dotted: the training length 60; grey line: 90%).
# ```
#
# Against the theory's table: of the one-layer cells where an exact tracker exists ("yes" in
# {numref}`tab-dl-predictions`), {glue:text}`reach_yes` reach the longest evaluated length;
# of those where none exists ("no"), {glue:text}`reach_no`. A "no" cell that reached it
# would be no contradiction: every tracker of that shape drifts, so it fails at *some*
# length, but the drift may be small enough to stay below $\tau$ up to the longest length.
#
# ## Through the error-control lens
#
# On $S_3$, the best run of each model: its diagnostics ({numref}`tab-dl-lens`), then $q(t)$
# and the recovery of an error placed inside $U$ ({numref}`fig-dl-recovery`), and where the
# Householder models fall on Figure 4's axes ({numref}`fig-dl-figure4`).
#
# ```{glue:figure} tab_lens
# :name: "tab-dl-lens"
#
# $S_3$ diagnostics of the best run of each model: $T_{\text{cross}}$, the largest and
# smallest singular values of the return map on $U$ (both 1 for a map orthogonal on $U$)
# and its distance from the identity, recovery along $U$, and Corollary 1's drift and
# crossing time.
# ```
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
# Figure 4 of the paper with the Householder models in it: the qualifying runs of the affine
# Figure 4 sweep in grey, the Householder models' $S_3$ runs in colour.
# ```
#
# Do Theorem 1 and Corollary 1 predict their $m_p$? By a rule fixed before looking
# (`sst_core.reports.beyond.crossing_predicts`, stated under {numref}`tab-dl-theory`), the
# measured $T_{\text{cross}}$ predicts $m_p$ for {glue:text}`measured_hh` Householder models,
# and Corollary 1's crossing time from the early drift for {glue:text}`corollary_hh` of those
# whose drift could be fitted; the diagonal affine models beside them are in the same table.
#
# ```{glue:figure} tab_theory
# :name: "tab-dl-theory"
#
# Do Theorem 1 and Corollary 1 predict $m_p$? The measured crossing time and Corollary 1's,
# for the Householder models and the diagonal affine models beside them.
# ```
#
# How to read it. The Householder models that extrapolate sit at the top right of
# {numref}`fig-dl-figure4`, with both singular values of the return map near 1 and a small
# drift: they are the neutral trackers Theorem 1 allows. Had their return maps had singular
# values well below 1 on $U$, they would have contradicted the theorem's premise (their
# return maps would not fix the centroids), which the column $\lVert Q^\top J Q - I\rVert$
# of {numref}`tab-dl-lens` measures directly.
#
# ## The diagnostics on anyone's model
#
# `sst_core.analysis.any_model.diagnose_any` takes any one-step map, a torch module or a
# plain callable `step(h, x)` with an initial state, plus a group, and returns $q(t)$,
# $T_{\text{cross}}$, Theorem 1's check and the failure mode, with no registry entry:
#
# ```python
# from sst_core.analysis.any_model import diagnose_any
# out = diagnose_any(step, "S3", h0=h0, n_tokens=6)            # a callable step(h, x)
# out = diagnose_any(my_gru, "S3", readout=my_linear)          # a torch.nn.GRU / LSTM as is
# out["T_cross"], out["failure_mode"], out["theorem1"]["gain"]
# ```
#
# `diagnose(cfg)`, which made every diagnostics record of the book, runs the same core
# (`sst_core.analysis.error_control.error_control_measures`). First, torch's GRU and LSTM: one
# $S_3$ run of each, trained above under the book's protocol, handed to the entry point as the
# plain `nn.GRU` / `nn.LSTM` inside them (`sst_core.models.torch_rnn.torch_module`) with their
# readout, beside the registry's diagnostics of the same run on the same words
# ({numref}`tab-dl-torch`). Second, the exact tracker of the theory above
# (`householder.permutation_tracker`: each token applied as its reflections), exactly and with
# a small fixed rotation of each token's transition, the kind of imperfection training leaves
# ({numref}`tab-dl-exact`):

# %% tags=["remove-output"]
plain = run_analyses(beyond.torch_module_grid(P), "plain torch modules",
                     P.track_stack)
exact_records = run_all(beyond.exact_tracker_grid(P), desc="exact trackers")

# %% tags=["remove-input"]
check, exact = rb.torch_module_check(P), rb.exact_trackers(P)
compared = [d for d in check.data if d["status"] == "ok"]
drifted = {d["group"]: d for d in exact.data if d["status"] == "ok" and d["drift"] > 0
           and d["T_cross"] is not None}
numbers.update({
    "torch_same": f"{sum(d['T_cross'] == d['T_cross_plain'] for d in compared)} of {len(compared)}",
    "torch_qdiff": "—" if not compared else f"{max(d['q_rel_diff'] or 0 for d in compared):.1g}",
    "s3_T": drifted["S3"]["T_cross"] if "S3" in drifted else "none",
    "s3_angle": drifted["S3"]["drift"] if "S3" in drifted else "none",
    "s3_pred": f"{drifted['S3']['T_pred']:.4g}" if drifted.get("S3", {}).get("T_pred") else "none"})
for name, value in numbers.items():
    glue(name, value, display=False)
glue("tab_torch", check, display=False)
glue("tab_exact", exact, display=False)

# %% [markdown]
# ```{glue:figure} tab_torch
# :name: "tab-dl-torch"
#
# torch's GRU and LSTM diagnosed twice: as registry models and, through the public entry
# point, as the plain torch modules inside them, on the same held-out words.
# ```
#
# The two paths give the same crossing time for {glue:text}`torch_same` runs, and $q(t)$
# differing by at most {glue:text}`torch_qdiff` of its largest value. For a state-dependent
# recurrence Theorem 1 does not apply; a largest singular value of the return map below 1 on
# $U$ is the contraction the theory allows such models, and the mechanism by which the
# paper's state-dependent models extrapolate.
#
# ```{glue:figure} tab_exact
# :name: "tab-dl-exact"
#
# Exact and perturbed Householder trackers through the public diagnostics: each token
# applied as its reflections in an exact orthogonal representation, then rotated by the
# given angle at every step.
# ```
#
# The exact trackers never cross: their return maps are the identity on $U$ (Theorem 1 with
# equality) and nothing drifts. The perturbed ones are just as affine and just as orthogonal
# (both singular values of the return map stay 1: neutral, not contracting), yet their return
# maps no longer fix the centroids, the error grows step by step, and $q$ crosses $\tau$: on
# $S_3$ rotated by {glue:text}`s3_angle` per step, at $t$ = {glue:text}`s3_T` measured
# against {glue:text}`s3_pred` predicted by Corollary 1 from the drift on $t \le 120$. The theorem's dichotomy is not
# between diagonal and non-diagonal transitions but between no drift and some drift.
#
# ## What the theory would need
#
# Theorem 1 covers these models as it stands: they are affine, and wherever their return maps
# fix the centroids they are the identity on $U$. What it does not give is a *rate*: Corollary
# 1 turns a drift into a crossing time, and the drift is zero for an exact orthogonal
# representation. So the theory needs one more ingredient to predict $m_p$ for non-diagonal
# models: which transitions can realise the group exactly (a question about representations:
# {numref}`tab-dl-predictions`, by the reflection count) and how close training gets to them
# (the measured drift). Diagonal transitions commute, so exactly they realise only abelian
# groups: real ones only products of $C_2$ (their orthogonal entries are $\pm 1$), complex
# ones any abelian group ($C_6$ by sixth roots of unity), never $S_3$ or $A_5$. Products of
# reflections realise every finite group in some dimension (each is a group of permutations,
# and a transposition is a reflection), which is why the Householder models can extrapolate
# where the diagonal ones cannot.

# %% tags=["remove-input"]
from sst_core.book.provenance import how_made

how_made("beyond_delta", P)
