# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A label-free warning signal
#
# The distinguishability ratio $q(t) = R(t)/M(t)$ of the error-control paper
# {cite}`chung2026errorcontrol` sorts hidden states by the *true* group state $g_t$ of each
# word: it needs an oracle. A model in use has none. This chapter asks whether $q(t)$ can be
# estimated from the hidden states alone, and whether it then works as an *online warning*:
# looking only at words no longer than the training length, can one predict how far a model
# will extrapolate ($m_p$)?
#
# **Two label-free labellings** (`sst_core.analysis.diagnostics.label_free_states`):
#
# - **decoded**: the model's own prediction $\hat g_t = \arg\max (W_{\text{out}} h_t + b)$;
# - **clusters**: $k$-means with $|G|$ clusters of the read-out states $W_{\text{out}} h_t$,
#   at each time on its own (`kmeans_per_time`, $k$-means++ seeding, best of three).
#
# Either labelling replaces $g_t$ in $R$ and $M$. Both have a built-in bias, because the
# labels are made *from* the states: $k$-means minimises exactly the within-class spread
# $R$, so at its optimum its $R$ is never larger than the oracle's; the decoded labels cut the
# read-out space into regions and lean the same way. When the model starts to confuse two
# states, the oracle sees a growing spread; the decoded labels see two tight, wrongly named
# classes.
# The tests check the other end: on states that cluster perfectly by class, both labellings
# give exactly the oracle's $q(t)$.
#
# **The warning** (`sst_core.analysis.label_free.online_warning`) sees positions $10 \le t \le 60$ only
# and extrapolates $q$ to $\tau = 1/2$ two ways: Corollary 1's constant drift,
# $\sqrt{R(t)} = a + b t$ with $M$ fixed, and a power law $q(t) = C t^\alpha$. Inside the
# training length the decoded labels are nearly all right (the models pass there), so this is
# where a label-free estimate should be most trustworthy.

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

P = params.from_notebook("beyond_label_free", globals())  # fails here on a typo or a wrong type
KNOBS = ("diag_samples", "diag_rollout", "track_d_model", "track_d_states", "fig4_lrs",
          "track_max_steps")
SCALE = P.scale(*KNOBS)  # for captions and table notes
print(P.banner(*KNOBS))

# %%
import matplotlib.pyplot as plt
from IPython.display import Markdown, display
from myst_nb import glue

from sst_core.analysis.label_free import warning_errors
from sst_core.experiments import beyond, runs
from sst_core.figures import beyond as plots_beyond
from sst_core.reports import beyond as rb
from sst_core.reports import compute_text

# %% [markdown]
# ## Every stored tracker, three labellings
#
# Every trained tracker of the book: Table 2 ($C_2$, $C_6$, $S_3$), Table 3's nonlinearity
# sweep, the harder groups of the previous chapter, and the affine Figure 4 sweeps on $S_3$
# and $A_5$. The last row of the table pools every group.

# %%
records = runs.run_analyses(beyond.label_free_grid(P), "label-free q(t)",
                                   P.track_stack)
ok = [r for r in records if r["status"] == "ok"]
glue("lf_n", len(ok), display=False)
glue("lf_compute", compute_text(records), display=False)
table = rb.label_free(P)
display(table)

# %% [markdown]
# {glue:text}`lf_n:d` trackers, {glue:text}`lf_compute` of analysis.
#
# A few of them, oracle (solid) against the two label-free curves (dashed):

# %%
picked = rb.label_free_examples(ok)  # one run per (group, model), affine first
fig = plots_beyond.fig_label_free_curves(picked, SCALE)
plt.show()

# %%
fig = plots_beyond.fig_label_free_scatter([r["metrics"] for r in ok], SCALE)
plt.show()
agree = {(d["group"], d["method"]): d for d in table.data}
for (g, method), d in agree.items():
    glue(f"lf_agree_{g}_{method}", f"{d['agree']} of {d['n']}", display=False)

# %% [markdown]
# Over every group, the decoded labels give the oracle's $T_{\text{cross}}$ (within 25%, or
# both never crossing) for {glue:text}`lf_agree_all_decoded` trackers, the clusters for
# {glue:text}`lf_agree_all_clusters`; on $A_5$ alone, {glue:text}`lf_agree_A5_decoded` and
# {glue:text}`lf_agree_A5_clusters`. The bias described above shows where they part: a
# label-free $q$ stays low after the model has started to err, because the errors are
# absorbed into the labels. A label-free $q$ therefore tends to *understate* the oracle's
# once errors begin: usable for a warning computed early, not for locating a failure after it.

# %% [markdown]
# ## The online warning
#
# For every affine tracker that passes the training length, each labelling's $q$ on
# $t \le 60$ gives a predicted crossing time $T_{\text{pred}}$, which we turn into a
# predicted $m_p$ two ways: raw (the largest evaluated length not above $T_{\text{pred}}$),
# and calibrated (a log-log line from $T_{\text{pred}}$ to $m_p$ fitted on the *other*
# models, leave-one-out, then snapped the same way).

# %%
warn = rb.label_free_warning(P)
display(warn)
ms = [r["metrics"] for r in ok if r["metrics"]["is_affine"]]
errs = [warning_errors(ms, method, "drift", P.track_eval_lengths)
        for method in ("oracle", "decoded", "clusters")]
fig = plots_beyond.fig_warning(errs, SCALE)
plt.show()
best = min((d for d in warn.data if d["loo"]), key=lambda d: d["loo"]["median_log2_error"],
           default=None)
glue("lf_best", "none (no tracker passes the training length at this scale)" if best is None
     else f"{best['method']} labels with the {best['fit']} fit: median error a factor "
          f"{2 ** best['loo']['median_log2_error']:.2f}, {100 * best['loo']['within_2x']:.0f}% "
          f"within 2x over {best['loo']['n']} trackers", display=False)

# %% [markdown]
# Best calibrated warning at this scale: {glue:text}`lf_best`.
#
# **What this does and does not show.** The warning uses nothing but hidden states on
# short words, so it could run alongside a deployed model. Its raw form assumes the paper's
# claim that $m_p$ sits near $T_{\text{cross}}$ and extrapolates $q$ from a window where it is
# small and noisy; the calibrated form borrows the $T$-to-$m_p$ relation from other trackers of
# the same sweep, which a practitioner would have to build first. Both are scored only on
# trackers that pass the training length (a tracker that fails at 60 needs no warning) and
# against $m_p$ measured on a grid of lengths (60, 100, ..., 1000), so an error below one
# grid step cannot be seen and $m_p = 1000$ is censored (the model may go further).

# %% [markdown]
# ## The larger sweep so far
#
# The CPU-scale `standard` sweep of this chapter runs over many sessions, and `best` shows it
# only once every run is stored. While it is under way, this section shows the oracle against
# label-free table and the online warning from its stored runs alone (the sentence at its end
# says whether it is):

# %%
so_far = params.under_way("beyond_label_free", P.name)
if so_far:
    display(rb.label_free(so_far.profile))
    display(rb.label_free_warning(so_far.profile))
glue("dlf_so_far", Markdown(params.under_way_text(so_far, P.name)), display=False)

# %% [markdown]
# {glue:md}`dlf_so_far`
