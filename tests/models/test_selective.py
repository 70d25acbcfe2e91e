"""Mamba, Negative Mamba and Mamba-3 (sst_core.models.selective, reference 4.1-4.3).

The contract every residual-stream layer meets is checked in ``test_contract.py``.
"""
from __future__ import annotations

import math

import pytest
import torch
from torch.nn import functional as F

from sst_core.models import build
from sst_core.models.selective import CausalConv, discretize

from .contract import (
    check_outputs_match_step,
    eigenvalues,
    f64,
    overfit_c2,
    recurrent_jacobian,
    tiny,
)

pytestmark = pytest.mark.usefixtures("one_thread")


# -- Mamba, Negative Mamba, Mamba-3 ----------------------------------------------------------






def test_conv_window_is_not_affine():
    """What the docstring says: the step is not affine in the conv window entries."""
    layer = tiny("mamba").layers[0]
    u = torch.randn(layer.d_in, dtype=f64)
    h1, h2 = torch.randn(2, layer.state_size, dtype=f64)
    n = layer.state_size - layer.conv_state_size
    assert layer.conv_state_size == 3 * layer.d_inner
    J1, J2 = recurrent_jacobian(layer, h1, u)[1], recurrent_jacobian(layer, h2, u)[1]
    assert not torch.allclose(J1[:, n:], J2[:, n:])


def test_eigenvalue_ranges():
    lam = eigenvalues(tiny("mamba").layers[0])
    assert lam.imag.abs().max() == 0 and ((lam.real > 0) & (lam.real < 1)).all()
    neg = tiny("negative_mamba").layers[0]
    with torch.no_grad():
        neg.dt_proj.bias.fill_(2.0)  # Delta ~ 2: exp(Delta A) near 0, 2 exp(.) - 1 near -1
    lam = eigenvalues(neg)
    assert lam.imag.abs().max() == 0 and ((lam.real > -1) & (lam.real < 1)).all()
    assert lam.real.min() < -0.5
    lam = eigenvalues(tiny("mamba3", headdim=4).layers[0])
    assert lam.abs().max() < 1
    assert (lam.imag.abs() > 1e-6).any()  # the rotated pairs


def test_mamba_init():
    layer = build("mamba", 3, 3, d_model=40, d_state=5).layers[0]
    assert layer.d_inner == 80 and layer.dt_rank == 3  # ceil(40 / 16)
    torch.testing.assert_close(-torch.exp(layer.A_log[7]), -torch.arange(1, 6.0))
    dt = F.softplus(layer.dt_proj.bias)
    assert dt.min() >= 1e-3 * 0.999 and dt.max() <= 1e-1 * 1.001
    assert torch.equal(layer.D, torch.ones(80))
    assert layer.conv.weight.shape == (80, 4)


def test_causal_conv_matches_conv1d():
    conv = CausalConv(6, 4).double()
    x = torch.randn(2, 9, 6, dtype=f64)
    y, windows = conv.scan(x, None)
    want = F.conv1d(x.transpose(1, 2), conv.weight[:, None], conv.bias, padding=3, groups=6)
    torch.testing.assert_close(y, want[..., :9].transpose(1, 2))
    torch.testing.assert_close(windows[:, -1].view(2, 3, 6), x[:, -3:])  # oldest first


@pytest.mark.parametrize("negative", [False, True])
def test_discretize_matches_plain_formula(negative):
    dt = torch.rand(3, 5, 4, dtype=f64, requires_grad=True)
    A = -torch.rand(4, 6, dtype=f64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda d, a: discretize(d, a, negative), (dt, A))
    plain = torch.exp(dt[..., None] * A)
    torch.testing.assert_close(discretize(dt, A, negative), 2 * plain - 1 if negative else plain)


