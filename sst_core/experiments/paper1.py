"""Paper 1 (error control in state tracking): the order-sensitivity run function and the
grids of its chapters: which configs each runs under a profile."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from sst_core.groups import get_group
from sst_core.spec.configs import (
    DiagnosticsConfig,
    OrderSensitivityConfig,
    SpreadTailConfig,
    TrackingConfig,
)
from sst_core.tasks.tracking import running_product, sample, vocabulary


def order_sensitivity(cfg: OrderSensitivityConfig) -> dict[str, Any]:
    """Does the order of the tokens matter, and how fast does the state mix?

    - ``noncommuting_pairs``: share of ordered token pairs (a, b) of the vocabulary with
      a*b != b*a (exact, no sampling);
    - ``swap_changes``: share of sampled words whose final state changes when two adjacent
      tokens at a random position are swapped;
    - ``state_freq[t][g]``: share of words whose running product after t+1 tokens is g;
    - ``tv_uniform[t]``: total-variation distance of that distribution from uniform.
    """
    group = get_group(cfg.group)
    vocab = vocabulary(group, cfg.tokens)  # (k,)
    a, b = np.meshgrid(vocab, vocab, indexing="ij")  # (k, k)
    noncommuting = float(np.mean(group.table[a, b] != group.table[b, a]))

    tokens, states = sample(group, cfg.n_words, cfg.word_length, tokens=cfg.tokens,
                            seed=cfg.seed)  # (n, L), (n, L)
    rng = np.random.default_rng(cfg.seed + 1)
    swapped = tokens.copy()
    if cfg.word_length >= 2:
        pos = rng.integers(0, cfg.word_length - 1, size=cfg.n_words)  # (n,)
        rows = np.arange(cfg.n_words)
        swapped[rows, pos], swapped[rows, pos + 1] = tokens[rows, pos + 1], tokens[rows, pos]
    final_swapped = running_product(group, swapped)[:, -1]  # (n,)
    swap_changes = float(np.mean(final_swapped != states[:, -1]))

    counts = np.stack([np.bincount(states[:, t], minlength=group.order)
                       for t in range(cfg.word_length)])  # (L, n_g)
    freq = counts / cfg.n_words
    tv = 0.5 * np.abs(freq - 1.0 / group.order).sum(axis=1)  # (L,)
    return {
        "order": group.order,
        "abelian": bool(group.is_abelian()),
        "vocabulary": [group.elements[i] for i in vocab],
        "noncommuting_pairs": noncommuting,
        "swap_changes": swap_changes,
        "state_freq": freq.round(6).tolist(),
        "tv_uniform": tv.round(6).tolist(),
    }


GROUPS_CHAPTER = ("C2", "C6", "S3")


TOKEN_MODES = ("generators", "all")


def order_sensitivity_grid(P) -> list[OrderSensitivityConfig]:
    """The configs of the chapter "Groups and state tracking" under settings ``P``."""
    return [
        OrderSensitivityConfig(group=g, tokens=mode, n_words=P.n_words,
                               word_length=P.word_length, seed=P.seed, profile=P.name)
        for g in GROUPS_CHAPTER
        for mode in TOKEN_MODES
    ]


# Table 2 compares these models (the paper's rows, plus linear attention, the eighth
# affine model the abstract names; reference section 2.2).
TABLE2_MODELS = ("tanh_rnn", "state_gated_rnn", "linear_rnn", "token_gated_rnn", "mamba",
                 "negative_mamba", "mamba3", "aussm", "simple_aussm", "linear_attention")


TABLE2_GROUPS = ("C2", "C6", "S3")


def _tracking(P, **kw) -> TrackingConfig:
    kw.setdefault("d_model", P.track_d_model)
    return TrackingConfig(profile=P.name, batch=P.track_batch,
                          max_steps=P.track_max_steps, steps_per_epoch=P.track_steps_per_epoch,
                          curriculum_patience=P.track_patience,
                          post_steps=P.track_post_steps, heldout_every=P.track_heldout_every,
                          heldout_samples=P.track_heldout_samples,
                          plateau_steps=P.track_plateau_steps,
                          eval_lengths=tuple(P.track_eval_lengths),
                          eval_samples=P.track_eval_samples, **kw)


def d_state_grid(P, model: str) -> tuple[int, ...]:
    """The d_state values of a model: the RNN family's hidden width, or the SSMs' N."""
    from sst_core.models.registry import REGISTRY

    return tuple(P.track_rnn_widths if REGISTRY[model].family == "rnn" else P.track_d_states)


def table2_grid(P, models=TABLE2_MODELS, groups=TABLE2_GROUPS) -> list[TrackingConfig]:
    """Every run of Table 2 under settings ``P``: models x groups x depths x d_state x
    schedule x lr x seed."""
    return [_tracking(P, model=m, group=g, n_layers=depth, d_state=d_state, schedule=sched,
                      lr=lr, seed=seed)
            for m in models for g in groups for depth in P.track_depths
            for d_state in d_state_grid(P, m) for sched in P.track_schedules
            for lr in P.track_lrs for seed in P.track_seeds]


# The width ablation: the SSM families the paper reports at 1000 where a narrow model of
# ours falls short (reference: a held-out check at d_model 32), on the two abelian groups
# and S3 (issue 59: the cells that differ on S3 are covered too).
WIDTH_MODELS = ("aussm", "negative_mamba", "mamba3")
WIDTH_GROUPS = ("C2", "C6", "S3")


def width_grid(P) -> list[TrackingConfig]:
    """m_p against d_model (``P.width_d_models``): :data:`WIDTH_MODELS` on
    :data:`WIDTH_GROUPS`, one layer, N = the first of ``P.track_d_states``, the first
    schedule, every learning rate of ``P.track_lrs`` and the seeds ``P.width_seeds``.
    A run that equals one of Table 2's (same width) is that run."""
    return [_tracking(P, model=m, group=g, n_layers=1, d_state=P.track_d_states[0],
                      schedule=P.track_schedules[0], lr=lr, seed=seed, d_model=width)
            for m in WIDTH_MODELS for g in WIDTH_GROUPS for width in P.width_d_models
            for lr in P.track_lrs for seed in P.width_seeds]


