"""The delta-rule scan of DeltaNet and DeltaProduct (:mod:`sst_core.models.delta`).

Per batch row and head, a state ``S`` in ``R^{d_k x d_v}`` (``S0``, zero when omitted)
and, at each position t, a query ``q_t``, a key ``k_t`` (``d_k``), a value ``v_t``
(``d_v``) and a step size ``beta_t``::

    S_t = (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T,     o_t = S_t^T q_t

the delta update rule of Schlag et al. 2021 ("Linear transformers are secretly fast
weight programmers"), which is DeltaNet's recurrence in Yang et al. 2024 ("Parallelizing
linear transformers with the delta rule over sequence length"; they write it for the
transposed, ``d_v x d_k``, state: ``S_t = S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t
k_t^T``). The transition is a generalised Householder matrix: with ``||k_t|| = 1`` its
eigenvalues are 1 (``d_k - 1`` times) and ``1 - beta_t``, so ``beta_t`` in [0, 2] keeps
them in [-1, 1] (Grazzi et al. 2025). Nothing here assumes a unit key; the chunked form
is as accurate as the loop when the products of the transitions stay bounded, which a
unit key and ``beta`` in [0, 2] guarantee.

Shapes: q, k (b, L, H, d_k), v (b, L, H, d_v), beta (b, L, H), S0 (b, H, d_k, d_v). Both
functions return o (b, L, H, d_v) and the last state (b, H, d_k, d_v), or with
``all_states=True`` every state S_1 .. S_L, (b, L, H, d_k, d_v).

- ``delta_scan_ref``: the per-step loop above; autograd differentiates it.
- ``delta_scan``: the same results in chunks of ``chunk`` positions (``CHUNK``), the WY /
  "UT transform" form of Yang et al. 2024 (their sec. 3; the chunkwise form in app. B).
  Inside a chunk that starts from ``S0``, ``S_t = S0 + sum_{s <= t} k_s u_s^T`` with the
  pseudo-values ``u_t = beta_t (v_t - S_{t-1}^T k_t)``; substituting ``S_{t-1}`` gives
  the unit lower triangular system

      T U = diag(beta) (V - K S0),        T = I + tril(diag(beta) K K^T, -1)

  so ``U = Uv - W S0`` with ``[W, Uv] = T^{-1} diag(beta) [K, V]``, one triangular solve
  for every chunk at once (``torch.linalg.solve_triangular(..., unitriangular=True)``).
  Then ``O = Q S0 + tril(Q K^T) U`` and the next chunk starts from ``S0 + K^T U``: only
  the ``(d_k, d_v)`` state passes from one chunk to the next, in a Python loop over the
  ``ceil(L / chunk)`` chunks. The last chunk is padded with ``beta = 0`` (and zero q, k,
  v), which leaves the state unchanged. Autograd differentiates it; no op is in place,
  so it runs under ``torch.func.vmap`` (stacked training) and the other transforms.

In float64 the two agree to about 1e-15 relative to the largest entry, in value and in
every gradient, at lengths 1 to 1000 (``tests/models/test_delta.py``); in float32 to
about 1e-6.
"""
from __future__ import annotations

import torch
from torch.nn import functional as F

__all__ = ["delta_scan", "delta_scan_ref", "CHUNK"]

# Positions per chunk of delta_scan. One training step (batch 64, d_model 32, d_k 16,
# one thread; the fastest of 10 rounds on a busy 2-core machine) took, for chunks of 16 /
# 32 / 64: DeltaNet at L = 60, 11.2 / 11.0 / 12.4 ms; DeltaProduct n_h = 2 (120
# sub-steps), 18.1 / 19.2 / 26.0 ms: past ~32 the (C, C) products and the triangular
# solve cost more than the shorter loop over chunks saves.
CHUNK = 32


def _check(q, k, v, beta, S0) -> None:
    if k.dim() != 4 or k.shape[1] < 1:
        raise ValueError(f"k must have shape (b, L, H, d_k) with L >= 1, got {tuple(k.shape)}")
    b, L, H, dk = k.shape
    if q.shape != k.shape:
        raise ValueError(f"q must have k's shape {tuple(k.shape)}, got {tuple(q.shape)}")
    if v.dim() != 4 or v.shape[:3] != (b, L, H):
        raise ValueError(f"v must have shape (b, L, H, d_v) = {(b, L, H)} + (d_v,), got "
                         f"{tuple(v.shape)}")
    if beta.shape != (b, L, H):
        raise ValueError(f"beta must have shape (b, L, H) = {(b, L, H)}, got "
                         f"{tuple(beta.shape)}")
    if S0 is not None and S0.shape != (b, H, dk, v.shape[-1]):
        raise ValueError(f"S0 must have shape (b, H, d_k, d_v) = {(b, H, dk, v.shape[-1])}, "
                         f"got {tuple(S0.shape)}")
    dtypes = {x.dtype for x in (q, k, v, beta) + ((S0,) if S0 is not None else ())}
    if len(dtypes) > 1:
        raise ValueError(f"q, k, v, beta and S0 must share one dtype, got "
                         f"{sorted(map(str, dtypes))}")


