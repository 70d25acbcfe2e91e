"""Memory meets error control: spectra and memory functions of trained trackers.

Paper 1 says that an affine recurrence ``h_t = A(x_t) h_{t-1} + b(x_t)`` cannot contract
errors inside the symbolic subspace U: the return map ``F_s`` of a state-preserving word
``s`` is the identity on U, so its Jacobian has (at least) ``dim U`` eigenvalues equal to 1.
Paper 2 says what a linear system with eigenvalues ``mu`` can remember at each delay: the
memory function ``M[tau]`` (:mod:`sst_core.theory.memory`). This module puts the two side
by side for one trained tracker (:func:`run_spectra`, config
:class:`~sst_core.spec.configs.SpectraConfig`):

- the per-position transitions ``J_t = d h_t / d h_{t-1}`` (the learned ``A(x_t)``),
  restricted to the recurrent entries of the state (``model.recurrent_mask``), taken
  along real held-out words (:func:`step_jacobians`). For an affine one-layer model ``J_t``
  depends on the token only (for Mamba and AUSSM also on the conv window of recent
  tokens); otherwise it is the linearisation along the words;
- the return-map Jacobians of state-preserving words ``s``: the products of the step
  Jacobians along ``s``, last token on the left. For one layer this is ``J_s = d F_s / d h``
  on the recurrent entries (:func:`sst_core.analysis.return_map.return_map_jacobian`, which
  ``tests/test_spectra.py`` checks against it); in a stack whose upper layers keep an input
  window (Mamba, AUSSM, Mamba-3) the product leaves out the path from a lower layer's state
  through that window. ``J_s`` compressed to U, ``Q^T J_s Q``, is
  :func:`~sst_core.analysis.return_map.compression`, as in the Theorem 1 norms;
- their eigenvalues (moduli, spectral radius, the share near the unit circle, how many lie
  near 1 against ``dim U``) and memory functions with their horizons (the first delay at
  which ``M`` drops below 1/2).

What a memory function of a Jacobian spectrum means
---------------------------------------------------
``memory_of_spectrum(eig(J_t))`` is the memory of the linear time-invariant system that
repeats the transition ``J_t`` forever, driven by one generic input through every mode
(Paper 2's setting). For a return map the time step is one whole word ``s``, so its
delays count words (``preserving_length`` tokens each). An eigenvalue exactly 1, the
neutral direction Theorem 1 predicts, has ``M = 1/T`` at every delay: it keeps the *sum*
of its inputs, not the input at any one delay, so the memory function cannot see the
bookkeeping that tracking needs. That is one thing this tool does not explain.

How the spectra are reduced (cost)
----------------------------------
``memory_function`` factors a Gram matrix in mpmath at verified precision and evaluates
two projector columns in exact integers. Measured on this project's 2-core CPU at
T = 1000: about 0.05-0.1 s for 16 modes and 0.4-1 s for 64 well-separated ones. Trained
spectra are worse: the 512 pooled modes of a quick Mamba never finish; some 16-mode
Mamba channels fail at 2000 digits unless merged at 1e-5 (eigenvalues 4e-28 and 3e-6),
and the 64-mode return maps of a quick linear RNN (6th powers of a spectrum of radius
0.87, mostly near 0) fail at every merging tolerance up to 1e-2, after 16 s each.
So every memory function here is
taken per *unit*, and each unit's spectrum is reduced first (:func:`memory_details`):

1. **units**: the channels of a diagonal SSM read separate inputs, so they are separate
   systems; the memory of their pooled spectrum would claim that one input drives all
   ``E N`` modes. From the layer's state layout (:func:`state_units`): Mamba and its
   subclasses: channel c = its N states; AUSSM: channel d = the real and imaginary parts
   of its N states; Mamba-3: each (head, channel) with its ``2N`` entries; every other
   layer is one unit. The layout is used only if no strongly coupled block of the
   Jacobian straddles two units (checked on the Jacobians themselves); otherwise the
   whole recurrent state is one unit. A record gives the median and the max over units
   of ``M[tau]`` and their horizons. When there are more than ``MAX_UNITS`` units, the
   memory functions of ``MAX_UNITS`` of them are computed, picked at evenly spaced ranks
   of their spectral radius (slowest and fastest channel included); identical unit
   spectra (Mamba-3's channels in one head) are computed once;
2. **stability**: an eigenvalue with ``|mu| > 1`` (trained dense and gated RNNs have
   them) is moved radially onto the unit circle (the memory function needs
   ``|mu| <= 1``); the record counts them (``n_outside``);
3. **fast modes**: eigenvalues with ``|mu| < R_FAST`` (0.1) become one mode at 0 (the
   impulse at delay 0). They have decayed below 1e-3 after three steps, so they only
   serve delays 0-2, and their clusters are what makes the Gram matrix hopeless;
4. **merging**: eigenvalues closer than ``tol`` count once (``distinct_eigenvalues``);
   ``tol`` starts at 1e-10 and rises through ``MEM_TOLS`` if mpmath still does not
   converge. The tolerance used is stored (1e-10 for every quick-size model tried);
5. **cap**: a unit with more than ``MAX_MODES`` distinct eigenvalues (a dense state wider
   than 64) keeps ``MAX_MODES`` of them by farthest-point sampling in the complex plane,
   conjugate pairs together, starting from the largest modulus (so the slowest mode,
   which sets the horizon, always stays). The record flags it (``n_reduced``).

The per-token transition is taken at a *typical position*: among the (at most
``POSITIONS_PER_TOKEN``, evenly spaced) positions where the token is read, the one whose
spectrum has the median mean modulus. A real position keeps a real spectrum (an
elementwise median of complex spectra is not one); the summaries of moduli (median
spectral radius, near-unit share) use all sampled positions.

Cost of a whole record, measured on the 2-core CPU while another job used one core
(default SpectraConfig: 8 words of 60 tokens, 8 preserving words of 6, T = 1000;
quick-size trained S3 trackers, one torch thread): Mamba (d_model 16, d_state 16: 512
recurrent entries, 32 channels) 10-12 s, of which 6-8 s Jacobians and 2-3 s memory
functions; linear RNN (width 64) 1.3-2 s; Negative Mamba 8 s; Mamba-3 (1024 entries,
mostly Jacobians) 17 s; AUSSM (32 unit-circle modes per channel, mostly memory
functions) 18 s. Each record stores its own ``wall_s``.
"""
from __future__ import annotations

