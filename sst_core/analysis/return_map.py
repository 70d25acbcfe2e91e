"""Theorem 1's return map: ``F_s``, its Jacobian on U, and the norms the records store.

A state-preserving word ``s`` (its product is the identity,
:func:`~sst_core.analysis.diagnostics.state_preserving_words`) gives the return map
``F_s``: the state after reading ``s`` from a state ``h`` (:func:`return_map`). Theorem 1:
when the model is affine and ``F_s`` fixes the centroids, its Jacobian ``J = dF_s/dh`` is
the identity on the symbolic subspace U, so no error along U is ever contracted.

Everything here works on the model's full state ``(D,)`` (all layers concatenated), in the
model's own dtype (the analyses pass a float64 copy), and reads ``J`` on the recurrent
entries only (``model.recurrent_mask``; input windows such as Mamba's conv state are never
read). ``J Q`` comes from forward-mode products (``torch.func.jvp``), one per column of
``Q`` (:func:`jacobian_columns`), so the cost grows with ``dim U``, not with ``D^2``.

The norms (spectral: the largest singular value), for ``Q`` an orthonormal basis of U on
the recurrent entries (:func:`restricted_norms`, :func:`return_map_checks`):

=====================  ===================  ============================================
``deviation``          ``||(J - I) Q||``    0 for an exact affine preserver; also sees
                                            what leaks from U into U_perp
``deviation_U``        ``||Q^T J Q - I||``  ``= ||P_U (J - I) P_U||``: the part of
                                            ``(J - I) Q`` that stays in U
``gain``               ``||Q^T J Q||``      below 1: ``J`` contracts errors along U
``gain_min``           ``sigma_min(Q^T J Q)``  with ``gain``: both 1 when ``J`` acts on U
                                            as an orthogonal map (neutral, not the
                                            identity unless ``deviation_U`` is 0)
``amplification``      ``||J Q||``          below 1: ``J`` contracts them, wherever to
``return_residual``    ``||F_s(h) - h||``   0 when ``h`` is a fixed point of ``F_s``
=====================  ===================  ============================================

``Q^T J Q`` itself is :func:`compression` (the spectra analysis takes its eigenvalues).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from sst_core.analysis.diagnostics import token_ids

__all__ = ["NORMS", "return_map", "jacobian_columns", "return_map_jacobian", "compression",
           "restricted_norms", "return_map_checks"]

NORMS = ("deviation", "deviation_U", "gain", "gain_min", "amplification", "return_residual")


def return_map(model, word) -> Callable[[torch.Tensor], torch.Tensor]:
    """``F_s``: the map from a state ``h`` (D,) to the state after reading ``word``.

    ``word`` is a sequence of token ids. ``F`` runs ``model.step`` in the model's dtype
    (pass ``h`` in that dtype) and is differentiable, so ``torch.func`` applies.
    """
    w = word.reshape(1, -1) if isinstance(word, torch.Tensor) else np.reshape(word, (1, -1))
    w = token_ids(model, w)[0]  # (n,)
    if len(w) == 0:
        raise ValueError("word must contain at least one token")
    D = model.state_size

    def F(h: torch.Tensor) -> torch.Tensor:
        if h.shape != (D,):
            raise ValueError(f"h must have shape (D,) = ({D},), got {tuple(h.shape)}")
        x = h[None]  # (1, D)
        for t in range(len(w)):
            x = model.step(x, w[t : t + 1])
        return x[0]  # (D,)

    return F


def _state(model, h) -> torch.Tensor:
    """``h`` as a state (D,) in the model's dtype and on its device."""
    h = torch.as_tensor(h).to(model.W_out.weight)
    if h.shape != (model.state_size,):
        raise ValueError(f"h must have shape (D,) = ({model.state_size},), got {tuple(h.shape)}")
    return h


def jacobian_columns(model, word, h, Q) -> torch.Tensor:
    """``J Q`` on the recurrent entries: ``(D_rec, r)``, with ``J = dF_s/dh`` at ``h`` (D,).

    ``Q`` is ``(D, r)`` in full-state coordinates (zero off the recurrent entries for the
    norms of :func:`restricted_norms` to mean what they say). One forward-mode product
    (``torch.func.jvp``) through the word per column; detached, in the model's dtype.
    """
    from torch.func import jvp

    F = return_map(model, word)
    h = _state(model, h)
    Q = torch.as_tensor(Q).to(h)
    if Q.ndim != 2 or Q.shape[0] != h.shape[-1]:
        raise ValueError(f"Q must have shape (D, r) with D={h.shape[-1]}, got {tuple(Q.shape)}")
    mask = model.recurrent_mask
    if Q.shape[1] == 0:
        return h.new_zeros(int(mask.sum()), 0)
    cols = [jvp(F, (h,), (Q[:, k],))[1] for k in range(Q.shape[1])]
    return torch.stack(cols, dim=1)[mask].detach()  # (D_rec, r)


