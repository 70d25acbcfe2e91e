"""Tables 2 and 3 from constructed records (no training): best over the grid, seed
spread, failed runs, agreement with the published values."""
import json
from dataclasses import replace

import pytest

from sst_core.experiments import paper1
from sst_core.reports import get_report
from sst_core.reports.paper1 import agreement, table2, table3
from sst_core.spec import configs, paper_values, profiles
from sst_core.store.records import RunFailed, cached_run

LENGTHS = configs.EVAL_LENGTHS


def fake(m_p):
    def fn(cfg):
        if m_p == "diverge":
            raise RunFailed("loss became nan at step 3")
        return {"m_p": m_p, "eval": {}}
    return fn


@pytest.fixture
def P():
    return replace(profiles.PROFILES["smoke"], name="smoke", track_seeds=(0, 1), track_lrs=(1e-3, 1e-4),
                   track_eval_lengths=LENGTHS)


def test_agreement_rules():
    assert agreement(1000, 1000, LENGTHS) == "agree"
    assert agreement(None, None, LENGTHS) == "agree"
    assert agreement(900, 1000, LENGTHS) == "close"
    assert agreement(None, 60, LENGTHS) == "close"
    assert agreement(100, 1000, LENGTHS) == "differ"
    assert agreement(100, "missing", LENGTHS) == "not reported"


def test_table2_best_over_grid_with_seed_spread(tmp_path, P):
    grid = paper1.table2_grid(P, models=("tanh_rnn", "mamba"), groups=("S3",))
    assert len(grid) == 2 * 1 * 1 * 1 * 2 * 2
    values = {("tanh_rnn", 1e-3, 0): 1000, ("tanh_rnn", 1e-3, 1): 600,
              ("tanh_rnn", 1e-4, 0): 200, ("tanh_rnn", 1e-4, 1): "diverge",
              ("mamba", 1e-3, 0): None, ("mamba", 1e-3, 1): None,
              ("mamba", 1e-4, 0): None}  # one mamba run missing
    for cfg in grid:
        key = (cfg.model, cfg.lr, cfg.seed)
        if key in values:
            cached_run(cfg, fake(values[key]), root=tmp_path)
    t = table2(P, root=tmp_path, models=("tanh_rnn", "mamba"))
    by = {(d["model"], d["group"]): d for d in t.data}
    tanh, mamba = by[("tanh_rnn", "S3")], by[("mamba", "S3")]
    assert tanh["m_p"] == 1000 and sorted(tanh["m_p_seeds"]) == [600, 1000]
    assert tanh["best_cell"] == {"d_state": P.track_rnn_widths[0], "lr": 1e-3,
                                 "schedule": "constant"}
    assert tanh["grid"] == {"n": 3, "median": 600, "min": 200, "max": 1000}
    assert tanh["n_runs"] == 4 and tanh["n_failed"] == 1
    assert tanh["paper"] == 1000 and tanh["agreement"] == "agree"
    assert mamba["m_p"] is None and mamba["paper"] is None and mamba["agreement"] == "agree"
    assert mamba["n_runs"] == 3 and mamba["n_missing"] == 1
    row = t.rows[0]
    assert row[0] == "tanh RNN" and row[-1].startswith("1000 [600–1000] / 1000")  # S3 L1
    assert "runs)" not in row[-1]  # complete
    assert t.rows[1][-1] == "fail (3 of 4 runs) / fail ✓"  # one mamba run missing
    out = json.loads(t.to_json())
    s3 = [d for d in out["data"] if d["group"] == "S3"]
    assert [d["m_p"] for d in s3] == [1000, None]


def test_table2_cells_without_runs(tmp_path, P):
    t = table2(P, root=tmp_path, models=("linear_attention",))
    assert all(d["n_runs"] == 0 and d["m_p"] is None for d in t.data)
    assert all(d["paper_reported"] is False for d in t.data)  # no published row
    assert "missing" in t.rows[0][2]


def test_table3_rows_follow_phis(tmp_path, P):
    for cfg in paper1.table3_grid(P):
        cached_run(cfg, fake(1000 if cfg.phi == "tanh" else None), root=tmp_path)
    t = table3(P, root=tmp_path)
    data = {d["phi"]: d for d in t.data}
    assert data["tanh"]["m_p"] == 1000 and data["tanh"]["agreement"] == "agree"
    assert data["relu"]["m_p"] is None and data["relu"]["agreement"] == "differ"
    assert data["sphere"]["paper"] is None and data["sphere"]["agreement"] == "agree"
    assert set(data) == set(paper_values.TABLE3)
    kind = {d["phi"]: row[1] for d, row in zip(t.data, t.rows)}  # the class column
    assert {kind[p] for p in ("tanh", "relu")} == {"pointwise"}
    assert {kind[p] for p in ("groupsort2", "max", "min")} == {"pair operator"}
    assert {kind[p] for p in ("layernorm", "sphere")} == {"whole-vector normalisation"}
    assert kind["identity"] == "affine"
    # the narrow form, as Table 2's: an agreeing value once, both values otherwise
    narrow = {d["phi"]: row[2] for d, row in zip(t.data, table3(P, tmp_path, narrow=True).rows)}
    assert narrow["tanh"] == "1000\u00a0✓"
    assert t.rows[list(data).index("tanh")][2] == "1000 / 1000 ✓"
    assert narrow["relu"].startswith("fail / ")


def test_reports_registered():
    assert get_report("table2") is table2 and get_report("table3") is table3


def test_published_table2_has_the_papers_rows():
    assert paper_values.TABLE2[("negative_mamba", "S3", 1)] == 100
    assert paper_values.TABLE2[("mamba", "S3", 2)] is None
    assert ("simple_aussm", "S3", 1) not in paper_values.TABLE2  # not reported
    assert all(paper_values.TABLE2[(m, g, d)] == 1000 for m in ("tanh_rnn", "state_gated_rnn")
               for g in ("C2", "C6", "S3") for d in (1, 2))


def test_m_p_classes_and_agreement_counts_on_a_constructed_table():
    from sst_core.reports.paper1 import agreement_counts, m_p_class

    assert [m_p_class(v) for v in (None, 60, 100, 500, 600, 700, 1000)] == \
        ["fail", "60", "100-600", "100-600", "100-600", "700-1000", "700-1000"]
    data = [
        {"paper_reported": True, "status": "ok", "m_p": 1000, "paper": 1000},  # exact
        {"paper_reported": True, "status": "ok", "m_p": 800, "paper": 1000},  # class only
        {"paper_reported": True, "status": "fail", "m_p": None, "paper": None},  # exact
        {"paper_reported": True, "status": "ok", "m_p": 200, "paper": 60},  # neither
        {"paper_reported": False, "status": "ok", "m_p": 60, "paper": None},  # not reported
        {"paper_reported": True, "status": "missing", "m_p": None, "paper": 100},  # not computed
    ]
    assert agreement_counts(data) == {"reported": 4, "exact": 2, "by_class": 3}


