"""Paper 1's Theorem 1 and Corollary 1: the SymPy derivations hold, and their numeric twins
(a random affine map fixing the centroids, a drift simulation, the predicted crossing time,
the tanh maps) agree with them."""
import math

import numpy as np
import pytest
import sympy as sp

from sst_core.theory import error_control as ec


def random_centroids(n_g, d, seed):
    return np.random.default_rng(seed).standard_normal((n_g, d))


# -- Theorem 1 ----------------------------------------------------------------------------------

@pytest.mark.parametrize("d, n_g", [(2, 2), (3, 3), (4, 3), (3, 4)])
def test_theorem1_general_steps_hold(d, n_g):
    out = ec.derive_theorem1_general(d, n_g)
    assert out["holds"]
    assert out["solves_hypotheses"] and out["needs_hypotheses"] and out["false_claim_rejected"]
    assert all(isinstance(s[0], str) and s[3] is True for s in out["steps"])
    kinds = {s[0][:3] for s in out["steps"]}
    assert kinds >= {"(0)", "(1)", "(3)", "(4)"}
    assert out["n_free"] == out["expected_free"] == d * (d - (n_g - 1))


@pytest.mark.parametrize("d, n_g, r", [(2, 2, 1), (3, 3, 2), (3, 4, 3), (4, 3, 2), (5, 6, 5),
                                       (5, 3, 2), (2, 5, 2)])
def test_theorem1_instances(d, n_g, r):
    out = ec.derive_theorem1_instance(d, n_g, seed=0)
    assert out["holds"] and out["A_on_U_is_identity"] and out["U_perp_free"]
    assert out["r"] == r
    assert out["n_free"] == out["expected_free"] == d * (d - r)
    assert out["A_on_U"] == out["U"]
    if r == d:  # the centroids span R^d affinely: the only such map is the identity
        assert out["A_solution"] == sp.eye(d) and out["b_solution"] == sp.zeros(d, 1)
    # every member of the family fixes every centroid
    values = {p: k + 1 for k, p in enumerate(out["free_parameters"])}
    A = out["A_solution"].subs(values)
    b = out["b_solution"].subs(values)
    assert all(A * cg + b == cg for cg in out["centroids"])


def test_theorem1_instance_seeds_differ_and_repeat():
    a = ec.derive_theorem1_instance(3, 3, seed=1)
    assert a["centroids"] == ec.derive_theorem1_instance(3, 3, seed=1)["centroids"]
    assert a["centroids"] != ec.derive_theorem1_instance(3, 3, seed=2)["centroids"]


def test_affine_map_fixing_numeric_twin():
    rng = np.random.default_rng(0)
    for n_g, d in [(2, 3), (3, 5), (6, 8), (5, 4), (7, 3)]:
        C = random_centroids(n_g, d, seed=n_g * 10 + d)
        A, b = ec.affine_map_fixing(C, rng)
        U, U_perp = ec.symbolic_subspace(C)
        assert U.shape == (d, min(n_g - 1, d)) and U_perp.shape == (d, d - U.shape[1])
        assert np.allclose(U.T @ U, np.eye(U.shape[1])) and np.allclose(U.T @ U_perp, 0)
        F = lambda x: A @ x + b  # noqa: E731
        for cg in C:
            assert np.allclose(F(cg), cg, atol=1e-10)
            for _ in range(5):
                delta = U @ rng.standard_normal(U.shape[1])  # in U
                assert np.allclose(F(cg + delta) - F(cg), delta, atol=1e-10)
            if U_perp.shape[1]:
                delta = U_perp @ rng.standard_normal(U_perp.shape[1])  # in U_perp
                assert np.linalg.norm(F(cg + delta) - F(cg) - delta) > 1e-3
        # the numeric A agrees with the symbolic family: A U = U, A U_perp arbitrary
        assert np.allclose(A @ U, U, atol=1e-10)


