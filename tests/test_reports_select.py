"""The one record -> table -> figure contract: one rule picks the best run of a cell
(reports.select), tables carry typed data, figures draw the rows they are given."""
import json
import random
from dataclasses import replace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from sst_core.experiments import beyond, paper1  # noqa: E402
from sst_core.figures import common as plots  # noqa: E402
from sst_core.figures import lra as plots_lra  # noqa: E402
from sst_core.models.registry import expected_affine  # noqa: E402
from sst_core.reports import beyond as rb  # noqa: E402
from sst_core.reports import error_control as ec  # noqa: E402
from sst_core.reports import lra as rl  # noqa: E402
from sst_core.reports import paper1 as rp1  # noqa: E402
from sst_core.reports.select import best_per_cell, grid_point, m_p_score, seeds_of  # noqa: E402
from sst_core.spec import configs, profiles  # noqa: E402
from sst_core.store.records import RunFailed, cached_run  # noqa: E402


def rec(m_p, lr=1e-3, seed=0, d_state=8, model="m", status="ok", n_layers=1, group="S3",
        phi=None, **metrics):
    cfg = {"model": model, "phi": phi, "group": group, "n_layers": n_layers,
           "d_state": d_state, "lr": lr, "seed": seed}
    return {"status": status, "run_id": f"{model}-{d_state}-{lr}-{seed}", "config": cfg,
            "metrics": {"m_p": m_p, **metrics}}


def by_model(r):
    return r["config"]["model"]


def ids(best):
    return {k: r["run_id"] for k, r in best.items()}


# -- the tie rule --------------------------------------------------------------------------

def test_highest_m_p_wins_and_a_failure_ranks_below_every_length():
    recs = [rec(None, lr=1e-4), rec(60, lr=1e-3), rec(100, lr=1e-2)]
    assert best_per_cell(recs, by_model)["m"]["config"]["lr"] == 1e-2
    assert best_per_cell(recs[:2], by_model)["m"]["metrics"]["m_p"] == 60
    assert m_p_score(rec(None)) < m_p_score(rec(60))


def test_a_tie_goes_to_the_grid_point_with_the_higher_sum_over_its_seeds():
    # lr 1e-3: 1000 and fail; lr 1e-2: 1000 and 600 -> lr 1e-2 (1600 > 999), although later
    recs = [rec(1000, lr=1e-3, seed=0), rec(None, lr=1e-3, seed=1),
            rec(1000, lr=1e-2, seed=0), rec(600, lr=1e-2, seed=1)]
    best = best_per_cell(recs, by_model)["m"]
    assert (best["config"]["lr"], best["config"]["seed"]) == (1e-2, 0)
    assert seeds_of(recs, best) == [1000, 600]


def test_a_full_tie_goes_to_the_earliest_record_in_grid_order():
    # grid order: d_state, then lr, then seed ascending
    recs = [rec(200, d_state=8, lr=1e-3, seed=0), rec(200, d_state=8, lr=1e-3, seed=1),
            rec(200, d_state=8, lr=1e-2, seed=0), rec(200, d_state=8, lr=1e-2, seed=1),
            rec(200, d_state=16, lr=1e-3, seed=0), rec(200, d_state=16, lr=1e-3, seed=1)]
    assert best_per_cell(recs, by_model)["m"]["run_id"] == "m-8-0.001-0"
    # the rule reads the order given: reversed, the last grid cell's last seed wins
    assert best_per_cell(recs[::-1], by_model)["m"]["run_id"] == "m-16-0.001-1"


def test_only_ok_records_compete_and_cells_are_kept_apart():
    recs = [rec(1000, model="a", status="failed"), rec(60, model="a"), rec(None, model="b"),
            rec(100, model="c", status="failed")]
    best = best_per_cell(recs, by_model)
    assert ids(best) == {"a": "a-8-0.001-0", "b": "b-8-0.001-0"}
    assert list(best) == ["a", "b"]  # cells in the order of their first ok record


