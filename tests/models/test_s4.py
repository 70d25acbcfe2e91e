"""S4D kernel, layer and model: parametrisation, freezing, optimiser groups, frozen share,
validation, and the supremum memory function."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from sst_core.models.s4 import (
    INIT_KINDS,
    REAL_MAX,
    S4DKernel,
    S4DLayer,
    S4DModel,
    frozen_share,
    memory_functions,
    optimizer_groups,
    supremum_memory_function,
)
from sst_core.ops.ssm_kernel import fft_conv, recurrence_ref
from sst_core.theory.memory import init_Lambda

pytestmark = pytest.mark.usefixtures("one_thread")

SPECTRUM = ("log_dt", "log_neg_real", "imag")


def tiny(**kw):
    args = dict(H=4, N=4, n_layers=2, seed=0)
    args.update(kw)
    torch.manual_seed(0)
    return S4DModel(5, 3, **args)


def tokens(b=4, L=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(5, (b, L), generator=g), torch.randint(3, (b,), generator=g)


# -- kernel --------------------------------------------------------------------------------

@pytest.mark.parametrize("disc", ["zoh", "bilinear"])
def test_kernel_convolution_is_the_recurrence(disc):
    """K from the stored parameters, convolved, equals the recurrence with Lambda, dt, C (B = 1)."""
    torch.set_default_dtype(torch.float64)
    try:
        kernel = S4DKernel(3, 8, init="inv", disc=disc, seed=1)
    finally:
        torch.set_default_dtype(torch.float32)
    u = torch.randn(2, 3, 40, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    C = torch.view_as_complex(kernel.C)  # (3, 4)
    with torch.no_grad():
        want = recurrence_ref(kernel.Lambda, kernel.dt, None, C, None, u, disc)
        got = fft_conv(u, kernel(40))
    assert kernel(40).shape == (3, 40)
    torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-10)


def test_kernel_parametrisation():
    kernel = S4DKernel(6, 8, dt_min=1e-3, dt_max=1e-1, init="lin", seed=0)
    assert kernel.log_dt.shape == (6,) and kernel.log_neg_real.shape == kernel.imag.shape == (6, 4)
    assert kernel.C.shape == (6, 4, 2)
    assert torch.all((kernel.dt >= 1e-3) & (kernel.dt <= 1e-1))
    want = torch.from_numpy(init_Lambda("lin", 8)).to(torch.complex64)
    torch.testing.assert_close(kernel.Lambda, want.expand(6, 4))
    assert {n for n, _ in kernel.named_parameters()} == {"log_dt", "log_neg_real", "imag", "C"}
    assert dict(kernel.named_buffers()) == {}
    # a seed fixes everything; channels share the spectrum
    again = S4DKernel(6, 8, init="lin", seed=0, channels=2)
    torch.testing.assert_close(again.log_dt, kernel.log_dt)
    assert again.C.shape == (2, 6, 4, 2) and again(10).shape == (2, 6, 10)


@pytest.mark.parametrize("init", INIT_KINDS)
def test_every_init_kind_builds(init):
    model = tiny(init=init)
    for layer in model.layers:
        Lambda, dt = layer.kernel.Lambda, layer.kernel.dt
        assert torch.all(Lambda.real < 0)
        if init == "random":  # each channel uniform in the disk at its own dt: |mu| < 1
            mu = torch.exp(dt[:, None] * Lambda)
            assert torch.all(mu.abs() < 1) and not torch.allclose(Lambda[0], Lambda[1])
        else:
            want = torch.from_numpy(init_Lambda(init, 4)).to(torch.complex64)
            torch.testing.assert_close(Lambda, want.expand(4, 2))
    logits = model(tokens()[0])
    assert logits.shape == (4, 3) and torch.all(torch.isfinite(logits))


def test_explicit_spectrum_and_unstable_eigenvalues():
    Lambda = np.array([-1.0 + 2j, 0.0 + 3j])  # Re = 0 is stored as REAL_MAX
    kernel = S4DKernel(2, 4, init=Lambda)
    got = kernel.Lambda.detach().numpy()
    np.testing.assert_allclose(got.real, [[-1.0, REAL_MAX]] * 2, rtol=1e-6)
    np.testing.assert_allclose(got.imag, [[2.0, 3.0]] * 2)
    with pytest.raises(ValueError, match=r"unstable eigenvalue Lambda=\(0\.25\+1j\)"):
        S4DKernel(2, 4, init=np.array([-1.0, 0.25 + 1j]))
    with pytest.raises(ValueError, match="not finite"):
        S4DKernel(2, 4, init=np.array([-1.0, np.nan]))
    with pytest.raises(ValueError, match=r"shape \(N/2,\)=\(2,\) or \(H, N/2\)=\(2, 2\)"):
        S4DKernel(2, 4, init=np.array([-1.0, -2.0, -3.0]))


@pytest.mark.parametrize("kwargs, message", [
    (dict(N=5), "N=5 must be an even integer >= 2"),
    (dict(N=0), "N=0 must be an even integer"),
    (dict(H=0), "H=0 must be an integer >= 1"),
    (dict(n_layers=0), "n_layers=0"),
    (dict(init="legs"), "unknown init kind 'legs'; allowed: 'inv', 'lin', 'real', 'random', 'step'"),
    (dict(disc="euler"), "unknown discretisation 'euler'; allowed: 'zoh', 'bilinear'"),
    (dict(norm="group"), "unknown norm 'group'; allowed: 'batch', 'layer'"),
    (dict(decoder="cls"), "unknown decoder 'cls'; allowed: 'pool', 'last'"),
    (dict(encoder="conv"), "unknown encoder 'conv'; allowed: 'embedding', 'linear'"),
    (dict(activation="tanh"), "unknown activation 'tanh'; allowed: 'gelu'"),
    (dict(postact="swiglu"), "unknown postact 'swiglu'; allowed: 'glu', None"),
    (dict(dt_min=0.2, dt_max=0.1), "dt_min=0.2, dt_max=0.1"),
    (dict(dropout=1.0), "dropout=1.0"),
])
def test_bad_names_and_sizes_raise(kwargs, message):
    with pytest.raises(ValueError) as info:
        tiny(**kwargs)
    assert message in str(info.value)


# -- layer and model ---------------------------------------------------------------------

def test_layer_shapes_and_bidirectionality():
    """A causal layer's output at t = 0 ignores later inputs; a bidirectional one does not."""
    for bidirectional in (False, True):
        torch.manual_seed(0)
        layer = S4DLayer(4, 8, bidirectional=bidirectional, seed=0)
        assert layer.kernel.C.shape == ((2 if bidirectional else 1), 4, 4, 2)
        assert layer.kernel_full(9).shape == (1, 4, 18 if bidirectional else 9)
        x = torch.randn(2, 9, 4, requires_grad=True)
        y = layer(x)
        assert y.shape == (2, 9, 4)
        (grad,) = torch.autograd.grad(y[:, 0].sum(), x)
        leak = grad[:, 1:].abs().max() / grad[:, 0].abs().max()  # FFT rounding: about 1e-9
        assert (leak > 1e-3) if bidirectional else (leak < 1e-6), leak
    plain = S4DLayer(4, 8, postact=None, channels=2)
    assert plain.output_linear.in_features == 8 and plain.output_linear.out_features == 4
    assert plain.D.shape == (2, 4) and plain(torch.randn(1, 5, 4)).shape == (1, 5, 4)


