"""Error-control diagnostics of trained trackers (Paper 1, section 3; Figures 1 to 4).

:func:`diagnose` takes a :class:`~sst_core.spec.configs.DiagnosticsConfig`, loads the weights of
its training run (:func:`sst_core.analysis.trackers.load_tracker`; a missing tracker is an error: training it is the sweep's job) and measures, on held-out words:

- ``R``, ``M``, ``q`` and ``q_sqrt`` at every length up to ``rollout`` in the readout space
  (the vector ``W_out`` reads, with ``W = W_out``), ``T_cross`` for tau = 1/2 and 1 in both
  conventions, ``q`` at ``m_p``, and the failure mode ("saturation", "climb" or "none");
  also ``q_median`` (our variant: the spread as the median over words, not the mean,
  :func:`sst_core.analysis.diagnostics.median_ratio`) and its value at ``m_p``;
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

The measuring is :func:`error_control_measures`, which takes any model with the face of
:mod:`sst_core.models.base`, a group and held-out words; :func:`diagnose` adds what only a
training record knows (``m_p``, the run) and encodes the curves for the record (at the
times ``curve_t``, :func:`sst_core.store.codec.curve_times`: dense early, log-spaced later;
everything that needs every t is computed first), and
:func:`sst_core.analysis.any_model.diagnose_any` runs the same core on a model the registry
does not have (a ``step(h, x)``, a raw ``nn.GRU`` / ``nn.LSTM``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from sst_core.analysis.trackers import held_out_words, load_tracker, readout_states
from sst_core.spec.configs import DiagnosticsConfig
from sst_core.store.codec import curve_times, encode_curve, encode_floats, stored_curve


def check_times(t_ref: int, t0: int, rollout: int) -> None:
    """ValueError unless ``1 <= t_ref <= rollout`` and ``1 <= t0 < rollout``."""
    if not (1 <= t_ref <= rollout and 1 <= t0 < rollout):
        raise ValueError(f"t_ref={t_ref} and t0={t0} must lie in 1..rollout={rollout}")


def error_control_measures(model, group, words: np.ndarray, groups_t: np.ndarray, *,
                           tokens: str, is_affine: bool, t_ref: int, t0: int, eps: float,
                           perturb_steps: int, n_perturb: int, word_length: int, n_words: int,
                           tau: float, seed: int, t_train: int) -> dict[str, Any]:
    """The diagnostics of the module docstring for any model with the face of
    :mod:`sst_core.models.base` (a registry model, or
    :class:`sst_core.analysis.any_model.ForeignTracker`): the one core of :func:`diagnose`
    and :func:`sst_core.analysis.any_model.diagnose_any`.

    ``words`` and ``groups_t`` (b, L) are the held-out words and their oracle states (L is
    the rollout); ``tokens`` the vocabulary of the state-preserving words; ``is_affine``
    whether the recurrence is affine (Theorem 1 applies when it is, with one layer);
    ``t_train`` the training length of :func:`~sst_core.analysis.diagnostics.failure_mode`;
    the rest as in :class:`~sst_core.spec.configs.DiagnosticsConfig`.

    Returns the crossings, ``failure_mode``, ``R``, ``M``, ``q``, ``q_sqrt``, ``q_U``,
    ``q_U_perp``, ``q_U_identity``, ``q_U_perp_identity`` (float64 arrays over t = 1..L),
    ``dim_U_readout``, ``recovery`` (arrays), ``recovery_t0`` and ``theorem1``.
    """
    import copy

    import torch

    from sst_core.analysis.diagnostics import (
        T_cross,
        centroids,
        distinguishability,
        failure_mode,
        median_ratio,
        perturbation_recovery,
        q_split,
        state_basis,
        state_preserving_words,
        state_trajectory,
    )
    from sst_core.analysis.return_map import NORMS, return_map_checks
    from sst_core.theory.error_control import symbolic_basis

    n_samples, rollout = words.shape
    check_times(t_ref, t0, rollout)
    n_g = group.order

    # -- readout space: R, M, q and its split on U / U_perp --------------------------------
    h = readout_states(model, words)  # (b, L, d)
    # (n_g, d); None: the identity, which a foreign tracker's default readout is without
    # building it (W = I gives the same numbers)
    W = (None if getattr(model.W_out, "is_identity", False)
         else model.W_out.weight.detach().double().numpy())
    dist = distinguishability(h, groups_t, W_out=W, n_g=n_g)
    q_median = median_ratio(h, groups_t, W_out=W, n_g=n_g)  # (L,), our variant
    c_ref, present_ref = centroids(h[:, t_ref - 1:t_ref], groups_t[:, t_ref - 1:t_ref], n_g)
    Q_read = symbolic_basis(c_ref[0], present_ref[0])  # (d, r)
    q_U, q_U_perp = q_split(h, groups_t, Q_read, W_out=W, n_g=n_g)
    # the same split read without the readout (W = I): through W_out the two parts of a
    # residual can cancel, so q_U and q_U_perp may both exceed q; without W they cannot
    q_U_I, q_U_perp_I = q_split(h, groups_t, Q_read, W_out=None, n_g=n_g)
    del h

    # -- state space: perturbation recovery and the return map of Theorem 1 ----------------
    model64 = copy.deepcopy(model).double()
    n_pert = min(n_perturb, n_samples)
    L_pert = min(rollout, t0 + perturb_steps)
    x_pert = torch.from_numpy(words[:n_pert, :L_pert])  # (b', L')
    with torch.no_grad():
        h_t0 = state_trajectory(model64, x_pert[:, :t0])[:, -1]  # (b', D)
    Q_state = state_basis(model64, h_t0.numpy(), groups_t[:n_pert, t0 - 1], n_g)  # (D, r)
    # random: the last layer's recurrent entries (the reference's default); U: every layer's
    # entries, since U is spanned by the centroids of the whole state
    recovery = {
        "random": perturbation_recovery(model64, x_pert, t0, eps=eps, direction="random",
                                        layers="last", seed=seed),
        "U": perturbation_recovery(model64, x_pert, t0, eps=eps, direction="U",
                                   Q=Q_state.numpy(), layers="all", seed=seed)
        if Q_state.shape[1] else np.full(L_pert - t0, np.nan),
    }
    s_words = state_preserving_words(group, word_length, n_words, tokens=tokens,
                                     seed=seed)  # (n_words, word_length)
    if Q_state.shape[1]:
        checks = [return_map_checks(model64, s_words[i], h_t0[i % n_pert], Q_state)
                  for i in range(n_words)]
        theorem1 = {k: float(np.median([c[k] for c in checks])) for k in checks[0]}
    else:  # every class has the same centroid: U is {0} and there is nothing to check
        checks = []
        theorem1 = dict.fromkeys(NORMS)
    theorem1["dim_U"] = int(Q_state.shape[1])
    theorem1["per_word"] = checks
    # a deeper stack reads each layer through norms and gates: its return map is affine
    # only at depth 1, so Theorem 1 speaks about the whole state there only
    theorem1["applies"] = bool(is_affine and len(model.layers) == 1)

    q = dist.q
    return {
        "T_cross": T_cross(q, tau),
        "T_cross_1": T_cross(q, 1.0),
        "T_cross_sqrt": T_cross(dist.q_sqrt, tau),
        "T_cross_sqrt_1": T_cross(dist.q_sqrt, 1.0),
        "failure_mode": failure_mode(q, tau, t_train=t_train),
        "R": dist.R, "M": dist.M, "q": q, "q_sqrt": dist.q_sqrt, "q_median": q_median,
        "q_U": q_U, "q_U_perp": q_U_perp, "q_U_identity": q_U_I, "q_U_perp_identity": q_U_perp_I,
        "dim_U_readout": int(Q_read.shape[1]),
        "recovery": recovery,
        "recovery_t0": t0,
        "theorem1": theorem1,
    }


# keys of error_control_measures whose float arrays a record stores, at the times
# ``curve_t`` (sst_core.store.codec.curve_times of the rollout)
CURVES = ("R", "M", "q", "q_sqrt", "q_median", "q_U", "q_U_perp", "q_U_identity",
          "q_U_perp_identity")


def diagnose(cfg: DiagnosticsConfig) -> dict[str, Any]:
    """Every error-control diagnostic of one trained tracker; see the module docstring."""
    from sst_core.groups import get_group

    run_cfg = cfg.run
    rec, model = load_tracker(run_cfg)
    check_times(cfg.t_ref, cfg.t0, cfg.rollout)
    words, groups_t = held_out_words(run_cfg, cfg.n_samples, cfg.rollout, cfg.seed)  # (b, L), (b, L)
    out = error_control_measures(
        model, get_group(run_cfg.group), words, groups_t, tokens=run_cfg.tokens,
        is_affine=bool(model.is_affine), t_ref=cfg.t_ref, t0=cfg.t0, eps=cfg.eps,
        perturb_steps=cfg.perturb_steps, n_perturb=cfg.n_perturb, word_length=cfg.word_length,
        n_words=cfg.n_words, tau=cfg.tau, seed=cfg.seed, t_train=run_cfg.curriculum_max)
    m_p = rec["metrics"]["m_p"]

    def at_m_p(curve: np.ndarray) -> float | None:
        if m_p is None or m_p > cfg.rollout or not np.isfinite(curve[m_p - 1]):
            return None
        return float(curve[m_p - 1])

    return {
        "model": run_cfg.model,
        "is_affine": bool(model.is_affine),
        "m_p": m_p,
        "training_run": rec["run_id"],
        **{k: out[k] for k in ("T_cross", "T_cross_1", "T_cross_sqrt", "T_cross_sqrt_1",
                               "failure_mode")},
        "q_at_m_p": at_m_p(out["q"]),
        "q_sqrt_at_m_p": at_m_p(out["q_sqrt"]),
        "q_median_at_m_p": at_m_p(out["q_median"]),
        "curve_t": curve_times(len(out["q"])).tolist(),
        **{k: encode_curve(out[k]) for k in CURVES},
        "dim_U_readout": out["dim_U_readout"],
        "recovery": {k: encode_floats(v) for k, v in out["recovery"].items()},
        "recovery_t0": out["recovery_t0"],
        "theorem1": out["theorem1"],
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

    t, q_U = stored_curve(metrics, "q_U")
    M = stored_curve(metrics, "M")[1]
    fit = corollary1_fit(q_U * M, M, tau, window, t=t)  # R_U(t) = q_U(t) M(t)
    if fit is None:
        return {"T_pred": None, "drift": None, "offset": None, "M": None}
    T_pred = fit["T_pred"]
    return {**fit, "T_pred": None if T_pred is None else float(max(T_pred, 1.0)),
            "window": list(window)}
