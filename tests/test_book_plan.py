"""`sst book --plan` on constructed stores: counts per chapter, the estimate from the stored
runs most like each missing one, best's choice and reason, and the CLI."""
import json
from pathlib import Path

import pytest

from sst_core import cli
from sst_core.book import plan
from sst_core.book.runner import BookUsageError, toc_notebooks, toc_parts, toc_titles
from sst_core.experiments.paper1 import table3_grid
from sst_core.reports import Table
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
        ("smoke", "this chapter was run with profile `smoke`", len(grid), len(grid) - 2, 2,
         1)
    assert p.estimate_s == pytest.approx(20.0)
    assert "2 missing, 1 stale: about 20 s to compute; the stale ones about 10 s more " \
        "with --retry-stale" in p.line()
    assert list(p.stale_s.values()) == [10.0]  # what the stale run took: its recompute
    twice = plan.plan_text([p, p], "smoke")  # a run two chapters read counts once
    assert "1 different stale runs, about 10 s to recompute with --retry-stale" in twice
    # cached_run stores CPU time: the plan says which clock priced the stored runs
    assert p.cpu_clocked == p.stored
    assert (f"its process CPU time ({2 * p.stored} of the {2 * p.stored} stored runs read"
            in twice)


def test_a_chapter_run_with_the_profile_best_chose_gives_bests_reason(root, monkeypatch):
    """The runner executes a chapter of a ``best`` build with the profile best resolved
    to: its plan then gives best's reason, never a profile for the whole book."""
    from sst_core.book import params

    monkeypatch.setattr(params, "best_profile",
                        lambda nb: ("standard", "best available: all 3 records"))
    assert plan.chapter_plan("p1_table3", "standard").why == "best available: all 3 records"
    assert plan.chapter_plan("p1_table3", "quick").why == \
        "this chapter was run with profile `quick`"


def test_no_stored_run_means_no_estimate_and_best_says_why(root):
    p = plan.chapter_plan("p1_table3", "best")
    assert p.profile == "quick" and p.stored == 0 and p.missing == p.total > 0
    assert p.estimate_s is None and "compute unknown" in p.line() and "README" in p.line()
    assert "`standard` 0 of" in p.why
    bench = plan.chapter_plan("bench", "smoke")
    assert bench.total == 0 and "reads no sweep" in bench.line()
    text = plan.plan_text([p, bench], "best")
    assert "why each profile:" in text and "p1_table3: best available" in text
    assert f"in all: {p.missing} different runs missing" in text
    assert f"{p.missing} runs without an estimate" in text


def test_the_cli_prints_the_plan_and_runs_nothing(root, capsys):
    assert cli.main(["book", "--plan", "--profile", "smoke", "--root", str(ROOT)]) == 0
    out = capsys.readouterr().out
    assert "p1_table2" in out and "p2_lra" in out and "in all:" in out
    assert not any(root.iterdir())  # nothing was computed or written


def test_the_status_page_says_when_records_were_made_in_a_few_words():
    assert plan.made_text("2026-12-01T10:16:02+00:00", "2026-12-01T10:18:40+00:00") == \
        "2026-12-01, 10:16 to 10:18"
    assert plan.made_text("2026-12-01T10:16:02+00:00", "2026-12-04T02:20:00+00:00") == \
        "2026-12-01 to 2026-12-04"
    assert plan.made_text(None, None) == "—"


