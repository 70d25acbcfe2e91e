"""Linear attention (Katharopoulos et al. 2020): affine with transition A = I.

Reference ``paper1-state-tracking.md`` 4.7. Per head, with ``q, k, v`` linear in the
normed block input ``u_t`` of the pre-norm residual stack::

    S_t = S_{t-1} + v_t phi(k_t)^T          S in R^{d_v x d_k},  d_k = d_state
    z_t = z_{t-1} + phi(k_t)                 (only with normalize=True)
    y_t = S_t phi(q_t)  [/ (phi(q_t)^T z_t + eps)],     out_t = W_o [y_t over heads]

``phi`` is ``elu(x) + 1`` (default) or the identity (``feature_map``). The normaliser
(default on, as in Katharopoulos et al.) needs a positive feature map, so identity with
``normalize=True`` is refused. The state update is affine (every eigenvalue is 1); the
readout is not linear in the state when normalised, which does not affect the class.
Flat state per layer: ``[S (H, d_v, d_k); z (H, d_k)]`` with ``d_v = d_model / n_heads``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from ..ops import linear_scan
from .base import RecurrentLayer, SequenceModel
from .registry import _check_size
from .selective import residual_model, time_chunked

__all__ = ["FEATURE_MAPS", "LinearAttentionConfig", "LinearAttentionLayer", "linear_attention"]

FEATURE_MAPS = {"elu+1": lambda x: F.elu(x) + 1, "identity": lambda x: x}


@dataclass(frozen=True)
class LinearAttentionConfig:
    d_model: int               # D: width of the residual stream
    d_state: int = 16          # d_k: key/query size per head
    n_heads: int = 1           # H; d_v = D / H
    feature_map: str = "elu+1"  # phi
    normalize: bool = True     # divide by phi(q)^T z_t
    eps: float = 1e-6          # added to the normaliser

    def __post_init__(self):
        for what in ("d_model", "d_state", "n_heads"):
            _check_size(what, getattr(self, what))
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads {self.n_heads} must divide d_model {self.d_model}")
        if self.feature_map not in FEATURE_MAPS:
            raise ValueError(f"unknown feature_map {self.feature_map!r}; allowed: "
                             f"{', '.join(FEATURE_MAPS)}")
        if self.normalize and self.feature_map == "identity":
            raise ValueError("normalize=True needs a positive feature map; with "
                             "feature_map='identity' use normalize=False")


class LinearAttentionLayer(RecurrentLayer):
    """One linear-attention mixer; recurrence in the module docstring."""

    is_affine = True
    conv_state_size = 0

    def __init__(self, cfg: LinearAttentionConfig):
        super().__init__()
        self.cfg = cfg
        D, H, dk = cfg.d_model, cfg.n_heads, cfg.d_state
        self.d_v = D // H
        self.phi = FEATURE_MAPS[cfg.feature_map]
        self.q_proj = nn.Linear(D, H * dk, bias=False)
        self.k_proj = nn.Linear(D, H * dk, bias=False)
        self.v_proj = nn.Linear(D, D, bias=False)
        self.out_proj = nn.Linear(D, D, bias=False)
        self.d_in = self.d_out = D
        self.n_S = H * self.d_v * dk
        self.state_size = self.n_S + (H * dk if cfg.normalize else 0)

    def _qkv(self, u):
        """phi(q), phi(k) (..., H, d_k) and v (..., H, d_v) from u (..., D)."""
        H = self.cfg.n_heads
        q, k = (self.phi(p(u)).unflatten(-1, (H, -1)) for p in (self.q_proj, self.k_proj))
        return q, k, self.v_proj(u).unflatten(-1, (H, -1))

    def _readout(self, S, z, q):
        """W_o (S phi(q) [/ (phi(q) . z + eps)]); S (..., H, d_v, d_k), z, q (..., H, d_k)."""
        y = (S @ q[..., None])[..., 0]  # (..., H, d_v)
        if self.cfg.normalize:
            y = y / ((z * q).sum(-1, keepdim=True) + self.cfg.eps)
        return self.out_proj(y.flatten(-2))  # (..., D)

    def _split(self, h):
        """S (b, H, d_v, d_k) and z (b, H, d_k; d_k = 0 without the normaliser) from h."""
        b, H, dk = h.shape[0], self.cfg.n_heads, self.cfg.d_state
        z = h[:, self.n_S:].view(b, H, dk if self.cfg.normalize else 0)
        return h[:, :self.n_S].view(b, H, self.d_v, dk), z

    def step(self, h, u):
        q, k, v = self._qkv(u)
        S, z = self._split(h)
        S = S + v[..., None] @ k[..., None, :]  # (b, H, d_v, d_k)
        if self.cfg.normalize:
            z = z + k
        return torch.cat([S.flatten(1), z.flatten(1)], -1), self._readout(S, z, q)

    @time_chunked
    def scan(self, u, h0=None):
        b, L, _ = u.shape
        q, k, v = self._qkv(u)  # (b, L, H, .)
        S0, z0 = (None, None) if h0 is None else self._split(h0)
        ones = u.new_ones(1, L, 1, 1, 1)  # the transition A = I
        S = linear_scan(ones, v[..., None] @ k[..., None, :], S0)  # (b, L, H, d_v, d_k)
        if not self.cfg.normalize:
            return S.flatten(2), self._readout(S, None, q)
        z = k.cumsum(1) if z0 is None else z0[:, None] + k.cumsum(1)  # (b, L, H, d_k)
        return torch.cat([S.flatten(2), z.flatten(2)], -1), self._readout(S, z, q)


def linear_attention(n_tokens: int, n_classes: int, d_model: int = 64, d_state: int = 16,
                     n_layers: int = 1, **kw: Any) -> SequenceModel:
    """Linear attention, reference 4.7. Options: the fields of LinearAttentionConfig."""
    return residual_model("linear_attention", LinearAttentionLayer, LinearAttentionConfig,
                          n_tokens, n_classes, d_model, d_state, n_layers, kw)
