"""Run functions of the book's experiments: ``fn(cfg) -> metrics``.

Each takes a frozen config from :mod:`sst_core.config` and returns a JSON-ready dict;
:func:`sst_core.results.cached_run` stores it with its provenance. Notebooks call
:func:`run` and never compute book numbers themselves.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .config import LRAConfig, OrderSensitivityConfig, TrackingConfig
from .groups import get_group
from .results import cached_run
from .tasks.tracking import running_product, sample, vocabulary


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


def run(cfg: Any, **kw: Any) -> dict[str, Any]:
    """The stored record of ``cfg``, computing it with its experiment's function if needed."""
    fn = RUNNERS.get(cfg.experiment)
    if fn is None:
        raise ValueError(f"no run function for experiment {cfg.experiment!r}; known: {sorted(RUNNERS)}")
    return cached_run(cfg, fn, **kw)


def train_tracking(cfg: TrackingConfig) -> dict[str, Any]:
    """Group-tracking training (imports torch only when a run is actually computed).

    The trained weights go beside the record (``<run-id>.pt``) for the diagnostics.
    """
    from .results import artifact_path
    from .train import train_tracking as run_training

    return run_training(cfg, weights_to=artifact_path(cfg, ".pt"))


def tracking_diagnostics(cfg) -> dict[str, Any]:
    """Error-control diagnostics of a trained tracker (``sst_core.analysis.diagnose``)."""
    from .analysis import diagnose

    return diagnose(cfg)


def lra(cfg) -> dict[str, Any]:
    """An S4D classifier on an LRA task (``sst_core.train_lra.train_lra``)."""
    from .train_lra import train_lra

    return train_lra(cfg)


def tracking_label_free(cfg) -> dict[str, Any]:
    """Oracle and label-free q(t) of a trained tracker (``sst_core.label_free``)."""
    from .label_free import run_label_free

    return run_label_free(cfg)


def tracking_spectra(cfg) -> dict[str, Any]:
    """Transition spectra and memory functions of a trained tracker (``sst_core.spectra``)."""
    from .spectra import run_spectra

    return run_spectra(cfg)


RUNNERS = {
    "groups_order_sensitivity": order_sensitivity,
    "tracking": train_tracking,
    "tracking_diagnostics": tracking_diagnostics,
    "tracking_label_free": tracking_label_free,
    "tracking_spectra": tracking_spectra,
    "lra": lra,
}


# -- grids: which configs a chapter runs under a profile --------------------------------

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
    return TrackingConfig(d_model=P.track_d_model, profile=P.name, batch=P.track_batch,
                          max_steps=P.track_max_steps, steps_per_epoch=P.track_steps_per_epoch,
                          curriculum_patience=P.track_patience,
                          eval_lengths=tuple(P.track_eval_lengths),
                          eval_samples=P.track_eval_samples, **kw)


def d_state_grid(P, model: str) -> tuple[int, ...]:
    """The d_state values of a model: the RNN family's hidden width, or the SSMs' N."""
    from .models.registry import REGISTRY

    return tuple(P.track_rnn_widths if REGISTRY[model].family == "rnn" else P.track_d_states)


def table2_grid(P, models=TABLE2_MODELS, groups=TABLE2_GROUPS) -> list[TrackingConfig]:
    """Every run of Table 2 under settings ``P``: models x groups x depths x d_state x lr x seed."""
    return [_tracking(P, model=m, group=g, n_layers=depth, d_state=d_state, lr=lr, seed=seed)
            for m in models for g in groups for depth in P.track_depths
            for d_state in d_state_grid(P, m) for lr in P.track_lrs for seed in P.track_seeds]


def table3_grid(P) -> list[TrackingConfig]:
    """Every run of Table 3: rnn_phi with each phi, on S3, one layer."""
    from .models.registry import PHIS

    return [_tracking(P, model="rnn_phi", phi=phi, group="S3", n_layers=1, d_state=d_state,
                      lr=lr, seed=seed)
            for phi in PHIS for d_state in P.track_rnn_widths for lr in P.track_lrs
            for seed in P.track_seeds]


