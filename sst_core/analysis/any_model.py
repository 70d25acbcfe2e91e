"""The error-control diagnostics on anyone's model: no registry entry, no training record.

:func:`diagnose_any` takes a recurrence and a group and returns what
:func:`sst_core.analysis.error_control.diagnose` records for a trained registry tracker:
``q(t)``, ``q_sqrt(t)``, ``R``, ``M`` (readout space), ``T_cross`` for tau = 1/2 and 1,
the failure mode, ``q_U`` / ``q_U_perp``, perturbation recovery, and Theorem 1's check of
the return maps (the norms of :mod:`sst_core.analysis.return_map`, median over words,
``dim_U`` and whether the theorem applies), plus a numerical estimate of whether the
recurrence is affine (:func:`estimate_affine`). Both functions run one core,
:func:`sst_core.analysis.error_control.error_control_measures`, on held-out words of the
group's tracking task (:func:`sst_core.tasks.tracking.sample`, the book's sampler, on the
diagnostics' seed offset: the same words ``diagnose`` reads for the same group, vocabulary
and seed).

What the recurrence can be (:func:`as_tracker` wraps it in a :class:`ForeignTracker`,
the face of :mod:`sst_core.models.base` that the diagnostics read):

- a callable ``step(h, x) -> h_next``, ``h`` (b, D) float, ``x`` (b,) long token ids,
  with an initial state ``h0`` (D,) and the number of token ids ``n_tokens``. The state
  checks run a float64 copy, so the callable must compute in the dtype of ``h`` (e.g. cast
  its weights with ``W.to(h)``); an ``nn.Module`` with a ``step`` method is converted with
  the copy (and gives ``h0`` and ``n_tokens`` itself when it has ``init_state`` and
  ``n_tokens``);
- a ``torch.nn.GRU`` or ``torch.nn.LSTM`` (any ``num_layers``, forward only, batch first
  or not) with one-hot token input (``input_size == n_tokens``) or an ``embedding``
  (``nn.Embedding`` or an ``(n_tokens, input_size)`` matrix). Its state is every layer's
  ``h`` (GRU) or ``[h; c]`` (LSTM), layer by layer, zero at the start (the layout of the
  registry's ``torch_gru`` / ``torch_lstm``, so the same weights give the same numbers);
  one step runs torch's formulas (:func:`sst_core.models.torch_rnn.gru_step`,
  :func:`~sst_core.models.torch_rnn.lstm_step`) and the readout states the fused module;
- a registry model (:class:`~sst_core.models.base.SequenceModel`), taken as it is.

The readout. ``readout`` (an ``(n_classes, d)`` matrix or an ``nn.Linear``, bias unused)
is the ``W`` of q's metric, ``q = mean ||W (h - c_g)||^2 / min ||W (c_g - c_g')||^2``; it
reads the whole state (d = D) of a callable, the last layer's ``h`` of a torch RNN; the
default is the identity (q of the state itself). ``recurrent_mask`` (D,) bool marks the
entries that carry recurrent error (default: all; False on windows of past inputs, which
are never perturbed or read by the return-map checks).

No verdict on nothing. Before measuring, :func:`diagnose_any` checks its arguments (each
error names the argument as the caller wrote it and what is allowed), the sizes it would
hold (:data:`MAX_BYTES`, :data:`MAX_ROLLOUT`; raised with ``max_bytes`` / ``max_rollout``)
and the step itself on probe states (:func:`check_step`): a step that returns a
non-finite state, changes its input in place, gives different states for the same input
(random), ignores its token, or breaks the tangent (detaches ``h``, or leaves torch, so
that autograd's Jacobian-vector product disagrees with the finite difference) is a
:class:`StepError` naming what and where. After measuring, a ``q`` that is not finite at
every length is a :class:`DiagnosisUndetermined` naming the first bad step: non-finite
states (the word and step where they first appear), or too few classes among the words
(a degenerate sample). The trivial group (one element), a zero or non-finite readout and a
model not on the CPU are refused as arguments.

Theorem 1 applies to an affine recurrence of one layer. ``is_affine`` says whether the
recurrence is affine; None (the default for anything but a registry model) takes the
numerical estimate, and the result says which (``is_affine_source``).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, fields
from typing import Any, Callable

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from sst_core.analysis.diagnostics import state_trajectory, token_ids
from sst_core.analysis.error_control import check_times, error_control_measures
from sst_core.analysis.trackers import DIAG_SEED_OFFSET
from sst_core.groups import Group, get_group
from sst_core.models.base import SequenceModel
from sst_core.models.torch_rnn import gru_step, lstm_step
from sst_core.spec.configs import DiagnosticsConfig
from sst_core.tasks.tracking import sample, vocabulary

__all__ = ["StateBlock", "ForeignTracker", "TorchRNNTracker", "as_tracker", "estimate_affine",
           "diagnose_any", "check_step", "AFFINE_RTOL", "MAX_BYTES", "MAX_ROLLOUT",
           "StepError", "DiagnosisUndetermined"]

# |J(h) v - J(h') v| / |J(h) v| below this (float64) at every probe: affine (an affine
# step gives the same tangent at every state up to rounding, near 1e-16)
AFFINE_RTOL = 1e-8

DEFAULTS = {f.name: f.default for f in fields(DiagnosticsConfig)}  # diagnose's defaults

# the largest readout states diagnose_any holds (n_samples x rollout x d numbers of the
# model's dtype), and the longest rollout it steps through; raise with max_bytes= /
# max_rollout= (the states of the default 512 words x 1,000 steps x 64 features: 256 MiB)
MAX_BYTES = 4 * 2**30
MAX_ROLLOUT = 20_000

# a step's Jacobian-vector product (autograd) and its finite difference agree to this
# relative tolerance on a float64 copy (they agree to about 1e-7 for a smooth step)
TANGENT_RTOL = 1e-3

FLOAT_DTYPES = (torch.float32, torch.float64)


class StepError(ValueError):
    """The recurrence cannot be diagnosed: its step misbehaves on a probe (see
    :func:`check_step`), named with the token and the state."""


class DiagnosisUndetermined(ValueError):
    """The diagnostics would be computed on nothing (q not finite): names the first bad
    step or the argument to change."""


@dataclass(frozen=True)
class StateBlock:
    """One layer's share of the state, as the diagnostics read ``model.layers``."""

    state_size: int
    conv_state_size: int = 0


