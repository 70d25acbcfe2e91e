"""`sst bench`: structure of the result, never a time (times depend on the machine)."""
import contextlib
import io
import json
import math
import os
import subprocess
import sys

import pytest
import torch

from sst_core import cli
from sst_core.bench import harness as bench
from sst_core.bench import records as bench_records

SMALL = ["bench", "--size", "small", "--repeat", "1", "--device", "cpu", "--threads", "1"]


def _main(argv):
    """``cli.main(argv)`` with stdout captured: (exit code, stdout)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = cli.main(argv)
    return rc, out.getvalue()


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    """Every registered benchmark once, at small sizes, in JSON (also written by --out)."""
    path = tmp_path_factory.mktemp("bench") / "sub" / "bench.json"
    rc, out = _main(SMALL + ["--format", "json", "--out", str(path)])
    assert rc == 0
    printed = json.loads(out)
    assert json.loads(path.read_text()) == printed
    return printed


def _positive(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def test_every_registered_benchmark_appears_in_order(result):
    names = [e["name"] for e in result["entries"]]
    assert names == list(bench.names())
    expected = {"tanh_rnn_train_d64", "tanh_rnn_train_d128", "tanh_rnn_eval_L1000_d64",
                "tanh_rnn_eval_L1000_d128", "state_gated_rnn_train_d64",
                "state_gated_rnn_train_d128", "state_gated_rnn_eval_L1000_d64",
                "state_gated_rnn_eval_L1000_d128", "throughput_rnn_phi_tanh_train_L60",
                "throughput_rnn_phi_tanh_eval_L1000"}
    from sst_core.experiments.paper1 import TABLE2_MODELS
    from sst_core.models.registry import REGISTRY

    expected |= {f"throughput_{m}_{k}" for m in TABLE2_MODELS
                 for k in ("train_L60", "eval_L1000", "train_d64")}
    expected |= {f"s4d_kernel_fwd_bwd_L{L}{b}" for L in (1024, 4096, 16384) for b in ("", "_b1")}
    expected |= {f"diag_scan_{k}_L{L}" for k in ("real", "complex") for L in (1000, 4096)}
    expected |= {f"stacked_train_K16_{m}" for m in TABLE2_MODELS}
    expected |= {f"stack_or_not_{m}" for m in TABLE2_MODELS}
    expected |= {f"stack_or_not_{m}_d128" for m in TABLE2_MODELS  # the recompute's width
                 if REGISTRY[m].family != "rnn"}
    expected |= {"scan_paths_selective_L1000", "scan_paths_unitary_L1000"}
    expected |= {"semi_affine_train_s3", "semi_affine_eval_L1000"}
    expected |= {f"s4d_classifier_train_{c}" for c in
                 ("listops_L1024_H64", "pathfinder_L1024_H128", "digits_L256_H128",
                  "standard_listops_L512_H32", "standard_digits_L576_H32",
                  "standard_pathfinder_L1024_H64")}
    expected |= {f"selective_scan_vs_{a}_{s}" for a in ("mamba_ref", "pscan")
                 for s in ("quick", "cpu")}
    expected |= {f"selective_scan_{m}_{s}" for m in ("mamba", "negative_mamba")
                 for s in ("quick", "cpu")}
    expected |= {f"selective_scan_dispatch_{s}_t{t}" for s in ("quick", "cpu") for t in (1, 2)}
    assert set(names) == expected


def test_entries_have_finite_positive_fields_and_ratio_is_ours_over_anchor(result):
    for e in result["entries"]:
        for key in ("name", "kind", "model", "anchor", "ours_s", "anchor_s", "ratio", "target",
                    "status", "sizes", "device", "repeat", "warmup", "tokens_per_s"):
            assert key in e, (e["name"], key)
        assert e["kind"] in ("train", "eval") and e["device"] == "cpu" and e["repeat"] == 1
        assert _positive(e["ours_s"]) and _positive(e["tokens_per_s"]), e["name"]
        assert len(e["ours_samples_s"]) == 1 and all(map(_positive, e["ours_samples_s"]))
        assert e["sizes"] and all(_positive(v) for v in e["sizes"].values()
                                  if not isinstance(v, str)), e["name"]
        if e["name"].startswith("diag_scan_"):  # the scan keeps its length in its name too
            assert e["name"].endswith(f"_L{e['sizes']['length']}") and e["target"] == 0.5
            assert _positive(e["achieved_bandwidth"]) and _positive(e["copy_bandwidth"])
            assert e["bandwidth_share"] == pytest.approx(e["achieved_bandwidth"] / e["copy_bandwidth"])
        elif e["name"].startswith("stacked_train_"):  # K models against K sequential steps
            assert e["sizes"]["models"] == 2 and e["target"] == 0.5  # small: K = 2
            assert e["tokens_per_s"] == pytest.approx(
                2 * e["sizes"]["batch"] * e["sizes"]["length"] / e["ours_s"])
            # the ceiling: one model on all K b sequences, timed in the same rounds
            assert len(e["one_model_samples_s"]) == 1 and _positive(e["one_model_s"])
            assert e["ceiling_ratio"] == pytest.approx(e["one_model_s"] / e["anchor_s"])
        elif e["name"].startswith("stack_or_not_"):  # the sweep's choice: one thread
            assert e["threads"] == 1 and e["profile"] == "standard" and e["target"] is None
            assert e["sizes"]["models"] == 2 and e["sizes"]["length"] == 8  # small
            assert e["model"].startswith(f"{e['sweep_model']} x2, stacked")
            assert e["name"] == f"stack_or_not_{e['sweep_model']}" + (
                "" if e["sizes"]["d_model"] == 32 else f"_d{e['sizes']['d_model']}")
        elif e["name"].startswith("scan_paths_"):  # the device's own path / the other
            assert e["sizes"]["length"] == 1000 and e["target"] is None
            assert "(step-by-step path)" in e["model"] and "(parallel path)" in e["anchor"]
        elif e["name"].startswith("s4d_kernel_"):  # the S4D kernel keeps the length in its name
            assert f"_L{e['sizes']['length']}" in e["name"]
            assert e["memory_ratio"] == pytest.approx(e["ours_peak_bytes"] / e["anchor_peak_bytes"])
            assert e["memory_status"] == ("meets" if e["memory_ratio"] <= 0.25 else "misses")
            assert _positive(e["ours_peak_bytes"]) and _positive(e["anchor_peak_bytes"])
        elif e["name"].startswith("s4d_classifier_train_"):  # L and H in the name, batch 2
            sz = e["sizes"]
            assert e["name"].endswith(f"_L{sz['length']}_H{sz['H']}") and sz["batch"] == 2
            assert e["target"] == 0.5 and e["kind"] == "train" and sz["N"] == 64
        else:
            assert e["sizes"]["length"] == (60 if e["kind"] == "train" else 1000)
        if e["anchor"] is None:
            assert e["anchor_s"] is None and e["ratio"] is None and e["status"] == ""
            assert e["name"].startswith("throughput_")
            continue
        assert _positive(e["anchor_s"]) and _positive(e["ratio"]), e["name"]
        assert e["ratio"] == pytest.approx(e["ours_s"] / e["anchor_s"], rel=1e-12)
        assert _positive(e["anchor_tokens_per_s"])
        if e["target"] is None:
            assert e["status"] == ""
        else:
            assert _positive(e["target"])
            assert e["status"] == ("meets" if e["ratio"] <= e["target"] else "misses")


def test_anchors_and_targets(result):
    by_name = {e["name"]: e for e in result["entries"]}
    for d in (64, 128):
        train, ev = by_name[f"tanh_rnn_train_d{d}"], by_name[f"tanh_rnn_eval_L1000_d{d}"]
        assert train["anchor"] == ev["anchor"] == "torch.nn.RNN(tanh)"
        assert train["target"] == ev["target"] == 1.2 and train["sizes"]["d"] == d
        assert by_name[f"state_gated_rnn_train_d{d}"]["anchor"] == "torch.nn.GRU"
        assert by_name[f"state_gated_rnn_eval_L1000_d{d}"]["anchor"] == "torch.nn.GRU"
    # the per-model rows use the quick profile's sizes
    from sst_core.spec.profiles import get_profile

    P = get_profile("quick")
    assert by_name["throughput_mamba_train_L60"]["sizes"]["d_model"] == P.track_d_model
    assert by_name["throughput_mamba_train_L60"]["sizes"]["d_state"] == P.track_d_states[0]
    assert by_name["throughput_tanh_rnn_eval_L1000"]["sizes"]["d"] == P.track_rnn_widths[0]
    assert by_name["throughput_rnn_phi_tanh_train_L60"]["sizes"]["phi"] == "tanh"


def test_hardware_is_reported(result):
    hw = result["hardware"]
    assert hw["cpu_model"] and hw["device"] == "cpu" and hw["device_name"]
    assert hw["torch_version"] == torch.__version__
    assert hw["torch_threads"] == 1  # --threads 1


def test_threads_are_restored_after_a_run():
    before = torch.get_num_threads()
    bench.run(["tanh_rnn_train_d64"], device="cpu", size="small", repeat=1, threads=1)
    assert torch.get_num_threads() == before


def test_only_filters_and_markdown_lists_the_rows():
    only = ["throughput_linear_rnn_train_L60", "tanh_rnn_eval_L1000_d64"]
    rc, out = _main(SMALL + ["--only", *only])
    assert rc == 0
    assert "torch" in out and "| name | sizes | ours ms | anchor ms | ratio | target | status |" in out
    main = out.split("\n\n")[2]  # the main table (a roofline table follows it)
    rows = [line for line in main.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [r.split("|")[1].strip() for r in rows] == ["tanh_rnn_eval_L1000_d64",
                                                       "throughput_linear_rnn_train_L60"]
    rc, out = _main(SMALL + ["--format", "json", "--only", "tanh_rnn_train_d128"])
    assert rc == 0
    entries = json.loads(out)["entries"]
    assert [e["name"] for e in entries] == ["tanh_rnn_train_d128"]
    assert entries[0]["target"] == 1.2 and entries[0]["status"] in ("meets", "misses")


def test_unknown_only_name_lists_the_allowed_names(capsys):
    assert cli.main(SMALL + ["--only", "tanh_rnn_train_d64", "no_such_bench"]) == 2
    err = capsys.readouterr().err
    assert "'no_such_bench'" in err and "allowed:" in err
    assert all(name in err for name in bench.names())


def test_bad_device_is_rejected(capsys):
    with pytest.raises(SystemExit):
        cli.main(["bench", "--device", "tpu"])
    assert "'tpu'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="allowed: auto, cpu, cuda"):
        bench.resolve_device("tpu")
    if not torch.cuda.is_available():
        assert cli.main(["bench", "--device", "cuda", "--size", "small", "--repeat", "1"]) == 2
        assert "CUDA is not available" in capsys.readouterr().err


def test_bad_repeat_and_threads_are_rejected(capsys):
    for argv in (["--repeat", "0"], ["--threads", "-1"], ["--size", "huge"]):
        with pytest.raises(SystemExit):
            cli.main(["bench", *argv])
        assert "bench" in capsys.readouterr().err


def test_list_and_help(capsys):
    assert cli.main(["bench", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:len(bench.names())] == list(bench.names())
    opt_in = lines[len(bench.names()):]
    assert [line.split()[0] for line in opt_in] == list(bench.opt_in_names())
    assert all("not in the default run" in line for line in opt_in) and opt_in
    done = subprocess.run([sys.executable, "-m", "sst_core", "--help"], capture_output=True,
                          text=True)
    assert done.returncode == 0 and "bench" in done.stdout


def test_calls_interleave_after_warmup():
    calls = []
    samples = bench.time_side_by_side([lambda: calls.append("ours"), lambda: calls.append("ref")],
                                      repeat=3, warmup=2, device=torch.device("cpu"))
    assert calls == ["ours", "ref"] * 5
    assert [len(s) for s in samples] == [3, 3]
    assert all(t >= 0 for s in samples for t in s)


def test_a_new_benchmark_plugs_in_as_one_registered_function(monkeypatch):
    monkeypatch.setattr(bench, "BENCHMARKS", dict(bench.BENCHMARKS))

    @bench.register("dummy_scan")
    def _dummy(ctx):
        t = bench.time_side_by_side([lambda: None, lambda: None], ctx.repeat, 0, ctx.device)
        return [bench.make_entry("dummy_scan", "eval", "dummy", ctx, {"batch": 1, "length": 4},
                                 *t, anchor_name="reference", target=2.0)]

    with pytest.raises(ValueError, match="already registered"):
        bench.register("dummy_scan")(_dummy)
    out = bench.run(["dummy_scan"], device="cpu", size="small", repeat=2)
    (e,) = out["entries"]
    assert e["name"] == "dummy_scan" and e["repeat"] == 2 and len(e["anchor_samples_s"]) == 2
    assert "dummy_scan" in bench.to_markdown(out)


def test_record_is_stored_with_provenance_and_read_back(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    argv = SMALL + ["--only", "tanh_rnn_train_d64", "--record"]
    rc, out = _main(argv)
    assert rc == 0 and "tanh_rnn_train_d64" in out
    (record,) = bench_records.load_records()
    assert record["experiment"] == "bench" and record["command"] == "sst " + " ".join(argv)
    for key in ("git_commit", "versions", "device", "wall_time_s", "created_utc", "hardware",
                "settings", "config"):
        assert key in record, key
    assert [e["name"] for e in record["entries"]] == ["tanh_rnn_train_d64"]
    assert record["path"].startswith(str(tmp_path / "bench"))
    assert bench.to_markdown(record).count("tanh_rnn_train_d64") == 2  # its row, its roofline
    from sst_core.reports import bench as report

    # a run with --only is no full benchmark: the chapter shows it only when asked
    assert report.latest([record], "cpu") is None
    assert report.latest([record], "cpu", full=False) is record
    assert report.latest([record], "cuda", full=False) is None
    full = {**record, "command": "sst bench --record"}
    assert report.latest([full, record], "cpu") is full
    line = report.provenance(record)
    assert record["git_commit"][:10] in line and record["command"] in line
    dirty = report.provenance({**record, "git_commit": "0123456789abcdef+dirty"})
    assert "commit 0123456789 with uncommitted changes," in dirty
    clean = report.provenance({**record, "git_commit": "0123456789abcdef"})
    assert "commit 0123456789," in clean and "uncommitted" not in clean
    (table,) = report.bench_tables(record)  # only the dense-RNN section has entries
    assert table.title.startswith("Dense recurrences")
    entry = record["entries"][0]
    # the row named for readers (its sizes in the header: one row shares them all), the code
    # name that reruns it on hover
    assert table.columns[0] == f"benchmark ({report.sizes_text(entry['sizes'])})"
    assert "d\u00a0=\u00a064" in table.columns[0]
    assert table.rows[0][0] == ('<span title="sst bench --only tanh_rnn_train_d64">'
                                'tanh RNN, training step</span>')
    assert report.targets(record) == [{"name": "tanh_rnn_train_d64",
                                       "label": "tanh RNN, training step",
                                       "ratio": entry["ratio"], "target": 1.2,
                                       "status": entry["status"]}]
    (tmp_path / "bench" / "junk.json").write_text('{"experiment": "other"}')
    with pytest.raises(ValueError, match="junk.json is not a bench record"):
        bench_records.load_records()


def test_training_steps_carry_their_roofline(result):
    roof = result["hardware"]["roofline"]
    assert _positive(roof["matmul_flops_per_s"]) and _positive(roof["copy_bytes_per_s"])
    assert roof["ridge_flops_per_byte"] == pytest.approx(
        roof["matmul_flops_per_s"] / roof["copy_bytes_per_s"])
    assert roof["threads"] == 1 and roof["target"] == 5
    from sst_core.experiments.paper1 import TABLE2_MODELS

    goals = {f"throughput_{m}_train_d64" for m in TABLE2_MODELS}
    seen = set()
    for e in result["entries"]:
        if e["kind"] != "train" or e["name"].startswith(("diag_scan_", "s4d_kernel_",
                                                           "stack_or_not_", "scan_paths_")):
            assert "flops" not in e, e["name"]
            continue
        seen.add(e["name"])
        assert e["flops"] == e["flops_matmul"] + e["flops_elementwise"]
        assert _positive(e["flops"]) and _positive(e["bytes"]) and _positive(e["gflops_per_s"])
        assert e["gflops_per_s"] == pytest.approx(e["flops"] / e["ours_s"] / 1e9)
        # the flop limit: the products at their shapes, the rest of the flops at the peak
        assert e["limit_method"] == "shapes" and e["matmul_shapes_s"] >= 0
        assert e["flops_mm"] == sum(c["flops"] for c in e["matmul_calls"])
        assert e["compute_s"] == pytest.approx(
            e["matmul_shapes_s"] + max(0, e["flops"] - e["flops_mm"]) / roof["matmul_flops_per_s"])
        assert e["memory_s"] == pytest.approx(e["bytes"] / roof["copy_bytes_per_s"])
        assert 0 <= e["bytes_kernels"] <= e["bytes"]
        assert e["roofline_s"] == max(e["compute_s"], e["memory_s"])
        assert e["bound"] == ("compute" if e["compute_s"] >= e["memory_s"] else "memory")
        assert e["roofline_ratio"] == pytest.approx(e["ours_s"] / e["roofline_s"])
        if e["name"] in goals:
            assert e["roofline_target"] == 5
            assert e["roofline_status"] == ("meets" if e["roofline_ratio"] <= 5 else "misses")
            assert e["sizes"].get("d_model", e["sizes"].get("d")) == 64
            assert e["profile"] and all(_positive(p["self_s"]) and 0 < p["share"] <= 1
                                        for p in e["profile"])
        else:
            assert "roofline_target" not in e and "roofline_status" not in e
    assert goals <= seen and {"tanh_rnn_train_d64", "throughput_mamba_train_L60",
                              "stacked_train_K16_mamba", "semi_affine_train_s3"} <= seen
    md = bench.to_markdown(result)
    assert "GFLOP/s (n = 256)" in md and "| x limit | goal |" in md
    assert md.count("<= 5: ") == len(goals)
    from sst_core.reports import bench as report

    (table,) = [t for t in report.bench_tables(result) if t.title.startswith("Throughput")]
    assert table.columns[1:] == ["ms", "tokens/s"] and all(len(r) == len(table.columns)
                                                           for r in table.rows)
    # the limits in tables of their own, so that each fits a page: the goal rows whole
    # (not in the throughput table), and every other training step that carries limits
    goal, other = report.limits_table(result, True), report.limits_table(result, False)
    assert {e["name"] for e in goal.data} == goals
    assert not goals & {e["name"] for t in report.bench_tables(result) for e in t.data}
    assert {e["name"] for e in other.data} == seen - goals
    for t in (goal, other):
        assert t.columns[1:] == ["ms", "GFLOP/s", "flop limit ms", "byte limit ms", "bound",
                                 "x limit"] and all(len(r) == len(t.columns) for r in t.rows)
        assert "rates measured at their own shapes" in t.note
    assert all("(<= 5: " in row[-1] for row in goal.rows)
    rows = report.limit_rows(result)
    assert {r["name"] for r in rows} == goals and all(r["profiled"] for r in rows)
    beyond = [r for r in rows if r["ratio"] > 5]
    profile = report.profile_table(result)
    assert (profile is None) == (not beyond)
    if profile is not None:
        assert {d["name"] for d in profile.data} == {r["name"] for r in beyond}
    # a record from before the present count keeps its fields, and says so
    old = [{k: v for k, v in e.items() if k not in ("limit_method", "matmul_shapes_s")}
           for e in result["entries"] if "roofline_ratio" in e]
    assert "predates the present count" in report.limits_note(old)


def test_rows_are_named_for_readers_from_their_fields(result):
    """Every row's name says what it times in the papers' names and at which sizes, read
    from the entry's fields (never its code name); within a table no two rows share one."""
    from sst_core.reports import bench as report
    from sst_core.spec.names import MODEL_NAMES, OP_NAMES

    entries = {e["name"]: e for e in result["entries"]}
    readers = tuple(MODEL_NAMES.values()) + tuple(OP_NAMES.values()) + ("S4D classifier",)
    for e in result["entries"]:
        label = report.row_label(e)
        assert label.startswith(readers) and e["name"] not in label, (e["name"], label)
        assert report.sizes_text(e["sizes"]) in label
    expected = {  # name -> the row's subject (what it times, without its sizes)
        "tanh_rnn_eval_L1000_d64": "tanh RNN, evaluation",
        "state_gated_rnn_train_d128": "State-gated RNN, training step",
        "throughput_rnn_phi_tanh_train_L60": "RNN with φ = tanh, training step",
        "diag_scan_complex_L1000": "diagonal scan, complex",
        "diag_scan_real_L4096": "diagonal scan, real",
        "scan_paths_unitary_L1000": "unitary scan",
        "stacked_train_K16_mamba": "Mamba, stacked, training step",
        "stack_or_not_aussm": "AUSSM, stacked, training step",
        "semi_affine_eval_L1000": "semi-affine Negative Mamba, evaluation",
        "selective_scan_negative_mamba_quick": "selective scan, Negative Mamba",
        "selective_scan_dispatch_quick_t2": "selective scan, Mamba, on torch's threads",
        "selective_scan_vs_pscan_quick": "selective scan, against alxndrTL/mamba.py",
        "s4d_kernel_fwd_bwd_L4096_b1": "S4D kernel and FFT convolution",
        "s4d_classifier_train_listops_L1024_H64": "S4D classifier, ListOps, training step",
    }
    for name, subject in expected.items():
        assert report.subject(entries[name]) == subject, name
    assert "L\u00a0=\u00a01000" in report.row_label(entries["tanh_rnn_eval_L1000_d64"])
    assert "threads\u00a0=\u00a02" in report.row_label(entries["selective_scan_dispatch_quick_t2"])
    for table in report.bench_tables(result):
        assert len(set(map(str, (r[0] for r in table.rows)))) == len(table.rows), table.title
    goals = report.targets(result)
    assert len({g["label"] for g in goals}) == len(goals)  # the figure's axis: one per bar
    # a size a row shares with every other row of its table is said once, in the header
    header, cells = report.name_column([entries["diag_scan_real_L1000"],
                                        entries["diag_scan_complex_L1000"]])
    assert "L\u00a0=\u00a0" in header and all("L\u00a0=" not in c for c in cells)


