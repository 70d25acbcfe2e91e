"""Figures 1 to 4 of the error-control paper, from ``tracking_diagnostics`` records.

Each function of Figures 1 to 4 takes records (never models). A model keeps the colour and
marker of :func:`sst_core.figures.common.series_style`; Figure 1 gives each model a panel
and shades the affine models'. The theory chapter's two figures
(:func:`fig_tanh_contrast`, :func:`fig_corollary1_drift`) draw
:mod:`sst_core.theory.error_control`'s small examples.
"""
from __future__ import annotations

import textwrap
from typing import Any, Sequence

import matplotlib.pyplot as plt
import numpy as np

from sst_core.figures.common import (MIN_FONT, PAGE_WIDTH, for_readers, plain_log_ticks,
                                     series_index, series_key, series_style, unknown_series)
from sst_core.spec.names import run_name
from sst_core.spec.paper_values import FIGURE4 as PAPER
from sst_core.store.codec import curve_value, decode_floats, stored_curve
from sst_core.theory.error_control import tanh_fixed_point_weights, tanh_step


def _label(r: dict[str, Any]) -> str:
    """A diagnostics record's architecture, as the papers name it (2 layers said)."""
    return run_name(r["config"]["run"])


# the background of an affine model's panel in Figure 1
AFFINE_SHADE = "0.93"


