"""The "How this page was made" block (sst_core.book.provenance.how_made), from
constructed records: what it counts, the failed runs' table, and a page of measurements."""
from sst_core.book.provenance import how_made
from sst_core.experiments import paper1
from sst_core.experiments.registry import version
from sst_core.reports import Table
from sst_core.spec import profiles
from sst_core.store.records import RunFailed, cached_run


def test_the_block_counts_the_chapters_runs_and_lists_the_failed_ones(tmp_path):
    P = profiles.PROFILES["smoke"]
    grid = paper1.table3_grid(P)

    def ok(cfg):
        return {"m_p": 1000, "eval": {}}

    def diverges(cfg):
        raise RunFailed("loss became nan at step 7")

    cached_run(grid[0], ok, root=tmp_path)
    cached_run(grid[1], diverges, root=tmp_path)
    made = how_made("p1_table3", P, root=tmp_path)
    assert (made.total, made.stored) == (len(grid), 2)
    assert [f[2] for f in made.failed] == ["RunFailed: loss became nan at step 7"]
    # cached_run stores the version it is given (none here: 0); the block shows both
    assert made.versions == {"tracking": [0]} and made.current == {"tracking": version("tracking")}
    rows = dict(made.rows())
    assert rows["runs"] == f"2 of {len(grid)} stored, 1 failed"
    md = made._repr_markdown_()
    assert md.startswith(":::{admonition} How this page was made\n:class: dropdown provenance")
    assert md.rstrip().endswith(":::")
    assert "loss became nan at step 7" in md and "--only p1_table3" in md


def test_a_page_of_measurements_shows_their_provenance_and_its_own_commands(tmp_path):
    grid = Table("", ["", "newest CPU record"], [["machine", "AMD EPYC, 2 cores"]]).grid()
    made = how_made("bench", "smoke", root=tmp_path, measured=grid,
                    regenerate="Regenerate: `make bench`.")
    md = made._repr_markdown_()
    assert grid.text in md and "Regenerate: `make bench`." in md
    assert "| runs |" not in md and "sst notebooks run" not in md


def test_the_overview_block_sums_up_each_chapter_it_reads(tmp_path):
    """A page that shows other chapters' results (the overview) gets one row per chapter
    it reads, at the profile that chapter shows: the chapter's own block in brief."""
    from sst_core.book.provenance import how_made_of_chapters

    P = profiles.PROFILES["smoke"]
    grid = paper1.table3_grid(P)
    cached_run(grid[0], lambda cfg: {"m_p": 1000, "eval": {}}, root=tmp_path)
    made = how_made_of_chapters("overview", "best", {"p1_table3": P, "p2_memory": P},
                                {"p1_table3": "Table 3: the nonlinearity family"},
                                root=tmp_path)
    md = made._repr_markdown_()
    assert md.startswith(":::{admonition} How this page was made\n:class: dropdown provenance")
    lines = md.splitlines()
    table3 = how_made("p1_table3", P, root=tmp_path)
    assert (f"| {{doc}}`Table 3: the nonlinearity family <p1_table3>` | `smoke` | "
            f"1 of {table3.total} stored, 0 failed | ") in md
    memory = how_made("p2_memory", P, root=tmp_path)
    assert f"| p2_memory | `smoke` | 0 of {memory.total} stored, 0 failed | 0 s | — |" in lines
    assert "--profile best --only overview" in md
    assert not [line for line in lines if line.startswith("| runs |")]  # no runs of its own


def test_more_follows_the_usual_regenerate_line_once(tmp_path):
    """A chapter's own commands and code pointers (``more``) come after the usual line,
    which the block writes once (it is not repeated in the chapter's text)."""
    made = how_made("p1_table3", "smoke", root=tmp_path, more="Code: `sst_core.models.cells`.")
    md = made._repr_markdown_()
    line = [ln for ln in md.splitlines() if ln.startswith("Regenerate:")]
    assert line == ["Regenerate: `sst notebooks run --profile smoke --only p1_table3`; "
                    "`sst status --profile smoke` counts its records. "
                    "Code: `sst_core.models.cells`."]
    assert md.count("sst notebooks run") == 1
