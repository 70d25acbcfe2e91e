"""The one face every sequence model of the book shows.

A model reads token indices ``(b, L)`` and predicts a class at every position. It is a
stack of recurrent *layers*; each layer keeps a real state vector (a complex state is
stored as ``[Re; Im]``) and exposes its recurrence one token at a time:

    layer.step(h, u) -> (h_next, y)      h: (b, D_layer), u: (b, d_in), y: (b, d_out)
    layer.scan(u, h0=None) -> (hs, ys)   u: (b, L, d_in), hs: (b, L, D_layer), ys: (b, L, d_out)
    layer.outputs(u, h0=None) -> ys      scan's ys alone (what the model's forward uses)

``scan`` is the fast path and must equal ``step`` unrolled. A layer is *affine* when
``d h_next / d h`` does not depend on ``h`` (for a fixed input ``u``); that is the
paper's class split, and ``tests/models`` checks it numerically for every model.

The model then offers, whatever its family:

- ``forward(tokens) -> logits``                         (b, L) -> (b, L, n_classes)
- ``hidden_states(tokens) -> [h_layer]``                 per layer, each (b, L, d) with
  d the layer's output width; the last entry is what the readout sees (after the final
  norm, if any)
- ``init_state(b) -> h``                                 (b, D), all layers' states
  concatenated, D = sum of ``layer.state_size``
- ``step(h, x) -> h_next``                               one token ``x`` (b,) through all layers
- ``step_logits(h, x) -> (h_next, logits)``              the logits ``forward`` gives at
  that position (they may depend on the token as well as on the state, as in Mamba)
- ``is_affine``                                          every layer's recurrence is affine
"""
from __future__ import annotations

from typing import Sequence

import torch
from torch import nn


