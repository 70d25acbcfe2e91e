"""SymPy derivations of Paper 1's error-control theory (Theorem 1, Corollary 1), each with a
numeric twin.

Each ``derive_*`` function does one derivation on small, concrete-size but symbolic objects
and returns its pieces as SymPy expressions, with ``holds`` saying whether the claimed
identity simplified to zero. The numeric twins (numpy) are ``affine_map_fixing``,
``symbolic_basis`` / ``symbolic_subspace``, ``simulate_drift``, ``predicted_T_cross``,
``crossing_time`` and the tanh maps; ``tests/theory/test_error_control.py`` compares the two.
``corollary1_fit`` applies Corollary 1 to measured curves (the analyses' one fit of the
crossing time).

Notation (book and code): ``centroids`` c_g, the symbolic subspace ``U`` = span{c_g - c_g'}
and its complement ``U_perp``, the readout W, the separation ``M`` and ``T_cross`` the first
step at which the error reaches ``tau`` times the separation.
"""
from __future__ import annotations

import math
import random
from typing import Any, Mapping, Sequence

import numpy as np
import sympy as sp
from sympy.simplify.simplify import sum_simplify

CONVENTIONS = ("unsquared", "squared")

# symbols shared by the derivations (and by callers who evaluate their results)
t, j = sp.symbols("t j", integer=True, nonnegative=True)
eta = sp.IndexedBase("eta")  # eta[j]: U-component of the residual at step j
e0 = sp.Symbol("e_U0", real=True)  # e_U(0), one coordinate of U
eta_bar = sp.Symbol("eta_bar", real=True)  # constant drift, same coordinate
tau = sp.Symbol("tau", positive=True)
M = sp.Symbol("M", positive=True)  # separation read as a distance (un-squared)
M_sq = sp.Symbol("M_sq", positive=True)  # separation with squared norms, M_sq = M**2
e0_W = sp.Symbol("e0_W", nonnegative=True)  # ||W e_U(0)||
eta_W = sp.Symbol("eta_W", positive=True)  # ||W eta_bar||
T = sp.Symbol("T", nonnegative=True)
c = sp.Symbol("c", positive=True)  # fixed points +-c of the tanh example, 0 < c < 1
h = sp.Symbol("h", real=True)


# -- small helpers -------------------------------------------------------------------------------

def _is_zero(expr: Any) -> bool:
    if isinstance(expr, sp.MatrixBase):
        return all(_is_zero(e) for e in expr)
    return sp.simplify(sp.cancel(sp.together(expr))) == 0


def _check_n_g(n_g: Any) -> int:
    if isinstance(n_g, bool) or not isinstance(n_g, (int, np.integer)) or n_g < 2:
        raise ValueError(f"n_g={n_g!r} centroids: Theorem 1 needs an integer n_g >= 2 "
                         "(U is spanned by differences of centroids)")
    return int(n_g)


def _check_d(d: Any) -> int:
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"d={d!r} must be a positive integer (the state width)")
    return int(d)


def _check_convention(convention: str) -> str:
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown convention {convention!r}; allowed: {', '.join(CONVENTIONS)}")
    return convention


def _check_positive(name: str, value: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} must be a number > 0") from None
    if not v > 0 or not math.isfinite(v):
        raise ValueError(f"{name}={value!r} must be a finite number > 0")
    return v


def _symbolic_centroids(d: int, n_g: int) -> list[sp.Matrix]:
    return [sp.Matrix(sp.symbols(f"c_{g}_0:{d}", real=True)) for g in range(n_g)]


def _unknown_affine(d: int) -> tuple[sp.Matrix, sp.Matrix]:
    A = sp.Matrix(d, d, lambda i, k: sp.Symbol(f"a_{i}{k}", real=True))
    b = sp.Matrix(sp.symbols(f"b_0:{d}", real=True))
    return A, b


# -- Theorem 1, general argument ---------------------------------------------------------------

