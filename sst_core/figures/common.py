"""Figures of the book: one ``fig_*`` function per figure.

They take run records (or plain data such as a :class:`~sst_core.groups.Group`), never
models. Titles are short and in words; the profile and scale behind a figure belong to the
chapter's provenance, not to the figure.

Legible at the page's width: a figure drawn with :func:`for_readers` is at most
:data:`PAGE_WIDTH` inches wide (the text column, 772 px at the 100 dpi of the notebook's
inline images, so it is shown at its own size) with no text under :data:`MIN_FONT` points
(12.5 px there, the size of the body's footnotes). A series keeps one colour and marker
(:func:`series_style`) wherever it is drawn, and no two series share both.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from sst_core.groups import Group
from sst_core.spec.names import MODEL_NAMES, PHI_NAMES, typeset_symbols

PAGE_WIDTH = 7.7  # inches
MIN_FONT = 9.0  # points
READER_RC = {"font.size": 10, "axes.titlesize": 10, "axes.labelsize": 10,
             "xtick.labelsize": MIN_FONT, "ytick.labelsize": MIN_FONT,
             "legend.fontsize": MIN_FONT, "legend.title_fontsize": MIN_FONT,
             "figure.titlesize": 11}


def typeset_text(fig: plt.Figure) -> plt.Figure:
    r"""Every text of ``fig`` (titles, axis labels, legends, annotations) with the papers'
    symbols typeset as math (:func:`sst_core.spec.names.typeset_symbols`): "m_p" reads
    $m_p$, "T_cross" $T_{\mathrm{cross}}$."""
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        shown = text.get_text()
        if shown and typeset_symbols(shown) != shown:
            text.set_text(typeset_symbols(shown))
    return fig


def for_readers(draw: Callable[..., plt.Figure]) -> Callable[..., plt.Figure]:
    """Draw with the book's font sizes (:data:`READER_RC`), the papers' symbols in its text
    typeset (:func:`typeset_text`) and, where the figure came out wider than the page,
    shrink it to :data:`PAGE_WIDTH` (its text keeps its size)."""
    @functools.wraps(draw)
    def drawn(*args: Any, **kwargs: Any) -> plt.Figure:
        with plt.rc_context(READER_RC):
            fig = draw(*args, **kwargs)
            typeset_text(fig)
            width, height = fig.get_size_inches()
            if width > PAGE_WIDTH:
                fig.set_size_inches(PAGE_WIDTH, height * max(0.75, PAGE_WIDTH / width))
                if fig.get_layout_engine() is None:
                    fig.tight_layout()
        return fig
    return drawn


# One colour and marker per series of tracking runs, the same in every figure: each model
# (in the registry's order, Table 2's first) and each phi of Table 3 has an index i; its
# colour is PALETTE[i % 10], its marker the (i // 10)-th pair of MARKERS, the first for one
# layer and the second for two. So no two (model or phi, depth) share colour and marker.
# matplotlib's tab10, its grey replaced by navy: grey is the colour of the guides
# (GUIDE_COLOUR), which no series may share.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#000080", "#bcbd22", "#17becf")
GUIDE_COLOUR = "0.35"  # the 90% and training-length lines of the accuracy figures
MARKERS = (("o", "^"), ("s", "v"), ("D", "<"), ("P", ">"))
SERIES = tuple(MODEL_NAMES) + tuple(f"phi:{p}" for p in PHI_NAMES)


def series_key(config: Mapping[str, Any]) -> str:
    """What a tracking run's series is: its model, or its phi in Table 3's sweep."""
    return f"phi:{config['phi']}" if config.get("phi") else str(config["model"])


def series_style(config: Mapping[str, Any], others: Sequence[str] = ()) -> dict[str, Any]:
    """Colour, marker and line style of a tracking run's series (solid: one layer, dashed:
    two). A model unknown to the registry takes the index after the known ones by its place
    in ``others`` (the unknown series of the same figure)."""
    i = series_index(series_key(config), others)
    depth = int(config.get("n_layers", 1))
    return {"color": PALETTE[i % len(PALETTE)],
            "marker": MARKERS[(i // len(PALETTE)) % len(MARKERS)][0 if depth == 1 else 1],
            "ls": "-" if depth == 1 else "--"}


def series_index(key: str, others: Sequence[str] = ()) -> int:
    """The index behind a series' style (:func:`series_style`): its place in
    :data:`SERIES`, or after them by its place in ``others``."""
    return SERIES.index(key) if key in SERIES else len(SERIES) + list(others).index(key)


def unknown_series(configs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The series of ``configs`` that :data:`SERIES` does not know, sorted."""
    return sorted({series_key(c) for c in configs} - set(SERIES))