def test_the_checkpoint_report_counts_how_m_p_moves(tmp_path, P):
    from sst_core.reports.paper1 import table2_checkpoints

    grid = paper1.table2_grid(P, models=("tanh_rnn", "mamba"), groups=("S3",))

    def with_checkpoints(passed, heldout, end):
        def fn(cfg):
            cp = {"passed_60": None if passed == "never" else {"step": 100, "m_p": passed},
                  "heldout": None if heldout == "never" else {"step": 300, "m_p": heldout},
                  "end": {"step": 600, "m_p": end}}
            return {"m_p": end, "eval": {}, "checkpoints": cp}
        return fn

    moves = {("tanh_rnn", 0): (60, 200, 1000), ("tanh_rnn", 1): (100, "never", 100),
             ("mamba", 0): (500, 300, 200), ("mamba", 1): ("never", "never", None)}
    for cfg in grid:
        if cfg.lr == P.track_lrs[0]:
            cached_run(cfg, with_checkpoints(*moves[cfg.model, cfg.seed]), root=tmp_path)
    t = table2_checkpoints(P, root=tmp_path, models=("tanh_rnn", "mamba"))
    by = {d["class"]: d for d in t.data if d["model"] is None}
    sd, aff = by["state-dependent"], by["affine"]
    per_model = {d["model"]: d for d in t.data if d["model"]}
    assert per_model["tanh_rnn"]["rose"] == 1 and per_model["mamba"]["fell"] == 1
    assert per_model["mamba"]["runs"] == 2 and per_model["mamba"]["passing_60"] == 1
    assert (sd["passing_60"], sd["rose"], sd["stayed"], sd["fell"], sd["criterion_met"]) == (2, 1, 1, 0, 1)
    assert (aff["runs"], aff["passing_60"], aff["fell"], aff["criterion_met"]) == (2, 1, 1, 1)
    assert aff["median_m_p"] == {"passed_60": 500, "heldout": 300, "end": 200}
    # the medians compare the same runs: tanh's second run has no held-out checkpoint and
    # drops out of all three (over every run that has each, passed 60 would read 100)
    assert sd["median_m_p"] == {"passed_60": 60, "heldout": 200, "end": 1000}
    json.loads(t.to_json())


def test_schedules_are_an_axis_of_the_grid_and_the_best_cell(tmp_path, P):
    P = replace(P, track_schedules=("constant", "cosine"), track_lrs=(1e-3,))
    grid = paper1.table2_grid(P, models=("tanh_rnn",), groups=("C2",))
    assert [c.schedule for c in grid] == ["constant"] * 2 + ["cosine"] * 2
    for cfg in grid:
        cached_run(cfg, fake(1000 if cfg.schedule == "cosine" else 200), root=tmp_path)
    d = table2(P, root=tmp_path, models=("tanh_rnn",)).data[0]
    assert d["m_p"] == 1000 and d["best_cell"]["schedule"] == "cosine"
    assert d["m_p_seeds"] == [1000, 1000]


def test_the_spread_over_the_grid(tmp_path, P):
    from sst_core.reports.paper1 import grid_spread, grid_text, table2_spread

    assert grid_spread([None, 600, 100, 1000]) == {"n": 4, "median": 600, "min": None,
                                                    "max": 1000}
    assert grid_spread([])["n"] == 0
    grid = paper1.table2_grid(P, models=("mamba",), groups=("S3",))
    def passing(m_p):  # a run whose curriculum passed 60
        return lambda cfg: {"m_p": m_p, "eval": {},
                            "checkpoints": {"passed_60": {"m_p": m_p, "step": 5}}}

    # the two failing runs' curricula never passed 60 (no checkpoint), the others did
    for cfg, run in zip(grid, (fake(None), fake(60), passing(100), passing(300))):
        cached_run(cfg, run, root=tmp_path)
    t = table2_spread(P, root=tmp_path, models=("mamba",))
    s3 = next(d for d in t.data if d["group"] == "S3")
    assert (s3["n"], s3["median"], s3["min"], s3["max"]) == (4, 100, None, 300)
    assert s3["never_60"] == 2
    assert t.rows[0][-1] == "100 [fail–300] n=4; 2 never 60"
    assert get_report("table2_spread") is table2_spread
    # a cell with only failed runs is 'diverged', as Table 2 says, not 'missing'
    other = next(g for g in paper1.TABLE2_GROUPS if g != "S3")
    for cfg in paper1.table2_grid(P, models=("mamba",), groups=(other,)):
        cached_run(cfg, fake("diverge"), root=tmp_path)
    t = table2_spread(P, root=tmp_path, models=("mamba",))
    t2 = table2(P, root=tmp_path, models=("mamba",))
    assert [d["status"] for d in t.data] == [d["status"] for d in t2.data]
    statuses = {d["group"]: d["status"] for d in t.data}
    assert statuses[other] == "diverged" and "missing" in statuses.values()
    for d, text in zip(t.data, t.rows[0][2:]):
        assert text == (d["status"] if d["status"] in ("diverged", "missing")
                        else grid_text(d) + (f"; {d['never_60']} never 60" if d["never_60"]
                                             else ""))


def test_a_range_is_shown_only_where_the_runs_differ():
    from sst_core.reports.paper1 import grid_text, seed_range

    assert seed_range([1000, 600, None]) == " [fail–1000]"
    assert seed_range([1000, 1000]) == seed_range([None, None]) == seed_range([60]) == ""
    assert seed_range([]) == ""
    assert grid_text({"n": 24, "median": 1000, "min": 1000, "max": 1000}) == "1000 (all 24)"
    assert grid_text({"n": 3, "median": None, "min": None, "max": None}) == "fail (all 3)"
    assert grid_text({"n": 4, "median": 100, "min": None, "max": 300}) == "100 [fail–300] n=4"


def test_the_width_ablation_reads_its_grid(tmp_path, P):
    from sst_core.reports.paper1 import width_ablation

    P = replace(P, width_d_models=(16, 64), width_seeds=(0, 1), track_lrs=(1e-3,))
    grid = paper1.width_grid(P)
    assert len(grid) == len(paper1.WIDTH_MODELS) * len(paper1.WIDTH_GROUPS) * 2 * 2
    assert {c.d_model for c in grid} == {16, 64} and {c.n_layers for c in grid} == {1}
    for cfg in grid:
        if cfg.model == "aussm" and cfg.group == "C2":
            cached_run(cfg, fake(cfg.d_model * 10 + cfg.seed * 100), root=tmp_path)
    t = width_ablation(P, root=tmp_path)
    by = {(d["model"], d["group"], d["d_model"]): d for d in t.data}
    assert by["aussm", "C2", 16]["m_p"] == 260 and by["aussm", "C2", 64]["m_p"] == 740
    assert by["aussm", "C2", 64]["m_p_seeds"] == [640, 740]
    assert by["aussm", "C2", 64]["paper"] == paper_values.TABLE2["aussm", "C2", 1]
    assert by["mamba3", "C6", 16]["status"] == "missing"
    assert t.rows[0][:4] == ["AUSSM", "C2", "260 [160–260]", "740 [640–740]"]
    assert get_report("width_ablation") is width_ablation
    assert paper1.width_grid(replace(P, width_d_models=())) == []


def test_the_longest_stall_of_a_run_that_learned():
    from sst_core.reports.paper1 import longest_stall

    def rec(rid, reached, passed, status="ok"):
        cp = {"passed_60": None if passed is None else {"step": passed, "m_p": 100}}
        return {"run_id": rid, "status": status, "config": {"model": "tanh_rnn", "n_layers": 1},
                "metrics": {"checkpoints": cp, "length_reached_at_step": reached}}

    runs = [rec("a", {"2": 0, "4": 100, "60": 300}, 2400),  # 2,100 steps at 60
            rec("b", {"2": 0, "4": 2500, "60": 2600}, 2700),  # 2,500 steps at 2
            rec("c", {"2": 0, "4": 9000}, None),  # never passed: not counted
            rec("d", {"2": 0, "60": 10}, 9999, status="failed")]
    out = longest_stall(runs)
    assert out == {"steps": 2500, "run_id": "b", "model": "tanh_rnn", "length": 2, "runs": 2}
    assert longest_stall([])["steps"] is None


