"""Resumable sweeps: ``sst sweep``.

A *sweep* computes every run of its grids (:data:`sst_core.experiments.registry.SWEEPS`,
under a profile) that has no stored record. Its unit of work is a *task*: one config, or a stack of tracking configs that
differ only in seed and learning rate (:mod:`sst_core.training.stacked`, ``P.track_stack`` at a
time; by default only the models a benchmark measured faster stacked,
:mod:`sst_core.sweep.stacking`). Some experiments come in *phases* (the diagnostics need their trained trackers
first); a phase starts when the previous one is done. The trackers an analysis reads are
trained a few tasks at a time (two per worker), each such round followed by their
analyses (:func:`tracker_rounds`): their weights, which the analyses need and which are
not committed, then wait on disk for one round, not for the whole training phase. A grid that depends on stored
records (Figure 4's sweep grows in the cells whose runs learn) is read again when its
phases are done, and the runs it has gained are computed in another round
(:func:`grid_rounds`).

Safe to kill at any moment, SIGKILL included, and to rerun:

- records are written atomically (:mod:`sst_core.store.records`), so a killed run leaves its
  old record or none, never half of one;
- before computing a run, a worker *claims* it (:mod:`sst_core.sweep.claims`); another
  worker skips a claimed run, and a claim whose worker is gone is taken over;
- after claiming, the worker removes temporary files a killed writer of that run left, and
  checks again that the run still has no record, so a run finished by someone else in
  between is not done twice;
- a run another worker holds is waited for: the sweep ends when the phase's every run
  has a record (taking over the runs whose claims went stale meanwhile); with
  ``wait=False`` (``--no-wait``) such runs are left to their holder and the sweep goes
  on without the experiment's later phases, so that two sweeps side by side (one per
  core, going through the same experiments) never idle at the end of an experiment,
  where one worker of a pool waits for the last task of the other;
- failed runs stay recorded as failed; ``retry_failed`` computes them again.

A stop time (``stop_by``, ``sst sweep --stop-by``) keeps a sweep from starting work that
would be cut off: a session, a batch job or a lent machine that ends at a known time
kills whatever is running then, and a run killed before its record is written is lost
whole (a stack of selective trackers at ``standard`` takes up to 2 h), or, for a run that
saves its state as it goes (an LRA run, after every epoch), all since its last save.
With a stop time, each task is priced before it starts (``price``: the seconds one run
computes before its work is safe, e.g. the mean compute of the stored runs most like it,
:class:`sst_core.book.plan.CostTable`, times the share of it before its first save,
:func:`sst_core.experiments.runs.share_until_saved`; a stack costs the sum of its runs)
and is *deferred* (outcome ``deferred``, no claim, no record) when that would end after
the stop time, so a sweep spends the end of its time on work that fits. A task without
a price starts whenever the stop time has not passed. A phase with deferred runs ends
the experiment for this sweep (its later phases need them), as runs held by another
sweep do without waiting.

Executors: ``local`` runs tasks in a process pool (``workers`` processes, each with
``cpu_count // workers`` torch threads; one worker runs in this process), ``ray`` submits
the same task function to a Ray cluster (``pip install 'sst-core[ray]'``; ``address``
joins an existing cluster, whose nodes must share the results folder).

Workers and threads. With ``workers=None`` (``sst sweep`` without ``--workers``) the sweep
chooses :func:`choose_layout`: one worker per core with one torch thread each, and,
for a batch of fewer tasks than cores, one worker per task with the cores shared out as
threads (on a machine with CUDA, where the runs go to the GPU: one worker). Measured on the 2-core machine with :func:`time_local` while other jobs shared
its cores (load average 2-8), wall time of the sweep, in the order run:

- 8 reduced-quick runs (tanh RNN width 64 and Mamba d_model 16 / N 16 on C2 and S3,
  batch 64, 300 steps, evaluation at 60, 500, 1000): 2 workers x 1 thread 32, 35, 16,
  10 s; 1 worker x 2 threads 300, 367, 73, 198 s;
- 4 larger runs (tanh RNN width 128 and Mamba d_model 64 / N 32, batch 256, 20 steps at
  length 60): 2 x 1: 57, 13, 14 s; 1 x 2: 179, 207, 15 s; 1 x 1: 21, 25, 18 s.

So model size decides little: small models' per-step ops are too small for a second
thread to pay for its synchronisation, larger ones are limited by memory bandwidth,
which two processes share as two threads would (15 s against 14 s when the machine was
quiet). And whenever the cores are shared, torch's thread pool waits at every op for a
descheduled thread (the 2-thread rows of 73-367 s), which single-threaded workers never
do. ``--workers N`` keeps N processes of ``cpu_count // N`` threads. Two workers hold two
runs' memory at once: for runs near the memory limit pass ``--workers 1``.
"""
from __future__ import annotations