def test_the_fast_paths_bytes_count_the_c_loops_arrays_once():
    """The byte limit counts what the fast path moves: with the C loops on, the scan's
    arrays (a, b, h0 read, h written; the backward's a, h, gradient read, g and dL/da
    written) once each, not the torch loop's per-step tensors."""
    from sst_core.bench import roofline
    from sst_core.ops import native
    from sst_core.ops.scan import linear_scan

    if native.library() is None:
        pytest.skip("no C loops here")
    a = torch.rand(2, 50, 8, requires_grad=True)
    b = torch.randn(2, 50, 8, requires_grad=True)
    w = roofline.count_work(lambda: torch.autograd.grad(linear_scan(a, b).sum(), (a, b)))
    n = 4 * 2 * 50 * 8  # bytes of one (2, 50, 8) float32 array
    assert w["kernel_calls"] == 2
    assert w["bytes_kernels"] == 3 * n + 5 * n  # forward a, b, out; backward a, h, grad, g, dL/da
    assert w["flops_elementwise"] >= 49 * 2 * 8  # the arithmetic, from the torch loops
    assert w["matmul_calls"] == [] and w["matmul_shapes_s"] == 0


def test_the_flop_limit_times_each_product_at_its_own_shape():
    from sst_core.bench import roofline

    p, q = torch.randn(6, 5, requires_grad=True), torch.randn(5, 3)
    w = roofline.count_work(lambda: torch.autograd.grad((p @ q).sum(), p))
    ops = sorted((c["op"], tuple(c["a"]), tuple(c["b"])) for c in w["matmul_calls"])
    assert ops == [("mm", (6, 3), (3, 5)), ("mm", (6, 5), (5, 3))]  # forward, dL/dp
    assert w["flops_mm"] == 2 * (2 * 6 * 5 * 3) and _positive(w["matmul_shapes_s"])
    key = ("mm", (6, 5), (5, 3), "torch.float32", "cpu")
    assert roofline.matmul_seconds(key) == roofline.matmul_seconds(key)  # measured once
    e = {**w, "ours_s": 1.0}
    roofline.annotate(e, {"matmul_flops_per_s": 1e9, "copy_bytes_per_s": 1e9})
    assert e["compute_s"] == pytest.approx(w["matmul_shapes_s"] + (w["flops"] - w["flops_mm"]) / 1e9)


