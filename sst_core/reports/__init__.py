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

from sst_core.spec.names import one_spelling
from sst_core.store.records import (
    RecordError,
    RecordWarning,
    compute_clock,
    load_record,
    record_path,
    run_compute_s,
)


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
        def cell(v: Any) -> str:
            if isinstance(v, float):
                return f"{v:.3f}"
            return str(v).replace("|", "\\|")

        lines = [f"**{self.title}**", "",
                 "| " + " | ".join(cell(c) for c in self.columns) + " |",
                 "|" + "|".join("---" for _ in self.columns) + "|"]
        lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in self.rows]
        if self.note:
            lines += ["", self.note]
        return "\n".join(lines)

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


def format_value(v: Any, spec: str = ".3g") -> str:
    """A table cell's text: a dash for None, floats with ``spec``."""
    if v is None:
        return "—"
    if isinstance(v, float):
        return format(v, spec)
    return str(v)


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


def stale_text(records: list[dict[str, Any]], sweep: str) -> str:
    """A sentence for a chapter that shows ``records``: how many of them an earlier version
    of the code they depend on made (:func:`sst_core.experiments.registry.is_stale_record`)
    and how to compute them again (``sweep``: the sweep that makes them), and how many
    were made by an earlier version that recomputed runs showed to give the same numbers,
    or that builds the same library where they were made (:mod:`sst_core.store.equivalence`,
    :mod:`sst_core.sweep.verify`); empty when neither. Records of several recomputed
    versions share one sentence, which leaves the versions and their runs to the ledger."""
    from sst_core.experiments.registry import code_hash, is_stale_record
    from sst_core.store.equivalence import TOLERANCE, entry_for
    from sst_core.store.provenance import record_simd

    n = sum(is_stale_record(r) for r in records)
    verified: dict[tuple[str, str, str], list[Any]] = {}  # ledger entry -> [entry, records]
    entries = [entry_for(r, code_hash(r["experiment"], r["config"])) for r in records]
    for entry in entries:
        if entry is not None:
            verified.setdefault((entry["experiment"], entry["from"], entry["to"]),
                                [entry, 0])[1] += 1
    profile = records[0].get("profile", "PROFILE") if records else "PROFILE"
    out = []
    if n:
        out.append(f"{n} of these {len(records)} records were made by an earlier version of "
                   f"the code they depend on (`sst status` calls them stale; `sst sweep "
                   f"{sweep} --profile {profile} --retry-stale` computes them again).")
    same_build = [r for r, e in zip(records, entries)
                  if e is not None and e.get("evidence") == "same build"]
    if same_build:
        unknown = sum(record_simd(r) is None for r in same_build)
        out.append(
            f"{len(same_build)} of these {len(records)} records were made by an earlier version "
            f"of the code that differs from the current one only by the selective scan's block "
            f"for CPUs without AVX-512, on CPUs with AVX-512, where that block is not compiled "
            f"and the library built is the same (`sst verify-stale --same-build`, "
            f"`results/code_equivalence.json`)" + (
                f"; {unknown} of them are from before records named their CPU, and count as "
                f"made on one with AVX-512 because they are older than every record from a CPU "
                f"without it" if unknown else "") + ".")
    recomputed = [(e, k) for e, k in verified.values() if e.get("evidence") != "same build"]
    if len(recomputed) == 1:
        ((entry, k),) = recomputed
        runs = entry.get("runs", [])
        out.append(
            f"{k} of these {len(records)} records were made by an earlier version of the code "
            f"(`{entry['from']}`) that gives the same numbers as the current one (`{entry['to']}`): "
            f"{len(runs)} of them ({', '.join('`' + r['run_id'] + '`' for r in runs)}) were "
            f"computed again under the current code and every metric agreed to within "
            f"{entry.get('tolerance', TOLERANCE):.2g} (`sst verify-stale`, "
            f"`results/code_equivalence.json`).")
    elif recomputed:  # one sentence for all versions: the ledger names them and their runs
        per_version = sorted(len(e.get("runs", [])) for e, _ in recomputed)
        spread = (f"{per_version[0]}" if per_version[0] == per_version[-1]
                  else f"{per_version[0]} to {per_version[-1]}")
        out.append(
            f"{sum(k for _, k in recomputed)} of these {len(records)} records were made by "
            f"{len(recomputed)} earlier versions of the code that give the same numbers as the "
            f"current one: of each version, {spread} of its runs were computed again under the "
            f"current code ({sum(per_version)} in all) and every metric agreed to within "
            f"{max(e.get('tolerance', TOLERANCE) for e, _ in recomputed):.2g} "
            f"(`sst verify-stale`; `results/code_equivalence.json` names the versions and "
            f"the runs).")
    return " ".join(out)


