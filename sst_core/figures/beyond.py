"""Figures of the "Beyond the papers" chapters, from stored records only.

Every function takes records (metrics dicts or whole records), never models. Titles are
short and in words; the scale behind a figure is the chapter's to say (in its prose and its
provenance block). Models carry the papers' names (:mod:`sst_core.spec.names`) and keep the
colour and marker :func:`~sst_core.figures.common.series_style` gives them in every figure.
"""
from __future__ import annotations

from typing import Any, Sequence

import matplotlib.pyplot as plt
import numpy as np

from sst_core.figures.common import (PAGE_WIDTH, for_readers, plain_log_ticks, series_style,
                                     unknown_series)
from sst_core.spec.names import run_name
from sst_core.store.codec import decode_floats, read_curve, stored_curve



ROUNDING_ZERO = 1e-12  # a q(t) below it is zero up to rounding (R = 0)


def _q_floor(curves: Sequence[tuple[np.ndarray, np.ndarray]]) -> float | None:
    """The bottom of a q(t) axis: half the smallest q above :data:`ROUNDING_ZERO`, so that
    only the values that are zero up to rounding fall below the frame (at t = 1 each group
    state has a single hidden state and R = 0; k-means labels can give R = 0 a step later),
    which would otherwise squash every other value."""
    kept = [y[np.isfinite(y) & (y > ROUNDING_ZERO)] for _, y in curves]
    kept = [v for v in kept if v.size]
    return 0.5 * float(min(v.min() for v in kept)) if kept else None
_COLOURS = {"oracle": "k", "decoded": "#1f77b4", "clusters": "#ff7f0e"}
_AFFINE, _STATE_DEPENDENT = "#1f77b4", "#2ca02c"  # the scatter's two classes


def _label(r: dict[str, Any]) -> str:
    cfg = r["config"]["run"]
    return f"{run_name(cfg)} on {cfg['group']}"