def _run(m_p, passed=None, end=None, length=60, stopped="budget"):
    """A constructed training record for the evidence rules: m_p, the m_p at the
    checkpoints passed_60 (None: never passed 60) and end, where the curriculum stopped."""
    cp = {"passed_60": None if passed is None else {"m_p": passed, "step": 100},
          "heldout": None, "end": {"m_p": m_p if end is None else end, "step": 200}}
    return {"status": "ok", "metrics": {"m_p": m_p, "checkpoints": cp,
                                        "final_train_length": length, "stopped_as": stopped}}


def test_never_60_fires_from_half_of_a_lower_cells_runs():
    from sst_core.reports.paper1 import NEVER_60_SHARE, never_60_evidence

    assert NEVER_60_SHARE == 0.5
    stuck = [_run(None, length=16, stopped="max_steps"), _run(None, length=32,
                                                             stopped="max_steps")]
    learned = [_run(100, passed=100), _run(60, passed=60)]
    half = never_60_evidence(stuck + learned, lower=True)
    assert half["fires"] and half["never"] == 2 and half["n"] == 4
    assert half["final_train_length"] == [[16, 1], [32, 1]]
    assert half["stopped_as"] == [["max_steps", 2]]
    assert not never_60_evidence(stuck[:1] + learned, lower=True)["fires"]  # 1 of 3
    assert not never_60_evidence(stuck + learned, lower=False)["fires"]  # a higher cell
    assert not never_60_evidence([], lower=True)["fires"]
    # a curriculum at 60 that never passed it counts, stopped at 60
    at_60 = never_60_evidence([_run(None, length=60, stopped="max_steps")], lower=True)
    assert at_60["fires"] and at_60["final_train_length"] == [[60, 1]]


def test_width_fires_when_the_widest_moves_m_p_more_than_close_towards_the_paper():
    from sst_core.reports.paper1 import CLOSE_LENGTHS, width_evidence

    assert CLOSE_LENGTHS == 1
    w = width_evidence({16: 100, 32: 100, 64: 300}, 32, 1000, LENGTHS)  # 2 lengths closer
    assert w["fires"] and w["covered"] and w["toward_paper"] == 2
    assert w["m_p"] == [[16, 100], [32, 100], [64, 300]]
    assert not width_evidence({16: 100, 32: 100, 64: 200}, 32, 1000, LENGTHS)["fires"]  # 1
    assert not width_evidence({16: 300, 32: 400, 64: 400}, 32, 1000, LENGTHS)["fires"]
    down = width_evidence({32: 900, 64: 300}, 32, 200, LENGTHS)  # higher cell, width lowers it
    assert down["fires"] and down["toward_paper"] == 6
    away = width_evidence({32: 300, 64: 900}, 32, 200, LENGTHS)
    assert not away["fires"] and away["toward_paper"] == -6
    for uncovered in (None, {}, {16: 100, 64: 1000}, {16: 100, 32: 100}):
        w = width_evidence(uncovered, 32, 1000, LENGTHS)
        assert w == {"fires": False, "covered": False, "m_p": [], "toward_paper": None}


def test_stopping_fires_when_another_checkpoint_moves_the_best_more_than_close():
    from sst_core.reports.paper1 import run_m_p_at, stopping_evidence

    runs = [_run(300, passed=100, end=100), _run(200, passed=100, end=200)]
    s = stopping_evidence(runs, 300, None, LENGTHS)  # the paper: fail
    assert s["best"] == {"passed_60": 100, "end": 200}
    assert s["toward_paper"] == {"passed_60": 2, "end": 1} and s["fires"]
    near = stopping_evidence([_run(300, passed=200, end=300)], 300, None, LENGTHS)
    assert near["toward_paper"] == {"passed_60": 1, "end": 0} and not near["fires"]
    # a run that never passed 60 is read at the end of its budget
    assert run_m_p_at(_run(None, end=60), "passed_60") == 60
    assert run_m_p_at({"metrics": {"m_p": 100}}, "end") == 100  # no checkpoints stored
    assert not stopping_evidence([], None, 100, LENGTHS)["fires"]


def test_noise_fires_when_a_retrained_run_moved_as_far_as_the_cell_is_off():
    from sst_core.reports.paper1 import noise_evidence

    pairs = {"n": 24, "moved": 20, "max_apart": 2}
    assert noise_evidence(pairs, 800, 1000, LENGTHS)["fires"]  # 2 apart
    off = noise_evidence(pairs, 700, 1000, LENGTHS)  # 3 apart
    assert not off["fires"] and off["measured"] and off["max_apart"] == 2
    still = noise_evidence({"n": 3, "moved": 0, "max_apart": 0}, 900, 1000, LENGTHS)
    assert not still["fires"]
    for none in (None, {"n": 0, "moved": 0, "max_apart": 0}):
        assert noise_evidence(none, 800, 1000, LENGTHS) == {
            "fires": False, "measured": False, "n": 0, "moved": 0, "max_apart": None}


def test_grid_fires_when_the_papers_value_lies_inside_the_cells_runs():
    from sst_core.reports.paper1 import grid_evidence, grid_spread

    g = grid_spread([None, 60, 100, 900])
    assert grid_evidence(g, 300)["fires"] and grid_evidence(g, None)["fires"]
    assert grid_evidence(g, 900)["fires"] and not grid_evidence(g, 1000)["fires"]
    assert not grid_evidence(grid_spread([100, 200]), None)["fires"]  # fail below the lowest
    assert not grid_evidence(grid_spread([]), None)["fires"]


