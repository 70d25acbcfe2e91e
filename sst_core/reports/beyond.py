"""Tables of the "Beyond the papers" chapters, from stored records only.

- ``group_facts``: the groups' structure (element orders, classes, normal subgroups,
  solvability) that makes A5 the hard case;
- ``harder_groups``: Table 2's models on A4, A5 and C2xS3, with S3 beside them;
- ``figure4_groups``: Figure 4's statistics on S3 and on A5 side by side;
- ``label_free``: label-free against oracle T_cross and q(t);
- ``label_free_warning``: m_p predicted from lengths up to 60, and its error;
- ``spectra``: transition and return-map spectra with their memory horizons;
- ``spectra_predictors``: what the spectral summaries say about m_p;
- ``semi_affine``: the repaired models beside their affine originals;
- ``delta``: DeltaNet, DeltaProduct and torch's GRU / LSTM beside Table 2's models, with
  their S3 diagnostics (Theorem 1's return maps, Corollary 1's drift);
- ``delta_theory_check``: whether the measured and Corollary 1's crossing times predict the
  Householder models' m_p.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sst_core.experiments import beyond, paper1
from sst_core.models.registry import expected_affine
from sst_core.reports import Table, format_value, stored_records
from sst_core.reports.error_control import DRIFT_NOTE, PAPER_FIGURE4, figure4_stats
from sst_core.reports.paper1 import cell_text, fmt, summarise
from sst_core.reports.select import best_per_cell
from sst_core.spec.configs import config_dict
from sst_core.spec.names import model_name
from sst_core.spec.profiles import Profile

FACT_GROUPS = ("C2", "C6", "S3", "A4", "A5", "C2xS3")


def group_facts(P: Profile, root=None) -> Table:
    """Structure of Table 2's groups and the harder ones (computed, no records needed)."""
    from sst_core.groups import get_group, structure

    cols = ["group", "order", "abelian", "element orders (order: count)", "classes",
            "normal subgroup orders", "derived series", "solvable", "simple"]
    rows, data = [], []
    for name in FACT_GROUPS:
        s = structure(get_group(name))
        rows.append([name, s["order"], "yes" if s["abelian"] else "no",
                     ", ".join(f"{k}: {v}" for k, v in s["element_orders"].items()),
                     s["n_classes"], ", ".join(map(str, s["normal_subgroup_orders"])),
                     " > ".join(map(str, s["derived_series"])),
                     "yes" if s["solvable"] else "no", "yes" if s["simple"] else "no"])
        data.append(s)
    note = ("Computed from the multiplication tables (sst_core.groups.structure): conjugacy "
            "classes, normal subgroups as joins of normal closures, the derived series "
            "G > G' > G'' > ... (solvable: it reaches the trivial group). A5 is simple and "
            "not solvable: its only normal subgroups are {e} and A5.")
    return Table("The groups: what makes A5 different", cols, rows, note, [], data)


def harder_groups(P: Profile, root=None) -> Table:
    """m_p of every Table 2 model on S3 (Table 2's runs) and on A4, A5, C2xS3."""
    groups = ("S3",) + beyond.HARDER_GROUPS
    P = beyond.beyond_profile(P)  # the harder groups' grid, and Table 2's S3 runs on it
    cfgs = paper1.table2_grid(P, groups=groups)
    summary, ids = summarise(cfgs, root)
    depths = P.track_depths
    cols = ["model", "class"] + [f"{g} L{d}" for g in groups for d in depths]
    rows, data = [], []
    for m in paper1.TABLE2_MODELS:
        row = [model_name(m), "affine" if expected_affine(m) else "state-dependent"]
        for g in groups:
            for d in depths:
                s = summary.get((m, g, d))
                status, text = cell_text(s)
                tracked = status in ("ok", "fail")
                m_p = s["m_p"] if tracked else None
                seeds = s["m_p_seeds"] if tracked else []
                row.append(text)
                data.append({"model": m, "group": g, "n_layers": d, "status": status,
                             "m_p": m_p, "m_p_seeds": seeds})
        rows.append(row)
    note = ("m_p: the largest evaluated length with token accuracy >= 90% ('fail': below 90% "
            "at the training length 60); best over the grid, [min–max over seeds] where they "
            "differ. Same protocol as Table 2 (curriculum up to 60, tokens = identity + "
            "generators). The paper reports none of these groups.")
    return Table("Table 2's models on harder groups", cols, rows, note, ids, data)


def harder_groups_split(P: Profile, root=None) -> Table:
    """Per group of :func:`harder_groups`: how many state-dependent and how many affine
    models reach the longest evaluated length, and how many of each fail at the training
    length (one-layer cells; a missing or diverged cell counts in none); its data also name
    the best model of each class (``best_state_dependent``, ``best_affine``: model and m_p,
    the longest m_p, None when every cell fails or is missing)."""
    t = harder_groups(P, root)
    longest = max(beyond.beyond_profile(P).track_eval_lengths)
    depth = min(d["n_layers"] for d in t.data) if t.data else 1
    cols = ["group", "state-dependent at the longest length", "state-dependent failing at 60",
            "affine at the longest length", "affine failing at 60"]

    def best(cells):
        top = max(cells, key=lambda d: d["m_p"] or 0, default=None)
        return None if top is None or top["m_p"] is None else \
            {"model": top["model"], "m_p": top["m_p"]}
    rows, data = [], []
    for g in dict.fromkeys(d["group"] for d in t.data):
        cells = [d for d in t.data if d["group"] == g and d["n_layers"] == depth]
        sd = [d for d in cells if not expected_affine(d["model"])]
        af = [d for d in cells if expected_affine(d["model"])]
        reach = {k: sum(d["m_p"] is not None and d["m_p"] >= longest for d in v)
                 for k, v in (("state_dependent", sd), ("affine", af))}
        fail = sum(d["status"] == "fail" for d in af)
        sd_fail = sum(d["status"] == "fail" for d in sd)
        rows.append([g, f"{reach['state_dependent']} of {len(sd)}", f"{sd_fail} of {len(sd)}",
                     f"{reach['affine']} of {len(af)}", f"{fail} of {len(af)}"])
        data.append({"group": g, "longest": longest, "n_state_dependent": len(sd),
                     "n_affine": len(af), "state_dependent_reach": reach["state_dependent"],
                     "affine_reach": reach["affine"], "affine_fail": fail,
                     "state_dependent_fail": sd_fail, "best_state_dependent": best(sd),
                     "best_affine": best(af)})
    note = (f"One-layer cells of the table above; 'at the longest length': m_p = {longest}; "
            "'failing at 60': below 90% token accuracy at the training length.")
    return Table("The split by class, per group", cols, rows, note, t.records, data)


def figure4_records(P: Profile, group: str, root=None) -> list[dict[str, Any]]:
    """Stored diagnostics records of the affine Figure 4 sweep on ``group``."""
    from dataclasses import replace

    from sst_core.experiments.paper1 import diagnostics_config

    cfgs = [replace(diagnostics_config(P, c), n_samples=beyond.n_samples_for(P, group))
            for c in beyond.figure4_runs_on(P, group)]
    return stored_records(cfgs, root)


# The axes of :func:`sweep_axes` that a chapter names with their values, and their labels
# (singular, plural) for :func:`sst_core.reports.labelled_values`.
AXIS_LABELS = {"depths": ("depth", "depths"), "d_states": ("state size", "state sizes"),
               "rnn_widths": ("RNN width", "RNN widths"), "schedules": ("schedule", "schedules")}


