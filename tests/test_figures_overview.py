"""The figure of "Results at a glance": Table 2 cell by cell, legible at the page's width."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from sst_core.figures.common import MIN_FONT, PAGE_WIDTH  # noqa: E402
from sst_core.figures.overview import fig_table2_cells  # noqa: E402


def cell(model, group, depth, m_p, paper, agreement, status="ok"):
    return {"model": model, "group": group, "n_layers": depth, "m_p": m_p, "paper": paper,
            "agreement": agreement, "status": status}


def test_each_cell_shows_ours_and_where_it_differs_the_papers():
    data = [cell("tanh_rnn", "C2", 1, 1000, 1000, "agree"),
            cell("tanh_rnn", "C2", 2, 400, 700, "differ"),
            cell("mamba", "C2", 1, None, None, "agree"),
            cell("mamba", "C2", 2, 60, None, "not reported"),
            cell("negative_mamba", "C2", 1, None, None, "agree", status="missing")]
    fig = fig_table2_cells(data, ["C2"], [1, 2])
    fig.canvas.draw()
    texts = [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text()]
    assert "1000 ✓" in texts and "400 ✗" in texts and "paper 700" in texts
    assert "fail ✓" in texts and "60" in texts and "no run" in texts
    assert "paper 1000" not in texts  # an agreeing cell shows one number
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["tanh RNN", "Mamba", "Negative Mamba"]  # the papers' names
    box = fig.get_tightbbox(fig.canvas.get_renderer())
    assert box.width <= PAGE_WIDTH + 0.05
    small = [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()
             and t.get_fontsize() < MIN_FONT]
    assert not small, small
    plt.close(fig)
