"""``sst book --plan``: what building the book would compute, without computing it.

Per chapter of ``_toc.yml``: the profile it would run at (for ``best``, the profile
:func:`sst_core.book.params.best_profile` picks, and why), the runs it reads under that
profile that are stored, missing and stale (made by another version of the code,
:func:`sst_core.experiments.registry.is_stale_record`), and an estimate of the compute the
missing ones need: their count times the mean compute per stored run of the same sweep
and profile (a stacked run's share of its stack), or no estimate where nothing of that
sweep is stored yet. Reads record files only; never trains and never imports torch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sst_core.book import params as book_params
from sst_core.experiments.registry import chapter_sweeps, is_stale_record, sweep_configs
from sst_core.spec.profiles import get_profile
from sst_core.store.records import (
    RecordError,
    load_record,
    record_path,
    results_dir,
    run_compute_s,
)


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
    sweeps: list[str] = field(default_factory=list)
    compute_s: float = 0.0  # compute of the stored runs (a stack's shared by its runs)
    made_first: str | None = None  # created_utc of the oldest stored record
    made_last: str | None = None  # and of the newest

    def line(self) -> str:
        if not self.total:
            return (f"{self.notebook:<20} {self.profile:<8} computes in the notebook itself "
                    "(reads no sweep)")
        est = ("nothing to compute" if not self.missing else
               "compute unknown (no stored run of its sweeps to time)" if self.estimate_s is None
               else f"about {_hours(self.estimate_s)} to compute")
        return (f"{self.notebook:<20} {self.profile:<8} {self.stored}/{self.total} stored, "
                f"{self.missing} missing, {self.stale} stale: {est}")


def _hours(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds < 3600 else f"{seconds / 3600:.1f} h"


def _run_cost(record: dict[str, Any]) -> float:
    """The compute of one stored run (:func:`sst_core.store.records.run_compute_s`)."""
    return run_compute_s(record)


def chapter_plan(notebook: str, profile: str, root: Path | None = None,
                 cost_cache: dict | None = None) -> ChapterPlan:
    """The plan of one chapter under ``profile`` (``best``: the one it would pick)."""
    if profile == book_params.BEST:
        name, why = book_params.best_profile(notebook)
    else:
        name, why = profile, f"the book was built with profile `{profile}`"
    root = root or results_dir()
    P = get_profile(name)
    plan = ChapterPlan(notebook, name, why, sweeps=list(chapter_sweeps(notebook)))
    cost_cache = {} if cost_cache is None else cost_cache
    seen: set[str] = set()
    for sweep in plan.sweeps:
        costs: list[float] = []
        missing = 0
        for cfg in sweep_configs(sweep, P, seen):
            plan.total += 1
            try:
                record = load_record(record_path(cfg, root))
            except (RecordError, FileNotFoundError):
                missing += 1
                continue
            plan.stored += 1
            plan.stale += is_stale_record(record)
            costs.append(_run_cost(record))
            plan.compute_s += costs[-1]
            made = record.get("created_utc")
            if made:
                plan.made_first = min(plan.made_first or made, made)
                plan.made_last = max(plan.made_last or made, made)
        plan.missing += missing
        key = (sweep, name)
        if costs:
            cost_cache[key] = sum(costs) / len(costs)
        if missing and plan.estimate_s is not None:
            mean = cost_cache.get(key)
            plan.estimate_s = None if mean is None else plan.estimate_s + missing * mean
    return plan


def book_plan(notebooks: list[str], profile: str, root: Path | None = None
              ) -> list[ChapterPlan]:
    """The plan of every chapter in ``notebooks`` (book order) under ``profile``."""
    cache: dict = {}
    return [chapter_plan(nb, profile, root, cache) for nb in notebooks]


def plan_text(plans: list[ChapterPlan], profile: str) -> str:
    lines = [f"sst book --plan, profile {profile}: per chapter, the profile it runs at, its "
             "runs stored / total, missing and stale, and the compute the missing ones need "
             "(mean compute of the stored runs of the same sweep and profile)", ""]
    lines += [p.line() for p in plans]
    known = [p.estimate_s for p in plans if p.missing and p.estimate_s is not None]
    unknown = sum(1 for p in plans if p.missing and p.estimate_s is None)
    lines += ["", f"in all: {sum(p.missing for p in plans)} runs missing; about "
              f"{_hours(sum(known))} of compute where it can be estimated"
              + (f", {unknown} chapter(s) without an estimate" if unknown else "")]
    whys = [f"  {p.notebook}: {p.why}" for p in plans if profile == book_params.BEST and p.total]
    if whys:
        lines += ["", "why each profile:"] + whys
    return "\n".join(lines)


def status_markdown(plans: list[ChapterPlan]) -> str:
    """The book's status page: per chapter, the profile it shows and why, the runs and
    compute behind it and when its records were made."""
    lines = ["| chapter | profile shown | runs stored / read | compute behind it | "
             "records made (UTC) |", "|---|---|---|---|---|"]
    for p in plans:
        if not p.total:
            lines.append(f"| {p.notebook} | `{p.profile}` | computed on the page | — | — |")
            continue
        made = ("—" if p.made_first is None else
                f"{p.made_first[:16].replace('T', ' ')} to {p.made_last[:16].replace('T', ' ')}")
        lines.append(f"| {p.notebook} | `{p.profile}` | {p.stored} / {p.total} | "
                     f"{_hours(p.compute_s)} | {made} |")
    return "\n".join(lines)
