"""``torch.nn.GRU`` and ``torch.nn.LSTM`` as registry models (issue 22: the error-control
diagnostics on models the book did not write).

Each layer wraps one single-layer torch module, so the weights are torch's own parameters
(``weight_ih_l0``, ``weight_hh_l0``, ``bias_ih_l0``, ``bias_hh_l0``, torch's gate order and
initialisation) and a state dict loads into a plain ``nn.GRU`` / ``nn.LSTM``:

===========  ===================================================  ================
layer        one step (torch's formulas, ``sigma`` the logistic)  state
===========  ===================================================  ================
GRULayer     ``r = sigma(W_ir u + b_ir + W_hr h + b_hr)``           ``h`` (d)
             ``z = sigma(W_iz u + b_iz + W_hz h + b_hz)``
             ``n = tanh(W_in u + b_in + r * (W_hn h + b_hn))``
             ``h' = (1 - z) * n + z * h``
LSTMLayer    ``i, f, o = sigma(.)``, ``g = tanh(.)`` of                ``[h; c]`` (2d)
             ``W_i u + b_i + W_h h + b_h`` (rows i, f, g, o)
             ``c' = f * c + i * g``, ``h' = o * tanh(c')``
===========  ===================================================  ================

The output is ``h`` in both. As in the RNN family of :mod:`sst_core.models.cells`, the
first layer reads one-hot tokens (``W_i`` holds the embedding as its columns), the layers
above read the previous layer's ``h``, layers are stacked directly (no residual stream, no
final norm) and the hidden size is ``d_state`` (``d_model`` is not used). Both gates read
``h``, so neither recurrence is affine.

Paths. ``outputs`` (what ``forward`` uses) runs the fused torch module; ``step`` runs the
formulas above (:func:`gru_step`, :func:`lstm_step`) on the same parameters, and
:mod:`sst_core.analysis.any_model` reuses them for a raw ``nn.GRU`` / ``nn.LSTM``
(:func:`torch_module` gives the plain torch module of a registry model). The
fused kernels (``aten::gru``, ``aten::lstm``) have no ``torch.func`` batching rule, so
under a transform (``vmap`` in stacked training, ``jacrev``) ``outputs`` runs the formulas
in a loop instead, with the input projections of every step in one matmul. An LSTM's
``scan`` takes ``h`` from the fused module and rebuilds the cells ``c`` from it: with every
``h_{t-1}`` known, the gates of all steps are one batched product and
``c_t = f_t c_{t-1} + i_t g_t`` is an elementwise loop.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from sst_core.models.base import RecurrentLayer, SequenceModel
from sst_core.models.registry import check_size

__all__ = ["gru_step", "lstm_step", "gru_update", "lstm_update", "GRULayer", "LSTMLayer",
           "torch_gru", "torch_lstm", "torch_module", "transforms_active"]


def transforms_active() -> bool:
    """Whether a ``torch.func`` transform (vmap, grad, jvp, jacrev) is running: the fused
    kernels have no batching rule, so the layers run their formulas then."""
    return bool(torch._C._are_functorch_transforms_active())


# -- the formulas (shared with the adapter of a raw nn.GRU / nn.LSTM) ---------------------
def gru_update(gi: torch.Tensor, h: torch.Tensor, w_hh: torch.Tensor,
               b_hh: torch.Tensor | None) -> torch.Tensor:
    """One GRU step from the input part ``gi = W_i u + b_i`` (b, 3d) and the state ``h``
    (b, d): the next ``h`` (b, d), in ATen's order of operations."""
    gh = F.linear(h, w_hh, b_hh)  # (b, 3d)
    i_r, i_z, i_n = gi.chunk(3, -1)  # (b, d) each
    h_r, h_z, h_n = gh.chunk(3, -1)  # (b, d) each
    r = torch.sigmoid(i_r + h_r)
    z = torch.sigmoid(i_z + h_z)
    n = torch.tanh(i_n + r * h_n)
    return (h - n) * z + n  # (1 - z) n + z h


def gru_step(h: torch.Tensor, u: torch.Tensor, w_ih: torch.Tensor, w_hh: torch.Tensor,
             b_ih: torch.Tensor | None, b_hh: torch.Tensor | None) -> torch.Tensor:
    """``nn.GRU``'s step: ``h`` (b, d), input ``u`` (b, d_in) -> next ``h`` (b, d)."""
    return gru_update(F.linear(u, w_ih, b_ih), h, w_hh, b_hh)


