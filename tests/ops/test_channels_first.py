"""Channels-first ops against their plain references: LayerNorm over dimension 1."""
import pytest
import torch
from torch.func import jacrev

from sst_core.ops.channels_first import layer_norm_channels, layer_norm_channels_ref

pytestmark = pytest.mark.usefixtures("one_thread")


def _grads(fn, x, w, b, gout):
    leaves = [t.detach().clone().requires_grad_() if t is not None else None for t in (x, w, b)]
    out = fn(*leaves)
    got = torch.autograd.grad((out * gout).sum(), [t for t in leaves if t is not None])
    return [out.detach(), *got]


@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
@pytest.mark.parametrize("shape", [(3, 5, 7), (1, 1, 4), (2, 16, 1)])
def test_layer_norm_channels_equals_layer_norm_through_transposes(affine, shape):
    g = torch.Generator().manual_seed(sum(shape))
    x = torch.randn(shape, generator=g, dtype=torch.float64) * 3 + 1
    C = shape[1]
    w = torch.randn(C, generator=g, dtype=torch.float64) if affine in ("both", "weight") else None
    b = torch.randn(C, generator=g, dtype=torch.float64) if affine in ("both", "bias") else None
    gout = torch.randn(shape, generator=g, dtype=torch.float64)
    got = _grads(layer_norm_channels, x, w, b, gout)
    want = _grads(layer_norm_channels_ref, x, w, b, gout)
    assert got[0].is_contiguous()
    for u, v in zip(got, want):
        torch.testing.assert_close(u, v, rtol=1e-10, atol=1e-12)


def test_layer_norm_channels_reads_strided_input_and_has_exact_gradients():
    g = torch.Generator().manual_seed(0)
    base = torch.randn(2, 6, 10, generator=g, dtype=torch.float64)
    x = base[..., ::2]  # non-contiguous (2, 6, 5)
    w, b = torch.randn(6, generator=g, dtype=torch.float64), torch.randn(6, generator=g,
                                                                         dtype=torch.float64)
    torch.testing.assert_close(layer_norm_channels(x, w, b), layer_norm_channels_ref(x, w, b))
    args = [t.clone().requires_grad_() for t in (x.contiguous(), w, b)]
    assert torch.autograd.gradcheck(lambda x, w, b: layer_norm_channels(x, w, b, 1e-5), args)


def test_layer_norm_channels_under_torch_func_and_bad_shapes():
    x = torch.randn(2, 3, 4, dtype=torch.float64)
    w = torch.rand(3, dtype=torch.float64) + 0.5
    J = jacrev(lambda x: layer_norm_channels(x, w, None))(x)
    J_ref = jacrev(lambda x: layer_norm_channels_ref(x, w, None))(x)
    torch.testing.assert_close(J, J_ref)
    with pytest.raises(ValueError, match=r"\(b, C, L\)"):
        layer_norm_channels(torch.zeros(3, 4), None, None)
    with pytest.raises(ValueError, match=r"weight must have shape \(3,\)"):
        layer_norm_channels(x, torch.ones(4), None)