# -- input checks ----------------------------------------------------------------------------
def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _check_arguments(**given: Any) -> None:
    """diagnose_any's numeric arguments, each named as the caller wrote it."""
    rules = {"n_samples": 2, "rollout": 2, "t_train": 1, "t_ref": 1, "t0": 1,
             "perturb_steps": 1, "n_perturb": 1, "word_length": 1, "n_words": 1,
             "max_bytes": 1, "max_rollout": 2}
    for name, low in rules.items():
        v = given[name]
        if not _is_int(v) or v < low:
            raise ValueError(f"diagnose_any: {name}={v!r} is not allowed; expected an int >= "
                             f"{low}")
    seed = given["seed"]
    if not _is_int(seed) or not 0 <= seed < 2**31:
        raise ValueError(f"diagnose_any: seed={seed!r} is not allowed; expected an int in "
                         f"0..{2**31 - 1}")
    for name in ("eps", "tau"):
        v = given[name]
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                or not np.isfinite(v) or v <= 0:
            raise ValueError(f"diagnose_any: {name}={v!r} is not allowed; expected a finite "
                             "number > 0")
    if given["rollout"] > given["max_rollout"]:
        raise ValueError(f"diagnose_any: rollout={given['rollout']} is above max_rollout="
                         f"{given['max_rollout']} (each step is one call of the step per "
                         f"batch of words); pass max_rollout= to allow a longer one")


def _check_device_and_dtype(model: Any) -> None:
    """The diagnostics run on the CPU in float32 or float64: say so before anything runs."""
    tensors = [*model.parameters(), *model.buffers()]
    devices = sorted({t.device.type for t in tensors if t.device.type != "cpu"})
    if devices:
        raise ValueError(f"the model's tensors are on {', '.join(devices)}; diagnose_any "
                         "runs on the CPU (allowed: cpu; move the model with .cpu())")
    dtypes = sorted({str(t.dtype) for t in tensors if t.dtype.is_floating_point
                     and t.dtype not in FLOAT_DTYPES})
    if dtypes:
        raise ValueError(f"the model's tensors are {', '.join(dtypes)}; diagnose_any reads "
                         "torch.float32 or torch.float64 (convert with .float())")


def _as_state(h0: Any, dtype: torch.dtype | None = None) -> torch.Tensor:
    """``h0`` as a real float tensor of shape (D,)."""
    if isinstance(h0, (tuple, list)) and any(isinstance(v, (torch.Tensor, np.ndarray))
                                             for v in h0):
        raise ValueError(f"h0 is a {type(h0).__name__} of {len(h0)} arrays (an (h, c) pair?); "
                         "expected one state of shape (D,): concatenate the parts, "
                         "e.g. torch.cat([h, c]), and split them inside step(h, x)")
    try:
        h = torch.as_tensor(h0).detach().clone()
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(f"h0 must be a real array of shape (D,), got {type(h0).__name__} "
                         f"({err})") from None
    if h.is_complex():
        raise ValueError("h0 is complex; stack it as [Re; Im] (a real state of twice the size)")
    if not h.dtype.is_floating_point:
        h = h.to(dtype or torch.get_default_dtype())
    if h.ndim != 1 or h.numel() == 0:
        raise ValueError(f"h0 must have shape (D,) with D >= 1, got {tuple(h.shape)}")
    if h.device.type != "cpu":
        raise ValueError(f"h0 is on {h.device}; diagnose_any runs on the CPU (allowed: cpu)")
    if h.dtype not in FLOAT_DTYPES:
        raise ValueError(f"h0 is {h.dtype}; diagnose_any reads torch.float32 or torch.float64")
    if not torch.isfinite(h).all():
        raise ValueError(f"h0 must be finite, got {h.tolist()}")
    return h if dtype is None else h.to(dtype)


