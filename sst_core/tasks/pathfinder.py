"""Pathfinder: are the two circles joined by one dashed contour?

A grayscale ``size x size`` image (uint8) shows dashed curves ("contours") made of
short straight strokes ("paddles") and two small discs ("markers").  Two target
contours start ``seed_distance`` apart and grow outwards; ``n_distractors``
shorter contours fill the rest.  Label 1 (positive): the markers sit on the two
ends of one target contour.  Label 0 (negative): one marker sits on the start of
one target contour and the other on the far end of the other target, so marker
distances look the same in both classes and only the connection differs.  This
is the design of ``snakes2.py`` (``drewlinsley/pathfinder``), re-implemented
here; images are not bit-identical to the LRA release.

Geometry, in pixel units (pixel ``(i, j)`` is the square ``[i, i+1) x [j, j+1)``):

* a paddle is a segment of ``paddle_length`` drawn with half-thickness
  ``h = thickness / 2``; a pixel belongs to it when its centre lies within
  ``R = h + 0.5`` of the segment, with intensity ``clip(R - d, 0, 1) * contrast``
  (distance-based anti-aliasing).  ``thickness >= 0.5`` makes every pixel the
  segment passes through part of the paddle;
* a contour grows paddle by paddle as in snakes2: go ``paddle_gap / 2`` past the
  last paddle's end, turn by ``delta``, go another ``paddle_gap / 2``, draw the
  next paddle.  ``delta`` is drawn from 36 headings (10 degree steps) with weight
  ``cos(min(|delta| * continuity, pi/2))**2`` (snakes2's ``get_coords_cmf``), so
  ``continuity = 1`` allows turns up to 90 degrees per paddle and larger values
  make smoother curves;
* pixels of different contours (markers included) stay at Chebyshev distance
  ``>= min_separation``, and so do non-consecutive paddles of one contour;
  consecutive paddles are at most ``link = max(1, ceil(paddle_gap))`` apart.
  Endpoints stay inside ``[padding, size - padding]``;
* markers are discs of ``marker_radius`` on the contour ends (intensity 1);
  space for a marker is kept at every target end, drawn or not.

``generate`` returns the ground truth as ``membership``: an int16 map with 0 for
background, 1 and 2 for the target contours, 3.. for distractors, on exactly the
pixels where the image is non-zero (markers take their contour's id).

LRA settings (``lra_params``; LRA ``lra_benchmarks/data/pathfinder.py``
docstrings over the snakes2 defaults).  For 32 x 32: paddle length 2, margin 1,
thickness 0.5, continuity 1.0, marker radius 1.5, seed distance 7, padding 1,
contour length 14 ("hard"), ``distractor_length = 14 // 3 = 4``,
``n_distractors = 20 // 4 = 5``, contrast ``2 * 0.75 = 1.5`` (snake times paddle
contrast).  Choices made here where the sources are silent or differ:

* snakes2 leaves a gap of one margin before and after each turning point, so
  ``paddle_gap = 2 * margin`` (2 pixels at 32 x 32);
* snakes2 keeps each paddle's margin-dilated mask off the others, about
  ``2 * margin`` pixels apart, so ``min_separation`` defaults to
  ``max(2, ceil(paddle_gap))``;
* "easy" and "intermediate" use contour lengths 6 and 9 with the same rules
  (``distractor_length = length // 3``, ``n_distractors = K // distractor_length``
  with K = 20, 22, 35, 30 for sizes 32, 64, 128, 256; integer division as in the
  Python 2 generator).  S4 trains on "hard" only;
* 128 x 128 samples the margin from {2, 3} per image in snakes2; here the
  mean, 2.5, is used (``paddle_gap = 5``).  Sizes 64/128/256 use snakes2's
  default paddle length 5, and 256 its default padding 22 and seed distance 27;
* every contour has exactly its length and every image exactly
  ``n_distractors`` distractors (snakes2 may drop distractors that do not fit).
  snakes2 redraws a whole image whenever a target contour runs into a dead end;
  here the two targets grow in alternating rounds and a failed round is undone
  together with a few earlier ones (``_targets``), and an image is redrawn only
  after repeated failures.  Accepted images are still those whose contours fit;
* as in snakes2, ``min_separation`` (2 at 32 x 32) is no larger than the gap
  inside a contour (``link`` = 2), so a distractor can end as close to a contour
  as its own paddles are to each other: the label is the generator's contour
  identity (``membership``), and a model has to use the smooth continuation.

Cost on one CPU core: about 0.05-0.1 s per image at 32 x 32 "hard", less for
"easy" and for larger images with the 32 x 32 geometry, about 0.5 s at 128 x 128
"hard".  ``lra_params(64, "hard")`` takes seconds per image: its contours are
96 pixels long and nearly straight (continuity 1.8) in a 64 pixel window, so
most attempts leave the image and are rejected (as in snakes2).

>>> data = generate(4, seed=0)
>>> data.images.shape, data.images.dtype, data.y.tolist()
((4, 32, 32), dtype('uint8'), [0, 1, 1, 0])
>>> bool(((data.images > 0) == (data.membership > 0)).all())
True
>>> as_sequence(data.images, "unit").shape, as_sequence(data.images, "tokens").shape
((4, 1024, 1), (4, 1024))
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
from scipy.ndimage import maximum_filter

__all__ = [
    "DIFFICULTIES", "PIXEL_KINDS", "PathfinderParams", "PathfinderData",
    "lra_params", "generate", "as_sequence",
]

DIFFICULTIES = {"easy": 6, "intermediate": 9, "hard": 14}  # target contour length
PIXEL_KINDS = ("unit", "normalized", "tokens")
_N_ANGLES = 36  # candidate headings per paddle (10 degree steps)
_DISTRACTOR_TRIES = 30  # fresh starts per distractor
_DISTRACTOR_STAGES = 3  # times all distractors are redrawn before the whole image is
_BACKTRACKS = 30  # undone rounds of target growth before the image is redrawn


def _is_int(x: object) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x: object) -> bool:
    return (isinstance(x, (int, float, np.integer, np.floating))
            and not isinstance(x, (bool, np.bool_)) and math.isfinite(x))


@dataclass(frozen=True)
class PathfinderParams:
    """Generator settings; the defaults are LRA's Pathfinder32 "hard"."""

    size: int = 32
    contour_length: int = 14  # paddles per target contour
    distractor_length: int = 4  # paddles per distractor contour
    n_distractors: int = 5
    paddle_length: float = 2.0
    paddle_gap: float = 2.0  # path length between paddles = 2 * snakes2 margin
    thickness: float = 0.5
    continuity: float = 1.0
    marker_radius: float = 1.5
    seed_distance: float = 7.0
    padding: int = 1
    contrast: float = 1.5
    min_separation: int | None = None  # None: max(2, ceil(paddle_gap))
    max_restarts: int = 200  # redraws of one image before giving up

    def __post_init__(self) -> None:
        ints = {"size": 16, "contour_length": 1, "distractor_length": 1, "n_distractors": 0,
                "padding": 1, "max_restarts": 1}
        for name, low in ints.items():
            v = getattr(self, name)
            if not _is_int(v) or v < low:
                raise ValueError(f"{name} must be an int >= {low}, got {v!r}")
        for name in ("paddle_length", "paddle_gap", "continuity", "marker_radius",
                     "seed_distance", "contrast"):
            v = getattr(self, name)
            if not _is_real(v) or v < 0 or (v == 0 and name != "paddle_gap"):
                low = ">= 0" if name == "paddle_gap" else "> 0"
                raise ValueError(f"{name} must be a finite number {low}, got {v!r}")
        if not _is_real(self.thickness) or self.thickness < 0.5:
            raise ValueError(
                f"thickness must be a number >= 0.5 (so a stroke covers every pixel it "
                f"crosses), got {self.thickness!r}")
        if 2 * self.padding >= self.size:
            raise ValueError(f"padding={self.padding} leaves no room in size={self.size}")
        sep = self.min_separation
        if sep is not None and (not _is_int(sep) or sep < 1):
            raise ValueError(f"min_separation must be an int >= 1 or None, got {sep!r}")

    @property
    def separation(self) -> int:
        """Minimum Chebyshev distance between pixels of different contours."""
        if self.min_separation is not None:
            return int(self.min_separation)
        return max(2, math.ceil(self.paddle_gap))

    @property
    def link(self) -> int:
        """Largest Chebyshev distance between pixels of consecutive paddles."""
        return max(1, math.ceil(self.paddle_gap))


