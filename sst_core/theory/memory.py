"""Memory function of a linear SSM, its Vandermonde projection and the readout gradient.

Paper 2 (Guan, Kubota, Kuniyoshi, Nakajima, arXiv 2510.00563). Conventions, as in
``state-spaces/s4``: the state includes the current input,

    h_t = A_bar h_{t-1} + B_bar u_t   =>   h_t = sum_{tau >= 0} A_bar^tau B_bar u_{t-tau},

so delay 0 is the current input. (The paper writes x_{k+1} = A x_k + B u_k, a one-step
shift of the delay axis that changes nothing else.) The memory function is computed over a
window of T delays (the state started at zero T steps ago, or equivalently the horizon of
the task):

    V[n, k] = mu_n^k, k = 0..T-1                         Vandermonde matrix, (N, T)
    M[tau]  = v_tau^H (V V^H)^{-1} v_tau = P[tau, tau]   P = V^H (V V^H)^{-1} V, (T, T)
    sum_{tau < T} M[tau] = tr P = rank V <= N            memory capacity

How the spectrum is stored
--------------------------
``init_Lambda(kind, N)`` returns the N/2 continuous-time eigenvalues with one member per
conjugate pair (as S4D stores them, with output 2 Re(C h)); ``with_conjugates(Lambda)``
gives the full N-vector ``[Lambda, conj(Lambda)]`` whose discretisation ``mu`` is what the
memory function takes. A real eigenvalue stored this way appears twice (its conjugate is
itself), so S4D-Lin's n=0 mode gives rank N-1 and S4D-Real gives rank N/2: those are the
ranks of the real S4D systems. ``memory_function`` merges eigenvalues closer than ``tol``
before building anything (see ``distinct_eigenvalues``).

Numerics of ``memory_function``
-------------------------------
For many spectra V V^H is so ill-conditioned that float64 gives the wrong rank (S4D-Lin,
real spectra, |mu| close to 1: condition numbers of 1e45 to beyond 1e60 at N=64). The
projector itself is well defined; only the Vandermonde basis is bad. So:

1. the Gram matrix is formed in closed form, G[i, j] = (1 - (mu_i conj mu_j)^T) /
   (1 - mu_i conj mu_j), in mpmath at ``dps`` digits, and Cholesky-factored there. ``dps``
   starts at 60 and is raised until it is at least 1.5 log10(cond) + 30, with cond
   estimated by the squared pivot ratio (a backward-stable solve leaves an error of about
   10^-dps cond^1.5 in the columns below);
2. only two columns of P are needed, P[:, 0] and P[:, T-1] (two solves). They are
   evaluated at all T delays in exact fixed-point integer arithmetic (Python integers,
   vectorised over the eigenvalues with numpy object arrays), because the coefficients
   G^{-1} v are huge and cancel: float64 would lose everything here. The fixed point
   carries as many bits as the working precision (3.33 per digit, at least 100) beyond
   the coefficients' size: where M[0] or M[T-1] is within 1e-70 of 1 (fast-decaying
   eigenvalues, or a real eigenvalue split into a nearly coincident pair), step 3 divides
   sums of that size, and a fixed 100 bits failed the sum rule at every precision;
3. every diagonal entry then follows from a Christoffel-Darboux-type identity. Removing
   the first or the last sample from the window is a rank-one downdate of G, and the
   window [1, T) is the window [0, T-1) shifted by one step, so

       M[tau+1] = M[tau] + |P[tau, T-1]|^2 / (1 - M[T-1]) - |P[tau+1, 0]|^2 / (1 - M[0]).

   The increments are non-negative and add up to M[T-1] and M[0], so
   M[tau] = M[0] (1 - F0(tau)) + M[T-1] F1(tau) with F0, F1 the normalised cumulative
   sums of |P[s, 0]|^2 (s = 1..tau) and |P[s, T-1]|^2 (s < tau): sums of positive
   numbers (1 - F0 is summed from the end), no cancellation left. The result is accurate
   to about 1e-15 absolute, and small values keep most of their relative accuracy (checked
   against mpmath down to 1e-41: relative error 1e-15; at 1e-84: 1e-5);
4. the result is checked against the sum rule (sum M = number of distinct eigenvalues)
   and 0 <= M <= 1; on failure the precision is doubled and the computation repeated.

Cost: O(N^2 T) exact-integer operations would be needed to evaluate every v_tau^H G^{-1}
v_tau directly; this route needs O(N T) integer operations plus one O(N^3) mpmath
Cholesky (and its retries at higher precision). Measured on 2 CPU cores: N=64, T=4096,
all 4096 delays in 0.4-2 s for the five initialisations at dt = 1e-3..1e-1; the worst
conditioned case seen (S4D-Inv, dt=1e-3, T=1024, ~160 digits) about 2-3 s. Tests compare
against a direct 100-digit mpmath evaluation (absolute error < 1e-8 required; observed
about 1e-15).
"""
from __future__ import annotations

from typing import Any, Sequence

import mpmath as mp
import numpy as np

INIT_KINDS = ("inv", "lin", "real", "random", "step")


METHODS = ("zoh", "bilinear")


DEFAULT_TOL = 1e-12  # eigenvalues closer than this are one eigenvalue (see distinct_eigenvalues)