def sweep_axes(runs: Sequence[Any]) -> dict[str, Any]:
    """A set of training runs (:class:`~sst_core.spec.configs.TrackingConfig`) by its axes:
    how many runs, and the sorted values of each axis the runs take (models, depths, state
    sizes, widths of the RNNs, schedules, learning rates, seeds): the selection behind a
    chapter's population, as its text names it."""
    from sst_core.models.registry import REGISTRY

    def axis(get, cfgs=runs):
        return sorted({get(c) for c in cfgs})
    rnn = [c for c in runs if REGISTRY[c.model].family == "rnn"]
    return {"runs": len(runs), "models": axis(lambda c: c.model),
            "depths": axis(lambda c: c.n_layers),
            "d_states": axis(lambda c: c.d_state, [c for c in runs if c not in rnn]),
            "rnn_widths": axis(lambda c: c.d_state, rnn),  # an RNN's d_state is its width
            "schedules": axis(lambda c: c.schedule),
            "lrs": axis(lambda c: c.lr), "seeds": axis(lambda c: c.seed)}


def figure4_population(P: Profile, group: str) -> dict[str, Any]:
    """:func:`sweep_axes` of the affine training sweep :func:`figure4_runs_on` analyses on
    ``group``: on S3 Paper 1's sweep on the profile's whole Table 2 grid, on A5 the same
    models on the narrower grid of :func:`~sst_core.experiments.beyond.beyond_profile`."""
    return {"group": group, **sweep_axes(beyond.figure4_runs_on(P, group))}


def figure4_groups(P: Profile, root=None) -> Table:
    """Figure 4's correlation and q at m_p, on S3 (Paper 1's sweep) and on A5."""
    from sst_core.experiments.paper1 import figure4_selection

    stats, ids = {}, []
    for g in beyond.FIGURE4_GROUPS:
        cand = figure4_records(P, g, root)
        sel = figure4_selection(cand)
        stats[g] = {**figure4_stats(sel), "candidates": len(cand)}
        ids += [r["run_id"] for r in sel]
    cols = ["quantity"] + [f"ours, {g}" for g in beyond.FIGURE4_GROUPS] + ["paper, S3"]

    def interval(s):
        return "—" if s["q_lo"] is None else f"[{s['q_lo']:.2f}, {s['q_hi']:.2f}]"

    rows = [
        ["affine runs analysed"] + [stats[g]["candidates"] for g in stats] + ["—"],
        ["runs selected (pass 60, q crosses 1/2)"] + [stats[g]["n"] for g in stats]
        + [PAPER_FIGURE4["n"]],
        ["Pearson r of log T_cross vs log m_p"] + [format_value(stats[g]["r"], ".3f") for g in stats]
        + [PAPER_FIGURE4["r"]],
        ["p-value"] + [format_value(stats[g]["p"], ".2g") for g in stats] + [f"{PAPER_FIGURE4['p']:.2g}"],
        ["median q at m_p"] + [format_value(stats[g]["q_median"]) for g in stats]
        + [PAPER_FIGURE4["q_median"]],
        ["bootstrap 95% interval"] + [interval(stats[g]) for g in stats]
        + [f"[{PAPER_FIGURE4['q_lo']}, {PAPER_FIGURE4['q_hi']}]"],
        ["runs with T_cross <= m_p"] + [f"{stats[g].get('T_cross_before_m_p', 0)} of {stats[g]['n']}"
                                        for g in stats] + ["all (claimed)"],
    ]
    why = "; ".join(f"{g}: {stats[g]['why_no_r']}" for g in stats if "why_no_r" in stats[g])
    pops = {g: figure4_population(P, g) for g in beyond.FIGURE4_GROUPS}
    note = ("The affine sweep of each group (" + "; ".join(
                f"{g}: {p['runs']} runs, depths {p['depths']}, state sizes {p['d_states']}, "
                f"schedules {p['schedules']}" for g, p in pops.items())
            + "; the same models, learning rates and seeds), "
            "the same selection rule and statistics as Figure 4; A5 gets "
            f"{beyond.n_samples_for(P, 'A5') // max(1, P.diag_samples)}x the held-out words of S3 "
            "(one class in 60 instead of 6). "
            + (f"No r where: {why}. " if why else ""))
    return Table("Figure 4 on S3 and on A5: does T_cross predict m_p?", cols, rows, note, ids,
                 [{"group": g, **s} for g, s in stats.items()])


# -- label-free q(t) -----------------------------------------------------------------------

def label_free_records(P: Profile, root=None) -> list[dict[str, Any]]:
    return [r for r in stored_records(beyond.label_free_grid(P), root) if r["status"] == "ok"]


