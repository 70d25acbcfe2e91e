"""Figures 1 to 4 render from records alone (including an empty Figure 4) and state the scale."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sst_core.figures import common as plots
from sst_core.figures import error as plots_error
from sst_core.reports import Table  # noqa: E402


def record(model, affine, m_p=200, T_cross=120, L=300):
    t = np.arange(1, L + 1)
    q = list(0.002 * t)
    return {"status": "ok", "run_id": model,
            "config": {"run": {"model": model, "n_layers": 1}, "tau": 0.5},
            "metrics": {"is_affine": affine, "m_p": m_p, "T_cross": T_cross, "q": q,
                        "q_sqrt": list(np.sqrt(q)), "q_U": q, "q_U_perp": [None] + q[1:],
                        "q_U_identity": q, "q_U_perp_identity": q,
                        "failure_mode": "climb", "q_at_m_p": q[m_p - 1],
                        "recovery": {"random": [1.0] * 50, "U": list(0.9 ** np.arange(50))},
                        "recovery_t0": 30}}


def _title(fig):
    return fig._suptitle.get_text()


def test_every_figure_renders_and_says_its_scale():
    recs = [record("mamba", True), record("tanh_rnn", False, m_p=300, T_cross=None)]
    scale = "profile `quick`: diag_samples=512, " + "a long scale statement " * 10
    figs = [plots_error.fig_recovery(recs, scale), plots_error.fig_q_trajectories(recs, scale),
            plots_error.fig_q_split(recs, scale),
            plots_error.fig_tcross_vs_mp(recs[:1], {"r": None, "q_median": 0.4, "q_lo": 0.3,
                                                    "q_hi": 0.5, "n": 1}, scale),
            plots_error.fig_tcross_vs_mp([], {"r": None}, scale)]
    for fig in figs:
        title = _title(fig)
        assert "profile `quick`" in title.replace("\n", " ")
        assert "\n" in title  # wrapped: a long scale does not widen the image
        plots.png(fig)  # renders
    plt.close("all")


def test_markdown_table_escapes_pipes_in_headers_and_cells():
    t = Table("t", ["‖a‖", "|b|"], [["x|y", 1.0]])
    lines = [line for line in t.to_markdown().splitlines() if line.startswith("|")]
    assert lines[0] == "| ‖a‖ | \\|b\\| |"
    assert all(line.count(" | ") == 1 for line in lines if not line.startswith("|-"))