def init_Lambda(kind: str, N: int, *, seed: int | None = None, dt: float = 1.0) -> np.ndarray:
    """Continuous-time eigenvalues lambda_n, n = 0..N/2-1: one member per conjugate pair.

    ``N`` is the real state size (even). Kinds:

    - ``inv``  (S4D-Inv):  -1/2 + i (N/pi) (N/(2n+1) - 1)
    - ``lin``  (S4D-Lin):  -1/2 + i pi n
    - ``real`` (S4D-Real): -(n+1), the eigenvalues of the HiPPO-LegS matrix; the paper's
      "linear" baseline ("real, linearly spaced, only on the real axis") is most likely this
    - ``step``: our proposal for the paper's "conjugate, step-wise, linear extension in the
      complex plane", whose exact definition is not public: equal steps along a ray,
      lambda_n = (n+1) (-1/2) + i pi n, i.e. each step adds -1/2 to the real part and pi to
      the imaginary part (S4D-Lin's frequencies with S4D-Real's growing decay);
    - ``random``: our proposal for the paper's "uniformly distributed" eigenvalues: the
      discrete eigenvalues mu = exp(dt lambda) are uniform (by area) in the upper half of
      the unit disk (their conjugates fill the lower half), so lambda = log(mu) / dt.
      ``seed`` is required; ``dt`` is the step at which the disk is uniform (so the memory
      function of ``random`` does not depend on ``dt`` when discretised at that same ``dt``).

    ``seed`` and ``dt`` are used by ``random`` only.
    """
    if not isinstance(N, (int, np.integer)) or isinstance(N, bool) or N < 2 or N % 2:
        raise ValueError(f"N={N!r} must be an even integer >= 2 (the real state size)")
    n = np.arange(N // 2)
    if kind == "inv":
        return -0.5 + 1j * (N / np.pi) * (N / (2 * n + 1) - 1)
    if kind == "lin":
        return -0.5 + 1j * np.pi * n
    if kind == "real":
        return -(n + 1.0) + 0j
    if kind == "step":
        return -0.5 * (n + 1) + 1j * np.pi * n
    if kind == "random":
        if seed is None:
            raise ValueError("init kind 'random' needs a seed, e.g. seed=0")
        if not dt > 0:
            raise ValueError(f"dt={dt!r} must be > 0")
        rng = np.random.default_rng(seed)
        radius = np.sqrt(rng.uniform(0.0, 1.0, N // 2))  # area-uniform
        angle = rng.uniform(0.0, np.pi, N // 2)  # upper half-disk
        radius = np.clip(radius, 1e-12, None)
        return (np.log(radius) + 1j * angle) / dt
    raise ValueError(f"unknown init kind {kind!r}; allowed: {', '.join(INIT_KINDS)}")


def with_conjugates(Lambda: np.ndarray) -> np.ndarray:
    """The full spectrum [Lambda, conj(Lambda)], shape (N,), of N/2 stored eigenvalues."""
    Lambda = np.asarray(Lambda, dtype=complex)  # (N/2,)
    return np.concatenate([Lambda, Lambda.conj()])  # (N,)


def discretize(Lambda: np.ndarray, dt: float, method: str = "zoh") -> tuple[np.ndarray, np.ndarray]:
    """Discrete eigenvalues ``mu`` and the input factor ``B_bar`` (B_bar = factor * B).

    - ``zoh``:      mu = exp(dt lambda),  B_bar = (exp(dt lambda) - 1) / lambda * B
    - ``bilinear``: mu = (1 + dt lambda/2) / (1 - dt lambda/2),  B_bar = dt / (1 - dt lambda/2) * B
    """
    if method not in METHODS:
        raise ValueError(f"unknown discretisation method {method!r}; allowed: {', '.join(METHODS)}")
    dt = float(dt)
    if not dt > 0:
        raise ValueError(f"dt={dt!r} must be > 0")
    Lambda = np.asarray(Lambda, dtype=complex)
    if method == "zoh":
        mu = np.exp(dt * Lambda)
        with np.errstate(invalid="ignore", divide="ignore"):
            B_bar = np.where(Lambda == 0, dt, np.expm1(dt * Lambda) / np.where(Lambda == 0, 1, Lambda))
    else:
        mu = (1 + dt * Lambda / 2) / (1 - dt * Lambda / 2)
        B_bar = dt / (1 - dt * Lambda / 2)
    return mu, B_bar


def _as_spectrum(mu: Any) -> np.ndarray:
    """mu as a 1-D complex array; ValueError for an array of more than one axis (a matrix
    is not its eigenvalues) and for an empty, non-finite or unstable spectrum.

    |mu| = 1 is allowed (a marginally stable mode: the finite-window memory function is
    defined, e.g. mu = 1 gives M = 1/T at every delay); |mu| > 1 is not.
    """
    arr = np.asarray(mu, dtype=complex)
    if arr.ndim > 1:
        raise ValueError(f"mu has shape {arr.shape}: a 1-D array of eigenvalues is expected "
                         "(for a matrix, pass np.linalg.eigvals of it)")
    arr = np.atleast_1d(arr)
    if arr.size == 0:
        raise ValueError("empty spectrum: mu has no eigenvalues")
    if not np.all(np.isfinite(arr)):
        bad = arr[~np.isfinite(arr)][0]
        raise ValueError(f"eigenvalue mu={bad} is not finite")
    mod = np.abs(arr)
    if np.any(mod > 1.0 + 1e-12):
        i = int(np.argmax(mod))
        raise ValueError(f"eigenvalue mu={arr[i]:.6g} has |mu|={mod[i]:.6g} > 1; the memory "
                         "function needs a stable system, |mu| <= 1")
    return arr


def check_T(T: Any) -> int:
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)):
        raise ValueError(f"T={T!r} must be a positive integer (the number of delays)")
    if T <= 0:
        raise ValueError(f"T={T} must be a positive integer (the number of delays)")
    return int(T)


def distinct_eigenvalues(mu: Any, tol: float = DEFAULT_TOL) -> np.ndarray:
    """The eigenvalues with those closer than ``tol`` merged (the first of a group is kept).

    V has one row per eigenvalue, so equal eigenvalues give equal rows and lower the rank.
    Merging within ``tol`` rather than exactly matters for aliasing: S4D-Lin at dt=0.1 has
    mu_n = exp(dt(-1/2 + i pi n)), and dt pi (n +- n') = 2 pi k makes many of them equal in
    exact arithmetic but only within ~1e-15 in float64.

    The result is made exactly conjugate-symmetric when it is so within ``tol``: an
    eigenvalue with |Im mu| <= tol/2 (its conjugate is within tol) becomes real, and the
    partner of each remaining pair becomes the exact conjugate of its Im > 0 member.
    """
    arr = _as_spectrum(mu)
    keep: list[complex] = []
    for z in arr[np.lexsort((arr.imag, arr.real))]:
        if not any(abs(z - k) <= tol for k in keep):
            keep.append(complex(z))
    out = np.array(keep, dtype=complex)
    near_real = np.abs(out.imag) <= tol / 2
    upper = np.flatnonzero(out.imag > tol / 2)
    lower = list(np.flatnonzero(out.imag < -tol / 2))
    partner = {}
    for i in upper:
        j = next((j for j in lower if abs(out[j] - out[i].conjugate()) <= tol), None)
        if j is None:
            return out  # not a real system: leave it as it is
        lower.remove(j)
        partner[j] = i
    if lower:
        return out
    out[near_real] = out[near_real].real
    for j, i in partner.items():
        out[j] = out[i].conjugate()
    return out


def vandermonde_rank(mu: Any, T: int, tol: float = DEFAULT_TOL) -> int:
    """rank V = min(T, number of distinct eigenvalues) (a zero eigenvalue counts once)."""
    T = check_T(T)
    return min(T, len(distinct_eigenvalues(mu, tol)))


def is_conjugate_closed(mu: Any, tol: float = DEFAULT_TOL) -> bool:
    """Whether every eigenvalue's conjugate is in the spectrum (a real system)."""
    arr = _as_spectrum(mu)
    return all(np.min(np.abs(arr - z.conjugate())) <= tol for z in arr)


def vandermonde(mu: Any, T: int, *, real: bool = False, tol: float = DEFAULT_TOL) -> np.ndarray:
    """V[n, k] = mu_n^k for k = 0..T-1, shape (N, T) (no merging of equal eigenvalues).

    ``real=True`` gives the real form for a conjugate-closed spectrum: one row mu^k per
    real eigenvalue and the two rows Re(mu^k), Im(mu^k) per conjugate pair (the pair is
    represented by its member with Im > 0), i.e. the impulse response of the real state
    [Re z; Im z] of a diagonal S4D with B = 1. It has N rows and the same row space, hence
    the same projector P and memory function, as the complex V.
    """
    T = check_T(T)
    arr = _as_spectrum(mu)
    k = np.arange(T)
    if not real:
        return arr[:, None] ** k[None, :]  # (N, T)
    rows = []
    for z in _real_form_nodes(arr, tol):
        p = z ** k  # (T,)
        if abs(z.imag) <= tol:
            rows.append(p.real)
        else:
            rows += [p.real, p.imag]
    return np.array(rows)  # (N, T)


def _real_form_nodes(arr: np.ndarray, tol: float) -> list[complex]:
    """Real eigenvalues (each occurrence) and one member (Im > 0) of each conjugate pair."""
    pos = [z for z in arr if z.imag > tol]
    neg = [z for z in arr if z.imag < -tol]
    real = [complex(z.real, 0.0) for z in arr if abs(z.imag) <= tol]
    unmatched = list(neg)
    for z in pos:
        j = next((j for j, w in enumerate(unmatched) if abs(w - z.conjugate()) <= tol), None)
        if j is None:
            raise ValueError(f"spectrum is not closed under conjugation: mu={z:.6g} has no partner "
                             f"{z.conjugate():.6g}; pass both members of each pair (with_conjugates)")
        unmatched.pop(j)
    if unmatched:
        raise ValueError(f"spectrum is not closed under conjugation: mu={unmatched[0]:.6g} has no "
                         "partner; pass both members of each pair (with_conjugates)")
    return real + pos


def _to_mpc(z: complex) -> mp.mpc:
    return mp.mpc(mp.mpf(float(z.real)), mp.mpf(float(z.imag)))


def _fixed(x: mp.mpf, bits: int) -> int:
    return int(mp.nint(mp.ldexp(x, bits)))


class _Core:
    """Columns 0 and T-1 (and optional extra columns) of P for distinct nonzero eigenvalues
    and T > N, at verified precision."""

    def __init__(self, nodes: np.ndarray, T: int, extra: Sequence[int] = (), max_dps: int = 2000):
        self.nodes, self.T = nodes, T
        self.closed = is_conjugate_closed(nodes, tol=0.0)
        cols = [0, T - 1, *extra]
        self.attempts: list[tuple[int, int]] = []  # (digits tried, digits next)
        dps = 60
        while True:
            nxt = self._attempt(cols, dps)
            if nxt is None:
                break
            self.attempts.append((dps, nxt))
            dps = nxt
            if dps > max_dps:
                raise ArithmeticError(
                    f"memory function did not converge up to {max_dps} digits "
                    f"(N={len(nodes)}, T={T}); the spectrum is too ill-conditioned")
        self.dps = dps

    def _attempt(self, cols: list[int], dps: int) -> int | None:
        """One try at ``dps`` digits; returns None on success, else the digits to try next."""
        T, N = self.T, len(self.nodes)
        with mp.workdps(dps):
            m = [_to_mpc(z) for z in self.nodes]
            mT = [mi ** T for mi in m]
            G = [[mp.mpc(0)] * N for _ in range(N)]  # closed-form Gram matrix V V^H
            for i in range(N):
                for j in range(i, N):
                    z = m[i] * mp.conj(m[j])
                    G[i][j] = mp.mpf(T) if z == 1 else (1 - mT[i] * mp.conj(mT[j])) / (1 - z)
                    G[j][i] = mp.conj(G[i][j])
            L = _cholesky(G)
            if L is None:
                return 2 * dps
            piv = [mp.re(L[i][i]) for i in range(N)]
            log_cond = float(2 * (mp.log10(max(piv)) - mp.log10(min(piv))))
            # A backward-stable solve leaves an error of about 10^-dps cond^1.5 in the
            # projector columns (cond: estimated by the squared pivot ratio), so ask for
            # 1.5 log10(cond) + 30 digits; a saturated estimate means "much more".
            need = int(1.5 * log_cond) + 30
            if dps < need:
                return need + 10 if log_cond < dps - 10 else max(2 * dps + 20, need + 10)
            coeffs = [_cholesky_solve(L, [mi ** j for mi in m]) for j in cols]  # G^{-1} v_j
            self.diag_ends = [float(mp.re(mp.fsum(mp.conj(mi ** j) * c for mi, c in zip(m, x))))
                              for j, x in zip(cols[:2], coeffs[:2])]
            cmax = max(abs(c) for x in coeffs for c in x)
            # fraction bits: as many as the working precision (see the module docstring)
            bits = max(64, int(mp.log(cmax * N + 1, 2))) + max(100, int(3.33 * dps))
            self.columns = self._evaluate(m, coeffs, bits)  # (T, len(cols))
        return None if self._verify() else 2 * dps

    def _evaluate(self, m: list, coeffs: list, bits: int) -> np.ndarray:
        """P[s, j] = sum_n conj(mu_n)^s c_{j,n} for all s, in exact fixed-point integers.

        For a conjugate-closed spectrum the coefficients of a pair are conjugate, so the
        sum is real: the real eigenvalues plus twice the real part over the Im > 0 members.
        """
        T = self.T
        if self.closed:
            idx = [n for n, z in enumerate(self.nodes) if z.imag >= 0]
            weight = np.array([1 if self.nodes[n].imag == 0 else 2 for n in idx], dtype=object)
            # distinct_eigenvalues made the spectrum exactly conjugate-symmetric
        else:
            idx = list(range(len(m)))
            weight = np.array([1] * len(idx), dtype=object)
        wr = np.array([_fixed(mp.re(m[n]), bits) for n in idx], dtype=object)  # conj(mu): (n,)
        wi = np.array([-_fixed(mp.im(m[n]), bits) for n in idx], dtype=object)
        cr = [weight * np.array([_fixed(mp.re(x[n]), bits) for n in idx], dtype=object) for x in coeffs]
        ci = [weight * np.array([_fixed(mp.im(x[n]), bits) for n in idx], dtype=object) for x in coeffs]
        pr = np.array([1 << bits] * len(idx), dtype=object)  # conj(mu)^s, scaled by 2^bits
        pi = np.array([0] * len(idx), dtype=object)
        n_c = len(coeffs)
        out_r = np.empty((T, n_c), dtype=object)
        out_i = np.zeros((T, n_c), dtype=object)
        for s in range(T):
            for j in range(n_c):
                out_r[s, j] = (pr * cr[j] - pi * ci[j]).sum()
                if not self.closed:
                    out_i[s, j] = (pr * ci[j] + pi * cr[j]).sum()
            pr, pi = (pr * wr - pi * wi) >> bits, (pr * wi + pi * wr) >> bits
        scale = 1 << (2 * bits)
        to_float = np.frompyfunc(lambda v: v / scale, 1, 1)
        re = to_float(out_r).astype(float)
        if self.closed:
            return re
        return re + 1j * to_float(out_i).astype(float)

    def memory(self) -> np.ndarray:
        T = self.T
        M0, MT = self.diag_ends
        a = np.abs(self.columns[:, 0]) ** 2  # |P[s, 0]|^2, (T,)
        b = np.abs(self.columns[:, 1]) ** 2  # |P[s, T-1]|^2, (T,)
        # 1 - F0(tau) as the tail sum_{s > tau} (summed from the end, so that small values
        # keep their relative accuracy), F1(tau) as the head sum_{s < tau}
        tail0 = np.concatenate([np.cumsum(a[:0:-1])[::-1], [0.0]])  # (T,)
        head1 = np.concatenate([[0.0], np.cumsum(b[:-1])])  # (T,)
        G0 = tail0 / tail0[0] if tail0[0] > 0 else np.zeros(T)
        F1 = head1 / head1[-1] if head1[-1] > 0 else np.zeros(T)
        return M0 * G0 + MT * F1  # (T,)

    def _verify(self) -> bool:
        """Sum rule, range, and the column norms against the directly computed ends."""
        M = self.memory()
        n = len(self.nodes)
        ok = (np.all(np.isfinite(M)) and M.min() > -1e-9 and M.max() < 1 + 1e-9
              and abs(M.sum() - n) <= 1e-9 * max(1.0, n)
              and abs(np.sum(np.abs(self.columns[:, 0]) ** 2) - self.diag_ends[0]) <= 1e-9
              and abs(np.sum(np.abs(self.columns[:, 1]) ** 2) - self.diag_ends[1]) <= 1e-9)
        return bool(ok)


def _cholesky(G: list) -> list | None:
    """Lower-triangular L with G = L L^H (lists of mpc), or None if G is not positive definite
    at the working precision."""
    N = len(G)
    L = [[mp.mpc(0)] * N for _ in range(N)]
    for j in range(N):
        d2 = mp.re(G[j][j]) - mp.fsum(abs(L[j][k]) ** 2 for k in range(j))
        if not d2 > 0:
            return None
        d = mp.sqrt(d2)
        L[j][j] = mp.mpc(d)
        Lj = [mp.conj(L[j][k]) for k in range(j)]
        for i in range(j + 1, N):
            L[i][j] = (G[i][j] - mp.fdot(L[i][:j], Lj)) / d
    return L


def _cholesky_solve(L: list, b: list) -> list:
    """x with L L^H x = b (forward, then back substitution)."""
    N = len(L)
    y = [mp.mpc(0)] * N
    for i in range(N):
        y[i] = (b[i] - mp.fdot(L[i][:i], y[:i])) / L[i][i]
    x = [mp.mpc(0)] * N
    for i in reversed(range(N)):
        x[i] = (y[i] - mp.fdot([mp.conj(L[k][i]) for k in range(i + 1, N)], x[i + 1:])) / L[i][i]
    return x


def _analyse(nodes: np.ndarray, T: int, extra: Sequence[int] = ()) -> dict[str, Any]:
    """M[tau] for all tau = 0..T-1 of distinct eigenvalues, plus the projector columns
    ``extra``: {"memory": (T,), "columns": (T, len(extra)), "dps": int, "attempts": [...]}."""
    zero = np.abs(nodes) == 0
    if np.any(zero) or len(nodes) >= T:
        return {"memory": _memory_degenerate(nodes, T), "dps": 0, "attempts": [],
                "columns": np.stack([_projection_column_direct(nodes, T, j) for j in extra], axis=1)
                if extra else np.zeros((T, 0))}
    core = _Core(nodes, T, extra)
    return {"memory": np.clip(core.memory(), 0.0, 1.0), "dps": core.dps, "attempts": core.attempts,
            "columns": core.columns[:, 2:]}


def _memory_degenerate(nodes: np.ndarray, T: int) -> np.ndarray:
    """T <= number of eigenvalues (P = I), or a zero eigenvalue among them."""
    zero = np.abs(nodes) == 0
    if np.any(zero):
        # mu = 0 contributes the unit impulse at delay 0, orthogonal to the other modes on
        # [1, T); those span the window [0, T-1) shifted by one step.
        if T == 1:
            return np.ones(1)
        rest = nodes[~zero]
        if rest.size == 0:
            return np.concatenate([[1.0], np.zeros(T - 1)])
        return np.concatenate([[1.0], _analyse(rest, T - 1)["memory"]])
    return np.ones(T)  # rank T: P is the identity


def check_delays(delay: Any, T: int) -> tuple[np.ndarray, bool]:
    if delay is None:
        return np.arange(T), False
    arr = np.asarray(delay)
    scalar = arr.ndim == 0
    arr = np.atleast_1d(arr)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if not np.all(np.equal(np.mod(arr, 1), 0)):
            raise ValueError(f"delay={delay!r} must be integers in 0..T-1={T - 1}")
        arr = arr.astype(int)
    bad = arr[(arr < 0) | (arr >= T)]
    if bad.size:
        raise ValueError(f"delay {int(bad[0])} is outside 0..T-1 = 0..{T - 1}")
    return arr.astype(int), scalar


def memory_function(mu: Any, T: int, taus: Any = None, *, tol: float = DEFAULT_TOL) -> np.ndarray:
    """M[tau] = v_tau^H (V V^H)^{-1} v_tau for the delays tau in ``taus`` (default: 0..T-1).

    ``mu``: discrete eigenvalues (complex; both members of each conjugate pair for a real
    system), |mu| <= 1. Eigenvalues closer than ``tol`` count once. For a spectrum that is
    not closed under conjugation this is the memory of a complex state read out by a
    complex linear readout. Accurate to about 1e-14 absolute (see the module docstring for
    the method: closed-form Gram matrix and Cholesky in mpmath at verified precision,
    exact integer evaluation of two projector columns, and a Christoffel-Darboux-type
    recursion for the diagonal).
    """
    T = check_T(T)
    delays, scalar = check_delays(taus, T)
    M = _analyse(distinct_eigenvalues(mu, tol), T)["memory"]
    out = M[delays]
    return float(out[0]) if scalar else out


def memory_function_info(mu: Any, T: int, *, teacher_delay: int | None = None,
                         tol: float = DEFAULT_TOL) -> dict[str, Any]:
    """``memory_function`` at all delays plus how it was computed ("rank", "dps": mpmath
    digits used, "attempts": the precisions tried before), and with ``teacher_delay`` also
    "column": that column of P (see ``projection_column``) from the same factorisation."""
    T = check_T(T)
    nodes = distinct_eigenvalues(mu, tol)
    extra = [] if teacher_delay is None else list(check_delays([teacher_delay], T)[0])
    res = _analyse(nodes, T, extra)
    out = {"memory": res["memory"], "rank": min(T, len(nodes)), "dps": res["dps"],
           "attempts": res["attempts"]}
    if extra:
        col = res["columns"][:, 0]
        out["column"] = col.real if is_conjugate_closed(nodes, tol) else col
    return out


def memory_function_svd(mu: Any, T: int, *, tol: float = DEFAULT_TOL) -> tuple[np.ndarray, int]:
    """The naive float64 route, for comparison only: leverage scores M[tau] = ||U[tau, :]||^2
    of the SVD V^H = U S W^H, keeping singular values above max(N, T) eps s_max (numpy's
    rank rule). Returns (M (T,), numerical rank). Wrong for ill-conditioned spectra."""
    T = check_T(T)
    V = vandermonde(distinct_eigenvalues(mu, tol), T)  # (N, T)
    U, S, _ = np.linalg.svd(V.conj().T, full_matrices=False)  # (T, N), (N,)
    rank = int(np.sum(S > S[0] * max(V.shape) * np.finfo(float).eps))
    return np.sum(np.abs(U[:, :rank]) ** 2, axis=1), rank


def memory_function_noisy(mu: Any, T: int, taus: Any = None, *, noise: float,
                          gain: Any = None, tol: float = DEFAULT_TOL) -> np.ndarray:
    """The memory function when the state is read with noise: ``M_delta[tau]``.

    Mode n of the state is ``z_t[n] = gain_n sum_{k < T} mu_n^k u_{t-k}`` (unit-variance
    white input over a window of T delays; ``gain`` is the input factor ``B_bar``, default
    1). For a conjugate-closed spectrum the state is the real one, ``[Re z; Im z]`` per
    pair and ``Re z`` (and ``Im z`` if its gain is complex) per real eigenvalue, as in
    ``vandermonde(real=True)``; otherwise it is the complex z, read by a complex readout.
    The readout sees ``h_t + xi_t``, ``xi`` white with variance ``sigma^2 = noise * tr(G) /
    n`` per coordinate (``noise`` times the mean variance of the n coordinates). The best
    linear readout of ``u_{t-tau}`` then explains the fraction

        M_delta[tau] = w_tau^H (G + sigma^2 I)^{-1} w_tau,    G = W W^H

    of its variance, W (n, T) the impulse response of the state and ``w_tau`` its column
    tau. As ``noise -> 0`` this is ``memory_function`` (which does not depend on the
    gains); it falls as the noise grows, and keeps only the memory that well-conditioned
    directions of G hold: a spectrum whose Vandermonde basis is ill-conditioned (real or
    nearly parallel modes) can have ``M = 1`` exactly and ``M_delta`` near 0. The filter
    ``lambda / (lambda + sigma^2)`` on each eigenvalue ``lambda`` of G is the one ridge
    regression applies, and gradient descent on the readout stopped after about ``1 /
    (eta sigma^2)`` steps applies nearly the same one (early stopping acts as ridge), so
    ``M_delta`` is also a model of the memory that a readout can learn in a finite budget.

    Eigenvalues closer than ``tol`` are merged as in ``memory_function`` (the first of a
    group and its gain kept). Computed in float64 from the eigendecomposition of G; the
    regularised inverse has condition number at most about ``n / noise``, so ``noise`` must
    be in [1e-12, 1e6].
    """
    T = check_T(T)
    delays, scalar = check_delays(taus, T)
    if isinstance(noise, bool) or not isinstance(noise, (int, float, np.floating)) \
            or not 1e-12 <= float(noise) <= 1e6:
        raise ValueError(f"noise={noise!r} must be a number in [1e-12, 1e6] (the noise "
                         "variance as a fraction of the mean state variance)")
    arr = _as_spectrum(mu)
    g = np.ones(arr.shape, dtype=complex) if gain is None else np.asarray(gain, dtype=complex)
    if g.shape != arr.shape or not np.all(np.isfinite(g)) or np.any(g == 0):
        raise ValueError(f"gain must be finite, non-zero and of the spectrum's shape "
                         f"{arr.shape}, got shape {g.shape}")
    nodes = distinct_eigenvalues(arr, tol)
    gains = g[[int(np.argmin(np.abs(arr - z))) for z in nodes]]  # the kept member's
    k = np.arange(T)
    if is_conjugate_closed(nodes, tol):
        rows = []
        for z, gz in zip(nodes, gains):
            p = gz * z ** k  # (T,)
            if z.imag > tol / 2 or (abs(z.imag) <= tol / 2 and abs(gz.imag) > 0):
                rows += [p.real, p.imag]
            elif abs(z.imag) <= tol / 2:
                rows.append(p.real)  # (the member with Im < 0 of a pair adds nothing)
        W = np.array(rows)  # (n, T), real
    else:
        W = gains[:, None] * nodes[:, None] ** k[None, :]  # (n, T), complex
    G = W @ W.conj().T  # (n, n), Hermitian
    lam, U = np.linalg.eigh(G)
    sigma2 = float(noise) * float(np.trace(G).real) / W.shape[0]
    proj = U.conj().T @ W[:, delays]  # (n, len(delays))
    M = np.sum(np.abs(proj) ** 2 / (np.clip(lam, 0.0, None) + sigma2)[:, None], axis=0)
    M = np.clip(np.real(M), 0.0, 1.0)
    return float(M[0]) if scalar else M


def memory_capacity(mu: Any, T: int, *, tol: float = DEFAULT_TOL) -> float:
    """MC = sum_{tau < T} M[tau], computed from the memory function (it equals rank V <= N)."""
    return float(np.sum(memory_function(mu, T, tol=tol)))


capacity = memory_capacity  # the name for the same function


def projection_column(mu: Any, T: int, delay: int, *, tol: float = DEFAULT_TOL) -> np.ndarray:
    """Column ``delay`` of P = V^H (V V^H)^{-1} V, shape (T,): how a teacher at that delay
    enters the readout gradient, spread over all delays (its entry at ``delay`` is M[delay]).

    Real for a conjugate-closed spectrum (then returned as float), complex otherwise.
    """
    return memory_function_info(mu, T, teacher_delay=delay, tol=tol)["column"]


def _projection_column_direct(nodes: np.ndarray, T: int, j: int, dps: int = 100) -> np.ndarray:
    with mp.workdps(dps):
        V = mp.matrix([[_to_mpc(z) ** k for k in range(T)] for z in nodes])  # (N, T)
        G = V * V.H
        # pseudo-inverse through the rank: nodes are distinct, so rank = min(N, T)
        if len(nodes) <= T:
            c = mp.lu_solve(G, V[:, j])
            col = V.H * c
        else:  # more eigenvalues than delays: P is the identity
            col = mp.matrix([1 if s == j else 0 for s in range(T)])
        return np.array([complex(col[s]) for s in range(T)])


def memory_function_reference(mu: Any, T: int, delay: Sequence[int], *, dps: int = 100,
                              tol: float = DEFAULT_TOL) -> np.ndarray:
    """Direct evaluation of M[tau] = v_tau^H G^{-1} v_tau at ``dps`` digits (for tests).

    Independent of the route ``memory_function`` takes: Gaussian elimination with partial
    pivoting on [G | v_tau ...] in mpmath, then the quadratic form for each delay. Cost
    O(N^3 + N^2 len(delay)) multiprecision operations: about a second at N=64.
    """
    T = check_T(T)
    taus, _ = check_delays(delay, T)
    nodes = distinct_eigenvalues(mu, tol)
    if len(nodes) >= T:
        return np.ones(len(taus))
    with mp.workdps(dps):
        m = [_to_mpc(z) for z in nodes]
        N, k = len(m), len(taus)
        V = [[mi ** int(tau) for tau in taus] for mi in m]  # (N, k)
        mT = [mi ** T for mi in m]
        A = []
        for i in range(N):
            row = []
            for j in range(N):
                z = m[i] * mp.conj(m[j])
                row.append(mp.mpf(T) if z == 1 else (1 - mT[i] * mp.conj(mT[j])) / (1 - z))
            A.append(row + list(V[i]))  # [G | V], (N, N + k)
        for col in range(N):
            p = max(range(col, N), key=lambda r: abs(A[r][col]))
            A[col], A[p] = A[p], A[col]
            piv = A[col][col]
            for r in range(col + 1, N):
                f = A[r][col] / piv
                if f != 0:
                    A[r] = [a - f * b for a, b in zip(A[r], A[col])]
        X = [[mp.mpc(0)] * k for _ in range(N)]  # G^{-1} V, (N, k)
        for i in reversed(range(N)):
            for c in range(k):
                acc = A[i][N + c] - mp.fsum(A[i][j] * X[j][c] for j in range(i + 1, N))
                X[i][c] = acc / A[i][i]
        out = [float(mp.re(mp.fsum(mp.conj(V[i][c]) * X[i][c] for i in range(N)))) for c in range(k)]
    return np.array(out)


def readout_gradient(theta: Any, alpha: Any, mu: Any, *, B: float = 1.0, u_var: float = 1.0,
                     tol: float = DEFAULT_TOL) -> np.ndarray:
    """G(y) = dL/dtheta = 2 <u^2> B V (B V^T theta - P alpha), shape (N,).

    Setting of the paper's Section on the gradient: one diagonal SSM (Q = I) with a scalar
    input gain ``B``, white-noise input of variance ``u_var`` = <u^2>, the real state
    h_t = B sum_tau V[:, tau] u_{t-tau} (``V = vandermonde(mu, T, real=True)``, N x T),
    a linear readout ``theta`` (N,) and a teacher y_t = sum_tau alpha_tau u_{t-tau} with
    ``alpha`` (T,) (T = len(alpha)). The loss is L = <(theta^T h_t - y_t)^2>.

    P = V^T (V V^T)^{-1} V is the projector whose diagonal is the memory function: the
    teacher enters only through P alpha. Because V P = V this equals
    2 <u^2> B (B V V^T theta - V alpha), which is what is evaluated (no inverse needed).
    """
    alpha = np.asarray(alpha, dtype=float).ravel()  # (T,)
    theta = np.asarray(theta, dtype=float).ravel()  # (N,)
    V = vandermonde(mu, len(alpha), real=True, tol=tol)  # (N, T)
    if theta.shape != (V.shape[0],):
        raise ValueError(f"theta has shape {theta.shape}; expected ({V.shape[0]},), the real "
                         "state size of the spectrum")
    return 2.0 * u_var * B * (B * (V @ (V.T @ theta)) - V @ alpha)  # (N,)


def optimal_readout(alpha: Any, mu: Any, *, B: float = 1.0, tol: float = DEFAULT_TOL) -> np.ndarray:
    """theta* = (1/B) (V V^T)^{-1} V alpha, the zero of ``readout_gradient`` (N,).

    Solved as the least-squares problem min ||B V^T theta - alpha|| (better conditioned
    than the normal equations; minimum-norm when V V^T is singular).
    """
    alpha = np.asarray(alpha, dtype=float).ravel()
    V = vandermonde(mu, len(alpha), real=True, tol=tol)  # (N, T)
    theta, *_ = np.linalg.lstsq(B * V.T, alpha, rcond=None)
    return theta


def population_loss(theta: Any, alpha: Any, mu: Any, *, B: float = 1.0, u_var: float = 1.0,
                    tol: float = DEFAULT_TOL) -> float:
    """L(theta) = <u^2> ||B V^T theta - alpha||^2, the white-noise expectation of the loss."""
    alpha = np.asarray(alpha, dtype=float).ravel()
    V = vandermonde(mu, len(alpha), real=True, tol=tol)
    r = B * (V.T @ np.asarray(theta, dtype=float)) - alpha  # (T,)
    return float(u_var * r @ r)


def impulse_response(A_bar: Any, B_bar: Any, T: int) -> np.ndarray:
    """K[tau] = A_bar^tau B_bar for tau < T, shape (T, N): the state's response to a unit input."""
    T = check_T(T)
    A_bar = np.asarray(A_bar)
    x = np.asarray(B_bar).ravel()
    out = np.empty((T, x.size), dtype=np.result_type(A_bar, x))
    for tau in range(T):
        out[tau] = x
        x = A_bar @ x
    return out


def simulate_states(kernel: Any, u: Any) -> np.ndarray:
    """h_t = sum_{tau < T} kernel[tau] u_{t-tau} for every t (inputs before 0 are zero).

    ``kernel`` (T, N), ``u`` (L,) -> h (L, N), by FFT convolution (scipy).
    """
    from scipy.signal import fftconvolve

    kernel = np.asarray(kernel, dtype=float)  # (T, N)
    u = np.asarray(u, dtype=float).ravel()  # (L,)
    return fftconvolve(u[:, None], kernel, axes=0)[: u.size]  # (L, N)


def memory_from_simulation(kernel: Any, delay: Sequence[int], n_samples: int, *, seed: int = 0
                           ) -> np.ndarray:
    """Estimate M[tau] from its definition: drive the state with white noise and fit the
    least-squares linear readout of u_{t-tau} from h_t,

        M[tau] = 1 - min_w <(w^T h_t - u_{t-tau})^2> / <u^2>.

    The state is the finite-window one, h_t = sum_{tau < T} kernel[tau] u_{t-tau}, so the
    estimate converges to ``memory_function`` at horizon T as ``n_samples`` grows (an
    in-sample fit is biased up by about N / n_samples).
    """
    kernel = np.asarray(kernel, dtype=float)  # (T, N)
    T = kernel.shape[0]
    taus = np.asarray(delay, dtype=int)
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(n_samples + T - 1)  # (L,)
    h = simulate_states(kernel, u)[T - 1:]  # full windows only, (n, N)
    t = np.arange(T - 1, u.size)
    Y = np.stack([u[t - tau] for tau in taus], axis=1)  # (n, k)
    W, *_ = np.linalg.lstsq(h, Y, rcond=None)  # (N, k)
    resid = Y - h @ W
    return 1.0 - np.mean(resid ** 2, axis=0) / np.mean(Y ** 2, axis=0)


def memory_function_gramian(kernel: Any, delay: Sequence[int]) -> np.ndarray:
    """M[tau] = k_tau^T W^{-1} k_tau with W = sum_tau k_tau k_tau^T, from any impulse response
    (dense or diagonal, float64). Only for well-conditioned systems; it checks the
    eigenvalue formula on a dense A without diagonalising it."""
    kernel = np.asarray(kernel, dtype=float)  # (T, N)
    Q, R = np.linalg.qr(kernel)  # (T, N): leverage scores of the rows
    return np.sum(Q[np.asarray(delay, dtype=int)] ** 2, axis=1)


def real_block(Lambda: Any) -> np.ndarray:
    """Real block-diagonal matrix, (N, N), with the spectrum with_conjugates(Lambda): the
    2x2 block [[Re, -Im], [Im, Re]] of each stored lambda (a real lambda gives the block
    lambda I_2, i.e. the two copies that conjugate-pair storage implies)."""
    Lambda = np.asarray(Lambda, dtype=complex).ravel()
    N = 2 * Lambda.size
    A = np.zeros((N, N))
    for n, lam in enumerate(Lambda):
        i = 2 * n
        A[i:i + 2, i:i + 2] = [[lam.real, -lam.imag], [lam.imag, lam.real]]
    return A


def dense_ssm(Lambda: Any, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A dense continuous-time (A, B), A = Q blockdiag(Lambda) Q^{-1} with a random invertible
    Q (standard normal entries) and a random B: an "S4" with the spectrum of the S4D
    with_conjugates(Lambda). Shapes (N, N), (N,)."""
    rng = np.random.default_rng(seed)
    A0 = real_block(Lambda)
    N = A0.shape[0]
    Q = rng.standard_normal((N, N))
    A = Q @ A0 @ np.linalg.inv(Q)  # (N, N)
    B = rng.standard_normal(N)  # (N,)
    return A, B


def discretize_dense(A: Any, B: Any, dt: float, method: str = "zoh") -> tuple[np.ndarray, np.ndarray]:
    """(A_bar, B_bar) of a dense SSM: ZOH A_bar = e^{dt A}, B_bar = A^{-1}(A_bar - I) B;
    bilinear A_bar = (I - dt/2 A)^{-1}(I + dt/2 A), B_bar = (I - dt/2 A)^{-1} dt B."""
    from scipy.linalg import expm, solve

    if method not in METHODS:
        raise ValueError(f"unknown discretisation method {method!r}; allowed: {', '.join(METHODS)}")
    A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
    I = np.eye(A.shape[0])
    if method == "zoh":
        A_bar = expm(dt * A)
        return A_bar, solve(A, (A_bar - I) @ B)
    left = I - dt / 2 * A
    return solve(left, I + dt / 2 * A), solve(left, dt * B)


def hippo_legs(N: int) -> tuple[np.ndarray, np.ndarray]:
    """HiPPO-LegS (A, B): A[n, k] = -sqrt(2n+1) sqrt(2k+1) (n > k), -(n+1) (n = k), 0 (n < k);
    B[n] = sqrt(2n+1). Lower triangular, so its eigenvalues are -1, -2, ..., -N."""
    if not isinstance(N, (int, np.integer)) or N < 1:
        raise ValueError(f"N={N!r} must be a positive integer")
    q = np.sqrt(2 * np.arange(N) + 1.0)
    A = -np.tril(np.outer(q, q), -1) - np.diag(np.arange(1, N + 1.0))
    return A, q.copy()


def legs_normal_spectrum(N: int) -> np.ndarray:
    """Eigenvalues -1/2 + i omega of the normal part A + P P^T of HiPPO-LegS (P_n = sqrt(n+1/2)),
    the S4D-LegS spectrum, one member per pair (Im > 0, decreasing): N/2 values."""
    A, _ = hippo_legs(N)
    P = np.sqrt(np.arange(N) + 0.5)
    S = A + np.outer(P, P) + 0.5 * np.eye(N)  # skew-symmetric
    omega = np.linalg.eigvalsh(-1j * S).real  # S = i H with H Hermitian: eigenvalues of -iS
    omega = np.sort(omega[omega > 0])[::-1]
    return -0.5 + 1j * omega


def delay_grid(T: int, n: int = 160, special: Sequence[int] = (10, 100, 500, 1000, 4000)) -> np.ndarray:
    """About ``n`` log-spaced delays in 0..T-1, always with 0, T-1 and the ``special`` ones < T."""
    T = check_T(T)
    grid = np.unique(np.round(np.geomspace(1, max(T - 1, 1), n)).astype(int))
    extra = [0, T - 1] + [d for d in special if d < T]
    return np.unique(np.concatenate([grid, extra]).astype(int))


def spectrum(init: str, N: int, dt: float, *, method: str = "zoh", seed: int = 0) -> np.ndarray:
    """The discrete spectrum mu (N,) of an initialisation: init_Lambda, with_conjugates, discretize."""
    mu, _ = discretize(with_conjugates(init_Lambda(init, N, seed=seed, dt=dt)), dt, method)
    return mu


def explore_spectrum(init: str, N: int, dt: float, T: int, *, extra: complex | None = None,
                     seed: int = 0) -> dict[str, Any]:
    """Everything the chapter's interactive explorer draws for one spectrum: an
    initialisation, optionally with one extra conjugate pair ``extra``, ``conj(extra)``.

    Returns mu (N,), delay (T,), memory (T,), cumulative (T,), column (T,) = |P[:, T/2]|
    and teacher_delay = T // 2.
    """
    mu = spectrum(init, N, dt, seed=seed)
    if extra is not None:
        mu = np.concatenate([mu, [extra, np.conj(extra)]])
    info = memory_function_info(mu, T, teacher_delay=T // 2)
    return {"mu": mu, "delay": np.arange(T), "memory": info["memory"],
            "cumulative": np.cumsum(info["memory"]), "column": np.abs(info["column"]),
            "teacher_delay": T // 2}


def reference_error(kinds: Sequence[str], N: int, T: int, dt: float, *,
                    dps: int = 100) -> float:
    """The largest difference between :func:`memory_function` and a direct ``dps``-digit
    evaluation (:func:`memory_function_reference`) at delays 0, 10, 100, T/2 and T-1, over
    the spectra of ``kinds`` at step ``dt``."""
    taus = sorted({t for t in (0, 10, 100, T // 2, T - 1) if 0 <= t < T})
    errors = []
    for kind in kinds:
        mu = spectrum(kind, N, dt)
        ref = memory_function_reference(mu, T, taus, dps=dps)
        errors.append(float(np.max(np.abs(memory_function(mu, T, taus) - ref))))
    return max(errors)


def legs_comparison(N: int, T: int, dt: float, taus: Sequence[int] = (10, 100)
                    ) -> dict[str, Any]:
    """HiPPO-LegS against S4D-Inv at state size ``N``: the LegS eigenvalues' real range and
    largest imaginary part, the condition number of its eigenvector matrix, the largest
    frequency of the normal part's spectrum and of the S4D-Inv formula, and the memory
    function at ``taus`` (window ``T``, ZOH step ``dt``) of the LegS spectrum and of S4D-Inv."""
    A, _ = hippo_legs(N)
    lam, vectors = np.linalg.eig(A)
    mu_legs, _ = discretize(lam.real.astype(complex), dt)
    return {"A": A, "eigenvalues": lam, "normal": legs_normal_spectrum(N),
            "inv": init_Lambda("inv", N),
            "real_min": float(lam.real.min()), "real_max": float(lam.real.max()),
            "imag_max": float(np.abs(lam.imag).max()),
            "eigvec_cond": float(np.linalg.cond(vectors)),
            "omega_max_legs": float(legs_normal_spectrum(N).imag.max()),
            "omega_max_inv": float(init_Lambda("inv", N).imag.max()),
            "M_legs": memory_function(mu_legs, T, list(taus)).tolist(),
            "M_inv": memory_function(spectrum("inv", N, dt), T, list(taus)).tolist()}