@pytest.mark.parametrize("decoder", ["pool", "last"])
@pytest.mark.parametrize("prenorm", [False, True])
def test_lengths_ignore_padding(decoder, prenorm):
    """Causal model in eval mode: a padded sequence with its length gives the logits of the
    unpadded one."""
    model = tiny(decoder=decoder, prenorm=prenorm).eval()
    x, _ = tokens(b=2, L=12)
    with torch.no_grad():
        padded = model(x, lengths=torch.tensor([7, 12]))
        alone = model(x[:1, :7])
    torch.testing.assert_close(padded[:1], alone, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="lengths"):
        model(x, lengths=torch.tensor([0, 12]))


def test_linear_encoder_and_layer_norm_in_double():
    torch.manual_seed(0)
    model = S4DModel(1, 10, H=4, N=4, n_layers=1, encoder="linear", norm="layer",
                     prenorm=True, bidirectional=True, disc="bilinear").double()
    x = torch.randn(3, 16, dtype=torch.float64)  # (b, L) pixels
    out = model(x)
    assert out.shape == (3, 10) and out.dtype == torch.float64
    torch.testing.assert_close(model(x[..., None]), out)
    assert len(model.hidden_states(x)) == 1


# -- freezing, optimiser groups, frozen share ---------------------------------------------

