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


def _mode_record(model, q, T_cross, m_p=None, n_layers=1, t_train=60):
    """A diagnostics record with the curve q (index i: t = i + 1) and its crossing."""
    return {"status": "ok", "run_id": f"{model}{n_layers}",
            "config": {"tau": 0.5, "run": {"model": model, "n_layers": n_layers,
                                           "curriculum_max": t_train}},
            "metrics": {"is_affine": True, "m_p": m_p, "T_cross": T_cross, "q": q,
                        "failure_mode": "saturation"}}  # the stored field: never read


def test_start_mode_follows_the_papers_wording_from_the_stored_curve():
    """Saturation: q at t = 2 (q(1) is 0 by construction) already >= tau; climb: it starts
    below and crosses later, early or late; none: it never crosses. The record's own
    failure_mode field (a crossing within the training length) is not read."""
    sat = _mode_record("linear_rnn", [0.0, 0.6, 0.4, 0.7], T_cross=2)
    fast = _mode_record("mamba", [0.0, 0.03, 0.6, 2.0], T_cross=3)
    late = _mode_record("token_gated_rnn", [0.0] + [0.01] * 98 + [0.5], T_cross=100,
                        m_p=200)
    never = _mode_record("tanh_rnn", [0.0, 0.1, 0.2, 0.3], T_cross=None, m_p=1000)
    assert ec.start_mode(sat) == {"mode": "saturation", "q_start": 0.6,
                                  "crosses_in_training": True}
    assert ec.start_mode(fast) == {"mode": "climb", "q_start": 0.03,
                                   "crosses_in_training": True}
    assert ec.start_mode(late)["mode"] == "climb"
    assert ec.start_mode(late)["crosses_in_training"] is False  # 100 > 60
    assert ec.start_mode(never) == {"mode": "none", "q_start": 0.1,
                                    "crosses_in_training": None}
    # exactly tau at the start saturates; a start that is not finite (an overflow) is no
    # start: the crossing alone decides
    assert ec.start_mode(_mode_record("m", [0.0, 0.5], T_cross=2))["mode"] == "saturation"
    lost = _mode_record("m", [0.0, float("nan"), 0.7], T_cross=3)
    assert ec.start_mode(lost) == {"mode": "climb", "q_start": None,
                                   "crosses_in_training": True}


def test_corollary1_fits_before_the_crossing_and_predicts_for_the_climb_mode_only(
        monkeypatch):
    """The drift is fitted over 10 <= t < min(60, T_cross) only; a prediction is shown for
    a climbing q only (the paper's wording, start_mode)."""
    import sst_core.analysis.error_control as analysis

    records = [_mode_record("aussm", [0.0, 0.01, 0.02], 80, m_p=100),
               _mode_record("mamba", [0.0, 0.9, 1.0], 4),  # saturated from the start
               _mode_record("mamba3", [0.0, 0.01, 0.02], 100, m_p=None),
               _mode_record("negative_mamba", [0.0, 0.01, 0.02], 40, m_p=60)]
    windows = {}

    def predict(m, window, tau):
        windows[m["T_cross"]] = window
        return {"drift": 0.1, "T_pred": 2.0 * m["T_cross"]}

    monkeypatch.setattr(ec, "diagnostic_records", lambda P, root=None, which="s3": records)
    monkeypatch.setattr(analysis, "corollary1_prediction", predict)
    t = ec.corollary1_table(PROFILES["smoke"])
    assert windows == {80: (10, 59), 4: (10, 3), 100: (10, 59), 40: (10, 39)}
    shown = {row[0]: row for row in t.rows}
    assert shown["Mamba"][1] == "saturation"
    assert shown["Mamba"][4] == shown["Mamba"][6] == "—"  # saturated: nothing predicted
    assert shown["AUSSM"][1] == "climb" and shown["AUSSM"][2] == "10–59"
    assert shown["AUSSM"][4] == "160" and shown["AUSSM"][6] == "2"
    # AUSSM crosses at 80 before its m_p 100, Negative Mamba at 40 before 60; Mamba-3 fails
    assert ec.corollary1_numbers(t.data) == {"climb": 3, "compared": 3, "with_m_p": 2,
                                             "before": 2, "ratio_lo": 2.0, "ratio_hi": 2.0}
    none = ec.corollary1_numbers([d for d in t.data if d["failure_mode"] != "climb"])
    assert none["compared"] == 0 and none["ratio_lo"] != none["ratio_lo"]  # NaN


def test_figure2_modes_compares_each_plotted_model_with_the_papers_mode():
    """Our mode is read from the curve (start_mode), never from the stored field."""
    start_low = [0.0, 0.03, 0.6]  # climbs, crossing at 3
    start_high = [0.0, 0.8, 0.9]  # saturated from the start
    best = {"mamba": _mode_record("mamba", start_high, 2),
            "mamba L2": _mode_record("mamba", start_low, 3, n_layers=2),
            "negative_mamba": _mode_record("negative_mamba", start_low, 3),
            "negative_mamba L2": _mode_record("negative_mamba", start_high, 2, n_layers=2),
            "aussm": _mode_record("aussm", start_high, 2),  # no mode named: not compared
            "tanh_rnn": _mode_record("tanh_rnn", [0.0, 0.1], None)}
    assert ec.figure2_modes(best) == {
        "compared": 4, "agree": 2,
        "differ": "Mamba, 2 layers: climb / saturation; "
                  "Negative Mamba, 2 layers: saturation / climb",
        "climb_n": 2, "climb_agree": 1, "saturation_n": 2, "saturation_agree": 1}
    assert ec.figure2_modes({"mamba3": _mode_record("mamba3", start_high, 2)})["differ"] \
        == "none"


