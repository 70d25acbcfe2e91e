"""The book's verdict: one row per headline result of the two papers, the paper's value,
ours and a verdict (*agrees*, *close* or *differs*), read from the same reports the
chapters show (nothing is computed here that a chapter does not compute too).

The verdict follows one rule, fixed before any of our numbers were looked at and applied
here by code (the page "Results at a glance" says it in words):

- a table of lengths m_p (Tables 2 and 3): a cell agrees when our m_p equals the paper's,
  is close when it is :data:`~sst_core.reports.paper1.CLOSE_LENGTHS` evaluated length
  away, and differs otherwise (:func:`sst_core.reports.paper1.agreement`); the table
  agrees when every cell agrees, is close when no cell differs, and differs otherwise
  (:func:`verdict_of_cells`);
- an estimate with an interval (Figure 4's r): agrees when the paper's value lies inside
  our 95% interval, is close when it lies inside that interval widened to
  :data:`CLOSE_WIDTH` times its width about our estimate, differs otherwise
  (:func:`verdict_of_interval`);
- an identity (S4 = S4D): agrees when the two sides differ by at most
  :data:`IDENTITY_TOL`, differs otherwise (:func:`verdict_of_identity`);
- a claim judged task by task or cell by cell (Table 2's pattern, LRA, delayed recall):
  agrees when it holds wherever it can be judged, is close when it ties somewhere and
  fails nowhere, differs when it fails somewhere (:func:`verdict_of_claim`).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from sst_core.experiments.paper1 import TABLE2_GROUPS, TABLE2_MODELS
from sst_core.reports import Table
from sst_core.spec.profiles import Profile

VERDICTS = ("agrees", "close", "differs")
# an identity computed in float64 from a matrix of a few dozen rows holds to rounding,
# about 1e-13; anything above 1e-9 is a real difference
IDENTITY_TOL = 1e-9
# an estimate is close when the paper's value lies in our 95% interval widened to this many
# times its width about our estimate
CLOSE_WIDTH = 2.0


def verdict_of_cells(agree: int, close: int, differ: int) -> str | None:
    """A table's verdict from its cells' (``agree``, ``close``, ``differ``); None for a
    table with no cell compared."""
    if min(agree, close, differ) < 0:
        raise ValueError(f"cell counts cannot be negative: {agree}, {close}, {differ}")
    if agree + close + differ == 0:
        return None
    return "differs" if differ else "close" if close else "agrees"


def verdict_of_interval(paper: float, lo: float | None, hi: float | None,
                        estimate: float | None) -> str | None:
    """An estimate's verdict: the paper's value inside ``[lo, hi]`` (agrees), inside the
    interval widened to :data:`CLOSE_WIDTH` times its width about ``estimate`` (close),
    or neither (differs); None without an estimate or interval."""
    if estimate is None or lo is None or hi is None:
        return None
    if lo > hi:
        raise ValueError(f"an interval needs lo <= hi, got [{lo}, {hi}]")
    if lo <= paper <= hi:
        return "agrees"
    half = CLOSE_WIDTH * (hi - lo) / 2
    return "close" if abs(paper - estimate) <= half else "differs"


def verdict_of_identity(gap: float | None) -> str | None:
    """An identity's verdict from the largest gap between its two sides."""
    if gap is None:
        return None
    return "agrees" if abs(gap) <= IDENTITY_TOL else "differs"


def verdict_of_claim(holds: int, ties: int, fails: int) -> str | None:
    """A claim's verdict from where it ``holds``, ``ties`` and ``fails``; None when it
    could be judged nowhere."""
    if holds + ties + fails == 0:
        return None
    return "differs" if fails else "close" if ties else "agrees"


def table2_cells(data) -> dict[str, int]:
    """Of the Table 2 (or 3) cells the paper reports and we computed: how many agree, are
    close and differ (the ``agreement`` of :func:`sst_core.reports.paper1.table2`'s data)."""
    cells = [d for d in data if d["paper_reported"] and d["status"] in ("ok", "fail")]
    return {k: sum(d["agreement"] == k for d in cells) for k in ("agree", "close", "differ")}


