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
# current records on this very task are *not* diagonal: DeltaNet
# {cite}`schlag2021fastweight,yang2024deltanet` with transitions
# $I - \beta_t k_t k_t^\top$ and $\beta_t \in [0, 2]$ {cite}`grazzi2025unlocking`, and
# DeltaProduct, which multiplies $n_h$ such factors per token {cite}`siems2025deltaproduct`,
# are reported to track $S_3$ and larger groups far beyond their training length. The paper
# does not say how that squares with Theorem 1, and lists as open which shapes of the
# transition restricted to $U$ keep an affine model robust. This chapter answers it for
# these models, trains them under the book's protocol, and looks at them through the
# paper's diagnostics, which it then applies to torch's own GRU and LSTM through a public
# entry point that needs no registry entry.
#
# **The models** (`sst_core.models.delta`; no short convolution and no output norm, unlike
# the flash-linear-attention implementations, which leaves the recurrence unchanged): per
# head a state $S_t \in \mathbb R^{d_k \times d_v}$,
#
# $$
# S_t = (I - \beta_t k_t k_t^\top)\, S_{t-1} + \beta_t k_t v_t^\top, \qquad
# o_t = S_t^\top q_t, \qquad \lVert k_t \rVert = 1,
# $$
#
# with $\beta_t = \sigma(\cdot) \in [0, 1]$ (`deltanet`) or $2\sigma(\cdot) \in [0, 2]$
# (`deltanet_negative`), and DeltaProduct taking $n_h$ such steps per token (`deltaproduct`,
# $n_h = 2$; `deltaproduct_3`). The transition depends on the token only, so all four are
# affine in the paper's sense, and the tests check it numerically.

# %% tags=["parameters", "remove-cell"]
# Papermill parameters: `profile`, and None = take the profile's value.
profile = "quick"
track_max_steps = None
track_batch = None
track_eval_samples = None
diag_samples = None
diag_rollout = None
track_stack = None

# %%
from sst_core.book import params

P = params.from_notebook("beyond_delta", globals())  # fails here on a typo or a wrong type
KNOBS = ("track_d_model", "track_d_states", "track_rnn_widths", "track_lrs", "track_seeds",
         "track_max_steps", "diag_samples", "diag_rollout")
SCALE = P.scale(*KNOBS)  # for captions and table notes
print(P.banner(*KNOBS))

# %%
import matplotlib.pyplot as plt
import sympy as sp
from IPython.display import Markdown, display
from myst_nb import glue

from sst_core.experiments import beyond
from sst_core.experiments import runs as experiments_runs
from sst_core.experiments.paper1 import figure4_selection
from sst_core.figures import beyond as plots_beyond
from sst_core.figures import common as plots
from sst_core.reports import beyond as rb
from sst_core.reports import paper1 as rp1
from sst_core.reports.beyond import crossing
from sst_core.reports.paper1 import fmt
from sst_core.theory import householder

# %% [markdown]
# ## What Theorem 1 allows: neutral, not contracting
#
# Theorem 1 forbids an affine tracker to *correct* an error along $U$; it does not forbid
# one that never *makes* an error there. A transition that acts on $U$ as an orthogonal map
# (a permutation of the centroids, for instance) is neutral: an error along $U$ keeps its
# size forever, and if the map is exact there is no drift to accumulate. Corollary 1 then
# puts the crossing time at infinity. Which Householder products can be orthogonal? Three
# facts, derived below in SymPy and checked against their numeric twins in
# `tests/theory/test_householder.py`:

# %%
hh = householder.derive_householder(3)
tr = householder.derive_transposition(3, 0, 1)
display(Markdown(
    f"1. $H = I - \\beta k k^\\top$ with $\\lVert k\\rVert = 1$ has the eigenvalue "
    f"${sp.latex(hh['eigen_on_k'])}$ on $k$ and 1 on its complement, and "
    f"$H^\\top H - I = ({sp.latex(sp.factor(hh['gram_coefficient']))})\\, k k^\\top$: "
    f"orthogonal only at $\\beta \\in \\{{{', '.join(map(str, hh['orthogonal_at']))}\\}}$ "
    f"(identity, reflection); derivation holds: {hh['holds']}.\n"
    f"2. With $k = (e_0 - e_1)/\\sqrt 2$ and $\\beta = 2$, $H$ is the permutation matrix of the "
    f"transposition $(0\\ 1)$: {tr['holds']}.\n"
    "3. An orthogonal $g$ is the product of exactly $\\operatorname{rank}(g - I)$ reflections "
    "and no fewer (Cartan–Dieudonné), so an element of order above 2 needs at least two."))
