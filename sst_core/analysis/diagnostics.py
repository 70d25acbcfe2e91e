"""Diagnostics of paper 1 (reference ``paper1-state-tracking.md`` sections 3 and 7).

Everything here works on hidden states ``h`` of shape ``(b, L, d)`` with the oracle
symbolic states ``states`` of shape ``(b, L)`` (element indices, as
:func:`sst_core.tasks.tracking.sample` returns them), or on a model through the common
face of :mod:`sst_core.models.base` (``step``, ``init_state``, ``recurrent_mask``).

Conventions
-----------
Time. Array index ``i`` along L is the time ``t = i + 1``: the state after reading
``t`` tokens. Functions that return a *time* (:func:`T_cross`) return this 1-based
length, so it is directly comparable with ``m_p`` (also a length).

Centroids. ``c_g(t) = E[h_t | g_t = g]`` (:func:`centroids`), NaN where class ``g`` does
not occur at time ``t``.

Distinguishability (section 3.4). With ``W = W_out`` (identity when not given)::

    R(t) = mean_i ||W (h_t^i - c_{g_t^i}(t))||^2          within-class spread
    M(t) = min_{g != g' present at t} ||W (c_g(t) - c_g'(t))||^2   between-class gap
    q(t) = R(t) / M(t)                                     the paper's ratio (squared)
    q_sqrt(t) = sqrt(R(t)) / sqrt(M(t))                    the un-squared ratio

Per sample, nearest-centroid decoding (in the ``W`` metric) is *guaranteed* when
``||W (h - c_g)|| < sqrt(M) / 2``, i.e. ``||W (h - c_g)||^2 < M / 4``. So ``tau = 1/2``
is the exact threshold for the un-squared ratio of *one* sample; ``R`` is a mean over
samples, hence ``q_sqrt < 1/2`` only bounds the mean and guarantees nothing per sample,
and ``q < 1/2`` (squared) is weaker still. Both ratios are returned; the paper's ``q``
is the squared one.

Symbolic subspace (section 3.1). ``U = span{c_g - c_g0}``, as an orthonormal basis
``Q`` of shape ``(d, r)`` (:func:`sst_core.theory.error_control.symbolic_basis`, which
holds the rank rule); ``P_U = Q Q^T``
(:func:`projector`); ``U_perp`` is its orthogonal complement.

Model-based diagnostics (:func:`state_trajectory`, :func:`perturbation_recovery`,
:func:`state_basis`, and the return maps of :mod:`sst_core.analysis.return_map`) work on
the model's full recurrent state ``(b, D)``, ``D = model.state_size`` (all layers
concatenated), not on the readout features.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import scipy.linalg
import scipy.sparse
import torch

from sst_core.analysis.clusters import kmeans_per_time
from sst_core.groups import Group, get_group
from sst_core.tasks.tracking import vocabulary

__all__ = [
    "Distinguishability", "centroids", "distinguishability", "median_ratio", "T_cross",
    "projector", "q_split", "state_basis", "token_ids", "state_trajectory", "perturbation_recovery",
    "state_preserving_words",
    "failure_mode", "label_free_states", "LABEL_FREE_METHODS", "DIRECTIONS", "LAYERS",
    "FAILURE_MODES",
]

DIRECTIONS = ("random", "U")
LAYERS = ("last", "all")
FAILURE_MODES = ("saturation", "climb", "none")


# -- input handling --------------------------------------------------------------------
def _to_numpy(x, name: str) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        if x.is_complex():
            raise ValueError(f"{name} is complex; stack it as [Re; Im] along the last axis")
        return x.double().numpy()
    arr = np.asarray(x)
    if np.iscomplexobj(arr):
        raise ValueError(f"{name} is complex; stack it as [Re; Im] along the last axis")
    # no copy of what is float64 already: a (2048, 1000, d) state array was copied once per
    # function, 20% of a diagnostics run; nothing here writes into its inputs (tested)
    return np.asarray(arr, dtype=np.float64)


def _hidden(h, name: str = "h") -> np.ndarray:
    arr = _to_numpy(h, name)
    if arr.ndim != 3:
        raise ValueError(f"{name} must have shape (b, L, d), got {arr.shape}")
    return arr


def _time_view(h, name: str = "h"):
    """``h`` ``(b, L, d)`` checked but not converted (a numpy array or a CPU tensor), for
    :func:`_time_block` to convert one block of times at a time."""
    if isinstance(h, torch.Tensor):
        h = h.detach().cpu()
        if h.is_complex():
            raise ValueError(f"{name} is complex; stack it as [Re; Im] along the last axis")
    else:
        h = np.asarray(h)
        if np.iscomplexobj(h):
            raise ValueError(f"{name} is complex; stack it as [Re; Im] along the last axis")
    if h.ndim != 3:
        raise ValueError(f"{name} must have shape (b, L, d), got {tuple(h.shape)}")
    return h


# The per-time statistics (centroids, R, M, q, their median and U-split variants, decoded
# labels) of one time read only that time's samples, so the functions below go through the
# times in blocks whose float64 working arrays (b, block, width) stay within this many
# bytes: same numbers, bounded memory. Without it, an A5 tracker's diagnostics at 20,480
# words x 1,000 steps (60 classes) needed over 24 GiB and were killed.
TIME_BLOCK_BYTES = 512 * 2 ** 20


def _time_blocks(b: int, L: int, width: int) -> list[slice]:
    """Consecutive slices covering the L times such that a float64 array
    ``(b, block, width)`` stays within :data:`TIME_BLOCK_BYTES`, none of one time unless
    L is 1 (numpy's einsum sums a ``(b, 1, k)`` array in another order than the same
    time inside a longer block; from two times on the sums are those of the whole array,
    to the bit, which the tests check)."""
    per_time = 8 * max(1, b) * max(1, width)
    n = max(2, TIME_BLOCK_BYTES // per_time)
    starts = list(range(0, L, n))
    if len(starts) > 1 and L - starts[-1] == 1:
        starts.pop()  # the last block takes the one time left over
    return [slice(i, j) for i, j in zip(starts, starts[1:] + [L])] or [slice(0, 0)]


def _time_block(h, blk: slice) -> np.ndarray:
    """Times ``blk`` of ``h`` (a :func:`_time_view`) as a contiguous float64 ``(b, l, d)``."""
    return np.ascontiguousarray(_to_numpy(h[:, blk], "h"))


def _states(states, h_shape: tuple[int, ...], n_g: int | None) -> tuple[np.ndarray, int]:
    if isinstance(states, torch.Tensor):
        states = states.detach().cpu().numpy()
    s = np.asarray(states)
    if s.dtype == np.bool_ or not np.issubdtype(s.dtype, np.integer):
        raise ValueError(f"states must be an integer array, got dtype {s.dtype}")
    if s.shape != tuple(h_shape[:2]):
        raise ValueError(f"states has shape {s.shape}, expected (b, L) = {tuple(h_shape[:2])} "
                         f"to match h of shape {tuple(h_shape)}")
    if s.size and s.min() < 0:
        raise ValueError(f"states must be >= 0, got {s.min()}")
    if n_g is None:
        n_g = int(s.max()) + 1 if s.size else 1
    elif isinstance(n_g, bool) or not isinstance(n_g, (int, np.integer)) or n_g < 1:
        raise ValueError(f"n_g must be a positive int, got {n_g!r}")
    elif s.size and s.max() >= n_g:
        raise ValueError(f"states contains {s.max()}, out of range for n_g={n_g}")
    return s.astype(np.int64), int(n_g)


def _readout(W_out, d: int) -> np.ndarray | None:
    """W_out as a float64 ``(k, d)`` array (an ``nn.Linear`` gives its weight), or None."""
    if W_out is None:
        return None
    if isinstance(W_out, torch.nn.Linear):
        W_out = W_out.weight
    W = _to_numpy(W_out, "W_out")
    if W.ndim != 2 or W.shape[1] != d:
        raise ValueError(f"W_out must have shape (n_classes, d) with d={d}, got {W.shape}")
    return W


def _check_tau(tau: float) -> float:
    if not np.isfinite(tau) or tau <= 0:
        raise ValueError(f"tau must be a finite number > 0, got {tau!r}")
    return float(tau)


def _curve(q, name: str = "q") -> np.ndarray:
    arr = _to_numpy(q, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional (L,), got shape {arr.shape}")
    return arr


# -- centroids and distinguishability --------------------------------------------------
def centroids(h, states, n_g: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-time class means ``c_g(t) = E[h_t | g_t = g]``.

    Args:
        h: ``(b, L, d)`` hidden states (numpy or torch; converted to float64 numpy).
        states: ``(b, L)`` int oracle states ``g_t`` in ``0 .. n_g - 1``.
        n_g: number of classes (group order); default ``max(states) + 1``.

    Returns:
        ``(c, present)``: ``c`` is ``(L, n_g, d)`` float64 with ``c[i, g]`` the mean of
        ``h[:, i]`` over the samples in state ``g`` at time ``t = i + 1`` (NaN where no
        sample is), and ``present`` is ``(L, n_g)`` bool, True where class ``g`` occurs.
    """
    h = _hidden(h)
    s, n_g = _states(states, h.shape, n_g)
    b, L, d = h.shape
    # One sparse (L n_g, b L) indicator matrix sums every class at every time at once.
    rows = (np.arange(L)[None, :] * n_g + s).ravel()  # (b L,)  row of sample (i, t)
    S = scipy.sparse.csr_matrix((np.ones(b * L), (rows, np.arange(b * L))),
                                shape=(L * n_g, b * L))
    sums = np.asarray(S @ h.reshape(b * L, d)).reshape(L, n_g, d)  # (L, n_g, d)
    counts = np.bincount(rows, minlength=L * n_g).reshape(L, n_g)  # (L, n_g)
    present = counts > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        c = sums / counts[..., None]  # (L, n_g, d); 0/0 = NaN where absent
    c[~present] = np.nan
    return c, present


