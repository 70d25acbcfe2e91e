"""Tables of the error-control chapters from stored ``tracking_diagnostics`` records.

- ``theorem1``: for the best S3 run of each model, the return map of state-preserving
  words restricted to U: ``||(J - I) Q||`` and ``||Q^T J Q||``, beside the class;
- ``diagnostics``: T_cross (both conventions and thresholds), m_p, q at m_p, the failure
  mode, and the recovery of a perturbation, per model;
- ``split_at_m_p``: Figure 3's q, q_U and q_U_perp at m_p, per model (through the readout
  and without it); ``figure3_table`` adds at how many stored times q_U is below q_U_perp;
- ``figure4``: the correlation of log T_cross with log m_p over the selected affine runs,
  and the bootstrap interval of q at m_p, beside the paper's numbers;
- ``figure4_within``: that correlation per architecture, within architectures and between
  them;
- ``figure4_both_ways``: Figure 4 with the paper's mean spread and with the median spread,
  pooled and per depth; ``spread_ratio``: the ratio of the two at m_p per architecture;
  ``spread_tail``: what makes the token-gated RNN's spread heavy-tailed;
- ``theorem1_steps_table``, ``theorem1_instances_table``: the SymPy checks of Theorem 1
  (:mod:`sst_core.theory.error_control`) as tables.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from sst_core.experiments.paper1 import recovery_steps
from sst_core.reports import Table, format_value, stored_records
from sst_core.reports.paper1 import label_name
from sst_core.reports.select import best_per_cell, run_config
from sst_core.spec import paper_values
from sst_core.spec.profiles import Profile

PAPER_FIGURE4 = paper_values.FIGURE4
# Figure 4's bootstrap intervals: how many resamples of the runs, and the generator's seed
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0
# what a Corollary 1 table's drift column is, and what it is when the spread does not grow
DRIFT_NOTE = ("The drift column is the fitted slope; at or below 0 the spread along U does "
              "not grow over the window (nothing drifts there to fit), and Corollary 1 "
              "predicts no crossing ('—').")


def with_interval(est: float | None, lo: float | None = None, hi: float | None = None,
                  digits: int = 3) -> str:
    """A number with its 95% interval as the tables and the prose show it: ``0.656 [0.58,
    0.72]``; a dash for a missing number, the number alone without an interval."""
    if est is None:
        return "—"
    return f"{est:.{digits}f}" + ("" if lo is None or hi is None else f" [{lo:.2f}, {hi:.2f}]")


def stored_times_spacing(L: int) -> dict[str, Any]:
    """How a curve over t = 1..L is stored (:func:`sst_core.store.codec.curve_times`), as
    the captions say it: every t up to ``dense``, then stored times at most ``step`` apart
    (the largest relative gap, ``t_next / t - 1``, between stored times after ``dense``;
    0 where every t is stored)."""
    from sst_core.store.codec import CURVE_DENSE, curve_times

    t = curve_times(L)
    later = t[t >= CURVE_DENSE]  # (n,) from the last densely stored time on
    gaps = later[1:] / later[:-1] - 1
    return {"dense": CURVE_DENSE, "step": float(gaps.max()) if gaps.size else 0.0}


def diagnostic_records(P: Profile, root=None, which: str = "all") -> list[dict[str, Any]]:
    """Stored diagnostics records of a record set (:func:`diagnostic_configs`)."""
    return stored_records(diagnostic_configs(P, root, which), root)


DIAGNOSTIC_SETS = ("all", "s3", "figure4", "figure4_wide")


def diagnostic_configs(P: Profile, root=None, which: str = "all") -> list[Any]:
    """The diagnostics configs of a record set (:data:`DIAGNOSTIC_SETS`): every one of the
    chapter's grid (``all``), Table 2's S3 runs (``s3``), Figure 4's population
    (``figure4``) and that population at the wider d_model (``figure4_wide``)."""
    from sst_core.experiments.paper1 import (
        diagnostics_config,
        diagnostics_grid,
        figure4_population,
        figure4_wide_population,
        s3_runs,
    )

    if which == "all":
        return diagnostics_grid(P)
    if which == "s3":
        return [diagnostics_config(P, c) for c in s3_runs(P)]
    if which == "figure4":
        return [diagnostics_config(P, c) for c in figure4_population(P, root)]
    if which == "figure4_wide":
        return [diagnostics_config(P, c) for c in figure4_wide_population(P, root)]
    raise ValueError(f"unknown record set {which!r}; allowed: {', '.join(DIAGNOSTIC_SETS)}")


def best_per_model(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The best run of each (model, depth), labelled ``model`` or ``model L2``: the largest
    m_p, ties by :func:`sst_core.reports.select.best_per_cell`'s rule (Table 2's)."""
    return best_per_cell(records, architecture)


def split_at_m_p(records: list[dict[str, Any]], fallback: int = 60) -> dict[str, dict[str, Any]]:
    """Figure 3's ratios read at each record's ``m_p`` (at ``fallback``, the training
    length, for a model that fails there; at most the rollout): model -> ``{"t", "q",
    "q_U", "q_U_perp"}`` (through ``W_out``), with ``"q_U_identity"`` and
    ``"q_U_perp_identity"`` (without the readout, ``W = I``) where the record stores them."""
    from sst_core.store.codec import curve_value, stored_curve

    out = {}
    for r in records:
        m = r["metrics"]
        t_q, q = stored_curve(m, "q")
        t = min(m["m_p"] or fallback, int(t_q[-1]))
        keys = ("q", "q_U", "q_U_perp") + tuple(
            k for k in ("q_U_identity", "q_U_perp_identity") if k in m)
        out[r["config"]["run"]["model"]] = {
            "t": t, **{k: curve_value(*stored_curve(m, k), t) for k in keys}}
    return out


def times_q_U_below(metrics: dict[str, Any], suffix: str = "") -> tuple[int, int] | None:
    """At how many of a record's stored times ``t >= 2`` the spread inside U is below the
    spread outside it (``q_U{suffix} < q_U_perp{suffix}``; suffix ``""`` through ``W_out``,
    ``"_identity"`` without the readout), and of how many such times; None where the record
    does not store the two curves. (At t = 1 both are 0 by construction.)"""
    from sst_core.store.codec import stored_curve

    ku, kp = f"q_U{suffix}", f"q_U_perp{suffix}"
    if ku not in metrics or kp not in metrics:
        return None
    t, qu = stored_curve(metrics, ku)  # (n_t,) each
    qp = np.asarray(stored_curve(metrics, kp)[1], dtype=float)
    qu = np.asarray(qu, dtype=float)
    later = np.asarray(t) >= 2
    return int(np.sum(qu[later] < qp[later])), int(np.sum(later))


def overtaken_from(metrics: dict[str, Any], suffix: str = "") -> int | None:
    """The stored time from which the spread inside U stays at or above the spread outside
    it (``q_U{suffix} >= q_U_perp{suffix}`` at that and every later stored time ``t >= 2``;
    suffix as in :func:`times_q_U_below`): 2 where it is so from the start; None where
    q_U is below at the last stored time, or the record lacks the curves."""
    from sst_core.store.codec import stored_curve

    ku, kp = f"q_U{suffix}", f"q_U_perp{suffix}"
    if ku not in metrics or kp not in metrics:
        return None
    t, qu = stored_curve(metrics, ku)  # (n_t,) each
    qp = np.asarray(stored_curve(metrics, kp)[1], dtype=float)
    later = np.asarray(t) >= 2
    t, below = np.asarray(t)[later], (np.asarray(qu, dtype=float) < qp)[later]
    if below.size == 0 or below[-1]:
        return None
    hit = np.flatnonzero(below)
    return int(t[0] if hit.size == 0 else t[hit[-1] + 1])


def figures12_numbers(best: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What the diagnostics chapter reads off Figures 1 and 2 for the best run per model
    (:func:`best_per_model`): ``recovery_sd_max`` and ``recovery_affine_min``, the largest
    error left along U after the last recovery step among the state-dependent models and the
    smallest among the affine ones (None without one); ``before`` of ``before_n``: of the
    affine models that pass the training length and whose q crosses, how many cross no later
    than m_p; ``recovery_affine_below_sd`` of ``recovery_affine_n``: how many affine models
    leave less error along U than the state-dependent model that leaves the most (0 without
    a state-dependent one)."""
    final = {k: (r["metrics"]["is_affine"], r["metrics"]["recovery"]["U"][-1])
             for k, r in best.items()}
    sd = [v for affine, v in final.values() if not affine and v is not None]
    af = [v for affine, v in final.values() if affine and v is not None]
    passed = [r["metrics"] for r in best.values() if r["metrics"]["is_affine"]
              and r["metrics"]["T_cross"] is not None and r["metrics"]["m_p"]]
    return {"recovery_sd_max": max(sd) if sd else None,
            "recovery_affine_min": min(af) if af else None,
            "recovery_affine_below_sd": sum(v < max(sd) for v in af) if sd else 0,
            "recovery_affine_n": len(af),
            "before": sum(m["T_cross"] <= m["m_p"] for m in passed), "before_n": len(passed)}


# the paper's failure modes (section 3.5 of the reference): saturation, "q(0) = R(0)/M(0) is
# already at or above the threshold"; climb, q starts low and crosses later. q(1) is 0 for
# every model (after one token the state is a function of that token alone), so "the start"
# is t = 2, the first position at which a class can have any spread
START_T = 2


def start_mode(record: dict[str, Any]) -> dict[str, Any]:
    """The failure mode of a diagnostics record by the paper's wording, read from its stored
    q curve: ``"saturation"`` when q at t = :data:`START_T` is already at or above the
    record's tau; ``"climb"`` when it starts below tau and crosses later (the record's
    T_cross, read at every t); ``"none"`` when q never reaches tau within the rollout. The
    rule does not test that the climb is linear. Returns ``{"mode", "q_start",
    "crosses_in_training"}``, the last whether T_cross is at most the training length
    (None without a crossing): the rule the records' own ``failure_mode`` field applies,
    which is not the paper's."""
    from sst_core.store.codec import curve_value, stored_curve

    m, tau = record["metrics"], record["config"]["tau"]
    q_start = curve_value(*stored_curve(m, "q"), START_T)
    q_start = q_start if np.isfinite(q_start) else None  # not stored, or overflowed
    T = m["T_cross"]
    if q_start is not None and q_start >= tau:
        mode = "saturation"
    else:
        mode = "none" if T is None else "climb"
    t_train = run_config(record)["curriculum_max"]
    return {"mode": mode, "q_start": q_start,
            "crosses_in_training": None if T is None else T <= t_train}