def table3_grid(P) -> list[TrackingConfig]:
    """Every run of Table 3: rnn_phi with each phi, on S3, one layer."""
    from sst_core.models.registry import PHIS

    return [_tracking(P, model="rnn_phi", phi=phi, group="S3", n_layers=1, d_state=d_state,
                      schedule=sched, lr=lr, seed=seed)
            for phi in PHIS for d_state in P.track_rnn_widths for sched in P.track_schedules
            for lr in P.track_lrs for seed in P.track_seeds]


DIAG_GROUP = "S3"


FIGURE3_MODELS = ("negative_mamba", "token_gated_rnn", "tanh_rnn", "state_gated_rnn")


FIGURE2_MODELS = ("mamba", "mamba3", "negative_mamba", "token_gated_rnn")


def diagnostics_config(P, run: TrackingConfig) -> DiagnosticsConfig:
    return DiagnosticsConfig(run=run, n_samples=P.diag_samples, rollout=P.diag_rollout,
                             t_ref=min(60, P.diag_rollout), t0=min(30, P.diag_rollout - 1),
                             perturb_steps=min(P.diag_perturb_steps, P.diag_rollout),
                             n_perturb=P.diag_n_perturb, n_words=P.diag_n_preserving,
                             profile=P.name)


def recovery_steps(P) -> int:
    """How many steps after the perturbation at ``t0`` the diagnostics of
    :func:`diagnostics_config` follow the error (their last ``recovery`` value)."""
    cfg = diagnostics_config(P, None)
    return min(cfg.perturb_steps, cfg.rollout - cfg.t0)


def s3_runs(P, models=None) -> list[TrackingConfig]:
    """Table 2's S3 runs of every model (or of ``models``)."""
    return table2_grid(P, models=models or TABLE2_MODELS, groups=(DIAG_GROUP,))


