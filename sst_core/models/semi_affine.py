"""Semi-affine repair of (Negative) Mamba: an affine SSM plus a rank-r tanh correction.

The paper (section on error control) shows that an affine recurrence cannot contract
errors inside the symbolic subspace U, and proposes, without testing it, an architecture
that is affine except on a small state-dependent block. This is that block on Mamba
(:class:`~sst_core.models.selective.MambaLayer`, whose notation it keeps)::

    h_t = a_t * h_{t-1} + Delta_t B_t x_t + P tanh(Q h_{t-1} + c)

with ``h`` the flat SSM state ``(d_inner * N)`` (the conv window is not corrected),
``Q: (r, d_inner N)``, ``P: (d_inner N, r)``, ``c: (r,)`` and ``r = rank``. With ``P = 0``
it is exactly the affine model; otherwise ``d h_t / d h_{t-1} = diag(a_t) + P diag(1 -
tanh^2(Q h_{t-1} + c)) Q`` depends on ``h_{t-1}`` (``is_affine = False``), through an
r-dimensional bottleneck. ``a_t`` is Mamba's ``exp(Delta_t A)`` or, for the Negative
Mamba variant (``MambaConfig.negative``), ``2 exp(Delta_t A) - 1``.

The flat state is MambaLayer's, ``[h (d_inner * N); window ((k - 1) * d_inner)]``, with
the same ``conv_state_size``, so ``step`` is exact. The fused selective scan cannot run
the correction, so ``scan`` computes every token-only quantity (conv, Delta, B, C, a_t,
the input term) for the whole sequence first and then loops over time doing only the
recurrence: one ``(b, d_inner N) x (d_inner N, r)`` and one ``(b, r) x (r, d_inner N)``
product per step.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from sst_core.models.base import SequenceModel
from sst_core.models.registry import check_size
from sst_core.models.selective import (
    EVAL_CHUNK,
    MambaConfig,
    MambaLayer,
    residual_model,
    time_chunked,
)

__all__ = ["SemiAffineMambaConfig", "SemiAffineMambaLayer", "semi_affine_mamba",
           "semi_affine_negative_mamba"]


@dataclass(frozen=True)
class SemiAffineMambaConfig(MambaConfig):
    rank: int = 8           # r: rank of the correction P tanh(Q h + c)
    P_scale: float = 1e-2   # P's entries at init: std P_scale / sqrt(d_inner N)

    def __post_init__(self):
        super().__post_init__()
        check_size("rank", self.rank)
        if not (isinstance(self.P_scale, (int, float)) and not isinstance(self.P_scale, bool)
                and math.isfinite(self.P_scale) and self.P_scale >= 0):
            raise ValueError(f"P_scale must be a finite float >= 0, got {self.P_scale!r}")


class SemiAffineMambaLayer(MambaLayer):
    """A Mamba (or Negative Mamba) mixer whose SSM state gets ``P tanh(Q h + c)`` each step.

    Initialisation. ``c = 0`` and ``Q`` has entries of std ``1 / sqrt(d_inner N)``, so each
    of the r pre-activations ``Q h + c`` has about the size of an entry of h (rms) and
    tanh works in its graded range, neither linear nor saturated. ``P`` is zero-mean with
    std ``P_scale / sqrt(d_inner N)`` (``P_scale = 1e-2``), so the correction's Jacobian
    ``P diag(tanh') Q`` has spectral norm about ``P_scale (1 + sqrt(r / (d_inner N)))^2``,
    i.e. about 1e-2 at every width: training starts close to the affine model (and h = 0
    is still a fixed point of the correction). A plain std of 1e-2 would instead grow
    with the width, to about 0.3 at d_inner N = 512. ``P`` is not 0: then ``Q`` and
    ``c`` would get exactly zero gradient at the first step. Their gradients scale with
    ``P`` and so start small, which AdamW (what ``sst_core.training.tracking`` uses) normalises away.
    """

    is_affine = False

    def __init__(self, cfg: SemiAffineMambaConfig):
        super().__init__(cfg)  # sets n_ssm = d_inner N, conv_state_size, state_size
        r, n = cfg.rank, self.n_ssm
        self.Q = nn.Parameter(torch.randn(r, n) / math.sqrt(n))  # (r, E N)
        self.P = nn.Parameter(torch.randn(n, r) * (cfg.P_scale / math.sqrt(n)))  # (E N, r)
        self.c = nn.Parameter(torch.zeros(r))  # (r,)

    def _update(self, h, a, bu, Q_T, P_T):
        """``h_t = a_t * h_{t-1} + Delta_t B_t x_t + P tanh(Q h_{t-1} + c)``, all (b, E N);
        ``Q_T``, ``P_T`` are ``Q.T`` (E N, r) and ``P.T`` (r, E N)."""
        corr = torch.tanh(torch.addmm(self.c, h, Q_T))  # (b, r)
        return torch.addcmul(torch.addmm(bu, corr, P_T), a, h)  # bu + P corr + a * h

    def step(self, h, u):
        b = u.shape[0]
        s, window = h[:, :self.n_ssm], h[:, self.n_ssm:]  # (b, E N), (b, (k - 1) E)
        x, z = self.in_proj(u).chunk(2, -1)  # (b, E) each
        x, window = self.conv.step(x, window)
        x = F.silu(x)
        a, bu, C = self._transition(x)  # (b, E, N), (b, E, N), (b, N)
        s = self._update(s, a.flatten(1), bu.flatten(1), self.Q.T, self.P.T)  # (b, E N)
        return torch.cat([s, window], -1), self._readout(s.unflatten(-1, a.shape[-2:]), C, x, z)

    def _recurrence(self, a: torch.Tensor, bu: torch.Tensor, s0: torch.Tensor | None
                    ) -> torch.Tensor:
        """The states h_1..h_L (b, L, E N) from a, Delta B x (b, L, E N) and h_0 (b, E N)."""
        h = bu.new_zeros(bu.shape[0], bu.shape[2]) if s0 is None else s0
        Q_T, P_T, hs = self.Q.T, self.P.T, []
        for a_t, bu_t in zip(a.unbind(1), bu.unbind(1)):
            h = self._update(h, a_t, bu_t, Q_T, P_T)  # (b, E N)
            hs.append(h)
        return torch.stack(hs, 1)

    def _run(self, u: torch.Tensor, h0: torch.Tensor | None):
        """SSM states (b, L, E N), conv windows (b, L, (k - 1) E) and outputs (b, L, D)."""
        s0 = window0 = None
        if h0 is not None:
            s0, window0 = h0[:, :self.n_ssm], h0[:, self.n_ssm:]
        x, z = self.in_proj(u).chunk(2, -1)  # (b, L, E) each
        x, windows = self.conv.scan(x, window0)
        x = F.silu(x)
        a, bu, C = self._transition(x)  # (b, L, E, N), (b, L, E, N), (b, L, N): token-only
        hs = self._recurrence(a.flatten(2), bu.flatten(2), s0)  # (b, L, E N)
        ys = self._readout(hs.unflatten(-1, a.shape[-2:]), C, x, z)  # (b, L, D)
        return hs, windows, ys

    @time_chunked
    def scan(self, u, h0=None):
        hs, windows, ys = self._run(u, h0)
        return torch.cat([hs, windows], -1), ys

    def outputs(self, u, h0=None):
        """``scan(u, h0)[1]`` without concatenating the states; without gradients, in
        pieces of ``EVAL_CHUNK`` steps like ``scan``."""
        if torch.is_grad_enabled() or u.shape[1] <= EVAL_CHUNK:
            return self._run(u, h0)[2]
        ys = []
        for piece in u.split(EVAL_CHUNK, 1):
            hs, windows, y = self._run(piece, h0)
            h0 = torch.cat([hs[:, -1], windows[:, -1]], -1)  # the flat state after the piece
            ys.append(y)
        return torch.cat(ys, 1)  # (b, L, D)


def semi_affine_mamba(n_tokens: int, n_classes: int, d_model: int = 64, d_state: int = 16,
                      n_layers: int = 1, **kw: Any) -> SequenceModel:
    """Mamba plus ``P tanh(Q h + c)``. Options: the fields of :class:`SemiAffineMambaConfig`."""
    return residual_model("semi_affine_mamba", SemiAffineMambaLayer, SemiAffineMambaConfig,
                          n_tokens, n_classes, d_model, d_state, n_layers, kw)


def semi_affine_negative_mamba(n_tokens: int, n_classes: int, d_model: int = 64,
                               d_state: int = 16, n_layers: int = 1, **kw: Any
                               ) -> SequenceModel:
    """Negative Mamba (transition 2 exp(Delta A) - 1) plus ``P tanh(Q h + c)``."""
    if "negative" in kw:
        raise ValueError("semi_affine_negative_mamba always has negative=True; "
                         "use semi_affine_mamba for False")
    return residual_model("semi_affine_negative_mamba", SemiAffineMambaLayer,
                          SemiAffineMambaConfig, n_tokens, n_classes, d_model, d_state,
                          n_layers, dict(kw, negative=True))
