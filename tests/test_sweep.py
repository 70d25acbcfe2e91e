"""Resumable sweeps (sst_core.sweep): claims, kill-and-resume, executors, status."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import types
from dataclasses import replace
from pathlib import Path

import pytest

from sst_core import cli
from sst_core.book import params
from sst_core.experiments import paper1, registry
from sst_core.experiments.paper1 import table2_grid
from sst_core.spec import profiles
from sst_core.spec.configs import TrackingConfig, config_hash
from sst_core.spec.profiles import get_profile
from sst_core.store.records import cached_run, load_record, record_path, run_compute_s
from sst_core.sweep import claims as sweep_claims
from sst_core.sweep import runner
from sst_core.sweep import status as sweep_status


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    return tmp_path


def _cfg(**kw) -> TrackingConfig:
    base = dict(model="linear_rnn", group="C2", n_layers=1, d_model=8, d_state=8, lr=0.01,
                seed=0, profile="smoke", batch=8, max_steps=4, steps_per_epoch=2,
                curriculum_patience=1, eval_lengths=(60,), eval_samples=8, device="cpu")
    base.update(kw)
    return TrackingConfig(**base)


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# -- claims -------------------------------------------------------------------------------

def test_a_claim_is_exclusive_until_released(root):
    a, b = sweep_claims.Claim(_cfg()), sweep_claims.Claim(_cfg())
    assert a.acquire() and not b.acquire()
    info = json.loads(a.path.read_text())
    assert info["pid"] == os.getpid() and info["host"] == socket.gethostname()
    a.release()
    assert not a.path.exists() and b.acquire()
    b.release()


def test_a_claim_left_by_a_dead_process_is_recovered(root):
    path = sweep_claims.claim_path(_cfg())
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"host": socket.gethostname(), "pid": _dead_pid(), "since": 0}))
    assert sweep_claims.is_stale(path)
    claim = sweep_claims.Claim(_cfg())
    assert claim.acquire()
    assert json.loads(path.read_text())["pid"] == os.getpid()
    assert list(path.parent.glob("*.stale-*")) == []  # the old claim is cleaned up
    claim.release()


def test_a_run_taken_over_from_a_killed_worker_is_named_in_the_sweep_log(root, capsys):
    """A worker the kernel kills (out of memory) stores nothing and says nothing: the
    sweep that takes its claim over names the run and the dead worker."""
    cfg = _cfg()
    path = sweep_claims.claim_path(cfg)
    path.parent.mkdir(parents=True)
    pid = _dead_pid()
    path.write_text(json.dumps({"host": socket.gethostname(), "pid": pid, "since": 0}))
    out = runner.run_task([cfg])
    assert out == {config_hash(cfg): "computed"} and record_path(cfg).exists()
    err = capsys.readouterr().err
    assert (f"run {config_hash(cfg)} was claimed by pid {pid} on {socket.gethostname()} "
            "since 1970-01-01 00:00:00 UTC, which ended without storing it") in err
    # a claim cut short while being written: still named, without a pid
    assert sweep_claims.takeover_text("abc", {}) == (
        "run abc was claimed by a worker whose claim cannot be read, which ended without "
        "storing it (killed? an out-of-memory kill shows in `dmesg`); computing it again")
    # a fresh claim, or a run no one held, says nothing
    other = _cfg(seed=7)
    runner.run_task([other])
    assert "was claimed by" not in capsys.readouterr().err


def test_a_claim_from_another_host_is_stale_only_when_its_heartbeat_stops(root):
    path = sweep_claims.claim_path(_cfg())
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"host": "elsewhere", "pid": 1, "since": 0}))
    assert not sweep_claims.is_stale(path) and not sweep_claims.Claim(_cfg()).acquire()
    old = time.time() - sweep_claims.STALE_AFTER_S - 5
    os.utime(path, (old, old))
    assert sweep_claims.is_stale(path)


def test_an_unreadable_claim_is_live_while_young(root):
    """A claim being filled (a file system without hard links), or one cut short while
    being written: live for UNREADABLE_LIVE_S after its last change, stale after."""
    path = sweep_claims.claim_path(_cfg())
    path.parent.mkdir(parents=True)
    for text in ("", "{not json", "[1, 2]"):
        path.write_text(text)
        assert not sweep_claims.is_stale(path), text
        assert not sweep_claims.Claim(_cfg()).acquire()
        old = time.time() - sweep_claims.UNREADABLE_LIVE_S - 5
        os.utime(path, (old, old))
        assert sweep_claims.is_stale(path), text
    claim = sweep_claims.Claim(_cfg())
    assert claim.acquire() and claim.taken_over == {}
    claim.release()
    assert not path.exists()


def test_a_claim_is_visible_only_complete(root, monkeypatch):
    """The claim's name appears by a link to a file already written: whoever sees the
    name reads the whole claim (no empty file between create and write)."""
    seen = []
    real_link = os.link

    def link(src, dst):
        seen.append(json.loads(Path(src).read_text()))  # complete before it is linked
        assert not Path(dst).exists()
        return real_link(src, dst)

    monkeypatch.setattr(sweep_claims.os, "link", link)
    claim = sweep_claims.Claim(_cfg())
    assert claim.acquire()
    assert seen == [json.loads(claim.path.read_text())] and seen[0]["token"] == claim.token
    claim.release()
    assert list(claim.path.parent.iterdir()) == []  # no lock or temporary file left


def test_release_removes_only_the_workers_own_claim(root):
    """A worker whose claim was taken over (it looked gone) releases nothing: the new
    holder's claim stays."""
    a = sweep_claims.Claim(_cfg())
    assert a.acquire()
    a.path.unlink()  # as a takeover does, after which another worker claims the run
    b = sweep_claims.Claim(_cfg())
    assert b.acquire()
    a.release()
    assert json.loads(b.path.read_text())["token"] == b.token
    b.release()
    assert not b.path.exists()


def test_a_claim_falls_back_to_exclusive_create_without_hard_links(root, monkeypatch):
    def no_link(src, dst):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(sweep_claims.os, "link", no_link)
    a, b = sweep_claims.Claim(_cfg()), sweep_claims.Claim(_cfg())
    assert a.acquire() and not b.acquire()
    assert json.loads(a.path.read_text())["token"] == a.token
    a.release()
    assert b.acquire()
    b.release()


