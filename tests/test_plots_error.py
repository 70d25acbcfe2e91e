"""Figures 1 to 4 render from records alone (including an empty Figure 4), with short titles in
words, legible at the page's width (tests/test_figures_common.py checks them all)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from sst_core.figures import common as plots
from sst_core.figures import error as plots_error
from sst_core.reports import Table  # noqa: E402
from sst_core.reports import error_control as ec  # noqa: E402
from sst_core.store import codec  # noqa: E402


def record(model, affine, m_p=200, T_cross=120, L=300):
    t = np.arange(1, L + 1)
    q = list(0.002 * t)
    return {"status": "ok", "run_id": model,
            "config": {"run": {"model": model, "n_layers": 1}, "tau": 0.5},
            "metrics": {"is_affine": affine, "m_p": m_p, "T_cross": T_cross, "q": q,
                        "q_sqrt": list(np.sqrt(q)), "q_U": q, "q_U_perp": [None] + q[1:],
                        "q_U_identity": q, "q_U_perp_identity": q,
                        "failure_mode": "climb", "q_at_m_p": q[m_p - 1] if m_p else None,
                        "recovery": {"random": [1.0] * 50, "U": list(0.9 ** np.arange(50))},
                        "recovery_t0": 30}}


def _title(fig):
    return fig._suptitle.get_text()


def test_every_figure_renders_with_a_title_in_words():
    recs = [record("mamba", True), record("tanh_rnn", False, m_p=300, T_cross=None)]
    figs = [plots_error.fig_recovery(recs), plots_error.fig_q_trajectories(recs),
            plots_error.fig_q_split(recs),
            plots_error.fig_tcross_vs_mp(recs[:1], {"r": None, "q_median": 0.4, "q_lo": 0.3,
                                                    "q_hi": 0.5, "n": 1}),
            plots_error.fig_tcross_vs_mp([], {"r": None})]
    for fig in figs:
        title = _title(fig)
        assert title and "\n" not in title and "profile" not in title
        plots.png(fig)  # renders
    plt.close("all")


def test_markdown_table_escapes_pipes_in_headers_and_cells():
    t = Table("t", ["‖a‖", "|b|"], [["x|y", 1.0]])
    lines = [line for line in t.to_markdown().splitlines() if line.startswith("|")]
    assert lines[0] == "| ‖a‖ | \\|b\\| |"
    assert all(line.count(" | ") == 1 for line in lines if not line.startswith("|-"))


def stored(rec):
    """``rec`` as a record stores it: its curves at the times of ``codec.curve_times``."""
    m = dict(rec["metrics"])
    L = len(m["q"])
    for k in ("q", "q_sqrt", "q_U", "q_U_perp", "q_U_identity", "q_U_perp_identity"):
        if k in m:  # records made before the W = I curves lack them
            m[k] = codec.encode_curve(codec.decode_floats(m[k]))
    m["curve_t"] = codec.curve_times(L).tolist()
    return {**rec, "metrics": m}


def test_figures_and_figure3_values_read_curves_at_their_stored_times():
    full = [record("mamba", True, m_p=200, T_cross=117),
            record("tanh_rnn", False, m_p=None, T_cross=None)]
    recs = [stored(r) for r in full]
    assert len(recs[0]["metrics"]["q"]) < 300
    for fig in (plots_error.fig_q_trajectories(recs), plots_error.fig_q_split(recs)):
        plots.png(fig)
    # the T_cross marker sits on the curve (q = 0.002 t: log-log interpolation is exact)
    ax = plots_error.fig_q_trajectories(recs[:1]).axes[0]
    marker = [ln for ln in ax.get_lines() if ln.get_marker() == "o"][0]
    assert marker.get_ydata()[0] == pytest.approx(0.002 * 117)
    # Figure 3's values at m_p (or 60 for a model that fails there) equal the full curves'
    for r_full, got in zip(full, ec.split_at_m_p(recs).values()):
        t = r_full["metrics"]["m_p"] or 60
        assert got["t"] == t and got["q"] == pytest.approx(r_full["metrics"]["q"][t - 1])
        assert got["q_U"] == pytest.approx(r_full["metrics"]["q_U"][t - 1])
    assert ec.split_at_m_p(full) == ec.split_at_m_p(recs)  # records written before the grid
    plt.close("all")


def test_figure3_table_compares_q_U_with_q_U_perp_with_and_without_the_readout():
    """Through W_out q_U = 0.002 t passes q_U_perp = 0.1 after t = 50; without the readout
    q_U = 0.001 t stays below q_U_perp = 1 up to L = 300. A record without the W = I curves
    shows dashes there."""
    L = 300
    t = np.arange(1, L + 1)
    rec = record("aussm", True, m_p=200, L=L)
    rec["metrics"].update(q_U=list(0.002 * t), q_U_perp=[0.1] * L,
                          q_U_identity=list(0.001 * t), q_U_perp_identity=[1.0] * L)
    old = record("mamba", True, m_p=None, L=L)
    del old["metrics"]["q_U_identity"], old["metrics"]["q_U_perp_identity"]
    for recs, times in (([rec, old], t), ([stored(rec), stored(old)], codec.curve_times(L))):
        table = ec.figure3_table(recs)
        a, b = table.data
        assert a["t"] == 200 and a["q_U"] == pytest.approx(0.4)
        assert a["q_U_identity"] == pytest.approx(0.2) and a["q_U_perp_identity"] == 1.0
        assert a["q_U_below"] is False and a["q_U_below_identity"] is True
        later = times[times >= 2]  # (n,) the stored times after the first token
        assert a["times_q_U_below"] == (int(np.sum(0.002 * later < 0.1)), later.size)
        assert a["times_q_U_below_identity"] == (later.size, later.size)
        assert b["t"] == 60 and b["q_U_below_identity"] is None
        assert b["times_q_U_below_identity"] is None and table.rows[1][-1] == "—"
        # q_U >= q_U_perp from t = 50 on through W_out (the first stored time >= 50);
        # without the readout never
        assert a["overtaken_from"] == int(later[later >= 50][0])
        assert a["overtaken_from_identity"] is None and b["overtaken_from_identity"] is None
        readout, identity = table.split(2, 9)
        assert identity.columns[:2] == ["model", "t"] and "W = I" in identity.columns[2]
        assert readout.rows[0][-2] == f"{a['times_q_U_below'][0]} of {later.size}"
        assert readout.rows[0][-1] == str(a["overtaken_from"])


def test_figure4_log_axes_have_plain_labels_that_do_not_overlap():
    """Within about a decade, a log axis would label its minor ticks in scientific
    notation, which overlap: Figure 4 labels 1-2-3-5 ticks in plain numbers instead, and
    its paper numbers come from paper_values."""
    from sst_core.spec.paper_values import FIGURE4

    recs = [record("mamba", True, m_p=m, T_cross=t, L=1000)
            for m, t in ((60, 40), (200, 90), (600, 300))]
    stats = {"r": 0.9, "p": 0.01, "n": 3, "q_median": 1.0, "q_lo": 0.9, "q_hi": 1.1}
    fig = plots_error.fig_tcross_vs_mp(recs, stats)
    ax, bx = fig.axes
    fig.canvas.draw()
    xs = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert xs and all(s.replace(".", "").isdigit() for s in xs)  # plain numbers
    assert {"100", "200", "300", "500"} <= set(xs)
    assert all(not t.get_text() for t in ax.xaxis.get_minorticklabels())
    assert f"r = {FIGURE4['r']}, n = {FIGURE4['n']}" in ax.get_title()
    assert "ours: r = 0.900, n = 3" in ax.get_title()  # as many digits as the paper's r
    assert any(str(FIGURE4["q_median"]) in t.get_text() for t in bx.get_legend().get_texts())
    plt.close("all")


def test_figure4_shows_each_architecture_with_a_colour_per_model_and_a_marker_per_depth():
    recs = [record("mamba", True, m_p=100, T_cross=50), record("mamba", True, m_p=200, T_cross=80),
            record("aussm", True, m_p=300, T_cross=90)]
    recs[1]["config"]["run"]["n_layers"] = 2
    fig = plots_error.fig_tcross_vs_mp(recs, {"r": None, "n": 3})
    ax = fig.axes[0]
    points = {c.get_label(): c for c in ax.collections}
    assert set(points) == {"AUSSM", "Mamba", "Mamba, 2 layers"}  # the papers' names
    colour = {k: tuple(c.get_facecolor()[0]) for k, c in points.items()}
    assert colour["Mamba"] == colour["Mamba, 2 layers"] != colour["AUSSM"]
    paths = {k: c.get_paths()[0].vertices.shape for k, c in points.items()}
    assert paths["Mamba"] == paths["AUSSM"] != paths["Mamba, 2 layers"]  # circle vs triangle
    plt.close("all")


def test_the_beyond_chapters_log_scatters_have_plain_labels():
    """The online warning's and Figure 4's placement panels span about a decade too."""
    from sst_core.figures import beyond as plots_beyond

    errors = [{"method": "decoded", "fit": "power", "n": 3,
               "per_model": [{"m_p": m, "raw": 0.8 * m, "loo": 1.1 * m} for m in (60, 200, 600)]}]
    bg = [record("mamba", True, m_p=m, T_cross=t, L=1000) for m, t in ((60, 40), (300, 90))]
    hi = [record("deltanet", True, m_p=500, T_cross=200, L=1000)]
    for fig in (plots_beyond.fig_warning(errors), plots_beyond.fig_figure4_placement(bg, hi)):
        fig.canvas.draw()
        ax = fig.axes[0]
        for axis in (ax.xaxis, ax.yaxis):
            labels = [t.get_text() for t in axis.get_ticklabels() if t.get_text()]
            assert labels and all(s.replace(".", "").isdigit() for s in labels)
            assert all(not t.get_text() for t in axis.get_minorticklabels())
    plt.close("all")


def test_the_theory_figures_draw_their_small_examples():
    fig = plots_error.fig_tanh_contrast(c=0.8, offset=0.15, steps=5)
    ax = fig.axes[0]
    tanh_line, identity, fixed, errors = ax.get_lines()
    assert list(fixed.get_xdata()) == [-0.8, 0.8]
    e = list(errors.get_xdata()) + [errors.get_ydata()[-1]]  # the iterated error
    assert len(e) == 6 and e[0] == pytest.approx(0.95)
    assert all(0.8 < b < a for a, b in zip(e, e[1:]))  # shrinks towards c at every step
    drift = plots_error.fig_corollary1_drift(np.linspace(0, 2, 50), 1.0, 24.5)
    curve, threshold, predicted = drift.axes[0].get_lines()
    assert list(threshold.get_ydata()) == [1.0, 1.0] and list(predicted.get_xdata()) == [24.5, 24.5]
    plt.close("all")


def test_figure2_titles_carry_the_modes_the_report_gives():
    recs = [record("mamba", True), record("tanh_rnn", False, m_p=300, T_cross=None)]
    fig = plots_error.fig_q_trajectories(recs, modes=["climb", "none"])
    assert [ax.get_title() for ax in fig.axes[:2]] == ["Mamba: climb", "tanh RNN: none"]
    assert plots_error.fig_q_trajectories(recs).axes[0].get_title() == "Mamba"
    with pytest.raises(ValueError, match="one each"):
        plots_error.fig_q_trajectories(recs, modes=["climb"])
    plt.close("all")


def test_figure1_gives_each_model_a_panel_that_shows_a_small_shrink():
    """One panel per record, both directions in each, a log axis spanning at least a decade
    either side of 1, and the affine models' panels shaded."""
    recs = [record("tanh_rnn", False), record("mamba", True), record("aussm", True)]
    recs[0]["metrics"]["recovery"]["U"] = list(1e-12 ** (np.arange(50) / 49))
    fig = plots_error.fig_recovery(recs, cols=2)
    panels = [ax for ax in fig.axes if ax.axison]
    assert [ax.get_title() for ax in panels] == ["tanh RNN", "Mamba", "AUSSM"]
    for ax, r in zip(panels, recs):
        random, U = ax.get_lines()[:2]
        assert list(U.get_ydata()) == pytest.approx(r["metrics"]["recovery"]["U"])
        assert list(random.get_ydata()) == pytest.approx(r["metrics"]["recovery"]["random"])
        lo, hi = ax.get_ylim()
        assert ax.get_yscale() == "log" and lo <= 0.1 and hi >= 10
    assert panels[0].get_ylim()[0] <= 1e-12 / 2  # the whole curve shown
    shade = [ax.get_facecolor() for ax in panels]
    assert shade[1] == shade[2] != shade[0]
    recs[1]["config"]["run"]["n_layers"] = 2
    assert plots_error.fig_recovery(recs).axes[1].get_title() == "Mamba,\n2 layers"
    plt.close("all")


