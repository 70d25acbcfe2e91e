"""The memory-horizon experiment (delayed recall at lag tau): config, runner bookkeeping,
grid, report and figure."""
import dataclasses

import matplotlib
import pytest

from sst_core.experiments import paper2
from sst_core.reports import lra as lra_reports
from sst_core.spec.configs import MemoryHorizonConfig
from sst_core.spec.profiles import PROFILES, ConfigError
from sst_core.store.records import cached_run, record_path

matplotlib.use("Agg")


def tiny(**kw) -> MemoryHorizonConfig:
    base = dict(init="inv", freeze_spectrum=False, tau=3, N=4, H=4, steps=4, batch=8, seed=0,
                profile="smoke", margin=2, n_test=16, eval_every=2)
    return MemoryHorizonConfig(**(base | kw))


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("kw,match", [
    (dict(init="lni"), r"init='lni' is not allowed: one of inv, lin, real, step, random"),
    (dict(tau=-1), r"tau=-1 is not allowed: it must be an int >= 0"),
    (dict(N=5), r"N=5 is not allowed: the real state size must be even"),
    (dict(alphabet=1), r"alphabet=1 is not allowed: an int in 2..1024"),
    (dict(lr=0.0), r"lr=0.0 is not allowed: a learning rate"),
    (dict(steps=0), r"steps=0 is not allowed: it must be an int >= 1"),
    (dict(dt_min=0.2, dt_max=0.1), r"dt_min=0.2, dt_max=0.1 are not allowed"),
    (dict(warmup_frac=1.0), r"warmup_frac=1.0 is not allowed"),
])
def test_config_errors_name_the_field_and_the_range(kw, match):
    with pytest.raises(ConfigError, match=match):
        tiny(**kw)


def test_config_length_and_chance():
    c = tiny(tau=10, margin=5, alphabet=4)
    assert c.length == 16 and c.chance == 0.25


def test_runner_bookkeeping_frozen_memory_is_exactly_unchanged(store, one_thread):
    from sst_core.training.horizon import train_memory_horizon

    learned = train_memory_horizon(tiny())
    frozen = train_memory_horizon(tiny(freeze_spectrum=True))
    for m in (learned, frozen):
        assert 0.0 <= m["test_accuracy"] <= 1.0 and m["chance"] == 0.125 and m["length"] == 6
        assert m["curves"]["step"] == [2, 4] and len(m["curves"]["test_loss"]) == 2
        assert len(m["mf_tau_before"]) == len(m["mf_tau_after"]) == 1  # one layer
        assert 0.0 <= m["mf_tau_before"][0] <= 1.0
    # the same seed: the same initial spectrum learned or frozen
    assert learned["mf_tau_before"] == frozen["mf_tau_before"]
    assert frozen["mf_tau_after"] == frozen["mf_tau_before"]  # buffers: exactly equal
    assert learned["mf_tau_after"] != learned["mf_tau_before"]
    assert frozen["frozen_share"] > 0 and learned["frozen_share"] == 0


def test_memory_at_is_the_supremum_memory_function_at_tau(one_thread):
    import numpy as np

    from sst_core.models.s4 import memory_functions
    from sst_core.training.horizon import build_horizon_model, memory_at

    model = build_horizon_model(tiny(H=3, N=6))
    M = memory_functions(model.layers[0], 6)  # (H, T)
    assert memory_at(model, 6, 3) == [float(np.max(M[:, 3]))]


def test_grids_span_every_init_learned_and_frozen():
    for name in PROFILES:
        P = PROFILES[name]
        g = paper2.memory_horizon_grid(P)
        assert len(g) == len(set(g)) == len(P.horizon_taus) * 5 * 2 * len(P.horizon_seeds)
        assert {c.init for c in g} == {"inv", "lin", "real", "random", "step"}
        assert {c.tau for c in g} == set(P.horizon_taus)
    assert PROFILES["smoke"].horizon_taus == (4, 16)
    assert PROFILES["quick"].horizon_taus == (10, 100, 300, 1000)
    assert max(PROFILES["paper"].horizon_taus) > 1000


