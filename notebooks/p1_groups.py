# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Groups and state tracking
#
# Both papers ask what a recurrent model can *track*. The error-control paper
# {cite}`chung2026errorcontrol` uses the cleanest such task there is: read a word
# $x_1 x_2 \cdots x_L$ of elements of a finite group $G$ and, after every token, output the
# running product
#
# $$
# g_t = x_1 \cdot x_2 \cdots x_t, \qquad g_t = g_{t-1}\cdot x_t,\quad g_0 = e .
# $$
#
# The state $g_t$ is one of $|G|$ symbols, and every token moves it deterministically. The
# naive expectation is that a model that tracks the state for 60 tokens has learned this
# finite automaton and will track it at any length; whether it *does* at length 1000 is
# the subject of Paper 1. This chapter builds the task: the groups as multiplication
# tables, the words and their running products, and one measurement that shows why $S_3$
# is harder than $C_6$.

# %% tags=["parameters", "remove-cell"]
# Papermill parameters: `profile`, and None = take the profile's value.
profile = "quick"
seed = None
n_words = None
word_length = None

# %% tags=["remove-input"]
import matplotlib.pyplot as plt
from IPython.display import display
from myst_nb import glue

from sst_core.book import params
from sst_core.experiments import paper1, runs
from sst_core.figures import common as plots
from sst_core.groups import get_group
from sst_core.reports.groups import groups_table, word_table
from sst_core.tasks.tracking import sample

P = params.from_notebook("p1_groups", globals())  # fails here on a typo or a wrong type

# %% [markdown]
# ## Groups as multiplication tables
#
# `get_group` builds $C_n$ (cyclic), $D_n$ (dihedral), $S_n$
# (symmetric), $A_n$ (alternating) and direct products such as `C2xS3`. A group is its
# *Cayley table*: `table[a, b]` is the index of $a\cdot b$, and index 0 is the identity.
# Permutations are composed right to left, $(a\cdot b)(i) = a(b(i))$: apply $b$ first. This
# one convention is used by the data, the diagnostics and the state-preserving words of the
# later chapters.

# %%
C2, C6, S3 = (get_group(name) for name in ("C2", "C6", "S3"))
for g in (C2, C6, S3):
    print(f"{g.name} (order {g.order}): elements {', '.join(g.elements)}")
    print(f"    generators {', '.join(g.elements[i] for i in g.generators)}")

# %% tags=["remove-input"]
glue("gr_cayley", plots.fig_cayley([C2, C6, S3]), display=False)
plt.close("all")

# %% [markdown]
# ```{glue:figure} gr_cayley
# :name: "fig-cayley"
#
# The Cayley tables of $C_2$, $C_6$ and $S_3$: the cell in row $a$ and column $b$ holds
# $a\cdot b$, coloured by element.
# ```
#
# The tables ({numref}`fig-cayley`) of $C_2$ and $C_6$ are symmetric about the diagonal: $a\cdot b=b\cdot a$ for
# every pair, the groups are *abelian*. The table of $S_3$ is not. Its two generators, the
# transposition $s=(0\,1)$ and the rotation $r=(0\,1\,2)$, do not commute:

# %%
s, r = S3.index("(0 1)"), S3.index("(0 1 2)")
sr, rs = S3.multiply(s, r), S3.multiply(r, s)
S3.elements[sr], S3.elements[rs]  # s·r and r·s

# %% [markdown]
# ## Words and their running products
#
# `sample` draws words whose tokens are group element indices,
# uniformly from a vocabulary, and returns the running product at every position. The
# vocabulary `"generators"` is the identity plus the generators (so parity is not a fixed
# input); `"all"` is every element. Here is one $S_3$ word:

# %%
tokens, states = sample(S3, n=1, length=10, tokens="generators", seed=P.seed)

# %% tags=["remove-input"]
glue("gr_word", word_table(S3, tokens[0], states[0]).grid(), display=False)

# %% [markdown]
# ````{table} One $S_3$ word of length 10 over the vocabulary of generators: the token read at each position and the running product, the state a model must track.
# :name: tab-word
# ```{glue:md} gr_word
# :format: myst
# ```
# ````

# %% [markdown]
# ## Why $S_3$ is order-sensitive and $C_6$ is not
#
# In an abelian group the product of a word does not depend on the order of its tokens:
# the state after $t$ tokens is fixed by *how many* of each token were read, so a model may
# count instead of composing. In $S_3$, {glue:text}`s3_sr` $= s\cdot r \neq r\cdot s =$
# {glue:text}`s3_rs`, and the model must apply every token in turn. We measure this on
# sampled words: swap two adjacent tokens at a random position and check whether the final
# state changes. We also follow the distribution of $g_t$: how many tokens it takes for the
# state to become uniform, that is, to forget where it started. At this book's scale each
# group and vocabulary is {glue:text}`gr_n_words:,d` words of length
# {glue:text}`gr_word_length:,d`.

