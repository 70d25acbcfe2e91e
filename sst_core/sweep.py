"""Resumable sweeps over an experiment's grid: ``sst sweep`` and ``sst status``.

A *sweep* computes every run of an experiment's grid (under a profile) that has no stored
record. Its unit of work is a *task*: one config, or a stack of tracking configs that
differ only in seed and learning rate (:mod:`sst_core.stacked`, ``P.track_stack`` at a
time). Some experiments come in *phases* (the diagnostics need their trained trackers
first); a phase starts when the previous one is done.

Safe to kill at any moment, SIGKILL included, and to rerun:

- records are written atomically (:mod:`sst_core.results`), so a killed run leaves its
  old record or none, never half of one;
- before computing a run, a worker *claims* it: it creates ``<run-id>.claim`` beside the
  record with ``O_CREAT | O_EXCL`` (exactly one creator wins, also across processes and,
  on a shared file system, across machines), naming its host and pid, and refreshes the
  file's time every :data:`HEARTBEAT_S` seconds while it works. Another worker skips a
  claimed run. A claim is *stale*, and is taken over, when its process is gone (same
  host) or its heartbeat is older than :data:`STALE_AFTER_S`; the takeover renames the
  stale claim away first, so two workers cannot both take it over;
- after claiming, the worker removes temporary files a killed writer of that run left, and
  checks again that the run still has no record, so a run finished by someone else in
  between is not done twice;
- a run another worker holds is waited for: the sweep ends when the phase's every run
  has a record (taking over the runs whose claims went stale meanwhile);
- failed runs stay recorded as failed; ``retry_failed`` computes them again.

Executors: ``local`` runs tasks in a process pool (``workers`` processes, each with
``cpu_count // workers`` torch threads; one worker runs in this process), ``ray`` submits
the same task function to a Ray cluster (``pip install 'sst-core[ray]'``; ``address``
joins an existing cluster, whose nodes must share the results folder).
"""
from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from .config import Profile, TrackingConfig, config_hash, get_profile
from .results import (RecordError, is_stale_record, load_record, needs_run, record_path,
                      results_dir)

HEARTBEAT_S = 30.0  # a working claim's file time is refreshed this often
STALE_AFTER_S = 600.0  # a claim whose heartbeat is older than this is taken over
POLL_S = 1.0  # how often a sweep looks at runs another worker holds
EXECUTORS = ("local", "ray")


# -- the sweeps ---------------------------------------------------------------------------

def _groups(P):
    from .experiments import order_sensitivity_grid
    return [order_sensitivity_grid(P)]


def _table2(P):
    from .experiments import table2_grid
    return [table2_grid(P)]


def _table3(P):
    from .experiments import table3_grid
    return [table3_grid(P)]


def _figure4(P):
    from .analysis import figure4_runs, s3_runs
    return [list(dict.fromkeys(s3_runs(P) + figure4_runs(P)))]


def _diagnostics(P):
    from .analysis import diagnostics_grid
    diag = diagnostics_grid(P)
    return [list(dict.fromkeys(c.run for c in diag)), diag]


def _lra(P):
    from .experiments import lra_ablation_grid, lra_main_grid
    return [list(dict.fromkeys(lra_main_grid(P) + lra_ablation_grid(P)))]


def _harder_groups(P):
    from .beyond import harder_groups_grid
    return [harder_groups_grid(P)]


def _figure4_a5(P):
    from .beyond import analysed_runs, diagnostics_grid_on
    return [analysed_runs(P, "A5"), diagnostics_grid_on(P, "A5")]


def _label_free(P):
    from .beyond import label_free_grid
    cfgs = label_free_grid(P)
    return [list(dict.fromkeys(c.run for c in cfgs)), cfgs]


def _spectra(P):
    from .beyond import spectra_grid
    cfgs = spectra_grid(P)
    return [list(dict.fromkeys(c.run for c in cfgs)), cfgs]


def _semi_affine(P):
    from .beyond import semi_affine_diagnostics, semi_affine_grid
    return [semi_affine_grid(P), semi_affine_diagnostics(P)]