import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from sst_core.experiments.registry import phases
from sst_core.experiments.runs import needs_run
from sst_core.spec.configs import TrackingConfig, config_hash
from sst_core.spec.profiles import get_profile
from sst_core.store.records import (
    RecordWarning,
    artifact_path,
    record_problem,
    results_dir,
    results_dir_at,
)
from sst_core.store.replaced import keep_replaced
from sst_core.sweep.stacking import trains_alone, unstacked_models
from sst_core.sweep.claims import (
    Claim,
    claim_path,
    drop_stale_claim,
    is_stale,
    takeover_text,
)

POLL_S = 1.0  # how often a sweep looks at runs another worker holds

STOP_BY_FORMS = ("+DURATION (+45s, +90m, +2h, +2h30m), HH:MM (the next such time of "
                 "day, local), or an ISO date-time (2026-12-05T01:30, local unless it "
                 "names its offset)")


# local workers allowed per core (each is a process; more only queue for the cores)
MAX_WORKERS_PER_CORE = 4


def parse_stop_by(text: str, now: datetime | None = None) -> float:
    """A stop time (:func:`sweep`'s ``stop_by``, seconds since the epoch) from its
    spelling in :data:`STOP_BY_FORMS`, relative to ``now`` (default: the current local
    time); ``ValueError`` naming the value and the forms allowed."""
    import re

    now = now or datetime.now().astimezone()
    value = text.strip()
    rel = re.fullmatch(r"\+(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", value)
    if rel and any(rel.groups()):
        h, m, sec = (int(g or 0) for g in rel.groups())
        return (now + timedelta(hours=h, minutes=m, seconds=sec)).timestamp()
    clock = re.fullmatch(r"(\d{1,2}):(\d{2})", value)
    if clock and int(clock[1]) < 24 and int(clock[2]) < 60:
        at = now.replace(hour=int(clock[1]), minute=int(clock[2]), second=0, microsecond=0)
        return (at if at > now else at + timedelta(days=1)).timestamp()
    try:
        at = datetime.fromisoformat(value) if "T" in value or " " in value else None
    except ValueError:
        at = None
    if at is not None:
        if at.tzinfo is None:
            at = at.replace(tzinfo=now.tzinfo)
        if at <= now:
            raise ValueError(f"stop time {text!r} has passed (it is now {now:%Y-%m-%d %H:%M}): "
                             "every run would be deferred; give a later one")
        return at.timestamp()
    raise ValueError(f"stop time {text!r} not understood; expected {STOP_BY_FORMS}")


def ends_too_late(stop_by: float | None, estimate_s: float | None,
                  now: float | None = None) -> bool:
    """Whether a task priced ``estimate_s`` seconds (None: unknown) and started ``now``
    would end after ``stop_by`` (None: no stop time, never). A task without a price is too
    late only once the stop time has passed."""
    if stop_by is None:
        return False
    return (time.time() if now is None else now) + (estimate_s or 0.0) > stop_by


EXECUTORS = ("local", "ray")


