"""Benchmark records under ``results/bench/`` (kept in git; the book's benchmark chapter
shows them): one writer for ``sst bench --record`` and the GPU check, and the reader."""
from __future__ import annotations

import json
from typing import Any

RECORD_DIR = "bench"  # results/bench/: benchmark records, kept in git (the chapter reads them)


def write_record(prefix: str, fields: dict[str, Any], wall: float, root=None):
    """Write ``results/bench/<prefix>-<utc>.json``: ``fields`` plus the git commit, package
    versions, wall time and creation time; return the path. Benchmark and GPU-check
    records both go through here."""
    from datetime import datetime, timezone
    from pathlib import Path

    from sst_core.store.provenance import git_commit, versions
    from sst_core.store.records import results_dir, write_atomic

    now = datetime.now(timezone.utc)
    record = {"schema": 1, **fields,
              "git_commit": git_commit(Path(__file__).resolve().parent),
              "versions": versions(), "wall_time_s": round(wall, 2),
              "created_utc": now.isoformat(timespec="seconds")}
    path = (Path(root) if root else results_dir()) / RECORD_DIR / (
        f"{prefix}-{now.strftime('%Y%m%dT%H%M%SZ')}.json")
    write_atomic(path, record)
    return path


def store(result: dict[str, Any], command: str, wall: float, root=None):
    """Write ``result`` as a run record ``results/bench/<device>-<utc>.json`` (with the git
    commit, package versions, device, wall time and the command that made it); return
    the path. The benchmark chapter of the book renders these records."""
    hw = result["hardware"]
    return write_record(hw["device"], {"experiment": "bench", "command": command,
                                       "config": result["settings"], "device": hw["device"],
                                       "device_name": hw["device_name"], **result}, wall, root)


def load_records(root=None, experiment: str = "bench") -> list[dict[str, Any]]:
    """Every record under ``results/bench/``, oldest first: benchmark records
    (``experiment="bench"``) or the GPU check's (``"gpu_check"``, files ``gpu-check-*``)."""
    from pathlib import Path

    from sst_core.store.records import results_dir

    if experiment not in ("bench", "gpu_check"):
        raise ValueError(f"unknown experiment {experiment!r}; allowed: bench, gpu_check")
    folder = (Path(root) if root else results_dir()) / RECORD_DIR
    out = []
    for path in sorted(folder.glob("*.json")):
        if path.name.startswith("gpu-check-") != (experiment == "gpu_check"):
            continue
        record = json.loads(path.read_text())
        key = "entries" if experiment == "bench" else "checks"
        if record.get("experiment") != experiment or key not in record:
            raise ValueError(f"{path} is not a {experiment} record (no {key!r})")
        record["path"] = str(path)
        out.append(record)
    return sorted(out, key=lambda r: r["created_utc"])
