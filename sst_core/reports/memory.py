"""Table of the chapter "Memory function and the direction of learning"."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sst_core.experiments.paper2 import memory_grid
from sst_core.reports import Table, stored_record
from sst_core.spec.configs import REPORT_DELAYS, REPORT_DTS
from sst_core.spec.profiles import Profile


class MemoryTable(Table):
    """A Table whose markdown shows small memory values in scientific notation and a
    missing value (a delay beyond the horizon, null in JSON) as "n/a"."""

    def to_markdown(self) -> str:
        def cell(v: Any, col: str) -> str:
            if v is None:
                return "n/a"
            if isinstance(v, float):
                if col == "dt":
                    return f"{v:g}"
                return f"{v:.3f}" if v == 0 or abs(v) >= 0.01 else f"{v:.1e}"
            return str(v).replace("|", "\\|")

        lines = [f"**{self.title}**", "",
                 "| " + " | ".join(self.columns) + " |",
                 "|" + "|".join("---" for _ in self.columns) + "|"]
        lines += ["| " + " | ".join(cell(v, c) for v, c in zip(row, self.columns)) + " |"
                  for row in self.rows]
        if self.note:
            lines += ["", self.note]
        return "\n".join(lines)


def memory_table(P: Profile, root: Path | None = None) -> Table:
    """For each initialisation at N = P.mem_N, T = P.mem_T and each dt of REPORT_DTS: the
    memory function at delays 10, 100, 1000 (null beyond T-1), the capacity and the rank."""
    cols = (["init", "N", "dt", "T"] + [f"M[{d}]" for d in REPORT_DELAYS]
            + ["capacity", "rank"])
    rows, data, ids = [], [], []
    for cfg in memory_grid(P):
        if cfg.dt not in REPORT_DTS:
            continue
        head = [cfg.init, cfg.N, cfg.dt, cfg.T]
        row = {"init": cfg.init, "N": cfg.N, "dt": cfg.dt, "T": cfg.T,
               "delays": list(REPORT_DELAYS)}
        rec = stored_record(cfg, root)
        if rec is None or rec["status"] != "ok":
            status = "missing" if rec is None else f"failed: {rec['reason']}"
            rows.append(head + [status] + [""] * (len(cols) - len(head) - 1))
            data.append({**row, "status": "missing" if rec is None else "failed",
                         "reason": None if rec is None else rec["reason"], "memory": None,
                         "capacity": None, "rank": None})
            continue
        m = rec["metrics"]
        at = dict(zip(m["delay"], m["memory"]))
        memory = [at.get(d) if d < cfg.T else None for d in REPORT_DELAYS]
        rows.append(head + memory + [m["capacity"], m["rank"]])
        data.append({**row, "status": "ok", "reason": None, "memory": memory,
                     "capacity": m["capacity"], "rank": m["rank"]})
        ids.append(rec["run_id"])
    note = (f"Scale: {P.scale('mem_N', 'mem_T', 'seed')}. ZOH discretisation; N is the real "
            "state size (both members of each conjugate pair), so a real eigenvalue stored as "
            "one member of a pair counts once in the rank (S4D-Lin: N-1, S4D-Real: N/2). "
            "capacity = sum of M over all T delays (= rank). n/a: delay beyond T-1. "
            "`random` is uniform in the unit disk at each dt, so it does not depend on dt.")
    return MemoryTable(f"Memory function of the five initialisations (N={P.mem_N}, T={P.mem_T})",
                       cols, rows, note, ids, data)


def reference_comparison(P: Profile, root: Path | None = None) -> Table:
    """Our memory function next to the values of the project's implementation notes
    (reference Section 3.4: N=64, T=4096, computed independently with NumPy/mpmath)."""
    from sst_core.experiments.paper2 import reference_grid
    from sst_core.spec.configs import REFERENCE_DELAYS, REFERENCE_VALUES

    cols = ["init", "dt", "N", "T"] + [f"M[{d}] ours (ref.)" for d in REFERENCE_DELAYS] + ["max abs diff"]
    rows, data, ids = [], [], []
    for cfg in reference_grid(P):
        head = [cfg.init, cfg.dt, cfg.N, cfg.T]
        row = {"init": cfg.init, "dt": cfg.dt, "N": cfg.N, "T": cfg.T,
               "delays": list(REFERENCE_DELAYS),
               "reference": list(REFERENCE_VALUES[(cfg.init, cfg.dt)])}
        rec = stored_record(cfg, root)
        if rec is None or rec["status"] != "ok":
            status = "missing" if rec is None else f"failed: {rec['reason']}"
            rows.append(head + [status] + [""] * (len(cols) - len(head) - 1))
            data.append({**row, "status": "missing" if rec is None else "failed",
                         "reason": None if rec is None else rec["reason"], "ours": None,
                         "max_abs_diff": None})
            continue
        at = dict(zip(rec["metrics"]["delay"], rec["metrics"]["memory"]))
        ref = REFERENCE_VALUES[(cfg.init, cfg.dt)]
        cells, diffs, values = [], [], []
        for d, r in zip(REFERENCE_DELAYS, ref):
            if d >= cfg.T:
                cells.append(None)
                values.append(None)
                continue
            ours = at[d]
            diffs.append(abs(ours - r))
            values.append(ours)
            cells.append(f"{ours:.3g} ({r:g})" if ours < 0.01 else f"{ours:.3f} ({r:g})")
        rows.append(head + cells + [max(diffs) if diffs else None])
        data.append({**row, "status": "ok", "reason": None, "ours": values,
                     "max_abs_diff": max(diffs) if diffs else None})
        ids.append(rec["run_id"])
    note = (f"Scale: {P.scale('seed')}; N and T as in the rows (N=64, T=4096 except under "
            "`smoke`). ZOH. ref.: independent NumPy/mpmath values of the implementation notes "
            "(not the paper's), rounded to three decimals or one significant digit, so "
            "differences up to about 0.0005 are rounding.")
    return MemoryTable("Memory function: ours vs independently computed values", cols, rows,
                       note, ids, data)


def simulation_check(record: dict[str, Any]) -> dict[str, float]:
    """What the S4 = S4D check of one simulation record shows, as largest absolute
    differences over the delays: the dense S4's memory function from its eigenvalues
    against the S4D formula (``dense_formula``), the Gramian of its impulse response
    against it (``gramian``), the white-noise simulations of the diagonal and the dense
    system against it (``sim_diag``, ``sim_dense``: finite-sample bias, about N / samples)
    and against each other (``sim_same``), and how far the dense matrix's eigenvalues are
    from the S4D ones (``eigenvalues``)."""
    m = record["metrics"]
    formula = np.asarray(m["formula"])  # (T,)

    def gap(key: str, to: np.ndarray = formula) -> float:
        return float(np.max(np.abs(np.asarray(m[key]) - to)))

    return {"dense_formula": gap("formula_dense_eigs"), "gramian": gap("gramian_dense"),
            "sim_diag": gap("sim_diag"), "sim_dense": gap("sim_dense"),
            "sim_same": gap("sim_dense", np.asarray(m["sim_diag"])),
            "eigenvalues": float(m["eig_max_err"])}


def capacity_delay(metrics: dict[str, Any], share: float) -> int:
    """The first stored delay by which the capacity used (the cumulative memory function of
    a ``memory`` record's metrics) reaches ``share`` of the rank."""
    if not 0 < share <= 1:
        raise ValueError(f"share={share!r} must be in (0, 1]")
    delay, used = np.asarray(metrics["delay"]), np.asarray(metrics["cumulative"])
    reached = used >= share * metrics["rank"]
    if not reached.any():
        raise ValueError(f"the capacity used never reaches {share} of the rank "
                         f"{metrics['rank']} (largest: {used.max()})")
    return int(delay[np.argmax(reached)])


def capacity_table(curves: list[dict[str, Any]], inits: list[str], dt: float) -> Table:
    """The sum rule at step ``dt``: for each initialisation, the summed memory function
    (the capacity) beside the rank of the Vandermonde matrix."""
    by = {(r["config"]["init"], r["config"]["dt"]): r["metrics"] for r in curves}
    rows = [[k, by[(k, dt)]["capacity"], by[(k, dt)]["rank"]] for k in inits]
    data = [{"init": k, "dt": dt, "capacity": c, "rank": n} for k, c, n in rows]
    return Table("Capacity and rank", ["init", "capacity (sum of M)", "rank V"],
                 [[k, f"{c:.10f}", n] for k, c, n in rows], data=data)


def capacity_delays(curves: list[dict[str, Any]], inits: list[str],
                    dts: list[float]) -> Table:
    """For each initialisation and each step of ``dts``: the delays by which half and 90%
    of the capacity is used (:func:`capacity_delay`, on the stored delay grid)."""
    by = {(r["config"]["init"], r["config"]["dt"]): r["metrics"] for r in curves}
    rows, data = [], []
    for k in inits:
        cells = []
        for dt in dts:
            half, most = capacity_delay(by[(k, dt)], 0.5), capacity_delay(by[(k, dt)], 0.9)
            cells.append(f"{half} / {most}")
            data.append({"init": k, "dt": dt, "half": half, "ninety": most})
        rows.append([k] + cells)
    return Table("Delays by which the capacity is used",
                 ["init"] + [f"Δ = {dt:g}: half / 90 %" for dt in dts], rows, data=data)