def test_figure4_spreads_m_p_sideways_and_reads_q_on_a_log_axis():
    recs = [record("mamba", True, m_p=200, T_cross=100 + i) for i in range(20)]
    stats = {"r": 0.5, "n": 20, "q_median": 0.4, "q_lo": 0.3, "q_hi": 0.5}
    fig = plots_error.fig_tcross_vs_mp(recs, stats)
    ax, bx = fig.axes[:2]
    x = ax.collections[0].get_offsets()[:, 0]  # (20,) m_p after the shift
    assert np.all(x >= 200 / (1 + plots_error.MP_JITTER) - 1e-9)
    assert np.all(x <= 200 * (1 + plots_error.MP_JITTER) + 1e-9)
    assert len(set(np.round(x, 6))) == 20  # no two points on one spot
    assert np.array_equal(x, plots_error.fig_tcross_vs_mp(recs, stats).axes[0]
                          .collections[0].get_offsets()[:, 0])  # the same every build
    assert bx.get_xscale() == "log"
    bad = [record("mamba", True, m_p=200, T_cross=100)]
    bad[0]["metrics"]["q_at_m_p"] = 0.0
    with pytest.raises(ValueError, match="q at m_p must be > 0"):
        plots_error.fig_tcross_vs_mp(bad, stats)
    plt.close("all")


