"""Diagonal SSM convolution kernels (S4D): discretisation, Vandermonde kernel, FFT convolution.

Conventions, as in ``state-spaces/s4`` (reference ``paper2-memory-s4.md`` sections 2 and 7):
one member of each conjugate pair is stored, ``Lambda`` of shape ``(H, N/2)``, and the
output is ``2 Re(C h)``, so the equivalent real state has size N. The state includes the
current input,

    h_t = A_bar h_{t-1} + B_bar B u_t,     y_t = 2 Re(C h_t) + D u_t,

so the output is the causal convolution ``y = K * u + D u`` with the kernel

    K_l = 2 Re sum_n C_n B_n B_bar_n A_bar_n^l,        l = 0 .. L-1.

The pieces, each with a plain reference beside it (same results, for the tests):

- ``discretize_diag(Lambda, dt, method)`` -> ``(log_A_bar, B_bar)``;
- ``vandermonde_kernel(C, log_A_bar, L)`` -> ``K = 2 Re sum_n C_n exp(l log_A_bar_n)``
  without the ``(H, N/2, L)`` tensor; ``vandermonde_kernel_ref`` materialises it (as the
  standalone S4D does);
- ``fft_conv(u, K, D)``: ``irfft(rfft(u, 2L) rfft(K, 2L))[:L] + D u`` (D folded into the
  kernel's lag 0); ``causal_conv_ref`` is the O(L^2) sum;
- ``recurrence_ref``: the unrolled recurrence above (A_bar, B_bar computed directly,
  not through ``discretize_diag``).

How ``vandermonde_kernel`` avoids the (H, N/2, L) tensor
---------------------------------------------------------
Split each delay as ``l = l0 + j`` with chunk starts ``l0 = 0, c, 2c, ...`` and offsets
``j = 0 .. c-1``, ``c = ceil(sqrt(L))``. Then ``exp(l x) = P[n, k] E[n, j]`` with
``P = exp(l0_k x)`` (one power per chunk) and ``E = exp(j x)`` (the first chunk), and

    K[l0_k + j] = 2 Re sum_n (C_n P[n, k]) E[n, j]

is one batched real matrix product ``(Kc, N) @ (N, c)`` per channel (real and imaginary
parts stacked), Kc = ceil(L / c) chunks; kernels that share a spectrum (the two directions
of a bidirectional layer, ``C`` ``(channels, H, N/2)`` with ``log_A_bar`` ``(H, N/2)``) stack
their rows, ``(channels Kc, N) @ (N, c)``, and evaluate ``P`` and ``E`` once. Only O(H N sqrt(L)) numbers are formed and only
O(H N sqrt(L)) complex exponentials evaluated (the materialising version evaluates
H N L / 2 of them, which dominates its cost: ``cpu-performance-notes.md``); every power is
a product of two directly computed exponentials, never a running product, so nothing
accumulates rounding over the length. The backward pass (``_VandermondeKernel``) saves only
``C`` and ``log_A_bar``, recomputes ``P`` and ``E``, and evaluates the two transposed sums

    S0_n = sum_l g_l z_n^l,   S1_n = sum_l g_l l z_n^l       (z = exp(log_A_bar), g = dL/dK)

with the same chunking (l = l0 + j: ``S1 = sum_k P (l0_k Q0 + Q1)``, ``Q0 = E g^T``,
``Q1 = E diag(j) g^T``). PyTorch's complex gradients are conjugate Wirtinger derivatives
(``grad = dL/dRe + i dL/dIm`` for a real loss), hence

    dL/dC = 2 conj(S0),     dL/dlog_A_bar = 2 conj(C S1)   (summed over shared channels).
"""
from __future__ import annotations

import math
import threading

import torch
from torch.autograd.function import once_differentiable

__all__ = ["METHODS", "discretize_diag", "vandermonde_kernel", "vandermonde_kernel_ref",
           "fft_conv", "causal_conv_ref", "recurrence_ref"]

METHODS = ("zoh", "bilinear")


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"unknown discretisation method {method!r}; allowed: {', '.join(METHODS)}")


