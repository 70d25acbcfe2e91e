"""Selective SSMs: Mamba, Negative Mamba and Mamba-3 (SISO), all affine.

Reference ``paper1-state-tracking.md`` section 4 (4.1-4.3). Each model is the pre-norm
residual stack of :class:`~sst_core.models.base.SequenceModel`; the layer below reads the
normed block input ``u_t`` (width D) and returns a width-D update.

**Mamba** (4.1; ``state-spaces/mamba`` ``mamba_simple.py``), channel c, state n::

    [x_t; z_t] = W_in u_t                                   (d_inner = E * D each)
    x_t <- SiLU(conv_k(x)_t)                                causal, depthwise, k = 4
    [d_t; B_t; C_t] = W_x x_t,   Delta_t = softplus(W_dt d_t + b_dt)
    h_t[c, n] = a_t[c, n] h_{t-1}[c, n] + Delta_t[c] B_t[n] x_t[c]
    y_t[c] = sum_n C_t[n] h_t[c, n] + D[c] x_t[c],   out_t = W_out (y_t * SiLU(z_t))

with ``a_t = exp(Delta_t A)``, ``A = -exp(A_log)`` (eigenvalues in (0, 1)); **Negative
Mamba** (4.2, Grazzi et al.) uses ``a_t = 2 exp(Delta_t A) - 1`` (eigenvalues in (-1, 1))
and is otherwise identical (``MambaConfig.negative``).

``MambaLayer.outputs`` (what the model's ``forward`` uses) runs the fused selective scan
of :mod:`sst_core.ops.selective_scan`, which never builds the ``(b, L, E, N)`` states;
``scan`` still returns them.

The conv's last ``k - 1`` inputs are part of the state, so ``step`` is exact. The flat
state is ``[h (d_inner * N); window ((k - 1) * d_inner, oldest first)]``. The map
``h_{t-1} -> h_t`` is affine in the SSM state ``h`` for a fixed input window; it is *not*
affine in the window entries (they pass through SiLU, softplus and the product
``Delta B x``). The window is a shift register of past inputs, forgotten after k - 1
steps, so the paper's class (affine, section 2.1, where ``u_t`` is the conv output) holds;
``conv_state_size`` tells tests and diagnostics which trailing coordinates it occupies.
``d_conv=1`` removes the conv and the window.

**Mamba-3** (4.3; ``state-spaces/mamba`` ``modules/mamba3.py``,
``ops/triton/mamba3/mamba3_siso_step.py``), SISO, per head (P channels, N states)::

    [z; v; B; C; dd_dt; dd_A; trap; phi] = W_in u_t                (no conv)
    Delta_t = softplus(dd_dt + dt_bias),  A_t = min(-softplus(dd_A), -A_floor)
    alpha_t = exp(Delta_t A_t),  lambda_t = sigmoid(trap),  dtheta_t = pi tanh(phi) Delta_t
    beta_t = alpha_t Delta_t (1 - lambda_t),   gamma_t = lambda_t Delta_t
    K_t = RMSNorm(B_t) + b_B,   Q_t = RMSNorm(C_t) + b_C                   (per head)
    official: So_t = alpha_t So_{t-1} + beta_t v_{t-1} Kr_{t-1}^T + gamma_t v_t Kr_t^T,
              y_t = So_t Qr_t + D v_t,  Kr_t = Rot(theta_t) K_t,  theta_t = sum dtheta

Here it runs in the rotated frame: on the ``n_rope`` rotated pairs, read as complex
numbers ``k = k_re + i k_im``, ``Kr_s . Qr_t = Re(conj(k_s) q_t e^{i(theta_t - theta_s)})``,
so the state ``S_t = e^{-i theta_t} So_t`` needs no angle in the state::

    S_t = R_t (alpha_t S_{t-1} + beta_t W_{t-1}) + gamma_t W_t,   W_t = v_t K_t^T
    y_t = sum_n S_t[:, n] Q_t[n] + D v_t     (S, Q as [Re; Im; real] along n)

with ``R_t = diag(e^{-i dtheta_t})`` on the pairs and 1 on the unrotated states: a
diagonal recurrence with eigenvalues ``alpha_t e^{-i dtheta_t}`` and ``alpha_t``, all
inside the unit disk. The trapezoid term needs ``W_{t-1} = v_{t-1} K_{t-1}^T`` in the
state; storing the product (not v and K apart, whose product would make the step
bilinear) keeps it affine, with the W block's eigenvalues 0. Flat state per layer:
``(n_heads, P, 2N)``, each row ``[S (N); W (N)]`` with N ordered ``[Re (n_rope); Im
(n_rope); real]`` (the official kernel pairs adjacent entries; the order is a relabelling
of B and C). ``tests/models/test_selective.py`` checks the frame against the official form.

``Mamba3Layer.outputs`` (what ``forward`` and training use) builds no state: a head's
transition is one decay and one rotation per pair shared by its P channels, so the
recurrence unrolls into a causal attention with decay inside blocks of ``BLOCK`` positions
(:func:`trapezoid_ssd`, :mod:`sst_core.ops.ssd`), with the state carried only from one
block to the next. ``scan`` still returns every state.

Proposals [INF]: ``Mamba3Config.headdim`` defaults to 16 (official 64 at widths of 768+;
the book's models are 32-128 wide); ``rope_fraction`` may be any value in (0, 1]. The
Delta init of both models is the official [1e-3, 1e-1] (``dt_min``, ``dt_max``).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, fields
from typing import Any

import torch
from torch import nn
from torch.autograd.function import once_differentiable
from torch.nn import functional as F

from sst_core.models.base import RecurrentLayer, RMSNorm, SequenceModel
from sst_core.models.registry import check_bool, check_number, check_size
from sst_core.ops import linear_scan
from sst_core.ops.causal_conv import conv_silu
from sst_core.ops.selective_scan import selective_scan
from sst_core.ops.ssd import decayed_attention

__all__ = ["MambaConfig", "MambaLayer", "Mamba3Config", "Mamba3Layer", "CausalConv",
           "discretize", "mamba", "negative_mamba", "mamba3", "make_config", "residual_model",
           "time_chunked", "outputs_in_pieces", "EVAL_CHUNK", "BLOCK", "trapezoid_ssd"]


# -- shared by the residual-stream families (selective, unitary, attention) ---------------
def make_config(cls, **kw: Any):
    """``cls(**kw)``, with unknown options reported as a ValueError listing the allowed ones."""
    allowed = [f.name for f in fields(cls)]
    unknown = sorted(set(kw) - set(allowed))
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(unknown)} for {cls.__name__}; "
                         f"allowed: {', '.join(allowed)}")
    return cls(**kw)


def residual_model(name: str, layer_cls, cfg_cls, n_tokens: int, n_classes: int,
                   d_model: int, d_state: int, n_layers: int, kw: dict) -> SequenceModel:
    """``n_layers`` layers of ``layer_cls(cfg)`` in the pre-norm residual block."""
    check_size("n_layers", n_layers)
    cfg = make_config(cfg_cls, d_model=d_model, d_state=d_state, **kw)
    layers = [layer_cls(cfg) for _ in range(n_layers)]
    return SequenceModel(name, n_tokens, n_classes, d_model, layers, residual=True)


EVAL_CHUNK = 128  # time steps per piece of a scan that records no gradient


def time_chunked(scan):
    """Decorate ``scan(self, u, h0)`` to run in pieces of ``EVAL_CHUNK`` steps without grad.

    The state carries everything between pieces, so the result is the same; the
    ``(b, L, ...)`` temporaries of long evaluations shrink to ``(b, EVAL_CHUNK, ...)``.
    """
    @functools.wraps(scan)
    def chunked(self, u: torch.Tensor, h0: torch.Tensor | None = None):
        b, L, _ = u.shape
        if torch.is_grad_enabled() or L <= EVAL_CHUNK:
            return scan(self, u, h0)
        hs = u.new_empty(b, L, self.state_size)
        ys = u.new_empty(b, L, self.d_out)
        for start in range(0, L, EVAL_CHUNK):
            piece = slice(start, start + EVAL_CHUNK)
            hs[:, piece], ys[:, piece] = scan(self, u[:, piece], h0)
            h0 = hs[:, min(start + EVAL_CHUNK, L) - 1]
        return hs, ys
    return chunked


def outputs_in_pieces(run, u: torch.Tensor, h0: torch.Tensor | None) -> torch.Tensor:
    """The outputs (b, L, d_out) of ``run(u, h0, last) -> (ys, h_last)`` (a layer's
    outputs, and its flat state after the last step when ``last``): in one call while
    gradients are recorded or ``L <= EVAL_CHUNK``, else in pieces of ``EVAL_CHUNK`` steps,
    each starting from the state the previous one ended in. No state trajectory is kept,
    and the ``(b, L, ...)`` temporaries of long evaluations shrink to ``(b, EVAL_CHUNK, ...)``.
    """
    if torch.is_grad_enabled() or u.shape[1] <= EVAL_CHUNK:
        return run(u, h0, False)[0]
    ys = []
    for piece in u.split(EVAL_CHUNK, 1):
        y, h0 = run(piece, h0, True)
        ys.append(y)
    return torch.cat(ys, 1)


def inv_softplus_dt(n: int, dt_min: float, dt_max: float, floor: float) -> torch.Tensor:
    """Bias b with softplus(b) log-uniform in [dt_min, dt_max] (Mamba's dt init)."""
    dt = torch.exp(torch.rand(n) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))
    dt = dt.clamp(min=floor)
    return dt + torch.log(-torch.expm1(-dt))  # (n,)


