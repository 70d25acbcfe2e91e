"""The run store: every number in the book comes from a record written here.

``cached_run(cfg, fn)`` returns the stored record of a config, or runs ``fn(cfg)`` and
stores ``results/<profile>/<experiment>/<run-id>.json`` with the config, the metrics,
the status (``ok``, or ``failed`` with the reason), the seed, the git commit, package
versions, the device, the wall time and the version of its experiment (given by the
caller: :mod:`sst_core.experiments.registry` keeps it; a record whose version is below the
current one is stale).

- Writes are atomic: a temporary file in the same folder, flushed and fsynced, then
  ``os.replace``. A run killed mid-write leaves the old record or none, never half a one.
- Every reader (this store, sweeps, ``sst status``, the reports, the book) reads
  records through :func:`load_record`, which checks each field they use
  (:data:`FIELDS`), that its schema is one this code reads (not newer than
  :data:`SCHEMA`), that it is the record of its file (its ``run_id`` is its file's name and
  the hash of its config), that its status and reason agree, that an ok record holds the
  metrics its experiment always measures (:data:`OK_METRICS`) and that the metrics every
  report reads are in range (:data:`METRICS`); a truncated, non-JSON or malformed record
  is a :class:`RecordError` naming the file and the field, reported (a ``RecordWarning``)
  and recomputed, never used.
- ``wall_time_s`` is the run's own time: a process's one-time start-up (imports, builds;
  the ``startup`` of its registry entry) is timed apart as ``startup_s``. Beside it,
  ``cpu_time_s`` is the process's CPU time over the same span (every thread; on CUDA the
  host's share only): other jobs on a shared machine inflate the wall time, not this.
- A run that raises :class:`RunFailed` (for example a loss that became NaN) or a
  numerical failure (``ArithmeticError``: ``FloatingPointError``, ``OverflowError``,
  ``ZeroDivisionError``, or a computation that did not converge, such as the memory
  function of an ill-conditioned spectrum) is stored as failed with the reason and is not
  rerun unless ``retry_failed=True``. Other exceptions are bugs and propagate.

The results folder is ``$SST_RESULTS_DIR`` when set, else ``results/`` at the project
root (the folder holding ``_toc.yml``), else ``./results``.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import tempfile
import time
import traceback
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

from sst_core.spec.configs import config_dict, config_dict_hash, config_hash
from sst_core.store.provenance import current_device, git_commit, host_info, versions

SCHEMA = 1


REQUIRED_KEYS = ("schema", "run_id", "experiment", "profile", "config", "status", "metrics",
                 "seed", "git_commit", "versions", "device", "wall_time_s")


class RunFailed(Exception):
    """Raised by a run function to record the run as failed (e.g. diverged) with a reason."""


class RecordError(ValueError):
    """A record file that cannot be used: truncated, not JSON, or not a record."""


class ResultsDirError(ValueError):
    """``$SST_RESULTS_DIR`` names something that cannot be the results folder."""


class StoreError(OSError):
    """A file of the store cannot be written (a read-only folder, a full disk, a folder
    where a record belongs): the message names the file and what it needs."""


STORE_NEEDS = ("the results folder must be a writable folder with space left: make it "
               "writable or free space, or set $SST_RESULTS_DIR to another folder")


class RecordWarning(UserWarning):
    """A stored record was unreadable and is being recomputed."""


def project_root(start: Path | None = None) -> Path | None:
    """The nearest folder at or above ``start`` (default: cwd) that holds ``_toc.yml``."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").is_file():
            return folder
    return None


def results_dir() -> Path:
    """The results folder (see the module docstring); :class:`ResultsDirError` naming the
    path when ``$SST_RESULTS_DIR`` is a file or lies under one."""
    env = os.environ.get("SST_RESULTS_DIR")
    if env:
        path = Path(env)
        for p in (path, *path.parents):
            if p.exists():
                if not p.is_dir():
                    where = "is a file" if p == path else f"lies under the file {p}"
                    raise ResultsDirError(f"SST_RESULTS_DIR={env} {where}; expected a folder "
                                          "(created when missing), or unset it for results/ "
                                          "at the project root")
                break
        return path
    root = project_root()
    return (root / "results") if root else Path("results").resolve()


@contextlib.contextmanager
def results_dir_at(path: Path | str) -> Iterator[Path]:
    """Inside the block ``$SST_RESULTS_DIR`` is ``path`` (restored after, also when the
    block sets it itself): what the block stores lands there, the files a run keeps beside
    its record included."""
    before = os.environ.get("SST_RESULTS_DIR")
    os.environ["SST_RESULTS_DIR"] = str(path)
    try:
        yield Path(path)
    finally:
        if before is None:
            os.environ.pop("SST_RESULTS_DIR", None)
        else:
            os.environ["SST_RESULTS_DIR"] = before


