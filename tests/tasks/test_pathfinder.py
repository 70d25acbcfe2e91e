"""Tests for sst_core.tasks.pathfinder: the Pathfinder image generator."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import sst_core.tasks.pathfinder as pathfinder_module
from sst_core.tasks.pathfinder import (
    PathfinderParams,
    as_sequence,
    generate,
    lra_params,
)


def chains(pixels: np.ndarray, link: int) -> np.ndarray:
    """Component label of each pixel (k, 2), joining pixels at Chebyshev distance <= link."""
    parent = list(range(len(pixels)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    cheb = np.abs(pixels[:, None, :] - pixels[None, :, :]).max(-1)  # (k, k)
    for i, j in zip(*np.nonzero(cheb <= link)):
        parent[find(i)] = find(j)
    return np.array([find(i) for i in range(len(pixels))])


def check_image(image, member, markers, label, p: PathfinderParams) -> None:
    """Ground truth of one image: ink where the membership is, one chain per contour,
    contours kept apart, markers on the contours the label says."""
    assert ((image > 0) == (member > 0)).all()
    ids = sorted(set(np.unique(member).tolist()) - {0})
    assert ids == list(range(1, 3 + p.n_distractors))
    coords = {c: np.argwhere(member == c) for c in ids}
    for c, pix in coords.items():
        assert len(set(chains(pix, p.link).tolist())) == 1, f"contour {c} is not one chain"
    for a in ids:
        for b in ids:
            if a < b:
                gap = np.abs(coords[a][:, None] - coords[b][None]).max(-1).min()
                assert gap >= p.separation, f"contours {a} and {b} are {gap} px apart"
    r0, r1 = np.floor(markers).astype(int)
    m0, m1 = member[r0[0], r0[1]], member[r1[0], r1[1]]
    assert {m0, m1} <= {1, 2}
    assert (m0 == m1) == (label == 1)


@pytest.fixture(scope="module")
def data():
    return generate(24, seed=0)


def test_shapes_and_balance(data) -> None:
    assert data.images.shape == (24, 32, 32) and data.images.dtype == np.uint8
    assert data.membership.shape == (24, 32, 32) and data.membership.dtype == np.int16
    assert data.markers.shape == (24, 2, 2)
    assert data.y.dtype == np.int64 and data.y.sum() == 12
    assert set(data.y.tolist()) == {0, 1}
    assert data.images.max() == 255  # markers at full intensity


def test_labels_match_connectivity(data) -> None:
    p = PathfinderParams()
    for i in range(len(data.y)):
        check_image(data.images[i], data.membership[i], data.markers[i], data.y[i], p)


def test_markers_inside_padding_box(data) -> None:
    assert ((data.markers >= 1) & (data.markers <= 31)).all()
    dist = np.linalg.norm(data.markers[:, 0] - data.markers[:, 1], axis=1)
    assert (dist >= 2).all()  # two distinct contour ends


def test_determinism_and_odd_n() -> None:
    a = generate(5, seed=3)
    b = generate(5, seed=3)
    c = generate(5, seed=4)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(a.images, c.images)
    assert a.y.sum() == 2  # n // 2 positives


@pytest.mark.parametrize("size", [48, 64])
def test_larger_sizes_default_geometry(size: int) -> None:
    d = generate(4, seed=1, size=size)
    p = PathfinderParams(size=size)
    assert d.images.shape == (4, size, size) and d.y.sum() == 2
    for i in range(4):
        check_image(d.images[i], d.membership[i], d.markers[i], d.y[i], p)


def test_lra_128_easy() -> None:
    p = lra_params(128, "easy")
    d = generate(2, p, seed=0)
    assert d.images.shape == (2, 128, 128)
    for i in range(2):
        check_image(d.images[i], d.membership[i], d.markers[i], d.y[i], p)
    assert as_sequence(d.images, "tokens").shape == (2, 16384)


def test_lra_params_table() -> None:
    p = lra_params(32, "hard")
    assert p == PathfinderParams()
    assert (p.contour_length, p.distractor_length, p.n_distractors) == (14, 4, 5)
    assert (p.paddle_length, p.paddle_gap, p.thickness, p.continuity) == (2.0, 2.0, 0.5, 1.0)
    assert (p.marker_radius, p.seed_distance, p.padding, p.separation, p.link) == (1.5, 7.0, 1, 2, 2)
    e = lra_params(32, "easy")
    assert (e.contour_length, e.distractor_length, e.n_distractors) == (6, 2, 10)
    x = lra_params(128, "hard")
    assert (x.paddle_length, x.paddle_gap, x.n_distractors, x.continuity) == (5.0, 5.0, 8, 1.8)
    with pytest.raises(ValueError, match="size must be one of"):
        lra_params(48)
    with pytest.raises(ValueError, match="'medium'"):
        lra_params(32, "medium")


def test_as_sequence(data) -> None:
    img = data.images[:3]
    unit = as_sequence(img, "unit")
    assert unit.shape == (3, 1024, 1) and unit.dtype == np.float32
    np.testing.assert_allclose(unit[..., 0], img.reshape(3, -1) / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(unit[1, 32 * 5 + 7, 0] * 255, img[1, 5, 7])  # row-major
    tok = as_sequence(img, "tokens")
    assert tok.dtype == np.int64 and tok.max() == 255
    norm = as_sequence(img, "normalized")
    assert norm.min() >= -1 and norm.max() <= 1
    assert as_sequence(img[0], "unit").shape == (1024, 1)
    with pytest.raises(ValueError, match="'rgb'"):
        as_sequence(img, "rgb")
    with pytest.raises(ValueError, match="uint8"):
        as_sequence(img.astype(np.float32))


@pytest.mark.parametrize("kwargs, match", [
    ({"thickness": 0.4}, "thickness must be a number >= 0.5"),
    ({"size": 8}, "size must be an int >= 16, got 8"),
    ({"size": 32.0}, "size must be an int"),
    ({"padding": 16}, "padding=16 leaves no room"),
    ({"contour_length": 0}, "contour_length"),
    ({"n_distractors": -1}, "n_distractors"),
    ({"continuity": 0}, "continuity must be a finite number > 0"),
    ({"paddle_gap": -1.0}, "paddle_gap must be a finite number >= 0"),
    ({"marker_radius": float("nan")}, "marker_radius"),
    ({"min_separation": 0}, "min_separation"),
])
def test_bad_params(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        PathfinderParams(**kwargs)


def test_bad_generate_arguments() -> None:
    with pytest.raises(ValueError, match="n must be an int >= 1, got 0"):
        generate(0)
    with pytest.raises(ValueError, match="seed"):
        generate(2, seed="a")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="params must be"):
        generate(2, {"size": 32})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown parameter"):
        generate(2, sized=32)
    with pytest.raises(ValueError, match="could not fit"):
        generate(1, contour_length=60, max_restarts=2)


def test_module_doctests() -> None:
    result = doctest.testmod(pathfinder_module)
    assert result.attempted > 0 and result.failed == 0
