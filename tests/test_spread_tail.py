"""The heavy tail of the spread: per-word spread, tail measures, token transitions and the
growth rate on constructed input, each against a plain reference."""
import numpy as np
import pytest
import torch

from sst_core.analysis.spread_tail import (
    TOP_SHARE,
    growth_rate,
    spread_tail,
    tail_measures,
    token_transitions,
    word_spread,
)
from sst_core.models.cells import tanh_rnn, token_gated_rnn


def test_word_spread_is_each_words_squared_readout_distance_to_its_centroid():
    h = np.array([[0.0, 0.0], [2.0, 0.0], [1.0, 1.0], [1.0, 3.0]])  # (4, 2)
    states = np.array([0, 0, 1, 1])
    # class 0: centroid (1, 0), class 1: (1, 2)
    assert word_spread(h, states, None, 2) == pytest.approx([1.0, 1.0, 1.0, 1.0])
    W = np.array([[2.0, 0.0], [0.0, 1.0]])  # (k, d): x counts twice
    assert word_spread(h, states, W, 2) == pytest.approx([4.0, 4.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=r"\(b, d\)"):
        word_spread(h[:, :, None], states, None, 2)


@pytest.mark.parametrize("n", [2, 63, 1000])
def test_tail_measures_against_a_plain_reference(n):
    rng = np.random.default_rng(n)
    x = np.exp(rng.normal(0.0, 1.3, n))  # (n,)
    out = tail_measures(x)
    top = max(1, round(TOP_SHARE * n))
    assert out["mean_over_median"] == pytest.approx(x.mean() / np.median(x))
    assert out["top_share"] == pytest.approx(sum(sorted(x)[-top:]) / x.sum())
    s = np.std(np.log(x), ddof=1)
    assert out["log_sd"] == pytest.approx(s) and out["lognormal_ratio"] == pytest.approx(np.exp(s * s / 2))


def test_a_lognormal_spread_has_the_lognormal_ratio_and_one_far_word_carries_the_mean():
    x = np.exp(np.random.default_rng(0).normal(0.0, 1.0, 200_000))
    out = tail_measures(x)
    assert out["mean_over_median"] == pytest.approx(np.exp(0.5), rel=0.02)
    assert out["lognormal_ratio"] == pytest.approx(np.exp(0.5), rel=0.01)
    far = np.ones(100)
    far[0] = 1e4  # one word of a hundred
    heavy = tail_measures(far)
    assert heavy["top_share"] == pytest.approx(1e4 / (1e4 + 99))
    assert heavy["mean_over_median"] == pytest.approx((1e4 + 99) / 100)
    with pytest.raises(ValueError, match="positive"):
        tail_measures(np.array([1.0, 0.0]))


def test_token_transitions_are_the_gate_times_W_h():
    torch.manual_seed(0)
    model = token_gated_rnn(6, 6, d_state=5)
    cell = model.layers[0]
    tokens = np.array([0, 3, 5])
    A = token_transitions(cell, tokens)  # (3, 5, 5)
    for k, a in enumerate(tokens):
        gate = torch.sigmoid(cell.W_g[:, a] + cell.b_g).double()
        assert A[k] == pytest.approx((torch.diag(gate) @ cell.W_h.double()).detach().numpy())
        # one step of the cell from two states differs by A(a) applied to their difference
        x = torch.nn.functional.one_hot(torch.tensor([a, a]), 6).double()
        h0 = torch.randn(2, 5, dtype=torch.float64)
        h1, _ = cell.double().step(h0, x)
        assert (h1[0] - h1[1]).detach().numpy() == pytest.approx(A[k] @ (h0[0] - h0[1]).numpy())
        cell.float()
    with pytest.raises(ValueError, match="token-gated"):
        token_transitions(tanh_rnn(6, 6, d_state=5).layers[0],
                          tokens)


def test_growth_rate_is_the_log_of_a_scalar_transition_and_averages_over_tokens():
    words = np.zeros((4, 50), dtype=np.int64)
    assert growth_rate(np.array([1.5 * np.eye(3)]), words) == pytest.approx(np.log(1.5))
    # two diagonal tokens, used half the time each: the growth of the top direction
    A = np.array([np.diag([2.0, 0.5]), np.diag([1.0, 0.25])])
    alt = np.tile([0, 1], (3, 400))  # (3, 800); the random start adds log|u_1| / 800
    assert growth_rate(A, alt) == pytest.approx(0.5 * np.log(2.0), abs=5e-3)


def test_spread_tail_sees_growing_and_contracting_token_gated_cells():
    from sst_core.groups import get_group
    from sst_core.tasks.tracking import sample

    words, states = sample(get_group("S3"), 256, 40, tokens="generators", seed=0)  # (b, L)
    for scale, grows in ((1.6, True), (0.5, False)):
        torch.manual_seed(1)
        model = token_gated_rnn(6, 6, d_state=8)
        with torch.no_grad():
            model.layers[0].W_h.mul_(scale / 0.99)
            model.layers[0].b_g.fill_(10.0)  # gates open: A(a) = W_h for every token
        out = spread_tail(model, words, states, 40, 6)
        assert (out["growth_rate"] > 0) is grows
        assert out["rho_max"] == pytest.approx(scale, rel=1e-3)
        assert out["tokens_rho_above_1"] == (out["tokens"] if grows else 0)
        assert out["growth_rate"] == pytest.approx(np.log(scale), abs=1e-3)
    with pytest.raises(ValueError, match="t=41"):
        spread_tail(model, words, states, 41, 6)


def _diag(model, n_layers, m_p, q, q_med, T_cross, rid):
    """A diagnostics record with q and q_median stored at the curve times of a rollout of
    100 (every t up to 32, then log-spaced), both rising linearly to their value at m_p."""
    from sst_core.store.codec import curve_times, encode_curve

    t = np.arange(1, 101)
    q_curve = q * t / m_p  # (100,)
    q_med_curve = q_med * t / m_p  # (100,)
    return {"status": "ok", "run_id": rid,
            "config": {"run": {"model": model, "n_layers": n_layers}, "tau": 0.5},
            "metrics": {"is_affine": True, "m_p": m_p, "T_cross": T_cross, "q_at_m_p": q,
                        "q_median_at_m_p": q_med, "curve_t": curve_times(100).tolist(),
                        "q": encode_curve(q_curve), "q_median": encode_curve(q_med_curve)}}


def test_figure4_both_ways_reads_each_spread_pooled_and_per_depth():
    from sst_core.reports import error_control as ec
    from sst_core.store.codec import curve_times

    recs = [_diag("token_gated_rnn", 1, m, 4.0, 1.0, max(1, m // 8), f"a{m}")
            for m in (40, 60, 80)]
    recs += [_diag("mamba", 2, m, 1.0, 0.8, m // 2, f"b{m}") for m in (50, 70, 90)]
    legacy = _diag("mamba", 2, 60, 1.0, 0.8, 30, "old")
    del legacy["metrics"]["q_median"]  # made before q_median: only the paper's estimate
    rows = ec.figure4_both_ways(recs + [legacy], n_boot=200)
    by = {(d["estimate"], d["n_layers"]): d for d in rows}
    assert set(by) == {(e, n) for e in ("mean", "median") for n in (None, 1, 2)}
    assert by["mean", None]["n"] == 7 and by["median", None]["n"] == 6
    assert by["mean", 1]["architectures"] == {"token_gated_rnn": 3}
    assert by["median", 2]["architectures"] == {"mamba L2": 3}
    assert by["median", None]["q_median"] == pytest.approx(0.9)  # median of 1.0 x3, 0.8 x3
    # q_median = 0.8 t / m_p reaches 1/2 at t = 5 m_p / 8: the first stored time from there
    stored = curve_times(100)
    first = {m: int(stored[stored >= 5 * m / 8][0]) for m in (50, 70, 90)}
    assert ec.stored_crossing(recs[3]["metrics"], "q_median", 0.5) == first[50]
    assert ec.spread_view(recs[3], "median")["T_cross"] == first[50]
    assert ec.spread_view(legacy, "median") is None
    with pytest.raises(ValueError, match="allowed: mean, median"):
        ec.spread_view(recs[0], "mode")
    assert by["mean", None]["r_at_stored_times"] is not None
    assert "r_at_stored_times" not in by["median", None]


def test_the_tail_summary_counts_the_trackers_above_the_thresholds():
    from sst_core.reports import Table
    from sst_core.reports.error_control import spread_tail_summary

    keys = ("q_over_q_median", "mean_over_median", "top_share", "lognormal_ratio",
            "rho_max", "growth_rate")
    data = [dict(zip(keys, (2.0, 2.0, 0.2, 1.8, 1.2, 0.05))),
            dict(zip(keys, (9.0, 7.0, 0.5, 2.4, 0.9, -0.01))),
            dict(zip(keys, (3.0, 3.0, 0.3, 2.0, 1.1, 0.02)))]
    t = spread_tail_summary(Table("What makes x", [], [], "note", ["r"], data))
    by = {d["measure"]: d for d in t.data}
    assert by["q_over_q_median"] == {"measure": "q_over_q_median", "n": 3, "median": 3.0,
                                     "min": 2.0, "max": 9.0, "above": None, "threshold": None}
    assert by["rho_max"]["above"] == 2 and by["growth_rate"]["above"] == 2
    # mean / median over the log-normal ratio: 2 / 1.8, 7 / 2.4, 3 / 2 all above 1
    assert by["over_lognormal"]["above"] == 3
    assert by["over_lognormal"]["max"] == pytest.approx(7.0 / 2.4)
    assert t.rows[-1][-1] == "2 of 3 above 0" and t.title == "In short: what makes x"


def test_figure4_before_after_reads_each_width_and_says_which_is_incomplete(monkeypatch):
    """Figure 4 at both widths: the rows of :func:`figure4_both_ways` per width, the
    population's progress in the note, an incomplete width marked in its rows."""
    from sst_core.reports import error_control as ec
    from sst_core.spec import profiles

    before = [_diag("mamba", 2, m, 1.0, 0.8, m // 2, f"b{m}") for m in (50, 70, 90)]
    after = [_diag("mamba", 2, m, 1.0, 0.8, m // 3, f"w{m}") for m in (60, 80, 100, 200)]
    sets = {"figure4": (before, 3), "figure4_wide": (after, 5)}  # one wide record missing
    monkeypatch.setattr(ec, "diagnostic_configs",
                        lambda P, root, which: list(range(sets[which][1])))
    stored = iter([before, after])
    monkeypatch.setattr(ec, "stored_records", lambda cfgs, root: next(stored))
    P = profiles.PROFILES["smoke"]
    t = ec.figure4_before_after(P)
    pooled = [d for d in t.data if d["estimate"] == "mean" and d["n_layers"] is None]
    assert [(d["d_model"], d["n"], d["complete"]) for d in pooled] == [
        (P.track_d_model, 3, True), (P.track_d_model_wide, 4, False)]
    assert pooled == [d for d in t.data if d["estimate"] == "mean" and d["n_layers"] is None]
    want = ec.figure4_both_ways(after)[0]
    assert pooled[1]["r"] == pytest.approx(want["r"])
    assert f"{P.track_d_model_wide} (incomplete)" in [r[2] for r in t.rows]
    assert f"4 of 5 at d_model {P.track_d_model_wide}" in t.note
    assert t.rows[-1][0] == "the paper"
    assert set(t.records) == {r["run_id"] for r in before + after}


def test_the_stored_analysis_is_spread_tail_of_the_stored_tracker(tmp_path, monkeypatch):
    """run_spread_tail measures the tracker its config names, on its diagnostics' words:
    the same numbers as spread_tail called on that tracker directly, stored as a record."""
    import json

    from sst_core.analysis.trackers import held_out_words, load_tracker
    from sst_core.experiments import runs
    from sst_core.groups import get_group
    from sst_core.spec import profiles
    from sst_core.spec.configs import SpreadTailConfig

    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    P = profiles.get_profile("smoke")
    from sst_core.experiments import paper1

    run = [c for c in paper1.figure4_runs(P) if c.model == "token_gated_rnn"
           and c.n_layers == 1][0]
    runs.run(run)  # the tracker first: the analysis only loads it
    cfg = SpreadTailConfig(run=run, t=7, n_words=63, seed=1, profile="smoke")
    rec = runs.run(cfg)
    assert rec["status"] == "ok" and rec["experiment"] == "tracking_spread_tail"
    json.dumps(rec["metrics"])
    _, model = load_tracker(run)
    words, states = held_out_words(run, 63, 7, 1)
    direct = spread_tail(model, words, states, 7, get_group(run.group).order)
    assert rec["metrics"] == pytest.approx(direct, rel=1e-6)


def test_the_spread_tail_grid_takes_figure4s_one_layer_token_gated_runs_and_the_table_reads_them(
        tmp_path, monkeypatch):
    """The grid holds one analysis per one-layer token-gated run that Figure 4 selects and
    that has a median spread, at t = its m_p on its diagnostics' words; the table reads
    their records and names those not stored."""
    from sst_core.experiments import paper1
    from sst_core.reports.error_control import spread_tail_table
    from sst_core.spec import profiles
    from sst_core.experiments.registry import version
    from sst_core.store.records import cached_run

    def write_record(cfg, metrics, root):
        cached_run(cfg, lambda _: metrics, root=root, version=version(cfg.experiment))

    P = profiles.get_profile("standard")  # both depths (configs only: nothing runs)
    population = paper1.figure4_population(P, tmp_path)
    gated = [c for c in population if c.model == "token_gated_rnn" and c.n_layers == 1]
    deeper = [c for c in population if c.model == "token_gated_rnn" and c.n_layers == 2]
    other = [c for c in population if c.model != "token_gated_rnn"][0]
    assert gated and deeper
    assert paper1.spread_tail_grid(P, tmp_path) == []  # no diagnostics stored yet

    def diagnostics(run, m_p, root, T_cross=30, q_median=0.5):
        cfg = paper1.diagnostics_config(P, run)
        write_record(cfg, {"m_p": m_p, "T_cross": T_cross, "is_affine": True,
                           "q_at_m_p": 2.0, "q_median_at_m_p": q_median,
                           "training_run": "t" + str(m_p)}, root=root)

    unselected = tmp_path / "unselected"
    diagnostics(gated[0], 100, unselected, T_cross=None)  # Figure 4 leaves it out
    assert paper1.spread_tail_grid(P, unselected) == []
    diagnostics(gated[0], 100, tmp_path)
    diagnostics(deeper[0], 200, tmp_path)  # two layers
    diagnostics(other, 100, tmp_path)  # another model
    grid = paper1.spread_tail_grid(P, tmp_path)
    assert [(c.run, c.t, c.seed, c.n_words) for c in grid] == [
        (gated[0], 100, 0, paper1.SPREAD_TAIL_WORDS)]
    table = spread_tail_table(P, tmp_path)
    assert table.rows == [] and "1 selected run whose analysis is not stored" in table.note
    write_record(grid[0], {"mean_over_median": 3.0, "top_share": 0.2, "log_sd": 1.0,
                           "lognormal_ratio": 1.6, "state_norm_median": 10.0,
                           "state_norm_p99": 90.0, "rho_max": 1.1, "norm_max": 2.0,
                           "tokens_rho_above_1": 2, "tokens": 3, "growth_rate": 0.04},
                 root=tmp_path)
    table = spread_tail_table(P, tmp_path)
    assert len(table.rows) == 1 and "not stored" not in table.note
    d = table.data[0]
    assert d["q_over_q_median"] == pytest.approx(4.0) and d["m_p"] == 100
    assert d["mean_over_median"] == 3.0 and d["training_run"] == "t100"