def test_symbolic_basis_rank_rule():
    """One rank rule: a direction counts when its singular value exceeds SUBSPACE_RTOL times
    max(s_max, max ||c_g||), so noise between nearly coincident centroids stays out."""
    rng = np.random.default_rng(4)
    base = np.zeros((3, 4))
    base[1, 0] = 1.0
    for size, counted in ((1e-6, True), (1e-10, False)):
        C = base.copy()
        C[2, 1] = size  # a second direction of this size
        assert ec.symbolic_basis(C).shape == (4, 2 if counted else 1)
    # the same second direction next to a large common offset: relative to ||c_g|| it is noise
    C = base + 1e3 * rng.standard_normal(4)
    C[2, 1] += 1e-6
    assert ec.symbolic_basis(C).shape == (4, 1)
    assert ec.symbolic_basis(C, rtol=0).shape[1] == 2
    U, U_perp = ec.symbolic_subspace(C)
    assert U.shape == (4, 1) and U_perp.shape == (4, 3)
    with pytest.raises(ValueError, match="rtol"):
        ec.symbolic_basis(C, rtol=-1)


def test_affine_map_fixing_accepts_seed_and_is_reproducible():
    C = random_centroids(3, 4, seed=0)
    A1, b1 = ec.affine_map_fixing(C, 5)
    A2, b2 = ec.affine_map_fixing(C, np.random.default_rng(5))
    assert np.array_equal(A1, A2) and np.array_equal(b1, b2)


# -- the state-dependent contrast and C2 ---------------------------------------------------------

def test_state_dependent_contrast_holds():
    out = ec.derive_state_dependent_contrast()
    assert out["holds"]
    for key in ("fixed", "swaps", "fixed_aa", "derivative", "derivative_aa", "bound",
                "state_dependent", "affine_forced", "elman_fixed", "c2_holds"):
        assert out[key], key
    assert 0 < out["J_value_c_half"] < 1


@pytest.mark.parametrize("c", [0.05, 0.3, 0.5, 0.9, 0.999])
def test_tanh_contrast_numeric(c):
    w, b = ec.tanh_fixed_point_weights(-c, c)
    assert b == pytest.approx(0.0, abs=1e-15)
    assert w == pytest.approx(math.atanh(c) / c, rel=1e-12)
    step_e = lambda x: ec.tanh_step(x, w, b)  # noqa: E731
    step_aa = lambda x: ec.tanh_step(ec.tanh_step(x, -w), -w)  # noqa: E731
    eps = 1e-6
    for fp in (-c, c):
        assert step_e(fp) == pytest.approx(fp, abs=1e-12)
        assert ec.tanh_step(fp, -w) == pytest.approx(-fp, abs=1e-12)  # the parity swap
        assert step_aa(fp) == pytest.approx(fp, abs=1e-12)
        J = (step_e(fp + eps) - step_e(fp - eps)) / (2 * eps)
        J_aa = (step_aa(fp + eps) - step_aa(fp - eps)) / (2 * eps)
        J_formula = (1 - c ** 2) * math.atanh(c) / c
        assert J == pytest.approx(J_formula, rel=1e-6) and 0 < J < 1
        assert J_aa == pytest.approx(J_formula ** 2, rel=1e-6) and abs(J_aa) < 1
    # the contraction shows up: a perturbation along U shrinks under repeated steps
    x = c + 0.01
    for _ in range(50):
        x = step_e(x)
    assert abs(x - c) < 0.01 * J_formula ** 40 + 1e-12


def test_tanh_contrast_symbolic_equals_numeric():
    out = ec.derive_state_dependent_contrast()
    for cv in (0.2, 0.7):
        sym = ec.evaluate(out["J"], {ec.c: cv})
        assert sym == pytest.approx((1 - cv ** 2) * math.atanh(cv) / cv, rel=1e-12)
    w_sym = ec.evaluate(out["elman_w"], {sp.Symbol("c_0", real=True): -0.3,
                                         sp.Symbol("c_1", real=True): 0.6})
    assert w_sym == pytest.approx(ec.tanh_fixed_point_weights(-0.3, 0.6)[0], rel=1e-12)


