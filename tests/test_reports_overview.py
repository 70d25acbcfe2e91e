"""The results overview reads the chapters' own reports (its numbers are theirs) and
gives each result the verdict of one rule fixed in advance."""
from dataclasses import replace

import pytest

from sst_core.experiments import paper1
from sst_core.reports import overview as ov
from sst_core.reports.overview import CHAPTER_RESULTS, RESULTS, overview
from sst_core.reports.paper1 import table2, table3
from sst_core.spec import configs, profiles
from sst_core.spec.paper_values import TABLE2
from sst_core.store.records import cached_run


@pytest.fixture
def P():
    return replace(profiles.PROFILES["smoke"], track_eval_lengths=configs.EVAL_LENGTHS)


def every_chapter(P):
    return {chapter: P for chapter in CHAPTER_RESULTS}


def test_cells_rule():
    assert ov.verdict_of_cells(5, 0, 0) == "agrees"
    assert ov.verdict_of_cells(5, 1, 0) == "close"
    assert ov.verdict_of_cells(0, 0, 1) == "differs"
    assert ov.verdict_of_cells(0, 0, 0) is None
    with pytest.raises(ValueError, match="-1"):
        ov.verdict_of_cells(-1, 0, 0)


def test_interval_rule():
    assert ov.verdict_of_interval(0.7, 0.6, 0.8, 0.7) == "agrees"
    assert ov.verdict_of_interval(0.6, 0.6, 0.8, 0.7) == "agrees"  # the ends belong to it
    # widened to twice its width about the estimate: [0.5, 0.9]
    assert ov.verdict_of_interval(0.89, 0.6, 0.8, 0.7) == "close"
    assert ov.verdict_of_interval(0.91, 0.6, 0.8, 0.7) == "differs"
    assert ov.verdict_of_interval(0.869, 0.58, 0.72, 0.66) == "differs"
    assert ov.verdict_of_interval(0.7, None, None, None) is None
    with pytest.raises(ValueError, match="lo <= hi"):
        ov.verdict_of_interval(0.7, 0.8, 0.6, 0.7)


def test_identity_and_claim_rules():
    assert ov.verdict_of_identity(2e-13) == "agrees"
    assert ov.verdict_of_identity(1e-6) == "differs"
    assert ov.verdict_of_identity(None) is None
    assert ov.verdict_of_claim(2, 0, 0) == "agrees"
    assert ov.verdict_of_claim(1, 1, 0) == "close"
    assert ov.verdict_of_claim(3, 1, 1) == "differs"
    assert ov.verdict_of_claim(0, 0, 0) is None


def test_without_records_every_result_has_a_row_not_judged(tmp_path, P):
    t = overview(every_chapter(P), root=tmp_path)
    assert [d["result"] for d in t.data] == list(RESULTS)
    by = {d["result"]: (row, d) for row, d in zip(t.rows, t.data)}
    assert by["table2"][1]["values"] == {"agree": 0, "close": 0, "differ": 0}
    assert by["figure4"][0][2] == "no model qualifies"
    assert all(d["verdict"] is None for d in t.data)
    assert all(row[3] == "not judged" for row in t.rows)
    assert by["table3"][0][4] == "{doc}`Table 3 <p1_table3>`"


def test_the_table_rows_count_what_tables_2_and_3_show(tmp_path, P, monkeypatch):
    # every Table 2 run tracks to the paper's own value, but C2 runs fail: the counts follow
    for cfg in paper1.table2_grid(P):
        paper = TABLE2.get((cfg.model, cfg.group, cfg.n_layers))
        m_p = None if cfg.group == "C2" else (paper if isinstance(paper, int) else None)
        cached_run(cfg, lambda c, v=m_p: {"m_p": v, "eval": {}}, root=tmp_path)
    for cfg in paper1.table3_grid(P):
        cached_run(cfg, lambda c: {"m_p": 1000, "eval": {}}, root=tmp_path)
    shown = {"p1_table2": P, "p1_table3": P}
    t = overview(shown, root=tmp_path)
    cells2 = [d for d in table2(P, tmp_path).data if d["paper_reported"]]
    want = {k: sum(d["agreement"] == k for d in cells2) for k in ("agree", "close", "differ")}
    assert t.data[0]["values"] == want and want["agree"] and want["differ"]
    assert t.data[0]["verdict"] == "differs"
    assert t.rows[0][2].startswith(f"{sum(want.values())} cells: {want['agree']} the same")
    assert ov.cells_text({"agree": 8, "close": 0, "differ": 0}, "rows") == "8 rows: 8 the same"
    assert ov.cells_text({"agree": 0, "close": 0, "differ": 0}, "rows") == "no rows computed"
    cells3 = [d for d in table3(P, tmp_path).data if d["paper_reported"]]
    assert t.data[2]["values"]["agree"] == sum(d["agreement"] == "agree" for d in cells3)
    assert [d["chapter"] for d in t.data] == ["p1_table2", "p1_table2", "p1_table3"]
    # the pattern row counts the same cells: every state-dependent cell but C2's is at 1000
    pattern = ov.table2_pattern(table2(P, tmp_path).data)
    assert t.data[1]["values"] == pattern and pattern["fails"] > 0
    assert t.data[1]["verdict"] == "differs"
    # Table 2 is computed once for both of its rows, or not at all where the caller has it
    import sst_core.reports.paper1 as paper1_reports

    calls = []

    def counted(*args, **kw):
        calls.append(args)
        return table2(*args, **kw)

    monkeypatch.setattr(paper1_reports, "table2", counted)
    tables = {}
    assert overview(shown, root=tmp_path, tables=tables).data == t.data and len(calls) == 1
    assert tables["table2"].data == table2(P, tmp_path).data
    calls.clear()
    assert overview(shown, root=tmp_path, tables=tables).data == t.data and not calls