# name -> (what it is, the phases of configs under a profile)
SWEEPS: dict[str, tuple[str, Callable[[Profile], list[list[Any]]]]] = {
    "groups": ("order sensitivity of words (chapter: groups)", _groups),
    "table2": ("Table 2: every architecture on C2, C6, S3", _table2),
    "table3": ("Table 3: rnn_phi with every phi on S3", _table3),
    "figure4": ("the affine S3 training sweep behind Figure 4", _figure4),
    "diagnostics": ("error-control diagnostics (Figures 1-4) of every S3 run", _diagnostics),
    "lra": ("Paper 2: frozen versus learned spectra on LRA (main table and ablation)", _lra),
    "harder_groups": ("beyond: Table 2's models on A4, A5 and C2xS3", _harder_groups),
    "figure4_a5": ("beyond: the Figure 4 sweep and its diagnostics on A5", _figure4_a5),
    "label_free": ("beyond: oracle and label-free q(t) of the S3 and A5 trackers", _label_free),
    "spectra": ("beyond: transition spectra and memory functions of the S3 trackers", _spectra),
    "semi_affine": ("beyond: (Negative) Mamba with a rank-r tanh correction", _semi_affine),
}


# the sweeps whose records each chapter reads (chapters not named read none)
CHAPTER_SWEEPS: dict[str, tuple[str, ...]] = {
    "p1_groups": ("groups",),
    "p1_table2": ("table2",),
    "p1_table3": ("table3",),
    "p1_theory": ("diagnostics",),
    "p1_diagnostics": ("figure4", "diagnostics"),
    "p2_lra": ("lra",),
    "beyond_groups": ("harder_groups", "figure4", "diagnostics", "figure4_a5"),
    "beyond_label_free": ("label_free",),
    "beyond_spectra": ("spectra",),
    "beyond_semi_affine": ("semi_affine",),
}


def chapter_coverage(notebook: str, profile: str, root: Path | None = None) -> tuple[int, int]:
    """How many of the runs a chapter reads have a stored record (ok or failed) under
    ``profile``, and how many it reads: ``(stored, total)``; ``(0, 0)`` for a chapter
    that reads no sweep."""
    names = CHAPTER_SWEEPS.get(notebook)
    rows = status(profile, names, root=root) if names else []
    return sum(r.done + r.failed for r in rows), sum(r.total for r in rows)


def phases(experiment: str, P: Profile) -> list[list[Any]]:
    if experiment not in SWEEPS:
        raise ValueError(f"unknown experiment {experiment!r}; allowed: {', '.join(SWEEPS)}")
    return SWEEPS[experiment][1](P)


def tasks_of(cfgs: Sequence[Any], stack: int) -> list[list[Any]]:
    """The tasks of one phase: stacks of tracking configs, every other config alone."""
    from .experiments import stacks

    tracking = [c for c in cfgs if isinstance(c, TrackingConfig)]
    others = [[c] for c in cfgs if not isinstance(c, TrackingConfig)]
    return (stacks(tracking, stack) if stack > 1 else [[c] for c in tracking]) + others


# -- claims -------------------------------------------------------------------------------

def claim_path(cfg: Any, root: Path | None = None) -> Path:
    return record_path(cfg, root).with_suffix(".claim")


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (a zombie, killed but not yet reaped, as
    happens to a killed worker whose parent died with it, counts as gone)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: trust kill(0)
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def is_stale(path: Path, now: float | None = None) -> bool:
    """Whether the claim at ``path`` was left by a worker that is gone."""
    try:
        info = json.loads(path.read_text())
        age = (now or time.time()) - path.stat().st_mtime
    except FileNotFoundError:
        return False  # released meanwhile
    except (OSError, ValueError):
        return True  # unreadable: a claim cut short while being written
    if info.get("host") == socket.gethostname() and not _pid_alive(int(info.get("pid", -1))):
        return True
    return age > STALE_AFTER_S