def derive_theorem1_general(d: int = 3, n_g: int = 3) -> dict[str, Any]:
    """Theorem 1 (affine neutrality), step by step on symbolic objects.

    Claim: if an affine return map F(h) = A h + b fixes every centroid, F(c_g) = c_g, then A
    is the identity on U = span{c_g - c_g'}, so F(c_g + delta) - F(c_g) = delta for every
    delta in U: no error along U is ever contracted (nor amplified).

    Argument: the hypotheses are H_g := A c_g + b - c_g = 0. (0) Hypothesis g = 0 gives
    b = c_0 - A c_0. (1) Subtracting H_g' from H_g removes b: A (c_g - c_g') = c_g - c_g'.
    (2) Every difference is a difference of differences from c_0, so the vectors c_k - c_0
    span U. (3) A is linear, so for delta = sum_k alpha_k (c_k - c_0) the identities of (1)
    add up to A delta = delta. (4) Hence F(c_g + delta) - F(c_g) = A delta = delta.

    Here d and n_g fix the sizes; every entry (centroids c_g_i, A's a_ik, b's b_i, the
    coefficients alpha_k) is a symbol. Each step (description, lhs, rhs, holds) is checked
    twice: (a) lhs - rhs minus an explicit combination of the hypotheses H_g expands to zero
    (an exact certificate, no genericity needed), and (b) after substituting b = c_0 - A c_0
    and solving the remaining hypotheses, as linear equations, for d * (n_g - 1) entries of
    A (Cramer's rule), lhs - rhs vanishes identically in the remaining symbols (this divides
    by the minor det(D_top) of the centroid differences, i.e. assumes generic centroids).
    ``needs_hypotheses`` records that lhs - rhs is *not* zero without them, and
    ``false_claim_rejected`` that the false A delta = 2 delta fails both checks, so they are
    not vacuous. The d * (d - r) entries of A left free are its action on U_perp, which the
    theorem leaves arbitrary.
    """
    d, n_g = _check_d(d), _check_n_g(n_g)
    if n_g - 1 > d:
        raise ValueError(f"n_g={n_g} with d={d}: the general derivation needs n_g <= d + 1 "
                         "(affinely independent symbolic centroids); use "
                         "derive_theorem1_instance for more centroids")
    C = _symbolic_centroids(d, n_g)
    A, b = _unknown_affine(d)
    alpha = sp.symbols(f"alpha_1:{n_g}", real=True)

    def F(x: sp.Matrix) -> sp.Matrix:
        return A * x + b

    H = [F(cg) - cg for cg in C]  # hypotheses H_g = 0
    b_sub = dict(zip(b, C[0] - A * C[0]))
    # The remaining hypotheses A (c_k - c_0) = c_k - c_0 are linear equations in A. Row i
    # reads a_i D = D_i with D = [c_1 - c_0, ..., c_r - c_0] (d, r); solve them for the first r
    # entries of each row by Cramer's rule with the top r x r minor D_top (generic centroids:
    # det D_top != 0): a_i[:r] = (D_i - a_i[r:] D[r:]) adj(D_top) / det(D_top). Keeping the
    # numerators A_num = det(D_top) * A_solved makes every check a polynomial identity.
    r = n_g - 1
    D = sp.Matrix.hstack(*[C[k] - C[0] for k in range(1, n_g)])  # (d, r)
    D_top = D[:r, :]
    den = D_top.det()
    adj = D_top.adjugate()
    A_num = sp.zeros(d, d)
    for i in range(d):
        A_num[i, :r] = (D[i, :] - A[i, r:] * D[r:, :]) * adj
        A_num[i, r:] = den * A[i, r:]
    free = [A[i, k] for i in range(d) for k in range(r, d)]
    # the checks run in the polynomial ring ZZ[c, a, b, alpha] (fast, canonical form)
    R, *_ = sp.ring([x for cg in C for x in cg] + list(A) + list(b) + list(alpha), sp.ZZ)
    A_r, b_r = [R(x) for x in A], [R(x) for x in b]
    den_r = R(den)
    A_num_r = [R(x) for x in A_num]
    b_num_r = [R(x) for x in den * C[0] - A_num * C[0]]  # den * (c_0 - A_solved c_0)
    ab_index = {R.gens.index(x) for x in A_r + b_r}
    to_zero = [(x, 0) for x in A_r + b_r]
    to_num = list(zip(A_r, A_num_r)) + list(zip(b_r, b_num_r))

    def vanishes_on_solution(expr: Any) -> bool:
        """expr (affine in A and b) vanishes at A = A_num / den, b = c_0 - A c_0."""
        e = R(expr)
        const = e.compose(to_zero)
        lin = e - const
        if not all(sum(m[k] for k in ab_index) == 1 for m in lin.monoms()):
            raise RuntimeError(f"{expr} is not affine in A and b")  # pragma: no cover
        return lin.compose(to_num) + den_r * const == 0

    solves_hypotheses = all(vanishes_on_solution(e) for g in range(1, n_g) for e in H[g])

    def check(lhs: sp.Matrix, rhs: sp.Matrix, certificate: sp.Matrix) -> tuple[bool, bool]:
        diff = lhs - rhs
        by_certificate = all(R(e) == 0 for e in diff - certificate)
        by_elimination = all(vanishes_on_solution(e) for e in diff)
        return by_certificate and by_elimination, any(R(e) != 0 for e in diff)

    steps: list[tuple[str, Any, Any, bool]] = []
    needs: list[bool] = []

    lhs0 = F(C[0]).subs(b_sub)
    steps.append(("(0) hypothesis g=0 solved for b: b = c_0 - A c_0, and then F(c_0) = c_0",
                  lhs0, C[0], (lhs0 - C[0]).applyfunc(sp.expand) == sp.zeros(d, 1)))
    for g in range(n_g):
        for g2 in range(g + 1, n_g):
            lhs, rhs = A * (C[g] - C[g2]), C[g] - C[g2]
            ok, nontrivial = check(lhs, rhs, H[g] - H[g2])
            steps.append((f"(1) subtract hypotheses {g} and {g2}: "
                          f"A (c_{g} - c_{g2}) = c_{g} - c_{g2}", lhs, rhs, ok))
            needs.append(nontrivial)
    for g in range(1, n_g):
        for g2 in range(g + 1, n_g):
            lhs, rhs = C[g] - C[g2], (C[g] - C[0]) - (C[g2] - C[0])
            same = (lhs - rhs).applyfunc(sp.expand) == sp.zeros(d, 1)
            steps.append((f"(2) c_{g} - c_{g2} = (c_{g} - c_0) - (c_{g2} - c_0): "
                          "the c_k - c_0 span U", lhs, rhs, same))
    delta = sp.zeros(d, 1)
    certificate = sp.zeros(d, 1)
    for k in range(1, n_g):
        delta += alpha[k - 1] * (C[k] - C[0])
        certificate += alpha[k - 1] * (H[k] - H[0])
    ok, nontrivial = check(A * delta, delta, certificate)
    steps.append(("(3) linearity: A delta = delta for delta = sum_k alpha_k (c_k - c_0) in U",
                  A * delta, delta, ok))
    needs.append(nontrivial)
    control = check(A * delta, 2 * delta, certificate)[0]  # a false claim must fail
    for g in range(n_g):
        lhs = F(C[g] + delta) - F(C[g])
        ok, nontrivial = check(lhs, delta, certificate)
        steps.append((f"(4) F(c_{g} + delta) - F(c_{g}) = delta", lhs, delta, ok))
        needs.append(nontrivial)
    return {"centroids": C, "A": A, "b": b, "alpha": alpha, "delta": delta,
            "hypotheses": H, "b_solved": C[0] - A * C[0], "A_solved": A_num / den,
            "minor_det": den, "solves_hypotheses": solves_hypotheses,
            "false_claim_rejected": not control,
            "free_entries": free, "n_free": len(free), "expected_free": d * (d - r),
            "steps": steps, "needs_hypotheses": all(needs),
            "holds": all(s[3] for s in steps) and all(needs) and solves_hypotheses
            and not control and len(free) == d * (d - r)}