def tasks_of(cfgs: Sequence[Any], stack: int,
             unstacked: frozenset[tuple[str, int | None]] = frozenset()) -> list[list[Any]]:
    """The tasks of one phase: stacks of tracking configs (but those whose model and
    d_model are in ``unstacked``, :func:`sst_core.sweep.stacking.unstacked_models`), every
    other config alone."""
    from sst_core.experiments.runs import stacks

    tracking = [c for c in cfgs if isinstance(c, TrackingConfig)
                and not trains_alone(c, unstacked)]
    alone = [[c] for c in cfgs if not isinstance(c, TrackingConfig)
             or trains_alone(c, unstacked)]
    return (stacks(tracking, stack) if stack > 1 else [[c] for c in tracking]) + alone


def sweep_device(cfgs: Sequence[Any]) -> str:
    """Where a sweep's runs train, ``"cuda"`` or ``"cpu"``: CUDA when a config asks for it
    (``cuda``, or ``auto`` on a machine where torch sees a GPU)."""
    devices = {str(getattr(c, "device", "cpu")) for c in cfgs}
    if any(d.startswith("cuda") for d in devices):
        return "cuda"
    if "auto" in devices:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return "cpu"


def run_task(cfgs: Sequence[Any], retry_failed: bool = False, threads: int | None = None,
             root: str | None = None, retry_stale: bool = False,
             artifacts: tuple[str, ...] = (), stop_by: float | None = None,
             estimate_s: float | None = None) -> dict[str, str]:
    """Compute the runs of one task that have no record; ``{run_id: outcome}`` with
    outcome ``computed``, ``stored`` (a record existed), ``claimed`` (another worker
    holds it), ``tracker_missing`` (an analysis whose trained tracker has no usable
    record or weights: :class:`~sst_core.analysis.trackers.TrackerMissing`; the sweep
    retrains it) or ``deferred`` (every run of the task: started now, the task, priced
    ``estimate_s`` seconds, would end after ``stop_by``, :func:`ends_too_late`; nothing
    is claimed). Used by every executor (it is what a pool process or a Ray worker
    runs). ``artifacts``: files an ok record needs beside it (``(".pt",)``: retrain a
    tracker whose weights are missing)."""
    if ends_too_late(stop_by, estimate_s):  # judged when the task would start
        return {config_hash(c): "deferred" for c in cfgs}
    if root is not None:
        os.environ["SST_RESULTS_DIR"] = str(root)
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    from sst_core.analysis.trackers import TrackerMissing
    from sst_core.experiments.runs import run, run_stack

    def needed(cfg: Any) -> bool:
        return needs_run(cfg, retry_failed=retry_failed, retry_stale=retry_stale,
                         artifacts=artifacts)

    out: dict[str, str] = {}
    mine: list[Any] = []
    claims: list[Claim] = []
    try:
        for cfg in cfgs:
            rid = config_hash(cfg)
            if not needed(cfg):
                out[rid] = "stored"
                drop_stale_claim(cfg)
                continue
            claim = Claim(cfg)
            if not claim.acquire():
                out[rid] = "claimed"
                continue
            claims.append(claim)
            if claim.taken_over is not None:
                print(f"sst sweep: {takeover_text(rid, claim.taken_over)}", file=sys.stderr,
                      flush=True)
            # a writer killed mid-write leaves its temporary file; the claim says it is gone
            for tmp in claim.path.parent.glob(f".{rid}.*.tmp"):
                tmp.unlink(missing_ok=True)
            if needed(cfg):  # done meanwhile?
                mine.append(cfg)
            else:
                out[rid] = "stored"
        with warnings.catch_warnings():
            # the sweep itself names the unusable records it recomputes
            warnings.simplefilter("ignore", RecordWarning)
            if len(mine) > 1:  # a stack of tracking runs
                run_stack(mine)
                out.update((config_hash(c), "computed") for c in mine)
                mine = []
            for cfg in mine:
                try:
                    run(cfg, retry_failed=retry_failed, retry_stale=retry_stale,
                        artifacts=artifacts)
                except TrackerMissing:
                    out[config_hash(cfg)] = "tracker_missing"
                else:
                    out[config_hash(cfg)] = "computed"
    finally:
        for claim in claims:
            claim.release()
    return out


