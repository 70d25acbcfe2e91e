"""The results overview reads the chapters' own reports: its numbers are theirs."""
from dataclasses import replace

import pytest

from sst_core.experiments import paper1
from sst_core.reports.overview import CHAPTER_RESULTS, Source, overview
from sst_core.reports.paper1 import agreement_counts, table2, table3
from sst_core.spec import configs, profiles
from sst_core.spec.paper_values import TABLE2
from sst_core.store.records import cached_run


@pytest.fixture
def P():
    return replace(profiles.PROFILES["smoke"], track_eval_lengths=configs.EVAL_LENGTHS)


def test_without_records_every_result_has_a_row_that_says_so(tmp_path, P):
    t = overview([Source(c, P, 0, 5) for c in CHAPTER_RESULTS], root=tmp_path)
    assert [d["result"] for d in t.data] == [r for rs in CHAPTER_RESULTS.values() for r in rs]
    by = {d["result"]: (row, d) for row, d in zip(t.rows, t.data)}
    assert by["table2"][1]["values"] == {"reported": 0, "exact": 0, "by_class": 0}
    assert by["figure4"][0][1] == "no model qualifies yet"
    assert all(row[3] == "`smoke` (0 of 5 runs; numbers meaningless at this scale)"
               for row in t.rows)
    assert by["table3"][0][4] == "{doc}`p1_table3`"


def test_the_table_rows_count_what_tables_2_and_3_show(tmp_path, P):
    # every Table 2 run tracks to the paper's own value, but C2 runs fail: the counts follow
    for cfg in paper1.table2_grid(P):
        paper = TABLE2.get((cfg.model, cfg.group, cfg.n_layers))
        m_p = None if cfg.group == "C2" else (paper if isinstance(paper, int) else None)
        cached_run(cfg, lambda c, v=m_p: {"m_p": v, "eval": {}}, root=tmp_path)
    for cfg in paper1.table3_grid(P):
        cached_run(cfg, lambda c: {"m_p": 1000, "eval": {}}, root=tmp_path)
    sources = [Source("p1_table2", P, 3, 3), Source("p1_table3", P, 2, 4)]
    t = overview(sources, root=tmp_path)
    counts2 = agreement_counts(table2(P, tmp_path).data)
    counts3 = agreement_counts(table3(P, tmp_path).data)
    assert t.data[0]["values"] == counts2 and 0 < counts2["exact"] < counts2["reported"]
    assert t.rows[0][1].startswith(f"{counts2['exact']} of the paper's {counts2['reported']} ")
    assert t.data[1]["values"] == counts3
    assert t.rows[1][1] == f"{counts3['exact']} of {counts3['reported']} rows agree exactly"
    assert t.rows[0][3].startswith("`smoke` (all 3 runs;")
    assert t.rows[1][3].startswith("`smoke` (2 of 4 runs;")
    quick = Source("p1_table3", profiles.PROFILES["quick"], 8, 8)
    assert quick.label() == "`quick` (all 8 runs)"
    older = Source("p1_table3", profiles.PROFILES["quick"], 6, 8)
    assert older.label() == "`quick` (6 of 8 runs)"


def test_a_chapter_without_headline_results_adds_no_row(tmp_path, P):
    assert overview([Source("p1_groups", P, 1, 1)], root=tmp_path).rows == []


def test_the_s4_row_reads_the_simulation_check_the_memory_chapter_shows(tmp_path, P):
    from sst_core.experiments import paper2
    from sst_core.reports.memory import simulation_check

    assert overview([Source("p2_memory", P, 0, 1)], root=tmp_path).rows[0][1] == \
        "no stored run yet"
    metrics = {"formula": [1.0, 0.5, 0.25], "formula_dense_eigs": [1.0, 0.5, 0.25 + 3e-15],
               "gramian_dense": [1.0, 0.5 - 2e-13, 0.25], "sim_diag": [0.99, 0.5, 0.26],
               "sim_dense": [0.99, 0.5, 0.26 + 1e-12], "eig_max_err": 4e-16}
    record = cached_run(paper2.simulation_grid(P)[0], lambda c: metrics, root=tmp_path)
    c = simulation_check(record)
    t = overview([Source("p2_memory", P, 1, 1)], root=tmp_path)
    assert t.data[0]["values"] == c
    assert t.rows[0][1] == ("memory functions equal to 3e-15 (from the dense matrix's "
                            "eigenvalues) and 2e-13 (its impulse response); their white-noise "
                            "simulations agree to 1e-12")
