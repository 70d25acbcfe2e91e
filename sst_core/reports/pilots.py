"""The pilot of issue 59: why some Table 2 cells never learn the training length.

:func:`pilots_60` reads the runs of :func:`sst_core.experiments.paper1.pilot_grid` (one
change at a time to the Table 2 runs of the cells none of whose runs passed length 60) beside
the Table 2 runs they vary, and says per cell and variant how far the curricula got, how many
runs trained at 60, how many met the curriculum's gate there, and the token accuracy at 60.
"""
from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from sst_core.experiments import paper1
from sst_core.reports import Table, runs_note, stored_record
from sst_core.spec.names import model_name, run_name
from sst_core.spec.profiles import Profile

# the base runs (Table 2's own) first, then the variants in paper1.PILOT_CHANGES' order
BASE = "standard"
VARIANT_NAMES = {BASE: "our Table 2 runs", "steps_x3": "step cap x3",
                 "gate_at_pass": "gate at 90%", "no_curriculum": "no curriculum",
                 "d_model_64": "d_model 64", "d_model_128": "d_model 128",
                 "lr_5e-4": "lr 5e-4", "lr_1e-4": "lr 1e-4"}


# the variants that follow from the paper's protocol (a curriculum from length 2 gated at
# 95%, its learning-rate grid, d_model 698, a step budget it does not state): only these may
# become the protocol of every cell; the 90% gate and no curriculum are diagnoses
FOLLOW_PAPER = ("steps_x3", "d_model_64", "d_model_128", "lr_5e-4", "lr_1e-4")


def _stopped_at(lengths: list[int | None]) -> str:
    """Where curricula stopped, as "16 ×2, 32 ×1" (the longest length each trained at)."""
    at = Counter(lengths)
    return ", ".join(f"{k} ×{at[k]}" for k in sorted(at, key=lambda x: -1 if x is None else x))


def pilots_60(P: Profile, root: Path | None = None) -> Table:
    """One row per pilot cell and variant (:data:`VARIANT_NAMES`), under a bold row naming
    the cell: where the curricula stopped (the longest length each run trained at, with
    the number of runs: those at 60 reached the training length), how many runs passed 60
    (met the curriculum's gate there: the ``passed_60`` checkpoint) and how many reached
    m_p >= 60 (token accuracy at least the pass threshold at 60), and the token accuracy on
    held-out words of length 60 (median and range over the runs). A variant not all of
    whose runs of the grid are stored ok says how many are (:func:`runs_note`). ``data``
    has one entry per cell and variant, with the runs stored and how many reached 60."""
    cols = ["cell / variant", "curricula stopped at", "passed 60 / m_p ≥ 60",
            "token accuracy at 60"]
    rows: list[list[Any]] = []
    data: list[dict[str, Any]] = []
    ids: list[str] = []
    for cell in paper1.PILOT_CELLS:
        model, group, depth = cell
        rows.append([f"**{model_name(model)} on {group}, L{depth}**", "", "", ""])
        bases = paper1.pilot_base(P, cell)
        by_variant: dict[str, list] = {BASE: bases}
        for base in bases:
            for name, cfg in paper1.pilot_variants(base).items():
                by_variant.setdefault(name, []).append(cfg)
        for name, cfgs in by_variant.items():
            recs = [r for r in (stored_record(c, root) for c in cfgs) if r is not None]
            ok = [r for r in recs if r["status"] == "ok"]
            ids += [r["run_id"] for r in recs]
            m = [r["metrics"] for r in ok]
            final = [x.get("final_train_length") for x in m]
            passed = sum(bool((x.get("checkpoints") or {}).get("passed_60")) for x in m)
            acc = [x["eval"]["60"]["token"] for x in m if "60" in (x.get("eval") or {})]
            learned = sum(x.get("m_p") is not None for x in m)
            row = {"model": model, "group": group, "n_layers": depth, "variant": name,
                   "n_grid": len(cfgs), "n_stored": len(recs), "n_ok": len(ok),
                   "n_failed": len(recs) - len(ok), "reached_60": final.count(60),
                   "passed_60": passed, "final_train_length": final,
                   "token_accuracy_60": acc, "m_p_at_least_60": learned}
            data.append(row)
            acc_cell = (f"{statistics.median(acc):.2f} [{min(acc):.2f}–{max(acc):.2f}]"
                        if acc else "—")
            note = runs_note({"ok": len(ok), "failed": row["n_failed"],
                              "missing": len(cfgs) - len(recs)})
            rows.append([VARIANT_NAMES[name] + note, _stopped_at(final) if ok else "—",
                         f"{passed} / {learned}" if ok else "—", acc_cell])
    note = ("One change at a time to the Table 2 runs of the cells none of whose runs passed "
            "length 60 (first state size, schedule and learning rate; every seed). Curricula "
            "stopped at: the longest length each run trained at, with the number of runs "
            "(those at 60 reached the training length); passed 60: the curriculum met its "
            "gate there; m_p ≥ 60: runs whose token accuracy at 60 is at least the pass "
            "threshold; token accuracy on held-out words of length 60, median "
            "[lowest–highest].")
    return Table("Pilots: the runs that never reach length 60", cols, rows, note, ids, data)


