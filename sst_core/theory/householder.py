"""Householder transitions (DeltaNet, DeltaProduct) and exact group tracking, in SymPy with
numeric twins.

DeltaNet's transition on its key space is the generalised Householder matrix
``H(k, beta) = I - beta k k^T`` with ``||k|| = 1``; DeltaProduct multiplies ``n_h`` of them
per token (:mod:`sst_core.models.delta`). Three facts decide which groups such a model can
track *exactly*, i.e. with transitions that are orthogonal on the symbolic subspace U (the
only affine trackers Theorem 1 allows: neutral on U, never contracting):

1. ``H`` has eigenvalue ``1 - beta`` on ``k`` and 1 on ``k``'s orthogonal complement, and
   ``H^T H - I = (beta^2 - 2 beta) k k^T``: ``H`` is orthogonal only for ``beta = 0`` (the
   identity) and ``beta = 2`` (a reflection). With ``beta`` in ``[0, 1]`` no factor but the
   identity is orthogonal (:func:`derive_householder`).
2. With ``k = (e_i - e_j) / sqrt 2`` and ``beta = 2``, ``H`` is the permutation matrix of the
   transposition ``(i j)`` (:func:`derive_transposition`).
3. Cartan-Dieudonne: an orthogonal ``g`` is a product of exactly ``rank(g - I)`` reflections
   and of no fewer (each reflection changes the fixed space by one dimension). A
   non-identity element of order above 2 is no reflection, so it needs at least 2
   (:func:`reflections_needed`, :func:`reflection_factors` builds the factors).

So in one layer: ``beta`` in ``[0, 1]`` (``deltanet``) tracks no group exactly; one factor
with ``beta`` in ``[0, 2]`` (``deltanet_negative``) tracks C2 (its generator is a
reflection) but not C6, S3 or A5 (generators of order 3, 5, 6); two factors suffice for
all three (:func:`tracking_representation`: a rotation by 2 pi / 6 for C6, the standard
representation of S3, the rotations of the icosahedron for A5, in whose standard
representation the 5-cycle would need 4).

Numeric twins: :func:`householder`, :func:`reflections_needed`, :func:`reflection_factors`,
:func:`permutation_tracker`; ``tests/theory/test_householder.py`` compares them with the
derivations.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import sympy as sp

from sst_core.groups import get_group

__all__ = ["derive_householder", "derive_transposition", "standard_representation",
           "icosahedral_representation", "tracking_representation",
           "minimal_factors", "householder", "reflections_needed", "reflection_factors",
           "permutation_tracker", "exact_tracking", "REPRESENTED_GROUPS"]

beta = sp.Symbol("beta", real=True)


def derive_householder(n: int = 3) -> dict[str, Any]:
    """Fact 1 of the module docstring for a symbolic k in R^n, with ``s = k . k``:

        H k - (1 - beta) k        = beta (1 - s) k
        H v - v                   = -beta (k . v) k         (= 0 for v orthogonal to k)
        H^T H - I - (beta^2 - 2 beta) k k^T = beta^2 (s - 1) k k^T

    each an identity in k, so at ``s = 1`` the eigen-relations and the Gram defect
    ``(beta^2 - 2 beta) k k^T`` follow. Returns the pieces and ``holds``."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"n={n!r} must be an integer >= 2")
    k = sp.Matrix(sp.symbols(f"k_0:{n}", real=True))
    v = sp.Matrix(sp.symbols(f"v_0:{n}", real=True))
    s = (k.T * k)[0]
    I = sp.eye(n)
    H = I - beta * k * k.T
    zero = [sp.expand(H * k - (1 - beta) * k - beta * (1 - s) * k),
            sp.expand(H * v - v + beta * (k.T * v)[0] * k),
            sp.expand(H.T * H - I - (beta ** 2 - 2 * beta) * k * k.T
                      - beta ** 2 * (s - 1) * k * k.T)]
    orthogonal_at = sp.solve(sp.Eq(beta ** 2 - 2 * beta, 0), beta)
    holds = all(z == sp.zeros(*z.shape) for z in zero)
    return {"H": H, "eigen_on_k": 1 - beta, "gram_coefficient": beta ** 2 - 2 * beta,
            "gram_defect": (beta ** 2 - 2 * beta) * k * k.T,
            "orthogonal_at": sorted(orthogonal_at), "holds": bool(holds)}


