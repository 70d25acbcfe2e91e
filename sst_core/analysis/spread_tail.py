"""What makes the spread of a class heavy-tailed in a trained affine RNN.

The paper's spread ``R(t)`` is a mean over words of ``||W_out (h_t - c_g(t))||^2``
(:func:`sst_core.analysis.diagnostics.distinguishability`); our variant ``q_median`` takes
the median. For the token-gated RNN, ``h_t = A(x_t) h_{t-1} + W_x e(x_t) + b`` with the
token's transition ``A(a) = diag(sigma(W_g e(a) + b_g)) W_h``: a word's state is a product of
random matrices applied to its inputs, and where those products grow, the distance of a
word's state to its class centroid is roughly log-normal over words, whose mean exceeds its
median by ``exp(s^2 / 2)`` for a standard deviation ``s`` of its log. The measures here
test that reading on one tracker at one time:

- :func:`word_spread`: each word's squared readout distance to its class centroid;
- :func:`tail_measures`: mean over median of those distances, the share of their sum that
  the top 1% of words carry, the standard deviation of their log and the ratio
  ``exp(s^2 / 2)`` a log-normal spread of that ``s`` would have;
- :func:`token_transitions`, :func:`growth_rate`: the transition of each token of a
  token-gated cell, its spectral radius and norm, and the growth rate (top Lyapunov
  exponent, per token) of the products along held-out words;
- :func:`spread_tail`: all of them for a one-layer token-gated tracker.
"""
from __future__ import annotations

from typing import Any

import numpy as np

TOP_SHARE = 0.01  # "the top words": the 1% of words farthest from their centroid


def word_spread(h: np.ndarray, states: np.ndarray, W_out: np.ndarray | None,
                n_g: int) -> np.ndarray:
    """``||W (h_i - c_{g_i})||^2`` per word at one time, ``(b,)``: ``h`` (b, d) states,
    ``states`` (b,) their classes, ``W_out`` (k, d) the readout (None: the identity),
    centroids over the words of each class (:func:`sst_core.analysis.diagnostics.centroids`).
    Their mean is ``R`` at that time, their median the spread of ``q_median``."""
    from sst_core.analysis.diagnostics import centroids

    h = np.asarray(h, dtype=np.float64)  # (b, d)
    if h.ndim != 2 or states.shape != h.shape[:1]:
        raise ValueError(f"h must be (b, d) and states (b,), got {h.shape} and {states.shape}")
    hw = h if W_out is None else h @ np.asarray(W_out, dtype=np.float64).T  # (b, k)
    c, _ = centroids(hw[:, None], states[:, None], n_g)  # (1, n_g, k)
    r = hw - c[0, states]  # (b, k)
    return np.einsum("bk,bk->b", r, r)


def tail_measures(spread: np.ndarray) -> dict[str, float]:
    """How heavy the tail of per-word spreads (:func:`word_spread`, all > 0) is: mean over
    median, the share of the sum the top :data:`TOP_SHARE` of words carry (at least one
    word), the standard deviation of the log and ``exp(s^2 / 2)``, the mean over median of
    a log-normal spread of that standard deviation."""
    x = np.asarray(spread, dtype=np.float64)
    if x.ndim != 1 or x.size < 2 or not (x > 0).all():
        raise ValueError(f"spread must hold at least 2 positive values, got shape {x.shape}"
                         f" with {int((x <= 0).sum()) if x.ndim == 1 else '?'} not positive")
    top = max(1, int(round(TOP_SHARE * x.size)))
    s = float(np.log(x).std(ddof=1))
    return {"mean_over_median": float(x.mean() / np.median(x)),
            "top_share": float(np.sort(x)[-top:].sum() / x.sum()),
            "log_sd": s, "lognormal_ratio": float(np.exp(s * s / 2))}