@for_readers
def fig_recovery(records: Sequence[dict[str, Any]], cols: int = 4) -> plt.Figure:
    """Figure 1: ||e_t|| / ||e_0|| after a perturbation of the recurrent state at t0, one
    small panel per record (in the order of ``records``, ``cols`` to a row), each with the
    random direction and the direction inside U on a log axis of its own. The axis spans
    at least a decade either side of 1 (dotted), so an error that shrinks by a small
    factor stands apart from one that stays at 1; affine models' panels are shaded. The
    legend below the panels."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import LogLocator

    n = len(records)
    cols = max(1, min(cols, n))
    rows = max(1, -(-n // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(PAGE_WIDTH, 1.7 * rows + 1.0),
                             squeeze=False, sharex=True, layout="constrained")
    colours = {"random": "C0", "U": "C3"}
    for ax, r in zip(axes.flat, records):
        ys = {d: decode_floats(r["metrics"]["recovery"][d]) for d in colours}
        for d, y in ys.items():
            ax.plot(np.arange(y.size), y, color=colours[d], lw=1.4)
        finite = np.concatenate([y[np.isfinite(y) & (y > 0)] for y in ys.values()])
        lo = min(0.1, finite.min() / 2) if finite.size else 0.1
        hi = max(10.0, finite.max() * 2) if finite.size else 10.0
        ax.set_yscale("log")
        ax.set_ylim(lo, hi)
        ax.yaxis.set_major_locator(LogLocator(numticks=4))
        ax.axhline(1.0, color="k", lw=0.8, ls=":")
        ax.set_title(_label(r).replace(", ", ",\n"), fontsize=MIN_FONT)  # depth below
        if r["metrics"]["is_affine"]:
            ax.set_facecolor(AFFINE_SHADE)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("steps")
    for ax in axes[:, 0]:
        ax.set_ylabel(r"$\|e_t\| / \|e_0\|$")
    key = [(Line2D([], [], color=colours["random"], lw=1.4), "random direction"),
           (Line2D([], [], color=colours["U"], lw=1.4), "direction inside U"),
           (Line2D([], [], color="k", lw=0.8, ls=":"), "1 (no change)"),
           (Patch(facecolor=AFFINE_SHADE, edgecolor="0.6"), "affine model")]
    fig.legend(*zip(*key), loc="outside lower center", ncol=4, frameon=False)
    fig.suptitle("Recovery after a perturbation of the state, S3")
    return fig


@for_readers
def fig_q_trajectories(records: Sequence[dict[str, Any]], tau: float = 0.5,
                       modes: Sequence[str] | None = None) -> plt.Figure:
    """Figure 2: q(t) up to the rollout length, with T_cross (dot) and m_p (triangle); the
    legend, for every panel, below them. ``modes``: each record's failure mode for its
    panel's title (the report's, :func:`sst_core.reports.error_control.start_mode`); None:
    the model's name alone."""
    from matplotlib.lines import Line2D

    n = len(records)
    if modes is not None and len(modes) != n:
        raise ValueError(f"modes has {len(modes)} entries for {n} records; give one each")
    cols = min(n, 3) or 1
    rows = max(1, -(-n // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(PAGE_WIDTH, 2.3 * rows + 0.9),
                             squeeze=False, sharey=True, layout="constrained")
    for i, (ax, r) in enumerate(zip(axes.flat, records)):
        m = r["metrics"]
        t, q = stored_curve(m, "q")
        # q(1) = 0 for every model (one token fixes the state): start at t = 2
        ax.plot(t[1:], q[1:], color="C0", lw=1.2)
        ax.plot(t[1:], stored_curve(m, "q_sqrt")[1][1:], color="C2", lw=1.0, alpha=0.8)
        ax.axhline(tau, color="k", lw=0.8, ls="--")
        ax.axhline(1.0, color="grey", lw=0.8, ls=":")
        if m["T_cross"] is not None:
            ax.plot([m["T_cross"]], [curve_value(t, q, m["T_cross"])], "o", color="C3")
        if m["m_p"] is not None and m["m_p"] <= t[-1]:
            ax.plot([m["m_p"]], [curve_value(t, q, m["m_p"])], "v", color="k")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(_label(r) if modes is None else f"{_label(r)}: {modes[i]}")
        ax.set_xlabel("t")
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    axes[0][0].set_ylabel("q(t)")
    key = [(Line2D([], [], color="C0", lw=1.2), "q = R/M"),
           (Line2D([], [], color="C2", lw=1.0), "√R / √M"),
           (Line2D([], [], color="k", lw=0.8, ls="--"), f"τ = {tau}"),
           (Line2D([], [], color="grey", lw=0.8, ls=":"), "1"),
           (Line2D([], [], color="C3", marker="o", ls=""), "T_cross"),
           (Line2D([], [], color="k", marker="v", ls=""), "m_p")]
    fig.legend(*zip(*key), loc="outside lower center", ncol=6, frameon=False)
    fig.suptitle("Distinguishability ratio q(t)")
    return fig


@for_readers
def fig_q_split(records: Sequence[dict[str, Any]]) -> plt.Figure:
    """Figure 3: q_U (spread inside U) against q_U_perp (spread outside U).

    Top row: read through ``W_out`` (the paper's definition); bottom row: without it
    (``W = I``, both ratios then add up to the unweighted q), where the two parts of a
    residual cannot cancel each other. One legend, below the panels.
    """
    from matplotlib.lines import Line2D

    n = max(len(records), 1)
    has_identity = all("q_U_identity" in r["metrics"] for r in records)
    rows = 2 if records and has_identity else 1
    fig, axes = plt.subplots(rows, n, figsize=(min(PAGE_WIDTH, 2.6 * n), 2.4 * rows + 0.8),
                             squeeze=False, layout="constrained")
    for j, r in enumerate(records):
        m = r["metrics"]
        for i, (ku, kp, what) in enumerate([("q_U", "q_U_perp", "through W_out"),
                                            ("q_U_identity", "q_U_perp_identity", "W = I")][:rows]):
            ax = axes[i][j]
            (t, qu), qp = stored_curve(m, ku), stored_curve(m, kp)[1]
            qu[0] = qp[0] = np.nan  # t = 1: zero spread by construction
            ax.plot(t, qu, color="C3", lw=1.3)
            ax.plot(t, qp, color="C0", lw=1.3)
            if m["m_p"] is not None and m["m_p"] <= t[-1]:
                ax.axvline(m["m_p"], color="k", lw=0.8, ls=":")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(textwrap.fill(_label(r), 16) + f"\n{what}", fontsize="medium")
            ax.set_xlabel("t")
        axes[0][j].set_ylabel("q_U, q_U_perp" if j == 0 else "")
    key = [(Line2D([], [], color="C3", lw=1.3), "$q_U$ (inside U)"),
           (Line2D([], [], color="C0", lw=1.3), "$q_{U^\\perp}$ (outside U)"),
           (Line2D([], [], color="k", lw=0.8, ls=":"), "m_p")]
    fig.legend(*zip(*key), loc="outside lower center", ncol=3, frameon=False)
    fig.suptitle("Spread inside and outside the symbolic subspace U")
    return fig


# Figure 4's m_p takes only the evaluated lengths: each point is moved sideways by a
# factor drawn uniformly in [1 / (1 + MP_JITTER), 1 + MP_JITTER] (seeded, so the figure is
# the same at every build) so that runs at one m_p do not hide each other
MP_JITTER = 0.06


@for_readers
def fig_tcross_vs_mp(records: Sequence[dict[str, Any]], stats: dict[str, Any],
                     group: str = "S3") -> plt.Figure:
    """Figure 4: log T_cross against log m_p over the selected affine runs on ``group``
    (the paper's: S3), each m_p spread sideways by :data:`MP_JITTER`; and the distribution
    of q at m_p on a log axis beside the paper's median and interval; the legend of the
    scatter below the panels."""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(PAGE_WIDTH, 4.4), layout="constrained")
    others = unknown_series([r["config"]["run"] for r in records])
    def order(r: dict[str, Any]) -> tuple[int, int]:
        return (series_index(series_key(r["config"]["run"]), others),
                int(r["config"]["run"].get("n_layers", 1)))

    rng = np.random.default_rng(0)
    jitter = np.exp(rng.uniform(-1, 1, len(records)) * np.log1p(MP_JITTER))  # (n,)
    shift = {id(r): f for r, f in zip(records, jitter)}
    for label in sorted({_label(r) for r in records},
                        key=lambda lab: min(order(r) for r in records if _label(r) == lab)):
        sel = [r for r in records if _label(r) == label]
        style = series_style(sel[0]["config"]["run"], others)
        ax.scatter([r["metrics"]["m_p"] * shift[id(r)] for r in sel],
                   [r["metrics"]["T_cross"] for r in sel], s=18, alpha=0.75,
                   color=style["color"], marker=style["marker"], label=label)
    if records:
        lo = min(min(r["metrics"]["m_p"], r["metrics"]["T_cross"]) for r in records)
        hi = max(max(r["metrics"]["m_p"], r["metrics"]["T_cross"]) for r in records)
        ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8, ls=":", label="T_cross = m_p")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("m_p")
    ax.set_ylabel("T_cross (τ = 1/2)")
    r_text = f"no r ({stats.get('why_no_r', 'too few runs')}), n = {stats.get('n', 0)}" \
        if stats.get("r") is None else f"r = {stats['r']:.3f}, n = {stats['n']}"
    ax.set_title(textwrap.fill(f"ours: {r_text}", 42) + f"\npaper: r = {PAPER['r']}, n = {PAPER['n']}")
    if records:
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=3,
                   frameon=False)
        plain_log_ticks(ax)
    else:
        ax.text(0.5, 0.5, "no run qualifies", ha="center", va="center",
                transform=ax.transAxes)
    q_at = [r["metrics"]["q_at_m_p"] for r in records if r["metrics"]["q_at_m_p"] is not None]
    if any(v <= 0 for v in q_at):
        raise ValueError("q at m_p must be > 0 for the log axis; got "
                         f"{min(q_at)!r}")
    if q_at:
        lo = min(min(q_at), PAPER["q_lo"]) / 1.2
        hi = max(max(q_at), PAPER["q_hi"]) * 1.2
        bins = np.geomspace(lo, hi, min(30, max(6, len(q_at))) + 1)  # (n_bins + 1,)
        bx.hist(q_at, bins=bins, color="C0", alpha=0.7)
        bx.set_xscale("log")
    if stats.get("q_median") is not None:
        bx.axvline(stats["q_median"], color="C3", lw=1.2, label=f"ours: median {stats['q_median']:.2f}")
        bx.axvspan(stats["q_lo"], stats["q_hi"], color="C3", alpha=0.15, label="bootstrap 95%")
    bx.axvline(PAPER["q_median"], color="k", lw=1.0, ls="--",
               label=f"paper: {PAPER['q_median']} [{PAPER['q_lo']}, {PAPER['q_hi']}]")
    bx.axvspan(PAPER["q_lo"], PAPER["q_hi"], facecolor="none", edgecolor="k", hatch="//",
               lw=0.0, alpha=0.5, zorder=3, label="paper's 95%")
    bx.set_xlabel("q at m_p")
    bx.set_ylabel("runs")
    bx.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    bx.set_title("q at m_p")
    fig.suptitle(f"Crossing time against max-passing length, affine {group} runs")
    return fig


