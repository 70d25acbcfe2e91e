"""Which runs the "Beyond the papers" chapters analyse under a profile.

- **Harder groups**: Table 2's models and protocol on A4, A5 (the smallest non-solvable
  group) and C2xS3 (order-sensitive, a product); the Figure 4 analysis repeated on A5 with
  its own affine sweep (:func:`figure4_runs_on`).
- **A label-free warning**: oracle and label-free q(t) of every trained tracker of the
  book, on every group (:func:`label_free_grid`).
- **Memory meets error control**: spectra and memory functions of the trained S3
  trackers (:func:`spectra_grid`).
- **A semi-affine repair**: (Negative) Mamba with a rank-r tanh correction beside the
  affine originals, on Table 2's groups (:func:`semi_affine_grid`).
- **Affine trackers that should not work but do**: DeltaNet and DeltaProduct (non-diagonal,
  input-dependent transitions, eigenvalues down to -1) and torch's own GRU and LSTM, on
  Table 2's groups and A5, with the diagnostics of their S3 runs (:func:`delta_grid`).

The training runs are ordinary ``tracking`` configs, so a run shared with Paper 1's
chapters (every S3 run here) is trained once and read by both. The new runs take a subset
of Table 2's grid (:func:`beyond_profile`: the profile's ``beyond_*`` depths, sizes and
schedules; Table 2's learning rates and seeds), so that they fit the profile's budget;
Figure 4 on S3 keeps Paper 1's full sweep, without the growth of Paper 1's Figure 4
(:func:`sst_core.experiments.paper1.figure4_growth_runs`), so that S3 and A5 are compared
on one rule.
"""
from __future__ import annotations

from dataclasses import replace

from sst_core.spec.configs import (
    DiagnosticsConfig,
    ExactTrackerConfig,
    LabelFreeConfig,
    SpectraConfig,
    TorchModuleDiagnosticsConfig,
    TrackingConfig,
)

HARDER_GROUPS = ("A4", "A5", "C2xS3")
FIGURE4_GROUPS = ("S3", "A5")  # the S3 sweep of Paper 1 and its A5 twin
SEMI_AFFINE_MODELS = ("semi_affine_negative_mamba", "semi_affine_mamba")
SEMI_AFFINE_BASELINES = ("negative_mamba", "mamba")
# non-diagonal affine trackers (Householder-type transitions), and torch's fused RNNs as
# state-dependent models that the registry wraps (the public diagnostics take them as is)
DELTA_MODELS = ("deltanet", "deltanet_negative", "deltaproduct", "deltaproduct_3")
TORCH_RNNS = ("torch_gru", "torch_lstm")
DELTA_GROUPS = ("C2", "C6", "S3", "A5")
# what the chapter sets them beside: Table 2's diagonal affine models and state-dependent RNNs
# (their runs on this grid are Table 2's and the harder-groups chapter's)
DELTA_COMPARED = ("tanh_rnn", "state_gated_rnn", "negative_mamba", "mamba", "aussm",
                  "linear_attention")


def beyond_profile(P):
    """``P`` with Table 2's grid narrowed to the ``beyond_*`` axes: the grid of every
    run these chapters add (and of their tables)."""
    return replace(P, track_depths=P.beyond_depths, track_d_states=P.beyond_d_states,
                   track_rnn_widths=P.beyond_rnn_widths, track_schedules=P.beyond_schedules)


def grid_profile(P, group: str):
    """The grid of the runs analysed on ``group``: Paper 1's on S3, else
    :func:`beyond_profile`'s."""
    return P if group == "S3" else beyond_profile(P)


def _check_group(group: str, allowed) -> str:
    if group not in allowed:
        raise ValueError(f"unknown group {group!r} here; allowed: {', '.join(allowed)}")
    return group


def harder_groups_grid(P) -> list[TrackingConfig]:
    """Table 2's grid (every model; :func:`beyond_profile`'s axes) on :data:`HARDER_GROUPS`."""
    from sst_core.experiments.paper1 import table2_grid

    return table2_grid(beyond_profile(P), groups=HARDER_GROUPS)


def figure4_runs_on(P, group: str) -> list[TrackingConfig]:
    """The affine training sweep behind Figure 4 on ``group``: Paper 1's S3 sweep, and on
    A5 the same on :func:`beyond_profile`'s grid."""
    from sst_core.experiments.paper1 import figure4_runs

    _check_group(group, FIGURE4_GROUPS)
    return [replace(c, group=group) for c in figure4_runs(grid_profile(P, group))]


