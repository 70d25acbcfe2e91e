"""Figures of the chapter "Memory meets error control", from ``tracking_spectra`` records.

Each function takes records (never models); titles are short and in words (the scale is
the chapter's to say). One column per record (model, by the papers' names), the top row
about the per-token transitions ``A(x) = d h_t / d h_{t-1}``, the bottom row about the
return maps of state-preserving words; more than ``PER_ROW`` models wrap onto further pairs
of rows.
"""
from __future__ import annotations

from typing import Any, Sequence

import matplotlib.pyplot as plt
import numpy as np

from sst_core.figures.common import PAGE_WIDTH, for_readers
from sst_core.spec.names import run_name
from sst_core.store.codec import decode_floats

TOKEN_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2")
RETURN_COLOUR = "#d62728"


def _label(r: dict[str, Any]) -> str:
    """A panel's title: the model's name and its m_p ("lin.": a state-dependent model,
    whose spectra are those of its linearisation)."""
    m = r["metrics"]
    return (f"{run_name(r['config']['run'])}\nm_p {m['m_p'] or 'fail'}"
            + ("" if m["is_affine"] else " (lin.)"))


def _eigs(d: dict[str, Any]) -> np.ndarray:
    return decode_floats(d.get("eig_re", [])) + 1j * decode_floats(d.get("eig_im", []))


def _unit_circle(ax, mu: np.ndarray) -> None:
    t = np.linspace(0, 2 * np.pi, 400)
    ax.plot(np.cos(t), np.sin(t), color="0.5", lw=0.8)
    ax.axhline(0, color="0.85", lw=0.6)
    ax.axvline(0, color="0.85", lw=0.6)
    lim = 1.1 if mu.size == 0 else max(1.1, 1.05 * float(np.nanmax(np.abs(mu))))
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.set_xticks([-1, 0, 1])
    ax.set_yticks([-1, 0, 1])


PER_ROW = 5  # models side by side; more wrap onto further pairs of rows