def figure4_runs(P) -> list[TrackingConfig]:
    """The affine S3 sweep behind Figure 4: Table 2's affine S3 runs plus the extra
    learning rates and seeds of ``P.fig4_lrs`` x ``P.fig4_seeds`` (no run twice).

    A new list each call, built once per profile: it depends on ``P`` alone, and the Figure 4
    grids (growth, diagnostics, resampling) read it many times over, once per seed and
    per question (a book's plan: a hundred times, most of its cost)."""
    return list(_figure4_runs(P))


@functools.lru_cache(maxsize=16)
def _figure4_runs(P) -> tuple[TrackingConfig, ...]:
    from dataclasses import replace

    from sst_core.models.registry import expected_affine

    base = [c for c in s3_runs(P) if expected_affine(c.model)]
    out, seen = [], set()
    for c in base:
        for cfg in [c] + [replace(c, lr=lr, seed=s) for lr in P.fig4_lrs for s in P.fig4_seeds]:
            if cfg not in seen:
                seen.add(cfg)
                out.append(cfg)
    return tuple(out)


FIGURE4_GROWTH_RULE = ("the sweep grows by seeds: every run of a cell (model, depth) in which "
                       "at least one stored run of the sweep passes the training length is "
                       "repeated with each seed of fig4_growth_seeds, because the grid alone "
                       "gives far fewer qualifying runs than the paper's 113; a cell none of "
                       "whose runs passes could add no qualifying run and does not grow")


def figure4_growth_cells(P, root=None, base=None) -> list[tuple[str, int]]:
    """The cells ``(model, n_layers)`` of :func:`figure4_runs` (or of the runs ``base``)
    that grow (:data:`FIGURE4_GROWTH_RULE`): those with a stored ``ok`` training record
    whose ``m_p`` is not None (it passes the training length), read from ``root`` (default:
    the results folder). Empty where ``P.fig4_growth_seeds`` is. A missing or unusable
    record counts as not passing: the sweep computes it, and the cell grows once it
    passes."""
    from sst_core.store.records import RecordError, load_record, record_path

    if not P.fig4_growth_seeds:
        return []
    cells: list[tuple[str, int]] = []
    for c in figure4_runs(P) if base is None else base:
        cell = (c.model, c.n_layers)
        if cell in cells:
            continue
        path = record_path(c, root)
        try:
            record = load_record(path) if path.is_file() else None
        except RecordError:
            record = None
        if record is not None and record["status"] == "ok" and \
                record["metrics"].get("m_p") is not None:
            cells.append(cell)
    return cells


def figure4_growth_runs(P, root=None, base=None) -> list[TrackingConfig]:
    """The runs :data:`FIGURE4_GROWTH_RULE` adds: every run of :func:`figure4_runs` (or of
    ``base``) in a growing cell (:func:`figure4_growth_cells`) again with each seed of
    ``P.fig4_growth_seeds`` (no run twice, none of the sweep's own). The list grows as the
    sweep's records are stored: ``sst sweep`` reads its grid again after each round."""
    from dataclasses import replace

    cells = set(figure4_growth_cells(P, root, base))
    base = figure4_runs(P) if base is None else base
    known = set(base)
    out = []
    for c in base:
        if (c.model, c.n_layers) not in cells:
            continue
        for s in P.fig4_growth_seeds:
            cfg = replace(c, seed=s)
            if cfg not in known:
                known.add(cfg)
                out.append(cfg)
    return out


def figure4_population(P, root=None) -> list[TrackingConfig]:
    """Every affine S3 run Figure 4 selects from: :func:`figure4_runs` and its growth
    (:func:`figure4_growth_runs`)."""
    return figure4_runs(P) + figure4_growth_runs(P, root)


def figure4_sweep(P) -> list[TrackingConfig]:
    """Every training run the Figure 4 analysis reads: Table 2's S3 runs of every model and
    the affine sweep of :func:`figure4_population` (no run twice)."""
    return list(dict.fromkeys(s3_runs(P) + figure4_population(P)))


