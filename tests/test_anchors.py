"""The selective-scan anchors of ``sst bench`` compute what our reference computes."""
import pytest
import torch
from torch.nn import functional as F

from sst_core.bench import anchors
from sst_core.ops.selective_scan import selective_scan, selective_scan_ref


def _inputs(b, L, E, N, seed=0):
    g = torch.Generator().manual_seed(seed)
    dt = F.softplus(torch.randn(b, L, E, generator=g, dtype=torch.float64) - 1)
    A = -torch.exp(torch.randn(E, N, generator=g, dtype=torch.float64) * 0.5)
    x = torch.randn(b, L, E, generator=g, dtype=torch.float64)
    B = torch.randn(b, L, N, generator=g, dtype=torch.float64)
    C = torch.randn(b, L, N, generator=g, dtype=torch.float64)
    return [t.requires_grad_() for t in (dt, A, x, B, C)]


def _mamba_ref(dt, A, x, B, C, D=None, z=None):  # time-major in and out, as ours
    out = anchors.mamba_selective_scan_ref(
        x.transpose(1, 2), dt.transpose(1, 2), A, B.transpose(1, 2), C.transpose(1, 2), D=D,
        z=None if z is None else z.transpose(1, 2))
    return out.transpose(1, 2)


def _pscan(dt, A, x, B, C, D=None, z=None):
    return anchors.pscan_selective_scan(x, dt, A, B, C, D=D, z=z)


ANCHORS = {"mamba_ref": _mamba_ref, "pscan": _pscan}


@pytest.mark.parametrize("L", [1, 2, 5, 63, 64])
@pytest.mark.parametrize("anchor", list(ANCHORS))
def test_anchor_equals_our_reference_with_gradients(anchor, L):
    ins = _inputs(3, L, 4, 5, seed=L)
    dt, A, x, B, C = ins
    y_anchor = ANCHORS[anchor](dt, A, x, B, C)
    y_ref = selective_scan_ref(dt, A, x, B, C)
    assert y_anchor.shape == y_ref.shape == (3, L, 4)
    torch.testing.assert_close(y_anchor, y_ref, rtol=1e-10, atol=1e-12)
    w = torch.randn_like(y_ref)
    g_anchor = torch.autograd.grad((y_anchor * w).sum(), ins)
    g_ref = torch.autograd.grad((y_ref * w).sum(), ins)
    for ga, gr in zip(g_anchor, g_ref):
        torch.testing.assert_close(ga, gr, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("L", [1, 63, 64])
def test_skip_and_gate_match_in_both_anchors_and_ours(L):
    dt, A, x, B, C = _inputs(2, L, 3, 4, seed=1)
    g = torch.Generator().manual_seed(7)
    D = torch.randn(3, generator=g, dtype=torch.float64, requires_grad=True)
    z = torch.randn(2, L, 3, generator=g, dtype=torch.float64, requires_grad=True)
    ours = (selective_scan(dt, A, x, B, C) + D * x) * F.silu(z)
    leaves = (dt, A, x, B, C, D, z)
    g_ours = torch.autograd.grad(ours.sum(), leaves)
    for anchor in ANCHORS.values():
        y = anchor(dt, A, x, B, C, D=D, z=z)
        torch.testing.assert_close(y, ours, rtol=1e-10, atol=1e-12)
        for ga, go in zip(torch.autograd.grad(y.sum(), leaves), g_ours):
            torch.testing.assert_close(ga, go, rtol=1e-9, atol=1e-11)


def test_mamba_ref_options_bias_softplus_and_last_state():
    dt, A, x, B, C = _inputs(2, 9, 3, 4, seed=2)
    bias = torch.randn(3, dtype=torch.float64)
    y, last = anchors.mamba_selective_scan_ref(
        x.transpose(1, 2), dt.transpose(1, 2), A, B.transpose(1, 2), C.transpose(1, 2),
        delta_bias=bias, delta_softplus=True, return_last_state=True)
    y_ref, last_ref = selective_scan_ref(F.softplus(dt + bias), A, x, B, C, return_last=True)
    torch.testing.assert_close(y.transpose(1, 2), y_ref)
    torch.testing.assert_close(last, last_ref)


@pytest.mark.parametrize("L", [1, 3, 8, 100])
def test_pscan_equals_the_loop_and_leaves_inputs_alone(L):
    g = torch.Generator().manual_seed(L)
    a = torch.rand(2, L, 3, generator=g, dtype=torch.float64)
    b = torch.randn(2, L, 3, generator=g, dtype=torch.float64)
    a0, b0 = a.clone(), b.clone()
    h, out = torch.zeros(2, 3, dtype=torch.float64), []
    for t in range(L):
        h = a[:, t] * h + b[:, t]
        out.append(h)
    torch.testing.assert_close(anchors.pscan(a, b), torch.stack(out, 1))
    assert torch.equal(a, a0) and torch.equal(b, b0)


def test_bench_entries_time_ours_against_each_anchor():
    from sst_core.bench import harness as bench

    names = [n for n in bench.names() if n.startswith("selective_scan_vs_")]
    assert names == [f"selective_scan_vs_{a}_{s}" for s in ("quick", "cpu")
                     for a in ("mamba_ref", "pscan")]
    out = bench.run(names[:2], device="cpu", size="small", repeat=1, threads=1)
    for e in out["entries"]:
        assert e["kind"] == "train" and e["target"] == 1.0 and e["ratio"] > 0
        assert e["sizes"] == {"batch": 2, "length": 60, "E": 32, "N": 16}
        assert e["anchor"].startswith(("state-spaces/mamba", "alxndrTL/mamba.py"))