glue("dh_holds", "all hold" if hh["holds"] and tr["holds"] else "NOT all hold", display=False)

# %% [markdown]
# Applied to the generator tokens of the book's groups (their orders and the factors a token
# needs in the orthogonal representation `tracking_representation` builds: the sign for
# $C_2$, a rotation for $C_6$, the standard representation for $S_3$, the rotations of the
# icosahedron for $A_5$), this says in advance which of the four models *can* track which
# group exactly with one layer:

# %%
pred = rb.delta_predictions()
display(pred)

# %% [markdown]
# `deltanet` ($\beta \le 1$) has no orthogonal factor but the identity, so every tracker it
# can express drifts or contracts the symbolic state itself; a single reflection per token
# (`deltanet_negative`) is enough for parity but for no group with an element of order
# above 2; two factors are enough for $C_6$, $S_3$ and $A_5$. "Can" is not "will": the table says
# which exact solutions exist, training decides whether they are found.

# %% [markdown]
# ## Table 2's protocol, with them in it
#
# The same grid and protocol as Table 2 (narrowed as in the other "Beyond" chapters), on
# $C_2$, $C_6$, $S_3$ and $A_5$, for the four Householder models, torch's `nn.GRU` and
# `nn.LSTM` (as registry models, `torch_gru`, `torch_lstm`) and, from Table 2 and the
# harder-groups chapter, the models they are compared with. Then the diagnostics of every
# $S_3$ run: $T_{\text{cross}}$, the return maps of state-preserving words on $U$ (Theorem 1's
# check: their largest and smallest singular values, both 1 for a map orthogonal on $U$),
# recovery from a perturbation inside $U$, and Corollary 1's drift.

# %%
cfgs = beyond.delta_grid(P)
records = experiments_runs.run_all(cfgs, desc="delta", stack=P.track_stack)
diag = experiments_runs.run_analyses(beyond.delta_diagnostics(P), "diagnostics, S3",
                                     P.track_stack)
for r in records:
    if r["status"] != "ok":
        print(f"failed: {r['config']['model']} on {r['config']['group']}: {r['reason']}")
table = rb.delta(P)
display(table)

# %%
best_runs = [r for r in rp1.best_runs(records)
             if r["config"]["model"] in beyond.DELTA_MODELS + beyond.TORCH_RNNS]
fig = plots.fig_accuracy_vs_length(best_runs, beyond.DELTA_GROUPS)
plt.show()

# %%
verdicts = rb.delta_verdicts(P)
known = [v for v in verdicts if v["reaches_longest"] is not None]
yes = [v for v in known if v["predicted"] == "yes"]
no = [v for v in known if v["predicted"] == "no"]
longest = verdicts[0]["longest"] if verdicts else None
glue("dv_longest", longest if longest is not None else "—", display=False)
glue("dv_yes", f"{sum(v['reaches_longest'] for v in yes)} of {len(yes)}", display=False)
glue("dv_no", f"{sum(v['reaches_longest'] for v in no)} of {len(no)}", display=False)
glue("dv_missing", len(verdicts) - len(known), display=False)

# %% [markdown]
# Against the theory's table: of the one-layer cells where an exact tracker exists ("yes"),
# {glue:text}`dv_yes` reach the longest evaluated length ({glue:text}`dv_longest`); of those
# where none exists ("no"), {glue:text}`dv_no` reach it all the same
# ({glue:text}`dv_missing` cells have no run at this scale). A "no" cell that reaches it is
# no contradiction: every tracker of that shape drifts, so it fails at *some* length, but the
# drift may be small enough to stay below $\tau$ up to {glue:text}`dv_longest`.

# %% [markdown]
# ## Through the error-control lens
#
# On $S_3$, the best run of each model: its diagnostics, then $q(t)$ and the recovery of an
# error placed inside $U$ (solid: the Householder models; dashed: everything else).

# %%
lens = rb.delta_lens(P)
display(lens)