def test_count_work_counts_matmuls_elementwise_ops_and_bytes():
    from sst_core.bench import roofline

    a, b = torch.randn(8, 16), torch.randn(16, 4)
    w = roofline.count_work(lambda: a @ b)
    assert w["flops_matmul"] == 2 * 8 * 16 * 4 and w["flops_elementwise"] == 0
    assert w["bytes"] == 4 * (8 * 16 + 16 * 4 + 8 * 4)
    x = torch.randn(100)
    w = roofline.count_work(lambda: torch.exp(x).sum())
    assert w["flops_matmul"] == 0 and w["flops_elementwise"] == 200  # exp, then sum
    assert w["bytes"] == 4 * (100 + 100 + 100 + 1)
    y = torch.randn(3, 1)
    w = roofline.count_work(lambda: y.expand(3, 1000) + 1)  # a broadcast input is read once
    assert w["bytes"] == 4 * (3 + 3000) and w["flops_elementwise"] == 3000
    # autograd: the backward's matmuls are counted too (two more of the same size)
    p = torch.randn(8, 16, requires_grad=True)
    q = torch.randn(16, 4, requires_grad=True)
    w = roofline.count_work(lambda: torch.autograd.grad((p @ q).sum(), (p, q)))
    assert w["flops_matmul"] == 3 * 2 * 8 * 16 * 4


