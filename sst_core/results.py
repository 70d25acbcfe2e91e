"""The run store: every number in the book comes from a record written here.

``cached_run(cfg, fn)`` returns the stored record of a config, or runs ``fn(cfg)`` and
stores ``results/<profile>/<experiment>/<run-id>.json`` with the config, the metrics,
the status (``ok``, or ``failed`` with the reason), the seed, the git commit, package
versions, the device, the wall time and the fingerprint of the code the run depends on
(:func:`code_hash`, which tells stale records).

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


# What each experiment's results depend on: the functions its runs call, as dotted names
# (imported only when a hash is computed). A record stores the fingerprint of the code
# reachable from them (sst_core.codeversion), and `sst status` flags records whose code
# has changed since (stale). MODELS stands for the models of the registry, which builds
# them by name (see code_hash).
MODELS = "sst_core.models.registry.REGISTRY"
_TRACKING = ("sst_core.train.train_tracking", "sst_core.stacked.train_tracking_stacked", MODELS)
CODE_DEPS: dict[str, tuple[str, ...]] = {
    "groups_order_sensitivity": ("sst_core.experiments.order_sensitivity",),
    "tracking": _TRACKING,
    "tracking_diagnostics": _TRACKING + ("sst_core.analysis.diagnose",),
    "tracking_label_free": _TRACKING + ("sst_core.label_free.run_label_free",),
    "tracking_spectra": _TRACKING + ("sst_core.spectra.run_spectra",),
    "lra": ("sst_core.train_lra.train_lra",),
}
# Not followed: the analyses fetch the record of the run they analyse through it, and that
# record has a code hash of its own.
_NOT_FOLLOWED = ("sst_core.experiments.run",)
_code_hashes: dict[tuple[str, str | None], str] = {}


def code_hash(experiment: str, config: dict[str, Any] | None = None) -> str | None:
    """The fingerprint of the code ``experiment``'s runs depend on (:data:`CODE_DEPS`,
    :func:`sst_core.codeversion.fingerprint`); None for an experiment without entry points.

    The registry builds a model from its name, out of the walk's sight, so :data:`MODELS`
    adds the builders themselves: with the ``config`` of a run (a :func:`config_dict`),
    only the model it trains or analyses and its registry entry, so that adding or
    changing another model leaves its hash alone; without, every registered model.
    Cached per process.
    """
    if experiment not in CODE_DEPS:
        return None
    model = _model_of(config) if MODELS in CODE_DEPS[experiment] else None
    if (experiment, model) not in _code_hashes:
        from .codeversion import fingerprint

        points, scope = _code_scope(experiment, model)
        _code_hashes[experiment, model] = fingerprint(points, **scope)
    return _code_hashes[experiment, model]


def _code_scope(experiment: str, model: str | None) -> tuple[list[Any], dict[str, Any]]:
    """The entry points of :func:`code_hash` and the walk's other arguments (also for
    :func:`sst_core.codeversion.reachable`, to read what a hash covers)."""
    from .codeversion import resolve

    deps = CODE_DEPS[experiment]
    points = [resolve(p) for p in deps if p != MODELS]
    narrow: dict[str, list[str]] = {}
    if MODELS in deps:
        from .models.registry import REGISTRY

        names = [model] if model is not None else list(REGISTRY)
        for name in names:
            if name in REGISTRY:  # "module:function" inside sst_core.models
                module, func = REGISTRY[name].target.split(":")
                points.append(resolve(f"sst_core.models.{module}.{func}"))
        narrow = {MODELS: names}
    return points, {"exclude": _NOT_FOLLOWED, "narrow": narrow}


def _model_of(config: dict[str, Any] | None) -> str | None:
    """The registered model a config trains (``model``) or analyses (``run.model``)."""
    if not config:
        return None
    run = config.get("run")
    return (run if isinstance(run, dict) else config).get("model")


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
               retry_stale: bool = False, root: Path | None = None) -> dict[str, Any]:
    """Return the stored record of ``cfg``, or run ``fn(cfg)`` and store its record.

    ``cfg`` is a frozen config dataclass with ``experiment``, ``profile`` and ``seed``;
    ``fn`` returns a JSON-ready dict of metrics. See the module docstring for failures.
    ``retry_stale``: also recompute a record made by other code (:func:`is_stale_record`).
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
            if (record["status"] == "ok" or not retry_failed) and not (
                    retry_stale and is_stale_record(record)):
                return record

    status, reason, metrics = "ok", None, {}
    start = time.perf_counter()
    tb = None
    try:
        metrics = fn(cfg)
    except (RunFailed, FloatingPointError) as err:
        status, reason = "failed", f"{type(err).__name__}: {err}"
        metrics = getattr(err, "metrics", {}) or {}
        tb = traceback.format_exc().splitlines()[-3:]
    return store_record(cfg, status, reason, metrics, time.perf_counter() - start,
                        traceback_tail=tb, root=root)


def _host() -> dict[str, Any]:
    host = {"machine": platform.machine(), "cpus": os.cpu_count()}
    if "torch" in sys.modules:  # threads change float summation order, hence results
        host["torch_threads"] = sys.modules["torch"].get_num_threads()
    native = sys.modules.get("sst_core.ops.native")
    if native is not None:  # the scan's C loops round differently from its torch loops
        host["scan_loops"] = "C" if native.loaded() else "torch"
    return host


def is_stale_record(record: dict[str, Any]) -> bool:
    """Whether a record was made by another version of the code it depends on
    (:func:`code_hash`), or before records kept a code hash; never for an experiment
    without entry points."""
    current = code_hash(record["experiment"], record["config"])
    return current is not None and record.get("code_hash") != current


def needs_run(cfg: Any, *, retry_failed: bool = False, retry_stale: bool = False,
              root: Path | None = None) -> bool:
    """Whether :func:`cached_run` would compute ``cfg`` (no usable stored record)."""
    path = record_path(cfg, root)
    if not path.exists():
        return True
    try:
        record = load_record(path)
    except RecordError:
        return True
    if record["config"] != config_dict(cfg):
        return True
    if retry_stale and is_stale_record(record):
        return True
    return record["status"] != "ok" and retry_failed


def store_record(cfg: Any, status: str, reason: str | None, metrics: Any, wall: float, *,
                 traceback_tail: list[str] | None = None, extra: dict[str, Any] | None = None,
                 root: Path | None = None) -> dict[str, Any]:
    """Write the record of ``cfg`` (see the module docstring) and return it.

    ``wall``: seconds the computation took; ``extra``: more provenance keys (e.g. the
    stack a run was trained in).
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
        "git_commit": _git_commit(Path(__file__).resolve().parent),
        "versions": _versions(),
        "device": current_device(),
        "host": _host(),
        "code_hash": code_hash(cfg.experiment, config),
        "wall_time_s": round(wall, 4),
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **(extra or {}),
    }
    if status == "failed":
        record["traceback_tail"] = traceback_tail or []
    write_atomic(record_path(cfg, root), record)
    return record


def iter_records(experiment: str, profile: str, root: Path | None = None) -> Iterator[dict[str, Any]]:
    """Every usable record of an experiment under a profile; unusable ones are reported."""
    folder = (root or results_dir()) / profile / experiment
    for path in sorted(folder.glob("*.json")):
        try:
            yield load_record(path)
        except RecordError as err:
            warnings.warn(f"{err}; skipped", RecordWarning, stacklevel=2)
