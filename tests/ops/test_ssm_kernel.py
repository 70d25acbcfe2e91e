"""The S4D kernel ops against their plain references: chunked vs materialising Vandermonde,
kernel + FFT convolution vs the unrolled recurrence, FFT vs O(L^2) convolution."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.func import jacrev

from sst_core.ops.ssm_kernel import (
    causal_conv_ref,
    discretize_diag,
    fft_conv,
    recurrence_ref,
    vandermonde_kernel,
    vandermonde_kernel_ref,
)
from sst_core.theory.memory import discretize, init_Lambda

pytestmark = pytest.mark.usefixtures("one_thread")

TOL = dict(rtol=1e-9, atol=1e-10)


def spectrum(H, n, seed=0, dtype=torch.float64):
    """Continuous-time eigenvalues (H, n) with a spread of decays and frequencies, and dt (H,):
    S4D-Inv's eigenvalues in the first channel, random ones elsewhere."""
    g = torch.Generator().manual_seed(seed)
    re = -torch.exp(torch.randn(H, n, generator=g, dtype=dtype))
    im = 5 * torch.randn(H, n, generator=g, dtype=dtype)
    Lambda = torch.complex(re, im)
    Lambda[0] = torch.from_numpy(init_Lambda("inv", 2 * n)).to(Lambda.dtype)
    dt = torch.exp(torch.empty(H, dtype=dtype).uniform_(np.log(1e-3), np.log(1e-1), generator=g))
    return Lambda, dt


def cplx(shape, g, dtype=torch.complex128):
    return torch.randn(shape, generator=g, dtype=dtype)


def grads(fn, inputs, w):
    """Output of fn(*inputs) and gradients of sum(w * out) w.r.t. every input."""
    leaves = [x.detach().clone().requires_grad_() for x in inputs]
    out = fn(*leaves)
    (w * out).sum().backward()
    return [out.detach()] + [x.grad for x in leaves]


def assert_all_close(got, want, **tol):
    for i, (x, y) in enumerate(zip(got, want)):
        torch.testing.assert_close(x, y, **(tol or TOL), msg=lambda m: f"item {i}: {m}")


# -- vandermonde_kernel ------------------------------------------------------------------

@pytest.mark.parametrize("L", [1, 2, 63, 1000, 4096])
def test_chunked_kernel_equals_materialised(L):
    g = torch.Generator().manual_seed(L)
    Lambda, dt = spectrum(3, 8, seed=L)
    log_A_bar, _ = discretize_diag(Lambda, dt)  # (3, 8)
    C = cplx((3, 8), g)
    w = torch.randn(3, L, generator=g, dtype=torch.float64)
    got = grads(lambda C, x: vandermonde_kernel(C, x, L), [C, log_A_bar], w)
    want = grads(lambda C, x: vandermonde_kernel_ref(C, x, L), [C, log_A_bar], w)
    assert got[0].shape == (3, L) and got[0].dtype == torch.float64
    assert_all_close(got, want)


def test_kernel_broadcasts_a_shared_spectrum():
    """C (channels, H, n) with one log_A_bar (H, n): its gradient is summed over channels."""
    g = torch.Generator().manual_seed(1)
    Lambda, dt = spectrum(3, 4)
    log_A_bar, _ = discretize_diag(Lambda, dt)
    C = cplx((2, 3, 4), g)
    w = torch.randn(2, 3, 50, generator=g, dtype=torch.float64)
    got = grads(lambda C, x: vandermonde_kernel(C, x, 50), [C, log_A_bar], w)
    want = grads(lambda C, x: vandermonde_kernel_ref(C, x, 50), [C, log_A_bar], w)
    assert got[0].shape == (2, 3, 50) and got[2].shape == (3, 4)
    assert_all_close(got, want)


@pytest.mark.parametrize("C_shape, x_shape", [((2, 3, 4), (3, 4)), ((2, 1, 3, 4), (3, 4)),
                                              ((3, 4), (2, 3, 4)), ((4,), (4,)),
                                              ((2, 3, 4), (1, 4)), ((2, 3, 4), (4,))])
