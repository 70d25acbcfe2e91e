"""Tables 2 and 3 of Paper 1 from stored training records, beside the published values.

A table cell is the best ``m_p`` over the grid of one (model, group, depth), as the paper
reports it, with the spread over seeds at the best grid cell and the paper's value.
Agreement: ``agree`` (same value, or both fail), ``close`` (one evaluated length apart),
``differ``, or ``not reported`` by the paper.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from sst_core.experiments import paper1
from sst_core.models.registry import expected_affine
from sst_core.reports import Table, group_records, stored_record
from sst_core.reports.select import best_per_cell, seeds_of
from sst_core.spec import paper_values
from sst_core.spec.profiles import Profile
from sst_core.store.records import run_compute_s

MARK = {"agree": "✓", "close": "≈", "differ": "✗", "not reported": "", "no runs": ""}


def _rank(m_p: int | None) -> int:
    return -1 if m_p is None else m_p


def fmt(m_p: int | None) -> str:
    return "fail" if m_p is None else str(m_p)


def seed_range(m_ps: Sequence[int | None]) -> str:
    """`` [lowest–highest]`` of several runs' m_p ('fail' lowest), or nothing where they are
    all the same: a range of one value says nothing and only widens a table's cell."""
    lo, hi = min(m_ps, key=_rank, default=None), max(m_ps, key=_rank, default=None)
    return f" [{fmt(lo)}–{fmt(hi)}]" if lo != hi else ""


def grid_text(grid: dict[str, Any]) -> str:
    """One cell's spread over its grid (:func:`grid_spread`): ``median [lowest–highest] n=N``,
    or ``value (all N)`` where every run has the same m_p."""
    if grid["min"] == grid["max"]:
        return f"{fmt(grid['median'])} (all {grid['n']})"
    return f"{fmt(grid['median'])} [{fmt(grid['min'])}–{fmt(grid['max'])}] n={grid['n']}"


def lengths_apart(a: int | None, b: int | None, lengths: Sequence[int]) -> int | None:
    """How many evaluated lengths two m_p are apart ('fail', None, one below the shortest);
    None when either is not an evaluated length."""
    grid = [None, *sorted(lengths)]
    return abs(grid.index(a) - grid.index(b)) if a in grid and b in grid else None


# Table 2's "close" (≈): m_p at most this many evaluated lengths from the paper's
CLOSE_LENGTHS = 1


def agreement(ours: int | None, paper: Any, lengths: Sequence[int]) -> str:
    if paper == "missing":
        return "not reported"
    if ours == paper:
        return "agree"
    apart = lengths_apart(ours, paper, lengths)
    if apart is not None and apart <= CLOSE_LENGTHS:
        return "close"
    return "differ"


# m_p classes for agreement by class (issue 19): fail, the training length only, a
# moderate reach and near the rollout; 600 belongs to the moderate class
M_P_CLASSES = ("fail", "60", "100-600", "700-1000")


def m_p_class(m_p: int | None) -> str:
    """The class of an m_p: ``fail``, ``60``, ``100-600`` or ``700-1000``."""
    if m_p is None:
        return "fail"
    if m_p <= 60:
        return "60"
    return "100-600" if m_p < 700 else "700-1000"


def agreement_counts(data: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Over the cells the paper reports and we computed: how many agree exactly and how
    many by class (:func:`m_p_class`)."""
    cells = [d for d in data if d["paper_reported"] and d["status"] in ("ok", "fail")]
    return {"reported": len(cells),
            "exact": sum(d["m_p"] == d["paper"] for d in cells),
            "by_class": sum(m_p_class(d["m_p"]) == m_p_class(d["paper"]) for d in cells)}


def _key(record) -> tuple:
    cfg = record["config"]
    return (cfg["phi"] or cfg["model"], cfg["group"], cfg["n_layers"])


def summarise(cfgs, root=None) -> tuple[dict, list[str]]:
    """Group records by (model-or-phi, group, depth): best m_p, seed spread, counts.

    The best run of a cell is :func:`sst_core.reports.select.best_per_cell`'s; the seed
    spread is over the seeds of its grid point (d_state, lr, schedule); ``m_p_grid`` is
    every ok run's m_p, ascending (failures first); ``never_60`` counts the ok runs whose
    curriculum never passed the training length (no ``passed_60`` checkpoint);
    ``longest_trained`` is the longest curriculum length any ok run trained at and
    ``acc_60`` every ok run's token accuracy on held-out words of length 60 (where it was
    evaluated), in the grid's order."""
    ok, ids, status = group_records(cfgs, lambda c: (c.phi or c.model, c.group, c.n_layers), root)
    records = [rec for runs in ok.values() for _, rec in runs]
    best = best_per_cell(records, _key)
    out = {}
    for key, st in status.items():
        r = best.get(key)
        if r is not None:
            best_cell = (r["config"]["d_state"], r["config"]["lr"], r["config"]["schedule"])
            seeds = seeds_of(records, r)
            m_p = r["metrics"]["m_p"]
        else:
            best_cell, seeds, m_p = None, [], "no runs"
        grid = sorted((rec["metrics"]["m_p"] for _, rec in ok.get(key, [])), key=_rank)
        mets = [rec["metrics"] for _, rec in ok.get(key, [])]
        never = sum(not (m.get("checkpoints") or {}).get("passed_60") for m in mets)
        trained = [m["final_train_length"] for m in mets if m.get("final_train_length")]
        acc_60 = [m["eval"]["60"]["token"] for m in mets if "60" in (m.get("eval") or {})]
        out[key] = {"m_p": m_p, "m_p_seeds": seeds, "best_cell": best_cell, "m_p_grid": grid,
                    "never_60": never, "longest_trained": max(trained, default=None),
                    "acc_60": acc_60, **st}
    return out, ids


def cell_status(s: dict) -> str:
    """A table cell's state: ``ok`` (m_p a length), ``fail`` (below 90% at the training
    length), ``diverged`` (every run failed) or ``missing`` (no record)."""
    if s["m_p"] == "no runs":
        return "missing" if s["missing"] else "diverged"
    return "fail" if s["m_p"] is None else "ok"


def cell_text(s: dict | None, seeds: bool = True) -> tuple[str, str]:
    """A chapter table's m_p cell from its summary (:func:`summarise`; None: nothing stored
    for it): its state (:func:`cell_status`, ``missing`` for None) and its text
    (:func:`shown_text`), with the range over seeds where they differ if ``seeds``."""
    status = "missing" if s is None else cell_status(s)
    if status in ("missing", "diverged"):
        return status, status
    return status, shown_text(status, s["m_p"], s["m_p_seeds"] if seeds else ())


def shown_text(status: str, m_p: int | None, seeds: Sequence[int | None] = ()) -> str:
    """A cell as the tables show it, from its state and m_p (a table's typed data, e.g.
    the ``cells`` of :func:`sst_core.reports.beyond.model_rows`): the state for a missing
    or diverged cell, else m_p ('fail' for None) and the range over ``seeds``."""
    return status if status in ("missing", "diverged") else fmt(m_p) + seed_range(seeds)


def run_label(cfg: dict[str, Any]) -> str:
    """A tracking run's name in tables and figures: phi or model, with L2 for two layers."""
    label = cfg.get("phi") or cfg["model"]
    return label + (f" L{cfg['n_layers']}" if cfg.get("n_layers", 1) > 1 else "")


def label_name(label: str) -> str:
    """A :func:`run_label` as readers read it: the papers' name, "2 layers" for L2
    (:func:`sst_core.spec.names.run_name`); "tanh_rnn L2" -> "tanh RNN, 2 layers"."""
    from sst_core.spec.names import PHI_NAMES, run_name

    base, _, depth = label.partition(" L")
    cfg = {"phi": base} if base in PHI_NAMES else {"model": base}
    return run_name({**cfg, "n_layers": int(depth) if depth.isdigit() else 1})


def best_runs(records) -> list[dict[str, Any]]:
    """The best run of each (group, model-or-phi, depth), the run behind each cell of
    Tables 2 and 3 (:func:`sst_core.reports.select.best_per_cell`), for
    :func:`sst_core.figures.common.fig_accuracy_vs_length`."""
    return list(best_per_cell(records, lambda r: (r["config"]["group"],
                                                  run_label(r["config"]))).values())


# what :func:`_cell_text` puts between a cell's values and its range over seeds when
# ``narrow``: a line break, which a page's table renders and a terminal shows as is
LINE_BREAK = "<br>"


def _cell_text(s: dict, paper: Any, lengths, narrow: bool = False) -> tuple[str, str]:
    """A Table 2 or 3 cell: ``ours [seed range] / paper's mark``. ``narrow`` (a page's
    narrow columns): an exact agreement shows the value once (``1000 ✓``: ✓ says the
    paper's is the same), and the seed range goes on a line of its own."""
    if s["m_p"] == "no runs":
        return f"{cell_status(s)} / {fmt(paper) if paper != 'missing' else '—'}", "no runs"
    agree = agreement(s["m_p"], paper, lengths)
    spread = seed_range(s["m_p_seeds"])
    ours = fmt(s["m_p"]) + ("" if narrow else spread)
    if s.get("missing"):  # a cell whose grid is not complete yet says so
        done = s.get("ok", 0) + s.get("failed", 0)
        ours += f" ({done} of {done + s['missing']} runs)"
    theirs = fmt(paper) if paper != "missing" else "—"
    if narrow:  # the mark kept on its value's line (a no-break space)
        text = (f"{ours}\u00a0{MARK[agree]}" if agree == "agree" else
                f"{ours} / {theirs}\u00a0{MARK[agree]}".rstrip())
    else:
        text = f"{ours} / {theirs} {MARK[agree]}".rstrip()
    if narrow and spread:
        text += LINE_BREAK + spread.strip()
    return text, agree


