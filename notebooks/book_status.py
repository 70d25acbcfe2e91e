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
# Every number in this book comes from a run record under `results/`. This page, generated
# from those records when the book was built, says for each chapter which profile it shows
# (with `best`: the largest profile whose records cover the whole chapter, so that nothing
# is retrained), how many of the runs it reads are stored and how much compute stands
# behind them, when its records were made, and how far a larger profile's sweep of it has
# got, or that it is complete where the book was built at a smaller profile than `best`
# would choose. `sst book --plan` prints the same before a build, with the compute the
# missing runs would need.

# %% tags=["parameters", "remove-cell"]
# Papermill parameters: `profile`, the one the book is built with (best: per chapter).
profile = "best"

# %% tags=["remove-input", "full-width"]
from IPython.display import Markdown, display

from sst_core.book import params
from sst_core.book.plan import book_plan, chapter_link, status_markdown
from sst_core.book.runner import find_root, toc_titles

params.from_notebook("book_status", globals())  # fails here on a typo or a wrong type
titles = toc_titles(find_root())  # the chapters as the table of contents names them
chapters = [n for n in titles if n != "book_status"]
plans = book_plan(chapters, profile)
display(Markdown(status_markdown(plans, titles)))

# %% [markdown]
# Why each chapter shows its profile:

# %% tags=["remove-input"]
display(Markdown("\n".join(f"- {chapter_link(p.notebook, titles)}: {p.why}"
                           for p in plans if p.total)))

# %% [markdown]
# ## Sweeps the chapters do not read yet
#
# Some sweeps are staged: no chapter reads their records until every run is stored, and
# then a chapter moves to them. The table says how far each has got at the profile it names
# (runs stored, of which failed, still missing, and the compute they took), and the compute
# the missing runs would take, priced from the stored runs most like them.

# %% tags=["remove-input", "full-width"]
from sst_core.book.plan import staged_markdown

display(Markdown(staged_markdown()))

