"""Tests for sst_core.tasks.images: sequential digits (the stand-in for sequential CIFAR)."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import sst_core.tasks.images as images_module
from sst_core.tasks.images import (
    digits_images,
    digits_split_indices,
    load_digits_sequences,
    resize_matrix,
)


@pytest.fixture(scope="module")
def raw():
    return digits_images()


def test_split_sizes_and_shapes() -> None:
    data = load_digits_sequences()
    sizes = {k: len(v) for k, v in data.items()}
    assert sizes == {"train": 1258, "val": 180, "test": 359}
    for split in data.values():
        assert split.x.dtype == np.float32 and split.x.shape[1:] == (64, 1)
        assert split.y.dtype == np.int64 and set(np.unique(split.y)) <= set(range(10))
        assert (split.lengths == 64).all()
    assert len(np.unique(data["train"].y)) == 10


def test_indices_disjoint_and_cover() -> None:
    idx = digits_split_indices(1797, 0.15, 0.25, seed=3)
    together = np.concatenate(list(idx.values()))
    assert len(together) == 1797 and len(np.unique(together)) == 1797
    assert len(idx["val"]) == round(0.15 * 1797) and len(idx["test"]) == round(0.25 * 1797)


def test_splits_follow_indices_without_overlap(raw) -> None:
    images, labels = raw
    data = load_digits_sequences(seed=5, normalize=False)
    idx = digits_split_indices(1797, seed=5)
    for k, split in data.items():
        np.testing.assert_allclose(split.x[..., 0], images[idx[k]].reshape(-1, 64), rtol=1e-6)
        np.testing.assert_array_equal(split.y, labels[idx[k]])
    assert not set(idx["train"]) & set(idx["val"])
    assert not set(idx["train"]) & set(idx["test"])
    assert not set(idx["val"]) & set(idx["test"])
    assert 0 <= data["train"].x.min() and data["train"].x.max() <= 1


def test_determinism() -> None:
    a = load_digits_sequences(seed=1)
    b = load_digits_sequences(seed=1)
    c = load_digits_sequences(seed=2)
    for k in a:
        np.testing.assert_array_equal(a[k].x, b[k].x)
        np.testing.assert_array_equal(a[k].y, b[k].y)
    assert not np.array_equal(a["test"].y, c["test"].y)


def test_normalised_by_train_statistics() -> None:
    data = load_digits_sequences(side=16)
    x = data["train"].x
    assert abs(float(x.mean())) < 1e-4 and abs(float(x.std()) - 1) < 1e-4
    assert abs(float(data["test"].x.mean())) < 0.1


def test_nearest_upscale_repeats_pixels(raw) -> None:
    images, _ = raw
    data = load_digits_sequences(side=16, method="nearest", normalize=False, seed=0)
    idx = digits_split_indices(1797, seed=0)
    up = np.kron(images[idx["val"]], np.ones((1, 2, 2)))  # (n, 16, 16)
    np.testing.assert_allclose(data["val"].x[..., 0], up.reshape(-1, 256), rtol=1e-6)
    assert data["val"].x.shape == (180, 256, 1) and (data["val"].lengths == 256).all()


def test_bilinear_upscale(raw) -> None:
    images, _ = raw
    up, _ = digits_images(side=32, method="bilinear")
    assert up.shape == (1797, 32, 32)
    assert up.min() >= 0 and up.max() <= 1
    np.testing.assert_allclose(up.mean(axis=(1, 2)), images.mean(axis=(1, 2)), atol=0.02)
    W = resize_matrix(8, 32, "bilinear")
    np.testing.assert_allclose(W.sum(1), 1.0)
    np.testing.assert_allclose(resize_matrix(8, 8, "bilinear"), np.eye(8))
    np.testing.assert_allclose(resize_matrix(8, 8, "nearest"), np.eye(8))
    # downscaling works too
    assert digits_images(side=4, method="nearest")[0].shape == (1797, 4, 4)


@pytest.mark.parametrize("n_out", [4, 5, 12, 32])
def test_resize_matches_torch(n_out: int) -> None:
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).random((8, 8))
    t = torch.tensor(x)[None, None]
    for method, kwargs in (("nearest", {"mode": "nearest-exact"}),
                           ("bilinear", {"mode": "bilinear", "align_corners": False})):
        W = resize_matrix(8, n_out, method)
        ref = torch.nn.functional.interpolate(t, size=(n_out, n_out), **kwargs)[0, 0].numpy()
        np.testing.assert_allclose(W @ x @ W.T, ref, atol=1e-12)


@pytest.mark.parametrize("kwargs, match", [
    ({"side": 0}, "side must be an int >= 1, got 0"),
    ({"side": 16.0}, "side must be"),
    ({"method": "cubic"}, "'cubic'"),
    ({"val_fraction": -0.1}, r"val_fraction must be a number in \[0, 1\), got -0.1"),
    ({"test_fraction": 1.0}, "test_fraction"),
    ({"val_fraction": 0.5, "test_fraction": 0.5}, "must be < 1"),
    ({"seed": 1.5}, "seed must be an int, got 1.5"),
    ({"normalize": "yes"}, "normalize must be a bool"),
])
def test_bad_arguments(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        load_digits_sequences(**kwargs)


def test_bad_resize_and_indices() -> None:
    with pytest.raises(ValueError, match="n_out"):
        resize_matrix(8, 0)
    with pytest.raises(ValueError, match="n must be"):
        digits_split_indices(0)
    with pytest.raises(ValueError, match="no training images"):
        digits_split_indices(3, 0.5, 0.45)


def test_module_doctests() -> None:
    result = doctest.testmod(images_module)
    assert result.attempted > 0 and result.failed == 0
