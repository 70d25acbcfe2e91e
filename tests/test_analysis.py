"""The error-control analysis: diagnose() end to end at smoke size, the run grids, the
Corollary 1 fit and the Figure 4 statistics on constructed records."""
import numpy as np
import pytest

from sst_core.analysis import error_control as analysis_error_control
from sst_core.experiments import paper1
from sst_core.experiments import runs as experiments_runs
from sst_core.reports import error_control as ec
from sst_core.spec.configs import DiagnosticsConfig, TrackingConfig
from sst_core.spec.profiles import PROFILES
from sst_core.store import codec
from sst_core.store.records import artifact_path


def tiny(model="tanh_rnn", **kw) -> TrackingConfig:
    base = dict(model=model, group="S3", n_layers=1, d_model=8, d_state=8, lr=1e-2, seed=0,
                profile="smoke", batch=16, max_steps=3, steps_per_epoch=1,
                curriculum_patience=1, eval_lengths=(60, 100), eval_samples=16)
    base.update(kw)
    return TrackingConfig(**base)


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    return tmp_path


def test_diagnose_end_to_end_records_every_quantity(store, one_thread):
    cfg = DiagnosticsConfig(run=tiny("negative_mamba"), n_samples=24, rollout=80, t0=20,
                            perturb_steps=30, n_perturb=8, n_words=2, profile="smoke")
    experiments_runs.run(cfg.run)  # the tracker first: an analysis only loads it
    rec = experiments_runs.run(cfg)
    assert rec["status"] == "ok", rec.get("reason")
    m = rec["metrics"]
    assert m["curve_t"] == codec.curve_times(80).tolist()  # dense, then log-spaced
    for key in ("R", "M", "q", "q_sqrt", "q_U", "q_U_perp"):
        assert len(m[key]) == len(m["curve_t"])
    assert m["q"][0] < 1e-20  # after one token the state is a function of that token: R(1) = 0
    assert len(m["recovery"]["random"]) == len(m["recovery"]["U"]) == 30
    assert m["is_affine"] and m["theorem1"]["applies"] and 1 <= m["theorem1"]["dim_U"] <= 5
    assert m["failure_mode"] in ("saturation", "climb", "none")
    assert artifact_path(cfg.run, ".pt").exists()
    # the record is reused, not recomputed
    assert experiments_runs.run(cfg)["created_utc"] == rec["created_utc"]


def test_a_missing_tracker_is_an_error_naming_the_run(store, one_thread):
    """Analyses only load: training is the sweep's job (no record, no weights, or a
    truncated weights file is an error naming the run and the file)."""
    from sst_core.analysis.trackers import TrackerMissing, load_tracker
    from sst_core.spec.configs import config_hash

    cfg = tiny("linear_rnn")
    with pytest.raises(TrackerMissing, match=f"{config_hash(cfg)}.*no record"):
        load_tracker(cfg)
    experiments_runs.run(cfg)
    rec, model = load_tracker(cfg)
    assert rec["status"] == "ok" and not model.training
    path = artifact_path(cfg, ".pt")
    path.write_bytes(path.read_bytes()[:100])  # truncated: not the bytes its record hashed
    with pytest.raises(TrackerMissing, match=f"{config_hash(cfg)}.*weights file .*{path.name} "
                                             "is not the one its record"):
        load_tracker(cfg)
    path.unlink()
    with pytest.raises(TrackerMissing, match=f"{config_hash(cfg)}.*no weights at .*{path.name}"):
        load_tracker(cfg)


def test_failed_training_is_not_analysed(store, monkeypatch, one_thread):
    from sst_core.store.records import RunFailed

    def diverge(cfg, weights_to=None):
        raise RunFailed("loss became nan at step 0")

    monkeypatch.setattr("sst_core.training.tracking.train_tracking", diverge)
    cfg = DiagnosticsConfig(run=tiny("mamba"), n_samples=8, rollout=40, t_ref=30, profile="smoke")
    assert experiments_runs.run(cfg.run)["status"] == "failed"
    rec = experiments_runs.run(cfg)
    assert rec["status"] == "failed" and "training run" in rec["reason"]