def test_frozen_spectrum_is_in_buffers_and_stays_fixed():
    model = tiny(freeze_spectrum=True, dropout=0.1)
    names = {n.rsplit(".", 1)[-1] for n, _ in model.named_parameters()}
    buffers = {n.rsplit(".", 1)[-1] for n, _ in model.named_buffers()}
    assert not names & set(SPECTRUM) and set(SPECTRUM) <= buffers
    groups = optimizer_groups(model, lr=1e-2, weight_decay=0.1, ssm_lr=1e-3)
    assert [g["name"] for g in groups] == ["main"]
    in_groups = {id(p) for g in groups for p in g["params"]}
    assert in_groups == {id(p) for p in model.parameters()}
    spectrum = {n: b.clone() for n, b in model.named_buffers() if n.endswith(SPECTRUM)}
    learned = {n: p.detach().clone() for n, p in model.named_parameters()
               if n.endswith((".C", ".D"))}
    assert len(spectrum) == 3 * 2 and len(learned) == 2 * 2

    opt = torch.optim.AdamW(groups)
    x, y = tokens()
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    after = dict(model.named_buffers())
    for n, before in spectrum.items():
        assert torch.equal(after[n], before), n
    params = dict(model.named_parameters())
    for n, before in learned.items():
        assert not torch.equal(params[n], before), n


def test_optimizer_groups_with_a_learned_spectrum():
    model = tiny()
    groups = {g["name"]: g for g in optimizer_groups(model, lr=1e-2, weight_decay=0.05, ssm_lr=1e-3)}
    ssm = {id(p) for n, p in model.named_parameters() if n.endswith(SPECTRUM)}
    assert {id(p) for p in groups["ssm"]["params"]} == ssm and len(ssm) == 3 * 2
    assert groups["ssm"]["lr"] == 1e-3 and groups["ssm"]["weight_decay"] == 0.0
    assert groups["main"]["lr"] == 1e-2 and groups["main"]["weight_decay"] == 0.05
    main = {id(p) for p in groups["main"]["params"]}
    assert not main & ssm and main | ssm == {id(p) for p in model.parameters()}
    default = {g["name"]: g for g in optimizer_groups(model, lr=3e-3, weight_decay=0.0)}
    assert default["ssm"]["lr"] == 3e-3
    torch.optim.AdamW(list(default.values()))  # accepted as given
    assert model.frozen_share == frozen_share(model) == 0.0


def test_frozen_share_by_hand():
    model = S4DModel(5, 3, H=4, N=4, n_layers=1, freeze_spectrum=True)
    # embedding 5*4; kernel: log_dt 4, log_neg_real 4*2, imag 4*2 (frozen), C 1*4*2*2; D 1*4;
    # output linear 4*8 + 8; batch norm 4 + 4; decoder 4*3 + 3
    frozen = 4 + 8 + 8
    total = 20 + frozen + 16 + 4 + 40 + 8 + 15
    assert model.frozen_share == pytest.approx(frozen / total) == frozen_share(model)
    assert 0 < model.frozen_share < 1
    model.decoder.weight.requires_grad_(False)  # a frozen parameter counts too
    assert frozen_share(model) == pytest.approx((frozen + 12) / total)


# -- memory functions ---------------------------------------------------------------------

def test_supremum_memory_function():
    model = tiny(init="inv")
    sup = supremum_memory_function(model, 16)
    assert len(sup) == 2 and all(m.shape == (16,) for m in sup)
    per_channel = memory_functions(model.layers[0], 16)
    assert per_channel.shape == (4, 16)
    np.testing.assert_allclose(sup[0], per_channel.max(0))
    for M in [*sup, per_channel]:
        assert np.all((M >= 0) & (M <= 1 + 1e-12))
    # memory capacity: each channel's N = 4 distinct eigenvalues
    np.testing.assert_allclose(per_channel.sum(1), 4.0, rtol=1e-9)
    np.testing.assert_allclose(memory_functions(model.layers[0].kernel, 16), per_channel)
    with pytest.raises(ValueError, match="S4DLayer or S4DKernel"):
        memory_functions(nn.Linear(2, 2), 16)


# -- the channels-first layout against the (b, L, H) formulation ---------------------------

def _layer_blh(layer, x):
    """S4DLayer on (b, L, H) in plain ops, as written before the channels-first layout."""
    from sst_core.ops.ssm_kernel import _fft_conv_plain

    b, L, H = x.shape
    u = x.transpose(1, 2)  # (b, H, L)
    y = _fft_conv_plain(u.unsqueeze(1), layer.kernel_full(L)) + layer.D[..., None] * u[:, None]
    y = layer.dropout(layer.activation(y.reshape(b, layer.channels * H, L)))
    return layer.postact(layer.output_linear(y.transpose(1, 2)))  # (b, L, H)