def record_path(cfg: Any, root: Path | None = None) -> Path:
    return (root or results_dir()) / cfg.profile / cfg.experiment / f"{config_hash(cfg)}.json"


def record_text(record: dict[str, Any]) -> str:
    """The JSON text of a record: keys sorted, one field per line, and every list of
    numbers, strings or nulls on one line (a curve of 1,000 values is then one line, not
    1,000: a third less to store and to read). ``json.loads`` gives ``record`` back."""
    nonce = os.urandom(6).hex()
    flat: list[str] = []

    def mark(o: Any) -> Any:  # a list of scalars -> a placeholder string
        if isinstance(o, dict):
            return {k: mark(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            if o and all(v is None or isinstance(v, (bool, int, float, str)) for v in o):
                flat.append(json.dumps(list(o), allow_nan=True))
                return f"{nonce}:{len(flat) - 1}"
            return [mark(v) for v in o]
        return o

    text = json.dumps(mark(record), indent=1, sort_keys=True, allow_nan=True)
    return re.sub(f'"{nonce}:([0-9]+)"', lambda m: flat[int(m.group(1))], text) + "\n"


def write_atomic(path: Path, record: dict[str, Any]) -> None:
    """Write a record's JSON (:func:`record_text`) to ``path`` through a temporary file and
    ``os.replace``."""
    write_bytes_atomic(path, record_text(record).encode())


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file (flushed and fsynced) and
    ``os.replace``: a reader sees the old file or the new one, never half of one. An
    ``OSError`` (a read-only folder, a full disk, a folder at ``path``) is a
    :class:`StoreError` naming ``path``; no temporary file is left."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError) and not isinstance(err, StoreError):
            raise _store_error(path, err) from err
        raise


def _store_error(path: Path, err: OSError) -> StoreError:
    why = err.strerror or str(err)
    if Path(path).is_dir():
        why = "a folder is where the file belongs; remove or rename it"
    return StoreError(err.errno, f"cannot write {path}: {why}; {STORE_NEEDS}")


def run_compute_s(record: dict[str, Any]) -> float:
    """The compute one stored run took, a stack's shared by its runs: its process CPU time
    where the record has one (:func:`compute_clock`), else its wall time (with, for a run
    that went on from a saved state after being stopped, the seconds of its earlier parts:
    its metrics' ``resumed``)."""
    if compute_clock(record) == "cpu":
        return record["cpu_time_s"] / record.get("stack", {}).get("size", 1)
    resumed = (record.get("metrics") or {}).get("resumed")
    earlier = resumed.get("earlier_wall_s", 0.0) if isinstance(resumed, dict) else 0.0
    return (record["wall_time_s"] + earlier) / record.get("stack", {}).get("size", 1)


def compute_clock(record: dict[str, Any]) -> str:
    """Which clock :func:`run_compute_s` reads for ``record``: ``"cpu"`` (its
    ``cpu_time_s``, the CPU seconds of the process, every thread included, while the run
    computed: what other jobs on the machine do not inflate) or ``"wall"`` (a record made
    before CPU time was stored, or a run resumed from a saved state, whose earlier parts
    have only their wall time)."""
    resumed = (record.get("metrics") or {}).get("resumed")
    return "cpu" if record.get("cpu_time_s") is not None and not resumed else "wall"


def artifact_path(cfg: Any, suffix: str, root: Path | None = None) -> Path:
    """A file stored beside a run's record, e.g. its weights: ``<run-id><suffix>``."""
    return record_path(cfg, root).with_suffix(suffix)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _optional(kind: type | tuple[type, ...]) -> Callable[[Any], bool]:
    return lambda v: v is None or (isinstance(v, kind) and not isinstance(v, bool))


def _of(kind: type | tuple[type, ...]) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, kind) and not isinstance(v, bool)


# field -> (check, what is allowed); every reader (cached_run, sweeps, sst status, the
# reports and the book) reads records through load_record, so these are all they rely on
FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "schema": (_of(int), "an int"),
    "run_id": (_of(str), "a string"),
    "experiment": (_of(str), "a string"),
    "profile": (_of(str), "a string"),
    "config": (_of(dict), "a dict (the run's config)"),
    "status": (lambda v: v in ("ok", "failed"), "'ok' or 'failed'"),
    "metrics": (_of(dict), "a dict (metric name -> value)"),
    "seed": (_optional(int), "an int or null"),
    "git_commit": (_optional(str), "a string or null"),
    "versions": (_of(dict), "a dict"),
    "device": (_of(str), "a string"),
    "wall_time_s": (lambda v: _number(v) and v == v and 0 <= v < float("inf"),
                    "a finite number of seconds >= 0"),
    # optional keys: checked when present
    "reason": (_optional(str), "a string or null"),
    "code_hash": (_optional(str), "a string or null"),  # records made before versions
    "version": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
                "an int >= 0 (the experiment's version that made it)"),
    "startup_s": (lambda v: v is None or (_number(v) and v == v and v >= 0),
                  "a number of seconds >= 0 or null"),
    "cpu_time_s": (lambda v: v is None or (_number(v) and v == v and 0 <= v < float("inf")),
                   "a finite number of seconds >= 0 or null"),
    "stack": (lambda v: isinstance(v, dict) and isinstance(v.get("size"), int)
              and not isinstance(v.get("size"), bool) and v["size"] >= 1
              and isinstance(v.get("run_ids", []), list),
              "a dict with an int size >= 1 and a list run_ids"),
}


