""""How this page was made": the one collapsed block at the end of every chapter.

A reader who wants to know what stands behind a page opens it; everyone else reads the
chapter. It holds what a careful reader needs and nothing a chapter's body should say:
the profile and why, the sweeps (grids) the page reads, the runs stored and failed (the
failed ones as a small table), the compute they took, when they were made, the versions of
the experiments and the commits of the code that made them. ``sst status`` and the status
page count stale records; this block does not.

Every chapter ends with one cell::

    # %% tags=["remove-input"]
    how_made("p1_table2", P)

which displays :class:`HowMade` (a MyST dropdown admonition, rendered by the book).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from sst_core.book.plan import chapter_link, chapter_plan, made_text
from sst_core.experiments.registry import SWEEPS, chapter_sweeps, sweep_configs, version
from sst_core.reports import Table, duration_text
from sst_core.spec.profiles import get_profile
from sst_core.store.records import RecordError, load_record, record_path, run_compute_s

__all__ = ["HowMade", "how_made", "how_made_of_chapters"]

FAILED_SHOWN = 12  # rows of the failed-runs table; the rest are counted


@dataclass
class HowMade:
    """What stands behind one chapter at one profile (see the module docstring)."""

    notebook: str
    profile: str
    why: str
    sweeps: list[tuple[str, str]] = field(default_factory=list)  # (name, what it computes)
    total: int = 0
    stored: int = 0
    failed: list[tuple[str, str, str]] = field(default_factory=list)  # (run, what, reason)
    compute_s: float = 0.0
    made_first: str | None = None
    made_last: str | None = None
    versions: dict[str, list[int]] = field(default_factory=dict)  # experiment -> versions
    current: dict[str, int] = field(default_factory=dict)  # experiment -> current version
    commits: Counter = field(default_factory=Counter)  # short commit -> records
    # a page built from stored measurements that are not runs (the benchmark chapter):
    # their provenance as a Markdown grid (one column per record shown), and how to make them
    measured: str | None = None
    regenerate: str | None = None
    more: str | None = None  # after the usual regenerate line

    def rows(self) -> list[tuple[str, str]]:
        """(field, value) pairs of the block's table."""
        if not self.total:
            return [("profile", f"`{self.profile}` ({self.why})"),
                    ("runs", "none: this page computes what it shows when it is built")]
        commits = ", ".join(f"`{c}` ({n})" for c, n in self.commits.most_common(6))
        if len(self.commits) > 6:
            commits += f" and {len(self.commits) - 6} more"
        versions = ", ".join(
            f"{e} {'/'.join(map(str, v))} (current {self.current[e]})" for e, v in
            sorted(self.versions.items()))
        return [
            ("profile", f"`{self.profile}` ({self.why})"),
            ("grids", "; ".join(f"`{n}`: {what}" for n, what in self.sweeps)),
            ("runs", f"{self.stored} of {self.total} stored, {len(self.failed)} failed"),
            ("compute", duration_text(self.compute_s) + " (single-thread compute of the "
                        "stored runs; a stacked run counts its share of its stack)"),
            ("made", f"{(self.made_first or '?')[:10]} to {(self.made_last or '?')[:10]}"),
            ("experiment versions", versions or "none"),
            ("code (commit: records)", commits or "unknown"),
        ]

    def _repr_markdown_(self) -> str:
        lines = [":::{admonition} How this page was made", ":class: dropdown provenance", ""]
        if self.measured is not None:
            lines += [self.measured, ""]
        if self.measured is None or self.total:
            lines += ["| | |", "|---|---|"]
            lines += [f"| {k} | {v.replace('|', '/')} |" for k, v in self.rows()]
        if self.failed:
            lines += ["", "Failed runs (recorded as failed, never shown as results):", "",
                      "| run | what | reason |", "|---|---|---|"]
            lines += [f"| `{r}` | {what} | {reason.replace('|', '/')[:120]} |"
                      for r, what, reason in self.failed[:FAILED_SHOWN]]
            if len(self.failed) > FAILED_SHOWN:
                lines.append(f"| | {len(self.failed) - FAILED_SHOWN} more | |")
        lines += ["", self.regenerate or "Regenerate: `sst notebooks run --profile "
                  f"{self.profile} --only {self.notebook}`; `sst status --profile "
                  f"{self.profile}` counts its records."
                  + (f" {self.more}" if self.more else ""), ":::"]
        return "\n".join(lines)


