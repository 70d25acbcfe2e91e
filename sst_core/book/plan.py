"""``sst book --plan``: what building the book would compute, without computing it.

Per chapter of ``_toc.yml``: the profile it would run at (for ``best``, the profile
:func:`sst_core.book.params.best_profile` picks, and why), the runs it reads under that
profile that are stored, missing and stale (made by an older version of their experiment,
:func:`sst_core.experiments.registry.is_stale_record`), an estimate of the compute the
missing ones need, and the compute the stale ones took (what ``sst sweep --retry-stale``
spends on them again). A missing run is estimated by the mean compute (a stacked run's share
of its stack) of the stored runs most like it (:func:`cost_key`): the same experiment,
model, task or group and width (``d_model``); for a training run, else the same model at
that width on another task or group; else the same model, task or group at another width
(rough: widths differ in cost); for an analysis, else the same experiment and group of other
models (a rough figure, scaled by step times as below), else the analyses of other
experiments on that group (the same model's, else other models' scaled): what an analysis
costs depends on the group it rolls out, 60 classes of A5 against 6 of S3, more than on
the model or the analysis; else the same experiment and model (a rough figure where its
runs are of another width); else the same experiment
(other models: a rough figure, each stored run's compute scaled by the ratio of the two
models' step times in the newest benchmark record, :func:`step_times`, where it has both:
a training step at length 60 for a training run, an evaluation at length 1000 for an
analysis); for an analysis of an experiment with no stored run, the stored analyses of
the same model in other experiments (another rough figure; else theirs of other models,
scaled as above); else the same, from the profile's *timings* (:func:`save_timings`: the
compute of every run of the profile measured once and committed under
``results/timings/<profile>.json``, for a profile whose records are not, such as ``smoke``);
a run with none of these has no estimate and is counted apart. A sweep often
mixes experiments (a diagnostics sweep trains the trackers it then diagnoses), so one mean
per sweep would price a diagnosis like a training run. Each mean is of compute per unit of
:func:`work` (the examples an LRA run sees; 1 for other runs), times the missing run's. The stored
runs of every chapter being planned are pooled. Reads record files only; never trains and
never imports torch.
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from dataclasses import dataclass, field, is_dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from sst_core.book import params as book_params
from sst_core.experiments.registry import chapter_sweeps, is_stale_record, sweep_configs
from sst_core.reports import Table, duration_text
from sst_core.spec.configs import config_dict, config_hash
from sst_core.spec.profiles import get_profile
from sst_core.store.records import (
    RecordError,
    artifact_path,
    load_record,
    record_path,
    results_dir,
    compute_clock,
    run_compute_s,
    write_bytes_atomic,
)

TIMINGS_SCHEMA = 1


@dataclass
class ChapterPlan:
    notebook: str
    profile: str
    why: str  # why this profile (``best``'s reason, or "asked for")
    total: int = 0
    stored: int = 0
    missing: int = 0
    stale: int = 0
    estimate_s: float | None = 0.0  # compute of the missing runs; None: no stored run to time
    unestimated: int = 0  # missing runs with no stored run of their experiment to time
    rough: int = 0  # missing runs priced from other models' (or experiments') runs
    timed: int = 0  # missing runs priced from the profile's committed timings
    timings_made: str | None = None  # when those timings were measured (UTC date)
    # run id -> the estimate of each missing run (None: none), so that totals over several
    # chapters count a run they share once
    priced: dict[str, float | None] = field(default_factory=dict, repr=False)
    sweeps: list[str] = field(default_factory=list)
    compute_s: float = 0.0  # compute of the stored runs (a stack's shared by its runs)
    cpu_clocked: int = 0  # stored runs whose compute is their CPU time (the rest: wall time)
    # run id -> the stored compute of each stale run (recomputed by --retry-stale)
    stale_s: dict[str, float] = field(default_factory=dict, repr=False)
    made_first: str | None = None  # created_utc of the oldest stored record
    made_last: str | None = None  # and of the newest
    under_way: tuple[str, int, int] | None = None  # a larger profile's sweep begun:
    # (profile, stored, total), :func:`sst_core.book.params.under_way`
    # a larger profile whose records cover the chapter (profile, runs), where the plan is for
    # a smaller one: :func:`sst_core.book.params.complete_larger`
    larger_complete: tuple[str, int] | None = None

    def line(self) -> str:
        if not self.total:
            return (f"{self.notebook:<20} {self.profile:<8} computes in the notebook itself "
                    "(reads no sweep)")
        est = ("nothing to compute" if not self.missing else
               "compute unknown (no stored run of its experiments to time; the README gives "
               "measured times per profile)"
               if self.estimate_s is None else f"about {duration_text(self.estimate_s)} to compute"
               + _notes(self.rough, self.unestimated, self.timed, self.timings_made))
        again = (f"; the stale ones about {duration_text(sum(self.stale_s.values()))} more with "
                 "--retry-stale" if self.stale else "")
        return (f"{self.notebook:<20} {self.profile:<8} {self.stored}/{self.total} stored, "
                f"{self.missing} missing, {self.stale} stale: {est}{again}")


def _notes(rough: int, unestimated: int, timed: int = 0, made: str | None = None) -> str:
    notes = ([f"{timed} of them from the profile's timings measured {made or 'earlier'}, "
              "results/timings/"] if timed else []) + \
        ([f"{rough} of them priced roughly, from other models' or experiments' runs"]
         if rough else []) + \
        ([f"{unestimated} more runs without an estimate"] if unestimated else [])
    return f" ({'; '.join(notes)})" if notes else ""


def _run_cost(record: dict[str, Any]) -> float:
    """The compute of one stored run (:func:`sst_core.store.records.run_compute_s`)."""
    return run_compute_s(record)


def cost_key(cfg: Any) -> tuple[str, str | None, str | None, int | None]:
    """What a run's compute depends on most, as far as the plan can tell from its config (a
    config object or a record's ``config`` dict): its experiment, the model it trains (or,
    for an analysis, the model of the run it reads), its task or group, and the model's
    width (``d_model``, None where the config has none): a step of Mamba at d_model 128
    costs 4.5-5.6 times one at 32 (CHANGELOG, 2026-12-07), so runs of another width price
    it only roughly."""
    c = config_dict(cfg) if is_dataclass(cfg) else cfg
    run = c.get("run") if isinstance(c.get("run"), dict) else {}
    model = c.get("model") or run.get("model")
    task = c.get("task") or c.get("group") or run.get("group")
    return (c.get("experiment"), model, task, c.get("d_model") or run.get("d_model"))


def work(cfg: Any) -> float:
    """How much a run trains, relative to others of its kind, as far as its config says: the
    examples it sees (``n_train`` x ``epochs``, an LRA run) where it has both, times its
    model's channels and blocks (``H`` x ``n_layers``, where it has both: an S4D step costs
    about that, 0.06 s at 2 layers of H = 32 against 0.28 s at 4 of 64 on ListOps here),
    else 1. The plan prices a unit of it, so a data probe on four times the examples costs
    four times a run of the main table, and a task priced from another task's runs
    (none of its own stored yet) is priced for its own model."""
    c = config_dict(cfg) if is_dataclass(cfg) else cfg

    def positive(*keys: str) -> bool:
        return all(isinstance(c.get(k), (int, float)) and c[k] > 0 for k in keys)

    if not positive("n_train", "epochs"):
        return 1.0
    size = float(c["H"] * c["n_layers"]) if positive("H", "n_layers") else 1.0
    return float(c["n_train"] * c["epochs"]) * size


def step_times(root: Path | None = None) -> dict[tuple[str, str], float]:
    """``(kind, model) -> seconds`` of one step of each model in the newest benchmark
    record that times them (its ``throughput_<model>_train_L60`` rows: kind ``train``;
    ``..._eval_L1000``: kind ``eval``); empty without one. A row's model ``rnn_phi[tanh]``
    is filed under ``rnn_phi``."""
    from sst_core.bench.records import load_records

    try:
        records = load_records(root)
    except (OSError, ValueError, KeyError):  # no benchmark records, or not readable ones
        return {}
    for record in reversed(records):  # newest first
        out = {}
        for e in record["entries"]:
            name, model, t = e.get("name", ""), e.get("model"), e.get("ours_s")
            kind = ("train" if name.endswith("_train_L60") else
                    "eval" if name.endswith("_eval_L1000") else None)
            if name.startswith("throughput_") and kind and model and t:
                out[(kind, model.split("[")[0])] = float(t)
        if out:
            return out
    return {}


def _step_kind(cfg: Any) -> str:
    """``eval`` for an analysis (its config names the run it reads), else ``train``."""
    c = config_dict(cfg) if is_dataclass(cfg) else cfg
    return "eval" if isinstance(c.get("run"), dict) else "train"


class CostTable:
    """The compute of stored runs, pooled by :func:`cost_key` (per profile); ``steps``: the
    models' step times (:func:`step_times`) that scale a price taken from other models."""

    def __init__(self, steps: dict[tuple[str, str], float] | None = None,
                 timings: dict[str, tuple[CostTable, str | None]] | None = None) -> None:
        # profile -> (its runs' costs from the committed timings, when they were measured)
        self.timings = timings or {}
        self._by = defaultdict(list)  # (profile, cost key or its first two) -> [seconds]
        # (profile, experiment, model, width) -> [seconds]: the model at that width, any group
        self._by_width = defaultdict(list)
        self._widths = defaultdict(set)  # (profile, experiment, model) -> widths stored
        self._models = defaultdict(list)  # (profile, experiment) -> [(seconds, model)]
        # (profile, experiment or None for any, task or group) -> [(seconds, model)] of
        # analyses
        self._groups = defaultdict(list)
        self._analyses = defaultdict(list)  # profile -> [(seconds, model)] of analyses
        self._seen: set[tuple[str, str]] = set()  # (profile, run id) already counted
        self.steps = steps or {}

    def add(self, profile: str, record: dict[str, Any]) -> float:
        cost = _run_cost(record)
        run_id = record.get("run_id") or str(id(record))
        if (profile, run_id) not in self._seen:
            self._seen.add((profile, run_id))
            key = cost_key(record["config"])
            unit = cost / work(record["config"])  # the price of one unit of work
            for level in (4, 3, 2):
                self._by[(profile, key[:level])].append(unit)
            self._by_width[(profile, key[0], key[1], key[3])].append(unit)
            self._widths[(profile, key[0], key[1])].add(key[3])
            self._models[(profile, key[0])].append((unit, key[1]))
            if _step_kind(record["config"]) == "eval":
                self._analyses[profile].append((unit, key[1]))
                for experiment in (key[0], None):
                    self._groups[(profile, experiment, key[2])].append((unit, key[1]))
        return cost

    def estimate(self, profile: str, cfg: Any) -> tuple[float | None, bool]:
        """The mean compute of the stored runs most like ``cfg`` (the module docstring),
        per unit of :func:`work` times ``cfg``'s, and whether it comes from other models'
        runs only."""
        price, rough = self._price(profile, cfg)
        return (None if price is None else price * work(cfg)), rough

    def estimate_timed(self, profile: str, cfg: Any) -> tuple[float | None, bool, bool]:
        """:meth:`estimate`, else the same from ``profile``'s committed timings; and whether
        it came from those."""
        k, rough = self.estimate(profile, cfg)
        if k is not None or profile not in self.timings:
            return k, rough, False
        k, rough = self.timings[profile][0].estimate(profile, cfg)
        return k, rough, k is not None

    def _scaled(self, kind: str, model: str | None, runs: list[tuple[float, str | None]]
                ) -> float:
        """The mean of other models' ``runs`` (unit, model), each scaled by the ratio of
        ``model``'s step time to its own where both are known; else their plain mean."""
        mine = self.steps.get((kind, model))
        scaled = [c * mine / self.steps[(kind, m)] for c, m in runs
                  if mine and (kind, m) in self.steps]
        return _mean(scaled or [c for c, _ in runs])

    def _price(self, profile: str, cfg: Any) -> tuple[float | None, bool]:
        key = cost_key(cfg)
        kind = _step_kind(cfg)  # one experiment's runs are all of one kind
        if self._by.get((profile, key)):
            return _mean(self._by[(profile, key)]), False
        same_width = self._by_width.get((profile, key[0], key[1], key[3]))
        if kind == "train" and key[3] is not None and same_width:  # (an analysis: its group)
            return _mean(same_width), False
        # from here on no run of this model at this width and group is stored (a training
        # run: at this width): a price from runs of other widths is rough
        other = key[3] is not None and any(
            w is not None for w in self._widths[(profile, key[0], key[1])])
        if self._by.get((profile, key[:3])):
            return _mean(self._by[(profile, key[:3])]), other
        if kind == "eval" and key[2] is not None:
            for experiment in (key[0], None):  # this analysis's group: this experiment's, any
                runs = self._groups.get((profile, experiment, key[2]))
                same = _same_model(runs, key[1]) if experiment is None else []
                if same:
                    return _mean(same), True
                if runs:
                    return self._scaled(kind, key[1], runs), True
        if self._by.get((profile, key[:2])):
            return _mean(self._by[(profile, key[:2])]), other
        runs = self._models.get((profile, key[0]))
        if not runs and kind == "eval":  # no analysis of this experiment stored: others'
            runs = self._analyses.get(profile)
            same = _same_model(runs, key[1])
            if same:
                return _mean(same), True
        if not runs:
            return None, False
        return self._scaled(kind, key[1], runs), key[1] is not None


