"""Paper 2's memory function, its sum rule, the readout gradient and the S4 = S4D claim,
each checked against an independent computation (100-digit mpmath, simulation, autograd,
SymPy)."""
import numpy as np
import pytest
import torch

from sst_core.experiments import runs as experiments_runs
from sst_core.theory import memory as mf
from sst_core.theory import memory_sym as ms


def near_circle_spectrum():
    theta = np.linspace(0.002, 0.02, 16)  # clustered angles, |mu| = 0.999
    mu = 0.999 * np.exp(1j * theta)
    return np.concatenate([mu, mu.conj()])


# -- accuracy against a 100-digit direct computation -----------------------------------------

@pytest.mark.parametrize("name, mu, T", [
    ("S4D-Inv N=64 dt=1e-3", mf.spectrum("inv", 64, 1e-3), 1024),  # condition number ~1e81
    ("S4D-Lin N=32 dt=1e-3", mf.spectrum("lin", 32, 1e-3), 1024),
    ("S4D-Real N=64 dt=1e-3", mf.spectrum("real", 64, 1e-3), 4096),  # 32 distinct real
    ("|mu|=0.999 N=32", near_circle_spectrum(), 1024),
])
def test_memory_function_against_100_digits(name, mu, T):
    taus = [0, 1, 10, 100, T // 2, T - 2, T - 1]
    ref = mf.memory_function_reference(mu, T, taus, dps=100)
    got = mf.memory_function(mu, T, taus)
    assert np.max(np.abs(got - ref)) <= 1e-8, name
    assert np.max(np.abs(got - ref)) <= 1e-12, name  # what the method actually achieves


def split_real_spectrum(N, dt, eps, seed=0):
    """S4D-Real after training: each real eigenvalue has picked up a small imaginary part,
    so its conjugate is a distinct, nearly coincident eigenvalue (rank N, not N/2)."""
    Lambda = mf.init_Lambda("real", N)
    rng = np.random.default_rng(seed)
    mu, _ = mf.discretize(mf.with_conjugates(Lambda + 1j * eps * rng.standard_normal(N // 2)),
                          dt, "zoh")
    return mu


def test_memory_of_a_split_real_spectrum_converges_and_is_exact():
    # dt = 0.1: nodes down to exp(-3.2), M[0] within 1e-70 of 1. The projector columns must
    # then be evaluated with as many bits as the precision asks for; with a fixed 100 bits the
    # sum rule failed at every precision (the learned S4D-Real runs of LRA at N=64, T=1024)
    mu = split_real_spectrum(64, 0.1, 1e-3)
    T = 1024
    info = mf.memory_function_info(mu, T)
    assert info["rank"] == 64 and info["dps"] <= 600
    assert info["memory"].sum() == pytest.approx(64, abs=1e-9)
    taus = [0, 1, 5, 10, 100, 512, T - 1]
    ref = mf.memory_function_reference(mu, T, taus, dps=400)
    assert np.max(np.abs(info["memory"][taus] - ref)) <= 1e-12
    # the limit of a vanishing split is continuous (confluent), not the merged spectrum
    tiny_split = mf.memory_function(split_real_spectrum(64, 0.1, 1e-7), T, taus)
    assert np.max(np.abs(tiny_split - info["memory"][taus])) <= 1e-6
    merged = mf.memory_function(split_real_spectrum(64, 0.1, 0.0), T, taus)
    assert np.max(np.abs(merged - info["memory"][taus])) > 0.1


def test_float64_svd_route_fails_where_ours_does_not():
    mu = mf.spectrum("lin", 64, 1e-3)
    M_svd, rank = mf.memory_function_svd(mu, 256)
    M = mf.memory_function(mu, 256)
    assert rank < 63 and abs(M.sum() - 63) < 1e-9
    assert np.max(np.abs(M_svd - M)) > 1e-3


def test_gram_closed_form_and_projector_small_case():
    mu = mf.spectrum("inv", 6, 0.1)
    T = 40
    V = mf.vandermonde(mu, T)  # (N, T)
    P = V.conj().T @ np.linalg.solve(V @ V.conj().T, V)
    assert np.allclose(np.diag(P).real, mf.memory_function(mu, T), atol=1e-12)
    col = mf.projection_column(mu, T, 17)
    assert np.allclose(col, P[:, 17].real, atol=1e-12)
    assert col[17] == pytest.approx(mf.memory_function(mu, T, 17), abs=1e-12)
    # the real form has the same row space, hence the same projector
    Vr = mf.vandermonde(mu, T, real=True)
    Pr = Vr.T @ np.linalg.solve(Vr @ Vr.T, Vr)
    assert np.allclose(Pr, P.real, atol=1e-10)


def test_degenerate_cases():
    assert np.allclose(mf.memory_function([0.5, 0.3, 0.2], 2), 1.0)  # T <= N: P = I
    assert np.allclose(mf.memory_function([0.0], 4), [1, 0, 0, 0])  # mu = 0: only delay 0
    ref = mf.memory_function_reference([0.0, 0.5], 6, range(6))
    assert np.allclose(mf.memory_function([0.0, 0.5], 6), ref, atol=1e-12)
    assert np.allclose(mf.memory_function([1.0], 5), 0.2)  # marginal mode: 1/T
    complex_system = [0.9 * np.exp(0.3j), 0.5]  # not conjugate-closed: complex readout
    taus = [0, 3, 19]
    assert np.allclose(mf.memory_function(complex_system, 20, taus),
                       mf.memory_function_reference(complex_system, 20, taus), atol=1e-12)
    assert isinstance(mf.memory_function([0.5], 3, 1), float)


# -- sum rule: capacity = rank <= N ------------------------------------------------------------

def test_sum_rule_equals_rank():
    # distinct eigenvalues and T >= N: equality at finite T
    for kind in ("inv", "random"):
        mu = mf.spectrum(kind, 16, 0.01, seed=3)
        assert mf.capacity(mu, 64) == pytest.approx(16, abs=1e-9)
    # S4D-Lin's n=0 mode is real: its conjugate duplicates it
    mu_lin = mf.spectrum("lin", 64, 0.01)
    assert mf.vandermonde_rank(mu_lin, 256) == 63
    assert mf.capacity(mu_lin, 256) == pytest.approx(63, abs=1e-9)
    # S4D-Real stored as N/2 conjugate "pairs": rank N/2
    assert mf.capacity(mf.spectrum("real", 16, 0.01), 64) == pytest.approx(8, abs=1e-9)
    # aliasing: S4D-Lin at dt = 0.1 has only 20 distinct eigenvalues
    mu_alias = mf.spectrum("lin", 64, 0.1)
    assert mf.vandermonde_rank(mu_alias, 256) == 20
    assert mf.capacity(mu_alias, 256) == pytest.approx(20, abs=1e-9)
    # T < N: rank T
    assert mf.capacity(mf.spectrum("inv", 16, 0.01), 10) == pytest.approx(10)
    assert mf.memory_capacity is mf.capacity


def test_memory_function_agrees_with_white_noise_simulation():
    mu = mf.spectrum("inv", 6, 0.05)
    T = 64
    taus = [0, 1, 5, 20, 63]
    kernel = mf.vandermonde(mu, T, real=True).T  # (T, N): real state of the S4D, B = 1
    M_sim = mf.memory_from_simulation(kernel, taus, 200_000, seed=0)
    assert np.max(np.abs(M_sim - mf.memory_function(mu, T, taus))) < 0.01


# -- initialisations and discretisation -----------------------------------------------------------

def test_init_formulas():
    N, n = 8, np.arange(4)
    assert np.allclose(mf.init_Lambda("inv", N), -0.5 + 1j * (N / np.pi) * (N / (2 * n + 1) - 1))
    assert np.allclose(mf.init_Lambda("lin", N), -0.5 + 1j * np.pi * n)
    assert np.allclose(mf.init_Lambda("real", N), -(n + 1.0))
    assert np.allclose(mf.init_Lambda("step", N), -0.5 * (n + 1) + 1j * np.pi * n)
    a = mf.init_Lambda("random", N, seed=1, dt=0.01)
    assert np.array_equal(a, mf.init_Lambda("random", N, seed=1, dt=0.01))
    assert not np.array_equal(a, mf.init_Lambda("random", N, seed=2, dt=0.01))
    mu, _ = mf.discretize(a, 0.01)
    assert np.all(np.abs(mu) < 1) and np.all(mu.imag >= 0)  # upper half of the unit disk
    full = mf.with_conjugates(a)
    assert full.shape == (N,) and np.allclose(full[4:], a.conj())


def test_discretize():
    Lambda = np.array([-0.5 + 2j, -1.0 + 0j])
    mu, B_bar = mf.discretize(Lambda, 0.1)
    assert np.allclose(mu, np.exp(0.1 * Lambda))
    assert np.allclose(B_bar, (np.exp(0.1 * Lambda) - 1) / Lambda)
    mu_b, B_b = mf.discretize(Lambda, 0.1, method="bilinear")
    assert np.allclose(mu_b, (1 + 0.05 * Lambda) / (1 - 0.05 * Lambda))
    assert np.allclose(B_b, 0.1 / (1 - 0.05 * Lambda))
    # dense discretisation has the diagonal one's eigenvalues
    A, B = mf.dense_ssm(Lambda[:1], seed=0)
    A_bar, _ = mf.discretize_dense(A, B, 0.1)
    assert np.allclose(np.sort_complex(np.linalg.eigvals(A_bar)),
                       np.sort_complex(mf.with_conjugates(mu[:1])))


def test_hippo_legs_spectra():
    A, B = mf.hippo_legs(8)
    assert np.allclose(np.sort(np.linalg.eigvals(A).real), -np.arange(8, 0, -1))
    assert np.allclose(B, np.sqrt(2 * np.arange(8) + 1))
    lam = mf.legs_normal_spectrum(64)
    assert np.allclose(lam.real, -0.5)
    assert np.allclose(lam.imag[:3], [1303.3, 433.0, 258.2], atol=0.05)
    assert np.allclose(lam.imag[-3:], [1.703, 0.906, 0.264], atol=0.001)


# -- only the eigenvalues matter -------------------------------------------------------------------

def test_memory_depends_only_on_eigenvalues():
    Lambda = mf.init_Lambda("inv", 8)
    dt, T = 0.05, 128
    mu, _ = mf.discretize(mf.with_conjugates(Lambda), dt)
    taus = [0, 3, 17, 60, 127]
    target = mf.memory_function(mu, T, taus)
    for seed in range(3):  # random invertible Q and random B
        A, B = mf.dense_ssm(Lambda, seed=seed)
        A_bar, B_bar = mf.discretize_dense(A, B, dt)
        kernel = mf.impulse_response(A_bar, B_bar, T)
        assert np.allclose(mf.memory_function_gramian(kernel, taus), target, atol=1e-8)
        assert np.allclose(mf.memory_function(np.linalg.eigvals(A_bar), T, taus, tol=1e-9),
                           target, atol=1e-8)
    # a mode the input does not drive is lost: B with a zero coordinate in the eigenbasis
    half = mu[:4]
    z = half[None, :] ** np.arange(T)[:, None] * np.array([1, 1, 1, 0])  # (T, N/2)
    kernel = np.concatenate([z.real, z.imag], axis=1)[:, [0, 1, 2, 4, 5, 6]]
    lost = mf.memory_function(np.concatenate([half[:3], half[:3].conj()]), T, taus)
    assert np.allclose(mf.memory_function_gramian(kernel, taus), lost, atol=1e-8)


# -- the readout gradient ---------------------------------------------------------------------------

def _sample(mu, T, B, n, seed):
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(n + T - 1)
    V = mf.vandermonde(mu, T, real=True)  # (N, T)
    X = B * mf.simulate_states(V.T, u)[T - 1:]  # (n, N)
    t = np.arange(T - 1, u.size)
    U_hat = np.stack([u[t - k] for k in range(T)], axis=1)  # (n, T)
    return V, X, U_hat


def test_readout_gradient_against_autograd():
    mu = mf.spectrum("inv", 4, 0.05)
    T, B = 32, 0.7
    rng = np.random.default_rng(5)
    alpha, theta = rng.standard_normal(T), rng.standard_normal(4)
    errs = []
    for n in (2_000, 200_000):
        V, X, U_hat = _sample(mu, T, B, n, seed=n)
        y = U_hat @ alpha
        th = torch.tensor(theta, requires_grad=True)
        loss = torch.mean((torch.tensor(X) @ th - torch.tensor(y)) ** 2)
        (g_auto,) = torch.autograd.grad(loss, th)
        g_auto = g_auto.numpy()
        # exact with the sample's own input covariance
        Sigma = U_hat.T @ U_hat / n
        g_exact = 2 * B * V @ Sigma @ (B * V.T @ theta - alpha)
        assert np.allclose(g_auto, g_exact, rtol=1e-9, atol=1e-9)
        # the white-noise formula: <u^2> = sample variance of u
        g_formula = mf.readout_gradient(theta, alpha, mu, B=B, u_var=1.0)
        errs.append(np.linalg.norm(g_auto - g_formula) / np.linalg.norm(g_formula))
    assert errs[1] < 0.05 and errs[1] < errs[0] / 4  # shrinks like 1/sqrt(n)


def test_readout_gradient_projection_form_and_optimum():
    mu = mf.spectrum("inv", 6, 0.1)
    T, B = 48, 1.3
    rng = np.random.default_rng(0)
    alpha, theta = rng.standard_normal(T), rng.standard_normal(6)
    V = mf.vandermonde(mu, T, real=True)
    P = V.T @ np.linalg.solve(V @ V.T, V)
    G_proj = 2 * 0.5 * B * V @ (B * V.T @ theta - P @ alpha)
    assert np.allclose(mf.readout_gradient(theta, alpha, mu, B=B, u_var=0.5), G_proj)
    theta_star = mf.optimal_readout(alpha, mu, B=B)
    assert np.allclose(theta_star, np.linalg.solve(V @ V.T, V @ alpha) / B)
    assert np.allclose(mf.readout_gradient(theta_star, alpha, mu, B=B), 0, atol=1e-9)
    # single-delay teacher: the best readout explains exactly M[tau0] of its variance
    e = np.zeros(T)
    e[20] = 1.0
    explained = 1 - mf.population_loss(mf.optimal_readout(e, mu), e, mu)
    assert explained == pytest.approx(mf.memory_function(mu, T, 20), abs=1e-10)
    with pytest.raises(ValueError, match=r"\(5,\)"):
        mf.readout_gradient(np.zeros(5), alpha, mu)


# -- SymPy derivations and their numeric twins ----------------------------------------------------

VALUES = {ms.mu1: 0.9, ms.mu2: 0.5}


def test_sympy_memory_function_and_numeric_twin():
    d = ms.derive_memory_function()
    assert d["holds"]
    sym = [ms.evaluate(M, VALUES) for M in d["M"]]
    assert np.allclose(sym, mf.memory_function([0.9, 0.5], 3), atol=1e-13)


def test_sympy_sum_rule_and_numeric_twin():
    d = ms.derive_sum_rule()
    assert d["sum_equal_rank"] and d["sum_deficient_equal_rank"] and d["idempotent"]
    assert d["gram_holds"]
    assert mf.capacity([0.9, 0.5], 3) == pytest.approx(float(d["sum"]), abs=1e-12)
    assert mf.capacity([0.9, 0.9], 3) == pytest.approx(float(d["sum_deficient"]), abs=1e-12)


def test_sympy_readout_gradient_and_numeric_twin():
    d = ms.derive_readout_gradient()
    assert d["holds"] and d["VP_equals_V"] and d["zero_at_theta_star"]
    theta, alpha = np.array([0.3, -1.2]), np.array([0.5, 0.0, -2.0])
    values = {**VALUES, ms.sigma2: 0.8, ms.B: 1.5,
              **dict(zip(d["theta"], theta)), **dict(zip(d["alpha"], alpha))}
    sym = ms.evaluate(d["G_projection"], values).ravel()
    num = mf.readout_gradient(theta, alpha, [0.9, 0.5], B=1.5, u_var=0.8)
    assert np.allclose(sym, num, atol=1e-12)
    P_diag = [ms.evaluate(d["weights"][t][t], VALUES) for t in range(3)]
    assert np.allclose(P_diag, mf.memory_function([0.9, 0.5], 3), atol=1e-13)


def test_sympy_eigenvalue_invariance_and_numeric_twin():
    d = ms.derive_eigenvalue_invariance()
    assert d["holds"] and d["K_factorised"]
    q = dict(zip(d["Q"], [1.0, 2.0, -0.5, 3.0]))
    beta = dict(zip(d["beta"], [0.7, -1.1]))
    sym = [ms.evaluate(M, {**VALUES, **q, **beta}) for M in d["M_dense"]]
    assert np.allclose(sym, mf.memory_function([0.9, 0.5], 3), atol=1e-12)


# -- bad input --------------------------------------------------------------------------------------

def test_bad_input_errors():
    with pytest.raises(ValueError, match="empty spectrum"):
        mf.memory_function([], 10)
    for T in (0, -3):
        with pytest.raises(ValueError, match=f"T={T}"):
            mf.memory_function([0.5], T)
    with pytest.raises(ValueError, match="T=2.5"):
        mf.memory_function([0.5], 2.5)
    with pytest.raises(ValueError, match=r"\|mu\|=1.5.*stable"):
        mf.memory_function([1.5, 0.2], 10)
    with pytest.raises(ValueError, match="'foo'.*inv, lin, real, random, step"):
        mf.init_Lambda("foo", 4)
    with pytest.raises(ValueError, match="'euler'.*zoh, bilinear"):
        mf.discretize(np.array([-1.0]), 0.1, method="euler")
    with pytest.raises(ValueError, match="'euler'.*zoh, bilinear"):
        mf.discretize_dense(np.eye(2), np.ones(2), 0.1, method="euler")
    with pytest.raises(ValueError, match="N=5"):
        mf.init_Lambda("inv", 5)
    with pytest.raises(ValueError, match="needs a seed"):
        mf.init_Lambda("random", 4)
    with pytest.raises(ValueError, match="dt=0.0"):
        mf.discretize(np.array([-1.0]), 0.0)
    with pytest.raises(ValueError, match="delay 10 .*0..9"):
        mf.memory_function([0.5], 10, [10])
    with pytest.raises(ValueError, match="not closed under conjugation"):
        mf.vandermonde([0.5 + 0.1j], 5, real=True)
    with pytest.raises(ValueError, match="experiment 'nope'"):
        experiments_runs.run(type("C", (), {"experiment": "nope"})())


# -- the memory function read with noise -----------------------------------------------------

def _pairs(kind: str, N: int, dt: float):
    mu, gain = mf.discretize(mf.with_conjugates(mf.init_Lambda(kind, N)), dt)
    return mu, gain


def test_noisy_memory_tends_to_the_exact_one_and_ignores_gains_there():
    mu, gain = _pairs("lin", 8, 0.5)  # well conditioned: 8 modes, 30 delays
    exact = mf.memory_function(mu, 30)
    assert np.allclose(mf.memory_function_noisy(mu, 30, noise=1e-12), exact, atol=1e-6)
    assert np.allclose(mf.memory_function_noisy(mu, 30, noise=1e-12, gain=gain), exact,
                       atol=1e-6)
    # a real spectrum, stored with its conjugates, is merged like the exact one
    real_mu, real_gain = _pairs("real", 4, 0.5)
    assert np.allclose(mf.memory_function_noisy(real_mu, 12, noise=1e-12, gain=real_gain),
                       mf.memory_function(real_mu, 12), atol=1e-6)


def test_noisy_memory_falls_with_the_noise_and_loses_ill_conditioned_memory():
    mu, gain = _pairs("real", 64, 0.1)  # 32 real modes, 27 delays: V V^H very ill-conditioned
    levels = [1e-10, 1e-8, 1e-6, 1e-4, 1e-2, 1.0]
    M = np.array([mf.memory_function_noisy(mu, 27, noise=d, gain=gain) for d in levels])
    assert np.all(np.diff(M, axis=0) <= 1e-12)  # every delay, monotone in the noise
    assert mf.memory_function(mu, 27, 10) > 0.99  # exact arithmetic remembers delay 10 ...
    assert M[1, 10] < 0.5  # ... a noise floor of 1e-8 of the state variance does not
    well, g_well = _pairs("lin", 64, 0.1)
    assert mf.memory_function(well, 27, 10) > 0.99
    assert mf.memory_function_noisy(well, 27, 10, noise=1e-8, gain=g_well) > 0.99


def test_noisy_memory_at_large_noise_is_signal_over_noise():
    mu, gain = _pairs("inv", 6, 0.2)
    W = mf.vandermonde(mu, 20, real=True) * 1.0  # gains of 1: the real form's rows
    sigma2 = 1e6 * np.trace(W @ W.T) / W.shape[0]
    expect = np.sum(W ** 2, axis=0) / sigma2  # (G + s I)^-1 ~ I / s
    got = mf.memory_function_noisy(mu, 20, noise=1e6)
    assert np.allclose(got, expect, rtol=1e-5)


def test_noisy_memory_agrees_with_a_noisy_simulation():
    """Numeric twin: white input through the real state, white noise of the stated
    variance added, the best least-squares readout of u_{t-tau}."""
    mu, gain = _pairs("step", 6, 0.3)
    T, noise, taus = 15, 1e-2, [0, 3, 8, 14]
    lam, z = mu[:3], gain[:3]  # the members with Im > 0 (step: all complex but n = 0)
    k = np.arange(T)
    rows = []
    for m, g in zip(lam, z):
        p = g * m ** k
        rows += [p.real] if abs(m.imag) < 1e-12 else [p.real, p.imag]
    W = np.array(rows)  # (n, T)
    rng = np.random.default_rng(0)
    n = 200_000
    u = rng.standard_normal(n + T - 1)
    h = mf.simulate_states(W.T, u)[T - 1:]  # (n, rows)
    sigma2 = noise * np.trace(W @ W.T) / W.shape[0]
    h = h + rng.standard_normal(h.shape) * np.sqrt(sigma2)
    t = np.arange(T - 1, u.size)
    sim = []
    for tau in taus:
        y = u[t - tau]
        w, *_ = np.linalg.lstsq(h, y, rcond=None)
        sim.append(1 - np.mean((y - h @ w) ** 2) / np.mean(y ** 2))
    got = mf.memory_function_noisy(mu, T, taus, noise=noise, gain=gain)
    assert np.allclose(got, sim, atol=0.01)


def test_noisy_memory_of_a_spectrum_that_is_not_conjugate_closed():
    mu = np.array([0.9 * np.exp(0.3j), 0.5, 0.7 * np.exp(-1.1j)])
    M = mf.memory_function_noisy(mu, 10, noise=1e-10)
    assert np.allclose(M, mf.memory_function(mu, 10), atol=1e-6)
    assert mf.memory_function_noisy(mu, 10, 0, noise=0.5) < M[0]


@pytest.mark.parametrize("kw,match", [
    (dict(noise=0.0), r"noise=0.0 must be a number in \[1e-12, 1e6\]"),
    (dict(noise=-1), r"noise=-1 must be"),
    (dict(noise=True), r"noise=True must be"),
    (dict(noise="0.1"), r"noise='0.1' must be"),
    (dict(noise=1e7), r"noise=10000000.0 must be"),
    (dict(noise=0.1, gain=np.ones(3)), r"gain must be .* shape \(4,\), got shape \(3,\)"),
    (dict(noise=0.1, gain=np.zeros(4)), r"gain must be finite, non-zero"),
])
def test_noisy_memory_bad_input(kw, match):
    mu, _ = _pairs("inv", 4, 0.1)
    with pytest.raises(ValueError, match=match):
        mf.memory_function_noisy(mu, 10, **kw)


def test_reference_error_and_legs_comparison():
    """The accuracy check against 100 digits is small; the LegS numbers are those of its
    definition (real eigenvalues -1..-N) and of the memory function computed directly."""
    assert mf.reference_error(("lin", "inv"), 4, 200, 0.001) < 1e-9
    legs = mf.legs_comparison(8, 200, dt=0.01, taus=(10, 100))
    assert legs["real_min"] == pytest.approx(-8) and legs["real_max"] == pytest.approx(-1)
    assert legs["imag_max"] == 0 and legs["eigvec_cond"] > 1
    mu_legs = mf.discretize(-np.arange(1, 9).astype(complex), 0.01)[0]
    assert legs["M_legs"] == pytest.approx(mf.memory_function(mu_legs, 200, [10, 100]).tolist())
    assert legs["M_inv"] == pytest.approx(
        mf.memory_function(mf.spectrum("inv", 8, 0.01), 200, [10, 100]).tolist())
    assert legs["omega_max_legs"] == pytest.approx(mf.legs_normal_spectrum(8).imag.max())