def _finite(v: Any, low: float = -float("inf"), high: float = float("inf")) -> bool:
    return _number(v) and v == v and abs(v) != float("inf") and low <= v <= high


def _length(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


_ACCURACY = (lambda v: _finite(v, 0.0, 1.0), "a finite number in [0, 1]")
_LENGTH_OR_NULL = (lambda v: v is None or _length(v), "null or an int >= 1 (a length)")

# metric -> (check, what is allowed): the metrics reports and `sst status` read, checked
# in every record that has them (whatever its experiment)
METRICS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "m_p": _LENGTH_OR_NULL,
    "T_cross": (lambda v: v is None or _length(v) or isinstance(v, dict),
                "null, an int >= 1 (a length) or a dict of them"),
    "T_cross_1": _LENGTH_OR_NULL,
    "T_cross_sqrt": _LENGTH_OR_NULL,
    "T_cross_sqrt_1": _LENGTH_OR_NULL,
    "failure_mode": (lambda v: v in ("saturation", "climb", "none"),
                     "'saturation', 'climb' or 'none'"),
    "q_at_m_p": (lambda v: v is None or _finite(v, 0.0), "null or a finite number >= 0"),
    "test_accuracy": _ACCURACY,
    "val_accuracy": _ACCURACY,
    "best_test_accuracy": _ACCURACY,
    "final_test_accuracy": _ACCURACY,
    "chance_accuracy": _ACCURACY,
    "chance": _ACCURACY,
    "train_time_s": (lambda v: _finite(v, 0.0), "a finite number of seconds >= 0"),
    "n_params": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
                 "an int >= 0"),
    "weights_sha256": (lambda v: isinstance(v, str) and re.fullmatch("[0-9a-f]{64}", v) is not None,
                       "the sha256 of the weights file (64 hex digits)"),
}

# experiment -> the metrics an ok record of it must hold (the reports index them): a
# tracking run always measures m_p (null where it fails at every length)
OK_METRICS: dict[str, tuple[str, ...]] = {"tracking": ("m_p",)}

_RUN_ID = re.compile(r"[0-9a-f]{16}")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_record(record: Any, path: Path | str) -> dict[str, Any]:
    """``record`` if it is a usable record; else :class:`RecordError` naming ``path``,
    the field, its value and what is allowed (:data:`FIELDS`, :data:`METRICS`), a schema
    newer than :data:`SCHEMA`, a record that is not the one of its file (a file named by a
    run id holds that run's record: ``<run-id>.json``, or ``<run-id>.<created>.json`` among
    the replaced; its ``run_id`` is the hash of its config), or a status its reason
    contradicts."""
    if not isinstance(record, dict):
        raise RecordError(f"{path}: not a record (top level is {type(record).__name__}; "
                          "expected a JSON object)")
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing:
        raise RecordError(f"{path}: missing keys {missing}")
    for key, (ok, allowed) in FIELDS.items():
        if key in record and not ok(record[key]):
            raise RecordError(f"{path}: field {key} is {_shown(record[key])}; expected {allowed}")
    if not 1 <= record["schema"] <= SCHEMA:
        raise RecordError(f"{path}: schema {record['schema']} is not one this code reads "
                          f"(1..{SCHEMA}){'; it was written by newer code: update sst_core' if record['schema'] > SCHEMA else ''}")
    run_id = record["run_id"]
    name = Path(path).name.split(".")[0]
    if _RUN_ID.fullmatch(name) and name != run_id:
        raise RecordError(f"{path}: holds the record of run {run_id}, not of run {name} "
                          "(its file name): a record copied onto another run's file")
    if config_dict_hash(record["config"]) != run_id:
        raise RecordError(f"{path}: run_id {run_id} is not the hash of its config "
                          f"({config_dict_hash(record['config'])}): the config was edited")
    for key in ("experiment", "profile"):
        if key in record["config"] and record["config"][key] != record[key]:
            raise RecordError(f"{path}: field {key} is {_shown(record[key])}, its config's "
                              f"is {_shown(record['config'][key])}")
    reason = record.get("reason")
    if record["status"] == "ok" and reason is not None:
        raise RecordError(f"{path}: status 'ok' with a failure reason {_shown(reason)}; "
                          "expected reason null for an ok run")
    if record["status"] == "failed" and not reason:
        raise RecordError(f"{path}: status 'failed' without a reason; expected the reason "
                          "the run failed")
    needed = OK_METRICS.get(record["experiment"], ()) if record["status"] == "ok" else ()
    lacking = [k for k in needed if k not in record["metrics"]]
    if lacking:
        raise RecordError(f"{path}: status 'ok' without the metric {lacking[0]}; an ok "
                          f"{record['experiment']} record holds {', '.join(needed)}")
    for key, (ok, allowed) in METRICS.items():
        if key in record["metrics"] and not ok(record["metrics"][key]):
            raise RecordError(f"{path}: metric {key} is {_shown(record['metrics'][key])}; "
                              f"expected {allowed}")
    return record