def test_c2_corner_case_numeric():
    rng = np.random.default_rng(3)
    c0, c1 = rng.standard_normal((2, 4))
    F = lambda x: -x + (c0 + c1)  # noqa: E731
    assert np.allclose(F(c0), c1) and np.allclose(F(c1), c0)
    x = rng.standard_normal(4)
    assert np.allclose(F(F(x)), x)
    delta = 0.1 * (c1 - c0)  # an error along U is neither damped nor amplified
    assert np.linalg.norm(F(F(c0 + delta)) - c0) == pytest.approx(np.linalg.norm(delta))


# -- Corollary 1 ----------------------------------------------------------------------------------

def test_corollary1_holds():
    out = ec.derive_corollary1()
    assert out["holds"]
    for key in ("base", "step", "constant_ok", "block", "invariant_unsquared",
                "invariant_squared", "conventions_agree", "paper_matches_unsquared"):
        assert out[key], key
    assert out["paper_squared_reading_scales_by"] == sp.Symbol("lambda", positive=True)


def closed_form_U_coords(out, e0_coords, eta_coords, t_max):
    """Evaluate the symbolic closed form e_U(t) = e_U(0) + sum_{j<t} eta_j per U coordinate."""
    r = e0_coords.shape[0]
    res = np.empty((t_max + 1, r))
    for t_ in range(t_max + 1):
        for k in range(r):
            values = {ec.t: t_, ec.e0: e0_coords[k],
                      **{ec.eta[j_]: eta_coords[j_, k] for j_ in range(t_max)}}
            res[t_, k] = ec.evaluate(out["closed_form"], values)
    return res


def test_corollary1_closed_form_equals_simulation():
    out = ec.derive_corollary1()
    rng = np.random.default_rng(1)
    C = random_centroids(3, 5, seed=7)
    A, b = ec.affine_map_fixing(C, rng)
    U, U_perp = ec.symbolic_subspace(C)
    steps = 12
    e0_vec = 0.05 * rng.standard_normal(5)  # has a U_perp part that leaks into U
    eps = 0.01 * rng.standard_normal((steps, 5))  # the residual, not confined to U
    norms, errors = ec.simulate_drift(A, b, C[1], eps, steps, U=U, e0=e0_vec,
                                      return_errors=True)
    # eta_t as Corollary 1 defines it: the whole U-increment, leakage B_UP e_perp plus eps_U
    h = C[1] + e0_vec
    e_perp = [U_perp @ U_perp.T @ (h - C[1])]
    for k in range(steps):
        h = A @ h + b + eps[k]
        e_perp.append(U_perp @ U_perp.T @ (h - C[1]))
    eta_vec = np.array([U @ U.T @ (A @ e_perp[k] + eps[k]) for k in range(steps)])
    sym = closed_form_U_coords(out, U.T @ e0_vec, eta_vec @ U, steps)  # (steps + 1, r)
    assert np.allclose(sym @ U.T, errors, atol=1e-12)
    assert np.allclose(np.linalg.norm(sym, axis=1), norms, atol=1e-12)


def test_constant_drift_is_linear_in_t():
    out = ec.derive_corollary1()
    rng = np.random.default_rng(2)
    C = random_centroids(4, 6, seed=2)
    A, b = ec.affine_map_fixing(C, rng)
    U, _ = ec.symbolic_subspace(C)
    eta_bar = U @ (0.02 * rng.standard_normal(U.shape[1]))  # drift inside U
    norms, errors = ec.simulate_drift(A, b, C[0], eta_bar, 40, U=U, return_errors=True)
    ts = np.arange(41)
    assert np.allclose(errors, ts[:, None] * eta_bar[None, :], atol=1e-12)
    assert np.allclose(norms, ts * np.linalg.norm(eta_bar), atol=1e-12)
    coord = (U.T @ eta_bar)[0]
    sym = [ec.evaluate(out["constant_drift"], {ec.t: t_, ec.e0: 0.0, ec.eta_bar: coord})
           for t_ in ts]
    assert np.allclose(sym, (errors @ U)[:, 0], atol=1e-12)


@pytest.mark.parametrize("convention", ["unsquared", "squared"])
@pytest.mark.parametrize("seed, tau, with_e0", [(0, 0.5, False), (1, 0.5, True),
                                                (2, 0.25, False), (3, 1.0, True)])
