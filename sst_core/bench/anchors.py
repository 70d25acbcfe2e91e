"""Public CPU algorithms of Mamba's selective scan, written here from their published
formulas, as benchmark anchors for :mod:`sst_core.ops.selective_scan` (``sst bench``,
:mod:`sst_core.bench.cases_anchors`). They are anchors only: no model uses them.

Both compute, for a batch of b sequences of length L, E channels and N states (the
notation of :mod:`sst_core.ops.selective_scan`)::

    h_t = exp(dt_t A) h_{t-1} + (dt_t u_t) B_t,    y_t = h_t C_t + D u_t,
    out_t = y_t * silu(z_t)                               (D and z optional)

- :func:`mamba_selective_scan_ref`: the reference of state-spaces/mamba
  (``selective_scan_ref`` in ``mamba_ssm/ops/selective_scan_interface.py``): channel-first
  inputs ``u, delta, z`` (b, E, L), ``B, C`` (b, N, L); it materialises
  ``deltaA = exp(delta A)`` and ``deltaB_u = delta B u`` as (b, E, L, N) tensors, then
  loops over L (``h = deltaA[:, :, t] h + deltaB_u[:, :, t]``, ``y_t = h C_t``) and
  autograd differentiates the loop. Its options ``delta_bias`` and ``delta_softplus``
  are kept.
- :func:`pscan_selective_scan`: the pure-PyTorch Mamba of alxndrTL/mamba.py: time-major
  inputs ``x, delta`` (b, L, E), ``B, C`` (b, L, N); ``deltaA`` and ``BX = delta B x``
  are (b, L, E, N) tensors, the states come from a Blelloch-style parallel scan over the
  time axis (:class:`PScan`, an up-sweep and a down-sweep of ``log2 L`` levels each, in
  place, with a hand-written backward that is the same scan run backwards in time), and
  ``y = (h @ C) + D x``. There the gate ``y * silu(z)`` is applied by the block that
  calls the scan; it is an option here so that both anchors do the same work.
"""
from __future__ import annotations

import math

import torch
from torch.nn import functional as F

__all__ = ["mamba_selective_scan_ref", "pscan", "PScan", "pscan_selective_scan"]


def mamba_selective_scan_ref(u: torch.Tensor, delta: torch.Tensor, A: torch.Tensor,
                             B: torch.Tensor, C: torch.Tensor, D: torch.Tensor | None = None,
                             z: torch.Tensor | None = None,
                             delta_bias: torch.Tensor | None = None,
                             delta_softplus: bool = False, return_last_state: bool = False):
    """state-spaces/mamba's per-step reference. ``u, delta, z`` (b, E, L); ``A`` (E, N);
    ``B, C`` (b, N, L); ``D, delta_bias`` (E,). Returns ``out`` (b, E, L), and the last
    state (b, E, N) if ``return_last_state``."""
    if delta_bias is not None:
        delta = delta + delta_bias[:, None]
    if delta_softplus:
        delta = F.softplus(delta)
    b, E, L = u.shape
    N = A.shape[1]
    # the (b, E, L, N) tensors of the published reference
    deltaA = torch.exp(delta[..., None] * A[:, None, :])  # (b, E, L, N)
    deltaB_u = (delta * u)[..., None] * B.transpose(1, 2)[:, None]  # (b, E, L, N)
    h = u.new_zeros(b, E, N)
    ys = []
    for t in range(L):
        h = deltaA[:, :, t] * h + deltaB_u[:, :, t]  # (b, E, N)
        ys.append(torch.einsum("ben,bn->be", h, C[:, :, t]))  # (b, E)
    y = torch.stack(ys, dim=2)  # (b, E, L)
    out = y if D is None else y + u * D[:, None]
    if z is not None:
        out = out * F.silu(z)
    return (out, h) if return_last_state else out