def _mean(costs: list[float]) -> float:
    return sum(costs) / len(costs)


def _same_model(runs: list[tuple[float, str | None]] | None, model: str | None
                ) -> list[float]:
    """The units of ``runs`` (unit, model) made by ``model`` (none for no model)."""
    return [c for c, m in runs or () if m == model and m is not None]


def chapter_runs(notebook: str, P: Any, root: Path
                 ) -> Iterator[tuple[Any, dict[str, Any] | None]]:
    """Each run a chapter's sweeps read under profile ``P`` (once, though several sweeps
    share it) with its stored record, or ``None`` where none is readable."""
    seen: set[str] = set()
    for sweep in chapter_sweeps(notebook):
        for cfg in sweep_configs(sweep, P, seen):
            try:
                yield cfg, load_record(record_path(cfg, root))
            except (RecordError, FileNotFoundError):
                yield cfg, None


def timings_dir(root: Path | None = None) -> Path:
    """The folder of every profile's committed timings: ``results/timings/``."""
    return (root or results_dir()) / "timings"


def timings_path(profile: str, root: Path | None = None) -> Path:
    """Where ``profile``'s committed timings live: ``results/timings/<profile>.json``."""
    return timings_dir(root) / f"{profile}.json"


def _timing_entry(record: dict[str, Any]) -> dict[str, Any]:
    """What pricing reads of a record (:func:`cost_key`, :func:`work`, its kind and its
    compute), and nothing else."""
    c = record["config"]
    run = c.get("run") if isinstance(c.get("run"), dict) else None
    config = {k: c[k] for k in ("experiment", "model", "task", "group", "d_model", "n_train",
                                "epochs") if c.get(k) is not None}
    if run is not None:
        config["run"] = {k: run[k] for k in ("model", "group", "d_model")
                         if run.get(k) is not None}
    return {"run_id": record.get("run_id"), "config": config,
            "wall_time_s": float(run_compute_s(record))}


