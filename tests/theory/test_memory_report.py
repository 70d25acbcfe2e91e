"""The `memory` report: built from stored run records only."""
import json

import pytest

from sst_core.book import params
from sst_core.experiments import paper2
from sst_core.experiments import runs as experiments_runs
from sst_core.reports.memory import memory_table, reference_comparison
from sst_core.spec import configs
from sst_core.theory import memory as mf


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    return params.settings("p2_memory", profile="smoke", mem_N=4, mem_T=200, seed=1)


def test_memory_table_from_records(tiny):
    P = tiny
    missing = memory_table(P)
    assert len(missing.rows) == len(configs.INITS) * len(configs.REPORT_DTS)
    assert all(row[4] == "missing" for row in missing.rows) and not missing.records
    assert all(d["status"] == "missing" and d["memory"] is None for d in missing.data)

    for cfg in paper2.memory_grid(P):
        if cfg.dt in configs.REPORT_DTS:
            rec = experiments_runs.run(cfg)
            assert rec["status"] == "ok"
    table = memory_table(P)
    assert len(table.records) == len(table.rows) == 15
    cols = table.columns
    assert cols[:4] == ["init", "N", "dt", "T"] and cols[4:7] == ["M[10]", "M[100]", "M[1000]"]
    by = {(r[0], r[2]): dict(zip(cols, r)) for r in table.rows}
    inv = by[("inv", 0.01)]
    assert inv["N"] == 4 and inv["T"] == 200
    assert inv["M[1000]"] is None  # beyond T-1
    mu = mf.spectrum("inv", 4, 0.01)
    assert inv["M[10]"] == pytest.approx(mf.memory_function(mu, 200, 10), abs=1e-12)
    assert inv["capacity"] == pytest.approx(4, abs=1e-9) and inv["rank"] == 4
    assert by[("lin", 0.01)]["rank"] == 3 and by[("real", 0.01)]["rank"] == 2
    # the random spectrum is uniform in the disk at each dt: the same at every dt
    assert by[("random", 0.001)]["M[10]"] == pytest.approx(by[("random", 0.1)]["M[10]"])

    data = json.loads(table.to_json())
    assert data["rows"][0][6] is None  # null in JSON
    md = table.to_markdown()
    assert "n/a" in md and "None" not in md
    assert "| inv | 4 | 0.001 | 200 |" in md
    assert "smoke" in table.note and "mem_N=4" in table.note and "mem_T=200" in table.note
    assert sum(line.startswith("|") for line in md.splitlines()) == 17  # header, rule, 15 rows

    typed = {(d["init"], d["dt"]): d for d in table.data}  # the same numbers, typed
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
    assert row[:4] == ["inv", 0.001, 4, 200]
    assert "(0.047)" in row[4]  # ours (reference)
    assert row[6] is None  # delay 500 beyond T-1
    assert isinstance(row[-1], float)
    d = table.data[0]
    assert d["status"] == "ok" and d["max_abs_diff"] == row[-1] and d["ours"][2] is None
    assert d["reference"] == list(configs.REFERENCE_VALUES[("inv", 0.001)])


def test_capacity_tables_from_records(tiny):
    """The sum rule's table and the delays by which the capacity is used, from the stored
    curves: capacity = rank, and the delays against the cumulative sums themselves."""
    from sst_core.reports.memory import capacity_delay, capacity_delays, capacity_table

    curves = [experiments_runs.run(c) for c in paper2.memory_grid(tiny)]
    inits = list(configs.INITS)
    table = capacity_table(curves, inits, 0.01)
    assert [d["init"] for d in table.data] == inits
    by = {d["init"]: d for d in table.data}
    assert by["inv"]["rank"] == 4 and by["lin"]["rank"] == 3 and by["real"]["rank"] == 2
    assert all(d["capacity"] == pytest.approx(d["rank"], abs=1e-9) for d in table.data)

    delays = capacity_delays(curves, inits, list(configs.REPORT_DTS))
    assert len(delays.rows) == len(inits)
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
