"""One-off migration (2026-12-06): write the ``version`` field into every stored record.

Until commit a411921 a record counted as current when the code fingerprint it held
(``code_hash``) was the one the code computed for its experiment and model, or when a
ledger entry (``results/code_equivalence.json``) mapped its fingerprint to that one for
its experiment and profile. Records now hold their experiment's version instead
(:mod:`sst_core.experiments.versions`). This script gives every record that counted as
current by that rule the experiment's current version, and every other one version 0
(stale), changing nothing else in the file: it checks that the record read back equals
the one before but for the new field.

Inputs, both from the code as it was at a411921 (the decision is that code's):

- ``--hashes FILE``: experiment -> {model or "*": the fingerprint that code computed}
  (``sst_core.experiments.registry.code_hash(experiment, {"model": model})`` for the
  experiments whose runs build a model by name, ``code_hash(experiment)`` for the others),
  written by running, in a checkout of a411921::

      import json; from sst_core.experiments import registry as R
      from sst_core.models.registry import REGISTRY
      print(json.dumps({n: ({m: R.code_hash(n, {"model": m}) for m in REGISTRY}
                            if R.MODELS in e.code_deps else {"*": R.code_hash(n)})
                        for n, e in R.EXPERIMENTS.items()}))

- ``--ledger FILE``: that ledger (``git show a411921:results/code_equivalence.json``).

Usage: ``python scripts/migrate_record_versions.py --hashes H --ledger L [--root results]
[--dry-run]``. Records that already hold a version are left alone, so running it twice
changes nothing.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from sst_core.experiments.registry import EXPERIMENTS, fingerprint_key
from sst_core.store.records import record_text, write_bytes_atomic

PROFILES = ("paper", "standard", "quick", "smoke")


def counted_current(record: dict[str, Any], hashes: dict[str, dict[str, str]],
                    ledger: list[dict[str, Any]]) -> bool:
    """Whether the old rule counted ``record`` as made by the current code."""
    experiment = record.get("experiment")
    made_by = record.get("code_hash")
    if experiment not in hashes or experiment not in EXPERIMENTS or made_by is None:
        return False
    current = hashes[experiment].get(fingerprint_key(record))
    if current is None:
        return False
    if made_by == current:
        return True
    return any(e.get("experiment") == experiment and e.get("from") == made_by
               and e.get("to") == current and e.get("profile") == record.get("profile")
               for e in ledger)


def record_files(root: Path) -> list[Path]:
    """Every run record under ``root``'s profile folders (replaced ones included)."""
    return sorted(p for profile in PROFILES for p in (root / profile).rglob("*.json"))


def migrate(root: Path, hashes: dict[str, dict[str, str]], ledger: list[dict[str, Any]],
            dry_run: bool = False) -> Counter:
    """Write the version into every record under ``root``; counts of what was done."""
    counts: Counter = Counter()
    for path in record_files(root):
        text = path.read_text()
        record = json.loads(text)
        if not isinstance(record, dict) or "experiment" not in record:
            counts["not a record"] += 1
            continue
        if "version" in record:
            counts["already versioned"] += 1
            continue
        current = counted_current(record, hashes, ledger)
        version = EXPERIMENTS[record["experiment"]].version if current else 0
        new = dict(record, version=version)
        new_text = record_text(new)
        back = json.loads(new_text)
        if back.pop("version") != version or back != record:
            raise RuntimeError(f"{path}: the record would change beyond its version")
        if not dry_run:
            write_bytes_atomic(path, new_text.encode())
        counts["current" if current else "stale"] += 1
        counts[f"{record.get('profile')} {'current' if current else 'stale'}"] += 1
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hashes", type=Path, required=True)
    parser.add_argument("--ledger", type=Path, required=True)
    parser.add_argument("--root", type=Path, default=Path("results"))
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    hashes = json.loads(args.hashes.read_text())
    ledger = json.loads(args.ledger.read_text())
    counts = migrate(args.root, hashes, ledger, args.dry_run)
    for key, n in sorted(counts.items()):
        print(f"{key}: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
