"""Reliability (issue 17), the upper layers: every bad input to the commands, the records'
readers and the sweeps gets an error naming the value (and the file) and what is allowed,
or the right behaviour; never a traceback, a hang or silence. The lower-layer rows
(configs, data readers, trainers) are in tests/test_bad_inputs.py."""
import argparse
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from sst_core import cli
from sst_core.book import params
from sst_core.experiments import paper1
from sst_core.experiments.runs import run
from sst_core.spec.configs import config_hash
from sst_core.spec.profiles import ConfigError, get_profile
from sst_core.store.records import (
    RecordError,
    ResultsDirError,
    artifact_path,
    load_record,
    record_path,
    results_dir,
)
from sst_core.sweep import runner
from sst_core.sweep import status as sweep_status

SMOKE = get_profile("smoke")


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("SST_PROGRESS", "0")
    return tmp_path / "results"


# -- the commands: one row each --------------------------------------------------------------

def _no_toc(tmp_path: Path) -> list[str]:
    (tmp_path / "book").mkdir()
    return ["notebooks", "run", "--profile", "smoke", "--root", str(tmp_path / "book")]


def _results_at_a_file(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "afile").write_text("not a folder")
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path / "afile"))


# (id, argv (or a function of tmp_path), setup, exit code, what stderr must name)
CLI_ROWS = [
    ("report-without-name", ["report"], None, 2,
     ["usage: sst report", "a report name is required", "table2", "harder_groups"]),
    ("report-unknown", ["report", "tabel2"], None, 2, ["'tabel2'", "allowed:", "table2"]),
    ("report-hyphen-spelling", ["report", "harder-groups", "--profile", "smoke"], None, 0,
     ["did you mean harder_groups? accepted"]),
    ("status-hyphen-spelling", ["status", "--profile", "smoke", "--experiment",
                                "harder-groups"], None, 0,
     ["did you mean harder_groups? accepted"]),
    ("sweep-unknown", ["sweep", "tabel2"], None, 2, ["'tabel2'", "allowed:", "table2"]),
    ("notebook-unknown", ["notebooks", "run", "--profile", "smoke", "--only", "p1_grops"],
     None, 2, ["'p1_grops'", "allowed:", "p1_groups"]),
    ("root-without-toc", _no_toc, None, 2, ["book", "_toc.yml"]),
    ("results-dir-is-a-file", ["status", "--profile", "smoke"], _results_at_a_file, 2,
     ["SST_RESULTS_DIR=", "afile", "is a file", "expected a folder"]),
    ("results-dir-is-a-file-report", ["report", "table2", "--profile", "smoke"],
     _results_at_a_file, 2, ["afile", "expected a folder"]),
    # devices the GPU check is asked for (issue 57): named before torch reads them
    *[(f"gpu-check-device-{d or 'empty'}", ["gpu-check", "--device", d, "--no-bench"], None, 2,
       [f"sst gpu-check: device={d!r} is not allowed", "'cuda', 'cuda:<index>' or 'cpu'"])
      for d in ("tpu", "", "CUDA")],
]


@pytest.mark.parametrize("argv,setup,code,named", [r[1:] for r in CLI_ROWS],
                         ids=[r[0] for r in CLI_ROWS])
def test_cli_row(argv, setup, code, named, root, tmp_path, monkeypatch, capsys):
    if callable(argv):
        argv = argv(tmp_path)
    if setup is not None:
        setup(tmp_path, monkeypatch)
    try:
        got = cli.main(argv)
    except SystemExit as exit_:  # argparse's own usage errors
        got = exit_.code
    err = capsys.readouterr().err
    assert got == code, err
    assert "Traceback" not in err
    for word in named:
        assert word in err, (word, err)


def test_results_dir_under_a_file_is_named(tmp_path, monkeypatch):
    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path / "afile" / "results"))
    with pytest.raises(ResultsDirError, match=r"afile.*expected a folder"):
        results_dir()


