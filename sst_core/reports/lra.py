"""Paper 2's LRA tables from stored ``lra`` records, beside the published numbers.

A cell is ``max / min`` test accuracy over the seeds of one (task, init, learned or frozen),
as the paper reports it (6 seeds there). Our generated tasks stand in for the published
ones (``paper_values.LRA_COUNTERPART``): the numbers are shown side by side, but a stand-in
at a reduced scale is not expected to match; the comparison that carries over is the
*ordering* of learned against frozen within one task.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from sst_core.experiments import paper2
from sst_core.reports import Table, group_records, runs_note, stored_records
from sst_core.reports.select import best_per_cell
from sst_core.spec import paper_values
from sst_core.spec.names import INIT_NAMES, PAPER_INIT_NAMES, TASK_NAMES
from sst_core.spec.profiles import Profile



def _mode(frozen: bool) -> str:
    return "frozen (RC)" if frozen else "learned"


def collect(cfgs, root=None) -> tuple[dict, list[str], dict]:
    """Test accuracies by (task, init, frozen), run ids, and counts of failed/missing runs."""
    ok, ids, status = group_records(cfgs, lambda c: (c.task, c.init, c.freeze_spectrum), root)
    acc = {key: [rec["metrics"]["test_accuracy"] for _, rec in runs] for key, runs in ok.items()}
    return acc, ids, status


def stored_tasks(grid, root=None) -> tuple[str, ...]:
    """The tasks of ``grid`` (LRA configs) on which every cell (spectrum and mode) has all
    its runs stored and at least one of them ok, in the grid's order. A staged grid on a
    task outside the profile's tables (:func:`sst_core.experiments.paper2.lra_pathfinder_grid`,
    :func:`~sst_core.experiments.paper2.lra_pathfinder_ablation_grid`) joins the tables
    on such a task, and only then."""
    _, _, status = group_records(grid, lambda c: (c.task, c.init, c.freeze_spectrum), root)
    return tuple(t for t in dict.fromkeys(c.task for c in grid)
                 if all(s["ok"] and not s["missing"] for k, s in status.items() if k[0] == t))


# how a table marks a task run at its own size (a staged grid joined: stored_tasks)
OWN_SIZE = " [own size]"
OWN_SIZE_TEXT = ("[own size]: a task outside the common grid, trained at a training set "
                 "and model size of its own (the scale table), its cells complete. ")


def _cell(values: list[float]) -> str:
    if not values:
        return "—"
    return f"{max(values):.3f} / {min(values):.3f}" if len(values) > 1 else f"{values[0]:.3f}"


def _paper(cell) -> str:
    return "—" if cell is None else f"{cell[0]:.3f} / {cell[1]:.3f}"


def _both(ours: list[float], paper) -> str:
    """``ours max / min (paper max / min)``."""
    return f"{_cell(ours)} ({_paper(paper)})"


# the profile settings every LRA table's scale line names (each table adds its own)
LRA_SCALE_KNOBS = ("lra_H", "lra_N", "lra_layers", "lra_epochs", "lra_n_train", "lra_task_n_train",
                   "lra_task_H", "lra_task_layers")


def lra_main(P: Profile, root=None) -> Table:
    """The paper's main table, ours beside it: per task of ``P.lra_tasks``, then per task
    of :func:`~sst_core.experiments.paper2.lra_pathfinder_grid` once its runs there are
    all stored (:func:`stored_tasks`, marked :data:`OWN_SIZE`)."""
    own = paper2.lra_pathfinder_grid(P)
    extra = stored_tasks(own, root)
    cfgs = paper2.lra_main_grid(P) + [c for c in own if c.task in extra]
    acc, ids, status = collect(cfgs, root)
    combos = [(i, f) for f in (False, True) for i in paper2.LRA_MAIN_INITS]
    cols = ["task (stands for)"] + [f"{_mode(f)} {INIT_NAMES[i]}: ours (paper)" for i, f in combos] \
        + ["frozen − learned, mean (z)"]
    rows, data = [], []
    for task in P.lra_tasks + extra:
        published = paper_values.LRA_COUNTERPART.get(task)
        row = [f"{task} ({published or '—'})" + (OWN_SIZE if task in extra else "")]
        for init, frozen in combos:
            key = (task, init, frozen)
            paper = paper_values.LRA_MAIN.get((published, init, frozen)) if published else None
            row.append(_both(acc.get(key, []), paper) + runs_note(status[key]))
            data.append({"task": task, "stands_for": published, "init": init, "frozen": frozen,
                         "accuracies": acc.get(key, []), "n_runs": status[key]["ok"] + status[key]["failed"],
                         "n_failed": status[key]["failed"], "n_missing": status[key]["missing"],
                         "paper_max_min": list(paper) if paper else None})
        verdict = []
        for init in paper2.LRA_MAIN_INITS:  # claim 1's accuracy part, by the claim rule
            learned, frozen = acc.get((task, init, False)), acc.get((task, init, True))
            part = (mean_part(seed_stats(frozen), seed_stats(learned), "accuracy")
                    if learned and frozen else None)
            if part is not None and part["verdict"] is not None:
                z = f"z {part['z']:+.1f}" if part["z"] is not None else "by sign"
                verdict.append(f"{INIT_NAMES[init]}: {part['diff']:+.3f} ({z}), {part['verdict']}")
            for d in data:  # the frozen cell carries its comparison with the learned one
                if (d["task"], d["init"], d["frozen"]) == (task, init, True):
                    d["frozen_minus_learned"] = part
        row.append("; ".join(verdict) or "—")
        rows.append(row)
    note = (f"Cells: our test accuracy, max / min over seeds, and in brackets the paper's max / "
            f"min for the task ours stands in for. Test accuracy at the epoch of best validation accuracy, max / min over seeds "
            f"{P.lra_seeds} (the paper: 6 seeds). "
            + ("Our tasks are generated stand-ins at a reduced scale (digits stands in for "
               "sequential CIFAR), so compare orderings, not values. "
               if any(not t.startswith("lra_") for t in P.lra_tasks) else
               "The tasks read the user's LRA files (sst lra --data-dir) at this profile's "
               "model size. ")
            + (OWN_SIZE_TEXT if extra else "")
            + f"Scale: {P.scale(*LRA_SCALE_KNOBS, 'lra_listops_max_len', 'lra_image_side')}.")
    return Table("Frozen (RC) against learned spectra: the main table", cols, rows, note, ids, data)


def lra_ablation(P: Profile, root=None) -> Table:
    """The paper's ablation, ours beside it: a column per task of ``P.lra_tasks``, then per
    task of :func:`~sst_core.experiments.paper2.lra_pathfinder_ablation_grid` once its
    runs there are all stored (:func:`stored_tasks`, marked :data:`OWN_SIZE`)."""
    own = paper2.lra_pathfinder_ablation_grid(P)
    extra = stored_tasks(own, root)
    cfgs = paper2.lra_ablation_grid(P) + [c for c in own if c.task in extra]
    acc, ids, status = collect(cfgs, root)
    tasks = P.lra_tasks + extra
    cols = ["eigenvalues", "mode"] + [
        f"{t}{OWN_SIZE if t in extra else ''} (as "
        f"{paper_values.LRA_COUNTERPART.get(t) or '—'}): ours (paper)" for t in tasks]
    rows, data = [], []
    for init in paper2.LRA_ABLATION_INITS:
        for frozen in (False, True):
            row = [INIT_NAMES[init], _mode(frozen)]
            for task in tasks:
                key = (task, init, frozen)
                published = paper_values.LRA_COUNTERPART.get(task)
                paper = paper_values.LRA_ABLATION.get((published, init, frozen)) if published else None
                row.append(_both(acc.get(key, []), paper) + runs_note(status[key]))
                data.append({"task": task, "init": init, "frozen": frozen,
                             "accuracies": acc.get(key, []),
                             "n_runs": status[key]["ok"] + status[key]["failed"],
                             "n_failed": status[key]["failed"],
                             "paper_max_min": list(paper) if paper else None})
            rows.append(row)
    note = (f"Cells: our test accuracy (max / min over seeds {P.lra_ablation_seeds}) and, in "
            f"brackets, the paper's max / min. The paper's ablation "
            f"covers Retrieval, Image, Pathfinder and Path-X ('—': no published counterpart). "
            f"Eigenvalue types as in sst_core.theory.memory.init_Lambda. "
            + (OWN_SIZE_TEXT if extra else "")
            + f"Scale: {P.scale(*LRA_SCALE_KNOBS)}.")
    return Table("Ablation: eigenvalue initialisation x learned or frozen", cols, rows, note, ids, data)


SUP_MF_INITS = ("random", "lin", "step", "inv", "real")  # the figure's panel order


def grid_runs(records: list[dict[str, Any]], cfgs) -> list[dict[str, Any]]:
    """The records of ``records`` that are runs of the configs ``cfgs`` (by run id), in
    the order given: a table's or figure's own runs, without the probes and data probes
    that train the same cells on other sizes."""
    from sst_core.spec.configs import config_hash

    ids = {config_hash(c) for c in cfgs}
    return [r for r in records if r["run_id"] in ids]


def test_loss_runs(P: Profile, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs :func:`sst_core.figures.lra.fig_test_loss` draws: those of ``records``
    that are runs of the main table (:func:`sst_core.experiments.paper2.lra_main_grid`),
    every seed."""
    return grid_runs(records, paper2.lra_main_grid(P))


def sup_mf_runs(records, task: str, P: Profile | None = None) -> list[dict]:
    """The runs :func:`sst_core.figures.lra.fig_sup_mf` draws on ``task``: of each
    initialisation, the learned run with a supremum memory function, its first seed (no
    preference among seeds: :func:`sst_core.reports.select.best_per_cell` with no score),
    in the order of :data:`SUP_MF_INITS`; with ``P``, runs of its main table and ablation
    only (:func:`grid_runs`)."""
    if P is not None:
        records = grid_runs(records, paper2.lra_main_grid(P) + paper2.lra_ablation_grid(P))
    recs = [r for r in records if r["status"] == "ok" and r["config"]["task"] == task
            and not r["config"]["freeze_spectrum"] and r["metrics"].get("sup_mf_before")]
    chosen = best_per_cell(recs, lambda r: r["config"]["init"], score=None)
    return [chosen[i] for i in SUP_MF_INITS if i in chosen]


# -- the paper's four claims, task by task ------------------------------------------------

UNSTRUCTURED = ("random", "real", "step")  # the ablation's spectra other than S4D-Inv
MF_GROWTH_LIMIT = 1.1  # "training does not extend memory": summed sup MF grows < 10%
LOSS_NEAR_MIN = 0.05  # "converged": test loss within 5% of the run's minimum


def epochs_to_converge(curves: dict) -> int | None:
    """The first epoch whose test loss is within :data:`LOSS_NEAR_MIN` of the run's
    minimum test loss; None without a test loss."""
    loss = [v for v in curves.get("test_loss", []) if v is not None]
    if not loss:
        return None
    target = min(loss) * (1 + LOSS_NEAR_MIN)
    return next(e for e, v in zip(curves["epoch"], curves["test_loss"])
                if v is not None and v <= target)