def derive_transposition(n: int, i: int, j: int) -> dict[str, Any]:
    """Fact 2: ``H((e_i - e_j)/sqrt 2, 2)`` is the permutation matrix swapping i and j."""
    if not (isinstance(n, int) and n >= 2 and 0 <= i < n and 0 <= j < n and i != j):
        raise ValueError(f"need n >= 2 and distinct i, j in 0..n-1, got n={n}, i={i}, j={j}")
    I = sp.eye(n)
    k = (I[:, i] - I[:, j]) / sp.sqrt(2)
    H = sp.simplify(I - 2 * k * k.T)
    perm = list(range(n))
    perm[i], perm[j] = j, i
    P = _permutation_matrix(tuple(perm))
    return {"H": H, "P": P, "holds": bool(sp.simplify(H - P) == sp.zeros(n, n))}


# -- exact orthogonal representations of the book's groups ---------------------------------------

REPRESENTED_GROUPS = ("C2", "C6", "S3", "A5")


def _rotation(n: int) -> sp.Matrix:
    a = 2 * sp.pi / n
    return sp.Matrix([[sp.cos(a), -sp.sin(a)], [sp.sin(a), sp.cos(a)]])


def _sum_zero_basis(n: int) -> sp.Matrix:
    """An orthonormal basis (n, n - 1) of {x in R^n : sum x = 0} (Helmert's)."""
    cols = []
    for m in range(1, n):
        v = sp.Matrix([1] * m + [-m] + [0] * (n - m - 1)) / sp.sqrt(m * (m + 1))
        cols.append(v)
    return sp.Matrix.hstack(*cols)


def _permutation_matrix(perm: tuple[int, ...]) -> sp.Matrix:
    """P e_i = e_perm(i)."""
    n = len(perm)
    P = sp.zeros(n, n)
    for i, p in enumerate(perm):
        P[p, i] = 1
    return P


def _perm_of(label: str, n: int) -> tuple[int, ...]:
    """The permutation of a cycle label such as ``(0 1 2)`` (a single cycle or ``e``)."""
    perm = list(range(n))
    body = label.strip()
    if body in ("e", "()", ""):
        return tuple(perm)
    for cyc in body.strip("()").split(")("):
        pts = [int(x) for x in cyc.split()]
        for a, b in zip(pts, pts[1:] + pts[:1]):
            perm[a] = b
    return tuple(perm)


def standard_representation(name: str) -> dict[int, sp.Matrix]:
    """An exact (SymPy), faithful, orthogonal representation of group ``name`` (one of
    :data:`REPRESENTED_GROUPS`): element index -> matrix. C2: the sign (1 x 1); C_n: the
    rotation by 2 pi / n; S_n and A_n: the permutation action on the sum-zero hyperplane
    (the standard representation, dimension n - 1)."""
    if name not in REPRESENTED_GROUPS:
        raise ValueError(f"no representation of {name!r} here; allowed: "
                         f"{', '.join(REPRESENTED_GROUPS)}")
    g = get_group(name)
    if name == "C2":
        gen = sp.Matrix([[-1]])
        return {e: gen ** e for e in range(g.order)}  # element e is the e-th power
    if name.startswith("C"):
        n = int(name[1:])
        R = _rotation(n)
        return {e: sp.simplify(R ** e) for e in range(g.order)}
    n = int(name[1:])
    Bz = _sum_zero_basis(n)  # (n, n - 1)
    return {e: sp.simplify(Bz.T * _permutation_matrix(_perm_of(g.elements[e], n)) * Bz)
            for e in range(g.order)}