class Claim:
    """An exclusive claim on one run (see the module docstring); a context manager."""

    def __init__(self, cfg: Any, root: Path | None = None):
        self.path = claim_path(cfg, root)
        self.held = False
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def acquire(self) -> bool:
        """Take the claim (taking over a stale one); False when a live worker holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if not is_stale(self.path):
                    return False
                try:  # only one of several workers can move the stale claim away
                    os.rename(self.path, self.path.with_name(
                        f"{self.path.name}.stale-{uuid.uuid4().hex[:8]}"))
                except FileNotFoundError:
                    pass
                for old in self.path.parent.glob(f"{self.path.name}.stale-*"):
                    old.unlink(missing_ok=True)
                continue
            with os.fdopen(fd, "w") as f:
                json.dump({"host": socket.gethostname(), "pid": os.getpid(),
                           "since": time.time()}, f)
            self.held = True
            self._beat = threading.Thread(target=self._heartbeat, daemon=True)
            self._beat.start()
            return True
        return False

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                os.utime(self.path)
            except FileNotFoundError:
                return

    def release(self) -> None:
        if self.held:
            self._stop.set()
            self.path.unlink(missing_ok=True)
            self.held = False

    def __enter__(self) -> "Claim":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _drop_stale_claim(cfg: Any) -> None:
    """Remove the claim a killed worker left on a run it had already stored (a stack
    stores its runs one by one and releases their claims together at the end)."""
    path = claim_path(cfg)
    if path.exists() and is_stale(path):
        path.unlink(missing_ok=True)


# -- one task -----------------------------------------------------------------------------

def run_task(cfgs: Sequence[Any], retry_failed: bool = False, threads: int | None = None,
             root: str | None = None, retry_stale: bool = False) -> dict[str, str]:
    """Compute the runs of one task that have no record; ``{run_id: outcome}`` with
    outcome ``computed``, ``stored`` (a record existed) or ``claimed`` (another worker
    holds it). Used by every executor (it is what a pool process or a Ray worker runs)."""
    if root is not None:
        os.environ["SST_RESULTS_DIR"] = str(root)
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    from .experiments import run, run_stack

    out: dict[str, str] = {}
    mine: list[Any] = []
    claims: list[Claim] = []
    try:
        for cfg in cfgs:
            rid = config_hash(cfg)
            if not needs_run(cfg, retry_failed=retry_failed, retry_stale=retry_stale):
                out[rid] = "stored"
                _drop_stale_claim(cfg)
                continue
            claim = Claim(cfg)
            if not claim.acquire():
                out[rid] = "claimed"
                continue
            claims.append(claim)
            # a writer killed mid-write leaves its temporary file; the claim says it is gone
            for tmp in claim.path.parent.glob(f".{rid}.*.tmp"):
                tmp.unlink(missing_ok=True)
            if needs_run(cfg, retry_failed=retry_failed, retry_stale=retry_stale):  # done meanwhile?
                mine.append(cfg)
            else:
                out[rid] = "stored"
        if len(mine) > 1:
            run_stack(mine)
        else:
            for cfg in mine:
                run(cfg, retry_failed=retry_failed, retry_stale=retry_stale)
        for cfg in mine:
            out[config_hash(cfg)] = "computed"
    finally:
        for claim in claims:
            claim.release()
    return out


# -- executors ----------------------------------------------------------------------------

def _threads_per_worker(workers: int) -> int:
    return max(1, (os.cpu_count() or 1) // workers)


def _local(tasks: list[list[Any]], workers: int, retry: tuple[bool, bool], root: str,
           progress: Callable[[dict[str, str]], None]) -> None:
    threads = _threads_per_worker(workers)
    if workers == 1:
        for task in tasks:
            progress(run_task(task, retry[0], threads, root, retry[1]))
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # spawn: a forked child of a process that has used torch's thread pool can hang
    with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
        futures = [pool.submit(run_task, task, retry[0], threads, root, retry[1])
                   for task in tasks]
        for fut in as_completed(futures):
            progress(fut.result())


def _ray(tasks: list[list[Any]], workers: int, retry: tuple[bool, bool], root: str,
         progress: Callable[[dict[str, str]], None], address: str | None) -> None:
    try:
        import ray
    except ImportError:
        raise ValueError("--executor ray needs the optional extra: pip install 'sst-core[ray]'"
                         ) from None
    started = not ray.is_initialized()
    if started:
        kw: dict[str, Any] = {"address": address} if address else {"num_cpus": workers}
        ray.init(include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"SST_RESULTS_DIR": root}}, **kw)
    try:
        threads = 1 if address else _threads_per_worker(workers)
        remote = ray.remote(num_cpus=threads)(run_task)
        pending = [remote.remote(task, retry[0], threads, root, retry[1]) for task in tasks]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            progress(ray.get(done[0]))
    finally:
        if started:
            ray.shutdown()


@dataclass
class SweepResult:
    experiment: str
    profile: str
    outcomes: dict[str, str] = field(default_factory=dict)  # run_id -> outcome

    def count(self, outcome: str) -> int:
        return sum(v == outcome for v in self.outcomes.values())

    def summary(self) -> str:
        return (f"{self.experiment} ({self.profile}): {len(self.outcomes)} runs: "
                f"{self.count('computed')} computed, {self.count('stored')} already stored, "
                f"{self.count('claimed')} claimed by another worker")


def sweep(experiment: str, profile: str, workers: int = 1, executor: str = "local",
          address: str | None = None, retry_failed: bool = False, retry_stale: bool = False,
          stack: int | None = None,
          root: Path | None = None, progress: Callable[[dict[str, str]], None] | None = None
          ) -> SweepResult:
    """Compute every missing run of ``experiment`` under ``profile``; see the module doc."""
    P = get_profile(profile)
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; allowed: {', '.join(EXECUTORS)}")
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    root_s = str(Path(root) if root else results_dir())
    os.environ["SST_RESULTS_DIR"] = root_s  # the parent reads records from there too
    result = SweepResult(experiment, profile)

    def note(outcomes: dict[str, str]) -> None:
        result.outcomes.update(outcomes)
        if progress:
            progress(outcomes)

    for cfgs in phases(experiment, P):
        todo = [c for c in cfgs
                if needs_run(c, retry_failed=retry_failed, retry_stale=retry_stale)]
        for c in cfgs:
            if c not in todo:
                result.outcomes[config_hash(c)] = "stored"
        while todo:
            tasks = tasks_of(todo, P.track_stack if stack is None else stack)
            if executor == "local":
                _local(tasks, workers, (retry_failed, retry_stale), root_s, note)
            else:
                _ray(tasks, workers, (retry_failed, retry_stale), root_s, note, address)
            # runs another worker held: wait until it finishes them (their records appear)
            # or its claim goes stale, then take over what is still missing
            todo = [c for c in todo if result.outcomes.get(config_hash(c)) == "claimed"]
            while todo and any(claim_path(c).exists() and not is_stale(claim_path(c))
                               for c in todo):
                time.sleep(POLL_S)
            todo = [c for c in todo
                    if needs_run(c, retry_failed=retry_failed, retry_stale=retry_stale)]
    return result


# -- status -------------------------------------------------------------------------------

@dataclass
class Status:
    experiment: str
    total: int = 0
    done: int = 0
    failed: int = 0
    missing: int = 0
    claimed: int = 0
    stale: int = 0  # records made by an older version of the code they depend on
    unknown_code: int = 0  # records older than code hashes
    compute_s: float = 0.0  # wall time of the stored runs (a stack's shared by its runs)


def status(profile: str, experiments: Sequence[str] | None = None,
           root: Path | None = None) -> list[Status]:
    """Per sweep: runs done, failed, missing, claimed now, stale, and the compute taken."""
    P = get_profile(profile)
    out = []
    for name in experiments or SWEEPS:
        st = Status(name)
        seen = set()
        for cfgs in phases(name, P):
            for cfg in cfgs:
                rid = config_hash(cfg)
                if rid in seen:
                    continue
                seen.add(rid)
                st.total += 1
                path = record_path(cfg, root)
                try:
                    record = load_record(path) if path.exists() else None
                except RecordError:
                    record = None
                if record is None:
                    st.missing += 1
                    cp = claim_path(cfg, root)
                    st.claimed += cp.exists() and not is_stale(cp)
                    continue
                st.done += record["status"] == "ok"
                st.failed += record["status"] == "failed"
                size = record.get("stack", {}).get("size", 1)
                st.compute_s += record["wall_time_s"] / size
                if is_stale_record(record):
                    if record.get("code_hash") is None:
                        st.unknown_code += 1
                    else:
                        st.stale += 1
        out.append(st)
    return out


def status_markdown(rows: list[Status], profile: str) -> str:
    lines = [f"sst status, profile {profile}", "",
             "| experiment | runs | done | failed | missing | running | stale code | "
             "code unknown | compute (h) |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in rows:
        lines.append(f"| {s.experiment} | {s.total} | {s.done} | {s.failed} | {s.missing} | "
                     f"{s.claimed} | {s.stale} | {s.unknown_code} | {s.compute_s / 3600:.2f} |")
    lines += ["", "stale code: records made before a change to the code they depend on (what "
              "their run functions reach, sst_core.results.code_hash); code unknown: records "
              "older than that check. Rerun them with `sst sweep ... --retry-stale`."]
    return "\n".join(lines)