def save_timings(profile: str, notebooks: list[str], root: Path | None = None) -> Path:
    """Measure once what every stored run of ``profile`` (of the sweeps ``notebooks`` read)
    cost and write it to :func:`timings_path`, so that a clone without these records (a
    profile whose records are not committed, ``smoke``) can still price them. Raises
    ``ValueError`` for ``best`` (not one profile) or when no run of ``profile`` is stored."""
    if profile == book_params.BEST:
        raise ValueError("--save-timings needs one profile (smoke, quick, standard, paper), "
                         "not best")
    root = root or results_dir()
    P = get_profile(profile)
    entries: dict[str, dict[str, Any]] = {}
    made: list[str] = []
    for notebook in notebooks:
        for cfg, record in chapter_runs(notebook, P, root):
            if record is not None:
                entries[config_hash(cfg)] = _timing_entry(record)
                if record.get("created_utc"):
                    made.append(record["created_utc"])
    if not entries:
        raise ValueError(f"no stored run of profile {profile!r} to time under {root}")
    digest = {"schema": TIMINGS_SCHEMA, "profile": profile, "runs": len(entries),
              "made_first": min(made, default=None), "made_last": max(made, default=None),
              "compute_s": sum(e["wall_time_s"] for e in entries.values()),
              "entries": [entries[k] for k in sorted(entries)]}
    path = timings_path(profile, root)
    write_bytes_atomic(path, (json.dumps(digest, indent=0, sort_keys=True) + "\n").encode())
    return path