_LRA = {  # size: paddle_length, margin, thickness, continuity, marker, seed_dist, padding, contrast, K
    32: (2.0, 1.0, 0.5, 1.0, 1.5, 7.0, 1, 1.5, 20),
    64: (5.0, 1.0, 1.0, 1.8, 2.5, 12.0, 1, 0.8, 22),
    128: (5.0, 2.5, 1.5, 1.8, 3.0, 20.0, 1, 0.9, 35),
    256: (5.0, 3.0, 2.0, 1.8, 5.0, 27.0, 22, 1.0, 30),
}


def lra_params(size: int = 32, difficulty: str = "hard") -> PathfinderParams:
    """LRA's settings for ``size`` in (32, 64, 128, 256) and a difficulty.

    >>> p = lra_params(32, "hard")
    >>> p.contour_length, p.distractor_length, p.n_distractors, p.paddle_gap
    (14, 4, 5, 2.0)
    """
    if size not in _LRA or not _is_int(size):
        raise ValueError(f"size must be one of {tuple(_LRA)}, got {size!r}; for other sizes "
                         "build PathfinderParams(size=...) directly")
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"unknown difficulty {difficulty!r}; allowed: {tuple(DIFFICULTIES)}")
    pl, margin, th, cont, marker, sd, pad, contrast, k = _LRA[size]
    cl = DIFFICULTIES[difficulty]
    dl = cl // 3
    return PathfinderParams(
        size=int(size), contour_length=cl, distractor_length=dl, n_distractors=k // dl,
        paddle_length=pl, paddle_gap=2 * margin, thickness=th, continuity=cont,
        marker_radius=marker, seed_distance=sd, padding=pad, contrast=contrast)