import copy
import time
import warnings
from collections import defaultdict
from typing import Any, Sequence

import numpy as np

from sst_core.store.codec import encode_float, encode_floats

EPS_UNIT = 1e-2  # |.|-distance that counts as "on the unit circle" or "at 1"
HORIZON_LEVEL = 0.5  # the horizon: first delay where M drops below this
SPECTRA_SEED_OFFSET = 3_000_017  # held-out words share no seed with training or diagnostics
CENTROID_WORDS = 256  # words whose end states give the centroids, hence U
POSITIONS_PER_TOKEN = 32  # positions per token whose Jacobian is taken
MAX_UNITS = 8  # units (channels) whose memory function is computed per spectrum
MAX_MODES = 64  # distinct eigenvalues per memory function at most
R_FAST = 0.1  # eigenvalues with |mu| below this are merged into one mode at 0
MEM_TOLS = (1e-10, 1e-8, 1e-6, 1e-4, 1e-3, 1e-2)  # merging tolerances, tried in order
N_GRID = 60  # delays stored per memory function (delay_grid)
EIG_SAMPLE_TOTAL = 3072  # eigenvalues stored over all tokens (a record stays < 200 KB)
EIG_SAMPLE_RETURN = 2048  # eigenvalues stored over all return maps
POSITION_CHUNK = 32  # positions per vmapped Jacobian call (bounds the memory used)
TANGENT_CHUNK = 256  # basis vectors per vmap chunk


# -- Jacobians ---------------------------------------------------------------------------

def float64_copy(model):
    """A float64 deep copy in eval mode whose parameters need no gradient."""
    m = copy.deepcopy(model).double().eval()
    for p in m.parameters():
        p.requires_grad_(False)
    return m


