"""`sst book --plan` on constructed stores: counts per chapter, the estimate from stored
runs of the same sweep, best's choice and reason, and the CLI."""
from pathlib import Path

import pytest

from sst_core import cli
from sst_core.book import plan
from sst_core.experiments.paper1 import table3_grid
from sst_core.spec.profiles import get_profile
from sst_core.store.records import cached_run

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    return tmp_path


def test_counts_and_estimate_from_the_stored_runs_of_the_sweep(root, monkeypatch):
    grid = table3_grid(get_profile("smoke"))
    for cfg in grid[:-2]:
        cached_run(cfg, lambda c: {"m_p": None})
    monkeypatch.setattr(plan, "_run_cost", lambda record: 10.0)
    stale = {"n": 0}

    def one_stale(record):
        stale["n"] += 1
        return stale["n"] == 1

    monkeypatch.setattr(plan, "is_stale_record", one_stale)
    p = plan.chapter_plan("p1_table3", "smoke")
    assert (p.profile, p.why, p.total, p.stored, p.missing, p.stale) == \
        ("smoke", "the book was built with profile `smoke`", len(grid), len(grid) - 2, 2, 1)
    assert p.estimate_s == pytest.approx(20.0)
    assert "2 missing, 1 stale: about 0 min to compute" in p.line()


def test_no_stored_run_means_no_estimate_and_best_says_why(root):
    p = plan.chapter_plan("p1_table3", "best")
    assert p.profile == "quick" and p.stored == 0 and p.missing == p.total > 0
    assert p.estimate_s is None and "compute unknown" in p.line()
    assert "`standard` 0 of" in p.why
    bench = plan.chapter_plan("bench", "smoke")
    assert bench.total == 0 and "reads no sweep" in bench.line()
    text = plan.plan_text([p, bench], "best")
    assert "why each profile:" in text and "p1_table3: best available" in text
    assert "1 chapter(s) without an estimate" in text


def test_the_cli_prints_the_plan_and_runs_nothing(root, capsys):
    assert cli.main(["book", "--plan", "--profile", "smoke", "--root", str(ROOT)]) == 0
    out = capsys.readouterr().out
    assert "p1_table2" in out and "p2_lra" in out and "in all:" in out
    assert not any(root.iterdir())  # nothing was computed or written


def test_the_status_page_says_profile_runs_compute_and_when(root, monkeypatch):
    grid = table3_grid(get_profile("smoke"))
    for cfg in grid:
        cached_run(cfg, lambda c: {"m_p": None})
    monkeypatch.setattr(plan, "_run_cost", lambda record: 90.0)
    plans = plan.book_plan(["p1_table3", "bench"], "smoke")
    p = plans[0]
    assert p.compute_s == pytest.approx(90.0 * len(grid))
    assert p.made_first <= p.made_last and p.made_first.startswith("20")
    text = plan.status_markdown(plans)
    assert f"| p1_table3 | `smoke` | {len(grid)} / {len(grid)} | " in text
    assert "| bench | `smoke` | computed on the page |" in text


def test_a_build_says_what_it_will_compute_before_it_starts(root, monkeypatch, capsys):
    from sst_core.book import runner

    order = []
    monkeypatch.setattr(runner, "ensure_vendor", lambda *a, **k: None)
    monkeypatch.setattr(runner, "run_notebooks", lambda *a, **k: order.append("run") or [])
    monkeypatch.setattr(runner, "jupyter_book_build", lambda *a, **k: order.append("build"))
    runner.build_book(ROOT, "smoke", results=root / "elsewhere")
    out = capsys.readouterr().out
    assert out.index("sst book --plan, profile smoke") < out.index("[sst] book built")
    assert "p1_table2" in out and order == ["run", "build"]
    assert not (root / "elsewhere").exists()  # the plan reads, it writes nothing
