"""Figures of the chapter "Memory meets error control", from ``tracking_spectra`` records.

Each function takes records (never models) and a ``scale`` string, and says the profile
and scale in its title. One column per record (model), the top row about the
per-token transitions ``A(x) = d h_t / d h_{t-1}``, the bottom row about the return maps
of state-preserving words; more than ``PER_ROW`` models wrap onto further pairs of rows.
"""
from __future__ import annotations

from typing import Any, Sequence

import matplotlib.pyplot as plt
import numpy as np

from sst_core.figures.common import suptitle
from sst_core.store.codec import decode_floats


def _label(r: dict[str, Any]) -> str:
    cfg = r["config"]["run"]
    label = cfg.get("phi") or cfg["model"]
    label += f" L{cfg['n_layers']}" if cfg["n_layers"] > 1 else ""
    m = r["metrics"]
    kind = "affine" if m["is_affine"] else "state-dep."
    return f"{label} ({kind}{', linearised' if m.get('linearised') else ''})\nm_p = {m['m_p']}"


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
    ax.tick_params(labelsize=7)


PER_ROW = 4  # models side by side; more wrap onto further pairs of rows


def _grid(records, width: float = 3.2, height: float = 3.0):
    """One (top, bottom) pair of axes per record, ``PER_ROW`` records across."""
    n = max(len(records), 1)
    cols = min(n, PER_ROW)
    blocks = -(-n // cols)
    fig, axes = plt.subplots(2 * blocks, cols, figsize=(width * cols, height * 2 * blocks),
                             squeeze=False)
    pairs = [(axes[2 * (i // cols)][i % cols], axes[2 * (i // cols) + 1][i % cols])
             for i in range(n)]
    for i in range(n, blocks * cols):  # unused slots of the last block
        axes[2 * (i // cols)][i % cols].axis("off")
        axes[2 * (i // cols) + 1][i % cols].axis("off")
    if not records:
        for ax in axes.flat:
            ax.text(0.5, 0.5, "no records at this scale", ha="center", va="center",
                    transform=ax.transAxes)
            ax.axis("off")
    return fig, pairs


def fig_spectra(records: Sequence[dict[str, Any]], scale: str) -> plt.Figure:
    """Eigenvalues in the complex plane, unit circle drawn: per-token transitions (top,
    one colour per token, sampled over positions) and return maps of state-preserving
    words (bottom; the cross marks 1, where Theorem 1 puts dim U of them)."""
    fig, pairs = _grid(records)
    for (ax, bx), r in zip(pairs, records):
        m = r["metrics"]
        mu_all = []
        for i, tok in enumerate(m["tokens"]):
            mu = _eigs(tok)
            mu_all.append(mu)
            if mu.size:
                ax.scatter(mu.real, mu.imag, s=5, alpha=0.5, color=f"C{i}",
                           label=f"token {tok['token']}: rho {tok['radius_median']:.4g}", zorder=3)
        _unit_circle(ax, np.concatenate(mu_all) if mu_all else np.zeros(0))
        ax.set_title(f"{_label(r)}\nper-token A(x)", fontsize=8)
        if any(t.get("n_sampled") for t in m["tokens"]):
            ax.legend(fontsize=6, loc="lower left", markerscale=2)
        rm = m["return_maps"]
        mu = _eigs(rm)
        bx.scatter(mu.real, mu.imag, s=5, alpha=0.5, color="C3", zorder=3)
        bx.plot([1.0], [0.0], "x", color="k", ms=8, mew=1.5, zorder=4)
        _unit_circle(bx, mu)
        bx.set_title(f"return maps (|s| = {rm['word_length']})\neigenvalues near 1: "
                     f"{rm['n_near_one_median']:g} (median); dim U = {m['dim_U']}", fontsize=8)
    eps = f"eps = {records[0]['metrics']['eps']}; " if records else ""
    suptitle(fig, "Spectra of the learned transitions and of the return maps of "
                  f"state-preserving words ({eps}{scale})", fontsize=10)
    fig.tight_layout()
    return fig


def fig_memory(records: Sequence[dict[str, Any]], scale: str) -> plt.Figure:
    """Memory functions M[tau] (Paper 2) of the per-token transitions (top: median over
    channels solid, max dashed, one colour per token; delays in tokens) and of the return
    maps (bottom: the channel median of each word; the return map's time step is one word
    s, so its delays count words), with M = 1/2 (dotted: the horizon) and m_p (grey line;
    m_p / |s| in the bottom row)."""
    fig, pairs = _grid(records, width=3.4, height=2.8)
    for (ax, bx), r in zip(pairs, records):
        m = r["metrics"]
        rm = m["return_maps"]
        l_s = rm["word_length"]
        delay = np.array(m["delay"], dtype=float)
        for i, tok in enumerate(m["tokens"]):
            if "memory_median" not in tok:
                continue
            ax.plot(delay, decode_floats(tok["memory_median"]), color=f"C{i}", lw=1.3,
                    label=f"token {tok['token']}: horizon {tok['horizon_median']}")
            ax.plot(delay, decode_floats(tok["memory_max"]), color=f"C{i}", lw=1.0, ls="--")
        ax.set_title(f"{_label(r)}\nper-token A(x)", fontsize=8)
        ax.set_xlabel("delay (tokens)", fontsize=8)
        d_words = np.array(m["return_delay"], dtype=float)
        for curve in rm["memory_median"]:
            bx.plot(d_words, decode_floats(curve), color="C3", lw=0.9, alpha=0.6)
        hz = [h for h in rm["horizon_median"] if h is not None]
        bx.set_title(f"return maps: horizon {np.median(hz):g} words (median)" if hz
                     else "return maps", fontsize=8)
        bx.set_xlabel(f"delay (words s of {l_s} tokens)", fontsize=8)
        for a, unit, top in ((ax, 1, delay.max(initial=1.0)), (bx, l_s, d_words.max(initial=1.0))):
            a.axhline(0.5, color="k", lw=0.8, ls=":")
            if m["m_p"] is not None:
                a.axvline(m["m_p"] / unit, color="grey", lw=1.0,
                          label=f"m_p = {m['m_p']}" if unit == 1 else "m_p / |s|")
            a.set_xscale("symlog", linthresh=1.0)
            a.set_xlim(0, top)
            a.set_ylim(-0.02, 1.02)
            a.tick_params(labelsize=7)
        ax.legend(fontsize=6, loc="lower left")
    if records:
        pairs[0][0].set_ylabel("M[tau]")
        pairs[0][1].set_ylabel("M[tau] (return map)")
    suptitle(fig, f"Memory functions of the learned spectra (median over channels; {scale})",
             fontsize=10)
    fig.tight_layout()
    return fig