def test_the_pattern_of_table_2_holds_cell_by_cell():
    """A cell of the pattern holds where it reaches 1000 exactly when the paper's does: the
    paper's own affine cell at 1000 on S3 counts against an affine cell of ours below it,
    and cells the paper does not report, off S3 for the affine models, or without runs
    are not judged."""
    def cell(model, group, m_p, paper, status="ok"):
        return {"model": model, "group": group, "m_p": m_p, "status": status,
                "paper": paper, "paper_reported": paper != "-"}

    data = [cell("tanh_rnn", "C2", 1000, 1000), cell("state_gated_rnn", "S3", 1000, 1000),
            cell("mamba", "S3", None, None, "fail"), cell("negative_mamba", "S3", 500, 200),
            cell("mamba", "C2", 1000, None),  # an affine cell off S3 is not judged
            cell("aussm", "S3", None, None, "missing"),  # nor is a cell without runs
            cell("simple_aussm", "S3", 1000, "-")]  # nor one the paper does not report
    c = ov.table2_pattern(data)
    assert c == {"sd": 2, "sd_1000": 2, "paper_sd_1000": 2, "affine_s3": 2,
                 "affine_s3_1000": 0, "paper_affine_s3_1000": 0, "holds": 4, "fails": 0}
    worse = ov.table2_pattern(data + [cell("tanh_rnn", "C6", 900, 1000),
                                      cell("linear_rnn", "S3", 1000, None),
                                      cell("token_gated_rnn", "S3", 800, 1000)])
    assert (worse["holds"], worse["fails"]) == (4, 3)
    assert (worse["affine_s3_1000"], worse["paper_affine_s3_1000"]) == (1, 1)
    assert ov.verdict_of_claim(worse["holds"], 0, worse["fails"]) == "differs"
    both = ov.table2_pattern(data + [cell("token_gated_rnn", "S3", 1000, 1000)])
    assert (both["holds"], both["fails"]) == (5, 0)


def test_a_chapter_without_headline_results_adds_no_row(tmp_path, P):
    assert overview({"p1_groups": P}, root=tmp_path).rows == []


def test_the_s4_row_reads_the_simulation_check_the_memory_chapter_shows(tmp_path, P):
    from sst_core.experiments import paper2
    from sst_core.reports.memory import simulation_check

    assert overview({"p2_memory": P}, root=tmp_path).rows[0][2] == "no run"
    metrics = {"formula": [1.0, 0.5, 0.25], "formula_dense_eigs": [1.0, 0.5, 0.25 + 3e-15],
               "gramian_dense": [1.0, 0.5 - 2e-13, 0.25], "sim_diag": [0.99, 0.5, 0.26],
               "sim_dense": [0.99, 0.5, 0.26 + 1e-12], "eig_max_err": 4e-16}
    record = cached_run(paper2.simulation_grid(P)[0], lambda c: metrics, root=tmp_path)
    t = overview({"p2_memory": P}, root=tmp_path)
    assert t.data[0]["values"] == simulation_check(record)
    assert t.rows[0][2] == "equal to 2e-13" and t.data[0]["verdict"] == "agrees"


def test_an_lra_claim_undetermined_on_a_task_is_judged_on_the_others(monkeypatch):
    import sst_core.reports.lra as lra

    counts = {k: {"holds": 0, "tie": 0, "fails": 0, lra.UNDETERMINED: 0, "judged": 0}
              for k in lra.LRA_CLAIMS}
    counts["frozen_converges_faster"] |= {"tie": 1, lra.UNDETERMINED: 1, "judged": 2}
    monkeypatch.setattr(lra, "lra_claims", lambda P, root=None: lra.Table("", [], [], data=[]))
    monkeypatch.setattr(lra, "claim_counts", lambda data: counts)
    paper, ours, verdict, c = RESULTS["lra_frozen_converges_faster"][3](None, None, {})
    assert ours == ("2 tasks: holds on 0, ties on 1, fails on 0, undetermined on 1 "
                    "(runs not converged)")
    assert verdict == "close"
    counts["frozen_converges_faster"] |= {"tie": 0, "judged": 1}
    assert RESULTS["lra_frozen_converges_faster"][3](None, None, {})[1:3] == (
        "1 task: holds on 0, ties on 0, fails on 0, undetermined on 1 (runs not converged)",
        None)


