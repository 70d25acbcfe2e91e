"""The memory chapter's static spectrum explorer (sst_core.figures.memory): every view of its
grid is in the page, drawn from explore_spectrum's arrays; its controls name the grid. The
browser test (tests/notebooks/test_reader_checks.py) works its controls."""
from __future__ import annotations

import json

import numpy as np
import pytest

from sst_core.figures import memory as plots_memory
from sst_core.theory import memory as mf


@pytest.fixture(scope="module")
def views():
    T = 600  # binned: more delays than EXPLORER_POINTS
    return {(init, N, dt): mf.explore_spectrum(init, N, dt, T, seed=0)
            for init in ("inv", "random") for N in (4, 6) for dt in (0.01, 0.1)}


def test_every_view_is_drawn_from_its_arrays(views):
    data = plots_memory.explorer_data(views)
    assert data["T"] == 600 and data["width"] == 3  # ceil(600 / 256)
    assert data["inits"] == ["inv", "random"] and data["N"] == [4, 6] and data["dt"] == [0.01, 0.1]
    assert set(data["views"]) == {f"{i}|{N}|{dt:g}" for i, N, dt in views}
    for (init, N, dt), v in views.items():
        got = data["views"][f"{init}|{N}|{dt:g}"]
        assert got["mu_re"] == pytest.approx(np.asarray(v["mu"]).real, abs=1e-4)
        delays = np.asarray(data["delays"])
        assert got["memory"] == pytest.approx(v["memory"][delays], abs=1e-4)
        assert got["total"] == pytest.approx(v["cumulative"][-1], abs=0.01)
        # each drawn point of |P[tau, T/2]| is the largest of its bin of 3 delays
        column = np.abs(v["column"])
        expected = [column[k:k + 3].max() for k in range(0, 600, 3)]
        assert got["column"] == pytest.approx(expected, rel=1e-2)
    assert delays[0] == 1 and delays[-1] == 599 and np.all(np.diff(delays) > 0)


def test_the_figure_starts_on_the_chosen_view_and_its_controls_name_the_grid(views):
    fig, script = plots_memory.spectrum_explorer(views, init="random", N=4, dt=0.1)
    spectrum = fig.data[1]
    assert list(spectrum.x) == pytest.approx(np.asarray(views[("random", 4, 0.1)]["mu"]).real,
                                             abs=1e-4)
    (menu,) = fig.layout.updatemenus
    assert [b.label for b in menu.buttons] == [plots_memory.LABELS[k] for k in ("random", "inv")]
    assert all(b.method == "skip" for b in menu.buttons)  # the script draws the chosen view
    n_slider, dt_slider = fig.layout.sliders
    assert [s.value for s in n_slider.steps] == ["N=4", "N=6"] and n_slider.active == 0
    assert [s.value for s in dt_slider.steps] == ["dt=0.01", "dt=0.1"] and dt_slider.active == 1
    assert fig.layout.title.text.startswith(plots_memory.LABELS["random"])
    # the script holds every view, as JSON
    payload = script[script.index("var D = ") + 8:script.index(";\n  var state")]
    assert len(json.loads(payload)["views"]) == len(views)
    html = plots_memory.explorer_html(fig, script)
    assert "plotly_sliderchange" in html and "plotly_buttonclicked" in html


def test_bad_choices_and_mixed_horizons_are_refused(views):
    with pytest.raises(ValueError, match="init 'lin' is not in the explorer's views"):
        plots_memory.spectrum_explorer(views, init="lin")
    with pytest.raises(ValueError, match="N=5, dt=0.01 are not in the explorer's views"):
        plots_memory.spectrum_explorer(views, N=5, dt=0.01)
    mixed = dict(views)
    mixed[("inv", 8, 0.01)] = mf.explore_spectrum("inv", 8, 0.01, 100)
    with pytest.raises(ValueError, match="one horizon for all"):
        plots_memory.explorer_data(mixed)


def test_the_live_explorer_redraws_on_every_change():
    """The ipywidgets explorer for a live kernel: controls and one image, redrawn (a new
    PNG of the chosen spectrum) when a control changes."""
    pytest.importorskip("ipywidgets")
    box = plots_memory.live_explorer(32, N=4, seed=0)
    *controls, view = box.children
    assert [c.description for c in controls] == ["init", "N", "log10 dt", "extra pair",
                                                  "radius", "angle"]
    first = view.outputs[0]["data"]["image/png"]
    controls[0].value = "random"
    assert len(view.outputs) == 1 and view.outputs[0]["data"]["image/png"] != first
    controls[3].value = True  # one extra conjugate pair
    assert view.outputs[0]["data"]["image/png"] != first


def test_explorer_views_cover_the_static_explorers_grid():
    from sst_core.spec.configs import DTS, INITS

    views = plots_memory.explorer_views(16, seed=0)
    assert set(views) == {(k, N, dt) for k in INITS for N in plots_memory.EXPLORER_N for dt in DTS}
    assert len(views[("inv", 8, 0.01)]["mu"]) == 8 and len(views[("inv", 8, 0.01)]["delay"]) == 16
