"""Semi-affine (Negative) Mamba: Mamba plus P tanh(Q h + c) (sst_core.models.semi_affine)."""
from __future__ import annotations

import pytest
import torch
from torch.func import functional_call, grad, stack_module_state, vmap

from sst_core.models import build, expected_affine
from sst_core.models.semi_affine import SemiAffineMambaLayer
from sst_core.ops import native

from .contract import (
    check_forward_matches_step,
    check_long_scan,
    check_scan_matches_step,
    f64,
    recurrent_jacobian,
    tiny,
)

pytestmark = pytest.mark.usefixtures("one_thread")

NAMES = ["semi_affine_mamba", "semi_affine_negative_mamba"]
PLAIN = {"semi_affine_mamba": "mamba", "semi_affine_negative_mamba": "negative_mamba"}
CORRECTION = ("P", "Q", "c")


def without_correction(model):
    """Set P = 0 in ``model`` (in place); return the plain model with its other weights."""
    with torch.no_grad():
        for layer in model.layers:
            layer.P.zero_()
    plain = build(PLAIN[model.name], model.n_tokens, model.n_classes,
                  d_model=model.d_model, d_state=model.layers[0].cfg.d_state,
                  n_layers=len(model.layers)).double()
    plain.load_state_dict({k: v for k, v in model.state_dict().items()
                           if k.rsplit(".", 1)[-1] not in CORRECTION})
    return plain


# -- step, scan, outputs and forward agree ---------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n_layers", [1, 2])
def test_forward_matches_step(name, n_layers):
    torch.manual_seed(0)
    check_forward_matches_step(tiny(name, n_layers))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("L", [1, 63, 1000])
def test_scan_matches_step_in_value_and_gradient(name, L):
    """hs and ys, and their gradients w.r.t. u, h0 and every parameter (P, Q, c included)."""
    check_scan_matches_step(tiny(name).layers[0], L)


@pytest.mark.parametrize("name", NAMES)
def test_long_scan_in_pieces(name):
    """Without gradients, scan runs in EVAL_CHUNK pieces and still equals step unrolled."""
    check_long_scan(tiny(name).layers[0])


@pytest.mark.parametrize("L", [1, 63, 1000])
def test_outputs_equal_scan_in_value_and_gradient(L):
    layer = tiny("semi_affine_negative_mamba").layers[0]
    g = torch.Generator().manual_seed(L)
    u = torch.randn(2, L, layer.d_in, generator=g, dtype=f64)
    h0 = 0.5 * torch.randn(2, layer.state_size, generator=g, dtype=f64)
    w = torch.randn(2, L, layer.d_out, generator=g, dtype=f64)
    grads = []
    for fn in (layer.outputs, lambda u, h0: layer.scan(u, h0)[1]):
        leaves = [u.clone().requires_grad_(), h0.clone().requires_grad_()]
        ys = fn(*leaves)
        grads.append([ys.detach()] + list(torch.autograd.grad(
            (ys * w).sum(), leaves + list(layer.parameters()))))
    for got, want in zip(*grads):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
    with torch.no_grad():  # the chunked path of outputs (L > EVAL_CHUNK)
        torch.testing.assert_close(layer.outputs(u, h0), grads[1][0], rtol=1e-10, atol=1e-12)


# -- P = 0 is the affine original ------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_zero_P_gives_the_plain_model_exactly(name):
    """With P = 0 the correction is an exact 0 and both run h = addcmul(bu, a, h) in the same
    order, so the logits are bit for bit the plain model's on the torch path of its fused
    scan; its C loops (own exp, fused multiply-adds) agree to rounding."""
    model = tiny(name, 2, d_model=8, d_state=4)
    plain = without_correction(model)
    tokens = torch.randint(0, 3, (4, 200), generator=torch.Generator().manual_seed(3))
    with native.disabled():
        assert torch.equal(model(tokens), plain(tokens))
    torch.testing.assert_close(model(tokens), plain(tokens), rtol=1e-12, atol=1e-13)
    h, h_plain = model.init_state(4), plain.init_state(4)
    for t in range(20):  # one step at a time (MambaLayer.step rounds a h + bu apart)
        h, z = model.step_logits(h, tokens[:, t])
        h_plain, z_plain = plain.step_logits(h_plain, tokens[:, t])
        torch.testing.assert_close(z, z_plain, rtol=1e-13, atol=1e-14)
    torch.testing.assert_close(h, h_plain, rtol=1e-13, atol=1e-14)