def test_predicted_T_cross_matches_simulation(convention, seed, tau, with_e0):
    rng = np.random.default_rng(seed)
    n_g, d = 4, 6
    C = random_centroids(n_g, d, seed=seed + 100)
    A, b = ec.affine_map_fixing(C, rng, perp_scale=0.1)  # errors off U stay small
    U, _ = ec.symbolic_subspace(C)
    W = rng.standard_normal((3, d))  # readout
    sep = min(np.linalg.norm(W @ (C[g] - C[k])) for g in range(n_g) for k in range(g))
    M = sep if convention == "unsquared" else sep ** 2
    eta_bar = U @ (0.01 * rng.standard_normal(U.shape[1]))
    e0_vec = 3.0 * eta_bar if with_e0 else None  # W e_U(0) along W eta_bar
    e0_W = 3.0 * np.linalg.norm(W @ eta_bar) if with_e0 else 0.0
    predicted = ec.predicted_T_cross(M, np.linalg.norm(W @ eta_bar), tau=tau, e0=e0_W,
                                     convention=convention)
    assert 10 < predicted < 5000
    norms = ec.simulate_drift(A, b, C[2], eta_bar, int(predicted) + 20, U=U, W=W, e0=e0_vec)
    assert norms[0] == pytest.approx(e0_W, abs=1e-12)
    if convention == "unsquared":
        measured = ec.crossing_time(norms, tau * M)
    else:
        measured = ec.crossing_time(norms ** 2 / M, tau)  # q(t) = ||W e_U||^2 / M_sq
    assert measured is not None
    assert abs(measured - predicted) <= 1
    assert measured == math.ceil(predicted - 1e-9)
    # the symbolic formula gives the same number
    out = ec.derive_corollary1()
    key = "T_cross_unsquared" if convention == "unsquared" else "T_cross_squared"
    sym_M = ec.M if convention == "unsquared" else ec.M_sq
    sym = ec.evaluate(out[key], {sym_M: M, ec.tau: tau, ec.e0_W: e0_W,
                                 ec.eta_W: np.linalg.norm(W @ eta_bar)})
    assert sym == pytest.approx(predicted, rel=1e-12)


def test_predicted_T_cross_edge_cases():
    assert ec.predicted_T_cross(2.0, 0.1) == pytest.approx(10.0)  # tau M / ||W eta||
    assert ec.predicted_T_cross(4.0, 0.1, convention="squared") == pytest.approx(
        math.sqrt(2.0) / 0.1)
    assert ec.predicted_T_cross(2.0, 0.0) == math.inf
    assert ec.predicted_T_cross(2.0, 0.1, e0=1.5) == 0.0  # already past the threshold
    assert ec.crossing_time([0.0, 0.1, 0.2], 1.0) is None
    assert ec.crossing_time([0.0, 0.1, 0.2], 0.1) == 1


# -- bad input ------------------------------------------------------------------------------------

def test_corollary1_fit_recovers_a_constructed_drift():
    """sqrt(R) = a + b t exactly: the fit returns a, b, the median M, and the crossing of
    (a + b t)^2 = tau M, which is predicted_T_cross (squared) with e0 = a."""
    a, b, M, tau = 0.05, 0.01, 4.0, 0.5
    t = np.arange(1, 301)
    R = (a + b * t) ** 2
    M_curve = np.full(300, M)
    M_curve[:5] = 1e3  # outside the window: not seen
    fit = ec.corollary1_fit(R, M_curve, tau, window=(10, 120))
    assert fit["drift"] == pytest.approx(b) and fit["offset"] == pytest.approx(a)
    assert fit["M"] == M
    assert fit["T_pred"] == pytest.approx(ec.predicted_T_cross(M, b, tau, e0=a,
                                                               convention="squared"))
    assert fit["T_pred"] == pytest.approx((np.sqrt(tau * M) - a) / b)
    # the points: window, finite R and M, M > 0, and keep
    R_gaps = R.copy()
    R_gaps[20:200] = np.nan
    M_gaps = M_curve.copy()
    M_gaps[12] = 0.0
    assert ec.corollary1_fit(R_gaps, M_gaps, tau, (10, 120))["drift"] == pytest.approx(b)
    assert ec.corollary1_fit(R_gaps, M_gaps, tau, (10, 120),
                             keep=np.arange(300) < 11) is None  # t = 10, 11: two points
    assert ec.corollary1_fit(R, M_curve, tau, (298, 400)) is not None  # hi clipped to L
    # no growth: no crossing foreseen; a negative fitted offset is allowed
    assert ec.corollary1_fit(np.full(200, 0.01), np.ones(200), tau)["T_pred"] is None
    neg = ec.corollary1_fit((0.01 * t - 0.05) ** 2, np.ones(300), tau, (10, 120))
    assert neg["offset"] == pytest.approx(-0.05)
    assert neg["T_pred"] == pytest.approx((np.sqrt(tau) + 0.05) / 0.01)