class RecurrentLayer(nn.Module):
    """One recurrence. Subclasses set ``state_size``, ``d_in``, ``d_out``, ``is_affine``.

    ``conv_state_size``: how many *trailing* entries of the state hold a window of past
    inputs (Mamba's causal convolution). The inputs alone determine them, so they carry no
    recurrent error; "affine" means affine in the other, recurrent, entries with the
    window fixed (the window itself passes through SiLU and softplus).
    """

    state_size: int
    d_in: int
    d_out: int
    is_affine: bool
    conv_state_size: int = 0

    def init_state(self, b: int, device=None, dtype=None) -> torch.Tensor:
        return torch.zeros(b, self.state_size, device=device, dtype=dtype)

    def step(self, h: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def scan(self, u: torch.Tensor, h0: torch.Tensor | None = None
             ) -> tuple[torch.Tensor, torch.Tensor]:
        """Default fast path: ``step`` in a loop. Subclasses override with a real scan."""
        b, L, _ = u.shape
        h = self.init_state(b, u.device, u.dtype) if h0 is None else h0
        hs, ys = [], []
        for t in range(L):
            h, y = self.step(h, u[:, t])
            hs.append(h)
            ys.append(y)
        return torch.stack(hs, 1), torch.stack(ys, 1)  # (b, L, D), (b, L, d_out)

    def outputs(self, u: torch.Tensor, h0: torch.Tensor | None = None) -> torch.Tensor:
        """``scan(u, h0)[1]``, the outputs alone (all that ``forward`` needs); a layer whose
        states are costly to build overrides it to skip them."""
        return self.scan(u, h0)[1]


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def check_tokens(tokens: torch.Tensor, n_tokens: int) -> None:
    """ValueError unless ``tokens`` (b, L) are integer ids in 0..n_tokens-1 with L >= 1."""
    if not isinstance(tokens, torch.Tensor):
        raise ValueError(f"tokens must be a torch tensor of integer ids, got "
                         f"{type(tokens).__name__}")
    if tokens.dtype.is_floating_point or tokens.dtype.is_complex or tokens.dtype == torch.bool:
        raise ValueError(f"tokens must be integer ids (torch.long), got dtype {tokens.dtype}")
    if tokens.ndim != 2 or tokens.shape[1] < 1:
        raise ValueError(f"tokens must have shape (b, L) with L >= 1, got {tuple(tokens.shape)}")
    if tokens.numel():
        try:
            lo, hi = int(tokens.min()), int(tokens.max())
        except RuntimeError:  # inside torch.func.vmap (stacked training) ids cannot be read
            return
        if lo < 0 or hi >= n_tokens:
            raise ValueError(f"tokens must lie in 0..{n_tokens - 1} (n_tokens={n_tokens}), got "
                             f"ids {lo}..{hi}")


class SequenceModel(nn.Module):
    """Embedding -> recurrent layers -> (final norm) -> linear head ``W_out``.

    ``residual=True`` wraps each layer as ``x <- x + layer(RMSNorm(x))`` and adds a final
    RMSNorm (the Mamba/AUSSM block); ``residual=False`` stacks layers directly, each
    reading the previous layer's output (the RNN family), with no final norm.
    """

    def __init__(self, name: str, n_tokens: int, n_classes: int, d_model: int,
                 layers: Sequence[RecurrentLayer], residual: bool, embed: bool = True):
        super().__init__()
        self.name = name
        self.n_tokens, self.n_classes, self.d_model = n_tokens, n_classes, d_model
        self.residual = residual
        self.layers = nn.ModuleList(layers)
        # RNN cells fold the embedding into their input matrix (embed=False): token ids
        # go straight to the first layer as one-hot rows, which is cheaper than a d x d map.
        self.embedding = nn.Embedding(n_tokens, d_model) if embed else None
        if residual:
            self.norms = nn.ModuleList(RMSNorm(d_model) for _ in layers)
            self.final_norm = RMSNorm(d_model)
            d_head = d_model
        else:
            self.norms = None
            self.final_norm = nn.Identity()
            d_head = layers[-1].d_out
        self.W_out = nn.Linear(d_head, n_classes)

    # -- whole sequences ---------------------------------------------------------------
    def _input(self, tokens: torch.Tensor) -> torch.Tensor:
        check_tokens(tokens, self.n_tokens)
        if self.embedding is not None:
            return self.embedding(tokens)  # (b, L, d_model)
        return nn.functional.one_hot(tokens, self.n_tokens).to(self.W_out.weight.dtype)

    def hidden_states(self, tokens: torch.Tensor) -> list[torch.Tensor]:
        x = self._input(tokens)  # (b, L, d_in)
        outs = []
        for i, layer in enumerate(self.layers):
            if self.residual:
                x = x + layer.outputs(self.norms[i](x))  # (b, L, d_model)
            else:
                x = layer.outputs(x)  # (b, L, d_out)
            outs.append(x)
        outs[-1] = self.final_norm(outs[-1])
        return outs

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.W_out(self.hidden_states(tokens)[-1])  # (b, L, n_classes)

    # -- one token at a time -----------------------------------------------------------
    @property
    def is_affine(self) -> bool:
        return all(layer.is_affine for layer in self.layers)

    @property
    def state_size(self) -> int:
        return sum(layer.state_size for layer in self.layers)

    @property
    def recurrent_mask(self) -> torch.Tensor:
        """(D,) bool: True on the recurrent entries of the state, False on input windows."""
        parts = []
        for layer in self.layers:
            n_window = layer.conv_state_size
            parts += [torch.ones(layer.state_size - n_window, dtype=torch.bool),
                      torch.zeros(n_window, dtype=torch.bool)]
        return torch.cat(parts)

    def init_state(self, b: int) -> torch.Tensor:
        p = self.W_out.weight
        return torch.cat([l.init_state(b, p.device, p.dtype) for l in self.layers], dim=-1)

    def _split(self, h: torch.Tensor) -> list[torch.Tensor]:
        return list(torch.split(h, [l.state_size for l in self.layers], dim=-1))

    def _step_all(self, h: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = self._input(x[:, None])[:, 0]  # (b, d_in)
        new = []
        for i, (layer, h_i) in enumerate(zip(self.layers, self._split(h))):
            if self.residual:
                h_i, y = layer.step(h_i, self.norms[i](z))
                z = z + y
            else:
                h_i, z = layer.step(h_i, z)
            new.append(h_i)
        return torch.cat(new, dim=-1), self.final_norm(z)

    def step(self, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Next state after token ``x`` (b,) from state ``h`` (b, D)."""
        return self._step_all(h, x)[0]

    def step_logits(self, h: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Next state and the logits at that position (what ``forward`` predicts there)."""
        h, z = self._step_all(h, x)
        return h, self.W_out(z)
