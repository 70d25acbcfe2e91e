"""ListOps: evaluate nested MIN / MAX / MED / SM expressions over digits (LRA rules).

An expression is a tree.  A leaf is a digit ``0 .. 9``; a node is an operator
applied to 2 .. ``max_args`` children:

* ``MIN``, ``MAX``: smallest / largest child value;
* ``MED``: ``int(np.median(values))``, i.e. the median, floored when the count
  is even (values are non-negative, so ``int`` truncation is a floor);
* ``SM``: the sum modulo 10.

The label is the value of the root (10 classes).  A tree is written in prefix
form with brackets, one token per operator, digit and closing bracket, e.g.
``[MAX 4 3 [MIN 2 3 ] 1 0 ]``; its length is the number of tokens (LRA's
``length``: 1 for a leaf, 2 + the children's lengths for a node).

In code a leaf is an ``int`` and a node is ``(op, children)`` with ``op`` one
of ``OPERATORS`` and ``children`` a tuple, so trees are hashable.

Vocabulary (``VOCAB``, id = position, pad = 0)::

    id     0      1..10     11     12     13     14    15
    token  <pad>  "0".."9"  [MIN   [MAX   [MED   [SM   ]

Worked example, ``max(4, 3, min(2, 3), 1, 0) = 4``:

>>> text = "[MAX 4 3 [MIN 2 3 ] 1 0 ]"
>>> tree = parse(text)
>>> tree
('[MAX', (4, 3, ('[MIN', (2, 3)), 1, 0))
>>> evaluate(tree)
4
>>> encode(text).tolist()
[12, 5, 4, 11, 3, 4, 15, 2, 1, 15]
>>> to_text(tree) == text, len(to_tokens(tree))
(True, 10)
>>> evaluate(parse("[MED 3 8 1 6 ]")), evaluate(parse("[SM 7 8 9 ]"))
(4, 4)

(median of 1 3 6 8 is 4.5 -> 4; 7 + 8 + 9 = 24 -> 4.)  The LRA TSV files write
the same tree with extra parentheses around every (function, argument) pair;
``encode`` and ``parse`` drop them, as the S4 code does:

>>> to_lra_text(parse("[MAX 2 9 ]"))
'( ( ( [MAX 2 ) 9 ) ] )'
>>> encode("( ( ( [MAX 2 ) 9 ) ] )").tolist() == encode("[MAX 2 9 ]").tolist()
True

Sampler (``lra_benchmarks/data/listops.py``, ``generate_tree``): the root has
depth 1.  At depth < ``max_depth`` draw ``r ~ U(0, 1)``; at ``max_depth`` set
``r = 1``.  If ``r > VALUE_P = 0.25`` the node is a leaf with a uniform digit
(probability 0.75); otherwise it is an operator with ``randint(2, max_args)``
children (uniform, both ends included), each drawn recursively at depth + 1,
and a uniform operator.  So 3 in 4 draws are single digits, the mean branching
is 0.25 * 6 = 1.5 > 1 (with ``max_args = 10``) and big trees are cut by the
depth limit.  ``generate`` keeps a tree only when its length is inside the band
and its text is new (LRA collects trees in a ``set``); LRA keeps
``500 < length < 2000``, so the LRA band written inclusively is ``[501, 1999]``,
the defaults here.  Random numbers come from ``random.Random(seed)``: the same
seed gives the same data; the draws are LRA's, but the files in the LRA release
cannot be reproduced bit for bit (LRA set no seed).
"""

from __future__ import annotations

import random
from typing import NamedTuple, Union

import numpy as np

__all__ = [
    "OPERATORS", "END", "VALUE_P", "VOCAB", "PAD", "LRA_MIN_LENGTH", "LRA_MAX_LENGTH",
    "ListOpsData", "sample_tree", "to_tokens", "to_text", "to_lra_text", "parse",
    "evaluate", "encode", "decode", "max_tree_length", "generate",
]

OPERATORS = ("[MIN", "[MAX", "[MED", "[SM")
END = "]"
VALUE_P = 0.25
VOCAB = ("<pad>", *(str(d) for d in range(10)), *OPERATORS, END)
PAD = 0
LRA_MIN_LENGTH, LRA_MAX_LENGTH = 501, 1999  # LRA: 500 < length < 2000
_ID = {tok: i for i, tok in enumerate(VOCAB)}

Tree = Union[int, tuple]


class ListOpsData(NamedTuple):
    """Output of ``generate``: ``x`` (n, pad_to) int64 ids padded with ``PAD``,
    ``lengths`` (n,) int64 token counts, ``y`` (n,) int64 labels 0..9, ``texts``
    the n bracketed strings."""

    x: np.ndarray
    lengths: np.ndarray
    y: np.ndarray
    texts: list[str]


def _is_int(x: object) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _check_int(name: str, value: object, low: int) -> int:
    if not _is_int(value) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return int(value)


class _TooLong(Exception):
    pass