def test_mode_numbers_count_the_affine_modes_and_read_the_papers_saturated_models():
    best = {"linear_rnn": _mode_record("linear_rnn", [0.0, 30.0], 2),
            "mamba": _mode_record("mamba", [0.0, 0.04, 0.7], 3),
            "mamba3 L2": _mode_record("mamba3", [0.0, 0.1, 0.2, 0.3, 0.6], 5, n_layers=2),
            "token_gated_rnn": _mode_record("token_gated_rnn", [0.0, 0.01], 93, m_p=500),
            "tanh_rnn": {**_mode_record("tanh_rnn", [0.0, 0.1], None, m_p=1000)}}
    best["tanh_rnn"]["metrics"]["is_affine"] = False  # not counted
    out = ec.mode_numbers(best)
    assert out == {"start_t": 2, "affine_n": 4, "saturation": 1,
                   "saturation_models": "Linear RNN", "climb": 3, "climb_in_training": 2,
                   "climb_in_training_fail": 2, "paper_saturation_n": 2,
                   "paper_saturation_q_start_max": 0.1, "paper_saturation_T_lo": 3,
                   "paper_saturation_T_hi": 5}
    empty = ec.mode_numbers({})
    assert empty["affine_n"] == 0 and empty["paper_saturation_T_lo"] is None


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
    # no affine model leaves less along U than the state-dependent one that leaves the most
    assert (out["recovery_affine_below_sd"], out["recovery_affine_n"]) == (0, 3)
    best["linear_rnn"]["metrics"]["recovery"]["U"] = [1.0, 1e-4]
    assert ec.figures12_numbers(best)["recovery_affine_below_sd"] == 1
    assert (out["before"], out["before_n"]) == (1, 2)  # aussm, of aussm and negative_mamba
    empty = ec.figures12_numbers({})
    assert empty == {"recovery_sd_max": None, "recovery_affine_min": None,
                     "recovery_affine_below_sd": 0, "recovery_affine_n": 0, "before": 0,
                     "before_n": 0}


PROTOCOL = {"n_perturb": 128, "t0": 30, "eps": 0.01, "perturb_steps": 200, "t_ref": 60}


def _recovery_record(model, affine, random, U, n_layers=1, **config):
    return {"status": "ok", "run_id": f"{model}{n_layers}",
            "config": {**PROTOCOL, **config, "run": {"model": model, "n_layers": n_layers}},
            "metrics": {"is_affine": affine, "recovery": {"random": [1.0, random],
                                                          "U": [1.0, U]}}}


def test_recovery_numbers_give_the_protocol_and_the_affine_contraction_along_U():
    best = {"tanh_rnn": _recovery_record("tanh_rnn", False, 1e-9, 1e-3),
            "state_gated_rnn": _recovery_record("state_gated_rnn", False, 1e-12, 1e-6),
            "mamba": _recovery_record("mamba", True, 0.02, 0.01),  # shrunk 100 times
            "mamba3": _recovery_record("mamba3", True, 0.3, 0.25),  # 4 times
            "aussm": _recovery_record("aussm", True, 1.0, 0.5),  # not below a half
            "token_gated_rnn": _recovery_record("token_gated_rnn", True, 10.0, 300.0),
            "token_gated_rnn L2": _recovery_record("token_gated_rnn", True, 5.0, 40.0, 2)}
    out = ec.recovery_numbers(best)
    assert out == {**PROTOCOL, "sd_random_max": 1e-9, "amplifier_U_lo": 40.0,
                   "amplifier_U_hi": 300.0, "affine_n": 5, "affine_below": 2, "below": 0.5,
                   "factor_lo": pytest.approx(4.0), "factor_hi": pytest.approx(100.0),
                   # the claims as counts: both state-dependent models keep below 1/100,
                   # both token-gated runs amplify, one affine model (AUSSM, at 0.5) of
                   # five is neutral: two claims hold for every model they name
                   "sd_n": 2, "sd_contract": 2, "amplifier_n": 2, "amplifier_above": 2,
                   "affine_neutral": 1, "claims": 2, "contract": ec.RECOVERY_CONTRACT,
                   "above": 2.0}
    with pytest.raises(ValueError, match="differ in their protocol"):
        ec.recovery_numbers({**best, "x": _recovery_record("x", True, 1, 1, t0=20)})
    assert ec.recovery_numbers({})["factor_lo"] is None
    assert ec.recovery_numbers({})["claims"] == 0  # no model named: no claim holds