def test_disagreements_are_the_class_and_the_exact_ones_with_their_evidence(tmp_path, P):
    from sst_core.reports.paper1 import (
        agreement_counts,
        disagreement_kind,
        table2,
        table2_disagreements,
    )

    assert disagreement_kind(100, 100) is None and disagreement_kind(None, None) is None
    assert disagreement_kind(None, 60) == "class" and disagreement_kind(100, 300) == "exact"
    # paper: aussm C2 L1 1000, mamba3 C6 L1 100, simple_aussm C2 L1 300, mamba S3 L1 fail,
    # mamba3 C2 L1 200, negative_mamba C6 L1 100
    P = replace(P, width_d_models=(P.track_d_model, 64), width_seeds=(0,), track_lrs=(1e-3,),
                track_seeds=(0, 1))

    def rec(m_p, passed, length=60):
        def fn(cfg):
            return {"m_p": m_p, "eval": {}, "final_train_length": length,
                    "stopped_as": "budget" if passed is not None else "max_steps",
                    "checkpoints": {"passed_60": None if passed is None else
                                    {"m_p": passed, "step": 10},
                                    "heldout": None, "end": {"m_p": m_p, "step": 20}}}
        return fn

    values = {("aussm", "C2", 0): (200, 200), ("aussm", "C2", 1): (100, 100),  # class
              ("mamba3", "C6", 0): (1000, 1000), ("mamba3", "C6", 1): (60, 60),  # grid
              ("simple_aussm", "C2", 0): (300, 300),  # agrees: not listed
              ("mamba3", "C2", 0): (300, 300),  # exact, one length apart
              ("negative_mamba", "C6", 0): (None, None),  # never passed 60
              ("negative_mamba", "C6", 1): (None, None)}
    for cfg in paper1.table2_grid(P, groups=("C2", "C6", "S3")):
        key = (cfg.model, cfg.group, cfg.seed)
        if key in values and cfg.n_layers == 1:
            m_p, passed = values[key]
            cached_run(cfg, rec(m_p, passed, 60 if passed else 16), root=tmp_path)
    for cfg in paper1.width_grid(P):  # the width ablation: aussm C2 reaches 700 at 64
        if cfg.model == "aussm" and cfg.group == "C2" and cfg.d_model == 64:
            cached_run(cfg, rec(700, 700), root=tmp_path)
    t = table2_disagreements(P, root=tmp_path)
    by = {(d["model"], d["group"]): d for d in t.data}
    assert set(by) == {("aussm", "C2"), ("mamba3", "C6"), ("mamba3", "C2"),
                       ("negative_mamba", "C6")}
    # exactly Table 2's disagreements: by class, and by the exact value
    counts = agreement_counts(table2(P, root=tmp_path).data)
    assert sum(d["kind"] == "class" for d in t.data) == counts["reported"] - counts["by_class"]
    assert len(t.data) == counts["reported"] - counts["exact"]
    lower = by["aussm", "C2"]
    assert (lower["kind"], lower["direction"], lower["lengths_apart"]) == ("class", "lower", 8)
    assert lower["rules"]["width"]["m_p"] == [[P.track_d_model, 200], [64, 700]]
    assert lower["reasons"] == ["width"]  # 200 -> 700: 5 lengths closer to 1000
    assert by["mamba3", "C6"]["reasons"] == ["grid"]  # 100 inside [60, 1000]
    one = by["mamba3", "C2"]
    assert one["kind"] == "exact" and one["one_apart"] and one["reasons"] == []
    row = t.rows[[r[0] for r in t.rows].index("Mamba-3 on C2, L1")]
    assert row[t.columns.index("reasons")] == "unexplained"
    stuck = by["negative_mamba", "C6"]
    assert stuck["reasons"] == ["never_60"]
    assert stuck["rules"]["never_60"]["final_train_length"] == [[16, 2]]
    assert stuck["rules"]["width"]["covered"] is False  # no width runs of it stored
    assert get_report("table2_disagreements") is table2_disagreements
    # the pilots' widths count where the ablation has none (marked * in the table)
    for base in paper1.pilot_base(P, ("negative_mamba", "C6", 1)):
        cached_run(paper1.pilot_variants(base)["d_model_128"], rec(100, 60), root=tmp_path)
    t = table2_disagreements(P, root=tmp_path)
    width = next(d for d in t.data if d["model"] == "negative_mamba")["rules"]["width"]
    assert width["covered"] and width["m_p"] == [[P.track_d_model, None], [128, 100]]
    assert width["pilot"] == [128]  # the ablation has the cell's Table 2 width (its own runs)
    assert width["toward_paper"] is not None and "width" in next(
        d for d in t.data if d["model"] == "negative_mamba")["reasons"]  # fail -> 100
    row = t.rows[[r[0] for r in t.rows].index("Negative Mamba on C6, L1")]
    assert row[t.columns.index("width: m_p by d_model")] == f"{P.track_d_model}: fail, 128*: 100"
    never = row[[i for i, c in enumerate(t.columns) if c.startswith("never passed 60")][0]]
    assert "step cap: " in never and "max_steps" not in never  # the reader's words
    assert "marked * is the pilots'" in t.note


def test_retrain_noise_pairs_the_records_one_version_of_the_code_made_twice(tmp_path, P):
    from sst_core.reports.paper1 import retrain_noise
    from sst_core.store.records import record_path
    from sst_core.store.replaced import keep_replaced, replaced_folder

    grid = paper1.table2_grid(P, models=("tanh_rnn",), groups=("S3",))[:4]
    before, after = (200, 300, None, 1000), (200, 600, 60, 1000)
    for cfg, a, b in zip(grid, before, after):
        cached_run(cfg, lambda c, m=b: {"m_p": m, "eval": {}, "steps": 100}, root=tmp_path,
                   version=1)
        current = json.loads(record_path(cfg, tmp_path).read_text())
        old = {**current, "created_utc": "2026-01-01T00:00:00+00:00",
               "metrics": {**current["metrics"], "m_p": a, "steps": 90 if a is None else 100}}
        folder = replaced_folder(cfg, tmp_path)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{current['run_id']}.20260101000000.json").write_text(json.dumps(old))
    # not pairs: a record an older version made, and the stored record itself
    other = json.loads(record_path(grid[3], tmp_path).read_text())
    (replaced_folder(grid[3], tmp_path) / f"{other['run_id']}.1.json").write_text(
        json.dumps({**other, "created_utc": "2025", "version": 0,
                    "metrics": {**other["metrics"], "m_p": 60}}))
    keep_replaced(grid[3], tmp_path)  # kept before a recomputation that has not happened
    t = retrain_noise(P, root=tmp_path)
    (cell, total) = t.data
    assert cell == total | {"group": "S3", "label": "tanh_rnn"}
    assert cell["n"] == 4 and cell["same_steps"] == 3 and cell["same_m_p"] == 2
    assert cell["one_apart"] == 1 and cell["further"] == 1  # fail -> 60; 300 -> 600
    assert cell["largest"] == {"before": 300, "after": 600, "lengths_apart": 3}
    assert t.rows[0][4:6] == ["50 / 25 / 25 % of 4", "300 → 600"]
    assert "replaced" in t.note
    # the yardstick: the two seeds of each setting (lr 1e-3: 200 and 600; lr 1e-4: fail and
    # 1000), from the stored records
    assert cell["seed_pairs"] == {"n": 2, "same": 0, "one": 0, "further": 2}
    assert t.rows[0][-1] == "0 / 0 / 100 % of 2"


def test_seed_pairs_compare_the_seeds_of_one_setting(tmp_path, P):
    from sst_core.reports.paper1 import seed_pairs, shares

    grid = paper1.table2_grid(P, models=("tanh_rnn",), groups=("S3",))[:4]
    # lr 1e-3: seeds 0 and 1 at 300 and 400 (one length apart); lr 1e-4: seed 0 fails to
    # learn (m_p None, a length below 60), seed 1 diverged (not an ok run: no pair)
    for cfg, m_p in zip(grid, (300, 400, None, "diverge")):
        cached_run(cfg, fake(m_p), root=tmp_path)
    assert seed_pairs(grid, tmp_path) == {("S3", "tanh_rnn"): [1]}
    assert seed_pairs(grid[2:], tmp_path) == {}
    assert shares([0, 1, 1, 3]) == "25 / 50 / 25 % of 4"
    assert shares([]) == "—"


def test_cell_text_names_each_state_of_a_cell():
    """One spelling of a table cell for every chapter: no summary is 'missing', a cell
    with only failed runs 'diverged', else m_p with the seeds' range where they differ."""
    from sst_core.reports.paper1 import cell_text

    def summary(m_p, seeds=(), missing=0):
        return {"m_p": m_p, "m_p_seeds": list(seeds), "missing": missing}

    assert cell_text(None) == ("missing", "missing")
    assert cell_text(summary("no runs", missing=3)) == ("missing", "missing")
    assert cell_text(summary("no runs")) == ("diverged", "diverged")
    assert cell_text(summary(None, [None, None])) == ("fail", "fail")
    assert cell_text(summary(100, [60, 100])) == ("ok", "100 [60–100]")
    assert cell_text(summary(100, [60, 100]), seeds=False) == ("ok", "100")