def _sweep(A: torch.Tensor, X: torch.Tensor) -> None:
    """In place along dim 1 (length a power of two): X becomes the inclusive scan
    ``h_t = A_t h_{t-1} + X_t`` (h_{-1} = 0); A is overwritten.

    Up-sweep, level k (stride s = 2^k): among the positions s - 1, 2s - 1, ... (each the
    end of a segment of s steps), every second one absorbs the segment before it
    (``X_odd += A_odd X_even``, ``A_odd *= A_even``). After it, the positions 2^m - 1
    hold complete prefixes. Down-sweep, level k from the top down: the positions
    3s - 1, 5s - 1, ... (segment ends that are not yet prefixes) take the complete prefix
    ending s steps earlier (``X_i += A_i X_{i-s}``)."""
    L = X.shape[1]
    levels = L.bit_length() - 1
    for k in range(levels):
        s = 1 << k
        Xs, As = X[:, s - 1::s], A[:, s - 1::s]  # (b, L / s, ...)
        Xs[:, 1::2].add_(As[:, 1::2] * Xs[:, 0::2])
        As[:, 1::2].mul_(As[:, 0::2])
    for k in range(levels - 2, -1, -1):
        s = 1 << k
        Xs, As = X[:, s - 1::s], A[:, s - 1::s]
        M = Xs.shape[1]
        Xs[:, 2::2].add_(As[:, 2::2] * Xs[:, 1:M - 1:2])


def pscan(A: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """The parallel scan without autograd: ``h_t = A_t h_{t-1} + X_t`` along dim 1 of
    (b, L, ...) tensors (h_{-1} = 0); the length is padded to a power of two."""
    b, L = X.shape[:2]
    P = 1 << max(0, math.ceil(math.log2(L)))
    Ap = A.new_ones(b, P, *A.shape[2:])
    Xp = X.new_zeros(b, P, *X.shape[2:])
    Ap[:, :L] = A
    Xp[:, :L] = X
    _sweep(Ap, Xp)
    return Xp[:, :L]


class PScan(torch.autograd.Function):
    """``H = pscan(A, X)`` with the backward of the published pscan: the gradient ``gX``
    obeys the same recurrence run backwards, ``gX_t = gH_t + A_{t+1} gX_{t+1}``, so it is
    the parallel scan of the time-reversed inputs (A shifted by one step); then
    ``gA_t = gX_t h_{t-1}``."""

    @staticmethod
    def forward(ctx, A: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
        H = pscan(A, X)
        ctx.save_for_backward(A, H)
        return H

    @staticmethod
    def backward(ctx, gH: torch.Tensor):
        A, H = ctx.saved_tensors
        A_next = torch.zeros_like(A)
        A_next[:, :-1] = A[:, 1:]  # A_{t+1}, zero after the end
        gX = pscan(A_next.flip(1), gH.flip(1)).flip(1)
        gA = torch.zeros_like(A)
        gA[:, 1:] = gX[:, 1:] * H[:, :-1]
        return gA, gX


def pscan_selective_scan(x: torch.Tensor, delta: torch.Tensor, A: torch.Tensor,
                         B: torch.Tensor, C: torch.Tensor, D: torch.Tensor | None = None,
                         z: torch.Tensor | None = None) -> torch.Tensor:
    """alxndrTL/mamba.py's ``selective_scan``: ``x, delta, z`` (b, L, E); ``A`` (E, N);
    ``B, C`` (b, L, N); ``D`` (E,). Returns y (b, L, E)."""
    deltaA = torch.exp(delta[..., None] * A)  # (b, L, E, N)
    BX = (delta * x)[..., None] * B[:, :, None, :]  # (b, L, E, N)
    hs = PScan.apply(deltaA, BX)  # (b, L, E, N)
    y = (hs @ C[..., None])[..., 0]  # (b, L, E)
    if D is not None:
        y = y + D * x
    if z is not None:
        y = y * F.silu(z)
    return y
