"""Unitary SSMs: AUSSM and Simple AUSSM, affine with eigenvalues on the unit circle.

Reference ``paper1-state-tracking.md`` 4.4 and 4.5. Both are layers of the pre-norm
residual stack (:class:`~sst_core.models.base.SequenceModel`, ``residual=True``) and read
the normed block input ``u_t`` (width D). Complex states are stored as ``[Re; Im]``.

**AUSSM** (4.4; ``arjunkaruvally/AUSSM`` ``wavesAI/model/aussm.py`` ``SSMauBlock`` and
``extension_cpp/ops.py`` ``reference_ssm_adaptive_unitary_optimized_polar``), channel i,
state j::

    [x_t; z_t] = W_in u_t                       (D each, no expansion)
    x_t <- conv_k(x)_t                           causal, depthwise, k = 4, no SiLU here
    Delta_t = softplus(W_dt W_x x_t + 2 b_dt)
    a_t[i, j] = (1 / sqrt(D)) sum_r X[i, j, r] x_t[r] + c[i, j],   c ~ U(-pi, pi)
    h_t[i, j] = e^{i a_t[i, j]} h_{t-1}[i, j] + Delta_t[i] B_j SiLU(x_t[i])
    y_t[i] = Re(sum_j C_j h_t[i, j]) + D_i SiLU(x_t[i]),   out_t = W_out(y_t * SiLU(z_t))

with ``B_j = softplus(Re b_j) e^{i Im b_j}`` (likewise C), ``b, c`` input-independent.
Two quirks of the released code are kept, each behind an ``AUSSMConfig`` flag:
``dt_bias_twice`` (``dt_proj`` already adds its bias, and ``ssm_au`` adds it again) and
``angle_times_dt=False`` (the papers write ``exp(i Delta a)``; the code uses ``exp(i a)``).
The released default ``conv_1d=True`` is ``d_conv=4``; as for Mamba
(:mod:`~sst_core.models.selective`), the conv window ``((k - 1) * D`` trailing state
entries, ``conv_state_size``) makes the step exact and is affine only in ``h`` for a fixed
window. Flat state: ``[Re h (D * N); Im h (D * N); window]``. ``AUSSMLayer.outputs`` (what
``forward`` and training use) runs the angles, the recurrence and the readout as one fused
:func:`~sst_core.ops.unitary_scan.unitary_scan`, which keeps no ``(b, L, D, N)`` tensor
outside the cache; ``scan`` still returns every state.

**Simple AUSSM** (4.5) has no published definition; this is the reference's proposal
[INF], the bare diagonal unitary SSM::

    h_t = e^{i theta(u_t)} h_{t-1} + B u_t,   theta(u) = W_theta u + c_theta,  B in C^{N x D}
    y_t = W_y [Re h_t; Im h_t]

with no Delta, conv, gate or skip. The proposal writes ``e(x_t)`` for the layer input;
in the residual stack it is the normed block input ``u_t`` (for the first layer
``RMSNorm(e(x_t))``, a function of the token alone), and theta and the input term are
linear in it. ``c_theta ~ U(-pi, pi)`` as AUSSM's angle bias.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from sst_core.models.base import RecurrentLayer, SequenceModel
from sst_core.models.registry import check_bool, check_number, check_size
from sst_core.models.selective import (
    CausalConv,
    outputs_in_pieces,
    residual_model,
    time_chunked,
)
from sst_core.ops import linear_scan
from sst_core.ops.unitary_scan import unitary_scan

__all__ = ["AUSSMConfig", "AUSSMLayer", "SimpleAUSSMConfig", "SimpleAUSSMLayer",
           "aussm", "simple_aussm"]


def _polar(raw: torch.Tensor, phase: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Re and Im of ``softplus(raw) e^{i phase}`` (the released B and C parametrisation)."""
    r = F.softplus(raw)
    return r * torch.cos(phase), r * torch.sin(phase)