def cells_text(counts: dict[str, int], unit: str) -> str:
    """A table's cell counts as its row shows them: "48 cells: 31 the same, 6 one length
    away, 11 further" (parts with no cell left out)."""
    n = sum(counts.values())
    if not n:
        return f"no {unit} computed"
    parts = [f"{counts['agree']} the same"] + [
        f"{counts[k]} {what}" for k, what in (("close", "one length away"),
                                              ("differ", "further")) if counts[k]]
    return f"{n} {unit}: " + ", ".join(parts)


# -- one function per result: (paper, ours, verdict, values) ------------------------------
# Each reads the chapter's report at profile P from the records under root; ``tables``
# holds the reports more than one result reads, computed once per overview.

def report_once(name: str, make: Callable[[Profile, Any], Table], P: Profile, root,
                tables: dict[str, Table]) -> Table:
    """The report ``make(P, root)`` that several results read (``"table2"``: Table 2,
    read by two; ``"lra_claims"``: the LRA claims, read by four; ``"paper_claims"``: the
    claim rule on the paper's rows, read by two): ``tables[name]`` where
    the caller or an earlier result computed it, else computed once and kept there."""
    if name not in tables:
        tables[name] = make(P, root)
    return tables[name]


def table2_report(P: Profile, root, tables: dict[str, Table]) -> Table:
    """Table 2 (:func:`sst_core.reports.paper1.table2`) at ``P``, once (:func:`report_once`)."""
    from sst_core.reports.paper1 import table2

    return report_once("table2", table2, P, root, tables)


def _table2(P: Profile, root, tables: dict[str, Table]
            ) -> tuple[str, str, str | None, dict[str, Any]]:
    c = table2_cells(table2_report(P, root, tables).data)
    return "m_p per cell", cells_text(c, "cells"), verdict_of_cells(
        c["agree"], c["close"], c["differ"]), c


def table2_pattern(data) -> dict[str, int]:
    """Table 2's pattern, who reaches length 1000 (the paper's reading: the state-dependent
    recurrences everywhere; on S3 the affine ones fail sooner or later, and in its table
    all but one of them below 1000), judged cell by cell over the cells of
    :func:`sst_core.reports.paper1.table2`'s ``data`` that the paper reports and we
    computed: the state-dependent cells (``sd``) and the affine cells on S3
    (``affine_s3``), how many reach 1000 in ours (``sd_1000``, ``affine_s3_1000``) and in
    the paper's (``paper_sd_1000``, ``paper_affine_s3_1000``); a cell ``holds`` where it
    reaches 1000 exactly when the paper's does, and ``fails`` otherwise."""
    from sst_core.models.registry import expected_affine

    cells = [d for d in data if d["status"] in ("ok", "fail") and d["paper_reported"]]
    sd = [d for d in cells if not expected_affine(d["model"])]
    aff = [d for d in cells if expected_affine(d["model"]) and d["group"] == "S3"]
    out = {"sd": len(sd), "affine_s3": len(aff)}
    for name, part in (("sd", sd), ("affine_s3", aff)):
        out[f"{name}_1000"] = sum(d["m_p"] == 1000 for d in part)
        out[f"paper_{name}_1000"] = sum(d["paper"] == 1000 for d in part)
    out["holds"] = sum((d["m_p"] == 1000) == (d["paper"] == 1000) for d in sd + aff)
    out["fails"] = len(sd) + len(aff) - out["holds"]
    return out


def _table2_pattern(P: Profile, root, tables: dict[str, Table]
                    ) -> tuple[str, str, str | None, dict[str, Any]]:
    c = table2_pattern(table2_report(P, root, tables).data)
    paper, ours = (f"state-dependent at 1000 in {c[w + 'sd_1000']} of {c['sd']} cells; "
                   f"affine on S3 at 1000 in {c[w + 'affine_s3_1000']} of {c['affine_s3']}"
                   for w in ("paper_", ""))
    return paper, ours, verdict_of_claim(c["holds"], 0, c["fails"]), c


def _table3(P: Profile, root, tables: dict[str, Table]
            ) -> tuple[str, str, str | None, dict[str, Any]]:
    from sst_core.reports.paper1 import table3

    c = table2_cells(table3(P, root).data)
    return "m_p per row", cells_text(c, "rows"), verdict_of_cells(
        c["agree"], c["close"], c["differ"]), c


