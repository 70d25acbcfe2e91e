"""Figures 1 to 4 of the error-control paper, from ``tracking_diagnostics`` records.

Each function takes records (never models) and a ``scale`` string, and says the profile
and scale in its title. Affine models are drawn with dashed lines, state-dependent ones
with solid lines.
"""
from __future__ import annotations

from typing import Any, Sequence

import matplotlib.pyplot as plt
import numpy as np

from sst_core.figures.common import plain_log_ticks, suptitle
from sst_core.spec.paper_values import FIGURE4 as PAPER
from sst_core.store.codec import curve_value, decode_floats, stored_curve


def _label(r: dict[str, Any]) -> str:
    """A diagnostics record's architecture: model (or phi), L2 for two layers."""
    from sst_core.reports.paper1 import run_label

    return run_label(r["config"]["run"])


def _style(r: dict[str, Any]) -> dict[str, Any]:
    return {"ls": "--" if r["metrics"]["is_affine"] else "-", "lw": 1.4}


def fig_recovery(records: Sequence[dict[str, Any]], scale: str) -> plt.Figure:
    """Figure 1: ||e_t|| / ||e_0|| after a perturbation of the recurrent state at t0."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.0), sharey=True)
    for ax, direction in zip(axes, ("random", "U")):
        for r in records:
            y = decode_floats(r["metrics"]["recovery"][direction])
            ax.plot(np.arange(y.size), y, label=_label(r), **_style(r))
        ax.set_yscale("log")
        ax.axhline(1.0, color="k", lw=0.8, ls=":")
        ax.set_xlabel(f"steps after the perturbation (at t0 = {records[0]['metrics']['recovery_t0']})"
                      if records else "steps after the perturbation")
        ax.set_title("random direction" if direction == "random" else "direction inside U")
    axes[0].set_ylabel(r"$\|e_t\| / \|e_0\|$")
    axes[1].legend(fontsize=7, ncol=2, loc="best")
    suptitle(fig, f"Figure 1: perturbation recovery on S3 (dashed: affine; {scale})", fontsize=10)
    fig.tight_layout()
    return fig


def fig_q_trajectories(records: Sequence[dict[str, Any]], scale: str, tau: float = 0.5) -> plt.Figure:
    """Figure 2: q(t) up to the rollout length, with T_cross (dot) and m_p (triangle)."""
    n = len(records)
    cols = min(n, 3) or 1
    rows = max(1, -(-n // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 2.7 * rows), squeeze=False,
                             sharey=True)
    for ax, r in zip(axes.flat, records):
        m = r["metrics"]
        t, q = stored_curve(m, "q")
        # q(1) = 0 for every model (one token fixes the state): start at t = 2
        ax.plot(t[1:], q[1:], color="C0", lw=1.2, label="q = R/M")
        ax.plot(t[1:], stored_curve(m, "q_sqrt")[1][1:], color="C2", lw=1.0, alpha=0.8,
                label=r"$\sqrt{R}/\sqrt{M}$")
        ax.axhline(tau, color="k", lw=0.8, ls="--")
        ax.axhline(1.0, color="grey", lw=0.8, ls=":")
        if m["T_cross"] is not None:
            ax.plot([m["T_cross"]], [curve_value(t, q, m["T_cross"])], "o", color="C3",
                    label=f"T_cross = {m['T_cross']}")
        if m["m_p"] is not None and m["m_p"] <= t[-1]:
            ax.plot([m["m_p"]], [curve_value(t, q, m["m_p"])], "v", color="k",
                    label=f"m_p = {m['m_p']}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{_label(r)}: {m['failure_mode']}", fontsize=9)
        ax.set_xlabel("t")
        ax.legend(fontsize=6, loc="lower right")
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    axes[0][0].set_ylabel("q(t)")
    suptitle(fig, f"Figure 2: distinguishability ratio q(t) (dashed: tau = {tau}; dotted: 1; {scale})",
                 fontsize=10)
    fig.tight_layout()
    return fig


def fig_q_split(records: Sequence[dict[str, Any]], scale: str) -> plt.Figure:
    """Figure 3: q_U (spread inside U) against q_U_perp (spread outside U).

    Top row: read through ``W_out`` (the paper's definition); bottom row: without it
    (``W = I``, both ratios then add up to the unweighted q), where the two parts of a
    residual cannot cancel each other.
    """
    n = max(len(records), 1)
    has_identity = all("q_U_identity" in r["metrics"] for r in records)
    rows = 2 if records and has_identity else 1
    fig, axes = plt.subplots(rows, n, figsize=(2.7 * n, 2.6 * rows), squeeze=False)
    for j, r in enumerate(records):
        m = r["metrics"]
        for i, (ku, kp, what) in enumerate([("q_U", "q_U_perp", "through W_out"),
                                            ("q_U_identity", "q_U_perp_identity", "W = I")][:rows]):
            ax = axes[i][j]
            (t, qu), qp = stored_curve(m, ku), stored_curve(m, kp)[1]
            qu[0] = qp[0] = np.nan  # t = 1: zero spread by construction
            ax.plot(t, qu, color="C3", lw=1.3, label=r"$q_U$")
            ax.plot(t, qp, color="C0", lw=1.3, label=r"$q_{U^\perp}$")
            if m["m_p"] is not None and m["m_p"] <= t[-1]:
                ax.axvline(m["m_p"], color="k", lw=0.8, ls=":", label=f"m_p = {m['m_p']}")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{_label(r)} ({what})", fontsize=9)
            ax.set_xlabel("t")
            ax.legend(fontsize=7, loc="best")
        axes[0][j].set_ylabel("q_U, q_U_perp")
    suptitle(fig, f"Figure 3: spread inside and outside the symbolic subspace U ({scale})")
    fig.tight_layout()
    return fig


def fig_tcross_vs_mp(records: Sequence[dict[str, Any]], stats: dict[str, Any], scale: str,
                     group: str = "S3") -> plt.Figure:
    """Figure 4: log T_cross against log m_p over the selected affine runs on ``group``
    (the paper's: S3), and q at m_p."""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4.0))
    # one colour per model, one marker per depth: an architecture is a (model, depth)
    models = sorted({r["config"]["run"]["model"] for r in records})
    for label in sorted({_label(r) for r in records}):
        sel = [r for r in records if _label(r) == label]
        run = sel[0]["config"]["run"]
        ax.scatter([r["metrics"]["m_p"] for r in sel], [r["metrics"]["T_cross"] for r in sel],
                   s=18, color=f"C{models.index(run['model']) % 10}",
                   marker="o" if run["n_layers"] == 1 else "^", label=label)
    if records:
        lo = min(min(r["metrics"]["m_p"], r["metrics"]["T_cross"]) for r in records)
        hi = max(max(r["metrics"]["m_p"], r["metrics"]["T_cross"]) for r in records)
        ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8, ls=":", label="T_cross = m_p")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("m_p")
    ax.set_ylabel("T_cross (tau = 1/2)")
    r_text = f"no correlation: {stats.get('why_no_r', 'too few runs')}, n = {stats.get('n', 0)}" \
        if stats.get("r") is None else \
        f"r = {stats['r']:.3f}, p = {stats['p']:.2g}, n = {stats['n']}"
    ax.set_title(r_text + f"  (paper: r = {PAPER['r']}, n = {PAPER['n']})", fontsize=9)
    if records:
        ax.legend(fontsize=7, loc="best")
        plain_log_ticks(ax)
    else:
        ax.text(0.5, 0.5, "no run qualifies at this scale", ha="center", va="center",
                transform=ax.transAxes)
    q_at = [r["metrics"]["q_at_m_p"] for r in records if r["metrics"]["q_at_m_p"] is not None]
    if q_at:
        bx.hist(q_at, bins=min(20, max(5, len(q_at))), color="C0", alpha=0.7)
    if stats.get("q_median") is not None:
        bx.axvline(stats["q_median"], color="C3", lw=1.2, label=f"median {stats['q_median']:.2f}")
        bx.axvspan(stats["q_lo"], stats["q_hi"], color="C3", alpha=0.15, label="bootstrap 95%")
    bx.axvline(PAPER["q_median"], color="k", lw=1.0, ls="--",
               label=f"paper: {PAPER['q_median']} [{PAPER['q_lo']}, {PAPER['q_hi']}]")
    bx.set_xlabel("q at m_p")
    bx.set_ylabel("runs")
    bx.legend(fontsize=7)
    suptitle(fig, f"Figure 4: crossing time against max-passing length, affine {group} runs ({scale})",
                 fontsize=10)
    fig.tight_layout()
    return fig