def load_timings(root: Path | None = None) -> dict[str, tuple[CostTable, str | None]]:
    """Every profile's committed timings (:func:`save_timings`), each as a
    :class:`CostTable` of its runs with the date they were last measured. A file that is
    not such a digest is left out, with a warning naming it."""
    out: dict[str, tuple[CostTable, str | None]] = {}
    folder = timings_dir(root)
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            digest = json.loads(path.read_text())
            if digest.get("schema") != TIMINGS_SCHEMA or digest.get("profile") != path.stem:
                raise ValueError(f"schema {digest.get('schema')!r}, profile "
                                 f"{digest.get('profile')!r}; expected schema "
                                 f"{TIMINGS_SCHEMA} and profile {path.stem!r}")
            table = CostTable()
            for entry in digest["entries"]:
                table.add(path.stem, entry)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            print(f"sst book --plan: ignoring {path}: not a timings file ({err})",
                  file=sys.stderr)
            continue
        last = digest.get("made_last")
        out[path.stem] = (table, last[:10] if isinstance(last, str) else None)
    return out


def collect(notebook: str, profile: str, root: Path | None = None,
            costs: CostTable | None = None) -> tuple[ChapterPlan, list[Any]]:
    """A chapter's plan without its estimate, and its missing configs; the stored runs'
    compute goes into ``costs``."""
    if profile == book_params.BEST:
        name, why = book_params.best_profile(notebook)
    else:
        # a chapter the runner resolved from ``best`` is executed with that profile's
        # name: say best's reason where it is the same profile, so no page claims a
        # profile for the whole book
        best, best_why = book_params.best_profile(notebook)
        name, why = profile, (best_why if best == profile
                              else f"this chapter was run with profile `{profile}`")
    root = root or results_dir()
    costs = CostTable() if costs is None else costs
    P = get_profile(name)
    plan = ChapterPlan(notebook, name, why, sweeps=list(chapter_sweeps(notebook)))
    missing: list[Any] = []
    for cfg, record in chapter_runs(notebook, P, root):
        plan.total += 1
        if record is None:
            missing.append(cfg)
            continue
        plan.stored += 1
        cost = costs.add(name, record)
        plan.compute_s += cost
        plan.cpu_clocked += compute_clock(record) == "cpu"
        if is_stale_record(record):
            plan.stale += 1
            plan.stale_s[config_hash(cfg)] = cost
        made = record.get("created_utc")
        if made:
            plan.made_first = min(plan.made_first or made, made)
            plan.made_last = max(plan.made_last or made, made)
    plan.missing = len(missing)
    if plan.total:
        w = book_params.under_way(notebook, name, root)
        plan.under_way = None if w is None else (w.profile.name, w.stored, w.total)
        plan.larger_complete = book_params.complete_larger(notebook, name, root)
    return plan, missing