def ledger_text(root: Path | None = None) -> str:
    """A list for the status page: per profile, how many records were made by an earlier
    version of the code they depend on and count as current only through a ledger entry
    (:mod:`sst_core.store.equivalence`), by which evidence; empty when none do."""
    from sst_core.experiments.registry import code_hash
    from sst_core.store.equivalence import entry_for, load_ledger
    from sst_core.store.provenance import record_simd
    from sst_core.store.records import iter_records

    counts: dict[str, list[int]] = {}  # profile -> [recomputed, same build, no CPU named]
    for profile, experiment in sorted({(e["profile"], e["experiment"])
                                       for e in load_ledger(root)}):
        for r in iter_records(experiment, profile, root):
            entry = entry_for(r, code_hash(experiment, r["config"]), root)
            if entry is None:
                continue
            c = counts.setdefault(profile, [0, 0, 0])
            if entry.get("evidence") == "same build":
                c[1] += 1
                c[2] += record_simd(r) is None
            else:
                c[0] += 1
    lines = []
    for profile, (again, same, unknown) in sorted(counts.items()):
        why = []
        if again:
            why.append(f"{again} because runs of their code version were computed again under "
                       f"the current code and every metric agreed (`sst verify-stale`)")
        if same:
            why.append(
                f"{same} because the only change since is the selective scan's block for CPUs "
                f"without AVX-512 and they were made on CPUs with AVX-512, where the library "
                f"built is the same (`sst verify-stale --same-build`" + (
                    f"; {unknown} of them from before records named their CPU, older than every "
                    f"record from a CPU without AVX-512" if unknown else "") + ")")
        lines.append(f"- `{profile}`: {again + same} records made by an earlier version of the "
                     f"code they depend on count as current: " + "; ".join(why) + ".")
    return "\n".join(lines)


def changes_since_stale(records: list[dict[str, Any]], changes: Sequence[tuple[str, str, str]]
                        ) -> list[tuple[str, str, str]]:
    """Of ``changes`` (``(commit, when, what)``, ``when`` an ISO time with its zone: the
    commits that changed the code some of ``records`` depend on), those made after at
    least one of the stale records (:func:`sst_core.experiments.registry.is_stale_record`)
    was created, in the given order; what a chapter says changed since its stale records
    were made, instead of naming a change a record does not predate."""
    from datetime import datetime

    from sst_core.experiments.registry import is_stale_record

    made = [datetime.fromisoformat(r["created_utc"]) for r in records
            if r.get("created_utc") and is_stale_record(r)]
    if not made:
        return []
    oldest = min(made)
    return [c for c in changes if datetime.fromisoformat(c[1]) > oldest]


def stale_changes_text(records: list[dict[str, Any]], sweep: str,
                       changes: Sequence[tuple[str, str, str]], *,
                       kind: str = "not to what training computes") -> str:
    """:func:`stale_text` of ``records`` followed by the ``changes`` (``(commit, when,
    what)``) made since their oldest stale record (:func:`changes_since_stale`), each
    ``what`` a clause that says what the change did; ``kind`` says what sort of change they
    are. Just :func:`stale_text` when no such change is listed."""
    text = stale_text(records, sweep)
    since = [what for _, _, what in changes_since_stale(records, changes)]
    if not since:
        return text
    head = "One change" if len(since) == 1 else f"{len(since)} changes"
    return f"{text} {head} since, {kind}: " + " And ".join(since)


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
    "table2_runs_needed": "sst_core.reports.paper1:table2_runs_needed",
    "table2_slices": "sst_core.reports.paper1:table2_slices",
    "table2_disagreements": "sst_core.reports.paper1:table2_disagreements",
    "retrain_noise": "sst_core.reports.paper1:retrain_noise",
    "width_ablation": "sst_core.reports.paper1:width_ablation",
    "theorem1": "sst_core.reports.error_control:theorem1_table",
    "diagnostics": "sst_core.reports.error_control:diagnostics_table",
    "figure4": "sst_core.reports.error_control:figure4_table",
    "figure4_within": "sst_core.reports.error_control:figure4_within_table",
    "corollary1": "sst_core.reports.error_control:corollary1_table",
    "crossing": "sst_core.reports.error_control:crossing_table",
    "lra_main": "sst_core.reports.lra:lra_main",
    "lra_ablation": "sst_core.reports.lra:lra_ablation",
    "lra_claims": "sst_core.reports.lra:lra_claims",
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