# -- the recompute at the width the pilots decided (issue 59) -------------------------------
# Of the pilots' changes (pilot_grid) one made a cell learn length 60: d_model 128 made every
# run of Mamba-3 on S3 (two layers) pass it. A wider model follows the paper's protocol (its
# models are wider still), so by the rule the chapter stated before the pilot ran it becomes
# the width of every cell: Table 2 and Figure 4 computed again at P.track_d_model_wide. The
# grids are staged (no chapter reads them) until their runs are stored.


def widened(P, cfgs) -> list[TrackingConfig]:
    """``cfgs`` with every model that has a residual stream (the Mamba, AUSSM and attention
    families) at ``P.track_d_model_wide``; the RNN family has none (its width is its
    d_state), so its runs are the same runs (no run twice)."""
    from dataclasses import replace

    from sst_core.models.registry import REGISTRY

    return list(dict.fromkeys(c if REGISTRY[c.model].family == "rnn"
                              else replace(c, d_model=P.track_d_model_wide) for c in cfgs))


def table2_wide_grid(P, models=TABLE2_MODELS) -> list[TrackingConfig]:
    """Table 2's grid (:func:`table2_grid`) at the recompute's width (:func:`widened`)."""
    return widened(P, table2_grid(P, models=models))


def figure4_wide_population(P, root=None) -> list[TrackingConfig]:
    """Figure 4's population (:func:`figure4_population`) at the recompute's width: the
    widened sweep and its growth, the growth read from the widened runs' records."""
    runs = widened(P, figure4_runs(P))
    return runs + figure4_growth_runs(P, root, base=runs)


def figure4_wide_sweep(P) -> list[TrackingConfig]:
    """:func:`figure4_sweep` at the recompute's width: Table 2's S3 runs and Figure 4's
    population, widened (no run twice)."""
    return list(dict.fromkeys(widened(P, s3_runs(P)) + figure4_wide_population(P)))


def figure4_wide_diagnostics(P) -> list[DiagnosticsConfig]:
    """The diagnostics Figure 4 reads (q(t), T_cross) of the widened population
    (:func:`figure4_wide_population`); :func:`diagnostics_grid` without its word
    resampling."""
    return [diagnostics_config(P, c) for c in figure4_wide_population(P)]


def diagnostics_grid(P) -> list[DiagnosticsConfig]:
    """Every diagnostics run of the chapter: Table 2's S3 runs and the Figure 4 sweep with
    its growth, and the Figure 4 sweep's (:func:`figure4_runs`) again on the word samples
    ``P.diag_resample_seeds``."""
    runs = list(dict.fromkeys(s3_runs(P) + figure4_population(P)))
    return [diagnostics_config(P, c) for c in runs] + resample_grid(P)


def resample_grid(P) -> list[DiagnosticsConfig]:
    """Figure 4's diagnostics on further held-out word samples (``P.diag_resample_seeds``):
    how much T_cross and q move when only the words change; on the sweep's own runs
    (:func:`figure4_runs`), not on its growth."""
    from dataclasses import replace

    return [replace(diagnostics_config(P, c), seed=s)
            for s in P.diag_resample_seeds for c in figure4_runs(P)]


SPREAD_TAIL_MODEL = "token_gated_rnn"  # the model whose spread the chapter takes apart
SPREAD_TAIL_WORDS = 1024  # held-out words per tracker of spread_tail_grid


def spread_tail_grid(P, root=None) -> list[SpreadTailConfig]:
    """The spread-tail analysis (:class:`SpreadTailConfig`) of every one-layer
    :data:`SPREAD_TAIL_MODEL` run that Figure 4 selects (:func:`figure4_selection`) with a
    median spread at m_p, at t = its m_p on its diagnostics' word sample. The list grows as
    the diagnostics' records are stored (``sst sweep`` reads its grids again)."""
    from sst_core.store.records import RecordError, load_record, record_path

    out = []
    for run in figure4_population(P, root):
        if run.model != SPREAD_TAIL_MODEL or run.n_layers != 1:
            continue
        path = record_path(diagnostics_config(P, run), root)
        try:
            record = load_record(path) if path.is_file() else None
        except RecordError:  # unreadable: the sweep computes it again first
            record = None
        if record is None or not figure4_selection([record]) \
                or not record["metrics"].get("q_median_at_m_p"):
            continue
        out.append(SpreadTailConfig(run=run, t=record["metrics"]["m_p"],
                                    n_words=SPREAD_TAIL_WORDS, seed=record["config"]["seed"],
                                    profile=P.name))
    return out


