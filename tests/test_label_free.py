"""sst_core.analysis.label_free: the online warning on curves with known answers, the scores over
models, and one smoke run end to end."""
from __future__ import annotations

import json

import numpy as np
import pytest

from sst_core.analysis import label_free as lf
from sst_core.experiments import runs
from sst_core.spec import profiles
from sst_core.store import codec


def test_drift_fit_recovers_the_crossing_of_a_linear_spread():
    t = np.arange(1, 201)
    a, b, M, tau = 0.1, 0.01, 4.0, 0.5
    R = (a + b * t) ** 2  # sqrt(R) grows linearly: Corollary 1
    w = lf.online_warning(R, np.full_like(R, M), tau, window=(10, 60), clip=(60, 1e6))
    expected = (np.sqrt(tau * M) - a) / b
    assert w["drift"]["T_pred"] == pytest.approx(expected, rel=1e-9)
    assert w["drift"]["drift"] == pytest.approx(b) and w["drift"]["M"] == pytest.approx(M)
    assert not w["drift"]["crossed_in_window"]


def test_power_fit_recovers_the_crossing_of_a_power_law():
    t = np.arange(1, 201).astype(float)
    C, alpha, tau = 1e-4, 1.5, 0.5
    q = C * t ** alpha
    w = lf.online_warning(q, np.ones_like(q), tau, window=(10, 60), clip=(60, 1e6))
    assert w["power"]["T_pred"] == pytest.approx((tau / C) ** (1 / alpha), rel=1e-9)
    assert w["power"]["alpha"] == pytest.approx(alpha)


def test_warning_without_growth_or_already_crossed():
    R = np.full(100, 0.01)
    w = lf.online_warning(R * (1 - 1e-3 * np.arange(100)), np.ones(100), 0.5, (10, 60))
    assert w["drift"]["T_pred"] is None and w["power"]["T_pred"] is None  # shrinking spread
    R2 = np.linspace(0.1, 2.0, 100)  # q crosses 1/2 at t = 22
    w2 = lf.online_warning(R2, np.ones(100), 0.5, (10, 60))
    assert w2["drift"]["crossed_in_window"] and w2["drift"]["T_pred"] == 22.0
    big = lf.online_warning((1e-6 + 1e-9 * np.arange(100)) ** 2, np.ones(100), 0.5, (10, 60),
                            clip=(60, 500))
    assert big["drift"]["T_pred"] == 500.0  # clipped
    with pytest.raises(ValueError, match="window"):
        lf.online_warning(R, np.ones(100), 0.5, (60, 10))


def _metrics(T_oracle, T_free, m_p, T_pred):
    q = [0.1, 0.2, 0.4, 0.8]
    return {"T_cross": {"oracle": T_oracle, "decoded": T_free, "clusters": T_free},
            "q": {"oracle": q, "decoded": q, "clusters": [v * 2 for v in q]},
            "m_p": m_p, "is_affine": True,
            "warning": {k: {"drift": {"T_pred": T_pred}, "power": {"T_pred": T_pred}}
                        for k in lf.LABELINGS}}


def test_crossing_agreement_counts():
    recs = [_metrics(100, 110, 100, 100), _metrics(100, 200, 100, 100),
            _metrics(None, None, 100, 100), _metrics(300, 320, 300, 300)]
    a = lf.crossing_agreement(recs, "decoded")
    assert (a["n"], a["agree"], a["both_cross"]) == (4, 3, 3)
    assert a["q_r_median"] == pytest.approx(1.0)
    assert a["r"] is not None and -1 <= a["r"] <= 1


def test_warning_errors_exact_and_off_by_two():
    lengths = (60, 100, 200, 300, 400)
    recs = [_metrics(1, 1, 100, 100.0), _metrics(1, 1, 200, 250.0), _metrics(1, 1, 400, 200.0),
            _metrics(1, 1, None, 50.0)]  # the last fails at 60: not scored
    e = lf.warning_errors(recs, "oracle", "drift", lengths)
    assert e["n"] == 3
    # snapped raw predictions: 100 -> 100, 250 -> 200, 200 -> 200 (m_p 400: a factor 2)
    assert [p["raw"] for p in e["per_model"]] == [100.0, 200.0, 200.0]
    assert e["raw"]["median_log2_error"] == 0.0
    assert e["raw"]["within_2x"] == 1.0 and e["raw"]["exact"] == pytest.approx(2 / 3)
    none = lf.warning_errors([_metrics(1, 1, 100, None)], "oracle", "drift", lengths)
    assert none["per_model"][0]["raw"] == 400.0  # no failure foreseen: the longest length


def test_run_label_free_smoke(tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    from sst_core.experiments import beyond

    P = profiles.get_profile("smoke")
    cfg = [c for c in beyond.label_free_grid(P) if c.run.model == "tanh_rnn"][0]
    runs.run(cfg.run)  # the tracker first: an analysis only loads it
    rec = runs.run(cfg)
    assert rec["status"] == "ok"
    m = rec["metrics"]
    json.dumps(m)
    # stored at the curve times and the clusters' grid, so the clusters' curve keeps its points
    t = np.union1d(codec.curve_times(cfg.rollout), lf.cluster_times(cfg.t_obs, cfg.rollout))
    assert m["curve_t"] == t.tolist() and set(m["q"]) == set(lf.LABELINGS)
    assert all(len(q) == t.size for q in m["q"].values())
    assert len(m["decoded_accuracy"]) == t.size
    on_grid = np.isin(t, m["cluster_times"])
    assert np.isfinite(codec.read_curve(m["q"]["clusters"], t)[1][on_grid][1:]).all()
    assert set(m["warning"]["decoded"]) == set(lf.WARNING_FITS)


def test_cluster_times_cover_the_window_then_thin_out():
    t = lf.cluster_times(60, 1000)
    assert t[0] == 1 and 60 in t and 61 in t and t[-1] == 1000
    assert np.all(np.diff(t) > 0) and len(t) <= lf.CLUSTER_EARLY_TIMES + lf.CLUSTER_LATE_TIMES
    assert ((t >= 10) & (t <= 60)).sum() >= 10  # enough points in the warning's window
    assert lf.cluster_times(60, 60).max() == 60