def test_mamba3_equals_official_recurrence():
    """The rotated frame against the official form (cumulative angle, rotated K and Q of
    adjacent pairs, trapezoid with the previous k and v), mamba3_siso_step.py."""
    layer = tiny("mamba3", headdim=2, d_model=4, d_state=8).layers[0]
    n, N = layer.cfg.n_rope, layer.cfg.d_state
    u = torch.randn(2, 20, 4, dtype=f64)
    c = layer._inputs(u)
    # my layout [Re (n); Im (n); real] -> the official adjacent pairs (2j, 2j + 1)
    perm = torch.cat([torch.stack([torch.arange(n), torch.arange(n, 2 * n)], -1).flatten(),
                      torch.arange(2 * n, N)])
    K, Q = c["K"][..., perm], c["Q"][..., perm]  # (b, L, H, N)
    dtheta = torch.atan2(c["sin"], c["cos"])  # (b, L, H, n)
    theta = torch.zeros_like(dtheta[:, 0])
    S = torch.zeros(2, layer.n_heads, layer.cfg.headdim, N, dtype=f64)
    k_prev, v_prev, ys = torch.zeros_like(K[:, 0]), torch.zeros_like(c["v"][:, 0]), []

    def rot(x, angle):  # official: (x0 cos - x1 sin, x0 sin + x1 cos) on pairs j < n
        x0, x1 = x[..., 0:2 * n:2], x[..., 1:2 * n:2]
        cos, sin = torch.cos(angle), torch.sin(angle)
        pairs = torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], -1).flatten(-2)
        return torch.cat([pairs, x[..., 2 * n:]], -1)

    for t in range(u.shape[1]):
        theta = torch.remainder(theta + dtheta[:, t], 2 * math.pi)
        k, q, v = rot(K[:, t], theta), rot(Q[:, t], theta), c["v"][:, t]
        alpha, beta, gamma = (c[x][:, t, :, None, None] for x in ("alpha", "beta", "gamma"))
        S = alpha * S + beta * v_prev[..., None] * k_prev[..., None, :] \
            + gamma * v[..., None] * k[..., None, :]
        ys.append((S @ q[..., None])[..., 0])  # (b, H, P)
        k_prev, v_prev = k, v
    want = layer._out(torch.stack(ys, 1), c)
    torch.testing.assert_close(layer.scan(u)[1], want, rtol=1e-9, atol=1e-10)


MAMBA3_OUTPUTS = {  # strong decays: spans of more than ssd.SPAN inside a block
    "default": {"headdim": 4},
    "all_rope_strong_decay": {"headdim": 2, "rope_fraction": 1.0, "dt_min": 2.0, "dt_max": 4.0},
}


@pytest.mark.parametrize("config", MAMBA3_OUTPUTS)
@pytest.mark.parametrize("L", [1, 63, 1000])
@pytest.mark.parametrize("with_h0", [False, True])
def test_mamba3_outputs_equal_step_in_value_and_gradient(config, L, with_h0):
    """outputs (trapezoid_ssd: blocks of a decayed attention, no states) == step unrolled."""
    check_outputs_match_step(tiny("mamba3", **MAMBA3_OUTPUTS[config]).layers[0], L, with_h0)


def test_mamba3_outputs_last_state_equals_scan():
    """The state after the last step (what carries one piece into the next) == scan's."""
    layer = tiny("mamba3", headdim=4).layers[0]
    u = torch.randn(2, 150, layer.d_in, dtype=f64)
    h0 = 0.5 * torch.randn(2, layer.state_size, dtype=f64)
    hs, ys = layer.scan(u, h0)
    y, h_last = layer._outputs(u, h0, last=True)
    torch.testing.assert_close(y, ys, rtol=1e-10, atol=1e-11)
    torch.testing.assert_close(h_last, hs[:, -1], rtol=1e-10, atol=1e-11)


# Mamba-3 with the default Delta init in [1e-3, 1e-1] fits this batch for some seeds only
# (e.g. 3 of 4); with Delta in [0.1, 1] it fits for every seed tried, in a few steps.
@pytest.mark.parametrize("name,kw", [("mamba", {}), ("negative_mamba", {}),
                                     ("mamba3", {"headdim": 4, "dt_min": 0.1, "dt_max": 1.0})])
def test_overfits_c2(name, kw):
    assert overfit_c2(name, **kw) >= 0.95


@pytest.mark.parametrize("name,kw,match", [
    ("mamba3", {"d_state": 5}, "even d_state.*5"),
    ("mamba3", {"d_state": 2}, "rotated pair"),
    ("mamba3", {"headdim": 5}, "headdim 5 must divide d_inner"),
    ("mamba3", {"rope_fraction": 1.5}, "rope_fraction"),
    ("mamba", {"d_conv": 0}, "d_conv must be a positive int"),
    ("mamba", {"expand": 1.5}, "expand"),
    ("mamba", {"bogus": 1}, "unknown option.*bogus.*allowed: d_model"),
    ("negative_mamba", {"negative": False}, "negative"),
    ("mamba", {"n_layers": 0}, "n_layers"),
])
def test_impossible_sizes_raise(name, kw, match):
    with pytest.raises(ValueError, match=match):
        build(name, 3, 3, **{"d_model": 8, "d_state": 4, **kw})