# -- the class: not affine, through the correction alone -------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_jacobian_depends_on_the_state_unless_P_is_zero(name):
    """d h_t / d h_{t-1} = diag(a_t) + P diag(1 - tanh^2(Q h + c)) Q on the SSM block: it
    changes with h (same input window); with P = 0 it is diag(a_t) at every h."""
    layer = tiny(name).layers[0]
    assert not layer.is_affine and not expected_affine(name)
    g = torch.Generator().manual_seed(4)
    u = torch.randn(layer.d_in, generator=g, dtype=f64)
    h1, h2 = torch.randn(2, layer.state_size, generator=g, dtype=f64)
    n = layer.n_ssm
    h2[n:] = h1[n:]  # the conv window is held fixed
    J1, J2 = recurrent_jacobian(layer, h1, u)[0], recurrent_jacobian(layer, h2, u)[0]
    assert (J1 - J2).abs().max() > 1e-3
    P, Q, c = (p.detach().clone() for p in (layer.P, layer.Q, layer.c))
    with torch.no_grad():
        layer.P.zero_()
    A1, A2 = recurrent_jacobian(layer, h1, u)[0], recurrent_jacobian(layer, h2, u)[0]
    torch.testing.assert_close(A1, A2, rtol=0, atol=0)
    torch.testing.assert_close(A1, torch.diag(A1.diagonal()))  # diagonal: a_t
    for h, J in ((h1, J1), (h2, J2)):
        sech2 = 1 - torch.tanh(Q @ h[:n] + c) ** 2  # (r,)
        torch.testing.assert_close(J, A1 + P @ (sech2[:, None] * Q), rtol=1e-10, atol=1e-12)


def test_init_is_close_to_affine_and_every_correction_parameter_learns():
    """At the quick profile's sizes: ||P Q|| about P_scale = 1e-2, and one backward
    gives P, Q and c nonzero gradients."""
    torch.manual_seed(0)
    model = build("semi_affine_negative_mamba", 6, 6, d_model=16, d_state=16)
    layer = model.layers[0]
    assert layer.Q.shape == (8, 512) and layer.P.shape == (512, 8) and layer.c.shape == (8,)
    norm = torch.linalg.matrix_norm(layer.P @ layer.Q, 2).item()
    assert 2e-3 < norm < 3e-2, norm
    tokens = torch.randint(0, 6, (4, 20), generator=torch.Generator().manual_seed(0))
    model(tokens).square().mean().backward()
    for p in (layer.P, layer.Q, layer.c):
        assert p.grad.abs().max() > 0


# -- vmap over stacked models (sst_core.training.stacked) ---------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_vmap_over_two_stacked_models_equals_two_calls(name):
    models = [tiny(name, 2, seed=s) for s in (0, 1)]
    params, buffers = stack_module_state(models)  # name -> (2, ...)
    base = tiny(name, 2).to("meta")
    tokens = torch.randint(0, 3, (2, 3, 17), generator=torch.Generator().manual_seed(5))

    def loss(p, b, x):
        return functional_call(base, (p, b), (x,)).square().mean()

    def logits(p, b, x):
        return functional_call(base, (p, b), (x,))

    stacked = vmap(logits)(params, buffers, tokens)  # (2, 3, 17, 3)
    grads = vmap(grad(loss))(params, buffers, tokens)
    for k, m in enumerate(models):
        torch.testing.assert_close(stacked[k], m(tokens[k]), rtol=1e-10, atol=1e-12)
        m.zero_grad()
        m(tokens[k]).square().mean().backward()
        for key, p in m.named_parameters():
            torch.testing.assert_close(grads[key][k], p.grad, rtol=1e-10, atol=1e-12)


# -- errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("rank", [0, -1, 2.5])
def test_bad_rank_raises(name, rank):
    with pytest.raises(ValueError, match=f"rank must be a positive int, got {rank!r}"):
        build(name, 3, 3, d_model=4, d_state=4, rank=rank)


@pytest.mark.parametrize("kw,match", [({"P_scale": -1.0}, "P_scale.*-1.0"),
                                      ({"bogus": 1}, "unknown option.*bogus.*rank"),
                                      ({"negative": False}, "negative")])
def test_other_bad_options_raise(kw, match):
    with pytest.raises(ValueError, match=match):
        build("semi_affine_negative_mamba", 3, 3, d_model=4, d_state=4, **kw)


def test_rank_sets_the_correction_shapes():
    layer = build("semi_affine_mamba", 3, 3, d_model=4, d_state=2, rank=3).layers[0]
    assert isinstance(layer, SemiAffineMambaLayer)
    assert layer.Q.shape == (3, 16) and layer.P.shape == (16, 3) and layer.c.shape == (3,)
    assert layer.conv_state_size == 3 * layer.d_inner  # the window, as in MambaLayer
    assert layer.state_size == 16 + layer.conv_state_size