def test_corollary1_prediction_recovers_a_constructed_drift():
    a, b, M, tau = 0.05, 0.01, 4.0, 0.5
    t = np.arange(1, 1001)
    metrics = {"q_U": list(((a + b * t) ** 2 / M)), "M": [M] * 1000}
    pred = analysis_error_control.corollary1_prediction(metrics, tau=tau)
    assert pred["drift"] == pytest.approx(b)
    assert pred["T_pred"] == pytest.approx((np.sqrt(tau * M) - a) / b)
    flat = analysis_error_control.corollary1_prediction({"q_U": [0.01] * 200, "M": [1.0] * 200})
    assert flat["T_pred"] is None  # no drift, no crossing


def test_grids_follow_the_profile():
    P = PROFILES["quick"]
    s3 = paper1.s3_runs(P)
    assert len(s3) == len(paper1.TABLE2_MODELS) and {c.group for c in s3} == {"S3"}
    f4 = paper1.figure4_runs(P)
    n_affine = sum(1 for c in s3 if c.model not in ("tanh_rnn", "state_gated_rnn"))
    # Table 2's lr is one of the Figure 4 lrs here, so it is not run twice
    assert len(f4) == n_affine * len(P.fig4_lrs) * len(P.fig4_seeds)
    assert len(set(f4)) == len(f4)
    grid = paper1.diagnostics_grid(P)
    assert len(grid) == len({c.run for c in grid}) == len(set(s3) | set(f4))
    assert all(c.n_samples == P.diag_samples and c.rollout == P.diag_rollout for c in grid)


EVAL_LENGTHS = [60, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]


def _fake(model, m_p, T_cross, q_at, affine=True, status="ok"):
    return {"status": status, "run_id": f"{model}{m_p}{T_cross}",
            "config": {"run": {"model": model, "n_layers": 1, "eval_lengths": EVAL_LENGTHS},
                       "tau": 0.5},
            "metrics": {"is_affine": affine, "m_p": m_p, "T_cross": T_cross, "q_at_m_p": q_at}}


def test_figure4_selection_and_statistics():
    recs = [_fake("mamba", 100 * k, 40 * k, 0.9 + 0.01 * k) for k in range(1, 8)]
    recs += [_fake("mamba", None, 3, None),  # fails at 60: excluded
             _fake("mamba", 200, None, 0.2),  # never crosses: excluded
             _fake("tanh_rnn", 1000, 500, 0.5, affine=False),  # state-dependent: excluded
             _fake("mamba", 300, 90, 0.8, status="failed")]
    sel = paper1.figure4_selection(recs)
    assert len(sel) == 7
    s = ec.figure4_stats(sel, n_boot=500)
    assert s["r"] == pytest.approx(1.0) and s["n"] == 7 and s["T_cross_before_m_p"] == 7
    assert s["q_median"] == pytest.approx(0.94)
    assert s["q_lo"] <= s["q_median"] <= s["q_hi"]
    assert ec.figure4_stats(sel[:2])["r"] is None  # fewer than three runs: no correlation
    same = [_fake("mamba", 100, 40 + k, 0.9) for k in range(4)]  # one m_p: r is undefined
    s = ec.figure4_stats(same, n_boot=100)
    assert s["r"] is None and "same" in s["why_no_r"] and s["n"] == 4


def test_figure4_stats_compare_T_cross_with_the_first_length_a_run_fails_at():
    """m_p is the largest evaluated length that passes, so a run fails at the next one: a
    T_cross after m_p but no later than that length still precedes an evaluated failure."""
    recs = [_fake("aussm", 60, 70, 0.9),  # after m_p, before 100 (where it fails)
            _fake("aussm", 60, 100, 0.9),  # at the failing length: counts
            _fake("aussm", 60, 140, 0.9),  # after 100: does not
            _fake("aussm", 300, 250, 0.9),  # before m_p, hence before 400
            _fake("aussm", 1000, 1200, 0.9)]  # passes every length: no failure to compare
    assert [ec.first_failing_length(r) for r in recs] == [100, 100, 100, 400, None]
    assert ec.first_failing_length(_fake("aussm", None, 3, None)) is None
    assert ec.figure4_stats(recs, n_boot=50)["T_cross_before_m_p"] == 1
    assert ec.crossing_before_failure(recs) == {"before": 3, "n": 4}
    assert ec.crossing_before_failure([]) == {"before": 0, "n": 0}