def test_help_is_plain_text_and_states_every_default():
    done = subprocess.run([sys.executable, "-m", "sst_core", "--help"], capture_output=True,
                          text=True)
    assert done.returncode == 0 and "``" not in done.stdout
    parser = cli._parser()
    fmt = cli._Help("sst")
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    seen = 0
    while subs:
        for name, sub in subs.pop().choices.items():
            subs += [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
            for action in sub._actions:
                if not action.option_strings or isinstance(action, argparse._HelpAction):
                    continue
                seen += 1
                text = fmt._get_help_string(action) or ""
                assert action.help and "%(default)" in text, (name, action.option_strings)
    assert seen > 30


def test_a_bare_sweep_says_its_profile_and_run_count_first(root, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(runner, "sweep", lambda name, profile, **kw: calls.append(profile)
                        or runner.SweepResult(name, profile))
    assert cli.main(["sweep", "table2"]) == 0
    out = capsys.readouterr().out
    n = len(paper1.table2_grid(get_profile("quick")))
    assert calls == ["quick"]
    assert f"profile quick, {n} runs, {n} to compute" in out.splitlines()[0]
    assert "(default: quick)" in cli._parser()._subparsers._group_actions[0].choices[
        "sweep"].format_help()


# -- papermill parameters -------------------------------------------------------------------

PARAM_ROWS = [
    ("profile-typo", "p1_groups", {"profile": "quik"}, ["'quik'", "smoke", "quick", "paper",
                                                         "best"]),
    ("negative-length", "p1_groups", {"profile": "smoke", "word_length": -5},
     ["word_length=-5", "word_length >= 1"]),
    ("zero-steps", "p1_table2", {"profile": "smoke", "track_max_steps": 0},
     ["track_max_steps=0", ">= 1"]),
    ("negative-seed", "p2_memory", {"profile": "smoke", "seed": -1}, ["seed=-1", "seed >= 0"]),
]


@pytest.mark.parametrize("notebook,given,named", [r[1:] for r in PARAM_ROWS],
                         ids=[r[0] for r in PARAM_ROWS])
def test_parameter_row(notebook, given, named):
    with pytest.raises(ConfigError) as err:
        params.check_parameters(notebook, given)
    for word in named:
        assert word in str(err.value), (word, str(err.value))


def test_parameter_ranges_follow_the_profile_fields():
    assert params.allowed_range("track_lrs")[2] == "> 0"
    assert params.allowed_range("fig4_seeds")[2] == ">= 0"
    assert params.allowed_range("diag_rollout")[2] == ">= 1"
    with pytest.raises(ConfigError, match=r"track_lrs=\(0.001, 0\).*element 0.*> 0"):
        params._check_range("nb", "track_lrs", (0.001, 0))
    params.check_parameters("p1_groups", {"profile": "best", "word_length": 1, "seed": 0})


# -- corrupt records through every reader ---------------------------------------------------

def _truncate(path: Path) -> None:
    path.write_text(path.read_text()[:40])


def _set(key, value):
    def corrupt(path: Path) -> None:
        rec = json.loads(path.read_text())
        if value is KeyError:
            del rec[key]
        else:
            rec[key] = value
        path.write_text(json.dumps(rec))
    return corrupt


def _set_in(field, key, value):
    def corrupt(path: Path) -> None:
        rec = json.loads(path.read_text())
        if value is KeyError:
            del rec[field][key]
        else:
            rec[field][key] = value
        path.write_text(json.dumps(rec))
    return corrupt


# (id, corruption, what the error names)
CORRUPT = [
    ("truncated", _truncate, "unreadable"),
    ("not-json", lambda p: p.write_text("hello"), "unreadable"),
    ("a-list", lambda p: p.write_text("[1, 2]"), "not a record"),
    ("wall-time-text", _set("wall_time_s", "abc"), "field wall_time_s is 'abc'"),
    ("wall-time-negative", _set("wall_time_s", -1), "field wall_time_s"),
    ("stack-null", _set("stack", None), "field stack is None"),
    ("stack-size-text", _set("stack", {"size": "4"}), "field stack"),
    ("metrics-list", _set("metrics", []), "field metrics is []"),
    ("config-text", _set("config", "x"), "field config"),
    ("status-unknown", _set("status", "maybe"), "field status is 'maybe'"),
    ("reason-number", _set("reason", 5), "field reason"),
    ("code-hash-number", _set("code_hash", 3), "field code_hash"),
    ("missing-key", _set("metrics", KeyError), "missing keys ['metrics']"),
    # issue 57: a record is checked against its file, its schema and its metrics' ranges
    ("schema-newer", _set("schema", 99),
     "schema 99 is not one this code reads (1..1); it was written by newer code"),
    ("copied-onto-another-run", _set("run_id", "0123456789abcdef"),
     "holds the record of run 0123456789abcdef, not of run "),
    ("config-edited", _set_in("config", "lr", 0.5), "is not the hash of its config"),
    ("ok-with-a-reason", _set("reason", "RunFailed: loss diverged"),
     "status 'ok' with a failure reason 'RunFailed: loss diverged'"),
    ("failed-without-reason", _set("status", "failed"), "status 'failed' without a reason"),
    ("m_p-text", _set_in("metrics", "m_p", "abc"),
     "metric m_p is 'abc'; expected null or an int >= 1 (a length)"),
    ("m_p-negative", _set_in("metrics", "m_p", -5), "metric m_p is -5"),
    ("m_p-nan", _set_in("metrics", "m_p", float("nan")), "metric m_p is nan"),
    ("m_p-list", _set_in("metrics", "m_p", [60]), "metric m_p is [60]"),
    ("ok-tracking-without-m_p", _set_in("metrics", "m_p", KeyError),
     "status 'ok' without the metric m_p; an ok tracking record holds m_p"),
    ("accuracy-above-1", _set_in("metrics", "test_accuracy", 1.5),
     "metric test_accuracy is 1.5; expected a finite number in [0, 1]"),
]


def _one_tracking_run():
    cfg = paper1.table2_grid(SMOKE)[0]
    record = run(cfg)
    assert record["status"] == "ok"
    return cfg


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One smoke tracking record and its weights, copied into each test's store."""
    folder = tmp_path_factory.mktemp("trained")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SST_RESULTS_DIR", str(folder))
        mp.setenv("SST_PROGRESS", "0")
        cfg = _one_tracking_run()
    return cfg, folder


def _store_copy(trained, root: Path):
    import shutil

    cfg, folder = trained
    shutil.copytree(folder, root, dirs_exist_ok=True)
    return cfg


@pytest.mark.parametrize("corrupt,named", [r[1:] for r in CORRUPT], ids=[r[0] for r in CORRUPT])
def test_a_corrupt_record_through_every_reader(corrupt, named, trained, root, monkeypatch,
                                               capsys):
    cfg = _store_copy(trained, root)
    path = record_path(cfg)
    corrupt(path)
    # the reader
    with pytest.raises(RecordError) as err:
        load_record(path)
    assert str(path) in str(err.value) and named in str(err.value)
    # sst status: unreadable, apart from missing, each file named on stderr
    (row,) = sweep_status.status("smoke", ["table2"])
    assert row.unreadable == 1 and row.missing == row.total - 1 and row.done == 0
    assert cli.main(["status", "--profile", "smoke", "--experiment", "table2"]) == 0
    out, err_text = capsys.readouterr()
    assert "| unreadable |" in out and str(path) in err_text and named in err_text
    # sst report: a warning naming the file, the row shown as missing
    assert cli.main(["report", "table2", "--profile", "smoke"]) == 0
    err_text = capsys.readouterr().err
    assert "warning" in err_text and str(path) in err_text
    # sst sweep: computed again, and it says so
    monkeypatch.setattr(runner, "phases", lambda name, P: [[cfg]])
    said = []
    result = runner.sweep("table2", "smoke", report=said.append)
    assert result.outcomes == {config_hash(cfg): "computed"}
    assert any(str(path) in m and "again" in m for m in said), said
    assert load_record(path)["status"] == "ok"


def test_a_usable_record_is_kept(trained, root, monkeypatch):
    cfg = _store_copy(trained, root)
    monkeypatch.setattr(runner, "phases", lambda name, P: [[cfg]])
    said = []
    assert runner.sweep("table2", "smoke", report=said.append).count("stored") == 1
    assert said == []


# -- a truncated weights file read by an analysis ---------------------------------------------

def test_truncated_weights_are_retrained_and_the_sweep_goes_on(root, monkeypatch):
    trackers = paper1.s3_runs(SMOKE)[:2]
    analyses = [paper1.diagnostics_config(SMOKE, t) for t in trackers]
    monkeypatch.setattr(runner, "phases", lambda name, P: [trackers, analyses])
    first = runner.sweep("diagnostics", "smoke", stack=1)
    assert first.count("computed") == 4
    weights = artifact_path(trackers[0], ".pt")
    weights.write_bytes(weights.read_bytes()[:100])  # truncated
    record_path(analyses[0]).unlink()  # the analysis must read it again
    said = []
    result = runner.sweep("diagnostics", "smoke", stack=1, report=said.append)
    assert any(str(weights) in m and "training it again" in m for m in said), said
    assert weights.with_name(weights.name + ".unusable").exists()
    assert result.outcomes[config_hash(trackers[0])] == "computed"  # retrained
    assert result.outcomes[config_hash(analyses[0])] == "computed"
    assert result.outcomes[config_hash(analyses[1])] == "stored"  # the others go on
    assert load_record(record_path(analyses[0]))["status"] == "ok"
    assert "unusable file" in result.summary()


def test_a_tracker_without_weights_is_retrained(root, monkeypatch):
    tracker = paper1.s3_runs(SMOKE)[0]
    analysis = paper1.diagnostics_config(SMOKE, tracker)
    before = run(tracker)
    artifact_path(tracker, ".pt").unlink()
    monkeypatch.setattr(runner, "phases", lambda name, P: [[tracker], [analysis]])
    said = []
    result = runner.sweep("diagnostics", "smoke", report=said.append)
    assert any("is missing" in m and str(artifact_path(tracker, ".pt")) in m for m in said)
    assert result.outcomes[config_hash(analysis)] == "computed"
    assert artifact_path(tracker, ".pt").exists()
    # the record it replaced is kept beside the new one, and committed with it
    from sst_core.store.replaced import replaced_files, replaced_records

    assert result.outcomes[config_hash(tracker)] == "computed"  # trained again
    assert replaced_records(tracker) == [before]  # (a smoke run can end within its second)
    assert set(replaced_files(tracker)) <= set(sweep_status.committed_files("smoke"))


# -- wall_time_s measures the run only ---------------------------------------------------------

def test_wall_time_of_a_processes_first_run_excludes_start_up(tmp_path):
    """The first run of a fresh process pays for importing torch and the optimizer's first
    construction (over a second); that is startup_s, not wall_time_s."""
    code = ("import json, sys\n"
            "from sst_core.experiments import paper1\n"
            "from sst_core.experiments.runs import run\n"
            "from sst_core.spec.profiles import get_profile\n"
            "cfgs = paper1.table2_grid(get_profile('smoke'))[:2]\n"
            "print(json.dumps([run(c) for c in cfgs]))\n")
    env = {**__import__("os").environ, "SST_RESULTS_DIR": str(tmp_path), "SST_PROGRESS": "0"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    first, second = json.loads(done.stdout.splitlines()[-1])
    assert first["startup_s"] > first["wall_time_s"]  # torch alone takes about a second
    assert second["startup_s"] < 0.05  # paid once per process
    assert first["wall_time_s"] < 3 * second["wall_time_s"] + 0.5


def test_a_stacked_run_records_its_start_up_apart(root):
    from sst_core.experiments.runs import run_stack

    group = [replace(c, seed=s) for c in paper1.table2_grid(SMOKE)[:1] for s in (0, 1)]
    records = run_stack(group)
    assert all("startup_s" in r and r["wall_time_s"] >= 0 for r in records)
    # the stack's CPU time, on each of its records like its wall time
    assert len({r["cpu_time_s"] for r in records}) == 1 and records[0]["cpu_time_s"] > 0
    assert records[0]["stack"]["cpu_time"] == "cpu_time_s is the whole stack's"


def test_one_spelling_accepts_hyphens_with_a_hint_and_names_the_allowed(capsys):
    from sst_core.spec.names import one_spelling

    assert one_spelling("harder_groups", ["harder_groups"], "sweep") == "harder_groups"
    assert capsys.readouterr().err == ""
    assert one_spelling("harder-groups", ["harder_groups"], "sweep") == "harder_groups"
    assert "did you mean harder_groups? accepted" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown report 'tabel2'; allowed: table2, table3"):
        one_spelling("tabel2", ["table2", "table3"], "report")


def test_trackers_retrained_for_their_weights_respect_a_stop_time(root, monkeypatch):
    """With a stop time, a tracker retrained for its weights is priced like any run: the
    one that fits is trained and its analysis computed, the other and its analysis are
    deferred (no record replaced, weights still missing), and the later phases wait."""
    import time as _time

    trackers = paper1.s3_runs(SMOKE)[:2]
    analyses = [paper1.diagnostics_config(SMOKE, t) for t in trackers]
    later = paper1.diagnostics_config(SMOKE, paper1.s3_runs(SMOKE)[2])
    for t in trackers:
        run(t)
        artifact_path(t, ".pt").unlink()
    monkeypatch.setattr(runner, "phases", lambda name, P: [trackers, analyses, [later]])
    dear = config_hash(trackers[1])
    said = []
    result = runner.sweep("diagnostics", "smoke", stack=1, report=said.append,
                          stop_by=_time.time() + 3600,
                          price=lambda c: 1e6 if config_hash(c) == dear else 0.0)
    assert result.outcomes[config_hash(trackers[0])] == "computed"
    assert result.outcomes[config_hash(analyses[0])] == "computed"
    assert result.outcomes[dear] == result.outcomes[config_hash(analyses[1])] == "deferred"
    assert config_hash(later) not in result.outcomes  # the later phase waits
    assert not artifact_path(trackers[1], ".pt").exists()
    assert not record_path(analyses[1]).exists() and not record_path(later).exists()
    assert any("1 training runs of diagnostics would not finish by the stop time" in m
               for m in said), said


def test_status_lists_files_that_belong_to_no_run_of_a_grid(trained, root, capsys):
    """A record copied under another name, an unreadable file whose name is in no grid and
    a stray file are each named by `sst status`; a run's record, its weights and its
    replaced records are not."""
    cfg = _store_copy(trained, root)
    path = record_path(cfg)
    folder = path.parent
    (folder / "replaced").mkdir()
    (folder / "replaced" / f"{path.stem}.20261201000000.json").write_text(path.read_text())
    stray = [folder / "0123456789abcdef.json", folder / "zzz.json", root / "smoke" / "notes.txt"]
    stray[0].write_text(path.read_text())
    stray[1].write_text("{trunc")
    stray[2].write_text("hello")
    # the generated LRA tasks the runs read are not strays; other files beside them are
    cache = root / "smoke" / "lra_data"
    cache.mkdir()
    (cache / "pathfinder-c8f4166762651271.npz").write_bytes(b"")
    (cache / ".listops-0123456789abcdef.x1y2.tmp").write_bytes(b"")
    for name in ("pathfinder-xyz.npz", "nosuchtask-c8f4166762651271.npz",
                 "pathfinder-c8f4166762651271.npz.bak"):
        (cache / name).write_bytes(b"")
        stray.append(cache / name)
    # the name the LRA data code really writes is recognised (one naming, two places)
    from sst_core.experiments import paper2
    from sst_core.spec.profiles import get_profile
    from sst_core.training import lra_data

    lra = next(c for c in paper2.lra_main_grid(get_profile("smoke")) if c.task == "listops")
    lra_data.load_task(lra)
    assert [p.name for p in cache.glob("listops-*.npz")]
    assert sweep_status.foreign_files("smoke") == sorted(stray)
    assert cli.main(["status", "--profile", "smoke", "--experiment", "table2"]) == 0
    err = capsys.readouterr().err
    for p in stray:
        assert f"sst status: {p} is not a file of any run of smoke's grids" in err
    assert str(path) + " " not in err and ".pt" not in err


# -- weights tied to their run (issue 57) ------------------------------------------------------

def test_weights_that_are_not_the_runs_are_refused_naming_both_files(trained, root):
    """A tracker's record keeps the sha256 of its weights; weights swapped in from another
    run (here: the same file re-saved with one entry changed) are refused naming the
    weights and the record; a record older than the hash (none stored) is accepted."""
    import torch

    from sst_core.analysis.trackers import TrackerMissing, load_tracker

    cfg = _store_copy(trained, root)
    rec = load_record(record_path(cfg))
    weights = artifact_path(cfg, ".pt")
    assert len(rec["metrics"]["weights_sha256"]) == 64
    load_tracker(cfg)  # its own weights
    state = torch.load(weights, weights_only=True)
    name = next(k for k, v in state.items() if v.is_floating_point())
    state[name] = state[name] + 1.0
    torch.save(state, weights)
    with pytest.raises(TrackerMissing) as err:
        load_tracker(cfg)
    assert f"the weights file {weights} is not the one its record {record_path(cfg)}" in str(err.value)
    raw = json.loads(record_path(cfg).read_text())
    del raw["metrics"]["weights_sha256"]  # a record made before the hash was kept
    record_path(cfg).write_text(json.dumps(raw))
    load_tracker(cfg)


def test_non_finite_weights_make_the_run_fail(root):
    import torch

    from sst_core.store.records import cached_run
    from sst_core.training.tracking import build_tracker, save_weights

    cfg = paper1.table2_grid(SMOKE)[0]
    model = build_tracker(cfg)
    with torch.no_grad():
        next(model.parameters())[0].fill_(float("nan"))
    rec = cached_run(cfg, lambda c: {"m_p": None, "weights_sha256": save_weights(
        model, artifact_path(c, ".pt"))})
    assert rec["status"] == "failed" and "the trained weights are not finite" in rec["reason"]
    assert not artifact_path(cfg, ".pt").exists()


def test_a_sweep_that_cannot_write_a_record_says_so_without_a_traceback(root, monkeypatch,
                                                                          capsys):
    """A folder where a run's record belongs: `sst sweep` names the file and what to do,
    and exits 1 (it printed a traceback through the worker pool)."""
    cfg = paper1.table2_grid(SMOKE)[0]
    record_path(cfg).mkdir(parents=True)
    monkeypatch.setattr(runner, "phases", lambda name, P: [[cfg]])
    assert cli.main(["sweep", "table2", "--profile", "smoke", "--workers", "1"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert (f"sst sweep: [Errno 21] cannot write {record_path(cfg)}: a folder is where the "
            "run's record belongs; remove or rename it") in err


def test_non_finite_weights_of_a_record_without_a_hash_are_refused(trained, root):
    """A record made before weights_sha256 was kept, with NaN weights beside it: the
    analysis refuses them (it was recorded ok, failure mode "none"), naming the file."""
    import torch

    from sst_core.analysis.trackers import TrackerMissing, load_tracker

    cfg = _store_copy(trained, root)
    raw = json.loads(record_path(cfg).read_text())
    del raw["metrics"]["weights_sha256"]
    record_path(cfg).write_text(json.dumps(raw))
    weights = artifact_path(cfg, ".pt")
    state = torch.load(weights, weights_only=True)
    name = next(k for k, v in state.items() if v.is_floating_point())
    state[name][...] = float("nan")
    torch.save(state, weights)
    with pytest.raises(TrackerMissing) as err:
        load_tracker(cfg)
    n = state[name].numel()
    assert (f"weights file {weights} holds non-finite values ({n} of {n} entries of {name}), "
            "so it is not the weights of an ok run") in str(err.value)
