"""Group word problems: track the running product of a word of group elements.

A word is a sequence of group elements ``x_1, x_2, ..., x_L`` (the tokens) and
the target at step t is the running product ``x_1 * x_2 * ... * x_t``,
multiplied left to right with the group's table (see ``sst_core.groups`` for
the convention).  Tokens and states are both element indices, so a model's
vocabulary size is ``group.order``.

Example in S3 (permutations, ``(a*b)(i) = a(b(i))``):

>>> from sst_core.groups import get_group
>>> g = get_group("S3")
>>> word = np.array([g.index(x) for x in ["(0 1)", "(1 2)", "e", "(0 1)"]])
>>> [g.elements[i] for i in running_product(g, word)]
['(0 1)', '(0 1 2)', '(0 1 2)', '(0 2)']

since (0 1)*(1 2) = (0 1 2) and (0 1 2)*(0 1) = (0 2).
"""

from __future__ import annotations

import numpy as np

from sst_core.groups import Group, get_group

__all__ = ["TOKEN_MODES", "vocabulary", "sample", "running_product"]

TOKEN_MODES = ("generators", "all")


def _as_group(group: Group | str) -> Group:
    if isinstance(group, Group):
        return group
    return get_group(group)


def _is_int(x: object) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def vocabulary(group: Group | str, tokens: str = "generators") -> np.ndarray:
    """Sorted, unique element indices that a word may use.

    ``"generators"``: the identity plus the group's standard generators.  The
    identity is included so that words are not forced to change the state at
    every step: with generators alone, C2's only token would be its generator,
    every word would be the same fixed input and parity would be trivial.

    ``"all"``: every element, ``0 .. order-1``.
    """
    g = _as_group(group)
    if tokens == "generators":
        return np.unique(np.array([g.identity, *g.generators], dtype=np.int64))  # (k,)
    if tokens == "all":
        return np.arange(g.order, dtype=np.int64)  # (order,)
    raise ValueError(f"unknown token mode {tokens!r}; allowed: {TOKEN_MODES}")


def running_product(group: Group | str, tokens: np.ndarray) -> np.ndarray:
    """Running products along the last axis of an integer array.

    Args:
        group: a ``Group`` or a name for ``get_group``.
        tokens: ``(..., L)`` integer array of element indices in ``0 .. order-1``.

    Returns:
        ``(..., L)`` int64 array with ``states[..., t] = x_1 * ... * x_(t+1)``.
    """
    g = _as_group(group)
    tok = np.asarray(tokens)
    if tok.dtype == np.bool_ or not np.issubdtype(tok.dtype, np.integer):
        raise ValueError(f"tokens must be an integer array, got dtype {tok.dtype}")
    if tok.ndim == 0:
        raise ValueError("tokens must have at least one axis (..., L), got a scalar")
    bad = (tok < 0) | (tok >= g.order)
    if bad.any():
        value = tok[bad].flat[0]
        raise ValueError(
            f"token {value!r} out of range for {g.name}; allowed 0..{g.order - 1}"
        )
    tok = tok.astype(np.int64)  # (..., L)
    states = np.empty_like(tok)  # (..., L)
    if tok.shape[-1] == 0:
        return states
    states[..., 0] = tok[..., 0]
    for t in range(1, tok.shape[-1]):
        states[..., t] = g.table[states[..., t - 1], tok[..., t]]
    return states


# the most tokens one call of sample draws (words x length): 2**28 ids are 4 GiB of
# tokens and states; raise it here for a larger draw
MAX_TOKENS = 2**28


def sample(
    group: Group | str,
    n: int,
    length: int,
    tokens: str = "generators",
    seed: int | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``n`` random words of ``length`` tokens and their running products.

    Tokens are i.i.d. uniform over ``vocabulary(group, tokens)`` using
    ``np.random.default_rng(seed)``; the same seed gives the same data.

    Returns:
        ``(tokens, states)``, both ``(n, length)`` int64, with
        ``states[:, t] = tokens[:, 0] * ... * tokens[:, t]``.

    >>> from sst_core.groups import get_group
    >>> g = get_group("S3")
    >>> toks, states = sample(g, n=1, length=5, tokens="all", seed=0)
    >>> [g.elements[i] for i in toks[0]]
    ['(0 2)', '(0 1 2)', '(0 1 2)', '(1 2)', '(1 2)']
    >>> [g.elements[i] for i in states[0]]
    ['(0 2)', '(0 1)', '(1 2)', 'e', '(1 2)']
    """
    if not _is_int(n) or n < 1:
        raise ValueError(f"n={n!r} is not allowed: n must be an int >= 1 (words to draw)")
    if not _is_int(length) or length < 1:
        raise ValueError(f"length={length!r} is not allowed: length must be an int >= 1")
    if seed is not None and (not _is_int(seed) or seed < 0):
        raise ValueError(f"seed={seed!r} is not allowed: seed must be a non-negative int or None")
    if n * length > MAX_TOKENS:
        raise ValueError(f"n x length = {n} x {length} = {n * length} tokens is above the cap "
                         f"{MAX_TOKENS} (two int64 arrays of that size: "
                         f"{16 * n * length / 2**30:.3g} GiB); draw fewer or shorter words, or "
                         "raise sst_core.tasks.tracking.MAX_TOKENS")
    g = _as_group(group)
    vocab = vocabulary(g, tokens)  # (k,)
    rng = np.random.default_rng(seed)
    toks = vocab[rng.integers(0, len(vocab), size=(int(n), int(length)))]  # (n, length)
    return toks, running_product(g, toks)