def _unitary_step(h_re, h_im, angle, b_re, b_im) -> tuple[torch.Tensor, torch.Tensor]:
    """Re and Im of ``e^{i angle} h + b``, in real arithmetic."""
    cos, sin = torch.cos(angle), torch.sin(angle)
    return cos * h_re - sin * h_im + b_re, sin * h_re + cos * h_im + b_im


def _unitary_scan(angle: torch.Tensor, b: torch.Tensor, h0_re: torch.Tensor | None,
                  h0_im: torch.Tensor | None) -> torch.Tensor:
    """All ``h_t = e^{i angle_t} h_{t-1} + b_t`` (b complex) as one complex tensor; h0 as
    Re and Im, or (h0_im None) as one complex tensor."""
    a = torch.complex(torch.cos(angle), torch.sin(angle))  # no complex exp
    if h0_re is not None and h0_im is not None:
        h0_re = torch.complex(h0_re, h0_im)
    return linear_scan(a, b, h0_re)


# -- AUSSM ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class AUSSMConfig:
    d_model: int                 # D: width of the residual stream and of the SSM
    d_state: int = 16            # N: complex states per channel
    d_conv: int = 4              # k: causal depthwise conv width (1: no conv)
    dt_rank: int | None = None   # R: rank of the Delta projection (None: N, as released)
    dt_bias_twice: bool = True   # released code: softplus(W_dt W_x x + 2 b_dt)
    angle_times_dt: bool = False  # papers: e^{i Delta a}; released code: e^{i a}

    def __post_init__(self):
        for what in ("d_model", "d_state", "d_conv"):
            check_size(what, getattr(self, what))
        if self.dt_rank is not None:
            check_size("dt_rank", self.dt_rank)
        check_bool("dt_bias_twice", self.dt_bias_twice)
        check_bool("angle_times_dt", self.angle_times_dt)