class PathfinderData(NamedTuple):
    """``images`` (n, s, s) uint8; ``y`` (n,) int64 (1 = connected);
    ``membership`` (n, s, s) int16 contour ids (0 background, 1-2 targets, 3..
    distractors); ``markers`` (n, 2, 2) float64 marker centres as (row, col)."""

    images: np.ndarray
    y: np.ndarray
    membership: np.ndarray
    markers: np.ndarray


def _unit(theta: np.ndarray | float) -> np.ndarray:
    return np.stack([np.sin(theta), np.cos(theta)], axis=-1)  # (..., 2) as (row, col)


def _footprint(a: np.ndarray, b: np.ndarray, radius: float, size: int):
    """Pixels whose centre is within ``radius`` of segment ab: rows, cols, clip(radius - d, 0, 1)."""
    lo = np.ceil(np.minimum(a, b) - radius - 0.5).astype(int).clip(0, size - 1)
    hi = np.floor(np.maximum(a, b) + radius - 0.5).astype(int).clip(0, size - 1)
    ii, jj = np.mgrid[lo[0]:hi[0] + 1, lo[1]:hi[1] + 1]  # (h, w)
    py, px = ii + 0.5 - a[0], jj + 0.5 - a[1]
    d = b - a
    n2 = float(d @ d)
    t = np.clip((py * d[0] + px * d[1]) / n2, 0.0, 1.0) if n2 > 0 else 0.0
    dist = np.hypot(py - t * d[0], px - t * d[1])
    keep = dist < radius
    return ii[keep], jj[keep], np.minimum(radius - dist[keep], 1.0)


