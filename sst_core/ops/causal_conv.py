"""The causal depthwise conv of the Mamba block and its SiLU, fused into one pass each way.

:class:`~sst_core.models.selective.MambaLayer` computes, for a batch of b sequences of
length L and E channels, before :func:`~sst_core.ops.selective_scan.selective_scan`::

    x_t = SiLU(bias + sum_i w[:, i] xe_{t+i}),   xe = [window (K - 1 steps); x_in]

(the causal depthwise conv of width K, whose window holds the K - 1 inputs before the
sequence, oldest first; zero when omitted). As torch operations (the layer's
:class:`~sst_core.models.selective.CausalConv`) that is about ten passes over ``(b, L, E)``
tensors forward and twenty backward. ``conv_silu`` runs it in one pass of the C loops of
:mod:`sst_core.ops.native_selective` forward and one backward (the pre-activation is
recomputed there, not stored), on the CPU for float32 and float64 where the library is
built; elsewhere, under ``SST_NATIVE=0`` or :func:`sst_core.ops.native.disabled`, and
under the ``torch.func`` transforms other than ``vmap``, the torch formula
``conv_silu_ref`` runs (CausalConv's).

The parameters may carry a leading model dimension G dividing the batch: ``w`` (G, E, K),
``bias`` (G, E), model g acting on the g-th of G equal consecutive blocks of samples, as
in the selective scan; the ``vmap`` rule folds K stacked models into the batch that way.
"""
from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable
from torch.nn import functional as F

from sst_core.ops import native_selective
from sst_core.ops.scan import only_vmap
from sst_core.ops.selective_scan import fold_batch, fold_models

__all__ = ["conv_silu", "conv_silu_ref"]


def _models(p: torch.Tensor, base: int) -> int:
    """G: the leading model dimension of a parameter whose one-model shape has ``base`` dims."""
    return p.shape[0] if p.dim() > base else 1


def conv_silu_ref(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                  window: torch.Tensor | None = None) -> torch.Tensor:
    """``SiLU(causal depthwise conv)`` of x (b, L, E) after ``window`` (b, (K - 1) E) or
    zeros; weight (E, K) or (G, E, K), bias (E) or (G, E). Returns (b, L, E)."""
    b, L, E = x.shape
    K = weight.shape[-1]
    G = _models(weight, 2)
    if window is None:
        window = x.new_zeros(b, (K - 1) * E)
    xe = torch.cat([window.view(b, K - 1, E), x], 1).view(G, b // G, L + K - 1, E)
    w, bias = weight.reshape(G, 1, 1, E, K), bias.reshape(G, 1, 1, E)
    c = bias + sum(w[..., i] * xe[:, :, i:i + L] for i in range(K))  # as CausalConv._conv
    return F.silu(c).view(b, L, E)


def _use_c(*ts: torch.Tensor | None) -> bool:
    """CPU, one float32 or float64 dtype, the library built, and no transform but vmap."""
    t = ts[0]
    if t.device.type != "cpu" or t.dtype not in native_selective.SUFFIX:
        return False
    if any(s is not None and s.dtype != t.dtype for s in ts):
        return False
    if torch._C._are_functorch_transforms_active() and not only_vmap():
        return False
    return native_selective.library() is not None


def _rows(t: torch.Tensor) -> torch.Tensor:
    """t with contiguous channels (a copy only if they are not)."""
    return t if t.stride(-1) == 1 else t.contiguous()


def conv_silu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
              window: torch.Tensor | None = None) -> torch.Tensor:
    """:func:`conv_silu_ref` in one pass each way (module docstring); x may be a view
    whose channels are contiguous (the input projection's first half)."""
    if not _use_c(x, weight, bias, window):
        return conv_silu_ref(x, weight, bias, window)
    return _ConvSiLU.apply(x, weight, bias, window)


class _ConvSiLU(torch.autograd.Function):
    """Forward and backward in C (:func:`sst_core.ops.native_selective.conv_forward`)."""

    @staticmethod
    def forward(x, weight, bias, window):
        b, L, E = x.shape
        G = _models(weight, 2)
        wT = weight.reshape(G, E, -1).transpose(1, 2).contiguous()  # (G, K, E)
        out = x.new_empty(b, L, E)
        native_selective.conv_forward(native_selective.library(), _rows(x),
                                      None if window is None else window.contiguous(), wT,
                                      bias.reshape(G, E).contiguous(), out)
        return out

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs[:3], inputs[3])

    @staticmethod
    def vmap(info, in_dims, x, weight, bias, window):
        K = info.batch_size
        x_, window_ = fold_batch(x, in_dims[0], K), fold_batch(window, in_dims[3], K)
        out = _ConvSiLU.apply(x_, fold_models(weight, in_dims[1], K, 2),
                              fold_models(bias, in_dims[2], K, 1), window_)
        return out.view(K, -1, *out.shape[1:]), 0

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        x, weight, bias, window = ctx.saved_tensors
        b, L, E = x.shape
        G = _models(weight, 2)
        wT = weight.reshape(G, E, -1).transpose(1, 2).contiguous()
        gx, gwin, gw, gb = native_selective.conv_backward(
            native_selective.library(), _rows(x),
            None if window is None else window.contiguous(), wT,
            bias.reshape(G, E).contiguous(), grad.contiguous(),
            window is not None and ctx.needs_input_grad[3])
        gw = gw.view(G, b // G, -1, E).sum(1).transpose(1, 2).reshape(weight.shape)
        gb = gb.view(G, b // G, E).sum(1).reshape(bias.shape)
        need = ctx.needs_input_grad
        return (gx if need[0] else None, gw if need[1] else None, gb if need[2] else None,
                gwin)