def _threads_per_worker(workers: int, cpu_count: int | None = None) -> int:
    return max(1, (cpu_count or os.cpu_count() or 1) // workers)


def choose_layout(n_tasks: int, cpu_count: int | None = None, cuda: bool | None = None
                  ) -> tuple[int, int]:
    """``(workers, torch threads per worker)`` for ``n_tasks`` tasks when the sweep is not
    given ``workers`` (the rule and its measurement: module docstring): one worker per
    core with one thread, or, with fewer tasks than cores, one worker per task and the
    cores shared out as threads. With CUDA (``cuda``; None: whether torch sees a GPU) the
    runs go to the GPU: one worker, as before the rule."""
    cores = max(1, cpu_count or os.cpu_count() or 1)
    if cuda is None:
        import torch

        cuda = torch.cuda.is_available()
    workers = 1 if cuda else max(1, min(cores, n_tasks))
    return workers, _threads_per_worker(workers, cores)


def _local(tasks: list[list[Any]], workers: int, retry: tuple[bool, bool], root: str,
           progress: Callable[[dict[str, str]], None], artifacts: tuple[str, ...] = (),
           threads: int | None = None, stop_by: float | None = None,
           estimates: Sequence[float | None] | None = None) -> None:
    threads = _threads_per_worker(workers) if threads is None else threads
    estimates = list(estimates) if estimates is not None else [None] * len(tasks)
    if workers == 1:
        for task, est in zip(tasks, estimates):
            progress(run_task(task, retry[0], threads, root, retry[1], artifacts, stop_by, est))
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # spawn: a forked child of a process that has used torch's thread pool can hang
    with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"),
                             initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
        futures = [pool.submit(run_task, task, retry[0], threads, root, retry[1], artifacts,
                               stop_by, est)
                   for task, est in zip(tasks, estimates)]
        for fut in as_completed(futures):
            progress(fut.result())


def die_with_parent(parent: int, poll_s: float = 1.0) -> None:
    """In a pool worker: exit as soon as the sweep process ``parent`` is gone (killed,
    SIGKILL included), instead of computing on with settings nobody reads; the worker's
    claims go stale and the next sweep takes its runs over."""
    import threading

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="die-with-parent").start()


def _ray(tasks: list[list[Any]], workers: int, retry: tuple[bool, bool], root: str,
         progress: Callable[[dict[str, str]], None], address: str | None,
         artifacts: tuple[str, ...] = (), threads: int | None = None,
         stop_by: float | None = None,
         estimates: Sequence[float | None] | None = None) -> None:
    """Run ``tasks`` on Ray, at most ``workers`` at a time.

    Each task asks Ray for one CPU (a local instance is started with ``workers`` CPUs, so
    exactly ``workers`` tasks fit; a cluster joined with ``address`` has its own) and uses
    its share of this machine's cores as torch threads (one on a cluster, whose nodes'
    cores are Ray's to share), and for one GPU as well when its configs run on CUDA
    (:func:`task_resources`), so that Ray gives each such task a GPU of its own and the
    others none (Ray hides the GPUs from a task that asked for none). Tasks are submitted
    ``workers`` at a time, so ``--workers`` bounds the concurrency on a cluster too and
    any ``--workers`` >= 1 runs.
    """
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
        cpus = ray.cluster_resources().get("CPU", 0)
        if cpus < 1:
            raise ValueError(f"the Ray cluster at {address or 'this machine'} offers {cpus} CPUs; "
                             "each sweep task needs 1")
        if address:
            threads = 1
        elif threads is None:
            threads = _threads_per_worker(workers)
        gpus = ray.cluster_resources().get("GPU", 0)
        remote = ray.remote(run_task)
        waiting = list(zip(tasks, estimates if estimates is not None else [None] * len(tasks)))
        pending: list[Any] = []
        while waiting or pending:
            while waiting and len(pending) < workers:
                task, est = waiting.pop(0)
                asks = task_resources(task, gpus)
                if asks["num_gpus"] > gpus:
                    raise ValueError(
                        f"a task of {len(task)} run(s) ({task[0].experiment}, device "
                        f"{task[0].device!r}) needs a GPU, but the Ray cluster at "
                        f"{address or 'this machine'} offers none; run it with device 'cpu' "
                        "or 'auto', or on a cluster with GPUs")
                pending.append(remote.options(**asks).remote(
                    task, retry[0], 1 if asks["num_gpus"] else threads, root, retry[1],
                    artifacts, stop_by, est))
            done, pending = ray.wait(pending, num_returns=1)
            progress(ray.get(done[0]))
    finally:
        if started:
            ray.shutdown()


