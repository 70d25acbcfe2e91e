"""Computing and reading the book's runs: every record comes through :func:`run`.

:func:`run` returns the stored record of a config, or computes it with its experiment's
run function (:mod:`sst_core.experiments.registry`) and stores it with its provenance
and its experiment's version (:func:`sst_core.store.records.cached_run`). :func:`run_all` and
:func:`run_analyses` do that for a chapter's grid, training tracking runs that differ
only in seed and learning rate as one stack (:mod:`sst_core.training.stacked`).
Notebooks call these and never compute book numbers themselves.
"""
from __future__ import annotations

from typing import Any

from sst_core.experiments import progress
from sst_core.experiments.registry import get_experiment, resolve, runner, version
from sst_core.spec.configs import TrackingConfig
from sst_core.store.records import cached_run
from sst_core.store.records import needs_run as stored_needs_run


def run(cfg: Any, **kw: Any) -> dict[str, Any]:
    """The stored record of ``cfg``, computing it with its experiment's run function if
    needed (keywords: ``retry_failed``, ``retry_stale``, ``root``, ``artifacts``)."""
    return cached_run(cfg, runner(cfg.experiment), version=version(cfg.experiment),
                      startup=startup_of(cfg.experiment), **kw)


_started: set[str] = set()  # the start-up functions this process has run


def startup_of(experiment: str):
    """The one-time start-up of ``experiment``'s runs in this process (its registry
    entry's ``startup``), or None; it runs once per process, later calls are no-ops."""
    target = get_experiment(experiment).startup
    if target is None:
        return None

    def once() -> None:
        if target not in _started:
            resolve(target)()
            _started.add(target)
    return once


def torch_startup() -> None:
    """What the first torch training or analysis of a process pays once: importing torch
    and the training code, the optimizer's first construction (it imports
    ``torch._dynamo``, over a second) and building the C scans (:mod:`sst_core.ops.native`,
    :mod:`sst_core.ops.native_selective`)."""
    import torch

    import sst_core.training.tracking  # noqa: F401  (torch, the models)
    from sst_core.ops import native, native_selective

    torch.optim.AdamW([torch.zeros(1, requires_grad=True)], lr=1e-3)
    native.library()
    native_selective.library()


def needs_run(cfg: Any, *, retry_failed: bool = False, retry_stale: bool = False,
              root=None, artifacts: tuple[str, ...] = ()) -> bool:
    """Whether :func:`run` would compute ``cfg`` (no usable stored record; with
    ``artifacts``, e.g. ``(".pt",)``, also an ok record whose such file is missing)."""
    return stored_needs_run(cfg, retry_failed=retry_failed, root=root,
                            version=version(cfg.experiment) if retry_stale else None,
                            artifacts=artifacts)


def train_tracking(cfg: TrackingConfig) -> dict[str, Any]:
    """Group-tracking training (imports torch only when a run is actually computed).

    The trained weights go beside the record (``<run-id>.pt``) for the diagnostics.
    """
    from sst_core.store.records import artifact_path
    from sst_core.training.tracking import train_tracking as run_training

    return run_training(cfg, weights_to=artifact_path(cfg, ".pt"))


def train_lra(cfg: Any) -> dict[str, Any]:
    """An S4D classifier on an LRA task (imports torch only when a run is actually computed).

    Its state after every epoch goes beside the record (``<run-id>.resume.pt``, removed when
    the run ends), keyed by the run id and the version of its experiment: a sweep killed
    mid-run resumes it from its last finished epoch with the same version, never another.
    """
    from sst_core.spec.configs import config_hash
    from sst_core.store.records import artifact_path
    from sst_core.training.lra import train_lra as run_training

    key = f"{config_hash(cfg)}:v{version(cfg.experiment)}"
    return run_training(cfg, checkpoint_to=artifact_path(cfg, RESUME_SUFFIX), checkpoint_key=key)


RESUME_SUFFIX = ".resume.pt"  # a long run's saved state beside its record


def share_until_saved(cfg: Any) -> float:
    """The share of a run's compute done before its work is safe from a kill: an LRA run
    saves its state after every epoch (:func:`train_lra`: ``1 / epochs``), every other run
    only its record at the end (1). What ``sst sweep --stop-by`` prices a run by."""
    from sst_core.spec.configs import LRAConfig

    return 1.0 / max(1, cfg.epochs) if isinstance(cfg, LRAConfig) else 1.0