def test_no_score_means_the_first_record_of_each_cell():
    recs = [rec(60, seed=1), rec(1000, seed=0), rec(200, model="b", seed=2)]
    assert ids(best_per_cell(recs, by_model, score=None)) == {"m": "m-8-0.001-1",
                                                               "b": "b-8-0.001-2"}


def test_grid_point_ignores_the_seed_and_reads_analysis_records_run():
    a, b = rec(60, seed=0), rec(100, seed=1)
    assert grid_point(a) == grid_point(b) != grid_point(rec(60, lr=1e-2))
    analysis = {"status": "ok", "config": {"run": a["config"], "n_samples": 64},
                "metrics": {"m_p": 60}}
    assert grid_point(analysis) == grid_point(a)


def _two_level(records, key):
    """Table 2's rule as it was written before reports.select: per cell, the grid point
    (d_state, lr) with the largest (best seed, sum over seeds), first in order on a tie."""
    out = {}
    for k in dict.fromkeys(key(r) for r in records if r["status"] == "ok"):
        points: dict = {}
        for r in records:
            if r["status"] == "ok" and key(r) == k:
                points.setdefault((r["config"]["d_state"], r["config"]["lr"]), []).append(
                    m_p_score(r))
        best = max(points, key=lambda p: (max(points[p]), sum(points[p])))
        out[k] = (best, max(points[best]))
    return out


def test_the_rule_is_table2s_two_level_rule_on_random_grids():
    rnd = random.Random(0)
    for _ in range(300):
        recs = [rec(rnd.choice([None, 60, 100, 1000]), model=m, d_state=d, lr=lr, seed=s,
                    status="ok" if rnd.random() > 0.15 else "failed")
                for m in ("a", "b") for d in (8, 16) for lr in (1e-4, 1e-3) for s in (0, 1, 2)]
        new = {k: ((r["config"]["d_state"], r["config"]["lr"]), m_p_score(r))
               for k, r in best_per_cell(recs, by_model).items()}
        assert new == _two_level(recs, by_model)


# -- reports use it --------------------------------------------------------------------------

def test_every_best_run_of_the_reports_follows_the_rule():
    recs = [rec(1000, lr=1e-3, seed=0, T_cross=10), rec(None, lr=1e-3, seed=1, T_cross=None),
            rec(1000, lr=1e-2, seed=0, T_cross=5), rec(600, lr=1e-2, seed=1, T_cross=None)]
    analysis = [{**r, "config": {"run": r["config"]}} for r in recs]
    for r in analysis:
        r["metrics"] = {**r["metrics"], "model": "m", "group": "S3", "is_affine": True}
    want = "m-8-0.01-0"
    assert ec.best_per_model(analysis)["m"]["run_id"] == want  # T_cross no longer decides
    assert rb.best_by_model(analysis)["m"]["run_id"] == want
    assert [r["run_id"] for r in rb.best_spectra(analysis)] == [want]
    assert [r["run_id"] for r in rp1.best_runs(recs)] == [want]


def test_best_runs_keys_by_group_model_and_depth():
    recs = [rec(60, group="S3"), rec(100, group="C2"), rec(200, n_layers=2),
            rec(1000, model="rnn_phi", phi="relu"), rec(60, lr=1e-2)]
    labels = sorted((r["config"]["group"], rp1.run_label(r["config"]))
                    for r in rp1.best_runs(recs))
    assert labels == [("C2", "m"), ("S3", "m"), ("S3", "m L2"), ("S3", "relu")]