# -- Theorem 1, concrete instances --------------------------------------------------------------

def _random_rational_centroids(d: int, n_g: int, seed: int) -> list[sp.Matrix]:
    rnd = random.Random(seed)
    want = min(n_g - 1, d)  # dim U for centroids in general position
    for _ in range(100):
        C = [sp.Matrix([sp.Rational(rnd.randint(-9, 9), rnd.randint(1, 4)) for _ in range(d)])
             for _ in range(n_g)]
        if sp.Matrix.hstack(*[cg - C[0] for cg in C[1:]]).rank() == want:
            return C
    raise RuntimeError("could not draw centroids in general position")  # pragma: no cover


def derive_theorem1_instance(d: int, n_g: int, seed: int = 0) -> dict[str, Any]:
    """Theorem 1 on a concrete instance: solve for *every* affine map fixing the centroids.

    Claim: with n_g random rational centroids in R^d (in general position, so r = dim U =
    min(n_g - 1, d)), the linear system A c_g + b = c_g (g = 0..n_g-1) in the d*d + d
    unknowns of A and b has a family of solutions, and on every member A U = U (A is the
    identity on U), while A U_perp is completely free: the family has d * (d - r) free
    parameters, one per entry of A U_perp.

    Argument: row i of the system reads [c_g^T, 1] (a_i; b_i) = c_g,i; the n_g x (d + 1)
    matrix [c_g^T, 1] has rank r + 1, so each row keeps d - r free parameters. SymPy's
    ``linsolve`` gives the family; A U - U is then simplified to zero with the free
    parameters left symbolic, and the Jacobian of the entries of A U_perp with respect to
    the free parameters has full rank d * (d - r) (they parametrise A on U_perp exactly).
    """
    d, n_g = _check_d(d), _check_n_g(n_g)
    C = _random_rational_centroids(d, n_g, seed)
    A, b = _unknown_affine(d)
    unknowns = list(A) + list(b)
    eqs = [e for cg in C for e in (A * cg + b - cg)]
    solutions = sp.linsolve(eqs, unknowns)
    if len(solutions) != 1:  # pragma: no cover - the system is always consistent (A=I, b=0)
        raise RuntimeError(f"linsolve returned {solutions}")
    (values,) = solutions
    sub = dict(zip(unknowns, values))
    A_sol, b_sol = A.subs(sub), b.subs(sub)
    free = sorted(set().union(*(sp.sympify(v).free_symbols for v in values)), key=str)
    U = sp.Matrix.hstack(*sp.Matrix.hstack(*[cg - C[0] for cg in C[1:]]).columnspace())
    r = U.shape[1]
    U_perp_cols = U.T.nullspace()
    U_perp = sp.Matrix.hstack(*U_perp_cols) if U_perp_cols else sp.zeros(d, 0)
    A_on_U = A_sol * U
    A_on_U_perp = (A_sol * U_perp).applyfunc(sp.expand)
    if free:
        jac = sp.Matrix(list(A_on_U_perp)).jacobian(free)
        perp_rank = jac.rank()
    else:
        perp_rank = 0
    A_on_U_is_identity = (A_on_U - U).applyfunc(sp.expand) == sp.zeros(d, r)
    b_is_fixed = (b_sol - (C[0] - A_sol * C[0])).applyfunc(sp.expand) == sp.zeros(d, 1)
    return {"centroids": C, "A": A, "b": b, "A_solution": A_sol, "b_solution": b_sol,
            "U": U, "U_perp": U_perp, "r": r, "free_parameters": free, "n_free": len(free),
            "expected_free": d * (d - r), "A_on_U": A_on_U, "A_on_U_perp": A_on_U_perp,
            "A_on_U_is_identity": A_on_U_is_identity,
            "U_perp_free": perp_rank == len(free) == d * (d - r),
            "b_is_c0_minus_A_c0": b_is_fixed,
            "holds": A_on_U_is_identity and b_is_fixed and len(free) == d * (d - r)
            and perp_rank == len(free)}


