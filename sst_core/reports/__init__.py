"""Tables of the book, built from stored run records only (never by training).

``sst report NAME`` prints them; the notebooks display the same :class:`Table`, so the
book and the command line cannot disagree. A config whose record is missing or failed
appears as such in its row. Reports select (the best run of a cell:
:mod:`sst_core.reports.select`, one rule); figures draw what they are given. Each
chapter's tables live in their own module here and are registered by name in
:data:`REPORTS` (imported lazily).
"""
from __future__ import annotations

import importlib
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from sst_core.spec.names import one_spelling, typeset_symbols
from sst_core.store.records import (
    RecordError,
    RecordWarning,
    compute_clock,
    load_record,
    record_path,
    run_compute_s,
)


def header_text(name: str) -> str:
    """A column's name as a table's header shows it: the papers' symbols among its words
    typeset as math (:func:`sst_core.spec.names.typeset_symbols`)."""
    return typeset_symbols(name)


@dataclass
class Table:
    """A table of the book: ``rows`` are what it shows (text and numbers, formatted by
    :meth:`to_markdown`), ``data`` what it means, for notebooks and ``--format json``.

    ``data`` holds typed values only: numbers, booleans, names and lists of them; None
    where a value is missing or failed (an m_p of None is a failure at the training
    length), and a ``status`` field (``ok``, ``fail``, ``missing``, ``diverged``,
    ``failed``) where a row or cell can lack a value. Never a display string to parse back.
    """

    title: str
    columns: list[str]
    rows: list[list[Any]]
    note: str = ""
    records: list[str] = field(default_factory=list)  # run ids behind the rows
    data: list[dict[str, Any]] | None = None  # typed rows (see above), for --format json

    def to_markdown(self) -> str:
        """The table as ``sst report`` prints it: its title in bold, the grid, its note."""
        lines = [f"**{self.title}**", "", self.grid().text]
        if self.note:
            lines += ["", self.note]
        return "\n".join(lines)

    def grid(self) -> "Grid":
        """The rows under their header and nothing else, for a chapter: glued, and shown in
        a MyST ``{table}`` whose caption (the chapter's own words) replaces the title and
        note, so the book numbers it as a table (see ``notebooks/p1_table2.py``). The
        header typesets the papers' symbols (:func:`header_text`)."""
        def cell(v: Any) -> str:
            if isinstance(v, float):
                return f"{v:.3f}"
            return str(v).replace("|", "\\|")

        lines = ["| " + " | ".join(cell(header_text(c)) for c in self.columns) + " |",
                 "|" + "|".join("---" for _ in self.columns) + "|"]
        lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in self.rows]
        return Grid("\n".join(lines))

    def transposed(self) -> "Table":
        """The same table with rows and columns swapped (the first column's entries become
        the headers), for a table with many columns and few rows, which a page would cut
        off at its edge; the note, records and data are the same."""
        cols = [self.columns[0]] + [str(row[0]) for row in self.rows]
        rows = [[name] + [row[j] for row in self.rows] for j, name in enumerate(self.columns)
                if j > 0]
        return Table(self.title, cols, rows, self.note, self.records, self.data)

    def split(self, keys: int, at: int) -> tuple["Table", "Table"]:
        """The table as two narrower ones for a page: the first ``keys`` columns in both,
        then columns ``keys:at`` in the first and ``at:`` in the second (which keeps the
        note, the records and the data)."""
        if not 0 < keys < at < len(self.columns):
            raise ValueError(f"split(keys={keys}, at={at}) of a table with "
                             f"{len(self.columns)} columns: need 0 < keys < at < "
                             f"{len(self.columns)}")
        first = Table(self.title, self.columns[:at], [row[:at] for row in self.rows])
        second = Table(f"{self.title} (continued)", self.columns[:keys] + self.columns[at:],
                       [row[:keys] + row[at:] for row in self.rows], self.note, self.records,
                       self.data)
        return first, second

    def to_json(self) -> str:
        out = {"title": self.title, "columns": self.columns, "rows": self.rows,
               "note": self.note, "records": self.records}
        if self.data is not None:
            out["data"] = self.data
        return json.dumps(out, indent=1)

    def _repr_markdown_(self) -> str:  # notebooks render the table directly
        return self.to_markdown()