def label_free_examples(records: list[dict[str, Any]], n: int = 6) -> list[dict[str, Any]]:
    """The trackers whose q(t) the chapter draws: one run per (group, model), its first in
    the grid's order (:func:`sst_core.reports.select.best_per_cell` with no score), sorted by
    group, affine models first, then by model; ``n`` of them, half (rounded down) from those
    that pass the training length (``m_p`` not None) and half from those that fail, in
    that order, a side with too few filled from the other."""
    def model(r: dict[str, Any]) -> str:
        return r["config"]["run"]["model"]

    first = best_per_cell(records, lambda r: (r["metrics"]["group"], model(r)), score=None)
    ordered = sorted(first.values(), key=lambda r: (r["metrics"]["group"],
                                                    not r["metrics"]["is_affine"], model(r)))
    passing = [r for r in ordered if r["metrics"]["m_p"] is not None]
    failing = [r for r in ordered if r["metrics"]["m_p"] is None]
    k = min(len(passing), max(n // 2, n - len(failing)))
    chosen = {id(r) for r in passing[:k] + failing[:n - k]}
    return [r for r in ordered if id(r) in chosen]


def label_free(P: Profile, root=None) -> Table:
    """Agreement of label-free T_cross and q(t) with the oracle's, per group and method."""
    from sst_core.analysis.label_free import crossing_agreement

    recs = label_free_records(P, root)
    rows, data = [], []
    groups = list(dict.fromkeys(c.run.group for c in beyond.label_free_grid(P)))
    for g in groups + ["all"]:
        ms = [r["metrics"] for r in recs if g == "all" or r["metrics"]["group"] == g]
        for method in ("decoded", "clusters"):
            a = crossing_agreement(ms, method)
            rows.append([g, method, a["n"], f"{a['agree']} of {a['n']}", a["both_cross"],
                         format_value(a["r"]), format_value(a["q_r_median"])])
            data.append({"group": g, **a})
    tol = data[0]["tol"]  # crossing_agreement's: the heading states the rule it applied
    cols = ["group", "labels", "models", f"T_cross agrees (within a factor {1 + tol:g})",
            "both cross", "r of log T_cross", "median r of log q(t)"]
    note = ("Each trained tracker's hidden states on held-out words, labelled by the true group "
            "state (oracle), by the model's own decoded class, or by per-time k-means of the "
            "read-out states; q(t) = R/M with each labelling. 'Agrees': both T_cross are None, "
            "or within a factor 1.25. r of log q(t): over the rollout, finite entries only.")
    return Table("Label-free q(t) against the oracle", cols, rows, note,
                 [r["run_id"] for r in recs], data)


def label_free_warning(P: Profile, root=None) -> Table:
    """m_p predicted from the first 60 positions: error per labelling and fit."""
    from sst_core.analysis.label_free import LABELINGS, WARNING_FITS, warning_errors

    recs = label_free_records(P, root)
    ms = [r["metrics"] for r in recs if r["metrics"]["is_affine"]]
    cols = ["labels", "fit", "models scored", "raw: median |log2 error|", "raw: within 2x",
            "calibrated (LOO): median |log2 error|", "calibrated: within 2x"]
    rows, data = [], []

    def part(s, k):
        return "—" if s is None else (f"{s[k]:.2f}" if k.startswith("median")
                                      else f"{100 * s[k]:.0f}%")
    for method in LABELINGS:
        for fit in WARNING_FITS:
            e = warning_errors(ms, method, fit, P.track_eval_lengths)
            rows.append([method, fit, e["n"], part(e["raw"], "median_log2_error"),
                         part(e["raw"], "within_2x"), part(e["loo"], "median_log2_error"),
                         part(e["loo"], "within_2x")])
            data.append(e)
    # the baseline: no warning at all, the median m_p of the other scored trackers
    base = constant_warning([x["m_p"] for x in data[0].get("per_model", [])],
                            P.track_eval_lengths)
    rows.append(["none", "constant", base["n"], "—", "—",
                 part(base["loo"], "median_log2_error"), part(base["loo"], "within_2x")])
    data.append(base)
    note = ("Affine trackers (every group) that pass the training length. The warning sees "
            "positions 10..60 only and extrapolates q(t) to 1/2: 'drift' fits sqrt(R) = a + b t "
            "(Corollary 1), 'power' fits q = C t^alpha. Raw: m_p predicted as T_pred snapped down "
            "to the evaluated lengths; calibrated: log m_p regressed on log T_pred over the "
            "other models (leave-one-out). Error |log2(pred / m_p)|: 1 = a factor of two. "
            "none / constant: the baseline that reads no states, the median m_p of the other "
            "scored trackers (leave-one-out), snapped the same way.")
    return Table("An online warning: m_p from lengths up to 60", cols, rows, note,
                 [r["run_id"] for r in recs], data)


def constant_warning(m_p: Sequence[int], lengths: Sequence[int]) -> dict[str, Any]:
    """The baseline the online warning must beat: predict each tracker's ``m_p`` as the
    median ``m_p`` of the *other* trackers (leave-one-out), snapped down to the evaluated
    ``lengths`` as :func:`~sst_core.analysis.label_free.warning_errors` snaps its
    predictions, and scored the same way (``loo``: the median of ``|log2(pred / m_p)|``
    and the share within a factor of two; None with fewer than two trackers). In the
    shape of ``warning_errors``' result (``method`` "none", ``fit`` "constant", no
    ``raw`` prediction)."""
    L = np.array(sorted(lengths), dtype=float)
    if not L.size:
        raise ValueError("lengths must name at least one evaluated length")
    y = np.asarray(m_p, dtype=float)  # (n,)
    out: dict[str, Any] = {"method": "none", "fit": "constant", "n": int(y.size), "raw": None,
                           "loo": None, "per_model": []}
    if y.size < 2:
        return out
    pred = []
    for i in range(y.size):
        med = float(np.median(np.delete(y, i)))
        below = L[L <= med]
        pred.append(float(below[-1] if below.size else L[0]))
    err = np.abs(np.log2(np.array(pred) / y))  # (n,)
    out["loo"] = {"median_log2_error": float(np.median(err)),
                  "within_2x": float((err <= 1).mean()), "exact": float((err == 0).mean()),
                  "n": int(err.size)}
    out["per_model"] = [{"T_pred": None, "m_p": int(m), "raw": None, "loo": p}
                        for m, p in zip(y, pred)]
    return out


def warning_same_as(warning: Table, method: str, reference: str = "oracle"
                    ) -> dict[str, dict[str, int]]:
    """Per fit of :func:`label_free_warning`'s data: over how many scored trackers
    (``n``) ``method``'s predicted m_p, raw and calibrated, equals ``reference``'s exactly
    (``same``). Both score the same trackers in the same order (the affine ones that pass
    60), so their per-model predictions pair up."""
    by = {(d["method"], d["fit"]): d for d in warning.data}
    out = {}
    for (m, fit), d in by.items():
        if m != method or (reference, fit) not in by:
            continue
        a, b = d.get("per_model", []), by[reference, fit].get("per_model", [])
        if [x["m_p"] for x in a] != [x["m_p"] for x in b]:
            raise ValueError(f"{method} and {reference} ({fit}) score different trackers")
        out[fit] = {"same": sum(x["raw"] == y["raw"] and x["loo"] == y["loo"]
                                for x, y in zip(a, b)), "n": len(a)}
    return out


# -- the semi-affine repair ------------------------------------------------------------------

def model_rows(summary: dict, models, classes: dict[str, str], groups, depths,
               diag: dict[str, dict[str, Any]], diag_columns) -> tuple[list, list]:
    """Rows of a chapter table: per model its class, m_p per (group, depth) cell ("missing"
    for a cell with no run, "diverged" for one whose every run diverged, as Table 2 shows
    them) and, from its best S3 diagnostics record
    (``diag``, by model), the values ``diag_columns`` lists as (heading, metrics -> value,
    format). Returns the displayed rows and the same as data (``cells``: per cell its
    ``status`` and ``m_p``, shown as :func:`~sst_core.reports.paper1.shown_text` writes them;
    ``diagnostics`` and each column's value under its heading)."""
    rows, data = [], []
    for m in models:
        row, cells = [model_name(m), classes[m]], {}
        for g in groups:
            for d in depths:
                s = summary.get((m, g, d))
                status, text = cell_text(s, seeds=False)
                row.append(text)
                cells[f"{g} L{d}"] = {"status": status,
                                      "m_p": s["m_p"] if status in ("ok", "fail") else None}
        r = diag.get(m)
        extra = {"diagnostics": "missing" if r is None else "ok"}
        for heading, value, spec in diag_columns:
            v = None if r is None else value(r["metrics"])
            row.append("missing" if r is None else
                       format_value(v) if spec is None else format_value(v, spec))
            extra[heading] = v
        if r is not None:
            extra["m_p_diag"] = r["metrics"]["m_p"]
        rows.append(row)
        data.append({"model": m, "cells": cells, **extra})
    return rows, data


def recovery_along_U(metrics: dict[str, Any]) -> float | None:
    """||e_t|| / ||e_0|| at the last finite step after a perturbation inside U."""
    return next((v for v in reversed(metrics["recovery"]["U"]) if v is not None), None)


def semi_affine(P: Profile, root=None) -> Table:
    """m_p on Table 2's groups and S3 diagnostics of the repaired and original models."""

    cfgs = beyond.semi_affine_grid(P)
    summary, ids = summarise(cfgs, root)
    diag = best_by_model(stored_records(beyond.semi_affine_diagnostics(P), root))
    P = beyond.beyond_profile(P)  # the grid of semi_affine_grid, for the columns and the note
    depths = P.track_depths
    models = beyond.SEMI_AFFINE_MODELS + beyond.SEMI_AFFINE_BASELINES
    classes = {m: "semi-affine" if m in beyond.SEMI_AFFINE_MODELS else "affine" for m in models}
    diag_columns = [("T_cross", lambda mt: mt["T_cross"], None),
                    ("recovery_U", recovery_along_U, ".2g"),
                    ("gain", lambda mt: mt["theorem1"].get("gain"), None)]
    rows, data = model_rows(summary, models, classes, paper1.TABLE2_GROUPS, depths, diag,
                            diag_columns)
    cols = (["model", "class"] + [f"{g} L{d}" for g in paper1.TABLE2_GROUPS for d in depths]
            + ["S3 T_cross", "S3 recovery along U", "S3 ‖Qᵀ J Q‖"])
    note = ("Semi-affine: the (Negative) Mamba recurrence plus P tanh(Q h + c) with Q, P of rank "
            f"{semi_affine_rank()} (sst_core.models.semi_affine); Table 2's protocol on the "
            "narrower grid of the Beyond chapters. T_cross '—': q stays below 1/2. Recovery: "
            f"||e_t|| / ||e_0|| {paper1.recovery_steps(P)} steps after a perturbation inside U "
            "(below 1: the error shrinks); ||Q^T J Q||: the return map of state-preserving "
            "words on U (Theorem 1 forces 1 for an affine model that tracks). Best S3 run per "
            "model; 'diverged': every run of the cell diverged.")
    return Table("A semi-affine repair of (Negative) Mamba", cols, rows, note, ids, data)


def semi_affine_repairs(data: list[dict[str, Any]], cell: str) -> dict[str, int]:
    """How the semi-affine models of :func:`semi_affine`'s ``data`` compare with their
    affine originals (``SEMI_AFFINE_MODELS`` paired with ``SEMI_AFFINE_BASELINES``) in the
    cell ``cell`` (e.g. "S3 L1"): ``pairs`` compared (both cells computed, ok or fail),
    how many go ``beyond`` the original (an m_p where the original fails, or a longer
    one), and how many of those also ``contract`` an error inside U (recovery below 1)."""
    by = {d["model"]: d for d in data}
    out = {"pairs": 0, "beyond": 0, "contract": 0}
    for semi, original in zip(beyond.SEMI_AFFINE_MODELS, beyond.SEMI_AFFINE_BASELINES):
        if semi not in by or original not in by:
            continue
        a, b = by[semi]["cells"].get(cell), by[original]["cells"].get(cell)
        if a is None or b is None or {a["status"], b["status"]} - {"ok", "fail"}:
            continue
        out["pairs"] += 1
        if a["m_p"] is not None and (b["m_p"] is None or a["m_p"] > b["m_p"]):
            out["beyond"] += 1
            rec = by[semi].get("recovery_U")
            out["contract"] += rec is not None and rec < 1
    return out


def semi_affine_rank() -> int:
    """The rank r of the correction P tanh(Q h + c) of the registered semi-affine models,
    read from the models their builders make (the chapter trains them at the default)."""
    from sst_core.models.registry import build

    ranks = {build(m, 2, 2, d_model=4, d_state=2).layers[0].cfg.rank
             for m in beyond.SEMI_AFFINE_MODELS}
    if len(ranks) != 1:
        raise ValueError(f"the semi-affine models differ in rank: {sorted(ranks)}")
    return ranks.pop()


def best_by_model(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The best analysis record of each trained model, by model name
    (:func:`sst_core.reports.select.best_per_cell`): what the semi-affine and delta chapters
    read their S3 diagnostics from."""
    return best_per_cell(records, lambda r: r["config"]["run"]["model"])


def semi_affine_cost(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The benchmark rows that time the correction against the affine original, each with
    its record's device and ``machine`` (the CPU model, or the GPU's name; the device where
    the record names neither)."""
    out = []
    for rec in records:
        hw = rec.get("hardware", {})
        machine = hw.get("cpu_model" if rec["device"] == "cpu" else "device_name") or rec["device"]
        for row in rec.get("entries", []):
            if str(row.get("name", "")).startswith("semi_affine"):
                out.append({**row, "device": rec["device"], "machine": machine,
                            "created_utc": rec["created_utc"], "git_commit": rec["git_commit"]})
    return out


COST_ROWS = {"semi_affine_train_s3": "one training step (S3, length 60)",
             "semi_affine_eval_L1000": "forward pass at length 1000"}


def semi_affine_cost_table(records: list[dict[str, Any]]) -> Table:
    """:func:`semi_affine_cost` of the newest benchmark record that has the semi-affine rows,
    as a table: per comparison the two times, their ratio and the sizes (no rows when no
    record has them; the machine, one for the record, is in its data for the text)."""
    cost = semi_affine_cost(records)
    newest = max((c["created_utc"] for c in cost), default=None)
    data = [c for c in cost if c["created_utc"] == newest]
    cols = ["comparison", "semi-affine (s)", "affine (s)", "ratio", "sizes"]
    rows = [[COST_ROWS.get(c["name"], c["name"]), format_value(c["ours_s"], ".4f"),
             format_value(c["anchor_s"], ".4f"), f"{c['ratio']:.2f}x",
             ", ".join(f"{k} {v}" for k, v in c["sizes"].items())] for c in data]
    note = ("Semi-affine Negative Mamba against the affine one, timed side by side in one "
            "benchmark run (sst bench, rows semi_affine_train_s3 and semi_affine_eval_L1000); "
            "a training step is forward, backward and AdamW.")
    return Table("What the correction costs", cols, rows, note, [], data)


# -- memory meets error control ---------------------------------------------------------------

def spectra_records(P: Profile, root=None) -> list[dict[str, Any]]:
    return [r for r in stored_records(beyond.spectra_grid(P), root) if r["status"] == "ok"]


def _token_summary(m: dict[str, Any]) -> dict[str, Any]:
    """Per-token statistics of a spectra record, summarised over tokens (medians)."""
    toks = [t for t in m["tokens"] if t.get("n_sampled")]

    def med(key):
        vals = [t[key] for t in toks if t.get(key) is not None]
        return float(np.median(vals)) if vals else None

    return {"radius": med("radius_median"), "near_unit": med("near_unit_median"),
            "horizon": med("horizon_max"), "capacity": med("capacity_median")}


def best_spectra(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The best spectra record of each model (:func:`sst_core.reports.select.best_per_cell`),
    state-dependent models first, then by name: the rows of :func:`spectra` and the panels
    of its figures."""
    best = best_per_cell(records, lambda r: r["metrics"]["model"])
    return [best[k] for k in sorted(best, key=lambda k: (best[k]["metrics"]["is_affine"], k))]


def spectra(P: Profile, root=None) -> Table:
    """Per model (best S3 run): transition and return-map spectra, memory horizons, m_p."""
    recs = spectra_records(P, root)
    best = best_spectra(recs)
    cols = ["model", "class", "m_p", "D_rec", "dim U", "A(x): spectral radius",
            "A(x): share near |λ| = 1", "A(x): memory horizon", "return map: λ near 1",
            "return map: horizon, max over channels (words)"]
    rows, data = [], []
    for r in best:
        name, m = r["metrics"]["model"], r["metrics"]
        s = _token_summary(m)
        rm = m["return_maps"]
        hz = [h for h in rm.get("horizon_max", []) if h is not None]
        rows.append([model_name(name), "affine" if m["is_affine"] else "state-dependent (linearised)",
                     fmt(m["m_p"]), m["D_rec"], m["dim_U"], format_value(s["radius"]),
                     format_value(s["near_unit"], ".2f"), format_value(s["horizon"]),
                     f"{rm['n_near_one_median']:g} (dim U {m['dim_U']})",
                     format_value(float(np.median(hz)) if hz else None)])
        data.append({"model": name, "is_affine": m["is_affine"], "m_p": m["m_p"],
                     "D_rec": m["D_rec"], "dim_U": m["dim_U"], **s,
                     "return_near_one": rm["n_near_one_median"],
                     "return_horizon": float(np.median(hz)) if hz else None})
    note = ("A(x): the Jacobians d h_t / d h_{t-1} along held-out S3 words (the learned per-token "
            "transitions of an affine model; the linearisation of a state-dependent one), medians "
            "over tokens of the median over positions. 'Near': within 0.01. Memory horizon: the "
            "first delay at which Paper 2's memory function (of one channel's spectrum, the max "
            "over channels) drops below 1/2. Return map: the Jacobian of a state-preserving word "
            "(length 6) from states after a held-out word; Theorem 1 predicts at least dim U "
            "eigenvalues at 1 for an affine model that tracks; its horizon counts words, that "
            "of the maximum over channels, median over words (the chapter's figure titles give "
            "the horizon of the median over channels, a different statistic). Best S3 run per "
            "model.")
    return Table("Memory meets error control: spectra of the trained S3 trackers", cols, rows,
                 note, [r["run_id"] for r in recs], data)


def theorem1_counts(data: list[dict[str, Any]]) -> Table:
    """Theorem 1's signature in the return maps of the affine models of :func:`spectra`
    (its ``data``): of those that pass the training length and of those that fail at it,
    how many have at least ``dim U`` eigenvalues within 0.01 of 1 (the median over words,
    ``return_near_one``), and which do not (their names, for the text). Theorem 1 puts
    ``dim U`` eigenvalues at 1 for an affine model whose return maps fix the centroids."""
    rows, out = [], []
    for label, passes in (("pass the training length", True), ("fail at the training length",
                                                                False)):
        group = [d for d in data if d["is_affine"] and (d["m_p"] is not None) is passes]
        at_one = [d for d in group if d["return_near_one"] >= d["dim_U"]]
        without = [d for d in group if d["return_near_one"] < d["dim_U"]]
        rows.append([label, len(group), len(at_one),
                     ", ".join(model_name(d["model"]) for d in without) or "—"])
        out.append({"passes": passes, "models": len(group), "at_one": len(at_one),
                    "without": [{"model": d["model"], "m_p": d["m_p"],
                                 "near_one": d["return_near_one"], "dim_U": d["dim_U"]}
                                for d in without]})
    return Table("Theorem 1's eigenvalues at 1 in the affine trackers' return maps",
                 ["affine models that", "models", "with ≥ dim U eigenvalues near 1",
                  "the others"], rows,
                 "Near 1: within 0.01, the median over state-preserving words of the number "
                 "of such eigenvalues.", data=out)


SPECTRA_PREDICTORS = {
    "A(x) spectral radius": lambda m: _token_summary(m)["radius"],
    "A(x) share near the unit circle": lambda m: _token_summary(m)["near_unit"],
    "A(x) memory horizon": lambda m: _token_summary(m)["horizon"],
    "return map: eigenvalues near 1": lambda m: m["return_maps"]["n_near_one_median"],
}


def spectra_population(P: Profile) -> dict[str, Any]:
    """:func:`sweep_axes` of the affine S3 runs whose spectra the chapter analyses
    (:func:`~sst_core.experiments.beyond.spectra_grid`: Table 2's S3 runs and the Figure 4
    sweep, on the narrower grid of :func:`~sst_core.experiments.beyond.beyond_profile`),
    the population :func:`spectra_predictors` correlates over (those that pass 60)."""
    return sweep_axes([c.run for c in beyond.spectra_grid(P) if expected_affine(c.run.model)])


def spectra_predictors(P: Profile, root=None) -> Table:
    """Spearman correlation of each spectral summary with m_p over the affine S3 runs that
    pass the training length, beside T_cross (the paper's predictor) on the same runs."""
    from scipy.stats import spearmanr

    from sst_core.experiments.paper1 import diagnostics_config

    recs = [r for r in spectra_records(P, root)
            if r["metrics"]["is_affine"] and r["metrics"]["m_p"] is not None]
    diag = {json_key(r["config"]["run"]): r
            for r in stored_records([diagnostics_config(P, c) for c in beyond.analysed_runs(P, "S3")],
                                    root) if r["status"] == "ok"}
    cols = ["predictor of m_p", "Spearman ρ", "p-value", "runs"]
    rows, data = [], []
    preds = dict(SPECTRA_PREDICTORS)
    preds["T_cross (diagnostics, for comparison)"] = None
    for name, f in preds.items():
        pairs = []
        for r in recs:
            m = r["metrics"]
            if f is None:
                d = diag.get(json_key(r["config"]["run"]))
                v = None if d is None else d["metrics"]["T_cross"]
            else:
                v = f(m)
            if v is not None and np.isfinite(v):
                pairs.append((float(v), float(m["m_p"])))
        if len(pairs) >= 3 and len({a for a, _ in pairs}) > 1 and len({b for _, b in pairs}) > 1:
            res = spearmanr(*zip(*pairs))
            rho, p = float(res.statistic), float(res.pvalue)
        else:
            rho = p = None
        rows.append([name, format_value(rho), format_value(p, ".2g"), len(pairs)])
        data.append({"predictor": name, "rho": rho, "p": p, "n": len(pairs)})
    note = ("Affine S3 runs (Table 2's and the Figure 4 sweep, on the narrower grid of "
            "beyond_profile; spectra_population) that pass the training length; "
            "rank correlation because m_p lives on a grid of lengths and is censored at 1000. "
            "No ρ with fewer than three runs or a constant column.")
    return Table("What the spectra say about m_p", cols, rows, note,
                 [r["run_id"] for r in recs], data)


def json_key(cfg: dict[str, Any]) -> str:
    """A config dict as a hashable key."""
    import json

    return json.dumps(cfg, sort_keys=True)


def crossing(T: int | None) -> str:
    """A crossing time as the chapters print it: "—" when q never reaches tau within the
    rollout (the convention of the diagnostics chapter's tables)."""
    return "—" if T is None else str(T)


DELTA_CLASSES = {
    **{m: "non-diagonal affine" for m in beyond.DELTA_MODELS},
    **{m: "state-dependent (torch)" for m in beyond.TORCH_RNNS},
}


def delta_class(model: str) -> str:
    """The row class of the delta chapter's tables."""
    if model in DELTA_CLASSES:
        return DELTA_CLASSES[model]
    return "diagonal affine" if expected_affine(model) else "state-dependent"


def delta_diagnostic_records(P: Profile, root=None) -> list[dict[str, Any]]:
    return stored_records(beyond.delta_diagnostics(P), root)


def _delta_rows(P: Profile, root=None) -> tuple[list, list, list, Profile]:
    """The rows of :func:`delta` and :func:`delta_lens` (one pass over the records): per
    model its class, m_p per group and the S3 diagnostics columns; the data; the ids; the
    grid's profile."""
    from sst_core.analysis.error_control import corollary1_prediction

    cfgs = beyond.delta_grid(P)
    summary, ids = summarise(cfgs, root)
    diag = best_by_model(delta_diagnostic_records(P, root))
    Pb = beyond.beyond_profile(P)
    models = beyond.DELTA_MODELS + beyond.TORCH_RNNS + beyond.DELTA_COMPARED
    classes = {m: delta_class(m) for m in models}

    def corollary(key):
        return lambda mt: corollary1_prediction(mt)[key] if mt["is_affine"] else None

    diag_columns = [("T_cross", lambda mt: mt["T_cross"], None),
                    ("gain", lambda mt: mt["theorem1"].get("gain"), None),
                    ("gain_min", lambda mt: mt["theorem1"].get("gain_min"), None),
                    ("deviation_U", lambda mt: mt["theorem1"].get("deviation_U"), ".2g"),
                    ("recovery_U", recovery_along_U, ".2g"),
                    ("drift", corollary("drift"), ".2g"),
                    ("T_pred", corollary("T_pred"), ".4g")]
    rows, data = model_rows(summary, models, classes, beyond.DELTA_GROUPS, Pb.track_depths,
                            diag, diag_columns)
    return rows, data, ids, Pb


DELTA_MODELS_NOTE = (
    "DeltaNet: S_t = (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T with ||k_t|| = 1, beta "
    "in [0, 1], or in [0, 2] (transition eigenvalues in [-1, 1]); DeltaProduct: n_h such "
    "factors per token (n_h = 2, or 3 steps), beta in [0, 2]; GRU and LSTM: torch.nn.GRU and "
    "torch.nn.LSTM as registry models.")


def delta(P: Profile, root=None) -> Table:
    """m_p on C2, C6, S3 and A5 of DeltaNet, DeltaProduct and torch's GRU / LSTM beside
    Table 2's models on one grid. Its data also carry the S3 diagnostics that
    :func:`delta_lens` shows."""
    rows, data, ids, Pb = _delta_rows(P, root)
    n = 2 + len(beyond.DELTA_GROUPS) * len(Pb.track_depths)
    cols = ["model", "class"] + [f"{g} L{d}" for g in beyond.DELTA_GROUPS for d in Pb.track_depths]
    note = (DELTA_MODELS_NOTE + " Every row: one grid and protocol (Table 2's, narrowed as in "
            "the other 'Beyond' chapters), m_p best over the grid ('fail': no run passes 60; 'diverged': every run of "
            "the cell diverged).")
    return Table("Non-diagonal affine trackers beside Table 2's models", cols,
                 [r[:n] for r in rows], note, ids, data)


def delta_lens(P: Profile, root=None) -> Table:
    """The S3 diagnostics of :func:`delta`'s models (best run each): T_cross, Theorem 1's
    return map on U (its largest and smallest singular values: both 1 for a map orthogonal
    on U; its distance from I), recovery along U, Corollary 1's drift and predicted
    T_cross."""
    rows, data, ids, Pb = _delta_rows(P, root)
    n = 2 + len(beyond.DELTA_GROUPS) * len(Pb.track_depths)
    cols = ["model", "m_p", "T_cross", "σ_max", "σ_min", "‖Qᵀ J Q − I‖", "recovery",
            "drift", "T_cross, Cor. 1"]
    out = [r[:1] + [fmt(d.get("m_p_diag")) if d["diagnostics"] == "ok" else "missing"] + r[n:]
           for r, d in zip(rows, data)]
    note = (DELTA_MODELS_NOTE + " The best S3 run of each model (classes as in the table "
            "above). Theorem 1's return map: J of state-preserving words on U, median over "
            "words; sigma_max, sigma_min: the largest and smallest singular values of Q^T J Q "
            "(both 1 when J is orthogonal on U; an affine map that fixes the centroids has "
            f"Q^T J Q = I). Recovery: ||e_t|| / ||e_0|| {paper1.recovery_steps(Pb)} steps after "
            "a perturbation inside U. Drift ||W_out eta_bar|| and T_cross by Corollary 1 "
            "(affine rows): "
            f"sqrt(R_U(t)) = a + t ||W_out eta_bar|| fitted over t in [10, 120]. {DRIFT_NOTE} ")
    return Table("Through the error-control lens: S3 diagnostics of the same models", cols,
                 out, note, ids, data)


def householder_facts(model: str) -> dict[str, Any]:
    """n_h (Householder factors per token) and beta's range of a registered delta model,
    read from the model its builder makes (:class:`sst_core.models.delta.DeltaConfig`)."""
    from sst_core.models.registry import build

    cfg = build(model, 2, 2, d_model=4, d_state=2).layers[0].cfg
    return {"n_householder": int(cfg.n_householder), "beta_range": float(cfg.beta_range)}


def delta_predictions(P: Profile | None = None, root=None) -> Table:
    """Per delta model and group: can one layer track the group's generator words exactly
    (:func:`sst_core.theory.householder.exact_tracking`)? Needs no records."""
    from sst_core.theory.householder import exact_tracking, minimal_factors

    groups = beyond.DELTA_GROUPS
    need = {g: minimal_factors(g) for g in groups}
    cols = ["model", "n_h", "beta in"] + list(groups)
    rows, data = [], []
    for m in beyond.DELTA_MODELS:
        f = householder_facts(m)
        verdicts = {g: exact_tracking(f["n_householder"], f["beta_range"], g) for g in groups}
        rows.append([model_name(m), f["n_householder"], f"[0, {f['beta_range']:g}]"]
                    + [verdicts[g] for g in groups])
        data.append({"model": m, **f, "verdicts": verdicts})
    note = ("Exact tracking: every token's transition orthogonal on U and the states a faithful "
            "image of the group. Reflections (beta = 2) are the only orthogonal factors but the "
            "identity; an orthogonal g needs exactly rank(g - I) of them (Cartan-Dieudonne). "
            "Factors needed per token, lower bound / attained by the representation used here: "
            + "; ".join(f"{g} {need[g]['lower_bound']} / {need[g]['attained']}" for g in groups)
            + " (A5: as the rotations of the icosahedron; its standard representation would "
            "need 4 for the 5-cycle). 'open' would mean between the two.")
    return Table("Which groups one layer can track exactly (theory)", cols, rows, note, [], data)


def delta_verdicts(P: Profile, root=None) -> list[dict[str, Any]]:
    """Per delta model and group, the theory's verdict (:func:`delta_predictions`) beside
    the measured m_p of the one-layer cell and whether it reaches the longest evaluated
    length (None where the cell is missing). "yes" says an exact tracker of that shape
    exists, not that training finds it; "no" says every tracker of that shape drifts and
    so fails at some length, which may lie beyond the longest one evaluated."""
    pred = {d["model"]: d["verdicts"] for d in delta_predictions().data}
    Pb = beyond.beyond_profile(P)
    longest = max(Pb.track_eval_lengths)
    out = []
    for row in delta(P, root).data:
        if row["model"] not in pred:
            continue
        for g in beyond.DELTA_GROUPS:
            cell = row["cells"][f"{g} L{Pb.track_depths[0]}"]
            missing = cell["status"] in ("missing", "diverged")
            out.append({"model": row["model"], "group": g, "predicted": pred[row["model"]][g],
                        "m_p": cell["m_p"], "status": cell["status"], "longest": longest,
                        "reaches_longest": None if missing else
                        bool(cell["m_p"] is not None and cell["m_p"] >= longest)})
    return out


PREDICTION_FACTOR = 2.0  # how far a crossing time may be from m_p and still predict it


def crossing_predicts(m_p: int | None, T: float | None, *, trained: int, longest: int,
                      rollout: int, factor: float = PREDICTION_FACTOR) -> bool:
    """Whether a crossing time ``T`` (None: q stays below tau over the ``rollout``) predicts
    ``m_p`` (None: no evaluated length passes, so the run fails near its ``trained``
    length), the rule stated before looking: a failing run with ``T`` at most ``factor``
    times the trained length; a run that passes the ``longest`` evaluated length with ``T``
    at least ``longest / factor`` or no crossing; any other run with ``T`` within a factor
    ``factor`` of ``m_p`` (no crossing counts as past the rollout). ``m_p`` lies on the
    evaluated lengths' grid, so only a coarse agreement is asked for."""
    if m_p is None:
        return T is not None and T <= factor * trained
    if m_p >= longest:
        return T is None or T >= longest / factor
    if T is None:
        return factor * m_p > rollout
    return m_p / factor <= T <= factor * m_p


def delta_theory_check(P: Profile, root=None, models: Sequence[str] = beyond.DELTA_MODELS
                       ) -> list[dict[str, Any]]:
    """For each of ``models`` (default: the Householder ones; the chapter's others are
    :data:`~sst_core.experiments.beyond.DELTA_COMPARED`) that is affine and has
    an S3 diagnostics record (the best run, as :func:`delta_lens` shows it): its ``m_p``,
    the measured ``T_cross`` and Corollary 1's ``T_pred`` from the early drift, and whether
    each predicts ``m_p`` (:func:`crossing_predicts`): ``measured`` and ``corollary``
    (None where the drift could not be fitted; a drift that is not positive predicts no
    crossing). ``passes``: whether the run passes the training length; for one that does
    not, the rule asks only for a crossing before twice the training length, which the q of
    a run that has lost the state reaches early, so its verdicts have next to no power."""
    from sst_core.analysis.error_control import corollary1_prediction

    best = best_by_model(delta_diagnostic_records(P, root))
    out = []
    for m in models:
        r = best.get(m)
        if r is None or r["status"] != "ok" or not r["metrics"]["is_affine"]:
            continue
        mt, cfg = r["metrics"], r["config"]
        where = {"trained": cfg["run"]["curriculum_max"],
                 "longest": max(cfg["run"]["eval_lengths"]), "rollout": cfg["rollout"]}
        cor = corollary1_prediction(mt)
        out.append({"model": m, "m_p": mt["m_p"], "passes": mt["m_p"] is not None,
                    "T_cross": mt["T_cross"],
                    "T_pred": cor["T_pred"], "drift": cor["drift"], **where,
                    "measured": crossing_predicts(mt["m_p"], mt["T_cross"], **where),
                    "corollary": None if cor["drift"] is None else
                    crossing_predicts(mt["m_p"], cor["T_pred"], **where)})
    return out


def delta_theory_table(P: Profile, root=None) -> Table:
    """:func:`delta_theory_check` of the Householder models and of the diagonal affine models
    beside them, as a table: per model its m_p, the measured and Corollary 1's crossing
    times, and whether each predicts m_p by :func:`crossing_predicts`."""
    check = delta_theory_check(P, root, models=beyond.DELTA_MODELS + beyond.DELTA_COMPARED)

    def yes(v: bool | None, counted: bool) -> str:
        text = "—" if v is None else "yes" if v else "no"
        return text if counted or v is None else f"({text})"

    cols = ["model", "class", "m_p", "T_cross", "T_cross, Cor. 1", "T_cross predicts m_p",
            "Cor. 1 predicts m_p"]
    rows = [[model_name(d["model"]), delta_class(d["model"]), fmt(d["m_p"]),
             crossing(d["T_cross"]), "—" if d["T_pred"] is None else format_value(d["T_pred"], ".4g"),
             yes(d["measured"], d["passes"]), yes(d["corollary"], d["passes"])] for d in check]
    note = (f"A crossing time predicts m_p when it lies within a factor {PREDICTION_FACTOR:g} of "
            "it; for a run that fails at the training length, when it is at most that factor "
            "times the training length (in parentheses: such a verdict has next to no power, "
            "and is not counted); for a run that passes the longest evaluated length, when "
            "it is no earlier than that length divided by the factor (no crossing counts as "
            "past the rollout). Corollary 1's crossing time comes from the drift fitted over t in "
            "[10, 120]; '—': no drift to fit. The best S3 run of each affine model.")
    return Table("Do Theorem 1 and Corollary 1 predict m_p?", cols, rows, note,
                 [], check)


def exact_trackers(P: Profile, root=None) -> Table:
    """The constructed Householder trackers (:func:`sst_core.experiments.beyond.exact_tracker_grid`)
    through the public diagnostics: T_cross, the return map on U and Corollary 1."""
    cfgs = beyond.exact_tracker_grid(P)
    recs = stored_records(cfgs, root)
    by_cfg = {(r["config"]["group"], r["config"]["drift"]): r for r in recs}
    # the records' own failure_mode field (crossing within the training length) is kept
    # in ``data`` but not shown: it is not the paper's rule (reports.error_control.start_mode)
    cols = ["group", "rotation (rad)", "T_cross", "T_cross, Cor. 1", "σ_min, σ_max",
            "‖Qᵀ J Q − I‖", "affine"]
    rows, data, ids = [], [], []
    for c in cfgs:
        r = by_cfg.get((c.group, c.drift))
        if r is None or r["status"] != "ok":
            rows.append([c.group, c.drift] + ["missing" if r is None else "failed"] * 5)
            data.append({"group": c.group, "drift": c.drift, "rollout": c.rollout,
                         "status": "missing" if r is None else "failed"})
            continue
        m, t1 = r["metrics"], r["metrics"]["theorem1"]
        T_pred = m["corollary1"]["T_pred"]
        rows.append([c.group, c.drift, crossing(m["T_cross"]),
                     "—" if T_pred is None or T_pred > 1e6 else format_value(T_pred, ".4g"),
                     f"{format_value(t1['gain_min'], '.4f')}, {format_value(t1['gain'], '.4f')}",
                     format_value(t1["deviation_U"], ".2g"), "yes" if m["is_affine"] else "no"])
        data.append({"group": c.group, "drift": c.drift, "rollout": c.rollout, "status": "ok",
                     "T_cross": m["T_cross"], "failure_mode": m["failure_mode"],
                     "gain": t1["gain"], "gain_min": t1["gain_min"],
                     "deviation_U": t1["deviation_U"], "is_affine": m["is_affine"],
                     "T_pred": T_pred})
        ids.append(r["run_id"])
    note = ("Each token applied as its reflections (beta = 2) in an exact orthogonal "
            "representation (sst_core.theory.householder.permutation_tracker), its transition "
            "then rotated by the given angle in radians (a fixed error, the same at every step); "
            "diagnosed by sst_core.analysis.any_model.diagnose_any, which needs no registry "
            "entry. T_cross 'none': q stays below 1/2 up to the rollout. sigma_min, sigma_max: the "
            "smallest and largest singular values of the return map on U. 'affine': the entry "
            "point's numerical check. Corollary 1: sqrt(R_U(t)) = a + t ||eta_bar|| fitted "
            "over t in [10, 120] ('none': no drift, or a crossing beyond 10^6).")
    return Table("Exact and perturbed Householder trackers through the public diagnostics",
                 cols, rows, note, ids, data)


def torch_module_check(P: Profile, root=None) -> Table:
    """The trained torch GRU / LSTM trackers diagnosed twice: as registry models
    (:func:`sst_core.analysis.error_control.diagnose`) and as the plain torch modules inside
    them (:func:`sst_core.analysis.any_model.diagnose_any`), side by side."""
    from sst_core.store.codec import stored_curve

    cfgs = beyond.torch_module_grid(P)
    plain = {json_key(r["config"]["run"]): r for r in stored_records(cfgs, root)}
    registry = {json_key(r["config"]["run"]): r for r in delta_diagnostic_records(P, root)}
    cols = ["model", "lr", "seed", "T_cross (registry)", "T_cross (plain module)",
            "‖Qᵀ J Q‖ (registry)", "‖Qᵀ J Q‖ (plain module)", "max |Δq| / max q"]
    rows, data, ids = [], [], []
    for c in cfgs:
        key = json_key(config_dict(c.run))
        a, b = registry.get(key), plain.get(key)
        if a is None or b is None or a["status"] != "ok" or b["status"] != "ok":
            status = "missing" if a is None or b is None else "failed"
            rows.append([model_name(c.run.model), c.run.lr, c.run.seed] + [status] * 5)
            data.append({"model": c.run.model, "status": status})
            continue
        ma, mb = a["metrics"], b["metrics"]
        (ta, qa), (tb, qb) = stored_curve(ma, "q"), stored_curve(mb, "q")
        if not np.array_equal(ta, tb):
            raise ValueError(f"records {a['run_id']} and {b['run_id']} store q(t) at "
                             "different times")
        finite = np.isfinite(qa) & np.isfinite(qb)
        rel = (float(np.max(np.abs(qa[finite] - qb[finite])) / max(np.max(np.abs(qa[finite])), 1e-300))
               if finite.any() else None)
        rows.append([model_name(c.run.model), c.run.lr, c.run.seed, crossing(ma["T_cross"]),
                     crossing(mb["T_cross"]), format_value(ma["theorem1"].get("gain")),
                     format_value(mb["theorem1"].get("gain")), format_value(rel, ".2g")])
        data.append({"model": c.run.model, "status": "ok", "T_cross": ma["T_cross"],
                     "T_cross_plain": mb["T_cross"], "gain": ma["theorem1"].get("gain"),
                     "gain_plain": mb["theorem1"].get("gain"), "q_rel_diff": rel,
                     "failure_mode": mb["failure_mode"]})
        ids += [a["run_id"], b["run_id"]]
    note = ("One S3 run of each (the grid's first learning rate and seed): the registry's "
            "diagnostics record beside diagnose_any on torch_module(model), the plain "
            "nn.GRU / nn.LSTM with the model's weights and W_out as the readout, on the same "
            "held-out words. State-dependent recurrences: Theorem 1 does not apply; a gain "
            "below 1 is the contraction the theory allows them.")
    return Table("torch's GRU and LSTM through the public diagnostics", cols, rows, note, ids,
                 data)



def delta_summary(P: Profile, root=None) -> dict[str, Any]:
    """The numbers the delta chapter's prose cites, typed, from the tables above (None where
    a record is missing): DeltaProduct's one-layer S3 and A5 cells (``status``, ``m_p``) and
    the singular values of its S3 return map on U; how many Householder models that pass the
    training length the measured and Corollary 1's crossing times predict
    (:func:`delta_theory_check`) out of how many, and how many fail at it (``n_untested``,
    whose verdicts have next to no power) with the latest crossing among them; every model's
    S3 diagnostics (``lens``: m_p, T_cross, the return map's singular values and distance
    from I on U, Corollary 1's crossing time);
    how many one-layer cells the theory calls "yes" / "no" (:func:`delta_verdicts`) and how
    many of them reach the longest length; the torch modules' agreement
    (:func:`torch_module_check`); the S3 exact tracker that drifts and crosses and the first
    perturbed tracker whose Corollary 1 crossing lies inside the rollout while q never crosses,
    and how many perturbed trackers have their Corollary 1 crossing inside the rollout
    (``exact_predicted``) and in how many of those q crosses (``exact_predicted_crossed``)
    (:func:`exact_trackers`, their data rows); the recovery's steps; the grid's runs per cell."""
    Pb = beyond.beyond_profile(P)
    table = delta(P, root)
    dp = next(d for d in table.data if d["model"] == "deltaproduct")
    cells = len(table.data) * len(dp["cells"])
    theory = delta_theory_check(P, root)
    tested = [d for d in theory if d["passes"]]  # the rule has next to no power on the rest
    untested = [d for d in theory if not d["passes"]]
    verdicts = [v for v in delta_verdicts(P, root) if v["reaches_longest"] is not None]
    torch_ok = [d for d in torch_module_check(P, root).data if d["status"] == "ok"]
    exact = [d for d in exact_trackers(P, root).data if d["status"] == "ok"]
    drifting = [d for d in exact if d["group"] == "S3" and d["drift"] > 0
                and d["T_cross"] is not None]
    # a perturbed tracker whose Corollary 1 crossing lies inside the rollout, yet q never crosses
    # the perturbed trackers whose Corollary 1 crossing lies inside the rollout
    predicted = [d for d in exact if d["drift"] > 0 and d["T_pred"] is not None
                 and d["T_pred"] <= d["rollout"]]
    # one of them whose q never crosses
    missed = [d for d in predicted if d["T_cross"] is None]
    out = {"per_cell": len(beyond.delta_grid(P)) // max(1, cells),
           "recovery_steps": paper1.recovery_steps(P),  # as diagnostics_config(P, ...) runs them
           "dp_S3": dp["cells"][f"S3 L{Pb.track_depths[0]}"],
           "dp_A5": dp["cells"][f"A5 L{Pb.track_depths[0]}"],
           "dp_gain_min": dp.get("gain_min"), "dp_gain": dp.get("gain"),
           "measured": sum(d["measured"] for d in tested), "n_theory": len(tested),
           "corollary": sum(bool(d["corollary"]) for d in tested),
           "n_corollary": sum(d["corollary"] is not None for d in tested),
           "n_untested": len(untested),
           "untested_T_max": max((d["T_cross"] for d in untested if d["T_cross"] is not None),
                                 default=None),
           "lens": {d["model"]: {k: d.get(k) for k in ("m_p_diag", "T_cross", "gain",
                                                       "gain_min", "deviation_U", "T_pred")}
                    for d in table.data if d["diagnostics"] == "ok"},
           "torch_same": sum(d["T_cross"] == d["T_cross_plain"] for d in torch_ok),
           "n_torch": len(torch_ok),
           "torch_q_diff": max((d["q_rel_diff"] or 0 for d in torch_ok), default=None),
           "exact_S3": drifting[0] if drifting else None,
           "exact_missed": missed[0] if missed else None,
           "exact_predicted": len(predicted),
           "exact_predicted_crossed": sum(d["T_cross"] is not None for d in predicted)}
    for kind in ("yes", "no"):
        kind_cells = [v for v in verdicts if v["predicted"] == kind]
        out[f"reach_{kind}"] = sum(v["reaches_longest"] for v in kind_cells)
        out[f"n_{kind}"] = len(kind_cells)
    return out
