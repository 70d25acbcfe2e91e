"""``sst status``: per sweep, the runs done, failed, missing, unreadable, claimed and
stale, and the compute the stored ones took. Records are read by the one validating
reader (:func:`sst_core.store.records.load_record`): a file it rejects is counted as
unreadable and its problem kept (``Status.problems``, printed on stderr by ``sst status``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from sst_core.experiments.registry import SWEEPS, is_stale_record, phases, sweep_configs
from sst_core.spec.configs import LRA_TASKS, config_hash
from sst_core.spec.profiles import get_profile
from sst_core.store.records import (
    RecordError,
    artifact_path,
    load_record,
    record_path,
    results_dir,
    run_compute_s,
)
from sst_core.store.replaced import REPLACED, replaced_files
from sst_core.sweep.claims import LOCK_NAME, claim_path, is_stale


@dataclass
class Status:
    experiment: str
    total: int = 0
    done: int = 0
    failed: int = 0
    missing: int = 0
    unreadable: int = 0  # record files the reader rejects (the sweep computes them again)
    claimed: int = 0
    stale: int = 0  # records made by an older version of their experiment
    compute_s: float = 0.0  # wall time of the stored runs (a stack's shared by its runs)
    problems: list[str] = field(default_factory=list)  # each unreadable file and why


def status(profile: str, experiments: Sequence[str] | None = None,
           root: Path | None = None) -> list[Status]:
    """Per sweep: runs done, failed, missing, unreadable, claimed now, stale, and the
    compute taken."""
    P = get_profile(profile)
    out = []
    for name in experiments or SWEEPS:
        st = Status(name)
        for cfg in sweep_configs(name, P):
            st.total += 1
            path = record_path(cfg, root)
            try:
                record = load_record(path) if path.exists() else None
            except RecordError as err:
                st.unreadable += 1
                st.problems.append(str(err))
                record = None
            else:
                st.missing += record is None
            if record is None:
                cp = claim_path(cfg, root)
                st.claimed += cp.exists() and not is_stale(cp)
                continue
            st.done += record["status"] == "ok"
            st.failed += record["status"] == "failed"
            st.compute_s += run_compute_s(record)
            st.stale += is_stale_record(record)
        out.append(st)
    return out


def status_markdown(rows: list[Status], profile: str) -> str:
    lines = [f"sst status, profile {profile}", "",
             "| experiment | runs | done | failed | missing | unreadable | running | "
             "stale | compute (h) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in rows:
        lines.append(f"| {s.experiment} | {s.total} | {s.done} | {s.failed} | {s.missing} | "
                     f"{s.unreadable} | {s.claimed} | {s.stale} | "
                     f"{s.compute_s / 3600:.2f} |")
    lines += ["", "stale: records made by an older version of their experiment (its `version` "
              "in sst_core.experiments.registry); `sst sweep ... --retry-stale` computes them "
              "again. unreadable: "
              "record files that are truncated, not JSON, or miss a field or have it of the "
              "wrong type (each is named on stderr); `sst sweep` computes them again."]
    return "\n".join(lines)


def committed_files(profile: str, root: Path | None = None) -> list[Path]:
    """The files of ``profile``'s stored runs that belong in the repository: every record
    (``.json``) and the records it replaced (:mod:`sst_core.store.replaced`), and the
    weights (``.pt``) of the trained trackers that an analysis of a sweep reads (the
    diagnostics, label-free and spectra runs) and that track at their training length
    (:func:`weights_worth_committing`), or that an analysis not yet stored will read (a
    sweep stopped with its session between training a tracker and analysing it: without
    the weights the next session would train it again). The other trackers' weights stay
    local, so that the committed results stay small (``results/standard`` under 100 MB):
    their analyses' records are committed, and an analysis that has to be computed again
    without the weights trains its tracker again (:func:`sst_core.sweep.runner.sweep`).
    Weights committed for a pending analysis stay in the repository once it is stored
    (they are small: about 60 kB per tracker at ``standard``, 90 kB at d_model 128).

    A staged sweep (:func:`sst_core.experiments.registry.staged_sweeps`: many sessions of
    compute that no chapter reads yet) commits its records but no weights: its analyses run
    where its trackers were trained, and its weights would take the committed results past
    their budget before any chapter reads them."""
    from sst_core.experiments.registry import staged_sweeps

    P = get_profile(profile)
    files: dict[Path, None] = {}
    worth: dict[Path, bool] = {}  # per weights file: a tracker several analyses read, judged once
    staged = set(staged_sweeps())
    for name in SWEEPS:
        for cfgs in phases(name, P):
            for cfg in cfgs:
                path = record_path(cfg, root)
                stored = path.exists()
                if stored:
                    files[path] = None
                    files.update(dict.fromkeys(replaced_files(cfg, root)))
                run = getattr(cfg, "run", None)
                if run is None or name in staged:
                    continue
                weights = artifact_path(run, ".pt", root)
                if weights not in worth:
                    worth[weights] = weights_worth_committing(run, root)
                if worth[weights] or (not stored and weights.exists()):
                    files[weights] = None
    return sorted(files)


def weights_worth_committing(run, root: Path | None = None) -> bool:
    """Whether the weights of the trained tracker ``run`` (a ``TrackingConfig``) are
    committed: they exist and its record is ``ok`` with an ``m_p`` (it passes at its
    training length, the first condition of Figure 4's rule). The weights of a tracker
    that never learnt the task are most of the committed bytes an analysis could reread
    (at ``standard`` about 45% of them) and the least likely to be analysed again."""
    if not artifact_path(run, ".pt", root).exists():
        return False
    try:
        record = load_record(record_path(run, root))
    except RecordError:
        return False
    return record["status"] == "ok" and record["metrics"].get("m_p") is not None


# where the LRA runs keep their generated tasks (sst_core.training.lra_data writes
# <results>/<profile>/lra_data/<task>-<16 hex digits of its settings>.npz, atomically)
LRA_CACHE_DIR = "lra_data"


def is_lra_cache_file(name: str) -> bool:
    """Whether a file name in :data:`LRA_CACHE_DIR` is a generated LRA task
    (``<task>-<16 hex digits>.npz``) or its writer's temporary file
    (``.<task>-<digits>.<...>.tmp``)."""
    if name.startswith(".") and name.endswith(".tmp"):
        stem = name[1:].split(".")[0]
    elif name.endswith(".npz") and name.count(".") == 1:
        stem = name[:-len(".npz")]
    else:
        return False
    task, _, digest = stem.rpartition("-")
    return (task in LRA_TASKS and len(digest) == 16
            and all(c in "0123456789abcdef" for c in digest))


def foreign_files(profile: str, root: Path | None = None) -> list[Path]:
    """Files in ``profile``'s results folder that belong to no run of any sweep's grid
    (``sst status`` lists them): a record whose name is no run of a grid (copied there,
    or left by an older grid), an unreadable file that no sweep would ever read, anything
    else put there. A run's files are its record ``<run-id>.json``, what it keeps beside
    it (``<run-id>.<suffix>``: weights, saved states, a claim while it runs, a writer's
    temporary file ``.<run-id>.<...>.tmp``) and its replaced records
    (``replaced/<run-id>.<created>.json``), all in its experiment's folder; the generated
    LRA tasks the runs read are kept in ``lra_data/`` (:func:`is_lra_cache_file`)."""
    P = get_profile(profile)
    folder = (root if root is not None else results_dir()) / profile
    if not folder.is_dir():
        return []
    known: set[tuple[str, str]] = set()  # (experiment, run id)
    for name in SWEEPS:
        for cfg in sweep_configs(name, P):
            known.add((cfg.experiment, config_hash(cfg)))
    out = []
    for path in sorted(folder.rglob("*")):
        if path.is_dir() and not path.is_symlink():
            continue
        rel = path.relative_to(folder).parts
        experiment = rel[0] if len(rel) > 1 else None
        inside = rel[1:-1]
        run_id = path.name.lstrip(".").split(".")[0]
        if (experiment is not None and inside in ((), (REPLACED,))
                and (experiment, run_id) in known):
            continue
        if path.name == LOCK_NAME:  # a claim being removed at this moment
            continue
        if rel[:-1] == (LRA_CACHE_DIR,) and is_lra_cache_file(path.name):
            continue  # a generated LRA task, which the LRA runs of this profile read
        out.append(path)
    return out
