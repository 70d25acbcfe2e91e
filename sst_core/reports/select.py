"""The one rule that picks the best run of a cell: of a table cell, of a model's row, of the
curve a figure draws for a model. Reports and notebooks select with :func:`best_per_cell`;
figures draw the records they are given and never select.

The rule (Table 2's, so the tables keep their values):

1. only records with status ``ok`` compete;
2. the highest ``score`` wins (default :func:`m_p_score`: the largest m_p, a failure,
   m_p None, below every length);
3. a tie goes to the run whose *grid point* (its training configuration apart from the
   seed: d_state, lr, ...) has the higher sum of scores over its seeds, so a grid point
   that several seeds back beats one lucky seed;
4. a remaining tie goes to the earliest record in the order given. Callers pass records in
   their experiment grid's order, which lists d_state, then lr, then seed, each ascending
   (:func:`sst_core.experiments.paper1.table2_grid`): the lowest d_state, then the lowest
   lr, then the lowest seed wins. Where a sweep adds runs to Table 2's grid (the Figure 4
   sweep's learning rates and seeds, :func:`sst_core.experiments.beyond.analysed_runs`),
   Table 2's runs come first and so keep a tie.
"""
from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Callable, Hashable, Iterable

Record = dict[str, Any]


def m_p_score(record: Record) -> float:
    """m_p of a tracking record (training, diagnostics, spectra), -1 for a failure (None)."""
    m_p = record["metrics"]["m_p"]
    return -1 if m_p is None else m_p


def run_config(record: Record) -> dict[str, Any]:
    """The training configuration behind a record: ``config["run"]`` of an analysis record
    (diagnostics, spectra, label-free), else ``config`` itself."""
    cfg = record["config"]
    return cfg["run"] if isinstance(cfg.get("run"), dict) else cfg


def grid_point(record: Record) -> str:
    """The record's training configuration apart from the seed, as a hashable key."""
    return json.dumps({k: v for k, v in run_config(record).items() if k != "seed"},
                      sort_keys=True, default=str)


def best_per_cell(records: Iterable[Record], cell_key: Callable[[Record], Hashable],
                  score: Callable[[Record], float] | None = m_p_score) -> dict[Hashable, Record]:
    """The best ``ok`` record of each cell, ``{cell_key(record): record}``, by the module's
    rule: highest ``score``; then the highest sum of scores over the seeds of the record's
    grid point; then the earliest in the order given (the grid's order). Cells appear in
    the order of their first ``ok`` record. ``score=None``: no preference, the first
    record of each cell in the order given (its first seed)."""
    ok = [r for r in records if r["status"] == "ok"]
    if score is None:
        def score(r: Record) -> float:
            return 0.0
    s = [score(r) for r in ok]
    cells = [cell_key(r) for r in ok]
    points = [grid_point(r) for r in ok]
    seed_sum: dict[tuple, float] = defaultdict(float)
    for c, p, v in zip(cells, points, s):
        seed_sum[(c, p)] += v
    best: dict[Hashable, tuple[tuple[float, float], Record]] = {}
    for r, c, p, v in zip(ok, cells, points, s):
        key = (v, seed_sum[(c, p)])
        if c not in best or key > best[c][0]:  # strict: the earlier record keeps a tie
            best[c] = (key, r)
    return {c: r for c, (_, r) in best.items()}


def seeds_of(records: Iterable[Record], chosen: Record,
             value: Callable[[Record], Any] = lambda r: r["metrics"]["m_p"]) -> list[Any]:
    """``value`` of every ``ok`` record at ``chosen``'s grid point (its seeds), in order."""
    p = grid_point(chosen)
    return [value(r) for r in records if r["status"] == "ok" and grid_point(r) == p]