def load_record(path: Path) -> dict[str, Any]:
    """Read and check one record (:func:`check_record`); raise :class:`RecordError`
    naming the file and the field if it cannot be used. The one reader of records: the
    store, sweeps, ``sst status``, the reports and the book all read through it."""
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RecordError(f"{path}: unreadable ({err})") from err
    return check_record(record, path)


def cached_run(cfg: Any, fn: Callable[[Any], dict[str, Any]], *, retry_failed: bool = False,
               retry_stale: bool = False, root: Path | None = None,
               version: int | None = None,
               artifacts: tuple[str, ...] = (),
               startup: Callable[[], None] | None = None) -> dict[str, Any]:
    """Return the stored record of ``cfg``, or run ``fn(cfg)`` and store its record.

    ``cfg`` is a frozen config dataclass with ``experiment``, ``profile`` and ``seed``;
    ``fn`` returns a JSON-ready dict of metrics. See the module docstring for failures.
    ``version``: the current version of the run's experiment, stored in its record;
    ``retry_stale``: also recompute a record whose version is below it (:func:`is_stale`);
    ``artifacts``: suffixes of files (e.g. ``".pt"``, the weights) an ``ok`` record is
    unusable without (:func:`artifact_path`): the run is computed again when one is
    missing; ``startup()``: the one-time start-up of a process before its first run
    (imports, builds), called before the run is timed so that ``wall_time_s`` measures the
    run only; its seconds are stored as ``startup_s``.
    """
    path = record_path(cfg, root)
    wanted = config_dict(cfg)
    if path.exists() and not path.is_dir():
        try:
            record = load_record(path)
            if record["config"] != wanted:
                raise RecordError(f"{path}: stored config differs from the requested one")
            _check_artifacts(cfg, record, artifacts, root)
        except RecordError as err:
            warnings.warn(f"{err}; recomputing", RecordWarning, stacklevel=2)
        else:
            if (record["status"] == "ok" or not retry_failed) and not (
                    retry_stale and is_stale(record, version)):
                return record

    check_writable(path)
    status, reason, metrics = "ok", None, {}
    extra = None
    if startup is not None:
        start = time.perf_counter()
        startup()
        extra = {"startup_s": round(time.perf_counter() - start, 4)}
    start, cpu_start = time.perf_counter(), time.process_time()
    tb = None
    try:
        metrics = fn(cfg)
    except (RunFailed, ArithmeticError) as err:
        status, reason = "failed", f"{type(err).__name__}: {err}"
        metrics = getattr(err, "metrics", {}) or {}
        tb = traceback.format_exc().splitlines()[-3:]
    return store_record(cfg, status, reason, metrics, time.perf_counter() - start,
                        traceback_tail=tb, root=root, extra=extra, version=version,
                        cpu=time.process_time() - cpu_start)


def check_writable(path: Path) -> None:
    """:class:`StoreError` unless a record can be written at ``path``: called before a
    run computes, so that an hour of training does not end at a folder where its record
    belongs, or a results folder it cannot write (a full disk shows only when written)."""
    if path.is_dir():
        raise StoreError(errno.EISDIR, f"cannot write {path}: a folder is where the run's "
                                       "record belongs; remove or rename it")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _store_error(path.parent, err) from err
    if not os.access(path.parent, os.W_OK):
        raise StoreError(errno.EACCES, f"cannot write {path}: its folder is not writable; "
                                       f"{STORE_NEEDS}")