def test_the_c_scan_is_counted_through_its_torch_loop():
    from sst_core.bench import roofline
    from sst_core.ops.scan import linear_scan

    a, b = torch.rand(2, 50, 8), torch.randn(2, 50, 8)
    w = roofline.count_work(lambda: linear_scan(a, b))
    assert w["flops_elementwise"] >= 49 * 2 * 8  # a multiply-add (one op) per step
    from sst_core.ops import native

    if native.library() is not None:  # through ctypes the C loops would be invisible
        with roofline._Traffic() as seen:
            linear_scan(a, b)
        assert seen.elementwise < 49 * 2 * 8


def test_annotate_bound_and_goal():
    from sst_core.bench import roofline

    roof = {"matmul_flops_per_s": 1e11, "copy_bytes_per_s": 1e10}
    e = {"flops": 1e9, "bytes": 1e9, "ours_s": 0.4, "roofline_target": 5.0}
    roofline.annotate(e, roof)  # compute 0.01 s, memory 0.1 s
    assert e["bound"] == "memory" and e["roofline_s"] == pytest.approx(0.1)
    assert e["roofline_ratio"] == pytest.approx(4) and e["roofline_status"] == "meets"
    assert e["gflops_per_s"] == pytest.approx(2.5) and e["intensity"] == 1
    e = {"flops": 1e12, "bytes": 1e9, "ours_s": 60.0, "roofline_target": 5.0}
    roofline.annotate(e, roof)
    assert e["bound"] == "compute" and e["roofline_status"] == "misses"