def token_transitions(cell, tokens: np.ndarray) -> np.ndarray:
    """``A(a) = diag(sigma(W_g e(a) + b_g)) W_h`` of a token-gated cell
    (:class:`sst_core.models.cells.Cell`, gate ``token``, one-hot tokens in) for each token
    id of ``tokens``: ``(k, d, d)`` float64."""
    import torch

    if getattr(cell, "gate", None) != "token" or cell.phi_name != "identity":
        raise ValueError("token_transitions needs a token-gated cell with phi identity, got "
                         f"gate={getattr(cell, 'gate', None)!r}")
    with torch.no_grad():
        W_g, b_g = cell.W_g.double().numpy(), cell.b_g.double().numpy()  # (d, n_tok), (d,)
        W_h = cell.W_h.double().numpy()  # (d, d)
    g = 1.0 / (1.0 + np.exp(-(W_g[:, tokens].T + b_g)))  # (k, d)
    return g[:, :, None] * W_h[None]  # (k, d, d)


def growth_rate(A: np.ndarray, words: np.ndarray, seed: int = 0) -> float:
    """The top Lyapunov exponent of the products ``A[x_t] ... A[x_1]`` along ``words``
    ((b, L) indices into ``A``, (k, d, d)), per token: the mean over words of
    ``log ||A[x_L] ... A[x_1] u|| / L`` from a random unit ``u`` (renormalised every step).
    Above 0 the homogeneous part of the state grows exponentially along a typical word."""
    b, L = words.shape
    rng = np.random.default_rng(seed)
    u = rng.standard_normal((b, A.shape[1]))  # (b, d)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    log_growth = np.zeros(b)
    for t in range(L):
        u = np.einsum("bij,bj->bi", A[words[:, t]], u)  # (b, d)
        n = np.linalg.norm(u, axis=1)  # (b,)
        log_growth += np.log(n)
        u /= n[:, None]
    return float(log_growth.mean() / L)


def spread_tail(model, words: np.ndarray, states: np.ndarray, t: int, n_g: int
                ) -> dict[str, Any]:
    """The measures of the module docstring for a one-layer token-gated tracker at time
    ``t`` (1-based) of held-out ``words`` and their oracle ``states`` (each (b, L), L >= t):
    :func:`tail_measures` of its spread, the median and the 99th percentile of the state
    norm, the per-token spectral radius and norm of :func:`token_transitions` (largest over
    the tokens the words use) and :func:`growth_rate` along the words up to ``t``."""
    from sst_core.analysis.trackers import readout_states

    if len(model.layers) != 1:
        raise ValueError(f"spread_tail reads one-layer trackers, got {len(model.layers)} layers")
    if not 1 <= t <= words.shape[1]:
        raise ValueError(f"t={t} must lie in 1..{words.shape[1]}")
    h = readout_states(model, words[:, :t])[:, t - 1].astype(np.float64)  # (b, d)
    W = model.W_out.weight.detach().double().numpy()  # (n_classes, d)
    tail = tail_measures(word_spread(h, states[:, t - 1], W, n_g))
    used = np.unique(words[:, :t])  # (k,)
    A = token_transitions(model.layers[0], used)  # (k, d, d)
    eig = np.abs(np.linalg.eigvals(A)).max(axis=1)  # (k,)
    norm = np.linalg.norm(A, ord=2, axis=(1, 2))  # (k,)
    index = np.searchsorted(used, words[:, :t])  # (b, t) into A
    norms = np.linalg.norm(h, axis=1)  # (b,)
    return {**tail, "state_norm_median": float(np.median(norms)),
            "state_norm_p99": float(np.percentile(norms, 99)),
            "rho_max": float(eig.max()), "norm_max": float(norm.max()),
            "tokens_rho_above_1": int((eig > 1).sum()), "tokens": int(used.size),
            "growth_rate": growth_rate(A, index)}


def run_spread_tail(cfg) -> dict[str, Any]:
    """:func:`spread_tail` of the tracker ``cfg.run`` (a
    :class:`~sst_core.spec.configs.SpreadTailConfig`; its stored weights, nothing trained)
    at ``cfg.t`` on ``cfg.n_words`` held-out words of the word sample ``cfg.seed``."""
    from sst_core.analysis.trackers import held_out_words, load_tracker
    from sst_core.groups import get_group

    _, model = load_tracker(cfg.run)
    words, states = held_out_words(cfg.run, cfg.n_words, cfg.t, cfg.seed)  # (b, t), (b, t)
    return spread_tail(model, words, states, cfg.t, get_group(cfg.run.group).order)