def test_the_status_page_says_profile_runs_compute_and_when(root, monkeypatch):
    grid = table3_grid(get_profile("smoke"))
    for cfg in grid:
        cached_run(cfg, lambda c: {"m_p": None})
    monkeypatch.setattr(plan, "_run_cost", lambda record: 90.0)
    # these records carry no code hash, which counts as stale: first as if they were fresh
    monkeypatch.setattr(plan, "is_stale_record", lambda record: False)
    plans = plan.book_plan(["p1_table3", "bench"], "smoke")
    p = plans[0]
    assert p.compute_s == pytest.approx(90.0 * len(grid))
    assert p.made_first <= p.made_last and p.made_first.startswith("20")
    text = plan.status_markdown(plans)
    assert f"| p1_table3 | `smoke` | {len(grid)} / {len(grid)} | " in text
    assert "| bench | — | no runs of its own |" in text
    assert p.under_way is None and text.splitlines()[2].endswith(" | — |")
    standard = table3_grid(get_profile("standard"))
    cached_run(standard[0], lambda c: {"m_p": None})  # the larger sweep has begun
    p = plan.book_plan(["p1_table3"], "smoke")[0]
    assert p.under_way == ("standard", 1, len(standard)) and p.larger_complete is None
    assert f"| `standard`: 1 of {len(standard)} runs stored |" in plan.status_markdown([p])
    for cfg in standard[1:]:  # complete: what `best` shows, said as such on a smaller build
        cached_run(cfg, lambda c: {"m_p": None})
    p = plan.book_plan(["p1_table3"], "smoke")[0]
    assert p.under_way is None and p.larger_complete == ("standard", len(standard))
    assert (f"| `standard`: all {len(standard)} runs stored (`best` shows it) |"
            in plan.status_markdown([p]))
    assert plan.book_plan(["p1_table3"], "standard")[0].larger_complete is None
    # a record made by another version of the code it depends on is shown, and counted
    monkeypatch.setattr(plan, "is_stale_record", lambda record: True)
    p = plan.book_plan(["p1_table3"], "smoke")[0]
    assert (f"| p1_table3 | `smoke` | {len(grid)} / {len(grid)} ({len(grid)} made by earlier "
            "code: stale) | " in plan.status_markdown([p]))
    # on the page, a chapter is named by its title, linked
    titles = {"p1_table3": "Table 3: the nonlinearity family"}
    assert plan.status_markdown([p], titles).splitlines()[2].startswith(
        "| {doc}`Table 3: the nonlinearity family <p1_table3>` | `smoke` | ")


def test_a_build_says_what_it_will_compute_before_it_starts(root, monkeypatch, capsys):
    from sst_core.book import runner

    order = []
    monkeypatch.setattr(runner, "ensure_vendor", lambda *a, **k: None)
    monkeypatch.setattr(runner, "run_notebooks", lambda *a, **k: order.append("run") or [])
    monkeypatch.setattr(runner, "jupyter_book_build", lambda *a, **k: order.append("build"))
    project = root / "project"  # a build leaves its manifest under <project>/_build
    project.mkdir()
    for name in ("_toc.yml", "_config.yml"):
        (project / name).write_text((ROOT / name).read_text())
    (project / "notebooks").mkdir()
    for py in (ROOT / "notebooks").glob("*.py"):
        (project / "notebooks" / py.name).write_text(py.read_text())
    runner.build_book(project, "smoke", results=root / "elsewhere")
    out = capsys.readouterr().out
    assert out.index("sst book --plan, profile smoke") < out.index("[sst] book built")
    assert "p1_table2" in out and order == ["run", "build"]
    assert not (root / "elsewhere").exists()  # the plan reads, it writes nothing


def test_cost_key_reads_configs_and_record_dicts_and_analyses_name_their_run():
    from sst_core.experiments.paper1 import diagnostics_grid
    from sst_core.spec.configs import config_dict

    P = get_profile("smoke")
    diag = diagnostics_grid(P)[0]
    key = plan.cost_key(diag)
    assert key == ("tracking_diagnostics", diag.run.model, diag.run.group, diag.run.d_model)
    assert plan.cost_key(config_dict(diag)) == key
    t3 = table3_grid(P)[0]
    assert plan.cost_key(t3) == ("tracking", "rnn_phi", "S3", t3.d_model)


def _record(cfg, seconds, run_id):
    from sst_core.spec.configs import config_dict

    return {"config": config_dict(cfg), "wall_time_s": seconds, "run_id": run_id}