# what a run keeps beside its record (the weights): removed when its record cannot be
# written, so that no file outlives the record that vouches for it
RUN_FILES = (".pt",)


def is_stale(record: dict[str, Any], version: int | None) -> bool:
    """Whether ``record`` was made by an older version than ``version`` (its own
    ``version``, 0 when it has none); never when ``version`` is None."""
    return version is not None and record.get("version", 0) < version


def _check_artifacts(cfg: Any, record: dict[str, Any], artifacts: tuple[str, ...],
                     root: Path | None) -> None:
    if record["status"] != "ok":
        return
    for suffix in artifacts:
        if not artifact_path(cfg, suffix, root).exists():
            raise RecordError(f"{record_path(cfg, root)}: its {suffix} file "
                              f"{artifact_path(cfg, suffix, root)} is missing")


def record_problem(cfg: Any, root: Path | None = None) -> str | None:
    """Why the stored record file of ``cfg`` cannot be used (the :class:`RecordError`
    message, naming the file and the field), or None: no file, or a usable one."""
    path = record_path(cfg, root)
    if not path.exists():
        return None
    try:
        load_record(path)
    except RecordError as err:
        return str(err)
    return None


def needs_run(cfg: Any, *, retry_failed: bool = False, root: Path | None = None,
              version: int | None = None, artifacts: tuple[str, ...] = ()) -> bool:
    """Whether :func:`cached_run` would compute ``cfg`` (no usable stored record); with
    ``version``, also a record made by an older version (``retry_stale``); with
    ``artifacts``, also an ``ok`` record missing one of those files."""
    path = record_path(cfg, root)
    if not path.exists():
        return True
    try:
        record = load_record(path)
        _check_artifacts(cfg, record, artifacts, root)
    except RecordError:
        return True
    if record["config"] != config_dict(cfg):
        return True
    if is_stale(record, version):
        return True
    return record["status"] != "ok" and retry_failed


def store_record(cfg: Any, status: str, reason: str | None, metrics: Any, wall: float, *,
                 traceback_tail: list[str] | None = None, extra: dict[str, Any] | None = None,
                 root: Path | None = None, version: int | None = None,
                 cpu: float | None = None) -> dict[str, Any]:
    """Write the record of ``cfg`` (see the module docstring) and return it.

    ``wall``: seconds the computation took; ``cpu``: CPU seconds of the process meanwhile
    (``time.process_time``, every thread), stored as ``cpu_time_s`` when given;
    ``extra``: more provenance keys (e.g. the stack a run was trained in); ``version``: its
    experiment's version (0 when None: a record no experiment vouches for is stale).
    """
    if not isinstance(metrics, dict):
        raise TypeError(f"run function returned {type(metrics).__name__}; expected a dict of metrics")
    config = config_dict(cfg)
    record = {
        "schema": SCHEMA,
        "run_id": config_hash(cfg),
        "experiment": cfg.experiment,
        "profile": cfg.profile,
        "config": config,
        "status": status,
        "reason": reason,
        "metrics": metrics,
        "seed": getattr(cfg, "seed", None),
        "git_commit": git_commit(Path(__file__).resolve().parent),
        "versions": versions(),
        "device": current_device(),
        "host": host_info(),
        "version": 0 if version is None else version,
        "wall_time_s": round(wall, 4),
        **({} if cpu is None else {"cpu_time_s": round(cpu, 4)}),
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **(extra or {}),
    }
    if status == "failed":
        record["traceback_tail"] = traceback_tail or []
    try:
        write_atomic(record_path(cfg, root), record)
    except StoreError as err:
        removed = []
        for suffix in RUN_FILES:
            other = artifact_path(cfg, suffix, root)
            if other.is_file():
                other.unlink()
                removed.append(str(other))
        if removed:
            raise StoreError(err.errno, f"{err.strerror}; removed the run's "
                                        f"{', '.join(removed)} with it (no file is kept "
                                        "without its record)") from err
        raise
    return record


def iter_records(experiment: str, profile: str, root: Path | None = None) -> Iterator[dict[str, Any]]:
    """Every usable record of an experiment under a profile; unusable ones are reported."""
    folder = (root or results_dir()) / profile / experiment
    for path in sorted(folder.glob("*.json")):
        try:
            yield load_record(path)
        except RecordError as err:
            warnings.warn(f"{err}; skipped", RecordWarning, stacklevel=2)
