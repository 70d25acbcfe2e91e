"""The `memory` report: built from stored run records only."""
import json

import pytest

from sst_core.book import params
from sst_core.experiments import paper2
from sst_core.experiments import runs as experiments_runs
from sst_core.reports.memory import memory_table, reference_comparison
from sst_core.spec import configs
from sst_core.spec.names import INIT_NAMES
from sst_core.theory import memory as mf


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    return params.settings("p2_memory", profile="smoke", mem_N=4, mem_T=200, seed=1)


def test_memory_table_from_records(tiny):
    P = tiny
    missing = memory_table(P)
    assert len(missing.rows) == len(configs.INITS) * len(configs.REPORT_DTS)
    assert all(row[2] == "missing" for row in missing.rows) and not missing.records
    assert all(d["status"] == "missing" and d["memory"] is None for d in missing.data)

    for cfg in paper2.memory_grid(P):
        if cfg.dt in configs.REPORT_DTS:
            rec = experiments_runs.run(cfg)
            assert rec["status"] == "ok"
    table = memory_table(P)
    assert len(table.records) == len(table.rows) == 15
    cols = table.columns
    assert cols[:2] == ["initialisation", "Δ"] and cols[2:5] == ["M[10]", "M[100]", "M[1000]"]
    assert "N=4" in table.title and "T=200" in table.title
    names = {v: k for k, v in INIT_NAMES.items()}  # the papers' names in the rows
    by = {(names[r[0]], r[1]): dict(zip(cols, r)) for r in table.rows}
    inv = by[("inv", 0.01)]
    assert inv["M[1000]"] is None  # beyond T-1
    mu = mf.spectrum("inv", 4, 0.01)
    assert inv["M[10]"] == pytest.approx(mf.memory_function(mu, 200, 10), abs=1e-12)
    assert inv["capacity"] == pytest.approx(4, abs=1e-9) and inv["rank"] == 4
    assert by[("lin", 0.01)]["rank"] == 3 and by[("real", 0.01)]["rank"] == 2
    # the random spectrum is uniform in the disk at each dt: the same at every dt
    assert by[("random", 0.001)]["M[10]"] == pytest.approx(by[("random", 0.1)]["M[10]"])

    data = json.loads(table.to_json())
    assert data["rows"][0][4] is None  # null in JSON
    md = table.to_markdown()
    assert "n/a" in md and "None" not in md
    assert "| S4D-Inv | 0.001 |" in md
    grid = table.grid().text  # what the chapter shows: the same rows, no title, no note
    assert grid in md and table.title not in grid and "smoke" not in grid
    assert "smoke" in table.note and "mem_N=4" in table.note and "mem_T=200" in table.note
    assert sum(line.startswith("|") for line in md.splitlines()) == 17  # header, rule, 15 rows

    typed = {(d["init"], d["dt"]): d for d in table.data}  # the same numbers, typed
    assert typed[("inv", 0.01)]["N"] == 4 and typed[("inv", 0.01)]["T"] == 200
    assert typed[("inv", 0.01)]["status"] == "ok" and typed[("inv", 0.01)]["delays"] == [10, 100, 1000]
    assert typed[("inv", 0.01)]["memory"] == [inv["M[10]"], inv["M[100]"], None]
    assert typed[("lin", 0.01)]["rank"] == 3

    # stored records are used, not recomputed: a second call reads the same run ids
    assert memory_table(P).records == table.records


def test_reference_comparison_at_small_size(tiny):
    P = tiny
    for cfg in paper2.reference_grid(P):
        experiments_runs.run(cfg)
    table = reference_comparison(P)
    assert len(table.rows) == len(configs.REFERENCE_VALUES) and len(table.records) == len(table.rows)
    row = table.rows[0]
    assert row[:2] == ["S4D-Inv", 0.001] and "N=4, T=200" in table.title
    assert "(0.047)" in row[2]  # ours (reference)
    assert row[4] is None  # delay 500 beyond T-1
    assert isinstance(row[-1], float)
    d = table.data[0]
    assert d["status"] == "ok" and d["max_abs_diff"] == row[-1] and d["ours"][2] is None
    assert d["reference"] == list(configs.REFERENCE_VALUES[("inv", 0.001)])


def test_capacity_tables_from_records(tiny):
    """The delays by which the capacity is used, from the stored curves, against the
    cumulative sums themselves."""
    from sst_core.reports.memory import capacity_delay, capacity_delays

    curves = [experiments_runs.run(c) for c in paper2.memory_grid(tiny)]
    inits = list(configs.INITS)
    delays = capacity_delays(curves, inits, list(configs.REPORT_DTS))
    assert [row[0] for row in delays.rows] == [INIT_NAMES[k] for k in inits]
    assert len(delays.data) == len(inits) * len(configs.REPORT_DTS)
    for d in delays.data:
        (rec,) = [r for r in curves if r["config"]["init"] == d["init"]
                  and r["config"]["dt"] == d["dt"]]
        m = rec["metrics"]
        used = dict(zip(m["delay"], m["cumulative"]))
        earlier = [t for t in m["delay"] if t < d["half"]]
        assert used[d["half"]] >= 0.5 * m["rank"]
        assert all(used[t] < 0.5 * m["rank"] for t in earlier)
        assert d["half"] <= d["ninety"] and used[d["ninety"]] >= 0.9 * m["rank"]

    with pytest.raises(ValueError, match="share=1.5"):
        capacity_delay(curves[0]["metrics"], 1.5)
    with pytest.raises(ValueError, match="never reaches"):
        capacity_delay({"delay": [0, 1], "cumulative": [0.1, 0.2], "rank": 4}, 0.5)


