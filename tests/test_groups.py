"""Tests for sst_core.groups: axioms, known element-order counts, conventions."""

from __future__ import annotations

import collections
import doctest
import re

import numpy as np
import pytest

import sst_core.groups as groups_module
from sst_core.groups import MAX_ORDER, Group, check_axioms, get_group

NAMES = ["C6", "S3", "D4", "A4", "S4", "A5", "C2xS3", "C2xC2xC3"]

ORDER_COUNTS = {
    "C6": {1: 1, 2: 1, 3: 2, 6: 2},
    "S3": {1: 1, 2: 3, 3: 2},
    "D4": {1: 1, 2: 5, 4: 2},
    "A4": {1: 1, 2: 3, 3: 8},
    "S4": {1: 1, 2: 9, 3: 8, 4: 6},
    "A5": {1: 1, 2: 15, 3: 20, 5: 24},
    "C2xS3": {1: 1, 2: 7, 3: 2, 6: 2},
    "C2xC2xC3": {1: 1, 2: 3, 3: 2, 6: 6},
}

ORDERS = {
    "C1": 1, "C2": 2, "C6": 6, "S1": 1, "S2": 2, "S3": 6, "S5": 120, "S6": 720,
    "D3": 6, "D4": 8, "A3": 3, "A4": 12, "A5": 60, "C2xS3": 12, "C2xC2xC3": 12,
    "C1000": 1000, "D500": 1000,
}


def generated_subgroup(group: Group, gens: tuple[int, ...]) -> set[int]:
    """Closure of {e} under right multiplication by the generators."""
    seen = {group.identity}
    frontier = [group.identity]
    while frontier:
        new = []
        for x in frontier:
            for g in gens:
                y = group.multiply(x, g)
                if y not in seen:
                    seen.add(y)
                    new.append(y)
        frontier = new
    return seen


@pytest.mark.parametrize("name", NAMES)
def test_axioms_explicit(name: str) -> None:
    g = get_group(name)
    t, n = g.table, g.order
    assert t.shape == (n, n) and t.dtype == np.int64
    assert t.min() >= 0 and t.max() < n  # closure
    ar = np.arange(n)
    # associativity over all triples: (a*b)*c == a*(b*c)
    left = t[t[:, :, None], ar[None, None, :]]  # (n, n, n)
    right = t[ar[:, None, None], t[None, :, :]]  # (n, n, n)
    assert np.array_equal(left, right)
    assert g.identity == 0
    assert np.array_equal(t[0], ar) and np.array_equal(t[:, 0], ar)
    assert np.all(t[ar, g.inverse] == 0) and np.all(t[g.inverse, ar] == 0)
    # every row and column is a permutation (Latin square)
    assert all(len(set(row)) == n for row in t.tolist())
    assert all(len(set(col)) == n for col in t.T.tolist())
    check_axioms(g)


@pytest.mark.parametrize("name", ["A6", "D7", "C2xD5", "C1", "S1", "S2"])  # S6 takes ~4 s
def test_check_axioms_more(name: str) -> None:
    check_axioms(get_group(name))


def test_check_axioms_rejects_broken_table() -> None:
    g = get_group("S3")
    t = g.table.copy()
    t[1, 2], t[1, 3] = t[1, 3], t[1, 2]  # still a Latin-ish row, but wrong
    broken = Group("broken", g.elements, t, 0, g.inverse, g.generators)
    with pytest.raises(ValueError):
        check_axioms(broken)
    t2 = g.table.copy()
    t2[2, 2] = 6  # out of range
    with pytest.raises(ValueError, match="not closed"):
        check_axioms(Group("bad", g.elements, t2, 0, g.inverse, g.generators))


@pytest.mark.parametrize("name", NAMES)
def test_element_order_counts(name: str) -> None:
    g = get_group(name)
    counts = collections.Counter(g.element_order(i) for i in range(g.order))
    assert dict(counts) == ORDER_COUNTS[name]
    vec = collections.Counter(g.element_orders().tolist())
    assert dict(vec) == ORDER_COUNTS[name]


@pytest.mark.parametrize("name,order", sorted(ORDERS.items()))
def test_orders(name: str, order: int) -> None:
    g = get_group(name)
    assert g.order == order == len(g.elements) == g.table.shape[0]


@pytest.mark.parametrize("name", NAMES + ["S2", "S5", "S6", "A3", "A6", "D3", "C2", "C1", "S1"])
def test_generators_generate(name: str) -> None:
    g = get_group(name)
    assert g.identity not in g.generators
    assert len(set(g.generators)) == len(g.generators)
    assert len(generated_subgroup(g, g.generators)) == g.order