def _jacobians_at(model, H_prev, X):
    """``J = d step(h, x) / d h`` on the recurrent entries at each ``(h, x)`` pair.

    H_prev: (n, D) float64 states, X: (n,) token ids -> (n, D_rec, D_rec).

    Forward mode, built as ``torch.func.jacfwd`` builds it: ``vmap`` of ``jvp`` over the
    basis vectors of the recurrent entries only (the input window, Mamba's conv state,
    is held fixed: its columns are not wanted). The n pairs ride on the model's own batch
    axis (one step is row-wise), because vmapping a per-sample ``jacrev`` over token ids
    fails on the one-hot input of the RNN family. Cost: D_rec forward passes of one step
    on n states (about 1 s for 32 positions of a 512-entry Mamba state on one core).
    """
    import torch
    from torch.func import jvp, vmap

    mask = model.recurrent_mask  # (D,)
    n_rec = int(mask.sum())
    idx = mask.nonzero()[:, 0]  # (D_rec,)
    basis = torch.eye(n_rec, dtype=H_prev.dtype)  # (D_rec, D_rec)
    out = []
    for i in range(0, H_prev.shape[0], POSITION_CHUNK):
        h, x = H_prev[i:i + POSITION_CHUNK], X[i:i + POSITION_CHUNK]  # (c, D), (c,)
        fixed = h * ~mask  # (c, D): the window entries, held fixed

        def step_rec(r, fixed=fixed, x=x):  # (c, D_rec) -> (c, D_rec)
            return model.step(fixed.index_copy(1, idx, r), x).index_select(1, idx)

        def column(v, h=h, step_rec=step_rec):  # (D_rec,) -> (c, D_rec): J v at every pair
            r = h.index_select(1, idx)
            return jvp(step_rec, (r,), (v.expand_as(r),))[1]

        cols = vmap(column, chunk_size=TANGENT_CHUNK)(basis)  # (D_rec, c, D_rec)
        out.append(cols.permute(1, 2, 0).detach())  # (c, D_rec, D_rec)
    if not out:
        return H_prev.new_zeros(0, n_rec, n_rec)
    return torch.cat(out)  # (n, D_rec, D_rec)


def _trajectory(model, words, h0):
    """States before each token: (b, L, D) with entry [:, t] = state before token t."""
    import torch

    b, L = words.shape
    h = h0
    prev = []
    with torch.no_grad():
        for t in range(L):
            prev.append(h)
            h = model.step(h, words[:, t])  # (b, D)
    return torch.stack(prev, 1), h  # (b, L, D), (b, D) the state after the word


def step_jacobians(model, words, h0=None):
    """``J_t = d h_t / d h_{t-1}`` on the recurrent entries along ``words``.

    Args:
        model: any registry model (its float64 copy is differentiated).
        words: ``(b, L)`` token ids.
        h0: optional ``(b, D)`` start states; default ``model.init_state(b)``.

    Returns:
        ``(b, L, D_rec, D_rec)`` float64 tensor, ``D_rec = model.recurrent_mask.sum()``;
        ``[i, t]`` is the Jacobian of the step that reads ``words[i, t]`` at the state the
        word has reached. Memory: ``b L D_rec^2`` doubles (1 GB for 8 x 60 positions of
        a 512-entry Mamba state); take few words at a time for large states.
    """
    import torch

    from sst_core.analysis.diagnostics import token_ids

    m = float64_copy(model)
    tok = token_ids(m, words)  # (b, L)
    b, L = tok.shape
    if h0 is None:
        h0 = m.init_state(b)
    h0 = torch.as_tensor(h0, dtype=torch.float64)
    if h0.shape != (b, m.state_size):
        raise ValueError(f"h0 must have shape (b, D) = {(b, m.state_size)}, got {tuple(h0.shape)}")
    H_prev, _ = _trajectory(m, tok, h0)  # (b, L, D)
    J = _jacobians_at(m, H_prev.reshape(b * L, -1), tok.reshape(-1))  # (b L, D_rec, D_rec)
    return J.reshape(b, L, *J.shape[1:])


# -- eigenvalues -------------------------------------------------------------------------

