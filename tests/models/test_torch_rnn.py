"""torch.nn.GRU / torch.nn.LSTM as registry models (sst_core.models.torch_rnn): the step
formulas against torch's own cells, the fused path against step unrolled (value and
gradient, lengths 1, 63, 1000), the torch.func fallback used under vmap, and the class
(state-dependent: the Jacobian moves with the state). The face shared with every registry
model (shapes, forward == step unrolled, affine numerically, fitting C2) is checked for
these names by test_registry.py, and stacked training's vmap by test_stacked.py."""
from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from sst_core.models import build
from sst_core.models.torch_rnn import GRULayer, LSTMLayer, torch_module

from .contract import (
    check_forward_matches_step,
    check_outputs_match_step,
    check_scan_matches_step,
    recurrent_jacobian,
    tiny,
)

pytestmark = pytest.mark.usefixtures("one_thread")

f64 = torch.float64
NAMES = ["torch_gru", "torch_lstm"]


def layer(cls, d_in: int = 3, d: int = 4, seed: int = 0):
    torch.manual_seed(seed)
    return cls(d_in, d).double()


def test_gru_step_is_torchs_gru_cell():
    lay = layer(GRULayer)
    cell = nn.GRUCell(3, 4).double()
    cell.load_state_dict({k.replace("_l0", ""): v for k, v in lay.rnn.state_dict().items()})
    g = torch.Generator().manual_seed(1)
    h, u = torch.randn(5, 4, generator=g, dtype=f64), torch.randn(5, 3, generator=g, dtype=f64)
    h_next, y = lay.step(h, u)
    torch.testing.assert_close(h_next, cell(u, h), rtol=1e-12, atol=1e-14)
    assert y is h_next


def test_lstm_step_is_torchs_lstm_cell_with_state_h_then_c():
    lay = layer(LSTMLayer)
    assert lay.state_size == 8 and lay.d_out == 4
    cell = nn.LSTMCell(3, 4).double()
    cell.load_state_dict({k.replace("_l0", ""): v for k, v in lay.rnn.state_dict().items()})
    g = torch.Generator().manual_seed(1)
    h, c, u = (torch.randn(5, n, generator=g, dtype=f64) for n in (4, 4, 3))
    state, y = lay.step(torch.cat([h, c], -1), u)
    h_want, c_want = cell(u, (h, c))
    torch.testing.assert_close(state, torch.cat([h_want, c_want], -1), rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(y, h_want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n_layers", [1, 2])
def test_forward_matches_step(name, n_layers):
    check_forward_matches_step(tiny(name, n_layers))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("L", [1, 63, 1000])
def test_scan_and_outputs_match_step_in_value_and_gradient(name, L):
    for lay in tiny(name, 2).layers:  # the first layer reads one-hot width 3, the second h
        check_scan_matches_step(lay, L)
        if L < 1000:
            check_outputs_match_step(lay, L, with_h0=True)
            check_outputs_match_step(lay, L, with_h0=False)


@pytest.mark.parametrize("name", NAMES)
def test_the_formula_loop_under_vmap_equals_the_fused_module(name):
    """aten::gru / aten::lstm have no batching rule: under a torch.func transform the layer
    runs its formulas, which give the fused path's states and outputs; K stacked models
    under vmap (stacked training) give each model's own logits."""
    lay = tiny(name, 2).layers[1]
    g = torch.Generator().manual_seed(0)
    u = torch.randn(3, 17, lay.d_in, generator=g, dtype=f64)  # (b, L, d_in)
    h0 = 0.5 * torch.randn(3, lay.state_size, generator=g, dtype=f64)  # (b, D)
    hs, ys = lay.scan(u, h0)  # fused
    vhs, vys = vmap(lambda u, h: tuple(z[0] for z in lay.scan(u[None], h[None])))(u, h0)
    vout = vmap(lambda u, h: lay.outputs(u[None], h[None])[0])(u, h0)
    torch.testing.assert_close(vhs, hs, rtol=1e-12, atol=1e-13)
    torch.testing.assert_close(vys, ys, rtol=1e-12, atol=1e-13)
    torch.testing.assert_close(vout, ys, rtol=1e-12, atol=1e-13)
    models = [tiny(name, 2, seed=k) for k in range(3)]
    params, buffers = stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")
    x = torch.randint(0, 3, (3, 2, 11), generator=g)  # (K, b, L)
    out = vmap(lambda p, b, x: functional_call(base, (p, b), (x,)))(params, buffers, x)
    for k, m in enumerate(models):
        torch.testing.assert_close(out[k], m(x[k]), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name", NAMES)
def test_a_state_dict_loads_into_a_plain_torch_module(name):
    """The weights are torch's own: a single-layer model's layer loads into nn.GRU/LSTM
    and gives the same outputs on one-hot tokens."""
    torch.manual_seed(0)
    model = build(name, 6, 6, d_state=5).double()
    kind = nn.GRU if name == "torch_gru" else nn.LSTM
    raw = kind(6, 5, batch_first=True).double()
    raw.load_state_dict(model.layers[0].rnn.state_dict())
    x = torch.randint(0, 6, (2, 30), generator=torch.Generator().manual_seed(0))
    want = raw(nn.functional.one_hot(x, 6).double())[0]
    torch.testing.assert_close(model.hidden_states(x)[-1], want, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name", NAMES)
def test_torch_module_is_the_whole_stack_as_one_torch_module(name):
    model = tiny(name, 3)
    raw = torch_module(model)
    assert raw.num_layers == 3 and raw.batch_first and not raw.training
    x = torch.randint(0, 3, (2, 25), generator=torch.Generator().manual_seed(0))
    want = raw(nn.functional.one_hot(x, 3).double())[0]  # (2, 25, 4)
    torch.testing.assert_close(model.hidden_states(x)[-1], want, rtol=1e-12, atol=1e-13)
    with pytest.raises(ValueError, match="'tanh_rnn' is not a torch_gru / torch_lstm stack"):
        torch_module(build("tanh_rnn", 3, 3))


@pytest.mark.parametrize("name", NAMES)
def test_the_jacobian_moves_with_the_state(name):
    lay = tiny(name).layers[0]
    g = torch.Generator().manual_seed(0)
    u = torch.randn(lay.d_in, generator=g, dtype=f64)
    h1, h2 = torch.randn(2, lay.state_size, generator=g, dtype=f64)
    J1, J2 = recurrent_jacobian(lay, h1, u)[0], recurrent_jacobian(lay, h2, u)[0]
    assert not lay.is_affine and (J1 - J2).abs().max() > 1e-3


@pytest.mark.parametrize("name", NAMES)
def test_widths_and_bad_sizes(name):
    model = build(name, 6, 3, d_state=7, n_layers=3)
    per = 7 if name == "torch_gru" else 14
    assert [l.state_size for l in model.layers] == [per] * 3 and model.state_size == 3 * per
    assert [l.d_in for l in model.layers] == [6, 7, 7] and model.d_model == 7
    assert not model.is_affine
    with pytest.raises(ValueError, match="d_state must be a positive int, got 0"):
        GRULayer(3, 0)
    with pytest.raises(ValueError, match="n_layers must be a positive int, got 0"):
        build(name, 6, 3, n_layers=0)
