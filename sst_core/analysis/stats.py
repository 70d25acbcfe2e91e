"""Statistics over runs: a percentile bootstrap and the log-log correlation of Figure 4."""
from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.stats

__all__ = ["bootstrap_ci", "loglog_pearson"]


def _vector(x, name: str) -> np.ndarray:
    """``x`` as a 1-D float64 array (numpy, a list or a CPU tensor)."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x)
    if np.iscomplexobj(arr):
        raise ValueError(f"{name} is complex")
    arr = arr.astype(np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional (L,), got shape {arr.shape}")
    return arr


def bootstrap_ci(x, stat: Callable = np.median, n_boot: int = 10_000, level: float = 0.95,
                 seed: int = 0) -> tuple[float, float, float]:
    """Percentile bootstrap: ``(stat(x), lo, hi)``.

    Resamples the entries of the 1-D, finite ``x`` with replacement ``n_boot`` times
    (``np.random.default_rng(seed)``) and takes the ``(1 - level) / 2`` and
    ``(1 + level) / 2`` quantiles of the resampled statistic. ``stat`` is called as
    ``stat(samples, axis=1)`` when it accepts ``axis``, else once per resample.
    """
    x = _vector(x, "x")
    if x.size == 0:
        raise ValueError("x is empty")
    if not np.isfinite(x).all():
        raise ValueError(f"x must be finite; it holds {int((~np.isfinite(x)).sum())} "
                         "NaN/inf entries (drop them first)")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise ValueError(f"n_boot must be an int >= 1, got {n_boot!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(int(n_boot), x.size))  # (n_boot, n)
    try:
        boot = np.asarray(stat(x[idx], axis=1), dtype=np.float64)  # (n_boot,)
        if boot.shape != (n_boot,):
            raise TypeError
    except TypeError:
        boot = np.array([stat(x[i]) for i in idx], dtype=np.float64)
    lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    return float(stat(x)), float(lo), float(hi)


def loglog_pearson(T_cross, m_p) -> dict[str, float]:
    """Pearson ``r`` (and its p-value) between ``log T_cross`` and ``log m_p`` over runs.

    Pairs where either value is None or NaN are dropped; the rest must be > 0. Returns
    ``{"r": r, "p": p, "n": n}`` (``scipy.stats.pearsonr``); raises ValueError when fewer
    than 3 pairs remain.
    """
    a, b = list(T_cross), list(m_p)
    if len(a) != len(b):
        raise ValueError(f"T_cross and m_p differ in length: {len(a)} vs {len(b)}")

    def missing(v) -> bool:
        return v is None or (isinstance(v, (float, np.floating)) and np.isnan(v))

    pairs = [(float(u), float(v)) for u, v in zip(a, b) if not (missing(u) or missing(v))]
    if len(pairs) < 3:
        raise ValueError(f"loglog_pearson needs at least 3 (T_cross, m_p) pairs without "
                         f"None/NaN, got {len(pairs)} of {len(a)}")
    x, y = np.array(pairs).T  # (n,), (n,)
    if (x <= 0).any() or (y <= 0).any():
        bad = x[x <= 0].tolist() + y[y <= 0].tolist()
        raise ValueError(f"T_cross and m_p must be > 0 to take logs, got {bad[:5]}")
    res = scipy.stats.pearsonr(np.log(x), np.log(y))
    return {"r": float(res.statistic), "p": float(res.pvalue), "n": len(pairs)}