def run_all(cfgs, desc: str = "runs", stack: int = 1, **kw: Any) -> list[dict[str, Any]]:
    """Records of every config, computing the missing ones in order, with progress.

    Resumable: a sweep killed mid-way loses only the runs in flight; rerunning it reads
    the stored records and computes the rest. ``stack`` > 1: missing tracking runs that
    differ only in seed and learning rate are trained ``stack`` at a time as one stacked
    computation (:mod:`sst_core.training.stacked`); each still gets its own record.
    """
    import os

    from tqdm.auto import tqdm

    cfgs = list(cfgs)
    if stack > 1:
        _run_stacked(cfgs, stack, desc, retry_failed=kw.get("retry_failed", False))
    records = []
    # SST_PROGRESS=0 (set by `sst notebooks run` for its papermill kernels) keeps progress
    # bars out of the executed notebooks, hence out of the book.
    bar = tqdm(cfgs, desc=desc, unit="run", leave=False,
               disable=os.environ.get("SST_PROGRESS") == "0")
    for i, cfg in enumerate(bar):
        current = f"{getattr(cfg, 'model', '')} {getattr(cfg, 'group', '')}".strip()
        bar.set_postfix_str(current)
        progress.report(desc, i, len(cfgs), current)
        records.append(run(cfg, **kw))
    progress.report(desc, len(cfgs), len(cfgs))
    return records


def run_analyses(cfgs, desc: str, stack: int = 1) -> list[dict[str, Any]]:
    """Records of analysis configs that each read a trained tracker (``cfg.run``): the
    trackers first (``stack`` at a time, see :func:`run_all`), then the analyses (a failed
    one is a record with its reason: the chapter's provenance block lists it)."""
    cfgs = list(cfgs)
    run_all(list(dict.fromkeys(c.run for c in cfgs)), desc="training", stack=stack)
    return run_all(cfgs, desc=desc)


def stacks(cfgs, size: int) -> list[list]:
    """The tracking configs grouped into stacks of at most ``size`` that can train as one
    (equal :func:`sst_core.training.stacked.stack_key`), in order of first appearance."""
    from sst_core.training.stacked import stack_key

    groups: dict[Any, list] = {}
    for cfg in cfgs:
        groups.setdefault(stack_key(cfg), []).append(cfg)
    return [g[i:i + size] for g in groups.values() for i in range(0, len(g), size)]


def _run_stacked(cfgs, size: int, desc: str, retry_failed: bool = False) -> None:
    """Train the missing tracking runs among ``cfgs`` in stacks and store their records."""
    import os

    from tqdm.auto import tqdm

    todo = [c for c in dict.fromkeys(cfgs) if isinstance(c, TrackingConfig)
            and needs_run(c, retry_failed=retry_failed)]
    groups = [g for g in stacks(todo, size) if len(g) > 1]  # singles go through run()
    bar = tqdm(groups, desc=f"{desc} (stacked)", unit="stack", leave=False,
               disable=os.environ.get("SST_PROGRESS") == "0")
    done = 0
    for group in bar:
        current = f"{group[0].model} {group[0].group} x{len(group)}"
        bar.set_postfix_str(current)
        progress.report(f"{desc} (stacked)", done, len(todo), current)
        run_stack(group)
        done += len(group)


def run_stack(group) -> list[dict[str, Any]]:
    """Train the tracking configs ``group`` as one stack and store one record each (the
    record's ``stack`` says with which runs, and that its wall and CPU times are the
    stack's)."""
    import time

    from sst_core.spec.configs import config_hash
    from sst_core.store.records import artifact_path, check_writable, record_path, store_record
    from sst_core.training.stacked import train_tracking_stacked

    for cfg in group:  # before training: a folder where a record belongs, a read-only store
        check_writable(record_path(cfg))
    startup = startup_of(group[0].experiment)
    start = time.perf_counter()
    if startup is not None:
        startup()
    startup_s = round(time.perf_counter() - start, 4)
    start, cpu_start = time.perf_counter(), time.process_time()
    outcomes = train_tracking_stacked(group, [artifact_path(c, ".pt") for c in group])
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    info = {"stack": {"size": len(group), "run_ids": [config_hash(c) for c in group],
                      "wall_time": "wall_time_s is the whole stack's",
                      "cpu_time": "cpu_time_s is the whole stack's"},
            "startup_s": startup_s}
    records = []
    made_by = version(group[0].experiment)
    for cfg, out in zip(group, outcomes):
        if isinstance(out, Exception):
            records.append(store_record(cfg, "failed", f"{type(out).__name__}: {out}",
                                        getattr(out, "metrics", {}) or {}, wall,
                                        traceback_tail=[f"{type(out).__name__}: {out}"],
                                        extra=info, version=made_by, cpu=cpu))
        else:
            records.append(store_record(cfg, "ok", None, out, wall, extra=info,
                                        version=made_by, cpu=cpu))
    return records