def test_sup_mf_runs_take_the_first_learned_seed_of_each_init():
    def lra(init, seed, frozen=False, task="digits", sup=True, status="ok"):
        return {"status": status, "run_id": f"{init}-{seed}-{frozen}",
                "config": {"task": task, "init": init, "freeze_spectrum": frozen, "seed": seed},
                "metrics": {"sup_mf_before": [[1.0, 0.5]] if sup else None,
                            "sup_mf_after": [[1.0, 0.4]]}}
    recs = [lra("inv", 0, frozen=True), lra("inv", 1), lra("inv", 0), lra("lin", 0, sup=False),
            lra("lin", 1), lra("random", 0, task="listops"), lra("random", 0, status="failed")]
    chosen = rl.sup_mf_runs(recs, "digits")
    assert [r["run_id"] for r in chosen] == ["lin-1-False", "inv-1-False"]  # panel order
    fig = plots_lra.fig_sup_mf(chosen, "digits")
    assert [ax.get_title() for ax in fig.axes if ax.axison] == ["S4D-Lin", "S4D-Inv"]
    # one legend for the figure: below two full panels, in the spare panel of three
    assert len(fig.legends) == 1 and not any(ax.get_legend() for ax in fig.axes)
    three = plots_lra.fig_sup_mf(chosen + [lra("random", 1)], "digits")
    spare = [ax for ax in three.axes if not ax.axison]
    assert not three.legends and len(spare) == 1 and spare[0].get_legend() is not None
    assert sum(ax.get_legend() is not None for ax in three.axes) == 1
    plt.close("all")


def test_label_free_examples_one_per_group_and_model_affine_first():
    def lf(group, model, affine, seed):
        r = rec(60, model=model, group=group, seed=seed)
        return {**r, "config": {"run": r["config"]},
                "metrics": {"group": group, "is_affine": affine, "m_p": 60}}
    recs = [lf("S3", "tanh_rnn", False, 0), lf("S3", "mamba", True, 1),
            lf("S3", "mamba", True, 0), lf("A5", "mamba", True, 0)]
    got = [(r["metrics"]["group"], r["config"]["run"]["model"], r["config"]["run"]["seed"])
           for r in rb.label_free_examples(recs)]
    assert got == [("A5", "mamba", 0), ("S3", "mamba", 1), ("S3", "tanh_rnn", 0)]
    assert len(rb.label_free_examples(recs, n=2)) == 2



def test_label_free_examples_draw_passing_and_failing_trackers():
    """Half the panels from trackers that pass the training length, half from those that
    fail, in the page's order; a side with too few is filled from the other."""
    def lf(group, model, m_p):
        r = rec(m_p or 60, model=model, group=group, seed=0)
        return {**r, "config": {"run": r["config"]},
                "metrics": {"group": group, "is_affine": True, "m_p": m_p}}
    recs = [lf("A5", m, None) for m in ("a", "b", "c", "d")] + [lf("S3", "e", 300),
                                                                 lf("S3", "f", 1000)]
    got = [r["config"]["run"]["model"] for r in rb.label_free_examples(recs, n=4)]
    assert got == ["a", "b", "e", "f"]
    got = [r["config"]["run"]["model"] for r in rb.label_free_examples(recs, n=6)]
    assert got == ["a", "b", "c", "d", "e", "f"]
    only_failing = [r for r in recs if r["metrics"]["m_p"] is None]
    assert len(rb.label_free_examples(only_failing, n=3)) == 3


# -- figures draw what they are given ------------------------------------------------------------

def test_accuracy_figure_draws_every_record_it_is_given():
    def tr(m_p, seed):
        r = rec(m_p, seed=seed)
        r["config"]["eval_lengths"] = [60, 100]
        r["metrics"]["eval"] = {"60": {"token": 0.95}, "100": {"token": 0.5 + 0.1 * seed}}
        return r
    recs = [tr(60, 0), tr(100, 1)]
    fig = plots.fig_accuracy_vs_length(recs, ["S3"])
    assert len(fig.axes[0].get_lines()) == 2 + 2  # both runs, plus the 90% and 60 guides
    assert len(fig.legends[0].get_texts()) == 1 + 2  # one model, and the 2 guides
    fig = plots.fig_accuracy_vs_length(rp1.best_runs(recs), ["S3"])
    assert len(fig.axes[0].get_lines()) == 1 + 2
    plt.close("all")