@for_readers
def fig_tanh_contrast(c: float = 0.8, offset: float = 0.15, steps: int = 12) -> plt.Figure:
    """One tanh unit that fixes -c and c exactly (:func:`tanh_fixed_point_weights`) beside
    the only affine map through both fixed points, the identity, with an error that starts at
    ``c + offset`` iterated ``steps`` times under the tanh unit (a cobweb of dots)."""
    w, b = tanh_fixed_point_weights(-c, c)
    h = np.linspace(-1, 1, 400)  # (400,)
    fig, ax = plt.subplots(figsize=(5.2, 4), layout="constrained")
    ax.plot(h, tanh_step(h, w, b), label=r"$F_e(h) = \tanh(wh)$ (state-dependent)")
    ax.plot(h, h, color="grey", ls="--", label="affine map fixing both: identity")
    ax.plot([-c, c], [-c, c], "ko")
    err = [c + offset]
    for _ in range(steps):
        err.append(float(tanh_step(err[-1], w, b)))
    ax.plot(err[:-1], err[1:], "C3.", ms=5, label=f"an error at c + {offset:g}, iterated")
    ax.set_xlabel("h")
    ax.set_ylabel("F(h)")
    ax.legend(loc="upper left", frameon=False)
    return fig


@for_readers
def fig_corollary1_drift(err: Sequence[float], threshold: float, T_pred: float) -> plt.Figure:
    """Corollary 1 simulated: the U-error ``err`` (one value per step) against the threshold
    tau M it crosses, and the crossing time ``T_pred`` the closed form predicts."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4), layout="constrained")
    ax.plot(np.asarray(err, dtype=float), label=r"$\|e_U(t)\|$ (simulated, $W = I$)")
    ax.axhline(threshold, color="k", ls="--", lw=0.8, label=r"$\tau M$")
    ax.axvline(T_pred, color="C3", lw=0.8, label=f"predicted crossing, t = {T_pred:.1f}")
    ax.set_xlabel("t")
    ax.set_ylabel(r"$\|e_U(t)\|$")
    ax.legend(loc="upper left", frameon=False)
    return fig
