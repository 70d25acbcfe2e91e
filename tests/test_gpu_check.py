"""The GPU check's comparisons, run CPU against CPU (CI has no GPU)."""
import math

import pytest
import torch

from sst_core import cli
from sst_core.bench import gpu_check


def test_every_model_and_fast_op_has_a_check():
    from sst_core.experiments.paper1 import TABLE2_MODELS
    from sst_core.models.registry import PHIS, REGISTRY

    names = set(gpu_check.cases())
    for model in REGISTRY:
        if model == "rnn_phi":
            assert {f"model rnn_phi[{phi}]" for phi in PHIS} <= names
        else:
            assert f"model {model}" in names
    for L in (1, 63, 1000):
        assert {f"op scan.linear_scan real L={L}", f"op scan.linear_scan complex L={L}"} <= names
    assert "S4D layer L=1024" in names
    assert {f"stacked training step ({m} x3)" for m in TABLE2_MODELS} <= names
    # every fast op found in sst_core.ops has inputs registered, so it is compared
    ops = gpu_check.fast_ops()
    assert not [op for op in ops if op not in gpu_check.OP_CASES], \
        "add the inputs of these ops to gpu_check.OP_CASES"
    assert not any("no inputs registered" in n for n in names)
    for op in ops:
        assert any(n.startswith(f"op {op} ") for n in names), op
    assert set(gpu_check.OP_CASES) <= set(ops), "OP_CASES names an op that no longer exists"


def test_fast_ops_are_found_in_the_ops_modules():
    ops = gpu_check.fast_ops()
    assert {"scan.linear_scan", "rnn_scan.rnn_scan", "selective_scan.selective_scan",
            "ssm_kernel.vandermonde_kernel", "ssm_kernel.fft_conv"} <= set(ops)
    assert not [op for op in ops if op.endswith("_ref") or op.startswith("native.")]


def test_an_op_without_inputs_is_a_failing_check(monkeypatch):
    import sst_core.ops.scan as scan

    def new_kernel(a):  # a kernel someone adds to a module's __all__
        return a

    monkeypatch.setattr(scan, "new_kernel", new_kernel, raising=False)
    monkeypatch.setattr(scan, "__all__", [*scan.__all__, "new_kernel"])
    assert "scan.new_kernel" in gpu_check.fast_ops()
    name = "op scan.new_kernel (no inputs registered)"
    assert name in gpu_check.cases()
    (check,) = gpu_check.compare_devices("cpu", only=[name])
    assert not check["ok"] and "OP_CASES" in check["error"]
    assert math.isnan(check["max_abs_diff_output"])
    assert "OP_CASES" in gpu_check.to_markdown([check])


def test_cpu_against_cpu_passes_with_zero_difference():
    only = ["model mamba", "model state_gated_rnn", "op scan.linear_scan complex L=63",
            "stacked training step (mamba x3)"]
    checks = gpu_check.compare_devices("cpu", only=only)
    assert [c["check"] for c in checks] == only
    for c in checks:
        assert c["ok"] and c["max_abs_diff_output"] == 0 and c["max_abs_diff_grad"] == 0
    table = gpu_check.to_markdown(checks)
    assert table.count("| yes |") == len(only)


def test_every_op_case_runs_on_the_cpu():
    only = [n for n in gpu_check.cases() if n.startswith("op ")]
    checks = gpu_check.compare_devices("cpu", only=only)
    bad = [(c["check"], c.get("error")) for c in checks if not c["ok"]]
    assert not bad
    for c in checks:
        assert c["max_abs_diff_output"] == 0 and c["max_abs_diff_grad"] == 0, c["check"]


def test_a_difference_beyond_tolerance_fails():
    a = torch.ones(3)
    assert gpu_check._err(a, a + 1e-5)[1]  # within 1e-3 relative
    assert not gpu_check._err(a, a + 1e-2)[1]


def test_store_writes_a_record(tmp_path):
    checks = gpu_check.compare_devices("cpu", only=["op scan.linear_scan real L=1"])
    path = gpu_check.store(checks, "cpu", 1.0, root=tmp_path)
    import json

    record = json.loads(path.read_text())
    assert record["experiment"] == "gpu_check" and record["all_ok"] is True
    assert record["checks"] == checks and record["git_commit"]
    from sst_core.bench import records as bench_records

    (loaded,) = bench_records.load_records(tmp_path, experiment="gpu_check")
    assert loaded["checks"] == checks
    assert bench_records.load_records(tmp_path) == []  # not mistaken for a benchmark record


def test_unknown_check_and_missing_cuda_are_clear_errors(capsys):
    with pytest.raises(ValueError, match="unknown check"):
        gpu_check.compare_devices("cpu", only=["model nope"])
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA build of torch"):
            gpu_check.compare_devices("cuda")
        assert cli.main(["gpu-check"]) == 2
        assert "torch.cuda.is_available() is False" in capsys.readouterr().err


def test_the_gpus_parallel_scans_pass_the_check_against_the_cpus_paths():
    """What the GPU check compares on CUDA, by device, is the parallel path (the chunked
    scans) against the CPU's C loops. Run here with the parallel path forced on the CPU
    (parallel_scans()) as the "device" side, every scan op case, every model and every
    stacked training step stays within the check's tolerance: on a GPU only the device's
    own arithmetic can differ."""
    from sst_core.ops.scan import parallel_scans

    cases = gpu_check.cases()
    names = [n for n in cases if n.startswith(("model ", "stacked ", "op scan.",
                                               "op selective_scan.", "op unitary_scan."))
             and "on both" not in n]
    assert len([n for n in names if n.startswith("op selective_scan.")]) >= 7
    cpu = torch.device("cpu")
    bad = []
    for name in names:
        out, grads = cases[name](cpu)
        with parallel_scans():
            out_p, grads_p = cases[name](cpu)
        oks = [gpu_check._err(out, out_p)[1]] + [
            (g is None and h is None) or gpu_check._err(g, h)[1] for g, h in zip(grads, grads_p)]
        if not all(oks) or len(grads) != len(grads_p):
            bad.append(name)
    assert not bad