class AUSSMLayer(RecurrentLayer):
    """One AUSSM mixer; recurrence in the module docstring."""

    is_affine = True

    def __init__(self, cfg: AUSSMConfig):
        super().__init__()
        self.cfg = cfg
        D, N = cfg.d_model, cfg.d_state
        R = cfg.dt_rank or N
        self.in_proj = nn.Linear(D, 2 * D, bias=False)
        self.conv = CausalConv(D, cfg.d_conv)
        self.x_proj = nn.Linear(D, R, bias=False)
        self.dt_proj = nn.Linear(R, D)
        bound = 1 / math.sqrt(D)  # nn.Linear's default init of the released xA_proj
        self.X = nn.Parameter(torch.empty(D * N, D).uniform_(-bound, bound))  # X[i, j, r]
        self.angle_bias = nn.Parameter(torch.empty(D, N).uniform_(-math.pi, math.pi))
        # B_j = softplus(b_re_j) e^{i b_im_j} (C from c); b, c ~ torch.randn(complex64)
        self.b_re, self.b_im, self.c_re, self.c_im = (
            nn.Parameter(torch.randn(N) * 0.5 ** 0.5) for _ in range(4))
        self.D = nn.Parameter(torch.ones(D))
        self.out_proj = nn.Linear(D, D, bias=False)
        self.d_in = self.d_out = D
        self.n_ssm = 2 * D * N
        self.conv_state_size = self.conv.state_size
        self.state_size = self.n_ssm + self.conv_state_size

    def _gains(self, x: torch.Tensor):
        """From the conv output x (..., D): Delta, Delta SiLU(x) and SiLU(x) (..., D)."""
        dt = self.dt_proj(self.x_proj(x))
        if self.cfg.dt_bias_twice:
            dt = dt + self.dt_proj.bias
        dt = F.softplus(dt)  # (..., D)
        s = F.silu(x)
        return dt, dt * s, s

    def _inputs(self, x: torch.Tensor):
        """From the conv output x (..., D): angle (..., D, N), Delta SiLU(x) and SiLU(x) (..., D)."""
        D, N = self.cfg.d_model, self.cfg.d_state
        dt, ds, s = self._gains(x)
        angle = F.linear(x, self.X / math.sqrt(D)).unflatten(-1, (D, N)) + self.angle_bias
        if self.cfg.angle_times_dt:
            angle = angle * dt[..., None]
        return angle, ds, s

    def _out(self, y, s, z):
        """out = W_out((y + D SiLU(x)) * SiLU(z)) for y = Re(sum_j C_j h_j) of shape (..., D)."""
        return self.out_proj((y + self.D * s) * F.silu(z))

    def step(self, h, u):
        b, D = u.shape[0], self.cfg.d_model
        x, z = self.in_proj(u).chunk(2, -1)  # (b, D) each
        x, window = self.conv.step(x, h[:, self.n_ssm:])
        angle, ds, s = self._inputs(x)
        B_re, B_im = _polar(self.b_re, self.b_im)
        h_re, h_im = h[:, :self.n_ssm].view(b, 2, D, -1).unbind(1)  # (b, D, N) each
        h_re, h_im = _unitary_step(h_re, h_im, angle, ds[..., None] * B_re, ds[..., None] * B_im)
        C_re, C_im = _polar(self.c_re, self.c_im)
        y = self._out(h_re @ C_re - h_im @ C_im, s, z)
        return torch.cat([h_re.flatten(1), h_im.flatten(1), window], -1), y

    def _split_state(self, h0):
        """The SSM state as Re and Im (b, D, N) each, and the conv window; or Nones."""
        if h0 is None:
            return (None, None), None
        b, D = h0.shape[0], self.cfg.d_model
        return h0[:, :self.n_ssm].view(b, 2, D, -1).unbind(1), h0[:, self.n_ssm:]

    @time_chunked
    def scan(self, u, h0=None):
        s0, window0 = self._split_state(h0)
        x, z = self.in_proj(u).chunk(2, -1)  # (b, L, D) each
        x, windows = self.conv.scan(x, window0)
        angle, ds, s = self._inputs(x)
        B, C = (torch.complex(*_polar(r, p)) for r, p in ((self.b_re, self.b_im),
                                                           (self.c_re, self.c_im)))  # (N,)
        # products as matmuls: their backward needs no (b, L, D, N) temporaries
        hs = _unitary_scan(angle, ds.to(B.dtype)[..., None] @ B[None], *s0)  # (b, L, D, N)
        ys = self._out((hs @ C[:, None]).real[..., 0], s, z)
        return torch.cat([hs.real.flatten(2), hs.imag.flatten(2), windows], -1), ys

    def outputs(self, u, h0=None):
        """``scan(u, h0)[1]`` by the fused :func:`~sst_core.ops.unitary_scan.unitary_scan`,
        which keeps no ``(b, L, D, N)`` temporaries but the states its backward needs (what
        ``forward`` and training use); without gradients in pieces of EVAL_CHUNK steps
        (:func:`~sst_core.models.selective.outputs_in_pieces`), keeping no states."""
        return outputs_in_pieces(self._outputs, u, h0)

    def _outputs(self, u, h0, last: bool):
        """The outputs (b, L, D) and, if ``last``, the flat state after the last step."""
        (h0_re, h0_im), window0 = self._split_state(h0)
        x, z = self.in_proj(u).chunk(2, -1)  # (b, L, D) each
        x = self.conv.outputs(x, window0, last)
        if last:
            x, window = x
        dt, ds, s = self._gains(x)
        B, C = (torch.stack(_polar(r, p), -1) for r, p in ((self.b_re, self.b_im),
                                                            (self.c_re, self.c_im)))  # (N, 2)
        y, h_last = unitary_scan(x, self.X / math.sqrt(self.cfg.d_model), self.angle_bias, ds,
                                 B, C, None if h0 is None else torch.stack([h0_re, h0_im], -1),
                                 dt if self.cfg.angle_times_dt else None)
        ys = self._out(y, s, z)
        if not last:
            return ys, None
        b = u.shape[0]
        return ys, torch.cat([h_last[..., 0].reshape(b, -1), h_last[..., 1].reshape(b, -1),
                              window], -1)