def table2(P: Profile, root=None, models=paper1.TABLE2_MODELS, wide: bool = False,
           narrow: bool = False) -> Table:
    """Table 2 from the stored runs of its grid: per model, group and depth the best m_p
    over the grid beside the paper's. ``wide``: the grid of the recompute at
    ``P.track_d_model_wide`` (:func:`sst_core.experiments.paper1.table2_wide_grid`), whose
    RNN-family cells are the same runs. ``narrow``: for a page's narrow columns, the model
    class as a bold row over its models instead of a column, and cells of
    :func:`_cell_text`'s narrow form (an exact agreement written once, the range over seeds
    on a line of its own). ``data`` has per
    cell, besides its values, ``never_60`` (its ok runs whose curriculum never passed 60)
    and ``n_ok``."""
    grid = paper1.table2_wide_grid if wide else paper1.table2_grid
    cfgs = grid(P, models=models)
    summary, ids = summarise(cfgs, root)
    depths = P.track_depths
    cols = ["model", "class"] + [f"{g} L{d}" for g in paper1.TABLE2_GROUPS for d in depths]
    rows, data = [], []
    for m in models:
        row = [label_name(m), "affine" if expected_affine(m) else "state-dependent"]
        for g in paper1.TABLE2_GROUPS:
            for d in depths:
                s = summary.get((m, g, d), {"m_p": "no runs", "m_p_seeds": [], "ok": 0,
                                            "failed": 0, "missing": 0, "best_cell": None})
                paper = paper_values.TABLE2.get((m, g, d), "missing")
                text, agree = _cell_text(s, paper, P.track_eval_lengths, narrow)
                row.append(text)
                data.append({"model": m, "group": g, "n_layers": d, "status": cell_status(s),
                             "m_p": None if s["m_p"] == "no runs" else s["m_p"],
                             "m_p_seeds": s["m_p_seeds"], "n_runs": s["ok"] + s["failed"],
                             "n_failed": s["failed"], "n_missing": s["missing"],
                             "n_ok": s["ok"], "best_cell": dict(zip(("d_state", "lr", "schedule"),
                                                   s["best_cell"])) if s["best_cell"] else None,
                             "grid": grid_spread(s.get("m_p_grid", [])),
                             "never_60": s.get("never_60", 0),
                             "paper": None if paper == "missing" else paper,
                             "paper_reported": paper != "missing", "agreement": agree,
                             "class_agreement": paper != "missing" and s["m_p"] != "no runs"
                             and m_p_class(s["m_p"]) == m_p_class(paper)})
        rows.append(row)
    if narrow:  # the class as a bold row over its models instead of a column
        cols = cols[:1] + cols[2:]
        grouped: list[list[Any]] = []
        for row in rows:
            if not grouped or row[1] != last:
                last = row[1]
                grouped.append([f"**{last}**"] + [""] * (len(cols) - 1))
            grouped.append(row[:1] + row[2:])
        rows = grouped
    counts = agreement_counts(data)
    note = (f"Agreement with the paper over its {counts['reported']} reported cells computed "
            f"here: {counts['exact']} exactly, {counts['by_class']} by class "
            f"({' / '.join(M_P_CLASSES)}). "
            f"Cells: ours / paper's m_p (largest length with token accuracy >= 90%; 'fail' = "
            f"below 90% at 60), best over the grid; [min–max over seeds] where they differ; "
            f"✓ agree, ≈ one evaluated length apart, ✗ differ, — not reported.")
    title = "Table 2: longest length tracked (m_p), trained up to length 60"
    if wide:
        title += f", the Mamba, AUSSM and attention families at d_model {P.track_d_model_wide}"
    return Table(title, cols, rows, note, ids, data)


def table3(P: Profile, root=None, narrow: bool = False) -> Table:
    """Table 3 from the stored runs of its grid: per phi the best m_p on S3 with one layer
    beside the paper's. ``narrow``: cells of :func:`_cell_text`'s narrow form, as
    :func:`table2`'s (an exact agreement written once, the range over seeds on a line of
    its own). ``data`` has per row, besides its values, ``n_ok``, ``never_60``
    (ok runs whose curriculum never passed 60), ``longest_trained`` (the longest
    curriculum length any ok run trained at) and ``acc_60`` (every ok run's token
    accuracy at 60)."""
    from sst_core.models.cells import PAIR_OPS
    from sst_core.models.registry import PHIS

    summary, ids = summarise(paper1.table3_grid(P), root)
    from sst_core.spec.names import PHI_NAMES

    cols = ["φ", "class", "S3 L1: ours / paper"]
    rows, data = [], []
    for phi in PHIS:
        s = summary.get((phi, "S3", 1), {"m_p": "no runs", "m_p_seeds": [], "ok": 0, "failed": 0,
                                         "missing": 0, "best_cell": None})
        paper = paper_values.TABLE3.get(phi, "missing")
        text, agree = _cell_text(s, paper, P.track_eval_lengths, narrow)
        cls = ("affine" if phi == "identity" else
               "whole-vector normalisation" if phi in ("layernorm", "sphere") else
               "pair operator" if phi in ("groupsort2", *PAIR_OPS) else "pointwise")
        rows.append([PHI_NAMES.get(phi, phi), cls, text])
        data.append({"phi": phi, "status": cell_status(s),
                     "m_p": None if s["m_p"] == "no runs" else s["m_p"],
                     "m_p_seeds": s["m_p_seeds"], "n_runs": s["ok"] + s["failed"],
                     "n_ok": s["ok"], "never_60": s.get("never_60", 0),
                     "longest_trained": s.get("longest_trained"),
                     "acc_60": s.get("acc_60", []),
                     "paper": None if paper == "missing" else paper,
                     "paper_reported": paper != "missing", "agreement": agree})
    note = ("h = φ(W_h h + W_x e(x) + b) on S3 with one layer; best m_p over the grid; "
            "[min–max over seeds] where they differ; ✓ agree, ≈ one evaluated length apart, "
            "✗ differ.")
    return Table("Table 3: the nonlinearity decides, not the family", cols, rows, note, ids, data)


def table2_protocol(P: Profile, models=paper1.TABLE2_MODELS) -> Table:
    """Our Table 2 protocol beside the paper's as far as it is known
    (:data:`sst_core.spec.paper_values.TABLE2_PROTOCOL`; "—" where its sources do not say):
    ours from the first config of Table 2's grid (every run shares these settings) and the
    profile's grid axes. ``data``: one entry per row, ``item``, ``ours`` and ``paper``
    typed (None: not said)."""
    grid = paper1.table2_grid(P, models=models)
    if not grid:
        raise ValueError(f"table2_protocol: Table 2's grid under profile {P.name!r} with "
                         f"models {list(models)} is empty")
    cfg, paper = grid[0], paper_values.TABLE2_PROTOCOL
    per_cell = max(Counter((c.model, c.group, c.n_layers) for c in grid).values())

    def pct(x: float | None) -> str:
        return "—" if x is None else f"{x:.0%}"

    def num(x: Any) -> str:
        if x is None:
            return "—"
        return ", ".join(f"{v:g}" for v in x) if isinstance(x, tuple) else f"{x:g}"

    ours = {"d_model": P.track_d_model, "batch": cfg.batch, "weight_decay": cfg.weight_decay,
            "curriculum_start": cfg.curriculum_start, "curriculum_max": cfg.curriculum_max,
            "curriculum_threshold": cfg.curriculum_threshold,
            "curriculum_patience": cfg.curriculum_patience,
            "steps_per_epoch": cfg.steps_per_epoch, "max_steps": cfg.max_steps,
            "eval_samples": cfg.eval_samples, "d_states": tuple(P.track_d_states),
            "post_steps": cfg.post_steps, "lrs": tuple(P.track_lrs),
            "schedules": tuple(P.track_schedules),
            "seeds": len(P.track_seeds), "runs_per_cell": per_cell}
    rows_spec = [  # (row, keys, how a side shows them)
        ("d_model", ("d_model",), lambda v: num(v["d_model"])),
        ("words per step (batch)", ("batch",), lambda v: num(v["batch"])),
        ("AdamW weight decay", ("weight_decay",), lambda v: num(v["weight_decay"])),
        ("curriculum lengths", ("curriculum_start", "curriculum_max"),
         lambda v: f"{num(v['curriculum_start'])} doubling to {num(v['curriculum_max'])}"),
        ("curriculum gate", ("curriculum_threshold",),
         lambda v: pct(v["curriculum_threshold"])),
        ("epochs at the gate", ("curriculum_patience",),
         lambda v: num(v["curriculum_patience"])),
        ("steps per epoch", ("steps_per_epoch",), lambda v: num(v["steps_per_epoch"])),
        ("step cap", ("max_steps",), lambda v: num(v["max_steps"])),
        ("steps after passing 60, at most", ("post_steps",), lambda v: num(v["post_steps"])),
        ("held-out words per length", ("eval_samples",), lambda v: num(v["eval_samples"])),
        ("state sizes (SSMs' N)", ("d_states",), lambda v: num(v["d_states"])),
        ("learning rates", ("lrs",), lambda v: num(v["lrs"])),
        ("learning-rate schedules", ("schedules",),
         lambda v: (", ".join(v["schedules"]) if isinstance(v["schedules"], tuple)
                    else f"{v['schedules']}, unnamed")),
        ("seeds", ("seeds",), lambda v: num(v["seeds"])),
        ("runs per cell", ("runs_per_cell",), lambda v: num(v["runs_per_cell"]))]
    rows, data = [], []
    for name, keys, show in rows_spec:
        rows.append([name, show(ours), show(paper)])
        data.append({"item": name, "ours": {k: ours[k] for k in keys},
                     "paper": {k: paper[k] for k in keys}})
    note = (f"Ours: profile {P.name}; the paper's: "
            f"{paper_values.SOURCES['TABLE2_PROTOCOL']}; — where it does not say. Our RNNs "
            f"use their own widths ({num(tuple(P.track_rnn_widths))}) as the state size.")
    return Table("Table 2's protocol, ours and the paper's", ["", "ours", "the paper's"],
                 rows, note, [], data)


