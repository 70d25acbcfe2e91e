"""Every recurrent architecture of the book behind one registry.

>>> from sst_core.models import build
>>> model = build("tanh_rnn", n_tokens=6, n_classes=6, d_state=32)
"""
from sst_core.models.base import RecurrentLayer, SequenceModel
from sst_core.models.registry import PHIS, REGISTRY, build, expected_affine, names

__all__ = ["build", "names", "expected_affine", "REGISTRY", "PHIS", "SequenceModel",
           "RecurrentLayer"]
