"""Ops on channels-first activations ``(b, C, L)`` (the layout of the S4D layers, whose FFTs
run over the last dimension), with a hand-written backward beside a plain reference.

- ``layer_norm_channels(x, weight, bias, eps)``: LayerNorm over the channel dimension 1 of
  ``(b, C, L)``, i.e. ``LayerNorm(C)`` of every position, without transposing to
  ``(b, L, C)`` and back (2 copies forward, 2 backward, and consumers that read transposed
  views), ``xhat`` and ``rstd`` kept; ``layer_norm_channels_ref`` is ``F.layer_norm``
  through transposes.
"""
from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable
from torch.nn import functional as F

__all__ = ["layer_norm_channels", "layer_norm_channels_ref"]


def layer_norm_channels_ref(x: torch.Tensor, weight: torch.Tensor | None,
                            bias: torch.Tensor | None, eps: float = 1e-5) -> torch.Tensor:
    """``LayerNorm(C)`` of every position of ``x`` ``(b, C, L)``, through transposes."""
    C = x.shape[1]
    return F.layer_norm(x.transpose(1, 2), (C,), weight, bias, eps).transpose(1, 2)


def layer_norm_channels(x: torch.Tensor, weight: torch.Tensor | None,
                        bias: torch.Tensor | None, eps: float = 1e-5) -> torch.Tensor:
    """LayerNorm over dimension 1 of ``x`` ``(b, C, L)`` (statistics over the C channels of
    each position, biased variance, ``weight`` and ``bias`` ``(C,)`` or None), the output
    ``(b, C, L)`` contiguous. Same results as ``layer_norm_channels_ref``."""
    if x.dim() != 3:
        raise ValueError(f"x must have shape (b, C, L), got {tuple(x.shape)}")
    C = x.shape[1]
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.shape != (C,):
            raise ValueError(f"{name} must have shape ({C},), got {tuple(t.shape)}")
    if torch._C._are_functorch_transforms_active():
        return layer_norm_channels_ref(x, weight, bias, eps)
    return _LayerNormChannels.apply(x, weight, bias, eps)


class _LayerNormChannels(torch.autograd.Function):
    """Forward: ``xhat = (x - mean) rstd`` (statistics over dim 1), ``y = xhat w + b``.
    Keeps ``xhat`` and ``rstd`` (b, 1, L). Backward, ``gw = g w``:
    ``dx = rstd (gw - mean_C(gw) - xhat mean_C(gw xhat))``, ``dw = sum g xhat``,
    ``db = sum g``; the channel means of ``g w`` are matrix-vector products with ``w``."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        # (torch.var_mean over a middle dimension is about 10x slower than these passes)
        xhat = x - x.mean(1, keepdim=True)  # (b, C, L), centred
        rstd = xhat.square().mean(1, keepdim=True).add_(eps).rsqrt_()  # (b, 1, L)
        xhat.mul_(rstd)
        if weight is None:
            y = xhat.clone() if bias is None else xhat + bias[:, None]
        elif bias is None:
            y = xhat * weight[:, None]
        else:
            y = torch.addcmul(bias[:, None], xhat, weight[:, None])
        ctx.save_for_backward(xhat, rstd, weight)
        ctx.has_bias = bias is not None
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        xhat, rstd, weight = ctx.saved_tensors
        C = xhat.shape[1]
        dx = dw = db = None
        gx = g * xhat  # (b, C, L)
        if ctx.needs_input_grad[0]:
            if weight is None:
                gw = g.clone()
                m1 = g.mean(1, keepdim=True)  # (b, 1, L)
                m2 = gx.mean(1, keepdim=True)
            else:
                w = weight.expand(g.shape[0], 1, C)  # (b, 1, C), no copy
                gw = g * weight[:, None]
                m1 = torch.bmm(w, g).div_(C)  # (b, 1, L): mean_C(g w)
                m2 = torch.bmm(w, gx).div_(C)  # mean_C(g w xhat)
            dx = gw.sub_(m1).addcmul_(xhat, m2, value=-1).mul_(rstd)
        if weight is not None and ctx.needs_input_grad[1]:
            dw = gx.sum((0, 2))
        if ctx.has_bias and ctx.needs_input_grad[2]:
            db = g.sum((0, 2))
        return dx, dw, db, None
