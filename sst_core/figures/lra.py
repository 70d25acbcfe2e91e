"""Figures of the chapter "Frozen versus learned spectra on LRA", from ``lra`` records.

Learned runs are drawn with solid lines, frozen ("reservoir") runs with dashed lines;
spectra carry the papers' names (:data:`INIT_NAMES`). Titles are short and in words: the
scale is the chapter's to say.
"""
from __future__ import annotations

from typing import Any, Sequence

import matplotlib.pyplot as plt
import numpy as np

from sst_core.figures.common import PAGE_WIDTH, for_readers
from sst_core.spec.names import INIT_NAMES

INIT_COLORS = {"inv": "C0", "lin": "C1", "random": "C2", "step": "C3", "real": "C4"}


def _name(init: str) -> str:
    return INIT_NAMES.get(init, init)


def _ls(frozen: bool) -> str:
    return "--" if frozen else "-"


@for_readers
def fig_test_loss(records: Sequence[dict[str, Any]], tasks: Sequence[str]) -> plt.Figure:
    """Test loss per epoch, learned against frozen, one panel per task (every seed drawn)."""
    fig, axes = plt.subplots(1, len(tasks), figsize=(PAGE_WIDTH, 3.4), squeeze=False,
                             layout="constrained")
    for ax, task in zip(axes[0], tasks):
        seen = set()
        for r in records:
            c = r["config"]
            if c["task"] != task or r["status"] != "ok":
                continue
            curves = r["metrics"]["curves"]
            label = f"{_name(c['init'])} {'frozen' if c['freeze_spectrum'] else 'learned'}"
            ax.plot(curves["epoch"], curves["test_loss"], ls=_ls(c["freeze_spectrum"]),
                    color=INIT_COLORS.get(c["init"], "k"), lw=1.2, alpha=0.85,
                    label=None if label in seen else label)
            seen.add(label)
        ax.set_title(task)
        ax.set_xlabel("epoch")
        if seen:
            ax.legend()
    axes[0][0].set_ylabel("test loss")
    fig.suptitle("Test loss, learned (solid) and frozen (dashed)")
    return fig


