"""Figures of the book: one ``fig_*`` function per figure.

They take run records (or plain data such as a :class:`~sst_core.groups.Group`), never
models, and every figure states the profile and scale that produced it.
"""
from __future__ import annotations

from typing import Any, Sequence

import matplotlib.pyplot as plt
import numpy as np

from sst_core.groups import Group


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


def fig_cayley(groups: Sequence[Group]) -> plt.Figure:
    """Cayley tables side by side: cell (a, b) shows a*b, coloured by element."""
    fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 4.4), squeeze=False)
    for ax, group in zip(axes[0], groups):
        n_g = group.order
        ax.imshow(group.table, cmap="tab20" if n_g <= 20 else "viridis", vmin=0,
                  vmax=max(n_g - 1, 1) if n_g > 20 else 19)
        labels = list(group.elements)
        ax.set_xticks(range(n_g), labels, rotation=90 if n_g > 2 else 0, fontsize=8)
        ax.set_yticks(range(n_g), labels, fontsize=8)
        if n_g <= 12:
            for a in range(n_g):
                for b in range(n_g):
                    ax.text(b, a, labels[group.table[a, b]], ha="center", va="center", fontsize=7)
        ax.set_xlabel("b (right factor)")
        ax.set_ylabel("a (left factor)")
        ax.set_title(f"{group.name}: a*b  (order {n_g})")
    fig.tight_layout()
    return fig


def fig_mixing(records: Sequence[dict[str, Any]], scale: str) -> plt.Figure:
    """Total-variation distance of the running product's distribution from uniform, per t."""
    modes = sorted({r["config"]["tokens"] for r in records})
    fig, axes = plt.subplots(1, len(modes), figsize=(5.5 * len(modes), 3.6), squeeze=False,
                             sharey=True)
    for ax, mode in zip(axes[0], modes):
        for r in records:
            if r["config"]["tokens"] != mode or r["status"] != "ok":
                continue
            tv = np.asarray(r["metrics"]["tv_uniform"])  # (L,)
            ax.plot(np.arange(1, len(tv) + 1), tv, label=r["config"]["group"])
        ax.set_xscale("log")
        ax.set_xlabel("t (tokens read)")
        ax.set_title(f"tokens = {mode}")
        ax.legend()
    axes[0][0].set_ylabel("TV distance from uniform")
    suptitle(fig, f"How fast the state forgets the start ({scale})", fontsize=10)
    fig.tight_layout()
    return fig


def fig_state_distribution(records: Sequence[dict[str, Any]], t: int, scale: str) -> plt.Figure:
    """Distribution of the state g_t after t tokens, one panel per record."""
    fig, axes = plt.subplots(1, len(records), figsize=(3.6 * len(records), 3.0), squeeze=False,
                             sharey=True)
    for ax, r in zip(axes[0], records):
        freq = np.asarray(r["metrics"]["state_freq"])  # (L, n_g)
        t_eff = min(max(t, 1), freq.shape[0])
        ax.bar(range(freq.shape[1]), freq[t_eff - 1])
        ax.axhline(1 / freq.shape[1], color="k", lw=0.8, ls="--")
        ax.set_title(f"{r['config']['group']} ({r['config']['tokens']}), t={t_eff}", fontsize=9)
        ax.set_xlabel("state index g")
    axes[0][0].set_ylabel("share of words")
    suptitle(fig, f"Distribution of the running product ({scale})", fontsize=10)
    fig.tight_layout()
    return fig


def fig_accuracy_vs_length(records: Sequence[dict[str, Any]], groups: Sequence[str],
                           scale: str) -> plt.Figure:
    """Token accuracy against evaluation length, one panel per group, one line per record.

    Pass one run per model and group (the best, :func:`sst_core.reports.paper1.best_runs`);
    lines are labelled by model (or phi), with L2 for two layers. A model keeps its colour
    in every panel and a deeper run of it is dashed; panels fill two columns and the legend
    takes the next free slot (a row of its own, only as tall as it needs, when the panels
    fill theirs), so the figure stays legible at the page's width.
    """
    def label_of(cfg: dict[str, Any]) -> tuple[str, int]:
        return cfg.get("phi") or cfg["model"], int(cfg.get("n_layers", 1))

    names = sorted({label_of(r["config"])[0] for r in records if r["config"]["group"] in groups})
    cmap = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    colour = {name: cmap(i % cmap.N) for i, name in enumerate(names)}
    ncols = 2
    nrows = (len(groups) + 1 + ncols - 1) // ncols  # the panels and the legend's slot
    n_labels = len({label_of(r["config"]) for r in records if r["config"]["group"] in groups})
    alone = len(groups) % ncols == 0  # the legend has a row of its own: as tall as it needs
    legend_cols = 3 if alone else 2 if n_labels > 8 else 1
    ratios = [1.0] * (nrows - 1) + [min(1.0, 0.2 + 0.08 * -(-n_labels // legend_cols))
                                    if alone else 1.0]
    fig, axes = plt.subplots(nrows, ncols, figsize=(8.5, 3.1 * sum(ratios)), squeeze=False,
                             sharey=True, gridspec_kw={"height_ratios": ratios})
    flat = list(axes.flat)
    handles: dict[str, Any] = {}
    for ax, group in zip(flat, groups):
        lines = [(label_of(r["config"]), r) for r in records if r["config"]["group"] == group]
        for (name, depth), r in sorted(lines, key=lambda lr: lr[0]):
            ev = r["metrics"]["eval"]
            lengths = sorted(int(L) for L in ev)
            label = name + (f" L{depth}" if depth > 1 else "")
            (line,) = ax.plot(lengths, [ev[str(L)]["token"] for L in lengths], marker="o",
                              ms=3, lw=1.3, color=colour[name], ls="-" if depth == 1 else "--",
                              label=label)
            handles.setdefault(label, line)
        ax.axhline(0.9, color="0.35", lw=0.9)
        ax.axvline(60, color="0.35", lw=0.8, ls=":")
        ax.set_title(group)
        ax.set_xlabel("evaluation length")
        ax.set_ylim(0, 1.02)
        ax.tick_params(labelleft=True)
    for row in axes:
        row[0].set_ylabel("token accuracy")
    legend_ax = flat[len(groups)]
    for ax in flat[len(groups):]:
        ax.axis("off")
    if handles:
        labels = sorted(handles)
        legend_ax.legend([handles[k] for k in labels], labels, fontsize=8, ncol=legend_cols,
                         frameon=False, **({"loc": "center left", "bbox_to_anchor": (0, 0.5)}
                                           if alone else {"loc": "center"}))
    suptitle(fig, "Accuracy beyond the training length 60 (grey line: the 90% bar; dotted: "
             f"length 60; dashed: two layers; {scale})", fontsize=10)
    fig.tight_layout()
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