def _fake(cfg, acc, before, after=None):
    after = before if after is None else after
    return lambda c: {"test_accuracy": acc, "mf_tau_before": [before], "mf_tau_after": [after]}


def test_report_from_constructed_records(store):
    P = dataclasses.replace(PROFILES["smoke"], horizon_seeds=(0, 1))
    band = lra_reports.chance_band(8, P.horizon_n_test)
    assert band == pytest.approx(0.125 + 3 * (0.125 * 0.875 / 32) ** 0.5)
    for cfg in paper2.memory_horizon_grid(P):
        if (cfg.init, cfg.tau) == ("lin", 16):
            continue  # missing
        if cfg.init == "random" and cfg.tau == 16:  # memory gone at init: chance
            acc, before = (0.13, 0.12)[cfg.seed], 1e-6
        elif cfg.tau == 4:
            acc, before = 0.9 - 0.1 * cfg.seed, 0.5
        else:
            acc, before = 0.3, 0.05
        after = before if cfg.freeze_spectrum else before * 1.5
        cached_run(cfg, _fake(cfg, acc, before, after))
    t = lra_reports.memory_horizon(P)
    # per delay an accuracy column, then per delay a memory column
    assert len(t.rows) == 10 and t.columns == ["spectrum", "mode", "τ = 4", "τ = 16",
                                               "M[4]", "M[16]"]
    inv_learned = t.rows[0]
    assert inv_learned == ["S4D-Inv", "learned", "0.900 / 0.800", "0.300 / 0.300",
                           "0.5 → 0.75", "0.05 → 0.075"]
    lin = next(r for r in t.rows if r[0] == "S4D-Lin")
    assert lin[3] == "missing" and lin[5] == "missing"
    accuracy, memory = t.split(2, 4)  # as the chapter shows it: two tables
    assert accuracy.columns == ["spectrum", "mode", "τ = 4", "τ = 16"]
    assert memory.columns == ["spectrum", "mode", "M[4]", "M[16]"]
    assert memory.rows[0] == ["S4D-Inv", "learned", "0.5 → 0.75", "0.05 → 0.075"]
    # the learned cell whose memory grew most in training, for the chapter's prose
    items = lra_reports.horizon_items(P, t, lra_reports.memory_horizon_noise(P))
    assert (items["hz_grown_spectrum"], items["hz_grown_tau"], items["hz_grown_before"],
            items["hz_grown_after"]) == ("S4D-Inv", 4, 0.5, 0.75)
    # between "gone" and "present" (M 0.05 at the start): the tau = 16 cells of S4D-Inv,
    # the real axis and step in both modes (S4D-Lin's are missing, random's memory is
    # gone, and tau = 4's M of 0.5 counts as present); at 0.3 all are within the band
    assert items["hz_between"] == 6 and items["hz_between_at_chance"] == 6
    cells = {(d["init"], d["frozen"], d["tau"]): d for d in t.data if d["kind"] == "cell"}
    rnd = cells[("random", False, 16)]
    assert rnd["status"] == "ok" and rnd["accuracies"] == [0.13, 0.12] and rnd["at_chance"]
    assert rnd["mf_before"] == 1e-6 and rnd["mf_after"] == 1.5e-6
    miss = cells[("lin", True, 16)]
    assert miss["status"] == "missing" and miss["acc_max"] is None and miss["mf_before"] is None
    assert miss["n_missing"] == 2
    claims = {d["claim"]: d for d in t.data if d["kind"] == "claim"}
    assert claims["dead_memory_stays_at_chance"]["holds"] is True
    assert claims["dead_memory_stays_at_chance"]["n_cells"] == 1
    assert claims["dead_memory_is_not_learned"]["holds"] is True
    assert claims["live_memory_is_used"]["holds"] is True  # tau = 4: MF 0.5, accuracy 0.9
    assert claims["frozen_memory_unchanged"]["holds"] is True
    assert "chance is 0.125" in t.note and "smoke" in t.note and f"{band:.3f}" in t.note
    from sst_core.figures import lra as plots_lra
    fig = plots_lra.fig_memory_horizon([d for d in t.data if d["kind"] == "cell"], 0.125, band,
                                       mf_zero=lra_reports.MF_ZERO)
    acc_ax, mf_ax = fig.axes
    assert len(acc_ax.get_lines()) == 10 + 1  # 5 inits x 2 modes, and the chance line
    assert len(mf_ax.get_lines()) == 5 + 5 + 1  # init and trained per init, the threshold

    # a learned run above chance where memory was gone breaks the claim, and says where
    cfg = next(c for c in paper2.memory_horizon_grid(P)
               if (c.init, c.tau, c.freeze_spectrum, c.seed) == ("random", 16, False, 0))
    record_path(cfg).unlink()
    cached_run(cfg, _fake(cfg, 0.6, 1e-6, 0.02))
    t2 = lra_reports.memory_horizon(P)
    c2 = {d["claim"]: d for d in t2.data if d["kind"] == "claim"}
    assert c2["dead_memory_stays_at_chance"]["holds"] is False
    assert c2["dead_memory_stays_at_chance"]["failing"] == [["random", False, 16]]
    assert c2["dead_memory_is_not_learned"]["holds"] is False

    # a run whose memory function cannot be computed is recorded as failed: its cell says
    # how many of its runs it rests on, and the note gives the reason
    cfg = next(c for c in paper2.memory_horizon_grid(P)
               if (c.init, c.tau, c.freeze_spectrum, c.seed) == ("inv", 4, False, 1))
    record_path(cfg).unlink()

    def ill_conditioned(c):
        raise ArithmeticError("memory function did not converge up to 2000 digits")

    cached_run(cfg, ill_conditioned)
    t3 = lra_reports.memory_horizon(P)
    assert t3.rows[0][2] == "0.900 (1 of 2 runs; 1 failed)" and t3.rows[0][4] == "0.5 → 0.75"
    assert t3.rows[0][3] == "0.300 / 0.300"  # all its runs ok: no note
    cell = next(d for d in t3.data if d["kind"] == "cell" and (d["init"], d["frozen"], d["tau"])
                == ("inv", False, 4))
    assert (cell["n_ok"], cell["n_failed"]) == (1, 1)
    assert len(cell["failure_reasons"]) == 1 and "2000 digits" in cell["failure_reasons"][0]
    assert "Failed (1): " in t3.note and "did not converge up to 2000 digits" in t3.note
    assert "Failed" not in t2.note

    # a run that kept its accuracy but whose trained memory could not be computed
    # (mf_tau_after None): the cell says so, the claim about trained memory skips it
    for cfg in paper2.memory_horizon_grid(P):
        if (cfg.init, cfg.tau, cfg.freeze_spectrum) == ("random", 16, False):
            record_path(cfg).unlink()
            cached_run(cfg, lambda c: {"test_accuracy": 0.12, "mf_tau_before": [1e-6],
                                       "mf_tau_after": None, "mf_after_error": "ArithmeticError"})
    t4 = lra_reports.memory_horizon(P)
    cell = next(d for d in t4.data if d["kind"] == "cell" and (d["init"], d["frozen"], d["tau"])
                == ("random", False, 16))
    assert cell["status"] == "ok" and cell["mf_after"] is None and cell["mf_after_runs"] == []
    row = next(r for r in t4.rows if r[:2] == [lra_reports.INIT_NAMES["random"], "learned"])
    assert row[3] == "0.120 / 0.120" and row[5] == "1e-06 → not computable"
    c4 = {d["claim"]: d for d in t4.data if d["kind"] == "claim"}
    assert c4["dead_memory_stays_at_chance"]["holds"] is True
    assert c4["dead_memory_is_not_learned"]["n_cells"] == 0
    assert c4["dead_memory_is_not_learned"]["holds"] is None
    plots_lra.fig_memory_horizon([d for d in t4.data if d["kind"] == "cell"], 0.125, band,
                                 mf_zero=lra_reports.MF_ZERO)