def _readout_weight(readout: Any, d: int, dtype: torch.dtype) -> torch.Tensor | None:
    """The readout as an (n_classes, d) tensor; None for the identity (never built as a
    d x d matrix)."""
    if readout is None:
        return None
    W = readout.weight if isinstance(readout, nn.Linear) else readout
    try:
        W = torch.as_tensor(np.asarray(W) if not isinstance(W, torch.Tensor) else W).detach()
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(f"readout must be an (n_classes, d) matrix or nn.Linear with d={d}, "
                         f"got {type(readout).__name__} ({err})") from None
    if W.ndim != 2 or W.shape[1] != d or W.shape[0] < 1:
        raise ValueError(f"readout must be an (n_classes, d) matrix or nn.Linear with d={d} "
                         f"(what it reads), got shape {tuple(W.shape)}")
    if W.is_complex() or not (W.dtype.is_floating_point or W.dtype in (torch.int32, torch.int64)):
        raise ValueError(f"readout must be a real matrix, got dtype {W.dtype}")
    if W.device.type != "cpu":
        raise ValueError(f"readout is on {W.device}; diagnose_any runs on the CPU (allowed: cpu)")
    bad = (~torch.isfinite(W.double())).nonzero()
    if len(bad):
        i, j = bad[0].tolist()
        raise ValueError(f"readout has {len(bad)} non-finite entries (the first: [{i}, {j}] = "
                         f"{float(W[i, j])}); q needs a finite readout")
    if not W.double().abs().max() > 0:
        raise ValueError(f"readout is zero (shape {tuple(W.shape)}): it reads nothing, so "
                         "every class looks the same and q is undefined")
    return W.to(dtype).clone()


class IdentityReadout(nn.Module):
    """The default readout ``W = I`` (d, d) without the matrix (for a state of 200,000
    entries it would be 320 GB): ``weight`` is an empty tensor that carries the dtype and
    device only, and :func:`~sst_core.analysis.error_control.error_control_measures` reads
    ``is_identity``."""

    is_identity = True

    def __init__(self, d: int, dtype: torch.dtype):
        super().__init__()
        self.in_features = self.out_features = d
        self.register_buffer("weight", torch.zeros(0, dtype=dtype))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h