def run_all(cfgs, desc: str = "runs", stack: int = 1, **kw: Any) -> list[dict[str, Any]]:
    """Records of every config, computing the missing ones in order, with progress.

    Resumable: a sweep killed mid-way loses only the runs in flight; rerunning it reads
    the stored records and computes the rest. ``stack`` > 1: missing tracking runs that
    differ only in seed and learning rate are trained ``stack`` at a time as one stacked
    computation (:mod:`sst_core.stacked`); each still gets its own record.
    """
    import os

    from tqdm.auto import tqdm

    cfgs = list(cfgs)
    if stack > 1:
        _run_stacked(cfgs, stack, desc, retry_failed=kw.get("retry_failed", False))
    records = []
    # SST_PROGRESS=0 (set by `sst notebooks run` for its papermill kernels) keeps progress
    # bars out of the executed notebooks, hence out of the book.
    bar = tqdm(cfgs, desc=desc, unit="run", leave=False,
               disable=os.environ.get("SST_PROGRESS") == "0")
    for cfg in bar:
        bar.set_postfix_str(f"{getattr(cfg, 'model', '')} {getattr(cfg, 'group', '')}".strip())
        records.append(run(cfg, **kw))
    return records


def run_analyses(cfgs, desc: str, stack: int = 1) -> list[dict[str, Any]]:
    """Records of analysis configs that each read a trained tracker (``cfg.run``): the
    trackers first (``stack`` at a time, see :func:`run_all`), then the analyses; an
    analysis that failed is named on stdout."""
    cfgs = list(cfgs)
    run_all(list(dict.fromkeys(c.run for c in cfgs)), desc="training", stack=stack)
    records = run_all(cfgs, desc=desc)
    for r in records:
        if r["status"] != "ok":
            run = r["config"]["run"]
            print(f"not analysed: {run['model']} on {run['group']} ({r.get('reason')})")
    return records


def stacks(cfgs, size: int) -> list[list]:
    """The tracking configs grouped into stacks of at most ``size`` that can train as one
    (equal :func:`sst_core.stacked.stack_key`), in order of first appearance."""
    from .stacked import stack_key

    groups: dict[Any, list] = {}
    for cfg in cfgs:
        groups.setdefault(stack_key(cfg), []).append(cfg)
    return [g[i:i + size] for g in groups.values() for i in range(0, len(g), size)]


def _run_stacked(cfgs, size: int, desc: str, retry_failed: bool = False) -> None:
    """Train the missing tracking runs among ``cfgs`` in stacks and store their records."""
    import os

    from tqdm.auto import tqdm

    from .results import needs_run

    todo = [c for c in dict.fromkeys(cfgs) if isinstance(c, TrackingConfig)
            and needs_run(c, retry_failed=retry_failed)]
    groups = [g for g in stacks(todo, size) if len(g) > 1]  # singles go through run()
    bar = tqdm(groups, desc=f"{desc} (stacked)", unit="stack", leave=False,
               disable=os.environ.get("SST_PROGRESS") == "0")
    for group in bar:
        bar.set_postfix_str(f"{group[0].model} {group[0].group} x{len(group)}")
        run_stack(group)


def run_stack(group) -> list[dict[str, Any]]:
    """Train the tracking configs ``group`` as one stack and store one record each (the
    record's ``stack`` says with which runs, and that its wall time is the stack's)."""
    import time

    from .config import config_hash
    from .results import artifact_path, store_record
    from .stacked import train_tracking_stacked

    start = time.perf_counter()
    outcomes = train_tracking_stacked(group, [artifact_path(c, ".pt") for c in group])
    wall = time.perf_counter() - start
    info = {"stack": {"size": len(group), "run_ids": [config_hash(c) for c in group],
                      "wall_time": "wall_time_s is the whole stack's"}}
    records = []
    for cfg, out in zip(group, outcomes):
        if isinstance(out, Exception):
            records.append(store_record(cfg, "failed", f"{type(out).__name__}: {out}",
                                        getattr(out, "metrics", {}) or {}, wall,
                                        traceback_tail=[f"{type(out).__name__}: {out}"],
                                        extra=info))
        else:
            records.append(store_record(cfg, "ok", None, out, wall, extra=info))
    return records