def test_shown_text_writes_a_typed_cell_as_the_table_does():
    from sst_core.reports.paper1 import shown_text

    assert shown_text("missing", None) == "missing" and shown_text("diverged", None) == "diverged"
    assert shown_text("fail", None) == "fail" and shown_text("ok", 300) == "300"
    assert shown_text("ok", 300, [100, 300]) == "300 [100–300]"


def test_width_gap_says_which_gaps_width_closes():
    from sst_core.reports import Table
    from sst_core.reports.paper1 import width_gap

    def cell(model, w, m_p, paper, status="ok"):
        return {"model": model, "group": "C2", "d_model": w, "m_p": m_p, "status": status,
                "paper": paper}

    data = [cell("a", 16, 100, 200), cell("a", 64, 200, 200),  # closed by width
            cell("b", 16, 1000, 1000), cell("b", 64, 1000, 1000),  # never open
            cell("c", 16, None, 100), cell("c", 64, 60, 100),  # rises, stays open
            cell("d", 16, 300, None), cell("d", 64, None, None),  # paper fails too: reached
            cell("e", 16, 100, "missing"), cell("e", 64, 300, "missing"),  # no paper value
            cell("f", 16, 100, 100), cell("f", 64, None, 100, "missing")]  # not stored yet
    gap = width_gap(Table("t", [], [], "", [], data), (16, 32, 64))
    assert gap == {"pairs": 5, "incomplete": 1, "rising": ["a C2", "c C2", "e C2"],
                   "reached": ["b C2", "d C2"], "closes": ["a C2"], "stays": ["c C2"]}
    none = width_gap(Table("t", [], [], "", [], data[-2:]), (16, 64))
    assert none["pairs"] == 0 and none["incomplete"] == 1
    assert width_gap(Table("t", [], [], "", [], data), ())["pairs"] == 0  # no ablation


def test_best_of_k_is_the_distribution_of_the_best_of_every_subset():
    from itertools import combinations

    from sst_core.reports.paper1 import DIVERGED, _draw_rank, best_of_k

    values = [None, 60, 1000, 60, DIVERGED, 300, None]  # ties, failures and a diverged run
    for k in range(1, len(values) + 1):
        subsets = list(combinations(values, k))
        brute: dict = {}
        for sub in subsets:
            best = max(sub, key=_draw_rank)
            brute[best] = brute.get(best, 0) + 1 / len(subsets)
        got = best_of_k(values, k)
        assert set(got) == set(values) and sum(got.values()) == pytest.approx(1)
        for v in values:
            assert got[v] == pytest.approx(brute.get(v, 0.0), abs=1e-12), (k, v)
    assert best_of_k(values, len(values))[1000] == 1.0
    assert best_of_k([60], 1) == {60: 1.0}
    for bad in (0, len(values) + 1):
        with pytest.raises(ValueError, match=f"k={bad}"):
            best_of_k(values, bad)


def store_cycle(grid, values, root):
    """Store a constructed record for each config of ``grid``, m_p cycling through
    ``values`` ('diverge': a failed run)."""
    for i, cfg in enumerate(grid):
        cached_run(cfg, fake(values[i % len(values)]), root=root)


def test_runs_needed_ends_at_table2_and_starts_at_the_mean_run(tmp_path, P):
    from sst_core.reports.paper1 import (
        agreement_counts,
        m_p_class,
        table2_runs_needed,
    )

    models = ("mamba", "tanh_rnn")
    grid = paper1.table2_grid(P, models=models)
    assert len(grid) // (len(models) * 3 * len(P.track_depths)) == 4  # four runs per cell
    values = [1000, 60, None, 300, "diverge", 100]
    store_cycle(grid, values, tmp_path)
    t = table2_runs_needed(P, root=tmp_path, models=models)
    assert [d["k"] for d in t.data] == [1, 2, 3, 4]
    full = t.data[-1]
    counts = agreement_counts(table2(P, root=tmp_path, models=models).data)
    assert (full["exact"], full["by_class"]) == (counts["exact"], counts["by_class"])
    assert full["reported"] == counts["reported"]
    # one run per cell: the mean over the runs of the reported cells
    exact = by_class = 0.0
    for key in {(c.model, c.group, c.n_layers) for c in grid}:
        paper = paper_values.TABLE2.get(key, "missing")
        if paper == "missing":
            continue
        runs = [values[i % len(values)] for i, c in enumerate(grid)
                if (c.model, c.group, c.n_layers) == key]
        exact += sum(v == paper for v in runs) / len(runs)
        by_class += sum(v != "diverge" and m_p_class(v) == m_p_class(paper)
                        for v in runs) / len(runs)
    assert t.data[0]["exact"] == pytest.approx(exact)
    assert t.data[0]["by_class"] == pytest.approx(by_class)
    assert full["compute_h"] > 0
    assert t.data[0]["compute_h"] == pytest.approx(full["compute_h"] / 4)
    two = table2_runs_needed(replace(P, track_seeds=(0,)), root=tmp_path, models=models)
    assert [d["k"] for d in two.data] == [1, 2]  # two runs per cell
    assert get_report("table2_runs_needed") is table2_runs_needed
    one = replace(P, track_seeds=(0,), track_lrs=(1e-3,))
    assert [d["k"] for d in table2_runs_needed(one, root=tmp_path, models=models).data] == [1]


def test_tokens_after_a_step_weights_each_epoch_by_its_length():
    from sst_core.reports.paper1 import tokens_after

    history = {"step": [25, 50, 75], "length": [2, 4, 60]}
    assert tokens_after(history, 30) == (20 * 4 + 25 * 60, 25 * 2 + 25 * 4 + 25 * 60)
    assert tokens_after(history, 0) == (1650, 1650)
    assert tokens_after(history, 75) == (0, 1650) == tokens_after(history, 1000)
    assert tokens_after({"step": [], "length": []}, 3) == (0, 0)


def test_compute_split_shares_out_each_run_by_the_tokens_it_read(tmp_path, P):
    from sst_core.reports.paper1 import table2_compute_split
    from sst_core.store.records import run_compute_s

    history = {"step": [25, 50, 75, 100], "length": [2, 60, 60, 60], "accuracy": [1] * 4,
               "loss": [0] * 4}

    def run(kind):
        def fn(cfg):
            cp = {"passed_60": {"m_p": 100, "step": 50}, "end": {"m_p": 100, "step": 100},
                  "heldout": {"m_p": 100, "step": 75}}
            if kind == "never":
                cp = {"passed_60": None, "heldout": None, "end": {"m_p": None, "step": 100}}
            elif kind == "unmet":
                cp["heldout"] = None
            return {"m_p": 100 if kind != "never" else None, "eval": {}, "history": history,
                    "checkpoints": cp}
        return fn

    grid = paper1.table2_grid(P, models=("mamba",), groups=("C2",))
    kinds = ["met", "never", "unmet", "met"]
    assert len(grid) == len(kinds)
    for cfg, kind in zip(grid, kinds):
        cached_run(cfg, run(kind), root=tmp_path)
    records = {kind: [] for kind in kinds}
    from sst_core.reports import stored_record
    for cfg, kind in zip(grid, kinds):
        records[kind].append(run_compute_s(stored_record(cfg, tmp_path)) / 3600)
    s = table2_compute_split(P, root=tmp_path, models=("mamba",))
    assert (s["runs"], s["criterion_met"], s["never_60"]) == (4, 2, 1)
    share = 25 * 60 / (25 * 2 + 75 * 60)  # the last epoch of four
    assert s["after_criterion_h"] == pytest.approx(share * sum(records["met"]))
    assert s["never_60_h"] == pytest.approx(sum(records["never"]))
    assert s["compute_h"] == pytest.approx(sum(sum(v) for v in records.values()))
    empty = table2_compute_split(P, root=tmp_path / "none", models=("mamba",))
    assert empty["runs"] == 0 and empty["compute_h"] == 0


