"""The dense RNN family: one cell, ``h_t = phi(g_t * (W_h h_{t-1}) + W_x x_t + b)``.

Reference (``paper1-state-tracking.md``): the general recurrence of section 2.1 with
``A = W_h`` dense, and its members

=================  =========  ==============================================  ========
constructor        phi        gate g_t                                        section
=================  =========  ==============================================  ========
tanh_rnn           tanh       1                                               4.9
linear_rnn         identity   1                                               4.6
token_gated_rnn    identity   sigma(W_g x_t + b_g)                            4.10
state_gated_rnn    identity   sigma(W_g x_t + U_g h_{t-1} + b_g)              4.10
rnn_phi(phi=...)   any PHIS   1 (the fixed skeleton of Table 3)               5
=================  =========  ==============================================  ========

``x_t`` is the one-hot token for the first layer (the embedding ``e(x_t)`` is the column
of ``W_x`` it picks) and the previous layer's ``h_t`` above it. A layer is affine iff
``phi`` is the identity and the gate does not read ``h`` (section 2.1).
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from sst_core.models.base import RecurrentLayer, SequenceModel
from sst_core.models.registry import PHIS, check_size
from sst_core.ops.rnn_scan import rnn_scan

GATES = ("none", "token", "state")

# The pair operators max/min [INF, reference section 5]: maxout. The pre-activation
# p has width 2d and h = op(p[:d], p[d:]). This table is the only place that choice lives.
PAIR_OPS = {"max": torch.maximum, "min": torch.minimum}

# Spectral radius of W_h at initialisation (each d x d block is RADIUS x orthogonal).
# [INF] Slightly below 1, so the identity/linear variants neither blow up nor forget at
# once over 1000 steps: the input response ||sum_k W_h^k c|| stays below ||c|| / (1 - RADIUS).
RADIUS = 0.99


class Cell(RecurrentLayer):
    """``h_t = phi(g_t * (W_h h_{t-1}) + W_x x_t + b)``, output ``y_t = h_t``.

    ``gate``: ``"none"`` (g_t = 1), ``"token"`` (g_t = sigma(W_g x_t + b_g)) or
    ``"state"`` (g_t = sigma(W_g x_t + U_g h_{t-1} + b_g)); ``phi`` is one of ``PHIS``:

    - tanh, relu, identity: elementwise.
    - groupsort2: sort consecutive pairs, ``(p_1, p_2) -> (max, min)`` (Anil et al. 2019);
      needs an even width d.
    - max, min: maxout (``PAIR_OPS``), ``h = max(p[:d], p[d:])`` with ``p`` of width 2d,
      so ``W_h``, ``W_x``, ``b`` (and the gate) have 2d rows.
    - layernorm: ``gamma * (p - mean p) / sqrt(var p + 1e-5) + beta``, gamma and beta learned.
    - sphere: ``r p / ||p||`` with ``r = sqrt(d)`` [INF: the reference allows 1 or sqrt(d);
      sqrt(d) gives entries of unit RMS, the scale layernorm produces; ||p|| is clamped
      at 1e-12 by ``F.normalize``].

    Initialisation [INF]: every d x d block of ``W_h`` is ``RADIUS`` times a random
    orthogonal matrix (spectral radius 0.99); ``W_x, b, W_g, b_g`` are uniform in
    ``(-1/sqrt(d), 1/sqrt(d))`` as in ``torch.nn.RNN``; ``U_g = 0``, so a state-gated cell
    starts as exactly the token-gated cell with the same seed (the ablation pair of
    section 4.10 shares width and initialisation, and differs only in that U_g can learn).
    """

    def __init__(self, d_in: int, d: int, phi: str = "tanh", gate: str = "none"):
        super().__init__()
        check_size("d_in", d_in)
        check_size("d_state", d)
        if phi not in PHIS:
            raise ValueError(f"unknown phi {phi!r}; allowed: {', '.join(PHIS)}")
        if gate not in GATES:
            raise ValueError(f"unknown gate {gate!r}; allowed: {', '.join(GATES)}")
        if phi == "groupsort2" and d % 2:
            raise ValueError(f"phi='groupsort2' needs an even d_state, got {d}")
        self.phi_name, self.gate = phi, gate
        self.d_in, self.d_out, self.state_size = d_in, d, d
        self.is_affine = phi == "identity" and gate != "state"
        m = 2 * d if phi in PAIR_OPS else d  # width of the pre-activation p
        self.d_pre = m
        self.W_h = nn.Parameter(torch.empty(m, d))
        self.W_x = nn.Parameter(torch.empty(m, d_in))
        self.b = nn.Parameter(torch.empty(m))
        if gate != "none":
            self.W_g = nn.Parameter(torch.empty(m, d_in))
            self.b_g = nn.Parameter(torch.empty(m))
        if gate == "state":
            self.U_g = nn.Parameter(torch.empty(m, d))
        if phi == "layernorm":
            self.gamma = nn.Parameter(torch.empty(d))
            self.beta = nn.Parameter(torch.empty(d))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The initialisation described in the class docstring (drawn in a fixed order)."""
        d, s = self.state_size, 1 / math.sqrt(self.state_size)
        with torch.no_grad():
            for block in self.W_h.split(d):  # (d, d) each
                nn.init.orthogonal_(block).mul_(RADIUS)
            for name in ("W_x", "b", "W_g", "b_g"):
                if hasattr(self, name):
                    nn.init.uniform_(getattr(self, name), -s, s)
            if self.gate == "state":
                nn.init.zeros_(self.U_g)
            if self.phi_name == "layernorm":
                nn.init.ones_(self.gamma)
                nn.init.zeros_(self.beta)

    def phi(self, p: torch.Tensor) -> torch.Tensor:
        """The nonlinearity, ``(..., d_pre) -> (..., d)``."""
        name = self.phi_name
        if name == "tanh":
            return torch.tanh(p)
        if name == "identity":
            return p
        if name == "relu":
            return torch.relu(p)
        if name == "groupsort2":
            a, b = p.unflatten(-1, (-1, 2)).unbind(-1)  # (..., d/2) each
            return torch.stack((torch.maximum(a, b), torch.minimum(a, b)), -1).flatten(-2)
        if name in PAIR_OPS:
            return PAIR_OPS[name](*p.chunk(2, -1))
        if name == "layernorm":
            return F.layer_norm(p, (self.state_size,), self.gamma, self.beta, eps=1e-5)
        return math.sqrt(self.state_size) * F.normalize(p, dim=-1)  # sphere

    # -- the recurrence, split into the part that reads x_t and the part that reads h --
    def _inputs(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``W_x u + b`` and the gate's input part ``W_g u + b_g`` (None without a gate)."""
        xw = F.linear(u, self.W_x, self.b)  # (..., m)
        gx = F.linear(u, self.W_g, self.b_g) if self.gate != "none" else None  # (..., m)
        return xw, gx

    def _W(self) -> torch.Tensor:
        """Everything that multiplies h: ``W_h``, stacked over ``U_g`` for the state gate."""
        return torch.cat([self.W_h, self.U_g]) if self.gate == "state" else self.W_h

    def _next(self, h: torch.Tensor, xw: torch.Tensor, gx: torch.Tensor | None,
              W: torch.Tensor) -> torch.Tensor:
        """One step from the precomputed input parts; one matmul reads h."""
        if self.gate == "none":
            return self.phi(torch.addmm(xw, h, W.t()))  # (b, d)
        z = h @ W.t()  # (b, m) or (b, 2m)
        if self.gate == "state":
            z, zg = z.split(self.d_pre, -1)  # W_h h, U_g h
            gx = gx + zg
        return self.phi(torch.addcmul(xw, torch.sigmoid(gx), z))  # (b, d)

    def step(self, h: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self._next(h, *self._inputs(u), self._W())  # (b, d)
        return h, h

    def scan(self, u: torch.Tensor, h0: torch.Tensor | None = None
             ) -> tuple[torch.Tensor, torch.Tensor]:
        """Every step at once, ``(b, L, d_in) -> (b, L, d)``. ``phi = identity`` (any gate):
        ``ops.rnn_scan``, a loop with a hand-written backward; tanh without a gate: torch's
        fused Elman kernel; otherwise ``_next`` in a loop. Under ``torch.func`` transforms
        (vmap, grad) both fast paths fall back to a plain loop, since neither the custom
        autograd Function nor the fused kernel has a batching rule."""
        b, L, _ = u.shape
        if self.phi_name == "identity":
            # a loop into preallocated buffers with a hand-written backward (ops.rnn_scan)
            xw, gx = self._inputs(u)  # (b, L, d)
            hs = rnn_scan(self.gate, xw, self.W_h, gx, getattr(self, "U_g", None), h0)
            return hs, hs  # (b, L, d)
        h = self.init_state(b, u.device, u.dtype) if h0 is None else h0  # (b, d)
        fused = not torch._C._are_functorch_transforms_active()  # _VF.rnn_tanh: no vmap rule
        if self.phi_name == "tanh" and self.gate == "none" and fused:
            # torch's fused Elman kernel, same weights; its second bias (b_hh) is zero.
            weights = [self.W_x, self.W_h, self.b, torch.zeros_like(self.b)]
            hs, _ = torch._VF.rnn_tanh(u, h[None], weights, True, 1, 0.0, self.training,
                                       False, True)  # (b, L, d)
            return hs, hs
        xw, gx = self._inputs(u.transpose(0, 1))  # (L, b, m): all inputs in one matmul
        W = self._W()
        # unbind, not xw[t]: the backward of each index op writes a full-size zero tensor
        gxs = [None] * L if gx is None else gx.unbind(0)
        hs = []
        for xw_t, gx_t in zip(xw.unbind(0), gxs):
            h = self._next(h, xw_t, gx_t, W)
            hs.append(h)
        hs = torch.stack(hs, 1)  # (b, L, d)
        return hs, hs

    def extra_repr(self) -> str:
        return (f"d_in={self.d_in}, d={self.state_size}, phi={self.phi_name!r}, "
                f"gate={self.gate!r}")


def _rnn(name: str, n_tokens: int, n_classes: int, d_state: int, n_layers: int,
         phi: str, gate: str) -> SequenceModel:
    """``n_layers`` cells of width ``d_state`` stacked directly; one-hot tokens in.

    The model's ``d_model`` is set to ``d_state``, the width of every hidden state.
    """
    check_size("n_classes", n_classes)
    check_size("n_layers", n_layers)
    layers = [Cell(n_tokens if i == 0 else d_state, d_state, phi, gate)
              for i in range(n_layers)]
    return SequenceModel(name, n_tokens, n_classes, d_state, layers, residual=False,
                         embed=False)


def tanh_rnn(n_tokens: int, n_classes: int, d_model: int = 64, d_state: int = 16,
             n_layers: int = 1) -> SequenceModel:
    """Elman RNN, ``h_t = tanh(W_h h_{t-1} + W_x e(x_t) + b)`` (section 4.9).

    ``d_model`` is not used by the RNN family (the state has width ``d_state``).
    """
    return _rnn("tanh_rnn", n_tokens, n_classes, d_state, n_layers, "tanh", "none")


def linear_rnn(n_tokens: int, n_classes: int, d_model: int = 64, d_state: int = 16,
               n_layers: int = 1) -> SequenceModel:
    """Linear RNN, ``h_t = W_h h_{t-1} + W_x e(x_t) + b`` (section 4.6; affine)."""
    return _rnn("linear_rnn", n_tokens, n_classes, d_state, n_layers, "identity", "none")


def token_gated_rnn(n_tokens: int, n_classes: int, d_model: int = 64, d_state: int = 16,
                    n_layers: int = 1) -> SequenceModel:
    """``h_t = sigma(W_g e(x_t) + b_g) * (W_h h_{t-1}) + W_x e(x_t) + b`` (section 4.10
    proposal [INF]; affine: the transition ``diag(g(x_t)) W_h`` depends only on the token).
    """
    return _rnn("token_gated_rnn", n_tokens, n_classes, d_state, n_layers, "identity",
                "token")


def state_gated_rnn(n_tokens: int, n_classes: int, d_model: int = 64, d_state: int = 16,
                    n_layers: int = 1) -> SequenceModel:
    """``h_t = sigma(W_g e(x_t) + U_g h_{t-1} + b_g) * (W_h h_{t-1}) + W_x e(x_t) + b``
    (section 4.10 proposal [INF]; state-dependent through the gate). Same width and, for
    the same seed, the same initial function as ``token_gated_rnn`` (``U_g`` starts at 0).
    """
    return _rnn("state_gated_rnn", n_tokens, n_classes, d_state, n_layers, "identity",
                "state")


def rnn_phi(n_tokens: int, n_classes: int, d_model: int = 64, d_state: int = 16,
            n_layers: int = 1, phi: str = "tanh") -> SequenceModel:
    """The Table 3 skeleton ``h_t = phi(W_h h_{t-1} + W_x e(x_t) + b)`` (section 5).

    ``phi="identity"`` is the linear RNN and ``phi="tanh"`` the tanh RNN.
    """
    return _rnn(f"rnn_phi[{phi}]", n_tokens, n_classes, d_state, n_layers, phi, "none")