# -- the face --------------------------------------------------------------------------------
class ForeignTracker(nn.Module):
    """A recurrence ``step(h, x)`` with the face the diagnostics read (see
    :mod:`sst_core.models.base`): ``step``, ``init_state``, ``state_size``,
    ``recurrent_mask``, ``layers``, ``W_out`` (the readout, bias-free), ``n_tokens``,
    ``is_affine`` (True, False or None: unknown) and ``hidden_states`` (what the readout
    reads: ``features`` of the state after every token).

    Built by :func:`as_tracker`. ``step``: the callable, or None to call ``module.step``;
    ``module``: an ``nn.Module``, registered, so ``.double()`` converts it with the rest
    (a subclass that runs the module its own way overrides :meth:`next_state`);
    ``layer_sizes``: the state per layer (one block of D by default).
    """

    def __init__(self, step: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None,
                 h0: torch.Tensor, n_tokens: int, *, readout: Any = None,
                 recurrent_mask: Any = None, is_affine: bool | None = None,
                 module: nn.Module | None = None, layer_sizes: tuple[int, ...] | None = None,
                 name: str = "foreign"):
        super().__init__()
        self.name = name
        self.module = module
        self.step_fn = step
        self.n_tokens = _positive_int("n_tokens", n_tokens)
        self.register_buffer("h0", h0)  # (D,)
        D = h0.numel()
        sizes = (D,) if layer_sizes is None else tuple(layer_sizes)
        if sum(sizes) != D:
            raise ValueError(f"layer_sizes {sizes} must add up to the state size D={D}")
        self.layers = [StateBlock(s) for s in sizes]
        if recurrent_mask is None:
            mask = torch.ones(D, dtype=torch.bool)
        else:
            mask = torch.as_tensor(np.asarray(recurrent_mask)
                                   if not isinstance(recurrent_mask, torch.Tensor)
                                   else recurrent_mask)
            if mask.dtype != torch.bool or mask.shape != (D,) or not mask.any():
                raise ValueError(f"recurrent_mask must be a bool array of shape (D,) = ({D},) "
                                 f"with at least one True, got dtype {mask.dtype}, shape "
                                 f"{tuple(mask.shape)}")
        self.register_buffer("mask", mask.clone(), persistent=False)  # (D,)
        if is_affine not in (None, True, False):
            raise ValueError(f"is_affine must be True, False or None (estimate it), "
                             f"got {is_affine!r}")
        self.is_affine = is_affine
        W = _readout_weight(readout, self.feature_size, h0.dtype)  # (n_classes, d) or None
        if W is None:
            self.W_out: nn.Module = IdentityReadout(self.feature_size, h0.dtype)
        else:
            self.W_out = nn.Linear(W.shape[1], W.shape[0], bias=False, dtype=h0.dtype)
            with torch.no_grad():
                self.W_out.weight.copy_(W)
            self.W_out.requires_grad_(False)
        self.n_classes = self.W_out.out_features

    # the face ------------------------------------------------------------------------------
    @property
    def state_size(self) -> int:
        return self.h0.numel()

    @property
    def feature_size(self) -> int:
        """Width of what the readout reads (the whole state unless a subclass says)."""
        return self.state_size

    @property
    def recurrent_mask(self) -> torch.Tensor:
        return self.mask.cpu()  # (D,)

    def features(self, h: torch.Tensor) -> torch.Tensor:
        """What the readout reads of states ``h`` (..., D): (..., d)."""
        return h

    def init_state(self, b: int) -> torch.Tensor:
        return self.h0.to(self.W_out.weight).expand(b, -1).clone()  # (b, D)

    def next_state(self, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """The recurrence itself, unchecked: the callable, or the module's ``step``."""
        return self.module.step(h, x) if self.step_fn is None else self.step_fn(h, x)

    def step(self, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Next state (b, D) after tokens ``x`` (b,), checked: a tensor of h's shape and
        dtype."""
        out = self.next_state(h, x)
        if not isinstance(out, torch.Tensor) or out.shape != h.shape:
            got = (tuple(out.shape) if isinstance(out, torch.Tensor) else
                   f"a {type(out).__module__}.{type(out).__name__}, not a torch.Tensor (compute "
                   "in torch: the checks differentiate the step)")
            raise ValueError(f"step(h, x) must return the next state of shape (b, D) = "
                             f"{tuple(h.shape)}, got {got}")
        if out.dtype != h.dtype:
            raise ValueError(f"step(h, x) returned dtype {out.dtype} for h of dtype {h.dtype}: "
                             "compute in h's dtype (e.g. W.to(h)), the checks run in float64")
        return out

    def hidden_states(self, tokens: torch.Tensor) -> list[torch.Tensor]:
        """``[features]`` (b, L, d) after every token of ``tokens`` (b, L), by ``step``."""
        return [self.features(state_trajectory(self, tokens))]  # (b, L, d)


class TorchRNNTracker(ForeignTracker):
    """A raw ``nn.GRU`` / ``nn.LSTM`` as a :class:`ForeignTracker` (module docstring)."""

    def __init__(self, rnn: nn.GRU | nn.LSTM, *, embedding: Any = None, readout: Any = None,
                 n_tokens: int | None = None, is_affine: bool | None = None):
        if not isinstance(rnn, (nn.GRU, nn.LSTM)):
            raise ValueError(f"expected an nn.GRU or nn.LSTM, got {type(rnn).__name__}")
        if rnn.bidirectional:
            raise ValueError("a bidirectional RNN reads the future: not a recurrence to track "
                             "with (bidirectional=True; allowed: False)")
        if getattr(rnn, "proj_size", 0):
            raise ValueError(f"an LSTM with proj_size={rnn.proj_size} is not supported "
                             "(allowed: 0)")
        p = rnn.weight_ih_l0
        if isinstance(embedding, nn.Embedding):
            embedding = embedding.weight
        if embedding is not None:
            E = torch.as_tensor(embedding).detach()
            if E.ndim != 2 or E.shape[1] != rnn.input_size:
                raise ValueError(f"embedding must be (n_tokens, input_size={rnn.input_size}), "
                                 f"got shape {tuple(E.shape)}")
            if n_tokens is not None and n_tokens != E.shape[0]:
                raise ValueError(f"n_tokens={n_tokens!r} but the embedding has {E.shape[0]} rows")
            n_tokens = E.shape[0]
        elif n_tokens is not None and n_tokens != rnn.input_size:
            raise ValueError(f"one-hot input needs n_tokens == input_size={rnn.input_size}, got "
                             f"n_tokens={n_tokens!r} (or pass an embedding)")
        lstm = isinstance(rnn, nn.LSTM)
        H, n = rnn.hidden_size, rnn.num_layers
        block = 2 * H if lstm else H
        super().__init__(None, torch.zeros(n * block, dtype=p.dtype, device=p.device),
                         rnn.input_size if n_tokens is None else n_tokens, readout=readout,
                         is_affine=is_affine, module=rnn, layer_sizes=(block,) * n,
                         name=type(rnn).__name__)
        self.lstm, self.H = lstm, H
        self.register_buffer("embedding", None if embedding is None else E.to(p).clone())

    @property
    def feature_size(self) -> int:
        return self.module.hidden_size

    def features(self, h: torch.Tensor) -> torch.Tensor:
        start = (self.module.num_layers - 1) * (2 * self.H if self.lstm else self.H)
        return h[..., start:start + self.H]  # (..., H): the last layer's h

    def _input(self, x: torch.Tensor) -> torch.Tensor:
        """Token ids (...) -> the RNN's input (..., input_size)."""
        if self.embedding is not None:
            return self.embedding[x]
        return F.one_hot(x, self.n_tokens).to(self.W_out.weight.dtype)

    def _weights(self, layer: int) -> tuple[torch.Tensor | None, ...]:
        return tuple(getattr(self.module, f"{kind}_l{layer}", None)
                     for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))

    def next_state(self, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Every layer's step (torch's formulas), layer by layer: (b, D) -> (b, D)."""
        u = self._input(x)  # (b, input_size)
        blocks = h.split(2 * self.H if self.lstm else self.H, -1)  # per layer
        new = []
        for layer, block in enumerate(blocks):
            if self.lstm:
                u, c = lstm_step(*block.split(self.H, -1), u, *self._weights(layer))  # (b, H)
                new += [u, c]
            else:
                u = gru_step(block, u, *self._weights(layer))  # (b, H)
                new.append(u)
        return torch.cat(new, -1)  # (b, D)

    def hidden_states(self, tokens: torch.Tensor) -> list[torch.Tensor]:
        """The last layer's ``h`` (b, L, H) from the fused module (the step formulas when
        dropout between layers would act, i.e. in training mode)."""
        if self.module.training and self.module.dropout > 0:
            return super().hidden_states(tokens)
        tok = token_ids(self, tokens)  # (b, L)
        u = self._input(tok)  # (b, L, input_size)
        if not self.module.batch_first:
            return [self.module(u.transpose(0, 1))[0].transpose(0, 1)]
        return [self.module(u)[0]]  # (b, L, H)


def as_tracker(model_or_step: Any, *, h0: Any = None, n_tokens: int | None = None,
               readout: Any = None, recurrent_mask: Any = None, is_affine: bool | None = None,
               embedding: Any = None) -> Any:
    """The diagnostics' face for ``model_or_step`` (module docstring): a registry model as
    it is, a :class:`ForeignTracker` as it is, an ``nn.GRU`` / ``nn.LSTM`` as a
    :class:`TorchRNNTracker`, anything else with a ``step(h, x)`` (a module with that
    method, or the callable itself) as a :class:`ForeignTracker`.

    Checks the shapes once on a batch of two states (``step`` must return (2, D)).
    """
    if isinstance(model_or_step, (SequenceModel, ForeignTracker)):
        given = {k: v for k, v in dict(h0=h0, n_tokens=n_tokens, readout=readout,
                                       recurrent_mask=recurrent_mask, is_affine=is_affine,
                                       embedding=embedding).items() if v is not None}
        if given:
            raise ValueError(f"{type(model_or_step).__name__} carries its own state, tokens "
                             f"and readout; drop {', '.join(given)}")
        return model_or_step
    if isinstance(model_or_step, (nn.GRU, nn.LSTM)):
        if h0 is not None or recurrent_mask is not None:
            raise ValueError("an nn.GRU / nn.LSTM starts from the zero state with every entry "
                             "recurrent; drop h0 and recurrent_mask")
        tracker = TorchRNNTracker(model_or_step, embedding=embedding, readout=readout,
                                  n_tokens=n_tokens, is_affine=is_affine)
    else:
        if embedding is not None:
            raise ValueError("embedding is for an nn.GRU / nn.LSTM; a step(h, x) reads token "
                             "ids itself")
        module = model_or_step if isinstance(model_or_step, nn.Module) else None
        if module is not None and callable(getattr(module, "step", None)):
            step = None  # the tracker calls module.step: a copy calls the copied module
            if h0 is None and callable(getattr(module, "init_state", None)):
                h0 = module.init_state(1)[0]
            if n_tokens is None:
                n_tokens = getattr(module, "n_tokens", None)
        elif callable(model_or_step) and module is None:
            step = model_or_step
        else:
            raise ValueError(f"{type(model_or_step).__name__} is neither a step(h, x) callable, "
                             "a module with a step(h, x) method, an nn.GRU / nn.LSTM nor a "
                             "registry model")
        if h0 is None:
            raise ValueError("h0, the initial state (D,), is needed with a step(h, x)")
        if n_tokens is None:
            raise ValueError("n_tokens, how many token ids step(h, x) takes, is needed")
        h0 = _as_state(h0, None if module is None else _param_dtype(module))
        tracker = ForeignTracker(step, h0, n_tokens, readout=readout,
                                 recurrent_mask=recurrent_mask, is_affine=is_affine,
                                 module=module, name=type(module or step).__name__)
    _check_device_and_dtype(tracker)
    x = torch.tensor([0, tracker.n_tokens - 1], device=tracker.W_out.weight.device)  # (2,)
    with torch.no_grad():
        _call_step(tracker, tracker.init_state(2), x, "the initial state")  # shape, dtype
    return tracker


def _call_step(model: Any, h: torch.Tensor, x: torch.Tensor, where: str) -> torch.Tensor:
    """``model.step(h, x)``, an error of the step itself named with the token ids and
    state it was given (a ValueError of the checks passes as it is)."""
    try:
        return model.step(h, x)
    except ValueError:
        raise
    except Exception as err:
        ids = sorted({int(v) for v in x.flatten().tolist()})
        raise StepError(f"step(h, x) raised {type(err).__name__}: {err} (on token ids {ids} "
                        f"at {where}; n_tokens={model.n_tokens}: the step must take every id "
                        f"0..{model.n_tokens - 1} and a batch h of shape (b, D))") from err


def check_step(model: Any, tokens: Any, states: Any = None, seed: int = 0) -> None:
    """:class:`StepError` unless one step behaves, on a float64 copy, at the initial state
    and at each of ``states`` (n, D), for every token id of ``tokens`` (1-D; the first 64):

    - its next state is finite;
    - it leaves its input ``h`` as it was (no in-place change of the caller's state);
    - the same ``h`` and ``x`` give the same next state (not random: dropout in training
      mode is; call ``.eval()``);
    - the next state depends on the token at one state at least (with two token ids or
      more): a step that ignores its token cannot track a group;
    - autograd's tangent ``J(h) v`` (``torch.func.jvp``) agrees with the central finite
      difference within :data:`TANGENT_RTOL`, for one random direction ``v`` on the
      recurrent entries per state and token (a step that detaches ``h``, or computes
      outside torch, gives the return-map checks a zero Jacobian: a gain of 0).
    """
    from torch.func import jvp

    m = copy.deepcopy(model).double().eval()
    tok = token_ids(m, np.asarray(tokens).reshape(1, -1))[0][:64]  # (k,)
    D = m.state_size
    H = m.init_state(1)  # (1, D)
    if states is not None:
        H = torch.cat([H, torch.as_tensor(states).to(H).reshape(-1, D)])  # (n + 1, D)
    names = ["the initial state"] + [f"probe state {i} (reached on a word)"
                                     for i in range(1, len(H))]
    rec = m.recurrent_mask.to(H.device)  # (D,)
    gen = torch.Generator().manual_seed(int(seed))
    with torch.no_grad():
        outs = []  # per token: (n + 1, D)
        for x in tok:
            xs = x.expand(len(H))  # (n + 1,)
            given = H.clone()
            out = _call_step(m, given, xs, "the probe states")
            if not torch.equal(given, H):
                raise StepError(f"step(h, x) changed its input h in place (token {int(x)}); "
                                "it must return a new tensor and leave h as it was")
            bad = (~torch.isfinite(out)).any(1).nonzero()
            if len(bad):
                i = int(bad[0])
                raise StepError(f"step(h, x) returned a non-finite next state at "
                                f"{names[i]} for token {int(x)} "
                                f"({int((~torch.isfinite(out[i])).sum())} of {D} entries)")
            again = _call_step(m, H.clone(), xs, "the probe states")
            if not torch.equal(out, again):
                diff = float((out - again).abs().max())
                raise StepError(f"step(h, x) gave two different next states for the same h "
                                f"and token {int(x)} (max difference {diff:.3g}): it is random "
                                "(dropout in training mode? call .eval()); the diagnostics "
                                "need a deterministic step")
            outs.append(out)
    if len(outs) > 1 and all(torch.equal(o, outs[0]) for o in outs[1:]):
        raise StepError(f"step(h, x) gives the same next state for every token id "
                        f"{[int(x) for x in tok]} at every probe state: it ignores its token, "
                        "or every token maps these states alike (h0 = 0 under a linear step), "
                        "so it cannot track a group (every class would share one centroid)")
    for x in tok:
        for i, h in enumerate(H):
            v = torch.randn(D, generator=gen, dtype=torch.float64).to(h) * rec  # (D,)
            v = v / v.norm().clamp(min=1e-300)
            f = lambda h: m.step(h[None], x[None])[0]  # noqa: E731  (D,) -> (D,)
            try:
                tangent = jvp(f, (h,), (v,))[1].detach()  # (D,)
            except Exception as err:
                raise StepError(f"step(h, x) cannot be differentiated by torch.func.jvp "
                                f"({type(err).__name__}: {err}) at {names[i]}, token "
                                f"{int(x)}: the return-map checks need a step written in "
                                "torch operations") from err
            delta = 1e-6 * float(h.abs().max().clamp(min=1.0))
            with torch.no_grad():
                fd = (f(h + delta * v) - f(h - delta * v)) / (2 * delta)  # (D,)
            scale = float(fd.norm())
            gap = float((tangent - fd).norm())
            if gap > TANGENT_RTOL * max(scale, float(tangent.norm())) + 1e-9:
                raise StepError(f"step(h, x) breaks the tangent at {names[i]}, token {int(x)}: "
                                f"autograd's J(h) v has norm {float(tangent.norm()):.3g}, the "
                                f"finite difference {scale:.3g} (gap {gap:.3g}); does it "
                                "detach h, or compute outside torch (numpy, .item(), .data)?")


def _param_dtype(module: nn.Module) -> torch.dtype | None:
    p = next(iter(module.parameters()), None)
    return None if p is None else p.dtype


# -- affinity, numerically -------------------------------------------------------------------
def estimate_affine(model: Any, tokens: Any, states: Any = None, n_moves: int = 2,
                    n_directions: int = 4, seed: int = 0) -> dict[str, Any]:
    """Whether ``d step(h, x) / d h`` is the same at different states, numerically.

    Each state of ``states`` (n, D) (default: the initial state) is moved ``n_moves`` times
    by a Gaussian step of its own RMS (at least 1) on the recurrent entries; input windows
    (``recurrent_mask`` False) are held, since the step is affine in the recurrent entries
    for a fixed window. For every token id in ``tokens`` (1-D) and ``n_directions`` random
    directions ``v`` on the recurrent entries, the tangent ``J(h) v`` of one step
    (``torch.func.jvp``, on a float64 copy, read on the recurrent rows) at each moved state
    is compared with the one at its state. ``affine``: the largest relative difference
    stays below :data:`AFFINE_RTOL`.
    """
    from torch.func import jvp

    _positive_int("n_moves", n_moves)
    _positive_int("n_directions", n_directions)
    m = copy.deepcopy(model).double().eval()
    tok = token_ids(m, np.asarray(tokens).reshape(1, -1))[0]  # (k,)
    D = m.state_size
    rec = m.recurrent_mask.to(tok.device)  # (D,)
    base = m.init_state(1) if states is None else torch.as_tensor(states).to(m.W_out.weight)
    if base.ndim != 2 or base.shape[1] != D:
        raise ValueError(f"states must have shape (n, D) with D={D}, got {tuple(base.shape)}")
    gen = torch.Generator().manual_seed(int(seed))
    scale = base[:, rec].pow(2).mean(1).sqrt().clamp(min=1.0)  # (n,)
    z = torch.randn(n_moves, *base.shape, generator=gen, dtype=torch.float64)  # (k, n, D)
    moved = base + 0.5 * scale[:, None] * z.to(base) * rec  # (k, n, D)
    V = torch.randn(n_directions, D, generator=gen, dtype=torch.float64).to(base) * rec  # (r, D)

    def tangent(h: torch.Tensor, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return jvp(lambda h: m.step(h[None], x[None])[0], (h,), (v,))[1][rec].detach()

    worst = 0.0
    for x in tok:
        for v in V:
            for i, h in enumerate(base):
                ref = tangent(h, x, v)  # (D_rec,)
                for h_moved in moved[:, i]:
                    diff = (tangent(h_moved, x, v) - ref).norm() / ref.norm().clamp(min=1e-300)
                    worst = max(worst, float(diff))
    return {"affine": bool(worst <= AFFINE_RTOL), "max_relative_difference": worst,
            "n_states": int(base.shape[0]), "n_moves": int(n_moves),
            "n_directions": int(n_directions), "tokens": [int(t) for t in tok]}


# -- the entry point -------------------------------------------------------------------------
def diagnose_any(model_or_step: Any, group: Group | str, *, h0: Any = None,
                 n_tokens: int | None = None, readout: Any = None, recurrent_mask: Any = None,
                 is_affine: bool | None = None, embedding: Any = None,
                 tokens: str = "generators", n_samples: int = 512,
                 rollout: int = DEFAULTS["rollout"], t_ref: int = DEFAULTS["t_ref"],
                 t0: int = DEFAULTS["t0"], eps: float = DEFAULTS["eps"],
                 perturb_steps: int = DEFAULTS["perturb_steps"],
                 n_perturb: int = DEFAULTS["n_perturb"],
                 word_length: int = DEFAULTS["word_length"], n_words: int = DEFAULTS["n_words"],
                 tau: float = DEFAULTS["tau"], seed: int = DEFAULTS["seed"],
                 t_train: int = 60, max_bytes: int = MAX_BYTES,
                 max_rollout: int = MAX_ROLLOUT) -> dict[str, Any]:
    """Every error-control diagnostic of ``model_or_step`` on ``group``'s tracking task.

    ``model_or_step``, ``h0``, ``n_tokens``, ``readout``, ``recurrent_mask``,
    ``is_affine``, ``embedding``: as :func:`as_tracker` takes them (module docstring).
    ``tokens``: the vocabulary (``"generators"``: identity and generators, or ``"all"``);
    token ids are element indices, so the model must take ids up to the largest one used.
    ``n_samples`` held-out words of length ``rollout`` (seed ``DIAG_SEED_OFFSET + seed``)
    give the centroids, R, M and q; the rest as in
    :class:`~sst_core.spec.configs.DiagnosticsConfig` (same defaults); ``t_train`` is the
    training length, which splits "saturation" from "climb" (:func:`~sst_core.analysis.
    diagnostics.failure_mode`). ``max_bytes`` / ``max_rollout``: the caps of the module
    docstring (:data:`MAX_BYTES`, :data:`MAX_ROLLOUT`).

    Raises :class:`StepError` or :class:`DiagnosisUndetermined` (module docstring) rather
    than give a verdict on a ``q`` that is not finite.

    Returns a plain dict: arrays ``q``, ``q_sqrt``, ``R``, ``M``, ``q_U``, ``q_U_perp``,
    ``q_U_identity``, ``q_U_perp_identity`` (index i is t = i + 1), ``T_cross`` /
    ``T_cross_1`` (tau and 1, squared ratio) and ``T_cross_sqrt`` / ``T_cross_sqrt_1``,
    ``failure_mode``, ``dim_U_readout``, ``recovery`` (``random``, ``U``; from ``t0``),
    ``theorem1`` (the norms, median over the words, with ``dim_U``, ``per_word`` and
    ``applies``), ``is_affine`` (what was used), ``is_affine_source`` (``"given"``,
    ``"registry"`` or ``"estimated"``), ``affine_estimate`` (:func:`estimate_affine` at
    the states reached at ``t0``), and ``model``, ``group``, ``tokens``, ``state_size``,
    ``n_layers``.
    """
    _check_arguments(n_samples=n_samples, rollout=rollout, t_train=t_train, t_ref=t_ref,
                     t0=t0, perturb_steps=perturb_steps, n_perturb=n_perturb,
                     word_length=word_length, n_words=n_words, max_bytes=max_bytes,
                     max_rollout=max_rollout, seed=seed, eps=eps, tau=tau)
    check_times(t_ref, t0, rollout)
    g = group if isinstance(group, Group) else get_group(group)
    if g.order < 2:
        raise ValueError(f"group {g.name!r} has {g.order} element: q compares the states of "
                         "different group elements, so the group needs at least 2")
    vocab = vocabulary(g, tokens)  # (k,) element indices: the token ids
    model = as_tracker(model_or_step, h0=h0, n_tokens=n_tokens, readout=readout,
                       recurrent_mask=recurrent_mask, is_affine=is_affine, embedding=embedding)
    if vocab.max() >= model.n_tokens:
        raise ValueError(f"{g.name} with tokens={tokens!r} uses token ids up to {vocab.max()} "
                         f"(element indices), but the model takes n_tokens={model.n_tokens} "
                         f"(ids 0..{model.n_tokens - 1})")
    item = model.W_out.weight.element_size()
    need = n_samples * rollout * _feature_size(model) * item
    if need > max_bytes:
        raise ValueError(f"diagnose_any would hold n_samples x rollout x d = {n_samples} x "
                         f"{rollout} x {_feature_size(model)} readout states ({need / 2**30:.3g} "
                         f"GiB), above max_bytes={max_bytes} ({max_bytes / 2**30:.3g} GiB); "
                         "lower n_samples or rollout, or pass a larger max_bytes=")
    words, groups_t = sample(g, n_samples, rollout, tokens=tokens,
                             seed=DIAG_SEED_OFFSET + seed)  # (b, L), (b, L)
    _check_sample(words, groups_t, g)
    with torch.no_grad():
        reached = state_trajectory(copy.deepcopy(model).double(), words[:2, :t0])[:, -1]  # (2, D)
    if not torch.isfinite(reached).all():
        _raise_non_finite(model, words[:2])
    check_step(model, vocab, reached, seed=seed)
    estimate = estimate_affine(model, vocab, reached, seed=seed)
    if is_affine is not None:
        affine, source = bool(is_affine), "given"
    elif model.is_affine is not None:
        affine, source = bool(model.is_affine), "registry" if isinstance(
            model, SequenceModel) else "given"
    else:
        affine, source = estimate["affine"], "estimated"
    core = error_control_measures(
        model, g, words, groups_t, tokens=tokens, is_affine=affine, t_ref=t_ref, t0=t0,
        eps=eps, perturb_steps=perturb_steps, n_perturb=n_perturb, word_length=word_length,
        n_words=n_words, tau=tau, seed=seed, t_train=t_train)
    _check_measured(model, core, words, groups_t, g)
    return {"model": getattr(model, "name", type(model).__name__), "group": g.name,
            "tokens": tokens, "state_size": int(model.state_size),
            "n_layers": len(model.layers), "is_affine": affine, "is_affine_source": source,
            "affine_estimate": estimate, **core}


def _feature_size(model: Any) -> int:
    """Width d of what the readout reads."""
    return int(getattr(model, "feature_size", None) or model.W_out.in_features)


def _raise_non_finite(model: Any, words: np.ndarray) -> None:
    """:class:`DiagnosisUndetermined` naming the first step (and word) at which the
    model's state stops being finite along ``words`` (b, L); returns when it stays finite."""
    tok = token_ids(model, words)  # (b, L)
    with torch.no_grad():
        h = model.init_state(len(tok))  # (b, D)
        for t in range(tok.shape[1]):
            h = model.step(h, tok[:, t])
            bad = (~torch.isfinite(h)).any(1).nonzero()
            if len(bad):
                i = int(bad[0])
                kind = "NaN" if torch.isnan(h[i]).any() else "inf"
                raise DiagnosisUndetermined(
                    f"the state became non-finite ({kind}) at step {t + 1} of word {i} (token "
                    f"{int(tok[i, t])}), {int((~torch.isfinite(h[i])).sum())} of "
                    f"{h.shape[1]} entries: q cannot be measured; the step overflows or "
                    "divides by zero there")


def _check_sample(words: np.ndarray, groups_t: np.ndarray, g: Group) -> None:
    """:class:`DiagnosisUndetermined` when the words are a degenerate sample at some step:
    fewer than two elements reached, or one word per element (q is then 0 or undefined by
    count alone)."""
    for t in range(groups_t.shape[1]):  # a degenerate sample: q is 0 or undefined by count
        _, counts = np.unique(groups_t[:, t], return_counts=True)
        if len(counts) < 2 or counts.max() < 2:
            why = (f"reach only {len(counts)} of {g.name}'s {g.order} elements there, and q "
                   "compares the states of different elements" if len(counts) < 2 else
                   f"reach {len(counts)} elements there, each with one word, so the spread R "
                   "within an element is 0 by count alone")
            raise DiagnosisUndetermined(f"q is undetermined at step {t + 1}: the "
                                        f"{len(words)} words (n_samples) {why}; raise n_samples")


def _check_measured(model: Any, core: dict[str, Any], words: np.ndarray,
                    groups_t: np.ndarray, g: Group) -> None:
    """:class:`DiagnosisUndetermined` unless q is finite at every length, naming the first
    bad step: non-finite states, or classes the readout cannot tell apart there."""
    q = np.asarray(core["q"], dtype=np.float64)  # (L,)
    if np.isfinite(q).all():
        return
    _raise_non_finite(model, words)
    t = int(np.flatnonzero(~np.isfinite(q))[0])  # index: after t + 1 tokens
    present = len(np.unique(groups_t[:, t]))
    R, M = float(core["R"][t]), float(core["M"][t])
    raise DiagnosisUndetermined(
        f"q is undetermined at step {t + 1}: R = {R:.3g}, M = {M:.3g} (the smallest "
        f"distance between the readout centroids of the {present} elements reached): the "
        "readout cannot tell the classes apart there (does the readout see the state, and "
        "the step its token?)")