def lstm_update(gi: torch.Tensor, h: torch.Tensor, c: torch.Tensor, w_hh: torch.Tensor,
                b_hh: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """One LSTM step from the input part ``gi = W_i u + b_i`` (b, 4d), ``h`` and ``c``
    (b, d each): the next ``(h, c)``."""
    gates = gi + F.linear(h, w_hh, b_hh)  # (b, 4d), rows i, f, g, o
    i, f, g, o = gates.chunk(4, -1)  # (b, d) each
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)  # (b, d)
    return torch.sigmoid(o) * torch.tanh(c), c


def lstm_step(h: torch.Tensor, c: torch.Tensor, u: torch.Tensor, w_ih: torch.Tensor,
              w_hh: torch.Tensor, b_ih: torch.Tensor | None, b_hh: torch.Tensor | None
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """``nn.LSTM``'s step: ``h``, ``c`` (b, d), input ``u`` (b, d_in) -> next ``(h, c)``."""
    return lstm_update(F.linear(u, w_ih, b_ih), h, c, w_hh, b_hh)


class _TorchLayer(RecurrentLayer):
    """One single-layer torch module ``self.rnn`` (batch first) of hidden size ``d``."""

    is_affine = False
    module_cls: type[nn.RNNBase]

    def __init__(self, d_in: int, d: int):
        super().__init__()
        check_size("d_in", d_in)
        check_size("d_state", d)
        self.d_in, self.d_out, self.d = d_in, d, d
        self.rnn = self.module_cls(d_in, d, batch_first=True)

    def weights(self) -> tuple[torch.Tensor, ...]:
        """``(W_ih, W_hh, b_ih, b_hh)`` of the wrapped module (what the formulas read)."""
        r = self.rnn
        return r.weight_ih_l0, r.weight_hh_l0, r.bias_ih_l0, r.bias_hh_l0

    def extra_repr(self) -> str:
        return f"d_in={self.d_in}, d={self.d}"


class GRULayer(_TorchLayer):
    """``nn.GRU`` as a layer: state ``h`` (b, d), output ``h``."""

    module_cls = nn.GRU

    def __init__(self, d_in: int, d: int):
        super().__init__(d_in, d)
        self.state_size = d

    def step(self, h: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = gru_step(h, u, *self.weights())  # (b, d)
        return h, h

    def outputs(self, u: torch.Tensor, h0: torch.Tensor | None = None) -> torch.Tensor:
        """``(b, L, d_in) -> (b, L, d)``: the fused module, or the formulas in a loop under
        a ``torch.func`` transform."""
        if not transforms_active():
            return self.rnn(u, None if h0 is None else h0[None].contiguous())[0]  # (b, L, d)
        w_ih, w_hh, b_ih, b_hh = self.weights()
        b, L, _ = u.shape
        h = u.new_zeros(b, self.d) if h0 is None else h0  # (b, d)
        gi = F.linear(u.transpose(0, 1), w_ih, b_ih)  # (L, b, 3d): every input at once
        hs = []
        for gi_t in gi.unbind(0):  # unbind: no full-size zero tensor per index backward
            h = gru_update(gi_t, h, w_hh, b_hh)
            hs.append(h)
        return torch.stack(hs, 1)  # (b, L, d)

    def scan(self, u: torch.Tensor, h0: torch.Tensor | None = None
             ) -> tuple[torch.Tensor, torch.Tensor]:
        hs = self.outputs(u, h0)  # (b, L, d): the state is the output
        return hs, hs


class LSTMLayer(_TorchLayer):
    """``nn.LSTM`` as a layer: state ``[h; c]`` (b, 2d), output ``h``."""

    module_cls = nn.LSTM

    def __init__(self, d_in: int, d: int):
        super().__init__(d_in, d)
        self.state_size = 2 * d

    def step(self, h: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hh, c = lstm_step(*h.split(self.d, -1), u, *self.weights())  # (b, d) each
        return torch.cat([hh, c], -1), hh

    def _start(self, u: torch.Tensor, h0: torch.Tensor | None
               ) -> tuple[torch.Tensor, torch.Tensor]:
        b = u.shape[0]
        if h0 is None:
            z = u.new_zeros(b, self.d)  # (b, d)
            return z, z
        h, c = h0.split(self.d, -1)  # (b, d) each
        return h, c

    def outputs(self, u: torch.Tensor, h0: torch.Tensor | None = None) -> torch.Tensor:
        """``(b, L, d_in) -> (b, L, d)``: ``h`` from the fused module, or the formulas in a
        loop under a ``torch.func`` transform."""
        if not transforms_active():
            hx = None if h0 is None else tuple(x[None].contiguous() for x in self._start(u, h0))
            return self.rnn(u, hx)[0]  # (b, L, d)
        return self._loop(u, h0)[0]

    def _loop(self, u: torch.Tensor, h0: torch.Tensor | None
              ) -> tuple[torch.Tensor, torch.Tensor]:
        w_ih, w_hh, b_ih, b_hh = self.weights()
        h, c = self._start(u, h0)  # (b, d) each
        gi = F.linear(u.transpose(0, 1), w_ih, b_ih)  # (L, b, 4d)
        hs, cs = [], []
        for gi_t in gi.unbind(0):
            h, c = lstm_update(gi_t, h, c, w_hh, b_hh)
            hs.append(h)
            cs.append(c)
        return torch.stack(hs, 1), torch.stack(cs, 1)  # (b, L, d) each

    def scan(self, u: torch.Tensor, h0: torch.Tensor | None = None
             ) -> tuple[torch.Tensor, torch.Tensor]:
        """States ``[h; c]`` (b, L, 2d) and outputs ``h`` (b, L, d); see the module
        docstring for how ``c`` is rebuilt from the fused module's ``h``."""
        if transforms_active():
            hs, cs = self._loop(u, h0)
            return torch.cat([hs, cs], -1), hs
        w_ih, w_hh, b_ih, b_hh = self.weights()
        h_start, c = self._start(u, h0)  # (b, d) each
        hs = self.outputs(u, h0)  # (b, L, d)
        h_prev = torch.cat([h_start[:, None], hs[:, :-1]], 1)  # (b, L, d): h_{t-1}
        gates = F.linear(u, w_ih, b_ih) + F.linear(h_prev, w_hh, b_hh)  # (b, L, 4d)
        i, f, g, _ = gates.chunk(4, -1)  # (b, L, d) each
        f, ig = torch.sigmoid(f), torch.sigmoid(i) * torch.tanh(g)  # (b, L, d)
        cs = []
        for f_t, ig_t in zip(f.unbind(1), ig.unbind(1)):
            c = f_t * c + ig_t  # (b, d)
            cs.append(c)
        return torch.cat([hs, torch.stack(cs, 1)], -1), hs  # (b, L, 2d), (b, L, d)


def _stack(name: str, layer_cls: type[_TorchLayer], n_tokens: int, n_classes: int,
           d_state: int, n_layers: int) -> SequenceModel:
    """``n_layers`` layers of width ``d_state`` stacked directly; one-hot tokens in (as
    :mod:`sst_core.models.cells` builds the RNN family)."""
    check_size("n_classes", n_classes)
    check_size("n_layers", n_layers)
    layers = [layer_cls(n_tokens if i == 0 else d_state, d_state) for i in range(n_layers)]
    return SequenceModel(name, n_tokens, n_classes, d_state, layers, residual=False,
                         embed=False)


def torch_gru(n_tokens: int, n_classes: int, d_model: int = 64, d_state: int = 16,
              n_layers: int = 1) -> SequenceModel:
    """``torch.nn.GRU`` (hidden size ``d_state``) on one-hot tokens; ``d_model`` unused."""
    return _stack("torch_gru", GRULayer, n_tokens, n_classes, d_state, n_layers)


def torch_lstm(n_tokens: int, n_classes: int, d_model: int = 64, d_state: int = 16,
               n_layers: int = 1) -> SequenceModel:
    """``torch.nn.LSTM`` (hidden size ``d_state``, state ``[h; c]``) on one-hot tokens;
    ``d_model`` unused."""
    return _stack("torch_lstm", LSTMLayer, n_tokens, n_classes, d_state, n_layers)


def torch_module(model: SequenceModel) -> nn.GRU | nn.LSTM:
    """The plain torch module a ``torch_gru`` / ``torch_lstm`` model is: one multi-layer
    ``nn.GRU`` / ``nn.LSTM`` (batch first, one-hot input of ``n_tokens``, in the model's
    dtype and on its device, eval mode) with the model's weights copied, its layer k the
    module's layer k. With ``model.W_out`` as the readout it is what
    :func:`sst_core.analysis.any_model.diagnose_any` takes without the registry."""
    kinds = {type(layer) for layer in model.layers}
    if kinds not in ({GRULayer}, {LSTMLayer}):
        raise ValueError(f"model {getattr(model, 'name', type(model).__name__)!r} is not a "
                         f"torch_gru / torch_lstm stack (layers: "
                         f"{', '.join(sorted(k.__name__ for k in kinds))})")
    first = model.layers[0]
    p = first.rnn.weight_ih_l0
    raw = first.module_cls(first.d_in, first.d, num_layers=len(model.layers), batch_first=True,
                           device=p.device, dtype=p.dtype)
    with torch.no_grad():
        for k, layer in enumerate(model.layers):
            for name, value in layer.rnn.named_parameters():  # weight_ih_l0, ...
                getattr(raw, name.replace("_l0", f"_l{k}")).copy_(value)
    return raw.eval()
