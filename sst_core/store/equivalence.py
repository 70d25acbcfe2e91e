"""Code versions shown to give the same results: the ledger that keeps records current
across a change that alters no number they hold.

A record is stale once the code its experiment depends on has changed
(:func:`sst_core.experiments.registry.is_stale_record`: another code hash). Some changes
alter no number a run computes (a run that can now resume from a saved state, say), and
proving that by recomputing every record costs the whole sweep again. ``sst verify-stale``
(:mod:`sst_core.sweep.verify`) instead recomputes a sample of the records that one earlier
version made, under the current code, and compares every metric (:func:`compare_metrics`).
Only when all of them agree does it add an entry to the ledger,
``<results>/code_equivalence.json``::

    {"experiment": "lra", "from": "<hash the records hold>", "to": "<current hash>",
     "profile": "standard", "tolerance": 1.5e-06, "runs": [{"run_id": ..., "compute_s": ...,
     "largest_difference": ...}, ...], "records": <how many the group held>,
     "git_commit": ..., "created_utc": ..., "command": ...}

and from then on a record of that experiment and profile made by ``from`` counts as made by
``to`` (:func:`same_code`). An entry holds for its profile only: records of one code can
still differ between profiles in what a check sees (the tanh RNN diagnostics that
``standard`` stored on 2026-12-02 are not reproduced to their fifth digit by that code today,
while its ``quick`` ones are), so a check passed on ``quick`` says nothing about ``standard``. Entries do not chain: when the code changes again, ``to`` is no longer
the current hash, and the records are stale again until a new check (of records of either
hash) says otherwise. The book says how many records of a chapter rest on such an entry
and which runs were recomputed to make it (:func:`sst_core.reports.stale_text`).

One other kind of entry (``"evidence": "same build"``, no runs) is written by ``sst
verify-stale --same-build`` for the one change that some CPUs never compile (the selective
scan's block for targets without AVX-512): it shows that this block is the only difference
between the records' code and the current one, and that the records were made on CPUs with
AVX-512, where the library built is the same (:func:`sst_core.sweep.verify.verify_same_build`).

Agreement (:func:`compare_metrics`): the same keys, strings, booleans, integers and nulls
equal, lists of one length, and floats within :data:`TOLERANCE` (one unit in the sixth
decimal, the rounding records keep: a value computed again in another process can land on
the other side of a rounding boundary). Timings are not compared: keys ending in ``_s``
(seconds) and ``resumed``.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Iterator

from sst_core.store.records import results_dir, write_bytes_atomic

__all__ = ["LEDGER_NAME", "TOLERANCE", "ledger_path", "load_ledger", "add_entry",
           "same_code", "entry_for", "compare_metrics", "is_timing_key"]

LEDGER_NAME = "code_equivalence.json"
# one unit in the sixth decimal, the rounding records keep, with room for the float error
# of the difference itself (0.992874 - 0.992873 = 1.000000000001e-06)
TOLERANCE = 1.5e-6

_cache: dict[Path, tuple[float, list[dict[str, Any]]]] = {}


def ledger_path(root: Path | None = None) -> Path:
    return (root or results_dir()) / LEDGER_NAME


# what names an entry: the records it makes current are those of this experiment and
# profile that hold the code hash ``from`` while the current one is ``to``
KEYS = ("experiment", "from", "to", "profile")


def load_ledger(root: Path | None = None) -> list[dict[str, Any]]:
    """The ledger's entries (none when the file does not exist); re-read when it changes.
    A ledger that is not a JSON list of entries with ``experiment``, ``from``, ``to`` and
    ``profile`` raises ValueError naming the file: equivalences must never be guessed."""
    path = ledger_path(root)
    try:
        mtime = os.stat(path).st_mtime
    except FileNotFoundError:
        return []
    cached = _cache.get(path)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    try:
        entries = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not JSON ({err})") from None
    if not isinstance(entries, list) or not all(
            isinstance(e, dict) and all(isinstance(e.get(k), str) for k in KEYS) for e in entries):
        raise ValueError(f"{path}: expected a list of entries, each with the strings "
                         + ", ".join(repr(k) for k in KEYS))
    _cache[path] = (mtime, entries)
    return entries


def entry_for(record: dict[str, Any], current: str | None,
              root: Path | None = None) -> dict[str, Any] | None:
    """The ledger entry that makes ``record`` (of another code hash) count as made by the
    ``current`` code, or None."""
    made_by = record.get("code_hash")
    if current is None or made_by is None or made_by == current:
        return None
    for entry in load_ledger(root):
        if (entry["experiment"] == record.get("experiment") and entry["from"] == made_by
                and entry["to"] == current and entry.get("profile") == record.get("profile")):
            return entry
    return None


def same_code(record: dict[str, Any], current: str | None, root: Path | None = None) -> bool:
    """Whether ``record`` was made by the ``current`` code: the same code hash, or one the
    ledger shows to give the same results. False for a record without a code hash (made
    before records kept one); True when ``current`` is unknown (nothing to compare)."""
    if current is None:
        return True
    return record.get("code_hash") == current or entry_for(record, current, root) is not None


def add_entry(entry: dict[str, Any], root: Path | None = None) -> Path:
    """Append ``entry`` to the ledger (written atomically); an entry for the same
    experiment, ``from``, ``to`` and profile is replaced. Returns the ledger's path."""
    for key in KEYS:
        if not isinstance(entry.get(key), str):
            raise ValueError(f"a ledger entry needs the string {key!r}, got {entry.get(key)!r}")
    if entry["from"] == entry["to"]:
        raise ValueError(f"a ledger entry maps one code hash to another, got {entry['from']!r} twice")
    path = ledger_path(root)
    entries = [e for e in load_ledger(root) if any(e[k] != entry[k] for k in KEYS)]
    entries.append(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, (json.dumps(entries, indent=1, sort_keys=True) + "\n").encode())
    _cache.pop(path, None)
    return path


