"""SymPy derivations of the chapter "Memory function and the direction of learning".

Each ``derive_*`` function does one derivation on a small symbolic system (N = 2 modes,
T = 3 delays, real eigenvalues mu_1, mu_2 so that ^H = ^T) and returns its pieces as SymPy
expressions, with ``holds`` saying whether the claimed identity simplified to zero. Each
has a numeric twin: ``evaluate(expr, values)`` substitutes numbers, and the chapter and
``tests/theory`` compare that with ``sst_core.theory.memory``. The complex case is the same
algebra with conjugate transposes.
"""
from __future__ import annotations

from typing import Any, Mapping

import sympy as sp

mu1, mu2 = sp.symbols("mu_1 mu_2", positive=True)
sigma2, B = sp.symbols("sigma^2 B", positive=True)


def vandermonde_sym(mus: tuple = (mu1, mu2), T: int = 3) -> sp.Matrix:
    """V[n, k] = mu_n^k, k = 0..T-1."""
    return sp.Matrix([[m ** k for k in range(T)] for m in mus])  # (N, T)


def projector_sym(V: sp.Matrix) -> tuple[sp.Matrix, Any]:
    """P = V^T (V V^T)^{-1} V as (numerator matrix, denominator): P = Num / det(V V^T),
    Num = V^T adj(V V^T) V. Identities in P then become polynomial ones (fast to check)."""
    G = V * V.T
    return (V.T * G.adjugate() * V).applyfunc(sp.expand), sp.expand(G.det())


def _is_zero(expr: Any) -> bool:
    if isinstance(expr, sp.MatrixBase):
        return all(_is_zero(e) for e in expr)
    return sp.cancel(sp.together(expr)) == 0  # rational functions: cancel is canonical


def derive_memory_function(T: int = 3) -> dict[str, Any]:
    """M[tau] = 1 - min_w <(w^T x_t - u_{t-tau})^2> / <u^2> equals v_tau^T (V V^T)^{-1} v_tau.

    x_t = sum_k v_k u_{t-k} with white noise of variance sigma^2, so <x x^T> = sigma^2 V V^T
    and <x u_{t-tau}> = sigma^2 v_tau. The mean squared error is a quadratic in w; setting
    its gradient to zero gives w* = (V V^T)^{-1} v_tau.
    """
    V = vandermonde_sym(T=T)
    w = sp.Matrix(sp.symbols("w_1 w_2"))
    G = V * V.T
    out: dict[str, Any] = {"V": V, "gram": G, "w": w, "M": [], "M_formula": [], "w_star": []}
    for tau in range(T):
        v = V[:, tau]
        mse = sigma2 * ((w.T * G * w)[0] - 2 * (w.T * v)[0] + 1)
        sol = sp.solve([sp.diff(mse, wi) for wi in w], list(w), dict=True)[0]
        M = sp.factor(sp.cancel(1 - mse.subs(sol) / sigma2))
        out["w_star"].append(sp.Matrix([sol[wi] for wi in w]))
        out["M"].append(M)
        out["M_formula"].append((v.T * G.adjugate() * v)[0] / G.det())
    out["holds"] = all(_is_zero(a - b) for a, b in zip(out["M"], out["M_formula"]))
    return out


def derive_sum_rule(T: int = 3) -> dict[str, Any]:
    """sum_tau M[tau] = tr(V^T (V V^T)^{-1} V) = tr((V V^T)^{-1} V V^T) = N, and = 1 (the
    rank) when the two eigenvalues coincide; the Gram matrix has the closed form
    (V V^T)_{ij} = (1 - (mu_i mu_j)^T) / (1 - mu_i mu_j)."""
    V = vandermonde_sym(T=T)
    Num, d = projector_sym(V)
    P = Num / d  # (T, T)
    total = sp.cancel(Num.trace() / d)
    Vd = vandermonde_sym((mu1, mu1), T)
    Pd = Vd.T * (Vd * Vd.T).pinv() * Vd  # rank-deficient: pseudo-inverse
    total_deficient = sp.cancel(Pd.trace())
    idempotent = (Num * Num - d * Num).applyfunc(sp.expand) == sp.zeros(T, T)
    k, Ts = sp.symbols("k T", integer=True, nonnegative=True)
    z = sp.Symbol("z", positive=True)
    geometric = sp.summation(z ** k, (k, 0, Ts - 1))
    closed = (1 - z ** Ts) / (1 - z)
    generic = geometric.args[-1].expr if isinstance(geometric, sp.Piecewise) else geometric  # z != 1
    return {"P": P, "sum": total, "sum_equal_rank": total == 2,
            "sum_deficient": total_deficient, "sum_deficient_equal_rank": total_deficient == 1,
            "idempotent": idempotent,
            "gram_geometric": geometric, "gram_closed": closed,
            "gram_holds": _is_zero(generic - closed)}