def _check_L(L) -> int:
    if isinstance(L, bool) or not isinstance(L, int) or L < 1:
        raise ValueError(f"L={L!r} must be an integer >= 1 (the kernel length)")
    return L


def _complex_dtype(dtype: torch.dtype) -> torch.dtype:
    if dtype.is_complex:
        return dtype
    return torch.complex128 if dtype == torch.float64 else torch.complex64


# -- discretisation --------------------------------------------------------------------

def discretize_diag(Lambda: torch.Tensor, dt: torch.Tensor, method: str = "zoh"
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(log_A_bar, B_bar)`` of a diagonal SSM, both of Lambda's broadcast shape with dt.

    ``Lambda``: complex ``(H, N/2)`` or ``(N/2,)``; ``dt``: ``(H,)`` (or a scalar tensor).
    ``B_bar`` is the factor that multiplies ``B``:

    - ``zoh``:      A_bar = exp(dt Lambda),  B_bar = (exp(dt Lambda) - 1) / Lambda
    - ``bilinear``: A_bar = (1 + dt Lambda/2) / (1 - dt Lambda/2),  B_bar = dt / (1 - dt Lambda/2)

    The kernel needs powers of A_bar, which it takes as ``exp(l log_A_bar)``, so the log is
    returned (for ZOH it is ``dt Lambda`` itself; for bilinear any branch of the log gives
    the same integer powers). ``expm1``/``log1p`` keep small ``dt Lambda`` accurate.
    """
    _check_method(method)
    Lambda = Lambda.to(_complex_dtype(Lambda.dtype))
    dt = dt.to(Lambda.real.dtype)
    dt = dt[..., None] if dt.dim() else dt  # (H, 1): one step per channel
    dtA = dt * Lambda  # (H, N/2)
    if method == "zoh":
        log_A_bar = dtA
        # (exp(dt Lambda) - 1) / Lambda, with the limit dt at Lambda = 0
        B_bar = torch.where(Lambda == 0, dt.to(Lambda.dtype),
                            torch.expm1(dtA) / torch.where(Lambda == 0, 1, Lambda))
    else:
        log_A_bar = torch.log1p(dtA / 2) - torch.log1p(-dtA / 2)  # log A_bar
        B_bar = dt / (1 - dtA / 2)
    return log_A_bar, B_bar


# -- the Vandermonde kernel ------------------------------------------------------------

def _exp_outer(x: torch.Tensor, steps: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Real and imaginary parts of exp(x[..., None] * steps), in real arithmetic
    (complex exp is far slower than real exp, cos and sin on CPU)."""
    s = steps.to(x.real.dtype)  # (S,)
    mag = torch.exp(x.real[..., None] * s)  # (M, n, S)
    phase = x.imag[..., None] * s
    return mag * torch.cos(phase), mag * torch.sin(phase)


def _chunking(L: int, device) -> tuple[int, int, torch.Tensor, torch.Tensor]:
    """Chunk length c, number of chunks Kc, offsets j (c,) and chunk starts l0 (Kc,)."""
    c = math.isqrt(L - 1) + 1 if L > 1 else 1  # ceil(sqrt(L))
    Kc = -(-L // c)
    return c, Kc, torch.arange(c, device=device), torch.arange(Kc, device=device) * c


def _powers(x: torch.Tensor, j: torch.Tensor, l0: torch.Tensor
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The exponentials of every chunk, in one evaluation for both sets of steps:
    ``E = [Re; Im] exp(j x)`` ``(M, 2n, c)`` (the first chunk) and ``P = exp(l0 x)``, real
    and imaginary parts ``(M, n, Kc)`` (one power per chunk start)."""
    c = j.shape[0]
    Re, Im = _exp_outer(x, torch.cat([j, l0]))  # (M, n, c + Kc)
    E = torch.cat([Re[..., :c], Im[..., :c]], 1)  # (M, 2n, c)
    return E, Re[..., c:], Im[..., c:]


class _VandermondeKernel(torch.autograd.Function):
    """K[h, m, l] = 2 Re sum_n C[h, m, n] exp(l x[m, n]) for C (channels, M, n) sharing
    x (M, n) (the bidirectional kernel's two directions share the spectrum: its powers are
    evaluated once); see the module doc."""

    @staticmethod
    def forward(ctx, C, x, L):
        Ch, M, n = C.shape
        c, Kc, j, l0 = _chunking(L, C.device)
        E, Pr, Pi = _powers(x, j, l0)  # (M, 2n, c), (M, n, Kc) twice
        Cr, Ci = C.real[..., None], C.imag[..., None]  # (Ch, M, n, 1)
        # C P, and Re(a b) = a_r b_r - a_i b_i: A = 2 [Re(C P); -Im(C P)], (Ch, M, 2n, Kc)
        A = torch.cat([Cr * Pr - Ci * Pi, -(Cr * Pi + Ci * Pr)], 2).mul_(2)
        A = A.permute(1, 0, 3, 2).reshape(M, Ch * Kc, 2 * n)  # rows (channel, chunk)
        K = torch.bmm(A, E)  # (M, Ch Kc, c)
        ctx.save_for_backward(C, x)
        ctx.L = L
        return K.reshape(M, Ch, Kc * c)[..., :L].transpose(0, 1).contiguous()  # (Ch, M, L)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        C, x = ctx.saved_tensors
        L = ctx.L
        Ch, M, n = C.shape
        c, Kc, j, l0 = _chunking(L, C.device)
        E, Pr, Pi = _powers(x, j, l0)  # recomputed
        G = torch.nn.functional.pad(g, (0, Kc * c - L)).reshape(Ch, M, Kc, c)
        GT = torch.cat([G, G * j.to(g.dtype)], 2)  # (Ch, M, 2Kc, c): [g, j g]
        GT = GT.permute(1, 3, 0, 2).reshape(M, c, Ch * 2 * Kc)
        Q = torch.bmm(E, GT).reshape(M, 2 * n, Ch, 2 * Kc)  # E g^T and E diag(j) g^T
        Q0 = torch.complex(Q[:, :n, :, :Kc], Q[:, n:, :, :Kc])  # sum_j E g, (M, n, Ch, Kc)
        Q1 = torch.complex(Q[:, :n, :, Kc:], Q[:, n:, :, Kc:])  # sum_j j E g
        P = torch.complex(Pr, Pi)[:, :, None]  # (M, n, 1, Kc)
        grad_C = grad_x = None
        if ctx.needs_input_grad[0]:
            S0 = (P * Q0).sum(-1)  # sum_l g_l z^l, (M, n, Ch)
            grad_C = 2 * S0.permute(2, 0, 1).conj()  # (Ch, M, n)
        if ctx.needs_input_grad[1]:
            S1 = (P * (l0.to(g.dtype) * Q0 + Q1)).sum(-1)  # sum_l g_l l z^l, (M, n, Ch)
            grad_x = 2 * (C.permute(1, 2, 0) * S1).sum(-1).conj()  # summed over channels
        return grad_C, grad_x, None


def _broadcast(C: torch.Tensor, log_A_bar: torch.Tensor):
    dtype = _complex_dtype(torch.promote_types(C.dtype, log_A_bar.dtype))
    C, x = torch.broadcast_tensors(C.to(dtype), log_A_bar.to(dtype))  # (..., n)
    return C, x


def vandermonde_kernel(C: torch.Tensor, log_A_bar: torch.Tensor, L: int) -> torch.Tensor:
    """``K[..., l] = 2 Re sum_n C[..., n] exp(l log_A_bar[..., n])``, l = 0..L-1, real.

    ``C`` (with ``B`` and ``B_bar`` already multiplied in) and ``log_A_bar`` broadcast to
    ``(..., N/2)`` (e.g. ``(H, N/2)``, or ``(channels, H, N/2)`` with a shared spectrum,
    whose powers are then evaluated once for all channels); returns ``(..., L)``. Memory
    O(H N sqrt(L)) besides the output, in the forward and in the backward pass (module
    doc). Same results as ``vandermonde_kernel_ref``.
    """
    L = _check_L(L)
    dtype = _complex_dtype(torch.promote_types(C.dtype, log_A_bar.dtype))
    C, x = C.to(dtype), log_A_bar.to(dtype)
    if torch._C._are_functorch_transforms_active():  # torch.func (jacrev, vmap): plain ops
        return vandermonde_kernel_ref(C, x, L)
    shape = torch.broadcast_shapes(C.shape, x.shape)  # (..., n)
    x_shape = (1,) * (len(shape) - x.dim()) + tuple(x.shape)
    split = 0  # the leading dimensions x is broadcast in: channels sharing its spectrum
    while split < len(shape) - 1 and x_shape[split] == 1:
        split += 1
    lead, rest, n = shape[:split], shape[split:-1], shape[-1]
    x = x.reshape(x_shape[split:]).expand(*rest, n).reshape(-1, n)  # (M, n)
    C = C.expand(shape).reshape(math.prod(lead), -1, n)  # (channels, M, n)
    K = _VandermondeKernel.apply(C, x, L)  # (channels, M, L)
    return K.reshape(*lead, *rest, L)
def vandermonde_kernel_ref(C: torch.Tensor, log_A_bar: torch.Tensor, L: int) -> torch.Tensor:
    """The standalone S4D's Vandermonde product: materialises ``exp(l log_A_bar)`` as a
    ``(..., N/2, L)`` complex tensor; plain autograd. Same signature as ``vandermonde_kernel``."""
    L = _check_L(L)
    C, x = _broadcast(C, log_A_bar)
    l = torch.arange(L, device=C.device, dtype=x.real.dtype)  # (L,)
    V = torch.exp(x[..., None] * l)  # (..., N/2, L)
    return 2 * torch.einsum("...n,...nl->...l", C, V).real  # (..., L)


# -- convolution -----------------------------------------------------------------------

def _check_conv(u: torch.Tensor, K: torch.Tensor) -> int:
    if u.dim() < 1 or u.shape[-1] < 1:
        raise ValueError(f"u must have shape (..., L) with L >= 1, got {tuple(u.shape)}")
    L = u.shape[-1]
    if K.shape[-1] not in (L, 2 * L):
        raise ValueError(f"K must have length L={L} (causal) or 2L={2 * L} (bidirectional), "
                         f"got {K.shape[-1]}")
    return L


def fft_conv(u: torch.Tensor, K: torch.Tensor, D: torch.Tensor | None = None,
             keep_spectrum: bool = False) -> torch.Tensor:
    """``y = irfft(rfft(u, 2L) rfft(K, 2L), 2L)[..., :L] + D u``.

    ``u`` ``(b, H, L)`` (any leading shape), ``K`` ``(H, L)``, broadcasting against ``u``
    (e.g. ``u`` ``(b, 1, H, L)`` with ``K`` ``(channels, H, L)``), ``D`` broadcasting against
    ``u.shape[:-1]`` (``(H,)`` or ``(channels, H)``). A length-L kernel gives the causal
    convolution ``y_t = sum_{s <= t} K_s u_{t-s}``. A length-2L kernel is a bidirectional
    one built by the caller as ``pad(K0, (0, L)) + pad(flip(K1), (L, 0))``: its second half
    wraps around and adds the anti-causal part ``sum_{m=1}^{L-1} K1_{m-1} u_{t+m}``.

    ``D u`` is the convolution with ``D`` at lag 0, so when ``D`` broadcasts against
    ``K.shape[:-1]`` (one D per kernel, as in S4D) it is added to ``K[..., 0]`` and costs
    no pass over ``u`` (forward or backward); otherwise it is added to ``y``.
    ``keep_spectrum``: keep ``rfft(u)`` for the backward pass (one transform fewer there,
    twice the memory of ``u`` kept) instead of ``u`` itself (see ``_FFTConv``).
    """
    L = _check_conv(u, K)
    if D is not None and _broadcasts_into(D.shape, K.shape[:-1]):
        K = torch.cat([K[..., :1] + D[..., None].to(K.dtype), K[..., 1:]], dim=-1)  # D at lag 0
        D = None
    if torch._C._are_functorch_transforms_active():  # torch.func (jacrev, vmap): plain ops
        y = _fft_conv_plain(u, K)
    else:
        y = _FFTConv.apply(u, K, bool(keep_spectrum))  # (b, H, L)
    if D is not None:
        y = y + D[..., None] * u
    return y


def _broadcasts_into(shape: torch.Size, target: torch.Size) -> bool:
    """Whether a tensor of ``shape`` broadcasts to ``target`` without enlarging it."""
    try:
        return torch.broadcast_shapes(shape, target) == target
    except RuntimeError:
        return False


def _fft_conv_plain(u: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """The convolution in plain differentiable ops (autograd keeps both transforms)."""
    L = u.shape[-1]
    u_f = torch.fft.rfft(u, n=2 * L)  # (b, H, L+1)
    K_f = torch.fft.rfft(K, n=2 * L)  # (H, L+1)
    return torch.fft.irfft(u_f * K_f, n=2 * L)[..., :L]  # (b, H, L)


_PADDED = threading.local()  # per thread: one zero-padded buffer, see _rfft_padded


PADDED_BUFFER_MAX_BYTES = 1 << 28  # larger transforms pad afresh (the buffer outlives the call)


def _rfft_padded(x: torch.Tensor) -> torch.Tensor:
    """``rfft(x, n=2L)`` of ``x`` ``(..., L)``. On the CPU through a kept ``(..., 2L)``
    buffer whose right half stays zero: ``rfft(x, n)`` pads into a fresh buffer each time
    (a page-faulting allocation, a fill and a copy, about as long as the transform at
    L = 256); here only the copy into the left half remains. One buffer per thread, of the
    last shape used (the forward and backward transforms of a layer share it), at most
    ``PADDED_BUFFER_MAX_BYTES``; elsewhere (CUDA has a caching allocator) plain ``rfft``."""
    L = x.shape[-1]
    shape = (*x.shape[:-1], 2 * L)
    if (x.device.type != "cpu" or x.is_complex()
            or math.prod(shape) * x.element_size() > PADDED_BUFFER_MAX_BYTES):
        return torch.fft.rfft(x, n=2 * L)
    buf = getattr(_PADDED, "buf", None)
    if buf is None or buf.shape != shape or buf.dtype != x.dtype:
        _PADDED.buf = None  # free the old one first
        buf = _PADDED.buf = x.new_zeros(shape)
    buf[..., :L].copy_(x)
    return torch.fft.rfft(buf)


class _FFTConv(torch.autograd.Function):
    """``irfft(rfft(u, 2L) rfft(K, 2L))[..., :L]`` with a hand-written backward. With
    ``U = rfft(u, 2L)``, ``K_f = rfft(K, 2L)`` and ``G = rfft(g, 2L)``:

        du = irfft(sum G conj(K_f))[..., :L],    dK = irfft(sum G conj(U))[..., :len(K)]

    (cross-correlations), each sum over the dimensions its input was broadcast in, taken in
    the frequency domain before the one inverse transform it needs: ``dK`` costs one
    transform of K's size, not one of the batch's (the transforms are linear, so this is
    the same up to rounding). It keeps ``K_f`` (small) and either ``u`` (``keep_spectrum``
    False: ``U`` is recomputed in the backward pass) or ``conj(U)`` (twice the size of
    ``u``, one transform fewer), never autograd's copies of both spectra and the product.
    The products run in place where the result has the buffer's shape.
    """

    @staticmethod
    def forward(ctx, u, K, keep_spectrum=False):
        L = u.shape[-1]
        U = _rfft_padded(u)  # (b, H, L+1)
        K_f = torch.fft.rfft(K, n=2 * L)  # (H, L+1)
        if not keep_spectrum and torch.broadcast_shapes(U.shape, K_f.shape) == U.shape:
            Y = U.mul_(K_f)  # U is not needed again
        else:
            Y = U * K_f
            if keep_spectrum:  # the backward reads conj(U): conjugate in place now (a
                U.conj_physical_()  # multiplication by a conj view copies it first)
        full = torch.fft.irfft(Y, n=2 * L)  # (b, H, 2L)
        ctx.save_for_backward(U if keep_spectrum else u, K_f)
        ctx.keep_spectrum, ctx.L, ctx.u_shape, ctx.K_len = keep_spectrum, L, u.shape, K.shape[-1]
        return full[..., :L].contiguous()  # (b, H, L); frees the 2L buffer

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        saved, K_f = ctx.saved_tensors
        L, n = ctx.L, 2 * ctx.L
        G = _rfft_padded(g)  # (b, H, L+1)
        du = dK = None
        if ctx.needs_input_grad[1]:
            if ctx.keep_spectrum:  # conj(U), kept (not overwritten: retain_graph works)
                dK_f = (G * saved).sum_to_size(K_f.shape)  # summed over the batch: (H, L+1)
            else:  # recomputed here, so the product can overwrite it where shapes allow
                Uc = _rfft_padded(saved).conj_physical_()
                in_place = Uc.shape == torch.broadcast_shapes(Uc.shape, G.shape)
                dK_f = (Uc.mul_(G) if in_place else G * Uc).sum_to_size(K_f.shape)
            dK = torch.fft.irfft(dK_f, n=n)[..., :ctx.K_len].contiguous()
        if ctx.needs_input_grad[0]:
            dU = G.mul_(K_f.conj()) if G.shape == torch.broadcast_shapes(G.shape, K_f.shape) \
                else G * K_f.conj()
            dU = dU.sum_to_size(ctx.u_shape[:-1] + (L + 1,))
            du = torch.fft.irfft(dU, n=n)[..., :L].contiguous()
        return du, dK, None


def causal_conv_ref(u: torch.Tensor, K: torch.Tensor, D: torch.Tensor | None = None
                    ) -> torch.Tensor:
    """Plain O(L^2) causal convolution ``y_t = sum_{s <= t} K_s u_{t-s} + D u_t`` (a Toeplitz
    matrix product); ``K`` of length L, shapes as ``fft_conv``."""
    L = u.shape[-1]
    if K.shape[-1] != L:
        raise ValueError(f"K must have length L={L}, got {K.shape[-1]}")
    t = torch.arange(L, device=u.device)
    lag = t[:, None] - t[None, :]  # (L, L): t - s
    T = K[..., lag.clamp(min=0)] * (lag >= 0).to(K.dtype)  # (H, L, L), T[t, s] = K[t - s]
    y = (T @ u[..., None])[..., 0]  # (b, H, L)
    if D is not None:
        y = y + D[..., None] * u
    return y


def recurrence_ref(Lambda: torch.Tensor, dt: torch.Tensor, B: torch.Tensor | None,
                   C: torch.Tensor, D: torch.Tensor | None, u: torch.Tensor,
                   method: str = "zoh") -> torch.Tensor:
    """The unrolled recurrence ``h_t = A_bar h_{t-1} + B_bar B u_t``, ``y_t = 2 Re(C h_t) + D u_t``.

    ``Lambda``, ``B`` (None: ones), ``C``: complex ``(H, N/2)``; ``dt``, ``D`` (None: 0):
    ``(H,)``; ``u``: ``(b, H, L)`` real. Returns ``y`` ``(b, H, L)``. A_bar and B_bar are
    computed here from their definitions, independently of ``discretize_diag``.
    """
    _check_method(method)
    dtA = dt[:, None] * Lambda  # (H, N/2)
    if method == "zoh":
        A_bar = torch.exp(dtA)
        B_bar = (A_bar - 1) / Lambda
    else:
        A_bar = (1 + dtA / 2) / (1 - dtA / 2)
        B_bar = dt[:, None] / (1 - dtA / 2)
    if B is not None:
        B_bar = B_bar * B
    h = torch.zeros((u.shape[0], *Lambda.shape), dtype=A_bar.dtype, device=u.device)  # (b, H, N/2)
    ys = []
    for u_t in u.unbind(-1):  # (b, H)
        h = A_bar * h + B_bar * u_t[..., None]
        y_t = 2 * (C * h).sum(-1).real  # (b, H)
        ys.append(y_t if D is None else y_t + D * u_t)
    return torch.stack(ys, -1)  # (b, H, L)
