"""S4D with a learned or frozen ("reservoir") spectrum, for Long Range Arena (paper 2).

Reference ``paper2-memory-s4.md`` sections 6-8; code after ``state-spaces/s4`` (``simple``
branch: ``standalone/s4d.py``, the S4 layer's channels and bidirectional kernel,
``block.py``, ``model.py``, ``decoders.py``).

Kernel (``S4DKernel``), per channel h = 1..H, n = 1..N/2 (one member per conjugate pair)::

    Lambda[h, n] = -exp(log_neg_real[h, n]) + i imag[h, n]      (Re < 0 by construction)
    dt[h] = exp(log_dt[h])                                      (log-uniform in [dt_min, dt_max])
    K[c, h, l] = 2 Re sum_n C[c, h, n] B_bar[h, n] A_bar[h, n]^l      (B folded into C, B = 1)

The constrained values are stored unconstrained and rebuilt in one place, the properties
``Lambda`` and ``dt``. With ``freeze_spectrum=True`` the three spectrum tensors
(``log_dt``, ``log_neg_real``, ``imag``) are buffers, not Parameters (``state-spaces/s4``'s
rule "lr 0 becomes a buffer"), so no optimiser ever sees them; ``C``, ``D``, the output
linear, norms, encoder and decoder still train.

Layer (``S4DLayer``), input and output ``(b, L, H)`` (``forward_cf``: ``(b, H, L)``)::

    y = FFTconv(u, K) + D u      (bidirectional: K = pad(K0, (0, L)) + pad(flip(K1), (L, 0));
                                  D u as D at the kernel's lag 0, one transform of u for both)
    y = Linear(dropout(GELU(y))), then GLU                      H * channels -> 2H -> H

Backbone (``S4DModel``): encoder (Embedding for tokens, Linear for real-valued inputs),
``n_layers`` residual blocks ``x + dropout(layer(norm(x)))`` (pre-norm, then a final norm)
or ``norm(x + dropout(layer(x)))`` (post-norm), decoder (mean over the valid positions, or
the last one), Linear(H, n_classes).

Layout. Between the encoder and the decoder the model keeps its activations channels-first,
``(b, H, L)``, the layout of the FFTs (``forward_cf`` of the layer and the norms): BatchNorm1d
reads it as it is, LayerNorm(H) normalises over dimension 1 without transposing
(``sst_core.ops.channels_first.layer_norm_channels``), the output linear is one batched
matrix product ``(2H, H) @ (H, L)`` per sequence and the GLU splits dimension 1. Nothing is
transposed inside the blocks (on the CPU a BatchNorm over a transposed view alone took about
as long as the rest of a layer). ``S4DLayer.forward`` and ``hidden_states`` still read and
return ``(b, L, H)`` (as transposed views). The parameters, their initialisation and the
random numbers dropout draws are those of the ``(b, L, H)`` formulation, so a seed gives the
same training run up to float rounding. (AdamW's first steps scale a gradient that is zero in
exact arithmetic, e.g. that of the encoder bias just before a BatchNorm, to +-lr whatever its
rounding noise, and eval-mode BatchNorm then sees the shift: evaluation metrics of short
runs can move by more than rounding, as with another thread count.)

Helpers: ``frozen_share`` (share of parameter entries that are frozen), ``optimizer_groups``
(AdamW groups with the spectrum in its own group, weight decay 0), ``memory_functions`` and
``supremum_memory_function`` (the per-layer "supremum MF" of reference section 8.3).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from sst_core.ops.channels_first import layer_norm_channels
from sst_core.ops.ssm_kernel import (
    METHODS,
    discretize_diag,
    fft_conv,
    vandermonde_kernel,
)
from sst_core.theory.memory import (
    INIT_KINDS,
    discretize,
    init_Lambda,
    memory_function,
    with_conjugates,
)

__all__ = ["S4DKernel", "S4DLayer", "S4DModel", "frozen_share", "optimizer_groups",
           "memory_functions", "channel_spectra", "supremum_memory_function", "INIT_KINDS",
           "DISCS", "NORMS", "DECODERS", "ENCODERS", "ACTIVATIONS", "POSTACTS",
           "SPECTRUM_NAMES", "REAL_MAX"]

DISCS = METHODS  # ("zoh", "bilinear")
NORMS = ("batch", "layer")
DECODERS = ("pool", "last", "retrieval")
ENCODERS = ("embedding", "linear")
ACTIVATIONS = ("gelu", "relu", "silu", "identity")
POSTACTS = ("glu", None)
SPECTRUM_NAMES = ("log_dt", "log_neg_real", "imag")  # frozen together, never weight-decayed
# Largest real part a stored eigenvalue may have. Re Lambda = -exp(log_neg_real) cannot be
# 0, so an eigenvalue given with Re = 0 exactly (a pure oscillator, |A_bar| = 1) is stored
# with Re = REAL_MAX instead, as is any Re in (REAL_MAX, 0): a decay time of 1e4 in
# continuous time, i.e. at least 1e5 steps at dt <= 0.1, longer than any LRA sequence, so
# the memory barely changes while log_neg_real stays finite (log 1e-4 = -9.2). None of the
# five built-in kinds has such eigenvalues (their Re is <= -1/2, or log|mu|/dt < 0 for
# 'random'); only explicitly passed spectra can. Re > 0 (unstable) raises ValueError.
REAL_MAX = -1e-4


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name}={value!r} must be an integer >= {minimum}")
    return int(value)


def _check_name(what: str, value: Any, allowed: Sequence[Any]) -> None:
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r}; allowed: {', '.join(map(repr, allowed))}")


def _check_N(N: Any) -> int:
    if isinstance(N, bool) or not isinstance(N, (int, np.integer)) or N < 2 or N % 2:
        raise ValueError(f"N={N!r} must be an even integer >= 2 (the real state size)")
    return int(N)


def _initial_Lambda(init: Any, H: int, N: int, dt: np.ndarray, seed: int) -> np.ndarray:
    """Continuous-time eigenvalues (H, N/2), complex128, for a kind name or an explicit array.

    Named kinds come from ``sst_core.theory.memory.init_Lambda``, the same for every
    channel, except ``random``: each channel draws its own spectrum (seed derived from
    ``seed``) at its own initial ``dt``, so that every channel's discrete spectrum
    ``mu = exp(dt_h Lambda_h)`` is uniform in the unit disk at initialisation (the paper's
    "uniformly distributed", |mu| clearly below 1).
    """
    half = N // 2
    if isinstance(init, str):
        _check_name("init kind", init, INIT_KINDS)
        if init == "random":
            seeds = np.random.default_rng(seed).integers(2 ** 31, size=H)
            return np.stack([init_Lambda("random", N, seed=int(s), dt=float(d))
                             for s, d in zip(seeds, dt)])  # (H, N/2)
        return np.broadcast_to(init_Lambda(init, N), (H, half)).copy()  # (H, N/2)
    Lambda = np.asarray(init.detach().cpu() if isinstance(init, torch.Tensor) else init,
                        dtype=complex)
    if Lambda.shape not in ((half,), (H, half)):
        raise ValueError(f"an explicit init must have shape (N/2,)={(half,)} or (H, N/2)="
                         f"{(H, half)}, got {Lambda.shape}")
    if not np.all(np.isfinite(Lambda)):
        bad = Lambda[~np.isfinite(Lambda)].ravel()[0]
        raise ValueError(f"eigenvalue Lambda={bad} is not finite")
    if np.any(Lambda.real > 0):
        bad = Lambda[Lambda.real > 0].ravel()[0]
        raise ValueError(f"unstable eigenvalue Lambda={bad} (Re > 0); S4D needs Re Lambda <= 0")
    return np.broadcast_to(Lambda, (H, half)).copy()


class S4DKernel(nn.Module):
    """The S4D convolution kernel: ``forward(L) -> K`` ``(H, L)``, or ``(channels, H, L)``.

    ``init``: a kind of ``INIT_KINDS`` (inv, lin, real, random, step; see
    ``sst_core.theory.memory.init_Lambda``) or an explicit array of eigenvalues ``(N/2,)``
    or ``(H, N/2)`` with Re <= 0. ``disc``: ``zoh`` or ``bilinear``. ``channels``: None
    gives ``C`` ``(H, N/2)`` and ``K`` ``(H, L)``; an integer gives that many kernels
    sharing ``Lambda`` and ``dt`` (``C`` ``(channels, H, N/2)``, ``K`` ``(channels, H, L)``).
    ``seed``: generator of the initial ``dt``, ``C`` and the ``random`` spectrum (None:
    torch's global generator).

    Parameters (or buffers when ``freeze_spectrum``): ``log_dt`` (H,), ``log_neg_real``
    (H, N/2), ``imag`` (H, N/2); always a parameter: ``C``, stored as the real view
    ``(..., H, N/2, 2)`` of a complex standard normal (B = 1 is folded into C).
    """

    def __init__(self, H: int, N: int = 64, dt_min: float = 1e-3, dt_max: float = 1e-1,
                 init: Any = "inv", disc: str = "zoh", freeze_spectrum: bool = False,
                 seed: int | None = None, channels: int | None = None):
        super().__init__()
        H, N = _check_int("H", H, 1), _check_N(N)
        _check_name("discretisation", disc, DISCS)
        if channels is not None:
            channels = _check_int("channels", channels, 1)
        if not (0 < dt_min <= dt_max):
            raise ValueError(f"need 0 < dt_min <= dt_max, got dt_min={dt_min!r}, dt_max={dt_max!r}")
        self.H, self.N, self.disc, self.channels = H, N, disc, channels
        self.freeze_spectrum = bool(freeze_spectrum)
        g = torch.Generator().manual_seed(seed) if seed is not None else None
        lo, hi = math.log(dt_min), math.log(dt_max)
        log_dt = torch.rand(H, generator=g, dtype=torch.float64) * (hi - lo) + lo  # (H,)
        seed_np = seed if seed is not None else int(torch.randint(2 ** 31, (1,)))
        Lambda = _initial_Lambda(init, H, N, np.exp(log_dt.numpy()), seed_np)  # (H, N/2)
        real = np.minimum(Lambda.real, REAL_MAX)  # see REAL_MAX
        dtype = torch.get_default_dtype()
        trainable = not self.freeze_spectrum
        self._register("log_dt", log_dt.to(dtype), trainable)  # (H,)
        self._register("log_neg_real", torch.from_numpy(np.log(-real)).to(dtype), trainable)
        self._register("imag", torch.from_numpy(Lambda.imag.copy()).to(dtype), trainable)
        shape = (H, N // 2) if channels is None else (channels, H, N // 2)
        cdtype = torch.complex128 if dtype == torch.float64 else torch.complex64
        C = torch.randn(shape, generator=g, dtype=cdtype)  # (..., H, N/2)
        self.C = nn.Parameter(torch.view_as_real(C).clone())  # (..., H, N/2, 2)

    def _register(self, name: str, value: torch.Tensor, trainable: bool) -> None:
        """A Parameter, or a buffer when it must not train (its lr would be 0)."""
        if trainable:
            setattr(self, name, nn.Parameter(value))
        else:
            self.register_buffer(name, value)

    # the one place where the constrained values are rebuilt
    @property
    def dt(self) -> torch.Tensor:
        return torch.exp(self.log_dt)  # (H,)

    @property
    def Lambda(self) -> torch.Tensor:
        return torch.complex(-torch.exp(self.log_neg_real), self.imag)  # (H, N/2)

    def spectrum_tensors(self) -> dict[str, torch.Tensor]:
        """``log_dt``, ``log_neg_real``, ``imag``, whether Parameters or buffers."""
        return {name: getattr(self, name) for name in SPECTRUM_NAMES}

    def forward(self, L: int) -> torch.Tensor:
        log_A_bar, B_bar = discretize_diag(self.Lambda, self.dt, self.disc)  # (H, N/2) each
        C = torch.view_as_complex(self.C) * B_bar  # (..., H, N/2)
        return vandermonde_kernel(C, log_A_bar, L)  # (..., H, L)

    def extra_repr(self) -> str:
        return (f"H={self.H}, N={self.N}, disc={self.disc!r}, channels={self.channels}, "
                f"freeze_spectrum={self.freeze_spectrum}")


def _activation(name: str) -> nn.Module:
    _check_name("activation", name, ACTIVATIONS)
    return {"gelu": nn.GELU, "relu": nn.ReLU, "silu": nn.SiLU, "identity": nn.Identity}[name]()


class S4DLayer(nn.Module):
    """One S4D layer, ``(b, L, H) -> (b, L, H)``.

    FFT convolution with the kernel plus ``D u`` (``D`` ``(channels, H)``), activation,
    dropout (tied along the sequence, ``nn.Dropout1d``, as the reference's ``DropoutNd``),
    output linear ``H * channels -> 2H`` and GLU (``postact=None``: ``H * channels -> H``).
    ``bidirectional``: the kernel has ``2 * channels`` channels sharing ``Lambda`` and
    ``dt``; ``K = pad(K0, (0, L)) + pad(flip(K1), (L, 0))`` adds an anti-causal part.
    """

    def __init__(self, H: int, N: int = 64, *, dt_min: float = 1e-3, dt_max: float = 1e-1,
                 init: Any = "inv", disc: str = "zoh", freeze_spectrum: bool = False,
                 seed: int | None = None, bidirectional: bool = False, channels: int = 1,
                 activation: str = "gelu", postact: str | None = "glu", dropout: float = 0.0):
        super().__init__()
        channels = _check_int("channels", channels, 1)
        _check_name("postact", postact, POSTACTS)
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout={dropout!r} must be in [0, 1)")
        self.H, self.channels, self.bidirectional = H, channels, bool(bidirectional)
        self.kernel = S4DKernel(H, N, dt_min, dt_max, init=init, disc=disc,
                                freeze_spectrum=freeze_spectrum, seed=seed,
                                channels=channels * (2 if bidirectional else 1))
        self.D = nn.Parameter(torch.randn(channels, H))  # (channels, H)
        self.activation = _activation(activation)
        self.dropout = nn.Dropout1d(dropout) if dropout > 0 else nn.Identity()
        self.output_linear = nn.Linear(H * channels, 2 * H if postact == "glu" else H)
        self.postact = nn.GLU(dim=-1) if postact == "glu" else nn.Identity()

    def kernel_full(self, L: int) -> torch.Tensor:
        """The convolution kernel: ``(channels, H, L)``, or ``(channels, H, 2L)`` if bidirectional."""
        K = self.kernel(L)  # (channels * (1 + bidirectional), H, L)
        if self.bidirectional:
            K0, K1 = K.chunk(2, dim=0)  # (channels, H, L) each
            # pad(K0, (0, L)) + pad(flip(K1), (L, 0)): the two halves do not overlap
            K = torch.cat([K0, K1.flip(-1)], dim=-1)  # (channels, H, 2L)
        return K

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(b, L, H) -> (b, L, H)`` (a transposed view of :meth:`forward_cf`'s output)."""
        return self.forward_cf(x.transpose(1, 2)).transpose(1, 2)

    def forward_cf(self, u: torch.Tensor) -> torch.Tensor:
        """The layer on channels-first activations, ``(b, H, L) -> (b, H, L)``: the layout
        of the FFTs (over the last dimension), so nothing is transposed."""
        b, H, L = u.shape
        y = fft_conv(u.unsqueeze(1), self.kernel_full(L), self.D,
                     keep_spectrum=True)  # (b, channels, H, L); D u at the kernel's lag 0
        y = y.reshape(b, self.channels * H, L)  # (b, channels H, L)
        y = self.dropout(self.activation(y))  # Dropout1d: whole channels, tied along L
        W, bias = self.output_linear.weight, self.output_linear.bias  # (out, channels H), (out,)
        Wb = W.expand(b, -1, -1)  # (b, out, channels H), no copy
        z = (torch.bmm(Wb, y) if bias is None  # (b, out, L)
             else torch.baddbmm(bias[:, None].expand(b, -1, L), Wb, y))
        return F.glu(z, dim=1) if isinstance(self.postact, nn.GLU) else z  # (b, H, L)


class _Norm(nn.Module):
    """BatchNorm1d over the H channels (statistics over batch and length) or LayerNorm(H),
    on ``(b, L, H)`` (``forward``) or channels-first ``(b, H, L)`` (``forward_cf``)."""

    def __init__(self, kind: str, H: int):
        super().__init__()
        _check_name("norm", kind, NORMS)
        self.kind = kind
        self.norm = nn.BatchNorm1d(H) if kind == "batch" else nn.LayerNorm(H)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_cf(x.transpose(1, 2)).transpose(1, 2)  # (b, L, H)

    def forward_cf(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "batch":
            return self.norm(x)  # BatchNorm1d reads (b, H, L) as it is
        return layer_norm_channels(x, self.norm.weight, self.norm.bias, self.norm.eps)


def _dropout_bLH(drop: nn.Module, y: torch.Tensor) -> torch.Tensor:
    """``drop`` applied to channels-first ``y`` ``(b, H, L)`` as to its ``(b, L, H)``
    layout: the same random mask as a model in that layout draws (dropout fills its mask
    in memory order), so a seed gives the same training run in either layout."""
    if not (isinstance(drop, nn.Dropout) and drop.training and drop.p > 0):
        return y
    return drop(y.transpose(1, 2).contiguous()).transpose(1, 2)


class S4DModel(nn.Module):
    """S4D classifier for LRA: ``forward(x, lengths=None) -> logits (b, n_classes)``.

    ``d_input``: the vocabulary size for ``encoder="embedding"`` (``x``: token indices
    ``(b, L)``), or the input width for ``encoder="linear"`` (``x``: ``(b, L, d_input)``
    floats, or ``(b, L)`` when ``d_input == 1``). ``lengths`` ``(b,)``: valid lengths of
    padded sequences; ``pool`` averages over positions ``< lengths``, ``last`` reads
    position ``lengths - 1`` (default: all positions / the last one). Layer i's kernel gets
    ``seed + i`` when ``seed`` is given; the other weights come from torch's global generator.
    """

    def __init__(self, d_input: int, n_classes: int, *, H: int = 128, N: int = 64,
                 n_layers: int = 4, encoder: str = "embedding", prenorm: bool = False,
                 norm: str = "batch", decoder: str = "pool", bidirectional: bool = False,
                 init: Any = "inv", disc: str = "zoh", freeze_spectrum: bool = False,
                 dropout: float = 0.0, dt_min: float = 1e-3, dt_max: float = 1e-1,
                 activation: str = "gelu", postact: str | None = "glu",
                 seed: int | None = None):
        super().__init__()
        d_input, n_classes = _check_int("d_input", d_input, 1), _check_int("n_classes", n_classes, 1)
        H, N = _check_int("H", H, 1), _check_N(N)
        n_layers = _check_int("n_layers", n_layers, 1)
        _check_name("encoder", encoder, ENCODERS)
        _check_name("norm", norm, NORMS)
        _check_name("decoder", decoder, DECODERS)
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout={dropout!r} must be in [0, 1)")
        self.d_input, self.H, self.prenorm = d_input, H, bool(prenorm)
        self.encoder_kind, self.decoder_kind = encoder, decoder
        self.encoder = nn.Embedding(d_input, H) if encoder == "embedding" else nn.Linear(d_input, H)
        self.layers = nn.ModuleList(
            S4DLayer(H, N, dt_min=dt_min, dt_max=dt_max, init=init, disc=disc,
                     freeze_spectrum=freeze_spectrum,
                     seed=None if seed is None else seed + i, bidirectional=bidirectional,
                     activation=activation, postact=postact, dropout=dropout)
            for i in range(n_layers))
        self.norms = nn.ModuleList(_Norm(norm, H) for _ in range(n_layers))
        self.dropouts = nn.ModuleList(nn.Dropout(dropout) if dropout > 0 else nn.Identity()
                                      for _ in range(n_layers))
        self.final_norm = _Norm(norm, H) if self.prenorm else nn.Identity()
        if decoder == "retrieval":
            # AAN (state-spaces/s4 RetrievalDecoder): pool each document, then an MLP on
            # [z1, z2, z1 - z2, z1 * z2]
            self.decoder = nn.Sequential(nn.Linear(4 * H, H), nn.GELU(), nn.Linear(H, n_classes))
        else:
            self.decoder = nn.Linear(H, n_classes)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        if self.encoder_kind == "linear" and x.dim() == 2:
            if self.d_input != 1:
                raise ValueError(f"x of shape {tuple(x.shape)} needs d_input=1, got {self.d_input}")
            x = x.unsqueeze(-1)  # (b, L, 1)
        return self.encoder(x)  # (b, L, H)

    def _encode_cf(self, x: torch.Tensor) -> torch.Tensor:
        """The encoder's output channels-first, ``(b, H, L)``; a linear encoder of one input
        (pixels) writes it directly as an outer product."""
        if self.encoder_kind == "linear" and self.d_input == 1 and x.dim() in (2, 3):
            x = x if x.dim() == 2 else x[..., 0]  # (b, L)
            enc = self.encoder  # h[b, h, l] = w[h] x[b, l] + bias[h]
            return torch.addcmul(enc.bias[None, :, None], enc.weight[None, :, :1], x[:, None, :])
        return self.encode(x).transpose(1, 2).contiguous()  # (b, H, L)

    def hidden_states(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Every block's output ``(b, L, H)``; the last one after the final norm (if any)."""
        return [h.transpose(1, 2) for h in self._hidden_cf(x)]

    def _hidden_cf(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Every block's output, channels-first ``(b, H, L)`` (the layout of the layers)."""
        h = self._encode_cf(x)  # (b, H, L)
        out = []
        for layer, norm, drop in zip(self.layers, self.norms, self.dropouts):
            if self.prenorm:
                h = h + _dropout_bLH(drop, layer.forward_cf(norm.forward_cf(h)))
            else:
                h = norm.forward_cf(h + _dropout_bLH(drop, layer.forward_cf(h)))
            out.append(h)
        if self.prenorm:
            out[-1] = self.final_norm.forward_cf(out[-1])
        return out

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        if self.decoder_kind == "retrieval":
            return self._retrieval(x, lengths)
        h = self._hidden_cf(x)[-1]  # (b, H, L)
        b, _, L = h.shape
        if lengths is not None:
            lengths = torch.as_tensor(lengths, device=h.device).long()
            if lengths.shape != (b,) or lengths.min() < 1 or lengths.max() > L:
                raise ValueError(f"lengths must have shape ({b},) with values in 1..{L}, got "
                                 f"{lengths.tolist()}")
        if self.decoder_kind == "pool":
            z = self._mean(h, lengths)
        else:
            z = h[..., -1] if lengths is None else h[torch.arange(b, device=h.device), :, lengths - 1]
        return self.decoder(z)  # (b, n_classes)

    @staticmethod
    def _mean(h: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
        """Mean over the valid positions of ``h`` ``(b, H, L)``: ``(b, H)``."""
        if lengths is None:
            return h.mean(-1)
        L = h.shape[-1]
        mask = (torch.arange(L, device=h.device) < lengths[:, None]).to(h.dtype)  # (b, L)
        return torch.bmm(h, mask[..., None])[..., 0] / lengths[:, None].to(h.dtype)

    def _pool(self, x: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
        return self._mean(self._hidden_cf(x)[-1], lengths)  # (b, H)

    def _retrieval(self, x: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
        """``x`` ``(b, 2, L)``: two documents per example, ``lengths`` ``(b, 2)``."""
        if x.dim() != 3 or x.shape[1] != 2:
            raise ValueError(f"the retrieval decoder reads pairs: x must have shape (b, 2, L), "
                             f"got {tuple(x.shape)}")
        b, _, L = x.shape
        if lengths is not None:
            lengths = torch.as_tensor(lengths, device=x.device).long()
            if lengths.shape != (b, 2) or lengths.min() < 1 or lengths.max() > L:
                raise ValueError(f"lengths must have shape ({b}, 2) with values in 1..{L}")
            lengths = lengths.reshape(2 * b)
        z = self._pool(x.reshape(2 * b, L), lengths).reshape(b, 2, -1)  # (b, 2, H)
        z1, z2 = z[:, 0], z[:, 1]
        return self.decoder(torch.cat([z1, z2, z1 - z2, z1 * z2], dim=-1))  # (b, n_classes)

    @property
    def frozen_share(self) -> float:
        return frozen_share(self)


# -- training helpers ------------------------------------------------------------------

def _kernels(model: nn.Module) -> list[S4DKernel]:
    return [m for m in model.modules() if isinstance(m, S4DKernel)]


def frozen_share(model: nn.Module) -> float:
    """Frozen entries / all entries, counting every parameter plus the spectrum buffers of
    frozen kernels. Frozen: those buffers and any parameter with ``requires_grad=False``
    (a spectrum kept as a Parameter with lr 0, as the ``simple`` branch does, counts as
    trainable here: exclude it with ``requires_grad_(False)`` or ``freeze_spectrum``)."""
    buffers = sum(t.numel() for k in _kernels(model) if k.freeze_spectrum
                  for t in k.spectrum_tensors().values())
    params = list(model.parameters())
    frozen = buffers + sum(p.numel() for p in params if not p.requires_grad)
    total = buffers + sum(p.numel() for p in params)
    return frozen / total if total else 0.0


def optimizer_groups(model: nn.Module, lr: float, weight_decay: float,
                     ssm_lr: float | None = None) -> list[dict[str, Any]]:
    """AdamW parameter groups as in ``state-spaces/s4``.

    - ``"ssm"``: the trainable spectrum Parameters (``log_dt``, ``log_neg_real``, ``imag``)
      with ``lr=ssm_lr`` (default ``lr``) and weight decay 0 (absent when every kernel is
      frozen: buffers are in no group);
    - ``"main"``: every other trainable parameter, ``lr`` and ``weight_decay``. As in the
      reference's ``train.py``, that includes norms, biases and ``C``/``D`` (no exemption).
    """
    ssm_ids = {id(t) for k in _kernels(model) for t in k.spectrum_tensors().values()
               if isinstance(t, nn.Parameter)}
    main, ssm = [], []
    for p in model.parameters():
        if p.requires_grad:
            (ssm if id(p) in ssm_ids else main).append(p)
    groups = [{"name": "main", "params": main, "lr": lr, "weight_decay": weight_decay}]
    if ssm:
        groups.append({"name": "ssm", "params": ssm, "lr": lr if ssm_lr is None else ssm_lr,
                       "weight_decay": 0.0})
    return groups


# -- memory ------------------------------------------------------------------------------

def memory_functions(layer_or_kernel: nn.Module, T: int) -> np.ndarray:
    """``M[h, tau]``, ``(H, T)``: the memory function of channel h's discrete spectrum
    ``mu = discretize(with_conjugates(Lambda_h), dt_h, disc)`` (ZOH: ``exp(dt_h Lambda_h)``),
    over a window of T delays (``sst_core.theory.memory.memory_function``; about 0.4-2 s per
    channel at N=64, T=4096)."""
    kernel = layer_or_kernel.kernel if isinstance(layer_or_kernel, S4DLayer) else layer_or_kernel
    if not isinstance(kernel, S4DKernel):
        raise ValueError(f"expected an S4DLayer or S4DKernel, got {type(layer_or_kernel).__name__}")
    with torch.no_grad():
        Lambda = kernel.Lambda.detach().cpu().to(torch.complex128).numpy()  # (H, N/2)
        dt = kernel.dt.detach().cpu().double().numpy()  # (H,)
    out = []
    for Lambda_h, dt_h in zip(Lambda, dt):
        mu, _ = discretize(with_conjugates(Lambda_h), float(dt_h), kernel.disc)  # (N,)
        out.append(memory_function(mu, T))
    return np.stack(out)  # (H, T)


def channel_spectra(layer: nn.Module) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per channel h of an S4D layer, its discrete spectrum and input factors ``(mu,
    B_bar)``, each ``(N,)``: ``discretize(with_conjugates(Lambda_h), dt_h, disc)`` (B = 1 is
    folded into C, so ``B_bar`` is the state's input gain)."""
    if not isinstance(layer, S4DLayer):
        raise ValueError(f"expected an S4DLayer, got {type(layer).__name__}")
    kernel = layer.kernel
    with torch.no_grad():
        Lambda = kernel.Lambda.detach().cpu().to(torch.complex128).numpy()  # (H, N/2)
        dt = kernel.dt.detach().cpu().double().numpy()  # (H,)
    return [discretize(with_conjugates(L_h), float(dt_h), kernel.disc)
            for L_h, dt_h in zip(Lambda, dt)]


def supremum_memory_function(model: nn.Module, T: int) -> list[np.ndarray]:
    """Per S4D layer (in module order), ``M_sup[tau] = max_h M_h[tau]``, each ``(T,)``."""
    layers = [m for m in model.modules() if isinstance(m, S4DLayer)]
    return [memory_functions(layer, T).max(0) for layer in layers]
