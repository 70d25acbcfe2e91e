"""The pilot table of the runs that never reach length 60, from constructed records."""
from dataclasses import replace

import pytest

from sst_core.experiments import paper1
from sst_core.reports import get_report
from sst_core.reports.pilots import VARIANT_NAMES, pilot_numbers, pilots_60
from sst_core.spec import profiles
from sst_core.store.records import RunFailed, cached_run, record_path


@pytest.fixture
def P():
    return replace(profiles.PROFILES["smoke"], name="smoke", track_seeds=(0, 1), track_depths=(1, 2))


def fake(final, passed, acc60, m_p=None, fail=False):
    def fn(cfg):
        if fail:
            raise RunFailed("loss became nan at step 3")
        cp = {"passed_60": {"m_p": m_p, "step": 10} if passed else None, "heldout": None,
              "end": {"m_p": m_p, "step": 20}}
        return {"m_p": m_p, "final_train_length": final, "checkpoints": cp,
                "eval": {"60": {"token": acc60, "sequence": 0.0, "final": acc60}}}
    return fn


def test_each_cell_and_variant_counts_what_its_runs_did(tmp_path, P):
    cell = paper1.PILOT_CELLS[0]
    bases = paper1.pilot_base(P, cell)
    assert [b.seed for b in bases] == [0, 1]
    # Table 2's runs: both stopped at 32; step cap x3: one reached 60 and passed, one is at
    # 16; no curriculum: one failed, one trained at 60 with m_p 60 but never met its gate
    cached_run(bases[0], fake(32, False, 0.6), root=tmp_path)
    cached_run(bases[1], fake(32, False, 0.5), root=tmp_path)
    x3 = [paper1.pilot_variants(b)["steps_x3"] for b in bases]
    cached_run(x3[0], fake(60, True, 0.97, m_p=100), root=tmp_path)
    cached_run(x3[1], fake(16, False, 0.4), root=tmp_path)
    nc = [paper1.pilot_variants(b)["no_curriculum"] for b in bases]
    cached_run(nc[0], fake(60, False, 0.0, fail=True), root=tmp_path)  # recorded as failed
    cached_run(nc[1], fake(60, False, 0.93, m_p=60), root=tmp_path)

    t = pilots_60(P, root=tmp_path)
    by = {(d["model"], d["group"], d["n_layers"], d["variant"]): d for d in t.data}
    assert len(t.data) == len(paper1.PILOT_CELLS) * len(VARIANT_NAMES)
    # a bold row naming each cell, then one row per variant
    assert len(t.rows) == len(paper1.PILOT_CELLS) * (len(VARIANT_NAMES) + 1)
    base = by[(*cell, "standard")]
    assert (base["n_ok"], base["reached_60"], base["passed_60"], base["m_p_at_least_60"]) \
        == (2, 0, 0, 0)
    assert base["token_accuracy_60"] == [0.6, 0.5] and base["final_train_length"] == [32, 32]
    steps = by[(*cell, "steps_x3")]
    assert (steps["reached_60"], steps["passed_60"], steps["m_p_at_least_60"]) == (1, 1, 1)
    nocur = by[(*cell, "no_curriculum")]
    assert (nocur["n_stored"], nocur["n_ok"], nocur["n_failed"]) == (2, 1, 1)
    assert (nocur["reached_60"], nocur["passed_60"], nocur["m_p_at_least_60"]) == (1, 0, 1)
    missing = by[(*cell, "lr_1e-4")]
    assert (missing["n_stored"], missing["n_ok"]) == (0, 0)

    rows, under = {}, None
    for r in t.rows:
        if r[0].startswith("**"):
            under = r[0].strip("*")
            assert r[1:] == ["", "", ""]
        else:
            rows[(under, r[0])] = r[1:]
    name = f"Negative Mamba on {cell[1]}, L1"
    first = list(rows)[:len(VARIANT_NAMES)]
    assert [u for u, _ in first] == [name] * len(VARIANT_NAMES)
    assert all(v.startswith(want) for (_, v), want in zip(first, VARIANT_NAMES.values()))
    # stopped at (the runs at 60 reached it), passed 60 / m_p >= 60, accuracy at 60
    assert rows[(name, "our Table 2 runs")] == ["32 ×2", "0 / 0", "0.55 [0.50–0.60]"]
    assert rows[(name, "step cap x3")] == ["16 ×1, 60 ×1", "1 / 1", "0.69 [0.40–0.97]"]
    # a variant not all of whose runs are stored ok says so
    assert rows[(name, "no curriculum (1 of 2 runs; 1 failed)")] == ["60 ×1", "0 / 1",
                                                                    "0.93 [0.93–0.93]"]
    assert rows[(name, "lr 1e-4 (0 of 2 runs; 2 missing)")] == ["—", "—", "—"]
    assert get_report("pilots_60") is pilots_60
    # the variants' runs: step cap x3 (follows the paper) 2, no curriculum (does not) 1 ok
    assert pilot_numbers(t) == {"all_runs": 3, "all_passed": 1, "all_learned": 2,
                                "paper_runs": 2, "paper_passed": 1, "paper_learned": 1,
                                # step cap x3: median of 0.97 and 0.4; Table 2's: of 0.6, 0.5
                                "best_variant": "step cap x3",
                                "best_cell": f"Negative Mamba on {cell[1]}",
                                "best_acc": 0.69, "base_acc": 0.55,
                                # step cap x3: 1 of 2 passed, not most; no cell is won
                                "learned_by": "none", "learned_cells": 0, "cells": 3}
    # the other step-cap run passing too (record replaced) makes it 2 of 2: the cell is won
    record_path(x3[1], tmp_path).unlink()
    cached_run(x3[1], fake(60, True, 0.95, m_p=60), root=tmp_path)
    won = pilot_numbers(pilots_60(P, root=tmp_path))
    assert won["learned_by"] == f"step cap x3 on Negative Mamba on {cell[1]}"
    assert won["learned_cells"] == 1
