"""Which models a sweep trains in stacks: the ones a benchmark measured faster stacked.

A stack (:mod:`sst_core.training.stacked`) trains K runs of one model as one computation.
Whether that beats K runs one after the other depends on the model and on the machine:
it removes per-operation overhead but runs K times larger tensors through the same
kernels, which for some models costs more than the overhead it saves. ``sst bench``
measures it where the sweep runs, in one row per Table 2 model and width
(``stack_or_not_<model>``: the sweep's one thread, the ``standard`` profile's sizes and
K, a stacked step against K sequential ones; ``stack_or_not_<model>_d<width>``: the same
at the width of the recompute, ``track_d_model_wide``; :mod:`sst_core.bench.cases`), and
stores it in its record under ``results/bench/``. Those records are the data the sweep
decides from (:func:`unstacked_models`): per model and d_model, the newest record of the
sweep's device (CPU or CUDA) that has a row of that model at that width; runs of that
model and width are stacked when that row's ratio (stacked time per model / sequential
time per model) is below 1, and trained one run at a time otherwise
(:func:`trains_alone`). A model and width no record has a row for is stacked (the
behaviour before these rows existed).

An explicit ``--stack`` (``sst sweep --stack K``) stacks every model at K, as before.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROW_PREFIX = "stack_or_not_"  # the rows' names: ROW_PREFIX + model
BENCH_DIR = "bench"  # results/bench/ (sst_core.bench.records.RECORD_DIR; a test ties them)


def row_key(entry: dict[str, Any]) -> tuple[str, int | None]:
    """A row's (model, d_model): its ``sweep_model`` (older rows: the name after
    ROW_PREFIX) and the d_model of its sizes (None where a row has none)."""
    model = entry.get("sweep_model") or str(entry["name"])[len(ROW_PREFIX):]
    d_model = (entry.get("sizes") or {}).get("d_model")
    return str(model), None if d_model is None else int(d_model)


def stacking_rows(device: str = "cpu", root: Path | None = None
                  ) -> dict[tuple[str, int | None], dict[str, Any]]:
    """Per (model, d_model), the newest ``stack_or_not_*`` row among the benchmark
    records of ``device`` ("cpu" or "cuda") under ``root`` (default: the results folder):
    :func:`newest_rows` of those records. A file that is not JSON is skipped (the
    benchmark chapter names it)."""
    from sst_core.store.records import results_dir

    folder = (Path(root) if root else results_dir()) / BENCH_DIR
    records = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            record = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(record, dict) and record.get("experiment") == "bench":
            records.append((path.name, record))
    return newest_rows(records, device)


def newest_rows(records: list[tuple[str, dict[str, Any]]], device: str = "cpu"
                ) -> dict[tuple[str, int | None], dict[str, Any]]:
    """Per (model, d_model) (:func:`row_key`), the newest ``stack_or_not_*`` row among
    the benchmark ``records`` (``(file name, record)`` pairs) made on ``device``, a whole
    benchmark or a few rows of it alike: its ``ratio`` and the record it comes from
    (``record``: the file name, ``created_utc``)."""
    found: list[tuple[str, str, dict[str, Any]]] = []
    for name, record in records:
        if str(record.get("device", "")).split(":")[0] != device:
            continue
        for e in record.get("entries") or ():
            if str(e.get("name", "")).startswith(ROW_PREFIX) and e.get("ratio") is not None:
                found.append((str(record.get("created_utc", "")), name, e))
    out: dict[tuple[str, int | None], dict[str, Any]] = {}
    for made, name, e in sorted(found, key=lambda f: f[0]):  # the newest last, so it wins
        out[row_key(e)] = {"ratio": float(e["ratio"]), "record": name, "created_utc": made}
    return out


def unstacked_models(device: str = "cpu", root: Path | None = None
                     ) -> frozenset[tuple[str, int | None]]:
    """The (model, d_model) pairs the sweep trains one run at a time on ``device``: those
    whose newest row (:func:`stacking_rows`) says a stacked step costs at least as much
    per model as a sequential one (ratio >= 1). Empty without rows: every model stacks.
    A pair with d_model None (a row that names no width) holds at every width."""
    return frozenset(key for key, row in stacking_rows(device, root).items()
                     if row["ratio"] >= 1)


def trains_alone(cfg: Any, unstacked: frozenset[tuple[str, int | None]]) -> bool:
    """Whether the tracking config ``cfg`` trains one run at a time under ``unstacked``
    (:func:`unstacked_models`): a row measured at its model and d_model says so. A width
    no row measured stacks."""
    model, d_model = getattr(cfg, "model", None), getattr(cfg, "d_model", None)
    return (model, d_model) in unstacked or (model, None) in unstacked