def test_a_missing_run_is_priced_from_the_runs_most_like_it():
    from dataclasses import replace

    from sst_core.experiments.paper1 import diagnostics_grid

    P = get_profile("smoke")
    t3 = table3_grid(P)[0]
    costs = plan.CostTable()
    costs.add("smoke", _record(t3, 10.0, "a"))
    costs.add("smoke", _record(replace(t3, group="C2"), 30.0, "b"))
    costs.add("smoke", _record(replace(t3, group="C2"), 30.0, "b"))  # the same run again
    # the same experiment, model and group; the same model on another group: the model's
    # mean; another model: the experiment's mean, marked as rough; another experiment: none
    assert costs.estimate("smoke", t3) == (10.0, False)
    assert costs.estimate("smoke", replace(t3, group="C6")) == (20.0, False)
    assert costs.estimate("smoke", replace(t3, model="mamba", phi=None)) == (20.0, True)
    assert costs.estimate("smoke", diagnostics_grid(P)[0]) == (None, False)
    assert costs.estimate("quick", t3) == (None, False)  # other profiles are not pooled


def test_an_lra_run_is_priced_by_the_examples_it_sees():
    from dataclasses import replace

    from sst_core.experiments import paper2

    P = get_profile("smoke")
    run = paper2.lra_main_grid(P)[0]
    assert plan.work(run) == run.n_train * run.epochs * run.H * run.n_layers
    assert plan.work(table3_grid(P)[0]) == 1.0  # a tracking run: no such fields
    # a model twice as wide, or twice as deep, costs twice as much per example
    assert plan.work(replace(run, H=2 * run.H)) == 2 * plan.work(run)
    assert plan.work(replace(run, n_layers=2 * run.n_layers)) == 2 * plan.work(run)
    costs = plan.CostTable()
    costs.add("smoke", _record(run, 60.0, "a"))
    costs.add("smoke", _record(replace(run, seed=9, n_train=3 * run.n_train), 300.0, "b"))
    # per example seen: 60 / n and 300 / 3n, mean 80 / n; a probe on 4 n examples: 320
    probe = replace(run, seed=8, n_train=4 * run.n_train)
    assert costs.estimate("smoke", probe) == (pytest.approx(320.0), False)
    assert costs.estimate("smoke", replace(probe, epochs=2 * run.epochs)) == \
        (pytest.approx(640.0), False)


def test_a_price_from_other_models_is_scaled_by_their_step_times(root):
    """The newest benchmark record's throughput rows scale a price taken from another
    model's runs: training rows for training runs, evaluation rows for analyses."""
    import json
    from dataclasses import replace

    from sst_core.experiments.paper1 import diagnostics_config

    bench = root / "bench"
    bench.mkdir()

    def bench_record(name, made, rows):
        entries = [{"name": f"throughput_{m.split('[')[0]}_{kind}", "model": m, "ours_s": t}
                   for m, kind, t in rows] + [{"name": "tanh_rnn_train_d64", "model": "tanh_rnn",
                                               "ours_s": 99.0}]
        (bench / name).write_text(json.dumps({"experiment": "bench", "entries": entries,
                                              "created_utc": made}))

    bench_record("cpu-b.json", "2026-01-01", [("mamba", "train_L60", 100.0)])  # older: not read
    bench_record("cpu-a.json", "2026-02-01", [("rnn_phi[tanh]", "train_L60", 0.01),
                                ("mamba", "train_L60", 0.04), ("mamba", "eval_L1000", 0.3),
                                ("tanh_rnn", "eval_L1000", 0.1)])
    steps = plan.step_times(root)
    assert steps == {("train", "rnn_phi"): 0.01, ("train", "mamba"): 0.04,
                     ("eval", "mamba"): 0.3, ("eval", "tanh_rnn"): 0.1}
    P = get_profile("smoke")
    t3 = table3_grid(P)[0]  # an rnn_phi run
    costs = plan.CostTable(steps)
    costs.add("smoke", _record(t3, 10.0, "a"))
    assert costs.estimate("smoke", replace(t3, model="mamba", phi=None)) == \
        (pytest.approx(40.0), True)
    assert costs.estimate("smoke", replace(t3, model="aussm", phi=None)) == (10.0, True)
    diag = diagnostics_config(P, replace(t3, model="tanh_rnn", phi=None))
    costs.add("smoke", _record(diag, 6.0, "d"))
    mamba_diag = diagnostics_config(P, replace(t3, model="mamba", phi=None))
    assert costs.estimate("smoke", mamba_diag) == (pytest.approx(18.0), True)
    # an analysis of an experiment with no stored run: the same model's analyses of other
    # experiments, else theirs of other models scaled by the evaluation steps; a training
    # run of such an experiment has no price
    from sst_core.spec.configs import LabelFreeConfig

    tanh_run = replace(t3, model="tanh_rnn", phi=None)
    assert costs.estimate("smoke", LabelFreeConfig(run=tanh_run, n_samples=8)) == (6.0, True)
    assert costs.estimate("smoke", LabelFreeConfig(run=replace(tanh_run, model="mamba"),
                                                   n_samples=8)) == (pytest.approx(18.0), True)
    assert costs.estimate("smoke", replace(t3, experiment="elsewhere")) == (None, False)
    assert plan.step_times(root / "nowhere") == {}