def test_slices_of_the_grid_keep_one_value_of_one_axis(tmp_path, P):
    from sst_core.reports.paper1 import (
        agreement_counts,
        grid_slices,
        m_p_class,
        table2_slices,
    )

    models = ("mamba", "tanh_rnn")
    grid = paper1.table2_grid(P, models=models)
    values = [1000, 60, None, 300, "diverge", 100, 200]
    store_cycle(grid, values, tmp_path)
    assert [label for label, _ in grid_slices(P)] == [
        "whole grid", "lr 0.001", "lr 0.0001", "seed 0", "seed 1"]
    t = table2_slices(P, root=tmp_path, models=models)
    whole = t.data[0]
    counts = agreement_counts(table2(P, root=tmp_path, models=models).data)
    assert (whole["exact"], whole["by_class"], whole["reported"]) == (
        counts["exact"], counts["by_class"], counts["reported"])
    assert whole["runs_per_cell"] == 4 and t.data[1]["runs_per_cell"] == 2
    # one slice by hand: seed 1's runs, the best of each cell against the paper
    cells: dict = {}
    for i, cfg in enumerate(grid):
        if cfg.seed == 1:
            cells.setdefault((cfg.model, cfg.group, cfg.n_layers), []).append(
                values[i % len(values)])
    rank = {"diverge": -2, None: -1}
    exact = by_class = 0
    for key, vs in cells.items():
        paper = paper_values.TABLE2.get(key, "missing")
        if paper == "missing":
            continue
        best = max(vs, key=lambda v: rank.get(v, v))
        exact += best == paper
        by_class += best != "diverge" and m_p_class(best) == m_p_class(paper)
    seed1 = next(d for d in t.data if d["slice"] == "seed 1")
    assert (seed1["exact"], seed1["by_class"]) == (exact, by_class)
    assert sum(d["compute_h"] for d in t.data if d["slice"].startswith("seed")) == (
        pytest.approx(whole["compute_h"]))
    assert get_report("table2_slices") is table2_slices
    one = replace(P, track_seeds=(0,), track_lrs=(1e-3,))
    assert len(table2_slices(one, root=tmp_path, models=models).data) == 1  # nothing to slice
    # two state sizes: each model's smaller and larger of its own list
    two = replace(P, track_d_states=(8, 16), track_rnn_widths=(16, 32))
    labels = [label for label, _ in grid_slices(two)]
    assert labels[1:3] == ["smaller state (N 8, RNN width 16)", "larger state (N 16, RNN width 32)"]
    keep_small = grid_slices(two)[1][1]
    kept = [c for c in paper1.table2_grid(two, models=models) if keep_small(c)]
    assert {(c.model, c.d_state) for c in kept} == {("mamba", 8), ("tanh_rnn", 16)}


def test_the_pilots_change_one_thing_at_a_time_and_add_runs_only():
    from dataclasses import fields

    from sst_core.experiments.registry import SWEEPS, chapter_sweeps, phases
    from sst_core.spec.configs import config_hash

    S = profiles.PROFILES["standard"]
    grid = paper1.pilot_grid(S)
    assert len(grid) == len(paper1.PILOT_CELLS) * 3 * len(paper1.PILOT_CHANGES) == 63
    existing = {config_hash(c) for name in SWEEPS if name != "pilots_60"
                for phase in phases(name, S) for c in phase}
    shared = [c for c in grid if config_hash(c) in existing]
    narrow = [c for c in shared if c.d_model == 64]  # the width ablation's
    assert {(c.model, c.group) for c in narrow} == {("negative_mamba", "C6"),
                                                    ("negative_mamba", "S3")}
    assert set(narrow) <= set(paper1.width_grid(S)) and len(narrow) == 6
    wide = [c for c in shared if c.d_model == 128]  # the recompute's (sst sweep wide)
    assert set(wide) <= set(paper1.table2_wide_grid(S)) and len(wide) == 9
    assert len(shared) == 15
    for cell in paper1.PILOT_CELLS:
        bases = paper1.pilot_base(S, cell)
        assert len(bases) == 3 and {c.seed for c in bases} == set(S.track_seeds)
        assert all(config_hash(b) in existing for b in bases)  # Table 2's own runs
        for base in bases:
            for name, variant in paper1.pilot_variants(base).items():
                changed = [f.name for f in fields(base)
                           if getattr(base, f.name) != getattr(variant, f.name)]
                assert changed == [paper1.PILOT_CHANGES[name]], name
    v = paper1.pilot_variants(paper1.pilot_base(S, paper1.PILOT_CELLS[0])[0])
    assert v["steps_x3"].max_steps == 3 * S.track_max_steps
    assert v["gate_at_pass"].curriculum_threshold == v["gate_at_pass"].pass_threshold == 0.9
    assert v["no_curriculum"].curriculum_start == v["no_curriculum"].curriculum_max == 60
    assert (v["d_model_64"].d_model, v["d_model_128"].d_model) == (64, 128)
    assert (v["lr_5e-4"].lr, v["lr_1e-4"].lr) == (5e-4, 1e-4)
    assert "pilots_60" in SWEEPS and "pilots_60" in chapter_sweeps("p1_table2")


