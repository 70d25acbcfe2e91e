"""Run functions of the book's experiments: ``fn(cfg) -> metrics``.

Each takes a frozen config from :mod:`sst_core.config` and returns a JSON-ready dict;
:func:`sst_core.results.cached_run` stores it with its provenance. Notebooks call
:func:`run` and never compute book numbers themselves.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .config import OrderSensitivityConfig
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


RUNNERS = {
    "groups_order_sensitivity": order_sensitivity,
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