def test_figure3_records_take_each_models_best_run_over_depths_that_passes_60():
    def rec(model, n_layers, m_p, seed=0):
        return {"status": "ok", "run_id": f"{model}{n_layers}{seed}",
                "config": {"run": {"model": model, "n_layers": n_layers, "seed": seed}},
                "metrics": {"m_p": m_p}}

    records = [rec("negative_mamba", 1, None), rec("negative_mamba", 2, 100),
               rec("token_gated_rnn", 1, 500), rec("token_gated_rnn", 2, 800),
               rec("tanh_rnn", 1, 1000), rec("tanh_rnn", 2, 1000),  # a tie: the first
               rec("state_gated_rnn", 1, None), rec("state_gated_rnn", 2, None),  # none
               rec("mamba", 1, 300)]  # not one of the paper's four
    got = [r["run_id"] for r in ec.figure3_records(records)]
    assert got == ["negative_mamba20", "token_gated_rnn20", "tanh_rnn10"]
    assert [r["run_id"] for r in ec.figure3_records(records, ("mamba",))] == ["mamba10"]


def test_analysed_counts_count_training_runs_once_and_name_the_failed():
    def rec(model, seed, status, analysis_seed=0):
        return {"status": status, "config": {"seed": analysis_seed,
                                             "run": {"model": model, "n_layers": 1,
                                                     "seed": seed}}}

    records = [rec("tanh_rnn", 0, "ok"), rec("tanh_rnn", 0, "ok", analysis_seed=1),
               rec("tanh_rnn", 1, "ok"), rec("state_gated_rnn", 0, "failed")]
    assert ec.analysed_counts(records) == {"analysed": 2, "failed": 1,
                                           "failed_models": "State-gated RNN"}
    assert ec.analysed_counts([])["failed_models"] == "none"


def test_p_text_keeps_small_p_values_on_one_line():
    assert ec.p_text(2.1e-25) == "2.1×10⁻²⁵"
    assert ec.p_text(6.2e-05) == "6.2×10⁻⁵"
    assert ec.p_text(0.0031) == "0.0031" and ec.p_text(0.068) == "0.068"
    assert ec.p_text(None) == "—" and ec.p_text(0.0) == "0"
    assert "-" not in ec.p_text(1e-300)


def test_theorem1_numbers_compare_each_statistic_within_its_class():
    def row(model, affine, dev, gain, res, m_p=None, dim_U=5, t0=30):
        return {"model": model, "is_affine": affine, "m_p": m_p, "t0": t0, "n_perturb": 128,
                "dim_U": dim_U, "deviation": dev, "gain": gain, "return_residual": res}

    data = [row("tanh_rnn", False, 1.0, 0.1, 5.0, 1000),
            row("state_gated_rnn", False, 3.0, 1.9, 20.0, 1000),
            row("linear_attention", True, 0.0, 1.0, 130.0, dim_U=2),
            row("mamba", True, 1.0, 0.4, 80.0), row("aussm L2", True, 2.0, 0.8, 500.0, 100)]
    out = ec.theorem1_numbers(data)
    assert out == {"aff_n": 3, "aff_dev_median": 1.0, "aff_gain_lo": 0.4, "aff_gain_hi": 1.0,
                   "aff_contract": 2, "sd_n": 2, "sd_dev_median": 2.0, "sd_gain_lo": 0.1,
                   "sd_gain_hi": 1.9, "sd_contract": 1, "aff_fail": 2, "residual_min": 5.0,
                   "t0": 30, "n_perturb": 128, "linear_attention_dim_U": 2}
    with pytest.raises(ValueError, match="differ in t0"):
        ec.theorem1_numbers(data + [row("x", True, 1.0, 1.0, 1.0, t0=20)])


def test_figure4_architectures_once_per_estimate():
    data = [{"estimate": "mean", "n_layers": None, "architectures": {"aussm L2": 3,
                                                                     "token_gated_rnn": 2}},
            {"estimate": "mean", "n_layers": 1, "architectures": {"token_gated_rnn": 2}},
            {"estimate": "median", "n_layers": None, "architectures": {}}]
    assert ec.figure4_architectures(data) == {
        "mean": "AUSSM, 2 layers: 3; Token-gated RNN: 2", "median": "—"}


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


def test_stored_times_spacing_reads_the_codecs_grid():
    """The captions' "every t up to 32, then at most x% apart" comes from curve_times."""
    from sst_core.store.codec import CURVE_DENSE, curve_times

    t = curve_times(1000)
    out = ec.stored_times_spacing(1000)
    assert out["dense"] == CURVE_DENSE and np.all(np.diff(t[t <= CURVE_DENSE]) == 1)
    later = t[t >= CURVE_DENSE]
    assert np.all(later[1:] <= later[:-1] * (1 + out["step"]) + 1e-9)
    assert np.any(np.isclose(later[1:] / later[:-1] - 1, out["step"]))
    assert ec.stored_times_spacing(10) == {"dense": CURVE_DENSE, "step": 0.0}
    assert ec.figure4_stats.__defaults__ == (ec.BOOTSTRAP_RESAMPLES, ec.BOOTSTRAP_SEED)
