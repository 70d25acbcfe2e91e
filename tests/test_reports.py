import json

import pytest

from sst_core import reports
from sst_core.book import params
from sst_core.experiments import paper1, runs
from sst_core.reports.groups import groups_table


def test_groups_table_from_records(tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    P = params.settings("p1_groups", profile="smoke", n_words=64)
    missing = groups_table(P)
    assert all(row[2] == "missing" for row in missing.rows)
    assert all(d["status"] == "missing" for d in missing.data)

    for c in paper1.order_sensitivity_grid(P):
        runs.run(c)
    table = groups_table(P)
    assert len(table.rows) == 6 and len(table.records) == 6
    c6 = next(r for r in table.rows if r[:2] == ["C6", "all"])
    assert c6[2] == "yes" and c6[4] == 0.0 and c6[6] == 6
    d6 = next(d for d in table.data if (d["group"], d["tokens"]) == ("C6", "all"))
    assert d6["status"] == "ok" and d6["abelian"] is True and d6["swap_changes"] == 0.0
    assert "64 words of length" in table.note
    md = table.to_markdown()
    assert sum(line.startswith("|") for line in md.splitlines()) == 8  # header, rule, six rows
    assert json.loads(table.to_json())["rows"] == table.rows


def test_a_tables_grid_is_its_rows_alone_and_the_printed_table_adds_title_and_note():
    t = reports.Table("The title", ["model", "m_p", "note"],
                      [["tanh RNN", 0.5, "a|b"], ["Mamba", None, 3]], note="What it means.")
    grid = t.grid()
    assert grid._repr_markdown_() == grid.text == (
        "| model | $m_p$ | note |\n|---|---|---|\n| tanh RNN | 0.500 | a\\|b |\n| Mamba | None | 3 |")
    assert "The title" not in grid.text and "What it means" not in grid.text
    assert t.to_markdown() == f"**The title**\n\n{grid.text}\n\nWhat it means."
    assert t._repr_markdown_() == t.to_markdown()


def test_a_header_typesets_the_papers_symbols_and_leaves_other_words_alone():
    h = reports.header_text
    assert h("m_p ≥ 60") == "$m_p$ ≥ 60"
    assert h("T_cross (q >= 1/2)") == r"$T_{\mathrm{cross}}$ (q >= 1/2)"
    assert h("q_U, q_U_perp") == r"$q_U$, $q_{U^\perp}$"
    assert h("q_U below q_U⊥") == r"$q_U$ below $q_{U^\perp}$"
    assert h("‖W_out η̄‖") == r"‖$W_{\mathrm{out}}$ η̄‖"
    # only whole symbols: longer names and math already typeset stay as they are
    assert h("m_p_prefix") == "m_p_prefix" and h("$m_p$") == "$m_p$"
    assert h("best d_model") == r"best $d_{\mathrm{model}}$" and h(3) == "3"
    assert h(r"$\sqrt{m_p}$ against m_p") == r"$\sqrt{m_p}$ against $m_p$"  # math kept


def test_a_wide_table_reads_transposed_with_nothing_lost():
    t = reports.Table("T", ["task", "chance", "claim 1"], [["a", 0.1, "holds"], ["b", 0.5, "no"]],
                      note="n", records=["r1"], data=[{"task": "a"}])
    u = t.transposed()
    assert u.columns == ["task", "a", "b"]
    assert u.rows == [["chance", 0.1, 0.5], ["claim 1", "holds", "no"]]
    assert (u.title, u.note, u.records, u.data) == (t.title, t.note, t.records, t.data)
    assert u.transposed().rows == t.rows and u.transposed().columns == t.columns


def test_a_wide_table_splits_in_two_that_share_their_key_columns():
    t = reports.Table("T", ["model", "m_p", "a", "b", "c"], [["x", 60, 1, 2, 3]], note="n",
                      records=["r"], data=[{"model": "x"}])
    first, second = t.split(keys=2, at=4)
    assert first.columns == ["model", "m_p", "a", "b"] and first.rows == [["x", 60, 1, 2]]
    assert second.columns == ["model", "m_p", "c"] and second.rows == [["x", 60, 3]]
    assert (first.note, second.note, second.records, second.data) == ("", "n", ["r"], t.data)
    with pytest.raises(ValueError, match="split\\(keys=2, at=5\\) of a table with 5 columns"):
        t.split(keys=2, at=5)


def test_unknown_report():
    with pytest.raises(ValueError, match=r"'tabel2'.*groups"):
        reports.get_report("tabel2")


def test_runs_note_says_what_a_cell_rests_on_only_when_some_runs_are_not_ok():
    assert reports.runs_note({"ok": 3, "failed": 0, "missing": 0}) == ""
    assert reports.runs_note({"ok": 1, "failed": 2, "missing": 0}) == " (1 of 3 runs; 2 failed)"
    assert reports.runs_note({"ok": 0, "failed": 1, "missing": 5}) == \
        " (0 of 6 runs; 1 failed, 5 missing)"


def test_the_s4_s4d_simulation_check_measures_each_gap_to_the_formula():
    from sst_core.reports.memory import simulation_check

    record = {"metrics": {"formula": [1.0, 0.5, 0.25],
                          "formula_dense_eigs": [1.0, 0.5, 0.25 + 3e-15],
                          "gramian_dense": [1.0, 0.5 - 2e-13, 0.25],
                          "sim_diag": [0.99, 0.5, 0.26], "sim_dense": [0.99, 0.5, 0.26 + 1e-12],
                          "eig_max_err": 4e-16}}
    c = simulation_check(record)
    assert c["dense_formula"] == pytest.approx(3e-15) and c["gramian"] == pytest.approx(2e-13)
    assert c["sim_diag"] == pytest.approx(0.01) and c["sim_dense"] == pytest.approx(0.01)
    assert c["sim_same"] == pytest.approx(1e-12) and c["eigenvalues"] == 4e-16


def test_fit_curves_tells_memorising_from_not_learning():
    from sst_core.reports.lra import LATE_EPOCHS, OVERFIT_RISE, fit_curves

    def rec(train, test, status="ok", val=None):
        curves = {"epoch": list(range(1, len(train) + 1)), "train_loss": train,
                  "test_loss": test}
        return {"status": status, "metrics": {"curves": curves if val is None
                                              else {**curves, "val_accuracy": val}}}

    memorises = rec([0.7, 0.5, 0.2], [0.69, 0.8, 1.2])  # test loss climbs after epoch 1
    learns = rec([0.7, 0.4, 0.2], [0.6, 0.3, 0.25])
    stuck = rec([0.7, 0.69, 0.69], [0.69, 0.69, 0.7])  # train loss does not fall: no overfit
    edge = rec([0.7, 0.6], [0.5, 0.5 * (1 + OVERFIT_RISE)])  # exactly at the limit: not over
    f = fit_curves([memorises, learns, stuck, edge, rec([1.0], [9.0], status="failed")])
    assert f["runs"] == 4 and f["overfit"] == 1
    assert f["still_falling"] == 1  # learns: its smallest test loss at the last epoch
    assert f["train_first"] == pytest.approx(0.7) and f["train_last"] == pytest.approx(0.4)
    assert f["test_min"] == pytest.approx((0.5 + 0.69) / 2)  # medians of 0.69, 0.25, 0.69, 0.5
    assert f["test_min_epoch"] == pytest.approx(1.0) and f["test_last"] == pytest.approx(0.625)
    assert f["val_gain_last"] is None and f["val_gain_late"] is None  # no validation curves
    assert fit_curves([]) == {"runs": 0, "train_first": None, "train_last": None,
                              "test_min": None, "test_min_epoch": None, "test_last": None,
                              "overfit": 0, "still_falling": 0, "val_gain_last": None,
                              "val_gain_late": None}
    # the validation gains: over the last epoch and the last LATE_EPOCHS, medians over the
    # runs with more epochs than that
    five = [0.7, 0.6, 0.5, 0.4, 0.35]
    g = fit_curves([rec(five, five, val=[0.1, 0.2, 0.4, 0.5, 0.52]),
                    rec(five, five, val=[0.1, 0.3, 0.3, 0.3, 0.3]),
                    rec(five, five, val=[0.2, 0.2, 0.6, 0.7, 0.76]),
                    rec([0.7, 0.6], [0.7, 0.6], val=[0.1, 0.9])])  # too short: left out
    assert LATE_EPOCHS == 3
    assert g["val_gain_last"] == pytest.approx(0.02)  # median of 0.02, 0.0, 0.06
    assert g["val_gain_late"] == pytest.approx(0.32)  # median of 0.32, 0.0, 0.56
    assert fit_curves([rec([0.7], [0.5])])["still_falling"] == 0  # one epoch: cannot tell


def test_the_compute_behind_records_counts_each_stacked_run_once_and_resumed_parts():
    """A chapter's "hours of compute" (reports.compute_s): a stack's wall time is stored on
    each of its runs, so summing wall times would count it once per run; a run that resumed
    adds the seconds of its earlier parts."""
    stack = [{"wall_time_s": 120.0, "stack": {"size": 12}, "metrics": {}} for _ in range(12)]
    alone = {"wall_time_s": 30.0, "metrics": {"resumed": None}}
    resumed = {"wall_time_s": 50.0, "metrics": {"resumed": {"from_epoch": 3,
                                                            "earlier_wall_s": 70.0}}}
    assert reports.compute_s(stack) == pytest.approx(120.0)
    assert reports.compute_s(stack + [alone, resumed]) == pytest.approx(120.0 + 30.0 + 120.0)
    assert reports.compute_s([]) == 0.0


def test_the_compute_behind_records_is_their_cpu_time_where_they_have_one():
    """A record with cpu_time_s counts its CPU time (a stack's shared by its runs); one
    made before records stored it, or a resumed run (whose earlier parts have only their
    wall time), counts its wall time; compute_clocks says how many of each."""
    stack = [{"wall_time_s": 120.0, "cpu_time_s": 60.0, "stack": {"size": 12}, "metrics": {}}
             for _ in range(12)]
    old = {"wall_time_s": 30.0, "metrics": {"resumed": None}}
    resumed = {"wall_time_s": 50.0, "cpu_time_s": 40.0,
               "metrics": {"resumed": {"from_epoch": 3, "earlier_wall_s": 70.0}}}
    assert reports.compute_s(stack) == pytest.approx(60.0)
    assert reports.compute_s(stack + [old, resumed]) == pytest.approx(60.0 + 30.0 + 120.0)
    assert reports.compute_clocks(stack + [old, resumed]) == {"cpu": 12, "wall": 2}


@pytest.mark.parametrize("seconds, said", [(0.004, "0 s"), (59.0, "59 s"), (90.0, "2 min"),
                                           (3000.0, "50 min"), (119_232.0, "33.1 h")])
def test_a_chapter_says_its_compute_in_the_unit_a_reader_would(seconds, said):
    """Never "0.00 hours" for a small profile's runs, never thousands of minutes for a
    large one's; a stack counted once (twelve records of a 12-run stack)."""
    assert reports.duration_text(seconds) == said
    stack = [{"wall_time_s": seconds, "stack": {"size": 12}} for _ in range(12)]
    assert reports.compute_text(stack) == said


def test_word_table_names_each_token_and_state():
    from sst_core.groups import get_group
    from sst_core.reports.groups import word_table
    from sst_core.tasks.tracking import sample

    S3 = get_group("S3")
    tokens, states = sample(S3, n=1, length=7, tokens="generators", seed=3)
    t = word_table(S3, tokens[0], states[0])
    assert [d["t"] for d in t.data] == list(range(1, 8))
    g = S3.index("e")
    for d, x in zip(t.data, tokens[0]):  # each state is the last one times the token
        g = S3.multiply(g, int(x))
        assert d["token"] == S3.elements[int(x)] and d["state"] == S3.elements[g]
    assert t.rows[0][1] == f"`{t.data[0]['token']}`"
    assert t.grid().text.count("\n") == 8  # header, rule, seven rows
    with pytest.raises(ValueError, match="7 tokens but 6 states"):
        word_table(S3, tokens[0], states[0][:6])


@pytest.mark.parametrize("values, said", [([1], "depth 1"), ([1, 2], "depths 1, 2"),
                                          ([], "no depths")])
def test_labelled_values_put_the_label_in_the_number_of_its_values(values, said):
    """"depth 1" for one value, "depths 1, 2" for several: a glued list reads right at
    every profile."""
    assert reports.labelled_values("depth", "depths", values) == said


def test_every_population_axis_has_a_label_in_each_number():
    from sst_core.reports.beyond import AXIS_LABELS, sweep_axes

    assert set(AXIS_LABELS) <= set(sweep_axes([]))
    assert all(len(labels) == 2 and labels[0] != labels[1] for labels in AXIS_LABELS.values())
