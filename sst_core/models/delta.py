"""DeltaNet and DeltaProduct: affine trackers whose transition is not diagonal.

Beyond the papers (part 2): recurrences whose transition depends on the input only (so
the paper's class is *affine*) but is a product of generalised Householder matrices,
with eigenvalues down to -1.

**DeltaNet** (Schlag et al. 2021; Yang et al. 2024, "Parallelizing linear transformers
with the delta rule over sequence length"; the eigenvalue range of Grazzi et al. 2025,
"Unlocking state-tracking in linear RNNs through negative eigenvalues"). Per head, with
the normed block input ``u_t`` of the pre-norm residual stack::

    q_t = q~_t / ||q~_t||,  q~_t = SiLU(W_q u_t)        k_t the same with W_k   (d_k each)
    v_t = SiLU(W_v u_t)                                  (d_v = d_model / n_heads)
    beta_t = r sigmoid(w_beta . u_t + b)                 r = beta_range, 1 or 2
    S_t = (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T,   o_t = S_t^T q_t
    out_t = W_o [o_t over heads]

``S`` in ``R^{d_k x d_v}``, ``d_k = d_state``. With ``||k_t|| = 1`` the transition has
the eigenvalue 1 (``d_k - 1`` times) and ``1 - beta_t``: in [0, 1] for ``beta_range=1``
(DeltaNet as published) and in [-1, 1] for ``beta_range=2`` (Grazzi et al.'s "negative
eigenvalues" variant, ``deltanet_negative``). fla's DeltaNet layer also passes q, k and v
through a short causal convolution and normalises the output per head; both are left
out here (the convolution changes what q, k, v are computed from, the norm what is read
out of o_t; the recurrence is the same).

**DeltaProduct** (Siems et al. 2025, "DeltaProduct: improving state-tracking in linear
RNNs via Householder products", code ``automl/DeltaProduct``). Each token gives
``n_h = n_householder`` triples ``(k_{t,j}, v_{t,j}, beta_{t,j})`` (``W_k``, ``W_v`` and
``w_beta`` produce n_h pieces each) and the state takes n_h delta steps per token::

    S_{t,j} = (I - beta_{t,j} k_{t,j} k_{t,j}^T) S_{t,j-1} + beta_{t,j} k_{t,j} v_{t,j}^T
    S_{t,0} = S_{t-1},   S_t = S_{t,n_h},   o_t = S_t^T q_t          j = 1 .. n_h

so the transition of a token is the product ``A_{n_h} ... A_1`` of n_h generalised
Householder matrices ``A_j = I - beta_{t,j} k_{t,j} k_{t,j}^T``. ``n_h = 1`` is DeltaNet.
That is DeltaNet run on the token sequence expanded to ``L n_h`` sub-steps with the
query read only at each token's last sub-step, which is how it runs here: one scan
(:mod:`sst_core.ops.delta_scan`) serves both, its query zero on the other sub-steps.

``outputs`` (what ``forward`` and training use) runs the chunked WY form
(:func:`~sst_core.ops.delta_scan.delta_scan`, in chunks of its ``CHUNK`` sub-steps) and
builds no state. ``scan`` builds every state from the same form (those of all ``L n_h``
sub-steps, keeping each token's last; without gradients in pieces of ``EVAL_CHUNK``
tokens, ``time_chunked``). ``step`` is one token of the per-step recurrence
(:func:`~sst_core.ops.delta_scan.delta_scan_ref` on its n_h sub-steps). Flat state per
layer: ``S`` as ``(H, d_k, d_v)``, ``H d_k d_v`` entries, no input window. The map
``S_{t-1} -> S_t`` is affine for a fixed input (``is_affine``).
No forget gate (that is Gated DeltaNet / Gated DeltaProduct), no short convolution.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from sst_core.models.base import RecurrentLayer, SequenceModel
from sst_core.models.registry import check_size
from sst_core.models.selective import residual_model, time_chunked
from sst_core.ops.delta_scan import delta_scan, delta_scan_ref

__all__ = ["DeltaConfig", "DeltaLayer", "N_HOUSEHOLDER", "BETA_RANGES", "NORM_EPS",
           "deltanet", "deltanet_negative", "deltaproduct", "deltaproduct_3"]

N_HOUSEHOLDER = (1, 2, 3)  # n_h, Householder factors per token
BETA_RANGES = (1, 2)  # beta in [0, 1] or [0, 2]
NORM_EPS = 1e-6  # q and k are divided by max(||x||, NORM_EPS)


@dataclass(frozen=True)
class DeltaConfig:
    d_model: int               # D: width of the residual stream
    d_state: int = 16          # d_k: key/query size per head
    n_heads: int = 1           # H; d_v = D / H
    n_householder: int = 1     # n_h: delta steps (Householder factors) per token
    beta_range: int = 1        # beta = beta_range * sigmoid(.): 1 (DeltaNet) or 2 (negative)

    def __post_init__(self):
        for what in ("d_model", "d_state", "n_heads"):
            check_size(what, getattr(self, what))
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads {self.n_heads} must divide d_model {self.d_model}")
        for what, allowed in (("n_householder", N_HOUSEHOLDER), ("beta_range", BETA_RANGES)):
            value = getattr(self, what)
            if not isinstance(value, int) or isinstance(value, bool) or value not in allowed:
                raise ValueError(f"{what} must be one of {', '.join(map(str, allowed))}, "
                                 f"got {value!r}")


class DeltaLayer(RecurrentLayer):
    """One DeltaNet / DeltaProduct mixer; recurrence in the module docstring."""

    is_affine = True
    conv_state_size = 0

    def __init__(self, cfg: DeltaConfig):
        super().__init__()
        self.cfg = cfg
        D, H, dk, nh = cfg.d_model, cfg.n_heads, cfg.d_state, cfg.n_householder
        self.d_v = D // H
        self.q_proj = nn.Linear(D, H * dk, bias=False)
        self.k_proj = nn.Linear(D, nh * H * dk, bias=False)  # n_h keys per token
        self.v_proj = nn.Linear(D, nh * D, bias=False)
        self.b_proj = nn.Linear(D, nh * H)  # w_beta . u + b, per step and head
        self.out_proj = nn.Linear(D, D, bias=False)
        self.d_in = self.d_out = D
        self.state_size = H * dk * self.d_v

    def _project(self, u):
        """q (..., H, d_k), k (..., n_h, H, d_k), v (..., n_h, H, d_v), beta (..., n_h, H)
        from u (..., D)."""
        H, dk, nh = self.cfg.n_heads, self.cfg.d_state, self.cfg.n_householder
        q = F.normalize(F.silu(self.q_proj(u)).unflatten(-1, (H, dk)), dim=-1, eps=NORM_EPS)
        k = F.normalize(F.silu(self.k_proj(u)).unflatten(-1, (nh, H, dk)), dim=-1,
                        eps=NORM_EPS)
        v = F.silu(self.v_proj(u)).unflatten(-1, (nh, H, self.d_v))
        beta = self.cfg.beta_range * torch.sigmoid(self.b_proj(u)).unflatten(-1, (nh, H))
        return q, k, v, beta

    def _substeps(self, u):
        """The scan's inputs over the ``L n_h`` sub-steps of u (b, L, D): q (b, L n_h, H,
        d_k), zero except at each token's last sub-step, k, v, beta likewise."""
        q, k, v, beta = self._project(u)  # (b, L, [n_h,] H, .)
        q = F.pad(q[:, :, None], (0, 0, 0, 0, self.cfg.n_householder - 1, 0))  # (b, L, n_h, H, d_k)
        return [x.flatten(1, 2) for x in (q, k, v, beta)]

    def _state(self, h):
        """S (b, H, d_k, d_v) from the flat state h (b, D_layer), or None."""
        return None if h is None else h.unflatten(-1, (self.cfg.n_heads, self.cfg.d_state,
                                                       self.d_v))

    def _readout(self, o):
        """W_o [o over heads]: o (..., H, d_v) -> (..., D)."""
        return self.out_proj(o.flatten(-2))

    def step(self, h, u):
        o, S = delta_scan_ref(*self._substeps(u[:, None]), self._state(h))  # n_h sub-steps
        return S.flatten(1), self._readout(o[:, -1])  # (b, D_layer), (b, D)

    def outputs(self, u, h0=None):
        """``scan(u, h0)[1]`` without the states (the chunked WY form)."""
        nh = self.cfg.n_householder
        o, _ = delta_scan(*self._substeps(u), self._state(h0))
        return self._readout(o[:, nh - 1::nh])  # (b, L, D)

    @time_chunked
    def scan(self, u, h0=None):
        nh = self.cfg.n_householder
        # (b, L n_h, H, d_v), (b, L n_h, H, d_k, d_v)
        o, S = delta_scan(*self._substeps(u), self._state(h0), all_states=True)
        return S[:, nh - 1::nh].flatten(2), self._readout(o[:, nh - 1::nh])