def test_memory_after_training_that_cannot_be_computed_keeps_the_run(
        store, fail_on_second_call, one_thread):
    from sst_core.training import horizon

    calls = fail_on_second_call(  # after training
        horizon, "supremum_memory_function",
        ArithmeticError("memory function did not converge up to 2000 digits"))
    m = horizon.train_memory_horizon(tiny())
    assert len(calls) == 2 and 0.0 <= m["test_accuracy"] <= 1.0
    assert m["mf_tau_after"] is None and len(m["mf_tau_before"]) == 1
    assert m["mf_after_error"] == ("ArithmeticError: memory function did not converge up to "
                                   "2000 digits")


def test_report_and_figure_from_an_empty_store(store):
    from sst_core.figures import lra as plots_lra

    P = PROFILES["smoke"]
    t = lra_reports.memory_horizon(P)
    assert all(v == "missing" for r in t.rows for v in r[2:])
    assert all(d["holds"] is None for d in t.data if d["kind"] == "claim")
    cells = [d for d in t.data if d["kind"] == "cell"]
    fig = plots_lra.fig_memory_horizon(cells, chance=0.125, band=0.2)
    assert len(fig.axes) == 2


# -- the memory read with noise (memory_noise records) ----------------------------------------

def test_noisy_memory_config_errors():
    from sst_core.spec.configs import NoisyMemoryConfig

    for bad in [(), (1e-2, 1e-4), (0.0,), (1e-4, 1e-4), (True,), [1e-4]]:
        with pytest.raises(ConfigError, match=r"NoisyMemoryConfig.noise=.* is not allowed: a "
                                              r"non-empty tuple of increasing numbers"):
            NoisyMemoryConfig(run=tiny(), noise=bad, profile="smoke")