def delta_scan_ref(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor,
                   S0: torch.Tensor | None = None, all_states: bool = False
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """The delta rule step by step (module docstring): o (b, L, H, d_v) and the last
    state (b, H, d_k, d_v), or every state (b, L, H, d_k, d_v) with ``all_states``."""
    _check(q, k, v, beta, S0)
    b, L, H, dk = k.shape
    S = k.new_zeros(b, H, dk, v.shape[-1]) if S0 is None else S0
    os, Ss = [], []
    for t in range(L):
        kt, bt = k[:, t, :, :, None], beta[:, t, :, None, None]  # (b, H, d_k, 1), (b, H, 1, 1)
        # (I - beta k k^T) S + beta k v^T
        S = S - bt * kt @ (kt.transpose(-1, -2) @ S) + bt * kt @ v[:, t, :, None, :]
        os.append((q[:, t, :, None, :] @ S)[..., 0, :])  # S^T q: (b, H, d_v)
        Ss.append(S)
    o = torch.stack(os, 1)  # (b, L, H, d_v)
    return o, (torch.stack(Ss, 1) if all_states else S)


def delta_scan(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor,
               S0: torch.Tensor | None = None, all_states: bool = False, chunk: int = CHUNK
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """``delta_scan_ref`` in chunks of ``chunk`` positions (the WY form of the module
    docstring): same signature (plus ``chunk``) and results."""
    _check(q, k, v, beta, S0)
    if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1:
        raise ValueError(f"chunk must be a positive int, got {chunk!r}")
    b, L, H, dk = k.shape
    dv = v.shape[-1]
    C = min(chunk, L)  # positions per chunk
    n = -(-L // C)  # chunks
    pad = n * C - L
    q, k, v = (x.transpose(1, 2) for x in (q, k, v))  # (b, H, L, .)
    beta = beta.transpose(1, 2)  # (b, H, L)
    if pad:  # beta = 0: the padded steps leave the state unchanged; their outputs are cut
        q, k, v = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v))
        beta = F.pad(beta, (0, pad))
    q, k, v = (x.unflatten(2, (n, C)) for x in (q, k, v))  # (b, H, n, C, .)
    beta = beta.unflatten(2, (n, C))[..., None]  # (b, H, n, C, 1)
    bk = beta * k  # (b, H, n, C, d_k)
    # causal masks as factors (several times faster than tril on CPU, forward and backward)
    causal = torch.ones(C, C, dtype=k.dtype, device=k.device).tril()  # s <= t
    below = causal.tril(-1)  # s < t
    # T = I + tril(diag(beta) K K^T, -1), its unit diagonal left to the solve
    T = (bk @ k.transpose(-1, -2)) * below  # (b, H, n, C, C)
    WU = torch.linalg.solve_triangular(T, torch.cat([bk, beta * v], -1), upper=False,
                                       unitriangular=True)  # (b, H, n, C, d_k + d_v)
    W, Uv = WU.split([dk, dv], -1)  # U = Uv - W S0 in each chunk
    S = k.new_zeros(b, H, dk, dv) if S0 is None else S0
    starts, Us = [], []
    for c in range(n):  # the state passes from chunk to chunk
        U = Uv[:, :, c] if c == 0 and S0 is None else Uv[:, :, c] - W[:, :, c] @ S
        starts.append(S)
        Us.append(U)  # (b, H, C, d_v)
        S = S + k[:, :, c].transpose(-1, -2) @ U  # S0 + K^T U
    start, U = torch.stack(starts, 2), torch.stack(Us, 2)  # (b, H, n, d_k, d_v), (b, H, n, C, d_v)
    o = q @ start + ((q @ k.transpose(-1, -2)) * causal) @ U  # Q S0 + tril(Q K^T) U
    o = o.flatten(2, 3)[:, :, :L].transpose(1, 2)  # (b, L, H, d_v)
    if not all_states:
        return o, S
    # S_t = S0 + sum_{s <= t} k_s u_s^T inside each chunk: (b, H, n, C, d_k, d_v)
    states = start[:, :, :, None] + (k[..., None] * U[..., None, :]).cumsum(3)
    return o, states.flatten(2, 3)[:, :, :L].transpose(1, 2)  # (b, L, H, d_k, d_v)
