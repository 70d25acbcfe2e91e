"""One registry for every architecture of the book: name -> constructor and class.

``build(name, n_tokens, n_classes, d_model=..., d_state=..., n_layers=..., **kw)`` returns
a :class:`~sst_core.models.base.SequenceModel`. Each family module exposes one function
per name with exactly that signature; they are imported lazily so that importing the
registry stays cheap.

Sizes. ``d_model`` is the width of the residual stream (embedding, block input and
output) of the Mamba / AUSSM / linear-attention families; ``d_state`` is the size of
their per-channel state (N). The RNN family has no residual stream: its hidden state
*is* the state, of width ``d_state``, and ``d_model`` is not used.
"""
from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sst_core.spec import configs

if TYPE_CHECKING:  # torch loads with the first model built, not with the registry
    from sst_core.models.base import SequenceModel


@dataclass(frozen=True)
class Entry:
    target: str  # "module:function" inside sst_core.models
    affine: bool  # the class the paper assigns (checked numerically by the tests)
    family: str
    summary: str


REGISTRY: dict[str, Entry] = {
    # state-dependent
    "tanh_rnn": Entry("cells:tanh_rnn", False, "rnn", "h = tanh(W_h h + W_x e(x) + b)"),
    "state_gated_rnn": Entry("cells:state_gated_rnn", False, "rnn",
                             "h = sigma(W_g e(x) + U_g h + b_g) * (W_h h) + W_x e(x) + b"),
    # affine
    "linear_rnn": Entry("cells:linear_rnn", True, "rnn", "h = W_h h + W_x e(x) + b"),
    "token_gated_rnn": Entry("cells:token_gated_rnn", True, "rnn",
                             "h = sigma(W_g e(x) + b_g) * (W_h h) + W_x e(x) + b"),
    "mamba": Entry("selective:mamba", True, "selective", "h = exp(dt A) h + dt B u (S6)"),
    "negative_mamba": Entry("selective:negative_mamba", True, "selective",
                            "h = (2 exp(dt A) - 1) h + dt B u"),
    "mamba3": Entry("selective:mamba3", True, "selective",
                    "complex rotation with decay, trapezoidal input (SISO)"),
    "aussm": Entry("unitary:aussm", True, "unitary", "h = exp(i a(u)) h + dt B silu(u)"),
    "simple_aussm": Entry("unitary:simple_aussm", True, "unitary",
                          "h = exp(i theta(x)) h + B e(x) (proposal)"),
    "linear_attention": Entry("attention:linear_attention", True, "attention",
                              "S = S + v phi(k)^T, y = S phi(q)"),
    # beyond the paper: affine except on a rank-r state-dependent block (its proposal)
    "semi_affine_mamba": Entry("semi_affine:semi_affine_mamba", False, "selective",
                               "h = exp(dt A) h + dt B u + P tanh(Q h + c)  (rank r)"),
    "semi_affine_negative_mamba": Entry("semi_affine:semi_affine_negative_mamba", False,
                                        "selective",
                                        "h = (2 exp(dt A) - 1) h + dt B u + P tanh(Q h + c)"),
    # torch's own gated RNNs (issue 22: the diagnostics on anyone's model); state-dependent
    "torch_gru": Entry("torch_rnn:torch_gru", False, "rnn",
                       "torch.nn.GRU: h = (1 - z) n + z h, z, r, n read h"),
    "torch_lstm": Entry("torch_rnn:torch_lstm", False, "rnn",
                        "torch.nn.LSTM: c = f c + i g, h = o tanh(c), state [h; c]"),
    # beyond the papers, part 2: non-diagonal affine trackers
    "deltanet": Entry("delta:deltanet", True, "delta",
                      "S = (I - beta k k^T) S + beta k v^T, beta in [0, 1]"),
    "deltanet_negative": Entry("delta:deltanet_negative", True, "delta",
                               "S = (I - beta k k^T) S + beta k v^T, beta in [0, 2]"),
    "deltaproduct": Entry("delta:deltaproduct", True, "delta",
                          "n_h delta steps per token (n_householder=2, beta in [0, 2])"),
    "deltaproduct_3": Entry("delta:deltaproduct_3", True, "delta",
                            "deltaproduct with n_householder=3"),
    # the nonlinearity sweep of Table 3 (phi=...); affine only for phi="identity"
    "rnn_phi": Entry("cells:rnn_phi", False, "rnn", "h = phi(W_h h + W_x e(x) + b)"),
}

