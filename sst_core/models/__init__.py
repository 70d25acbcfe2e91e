"""Every recurrent architecture of the book behind one registry.

>>> from sst_core.models import build
>>> model = build("tanh_rnn", n_tokens=6, n_classes=6, d_state=32)

Importing the registry does not import torch (a grid or ``best`` reads model families
without it); the torch classes load on first use.
"""
from typing import Any

from sst_core.models.registry import PHIS, REGISTRY, build, expected_affine, names

__all__ = ["build", "names", "expected_affine", "REGISTRY", "PHIS", "SequenceModel",
           "RecurrentLayer"]


def __getattr__(name: str) -> Any:
    if name in ("SequenceModel", "RecurrentLayer"):
        from sst_core.models import base

        return getattr(base, name)
    raise AttributeError(f"module 'sst_core.models' has no attribute {name!r}")
