"""DeltaNet and DeltaProduct (sst_core.models.delta) and their scan (sst_core.ops.delta_scan).

The shared contract (forward == step, scan == step, affine) runs in test_contract.py over
the delta entries of contract.CONFIGS; here: the chunked scan against the per-step loop,
the recurrence against the published formula, the eigenvalues of the transition,
DeltaProduct with one factor against DeltaNet, outputs == step at lengths 1, 63, 1000,
stacked training and bad options.
"""
from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from torch.func import vmap
from torch.nn import functional as F

from sst_core.models import build
from sst_core.ops.delta_scan import CHUNK, delta_scan, delta_scan_ref
from sst_core.training.stacked import StackedTracker

from .contract import (
    CONFIGS,
    check_outputs_match_step,
    eigenvalues,
    recurrent_jacobian,
    tiny,
)

pytestmark = pytest.mark.usefixtures("one_thread")

f64 = torch.float64
DELTA_CONFIGS = [c for c, (name, _) in CONFIGS.items() if name.startswith("delta")]
NAMES = ["o", "S", "q", "k", "v", "beta", "S0"]


# -- the scan ---------------------------------------------------------------------------------
def scan_inputs(L, H=2, dk=5, dv=3, b=2, with_S0=True, dtype=f64, seed=0):
    """Unit keys and queries, beta in [0, 2] (transition eigenvalues in [-1, 1]), random
    values and start state."""
    g = torch.Generator().manual_seed(seed)
    q, k = (F.normalize(torch.randn(b, L, H, dk, generator=g, dtype=dtype), dim=-1)
            for _ in range(2))
    v = torch.randn(b, L, H, dv, generator=g, dtype=dtype)
    beta = 2 * torch.rand(b, L, H, generator=g, dtype=dtype)
    S0 = torch.randn(b, H, dk, dv, generator=g, dtype=dtype) if with_S0 else None
    return [q, k, v, beta, S0]


def run_scan(fn, args, **kw):
    """Outputs and last state (or all states) of fn, and the gradients of a random
    weighting of both w.r.t. every input."""
    leaves = [None if a is None else a.clone().requires_grad_() for a in args]
    o, S = fn(*leaves, **kw)
    g = torch.Generator().manual_seed(1)
    loss = ((o * torch.randn(o.shape, generator=g, dtype=o.dtype)).sum()
            + (S * torch.randn(S.shape, generator=g, dtype=o.dtype)).sum())
    loss.backward()
    return [o.detach(), S.detach()] + [None if x is None else x.grad for x in leaves]


