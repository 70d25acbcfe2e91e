# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Status of this build
#
# Every number in this book comes from a stored run record. This page, generated from those
# records when the book was built, says for each chapter which profile (size of experiment)
# its numbers come from: `quick` (real but reduced runs for a laptop CPU), `standard` (the
# papers' protocol on a grid sized for a 2-core CPU) or `paper` (the published protocol, for
# a GPU).
# The book shows each chapter at the largest profile whose runs are all stored, so that
# building it retrains nothing ({numref}`tab-status-chapters`). `sst book --plan` prints the
# same before a build, with the compute the missing runs would need.

# %% tags=["parameters", "remove-cell"]
# Papermill parameters: `profile`, the one the book is built with (best: per chapter).
profile = "best"

# %% tags=["remove-input", "full-width"]
from IPython.display import Markdown, display
from myst_nb import glue

from sst_core.book import params
from sst_core.book.plan import book_plan, status_markdown
from sst_core.book.runner import find_root, toc_titles
from sst_core.reports import Grid

params.from_notebook("book_status", globals())  # fails here on a typo or a wrong type
titles = toc_titles(find_root())  # the chapters as the table of contents names them
chapters = [n for n in titles if n != "book_status"]
plans = book_plan(chapters, profile)
glue("status_chapters", Grid(status_markdown(plans, titles)), display=False)

# %% [markdown]
# :::{table} Each chapter of this build: the profile it shows, how many of the runs it reads are stored, the single-thread compute behind them, when they were made (UTC), and a sweep of a larger profile that is under way or complete for it (—: none).
# :name: tab-status-chapters
# ```{glue:md} status_chapters
# :format: myst
# ```
# :::

# %% tags=["remove-input"]
from sst_core.book.plan import STAGED_COLUMNS, STAGED_PROFILES, staged_notes, staged_table
from sst_core.experiments.registry import staged_sweeps
from sst_core.reports import Table

staged = staged_table()
for name, value in {
        "status_staged": (staged or Table("", STAGED_COLUMNS, [])).grid(),
        "staged_notes": Grid(staged_notes(staged)),
        "staged_total": len(staged_sweeps()),
        "staged_stored": len({d["sweep"] for d in staged.data}) if staged else 0,
        "staged_profiles": " and ".join(STAGED_PROFILES)}.items():
    glue(name, value, display=False)

# %% [markdown]
# ## Sweeps the chapters do not read yet
#
# Some sweeps are staged: no chapter reads their records until every run is stored, and
# then a chapter moves to them. Of the {glue:text}`staged_total` staged sweeps,
# {glue:text}`staged_stored` have a run stored at the profiles this page follows
# ({glue:text}`staged_profiles`). {numref}`tab-status-staged` gives each such sweep and
# profile a row (it has no row while none has a run stored), with how far it has got (runs
# stored, of which failed, still missing, and the compute they took) and the compute the
# missing runs would take, priced from the stored runs most like them.
#
# :::{table} Sweeps the chapters do not read yet, per sweep and profile with a run stored: how many of its runs are stored (of which failed) and missing, the single-thread compute of the stored runs, and the compute the missing runs would take (\*: partly priced from runs of another width or model, so only roughly; `sst book --plan` explains the pricing).
# :name: tab-status-staged
# ```{glue:md} status_staged
# :format: myst
# ```
# :::
#
# What each of these sweeps computes:
#
# ```{glue:md} staged_notes
# :format: myst
# ```