class _Canvas:
    """One image under construction: owners and paddle steps of reserved pixels, ink."""

    def __init__(self, p: PathfinderParams, rng: np.random.Generator):
        self.p, self.rng, s = p, rng, p.size
        self.owner = np.zeros((s, s), np.int16)  # contour id of every reserved pixel
        self.step = np.zeros((s, s), np.int16)  # paddle index within its contour
        self.member = np.zeros((s, s), np.int16)  # drawn pixels only
        self.ink = np.zeros((s, s), np.float64)
        self.R = p.thickness / 2 + 0.5
        self.lo, self.hi = float(p.padding), float(s - p.padding)
        self.sep = p.separation

    def snapshot(self):
        return self.owner.copy(), self.step.copy(), self.member.copy(), self.ink.copy()

    def restore(self, snap) -> None:
        self.owner, self.step, self.member, self.ink = snap

    def inside(self, pts: np.ndarray) -> np.ndarray:
        return ((pts >= self.lo) & (pts <= self.hi)).all(axis=-1)

    def blocked(self, rows, cols, cid: int, k_min: int) -> bool:
        """Whether pixels (rows, cols) come closer than ``sep`` to other contours or to
        paddles ``< k_min`` of contour ``cid``."""
        pad, s = self.sep - 1, self.p.size
        i0, i1 = max(rows.min() - pad, 0), min(rows.max() + pad + 1, s)
        j0, j1 = max(cols.min() - pad, 0), min(cols.max() + pad + 1, s)
        own, stp = self.owner[i0:i1, j0:j1], self.step[i0:i1, j0:j1]
        fi, fj = np.nonzero((own != 0) & ((own != cid) | (stp < k_min)))
        if fi.size == 0:
            return False
        cheb = np.maximum(np.abs(fi[:, None] + i0 - rows[None]), np.abs(fj[:, None] + j0 - cols[None]))
        return bool(cheb.min() < self.sep)

    def paint(self, fp, cid: int, k: int, draw: bool, contrast: float) -> None:
        rows, cols, val = fp
        self.owner[rows, cols] = cid
        self.step[rows, cols] = k
        if draw:
            self.member[rows, cols] = cid
            self.ink[rows, cols] = np.maximum(self.ink[rows, cols], np.minimum(val * contrast, 1.0))

    def disc(self, centre: np.ndarray):
        return _footprint(centre, centre, self.p.marker_radius + 0.5, self.p.size)

    def place(self, starts: np.ndarray, ends: np.ndarray, weights: np.ndarray,
              cid: int, k: int, k_min: int) -> int | None:
        """Draw one of the candidate paddles ``starts[j] -> ends[j]`` (A, 2) with
        probability proportional to ``weights[j]`` among those inside the padding
        box and not ``blocked``; paint it as paddle ``k`` of ``cid``.  Returns j."""
        s, R, sep = self.p.size, self.R, self.sep
        w = weights * (self.inside(starts) & self.inside(ends))  # (A,)
        live = np.flatnonzero(w > 0)  # (a,) candidates worth checking
        if live.size == 0:
            return None
        starts, ends, w = starts[live], ends[live], w[live]
        pts = np.concatenate([starts, ends])
        lo = np.floor(pts.min(0) - R).astype(int).clip(0, s - 1)  # window [lo, hi]
        hi = np.ceil(pts.max(0) + R).astype(int).clip(0, s - 1)
        rows, cols = np.arange(lo[0], hi[0] + 1), np.arange(lo[1], hi[1] + 1)
        ii, jj = np.repeat(rows, cols.size), np.tile(cols, rows.size)  # (P,) window pixels
        e0, e1 = (lo - sep + 1).clip(0, None), (hi + sep).clip(None, s)
        own = self.owner[e0[0]:e1[0], e0[1]:e1[1]]
        fi, fj = np.nonzero((own != 0) & ((own != cid) | (self.step[e0[0]:e1[0], e0[1]:e1[1]] < k_min)))
        d = ends - starts  # (a, 2)
        py = (ii + 0.5)[None] - starts[:, :1]  # (a, P)
        px = (jj + 0.5)[None] - starts[:, 1:]  # (a, P)
        t = np.clip((py * d[:, :1] + px * d[:, 1:]) / (d * d).sum(1, keepdims=True), 0.0, 1.0)
        dist = np.hypot(py - t * d[:, :1], px - t * d[:, 1:])  # (a, P)
        foot = dist < R  # (a, P)
        if fi.size:
            cheb = np.maximum(np.abs(ii[:, None] - (fi + e0[0])), np.abs(jj[:, None] - (fj + e0[1])))
            zone = (cheb < sep).any(1)  # (P,) pixels too close to a forbidden pixel
            w = w * ~(foot & zone).any(1)
        total = w.sum()
        if total <= 1e-12:
            return None
        j = min(int(np.searchsorted(np.cumsum(w), self.rng.random() * total, side="right")),
                len(w) - 1)
        fj_ = foot[j]
        self.paint((ii[fj_], jj[fj_], np.minimum(R - dist[j, fj_], 1.0)), cid, k, True, self.p.contrast)
        return int(live[j])

    def extend(self, c: dict, cid: int, k: int) -> bool:
        """Add paddle ``k`` to contour ``c`` (keys ``end``, ``theta``)."""
        p = self.p
        delta = np.linspace(-np.pi, np.pi, _N_ANGLES, endpoint=False)  # (A,)
        w = np.maximum(np.cos(np.minimum(np.abs(delta) * p.continuity, np.pi / 2)), 0) ** 2
        theta = c["theta"] + delta  # (A,)
        pivot = c["end"] + p.paddle_gap / 2 * _unit(c["theta"])  # (2,)
        starts = pivot + p.paddle_gap / 2 * _unit(theta)  # (A, 2)
        ends = starts + p.paddle_length * _unit(theta)  # (A, 2)
        j = self.place(starts, ends, w, cid, k, k - 1)
        if j is None:
            return False
        c["end"], c["theta"] = ends[j], float(theta[j])
        return True

    def start(self, origin: np.ndarray, cid: int, with_disc: bool) -> dict | None:
        """First paddle of contour ``cid`` at ``origin`` (and space for its marker)."""
        if not self.inside(origin):
            return None
        if with_disc:
            disc = self.disc(origin)
            if self.blocked(disc[0], disc[1], cid, 0):
                return None
        theta = self.rng.uniform(-np.pi, np.pi) + np.linspace(0, 2 * np.pi, _N_ANGLES, endpoint=False)
        starts = np.broadcast_to(origin, (_N_ANGLES, 2))
        ends = starts + self.p.paddle_length * _unit(theta)  # (A, 2)
        j = self.place(starts, ends, np.ones(_N_ANGLES), cid, 0, 0)
        if j is None:
            return None
        if with_disc:
            self.paint(disc, cid, 0, False, 1.0)
        return {"origin": origin, "end": ends[j], "theta": float(theta[j])}

    def grow(self, c: dict | None, cid: int, length: int) -> bool:
        return c is not None and all(self.extend(c, cid, k) for k in range(1, length))

    def distractor(self, cid: int) -> bool:
        p, rng = self.p, self.rng
        near = maximum_filter((self.owner != 0).astype(np.uint8), size=2 * self.sep - 1)
        fi, fj = np.nonzero(near == 0)
        if fi.size == 0:
            return False
        j = rng.integers(fi.size)
        origin = np.array([fi[j], fj[j]], float) + rng.random(2)
        return self.grow(self.start(origin, cid, False), cid, p.distractor_length)