class CausalConv(nn.Module):
    """Causal depthwise conv ``y_t = bias + sum_j w[:, j] x_{t-k+1+j}`` with its input window.

    The window (the last k - 1 inputs, oldest first, flattened to ``(k - 1) * d``) is the
    conv's state: ``scan`` starts from ``window0`` (zeros: the zero padding of
    ``nn.Conv1d(padding=k-1)``) and returns the window after every step.
    """

    def __init__(self, d: int, k: int):
        super().__init__()
        self.d, self.k = d, k
        bound = 1 / math.sqrt(k)  # nn.Conv1d's default init for a depthwise kernel
        self.weight = nn.Parameter(torch.empty(d, k).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(d).uniform_(-bound, bound))
        self.state_size = (k - 1) * d

    def _extend(self, x: torch.Tensor, window0: torch.Tensor | None) -> torch.Tensor:
        """The inputs after the window: (b, L + k - 1, d)."""
        b, L, d = x.shape
        if window0 is None:
            window0 = x.new_zeros(b, self.state_size)
        return torch.cat([window0.view(b, self.k - 1, d), x], 1)

    def _conv(self, x_ext: torch.Tensor, L: int) -> torch.Tensor:
        return self.bias + sum(self.weight[:, j] * x_ext[:, j:j + L] for j in range(self.k))

    def outputs(self, x: torch.Tensor, window0: torch.Tensor | None, last: bool = False):
        """``scan(x, window0)[0]`` without the windows: (b, L, d); with ``last``, also the
        window after the last step, (b, state_size)."""
        x_ext = self._extend(x, window0)
        y = self._conv(x_ext, x.shape[1])
        if not last:
            return y
        return y, x_ext[:, x_ext.shape[1] - (self.k - 1):].reshape(x.shape[0], self.state_size)

    def scan(self, x: torch.Tensor, window0: torch.Tensor | None
             ) -> tuple[torch.Tensor, torch.Tensor]:
        b, L, d = x.shape
        x_ext = self._extend(x, window0)  # (b, L + k - 1, d)
        y = self._conv(x_ext, L)
        windows = x_ext.unfold(1, self.k - 1, 1)[:, 1:]  # (b, L, d, k - 1)
        return y, windows.transpose(2, 3).reshape(b, L, self.state_size)  # (b, L, d), ...

    def step(self, x: torch.Tensor, window: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, d = x.shape
        x_ext = torch.cat([window.view(b, self.k - 1, d), x[:, None]], 1)  # (b, k, d)
        y = self.bias + (x_ext * self.weight.T).sum(1)  # (b, d)
        return y, x_ext[:, 1:].reshape(b, self.state_size)


# -- Mamba and Negative Mamba --------------------------------------------------------------
def discretize(dt: torch.Tensor, A: torch.Tensor, negative: bool = False) -> torch.Tensor:
    """``a = exp(dt[..., None] * A)`` (``2 exp(dt A) - 1`` if negative); dt (..., E), A (E, N).

    ``_Discretize`` computes exactly this with fewer (..., E, N) temporaries; the plain
    formula runs under torch.func transforms, which custom Functions here do not support.
    """
    if torch._C._are_functorch_transforms_active():
        a = torch.exp(dt[..., None] * A)
        return 2 * a - 1 if negative else a
    return _Discretize.apply(dt, A, negative)


class _Discretize(torch.autograd.Function):
    """Forward in place on one buffer; backward ``t = dL/da * da/d(dt A)`` contracted by einsum."""

    @staticmethod
    def forward(ctx, dt, A, negative):
        a = (dt[..., None] * A).exp_()  # (..., E, N)
        if negative:
            a.mul_(2).sub_(1)
        ctx.negative = negative
        ctx.save_for_backward(dt, A, a)
        return a

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        dt, A, a = ctx.saved_tensors
        # d a / d(dt A) = exp(dt A), which is a, or (a + 1) for 2 exp(dt A) - 1
        t = torch.addcmul(grad, grad, a) if ctx.negative else grad * a  # (..., E, N)
        t = t.flatten(0, -3)  # (M, E, N)
        grad_dt = torch.einsum("men,en->me", t, A).view(dt.shape)
        grad_A = torch.einsum("men,me->en", t, dt.reshape(-1, dt.shape[-1]))
        return grad_dt, grad_A, None


def _check_dt(cfg) -> None:
    """Delta's init range: finite, 0 < dt_min <= dt_max, and a floor >= 0."""
    check_number("dt_min", cfg.dt_min, 0.0)
    check_number("dt_max", cfg.dt_max, 0.0)
    check_number("dt_init_floor", cfg.dt_init_floor, 0.0, low_open=False)
    if not cfg.dt_min <= cfg.dt_max:
        raise ValueError(f"need 0 < dt_min <= dt_max, got {cfg.dt_min}, {cfg.dt_max}")


@dataclass(frozen=True)
class MambaConfig:
    d_model: int                # D: width of the residual stream
    d_state: int = 16           # N: states per channel
    expand: int = 2             # E: d_inner = E * D
    d_conv: int = 4             # k: causal depthwise conv width (1: no conv)
    dt_rank: int | None = None  # R: rank of the Delta projection (None: ceil(D / 16))
    dt_min: float = 1e-3        # Delta at init: log-uniform in [dt_min, dt_max]
    dt_max: float = 1e-1
    dt_init_floor: float = 1e-4
    negative: bool = False      # Negative Mamba: a = 2 exp(Delta A) - 1

    def __post_init__(self):
        for what in ("d_model", "d_state", "expand", "d_conv"):
            check_size(what, getattr(self, what))
        if self.dt_rank is not None:
            check_size("dt_rank", self.dt_rank)
        _check_dt(self)
        check_bool("negative", self.negative)


class MambaLayer(RecurrentLayer):
    """One Mamba (or Negative Mamba) mixer; recurrence in the module docstring."""

    is_affine = True

    def __init__(self, cfg: MambaConfig):
        super().__init__()
        self.cfg = cfg
        D, N = cfg.d_model, cfg.d_state
        E = self.d_inner = cfg.expand * D
        R = self.dt_rank = cfg.dt_rank or math.ceil(D / 16)
        self.in_proj = nn.Linear(D, 2 * E, bias=False)
        self.conv = CausalConv(E, cfg.d_conv)
        self.x_proj = nn.Linear(E, R + 2 * N, bias=False)
        self.dt_proj = nn.Linear(R, E)
        with torch.no_grad():
            self.dt_proj.weight.uniform_(-R ** -0.5, R ** -0.5)
            self.dt_proj.bias.copy_(inv_softplus_dt(E, cfg.dt_min, cfg.dt_max, cfg.dt_init_floor))
        self.A_log = nn.Parameter(torch.log(torch.arange(1, N + 1.0)).repeat(E, 1))  # (E, N)
        self.D = nn.Parameter(torch.ones(E))
        self.out_proj = nn.Linear(E, D, bias=False)
        self.d_in = self.d_out = D
        self.n_ssm = E * N
        self.conv_state_size = self.conv.state_size
        self.state_size = self.n_ssm + self.conv_state_size

    def _coefficients(self, x: torch.Tensor):
        """From the conv output x (..., E): Delta (..., E), A (E, N), B and C (..., N)."""
        N = self.cfg.d_state
        d, B, C = self.x_proj(x).split([self.dt_rank, N, N], -1)
        return F.softplus(self.dt_proj(d)), -torch.exp(self.A_log), B, C

    def _transition(self, x: torch.Tensor):
        """From the conv output x (..., E): a, Delta x B^T (..., E, N) and C (..., N)."""
        dt, A, B, C = self._coefficients(x)  # (..., E), (E, N), (..., N), (..., N)
        a = discretize(dt, A, self.cfg.negative)  # (..., E, N)
        return a, (dt * x)[..., None] @ B[..., None, :], C  # outer product, cheap backward

    def _gate(self, y, x, z):
        """out = W_out((y + D x) * SiLU(z)); y = C . h, x, z (..., E)."""
        return self.out_proj((y + self.D * x) * F.silu(z))  # (..., D)

    def _readout(self, h, C, x, z):
        """out = W_out((C . h + D x) * SiLU(z)); h (..., E, N), C (..., N), x, z (..., E)."""
        return self._gate((h @ C[..., None])[..., 0], x, z)

    def _split_state(self, h0: torch.Tensor | None):
        """The SSM state (b, E, N) and the conv window of a flat state h0, or Nones."""
        if h0 is None:
            return None, None
        return h0[:, :self.n_ssm].view(h0.shape[0], self.d_inner, -1), h0[:, self.n_ssm:]

    def step(self, h, u):
        b = u.shape[0]
        s, window = h[:, :self.n_ssm].view(b, self.d_inner, -1), h[:, self.n_ssm:]
        x, z = self.in_proj(u).chunk(2, -1)  # (b, E) each
        x, window = self.conv.step(x, window)
        x = F.silu(x)
        a, bu, C = self._transition(x)
        s = a * s + bu  # (b, E, N)
        return torch.cat([s.flatten(1), window], -1), self._readout(s, C, x, z)

    @time_chunked
    def scan(self, u, h0=None):
        s0, window0 = self._split_state(h0)
        x, z = self.in_proj(u).chunk(2, -1)  # (b, L, E) each
        x, windows = self.conv.scan(x, window0)
        x = F.silu(x)
        a, bu, C = self._transition(x)
        hs = linear_scan(a, bu, s0)  # (b, L, E, N)
        ys = self._readout(hs, C, x, z)  # (b, L, D)
        return torch.cat([hs.flatten(2), windows], -1), ys

    def outputs(self, u, h0=None):
        """``scan(u, h0)[1]`` by the fused selective scan, which builds no (b, L, E, N)
        tensor and applies Delta's softplus, D and the gate itself
        (:mod:`sst_core.ops.selective_scan`), after the conv and its SiLU in one pass
        (:mod:`sst_core.ops.causal_conv`): what ``forward`` and training use.
        Without gradients, sequences longer than ``EVAL_CHUNK`` run in pieces of that
        many steps, carrying the state (SSM state and conv window) between them, so that
        an evaluation holds only (b, EVAL_CHUNK, ...) temporaries besides its output.
        On CUDA the selective scan takes its parallel path (whole-sequence tensors, the
        chunked scan of ``linear_scan``).
        """
        b, L, _ = u.shape
        if torch.is_grad_enabled() or L <= EVAL_CHUNK:
            return self._outputs(u, h0)[0]
        out = u.new_empty(b, L, self.d_out)
        for start in range(0, L, EVAL_CHUNK):
            piece = slice(start, start + EVAL_CHUNK)
            out[:, piece], h0 = self._outputs(u[:, piece], h0, True)
        return out

    def _outputs(self, u, h0=None, final_state=False):
        """The outputs (b, L, D) and, if ``final_state``, the flat state after the last
        step (b, state_size), else None."""
        s0, window0 = self._split_state(h0)
        k = self.cfg.d_conv
        x_in, z = self.in_proj(u).chunk(2, -1)  # (b, L, E) each
        x = conv_silu(x_in, self.conv.weight, self.conv.bias, window0 if k > 1 else None)
        d, B, C = self.x_proj(x).split([self.dt_rank, self.cfg.d_state, self.cfg.d_state], -1)
        # softplus(W_dt d + b_dt), D x and the gate SiLU(z) inside the scan
        y, s_last = selective_scan(F.linear(d, self.dt_proj.weight), -torch.exp(self.A_log),
                                   x, B, C, s0, self.cfg.negative, return_last=True, D=self.D,
                                   z=z, dt_bias=self.dt_proj.bias, dt_softplus=True)
        out = self.out_proj(y)  # (b, L, D)
        if not final_state:
            return out, None
        b, L, E = x_in.shape
        if window0 is None:
            window0 = x_in.new_zeros(b, self.conv_state_size)
        # the conv's window after the last step: its last k - 1 inputs, oldest first
        window = torch.cat([window0.view(b, k - 1, E), x_in[:, max(0, L - k + 1):]], 1)
        window = window[:, window.shape[1] - (k - 1):]
        return out, torch.cat([s_last.flatten(1), window.flatten(1)], -1)


def mamba(n_tokens: int, n_classes: int, d_model: int = 64, d_state: int = 16,
          n_layers: int = 1, **kw: Any) -> SequenceModel:
    """Mamba (S6), reference 4.1. Options: the fields of :class:`MambaConfig`."""
    return residual_model("mamba", MambaLayer, MambaConfig, n_tokens, n_classes,
                          d_model, d_state, n_layers, kw)


def negative_mamba(n_tokens: int, n_classes: int, d_model: int = 64, d_state: int = 16,
                   n_layers: int = 1, **kw: Any) -> SequenceModel:
    """Negative Mamba (transition 2 exp(Delta A) - 1), reference 4.2."""
    if "negative" in kw:
        raise ValueError("negative_mamba always has negative=True; use mamba for False")
    return residual_model("negative_mamba", MambaLayer, MambaConfig, n_tokens, n_classes,
                          d_model, d_state, n_layers, dict(kw, negative=True))


# -- Mamba-3 -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mamba3Config:
    d_model: int                # D: width of the residual stream
    d_state: int = 16           # N: key/query size per head (even)
    expand: int = 2             # E: d_inner = E * D
    headdim: int = 16           # P: channels per head, n_heads = d_inner / P [INF]
    rope_fraction: float = 0.5  # share of the N states in rotated pairs
    dt_min: float = 1e-3        # Delta at init: log-uniform in [dt_min, dt_max]
    dt_max: float = 1e-1
    dt_init_floor: float = 1e-4
    A_floor: float = 1e-4       # A_t <= -A_floor

    def __post_init__(self):
        for what in ("d_model", "d_state", "expand", "headdim"):
            check_size(what, getattr(self, what))
        if self.d_state % 2:
            raise ValueError(f"mamba3 needs an even d_state (rotated pairs), got {self.d_state}")
        if not 0 < self.rope_fraction <= 1:
            raise ValueError(f"rope_fraction must be in (0, 1], got {self.rope_fraction}")
        if self.n_rope < 1:
            raise ValueError(f"mamba3 needs at least one rotated pair: int(d_state * "
                             f"rope_fraction) // 2 >= 1, got d_state={self.d_state}, "
                             f"rope_fraction={self.rope_fraction}")
        d_inner = self.expand * self.d_model
        if d_inner % self.headdim:
            raise ValueError(f"headdim {self.headdim} must divide d_inner = expand * d_model "
                             f"= {d_inner}")
        _check_dt(self)
        check_number("A_floor", self.A_floor, 0.0)

    @property
    def n_rope(self) -> int:
        return int(self.d_state * self.rope_fraction) // 2


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, n: int) -> torch.Tensor:
    """``e^{-i dtheta} x`` on the pairs ``(x[..., j], x[..., n + j])``, j < n; rest unchanged."""
    re, im, rest = x[..., :n], x[..., n:2 * n], x[..., 2 * n:]
    return torch.cat([cos * re + sin * im, cos * im - sin * re, rest], -1)