def _delta_model(name: str, kw: dict, fixed: dict, defaults: dict) -> dict:
    """The config options of ``name``: ``kw`` over ``defaults``; ``fixed`` ones may not be
    given."""
    given = sorted(set(kw) & set(fixed))
    if given:
        raise ValueError(f"{name} always has {', '.join(f'{k}={fixed[k]!r}' for k in given)}; "
                         "use deltaproduct to choose n_householder and beta_range")
    return {**defaults, **kw, **fixed}


def deltanet(n_tokens: int, n_classes: int, d_model: int = 64, d_state: int = 16,
             n_layers: int = 1, **kw: Any) -> SequenceModel:
    """DeltaNet, beta in [0, 1]. Options: DeltaConfig's ``n_heads``."""
    kw = _delta_model("deltanet", kw, {"n_householder": 1, "beta_range": 1}, {})
    return residual_model("deltanet", DeltaLayer, DeltaConfig, n_tokens, n_classes,
                          d_model, d_state, n_layers, kw)


def deltanet_negative(n_tokens: int, n_classes: int, d_model: int = 64, d_state: int = 16,
                      n_layers: int = 1, **kw: Any) -> SequenceModel:
    """DeltaNet with beta in [0, 2] (eigenvalues in [-1, 1]). Options: ``n_heads``."""
    kw = _delta_model("deltanet_negative", kw, {"n_householder": 1, "beta_range": 2}, {})
    return residual_model("deltanet_negative", DeltaLayer, DeltaConfig, n_tokens, n_classes,
                          d_model, d_state, n_layers, kw)


def deltaproduct(n_tokens: int, n_classes: int, d_model: int = 64, d_state: int = 16,
                 n_layers: int = 1, **kw: Any) -> SequenceModel:
    """DeltaProduct. Options: DeltaConfig's fields; ``n_householder`` defaults to 2 and
    ``beta_range`` to 2 (negative eigenvalues allowed)."""
    kw = _delta_model("deltaproduct", kw, {}, {"n_householder": 2, "beta_range": 2})
    return residual_model("deltaproduct", DeltaLayer, DeltaConfig, n_tokens, n_classes,
                          d_model, d_state, n_layers, kw)


def deltaproduct_3(n_tokens: int, n_classes: int, d_model: int = 64, d_state: int = 16,
                   n_layers: int = 1, **kw: Any) -> SequenceModel:
    """DeltaProduct with n_householder=3 (a name of its own for the experiment grids,
    which pass no model options). Options: ``n_heads``, ``beta_range`` (default 2)."""
    kw = _delta_model("deltaproduct_3", kw, {"n_householder": 3}, {"beta_range": 2})
    return residual_model("deltaproduct_3", DeltaLayer, DeltaConfig, n_tokens, n_classes,
                          d_model, d_state, n_layers, kw)