def analysed_runs(P, group: str) -> list[TrackingConfig]:
    """Every run analysed on ``group``: Table 2's runs of every model there, then the
    affine Figure 4 sweep (no run twice)."""
    from sst_core.experiments.paper1 import s3_runs

    _check_group(group, FIGURE4_GROUPS)
    runs = ([replace(c, group=group) for c in s3_runs(grid_profile(P, group))]
            + figure4_runs_on(P, group))
    return list(dict.fromkeys(runs))


def n_samples_for(P, group: str) -> int:
    """Held-out words for the centroids: the profile's ``diag_samples`` per 6 classes, so a
    class of A5 (60 elements) gets about as many words as a class of S3."""
    from sst_core.groups import get_group

    return P.diag_samples * max(1, get_group(group).order // 6)


def diagnostics_grid_on(P, group: str) -> list[DiagnosticsConfig]:
    """The diagnostics (Figures 1 to 4) of :func:`analysed_runs` on ``group``."""
    from sst_core.experiments.paper1 import diagnostics_config

    return [replace(diagnostics_config(P, c), n_samples=n_samples_for(P, group))
            for c in analysed_runs(P, group)]


def diagnostics_grid_a5(P) -> list[DiagnosticsConfig]:
    """The Figure 4 analysis on A5 (:func:`diagnostics_grid_on`)."""
    return diagnostics_grid_on(P, "A5")


def tracker_runs(P) -> list[TrackingConfig]:
    """Every trained tracker of the book under ``P``: Table 2 (C2, C6, S3), Table 3, the
    harder groups, and the Figure 4 sweeps on S3 and A5 (no run twice)."""
    from sst_core.experiments.paper1 import table2_grid, table3_grid

    runs = table2_grid(P) + table3_grid(P) + harder_groups_grid(P)
    for g in FIGURE4_GROUPS:
        runs += analysed_runs(P, g)
    return list(dict.fromkeys(runs))


def label_free_grid(P) -> list[LabelFreeConfig]:
    """Oracle and label-free q(t) of every trained tracker on :func:`beyond_profile`'s grid
    (:func:`tracker_runs`)."""
    return [LabelFreeConfig(run=c, n_samples=n_samples_for(P, c.group), rollout=P.diag_rollout,
                            t_obs=min(60, P.diag_rollout - 1),
                            window_start=min(10, P.diag_rollout // 4), profile=P.name)
            for c in tracker_runs(beyond_profile(P))]


def spectra_grid(P) -> list[SpectraConfig]:
    """Spectra and memory functions of every analysed S3 run (affine and not) on
    :func:`beyond_profile`'s grid."""
    return [SpectraConfig(run=c, word_length=min(60, P.diag_rollout), mem_T=P.diag_rollout,
                          profile=P.name)
            for c in analysed_runs(beyond_profile(P), "S3")]


def semi_affine_grid(P) -> list[TrackingConfig]:
    """Table 2's grid (:func:`beyond_profile`'s axes) for the semi-affine models and their
    affine originals."""
    from sst_core.experiments.paper1 import table2_grid

    return table2_grid(beyond_profile(P), models=SEMI_AFFINE_MODELS + SEMI_AFFINE_BASELINES)


def semi_affine_diagnostics(P) -> list[DiagnosticsConfig]:
    """Diagnostics (q(t), recovery, Theorem 1's check) of the S3 runs of
    :func:`semi_affine_grid`."""
    from sst_core.experiments.paper1 import diagnostics_config

    return [diagnostics_config(P, c) for c in semi_affine_grid(P) if c.group == "S3"]


def delta_grid(P) -> list[TrackingConfig]:
    """Table 2's grid (:func:`beyond_profile`'s axes) on :data:`DELTA_GROUPS` for
    :data:`DELTA_MODELS`, :data:`TORCH_RNNS` and the models they are compared with,
    :data:`DELTA_COMPARED` (whose runs are Table 2's and the harder groups': trained once,
    read by every chapter)."""
    from sst_core.experiments.paper1 import table2_grid

    return table2_grid(beyond_profile(P), models=DELTA_MODELS + TORCH_RNNS + DELTA_COMPARED,
                       groups=DELTA_GROUPS)


def delta_diagnostics(P) -> list[DiagnosticsConfig]:
    """Diagnostics (q(t), T_cross, recovery, Theorem 1's return maps) of the S3 runs of
    :func:`delta_grid`."""
    from sst_core.experiments.paper1 import diagnostics_config

    return [diagnostics_config(P, c) for c in delta_grid(P) if c.group == "S3"]


# The constructed trackers of the chapter: exact (drift 0) and with a fixed rotation of each
# token's transition, on a group an exact tracker needs two factors for (S3) and on C6
EXACT_TRACKER_GROUPS = ("C6", "S3")
EXACT_TRACKER_DRIFTS = (0.0, 0.005, 0.02)


def exact_tracker_grid(P) -> list[ExactTrackerConfig]:
    """The constructed Householder trackers of :data:`EXACT_TRACKER_GROUPS` x
    :data:`EXACT_TRACKER_DRIFTS`, diagnosed at the profile's sizes."""
    return [ExactTrackerConfig(group=g, drift=d, n_samples=P.diag_samples,
                               rollout=P.diag_rollout, seed=P.seed, profile=P.name)
            for g in EXACT_TRACKER_GROUPS for d in EXACT_TRACKER_DRIFTS]


def entry_point_metrics(out: dict) -> dict:
    """What a record keeps of :func:`sst_core.analysis.any_model.diagnose_any`'s result: the
    crossing times, failure mode, curves (at the times ``curve_t``), recovery, Theorem 1's
    check (without the per-word list), the affinity check and Corollary 1's prediction."""
    from sst_core.analysis.error_control import CURVES, corollary1_prediction
    from sst_core.store.codec import curve_times, encode_curve, encode_floats

    metrics = {
        **{k: out[k] for k in ("T_cross", "T_cross_1", "failure_mode", "is_affine",
                               "is_affine_source", "state_size", "dim_U_readout")},
        "curve_t": curve_times(len(out["q"])).tolist(),
        **{k: encode_curve(out[k]) for k in CURVES},
        "recovery": {k: encode_floats(v) for k, v in out["recovery"].items()},
        "theorem1": {k: v for k, v in out["theorem1"].items() if k != "per_word"},
        "affine_estimate": out["affine_estimate"]["max_relative_difference"],
    }
    metrics["corollary1"] = corollary1_prediction(metrics)
    return metrics


def exact_tracker(cfg: ExactTrackerConfig) -> dict:
    """Diagnostics of :func:`sst_core.theory.householder.permutation_tracker` through the
    public entry point :func:`sst_core.analysis.any_model.diagnose_any` (no registry
    entry), with Corollary 1's prediction from the measured drift."""
    from sst_core.analysis.any_model import diagnose_any
    from sst_core.theory.householder import permutation_tracker

    step, h0, n_tokens = permutation_tracker(cfg.group, drift=cfg.drift, seed=cfg.seed)
    return entry_point_metrics(diagnose_any(
        step, cfg.group, h0=h0, n_tokens=n_tokens, n_samples=cfg.n_samples,
        rollout=cfg.rollout, t_ref=min(60, cfg.rollout), t0=min(30, cfg.rollout - 1),
        perturb_steps=min(200, cfg.rollout), seed=cfg.seed))


def torch_module_grid(P) -> list[TorchModuleDiagnosticsConfig]:
    """One S3 run of each of :data:`TORCH_RNNS` (the first learning rate and seed of
    :func:`delta_grid`), diagnosed through the plain torch module with the settings of its
    diagnostics in :func:`delta_diagnostics`."""
    out = []
    for d in delta_diagnostics(P):
        run = d.run
        if run.model in TORCH_RNNS and run.lr == P.track_lrs[0] and run.seed == P.track_seeds[0]:
            out.append(TorchModuleDiagnosticsConfig(run=run, n_samples=d.n_samples,
                                                    rollout=d.rollout, seed=d.seed,
                                                    profile=P.name))
    return out


def torch_module_diagnostics(cfg: TorchModuleDiagnosticsConfig) -> dict:
    """The trained tracker of ``cfg.run`` handed to
    :func:`sst_core.analysis.any_model.diagnose_any` as the plain ``nn.GRU`` / ``nn.LSTM``
    it contains (:func:`sst_core.models.torch_rnn.torch_module`) with its readout."""
    from sst_core.analysis.any_model import diagnose_any
    from sst_core.analysis.trackers import load_tracker
    from sst_core.models.torch_rnn import torch_module

    _, model = load_tracker(cfg.run)
    rollout = cfg.rollout
    return entry_point_metrics(diagnose_any(
        torch_module(model), cfg.run.group, readout=model.W_out,
        tokens=cfg.run.tokens, n_samples=cfg.n_samples, rollout=rollout,
        t_ref=min(60, rollout), t0=min(30, rollout - 1), perturb_steps=min(200, rollout),
        seed=cfg.seed, t_train=cfg.run.curriculum_max))