def estimate(plan: ChapterPlan, missing: list[Any], costs: CostTable) -> ChapterPlan:
    """Fill in ``plan``'s estimate for its ``missing`` configs from ``costs``."""
    found = [costs.estimate_timed(plan.profile, cfg) for cfg in missing]
    plan.priced = {config_hash(cfg): k for cfg, (k, _, _) in zip(missing, found)}
    priced = [k for k, _, _ in found if k is not None]
    plan.estimate_s = sum(priced) if priced or not missing else None
    if plan.estimate_s is not None:  # else the line says "compute unknown" for all of them
        plan.unestimated = len(found) - len(priced)
        plan.rough = sum(rough for _, rough, _ in found)
        plan.timed = sum(timed for _, _, timed in found)
        if plan.timed:
            plan.timings_made = costs.timings[plan.profile][1]
    return plan


def chapter_plan(notebook: str, profile: str, root: Path | None = None,
                 costs: CostTable | None = None) -> ChapterPlan:
    """The plan of one chapter under ``profile`` (``best``: the one it would pick)."""
    costs = CostTable(step_times(root), load_timings(root)) if costs is None else costs
    return estimate(*collect(notebook, profile, root, costs), costs)


def price_table(profile: str, root: Path | None = None) -> CostTable:
    """Every stored run of ``profile`` (the record files under ``results/<profile>/``) in one
    :class:`CostTable`, with the newest benchmark's step times and the committed timings:
    what ``sst sweep --stop-by`` prices its tasks with (the ``price`` of
    :func:`sst_core.sweep.runner.sweep`). An unreadable record is left out (the sweep names
    it when it reaches its run)."""
    root = root or results_dir()
    costs = CostTable(step_times(root), load_timings(root))
    for path in sorted((root / profile).glob("*/*.json")):
        try:
            costs.add(profile, load_record(path))
        except RecordError:
            continue
    return costs