def test_corollary1_fit_on_a_curve_stored_at_some_times():
    """A curve kept at the records' times (dense, then log-spaced) with its times gives the
    fit of the full curve on those points; without them its positions would be misread."""
    from sst_core.store.codec import curve_times

    t = np.arange(1, 1001)
    R = (0.05 + 0.01 * t) ** 2 * (1 + 0.05 * np.sin(t))  # not exactly linear: points matter
    M = np.full(1000, 4.0)
    ts = curve_times(1000)
    keep = np.isin(t, ts)
    full = ec.corollary1_fit(R, M, 0.5, (10, 400), keep=keep)
    stored = ec.corollary1_fit(R[ts - 1], M[ts - 1], 0.5, (10, 400), t=ts)
    for k in ("drift", "offset", "T_pred", "M"):
        assert stored[k] == pytest.approx(full[k], rel=1e-12), k
    assert ec.corollary1_fit(R[ts - 1], M[ts - 1], 0.5, (10, 400))["drift"] != \
        pytest.approx(full["drift"], rel=1e-3)
    with pytest.raises(ValueError, match="one shape"):
        ec.corollary1_fit(R, M, 0.5, t=ts)


def test_bad_input_errors():
    with pytest.raises(ValueError, match="'sq'.*unsquared, squared"):
        ec.predicted_T_cross(1.0, 0.1, convention="sq")
    for bad_tau in (0, -0.5):
        with pytest.raises(ValueError, match=f"tau={bad_tau}.*> 0"):
            ec.predicted_T_cross(1.0, 0.1, tau=bad_tau)
    with pytest.raises(ValueError, match="M=0.*> 0"):
        ec.predicted_T_cross(0, 0.1)
    with pytest.raises(ValueError, match="eta_bar_W_norm=-1"):
        ec.predicted_T_cross(1.0, -1)
    for fn in (lambda: ec.derive_theorem1_general(3, 1),
               lambda: ec.derive_theorem1_instance(3, 1),
               lambda: ec.affine_map_fixing(np.zeros((1, 3)), 0),
               lambda: ec.symbolic_subspace(np.zeros((1, 3)))):
        with pytest.raises(ValueError, match="n_g=1.*n_g >= 2"):
            fn()
    with pytest.raises(ValueError, match="n_g=5 with d=3.*n_g <= d \\+ 1"):
        ec.derive_theorem1_general(3, 5)
    with pytest.raises(ValueError, match="d=0.*positive integer"):
        ec.derive_theorem1_instance(0, 2)
    with pytest.raises(ValueError, match=r"eta has shape \(4,\); allowed: \(3,\) or \(2, 3\)"):
        ec.simulate_drift(np.eye(3), np.zeros(3), np.zeros(3), np.zeros(4), 2, U=np.eye(3))
    with pytest.raises(ValueError, match="steps=-1"):
        ec.simulate_drift(np.eye(3), np.zeros(3), np.zeros(3), np.zeros(3), -1, U=np.eye(3))
    with pytest.raises(ValueError, match="c1=1.0.*\\(-1, 1\\)"):
        ec.tanh_fixed_point_weights(0.2, 1.0)
    with pytest.raises(ValueError, match="must differ"):
        ec.tanh_fixed_point_weights(0.2, 0.2)