# -- Paper 2: frozen versus learned spectra on LRA ------------------------------------------

LRA_MAIN_INITS = ("inv", "lin")  # the main table: S4D-Inv and S4D-Lin
LRA_ABLATION_INITS = ("random", "lin", "step", "inv")  # the ablation's eigenvalue types


def _lra(P, task: str, init: str, frozen: bool, seed: int) -> LRAConfig:
    kw = dict(H=P.lra_H, N=P.lra_N, n_layers=P.lra_layers, epochs=P.lra_epochs,
              batch=P.lra_batch, n_train=P.lra_n_train, max_length=P.lra_listops_max_len,
              image_side=P.lra_image_side, mf_T=P.lra_mf_T)
    kw.update(LRA_TASK_SETTINGS.get(task, {}))
    if P.name == "paper":  # the published per-task configuration replaces the profile's sizes
        kw.update(LRA_PAPER_CONFIGS.get(task.removeprefix("lra_").replace("cifar", "digits"), {}))
    return LRAConfig(task=task, init=init, freeze_spectrum=frozen, seed=seed, profile=P.name, **kw)


# Per-task settings of state-spaces/s4 that differ from LRAConfig's defaults (reference 9.1).
LRA_TASK_SETTINGS: dict[str, dict[str, Any]] = {
    "listops": {"prenorm": False},
    "lra_listops": {"prenorm": False},
    "pathfinder": {"lr": 0.004, "weight_decay": 0.03, "decoder": "last"},
    "lra_pathfinder": {"lr": 0.004, "weight_decay": 0.03, "decoder": "last"},
    "digits": {"norm": "layer", "prenorm": False},
    "lra_cifar": {"norm": "layer", "prenorm": False, "dropout": 0.1},
    "lra_aan": {"decoder": "retrieval"},
}


# The paper profile: state-spaces/s4's `simple`-branch LRA configs (reference 9.1), with
# N = 64 everywhere. Training-set sizes are LRA's (ListOps 96,000; Pathfinder 160,000 x 0.8;
# CIFAR 45,000). `digits` keeps its own size (1,797 images in all) but CIFAR's model.
LRA_PAPER_CONFIGS: dict[str, dict[str, Any]] = {
    "listops": {"H": 128, "n_layers": 8, "batch": 50, "epochs": 40, "lr": 0.01,
                "weight_decay": 0.05, "warmup_frac": 1_000 / 80_000, "n_train": 96_000,
                "max_length": 2000},
    "pathfinder": {"H": 256, "n_layers": 6, "batch": 64, "epochs": 200, "lr": 0.004,
                   "weight_decay": 0.03, "warmup_frac": 2_500 / 500_000, "n_train": 128_000},
    "digits": {"H": 512, "n_layers": 6, "batch": 50, "epochs": 200, "lr": 0.01,
               "weight_decay": 0.05, "warmup_frac": 1_000 / 200_000, "dropout": 0.1},
    "imdb": {"H": 256, "n_layers": 6, "batch": 16, "epochs": 32, "lr": 0.01,
             "weight_decay": 0.05, "warmup_frac": 1_000 / 50_000},
    "aan": {"H": 256, "n_layers": 6, "batch": 64, "epochs": 20, "lr": 0.01, "ssm_lr": 0.01,
            "weight_decay": 0.05, "warmup_frac": 2_500 / 50_000},
}


def lra_main_grid(P, tasks=None) -> list[LRAConfig]:
    """The main table: S4D-Inv and S4D-Lin, learned and frozen, every seed, every task."""
    return [_lra(P, t, init, frozen, seed) for t in (tasks or P.lra_tasks)
            for init in LRA_MAIN_INITS for frozen in (False, True) for seed in P.lra_seeds]


def lra_ablation_grid(P, tasks=None) -> list[LRAConfig]:
    """The ablation: random, linear, step and S4D-Inv eigenvalues, learned and frozen."""
    return [_lra(P, t, init, frozen, seed) for t in (tasks or P.lra_tasks)
            for init in LRA_ABLATION_INITS for frozen in (False, True)
            for seed in P.lra_ablation_seeds]