def test_a_report_several_results_read_is_computed_once():
    """:func:`report_once` computes a shared report (Table 2, the LRA claims) on its first
    read and hands the same table to every later one."""
    from sst_core.reports import Table

    calls = []

    def make(P, root):
        calls.append((P, root))
        return Table("t", ["a"], [[1]])

    tables = {}
    first = ov.report_once("lra_claims", make, "P", None, tables)
    assert ov.report_once("lra_claims", make, "P", None, tables) is first
    assert calls == [("P", None)] and tables == {"lra_claims": first}


def test_an_lra_claims_paper_column_gives_the_rule_on_the_papers_own_rows(monkeypatch):
    """Claims 1 and 2: the paper's column names the tasks the paper draws the claim from
    and the claim rule's verdicts on its own rows (``paper_claims``); claims the paper's
    tables cannot judge (3, 4) say only that it is claimed."""
    import sst_core.reports.lra as lra

    counts = {k: {"holds": 0, "tie": 0, "fails": 0, lra.UNDETERMINED: 0, "judged": 0}
              for k in lra.LRA_CLAIMS}
    monkeypatch.setattr(lra, "lra_claims", lambda P, root=None: lra.Table("", [], [], data=[]))
    monkeypatch.setattr(lra, "claim_counts", lambda data: counts)
    own = [d["frozen_as_good"] for d in lra.paper_claims().data]
    paper = RESULTS["lra_frozen_as_good"][3](None, None, {})[0]
    assert paper.startswith("claimed (from Retrieval, Path-X); the same rule on its own rows")
    assert paper.endswith(f"holds on {own.count('holds')}, ties on {own.count('tie')}, "
                          f"fails on {own.count('fails')} of {len(own)} tasks")
    assert own.count("fails") >= 1  # its own ListOps row (see the LRA chapter)
    two = [d["unstructured_worse"] for d in lra.paper_claims().data
           if d["unstructured_worse"] is not None]
    assert RESULTS["lra_unstructured_worse"][3](None, None, {})[0].endswith(
        f"of {len(two)} tasks")
    assert RESULTS["lra_memory_not_extended"][3](None, None, {})[0] == "claimed"
    # the paper's rows are judged once for both claims that read them
    calls = []
    real = lra.paper_claims
    monkeypatch.setattr(lra, "paper_claims",
                        lambda P=None, root=None: calls.append(1) or real(P, root))
    tables = {}
    for name in ("lra_frozen_as_good", "lra_unstructured_worse"):
        RESULTS[name][3](None, None, tables)
    assert len(calls) == 1 and "paper_claims" in tables


def test_the_dead_memory_row_gives_its_control_beside_its_verdict(monkeypatch):
    """The delayed-recall row: the verdict reads the two dead-memory parts; the row also
    says in how many cells with memory at the start the model learned (the control), so a
    reader sees when being at chance is not only a matter of memory."""
    import sst_core.reports.lra as lra
    from sst_core.reports import Table

    def claim(name, holds, n, failing=()):
        return {"kind": "claim", "claim": name, "holds": holds, "n_cells": n,
                "failing": [list(f) for f in failing]}

    data = [claim("dead_memory_stays_at_chance", True, 5),
            claim("dead_memory_is_not_learned", True, 5),
            claim("live_memory_is_used", False, 26, [("step", False, 100),
                                                     ("step", True, 100)])]
    monkeypatch.setattr(lra, "memory_horizon", lambda P, root=None: Table("", [], [], data=data))
    paper, ours, verdict, values = RESULTS["dead_memory"][3](None, None, {})
    assert ours == ("the claim holds in 5 of 5 cells; its control, memory present at the "
                    "start is used, does not hold: above chance in 24 of 26 cells")
    # the verdict reads the claim alone; the control's own verdict is the chapter's word
    assert verdict == "agrees" and values["control_cells"] == 26
    assert values["control_holds"] is False
    data[2] = claim("live_memory_is_used", True, 26)
    assert RESULTS["dead_memory"][3](None, None, {})[1].endswith(
        "is used, holds: above chance in 26 of 26 cells")
    data[2] = claim("live_memory_is_used", None, 0)  # no cell with memory: no control
    assert RESULTS["dead_memory"][3](None, None, {})[1] == "the claim holds in 5 of 5 cells"