def task_resources(task: Sequence[Any], cluster_gpus: float) -> dict[str, float]:
    """What a Ray task asks for: one CPU, and one GPU when its configs run on CUDA: a
    ``device`` of ``cuda`` (or ``cuda:N``), or ``auto`` on a cluster that has GPUs (where
    ``auto`` would take one anyway; a CPU-only cluster runs it on the CPU). A ``cpu``
    config never asks for a GPU. One thread then drives the GPU (the caller's)."""
    devices = {str(getattr(c, "device", "cpu")) for c in task}
    cuda = any(d.startswith("cuda") or (d == "auto" and cluster_gpus >= 1) for d in devices)
    return {"num_cpus": 1, "num_gpus": 1 if cuda else 0}


@dataclass
class SweepResult:
    experiment: str
    profile: str
    outcomes: dict[str, str] = field(default_factory=dict)  # run_id -> outcome
    problems: list[str] = field(default_factory=list)  # unusable files, each named

    def count(self, outcome: str) -> int:
        return sum(v == outcome for v in self.outcomes.values())

    def summary(self) -> str:
        text = (f"{self.experiment} ({self.profile}): {len(self.outcomes)} runs: "
                f"{self.count('computed')} computed, {self.count('stored')} already stored, "
                f"{self.count('claimed')} claimed by another worker")
        if self.problems:
            text += f"; {len(self.problems)} unusable file(s) replaced (named above)"
        if self.count("deferred"):
            text += (f"; {self.count('deferred')} deferred: they would not have finished "
                     "by the stop time")
        if self.count("tracker_missing"):
            text += (f"; {self.count('tracker_missing')} analyses not computed: their "
                     "tracker could not be trained or loaded")
        return text


def plan(experiment: str, profile: str, retry_failed: bool = False,
         retry_stale: bool = False) -> tuple[int, int]:
    """``(runs, to compute)`` of a sweep under ``profile``, for what it prints first."""
    P = get_profile(profile)
    cfgs = list(dict.fromkeys(c for cfgs in phases(experiment, P) for c in cfgs))
    return len(cfgs), sum(needs_run(c, retry_failed=retry_failed, retry_stale=retry_stale)
                          for c in cfgs)


def grid_rounds(experiment: str, P,
                split: Callable[[list[Any]], list[list[Any]]] | None = None,
                round_tasks: int = 2) -> Iterator[list[Any]]:
    """The phases of ``experiment`` under ``P`` (:func:`~sst_core.experiments.registry.phases`),
    then, as long as its grid has grown, the phases of the configs it did not hold before:
    a grid can depend on stored records (Figure 4's sweep grows in the cells whose runs
    learn, :func:`sst_core.experiments.paper1.figure4_growth_runs`), so it is read again
    once the consumer has computed what was yielded. Each config once (by run id).

    With ``split`` (configs -> the tasks they are computed as, :func:`tasks_of`), the
    trackers that an analysis reads come in rounds of ``round_tasks`` tasks, each followed
    at once by the analyses of its trackers; the configs no analysis reads come first, in
    one round. A tracker's weights then wait for its analyses for one round, not for the
    whole first phase: an analysis needs them, they are not committed (the results budget,
    DEVELOPING.md), and a sweep that ends with a session on a machine whose disk is not
    kept (a fresh checkout) loses them, so its next sweep trains the tracker again.
    Without ``split``: the phases as they are."""
    seen: set[str] = set()
    while True:
        rounds = [[c for c in cfgs if config_hash(c) not in seen]
                  for cfgs in phases(experiment, P)]
        rounds = [cfgs for cfgs in rounds if cfgs]
        if not rounds:
            return
        if split is not None:
            rounds = tracker_rounds(rounds, split, round_tasks)
        for cfgs in rounds:
            seen.update(config_hash(c) for c in cfgs)
            yield cfgs


