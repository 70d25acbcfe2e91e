"""The papers' published numbers that the book compares against, with their sources.

Only what the reference collects (``shared/reference/*.md``) is here. ``FAIL`` is the
paper's "x"/"fail" (below 90% already at length 60); a missing key is "not reported".
"""
from __future__ import annotations

FAIL = None  # m_p of a model that fails at the training length

# Paper 1, Table 2: m_p by (model, group, n_layers). Source: the Review (L1/L2 columns);
# Simple AUSSM and Linear RNN rows from the Summary (reference section 8.1).
TABLE2: dict[tuple[str, str, int], int | None] = {}
_T2 = {
    "mamba": ((FAIL, 60), (FAIL, 60), (FAIL, FAIL)),
    "mamba3": ((200, 300), (100, 100), (FAIL, 60)),
    "aussm": ((1000, FAIL), (200, 100), (FAIL, FAIL)),
    "negative_mamba": ((1000, 1000), (100, 200), (100, 200)),
    "token_gated_rnn": ((1000, 700), (300, 400), (500, 1000)),
    "simple_aussm": ((300, "-"), (100, "-"), ("-", 100)),
    "linear_rnn": ((FAIL, "-"), (FAIL, "-"), ("-", FAIL)),
    "tanh_rnn": ((1000, 1000), (1000, 1000), (1000, 1000)),
    "state_gated_rnn": ((1000, 1000), (1000, 1000), (1000, 1000)),
}
for _model, _rows in _T2.items():
    for _group, _pair in zip(("C2", "C6", "S3"), _rows):
        for _depth, _value in zip((1, 2), _pair):
            if _value != "-":
                TABLE2[(_model, _group, _depth)] = _value

# Paper 1, Table 3: m_p on S3 with one layer, h = phi(W_h h + W_x e(x) + b). Source: Summary.
TABLE3: dict[str, int | None] = {
    "tanh": 1000, "relu": 1000, "groupsort2": 1000, "max": 1000, "min": 1000,
    "identity": FAIL, "layernorm": FAIL, "sphere": FAIL,
}

SOURCES = {
    "TABLE2": "arXiv 2605.07755 Table 2, via the secondary Review and Summary (reference 8.1)",
    "TABLE3": "arXiv 2605.07755 Table 3, via the secondary Summary (reference 8.2)",
}