def return_map_jacobian(model, word, h) -> torch.Tensor:
    """``J = dF_s/dh`` at ``h`` (D,) on the recurrent entries: ``(D_rec, D_rec)``.

    :func:`jacobian_columns` with ``Q`` the recurrent coordinate vectors (one product per
    recurrent entry: for small models and tests). For a one-layer affine model it does not
    depend on ``h`` and equals the product of the per-token Jacobians, last token on the
    left (a conv window depends on the tokens only). In a stack, a layer reads the one below
    through nonlinear outputs (norms, gates, SiLU), so the return map is in general not
    affine.
    """
    mask = model.recurrent_mask
    E = torch.eye(model.state_size, dtype=model.W_out.weight.dtype)[:, mask]  # (D, D_rec)
    return jacobian_columns(model, word, h, E)


def compression(JQ, Q):
    """``Q^T J Q`` from ``J Q`` and ``Q`` (both ``(..., n, r)``, the same rows): ``J``
    restricted to U and read back in U. Batched over leading axes; numpy or torch."""
    return Q.T @ JQ if Q.ndim == 2 else Q.swapaxes(-1, -2) @ JQ


def restricted_norms(JQ, Q) -> dict[str, float]:
    """``deviation``, ``deviation_U``, ``gain`` and ``amplification`` (module docstring) of
    ``J`` on ``U = span(Q)``.

    ``JQ`` and ``Q`` are ``(n, r)`` on the same rows (the recurrent entries), ``Q``
    orthonormal; converted to float64 torch tensors. ``r = 0`` gives zeros.
    """
    JQ, Q = (torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x,
                             dtype=torch.float64) for x in (JQ, Q))
    if Q.ndim != 2 or JQ.shape != Q.shape:
        raise ValueError(f"JQ and Q must both have shape (n, r), got {tuple(JQ.shape)} and "
                         f"{tuple(Q.shape)}")
    r = Q.shape[1]
    gram = Q.T @ Q
    if not torch.allclose(gram, torch.eye(r, dtype=gram.dtype), atol=1e-8):
        err = float((gram - torch.eye(r, dtype=gram.dtype)).abs().max())
        raise ValueError(f"Q must have orthonormal columns; max |Q^T Q - I| = {err:.3g}")
    if r == 0:
        return {"deviation": 0.0, "deviation_U": 0.0, "gain": 0.0, "gain_min": 0.0,
                "amplification": 0.0}
    norm = torch.linalg.matrix_norm
    C = compression(JQ, Q)  # (r, r)
    return {
        "deviation": float(norm(JQ - Q, ord=2)),  # ||(J - I) Q||
        "deviation_U": float(norm(C - torch.eye(r, dtype=JQ.dtype), ord=2)),  # ||Q^T J Q - I||
        "gain": float(norm(C, ord=2)),  # ||Q^T J Q||
        "gain_min": float(torch.linalg.svdvals(C)[-1]),  # sigma_min(Q^T J Q)
        "amplification": float(norm(JQ, ord=2)),  # ||J Q||
    }


def return_map_checks(model, word, h, Q) -> dict[str, float]:
    """Theorem 1's check of one word at one state: every norm of :data:`NORMS`.

    ``h`` (D,) a state, ``Q`` (D, r) an orthonormal basis of U in full-state coordinates,
    zero off the recurrent entries
    (:func:`~sst_core.analysis.diagnostics.state_basis`); the model in the dtype wanted
    (float64 for the records).
    """
    h = _state(model, h)
    Q = torch.as_tensor(Q).to(h)
    mask = model.recurrent_mask
    out = restricted_norms(jacobian_columns(model, word, h, Q), Q[mask])
    F = return_map(model, word)
    out["return_residual"] = float(torch.linalg.vector_norm((F(h) - h)[mask].detach()))
    return out
