"""Delayed recall: name the token seen ``tau`` steps before the end of a sequence.

The controlled memory-horizon task of Paper 2's chapter on LRA. A sequence of length
``L = margin + 1 + tau`` holds tokens drawn independently and uniformly from an alphabet
of ``alphabet`` symbols ``0 .. alphabet-1``; its label is the token at position
``L - 1 - tau``, i.e. at *delay* ``tau`` from the last position in the convention of
:mod:`sst_core.theory.memory` (delay 0 is the current, last input). ``margin`` tokens come
before the target, so the target is not the first input a state sees. A classifier that
reads the last position therefore needs exactly the memory ``M[tau]`` of that lag, and
nothing else helps: the other tokens are independent of the label, so without it the best
accuracy is chance, ``1 / alphabet``.

Worked example (``alphabet=8``, ``tau=3``, ``margin=2``, so ``L = 6``):

>>> d = generate(1, tau=3, margin=2, alphabet=8, seed=0)
>>> d.x[0].tolist(), int(d.y[0])
([6, 5, 4, 2, 2, 0], 4)

Positions 0..5 hold 6 5 4 2 2 0; the last position is 5, and ``5 - 3 = 2`` holds the
label, 4 (three tokens, 2 2 0, follow it). Tokens are integers for an embedding encoder
(:func:`one_hot` gives the one-hot form).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["DelayedRecall", "generate", "sequence_length", "target_position", "chance",
           "one_hot", "check_task"]

MAX_ALPHABET = 1024  # more symbols than any experiment needs; rejects typos such as 8e3


def _is_int(v: object) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def check_task(tau: object, margin: object, alphabet: object) -> tuple[int, int, int]:
    """``(tau, margin, alphabet)`` as ints, or a ValueError naming the bad value and the
    allowed range: ``tau`` an int >= 0, ``margin`` an int >= 0, ``alphabet`` an int in
    2..MAX_ALPHABET."""
    if not (_is_int(tau) and tau >= 0):
        raise ValueError(f"tau={tau!r} is not allowed: the delay must be an int >= 0")
    if not (_is_int(margin) and margin >= 0):
        raise ValueError(f"margin={margin!r} is not allowed: the tokens before the target "
                         "must be an int >= 0")
    if not (_is_int(alphabet) and 2 <= alphabet <= MAX_ALPHABET):
        raise ValueError(f"alphabet={alphabet!r} is not allowed: the number of symbols must "
                         f"be an int in 2..{MAX_ALPHABET}")
    return int(tau), int(margin), int(alphabet)


def sequence_length(tau: int, margin: int) -> int:
    """``L = margin + 1 + tau``: the tokens before the target, the target, the ``tau`` after."""
    tau, margin, _ = check_task(tau, margin, 2)
    return margin + 1 + tau


def target_position(length: int, tau: int) -> int:
    """The position of the label in a sequence of ``length``: ``length - 1 - tau``; a
    ValueError unless ``length >= tau + 1``."""
    tau, _, _ = check_task(tau, 0, 2)
    if not (_is_int(length) and length >= tau + 1):
        raise ValueError(f"L={length!r} is not allowed with tau={tau}: a sequence must be an "
                         f"int >= tau + 1 = {tau + 1} long to hold a token at delay tau")
    return int(length) - 1 - tau


def chance(alphabet: int) -> float:
    """The accuracy of any predictor that does not see the target token: ``1 / alphabet``."""
    return 1.0 / check_task(0, 0, alphabet)[2]


@dataclass(frozen=True)
class DelayedRecall:
    """``n`` sequences: ``x`` ``(n, L)`` int64 tokens, ``y`` ``(n,)`` int64 labels,
    ``y = x[:, L - 1 - tau]``."""

    x: np.ndarray
    y: np.ndarray
    tau: int
    margin: int
    alphabet: int

    @property
    def length(self) -> int:
        return self.x.shape[1]


def generate(n: int, *, tau: int, margin: int, alphabet: int = 8,
             seed: int | np.random.Generator = 0) -> DelayedRecall:
    """``n`` delayed-recall sequences (see the module docstring); ``seed`` an int or a
    ``numpy.random.Generator`` (a stream of fresh batches)."""
    tau, margin, alphabet = check_task(tau, margin, alphabet)
    if not (_is_int(n) and n >= 1):
        raise ValueError(f"n={n!r} is not allowed: the number of sequences must be an int >= 1")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    L = margin + 1 + tau
    x = rng.integers(0, alphabet, size=(n, L), dtype=np.int64)  # (n, L)
    y = x[:, target_position(L, tau)].copy()  # (n,)
    return DelayedRecall(x, y, tau, margin, alphabet)


def one_hot(x: np.ndarray, alphabet: int) -> np.ndarray:
    """``(..., L)`` tokens as ``(..., L, alphabet)`` float32 one-hot vectors."""
    _, _, alphabet = check_task(0, 0, alphabet)
    x = np.asarray(x)
    if x.size and (x.min() < 0 or x.max() >= alphabet):
        bad = x[(x < 0) | (x >= alphabet)].flat[0]
        raise ValueError(f"token {int(bad)} is outside the alphabet 0..{alphabet - 1}")
    return np.eye(alphabet, dtype=np.float32)[x]