def converged(curves: dict) -> bool | None:
    """Whether a run's test loss reached its plateau before training ended: it came within
    :data:`LOSS_NEAR_MIN` of its minimum (:func:`epochs_to_converge`) at least
    :data:`LATE_EPOCHS` epochs before its last epoch. A run that gets there later was still
    falling at the end, so the epoch at which it would have converged is not known. None
    without a test loss."""
    e = epochs_to_converge(curves)
    return None if e is None else e <= curves["epoch"][-1] - LATE_EPOCHS


def _median(values: list[float]) -> float | None:
    import numpy as np

    return float(np.median(values)) if values else None


def mf_sums(records: list[dict[str, Any]], when: str,
            delays: int | None = None) -> list[float]:
    """Per learned-spectrum ``ok`` run of ``records`` whose memory was computable before
    and after training: its supremum memory function summed over delays and layers,
    ``when`` "before" or "after" training; over the first ``delays`` delays of the stored
    window only where given (None: the whole window)."""
    import numpy as np

    if when not in ("before", "after"):
        raise ValueError(f"when must be 'before' or 'after', got {when!r}")
    if delays is not None and (not isinstance(delays, int) or isinstance(delays, bool)
                               or delays < 1):
        raise ValueError(f"delays must be a positive int or None (every delay), "
                         f"got {delays!r}")
    return [float(np.sum([np.sum(x[:delays]) for x in r["metrics"][f"sup_mf_{when}"]]))
            for r in records
            if r["status"] == "ok" and not r["config"]["freeze_spectrum"]
            and r["metrics"].get("sup_mf_before") and r["metrics"].get("sup_mf_after")]


def mf_growth_ratios(records: list[dict[str, Any]],
                     delays: int | None = None) -> list[float]:
    """Per learned-spectrum ``ok`` run of ``records``: its supremum memory function summed
    over delays and layers after training over the same sum at initialisation (claim 3 of
    :func:`lra_claims`; the sums of :func:`mf_sums`, over its first ``delays`` delays where
    given). Runs whose memory after training was not computable (``None``) and runs with
    no memory at initialisation are left out."""
    before, after = mf_sums(records, "before", delays), mf_sums(records, "after", delays)
    return [a / b for b, a in zip(before, after) if b > 0]


# "overfits": the last epoch's test loss is this much (relative) above the run's smallest
# while the train loss still fell over the run; one rule for every task
OVERFIT_RISE = 0.10


def _signed(x: float) -> str:
    """``x`` to three decimals with its sign, never "-0.000" for a tiny negative."""
    return f"{round(x, 3) + 0.0:+.3f}"


LATE_EPOCHS = 3  # the late part of training whose validation gain fit_curves reports


def fit_curves(records: list[dict[str, Any]]) -> dict[str, Any]:
    """How the ``ok`` runs of ``records`` (LRA records of one cell) fit: the medians over
    runs of the train loss at the first and last epoch, of the smallest test loss, the
    epoch it is reached at and the last epoch's test loss, how many runs overfit (last
    test loss more than :data:`OVERFIT_RISE` above its smallest while the train loss
    fell) and how many were still learning (their smallest test loss at the last of
    several epochs: the epoch budget, not the task, stopped them), and the medians of how
    much the validation accuracy rose over the last epoch and over the last
    :data:`LATE_EPOCHS` (``val_gain_last``, ``val_gain_late``; runs with more epochs than
    that). Medians are None without runs."""
    runs = [r["metrics"]["curves"] for r in records if r["status"] == "ok"]
    first, last, low, at, end, gain_last, gain_late = [], [], [], [], [], [], []
    overfit = still_falling = 0
    for c in runs:
        train, test = c["train_loss"], c["test_loss"]  # (epochs,) each
        val = c.get("val_accuracy") or []  # (epochs,)
        if len(val) > LATE_EPOCHS:
            gain_last.append(val[-1] - val[-2])
            gain_late.append(val[-1] - val[-1 - LATE_EPOCHS])
        i = min(range(len(test)), key=test.__getitem__)
        first.append(train[0])
        last.append(train[-1])
        low.append(test[i])
        at.append(c["epoch"][i])
        end.append(test[-1])
        overfit += test[-1] > (1 + OVERFIT_RISE) * test[i] and train[-1] < train[0]
        still_falling += len(test) > 1 and i == len(test) - 1
    return {"runs": len(runs), "train_first": _median(first), "train_last": _median(last),
            "test_min": _median(low), "test_min_epoch": _median(at), "test_last": _median(end),
            "overfit": overfit, "still_falling": still_falling,
            "val_gain_last": _median(gain_last), "val_gain_late": _median(gain_late)}


def lra_fit(P: Profile, root=None) -> Table:
    """Per task and training-set size, how the learned S4D-Inv runs fit
    (:func:`fit_curves`) and the best test accuracy they reach beside chance: whether the
    training set, not the epochs, limits what a stand-in task shows at this scale. The
    data probes (:func:`sst_core.experiments.paper2.lra_data_probe_grid`) add a row with
    more training examples for their tasks."""
    cfgs = [c for c in dict.fromkeys(paper2.lra_main_grid(P) + paper2.lra_probe_grid(P)
                                     + paper2.lra_data_probe_grid(P))
            if c.init == "inv" and not c.freeze_spectrum]
    ok, ids, status = group_records(cfgs, lambda c: (c.task, c.n_train), root)
    cols = ["task: training examples", "best test accuracy (chance)",
            "train loss: first → last", "test loss: smallest (epoch) → last",
            f"validation accuracy gain: last {LATE_EPOCHS} epochs (last)",
            "runs that overfit / still learn, of all"]
    rows, data = [], []
    for task, size in dict.fromkeys((c.task, c.n_train) for c in cfgs):
        recs = [rec for _, rec in ok.get((task, size), [])]
        f = fit_curves(recs)
        n_train = _median([r["metrics"]["task"]["n_train"] for r in recs
                           if (r["metrics"].get("task") or {}).get("n_train")])
        best = max((r["metrics"]["test_accuracy"] for r in recs), default=None)
        chance = _median([r["metrics"]["chance_accuracy"] for r in recs
                          if r["metrics"].get("chance_accuracy") is not None])
        st = status.get((task, size), {})
        if f["runs"]:
            rows.append([f"{task}: {'—' if n_train is None else f'{n_train:,.0f}'}",
                         f"{best:.3f} ({'—' if chance is None else f'{chance:.3f}'})",
                         f"{f['train_first']:.3f} → {f['train_last']:.3f}",
                         f"{f['test_min']:.3f} ({f['test_min_epoch']:g}) → {f['test_last']:.3f}",
                         "—" if f["val_gain_late"] is None else
                         f"{_signed(f['val_gain_late'])} ({_signed(f['val_gain_last'])})",
                         f"{f['overfit']} / {f['still_falling']} of {f['runs']}"])
        else:
            what = "missing" if st.get("missing") else "failed"
            rows.append([f"{task}: {size:,} (asked)", what, "—", "—", "—", "—"])
        data.append({"task": task, "n_train_asked": size, "n_train": n_train,
                     "best_test_accuracy": best, "chance": chance, **f})
    note = ("Learned S4D-Inv runs of each task (main table, probes and data probes: "
            f"{P.lra_data_probe_factor} times the training examples on "
            f"{', '.join(P.lra_data_probe_tasks) or 'no task'}, seed {P.lra_seeds[0]}), "
            "medians over their seeds; the training examples are those the task has (digits "
            "has fewer than the profile asks). A run overfits when its last epoch's test "
            f"loss is more than {OVERFIT_RISE:.0%} above its smallest while its train loss "
            "fell; it is still learning when its smallest test loss is at its last epoch. "
            "Test accuracy is read at the epoch of best validation accuracy. The "
            "validation accuracy's gains are medians over the runs; the learning rate "
            "follows a cosine schedule that reaches zero at the last epoch. Scale: "
            f"{P.scale(*LRA_SCALE_KNOBS)}.")
    return Table("How the learned S4D-Inv runs fit their training sets", cols, rows, note,
                 ids, data)


def _chance(records: list[dict[str, Any]]) -> tuple[float | None, float | None]:
    """The chance accuracy of ``records``' test set (median over them) and the highest
    accuracy still "at chance": chance + CHANCE_SIGMAS binomial standard deviations."""
    chance = _median([r["metrics"]["chance_accuracy"] for r in records
                      if r["metrics"].get("chance_accuracy") is not None])
    n_test = _n_test(records)
    return chance, (None if chance is None or not n_test else at_chance(chance, n_test))


def _n_test(records: list[dict[str, Any]]) -> float | None:
    """The test-set size of ``records`` (median over them); None where none says it."""
    return _median([r["metrics"]["task"]["n_test"] for r in records
                    if (r["metrics"].get("task") or {}).get("n_test")])