def test_standard_generators() -> None:
    def labels(name: str) -> list[str]:
        g = get_group(name)
        return [g.elements[i] for i in g.generators]

    assert labels("C6") == ["1"]
    assert labels("C1") == []
    assert labels("D4") == ["r", "s"]
    assert labels("S2") == ["(0 1)"]
    assert labels("S4") == ["(0 1)", "(0 1 2 3)"]
    assert labels("A3") == ["(0 1 2)"]
    assert labels("A4") == ["(0 1 2)", "(1 2 3)"]
    assert labels("A5") == ["(0 1 2)", "(0 1 2 3 4)"]
    assert labels("C2xS3") == ["(1, e)", "(0, (0 1))", "(0, (0 1 2))"]


def test_abelian() -> None:
    assert not get_group("S3").is_abelian()
    assert not get_group("D4").is_abelian()
    assert not get_group("C2xS3").is_abelian()
    assert get_group("C6").is_abelian()
    assert get_group("C2xC2xC3").is_abelian()
    assert get_group("A3").is_abelian()


def test_composition_convention_s3() -> None:
    g = get_group("S3")
    a, b = g.index("(0 1)"), g.index("(1 2)")
    # (a*b)(i) = a(b(i)): 0 -> 0 -> 1, 1 -> 2 -> 2, 2 -> 1 -> 0, i.e. (0 1 2)
    assert g.elements[g.multiply(a, b)] == "(0 1 2)"
    assert g.elements[g.multiply(b, a)] == "(0 2 1)"


def test_permutation_order_and_labels() -> None:
    g = get_group("S3")
    # lexicographic order of image tuples
    assert g.elements == ("e", "(1 2)", "(0 1)", "(0 1 2)", "(0 2 1)", "(0 2)")
    a4 = get_group("A4")
    assert "(0 1)(2 3)" in a4.elements and "(0 1)" not in a4.elements
    assert a4.elements[0] == "e"


def test_dihedral_relations() -> None:
    n = 5
    g = get_group(f"D{n}")
    r, s = g.index("r"), g.index("s")
    assert g.element_order(r) == n and g.element_order(s) == 2
    # s r s = r^-1
    assert g.multiply(g.multiply(s, r), s) == g.inverse[r]
    # label "s r^k" is s * r^k
    rk = g.index("r^3")
    assert g.elements[g.multiply(s, rk)] == "s r^3"


def test_product_componentwise() -> None:
    g = get_group("C2xS3")
    s3 = get_group("S3")
    x = g.index("(1, (0 1))")
    y = g.index("(1, (1 2))")
    expected = s3.elements[s3.multiply(s3.index("(0 1)"), s3.index("(1 2)"))]
    assert g.elements[g.multiply(x, y)] == f"(0, {expected})"
    assert g.elements[0] == "(0, e)"


@pytest.mark.parametrize("name", NAMES + ["S6", "C1", "S1"])
def test_labels_identity_inverse(name: str) -> None:
    g = get_group(name)
    assert len(set(g.elements)) == g.order
    assert g.elements[g.identity] in {"e", "0", "(0, e)", "(0, 0, 0)"}
    for a in range(g.order):
        assert g.multiply(a, int(g.inverse[a])) == g.identity
        assert g.multiply(int(g.inverse[a]), a) == g.identity
        assert g.index(g.elements[a]) == a


def test_read_only_and_cached() -> None:
    g = get_group("S4")
    assert get_group("S4") is g
    with pytest.raises(ValueError):
        g.table[0, 0] = 1
    with pytest.raises(ValueError):
        g.inverse[0] = 1
    with pytest.raises(AttributeError):
        g.name = "other"  # type: ignore[misc]
    assert repr(g) == "Group('S4', order=24)"


def test_bad_index_and_label() -> None:
    g = get_group("S3")
    with pytest.raises(ValueError, match=re.escape("'(0 3)'")):
        g.index("(0 3)")
    with pytest.raises(ValueError, match="6"):
        g.multiply(6, 0)
    with pytest.raises(ValueError, match="-1"):
        g.element_order(-1)


BAD_NAMES = ["S0", "Q8x", "", "C0", "D2", "S7", "Cx", "C2x", "A2", "c3", "C06", "C2xS6"]


@pytest.mark.parametrize("bad", BAD_NAMES)
def test_bad_names(bad: str) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(bad))):
        get_group(bad)


def test_too_large_mentions_cap() -> None:
    with pytest.raises(ValueError, match=str(MAX_ORDER)):
        get_group("S7")
    with pytest.raises(ValueError, match="too large"):
        get_group("S1000000")


@pytest.mark.parametrize("bad", [3, None, b"S3", ["S3"]])
def test_non_string_name(bad: object) -> None:
    with pytest.raises(TypeError, match="str"):
        get_group(bad)  # type: ignore[arg-type]


