"""The contract every residual-stream layer meets (Mamba family, AUSSM, linear attention,
DeltaNet / DeltaProduct): ``check_*`` helpers used by ``test_contract.py`` and the
per-family test files."""
from __future__ import annotations

import torch
from torch.func import jacrev
from torch.nn import functional as F

from sst_core.groups import get_group
from sst_core.models import build
from sst_core.models.base import SequenceModel
from sst_core.tasks.tracking import sample

f64 = torch.float64


# -- the shared contract ---------------------------------------------------------------------
def tiny(name: str, n_layers: int = 1, noise: float = 0.1, seed: int = 0, **kw) -> SequenceModel:
    """A float64 model (width 4 unless kw says otherwise), every parameter nudged off its
    (often symmetric) init."""
    torch.manual_seed(seed)
    kw = {"d_model": 4, "d_state": 4, **kw}
    model = build(name, 3, 3, n_layers=n_layers, **kw).double()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(noise * torch.randn_like(p))
    return model


def check_forward_matches_step(model: SequenceModel, L: int = 13) -> None:
    tokens = torch.randint(0, model.n_tokens, (3, L))
    logits = model(tokens)  # (3, L, n_classes)
    h = model.init_state(3)
    assert h.shape == (3, model.state_size)
    for t in range(L):
        h, step_logits = model.step_logits(h, tokens[:, t])
        torch.testing.assert_close(step_logits, logits[:, t], rtol=1e-9, atol=1e-10)
    torch.testing.assert_close(model.step(model.init_state(3), tokens[:, 0]),
                               model.step_logits(model.init_state(3), tokens[:, 0])[0])


def unrolled(layer, u, h0):
    h, hs, ys = h0, [], []
    for t in range(u.shape[1]):
        h, y = layer.step(h, u[:, t])
        hs.append(h)
        ys.append(y)
    return torch.stack(hs, 1), torch.stack(ys, 1)


def check_scan_matches_step(layer, L: int, h0_scale: float = 0.5) -> None:
    """scan == step unrolled in hs and ys, and in the gradients w.r.t. u, h0 and parameters."""
    g = torch.Generator().manual_seed(L)
    u = torch.randn(2, L, layer.d_in, generator=g, dtype=f64)
    h0 = h0_scale * torch.randn(2, layer.state_size, generator=g, dtype=f64)
    w_h = torch.randn(2, L, layer.state_size, generator=g, dtype=f64)
    w_y = torch.randn(2, L, layer.d_out, generator=g, dtype=f64)
    results = []
    for fn in (layer.scan, lambda u, h0: unrolled(layer, u, h0)):
        leaves = [u.clone().requires_grad_(), h0.clone().requires_grad_()]
        layer.zero_grad()
        hs, ys = fn(*leaves)
        assert hs.shape == (2, L, layer.state_size) and ys.shape == (2, L, layer.d_out)
        ((hs * w_h).sum() + (ys * w_y).sum()).backward()
        results.append([hs.detach(), ys.detach()] + [x.grad for x in leaves]
                       + [p.grad.clone() for p in layer.parameters()])
    for got, want in zip(*results):
        torch.testing.assert_close(got, want, rtol=1e-8, atol=1e-9)


def check_outputs_match_step(layer, L: int, with_h0: bool, h0_scale: float = 0.5) -> None:
    """outputs (the fast path forward uses, which builds no states) == step unrolled in
    value and in the gradients w.r.t. u, h0 and every parameter; without gradients (in
    pieces of EVAL_CHUNK steps, keeping no states) the same outputs."""
    g = torch.Generator().manual_seed(L)
    u = torch.randn(2, L, layer.d_in, generator=g, dtype=f64)
    h0 = h0_scale * torch.randn(2, layer.state_size, generator=g, dtype=f64)
    w = torch.randn(2, L, layer.d_out, generator=g, dtype=f64)
    results = []
    for fast in (True, False):
        leaves = [u.clone().requires_grad_()] + ([h0.clone().requires_grad_()] if with_h0 else [])
        layer.zero_grad()
        start = leaves[1] if with_h0 else None
        if fast:
            y = layer.outputs(leaves[0], start)
        else:
            y = unrolled(layer, leaves[0], torch.zeros_like(h0) if start is None else start)[1]
        (y * w).sum().backward()
        results.append([y.detach()] + [x.grad for x in leaves]
                       + [p.grad.clone() for p in layer.parameters()])
    for got, want in zip(*results):
        torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-10)
    with torch.no_grad():
        torch.testing.assert_close(layer.outputs(u, h0 if with_h0 else None), results[0][0],
                                   rtol=1e-10, atol=1e-11)


