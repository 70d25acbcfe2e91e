"""Records that a recomputation replaces are kept, not lost.

A sweep computes a stored run again only when it must: a trained tracker whose weights
are missing or unreadable is trained again for the analyses that read it
(:func:`sst_core.sweep.runner.sweep`). Before that, :func:`keep_replaced` copies the record
it will replace to ``replaced/`` beside the records, as ``<run-id>.<created>.json``
(``created``: the record's ``created_utc``, digits only), where no reader of records looks
(:func:`sst_core.store.records.iter_records` reads the folder itself only).

Each pair, a replaced record and its successor, is the same config trained again by the
same code on the same kind of machine: how far its results move measures the noise of one
run (float rounding that training amplifies), which
:func:`sst_core.reports.paper1.retrain_noise` reports.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from sst_core.store.records import RecordError, load_record, record_path

REPLACED = "replaced"  # the folder beside the records


def replaced_folder(cfg: Any, root: Path | None = None) -> Path:
    """Where the replaced records of ``cfg``'s experiment are kept."""
    return record_path(cfg, root).parent / REPLACED


def keep_replaced(cfg: Any, root: Path | None = None) -> Path | None:
    """Copy ``cfg``'s stored record to :data:`REPLACED` before it is computed again; the
    copy's path, or None when there is no usable record to keep. Idempotent: a copy of the
    same record (same ``created_utc``) is written once."""
    path = record_path(cfg, root)
    if not path.exists():
        return None
    try:
        record = load_record(path)
    except RecordError:
        return None  # an unusable record says nothing worth keeping
    stamp = re.sub(r"\D", "", str(record.get("created_utc", ""))) or "unknown"
    target = replaced_folder(cfg, root) / f"{path.stem}.{stamp}.json"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        shutil.copyfile(path, tmp)
        tmp.replace(target)  # atomic: a killed copy leaves no half file under the name
    return target


def replaced_records(cfg: Any, root: Path | None = None) -> list[dict[str, Any]]:
    """The usable records that recomputations of ``cfg`` replaced, oldest first."""
    folder = replaced_folder(cfg, root)
    out = []
    for path in sorted(folder.glob(f"{record_path(cfg, root).stem}.*.json")):
        try:
            out.append(load_record(path))
        except RecordError:
            continue
    return sorted(out, key=lambda r: str(r.get("created_utc", "")))


def replaced_files(cfg: Any, root: Path | None = None) -> list[Path]:
    """The files of :func:`replaced_records` (for ``sst status --committed-files``)."""
    return sorted(replaced_folder(cfg, root).glob(f"{record_path(cfg, root).stem}.*.json"))