def test_chapter_numbers_and_tables_from_records(tiny):
    """The numbers and the two small tables of the memory chapter, against the records and
    direct evaluations they come from."""
    from sst_core.reports.memory import (TWIN_CHECKS, chapter_numbers, simulation_check,
                                         twin_checks, worked_example_table)

    P = tiny
    curves = [experiments_runs.run(c) for c in paper2.memory_grid(P)]
    for cfg in paper2.reference_grid(P):
        experiments_runs.run(cfg)
    gd = [experiments_runs.run(c) for c in paper2.readout_gd_grid(P)]
    sim = experiments_runs.run(paper2.simulation_grid(P)[0])
    legs = mf.legs_comparison(P.mem_N, P.mem_T, dt=0.01, taus=(10, 100))
    n = chapter_numbers(P, curves, gd, sim, legs)

    assert (n["N"], n["T"], n["rank_lin"], n["rank_real"]) == (4, 200, 3, 2)
    # the float64 SVD route's rank beside the exact one, on S4D-Lin at dt = 0.001
    mu_lin = mf.spectrum("lin", P.mem_N, 0.001)
    assert n["svd_rank_exact"] == mf.memory_function_info(mu_lin, P.mem_T)["rank"]
    assert n["svd_rank"] == mf.memory_function_svd(mu_lin, P.mem_T)[1]
    assert n["cap_err"] == max(abs(r["metrics"]["capacity"] - r["metrics"]["rank"]) for r in curves)
    assert n["cap_err"] < 1e-9
    alias = mf.spectrum("lin", configs.REFERENCE_N, 0.1)
    assert n["rank_lin_alias"] == mf.vandermonde_rank(alias, 200) < configs.REFERENCE_N - 1
    assert 0 < n["alias_gap"] <= n["merge_tol"] == mf.DEFAULT_TOL  # merged, not equal
    # step at dt = 0.1 (N = 4): mu_0 is real, so it counts once: rank N - 1
    assert (n["step_real_count"], n["step_real_n"], n["rank_step_alias"]) == (1, "0", 3)
    # M[10] of S4D-Inv at dt = 0.001 in this page's window and in the reference's
    at = {(r["config"]["init"], r["config"]["dt"]): r["metrics"] for r in curves}
    assert n["inv_m10_0001"] == dict(zip(at[("inv", 0.001)]["delay"],
                                         at[("inv", 0.001)]["memory"]))[10]
    ref = next(d for d in reference_comparison(P).data if (d["init"], d["dt"]) == ("inv", 0.001))
    assert n["ref_inv_m10_0001"] == ref["ours"][ref["delays"].index(10)]
    assert n["attn_m"] == pytest.approx(1 / 200) and n["attn_cap"] == pytest.approx(1)
    assert n["sim_same"] == simulation_check(sim)["sim_same"]
    assert n["legs_m10"] == legs["M_legs"][0]
    by = {r["config"]["init"]: r["metrics"] for r in gd}
    assert n["gd_inv_M500"] == by["inv"]["M_teacher"]
    from sst_core.reports.memory import capacity_delays
    half = {d["init"]: d["half"] for d in capacity_delays(curves, list(configs.INITS), [0.01]).data}
    order = [{v: k for k, v in INIT_NAMES.items()}[x] for x in n["order_001"].split(" > ")]
    assert sorted(order) == sorted(configs.INITS)
    assert [half[k] for k in order] == sorted(half.values(), reverse=True)

    with pytest.raises(KeyError):  # the chapter adds the SymPy twin's difference itself
        twin_checks(n)
    from sst_core.theory import memory_sym as ms
    d = ms.derive_memory_function()
    sym = [ms.evaluate(d["M"][t], {ms.mu1: 0.9, ms.mu2: 0.5}) for t in range(3)]
    n["mf_sym_diff"] = float(max(abs(sym - mf.memory_function([0.9, 0.5], 3))))
    assert n["mf_sym_diff"] < 1e-12
    checks = twin_checks(n)
    assert [d["check"] for d in checks.data] == list(TWIN_CHECKS)
    assert all(d["value"] == n[d["check"]] for d in checks.data)
    assert "| computed | against | largest difference |" in checks.grid().text

    table = worked_example_table(gd)
    assert table.columns == ["quantity", "S4D-Inv", "random (ours)"]
    inv = table.data[0]
    assert inv["init"] == "inv" and inv["M[500]"] == by["inv"]["M_teacher"]
    explained = 1 - by["inv"]["pop_loss"][-1] / by["inv"]["pop_loss"][0]
    assert inv["share explained, expected loss"] == explained
    assert sorted(table.records) == sorted(r["run_id"] for r in gd)


