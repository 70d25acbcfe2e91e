"""k-means of many point clouds at once: the clustering behind the label-free labels
(:func:`sst_core.analysis.diagnostics.label_free_states`, method ``clusters``)."""
from __future__ import annotations

import numpy as np
import torch

__all__ = ["kmeans_per_time"]


def kmeans_per_time(X, n_clusters: int, n_init: int = 3, iters: int = 50, seed: int = 0,
                    chunk: int = 64, max_fit: int | None = None) -> np.ndarray:
    """k-means of every slice ``X[t]`` (L, n, k) on its own, all slices batched: ``(L, n)``
    cluster labels.

    k-means++ seeding (``n_init`` seedings per slice, the lowest within-cluster sum of
    squares kept), then Lloyd iterations until no label changes (at most ``iters``). An
    empty cluster keeps its centre. With ``max_fit`` < n the centres are fitted on
    ``max_fit`` points drawn once (the same for every slice) and every point then gets its
    nearest centre. Slices run ``chunk`` at a time (memory ~ chunk * n * n_clusters).
    Deterministic for a given ``seed`` (``torch.Generator``).
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 3:
        raise ValueError(f"X must be (L, n, k), got shape {tuple(X.shape)}")
    # float32 after centring and scaling each slice (the labels do not change; the
    # distances stay well inside float32's range)
    X = X - X.mean(axis=1, keepdims=True)
    X = torch.from_numpy(X / np.maximum(np.abs(X).max(axis=(1, 2), keepdims=True), 1e-300)
                         ).float()  # (L, n, k)
    L, n, _ = X.shape
    n_clusters = int(n_clusters)
    if not 1 <= n_clusters:
        raise ValueError(f"n_clusters must be >= 1, got {n_clusters}")
    gen = torch.Generator().manual_seed(int(seed))
    fit = torch.arange(n) if max_fit is None or max_fit >= n else \
        torch.randperm(n, generator=gen)[:max(int(max_fit), n_clusters)].sort().values
    out = np.empty((L, n), dtype=np.int64)
    for lo in range(0, L, chunk):
        x = X[lo:lo + chunk]  # (c, n, k)
        xf = x[:, fit]  # (c, n_fit, k)
        best_C, best_sse = None, None
        for _ in range(n_init):
            C, sse = _lloyd(xf, _kmeans_pp(xf, n_clusters, gen), iters)
            if best_C is None:
                best_C, best_sse = C, sse
            else:
                better = sse < best_sse  # (c,)
                best_C = torch.where(better[:, None, None], C, best_C)
                best_sse = torch.minimum(sse, best_sse)
        out[lo:lo + chunk] = _sqdist(x, best_C).argmin(-1).numpy()  # (c, n)
    return out


def _kmeans_pp(x: torch.Tensor, m: int, gen: torch.Generator) -> torch.Tensor:
    """k-means++ centres of each slice of ``x`` (c, n, k): (c, m, k)."""
    c, n, _ = x.shape
    rows = torch.arange(c)
    first = torch.randint(0, n, (c,), generator=gen)
    centres = [x[rows, first]]  # each (c, k)
    d2 = _sqdist(x, centres[0][:, None])[..., 0]  # (c, n)
    for _ in range(1, m):
        w = torch.where(d2.sum(-1, keepdim=True) > 0, d2, torch.ones_like(d2))  # all equal
        pick = torch.multinomial(w, 1, generator=gen)[:, 0]  # (c,)
        centres.append(x[rows, pick])
        d2 = torch.minimum(d2, _sqdist(x, centres[-1][:, None])[..., 0])
    return torch.stack(centres, 1)  # (c, m, k)


def _sqdist(x: torch.Tensor, C: torch.Tensor) -> torch.Tensor:
    """Squared distances (c, n, m) of points ``x`` (c, n, k) to centres ``C`` (c, m, k)."""
    d2 = torch.baddbmm((C * C).sum(-1)[:, None, :], x, C.transpose(1, 2), alpha=-2.0)
    return (d2 + (x * x).sum(-1, keepdim=True)).clamp_min_(0)


def _lloyd(x: torch.Tensor, C: torch.Tensor, iters: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Lloyd iterations from centres ``C`` (c, m, k): final centres (c, m, k) and SSE (c,)."""
    c, m, k = C.shape
    lab = None
    for _ in range(iters):
        new = _sqdist(x, C).argmin(-1)  # (c, n)
        if lab is not None and torch.equal(new, lab):
            break
        lab = new
        sums = torch.zeros_like(C).scatter_add_(1, lab[..., None].expand(-1, -1, k), x)  # (c, m, k)
        counts = torch.zeros(c, m, dtype=x.dtype).scatter_add_(
            1, lab, torch.ones_like(lab, dtype=x.dtype))  # (c, m)
        C = torch.where(counts[..., None] > 0, sums / counts.clamp_min(1)[..., None], C)
    sse = _sqdist(x, C).min(-1).values.sum(-1)  # (c,)
    return C, sse
