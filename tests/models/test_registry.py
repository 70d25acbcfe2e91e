"""The face every registered model shows (sst_core/models/base.py), checked for every name.

A family whose module is not written yet is skipped; any other error fails.
"""
from __future__ import annotations

import importlib

import pytest
import torch
from torch.func import jacrev

from sst_core.groups import get_group
from sst_core.models import PHIS, REGISTRY, build, expected_affine
from sst_core.tasks.tracking import sample

CASES = [(name, {}) for name in REGISTRY if name != "rnn_phi"] + [
    ("rnn_phi", {"phi": phi}) for phi in PHIS]
IDS = [name if not kw else f"{name}[{kw['phi']}]" for name, kw in CASES]
V = 6  # n_tokens = n_classes for the shape tests

# Models that cannot fit parity, with the reason. The C2 fitting test asks them for the
# previous token instead (linear attention: whether a 1 has occurred), which still needs
# the recurrence to carry information.
NO_PARITY = {
    # logits are a linear function of the one-hot token history: not even x_1 XOR x_2
    "linear_rnn": "provably", "rnn_phi[identity]": "provably",
    # stays near 70 % after 3000 Adam steps (lr 3e-3 .. 1e-1, d = 8 .. 64); Table 3: fail
    "rnn_phi[sphere]": "empirically",
    # one layer with the normaliser: the output depends only on the current token and the
    # proportions of the earlier tokens, not on their order or parity
    "linear_attention": "provably (one layer)",
    # eigenvalues in [0, 1] (Grazzi et al. 2025: no parity in finite precision): 61-70 %
    # after 2000 Adam steps (lr 3e-3 .. 1e-1, d = 16, 64); deltanet_negative fits in ~10
    "deltanet": "empirically",
}
# Learning rates other than the default 3e-2 for the fitting test. Mamba-3 fits this tiny
# batch only on some seeds, and float rounding alone flips which: with in_proj as one
# product or as one product per piece (identical in float64 to 1e-15) seed 0 at 3e-3 fits
# in 451 steps or not in 1000; at 1e-2 seeds 0 and 1 of 0-5 fit (188, 832 steps), the
# others stay at 66-84% through 2000 steps. So the test asks for one of FIT_SEEDS.
FIT_LR = {"mamba3": 1e-2}
FIT_SEEDS = (0, 1, 2, 3, 4)  # the first that fits ends the test
MAX_STEPS = 1000  # layernorm needs several hundred; most models under 100


pytestmark = pytest.mark.usefixtures("one_thread")


def make(name: str, n_tokens: int = V, n_classes: int = V, d: int = 8, n_layers: int = 1,
         seed: int = 0, **kw):
    module = "sst_core.models." + REGISTRY[name].target.split(":")[0]
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name == module:
            pytest.skip(f"{module} is not written yet")
        raise
    torch.manual_seed(seed)
    return build(name, n_tokens, n_classes, d_model=d, d_state=d, n_layers=n_layers, **kw)


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
@pytest.mark.parametrize("n_layers", [1, 2])
def test_shapes(name, kw, n_layers):
    model = make(name, n_layers=n_layers, **kw)
    tokens = torch.randint(0, V, (3, 11), generator=torch.Generator().manual_seed(0))
    assert model(tokens).shape == (3, 11, V)
    hs = model.hidden_states(tokens)
    assert len(hs) == n_layers
    assert all(h.shape == (3, 11, model.d_model) for h in hs)
    assert model.init_state(3).shape == (3, model.state_size)


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
@pytest.mark.parametrize("n_layers", [1, 2])
@pytest.mark.parametrize("L", [1, 63])
def test_forward_equals_step_unrolled(name, kw, n_layers, L):
    model = make(name, n_layers=n_layers, **kw).double()
    tokens = torch.randint(0, V, (3, L), generator=torch.Generator().manual_seed(1))
    h, logits = model.init_state(3), []
    with torch.no_grad():
        for t in range(L):
            h, z = model.step_logits(h, tokens[:, t])
            logits.append(z)
        torch.testing.assert_close(model(tokens), torch.stack(logits, 1),
                                   rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_is_affine_numerically(name, kw):
    """dh_t/dh_{t-1} is the same at two random states iff the paper calls the model affine.

    Parameters are moved off their initialisation first, so the check is made at generic
    parameters (a state-gated RNN starts with U_g = 0, which is affine until it learns).
    """
    model = make(name, **kw).double()
    torch.manual_seed(2)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    x = torch.tensor([1])
    jac = jacrev(lambda h: model.step(h, x))
    rec = model.recurrent_mask  # input windows (Mamba's conv) are held fixed
    h1, h2 = torch.randn(2, 1, model.state_size, dtype=torch.float64)
    h2[:, ~rec] = h1[:, ~rec]
    J1, J2 = (jac(h)[0][rec][:, 0, rec] for h in (h1, h2))  # d h_rec' / d h_rec
    same = torch.allclose(J1, J2, rtol=1e-9, atol=1e-12)
    assert same == expected_affine(name, **kw) == model.is_affine


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_fits_a_small_C2_batch(name, kw):
    """Adam reaches >= 95 % token accuracy on 32 fixed C2 words of length 8, from one of
    the initialisations FIT_SEEDS (most models: the first)."""
    tokens, states = (torch.from_numpy(a) for a in sample(get_group("C2"), 32, 8, seed=0))
    accs = []
    for seed in FIT_SEEDS:
        model = make(name, n_tokens=2, n_classes=2, d=16, seed=seed, **kw)
        target = states
        if model.name == "linear_attention":  # what it can express: has a 1 occurred yet?
            target = tokens.cummax(dim=1).values
        elif model.name in NO_PARITY:  # the previous token
            target = torch.cat([torch.zeros_like(tokens[:, :1]), tokens[:, :-1]], 1)
        opt = torch.optim.Adam(model.parameters(), lr=FIT_LR.get(model.name, 3e-2))
        for _ in range(MAX_STEPS):
            logits = model(tokens)  # (32, 8, 2)
            acc = (logits.argmax(-1) == target).float().mean().item()
            if acc >= 0.95:
                return
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), target.flatten())
            opt.zero_grad()
            loss.backward()
            opt.step()
        accs.append(acc)
    pytest.fail(f"{name}: best token accuracy {max(accs):.3f} over seeds {FIT_SEEDS}")


def test_unknown_name_lists_the_allowed_ones():
    with pytest.raises(ValueError, match="'mamba2'.*" + ", ".join(REGISTRY)):
        build("mamba2", V, V)


def test_unknown_phi_lists_the_allowed_ones():
    with pytest.raises(ValueError, match="'gelu'.*" + ", ".join(PHIS)):
        make("rnn_phi", phi="gelu")


@pytest.mark.parametrize("name", list(REGISTRY))
@pytest.mark.parametrize("size,value", [("d_state", 0), ("n_layers", -1), ("d_model", True)])
def test_impossible_sizes(name, size, value):
    kw = {"d_model": 8, "d_state": 8, "n_layers": 1, size: value}
    with pytest.raises(ValueError, match=f"{size}.*{value!r}"):
        build(name, V, V, **kw)


def test_groupsort2_with_odd_width():
    with pytest.raises(ValueError, match="groupsort2.*7"):
        make("rnn_phi", d=7, phi="groupsort2")