FIGURE4_RULE = ("affine models on S3 (Table 2's grid plus the Figure 4 learning rates and "
                "seeds, and the growth of the cells that learn), both depths where the profile "
                "has them, keeping the runs that pass at the training length (m_p >= 60) and "
                "whose q(t) crosses tau = 1/2 within the rollout (a defined T_cross)")


def figure4_selection(records: list[dict]) -> list[dict]:
    """The records that enter Figure 4, by :data:`FIGURE4_RULE`."""
    return [r for r in records if r["status"] == "ok" and r["metrics"]["is_affine"]
            and r["metrics"]["m_p"] is not None and r["metrics"]["T_cross"] is not None]


# -- pilots: why do some cells never learn the training length? -----------------------------
# The Table 2 cells none of whose `standard` runs passed length 60 (every run at the step cap
# with its curriculum at 16-32; reports.paper1.table2_disagreements' never_60 rule)
PILOT_CELLS = (("negative_mamba", "C6", 1), ("negative_mamba", "S3", 1), ("mamba3", "S3", 2))
# one change at a time to a run of Table 2's grid: the variant's name -> (field, value);
# a value None is filled from the profile or the run (pilot_variants)
PILOT_CHANGES = {"steps_x3": "max_steps", "gate_at_pass": "curriculum_threshold",
                 "no_curriculum": "curriculum_start", "d_model_64": "d_model",
                 "d_model_128": "d_model", "lr_5e-4": "lr", "lr_1e-4": "lr"}


def pilot_base(P, cell: tuple[str, str, int]) -> list[TrackingConfig]:
    """The runs of Table 2's grid a pilot varies for ``cell`` (model, group, depth): its
    first state size, first schedule and first learning rate, every seed of
    ``P.track_seeds`` (three under ``standard``)."""
    model, group, depth = cell
    return [c for c in table2_grid(P, models=(model,), groups=(group,))
            if c.n_layers == depth and c.d_state == d_state_grid(P, model)[0]
            and c.schedule == P.track_schedules[0] and c.lr == P.track_lrs[0]]


def pilot_variants(cfg: TrackingConfig) -> dict[str, TrackingConfig]:
    """:data:`PILOT_CHANGES` applied to ``cfg`` one at a time: the step cap three times
    larger; the curriculum's gate at the pass threshold (m_p's 90%) instead of 95%; no
    curriculum (training at ``curriculum_max`` from the first step); d_model 64 and 128;
    the paper's learning rates 5e-4 and 1e-4."""
    from dataclasses import replace

    values = {"steps_x3": 3 * cfg.max_steps, "gate_at_pass": cfg.pass_threshold,
              "no_curriculum": cfg.curriculum_max, "d_model_64": 64, "d_model_128": 128,
              "lr_5e-4": 5e-4, "lr_1e-4": 1e-4}
    return {name: replace(cfg, **{field: values[name]})
            for name, field in PILOT_CHANGES.items()}


def pilot_grid(P) -> list[TrackingConfig]:
    """Every pilot run: each variant of :func:`pilot_variants` of each base run of
    :func:`pilot_base` of each cell of :data:`PILOT_CELLS`. A variant that equals a run of
    another grid is that run (the width ablation's d_model 64 runs of Negative Mamba on C6:
    their records are read, not made again)."""
    return list(dict.fromkeys(v for cell in PILOT_CELLS for base in pilot_base(P, cell)
                              for v in pilot_variants(base).values()))
