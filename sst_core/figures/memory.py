"""Figures of the chapter "Memory function and the direction of learning".

Each ``fig_*`` takes run records (or plain arrays the chapter computed with
``sst_core.theory.memory``), never models. Titles are short and in words; the scale is the
chapter's to say.
Matplotlib for the static figures; ``plotly_explorer`` builds the offline slider figure of
the published book (display it with ``IPython.display.HTML(fig.to_html(full_html=False,
include_plotlyjs=False))``: the book serves plotly.min.js itself).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from sst_core.figures.common import for_readers, suptitle
from sst_core.spec.names import INIT_NAMES

LABELS = INIT_NAMES
COLORS = {"inv": "#1f77b4", "lin": "#ff7f0e", "real": "#2ca02c", "step": "#d62728",
          "random": "#9467bd"}


def _label(init: str) -> str:
    return LABELS.get(init, init)


def _unit_circle(ax) -> None:
    t = np.linspace(0, 2 * np.pi, 400)
    ax.plot(np.cos(t), np.sin(t), color="0.6", lw=0.8)
    ax.axhline(0, color="0.85", lw=0.6)
    ax.axvline(0, color="0.85", lw=0.6)
    ax.set_aspect("equal")


@for_readers
def fig_spectra(records: Sequence[Mapping[str, Any]]) -> plt.Figure:
    """Discrete eigenvalues mu of each initialisation on the unit disk (one panel each),
    with a zoom on mu near 1 underneath."""
    fig, axes = plt.subplots(2, len(records), figsize=(7.7, 3.9), squeeze=False)
    for col, r in enumerate(records):
        mu = np.array(r["metrics"]["mu_re"]) + 1j * np.array(r["metrics"]["mu_im"])
        c = r["config"]
        for row, ax in enumerate(axes[:, col]):
            _unit_circle(ax)
            ax.scatter(mu.real, mu.imag, s=12, color=COLORS.get(c["init"], "k"), zorder=3)
            if row == 0:
                ax.set_xlim(-1.1, 1.1)
                ax.set_ylim(-1.1, 1.1)
                ax.set_title(f"{_label(c['init'])}\nrank {r['metrics']['rank']}", fontsize=9)
            else:
                ax.set_xlim(0.8, 1.02)
                ax.set_ylim(-0.11, 0.11)
                ax.set_title("zoom near mu = 1", fontsize=9)
            ax.tick_params(labelsize=9)
    c0 = records[0]["config"]
    fig.suptitle(f"Discrete spectra μ = exp(Δλ), Δ = {c0['dt']}, N = {c0['N']}")
    fig.tight_layout()
    return fig


@for_readers
def fig_memory_curves(records: Sequence[Mapping[str, Any]], dts: Sequence[float],
                      ref: Mapping[tuple, Sequence[float]] | None = None,
                      ref_delays: Sequence[int] = ()) -> plt.Figure:
    """M[tau] (top) and the cumulative capacity sum_{tau' <= tau} M (bottom) per dt,
    one curve per initialisation; optional reference points (markers)."""
    fig, axes = plt.subplots(2, len(dts), figsize=(7.7, 5.6), squeeze=False,
                             sharex=True)
    for col, dt in enumerate(dts):
        top, bottom = axes[0, col], axes[1, col]
        for r in records:
            c, m = r["config"], r["metrics"]
            if c["dt"] != dt or r["status"] != "ok":
                continue
            d = np.array(m["delay"])
            keep = d >= 1
            color = COLORS.get(c["init"], "k")
            top.plot(d[keep], np.array(m["memory"])[keep], color=color, label=_label(c["init"]))
            bottom.plot(d[keep], np.array(m["cumulative"])[keep], color=color)
            if ref and (c["init"], dt) in ref:
                pts = [(t, v) for t, v in zip(ref_delays, ref[(c["init"], dt)]) if t < c["T"]]
                if pts:
                    top.scatter(*zip(*pts), marker="x", color=color, s=30, zorder=4)
        top.set_xscale("log")
        top.set_title(f"Δ = {dt}")
        top.set_ylim(-0.02, 1.02)
        bottom.set_xlabel("delay τ")
        top.grid(alpha=0.3)
        bottom.grid(alpha=0.3)
    axes[0, 0].set_ylabel("M[τ]")
    axes[1, 0].set_ylabel("cumulative capacity")
    axes[0, 0].legend(fontsize=9)
    fig.suptitle("Memory function of the initialisations")
    fig.tight_layout()
    return fig


@for_readers
def fig_simulation_check(record: Mapping[str, Any]) -> plt.Figure:
    """Formula vs white-noise simulation, diagonal S4D vs dense S4 with the same spectrum."""
    m, c = record["metrics"], record["config"]
    d = np.array(m["delay"])
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(7.7, 4.4), layout="constrained")
    ax.plot(d, m["formula"], color="k", lw=1.5, label="formula, S4D eigenvalues")
    ax.plot(d, m["formula_dense_eigs"], color="C1", ls="--", lw=1.5,
            label="formula, dense eigenvalues")
    ax.scatter(d, m["sim_diag"], marker="o", s=28, facecolors="none", edgecolors="C0",
               label="simulation, S4D")
    ax.scatter(d, m["sim_dense"], marker="x", s=22, color="C3", label="simulation, dense S4")
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlim(left=0)
    ax.set_xlabel("delay τ")
    ax.set_ylabel("M[τ]")
    ax.legend()
    ax.set_title(f"{_label(c['init'])}, N = {c['N']}")
    for key, style, label in (("sim_diag", "o", "simulation, S4D"),
                              ("sim_dense", "x", "simulation, dense S4"),
                              ("gramian_dense", "s", "dense impulse response")):
        ax2.plot(d, np.abs(np.array(m[key]) - np.array(m["formula"])), style, ms=6 if style == "o" else 4,
                 mfc="none" if style == "o" else None, label=label)
    ax2.set_yscale("log")
    ax2.set_xscale("symlog", linthresh=1)
    ax2.set_xlim(left=0)
    ax2.set_xlabel("delay τ")
    ax2.set_ylabel("|difference from the formula|")
    ax2.set_title("differences")
    fig.legend(*ax2.get_legend_handles_labels(), loc="outside lower center", ncol=3,
               frameon=False)
    fig.suptitle("S4 = S4D: same spectrum, same memory")
    return fig


@for_readers
def fig_legs(A_legs: np.ndarray, lambda_legs: np.ndarray, Lambda_inv: np.ndarray,
             Lambda_legs_normal: np.ndarray) -> plt.Figure:
    """The HiPPO-LegS matrix and the continuous-time spectra of LegS, S4D-LegS and S4D-Inv."""
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(7.7, 4.4), gridspec_kw={"width_ratios": [1, 1.5]},
                                  layout="constrained")
    lim = np.max(np.abs(A_legs))
    im = ax.imshow(A_legs, cmap="RdBu_r", vmin=-lim, vmax=lim)
    fig.colorbar(im, ax=ax, shrink=0.8)
    ax.set_title(f"LegS A, N = {A_legs.shape[0]}")
    ax2.scatter(lambda_legs.real, lambda_legs.imag, s=14, color=COLORS["real"],
                label="LegS A: -1 to -N")
    # S4D-Inv approximates S4D-LegS, so its crosses sit inside LegS's rings: large rings
    # underneath, bold crosses on top, so both stay visible where they coincide
    ax2.scatter(Lambda_legs_normal.real, Lambda_legs_normal.imag, s=80, marker="o",
                facecolors="none", edgecolors="k", linewidths=0.8, zorder=2,
                label="its normal part: S4D-LegS")
    ax2.scatter(Lambda_inv.real, Lambda_inv.imag, s=36, marker="x", color=COLORS["inv"],
                linewidths=1.4, zorder=3, label="S4D-Inv")
    ax2.set_yscale("symlog", linthresh=1)
    ax2.set_xlabel("Re λ")
    ax2.set_ylabel("Im λ (one per pair)")
    fig.legend(*ax2.get_legend_handles_labels(), loc="outside lower center", ncol=3,
               frameon=False)
    ax2.grid(alpha=0.3)
    fig.suptitle("HiPPO-LegS and S4D spectra")
    return fig


@for_readers
def fig_readout_gd(records: Sequence[Mapping[str, Any]]) -> plt.Figure:
    """Gradient descent on the readout for a teacher at one delay: share of the teacher's
    variance explained (population and held-out sample), distance to theta*, and the
    projector column through which the teacher enters the gradient."""
    fig, axes = plt.subplots(1, 3, figsize=(7.7, 3.9), layout="constrained")
    for r in records:
        c, m = r["config"], r["metrics"]
        color = COLORS.get(c["init"], "k")
        steps = np.array(m["steps"])
        x = np.maximum(steps, 0.5)
        r2_pop = 1.0 - np.array(m["pop_loss"]) / m["pop_loss"][0]
        r2_test = 1.0 - np.array(m["emp_test_loss"]) / m["emp_test_loss"][0]
        lab = _label(c["init"])
        axes[0].plot(x, r2_pop, color=color, label=f"{lab}, expected loss")
        axes[0].plot(x, r2_test, color=color, ls=":", label=f"{lab}, held-out sample")
        axes[0].axhline(m["M_teacher"], color=color, lw=0.8, ls="--")
        later = steps >= 1
        axes[1].plot(steps[later], np.array(m["theta_norm"])[later], color=color)
        axes[1].axhline(np.linalg.norm(m["theta_star"]), color=color, ls="--", lw=0.8)
        d = np.array(m["delay"])
        axes[2].plot(d, np.abs(m["column"]), color=color)
    tau0 = records[0]["config"]["teacher_delay"]
    # the lower limit takes in the smallest value drawn (a forgetting spectrum's column is
    # many orders of magnitude below machine precision), at least down to 1e-12
    drawn = np.concatenate([np.abs(r["metrics"]["column"]) for r in records])
    low = drawn[drawn > 0].min(initial=1e-12)
    axes[0].set_xscale("log")
    axes[0].set_xlabel("step")
    axes[0].set_ylabel("variance explained")
    axes[0].set_title("explained (dashed: M[τ₀])")
    axes[1].set_xscale("log")
    axes[1].set_yscale("log")
    axes[1].set_xlabel("step")
    axes[1].set_ylabel("readout norm")
    axes[1].set_title("‖θ‖ (dashed: ‖θ*‖)")
    axes[2].axvline(tau0, color="0.5", lw=0.8, ls="--")
    axes[2].set_yscale("log")
    axes[2].set_ylim(10.0 ** np.floor(np.log10(low)), 2)
    axes[2].set_xlabel("delay τ")
    axes[2].set_ylabel(f"|P[τ, {tau0}]|")
    axes[2].set_title("the teacher in the gradient")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=2,
               frameon=False)
    fig.suptitle(f"Readout learning, teacher at delay {tau0}")
    return fig


def fig_explorer(mu: np.ndarray, delay: np.ndarray, memory: np.ndarray, cumulative: np.ndarray,
                 column: np.ndarray, teacher_delay: int, title: str) -> plt.Figure:
    """The four panels of the interactive explorer for one spectrum (arrays over ``delay``)."""
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    axes = axes.ravel()
    _unit_circle(axes[0])
    axes[0].scatter(mu.real, mu.imag, s=14, color="C0", zorder=3)
    axes[0].set_xlim(-1.1, 1.1)
    axes[0].set_ylim(-1.1, 1.1)
    axes[0].set_title("spectrum mu on the unit disk", fontsize=10)
    keep = delay >= 1
    axes[1].plot(delay[keep], memory[keep])
    axes[1].set_xscale("log")
    axes[1].set_ylim(-0.02, 1.02)
    axes[1].set_title("memory function M[tau]", fontsize=10)
    axes[2].plot(delay[keep], cumulative[keep])
    axes[2].set_xscale("log")
    axes[2].set_title(f"cumulative capacity (total {cumulative[-1]:.2f})", fontsize=10)
    axes[3].plot(delay, np.abs(column))
    axes[3].axvline(teacher_delay, color="0.5", ls="--", lw=0.8)
    axes[3].set_yscale("log")
    axes[3].set_ylim(1e-12, 2)
    axes[3].set_title(f"gradient weighting |P[tau, {teacher_delay}]|", fontsize=10)
    for ax in axes[1:]:
        ax.set_xlabel("delay tau")
        ax.grid(alpha=0.3)
    suptitle(fig, title, fontsize=10)
    fig.tight_layout()
    return fig


def plotly_explorer(records: Sequence[Mapping[str, Any]], dts: Sequence[float]):
    """Offline slider figure: one slider step per dt; per initialisation the spectrum on the
    unit disk, M[tau], the cumulative capacity and the gradient weighting |P[tau, T/2]|."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    inits = [k for k in LABELS if any(r["config"]["init"] == k for r in records)]
    by = {(r["config"]["init"], r["config"]["dt"]): r for r in records if r["status"] == "ok"}
    c0 = records[0]["config"]
    fig = make_subplots(rows=2, cols=2, horizontal_spacing=0.09, vertical_spacing=0.14,
                        subplot_titles=("spectrum μ (unit disk)", "memory function M[τ]",
                                        "cumulative capacity",
                                        f"gradient weighting |P[τ, {c0['teacher_delay']}]|"))
    t = np.linspace(0, 2 * np.pi, 200)
    fig.add_trace(go.Scatter(x=np.round(np.cos(t), 4), y=np.round(np.sin(t), 4), mode="lines",
                             line=dict(color="#999", width=1), showlegend=False, hoverinfo="skip"),
                  row=1, col=1)

    def panel_data(rec):
        m = rec["metrics"]
        d = np.array(m["delay"])
        keep = d >= 1
        mu_re, mu_im = np.round(m["mu_re"], 5), np.round(m["mu_im"], 5)
        return [(mu_re, mu_im), (d[keep], np.round(np.array(m["memory"])[keep], 5)),
                (d[keep], np.round(np.array(m["cumulative"])[keep], 4)),
                (d, np.array([float(f"{abs(v):.3g}") for v in m["column"]]))]

    first = dts[0]
    trace_ids = []
    for k in inits:
        data = panel_data(by[(k, first)])
        for p, (x, y) in enumerate(data):
            row, col = divmod(p, 2)
            fig.add_trace(go.Scatter(x=x, y=y, mode="markers" if p == 0 else "lines",
                                     marker=dict(size=5, color=COLORS[k]), line=dict(color=COLORS[k]),
                                     name=_label(k), legendgroup=k, showlegend=(p == 1)),
                          row=row + 1, col=col + 1)
            trace_ids.append(len(fig.data) - 1)
    steps = []
    for dt in dts:
        xs, ys = [], []
        for k in inits:
            for x, y in panel_data(by[(k, dt)]):
                xs.append(list(x))
                ys.append(list(y))
        steps.append(dict(method="update", label=f"{dt:g}",
                          args=[{"x": xs, "y": ys},
                                {"title.text": f"Δ = {dt:g}"},
                                trace_ids]))
    fig.update_layout(
        sliders=[dict(active=0, currentvalue=dict(prefix="Δ = "), pad=dict(t=40), steps=steps)],
        title=dict(text=f"Δ = {first:g}", font=dict(size=13)),
        autosize=True, height=800, margin=dict(l=45, r=15, t=110, b=40),
        legend=dict(orientation="h", x=0, y=1.1, yanchor="bottom"))
    fig.update_xaxes(range=[-1.1, 1.1], row=1, col=1)
    fig.update_yaxes(range=[-1.1, 1.1], scaleanchor="x", row=1, col=1)
    for row, col in ((1, 2), (2, 1), (2, 2)):
        fig.update_xaxes(type="log", title_text="delay τ", row=row, col=col)
    fig.update_yaxes(range=[-0.02, 1.02], row=1, col=2)
    fig.update_yaxes(type="log", range=[-12, 0.3], exponentformat="power", row=2, col=2)
    fig.update_xaxes(type="linear", row=2, col=2)
    return fig


# The grid the static spectrum explorer offers (the live one takes any value): every
# initialisation, these state sizes and the records' steps.
EXPLORER_N = (8, 16, 24, 32, 48, 64)
EXPLORER_POINTS = 256  # points per curve drawn (delays binned beyond that; see below)


def _log_delays(T: int, n: int) -> np.ndarray:
    """About ``n`` delays in 1..T-1, evenly spaced on a log axis (integers, unique)."""
    return np.unique(np.round(np.geomspace(1, T - 1, n)).astype(int))


def _bin_max(values: np.ndarray, width: int) -> np.ndarray:
    """The largest value in each bin of ``width`` consecutive entries (the last may be short)."""
    pad = (-len(values)) % width
    padded = np.concatenate([values, np.full(pad, -np.inf)])
    return padded.reshape(-1, width).max(axis=1)


def explorer_data(views: Mapping[tuple[str, int, float], Mapping[str, Any]]) -> dict[str, Any]:
    """What the static explorer draws, as plain lists (JSON): per (init, N, dt) the spectrum,
    M[tau] and the cumulative capacity at log-spaced delays, and |P[tau, T/2]| as its
    largest value in bins of ``width`` delays (every delay where T <= EXPLORER_POINTS).
    ``views`` maps (init, N, dt) to :func:`sst_core.theory.memory.explore_spectrum`'s
    result; all of them with the same T."""
    first = next(iter(views.values()))
    T = len(first["delay"])
    width = max(1, -(-T // EXPLORER_POINTS))
    delays = _log_delays(T, EXPLORER_POINTS // 2)
    bins = np.arange(0, T, width) + (width - 1) / 2  # (T/width,) the bins' centres
    out = {"T": T, "teacher_delay": int(first["teacher_delay"]), "width": width,
           "delays": delays.tolist(), "bins": np.round(bins, 1).tolist(),
           "inits": [k for k in LABELS if any(key[0] == k for key in views)],
           "labels": LABELS, "N": sorted({key[1] for key in views}),
           "dt": sorted({key[2] for key in views}), "views": {}}
    for (init, N, dt), v in views.items():
        if len(v["delay"]) != T:
            raise ValueError(f"explorer view {(init, N, dt)} has T={len(v['delay'])}, "
                             f"the others T={T}: one horizon for all")
        mu = np.asarray(v["mu"])
        column = np.abs(np.asarray(v["column"]))
        out["views"][f"{init}|{N}|{dt:g}"] = {
            "mu_re": np.round(mu.real, 4).tolist(), "mu_im": np.round(mu.imag, 4).tolist(),
            "memory": np.round(np.asarray(v["memory"])[delays], 4).tolist(),
            "cumulative": np.round(np.asarray(v["cumulative"])[delays], 3).tolist(),
            "total": round(float(v["cumulative"][-1]), 2),
            "column": [float(f"{x:.3g}") for x in _bin_max(column, width)]}
    return out


# Keeps the figure on the view its controls name: a dropdown (initialisation) and two
# sliders (N, dt) whose method is "skip", so each control only reports its choice.
_EXPLORER_JS = """
(function () {
  var gd = document.getElementById('{plot_id}');
  var D = __DATA__;
  var state = {init: D.inits[0], N: __N0__, dt: __DT0__};
  function show() {
    var v = D.views[state.init + '|' + state.N + '|' + state.dt];
    Plotly.restyle(gd, {x: [v.mu_re, D.delays, D.delays, D.bins],
                        y: [v.mu_im, v.memory, v.cumulative, v.column]}, [1, 2, 3, 4]);
    Plotly.relayout(gd, {'title.text': __TITLE__});
  }
  gd.on('plotly_buttonclicked', function (e) { state.init = D.inits[e.active]; show(); });
  gd.on('plotly_sliderchange', function (e) {
    var kv = String(e.step.value).split('=');
    state[kv[0]] = kv[0] === 'N' ? parseInt(kv[1], 10) : kv[1];
    show();
  });
})();
"""


def spectrum_explorer(views: Mapping[tuple[str, int, float], Mapping[str, Any]],
                      init: str = "inv", N: int | None = None, dt: float | None = None):
    """The spectrum explorer that works without a kernel: every view of ``views`` (see
    :func:`explorer_data`) precomputed, chosen with a dropdown (initialisation) and two
    sliders (N, dt); four panels as :func:`fig_explorer`'s. Returns (figure, script): pass
    both to :func:`explorer_html`."""
    import json

    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    data = explorer_data(views)
    if init not in data["inits"]:
        raise ValueError(f"init {init!r} is not in the explorer's views; allowed: {data['inits']}")
    data["inits"] = [init] + [k for k in data["inits"] if k != init]  # the first view first
    N = data["N"][len(data["N"]) // 2] if N is None else N
    dt = data["dt"][len(data["dt"]) // 2] if dt is None else dt
    if N not in data["N"] or dt not in data["dt"]:
        raise ValueError(f"N={N}, dt={dt} are not in the explorer's views; allowed: "
                         f"N in {data['N']}, dt in {data['dt']}")
    v = data["views"][f"{init}|{N}|{dt:g}"]
    binned = f" (largest of each {data['width']})" if data["width"] > 1 else ""
    fig = make_subplots(rows=2, cols=2, horizontal_spacing=0.12, vertical_spacing=0.2,
                        subplot_titles=("spectrum μ on the unit disk", "memory function M[τ]",
                                        "cumulative capacity", "gradient weighting |P[τ, T/2]|"))
    t = np.linspace(0, 2 * np.pi, 200)
    fig.add_trace(go.Scatter(x=np.round(np.cos(t), 4), y=np.round(np.sin(t), 4), mode="lines",
                             line=dict(color="#999", width=1), hoverinfo="skip"), row=1, col=1)
    traces = [(v["mu_re"], v["mu_im"], "markers"), (data["delays"], v["memory"], "lines"),
              (data["delays"], v["cumulative"], "lines"), (data["bins"], v["column"], "lines")]
    for p, (x, y, mode) in enumerate(traces):
        row, col = divmod(p, 2)
        fig.add_trace(go.Scatter(x=x, y=y, mode=mode, marker=dict(size=6, color="#1f77b4"),
                                 line=dict(color="#1f77b4", width=1.5)), row=row + 1, col=col + 1)
    fig.add_vline(x=data["teacher_delay"], line=dict(color="#888", dash="dash", width=1),
                  row=2, col=2)

    def slider(name: str, shown: str, values: list, active: Any, x: float) -> dict[str, Any]:
        return dict(active=values.index(active), x=x, len=0.45, y=-0.08, yanchor="top",
                    currentvalue=dict(prefix=f"{shown} = ", font=dict(size=14)),
                    pad=dict(t=10), font=dict(size=12),
                    steps=[dict(method="skip", label=f"{val:g}", value=f"{name}={val:g}")
                           for val in values])

    title = ("(D.labels[state.init] || state.init) + ', N = ' + state.N + ', Δ = ' + state.dt"
             " + ': capacity ' + v.total")
    fig.update_layout(
        title=dict(text=f"{_label(init)}, N = {N}, Δ = {dt:g}: capacity {v['total']}",
                   font=dict(size=15), x=0.01, xanchor="left", y=0.98),
        updatemenus=[dict(type="dropdown", direction="down", active=0, x=0, y=1.14,
                          xanchor="left", yanchor="top", font=dict(size=13),
                          buttons=[dict(method="skip", label=_label(k), args=[])
                                   for k in data["inits"]])],
        sliders=[slider("N", "N", data["N"], N, 0.0), slider("dt", "Δ", data["dt"], dt, 0.55)],
        showlegend=False, autosize=True, height=760, font=dict(size=13),
        margin=dict(l=55, r=20, t=110, b=150))
    fig.update_xaxes(range=[-1.1, 1.1], row=1, col=1)
    fig.update_yaxes(range=[-1.1, 1.1], scaleanchor="x", row=1, col=1)
    for row, col in ((1, 2), (2, 1)):
        fig.update_xaxes(type="log", title_text="delay τ", row=row, col=col)
    fig.update_xaxes(title_text="delay τ" + binned, row=2, col=2)
    fig.update_yaxes(range=[-0.02, 1.02], row=1, col=2)
    fig.update_yaxes(type="log", range=[-12, 0.3], exponentformat="power", row=2, col=2)
    script = (_EXPLORER_JS.replace("__DATA__", json.dumps(data, separators=(",", ":")))
              .replace("__N0__", str(N)).replace("__DT0__", json.dumps(f"{dt:g}"))
              .replace("__TITLE__", title))
    return fig, script


def explorer_html(fig, script: str) -> str:
    """The explorer as HTML for a page that serves plotly.js itself (as the book does), as
    wide as the page's column."""
    return fig.to_html(full_html=False, include_plotlyjs=False, post_script=script,
                       default_width="100%", default_height="760px",
                       config={"responsive": True})


def explorer_views(T: int, seed: int = 0) -> dict[tuple[str, int, float], dict[str, Any]]:
    """Every view the static explorer offers (:func:`spectrum_explorer`): each
    initialisation, each state size of :data:`EXPLORER_N` and each step of the records'
    grid, at horizon ``T``."""
    from sst_core.spec.configs import DTS, INITS
    from sst_core.theory import memory as mf

    return {(init, N, dt): mf.explore_spectrum(init, N, dt, T, seed=seed)
            for init in INITS for N in EXPLORER_N for dt in DTS}


def live_explorer(T: int, N: int = 64, seed: int = 0):
    """The explorer for a live kernel (ipywidgets): any initialisation, state size N (2 to
    64) and step, and optionally one extra conjugate pair placed by radius and angle; each
    change recomputes :func:`sst_core.theory.memory.explore_spectrum` and redraws
    :func:`fig_explorer`. Returns the widget box (display it, or leave it as a cell's
    last value)."""
    import ipywidgets as widgets

    from sst_core.figures.common import png
    from sst_core.spec.configs import INITS
    from sst_core.theory import memory as mf

    controls = {
        "init": widgets.Dropdown(options=list(INITS), value="inv", description="init"),
        "N": widgets.IntSlider(value=N, min=2, max=64, step=2, description="N"),
        "log10_dt": widgets.FloatSlider(value=-2.0, min=-3.0, max=-1.0, step=0.25,
                                        description="log10 dt"),
        "add_pair": widgets.Checkbox(value=False, description="extra pair"),
        "radius": widgets.FloatSlider(value=0.99, min=0.0, max=1.0, step=0.005,
                                      description="radius"),
        "angle": widgets.FloatSlider(value=0.05, min=0.0, max=float(np.pi), step=0.01,
                                     description="angle"),
    }
    view = widgets.Output()

    def redraw(change=None) -> None:
        v = {k: w.value for k, w in controls.items()}
        dt = 10.0 ** v["log10_dt"]
        extra = v["radius"] * np.exp(1j * v["angle"]) if v["add_pair"] else None
        data = mf.explore_spectrum(v["init"], v["N"], dt, T, extra=extra, seed=seed)
        title = f"{_label(v['init'])}, N = {v['N']}, Δ = {dt:.3g}"
        view.outputs = ()
        view.append_display_data(png(fig_explorer(**data, title=title)))

    for w in controls.values():
        w.observe(redraw, names="value")
    redraw()
    return widgets.VBox(list(controls.values()) + [view])