def _figure4(P: Profile, root, tables: dict[str, Table]
             ) -> tuple[str, str, str | None, dict[str, Any]]:
    from sst_core.reports.error_control import figure4_table

    d = figure4_table(P, root).data[0]
    paper = d["paper"]
    ours = ("no model qualifies" if d["r"] is None else
            f"r = {d['r']:.2f}" + ("" if d["r_lo"] is None else
                                   f" [{d['r_lo']:.2f}, {d['r_hi']:.2f}]")
            + f", {d['n']} models")
    values = {"r": d["r"], "r_lo": d["r_lo"], "r_hi": d["r_hi"], "n": d["n"],
              "paper_r": paper["r"], "paper_n": paper["n"]}
    return (f"r = {paper['r']}, {paper['n']} models", ours,
            verdict_of_interval(paper["r"], d["r_lo"], d["r_hi"], d["r"]), values)


def _s4_is_s4d(P: Profile, root, tables: dict[str, Table]
               ) -> tuple[str, str, str | None, dict[str, Any]]:
    from sst_core.experiments.paper2 import simulation_grid
    from sst_core.reports import stored_records
    from sst_core.reports.memory import simulation_check

    records = [r for r in stored_records(simulation_grid(P), root) if r["status"] == "ok"]
    if not records:
        return "equal (a theorem)", "no run", None, {}
    c = simulation_check(records[0])
    gap = max(c["dense_formula"], c["gramian"])
    return "equal (a theorem)", f"equal to {gap:.0e}", verdict_of_identity(gap), c


def _lra_claim(key: str) -> Callable[[Profile, Any, dict], tuple[str, str, str | None, dict]]:
    def row(P: Profile, root, tables: dict[str, Table]
            ) -> tuple[str, str, str | None, dict[str, Any]]:
        from sst_core.reports.lra import (UNDETERMINED, claim_counts, failing_spectra,
                                          lra_claims, paper_claims)
        from sst_core.spec.paper_values import LRA_CLAIM_TASKS

        rows = report_once("lra_claims", lra_claims, P, root, tables).data
        c = claim_counts(rows)[key]
        cited = LRA_CLAIM_TASKS.get(key)
        paper = "claimed" + (f" (from {', '.join(cited)})" if cited else "")
        # the same rule on the paper's own rows, where its tables hold the claim's parts
        own = [d[key] for d in report_once("paper_claims", paper_claims, P, root, tables).data
               if d.get(key) is not None]
        if own:
            paper += (f"; the same rule on its own rows: holds on {own.count('holds')}, "
                      f"ties on {own.count('tie')}, fails on {own.count('fails')} of "
                      f"{len(own)} tasks")
        # a task where the claim is undetermined (its runs had not converged) weighs in
        # neither way: the verdict reads the others
        tasks = f"{c['judged']} task" + ("" if c["judged"] == 1 else "s")
        ours = (f"{tasks}: holds on {c['holds']}, ties on {c['tie']}, fails on "
                f"{c['fails']}" if c["judged"] else "no task judged")
        if c[UNDETERMINED]:
            ours += f", undetermined on {c[UNDETERMINED]} (runs not converged)"
        failing = failing_spectra(rows, key)  # where it fails, by spectrum
        if failing:
            ours += f" (the failing parts: {', '.join(failing)})"
        return paper, ours, verdict_of_claim(c["holds"], c["tie"], c["fails"]), c
    return row


def _dead_memory(P: Profile, root, tables: dict[str, Table]
                 ) -> tuple[str, str, str | None, dict[str, Any]]:
    from sst_core.reports.lra import memory_horizon

    claims = {d["claim"]: d for d in memory_horizon(P, root).data if d["kind"] == "claim"}
    parts = [claims["dead_memory_stays_at_chance"], claims["dead_memory_is_not_learned"]]
    judged = [p for p in parts if p["holds"] is not None]
    cells = max((p["n_cells"] for p in judged), default=0)
    failing = {tuple(f) for p in judged for f in p["failing"]}
    holds = sum(p["holds"] for p in judged)
    ours = (f"the claim holds in {cells - len(failing)} of {cells} cells" if judged
            else "no cell starts without memory")
    # the control: cells with memory at init should learn; where some do not, being at
    # chance is no evidence that it is the missing memory that keeps a cell there. It is
    # shown beside the claim, with the LRA chapter's verdict words, and the verdict reads
    # the claim alone.
    live = claims.get("live_memory_is_used")
    live_cells = live["n_cells"] if live and live["holds"] is not None else 0
    if live_cells:
        ours += (f"; its control, memory present at the start is used, "
                 f"{'holds' if live['holds'] else 'does not hold'}: above chance in "
                 f"{live_cells - len(live['failing'])} of {live_cells} cells")
    return ("holds (a theorem and a worked example)", ours,
            verdict_of_claim(holds, 0, len(judged) - holds),
            {p["claim"]: p["holds"] for p in parts} | {
                "cells": cells, "control_cells": live_cells,
                "control_holds": live["holds"] if live_cells else None})