def _axis_rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues: the rotation of R^3 by ``angle`` about ``axis``."""
    u = axis / np.linalg.norm(axis)
    K = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])  # (3, 3)
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def _extend(g: Group, images: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    """The map on every element that multiplies the generators' ``images`` along the
    Cayley graph from the identity (a homomorphism if the images satisfy the group's
    relations; :func:`minimal_factors` checks every product)."""
    d = next(iter(images.values())).shape[0]
    rho, frontier = {g.identity: np.eye(d)}, [g.identity]
    while frontier:
        nxt = []
        for x in frontier:
            for s, M in images.items():
                y = int(g.table[x, s])
                if y not in rho:
                    rho[y] = rho[x] @ M
                    nxt.append(y)
        frontier = nxt
    return rho


def icosahedral_representation() -> dict[int, np.ndarray]:
    """A5 as the rotations of the icosahedron (3 x 3, float64): the generator ``(0 1 2)``
    a rotation by 2 pi / 3 about z, ``(0 1 2 3 4)`` a rotation by 2 pi / 5 about an axis at
    the angle theta from z for which their product (of order 5 in A5) is a rotation by
    4 pi / 5 (trace 1 + 2 cos(4 pi / 5)); theta by a root bracket, then extended to all 60
    elements (:func:`_extend`). Every nontrivial rotation fixes only its axis:
    ``rank(rho(g) - I) = 2`` for all of them."""
    from scipy.optimize import brentq

    g = get_group("A5")
    three, five = g.generators  # (0 1 2), (0 1 2 3 4)
    A = _axis_rotation(np.array([0.0, 0.0, 1.0]), 2 * np.pi / 3)

    def B(theta: float) -> np.ndarray:
        return _axis_rotation(np.array([np.sin(theta), 0.0, np.cos(theta)]), 2 * np.pi / 5)

    target = 1 + 2 * np.cos(4 * np.pi / 5)
    theta = brentq(lambda th: np.trace(A @ B(th)) - target, 1.2, 1.5)  # the root in (1.2, 1.5)
    return _extend(g, {three: A, five: B(theta)})


def tracking_representation(name: str) -> dict[int, np.ndarray]:
    """The representation the trackers here use (float64, element index -> matrix): for
    A5 the icosahedral one (dimension 3, two reflections per element), else the exact
    :func:`standard_representation`."""
    if name == "A5":
        return icosahedral_representation()
    return {e: np.array(m.evalf(), dtype=float) for e, m in standard_representation(name).items()}


def minimal_factors(name: str) -> dict[str, Any]:
    """Householder factors per token for exact tracking of ``name`` with its generator
    tokens: the lower bound (1 for a reflection, 2 for any element of order above 2),
    ``rank(rho(g) - I)`` in :func:`standard_representation` (exact) and in
    :func:`tracking_representation` (numerical rank), which that representation attains
    (Cartan-Dieudonne). Also checks, in floating point, that the representation used is a
    homomorphism, faithful and orthogonal."""
    g = get_group(name)
    std = standard_representation(name)
    num = tracking_representation(name)  # (d, d) each
    d = next(iter(num.values())).shape[0]
    homomorphism = len(num) == g.order and all(
        np.allclose(num[a] @ num[b], num[int(g.table[a, b])], atol=1e-12)
        for a in range(g.order) for b in range(g.order))
    faithful = len({tuple(np.round(m, 9).ravel()) for m in num.values()}) == g.order
    orthogonal = all(np.allclose(m.T @ m, np.eye(d), atol=1e-12) for m in num.values())
    per_token = {}
    for gen in g.generators:
        order = g.element_order(gen)
        lower = 0 if order == 1 else 1 if order == 2 else 2
        d_std = std[gen].shape[0]
        per_token[g.elements[gen]] = {
            "order": int(order), "lower_bound": lower,
            "in_standard": int((std[gen] - sp.eye(d_std)).rank(simplify=True)),
            "in_representation": reflections_needed(num[gen])}
    return {"group": name, "dim": int(d), "homomorphism": bool(homomorphism),
            "faithful": bool(faithful), "orthogonal": bool(orthogonal),
            "tokens": per_token,
            "lower_bound": max(t["lower_bound"] for t in per_token.values()),
            "attained": max(t["in_representation"] for t in per_token.values())}


def exact_tracking(n_householder: int, beta_range: float, group: str) -> str:
    """Whether one layer of n_h Householder factors per token with ``beta`` in ``[0,
    beta_range]`` can track ``group``'s generator words exactly (orthogonal on U):
    ``"yes"`` (n_h reaches what :func:`tracking_representation` needs), ``"no"`` (no
    reflection is available, ``beta_range < 2``, or n_h is below the lower bound of
    :func:`minimal_factors`), or ``"open"`` (in between: decided by a representation not
    built here)."""
    if isinstance(n_householder, bool) or not isinstance(n_householder, int) or n_householder < 1:
        raise ValueError(f"n_householder={n_householder!r} must be an integer >= 1")
    f = minimal_factors(group)
    if beta_range < 2 or n_householder < f["lower_bound"]:
        return "no"
    return "yes" if n_householder >= f["attained"] else "open"


# -- numeric twins ------------------------------------------------------------------------------

def householder(k: Any, beta_value: float) -> np.ndarray:
    """``I - beta k k^T / ||k||^2`` (float64), the DeltaNet transition of a unit key."""
    k = np.asarray(k, dtype=float).reshape(-1)  # (n,)
    nk = float(k @ k)
    if nk == 0 or not np.isfinite(nk):
        raise ValueError(f"k must be a finite non-zero vector, got {k!r}")
    return np.eye(k.size) - beta_value * np.outer(k, k) / nk


def reflections_needed(g: Any, tol: float = 1e-9) -> int:
    """``rank(g - I)``: the number of reflections whose product is the orthogonal ``g``."""
    g = np.asarray(g, dtype=float)
    if g.ndim != 2 or g.shape[0] != g.shape[1]:
        raise ValueError(f"g must be a square matrix, got shape {g.shape}")
    if not np.allclose(g.T @ g, np.eye(g.shape[0]), atol=1e-8):
        raise ValueError("g must be orthogonal (g^T g = I)")
    return int(np.linalg.matrix_rank(g - np.eye(g.shape[0]), tol=tol))


def reflection_factors(g: Any, tol: float = 1e-9) -> list[np.ndarray]:
    """Unit vectors ``k_1 .. k_r``, ``r = rank(g - I)``, with ``g = H(k_r, 2) ... H(k_1, 2)``
    (the first factor acts first, as DeltaProduct's sub-steps do): at each step reflect a
    vector that the remainder still moves onto its image."""
    g = np.asarray(g, dtype=float)
    reflections_needed(g, tol)  # checks
    n = g.shape[0]
    ks: list[np.ndarray] = []
    rest = g.copy()  # g = rest @ (product of the factors so far)
    for _ in range(n):
        moved = rest - np.eye(n)
        if np.linalg.norm(moved) <= tol:
            break
        i = int(np.argmax(np.linalg.norm(moved, axis=0)))
        v = np.eye(n)[:, i]
        k = rest @ v - v  # H(k) maps rest v back to v
        k /= np.linalg.norm(k)
        ks.append(k)
        rest = rest @ householder(k, 2.0)  # rest H(k) fixes v, one dimension more
    return ks


def permutation_tracker(name: str, drift: float = 0.0, seed: int = 0
                        ) -> tuple[Callable, np.ndarray, int]:
    """An exact one-layer Householder tracker of group ``name``: a ``step(h, x)`` for
    states h (b, d) and tokens x (b,) (element indices, as the book's words are), an
    initial state h0 (d,) with trivial stabiliser, and the number of tokens (the order).

    The book's states multiply on the right (``g_t = g_{t-1} x_t``), a left-acting step on
    the right: token x applies ``rho(x)^T = rho(x^-1)`` (:func:`tracking_representation`),
    as the reflections of :func:`reflection_factors`, so that the state after a word of
    product g is ``rho(g)^T h0``. ``drift > 0`` adds a fixed small error to each token's
    transition (a rotation of size ``drift`` in a random plane, the same at every step),
    the kind of imperfection training leaves: the map stays affine and orthogonal, and the
    symbolic state drifts (except in one dimension, C2's, where an orthogonal map is +-1)."""
    import torch

    g = get_group(name)
    rho = tracking_representation(name)
    mats = []
    rng = np.random.default_rng(seed)
    for e in range(g.order):
        m = rho[int(e)].T  # rho(x^-1)
        ks = reflection_factors(m)
        T = np.eye(m.shape[0])
        for k in ks:
            T = householder(k, 2.0) @ T
        if drift:
            a, b = rng.standard_normal((2, m.shape[0]))
            A = np.outer(a, b) - np.outer(b, a)  # skew
            A *= drift / max(np.linalg.norm(A, 2), 1e-12)
            from scipy.linalg import expm

            T = expm(A) @ T
        mats.append(T)
    W = torch.tensor(np.stack(mats))  # (order, d, d)
    h0 = np.linspace(1.0, 2.0, W.shape[1]) * (1 + np.arange(W.shape[1]))  # generic start
    h0 = h0 / np.linalg.norm(h0)

    def step(h: "torch.Tensor", x: "torch.Tensor") -> "torch.Tensor":
        return (W.to(h)[x] @ h[..., None])[..., 0]  # (b, d)

    return step, h0, g.order
