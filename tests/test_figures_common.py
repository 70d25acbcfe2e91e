"""What makes a figure legible at the page's width (sst_core.figures.common), checked on the
figures drawn with ``for_readers``: at most the page's width, no text under the minimum
size, short titles in words, no two series of one axes with the same colour and marker, no
legend over the data; and the series styles and the papers' names behind them."""
from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from sst_core.figures import common as plots  # noqa: E402
from sst_core.figures import error as plots_error  # noqa: E402
from sst_core.models.registry import PHIS, REGISTRY  # noqa: E402
from sst_core.spec import names  # noqa: E402

TABLE2_MODELS = ("tanh_rnn", "state_gated_rnn", "linear_rnn", "token_gated_rnn", "mamba",
                 "negative_mamba", "mamba3", "aussm", "simple_aussm", "linear_attention")
# a configuration dump ("track_d_model=32") or markup left in a title
DUMP = re.compile(r"\w=\w|`|profile")


def tracking(model, group, depth, accuracy=0.5):
    return {"status": "ok", "config": {"model": model, "group": group, "n_layers": depth},
            "metrics": {"eval": {"60": {"token": 0.95}, "100": {"token": accuracy},
                                 "1000": {"token": accuracy / 2}}}}


def diagnostics(model, depth, affine, m_p=200, T_cross=120, L=1000):
    t = np.arange(1, L + 1)
    q = list(0.002 * t)
    return {"status": "ok", "run_id": f"{model}{depth}",
            "config": {"run": {"model": model, "n_layers": depth}, "tau": 0.5},
            "metrics": {"is_affine": affine, "m_p": m_p, "T_cross": T_cross, "q": q,
                        "q_sqrt": list(np.sqrt(q)), "q_U": q, "q_U_perp": q,
                        "q_U_identity": q, "q_U_perp_identity": q, "failure_mode": "climb",
                        "q_at_m_p": q[m_p - 1], "recovery_t0": 30,
                        "recovery": {"random": list(1.0 + 0.01 * np.arange(50)),
                                     "U": list(0.9 ** np.arange(50))}}}


def figures():
    """Each checked figure at its most crowded: every Table 2 model at both depths."""
    runs = [tracking(m, g, d, 0.3 + 0.05 * i) for i, m in enumerate(TABLE2_MODELS)
            for g in ("C2", "C6", "S3") for d in (1, 2)]
    phis = [{**tracking("rnn_phi", "S3", 1), "config": {"model": "rnn_phi", "phi": p,
                                                        "group": "S3", "n_layers": 1}}
            for p in PHIS]
    diag = [diagnostics(m, d, REGISTRY[m].affine, m_p=100 + 40 * i + d, T_cross=50 + 20 * i)
            for i, m in enumerate(TABLE2_MODELS) for d in (1, 2)]
    stats = {"r": 0.7, "p": 0.01, "n": len(diag), "q_median": 0.4, "q_lo": 0.3, "q_hi": 0.5}
    return {"accuracy, Table 2": plots.fig_accuracy_vs_length(
                runs, ("C2", "C6", "S3"), rows=plots.family_rows(TABLE2_MODELS)),
            "accuracy, one row": plots.fig_accuracy_vs_length(runs, ("C2", "C6", "S3")),
            "accuracy, Table 3": plots.fig_accuracy_vs_length(phis, ("S3",)),
            "Figure 1": plots_error.fig_recovery(diag),
            "Figure 2": plots_error.fig_q_trajectories(diag[:6]),
            "Figure 3": plots_error.fig_q_split(diag[:3]),
            "Figure 4": plots_error.fig_tcross_vs_mp(diag, stats)}


@pytest.fixture(scope="module")
def drawn():
    figs = figures()
    for fig in figs.values():
        fig.canvas.draw()
    yield figs
    plt.close("all")


def series(ax):
    """(label, colour, marker) of each labelled data series of ``ax``."""
    out = []
    for line in ax.get_lines():
        if not line.get_label().startswith("_"):
            out.append((line.get_label(), matplotlib.colors.to_hex(line.get_color()),
                        line.get_marker()))
    for coll in ax.collections:
        if isinstance(coll, PathCollection) and not coll.get_label().startswith("_"):
            out.append((coll.get_label(), matplotlib.colors.to_hex(coll.get_facecolor()[0]),
                        coll.get_paths()[0].vertices.shape))
    return out


def test_figures_fit_the_page_and_their_text_is_large_enough(drawn):
    for name, fig in drawn.items():
        box = fig.get_tightbbox(fig.canvas.get_renderer())  # inches, as the image is saved
        assert box.width <= plots.PAGE_WIDTH + 0.05, f"{name}: {box.width:.2f} in wide"
        small = sorted({(t.get_text(), t.get_fontsize()) for t in fig.findobj(Text)
                        if t.get_visible() and t.get_text().strip()
                        and t.get_fontsize() < plots.MIN_FONT})
        assert not small, f"{name}: text under {plots.MIN_FONT} pt: {small[:5]}"