# %%
best = rb.best_by_model(diag)
order = [m for m in beyond.DELTA_MODELS + beyond.TORCH_RNNS + beyond.DELTA_COMPARED if m in best]
fig = plots_beyond.fig_q_recovery([best[m] for m in order], SCALE, beyond.DELTA_MODELS,
                                  "Householder models (solid) beside the others (dashed), S3")
plt.show()

# %% [markdown]
# Where they fall in Figure 4 ($T_{\text{cross}}$ against $m_p$), over the qualifying runs of
# the affine Figure 4 sweep where its records are stored:

# %%
background = figure4_selection(rb.figure4_records(P, "S3"))
highlight = [r for r in diag if r["status"] == "ok"
             and r["config"]["run"]["model"] in beyond.DELTA_MODELS]
fig = plots_beyond.fig_figure4_placement(background, highlight, SCALE)
plt.show()

rows = {d["model"]: d for d in table.data}
lines = []
for m in beyond.DELTA_MODELS:
    d = rows.get(m, {})
    if d.get("diagnostics") != "ok":
        lines.append(f"{m}: no S3 diagnostics at this scale")
        continue
    text = (f"{m}: m_p {fmt(d['m_p_diag'])}, T_cross {crossing(d['T_cross'])}, return map on U with "
            f"singular values {d['gain_min']:.3g} to {d['gain']:.3g}"
            if d.get("gain") is not None and d.get("gain_min") is not None else
            f"{m}: m_p {fmt(d['m_p_diag'])}, T_cross {crossing(d['T_cross'])}, U is {{0}}")
    if d.get("T_pred") is not None:
        text += f", Corollary 1 predicts T_cross {d['T_pred']:.4g} from its drift {d['drift']:.2g}"
    lines.append(text)
glue("dl_lens", "; ".join(lines), display=False)

glue("dl_factor", f"{rb.PREDICTION_FACTOR:g}", display=False)
theory = rb.delta_theory_check(P, models=beyond.DELTA_MODELS + beyond.DELTA_COMPARED)
verdict = (rb.theory_check_text([d for d in theory if d["model"] in beyond.DELTA_MODELS],
                                "Householder models") + "; and "
           + rb.theory_check_text([d for d in theory if d["model"] not in beyond.DELTA_MODELS],
                                  "diagonal affine models beside them"))
glue("dl_verdict", Markdown(verdict), display=False)

# %% [markdown]
# At this scale: {glue:text}`dl_lens`.
#
# Do Theorem 1 and Corollary 1 predict their $m_p$? By a rule fixed before looking (a
# crossing time predicts $m_p$ when it lies within a factor {glue:text}`dl_factor` of it; a
# run that fails at the training length needs a crossing within that factor of the
# training length, one that passes the longest evaluated length no crossing before that
# length divided by the factor;
# `sst_core.reports.beyond.crossing_predicts`), $m_p$ is predicted {glue:md}`dl_verdict`.
#
# How to read it. If the best Householder models sit at the top right of Figure 4 with
# $T_{\text{cross}}$ beyond the rollout, singular values of the return map both near 1 and a
# drift near zero, then they are the neutral trackers Theorem 1 allows, and Corollary 1 with
# their (small) measured drift predicts their $m_p$ as it does the diagonal models'. If their
# return maps have singular values well below 1 on $U$, they would contradict the theorem's
# premise (their return maps would not fix the centroids), which the deviation
# $\lVert Q^\top J Q - I\rVert$ column measures directly.

# %% [markdown]
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
# (`sst_core.analysis.error_control.error_control_measures`). First, torch's GRU and LSTM:
# one $S_3$ run of each, trained above under the book's protocol as the registry models
# `torch_gru` and `torch_lstm`, handed to the entry point as the plain `nn.GRU` / `nn.LSTM`
# inside them (`sst_core.models.torch_rnn.torch_module`) with their readout, beside the
# registry's diagnostics of the same run on the same words:

# %%
plain = experiments_runs.run_analyses(beyond.torch_module_grid(P), "plain torch modules",
                                      P.track_stack)