def figure2_modes(best: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The failure modes (:func:`start_mode`) of the best run per model
    (:func:`best_per_model`, both depths) against the ones the paper names in its Figure 2
    (:data:`sst_core.spec.paper_values.FIGURE2_MODES`): of the ``compared`` runs of those
    models, how many have the paper's mode (``agree``), and the others' names and modes,
    ours / the paper's (``differ``: "Mamba: climb / saturation"; "none" where all agree);
    per mode the paper names, how many of the compared runs it names it for
    (``{mode}_n``) and how many of those have it (``{mode}_agree``)."""
    modes = paper_values.FIGURE2_MODES
    rows = [(label, start_mode(r)["mode"], modes[label.partition(" ")[0]])
            for label, r in sorted(best.items()) if label.partition(" ")[0] in modes]
    differ = [f"{label_name(label)}: {ours} / {paper}" for label, ours, paper in rows
              if ours != paper]
    per_mode = {}
    for mode in sorted(set(modes.values())):
        named = [ours for _, ours, paper in rows if paper == mode]
        per_mode.update({f"{mode}_n": len(named), f"{mode}_agree": named.count(mode)})
    return {"compared": len(rows), "agree": len(rows) - len(differ),
            "differ": "; ".join(differ) or "none", **per_mode}


def mode_numbers(best: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What the chapter reads off the failure modes (:func:`start_mode`) of the best run per
    affine model (:func:`best_per_model`): ``start_t`` (the time the rule reads), how many
    of the ``affine_n`` runs start saturated (``saturation``, their names
    ``saturation_models``) and how many climb (``climb``; ``climb_in_training`` of those
    cross within the training length, and ``climb_in_training_fail`` of these fail there,
    m_p None); and for the runs of the models the paper calls
    saturated (``paper_saturation_n``), the largest q at the start
    (``paper_saturation_q_start_max``) and their earliest and latest crossing
    (``paper_saturation_T_lo``, ``_T_hi``; None without such a run)."""
    affine = {k: (r, start_mode(r)) for k, r in sorted(best.items())
              if r["metrics"]["is_affine"]}
    sat = [k for k, (_, s) in affine.items() if s["mode"] == "saturation"]
    climb = [s for _, s in affine.values() if s["mode"] == "climb"]
    named = [(r, s) for k, (r, s) in affine.items()
             if paper_values.FIGURE2_MODES.get(k.partition(" ")[0]) == "saturation"]
    T = [r["metrics"]["T_cross"] for r, _ in named if r["metrics"]["T_cross"] is not None]
    q0 = [s["q_start"] for _, s in named if s["q_start"] is not None]
    return {"start_t": START_T, "affine_n": len(affine), "saturation": len(sat),
            "saturation_models": "; ".join(label_name(k) for k in sat) or "none",
            "climb": len(climb),
            "climb_in_training": sum(bool(s["crosses_in_training"]) for s in climb),
            "climb_in_training_fail": sum(bool(s["crosses_in_training"])
                                          and r["metrics"]["m_p"] is None
                                          for r, s in affine.values()
                                          if s["mode"] == "climb"),
            "paper_saturation_n": len(named),
            "paper_saturation_q_start_max": max(q0, default=None),
            "paper_saturation_T_lo": min(T, default=None),
            "paper_saturation_T_hi": max(T, default=None)}


def figure3_records(records: list[dict[str, Any]],
                    models: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """Figure 3's runs: for each of ``models`` (default
    :data:`sst_core.experiments.paper1.FIGURE3_MODELS`, the paper's four), its best run over
    both depths by the rule of :func:`sst_core.reports.select.best_per_cell` (the largest
    m_p first), kept only when it passes the training length (an m_p): the paper reads
    q_U against q_U_perp near m_p. In the order of ``models``."""
    from sst_core.experiments.paper1 import FIGURE3_MODELS

    best = best_per_cell(records, lambda r: run_config(r)["model"])
    return [best[k] for k in (models or FIGURE3_MODELS)
            if k in best and best[k]["metrics"]["m_p"] is not None]


# Figure 1: a model contracts an error (the paper: "by orders of magnitude") when it keeps
# less than this share of it after the last step
RECOVERY_CONTRACT = 1e-2


def recovery_numbers(best: dict[str, dict[str, Any]], below: float = 0.5,
                     amplifier: str = "token_gated_rnn") -> dict[str, Any]:
    """Figure 1's protocol and what it shows, from the best run per model
    (:func:`best_per_model`): the protocol as the records store it (``n_perturb`` words,
    perturbed after ``t0`` tokens by ``eps`` times the state's norm and followed
    ``perturb_steps`` steps; ``t_ref``, the time of the readout space's U; ValueError where
    the records disagree); the largest error left in a random direction by a
    state-dependent model (``sd_random_max``); the smallest and largest error left along
    U by the runs of ``amplifier`` (``amplifier_U_lo``, ``_hi``); of the affine models, how
    many end with an error along U below ``below`` of the initial one (``affine_below``,
    of ``affine_n``), and the smallest and largest factor by which those shrink it
    (``factor_lo``, ``factor_hi``: 1 / the error left). None where there is no such run.

    The paper's three claims as counts, each of the models it names: of the ``sd_n``
    state-dependent models, ``sd_contract`` keep less than :data:`RECOVERY_CONTRACT` of the
    error in a random direction; of the ``amplifier_n`` runs of ``amplifier``,
    ``amplifier_above`` end with more than the initial error along U; of the affine models,
    ``affine_neutral`` end along U between ``below`` and ``above`` (``1 / below``) times
    the initial error.
    ``claims``: how many of the three hold for every model they name (and at least one)."""
    keys = ("n_perturb", "t0", "eps", "perturb_steps", "t_ref")
    protocol = {tuple(r["config"][k] for k in keys) for r in best.values()}
    if len(protocol) > 1:
        raise ValueError(f"Figure 1's records differ in their protocol {keys}: {protocol}")

    def last(r: dict[str, Any], direction: str) -> float | None:
        return r["metrics"]["recovery"][direction][-1]

    final = [v for r in best.values() if r["metrics"]["is_affine"]
             if (v := last(r, "U")) is not None]
    shrunk = [1 / v for v in final if v < below]
    sd = [v for r in best.values() if not r["metrics"]["is_affine"]
          if (v := last(r, "random")) is not None]
    amp = [v for k, r in best.items() if k.partition(" ")[0] == amplifier
           if (v := last(r, "U")) is not None]
    neutral = [v for v in final if below <= v <= 1 / below]
    counts = {"sd_n": len(sd), "sd_contract": sum(v < RECOVERY_CONTRACT for v in sd),
              "amplifier_n": len(amp), "amplifier_above": sum(v > 1 for v in amp),
              "affine_neutral": len(neutral)}
    claims = sum(0 < counts[k] == counts[n] for k, n in (
        ("sd_contract", "sd_n"), ("amplifier_above", "amplifier_n")))
    claims += 0 < len(neutral) == len(final)
    return {**dict(zip(keys, next(iter(protocol), (None,) * len(keys)))),
            **counts, "claims": claims, "contract": RECOVERY_CONTRACT, "above": 1 / below,
            "sd_random_max": max(sd, default=None),
            "amplifier_U_lo": min(amp, default=None), "amplifier_U_hi": max(amp, default=None),
            "affine_n": len(final), "affine_below": len(shrunk), "below": below,
            "factor_lo": min(shrunk, default=None), "factor_hi": max(shrunk, default=None)}


def analysed_counts(records: list[dict[str, Any]]) -> dict[str, Any]:
    """How many trained runs the diagnostics ``records`` analyse: distinct training runs
    with an ``ok`` record (``analysed``), and those whose record failed (``failed``, with
    their architectures, ``failed_models``, as the papers name them)."""
    import json

    ok, bad = {}, {}
    for r in records:
        key = json.dumps(run_config(r), sort_keys=True, default=str)
        (ok if r["status"] == "ok" else bad)[key] = r
    bad = {k: r for k, r in bad.items() if k not in ok}
    return {"analysed": len(ok), "failed": len(bad),
            "failed_models": "; ".join(sorted(label_name(architecture(r))
                                              for r in bad.values())) or "none"}


def p_text(p: float | None) -> str:
    """A p-value as a table shows it, on one line: ``0.0031``, ``2.1×10⁻²⁵`` below 10⁻³
    (no hyphen for a browser to break at); a dash for None."""
    if p is None:
        return "—"
    if p >= 1e-3 or p == 0:
        return f"{p:.2g}"
    mant, exp = f"{p:.1e}".split("e")
    sup = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
    return f"{mant}×10{str(int(exp)).translate(sup)}"


def figure3_table(records: list[dict[str, Any]]) -> Table:
    """Figure 3's ratios read at m_p (:func:`split_at_m_p`) as a table, per record: q, q_U
    and q_U_perp through ``W_out``, whether q_U is below q_U_perp (the paper's "q_U stays
    suppressed"), whether both exceed q (the readout cancels most of the spread, and
    comparing the two says little about decoding), and at how many stored times q_U is
    below q_U_perp (:func:`times_q_U_below`); then q_U and q_U_perp without the readout
    (``W = I``, the bottom row of Figure 3), the same comparison at m_p and over the stored
    times, and from which stored time q_U stays at or above q_U_perp
    (:func:`overtaken_from`). ``split(2, 9)`` gives the two views as two tables."""
    at = split_at_m_p(records)
    cols = ["model", "t", "q", "q_U", "q_U⊥", "q_U below q_U⊥", "both above q",
            "times with q_U below q_U⊥", "q_U ≥ q_U⊥ from t", "q_U (W = I)",
            "q_U⊥ (W = I)", "q_U below q_U⊥ (W = I)", "times with q_U below q_U⊥ (W = I)",
            "q_U ≥ q_U⊥ from t (W = I)"]

    def count(c: tuple[int, int] | None) -> str:
        return "—" if c is None else f"{c[0]} of {c[1]}"

    rows, data = [], []
    for r in records:
        model = r["config"]["run"]["model"]
        a = at[model]
        below = a["q_U"] < a["q_U_perp"]
        both = a["q_U"] > a["q"] and a["q_U_perp"] > a["q"]
        below_i = (a["q_U_identity"] < a["q_U_perp_identity"]
                   if "q_U_identity" in a and "q_U_perp_identity" in a else None)
        times = times_q_U_below(r["metrics"])
        times_i = times_q_U_below(r["metrics"], "_identity")
        over, over_i = overtaken_from(r["metrics"]), overtaken_from(r["metrics"], "_identity")
        rows.append([label_name(architecture(r)), a["t"], format_value(a["q"]),
                     format_value(a["q_U"]), format_value(a["q_U_perp"]),
                     "yes" if below else "no", "yes" if both else "no", count(times),
                     format_value(over), format_value(a.get("q_U_identity")),
                     format_value(a.get("q_U_perp_identity")),
                     "—" if below_i is None else ("yes" if below_i else "no"), count(times_i),
                     format_value(over_i)])
        data.append({"model": model, "is_affine": r["metrics"]["is_affine"],
                     "m_p": r["metrics"]["m_p"], **a,
                     "q_U_below": below, "both_above_q": both, "times_q_U_below": times,
                     "q_U_below_identity": below_i, "times_q_U_below_identity": times_i,
                     "overtaken_from": over, "overtaken_from_identity": over_i})
    note = ("At t = m_p (at the training length 60 for a model that fails there; at most the "
            "rollout), through W_out and without it (W = I); times: the stored times t >= 2 "
            "at which q_U < q_U_perp, of all stored times t >= 2; from t: the stored time "
            "from which q_U >= q_U_perp to the end of the rollout ('—': q_U is below at "
            "the end).")
    return Table("Figure 3's ratios at m_p", cols, rows, note, [r["run_id"] for r in records],
                 data)


def figure3_numbers(data: list[dict[str, Any]]) -> dict[str, Any]:
    """:func:`figure3_table`'s ``data`` in counts, per class (``sd``: state-dependent,
    ``af``: affine) and view (suffix ``""`` through ``W_out``, ``"_i"`` without the
    readout): ``{cls}_n`` models; ``{cls}_below{view}``, those with q_U below q_U_perp at
    m_p; ``contrast{view}``, the paper's contrast by that reading, "holds" when q_U is below
    in every state-dependent model and in no affine one (with at least one of each), else
    "fails"; ``af_over{view}``, the latest stored time from which an affine model's q_U
    stays at or above q_U_perp (0 without one), ``af_early{view}``, the affine models in
    which it does so from a time at most half their m_p, and ``af_m_p``, their smallest
    m_p (0 without one)."""
    sd = [d for d in data if not d["is_affine"]]
    af = [d for d in data if d["is_affine"]]
    out = {"sd_n": len(sd), "af_n": len(af),
           "af_m_p": min((d["m_p"] for d in af if d["m_p"]), default=0)}
    for view, suffix in (("", ""), ("_i", "_identity")):
        sd_below = sum(bool(d[f"q_U_below{suffix}"]) for d in sd)
        af_below = sum(bool(d[f"q_U_below{suffix}"]) for d in af)
        over = [(d[f"overtaken_from{suffix}"], d["m_p"]) for d in af]
        out.update({
            f"sd_below{view}": sd_below, f"af_below{view}": af_below,
            f"contrast{view}": "holds" if sd and af and sd_below == len(sd)
            and af_below == 0 else "fails",
            f"af_over{view}": max((t or 0 for t, _ in over), default=0),
            f"af_early{view}": sum(t is not None and m_p is not None and t <= m_p / 2
                                   for t, m_p in over)})
    return out


def theorem1_table(P: Profile, root=None) -> Table:
    best = best_per_model(diagnostic_records(P, root, "s3"))
    cols = ["model", "class", "m_p", "dim U", "‖(J − I) Q‖", "‖P_U (J − I) P_U‖", "‖Qᵀ J Q‖",
            "‖F_s(h) − h‖"]
    rows, data, ids = [], [], []
    for label, r in sorted(best.items(), key=lambda kv: (kv[1]["metrics"]["is_affine"], kv[0])):
        m, t1 = r["metrics"], r["metrics"]["theorem1"]
        cls = "affine" if m["is_affine"] else "state-dependent"
        rows.append([label_name(label), cls, format_value(m["m_p"]) if m["m_p"] else "fail",
                     t1["dim_U"],
                     format_value(t1["deviation"]), format_value(t1.get("deviation_U")), format_value(t1["gain"]),
                     format_value(t1["return_residual"])])
        data.append({"model": label, "is_affine": m["is_affine"], "m_p": m["m_p"],
                     "t0": r["config"]["t0"], "n_perturb": r["config"]["n_perturb"],
                     **{k: t1.get(k) for k in ("dim_U", "deviation", "deviation_U", "gain",
                                               "amplification", "return_residual")}})
        ids.append(r["run_id"])
    note = ("Return map F_s of state-preserving S3 words s (length 6, product = identity) at "
            "states reached after 30 tokens; Q is an orthonormal basis of U, the span of the "
            f"differences of the state centroids; medians over {P.diag_n_preserving} words. "
            "Theorem 1: an affine F_s that fixes every centroid has (J - I) Q = 0, hence also "
            "P_U (J - I) P_U = 0; a state-dependent map can have "
            f"||Q^T J Q|| < 1. Best S3 run per model.")
    return Table("Theorem 1 on trained models: the return map on U", cols, rows, note, ids, data)


def theorem1_numbers(data: list[dict[str, Any]]) -> dict[str, Any]:
    """What the theory chapter reads off :func:`theorem1_table`'s ``data``, each statistic
    per class (``aff_``: affine, ``sd_``: state-dependent): the number of rows (``n``), the
    median of ``||(J - I) Q||`` (``dev_median``), the lowest and highest ``||Q^T J Q||``
    (``gain_lo``, ``gain_hi``) and how many rows have it below 1 (``contract``); the
    affine rows that fail at length 60 (``aff_fail``); the smallest return residual
    ``||F_s(h) - h||`` of any row (``residual_min``); ``t0`` and ``n_perturb`` (the time U
    is taken at and the words its centroids come from; ValueError where rows disagree);
    and ``dim U`` of the one-layer linear attention (``linear_attention_dim_U``). NaN or
    None where there is no such row."""
    nan = float("nan")
    out: dict[str, Any] = {}
    for prefix, cls in (("aff", True), ("sd", False)):
        rows = [d for d in data if d["is_affine"] == cls]
        dev = [d["deviation"] for d in rows if d["deviation"] is not None]
        gain = [d["gain"] for d in rows if d["gain"] is not None]
        out.update({f"{prefix}_n": len(rows),
                    f"{prefix}_dev_median": float(np.median(dev)) if dev else nan,
                    f"{prefix}_gain_lo": min(gain, default=nan),
                    f"{prefix}_gain_hi": max(gain, default=nan),
                    f"{prefix}_contract": sum(g < 1 for g in gain)})
    out["aff_fail"] = sum(d["is_affine"] and d["m_p"] is None for d in data)
    out["residual_min"] = min((d["return_residual"] for d in data
                               if d["return_residual"] is not None), default=nan)
    for key in ("t0", "n_perturb"):
        values = {d[key] for d in data}
        if len(values) > 1:
            raise ValueError(f"Theorem 1's rows differ in {key}: {sorted(values)}")
        out[key] = next(iter(values), None)
    out["linear_attention_dim_U"] = next((d["dim_U"] for d in data
                                          if d["model"] == "linear_attention"), None)
    return out


def diagnostics_table(P: Profile, root=None) -> Table:
    """The crossings, q at m_p, the failure mode from the start (:func:`start_mode`) beside
    the paper's, and the perturbation left after the last recovery step, for the best S3
    run of each model (:func:`best_per_model`). ``split(1, 6)`` gives the crossings and the
    rest as two tables."""
    best = best_per_model(diagnostic_records(P, root, "s3"))
    cols = ["model", "class", "m_p", "T_cross (q ≥ 1/2)", "T_cross (q ≥ 1)",
            "T_cross (√R/√M ≥ 1/2)", "q at m_p", f"q at t = {START_T}", "mode",
            "paper's mode", f"recovery after {recovery_steps(P)} steps (random / U)"]
    rows, data, ids = [], [], []
    for label, r in sorted(best.items(), key=lambda kv: (kv[1]["metrics"]["is_affine"], kv[0])):
        m = r["metrics"]
        rec = {k: next((v for v in reversed(m["recovery"][k]) if v is not None), None)
               for k in ("random", "U")}
        start = start_mode(r)
        paper = paper_values.FIGURE2_MODES.get(label.partition(" ")[0])
        rows.append([label_name(label), "affine" if m["is_affine"] else "state-dependent",
                     m["m_p"] if m["m_p"] else "fail", format_value(m["T_cross"]),
                     format_value(m["T_cross_1"]), format_value(m["T_cross_sqrt"]),
                     format_value(m["q_at_m_p"]), format_value(start["q_start"]),
                     start["mode"], paper or "—",
                     f"{format_value(rec['random'], '.2g')} / {format_value(rec['U'], '.2g')}"])
        data.append({"model": label, "is_affine": m["is_affine"], "m_p": m["m_p"],
                     "T_cross": m["T_cross"], "T_cross_1": m["T_cross_1"],
                     "T_cross_sqrt": m["T_cross_sqrt"], "q_at_m_p": m["q_at_m_p"],
                     **start, "paper_mode": paper, "recovery_final": rec})
        ids.append(r["run_id"])
    note = ("q = R/M with squared norms (the paper's definition); √R/√M is the unsquared ratio, "
            "for which 1/2 is the nearest-centroid bound on the mean spread (not on every "
            "word). T_cross is a length (the number of tokens read); '—' = q stays below the "
            f"threshold up to the rollout. Modes, from the paper's wording: saturation (q at "
            f"t = {START_T}, the first position with any spread, already >= 1/2), climb "
            "(starts below 1/2, crosses later), none (never crosses). Best S3 run per model.")
    return Table("Error-control diagnostics of the trained S3 trackers", cols, rows, note, ids, data)


def resampled_r(x: np.ndarray, y: np.ndarray) -> Callable[..., Any]:
    """Pearson r of ``x`` and ``y`` (each (n,)) over the runs a row of indices names, as a
    statistic for :func:`sst_core.analysis.stats.bootstrap_ci` resampling the indices
    ``arange(n)`` (it hands them over as floats): ``stat(rows, axis)`` with rows (n,) or
    (n_boot, n) gives r per row (``scipy.stats.pearsonr``, NaN for a row whose x or y is
    constant)."""
    import warnings

    import scipy.stats

    def stat(rows: np.ndarray, axis: int = -1) -> np.ndarray:
        i = np.asarray(rows).astype(np.int64)  # (..., n) run indices
        with warnings.catch_warnings():  # a constant resample: NaN, said by the caller
            warnings.simplefilter("ignore")
            return scipy.stats.pearsonr(x[i], y[i], axis=axis).statistic  # (...,)
    return stat


def figure4_stats(records: list[dict[str, Any]], n_boot: int = BOOTSTRAP_RESAMPLES,
                  seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """Pearson r of log T_cross vs log m_p with its bootstrap interval (resampling the runs;
    None where a resample's r is undefined) and the bootstrap interval of q at m_p."""
    from sst_core.analysis.stats import bootstrap_ci, loglog_pearson

    out: dict[str, Any] = {"n": len(records), "r": None, "p": None, "r_lo": None, "r_hi": None,
                           "q_median": None, "q_lo": None, "q_hi": None, "n_q": 0}
    T = np.log([r["metrics"]["T_cross"] for r in records])
    m_p = np.log([r["metrics"]["m_p"] for r in records])
    if len(records) >= 3 and T.std() > 0 and m_p.std() > 0:
        corr = loglog_pearson(np.exp(T), np.exp(m_p))
        out.update(r=float(corr["r"]), p=float(corr["p"]), n=int(corr["n"]))
        _, lo, hi = bootstrap_ci(np.arange(len(records)), resampled_r(T, m_p), n_boot=n_boot,
                                 seed=seed)
        if np.isfinite(lo) and np.isfinite(hi):
            out.update(r_lo=lo, r_hi=hi)
    elif len(records) >= 3:
        out["why_no_r"] = "T_cross or m_p is the same for every selected run"
    else:
        out["why_no_r"] = "fewer than three runs qualify"
    q_at = [r["metrics"]["q_at_m_p"] for r in records if r["metrics"]["q_at_m_p"] is not None]
    out["n_q"] = len(q_at)
    if q_at:
        est, lo, hi = bootstrap_ci(np.asarray(q_at), n_boot=n_boot, seed=seed)
        out.update(q_median=float(est), q_lo=float(lo), q_hi=float(hi))
    # our variant, the median spread (absent from records made before it existed)
    q_med = [r["metrics"]["q_median_at_m_p"] for r in records
             if r["metrics"].get("q_median_at_m_p") is not None]
    out.update(n_q_med=len(q_med), q_med_median=None, q_med_lo=None, q_med_hi=None)
    if q_med:
        est, lo, hi = bootstrap_ci(np.asarray(q_med), n_boot=n_boot, seed=seed)
        out.update(q_med_median=float(est), q_med_lo=float(lo), q_med_hi=float(hi))
    out["T_cross_before_m_p"] = sum(r["metrics"]["T_cross"] <= r["metrics"]["m_p"] for r in records)
    return out


def crossing_before_failure(records: list[dict[str, Any]]) -> dict[str, int]:
    """Of the diagnostics ``records`` that fail within the evaluated lengths (a
    :func:`first_failing_length`), ``n``: how many, and ``before``: in how many T_cross
    comes no later than that length (the records of :func:`figure4_selection`, whose
    T_cross is defined)."""
    failing = [(r["metrics"]["T_cross"], first_failing_length(r)) for r in records]
    failing = [(t, L) for t, L in failing if L is not None]
    return {"before": sum(t <= L for t, L in failing), "n": len(failing)}


def first_failing_length(record: dict[str, Any]) -> int | None:
    """The first evaluated length above a record's m_p (where its token accuracy is below
    the pass threshold, m_p being the largest evaluated length that passes); None where m_p
    is the longest evaluated length or the run fails at every length (m_p None)."""
    m_p = record["metrics"]["m_p"]
    if m_p is None:
        return None
    return min((L for L in run_config(record)["eval_lengths"] if L > m_p), default=None)


def figure4_table(P: Profile, root=None) -> Table:
    from sst_core.experiments.paper1 import (
        FIGURE4_GROWTH_RULE,
        FIGURE4_RULE,
        figure4_growth_cells,
        figure4_growth_runs,
        figure4_selection,
        resample_grid,
    )

    candidates = diagnostic_records(P, root, "figure4")
    selected = figure4_selection(candidates)
    s = figure4_stats(selected)
    failure = crossing_before_failure(selected)
    cols = ["quantity", "ours", "paper"]
    rows = [["models analysed (affine S3 runs with a record)", len(candidates), "—"],
            ["models selected", s["n"], PAPER_FIGURE4["n"]],
            ["Pearson r of log T_cross vs log m_p", format_value(s["r"]), f"{PAPER_FIGURE4['r']}"],
            ["its bootstrap 95% interval", "—" if s["r_lo"] is None else
             f"[{s['r_lo']:.2f}, {s['r_hi']:.2f}]", "—"],
            ["p-value", p_text(s["p"]), p_text(PAPER_FIGURE4["p"])],
            ["median q at m_p", format_value(s["q_median"]), f"{PAPER_FIGURE4['q_median']}"],
            ["bootstrap 95% interval", "—" if s["q_lo"] is None else f"[{s['q_lo']:.2f}, {s['q_hi']:.2f}]",
             f"[{PAPER_FIGURE4['q_lo']}, {PAPER_FIGURE4['q_hi']}]"],
            ["median q at m_p, spread as the median over words (our variant)",
             format_value(s["q_med_median"]) + (f" (n={s['n_q_med']})" if s["n_q_med"] else ""),
             "—"],
            ["its bootstrap 95% interval", "—" if s["q_med_lo"] is None else
             f"[{s['q_med_lo']:.2f}, {s['q_med_hi']:.2f}]", "—"],
            ["runs with T_cross <= m_p", f"{s['T_cross_before_m_p']} of {s['n']}", "all (claimed)"],
            ["runs with T_cross <= the first evaluated length they fail at",
             f"{failure['before']} of {failure['n']}", "—"]]
    note = (f"Selection rule: {FIGURE4_RULE}. Bootstrap: 10,000 resamples of the runs, seed 0. "
            "q is the paper's ratio, the mean squared spread of a class over the smallest "
            "squared gap between class centroids; the variant takes the median spread over "
            "the words instead (sst_core.analysis.diagnostics.median_ratio), which a heavy "
            "tail of far-out words does not dominate.")
    counts = architecture_counts(selected)
    rows.append(["selected runs per architecture",
                 architecture_text(counts), "—"])
    cells = figure4_growth_cells(P, root)
    growth = {"seeds": list(P.fig4_growth_seeds), "rule": FIGURE4_GROWTH_RULE,
              "cells": [f"{m}" + (f" L{d}" if d > 1 else "") for m, d in cells],
              "names": [label_name(f"{m}" + (f" L{d}" if d > 1 else "")) for m, d in cells],
              "runs": len(figure4_growth_runs(P, root))}
    if P.fig4_growth_seeds:
        rows.append(["cells grown (seeds " + ", ".join(map(str, P.fig4_growth_seeds)) + ")",
                     ("; ".join(growth["names"]) + f": {growth['runs']} runs added")
                     if cells else "none yet", "—"])
        note = note.replace("Bootstrap:", f"Growth: {FIGURE4_GROWTH_RULE}. Bootstrap:", 1)
    spread = resample_spread(selected, stored_records(resample_grid(P), root))
    for key, what in (("T_cross", "T_cross"), ("q_at_m_p", "q at m_p")):
        sp = spread[key]
        rows.append([f"{what} on a second word sample: median / largest factor",
                     "—" if sp["n"] == 0 else
                     f"{sp['median_factor']:.2f} / {sp['max_factor']:.2f} (n={sp['n']})", "—"])
    note += (" Word samples: each selected run's diagnostics repeated on fresh held-out words "
             f"(seeds {', '.join(map(str, P.diag_resample_seeds)) or 'none at this profile'}); "
             "factor = max(a/b, b/a) between the two estimates.")
    data = [{**s, "crossing_before_failure": failure, "candidates": len(candidates), "paper": PAPER_FIGURE4, "rule": FIGURE4_RULE,
             "per_architecture": counts, "resample": spread, "growth": growth}]
    return Table("Figure 4: T_cross predicts m_p", cols, rows, note,
                 [r["run_id"] for r in selected], data)


def architecture(record: dict[str, Any]) -> str:
    """The architecture of a diagnostics record's run: model, ``L2`` for two layers."""
    from sst_core.reports.paper1 import run_label

    return run_label(run_config(record))


def overflow_onsets(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ok diagnostics records whose spread R(t) is not finite at some stored time (their
    hidden states overflowed within the rollout, so R, M and q are undefined from then on),
    each trained run once (two analyses of one run count once):
    ``{"run_id", "architecture", "group", "t"}``, ``t`` the first stored time at which R is
    not finite, sorted by architecture, group and ``t``."""
    import json

    from sst_core.store.codec import stored_curve

    out: dict[str, dict[str, Any]] = {}
    for r in records:
        if r["status"] == "ok" and "R" in r["metrics"]:
            t, R = stored_curve(r["metrics"], "R")  # (n_t,) each, None -> nan
            bad = ~np.isfinite(np.asarray(R, dtype=float))  # (n_t,)
            if bad.any():
                key = json.dumps(run_config(r), sort_keys=True)
                out.setdefault(key, {"run_id": r.get("run_id"), "architecture": architecture(r),
                                     "group": run_config(r)["group"],
                                     "t": int(np.asarray(t)[bad][0])})
    return sorted(out.values(), key=lambda d: (d["architecture"], d["group"], d["t"]))


def overflow_table(records: list[dict[str, Any]]) -> Table:
    """Per architecture and group, how many runs' hidden states overflow within the rollout
    (:func:`overflow_onsets`) and the earliest and latest stored time at which their spread
    R first is not finite."""
    onsets = overflow_onsets(records)
    cells: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for d in onsets:
        cells.setdefault((d["architecture"], d["group"]), []).append(d)
    cols = ["model", "group", "runs", "first t with R not finite: earliest", "latest"]
    rows, data = [], []
    for (arch, group), ds in cells.items():
        ts = [d["t"] for d in ds]
        rows.append([label_name(arch), group, len(ds), min(ts), max(ts)])
        data.append({"architecture": arch, "group": group, "runs": len(ds),
                     "t_min": min(ts), "t_max": max(ts)})
    note = ("t: the first stored time (every t up to 32, then about 6% apart) at which the "
            "spread R is not finite; from then on R, M and q are undefined.")
    return Table("Runs whose hidden states overflow within the rollout", cols, rows, note,
                 [d["run_id"] for d in onsets], data)


def architecture_counts(records: list[dict[str, Any]]) -> dict[str, int]:
    """How many of ``records`` each architecture (model, ``L2`` for two layers) holds."""
    from collections import Counter

    return dict(sorted(Counter(architecture(r) for r in records).items()))


def figure4_within(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Figure 4's correlation taken apart: per architecture, pooled within architectures
    (:func:`~sst_core.analysis.stats.loglog_within_pearson`), between the architectures'
    geometric means, and over all ``records`` (Figure 4's r). One dict per row: ``kind``
    (architecture | within | between | all), ``label``, ``n`` (runs, or architectures for
    ``between``), ``r``, ``p`` (None where undefined, ``why_no_r`` says why), and for an
    architecture its distinct m_p values and the medians of T_cross and m_p."""
    from sst_core.analysis.stats import loglog_pearson, loglog_within_pearson

    def corr(fn, *args) -> dict[str, Any]:
        try:
            out = fn(*args)
        except ValueError as err:
            return {"r": None, "p": None, "why_no_r": str(err)}
        return {"r": out["r"], "p": out["p"]}

    groups: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(architecture(r), []).append(r)
    rows = []
    means_T, means_m = [], []
    for label, recs in sorted(groups.items()):
        T = [r["metrics"]["T_cross"] for r in recs]
        m = [r["metrics"]["m_p"] for r in recs]
        row = {"kind": "architecture", "label": label, "n": len(recs),
               "m_p_values": sorted(set(m)), "T_cross_median": float(np.median(T)),
               "m_p_median": float(np.median(m))}
        if len(set(m)) < 2 or len(set(T)) < 2:
            row.update(r=None, p=None, why_no_r="T_cross or m_p is the same for every run")
        else:
            row.update(corr(loglog_pearson, T, m))
        rows.append(row)
        means_T.append(float(np.exp(np.mean(np.log(T)))))
        means_m.append(float(np.exp(np.mean(np.log(m)))))
    T_all = [r["metrics"]["T_cross"] for r in records]
    m_all = [r["metrics"]["m_p"] for r in records]
    rows.append({"kind": "within", "label": "within architectures (pooled)",
                 "n": len(records), "groups": len(groups),
                 **corr(loglog_within_pearson, T_all, m_all, [architecture(r) for r in records])})
    rows.append({"kind": "between", "label": "between architectures (geometric means)",
                 "n": len(groups), **corr(loglog_pearson, means_T, means_m)})
    rows.append({"kind": "all", "label": "all selected runs (Figure 4's r)", "n": len(records),
                 **corr(loglog_pearson, T_all, m_all)})
    return rows


def figure4_within_table(P: Profile, root=None) -> Table:
    """:func:`figure4_within` of Figure 4's selected runs under ``P``."""
    from sst_core.experiments.paper1 import FIGURE4_RULE, figure4_selection

    selected = figure4_selection(diagnostic_records(P, root, "figure4"))
    data = figure4_within(selected)
    cols = ["architecture, or how runs are pooled", "n", "distinct m_p", "median T_cross", "median m_p",
            "r (log T_cross, log m_p)", "p"]
    rows = []
    for d in data:
        rows.append([label_name(d["label"]) if d["kind"] == "architecture" else d["label"],
                     d["n"],
                     len(d["m_p_values"]) if d["kind"] == "architecture" else "—",
                     format_value(d.get("T_cross_median")), format_value(d.get("m_p_median")),
                     format_value(d["r"]), p_text(d["p"])])
    note = ("Figure 4's correlation over all selected runs can come from differences between "
            "architectures alone (each architecture a cluster of runs at its own T_cross and "
            "m_p). Within architectures: each run's log T_cross and log m_p minus its "
            "architecture's means, then correlated (the partial correlation given the "
            "architecture; p from a t test with n - g - 1 degrees of freedom for g "
            "architectures). Between: the architectures' geometric means, one point each. "
            "Per architecture: r where both T_cross and m_p vary (m_p takes only the evaluated "
            "lengths). '—': undefined. "
            f"Selection rule: {FIGURE4_RULE}.")
    return Table("Figure 4 within and between architectures", cols, rows, note,
                 [r["run_id"] for r in selected], data)


def resample_spread(selected: list[dict[str, Any]], resampled: list[dict[str, Any]]
                    ) -> dict[str, dict[str, Any]]:
    """How far T_cross and q at m_p move between a run's diagnostics and the same run's on
    another word sample: per quantity the median and largest factor max(a/b, b/a) over
    the selected runs that have both finite and positive values."""
    import json

    def key(r: dict[str, Any]) -> str:
        return json.dumps(run_config(r), sort_keys=True, default=str)

    first = {key(r): r for r in selected}
    out = {}
    for q in ("T_cross", "q_at_m_p"):
        factors = []
        for r in resampled:
            a = first.get(key(r))
            if a is None or r["status"] != "ok":
                continue
            x, y = a["metrics"].get(q), r["metrics"].get(q)
            if x is not None and y is not None and x > 0 and y > 0:
                factors.append(max(x / y, y / x))
        out[q] = {"n": len(factors),
                  "median_factor": float(np.median(factors)) if factors else None,
                  "max_factor": float(np.max(factors)) if factors else None}
    return out


COROLLARY1_FROM = 10  # the first t of Corollary 1's fit


def corollary1_window(record: dict[str, Any]) -> tuple[int, int]:
    """The times Corollary 1's drift is fitted over, for a diagnostics record:
    ``COROLLARY1_FROM <= t < min(training length, T_cross)``, so the prediction uses only
    what a run shows before it crosses and within the length it was trained at."""
    end = run_config(record)["curriculum_max"]
    T = record["metrics"]["T_cross"]
    return COROLLARY1_FROM, (end if T is None else min(end, T)) - 1


def corollary1_table(P: Profile, root=None) -> Table:
    """Corollary 1 on the best affine S3 run of each model: the drift fitted before the
    crossing and within the training length (:func:`corollary1_window`), the crossing it
    predicts against the one measured, for the models whose q climbs (:func:`start_mode`)."""
    from sst_core.analysis.error_control import corollary1_prediction

    best = best_per_model(diagnostic_records(P, root, "s3"))
    cols = ["model", "mode", "fitted over t", "drift ‖W_out η̄‖ per step",
            "T_cross predicted", "T_cross measured", "predicted / measured", "m_p"]
    rows, data, ids = [], [], []
    for label, r in sorted(best.items()):
        m = r["metrics"]
        if not m["is_affine"]:
            continue
        mode = start_mode(r)["mode"]
        window = corollary1_window(r)
        pred = corollary1_prediction(m, window=window, tau=r["config"]["tau"])
        # a prediction is shown for the climb mode only: a saturated model starts crossed
        climb = mode == "climb"
        T_pred = pred["T_pred"] if climb else None
        ratio = (T_pred / m["T_cross"]
                 if T_pred is not None and m["T_cross"] is not None else None)
        rows.append([label_name(label), mode,
                     f"{window[0]}–{window[1]}" if pred["drift"] is not None else "—",
                     format_value(pred["drift"]), format_value(T_pred, ".4g"),
                     format_value(m["T_cross"]), format_value(ratio),
                     m["m_p"] if m["m_p"] else "fail"])
        data.append({"model": label, "failure_mode": mode, **pred, "window": list(window),
                     "T_pred": T_pred, "T_cross": m["T_cross"], "ratio": ratio,
                     "m_p": m["m_p"]})
        ids.append(r["run_id"])
    note = ("Corollary 1 with a constant drift: sqrt(R_U(t)) = a + t ||W_out eta_bar||, fitted "
            f"by least squares at the stored times {COROLLARY1_FROM} <= t < min(60, T_cross) "
            "(before the crossing, within the training length; '—' where fewer than three "
            "such times exist); q crosses tau = 1/2 at (sqrt(tau M) - a) / ||W_out eta_bar||. "
            "Shown for the 'climb' mode only: a saturated model starts above the threshold. "
            f"{DRIFT_NOTE} Best affine S3 run per model.")
    return Table("Corollary 1: predicted against measured crossing time", cols, rows, note, ids, data)


def corollary1_numbers(data: list[dict[str, Any]]) -> dict[str, Any]:
    """What the chapter says of :func:`corollary1_table`'s ``data``: how many rows are in
    the climb mode (``climb``), of those how many have a prediction and a measured crossing
    (``compared``), the lowest and highest predicted / measured ratio among them
    (``ratio_lo``, ``ratio_hi``; NaN where none is compared), and of the climb rows how many
    pass the training length (``with_m_p``) and how many cross before their m_p
    (``before``)."""
    climb = [d for d in data if d["failure_mode"] == "climb"]
    ratios = [d["ratio"] for d in climb if d["ratio"] is not None]
    return {"climb": len(climb), "compared": len(ratios),
            "with_m_p": sum(d["m_p"] is not None for d in climb),
            "before": sum(d["T_cross"] is not None and d["m_p"] is not None
                          and d["T_cross"] < d["m_p"] for d in climb),
            "ratio_lo": min(ratios, default=float("nan")),
            "ratio_hi": max(ratios, default=float("nan"))}


def crossing_without_failure(records: list[dict[str, Any]], longest: int) -> dict[str, dict[str, Any]]:
    """For the state-dependent runs among ``records`` (diagnostics records), per
    architecture (model, ``L2`` for two layers): the ok runs, those that reach ``longest``
    (the longest evaluated length), and of those the ones whose q nevertheless crosses
    tau (a defined T_cross within the rollout), with their T_cross, and the ones whose
    median-spread variant q_median crosses tau too at one of its stored times (the
    record's ``tau``; records made before q_median was stored count as not crossing and
    are counted apart in ``no_median``). A crossing without failure shows that q, a ratio
    of means, is not a per-word bound: Figure 4 reads it for affine models only."""
    from sst_core.analysis.diagnostics import T_cross
    from sst_core.reports.paper1 import run_label
    from sst_core.store.codec import stored_curve

    out: dict[str, dict[str, Any]] = {}
    for r in records:
        if r["status"] != "ok" or r["metrics"]["is_affine"]:
            continue
        m = r["metrics"]
        row = out.setdefault(run_label(run_config(r)), {"runs": 0, "reach": 0, "crossing": 0, "T_cross": [],
                                     "median_crossing": 0, "no_median": 0})
        row["runs"] += 1
        if m["m_p"] != longest:
            continue
        row["reach"] += 1
        if m["T_cross"] is None:
            continue
        row["crossing"] += 1
        row["T_cross"].append(m["T_cross"])
        if "q_median" not in m:
            row["no_median"] += 1
            continue
        _, q_med = stored_curve(m, "q_median")  # (n_stored,) at the stored times
        row["median_crossing"] += T_cross(q_med, r["config"]["tau"]) is not None
    return dict(sorted(out.items()))


def crossing_table(P: Profile, root=None) -> Table:
    """:func:`crossing_without_failure` over the chapter's S3 diagnostics."""
    records = diagnostic_records(P, root, "s3")
    longest = max(P.track_eval_lengths)
    counts = crossing_without_failure(records, longest)
    cols = ["model", "S3 runs diagnosed", f"m_p = {longest}", "of those, q crosses 1/2",
            "their T_cross (min–max)", "q_median crosses too"]
    rows, data = [], []
    for label, c in counts.items():
        span = (f"{min(c['T_cross'])}–{max(c['T_cross'])}" if c["T_cross"] else "—")
        rows.append([label_name(label), c["runs"], c["reach"], c["crossing"], span,
                     c["median_crossing"] if c["crossing"] > c["no_median"] else "—"])
        data.append({"model": label, **c})
    total = {k: sum(c[k] for c in counts.values())
             for k in ("runs", "reach", "crossing", "median_crossing", "no_median")}
    data.append({"model": "all", **total})
    if counts:
        spans = [t for c in counts.values() for t in c["T_cross"]]
        rows.append(["all", total["runs"], total["reach"], total["crossing"],
                     f"{min(spans)}–{max(spans)}" if spans else "—",
                     total["median_crossing"] if total["crossing"] > total["no_median"]
                     else "—"])
    note = (f"State-dependent S3 runs only. A run 'crosses' when q = R/M reaches tau = 1/2 "
            f"within the rollout of {P.diag_rollout} (a defined T_cross) although it still "
            f"tracks at length {longest}; q_median is our median-spread variant, checked at its "
            "stored times.")
    ids = [r["run_id"] for r in records
           if r["status"] == "ok" and not r["metrics"]["is_affine"]]
    return Table("Does crossing mean failing? q against m_p for the state-dependent trackers",
                 cols, rows, note, ids, data)


# -- Figure 4 with the paper's spread and with the median spread --------------------------
# the two estimates of a class's spread R: the paper's (the mean over words) and ours (the
# median, q_median), each with its own T_cross and q at m_p
SPREAD_ESTIMATES = ("mean", "median")


def stored_crossing(metrics: dict[str, Any], key: str, tau: float) -> int | None:
    """The first *stored* time (``curve_t``) at which the curve ``key`` reaches ``tau``;
    None if it never does. Every t up to 32 is stored and log-spaced times after it (about
    6% apart at a rollout of 1000): a crossing read this way lies at most one stored step
    after the exact one."""
    from sst_core.store.codec import stored_curve

    t, y = stored_curve(metrics, key)  # (n_stored,) each
    with np.errstate(invalid="ignore"):
        hit = np.flatnonzero(y >= tau)
    return int(t[hit[0]]) if hit.size else None


def spread_view(record: dict[str, Any], estimate: str) -> dict[str, Any] | None:
    """A diagnostics record as Figure 4 reads it under one estimate of the spread
    (:data:`SPREAD_ESTIMATES`): ``{"run_id", "n_layers", "m_p", "T_cross", "q_at_m_p"}``;
    ``mean``: the record's T_cross and q at m_p (the paper's); ``median``: the stored-time
    crossing of q_median (:func:`stored_crossing`) and q_median at m_p. None for a record
    made before q_median was stored."""
    m = record["metrics"]
    base = {"run_id": record["run_id"], "n_layers": run_config(record)["n_layers"],
            "architecture": architecture(record), "m_p": m["m_p"]}
    if estimate == "mean":
        return {**base, "T_cross": m["T_cross"], "q_at_m_p": m["q_at_m_p"]}
    if estimate != "median":
        raise ValueError(f"unknown spread estimate {estimate!r}; allowed: "
                         f"{', '.join(SPREAD_ESTIMATES)}")
    if "q_median" not in m:
        return None
    return {**base, "T_cross": stored_crossing(m, "q_median", record["config"]["tau"]),
            "q_at_m_p": m.get("q_median_at_m_p")}


def figure4_both_ways(records: list[dict[str, Any]], n_boot: int = BOOTSTRAP_RESAMPLES,
                      seed: int = BOOTSTRAP_SEED
                      ) -> list[dict[str, Any]]:
    """Figure 4's statistics (:func:`figure4_stats`: r of log T_cross against log m_p with
    its bootstrap interval, n, median q at m_p with its interval) under each estimate of the
    spread (:func:`spread_view`), over the affine runs of ``records`` (diagnostics records)
    that pass the training length and whose q crosses tau under that estimate, pooled and
    per depth: one row per (estimate, depth), depth None for the pooled runs. The paper's
    rows add ``r_at_stored_times``: r with T_cross read at the stored times, as the median's
    is (what that reading alone changes)."""
    rows = []
    for estimate in SPREAD_ESTIMATES:
        kept = [r for r in records if r["status"] == "ok" and r["metrics"]["is_affine"]
                and r["metrics"]["m_p"] is not None]
        pairs = [(v, r) for r in kept if (v := spread_view(r, estimate)) is not None
                 and v["T_cross"] is not None]
        views, kept = [v for v, _ in pairs], [r for _, r in pairs]
        depths = sorted({v["n_layers"] for v in views})
        for depth in [None] + depths:
            part = [v for v in views if depth is None or v["n_layers"] == depth]
            stats = figure4_stats([{"metrics": v} for v in part], n_boot=n_boot, seed=seed)
            extra = {}
            if estimate == "mean":  # the paper's T_cross read as the median's is: at stored times
                stored = [{"metrics": {**v, "T_cross": stored_crossing(
                    r["metrics"], "q", r["config"]["tau"])}}
                    for v, r in zip(views, kept) if v in part]
                extra["r_at_stored_times"] = figure4_stats(stored, n_boot=1)["r"]
            rows.append({"estimate": estimate, "n_layers": depth, **extra,
                         "architectures": architecture_counts_of(part),
                         **{k: stats.get(k) for k in ("n", "r", "p", "r_lo", "r_hi",
                                                      "q_median", "q_lo", "q_hi", "n_q",
                                                      "why_no_r")},
                         "run_ids": [v["run_id"] for v in part]})
    return rows


def architecture_counts_of(views: list[dict[str, Any]]) -> dict[str, int]:
    """How many of ``views`` (:func:`spread_view`) each architecture holds."""
    from collections import Counter

    return dict(sorted(Counter(v["architecture"] for v in views).items()))


def figure4_both_ways_table(P: Profile, root=None) -> Table:
    """:func:`figure4_both_ways` of the Figure 4 population's diagnostics under ``P``, beside
    the paper's numbers."""
    rows_data = figure4_both_ways(diagnostic_records(P, root, "figure4"))
    cols = ["spread R", "depth", "n", "r (log T_cross, log m_p) [95%]", "p",
            "median q at m_p [95%]"]
    rows = []
    for d in rows_data:
        rows.append(["mean over words (the paper's)" if d["estimate"] == "mean" else
                     "median over words", "both" if d["n_layers"] is None else
                     f"{d['n_layers']} layer{'s' if d['n_layers'] > 1 else ''}", d["n"],
                     with_interval(d["r"], d["r_lo"], d["r_hi"]), p_text(d["p"]),
                     with_interval(d["q_median"], d["q_lo"], d["q_hi"], 2)])
    rows.append(["the paper", "both", PAPER_FIGURE4["n"], f"{PAPER_FIGURE4['r']}",
                 p_text(PAPER_FIGURE4["p"]),
                 f"{PAPER_FIGURE4['q_median']} [{PAPER_FIGURE4['q_lo']}, {PAPER_FIGURE4['q_hi']}]"])
    note = ("Figure 4 read with two estimates of a class's spread R in q = R / M: the mean "
            "squared distance of its words' states to their centroid (the paper's definition) "
            "and the median (q_median). Each selects the affine S3 runs that pass length 60 "
            "and whose q crosses tau = 1/2 within the rollout under that estimate; T_cross "
            "of the median spread is read at the record's stored times (every t up to 32, "
            "then about 6% apart), the paper's at every t. m_p averages accuracy over the "
            "positions of a word, while q is read at t = m_p. Bootstrap: 10,000 resamples "
            "of the runs, seed 0.")
    ids = sorted({i for d in rows_data for i in d["run_ids"]})
    return Table("Figure 4 with the mean and the median spread, pooled and per depth", cols,
                 rows, note, ids, [{k: v for k, v in d.items() if k != "run_ids"}
                                   for d in rows_data])


def architecture_text(counts: dict[str, int]) -> str:
    """Runs per architecture as a table cell or the prose shows them: "AUSSM, 2 layers: 33;
    Token-gated RNN: 48" (a dash for none)."""
    return "; ".join(f"{label_name(k)}: {v}" for k, v in counts.items()) or "—"


def figure4_architectures(data: list[dict[str, Any]]) -> dict[str, str]:
    """The selected runs per architecture of :func:`figure4_both_ways_table`'s ``data``,
    once per estimate of the spread (its pooled row; the rows per depth are its parts):
    ``{"mean": ..., "median": ...}`` (:func:`architecture_text`)."""
    return {d["estimate"]: architecture_text(d["architectures"]) for d in data
            if d["n_layers"] is None}


def figure4_before_after(P: Profile, root=None) -> Table:
    """Figure 4's statistics (:func:`figure4_both_ways`: both estimates of the spread,
    pooled and per depth) of its population at ``P.track_d_model`` (before) and of the same
    population at ``P.track_d_model_wide`` (after), beside the paper's. ``data`` per row:
    ``d_model``, ``complete`` (every diagnostics record of its population stored) and the
    statistics."""
    rows, data = [], []
    ids: list[str] = []
    cols = ["spread R", "depth", "d_model", "n", "r (log T_cross, log m_p) [95%]",
            "median q at m_p [95%]"]
    progress = []
    for which, width in (("figure4", P.track_d_model), ("figure4_wide", P.track_d_model_wide)):
        cfgs = diagnostic_configs(P, root, which)
        records = stored_records(cfgs, root)
        complete = len(records) == len(cfgs)
        progress.append(f"{len(records)} of {len(cfgs)} at d_model {width}")
        for d in figure4_both_ways(records):
            ids += d.pop("run_ids")
            data.append({"d_model": width, "complete": complete, **d})
    order = {"mean": 0, "median": 1}
    data.sort(key=lambda d: (order[d["estimate"]], d["n_layers"] or 0, d["d_model"]))
    for d in data:
        rows.append(["mean over words (the paper's)" if d["estimate"] == "mean" else
                     "median over words", "both" if d["n_layers"] is None else
                     f"{d['n_layers']} layer{'s' if d['n_layers'] > 1 else ''}",
                     d["d_model"] if d["complete"] else f"{d['d_model']} (incomplete)", d["n"],
                     with_interval(d["r"], d["r_lo"], d["r_hi"]),
                     with_interval(d["q_median"], d["q_lo"], d["q_hi"], 2)])
    rows.append(["the paper", "both", "—", PAPER_FIGURE4["n"],
                 f"{PAPER_FIGURE4['r']}",
                 f"{PAPER_FIGURE4['q_median']} [{PAPER_FIGURE4['q_lo']}, {PAPER_FIGURE4['q_hi']}]"])
    note = ("Figure 4 read as in the table with both estimates of the spread, on its "
            "population trained at each width with one grid and protocol otherwise (the "
            "RNN family, which has no residual stream, contributes the same runs to both). "
            "Diagnostics stored: " + "; ".join(progress) + ". Bootstrap: 10,000 resamples "
            "of the runs, seed 0.")
    return Table(f"Figure 4 before and after: d_model {P.track_d_model} and "
                 f"{P.track_d_model_wide}", cols, rows, note, list(dict.fromkeys(ids)), data)


def spread_ratio(records: list[dict[str, Any]], model: str = "token_gated_rnn"
                 ) -> list[dict[str, Any]]:
    """How much larger the paper's mean spread is than the median spread at m_p, q / q_median
    at m_p, over ``records`` (diagnostics records; those without q_median at m_p are left
    out): per architecture, then for ``model`` at both depths and for every other
    architecture together. One dict per row: ``kind`` (architecture | model | others),
    ``label``, ``n``, ``median``, ``min``, ``max`` (None without runs)."""
    ratios: dict[str, list[float]] = {}
    for r in records:
        m = r["metrics"]
        if m.get("q_median_at_m_p") and m.get("q_at_m_p") is not None:
            ratios.setdefault(architecture(r), []).append(m["q_at_m_p"] / m["q_median_at_m_p"])

    def row(kind: str, label: str, values: list[float]) -> dict[str, Any]:
        v = np.asarray(values, dtype=float)  # (n,)
        return {"kind": kind, "label": label, "n": int(v.size),
                **{k: float(f(v)) if v.size else None
                   for k, f in (("median", np.median), ("min", np.min), ("max", np.max))}}

    def is_model(label: str) -> bool:
        return label.split(" ")[0] == model

    rows = [row("architecture", label, v) for label, v in sorted(ratios.items())]
    rows.append(row("model", model, [x for k, v in ratios.items() if is_model(k) for x in v]))
    rows.append(row("others", "others", [x for k, v in ratios.items() if not is_model(k)
                                         for x in v]))
    return rows


def spread_ratio_table(P: Profile, root=None, model: str = "token_gated_rnn") -> Table:
    """:func:`spread_ratio` over Figure 4's selected runs (the paper's estimate) under ``P``."""
    from sst_core.experiments.paper1 import figure4_selection

    selected = figure4_selection(diagnostic_records(P, root, "figure4"))
    data = spread_ratio(selected, model)
    rows = [[label_name(d["label"]) if d["kind"] == "architecture" else
             f"{label_name(model)}, both depths" if d["kind"] == "model" else
             "every other architecture", d["n"], format_value(d["median"]),
             format_value(d["min"]), format_value(d["max"])] for d in data]
    note = ("q / q_median at t = m_p: the paper's spread R (the mean over words of the squared "
            "readout distance to the class centroid) over the median over words, for "
            "Figure 4's selected runs that store q_median.")
    return Table("Mean over median spread at m_p, per architecture",
                 ["architecture", "runs", "median q / q_median", "lowest", "highest"], rows,
                 note, [r["run_id"] for r in selected], data)


def spread_tail_table(P: Profile, root=None) -> Table:
    """What makes the spread of Figure 4's one-layer token-gated RNN runs heavy-tailed:
    the stored spread-tail analyses (:func:`sst_core.experiments.paper1.spread_tail_grid`,
    :func:`sst_core.analysis.spread_tail.spread_tail` of each trained tracker at t = m_p),
    beside each diagnostics record's own ratio of q to q_median at m_p; rows in the order
    of that ratio."""
    from sst_core.analysis.spread_tail import TOP_SHARE
    from sst_core.experiments.paper1 import (
        SPREAD_TAIL_MODEL,
        SPREAD_TAIL_WORDS,
        diagnostics_config,
        spread_tail_grid,
    )
    from sst_core.reports import stored_record

    model = SPREAD_TAIL_MODEL
    selected = []  # (spread-tail config, its record, the tracker's diagnostics record)
    lost = 0  # analyses not stored, or failed
    for cfg in spread_tail_grid(P, root):
        r = stored_record(cfg, root)
        if r is None or r["status"] != "ok":
            lost += 1
            continue
        selected.append((cfg, r, stored_record(diagnostics_config(P, cfg.run), root)))
    selected.sort(key=lambda x: x[2]["metrics"]["q_at_m_p"] / x[2]["metrics"]["q_median_at_m_p"])
    cols = ["run (width, lr, seed)", "m_p", "q / q_median (record)", "mean / median spread",
            f"top {TOP_SHARE:.0%} of words' share", "log-normal ratio exp(s²/2)",
            "median state norm", "largest spectral radius", "tokens with radius > 1",
            "growth rate per token"]
    rows, data = [], []
    for cfg, r, diag in selected:
        out, m_p = r["metrics"], cfg.t
        ratio = diag["metrics"]["q_at_m_p"] / diag["metrics"]["q_median_at_m_p"]
        rows.append([f"{cfg.run.d_state}, {cfg.run.lr:g}, {cfg.run.seed}", m_p, f"{ratio:.2f}",
                     f"{out['mean_over_median']:.2f}", f"{out['top_share']:.2f}",
                     f"{out['lognormal_ratio']:.2f}", f"{out['state_norm_median']:.2g}",
                     f"{out['rho_max']:.3f}", f"{out['tokens_rho_above_1']} of {out['tokens']}",
                     f"{out['growth_rate']:.3f}"])
        data.append({"run_id": r["run_id"], "training_run": diag["metrics"]["training_run"],
                     "d_state": cfg.run.d_state, "lr": cfg.run.lr, "seed": cfg.run.seed,
                     "m_p": m_p, "q_over_q_median": ratio, **out})
    note = (f"Every one-layer {label_name(model)} run of Figure 4's selection, its trained tracker measured "
            f"at t = m_p on {SPREAD_TAIL_WORDS} held-out words. Spread: each word's squared "
            "readout distance to its class centroid (R is their mean, q_median's spread their "
            f"median); top {TOP_SHARE:.0%}: the share of their sum the farthest words carry; "
            "log-normal ratio: the mean over median a log-normal spread with the measured "
            "standard deviation s of the log would have. Per token a, the transition "
            "A(a) = diag(sigma(W_g e(a) + b_g)) W_h: its largest |eigenvalue| over the "
            "tokens, and how many tokens have one above 1; growth rate: the top Lyapunov "
            "exponent of the products along the words, per token (above 0: the state grows "
            "exponentially). At initialisation W_h is 0.99 times an orthogonal matrix, so "
            "every A(a) starts with spectral radius below 0.99. "
            + (f"{lost} selected run{'s' if lost > 1 else ''} whose analysis is not stored "
               "or failed left out." if lost else ""))
    return Table(f"What makes the spread heavy-tailed: the one-layer {label_name(model)} "
                 "trackers", cols,
                 rows, note, [d["run_id"] for d in data], data)


def spread_tail_summary(table: Table) -> Table:
    """:func:`spread_tail_table` in a few rows: per measure, its median, lowest and highest
    over the trackers, and for the growth rate, the spectral radius and the mean over median
    spread divided by the log-normal ratio (``over_lognormal``: above 1, a tail heavier than
    a log-normal spread of the measured width has) how many trackers lie above 0, 1 and 1."""
    data = [{**d, "over_lognormal": d["mean_over_median"] / d["lognormal_ratio"]}
            for d in table.data or []]
    measures = (("q_over_q_median", "q / q_median at m_p (record)", None),
                ("mean_over_median", "mean / median spread", None),
                ("top_share", "share of the top 1% of words", None),
                ("lognormal_ratio", "log-normal ratio exp(s²/2)", None),
                ("over_lognormal", "mean / median spread over the log-normal ratio", 1.0),
                ("rho_max", "largest spectral radius of a token's transition", 1.0),
                ("growth_rate", "growth rate per token", 0.0))
    rows, out = [], []
    for key, label, above in measures:
        v = np.array([d[key] for d in data], dtype=float)
        row = {"measure": key, "n": int(v.size),
               "median": float(np.median(v)) if v.size else None,
               "min": float(v.min()) if v.size else None,
               "max": float(v.max()) if v.size else None,
               "above": None if above is None else int((v > above).sum()), "threshold": above}
        out.append(row)
        rows.append([label, format_value(row["median"]), format_value(row["min"]),
                     format_value(row["max"]),
                     "—" if above is None else f"{row['above']} of {row['n']} above {above:g}"])
    return Table(table.title.replace("What makes", "In short: what makes"),
                 ["measure", "median", "lowest", "highest", "trackers"], rows, table.note,
                 table.records, out)


# -- Theorem 1's SymPy checks as tables (sst_core.theory.error_control) --------------------
# the (dimension d, number of states) of the concrete instances the theory chapter solves
THEOREM1_SIZES = ((2, 2), (3, 3), (3, 4), (4, 3), (5, 6), (5, 3))


def corollary1_symbol_names() -> dict[Any, str]:
    """LaTeX for the symbols of :func:`sst_core.theory.error_control.derive_corollary1`
    whose code names a reader should not meet (``e0_W``, ``eta_W``, ...), for
    ``sympy.latex(expr, symbol_names=...)``."""
    from sst_core.theory import error_control as th

    return {th.e0: r"e_U(0)", th.eta_bar: r"\bar\eta",
            th.e0_W: r"\lVert W_{\text{out}}\, e_U(0)\rVert",
            th.eta_W: r"\lVert W_{\text{out}}\, \bar\eta\rVert",
            th.M_sq: r"M_{\text{sq}}"}


def theorem1_steps_table(derivation: dict[str, Any]) -> Table:
    """The steps of Theorem 1's argument on symbolic centroids
    (:func:`sst_core.theory.error_control.derive_theorem1_general`), each with whether SymPy
    reduced it to zero from the hypotheses alone."""
    steps = derivation["steps"]  # (description, lhs, rhs, holds) each
    return Table("Theorem 1's argument on symbolic centroids, A and b", ["step", "holds"],
                 [[desc, "✓" if ok else "✗"] for desc, _, _, ok in steps],
                 "Each step is an identity that SymPy reduces to zero from the hypotheses "
                 "A c_g + b = c_g alone.",
                 data=[{"step": desc, "holds": bool(ok)} for desc, _, _, ok in steps])


def theorem1_instances_table(sizes=THEOREM1_SIZES, seed: int = 0) -> Table:
    """Theorem 1 on random rational centroids
    (:func:`sst_core.theory.error_control.derive_theorem1_instance`), one row per
    (d, number of states) of ``sizes``: dim U, the free parameters of the solutions of
    A c_g + b = c_g against d (d - dim U), and whether A is the identity on U and free on
    U-perp."""
    from sst_core.theory.error_control import derive_theorem1_instance

    cols = ["d", "states", "dim U", "free parameters", "expected d(d − r)", "A on U = I",
            "U⊥ free"]
    rows, data = [], []
    for d, n_g in sizes:
        inst = derive_theorem1_instance(d, n_g, seed=seed)
        rows.append([d, n_g, inst["r"], inst["n_free"], inst["expected_free"],
                     "✓" if inst["A_on_U_is_identity"] else "✗",
                     "✓" if inst["U_perp_free"] else "✗"])
        data.append({"d": d, "n_g": n_g, **{k: inst[k] for k in (
            "r", "n_free", "expected_free", "A_on_U_is_identity", "U_perp_free", "holds")}})
    return Table("Theorem 1 on random rational centroids", cols, rows,
                 "Every solution of A c_g + b = c_g for all unknown entries of A and b "
                 f"(sympy.linsolve; centroids drawn with seed {seed}).", data=data)