def book_plan(notebooks: list[str], profile: str, root: Path | None = None
              ) -> list[ChapterPlan]:
    """The plan of every chapter in ``notebooks`` (book order) under ``profile``, each
    missing run priced from the stored runs of all of them."""
    costs = CostTable(step_times(root), load_timings(root))
    collected = [collect(nb, profile, root, costs) for nb in notebooks]
    return [estimate(p, missing, costs) for p, missing in collected]


@dataclass
class PartTotal:
    """What the chapters of one part of the book miss (:func:`part_totals`)."""
    caption: str
    missing: int = 0  # different runs missing
    known_s: float = 0.0  # the compute of those with an estimate
    unknown: int = 0  # missing runs without an estimate
    stale: int = 0  # different stale runs
    stale_s: float = 0.0  # their recompute

    def line(self) -> str:
        est = ("nothing to compute" if not self.missing else
               f"about {duration_text(self.known_s)} of compute"
               + (f" where it can be estimated, {self.unknown} runs without an estimate"
                  if self.unknown else ""))
        again = (f"; {self.stale} stale runs, about {duration_text(self.stale_s)} to recompute"
                 if self.stale else "")
        return f"  {self.caption}: {self.missing} different runs missing, {est}{again}"


def part_totals(plans: list[ChapterPlan], parts: Mapping[str, str]) -> list[PartTotal]:
    """Per part of the book (``parts``: notebook -> caption), in the order of ``plans``,
    what its chapters miss. A run that chapters of several parts read counts in the first
    of them, so the parts add up to the book's total; a chapter outside ``parts`` is left
    out."""
    missing_seen: set[str] = set()
    stale_seen: set[str] = set()
    out: dict[str, PartTotal] = {}
    for p in plans:
        caption = parts.get(p.notebook)
        if caption is None:
            continue
        total = out.setdefault(caption, PartTotal(caption))
        for run, cost in p.priced.items():
            if run in missing_seen:
                continue
            missing_seen.add(run)
            total.missing += 1
            if cost is None:
                total.unknown += 1
            else:
                total.known_s += cost
        for run, cost in p.stale_s.items():
            if run not in stale_seen:
                stale_seen.add(run)
                total.stale += 1
                total.stale_s += cost
    return list(out.values())


def plan_text(plans: list[ChapterPlan], profile: str,
              parts: Mapping[str, str] | None = None) -> str:
    """What ``sst book --plan`` prints: a line per chapter, then the book's totals; with
    ``parts`` (notebook -> the caption of its part of the table of contents,
    :func:`sst_core.book.runner.toc_parts`) also the totals per part."""
    lines = [f"sst book --plan, profile {profile}: per chapter, the profile it runs at, its "
             "runs stored / total, missing and stale, and the compute the missing ones need "
             "(mean compute of the stored runs of the same experiment and model, else of the "
             "same experiment scaled by the models' step times in the newest benchmark "
             "record, else, for an analysis, of other experiments' analyses, under that "
             "profile; else from the profile's committed timings, results/timings/)", ""]
    lines += [p.line() for p in plans]
    # the book's totals: every chapter as one part (a run several chapters read counts once)
    (book,) = part_totals(plans, {p.notebook: "in all" for p in plans}) or [PartTotal("")]
    lines += ["", f"in all: {book.missing} different runs missing; about "
              f"{duration_text(book.known_s)} of compute where it can be estimated"
              + (f", {book.unknown} runs without an estimate" if book.unknown else "")
              + (f"; {book.stale} different stale runs, about {duration_text(book.stale_s)} "
                 "to recompute with --retry-stale" if book.stale else "")]
    stored = sum(p.stored for p in plans)
    if stored:
        cpu = sum(p.cpu_clocked for p in plans)
        lines += [f"compute of a stored run: its process CPU time ({cpu} of the {stored} "
                  "stored runs read, counted per chapter), else its wall time (records made "
                  "before CPU time was stored, or resumed runs)"]
    if parts:
        rows = [t for t in part_totals(plans, parts) if t.missing or t.stale]
        if rows:
            lines += ["", "by part (a run that several parts read counts in the first):"]
            lines += [t.line() for t in rows]
    whys = [f"  {p.notebook}: {p.why}" for p in plans if profile == book_params.BEST and p.total]
    if whys:
        lines += ["", "why each profile:"] + whys
    return "\n".join(lines)


