"""Progress of a chapter's runs: the kernel writes it to a file, the runner shows it."""
import os
import time

from sst_core.book.runner import ProgressWatch
from sst_core.experiments import progress, runs
from sst_core.spec.configs import OrderSensitivityConfig


def test_report_writes_only_where_a_file_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv(progress.ENV, raising=False)
    progress.report("Table 2", 1, 3)  # no file named: nothing happens
    path = tmp_path / "p.json"
    monkeypatch.setenv(progress.ENV, str(path))
    progress.report("Table 2", 1, 3, "mamba S3")
    assert progress.read(path) == {"desc": "Table 2", "done": 1, "total": 3,
                                   "current": "mamba S3"}
    path.write_text("{ half")
    assert progress.read(path) is None and progress.read(tmp_path / "none") is None


def test_run_all_reports_each_run(tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path / "results"))
    path = tmp_path / "p.json"
    monkeypatch.setenv(progress.ENV, str(path))
    seen = []
    real = progress.report
    monkeypatch.setattr(progress, "report", lambda *a: (seen.append(a), real(*a)))
    cfgs = [OrderSensitivityConfig(group="C2", tokens="all", n_words=8, word_length=4,
                                   seed=s, profile="smoke") for s in (0, 1)]
    runs.run_all(cfgs, desc="groups")
    assert [a[:3] for a in seen] == [("groups", 0, 2), ("groups", 1, 2), ("groups", 2, 2)]
    assert progress.read(path)["done"] == 2


def test_the_watch_follows_the_file_and_cleans_up(monkeypatch):
    watch = ProgressWatch("p1_table2", echo=False, poll_s=0.02)
    monkeypatch.setenv(progress.ENV, str(watch.path))
    for done in range(3):
        progress.report("Table 2", done, 2, f"run {done}")
        time.sleep(0.1)
    watch.stop()
    assert [s["done"] for s in watch.states] == [0, 1, 2]
    assert not os.path.exists(watch.path)
