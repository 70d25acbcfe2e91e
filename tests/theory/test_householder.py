"""Householder transitions and exact group tracking (sst_core.theory.householder): each
derivation against its numeric twin."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
import torch

from sst_core.groups import get_group
from sst_core.tasks.tracking import running_product
from sst_core.theory import householder as H


def test_householder_derivation_and_its_numeric_twin():
    d = H.derive_householder(4)
    assert d["holds"] and d["orthogonal_at"] == [0, 2]
    rng = np.random.default_rng(0)
    k = rng.standard_normal(4)
    k /= np.linalg.norm(k)
    for b in (0.0, 0.3, 1.0, 1.7, 2.0):
        M = H.householder(k, b)
        np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(M)), np.sort([1 - b, 1, 1, 1]),
                                   atol=1e-12)
        np.testing.assert_allclose(M.T @ M - np.eye(4), (b * b - 2 * b) * np.outer(k, k),
                                   atol=1e-12)
        # the symbolic matrix at these numbers is the numeric one
        subs = {**dict(zip(sp.symbols("k_0:4", real=True), k)), H.beta: b}
        np.testing.assert_allclose(np.array(d["H"].subs(subs).evalf(), dtype=float), M,
                                   atol=1e-12)
        orthogonal = np.allclose(M.T @ M, np.eye(4), atol=1e-12)
        assert orthogonal == (b in (0.0, 2.0))


@pytest.mark.parametrize("n,i,j", [(2, 0, 1), (4, 1, 3)])
def test_a_reflection_is_a_transposition(n, i, j):
    d = H.derive_transposition(n, i, j)
    assert d["holds"]
    e = np.eye(n)
    np.testing.assert_allclose(H.householder(e[i] - e[j], 2.0), np.array(d["P"], dtype=float))


def test_minimal_factors_per_group():
    want = {"C2": (1, 1, 1), "C6": (2, 2, 2), "S3": (2, 2, 2), "A5": (2, 2, 3)}
    for name, (lower, attained, dim) in want.items():
        r = H.minimal_factors(name)
        assert r["homomorphism"] and r["faithful"] and r["orthogonal"], name
        assert (r["lower_bound"], r["attained"], r["dim"]) == (lower, attained, dim), name
    s3 = H.minimal_factors("S3")["tokens"]
    assert s3["(0 1)"]["in_representation"] == 1 and s3["(0 1 2)"]["in_representation"] == 2
    # A5: the 5-cycle needs 4 reflections in the standard representation, 2 as a rotation
    a5 = H.minimal_factors("A5")["tokens"]["(0 1 2 3 4)"]
    assert (a5["in_standard"], a5["in_representation"]) == (4, 2)
    # every nontrivial element of the icosahedral group is a rotation: rank(g - I) = 2
    ico = H.icosahedral_representation()
    assert sorted({H.reflections_needed(m) for m in ico.values()}) == [0, 2]
    # the standard representations are exact and agree with tracking_representation
    for name in ("C6", "S3"):
        num = H.tracking_representation(name)
        for e, m in H.standard_representation(name).items():
            np.testing.assert_allclose(np.array(m.evalf(), dtype=float), num[e], atol=1e-15)


def test_reflection_factors_rebuild_orthogonal_matrices():
    rng = np.random.default_rng(1)
    for n in (1, 2, 3, 5):
        for _ in range(5):
            Qm, _ = np.linalg.qr(rng.standard_normal((n, n)))
            ks = H.reflection_factors(Qm)
            assert len(ks) == H.reflections_needed(Qm) <= n
            T = np.eye(n)
            for k in ks:  # the first factor acts first
                T = H.householder(k, 2.0) @ T
            np.testing.assert_allclose(T, Qm, atol=1e-10)
    assert H.reflection_factors(np.eye(3)) == []
    R = H.tracking_representation("C6")[1]
    assert len(H.reflection_factors(R)) == 2  # a rotation: two reflections


@pytest.mark.parametrize("name", ["C2", "C6", "S3", "A5"])
def test_permutation_tracker_is_exact(name):
    step, h0, n_tokens = H.permutation_tracker(name)
    g = get_group(name)
    assert n_tokens == g.order
    rho = H.tracking_representation(name)
    rng = np.random.default_rng(2)
    words = rng.choice(np.array([0, *g.generators]), size=(4, 50))  # (b, L)
    states = running_product(g, words)  # (b, L)
    h = torch.tensor(h0)[None].repeat(4, 1)  # (b, d)
    for t in range(50):
        h = step(h, torch.from_numpy(words[:, t]))
    for i in range(4):
        want = rho[int(states[i, -1])].T @ h0
        np.testing.assert_allclose(h[i].numpy(), want, atol=1e-12)
    # with drift: still norm-preserving (orthogonal), no longer exact
    step_d, h0_d, _ = H.permutation_tracker(name, drift=1e-2)
    h = torch.tensor(h0_d)[None]
    for t in range(50):
        h = step_d(h, torch.from_numpy(words[:1, t]))
    assert abs(float(h.norm()) - 1.0) < 1e-10
    exact = rho[int(states[0, -1])].T @ h0_d
    gap = np.linalg.norm(h[0].numpy() - exact)
    # in one dimension an orthogonal map is +-1: nothing can drift
    assert gap > 1e-4 if h0_d.size > 1 else gap == 0


def test_exact_tracking_verdicts():
    verdict = {(nh, br, g): H.exact_tracking(nh, br, g)
               for nh, br in ((1, 1), (1, 2), (2, 2), (3, 2)) for g in H.REPRESENTED_GROUPS}
    assert all(verdict[1, 1, g] == "no" for g in H.REPRESENTED_GROUPS)  # no reflection
    assert [verdict[1, 2, g] for g in H.REPRESENTED_GROUPS] == ["yes", "no", "no", "no"]
    assert all(verdict[nh, 2, g] == "yes" for nh in (2, 3) for g in H.REPRESENTED_GROUPS)
    with pytest.raises(ValueError, match="n_householder=0"):
        H.exact_tracking(0, 2, "S3")


def test_bad_inputs_name_the_value():
    with pytest.raises(ValueError, match="n=1"):
        H.derive_householder(1)
    with pytest.raises(ValueError, match="'S4'"):
        H.tracking_representation("S4")
    with pytest.raises(ValueError, match="orthogonal"):
        H.reflections_needed(np.array([[2.0]]))
    with pytest.raises(ValueError, match="non-zero"):
        H.householder(np.zeros(3), 2.0)
    with pytest.raises(ValueError, match="distinct"):
        H.derive_transposition(3, 1, 1)