def made_text(first: str | None, last: str | None) -> str:
    """When a chapter's records were made (``created_utc`` of the oldest and the newest):
    the day and the hours where they are of one day, else the two days."""
    if first is None or last is None:
        return "—"
    if first[:10] == last[:10]:
        return f"{first[:10]}, {first[11:16]} to {last[11:16]}"
    return f"{first[:10]} to {last[:10]}"


def chapter_link(notebook: str, titles: Mapping[str, str] | None = None) -> str:
    """A chapter as a page of the book names it: its title (``titles``:
    :func:`sst_core.book.runner.toc_titles`) linked to it; its notebook's name where
    ``titles`` has none."""
    title = (titles or {}).get(notebook)
    return notebook if title is None else f"{{doc}}`{title} <{notebook}>`"


def status_markdown(plans: list[ChapterPlan], titles: Mapping[str, str] | None = None) -> str:
    """The book's status page: per chapter (its title linked, :func:`chapter_link`), the
    profile it shows, the runs and compute behind it, when its records were made, and a
    larger profile's sweep that is under way (its records so far) or complete (what
    ``best`` would show)."""
    lines = ["| chapter | profile shown | runs stored / read | compute behind it | "
             "records made (UTC) | larger profile's sweep |", "|---|---|---|---|---|---|"]
    # a stale record (made by an earlier version of the code it depends on) is still shown:
    # the page says how many, and `sst sweep --retry-stale` computes them again
    for p in plans:
        chapter = chapter_link(p.notebook, titles)
        if not p.total:
            lines.append(f"| {chapter} | — | no runs of its own | — | — | — |")
            continue
        made = made_text(p.made_first, p.made_last)
        ways = ([f"`{p.under_way[0]}`: {p.under_way[1]} of {p.under_way[2]} runs stored"]
                if p.under_way else [])
        if p.larger_complete:
            ways.append(f"`{p.larger_complete[0]}`: all {p.larger_complete[1]} runs stored "
                        "(`best` shows it)")
        way = "; ".join(ways) or "—"
        stale = f" ({p.stale} made by earlier code: stale)" if p.stale else ""
        lines.append(f"| {chapter} | `{p.profile}` | {p.stored} / {p.total}{stale} | "
                     f"{duration_text(p.compute_s)} | {made} | {way} |")
    return "\n".join(lines)


STAGED_PROFILES = ("standard", "paper")  # the profiles whose staged sweeps the page reports


STAGED_COLUMNS = ["sweep", "profile", "stored", "missing", "compute so far", "missing, priced"]


def staged_table(profiles: tuple[str, ...] = STAGED_PROFILES, root: Path | None = None
                 ) -> Table | None:
    """The status page's table of the sweeps no chapter reads yet
    (:func:`sst_core.experiments.registry.staged_sweeps`): per sweep and profile with any
    run stored, how far it has got (``sst status``'s counts, the failed among the stored,
    and compute; its runs are the stored and the missing), and the compute
    its missing runs would take (:func:`estimate_cell` without the trackers to train again:
    a star where part of it is priced only roughly); None where none has a run stored.
    ``data``: per row the sweep, what it computes, profile, counts, compute and
    :func:`missing_estimate` (:func:`staged_notes` says what the table leaves out)."""
    from sst_core.experiments.registry import SWEEPS, staged_sweeps
    from sst_core.sweep.status import status

    found = [(profile, row) for profile in profiles
             for row in status(profile, list(staged_sweeps()), root)
             if row.done + row.failed]
    if not found:
        return None
    costs = {profile: price_table(profile, root) for profile in {p for p, _ in found}}
    rows, data = [], []
    for profile, r in found:
        guess = missing_estimate(r.experiment, profile, costs[profile], root)
        stored = f"{r.done + r.failed}" + (f" ({r.failed} failed)" if r.failed else "")
        rows.append([f"`{r.experiment}`", f"`{profile}`", stored, r.missing,
                     duration_text(r.compute_s), estimate_cell(guess, retrain=False)])
        data.append({"sweep": r.experiment, "what": SWEEPS[r.experiment], "profile": profile,
                     "runs": r.total,
                     "stored": r.done + r.failed, "failed": r.failed, "missing": r.missing,
                     "compute_s": r.compute_s, "missing_estimate": guess})
    return Table("Sweeps the chapters do not read yet", STAGED_COLUMNS, rows, data=data)