def tracker_rounds(rounds: list[list[Any]], split: Callable[[list[Any]], list[list[Any]]],
                   round_tasks: int) -> list[list[Any]]:
    """``rounds`` (phases: trackers, then analyses, which have a ``run``) reordered as
    :func:`grid_rounds` says: what no analysis reads, then ``round_tasks`` tasks of the
    trackers analyses read (``split`` makes the tasks) with those analyses after each,
    then the analyses whose trackers are not in ``rounds`` (computed earlier)."""
    if not isinstance(round_tasks, int) or isinstance(round_tasks, bool) or round_tasks < 1:
        raise ValueError(f"round_tasks must be a positive int, got {round_tasks!r}")
    cfgs = [c for r in rounds for c in r]
    analyses = [c for c in cfgs if hasattr(c, "run")]
    if not analyses:
        return rounds
    read = {config_hash(c.run) for c in analyses}
    plain = [c for c in cfgs if not hasattr(c, "run")]
    out = [[c for c in plain if config_hash(c) not in read]]
    tasks = split([c for c in plain if config_hash(c) in read])
    left = list(analyses)
    for i in range(0, len(tasks), round_tasks):
        trackers = [c for task in tasks[i:i + round_tasks] for c in task]
        ids = {config_hash(c) for c in trackers}
        out += [trackers, [c for c in left if config_hash(c.run) in ids]]
        left = [c for c in left if config_hash(c.run) not in ids]
    out.append(left)
    return [r for r in out if r]