def _grid(records, height: float):
    """One (top, bottom) pair of axes per record, ``PER_ROW`` records across the page."""
    n = max(len(records), 1)
    cols = min(n, PER_ROW)
    blocks = -(-n // cols)
    fig, axes = plt.subplots(2 * blocks, cols, figsize=(PAGE_WIDTH, height * 2 * blocks + 0.8),
                             squeeze=False, layout="constrained")
    pairs = [(axes[2 * (i // cols)][i % cols], axes[2 * (i // cols) + 1][i % cols])
             for i in range(n)]
    for i in range(n, blocks * cols):  # unused slots of the last block
        axes[2 * (i // cols)][i % cols].axis("off")
        axes[2 * (i // cols) + 1][i % cols].axis("off")
    if not records:
        for ax in axes.flat:
            ax.text(0.5, 0.5, "no records", ha="center", va="center",
                    transform=ax.transAxes)
            ax.axis("off")
    return fig, pairs


@for_readers
def fig_spectra(records: Sequence[dict[str, Any]]) -> plt.Figure:
    """Eigenvalues in the complex plane, unit circle drawn: per-token transitions (top,
    one colour per token, sampled over positions) and return maps of state-preserving
    words (bottom; the cross marks 1, where Theorem 1 puts dim U of them)."""
    from matplotlib.lines import Line2D

    fig, pairs = _grid(records, height=1.75)
    tokens: dict[int, str] = {}
    for (ax, bx), r in zip(pairs, records):
        m = r["metrics"]
        mu_all = []
        for i, tok in enumerate(m["tokens"]):
            mu = _eigs(tok)
            mu_all.append(mu)
            colour = TOKEN_COLOURS[i % len(TOKEN_COLOURS)]
            tokens.setdefault(tok["token"], colour)
            if mu.size:
                ax.scatter(mu.real, mu.imag, s=4, alpha=0.5, color=colour, zorder=3)
        _unit_circle(ax, np.concatenate(mu_all) if mu_all else np.zeros(0))
        ax.set_title(_label(r))
        rm = m["return_maps"]
        mu = _eigs(rm)
        bx.scatter(mu.real, mu.imag, s=4, alpha=0.5, color=RETURN_COLOUR, zorder=3)
        bx.plot([1.0], [0.0], "x", color="k", ms=8, mew=1.5, zorder=4)
        _unit_circle(bx, mu)
        bx.set_title(f"{rm['n_near_one_median']:g} near 1, dim U {m['dim_U']}")
    if records:
        keys = [Line2D([], [], ls="", marker="o", color=c) for c in tokens.values()]
        keys += [Line2D([], [], ls="", marker="o", color=RETURN_COLOUR),
                 Line2D([], [], ls="", marker="x", color="k")]
        fig.legend(keys, [f"A(x), token {t}" for t in tokens] + ["return maps", "1"],
                   loc="outside lower center", ncol=len(keys), frameon=False)
    fig.suptitle("Eigenvalues: per-token transitions (top), return maps (bottom)")
    return fig


@for_readers
def fig_memory(records: Sequence[dict[str, Any]]) -> plt.Figure:
    """Memory functions M[tau] (Paper 2) of the per-token transitions (top: median over
    channels solid, max dashed, one colour per token; delays in tokens) and of the return
    maps (bottom: the channel median of each word; the return map's time step is one word
    s, so its delays count words; the title gives the horizon of these channel medians,
    median over words, which differs from the maximum over channels that
    :func:`sst_core.reports.beyond.spectra` tabulates), with M = 1/2 (dotted: the horizon)
    and m_p (grey line; m_p / |s| in the bottom row)."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter

    fig, pairs = _grid(records, height=1.6)
    tokens: dict[int, str] = {}
    for (ax, bx), r in zip(pairs, records):
        m = r["metrics"]
        rm = m["return_maps"]
        l_s = rm["word_length"]
        delay = np.array(m["delay"], dtype=float)
        for i, tok in enumerate(m["tokens"]):
            if "memory_median" not in tok:
                continue
            colour = TOKEN_COLOURS[i % len(TOKEN_COLOURS)]
            tokens.setdefault(tok["token"], colour)
            ax.plot(delay, decode_floats(tok["memory_median"]), color=colour, lw=1.3)
            ax.plot(delay, decode_floats(tok["memory_max"]), color=colour, lw=1.0, ls="--")
        ax.set_title(_label(r))
        d_words = np.array(m["return_delay"], dtype=float)
        for curve in rm["memory_median"]:
            bx.plot(d_words, decode_floats(curve), color=RETURN_COLOUR, lw=0.9, alpha=0.6)
        hz = [h for h in rm["horizon_median"] if h is not None]
        bx.set_title(f"horizon {np.median(hz):g}" if hz else "return maps")  # in words
        for a, unit, top in ((ax, 1, delay.max(initial=1.0)), (bx, l_s, d_words.max(initial=1.0))):
            a.axhline(0.5, color="k", lw=0.8, ls=":")
            if m["m_p"] is not None:
                a.axvline(m["m_p"] / unit, color="grey", lw=1.0)
            a.set_xscale("symlog", linthresh=1.0)
            a.set_xlim(0, top)
            a.set_ylim(-0.02, 1.02)
            a.set_xticks([t for t in (0, 10, 100, 1000) if t <= top])
            a.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    if records:
        pairs[0][0].set_ylabel("M[τ]")
        pairs[0][1].set_ylabel("M[τ], return map")
        keys = [Line2D([], [], color=c) for c in tokens.values()]
        keys += [Line2D([], [], color="0.3", ls="--"), Line2D([], [], color=RETURN_COLOUR),
                 Line2D([], [], color="grey")]
        fig.legend(keys, [f"token {t}" for t in tokens]
                   + ["max over channels", "return maps (delay in words)", "m_p"],
                   loc="outside lower center", ncol=3, frameon=False)
    fig.suptitle("Memory functions: per-token transitions (top), return maps (bottom)")
    return fig