def test_titles_are_short_and_in_words(drawn):
    for name, fig in drawn.items():
        titles = [fig.get_suptitle()] + [ax.get_title() for ax in fig.axes]
        for title in filter(None, titles):
            assert not DUMP.search(title), f"{name}: title {title!r}"
            assert len(title) <= 80, f"{name}: title {title!r}"


def test_no_two_series_of_one_axes_share_colour_and_marker(drawn):
    for name, fig in drawn.items():
        for ax in fig.axes:
            styles = series(ax)
            pairs = [(colour, marker) for _, colour, marker in styles]
            labels = [label for label, _, _ in styles]
            # a series drawn twice in one axes (none here) would be one label
            assert len(set(pairs)) == len(set(labels)), (name, ax.get_title(), styles)


def test_legends_cover_no_data(drawn):
    """No plotted point of any axes lies inside a legend's box (axes and figure legends)."""
    for name, fig in drawn.items():
        legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
        points = []
        for ax in fig.axes:
            for line in ax.get_lines():
                xy = line.get_xydata()
                xy = xy[np.isfinite(xy).all(axis=1)]
                if len(xy):
                    points.append(ax.transData.transform(xy))
            for coll in ax.collections:
                if isinstance(coll, PathCollection) and len(coll.get_offsets()):
                    points.append(ax.transData.transform(coll.get_offsets()))
        points = np.concatenate(points)
        for legend in legends:
            box = legend.get_window_extent()
            inside = ((points[:, 0] > box.x0) & (points[:, 0] < box.x1)
                      & (points[:, 1] > box.y0) & (points[:, 1] < box.y1))
            assert not inside.any(), f"{name}: a legend covers {int(inside.sum())} points"


def test_legends_carry_the_papers_names(drawn):
    labels = {t.get_text() for fig in drawn.values() for t in fig.findobj(Text)}
    for model in TABLE2_MODELS:
        assert names.MODEL_NAMES[model] in labels
        assert model not in labels or model == names.MODEL_NAMES[model]
    assert "Mamba-3, 2 layers" in labels and "ReLU" in labels


def test_accuracy_rows_are_small_multiples_of_the_families(drawn):
    """With ``rows``, each row of panels draws only its family's series, one panel per group
    on shared axes, with a legend beside it naming those models; one legend below says the
    depths and the guides."""
    rows = plots.family_rows(TABLE2_MODELS)
    assert rows == [("state-dependent RNNs", ["tanh_rnn", "state_gated_rnn"]),
                    ("affine RNNs", ["linear_rnn", "token_gated_rnn"]),
                    ("Mamba family", ["mamba", "negative_mamba", "mamba3"]),
                    ("AUSSM family", ["aussm", "simple_aussm"]),
                    ("linear attention", ["linear_attention"])]
    fig = drawn["accuracy, Table 2"]
    axes = [ax for ax in fig.axes if ax.get_lines()]
    assert len(axes) == len(rows) * 3
    for i, (label, models) in enumerate(rows):
        wanted = {names.run_name({"model": m, "n_layers": d}) for m in models for d in (1, 2)}
        for j, group in enumerate(("C2", "C6", "S3")):
            ax = axes[3 * i + j]
            assert {ln.get_label() for ln in ax.get_lines()
                    if not ln.get_label().startswith("_")} == wanted
            assert ax.get_title() == (group if i == 0 else "")
            assert ax.get_ylim() == axes[0].get_ylim() and ax.get_xlim() == axes[0].get_xlim()
        legend = axes[3 * i + 2].get_legend()
        shown = [t.get_text() for t in legend.get_texts()]
        assert shown == [names.MODEL_NAMES[m] for m in models]
        assert legend.get_title().get_text() == ("" if shown == [label] else label)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [
        "one layer", "two layers", "90% accuracy", "training length 60"]
    with pytest.raises(ValueError, match="unknown models.*my_rnn"):
        plots.family_rows(["mamba", "my_rnn"])
    with pytest.raises(ValueError, match=r"series \['mamba'\] are in no row"):
        plots.fig_accuracy_vs_length([tracking("mamba", "S3", 1)], ("S3",),
                                     rows=[("affine RNNs", ["linear_rnn"])])
    with pytest.raises(ValueError, match="no record of groups"):
        plots.fig_accuracy_vs_length([tracking("mamba", "S3", 1)], ("C2",),
                                     rows=[("Mamba family", ["mamba"])])


def test_series_styles_differ_for_every_model_phi_and_depth():
    configs = ([{"model": m, "n_layers": d} for m in REGISTRY for d in (1, 2)]
               + [{"model": "rnn_phi", "phi": p, "n_layers": 1} for p in PHIS])
    styles = [plots.series_style(c) for c in configs]
    pairs = [(s["color"], s["marker"]) for s in styles]
    assert len(set(pairs)) == len(pairs)
    # the Table 2 models have ten different colours
    assert len({plots.series_style({"model": m})["color"] for m in TABLE2_MODELS}) == 10
    # a model the registry does not know gets a style of its own, the same every time
    other = plots.series_style({"model": "my_rnn"}, ["my_rnn"])
    assert (other["color"], other["marker"]) not in pairs
    assert plots.series_style({"model": "my_rnn"}, ["my_rnn"]) == other


