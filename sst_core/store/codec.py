"""The one codec of floats in records: JSON has no NaN or infinity, so they are stored as
``null`` (None) and read back as NaN.

>>> encode_floats([1.234567, float("nan"), float("inf")], digits=3)
[1.23, None, None]
>>> decode_floats([1.0, None]).tolist()
[1.0, nan]

A long curve (one value per time t = 1..L, e.g. q(t) up to a rollout of 1000) is stored at
the times :func:`curve_times` picks, not at every t: every t up to ``CURVE_DENSE``, a
log-spaced grid after it and the round lengths (multiples of 100, and 60, the training
length) where m_p can fall. On the log-time axes the chapters plot, that draws the same
curve; what needs every t (crossing times, values at m_p) is computed before the curve is
stored. :func:`encode_curve` stores, :func:`read_curve` reads back (times and values; a
record written before the grid holds every t) and :func:`curve_value` gives one time's value.

>>> curve_times(40).tolist()[-5:]
[36, 37, 38, 39, 40]
>>> t = curve_times(1000); bool(t[0] == 1 and t[-1] == 1000 and 60 in t and 700 in t), t.size
(True, 105)
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np

CURVE_DENSE = 32  # every t up to here is stored
CURVE_LOG_POINTS = 64  # log-spaced times from CURVE_DENSE to the curve's end
CURVE_ROUND = 100  # and every multiple of this (the evaluated lengths of m_p) ...
CURVE_EXTRA = (60,)  # ... and these (the training length)


def encode_floats(x: Any, digits: int = 5) -> list[float | None]:
    """A JSON-ready flat list of ``x`` with ``digits`` significant digits; NaN and
    infinities become None."""
    return [float(f"{v:.{digits}g}") if np.isfinite(v) else None
            for v in np.asarray(x, dtype=float).ravel()]


def encode_float(v: Any) -> float | None:
    """One number for a record: a float, or None for None, NaN and infinities."""
    if v is None:
        return None
    v = float(v)
    return v if np.isfinite(v) else None


def decode_floats(values: Iterable[float | None]) -> np.ndarray:
    """The float array a stored list stands for: None becomes NaN (1-D, float64)."""
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def curve_times(L: int) -> np.ndarray:
    """The times (1-based, increasing, ints) at which a curve over t = 1..L is stored:
    every t <= CURVE_DENSE, CURVE_LOG_POINTS log-spaced ones up to L (L included), the
    multiples of CURVE_ROUND and CURVE_EXTRA (module docstring)."""
    if isinstance(L, bool) or not isinstance(L, (int, np.integer)) or L < 1:
        raise ValueError(f"a curve's length must be an integer >= 1, got {L!r}")
    L = int(L)
    dense = np.arange(1, min(L, CURVE_DENSE) + 1)
    if L <= CURVE_DENSE:
        return dense
    tail = np.round(np.geomspace(CURVE_DENSE, L, CURVE_LOG_POINTS)).astype(int)
    rounds = np.arange(CURVE_ROUND, L + 1, CURVE_ROUND)
    extra = np.array([t for t in CURVE_EXTRA if t <= L], dtype=int)
    return np.unique(np.concatenate([dense, tail, rounds, extra, [L]]))


def encode_curve(x: Any, times: Any = None, digits: int = 5) -> list[float | None]:
    """A curve over t = 1..L (``x[i]`` at t = i + 1) at ``times`` (1-based; default
    :func:`curve_times` ``(L)``), encoded as :func:`encode_floats` encodes."""
    x = np.asarray(x, dtype=float).ravel()
    t = curve_times(x.size) if times is None else np.asarray(times, dtype=int)
    if t.size and (t.min() < 1 or t.max() > x.size):
        raise ValueError(f"times must lie in 1..{x.size}, got {t.min()}..{t.max()}")
    return encode_floats(x[t - 1], digits)


def read_curve(values: Iterable[float | None], times: Iterable[int] | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """``(t, y)``: a stored curve and the times of its values. ``times``: the record's
    ``curve_t``; None for a record that stored every t (t = 1..len(values))."""
    y = decode_floats(values)
    t = np.arange(1, y.size + 1) if times is None else np.asarray(list(times), dtype=int)
    if t.shape != y.shape:
        raise ValueError(f"a curve of {y.size} values with {t.size} times")
    return t, y


def stored_curve(metrics: Mapping[str, Any], key: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`read_curve` of ``metrics[key]`` with the record's own ``curve_t``."""
    return read_curve(metrics[key], metrics.get("curve_t"))


def curve_value(t: np.ndarray, y: np.ndarray, at: float) -> float:
    """The curve ``(t, y)`` at time ``at``: the stored value where ``at`` is one of ``t``,
    else interpolated linearly in (log t, log y) between the stored neighbours (linearly in
    y where either is not positive); NaN outside the stored times."""
    at = float(at)
    i = int(np.searchsorted(t, at))
    if i < t.size and t[i] == at:
        return float(y[i])
    if i == 0 or i == t.size:
        return float("nan")
    t0, t1, y0, y1 = float(t[i - 1]), float(t[i]), float(y[i - 1]), float(y[i])
    w = (np.log(at) - np.log(t0)) / (np.log(t1) - np.log(t0))
    if y0 > 0 and y1 > 0:
        return float(np.exp((1 - w) * np.log(y0) + w * np.log(y1)))
    return float((1 - w) * y0 + w * y1)