@for_readers
def fig_label_free_curves(records: Sequence[dict[str, Any]], tau: float = 0.5) -> plt.Figure:
    """q(t) with oracle, decoded and clustered labels, one panel per record (e.g.
    :func:`sst_core.reports.beyond.label_free_examples`), values that are zero up to
    rounding below the frame (:func:`_q_floor`); one legend below the panels."""
    recs = list(records)
    cols = min(3, max(1, len(recs)))
    rows = max(1, -(-len(recs) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(PAGE_WIDTH, 2.5 * rows + 0.6), squeeze=False,
                             sharey=True, layout="constrained")
    for ax, r in zip(axes.flat, recs):
        m = r["metrics"]
        curves = []
        for name, q in m["q"].items():
            t, y = read_curve(q, m.get("curve_t"))
            ok = np.isfinite(y)  # the clusters' q exists on a grid of times only
            ax.plot(t[ok], y[ok], color=_COLOURS.get(name), lw=1.2,
                    ls="-" if name == "oracle" else "--", label=f"{name} labels")
            curves.append((t, y))
        ax.axhline(tau, color="grey", lw=0.8, ls=":", label="τ = 1/2")
        if m["m_p"]:
            ax.axvline(m["m_p"], color="#d62728", lw=0.8, label="m_p")
        ax.set_xscale("log")
        ax.set_yscale("log")
        if _q_floor(curves) is not None:
            ax.set_ylim(bottom=_q_floor(curves))
        ax.set_title(_label(r))
        ax.set_xlabel("t")
    for ax in axes.flat[len(recs):]:
        ax.axis("off")
    for row in axes:
        row[0].set_ylabel("q(t)")
    if recs:
        handles = {}
        for ax in axes.flat:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(lab, h)
        fig.legend(handles.values(), handles.keys(), loc="outside lower center",
                   ncol=len(handles), frameon=False)
    else:
        axes[0][0].text(0.5, 0.5, "no records", ha="center", va="center",
                        transform=axes[0][0].transAxes)
    fig.suptitle("q(t) with and without the true states")
    return fig


@for_readers
def fig_label_free_scatter(metrics: Sequence[dict[str, Any]]) -> plt.Figure:
    """T_cross from label-free labels against the oracle's, one panel per labelling; a
    marker per group, blue for affine models and green for state-dependent ones; models
    that never cross sit on the frame's edge."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig, axes = plt.subplots(1, 2, figsize=(PAGE_WIDTH, 4.2), sharex=True, sharey=True,
                             layout="constrained")
    T_all = [v for m in metrics for v in m["T_cross"].values() if v is not None]
    edge = 2 * max(T_all) if T_all else 2.0
    groups = list(dict.fromkeys(m["group"] for m in metrics))
    markers = dict(zip(groups, "os^vD<>p*h"))
    for ax, method in zip(axes, ("decoded", "clusters")):
        for group in groups:
            sel = [m for m in metrics if m["group"] == group]
            x = [m["T_cross"]["oracle"] or edge for m in sel]
            y = [m["T_cross"][method] or edge for m in sel]
            c = [_AFFINE if m["is_affine"] else _STATE_DEPENDENT for m in sel]
            ax.scatter(x, y, c=c, marker=markers[group], s=22, alpha=0.7)
        ax.plot([1, edge], [1, edge], color="grey", lw=0.8, ls=":")
        ax.axvline(edge, color="grey", lw=0.5)
        ax.axhline(edge, color="grey", lw=0.5)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("T_cross, true states")
        ax.set_title(f"labels: {method}")
    axes[0].set_ylabel("T_cross, label-free (edge: never)")
    keys = ([Line2D([], [], ls="", marker=markers[g], color="0.3") for g in groups]
            + [Patch(color=c) for c in (_AFFINE, _STATE_DEPENDENT)])  # colour, not a marker
    fig.legend(keys, groups + ["affine", "state-dependent"], loc="outside lower center",
               ncol=min(8, len(keys)), frameon=False)
    fig.suptitle("Label-free against true crossing times")
    return fig


@for_readers
def fig_warning(errors: Sequence[dict[str, Any]]) -> plt.Figure:
    """Predicted against measured m_p, one panel per labelling (fit and calibration as given)."""
    fig, axes = plt.subplots(1, len(errors), figsize=(PAGE_WIDTH, 3.4), squeeze=False,
                             sharey=True, layout="constrained")
    for ax, e in zip(axes[0], errors):
        pm = e.get("per_model") or []
        x = [p["m_p"] for p in pm]
        ax.scatter(x, [p["raw"] for p in pm], s=20, color="#1f77b4", label="raw")
        ax.scatter(x, decode_floats(p["loo"] for p in pm), s=20, color="#ff7f0e",
                   marker="x", label="calibrated (leave-one-out)")
        lim = [50, 1100]
        ax.plot(lim, lim, color="grey", lw=0.8, ls=":", label="predicted = measured")
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log_ticks(ax)  # about a decade: minor labels would overlap
        ax.set_xlabel("measured m_p")
        ax.set_title(f"{e['method']} labels (n = {e['n']})")
    axes[0][0].set_ylabel("m_p predicted from t ≤ 60")
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="outside lower center", ncol=3,
               frameon=False)
    fig.suptitle("The online warning against the measured m_p")
    return fig


# Colours for a series whose model colour another series of the same figure already has
# (the palette repeats every ten models): dark enough to read beside the palette's.
SPARE_COLOURS = ("#000000", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173",
                 "#3182bd", "#e6550d", "#31a354", "#756bb1")


def distinct_colours(colours: Sequence[str]) -> list[str]:
    """``colours`` (one per series, in drawing order) with every repeat replaced by the first
    :data:`SPARE_COLOURS` entry that no series uses, so that no two series of one figure
    share a colour; a series keeps its own colour wherever it is the first to have it."""
    taken: set[str] = set()
    out = []
    for c in colours:
        if c in taken:
            c = next((s for s in SPARE_COLOURS if s not in taken and s not in colours), None)
            if c is None:
                raise ValueError(f"more series ({len(colours)}) than distinct colours "
                                 f"({len(set(colours) | set(SPARE_COLOURS))})")
        taken.add(c)
        out.append(c)
    return out


@for_readers
def fig_q_recovery(records: Sequence[dict[str, Any]], solid: Sequence[str],
                   tau: float = 0.5) -> plt.Figure:
    """q(t) and perturbation recovery along U of diagnostics records, one line per record
    in its model's colour and marker (:func:`series_style`; a colour another record of the
    figure already has is replaced, :func:`distinct_colours`, so no two lines share one);
    the models named in ``solid`` drawn solid, the others dashed (the caption says which is
    which); values of q that are zero up to rounding lie below the frame (:func:`_q_floor`).
    One legend below the panels."""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(PAGE_WIDTH, 4.4), layout="constrained")
    others = unknown_series([r["config"]["run"] for r in records])
    styles = [series_style(r["config"]["run"], others) for r in records]
    colours = distinct_colours([st["color"] for st in styles])
    curves = []
    for r, st, colour in zip(records, styles, colours):
        m, cfg = r["metrics"], r["config"]["run"]
        style = {"color": colour, "marker": st["marker"], "ms": 4, "markevery": 0.1,
                 "ls": "-" if cfg["model"] in solid else "--"}
        t, q = stored_curve(m, "q")
        ax.plot(t, q, lw=1.3, label=run_name(cfg), **style)
        curves.append((np.asarray(t), np.asarray(q, dtype=float)))
        rec = decode_floats(m["recovery"]["U"])
        bx.plot(np.arange(rec.size), rec, lw=1.3, **style)
    ax.axhline(tau, color="grey", lw=0.8, ls=":")
    for a in (ax, bx):
        a.set_yscale("log")
    if _q_floor(curves) is not None:
        ax.set_ylim(bottom=_q_floor(curves))
    ax.set_xscale("log")
    ax.set_xlabel("t")
    ax.set_ylabel("q(t)")
    ax.set_title("distinguishability ratio")
    bx.axhline(1.0, color="k", lw=0.8, ls=":")
    bx.set_xlabel("steps after a perturbation inside U")
    bx.set_ylabel(r"$\|e_t\| / \|e_0\|$")
    bx.set_title("recovery along U")
    if records:
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=3,
                   frameon=False)
    fig.suptitle("Error growth and recovery on S3")
    return fig


@for_readers
def fig_figure4_placement(background: Sequence[dict[str, Any]],
                          highlight: Sequence[dict[str, Any]]) -> plt.Figure:
    """Figure 4's axes (m_p, T_cross; log-log): the qualifying affine runs of the Figure 4
    sweep in grey, and the ``highlight`` diagnostics records (any model with both values)
    in their models' colours."""
    fig, ax = plt.subplots(figsize=(PAGE_WIDTH * 0.75, 4.4), layout="constrained")
    pts = [(r["metrics"]["m_p"], r["metrics"]["T_cross"]) for r in background]
    if pts:
        ax.scatter(*zip(*pts), s=10, color="0.8", label=f"Figure 4 sweep (n = {len(pts)})")
    cfgs = {r["config"]["run"]["model"]: r["config"]["run"] for r in highlight}
    others = unknown_series(list(cfgs.values()))
    shown = list(pts)
    for model in sorted(cfgs):
        sel = [(r["metrics"]["m_p"], r["metrics"]["T_cross"]) for r in highlight
               if r["config"]["run"]["model"] == model
               and r["metrics"]["m_p"] and r["metrics"]["T_cross"]]
        if sel:
            st = series_style(cfgs[model], others)
            ax.scatter(*zip(*sel), s=30, marker=st["marker"], color=st["color"],
                       label=run_name(cfgs[model]))
            shown += sel
    if shown:
        lo = min(min(p) for p in shown)
        hi = max(max(p) for p in shown)
        ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8, ls=":", label="T_cross = m_p")
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log_ticks(ax)
        ax.legend(loc="upper left")
    else:
        ax.text(0.5, 0.5, "no run with both m_p and T_cross", ha="center",
                va="center", transform=ax.transAxes)
    ax.set_xlabel("m_p")
    ax.set_ylabel("T_cross (τ = 1/2)")
    ax.set_title("Where the Householder models fall in Figure 4")
    return fig
