"""Linear attention (Katharopoulos et al. 2020): affine with transition A = I.

Reference ``paper1-state-tracking.md`` 4.7. Per head, with ``q, k, v`` linear in the
normed block input ``u_t`` of the pre-norm residual stack::

    S_t = S_{t-1} + v_t phi(k_t)^T          S in R^{d_v x d_k},  d_k = d_state
    z_t = z_{t-1} + phi(k_t)                 (only with normalize=True)
    y_t = S_t phi(q_t)  [/ (phi(q_t)^T z_t + eps)],     out_t = W_o [y_t over heads]

``scan`` builds every state; ``outputs`` (what ``forward`` and training use) never does:
with A = I the readout is causal attention without the softmax,

    S_t phi(q_t) = S_0 phi(q_t) + sum_{s <= t} v_s (phi(k_s) . phi(q_t)),

computed in blocks of ``BLOCK`` positions (:func:`causal_linear_attention`): a masked
``(BLOCK, BLOCK)`` score matrix inside each block, and the state summed over the earlier
blocks (``(d_k, d_v)`` per block, a cumulative sum over blocks) for the rest. At the
training length (60) that is one block of matrix products instead of a scan over
``(b, L, H, d_v, d_k)`` states.

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

from sst_core.models.base import RecurrentLayer, SequenceModel
from sst_core.models.registry import check_bool, check_number, check_size
from sst_core.models.selective import residual_model, time_chunked
from sst_core.ops import linear_scan

__all__ = ["BLOCK", "FEATURE_MAPS", "LinearAttentionConfig", "LinearAttentionLayer",
           "causal_linear_attention", "linear_attention"]

FEATURE_MAPS = {"elu+1": lambda x: F.elu(x) + 1, "identity": lambda x: x}
# Positions per block of causal_linear_attention: the training length (60) fits in one;
# at length 1000 the (b, H, L, BLOCK) scores stay small.
BLOCK = 64


def causal_linear_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                            S0: torch.Tensor | None = None, z0: torch.Tensor | None = None,
                            normalize: bool = True, eps: float = 1e-6, block: int = BLOCK
                            ) -> torch.Tensor:
    """Every readout ``S_t q_t [/ (q_t . z_t + eps)]`` of the linear-attention recurrence
    ``S_t = S_{t-1} + v_t k_t^T``, ``z_t = z_{t-1} + k_t``, without building a state.

    q, k (b, L, H, d_k) (feature map already applied), v (b, L, H, d_v); S0 (b, H, d_v,
    d_k) and z0 (b, H, d_k) start the recurrence (zero when omitted). Returns (b, L, H,
    d_v). Positions run in blocks of ``block``: inside a block a causally masked score
    matrix, across blocks the sum of ``k v^T`` over all earlier blocks.
    """
    b, L, H, dk = q.shape
    n = -(-L // block)  # blocks
    C = min(block, L)  # positions per block
    pad = n * C - L
    q, k, v = (x.transpose(1, 2) for x in (q, k, v))  # (b, H, L, .)
    if pad:  # zero keys and values add nothing; the padded queries are cut off
        q, k, v = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v))
    q, k, v = (x.unflatten(2, (n, C)) for x in (q, k, v))  # (b, H, n, C, .)
    scores = (q @ k.transpose(-1, -2)).tril()  # (b, H, n, C, C): position t sees s <= t
    y = scores @ v  # (b, H, n, C, d_v)
    den = scores.sum(-1) if normalize else None  # (b, H, n, C)
    if n > 1 or S0 is not None:
        kv = k.transpose(-1, -2) @ v  # (b, H, n, d_k, d_v): sum over a block of k v^T
        before = kv.cumsum(2) - kv  # over the earlier blocks
        if S0 is not None:
            before = before + S0.transpose(-1, -2)[:, :, None]
        y = y + q @ before
        if normalize:
            ksum = k.sum(3)  # (b, H, n, d_k)
            zb = ksum.cumsum(2) - ksum  # (b, H, n, d_k)
            if z0 is not None:
                zb = zb + z0[:, :, None]
            den = den + (q * zb[:, :, :, None]).sum(-1)
    if normalize:
        y = y / (den[..., None] + eps)
    return y.flatten(2, 3)[:, :, :L].transpose(1, 2)  # (b, L, H, d_v)


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
            check_size(what, getattr(self, what))
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads {self.n_heads} must divide d_model {self.d_model}")
        if self.feature_map not in FEATURE_MAPS:
            raise ValueError(f"unknown feature_map {self.feature_map!r}; allowed: "
                             f"{', '.join(FEATURE_MAPS)}")
        check_bool("normalize", self.normalize)
        check_number("eps", self.eps, 0.0)
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

    def outputs(self, u, h0=None):
        """``scan(u, h0)[1]`` without the states (:func:`causal_linear_attention`)."""
        q, k, v = self._qkv(u)  # (b, L, H, .)
        S0, z0 = (None, None) if h0 is None else self._split(h0)
        y = causal_linear_attention(q, k, v, S0, z0 if self.cfg.normalize else None,
                                    self.cfg.normalize, self.cfg.eps)  # (b, L, H, d_v)
        return self.out_proj(y.flatten(-2))  # (b, L, D)

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
