"""The delayed-recall generator: labels sit at the stated lag, perfect memory of that lag
solves it, nothing else beats chance, and bad arguments are clear errors."""
import doctest

import numpy as np
import pytest

from sst_core.tasks import delayed_recall
from sst_core.tasks.delayed_recall import chance, generate, one_hot, sequence_length, target_position


def test_docstring_example():
    assert doctest.testmod(delayed_recall).failed == 0


@pytest.mark.parametrize("tau,margin", [(0, 0), (1, 3), (7, 5), (40, 2)])
def test_labels_are_the_input_at_the_lag(tau, margin):
    d = generate(64, tau=tau, margin=margin, alphabet=8, seed=1)
    L = margin + 1 + tau
    assert d.x.shape == (64, L) == (64, sequence_length(tau, margin)) and d.length == L
    assert d.x.dtype == d.y.dtype == np.int64
    assert (d.x >= 0).all() and (d.x < 8).all()
    np.testing.assert_array_equal(d.y, d.x[:, L - 1 - tau])
    assert target_position(L, tau) == margin


def test_perfect_memory_of_the_lag_solves_it_and_the_wrong_lag_does_not():
    tau, n = 12, 4000
    d = generate(n, tau=tau, margin=4, alphabet=8, seed=2)
    oracle = d.x[:, d.length - 1 - tau]  # a model that remembers exactly lag tau
    assert (oracle == d.y).mean() == 1.0
    off_by_one = d.x[:, d.length - 2 - tau]  # remembers lag tau + 1 instead
    sigma = np.sqrt(chance(8) * (1 - chance(8)) / n)
    assert abs((off_by_one == d.y).mean() - chance(8)) < 4 * sigma


def test_an_input_blind_predictor_is_at_chance():
    n, alphabet = 4000, 8
    d = generate(n, tau=5, margin=3, alphabet=alphabet, seed=3)
    sigma = np.sqrt(chance(alphabet) * (1 - chance(alphabet)) / n)
    for constant in range(alphabet):  # every constant answer
        assert abs((d.y == constant).mean() - 1 / alphabet) < 4 * sigma
    # constant inputs carry no information either: the answer for them is one symbol
    assert chance(alphabet) == 0.125


def test_fresh_batches_from_one_stream_and_one_hot():
    rng = np.random.default_rng(0)
    a, b = generate(8, tau=2, margin=1, seed=rng), generate(8, tau=2, margin=1, seed=rng)
    assert not np.array_equal(a.x, b.x)
    np.testing.assert_array_equal(generate(8, tau=2, margin=1, seed=0).x,
                                  generate(8, tau=2, margin=1, seed=0).x)
    oh = one_hot(a.x, 8)
    assert oh.shape == (8, 4, 8) and (oh.sum(-1) == 1).all()
    np.testing.assert_array_equal(oh.argmax(-1), a.x)
    with pytest.raises(ValueError, match="token 9 is outside the alphabet 0..7"):
        one_hot(np.array([9]), 8)


@pytest.mark.parametrize("kw,match", [
    (dict(tau=-1), r"tau=-1 is not allowed: the delay must be an int >= 0"),
    (dict(tau=2.5), r"tau=2.5 is not allowed"),
    (dict(tau=True), r"tau=True is not allowed"),
    (dict(margin=-2), r"margin=-2 is not allowed: .* int >= 0"),
    (dict(alphabet=1), r"alphabet=1 is not allowed: .* int in 2..1024"),
    (dict(alphabet=8.0), r"alphabet=8.0 is not allowed"),
    (dict(n=0), r"n=0 is not allowed: .* int >= 1"),
])
def test_bad_arguments_name_the_value_and_the_range(kw, match):
    args = dict(n=4, tau=3, margin=2, alphabet=8) | kw
    with pytest.raises(ValueError, match=match):
        generate(args.pop("n"), **args)


def test_a_length_too_short_for_the_lag():
    with pytest.raises(ValueError, match=r"L=5 is not allowed with tau=5: .* >= tau \+ 1 = 6"):
        target_position(5, 5)
    assert target_position(6, 5) == 0
