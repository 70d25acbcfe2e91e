"""The "Beyond the papers" grids and tables: which runs, and tables from records only."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from sst_core.book import params
from sst_core.experiments import beyond, paper1
from sst_core.experiments import runs as experiments_runs
from sst_core.experiments.paper1 import figure4_runs, s3_runs
from sst_core.experiments.registry import SWEEPS, chapter_sweeps, phases
from sst_core.reports import beyond as rb
from sst_core.spec import profiles
from sst_core.spec.configs import ExactTrackerConfig
from sst_core.spec.profiles import ConfigError

P = profiles.get_profile("smoke")
Q = profiles.get_profile("quick")


def test_harder_groups_grid_is_table2_on_the_new_groups():
    cfgs = beyond.harder_groups_grid(Q)
    assert {c.group for c in cfgs} == set(beyond.HARDER_GROUPS)
    assert {c.model for c in cfgs} == set(paper1.TABLE2_MODELS)
    s3 = paper1.table2_grid(Q, groups=("S3",))
    assert len(cfgs) == 3 * len(s3)
    assert {replace(c, group="S3") for c in cfgs} == set(s3)  # same protocol, other group


def test_figure4_on_a5_is_the_s3_sweep_moved():
    a5 = beyond.figure4_runs_on(Q, "A5")
    assert [replace(c, group="S3") for c in a5] == figure4_runs(Q)
    assert beyond.figure4_runs_on(Q, "S3") == figure4_runs(Q)
    runs = beyond.analysed_runs(Q, "A5")
    assert len(runs) == len(set(runs)) and set(a5) <= set(runs)
    assert {c.model for c in runs} == {c.model for c in s3_runs(Q)}
    with pytest.raises(ValueError, match="unknown group 'A4'"):
        beyond.figure4_runs_on(Q, "A4")


def test_a5_gets_more_held_out_words():
    assert beyond.n_samples_for(Q, "S3") == Q.diag_samples
    assert beyond.n_samples_for(Q, "A5") == 10 * Q.diag_samples
    diag = beyond.diagnostics_grid_on(Q, "A5")
    assert {d.n_samples for d in diag} == {10 * Q.diag_samples}
    lf = beyond.label_free_grid(Q)
    assert {c.run.group for c in lf} == {"C2", "C6", "S3", "A4", "A5", "C2xS3"}
    assert len({c.run for c in lf}) == len(lf) == len(beyond.tracker_runs(Q))
    assert set(paper1.table3_grid(Q)) <= {c.run for c in lf}
    assert all(c.n_samples == beyond.n_samples_for(Q, c.run.group) for c in lf)
    assert all(1 <= c.window_start < c.t_obs <= c.rollout for c in lf + beyond.label_free_grid(P))


def test_semi_affine_grid_pairs_each_repair_with_its_original():
    cfgs = beyond.semi_affine_grid(Q)
    models = {c.model for c in cfgs}
    assert models == set(beyond.SEMI_AFFINE_MODELS + beyond.SEMI_AFFINE_BASELINES)
    from sst_core.models import expected_affine

    assert not any(expected_affine(m) for m in beyond.SEMI_AFFINE_MODELS)
    assert all(expected_affine(m) for m in beyond.SEMI_AFFINE_BASELINES)
    assert {d.run.group for d in beyond.semi_affine_diagnostics(Q)} == {"S3"}


def test_delta_grid_covers_every_model_on_one_grid():
    cfgs = beyond.delta_grid(Q)
    models = set(beyond.DELTA_MODELS + beyond.TORCH_RNNS + beyond.DELTA_COMPARED)
    assert {c.model for c in cfgs} == models
    assert {c.group for c in cfgs} == set(beyond.DELTA_GROUPS)
    B = beyond.beyond_profile(Q)
    per_model = len(beyond.DELTA_GROUPS) * len(B.track_depths) * len(B.track_lrs) * len(
        B.track_seeds) * len(B.track_schedules)
    assert len(cfgs) == len(set(cfgs)) == len(models) * per_model  # one width per family here
    # the compared models' runs are Table 2's and the harder groups' (trained once)
    shared = set(paper1.table2_grid(Q)) | set(beyond.harder_groups_grid(Q))
    assert {c for c in cfgs if c.model in beyond.DELTA_COMPARED} <= shared
    diag = beyond.delta_diagnostics(Q)
    assert {d.run.group for d in diag} == {"S3"} and {d.run.model for d in diag} == models
    from sst_core.models import expected_affine

    assert all(expected_affine(m) for m in beyond.DELTA_MODELS)
    assert not any(expected_affine(m) for m in beyond.TORCH_RNNS)


def test_torch_module_grid_mirrors_the_registry_diagnostics():
    grid = beyond.torch_module_grid(Q)
    assert sorted(c.run.model for c in grid) == sorted(beyond.TORCH_RNNS)
    diag = {d.run: d for d in beyond.delta_diagnostics(Q)}
    for c in grid:
        d = diag[c.run]  # the same run, diagnosed on the same words
        assert (c.n_samples, c.rollout, c.seed) == (d.n_samples, d.rollout, d.seed)
        assert c.run.group == "S3" and c.run.lr == Q.track_lrs[0]


def test_delta_predictions_follow_the_models_configs():
    t = rb.delta_predictions()
    rows = {d["model"]: d for d in t.data}
    assert rows["deltanet"]["beta_range"] == 1 and rows["deltaproduct_3"]["n_householder"] == 3
    assert set(rows["deltanet"]["verdicts"].values()) == {"no"}
    assert rows["deltanet_negative"]["verdicts"] == {"C2": "yes", "C6": "no", "S3": "no",
                                                     "A5": "no"}
    assert rows["deltaproduct"]["verdicts"]["S3"] == "yes"


def test_exact_tracker_runs_through_the_public_diagnostics():
    exact, drifted = (ExactTrackerConfig(group="S3", drift=d, n_samples=256, rollout=400,
                                         seed=0, profile="smoke") for d in (0.0, 0.02))
    m0 = beyond.exact_tracker(exact)
    assert m0["T_cross"] is None and m0["failure_mode"] == "none" and m0["is_affine"]
    t1 = m0["theorem1"]
    assert t1["deviation_U"] < 1e-12 and abs(t1["gain"] - 1) < 1e-12 and t1["applies"]
    m1 = beyond.exact_tracker(drifted)
    t1 = m1["theorem1"]
    # still orthogonal on U (neutral), no longer fixing the centroids: it drifts and crosses
    assert abs(t1["gain"] - 1) < 1e-9 and abs(t1["gain_min"] - 1) < 1e-9
    assert t1["deviation_U"] > 1e-3 and m1["T_cross"] is not None
    # a constant drift along U: Corollary 1's linear growth predicts the crossing
    assert m1["corollary1"]["T_pred"] == pytest.approx(m1["T_cross"], rel=0.25)
    with pytest.raises(ConfigError, match="drift"):
        ExactTrackerConfig(group="S3", drift=-1.0, n_samples=8, rollout=10, seed=0,
                           profile="smoke")


def test_sweeps_and_chapters_know_the_new_experiments():
    for name in ("harder_groups", "figure4_a5", "label_free", "spectra", "semi_affine", "delta"):
        assert name in SWEEPS
        ph = phases(name, P)
        assert ph and all(ph)
    for nb in ("beyond_groups", "beyond_label_free", "beyond_spectra", "beyond_semi_affine",
               "beyond_delta"):
        assert chapter_sweeps(nb) and nb in params.NOTEBOOKS
        assert all(s in SWEEPS for s in chapter_sweeps(nb))


def test_group_facts_table_needs_no_records():
    t = rb.group_facts(P)
    rows = {r[0]: r for r in t.rows}
    assert rows["A5"][-2:] == ["no", "yes"]  # not solvable, simple
    assert rows["A4"][-2:] == ["yes", "no"]
    json.loads(t.to_json())


def test_tables_without_records_say_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    t = rb.harder_groups(P)
    assert all(cell == "missing" for row in t.rows for cell in row[2:])
    f4 = rb.figure4_groups(P)
    assert f4.data[0]["n"] == 0 and "fewer than three runs" in f4.note
    assert rb.label_free(P).data[0]["n"] == 0
    assert all(d["n"] == 0 for d in rb.label_free_warning(P).data)
    assert rb.warning_same_as(rb.label_free_warning(P), "decoded") == {
        "drift": {"same": 0, "n": 0}, "power": {"same": 0, "n": 0}}
    assert "within a factor 1.25" in rb.label_free(P).columns[3]
    sa = rb.semi_affine(P)
    assert all("missing" in row for row in sa.rows)
    assert rb.semi_affine_cost([]) == []
    dt = rb.delta(P)
    assert all(cell == "missing" for row in dt.rows for cell in row[2:])
    assert {d["diagnostics"] for d in dt.data} == {"missing"}
    assert all(cell == "missing" for row in rb.delta_lens(P).rows for cell in row[1:])
    assert all(row[2:] == ["missing"] * 5 for row in rb.exact_trackers(P).rows)
    assert all(row[3:] == ["missing"] * 5 for row in rb.torch_module_check(P).rows)
    assert {v["reaches_longest"] for v in rb.delta_verdicts(P)} == {None}
    n = rb.delta_summary(P)  # the chapter's numbers: nothing measured, nothing counted
    assert n["dp_S3"] == n["dp_A5"] == {"status": "missing", "m_p": None}
    assert (n["n_theory"], n["n_yes"], n["n_no"], n["n_torch"]) == (0, 0, 0, 0)
    assert n["exact_S3"] is None and n["torch_q_diff"] is None and n["dp_gain"] is None
    assert n["exact_missed"] is None and n["lens"] == {} and n["untested_T_max"] is None
    cells = len(dt.data) * len(dt.data[0]["cells"])
    assert n["per_cell"] * cells == len(beyond.delta_grid(P))


def test_a_cell_whose_every_run_diverged_says_so(tmp_path, monkeypatch):
    """As Table 2 does: 'diverged' (failed records), not 'missing' (none)."""
    from sst_core.store.records import store_record

    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    cell = [c for c in beyond.delta_grid(P) if (c.model, c.group) == ("deltanet", "C2")]
    assert cell
    for cfg in cell:
        store_record(cfg, "failed", "RunFailed: loss became nan at step 3", {}, 0.1)
    t = rb.delta(P)
    col = t.columns.index(f"C2 L{cell[0].n_layers}")
    rows = {r[0]: r for r in t.rows}
    assert rows["DeltaNet"][col] == "diverged" and rows["DeltaNet, β in [0, 2]"][col] == "missing"
    cells = next(d for d in t.data if d["model"] == "deltanet")["cells"]
    assert cells[f"C2 L{cell[0].n_layers}"] == {"status": "diverged", "m_p": None}
    assert "'diverged'" in t.note


def test_the_torch_module_check_tells_failed_from_missing(tmp_path, monkeypatch):
    from sst_core.store.records import store_record

    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    plain = beyond.torch_module_grid(P)[0]
    registry = next(d for d in beyond.delta_diagnostics(P) if d.run == plain.run)
    store_record(plain, "failed", "RunFailed: loss became nan at step 3", {}, 0.1)
    assert rb.torch_module_check(P).rows[0][3:] == ["missing"] * 5  # registry's not stored
    store_record(registry, "failed", "RunFailed: loss became nan at step 3", {}, 0.1)
    t = rb.torch_module_check(P)
    assert t.rows[0][3:] == ["failed"] * 5 and t.data[0]["status"] == "failed"


def test_a_crossing_time_predicts_m_p_by_the_stated_rule():
    where = {"trained": 60, "longest": 1000, "rollout": 1000}
    assert rb.crossing_predicts(600, 573, **where) and rb.crossing_predicts(600, 1200, **where)
    assert not rb.crossing_predicts(600, 1201, **where)
    assert not rb.crossing_predicts(600, 299, **where)
    assert not rb.crossing_predicts(300, None, **where)  # no crossing, yet it failed at 300
    assert rb.crossing_predicts(600, None, **where)  # no crossing within 2 x 600 > rollout
    assert rb.crossing_predicts(None, 2, **where) and rb.crossing_predicts(None, 120, **where)
    assert not rb.crossing_predicts(None, 121, **where)
    assert not rb.crossing_predicts(None, None, **where)  # it fails, nothing crosses
    assert rb.crossing_predicts(1000, None, **where) and rb.crossing_predicts(1000, 500, **where)
    assert not rb.crossing_predicts(1000, 499, **where)
    assert rb.crossing_predicts(1000, 400, **where, factor=2.5)


def test_the_theory_check_reads_the_householder_models_diagnostics(tmp_path, monkeypatch):
    import numpy as np

    from sst_core.store.codec import curve_times, encode_curve
    from sst_core.store.records import store_record

    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    assert rb.delta_theory_check(P) == []
    diag = [d for d in beyond.delta_diagnostics(P) if d.run.model == "deltaproduct"][0]
    t = np.arange(1, diag.rollout + 1)
    # sqrt(R_U(t)) = 0.1 + 0.004 t with M = 1: Corollary 1 crosses tau = 0.5 at 151.8
    metrics = {"m_p": 100, "T_cross": 150, "is_affine": True,
               "q_U": encode_curve((0.1 + 0.004 * t) ** 2), "M": encode_curve(np.ones(t.size)),
               "curve_t": curve_times(t.size).tolist(),
               "theorem1": {"gain": 0.99, "gain_min": 0.97}, "recovery": {"U": [1.0, 0.6]}}
    store_record(diag, "ok", None, metrics, 0.1)
    (d,) = rb.delta_theory_check(P)
    assert d["model"] == "deltaproduct" and d["m_p"] == 100 and d["T_cross"] == 150
    assert d["T_pred"] == pytest.approx((0.5 ** 0.5 - 0.1) / 0.004, rel=1e-3)
    assert d["measured"] and d["corollary"] and d["passes"]
    assert d["trained"] == diag.run.curriculum_max and d["rollout"] == diag.rollout
    n = rb.delta_summary(P)  # a run that passes 60: counted
    assert (n["measured"], n["n_theory"], n["corollary"], n["n_corollary"]) == (1, 1, 1, 1)
    assert n["n_untested"] == 0 and n["untested_T_max"] is None
    assert rb.delta_theory_table(P).rows[0][-2:] == ["yes", "yes"]
    store_record(diag, "ok", None, dict(metrics, m_p=None), 0.1)  # fails at 60: T too late
    (d,) = rb.delta_theory_check(P)
    assert not d["measured"] and not d["corollary"] and not d["passes"]
    n = rb.delta_summary(P)  # the chapter's counts: only runs that pass 60, its gains the record's
    assert (n["measured"], n["n_theory"], n["corollary"], n["n_corollary"]) == (0, 0, 0, 0)
    assert (n["n_untested"], n["untested_T_max"]) == (1, 150)
    assert (n["dp_gain"], n["dp_gain_min"]) == (0.99, 0.97)
    assert n["lens"]["deltaproduct"]["T_cross"] == 150
    assert n["lens"]["deltaproduct"]["m_p_diag"] is None
    t = rb.delta_theory_table(P)  # the same check as the chapter's table, not counted: (..)
    assert t.data == [d] and t.rows == [["DeltaProduct", "non-diagonal affine", "fail", "150",
                                         format(d["T_pred"], ".4g"), "(no)", "(no)"]]
    store_record(diag, "ok", None, dict(metrics, m_p=None, T_cross=3), 0.1)
    n = rb.delta_summary(P)  # a failing run crossing early: a hit the text does not count
    assert rb.delta_theory_check(P)[0]["measured"] and n["measured"] == n["n_theory"] == 0
    assert rb.delta_theory_table(P).rows[0][-2:] == ["(yes)", "(no)"]
    assert rb.delta_theory_check(P, models=["deltanet"]) == []

def test_the_summary_names_a_perturbed_tracker_that_misses_corollary_1(tmp_path, monkeypatch):
    """Constructed exact-tracker records: the crossing one, and the one whose Corollary 1
    crossing lies inside the rollout while q never crosses (a miss), not one predicted past
    the rollout (no miss)."""
    from sst_core.store.records import store_record

    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    cfgs = {(c.group, c.drift): c for c in beyond.exact_tracker_grid(P)}
    small, large = sorted(d for d in beyond.EXACT_TRACKER_DRIFTS if d > 0)[:2]
    rollout = cfgs["S3", small].rollout

    def metrics(T_cross, T_pred):
        return {"T_cross": T_cross, "failure_mode": "none" if T_cross is None else "climb",
                "theorem1": {"gain": 1.0, "gain_min": 0.9999, "deviation_U": 0.01},
                "is_affine": True, "corollary1": {"T_pred": T_pred}}
    store_record(cfgs["C6", small], "ok", None, metrics(None, 2.0 * rollout), 0.1)  # past it
    n = rb.delta_summary(P)
    assert n["exact_missed"] is None and n["exact_S3"] is None
    assert (n["exact_predicted"], n["exact_predicted_crossed"]) == (0, 0)  # past the rollout
    store_record(cfgs["S3", small], "ok", None, metrics(None, rollout / 2), 0.1)
    store_record(cfgs["S3", large], "ok", None, metrics(rollout // 4, rollout / 5), 0.1)
    n = rb.delta_summary(P)
    assert (n["exact_missed"]["group"], n["exact_missed"]["drift"]) == ("S3", small)
    assert n["exact_missed"]["T_pred"] == rollout / 2 and n["exact_missed"]["rollout"] == rollout
    assert (n["exact_S3"]["drift"], n["exact_S3"]["T_cross"]) == (large, rollout // 4)
    # both predicted inside the rollout; q crosses in the larger drift's only
    assert (n["exact_predicted"], n["exact_predicted_crossed"]) == (2, 1)
    row = next(r for r in rb.exact_trackers(P).rows if r[:2] == ["S3", small])
    assert row[2:] == ["—", format(rollout / 2, ".4g"), "0.9999, 1.0000", "0.01", "yes"]


def test_the_split_counts_failures_of_both_classes_and_names_each_best(tmp_path, monkeypatch):
    """Constructed A5 records: a state-dependent model failing at 60 while an affine one
    passes is counted, and each class's best model is named with its m_p."""
    from sst_core.store.records import store_record

    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    longest = max(beyond.beyond_profile(P).track_eval_lengths)
    m_p = {"tanh_rnn": None, "state_gated_rnn": longest - 1, "token_gated_rnn": longest // 2}
    for cfg in beyond.harder_groups_grid(P):
        if cfg.group == "A5":
            store_record(cfg, "ok", None, {"m_p": m_p.get(cfg.model), "eval": {}}, 0.1)
    (a5,) = [d for d in rb.harder_groups_split(P).data if d["group"] == "A5"]
    assert (a5["state_dependent_fail"], a5["n_state_dependent"]) == (1, 2)
    assert (a5["affine_fail"], a5["n_affine"], a5["affine_reach"]) == (7, 8, 0)
    assert a5["best_state_dependent"] == {"model": "state_gated_rnn", "m_p": longest - 1}
    assert a5["best_affine"] == {"model": "token_gated_rnn", "m_p": longest // 2}
    (row,) = [r for r in rb.harder_groups_split(P).rows if r[0] == "A5"]
    assert row[1:] == ["0 of 2", "1 of 2", "0 of 8", "7 of 8"]
    (s3,) = [d for d in rb.harder_groups_split(P).data if d["group"] == "S3"]
    assert s3["best_state_dependent"] is None and s3["best_affine"] is None  # no records


def test_the_populations_name_their_selection():
    """Figure 4 on S3 is Paper 1's sweep on the whole grid; on A5, and the spectra's affine
    runs, the same models on the narrower beyond grid."""
    S = profiles.get_profile("standard")
    s3, a5 = (rb.figure4_population(S, g) for g in ("S3", "A5"))
    assert s3["runs"] == len(beyond.figure4_runs_on(S, "S3")) > a5["runs"]
    assert s3["depths"] == sorted(S.track_depths) and a5["depths"] == sorted(S.beyond_depths)
    assert s3["schedules"] == sorted(S.track_schedules)
    assert a5["rnn_widths"] == sorted(S.beyond_rnn_widths) and s3["models"] == a5["models"]
    sp = rb.spectra_population(S)
    assert sp["depths"] == sorted(S.beyond_depths) and sp["models"] == a5["models"]
    from sst_core.models.registry import expected_affine
    assert sp["runs"] == sum(expected_affine(c.run.model) for c in beyond.spectra_grid(S))


def test_the_semi_affine_rank_is_the_models_own():
    from sst_core.models.registry import build

    r = rb.semi_affine_rank()
    assert r == build("semi_affine_mamba", 2, 2, d_model=4, d_state=2).layers[0].cfg.rank
    assert f"rank {r} " in rb.semi_affine(P).note


def test_a_repair_goes_beyond_its_original_only_with_a_longer_m_p():
    """Per pair (semi-affine model, its affine original) in one cell: beyond when the
    semi-affine tracks further (or tracks where the original fails); contracting when it
    also shrinks an error inside U; a pair with a cell not computed is not compared."""
    def row(model, status, m_p, rec=None):
        return {"model": model, "cells": {"S3 L1": {"status": status, "m_p": m_p}},
                "recovery_U": rec}

    semi_neg, semi = beyond.SEMI_AFFINE_MODELS
    neg, mamba = beyond.SEMI_AFFINE_BASELINES
    data = [row(semi_neg, "ok", 200, 0.5), row(neg, "fail", None, 0.9),
            row(semi, "ok", 80, 1.2), row(mamba, "ok", 70, 0.8)]
    assert rb.semi_affine_repairs(data, "S3 L1") == {"pairs": 2, "beyond": 2, "contract": 1}
    data[2] = row(semi, "fail", None, 0.3)  # fails: not beyond, even contracting
    assert rb.semi_affine_repairs(data, "S3 L1") == {"pairs": 2, "beyond": 1, "contract": 1}
    data[0] = row(semi_neg, "ok", 60, 0.5)
    data[1] = row(neg, "ok", 60, 0.9)  # the same m_p: not beyond
    assert rb.semi_affine_repairs(data, "S3 L1")["beyond"] == 0
    data[1] = row(neg, "missing", None)
    assert rb.semi_affine_repairs(data, "S3 L1")["pairs"] == 1
    assert rb.semi_affine_repairs(data, "S3 L2") == {"pairs": 0, "beyond": 0, "contract": 0}


def test_the_warning_compares_labellings_tracker_by_tracker():
    def entry(method, fit, preds):
        return {"method": method, "fit": fit, "n": len(preds),
                "per_model": [{"m_p": 100, "raw": a, "loo": b} for a, b in preds]}
    from sst_core.reports import Table

    t = Table("t", [], [], "", [], [entry("oracle", "drift", [(60, 100), (200, 100)]),
                                    entry("decoded", "drift", [(60, 100), (200, 100)]),
                                    entry("clusters", "drift", [(60, 100), (100, 100)])])
    assert rb.warning_same_as(t, "decoded") == {"drift": {"same": 2, "n": 2}}
    assert rb.warning_same_as(t, "clusters") == {"drift": {"same": 1, "n": 2}}
    bad = Table("t", [], [], "", [], [entry("oracle", "drift", [(60, 100)]),
                                      entry("decoded", "drift", [(60, 100), (60, 100)])])
    with pytest.raises(ValueError, match="different trackers"):
        rb.warning_same_as(bad, "decoded")


def test_semi_affine_cost_reads_bench_entries():
    rec = {"device": "cpu", "created_utc": "t", "git_commit": "c",
           "entries": [{"name": "semi_affine_train_s3", "ratio": 2.0},
                       {"name": "tanh_rnn_train_d64", "ratio": 1.0}]}
    out = rb.semi_affine_cost([rec])
    assert [o["name"] for o in out] == ["semi_affine_train_s3"] and out[0]["device"] == "cpu"
    assert out[0]["machine"] == "cpu"  # no hardware block: the device names the machine
    named = rb.semi_affine_cost([dict(rec, hardware={"cpu_model": "AMD EPYC"})])
    assert named[0]["machine"] == "AMD EPYC"
    old = {"device": "gpu", "created_utc": "s", "git_commit": "b",
           "entries": [{"name": "semi_affine_eval_L1000", "ratio": 9.0}]}
    row = dict(name="semi_affine_train_s3", ours_s=0.04, anchor_s=0.01, ratio=4.0,
               sizes={"batch": 64, "rank": 8})
    t = rb.semi_affine_cost_table([old, dict(rec, entries=[row])])  # the newest record only
    assert t.rows == [["one training step (S3, length 60)", "0.0400", "0.0100", "4.00x",
                       "batch 64, rank 8"]] and t.data[0]["ratio"] == 4.0
    assert t.data[0]["machine"] == "cpu"
    assert rb.semi_affine_cost_table([]).rows == []


def test_run_analyses_trains_the_trackers_first(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    from sst_core.reports import stored_record

    cfgs = [c for c in beyond.label_free_grid(P) if c.run.model == "linear_rnn"][:2]
    records = experiments_runs.run_analyses(cfgs, "label-free", stack=2)
    assert [r["status"] for r in records] == ["ok", "ok"]
    assert all(stored_record(c.run)["status"] == "ok" for c in cfgs)
    assert [r["metrics"]["training_run"] for r in records] == \
        [stored_record(c.run)["run_id"] for c in cfgs]
    assert "not analysed" not in capsys.readouterr().out


def test_the_beyond_grid_is_a_stated_subset_of_table2s():
    from sst_core.spec.profiles import PROFILES

    P = PROFILES["standard"]
    B = beyond.beyond_profile(P)
    assert B.track_depths == P.beyond_depths and B.track_schedules == P.beyond_schedules
    assert B.track_lrs == P.track_lrs and B.track_seeds == P.track_seeds
    assert set(paper1.table2_grid(B)) <= set(paper1.table2_grid(P))
    harder = beyond.harder_groups_grid(P)
    assert {c.n_layers for c in harder} == set(P.beyond_depths)
    assert {c.d_state for c in harder} <= set(P.beyond_d_states) | set(P.beyond_rnn_widths)
    # Figure 4 on S3 keeps Paper 1's full sweep; A5 takes the subset
    assert beyond.figure4_runs_on(P, "S3") == figure4_runs(P)
    assert len(beyond.figure4_runs_on(P, "A5")) < len(figure4_runs(P))
    assert {c.run for c in beyond.spectra_grid(P)} <= set(beyond.analysed_runs(P, "S3"))


def test_theorem1_counts_split_the_affine_trackers_by_passing():
    """Of the affine models that pass and that fail, how many have dim U eigenvalues near 1
    (the median over words), and which do not; state-dependent models are left out."""
    def row(model, affine, m_p, near, dim_u=5):
        return {"model": model, "is_affine": affine, "m_p": m_p, "return_near_one": near,
                "dim_U": dim_u}

    data = [row("token_gated_rnn", True, 300, 0), row("deltaproduct", True, 1000, 5),
            row("mamba", True, None, 0.5), row("linear_attention", True, None, 528, 2),
            row("tanh_rnn", False, 1000, 0)]
    t = rb.theorem1_counts(data)
    passing, failing = t.data
    assert (passing["passes"], passing["models"], passing["at_one"]) == (True, 2, 1)
    assert passing["without"] == [{"model": "token_gated_rnn", "m_p": 300, "near_one": 0,
                                   "dim_U": 5}]
    assert (failing["passes"], failing["models"], failing["at_one"]) == (False, 2, 1)
    assert [d["model"] for d in failing["without"]] == ["mamba"]
    assert t.rows[0][3] == "Token-gated RNN" and t.rows[1][3] == "Mamba"
    assert rb.theorem1_counts([row("tanh_rnn", False, 1000, 0)]).rows[0][1:] == [0, 0, "—"]


def test_the_constant_baseline_predicts_the_others_median():
    """Leave-one-out: each tracker's m_p predicted as the median of the others', snapped
    down to the evaluated lengths, scored as |log2(pred / m_p)|."""
    lengths = (60, 100, 200, 500, 1000)
    out = rb.constant_warning([100, 100, 200, 1000], lengths)
    # others' medians: 200, 200, 100, 100 (the snapped mean of 100 and 200 is 100)
    assert [d["loo"] for d in out["per_model"]] == [200.0, 200.0, 100.0, 100.0]
    assert (out["method"], out["fit"], out["n"], out["raw"]) == ("none", "constant", 4, None)
    import numpy as np
    err = np.abs(np.log2(np.array([200, 200, 100, 100]) / np.array([100, 100, 200, 1000])))
    assert out["loo"]["median_log2_error"] == pytest.approx(float(np.median(err)))
    assert out["loo"]["within_2x"] == pytest.approx(0.75)
    assert rb.constant_warning([300], lengths)["loo"] is None
    with pytest.raises(ValueError, match="lengths"):
        rb.constant_warning([100, 200], ())
