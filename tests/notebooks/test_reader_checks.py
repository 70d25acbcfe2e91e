"""The checks of what a reader meets (tests/notebooks/reader.py), on small pages built here,
and the memory chapter's spectrum explorer working without a kernel, in headless Chromium.
No book is built."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .conftest import require_chromium
from .reader import (bookkeeping, console_errors, page_bookkeeping, unnumbered_figures,
                     unnumbered_tables)

require_chromium()

# shaped like a built chapter: prose, a code cell (its source and its output), figures
CHAPTER = """<!DOCTYPE html><html><head><meta charset="utf-8">{head}</head><body><main>
<h1>A chapter</h1>
<p>{prose}</p>
<div class="cell"><div class="cell_input"><pre>stale = ledger_text(records)  # code may say anything</pre></div>
<div class="cell_output"><pre>{output}</pre></div></div>
{figures}
</main></body></html>"""
PNG = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
       "YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
NUMBERED = (f'<figure id="fig-a"><img src="{PNG}"><figcaption><p><span class="caption-number">'
            'Fig. 1 </span><span class="caption-text">Recovery after a perturbation.</span>'
            '</p></figcaption></figure>')


def page(tmp_path: Path, name: str, prose: str = "The error shrinks.", output: str = "0.91",
         figures: str = NUMBERED, head: str = "") -> str:
    path = tmp_path / f"{name}.html"
    path.write_text(CHAPTER.format(prose=prose, output=output, figures=figures, head=head))
    return path.as_uri()


@pytest.mark.parametrize("text, kind", [
    ("best available: all 1512 `standard`-profile records are stored", "a record count"),
    ("paper: 0 of 3402 records", "a record count"),
    ("counted as current through the ledger", "the ledger"),
    ("12 records are stale", "staleness"),
    ("not analysed: state_gated_rnn on C2 (RunFailed: training run 781617c1913e4331 ...)",
     "a failure log"),
    ("training run 781617c1913e4331", "a commit hash"),
    ("made at a411921 on 2026-12-05", "a commit hash"),
    ("profile `standard`: track_d_model=32", "literal markup"),
    ("m_p is {glue:text}`mp_s3`", "literal markup"),
    ("see {numref}`fig-recovery`", "literal markup"),
])
def test_bookkeeping_is_found(text, kind):
    found = bookkeeping(text)
    assert any(f.startswith(kind + ":") for f in found), found


@pytest.mark.parametrize("text", [
    "31 of 48 cells of Table 2 agree exactly; Figure 4: r = 0.66 against 0.869.",
    "Every number comes from a run record; the tanh RNN tracks S3 up to length 1000.",
    "Three seeds, learning rates 1e-3 and 3e-4, d_model 32 and 64, 2 layers.",
    "The memory function decays after 100 steps (deadline 2026).",
])
def test_a_readers_sentences_pass(text):
    assert bookkeeping(text) == []


def test_the_page_checks_read_what_a_reader_sees(browser, tmp_path):
    """Bookkeeping in prose or in an output is found, not in a code cell's source; an
    image or plot outside a numbered, captioned figure is found; a clean page has none."""
    browser.get(page(tmp_path, "clean"))
    assert page_bookkeeping(browser) == []
    assert unnumbered_figures(browser) == []

    browser.get(page(tmp_path, "prose", prose="Current through the ledger."))
    assert page_bookkeeping(browser) == ["the ledger: 'ledger'"]
    browser.get(page(tmp_path, "output", output="best available: 1512 records stored"))
    assert [f.split(":")[0] for f in page_bookkeeping(browser)] == ["a record count"]

    bare = f'<img src="{PNG}">'
    unnumbered = f'<figure><img src="{PNG}"><figcaption><p>No number.</p></figcaption></figure>'
    plot = '<div class="plotly-graph-div" id="plot-1"></div>'
    browser.get(page(tmp_path, "figures", figures=NUMBERED + bare + unnumbered + plot))
    assert unnumbered_figures(browser) == [("img", PNG), ("img", PNG), ("div", "plot-1")]


def grid(id_: str = "", caption: str = "") -> str:
    """A small results table as a built page shows it, with the id ``id_`` (none if empty)
    and the <caption> ``caption`` (none if empty)."""
    return (f"<table{f' id={id_!r}' if id_ else ''}>{caption and f'<caption>{caption}</caption>'}"
            "<thead><tr><th>model</th><th>m_p</th></tr></thead>"
            "<tbody><tr><td>tanh RNN</td><td>0.91</td></tr></tbody></table>")


def test_the_table_check_finds_every_table_without_a_number_and_a_caption(browser, tmp_path):
    """A table passes with a numbered caption of its own that reads "Table N" (MyST's table
    directive); a bare one, one in a figure (numbered as a figure or not), and one with a
    caption but no number are found; a table in a code cell's source or in the provenance
    block is not looked at."""
    in_figure = (f'<figure id="fig-t"><div class="cell_output">{grid("as-figure")}</div>'
                 '<figcaption><p><span class="caption-number">Fig. 2 </span>'
                 '<span class="caption-text">Table 2 of the paper.</span></p></figcaption>'
                 '</figure>')
    own_caption = grid("tab-a", '<span class="caption-number">Table 1 </span>'
                                '<span class="caption-text">The initialisations.</span>')
    aside = (f'<div class="cell"><div class="cell_input">{grid("code")}</div></div>'
             f'<details class="provenance"><summary>How</summary>{grid("prov")}</details>')
    browser.get(page(tmp_path, "tables", figures=own_caption + aside))
    assert unnumbered_tables(browser) == []

    no_number = (f'<figure><div>{grid("no-number")}</div><figcaption><p>'
                 '<span class="caption-text">A caption.</span></p></figcaption></figure>')
    no_caption = (f'<figure><div>{grid("no-caption")}</div><figcaption><p>'
                  '<span class="caption-number">Fig. 3 </span></p></figcaption></figure>')
    browser.get(page(tmp_path, "bare-tables", figures=in_figure + grid("bare") + no_number
                     + no_caption + grid("caption-only", "Words only.") + grid()))
    assert unnumbered_tables(browser) == ["as-figure", "bare", "no-number", "no-caption",
                                          "caption-only", "model m_p"]


def test_console_errors_are_caught(browser, tmp_path):
    console_errors(browser)
    browser.get(page(tmp_path, "quiet"))
    assert console_errors(browser) == []
    twice = '<script>const X = 1;</script><script>const X = 2;</script>'
    browser.get(page(tmp_path, "twice", head=twice))
    (error,) = console_errors(browser)
    assert "SyntaxError" in error and "'X' has already been declared" in error
    missing = '<link rel="stylesheet" href="no-such-file.css">'
    browser.get(page(tmp_path, "missing", head=missing))
    assert any("no-such-file.css" in e for e in console_errors(browser))


def test_the_spectrum_explorer_works_without_a_kernel(browser, tmp_path):
    """The memory chapter's explorer on a page of its own (plotly.js served beside it): the
    dropdown and the sliders change the drawn spectrum to the chosen view's."""
    import plotly
    from selenium.webdriver.common.action_chains import ActionChains

    from sst_core.figures import memory as plots_memory
    from sst_core.theory import memory as mf

    T = 64
    views = {(init, N, dt): mf.explore_spectrum(init, N, dt, T, seed=0)
             for init in ("inv", "random") for N in (4, 8) for dt in (0.01, 0.1)}
    fig, script = plots_memory.spectrum_explorer(views, init="inv", N=8, dt=0.01)
    shutil.copy(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", tmp_path)
    path = tmp_path / "explorer.html"
    path.write_text('<!DOCTYPE html><html><head><meta charset="utf-8">'
                    '<script src="plotly.min.js"></script></head><body>'
                    + plots_memory.explorer_html(fig, script) + "</body></html>")
    console_errors(browser)
    browser.get(path.as_uri())

    def drawn() -> tuple[list[float], str]:
        return browser.execute_script(
            "const gd = document.querySelector('.plotly-graph-div');"
            "return [gd.data[1].x, gd.layout.title.text];")

    def expected(init: str, N: int, dt: float) -> list[float]:
        return [round(x, 4) for x in views[(init, N, dt)]["mu"].real]

    xs, title = drawn()
    assert xs == pytest.approx(expected("inv", 8, 0.01)) and "N = 8" in title

    # the dropdown: open it and click "random (ours)"
    header = browser.find_element("css selector", ".updatemenu-header-group")
    ActionChains(browser).move_to_element(header).click().perform()
    buttons = browser.find_elements("css selector", ".updatemenu-dropdown-button")
    labels = [b.get_attribute("textContent") for b in buttons]
    assert plots_memory.LABELS["random"] in labels, labels
    ActionChains(browser).move_to_element(buttons[labels.index(plots_memory.LABELS["random"])]) \
        .click().perform()
    xs, title = drawn()
    assert xs == pytest.approx(expected("random", 8, 0.01)), title
    assert title.startswith(plots_memory.LABELS["random"])

    # the N slider (the first): a click on its leftmost step, N = 4
    rail = browser.find_elements("css selector", ".slider-container .slider-rail-touch-rect")[0]
    ActionChains(browser).move_to_element_with_offset(rail, -rail.size["width"] // 2 + 3, 0) \
        .click().perform()
    xs, title = drawn()
    assert xs == pytest.approx(expected("random", 4, 0.01)), title
    assert "N = 4" in title
    assert console_errors(browser) == []