def test_sweep_runs_per_hour_is_opt_in_and_compares_the_two_layouts(tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    assert "sweep_runs_per_hour" in bench.opt_in_names()
    assert "sweep_runs_per_hour" not in bench.names() and bench.select() == list(bench.names())
    assert "sweep_runs_per_hour" in bench.names(opt_in=True)
    out = bench.run(["sweep_runs_per_hour"], device="cpu", size="small", repeat=1)
    (e,) = out["entries"]
    from sst_core.bench import cases_sweep
    from sst_core.sweep.runner import choose_layout

    assert e["sizes"]["runs"] == len(cases_sweep.SAMPLE_MODELS) == 4
    assert e["layout"] == list(choose_layout(4))
    assert _positive(e["runs_per_hour"])
    assert e["runs_per_hour"] == pytest.approx(3600 * 4 / e["ours_s"])
    if (os.cpu_count() or 1) > 1:
        assert e["anchor_layout"] != e["layout"] and _positive(e["anchor_runs_per_hour"])
        assert e["ratio"] == pytest.approx(e["ours_s"] / e["anchor_s"]) and e["target"] == 1
    assert "runs per hour" in bench.to_markdown(out)
    assert not any(tmp_path.iterdir())  # the sample is computed into a temporary folder


def test_sweep_before_after_alternates_the_two_settings_on_a_fixed_sample(tmp_path, monkeypatch):
    """The opt-in before / after sweep: a fixed sample of the standard Table 2 grid (one
    cell per model, 12 runs each), timed before (every model stacked, denormals not
    flushed) and after (the stacking choice of the bench rows, flushed), alternating."""
    from sst_core.bench import cases_sweep
    from sst_core.experiments.paper1 import TABLE2_MODELS

    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    full = cases_sweep.standard_sample()
    assert len(full) == 12 * len(TABLE2_MODELS) and {c.profile for c in full} == {"standard"}
    assert {c.model for c in full} == set(TABLE2_MODELS) and {c.group for c in full} == {"C2"}
    assert full == cases_sweep.standard_sample()  # fixed
    calls = []
    real = cases_sweep._timed_sweep

    def spy(cfgs, stack, unstacked, flush):
        calls.append((len(cfgs), stack, unstacked, flush))
        return real(cfgs, stack, unstacked, flush)

    monkeypatch.setattr(cases_sweep, "_timed_sweep", spy)
    assert "sweep_standard_before_after" in bench.opt_in_names()
    out = bench.run(["sweep_standard_before_after"], device="cpu", size="small", repeat=2)
    (e,) = out["entries"]
    assert len(calls) == 4  # before, after, before, after
    assert all(c[:2] == (4, 2) for c in calls) and calls[0][2] == frozenset()
    assert [c[3] for c in calls] == [False, True, False, True]
    assert "SST_FLUSH_DENORMALS" not in os.environ  # restored
    assert e["ratio"] == pytest.approx(e["ours_s"] / e["anchor_s"])
    assert e["runs_per_hour"] == pytest.approx(3600 * 4 / e["ours_s"])
    assert e["unstacked_models"] == [] and len(e["ours_samples_s"]) == 2
    assert e["sizes"]["d_model"] == full[0].d_model  # the sample's width, for the chapter
    assert "runs per hour" in bench.to_markdown(out)
    assert not [p for p in tmp_path.rglob("*.json")]  # computed in temporary folders


def test_the_stacked_table_shows_the_ceiling_of_stacking(result):
    from sst_core.reports import bench as report

    (table,) = [t for t in report.bench_tables(result) if t.title == "Many models at once"]
    stacked = [e for e in result["entries"] if e["name"].startswith("stacked_train_")]
    i = table.columns.index("ceiling")
    assert table.columns[i - 1] == "one model ms" and len(table.rows) == len(stacked)
    for row, e in zip(table.rows, stacked):
        assert f'--only {e["name"]}"' in row[0] and row[i] == f"{e['ceiling_ratio']:.2f}"
    assert "not on the machine" in table.note
    bound = report.stacking_bound(result)
    assert (bound["K"], bound["models"]) == (2, len(stacked))
    assert bound["ceiling_min"] == min(e["ceiling_ratio"] for e in stacked)
    assert bound["above_target"] == sum(e["ceiling_ratio"] > e["target"] for e in stacked)
    assert bound["one_model_gflops_max"] == pytest.approx(
        max(e["flops"] / e["one_model_s"] / 1e9 for e in stacked))
    assert bound["matmul_peak_gflops"] == pytest.approx(
        result["hardware"]["roofline"]["matmul_flops_per_s"] / 1e9)
    old = {**result, "entries": [{k: v for k, v in e.items() if not k.startswith(("one_model",
                                                                                  "ceiling"))}
                                 for e in result["entries"]]}
    assert report.stacking_bound(old) is None  # a record from before the ceiling
    from sst_core.experiments.paper1 import TABLE2_MODELS
    from sst_core.models.registry import REGISTRY
    from sst_core.sweep.stacking import newest_rows

    choice = newest_rows([("r.json", {**result, "device": "cpu"})], "cpu")
    assert list(choice) == [(m, 32) for m in TABLE2_MODELS] + [
        (m, 128) for m in TABLE2_MODELS if REGISTRY[m].family != "rnn"]  # the recompute's width
    assert all(c["record"] == "r.json" and c["ratio"] > 0 for c in choice.values())
    assert newest_rows([("r.json", {**old, "device": "cpu", "entries": []})], "cpu") == {}


def _record(cpu: str, when: str, times: dict[str, float], command: str = "sst bench --record"):
    return {"device": "cpu", "command": command, "created_utc": when,
            "hardware": {"cpu_model": cpu},
            "entries": [{"name": n, "model": "mamba", "kind": "train", "ours_s": t,
                         "sizes": {"batch": 2, "length": len(n)}} for n, t in times.items()]}


def test_across_machines_sets_the_newest_record_beside_another_cpus():
    from sst_core.reports import bench as report

    a_old = _record("A", "2026-12-01", {"x": 1.0})
    b = _record("B", "2026-12-02", {"x": 2.0, "y": 1.0, "z": 1.0})
    b_only = _record("B", "2026-12-03", {"x": 9.0}, command="sst bench --record --only x")
    a = _record("A", "2026-12-04", {"x": 1.0, "y": 3.0, "z": 1.2, "new": 1.0})
    records = [a_old, b, b_only, a]
    assert report.other_machine(records, a) is b  # newest full record of another CPU
    assert report.other_machine(records, b) is a
    assert report.other_machine([a_old, a], a) is None
    table = report.across_machines(a, b)
    # x: 0.5 and y: 3 are outside 1/1.5-1.5; z (1.2) and "new" (not in b) are not shown
    assert [d["name"] for d in table.data] == ["x", "y"]
    assert [d["ratio"] for d in table.data] == [0.5, 3.0]
    assert table.rows[1][1:] == ["3.00", "3,000.00", "1,000.00"]
    assert table.columns[0] == "benchmark (L\u00a0=\u00a01, b\u00a0=\u00a02)"  # shared sizes
    assert table.rows[0][0] == '<span title="sst bench --only x">Mamba, training step</span>'
    assert "over all 3 shared rows the median ratio is 1.20" in table.note
    assert table.title == "The same rows on two machines: A against B"
    disjoint = report.across_machines(_record("A", "2026-12-05", {"w": 1.0}), b)
    assert disjoint.rows == [] and "the records share no row" in disjoint.note


def test_the_selective_scan_dispatch_rows_time_team_pool_and_torch_path_on_1_and_2_threads():
    import torch

    before = torch.get_num_threads()
    out = bench.run(["selective_scan_dispatch_quick_t1", "selective_scan_dispatch_quick_t2"],
                    device="cpu", size="small", repeat=1)
    rows = {e["name"]: e for e in out["entries"]}
    assert set(rows) == {"selective_scan_dispatch_quick_t1", "selective_scan_dispatch_quick_t2"}
    for threads in (1, 2):
        e = rows[f"selective_scan_dispatch_quick_t{threads}"]
        assert e["sizes"]["threads"] == threads and e["ours_s"] > 0 and e["anchor_s"] > 0
        assert e["pool_ratio"] == pytest.approx(e["pool_s"] / e["anchor_s"])
    assert torch.get_num_threads() == before  # restored


def test_the_chapter_glues_every_section_as_a_grid_and_the_numbers_its_prose_cites(result):
    from sst_core.figures import bench as plots_bench
    from sst_core.reports import bench as report

    assert len(report.SECTION_KEYS) == len(report.SECTIONS)
    # every comparison with a target is in one of the chapter's tables
    prefixes = tuple(p for s in report.SECTIONS for p in s[1])
    assert all(e["name"].startswith(prefixes) for e in result["entries"]
               if e["target"] is not None)
    cpu = {**result, "device": "cpu", "command": "sst bench --record",
           "created_utc": "2026-12-02T00:00:00",
           "git_commit": "0123456789abcdef", "wall_time_s": 12.0}
    other = {**cpu, "created_utc": "2026-12-01T00:00:00",
             "hardware": {**cpu["hardware"], "cpu_model": "another CPU"},
             "entries": [{**e, "ours_s": 3 * e["ours_s"]} for e in cpu["entries"]]}
    items = report.chapter_items([other, cpu], [])
    tables = {t.title: t for t in report.bench_tables(cpu)}
    for key, (title, *_) in zip(report.SECTION_KEYS, report.SECTIONS):
        grid = items[f"bench_{key}"].text
        assert grid == tables[title].grid().text if title in tables else grid.count("\n") == 1
        assert title not in grid  # the rows under their header, no title, no note
    every = report.profile_table(cpu, top=3, every=True)
    assert items["bench_profile"].text == every.grid().text
    assert {d["name"] for d in every.data} == {r["name"] for r in report.limit_rows(cpu)}
    assert items["bench_machines"].text == report.across_machines(
        cpu, other, report.MACHINE_SPREAD).grid().text
    shared = len(cpu["entries"])
    assert (items["machine_shared"], items["machine_median"]) == (shared, f"{1 / 3:.2f}")
    assert (items["machine_here"], items["machine_there"]) == (
        cpu["hardware"]["cpu_model"], "another CPU")
    # no GPU check and no CUDA record: their tables have one row that says so
    for key in ("bench_cuda_check", "bench_cuda"):
        assert items[key].text.count("\n") == 2
        assert items[key].text.splitlines()[-1].startswith(f"| {report.NO_CUDA} |")
    assert items["bench_provenance"].text.startswith(
        "|  | newest CPU record | other CPU model |")
    assert "0123456789" in items["bench_provenance"].text
    goals = report.targets(cpu)
    assert (items["bench_met"], items["bench_goals"]) == (
        sum(r["status"] == "meets" for r in goals), len(goals))
    bound = report.stacking_bound(cpu)
    assert items["stack_K"] == bound["K"] and items["stack_above"] == bound["above_target"]
    rows = report.limit_rows(cpu)
    assert items["limit_rows"] == len(rows) and items["limit_within"] == sum(
        r["ratio"] <= r["target"] for r in rows)
    fig = plots_bench.fig_targets(goals)
    assert len(fig.axes[0].patches) == len(goals)
    # where the sweep stacks: the newest row of each model and width, rows timed alone
    # (`--only`, never shown as the benchmark) included
    only = {**cpu, "command": "sst bench --only stack_or_not_aussm_d128 --record",
            "created_utc": "2026-12-03T00:00:00",
            "entries": [{"name": "stack_or_not_aussm_d128", "sweep_model": "aussm",
                         "ratio": 1.4, "sizes": {"d_model": 128}},
                        {"name": "stack_or_not_aussm", "sweep_model": "aussm",
                         "ratio": 0.5, "sizes": {"d_model": 32}}]}
    later = report.chapter_items([other, cpu, only], [])
    assert "AUSSM at d_model 128" in later["stack_no"]  # the paper's names
    assert "AUSSM" in later["stack_yes"].split(", ") and "AUSSM" not in later["stack_no"].split(", ")
    assert later["bench_stack_or_not"].text == items["bench_stack_or_not"].text  # the table: cpu's
    # every row the two lists cite is in the table of the sweep's choice
    choice = later["bench_stack_choice"].text.splitlines()[2:]
    assert len(choice) == len(later["stack_yes"].split(", ") + later["stack_no"].split(", "))
    assert "| AUSSM | 128 | 1.40 | one run at a time | 2026-12-03 |" in choice
    assert sum(line.startswith("| AUSSM | 32 | 0.50 | stacks |") for line in choice) == 1
    # a results folder without a benchmark: every table a header, every number "n/a"
    empty = report.chapter_items([], [])
    assert all(empty[f"bench_{k}"].text.count("\n") == 1 for k in report.SECTION_KEYS)
    assert empty["stack_K"] == "n/a" and empty["machine_median"] == "n/a"
    assert empty["bench_provenance"].text.startswith("|  |\n")
    assert empty["bench_sweep"].text.count("\n") == 1 and empty["sweep_ratio"] == "n/a"


def test_the_paper_table2_counts_are_the_registries_and_the_paper_profiles():
    from sst_core.experiments import paper1
    from sst_core.reports import bench as report
    from sst_core.spec.profiles import get_profile

    c, P = report.paper_table2_counts(), get_profile("paper")
    assert (c["t2_models"], c["t2_groups"]) == (len(paper1.TABLE2_MODELS),
                                                len(paper1.TABLE2_GROUPS))
    n = (c["t2_models"] * c["t2_groups"] * c["t2_depths"] * int(c["t2_sizes"])
         * c["t2_schedules"] * c["t2_lrs"] * c["t2_seeds"])
    assert c["t2_runs"] == f"{n:,}" == f"{len(paper1.table2_grid(P)):,}"


def test_the_sweep_before_and_after_reads_the_newest_full_sized_entry():
    """The chapter's runs per hour before and after (issue 58 item 4): the newest entry of
    ``sweep_standard_before_after`` at the full size, from a record of ``--only``; its
    models trained alone are those of the sample's width, by the papers' names."""
    from sst_core.reports import bench as report

    def record(when, size, before, after, width=32):
        entry = {"name": "sweep_standard_before_after", "ours_s": after, "anchor_s": before,
                 "ours_samples_s": [after], "anchor_samples_s": [before],
                 "runs_per_hour": 3600 * 120 / after,
                 "anchor_runs_per_hour": 3600 * 120 / before, "repeat": 1,
                 "sizes": {"runs": 120, "models": 10, "stack": 12, "batch": 64,
                           "length": 60, "max_steps": 6000, "d_model": width},
                 "unstacked_models": [["aussm", 128], ["negative_mamba", width],
                                      ["mamba", width]],
                 "sample": "standard Table 2 grid, C2"}
        return {"device": "cpu", "created_utc": when, "settings": {"size": size, "repeat": 1},
                "command": "sst bench --only sweep_standard_before_after --record",
                "hardware": {"cpu_model": "a CPU", "load_avg_1m": 0.2},
                "entries": [entry]}

    old = record("2026-12-06T00:00:00", "full", 7200.0, 3600.0)
    new = record("2026-12-07T00:00:00", "full", 3000.0, 2400.0)
    small = record("2026-12-08T00:00:00", "small", 1.0, 2.0)
    table, numbers = report.sweep_throughput([old, new, small])
    assert numbers["after_over_before"] == pytest.approx(2400 / 3000) and numbers["runs"] == 120
    assert numbers["alone"] == ["Mamba", "Negative Mamba"]  # not AUSSM: d_model 128's row
    assert table.rows[3][1:] == ["50.0", "40.0"] and table.rows[4][1:] == ["144.0", "180.0"]
    assert table.rows[0][1:] == ["0 of 10", "2 of 10"]
    items = report.chapter_items([old, new, small], [])
    assert items["sweep_ratio"] == "0.80" and items["sweep_load"] == "0.20"
    assert items["sweep_alone"] == "Mamba and Negative Mamba" and items["sweep_rounds"] == "1 round"
    assert items["bench_sweep"].text == table.grid().text
    assert items["sweep_alone_rows"] == "n/a" and items["sweep_width"] == 32  # no rows yet
    # the stack-or-not rows that set those models apart, at the sample's width only
    rows = {"device": "cpu", "created_utc": "2026-12-05T00:00:00", "settings": {"size": "full"},
            "command": "sst bench --only stack_or_not_mamba --record", "entries": [
                {"name": f"stack_or_not_{m}", "sweep_model": m, "ratio": r,
                 "sizes": {"d_model": d}} for m, r, d in (
                    ("mamba", 1.05, 32), ("negative_mamba", 1.01, 32), ("aussm", 1.5, 128),
                    ("tanh_rnn", 0.6, 32))]}
    items = report.chapter_items([rows, old, new, small], [])
    assert items["sweep_alone_rows"] == "1.01 to 1.05"
    assert items["sweep_alone_gain"] == "5%"  # 1 - 1 / 1.05
    # the rounds as numbers: after / before per round, and in how many after was slower
    assert (items["sweep_round_slower"], items["sweep_round_faster"]) == (0, 1)
    assert items["sweep_round_range"] == "0.800"
    two = {**new["entries"][0], "ours_samples_s": [1180.0, 1203.0],
           "anchor_samples_s": [1166.0, 1161.0]}
    assert report.round_ratios(two) == pytest.approx([1180 / 1166, 1203 / 1161])
    assert report.chapter_items([], [])["sweep_round_range"] == "n/a"
    assert report.sweep_throughput([small]) is None  # the tests' size is no measurement



def test_the_goals_beside_the_time_targets_are_counted():
    """Peak memory and bandwidth are goals that the targets figure (time ratios) does not
    show: the chapter counts them from the entries that carry them."""
    from sst_core.reports import bench as report

    record = {"entries": [
        {"name": "k1", "memory_status": "meets"}, {"name": "k2", "memory_status": "misses"},
        {"name": "s1", "bandwidth_share": report.BANDWIDTH_GOAL},
        {"name": "s2", "bandwidth_share": report.BANDWIDTH_GOAL / 2},
        {"name": "s3", "bandwidth_share": 0.1}, {"name": "plain"}]}
    assert report.side_goals(record) == {"memory_met": 1, "memory_goals": 2,
                                         "bandwidth_met": 1, "bandwidth_goals": 3}
    assert report.side_goals({"entries": []}) == {"memory_met": 0, "memory_goals": 0,
                                                  "bandwidth_met": 0, "bandwidth_goals": 0}
    empty = report.chapter_items([], [])
    assert empty["bench_memory_goals"] == "n/a" and empty["bench_bandwidth_goal"] == "40%"