def final_position_m_p(record: dict[str, Any]) -> int | None:
    """A run's m_p read from final-position accuracy (the prediction at the last token of
    each held-out word) instead of token accuracy (the mean over every position): the
    largest evaluated length where it is at least the run's pass threshold, at the same
    checkpoint as the record's m_p."""
    from sst_core.training.tracking import max_passing_length

    ev = record["metrics"]["eval"]
    return max_passing_length({int(L): v["final"] for L, v in ev.items()},
                              record["config"]["pass_threshold"])


def table2_final_reading(P: Profile, root=None, models=paper1.TABLE2_MODELS
                         ) -> dict[str, int]:
    """Table 2 read from final-position accuracy (:func:`final_position_m_p`): per cell the
    best such m_p over its grid, against the table's best (token accuracy). Counts over
    the ``cells`` with ok runs: the best is the ``same``, ``lower`` or ``higher``; over the
    ``reported`` cells the paper reports: how many agree with it ``exact``-ly and
    ``by_class`` (:func:`m_p_class`) with each reading (``token_*``, ``final_*``)."""
    cfgs = paper1.table2_grid(P, models=models)
    ok, _, _ = group_records(cfgs, lambda c: (c.model, c.group, c.n_layers), root)
    out = dict.fromkeys(("cells", "same", "lower", "higher", "reported", "token_exact",
                         "token_by_class", "final_exact", "final_by_class"), 0)
    for key, runs in ok.items():
        if not runs:
            continue
        token = max((rec["metrics"]["m_p"] for _, rec in runs), key=_rank)
        final = max((final_position_m_p(rec) for _, rec in runs), key=_rank)
        out["cells"] += 1
        out["same" if final == token else
            "lower" if _rank(final) < _rank(token) else "higher"] += 1
        if key in paper_values.TABLE2:
            paper = paper_values.TABLE2[key]
            out["reported"] += 1
            for name, m_p in (("token", token), ("final", final)):
                out[f"{name}_exact"] += m_p == paper
                out[f"{name}_by_class"] += m_p_class(m_p) == m_p_class(paper)
    return out


