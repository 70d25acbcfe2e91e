"""What a reader of a built page must not meet, as checks on a page open in the browser.

- :func:`console_errors`: the console's errors since the last call (every page);
- :func:`bookkeeping`: the project's bookkeeping in a chapter's text (record counts, the
  words "ledger" and "stale", failure logs, commit hashes and run ids, literal markup);
- :func:`unnumbered_figures`: a figure (an image or an interactive plot) without a number
  and a caption;
- :func:`unnumbered_tables`: a table without a number and a caption.

The last three are meant for the chapters; the status page states record counts by design.
"""
from __future__ import annotations

import re

# The text a reader sees in the page's main part: prose and outputs, without the code
# cells' source and code blocks (a <pre> outside a cell's output; code may hold any word),
# without scripts, styles and typeset math, and without the collapsed "How this page was
# made" block (.provenance), which is where a
# chapter's bookkeeping belongs.
READER_TEXT = """
const main = document.querySelector('main') || document.body;
const copy = main.cloneNode(true);
copy.querySelectorAll('.cell_input, script, style, mjx-container, .math, .provenance')
    .forEach(e => e.remove());
// code blocks, but not a code cell's printed output (also a <pre>), which a reader reads
copy.querySelectorAll('pre').forEach(e => { if (!e.closest('.cell_output')) e.remove(); });
return copy.innerText;
"""

# Every figure-like element of the main part that is not inside a numbered figure with a
# caption: [what, its source or id].
UNNUMBERED_FIGURES = """
const main = document.querySelector('main') || document.body;
const out = [];
main.querySelectorAll('img, .plotly-graph-div').forEach(e => {
  const fig = e.closest('figure, div.figure');
  const number = fig && fig.querySelector('.caption-number');
  const text = fig && fig.querySelector('.caption-text');
  if (!(number && number.textContent.trim() && text && text.textContent.trim())) {
    out.push([e.tagName.toLowerCase(), e.getAttribute('src') || e.id || '']);
  }
});
return out;
"""

# Every table of the main part that is not a numbered table with a caption (a MyST {table},
# whose caption is the table's own <caption> and reads "Table N"; a table shown as a numbered
# figure reads "Fig. N" and counts as unnumbered), outside the code cells' source and the
# provenance block: [its id or the text of its first row].
UNNUMBERED_TABLES = """
const main = document.querySelector('main') || document.body;
const out = [];
const numbered = c => c && c.querySelector('.caption-number') &&
  c.querySelector('.caption-number').textContent.trim() &&
  c.querySelector('.caption-text') && c.querySelector('.caption-text').textContent.trim();
main.querySelectorAll('table').forEach(t => {
  if (t.closest('.cell_input, .provenance')) return;
  let ok = false;
  for (let e = t; e && e !== main && !ok; e = e.parentElement) {
    if (e.matches('table')) {
      const cap = Array.from(e.children).find(c => c.tagName === 'CAPTION');
      ok = !!numbered(cap) && /^Table\\b/.test(cap.querySelector('.caption-number').textContent.trim());
    }
  }
  if (!ok) {
    const row = t.querySelector('tr');
    out.push(t.id || (row ? row.innerText.replace(/\\s+/g, ' ').trim().slice(0, 80) : ''));
  }
});
return out;
"""

# The bookkeeping a chapter must not show a reader, by what it looks like.
BOOKKEEPING = {
    "a record count": re.compile(r"\b\d[\d,]*(?:\W+[\w-]+){0,3}?\W+records?\b", re.I),
    "the ledger": re.compile(r"\bledger\b", re.I),
    "staleness": re.compile(r"\bstale\b", re.I),
    "a failure log": re.compile(r"\bRunFailed\b|\bloss diverged at step\b"),
    # a commit hash or run id: 7 to 40 hex digits, with a digit and a letter among them
    "a commit hash": re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"),
    "literal markup": re.compile(r"`|\{(?:glue|numref|ref|cite|doc|eq|math)[:}]|^:::", re.M),
}


def console_errors(browser) -> list[str]:
    """The console's errors (level SEVERE: uncaught exceptions, failed requests, console.error)
    logged since the last call; reading them clears the log."""
    return [entry["message"] for entry in browser.get_log("browser")
            if entry["level"] == "SEVERE"]


def bookkeeping(text: str) -> list[str]:
    """What of :data:`BOOKKEEPING` ``text`` shows: "<kind>: <the text found>" per finding."""
    return [f"{kind}: {m.group(0)!r}" for kind, pattern in BOOKKEEPING.items()
            for m in pattern.finditer(text)]


def page_bookkeeping(browser) -> list[str]:
    """:func:`bookkeeping` of the open page's reader text (:data:`READER_TEXT`)."""
    return bookkeeping(browser.execute_script(READER_TEXT))


def unnumbered_figures(browser) -> list[tuple[str, str]]:
    """The open page's images and plots outside a numbered figure with a caption."""
    return [tuple(x) for x in browser.execute_script(UNNUMBERED_FIGURES)]


def unnumbered_tables(browser) -> list[str]:
    """The open page's tables that are not numbered tables ("Table N") with a caption (code
    cells' source and the provenance block aside; a table inside a numbered figure counts as
    unnumbered): each one's id or its first row's text."""
    return list(browser.execute_script(UNNUMBERED_TABLES))
