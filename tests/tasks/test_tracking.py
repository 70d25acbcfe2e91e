"""Tests for sst_core.tasks.tracking: group word problems."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import sst_core.tasks.tracking as tracking_module
from sst_core.groups import get_group
from sst_core.tasks.tracking import running_product, sample, vocabulary

GROUPS = ["C2", "C6", "S3", "C2xS3"]
MODES = ["generators", "all"]


def loop_states(group_name: str, tokens: np.ndarray) -> np.ndarray:
    """Reference: plain Python left-to-right products with group.multiply."""
    g = get_group(group_name)
    out = np.zeros_like(tokens)
    for i, word in enumerate(tokens.tolist()):
        acc = g.identity
        for t, x in enumerate(word):
            acc = g.multiply(acc, x)
            out[i, t] = acc
    return out


@pytest.mark.parametrize("name", GROUPS)
@pytest.mark.parametrize("mode", MODES)
def test_sample_matches_loop(name: str, mode: str) -> None:
    tokens, states = sample(name, n=50, length=17, tokens=mode, seed=123)
    assert tokens.shape == states.shape == (50, 17)
    assert tokens.dtype == states.dtype == np.int64
    np.testing.assert_array_equal(states, loop_states(name, tokens))
    np.testing.assert_array_equal(states[:, 0], tokens[:, 0])
    # tokens only from the vocabulary; with enough draws every token appears
    vocab = vocabulary(name, mode)
    assert np.isin(tokens, vocab).all()
    assert set(np.unique(tokens).tolist()) == set(vocab.tolist())


def test_group_object_and_name_agree() -> None:
    g = get_group("S3")
    a = sample(g, 8, 9, seed=5)
    b = sample("S3", 8, 9, seed=5)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_vocabulary() -> None:
    np.testing.assert_array_equal(vocabulary("C2"), [0, 1])
    np.testing.assert_array_equal(vocabulary("C6", "all"), np.arange(6))
    s3 = get_group("S3")
    v = vocabulary(s3, "generators")
    assert sorted(s3.elements[i] for i in v) == sorted(["e", "(0 1)", "(0 1 2)"])
    assert np.all(np.diff(v) > 0) and v[0] == s3.identity
    assert vocabulary("C2xS3").tolist() == sorted({0, *get_group("C2xS3").generators})
    with pytest.raises(ValueError, match="'gens'"):
        vocabulary("S3", "gens")


def test_determinism() -> None:
    a_tok, a_st = sample("S3", 20, 30, tokens="all", seed=7)
    b_tok, b_st = sample("S3", 20, 30, tokens="all", seed=7)
    c_tok, _ = sample("S3", 20, 30, tokens="all", seed=8)
    np.testing.assert_array_equal(a_tok, b_tok)
    np.testing.assert_array_equal(a_st, b_st)
    assert not np.array_equal(a_tok, c_tok)


def test_seed_none_and_numpy_int() -> None:
    tok, st = sample("C6", 4, 5, seed=None)
    assert tok.shape == st.shape == (4, 5)
    t1, _ = sample("C6", 4, 5, seed=np.int64(3))
    t2, _ = sample("C6", 4, 5, seed=3)
    np.testing.assert_array_equal(t1, t2)


def test_length_one_and_n_one() -> None:
    tok, st = sample("S3", 5, 1, tokens="all", seed=0)
    assert tok.shape == (5, 1)
    np.testing.assert_array_equal(tok, st)
    tok, st = sample("C2", 1, 4, seed=0)
    assert tok.shape == st.shape == (1, 4)


def test_parity_c2() -> None:
    tok, st = sample("C2", 30, 25, seed=1)
    np.testing.assert_array_equal(st, np.cumsum(tok, axis=1) % 2)


@pytest.mark.parametrize("length", [0, -3, 2.5, True, "5", None])
def test_bad_length(length: object) -> None:
    with pytest.raises(ValueError, match="length") as info:
        sample("S3", 4, length)  # type: ignore[arg-type]
    assert repr(length) in str(info.value)


@pytest.mark.parametrize("n", [-1, 0, 1.0, False])
def test_bad_n(n: object) -> None:
    with pytest.raises(ValueError, match="n must be") as info:
        sample("S3", n, 5)  # type: ignore[arg-type]
    assert repr(n) in str(info.value)


def test_bad_tokens_group_seed() -> None:
    with pytest.raises(ValueError, match="'gens'"):
        sample("S3", 4, 5, tokens="gens")
    with pytest.raises(ValueError, match="'S0'"):
        sample("S0", 4, 5)
    with pytest.raises(ValueError, match="seed"):
        sample("S3", 4, 5, seed=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seed"):
        sample("S3", 4, 5, seed=True)


def test_running_product_3d() -> None:
    g = get_group("C2xS3")
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, g.order, size=(3, 4, 6))
    states = running_product(g, tokens)
    assert states.shape == (3, 4, 6) and states.dtype == np.int64
    ref = loop_states("C2xS3", tokens.reshape(12, 6)).reshape(3, 4, 6)
    np.testing.assert_array_equal(states, ref)
    # 1-D input and int32 input work too
    np.testing.assert_array_equal(running_product(g, tokens[0, 0].astype(np.int32)), states[0, 0])


def test_running_product_bad_input() -> None:
    with pytest.raises(ValueError, match="6"):
        running_product("S3", np.array([0, 6]))
    with pytest.raises(ValueError, match="-1"):
        running_product("S3", np.array([[0, -1]]))
    with pytest.raises(ValueError, match="integer"):
        running_product("S3", np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="integer"):
        running_product("S3", np.array([True, False]))


def test_module_doctests() -> None:
    result = doctest.testmod(tracking_module)
    assert result.attempted > 0 and result.failed == 0