# -- the state-dependent contrast and the C2 corner case -------------------------------------------

def derive_state_dependent_contrast(d_c2: int = 3) -> dict[str, Any]:
    """A tanh map that preserves two states exactly *and* contracts errors along U; the
    affine maps with the same fixed points cannot (Theorem 1); the C2 corner case.

    Claim 1 (contrast): in one dimension, with 0 < c < 1 and w = artanh(c) / c, the Elman
    step F_e(h) = tanh(w h) has the exact fixed points c_0 = -c, c_1 = c (U = R), and its
    derivative there, J = w (1 - c^2) = (1 - c^2) artanh(c) / c, lies in (0, 1). The parity
    step F_a(h) = tanh(-w h) swaps -c and c; F_a o F_a fixes both, with derivative J^2 < 1.
    So a state-dependent map can be state-preserving and contracting along U at once.
    Argument for J < 1: J < 1 <=> g(c) := c - (1 - c^2) artanh(c) > 0; g(0) = 0 and
    g'(c) = 2 c artanh(c) > 0 on (0, 1). The Jacobian w (1 - tanh(w h)^2) depends on h:
    the map is state-dependent. For comparison the affine maps through the same points are
    forced: f(-c) = -c, f(c) = c gives f(h) = h (slope 1: Theorem 1 in 1-D), and the affine
    swap is f(h) = -h, whose square is the identity.
    For general fixed points c_0 != c_1 in (-1, 1) the step tanh(w h + b) with
    w = (artanh c_1 - artanh c_0) / (c_1 - c_0), b = artanh c_0 - w c_0 fixes both exactly
    (``elman_*``); whether it contracts depends on w (1 - c_g^2).

    Claim 2 (C2 corner case, App. E.2): for symbolic c_0, c_1 in R^d, the affine map
    F_a(h) = -h + (c_0 + c_1) swaps c_0 and c_1, and F_a o F_a = id. Its Jacobian is -I,
    so on U = span{c_1 - c_0} it acts as -1: a neutral oscillation, |eigenvalue| = 1, which
    solves parity without any error correction.
    """
    d_c2 = _check_d(d_c2)
    w = sp.atanh(c) / c
    F_e = sp.tanh(w * h)
    F_a = sp.tanh(-w * h)
    F_aa = F_a.subs(h, F_a)
    J = sp.diff(F_e, h)
    J_at = {s: sp.simplify(J.subs(h, s * c)) for s in (-1, 1)}
    J_formula = (1 - c ** 2) * sp.atanh(c) / c
    J_aa_at = {s: sp.simplify(sp.diff(F_aa, h).subs(h, s * c)) for s in (-1, 1)}
    fixed = all(_is_zero(F_e.subs(h, s * c) - s * c) for s in (-1, 1))
    swaps = all(_is_zero(F_a.subs(h, s * c) + s * c) for s in (-1, 1))
    fixed_aa = all(_is_zero(F_aa.subs(h, s * c) - s * c) for s in (-1, 1))
    derivative = all(_is_zero(J_at[s] - J_formula) for s in (-1, 1))
    derivative_aa = all(_is_zero(J_aa_at[s] - J_formula ** 2) for s in (-1, 1))
    g = c - (1 - c ** 2) * sp.atanh(c)  # J < 1  <=>  g > 0
    g_prime = sp.diff(g, c)
    bound = (g.subs(c, 0) == 0 and _is_zero(g_prime - 2 * c * sp.atanh(c))
             and _is_zero(J_formula - (1 - g / c)))
    state_dependent = sp.diff(J, h) != 0
    # the affine maps through the same points
    alpha_, beta_ = sp.symbols("alpha beta", real=True)
    f = alpha_ * h + beta_
    affine_fix = sp.solve([f.subs(h, -c) + c, f.subs(h, c) - c], [alpha_, beta_], dict=True)
    affine_swap = sp.solve([f.subs(h, -c) - c, f.subs(h, c) + c], [alpha_, beta_], dict=True)
    affine_forced = (affine_fix == [{alpha_: 1, beta_: 0}]
                     and affine_swap == [{alpha_: -1, beta_: 0}])
    # general Elman step tanh(w h + b) with two prescribed fixed points
    c0, c1 = sp.symbols("c_0 c_1", real=True)
    w_gen = (sp.atanh(c1) - sp.atanh(c0)) / (c1 - c0)
    b_gen = sp.atanh(c0) - w_gen * c0
    F_gen = sp.tanh(w_gen * h + b_gen)
    elman_fixed = all(_is_zero(F_gen.subs(h, cg) - cg) for cg in (c0, c1))
    elman_J = {cg: sp.simplify(sp.diff(F_gen, h).subs(h, cg)) for cg in (c0, c1)}
    elman_J_formula = all(_is_zero(elman_J[cg] - w_gen * (1 - cg ** 2)) for cg in (c0, c1))
    # C2 corner case
    C0 = sp.Matrix(sp.symbols(f"c_0_0:{d_c2}", real=True))
    C1 = sp.Matrix(sp.symbols(f"c_1_0:{d_c2}", real=True))
    hv = sp.Matrix(sp.symbols(f"h_0:{d_c2}", real=True))

    def F_c2(x: sp.Matrix) -> sp.Matrix:
        return -x + (C0 + C1)

    c2_swap = _is_zero(F_c2(C0) - C1) and _is_zero(F_c2(C1) - C0)
    c2_involution = _is_zero(F_c2(F_c2(hv)) - hv)
    c2_jacobian = F_c2(hv).jacobian(hv)
    u = C1 - C0
    c2_on_U = _is_zero(c2_jacobian * u + u)  # eigenvalue -1 on U: neutral
    c2 = c2_swap and c2_involution and c2_jacobian == -sp.eye(d_c2) and c2_on_U
    return {"w": w, "F_e": F_e, "F_a": F_a, "F_aa": F_aa, "jacobian": J,
            "J_at_fixed_points": J_at, "J": J_formula, "J_aa_at_fixed_points": J_aa_at,
            "g": g, "g_prime": g_prime,
            "J_value_c_half": float(J_formula.subs(c, sp.Rational(1, 2))),
            "fixed": fixed, "swaps": swaps, "fixed_aa": fixed_aa, "derivative": derivative,
            "derivative_aa": derivative_aa, "bound": bound, "state_dependent": state_dependent,
            "affine_fix": affine_fix, "affine_swap": affine_swap, "affine_forced": affine_forced,
            "elman_w": w_gen, "elman_b": b_gen, "elman_F": F_gen, "elman_J": elman_J,
            "elman_fixed": elman_fixed and elman_J_formula,
            "c2_F": F_c2(hv), "c2_jacobian": c2_jacobian, "c2_holds": c2,
            "holds": all([fixed, swaps, fixed_aa, derivative, derivative_aa, bound,
                          state_dependent, affine_forced, elman_fixed, elman_J_formula, c2])}