@dataclass(frozen=True)
class Grid:
    """A table's grid as Markdown (:meth:`Table.grid`); a notebook glues it and the book
    shows it with ``{glue:md}`` inside a ``{table}``."""

    text: str

    def _repr_markdown_(self) -> str:
        return self.text


def format_value(v: Any, spec: str = ".3g") -> str:
    """A table cell's text: a dash for None, floats with ``spec``."""
    if v is None:
        return "—"
    if isinstance(v, float):
        return format(v, spec)
    return str(v)


def labelled_values(singular: str, plural: str, values: Sequence[Any]) -> str:
    """Values with their label in the right number: "depth 1", "depths 1, 2", and
    "no depths" for none."""
    if not values:
        return f"no {plural}"
    return f"{singular if len(values) == 1 else plural} {', '.join(map(str, values))}"


def duration_text(seconds: float) -> str:
    """A compute time as a reader says it: seconds under a minute (never "0 min" for the
    runs of a small profile, never "0.00 hours"), minutes under an hour, else hours."""
    if seconds < 59.5:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 3600 else f"{seconds / 3600:.1f} h"


def compute_text(records: list[dict[str, Any]]) -> str:
    """The compute behind ``records`` (:func:`compute_s`) as a chapter says it
    (:func:`duration_text`)."""
    return duration_text(compute_s(records))


def compute_s(records: list[dict[str, Any]]) -> float:
    """The compute behind ``records``, in seconds: each run's own
    (:func:`sst_core.store.records.run_compute_s`: its CPU time where the record has one,
    else its wall time; a stacked run's share of its stack, with the earlier parts of a
    run that resumed), not each record's wall time, which for the runs of one stack is
    the whole stack's (:func:`compute_clocks` says which clock counted how many)."""
    return float(sum(run_compute_s(r) for r in records))


def compute_clocks(records: list[dict[str, Any]]) -> dict[str, int]:
    """How many of ``records`` :func:`compute_s` counts in process CPU time (``"cpu"``)
    and how many in wall time (``"wall"``: made before records stored CPU time), for a
    chapter's provenance (:func:`sst_core.store.records.compute_clock`)."""
    clocks = [compute_clock(r) for r in records]
    return {"cpu": clocks.count("cpu"), "wall": clocks.count("wall")}


def stored_record(cfg: Any, root: Path | None = None) -> dict[str, Any] | None:
    """The usable stored record of ``cfg``, or None (missing or unreadable). An unreadable
    one (:func:`sst_core.store.records.load_record` rejects it) is named in a
    :class:`~sst_core.store.records.RecordWarning` and shown as missing."""
    path = record_path(cfg, root)
    if not path.exists():
        return None
    try:
        return load_record(path)
    except RecordError as err:
        warnings.warn(f"{err}; shown as missing (`sst sweep` computes it again)",
                      RecordWarning, stacklevel=2)
        return None


def stored_records(cfgs, root: Path | None = None) -> list[dict[str, Any]]:
    """The usable stored records of ``cfgs``, in order; missing or unreadable ones skipped."""
    return [rec for rec in (stored_record(cfg, root) for cfg in cfgs) if rec is not None]


def group_records(cfgs, key, root: Path | None = None,
                  reasons: dict[Any, list[str]] | None = None):
    """Stored records of ``cfgs`` grouped by ``key(cfg)``, for a table's cells.

    Returns ``(ok, ids, status)``: ``ok[k]`` lists ``(cfg, record)`` of the runs that
    succeeded, ``ids`` every stored run id, ``status[k]`` counts ``ok``, ``failed`` and
    ``missing`` runs of the cell. ``reasons``, if given, gets ``reasons[k]``: the reason
    each failed run of the cell gives.
    """
    from collections import defaultdict

    ok: dict[Any, list] = defaultdict(list)
    status: dict[Any, dict[str, int]] = defaultdict(lambda: {"ok": 0, "failed": 0, "missing": 0})
    ids: list[str] = []
    for cfg in cfgs:
        k = key(cfg)
        rec = stored_record(cfg, root)
        if rec is None:
            status[k]["missing"] += 1
            continue
        status[k][rec["status"]] += 1
        ids.append(rec["run_id"])
        if rec["status"] == "ok":
            ok[k].append((cfg, rec))
        elif reasons is not None:
            reasons.setdefault(k, []).append(str(rec.get("reason")))
    return ok, ids, status