def sweep(experiment: str, profile: str, workers: int | None = 1, executor: str = "local",
          address: str | None = None, retry_failed: bool = False, retry_stale: bool = False,
          stack: int | None = None, threads: int | None = None, wait: bool = True,
          root: Path | None = None, progress: Callable[[dict[str, str]], None] | None = None,
          report: Callable[[str], None] | None = None, stop_by: float | None = None,
          price: Callable[[Any], float | None] | None = None) -> SweepResult:
    """Compute every missing run of ``experiment`` under ``profile``; see the module doc.
    ``workers``: processes (local) or concurrent tasks (ray); None (``sst sweep``'s
    default, ``--workers auto``): :func:`choose_layout` for each batch of tasks; 1 (this
    function's default): every task in this process. ``threads``: torch threads per
    worker (None: the layout's, or ``cpu_count // workers``). ``wait``: wait for the runs
    another sweep holds (the module docstring); False: leave them to it (their outcome
    stays ``claimed``) and skip the experiment's phases after the first that has such runs.
    ``stop_by`` (seconds since the epoch, :func:`parse_stop_by`): start no task that would
    end after it, by ``price`` (a config -> its expected seconds, or None when unknown);
    such tasks are ``deferred`` (the module docstring). ``retry_stale``: recompute the runs
    an earlier version of their code made too, after those of each phase that have no
    record at all (a missing run keeps its chapter off the profile; a stale one is shown).

    A record file that cannot be used (truncated, not JSON, a field missing or of the
    wrong type: :func:`sst_core.store.records.load_record`) is named through ``report``
    (default: a :class:`~sst_core.store.records.RecordWarning`) and computed again. An
    analysis whose tracker's weights are missing or unreadable (``TrackerMissing``) is
    named too: the unusable weights are moved aside (``<run-id>.pt.unusable``), the
    training record is kept (:func:`sst_core.store.replaced.keep_replaced`), that training
    run is trained again and the analysis computed; the other runs go on.
    """
    P = get_profile(profile)
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; allowed: {', '.join(EXECUTORS)}")
    for name, n in (("workers", workers), ("threads", threads)):
        if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 1):
            raise ValueError(f"{name} must be a positive int or None (auto), got {n!r}")
    if executor == "local" and address is not None:
        raise ValueError(f"address={address!r} is for the ray executor (a cluster to join); "
                         "the local executor runs on this machine: drop the address or use "
                         "executor 'ray'")
    cap = MAX_WORKERS_PER_CORE * (os.cpu_count() or 1)
    if executor == "local" and workers is not None and workers > cap:
        raise ValueError(f"workers={workers} is above {cap} ({MAX_WORKERS_PER_CORE} per core of "
                         f"the {os.cpu_count() or 1} here; each worker is a process); pass at "
                         "most that, or raise sst_core.sweep.runner.MAX_WORKERS_PER_CORE")
    root_s = str(Path(root) if root else results_dir())
    os.environ["SST_RESULTS_DIR"] = root_s  # the parent reads records from there too
    result = SweepResult(experiment, profile)
    say = report or (lambda msg: warnings.warn(msg, RecordWarning, stacklevel=3))
    retry = (retry_failed, retry_stale)

    def note(outcomes: dict[str, str]) -> None:
        result.outcomes.update(outcomes)
        if progress:
            progress(outcomes)

    def compute(cfgs: list[Any], artifacts: tuple[str, ...] = ()) -> None:
        for c in cfgs:
            problem = record_problem(c)
            if problem is not None:
                result.problems.append(problem)
                say(f"{problem}; computing it again")
        todo = [c for c in cfgs if needs_run(c, retry_failed=retry_failed,
                                             retry_stale=retry_stale, artifacts=artifacts)]
        stored = [c for c in cfgs if c not in todo]
        if retry_stale:  # runs without a record first: they keep a chapter off its profile
            todo.sort(key=lambda c: not needs_run(c, retry_failed=retry_failed,
                                                  artifacts=artifacts))
        for c in stored:
            result.outcomes[config_hash(c)] = "stored"
            drop_stale_claim(c)  # a killed stack's worker leaves claims on stored runs
        try:
            compute_missing(todo, artifacts)
        finally:
            # a worker killed just before this sweep started may not have exited yet, so
            # its claims on stored runs looked live above: by now it has
            for c in stored:
                drop_stale_claim(c)

    def task_price(task: list[Any]) -> float | None:
        prices = [price(c) for c in task] if price is not None else [None]
        return None if any(p is None for p in prices) else float(sum(prices))

    def split(cfgs: list[Any]) -> list[list[Any]]:
        """The tasks ``cfgs`` are computed as: by default each model stacks only where a
        benchmark measured it faster (sst_core.sweep.stacking); an explicit stack size
        stacks every model."""
        unstacked = (unstacked_models(sweep_device(cfgs), Path(root_s)) if stack is None
                     else frozenset())
        return tasks_of(cfgs, P.track_stack if stack is None else stack, unstacked)

    def compute_missing(todo: list[Any], artifacts: tuple[str, ...]) -> None:
        while todo:
            tasks = split(todo)
            w, t = (choose_layout(len(tasks)) if workers is None
                    else (workers, _threads_per_worker(workers)))
            t = t if threads is None else threads
            ests = [task_price(task) for task in tasks] if stop_by is not None else None
            if executor == "local":
                _local(tasks, w, retry, root_s, note, artifacts, t, stop_by, ests)
            else:
                _ray(tasks, w, retry, root_s, note, address, artifacts, t, stop_by, ests)
            # runs another worker held: wait until it finishes them (their records appear)
            # or its claim goes stale, then take over what is still missing
            todo = [c for c in todo if result.outcomes.get(config_hash(c)) == "claimed"]
            if not wait:
                return
            while todo and any(claim_path(c).exists() and not is_stale(claim_path(c))
                               for c in todo) and not ends_too_late(stop_by, 0.0):
                time.sleep(POLL_S)
            todo = [c for c in todo if needs_run(c, retry_failed=retry_failed,
                                                 retry_stale=retry_stale, artifacts=artifacts)]

    def deferred(cfgs: list[Any]) -> list[Any]:
        return [c for c in cfgs if result.outcomes.get(config_hash(c)) == "deferred"]

    per_round = 2 * (workers or os.cpu_count() or 1)  # two tasks per worker
    for cfgs in grid_rounds(experiment, P, split, per_round):
        compute(cfgs)
        # without waiting: runs left to another sweep, which the later phases may need
        # (waiting, a run another sweep finished keeps its outcome "claimed" too)
        held = [] if wait else [c for c in cfgs
                                if result.outcomes.get(config_hash(c)) == "claimed"]
        if held:
            say(f"{len(held)} runs of {experiment} are held by another sweep: left to it, "
                "with the experiment's later phases")
            break
        if deferred(cfgs):
            say(f"{len(deferred(cfgs))} runs of {experiment} would not finish by the stop "
                "time: left for a later sweep, with the experiment's later phases")
            break
        lost = [c for c in cfgs if result.outcomes.get(config_hash(c)) == "tracker_missing"]
        if not lost:
            continue
        trackers = list(dict.fromkeys(c.run for c in lost))
        for t in trackers:
            keep_replaced(t)  # its record is about to be replaced: kept, not lost
            weights = artifact_path(t, ".pt")
            what = (f"training run {config_hash(t)} ({t.model} on {t.group}, profile "
                    f"{t.profile})")
            if weights.exists():
                aside = weights.with_name(weights.name + ".unusable")
                os.replace(weights, aside)
                msg = (f"{what}: weights file {weights} could not be loaded (moved to "
                       f"{aside.name}); training it again")
            else:
                msg = f"{what}: weights file {weights} is missing; training it again"
            result.problems.append(msg)
            say(msg)
        compute(trackers, artifacts=(".pt",))
        late = {config_hash(t) for t in deferred(trackers)}
        if late:  # their analyses wait for a later sweep, with them
            result.outcomes.update((config_hash(c), "deferred") for c in lost
                                   if config_hash(c.run) in late)
            lost = [c for c in lost if config_hash(c.run) not in late]
            say(f"{len(late)} training runs of {experiment} would not finish by the stop "
                "time: left for a later sweep, with their analyses and the experiment's "
                "later phases")
        compute(lost)  # once: a tracker that still cannot be loaded stays tracker_missing
        for c in lost:
            if result.outcomes.get(config_hash(c)) == "tracker_missing":
                say(f"analysis {config_hash(c)} ({c.experiment}) not computed: its "
                    f"training run {config_hash(c.run)} still cannot be loaded")
        if late or deferred(lost):
            break
    return result


def time_local(cfgs: Sequence[Any], workers: int, threads: int | None = None,
               root: Path | None = None, stack: int = 1,
               unstacked: frozenset[tuple[str, int | None]] = frozenset()) -> float:
    """Wall seconds the local executor takes to compute ``cfgs`` as the tasks
    :func:`tasks_of` makes of them (``stack`` 1: each its own task; else stacks of that
    size but for the models in ``unstacked``), with ``workers`` processes of ``threads``
    torch threads (default: the sweep's choice), into ``root`` (default: a fresh temporary
    results folder, removed after). The calling process's torch thread count is
    restored."""
    import shutil
    import tempfile

    import torch

    before_threads = torch.get_num_threads()
    tmp = None if root is not None else tempfile.mkdtemp(prefix="sst-sweep-time-")
    where = str(root if root is not None else tmp)
    try:
        with results_dir_at(where):  # (the local executor points it there itself)
            start = time.perf_counter()
            _local(tasks_of(cfgs, stack, unstacked), workers, (False, False), where,
                   lambda _: None, threads=threads)
            return time.perf_counter() - start
    finally:
        torch.set_num_threads(before_threads)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