def test_no_series_is_drawn_in_the_guides_grey(drawn):
    """Every palette colour is a colour, not a grey (the guides' colour): the 90% and
    training-length lines of the accuracy figures cannot be read as a series."""
    guide = matplotlib.colors.to_rgb(plots.GUIDE_COLOUR)
    assert guide[0] == guide[1] == guide[2]  # the guides are grey
    for colour in plots.PALETTE:
        hsv = matplotlib.colors.rgb_to_hsv(matplotlib.colors.to_rgb(colour))
        assert hsv[1] > 0.3, f"{colour} is nearly grey (saturation {hsv[1]:.2f})"
    fig = drawn["accuracy, Table 2"]
    for ax in fig.axes:
        guides = [line for line in ax.get_lines() if line.get_label().startswith("_")]
        drawn_colours = {matplotlib.colors.to_hex(line.get_color())
                         for line in ax.get_lines() if not line.get_label().startswith("_")}
        assert matplotlib.colors.to_hex(plots.GUIDE_COLOUR) not in drawn_colours
        assert all(matplotlib.colors.to_hex(line.get_color()) ==
                   matplotlib.colors.to_hex(plots.GUIDE_COLOUR) for line in guides)


def test_the_state_distribution_has_a_tick_at_every_state_and_none_between():
    records = [{"config": {"group": g, "tokens": "generators"},
                "metrics": {"state_freq": np.full((3, n), 1 / n).tolist()}}
               for g, n in (("C2", 2), ("S3", 6))]
    fig = plots.fig_state_distribution(records, 2)
    for ax, n in zip(fig.axes, (2, 6)):
        assert list(ax.get_xticks()) == list(range(n))
        assert [t.get_text() for t in ax.get_xticklabels()] == [str(i) for i in range(n)]
    plt.close(fig)


def test_every_registered_model_and_phi_has_a_papers_name():
    assert set(names.MODEL_NAMES) == set(REGISTRY)
    assert set(names.PHI_NAMES) == set(PHIS)
    assert names.run_name({"model": "negative_mamba", "n_layers": 2}) == \
        "Negative Mamba, 2 layers"
    assert names.run_name({"model": "rnn_phi", "phi": "groupsort2"}) == "GroupSort"


def test_the_papers_spectra_carry_no_ours():
    """Where the paper's own numbers are shown, its random and step spectra are its own."""
    assert names.PAPER_INIT_NAMES["random"] == "random"
    assert names.PAPER_INIT_NAMES["step"] == "step"
    assert names.PAPER_INIT_NAMES["inv"] == names.INIT_NAMES["inv"] == "S4D-Inv"
    assert set(names.PAPER_INIT_NAMES) == set(names.INIT_NAMES)
    assert not any("(ours)" in v for v in names.PAPER_INIT_NAMES.values())


def test_the_q_recovery_figure_gives_every_model_its_own_colour():
    """fig_q_recovery draws the delta chapter's twelve models, whose registry colours repeat
    (the palette has ten): a repeated colour is replaced, so no two lines share one, and a
    model keeps its own colour wherever it is the first to have it."""
    from sst_core.experiments import beyond
    from sst_core.figures import beyond as plots_beyond

    models = beyond.DELTA_MODELS + beyond.TORCH_RNNS + beyond.DELTA_COMPARED
    own = [plots.series_style({"model": m})["color"] for m in models]
    assert len(set(own)) < len(own)  # the case the figure has to handle
    fig = plots_beyond.fig_q_recovery([diagnostics(m, 1, REGISTRY[m].affine) for m in models],
                                      beyond.DELTA_MODELS)
    for ax in fig.axes:
        colours = [matplotlib.colors.to_hex(line.get_color()) for line in ax.get_lines()
                   if line.get_marker() not in ("None", "", None)]
        assert len(colours) == len(models) == len(set(colours))
        assert [c for c, o in zip(colours, own) if c == o] == list(dict.fromkeys(own))
    plt.close(fig)
    assert plots_beyond.distinct_colours(["#1f77b4", "#1f77b4", "#ff7f0e"]) == \
        ["#1f77b4", plots_beyond.SPARE_COLOURS[0], "#ff7f0e"]
    with pytest.raises(ValueError, match="more series"):
        plots_beyond.distinct_colours(["#1f77b4"] * (len(plots_beyond.SPARE_COLOURS) + 2))


def test_figures_typeset_the_papers_symbols_in_their_text():
    import matplotlib.pyplot as plt

    from sst_core.figures.common import for_readers

    @for_readers
    def draw():
        fig, ax = plt.subplots()
        ax.plot([1, 2], [1, 2], label="m_p")
        ax.set_xlabel("T_cross (tokens)")
        ax.set_title("q_U and q_U_perp through W_out")
        ax.legend()
        return fig

    fig = draw()
    ax = fig.axes[0]
    assert ax.get_xlabel() == r"$T_{\mathrm{cross}}$ (tokens)"
    assert ax.get_title() == r"$q_U$ and $q_{U^\perp}$ through $W_{\mathrm{out}}$"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["$m_p$"]
    fig.canvas.draw()  # mathtext parses every typeset text
    plt.close(fig)
