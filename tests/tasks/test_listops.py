"""Tests for sst_core.tasks.listops: the LRA ListOps generator.

Labels are checked against an evaluator written here from the LRA rules (a
recursive-descent parser over the token string), not against the module's own.
"""

from __future__ import annotations

import doctest
import random

import numpy as np
import pytest

import sst_core.tasks.listops as listops_module
from sst_core.tasks.listops import (
    LRA_MAX_LENGTH,
    LRA_MIN_LENGTH,
    OPERATORS,
    PAD,
    VOCAB,
    decode,
    encode,
    evaluate,
    generate,
    max_tree_length,
    parse,
    sample_tree,
    to_lra_text,
    to_text,
    to_tokens,
)


def reference(text: str) -> tuple[int, int, int]:
    """(value, depth, widest operator) of a bracketed expression, by recursive descent."""
    toks = [t for t in text.split() if t not in ("(", ")")]
    pos = 0

    def node(depth: int) -> tuple[int, int, int]:
        nonlocal pos
        tok = toks[pos]
        pos += 1
        if tok in [str(d) for d in range(10)]:
            return int(tok), depth, 0
        assert tok in ("[MIN", "[MAX", "[MED", "[SM"), tok
        vals, deepest, widest = [], depth, 0
        while toks[pos] != "]":
            v, d, w = node(depth + 1)
            vals.append(v)
            deepest, widest = max(deepest, d), max(widest, w)
        pos += 1
        widest = max(widest, len(vals))
        if tok == "[MIN":
            return min(vals), deepest, widest
        if tok == "[MAX":
            return max(vals), deepest, widest
        if tok == "[SM":
            return sum(vals) % 10, deepest, widest
        s = sorted(vals)
        m = len(s) // 2
        med = s[m] if len(s) % 2 else (s[m - 1] + s[m]) // 2  # floor of the middle mean
        return med, deepest, widest

    out = node(1)
    assert pos == len(toks), "trailing tokens"
    return out


@pytest.fixture(scope="module")
def lra_data():
    return generate(40, seed=0)


def test_lra_band_labels_and_encoding(lra_data) -> None:
    x, lengths, y, texts = lra_data
    assert x.shape == (40, LRA_MAX_LENGTH) and x.dtype == np.int64
    assert lengths.dtype == y.dtype == np.int64
    assert ((lengths >= LRA_MIN_LENGTH) & (lengths <= LRA_MAX_LENGTH)).all()
    assert len(set(texts)) == 40
    for i, text in enumerate(texts):
        value, depth, widest = reference(text)
        assert y[i] == value
        assert depth <= 10 and 2 <= widest <= 10
        assert len(text.split()) == lengths[i]
        assert decode(x[i]) == text
        assert (x[i, lengths[i]:] == PAD).all() and (x[i, : lengths[i]] != PAD).all()
    assert len(set(y.tolist())) > 3  # labels are not all the same


def test_band_depth_args_respected() -> None:
    data = generate(25, min_length=20, max_length=60, max_depth=4, max_args=3, seed=2)
    assert ((data.lengths >= 20) & (data.lengths <= 60)).all()
    for text, label in zip(data.texts, data.y):
        value, depth, widest = reference(text)
        assert value == label and depth <= 4 and widest <= 3


def test_deduplication_exhausts_small_band() -> None:
    # length-4 trees are one operator over two digits: 4 * 10 * 10 = 400 distinct
    data = generate(400, min_length=4, max_length=4, max_depth=2, max_args=2, seed=0)
    assert len(set(data.texts)) == 400
    assert data.x.shape == (400, 4)
    with pytest.raises(ValueError, match="found only 400 of n=401"):
        generate(401, min_length=4, max_length=4, max_depth=2, max_args=2, seed=0,
                 max_draws=20_000)


def test_determinism_by_seed() -> None:
    a = generate(5, min_length=30, max_length=200, seed=7)
    b = generate(5, min_length=30, max_length=200, seed=7)
    c = generate(5, min_length=30, max_length=200, seed=8)
    assert a.texts == b.texts
    np.testing.assert_array_equal(a.x, b.x)
    assert a.texts != c.texts
    d = generate(3, min_length=30, max_length=200, seed=np.int64(7))
    assert d.texts == a.texts[:3]
    assert len(generate(2, min_length=4, max_length=50, seed=None).texts) == 2


def test_pad_to() -> None:
    data = generate(3, min_length=10, max_length=40, seed=1, pad_to=64)
    assert data.x.shape == (3, 64)
    with pytest.raises(ValueError, match="pad_to"):
        generate(3, min_length=10, max_length=40, pad_to=39)