# -- Corollary 1 -----------------------------------------------------------------------------------

def derive_corollary1() -> dict[str, Any]:
    """Corollary 1: errors along U add up without damping, so they cross the decoding margin
    in time proportional to the separation over the drift.

    Claim (accumulation): if the learned map is F~ = F + eps with A|_U = I, then in every
    coordinate of U the error obeys e_U(t + 1) = e_U(t) + eta_t, hence
    e_U(t) = e_U(0) + sum_{j<t} eta_j, and e_U(t) = e_U(0) + t eta_bar for a constant drift.
    Here eta_t is the whole U-component of the increment: writing A in a basis (U, U_perp)
    its first block column is (I; 0) (A U = U) and its second is free, (B_UP; B_PP), so
    e_U(t + 1) = e_U(t) + B_UP e_perp(t) + eps_U(t): eta_t = B_UP e_perp(t) + eps_U(t)
    (leakage from U_perp plus the residual's U-component). ``block`` checks this on a
    symbolic 2 + 1 split. Argument for the closed form: induction. Base: the empty sum
    vanishes, E(0) = e_U(0). Step: sum_{j<=t} = sum_{j<t} + eta_t (adjacent ranges
    combine), so E(t + 1) = E(t) + eta_t.

    Claim (crossing time): with readout W, if W e_U(0) and W eta_bar point the same way (or
    e_U(0) = 0) then ||W e_U(t)|| = e0_W + t eta_W with e0_W = ||W e_U(0)||, eta_W =
    ||W eta_bar||. Un-squared convention (M a distance, min ||W (c_g - c_g')||): the error
    reaches tau M at T_cross = (tau M - e0_W) / eta_W, which is the paper's tau M / eta_W when
    e_U(0) = 0. Squared convention (M_sq = M^2, q = ||W e_U||^2 / M_sq): q reaches tau at
    T_cross = (sqrt(tau M_sq) - e0_W) / eta_W. Scaling every hidden vector by lambda leaves
    the dynamics' crossing step unchanged; both formulas are invariant, but the paper's
    tau M / eta_W with M read as M_sq scales by lambda: the paper's formula is dimensionally
    consistent only in the un-squared reading. The two conventions give the same T_cross
    when tau_unsquared = sqrt(tau_squared).
    """
    E = lambda n: e0 + sp.Sum(eta[j], (j, 0, n - 1))  # noqa: E731 - closed form E(n)
    closed_form = E(t)
    base = sp.simplify(E(0).doit() - e0) == 0
    last_term = sp.Sum(eta[j], (j, t, t))
    step = (last_term.doit() == eta[t]
            and sp.simplify(sum_simplify(E(t) + last_term) - E(t + 1)) == 0)
    constant = e0 + sp.Sum(eta_bar, (j, 0, t - 1)).doit()
    constant_ok = sp.expand(constant - (e0 + t * eta_bar)) == 0
    # block structure of A with A|_U = I (U = first 2 coordinates, U_perp = the last one)
    B_UP = sp.Matrix(sp.symbols("B_UP_0:2", real=True))
    B_PP = sp.Symbol("B_PP", real=True)
    A_blk = sp.Matrix([[1, 0, B_UP[0]], [0, 1, B_UP[1]], [0, 0, B_PP]])
    x = sp.Matrix(sp.symbols("x_U0 x_U1 x_P", real=True))
    eps = sp.Matrix(sp.symbols("eps_U0 eps_U1 eps_P", real=True))
    nxt = A_blk * x + eps
    eta_t = B_UP * x[2] + eps[:2, 0]
    block = (A_blk[:, :2] == sp.eye(3)[:, :2]
             and (nxt[:2, 0] - (x[:2, 0] + eta_t)).applyfunc(sp.expand) == sp.zeros(2, 1))
    # crossing times
    T_un = sp.solve(sp.Eq(e0_W + T * eta_W, tau * M), T)[0]
    roots = sp.solve(sp.Eq((e0_W + T * eta_W) ** 2 / M_sq, tau), T)
    T_sq_formula = (sp.sqrt(tau * M_sq) - e0_W) / eta_W
    squared_root = any(_is_zero(r_ - T_sq_formula) for r_ in roots)
    T_sq = T_sq_formula
    paper = tau * M / eta_W
    lam = sp.Symbol("lambda", positive=True)
    invariant_un = _is_zero(T_un.subs({M: lam * M, e0_W: lam * e0_W, eta_W: lam * eta_W},
                                      simultaneous=True) - T_un)
    invariant_sq = _is_zero(T_sq.subs({M_sq: lam ** 2 * M_sq, e0_W: lam * e0_W,
                                       eta_W: lam * eta_W}, simultaneous=True) - T_sq)
    paper_sq_reading = tau * M_sq / eta_W
    paper_sq_scale = sp.simplify(paper_sq_reading.subs({M_sq: lam ** 2 * M_sq,
                                                        eta_W: lam * eta_W},
                                                       simultaneous=True) / paper_sq_reading)
    conventions_agree = _is_zero(T_sq - T_un.subs({M: sp.sqrt(M_sq), tau: sp.sqrt(tau)},
                                                  simultaneous=True))
    paper_matches = _is_zero(T_un.subs(e0_W, 0) - paper)
    return {"closed_form": closed_form, "base": base, "step": step,
            "constant_drift": constant, "constant_ok": constant_ok,
            "A_block": A_blk, "eta_t": eta_t, "block": block,
            "T_cross_unsquared": T_un, "T_cross_squared": T_sq, "squared_roots": roots,
            "T_cross_paper": paper, "paper_matches_unsquared": paper_matches,
            "invariant_unsquared": invariant_un, "invariant_squared": invariant_sq,
            "paper_squared_reading_scales_by": paper_sq_scale,
            "conventions_agree": conventions_agree,
            "holds": all([base, step, constant_ok, block, squared_root, invariant_un,
                          invariant_sq, paper_sq_scale == lam, conventions_agree,
                          paper_matches])}


