"""Linear attention (sst_core.models.attention, reference 4.7)."""
from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from sst_core.models import build
from sst_core.models.attention import causal_linear_attention

from .contract import check_affine, eigenvalues, overfit_c2, tiny

pytestmark = pytest.mark.usefixtures("one_thread")

CONFIGS = {  # name -> options
    "normalised": {},
    "heads_identity": {"n_heads": 2, "feature_map": "identity", "normalize": False},
}


def _positive_h0(layer, b: int, g: torch.Generator) -> torch.Tensor:
    """A start state with a positive normaliser z_0 (as after any positive keys)."""
    h0 = torch.randn(b, layer.state_size, generator=g, dtype=torch.float64)
    if layer.cfg.normalize:
        h0[:, layer.n_S:] = torch.rand(b, layer.state_size - layer.n_S, generator=g,
                                       dtype=torch.float64) + 0.5
    return h0


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("L", [1, 63, 64, 65, 1000])
@pytest.mark.parametrize("with_h0", [False, True])
def test_outputs_equal_scan_in_value_and_gradient(config, L, with_h0):
    """The blocked quadratic form (outputs) equals the readout of the state scan, and so do
    the gradients w.r.t. u, h0 and every parameter; L around the block size (64)."""
    layer = tiny("linear_attention", **CONFIGS[config]).layers[0]
    g = torch.Generator().manual_seed(L)
    u = torch.randn(2, L, layer.d_in, generator=g, dtype=torch.float64)
    h0 = _positive_h0(layer, 2, g) if with_h0 else None
    w = torch.randn(2, L, layer.d_out, generator=g, dtype=torch.float64)
    results = []
    for fn in (layer.outputs, lambda u, h0: layer.scan(u, h0)[1]):
        leaves = [u.clone().requires_grad_()] + ([h0.clone().requires_grad_()] if with_h0 else [])
        layer.zero_grad()
        y = fn(leaves[0], leaves[1] if with_h0 else None)
        (y * w).sum().backward()
        results.append([y.detach()] + [x.grad for x in leaves]
                       + [p.grad.clone() for p in layer.parameters()])
    for got, want in zip(*results):
        torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("block", [1, 5, 64])
def test_causal_linear_attention_by_hand(block):
    """Against the definition, position by position, for any block size (1: the recurrence
    itself; 5: blocks that do not divide L = 12)."""
    g = torch.Generator().manual_seed(block)
    b, L, H, dk, dv = 2, 12, 3, 4, 5
    q, k = (torch.rand(b, L, H, dk, generator=g, dtype=torch.float64) for _ in range(2))
    v = torch.randn(b, L, H, dv, generator=g, dtype=torch.float64)
    S0 = torch.randn(b, H, dv, dk, generator=g, dtype=torch.float64)
    z0 = torch.rand(b, H, dk, generator=g, dtype=torch.float64)
    got = causal_linear_attention(q, k, v, S0, z0, True, 1e-6, block)
    for t in range(L):
        S = S0 + torch.einsum("bshv,bshk->bhvk", v[:, :t + 1], k[:, :t + 1])
        z = z0 + k[:, :t + 1].sum(1)
        want = (S @ q[:, t, :, :, None])[..., 0] / ((z * q[:, t]).sum(-1, keepdim=True) + 1e-6)
        torch.testing.assert_close(got[:, t], want)
    plain = causal_linear_attention(q, k, v, normalize=False, block=block)
    torch.testing.assert_close(plain[:, -1], torch.einsum("bshv,bshk,bhk->bhv", v, k, q[:, -1]))





@pytest.mark.parametrize("config", CONFIGS)
def test_affine_with_identity_transition(config):
    layer = tiny("linear_attention", **CONFIGS[config]).layers[0]
    check_affine(layer)
    lam = eigenvalues(layer)
    torch.testing.assert_close(lam, torch.ones_like(lam))


def test_recurrence_by_hand():
    """S = S + v phi(k)^T, z = z + phi(k), y = W_o S phi(q) / (phi(q) . z + eps)."""
    layer = tiny("linear_attention", d_model=4, d_state=3).layers[0]
    u = torch.randn(4, dtype=torch.float64)
    S, z = torch.rand(4, 3, dtype=torch.float64), torch.rand(3, dtype=torch.float64)
    h_next, y = layer.step(torch.cat([S.flatten(), z])[None], u[None])
    phi = lambda x: F.elu(x) + 1  # noqa: E731
    q, k, v = phi(layer.q_proj(u)), phi(layer.k_proj(u)), layer.v_proj(u)
    S, z = S + torch.outer(v, k), z + k
    torch.testing.assert_close(h_next[0], torch.cat([S.flatten(), z]))
    torch.testing.assert_close(y[0], layer.out_proj(S @ q / (q @ z + layer.cfg.eps)))


def test_first_layer_sees_only_token_counts():
    """Why linear attention cannot fit parity (not even 32 fixed words): one layer's output
    at t depends on the current token and the multiset of earlier ones (with the
    normaliser, on their proportions), and parity is not a function of those."""
    model = tiny("linear_attention")
    tokens = torch.tensor([[0, 1, 1, 0, 2, 1], [2, 0, 1, 1, 0, 1], [1, 1, 0, 0, 2, 2]])
    logits = model(tokens)
    torch.testing.assert_close(logits[0, 5], logits[1, 5])  # 01102 vs 20110, then 1
    torch.testing.assert_close(logits[0, 3], logits[2, 3])  # 011 vs 110, then 0
    assert not torch.allclose(logits[0, 4], logits[1, 4])
    once, twice = model(torch.tensor([[0, 1, 2]])), model(torch.tensor([[0, 1, 2, 0, 1, 2]]))
    torch.testing.assert_close(once[0, -1], twice[0, -1])  # proportions, not counts


def test_overfits_c2_count_target():
    """Fits what it can express on the C2 words: whether an ``a`` occurred so far."""
    seen_a = lambda tokens, states: (tokens.cummax(1).values > 0).long()  # noqa: E731
    assert overfit_c2("linear_attention", target=seen_a) >= 0.95


@pytest.mark.parametrize("kw,match", [
    ({"n_heads": 3}, "n_heads 3 must divide d_model 8"),
    ({"feature_map": "relu"}, "unknown feature_map 'relu'; allowed: elu\\+1, identity"),
    ({"feature_map": "identity"}, "positive feature map"),
    ({"d_state": 0}, "d_state"),
])
def test_impossible_sizes_raise(kw, match):
    with pytest.raises(ValueError, match=match):
        build("linear_attention", 3, 3, **{"d_model": 8, "d_state": 4, **kw})
