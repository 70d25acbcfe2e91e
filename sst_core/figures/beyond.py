"""Figures of the "Beyond the papers" chapters, from stored records only.

Every function takes records (metrics dicts or whole records) and a ``scale`` string and
says the profile and scale in its title.
"""
from __future__ import annotations

from typing import Any, Sequence

import matplotlib.pyplot as plt
import numpy as np

from sst_core.figures.common import plain_log_ticks, suptitle
from sst_core.store.codec import decode_floats, read_curve, stored_curve

_COLOURS = {"oracle": "k", "decoded": "C0", "clusters": "C1"}


def _label(r: dict[str, Any]) -> str:
    cfg = r["config"]["run"]
    return f"{cfg['model']} on {cfg['group']}, lr {cfg['lr']:g}"


def fig_label_free_curves(records: Sequence[dict[str, Any]], scale: str,
                          tau: float = 0.5) -> plt.Figure:
    """q(t) with oracle, decoded and clustered labels, one panel per record (e.g.
    :func:`sst_core.reports.beyond.label_free_examples`)."""
    recs = list(records)
    cols = min(3, max(1, len(recs)))
    rows = max(1, -(-len(recs) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.8 * rows), squeeze=False,
                             sharey=True)
    for ax, r in zip(axes.flat, recs):
        m = r["metrics"]
        for name, q in m["q"].items():
            t, y = read_curve(q, m.get("curve_t"))
            ok = np.isfinite(y)  # the clusters' q exists on a grid of times only
            ax.plot(t[ok], y[ok], color=_COLOURS.get(name), lw=1.2,
                    ls="-" if name == "oracle" else "--", label=name)
        ax.axhline(tau, color="grey", lw=0.8, ls=":")
        if m["m_p"]:
            ax.axvline(m["m_p"], color="C3", lw=0.8, label="m_p")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(_label(r), fontsize=8)
        ax.set_xlabel("t")
    for ax in axes.flat[len(recs):]:
        ax.axis("off")
    axes[0][0].set_ylabel("q(t)")
    if recs:
        axes.flat[0].legend(fontsize=7)
    else:
        axes[0][0].text(0.5, 0.5, "no records at this scale", ha="center", va="center",
                        transform=axes[0][0].transAxes)
    suptitle(fig, f"q(t) with and without the true states ({scale})", fontsize=10)
    fig.tight_layout()
    return fig


