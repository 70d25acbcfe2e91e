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
# The headline results of the two papers, ours beside the published ones, each read from the
# report its chapter shows (nothing is trained or computed here that the chapter does not
# show). Each row names the profile its records come from and how many of that profile's
# runs are stored. A chapter shows the largest profile whose records are complete
# (`best`), and where a larger profile's sweep is under way it has a second row for those
# records so far. The chapters say how each number was produced and why it may differ from
# the paper's;
# {doc}`book_status` says what stands behind each chapter.

# %% tags=["parameters", "remove-cell"]
# Papermill parameters: `profile`, the one the book is built with (best: per chapter).
profile = "best"

# %% tags=["remove-input"]
from IPython.display import display

from sst_core.book import params
from sst_core.reports import overview as ov

params.from_notebook("overview", globals())  # fails here on a typo or a wrong type
sources = []
for chapter in ov.CHAPTER_RESULTS:
    P = params.settings(chapter, profile)
    stored, total = params.chapter_coverage(chapter, P.name)
    sources.append(ov.Source(chapter, P, stored, total))
    so_far = params.under_way(chapter, P.name)
    if so_far:
        sources.append(ov.Source(chapter, so_far.profile, so_far.stored, so_far.total))
display(ov.overview(sources))