def _grow(rng: random.Random, depth: int, max_depth: int, max_args: int,
          count: list[int], budget: float) -> Tree:
    """One LRA ``generate_tree`` step; ``count[0]`` is the running token count."""
    r = rng.random() if depth < max_depth else 1.0
    if r > VALUE_P:
        count[0] += 1
        if count[0] > budget:
            raise _TooLong
        return rng.randrange(10)
    count[0] += 2
    if count[0] > budget:
        raise _TooLong
    n_args = rng.randint(2, max_args)
    children = tuple(_grow(rng, depth + 1, max_depth, max_args, count, budget)
                     for _ in range(n_args))
    return (rng.choice(OPERATORS), children)


def sample_tree(rng: random.Random, max_depth: int = 10, max_args: int = 10) -> Tree:
    """Draw one tree with LRA's sampler (see the module docstring)."""
    if not isinstance(rng, random.Random):
        raise ValueError(f"rng must be a random.Random, got {type(rng).__name__}")
    max_depth = _check_int("max_depth", max_depth, 1)
    max_args = _check_int("max_args", max_args, 2)
    return _grow(rng, 1, max_depth, max_args, [0], float("inf"))


def _check_tree(tree: object) -> None:
    if _is_int(tree):
        if not 0 <= tree <= 9:
            raise ValueError(f"leaf must be a digit 0..9, got {tree!r}")
        return
    if (not isinstance(tree, tuple) or len(tree) != 2 or tree[0] not in OPERATORS
            or not isinstance(tree[1], tuple) or len(tree[1]) < 1):
        raise ValueError(
            f"a tree is a digit 0..9 or (op, children) with op in {OPERATORS} and a "
            f"non-empty tuple of children, got {tree!r}")


def to_tokens(tree: Tree) -> list[str]:
    """Prefix tokens: ``("[MAX", (2, 9))`` -> ``["[MAX", "2", "9", "]"]``."""
    out: list[str] = []
    stack: list[object] = [tree]
    while stack:
        t = stack.pop()
        if isinstance(t, str):
            out.append(t)
            continue
        _check_tree(t)
        if _is_int(t):
            out.append(str(int(t)))
        else:
            op, children = t
            out.append(op)
            stack.append(END)
            stack.extend(reversed(children))
    return out


def to_text(tree: Tree) -> str:
    """Space-separated tokens, e.g. ``"[MAX 2 9 ]"``."""
    return " ".join(to_tokens(tree))


def to_lra_text(tree: Tree) -> str:
    """The LRA TSV form: every (function, argument) pair in parentheses."""
    _check_tree(tree)
    if _is_int(tree):
        return str(int(tree))
    op, children = tree
    s = op
    for child in children:
        s = f"( {s} {to_lra_text(child)} )"
    return f"( {s} {END} )"


def _shown(tok: str, most: int = 40) -> str:
    """``tok`` as an error message shows it: its repr, cut after ``most`` characters (a
    line of a data file can be one token of megabytes)."""
    return repr(tok) if len(tok) <= most else f"{tok[:most]!r}... ({len(tok):,} characters)"


def _split(text: str) -> list[str]:
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    return [t for t in text.split() if t not in ("(", ")")]


def parse(text: str) -> Tree:
    """Bracketed text (with or without LRA's parentheses) -> tree."""
    toks = _split(text)
    if not toks:
        raise ValueError("empty ListOps expression")
    stack: list[tuple[str, list]] = []
    root: Tree | None = None
    for pos, tok in enumerate(toks):
        if root is not None:
            raise ValueError(f"extra token {_shown(tok)} at position {pos} after a complete "
                             "expression")
        if tok in OPERATORS:
            stack.append((tok, []))
            continue
        if tok == END:
            if not stack:
                raise ValueError(f"unmatched {END!r} at position {pos}")
            op, children = stack.pop()
            if not children:
                raise ValueError(f"operator {op!r} closed without arguments at position {pos}")
            node: Tree = (op, tuple(children))
        elif tok in _ID and tok != VOCAB[PAD]:
            node = int(tok)
        else:
            raise ValueError(f"unknown token {_shown(tok)} at position {pos}; allowed: {VOCAB[1:]}")
        if stack:
            stack[-1][1].append(node)
        else:
            root = node
    if stack:
        raise ValueError(f"{len(stack)} operator(s) not closed with {END!r}")
    return root


def evaluate(tree: Tree) -> int:
    """Value of a tree (see the operator rules in the module docstring)."""
    _check_tree(tree)
    if _is_int(tree):
        return int(tree)
    op, children = tree
    vals = [evaluate(c) for c in children]
    if op == "[MIN":
        return min(vals)
    if op == "[MAX":
        return max(vals)
    if op == "[MED":
        return int(np.median(vals))
    return sum(vals) % 10


