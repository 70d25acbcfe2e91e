"""AUSSM and Simple AUSSM (sst_core.models.unitary, reference 4.4-4.5)."""
from __future__ import annotations

import math

import pytest
import torch
from torch.nn import functional as F

from sst_core.models import build

from .contract import CONFIGS as ALL_CONFIGS
from .contract import (
    check_outputs_match_step,
    check_scan_matches_step,
    eigenvalues,
    overfit_c2,
    tiny,
)

pytestmark = pytest.mark.usefixtures("one_thread")

CONFIGS = {k: v for k, v in ALL_CONFIGS.items() if k in ("aussm", "aussm_paper", "simple_aussm")}





def test_simple_aussm_gradients_at_1000():
    check_scan_matches_step(tiny("simple_aussm").layers[0], 1000)


@pytest.mark.parametrize("config", ["aussm", "aussm_paper", "simple_aussm"])
@pytest.mark.parametrize("L", [1, 63, 1000])
@pytest.mark.parametrize("with_h0", [False, True])
def test_outputs_equal_step_in_value_and_gradient(config, L, with_h0):
    """outputs (AUSSM: the fused unitary_scan, which keeps no states) == step unrolled."""
    name, kw = CONFIGS[config]
    check_outputs_match_step(tiny(name, **kw).layers[0], L, with_h0)


@pytest.mark.parametrize("config", ["aussm", "aussm_paper"])
@pytest.mark.parametrize("L", [1, 63, 1000])
def test_aussm_outputs_equal_scan_in_value_and_gradient(config, L):
    """outputs (no flat states) == scan's outputs, and their gradients w.r.t. u, h0 and
    every parameter."""
    name, kw = CONFIGS[config]
    layer = tiny(name, **kw).layers[0]
    g = torch.Generator().manual_seed(L)
    u = torch.randn(2, L, layer.d_in, generator=g, dtype=torch.float64)
    h0 = 0.5 * torch.randn(2, layer.state_size, generator=g, dtype=torch.float64)
    w = torch.randn(2, L, layer.d_out, generator=g, dtype=torch.float64)
    results = []
    for fn in (layer.outputs, lambda u, h0: layer.scan(u, h0)[1]):
        leaves = [u.clone().requires_grad_(), h0.clone().requires_grad_()]
        layer.zero_grad()
        (fn(*leaves) * w).sum().backward()
        results.append([x.grad for x in leaves] + [p.grad.clone() for p in layer.parameters()])
    with torch.no_grad():
        torch.testing.assert_close(layer.outputs(u, h0), layer.scan(u, h0)[1])
    for got, want in zip(*results):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)



@pytest.mark.parametrize("config", CONFIGS)
def test_eigenvalues_on_unit_circle(config):
    name, kw = CONFIGS[config]
    lam = eigenvalues(tiny(name, **kw).layers[0])
    torch.testing.assert_close(lam.abs(), torch.ones_like(lam.abs()), rtol=0, atol=1e-10)


def released_aussm(layer, u):
    """AUSSM as the released reference_ssm_adaptive_unitary_optimized_polar computes it:
    cumulative angles G, no Delta on the angle, dt bias added twice (ops.py, aussm.py)."""
    D = layer.cfg.d_model
    x, z = layer.in_proj(u).chunk(2, -1)
    x = layer.conv.scan(x, None)[0]  # the conv output, before SiLU
    dt = F.softplus(layer.dt_proj(layer.x_proj(x)) + layer.dt_proj.bias)
    A = torch.einsum("ijr,blr->blij", layer.X.view(D, -1, D) / math.sqrt(D), x)
    G = torch.remainder(torch.cumsum(A + layer.angle_bias, 1), 2 * math.pi)
    s = F.silu(x)
    B_r, B_theta = F.softplus(layer.b_re), layer.b_im
    C_r, C_theta = F.softplus(layer.c_re), layer.c_im
    re = torch.cumsum(B_r * torch.cos(B_theta - G) * (dt * s)[..., None], 1)
    im = torch.cumsum(B_r * torch.sin(B_theta - G) * (dt * s)[..., None], 1)
    y = (C_r * (torch.cos(C_theta + G) * re - torch.sin(C_theta + G) * im)).sum(-1)
    return layer.out_proj((y + s * layer.D) * F.silu(z))


def test_aussm_equals_released_reference():
    layer = tiny("aussm", noise=0.3).layers[0]
    u = torch.randn(2, 30, layer.d_in, dtype=torch.float64)
    torch.testing.assert_close(layer.scan(u)[1], released_aussm(layer, u), rtol=1e-9, atol=1e-10)


def test_aussm_quirk_flags():
    """dt_bias_twice and angle_times_dt change the recurrence as documented."""
    layer = tiny("aussm").layers[0]
    x = torch.randn(5, layer.cfg.d_model, dtype=torch.float64)
    angle, ds, s = layer._inputs(x)
    dt = ds / s
    torch.testing.assert_close(dt, F.softplus(layer.dt_proj(layer.x_proj(x)) + layer.dt_proj.bias))
    paper = tiny("aussm", dt_bias_twice=False, angle_times_dt=True).layers[0]
    angle_p, ds_p, s_p = paper._inputs(x)
    dt_p = F.softplus(paper.dt_proj(paper.x_proj(x)))
    torch.testing.assert_close(ds_p / s_p, dt_p)
    torch.testing.assert_close(angle_p, angle * dt_p[..., None])  # same seed, same params


def test_simple_aussm_recurrence_by_hand():
    layer = tiny("simple_aussm").layers[0]
    u = torch.randn(3, 4, dtype=torch.float64)
    h = torch.randn(3, 8, dtype=torch.float64)
    h_next, y = layer.step(h, u)
    theta = layer.theta(u)
    Bu = torch.complex(*layer.B(u).chunk(2, -1))
    want = torch.exp(1j * theta) * torch.complex(*h.chunk(2, -1)) + Bu
    torch.testing.assert_close(h_next, torch.cat([want.real, want.imag], -1))
    torch.testing.assert_close(y, layer.W_y(h_next))


@pytest.mark.parametrize("name", ["aussm", "simple_aussm"])
def test_overfits_c2(name):
    assert overfit_c2(name) >= 0.95


@pytest.mark.parametrize("name,kw,match", [
    ("aussm", {"d_conv": 0}, "d_conv must be a positive int"),
    ("aussm", {"dt_rank": 0}, "dt_rank"),
    ("aussm", {"expand": 2}, "unknown option.*expand"),
    ("simple_aussm", {"d_conv": 4}, "unknown option.*d_conv.*allowed: d_model, d_state"),
])
def test_impossible_sizes_raise(name, kw, match):
    with pytest.raises(ValueError, match=match):
        build(name, 3, 3, **{"d_model": 8, "d_state": 4, **kw})