def test_ablation_orderings_on_constructed_rows():
    """Per spectrum, frozen against learned in SE, ours and the paper's, and whether the
    orderings agree: each ordering fires exactly when its difference is beyond 2 SE."""
    from sst_core.reports.memory import (ablation_ordering_items, ablation_orderings,
                                         same_cell)

    def rows(task, init, learned, frozen):
        return [{"task": task, "init": init, "frozen": False, "accuracies": learned},
                {"task": task, "init": init, "frozen": True, "accuracies": frozen}]

    data = (rows("digits", "random", [0.80, 0.82, 0.81], [0.60, 0.62, 0.61])  # learned up
            + rows("digits", "real", [0.80, 0.82, 0.81], [0.81, 0.80, 0.82])  # tie (0 SE)
            + rows("digits", "inv", [0.80, 0.81, 0.82], [0.90, 0.91, 0.92])  # frozen up
            + rows("digits", "step", [0.80], [0.90])  # one seed: no ordering
            + rows("listops", "inv", [0.4, 0.5], [0.6, 0.7]))  # no counterpart: left out
    published = {("Image", "random", False): (0.82, 0.81), ("Image", "random", True): (0.70, 0.69),
                 ("Image", "real", False): (0.78, 0.76), ("Image", "real", True): (0.68, 0.63),
                 ("Image", "inv", False): (0.86, 0.85), ("Image", "inv", True): (0.88, 0.87),
                 ("Image", "step", False): (0.78, 0.77), ("Image", "step", True): (0.74, 0.73)}
    t = ablation_orderings(data, {"digits": "Image", "listops": None}, published)
    by = {d["init"]: d for d in t.data}
    assert {d["task"] for d in t.data} == {"digits"}
    assert (by["random"]["ours"], by["random"]["paper"], by["random"]["same"]) == \
        ("learned higher", "learned higher", True)
    assert (by["real"]["ours"], by["real"]["paper"], by["real"]["same"]) == \
        ("tie", "learned higher", False)
    assert by["real"]["ours_diff"] == pytest.approx(0.0, abs=1e-12)
    assert (by["inv"]["ours"], by["inv"]["paper"], by["inv"]["same"]) == \
        ("frozen higher", "frozen higher", True)
    assert by["inv"]["ours_z"] > 2 and by["random"]["ours_z"] < -2
    assert by["step"]["ours"] is None and by["step"]["same"] is None
    # the paper's cell: midrange 0.875 vs 0.855, sd 0.01 / d_2(6) on each side
    from sst_core.reports.lra import t_scale as lra_t_scale

    se = (2 * (0.01 / 2.534) ** 2 / 6) ** 0.5
    # (the claim rule's z: Welch's t on the normal scale, 10 degrees of freedom)
    assert by["inv"]["paper_z"] == pytest.approx(lra_t_scale(0.02 / se, 10.0))
    assert [r[0] for r in t.rows] == [INIT_NAMES[k] for k in ("random", "real", "inv", "step")]
    assert t.rows[3][1:] == ["—", f"learned higher ({lra_t_scale(-0.04 / se, 10.0):+.1f})",
                             "—"]
    # the "same ordering" column: a tie is no reversal
    assert [r[3] for r in t.rows] == ["yes", "tie", "yes", "—"]
    assert same_cell("frozen higher", "learned higher") == "no"
    assert same_cell("learned higher", "tie") == same_cell("tie", "frozen higher") == "tie"
    assert same_cell("tie", "tie") == "yes" and same_cell(None, "tie") == "—"
    items = ablation_ordering_items(t)
    assert (items["lra_abl_compared_digits"], items["lra_abl_same_digits"]) == (3, 2)
    assert items["lra_abl_same_names_digits"] == "random (ours), S4D-Inv"
    assert items["lra_abl_differ_names_digits"] == "linear (S4D-Real)"
    assert (items["lra_abl_differ_digits"], items["lra_abl_differ_ties_digits"]) == (1, 1)


def test_gradient_sample_error_shrinks_like_one_over_root_n():
    """The sample gradient's distance from the white-noise formula, at theta = 0, falls by
    about sqrt(100) = 10 when the sample is 100 times longer; bad sizes are refused."""
    from types import SimpleNamespace

    from sst_core.reports.memory import gradient_sample_error

    cfg = SimpleNamespace(init="inv", N=4, dt=0.05, T=32, teacher_delay=5, seed=0)
    small, large = gradient_sample_error(cfg, [1_000, 100_000], repeats=20)
    assert (small["n"], large["n"], large["repeats"]) == (1_000, 100_000, 20)
    assert 5 < small["rel_error"] / large["rel_error"] < 20
    assert large["rel_error"] < 0.05
    with pytest.raises(ValueError, match="sizes"):
        gradient_sample_error(cfg, [0])
