"""The run store: every number in the book comes from a record written here.

``cached_run(cfg, fn)`` returns the stored record of a config, or runs ``fn(cfg)`` and
stores ``results/<profile>/<experiment>/<run-id>.json`` with the config, the metrics,
the status (``ok``, or ``failed`` with the reason), the seed, the git commit, package
versions, the device and the wall time.

- Writes are atomic: a temporary file in the same folder, flushed and fsynced, then
  ``os.replace``. A run killed mid-write leaves the old record or none, never half a one.
- A truncated or unreadable record is reported (a ``RecordWarning``) and recomputed,
  never used.
- A run that raises :class:`RunFailed` (for example a loss that became NaN) or
  ``FloatingPointError`` is stored as failed with the reason and is not rerun unless
  ``retry_failed=True``. Other exceptions are bugs and propagate.

The results folder is ``$SST_RESULTS_DIR`` when set, else ``results/`` at the project
root (the folder holding ``_toc.yml``), else ``./results``.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterator

from .config import config_dict, config_hash

SCHEMA = 1
REQUIRED_KEYS = ("schema", "run_id", "experiment", "profile", "config", "status", "metrics",
                 "seed", "git_commit", "versions", "device", "wall_time_s")
_VERSIONED = ("sst-core", "torch", "numpy", "scipy", "sympy")


class RunFailed(Exception):
    """Raised by a run function to record the run as failed (e.g. diverged) with a reason."""


class RecordError(ValueError):
    """A record file that cannot be used: truncated, not JSON, or not a record."""


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
    env = os.environ.get("SST_RESULTS_DIR")
    if env:
        return Path(env)
    root = project_root()
    return (root / "results") if root else Path("results").resolve()


def record_path(cfg: Any, root: Path | None = None) -> Path:
    return (root or results_dir()) / cfg.profile / cfg.experiment / f"{config_hash(cfg)}.json"


def _git_commit(where: Path) -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True,
                             text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=where, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if out.returncode != 0:
        return "unknown"
    return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in _VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def current_device() -> str:
    """``cuda:<name>`` when torch is loaded and sees a GPU, else ``cpu``.

    torch is only consulted when the run already imported it, so chapters that do not
    need torch do not pay for importing it.
    """
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return f"cuda:{torch.cuda.get_device_name(0)}"
    return "cpu"


def write_atomic(path: Path, record: dict[str, Any]) -> None:
    """Write JSON to ``path`` through a temporary file and ``os.replace``."""
    text = json.dumps(record, indent=1, sort_keys=True, allow_nan=True) + "\n"
    write_bytes_atomic(path, text.encode())


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file (flushed and fsynced) and
    ``os.replace``: a reader sees the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def artifact_path(cfg: Any, suffix: str, root: Path | None = None) -> Path:
    """A file stored beside a run's record, e.g. its weights: ``<run-id><suffix>``."""
    return record_path(cfg, root).with_suffix(suffix)


def load_record(path: Path) -> dict[str, Any]:
    """Read and check one record; raise :class:`RecordError` if it cannot be used."""
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RecordError(f"{path}: unreadable ({err})") from err
    if not isinstance(record, dict):
        raise RecordError(f"{path}: not a record (top level is {type(record).__name__})")
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing:
        raise RecordError(f"{path}: missing keys {missing}")
    if record["status"] not in ("ok", "failed"):
        raise RecordError(f"{path}: status {record['status']!r} is not 'ok' or 'failed'")
    return record


def cached_run(cfg: Any, fn: Callable[[Any], dict[str, Any]], *, retry_failed: bool = False,
               root: Path | None = None) -> dict[str, Any]:
    """Return the stored record of ``cfg``, or run ``fn(cfg)`` and store its record.

    ``cfg`` is a frozen config dataclass with ``experiment``, ``profile`` and ``seed``;
    ``fn`` returns a JSON-ready dict of metrics. See the module docstring for failures.
    """
    path = record_path(cfg, root)
    wanted = config_dict(cfg)
    if path.exists():
        try:
            record = load_record(path)
            if record["config"] != wanted:
                raise RecordError(f"{path}: stored config differs from the requested one")
        except RecordError as err:
            warnings.warn(f"{err}; recomputing", RecordWarning, stacklevel=2)
        else:
            if record["status"] == "ok" or not retry_failed:
                return record

    status, reason, metrics = "ok", None, {}
    start = time.perf_counter()
    try:
        metrics = fn(cfg)
    except (RunFailed, FloatingPointError) as err:
        status, reason = "failed", f"{type(err).__name__}: {err}"
        metrics = getattr(err, "metrics", {}) or {}
    wall = time.perf_counter() - start
    if not isinstance(metrics, dict):
        raise TypeError(f"run function returned {type(metrics).__name__}; expected a dict of metrics")

    record = {
        "schema": SCHEMA,
        "run_id": config_hash(cfg),
        "experiment": cfg.experiment,
        "profile": cfg.profile,
        "config": wanted,
        "status": status,
        "reason": reason,
        "metrics": metrics,
        "seed": getattr(cfg, "seed", None),
        "git_commit": _git_commit(Path(__file__).resolve().parent),
        "versions": _versions(),
        "device": current_device(),
        "host": {"machine": platform.machine(), "cpus": os.cpu_count()},
        "wall_time_s": round(wall, 4),
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    if status == "failed":
        record["traceback_tail"] = traceback.format_exc().splitlines()[-3:]
    write_atomic(path, record)
    return record


def iter_records(experiment: str, profile: str, root: Path | None = None) -> Iterator[dict[str, Any]]:
    """Every usable record of an experiment under a profile; unusable ones are reported."""
    folder = (root or results_dir()) / profile / experiment
    for path in sorted(folder.glob("*.json")):
        try:
            yield load_record(path)
        except RecordError as err:
            warnings.warn(f"{err}; skipped", RecordWarning, stacklevel=2)