def evaluate(expr: Any, values: Mapping[Any, Any]) -> Any:
    """Numeric value of an expression (or matrix) with symbols replaced by ``values``.

    Finite sums are expanded after the first substitution, so ``values`` may fix ``t`` and
    give the terms, e.g. ``{t: 3, eta[0]: 0.1, eta[1]: 0.2, eta[2]: -0.4, e0: 1.0}``.
    """
    out = sp.sympify(expr).subs(values).doit().subs(values)
    if isinstance(out, sp.MatrixBase):
        return np.array(out.evalf(), dtype=float)
    return float(sp.N(out))


# -- numeric twins ------------------------------------------------------------------------------

SUBSPACE_RTOL = 1e-8  # the rank rule of symbolic_basis (see there)


def symbolic_basis(centroids: Any, present: Any = None, rtol: float = SUBSPACE_RTOL) -> np.ndarray:
    """Orthonormal basis ``Q`` (d, r) of ``U = span{c_g - c_g0}``: the one rank rule of U.

    Args:
        centroids: ``(n_g, d)`` centroids at one time (array or tensor). Rows that are
            absent (``present`` False) or contain NaN are skipped; ``g0`` is the first
            remaining row.
        present: optional ``(n_g,)`` bool mask of the rows to use.
        rtol: the tolerance rule. With ``s`` the singular values of the differences
            ``c_g - c_g0``, a direction counts when ``s > rtol * max(s_max, max_g ||c_g||)``.
            The second term keeps rounding noise between (nearly) coincident centroids out of
            U. Float64 rounding noise is near 1e-16 of that scale; states computed in float32
            carry noise near 1e-7 of it, which this rule would still count.

    Returns:
        ``Q`` (right singular vectors of the differences) with orthonormal columns,
        ``r <= n_valid - 1``; ``(d, 0)`` when fewer than two valid rows remain or all of
        them coincide.
    """
    c = np.asarray(centroids.detach().cpu() if hasattr(centroids, "detach") else centroids,
                   dtype=np.float64)
    if c.ndim != 2:
        raise ValueError(f"c must have shape (n_g, d), got {c.shape}")
    if not np.isfinite(rtol) or rtol < 0:
        raise ValueError(f"rtol must be a finite number >= 0, got {rtol!r}")
    keep = np.isfinite(c).all(axis=1)  # (n_g,)
    if present is not None:
        present = np.asarray(present, dtype=bool)
        if present.shape != (c.shape[0],):
            raise ValueError(f"present has shape {present.shape}, expected ({c.shape[0]},)")
        keep &= present
    cv = c[keep]  # (n_valid, d)
    d = c.shape[1]
    if len(cv) < 2:
        return np.zeros((d, 0))
    diffs = cv[1:] - cv[0]  # (n_valid - 1, d)
    _, s, Vt = np.linalg.svd(diffs, full_matrices=False)  # (k,), (k, d)
    scale = max(s[0], np.linalg.norm(cv, axis=1).max())
    r = int((s > rtol * scale).sum()) if scale > 0 else 0
    return Vt[:r].T.copy()  # (d, r)