def test_accuracy_figure_keeps_a_models_colour_in_every_panel_and_dashes_two_layers():
    def tr(model, group, n_layers):
        r = rec(60, model=model, group=group, n_layers=n_layers)
        r["metrics"]["eval"] = {"60": {"token": 0.95}, "100": {"token": 0.5}}
        return r
    recs = [tr("a", "C2", 1), tr("b", "C2", 1), tr("a", "S3", 1), tr("a", "S3", 2)]
    fig = plots.fig_accuracy_vs_length(recs, ["C2", "S3"])
    c2, s3 = fig.axes[:2]
    a2 = "a, 2 layers"
    runs = {ax: [ln for ln in ax.get_lines() if ln.get_label() in ("a", "b", a2)]
            for ax in (c2, s3)}
    colour = {(ax, ln.get_label()): ln.get_color() for ax in runs for ln in runs[ax]}
    assert colour[(c2, "a")] == colour[(s3, "a")] == colour[(s3, a2)] != colour[(c2, "b")]
    assert [ln.get_linestyle() for ln in runs[s3]] == ["-", "--"]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [
        "a", a2, "b", "90% accuracy", "training length 60"]
    plt.close("all")


def test_overflow_counts_each_run_whose_spread_is_not_finite_once_with_its_onset():
    def diag(run_id, model, n_layers, R, status="ok", seed=0):
        return {"status": status, "run_id": run_id,
                "config": {"run": {"model": model, "n_layers": n_layers, "group": "S3",
                                   "phi": None, "seed": seed}},
                "metrics": {"R": R, "curve_t": [1, 2, 40]}}
    recs = [diag("a", "linear_rnn", 1, [1.0, 5.0, None]),
            diag("b", "linear_rnn", 1, [1.0, None, None], seed=1),
            diag("b2", "linear_rnn", 1, [1.0, None, None], seed=1),  # one run twice: once
            diag("c", "mamba", 2, [1.0, 2.0, 3.0]), diag("d", "tanh_rnn", 2, [1.0, 1e308, None]),
            diag("e", "aussm", 1, None, status="failed")]
    onsets = ec.overflow_onsets(recs)
    assert [(d["run_id"], d["architecture"], d["t"]) for d in onsets] == [
        ("b", "linear_rnn", 2), ("a", "linear_rnn", 40), ("d", "tanh_rnn L2", 40)]
    table = ec.overflow_table(recs)
    assert table.data == [
        {"architecture": "linear_rnn", "group": "S3", "runs": 2, "t_min": 2, "t_max": 40},
        {"architecture": "tanh_rnn L2", "group": "S3", "runs": 1, "t_min": 40, "t_max": 40}]
    assert table.records == ["b", "a", "d"]
    assert ec.overflow_onsets(recs[3:4]) == [] and ec.overflow_table(recs[3:4]).rows == []


# -- typed table data --------------------------------------------------------------------------

@pytest.fixture
def P():
    return replace(profiles.PROFILES["smoke"], track_seeds=(0, 1), track_lrs=(1e-3, 1e-4),
                   track_eval_lengths=configs.EVAL_LENGTHS)


def fake(m_p):
    def fn(cfg):
        if m_p == "diverge":
            raise RunFailed("loss became nan at step 3")
        return {"m_p": m_p, "eval": {}}
    return fn


def _typed(x):
    """No display string that stands for a number or a missing value (a status says it)."""
    if isinstance(x, dict):
        return all(_typed(v) for k, v in x.items() if k != "status")
    if isinstance(x, list):
        return all(_typed(v) for v in x)
    if isinstance(x, str):
        return not (x.lstrip("-").replace(".", "", 1).isdigit() or x in ("fail", "—", "n/a")
                    or x.startswith("missing /"))
    return True