def test_chapters_pool_their_stored_runs_and_the_total_counts_a_shared_run_once(root,
                                                                                monkeypatch):
    P = get_profile("smoke")
    for cfg in table3_grid(P)[:3]:
        cached_run(cfg, lambda c: {"m_p": None})
    monkeypatch.setattr(plan, "_run_cost", lambda record: 60.0)
    # p1_table2 stores nothing of its own: its runs are priced from p1_table3's
    plans = plan.book_plan(["p1_table2", "p1_table3"], "smoke")
    t2, t3 = plans
    assert t2.stored == 0 and t2.estimate_s == pytest.approx(60.0 * t2.missing)
    assert t2.rough == t2.missing  # Table 2 has no rnn_phi: every run is priced roughly
    assert "priced roughly, from other models' or experiments' runs" in t2.line()
    twice = plan.book_plan(["p1_table3", "p1_table3"], "smoke")
    text = plan.plan_text(twice, "smoke")
    assert f"in all: {twice[0].missing} different runs missing" in text


def test_committed_timings_price_a_profile_whose_records_are_absent(root, monkeypatch, capsys):
    grid = table3_grid(get_profile("smoke"))
    for cfg in grid:
        cached_run(cfg, lambda c: {"m_p": None})
    monkeypatch.setattr(plan, "_run_cost", lambda record: 7.0)
    path = plan.save_timings("smoke", ["p1_table3"])
    assert path == root / "timings" / "smoke.json"
    entries = json.loads(path.read_text())["entries"]  # each keeps its width
    assert entries and all(e["config"]["d_model"] == grid[0].d_model for e in entries)
    for record in (root / "smoke").rglob("*.json"):  # a clone without the smoke records
        record.unlink()
    p = plan.chapter_plan("p1_table3", "smoke")
    assert p.stored == 0 and p.missing == len(grid)
    assert p.estimate_s == pytest.approx(7.0 * len(grid)) and p.timed == len(grid)
    made = p.timings_made
    assert made is not None and len(made) == 10  # a date
    assert f"({len(grid)} of them from the profile's timings measured {made}" in p.line()
    # a stored run of the profile itself takes precedence over the timings
    monkeypatch.setattr(plan, "_run_cost", lambda record: 100.0)
    cached_run(grid[0], lambda c: {"m_p": None})
    p = plan.chapter_plan("p1_table3", "smoke")
    assert p.timed == 0 and p.estimate_s == pytest.approx(100.0 * (len(grid) - 1))
    # the timings of one profile never price another's runs
    q = plan.chapter_plan("p1_table3", "quick")
    assert q.estimate_s is None and "compute unknown" in q.line()