def encode(text: str) -> np.ndarray:
    """Text -> (L,) int64 ids in ``VOCAB`` (parentheses dropped)."""
    ids = []
    for pos, tok in enumerate(_split(text)):
        if tok not in _ID or tok == VOCAB[PAD]:
            raise ValueError(f"unknown token {_shown(tok)} at position {pos}; allowed: {VOCAB[1:]}")
        ids.append(_ID[tok])
    return np.array(ids, dtype=np.int64)  # (L,)


def decode(ids: np.ndarray) -> str:
    """(L,) ids -> text; ``PAD`` ids are skipped."""
    arr = np.asarray(ids)
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"ids must be a 1-D integer array, got shape {arr.shape}, dtype {arr.dtype}")
    bad = (arr < 0) | (arr >= len(VOCAB))
    if bad.any():
        raise ValueError(f"id {arr[bad][0]!r} out of range; allowed 0..{len(VOCAB) - 1}")
    return " ".join(VOCAB[i] for i in arr.tolist() if i != PAD)


def max_tree_length(max_depth: int = 10, max_args: int = 10) -> int:
    """Longest possible expression: a full ``max_args``-ary tree of ``max_depth`` levels."""
    max_depth = _check_int("max_depth", max_depth, 1)
    max_args = _check_int("max_args", max_args, 2)
    length = 1
    for _ in range(max_depth - 1):
        length = 2 + max_args * length
    return length


def generate(
    n: int,
    min_length: int = LRA_MIN_LENGTH,
    max_length: int = LRA_MAX_LENGTH,
    max_depth: int = 10,
    max_args: int = 10,
    seed: int | None = 0,
    pad_to: int | None = None,
    max_draws: int | None = None,
) -> ListOpsData:
    """``n`` distinct expressions with ``min_length <= length <= max_length``.

    Trees are drawn with ``sample_tree`` until ``n`` distinct texts fall in the
    band (a tree is abandoned as soon as it passes ``max_length`` tokens; this
    saves time and does not change which trees are kept).  ``x`` is padded to
    ``pad_to`` columns (default ``max_length``).  ``max_draws`` (default
    ``2000 * n + 100000``) bounds the number of trees drawn; running out raises
    a ``ValueError`` (the band is too narrow or holds fewer than n distinct trees).

    >>> data = generate(3, min_length=6, max_length=12, max_depth=3, max_args=3, seed=1)
    >>> data.texts[0], int(data.y[0]), int(data.lengths[0])
    ('[SM [MAX 8 6 8 ] 9 7 ]', 4, 9)
    >>> data.x[0].tolist()
    [14, 12, 9, 7, 9, 15, 10, 8, 15, 0, 0, 0]

    (8 + 9 + 7 = 24 -> 4.)
    """
    n = _check_int("n", n, 1)
    min_length = _check_int("min_length", min_length, 1)
    max_length = _check_int("max_length", max_length, 1)
    max_depth = _check_int("max_depth", max_depth, 1)
    max_args = _check_int("max_args", max_args, 2)
    if max_length < min_length:
        raise ValueError(f"max_length ({max_length}) must be >= min_length ({min_length})")
    longest = max_tree_length(max_depth, max_args)
    if min_length > longest:
        raise ValueError(
            f"min_length={min_length} is longer than any tree with max_depth={max_depth}, "
            f"max_args={max_args} (at most {longest} tokens)")
    if min_length > 1 and max_length < 4:
        raise ValueError(f"no tree has a length in [{min_length}, {max_length}]: "
                         "lengths are 1 (a digit) or >= 4")
    if seed is not None and not _is_int(seed):
        raise ValueError(f"seed must be an int or None, got {seed!r}")
    width = max_length if pad_to is None else _check_int("pad_to", pad_to, max_length)
    budget = 2000 * n + 100_000 if max_draws is None else _check_int("max_draws", max_draws, 1)

    rng = random.Random(None if seed is None else int(seed))
    seen: set[str] = set()
    trees: list[Tree] = []
    texts: list[str] = []
    for _ in range(budget):
        count = [0]
        try:
            tree = _grow(rng, 1, max_depth, max_args, count, max_length)
        except _TooLong:
            continue
        if count[0] < min_length:
            continue
        text = to_text(tree)
        if text in seen:
            continue
        seen.add(text)
        trees.append(tree)
        texts.append(text)
        if len(trees) == n:
            break
    else:
        raise ValueError(
            f"found only {len(trees)} of n={n} distinct trees with length in "
            f"[{min_length}, {max_length}] after max_draws={budget} draws; widen the band "
            "or raise max_depth / max_args / max_draws")

    x = np.full((n, width), PAD, dtype=np.int64)  # (n, width)
    lengths = np.empty(n, dtype=np.int64)  # (n,)
    for i, text in enumerate(texts):
        ids = encode(text)  # (L,)
        x[i, : len(ids)] = ids
        lengths[i] = len(ids)
    y = np.array([evaluate(t) for t in trees], dtype=np.int64)  # (n,)
    return ListOpsData(x, lengths, y, texts)