# %%
records = [runs.run(cfg) for cfg in paper1.order_sensitivity_grid(P)]
table = groups_table(P)

# %% tags=["remove-input"]
by = {(r["config"]["group"], r["config"]["tokens"]): r["metrics"] for r in records}
measured = table.split(2, 6)[0]  # the orders and vocabularies are printed above
for name, value in {"gr_table": measured.grid(), "s3_sr": S3.elements[sr],
                    "s3_rs": S3.elements[rs],
                    "gr_n_words": P.n_words, "gr_word_length": P.word_length,
                    "c6_swap": by[("C6", "all")]["swap_changes"],
                    "s3_swap": by[("S3", "all")]["swap_changes"],
                    "s3_noncommuting": by[("S3", "all")]["noncommuting_pairs"]}.items():
    glue(name, value, display=False)

# %% [markdown]
# ````{table} Order sensitivity of $C_2$, $C_6$ and $S_3$ under both token vocabularies: the share of ordered pairs of elements that do not commute (exact), the share of the sampled words whose final state one adjacent swap changes, and the total-variation distance of the final state's distribution from uniform (both estimated from the sampled words).
# :name: tab-order-sensitivity
# ```{glue:md} gr_table
# :format: myst
# ```
# ````
#
# With all six elements as tokens, a single adjacent swap changes the final state of
# {glue:text}`s3_swap:.3f` of the $S_3$ words and {glue:text}`c6_swap:.3f` of the $C_6$ words
# ({numref}`tab-order-sensitivity`); exactly {glue:text}`s3_noncommuting:.3f` of the ordered
# pairs of $S_3$ elements do not commute. The two $S_3$ shares agree up to sampling error, as
# they should: a swap of $a$ and $b$ changes the product exactly when $ab \ne ba$, because
# the rest of the word carries the difference to the end unchanged
# ($u\,ab\,w \ne u\,ba\,w$ whenever $ab \ne ba$, by cancellation). In $C_6$ no swap ever
# matters.
#
# {numref}`fig-mixing` shows how fast each state distribution becomes uniform. With the
# generators as tokens (right panel), $C_6$ is a lazy random walk on a 6-cycle and mixes
# slowly, while $S_3$ mixes within a few tokens; with every element as tokens (left panel),
# one token already makes the state uniform. Once the state is uniform, a model cannot
# guess it from the word's length: it has to track it. {numref}`fig-state-distribution`
# shows the distribution of the state after two tokens, with the generators as tokens.

# %% tags=["remove-input"]
gen_records = [r for r in records if r["config"]["tokens"] == "generators"]
glue("gr_mixing", plots.fig_mixing(records), display=False)
glue("gr_distribution", plots.fig_state_distribution(gen_records, 2), display=False)
plt.close("all")

# %% [markdown]
# ```{glue:figure} gr_mixing
# :name: "fig-mixing"
#
# How fast the state forgets where it started: the total-variation distance of the
# distribution of $g_t$ from uniform against the number of tokens read, with every
# element (left) or the generators (right) as tokens.
# ```
#
# ```{glue:figure} gr_distribution
# :name: "fig-state-distribution"
#
# The distribution of the running product $g_2$ after two tokens, generators as tokens; the
# dashed line is the uniform share. Opened as a notebook with a running kernel, the page
# also offers a slider over $t$.
# ```

# %% tags=["remove-cell"]
# a live notebook's slider over t (a control that only a running kernel can serve, so the
# static page shows the figure above instead)
import ipywidgets as widgets

t_slider = widgets.IntSlider(value=2, min=1, max=P.word_length, step=1, description="t")
view = widgets.Output()


def redraw(change=None):
    fig = plots.fig_state_distribution(gen_records, t_slider.value)
    view.outputs = ()
    view.append_display_data(plots.png(fig))


t_slider.observe(redraw, names="value")
redraw()
display(widgets.VBox([t_slider, view]))

# %% [markdown]
# ## What the later chapters build on this
#
# - The training loop samples fresh words every step with `sample` and scores the
#   prediction of $g_t$ at every position.
# - The diagnostics group hidden states by the oracle state $g_t$ to form the centroids
#   $c_g$ and the symbolic subspace $U$ (see {doc}`../book/notation`).
# - A *state-preserving* word, one whose product is the identity (such as $s^2$ or $r^3$ in
#   $S_3$), gives the return maps $F_s$ of Theorem 1.

# %% tags=["remove-input"]
from sst_core.book.provenance import how_made

how_made("p1_groups", P, more=(
    "Code: the groups in "
    "`sst_core.groups`, the words in `sst_core.tasks.tracking`, the measurement "
    "in `sst_core.experiments.paper1`."))