def _blocks(pattern: np.ndarray) -> list[np.ndarray]:
    """Strongly connected components of the directed graph ``i <- j`` where ``J[i, j] != 0``.

    Ordered topologically, they put J in block-triangular form, so J's eigenvalues are
    those of its diagonal blocks (512 blocks of one entry for Mamba: the diagonal).
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    n, labels = connected_components(csr_matrix(pattern), directed=True, connection="strong")
    order = np.argsort(labels, kind="stable")
    cuts = np.cumsum(np.bincount(labels, minlength=n))[:-1]
    return np.split(order, cuts)


def _eig_blocks(J) -> tuple[np.ndarray, list[np.ndarray]]:
    """Eigenvalues of ``J`` (..., D, D) by blocks: ``(eig (..., D), blocks)``.

    ``eig[..., i]`` is an eigenvalue of the diagonal block that holds entry ``i``, so a set
    of entries that is a union of blocks has its own eigenvalues at its own indices.
    """
    J = np.asarray(J, dtype=float)
    if J.ndim < 2 or J.shape[-1] != J.shape[-2]:
        raise ValueError(f"J must have shape (..., D, D), got {J.shape}")
    D = J.shape[-1]
    flat = J.reshape(-1, D, D)  # (n, D, D)
    if not np.all(np.isfinite(flat)):
        raise ValueError("J has non-finite entries")
    blocks = _blocks((flat != 0).any(0)) if D else []
    out = np.empty(flat.shape[:2], dtype=complex)  # (n, D)
    by_size: dict[int, list[np.ndarray]] = defaultdict(list)
    for blk in blocks:
        by_size[len(blk)].append(blk)
    for k, group in by_size.items():
        idx = np.stack(group)  # (m, k)
        sub = flat[:, idx[:, :, None], idx[:, None, :]]  # (n, m, k, k)
        out[:, idx] = sub[..., 0] if k == 1 else np.linalg.eigvals(sub)  # (n, m, k)
    return out.reshape(J.shape[:-1]), blocks


def eigenvalues(J) -> np.ndarray:
    """Eigenvalues of ``J`` (..., D, D) (numpy or torch), ``(..., D)`` complex, computed
    block by block (see ``_eig_blocks``); equal, as a set, to ``np.linalg.eigvals(J)``."""
    if hasattr(J, "detach"):
        J = J.detach().cpu().numpy()
    return _eig_blocks(J)[0]


def near_unit(mu, eps: float = EPS_UNIT) -> float:
    """Share of eigenvalues with ``| |mu| - 1 | < eps`` (on the unit circle)."""
    mu = np.asarray(mu, dtype=complex).ravel()
    return float(np.mean(np.abs(np.abs(mu) - 1) < eps)) if mu.size else float("nan")


def n_near_one(mu, eps: float = EPS_UNIT) -> int:
    """Number of eigenvalues with ``|mu - 1| < eps``: the neutral directions of Theorem 1."""
    return int(np.sum(np.abs(np.asarray(mu, dtype=complex).ravel() - 1) < eps))


def spectral_radius(mu) -> float:
    mu = np.asarray(mu, dtype=complex).ravel()
    return float(np.max(np.abs(mu))) if mu.size else float("nan")


def horizon(M, level: float = HORIZON_LEVEL) -> int | None:
    """First delay ``tau`` with ``M[tau] < level`` (None if M never drops below it)."""
    below = np.flatnonzero(np.asarray(M, dtype=float) < level)
    return int(below[0]) if below.size else None


# -- memory functions --------------------------------------------------------------------

def _farthest_point(nodes: np.ndarray, budget: int) -> np.ndarray:
    """At most ``budget`` eigenvalues of a conjugate-closed set, pairs kept together:
    farthest-point sampling in the complex plane from the largest modulus."""
    upper = nodes[nodes.imag >= 0]  # real ones and one member of each pair
    cost = np.where(upper.imag > 0, 2, 1)
    first = int(np.argmax(np.abs(upper)))
    chosen, used = [first], int(cost[first])
    dist = np.abs(upper - upper[first])
    dist[first] = -1.0
    while True:
        cand = int(np.argmax(dist))
        if dist[cand] < 0:
            break
        if used + cost[cand] > budget:
            dist[cand] = -1.0
            continue
        chosen.append(cand)
        used += int(cost[cand])
        dist = np.minimum(dist, np.abs(upper - upper[cand]))
        dist[chosen] = -1.0
    keep = upper[chosen]
    return np.concatenate([keep, keep[keep.imag > 0].conj()])


def memory_details(mu, T: int, *, max_modes: int = MAX_MODES, r_fast: float = R_FAST,
                   tols: Sequence[float] = MEM_TOLS) -> dict[str, Any]:
    """Paper 2's memory function of the eigenvalues ``mu`` over ``T`` delays, with what was
    done to the spectrum (module docstring, steps 2-5).

    Returns ``memory`` (T,), ``horizon`` (first delay with M < 1/2), ``capacity`` (sum of
    M), ``tol`` (merging tolerance used; None and a NaN memory if none converged),
    ``n_modes`` (distinct eigenvalues used), ``n_outside`` (eigenvalues with |mu| > 1 moved
    onto the unit circle), ``n_fast`` (eigenvalues with |mu| < ``r_fast`` merged into one
    mode at 0), ``reduced`` (the cap applied) and ``dps`` (mpmath digits). ``r_fast=0``
    and ``max_modes`` above the spectrum's size leave the spectrum as it is.
    """
    from sst_core.theory.memory import (
        check_T,
        distinct_eigenvalues,
        is_conjugate_closed,
        memory_function_info,
    )

    T = check_T(T)
    mu = np.atleast_1d(np.asarray(mu, dtype=complex)).ravel()
    if mu.size == 0:
        raise ValueError("empty spectrum: mu has no eigenvalues")
    if not np.all(np.isfinite(mu)):
        raise ValueError("the spectrum has non-finite eigenvalues")
    if isinstance(max_modes, bool) or not isinstance(max_modes, (int, np.integer)) or max_modes < 2:
        raise ValueError(f"max_modes must be an int >= 2, got {max_modes!r}")
    mod = np.abs(mu)
    outside = mod > 1.0
    mu = np.where(outside, mu / np.where(outside, mod, 1.0), mu)  # onto the unit circle
    fast = mod < r_fast
    if fast.any():  # forgotten within a few steps: one mode at 0 (the impulse at delay 0)
        mu = np.concatenate([mu[~fast], [0.0]])
    for tol in tols:
        nodes = distinct_eigenvalues(mu, tol)
        reduced = len(nodes) > max_modes
        if reduced:
            if not is_conjugate_closed(nodes, tol):
                raise ValueError("a spectrum above max_modes must be closed under conjugation "
                                 "(the eigenvalues of a real matrix)")
            nodes = _farthest_point(nodes, max_modes)
        try:
            info = memory_function_info(nodes, T, tol=tol)
        except ArithmeticError:  # too ill-conditioned at this tolerance: merge more
            continue
        M = info["memory"]  # (T,)
        return {"memory": M, "horizon": horizon(M), "capacity": float(M.sum()), "tol": tol,
                "n_modes": int(info["rank"]), "n_outside": int(outside.sum()),
                "n_fast": int(fast.sum()), "reduced": bool(reduced), "dps": int(info["dps"])}
    return {"memory": np.full(T, np.nan), "horizon": None, "capacity": float("nan"),
            "tol": None, "n_modes": 0, "n_outside": int(outside.sum()),
            "n_fast": int(fast.sum()), "reduced": False, "dps": 0}


def memory_of_spectrum(mu, T: int, delays=None, **kw: Any) -> np.ndarray:
    """``M[tau]`` of the eigenvalues ``mu`` at ``delays`` (default ``0..T-1``), after the
    reduction of :func:`memory_details` (which it calls; keywords go there)."""
    from sst_core.theory.memory import check_delays

    M = memory_details(mu, T, **kw)["memory"]
    taus, scalar = check_delays(delays, len(M))
    return float(M[taus[0]]) if scalar else M[taus]


# -- units ---------------------------------------------------------------------------------

def state_units(model) -> list[np.ndarray]:
    """Index sets (into the recurrent entries) of the model's independent channels, from
    each layer's state layout (module docstring); a layer of another kind is one unit."""
    from sst_core.models.selective import Mamba3Layer, MambaLayer
    from sst_core.models.unitary import AUSSMLayer

    units, offset = [], 0
    for layer in model.layers:
        n_rec = layer.state_size - layer.conv_state_size
        idx = None
        if isinstance(layer, MambaLayer):
            E, N = layer.d_inner, layer.cfg.d_state
            if E * N == n_rec:
                idx = np.arange(n_rec).reshape(E, N)  # (E, N): channel c = row c
        elif isinstance(layer, AUSSMLayer):
            D, N = layer.cfg.d_model, layer.cfg.d_state
            if 2 * D * N == n_rec:
                parts = np.arange(n_rec).reshape(2, D, N)  # [Re; Im] x channel x state
                idx = np.concatenate([parts[0], parts[1]], axis=1)  # (D, 2N)
        elif isinstance(layer, Mamba3Layer):
            P, N = layer.cfg.headdim, layer.cfg.d_state
            if layer.n_heads * P * 2 * N == n_rec:
                idx = np.arange(n_rec).reshape(layer.n_heads * P, 2 * N)  # (H P, 2N)
        if idx is None:
            units.append(offset + np.arange(n_rec))
        else:
            units.extend(offset + row for row in idx)
        offset += n_rec
    return units