def missing_estimate(sweep: str, profile: str, costs: CostTable, root: Path | None = None
                     ) -> dict[str, Any]:
    """The compute the missing runs of ``sweep`` under ``profile`` would take, priced by
    ``costs`` (:meth:`CostTable.estimate_timed`): ``seconds`` over the priced ones, how many
    of them are ``rough``, and how many have no price (``unpriced``). Besides: the stored,
    ok trackers that a missing analysis reads but whose weights file is gone (``retrain``:
    the sweep trains them again, :func:`sst_core.sweep.runner.sweep`), and what they took
    the first time (``retrain_seconds``, :func:`~sst_core.store.records.run_compute_s`)."""
    P = get_profile(profile)
    missing = [cfg for cfg in sweep_configs(sweep, P) if not record_path(cfg, root).exists()]
    found = [costs.estimate_timed(profile, cfg) for cfg in missing]
    again = []  # the records of trackers to train again for their weights
    for tracker in dict.fromkeys(c.run for c in missing if hasattr(c, "run")):
        path = record_path(tracker, root)
        if path.exists() and not artifact_path(tracker, ".pt", root).exists():
            try:
                record = load_record(path)
            except RecordError:
                continue  # an unreadable record is computed again anyway (a missing run)
            if record["status"] == "ok":
                again.append(record)
    return {"seconds": sum(k for k, _, _ in found if k is not None),
            "rough": sum(bool(r) for k, r, _ in found if k is not None),
            "unpriced": sum(k is None for k, _, _ in found),
            "retrain": len(again), "retrain_seconds": sum(run_compute_s(r) for r in again)}


def estimate_cell(guess: dict[str, Any], star: str = "\\*", retrain: bool = True) -> str:
    """A :func:`missing_estimate` as a table's cell shows it: the duration, ``star`` where
    part of it is rough (escaped for MyST by default), and the runs without a price; then,
    with ``retrain``, the trackers to train again for their weights (:func:`retrain_text`)."""
    text = duration_text(guess["seconds"]) + (star if guess["rough"] else "")
    text += f" + {guess['unpriced']} unpriced" if guess["unpriced"] else ""
    again = retrain_text(guess) if retrain else ""
    return text + (f" + {again} (weights missing)" if again else "")


def retrain_text(guess: dict[str, Any]) -> str:
    """What training a :func:`missing_estimate`'s trackers again takes ("1.5 h to train 3
    trackers again"); empty where there are none."""
    n = guess.get("retrain", 0)
    return (f"{duration_text(guess['retrain_seconds'])} to train {n} "
            f"tracker{'s' if n != 1 else ''} again" if n else "")


def staged_notes(table: Table | None) -> str:
    """The Markdown list under :func:`staged_table`: per sweep what it computes, and per
    row with trackers whose weights a missing analysis needs, what training them again
    takes (the table's estimate leaves it out); a line saying so without a table."""
    if table is None:
        return "- none has a run stored."
    items: dict[str, list[str]] = {}
    for d in table.data:
        item = items.setdefault(d["sweep"], [f"- `{d['sweep']}`: {d['what']}."])
        again = retrain_text(d["missing_estimate"])
        if again:
            item.append(f"At `{d['profile']}` it also takes {again}: a missing analysis "
                        "reads them, and their weights are not in this results directory (a "
                        "staged sweep commits no weights).")
    return "\n".join(" ".join(item) for item in items.values())