def table2_checkpoints(P: Profile, root=None, models=paper1.TABLE2_MODELS) -> Table:
    """How m_p moves with the stopping point: every Table 2 run's m_p when the curriculum
    first passes 60, at the held-out criterion and at the end of the budget
    (:mod:`sst_core.training.protocol`), counted per class of model and per model: runs
    whose m_p rose, stayed or fell from ``passed_60`` to ``end``, and the median m_p at each
    checkpoint over the same runs: those with all three (the runs that met the criterion;
    a run without one drops out of every median). A row of a class has ``model`` None."""
    cfgs = paper1.table2_grid(P, models=models)
    ok, ids, _ = group_records(cfgs, lambda c: c.model, root)
    cols = ["class / model", "runs passing 60", "m_p rose", "stayed", "fell",
            "criterion met", "median m_p: passed 60 / held-out / end"]
    rows, data = [], []

    def count(runs: list[dict[str, Any]]) -> tuple[list[Any], dict[str, Any]]:
        moves = {"rose": 0, "stayed": 0, "fell": 0}
        met, at = 0, {"passed_60": [], "heldout": [], "end": []}
        passing = [r for r in runs if (r["metrics"].get("checkpoints") or {}).get("passed_60")]
        for r in passing:
            cp = r["metrics"]["checkpoints"]
            a, b = _rank(cp["passed_60"]["m_p"]), _rank(cp["end"]["m_p"])
            moves["rose" if b > a else "fell" if b < a else "stayed"] += 1
            met += cp["heldout"] is not None
            if all(cp.get(k) for k in at):  # the medians compare the same runs
                for k in at:
                    at[k].append(_rank(cp[k]["m_p"]))
        med = {k: (sorted(v)[len(v) // 2] if v else None) for k, v in at.items()}
        row = [len(passing), moves["rose"], moves["stayed"], moves["fell"], met,
               " / ".join("—" if v is None else fmt(None if v < 0 else v) for v in med.values())]
        return row, {"runs": len(runs), "passing_60": len(passing), **moves,
                     "criterion_met": met,
                     "median_m_p": {k: (None if v is None or v < 0 else v) for k, v in med.items()}}

    for affine in (True, False):
        label = "affine" if affine else "state-dependent"
        family = [m for m in models if expected_affine(m) == affine]
        row, d = count([rec for m in family for _, rec in ok.get(m, [])])
        rows.append([f"**{label}**"] + row)
        data.append({"class": label, "model": None, **d})
        for m in family:
            row, d = count([rec for _, rec in ok.get(m, [])])
            rows.append([label_name(m)] + row)
            data.append({"class": label, "model": m, **d})
    note = ("Every run of Table 2's grid (all models, groups, depths, sizes, learning rates "
            "and seeds) whose curriculum passed 60; m_p at that point against m_p at the end "
            "of the budget. The table's m_p uses the held-out checkpoint where the criterion "
            "was met, else the end.")
    return Table("Where training stops moves m_p", cols, rows, note, ids, data)


def tokens_after(history: dict[str, list], step: int) -> tuple[int, int]:
    """Of a run's training, the tokens read after ``step`` and in all, from its epoch log
    (``history``: the step at the end of each epoch and the length trained at; every
    step of an epoch reads one batch of that length)."""
    done, after, last = 0, 0, 0
    for end, length in zip(history["step"], history["length"]):
        steps = end - last
        done += steps * length
        after += max(0, end - max(last, step)) * length
        last = end
    return after, done


def table2_stored(P: Profile, root=None, models=paper1.TABLE2_MODELS
                  ) -> list[tuple[Any, dict[str, Any]]]:
    """``(config, record)`` of every stored run of Table 2's grid, in the grid's order."""
    return [(cfg, rec) for cfg in paper1.table2_grid(P, models=models)
            if (rec := stored_record(cfg, root)) is not None]


def table2_compute_split(P: Profile, root=None, models=paper1.TABLE2_MODELS) -> dict[str, Any]:
    """Where Table 2's compute goes (its ``ok`` runs; a stack's wall time shared by its
    runs): the hours after a run met the held-out criterion (spent for the checkpoint at
    the end of the budget alone: the table reads m_p at the criterion), the hours of the
    runs whose curriculum never passed 60, and in all. A run's hours are shared out
    between its parts by the tokens it read (:func:`tokens_after`), which leaves out
    what a step costs whatever its length and the evaluations."""
    out = {"compute_h": 0.0, "after_criterion_h": 0.0, "never_60_h": 0.0, "runs": 0,
           "criterion_met": 0, "never_60": 0}
    for _, rec in table2_stored(P, root, models):
        if rec["status"] != "ok":
            continue
        m, hours = rec["metrics"], run_compute_s(rec) / 3600
        cp = m.get("checkpoints") or {}
        out["runs"] += 1
        out["compute_h"] += hours
        if not cp.get("passed_60"):
            out["never_60"] += 1
            out["never_60_h"] += hours
        elif cp.get("heldout"):
            after, done = tokens_after(m["history"], cp["heldout"]["step"])
            out["criterion_met"] += 1
            out["after_criterion_h"] += hours * after / done if done else 0.0
    return out


def grid_spread(values: Sequence[int | None]) -> dict[str, Any]:
    """Median, lowest and highest m_p of a cell's runs (a failure below every length)."""
    ranked = sorted(values, key=_rank)
    if not ranked:
        return {"n": 0, "median": None, "min": None, "max": None}
    return {"n": len(ranked), "median": ranked[len(ranked) // 2], "min": ranked[0],
            "max": ranked[-1]}


def table2_spread(P: Profile, root=None, models=paper1.TABLE2_MODELS) -> Table:
    """The spread of m_p over each Table 2 cell's whole grid (sizes, learning rates,
    schedules, seeds): median [lowest–highest] of its runs, where Table 2 shows the best."""
    t2 = table2(P, root, models)  # its data holds each cell's spread (grid_spread)
    cols, ids = t2.columns, t2.records
    rows, data = [], []
    for m, row in zip(models, t2.rows):
        cells = [d for d in t2.data if d["model"] == m]  # in the columns' order
        # a cell without ok runs says what Table 2 says of it: missing or diverged
        rows.append(row[:2] + [d["status"] if not d["grid"]["n"] else grid_text(d["grid"])
                               + (f"; {d['never_60']} never 60" if d["never_60"] else "")
                               for d in cells])
        data += [{"model": d["model"], "group": d["group"], "n_layers": d["n_layers"],
                  "status": d["status"], "never_60": d["never_60"], **d["grid"]}
                 for d in cells]
    note = ("Every ok run of a cell: median m_p [lowest–highest] over its grid, n runs (or "
            "'all n' where every run has the same m_p); 'fail' is below every length; "
            "'k never 60': k of the runs never passed the training length (their curriculum "
            "stopped short of 60). Table 2 shows the best of the same runs.")
    return Table("Table 2's cells over their whole grid", cols, rows, note, ids, data)


def widened_models(models=paper1.TABLE2_MODELS) -> list[str]:
    """The models of ``models`` the recompute at the wider d_model changes: every one with
    a residual stream (:func:`sst_core.experiments.paper1.widened`; the RNN family has
    none, its width is its d_state)."""
    from sst_core.models.registry import REGISTRY

    return [m for m in models if REGISTRY[m].family != "rnn"]


def _ok_runs(d: dict[str, Any]) -> int:
    return d["n_runs"] - d["n_failed"]


def _complete(d: dict[str, Any]) -> bool:
    """Whether a cell of :func:`table2`'s ``data`` has every run of its grid stored."""
    return d["n_runs"] > 0 and not d["n_missing"]


def _shown(d: dict[str, Any], partial: bool = True) -> str:
    """A cell of :func:`table2`'s ``data`` as the before-and-after table shows it: m_p with
    the seeds' range and the mark against the paper's, and the runs stored so far while the
    cell's grid is incomplete; without ``partial``, an incomplete cell shows those runs
    only (``3 of 24 runs``): the best of part of a grid is not its best run."""
    if not partial and not _complete(d):
        return f"{d['n_runs']} of {d['n_runs'] + d['n_missing']} runs"
    text = shown_text(d["status"], d["m_p"], d["m_p_seeds"])
    if d["status"] not in ("missing", "diverged"):
        text = f"{text} {MARK[d['agreement']]}".rstrip()
    if d["n_missing"] and d["n_runs"]:
        text += f" ({d['n_runs']} of {d['n_runs'] + d['n_missing']} runs)"
    return text


def table2_before_after(P: Profile, root=None, models=paper1.TABLE2_MODELS,
                        partial: bool = True) -> Table:
    """Table 2's cells of the models the wider d_model changes (:func:`widened_models`),
    before (``P.track_d_model``) and after (``P.track_d_model_wide``) with one grid and
    protocol otherwise: per cell the paper's m_p, ours at each width with its mark, and
    how many of the cell's ok runs never passed length 60. ``partial`` (``sst report``,
    to watch a sweep): a cell whose grid is incomplete shows the best of its runs so far;
    without (the book), only how many are stored. ``data`` per cell: ``before`` and
    ``after`` (:func:`table2`'s data), ``complete`` (the wide cell has every run)."""
    models = widened_models(models)
    before = table2(P, root, models)
    wide_table = table2(P, root, models, wide=True)
    after = {(d["model"], d["group"], d["n_layers"]): d for d in wide_table.data}
    narrow, wide = P.track_d_model, P.track_d_model_wide
    cols = ["model", "group", "layers", "paper", f"d_model {narrow}", f"d_model {wide}",
            "never passed 60"]
    rows, data = [], []
    for b in before.data:
        a = after[(b["model"], b["group"], b["n_layers"])]
        never = " → ".join(f"{d['never_60']} of {_ok_runs(d)}"
                           if _ok_runs(d) and (partial or _complete(d)) else "—"
                           for d in (b, a))
        rows.append([label_name(b["model"]), b["group"], b["n_layers"],
                     fmt(b["paper"]) if b["paper_reported"] else "—", _shown(b, partial),
                     _shown(a, partial), never])
        data.append({"model": b["model"], "group": b["group"], "n_layers": b["n_layers"],
                     "paper": b["paper"], "paper_reported": b["paper_reported"],
                     "before": b, "after": a, "complete": _complete(a)})
    n = before_after_numbers(data)
    note = (f"The same grid and protocol at d_model {narrow} (before) and {wide} (after), "
            "for the models with a residual stream; the RNN family has none, and its runs "
            "are the same at both. Cells: best m_p over the grid [lowest–highest over the "
            "best setting's seeds], ✓ agrees with the paper's, ≈ one evaluated length apart, "
            "✗ differs; "
            + ("(k of n runs) while a cell's grid is incomplete. " if partial else
               "a cell whose grid is incomplete says how many of its runs are stored, and "
               "is read once all are. ")
            + "Never passed 60: of "
            "a cell's ok runs, those whose curriculum never passed the training length. "
            f"Of the {n['class_cells']} cells the paper reports and that are complete at "
            "both widths, agreeing by class "
            f"({' / '.join(M_P_CLASSES)}): {n['by_class_before']} before, "
            f"{n['by_class_after']} after; exactly: {n['agree_before']} before, "
            f"{n['agree_after']} after. {n['complete']} of {n['cells']} cells are complete "
            f"at d_model {wide}.")
    ids = list(dict.fromkeys(before.records + wide_table.records))
    return Table(f"Table 2 before and after: d_model {narrow} and {wide}", cols, rows, note,
                 ids, data)


def before_after_numbers(data: Sequence[dict[str, Any]]) -> dict[str, int]:
    """:func:`table2_before_after`'s ``data`` in counts: the ``cells``, those ``complete``
    at the wider d_model, and of the ``class_cells`` (reported by the paper, complete at
    both widths) those agreeing by class and exactly before and after; the runs that never
    passed 60 before and after (``never_60_before``, ``never_60_after``) over the ok runs
    (``ok_before``, ``ok_after``); the runs stored at the wider d_model (``stored_after``,
    failed ones too) of the ``runs_after`` its grid has. A comparison counts complete cells
    only: a cell with part of its grid has not yet had its best run."""
    both = [d for d in data if d["paper_reported"] and d["complete"]
            and d["before"]["n_runs"] and not d["before"]["n_missing"]]
    out = {"cells": len(data), "complete": sum(d["complete"] for d in data),
           "class_cells": len(both)}
    for when in ("before", "after"):
        out[f"by_class_{when}"] = sum(bool(d[when]["class_agreement"]) for d in both)
        out[f"agree_{when}"] = sum(d[when]["agreement"] == "agree" for d in both)
        out[f"never_60_{when}"] = sum(d[when]["never_60"] for d in data)
        out[f"ok_{when}"] = sum(_ok_runs(d[when]) for d in data)
    out["stored_after"] = sum(d["after"]["n_runs"] for d in data)
    out["runs_after"] = out["stored_after"] + sum(d["after"]["n_missing"] for d in data)
    return out


DIVERGED = "diverged"  # a run of best_of_k's draw that gave no m_p (ranks below a failure)


def _draw_rank(m_p: int | None | str) -> int:
    return -2 if m_p == DIVERGED else _rank(m_p)


def draw_value(record: dict[str, Any]) -> int | None | str:
    """What a stored run gives a draw of :func:`best_of_k`: its m_p, or :data:`DIVERGED`."""
    return record["metrics"]["m_p"] if record["status"] == "ok" else DIVERGED


def best_of_k(values: Sequence[int | None | str], k: int) -> dict[int | None | str, float]:
    """The distribution of the best m_p of ``k`` runs drawn at random, without replacement
    and all subsets equally likely, from a cell's runs ``values`` (None: a failure, below
    every length; :data:`DIVERGED`: a run that diverged, below a failure):
    ``{m_p: probability}``. Exact: the best is at most ``v`` with probability
    C(#runs <= v, k) / C(n, k). ``k`` at least 1 and at most ``len(values)``."""
    from math import comb

    n = len(values)
    if not 1 <= k <= n:
        raise ValueError(f"k={k}: draw between 1 and the cell's {n} runs")
    ranked = sorted(values, key=_draw_rank)
    out: dict[int | None | str, float] = {}
    below = 0  # runs strictly below the current value
    for v in dict.fromkeys(ranked):  # distinct values, ascending
        at_most = below + ranked.count(v)
        out[v] = (comb(at_most, k) - comb(below, k)) / comb(n, k)
        below = at_most
    return out


def table2_runs_needed(P: Profile, root=None, models=paper1.TABLE2_MODELS,
                       ks: Sequence[int] | None = None) -> Table:
    """How Table 2's agreement with the paper depends on the number of runs per cell.

    For ``k`` runs per cell, drawn at random from each cell's stored grid (all subsets of
    ``k`` equally likely; :func:`best_of_k`), the expected number of reported cells whose
    best m_p equals the paper's and whose class (:func:`m_p_class`) does, and the expected
    compute of those runs (``k`` / n of each cell's stored compute). At ``k`` = n each cell
    draws its whole grid, and the counts are Table 2's. A run that diverged counts as a
    draw that gives no m_p; a cell whose draw holds nothing else agrees with nothing.
    ``ks`` defaults to 1, 2, 3, 6, 12, ... up to the largest grid, and that grid's size."""
    cells: dict[tuple, list] = {}
    for cfg, rec in table2_stored(P, root, models):
        cells.setdefault((cfg.model, cfg.group, cfg.n_layers), []).append(rec)
    reported = {key: paper_values.TABLE2[key] for key in cells
                if paper_values.TABLE2.get(key, "missing") != "missing"}
    n_max = max((len(recs) for recs in cells.values()), default=0)
    if ks is None:  # 1, 2, then 3 doubled (3, 6, 12, ...) below the largest grid, and it
        ks, k = [1, 2], 3
        while k < n_max:
            ks, k = ks + [k], 2 * k
        ks = sorted({k for k in ks if k < n_max} | ({n_max} if n_max else set()))
    cell_values = {key: [draw_value(r) for r in recs] for key, recs in cells.items()}
    # cells whose best m_p only one run of the grid reaches
    single = sum(1 for key in reported
                 if cell_values[key].count(max(cell_values[key], key=_draw_rank)) == 1)
    rows, data = [], []
    for k in ks:
        exact = by_class = hours = 0.0
        for key, recs in cells.items():
            n = len(recs)
            draw = min(k, n)
            hours += draw / n * sum(run_compute_s(r) for r in recs) / 3600
            if key not in reported:
                continue
            dist = best_of_k(cell_values[key], draw)
            paper = reported[key]
            exact += dist.get(paper, 0.0)
            by_class += sum(p for v, p in dist.items()
                            if v != DIVERGED and m_p_class(v) == m_p_class(paper))
        rows.append([k, f"{exact:.1f}", f"{by_class:.1f}", f"{hours:.1f}"])
        data.append({"k": k, "exact": exact, "by_class": by_class, "compute_h": hours,
                     "reported": len(reported), "cells_best_in_one_run": single})
    note = (f"Expected agreement with the paper over its {len(reported)} reported cells "
            f"computed here, when each cell keeps k of its stored runs drawn at random (exact: "
            f"every subset of k equally likely); compute: the expected single-thread hours of "
            f"those runs (a stack's wall time shared by its runs). The last row is the whole "
            f"grid, Table 2 itself. {single} of the {len(reported)} cells reach their best m_p "
            f"in only one run of their grid. A random subset of runs is not a smaller grid "
            f"(it can keep two seeds of one setting and drop another setting), and nothing here "
            f"says what more runs than the grid's would give.")
    return Table("Table 2's agreement against the number of runs per cell",
                 ["runs per cell (k)", "agree exactly", "agree by class", "compute (h)"],
                 rows, note, [r["run_id"] for recs in cells.values() for r in recs], data)


def grid_slices(P: Profile) -> list[tuple[str, Any]]:
    """The one-value slices of Table 2's grid, ``(label, keep(cfg))``: the whole grid first,
    then for each axis with more than one value (state size by its position in the model's
    own list, :func:`sst_core.experiments.paper1.d_state_grid`; learning rate; schedule;
    seed) each of its values alone."""
    out: list[tuple[str, Any]] = [("whole grid", lambda c: True)]
    if len(P.track_d_states) > 1 or len(P.track_rnn_widths) > 1:  # each model's own list
        for end, label in ((0, "smaller"), (-1, "larger")):
            out.append((f"{label} state (N {P.track_d_states[end]}, RNN width "
                        f"{P.track_rnn_widths[end]})",
                        lambda c, end=end: c.d_state == paper1.d_state_grid(P, c.model)[end]))
    for axis, values, name in (("lr", P.track_lrs, "lr {}"),
                               ("schedule", P.track_schedules, "{} schedule"),
                               ("seed", P.track_seeds, "seed {}")):
        if len(values) > 1:
            out += [(name.format(v), lambda c, axis=axis, v=v: getattr(c, axis) == v)
                    for v in values]
    return out


def table2_slices(P: Profile, root=None, models=paper1.TABLE2_MODELS) -> Table:
    """Table 2 on each one-value slice of its grid (:func:`grid_slices`): keeping only the
    runs at one state size, one learning rate, one schedule or one seed, the best m_p of
    each cell and how many of the paper's reported cells agree with it, exactly and by
    class (:func:`agreement_counts`, Table 2's rule: a cell whose runs kept all diverged is
    not counted), with the runs per cell and the compute of the slice's runs. The whole
    grid's row is Table 2's."""
    runs = table2_stored(P, root, models)
    rows, data = [], []
    for label, keep in grid_slices(P):
        kept = [(cfg, rec) for cfg, rec in runs if keep(cfg)]
        cells: dict[tuple, list[Any]] = {}
        for cfg, rec in kept:
            cells.setdefault((cfg.model, cfg.group, cfg.n_layers), []).append(draw_value(rec))
        hours = sum(run_compute_s(rec) for _, rec in kept) / 3600
        # each cell's best, counted by Table 2's own rule (a diverged best is no cell)
        best = {key: max(values, key=_draw_rank) for key, values in cells.items()}
        counts = agreement_counts([
            {"paper_reported": paper_values.TABLE2.get(key, "missing") != "missing",
             "status": "diverged" if m_p == DIVERGED else "fail" if m_p is None else "ok",
             "m_p": m_p, "paper": paper_values.TABLE2.get(key)} for key, m_p in best.items()])
        exact, by_class, reported = counts["exact"], counts["by_class"], counts["reported"]
        per_cell = len(kept) / len(cells) if cells else 0.0
        rows.append([label, f"{per_cell:g}", exact, by_class, f"{hours:.1f}"])
        data.append({"slice": label, "runs_per_cell": per_cell, "exact": exact,
                     "by_class": by_class, "reported": reported, "compute_h": hours})
    note = ("Table 2 from one value of one axis of its grid at a time: the best m_p of each "
            "cell over the runs kept, and how many of the paper's reported cells computed here "
            "agree with it; compute: the single-thread hours of the runs kept (a stack's wall "
            "time shared by its runs). The state size is the SSMs' N and the RNNs' width.")
    return Table("Table 2 on slices of its grid", ["runs kept", "runs per cell", "agree exactly",
                                                   "agree by class", "compute (h)"],
                 rows, note, [rec["run_id"] for _, rec in runs], data)


def retrain_pairs(cfgs, root=None) -> list[dict[str, Any]]:
    """Every pair (a replaced record, the record that replaced it) of the tracking runs
    ``cfgs`` that one version of the experiment made twice (same ``version``;
    :mod:`sst_core.store.replaced`): the run's label, group and seed, m_p and the stopping
    step of each, and how many evaluated lengths apart the two m_p are (a failure counts
    as one length below the shortest)."""
    from sst_core.reports import stored_record
    from sst_core.store.replaced import replaced_records

    out = []
    for cfg in cfgs:
        old = [r for r in replaced_records(cfg, root) if r["status"] == "ok"]
        new = stored_record(cfg, root) if old else None
        if new is None or new["status"] != "ok":
            continue
        for r in old:
            # another version, or the stored record itself (kept before a recomputation
            # that has not finished yet)
            if (r.get("version", 0) != new.get("version", 0)
                    or r.get("created_utc") == new.get("created_utc")):
                continue
            a, b = r["metrics"]["m_p"], new["metrics"]["m_p"]
            out.append({"label": run_label(new["config"]), "group": cfg.group,
                        "seed": cfg.seed, "m_p_before": a, "m_p_after": b,
                        "steps_before": r["metrics"].get("steps"),
                        "steps_after": new["metrics"].get("steps"),
                        "lengths_apart": lengths_apart(a, b, cfg.eval_lengths)})
    return out


def seed_pairs(cfgs, root=None) -> dict[tuple[str, str], list[int]]:
    """How many evaluated lengths apart the m_p of two seeds of one setting are: every pair
    of stored ``ok`` records of the tracking runs ``cfgs`` whose configs differ only in the
    seed (its initialisation and words), by ``(group, label)``; the yardstick beside
    :func:`retrain_pairs`."""
    from itertools import combinations

    from sst_core.reports import stored_records
    from sst_core.reports.select import grid_point

    points: dict[str, list[dict[str, Any]]] = {}
    for rec in stored_records(cfgs, root):
        if rec["status"] == "ok":
            points.setdefault(grid_point(rec), []).append(rec)
    out: dict[tuple[str, str], list[int]] = {}
    for recs in points.values():
        if len(recs) < 2:
            continue
        cfg = recs[0]["config"]
        apart = [lengths_apart(a["metrics"]["m_p"], b["metrics"]["m_p"], cfg["eval_lengths"])
                 for a, b in combinations(recs, 2)]
        out.setdefault((cfg["group"], run_label(cfg)), []).extend(
            x for x in apart if x is not None)
    return out


def apart_counts(apart: Sequence[int]) -> dict[str, int]:
    """How many of ``apart`` (evaluated lengths between two m_p) are 0, 1 and more."""
    same, one = sum(x == 0 for x in apart), sum(x == 1 for x in apart)
    return {"n": len(apart), "same": same, "one": one, "further": len(apart) - same - one}


def shares(apart: Sequence[int]) -> str:
    """``same / one / further`` apart as percentages of ``apart``, with its size."""
    c = apart_counts(apart)
    if not c["n"]:
        return "—"
    return (" / ".join(f"{100 * c[k] / c['n']:.0f}" for k in ("same", "one", "further"))
            + f" % of {c['n']}")


def tracking_runs(P: Profile) -> list[Any]:
    """The training runs of Table 2 and of the Figure 4 sweep under ``P``, each once."""
    from sst_core.experiments.registry import sweep_configs
    from sst_core.spec.configs import TrackingConfig

    seen: set[str] = set()
    return [c for sweep in ("table2", "figure4") for c in sweep_configs(sweep, P, seen)
            if isinstance(c, TrackingConfig)]


def retrain_noise(P: Profile, root=None) -> Table:
    """How far one run moves when the same code trains the same config again: the Table 2
    and Figure 4 runs whose weights were lost and which the sweep trained again
    (:func:`retrain_pairs`), per group and architecture."""
    runs = tracking_runs(P)
    pairs = retrain_pairs(runs, root)
    seeds = seed_pairs(runs, root) if pairs else {}
    cols = ["group", "architecture", "trained again", "same stopping step",
            "m_p trained again: same / one / further apart", "largest move",
            "two seeds: same / one / further apart"]
    rows, data = [], []
    cells: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for d in pairs:
        cells.setdefault((d["group"], d["label"]), []).append(d)
    for key in sorted(cells) + [("all", "all")]:
        ds = pairs if key == ("all", "all") else cells[key]
        if not ds:
            continue
        apart = [d["lengths_apart"] for d in ds if d["lengths_apart"] is not None]
        worst = max(ds, key=lambda d: d["lengths_apart"] or 0)
        between = ([x for k in cells for x in seeds.get(k, [])] if key == ("all", "all")
                   else seeds.get(key, []))
        again = apart_counts(apart)
        row = {"group": key[0], "label": key[1], "n": len(ds),
               "same_steps": sum(d["steps_before"] == d["steps_after"] for d in ds),
               "same_m_p": again["same"], "one_apart": again["one"],
               "further": again["further"],
               "largest": {"before": worst["m_p_before"], "after": worst["m_p_after"],
                           "lengths_apart": worst["lengths_apart"]},
               "seed_pairs": apart_counts(between)}
        data.append(row)
        rows.append([row["group"], label_name(row["label"]) if key[1] != "all" else "all",
                     row["n"], row["same_steps"], shares(apart),
                     "—" if not worst["lengths_apart"] else
                     f"{fmt(worst['m_p_before'])} → {fmt(worst['m_p_after'])}",
                     shares(between)])
    note = ("Runs trained twice by the same code on the same config (same seed, words and "
            "settings, one torch thread, on machines of the same kind in different sessions): "
            "when a tracker's weights are lost, the sweep trains it again for the analyses "
            "that read it and keeps the record it replaces (`results/PROFILE/tracking/"
            "replaced/`). What differs is float rounding, which training amplifies. Trackers "
            "train in stacks (`sst_core.training.stacked`): the products run over the whole "
            "stack, its words padded to the longest curriculum length, so a run's rounding "
            "depends on which runs share its stack and when they leave it. The same stack "
            "repeats its runs bit for bit, but a tracker trained again shares its stack with "
            "other runs than the first time ('stacked' in the record: the stack's size at "
            "the start); the processor can add to it (records name it in `host.cpu`). How far "
            "m_p moves between the two is the noise of a single run, a floor under every "
            "comparison of two cells. Two seeds: every pair of stored runs of the same "
            "architecture and setting (state size, learning rate, schedule) that differ only in "
            "the seed (initialisation and words), the yardstick: where training again moves m_p "
            "as often and as far as another seed does, a single run's m_p is one draw of that "
            "spread. Lengths apart: steps on the evaluated lengths, 'fail' "
            "one below the shortest; a row only where runs were trained again.")
    return Table("How far one run moves when it is trained again", cols, rows, note,
                 [], data)


# -- where Table 2 differs from the paper, and what the records show about it -------------
# The evidence rules' thresholds, each fixed before looking at the cells it fires on: a
# measurement moves a cell (towards the paper's value) only when it moves it by more than
# Table 2's "close" (:data:`CLOSE_LENGTHS`).
# never_60 fires when at least this share of a lower cell's runs never passed 60: most of
# the grid the cell's best is taken over never trained at the length the table reads
NEVER_60_SHARE = 0.5
# the rules, in the order the table shows them: runs that never passed 60, the width
# ablation's trend, the stopping point, retraining noise, the spread over the grid
EVIDENCE_RULES = ("never_60", "width", "stopping", "noise", "grid")
EVIDENCE_NAMES = {"never_60": "never passed 60", "width": "width", "stopping": "stopping point",
                  "noise": "noise", "grid": "grid"}
# the checkpoints the stopping rule reads every run of a cell at instead of Table 2's rule
# (the held-out criterion where it was met, else the end of the budget)
STOPPING_POINTS = ("passed_60", "end")


def disagreement_kind(m_p: int | None, paper: int | None) -> str | None:
    """How a cell's m_p differs from the paper's: ``class`` (another class,
    :func:`m_p_class`: a disagreement by Table 2's class rule), ``exact`` (same class,
    another value: a disagreement only by the exact rule) or None (the same value)."""
    if m_p == paper:
        return None
    return "class" if m_p_class(m_p) != m_p_class(paper) else "exact"


def _toward(before: int | None, after: int | None, paper: int | None,
            lengths: Sequence[int]) -> int | None:
    """How many evaluated lengths closer to ``paper`` m_p gets from ``before`` to
    ``after`` (negative: further away); None where one is not an evaluated length."""
    a, b = lengths_apart(before, paper, lengths), lengths_apart(after, paper, lengths)
    return None if a is None or b is None else a - b


def never_60_evidence(runs: Sequence[dict[str, Any]], lower: bool) -> dict[str, Any]:
    """Rule ``never_60``: of a cell's ``ok`` runs, those whose curriculum never passed 60
    (no ``passed_60`` checkpoint), where their curricula stopped (``final_train_length``)
    and why (``stopped_as``: the step cap ``max_steps`` or the ``budget``). Fires for a
    cell below the paper's (``lower``) when at least :data:`NEVER_60_SHARE` of its runs
    never passed 60."""
    from collections import Counter

    never = [r for r in runs if not (r["metrics"].get("checkpoints") or {}).get("passed_60")]
    at = Counter(r["metrics"].get("final_train_length") for r in never)
    why = Counter(r["metrics"].get("stopped_as") for r in never)
    return {"fires": bool(lower and runs and len(never) >= NEVER_60_SHARE * len(runs)),
            "n": len(runs), "never": len(never),
            "final_train_length": [[k, at[k]] for k in sorted(at, key=_rank)],
            "stopped_as": [[k, why[k]] for k in sorted(why, key=str)]}


def width_evidence(m_p_by_width: dict[int, int | None] | None, our_width: int,
                   paper: int | None, lengths: Sequence[int]) -> dict[str, Any]:
    """Rule ``width``: the width ablation's best m_p of the cell at each d_model
    (``m_p_by_width``; None or without ``our_width`` and a wider one: ``covered`` False).
    Fires when m_p at the widest width is more than :data:`CLOSE_LENGTHS` evaluated
    lengths closer to the paper's value than at ``our_width`` (Table 2's d_model)."""
    widths = sorted(m_p_by_width or {})
    if our_width not in widths or widths[-1] <= our_width:
        return {"fires": False, "covered": False, "m_p": [], "toward_paper": None}
    toward = _toward(m_p_by_width[our_width], m_p_by_width[widths[-1]], paper, lengths)
    return {"fires": toward is not None and toward > CLOSE_LENGTHS, "covered": True,
            "m_p": [[w, m_p_by_width[w]] for w in widths], "toward_paper": toward}


def run_m_p_at(record: dict[str, Any], point: str) -> int | None:
    """A run's m_p at a checkpoint (:data:`STOPPING_POINTS`); a run that never got there
    (its curriculum never passed 60) stopped at the end of its budget: its m_p there."""
    cp = record["metrics"].get("checkpoints") or {}
    at = cp.get(point) or cp.get("end")
    return at["m_p"] if at else record["metrics"]["m_p"]


def stopping_evidence(runs: Sequence[dict[str, Any]], m_p: int | None, paper: int | None,
                      lengths: Sequence[int]) -> dict[str, Any]:
    """Rule ``stopping``: the cell's best m_p when every run is read at one checkpoint of
    :data:`STOPPING_POINTS` (:func:`run_m_p_at`) instead of Table 2's stopping rule. Fires
    when one of them is more than :data:`CLOSE_LENGTHS` evaluated lengths closer to the
    paper's value than the table's ``m_p``."""
    best = {k: max((run_m_p_at(r, k) for r in runs), key=_rank, default=None)
            for k in STOPPING_POINTS}
    toward = {k: _toward(m_p, v, paper, lengths) if runs else None for k, v in best.items()}
    return {"fires": any(t is not None and t > CLOSE_LENGTHS for t in toward.values()),
            "best": best, "toward_paper": toward}


def noise_evidence(pairs: dict[str, int] | None, m_p: int | None, paper: int | None,
                   lengths: Sequence[int]) -> dict[str, Any]:
    """Rule ``noise``: how far runs of the cell's architecture on its group moved when the
    same code trained them again (``pairs``: ``n`` pairs, ``moved``, ``max_apart``
    evaluated lengths, from :func:`retrain_pairs`; None or no pair: not ``measured``).
    Fires when the cell is no more evaluated lengths from the paper's value than the
    largest such move."""
    apart = lengths_apart(m_p, paper, lengths)
    if not pairs or not pairs["n"]:
        return {"fires": False, "measured": False, "n": 0, "moved": 0, "max_apart": None}
    return {"fires": apart is not None and apart <= pairs["max_apart"], "measured": True,
            "n": pairs["n"], "moved": pairs["moved"], "max_apart": pairs["max_apart"]}


def grid_evidence(grid: dict[str, Any], paper: int | None) -> dict[str, Any]:
    """Rule ``grid``: the spread of m_p over the cell's runs (:func:`grid_spread`). Fires
    when the paper's value lies inside it (lowest to highest, 'fail' below every length):
    our grid gives the paper's value too, and the cell differs by which run is the best."""
    inside = bool(grid["n"]) and _rank(grid["min"]) <= _rank(paper) <= _rank(grid["max"])
    return {"fires": inside, **grid}


def cell_evidence(m_p: int | None, paper: int | None, runs: Sequence[dict[str, Any]],
                  grid: dict[str, Any], lengths: Sequence[int], our_width: int,
                  width: dict[int, int | None] | None = None,
                  pairs: dict[str, int] | None = None) -> dict[str, dict[str, Any]]:
    """Every rule of :data:`EVIDENCE_RULES` on one Table 2 cell (its best ``m_p``, the
    paper's value, its ``ok`` run records, their :func:`grid_spread`), with the width
    ablation's m_p per d_model of the cell (``width``) and its retraining pairs
    (``pairs``): rule -> its measurement and whether it ``fires``."""
    lower = _rank(m_p) < _rank(paper)
    return {"never_60": never_60_evidence(runs, lower),
            "width": width_evidence(width, our_width, paper, lengths),
            "stopping": stopping_evidence(runs, m_p, paper, lengths),
            "noise": noise_evidence(pairs, m_p, paper, lengths),
            "grid": grid_evidence(grid, paper)}


# how a run ended (its record's ``stopped_as``) in a table's words
STOP_NAMES = {"max_steps": "step cap", "budget": "budget", "plateau": "plateau"}


def _evidence_cells(rules: dict[str, dict[str, Any]]) -> list[str]:
    """The measurement columns of a row of :func:`table2_disagreements`."""
    n6, w, s, n, g = (rules[k] for k in EVIDENCE_RULES)
    at = ", ".join(f"{fmt(k) if k is not None else '—'}: {v}" for k, v in n6["final_train_length"])
    why = ", ".join(f"{STOP_NAMES.get(k, k)}: {v}" for k, v in n6["stopped_as"])
    return [f"{n6['never']} of {n6['n']}" + (f" (at {at}; {why})" if n6["never"] else ""),
            ", ".join(f"{d}{'*' if d in w.get('pilot', ()) else ''}: {fmt(v)}"
                      for d, v in w["m_p"]) if w["covered"] else "not covered",
            ", ".join(f"{k.replace('_', ' ')}: {fmt(v)}" for k, v in s["best"].items()),
            f"{n['max_apart']} ({n['moved']} of {n['n']} moved)" if n["measured"]
            else "not measured",
            f"{fmt(g['median'])} [{fmt(g['min'])}–{fmt(g['max'])}]" if g["n"] else "—"]


def table2_disagreements(P: Profile, root=None) -> Table:
    """Every Table 2 cell whose best m_p is not the paper's: the disagreements by class
    (:func:`disagreement_kind`; Table 2's class rule, :func:`agreement_counts`) and those
    only by the exact value, with how many evaluated lengths apart each is, and for each
    the rules of :data:`EVIDENCE_RULES` (:func:`cell_evidence`) with their measurements;
    ``reasons``: the rules that fire, empty where none does (unexplained)."""
    from sst_core.reports.pilots import pilot_width_runs

    t2 = table2(P, root)
    width = width_ablation(P, root) if P.width_d_models else None
    wider: dict[tuple[str, str, int], dict[int, int | None]] = {}
    for d in (width.data if width else []):
        if d["status"] == "ok":  # the ablation has one layer
            wider.setdefault((d["model"], d["group"], 1), {})[d["d_model"]] = d["m_p"]
    # the pilots' widths (their cells' runs at d_model 64 and 128), where the ablation has
    # none: the only width measurement of a two-layer cell, and the widest of the others
    pilot_widths: set[tuple[str, str, int, int]] = set()
    for cell, by_width in pilot_width_runs(P, root).items():
        for w, recs in by_width.items():
            if w not in wider.get(cell, {}):
                wider.setdefault(cell, {})[w] = max((r["metrics"]["m_p"] for r in recs),
                                                    key=_rank)
                pilot_widths.add((*cell, w))
    noise: dict[tuple[str, str], dict[str, int]] = {}
    for pair in retrain_pairs(tracking_runs(P), root):  # the architecture's runs
        n = noise.setdefault((pair["group"], pair["label"]), {"n": 0, "moved": 0,
                                                              "max_apart": 0})
        n["n"] += 1
        n["moved"] += bool(pair["lengths_apart"])
        n["max_apart"] = max(n["max_apart"], pair["lengths_apart"] or 0)
    runs: dict[tuple, list[dict[str, Any]]] = {}
    for cfg, rec in table2_stored(P, root):
        if rec["status"] == "ok":
            runs.setdefault((cfg.model, cfg.group, cfg.n_layers), []).append(rec)
    lengths = P.track_eval_lengths
    cols = ["cell", "ours / paper", "differs", "reasons", "never passed 60 (where stopped)",
            "width: m_p by d_model", "best m_p read at", "noise: largest retrain move",
            "grid: median [lowest–highest]"]
    rows, data = [], []
    for d in t2.data:
        if not d["paper_reported"] or d["status"] not in ("ok", "fail"):
            continue
        kind = disagreement_kind(d["m_p"], d["paper"])
        if kind is None:
            continue
        key = (d["model"], d["group"], d["n_layers"])
        label = run_label({"model": d["model"], "n_layers": d["n_layers"]})
        rules = cell_evidence(d["m_p"], d["paper"], runs.get(key, []), d["grid"], lengths,
                              P.track_d_model, wider.get(key), noise.get((d["group"], label)))
        rules["width"]["pilot"] = sorted(w for *c, w in pilot_widths if tuple(c) == key)
        reasons = [k for k in EVIDENCE_RULES if rules[k]["fires"]]
        apart = lengths_apart(d["m_p"], d["paper"], lengths)
        rows.append([f"{label_name(d['model'])} on {d['group']}, L{d['n_layers']}",
                     f"{fmt(d['m_p'])} / {fmt(d['paper'])}",
                     f"{kind}, {apart} apart",
                     ", ".join(EVIDENCE_NAMES[k] for k in reasons) or "unexplained",
                     *_evidence_cells(rules)])
        data.append({"model": d["model"], "group": d["group"], "n_layers": d["n_layers"],
                     "m_p": d["m_p"], "paper": d["paper"], "kind": kind,
                     "lengths_apart": apart, "one_apart": apart == 1,
                     "direction": "lower" if _rank(d["m_p"]) < _rank(d["paper"]) else "higher",
                     "rules": rules, "reasons": reasons})
    note = ("Every Table 2 cell whose best m_p is not the paper's: 'class' where the m_p class "
            f"differs ({' / '.join(M_P_CLASSES)}; Table 2's count by class), 'exact' where only "
            "the value does, and how many evaluated lengths apart ('fail' one below 60). "
            "A reason is named only where its measurement says so: never passed 60, at least "
            f"{NEVER_60_SHARE:.0%} of the cell's runs never passed length 60 in training (the "
            "cell below the paper's; where their curricula stopped and why: the step cap "
            "or the budget); width, the width ablation (one layer, "
            f"{', '.join(map(str, P.width_d_models))}; a width marked * is the pilots' "
            "(`sst report pilots_60`: the cell's first state size, schedule and learning "
            "rate, every seed), the only width measurement of a two-layer cell) moves m_p "
            f"from d_model {P.track_d_model} to its widest by more than {CLOSE_LENGTHS} "
            "evaluated length towards the paper's; stopping point, reading every run where its curriculum first "
            "passed 60 or at the end of its budget (instead of at the held-out criterion) "
            f"moves the best by more than {CLOSE_LENGTHS} evaluated length towards it; noise, "
            "the cell is no further from the paper's value than the largest move of a run of "
            "its architecture on its group that the same code trained again "
            "(`sst report retrain_noise`); grid, the paper's value lies inside the range of "
            "the cell's runs. 'unexplained': no rule fires. The paper's protocol: "
            f"{paper_values.TABLE2_RUNS_PER_CELL} runs per cell at d_model "
            f"{paper_values.TABLE2_D_MODEL}.")
    return Table("Where Table 2 differs from the paper, and what the records show", cols, rows,
                 note, t2.records, data)


def width_ablation(P: Profile, root=None) -> Table:
    """m_p against d_model (:func:`sst_core.experiments.paper1.width_grid`): per model,
    group and width the best m_p over learning rates and seeds, with the seed spread at
    the best learning rate, beside the paper's Table 2 value (at d_model 698)."""
    cfgs = paper1.width_grid(P)
    ok, ids, status = group_records(cfgs, lambda c: (c.model, c.group, c.d_model), root)
    records = [rec for runs in ok.values() for _, rec in runs]
    best = best_per_cell(records, lambda r: (r["config"]["model"], r["config"]["group"],
                                             r["config"]["d_model"]))
    widths = P.width_d_models
    cols = ["model", "group"] + [f"d_model {w}" for w in widths] + ["paper (d_model 698)"]
    rows, data = [], []
    for m in paper1.WIDTH_MODELS:
        for g in paper1.WIDTH_GROUPS:
            paper = paper_values.TABLE2.get((m, g, 1), "missing")
            row = [label_name(m), g]
            for w in widths:
                r = best.get((m, g, w))
                st = status.get((m, g, w), {"missing": 0, "failed": 0, "ok": 0})
                if r is None:
                    row.append("missing" if st["missing"] else "diverged")
                    data.append({"model": m, "group": g, "d_model": w, "m_p": None,
                                 "status": "missing" if st["missing"] else "diverged",
                                 "m_p_seeds": [], "paper": paper})
                    continue
                seeds = seeds_of(records, r)
                row.append(fmt(r["metrics"]["m_p"]) + seed_range(seeds))
                data.append({"model": m, "group": g, "d_model": w, "m_p": r["metrics"]["m_p"],
                             "status": "ok", "m_p_seeds": seeds, "lr": r["config"]["lr"],
                             "paper": paper})
            row.append("—" if paper == "missing" else fmt(paper))
            rows.append(row)
    note = ("One layer, N = " + str(P.track_d_states[0]) + ", schedule " + P.track_schedules[0]
            + "; best m_p over the learning rates and seeds of each width, [min–max over seeds] "
            "at the best learning rate where they differ. The paper's models are parameter-matched at d_model "
            f"{paper_values.TABLE2_D_MODEL}.")
    return Table("Width ablation: does the gap to the paper close with d_model?", cols, rows,
                 note, ids, data)


def width_gap(table: Table, widths: Sequence[int]) -> dict[str, Any]:
    """The width ablation's answer (:func:`width_ablation`'s ``table`` over ``widths``), per
    model-group pair (labelled ``"model group"``): ``rising``, the pairs whose m_p at the
    widest width is above that at the narrowest; of the pairs the paper reports,
    ``reached`` (the paper's value reached at the narrowest width already), ``closes``
    (reached at the widest only) and ``stays`` (not reached at the widest); ``pairs``, the
    pairs with both widths stored, and ``incomplete``, those with a width missing."""
    by: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for d in table.data or []:
        by.setdefault((d["model"], d["group"]), {})[d["d_model"]] = d
    out: dict[str, Any] = {"pairs": 0, "incomplete": 0, "rising": [], "reached": [],
                           "closes": [], "stays": []}
    if not widths:
        return out
    for (model, group), cells in by.items():
        lo, hi = cells.get(widths[0]), cells.get(widths[-1])
        if lo is None or hi is None or "missing" in (lo["status"], hi["status"]):
            out["incomplete"] += 1
            continue
        out["pairs"] += 1
        label = f"{model} {group}"
        if _rank(hi["m_p"]) > _rank(lo["m_p"]):
            out["rising"].append(label)
        paper = hi["paper"]
        if paper == "missing":
            continue
        if _rank(lo["m_p"]) >= _rank(paper):
            out["reached"].append(label)
        elif _rank(hi["m_p"]) >= _rank(paper):
            out["closes"].append(label)
        else:
            out["stays"].append(label)
    return out


def longest_stall(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The most steps any run that passed 60 spent at one curriculum length before moving
    on (to the next length, or past 60): a plateau rule (``plateau_steps``) shorter than
    this would have cut that run although it went on to learn. ``steps`` None: no run
    passed 60."""
    out: dict[str, Any] = {"steps": None, "run_id": None, "model": None, "length": None,
                           "runs": 0}
    for r in records:
        m = r["metrics"] if r["status"] == "ok" else {}
        passed = ((m.get("checkpoints") or {}).get("passed_60") or {}).get("step")
        reached = m.get("length_reached_at_step") or {}
        if passed is None or not reached:
            continue
        out["runs"] += 1
        steps = sorted((int(k), v) for k, v in reached.items())
        ends = [v for _, v in steps[1:]] + [passed]
        for (length, start), end in zip(steps, ends):
            if out["steps"] is None or end - start > out["steps"]:
                out.update(steps=end - start, run_id=r["run_id"], length=length,
                           model=run_label(r["config"]))
    return out


# -- what the Table 2 chapter (notebooks/p1_table2.py) states in numbers -------------------
# Each function reads a report's typed ``data`` and returns the counts the chapter's prose
# glues; the sentences around them are the chapter's.

def table2_models(P: Profile, models=paper1.TABLE2_MODELS) -> Table:
    """The architectures of Table 2: each model's class, its recurrence per layer
    (the registry's summary) and its parameter count on S3 at the profile's width and
    the smallest state of its grid (:func:`sst_core.experiments.paper1.d_state_grid`)."""
    from sst_core.models.registry import REGISTRY, build

    rows, data = [], []
    for name in models:
        d_state = paper1.d_state_grid(P, name)[0]
        n_params = sum(p.numel() for p in build(name, 6, 6, d_model=P.track_d_model,
                                                d_state=d_state).parameters())
        cls = "affine" if expected_affine(name) else "state-dependent"
        rows.append([label_name(name), cls, f"`{REGISTRY[name].summary}`", f"{n_params:,}"])
        data.append({"model": name, "class": cls, "d_state": d_state, "parameters": n_params})
    return Table("The architectures of Table 2", ["model", "class", "recurrence (per layer)",
                                                  "parameters (S3, smallest state)"],
                 rows, f"d_model {P.track_d_model}.", [], data)


def table2_numbers(data: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Table 2 (:func:`table2`'s ``data``) in counts: of the ``cells`` the paper reports
    and that have runs, those that agree exactly (``agree``) and one evaluated length apart
    (``close``); ``by_class`` of the ``class_cells`` computed (:func:`agreement_counts`);
    the state-dependent cells with runs (``state_dependent``) and those that reach 1000
    (``state_dependent_1000``); the affine cells on S3 with runs (``affine_s3``) and those
    that reach 1000 (``affine_s3_1000``); and of those cells, the ones the paper reports
    (``paper_state_dependent``, ``paper_affine_s3``) and how many reach 1000 in its table
    (``paper_state_dependent_1000``, ``paper_affine_s3_1000``); the cells that agree
    because both fail (``fail_agree``) and of them those none of whose ok runs passed 60
    (``fail_never_60``: a failure to learn the training length)."""
    reported = [d for d in data if d["paper_reported"] and d["n_runs"]]
    counts = agreement_counts(data)
    state_dep = [d for d in data if not expected_affine(d["model"]) and d["n_runs"]]
    affine_s3 = [d for d in data
                 if expected_affine(d["model"]) and d["group"] == "S3" and d["n_runs"]]
    paper_sd = [d for d in state_dep if d["paper_reported"]]
    paper_s3 = [d for d in affine_s3 if d["paper_reported"]]
    fail_agree = [d for d in reported if d["agreement"] == "agree" and d["m_p"] is None]
    return {"cells": len(reported),
            "fail_agree": len(fail_agree),
            "fail_never_60": sum(0 < d.get("n_ok", 0) == d.get("never_60", 0)
                                 for d in fail_agree), "agree": sum(d["agreement"] == "agree" for d in reported),
            "paper_state_dependent": len(paper_sd),
            "paper_state_dependent_1000": sum(d["paper"] == 1000 for d in paper_sd),
            "paper_affine_s3": len(paper_s3),
            "paper_affine_s3_1000": sum(d["paper"] == 1000 for d in paper_s3),
            "close": sum(d["agreement"] == "close" for d in reported),
            "by_class": counts["by_class"], "class_cells": counts["reported"],
            "state_dependent": len(state_dep),
            "state_dependent_1000": sum(d["m_p"] == 1000 for d in state_dep),
            "affine_s3": len(affine_s3),
            "affine_s3_1000": sum(d["m_p"] == 1000 for d in affine_s3)}


def table3_numbers(data: Sequence[dict[str, Any]], group: str = "S3") -> dict[str, Any]:
    """Table 3 (:func:`table3`'s ``data``) in numbers: the ``rows`` with runs and those that
    ``agree``; the rows whose best run fails (``fail_rows``), of them those none of whose
    ok runs passed 60 (``fail_never_60``), the longest curriculum length any of their runs
    trained at (``fail_longest``, None without one) and the lowest and highest token
    accuracy at 60 over their runs (``fail_acc_lo``, ``fail_acc_hi``); and the accuracy
    of a uniform guess over ``group``'s states (``uniform_guess``)."""
    from sst_core.groups import get_group

    rows = [d for d in data if d["n_runs"]]
    fails = [d for d in rows if d["status"] == "fail"]
    acc = [a for d in fails for a in d.get("acc_60", [])]
    longest = [d["longest_trained"] for d in fails if d.get("longest_trained")]
    return {"rows": len(rows), "agree": sum(d["agreement"] == "agree" for d in rows),
            "fail_rows": len(fails),
            "fail_never_60": sum(0 < d.get("n_ok", 0) == d.get("never_60", 0) for d in fails),
            "fail_longest": max(longest, default=None),
            "fail_acc_lo": min(acc, default=None), "fail_acc_hi": max(acc, default=None),
            "uniform_guess": 1 / get_group(group).order}


def disagreement_numbers(data: Sequence[dict[str, Any]]) -> dict[str, int]:
    """The disagreements (:func:`table2_disagreements`'s ``data``) in counts: ``differs``
    in all, by ``class``, ``one_apart`` (the others one evaluated length apart); those the
    runs that never passed 60 explain (``never_60``); those no rule explains
    (``unexplained``); those the width ablation covers (``width_covered``) and those where
    it moves m_p towards the paper's (``width``)."""
    return {"differs": len(data), "class": sum(d["kind"] == "class" for d in data),
            "one_apart": sum(d["kind"] == "exact" and d["one_apart"] for d in data),
            "never_60": sum("never_60" in d["reasons"] for d in data),
            "unexplained": sum(not d["reasons"] for d in data),
            "width_covered": sum(d["rules"]["width"]["covered"] for d in data),
            "width": sum("width" in d["reasons"] for d in data)}


def retrain_numbers(data: Sequence[dict[str, Any]]) -> dict[str, int]:
    """The retraining noise (:func:`retrain_noise`'s ``data``) over every architecture:
    runs trained ``again`` and how many of them kept m_p (``same``), moved it one evaluated
    length (``one``) or further (``further``); pairs of two seeds of one setting
    (``seed_pairs``) and the same split of them (``seed_same``, ``seed_one``,
    ``seed_further``). All 0 where no run was trained again."""
    total = next((d for d in data if d["group"] == "all"), None)
    if total is None:
        return dict.fromkeys(("again", "same", "one", "further", "seed_pairs", "seed_same",
                              "seed_one", "seed_further"), 0)
    seeds = total["seed_pairs"]
    return {"again": total["n"], "same": total["same_m_p"], "one": total["one_apart"],
            "further": total["further"], "seed_pairs": seeds["n"], "seed_same": seeds["same"],
            "seed_one": seeds["one"], "seed_further": seeds["further"]}


def runs_needed_numbers(needed: Sequence[dict[str, Any]],
                        slices: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Table 2's agreement with one run per cell and with the whole grid
    (:func:`table2_runs_needed`'s ``data``: ``one_*`` and ``full_*`` of ``exact``,
    ``by_class`` and ``compute_h``; ``k_full`` runs per cell; ``best_in_one_run`` of the
    ``reported`` cells reach their best in one run only), and the lowest and highest
    agreement by class over the slices of the grid (:func:`table2_slices`'s ``data``, the
    whole grid aside: ``slice_lo``, ``slice_lo_name``, ``slice_hi``, ``slice_hi_name``)."""
    one, full = (needed[0], needed[-1]) if needed else ({}, {})
    out: dict[str, Any] = {"k_full": full.get("k", 0), "reported": full.get("reported", 0),
                           "best_in_one_run": full.get("cells_best_in_one_run", 0)}
    for name, row in (("one", one), ("full", full)):
        out.update({f"{name}_{k}": row.get(k, 0.0) for k in ("exact", "by_class", "compute_h")})
    parts = list(slices[1:] or slices)
    if parts:
        lo = min(parts, key=lambda d: (d["by_class"], d["exact"]))
        hi = max(parts, key=lambda d: (d["by_class"], d["exact"]))
        out.update(slice_lo=lo["by_class"], slice_lo_name=lo["slice"],
                   slice_hi=hi["by_class"], slice_hi_name=hi["slice"])
    else:
        out.update(slice_lo=0, slice_lo_name="—", slice_hi=0, slice_hi_name="—")
    return out


def pair_names(labels: Sequence[str]) -> str:
    """Model-group pairs of :func:`width_gap` (``"aussm C2"``) as readers read them:
    ``"AUSSM on C2; Mamba-3 on C6"``; "none" for none."""
    return "; ".join(f"{label_name(m)} on {g}" for m, g in
                     (label.split(" ") for label in labels)) or "none"