# Positions per block of trapezoid_ssd: the training length (60) fits in one; at length
# 1000 the (b, H, L, BLOCK) score and decay matrices stay small.
BLOCK = 64


def trapezoid_ssd(log_alpha: torch.Tensor, dtheta: torch.Tensor, gamma: torch.Tensor,
                  delta: torch.Tensor, v: torch.Tensor, K: torch.Tensor, Q: torch.Tensor,
                  S0: torch.Tensor | None = None, W0: torch.Tensor | None = None,
                  n_rope: int = 1, last: bool = False, block: int = BLOCK):
    """Every readout ``y_t = S_t Q_t`` of the Mamba-3 recurrence (rotated frame, module
    docstring) ``S_t = R_t (alpha_t S_{t-1} + beta_t W_{t-1}) + gamma_t W_t``, ``W_t = v_t
    K_t^T``, ``beta_t = alpha_t delta_t``, without building a state per step.

    log_alpha, gamma, delta (b, L, H); dtheta (b, L, H, n_rope); v (b, L, H, P); K, Q (b,
    L, H, N); S0, W0 (b, H, P, N) start the recurrence (zero when omitted). Returns y (b,
    L, H, P) and, if ``last``, ``(S_L, W_L)``.

    The transition of a head is one decay ``alpha_t`` and one rotation per pair, shared by
    its P channels, so the recurrence unrolls into a masked attention with decay (the
    quadratic form of Mamba-2's SSD). With ``A_t = sum_{r <= t} log alpha_r`` and the
    cumulative angles ``theta_t = sum_{r <= t} dtheta_r`` (both from the block's start),
    ``Kr_s = e^{i theta_s} K_s`` and ``Qr_t = e^{i theta_t} Q_t`` on the pairs (the
    official RoPE form), the trapezoid input of step s+1 folded into step s (``R_{s+1}
    beta_{s+1} = alpha_{s+1} R_{s+1} delta_{s+1}``)::

        y_t = sum_{s <= t} e^{A_t - A_s} (Qr_t . Kr_s) (gamma_s + [s < t] delta_{s+1}) v_s
              + e^{A_t} (S' Qr_t),            S' = S_in + delta_start W_in

    inside each block of ``block`` positions; ``S'`` carries the blocks before (the state
    at the block's start and its last ``W``, from a loop over blocks). Per block that is
    a ``(block, block)`` score matrix per head instead of ``(block, P, N)`` states. The
    exponent differences ``A_t - A_s`` are taken from cumulative sums in float64 (then
    rounded once), so they carry no cancellation error.
    """
    b, L, H, P = v.shape
    N, n = K.shape[-1], n_rope
    nb = -(-L // block)  # blocks
    C = -(-L // nb)  # positions per block (equal blocks, at most ``block``)
    pad = nb * C - L

    def blocked(x, feature_major=True):  # (b, L, H, F) -> (b, nb, H, F, C) (or .., C, F)
        if pad:  # padding adds nothing (zero inputs, no decay, no angle)
            x = F.pad(x, (0, 0, 0, 0, 0, pad))
        x = x.unflatten(1, (nb, C))  # (b, nb, C, H, F)
        return x.permute(0, 1, 3, 4, 2) if feature_major else x.transpose(2, 3)

    delta_next = torch.cat([delta[:, 1:], delta.new_zeros(b, 1, H)], 1)  # delta_{s+1}
    la, g, d_start, d_next = blocked(torch.stack([log_alpha, gamma, delta, delta_next], -1)
                                     ).contiguous().unbind(-2)  # (b, nb, H, C) each
    d_next = torch.cat([d_next[..., :-1], d_next.new_zeros(b, nb, H, 1)], -1)  # 0 at ends
    A = la.cumsum(-1)  # (b, nb, H, C)
    theta = blocked(dtheta).cumsum(-1)  # (b, nb, H, n, C)
    cos, sin = torch.cos(theta), torch.sin(theta)
    Kb, Qb = blocked(K).contiguous(), blocked(Q).contiguous()  # (b, nb, H, N, C)

    def rot(x):  # e^{+i theta} on the pairs (rows j, n + j), feature-major
        re, im, rest = x.split([n, n, N - 2 * n], -2)  # (its backward is a cat, no zeros)
        return torch.cat([cos * re - sin * im, cos * im + sin * re, rest], -2)

    Kr, Qr = rot(Kb), rot(Qb)
    vb = blocked(v, feature_major=False)  # (b, nb, H, C, P)
    e = g + d_next  # (b, nb, H, C): weight of v_s in the later steps' outputs
    y = decayed_attention(A, Qr, Kr, vb, e, g)  # (b, nb, H, C, P)
    state = None
    if nb > 1 or S0 is not None or last:
        # each block's own contribution to the state at its end, and the blocks' W_end
        w = torch.exp(A[..., -1:] - A) * e  # (b, nb, H, C)
        S_own = (w[..., None, :] * vb.transpose(-1, -2)) @ Kr.transpose(-1, -2)  # (.., P, N)
        ends = torch.arange(C - 1, nb * C, C, device=v.device).clamp(max=L - 1)
        W_end = v[:, ends, ..., None] * K[:, ends, :, None, :]  # (b, nb, H, P, N)
        S_in = v.new_zeros(b, H, P, N) if S0 is None else S0
        W_in = W0
        starts = []
        for j in range(nb):
            if W_in is not None:
                S_in = S_in + d_start[:, j, :, 0, None, None] * W_in
            starts.append(S_in)
            S_in = rotate(A[:, j, :, -1, None, None].exp() * S_in + S_own[:, j],
                          cos[:, j, :, None, :, -1], sin[:, j, :, None, :, -1], n)
            W_in = W_end[:, j]
        if nb > 1 or S0 is not None:
            y = y + A.exp()[..., None] * (torch.stack(starts, 1) @ Qr).transpose(-1, -2)
        state = (S_in, W_in)
    y = y.transpose(2, 3).flatten(1, 2)[:, :L]  # (b, L, H, P)
    return (y, state) if last else y


class Mamba3Layer(RecurrentLayer):
    """One Mamba-3 SISO mixer in the rotated frame; recurrence in the module docstring.

    Flat state: ``(n_heads, P, 2N)`` with rows ``[S (N); W (N)]``.
    """

    is_affine = True
    conv_state_size = 0

    def __init__(self, cfg: Mamba3Config):
        super().__init__()
        self.cfg = cfg
        D, N, P = cfg.d_model, cfg.d_state, cfg.headdim
        E = self.d_inner = cfg.expand * D
        H = self.n_heads = E // P
        self.split = [E, E, N, N, H, H, H, cfg.n_rope]  # z, v, B, C, dd_dt, dd_A, trap, phi
        self.in_proj = nn.Linear(D, sum(self.split), bias=False)
        self.dt_bias = nn.Parameter(inv_softplus_dt(H, cfg.dt_min, cfg.dt_max, cfg.dt_init_floor))
        self.B_norm, self.C_norm = RMSNorm(N), RMSNorm(N)
        self.B_bias = nn.Parameter(torch.ones(H, N))
        self.C_bias = nn.Parameter(torch.ones(H, N))
        self.D = nn.Parameter(torch.ones(H))
        self.out_proj = nn.Linear(E, D, bias=False)
        self.d_in = self.d_out = D
        self.state_size = 2 * E * N

    def _inputs(self, u: torch.Tensor) -> dict[str, torch.Tensor]:
        """Per-token coefficients for u (..., D); every one depends on the input only."""
        H, P = self.n_heads, self.cfg.headdim
        # one product per piece of in_proj: split from one product, the pieces' gradients
        # would be joined by a concatenation along the last dimension, whose narrow
        # pieces (H and n_rope wide) cost a copy per row: 20% of a training step
        z, v, B, C, dd_dt, dd_A, trap, phi = (
            F.linear(u, w) for w in self.in_proj.weight.split(self.split, 0))
        dt = F.softplus(dd_dt + self.dt_bias)  # (..., H)
        A = torch.clamp(-F.softplus(dd_A), max=-self.cfg.A_floor)
        log_alpha = dt * A
        alpha = torch.exp(log_alpha)
        lam = torch.sigmoid(trap)
        dtheta = math.pi * torch.tanh(phi)[..., None, :] * dt[..., None]  # (..., H, n_rope)
        return dict(z=z, v=v.unflatten(-1, (H, P)), alpha=alpha, log_alpha=log_alpha, dt=dt,
                    lam=lam, beta=alpha * dt * (1 - lam), delta=dt * (1 - lam),
                    gamma=lam * dt,  # (..., H)
                    dtheta=dtheta, cos=torch.cos(dtheta), sin=torch.sin(dtheta),
                    K=self.B_norm(B)[..., None, :] + self.B_bias,  # (..., H, N)
                    Q=self.C_norm(C)[..., None, :] + self.C_bias)

    def _out(self, y, c):
        """W_out((y + D v) * SiLU(z)) for y = S Q of shape (..., n_heads, P)."""
        y = y + self.D[:, None] * c["v"]
        return self.out_proj(y.flatten(-2) * F.silu(c["z"]))  # (..., D)

    def step(self, h, u):
        b, n, N = u.shape[0], self.cfg.n_rope, self.cfg.d_state
        S, W_prev = h.view(b, self.n_heads, self.cfg.headdim, 2 * N).split(N, -1)
        c = self._inputs(u)
        W = c["v"][..., None] * c["K"][..., None, :]  # (b, n_heads, P, N) = v K^T
        alpha, beta, gamma = (c[k][..., None, None] for k in ("alpha", "beta", "gamma"))
        cos, sin = c["cos"][..., None, :], c["sin"][..., None, :]
        S = rotate(alpha * S + beta * W_prev, cos, sin, n) + gamma * W
        y = (S @ c["Q"][..., None])[..., 0]  # (b, n_heads, P)
        return torch.cat([S, W], -1).flatten(1), self._out(y, c)

    @time_chunked
    def scan(self, u, h0=None):
        """The recurrence as two diagonal scans (complex pairs, real rest).

        The input term ``beta_t R_t W_{t-1} + gamma_t W_t`` is one batched product
        ``[beta_t v_{t-1}, gamma_t v_t] @ [R_t K_{t-1}; K_t]`` (inner size 2), so no
        ``(b, L, n_heads, P, N)`` temporaries arise besides the scans' own. A given
        ``W_0`` is folded into the start, ``S_0 + Delta_1 (1 - lambda_1) W_0`` (= beta_1 /
        alpha_1 W_0), and ``v_0 K_0^T`` is then taken as 0.
        """
        b, L, _ = u.shape
        n, N, H, P = self.cfg.n_rope, self.cfg.d_state, self.n_heads, self.cfg.headdim
        c = self._inputs(u)
        v, K, Q = c["v"], c["K"], c["Q"]  # (b, L, H, P), (b, L, H, N), (b, L, H, N)
        v_prev = torch.cat([torch.zeros_like(v[:, :1]), v[:, :-1]], 1)
        K_prev = torch.cat([torch.zeros_like(K[:, :1]), K[:, :-1]], 1)
        left = torch.stack([c["beta"][..., None] * v_prev, c["gamma"][..., None] * v], -1)
        rot = torch.complex(c["cos"], -c["sin"])  # (b, L, H, n): e^{-i dtheta}
        right_c = torch.stack([rot * torch.complex(K_prev[..., :n], K_prev[..., n:2 * n]),
                               torch.complex(K[..., :n], K[..., n:2 * n])], -2)  # (.., 2, n)
        right_r = torch.stack([K_prev[..., 2 * n:], K[..., 2 * n:]], -2)  # (.., 2, N - 2n)
        S0_c = S0_r = None
        if h0 is not None:
            S0, W0 = h0.view(b, H, P, 2 * N).split(N, -1)
            S0 = S0 + (c["dt"][:, 0] * (1 - c["lam"][:, 0]))[..., None, None] * W0
            S0_c, S0_r = torch.complex(S0[..., :n], S0[..., n:2 * n]), S0[..., 2 * n:]
        alpha = c["alpha"][..., None, None]  # (b, L, H, 1, 1)
        S_c = linear_scan(alpha * rot[..., None, :], left.to(rot.dtype) @ right_c, S0_c)
        S_r = linear_scan(alpha, left @ right_r, S0_r)  # (b, L, H, P, N - 2n)
        Q_c = torch.complex(Q[..., :n], Q[..., n:2 * n]).conj()
        y = (S_c @ Q_c[..., None]).real[..., 0] + (S_r @ Q[..., 2 * n:, None])[..., 0]
        W = v[..., None] * K[..., None, :]  # (b, L, H, P, N)
        hs = torch.cat([S_c.real, S_c.imag, S_r, W], -1).flatten(2)  # (b, L, state_size)
        return hs, self._out(y, c)

    def outputs(self, u, h0=None):
        """``scan(u, h0)[1]`` by :func:`trapezoid_ssd`, which builds no state per step
        (what ``forward`` and training use); without gradients in pieces of EVAL_CHUNK
        steps (:func:`outputs_in_pieces`)."""
        return outputs_in_pieces(self._outputs, u, h0)

    def _outputs(self, u, h0, last: bool):
        """The outputs (b, L, D) and, if ``last``, the flat state after the last step."""
        b = u.shape[0]
        N, H, P = self.cfg.d_state, self.n_heads, self.cfg.headdim
        c = self._inputs(u)
        S0 = W0 = None
        if h0 is not None:
            S0, W0 = h0.view(b, H, P, 2 * N).split(N, -1)
        y = trapezoid_ssd(c["log_alpha"], c["dtheta"], c["gamma"], c["delta"], c["v"], c["K"],
                          c["Q"], S0, W0, self.cfg.n_rope, last=last)
        h_last = None
        if last:
            y, state = y
            h_last = torch.cat(state, -1).flatten(1)
        return self._out(y, c), h_last


def mamba3(n_tokens: int, n_classes: int, d_model: int = 64, d_state: int = 16,
           n_layers: int = 1, **kw: Any) -> SequenceModel:
    """Mamba-3 SISO (complex rotation with decay, trapezoidal input), reference 4.3."""
    return residual_model("mamba3", Mamba3Layer, Mamba3Config, n_tokens, n_classes,
                          d_model, d_state, n_layers, kw)
