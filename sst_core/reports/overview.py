"""The book's results at a glance: one row per headline result of the two papers, ours
beside the paper's, read from the same reports the chapters show (nothing is computed
here that a chapter does not compute too).

:func:`overview` takes, per chapter, the profiles to read (the one the chapter shows and,
where a larger sweep is under way, that one too), so that a reader sees both the complete
smaller table and the larger one so far, each labelled with its profile and how many of its
runs are stored.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from sst_core.reports import Table
from sst_core.spec.profiles import Profile

# chapter -> the headline results it holds (the report behind each row is in _ROWS)
CHAPTER_RESULTS: dict[str, tuple[str, ...]] = {
    "p1_table2": ("table2",),
    "p1_table3": ("table3",),
    "p1_diagnostics": ("figure4",),
    "p2_memory": ("s4_is_s4d",),
    "p2_lra": ("lra_claims", "memory_horizon"),
}


@dataclass(frozen=True)
class Source:
    """One profile's records of one chapter: ``stored`` of ``total`` runs."""

    chapter: str
    profile: Profile
    stored: int
    total: int

    def label(self) -> str:
        done = "all" if self.stored == self.total else f"{self.stored} of"
        meaningless = "; numbers meaningless at this scale" if self.profile.name == "smoke" else ""
        return f"`{self.profile.name}` ({done} {self.total} runs{meaningless})"


def _table2(P: Profile, root) -> tuple[str, str, str, dict[str, Any]]:
    from sst_core.reports.paper1 import agreement_counts, table2

    c = agreement_counts(table2(P, root).data)
    return ("Table 2: the longest length each architecture tracks (m_p), C2 / C6 / S3",
            f"{c['exact']} of the paper's {c['reported']} cells computed here agree exactly, "
            f"{c['by_class']} by class (fail / 60 / 100-600 / 700-1000)",
            "the published table", c)


def _table3(P: Profile, root) -> tuple[str, str, str, dict[str, Any]]:
    from sst_core.reports.paper1 import agreement_counts, table3

    c = agreement_counts(table3(P, root).data)
    return ("Table 3: the nonlinearity family on S3",
            f"{c['exact']} of {c['reported']} rows agree exactly", "the published table", c)


def _figure4(P: Profile, root) -> tuple[str, str, str, dict[str, Any]]:
    from sst_core.reports.error_control import figure4_table

    d = figure4_table(P, root).data[0]
    paper = d["paper"]
    interval = "" if d["r_lo"] is None else f" [{d['r_lo']:.2f}, {d['r_hi']:.2f}]"
    ours = ("no model qualifies yet" if d["r"] is None else
            f"r = {d['r']:.2f}{interval} over {d['n']} models")
    return ("Figure 4: log T_cross against log m_p (Pearson r, bootstrap 95% interval)", ours,
            f"r = {paper['r']} over {paper['n']} models",
            {"r": d["r"], "r_lo": d["r_lo"], "r_hi": d["r_hi"], "n": d["n"],
             "paper_r": paper["r"], "paper_n": paper["n"]})


def _s4_is_s4d(P: Profile, root) -> tuple[str, str, str, dict[str, Any]]:
    from sst_core.experiments.paper2 import simulation_grid
    from sst_core.reports import stored_records
    from sst_core.reports.memory import simulation_check

    what = "S4 = S4D: a dense SSM and a diagonal one with one spectrum remember the same"
    paper = "equal (a theorem: only the eigenvalues matter)"
    records = [r for r in stored_records(simulation_grid(P), root) if r["status"] == "ok"]
    if not records:
        return what, "no stored run yet", paper, {}
    c = simulation_check(records[0])
    return (what, f"memory functions equal to {c['dense_formula']:.0e} (from the dense "
            f"matrix's eigenvalues) and {c['gramian']:.0e} (its impulse response); their "
            f"white-noise simulations agree to {c['sim_same']:.0e}", paper, c)


def _lra_claims(P: Profile, root) -> tuple[str, str, str, dict[str, Any]]:
    from sst_core.reports.lra import claim_counts, claim_counts_text, lra_claims

    counts = claim_counts(lra_claims(P, root).data)
    ours = claim_counts_text(counts)
    return ("LRA stand-ins: the paper's four claims on frozen against learned spectra", ours,
            "all four hold on LRA", {k: {**c, "tasks": c["judged"]} for k, c in counts.items()})


def _memory_horizon(P: Profile, root) -> tuple[str, str, str, dict[str, Any]]:
    from sst_core.reports.lra import memory_horizon

    claims = [d for d in memory_horizon(P, root).data if d["kind"] == "claim"]
    verdict = {d["claim"]: d["holds"] for d in claims}
    word = {True: "holds", False: "does not hold", None: "not checkable"}
    ours = "; ".join(f"{d['claim'].replace('_', ' ')}: {word[d['holds']]} ({d['n_cells']} cells)"
                     for d in claims)
    return ("Delayed recall: memory gone at initialisation is not learned back", ours,
            "the paper's central claim (its worked example, not run at this scale)", verdict)


_ROWS = {"table2": _table2, "table3": _table3, "figure4": _figure4, "s4_is_s4d": _s4_is_s4d,
         "lra_claims": _lra_claims, "memory_horizon": _memory_horizon}


def overview(sources: Sequence[Source], root=None) -> Table:
    """One row per headline result (:data:`CHAPTER_RESULTS`) and source, in order."""
    cols = ["result", "ours", "paper", "profile (runs stored)", "chapter"]
    rows, data = [], []
    for src in sources:
        for result in CHAPTER_RESULTS.get(src.chapter, ()):
            what, ours, paper, values = _ROWS[result](src.profile, root)
            rows.append([what, ours, paper, src.label(), f"{{doc}}`{src.chapter}`"])
            data.append({"result": result, "chapter": src.chapter, "profile": src.profile.name,
                         "stored": src.stored, "total": src.total,
                         "values": values})
    note = ("Each row is read from the report its chapter shows, at the profile named (a "
            "chapter whose larger sweep is under way has a row for that profile's records so "
            "far); "
            "the chapter says how the numbers were produced and why they may differ "
            "from the paper's.")
    return Table("Results at a glance", cols, rows, note, [], data)