def pilot_numbers(table: Table) -> dict[str, Any]:
    """What the chapter says of :func:`pilots_60`'s ``table``: over the variants' runs (the
    base runs aside) and over those of :data:`FOLLOW_PAPER`, how many are stored ok, passed
    60, and reached m_p >= 60; and the row of :data:`FOLLOW_PAPER` with the highest median
    token accuracy at 60 (``best_variant``, ``best_cell``, ``best_acc``) beside its cell's
    Table 2 runs (``base_acc``; None where a median has no runs); ``learned_by``, the
    variants of :data:`FOLLOW_PAPER` that made most of a cell's runs pass 60 (with the
    cell), ``learned_cells`` how many cells they are, of ``cells``."""
    out: dict[str, Any] = {}
    for key, names in (("all", [n for n in VARIANT_NAMES if n != BASE]),
                       ("paper", list(FOLLOW_PAPER))):
        rows = [d for d in table.data or [] if d["variant"] in names]
        out[f"{key}_runs"] = sum(d["n_ok"] for d in rows)
        out[f"{key}_passed"] = sum(d["passed_60"] for d in rows)
        out[f"{key}_learned"] = sum(d["m_p_at_least_60"] for d in rows)
    rows = [d for d in table.data or [] if d["variant"] in FOLLOW_PAPER and d["token_accuracy_60"]]
    best = max(rows, key=lambda d: statistics.median(d["token_accuracy_60"]), default=None)
    base = None if best is None else next(
        (d for d in table.data if d["variant"] == BASE and d["token_accuracy_60"]
         and (d["model"], d["group"], d["n_layers"]) == (best["model"], best["group"],
                                                          best["n_layers"])), None)
    # the cells where a variant that follows the paper made most of its runs pass 60
    won = [d for d in table.data or [] if d["variant"] in FOLLOW_PAPER and d["n_ok"]
           and 2 * d["passed_60"] > d["n_ok"]]
    out["learned_by"] = "; ".join(
        f"{VARIANT_NAMES[d['variant']]} on "
        f"{run_name({'model': d['model'], 'n_layers': d['n_layers']})} on {d['group']}"
        for d in won) or "none"
    out["learned_cells"] = len({(d["model"], d["group"], d["n_layers"]) for d in won})
    out["cells"] = len({(d["model"], d["group"], d["n_layers"]) for d in table.data or []
                        if d["variant"] == BASE and d["n_grid"]})
    out |= {"best_variant": VARIANT_NAMES[best["variant"]] if best else "none",
            "best_cell": (f"{run_name({'model': best['model'], 'n_layers': best['n_layers']})}"
                          f" on {best['group']}") if best else "none",
            "best_acc": round(statistics.median(best["token_accuracy_60"]), 2) if best else None,
            "base_acc": round(statistics.median(base["token_accuracy_60"]), 2) if base else None}
    return out


def pilot_width_runs(P: Profile, root: Path | None = None
                     ) -> dict[tuple[str, str, int], dict[int, list[dict[str, Any]]]]:
    """Per pilot cell ``(model, group, n_layers)``, its ``ok`` records by d_model: the
    Table 2 runs the pilot varies (Table 2's d_model) and its d_model variants
    (``d_model_64``, ``d_model_128``), the same seeds, schedule and learning rate at every
    width. A width without an ``ok`` record is left out. The width evidence of Table 2's
    disagreements reads it beside the width ablation
    (:func:`sst_core.reports.paper1.table2_disagreements`)."""
    out: dict[tuple[str, str, int], dict[int, list[dict[str, Any]]]] = {}
    for cell in paper1.PILOT_CELLS:
        bases = paper1.pilot_base(P, cell)
        cfgs = bases + [v for b in bases for name, v in paper1.pilot_variants(b).items()
                        if paper1.PILOT_CHANGES[name] == "d_model"]
        for cfg in cfgs:
            rec = stored_record(cfg, root)
            if rec is not None and rec["status"] == "ok":
                out.setdefault(cell, {}).setdefault(cfg.d_model, []).append(rec)
    return out