@for_readers
def fig_sup_mf(records: Sequence[dict[str, Any]], task: str) -> plt.Figure:
    """Supremum memory function of each layer, before and after learning, per eigenvalue type.

    One panel per record (a learned run of one initialisation on ``task``, e.g.
    :func:`sst_core.reports.lra.sup_mf_runs`); solid = after training the spectrum,
    dotted = at init.
    """
    inits = [r["config"]["init"] for r in records]
    cols = min(2, max(1, len(inits)))
    rows = max(1, -(-len(inits) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(PAGE_WIDTH, 2.6 * rows + 0.5), squeeze=False,
                             sharey=True, layout="constrained")
    spare = list(axes.flat)[len(inits):]
    for ax in spare:
        ax.axis("off")
    for ax, init, r in zip(axes.flat, inits, records):
        m = r["metrics"]
        afters = m["sup_mf_after"] or [None] * len(m["sup_mf_before"])  # None: not computed
        for k, (before, after) in enumerate(zip(m["sup_mf_before"], afters)):
            tau = np.arange(len(before))
            ax.plot(tau, before, color=f"C{k}", ls=":", lw=1.0)
            if after is not None:
                ax.plot(tau, after, color=f"C{k}", lw=1.3, label=f"layer {k + 1}")
        ax.set_xscale("symlog", linthresh=1)
        ax.set_title(_name(init) + ("" if m["sup_mf_after"] else " (trained: not computable)"))
        ax.set_xlabel("delay τ")
    # one legend for every panel (the layers share their colours): in a spare panel, else
    # below the panels
    handles, labels = next((ax.get_legend_handles_labels() for ax in axes.flat
                            if ax.get_legend_handles_labels()[0]), ([], []))
    if handles:
        if spare:
            spare[0].legend(handles, labels, loc="center")
        else:
            fig.legend(handles, labels, loc="outside lower center", ncols=len(handles))
    for row in axes:
        row[0].set_ylabel("sup. memory M[τ]")
    fig.suptitle(f"Memory per layer on {task}: dotted at initialisation, solid trained")
    return fig


MF_FLOOR = 1e-8  # memory below this is drawn at this value on the log axis


@for_readers
def fig_memory_horizon(cells: Sequence[dict[str, Any]], chance: float, band: float,
                       mf_zero: float | None = None) -> plt.Figure:
    """Delayed recall: accuracy against the delay tau per spectrum (learned solid, frozen
    dashed; the band between the seeds' min and max shaded), beside each spectrum's memory
    function at tau at init (dotted) and after learning it (solid).

    ``cells``: the ``kind == "cell"`` entries of :func:`sst_core.reports.lra.memory_horizon`'s
    ``data`` (cells without runs are skipped); ``chance`` and ``band``: the chance level and
    the highest accuracy still "at chance"; ``mf_zero``: the "MF ~ 0" threshold, drawn if given.
    """
    fig, (ax_acc, ax_mf) = plt.subplots(1, 2, figsize=(PAGE_WIDTH, 5.4), layout="constrained")
    inits = list(dict.fromkeys(c["init"] for c in cells))
    for init in inits:
        color = INIT_COLORS.get(init, "k")
        by_mode = {frozen: sorted((c for c in cells if c["init"] == init and c["frozen"] == frozen
                                   and c["acc_max"] is not None), key=lambda c: c["tau"])
                   for frozen in (False, True)}
        for frozen, done in by_mode.items():
            if not done:
                continue
            tau = [c["tau"] for c in done]
            ax_acc.plot(tau, [c["acc_max"] for c in done], color=color, ls=_ls(frozen),
                        marker="o", ms=3, lw=1.3,
                        label=f"{_name(init)} {'frozen' if frozen else 'learned'}")
            ax_acc.fill_between(tau, [c["acc_min"] for c in done], [c["acc_max"] for c in done],
                                color=color, alpha=0.12, lw=0)
        # at init: the learned runs (the frozen runs of a seed start from the same spectrum
        # and keep it); after: the learned runs only
        start = by_mode[False] or by_mode[True]
        if start:
            ax_mf.plot([c["tau"] for c in start], [max(c["mf_before"], MF_FLOOR) for c in start],
                       color=color, ls=":", marker="x", ms=3, lw=1.0)
        trained = [c for c in by_mode[False] if c["mf_after"] is not None]  # None: not computable
        if trained:
            ax_mf.plot([c["tau"] for c in trained],
                       [max(c["mf_after"], MF_FLOOR) for c in trained], color=color,
                       marker="o", ms=3, lw=1.3)
    ax_acc.axhline(chance, color="0.4", lw=0.8)
    ax_acc.axhspan(0, band, color="0.85", alpha=0.5, lw=0)
    ax_acc.set_ylim(0, 1.02)
    ax_acc.set_xscale("log")
    ax_acc.set_xlabel("delay τ")
    ax_acc.set_ylabel("test accuracy (best seed)")
    ax_acc.set_title("accuracy (grey: at chance)")
    ax_mf.set_xscale("log")
    ax_mf.set_yscale("log")
    ax_mf.set_ylim(MF_FLOOR / 2, 2)
    if mf_zero is not None:
        ax_mf.axhline(mf_zero, color="0.4", lw=0.8, ls="--")
    ax_mf.set_xlabel("delay τ")
    ax_mf.set_ylabel("sup. memory M[τ]")
    ax_mf.set_title("memory: dotted initial, solid trained")
    if ax_acc.get_legend_handles_labels()[0]:
        fig.legend(*ax_acc.get_legend_handles_labels(), loc="outside lower center", ncol=3,
                   frameon=False)
    fig.suptitle("Delayed recall at delay τ, learned (solid) and frozen (dashed)")
    return fig


@for_readers
def fig_memory_noise(cells: Sequence[dict[str, Any]], levels: Sequence[dict[str, Any]],
                     chance: float, band: float, mf_live: float | None = None) -> plt.Figure:
    """Delayed recall: best accuracy against the memory at the task's delay, one panel per
    level of :func:`sst_core.reports.lra.memory_horizon_noise` (the exact memory function,
    then read with more and more noise; three panels a row, the legend in a spare one); one
    point per cell, coloured by spectrum, learned filled and frozen hollow, on a linear
    memory axis; ``mf_live``, the "memory present" threshold, is drawn if given. ``cells``
    and ``levels``: that report's ``data`` entries of each kind."""
    cols = min(3, max(1, len(levels)))
    rows = -(-(len(levels) + 1) // cols)  # one more panel for the legend
    fig, grid = plt.subplots(rows, cols, figsize=(PAGE_WIDTH, 2.5 * rows + 0.4), squeeze=False,
                             layout="constrained")
    axes, spare = grid.flat[:len(levels)], grid.flat[len(levels):]
    for ax, level in zip(axes, levels):
        d = level["noise"]
        for c in cells:
            m = c["memory"].get(d)
            if m is None:
                continue
            color = INIT_COLORS.get(c["init"], "k")
            ax.scatter([m], [c["acc_max"]], s=14, color=color,
                       facecolors="none" if c["frozen"] else color, lw=0.9)
        ax.axhline(chance, color="0.4", lw=0.8)
        ax.axhspan(0, band, color="0.85", alpha=0.5, lw=0)
        if mf_live is not None:
            ax.axvline(mf_live, color="0.4", lw=0.8, ls="--")
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(0, 1.02)
        rho = "—" if level["rho"] is None else f"{level['rho']:.2f}"
        ax.set_title(("exact M[τ]" if d == 0 else f"noise δ = {d:g}") + f"; ρ = {rho}")
        ax.set_xlabel("memory at the delay")
        ax.set_ylabel("best test accuracy")
    for ax in spare:
        ax.axis("off")
    if len(spare):
        for init, color in INIT_COLORS.items():
            if any(c["init"] == init for c in cells):
                spare[0].scatter([], [], color=color, s=14, label=_name(init))
        spare[0].scatter([], [], color="k", s=14, label="learned")
        spare[0].scatter([], [], color="k", facecolors="none", s=14, label="frozen")
        spare[0].legend(loc="center", title="spectrum")
    fig.suptitle("Delayed recall against the memory read with noise")
    return fig


@for_readers
def fig_examples(listops_text: str, pathfinder_images: np.ndarray, pathfinder_labels: np.ndarray,
                 digits: np.ndarray, digit_labels: np.ndarray) -> plt.Figure:
    """What the generated tasks look like: Pathfinder images and digits (ListOps in the title)."""
    n_pf, n_dg = len(pathfinder_images), len(digits)
    fig, axes = plt.subplots(1, n_pf + n_dg, figsize=(PAGE_WIDTH, 1.9), layout="constrained")
    for ax, img, y in zip(axes[:n_pf], pathfinder_images, pathfinder_labels):
        ax.imshow(img, cmap="gray")
        ax.set_title("joined" if y else "apart")
    for ax, img, y in zip(axes[n_pf:], digits, digit_labels):
        ax.imshow(img, cmap="gray")
        ax.set_title(f"digit {y}")
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
    text = listops_text if len(listops_text) < 80 else listops_text[:77] + "..."
    fig.suptitle(f"ListOps: {text}")
    return fig


def fig_task_examples(pathfinder_difficulty: str) -> plt.Figure:
    """:func:`fig_examples` of freshly generated tasks (seed 0): a ListOps expression of
    20 to 60 tokens and its value, four 32 x 32 Pathfinder images at LRA's
    ``pathfinder_difficulty``, and three digits as the image task reads them."""
    from sst_core.tasks import listops, pathfinder
    from sst_core.tasks.images import digits_images

    pf = pathfinder.generate(4, pathfinder.lra_params(32, pathfinder_difficulty), seed=0)
    imgs, labels = digits_images(16, "bilinear")
    example = listops.generate(1, min_length=20, max_length=60, seed=0)
    text = listops.to_text(listops.parse(example.texts[0])) + f"  = {example.y[0]}"
    return fig_examples(text, pf.images, pf.y, imgs[:3], labels[:3])