def suptitle(fig: plt.Figure, text: str, fontsize: float = 10) -> None:
    """A figure title wrapped to the figure's width, so a long scale statement does not
    widen the saved image (and shrink everything else on the page)."""
    import textwrap

    width = max(40, int(fig.get_figwidth() * 72 / (0.55 * fontsize)))
    fig.suptitle(textwrap.fill(text, width), fontsize=fontsize)


def plain_log_ticks(ax: plt.Axes, which: str = "xy") -> None:
    """Ticks of a log axis at 1, 2, 3 and 5 times the powers of ten in its view, labelled
    as plain numbers, and no minor labels: a log axis spanning about one decade otherwise
    labels its minor ticks in scientific notation, and they overlap. Call it once the
    data are drawn (it reads the view limits)."""
    import math

    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    for name in which:
        axis, (lo, hi) = ((ax.xaxis, ax.get_xlim()) if name == "x" else
                          (ax.yaxis, ax.get_ylim()))
        ticks = [m * 10.0 ** e for e in range(math.floor(math.log10(lo)),
                                              math.ceil(math.log10(hi)) + 1)
                 for m in (1, 2, 3, 5) if lo <= m * 10.0 ** e <= hi]
        axis.set_major_locator(FixedLocator(ticks))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())


@for_readers
def fig_cayley(groups: Sequence[Group]) -> plt.Figure:
    """Cayley tables side by side: cell (a, b) shows a*b, coloured by element; each panel's
    width follows its group's order, so every cell has room for its label at the page's
    width."""
    fig, axes = plt.subplots(1, len(groups), figsize=(PAGE_WIDTH, 3.9), squeeze=False,
                             gridspec_kw={"width_ratios": [max(g.order, 3) for g in groups]},
                             layout="constrained")
    for ax, group in zip(axes[0], groups):
        n_g = group.order
        ax.imshow(group.table, cmap="tab20" if n_g <= 20 else "viridis", vmin=0,
                  vmax=max(n_g - 1, 1) if n_g > 20 else 19)
        labels = list(group.elements)
        ax.set_xticks(range(n_g), labels, rotation=90 if n_g > 2 else 0)
        ax.set_yticks(range(n_g), labels)
        if n_g <= 12:
            for a in range(n_g):
                for b in range(n_g):
                    ax.text(b, a, labels[group.table[a, b]], ha="center", va="center",
                            fontsize=MIN_FONT - 1)
        ax.set_xlabel("b (right factor)")
        ax.set_title(f"{group.name}: a·b")
    axes[0][0].set_ylabel("a (left factor)")
    return fig


@for_readers
def fig_mixing(records: Sequence[dict[str, Any]]) -> plt.Figure:
    """Total-variation distance of the running product's distribution from uniform, per t."""
    modes = sorted({r["config"]["tokens"] for r in records})
    fig, axes = plt.subplots(1, len(modes), figsize=(3.8 * len(modes), 3.4), squeeze=False,
                             sharey=True, layout="constrained")
    for ax, mode in zip(axes[0], modes):
        for r in records:
            if r["config"]["tokens"] != mode or r["status"] != "ok":
                continue
            tv = np.asarray(r["metrics"]["tv_uniform"])  # (L,)
            ax.plot(np.arange(1, len(tv) + 1), tv, label=r["config"]["group"])
        ax.set_xscale("log")
        ax.set_xlabel("t (tokens read)")
        ax.set_title(f"tokens: {mode}")
        ax.legend()
    axes[0][0].set_ylabel("TV distance from uniform")
    fig.suptitle("How fast the state forgets the start")
    return fig


@for_readers
def fig_state_distribution(records: Sequence[dict[str, Any]], t: int) -> plt.Figure:
    """Distribution of the state g_t after t tokens, one panel per record; a tick at every
    state index (the states are discrete)."""
    fig, axes = plt.subplots(1, len(records), figsize=(2.6 * len(records), 2.8), squeeze=False,
                             sharey=True, layout="constrained")
    for ax, r in zip(axes[0], records):
        freq = np.asarray(r["metrics"]["state_freq"])  # (L, n_g)
        t_eff = min(max(t, 1), freq.shape[0])
        ax.bar(range(freq.shape[1]), freq[t_eff - 1])
        ax.set_xticks(range(freq.shape[1]))
        ax.axhline(1 / freq.shape[1], color="k", lw=0.8, ls="--")
        ax.set_title(f"{r['config']['group']} ({r['config']['tokens']}), t = {t_eff}")
        ax.set_xlabel("state index g")
    axes[0][0].set_ylabel("share of words")
    fig.suptitle("Distribution of the running product")
    return fig


