"""Statistics over runs: a percentile bootstrap and the log-log correlations of Figure 4
(over all runs, and within groups of runs such as architectures)."""
from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.stats

__all__ = ["bootstrap_ci", "loglog_pearson", "loglog_within_pearson", "pearson_p_value"]


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
    than 3 pairs remain or either value is the same for all of them.
    """
    a, b = list(T_cross), list(m_p)
    if len(a) != len(b):
        raise ValueError(f"T_cross and m_p differ in length: {len(a)} vs {len(b)}")
    pairs = [(float(u), float(v)) for u, v in zip(a, b) if not (_missing(u) or _missing(v))]
    if len(pairs) < 3:
        raise ValueError(f"loglog_pearson needs at least 3 (T_cross, m_p) pairs without "
                         f"None/NaN, got {len(pairs)} of {len(a)}")
    x, y = np.array(pairs).T  # (n,), (n,)
    if (x <= 0).any() or (y <= 0).any():
        bad = x[x <= 0].tolist() + y[y <= 0].tolist()
        raise ValueError(f"T_cross and m_p must be > 0 to take logs, got {bad[:5]}")
    lx, ly = np.log(x), np.log(y)
    if np.ptp(lx) == 0 or np.ptp(ly) == 0:
        raise ValueError("T_cross or m_p is the same for every pair: the correlation is "
                         "undefined")
    res = scipy.stats.pearsonr(lx, ly)
    return {"r": float(res.statistic), "p": float(res.pvalue), "n": len(pairs)}


def _missing(v) -> bool:
    return v is None or (isinstance(v, (float, np.floating)) and np.isnan(v))


def loglog_within_pearson(T_cross, m_p, groups) -> dict[str, float]:
    """Pearson ``r`` of ``log T_cross`` and ``log m_p`` *within* groups of runs (e.g.
    architectures): each log minus the mean of its group, then correlated. This is the
    partial correlation given group membership, so differences between the groups' levels
    (which alone can make the correlation over all runs large) do not enter it.

    Pairs where either value is None or NaN are dropped; the rest must be > 0. ``p``: the
    two-sided test of ``t = r sqrt(df / (1 - r^2))`` with ``df = n - g - 1`` degrees of
    freedom (``g`` groups, each of which spends one on its mean; a group of one run adds
    nothing). Returns ``{"r", "p", "n", "groups", "df"}``; raises ValueError when
    ``df < 1`` or when, within the groups, either log does not vary.
    """
    a, b, c = list(T_cross), list(m_p), list(groups)
    if not len(a) == len(b) == len(c):
        raise ValueError(f"T_cross, m_p and groups differ in length: {len(a)}, {len(b)}, "
                         f"{len(c)}")
    keep = [(float(u), float(v), g) for u, v, g in zip(a, b, c)
            if not (_missing(u) or _missing(v))]
    x = np.array([k[0] for k in keep])  # (n,)
    y = np.array([k[1] for k in keep])  # (n,)
    if (x <= 0).any() or (y <= 0).any():
        bad = x[x <= 0].tolist() + y[y <= 0].tolist()
        raise ValueError(f"T_cross and m_p must be > 0 to take logs, got {bad[:5]}")
    labels = [k[2] for k in keep]
    names = list(dict.fromkeys(labels))
    n, g = len(keep), len(names)
    df = n - g - 1
    if df < 1:
        raise ValueError(f"a within-group correlation needs more runs than groups + 1, got "
                         f"{n} runs in {g} groups")
    idx = np.array([names.index(k) for k in labels])  # (n,) group of each run
    rx, ry = np.log(x), np.log(y)
    for j in range(g):
        rows = idx == j
        rx[rows] -= rx[rows].mean()
        ry[rows] -= ry[rows].mean()
    sx, sy = float(rx @ rx), float(ry @ ry)
    if sx <= 1e-24 or sy <= 1e-24:
        raise ValueError("log T_cross or log m_p does not vary within any group: no "
                         "within-group correlation")
    r = float(np.clip((rx @ ry) / np.sqrt(sx * sy), -1.0, 1.0))
    return {"r": r, "p": pearson_p_value(r, df), "n": n, "groups": g, "df": df}


def pearson_p_value(r: float, df: int) -> float:
    """Two-sided p-value of a Pearson correlation ``r`` with ``df`` degrees of freedom
    (``n - 2`` for ``n`` pairs): ``t = r sqrt(df / (1 - r^2))`` against Student's t, what
    ``scipy.stats.pearsonr`` reports; 0 for ``|r| = 1``."""
    if not -1.0 <= r <= 1.0:
        raise ValueError(f"r must lie in [-1, 1], got {r!r}")
    if isinstance(df, bool) or not isinstance(df, (int, np.integer)) or df < 1:
        raise ValueError(f"df must be an int >= 1, got {df!r}")
    if abs(r) == 1.0:
        return 0.0
    t = r * np.sqrt(df / (1.0 - r * r))
    return float(2 * scipy.stats.t.sf(abs(t), df))