def test_figure4_r_has_the_interval_of_a_plain_pairs_bootstrap():
    rng = np.random.default_rng(3)
    T = np.exp(rng.normal(4, 1, 63))  # (63,) an awkward number of runs
    m_p = np.exp(np.log(T) + rng.normal(0, 0.7, 63))
    recs = [_fake("mamba", float(m), float(t), 0.9) for m, t in zip(m_p, T)]
    s = ec.figure4_stats(recs, n_boot=400, seed=5)
    # reference: the same resamples of the runs (bootstrap_ci's generator), r of each by
    # np.corrcoef, and the percentile interval
    idx = np.random.default_rng(5).integers(0, 63, size=(400, 63))  # (n_boot, n)
    lx, ly = np.log(T), np.log(m_p)
    boot = [np.corrcoef(lx[i], ly[i])[0, 1] for i in idx]
    lo, hi = np.quantile(boot, [0.025, 0.975])
    assert (s["r_lo"], s["r_hi"]) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))
    assert s["r_lo"] < s["r"] < s["r_hi"]
    assert s["r"] == pytest.approx(np.corrcoef(lx, ly)[0, 1])
    # three runs: some resample repeats one run three times, its r is undefined, no interval
    few = ec.figure4_stats(recs[:3], n_boot=200)
    assert few["r"] is not None and few["r_lo"] is None and few["r_hi"] is None


def test_figure4_counts_architectures_and_the_spread_over_word_samples():
    sel = [_fake("mamba", 100 * k, 40 * k, 0.9) for k in range(1, 4)]
    for k, r in enumerate(sel):
        r["config"]["run"]["seed"] = k  # three runs of one architecture
    sel[2]["config"]["run"]["n_layers"] = 2
    assert ec.architecture_counts(sel) == {"mamba": 2, "mamba L2": 1}

    def resampled(r, T, q, status="ok"):
        return {"status": status, "config": {"run": r["config"]["run"], "seed": 1},
                "metrics": {"T_cross": T, "q_at_m_p": q}}

    again = [resampled(sel[0], 20, 1.8), resampled(sel[1], 100, 0.9),
             resampled(sel[2], 999, 0.1, status="failed"),
             resampled(_fake("aussm", 100, 40, 0.9), 1, 1)]  # not selected: ignored
    sp = ec.resample_spread(sel, again)
    assert sp["T_cross"] == {"n": 2, "median_factor": pytest.approx(1.625),
                             "max_factor": pytest.approx(2.0)}  # 40 vs 20; 80 vs 100
    assert sp["q_at_m_p"]["n"] == 2 and sp["q_at_m_p"]["max_factor"] == pytest.approx(2.0)
    assert ec.resample_spread(sel, [])["T_cross"]["n"] == 0