def test_timings_refuse_best_and_an_empty_store_and_a_bad_file_is_named(root, capsys):
    with pytest.raises(ValueError, match="not best"):
        plan.save_timings("best", ["p1_table3"])
    with pytest.raises(ValueError, match="no stored run of profile 'smoke'"):
        plan.save_timings("smoke", ["p1_table3"])
    assert cli.main(["book", "--save-timings", "--profile", "best", "--root", str(ROOT)]) == 2
    assert "not best" in capsys.readouterr().err
    (root / "timings").mkdir()
    (root / "timings" / "smoke.json").write_text('{"schema": 1, "profile": "quick"}')
    (root / "timings" / "quick.json").write_text("not json")
    assert plan.load_timings() == {}
    err = capsys.readouterr().err
    assert "smoke.json: not a timings file" in err and "expected schema 1 and profile 'smoke'" in err
    assert "quick.json: not a timings file" in err
    p = plan.chapter_plan("p1_table3", "smoke")
    assert p.estimate_s is None and "compute unknown" in p.line()


def test_the_committed_smoke_timings_are_readable_and_cover_every_chapter():
    timings = plan.load_timings(ROOT / "results")
    assert "smoke" in timings
    table, made = timings["smoke"]
    assert made is not None
    P = get_profile("smoke")
    for notebook in toc_notebooks(ROOT):
        for cfg, _ in plan.chapter_runs(notebook, P, ROOT / "results"):
            k, _ = table.estimate("smoke", cfg)
            assert k is not None and k >= 0, (notebook, cfg)


@pytest.mark.parametrize("seconds, said", [(0.4, "about 0 s"), (20.0, "about 20 s"),
                                           (59.0, "about 59 s"), (60.0, "about 1 min"),
                                           (3000.0, "about 50 min"), (5400.0, "about 1.5 h")])
def test_a_plan_says_small_estimates_in_seconds_and_large_ones_in_hours(seconds, said):
    p = plan.ChapterPlan("p1_table3", "smoke", "asked", total=3, stored=1, missing=2,
                         estimate_s=seconds)
    assert f"2 missing, 0 stale: {said} to compute" in p.line()


def test_the_plan_totals_each_part_of_the_book_counting_a_shared_run_in_the_first():
    def chapter(notebook, priced, stale_s):
        return plan.ChapterPlan(notebook, "standard", "asked", total=9, stored=9 - len(priced),
                                missing=len(priced), stale=len(stale_s), priced=priced,
                                stale_s=stale_s)

    plans = [chapter("p1_table2", {"r1": 10.0, "r2": None}, {"s1": 5.0}),
             chapter("beyond_groups", {"r1": 10.0, "r3": 30.0}, {"s1": 5.0, "s2": 7.0}),
             chapter("bench", {"r4": 3.0}, {})]
    parts = {"p1_table2": "Paper 1", "beyond_groups": "Beyond"}  # bench in no part
    totals = {t.caption: t for t in plan.part_totals(plans, parts)}
    assert set(totals) == {"Paper 1", "Beyond"}
    p1, beyond = totals["Paper 1"], totals["Beyond"]
    assert (p1.missing, p1.known_s, p1.unknown, p1.stale, p1.stale_s) == (2, 10.0, 1, 1, 5.0)
    assert (beyond.missing, beyond.known_s, beyond.unknown, beyond.stale, beyond.stale_s) \
        == (1, 30.0, 0, 1, 7.0)  # r1 and s1 counted in Paper 1, which reads them first
    text = plan.plan_text(plans, "standard", parts)
    assert ("  Paper 1: 2 different runs missing, about 10 s of compute where it can be "
            "estimated, 1 runs without an estimate; 1 stale runs, about 5 s to recompute") in text
    assert "  Beyond: 1 different runs missing, about 30 s of compute; 1 stale runs" in text
    assert "by part" not in plan.plan_text(plans, "standard")