def test_the_table2_chapters_numbers_count_the_reports_data():
    from sst_core.reports.paper1 import (disagreement_numbers, pair_names, retrain_numbers,
                                         runs_needed_numbers, table2_numbers)

    def cell(model, group, m_p, paper, agreement, n_runs=3, status="ok", never_60=0):
        return {"model": model, "group": group, "m_p": m_p, "paper": paper,
                "paper_reported": paper != "missing", "n_runs": n_runs, "status": status,
                "agreement": agreement, "n_ok": n_runs, "never_60": never_60}

    data = [cell("tanh_rnn", "S3", 1000, 1000, "agree"),
            cell("tanh_rnn", "C2", 900, 1000, "close"),
            cell("mamba", "S3", 1000, None, "differ"),  # affine on S3 at 1000
            cell("mamba", "C2", None, None, "agree", never_60=3),  # no run learned 60
            cell("mamba", "C6", None, None, "agree", never_60=2),  # one run did
            cell("linear_attention", "S3", 100, "missing", "not reported"),  # affine, S3
            cell("aussm", "S3", None, 100, "no runs", n_runs=0, status="no runs")]
    assert table2_numbers(data) == {
        "cells": 5, "agree": 3, "close": 1, "by_class": 4, "class_cells": 5,
        "fail_agree": 2, "fail_never_60": 1,
        "state_dependent": 2, "state_dependent_1000": 1, "affine_s3": 2, "affine_s3_1000": 1,
        # the paper's own: both state-dependent cells at 1000; the affine S3 cell it
        # reports (Mamba) fails
        "paper_state_dependent": 2, "paper_state_dependent_1000": 2, "paper_affine_s3": 1,
        "paper_affine_s3_1000": 0}

    def differs(kind, one_apart, reasons, covered):
        return {"kind": kind, "one_apart": one_apart, "reasons": reasons,
                "rules": {"width": {"covered": covered}}}

    assert disagreement_numbers([differs("class", False, ["never_60"], False),
                                 differs("exact", True, [], True),
                                 differs("exact", False, ["width", "grid"], True),
                                 differs("class", True, [], False)]) == {
        "differs": 4, "class": 2, "one_apart": 1, "never_60": 1, "unexplained": 2,
        "width_covered": 2, "width": 1}

    total = {"group": "all", "n": 10, "same_m_p": 7, "one_apart": 2, "further": 1,
             "seed_pairs": {"n": 20, "same": 9, "one": 6, "further": 5}}
    assert retrain_numbers([{"group": "S3"}, total]) == {
        "again": 10, "same": 7, "one": 2, "further": 1, "seed_pairs": 20, "seed_same": 9,
        "seed_one": 6, "seed_further": 5}
    assert set(retrain_numbers([]).values()) == {0}  # nothing trained again

    needed = [{"k": 1, "exact": 2.5, "by_class": 4.0, "compute_h": 0.5, "reported": 6,
               "cells_best_in_one_run": 3},
              {"k": 8, "exact": 3.0, "by_class": 5.0, "compute_h": 4.0, "reported": 6,
               "cells_best_in_one_run": 3}]
    slices = [{"slice": "whole grid", "by_class": 9, "exact": 9},  # left out of lo / hi
              {"slice": "lr 0.001", "by_class": 4, "exact": 2},
              {"slice": "seed 0", "by_class": 4, "exact": 3},
              {"slice": "seed 1", "by_class": 6, "exact": 1}]
    out = runs_needed_numbers(needed, slices)
    assert (out["one_exact"], out["one_by_class"], out["full_compute_h"]) == (2.5, 4.0, 4.0)
    assert (out["k_full"], out["reported"], out["best_in_one_run"]) == (8, 6, 3)
    assert (out["slice_lo"], out["slice_lo_name"]) == (4, "lr 0.001")  # ties: fewer exact
    assert (out["slice_hi"], out["slice_hi_name"]) == (6, "seed 1")
    assert runs_needed_numbers([], [])["k_full"] == 0

    assert pair_names(["aussm C2", "mamba3 C6"]) == "AUSSM on C2; Mamba-3 on C6"
    assert pair_names([]) == "none"


def test_table3_numbers_say_whether_the_failing_rows_learned_the_training_length():
    from sst_core.reports.paper1 import table3_numbers

    def row(phi, status, m_p, agreement, never_60, longest, acc, n_ok=3):
        return {"phi": phi, "status": status, "m_p": m_p, "agreement": agreement,
                "n_runs": n_ok, "n_ok": n_ok, "never_60": never_60,
                "longest_trained": longest, "acc_60": acc}

    data = [row("tanh", "ok", 1000, "agree", 0, 60, [0.99, 1.0, 1.0]),
            row("identity", "fail", None, "agree", 3, 2, [0.19, 0.2, 0.21]),
            row("sphere", "fail", None, "agree", 2, 60, [0.18, 0.5, 0.85]),  # one learned
            {**row("min", "missing", None, "no runs", 0, None, [], n_ok=0), "n_runs": 0}]
    out = table3_numbers(data)
    assert out == {"rows": 3, "agree": 3, "fail_rows": 2, "fail_never_60": 1,
                   "fail_longest": 60, "fail_acc_lo": 0.18, "fail_acc_hi": 0.85,
                   "uniform_guess": 1 / 6}
    assert table3_numbers(data[:1])["fail_longest"] is None


def test_table3_data_keeps_how_far_each_rows_runs_got(tmp_path, P):
    def run(m_p, passed, longest, acc):
        def fn(cfg):
            return {"m_p": m_p, "final_train_length": longest,
                    "eval": {"60": {"token": acc, "final": acc, "sequence": 0.0}},
                    "checkpoints": {"passed_60": {"step": 9, "m_p": m_p} if passed else None,
                                    "heldout": None, "end": {"step": 10, "m_p": m_p}}}
        return fn

    for i, cfg in enumerate(paper1.table3_grid(P)):
        if cfg.phi == "tanh":
            cached_run(cfg, run(1000, True, 60, 1.0), root=tmp_path)
        elif cfg.phi == "sphere":
            cached_run(cfg, run(None, False, 2 + 2 * (i % 2), (0.2, 0.25)[i % 2]),
                       root=tmp_path)
    data = {d["phi"]: d for d in table3(P, root=tmp_path).data}
    n = sum(c.phi == "sphere" for c in paper1.table3_grid(P))
    assert (data["sphere"]["n_ok"], data["sphere"]["never_60"]) == (n, n)
    assert data["sphere"]["longest_trained"] == 4
    assert sorted(set(data["sphere"]["acc_60"])) == [0.2, 0.25]
    assert (data["tanh"]["never_60"], data["tanh"]["longest_trained"]) == (0, 60)
    assert data["relu"]["n_ok"] == 0 and data["relu"]["longest_trained"] is None


def test_the_protocol_table_sets_ours_beside_the_papers(P):
    from sst_core.reports.paper1 import table2_protocol

    t = table2_protocol(P)
    by = {d["item"]: d for d in t.data}
    cfg = paper1.table2_grid(P)[0]
    assert by["d_model"]["ours"] == {"d_model": P.track_d_model}
    assert by["d_model"]["paper"] == {"d_model": paper_values.TABLE2_D_MODEL}
    assert by["words per step (batch)"]["ours"] == {"batch": cfg.batch}
    assert by["step cap"]["ours"] == {"max_steps": cfg.max_steps}
    assert by["step cap"]["paper"] == {"max_steps": None}
    assert by["learning rates"]["ours"] == {"lrs": tuple(P.track_lrs)}
    assert by["runs per cell"]["ours"]["runs_per_cell"] == (
        len(P.track_d_states) * len(P.track_schedules) * len(P.track_lrs)
        * len(P.track_seeds))
    assert by["runs per cell"]["paper"] == {"runs_per_cell": paper_values.TABLE2_RUNS_PER_CELL}
    rows = {r[0]: r[1:] for r in t.rows}
    assert rows["step cap"] == [str(cfg.max_steps), "—"]  # the paper does not say
    assert rows["curriculum gate"] == [f"{cfg.curriculum_threshold:.0%}", "95%"]
    assert rows["learning rates"][1] == "0.0001, 0.0005, 0.001"
    assert rows["learning-rate schedules"] == [", ".join(P.track_schedules), "3, unnamed"]
    with pytest.raises(ValueError, match="empty"):
        table2_protocol(P, models=())


