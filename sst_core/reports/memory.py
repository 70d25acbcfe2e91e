"""Table of the chapter "Memory function and the direction of learning"."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sst_core.experiments.paper2 import memory_grid
from sst_core.reports import Grid, Table, stored_record
from sst_core.spec.configs import REPORT_DELAYS, REPORT_DTS
from sst_core.spec.names import INIT_NAMES
from sst_core.spec.profiles import Profile


class MemoryTable(Table):
    """A Table whose grid shows small memory values in scientific notation and a missing
    value (a delay beyond the horizon, null in JSON) as "n/a"."""

    def grid(self) -> Grid:
        def cell(v: Any, col: str) -> str:
            if v is None:
                return "n/a"
            if isinstance(v, float):
                if col == "Δ":
                    return f"{v:g}"
                return f"{v:.3f}" if v == 0 or abs(v) >= 0.01 else f"{v:.1e}"
            return str(v).replace("|", "\\|")

        lines = ["| " + " | ".join(self.columns) + " |",
                 "|" + "|".join("---" for _ in self.columns) + "|"]
        lines += ["| " + " | ".join(cell(v, c) for v, c in zip(row, self.columns)) + " |"
                  for row in self.rows]
        return Grid("\n".join(lines))


def memory_table(P: Profile, root: Path | None = None) -> Table:
    """For each initialisation at N = P.mem_N, T = P.mem_T and each dt of REPORT_DTS: the
    memory function at delays 10, 100, 1000 (null beyond T-1), the capacity and the rank."""
    cols = ["initialisation", "Δ"] + [f"M[{d}]" for d in REPORT_DELAYS] + ["capacity", "rank"]
    rows, data, ids = [], [], []
    for cfg in memory_grid(P):
        if cfg.dt not in REPORT_DTS:
            continue
        head = [INIT_NAMES[cfg.init], cfg.dt]
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
    """Our memory function next to reference values computed independently with
    NumPy/mpmath before this code (N=64, T=4096)."""
    from sst_core.experiments.paper2 import reference_grid
    from sst_core.spec.configs import REFERENCE_DELAYS, REFERENCE_VALUES

    cols = ["initialisation", "Δ"] + [f"M[{d}] ours (ref.)" for d in REFERENCE_DELAYS] + ["max abs diff"]
    rows, data, ids = [], [], []
    grid = reference_grid(P)
    for cfg in grid:
        head = [INIT_NAMES[cfg.init], cfg.dt]
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
    note = (f"Scale: {P.scale('seed')}; N and T as in the title (N=64, T=4096 except under "
            "`smoke`). ZOH. ref.: independent NumPy/mpmath reference values "
            "(not the paper's), rounded to three decimals or one significant digit, so "
            "differences up to about 0.0005 are rounding.")
    return MemoryTable(f"Memory function at N={grid[0].N}, T={grid[0].T}: ours vs "
                       "independently computed values", cols, rows, note, ids, data)


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
        rows.append([INIT_NAMES[k]] + cells)
    return Table("Delays by which the capacity is used",
                 ["initialisation"] + [f"Δ = {dt:g}: half / 90 %" for dt in dts], rows,
                 data=data)


def chapter_numbers(P: Profile, curves: list[dict[str, Any]], gd: list[dict[str, Any]],
                    sim: dict[str, Any], legs: dict[str, Any],
                    root: Path | None = None) -> dict[str, Any]:
    """The numbers that the chapter "Memory function and the direction of learning" states
    in its prose, by the name it glues them under: from its records (``curves``: the
    memory grid; ``gd``: the worked example; ``sim``: the S4 = S4D simulation; the
    reference grid's stored records), from ``legs`` (:func:`sst_core.theory.memory.legs_comparison`)
    and from a few direct evaluations of :mod:`sst_core.theory.memory`."""
    from sst_core.experiments.paper2 import reference_grid
    from sst_core.spec.configs import INITS, REFERENCE_N
    from sst_core.theory import memory as mf

    by = {(r["config"]["init"], r["config"]["dt"]): r["metrics"] for r in curves}
    out: dict[str, Any] = {"N": P.mem_N, "T": P.mem_T, "n_sim": P.mem_sim_T,
                           "gd_steps": P.mem_gd_steps, "seed": P.seed}
    # the spectra and the sum rule (every curve: capacity = rank)
    out.update(rank_lin=by[("lin", 0.01)]["rank"], rank_real=by[("real", 0.01)]["rank"],
               cap_err=max(abs(m["capacity"] - m["rank"]) for m in by.values()))
    alias = mf.spectrum("lin", REFERENCE_N, 0.1)  # aliasing at the reference's size
    gaps = np.abs(alias[:, None] - alias[None, :])  # (N, N)
    merged = gaps[(gaps > 0) & (gaps <= mf.DEFAULT_TOL)]
    out.update(rank_lin_alias=mf.vandermonde_rank(alias, P.mem_T),
               cap_lin_alias=mf.memory_capacity(alias, P.mem_T), alias_N=REFERENCE_N,
               alias_gap=float(merged.max()) if merged.size else 0.0,
               merge_tol=mf.DEFAULT_TOL)
    # the step spectrum at dt = 0.1: its stored eigenvalues that ZOH puts on the real axis
    # (each then counts once in the rank, not as a pair)
    stored = mf.spectrum("step", P.mem_N, 0.1)[:P.mem_N // 2]  # (N/2,)
    real_n = np.flatnonzero(np.abs(stored.imag) <= mf.DEFAULT_TOL / 2)
    out.update(rank_step_alias=by[("step", 0.1)]["rank"], step_real_count=len(real_n),
               step_real_n=", ".join(str(n) for n in real_n))
    # the memory function depends on the window: S4D-Inv's M[10] at dt = 0.001 at this
    # page's T and at the reference's
    ref_inv = next((d for d in reference_comparison(P, root).data
                    if (d["init"], d["dt"]) == ("inv", 0.001) and d["ours"]), None)
    out.update(inv_m10_0001=dict(zip(by[("inv", 0.001)]["delay"],
                                     by[("inv", 0.001)]["memory"]))[10],
               ref_inv_m10_0001=float("nan") if ref_inv is None
               else ref_inv["ours"][ref_inv["delays"].index(10)])
    # accuracy: float64 SVD against memory_function on S4D-Lin at dt = 0.001, and against a
    # direct 100-digit evaluation; the time at the reference's size, from its records
    mu_lin = mf.spectrum("lin", P.mem_N, 0.001)
    M_svd, rank_svd = mf.memory_function_svd(mu_lin, P.mem_T)
    info = mf.memory_function_info(mu_lin, P.mem_T)
    refs = [stored_record(cfg, root) for cfg in reference_grid(P)]
    refs = [r for r in refs if r is not None and r["status"] == "ok"]
    diffs = [d["max_abs_diff"] for d in reference_comparison(P, root).data
             if d["max_abs_diff"] is not None]
    out.update(svd_rank=rank_svd, svd_rank_exact=info["rank"],
               svd_err=float(np.max(np.abs(M_svd - info["memory"]))),
               lin_dps=info["dps"],
               ref_err=mf.reference_error(("lin", "inv", "real"), P.mem_N, P.mem_T, 0.001),
               wall_max=max((r["metrics"]["memory_wall_s"] for r in refs), default=float("nan")),
               ref_N=reference_grid(P)[0].N, ref_T=reference_grid(P)[0].T,
               ref_table_diff=max(diffs) if diffs else float("nan"))
    # how long the memory lasts at dt = 0.01
    at = {k: dict(zip(by[(k, 0.01)]["delay"], by[(k, 0.01)]["memory"])) for k in INITS}
    half = {d["init"]: d["half"] for d in capacity_delays(curves, list(INITS), [0.01]).data}
    out.update(inv_m100=at["inv"][100], rand_m100=at["random"][100],
               order_001=" > ".join(INIT_NAMES[k] for k in sorted(INITS, key=lambda k: -half[k])))
    # the readout gradient: autograd against the white-noise formula and the sample moments
    gd_by = {r["config"]["init"]: r["metrics"] for r in gd}
    gc = gd_by["inv"]["grad_check"]
    g_auto, g_formula = np.array(gc["autograd_at_0"]), np.array(gc["formula_at_0"])
    out.update(grad_rel=float(np.linalg.norm(g_auto - g_formula) / np.linalg.norm(g_formula)),
               grad_moments=max(r["metrics"]["grad_check"]["moments_vs_autograd_max_abs"]
                                for r in gd))
    # the worked example: a teacher at delay 500 with a random spectrum and with S4D-Inv
    mu_random = np.array(gd_by["random"]["mu_re"]) + 1j * np.array(gd_by["random"]["mu_im"])
    out.update(gd_inv_cond=gd_by["inv"]["cond_G"],
               gd_random_mu500=float(np.max(np.abs(mu_random)) ** 500))
    for k in ("random", "inv"):
        m = gd_by[k]
        out.update({f"gd_{k}_M500": m["M_teacher"], f"gd_{k}_M40": m["M_40"],
                    f"gd_{k}_r2": 1 - m["pop_loss"][-1] / m["pop_loss"][0],
                    f"gd_{k}_test_r2": 1 - m["emp_test_loss"][-1] / m["emp_test_loss"][0],
                    f"gd_{k}_dist": float(m["dist"][-1]
                                          / max(np.linalg.norm(m["theta_star"]), 1e-300)),
                    f"gd_{k}_theta": float(np.linalg.norm(m["theta_final"]))})
    # S4 = S4D, and HiPPO-LegS
    check = simulation_check(sim)
    out.update(sim_diag_err=check["sim_diag"], sim_dense_err=check["sim_dense"],
               sim_dense_formula=check["dense_formula"], sim_gramian=check["gramian"],
               sim_eig_err=check["eigenvalues"], sim_same=check["sim_same"],
               sim_N=sim["config"]["N"])
    out.update(legs_min=legs["real_min"], legs_max=legs["real_max"], legs_imag=legs["imag_max"],
               legs_eigvec_cond=legs["eigvec_cond"], legs_m10=legs["M_legs"][0],
               legs_m100=legs["M_legs"][1], inv_m10=legs["M_inv"][0],
               inv_m100b=legs["M_inv"][1], legs_omega_max=legs["omega_max_legs"],
               inv_omega_max=legs["omega_max_inv"])
    # the appendix remark: attention as a linear RNN with the single eigenvalue 1
    out.update(attn_m=float(mf.memory_function([1.0], P.mem_T, 0)),
               attn_cap=mf.memory_capacity([1.0], P.mem_T))
    return out


# The numeric twins of the chapter's derivations: (what is compared, with what), by the key
# of chapter_numbers that holds the largest difference.
TWIN_CHECKS = {
    "mf_sym_diff": ("memory function, μ = 0.9, 0.5, T = 3", "SymPy expression"),
    "cap_err": ("capacity, every initialisation and Δ", "rank of V"),
    "ref_err": ("memory_function, S4D-Lin/Inv/Real, Δ = 0.001", "100-digit evaluation"),
    "ref_table_diff": ("memory_function at the reference's size", "reference values"),
    "svd_err": ("float64 SVD route, S4D-Lin, Δ = 0.001", "memory_function"),
    "grad_moments": ("readout gradient, autograd on a sample", "the sample's moments"),
    "grad_rel": ("the same (relative)", "white-noise formula"),
    "sim_eig_err": ("dense S4: eigenvalues of Ā", "S4D's eigenvalues"),
    "sim_dense_formula": ("dense S4: M from those eigenvalues", "S4D formula"),
    "sim_gramian": ("dense S4: Gramian of its impulse response", "S4D formula"),
    "sim_diag_err": ("white-noise simulation, S4D", "S4D formula"),
    "sim_dense_err": ("white-noise simulation, dense S4", "S4D formula"),
    "sim_same": ("white-noise simulation, dense S4", "simulation, S4D"),
}


def twin_checks(numbers: dict[str, Any]) -> Table:
    """Each numeric twin of the memory chapter (:data:`TWIN_CHECKS`) with its largest
    absolute difference (relative for ``grad_rel``), from :func:`chapter_numbers`."""
    rows = [[what, against, numbers[key]] for key, (what, against) in TWIN_CHECKS.items()]
    data = [{"check": key, "value": numbers[key]} for key in TWIN_CHECKS]
    return Table("The numeric twins of the derivations",
                 ["computed", "against", "largest difference"],
                 [[a, b, f"{v:.1e}"] for a, b, v in rows], data=data)


def worked_example_table(gd: list[dict[str, Any]]) -> Table:
    """The worked example (a teacher at one delay) per spectrum of the ``readout_gd``
    records: the memory function at delay 40 and at the teacher's delay, the largest
    |mu|^delay, the share of the teacher's variance explained after the last step (expected
    loss; held-out sample), the readout's norm, its distance to theta* (relative) and the
    condition number of the Gram matrix."""
    by = {r["config"]["init"]: r for r in gd}
    inits = [k for k in INIT_NAMES if k in by]
    tau0 = gd[0]["config"]["teacher_delay"]

    def values(m: dict[str, Any]) -> list[float]:
        mu = np.array(m["mu_re"]) + 1j * np.array(m["mu_im"])
        return [m["M_40"], m["M_teacher"], float(np.max(np.abs(mu)) ** tau0),
                1 - m["pop_loss"][-1] / m["pop_loss"][0],
                1 - m["emp_test_loss"][-1] / m["emp_test_loss"][0],
                float(np.linalg.norm(m["theta_final"])),
                float(m["dist"][-1] / max(np.linalg.norm(m["theta_star"]), 1e-300)),
                float(m["cond_G"])]

    names = ["M[40]", f"M[{tau0}]", f"max |μ|^{tau0}", "share explained, expected loss",
             "share explained, held-out sample", "‖θ‖ at the end", "‖θ − θ*‖ / ‖θ*‖",
             "condition number of VVᵀ"]
    cols = {k: values(by[k]["metrics"]) for k in inits}
    rows = [[name] + [f"{cols[k][i]:.3g}" if abs(cols[k][i]) >= 1e-3 or cols[k][i] == 0
                      else f"{cols[k][i]:.1e}" for k in inits]
            for i, name in enumerate(names)]
    data = [{"init": k, **dict(zip(names, cols[k]))} for k in inits]
    return Table(f"Readout learning, teacher at delay {tau0}",
                 ["quantity"] + [INIT_NAMES[k] for k in inits], rows,
                 records=[by[k]["run_id"] for k in inits], data=data)


# How a learned-versus-frozen comparison reads, by the claim rule's verdict on "frozen
# above learned" (sst_core.reports.lra.judge): z beyond 2 either way, or within.
ORDERING = {"holds": "frozen higher", "fails": "learned higher", "tie": "tie"}


def same_cell(ours: str | None, paper: str | None) -> str:
    """The "same ordering" cell of :func:`ablation_orderings`: "yes" where the two
    orderings are the same, "tie" where they differ and one of them is a tie (no
    reversal), "no" where one is frozen higher and the other learned higher, "—" where
    either has no ordering."""
    if ours is None or paper is None:
        return "—"
    if ours == paper:
        return "yes"
    return "tie" if ORDERING["tie"] in (ours, paper) else "no"


def ablation_orderings(data: list[dict[str, Any]],
                       counterpart: dict[str, str | None] | None = None,
                       published: dict[tuple[str, str, bool], tuple[float, float]] | None = None
                       ) -> Table:
    """The LRA ablation read as the memory function's prediction asks: per task that has a
    counterpart in the paper's ablation and per spectrum, is the frozen mean over seeds
    above the learned one, below it, or within (its z, :func:`sst_core.reports.lra.judge`,
    within 2; :data:`ORDERING`), in
    our runs and in the paper's, and is the ordering the same. ``data``: the rows of
    :func:`sst_core.reports.lra.lra_ablation` (``task``, ``init``, ``frozen``,
    ``accuracies``); the paper's cells (max / min over its seeds) become a mean and
    standard deviation by :func:`sst_core.reports.lra.range_stats`. A spectrum without two
    seeds on each side of ours has no ordering (None) and is not compared. ``counterpart``
    and ``published`` default to ``paper_values.LRA_COUNTERPART`` and ``LRA_ABLATION``."""
    from sst_core.reports.lra import mean_part, range_stats, seed_stats
    from sst_core.spec import paper_values

    counterpart = paper_values.LRA_COUNTERPART if counterpart is None else counterpart
    published = paper_values.LRA_ABLATION if published is None else published
    acc = {(d["task"], d["init"], d["frozen"]): d["accuracies"] for d in data}
    tasks = list(dict.fromkeys(d["task"] for d in data))
    inits = list(dict.fromkeys(d["init"] for d in data))
    tasks = [t for t in tasks if any((counterpart.get(t), i, f) in published
                                     for i in inits for f in (False, True))]
    cols, rows, out = ["eigenvalues"], {i: [INIT_NAMES[i]] for i in inits}, []
    for task in tasks:
        paper_task = counterpart[task]
        cols += [f"{task}: frozen − learned, ours (z)",
                 f"{paper_task}: paper's (z)", "same ordering"]
        for init in inits:
            ours = mean_part(seed_stats(acc.get((task, init, True), [])),
                             seed_stats(acc.get((task, init, False), [])), "ours")
            cells = [published.get((paper_task, init, f)) for f in (True, False)]
            paper = (mean_part(*(range_stats(*c) for c in cells), "paper")
                     if None not in cells else {"diff": None, "z": None, "verdict": None})
            a, b = ORDERING.get(ours["verdict"]), ORDERING.get(paper["verdict"])
            same = None if a is None or b is None else a == b
            rows[init] += [f"{a} ({ours['z']:+.1f})" if a else "—",
                           f"{b} ({paper['z']:+.1f})" if b else "—",
                           same_cell(a, b)]
            out.append({"task": task, "paper_task": paper_task, "init": init,
                        "ours_diff": ours["diff"], "ours_z": ours["z"], "ours": a,
                        "paper_diff": paper["diff"], "paper_z": paper["z"], "paper": b,
                        "same": same})
    return Table("The ablation's learned against frozen, ours and the paper's", cols,
                 [rows[i] for i in inits],
                 "Per spectrum: the frozen mean over seeds minus the learned one as its z "
                 "(Welch's t on the normal scale, as the claim rule reads it), read as frozen "
                 "higher / learned higher beyond z = 2, tie within; same ordering: yes, tie where "
                 "one of the two is a tie, no where they are opposite.",
                 data=out)


def ablation_ordering_items(table: Table) -> dict[str, Any]:
    """What the LRA chapter glues from :func:`ablation_orderings`: its grid
    (``lra_abl_order``) and per task ``t``: the spectra compared (``lra_abl_compared_t``),
    how many have the paper's ordering (``lra_abl_same_t``) and how many not
    (``lra_abl_differ_t``, of which ``lra_abl_differ_ties_t`` are a tie in ours), and the
    names of those that do and do not (``lra_abl_same_names_t``,
    ``lra_abl_differ_names_t``, "none" for none)."""
    out: dict[str, Any] = {"lra_abl_order": table.grid()}
    for task in dict.fromkeys(d["task"] for d in table.data):
        rows = [d for d in table.data if d["task"] == task and d["same"] is not None]
        same = [INIT_NAMES[d["init"]] for d in rows if d["same"]]
        differ = [INIT_NAMES[d["init"]] for d in rows if not d["same"]]
        ties = sum(1 for d in rows if not d["same"] and d["ours"] == ORDERING["tie"])
        out.update({f"lra_abl_compared_{task}": len(rows), f"lra_abl_same_{task}": len(same),
                    f"lra_abl_differ_{task}": len(differ), f"lra_abl_differ_ties_{task}": ties,
                    f"lra_abl_same_names_{task}": ", ".join(same) or "none",
                    f"lra_abl_differ_names_{task}": ", ".join(differ) or "none"})
    return out


def gradient_sample_error(cfg: Any, sizes: list[int], repeats: int = 9) -> list[dict[str, Any]]:
    """How far the readout gradient on a simulated sample lies from the white-noise
    formula (:func:`sst_core.theory.memory.readout_gradient`) at the start of the worked
    example ``cfg`` (a ``ReadoutGDConfig``: theta = 0, teacher at ``cfg.teacher_delay``),
    for samples of each length in ``sizes``: the root mean square over ``repeats``
    samples (seeds ``cfg.seed + 1000 k``) of ``||g_sample - g_formula|| / ||g_formula||``. The sample's
    gradient is that of its mean squared error, ``-2 h^T y / n`` at theta = 0 (what
    autograd computes on it). Sampling noise shrinks it like ``1 / sqrt(n)``."""
    from sst_core.theory import memory as mf

    if not sizes or any(int(n) < 1 for n in sizes) or repeats < 1:
        raise ValueError(f"sizes={sizes!r} must be lengths >= 1 and repeats={repeats} >= 1")
    mu = mf.spectrum(cfg.init, cfg.N, cfg.dt, seed=cfg.seed)  # (N,)
    T, tau0 = cfg.T, cfg.teacher_delay
    alpha = np.zeros(T)  # (T,)
    alpha[tau0] = 1.0
    V = mf.vandermonde(mu, T, real=True)  # (N, T)
    g_formula = mf.readout_gradient(np.zeros(V.shape[0]), alpha, mu)  # (N,)
    out = []
    for n in sizes:
        errs = []
        for k in range(repeats):
            u = np.random.default_rng(cfg.seed + 1000 * k).standard_normal(int(n) + T - 1)
            h = mf.simulate_states(V.T, u)[T - 1:]  # (n, N)
            y = u[np.arange(T - 1, u.size) - tau0]  # (n,)
            g = -2.0 * h.T @ y / int(n)  # (N,)
            errs.append(float(np.linalg.norm(g - g_formula) / np.linalg.norm(g_formula)))
        out.append({"n": int(n), "rel_error": float(np.sqrt(np.mean(np.square(errs)))),
                    "repeats": repeats})
    return out
