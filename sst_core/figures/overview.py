"""The figure of the page "Results at a glance": Table 2 of paper 1, ours against the
paper's, cell by cell."""
from __future__ import annotations

from typing import Any, Sequence

import matplotlib.pyplot as plt
from matplotlib.patches import Patch

from sst_core.figures.common import PAGE_WIDTH, for_readers
from sst_core.spec.names import model_name

# a cell's colour and mark by its agreement (sst_core.reports.paper1.agreement); the
# colours differ in lightness too, and the marks say it without colour
CELL_STYLE = {"agree": ("#8fc9a0", "✓"), "close": ("#f6d776", "≈"),
              "differ": ("#e8876b", "✗"), "not reported": ("#e6e6e6", "")}
LEGEND = {"agree": "the same m_p", "close": "one evaluated length apart",
          "differ": "further apart", "not reported": "not in the paper"}


def _m_p(value: Any) -> str:
    return "fail" if value is None else str(value)


@for_readers
def fig_table2_cells(data: Sequence[dict[str, Any]], groups: Sequence[str],
                     depths: Sequence[int]) -> plt.Figure:
    """Table 2 as a grid: a row per model (the papers' names), a column per group and
    depth; each cell shows our m_p (and the paper's beneath, where they differ), coloured
    by agreement. ``data`` is :func:`sst_core.reports.paper1.table2`'s data; a cell with no
    run stays white."""
    models = list(dict.fromkeys(d["model"] for d in data))
    at = {(d["model"], d["group"], d["n_layers"]): d for d in data}
    columns = [(g, L) for g in groups for L in depths]
    fig, ax = plt.subplots(figsize=(PAGE_WIDTH, 0.44 * len(models) + 1.5),
                           layout="constrained")
    for i, m in enumerate(models):
        for j, (g, L) in enumerate(columns):
            d = at.get((m, g, L))
            missing = d is None or d["status"] not in ("ok", "fail")
            colour, mark = ("white", "") if missing else CELL_STYLE[d["agreement"]]
            ax.add_patch(plt.Rectangle((j, i), 1, 1, facecolor=colour, edgecolor="white",
                                       lw=2))
            if missing:
                ax.text(j + 0.5, i + 0.5, "no run", ha="center", va="center", fontsize=9,
                        color="0.4")
                continue
            ours = _m_p(d["m_p"])
            if d["agreement"] in ("close", "differ"):
                ax.text(j + 0.5, i + 0.33, f"{ours} {mark}", ha="center", va="center",
                        fontsize=9.5, weight="bold")
                ax.text(j + 0.5, i + 0.72, f"paper {_m_p(d['paper'])}", ha="center",
                        va="center", fontsize=9, color="0.15")
            else:
                ax.text(j + 0.5, i + 0.5, f"{ours} {mark}".strip(), ha="center", va="center",
                        fontsize=9.5, weight="bold" if mark else "normal")
    ax.set_xlim(0, len(columns))
    ax.set_ylim(len(models), 0)
    ax.set_xticks([j + 0.5 for j in range(len(columns))],
                  [f"{g}, {L} layer{'s' if L > 1 else ''}" for g, L in columns])
    ax.xaxis.tick_top()
    ax.set_yticks([i + 0.5 for i in range(len(models))], [model_name(m) for m in models])
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    fig.legend([Patch(facecolor=CELL_STYLE[k][0]) for k in LEGEND],
              [f"{CELL_STYLE[k][1]} {v}".strip() for k, v in LEGEND.items()],
              loc="outside lower center", ncol=4, frameon=False, handlelength=1.2,
              columnspacing=1.0)
    return fig