def test_figure4_within_separates_architectures_from_runs():
    """Two architectures: within each, T_cross rises with m_p; between them it falls, so
    the pooled r over all runs is small while the within-architecture r is large."""
    recs = []
    for k, (T, m) in enumerate([(10, 600), (12, 700), (15, 800), (18, 900),
                                (100, 100), (120, 150), (150, 200), (180, 300)]):
        r = _fake("mamba" if k < 4 else "aussm", m, T, 0.9)
        r["run_id"] = f"run{k}"
        recs.append(r)
    rows = ec.figure4_within(recs)
    kinds = [(d["kind"], d["label"]) for d in rows]
    assert kinds == [("architecture", "aussm"), ("architecture", "mamba"),
                     ("within", "within architectures (pooled)"),
                     ("between", "between architectures (geometric means)"),
                     ("all", "all selected runs (Figure 4's r)")]
    by = {d["kind"]: d for d in rows}
    assert rows[0]["n"] == 4 and rows[0]["m_p_values"] == [100, 150, 200, 300]
    assert rows[0]["r"] > 0.9 and rows[1]["r"] > 0.9
    assert by["within"]["r"] > 0.9 and by["within"]["groups"] == 2 and by["within"]["n"] == 8
    assert by["all"]["r"] == pytest.approx(ec.figure4_stats(recs, n_boot=10)["r"])
    assert by["all"]["r"] < 0
    # two architectures are two points: no correlation between them, and the reason given
    assert by["between"]["r"] is None and "at least 3" in by["between"]["why_no_r"]
    assert [d["n"] for d in ec.figure4_within([])][-3:] == [0, 0, 0]  # nothing to take apart
    one_m_p = ec.figure4_within([_fake("mamba", 100, 10 + k, 0.9) for k in range(3)])
    assert one_m_p[0]["r"] is None and "same" in one_m_p[0]["why_no_r"]
    assert one_m_p[-1]["r"] is None and "same" in one_m_p[-1]["why_no_r"]  # not NaN


def test_crossing_without_failure_counts_state_dependent_runs_that_cross_but_track():
    def sd(model, m_p, T_cross, q_med=None, layers=1, status="ok"):
        r = _fake(model, m_p, T_cross, None, affine=False, status=status)
        r["config"]["run"]["n_layers"] = layers
        if q_med is not None:  # every t stored: t = 1 .. len
            r["metrics"]["q_median"] = q_med
        return r

    recs = [sd("tanh_rnn", 1000, None, [0.1, 0.2]),  # tracks, never crosses
            sd("tanh_rnn", 1000, 4, [0.1, 0.6, 0.2]),  # crosses; its median variant too
            sd("tanh_rnn", 1000, 7, [0.1, 0.3, 0.4]),  # crosses; the median stays below
            sd("tanh_rnn", 300, 2, [0.9]),  # crosses and fails early: not counted as such
            sd("tanh_rnn", 1000, 9),  # an older record without q_median
            sd("tanh_rnn", 1000, 5, [0.7], layers=2),
            sd("tanh_rnn", 1000, 5, [0.7], status="failed"),  # not ok: ignored
            _fake("mamba", 1000, 30, 0.9)]  # affine: ignored
    out = ec.crossing_without_failure(recs, 1000)
    assert list(out) == ["tanh_rnn", "tanh_rnn L2"]
    assert out["tanh_rnn"] == {"runs": 5, "reach": 4, "crossing": 3, "T_cross": [4, 7, 9],
                               "median_crossing": 1, "no_median": 1}
    assert out["tanh_rnn L2"] == {"runs": 1, "reach": 1, "crossing": 1, "T_cross": [5],
                                  "median_crossing": 1, "no_median": 0}
    assert ec.crossing_without_failure(recs[-1:], 1000) == {}


def test_crossing_table_reads_the_stored_s3_diagnostics(store):
    from sst_core.reports import get_report

    P = PROFILES["smoke"]
    table = get_report("crossing")(P)
    assert table.rows == [] and table.data == [{"model": "all", "runs": 0, "reach": 0,
                                                "crossing": 0, "median_crossing": 0,
                                                "no_median": 0}]
    assert "State-dependent S3 runs only" in table.note


