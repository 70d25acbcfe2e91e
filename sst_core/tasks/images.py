"""Sequential digits: classify an image read one pixel at a time.

This is a stand-in for LRA's sequential CIFAR ("Image", 32 x 32 grayscale, L =
1024), which cannot be downloaded here.  It uses scikit-learn's bundled digits
(``sklearn.datasets.load_digits``: 1797 images of 8 x 8 pixels with values
0..16, 10 classes, no download).  ``lra.read_cifar10`` reads the real CIFAR-10
when a user supplies it.

Encoding: pixel values are divided by 16 (to [0, 1]), optionally resampled to
``side x side`` with half-pixel centres (the same as
``torch.nn.functional.interpolate`` with ``mode="nearest-exact"``, or
``mode="bilinear", align_corners=False``), flattened row-major into a sequence
of length ``side**2`` with one channel (``x[t, 0] = image[t // side, t % side]``),
and, with ``normalize``, standardised by the mean and standard deviation of the
training pixels (S4 normalises CIFAR by fixed dataset statistics).

Splits (``digits_split_indices``): one permutation of the 1797 images by
``seed``; the first ``round(test_fraction * 1797)`` are test, the next
``round(val_fraction * 1797)`` validation, the rest train.

>>> data = load_digits_sequences(side=16, seed=0)
>>> {k: v.x.shape for k, v in data.items()}
{'train': (1258, 256, 1), 'val': (180, 256, 1), 'test': (359, 256, 1)}
>>> data["train"].y[:5].tolist(), int(data["train"].lengths[0])
([5, 2, 6, 0, 8], 256)

Worked example of the upscaling matrix, 2 pixels -> 4 (``W @ column``):

>>> resize_matrix(2, 4, "bilinear").tolist()
[[1.0, 0.0], [0.75, 0.25], [0.25, 0.75], [0.0, 1.0]]
>>> resize_matrix(2, 4, "nearest").tolist()
[[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]]
"""

from __future__ import annotations

import numpy as np

from sst_core.tasks.lra import Split

__all__ = ["RESIZE_METHODS", "DIGITS_SIDE", "resize_matrix", "digits_images",
           "digits_split_indices", "load_digits_sequences"]

RESIZE_METHODS = ("nearest", "bilinear")
DIGITS_SIDE = 8


def _is_int(x: object) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def resize_matrix(n_in: int, n_out: int, method: str = "bilinear") -> np.ndarray:
    """(n_out, n_in) matrix that resamples one axis; images go as ``W @ img @ W.T``."""
    for name, v in (("n_in", n_in), ("n_out", n_out)):
        if not _is_int(v) or v < 1:
            raise ValueError(f"{name} must be an int >= 1, got {v!r}")
    if method not in RESIZE_METHODS:
        raise ValueError(f"unknown method {method!r}; allowed: {RESIZE_METHODS}")
    src = (np.arange(n_out) + 0.5) * n_in / n_out - 0.5  # (n_out,) source coordinate
    W = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    if method == "nearest":
        W[rows, np.clip(np.floor(src + 0.5), 0, n_in - 1).astype(int)] = 1.0
        return W
    src = np.clip(src, 0, n_in - 1)
    i0 = np.floor(src).astype(int)
    i1 = np.minimum(i0 + 1, n_in - 1)
    frac = src - i0
    np.add.at(W, (rows, i0), 1 - frac)
    np.add.at(W, (rows, i1), frac)
    return W


def digits_images(side: int = DIGITS_SIDE, method: str = "bilinear") -> tuple[np.ndarray, np.ndarray]:
    """All 1797 digits as float images in [0, 1], (1797, side, side), and labels (1797,) int64."""
    if not _is_int(side) or side < 1:
        raise ValueError(f"side must be an int >= 1, got {side!r}")
    if method not in RESIZE_METHODS:
        raise ValueError(f"unknown method {method!r}; allowed: {RESIZE_METHODS}")
    from sklearn.datasets import load_digits

    bunch = load_digits()
    images = bunch.images.astype(np.float64) / 16.0  # (n, 8, 8)
    if side != DIGITS_SIDE:
        W = resize_matrix(DIGITS_SIDE, side, method)  # (side, 8)
        images = np.einsum("ia,nab,jb->nij", W, images, W)  # (n, side, side)
    return images, bunch.target.astype(np.int64)


def digits_split_indices(n: int, val_fraction: float = 0.1, test_fraction: float = 0.2,
                         seed: int = 0) -> dict[str, np.ndarray]:
    """Disjoint index arrays ``train``, ``val``, ``test`` covering ``range(n)``."""
    if not _is_int(n) or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    for name, v in (("val_fraction", val_fraction), ("test_fraction", test_fraction)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                or not 0 <= v < 1:
            raise ValueError(f"{name} must be a number in [0, 1), got {v!r}")
    if val_fraction + test_fraction >= 1:
        raise ValueError(f"val_fraction + test_fraction must be < 1, got "
                         f"{val_fraction} + {test_fraction}")
    if not _is_int(seed):
        raise ValueError(f"seed must be an int, got {seed!r}")
    order = np.random.default_rng(seed).permutation(n)
    n_test, n_val = round(test_fraction * n), round(val_fraction * n)
    if n_test + n_val >= n:
        raise ValueError(f"the fractions leave no training images out of n={n}")
    return {"train": order[n_test + n_val:], "val": order[n_test:n_test + n_val],
            "test": order[:n_test]}


def load_digits_sequences(
    side: int = DIGITS_SIDE,
    method: str = "bilinear",
    val_fraction: float = 0.1,
    test_fraction: float = 0.2,
    seed: int = 0,
    normalize: bool = True,
) -> dict[str, Split]:
    """Train / val / test ``Split`` s with ``x`` (n, side**2, 1) float32 and ``y`` (n,) int64.

    ``lengths`` are all ``side**2``.  See the module docstring for the encoding.
    """
    if not isinstance(normalize, (bool, np.bool_)):
        raise ValueError(f"normalize must be a bool, got {normalize!r}")
    images, labels = digits_images(side, method)  # (n, side, side), (n,)
    n = len(labels)
    idx = digits_split_indices(n, val_fraction, test_fraction, seed)
    seq = images.reshape(n, side * side, 1)  # (n, L, 1), row-major
    if normalize:
        train = seq[idx["train"]]
        mean, std = train.mean(), train.std()
        seq = (seq - mean) / std
    seq = seq.astype(np.float32)
    return {k: Split(seq[i], np.full(len(i), side * side, np.int64), labels[i])
            for k, i in idx.items()}