def test_every_chapter_is_named_by_its_title(tmp_path):
    """The status page names chapters as the table of contents does: by the first heading
    of each notebook's source, read by one function."""
    titles = toc_titles(ROOT)
    assert list(titles) == toc_notebooks(ROOT) and all(titles.values())
    assert titles["book_status"] == "Status of this build"
    assert titles["bench"] == "Speed: benchmarks"
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nparts:\n  - caption: One\n    chapters:\n"
        "      - file: notebooks/a\n      - file: book/c\n      - file: notebooks/b\n")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "a.py").write_text(
        "# ---\n# jupyter: {}\n# ---\n\n# %% [markdown]\n# # A title: with a colon\n#\n"
        "# ## Not this one\n")
    (tmp_path / "notebooks" / "b.py").write_text("# %% [markdown]\n# Some text, no title\n")
    with pytest.raises(BookUsageError, match=r"b\.py has no title"):
        toc_titles(tmp_path)
    (tmp_path / "notebooks" / "b.py").write_text("# %% [markdown]\n# # B\n")
    assert toc_titles(tmp_path) == {"a": "A title: with a colon", "b": "B"}
    (tmp_path / "notebooks" / "b.py").unlink()
    with pytest.raises(BookUsageError, match=r"b\.py is unreadable"):
        toc_titles(tmp_path)


def test_every_chapter_of_the_book_belongs_to_a_part(tmp_path):
    parts = toc_parts(ROOT)
    assert set(parts) == set(toc_notebooks(ROOT))
    assert parts["p1_table2"].startswith("Paper 1") and parts["p2_lra"].startswith("Paper 2")
    assert parts["beyond_delta"] == "Beyond the papers"
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nparts:\n  - chapters:\n      - file: notebooks/a\n"
        "  - caption: Two\n    chapters:\n      - file: notebooks/b\n      - file: book/c\n")
    assert toc_parts(tmp_path) == {"b": "Two"}  # a part without a caption, a page: left out
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nparts:\n  - caption: One\n    chapters:\n"
        "      - file: book/a\n        sections:\n          - file: notebooks/b\n"
        "            sections:\n              - file: notebooks/c\n")
    assert toc_parts(tmp_path) == {"b": "One", "c": "One"}  # sections, however deep


def test_the_price_table_of_a_sweep_pools_every_stored_run_of_its_profile(root, monkeypatch):
    """``sst sweep --stop-by`` prices a task from every stored record of its profile (any
    experiment's folder); an unreadable record is left out, other profiles are not read."""
    from dataclasses import replace

    from sst_core.experiments import paper2
    from sst_core.store.records import load_record, record_path, run_compute_s

    P = get_profile("smoke")
    t3 = table3_grid(P)[0]
    lra = paper2.lra_main_grid(P)[0]
    monkeypatch.setattr(plan, "step_times", lambda root=None: {})
    for cfg in (t3, replace(t3, seed=1), lra):
        cached_run(cfg, lambda c: {"m_p": None})
    cached_run(replace(t3, profile="quick"), lambda c: {"m_p": None})
    bad = root / "smoke" / "tracking" / "0000000000000000.json"
    bad.write_text("{not json")
    costs = plan.price_table("smoke")
    stored = [load_record(record_path(c)) for c in (t3, replace(t3, seed=1))]
    mean = sum(run_compute_s(r) for r in stored) / 2
    assert costs.estimate("smoke", replace(t3, seed=7)) == (pytest.approx(mean), False)
    lra_s = run_compute_s(load_record(record_path(lra)))
    assert costs.estimate("smoke", replace(lra, seed=7))[0] == pytest.approx(lra_s)
    assert costs.estimate("quick", t3) == (None, False)  # only the profile asked for


