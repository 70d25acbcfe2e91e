"""The contract of every residual-stream layer (Mamba family, AUSSM, linear attention,
DeltaNet / DeltaProduct): forward equals step unrolled, scan equals step in value and
gradient (lengths 1, 63, 1000), and the recurrence is affine in its state."""
from __future__ import annotations

import pytest

from .contract import (
    CONFIGS,
    check_affine,
    check_forward_matches_step,
    check_long_scan,
    check_scan_matches_step,
    tiny,
)

pytestmark = pytest.mark.usefixtures("one_thread")

# length 1000 on a representative subset (the others share their scan code)
LONG = ["mamba", "negative_mamba", "mamba3", "aussm", "aussm_paper", "simple_aussm",
        "linear_attention", "linear_attention_heads_identity", "deltanet_negative_heads",
        "deltaproduct_2"]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("n_layers", [1, 2])
def test_forward_matches_step(config, n_layers):
    name, kw = CONFIGS[config]
    check_forward_matches_step(tiny(name, n_layers, **kw))


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("L", [1, 63])
def test_scan_matches_step(config, L):
    name, kw = CONFIGS[config]
    for layer in tiny(name, 2, **kw).layers:
        # linear attention's normaliser phi(q) . z could be near 0 from a random z_0
        normalised = getattr(getattr(layer, "cfg", None), "normalize", False)
        check_scan_matches_step(layer, L, h0_scale=0.0 if normalised else 0.5)


@pytest.mark.parametrize("config", LONG)
def test_long_scan(config):
    name, kw = CONFIGS[config]
    check_long_scan(tiny(name, **kw).layers[0])


@pytest.mark.parametrize("config", CONFIGS)
def test_affine(config):
    name, kw = CONFIGS[config]
    check_affine(tiny(name, **kw).layers[0])