def test_figure4_grows_by_seeds_in_the_cells_whose_runs_learn(store):
    from dataclasses import replace

    from sst_core.store.records import RunFailed, cached_run, record_path

    P = replace(PROFILES["smoke"], fig4_lrs=(0.001, 0.003), fig4_growth_seeds=(7, 8))
    base = paper1.figure4_runs(P)
    assert paper1.figure4_growth_runs(P) == []  # nothing stored: nothing grows

    def first(model):
        return next(c for c in base if c.model == model)

    def diverge(cfg):
        raise RunFailed("loss became nan at step 2")

    cached_run(first("token_gated_rnn"), lambda c: {"m_p": 100})  # passes 60: its cell grows
    cached_run(first("mamba"), lambda c: {"m_p": None})  # fails at 60
    cached_run(first("aussm"), diverge)  # a failed run
    unreadable = record_path(first("negative_mamba"))
    unreadable.parent.mkdir(parents=True, exist_ok=True)
    unreadable.write_text("{")  # a truncated record
    assert paper1.figure4_growth_cells(P) == [("token_gated_rnn", 1)]

    grown = paper1.figure4_growth_runs(P)
    cell = [c for c in base if c.model == "token_gated_rnn"]
    assert len(cell) == 2  # both learning rates
    assert len(grown) == len(set(grown)) == 2 * len(cell) and {c.seed for c in grown} == {7, 8}
    assert {replace(c, seed=0) for c in grown} == {replace(c, seed=0) for c in cell}
    assert not set(grown) & set(base)
    assert paper1.figure4_population(P) == base + grown
    # the grown runs are trained and analysed, but not repeated on other word samples
    diag_runs = {c.run for c in paper1.diagnostics_grid(P)}
    assert set(grown) <= diag_runs and set(grown) <= set(paper1.figure4_sweep(P))
    assert not {c.run for c in paper1.resample_grid(P)} & set(grown)
    # a root passed explicitly is the one read; a profile without growth seeds never grows
    assert paper1.figure4_growth_runs(P, root=store / "elsewhere") == []
    assert paper1.figure4_growth_runs(replace(P, fig4_growth_seeds=())) == []

    table = ec.figure4_table(P)
    growth = table.data[0]["growth"]
    assert growth["cells"] == ["token_gated_rnn"] and growth["runs"] == len(grown)
    assert growth["seeds"] == [7, 8] and growth["rule"] == paper1.FIGURE4_GROWTH_RULE
    row = next(r for r in table.rows if r[0].startswith("cells grown"))
    assert row == ["cells grown (seeds 7, 8)", f"Token-gated RNN: {len(grown)} runs added", "—"]
    assert "Growth: " in table.note
    assert not any(r[0].startswith("cells grown") for r in
                   ec.figure4_table(replace(P, fig4_growth_seeds=())).rows)


def test_the_wide_grids_widen_the_residual_families_and_grow_from_their_own_records(store):
    """The recompute at the pilots' width: Table 2's and Figure 4's runs with every model
    that has a residual stream at track_d_model_wide, the RNN family's runs the same runs
    (stored once, never twice); Figure 4's growth read from the widened runs' records."""
    from dataclasses import replace

    from sst_core.experiments.registry import SWEEPS, chapter_sweeps, phases
    from sst_core.models.registry import REGISTRY
    from sst_core.store.records import cached_run

    P = replace(PROFILES["smoke"], fig4_lrs=(0.001,), fig4_growth_seeds=(7,))
    narrow, wide = paper1.table2_grid(P), paper1.table2_wide_grid(P)
    assert len(wide) == len(narrow)
    for n, w in zip(narrow, wide):
        if REGISTRY[n.model].family == "rnn":
            assert w == n  # no residual stream: the same run
        else:
            assert w == replace(n, d_model=P.track_d_model_wide) != n
    assert paper1.widened(P, narrow + narrow) == wide  # no run twice
    base = paper1.widened(P, paper1.figure4_runs(P))
    assert paper1.figure4_wide_population(P) == base  # nothing stored: nothing grows
    mamba = next(c for c in base if c.model == "mamba")
    cached_run(replace(mamba, d_model=P.track_d_model), lambda c: {"m_p": 100})  # narrow
    assert paper1.figure4_wide_population(P) == base  # a narrow run grows no wide cell
    cached_run(mamba, lambda c: {"m_p": 100})
    grown = paper1.figure4_wide_population(P)[len(base):]
    assert grown and {c.seed for c in grown} == {7}
    assert {(c.model, c.d_model) for c in grown} == {("mamba", P.track_d_model_wide)}
    assert {c.run for c in paper1.figure4_wide_diagnostics(P)} == set(base + grown)
    assert set(paper1.widened(P, paper1.s3_runs(P))) <= set(paper1.figure4_wide_sweep(P))
    # staged: its own sweep, read by no chapter until its runs are stored
    assert "wide" in SWEEPS and not any("wide" in chapter_sweeps(ch) for ch in
                                        ("p1_table2", "p1_diagnostics", "beyond_groups"))
    assert [len(p) for p in phases("wide", P)][0] == len(dict.fromkeys(
        wide + paper1.figure4_wide_sweep(P)))


