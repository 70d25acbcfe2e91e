"""Error-control diagnostics of trained trackers (Paper 1, section 3; Figures 1 to 4).

:func:`diagnose` takes a :class:`~sst_core.spec.configs.DiagnosticsConfig`, loads the weights of
its training run (:func:`sst_core.analysis.trackers.load_tracker`; a missing tracker is an error: training it is the sweep's job) and measures, on held-out words:

- ``R``, ``M``, ``q`` and ``q_sqrt`` at every length up to ``rollout`` in the readout space
  (the vector ``W_out`` reads, with ``W = W_out``), ``T_cross`` for tau = 1/2 and 1 in both
  conventions, ``q`` at ``m_p``, and the failure mode ("saturation", "climb" or "none");
- ``q_U`` and ``q_U_perp`` with U spanned by the readout centroids at the training length,
  read through ``W_out`` (the reference's definition) and without it (``W = I``);
- perturbation recovery ``||e_t|| / ||e_0||`` after a perturbation of the recurrent state
  at ``t0``, in a random direction and inside U (U of the *state* space, from the state
  centroids at ``t0``);
- the Theorem 1 check: for state-preserving words ``s`` (product = identity), the Jacobian
  ``J`` of the return map ``F_s`` at states reached on real words, restricted to U
  (:func:`sst_core.analysis.return_map.return_map_checks`, where each norm is defined):
  ``deviation = ||(J - I) Q||`` and ``deviation_U = ||Q^T J Q - I||`` (both 0 for an exact
  affine preserver; the first also sees what leaks from U into U_perp), ``gain =
  ||Q^T J Q||`` (below 1: contracts), ``amplification = ||J Q||`` and ``return_residual =
  ||F_s(h) - h||``, each the median over the words.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from sst_core.analysis.trackers import held_out_words, load_tracker, readout_states
from sst_core.spec.configs import DiagnosticsConfig
from sst_core.store.codec import decode_floats, encode_floats


def diagnose(cfg: DiagnosticsConfig) -> dict[str, Any]:
    """Every error-control diagnostic of one trained tracker; see the module docstring."""
    import copy

    import torch

    from sst_core.analysis.diagnostics import (
        T_cross,
        centroids,
        distinguishability,
        failure_mode,
        perturbation_recovery,
        q_split,
        state_basis,
        state_preserving_words,
        state_trajectory,
    )
    from sst_core.analysis.return_map import NORMS, return_map_checks
    from sst_core.groups import get_group
    from sst_core.theory.error_control import symbolic_basis

    run_cfg = cfg.run
    rec, model = load_tracker(run_cfg)
    group = get_group(run_cfg.group)
    n_g = group.order
    if not (1 <= cfg.t_ref <= cfg.rollout and 1 <= cfg.t0 < cfg.rollout):
        raise ValueError(f"t_ref={cfg.t_ref} and t0={cfg.t0} must lie in 1..rollout={cfg.rollout}")
    words, groups_t = held_out_words(run_cfg, cfg.n_samples, cfg.rollout, cfg.seed)  # (b, L), (b, L)

    # -- readout space: R, M, q and its split on U / U_perp --------------------------------
    h = readout_states(model, words)  # (b, L, d)
    W = model.W_out.weight.detach().double().numpy()  # (n_g, d)
    dist = distinguishability(h, groups_t, W_out=W, n_g=n_g)
    c_ref, present_ref = centroids(h[:, cfg.t_ref - 1:cfg.t_ref], groups_t[:, cfg.t_ref - 1:cfg.t_ref], n_g)
    Q_read = symbolic_basis(c_ref[0], present_ref[0])  # (d, r)
    q_U, q_U_perp = q_split(h, groups_t, Q_read, W_out=W, n_g=n_g)
    # the same split read without the readout (W = I): through W_out the two parts of a
    # residual can cancel, so q_U and q_U_perp may both exceed q; without W they cannot
    q_U_I, q_U_perp_I = q_split(h, groups_t, Q_read, W_out=None, n_g=n_g)
    m_p = rec["metrics"]["m_p"]
    del h

    # -- state space: perturbation recovery and the return map of Theorem 1 ----------------
    model64 = copy.deepcopy(model).double()
    n_pert = min(cfg.n_perturb, cfg.n_samples)
    L_pert = min(cfg.rollout, cfg.t0 + cfg.perturb_steps)
    x_pert = torch.from_numpy(words[:n_pert, :L_pert])  # (b', L')
    with torch.no_grad():
        h_t0 = state_trajectory(model64, x_pert[:, :cfg.t0])[:, -1]  # (b', D)
    Q_state = state_basis(model64, h_t0.numpy(), groups_t[:n_pert, cfg.t0 - 1], n_g)  # (D, r)
    # random: the last layer's recurrent entries (the reference's default); U: every layer's
    # entries, since U is spanned by the centroids of the whole state
    recovery = {
        "random": perturbation_recovery(model64, x_pert, cfg.t0, eps=cfg.eps, direction="random",
                                        layers="last", seed=cfg.seed),
        "U": perturbation_recovery(model64, x_pert, cfg.t0, eps=cfg.eps, direction="U",
                                   Q=Q_state.numpy(), layers="all", seed=cfg.seed)
        if Q_state.shape[1] else np.full(L_pert - cfg.t0, np.nan),
    }
    s_words = state_preserving_words(group, cfg.word_length, cfg.n_words, tokens=run_cfg.tokens,
                                     seed=cfg.seed)  # (n_words, word_length)
    if Q_state.shape[1]:
        checks = [return_map_checks(model64, s_words[i], h_t0[i % n_pert], Q_state)
                  for i in range(cfg.n_words)]
        theorem1 = {k: float(np.median([c[k] for c in checks])) for k in checks[0]}
    else:  # every class has the same centroid: U is {0} and there is nothing to check
        checks = []
        theorem1 = dict.fromkeys(NORMS)
    theorem1["dim_U"] = int(Q_state.shape[1])
    theorem1["per_word"] = checks
    # a deeper stack reads each layer through norms and gates: its return map is affine
    # only at depth 1, so Theorem 1 speaks about the whole state there only
    theorem1["applies"] = bool(model.is_affine and run_cfg.n_layers == 1)

    q = dist.q
    crossings = {
        "T_cross": T_cross(q, cfg.tau),
        "T_cross_1": T_cross(q, 1.0),
        "T_cross_sqrt": T_cross(dist.q_sqrt, cfg.tau),
        "T_cross_sqrt_1": T_cross(dist.q_sqrt, 1.0),
    }
    return {
        "model": run_cfg.model,
        "is_affine": bool(model.is_affine),
        "m_p": m_p,
        "training_run": rec["run_id"],
        **crossings,
        "failure_mode": failure_mode(q, cfg.tau, t_train=run_cfg.curriculum_max),
        "q_at_m_p": None if m_p is None or m_p > cfg.rollout or not np.isfinite(q[m_p - 1])
        else float(q[m_p - 1]),
        "q_sqrt_at_m_p": None if m_p is None or m_p > cfg.rollout or not np.isfinite(dist.q_sqrt[m_p - 1])
        else float(dist.q_sqrt[m_p - 1]),
        "R": encode_floats(dist.R), "M": encode_floats(dist.M), "q": encode_floats(q),
        "q_sqrt": encode_floats(dist.q_sqrt),
        "q_U": encode_floats(q_U), "q_U_perp": encode_floats(q_U_perp),
        "q_U_identity": encode_floats(q_U_I), "q_U_perp_identity": encode_floats(q_U_perp_I),
        "dim_U_readout": int(Q_read.shape[1]),
        "recovery": {k: encode_floats(v) for k, v in recovery.items()},
        "recovery_t0": cfg.t0,
        "theorem1": theorem1,
    }


def corollary1_prediction(metrics: dict[str, Any], window: tuple[int, int] = (10, 120),
                          tau: float = 0.5) -> dict[str, Any]:
    """Corollary 1's T_cross from the drift measured early in the rollout.

    With A|_U = I the U-error grows as ``e_U(t) = e_U(0) + t * eta_bar``, so the spread
    along U read through ``W_out``, ``sqrt(R_U(t)) = sqrt(q_U(t) M(t))``, grows linearly.
    The fit over ``window`` is :func:`sst_core.theory.error_control.corollary1_fit`
    (``T_pred = (sqrt(tau * M) - a) / b``, M the median over the window); here ``T_pred``
    is at least 1. Returns ``T_pred`` (None when the fitted drift is not positive), the fit
    and the window; all None below three usable points.
    """
    from sst_core.theory.error_control import corollary1_fit

    q_U = decode_floats(metrics["q_U"])
    M = decode_floats(metrics["M"])
    fit = corollary1_fit(q_U * M, M, tau, window)  # R_U(t) = q_U(t) M(t)
    if fit is None:
        return {"T_pred": None, "drift": None, "offset": None, "M": None}
    T_pred = fit["T_pred"]
    return {**fit, "T_pred": None if T_pred is None else float(max(T_pred, 1.0)),
            "window": list(window)}