def _norm_blh(norm, x):
    if norm.kind == "batch":
        return norm.norm(x.transpose(1, 2)).transpose(1, 2)
    return norm.norm(x)


def _model_blh(model, x, lengths):
    """S4DModel.forward in the (b, L, H) layout, plain ops (pool and last decoders)."""
    h = model.encode(x)  # (b, L, H)
    for layer, norm, drop in zip(model.layers, model.norms, model.dropouts):
        if model.prenorm:
            h = h + drop(_layer_blh(layer, _norm_blh(norm, h)))
        else:
            h = _norm_blh(norm, h + drop(_layer_blh(layer, h)))
    if model.prenorm:
        h = _norm_blh(model.final_norm, h)
    b, L, _ = h.shape
    if model.decoder_kind == "pool":
        mask = (torch.arange(L) < lengths[:, None]).to(h.dtype)
        z = (h * mask[..., None]).sum(1) / lengths[:, None].to(h.dtype)
    else:
        z = h[torch.arange(b), lengths - 1]
    return model.decoder(z)


@pytest.mark.parametrize("norm", ["batch", "layer"])
@pytest.mark.parametrize("prenorm", [False, True])
@pytest.mark.parametrize("decoder", ["pool", "last"])
@pytest.mark.parametrize("encoder", ["embedding", "linear"])
def test_channels_first_model_is_the_blh_model(norm, prenorm, decoder, encoder):
    """Logits and every gradient equal the (b, L, H) formulation (float64), in training mode
    with dropout (the same masks under the same seed) and in eval mode."""
    torch.manual_seed(0)
    d_input = 5 if encoder == "embedding" else 1
    model = S4DModel(d_input, 3, H=4, N=4, n_layers=2, encoder=encoder, norm=norm,
                     prenorm=prenorm, decoder=decoder, bidirectional=True, dropout=0.2,
                     seed=0).double()
    g = torch.Generator().manual_seed(1)
    x = (torch.randint(5, (3, 11), generator=g) if encoder == "embedding"
         else torch.randn(3, 11, generator=g, dtype=torch.float64))
    lengths = torch.tensor([11, 4, 8])
    y = torch.tensor([0, 2, 1])
    for mode in ("train", "eval"):
        model.train(mode == "train")
        out = []
        for fn in (lambda: model(x, lengths=lengths), lambda: _model_blh(model, x, lengths)):
            torch.manual_seed(5)
            logits = fn()
            grads = torch.autograd.grad(nn.functional.cross_entropy(logits, y),
                                        model.parameters())
            out.append((logits, grads))
        (a, ga), (b, gb) = out
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
        for (name, _), u, v in zip(model.named_parameters(), ga, gb):
            torch.testing.assert_close(u, v, rtol=1e-9, atol=1e-12,
                                       msg=lambda m: f"{mode} {name}: {m}")


@pytest.mark.parametrize("channels, postact, bidirectional",
                         [(1, "glu", True), (2, "glu", False), (2, None, True)])
def test_layer_forward_cf_is_the_blh_layer(channels, postact, bidirectional):
    torch.manual_seed(0)
    layer = S4DLayer(4, 8, channels=channels, postact=postact, bidirectional=bidirectional,
                     seed=0).double()
    x = torch.randn(2, 9, 4, dtype=torch.float64)
    want = _layer_blh(layer, x)
    torch.testing.assert_close(layer(x), want, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(layer.forward_cf(x.transpose(1, 2).contiguous()),
                               want.transpose(1, 2), rtol=1e-10, atol=1e-12)


def test_norm_forward_cf_is_the_blh_norm():
    from sst_core.models.s4 import _Norm

    x = torch.randn(3, 7, 4, dtype=torch.float64)
    for kind in ("batch", "layer"):
        norm = _Norm(kind, 4).double()
        with torch.no_grad():
            norm.norm.weight.uniform_(0.5, 1.5)
            norm.norm.bias.uniform_(-1, 1)
        want = _norm_blh(norm, x)
        torch.testing.assert_close(norm(x), want)
        torch.testing.assert_close(norm.forward_cf(x.transpose(1, 2)), want.transpose(1, 2))