def test_the_resample_grid_repeats_figure4_on_other_words():
    from dataclasses import replace

    P = replace(PROFILES["smoke"], diag_resample_seeds=(1, 2))
    grid = paper1.resample_grid(P)
    f4 = paper1.figure4_runs(P)
    assert len(grid) == 2 * len(f4) and {c.seed for c in grid} == {1, 2}
    assert {c.run for c in grid} == set(f4)
    main = [c for c in paper1.diagnostics_grid(P) if c.seed == 0]
    assert set(grid) <= set(paper1.diagnostics_grid(P)) and not set(grid) & set(main)
    assert paper1.resample_grid(PROFILES["quick"]) == []


def test_reports_build_from_an_empty_store(store):
    P = PROFILES["smoke"]
    for table in (ec.theorem1_table(P), ec.diagnostics_table(P), ec.corollary1_table(P)):
        assert table.rows == [] and table.data == [] and table.note  # no model, a note
    assert ec.figure4_table(P).data[0]["n"] == 0
    with pytest.raises(ValueError, match="'bogus'"):
        ec.diagnostic_records(P, which="bogus")


def test_corollary1_shows_predictions_for_the_climb_mode_only(monkeypatch):
    import sst_core.analysis.error_control as analysis

    def record(model, mode, T_cross):
        return {"status": "ok", "run_id": model,
                "config": {"tau": 0.5, "run": {"model": model, "n_layers": 1}},
                "metrics": {"is_affine": True, "m_p": 100 if mode == "climb" else None,
                            "T_cross": T_cross, "failure_mode": mode}}

    records = [record("aussm", "climb", 80), record("mamba", "saturation", 4),
               record("mamba3", "climb", 100)]
    monkeypatch.setattr(ec, "diagnostic_records", lambda P, root=None, which="s3": records)
    monkeypatch.setattr(analysis, "corollary1_prediction",
                        lambda m, tau: {"drift": 0.1, "T_pred": 2.0 * m["T_cross"]})
    t = ec.corollary1_table(PROFILES["smoke"])
    shown = {row[0]: row for row in t.rows}
    assert shown["Mamba"][3] == shown["Mamba"][5] == "—"  # saturated: nothing predicted
    assert shown["AUSSM"][3] == "160" and shown["AUSSM"][5] == "2"
    # AUSSM crosses at 80 before its m_p 100; Mamba-3 at 100, not before
    assert ec.corollary1_numbers(t.data) == {"climb": 2, "compared": 2, "before": 1,
                                             "ratio_lo": 2.0, "ratio_hi": 2.0}
    none = ec.corollary1_numbers([d for d in t.data if d["failure_mode"] != "climb"])
    assert none["compared"] == 0 and none["ratio_lo"] != none["ratio_lo"]  # NaN


def test_figure2_modes_compares_each_plotted_model_with_the_papers_mode():
    def run(mode):
        return {"metrics": {"failure_mode": mode}}

    best = {"mamba": run("saturation"), "mamba L2": run("saturation"),
            "negative_mamba": run("saturation"), "negative_mamba L2": run("climb"),
            "aussm": run("climb"),  # a mode the paper does not name: not compared
            "tanh_rnn": run("none")}
    assert ec.figure2_modes(best) == {"compared": 4, "agree": 3,
                                      "differ": "Negative Mamba: saturation / climb"}
    assert ec.figure2_modes({"mamba3": run("saturation")})["differ"] == "none"


