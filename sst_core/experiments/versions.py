"""Record versions and the version lock: one decision per code change.

Every experiment of the registry has an integer ``version`` and every record stores the
version that made it; a record is stale exactly when its version is below the current one
(:func:`sst_core.experiments.registry.is_stale_record`).

The lock, ``results/versions.lock`` in the repository, maps each experiment to its version
and to the fingerprints of the code its runs reach
(:func:`sst_core.experiments.registry.fingerprints`: one per model for the experiments that
build a model by name). ``tests/experiments/test_versions.py`` fails when the code no
longer matches the lock (:func:`check`), and its message names the experiment and the two
choices of whoever changed the code:

- **bump** the experiment's ``version`` in the registry: its records become stale (``sst
  status`` counts them, ``sst sweep ... --retry-stale`` computes them again); then ``sst
  lock EXPERIMENT`` writes the new version and fingerprints without recomputing anything;
- **lock** it, ``sst lock EXPERIMENT`` (:func:`lock`): recompute a small sample of its
  stored runs, in every profile that has records reaching the changed code, in a scratch
  folder, and compare every metric with the stored record (:func:`compare_metrics`, to
  :data:`TOLERANCE`). Any difference refuses the lock and prints a table of them; else the
  lock's fingerprints are updated, a one-line diff per changed fingerprint for a reviewer.

This is DVC's ``dvc.lock`` and ``dvc commit``: the fingerprint is only a tripwire, the
version is the decision.
"""
from __future__ import annotations

import json
import math
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from sst_core.experiments.registry import (
    EXPERIMENTS,
    config_from_dict,
    fingerprint_key,
    fingerprints,
    get_experiment,
    version,
)
from sst_core.store.records import (
    RecordError,
    artifact_path,
    load_record,
    record_path,
    results_dir,
    results_dir_at,
    run_compute_s,
    write_bytes_atomic,
)

__all__ = ["LOCK_PATH", "TOLERANCE", "read_lock", "write_lock", "Mismatch", "check",
           "Difference", "LockResult", "lock", "sample_records", "compare_metrics",
           "differences_markdown"]

LOCK_PATH = Path(__file__).resolve().parents[2] / "results" / "versions.lock"
# One unit in the sixth decimal (records round metrics to six), with room for the float
# error of the difference itself (0.992874 - 0.992873 = 1.000000000001e-06).
TOLERANCE = 1.5e-6
# metric keys that hold no result: timings (ending in _s), a resumed run's earlier parts,
# and the size of the stack a run was trained in (a recomputed run trains alone)
SKIPPED_KEYS = ("resumed", "stacked")


