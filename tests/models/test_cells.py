"""The dense RNN cell of sst_core.models.cells against plain formulas (reference §4.6-4.10, §5)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from sst_core.models import PHIS, build
from sst_core.models.cells import GATES, RADIUS, Cell

D_IN, D = 3, 6
COMBOS = list(itertools.product(PHIS, GATES))


def cell(phi: str, gate: str = "none", noise: float = 0.7) -> Cell:
    """A float64 cell, every parameter moved off its init (so gamma, beta, U_g are generic)."""
    torch.manual_seed(0)
    c = Cell(D_IN, D, phi, gate).double()
    with torch.no_grad():
        for p in c.parameters():
            p.add_(noise * torch.randn_like(p))
    return c


def np_(t: torch.Tensor) -> np.ndarray:
    return t.detach().numpy()


def phi_formula(name: str, p: np.ndarray, c: Cell) -> np.ndarray:
    """phi on one pre-activation vector p, written out by hand."""
    d = D
    if name == "tanh":
        return (np.exp(p) - np.exp(-p)) / (np.exp(p) + np.exp(-p))
    if name == "relu":
        return np.where(p > 0, p, 0.0)
    if name == "groupsort2":
        return np.array([v for i in range(0, d, 2) for v in sorted(p[i:i + 2], reverse=True)])
    if name == "max":
        return np.array([max(p[i], p[d + i]) for i in range(d)])
    if name == "min":
        return np.array([min(p[i], p[d + i]) for i in range(d)])
    if name == "identity":
        return p
    if name == "layernorm":
        mu, var = p.mean(), ((p - p.mean()) ** 2).mean()
        return np_(c.gamma) * (p - mu) / np.sqrt(var + 1e-5) + np_(c.beta)
    assert name == "sphere"
    return np.sqrt(d) * p / np.sqrt((p ** 2).sum())


def step_formula(c: Cell, h: np.ndarray, u: np.ndarray) -> np.ndarray:
    """h' = phi(g * (W_h h) + W_x u + b), g from the gate's own formula."""
    Wh, Wx, b = np_(c.W_h), np_(c.W_x), np_(c.b)
    g = 1.0
    if c.gate != "none":
        a = np_(c.W_g) @ u + np_(c.b_g)
        if c.gate == "state":
            a = a + np_(c.U_g) @ h
        g = 1 / (1 + np.exp(-a))
    return phi_formula(c.phi_name, g * (Wh @ h) + Wx @ u + b, c)


@pytest.mark.parametrize("phi,gate", COMBOS)
def test_step_matches_formula(phi, gate):
    c = cell(phi, gate)
    rng = np.random.default_rng(1)
    h, u = rng.normal(size=(4, D)), rng.normal(size=(4, D_IN))
    h_next, y = c.step(torch.tensor(h), torch.tensor(u))
    want = np.stack([step_formula(c, h[i], u[i]) for i in range(4)])
    np.testing.assert_allclose(np_(h_next), want, rtol=1e-10, atol=1e-12)
    assert y is h_next


@pytest.mark.parametrize("phi,gate", COMBOS)
@pytest.mark.parametrize("L", [1, 63])
def test_scan_equals_step(phi, gate, L):
    c = cell(phi, gate, noise=0.1)  # near the init: rounding is not amplified over 63 steps
    u = torch.randn(3, L, D_IN, dtype=torch.float64)
    h0 = torch.randn(3, D, dtype=torch.float64)
    hs, ys = c.scan(u, h0)
    ref_hs, ref_ys = super(Cell, c).scan(u, h0)  # the base class: step in a loop
    torch.testing.assert_close(hs, ref_hs, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(ys, ref_ys, rtol=1e-10, atol=1e-12)


def test_tanh_fused_scan_equals_step_with_gradients():
    """The fused kernel (torch's Elman RNN) and step unrolled agree in value and gradient."""
    c = Cell(D_IN, D, "tanh").double()
    u = torch.randn(2, 1000, D_IN, dtype=torch.float64)
    grads = []
    for scan in (c.scan, super(Cell, c).scan):
        c.zero_grad()
        hs, _ = scan(u)
        (hs * torch.linspace(-1, 1, D, dtype=torch.float64)).sum().backward()
        grads.append((hs.detach(), [p.grad.clone() for p in c.parameters()]))
    (h1, g1), (h2, g2) = grads
    torch.testing.assert_close(h1, h2, rtol=1e-10, atol=1e-12)
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("phi", ["max", "min"])
def test_maxout_widths(phi):
    c = Cell(D_IN, D, phi, "state")
    assert c.d_pre == 2 * D
    for name, shape in [("W_h", (2 * D, D)), ("W_x", (2 * D, D_IN)), ("b", (2 * D,)),
                        ("W_g", (2 * D, D_IN)), ("U_g", (2 * D, D)), ("b_g", (2 * D,))]:
        assert getattr(c, name).shape == shape, name
    h, y = c.step(torch.zeros(5, D), torch.randn(5, D_IN))
    assert h.shape == y.shape == (5, D)


def test_groupsort2_sorts_pairs():
    c = Cell(D_IN, D, "groupsort2")
    p = torch.randn(7, D)
    out = c.phi(p)  # (7, D)
    pairs, out_pairs = p.view(7, -1, 2), out.view(7, -1, 2)
    assert torch.equal(out_pairs[..., 0], pairs.max(-1).values)
    assert torch.equal(out_pairs[..., 1], pairs.min(-1).values)
    torch.testing.assert_close(out.norm(dim=-1), p.norm(dim=-1))  # a permutation


def test_layernorm_and_sphere_outputs():
    p = 3 * torch.randn(50, D, dtype=torch.float64) + 2
    ln = Cell(D_IN, D, "layernorm").double()  # gamma = 1, beta = 0 at init
    out = ln.phi(p)
    torch.testing.assert_close(out.mean(-1), torch.zeros(50, dtype=torch.float64))
    torch.testing.assert_close(out.var(-1, unbiased=False),
                               1 / (1 + 1e-5 / p.var(-1, unbiased=False)))
    sphere = Cell(D_IN, D, "sphere").double()
    torch.testing.assert_close(sphere.phi(p).norm(dim=-1),
                               torch.full((50,), D ** 0.5, dtype=torch.float64))


def test_groupsort2_needs_even_width():
    with pytest.raises(ValueError, match="even.*7"):
        Cell(D_IN, 7, "groupsort2")
    Cell(D_IN, 7, "max")  # maxout works at any width


def test_unknown_phi_and_gate():
    with pytest.raises(ValueError, match=", ".join(PHIS)):
        Cell(D_IN, D, "gelu")
    with pytest.raises(ValueError, match="'both'"):
        Cell(D_IN, D, "tanh", "both")


@pytest.mark.parametrize("phi,gate", COMBOS)
def test_is_affine_rule(phi, gate):
    assert Cell(D_IN, D, phi, gate).is_affine == (phi == "identity" and gate != "state")


def test_gated_pair_share_initialisation():
    """Same seed: the token-/state-gated pair compute the same function at init (U_g = 0)."""
    x = torch.randint(0, 6, (4, 30))
    models = []
    for name in ("token_gated_rnn", "state_gated_rnn"):
        torch.manual_seed(3)
        models.append(build(name, 6, 6, d_state=16, n_layers=2))
    tok, state = models
    torch.testing.assert_close(tok(x), state(x), rtol=0, atol=0)
    assert [l.state_size for l in tok.layers] == [l.state_size for l in state.layers]
    assert all(torch.count_nonzero(l.U_g) == 0 for l in state.layers)


@pytest.mark.parametrize("phi", ["tanh", "max"])
def test_W_h_init_radius(phi):
    torch.manual_seed(0)
    c = Cell(D_IN, 32, phi)
    for block in c.W_h.detach().split(32):
        eig = torch.linalg.eigvals(block).abs()
        torch.testing.assert_close(eig, torch.full_like(eig, RADIUS))


@pytest.mark.parametrize("name", ["linear_rnn", "token_gated_rnn"])
def test_affine_variants_stay_bounded_at_length_1000(name):
    """At init ||h_t|| <= max_x ||W_x e(x) + b|| / (1 - RADIUS) for the linear RNN."""
    torch.manual_seed(0)
    model = build(name, 6, 6, d_state=64)
    with torch.no_grad():
        h = model.hidden_states(torch.randint(0, 6, (8, 1000)))[-1]  # (8, 1000, 64)
        layer = model.layers[0]
        bound = (layer.W_x.T + layer.b).norm(dim=-1).max() / (1 - RADIUS)
    assert torch.isfinite(h).all() and h.norm(dim=-1).max() <= bound
