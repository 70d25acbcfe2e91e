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
  stored runs (every changed model, every profile that has records of them) twice on this
  machine, with the code of the commit that last wrote the lock and with the code as it is
  now, each in a fresh process and a scratch folder, and compare every metric
  (:func:`compare_metrics`, to :data:`TOLERANCE`). Any difference refuses the lock and
  prints a table of them; else the lock's fingerprints are updated, a one-line diff per
  changed fingerprint for a reviewer.

The two recomputes run on one machine because a stored record need not be reproducible on
another: the C loops are built with ``-march=native``, and a run trained on another CPU
(another vector width, another float summation order) drifts from its record from the
first rounding on, whatever the code. The result also says how many of the sampled
records this machine reproduces as stored (``reproduced``), which tells whether it is the
kind of machine that made them.

This is DVC's ``dvc.lock`` and ``dvc commit``: the fingerprint is only a tripwire, the
version is the decision.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
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
    run_compute_s,
    write_bytes_atomic,
)

__all__ = ["LOCK_PATH", "TOLERANCE", "read_lock", "write_lock", "Mismatch", "check",
           "Difference", "LockResult", "lock", "locked_checkout", "recompute_in",
           "sample_records", "compare_metrics", "differences_markdown"]

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
    # (profile, run id, stored compute s, both recomputes s) of every run recomputed
    differences: list[Difference] = field(default_factory=list)
    largest_difference: float = 0.0
    reproduced: int = 0  # sampled records this machine recomputes as stored (locked code)


def lock(experiment: str, *, sample: int = 1, root: Path | None = None,
         path: Path | None = None, report: Callable[[str], None] = lambda msg: None,
         recompute_with: Callable[[str, dict[str, Any], Path], dict[str, Any]] | None = None
         ) -> LockResult:
    """``sst lock EXPERIMENT`` (the module docstring). ``sample``: runs recomputed per
    changed fingerprint key (:func:`sample_records`); ``root``: the results folder
    (default :func:`results_dir`); ``recompute_with(code, record, stored)``: the record
    recomputed with ``code`` ("locked" or "current"), default :func:`recompute_in` the
    lock's commit or this checkout."""
    get_experiment(experiment)
    if not isinstance(sample, int) or isinstance(sample, bool) or sample < 1:
        raise ValueError(f"sample={sample!r}: recompute at least one run per changed "
                         "fingerprint (an int >= 1)")
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
    chosen = list(sample_records(experiment, set(changed), sample, root))
    stored = root or results_dir()
    with contextlib.ExitStack() as stack:
        if recompute_with is None:
            locked = stack.enter_context(locked_checkout(experiment, path))
            recompute_with = lambda code, record, where: recompute_in(  # noqa: E731
                locked if code == "locked" else PROJECT, record, where)
        for profile, record in chosen:
            report(f"{experiment} ({profile}): recomputing {record['run_id']} with the "
                   f"locked and the current code (stored compute {run_compute_s(record):.0f} s)")
            start = time.perf_counter()
            before = recompute_with("locked", record, stored)
            after = recompute_with("current", record, stored)
            seconds = time.perf_counter() - start
            result.checked.append((profile, record["run_id"], run_compute_s(record), seconds))
            result.reproduced += not compare_records(record, before)[0]
            diffs, largest = compare_records(before, after)
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


PROJECT = Path(__file__).resolve().parents[2]  # the checkout this package runs from


@contextlib.contextmanager
def locked_checkout(experiment: str, path: Path | None = None) -> Iterator[Path]:
    """A temporary copy of the package at the commit that last wrote the lock (``git
    archive``): the code whose fingerprints it holds. ValueError when the lock is not committed, or
    when ``experiment``'s entry differs from the committed one (lock one change at a
    time: commit the lock first)."""
    import subprocess

    path = path or LOCK_PATH
    rel = path.resolve().relative_to(PROJECT).as_posix()

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=PROJECT, check=True, capture_output=True,
                              text=True).stdout

    commit = git("log", "-1", "--format=%H", "--", rel).strip()
    if not commit:
        raise ValueError(f"{rel} is not committed: commit it first (sst lock compares "
                         "with the code of the commit that last wrote it)")
    committed = json.loads(git("show", f"{commit}:{rel}")).get(experiment)
    if committed != read_lock(path).get(experiment):
        raise ValueError(f"{experiment}: its entry in {rel} differs from the committed one "
                         f"({commit[:12]}): commit the lock first")
    where = Path(tempfile.mkdtemp(prefix="sst-locked-"))
    try:  # the package alone, as it was at that commit
        archive = subprocess.run(["git", "archive", commit, "sst_core"], cwd=PROJECT,
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True,
                       capture_output=True)
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