def _consistent_units(units: list[np.ndarray], blocks: list[np.ndarray], n_rec: int
                      ) -> list[np.ndarray]:
    """``units`` if no block of the Jacobian straddles two of them, else the whole state."""
    owner = np.full(n_rec, -1)
    for k, u in enumerate(units):
        owner[u] = k
    if np.all(owner >= 0) and all(np.all(owner[b] == owner[b[0]]) for b in blocks):
        return units
    return [np.arange(n_rec)]


def _pick_units(eig: np.ndarray, units: list[np.ndarray]) -> list[np.ndarray]:
    if len(units) <= MAX_UNITS:
        return units
    radius = np.array([np.abs(eig[u]).max() for u in units])
    order = np.argsort(radius, kind="stable")
    ranks = np.unique(np.round(np.linspace(0, len(units) - 1, MAX_UNITS)).astype(int))
    return [units[order[r]] for r in ranks]


def _unit_memory(eig: np.ndarray, units: list[np.ndarray], T: int, grid: np.ndarray,
                 cache: dict) -> dict[str, Any]:
    """Memory functions of the units' spectra: median and max over units on ``grid``."""
    details = []
    for u in _pick_units(eig, units):
        mu = np.sort_complex(eig[u])
        key = (T, tuple(np.round(mu, 12)))
        if key not in cache:
            cache[key] = memory_details(mu, T)
        details.append(cache[key])
    M = np.stack([d["memory"] for d in details])  # (n_units, T)
    with warnings.catch_warnings():  # a unit whose memory failed is NaN: left out
        warnings.simplefilter("ignore", RuntimeWarning)
        med, top = np.nanmedian(M, axis=0), np.nanmax(M, axis=0)  # (T,)
    tols = [d["tol"] for d in details if d["tol"] is not None]
    return {
        "memory_median": encode_floats(med[grid]), "memory_max": encode_floats(top[grid]),
        "horizon_median": horizon(med), "horizon_max": horizon(top),
        "horizon_units": [d["horizon"] for d in details],
        "capacity_median": encode_float(np.nanmedian([d["capacity"] for d in details])),
        "units_used": len(details),
        "tol_max": max(tols) if tols else None,
        "n_failed": sum(d["tol"] is None for d in details),
        "n_reduced": sum(d["reduced"] for d in details),
        "n_outside": int(sum(d["n_outside"] for d in details)),
    }


