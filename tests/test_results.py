import dataclasses
import json
from dataclasses import dataclass

import pytest

from sst_core.experiments import registry
from sst_core.store import records as store_records
from sst_core.store.records import RecordWarning, RunFailed, cached_run, load_record


@dataclass(frozen=True)
class Cfg:
    x: int
    seed: int = 0
    profile: str = "smoke"
    experiment: str = "unit"


class Counter:
    def __init__(self):
        self.calls = 0

    def __call__(self, cfg):
        self.calls += 1
        return {"y": cfg.x * 2}


def test_run_is_stored_with_provenance(tmp_path):
    fn = Counter()
    rec = cached_run(Cfg(3), fn, root=tmp_path)
    path = tmp_path / "smoke" / "unit" / f"{rec['run_id']}.json"
    assert path.is_file()
    stored = json.loads(path.read_text())
    assert stored == rec
    assert rec["status"] == "ok" and rec["metrics"] == {"y": 6}
    assert rec["config"] == {"x": 3, "seed": 0, "profile": "smoke", "experiment": "unit"}
    assert rec["seed"] == 0 and rec["device"] == "cpu"
    assert rec["wall_time_s"] >= 0
    assert "numpy" in rec["versions"] and "python" in rec["versions"]
    assert rec["git_commit"]  # a hash, possibly +dirty, or "unknown" outside git
    assert not list(path.parent.glob("*.tmp"))  # the temporary file was renamed


def test_a_record_stores_the_cpu_time_of_its_run_beside_its_wall_time(tmp_path):
    """cpu_time_s is the process's CPU time while the run computed: a run that waits
    (as one does while other jobs hold the cores) adds wall time, not CPU time; a run that
    computes adds both."""
    import time

    def waits(cfg):
        time.sleep(0.3)
        return {}

    def computes(cfg):
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
        return {}

    idle = cached_run(Cfg(1), waits, root=tmp_path)
    busy = cached_run(Cfg(2), computes, root=tmp_path)
    assert idle["wall_time_s"] >= 0.3 and idle["cpu_time_s"] < 0.1
    assert busy["cpu_time_s"] >= 0.3
    assert load_record(store_records.record_path(Cfg(2), tmp_path))["cpu_time_s"] == \
        busy["cpu_time_s"]
    assert store_records.run_compute_s(idle) == idle["cpu_time_s"]


@pytest.mark.parametrize("value", [-1.0, "1 s", float("nan"), True])
def test_a_record_with_a_bad_cpu_time_is_unusable(tmp_path, value):
    rec = cached_run(Cfg(3), Counter(), root=tmp_path)
    rec["cpu_time_s"] = value
    with pytest.raises(store_records.RecordError, match="field cpu_time_s"):
        store_records.check_record(rec, "r.json")


def test_second_call_reads_the_record(tmp_path):
    fn = Counter()
    first = cached_run(Cfg(3), fn, root=tmp_path)
    second = cached_run(Cfg(3), fn, root=tmp_path)
    assert fn.calls == 1 and first == second
    cached_run(Cfg(4), fn, root=tmp_path)
    assert fn.calls == 2