# Run in a fresh process with the code of a checkout: builds the config a record stores
# (registry.config_from_dict, which every commit that can have written the lock has),
# computes it in the results folder given, and prints its record. Reads {"config",
# "threads", "root"}.
RECOMPUTE_SCRIPT = """
import json, sys
from pathlib import Path
import torch
from sst_core.experiments import registry, runs
req = json.loads(sys.stdin.read())
torch.set_num_threads(req["threads"])
record = runs.run(registry.config_from_dict(req["config"]), root=Path(req["root"]))
print()
print("RECORD " + json.dumps(record))
"""


def recompute_in(source: Path, record: dict[str, Any], stored: Path) -> dict[str, Any]:
    """``record``'s run computed again by the package in checkout ``source``, in a fresh
    process, alone, in a scratch results folder (nothing it writes lands beside the stored
    records; an analysis gets copies of its tracker's record and weights), with the torch
    thread count the record names: the new record."""
    import subprocess
    import sys

    cfg = config_from_dict(record["config"])
    threads = int((record.get("host") or {}).get("torch_threads") or 1)
    with tempfile.TemporaryDirectory(prefix="sst-lock-") as scratch:
        stage_tracker(cfg, stored, Path(scratch))
        env = {**os.environ, "PYTHONPATH": str(source), "SST_RESULTS_DIR": scratch,
               "SST_PROGRESS": "0"}
        done = subprocess.run([sys.executable, "-c", RECOMPUTE_SCRIPT], cwd=scratch, env=env,
                              input=json.dumps({"config": record["config"], "threads": threads,
                                                "root": scratch}),
                              capture_output=True, text=True)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RECORD ")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"recomputing {record['run_id']} with the code in {source} "
                           f"failed: {done.stderr.strip()[-800:]}")
    return json.loads(lines[-1][len("RECORD "):])


def sample_records(experiment: str, keys: set[str], sample: int, root: Path | None = None
                   ) -> list[tuple[str, dict[str, Any]]]:
    """The runs ``sst lock`` recomputes, as ``(profile, record)``: of the ``ok`` current
    records of ``experiment`` whose fingerprint key (model) is in ``keys`` (an analysis
    only where its tracker's weights are kept), the ``sample``
    cheapest of each key (whatever their profile), and as many more of each profile folder
    under ``root`` as it needs to have ``sample`` of its own (its cheapest), by profile
    and cost."""
    base = root or results_dir()
    found: list[tuple[str, str, float, dict[str, Any]]] = []  # (profile, key, cost, record)
    for folder in sorted(p for p in base.glob(f"*/{experiment}") if p.is_dir()):
        for file in sorted(folder.glob("*.json")):
            try:
                record = load_record(file)
            except RecordError:
                continue
            if (record["status"] == "ok" and record.get("version") == version(experiment)
                    and fingerprint_key(record) in keys and tracker_kept(record, base)):
                found.append((folder.parent.name, fingerprint_key(record),
                              run_compute_s(record), record))
    found.sort(key=lambda f: (f[2], f[0], f[3]["run_id"]))
    chosen: dict[str, tuple[str, float, dict[str, Any]]] = {}
    for key in sorted({f[1] for f in found}):
        for profile, _, cost, record in [f for f in found if f[1] == key][:sample]:
            chosen[record["run_id"]] = (profile, cost, record)
    for profile in sorted({f[0] for f in found}):
        have = sum(1 for p, _, _ in chosen.values() if p == profile)
        for _, _, cost, record in [f for f in found if f[0] == profile
                                   and f[3]["run_id"] not in chosen][:max(0, sample - have)]:
            chosen[record["run_id"]] = (profile, cost, record)
    return [(p, r) for p, _, r in sorted(chosen.values(), key=lambda c: (c[0], c[1]))]


def tracker_kept(record: dict[str, Any], root: Path) -> bool:
    """Whether an analysis record's tracker has its weights under ``root`` (only some
    trackers' weights are kept: :func:`sst_core.sweep.status.committed_files`); True for a
    record that reads no tracker."""
    run = record["config"].get("run")
    if not isinstance(run, dict):
        return True
    return artifact_path(config_from_dict(run), ".pt", root).exists()


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
    keys in :data:`SKIPPED_KEYS` and ending in ``_s`` (seconds) are not compared, nor a key
    that only ``b`` (the newer record) has: a new metric changes no stored number."""
    diffs: list[tuple[str, Any, Any]] = []
    largest = 0.0
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key in SKIPPED_KEYS or str(key).endswith("_s"):
                continue
            path = f"{where}.{key}" if where else str(key)
            if key not in b:
                diffs.append((path, a[key], "(absent)"))
                continue
            if key not in a:  # a metric the code records now and did not before: it
                continue      # changes no number the stored records hold
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