def test_table2_and_harder_groups_data_have_a_status_and_numbers(tmp_path, P):
    values = {("tanh_rnn", 1e-3, 0): 1000, ("tanh_rnn", 1e-3, 1): 600,
              ("mamba", 1e-3, 0): None, ("mamba", 1e-3, 1): None}
    for cfg in paper1.table2_grid(P, models=("tanh_rnn", "mamba", "linear_rnn"),
                                  groups=("S3",)):
        if cfg.model == "linear_rnn":  # every run diverges
            cached_run(cfg, fake("diverge"), root=tmp_path)
        elif (cfg.model, cfg.lr, cfg.seed) in values:
            cached_run(cfg, fake(values[(cfg.model, cfg.lr, cfg.seed)]), root=tmp_path)
    t = rp1.table2(P, root=tmp_path, models=("tanh_rnn", "mamba", "linear_rnn", "mamba3"))
    s3 = {d["model"]: d for d in t.data if d["group"] == "S3"}
    assert {m: (d["status"], d["m_p"]) for m, d in s3.items()} == {
        "tanh_rnn": ("ok", 1000), "mamba": ("fail", None), "linear_rnn": ("diverged", None),
        "mamba3": ("missing", None)}
    assert _typed(t.data) and _typed(json.loads(t.to_json())["data"])
    h = rb.harder_groups(P, root=tmp_path)
    hs3 = {d["model"]: d for d in h.data if d["group"] == "S3" and d["model"] in s3}
    assert {m: (d["status"], d["m_p"]) for m, d in hs3.items()} == {
        m: (d["status"], d["m_p"]) for m, d in s3.items()}
    assert hs3["tanh_rnn"]["m_p_seeds"] == [1000, 600] and _typed(h.data)
    row = next(r for r in h.rows if r[0] == "Linear RNN")  # the papers' names
    assert row[2] == "diverged"  # rendering unchanged: the rows keep their words
    # the split by class counts what the cells say: tanh RNN reaches 1000, Mamba fails at
    # 60, the diverged Linear RNN and the missing models count in neither
    split = {d["group"]: d for d in rb.harder_groups_split(P, root=tmp_path).data}
    n_sd = sum(not expected_affine(m) for m in paper1.TABLE2_MODELS)
    assert split["S3"] == {"group": "S3", "longest": 1000, "n_state_dependent": n_sd,
                           "n_affine": len(paper1.TABLE2_MODELS) - n_sd,
                           "state_dependent_reach": 1, "affine_reach": 0, "affine_fail": 1,
                           "state_dependent_fail": 0, "best_affine": None,
                           "best_state_dependent": {"m_p": 1000, "model": "tanh_rnn"}}
    assert split["A5"]["state_dependent_reach"] == split["A5"]["affine_fail"] == 0


def test_semi_affine_data_is_typed(tmp_path, P):
    for cfg in beyond.semi_affine_grid(P):
        if cfg.group == "S3" and cfg.model == "mamba":
            cached_run(cfg, fake(600 if cfg.seed == 0 else None), root=tmp_path)
    t = rb.semi_affine(P, root=tmp_path)
    rows = {d["model"]: d for d in t.data}
    assert rows["mamba"]["cells"]["S3 L1"] == {"status": "ok", "m_p": 600}
    assert rows["mamba"]["cells"]["C2 L1"] == {"status": "missing", "m_p": None}
    assert rows["mamba"]["diagnostics"] == "missing" and _typed(t.data)
    assert next(r for r in t.rows if r[0] == "Mamba")[2:5] == ["missing", "missing", "600"]
    from sst_core.reports.paper1 import shown_text  # the data's cells, shown as the table
    assert [shown_text(c["status"], c["m_p"]) for c in rows["mamba"]["cells"].values()] == [
        "missing", "missing", "600"]
