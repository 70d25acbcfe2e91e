"""Figures of the chapter "Speed: benchmarks", from the records ``sst bench --record`` stores
(never by timing anything here)."""
from __future__ import annotations

from typing import Any, Sequence

import matplotlib.pyplot as plt
import numpy as np

from sst_core.figures.common import PAGE_WIDTH, for_readers


@for_readers
def fig_targets(rows: Sequence[dict[str, Any]]) -> plt.Figure:
    """Every comparison with a target on one log axis: its ratio over its target (bars
    left of 1 meet it, green; right of it miss it, red). ``rows``: the record's
    :func:`sst_core.reports.bench.targets` (label, ratio, target, status)."""
    rel = np.array([r["ratio"] / r["target"] for r in rows])  # (rows,)
    fig, ax = plt.subplots(figsize=(PAGE_WIDTH, 0.22 * len(rows) + 1.2), layout="constrained")
    ax.barh(range(len(rows)), rel, color=["tab:green" if v <= 1 else "tab:red" for v in rel])
    ax.axvline(1.0, color="black", lw=1)
    ax.set_yticks(range(len(rows)), [r["label"] for r in rows])
    ax.invert_yaxis()
    if len(rows):
        ax.set_xscale("log")
    ax.set_xlabel("ratio / target (left of 1: meets the target)")
    ax.set_title("Benchmarks against their targets")
    return fig