def assert_scans_agree(got, want, rtol=1e-10, atol=1e-10):
    for name, a, b in zip(NAMES, got, want):
        if b is None:
            assert a is None, name
            continue
        torch.testing.assert_close(a, b, rtol=rtol, atol=atol, msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("L", [1, 63, 1000])
@pytest.mark.parametrize("with_S0", [False, True])
@pytest.mark.parametrize("H", [1, 2])
@pytest.mark.parametrize("all_states", [False, True])
def test_delta_scan_equals_reference_in_value_and_gradient(L, with_S0, H, all_states):
    """The chunked WY form equals the step-by-step delta rule (d_k 5 != d_v 3), in the
    outputs, the last (or every) state and the gradients w.r.t. q, k, v, beta and S0."""
    args = scan_inputs(L, H=H, with_S0=with_S0)
    assert_scans_agree(run_scan(delta_scan, args, all_states=all_states),
                       run_scan(delta_scan_ref, args, all_states=all_states))


@pytest.mark.parametrize("chunk", [1, 5, 12, CHUNK])
def test_any_chunk_size(chunk):
    """Chunks of one step (the recurrence itself), chunks that do not divide L = 12 (a
    padded last chunk), one chunk exactly, one chunk longer than L."""
    args = scan_inputs(12)
    assert_scans_agree(run_scan(delta_scan, args, all_states=True, chunk=chunk),
                       run_scan(delta_scan_ref, args, all_states=True))


def test_float32_agreement():
    """In float32 at the training sizes (d_k 16, d_v 32) and length 1000: within 2e-5 of
    the largest entry of each result (measured: about 1e-6)."""
    args = scan_inputs(1000, H=2, dk=16, dv=32, dtype=torch.float32)
    for name, a, b in zip(NAMES, run_scan(delta_scan, args), run_scan(delta_scan_ref, args)):
        assert (a - b).abs().max() <= 2e-5 * b.abs().max(), name


def test_delta_scan_under_vmap():
    """vmap over a leading model dimension (stacked training) gives each slice's scan."""
    args = [torch.stack(xs) for xs in zip(*(scan_inputs(70, seed=s) for s in range(3)))]
    o, S = vmap(delta_scan)(*args)
    for i in range(3):
        o_i, S_i = delta_scan_ref(*(x[i] for x in args))
        torch.testing.assert_close(o[i], o_i, rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(S[i], S_i, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("fn", [delta_scan, delta_scan_ref])
def test_bad_scan_inputs_raise(fn):
    q, k, v, beta, S0 = scan_inputs(4)
    with pytest.raises(ValueError, match="q must have k's shape"):
        fn(q[..., :2], k, v, beta)
    with pytest.raises(ValueError, match=r"v must have shape \(b, L, H, d_v\)"):
        fn(q, k, v[:, :3], beta)
    with pytest.raises(ValueError, match=r"beta must have shape \(b, L, H\) = \(2, 4, 2\)"):
        fn(q, k, v, beta[..., None])
    with pytest.raises(ValueError, match=r"S0 must have shape .* \(2, 2, 5, 3\)"):
        fn(q, k, v, beta, S0.transpose(-1, -2))
    with pytest.raises(ValueError, match="one dtype"):
        fn(q, k, v, beta.float())
    with pytest.raises(ValueError, match="L >= 1"):
        fn(q[:, :0], k[:, :0], v[:, :0], beta[:, :0])


def test_bad_chunk_raises():
    with pytest.raises(ValueError, match="chunk must be a positive int, got 0"):
        delta_scan(*scan_inputs(4), chunk=0)


# -- the layers -------------------------------------------------------------------------------
def by_hand(layer, S, u):
    """One token of the published recurrence with explicit matrices: S (H, d_k, d_v), u
    (D,) -> (S_next, y). DeltaProduct: n_h steps S <- (I - beta k k^T) S + beta k v^T with
    the j-th pieces of W_k u, W_v u, w_beta . u + b; then y = W_o [S_h^T q_h over heads]."""
    cfg = layer.cfg
    H, dk, dv, nh = cfg.n_heads, cfg.d_state, layer.d_v, cfg.n_householder
    qs = F.silu(layer.q_proj.weight @ u)
    ks = F.silu(layer.k_proj.weight @ u)
    vs = F.silu(layer.v_proj.weight @ u)
    betas = cfg.beta_range * torch.sigmoid(layer.b_proj.weight @ u + layer.b_proj.bias)
    S, outs = S.clone(), []
    for h in range(H):
        for j in range(nh):
            k = ks[(j * H + h) * dk:(j * H + h + 1) * dk]
            k = k / k.norm()
            v = vs[(j * H + h) * dv:(j * H + h + 1) * dv]
            beta = betas[j * H + h]
            A = torch.eye(dk, dtype=f64) - beta * torch.outer(k, k)
            S[h] = A @ S[h] + beta * torch.outer(k, v)
        q = qs[h * dk:(h + 1) * dk]
        outs.append(S[h].T @ (q / q.norm()))
    return S, layer.out_proj.weight @ torch.cat(outs)


def transition_by_hand(layer, u):
    """d vec(S_t) / d vec(S_{t-1}) for the flat state (H, d_k, d_v): per head the product
    A_{n_h} ... A_1 of the generalised Householder matrices, acting on every column of S."""
    cfg = layer.cfg
    H, dk, nh = cfg.n_heads, cfg.d_state, cfg.n_householder
    ks = F.silu(layer.k_proj.weight @ u)
    betas = cfg.beta_range * torch.sigmoid(layer.b_proj.weight @ u + layer.b_proj.bias)
    blocks = []
    for h in range(H):
        P = torch.eye(dk, dtype=f64)
        for j in range(nh):
            k = ks[(j * H + h) * dk:(j * H + h + 1) * dk]
            k = k / k.norm()
            P = (torch.eye(dk, dtype=f64) - betas[j * H + h] * torch.outer(k, k)) @ P
        blocks.append(torch.kron(P, torch.eye(layer.d_v, dtype=f64)))
    return torch.block_diag(*blocks), betas


@pytest.mark.parametrize("config", DELTA_CONFIGS)
def test_recurrence_by_hand(config):
    """step, scan and outputs over three tokens against the formula written out."""
    name, kw = CONFIGS[config]
    layer = tiny(name, d_model=4, d_state=3, **kw).layers[0]
    cfg = layer.cfg
    g = torch.Generator().manual_seed(3)
    u = torch.randn(1, 3, 4, generator=g, dtype=f64)
    S = torch.randn(cfg.n_heads, cfg.d_state, layer.d_v, generator=g, dtype=f64)
    h0 = S.flatten()[None]
    hs, ys = layer.scan(u, h0)
    h = h0
    with torch.no_grad():
        for t in range(3):
            S, y = by_hand(layer, S, u[0, t])
            h, y_step = layer.step(h, u[:, t])
            torch.testing.assert_close(h[0], S.flatten())
            torch.testing.assert_close(y_step[0], y)
            torch.testing.assert_close(hs[0, t], S.flatten())
            torch.testing.assert_close(ys[0, t], y)
            torch.testing.assert_close(layer.outputs(u, h0)[0, t], y)


@pytest.mark.parametrize("config", DELTA_CONFIGS)
def test_transition_is_the_product_of_householder_factors(config):
    """The one-token Jacobian on the state is A_{n_h} ... A_1 (x) I_{d_v} per head, at
    any state (affine)."""
    name, kw = CONFIGS[config]
    layer = tiny(name, **kw).layers[0]
    g = torch.Generator().manual_seed(4)
    for _ in range(3):
        u = 2 * torch.randn(layer.d_in, generator=g, dtype=f64)
        h = torch.randn(layer.state_size, generator=g, dtype=f64)
        J, _ = recurrent_jacobian(layer, h, u)
        with torch.no_grad():
            want, _ = transition_by_hand(layer, u)
        torch.testing.assert_close(J, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,kw", [("deltanet", {}), ("deltanet_negative", {"n_heads": 2})])
def test_deltanet_eigenvalues_are_one_and_one_minus_beta(name, kw):
    """DeltaNet's transition: eigenvalue 1 (d_k - 1 times per head) and 1 - beta_h, each
    repeated over the d_v columns of S."""
    layer = tiny(name, **kw).layers[0]
    u = 2 * torch.randn(layer.d_in, generator=torch.Generator().manual_seed(5), dtype=f64)
    J, _ = recurrent_jacobian(layer, torch.zeros(layer.state_size, dtype=f64), u)
    with torch.no_grad():
        _, betas = transition_by_hand(layer, u)
    cfg = layer.cfg
    want = torch.cat([torch.ones((cfg.d_state - 1) * layer.d_v * cfg.n_heads, dtype=f64),
                      (1 - betas).repeat_interleave(layer.d_v)])
    lam = torch.linalg.eigvals(J)
    torch.testing.assert_close(lam.imag, torch.zeros_like(lam.imag), rtol=0, atol=1e-10)
    torch.testing.assert_close(lam.real.sort().values, want.sort().values)


@pytest.mark.parametrize("config", DELTA_CONFIGS)
def test_eigenvalue_range(config):
    """beta_range 1: every eigenvalue real in [0, 1] (DeltaNet), or in the unit disk
    (DeltaProduct); beta_range 2: below 0 at random inputs, and -1 where beta -> 2 (a
    large bias in w_beta), while 0 is the floor for beta_range 1."""
    name, kw = CONFIGS[config]
    layer = tiny(name, **kw).layers[0]
    cfg = layer.cfg
    lam = eigenvalues(layer)
    assert lam.abs().max() <= 1 + 1e-9
    if cfg.beta_range == 1 and cfg.n_householder == 1:
        assert lam.imag.abs().max() < 1e-10 and lam.real.min() >= -1e-10
    if cfg.beta_range == 2:
        assert lam.real.min() < 0
    with torch.no_grad():
        layer.b_proj.bias.fill_(40.0)  # sigmoid = 1: beta = beta_range
    lam = eigenvalues(layer)
    floor = 1 - cfg.beta_range  # the factors' eigenvalue 1 - beta
    if cfg.n_householder == 1:
        torch.testing.assert_close(lam.real.min(), torch.tensor(floor, dtype=f64))
    assert lam.abs().max() <= 1 + 1e-9


@pytest.mark.parametrize("beta_range", [1, 2])
def test_deltaproduct_with_one_factor_is_deltanet(beta_range):
    """n_householder=1 has DeltaNet's parameters (names and shapes); with the same weights
    the models agree, in forward and in step."""
    torch.manual_seed(0)
    net = build("deltanet" if beta_range == 1 else "deltanet_negative", 5, 5, d_model=8,
                d_state=4, n_layers=2).double()
    torch.manual_seed(1)
    product = build("deltaproduct", 5, 5, d_model=8, d_state=4, n_layers=2,
                    n_householder=1, beta_range=beta_range).double()
    product.load_state_dict(net.state_dict())  # strict: the same names and shapes
    tokens = torch.randint(0, 5, (3, 70), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        torch.testing.assert_close(product(tokens), net(tokens), rtol=0, atol=0)
        h = net.init_state(3)
        for t in range(5):
            h_p, z_p = product.step_logits(h, tokens[:, t])
            h, z = net.step_logits(h, tokens[:, t])
            torch.testing.assert_close(h_p, h, rtol=0, atol=0)
            torch.testing.assert_close(z_p, z, rtol=0, atol=0)


@pytest.mark.parametrize("config", DELTA_CONFIGS)
@pytest.mark.parametrize("L", [1, 63, 1000])
@pytest.mark.parametrize("with_h0", [False, True])
def test_outputs_match_step(config, L, with_h0):
    """The fast path (chunked, no states) == step unrolled, in value and in the gradients
    w.r.t. u, h0 and every parameter; at L = 1000, 32 to 94 chunks of CHUNK sub-steps."""
    name, kw = CONFIGS[config]
    check_outputs_match_step(tiny(name, **kw).layers[0], L, with_h0)


@pytest.mark.parametrize("name", ["deltanet_negative", "deltaproduct"])
def test_stacked_training_steps_equal_separate_steps(name):
    """Three models (seeds, learning rates) trained three AdamW steps as one stack
    (torch.func.vmap over their stacked weights, per-row clipping) equal three separate
    runs, in the logits and the weights (float64: only the summation order differs)."""
    models = []
    for seed in range(3):
        torch.manual_seed(seed)
        models.append(build(name, 6, 6, d_model=8, d_state=4, n_layers=2).double())
    separate = copy.deepcopy(models)
    lrs, wd, clip = [1e-3, 1e-2, 3e-2], 0.01, 1.0
    stack = StackedTracker(models, weight_decay=wd, grad_clip=clip)
    opts = [torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=wd)
            for m, lr in zip(separate, lrs)]
    gen = torch.Generator().manual_seed(3)
    for _ in range(3):
        x = torch.randint(0, 6, (3, 4, 20), generator=gen)  # (K, b, L)
        y = torch.randint(0, 6, (3, 4, 20), generator=gen)
        logits = stack.logits(x)  # (K, b, L, 6)
        losses = torch.stack([F.cross_entropy(logits[k].flatten(0, 1), y[k].flatten())
                              for k in range(3)])
        for k, (m, opt) in enumerate(zip(separate, opts)):
            logits_k = m(x[k])
            torch.testing.assert_close(logits[k].detach(), logits_k.detach(),
                                       rtol=1e-10, atol=1e-12)
            opt.zero_grad()
            F.cross_entropy(logits_k.flatten(0, 1), y[k].flatten()).backward()
            nn.utils.clip_grad_norm_(m.parameters(), clip)
            opt.step()
        stack.step(losses, lrs)
    for k, m in enumerate(separate):
        for n, p in m.named_parameters():
            torch.testing.assert_close(stack.params[n][k].detach(), p.detach(),
                                       rtol=1e-9, atol=1e-11, msg=lambda s: f"{n}: {s}")


@pytest.mark.parametrize("name,kw,match", [
    ("deltaproduct", {"n_householder": 0}, "n_householder must be one of 1, 2, 3, got 0"),
    ("deltaproduct", {"n_householder": 4}, "n_householder must be one of 1, 2, 3, got 4"),
    ("deltaproduct", {"n_householder": True}, "n_householder must be one of 1, 2, 3, got True"),
    ("deltaproduct", {"beta_range": 3}, "beta_range must be one of 1, 2, got 3"),
    ("deltaproduct", {"beta_range": 2.0}, "beta_range must be one of 1, 2, got 2.0"),
    ("deltanet", {"n_heads": 3}, "n_heads 3 must divide d_model 8"),
    ("deltaproduct", {"n_heads": 5}, "n_heads 5 must divide d_model 8"),
    ("deltanet", {"n_heads": 0}, "n_heads must be a positive int, got 0"),
    ("deltanet", {"beta_range": 2}, "deltanet always has beta_range=1; use deltaproduct"),
    ("deltanet_negative", {"n_householder": 2},
     "deltanet_negative always has n_householder=1; use deltaproduct"),
    ("deltaproduct_3", {"n_householder": 2}, "deltaproduct_3 always has n_householder=3"),
    ("deltaproduct", {"gate": True}, "unknown option.*gate.*allowed: d_model, d_state, "
                                     "n_heads, n_householder, beta_range"),
])
def test_bad_options_raise(name, kw, match):
    with pytest.raises(ValueError, match=match):
        build(name, 3, 3, d_model=8, d_state=4, **kw)


def test_defaults():
    """deltaproduct: n_householder 2 and beta_range 2; deltaproduct_3: 3 factors; state
    H d_k d_v per layer."""
    cfgs = {n: build(n, 3, 3, d_model=8, d_state=4).layers[0].cfg
            for n in ("deltanet", "deltanet_negative", "deltaproduct", "deltaproduct_3")}
    assert [(c.n_householder, c.beta_range) for c in cfgs.values()] == [(1, 1), (1, 2), (2, 2),
                                                                        (3, 2)]
    model = build("deltaproduct", 3, 3, d_model=8, d_state=4, n_layers=2, n_heads=2)
    assert model.state_size == 2 * (2 * 4 * 4) and model.is_affine
    assert not model.recurrent_mask.logical_not().any()  # no input window