@dataclass(frozen=True, eq=False)
class Distinguishability:
    """``R``, ``M``, ``q = R / M`` and ``q_sqrt = sqrt(R) / sqrt(M)``, each ``(L,)``.

    Index ``i`` is time ``t = i + 1``. ``M``, ``q``, ``q_sqrt`` are NaN where fewer than
    two classes are present; ``q`` is ``inf`` where two present centroids coincide
    (``M = 0``) while ``R > 0``.
    """

    R: np.ndarray
    M: np.ndarray
    q: np.ndarray
    q_sqrt: np.ndarray


def _min_gap(c: np.ndarray, present: np.ndarray) -> np.ndarray:
    """``M(t)``: min squared distance between present centroids; ``c`` (L, n_g, k)."""
    L = c.shape[0]
    M = np.full(L, np.nan)
    for i in range(L):
        cp = c[i, present[i]]  # (n_p, k)
        if len(cp) < 2:
            continue
        diff = cp[:, None, :] - cp[None, :, :]  # (n_p, n_p, k)
        d2 = np.einsum("ijk,ijk->ij", diff, diff)  # (n_p, n_p)
        M[i] = d2[np.triu_indices(len(cp), 1)].min()
    return M


def _ratios(R: np.ndarray, M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(invalid="ignore", divide="ignore"):
        return R / M, np.sqrt(R) / np.sqrt(M)


def _residuals(h: np.ndarray, s: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``h_t - c_{g_t}(t)`` for every sample, ``(b, L, d)``."""
    L = h.shape[1]
    return h - c[np.arange(L)[None, :], s]  # (b, L, d)


def distinguishability(h, states, W_out=None, n_g: int | None = None) -> Distinguishability:
    """The distinguishability ratio of section 3.4 at every time.

    ``R(t) = mean_i ||W (h_t^i - c_{g_t^i}(t))||^2`` over all b samples,
    ``M(t) = min ||W (c_g(t) - c_g'(t))||^2`` over pairs ``g != g'`` of classes present
    at ``t`` (absent classes are skipped), ``q = R / M`` (squared, the paper's
    convention) and ``q_sqrt = sqrt(R) / sqrt(M)`` (un-squared; for this one
    ``tau = 1/2`` is the exact per-sample nearest-centroid threshold, see the module
    docstring).

    Args:
        h: ``(b, L, d)`` hidden states (what the readout sees).
        states: ``(b, L)`` int oracle states.
        W_out: ``(n_classes, d)`` readout matrix (array, tensor or ``nn.Linear``); the
            identity when None. Its bias plays no role (it cancels in differences).
        n_g: number of classes; default ``max(states) + 1``.
    """
    h = _time_view(h)
    s, n_g = _states(states, h.shape, n_g)
    b, L, d = h.shape
    W = _readout(W_out, d)
    R, M = np.empty(L), np.empty(L)  # (L,) each
    for blk in _time_blocks(b, L, d + 3 * (d if W is None else W.shape[0])):
        hb = _time_block(h, blk)  # (b, l, d)
        hw = hb if W is None else hb @ W.T  # (b, l, k): centroids of W h are W c, by linearity
        c, present = centroids(hw, s[:, blk], n_g)  # (l, n_g, k)
        r = _residuals(hw, s[:, blk], c)  # (b, l, k)
        R[blk] = np.einsum("blk,blk->l", r, r) / b  # (l,)
        M[blk] = _min_gap(c, present)  # (l,)
    q, q_sqrt = _ratios(R, M)
    return Distinguishability(R=R, M=M, q=q, q_sqrt=q_sqrt)


def median_ratio(h, states, W_out=None, n_g: int | None = None) -> np.ndarray:
    """``q_median(t) = median_i ||W (h_t^i - c_{g_t^i}(t))||^2 / M(t)``, ``(L,)``: the
    distinguishability ratio with the within-class spread taken as the *median* over the
    b samples instead of their mean (:func:`distinguishability`'s ``R``).

    Our variant, not the paper's. A state that grows along the words (an affine cell with
    transitions of modulus above 1) spreads its classes with a heavy tail: a few samples far
    out make the mean spread, and so ``q``, many times what most samples show, while
    decoding, which fails one sample at a time, follows the typical sample. Arguments and
    NaN / inf conventions as in :func:`distinguishability`.
    """
    h = _time_view(h)
    s, n_g = _states(states, h.shape, n_g)
    b, L, d = h.shape
    W = _readout(W_out, d)
    spread, M = np.empty(L), np.empty(L)  # (L,) each
    for blk in _time_blocks(b, L, d + 3 * (d if W is None else W.shape[0])):
        hb = _time_block(h, blk)  # (b, l, d)
        hw = hb if W is None else hb @ W.T  # (b, l, k)
        c, present = centroids(hw, s[:, blk], n_g)  # (l, n_g, k)
        r = _residuals(hw, s[:, blk], c)  # (b, l, k)
        spread[blk] = np.median(np.einsum("blk,blk->bl", r, r), axis=0)  # (l,)
        M[blk] = _min_gap(c, present)  # (l,)
    with np.errstate(invalid="ignore", divide="ignore"):
        return spread / M


# -- without the oracle: labels from the hidden states alone ------------------------------
LABEL_FREE_METHODS = ("decoded", "clusters")


def label_free_states(h, W_out, b_out=None, method: str = "decoded", n_g: int | None = None,
                      seed: int = 0, max_fit: int | None = None) -> np.ndarray:
    """Stand-in labels for the oracle states, from the hidden states alone: ``(b, L)`` ints.

    - ``decoded``: the model's own prediction ``argmax(W_out h + b_out)`` at each position;
    - ``clusters``: k-means (``n_g`` clusters,
      :func:`~sst_core.analysis.clusters.kmeans_per_time`, k-means++ seeded by
      ``seed``; centres fitted on at most ``max_fit`` words) of the read-out states
      ``W_out h`` at each time on its own.

    ``distinguishability(h, label_free_states(...), W_out)`` is then a label-free q(t). It
    equals the oracle q(t) when the states cluster perfectly by class (a cluster is a class
    up to renaming, and q does not depend on the names).
    """
    h = _time_view(h)
    W = _readout(W_out, h.shape[2])
    if W is None:
        raise ValueError("W_out is needed: the labels are read through the readout")
    if method not in LABEL_FREE_METHODS:
        raise ValueError(f"unknown method {method!r}; allowed: {', '.join(LABEL_FREE_METHODS)}")
    if method == "decoded":
        if isinstance(W_out, torch.nn.Linear) and b_out is None and W_out.bias is not None:
            b_out = W_out.bias
        bias = 0.0 if b_out is None else _to_numpy(b_out, "b_out")
        b, L, d = h.shape
        labels = np.empty((b, L), dtype=np.int64)  # (b, L)
        for blk in _time_blocks(b, L, d + 2 * W.shape[0]):
            hw = _time_block(h, blk) @ W.T  # (b, l, k)
            labels[:, blk] = np.argmax(hw + bias, axis=-1)  # (b, l)
        return labels
    h = _hidden(h)
    n_g = W.shape[0] if n_g is None else n_g
    if isinstance(n_g, bool) or not isinstance(n_g, (int, np.integer)) or n_g < 1:
        raise ValueError(f"n_g must be a positive int, got {n_g!r}")
    # ||W (h - h')|| = ||S V^T (h - h')|| with W^T W = V S^2 V^T: cluster in rank(W) dims
    _, S, Vt = np.linalg.svd(W, full_matrices=False)
    keep = S > S.max() * 1e-12 if S.size else S.astype(bool)
    z = h @ (Vt[keep].T * S[keep])  # (b, L, r)
    return kmeans_per_time(np.swapaxes(z, 0, 1), n_g, seed=seed, max_fit=max_fit).T  # (b, L)


def T_cross(q, tau: float = 0.5) -> int | None:
    """First time with ``q(t) >= tau``, as a 1-based length, or None if it never crosses.

    Index ``i`` of ``q`` is time ``t = i + 1`` (tokens read), so the result is
    comparable with ``m_p``. NaN entries never count as a crossing.
    """
    tau = _check_tau(tau)
    q = _curve(q)
    with np.errstate(invalid="ignore"):
        hit = np.flatnonzero(q >= tau)
    return int(hit[0]) + 1 if hit.size else None


# -- symbolic subspace U (its basis: sst_core.theory.error_control.symbolic_basis) --------
def projector(Q) -> np.ndarray:
    """``P_U = Q Q^T`` (d, d) for ``Q`` (d, r) with orthonormal columns."""
    Q = _to_numpy(Q, "Q")
    if Q.ndim != 2:
        raise ValueError(f"Q must have shape (d, r), got {Q.shape}")
    return Q @ Q.T


def _orthonormal(Q: np.ndarray, name: str) -> None:
    gram = Q.T @ Q  # (r, r)
    if not np.allclose(gram, np.eye(Q.shape[1]), atol=1e-8):
        err = np.abs(gram - np.eye(len(gram))).max()
        raise ValueError(f"{name} must have orthonormal columns (as symbolic_basis "
                         f"returns); max |Q^T Q - I| = {err:.3g}")


def q_split(h, states, Q, W_out=None, n_g: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``q_U`` and ``q_U_perp``: the ratio with the residual split along ``U`` / ``U_perp``.

    With ``r = h_t - c_{g_t}(t)`` and ``P_U = Q Q^T``::

        q_U(t)      = mean ||W P_U r||^2       / M(t)
        q_U_perp(t) = mean ||W (I - P_U) r||^2 / M(t)

    with ``W`` and ``M`` as in :func:`distinguishability` (squared convention). Because
    of cross terms ``q_U + q_U_perp != q`` in general (equality when ``W`` is the
    identity, or the two parts stay ``W``-orthogonal).

    Args:
        h, states, W_out, n_g: as in :func:`distinguishability`.
        Q: one reference basis ``(d, r)`` used at every time, or one basis per time: a
            sequence of L arrays ``(d, r_t)`` or an array ``(L, d, r)``. Columns must be
            orthonormal (as :func:`~sst_core.theory.error_control.symbolic_basis`
            returns); ``r = 0`` is allowed.

    Returns:
        ``(q_U, q_U_perp)``, each ``(L,)``; NaN where ``M`` is.
    """
    h = _time_view(h)
    s, n_g = _states(states, h.shape, n_g)
    b, L, d = h.shape
    W = _readout(W_out, d)
    if isinstance(Q, (np.ndarray, torch.Tensor)) and Q.ndim == 2:
        Qs = [_to_numpy(Q, "Q")] * L
    elif isinstance(Q, (np.ndarray, torch.Tensor)) and Q.ndim == 3 or (
            isinstance(Q, Sequence) and not isinstance(Q, (str, bytes))):
        Qs = [_to_numpy(Qt, f"Q[{i}]") for i, Qt in enumerate(Q)]
        if len(Qs) != L:
            raise ValueError(f"a per-time Q needs L={L} bases, got {len(Qs)}")
    else:
        raise ValueError("Q must be a (d, r) array or a sequence of L arrays (d, r_t), "
                         f"got {type(Q).__name__}")
    for i, Qt in enumerate(Qs[:1] if Qs and all(Qt is Qs[0] for Qt in Qs) else Qs):
        if Qt.ndim != 2 or Qt.shape[0] != d:
            raise ValueError(f"Q[{i}] must have shape (d, r) with d={d}, got {Qt.shape}")
        _orthonormal(Qt, f"Q[{i}]")
    Wm = np.eye(d) if W is None else W  # (k, d)
    M, R_U, R_perp = np.empty(L), np.empty(L), np.empty(L)  # (L,) each
    for blk in _time_blocks(b, L, 3 * d):
        hb = _time_block(h, blk)  # (b, l, d)
        c, present = centroids(hb, s[:, blk], n_g)  # (l, n_g, d)
        r = _residuals(hb, s[:, blk], c)  # (b, l, d)
        M[blk] = _min_gap(c @ Wm.T, present)  # (l,)
        for j, i in enumerate(range(*blk.indices(L))):
            rt = r[:, j]  # (b, d)
            rU = (rt @ Qs[i]) @ Qs[i].T  # (b, d)  P_U r
            wU, wP = rU @ Wm.T, (rt - rU) @ Wm.T  # (b, k)
            R_U[i] = np.einsum("bk,bk->", wU, wU) / b
            R_perp[i] = np.einsum("bk,bk->", wP, wP) / b
    with np.errstate(invalid="ignore", divide="ignore"):
        return R_U / M, R_perp / M


# -- model-based diagnostics -----------------------------------------------------------
def token_ids(model, tokens) -> torch.Tensor:
    """``tokens`` (b, L) as a long tensor on the model's device, checked: integers in
    ``0 .. model.n_tokens - 1``."""
    tok = torch.as_tensor(np.asarray(tokens) if not isinstance(tokens, torch.Tensor)
                          else tokens)
    if tok.dtype.is_floating_point or tok.dtype == torch.bool or tok.is_complex():
        raise ValueError(f"tokens must be integers, got dtype {tok.dtype}")
    if tok.ndim != 2:
        raise ValueError(f"tokens must have shape (b, L), got {tuple(tok.shape)}")
    if tok.numel() and (tok.min() < 0 or tok.max() >= model.n_tokens):
        raise ValueError(f"tokens must lie in 0..{model.n_tokens - 1}, got range "
                         f"{int(tok.min())}..{int(tok.max())}")
    return tok.long().to(model.W_out.weight.device)


def state_trajectory(model, tokens, h0=None) -> torch.Tensor:
    """The model's full recurrent states ``(b, L, D)`` along ``tokens`` ``(b, L)``.

    Entry ``[:, i]`` is the state after ``i + 1`` tokens, computed with ``model.step``
    from ``h0`` (``(b, D)``; default ``model.init_state(b)``), without gradients, in the
    model's dtype.
    """
    tok = token_ids(model, tokens)
    b, L = tok.shape
    with torch.no_grad():
        h = model.init_state(b) if h0 is None else torch.as_tensor(h0).to(model.W_out.weight)
        if h.shape != (b, model.state_size):
            raise ValueError(f"h0 must have shape (b, D) = {(b, model.state_size)}, "
                             f"got {tuple(h.shape)}")
        hs = []
        for t in range(L):
            h = model.step(h, tok[:, t])  # (b, D)
            hs.append(h)
    return torch.stack(hs, 1) if hs else h.new_zeros(b, 0, model.state_size)  # (b, L, D)


def state_basis(model, states_t, groups_t, n_g: int) -> torch.Tensor:
    """U of the recurrent state space at one time, in full-state coordinates: ``(D, r)``
    float64, zero off the recurrent entries (``model.recurrent_mask``).

    ``states_t`` (b, D) are the model's full states at that time and ``groups_t`` (b,) their
    oracle group elements; U is spanned by the differences of the class means of the
    recurrent entries (:func:`centroids`, :func:`~sst_core.theory.error_control.symbolic_basis`).
    """
    from sst_core.theory.error_control import symbolic_basis  # SymPy only when called

    mask = model.recurrent_mask.numpy()  # (D,)
    c, present = centroids(states_t[:, None, mask], groups_t[:, None], n_g)  # (1, n_g, D_rec)
    Q_rec = symbolic_basis(c[0], present[0])  # (D_rec, r)
    Q = np.zeros((mask.size, Q_rec.shape[1]))
    Q[mask] = Q_rec
    return torch.from_numpy(Q)  # (D, r)


def _layer_mask(model, layers: str) -> torch.Tensor:
    """(D,) bool: recurrent entries of the last layer, or of every layer."""
    if layers not in LAYERS:
        raise ValueError(f"unknown layers {layers!r}; allowed: {', '.join(LAYERS)}")
    rec = model.recurrent_mask.clone()  # (D,)
    if layers == "last":
        sizes = [layer.state_size for layer in model.layers]
        rec[: sum(sizes[:-1])] = False
    return rec


def perturbation_recovery(model, tokens, t0: int, eps: float = 1e-2,
                          direction: str = "random", Q=None, layers: str = "last",
                          seed: int = 0) -> np.ndarray:
    """How a small kick to the recurrent state evolves on the same inputs (section 7).

    The model (a float64 copy) reads ``tokens[:, :t0]`` from its initial state, giving
    ``h_{t0}``. A perturbation ``delta`` is added, ``h~_{t0} = h_{t0} + delta``, and both
    runs read the same remaining tokens ``tokens[:, t0:]``.

    ``delta`` lives on the entries selected by ``layers`` (``"last"``: the last layer's
    recurrent entries, ``"all"``: every layer's; input windows, where
    ``model.recurrent_mask`` is False, are never perturbed). Per sample,
    ``||delta|| = eps * ||h_{t0}||`` with the norm over those same entries. Its direction
    is Gaussian (``"random"``), or for ``"U"`` a Gaussian vector projected onto the span
    of ``Q``'s columns (``Q`` is ``(D, r)`` in full-state coordinates) and then restricted
    to the selected entries.

    Returns:
        ``(L - t0,)`` float64: entry ``k`` is the batch mean of
        ``||h~ - h|| / ||delta||`` after reading token ``t0 + k`` (i.e. after
        ``t0 + k + 1`` tokens), distances over all recurrent entries. For an affine
        model with transition ``A``, entry ``k`` is ``mean ||A^(k+1) delta|| / ||delta||``.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"unknown direction {direction!r}; allowed: {', '.join(DIRECTIONS)}")
    if direction == "U" and Q is None:
        raise ValueError("direction='U' needs Q, a (D, r) basis of U in state coordinates")
    if direction != "U" and Q is not None:
        raise ValueError("Q is only used with direction='U'")
    if not np.isfinite(eps) or eps <= 0:
        raise ValueError(f"eps must be a finite number > 0, got {eps!r}")
    tok = token_ids(model, tokens)
    b, L = tok.shape
    if isinstance(t0, bool) or not isinstance(t0, (int, np.integer)) or not 0 <= t0 < L:
        raise ValueError(f"t0 must be an int in 0..L-1 = 0..{L - 1}, got {t0!r}")
    m = copy.deepcopy(model).double().eval()
    D = m.state_size
    sel = _layer_mask(m, layers).to(tok.device)  # (D,)
    rec = m.recurrent_mask.to(tok.device)  # (D,)
    gen = torch.Generator().manual_seed(int(seed))
    z = torch.randn(b, D, generator=gen, dtype=torch.float64).to(tok.device)  # (b, D)
    if direction == "U":
        Qn = _to_numpy(Q, "Q")
        if Qn.ndim != 2 or Qn.shape[0] != D:
            raise ValueError(f"Q must have shape (D, r) with D=model.state_size={D}, "
                             f"got {Qn.shape}")
        Qo = torch.as_tensor(scipy.linalg.orth(Qn)).to(z)  # (D, r') orthonormal
        z = (z @ Qo) @ Qo.T  # (b, D)  P_U z
    z = z * sel  # (b, D)
    z_norm = z.norm(dim=1)  # (b,)
    if (z_norm <= 1e-12 * (1 + z.abs().max())).any():
        raise ValueError("the perturbation direction vanishes on the selected entries "
                         f"(layers={layers!r}); is Q supported on them?")
    with torch.no_grad():
        h = m.init_state(b)  # (b, D)
        for t in range(t0):
            h = m.step(h, tok[:, t])
        ref = (h * sel).norm(dim=1)  # (b,)
        if (ref == 0).any():
            raise ValueError(f"||h_t0|| is 0 on the selected entries at t0={t0} "
                             "(e.g. the initial state); pick a later t0")
        delta = z * (eps * ref / z_norm)[:, None]  # (b, D)
        d_norm = delta.norm(dim=1)  # (b,)
        hp = h + delta
        out = []
        for t in range(t0, L):
            h, hp = m.step(h, tok[:, t]), m.step(hp, tok[:, t])
            out.append(((hp - h) * rec).norm(dim=1) / d_norm)  # (b,)
    return torch.stack(out, 1).mean(0).cpu().numpy()  # (L - t0,)


def state_preserving_words(group: Group | str, length: int, n: int,
                           tokens: str = "generators", seed: int = 0, *,
                           max_tries: int = 1_000_000) -> np.ndarray:
    """``n`` random words of ``length`` tokens whose product is the identity.

    Tokens are element indices drawn i.i.d. uniformly from ``vocabulary(group, tokens)``
    (the convention of :func:`sst_core.tasks.tracking.sample`); words are kept when
    ``x_1 * ... * x_length = e`` (rejection sampling, ``np.random.default_rng(seed)``).
    Such a word ``s`` satisfies ``T_s(g) = g * s = g`` for every state, so it is
    state-preserving in the sense of Theorem 1. Words may repeat.

    Raises ValueError when fewer than ``n`` words are found among ``max_tries`` draws.

    Returns:
        ``(n, length)`` int64.
    """
    for what, v in (("length", length), ("n", n), ("max_tries", max_tries)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{what} must be an int >= 1, got {v!r}")
    g = group if isinstance(group, Group) else get_group(group)
    vocab = vocabulary(g, tokens)  # (k,)
    rng = np.random.default_rng(seed)
    found, drawn = [], 0
    batch = int(min(max_tries, max(1024, 8 * n * g.order)))
    while drawn < max_tries and sum(len(f) for f in found) < n:
        size = min(batch, max_tries - drawn)
        words = vocab[rng.integers(0, len(vocab), size=(size, int(length)))]  # (size, length)
        prod = words[:, 0].copy()  # (size,)
        for t in range(1, length):
            prod = g.table[prod, words[:, t]]
        found.append(words[prod == g.identity])
        drawn += size
    words = np.concatenate(found) if found else np.zeros((0, length), np.int64)
    if len(words) < n:
        raise ValueError(f"found only {len(words)} of n={n} identity words of length "
                         f"{length} over {g.name} tokens={tokens!r} in {drawn} draws")
    return words[:n].astype(np.int64)


# -- summaries over runs ---------------------------------------------------------------
def failure_mode(q, tau: float = 0.5, start: int = 5, t_train: int | None = None) -> str:
    """Classify a ``q(t)`` curve into the two affine failure modes of section 3.5.

    Rule, on the finite entries of ``q`` only (NaN/inf skipped; none at all: "none"):

    - ``"saturation"``: the classes are never well separated. Without ``t_train``: the
      median of the first ``start`` finite values is already ``>= tau``. With
      ``t_train`` (the training length): ``q`` crosses ``tau`` within it,
      ``T_cross <= t_train``. The second reading is the robust one for trained trackers:
      ``q(1)`` is always 0 (after one token the state is a function of that token), so a
      curve that is above ``tau`` everywhere but the first few positions still counts;
    - ``"climb"``: otherwise, if some finite value is ``>= tau`` (it starts below and
      crosses later, at :func:`T_cross`);
    - ``"none"``: it never reaches ``tau``.
    """
    tau = _check_tau(tau)
    if isinstance(start, bool) or not isinstance(start, (int, np.integer)) or start < 1:
        raise ValueError(f"start must be an int >= 1, got {start!r}")
    if t_train is not None and (isinstance(t_train, bool) or not isinstance(t_train, (int, np.integer))
                                or t_train < 1):
        raise ValueError(f"t_train must be an int >= 1 or None, got {t_train!r}")
    q = _curve(q)
    valid = q[np.isfinite(q)]
    if valid.size == 0:
        return "none"
    if t_train is not None:
        crossed = T_cross(q, tau)
        if crossed is None:
            return "none"
        return "saturation" if crossed <= t_train else "climb"
    if np.median(valid[:start]) >= tau:
        return "saturation"
    return "climb" if (valid >= tau).any() else "none"