def aussm(n_tokens: int, n_classes: int, d_model: int = 64, d_state: int = 16,
          n_layers: int = 1, **kw: Any) -> SequenceModel:
    """AUSSM (adaptive unitary SSM), reference 4.4. Options: the fields of AUSSMConfig."""
    return residual_model("aussm", AUSSMLayer, AUSSMConfig, n_tokens, n_classes,
                          d_model, d_state, n_layers, kw)


# -- Simple AUSSM (proposal) ---------------------------------------------------------------
@dataclass(frozen=True)
class SimpleAUSSMConfig:
    d_model: int      # D: width of the residual stream (the layer input u_t)
    d_state: int = 16  # N: complex states

    def __post_init__(self):
        check_size("d_model", self.d_model)
        check_size("d_state", self.d_state)


class SimpleAUSSMLayer(RecurrentLayer):
    """``h_t = e^{i theta(u_t)} h_{t-1} + B u_t``, ``y_t = W_y [Re h_t; Im h_t]`` (proposal)."""

    is_affine = True
    conv_state_size = 0

    def __init__(self, cfg: SimpleAUSSMConfig):
        super().__init__()
        self.cfg = cfg
        D, N = cfg.d_model, cfg.d_state
        self.theta = nn.Linear(D, N)  # W_theta, c_theta
        with torch.no_grad():
            self.theta.bias.uniform_(-math.pi, math.pi)
        self.B = nn.Linear(D, 2 * N, bias=False)  # [Re B; Im B]
        self.W_y = nn.Linear(2 * N, D, bias=False)
        self.d_in = self.d_out = D
        self.state_size = 2 * N

    def step(self, h, u):
        b_re, b_im = self.B(u).chunk(2, -1)  # (b, N) each
        h = torch.cat(_unitary_step(*h.chunk(2, -1), self.theta(u), b_re, b_im), -1)  # (b, 2N)
        return h, self.W_y(h)

    @time_chunked
    def scan(self, u, h0=None):
        h0 = (None, None) if h0 is None else h0.chunk(2, -1)
        hs = _unitary_scan(self.theta(u), torch.complex(*self.B(u).chunk(2, -1)), *h0)
        hs = torch.cat([hs.real, hs.imag], -1)  # (b, L, 2N)
        return hs, self.W_y(hs)

    def outputs(self, u, h0=None):
        """``scan(u, h0)[1]`` with the complex numbers interleaved ``[re, im]`` throughout:
        the input term comes out of ``B`` in that order (its rows permuted), and ``W_y``
        reads the states in it (its columns permuted), so no ``[Re; Im]`` halves are split
        or joined; without gradients in pieces of EVAL_CHUNK steps (the state is small)."""
        return outputs_in_pieces(self._outputs, u, h0)

    def _outputs(self, u, h0, last: bool):
        N = self.cfg.d_state
        pairs = lambda w: w.unflatten(0, (2, N)).transpose(0, 1).flatten(0, 1)  # noqa: E731
        bu = torch.view_as_complex(F.linear(u, pairs(self.B.weight)).unflatten(-1, (N, 2)))
        h0c = None if h0 is None else torch.complex(*h0.chunk(2, -1))
        hs = _unitary_scan(self.theta(u), bu, h0c, None)  # (b, L, N)
        ys = F.linear(torch.view_as_real(hs).flatten(-2), pairs(self.W_y.weight.T).T)
        h_last = torch.cat([hs[:, -1].real, hs[:, -1].imag], -1) if last else None
        return ys, h_last


def simple_aussm(n_tokens: int, n_classes: int, d_model: int = 64, d_state: int = 16,
                 n_layers: int = 1, **kw: Any) -> SequenceModel:
    """Simple AUSSM, the proposal of reference 4.5."""
    return residual_model("simple_aussm", SimpleAUSSMLayer, SimpleAUSSMConfig, n_tokens,
                          n_classes, d_model, d_state, n_layers, kw)