def test_sampler_probabilities() -> None:
    rng = random.Random(0)
    trees = [sample_tree(rng, max_depth=2, max_args=5) for _ in range(4000)]
    leaves = sum(isinstance(t, int) for t in trees)
    assert abs(leaves / 4000 - 0.75) < 0.03  # VALUE_P = 0.25 -> a leaf 3 times in 4
    widths = [len(t[1]) for t in trees if not isinstance(t, int)]
    counts = np.bincount(widths, minlength=6)[2:]
    assert (counts > 0).all() and counts.min() > 0.6 * counts.max()  # uniform on 2..5
    ops = {t[0] for t in trees if not isinstance(t, int)}
    assert ops == set(OPERATORS)
    # at max_depth every node is a leaf
    assert all(isinstance(sample_tree(rng, max_depth=1), int) for _ in range(50))


def test_evaluate_rules() -> None:
    cases = {
        "[MAX 4 3 [MIN 2 3 ] 1 0 ]": 4,
        "[MED 3 8 1 6 ]": 4,  # 4.5 floored
        "[MED 9 8 ]": 8,
        "[MED 5 1 7 ]": 5,
        "[SM 7 8 9 ]": 4,
        "[MIN [SM 9 9 ] [MAX 1 2 ] ]": 2,
        "7": 7,
    }
    for text, value in cases.items():
        assert evaluate(parse(text)) == value == reference(text)[0]
        assert to_text(parse(text)) == text
        assert evaluate(parse(to_lra_text(parse(text)))) == value


def test_encode_decode_vocab() -> None:
    assert VOCAB[PAD] == "<pad>" and len(VOCAB) == 16
    ids = encode("( ( ( [SM 2 ) 9 ) ] )")
    assert ids.tolist() == [14, 3, 10, 15] and ids.dtype == np.int64
    assert decode(np.array([14, 3, 10, 15, 0, 0])) == "[SM 2 9 ]"
    assert to_tokens(("[MIN", (1, ("[MAX", (2, 3))))) == ["[MIN", "1", "[MAX", "2", "3", "]", "]"]


def test_max_tree_length() -> None:
    assert max_tree_length(1, 10) == 1
    assert max_tree_length(2, 3) == 5
    assert max_tree_length(3, 2) == 2 + 2 * 4


@pytest.mark.parametrize("text, match", [
    ("", "empty"),
    ("[MAX 1 2", "not closed"),
    ("[MAX 1 2 ] ]", "after a complete"),
    ("1 2", "after a complete"),
    ("[MAX ]", "without arguments"),
    ("]", "unmatched"),
    ("[FIRST 1 2 ]", "'\\[FIRST'"),
    ("[MAX 10 2 ]", "'10'"),
])
def test_parse_errors(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse(text)


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="'<pad>'"):
        encode("[MAX <pad> 1 ]")
    with pytest.raises(ValueError, match="out of range"):
        decode(np.array([3, 16]))
    with pytest.raises(ValueError, match="1-D integer"):
        decode(np.array([1.0]))
    with pytest.raises(ValueError, match="digit"):
        evaluate(12)
    with pytest.raises(ValueError, match="a tree is"):
        evaluate(("[MAX", ()))
    with pytest.raises(ValueError, match="random.Random"):
        sample_tree(np.random.default_rng(0))  # type: ignore[arg-type]


@pytest.mark.parametrize("kwargs, match", [
    ({"n": 0}, "n must be an int >= 1, got 0"),
    ({"n": True}, "n must be"),
    ({"n": 2.0}, "n must be"),
    ({"min_length": 0}, "min_length"),
    ({"min_length": 50, "max_length": 40}, r"max_length \(40\) must be >= min_length \(50\)"),
    ({"max_args": 1}, "max_args must be an int >= 2, got 1"),
    ({"max_depth": 0}, "max_depth must be an int >= 1, got 0"),
    ({"max_depth": 2, "max_args": 3, "min_length": 6}, "longer than any tree"),
    ({"min_length": 2, "max_length": 3}, "lengths are 1"),
    ({"seed": 1.5}, "seed must be an int or None, got 1.5"),
    ({"max_draws": 0}, "max_draws"),
])
def test_bad_parameters(kwargs: dict, match: str) -> None:
    args = {"n": 2, "min_length": 10, "max_length": 40, **kwargs}
    with pytest.raises(ValueError, match=match):
        generate(**args)


def test_module_doctests() -> None:
    result = doctest.testmod(listops_module)
    assert result.attempted > 0 and result.failed == 0