def _data_probe(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The best ok data-probe run of a task: its test accuracy, training examples, chance
    and whether it is above chance (:func:`_chance`); None without one."""
    done = [r for r in records if r["status"] == "ok"]
    if not done:
        return None
    best = max(done, key=lambda r: r["metrics"]["test_accuracy"])
    chance, band = _chance(done)
    acc = best["metrics"]["test_accuracy"]
    n_train = (best["metrics"].get("task") or {}).get("n_train", best["config"]["n_train"])
    return {"best": acc, "n_train": n_train, "chance": chance,
            "above_chance": None if band is None else acc > band}


# -- the claim rule: a claimed direction judged against the noise of seeds ----------------

# "holds": the z of the difference the claim predicts (judge, normal_scale) lies beyond this
# on the claimed side; "fails": beyond it on the other side; "tie": within
CLAIM_SES = 2.0
VERDICTS = ("holds", "tie", "fails")
# a claim about when runs converge, on runs that had not converged when training ended
UNDETERMINED = "undetermined"
# d_2(n): the expected range of n independent normal draws, in standard deviations
# (Tippett 1925; the tables of statistical process control). The paper gives max / min
# over its seeds, not a standard deviation: its rows' spread is range / d_2(n)
RANGE_TO_SD = {2: 1.128, 3: 1.693, 4: 2.059, 5: 2.326, 6: 2.534, 7: 2.704, 8: 2.847}


def seed_stats(values: list[float]) -> dict[str, Any]:
    """Mean, sample standard deviation (``ddof`` 1; None for one value) and number of a
    cell's seeds."""
    import numpy as np

    x = np.asarray(values, dtype=float)
    return {"n": int(x.size), "mean": float(x.mean()) if x.size else None,
            "sd": float(x.std(ddof=1)) if x.size > 1 else None}


def range_stats(high: float, low: float, n: int = paper_values.LRA_SEEDS) -> dict[str, Any]:
    """:func:`seed_stats` of a published cell that gives only max / min over ``n`` seeds:
    the midrange as the mean and range / d_2(n) (:data:`RANGE_TO_SD`) as the standard
    deviation."""
    if n not in RANGE_TO_SD:
        raise ValueError(f"n={n} seeds: d_2 is tabled for {min(RANGE_TO_SD)}..{max(RANGE_TO_SD)}")
    return {"n": n, "mean": (high + low) / 2, "sd": (high - low) / RANGE_TO_SD[n]}


def judge(diff: float, se: float, fail_ses: float = CLAIM_SES, z: float | None = None
          ) -> str:
    """The claim rule on a difference the claim predicts positive, with its standard
    error: ``holds`` where its z (``z``, else ``diff / se``) lies beyond :data:`CLAIM_SES`
    above 0, ``fails`` beyond ``fail_ses`` below (a part of a claim of several:
    :func:`fail_ses`), ``tie`` within (``se`` 0: by the sign alone, 0 a tie). A part's z
    is its test statistic on the normal scale (:func:`normal_scale`), so that the levels
    mean the same for a few seeds as for many."""
    if se < 0:
        raise ValueError(f"a standard error cannot be negative, got {se}")
    if fail_ses < CLAIM_SES:
        raise ValueError(f"fail_ses must be at least CLAIM_SES = {CLAIM_SES:g}, got {fail_ses}")
    if se == 0:
        return "holds" if diff > 0 else "fails" if diff < 0 else "tie"
    z = diff / se if z is None else z
    return "holds" if z > CLAIM_SES else "fails" if z < -fail_ses else "tie"


def normal_scale(lower: float, upper: float) -> float:
    """The z of a test statistic whose null distribution puts ``lower`` below it and
    ``upper`` above it (``lower + upper`` = 1): the standard normal quantile with the same
    tail, taken from the smaller tail so that far tails keep their precision."""
    from statistics import NormalDist

    if not (0 <= lower <= 1 and 0 <= upper <= 1):
        raise ValueError(f"tail probabilities must lie in [0, 1], got {lower}, {upper}")
    tiny = 1e-300  # inv_cdf needs (0, 1)
    if upper < lower:
        return -NormalDist().inv_cdf(max(upper, tiny))
    return NormalDist().inv_cdf(max(lower, tiny))


def welch_df(a: dict[str, Any], b: dict[str, Any]) -> float:
    """Welch-Satterthwaite degrees of freedom of the difference of two cells' means
    (:func:`seed_stats`); a cell of one value with no spread (a fixed limit) adds nothing."""
    terms = [(c["sd"] ** 2 / c["n"], c["n"] - 1) for c in (a, b) if c["sd"]]
    if not terms:
        raise ValueError("neither cell has a spread: no degrees of freedom")
    if any(n < 1 for _, n in terms):
        raise ValueError("a cell with a spread needs at least two values")
    return sum(v for v, _ in terms) ** 2 / sum(v ** 2 / n for v, n in terms)


def t_scale(t: float, df: float) -> float:
    """A Student t statistic with ``df`` degrees of freedom on the normal scale
    (:func:`normal_scale`)."""
    from scipy import stats

    return normal_scale(float(stats.t.cdf(t, df)), float(stats.t.sf(t, df)))


def fail_ses(parts: int) -> float:
    """How far (a z, :func:`judge`) one of a claim's ``parts`` parts must lie on the wrong
    side for the claim to fail: the level of :data:`CLAIM_SES` for one comparison
    (two-sided, 4.6% for z = 2) shared among the parts (Bonferroni), so that a claim of
    many parts is not refuted by one part's noise more often than a claim of one. 2.0
    for one part, 2.53 for four, 2.72 for seven. A claim *holds* only when every part
    holds at :data:`CLAIM_SES` (each part a test at that level: no sharing needed)."""
    from statistics import NormalDist

    if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1:
        raise ValueError(f"parts must be an int >= 1, got {parts!r}")
    tail = 1 - NormalDist().cdf(CLAIM_SES)  # one side of one comparison
    return NormalDist().inv_cdf(1 - tail / parts)


# how the notes name the failing threshold of a claim's parts (fail_ses)
FAMILY_TEXT = (f"the level of z = {CLAIM_SES:g} shared among the claim's k parts "
               "(Bonferroni: " + ", ".join(f"z = {fail_ses(k):.2f} for k = {k}"
                                           for k in (2, 4, 5, 7)) + ")")
# how the notes say what a part's z is
Z_TEXT = ("a part's z is its test statistic on the normal scale, through its exact "
          "distribution for normal seeds: a difference of means over its standard error is "
          "Welch's t, a ratio of spreads squared is F; with a few seeds a larger t or F is "
          "needed for the same z")


def family(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A claim's ``parts`` (each with ``diff``, ``se`` and ``verdict``) judged together:
    a part with a standard error fails only beyond :func:`fail_ses` of the number of
    parts judged by standard errors (``fail_ses`` on each part); parts judged by sign,
    unjudged or :data:`UNDETERMINED` keep their verdicts."""
    judged = [p for p in parts if p.get("se") and p.get("diff") is not None
              and p.get("verdict") not in (None, UNDETERMINED)]
    if not judged:
        return parts
    limit = fail_ses(len(judged))
    return [{**p, "fail_ses": limit, "verdict": judge(p["diff"], p["se"], limit, p.get("z"))}
            if any(p is q for q in judged) else p for p in parts]


def combine(verdicts: list[str | None]) -> str | None:
    """A claim made of several parts: ``fails`` when one fails, else
    :data:`UNDETERMINED` when one is, ``holds`` when all hold, else ``tie``; None when a
    part could not be judged (or there is none)."""
    if not verdicts or None in verdicts:
        return None
    if "fails" in verdicts:
        return "fails"
    if UNDETERMINED in verdicts:
        return UNDETERMINED
    return "holds" if set(verdicts) == {"holds"} else "tie"


def mean_part(better: dict[str, Any], worse: dict[str, Any], what: str) -> dict[str, Any]:
    """A part of a claim: ``better``'s mean above ``worse``'s (:func:`seed_stats`), the
    difference, its standard error ``sqrt(sd_1^2 / n_1 + sd_2^2 / n_2)``, Welch's t
    (``diff / se``) with its degrees of freedom (:func:`welch_df`), its z on the normal
    scale (:func:`t_scale`: a few seeds need a larger t for the same level) and the
    verdict (:func:`judge`; None without two seeds on each side)."""
    if better["sd"] is None or worse["sd"] is None:
        return {"part": what, "diff": None, "se": None, "z": None, "verdict": None}
    diff = better["mean"] - worse["mean"]
    se = (better["sd"] ** 2 / better["n"] + worse["sd"] ** 2 / worse["n"]) ** 0.5
    if not se:
        return {"part": what, "diff": diff, "se": se, "z": None, "verdict": judge(diff, se)}
    df = welch_df(better, worse)
    z = t_scale(diff / se, df)
    return {"part": what, "diff": diff, "se": se, "t": diff / se, "df": df, "z": z,
            "verdict": judge(diff, se, z=z)}


def spread_part(narrower: dict[str, Any], wider: dict[str, Any], what: str) -> dict[str, Any]:
    """A part of a claim: ``narrower``'s spread over seeds no wider than ``wider``'s, on
    the log of the ratio of their standard deviations, ``ln(sd_wider / sd_narrower)``, whose
    standard error for normal seeds is ``sqrt(1 / (2 (n_1 - 1)) + 1 / (2 (n_2 - 1)))``
    (a standard deviation of 0 on one side: by the sign alone)."""
    import math

    a, b = narrower["sd"], wider["sd"]
    if a is None or b is None:
        return {"part": what, "diff": None, "se": None, "z": None, "verdict": None}
    if a == 0 or b == 0:
        return {"part": what, "diff": None, "se": 0.0, "z": None,
                "verdict": judge(b - a, 0.0)}
    from scipy import stats

    diff = math.log(b / a)
    se = (1 / (2 * (narrower["n"] - 1)) + 1 / (2 * (wider["n"] - 1))) ** 0.5
    # exact for normal seeds: (sd_wider / sd_narrower)^2 is F(n_w - 1, n_n - 1) when the
    # spreads are equal
    ratio, dfs = (b / a) ** 2, (wider["n"] - 1, narrower["n"] - 1)
    z = normal_scale(float(stats.f.cdf(ratio, *dfs)), float(stats.f.sf(ratio, *dfs)))
    return {"part": what, "diff": diff, "se": se, "df": dfs, "z": z,
            "verdict": judge(diff, se, z=z)}


def claim1_parts(stats: dict[tuple[str, bool], dict[str, Any]]) -> list[dict[str, Any]]:
    """Claim 1 (frozen as good as learned, and no wider over seeds) in parts, for S4D-Inv
    and S4D-Lin: ``stats[(init, frozen)]`` the :func:`seed_stats` of a cell; [] where a
    cell is missing."""
    if not all((i, f) in stats for i in paper2.LRA_MAIN_INITS for f in (False, True)):
        return []
    out = []
    for i in paper2.LRA_MAIN_INITS:
        frozen, learned = stats[(i, True)], stats[(i, False)]
        out.append({"init": i, **mean_part(frozen, learned, "accuracy")})
        out.append({"init": i, **spread_part(frozen, learned, "spread")})
    return family(out)


def claim2_parts(stats: dict[tuple[str, bool], dict[str, Any]]) -> list[dict[str, Any]]:
    """Claim 2 (the unstructured spectra worse than S4D-Inv, learned and frozen, and by
    more when frozen) in parts: S4D-Inv's mean above each unstructured spectrum's in each
    mode, and the gap to the best unstructured one (the highest mean) larger frozen than
    learned; [] where a cell is missing."""
    if not all((i, f) in stats for i in UNSTRUCTURED + ("inv",) for f in (False, True)):
        return []
    out = [{"init": i, "frozen": f, **mean_part(stats[("inv", f)], stats[(i, f)], "accuracy")}
           for f in (False, True) for i in UNSTRUCTURED]
    if any(p["diff"] is None for p in out):
        return out + [{"init": None, "frozen": None, "part": "gap larger frozen",
                       "diff": None, "se": None, "z": None, "verdict": None}]
    # per mode, the unstructured spectrum closest to S4D-Inv (the smallest gap)
    gap = {f: min((p for p in out if p["frozen"] == f), key=lambda p: p["diff"])
           for f in (False, True)}
    diff = gap[True]["diff"] - gap[False]["diff"]
    se = (gap[True]["se"] ** 2 + gap[False]["se"] ** 2) ** 0.5
    # the fewer degrees of freedom of the two gaps: the cautious reading of a sum of two
    # Welch differences
    dfs = [g["df"] for g in gap.values() if g.get("df")]
    z = (t_scale(diff / se, min(dfs)) if se and dfs else diff / se if se else None)
    more = {"diff": diff, "se": se, "z": z, "verdict": judge(diff, se, z=z)}
    return family(out + [{"init": f"{gap[False]['init']} / {gap[True]['init']}", "frozen": None,
                          "part": "gap larger frozen", **more}])


CLAIM3_INITS = paper2.LRA_MAIN_INITS + UNSTRUCTURED  # claim 3's parts, in this order
# per claim (1 to 4), its number of parts on a task with every run (claim1_parts ..
# claim4_parts): 2 per main spectrum; 1 per unstructured spectrum and mode plus the gap;
# 1 per spectrum; 1 per main spectrum
CLAIM_PARTS = {1: 2 * len(paper2.LRA_MAIN_INITS), 2: 2 * len(UNSTRUCTURED) + 1,
               3: len(CLAIM3_INITS), 4: len(paper2.LRA_MAIN_INITS)}


def claim3_parts(growth: dict[str, list[float]]) -> list[dict[str, Any]]:
    """Claim 3 (training does not extend memory) in parts, one per spectrum of
    :data:`CLAIM3_INITS` that has learned runs: ``growth[init]`` the runs' growth of the
    summed supremum memory function (:func:`mf_growth_ratios`), their mean ``growth``
    below :data:`MF_GROWTH_LIMIT` by the claim rule (:func:`mean_part`, the limit a cell
    with no spread: ``holds`` beyond two standard errors below it, ``fails`` beyond them
    above it)."""
    limit = {"n": 1, "mean": MF_GROWTH_LIMIT, "sd": 0.0}
    out = []
    for i in CLAIM3_INITS:
        if growth.get(i):
            stats = seed_stats(growth[i])
            out.append({"init": i, "growth": stats["mean"], "runs": stats["n"],
                        **mean_part(limit, stats, "memory growth")})
    return family(out)


def claim3_paper_parts(learned: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Claim 3 as the paper's evidence states it: each unstructured spectrum's memory after
    training (the summed supremum memory function, :func:`mf_sums`, of its learned runs in
    ``learned[init]``) below S4D-Inv's at initialisation (the mean over S4D-Inv's learned
    runs before training; its spectrum is the same at every seed), by the claim rule
    (:func:`mean_part`, S4D-Inv's value a cell without spread), one part per spectrum of
    :data:`UNSTRUCTURED` with learned runs: ``after`` its runs' mean, ``before`` their mean
    at initialisation (where the spectrum started), ``inv_init`` the bound. [] without
    S4D-Inv's runs."""
    inv = mf_sums(learned.get("inv", []), "before")
    if not inv:
        return []
    bound = sum(inv) / len(inv)
    out = []
    for i in UNSTRUCTURED:
        after = mf_sums(learned.get(i, []), "after")
        if after:
            stats = seed_stats(after)
            before = mf_sums(learned[i], "before")
            out.append({"init": i, "after": stats["mean"],
                        "before": sum(before) / len(before), "inv_init": bound,
                        "runs": stats["n"],
                        **mean_part({"n": 1, "mean": bound, "sd": 0.0}, stats,
                                    "memory below S4D-Inv's at initialisation")})
    return family(out)


def claim3_windows(T: int) -> tuple[int, ...]:
    """The shorter windows :func:`claim3_window_check` sums claim 3's memory over, for a
    stored window of ``T`` delays: its first quarter, its first half and all but its last
    twentieth (where the window's edge shows in the supremum memory figure), at least one
    delay and shorter than the window, each once (none for a window of one delay)."""
    cuts = (max(1, T // 4), max(1, T // 2), T - max(1, T // 20))
    return tuple(dict.fromkeys(k for k in cuts if 1 <= k < T))


def claim3_window_table(P: Profile, root=None) -> Table:
    """Whether claim 3's verdicts depend on the memory window's edge: claim 3 of
    :func:`lra_claims` again with the memory summed over each shorter window of
    :func:`claim3_windows` (``P.lra_mf_T`` delays stored), beside the whole window. One row
    per task judged and spectrum: its mean growth and verdict per window. ``data``: per
    row ``task``, ``init`` and ``windows``, a list of ``{"delays", "growth", "verdict"}``
    (the whole window first, ``delays`` None; growth and verdict None where the part is
    missing over a window)."""
    def parts(delays: int | None) -> dict[tuple[str, str], dict[str, Any]]:
        return {(d["task"], p["init"]): p for d in lra_claims(P, root, delays).data
                if d["memory_not_extended"] is not None for p in d["memory_parts"]}

    windows = (None,) + claim3_windows(P.lra_mf_T)
    judged = [parts(k) for k in windows]
    cols = ["task", "spectrum"] + [f"first {k} delays" if k else f"all {P.lra_mf_T} delays"
                                   for k in windows]
    rows, data = [], []
    for key in judged[0]:
        cells = [{"delays": k, "growth": (j.get(key) or {}).get("growth"),
                  "verdict": (j.get(key) or {}).get("verdict")}
                 for k, j in zip(windows, judged)]
        rows.append([key[0], INIT_NAMES[key[1]]]
                    + ["—" if c["growth"] is None else f"×{c['growth']:.3f} {c['verdict']}"
                       for c in cells])
        data.append({"task": key[0], "init": key[1], "windows": cells})
    return Table("Claim 3 over shorter memory windows", cols, rows,
                 "Mean growth of the summed supremum memory function over the learned "
                 "runs, and claim 3's verdict, with the memory summed over the first delays "
                 "only.", [], data)


def claim3_window_check(table: Table, windows: Sequence[int]) -> dict[str, Any]:
    """:func:`claim3_window_table`'s rows summed up: ``windows``, the shorter windows'
    delay counts (:func:`claim3_windows`, the table's columns after the whole window);
    ``parts``: the (task, spectrum) parts times those windows; ``changed``:
    how many get another verdict over the shorter window than over the whole one (a part
    missing there counts as changed); ``growth``: per spectrum, the smallest and largest
    mean growth over the tasks and windows, the whole one included."""
    windows = list(windows)
    changed, growth = 0, {}
    for d in table.data:
        whole, *cut = d["windows"]
        changed += sum(c["verdict"] is None or c["verdict"] != whole["verdict"] for c in cut)
        growth.setdefault(d["init"], []).extend(
            c["growth"] for c in d["windows"] if c["growth"] is not None)
    return {"windows": windows, "parts": len(table.data) * len(windows), "changed": changed,
            "growth": {i: (min(g), max(g)) for i, g in growth.items()}}


def claim4_parts(curves: dict[tuple[str, bool], list[dict]]) -> list[dict[str, Any]]:
    """Claim 4 (frozen models converge faster) in parts, for S4D-Inv and S4D-Lin:
    ``curves[(init, frozen)]`` the curves of a cell's runs; per spectrum the epochs to
    converge (:func:`epochs_to_converge`) over seeds, the learned mean above the frozen one
    by the claim rule (:func:`mean_part`; ``learned`` and ``frozen``: the means). A part
    whose runs did not all converge before training ended (:func:`converged`) is
    :data:`UNDETERMINED` (``not_converged`` of ``runs``): the epoch of a run still falling
    at the end is not known, and leaving it out would keep the fast runs only. [] where a
    cell is missing."""
    if not all(curves.get((i, f)) for i in paper2.LRA_MAIN_INITS for f in (False, True)):
        return []
    out = []
    for i in paper2.LRA_MAIN_INITS:
        runs = curves[(i, False)] + curves[(i, True)]
        done = [converged(c) for c in runs]
        part = {"init": i, "part": "epochs", "runs": len(runs),
                "not_converged": sum(d is False for d in done), "learned": None, "frozen": None}
        if None in done:  # a run without a test loss: nothing to judge
            out.append({**part, "diff": None, "se": None, "z": None, "verdict": None})
        elif not all(done):
            out.append({**part, "diff": None, "se": None, "z": None, "verdict": UNDETERMINED})
        else:
            learned, frozen = ([epochs_to_converge(c) for c in curves[(i, f)]]
                               for f in (False, True))
            ls, fs = seed_stats(learned), seed_stats(frozen)
            out.append({**part, "learned": ls["mean"], "frozen": fs["mean"],
                        **mean_part(ls, fs, "epochs")})
    return family(out)


def _z(p: dict[str, Any]) -> str:
    """A part's z (its test statistic on the normal scale), or its verdict where it has
    none."""
    if p["z"] is None:
        return "—" if p["verdict"] is None else p["verdict"]
    return f"z {p['z']:+.1f}"


def _claim3_text(parts: list[dict[str, Any]]) -> str:
    """Claim 3's parts as its cell shows them: each spectrum's mean memory growth and
    verdict."""
    return "; ".join(f"{INIT_NAMES[p['init']]} ×{p['growth']:.2f} {p['verdict'] or '—'}"
                     for p in parts)


def _claim4_text(parts: list[dict[str, Any]]) -> str:
    """Claim 4's parts as its cell shows them: per spectrum the mean epochs to converge,
    frozen vs learned, and its z, or how many runs had not converged."""
    def one(p: dict[str, Any]) -> str:
        if p["verdict"] == UNDETERMINED:
            return (f"{INIT_NAMES[p['init']]}: {p['not_converged']} of {p['runs']} runs "
                    "not converged")
        if p["learned"] is None:
            return f"{INIT_NAMES[p['init']]} —"
        return (f"{INIT_NAMES[p['init']]} {p['frozen']:.1f} vs {p['learned']:.1f} epochs, "
                f"{_z(p)}")
    return "; ".join(one(p) for p in parts)


def _parts_text(parts: list[dict[str, Any]], names: dict[str, str] = INIT_NAMES) -> str:
    """A claim's parts as its cell shows them: each part's z, the spectra named by
    ``names`` (the paper's own rows: without our marks)."""
    return "; ".join(f"{names.get(p['init'], p['init'] or 'unstructured')}"
                     + ("" if p.get("frozen") is None else f" {_mode(p['frozen'])}")
                     + f" {p['part']} {_z(p)}" for p in parts)


def paper_claims(P: Profile | None = None, root=None) -> Table:
    """The claim rule (:func:`judge`, :func:`combine`) on the paper's own numbers: claim 1
    on every row of its main table, claim 2 on every task of its ablation, each cell's
    mean and standard deviation from its max / min over the paper's seeds
    (:func:`range_stats`); ``cited``: the paper draws the claim from this task
    (``paper_values.LRA_CLAIM_TASKS``). ``P`` and ``root`` are not read (the paper's
    numbers are the same under every profile)."""
    cols = ["task", "claim 1: frozen ≥ learned, no wider (parts as z)", "claim 1",
            "claim 2: unstructured worse, most when frozen (parts as z)", "claim 2"]
    rows, data = [], []
    for task in paper_values.LRA_TASK_NAMES:
        main = {(i, f): range_stats(*paper_values.LRA_MAIN[(task, i, f)])
                for i in paper2.LRA_MAIN_INITS for f in (False, True)}
        abl = {(i, f): range_stats(*v) for (t, i, f), v in paper_values.LRA_ABLATION.items()
               if t == task}
        p1, p2 = claim1_parts(main), claim2_parts(abl)
        c1, c2 = combine([p["verdict"] for p in p1]), combine([p["verdict"] for p in p2])
        cited = {k: task in v for k, v in paper_values.LRA_CLAIM_TASKS.items()}
        rows.append([task, _parts_text(p1, PAPER_INIT_NAMES), (c1 or "—") + (
            " (cited)" if cited.get("frozen_as_good") else ""),
                     _parts_text(p2, PAPER_INIT_NAMES) or "not in the ablation",
                     (c2 or "—") + (" (cited)" if cited.get("unstructured_worse") else "")])
        data.append({"task": task, "frozen_as_good": c1, "frozen_parts": p1,
                     "unstructured_worse": c2, "unstructured_parts": p2, "cited": cited})
    note = ("The claim rule on the paper's own numbers. A part of a claim holds when its z "
            f"lies beyond {CLAIM_SES:g} on the claimed side, fails beyond {FAMILY_TEXT} on "
            f"the other, and is a tie within ({Z_TEXT}); a claim holds when all its parts "
            "hold and fails when one fails. The paper gives "
            f"max / min over {paper_values.LRA_SEEDS} seeds: a cell's mean is taken as the "
            f"midrange and its standard deviation as range / d_2 = range / "
            f"{RANGE_TO_SD[paper_values.LRA_SEEDS]} (the expected range of "
            f"{paper_values.LRA_SEEDS} normal draws). Accuracy parts: difference of means, "
            "standard error sqrt(sd_1^2/n_1 + sd_2^2/n_2), Welch's degrees of freedom. Spread "
            "parts: the squared ratio of standard deviations (learned over frozen), "
            "F(n_1 - 1, n_2 - 1). Claim 2's "
            "last part: the gap of S4D-Inv to the best unstructured spectrum (learned / "
            "frozen) larger frozen. (cited): the paper draws the claim from this task "
            "(reference 12.3).")
    return Table("The claim rule on the paper's own numbers", cols, rows, note, [], data)


# the paper's four claims on LRA, in its order: the key of each in lra_claims' data, and
# what it says
LRA_CLAIMS = {"frozen_as_good": "frozen ≥ learned", "unstructured_worse": "unstructured worse",
              "memory_not_extended": "memory not extended",
              "frozen_converges_faster": "frozen converges faster"}


def claim_counts(data: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per claim of :data:`LRA_CLAIMS`, over the rows of :func:`lra_claims` (its ``data``):
    on how many tasks it holds, ties and fails (:data:`VERDICTS`) or is
    :data:`UNDETERMINED`, and on how many it could be ``judged``. A claim is judged on a
    task of the grid that is learned and has every run the claim compares; a probe-only
    task judges none."""
    rows = [d for d in data if not d["probe"]]
    return {k: {**{v: sum(d[k] == v for d in rows) for v in VERDICTS + (UNDETERMINED,)},
                "judged": sum(d[k] is not None for d in rows)} for k in LRA_CLAIMS}


# each claim of LRA_CLAIMS: the key of its parts in the rows of lra_claims
CLAIM_PARTS_KEY = {"frozen_as_good": "frozen_parts", "unstructured_worse": "unstructured_parts",
                   "memory_not_extended": "memory_parts",
                   "frozen_converges_faster": "convergence_parts"}


def failing_spectra(data: list[dict[str, Any]], key: str) -> list[str]:
    """The spectra (by name, :data:`INIT_NAMES`; a part over two of them as written, e.g.
    "step / real") whose part of claim ``key`` fails on some task judged in the rows of
    :func:`lra_claims` (its ``data``; probe-only tasks judge none), in the order of first
    failure, each once."""
    if key not in CLAIM_PARTS_KEY:
        raise ValueError(f"unknown claim {key!r}; allowed: {', '.join(CLAIM_PARTS_KEY)}")
    out: list[str] = []
    for d in data:
        if d["probe"] or d[key] is None:
            continue
        for p in d[CLAIM_PARTS_KEY[key]]:
            name = INIT_NAMES.get(p["init"], p["init"])
            if p["verdict"] == "fails" and name not in out:
                out.append(name)
    return out


def claim_counts_table(counts: dict[str, dict[str, int]]) -> Table:
    """:func:`claim_counts` as a table: per claim of :data:`LRA_CLAIMS`, the tasks on which
    it holds, ties, fails and is undetermined, and how many could be judged."""
    cols = ["claim", "holds", "ties", "fails", "undetermined", "tasks judged"]
    rows = [[f"{i}: {LRA_CLAIMS[k]}", c["holds"], c["tie"], c["fails"], c[UNDETERMINED],
             c["judged"]]
            for i, (k, c) in enumerate(counts.items(), 1)]
    data = [{"claim": k, **c} for k, c in counts.items()]
    return Table("The paper's claims over the tasks", cols, rows, "", [], data)


# the published scale of the LRA experiments, beside a profile's: the LRA benchmark's sizes
# (Tay et al. 2021) and the paper's S4D models (the ListOps size: H = 128, N = 64, 8
# layers), as this chapter has quoted them; the paper does not give its epochs here
PAPER_SCALE = {"training examples": "96,000 to 160,000",
               "sequence length": "up to 2,000 (ListOps); 1,024 (CIFAR, Pathfinder: 32 x 32)",
               "layers": "6 to 8", "width H": "128 to 512", "state size N": "64",
               "normalisation": "—", "decoder": "—", "epochs": "—",
               "seeds per cell": str(paper_values.LRA_SEEDS)}

# How a block's normalisation and the decoder read in the scale table.
DECODER_NAMES = {"pool": "mean-pool", "last": "last position", "retrieval": "retrieval"}


def scale_table(P: Profile, root=None) -> Table:
    """The scale of profile ``P``'s LRA runs, one column per task (those of the tables,
    then the probe-only ones), beside the paper's (:data:`PAPER_SCALE`): the training
    examples and sequence length the stored runs had (their records' ``task``; the
    profile's ask, marked so, where none is stored; a data probe's in brackets), the model
    size, block normalisation (before or after the S4D layer, and which norm), decoder and
    epochs of the task's runs (its configs: ``LRAConfig`` with the task's
    ``paper2.LRA_TASK_SETTINGS``), and the seeds per cell of each table that runs it.
    ``data``: one entry per task with the numbers."""
    tasks = list(dict.fromkeys(P.lra_tasks + P.lra_probe_tasks))
    probe, own = paper2.lra_probe_grid(P), paper2.lra_pathfinder_grid(P)
    # a probe task whose main grid (and ablation) at its own size is stored: stored_tasks
    main = P.lra_tasks + stored_tasks(own, root)
    ablation = P.lra_tasks + stored_tasks(paper2.lra_pathfinder_ablation_grid(P), root)
    data, cols = [], [""] + [t + ("" if t in P.lra_tasks else OWN_SIZE if t in main
                                  else " [probe]") for t in tasks] + ["paper"]
    for task in tasks:
        grid = [c for c in (paper2.lra_main_grid(P) if task in P.lra_tasks else
                            own if task in main else probe) if c.task == task]
        recs = stored_records(grid, root)
        sizes = [r["metrics"]["task"] for r in recs if (r["metrics"].get("task") or {})
                 .get("n_train")]
        more = [r["metrics"]["task"]["n_train"] for r in stored_records(
            [c for c in paper2.lra_data_probe_grid(P) if c.task == task], root)
            if (r["metrics"].get("task") or {}).get("n_train")]
        seeds = {"main": len({c.seed for c in grid}) if task in main else None,
                 "ablation": len(P.lra_ablation_seeds) if task in ablation else None,
                 "probe": None if task in main else len({c.seed for c in grid})}
        data.append({"task": task, "stored": bool(sizes), "asked": grid[0].n_train,
                     "n_train": _median([t["n_train"] for t in sizes]),
                     "length": _median([t["length"] for t in sizes if t.get("length")]),
                     "data_probe_n_train": _median(more), "H": grid[0].H, "N": grid[0].N,
                     "layers": grid[0].n_layers, "epochs": grid[0].epochs, "seeds": seeds,
                     "prenorm": grid[0].prenorm, "norm": grid[0].norm,
                     "decoder": grid[0].decoder})

    def examples(d: dict[str, Any]) -> str:
        text = (f"{d['n_train']:,.0f}" if d["stored"] else f"{d['asked']:,} (asked)")
        return text + ("" if d["data_probe_n_train"] is None else
                       f" (data probe: {d['data_probe_n_train']:,.0f})")

    def length(d: dict[str, Any]) -> str:
        if d["length"] is None:
            return "—"
        if d["task"].endswith("listops"):
            return f"up to {d['length']:,.0f}"
        side = round(d["length"] ** 0.5)
        return f"{d['length']:,.0f}" + (f" ({side} x {side})" if side * side == d["length"]
                                        else "")

    def seeds(d: dict[str, Any]) -> str:
        s = d["seeds"]
        if s["probe"] is not None:
            return f"{s['probe']} (learned S4D-Inv only)"
        return (f"{s['main']} (main table)"
                + ("" if s["ablation"] is None else f", {s['ablation']} (ablation)")
                + ("" if d["data_probe_n_train"] is None else ", 1 (data probe)"))

    rows = [["training examples"] + [examples(d) for d in data],
            ["sequence length"] + [length(d) for d in data],
            ["layers"] + [str(d["layers"]) for d in data],
            ["width H"] + [str(d["H"]) for d in data],
            ["state size N"] + [str(d["N"]) for d in data],
            ["normalisation"] + [f"{'pre' if d['prenorm'] else 'post'}-norm, {d['norm']} norm"
                                 for d in data],
            ["decoder"] + [DECODER_NAMES.get(d["decoder"], d["decoder"]) for d in data],
            ["epochs"] + [str(d["epochs"]) for d in data],
            ["seeds per cell"] + [seeds(d) for d in data]]
    rows = [r + [PAPER_SCALE[r[0]]] for r in rows]
    return Table("This book's scale against the paper's", cols, rows, "", [], data)


def lra_claims(P: Profile, root=None, delays: int | None = None) -> Table:
    """Per task: chance (the test set's most frequent class), the margin the learned
    S4D-Inv model reaches over it, and whether each of the paper's claims holds here:

    1. frozen S4D-Inv / S4D-Lin at least as good as learned (mean over seeds) and with no
       wider spread (standard deviation over seeds): :func:`claim1_parts`;
    2. the unstructured spectra (random, real axis, step) worse than S4D-Inv, learned and
       frozen, and by more when frozen: :func:`claim2_parts`;

    3. training does not extend memory: per spectrum, the mean over its learned runs of
       the summed supremum memory function after / before training below
       :data:`MF_GROWTH_LIMIT`: :func:`claim3_parts`;
    4. frozen models converge faster: per S4D-Inv and S4D-Lin, the mean epoch at which
       the test loss comes within :data:`LOSS_NEAR_MIN` of its minimum earlier frozen than
       learned, :data:`UNDETERMINED` where runs had not converged: :func:`claim4_parts`;

    every claim judged by one rule against the noise of seeds (:func:`judge`,
    :func:`combine`: ``holds``, ``tie`` or ``fails``), its parts in ``frozen_parts``,
    ``unstructured_parts``, ``memory_parts`` and ``convergence_parts``. ``delays``: claim 3
    over the first ``delays`` delays of the memory window only (None: the whole window;
    :func:`claim3_windows`).
    """
    # a probe of a task of the main table (on fewer examples than the task's own) is no
    # run of its cells: it shows in lra_fit
    extra = paper2.lra_pathfinder_grid(P)
    # a probe task is judged once the main table's grid on it is stored, and its
    # unstructured spectra join once the ablation's grid on it is
    judged = stored_tasks(extra, root)
    own_ablation = paper2.lra_pathfinder_ablation_grid(P)
    ablation = [c for c in own_ablation if c.task in stored_tasks(own_ablation, root)]
    cfgs = list(dict.fromkeys(paper2.lra_main_grid(P) + paper2.lra_ablation_grid(P)
                              + [c for c in paper2.lra_probe_grid(P)
                                 if c.task not in P.lra_tasks] + extra + ablation))
    ok, ids, _ = group_records(cfgs, lambda c: (c.task, c.init, c.freeze_spectrum), root)
    cols = ["task (stands for)", "chance", "learned S4D-Inv (best)", "margin",
            "with more data (data probe)", "1: frozen ≥ learned, no wider", "2: unstructured worse, most when frozen",
            "3: memory not extended", "4: frozen converges faster"]
    rows, data = [], []
    for task in P.lra_tasks + tuple(t for t in P.lra_probe_tasks if t not in P.lra_tasks):
        probe = task not in P.lra_tasks and task not in judged
        recs = {k: [rec for _, rec in v] for k, v in ok.items() if k[0] == task}
        acc = {k[1:]: [r["metrics"]["test_accuracy"] for r in v] for k, v in recs.items()}
        every = [r for v in recs.values() for r in v]
        chance, band = _chance(every)
        best_inv = max(acc.get(("inv", False), []), default=None)
        margin = None if best_inv is None or chance is None else best_inv - chance
        learned = None if band is None or best_inv is None else best_inv > band
        more = _data_probe(stored_records([c for c in paper2.lra_data_probe_grid(P)
                                           if c.task == task], root))
        stats = {k: seed_stats(v) for k, v in acc.items() if v}
        p1, p2 = claim1_parts(stats), claim2_parts(stats)
        c1, c2 = combine([p["verdict"] for p in p1]), combine([p["verdict"] for p in p2])
        p3 = claim3_parts({i: mf_growth_ratios(recs.get((task, i, False), []), delays)
                           for i in CLAIM3_INITS})
        p4 = claim4_parts({(i, f): [r["metrics"]["curves"] for r in recs.get((task, i, f), [])]
                           for i in paper2.LRA_MAIN_INITS for f in (False, True)})
        c3, c4 = combine([p["verdict"] for p in p3]), combine([p["verdict"] for p in p4])
        # claim 3 as the paper's evidence reads (shown beside ours, not in the table)
        p3p = claim3_paper_parts({i: recs.get((task, i, False), [])
                                  for i in ("inv",) + UNSTRUCTURED})
        c3p = combine([p["verdict"] for p in p3p])
        published = paper_values.LRA_COUNTERPART.get(task)
        verdicts = [(c1 or "—") + (f" ({_parts_text(p1)})" if p1 else ""),
                    (c2 or "—") + (f" ({_parts_text(p2)})" if p2 else ""),
                    (c3 or "—") + (f" ({_claim3_text(p3)})" if p3 else ""),
                    (c4 or "—") + (f" ({_claim4_text(p4)})" if p4 else "")]
        if learned is False:  # a claim about a task nothing learns says nothing
            c1 = c2 = c3 = c4 = c3p = None
            verdicts = ["not judged: S4D-Inv at chance"] * 4
        if probe:
            c1 = c2 = c3 = c4 = c3p = None
            verdicts = ["probe only (learned S4D-Inv)"] * 4
        rows.append([f"{task} ({published or '—'})" + (" [probe]" if probe else OWN_SIZE
                                                         if task not in P.lra_tasks else ""),
                     "—" if chance is None else f"{chance:.3f}",
                     "—" if best_inv is None else f"{best_inv:.3f}",
                     "—" if margin is None else f"{margin:+.3f}" + ("" if learned else
                                                                    " (at chance)"),
                     "—" if more is None else
                     f"{more['best']:.3f} with {more['n_train']:,} examples (chance "
                     f"{more['chance']:.3f}" + ("" if more["above_chance"] else ", at chance")
                     + ")"]
                    + verdicts)
        data.append({"task": task, "stands_for": published, "chance": chance,
                     "learned_inv_best": best_inv, "margin": margin, "chance_band": band,
                     "above_chance": learned, "probe": probe,
                     "memory_below_inv": c3p, "memory_below_inv_parts": p3p,
                     "frozen_as_good": c1, "frozen_parts": p1,
                     "unstructured_worse": c2, "unstructured_parts": p2,
                     "memory_not_extended": c3, "memory_parts": p3,
                     "frozen_converges_faster": c4, "convergence_parts": p4,
                     "data_probe": more})
    note = ("Chance: the accuracy of answering the test set's most frequent class; a task "
            f"counts as learned when the best learned S4D-Inv run is above chance + "
            f"{CHANCE_SIGMAS:g} binomial standard deviations of the test set, and the claims "
            "are judged only on learned tasks. "
            + (f"[probe]: a task of which only learned S4D-Inv runs (seeds {P.lra_seeds[:2]}) "
               "are made, to see whether it is learned at this scale at all; its full grid "
               "would not fit the profile's budget. "
               if any(d["probe"] for d in data) else "")
            + (OWN_SIZE_TEXT if any(t not in P.lra_tasks for t in judged) else "")
            + "With more data: "
            f"learned S4D-Inv on {P.lra_data_probe_factor} times the training examples (seed "
            f"{P.lra_seeds[0]}, the data probe), where the profile has one for the task; the "
            "claims are judged on the main runs only. Claims as "
            "in the paper, tested on the runs of the main table and the ablation: (1) "
            "mean frozen ≥ mean learned for S4D-Inv and S4D-Lin, with a spread over seeds "
            "(standard deviation) no wider; (2) S4D-Inv's mean above the random, real-axis "
            "and step spectra's, learned and frozen, and its gap to the closest of them "
            "larger frozen. Claims 1 and 2 allow for the noise of seeds: a part holds when "
            f"its z lies beyond {CLAIM_SES:g} on the claimed side (in brackets, each part's "
            f"z; {Z_TEXT}), fails "
            f"beyond {FAMILY_TEXT} on the other side and is a tie within (`sst report "
            "paper_claims`: the same rule on the paper's own rows); a claim holds when all "
            "its parts hold and fails when one fails. (3) per spectrum, the mean growth of "
            "the summed supremum memory function over its learned runs below "
            f"×{MF_GROWTH_LIMIT:g} (the limit judged the same way, as a cell without spread); "
            f"(4) per S4D-Inv and S4D-Lin, the mean epoch at which the test loss is within "
            f"{LOSS_NEAR_MIN:.0%} of its minimum earlier frozen than learned, judged the same "
            f"way; undetermined where a run got there less than {LATE_EPOCHS} epochs before "
            "its last (still falling when training ended). '—': runs missing. "
            f"Scale: {P.scale(*LRA_SCALE_KNOBS, 'lra_seeds')}.")
    return Table("The paper's claims at this scale", cols, rows, note, ids, data)


# -- the memory-horizon task (delayed recall at lag tau) ----------------------------------

MF_ZERO = 0.01  # "MF(tau) ~ 0": below 1% of the target's variance recoverable (see below)
# "MF(tau) clearly present": at least half the variance, i.e. a linear readout's signal at
# lag tau at least as strong as its error (signal-to-noise 1). Chosen after a first quick
# probe, in which cells with MF(tau) of 0.1-0.25 stayed near chance within the step budget;
# it is the same for every cell, and the chapter says so.
MF_LIVE = 0.5
CHANCE_SIGMAS = 3.0  # "at chance": within 3 binomial standard deviations above 1 / alphabet


def chance_band(alphabet: int, n_test: int) -> float:
    """The highest test accuracy still "at chance": ``p + 3 sqrt(p (1 - p) / n_test)``
    with ``p = 1 / alphabet`` (a predictor that does not see the target scores above it
    with probability about 0.1%)."""
    return at_chance(1.0 / alphabet, n_test)


def binomial_sd(p: float, n_test: float) -> float:
    """The standard deviation of the test accuracy of a predictor of accuracy ``p`` on
    ``n_test`` examples: ``sqrt(p (1 - p) / n_test)``."""
    return (p * (1 - p) / n_test) ** 0.5


def at_chance(p: float, n_test: int) -> float:
    """The highest test accuracy a predictor of accuracy ``p`` reaches by luck on ``n_test``
    examples: ``p + CHANCE_SIGMAS`` :func:`binomial_sd`."""
    return p + CHANCE_SIGMAS * binomial_sd(p, n_test)


def _horizon_claims(cells: list[dict], band: float) -> list[dict]:
    """The claims of :func:`memory_horizon`, each checked on the cells it is about."""
    done = [c for c in cells if c["status"] == "ok"]
    dead = [c for c in done if not c["frozen"] and c["mf_before"] < MF_ZERO]
    live = [c for c in done if c["mf_before"] >= MF_LIVE]
    checks = (
        ("dead_memory_stays_at_chance",
         f"learned cells with MF(tau) < {MF_ZERO:g} at init: best accuracy <= {band:.3f}",
         dead, lambda c: c["acc_max"] <= band),
        ("dead_memory_is_not_learned",
         f"learned cells with MF(tau) < {MF_ZERO:g} at init: MF(tau) < {MF_ZERO:g} after",
         [c for c in dead if c["mf_after"] is not None], lambda c: c["mf_after"] < MF_ZERO),
        ("live_memory_is_used",
         f"cells with MF(tau) >= {MF_LIVE:g} at init: best accuracy > {band:.3f}",
         live, lambda c: c["acc_max"] > band),
        ("frozen_memory_unchanged", "every frozen run: MF(tau) after == before, exactly",
         [c for c in done if c["frozen"]], lambda c: c["mf_before_runs"] == c["mf_after_runs"]),
    )
    out = []
    for name, text, subset, passes in checks:
        failing = [[c["init"], c["frozen"], c["tau"]] for c in subset if not passes(c)]
        out.append({"kind": "claim", "claim": name, "text": text, "n_cells": len(subset),
                    "holds": (not failing) if subset else None, "failing": failing})
    return out


def memory_horizon(P: Profile, root=None) -> Table:
    """Delayed recall at lag tau (``memory_horizon`` records): can learning recover memory
    that the initial spectrum does not have?

    Rows: initialisation x learned / frozen; columns: the delays ``P.horizon_taus``, first
    the final test accuracy, max / min over the seeds ``P.horizon_seeds``, then the memory
    function at the task's delay before -> after training: per run the largest over layers
    of the supremum over channels of ``M[tau]`` (window ``L``, the sequence length), then
    the largest over seeds (``split(2, 2 + len(P.horizon_taus))``: a table of each).

    ``data`` holds one ``kind: "cell"`` entry per (init, frozen, tau) (numbers, None for a
    missing or failed cell, ``status`` ok / failed / missing) and one ``kind: "claim"`` entry
    per claim checked, ``holds`` True / False, or None when no cell qualifies:

    - *MF(tau) ~ 0* means ``mf_before < MF_ZERO = 0.01``: the best linear readout of any
      one channel's state recovers less than 1% of the variance of the token at delay tau
      (for every seed: the max over seeds is below the threshold);
    - *at chance* means a best accuracy (max over seeds) of at most ``chance_band``:
      ``1/alphabet + 3 sqrt(p (1 - p) / n_test)``;
    - ``dead_memory_stays_at_chance``: every learned cell with MF(tau) ~ 0 is at chance;
    - ``dead_memory_is_not_learned``: in those cells, MF(tau) after training is still < 0.01;
    - ``live_memory_is_used``: every cell with ``mf_before >= MF_LIVE = 0.5`` is above chance
      (the task is learnable where memory exists, so the first claim is not about a model
      that learns nothing);
    - ``frozen_memory_unchanged``: every frozen run's MF(tau) after equals before exactly.
    """
    cfgs = paper2.memory_horizon_grid(P)
    reasons: dict = {}
    ok, ids, status = group_records(cfgs, lambda c: (c.init, c.freeze_spectrum, c.tau), root,
                                    reasons)
    alphabet, n_test = cfgs[0].alphabet, cfgs[0].n_test
    chance, band = 1.0 / alphabet, chance_band(alphabet, n_test)
    cells, rows = [], []
    for init in paper2.HORIZON_INITS:
        for frozen in (False, True):
            acc_row, mf_row = [], []
            for tau in P.horizon_taus:
                key = (init, frozen, tau)
                runs = ok.get(key, [])
                accs = [rec["metrics"]["test_accuracy"] for _, rec in runs]
                before = [max(rec["metrics"]["mf_tau_before"]) for _, rec in runs]
                after = [max(rec["metrics"]["mf_tau_after"]) for _, rec in runs
                         if rec["metrics"]["mf_tau_after"] is not None]  # None: not computable
                st = status[key]
                state = "ok" if runs else ("failed" if st["failed"] else "missing")
                cell = {"kind": "cell", "init": init, "frozen": frozen, "tau": tau,
                        "status": state, "accuracies": accs,
                        "acc_max": max(accs) if accs else None,
                        "acc_min": min(accs) if accs else None,
                        "mf_before": max(before) if before else None,
                        "mf_after": max(after) if after else None,
                        "mf_before_runs": before, "mf_after_runs": after,
                        "at_chance": (max(accs) <= band) if accs else None,
                        "n_ok": st["ok"], "n_failed": st["failed"], "n_missing": st["missing"],
                        "failure_reasons": reasons.get(key, [])}
                cells.append(cell)
                if state != "ok":
                    acc_row.append(state)
                    mf_row.append(state)
                else:
                    after_text = ("not computable" if cell["mf_after"] is None
                                  else f"{cell['mf_after']:.2g}")
                    acc_row.append(_cell(accs) + runs_note(st))
                    mf_row.append(f"{cell['mf_before']:.2g} → {after_text}")
            rows.append([INIT_NAMES[init], _mode(frozen)] + acc_row + mf_row)
    failures = Counter(r for rs in reasons.values() for r in rs)
    claims = _horizon_claims(cells, band)
    # accuracy columns, then memory columns: split(2, 2 + len(taus)) gives a table of each
    cols = (["spectrum", "mode"] + [f"τ = {tau}" for tau in P.horizon_taus]
            + [f"M[{tau}]" for tau in P.horizon_taus])
    verdicts = "; ".join(f"{c['claim']}: {'n/a' if c['holds'] is None else c['holds']}"
                         for c in claims)
    note = (f"Delayed recall: name the token seen τ steps before the end of a sequence of "
            f"L = τ + {cfgs[0].margin + 1} tokens over {alphabet} symbols; chance is "
            f"{chance:.3f}, and 'at chance' means at most {band:.3f} (chance + "
            f"{CHANCE_SIGMAS:g} binomial sd over {n_test} test sequences). Accuracy: final "
            f"test accuracy, max / min over seeds {P.horizon_seeds} (columns τ = ...). M[τ] "
            f"(columns M[...], initialisation → trained): supremum over channels "
            f"of the memory function at delay τ (window L), largest over seeds; 'MF ~ 0' means "
            f"below {MF_ZERO:g}. Claims: {verdicts}. "
            + "".join(f"Failed ({n}): {reason}. " for reason, n in sorted(failures.items()))
            + "Scale: "
            f"{P.scale('horizon_N', 'horizon_H', 'horizon_steps', 'horizon_batch', 'horizon_n_test')}.")
    return Table("Memory horizon: delayed recall at lag τ, learned against frozen spectra",
                 cols, rows, note, ids, cells + claims)


def memory_horizon_noise(P: Profile, root=None) -> Table:
    """Does the memory read with noise say where delayed recall is learned?

    For every cell of :func:`memory_horizon` (init x learned / frozen x tau) the best
    accuracy over the seeds beside the memory at the task's delay at each *level*: the
    exact memory function (level 0: the horizon records' ``mf_tau_before``) and
    ``M_delta[tau]`` at each noise level of :data:`sst_core.experiments.paper2.MEMORY_NOISE`
    (``memory_noise`` records: the same initial spectra read with noise of variance
    ``delta`` times the mean state variance), each the largest over layers, channels and
    seeds. Rows: the levels; per level the Spearman rank correlation between memory and
    accuracy over the cells that have both, and the claim ``live_memory_is_used`` of
    :func:`memory_horizon` with that memory in place of the exact one (every cell with
    memory >= ``MF_LIVE`` above chance).

    The levels are not fitted: all are shown, and none is picked. The memory of a learned
    run is that of its initial spectrum here (its exact memory function moves little in
    training: the horizon table shows before and after), a frozen run's is exactly its own.

    ``data``: one ``kind: "cell"`` entry per cell with ``memory`` (level -> value or None)
    and one ``kind: "level"`` entry per level (``rho``, ``n_cells``, ``n_live``,
    ``live_failing``, ``holds``).
    """
    from scipy.stats import spearmanr

    cfgs = paper2.memory_horizon_grid(P)
    ok, ids, _ = group_records(cfgs, lambda c: (c.init, c.freeze_spectrum, c.tau), root)
    noisy, nids, _ = group_records(paper2.memory_noise_grid(P), lambda c: (
        c.run.init, c.run.freeze_spectrum, c.run.tau), root)
    alphabet, n_test = cfgs[0].alphabet, cfgs[0].n_test
    band = chance_band(alphabet, n_test)
    levels = [0.0] + list(paper2.MEMORY_NOISE)
    cells = []
    for init in paper2.HORIZON_INITS:
        for frozen in (False, True):
            for tau in P.horizon_taus:
                key = (init, frozen, tau)
                runs, reads = ok.get(key, []), noisy.get(key, [])
                if not runs:
                    continue
                memory = {0.0: max(max(r["metrics"]["mf_tau_before"]) for _, r in runs)}
                for i, d in enumerate(paper2.MEMORY_NOISE):
                    memory[d] = (max(max(r["metrics"]["mf_tau"][i]) for _, r in reads)
                                 if reads else None)
                cells.append({"kind": "cell", "init": init, "frozen": frozen, "tau": tau,
                              "acc_max": max(r["metrics"]["test_accuracy"] for _, r in runs),
                              "memory": memory, "n_noisy_seeds": len(reads)})
    rows, level_data = [], []
    for d in levels:
        have = [c for c in cells if c["memory"][d] is not None]
        xs, ys = [c["memory"][d] for c in have], [c["acc_max"] for c in have]
        # undefined for fewer than 3 cells or a constant side (e.g. exact memory 1 everywhere)
        rho = (float(spearmanr(xs, ys).statistic)
               if len(have) >= 3 and len(set(xs)) > 1 and len(set(ys)) > 1 else None)
        live = [c for c in have if c["memory"][d] >= MF_LIVE]
        failing = [[c["init"], c["frozen"], c["tau"]] for c in live if c["acc_max"] <= band]
        holds = (not failing) if live else None
        level_data.append({"kind": "level", "noise": d, "rho": rho, "n_cells": len(have),
                           "n_live": len(live), "live_failing": failing, "holds": holds})
        rows.append(["exact M[τ]" if d == 0 else f"M_δ[τ], δ = {d:g}", len(have),
                     "—" if rho is None else f"{rho:.2f}",
                     f"{len(live) - len(failing)} / {len(live)}",
                     "n/a" if holds is None else ("holds" if holds else "does not hold")])
    cols = ["memory at the delay", "cells", "Spearman ρ (memory, best accuracy)",
            f"cells with memory ≥ {MF_LIVE:g}: above chance", "live memory is used"]
    note = ("The memory-horizon cells (spectrum × learned / frozen × τ) with the memory of "
            "their initial spectrum at the task's delay, exactly and read with noise of "
            "variance δ times the mean state variance (sst_core.theory.memory."
            "memory_function_noisy; every level shown, none fitted), against the best "
            f"accuracy over seeds. 'Above chance': accuracy > {band:.3f}. Scale: "
            f"{P.scale('horizon_N', 'horizon_H', 'horizon_steps', 'horizon_batch', 'horizon_n_test')}.")
    return Table("Memory read with noise against delayed-recall accuracy", cols, rows, note,
                 ids + nids, cells + level_data)


HORIZON_CLAIMS = {"dead_memory_stays_at_chance": "memory gone at initialisation: learned "
                                                 "accuracy stays at chance",
                  "dead_memory_is_not_learned": "memory gone at initialisation: learning "
                                                "does not bring it back",
                  "live_memory_is_used": "memory present at initialisation: accuracy above "
                                         "chance",
                  "frozen_memory_unchanged": "a frozen spectrum keeps its memory exactly"}


def _cell_name(init: str, frozen: bool, tau: int) -> str:
    return f"{INIT_NAMES[init]} {'frozen' if frozen else 'learned'}, τ = {tau}"


def horizon_claims_table(data: list[dict[str, Any]]) -> Table:
    """The claims of :func:`memory_horizon` (its ``data``) as a table: the claim in words,
    the cells it is about, whether it holds, and the cells where it does not."""
    claims = [d for d in data if d["kind"] == "claim"]
    rows = [[HORIZON_CLAIMS[c["claim"]], c["n_cells"],
             "no cell qualifies" if c["holds"] is None else
             "holds" if c["holds"] else "does not hold",
             "; ".join(_cell_name(*f) for f in c["failing"]) or "—"] for c in claims]
    return Table("Delayed recall: the claims", ["claim", "cells", "verdict",
                                                "cells where it does not hold"], rows, "",
                 [], claims)


def live_but_at_chance(data: list[dict[str, Any]]) -> dict[str, Any]:
    """Of :func:`memory_horizon_noise`'s ``data``: the cells the exact memory function
    counts as live (at least :data:`MF_LIVE`) that stay at chance (``stuck``, as
    [init, frozen, tau]), and those of them whose memory read with noise is below
    :data:`MF_LIVE` at every noise level (``explained``)."""
    levels = [d for d in data if d["kind"] == "level"]
    cells = [d for d in data if d["kind"] == "cell"]
    if not levels:
        return {"stuck": [], "explained": []}
    exact, noisy = levels[0], levels[1:]
    stuck = [c for c in cells if [c["init"], c["frozen"], c["tau"]] in exact["live_failing"]]
    explained = [c for c in stuck if all(c["memory"][d["noise"]] is not None
                                         and c["memory"][d["noise"]] < MF_LIVE for d in noisy)]
    key = lambda c: [c["init"], c["frozen"], c["tau"]]  # noqa: E731
    return {"stuck": [key(c) for c in stuck], "explained": [key(c) for c in explained]}


# -- the numbers the chapter's prose cites ------------------------------------------------

def chapter_items(P: Profile, records: list[dict[str, Any]], root=None) -> dict[str, Any]:
    """What the LRA sections of the chapter glue, by name: the grids of its tables
    (:func:`scale_table`, :func:`lra_main`, :func:`lra_claims` with one column per task,
    :func:`claim_counts_table`, :func:`paper_claims`, :func:`lra_fit`, :func:`lra_ablation`)
    and the numbers its prose and captions cite: the seeds per cell of the main table and
    of the ablation; each claim's verdict per task (``lra_verdict_<claim>_<task>``, "not
    judged" where it is not); the paper's seeds per cell and d_2 for them (:data:`RANGE_TO_SD`);
    the claim rule's verdict on claim 1 for the paper's Retrieval, Path-X and ListOps rows,
    and on claim 2 for its ablation's Retrieval row;
    per claim, its number of parts and the z beyond which one of them must lie on the
    wrong side to fail it (:data:`CLAIM_PARTS`, :func:`fail_ses`);
    per spectrum, the median growth of the summed supremum memory function over the
    learned runs of ``records`` that belong to the main table or the ablation
    (:func:`mf_growth_ratios`, :func:`grid_runs`; ``lra_mf_gain_<init>``, nan without
    one) and claim 3's limit; claim 4's "converged" rule (:data:`LOSS_NEAR_MIN`,
    :data:`LATE_EPOCHS`); claim 3 per spectrum over the tasks judged, the spectra whose
    part fails on some task (``lra_c3_extended_names``) and those whose part holds on every
    one (``lra_c3_kept_names``), "none" for none; whether claim 3's verdicts depend on the
    memory window's edge (:func:`claim3_window_check`: ``lra_c3_win_delays`` the shorter
    windows as text, ``lra_c3_win_parts`` and ``lra_c3_win_changed``, and the real axis's
    smallest and largest mean growth over tasks and windows as text, ``lra_c3_win_real``,
    "— (not judged)" where it is not judged)."""
    import numpy as np

    claims, paper = lra_claims(P, root), paper_claims(P, root)
    by_task = {d["task"]: d for d in paper.data}
    runs = grid_runs(records, paper2.lra_main_grid(P) + paper2.lra_ablation_grid(P))
    gains = {}
    for init in CLAIM3_INITS:
        growth = mf_growth_ratios([r for r in runs if r["config"]["init"] == init])
        gains[f"lra_mf_gain_{init}"] = float(np.median(growth)) if growth else float("nan")
    # claim 3 as the paper's evidence reads: per task its verdict, S4D-Inv's memory at
    # initialisation and each unstructured spectrum's after training and at initialisation
    below = {}
    for d in claims.data:
        t = d["task"]
        below[f"lra_verdict_memory_below_inv_{t}"] = d["memory_below_inv"] or "not judged"
        parts = {p["init"]: p for p in d["memory_below_inv_parts"]}
        below[f"lra_c3p_inv_{t}"] = (next(iter(parts.values()))["inv_init"] if parts
                                     else float("nan"))
        for i in UNSTRUCTURED:
            below[f"lra_c3p_{i}_{t}"] = parts[i]["after"] if i in parts else float("nan")
            below[f"lra_c3p_{i}_init_{t}"] = (parts[i]["before"] if i in parts
                                              else float("nan"))
    # claim 3 per spectrum over the tasks judged: extended (its part fails on some task),
    # kept (its part holds on every task), as names ("none" for none)
    judged = [{p["init"]: p["verdict"] for p in d["memory_parts"]} for d in claims.data
              if d["memory_not_extended"] is not None]
    c3_inits = [i for i in CLAIM3_INITS if any(i in v for v in judged)]
    extended = [i for i in c3_inits if any(v.get(i) == "fails" for v in judged)]
    kept = [i for i in c3_inits if all(v.get(i) == "holds" for v in judged if i in v)]
    below["lra_c3_extended_names"] = ", ".join(INIT_NAMES[i] for i in extended) or "none"
    below["lra_c3_kept_names"] = ", ".join(INIT_NAMES[i] for i in kept) or "none"
    win = claim3_window_check(claim3_window_table(P, root), claim3_windows(P.lra_mf_T))
    real = win["growth"].get("real")
    w = [str(k) for k in win["windows"]] or ["no"]
    below.update({"lra_c3_win_delays": ", ".join(w[:-1]) + (" or " if w[1:] else "") + w[-1],
                  "lra_c3_win_parts": win["parts"], "lra_c3_win_changed": win["changed"],
                  "lra_c3_win_real": (f"×{real[0]:.2f} to ×{real[1]:.2f}" if real
                                      else "— (not judged)")})
    return {**below,
            "lra_scale": scale_table(P, root).grid(),
            "lra_main": lra_main(P, root).grid(),
            "lra_claims": claims.transposed().grid(),
            "lra_claim_counts": claim_counts_table(claim_counts(claims.data)).grid(),
            "lra_paper_claims": paper.grid(),
            "lra_fit": lra_fit(P, root).grid(),
            "lra_ablation": lra_ablation(P, root).grid(),
            "lra_main_seeds": len(P.lra_seeds),
            "lra_ablation_seeds": len(P.lra_ablation_seeds),
            **{f"lra_verdict_{k}_{d['task']}": d[k] or "not judged" for d in claims.data
               for k in LRA_CLAIMS},
            "lra_verdicts_other": other_verdicts(claims.data, P),
            "lra_paper_seeds": paper_values.LRA_SEEDS,
            "lra_d2": RANGE_TO_SD[paper_values.LRA_SEEDS],
            **{f"lra_paper_c1_{task.lower().replace('-', '')}":
               by_task[task]["frozen_as_good"] for task in ("Retrieval", "Path-X", "ListOps")},
            "lra_paper_c2_retrieval": by_task["Retrieval"]["unstructured_worse"],
            **gains,
            "lra_mf_limit": MF_GROWTH_LIMIT,
            **{f"lra_parts_claim{n}": k for n, k in CLAIM_PARTS.items()},
            **{f"lra_fail_ses_claim{n}": fail_ses(k) for n, k in CLAIM_PARTS.items()},
            "lra_near_min": 100 * LOSS_NEAR_MIN,
            "lra_late_epochs": LATE_EPOCHS}


PROSE_TASKS = ("listops", "digits")  # the tasks whose verdicts the chapter's prose names


def other_verdicts(data: list[dict[str, Any]], P: Profile) -> str:
    """One sentence on claims 1 and 2 for the tasks of :func:`lra_claims` (its ``data``)
    other than :data:`PROSE_TASKS`: a probe is not judged; a task outside ``P.lra_tasks``
    is "at its own size"; a claim not judged says why (S4D-Inv at chance, or runs
    missing)."""
    def verdict(d: dict[str, Any], key: str) -> str:
        if d["above_chance"] is False:
            return "not judged (S4D-Inv at chance)"
        return d[key] or "not judged (runs missing)"

    said = []
    for d in data:
        if d["task"] in PROSE_TASKS:
            continue
        name = TASK_NAMES.get(d["task"], d["task"])
        if d["probe"]:
            said.append(f"{name} runs as a probe only (learned S4D-Inv) and is not judged")
        else:
            own = "" if d["task"] in P.lra_tasks else " at its own size"
            said.append(f"on {name}{own}, claim 1 {verdict(d, 'frozen_as_good')} and claim 2 "
                        f"{verdict(d, 'unstructured_worse')}")
    return ("Beyond those two tasks, " + "; ".join(said) + "." if said
            else "No other task is judged.")


def horizon_items(P: Profile, horizon: Table, noise: Table) -> dict[str, Any]:
    """What the delayed-recall sections of the chapter glue, by name: the grids of
    :func:`memory_horizon`'s table ``horizon`` (as two: its accuracies ``hz_table`` and its
    memory ``hz_table_mf``), of its claims (:func:`horizon_claims_table`) and of
    :func:`memory_horizon_noise`'s table ``noise``, and the numbers the prose cites: the
    learned cell whose memory at its delay grew most in training (``hz_grown_*``: its
    spectrum, delay, memory before and after; None where none grew),
    chance and the "at chance" bound (:func:`chance_band`), the "memory gone" and "memory
    present" thresholds, the noise levels (:data:`sst_core.experiments.paper2.MEMORY_NOISE`,
    as text), the cells with exact memory present that stay at chance and those of them
    whose memory read with noise is absent at every level (:func:`live_but_at_chance`), the
    cells with memory between the two thresholds at the start (``hz_between``) and those of
    them at chance (``hz_between_at_chance``), and the scale of the runs (``hz_N``, ``hz_H``, ``hz_steps``, ``hz_batch``, ``hz_n_test``,
    ``hz_seeds``)."""
    cfg = paper2.memory_horizon_grid(P)[0]
    stuck = live_but_at_chance(noise.data)
    accuracy, memory = horizon.split(2, 2 + len(P.horizon_taus))
    grown = [c for c in horizon.data if c["kind"] == "cell" and not c["frozen"]
             and c["mf_before"] is not None and c["mf_after"] is not None
             and c["mf_after"] > c["mf_before"]]
    most = max(grown, key=lambda c: c["mf_after"] - c["mf_before"], default=None)
    # cells with some memory at the start, below "present": how many are at chance too
    between = [c for c in horizon.data if c["kind"] == "cell" and c["mf_before"] is not None
               and c.get("at_chance") is not None and MF_ZERO <= c["mf_before"] < MF_LIVE]
    return {"hz_table": accuracy.grid(), "hz_table_mf": memory.grid(),
            "hz_between": len(between),
            "hz_between_at_chance": sum(bool(c["at_chance"]) for c in between),
            "hz_claims": horizon_claims_table(horizon.data).grid(),
            "hz_grown_spectrum": None if most is None else INIT_NAMES[most["init"]],
            "hz_grown_tau": None if most is None else most["tau"],
            "hz_grown_before": None if most is None else most["mf_before"],
            "hz_grown_after": None if most is None else most["mf_after"],
            "nz_table": noise.grid(),
            "hz_chance": cfg.chance, "hz_band": chance_band(cfg.alphabet, cfg.n_test),
            "hz_mf_zero": MF_ZERO, "hz_mf_live": MF_LIVE,
            "nz_levels": ", ".join(f"{d:g}" for d in paper2.MEMORY_NOISE),
            "nz_stuck": len(stuck["stuck"]), "nz_explained": len(stuck["explained"]),
            **{f"hz_{k}": getattr(P, f"horizon_{k}") for k in ("N", "H", "steps", "batch",
                                                                "n_test")},
            "hz_seeds": len(P.horizon_seeds)}
