"""Tables of the book, built from stored run records only (never by training).

``sst report NAME`` prints them; the notebooks display the same :class:`Table`, so the
book and the command line cannot disagree. A config whose record is missing or failed
appears as such in its row.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import experiments
from .config import Profile
from .results import RecordError, load_record, record_path


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[Any]]
    note: str = ""
    records: list[str] = field(default_factory=list)  # run ids behind the rows

    def to_markdown(self) -> str:
        def cell(v: Any) -> str:
            if isinstance(v, float):
                return f"{v:.3f}"
            return str(v).replace("|", "\\|")

        lines = [f"**{self.title}**", "",
                 "| " + " | ".join(self.columns) + " |",
                 "|" + "|".join("---" for _ in self.columns) + "|"]
        lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in self.rows]
        if self.note:
            lines += ["", self.note]
        return "\n".join(lines)

    def to_json(self) -> str:
        return json.dumps({"title": self.title, "columns": self.columns, "rows": self.rows,
                           "note": self.note, "records": self.records}, indent=1)

    def _repr_markdown_(self) -> str:  # notebooks render the table directly
        return self.to_markdown()


def _stored(cfg: Any, root: Path | None) -> dict[str, Any] | None:
    path = record_path(cfg, root)
    if not path.exists():
        return None
    try:
        return load_record(path)
    except RecordError:
        return None


def groups_table(P: Profile, root: Path | None = None) -> Table:
    """Order sensitivity of C2, C6 and S3 under both token vocabularies."""
    cols = ["group", "tokens", "order", "abelian", "vocabulary", "non-commuting pairs",
            "words changed by one swap", "TV from uniform at the end"]
    rows, ids = [], []
    for cfg in experiments.order_sensitivity_grid(P):
        rec = _stored(cfg, root)
        if rec is None or rec["status"] != "ok":
            status = "missing" if rec is None else f"failed: {rec['reason']}"
            rows.append([cfg.group, cfg.tokens] + [status] + [""] * (len(cols) - 3))
            continue
        m = rec["metrics"]
        rows.append([cfg.group, cfg.tokens, m["order"], "yes" if m["abelian"] else "no",
                     " ".join(m["vocabulary"]), m["noncommuting_pairs"], m["swap_changes"],
                     m["tv_uniform"][-1]])
        ids.append(rec["run_id"])
    note = (f"Scale: {P.scale('n_words', 'word_length', 'seed')}. "
            "Swap share and TV are estimated from the sampled words; the non-commuting share is exact.")
    return Table("Order sensitivity of the chapter's groups", cols, rows, note, ids)


REPORTS: dict[str, Callable[..., Table]] = {
    "groups": groups_table,
}


def get_report(name: str) -> Callable[..., Table]:
    if name not in REPORTS:
        raise ValueError(f"unknown report {name!r}; available: {', '.join(sorted(REPORTS))}")
    return REPORTS[name]