PHIS = ("tanh", "relu", "groupsort2", "max", "min", "identity", "layernorm", "sphere")


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def expected_affine(name: str, **kw: Any) -> bool:
    """The paper's class of a registered model (``rnn_phi`` depends on ``phi``)."""
    if name == "rnn_phi":
        return kw.get("phi", "tanh") == "identity"
    return _entry(name).affine


def _entry(name: str) -> Entry:
    if name not in REGISTRY:
        raise ValueError(f"unknown model {name!r}; allowed: {', '.join(REGISTRY)}")
    return REGISTRY[name]


def check_size(what: str, value: Any) -> None:
    """ValueError unless ``value`` is an int in 1..MAX_SIZE: the largest width, state size,
    depth or vocabulary a model is built with (a d_model of 10**6 asks the allocator for
    terabytes), :data:`sst_core.spec.configs.MAX_SIZE`, which the configs check too."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{what} must be a positive int, got {value!r}")
    if value > configs.MAX_SIZE:
        raise ValueError(f"{what}={value} is above the cap {configs.MAX_SIZE} "
                         "(sst_core.spec.configs.MAX_SIZE; raise it there for a larger model)")


def check_number(what: str, value: Any, low: float, high: float = float("inf"), *,
                 low_open: bool = True) -> None:
    """ValueError unless ``value`` is a finite real number in (low, high] (``[low, high]``
    with ``low_open=False``): a model option."""
    import math

    ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
          and math.isfinite(value) and (value > low if low_open else value >= low)
          and value <= high)
    if not ok:
        allowed = (f"a finite number {'>' if low_open else '>='} {low:g}" if high == float("inf")
                   else f"a finite number in {'(' if low_open else '['}{low:g}, {high:g}]")
        raise ValueError(f"{what}={value!r} is not allowed: {allowed}")


def check_bool(what: str, value: Any) -> None:
    """ValueError unless ``value`` is True or False (the string 'no' would read as True)."""
    if not isinstance(value, bool):
        raise ValueError(f"{what}={value!r} is not allowed: True or False")


def _check_options(name: str, make: Any, kw: dict[str, Any]) -> None:
    """ValueError naming the options in ``kw`` that the builder ``make`` does not take, with
    the ones it takes. A builder with ``**kw`` passes them to its layer's config, which
    checks them the same way (``selective.make_config``)."""
    params = inspect.signature(make).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    unknown = sorted(set(kw) - set(params))
    if unknown:
        allowed = [k for k in params if k not in ("n_tokens", "n_classes")]
        raise ValueError(f"unknown keyword(s) {', '.join(unknown)} for model {name!r}; "
                         f"allowed: {', '.join(allowed)}")


def build(name: str, n_tokens: int, n_classes: int, d_model: int = 64, d_state: int = 16,
          n_layers: int = 1, **kw: Any) -> SequenceModel:
    """Build a registered model. Unknown names, unknown options and impossible sizes raise
    ValueError."""
    entry = _entry(name)
    for what, value in (("n_tokens", n_tokens), ("n_classes", n_classes), ("d_model", d_model),
                        ("d_state", d_state), ("n_layers", n_layers)):
        check_size(what, value)
    module, func = entry.target.split(":")
    make = getattr(importlib.import_module(f"{__package__}.{module}"), func)
    _check_options(name, make, kw)
    model = make(n_tokens, n_classes, d_model=d_model, d_state=d_state, n_layers=n_layers, **kw)
    model.name = name if name != "rnn_phi" else f"rnn_phi[{kw.get('phi', 'tanh')}]"
    return model