def _best_record(model, affine, m_p, T_cross, recovery_U):
    return {"status": "ok", "run_id": model, "config": {"run": {"model": model}},
            "metrics": {"is_affine": affine, "m_p": m_p, "T_cross": T_cross,
                        "recovery": {"U": recovery_U}}}


def test_figures12_numbers_read_recovery_and_crossing_by_class():
    best = {"tanh_rnn": _best_record("tanh_rnn", False, 1000, None, [1.0, 1e-6]),
            "state_gated_rnn": _best_record("state_gated_rnn", False, 1000, 7, [1.0, 1e-3]),
            "mamba": _best_record("mamba", True, None, 5, [1.0, 0.5]),  # fails at 60
            "aussm": _best_record("aussm", True, 100, 80, [1.0, 2.0]),  # crosses before
            "negative_mamba": _best_record("negative_mamba", True, 100, 120, [1.0, None]),
            "linear_rnn": _best_record("linear_rnn", True, 100, None, [1.0, 0.9])}
    out = ec.figures12_numbers(best)
    assert out["recovery_sd_max"] == 1e-3 and out["recovery_affine_min"] == 0.5
    assert (out["before"], out["before_n"]) == (1, 2)  # aussm, of aussm and negative_mamba
    empty = ec.figures12_numbers({})
    assert empty == {"recovery_sd_max": None, "recovery_affine_min": None, "before": 0,
                     "before_n": 0}


def test_spread_ratio_per_architecture_and_for_the_model_against_the_rest():
    def rec(model, n_layers, q, q_med):
        return {"status": "ok", "run_id": f"{model}{n_layers}{q}",
                "config": {"run": {"model": model, "n_layers": n_layers}},
                "metrics": {"q_at_m_p": q, "q_median_at_m_p": q_med}}

    recs = [rec("token_gated_rnn", 1, 4.0, 1.0), rec("token_gated_rnn", 1, 9.0, 1.0),
            rec("token_gated_rnn", 2, 2.0, 1.0), rec("mamba", 2, 1.2, 1.0),
            rec("mamba", 2, 1.0, None)]  # no median spread stored: left out
    rows = ec.spread_ratio(recs)
    by = {(d["kind"], d["label"]): d for d in rows}
    assert by["architecture", "token_gated_rnn"] == {
        "kind": "architecture", "label": "token_gated_rnn", "n": 2, "median": 6.5, "min": 4.0,
        "max": 9.0}
    assert by["model", "token_gated_rnn"]["n"] == 3 and by["model", "token_gated_rnn"]["median"] == 4.0
    assert by["others", "others"]["n"] == 1 and by["others", "others"]["median"] == pytest.approx(1.2)
    assert ec.spread_ratio([])[-1] == {"kind": "others", "label": "others", "n": 0,
                                       "median": None, "min": None, "max": None}


def test_theorem1_tables_show_each_symbolic_check():
    from sst_core.theory.error_control import derive_theorem1_general

    steps = ec.theorem1_steps_table(derive_theorem1_general(d=2, n_g=2))
    assert steps.columns == ["step", "holds"] and steps.rows
    assert all(d["holds"] for d in steps.data) and {r[1] for r in steps.rows} == {"✓"}
    inst = ec.theorem1_instances_table(sizes=((2, 2), (3, 3)))
    assert [(d["d"], d["n_g"], d["r"]) for d in inst.data] == [(2, 2, 1), (3, 3, 2)]
    assert all(d["n_free"] == d["expected_free"] == d["d"] * (d["d"] - d["r"])
               for d in inst.data)
    assert inst.rows[0][:5] == [2, 2, 1, 2, 2]


def test_with_interval_formats_a_number_and_its_interval():
    assert ec.with_interval(0.6561, 0.581, 0.7249) == "0.656 [0.58, 0.72]"
    assert ec.with_interval(1.654, digits=2) == "1.65"
    assert ec.with_interval(None, 0.1, 0.2) == "—"