def test_run_memory_noise_reads_the_initial_spectrum_with_noise(one_thread):
    import numpy as np

    from sst_core.analysis.memory_noise import run_memory_noise
    from sst_core.spec.configs import NoisyMemoryConfig
    from sst_core.training.horizon import build_horizon_model, memory_at

    # long steps (dt 0.5-1): a well-conditioned spectrum, whose tiny-noise memory is exact
    run = tiny(H=3, N=6, dt_min=0.5, dt_max=1.0)
    cfg = NoisyMemoryConfig(run=run, noise=(1e-10, 1e-4, 1e-1), profile="smoke")
    out = run_memory_noise(cfg)
    assert out["noise"] == [1e-10, 1e-4, 1e-1] and out["tau"] == 3 and out["length"] == 6
    assert np.array(out["mf_tau_channels"]).shape == (3, 1, 3)  # levels, layers, channels
    for level, channels in zip(out["mf_tau"], out["mf_tau_channels"]):
        assert level[0] == pytest.approx(max(channels[0]), abs=1e-8)
    sup = [level[0] for level in out["mf_tau"]]
    assert sup[0] >= sup[1] >= sup[2] and sup[2] < sup[0]  # more noise, less memory
    exact = memory_at(build_horizon_model(cfg.run), 6, 3)[0]
    assert sup[0] == pytest.approx(exact, abs=1e-4)  # tiny noise: the exact memory function
    frozen = run_memory_noise(dataclasses.replace(
        cfg, run=dataclasses.replace(cfg.run, freeze_spectrum=True)))
    assert frozen["mf_tau"] == out["mf_tau"]  # one seed, one initial spectrum


def test_memory_noise_grid_reads_every_horizon_run():
    for name in PROFILES:
        P = PROFILES[name]
        g = paper2.memory_noise_grid(P)
        assert [c.run for c in g] == paper2.memory_horizon_grid(P)
        assert {c.noise for c in g} == {paper2.MEMORY_NOISE} and {c.profile for c in g} == {name}