check = rb.torch_module_check(P)
display(check)
gains = [d for d in check.data if d["status"] == "ok" and d["gain_plain"] is not None]
compared = [d for d in check.data if d["status"] == "ok"]
same = all(d["T_cross"] == d["T_cross_plain"] and (d["q_rel_diff"] or 0) < 1e-6 for d in compared)
glue("dg_agree", ("agree (the same crossing times, q(t) within 1e-6)" if same else
                  "differ (see the table)") if compared else "have no run at this scale",
     display=False)
glue("dg_torch", "; ".join(f"{d['model']}: largest singular value of the return map on U "
                           f"{d['gain_plain']:.3g}, T_cross {crossing(d['T_cross_plain'])}"
                           for d in gains) or "no run at this scale", display=False)

# %% [markdown]
# The two paths {glue:text}`dg_agree`. What they say at this
# scale: {glue:text}`dg_torch`. For a state-dependent recurrence Theorem 1 does not apply;
# a largest singular value below 1 is the contraction along $U$ the theory allows such
# models, and the mechanism by which the paper's state-dependent models extrapolate.
#
# Second, the entry point diagnoses the exact tracker of the theory above
# (`householder.permutation_tracker`: each token applied as its reflections in the
# representation of `tracking_representation`), exactly and with a small fixed rotation of
# each token's transition, the kind of imperfection training leaves:

# %%
exact_cfgs = beyond.exact_tracker_grid(P)
exact_records = experiments_runs.run_all(exact_cfgs, desc="exact trackers")
exact = rb.exact_trackers(P)
display(exact)
ok = [d for d in exact.data if d["status"] == "ok"]
exact0 = [d for d in ok if d["drift"] == 0]
drifted = [d for d in ok if d["drift"] > 0 and d["T_cross"] is not None and d["T_pred"]]
glue("de_exact", ", ".join(f"{d['group']}: T_cross {crossing(d['T_cross'])}, singular values "
                           f"{d['gain_min']:.4f} to {d['gain']:.4f}" for d in exact0) or "none",
     display=False)
glue("de_drift", ", ".join(f"{d['group']} rotated by {d['drift']}: T_cross {d['T_cross']} "
                           f"measured, {d['T_pred']:.4g} predicted" for d in drifted)
     or "no perturbed tracker crosses within the rollout", display=False)

# %% [markdown]
# The exact trackers ({glue:text}`de_exact`) never cross: their return maps are the identity
# on $U$ (Theorem 1 with equality) and nothing drifts. The perturbed ones are just as affine
# and just as orthogonal (both singular values of the return map stay 1: neutral, not
# contracting), yet their return maps no longer fix the centroids, the error grows step by
# step, and $q$ crosses $\tau$: {glue:text}`de_drift`, with Corollary 1's prediction from the
# drift measured on $t \le 120$ beside it. The theorem's dichotomy is not between diagonal
# and non-diagonal transitions but between no drift and some drift.

# %% [markdown]
# ## What the theory would need
#
# Theorem 1 covers these models as it stands: they are affine, and wherever their return
# maps fix the centroids they are the identity on $U$. What it does not give is a *rate*:
# Corollary 1 turns a drift into a crossing time, and the drift is zero for an exact
# orthogonal representation. So the theory needs one more ingredient to predict $m_p$ for
# non-diagonal models: which transitions can realise the group exactly (a question about
# representations: the table above, by the reflection count) and how close training gets to
# them (the measured drift). Diagonal transitions commute, so exactly they realise only
# abelian groups: real ones only products of $C_2$ (their orthogonal entries are $\pm 1$),
# complex ones any abelian group ($C_6$ by sixth roots of unity), never $S_3$ or $A_5$.
# Products of reflections realise every finite group in some dimension (each is a group of
# permutations, and a transposition is a reflection), which is why the Householder models
# can extrapolate where the diagonal ones cannot.

# %% [markdown]
# ## The larger sweep so far
#
# The CPU-scale `standard` sweep of this chapter runs over many sessions, and `best` shows it
# only once every run is stored. While it is under way, this section shows the two tables
# above from its stored runs alone (the sentence at its end says whether it is):

# %%
so_far = params.under_way("beyond_delta", P.name)
if so_far:
    display(rb.delta(so_far.profile))
    display(rb.delta_lens(so_far.profile))
glue("dd_so_far", Markdown(params.under_way_text(so_far, P.name)), display=False)

# %% [markdown]
# {glue:md}`dd_so_far`