def test_m_p_read_from_final_position_accuracy(tmp_path, P):
    from sst_core.reports.paper1 import final_position_m_p, table2_final_reading

    def run(token, final):
        def fn(cfg):
            ev = {str(L): {"token": t, "final": f, "sequence": 0.0}
                  for L, t, f in zip((60, 100, 200), token, final)}
            return {"m_p": max((L for L, t in zip((60, 100, 200), token) if t >= 0.9),
                               default=None) if token[0] >= 0.9 else None, "eval": ev}
        return fn

    rec = {"config": {"pass_threshold": 0.9},
           "metrics": {"eval": {"60": {"final": 0.95}, "100": {"final": 0.8},
                                "200": {"final": 0.91}}}}
    assert final_position_m_p(rec) == 200  # the paper's wording: any length that passes
    rec["metrics"]["eval"]["60"]["final"] = 0.5
    assert final_position_m_p(rec) is None

    models = ("tanh_rnn", "mamba")
    grid = paper1.table2_grid(P, models=models, groups=("S3",))
    # tanh: token passes to 200, final to 100 (lower); mamba: token fails, final at 60
    # (higher) in one run; the paper: tanh 1000, mamba fail
    for cfg in grid:
        if cfg.model == "tanh_rnn":
            cached_run(cfg, run((1.0, 0.95, 0.92), (0.99, 0.91, 0.5)), root=tmp_path)
        elif cfg.seed == P.track_seeds[0] and cfg.lr == P.track_lrs[0]:
            cached_run(cfg, run((0.5, 0.3, 0.2), (0.93, 0.3, 0.2)), root=tmp_path)
    out = table2_final_reading(P, root=tmp_path, models=models)
    assert out == {"cells": 2, "same": 0, "lower": 1, "higher": 1, "reported": 2,
                   "token_exact": 1, "token_by_class": 1, "final_exact": 0,
                   "final_by_class": 0}


def test_narrow_cells_write_an_agreement_once_and_the_range_below(tmp_path, P):
    from sst_core.reports.paper1 import LINE_BREAK

    models = ("tanh_rnn", "mamba")
    grid = paper1.table2_grid(P, models=models, groups=("S3", "C2"))
    for cfg in grid:
        if cfg.model == "tanh_rnn":
            m_p = (1000 if cfg.seed == 0 else 200) if cfg.group == "S3" else 500
        else:
            m_p = None if cfg.group == "S3" else (60 if cfg.seed == 0 else None)
        cached_run(cfg, fake(m_p), root=tmp_path)
    inline = table2(P, root=tmp_path, models=models)
    narrow = table2(P, root=tmp_path, models=models, narrow=True)
    assert inline.rows[0][inline.columns.index("S3 L1")] == "1000 [200–1000] / 1000 ✓"
    # the class is a bold row over its models, not a column
    assert narrow.columns == [c for c in inline.columns if c != "class"]
    assert [r[0] for r in narrow.rows] == ["**state-dependent**", "tanh RNN", "**affine**",
                                           "Mamba"]
    assert set(narrow.rows[0][1:]) == {""}
    col = {c: narrow.columns.index(f"{c} L1") for c in ("S3", "C2")}
    assert narrow.rows[1][col["S3"]] == f"1000\u00a0✓{LINE_BREAK}[200–1000]"
    assert narrow.rows[1][col["C2"]] == "500 / 1000\u00a0✗"  # not agreeing: both values
    assert narrow.rows[3][col["S3"]] == "fail\u00a0✓"  # both fail
    assert narrow.rows[3][col["C2"]] == f"60 / fail\u00a0≈{LINE_BREAK}[fail–60]"
    assert narrow.data == inline.data


def test_the_architectures_of_table2_are_every_model_with_its_size(P):
    from sst_core.models.registry import build
    from sst_core.reports.paper1 import table2_models

    t = table2_models(P, models=("tanh_rnn", "mamba"))
    assert [d["model"] for d in t.data] == ["tanh_rnn", "mamba"]
    assert [d["class"] for d in t.data] == ["state-dependent", "affine"]
    mamba = t.data[1]
    assert mamba["d_state"] == paper1.d_state_grid(P, "mamba")[0]
    assert mamba["parameters"] == sum(p.numel() for p in build(
        "mamba", 6, 6, d_model=P.track_d_model, d_state=mamba["d_state"]).parameters())
    assert t.rows[1][3] == f"{mamba['parameters']:,}"


def test_before_and_after_reads_both_widths_of_the_widened_models_only(tmp_path, P):
    """Table 2 at the two widths: RNN-family rows are left out (their runs are the same at
    both), a cell shows its stored runs while its wide grid is incomplete, and the counts
    compare complete cells only."""
    from sst_core.reports.paper1 import before_after_numbers, table2_before_after

    models = ("tanh_rnn", "negative_mamba")
    narrow = paper1.table2_grid(P, models=models)
    wide = paper1.table2_wide_grid(P, models=models)
    assert {c.d_model for c in wide if c.model == "negative_mamba"} == {P.track_d_model_wide}
    assert [c for c in wide if c.model == "tanh_rnn"] == [c for c in narrow
                                                          if c.model == "tanh_rnn"]
    for cfg in narrow:  # before: every cell fails at 60
        cached_run(cfg, fake(None), root=tmp_path)
    s3 = [c for c in wide if c.model == "negative_mamba" and c.group == "S3"]
    c2 = [c for c in wide if c.model == "negative_mamba" and c.group == "C2"]
    for cfg in s3:  # after: S3 complete at 100, the paper's L1 value
        cached_run(cfg, fake(100), root=tmp_path)
    cached_run(c2[0], fake(1000), root=tmp_path)  # C2: one run of two so far
    t = table2_before_after(P, root=tmp_path, models=models)
    assert [d["model"] for d in t.data] == ["negative_mamba"] * 3  # no tanh RNN row
    by = {d["group"]: d for d in t.data}
    assert by["S3"]["complete"] and not by["C2"]["complete"] and not by["C6"]["complete"]
    assert by["S3"]["before"]["m_p"] is None and by["S3"]["after"]["m_p"] == 100
    assert by["S3"]["paper"] == paper_values.TABLE2[("negative_mamba", "S3", 1)] == 100
    rows = {r[1]: r for r in t.rows}
    assert rows["S3"][4] == "fail ✗" and rows["S3"][5] == "100 ✓"
    assert rows["C2"][5] == f"1000 ✓ (1 of {len(c2)} runs)"
    assert rows["C6"][5] == "missing"
    # no run of these fakes has a passed_60 checkpoint: every ok run never passed 60
    assert rows["S3"][6] == f"{len(s3)} of {len(s3)} → {len(s3)} of {len(s3)}"
    assert rows["C6"][6].endswith("→ —")
    n = before_after_numbers(t.data)
    assert n["cells"] == 3 and n["complete"] == 1
    assert n["class_cells"] == 1  # C2 is not complete at the wider width: not compared
    assert (n["by_class_before"], n["by_class_after"]) == (0, 1)
    assert (n["agree_before"], n["agree_after"]) == (0, 1)
    assert n["ok_after"] == len(s3) + 1 and n["never_60_after"] == len(s3) + 1
    assert "1 of 3 cells are complete" in t.note
    assert (n["stored_after"], n["runs_after"]) == (
        len(s3) + 1, len([c for c in wide if c.model == "negative_mamba"]))
    every = get_report("table2_before_after")(P, root=tmp_path).data  # every model
    assert [d for d in every if d["model"] == "negative_mamba"] == t.data
    assert "tanh_rnn" not in {d["model"] for d in every}
    # the book's form reads no part of a grid: an incomplete cell says how many runs it has
    book = table2_before_after(P, root=tmp_path, models=models, partial=False)
    rows = {r[1]: r for r in book.rows}
    assert rows["S3"][5] == "100 ✓"  # complete: read as before
    assert rows["C2"][5] == f"1 of {len(c2)} runs"
    assert rows["C6"][5] == f"0 of {len(c2)} runs"
    assert rows["C2"][6] == rows["C6"][6] == f"{len(c2)} of {len(c2)} → —"
    assert before_after_numbers(book.data) == n and book.data == t.data
    assert "is read once all are" in book.note and "(k of n runs)" not in book.note