def _targets(cv: _Canvas, p: PathfinderParams, rng: np.random.Generator) -> list | None:
    """Grow the two target contours (ids 1, 2) and keep marker space at all four ends.

    They grow in rounds, one paddle each per round.  A failed round (a dead end,
    or no room for a marker at a far end) is undone with a random number of
    earlier rounds (more after repeated failures) and grown again, at most
    ``_BACKTRACKS`` times; then None.
    """
    a, b = 2 * p.seed_distance, p.size - 2 * p.seed_distance
    if b <= a:
        a, b = cv.lo, cv.hi
    oa = rng.uniform(a, b, size=2)
    ob = oa + p.seed_distance * _unit(rng.uniform(0, 2 * np.pi))
    targets = [cv.start(oa, 1, True), cv.start(ob, 2, True)] if cv.inside(ob) else [None]
    if any(t is None for t in targets):
        return None

    def save():
        return cv.snapshot(), [(t["end"], t["theta"]) for t in targets]

    def load(state):
        cv.restore(tuple(x.copy() for x in state[0]))
        for t, (end, theta) in zip(targets, state[1]):
            t["end"], t["theta"] = end, theta

    def run_round(k: int) -> bool:
        if k < p.contour_length:
            return all(cv.extend(t, i + 1, k) for i, t in enumerate(targets))
        discs = [cv.disc(t["end"]) for t in targets]
        if any(cv.blocked(d[0], d[1], i + 1, p.contour_length - 2) for i, d in enumerate(discs)):
            return False
        for i, d in enumerate(discs):
            cv.paint(d, i + 1, p.contour_length - 1, False, 1.0)
        return True

    saved = [save()]  # saved[j]: state after round j (round 0 = the first paddles)
    k, fails = 1, 0  # rounds 1 .. length-1 add paddles, round `length` the end discs
    while True:
        if run_round(k):
            if k == p.contour_length:
                return targets
            saved.append(save())
            k += 1
            continue
        fails += 1
        if fails > _BACKTRACKS:
            return None
        k = max(1, k - int(rng.integers(0, 3 + fails // 4)))
        del saved[k:]
        load(saved[k - 1])


def _distractors(cv: _Canvas, p: PathfinderParams) -> bool:
    """Add ``n_distractors`` contours (ids 3, 4, ...); False when one does not fit."""
    for d in range(p.n_distractors):
        for _ in range(_DISTRACTOR_TRIES):
            snap = cv.snapshot()
            if cv.distractor(3 + d):
                break
            cv.restore(snap)
        else:
            return False
    return True


def _draw(p: PathfinderParams, rng: np.random.Generator, label: int):
    """One image, or None when the contours did not fit."""
    cv = _Canvas(p, rng)
    targets = _targets(cv, p, rng)
    if targets is None:
        return None
    base = cv.snapshot()
    for _ in range(_DISTRACTOR_STAGES):
        if _distractors(cv, p):
            break
        cv.restore(tuple(x.copy() for x in base))
    else:
        return None
    first = int(rng.integers(2))  # which target carries the start marker
    second = first if label == 1 else 1 - first
    centres = np.stack([targets[first]["origin"], targets[second]["end"]])  # (2, 2)
    for cid, centre in ((first + 1, centres[0]), (second + 1, centres[1])):
        rows, cols, val = cv.disc(centre)
        cv.member[rows, cols] = cid
        cv.ink[rows, cols] = np.maximum(cv.ink[rows, cols], val)
    image = np.ceil(np.clip(cv.ink, 0.0, 1.0) * 255).astype(np.uint8)
    return image, cv.member, centres


def generate(n: int, params: PathfinderParams | None = None, seed: int | None = 0,
             **overrides) -> PathfinderData:
    """``n`` images, exactly ``n // 2`` of them positive, in a seeded random order.

    ``params`` defaults to ``lra_params(32, "hard")``; keyword ``overrides``
    replace single fields, e.g. ``generate(8, size=48, n_distractors=8)``.
    The same (n, params, seed) gives the same data.
    """
    if not _is_int(n) or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    if seed is not None and not _is_int(seed):
        raise ValueError(f"seed must be an int or None, got {seed!r}")
    if params is None:
        params = PathfinderParams()
    elif not isinstance(params, PathfinderParams):
        raise ValueError(f"params must be a PathfinderParams or None, got {type(params).__name__}")
    if overrides:
        unknown = sorted(set(overrides) - set(PathfinderParams.__dataclass_fields__))
        if unknown:
            raise ValueError(f"unknown parameter(s) {unknown}; allowed: "
                             f"{sorted(PathfinderParams.__dataclass_fields__)}")
        params = replace(params, **overrides)
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.r_[np.ones(n // 2, np.int64), np.zeros(n - n // 2, np.int64)])
    s = params.size
    images = np.zeros((n, s, s), np.uint8)
    membership = np.zeros((n, s, s), np.int16)
    markers = np.zeros((n, 2, 2), np.float64)
    for i in range(n):
        for _ in range(params.max_restarts):
            out = _draw(params, rng, int(y[i]))
            if out is not None:
                images[i], membership[i], markers[i] = out
                break
        else:
            raise ValueError(
                f"could not fit the contours into a {s}x{s} image in max_restarts="
                f"{params.max_restarts} tries; lower contour_length ({params.contour_length}), "
                f"n_distractors ({params.n_distractors}) or min_separation ({params.separation})")
    return PathfinderData(images, y, membership, markers)


def as_sequence(images: np.ndarray, kind: str = "unit") -> np.ndarray:
    """(..., s, s) uint8 images -> row-major pixel sequences.

    ``"unit"``: float32 (..., s*s, 1) in [0, 1]; ``"normalized"``: float32
    (..., s*s, 1) as ``(v/255 - 0.5) / 0.5`` in [-1, 1] (S4's Pathfinder
    transform); ``"tokens"``: int64 (..., s*s) with values 0..255.
    """
    arr = np.asarray(images)
    if arr.dtype != np.uint8:
        raise ValueError(f"images must be uint8, got dtype {arr.dtype}")
    if arr.ndim < 2:
        raise ValueError(f"images must have shape (..., s, s), got {arr.shape}")
    if kind not in PIXEL_KINDS:
        raise ValueError(f"unknown kind {kind!r}; allowed: {PIXEL_KINDS}")
    flat = arr.reshape(*arr.shape[:-2], arr.shape[-2] * arr.shape[-1])  # (..., L)
    if kind == "tokens":
        return flat.astype(np.int64)
    unit = flat.astype(np.float32)[..., None] / 255.0  # (..., L, 1)
    return unit if kind == "unit" else (unit - 0.5) / 0.5
