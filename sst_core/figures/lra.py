"""Figures of the chapter "Frozen versus learned spectra on LRA", from ``lra`` records.

Learned runs are drawn with solid lines, frozen ("reservoir") runs with dashed lines;
every title states the profile and scale.
"""
from __future__ import annotations

from typing import Any, Sequence

import matplotlib.pyplot as plt
import numpy as np

from sst_core.figures.common import suptitle

INIT_COLORS = {"inv": "C0", "lin": "C1", "random": "C2", "step": "C3", "real": "C4"}


def _ls(frozen: bool) -> str:
    return "--" if frozen else "-"


def fig_test_loss(records: Sequence[dict[str, Any]], tasks: Sequence[str], scale: str) -> plt.Figure:
    """Test loss per epoch, learned against frozen, one panel per task (every seed drawn)."""
    fig, axes = plt.subplots(1, len(tasks), figsize=(3.4 * len(tasks), 3.2), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        seen = set()
        for r in records:
            c = r["config"]
            if c["task"] != task or r["status"] != "ok":
                continue
            curves = r["metrics"]["curves"]
            label = f"{c['init']} {'frozen' if c['freeze_spectrum'] else 'learned'}"
            ax.plot(curves["epoch"], curves["test_loss"], ls=_ls(c["freeze_spectrum"]),
                    color=INIT_COLORS.get(c["init"], "k"), lw=1.2, alpha=0.85,
                    label=None if label in seen else label)
            seen.add(label)
        ax.set_title(task, fontsize=9)
        ax.set_xlabel("epoch")
        if seen:
            ax.legend(fontsize=7)
    axes[0][0].set_ylabel("test loss")
    suptitle(fig, f"Test loss, learned (solid) against frozen (dashed) spectra ({scale})")
    fig.tight_layout()
    return fig


def fig_sup_mf(records: Sequence[dict[str, Any]], task: str, scale: str) -> plt.Figure:
    """Supremum memory function of each layer, before and after learning, per eigenvalue type.

    One panel per record (a learned run of one initialisation on ``task``, e.g.
    :func:`sst_core.reports.lra.sup_mf_runs`); solid = after training the spectrum,
    dotted = at init.
    """
    inits = [r["config"]["init"] for r in records]
    cols = min(2, max(1, len(inits)))
    rows = max(1, -(-len(inits) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(5.0 * cols, 3.0 * rows), squeeze=False,
                             sharey=True)
    for ax in list(axes.flat)[len(inits):]:
        ax.axis("off")
    for ax, init, r in zip(axes.flat, inits, records):
        m = r["metrics"]
        for k, (before, after) in enumerate(zip(m["sup_mf_before"], m["sup_mf_after"])):
            tau = np.arange(len(before))
            ax.plot(tau, before, color=f"C{k}", ls=":", lw=1.0)
            ax.plot(tau, after, color=f"C{k}", lw=1.3, label=f"layer {k + 1}")
        ax.set_xscale("symlog", linthresh=1)
        ax.set_title(f"{init}: dotted = init, solid = trained", fontsize=9)
        ax.set_xlabel("delay tau")
        ax.legend(fontsize=7)
    for row in axes:
        row[0].set_ylabel("sup over channels of M[tau]")
    suptitle(fig, f"Training does not create memory: supremum memory function per layer, "
                  f"task {task} ({scale})")
    fig.tight_layout()
    return fig


def fig_examples(listops_text: str, pathfinder_images: np.ndarray, pathfinder_labels: np.ndarray,
                 digits: np.ndarray, digit_labels: np.ndarray) -> plt.Figure:
    """What the generated tasks look like: Pathfinder images and digits (ListOps in the title)."""
    n_pf, n_dg = len(pathfinder_images), len(digits)
    fig, axes = plt.subplots(1, n_pf + n_dg, figsize=(1.4 * (n_pf + n_dg), 1.9))
    for ax, img, y in zip(axes[:n_pf], pathfinder_images, pathfinder_labels):
        ax.imshow(img, cmap="gray")
        ax.set_title("connected" if y else "not connected", fontsize=8)
    for ax, img, y in zip(axes[n_pf:], digits, digit_labels):
        ax.imshow(img, cmap="gray")
        ax.set_title(f"digit {y}", fontsize=8)
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
    text = listops_text if len(listops_text) < 90 else listops_text[:87] + "..."
    suptitle(fig, f"ListOps example: {text}", fontsize=9)
    fig.tight_layout()
    return fig
