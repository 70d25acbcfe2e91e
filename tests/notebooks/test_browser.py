"""Open the built smoke book in headless Chromium, with every host but 127.0.0.1
unreachable, and check what a reader sees on every page of the table of contents."""
from __future__ import annotations

import functools
import http.server
import re
import threading
import warnings

import pytest

from sst_core.book.runner import STATUS_PAGE, toc_pages

from .conftest import ROOT, require_chromium
from .reader import console_errors, page_bookkeeping, unnumbered_figures, unnumbered_tables

require_chromium()

PAGES = toc_pages(ROOT)

# what a tqdm bar leaves in an output: "40%|████      | 12/30 [00:01<00:02,  7.98run/s]"
PROGRESS = re.compile(r"\d+%\|.*\| *\d+/\d+|\d(?:it|run|stack|nb)/s\b")

# Text of the page's main part without code blocks, so code may contain '$'.
VISIBLE_TEXT = """
const main = document.querySelector('main') || document.body;
const copy = main.cloneNode(true);
copy.querySelectorAll('pre, code, script, style, mjx-container').forEach(e => e.remove());
return copy.innerText;
"""
WAIT_MATHJAX = """
const done = arguments[arguments.length - 1];
const start = Date.now();
(function poll() {  // MathJax may still be starting when the page reports "loaded"
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    MathJax.startup.promise.then(() => done('typeset')).catch(e => done('error: ' + e));
  } else if (Date.now() - start > 60000) {
    done('no-mathjax');
  } else {
    setTimeout(poll, 100);
  }
})();
"""