def fig_label_free_scatter(metrics: Sequence[dict[str, Any]], scale: str) -> plt.Figure:
    """T_cross from label-free labels against the oracle's; models that never cross sit on
    the frame's edge (marked 'never')."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.0), sharex=True, sharey=True)
    T_all = [v for m in metrics for v in m["T_cross"].values() if v is not None]
    edge = 2 * max(T_all) if T_all else 2.0
    for ax, method in zip(axes, ("decoded", "clusters")):
        groups = list(dict.fromkeys(m["group"] for m in metrics))
        for group, marker in zip(groups, "os^vD<>p*h"):
            sel = [m for m in metrics if m["group"] == group]
            x = [m["T_cross"]["oracle"] or edge for m in sel]
            y = [m["T_cross"][method] or edge for m in sel]
            c = ["C2" if not m["is_affine"] else "C0" for m in sel]
            ax.scatter(x, y, c=c, marker=marker, s=22, label=group, alpha=0.8)
        ax.plot([1, edge], [1, edge], color="grey", lw=0.8, ls=":")
        ax.axvline(edge, color="grey", lw=0.5)
        ax.axhline(edge, color="grey", lw=0.5)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("T_cross, oracle labels")
        ax.set_title(f"{method} labels (edge = never crosses)", fontsize=9)
    axes[0].set_ylabel("T_cross, label-free")
    axes[0].legend(fontsize=7, title="group (blue: affine, green: not)", title_fontsize=7)
    suptitle(fig, f"Label-free against oracle crossing times ({scale})", fontsize=10)
    fig.tight_layout()
    return fig


def fig_warning(errors: Sequence[dict[str, Any]], scale: str) -> plt.Figure:
    """Predicted against measured m_p, one panel per labelling (fit and calibration as given)."""
    fig, axes = plt.subplots(1, len(errors), figsize=(3.6 * max(1, len(errors)), 3.6),
                             squeeze=False, sharey=True)
    for ax, e in zip(axes[0], errors):
        pm = e.get("per_model") or []
        x = [p["m_p"] for p in pm]
        ax.scatter(x, [p["raw"] for p in pm], s=20, label="raw")
        ax.scatter(x, decode_floats(p["loo"] for p in pm), s=20,
                   marker="x", label="calibrated (LOO)")
        lim = [50, 1100]
        ax.plot(lim, lim, color="grey", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log_ticks(ax)  # about a decade: minor labels would overlap
        ax.set_xlabel("measured m_p")
        ax.set_title(f"{e['method']} labels, {e['fit']} fit (n = {e['n']})", fontsize=9)
    axes[0][0].set_ylabel("predicted from t <= 60")
    axes[0][0].legend(fontsize=7)
    suptitle(fig, f"The online warning: predicted against measured m_p ({scale})", fontsize=10)
    fig.tight_layout()
    return fig


def fig_q_recovery(records: Sequence[dict[str, Any]], scale: str, solid: Sequence[str],
                   title: str, tau: float = 0.5) -> plt.Figure:
    """q(t) and perturbation recovery along U of diagnostics records, one line per record;
    the models named in ``solid`` drawn solid, the others dashed (``title`` says which is
    which)."""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8))
    for i, r in enumerate(records):
        m = r["metrics"]
        name = r["config"]["run"]["model"]
        ls = "-" if name in solid else "--"
        t, q = stored_curve(m, "q")
        ax.plot(t, q, ls=ls, color=f"C{i % 10}", label=name)
        rec = decode_floats(m["recovery"]["U"])
        bx.plot(np.arange(rec.size), rec, ls=ls, color=f"C{i % 10}", label=name)
    ax.axhline(tau, color="grey", lw=0.8, ls=":")
    for a in (ax, bx):
        a.set_yscale("log")
    ax.set_xscale("log")
    ax.set_xlabel("t")
    ax.set_ylabel("q(t)")
    bx.axhline(1.0, color="k", lw=0.8, ls=":")
    bx.set_xlabel("steps after a perturbation inside U")
    bx.set_ylabel(r"$\|e_t\| / \|e_0\|$")
    if records:
        ax.legend(fontsize=7)
    suptitle(fig, f"{title} ({scale})", fontsize=10)
    fig.tight_layout()
    return fig


def fig_figure4_placement(background: Sequence[dict[str, Any]],
                          highlight: Sequence[dict[str, Any]], scale: str) -> plt.Figure:
    """Figure 4's axes (m_p, T_cross; log-log): the qualifying affine runs of the Figure 4
    sweep in grey, and the ``highlight`` diagnostics records (any model with both values)
    in colour, one colour per model."""
    fig, ax = plt.subplots(figsize=(6, 4.2))
    pts = [(r["metrics"]["m_p"], r["metrics"]["T_cross"]) for r in background]
    if pts:
        ax.scatter(*zip(*pts), s=12, color="0.7", label=f"Figure 4 sweep (n = {len(pts)})")
    models = sorted({r["config"]["run"]["model"] for r in highlight})
    shown = list(pts)
    for i, model in enumerate(models):
        sel = [(r["metrics"]["m_p"], r["metrics"]["T_cross"]) for r in highlight
               if r["config"]["run"]["model"] == model
               and r["metrics"]["m_p"] and r["metrics"]["T_cross"]]
        if sel:
            ax.scatter(*zip(*sel), s=30, marker="D", color=f"C{i % 10}", label=model)
            shown += sel
    if shown:
        lo = min(min(p) for p in shown)
        hi = max(max(p) for p in shown)
        ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8, ls=":", label="T_cross = m_p")
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log_ticks(ax)
        ax.legend(fontsize=7, loc="best")
    else:
        ax.text(0.5, 0.5, "no run with both m_p and T_cross at this scale", ha="center",
                va="center", transform=ax.transAxes)
    ax.set_xlabel("m_p")
    ax.set_ylabel("T_cross (tau = 1/2)")
    suptitle(fig, f"Where the non-diagonal trackers fall in Figure 4, S3 ({scale})", fontsize=10)
    fig.tight_layout()
    return fig