def test_an_analysis_is_priced_by_its_group_before_its_model():
    """What an analysis costs depends on the group it rolls out (A5's 60 classes against
    S3's 6) more than on the model: a missing A5 analysis is priced from other models' A5
    analyses of its experiment, else from A5 analyses of other experiments, before the same
    model's analyses of other groups. Training runs keep the model first."""
    from dataclasses import replace

    from sst_core.experiments.paper1 import diagnostics_config
    from sst_core.spec.configs import LabelFreeConfig

    P = get_profile("smoke")
    t3 = table3_grid(P)[0]
    tracker = {(m, g): replace(t3, model=m, phi=None, group=g)
               for m in ("tanh_rnn", "mamba") for g in ("S3", "A5")}
    costs = plan.CostTable()
    costs.add("smoke", _record(diagnostics_config(P, tracker["tanh_rnn", "S3"]), 6.0, "a"))
    costs.add("smoke", _record(diagnostics_config(P, tracker["mamba", "A5"]), 300.0, "b"))
    costs.add("smoke", _record(tracker["mamba", "S3"], 50.0, "c"))
    # tanh_rnn on A5: mamba's A5 analysis (rough), not tanh_rnn's S3 one
    assert costs.estimate("smoke", diagnostics_config(P, tracker["tanh_rnn", "A5"])) == \
        (300.0, True)
    assert costs.estimate("smoke", diagnostics_config(P, tracker["tanh_rnn", "S3"])) == \
        (6.0, False)
    # no label-free analysis stored: the A5 analyses of the other experiment
    label_free = LabelFreeConfig(run=tracker["tanh_rnn", "A5"], n_samples=8)
    assert costs.estimate("smoke", label_free) == (300.0, True)
    costs.add("smoke", _record(diagnostics_config(P, tracker["tanh_rnn", "A5"]), 200.0, "d"))
    assert costs.estimate("smoke", label_free) == (200.0, True)  # the same model's, first
    # a training run: the same model on another group, as before
    assert costs.estimate("smoke", tracker["mamba", "A5"]) == (50.0, False)


def test_the_status_page_reports_the_staged_sweeps_that_have_runs_stored(root):
    """Staged sweeps (no chapter reads them) are `wide` and the two Pathfinder grids, and
    never a sweep a chapter reads; the page's table has a row per staged sweep and profile with a
    run stored, with `sst status`'s counts, and a sentence where none has one."""
    from sst_core.experiments.paper1 import table2_wide_grid
    from sst_core.experiments.registry import (
        SWEEP_GRIDS,
        SWEEPS,
        chapter_sweeps,
        staged_sweeps,
        sweep_configs,
    )
    from sst_core.store.records import RunFailed

    staged = staged_sweeps()
    assert {"wide", "lra_pathfinder", "lra_pathfinder_ablation"} <= set(staged)
    assert all(not g.chapters for name in staged for g in SWEEP_GRIDS[name])
    assert not set(staged) & {s for nb in toc_notebooks(ROOT) for s in chapter_sweeps(nb)}
    assert plan.staged_table(("smoke",), root) is None  # nothing stored: no table
    grid = table2_wide_grid(get_profile("smoke"))
    total = len(sweep_configs("wide", get_profile("smoke")))  # its grids' union
    for cfg in grid[:2]:
        cached_run(cfg, lambda c: {"m_p": 60})

    def fail(cfg):
        raise RunFailed("diverged")

    cached_run(grid[2], fail)
    table = plan.staged_table(("smoke",), root)
    assert table.columns == plan.STAGED_COLUMNS
    assert [(d["sweep"], d["profile"]) for d in table.data] == [("wide", "smoke")]
    assert (table.data[0]["stored"], table.data[0]["failed"]) == (3, 1)  # lra_pathfinder: none
    text = table.grid().text
    (row,) = [line for line in text.splitlines() if line.startswith("| `wide`")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:4] == ["`smoke`", "3 (1 failed)", str(total - 3)]
    # the missing runs priced from the stored ones (the failed run's share counts too)
    guess = plan.missing_estimate("wide", "smoke", plan.price_table("smoke", root), root)
    assert guess["rough"] + guess["unpriced"] <= total - 3 and guess["seconds"] > 0
    assert cells[5] == plan.estimate_cell(guess, retrain=False)
    assert plan.estimate_cell({"seconds": 7200.0, "rough": 3, "unpriced": 2}) == \
        "2.0 h\\* + 2 unpriced"
    # what each sweep computes is listed under the table, not in a column
    assert plan.staged_notes(table) == f"- `wide`: {SWEEPS['wide']}."
    assert plan.staged_notes(None) == "- none has a run stored."