# Rows of the accuracy figure by class and family (fig_accuracy_vs_length's ``rows``), in
# words a reader knows: the models' papers name their families after their first member.
FAMILY_NAMES = {(False, "rnn"): "state-dependent RNNs", (True, "rnn"): "affine RNNs",
                (True, "selective"): "Mamba family", (True, "unitary"): "AUSSM family",
                (True, "attention"): "linear attention", (True, "delta"): "delta rules",
                (False, "selective"): "semi-affine Mamba family"}


def family_rows(models: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``models`` (registry names) as rows of :func:`fig_accuracy_vs_length`: one row per
    class and family of :data:`sst_core.models.registry.REGISTRY` (:data:`FAMILY_NAMES`),
    in the order of their first model in ``models``, each with its models in that order.
    A model the registry does not know is a ValueError naming it."""
    from sst_core.models.registry import REGISTRY

    unknown = [m for m in models if m not in REGISTRY]
    if unknown:
        raise ValueError(f"family_rows: unknown models {unknown}; allowed: the registry's "
                         f"({', '.join(REGISTRY)})")
    rows: dict[tuple[bool, str], list[str]] = {}
    for m in dict.fromkeys(models):
        rows.setdefault((REGISTRY[m].affine, REGISTRY[m].family), []).append(m)
    return [(FAMILY_NAMES.get(key, f"{'affine' if key[0] else 'state-dependent'} {key[1]}"),
             ms) for key, ms in rows.items()]


def _accuracy_lines(ax: plt.Axes, records: Sequence[dict[str, Any]],
                    others: Sequence[str]) -> dict[tuple[str, int, str], Any]:
    """Draw each record's token accuracy against evaluation length on ``ax`` (its series'
    style, its papers' name as label) and the 90% and training-length guides; return the
    lines by (series order, depth, label), for a legend in series order."""
    from sst_core.spec.names import run_name

    handles: dict[tuple[str, int, str], Any] = {}
    for r in sorted(records, key=lambda r: (series_key(r["config"]),
                                            r["config"].get("n_layers", 1))):
        ev = r["metrics"]["eval"]
        lengths = sorted(int(L) for L in ev)
        label = run_name(r["config"])
        (line,) = ax.plot(lengths, [ev[str(L)]["token"] for L in lengths], ms=4, lw=1.3,
                          label=label, **series_style(r["config"], others))
        order = series_index(series_key(r["config"]), others)
        handles.setdefault((f"{order:04d}", r["config"].get("n_layers", 1), label), line)
    ax.axhline(0.9, color=GUIDE_COLOUR, lw=0.9)
    ax.axvline(60, color=GUIDE_COLOUR, lw=0.8, ls=":")
    ax.set_ylim(0, 1.02)
    return handles


GUIDES = ("90% accuracy", "training length 60")


def _guide_handles() -> list[Any]:
    from matplotlib.lines import Line2D

    return [Line2D([], [], color=GUIDE_COLOUR, lw=0.9),
            Line2D([], [], color=GUIDE_COLOUR, lw=0.8, ls=":")]


@for_readers
def fig_accuracy_vs_length(records: Sequence[dict[str, Any]], groups: Sequence[str],
                           rows: Sequence[tuple[str, Sequence[str]]] | None = None
                           ) -> plt.Figure:
    """Token accuracy against evaluation length, one panel per group, one line per record.

    Pass one run per model and group (the best, :func:`sst_core.reports.paper1.best_runs`);
    lines carry the papers' names (:func:`sst_core.spec.names.run_name`) and keep one colour
    and marker per model in every panel (:func:`series_style`; two layers dashed).

    ``rows`` None: every series in each panel, up to three panels a row, one legend with
    the guides below them (few series). ``rows`` given, as (label, series) pairs (series:
    :func:`series_key` values, e.g. from :func:`family_rows`): small multiples, one row of
    panels per pair drawing only its series, one column per group, shared axes; each row's
    legend beside it, titled with its label, names its series (their one-layer style), and
    one legend below says the depths' line styles and the guides. A row none of whose
    series has a record is left out; a series of ``records`` in no row is a ValueError.
    """
    mine = [r for r in records if r["config"]["group"] in groups]
    others = unknown_series([r["config"] for r in mine])
    if rows is not None:
        return _accuracy_rows(mine, groups, rows, others)
    ncols = min(3, max(1, len(groups)))
    nrows = -(-len(groups) // ncols)
    n_labels = len({series_key(r["config"]) + str(r["config"].get("n_layers", 1))
                    for r in mine}) + len(GUIDES)
    legend_rows = -(-n_labels // 3)
    fig, axes = plt.subplots(nrows, ncols, figsize=(PAGE_WIDTH, 2.7 * nrows + 0.6
                                                    + 0.22 * legend_rows),
                             squeeze=False, sharey=True, layout="constrained")
    flat = list(axes.flat)
    handles: dict[tuple[str, int, str], Any] = {}
    for ax, group in zip(flat, groups):
        handles |= {k: v for k, v in _accuracy_lines(
            ax, [r for r in mine if r["config"]["group"] == group], others).items()
            if k not in handles}
        ax.set_title(group)
        ax.set_xlabel("evaluation length")
        ax.tick_params(labelleft=True)
    for row in axes:
        row[0].set_ylabel("token accuracy")
    for ax in flat[len(groups):]:
        ax.axis("off")
    if handles:
        keys = sorted(handles)
        fig.legend([handles[k] for k in keys] + _guide_handles(),
                   [k[2] for k in keys] + list(GUIDES),
                   loc="outside lower center", ncol=3, frameon=False)
    fig.suptitle("Accuracy beyond the training length")
    return fig


def _accuracy_rows(mine: list[dict[str, Any]], groups: Sequence[str],
                   rows: Sequence[tuple[str, Sequence[str]]], others: list[str]) -> plt.Figure:
    """:func:`fig_accuracy_vs_length` as small multiples, one row of panels per row."""
    from matplotlib.lines import Line2D

    from sst_core.spec.names import run_name

    placed = {k for _, keys in rows for k in keys}
    stray = sorted({series_key(r["config"]) for r in mine} - placed)
    if stray:
        raise ValueError(f"fig_accuracy_vs_length: series {stray} are in no row of "
                         f"{[label for label, _ in rows]}; give every series drawn a row")
    drawn = [(label, list(keys)) for label, keys in rows
             if any(series_key(r["config"]) in keys for r in mine)]
    if not drawn:
        raise ValueError(f"fig_accuracy_vs_length: no record of groups {list(groups)}")
    nrows, ncols = len(drawn), len(groups)
    fig, axes = plt.subplots(nrows, ncols, figsize=(PAGE_WIDTH, 1.45 * nrows + 1.3),
                             squeeze=False, sharex=True, sharey=True, layout="constrained")
    depths = set()
    for (label, keys), row in zip(drawn, axes):
        for ax, group in zip(row, groups):
            lines = [r for r in mine if r["config"]["group"] == group
                     and series_key(r["config"]) in keys]
            depths |= {int(r["config"].get("n_layers", 1)) for r in lines}
            _accuracy_lines(ax, lines, others)
            ax.set_yticks([0, 0.5, 1])
        # the row's legend: each of its series once, in its one-layer style
        configs = {series_key(r["config"]): r["config"] for r in mine
                   if series_key(r["config"]) in keys}
        entries = [(run_name({**configs[k], "n_layers": 1}),
                    series_style({**configs[k], "n_layers": 1}, others))
                   for k in keys if k in configs]
        names = [name for name, _ in entries]
        row[-1].legend([Line2D([], [], ms=4, lw=1.3, **style) for _, style in entries],
                       names, title=None if names == [label] else label, loc="center left",
                       bbox_to_anchor=(1.04, 0.5), frameon=False, alignment="left",
                       handlelength=2.2)
    for ax, group in zip(axes[0], groups):
        ax.set_title(group)
    for ax in axes[-1]:
        ax.set_xlabel("evaluation length")
    fig.supylabel("token accuracy", fontsize=10)
    # the depths' line styles (with their markers where every series shares them) and guides
    pairs = {MARKERS[series_index(k, others) // len(PALETTE) % len(MARKERS)]
             for k in {series_key(r["config"]) for r in mine}}
    marks = next(iter(pairs)) if len(pairs) == 1 else ("", "")
    legend = [(Line2D([], [], color=GUIDE_COLOUR, lw=1.3, ls=ls, marker=m, ms=4), name)
              for name, ls, m, shown in (("one layer", "-", marks[0], 1 in depths),
                                         ("two layers" if max(depths) == 2 else
                                          "more layers", "--", marks[1], max(depths) > 1))
              if shown]
    legend += list(zip(_guide_handles(), GUIDES))
    fig.legend([h for h, _ in legend], [name for _, name in legend],
               loc="outside lower center", ncol=len(legend), frameon=False)
    fig.suptitle("Accuracy beyond the training length")
    return fig


def png(fig: plt.Figure):
    """A figure as an ``IPython.display.Image`` (PNG), and the figure closed.

    Interactive notebooks put it into an ``ipywidgets.Output`` with ``append_display_data``, which
    sets the widget's state directly: rendering with ``with output:`` (as ``interact``
    does) makes papermill/nbclient hang now and then (nbclient issue 312)."""
    import io

    from IPython.display import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return Image(data=buf.getvalue(), format="png")
