"""Theorem 1's return map (sst_core.analysis.return_map) on constructed models with known
answers: the identity transition of linear attention, a contracting tanh map, a fixed point
of a 1-D tanh cell, and the norms on hand-made Jacobians."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sst_core.analysis import diagnostics as dg
from sst_core.analysis import return_map as rm
from sst_core.models import build
from sst_core.theory.error_control import tanh_fixed_point_weights

pytestmark = pytest.mark.usefixtures("one_thread")


def rnn(name: str, d: int = 4, seed: int = 0):
    torch.manual_seed(seed)
    return build(name, 3, 3, d_state=d).double()


def random_basis(D: int, r: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.linalg.qr(torch.randn(D, r, generator=g, dtype=torch.float64))[0]


def test_linear_attention_is_the_identity_on_any_U():
    """A = I exactly: (J - I) Q = 0 and Q^T J Q = I on any U, whatever the state."""
    torch.manual_seed(0)
    model = build("linear_attention", 3, 3, d_model=8, d_state=4).double()
    D = model.state_size
    Q = random_basis(D, 2)
    out = rm.return_map_checks(model, [1, 2, 0], torch.randn(D, dtype=torch.float64), Q)
    assert tuple(out) == rm.NORMS
    assert out["deviation"] == pytest.approx(0, abs=1e-12)
    assert out["deviation_U"] == pytest.approx(0, abs=1e-12)
    assert out["gain"] == pytest.approx(1, abs=1e-12)
    assert out["amplification"] == pytest.approx(1, abs=1e-12)


def test_a_contracting_tanh_rnn_has_gain_below_one():
    rnn_ = build("tanh_rnn", 3, 3, d_state=6).double()
    with torch.no_grad():
        rnn_.layers[0].W_h.mul_(0.01)  # tiny recurrent weights contract everything
    Q = random_basis(rnn_.state_size, 2, seed=1)
    out = rm.return_map_checks(rnn_, [1, 1], torch.zeros(rnn_.state_size, dtype=torch.float64), Q)
    assert out["gain"] < 0.1 and out["amplification"] < 0.1
    assert out["deviation"] == pytest.approx(1, abs=0.1)  # J ~ 0: (J - I) Q ~ -Q


def test_tanh_cell_at_its_fixed_point_matches_the_theory():
    """h -> tanh(w h + b) fixes c0 and c1 (theory.tanh_fixed_point_weights); at c1 the
    1-D Jacobian is w (1 - c1^2): gain = amplification = that, deviation = |that - 1|,
    and the return residual is 0."""
    c0, c1 = -0.5, 0.3
    w, b = tanh_fixed_point_weights(c0, c1)
    model = build("tanh_rnn", 2, 2, d_state=1).double()
    cell = model.layers[0]
    with torch.no_grad():
        cell.W_h.fill_(w)
        cell.W_x.zero_()
        cell.b.fill_(b)
    J = w * (1 - c1 ** 2)
    assert 0 < J < 1  # this map contracts errors along U = R while preserving both states
    for word in ([0], [1, 0, 1]):
        out = rm.return_map_checks(model, word, torch.tensor([c1], dtype=torch.float64),
                                   torch.ones(1, 1, dtype=torch.float64))
        n = len(word)
        assert out["gain"] == pytest.approx(J ** n, rel=1e-12)
        assert out["amplification"] == pytest.approx(J ** n, rel=1e-12)
        assert out["deviation"] == pytest.approx(1 - J ** n, rel=1e-12)
        assert out["deviation_U"] == pytest.approx(1 - J ** n, rel=1e-12)
        assert out["return_residual"] == pytest.approx(0, abs=1e-15)
    # away from the fixed point the residual is the distance F(h) - h
    h = torch.tensor([0.0], dtype=torch.float64)
    out = rm.return_map_checks(model, [0], h, torch.ones(1, 1, dtype=torch.float64))
    assert out["return_residual"] == pytest.approx(abs(math.tanh(b)), rel=1e-12)


def test_restricted_norms_on_hand_made_jacobians():
    Q = np.eye(3)[:, :2]
    assert rm.restricted_norms(np.eye(3) @ Q, Q) == {
        "deviation": 0.0, "deviation_U": 0.0, "gain": 1.0, "gain_min": 1.0,
        "amplification": 1.0}
    J = np.diag([2.0, 0.5, 3.0])
    r = rm.restricted_norms(J @ Q, Q)
    assert r["gain"] == pytest.approx(2.0) and r["amplification"] == pytest.approx(2.0)
    assert r["gain_min"] == pytest.approx(0.5)
    # a rotation of U: neutral (both singular values 1) but not the identity
    c, s_ = math.cos(0.3), math.sin(0.3)
    R = np.array([[c, -s_, 0], [s_, c, 0], [0, 0, 1.0]])
    rot = rm.restricted_norms(R @ Q, Q)
    assert rot["gain"] == pytest.approx(1) and rot["gain_min"] == pytest.approx(1)
    assert rot["deviation_U"] == pytest.approx(2 * math.sin(0.15))
    assert r["deviation"] == pytest.approx(1.0) and r["deviation_U"] == pytest.approx(1.0)
    # a leak from U into U_perp: J e1 = e1 + e3. Compressed to U it is the identity, so
    # deviation_U = 0 and gain = 1; deviation = ||(J - I) Q|| sees the leak
    J = np.eye(3)
    J[2, 0] = 1.0
    r = rm.restricted_norms(J @ Q, Q)
    assert r["deviation_U"] == pytest.approx(0, abs=1e-15) and r["gain"] == pytest.approx(1)
    assert r["deviation"] == pytest.approx(1.0)
    assert r["amplification"] == pytest.approx(math.sqrt(2))
    np.testing.assert_allclose(rm.compression(J @ Q, Q), np.eye(2))
    assert rm.restricted_norms(np.zeros((3, 0)), np.zeros((3, 0)))["gain"] == 0.0
    with pytest.raises(ValueError, match="orthonormal"):
        rm.restricted_norms(2 * Q, 2 * Q)
    with pytest.raises(ValueError, match="shape"):
        rm.restricted_norms(np.eye(3), Q)


def test_return_map_jacobian_affine():
    model = rnn("token_gated_rnn", d=4, seed=1)
    word = [1, 2, 0, 2, 1]
    g = torch.Generator().manual_seed(0)
    h1, h2 = (torch.randn(4, generator=g, dtype=torch.float64) for _ in range(2))
    J1 = rm.return_map_jacobian(model, word, h1)
    J2 = rm.return_map_jacobian(model, word, h2)
    assert J1.shape == (4, 4) and J1.dtype == torch.float64
    torch.testing.assert_close(J1, J2, rtol=1e-12, atol=1e-12)
    J = torch.eye(4, dtype=torch.float64)
    for x in word:
        J = rm.return_map_jacobian(model, [x], h1) @ J  # last token on the left
    torch.testing.assert_close(J1, J, rtol=1e-12, atol=1e-12)
    # J Q by columns is J times Q, and the norms read it
    Q = random_basis(4, 2, seed=2)
    JQ = rm.jacobian_columns(model, word, h1, Q)
    torch.testing.assert_close(JQ, J1 @ Q, rtol=1e-12, atol=1e-12)
    want = np.linalg.norm(J1.numpy() @ Q.numpy() - Q.numpy(), 2)
    assert rm.return_map_checks(model, word, h1, Q)["deviation"] == pytest.approx(want)
    # the return map itself: F(h) = state after the word
    F = rm.return_map(model, word)
    want = dg.state_trajectory(model, torch.tensor([word]), h0=h1[None])[0, -1]
    torch.testing.assert_close(F(h1), want)
    # a tanh RNN is state-dependent: its Jacobian changes with h
    tanh = rnn("tanh_rnn", d=4)
    assert not torch.allclose(rm.return_map_jacobian(tanh, word, h1),
                              rm.return_map_jacobian(tanh, word, 3 * h2))


def test_a_conv_window_is_neither_perturbed_nor_read():
    """Mamba's state holds its conv window besides the recurrent entries: J is
    (D_rec, D_rec), and J Q for a Q supported on recurrent entries has D_rec rows."""
    torch.manual_seed(3)
    model = build("mamba", 3, 3, d_model=4, d_state=3).double()
    mask = model.recurrent_mask
    assert not mask.all()
    h = dg.state_trajectory(model, torch.tensor([[2, 1, 1, 0]]))[0, -1]
    J = rm.return_map_jacobian(model, [1, 2, 0], h)
    assert J.shape == (int(mask.sum()),) * 2
    Q = torch.zeros(model.state_size, 2, dtype=torch.float64)
    Q[mask] = random_basis(int(mask.sum()), 2, seed=4)
    torch.testing.assert_close(rm.jacobian_columns(model, [1, 2, 0], h, Q), J @ Q[mask],
                               rtol=1e-12, atol=1e-13)


def test_return_map_rejects_bad_inputs():
    model = rnn("linear_rnn", d=4)
    with pytest.raises(ValueError, match="h must have shape"):
        rm.return_map_jacobian(model, [0, 1], torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="at least one token"):
        rm.return_map(model, np.zeros(0, dtype=np.int64))
    with pytest.raises(ValueError, match="tokens must lie"):
        rm.return_map(model, [0, 7])
    with pytest.raises(ValueError, match="Q must have shape"):
        rm.jacobian_columns(model, [0], torch.zeros(4, dtype=torch.float64), torch.zeros(3, 1))
    assert rm.jacobian_columns(model, [0], torch.zeros(4, dtype=torch.float64),
                               torch.zeros(4, 0)).shape == (4, 0)