def read_lock(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """The lock's entries: experiment -> {"version": int, "fingerprints": {key: hash}};
    {} when the file does not exist. A malformed lock raises ValueError naming the file."""
    path = path or LOCK_PATH
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: unreadable version lock ({err})") from err
    if not isinstance(data, dict):
        raise ValueError(f"{path}: the version lock must be a JSON object of experiments")
    for name, entry in data.items():
        ok = (isinstance(entry, dict) and isinstance(entry.get("version"), int)
              and not isinstance(entry["version"], bool) and entry["version"] >= 1
              and isinstance(entry.get("fingerprints"), dict)
              and all(isinstance(k, str) and isinstance(v, str)
                      for k, v in entry["fingerprints"].items()))
        if not ok:
            raise ValueError(f"{path}: entry {name!r} must be {{\"version\": an int >= 1, "
                             f"\"fingerprints\": {{key: hash}}}}; got {entry!r:.120}")
    return data


def write_lock(entries: dict[str, dict[str, Any]], path: Path | None = None) -> Path:
    """Write the lock (sorted, one fingerprint a line, so that a change is a one-line
    diff); atomic."""
    path = path or LOCK_PATH
    text = json.dumps(dict(sorted(entries.items())), indent=1, sort_keys=True) + "\n"
    write_bytes_atomic(path, text.encode())
    return path


def current_entry(experiment: str) -> dict[str, Any]:
    """What the lock should hold for ``experiment`` with the code as it is."""
    prints = fingerprints(experiment)
    unknown = [k for k, v in prints.items() if v is None]
    if unknown:
        raise RuntimeError(f"the code fingerprint of {experiment} ({', '.join(unknown)}) "
                           "is unknown: a source file was edited after this process "
                           "imported it; run again in a fresh process")
    return {"version": version(experiment), "fingerprints": prints}


@dataclass
class Mismatch:
    """Where the code no longer matches the lock for one experiment."""

    experiment: str
    locked_version: int | None  # None: not in the lock
    version: int
    changed: list[str]  # fingerprint keys (models, or "*") whose code changed

    def message(self) -> str:
        e = self.experiment
        if self.locked_version is None:
            return (f"{e}: not in the version lock ({LOCK_PATH.name}); run `sst lock {e}` "
                    "to add it")
        if self.version != self.locked_version:
            return (f"{e}: version {self.version} in the registry, {self.locked_version} in "
                    f"the lock; run `sst lock {e}` to write the new version")
        return (f"{e}: the code its runs reach changed ({', '.join(self.changed)}) since the "
                f"lock. Choose one: (1) if what its runs compute changes, raise `version` of "
                f"{e} in sst_core/experiments/registry.py (its records become stale; `sst "
                f"sweep ... --retry-stale` recomputes them) and run `sst lock {e}`; or (2) if "
                f"it does not, run `sst lock {e}`: it recomputes a small sample of the "
                f"stored runs that reach the change and updates the lock only if every "
                f"metric agrees to {TOLERANCE:g}.")


def check(experiments: list[str] | None = None, path: Path | None = None) -> list[Mismatch]:
    """The experiments whose code or version no longer matches the lock (none: all do)."""
    locked = read_lock(path)
    out = []
    for name in experiments or list(EXPERIMENTS):
        now = current_entry(name)
        entry = locked.get(name)
        if entry is None:
            out.append(Mismatch(name, None, now["version"], sorted(now["fingerprints"])))
            continue
        changed = sorted(k for k in set(now["fingerprints"]) | set(entry["fingerprints"])
                         if now["fingerprints"].get(k) != entry["fingerprints"].get(k))
        if changed or entry["version"] != now["version"]:
            out.append(Mismatch(name, entry["version"], now["version"], changed))
    return out


# -- sst lock ---------------------------------------------------------------------------------

@dataclass
class Difference:
    profile: str
    run_id: str
    metric: str  # dotted path into the metrics, or what differs ("status", ...)
    stored: Any
    recomputed: Any


@dataclass
class LockResult:
    experiment: str
    action: str  # "unchanged", "added", "version", "locked" or "refused"
    changed: list[str] = field(default_factory=list)
    checked: list[tuple[str, str, float, float]] = field(default_factory=list)
    # (profile, run id, stored compute s, recompute s) of every run recomputed
    differences: list[Difference] = field(default_factory=list)
    largest_difference: float = 0.0


def lock(experiment: str, *, sample: int = 1, root: Path | None = None,
         path: Path | None = None,
         report: Callable[[str], None] = lambda msg: None) -> LockResult:
    """``sst lock EXPERIMENT`` (the module docstring). ``sample``: runs recomputed per
    changed fingerprint key and profile (the cheapest ``ok`` current records by their
    stored compute); ``root``: the results folder (default :func:`results_dir`)."""
    get_experiment(experiment)
    if not isinstance(sample, int) or isinstance(sample, bool) or sample < 1:
        raise ValueError(f"sample={sample!r}: recompute at least one run per changed "
                         "fingerprint and profile (an int >= 1)")
    entries = read_lock(path)
    now = current_entry(experiment)
    entry = entries.get(experiment)
    if entry is not None and entry["version"] > now["version"]:
        raise ValueError(f"{experiment}: the lock holds version {entry['version']}, the "
                         f"registry {now['version']}: versions only go up")
    if entry is None or entry["version"] < now["version"]:
        entries[experiment] = now
        write_lock(entries, path)
        return LockResult(experiment, "added" if entry is None else "version",
                          sorted(now["fingerprints"]))
    changed = sorted(k for k in set(now["fingerprints"]) | set(entry["fingerprints"])
                     if now["fingerprints"].get(k) != entry["fingerprints"].get(k))
    result = LockResult(experiment, "unchanged", changed)
    if not changed:
        return result
    for profile, record in sample_records(experiment, set(changed), sample, root):
        report(f"{experiment} ({profile}): recomputing {record['run_id']} "
               f"(stored compute {run_compute_s(record):.0f} s)")
        new, seconds = recompute(record, root or results_dir())
        result.checked.append((profile, record["run_id"], run_compute_s(record), seconds))
        diffs, largest = compare_records(record, new)
        result.largest_difference = max(result.largest_difference, largest)
        result.differences += [Difference(profile, record["run_id"], *d) for d in diffs]
        report(f"{experiment} ({profile}): {record['run_id']}: " + (
            f"agrees (largest difference {largest:.2g})" if not diffs
            else f"{len(diffs)} difference(s)"))
    if result.differences:
        result.action = "refused"
        return result
    entries[experiment] = now
    write_lock(entries, path)
    result.action = "locked"
    return result


def sample_records(experiment: str, keys: set[str], sample: int, root: Path | None = None
                   ) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(profile, record)``: per profile folder under ``root`` and fingerprint key in
    ``keys``, the ``sample`` cheapest ``ok`` current records of ``experiment``."""
    base = root or results_dir()
    for folder in sorted(p for p in base.glob(f"*/{experiment}") if p.is_dir()):
        by_key: dict[str, list[dict[str, Any]]] = {}
        for file in sorted(folder.glob("*.json")):
            try:
                record = load_record(file)
            except RecordError:
                continue
            if (record["status"] == "ok" and record.get("version") == version(experiment)
                    and fingerprint_key(record) in keys):
                by_key.setdefault(fingerprint_key(record), []).append(record)
        for key in sorted(by_key):
            for record in sorted(by_key[key], key=run_compute_s)[:sample]:
                yield folder.parent.name, record


def recompute(record: dict[str, Any], stored: Path) -> tuple[dict[str, Any], float]:
    """``record``'s run computed again with today's code, alone, in a scratch results
    folder (nothing it writes lands beside the stored records), with the torch thread
    count the record names: the new record and the seconds it took."""
    import torch

    from sst_core.experiments import runs

    cfg = config_from_dict(record["config"])
    threads = (record.get("host") or {}).get("torch_threads")
    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(int(threads))
    start = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="sst-lock-") as scratch, \
                results_dir_at(scratch):
            stage_tracker(cfg, stored, Path(scratch))
            new = runs.run(cfg, root=Path(scratch))
    finally:
        torch.set_num_threads(before)
    return new, time.perf_counter() - start


def stage_tracker(cfg: Any, stored: Path, scratch: Path) -> None:
    """An analysis (a config with a ``run``: the trained tracker it reads) recomputed in
    ``scratch`` reads that tracker's stored record and weights: copied there from
    ``stored`` (copies, so that the recompute cannot touch the originals)."""
    import shutil

    run = getattr(cfg, "run", None)
    if run is None:
        return
    for src, dst in ((record_path(run, stored), record_path(run, scratch)),
                     (artifact_path(run, ".pt", stored), artifact_path(run, ".pt", scratch))):
        if src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)


def compare_records(stored: dict[str, Any], new: dict[str, Any]
                    ) -> tuple[list[tuple[str, Any, Any]], float]:
    """The differences between a stored record and its recomputed twin (status, config
    and every metric, :func:`compare_metrics`) and the largest numeric difference."""
    diffs: list[tuple[str, Any, Any]] = []
    for key in ("status", "config"):
        if stored[key] != new[key]:
            diffs.append((key, stored[key], new[key]))
    more, largest = compare_metrics(stored["metrics"], new["metrics"])
    return diffs + more, largest


def compare_metrics(a: Any, b: Any, where: str = "") -> tuple[list[tuple[str, Any, Any]], float]:
    """``(differences, largest)``: every place where metrics ``a`` and ``b`` differ as
    ``(dotted path, a's value, b's value)``: the same keys, strings, booleans, integers and
    nulls equal, lists of one length, floats within :data:`TOLERANCE` (NaN equals NaN);
    keys in :data:`SKIPPED_KEYS` and ending in ``_s`` (seconds) are not compared."""
    diffs: list[tuple[str, Any, Any]] = []
    largest = 0.0
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key in SKIPPED_KEYS or str(key).endswith("_s"):
                continue
            path = f"{where}.{key}" if where else str(key)
            if key not in a or key not in b:
                diffs.append((path, a.get(key, "(absent)"), b.get(key, "(absent)")))
                continue
            more, big = compare_metrics(a[key], b[key], path)
            diffs += more
            largest = max(largest, big)
        return diffs, largest
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [(where, f"{len(a)} items", f"{len(b)} items")], largest
        for i, (x, y) in enumerate(zip(a, b)):
            more, big = compare_metrics(x, y, f"{where}[{i}]")
            diffs += more
            largest = max(largest, big)
        return diffs, largest
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
    if numbers and (isinstance(a, float) or isinstance(b, float)):
        if math.isnan(a) and math.isnan(b):
            return diffs, largest
        gap = abs(a - b) if math.isfinite(a) and math.isfinite(b) else (0.0 if a == b else math.inf)
        if gap > TOLERANCE:
            diffs.append((where, a, b))
        return diffs, gap
    if type(a) is not type(b) or a != b:
        diffs.append((where, a, b))
    return diffs, largest


def differences_markdown(result: LockResult, limit: int = 30) -> str:
    """The table ``sst lock`` prints when it refuses: the first ``limit`` differences."""
    lines = ["| profile | run | metric | stored | recomputed |", "|---|---|---|---:|---:|"]
    for d in result.differences[:limit]:
        lines.append(f"| {d.profile} | {d.run_id} | {d.metric} | {d.stored!r:.40} | "
                     f"{d.recomputed!r:.40} |")
    if len(result.differences) > limit:
        lines.append(f"| ... | | {len(result.differences) - limit} more | | |")
    return "\n".join(lines)