def test_corollary1_drift_figure_labels_its_axes():
    fig = plots_error.fig_corollary1_drift(np.linspace(0, 2, 30), 1.0, 15.0)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "t" and "e_U" in ax.get_ylabel()
    plt.close("all")


def test_overtaken_from_reads_when_q_U_stays_above_q_U_perp():
    def m(qu, qp):
        return {"q_U": [0.0] + qu, "q_U_perp": [0.0] + qp}  # t = 1: zero spread

    assert ec.overtaken_from(m([2.0, 2.0, 2.0], [1.0, 1.0, 1.0])) == 2  # from the start
    assert ec.overtaken_from(m([0.5, 2.0, 0.5, 2.0], [1.0] * 4)) == 5  # for good at t = 5
    assert ec.overtaken_from(m([2.0, 0.5], [1.0, 1.0])) is None  # below at the end
    assert ec.overtaken_from(m([1.0], [1.0])) == 2  # equal counts as not below
    assert ec.overtaken_from({"q_U": [0.0, 1.0]}) is None  # no curve outside U
    assert ec.overtaken_from(m([2.0], [1.0]), "_identity") is None


def test_figure3_numbers_count_the_contrast_per_class_and_view():
    """The contrast holds when q_U is below q_U_perp in every state-dependent model and in
    no affine one; an affine model overtakes early when q_U stays at or above from a time
    at most half its m_p."""
    def row(affine, below, below_i, over, over_i, m_p):
        return {"is_affine": affine, "m_p": m_p, "q_U_below": below,
                "q_U_below_identity": below_i, "overtaken_from": over,
                "overtaken_from_identity": over_i}

    data = [row(False, True, True, None, None, 1000),
            row(True, True, False, 40, 20, 100),  # through W_out below: the contrast fails
            row(True, False, False, 80, None, 120)]
    out = ec.figure3_numbers(data)
    assert out == {"sd_n": 1, "af_n": 2, "af_m_p": 100, "sd_below": 1, "af_below": 1,
                   "contrast": "fails", "af_over": 80, "af_early": 1, "sd_below_i": 1,
                   "af_below_i": 0, "contrast_i": "holds", "af_over_i": 20, "af_early_i": 1}
    assert ec.figure3_numbers([])["contrast"] == "fails"  # no model of a class: no contrast