# result -> (what, the chapter it is read from, the link's text, how its row is read)
RESULTS: dict[str, tuple[str, str, str, Callable]] = {
    "table2": (f"Paper 1, Table 2: longest length tracked, {len(TABLE2_MODELS)} architectures on "
               f"{', '.join(TABLE2_GROUPS)}",
               "p1_table2", "Table 2", _table2),
    "table2_pattern": ("Paper 1, Table 2's pattern: who reaches length 1000", "p1_table2", "Table 2",
                       _table2_pattern),
    "table3": ("Paper 1, Table 3: the nonlinearity family on S3", "p1_table3", "Table 3", _table3),
    "figure4": ("Paper 1, Figure 4: T_cross predicts m_p (Pearson r of the logs)", "p1_diagnostics",
                "Figures 1-4", _figure4),
    "s4_is_s4d": ("Paper 2: only the eigenvalues matter: S4 and S4D with one spectrum remember the same",
                  "p2_memory", "Memory", _s4_is_s4d),
    "lra_frozen_as_good": ("Paper 2, LRA claim 1: a frozen spectrum is as good as a learned one",
                           "p2_lra", "LRA", _lra_claim("frozen_as_good")),
    "lra_unstructured_worse": ("Paper 2, LRA claim 2: unstructured spectra are worse than S4D-Inv",
                               "p2_lra", "LRA", _lra_claim("unstructured_worse")),
    "lra_memory_not_extended": ("Paper 2, LRA claim 3: training does not extend memory", "p2_lra",
                                "LRA", _lra_claim("memory_not_extended")),
    "lra_frozen_converges_faster": ("Paper 2, LRA claim 4: a frozen spectrum converges faster",
                                    "p2_lra", "LRA", _lra_claim("frozen_converges_faster")),
    "dead_memory": ("Paper 2: memory gone at initialisation is not learned back (delayed recall)",
                    "p2_lra", "LRA", _dead_memory),
}

# chapter -> the headline results read from it, in the table's order
CHAPTER_RESULTS: dict[str, tuple[str, ...]] = {}
for _name, (_, _chapter, _, _) in RESULTS.items():
    CHAPTER_RESULTS.setdefault(_chapter, ())
    CHAPTER_RESULTS[_chapter] += (_name,)


def overview(profiles: Mapping[str, Profile], root=None,
             tables: dict[str, Table] | None = None) -> Table:
    """One row per result of :data:`RESULTS` whose chapter has a profile in ``profiles``
    (chapter -> the profile that chapter shows), in that order: the result, the paper's
    value, ours, the verdict (the module's rule; "not judged" where ours is missing) and a
    link to the chapter. ``tables``: reports that several results read, by name, which
    the caller computed already at the profile their chapter shows (``"table2"``:
    :func:`table2_report`); those it computes itself are added to it."""
    tables = {} if tables is None else tables
    cols = ["result", "paper", "ours", "verdict", "chapter"]
    rows, data = [], []
    for name, (what, chapter, link, read) in RESULTS.items():
        if chapter not in profiles:
            continue
        P = profiles[chapter]
        paper, ours, verdict, values = read(P, root, tables)
        rows.append([what, paper, ours, verdict or "not judged",
                     f"{{doc}}`{link} <{chapter}>`"])
        data.append({"result": name, "chapter": chapter, "profile": P.name,
                     "verdict": verdict, "values": values})
    return Table("The reproduction at a glance", cols, rows, "", [], data)