@pytest.mark.parametrize("damage", ["truncate", "garbage", "not-a-record", "wrong-config"])
def test_damaged_record_is_reported_and_recomputed(tmp_path, damage):
    fn = Counter()
    rec = cached_run(Cfg(5), fn, root=tmp_path)
    path = store_records.record_path(Cfg(5), tmp_path)
    text = path.read_text()
    if damage == "truncate":
        path.write_text(text[: len(text) // 2])
    elif damage == "garbage":
        path.write_bytes(b"\xff\xfe\x00")
    elif damage == "not-a-record":
        path.write_text("[1, 2]")
    else:
        path.write_text(json.dumps({**rec, "config": {**rec["config"], "x": 99}}))
    with pytest.warns(RecordWarning, match=str(path.name)):
        again = cached_run(Cfg(5), fn, root=tmp_path)
    assert fn.calls == 2
    assert again["metrics"] == {"y": 10}
    assert load_record(path)["metrics"] == {"y": 10}  # the repaired record is valid


def test_failed_run_is_recorded_not_raised_and_not_retried(tmp_path):
    calls = []

    def diverge(cfg):
        calls.append(1)
        raise RunFailed("loss became nan at step 17")

    rec = cached_run(Cfg(1), diverge, root=tmp_path)
    assert rec["status"] == "failed"
    assert "loss became nan at step 17" in rec["reason"]
    again = cached_run(Cfg(1), diverge, root=tmp_path)
    assert again["status"] == "failed" and len(calls) == 1
    fixed = cached_run(Cfg(1), lambda cfg: {"ok": True}, root=tmp_path, retry_failed=True)
    assert fixed["status"] == "ok" and fixed["metrics"] == {"ok": True}


@pytest.mark.parametrize("err", [FloatingPointError("overflow in exp"),
                                 ArithmeticError("memory function did not converge up to "
                                                 "2000 digits"),
                                 ZeroDivisionError("division by zero")])
def test_numerical_failures_are_recorded_as_failed(tmp_path, err):
    def fail(cfg):
        raise err

    rec = cached_run(Cfg(3), fail, root=tmp_path)
    assert rec["status"] == "failed"
    assert rec["reason"] == f"{type(err).__name__}: {err}"


def test_bugs_propagate_and_leave_no_record(tmp_path):
    def buggy(cfg):
        raise KeyError("oops")

    with pytest.raises(KeyError):
        cached_run(Cfg(2), buggy, root=tmp_path)
    assert not store_records.record_path(Cfg(2), tmp_path).exists()


def test_results_dir_follows_env(tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path / "r"))
    rec = cached_run(Cfg(7), Counter())
    assert (tmp_path / "r" / "smoke" / "unit" / f"{rec['run_id']}.json").is_file()


def test_iter_records_skips_damaged(tmp_path):
    cached_run(Cfg(1), Counter(), root=tmp_path)
    cached_run(Cfg(2), Counter(), root=tmp_path)
    bad = store_records.record_path(Cfg(2), tmp_path)
    bad.write_text("{")
    with pytest.warns(RecordWarning):
        recs = list(store_records.iter_records("unit", "smoke", root=tmp_path))
    assert [r["config"]["x"] for r in recs] == [1]


def test_records_name_the_processor_and_its_vector_instructions(tmp_path):
    from sst_core.store.provenance import cpu_info

    rec = cached_run(Cfg(9), Counter(), root=tmp_path)
    assert set(rec["host"]["cpu"]) == {"model", "simd"}
    text = ("processor\t: 0\nmodel name\t: Some CPU @ 2GHz\nflags\t\t: fpu sse2 avx2 fma\n"
            "processor\t: 1\nmodel name\t: Other\nflags\t\t: avx512f\n")
    assert cpu_info(text) == {"model": "Some CPU @ 2GHz", "simd": ["avx2", "fma"]}
    arm = "processor\t: 0\nFeatures\t: fp asimd evtstrm\nHardware\t: BCM2835\n"
    assert cpu_info(arm) == {"model": "BCM2835", "simd": ["asimd"]}
    assert cpu_info("") == {"model": "unknown", "simd": []}


def test_the_commit_check_takes_no_lock_on_the_repository(monkeypatch, tmp_path):
    """A record's git_commit runs git status while the user may be committing: with
    --no-optional-locks it never writes .git/index.lock, which a killed status would leave."""
    import subprocess

    from sst_core.store import provenance

    calls = []
    real = subprocess.run

    def spy(cmd, *a, **kw):
        calls.append(cmd)
        return real(cmd, *a, **kw)

    monkeypatch.setattr(provenance.subprocess, "run", spy)
    provenance.git_commit(store_records.project_root())
    assert len(calls) == 1 and all(c[:2] == ["git", "--no-optional-locks"] for c in calls)
    assert provenance.git_commit(tmp_path) == "unknown"  # not a repository


def test_a_replaced_record_is_kept_once_and_no_reader_counts_it(tmp_path):
    from sst_core.store.replaced import keep_replaced, replaced_files, replaced_records

    assert keep_replaced(Cfg(1), tmp_path) is None  # nothing stored: nothing to keep
    rec = cached_run(Cfg(1), Counter(), root=tmp_path)
    kept = keep_replaced(Cfg(1), tmp_path)
    stamp = "".join(ch for ch in rec["created_utc"] if ch.isdigit())
    assert kept == tmp_path / "smoke" / "unit" / "replaced" / f"{rec['run_id']}.{stamp}.json"
    assert json.loads(kept.read_text()) == rec
    assert keep_replaced(Cfg(1), tmp_path) == kept and replaced_files(Cfg(1), tmp_path) == [kept]
    assert replaced_records(Cfg(1), tmp_path) == [rec]
    assert replaced_records(Cfg(2), tmp_path) == []
    assert [r["run_id"] for r in store_records.iter_records("unit", "smoke", root=tmp_path)] \
        == [rec["run_id"]]  # the folder's own records only
    store_records.record_path(Cfg(1), tmp_path).write_text("{")
    assert keep_replaced(Cfg(1), tmp_path) is None  # an unusable record is not kept


def test_interrupted_write_keeps_old_record(tmp_path, monkeypatch):
    path = tmp_path / "a" / "r.json"
    store_records.write_atomic(path, {"v": 1})

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(store_records.os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        store_records.write_atomic(path, {"v": 2})
    assert json.loads(path.read_text()) == {"v": 1}
    assert not list(path.parent.glob("*.tmp"))


def test_record_text_reads_back_equal_with_scalar_lists_on_one_line():
    record = {"b": [1.5, None, float("nan"), -2e-30, True, "x]\"{y"], "a": {"c": [[1, 2], [3]],
              "e": [], "d": [{"k": [0.25, 0.5]}], "s": "nonce:0", "n": 3}, "z": (4, 5)}
    text = store_records.record_text(record)
    back = json.loads(text)
    assert json.dumps(back, sort_keys=True) == json.dumps(
        {**record, "z": [4, 5]}, sort_keys=True)  # NaN included (as JSON's NaN)
    lines = text.splitlines()
    assert ' "b": [1.5, null, NaN, -2e-30, true, "x]\\"{y"],' in lines
    assert '    "k": [0.25, 0.5]' in lines and '   [1, 2],' in lines and '  "e": [],' in lines
    assert list(back) == sorted(back) and text.endswith("}\n")


def test_every_code_dependency_exists_and_changes_the_hash(monkeypatch):
    """The entry points behind each experiment's code hash exist (a rename would otherwise
    hide stale records), and the hash follows them."""
    from sst_core.store.codeversion import resolve

    for experiment, entry in registry.EXPERIMENTS.items():
        for point in entry.code_deps:
            resolve(point)  # raises for a name that no longer exists
        assert len(registry.code_hash(experiment)) == 16  # the walk gets through all of it
    before = registry.code_hash("tracking")
    monkeypatch.setattr(registry, "_code_hashes", {})
    tracking = registry.EXPERIMENTS["tracking"]
    monkeypatch.setitem(registry.EXPERIMENTS, "tracking", dataclasses.replace(
        tracking, code_deps=tuple(p for p in tracking.code_deps if "stacked" not in p)))
    assert registry.code_hash("tracking") != before
    assert registry.code_hash("no_such_experiment") is None


def test_a_record_is_stale_exactly_when_its_version_is_below_its_experiments(monkeypatch):
    """Current, older, missing, malformed, newer and unknown-experiment records."""
    rec = {"experiment": "tracking", "config": {"model": "mamba"}, "version": 1}
    assert not registry.is_stale_record(rec)
    assert registry.is_stale_record({**rec, "version": 0})
    assert registry.is_stale_record({k: v for k, v in rec.items() if k != "version"})
    assert registry.is_stale_record({**rec, "version": "1"})
    assert not registry.is_stale_record({**rec, "version": 2})  # newer: not older code
    assert registry.is_stale_record({"experiment": "unit", "config": {}, "version": 1})
    bumped = dataclasses.replace(registry.EXPERIMENTS["tracking"], version=2)
    monkeypatch.setitem(registry.EXPERIMENTS, "tracking", bumped)
    assert registry.is_stale_record(rec) and registry.version("tracking") == 2


def test_records_store_the_version_and_retry_stale_recomputes_older_ones(tmp_path):
    calls = Counter()
    rec = cached_run(Cfg(5), calls, root=tmp_path, version=3)
    assert rec["version"] == 3 and "code_hash" not in rec
    assert cached_run(Cfg(5), calls, root=tmp_path, version=3, retry_stale=True) == rec
    assert calls.calls == 1
    assert cached_run(Cfg(5), calls, root=tmp_path, version=4)["version"] == 3  # kept
    assert cached_run(Cfg(5), calls, root=tmp_path, version=4, retry_stale=True)["version"] == 4
    assert calls.calls == 2
    assert store_records.needs_run(Cfg(5), root=tmp_path, version=5)
    assert not store_records.needs_run(Cfg(5), root=tmp_path, version=4)
    assert not store_records.needs_run(Cfg(5), root=tmp_path)  # no version: not stale
    assert cached_run(Cfg(6), calls, root=tmp_path)["version"] == 0  # none given: stale


def test_a_stack_stores_its_experiments_version(tmp_path, monkeypatch):
    from sst_core.experiments import runs
    from sst_core.experiments.paper1 import table2_grid
    from sst_core.spec.profiles import get_profile
    from sst_core.training import stacked

    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    monkeypatch.setattr(stacked, "train_tracking_stacked",
                        lambda group, weights: [{"m_p": None} for _ in group])
    group = [c for c in table2_grid(get_profile("smoke")) if c.model == "tanh_rnn"][:2]
    records = runs.run_stack(group)
    assert [r["version"] for r in records] == [registry.version("tracking")] * 2


def test_a_source_edited_after_import_gives_an_unknown_code_hash(monkeypatch):
    from sst_core.store import codeversion

    def edited(*a, **k):
        raise codeversion.SourceChanged("f: edited")

    monkeypatch.setattr(registry, "_code_hashes", {})
    monkeypatch.setattr(codeversion, "fingerprint", edited)
    with pytest.warns(RuntimeWarning, match="code fingerprint of lra runs unknown: f: edited"):
        assert registry.code_hash("lra") is None


def test_git_commit_names_the_commit_and_a_tracked_change_only(tmp_path):
    """The one ``git status`` call against what ``git rev-parse HEAD`` says: the commit,
    ``+dirty`` for a changed tracked file, not for an untracked one; ``unknown`` before
    the first commit."""
    import subprocess

    from sst_core.store.provenance import git_commit

    def git(*args):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                              cwd=tmp_path, check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    assert git_commit(tmp_path) == "unknown"  # no commit yet
    (tmp_path / "a.txt").write_text("1")
    git("add", "a.txt")
    git("commit", "-q", "-m", "one")
    head = git("rev-parse", "HEAD").strip()
    assert git_commit(tmp_path) == head
    (tmp_path / "b.txt").write_text("untracked")
    assert git_commit(tmp_path) == head
    (tmp_path / "a.txt").write_text("2")
    assert git_commit(tmp_path) == head + "+dirty"


def test_versions_are_read_once_and_handed_out_as_new_dicts():
    from sst_core.store.provenance import versions

    first = versions()
    first["torch"] = "changed by a caller"
    assert versions()["torch"] != "changed by a caller" and versions()["python"]


def test_the_reading_guides_example_record_is_a_record_with_its_required_fields():
    """The record the reading guide shows a reader (less its ``"..."`` entries) has every
    field a record must have, each allowed by :data:`store_records.FIELDS`, and its
    experiment's version field."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "book" / "reading_guide.md").read_text()
    example = json.loads(re.search(r"```json\n(\{.*?\n\})\n```", text, re.S).group(1))
    assert "version" in example and example["experiment"] in registry.EXPERIMENTS
    assert store_records.check_record(example, "reading_guide.md") == example