def check_long_scan(layer, L: int = 1000) -> None:
    """At length L: scan == step unrolled; without gradients the scan runs in EVAL_CHUNK
    pieces (the state carries everything between them) and must give the same."""
    g = torch.Generator().manual_seed(2)
    u = torch.randn(2, L, layer.d_in, generator=g, dtype=f64)
    h0 = 0.5 * torch.randn(2, layer.state_size, generator=g, dtype=f64)
    whole = layer.scan(u, h0)
    with torch.no_grad():
        pieces, steps = layer.scan(u, h0), unrolled(layer, u, h0)
    for got, piece, step in zip(whole, pieces, steps):
        torch.testing.assert_close(piece, got.detach(), rtol=1e-9, atol=1e-10)
        torch.testing.assert_close(step, got.detach(), rtol=1e-8, atol=1e-9)


def recurrent_jacobian(layer, h, u):
    """d h_next / d h (batch 1) restricted to the recurrent block (no conv window)."""
    n = layer.state_size - layer.conv_state_size
    J = jacrev(lambda h: layer.step(h[None], u[None])[0][0])(h)  # (D, D)
    return J[:n, :n], J


def check_affine(layer, seed: int = 0) -> None:
    """d h_next / d h is the same at two random states for a fixed u (the paper's class).

    With a conv, the window (the last k-1 inputs) is shared by the two states: the step
    is affine in the recurrent state for a fixed input window (see selective.py).
    """
    g = torch.Generator().manual_seed(seed)
    u = torch.randn(layer.d_in, generator=g, dtype=f64)
    h1, h2 = torch.randn(2, layer.state_size, generator=g, dtype=f64)
    n = layer.state_size - layer.conv_state_size
    h2[n:] = h1[n:]
    (_, J1), (_, J2) = recurrent_jacobian(layer, h1, u), recurrent_jacobian(layer, h2, u)
    assert layer.is_affine
    torch.testing.assert_close(J1[:, :n], J2[:, :n], rtol=1e-10, atol=1e-12)
    if layer.conv_state_size == 0:
        torch.testing.assert_close(J1, J2, rtol=1e-10, atol=1e-12)


def eigenvalues(layer, n_inputs: int = 5, scale: float = 2.0) -> torch.Tensor:
    """Eigenvalues of the recurrent block at random states and inputs, all concatenated."""
    g = torch.Generator().manual_seed(1)
    out = []
    for _ in range(n_inputs):
        u = scale * torch.randn(layer.d_in, generator=g, dtype=f64)
        h = torch.randn(layer.state_size, generator=g, dtype=f64)
        out.append(torch.linalg.eigvals(recurrent_jacobian(layer, h, u)[0]))
    return torch.cat(out)


def overfit_c2(name: str, steps: int = 400, lr: float = 1e-2, target=None, seed: int = 0,
               **kw) -> float:
    """Token accuracy after fitting 32 fixed parity words of length 8 ({e, a} tokens).

    ``target(tokens, states)`` replaces the parity target when given.
    """
    group = get_group("C2")
    tokens, states = (torch.as_tensor(x) for x in sample(group, 32, 8, "generators", seed=0))
    if target is not None:
        states = target(tokens, states)
    torch.manual_seed(seed)
    model = build(name, group.order, group.order, **{"d_model": 16, "d_state": 8, **kw})
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        logits = model(tokens)  # (32, 8, 2)
        acc = (logits.argmax(-1) == states).double().mean().item()
        if acc >= 0.99:
            break
        loss = F.cross_entropy(logits.flatten(0, 1), states.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
    return acc


# Every residual-stream configuration under test: id -> (registry name, options)
CONFIGS = {
    "mamba": ("mamba", {}),
    "mamba_noconv": ("mamba", {"d_conv": 1}),
    "negative_mamba": ("negative_mamba", {}),
    "mamba3": ("mamba3", {"headdim": 4}),
    "mamba3_allrope": ("mamba3", {"headdim": 2, "rope_fraction": 1.0}),
    "aussm": ("aussm", {}),
    "aussm_paper": ("aussm", {"d_conv": 1, "angle_times_dt": True, "dt_bias_twice": False}),
    "simple_aussm": ("simple_aussm", {}),
    "linear_attention": ("linear_attention", {}),
    "linear_attention_heads_identity": ("linear_attention", {"n_heads": 2, "feature_map": "identity",
                                                             "normalize": False}),
    "deltanet": ("deltanet", {}),
    "deltanet_negative_heads": ("deltanet_negative", {"n_heads": 2}),
    "deltaproduct_1": ("deltaproduct", {"n_householder": 1}),
    "deltaproduct_2": ("deltaproduct", {"n_householder": 2}),
    "deltaproduct_3": ("deltaproduct", {"n_householder": 3, "beta_range": 1}),
}
