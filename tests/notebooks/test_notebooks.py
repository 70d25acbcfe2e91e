"""Every notebook runs under the smoke profile, and its parameters are checked."""

import nbformat
import pytest

from sst_core.book import params
from sst_core.book.runner import run_notebook, toc_notebooks
from sst_core.spec import profiles

from .conftest import ROOT, copy_project

NOTEBOOKS = toc_notebooks(ROOT)


def test_every_notebook_source_is_in_toc_and_config():
    sources = sorted(p.stem for p in (ROOT / "notebooks").glob("*.py"))
    assert sources == sorted(NOTEBOOKS)
    assert sorted(params.NOTEBOOKS) == sorted(NOTEBOOKS)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_cell_marker_starts_a_cell(name):
    """jupytext reads one cell per `# %%` marker, with the marker's type: a fence left open
    in a Markdown cell (a directive's backticks) would swallow the cells after it, and the
    chapter would run without them and still pass."""
    import re

    import jupytext

    source = (ROOT / "notebooks" / f"{name}.py").read_text()
    markers = re.findall(r"^# %%(.*)$", source, re.M)
    cells = [c for c in jupytext.read(ROOT / "notebooks" / f"{name}.py").cells
             if c.source.strip() or c.cell_type == "code"]
    kinds = ["markdown" if "[markdown]" in m else "code" for m in markers]
    assert [c.cell_type for c in cells][-len(kinds):] == kinds


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_no_backtick_fence_has_a_backtick_in_its_directive_line(name):
    """CommonMark forbids a backtick in the info string of a backtick fence: a directive
    opened with backticks whose caption holds a role ({numref}`x`, {glue:text}`y`) is no
    directive at all, and its table and label vanish from the page. Such a directive is
    opened with colons instead (``:::{table}``)."""
    import re

    source = (ROOT / "notebooks" / f"{name}.py").read_text()
    bad = [line[:60] for line in source.splitlines()
           if re.match(r"^# (`{3,})\{", line) and "`" in re.sub(r"^# `{3,}", "", line)]
    assert not bad, f"{name}: a backtick fence with a backtick in its directive line: {bad}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_under_smoke(smoke_book, name):
    runs = {r.name: r for r in smoke_book.runs}
    assert smoke_book.error is None or name not in smoke_book.error, smoke_book.error
    assert name in runs, f"{name} did not run: {smoke_book.error}"
    assert runs[name].ok, runs[name].error
    nb = nbformat.read(smoke_book.root / "notebooks" / f"{name}.ipynb", as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected and all("remove-cell" in c.metadata["tags"] for c in injected)
    assert 'profile = "smoke"' in injected[0].source
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors


def test_smoke_book_built(smoke_book):
    assert smoke_book.error is None, smoke_book.error
    for name in NOTEBOOKS:
        assert (smoke_book.html / "notebooks" / f"{name}.html").is_file()


def test_smoke_records_written_outside_the_tree(smoke_book):
    recs = list((smoke_book.root / "results" / "smoke").rglob("*.json"))
    assert recs, "the smoke run stored no records"


def test_bad_parameters_fail_before_any_work(tmp_path):
    root = copy_project(tmp_path)
    name = NOTEBOOKS[0]
    with pytest.raises(profiles.ConfigError, match="'n_wrods'"):
        run_notebook(name, "smoke", root, {"n_wrods": 3})
    with pytest.raises(profiles.ConfigError, match="'fast'"):
        run_notebook(name, "fast", root)
    assert not (root / "notebooks" / f"{name}.ipynb").exists()


def test_notebook_itself_rejects_a_typo_from_plain_papermill(tmp_path):
    """Run by hand with papermill (which only warns on unknown names), the notebook's own
    settings cell stops at the typo before the experiments run."""
    import jupytext
    import papermill

    name = "p1_groups"
    root = copy_project(tmp_path)
    nb = root / "notebooks" / f"{name}.ipynb"
    jupytext.write(jupytext.read(root / "notebooks" / f"{name}.py"), nb)
    with pytest.raises(papermill.PapermillExecutionError) as err:
        papermill.execute_notebook(str(nb), str(tmp_path / "out.ipynb"), kernel_name="python3",
                                   parameters={"profile": "smoke", "word_lenght": 5},
                                   progress_bar=False, cwd=str(nb.parent))
    assert "word_lenght" in str(err.value)
    assert not (root / "results").exists()


def test_the_status_page_runs_last_and_counts_the_chapters_records(smoke_book):
    from sst_core.book.runner import STATUS_PAGE, select

    assert select(ROOT, None)[-1] == STATUS_PAGE and STATUS_PAGE in NOTEBOOKS
    assert [r.name for r in smoke_book.runs][-1] == STATUS_PAGE
    nb = nbformat.read(smoke_book.root / "notebooks" / f"{STATUS_PAGE}.ipynb", as_version=4)
    shown = "".join(o.get("data", {}).get(key, "") for c in nb.cells
                    if c.cell_type == "code" for o in c.get("outputs", [])
                    for key in ("text/markdown",  # shown, or glued into a numbered table
                                "application/papermill.record/text/markdown"))
    row = next(line for line in shown.splitlines()
               if line.startswith("| ") and "<p1_table2>`" in line.split("|")[1])
    stored, total = (int(x) for x in row.split("|")[3].split("/"))
    assert row.split("|")[2].strip() == "`smoke`" and stored == total > 0


def test_no_chapter_sums_the_wall_times_of_its_records():
    """A stacked run's record holds the whole stack's wall time: a chapter's compute comes
    from ``reports.compute_s`` (each run's share), never from summing ``wall_time_s``."""
    import re

    pattern = re.compile(r"sum\([^)]*\[\s*[\"']wall_time_s[\"']\s*\]")
    for path in sorted((ROOT / "notebooks").glob("*.py")):
        assert not pattern.search(path.read_text()), path.name


# the characters of a code line the content column shows without scrolling, in a 1300 px
# window (measured on the built pages: about 79 monospace characters)
CODE_WIDTH = 79


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_code_line_a_reader_sees_fits_the_page(name):
    """A code cell shown on the page (no ``remove-input`` or ``remove-cell`` tag) has no
    line longer than :data:`CODE_WIDTH`: a longer one scrolls sideways in the built book."""
    import jupytext

    long = [line for cell in jupytext.read(ROOT / "notebooks" / f"{name}.py").cells
            if cell.cell_type == "code"
            and not {"remove-input", "remove-cell"} & set(cell.metadata.get("tags", []))
            for line in cell.source.splitlines() if len(line) > CODE_WIDTH]
    assert not long, f"{len(long)} shown code line(s) wider than {CODE_WIDTH}: {long[:3]}"