def _sample_eigs(eig: np.ndarray, cap: int, rng) -> dict[str, list]:
    flat = eig.ravel()
    if flat.size > cap:
        flat = flat[np.sort(rng.choice(flat.size, cap, replace=False))]
    return {"eig_re": encode_floats(flat.real), "eig_im": encode_floats(flat.imag)}


def _spectrum_stats(eig: np.ndarray) -> dict[str, np.ndarray]:
    """Per-row statistics of eigenvalue rows ``eig`` (n, D)."""
    mod = np.abs(eig)
    return {"radius": mod.max(-1), "near_unit": (np.abs(mod - 1) < EPS_UNIT).mean(-1),
            "outside": (mod > 1 + 1e-9).mean(-1), "mean_modulus": mod.mean(-1)}


# -- the record ------------------------------------------------------------------------------

def run_spectra(cfg) -> dict[str, Any]:
    """Spectra, return maps and memory functions of one trained tracker (module docstring).

    ``cfg``: a :class:`~sst_core.spec.configs.SpectraConfig`. Its tracker must be trained (:func:`~sst_core.analysis.trackers.load_tracker`).
    Returns JSON-ready metrics; lists of eigenvalues are samples (``EIG_SAMPLE_*``).
    """
    import torch

    from sst_core.analysis.diagnostics import state_basis, state_preserving_words
    from sst_core.analysis.return_map import compression
    from sst_core.analysis.trackers import held_out_words, load_tracker
    from sst_core.groups import get_group
    from sst_core.tasks.tracking import vocabulary
    from sst_core.theory.memory import delay_grid

    for what in ("n_words", "word_length", "n_preserving", "preserving_length", "mem_T"):
        v = getattr(cfg, what)
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{what} must be an int >= 1, got {v!r}")
    start = time.perf_counter()
    run_cfg = cfg.run
    rec, model = load_tracker(run_cfg)
    m = float64_copy(model)
    group = get_group(run_cfg.group)
    n_g, L = group.order, cfg.word_length
    n_rec = int(m.recurrent_mask.sum())
    rng = np.random.default_rng(SPECTRA_SEED_OFFSET + cfg.seed)
    words_np, states_np = held_out_words(run_cfg, max(CENTROID_WORDS, cfg.n_words), L, cfg.seed,
                                         offset=SPECTRA_SEED_OFFSET)  # (b, L), (b, L)
    words = torch.from_numpy(words_np)
    H_prev, h_end = _trajectory(m, words[:cfg.n_words], m.init_state(cfg.n_words))  # (n, L, D)
    with torch.no_grad():
        h = m.init_state(len(words))
        for t in range(L):
            h = m.step(h, words[:, t])
    Q = state_basis(m, h.numpy(), states_np[:, L - 1], n_g)  # (D, r): U at t = L
    dim_U = int(Q.shape[1])
    Q_rec = Q[m.recurrent_mask].numpy()  # (D_rec, r)
    units_all = state_units(m)
    cache: dict = {}
    t_jac = t_mem = 0.0

    # -- per-token transitions ---------------------------------------------------------
    grid = delay_grid(cfg.mem_T, N_GRID)
    vocab = vocabulary(group, run_cfg.tokens)
    x_used = words_np[:cfg.n_words]  # (n, L)
    cap = max(1, EIG_SAMPLE_TOTAL // len(vocab))
    tokens_out = []
    for k in vocab:
        pos = np.flatnonzero(x_used.ravel() == k)  # positions reading token k
        entry: dict[str, Any] = {"token": int(k), "n_positions": int(pos.size)}
        if pos.size == 0:
            tokens_out.append(entry)
            continue
        pick = pos[np.unique(np.round(np.linspace(0, pos.size - 1,
                                                  min(pos.size, POSITIONS_PER_TOKEN))).astype(int))]
        t0 = time.perf_counter()
        J = _jacobians_at(m, H_prev.reshape(-1, m.state_size)[pick],
                          words[:cfg.n_words].reshape(-1)[pick])  # (p, D_rec, D_rec)
        eig, blocks = _eig_blocks(J.numpy())  # (p, D_rec)
        t_jac += time.perf_counter() - t0
        units = _consistent_units(units_all, blocks, n_rec)
        stats = _spectrum_stats(eig)
        typical = int(np.argsort(stats["mean_modulus"], kind="stable")[len(pick) // 2])
        t0 = time.perf_counter()
        mem = _unit_memory(eig[typical], units, cfg.mem_T, grid, cache)
        t_mem += time.perf_counter() - t0
        entry.update({
            "n_sampled": int(len(pick)),
            "typical_position": [int(pick[typical] // L), int(pick[typical] % L) + 1],  # word, t
            "radius_median": float(np.median(stats["radius"])),
            "radius_max": float(np.max(stats["radius"])),
            "radius_typical": float(stats["radius"][typical]),
            "near_unit_median": float(np.median(stats["near_unit"])),
            "outside_median": float(np.median(stats["outside"])),
            "n_units": len(units),
            **mem,
            **_sample_eigs(eig, cap, rng),
        })
        tokens_out.append(entry)

    # -- return maps of state-preserving words -------------------------------------------
    s_words = state_preserving_words(group, cfg.preserving_length, cfg.n_preserving,
                                     tokens=run_cfg.tokens,
                                     seed=SPECTRA_SEED_OFFSET + 1 + cfg.seed)  # (n_p, l_s)
    n_p, l_s = s_words.shape
    T_s = max(2, cfg.mem_T // l_s)  # the return map's time step is one word
    grid_s = delay_grid(T_s, N_GRID)
    s_tok = torch.from_numpy(s_words)
    h_start = h_end[torch.arange(n_p) % cfg.n_words]  # (n_p, D): after a held-out word
    t0 = time.perf_counter()
    S_prev, _ = _trajectory(m, s_tok, h_start)  # (n_p, l_s, D)
    Js = _jacobians_at(m, S_prev.reshape(n_p * l_s, -1), s_tok.reshape(-1))
    Js = Js.reshape(n_p, l_s, n_rec, n_rec)
    P = Js[:, 0]
    for t in range(1, l_s):
        P = Js[:, t] @ P  # last token on the left
    P = P.numpy()  # (n_p, D_rec, D_rec)
    eig_s, blocks_s = _eig_blocks(P)  # (n_p, D_rec)
    t_jac += time.perf_counter() - t0
    units_s = _consistent_units(units_all, blocks_s, n_rec)
    stats_s = _spectrum_stats(eig_s)
    dist_one = np.sort(np.abs(eig_s - 1), axis=-1)  # (n_p, D_rec)
    QJQ = compression(P @ Q_rec, Q_rec)  # (n_p, r, r): J_s compressed to U
    eig_U = np.linalg.eigvals(QJQ) if dim_U else np.zeros((n_p, 0), complex)
    t0 = time.perf_counter()
    mems = [_unit_memory(eig_s[i], units_s, T_s, grid_s, cache) for i in range(n_p)]
    t_mem += time.perf_counter() - t0
    n_one = [n_near_one(e) for e in eig_s]
    return_maps = {
        "word_length": int(l_s), "n_words": int(n_p), "T": int(T_s),
        "radius": encode_floats(stats_s["radius"]),
        "near_unit": encode_floats(stats_s["near_unit"]),
        "outside": encode_floats(stats_s["outside"]),
        "n_near_one": n_one, "n_near_one_median": float(np.median(n_one)),
        "closest_to_one": [encode_floats(d[:dim_U + 3]) for d in dist_one],
        "eig_U_re": [encode_floats(e.real) for e in eig_U],
        "eig_U_im": [encode_floats(e.imag) for e in eig_U],
        "n_units": len(units_s),
        **{k: [mm[k] for mm in mems] for k in mems[0]},
        **_sample_eigs(eig_s, EIG_SAMPLE_RETURN, rng),
    }
    m_p = rec["metrics"]["m_p"]
    return {
        "model": run_cfg.model,
        "is_affine": bool(model.is_affine),
        # J depends on the state (or a deeper stack reads the layer below through norms and
        # gates): the spectra are those of the linearisation along the words
        "linearised": bool(not model.is_affine or run_cfg.n_layers > 1),
        "n_layers": int(run_cfg.n_layers),
        "m_p": m_p,
        "training_run": rec["run_id"],
        "D_rec": n_rec,
        "dim_U": dim_U,
        "units_layout": len(units_all),
        "eps": EPS_UNIT,
        "mem_T": int(cfg.mem_T),
        "delay": [int(d) for d in grid],
        "return_delay": [int(d) for d in grid_s],  # in words; times word_length in tokens
        "tokens": tokens_out,
        "return_maps": return_maps,
        "settings": {"positions_per_token": POSITIONS_PER_TOKEN, "max_units": MAX_UNITS,
                     "max_modes": MAX_MODES, "centroid_words": CENTROID_WORDS,
                     "horizon_level": HORIZON_LEVEL, "typical": "median mean modulus"},
        "wall_s": {"jacobians": round(t_jac, 2), "memory": round(t_mem, 2),
                   "total": round(time.perf_counter() - start, 2)},
    }