def test_noise_report_from_constructed_records(store):
    from scipy.stats import spearmanr

    from sst_core.figures import lra as plots_lra

    P = dataclasses.replace(PROFILES["smoke"], horizon_seeds=(0,))
    n_levels = len(paper2.MEMORY_NOISE)
    # exact memory 1 everywhere; read with noise it is high for inv and lin and falls to 0
    # for the others, whose accuracy is at chance
    good = {"inv": 0.9, "lin": 0.8}
    for cfg in paper2.memory_horizon_grid(P):
        acc = good.get(cfg.init, 0.13) - 0.01 * cfg.tau / 16
        cached_run(cfg, _fake(cfg, acc, 1.0))
    t0 = lra_reports.memory_horizon_noise(P)  # no noisy records yet
    levels0 = [d for d in t0.data if d["kind"] == "level"]
    assert levels0[0]["noise"] == 0.0 and levels0[0]["holds"] is False  # M = 1, at chance
    assert levels0[0]["rho"] is None  # the exact memory is 1 in every cell: no ranking
    assert all(d["n_cells"] == 0 and d["holds"] is None for d in levels0[1:])
    assert t0.rows[1][2] == "—" and t0.rows[1][4] == "n/a"
    for cfg in paper2.memory_noise_grid(P):
        m = 0.95 if cfg.run.init in good else 0.01
        cached_run(cfg, lambda c, m=m: {"mf_tau": [[m * 0.9 ** i] for i in range(n_levels)]})
    t = lra_reports.memory_horizon_noise(P)
    cells = [d for d in t.data if d["kind"] == "cell"]
    levels = [d for d in t.data if d["kind"] == "level"]
    assert len(cells) == 5 * 2 * len(P.horizon_taus) and len(levels) == 1 + n_levels
    assert levels[0]["rho"] is None and levels[0]["n_live"] == len(cells)
    assert sorted(levels[0]["live_failing"]) == sorted(
        [c["init"], c["frozen"], c["tau"]] for c in cells if c["init"] not in good)
    first = levels[1]
    expect = spearmanr([c["memory"][first["noise"]] for c in cells],
                       [c["acc_max"] for c in cells]).statistic
    assert first["rho"] == pytest.approx(expect) and first["rho"] > 0.5
    assert first["holds"] is True and first["n_live"] == 4 * len(P.horizon_taus)
    assert t.rows[1][0] == f"M_δ[τ], δ = {paper2.MEMORY_NOISE[0]:g}" and t.rows[1][4] == "holds"
    assert "smoke" in t.note and "none fitted" in t.note
    fig = plots_lra.fig_memory_noise(cells, levels, 0.125, 0.2, mf_live=0.5)
    panels = [ax for ax in fig.axes if ax.axison]
    assert len(panels) == len(levels) and len(fig.axes) == 6  # 2 rows of 3, legend apart
    assert all(len(ax.collections) >= len(cells) for ax in panels)
    legend = next(ax for ax in fig.axes if not ax.axison).get_legend()
    assert [t.get_text() for t in legend.get_texts()][-2:] == ["learned", "frozen"]
    # what the chapter glues: the tables' grids and the numbers its prose cites
    horizon = lra_reports.memory_horizon(P)
    items = lra_reports.horizon_items(P, horizon, t)
    accuracy, memory = horizon.split(2, 2 + len(P.horizon_taus))
    assert items["hz_table"].text == accuracy.grid().text
    assert items["hz_table_mf"].text == memory.grid().text
    assert items["hz_grown_spectrum"] is None  # no learned cell's memory grew here
    assert horizon.title not in items["hz_table"].text + items["hz_table_mf"].text
    assert items["nz_table"].text == t.grid().text
    assert items["hz_claims"].text == lra_reports.horizon_claims_table(horizon.data).grid().text
    cfg = paper2.memory_horizon_grid(P)[0]
    assert items["hz_chance"] == cfg.chance
    assert items["hz_band"] == lra_reports.chance_band(cfg.alphabet, cfg.n_test)
    stuck = lra_reports.live_but_at_chance(t.data)
    assert (items["nz_stuck"], items["nz_explained"]) == (len(stuck["stuck"]), len(stuck["explained"]))
    assert items["nz_stuck"] == 3 * 2 * len(P.horizon_taus) == items["nz_explained"]
    assert items["nz_levels"] == ", ".join(f"{d:g}" for d in paper2.MEMORY_NOISE)
    assert (items["hz_N"], items["hz_steps"], items["hz_seeds"]) == (
        P.horizon_N, P.horizon_steps, len(P.horizon_seeds))
