"""Names. On the command line one spelling for every name: experiment, sweep and report
names use underscores; a name written with hyphens is accepted with a hint on stderr. For
readers, the papers' names of the models (:data:`MODEL_NAMES`, :func:`run_name`): the one
mapping from code names, for tables, legends and prose."""
from __future__ import annotations

import re
import sys
from typing import Any, Iterable, Mapping


def one_spelling(value: str, names: Iterable[str], what: str) -> str:
    """``value`` if it is one of ``names``; with hyphens written as underscores, accepted
    with a hint on stderr; else ValueError naming ``what`` and the allowed names."""
    names = list(names)
    if value in names:
        return value
    spelled = value.replace("-", "_")
    if spelled in names:
        print(f"did you mean {spelled}? accepted", file=sys.stderr)
        return spelled
    raise ValueError(f"unknown {what} {value!r}; allowed: {', '.join(names)}")


# The papers' names of the models, for readers (tables, legends, prose); code keeps the
# registry's names. Paper 1 names its models as here (Table 2); the rest follow their papers.
MODEL_NAMES: dict[str, str] = {
    "tanh_rnn": "tanh RNN",
    "state_gated_rnn": "State-gated RNN",
    "linear_rnn": "Linear RNN",
    "token_gated_rnn": "Token-gated RNN",
    "mamba": "Mamba",
    "negative_mamba": "Negative Mamba",
    "mamba3": "Mamba-3",
    "aussm": "AUSSM",
    "simple_aussm": "Simple AUSSM",
    "linear_attention": "linear attention",
    "semi_affine_mamba": "semi-affine Mamba",
    "semi_affine_negative_mamba": "semi-affine Negative Mamba",
    "torch_gru": "GRU",
    "torch_lstm": "LSTM",
    "deltanet": "DeltaNet",
    "deltanet_negative": "DeltaNet, β in [0, 2]",
    "deltaproduct": "DeltaProduct",
    "deltaproduct_3": "DeltaProduct, 3 steps",
    "rnn_phi": "RNN",
}

# The nonlinearities phi of Table 3, h = phi(W_h h + W_x e(x) + b), as paper 1 names them.
PHI_NAMES: dict[str, str] = {
    "tanh": "tanh", "relu": "ReLU", "groupsort2": "GroupSort", "max": "max", "min": "min",
    "identity": "identity", "layernorm": "LayerNorm", "sphere": "sphere",
}


# The initialisations of the state matrix's spectrum (paper 2, every chapter and figure):
# S4D's names where the S4D code defines them; the ablation's "linear" ("real, linearly
# spaced, only on the real axis") is S4D-Real's -(n+1), named both ways; "(ours)" where the
# definition is this book's proposal for a baseline the paper describes only in words.
INIT_NAMES: dict[str, str] = {
    "inv": "S4D-Inv", "lin": "S4D-Lin", "real": "linear (S4D-Real)", "step": "step (ours)",
    "random": "random (ours)",
}
# The same spectra where the paper's own numbers are shown (its ablation's random and step
# eigenvalues are the paper's, so they carry no "(ours)").
PAPER_INIT_NAMES: dict[str, str] = {k: v.removesuffix(" (ours)") for k, v in INIT_NAMES.items()}


# The fast operations the benchmarks time, as the book names them (their code names in
# ``sst_core.ops``), and our stand-ins for paper 2's tasks as the LRA chapter names them.
OP_NAMES: dict[str, str] = {
    "linear_scan": "diagonal scan", "selective_scan": "selective scan",
    "unitary_scan": "unitary scan", "vandermonde_kernel": "S4D kernel and FFT convolution",
}
TASK_NAMES: dict[str, str] = {"listops": "ListOps", "pathfinder": "Pathfinder",
                              "digits": "digits"}


def model_name(model: str) -> str:
    """The paper's name of a registered model (the code name where there is none)."""
    return MODEL_NAMES.get(model, model)


def run_name(config: Mapping[str, Any]) -> str:
    """A tracking run's name for readers: its model (or, in Table 3's sweep, its phi), and
    "2 layers" for a deeper one."""
    phi = config.get("phi")
    name = PHI_NAMES.get(phi, phi) if phi else model_name(config["model"])
    depth = int(config.get("n_layers", 1))
    return name + (f", {depth} layers" if depth > 1 else "")


# The papers' symbols as code spells them, and as a page typesets them (math between
# dollars, which MathJax and matplotlib's mathtext both read): table headers
# (:func:`sst_core.reports.header_text`) and figure text (:func:`typeset_symbols`).
SYMBOL_MATH = {"m_p": r"$m_p$", "T_cross": r"$T_{\mathrm{cross}}$",
               "d_model": r"$d_{\mathrm{model}}$", "d_state": r"$d_{\mathrm{state}}$",
               "q_U_perp": r"$q_{U^\perp}$", "q_U⊥": r"$q_{U^\perp}$", "q_U": r"$q_U$",
               "W_out": r"$W_{\mathrm{out}}$"}
_SYMBOL = re.compile(r"(?<![\w$\\])(" + "|".join(map(re.escape, SYMBOL_MATH)) + r")(?!\w)")


def typeset_symbols(text: str) -> str:
    """``text`` with the papers' symbols among its words (:data:`SYMBOL_MATH`) typeset as
    math; longer names (``m_p_prefix``) and math already typeset (between dollars) stay
    as they are."""
    parts = re.split(r"(\$[^$]*\$)", str(text))  # odd parts: math already
    return "".join(p if i % 2 else _SYMBOL.sub(lambda m: SYMBOL_MATH[m.group(1)], p)
                   for i, p in enumerate(parts))