def runs_note(st: dict[str, int]) -> str:
    """What a cell of ``status`` counts (:func:`group_records`) says beside its values when
    not all of its runs are ok: `` (2 of 3 runs; 1 failed)``; else nothing."""
    n = st["ok"] + st["failed"] + st["missing"]
    if st["ok"] == n:
        return ""
    lost = [f"{st[k]} {k}" for k in ("failed", "missing") if st[k]]
    return f" ({st['ok']} of {n} runs; {', '.join(lost)})"


# report name -> "module:function"; the function takes a Profile and returns a Table.
# Names are spelled with underscores, like the sweeps and experiments (`sst sweep
# harder_groups`, `sst report harder_groups`); get_report accepts hyphens too, with a hint.
REPORTS: dict[str, str] = {
    "groups": "sst_core.reports.groups:groups_table",
    "memory": "sst_core.reports.memory:memory_table",
    "memory_reference": "sst_core.reports.memory:reference_comparison",
    "table2": "sst_core.reports.paper1:table2",
    "table3": "sst_core.reports.paper1:table3",
    "table2_checkpoints": "sst_core.reports.paper1:table2_checkpoints",
    "table2_spread": "sst_core.reports.paper1:table2_spread",
    "table2_before_after": "sst_core.reports.paper1:table2_before_after",
    "table2_runs_needed": "sst_core.reports.paper1:table2_runs_needed",
    "table2_slices": "sst_core.reports.paper1:table2_slices",
    "table2_disagreements": "sst_core.reports.paper1:table2_disagreements",
    "retrain_noise": "sst_core.reports.paper1:retrain_noise",
    "pilots_60": "sst_core.reports.pilots:pilots_60",
    "width_ablation": "sst_core.reports.paper1:width_ablation",
    "theorem1": "sst_core.reports.error_control:theorem1_table",
    "diagnostics": "sst_core.reports.error_control:diagnostics_table",
    "figure4": "sst_core.reports.error_control:figure4_table",
    "figure4_within": "sst_core.reports.error_control:figure4_within_table",
    "figure4_both_ways": "sst_core.reports.error_control:figure4_both_ways_table",
    "figure4_before_after": "sst_core.reports.error_control:figure4_before_after",
    "spread_tail": "sst_core.reports.error_control:spread_tail_table",
    "spread_ratio": "sst_core.reports.error_control:spread_ratio_table",
    "corollary1": "sst_core.reports.error_control:corollary1_table",
    "crossing": "sst_core.reports.error_control:crossing_table",
    "lra_main": "sst_core.reports.lra:lra_main",
    "lra_ablation": "sst_core.reports.lra:lra_ablation",
    "lra_claims": "sst_core.reports.lra:lra_claims",
    "lra_claim3_windows": "sst_core.reports.lra:claim3_window_table",
    "paper_claims": "sst_core.reports.lra:paper_claims",
    "lra_fit": "sst_core.reports.lra:lra_fit",
    "memory_horizon": "sst_core.reports.lra:memory_horizon",
    "memory_horizon_noise": "sst_core.reports.lra:memory_horizon_noise",
    "group_facts": "sst_core.reports.beyond:group_facts",
    "harder_groups": "sst_core.reports.beyond:harder_groups",
    "figure4_groups": "sst_core.reports.beyond:figure4_groups",
    "label_free": "sst_core.reports.beyond:label_free",
    "label_free_warning": "sst_core.reports.beyond:label_free_warning",
    "semi_affine": "sst_core.reports.beyond:semi_affine",
    "delta": "sst_core.reports.beyond:delta",
    "delta_lens": "sst_core.reports.beyond:delta_lens",
    "delta_predictions": "sst_core.reports.beyond:delta_predictions",
    "exact_trackers": "sst_core.reports.beyond:exact_trackers",
    "torch_module_check": "sst_core.reports.beyond:torch_module_check",
    "spectra": "sst_core.reports.beyond:spectra",
    "spectra_predictors": "sst_core.reports.beyond:spectra_predictors",
}


def report_name(name: str) -> str:
    """The registered spelling of report ``name`` (:func:`sst_core.spec.names.one_spelling`)."""
    return one_spelling(name, sorted(REPORTS), "report")


def get_report(name: str) -> Callable[..., Table]:
    module, func = REPORTS[report_name(name)].split(":")
    return getattr(importlib.import_module(module), func)