def _stress_worker(root: str, n: int, reverse: bool, go) -> None:
    """One sweep worker of the stress test: claim each run, compute it (one line in the
    log) unless it is done, mark it done, release."""
    root_p = Path(root)
    order = range(n - 1, -1, -1) if reverse else range(n)
    cfgs = [_stress_cfg(i) for i in range(n)]
    go.wait()
    for i in order:
        done = root_p / "done" / str(i)
        if done.exists():
            continue
        claim = sweep_claims.Claim(cfgs[i], root_p)
        if not claim.acquire():
            continue
        try:
            if not done.exists():
                fd = os.open(root_p / "computed.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
                os.write(fd, f"{i} {os.getpid()}\n".encode())
                os.close(fd)
                done.touch()
        finally:
            claim.release()
    os._exit(0)


def _stress_cfg(i: int):
    from sst_core.spec.configs import OrderSensitivityConfig

    return OrderSensitivityConfig(group="C2", tokens="all", n_words=1, word_length=1, seed=i,
                                  profile="smoke")


def test_claims_under_concurrency_compute_nothing_twice(tmp_path):
    """The real claim code in four processes over the same 2,000 runs (half of them in the
    opposite order), with claims left by dead workers (same host, the old format without a
    token), cut short long ago (stale: taken over) and being written now (live: left
    alone): every run is computed exactly once, except the live ones, never; no claim or
    temporary file is left behind (the issue-57 reproduction computed 33-215 runs twice)."""
    import multiprocessing as mp

    n, workers = 2000, 4
    root = tmp_path / "results"
    (root / "done").mkdir(parents=True)
    cfgs = [_stress_cfg(i) for i in range(n)]
    folder = sweep_claims.claim_path(cfgs[0], root).parent
    folder.mkdir(parents=True)
    dead = _dead_pid()
    old = time.time() - sweep_claims.UNREADABLE_LIVE_S - 5
    live = set(range(5, n, 97))
    for i in range(0, n, 10):  # a dead worker's claims
        sweep_claims.claim_path(cfgs[i], root).write_text(json.dumps(
            {"host": socket.gethostname(), "pid": dead, "since": 0}))
    for i in range(3, n, 50):  # cut short long ago
        path = sweep_claims.claim_path(cfgs[i], root)
        path.write_text("")
        os.utime(path, (old, old))
    for i in live:  # being written now
        sweep_claims.claim_path(cfgs[i], root).write_text("")
    ctx = mp.get_context("fork")
    go = ctx.Event()
    procs = [ctx.Process(target=_stress_worker, args=(str(root), n, k % 2 == 1, go))
             for k in range(workers)]
    for p in procs:
        p.start()
    go.set()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    lines = (root / "computed.log").read_text().split()
    computed = [int(x) for x in lines[::2]]
    twice = sorted({i for i in computed if computed.count(i) > 1}) if len(set(computed)) != len(
        computed) else []
    assert twice == [], f"{len(twice)} runs computed twice: {twice[:10]}"
    assert set(computed) == set(range(n)) - live
    assert len(set(lines[1::2])) > 1  # the workers shared the runs
    left = sorted(p.name for p in folder.iterdir())
    assert left == sorted(sweep_claims.claim_path(cfgs[i], root).name for i in live)


def test_the_heartbeat_refreshes_a_working_claim(root, monkeypatch):
    monkeypatch.setattr(sweep_claims, "HEARTBEAT_S", 0.05)
    claim = sweep_claims.Claim(_cfg())
    assert claim.acquire()
    old = time.time() - 1000
    os.utime(claim.path, (old, old))
    time.sleep(0.3)
    assert time.time() - claim.path.stat().st_mtime < 10
    claim.release()


def test_run_task_skips_claimed_and_stored_runs(root):
    a, b, c = _cfg(seed=0), _cfg(seed=1), _cfg(seed=2)
    cached_run(c, lambda cfg: {"m_p": 60})
    other = sweep_claims.Claim(b)
    assert other.acquire()
    out = runner.run_task([a, b, c])
    other.release()
    assert out == {config_hash(a): "computed", config_hash(b): "claimed",
                   config_hash(c): "stored"}
    assert load_record(record_path(a))["status"] == "ok"
    assert not record_path(b).exists() and not sweep_claims.claim_path(a).exists()


def test_a_stored_run_loses_the_claim_of_a_killed_stack(root):
    """A stack stores its runs one by one and releases their claims at the end: a worker
    killed in between leaves claims on stored runs, which the next sweep removes (only
    stale ones: a live worker's claim stays)."""
    dead, alive = _cfg(seed=3), _cfg(seed=4)
    for cfg, pid in ((dead, _dead_pid()), (alive, os.getpid())):
        cached_run(cfg, lambda cfg: {"m_p": 60})
        sweep_claims.claim_path(cfg).write_text(json.dumps({"host": socket.gethostname(),
                                                     "pid": pid, "since": 0}))
    out = runner.run_task([dead, alive])
    assert set(out.values()) == {"stored"}
    assert not sweep_claims.claim_path(dead).exists() and sweep_claims.claim_path(alive).exists()


def test_a_stored_runs_claim_that_looked_live_is_dropped_once_its_worker_has_exited(
        root, monkeypatch):
    """A sweep resumed at once after a kill may find a killed worker still exiting: its
    claim on a run it stored looks live and stays at first, and is dropped once the
    phase's other runs are computed (the worker gone by then), not left behind."""
    stored, todo = _cfg(seed=6), _cfg(seed=7)
    monkeypatch.setattr(runner, "phases", lambda experiment, P: [[stored, todo]])
    cached_run(stored, lambda cfg: {"m_p": 60})
    exiting = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    sweep_claims.claim_path(stored).write_text(json.dumps(
        {"host": socket.gethostname(), "pid": exiting.pid, "since": 0}))
    local = runner._local

    def worker_exits_meanwhile(*args, **kw):
        assert sweep_claims.claim_path(stored).exists()  # live when the sweep began
        exiting.kill()
        exiting.wait()
        return local(*args, **kw)

    monkeypatch.setattr(runner, "_local", worker_exits_meanwhile)
    try:
        result = runner.sweep("table2", "smoke", workers=1, threads=1, stack=1)
    finally:
        exiting.kill()
    assert result.outcomes == {config_hash(stored): "stored", config_hash(todo): "computed"}
    assert not sweep_claims.claim_path(stored).exists()


def test_a_claimed_run_loses_the_temporary_files_of_a_killed_writer(root):
    cfg = _cfg(seed=5)
    folder = record_path(cfg).parent
    folder.mkdir(parents=True)
    stale = [folder / f".{config_hash(cfg)}.abc123.tmp", folder / f".{config_hash(cfg)}.x.tmp"]
    other = folder / ".0000000000000000.def.tmp"  # another run's: left alone
    for p in stale + [other]:
        p.write_text("half a record")
    runner.run_task([cfg])
    assert not any(p.exists() for p in stale) and other.exists()
    assert load_record(record_path(cfg))["status"] == "ok"


# -- sweeps -------------------------------------------------------------------------------

def _records(root: Path, experiment: str = "tracking") -> dict[str, dict]:
    out = {}
    for path in sorted((root / "smoke" / experiment).glob("*.json")):
        rec = load_record(path)  # every file parses
        assert rec["run_id"] not in out
        out[rec["run_id"]] = rec
    return out


def test_kill_and_resume_loses_nothing_and_does_nothing_twice(root):
    """A sweep with two workers is SIGKILLed (with its workers) after a few records; the
    rerun completes the grid, leaves no claim or temporary file, and does not rewrite
    what the first sweep stored."""
    grid = table2_grid(get_profile("smoke"))
    env = {**os.environ, "SST_RESULTS_DIR": str(root), "SST_PROGRESS": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "sst_core", "sweep", "table2", "--profile",
                             "smoke", "--workers", "2"], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    folder = root / "smoke" / "tracking"
    deadline = time.time() + 300
    while time.time() < deadline and len(list(folder.glob("*.json"))) < 3:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    first = {p.name: p.stat().st_mtime_ns for p in folder.glob("*.json")}
    assert 3 <= len(first) < len(grid), "the kill should land mid-sweep"

    # at once: a killed worker may still be exiting; the sweep waits for its claims
    result = runner.sweep("table2", "smoke", workers=1)
    records = _records(root)
    assert set(records) == {config_hash(c) for c in grid}
    assert result.count("computed") == len(grid) - len(first)
    for name, mtime in first.items():
        assert (folder / name).stat().st_mtime_ns == mtime  # not recomputed
    leftovers = [p.name for p in folder.iterdir() if p.suffix not in (".json", ".pt")]
    assert leftovers == []
    again = runner.sweep("table2", "smoke")
    assert again.count("computed") == 0 and again.count("stored") == len(grid)


def test_failed_runs_are_retried_only_when_asked(root, monkeypatch):
    from sst_core.store.records import RunFailed

    def boom(cfg):
        raise RunFailed("diverged on purpose")

    monkeypatch.setattr(paper1, "order_sensitivity", boom)  # the registry resolves it by name
    runner.sweep("groups", "smoke")
    recs = _records(root, "groups_order_sensitivity")
    assert recs and all(r["status"] == "failed" for r in recs.values())
    assert runner.sweep("groups", "smoke").count("computed") == 0
    monkeypatch.undo()
    monkeypatch.setenv("SST_RESULTS_DIR", str(root))
    assert runner.sweep("groups", "smoke", retry_failed=True).count("computed") == len(recs)
    assert all(r["status"] == "ok" for r in _records(root, "groups_order_sensitivity").values())


def test_stacked_sweep_matches_unstacked_records(tmp_path, monkeypatch):
    """The sweep's stacks give the records of one-by-one runs (up to float rounding)."""
    grid = [_cfg(seed=s, lr=lr) for s in (0, 1) for lr in (0.01, 0.03)]
    monkeypatch.setattr(runner, "phases", lambda name, P: [grid])
    a, b = tmp_path / "a", tmp_path / "b"
    runner.sweep("table2", "smoke", stack=4, root=a)
    runner.sweep("table2", "smoke", stack=1, root=b)
    ra, rb = _records(a), _records(b)
    assert set(ra) == set(rb) == {config_hash(c) for c in grid}
    for rid in ra:
        assert ra[rid]["stack"]["size"] == 4 and "stack" not in rb[rid]
        for L, v in ra[rid]["metrics"]["eval"].items():
            assert v["token"] == pytest.approx(rb[rid]["metrics"]["eval"][L]["token"], abs=0.02)


def _metrics_without_timing(record: dict) -> dict:
    m = dict(record["metrics"])
    m.pop("train_time_s", None)
    return m


@pytest.mark.parametrize("make", [
    lambda: _cfg(model="mamba", max_steps=6),
    lambda: _cfg(model="aussm", max_steps=6),  # the linear scan (C loops where built)
    lambda: replace(_cfg(model="state_gated_rnn", max_steps=6), group="S3"),
])
def test_same_config_and_seed_give_the_same_record(tmp_path, make):
    """Determinism on the CPU (same torch thread count): two fresh runs of one config
    store identical metrics; the records name the version that made them."""
    from sst_core.experiments.runs import run

    cfg = make()
    first = run(cfg, root=tmp_path / "1")
    second = run(cfg, root=tmp_path / "2")
    assert _metrics_without_timing(first) == _metrics_without_timing(second)
    for rec in (first, second):
        assert rec["git_commit"] and rec["host"]["torch_threads"] >= 1
        assert rec["host"]["scan_loops"] in ("C", "torch")
    assert first["version"] == second["version"] == registry.version("tracking")


# -- status -------------------------------------------------------------------------------

def test_status_counts_done_failed_missing_running_and_stale(root):
    P = get_profile("smoke")
    grid = table2_grid(P)
    ok = [cached_run(c, lambda cfg: {"m_p": 60}, version=1) for c in grid[:4]]
    from sst_core.store.records import RunFailed

    def fail(cfg):
        raise RunFailed("no")

    cached_run(grid[4], fail, version=1)
    claim = sweep_claims.Claim(grid[5])
    assert claim.acquire()
    stale = record_path(grid[0])  # made by an older version
    rec = json.loads(stale.read_text())
    rec["version"] = 0
    stale.write_text(json.dumps(rec))
    old = record_path(grid[1])  # made before records kept a version
    rec = json.loads(old.read_text())
    del rec["version"]
    old.write_text(json.dumps(rec))
    (row,) = sweep_status.status("smoke", ["table2"])
    claim.release()
    assert (row.total, row.done, row.failed, row.missing) == (len(grid), 4, 1, len(grid) - 5)
    assert (row.claimed, row.stale) == (1, 2)
    assert row.compute_s >= sum(run_compute_s(r) for r in ok)  # the failed run's time too
    text = sweep_status.status_markdown([row], "smoke")
    assert f"| table2 | {len(grid)} | 4 | 1 | {len(grid) - 5} | 0 | 1 | 2 |" in text
    # --retry-stale computes the missing runs and recomputes the two stale ones; the failed
    # one (current code) stays failed
    result = runner.sweep("table2", "smoke", retry_stale=True, stack=1)
    assert result.count("computed") == (len(grid) - 5) + 2
    assert load_record(record_path(grid[4]))["status"] == "failed"


def test_retry_stale_computes_the_runs_without_a_record_first(root, monkeypatch):
    """A stale record is shown on its page; a missing one keeps the chapter off its profile,
    so ``--retry-stale`` takes the missing runs of a phase before the stale ones."""
    grid = table2_grid(get_profile("smoke"))[:6]
    monkeypatch.setattr(runner, "grid_rounds", lambda experiment, P, *rest: iter([grid]))
    for c in grid[:3]:
        cached_run(c, lambda cfg: {"m_p": 60}, version=1)
    for c in grid[:2]:  # made by an older version
        rec = json.loads(record_path(c).read_text())
        rec["version"] = 0
        record_path(c).write_text(json.dumps(rec))
    seen = []

    def fake_local(tasks, workers, retry, root_s, progress, artifacts=(), threads=None,
                   stop_by=None, estimates=None):
        seen.extend(config_hash(c) for task in tasks for c in task)
        progress({config_hash(c): "computed" for task in tasks for c in task})

    monkeypatch.setattr(runner, "_local", fake_local)
    runner.sweep("table2", "smoke", retry_stale=True, stack=1)
    assert seen == [config_hash(c) for c in grid[3:] + grid[:2]]
    seen.clear()
    runner.sweep("table2", "smoke", stack=1)  # without it, the stale ones stay
    assert seen == [config_hash(c) for c in grid[3:]]


def test_bad_names_are_clear_errors(root, capsys):
    with pytest.raises(ValueError, match="unknown sweep 'tabel2'; allowed: groups"):
        runner.sweep("tabel2", "smoke")
    with pytest.raises(ValueError, match="unknown executor 'dask'"):
        runner.sweep("table2", "smoke", executor="dask")
    with pytest.raises(ValueError, match="unknown profile 'fast'"):
        runner.sweep("table2", "fast")
    with pytest.raises(SystemExit):
        cli.main(["sweep", "tabel2"])
    assert "unknown sweep 'tabel2'; allowed: groups" in capsys.readouterr().err


def test_status_cli_prints_every_sweep(root, capsys):
    assert cli.main(["status", "--profile", "smoke"]) == 0
    out = capsys.readouterr().out
    for name in registry.SWEEPS:
        assert f"| {name} |" in out
    assert cli.main(["status", "--profile", "smoke", "--format", "json",
                     "--experiment", "table3"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["experiment"] == "table3" and row["missing"] == row["total"] > 0
    assert "missing_estimate" not in row  # priced only when asked


def test_status_cli_prices_the_missing_runs_when_asked(root, capsys):
    """``sst status --estimate`` prices each sweep's missing runs as the book's plan does
    (:func:`sst_core.book.plan.missing_estimate`), in Markdown and in JSON."""
    from sst_core.book.plan import estimate_cell, missing_estimate, price_table
    from sst_core.experiments.paper1 import table3_grid
    from sst_core.spec.profiles import get_profile

    grid = table3_grid(get_profile("smoke"))
    cached_run(grid[0], lambda c: {"m_p": None})  # one stored run prices the others
    assert cli.main(["status", "--profile", "smoke", "--experiment", "table3",
                     "--estimate"]) == 0
    out = capsys.readouterr().out
    guess = missing_estimate("table3", "smoke", price_table("smoke", root), root)
    assert guess["unpriced"] == 0 and guess["rough"] == 0  # the same experiment and model
    assert f"| table3 | {len(grid) - 1} | {estimate_cell(guess, star='*')} |" in out
    assert cli.main(["status", "--profile", "smoke", "--experiment", "table3", "--estimate",
                     "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["missing_estimate"] == guess


def test_ray_and_local_executors_give_equal_records(tmp_path, monkeypatch):
    """A small sweep on a local Ray instance stores the records the local executor does,
    with the default one worker (a task once asked for more CPUs than Ray was given and
    the sweep waited forever)."""
    pytest.importorskip("ray")
    grid = [_cfg(seed=s, lr=lr) for s in (0, 1) for lr in (0.01, 0.03)] + [
        _cfg(model="mamba", seed=0)]
    monkeypatch.setattr(runner, "phases", lambda name, P: [grid])
    monkeypatch.setenv("SST_PROGRESS", "0")
    ray_root, local_root = tmp_path / "ray", tmp_path / "local"
    r = runner.sweep("table2", "smoke", executor="ray", stack=2, root=ray_root)
    l = runner.sweep("table2", "smoke", workers=1, executor="local", stack=2, root=local_root)
    assert r.count("computed") == l.count("computed") == len(grid)
    a, b = _records(ray_root), _records(local_root)
    assert set(a) == set(b) == {config_hash(c) for c in grid}
    for rid in a:
        assert a[rid]["config"] == b[rid]["config"] and a[rid]["status"] == b[rid]["status"]
        assert a[rid].get("stack", {}).get("run_ids") == b[rid].get("stack", {}).get("run_ids")
        assert _metrics_without_timing(a[rid]) == _metrics_without_timing(b[rid])


class _FakeRay:
    """Just enough of ``ray`` for ``runner._ray``: records what each task asks for and
    runs it in this process."""

    def __init__(self, gpus: float):
        self.gpus, self.asked = gpus, []

    def is_initialized(self):
        return True  # (so _ray neither starts nor shuts it down)

    def cluster_resources(self):
        return {"CPU": 4.0, "GPU": self.gpus}

    def remote(self, fn):
        ray = self

        class Remote:
            def options(self, **asks):
                ray.asked.append(asks)
                return types.SimpleNamespace(remote=lambda *a: (asks, fn(*a)))

        return Remote()

    def wait(self, pending, num_returns=1):
        return pending[:1], pending[1:]

    def get(self, done):
        return done[1]


@pytest.mark.parametrize("gpus", [0, 2])
def test_ray_tasks_ask_for_a_gpu_when_their_configs_run_on_cuda(monkeypatch, gpus):
    """A cuda config's task asks Ray for a GPU (and gets one thread); a cpu config's
    never; an auto config's where the cluster has GPUs. Without GPUs in the cluster a cuda
    task is a clear error, not a task that waits forever."""
    fake = _FakeRay(gpus)
    monkeypatch.setitem(sys.modules, "ray", fake)
    threads_seen = []
    monkeypatch.setattr(runner, "run_task", lambda task, retry, threads, *a: (
        threads_seen.append(threads) or {config_hash(c): "computed" for c in task}))
    tasks = [[_cfg(device="cpu")], [_cfg(device="auto", seed=1)], [_cfg(device="cuda", seed=2)]]
    done = {}
    run = lambda ts: runner._ray(ts, 2, (False, False), "/tmp/x", done.update, "fake:1",
                                 threads=3)
    if gpus == 0:
        run(tasks[:2])
        assert fake.asked == [{"num_cpus": 1, "num_gpus": 0}] * 2
        with pytest.raises(ValueError, match="needs a GPU.*offers none"):
            run(tasks[2:])
        return
    run(tasks)
    assert fake.asked == [{"num_cpus": 1, "num_gpus": g} for g in (0, 1, 1)]
    assert threads_seen == [1, 1, 1]  # on a cluster one thread a task (a GPU task's too)
    assert len(done) == 3
    assert runner.task_resources([_cfg(device="cuda:1")], 0) == {"num_cpus": 1, "num_gpus": 1}


# -- which models stack: from the benchmark's stack_or_not rows -----------------------------

def _bench_record(folder: Path, when: str, ratios: dict[str, float], device: str = "cpu",
                  name: str | None = None) -> None:
    from sst_core.sweep.stacking import ROW_PREFIX

    folder.mkdir(parents=True, exist_ok=True)
    entries = [{"name": f"{ROW_PREFIX}{m}", "ratio": r} for m, r in ratios.items()]
    entries.append({"name": "throughput_mamba_train_L60", "ratio": None})
    (folder / (name or f"{device}-{when}.json")).write_text(json.dumps(
        {"experiment": "bench", "device": device, "created_utc": when, "entries": entries}))


def test_stacking_rows_take_each_models_newest_row_of_the_device(tmp_path):
    from sst_core.bench.records import RECORD_DIR
    from sst_core.sweep import stacking

    assert stacking.BENCH_DIR == RECORD_DIR
    folder = tmp_path / "bench"
    assert stacking.unstacked_models("cpu", tmp_path) == frozenset()  # no record: all stack
    _bench_record(folder, "2026-12-01T00:00:00+00:00", {"mamba": 0.8, "aussm": 1.5})
    _bench_record(folder, "2026-12-02T00:00:00+00:00", {"mamba": 1.1})  # newer: mamba's
    _bench_record(folder, "2026-12-03T00:00:00+00:00", {"tanh_rnn": 2.0}, device="cuda")
    (folder / "broken.json").write_text("{not json")
    rows = stacking.stacking_rows("cpu", tmp_path)
    assert {m: r["ratio"] for m, r in rows.items()} == {("mamba", None): 1.1,
                                                        ("aussm", None): 1.5}
    assert rows[("aussm", None)]["record"] == "cpu-2026-12-01T00:00:00+00:00.json"
    assert stacking.unstacked_models("cpu", tmp_path) == {("mamba", None), ("aussm", None)}
    assert stacking.unstacked_models("cuda", tmp_path) == {("tanh_rnn", None)}
    _bench_record(folder, "2026-12-04T00:00:00+00:00", {"mamba": 0.7})
    assert stacking.unstacked_models("cpu", tmp_path) == {("aussm", None)}


def test_stacking_is_decided_per_model_and_width(tmp_path):
    """A row carries its model and its sizes' d_model; the runs of a model stack or not
    by the row of their own width, and a width no row measured stacks."""
    from sst_core.spec.configs import TrackingConfig
    from sst_core.sweep import stacking

    folder = tmp_path / "bench"
    folder.mkdir()
    entries = [{"name": "stack_or_not_aussm", "sweep_model": "aussm", "ratio": 0.9,
                "sizes": {"d_model": 32}},
               {"name": "stack_or_not_aussm_d128", "sweep_model": "aussm", "ratio": 1.3,
                "sizes": {"d_model": 128}}]
    (folder / "cpu-a.json").write_text(json.dumps(
        {"experiment": "bench", "device": "cpu", "created_utc": "2026-12-06T00:00:00+00:00",
         "entries": entries}))
    unstacked = stacking.unstacked_models("cpu", tmp_path)
    assert unstacked == {("aussm", 128)}

    def cfg(d_model):
        return TrackingConfig(model="aussm", group="C2", n_layers=1, d_model=d_model,
                              d_state=4, lr=0.01, seed=0, profile="smoke", batch=4)
    assert stacking.trains_alone(cfg(128), unstacked)
    assert not stacking.trains_alone(cfg(32), unstacked)
    assert not stacking.trains_alone(cfg(64), unstacked)  # no row at 64: it stacks
    assert stacking.trains_alone(cfg(64), frozenset({("aussm", None)}))  # a width-free row


def test_the_sweep_stacks_only_the_models_measured_faster_stacked(root, monkeypatch):
    """By default a model whose newest stack_or_not row is >= 1 trains one run per task;
    the others stack; an explicit stack size stacks every model, as before the rows."""
    grid = ([_cfg(seed=s, lr=lr) for s in (0, 1) for lr in (0.01, 0.03)]
            + [_cfg(model="mamba", seed=s) for s in (0, 1, 2)])
    monkeypatch.setattr(runner, "phases", lambda name, P: [grid])
    seen: list[list[int]] = []

    def fake_local(tasks, workers, retry, root_s, progress, *a, **k):
        seen.append(sorted(len(t) for t in tasks))
        for t in tasks:
            progress({config_hash(c): "computed" for c in t})

    monkeypatch.setattr(runner, "_local", fake_local)
    runner.sweep("table2", "smoke", stack=None, root=root)
    assert seen[-1] == [3, 4]  # smoke's track_stack is 4: both models stack
    _bench_record(root / "bench", "2026-12-02T00:00:00+00:00",
                  {"mamba": 1.3, "linear_rnn": 0.6})
    runner.sweep("table2", "smoke", stack=None, root=root)
    assert seen[-1] == [1, 1, 1, 4]  # mamba alone, linear_rnn stacked
    runner.sweep("table2", "smoke", stack=2, root=root)
    assert seen[-1] == [1, 2, 2, 2]  # --stack 2: every model (mamba's 3 runs as 2 + 1)
    assert runner.tasks_of(grid, 4, frozenset({("linear_rnn", None), ("mamba", 8)})) == [
        [c] for c in grid]


# -- the best available profile -----------------------------------------------------------

def test_best_profile_is_paper_only_where_its_records_cover_the_chapter(root):
    from sst_core.experiments.paper1 import table3_grid

    paper_table3 = table3_grid(get_profile("paper"))
    assert params.chapter_coverage("p1_table3", "paper") == (0, len(paper_table3))
    name, why = params.best_profile("p1_table3")
    assert name == "quick" and f"0 of {len(paper_table3)}" in why
    for cfg in paper_table3[:-1]:
        cached_run(cfg, lambda c: {"m_p": None})
    assert params.best_profile("p1_table3")[0] == "quick"
    cached_run(paper_table3[-1], lambda c: {"m_p": None})
    P = params.settings("p1_table3", "best")
    assert P.name == "paper" and "all" in P.chosen_because
    assert P.chosen_because not in P.scale()
    # a chapter whose records are not all stored computes at quick
    assert params.settings("p2_memory", "best").name == "quick"
    assert params.settings("bench", "best").name == "quick"  # reads no sweep
    assert profiles.get_profile("paper").chosen_because == ""


def test_best_prefers_paper_then_standard_then_quick(root):
    """`best` takes paper where complete, else standard where complete, else quick, and
    says which and why."""
    from sst_core.experiments.paper1 import table3_grid

    standard, paper = (table3_grid(get_profile(n)) for n in ("standard", "paper"))
    for cfg in standard[:-1]:
        cached_run(cfg, lambda c: {"m_p": None})
    name, why = params.best_profile("p1_table3")
    assert name == "quick" and f"`standard` {len(standard) - 1} of {len(standard)}" in why
    cached_run(standard[-1], lambda c: {"m_p": None})
    name, why = params.best_profile("p1_table3")
    assert name == "standard" and f"all {len(standard)} `standard`" in why
    assert f"paper: 0 of {len(paper)}" in why  # and why not paper
    cached_run(paper[0], lambda c: {"m_p": None})  # a partial paper sweep changes nothing
    assert params.best_profile("p1_table3")[0] == "standard"
    for cfg in paper[1:]:
        cached_run(cfg, lambda c: {"m_p": None})
    assert params.best_profile("p1_table3")[0] == "paper"
    assert params.settings("p1_table3", "best").name == "paper"


def test_under_way_names_a_larger_profile_with_some_of_its_records(root):
    from sst_core.experiments.paper1 import table3_grid

    standard, paper = (table3_grid(get_profile(n)) for n in ("standard", "paper"))
    assert params.under_way("p1_table3", "quick") is None  # nothing stored
    cached_run(standard[0], lambda c: {"m_p": None})
    w = params.under_way("p1_table3", "quick")
    assert (w.profile.name, w.stored, w.total) == ("standard", 1, len(standard))
    assert params.under_way("p1_table3", "smoke").profile.name == "standard"
    assert params.under_way("p1_table3", "standard") is None  # not larger than itself
    cached_run(paper[0], lambda c: {"m_p": None})  # the larger one comes first
    assert params.under_way("p1_table3", "quick").profile.name == "paper"
    assert params.under_way("p1_table3", "standard").profile.name == "paper"
    assert params.under_way("p1_table3", "paper") is None
    for cfg in paper[1:]:  # complete: not under way any more
        cached_run(cfg, lambda c: {"m_p": None})
    assert params.under_way("p1_table3", "quick").profile.name == "standard"
    assert params.under_way("bench", "quick") is None  # reads no sweep
    assert params.complete_larger("p1_table3", "quick") == ("paper", len(paper))
    assert params.complete_larger("p1_table3", "paper") is None  # not larger than itself
    assert params.complete_larger("bench", "quick") is None


def test_best_counts_records_without_hashing_code_or_importing_torch(root, monkeypatch):
    """Choosing a chapter's profile reads record files only: code versions are `sst
    status`'s business, and torch is not needed to count files."""
    from sst_core.experiments import registry

    def no_hashing(*a, **k):
        raise AssertionError("best fingerprinted code")

    monkeypatch.setattr(registry, "code_hash", no_hashing)
    monkeypatch.setattr(registry, "is_stale_record", no_hashing)
    for cfg in registry.phases("table3", get_profile("paper"))[0]:
        cached_run(cfg, lambda c: {"m_p": None})
    assert params.best_profile("p1_table3")[0] == "paper"
    code = ("import sys; from sst_core.book import params; "
            "params.best_profile('p1_table2'); params.best_profile('p1_diagnostics'); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "SST_RESULTS_DIR": str(root)})
    assert out.stdout.strip() == "False"


def test_record_file_is_the_record_path_and_tells_apart_what_the_run_id_does(tmp_path):
    cfg = table2_grid(get_profile("smoke"))[0]
    assert params.record_file(cfg) == record_path(cfg, Path())
    assert tmp_path / params.record_file(cfg) == record_path(cfg, tmp_path)
    # equal as dataclasses, but different run ids: the cache must not take one for the other
    as_int, as_float = replace(cfg, lr=1), replace(cfg, lr=1.0)
    assert as_int == as_float and config_hash(as_int) != config_hash(as_float)
    assert params.record_file(as_int) == record_path(as_int, Path())
    assert params.record_file(as_float) == record_path(as_float, Path())


def test_figure4_runs_is_a_new_list_each_call():
    P = get_profile("smoke")
    first = paper1.figure4_runs(P)
    first.append("not a config")  # a caller's change stays its own
    again = paper1.figure4_runs(P)
    assert again == first[:-1] and again is not first
    assert paper1.figure4_runs(replace(P, fig4_seeds=(*P.fig4_seeds, 99))) != again


def test_an_unreadable_record_does_not_count_for_best(root):
    from sst_core.experiments import registry

    cfgs = registry.phases("table3", get_profile("paper"))[0]
    for cfg in cfgs:
        cached_run(cfg, lambda c: {"m_p": None})
    record_path(cfgs[0]).write_text("{ truncated")
    assert params.chapter_coverage("p1_table3", "paper") == (len(cfgs) - 1, len(cfgs))
    assert params.best_profile("p1_table3")[0] == "quick"


def test_best_is_a_notebook_profile_only(root, capsys):

    params.check_parameters("p1_table2", {"profile": "best"})
    with pytest.raises(profiles.ConfigError, match="unknown profile 'bets'"):
        params.check_parameters("p1_table2", {"profile": "bets"})
    with pytest.raises(SystemExit):
        cli.main(["sweep", "table2", "--profile", "best"])
    assert "unknown profile 'best'" in capsys.readouterr().err


# -- workers and threads -------------------------------------------------------------------

def test_the_default_layout_is_one_single_threaded_worker_per_core():
    def layout(n, cores, cuda=False):
        return runner.choose_layout(n, cpu_count=cores, cuda=cuda)

    assert layout(8, 2) == (2, 1)
    assert layout(2, 2) == (2, 1)
    assert layout(1, 2) == (1, 2)  # fewer tasks than cores: the cores as threads
    assert layout(3, 8) == (3, 2)
    assert layout(5, 1) == (1, 1)
    assert layout(0, 4) == (1, 4)
    assert layout(8, 16, cuda=True) == (1, 16)  # the runs go to the GPU
    import torch

    assert runner.choose_layout(8, 2) == (1 if torch.cuda.is_available() else 2,
                                          2 if torch.cuda.is_available() else 1)


def test_a_sweep_without_workers_uses_the_rule_and_an_explicit_count_is_kept(root, monkeypatch):
    seen = []

    def fake_local(tasks, workers, retry, root_s, progress, artifacts=(), threads=None,
                   stop_by=None, estimates=None):
        seen.append((len(tasks), workers, threads))
        progress({config_hash(c): "computed" for task in tasks for c in task})

    monkeypatch.setattr(runner, "_local", fake_local)
    n = len(table2_grid(get_profile("smoke")))
    runner.sweep("table2", "smoke", workers=None, stack=1)
    assert seen == [(n, *runner.choose_layout(n))]
    seen.clear()
    runner.sweep("table2", "smoke", workers=1, stack=1)
    assert seen == [(n, 1, os.cpu_count() or 1)]
    seen.clear()
    runner.sweep("table2", "smoke", workers=1, threads=1, stack=1)  # two sweeps side by side
    runner.sweep("table2", "smoke", workers=None, threads=3, stack=1)
    assert seen == [(n, 1, 1), (n, runner.choose_layout(n)[0], 3)]
    with pytest.raises(ValueError, match="workers must be a positive int or None"):
        runner.sweep("table2", "smoke", workers=0)
    with pytest.raises(ValueError, match="threads must be a positive int or None"):
        runner.sweep("table2", "smoke", threads=0)


def test_waiting_for_a_held_run_goes_on_to_the_later_phases(root, monkeypatch):
    """The default: a run another live sweep holds is waited for; once its holder stores
    it, the later phases run here."""
    import threading

    first, later = [_cfg(seed=0), _cfg(seed=1)], [_cfg(seed=2)]
    monkeypatch.setattr(runner, "phases", lambda experiment, P: [first, later])
    monkeypatch.setattr(runner, "POLL_S", 0.05)
    other = sweep_claims.Claim(first[1])
    assert other.acquire()

    def holder_finishes() -> None:  # once the sweep has gone past first[0] to wait
        while not record_path(first[0]).exists():
            time.sleep(0.02)
        time.sleep(0.5)
        cached_run(first[1], lambda cfg: {"m_p": 60})
        other.release()

    thread = threading.Thread(target=holder_finishes)
    thread.start()
    result = runner.sweep("table2", "smoke", workers=1, threads=1, stack=1)
    thread.join()
    assert load_record(record_path(later[0]))["status"] == "ok"
    assert result.outcomes[config_hash(later[0])] == "computed"


def test_without_waiting_a_held_run_is_left_to_its_holder_with_the_later_phases(root,
                                                                                  monkeypatch):
    """``wait=False``: a run another live sweep holds is neither waited for nor computed,
    and the phases after it (which may need it) are left too; the rest is computed."""
    first, later = [_cfg(seed=0), _cfg(seed=1)], [_cfg(seed=2)]
    monkeypatch.setattr(runner, "phases", lambda experiment, P: [first, later])
    other = sweep_claims.Claim(first[1])  # a live holder: this process
    assert other.acquire()
    said = []
    try:
        result = runner.sweep("table2", "smoke", workers=1, threads=1, stack=1, wait=False,
                              report=said.append)
    finally:
        other.release()
    assert result.outcomes == {config_hash(first[0]): "computed",
                               config_hash(first[1]): "claimed"}
    assert load_record(record_path(first[0]))["status"] == "ok"
    assert not record_path(first[1]).exists() and not record_path(later[0]).exists()
    assert said == ["1 runs of table2 are held by another sweep: left to it, with the "
                    "experiment's later phases"]
    again = runner.sweep("table2", "smoke", workers=1, threads=1, stack=1, wait=False)
    assert again.count("computed") == 2 and again.count("stored") == 1  # released: done now


def test_grid_rounds_give_each_config_once_and_what_a_grid_gains_afterwards(monkeypatch):
    a, b, c, d, e = (_cfg(seed=k) for k in range(5))
    calls = []

    def grid(experiment, P):  # the second reading has gained d (a tracker) and e
        calls.append(experiment)
        return [[a, b], [c]] if len(calls) == 1 else [[a, b, d], [c, e]]

    monkeypatch.setattr(runner, "phases", grid)
    rounds = list(runner.grid_rounds("table2", get_profile("smoke")))
    assert rounds == [[a, b], [c], [d], [e]] and len(calls) == 3


class _Analysis(types.SimpleNamespace):  # an analysis config: it reads the tracker ``run``
    pass


def _analysis(tracker, k=0):
    return _Analysis(run=tracker, experiment="tracking_diagnostics", k=k)


def test_tracker_rounds_put_each_analysis_right_after_its_trackers(monkeypatch):
    """What no analysis reads comes first in one round; then the trackers analyses read,
    ``round_tasks`` tasks at a time, each round followed by its analyses; last, analyses
    whose trackers were computed in an earlier reading."""
    free, t0, t1, t2, old = (_cfg(seed=k) for k in range(5))
    a0, a0b, a1, a2, a_old = (_analysis(t0), _analysis(t0, 1), _analysis(t1), _analysis(t2),
                              _analysis(old))
    monkeypatch.setattr(runner, "config_hash", lambda c: repr(c))  # the fakes too
    one_each = lambda cfgs: [[c] for c in cfgs]  # noqa: E731  (stack 1)
    rounds = runner.tracker_rounds([[t0, free, t1, t2], [a0, a1, a2, a0b, a_old]],
                                   one_each, 2)
    assert rounds == [[free], [t0, t1], [a0, a1, a0b], [t2], [a2], [a_old]]
    assert runner.tracker_rounds([[t0, free, t1, t2], [a0, a1, a2, a0b]], one_each, 1) == [
        [free], [t0], [a0, a0b], [t1], [a1], [t2], [a2]]
    # a stack is one task: its trackers stay in one round
    assert runner.tracker_rounds([[t0, t1, t2], [a0, a1, a2]],
                                 lambda cfgs: [cfgs[:2], cfgs[2:]], 1) == [
        [t0, t1], [a0, a1], [t2], [a2]]
    # no analysis: the phases as they are
    assert runner.tracker_rounds([[t0], [t1]], one_each, 1) == [[t0], [t1]]
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match=f"round_tasks must be a positive int, got {bad!r}"):
            runner.tracker_rounds([[t0], [a0]], one_each, bad)


def test_grid_rounds_split_only_when_asked(monkeypatch):
    t0, t1 = _cfg(seed=0), _cfg(seed=1)
    a0, a1 = _analysis(t0), _analysis(t1)
    monkeypatch.setattr(runner, "config_hash", lambda c: repr(c))
    monkeypatch.setattr(runner, "phases", lambda experiment, P: [[t0, t1], [a0, a1]])
    P = get_profile("smoke")
    assert list(runner.grid_rounds("diagnostics", P)) == [[t0, t1], [a0, a1]]
    assert list(runner.grid_rounds("diagnostics", P, lambda cfgs: [[c] for c in cfgs], 1)) == [
        [t0], [a0], [t1], [a1]]


def test_a_sweep_diagnoses_a_tracker_before_it_trains_the_next_round(root, monkeypatch):
    """One worker: two tasks a round, so the first two trackers' analyses are computed
    before the third tracker is trained, and a sweep stopped after them has lost no
    weights an analysis still needs."""
    trackers = paper1.s3_runs(get_profile("smoke"))[:3]
    analyses = [paper1.diagnostics_config(get_profile("smoke"), t) for t in trackers]
    monkeypatch.setattr(runner, "phases", lambda name, P: [trackers, analyses])
    order = []
    result = runner.sweep("diagnostics", "smoke", workers=1, stack=1,
                          progress=lambda outcomes: order.extend(outcomes))
    ids = [config_hash(c) for c in trackers + analyses]
    assert all(result.outcomes[i] == "computed" for i in ids)
    t0, t1, t2, a0, a1, a2 = (order.index(i) for i in ids)
    assert max(t0, t1) < min(a0, a1) and max(a0, a1) < t2 < a2


def test_a_grid_that_grows_with_its_records_is_done_in_one_sweep(root, monkeypatch):
    """Figure 4's sweep grows once records of its cells are stored: the same ``sst sweep``
    computes the runs it gains."""
    first, gained = _cfg(seed=0), _cfg(seed=1)
    monkeypatch.setattr(runner, "phases", lambda experiment, P: [
        [first] + ([gained] if record_path(first).exists() else [])])
    result = runner.sweep("table2", "smoke", workers=1, threads=1, stack=1)
    assert result.outcomes == {config_hash(first): "computed", config_hash(gained): "computed"}
    assert load_record(record_path(gained))["status"] == "ok"
    again = runner.sweep("table2", "smoke", workers=1, threads=1, stack=1)
    assert again.count("computed") == 0 and again.count("stored") == 2


def test_cli_workers_default_is_auto(root, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(runner, "sweep", lambda name, profile, **kw: calls.append(kw["workers"])
                        or runner.SweepResult(name, profile))
    assert cli.main(["sweep", "table2", "--profile", "smoke"]) == 0
    assert "workers auto" in capsys.readouterr().out
    assert cli.main(["sweep", "table2", "--profile", "smoke", "--workers", "2"]) == 0
    assert calls == [None, 2]
    monkeypatch.setattr(runner, "sweep", lambda name, profile, **kw: calls.append(
        (kw["workers"], kw["threads"], kw["wait"])) or runner.SweepResult(name, profile))
    assert cli.main(["sweep", "table2", "--profile", "smoke", "--workers", "1", "--threads",
                     "1", "--no-wait"]) == 0
    assert "1 worker(s), 1 torch thread(s) each, leaving runs another sweep holds to it" \
        in capsys.readouterr().out
    assert calls[-1] == (1, 1, False)
    with pytest.raises(SystemExit):
        cli.main(["sweep", "table2", "--threads", "0"])
    with pytest.raises(SystemExit):
        cli.main(["sweep", "table2", "--workers", "many"])


def test_time_local_computes_into_a_temporary_folder_and_restores_threads(root):
    import torch

    before = torch.get_num_threads()
    cfgs = [_cfg(seed=s) for s in (0, 1)]
    wall = runner.time_local(cfgs, workers=1, threads=1)
    assert wall > 0 and torch.get_num_threads() == before
    assert os.environ["SST_RESULTS_DIR"] == str(root)
    assert not any(root.iterdir())  # nothing written to the real results folder
    kept = root / "kept"
    runner.time_local(cfgs[:1], workers=1, threads=1, root=kept)
    assert len(list(kept.rglob("*.json"))) == 1


def test_committed_files_are_records_and_the_weights_analyses_read(root):
    """Records always; weights only of a tracker an analysis reads and that passes at its
    training length (an ``m_p``), or that an analysis not yet stored reads."""
    from sst_core.experiments.paper1 import diagnostics_grid, width_grid
    from sst_core.store.records import artifact_path
    from sst_core.sweep.status import committed_files

    P = get_profile("smoke")
    trackers = list(dict.fromkeys(c.run for c in diagnostics_grid(P)))
    tracks, never_learnt = trackers[:2]  # S3 trackers that the diagnostics read
    other = next(c for c in width_grid(P) if c.d_model != P.track_d_model)  # read by none
    for cfg, m_p in ((tracks, 60), (never_learnt, None), (other, 1000)):
        cached_run(cfg, lambda c, m_p=m_p: {"m_p": m_p})
        artifact_path(cfg, ".pt").write_bytes(b"weights")
    # no analysis of never_learnt is stored yet: the next session would need its weights
    assert artifact_path(never_learnt, ".pt") in committed_files("smoke")
    from sst_core.experiments.registry import SWEEPS, phases

    reading = {c for name in SWEEPS for cfgs in phases(name, P) for c in cfgs
               if getattr(c, "run", None) == never_learnt}
    assert len(reading) > 1  # the diagnostics and other sweeps' analyses
    for analysis in reading:  # all stored now: its weights are not needed again
        assert artifact_path(never_learnt, ".pt") in committed_files("smoke")
        cached_run(analysis, lambda c: {"q": 1.0})
    files = committed_files("smoke")
    assert {record_path(c) for c in (tracks, never_learnt, other)} <= set(files)
    assert artifact_path(tracks, ".pt") in files
    assert artifact_path(never_learnt, ".pt") not in files
    assert artifact_path(other, ".pt") not in files
    assert all(f.exists() for f in files) and files == sorted(files)
    artifact_path(tracks, ".pt").unlink()  # weights lost: nothing to commit
    assert artifact_path(tracks, ".pt") not in committed_files("smoke")


def test_a_staged_sweep_commits_its_records_and_no_weights(root):
    """The wide recompute (staged: no chapter reads it yet) keeps its trackers' weights
    local, those an analysis of it reads and those of a pending analysis alike; a tracker
    that a chapter's sweep also analyses keeps its weights committed by that sweep."""
    from sst_core.experiments.paper1 import figure4_wide_diagnostics
    from sst_core.experiments.registry import SWEEP_GRIDS, staged_sweeps
    from sst_core.store.records import artifact_path
    from sst_core.sweep.status import committed_files

    P = get_profile("smoke")
    assert "wide" in staged_sweeps()
    read = list(dict.fromkeys(c.run for c in figure4_wide_diagnostics(P)))
    others = {c.run for name, grids in SWEEP_GRIDS.items() if name not in staged_sweeps()
              for g in grids for c in g.configs(P) if getattr(c, "run", None) is not None}
    wide_only = [c for c in read if c not in others]
    shared = [c for c in read if c in others]  # the RNN family's runs, not widened
    assert wide_only and shared
    for cfg in (wide_only[0], shared[0]):
        cached_run(cfg, lambda c: {"m_p": 60})  # passes: worth committing, were it read
        artifact_path(cfg, ".pt").write_bytes(b"weights")
    files = committed_files("smoke")
    assert record_path(wide_only[0]) in files and artifact_path(wide_only[0], ".pt") not in files
    assert artifact_path(shared[0], ".pt") in files  # a chapter's analysis reads it


def test_the_committed_standard_results_stay_under_100_mb():
    """``results/standard`` as a clone has it (the files git tracks) stays under the 100 MB
    that "Paper 1 at CPU scale" allows."""
    repo = Path(__file__).resolve().parents[1]
    if not (repo / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(["git", "ls-files", "-z", "results/standard"], cwd=repo,
                            capture_output=True, check=True).stdout.split(b"\0")
    paths = [repo / os.fsdecode(p) for p in listed if p]
    assert paths, "no committed standard records"
    size = sum(p.stat().st_size for p in paths if p.exists())
    assert size < 100e6, f"results/standard holds {size / 1e6:.1f} MB of committed files"


WORKER_SCRIPT = r"""
import multiprocessing as mp, os, sys, time
from concurrent.futures import ProcessPoolExecutor
from sst_core.sweep.runner import die_with_parent

def task(path):
    with open(path, "w") as f:
        f.write(str(os.getpid()))
    time.sleep(120)

if __name__ == "__main__":
    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"),
                             initializer=die_with_parent, initargs=(os.getpid(), 0.1)) as pool:
        pool.submit(task, sys.argv[1]).result()
"""


def test_pool_workers_exit_when_the_sweep_process_is_killed(tmp_path):
    """Killing only the sweep's own process (not its process group) leaves no worker
    computing on with the settings it was started with."""
    script, pid_file = tmp_path / "sweep.py", tmp_path / "worker.pid"
    script.write_text(WORKER_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), str(pid_file)], cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    deadline = time.time() + 60
    while not (pid_file.exists() and pid_file.read_text()) and time.time() < deadline:
        time.sleep(0.1)
    worker = int(pid_file.read_text())
    proc.kill()
    proc.wait()
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(worker, signal.SIGKILL)
        pytest.fail("the pool worker outlived the killed sweep process by 10 s")


# -- a stop time ----------------------------------------------------------------------------

def test_a_stop_time_is_read_in_each_of_its_forms():
    from datetime import datetime, timedelta, timezone

    now = datetime(2026, 12, 4, 22, 30, tzinfo=timezone.utc)
    at = lambda text: runner.parse_stop_by(text, now)  # noqa: E731
    assert at("+90m") == (now + timedelta(minutes=90)).timestamp()
    assert at("+2h30m") == at("+150m") == (now + timedelta(hours=2.5)).timestamp()
    assert at("+45s") == now.timestamp() + 45
    assert at("23:10") == (now + timedelta(minutes=40)).timestamp()  # today, still ahead
    assert at("01:05") == datetime(2026, 12, 5, 1, 5, tzinfo=timezone.utc).timestamp()
    assert at("2026-12-05T01:30") == datetime(2026, 12, 5, 1, 30, tzinfo=timezone.utc).timestamp()
    assert at("2026-12-05T01:30+01:00") == \
        datetime(2026, 12, 5, 0, 30, tzinfo=timezone.utc).timestamp()
    for bad in ("soon", "+", "+2d", "25:00", "12:75", "2026-13-01T00:00", ""):
        with pytest.raises(ValueError, match=re.escape(f"stop time {bad!r} not understood; "
                                                       "expected +DURATION")):
            at(bad)


def test_a_task_is_too_late_when_its_price_reaches_past_the_stop_time():
    assert not runner.ends_too_late(None, 1e9, now=0.0)  # no stop time
    assert not runner.ends_too_late(100.0, 60.0, now=30.0)
    assert runner.ends_too_late(100.0, 80.0, now=30.0)
    assert not runner.ends_too_late(100.0, None, now=99.0)  # no price: until the stop time
    assert runner.ends_too_late(100.0, None, now=101.0)


def test_a_task_that_would_end_after_the_stop_time_is_deferred_unclaimed(root):
    cfg = _cfg()
    now = time.time()
    out = runner.run_task([cfg], threads=1, stop_by=now + 3600, estimate_s=7200)
    assert out == {config_hash(cfg): "deferred"}
    assert not record_path(cfg).exists() and not sweep_claims.claim_path(cfg).exists()
    out = runner.run_task([cfg], threads=1, stop_by=now + 3600, estimate_s=60)
    assert out == {config_hash(cfg): "computed"} and record_path(cfg).exists()


def test_a_sweep_with_a_stop_time_computes_what_fits_and_defers_the_rest(root, monkeypatch):
    """Priced runs that would end after the stop time are deferred (no record, no claim),
    the experiment's later phases wait for a later sweep, the summary says so, and a
    sweep without a stop time then computes exactly what was deferred."""
    cheap, dear, later = _cfg(seed=0), _cfg(seed=1), _cfg(seed=2)
    monkeypatch.setattr(runner, "phases", lambda experiment, P: [[cheap, dear], [later]])
    prices = {config_hash(cheap): 1.0, config_hash(dear): 1e6, config_hash(later): 1.0}
    said = []
    result = runner.sweep("table2", "smoke", workers=1, threads=1, stack=1,
                          stop_by=time.time() + 3600, price=lambda c: prices[config_hash(c)],
                          report=said.append)
    assert result.outcomes == {config_hash(cheap): "computed", config_hash(dear): "deferred"}
    assert record_path(cheap).exists()
    assert not record_path(dear).exists() and not record_path(later).exists()
    assert not any(root.rglob("*.claim"))
    assert said == ["1 runs of table2 would not finish by the stop time: left for a later "
                    "sweep, with the experiment's later phases"]
    assert "1 deferred: they would not have finished by the stop time" in result.summary()
    again = runner.sweep("table2", "smoke", workers=1, threads=1, stack=1)
    assert again.count("computed") == 2 and again.count("stored") == 1


def test_a_stack_is_priced_as_the_sum_of_its_runs_and_a_passed_stop_time_starts_nothing(
        root, monkeypatch):
    stack = [_cfg(seed=k) for k in range(3)]
    monkeypatch.setattr(runner, "phases", lambda experiment, P: [stack])
    seen = []
    real = runner.run_task

    def spy(cfgs, *args):
        seen.append(args[-1])  # the task's price
        return real(cfgs, *args)

    monkeypatch.setattr(runner, "run_task", spy)
    result = runner.sweep("table2", "smoke", workers=1, threads=1, stack=3,
                          stop_by=time.time() + 10, price=lambda c: 4.0, report=print)
    assert seen == [12.0] and result.count("deferred") == 3  # 3 x 4 s > 10 s
    result = runner.sweep("table2", "smoke", workers=1, threads=1, stack=3,
                          stop_by=time.time() - 1, price=lambda c: None,  # unpriced, too late
                          report=print)
    assert result.count("deferred") == 3 and not any(root.rglob("*.json"))


def test_cli_stop_by_prices_the_runs_and_a_bad_time_is_named(root, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(runner, "sweep", lambda name, profile, **kw: calls.append(kw)
                        or runner.SweepResult(name, profile))
    before = time.time()
    assert cli.main(["sweep", "table2", "--profile", "smoke", "--stop-by", "+2h"]) == 0
    out = capsys.readouterr().out
    assert "starting no run that would end after" in out and "(in 120 min)" in out
    kw = calls[-1]
    assert before + 7200 <= kw["stop_by"] <= time.time() + 7200
    assert kw["price"](table2_grid(get_profile("smoke"))[0]) is None  # nothing stored here
    assert cli.main(["sweep", "table2", "--profile", "smoke"]) == 0
    assert calls[-1]["stop_by"] is None and calls[-1]["price"] is None
    with pytest.raises(SystemExit):
        cli.main(["sweep", "table2", "--stop-by", "soon"])
    assert "stop time 'soon' not understood" in capsys.readouterr().err


def test_cli_stop_by_prices_a_run_that_saves_its_state_until_its_first_save(root, monkeypatch):
    """An LRA run saves its state after every epoch, so a stop time only has to leave it
    one epoch (its price: the stored runs' mean over its epochs); other runs: the whole."""
    from sst_core.experiments import paper2
    from sst_core.experiments.runs import share_until_saved

    P = get_profile("smoke")
    lra, tracking = paper2.lra_main_grid(P)[0], table2_grid(P)[0]
    for cfg in (lra, tracking):
        cached_run(cfg, lambda c: {"m_p": 60})
    longer = replace(lra, seed=9, epochs=4 * lra.epochs)  # four times the work
    assert share_until_saved(longer) == 1 / longer.epochs and share_until_saved(tracking) == 1.0
    calls = []
    monkeypatch.setattr(runner, "sweep", lambda name, profile, **kw: calls.append(kw)
                        or runner.SweepResult(name, profile))
    assert cli.main(["sweep", "lra", "--profile", "smoke", "--stop-by", "+1h"]) == 0
    price = calls[-1]["price"]
    lra_s = run_compute_s(load_record(record_path(lra)))
    assert price(longer) == pytest.approx(lra_s / lra.epochs)  # one epoch of it, not four
    assert price(replace(tracking, seed=9)) == \
        pytest.approx(run_compute_s(load_record(record_path(tracking))))


def test_cli_sweep_all_runs_every_sweep_a_chapter_reads(root, monkeypatch, capsys):
    """``sst sweep all`` computes the sweeps the chapters read and leaves out the staged ones
    (many sessions of compute no chapter reads yet), naming them; a staged sweep runs when
    named."""
    from sst_core.experiments import registry

    swept = []
    monkeypatch.setattr(runner, "plan", lambda name, *a: (0, 0))
    monkeypatch.setattr(runner, "sweep", lambda name, profile, **kw: swept.append(name)
                        or runner.SweepResult(name, profile))
    staged = registry.staged_sweeps()
    assert staged, "no staged sweep to leave out"
    assert cli.main(["sweep", "all", "--profile", "smoke"]) == 0
    assert swept == [n for n in registry.SWEEPS if n not in staged]
    assert f"leaves out the staged sweeps {', '.join(staged)}" in capsys.readouterr().out
    swept.clear()
    assert cli.main(["sweep", staged[0], "--profile", "smoke"]) == 0
    assert swept == [staged[0]]