def test_kernel_shapes_sharing_or_broadcasting_the_spectrum(C_shape, x_shape):
    """Channels sharing the spectrum (its powers evaluated once), and a spectrum broadcast
    over C's dimensions or C over the spectrum's: values and gradients as the reference."""
    g = torch.Generator().manual_seed(len(C_shape) + 3 * len(x_shape))
    x = torch.complex(-torch.rand(x_shape, generator=g, dtype=torch.float64) * 0.3,
                      torch.randn(x_shape, generator=g, dtype=torch.float64))
    C = cplx(C_shape, g)
    shape = torch.broadcast_shapes(C_shape, x_shape)[:-1] + (37,)
    w = torch.randn(shape, generator=g, dtype=torch.float64)
    got = grads(lambda C, x: vandermonde_kernel(C, x, 37), [C, x], w)
    want = grads(lambda C, x: vandermonde_kernel_ref(C, x, 37), [C, x], w)
    assert got[0].shape == shape and got[1].shape == C_shape and got[2].shape == x_shape
    assert_all_close(got, want)


def test_kernel_gradcheck():
    g = torch.Generator().manual_seed(2)
    C = cplx((2, 3), g).requires_grad_()
    x = torch.complex(-torch.rand(2, 3, generator=g, dtype=torch.float64),
                      torch.randn(2, 3, generator=g, dtype=torch.float64)).requires_grad_()
    for L in (1, 7, 10):
        assert torch.autograd.gradcheck(lambda C, x: vandermonde_kernel(C, x, L), (C, x))


def test_kernel_single_precision_is_as_accurate_as_the_reference():
    """complex64 at L = 4096, S4D-Inv at dt = 0.1 (phases up to 4e5 rad): both single-precision
    versions against the float64 kernel, ours no worse than the materialising one."""
    Lambda = torch.from_numpy(init_Lambda("inv", 64))[None].repeat(2, 1)  # (2, 32)
    dt = torch.tensor([1e-3, 1e-1], dtype=torch.float64)
    log_A_bar, B_bar = discretize_diag(Lambda, dt)
    C = cplx((2, 32), torch.Generator().manual_seed(3)) * B_bar
    truth = vandermonde_kernel_ref(C, log_A_bar, 4096)
    err = {}
    for name, fn in (("ours", vandermonde_kernel), ("ref", vandermonde_kernel_ref)):
        K = fn(C.to(torch.complex64), log_A_bar.to(torch.complex64), 4096)
        assert K.dtype == torch.float32
        err[name] = ((K.double() - truth).abs().max() / truth.abs().max()).item()
    assert err["ours"] < 1e-4 and err["ours"] <= 2 * err["ref"] + 1e-6, err