def test_module_doctests() -> None:
    result = doctest.testmod(groups_module)
    assert result.attempted > 0 and result.failed == 0


def _sympy_perm(label: str, n: int):
    """A permutation of SymPy's from one of our cycle-notation labels."""
    from sympy.combinatorics import Permutation

    if label == "e":
        return Permutation(list(range(n)))
    cycles = [[int(x) for x in c.split()] for c in re.findall(r"\(([^)]*)\)", label)]
    return Permutation(cycles, size=n)


@pytest.mark.parametrize("name,n", [("S3", 3), ("S4", 4), ("A4", 4), ("A5", 5)])
def test_tables_match_sympy(name: str, n: int) -> None:
    """Numeric twin of the convention (a*b)(i) = a(b(i)): SymPy's p*q applies p first,
    so our a*b is SymPy's b*a."""
    g = get_group(name)
    perms = [_sympy_perm(lbl, n) for lbl in g.elements]
    index = {tuple(p.array_form): i for i, p in enumerate(perms)}
    assert len(index) == g.order
    for a in range(g.order):
        for b in range(g.order):
            assert g.table[a, b] == index[tuple((perms[b] * perms[a]).array_form)]


# -- structure: classes, normal subgroups, solvability (the harder-groups chapter) --------

# class sizes, orders of the normal subgroups, derived series: textbook facts
STRUCTURE = {
    "S3": ([1, 2, 3], [1, 3, 6], [6, 3, 1]),
    "A4": ([1, 3, 4, 4], [1, 4, 12], [12, 4, 1]),
    "S4": ([1, 3, 6, 6, 8], [1, 4, 12, 24], [24, 12, 4, 1]),
    "A5": ([1, 12, 12, 15, 20], [1, 60], [60]),
    "C2xS3": ([1, 1, 2, 2, 3, 3], [1, 2, 3, 6, 6, 6, 12], [12, 3, 1]),
    "C6": ([1] * 6, [1, 2, 3, 6], [6, 1]),
}


@pytest.mark.parametrize("name", sorted(STRUCTURE))
def test_structure_known_facts(name: str) -> None:
    from sst_core.groups import conjugacy_classes, derived_series, normal_subgroups

    g = get_group(name)
    sizes, normal_orders, series = STRUCTURE[name]
    classes = conjugacy_classes(g)
    assert sorted(len(c) for c in classes) == sizes
    assert sorted(x for c in classes for x in c) == list(range(g.order))  # a partition
    assert classes[0] == (g.identity,)
    normals = normal_subgroups(g)
    assert [len(n) for n in normals] == normal_orders
    for n in normals:  # each really is a normal subgroup
        n_arr = np.array(sorted(n))
        assert set(g.table[n_arr[:, None], n_arr[None, :]].ravel().tolist()) <= n
        for h in range(g.order):
            assert {int(g.table[g.table[h, x], g.inverse[h]]) for x in n} == n
    assert derived_series(g) == series


def test_a5_is_simple_and_not_solvable() -> None:
    from sst_core.groups import is_simple, is_solvable, normal_closure, structure

    a5 = get_group("A5")
    assert is_simple(a5) and not is_solvable(a5)
    for g in range(1, a5.order):  # every non-identity element's normal closure is A5
        assert len(normal_closure(a5, [g])) == 60
    s = structure(a5)
    assert s["element_orders"] == ORDER_COUNTS["A5"] and s["exponent"] == 30
    assert all(is_solvable(get_group(n)) for n in ("A4", "S4", "C2xS3", "S3", "C6"))
    assert not any(is_simple(get_group(n)) for n in ("A4", "S4", "C2xS3", "S3", "C6"))
    assert is_simple(get_group("C5")) and not is_simple(get_group("C1"))


@pytest.mark.parametrize("name,n", [("S3", 3), ("S4", 4), ("A4", 4), ("A5", 5)])
def test_structure_matches_sympy(name: str, n: int) -> None:
    """Numeric twin: SymPy's class count, solvability and derived series."""
    from sympy.combinatorics import PermutationGroup

    from sst_core.groups import conjugacy_classes, derived_series, is_solvable

    g = get_group(name)
    G = PermutationGroup([_sympy_perm(g.elements[x], n) for x in g.generators])
    assert G.order() == g.order
    assert len(list(G.conjugacy_classes())) == len(conjugacy_classes(g))
    assert G.is_solvable == is_solvable(g)
    assert [H.order() for H in G.derived_series()] == derived_series(g)


def test_subgroup_generated_bad_index() -> None:
    from sst_core.groups import subgroup_generated

    with pytest.raises(ValueError, match="out of range"):
        subgroup_generated(get_group("S3"), [6])
