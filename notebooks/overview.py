# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Results at a glance
#
# Each headline result of the two papers, the published value beside ours, and a verdict
# ({numref}`tab-verdict`); the link leads to the chapter that shows how ours was made.
# {numref}`fig-table2-cells` shows the largest of them, Table 2 of Paper 1, cell by cell.

# %% tags=["parameters", "remove-cell"]
# Papermill parameters: `profile`, the one the book is built with (best: per chapter).
profile = "best"

# %% tags=["remove-input"]
import matplotlib.pyplot as plt
from myst_nb import glue

from sst_core.book import params
from sst_core.experiments import paper1
from sst_core.figures.overview import fig_table2_cells
from sst_core.reports import overview as ov
from sst_core.reports import paper1 as paper1_reports

params.from_notebook("overview", globals())  # fails here on a typo or a wrong type
shown = {chapter: params.settings(chapter, profile) for chapter in ov.CHAPTER_RESULTS}
P2 = shown["p1_table2"]
table2 = paper1_reports.table2(P2)  # two rows of the verdict and the figure read it
verdicts = ov.overview(shown, tables={"table2": table2})
glue("verdict_table", verdicts.grid(), display=False)
fig = fig_table2_cells(table2.data, paper1.TABLE2_GROUPS, P2.track_depths)
glue("table2_fig", fig, display=False)
plt.close(fig)
glue("close_lengths", paper1_reports.CLOSE_LENGTHS, display=False)
glue("close_width", ov.CLOSE_WIDTH, display=False)
glue("identity_tol", ov.IDENTITY_TOL, display=False)
glue("d_model", P2.track_d_model, display=False)
glue("d_model_wide", P2.track_d_model_wide, display=False)

# %% [markdown]
# :::{table} The papers' headline results beside ours: the paper's value, ours, and the verdict of the rule below (agrees, close, differs); the last column links to the chapter that shows how ours was made.
# :name: tab-verdict
# ```{glue:md} verdict_table
# :format: myst
# ```
# :::
#
# **The rule**, one for every row and applied by code
# (`sst_core.reports.overview`). A result *agrees* when ours matches the paper's within
# the precision of the comparison: the same $m_p$ in every cell of a table, the paper's
# value inside our 95% interval, an identity to {glue:text}`identity_tol:.0e`, a claim
# that holds wherever it can be judged. It is *close* when it misses by at most one step
# of that precision: no cell more than {glue:text}`close_lengths` evaluated length away,
# the paper's value inside our interval widened to {glue:text}`close_width:g` times its
# width, a claim that ties somewhere and fails nowhere. Otherwise it *differs*. Table 2's
# pattern is judged cell by cell: a cell holds where it reaches 1000 exactly when the
# paper's does. For Paper 2's first two LRA claims, the paper's column also applies the
# claim rule of the LRA chapter to the paper's own rows. Where a claim has a control, as
# delayed recall has (cells whose memory is present at the start should learn), the
# verdict judges the claim alone, and our column gives the control's result beside it
# in the words of the chapter's table (holds, does not hold).
#
# Paper 1's Table 2 and Figure 4 here are those at $d_{\text{model}}$ =
# {glue:text}`d_model:d`. The pilots of the Table 2 chapter made a wider model, at
# {glue:text}`d_model_wide:d`, the protocol for the Mamba, AUSSM and attention
# families; until every run of that protocol is stored, these rows are provisional.
#
# Our runs are smaller than the papers' (each chapter states its scale), and several
# details of the papers' experiments are not public; the chapters say which of our
# choices are proposals and give the reasons for a difference only where a measurement
# supports them.
#
# ```{glue:figure} table2_fig
# :name: "fig-table2-cells"
#
# Table 2 of Paper 1, ours against the paper's, cell by cell: the longest length each
# model tracks ($m_p$), trained up to length 60. Where the two differ, the paper's value is
# beneath ours. Grey cells are models the paper does not report.
# ```
#
# {doc}`The Table 2 chapter <p1_table2>` examines every cell that differs, with the retraining noise of the same
# cells measured.

# %% tags=["remove-input"]
from sst_core.book.provenance import how_made_of_chapters
from sst_core.book.runner import find_root, toc_titles

how_made_of_chapters("overview", profile, shown, toc_titles(find_root()))