def test_kernel_under_torch_func():
    """jacrev falls back to the plain ops (a custom Function without vmap support)."""
    Lambda, dt = spectrum(1, 3)
    x, _ = discretize_diag(Lambda, dt)
    C = torch.randn(1, 3, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    J = jacrev(lambda C: vandermonde_kernel(C, x, 5))(C)  # d K / d Re C
    assert J.shape == (1, 5, 1, 3)
    torch.testing.assert_close(J[0, :, 0], 2 * torch.exp(x[0] * torch.arange(5.0)[:, None]).real)


def test_kernel_by_hand():
    """One mode, C = 1, A_bar = 1/2: K_l = 2 * 2^-l."""
    x = torch.tensor([[np.log(0.5) + 0j]], dtype=torch.complex128)
    K = vandermonde_kernel(torch.ones_like(x), x, 4)
    torch.testing.assert_close(K, torch.tensor([[2.0, 1.0, 0.5, 0.25]], dtype=torch.float64))


@pytest.mark.parametrize("L", [0, -3, 2.0, True])
def test_kernel_rejects_bad_lengths(L):
    x = torch.zeros(1, 1, dtype=torch.complex64)
    for fn in (vandermonde_kernel, vandermonde_kernel_ref):
        with pytest.raises(ValueError, match="L="):
            fn(x, x, L)


# -- discretisation ----------------------------------------------------------------------

@pytest.mark.parametrize("method", ["zoh", "bilinear"])
def test_discretize_diag_matches_theory(method):
    Lambda, dt = spectrum(3, 5)
    log_A_bar, B_bar = discretize_diag(Lambda, dt, method)
    for h in range(3):
        mu, B_np = discretize(Lambda[h].numpy(), float(dt[h]), method)
        np.testing.assert_allclose(torch.exp(log_A_bar[h]).numpy(), mu, rtol=1e-12)
        np.testing.assert_allclose(B_bar[h].numpy(), B_np, rtol=1e-12)


def test_discretize_diag_shapes_and_limits():
    Lambda = torch.tensor([-0.5 + 1j, 0j], dtype=torch.complex128)  # (N/2,) shared
    dt = torch.tensor([0.1, 0.01], dtype=torch.float64)  # (H,)
    log_A_bar, B_bar = discretize_diag(Lambda, dt)
    assert log_A_bar.shape == B_bar.shape == (2, 2)
    torch.testing.assert_close(B_bar[:, 1], dt.to(B_bar.dtype))  # ZOH limit at Lambda = 0
    with pytest.raises(ValueError, match="'foh'.*allowed: zoh, bilinear"):
        discretize_diag(Lambda, dt, "foh")
    with pytest.raises(ValueError, match="allowed: zoh, bilinear"):
        recurrence_ref(Lambda[None], dt[:1], None, Lambda[None], None, torch.zeros(1, 1, 3), "euler")


# -- convolution -------------------------------------------------------------------------

@pytest.mark.parametrize("L", [1, 63, 1000, 4096])
def test_fft_conv_equals_direct_sum(L):
    g = torch.Generator().manual_seed(L)
    u = torch.randn(2, 3, L, generator=g, dtype=torch.float64)
    K = torch.randn(3, L, generator=g, dtype=torch.float64)
    D = torch.randn(3, generator=g, dtype=torch.float64)
    w = torch.randn(2, 3, L, generator=g, dtype=torch.float64)
    assert_all_close(grads(fft_conv, [u, K, D], w), grads(causal_conv_ref, [u, K, D], w))


def test_fft_conv_by_hand():
    u = torch.tensor([[[1.0, 2.0, 3.0]]], dtype=torch.float64)
    K = torch.tensor([[1.0, 10.0, 100.0]], dtype=torch.float64)
    y = fft_conv(u, K, torch.tensor([1.0], dtype=torch.float64))
    torch.testing.assert_close(y, torch.tensor([[[2.0, 14.0, 126.0]]], dtype=torch.float64))


@pytest.mark.parametrize("L", [1, 7, 63])
def test_bidirectional_kernel_is_causal_plus_anticausal(L):
    """K = pad(K0, (0, L)) + pad(flip(K1), (L, 0)) gives
    y_t = sum_{s <= t} K0_s u_{t-s} + sum_{m = 1}^{L-1} K1_{m-1} u_{t+m}."""
    g = torch.Generator().manual_seed(L)
    u = torch.randn(2, 3, L, generator=g, dtype=torch.float64)
    K0, K1 = torch.randn(2, 3, L, generator=g, dtype=torch.float64)
    K = F.pad(K0, (0, L)) + F.pad(K1.flip(-1), (L, 0))  # (3, 2L)
    t = torch.arange(L)
    lead = t[None, :] - t[:, None]  # (L, L): s - t
    anti = K1[..., (lead - 1).clamp(min=0)] * (lead >= 1)  # (3, L, L): K1[s - t - 1] for s > t
    want = causal_conv_ref(u, K0) + (anti @ u[..., None])[..., 0]
    torch.testing.assert_close(fft_conv(u, K), want, **TOL)
    # the same through the flip identity: anti-causal = flip(causal(flip(u), [0, K1[:-1]]))
    shifted = F.pad(K1[..., :-1], (1, 0))
    torch.testing.assert_close(causal_conv_ref(u.flip(-1), shifted).flip(-1),
                               (anti @ u[..., None])[..., 0], **TOL)


def test_fft_conv_rejects_bad_kernel_length():
    with pytest.raises(ValueError, match="length L=4.*got 5"):
        fft_conv(torch.zeros(1, 2, 4), torch.zeros(2, 5))


# -- kernel + convolution = the recurrence ----------------------------------------------

@pytest.mark.parametrize("method", ["zoh", "bilinear"])
@pytest.mark.parametrize("L", [1, 63, 1000, 4096])
def test_kernel_conv_equals_recurrence(method, L):
    """Output and gradients w.r.t. Lambda, dt, B, C, D and u."""
    g = torch.Generator().manual_seed(L)
    H, n = 3, 4
    Lambda, dt = spectrum(H, n, seed=L)
    B, C = cplx((H, n), g), cplx((H, n), g)
    D = torch.randn(H, generator=g, dtype=torch.float64)
    u = torch.randn(2, H, L, generator=g, dtype=torch.float64)
    w = torch.randn(2, H, L, generator=g, dtype=torch.float64)

    def ours(Lambda, dt, B, C, D, u):
        log_A_bar, B_bar = discretize_diag(Lambda, dt, method)
        K = vandermonde_kernel(C * B * B_bar, log_A_bar, u.shape[-1])  # (H, L)
        return fft_conv(u, K, D)

    def ref(Lambda, dt, B, C, D, u):
        return recurrence_ref(Lambda, dt, B, C, D, u, method)

    got = grads(ours, [Lambda, dt, B, C, D, u], w)
    want = grads(ref, [Lambda, dt, B, C, D, u], w)
    assert_all_close(got, want, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("L", [1, 63, 1000, 4096])
@pytest.mark.parametrize("two_sided", [False, True])
@pytest.mark.parametrize("keep_spectrum", [False, True])
def test_memory_lean_fft_conv_equals_plain_autograd(L, two_sided, keep_spectrum):
    """The custom backward (keeps u or its spectrum, and K's spectrum; sums over the
    broadcast dimensions in the frequency domain) against autograd through the plain
    transforms, with broadcasting (u (b, 1, H, L), K (channels, H, L or 2L))."""
    from sst_core.ops.ssm_kernel import _fft_conv_plain, _FFTConv

    gen = torch.Generator().manual_seed(L)
    u = torch.randn(3, 1, 4, L, generator=gen, dtype=torch.float64, requires_grad=True)
    for channels in (2, 1):  # broadcast products, and the in-place ones
        K = torch.randn(channels, 4, 2 * L if two_sided else L, generator=gen,
                        dtype=torch.float64, requires_grad=True)
        w = torch.randn(3, channels, 4, L, generator=gen, dtype=torch.float64)
        ours = _FFTConv.apply(u, K, keep_spectrum)
        plain = _fft_conv_plain(u, K)
        torch.testing.assert_close(ours, plain, rtol=1e-10, atol=1e-10)
        g_ours = torch.autograd.grad((ours * w).sum(), (u, K), retain_graph=True)
        g_plain = torch.autograd.grad((plain * w).sum(), (u, K))
        for a, b in zip(g_ours, g_plain):
            assert a.shape == b.shape
            torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)
        # a second backward through the same graph (retain_graph): nothing kept was overwritten
        again = torch.autograd.grad((ours * w).sum(), (u, K))
        for a, b in zip(again, g_ours):
            torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("L", [1, 63, 1000])
def test_D_at_lag_zero_of_the_kernel_equals_D_u(L):
    """D folded into K[..., 0] (D broadcasting against K's leading shape: one D per kernel,
    also with channels and a bidirectional kernel) and D added to y (a D per batch row,
    which K cannot hold): both equal the plain ``conv + D u``, forward and gradients."""
    from sst_core.ops.ssm_kernel import _fft_conv_plain

    g = torch.Generator().manual_seed(L)
    u = torch.randn(3, 1, 4, L, generator=g, dtype=torch.float64)
    w = torch.randn(3, 2, 4, L, generator=g, dtype=torch.float64)

    def plain(u, K, D):
        return _fft_conv_plain(u, K) + D[..., None] * u

    for Lk in (L, 2 * L):
        K = torch.randn(2, 4, Lk, generator=g, dtype=torch.float64)
        for D_shape in ((2, 4), (4,), (3, 2, 4)):  # folded, folded, added to y
            D = torch.randn(D_shape, generator=g, dtype=torch.float64)
            for keep in (False, True):
                got = grads(lambda u, K, D: fft_conv(u, K, D, keep_spectrum=keep), [u, K, D], w)
                assert_all_close(got, grads(plain, [u, K, D], w))


def test_padded_rfft_buffer_equals_rfft_and_follows_shapes():
    """The kept zero-padded buffer gives rfft(x, 2L) for every shape and dtype in turn (its
    right half stays zero), and CPU tensors above the size cap pad afresh."""
    from sst_core.ops import ssm_kernel

    g = torch.Generator().manual_seed(0)
    for shape, dtype in [((2, 3, 5), torch.float64), ((2, 3, 5), torch.float32),
                         ((4, 1, 3, 8), torch.float32), ((2, 3, 5), torch.float64),
                         ((1,), torch.float64)]:
        for _ in range(2):
            x = torch.randn(shape, generator=g, dtype=dtype)
            got = ssm_kernel._rfft_padded(x)
            torch.testing.assert_close(got, torch.fft.rfft(x, n=2 * shape[-1]), rtol=0, atol=0)
    assert ssm_kernel._PADDED.buf.shape == (2,)
    x = torch.randn(3, 7, dtype=torch.float64)
    cap = ssm_kernel.PADDED_BUFFER_MAX_BYTES
    try:
        ssm_kernel.PADDED_BUFFER_MAX_BYTES = 8
        torch.testing.assert_close(ssm_kernel._rfft_padded(x), torch.fft.rfft(x, n=14))
        assert ssm_kernel._PADDED.buf.shape == (2,)  # not replaced
    finally:
        ssm_kernel.PADDED_BUFFER_MAX_BYTES = cap
