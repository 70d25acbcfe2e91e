"""The one codec of floats in records: JSON has no NaN or infinity, so they are stored as
``null`` (None) and read back as NaN.

>>> encode_floats([1.234567, float("nan"), float("inf")], digits=3)
[1.23, None, None]
>>> decode_floats([1.0, None]).tolist()
[1.0, nan]
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np


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