def derive_readout_gradient(T: int = 3) -> dict[str, Any]:
    """G(y) = dL/dtheta = 2 sigma^2 B V (B V^T theta - P alpha), and theta* = (1/B)(V V^T)^{-1} V alpha.

    The states are X = B U_hat V^T and the teacher y = U_hat alpha, so the sample loss is
    L = (1/n) (B V^T theta - alpha)^T (U_hat^T U_hat) (B V^T theta - alpha). For white noise
    U_hat^T U_hat -> n sigma^2 I. The derivative is taken with a general symmetric
    S = U_hat^T U_hat first and S = n sigma^2 I substituted after.
    """
    V = vandermonde_sym(T=T)
    n = sp.Symbol("n", positive=True)
    theta = sp.Matrix(sp.symbols("theta_1 theta_2"))
    alpha = sp.Matrix(sp.symbols(f"alpha_0:{T}"))
    S = sp.Matrix(T, T, lambda i, j: sp.Symbol(f"S_{min(i, j)}{max(i, j)}"))  # symmetric
    r = B * V.T * theta - alpha  # (T,)
    L = (r.T * S * r)[0] / n
    grad = sp.Matrix([sp.diff(L, t) for t in theta])
    grad_white = sp.expand(grad.subs({S[i, j]: (n * sigma2 if i == j else 0)
                                        for i in range(T) for j in range(T)}))
    Num, d = projector_sym(V)
    P = Num / d  # (T, T)
    G_projection = 2 * sigma2 * B * V * (B * V.T * theta - P * alpha)
    G_plain = 2 * sigma2 * B * V * (B * V.T * theta - alpha)
    adjG = (V * V.T).adjugate()
    theta_star = adjG * V * alpha / (B * d)  # (1/B) (V V^T)^{-1} V alpha
    # the teacher reaches the gradient as P alpha: delay tau' contributes P[tau, tau'] alpha_tau'
    weights = [[sp.factor(sp.cancel(Num[t, s] / d)) for s in range(T)] for t in range(T)]
    # V P = V  <=>  V Num = d V, so G_projection = G_plain
    VP_equals_V = (V * Num - d * V).applyfunc(sp.expand) == sp.zeros(*V.shape)
    at_star = (V * V.T) * adjG * V * alpha - d * V * alpha  # d/(2 sigma^2 B) G(theta*)
    return {"V": V, "theta": theta, "alpha": alpha, "loss": L, "grad_white": grad_white,
            "G_projection": G_projection, "G_plain": G_plain, "theta_star": theta_star,
            "P": P, "weights": weights,
            "holds": VP_equals_V and _is_zero(grad_white - G_plain),
            "VP_equals_V": VP_equals_V,
            "zero_at_theta_star": at_star.applyfunc(sp.expand) == sp.zeros(*at_star.shape)}


def derive_eigenvalue_invariance(T: int = 3) -> dict[str, Any]:
    """M depends only on the eigenvalues: for A_bar = Q diag(mu) Q^{-1} and any B_bar =
    Q diag(beta) 1 (beta_n != 0), the state's impulse response is k_tau = Q diag(beta) v_tau,
    its Gram W = Q diag(beta) V V^T diag(beta) Q^T, and k_tau^T W^{-1} k_tau = v_tau^T (V V^T)^{-1} v_tau."""
    V = vandermonde_sym(T=T)
    q = sp.symbols("q_11 q_12 q_21 q_22")
    beta = sp.symbols("beta_1 beta_2", nonzero=True)
    Q = sp.Matrix(2, 2, q)
    D_beta = sp.diag(*beta)
    A_bar = Q * sp.diag(mu1, mu2) * Q.inv()
    B_bar = Q * D_beta * sp.ones(2, 1)
    K = sp.Matrix.hstack(*[(A_bar ** tau * B_bar).applyfunc(sp.cancel) for tau in range(T)])  # (N, T)
    W = (K * K.T).applyfunc(sp.expand)
    adjW, detW = W.adjugate().applyfunc(sp.expand), sp.expand(W.det())
    G = V * V.T
    adjG, detG = G.adjugate(), sp.expand(G.det())
    M_dense = [(K[:, t].T * adjW * K[:, t])[0] / detW for t in range(T)]
    M_diag = [sp.factor(sp.cancel((V[:, t].T * adjG * V[:, t])[0] / detG)) for t in range(T)]
    # cross-multiplied, the identity is polynomial: k^T adj(W) k det(G) = v^T adj(G) v det(W)
    holds = all(sp.expand((K[:, t].T * adjW * K[:, t])[0] * detG
                          - (V[:, t].T * adjG * V[:, t])[0] * detW) == 0 for t in range(T))
    return {"Q": Q, "beta": beta, "A_bar": A_bar, "B_bar": B_bar, "K": K,
            "K_factorised": (K - Q * D_beta * V).applyfunc(sp.cancel) == sp.zeros(*K.shape),
            "det_W": sp.factor(detW), "M_dense": M_dense, "M_diag": M_diag, "holds": holds}


def evaluate(expr: Any, values: Mapping[Any, float]) -> Any:
    """Numeric value of an expression (or matrix) with symbols replaced by ``values``."""
    if isinstance(expr, sp.MatrixBase):
        import numpy as np

        return np.array(expr.subs(values).evalf(), dtype=float)
    return float(sp.N(expr.subs(values)))