def symbolic_subspace(centroids: Any, present: Any = None, rtol: float = SUBSPACE_RTOL
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal bases (U, U_perp) of span{c_g - c_0} and its complement.

    centroids: (n_g, d) with n_g >= 2. U is :func:`symbolic_basis` (its rank rule, its
    ``present`` and ``rtol``), U_perp (d, d - r) an orthonormal basis of the complement.
    """
    C = np.asarray(centroids, dtype=float)
    if C.ndim != 2:
        raise ValueError(f"centroids must have shape (n_g, d); got shape {C.shape}")
    _check_n_g(C.shape[0])
    U = symbolic_basis(C, present, rtol)
    full = np.linalg.qr(U, mode="complete")[0] if U.shape[1] else np.eye(C.shape[1])
    return U, full[:, U.shape[1]:]


def affine_map_fixing(centroids: Any, rng: Any = None, perp_scale: float = 1.0
                      ) -> tuple[np.ndarray, np.ndarray]:
    """A random affine map F(h) = A h + b with F(c_g) = c_g for every centroid.

    A = U U^T + B U_perp^T with B a random (d, d - r) matrix: A is the identity on U (as
    Theorem 1 forces) and maps U_perp anywhere, into U as well; b = c_0 - A c_0. Then
    A c_g + b = c_0 + A (c_g - c_0) = c_g because c_g - c_0 lies in U.
    rng: a numpy Generator, a seed, or None. perp_scale scales B; the U_perp -> U_perp block
    U_perp^T B sets whether errors off U grow, so keep it small (e.g. 0.3) for long rollouts.
    """
    C = np.asarray(centroids, dtype=float)
    U, U_perp = symbolic_subspace(C)
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    d = C.shape[1]
    B = perp_scale * rng.standard_normal((d, U_perp.shape[1]))  # (d, d - r)
    A = U @ U.T + B @ U_perp.T  # (d, d)
    b = C[0] - A @ C[0]
    return A, b


def predicted_T_cross(M: float, eta_bar_W_norm: float, tau: float = 0.5, e0: float = 0.0,
                      convention: str = "unsquared") -> float:
    """Corollary 1's crossing time for a constant drift along U.

    M: the separation, a distance min ||W (c_g - c_g')|| for ``"unsquared"``, its square for
    ``"squared"``. eta_bar_W_norm: ||W eta_bar||. e0: ||W e_U(0)|| (a distance in both
    conventions; the formula assumes W e_U(0) points along W eta_bar, or is 0).
    Returns the continuous time (tau M - e0) / ||W eta_bar|| (un-squared) or
    (sqrt(tau M) - e0) / ||W eta_bar|| (squared); the discrete crossing step is its ceiling.
    0 if the error starts above the threshold, inf if there is no drift.
    """
    convention = _check_convention(convention)
    tau = _check_positive("tau", tau)
    M = _check_positive("M", M)
    eta_W_ = float(eta_bar_W_norm)
    if not eta_W_ >= 0:
        raise ValueError(f"eta_bar_W_norm={eta_bar_W_norm!r} must be >= 0 (a norm)")
    e0 = float(e0)
    if not e0 >= 0:
        raise ValueError(f"e0={e0!r} must be >= 0 (the norm ||W e_U(0)||)")
    threshold = tau * M if convention == "unsquared" else math.sqrt(tau * M)
    if e0 >= threshold:
        return 0.0
    if eta_W_ == 0:
        return math.inf
    return (threshold - e0) / eta_W_


def corollary1_fit(R: Any, M: Any, tau: float = 0.5, window: tuple[int, int] = (10, 120),
                   keep: Any = None, t: Any = None) -> dict[str, Any] | None:
    """Corollary 1's crossing time fitted to measured curves (squared convention).

    A constant drift along U makes the spread grow linearly, ``sqrt(R(t)) = a + b t`` with
    ``b = ||W eta_bar||`` and ``a`` the offset (``||W e_U(0)||`` when it points along the
    drift). A least-squares line through the points of ``window`` gives ``a`` and ``b``; with
    ``M`` the median of ``M(t)`` there, ``q = R / M`` reaches ``tau`` where
    ``(a + b t)^2 = tau M``:

        T_pred = (sqrt(tau * M) - a) / b,

    :func:`predicted_T_cross` (``convention="squared"``) with the fitted ``b`` and
    ``e0 = a``; here ``a`` may come out negative and ``T_pred`` is returned unclipped.

    Args:
        R, M: ``(L,)`` curves, index ``i`` is time ``t = i + 1``: the spread (``R_U(t)``
            for Corollary 1; the label-free warning passes ``R(t)``) and the separation
            (squared norms, as in q).
        window: ``(lo, hi)``, 1-based and inclusive (``hi`` clipped to the last time).
        keep: optional ``(L,)`` bool mask of further points to use.
        t: optional ``(L,)`` times of the points (1-based, increasing), for a curve stored
            at some times only (:func:`sst_core.store.codec.curve_times`); default 1..L.

    The points are those of the window where ``R`` and ``M`` are finite, ``M > 0`` and
    ``keep`` holds. Returns None with fewer than 3 of them, else ``T_pred`` (None when the
    fitted drift ``b`` is not positive), ``drift`` (b), ``offset`` (a) and ``M``.
    """
    R, M = np.asarray(R, dtype=float), np.asarray(M, dtype=float)
    lo, hi = window
    t = np.arange(1, R.size + 1) if t is None else np.asarray(t, dtype=float)
    if t.shape != R.shape or M.shape != R.shape:
        raise ValueError(f"R, M and t must have one shape; got {R.shape}, {M.shape}, {t.shape}")
    with np.errstate(invalid="ignore"):
        sel = (t >= lo) & (t <= hi) & np.isfinite(R) & np.isfinite(M) & (M > 0)
    if keep is not None:
        sel &= np.asarray(keep, dtype=bool)
    if sel.sum() < 3:
        return None
    b, a = np.polyfit(t[sel], np.sqrt(R[sel]), 1)
    M_w = float(np.median(M[sel]))
    T = (np.sqrt(tau * M_w) - a) / b if b > 0 else None
    return {"T_pred": None if T is None else float(T), "drift": float(b), "offset": float(a),
            "M": M_w}


def simulate_drift(A: Any, b: Any, centroid: Any, eta: Any, steps: int, *, U: Any,
                   W: Any = None, e0: Any = None, return_errors: bool = False) -> Any:
    """Run h_{t+1} = A h_t + b + eta_t from h_0 = centroid + e0 and measure the U-error.

    eta: (d,) constant residual or (steps, d) per step. U: (d, r) orthonormal basis of the
    symbolic subspace. W: readout (k, d), default the identity. Returns ||W e_U(t)|| for
    t = 0..steps, shape (steps + 1,), with e_U(t) = U U^T (h_t - centroid); with
    ``return_errors`` also the e_U(t) themselves, shape (steps + 1, d).
    """
    A, b = np.asarray(A, dtype=float), np.asarray(b, dtype=float)
    c_ = np.asarray(centroid, dtype=float)
    d = c_.shape[0]
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ValueError(f"steps={steps!r} must be an integer >= 0")
    eta = np.asarray(eta, dtype=float)
    if eta.shape == (d,):
        eta = np.broadcast_to(eta, (steps, d))
    elif eta.shape != (steps, d):
        raise ValueError(f"eta has shape {eta.shape}; allowed: ({d},) or ({steps}, {d})")
    U = np.asarray(U, dtype=float).reshape(d, -1)
    P_U = U @ U.T  # (d, d)
    W = np.eye(d) if W is None else np.asarray(W, dtype=float)
    h_ = c_ + (np.zeros(d) if e0 is None else np.asarray(e0, dtype=float))
    errors = np.empty((steps + 1, d))
    errors[0] = P_U @ (h_ - c_)
    for k in range(steps):
        h_ = A @ h_ + b + eta[k]
        errors[k + 1] = P_U @ (h_ - c_)
    norms = np.linalg.norm(errors @ W.T, axis=1)
    return (norms, errors) if return_errors else norms


def crossing_time(values: Sequence[float], threshold: float) -> int | None:
    """First index t with values[t] >= threshold, or None if it never gets there."""
    hits = np.flatnonzero(np.asarray(values, dtype=float) >= threshold)
    return int(hits[0]) if hits.size else None


def tanh_fixed_point_weights(c0: float, c1: float) -> tuple[float, float]:
    """(w, b) such that h -> tanh(w h + b) fixes c0 and c1 exactly (both in (-1, 1))."""
    for name, v in (("c0", c0), ("c1", c1)):
        if not -1 < v < 1:
            raise ValueError(f"{name}={v!r} must lie in (-1, 1), the range of tanh")
    if c0 == c1:
        raise ValueError(f"c0={c0!r} and c1={c1!r} must differ (two distinct states)")
    w = (np.arctanh(c1) - np.arctanh(c0)) / (c1 - c0)
    return float(w), float(np.arctanh(c0) - w * c0)


def tanh_step(h_: Any, w: float, b: float = 0.0) -> Any:
    """One step of the 1-D Elman map h -> tanh(w h + b)."""
    return np.tanh(w * np.asarray(h_, dtype=float) + b)