def how_made(notebook: str, P: Any, root: Path | None = None, *, measured: Any = None,
             regenerate: str | None = None, more: str | None = None) -> HowMade:
    """The provenance block of chapter ``notebook`` shown at profile ``P`` (a
    :class:`~sst_core.spec.profiles.Profile` or its name). A page built from stored
    measurements other than runs (the benchmark chapter) passes their provenance as
    ``measured`` (an object with a Markdown repr: a table's grid) and the commands that
    make them as ``regenerate`` (Markdown); the block then shows those instead of its runs
    (it has none). ``more`` (Markdown) follows the usual regenerate line of a chapter
    with runs: its other commands and where its code lives."""
    profile = get_profile(P) if isinstance(P, str) else P
    plan = chapter_plan(notebook, profile.name, root)
    out = HowMade(notebook, profile.name, plan.why, regenerate=regenerate, more=more,
                  measured=None if measured is None else measured._repr_markdown_())
    seen: set[str] = set()
    for sweep in chapter_sweeps(notebook):
        out.sweeps.append((sweep, SWEEPS[sweep]))
        for cfg in sweep_configs(sweep, profile, seen):
            out.total += 1
            path = record_path(cfg, root)
            if not path.exists():
                continue
            try:
                record = load_record(path)
            except RecordError:
                continue
            out.stored += 1
            out.compute_s += run_compute_s(record)
            made = record.get("created_utc")
            if made:
                out.made_first = min(out.made_first or made, made)
                out.made_last = max(out.made_last or made, made)
            exp = record["experiment"]
            out.current[exp] = version(exp)
            v = record.get("version", 0)
            if v not in out.versions.setdefault(exp, []):
                out.versions[exp].append(v)
                out.versions[exp].sort()
            out.commits[(record.get("git_commit") or "unknown")[:7]] += 1
            if record["status"] != "ok":
                config = record["config"]
                run = config.get("run") if isinstance(config.get("run"), dict) else config
                what = " ".join(str(run[k]) for k in ("model", "group", "task", "init")
                                if run.get(k) is not None)
                out.failed.append((record["run_id"], what, record.get("reason") or ""))
    return out


def how_made_of_chapters(notebook: str, profile: str, shown: Mapping[str, Any],
                         titles: Mapping[str, str] | None = None,
                         root: Path | None = None) -> HowMade:
    """The provenance block of a page that shows results of other chapters (the overview,
    built with ``profile``): one row per chapter it reads (``shown``: chapter -> the
    profile that chapter shows), that chapter's own block (:func:`how_made`) in brief:
    the profile, the runs stored and failed, their compute and when they were made. Each
    chapter's own block gives its grids, versions and commits."""
    rows = []
    for chapter, P in shown.items():
        h = how_made(chapter, P, root)
        rows.append([chapter_link(chapter, titles), f"`{h.profile}`",
                     f"{h.stored} of {h.total} stored, {len(h.failed)} failed",
                     duration_text(h.compute_s), made_text(h.made_first, h.made_last)])
    grid = Table("", ["chapter read", "profile", "runs", "compute", "records made (UTC)"],
                 rows).grid()
    return HowMade(notebook, profile, "the profile each chapter shows", measured=grid.text,
                   regenerate=f"Regenerate: `sst notebooks run --profile {profile} --only "
                   f"{notebook}` (it reads the records of the chapters above and trains "
                   "nothing); `sst book --plan` says how complete they are.")