def test_the_estimate_counts_trackers_whose_weights_an_analysis_still_needs(tmp_path,
                                                                             monkeypatch):
    """A stored, ok tracker whose weights file is gone and whose analysis is missing is
    trained again by the sweep: the estimate counts it with what it took the first time;
    not when its analysis is stored, its weights are there, or it failed."""
    from sst_core.experiments import paper1
    from sst_core.store.records import (
        RunFailed,
        artifact_path,
        load_record,
        record_path,
        run_compute_s,
    )

    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    P = get_profile("smoke")
    t = paper1.s3_runs(P)[:4]
    read = [paper1.diagnostics_config(P, c) for c in t]
    for c in t[:3]:
        cached_run(c, lambda cfg: {"m_p": 60})
    for c in t[:2]:  # weights gone (cached_run writes none): t0's analysis is missing
        assert not artifact_path(c, ".pt", tmp_path).exists()
    cached_run(read[1], lambda cfg: {"r": 0.5})  # t1's analysis stored
    artifact_path(t[2], ".pt", tmp_path).write_bytes(b"w")  # weights kept

    def fail(cfg):
        raise RunFailed("diverged")

    cached_run(t[3], fail)  # failed: nothing to load, its analysis is recorded failed
    monkeypatch.setattr(plan, "sweep_configs", lambda sweep, P: list(t) + read)
    guess = plan.missing_estimate("x", "smoke", plan.price_table("smoke", tmp_path), tmp_path)
    first = run_compute_s(load_record(record_path(t[0], tmp_path)))
    assert (guess["retrain"], guess["retrain_seconds"]) == (1, first)
    three = {"seconds": 7200.0, "rough": 0, "unpriced": 0, "retrain": 3,
             "retrain_seconds": 5400.0}
    assert plan.estimate_cell(three) == \
        "2.0 h + 1.5 h to train 3 trackers again (weights missing)"
    assert plan.estimate_cell(three, retrain=False) == "2.0 h"
    # the status page's table leaves the retraining out and says it under the table, per
    # profile that has any
    table = Table("t", plan.STAGED_COLUMNS, [], data=[
        {"sweep": "wide", "what": "W", "profile": "standard", "missing_estimate": three},
        {"sweep": "wide", "what": "W", "profile": "paper", "missing_estimate": {
            **three, "retrain": 0, "retrain_seconds": 0.0}}])
    assert plan.staged_notes(table) == (
        "- `wide`: W. At `standard` it also takes 1.5 h to train 3 trackers again: a "
        "missing analysis reads them, and their weights are not in this results directory "
        "(a staged sweep commits no weights).")


def test_a_training_run_is_priced_from_runs_of_its_width():
    """A run at another d_model costs another amount (Mamba at 128: 4.5-5.6 times 32 per
    step): a missing run is priced from the same model at its width (another group), and
    only roughly from runs of another width; timings without widths stay as they were."""
    from dataclasses import replace

    P = get_profile("smoke")
    t3 = table3_grid(P)[0]
    narrow = {g: replace(t3, model="mamba", phi=None, group=g, d_model=32) for g in ("S3", "C2")}
    wide = {g: replace(c, d_model=128) for g, c in narrow.items()}
    costs = plan.CostTable()
    costs.add("smoke", _record(narrow["S3"], 100.0, "a"))
    costs.add("smoke", _record(narrow["C2"], 60.0, "b"))
    assert costs.estimate("smoke", narrow["S3"]) == (100.0, False)
    assert costs.estimate("smoke", wide["S3"]) == (100.0, True)  # another width: rough
    costs.add("smoke", _record(wide["C2"], 500.0, "c"))
    assert costs.estimate("smoke", wide["S3"]) == (500.0, False)  # its width, another group
    assert costs.estimate("smoke", narrow["S3"]) == (100.0, False)
    # timings written before widths were kept have none: priced as before, not rough
    legacy = plan.CostTable()
    legacy.add("smoke", {"config": {"experiment": "tracking", "model": "mamba", "group": "C2"},
                         "wall_time_s": 500.0, "run_id": "c"})
    assert legacy.estimate("smoke", narrow["S3"]) == (500.0, False)