def is_timing_key(key: str) -> bool:
    """Seconds (``*_s``) and the resume note: what a run computed again may change."""
    return key.endswith("_s") or key == "resumed"


def compare_metrics(old: Any, new: Any, path: str = "metrics") -> tuple[list[str], float]:
    """Where ``new`` disagrees with ``old`` (see the module docstring), as readable lines,
    and the largest difference between floats that agree. Empty list: they agree."""
    problems: list[str] = []
    largest = 0.0
    for where, a, b in _pairs(old, new, path, problems):
        if _is_float_pair(a, b):
            if math.isnan(a) and math.isnan(b):
                continue
            diff = abs(a - b)
            if not diff <= TOLERANCE:
                problems.append(f"{where}: {a!r} -> {b!r} (differs by {diff:.3g} > {TOLERANCE})")
            else:
                largest = max(largest, diff)
        elif type(a) is not type(b) or a != b:
            problems.append(f"{where}: {_short(a)} -> {_short(b)}")
    return problems, largest


def _is_float_pair(a: Any, b: Any) -> bool:
    numbers = (int, float)
    return (isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool)
            and not isinstance(b, bool) and (isinstance(a, float) or isinstance(b, float)))


def _pairs(a: Any, b: Any, where: str, problems: list[str]) -> Iterator[tuple[str, Any, Any]]:
    """The leaves of ``a`` and ``b`` side by side; structural differences go to ``problems``."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if is_timing_key(key):
                continue
            if key not in a or key not in b:
                problems.append(f"{where}.{key}: only in the {'old' if key in a else 'new'} metrics")
                continue
            yield from _pairs(a[key], b[key], f"{where}.{key}", problems)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            problems.append(f"{where}: {len(a)} values -> {len(b)}")
            return
        for i, (x, y) in enumerate(zip(a, b)):
            yield from _pairs(x, y, f"{where}[{i}]", problems)
    else:
        yield where, a, b


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