@pytest.fixture(scope="module")
def site(smoke_book):
    assert smoke_book.error is None, smoke_book.error
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # keep the test output readable
            pass

    handler = functools.partial(Quiet, directory=str(smoke_book.html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def html_path(page: str) -> str:
    return f"{page}.html"


@pytest.mark.parametrize("page", PAGES)
def test_page_reads_well_offline(site, browser, smoke_book, page):
    """Every check must hold on a fresh load. Under load a check has (rarely) failed once and
    held on reload; such a first failure is reported as a warning, not hidden, and a second
    failure fails the test with both messages."""

    assert (smoke_book.html / html_path(page)).is_file(), f"{page} was not built"
    twice(lambda: check_page(browser, f"{site}/{html_path(page)}", page), page)


def twice(check, page: str) -> None:
    """Run ``check``; if it fails, warn and run it once more (a fresh load), and fail with
    both messages if it fails again."""
    from selenium.common.exceptions import WebDriverException

    try:
        check()
    except (AssertionError, WebDriverException) as first:
        warnings.warn(f"{page}: first load failed, reloading: {first}")
        try:
            check()
        except (AssertionError, WebDriverException) as second:
            raise AssertionError(f"{page} failed twice: {first!r} then {second!r}") from second


# The status page's tables are bookkeeping by design, not results cited by number.
TABLES_NOT_NUMBERED = (f"notebooks/{STATUS_PAGE}",)


def check_page(browser, url: str, page: str) -> None:
    console_errors(browser)  # what earlier pages left in the log
    browser.get(url)
    assert browser.find_elements("css selector", "main"), f"{page}: no main content"
    title = browser.execute_script(
        "const h = document.querySelector('article h1'); return h ? h.textContent : '';")
    assert title.strip(), f"{page}: no title"

    n_math = len(browser.find_elements("css selector", "main .math"))
    if n_math:
        mathjax = browser.execute_async_script(WAIT_MATHJAX)
        assert mathjax == "typeset", f"{page}: MathJax did not run offline ({mathjax})"
        n_typeset = len(browser.find_elements("css selector", "main mjx-container"))
        assert n_typeset >= n_math, f"{page}: {n_typeset} of {n_math} formulas typeset"
    text = browser.execute_script(VISIBLE_TEXT)
    for raw in ("$$", "\\[", "\\(", "\\begin{"):
        assert raw not in text, f"{page}: raw math {raw!r} left in the page"

    for marker in ("Traceback (most recent call last)", "An Exception was encountered",
                   "Error in callback"):
        assert marker not in browser.find_element("css selector", "main").text, \
            f"{page}: an output shows {marker!r}"
    assert not browser.find_elements("css selector", "main .output.traceback, main .output.error")
    main_text = browser.find_element("css selector", "main").text
    leaked = PROGRESS.search(main_text)
    assert not leaked, f"{page}: progress output leaked into the page: {leaked.group(0)!r}"

    images = browser.execute_script(
        "return Array.from(document.querySelectorAll('main img'))"
        ".map(i => [i.getAttribute('src'), i.complete && i.naturalWidth > 0]);")
    broken = [src for src, ok in images if not ok]
    assert not broken, f"{page}: images that did not load: {broken}"
    errors = console_errors(browser)
    assert not errors, f"{page}: the console shows errors: {errors}"
    if not page.endswith(STATUS_PAGE):  # the status page counts records by design
        found = page_bookkeeping(browser)
        assert not found, f"{page}: bookkeeping in the chapter's text: {found[:5]}"
        bare = unnumbered_figures(browser)
        assert not bare, f"{page}: figures without a number and a caption: {bare[:5]}"
    if page.startswith("notebooks/") and page not in TABLES_NOT_NUMBERED:
        # a chapter's tables carry results; the front matter's (notation, reading guide)
        # are glossaries, read beside the text, not cited by number
        tables = unnumbered_tables(browser)
        assert not tables, f"{page}: tables without a number and a caption: {tables[:5]}"


def test_chapter_shows_figures_and_no_dead_control(site, browser):
    def check() -> None:
        browser.get(f"{site}/notebooks/p1_groups.html")
        assert len(browser.find_elements("css selector", "main img")) >= 3, "p1_groups: no figures"
        # the slider over t needs a live kernel: the static page shows a numbered figure
        # instead of a control that would do nothing
        assert not browser.find_elements(
            "css selector", "main .widget-slider, main .jupyter-widgets .widget-hslider")
        text = browser.find_element("css selector", "main").text.replace("\u2019", "'")
        assert "this book's scale" in text

    twice(check, "notebooks/p1_groups")


def test_the_status_page_lists_every_chapter(site, browser):
    from sst_core.book.runner import STATUS_PAGE, toc_titles
    from sst_core.experiments.registry import staged_sweeps

    def check() -> None:
        browser.get(f"{site}/notebooks/{STATUS_PAGE}.html")
        tables = browser.execute_script(
            "return Array.from(document.querySelectorAll('main table')).map(t => "
            "Array.from(t.querySelectorAll('tbody tr'))"
            ".map(r => Array.from(r.cells).map(c => c.innerText.trim())));")
        rows, *staged = tables  # the chapters; then the staged sweeps, if any has runs
        chapters = [r[0].replace("\u2019", "'") for r in rows]  # Sphinx's smart quotes
        assert chapters == [t for n, t in toc_titles(ROOT).items() if n != STATUS_PAGE]
        # a chapter with runs of its own shows the profile; one without (the overview, the
        # benchmarks) shows none
        assert all(r[1] == ("—" if r[2] == "no runs of its own" else "smoke") for r in rows)
        assert sum(r[1] == "smoke" for r in rows) > len(rows) / 2
        assert len(staged) <= 1 and all(
            r[0] in staged_sweeps() for t in staged for r in t)
        assert "code" not in browser.execute_script(  # its code cells are hidden
            "return Array.from(document.querySelectorAll('main .cell_input')).length ? 'code' : ''")

    twice(check, f"notebooks/{STATUS_PAGE}")


def test_the_progress_pattern_catches_a_tqdm_line():
    assert PROGRESS.search("Table 2:  40%|████      | 12/30 [00:01<00:02,  7.98run/s]")
    assert PROGRESS.search("100%|██████████| 1/1 [00:07<00:00,  7.40s/nb]")
    assert not PROGRESS.search("m_p rose in 40% of 12/30 runs")


def test_every_chapter_offers_its_notebook_and_jupytext_source(site, browser):
    """The download menu of a chapter links the executed .ipynb and the jupytext .py, and
    both files are served."""
    import urllib.request

    def check() -> None:
        browser.get(f"{site}/notebooks/p1_table2.html")
        links = browser.execute_script(
            "return Array.from(document.querySelectorAll('.dropdown-download-buttons a'))"
            ".map(a => a.href);")
        wanted = [f"{site}/_sources/notebooks/p1_table2.{ext}" for ext in ("ipynb", "py")]
        assert all(w in links for w in wanted), links
        for url in wanted:
            with urllib.request.urlopen(url) as reply:  # the local server only
                assert reply.status == 200 and reply.read(100)

    twice(check, "notebooks/p1_table2")


def test_a_launch_button_with_a_repository_set(browser, tmp_path):
    """With the one repository key set in a temporary config, a chapter shows the Binder
    launch button, pointing at the chapter's paired notebook."""
    from tests.test_book_site import REPO, tiny_book

    page = tiny_book(tmp_path, REPO)
    browser.get(page.as_uri())
    hrefs = browser.execute_script(
        "return Array.from(document.querySelectorAll('.dropdown-launch-buttons a'))"
        ".map(a => a.href);")
    assert any(h.startswith("https://mybinder.org/v2/gh/example-owner/example-repo/main")
               and h.endswith("urlpath=tree/notebooks/ch.ipynb") for h in hrefs), hrefs


def test_search_and_dark_mode_work_offline(site, browser):
    """The site's own search (its index is served with the pages) finds a word of the
    papers, and the theme switch turns the page dark; no network involved."""
    from selenium.webdriver.support.ui import WebDriverWait

    def check() -> None:
        browser.get(f"{site}/search.html?q=eigenvalues")
        WebDriverWait(browser, 60).until(
            lambda d: d.find_elements("css selector", "#search-results ul.search li"))
        browser.get(f"{site}/notebooks/p1_table2.html")
        button = browser.find_element("css selector", ".theme-switch-button")
        seen = []
        for _ in range(3):  # the switch cycles auto / light / dark
            browser.execute_script("arguments[0].click();", button)
            seen.append(browser.execute_script("return document.documentElement.dataset.theme"))
        assert "dark" in seen and "light" in seen, seen
        background = browser.execute_script(  # dark really is dark
            "document.documentElement.dataset.mode = 'dark';"
            "document.documentElement.dataset.theme = 'dark';"
            "return getComputedStyle(document.body).backgroundColor;")
        assert sum(int(v) for v in re.findall(r"\d+", background)[:3]) < 3 * 80, background

    twice(check, "search.html")
