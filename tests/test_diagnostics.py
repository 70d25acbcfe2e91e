"""sst_core.analysis.diagnostics (and its k-means, analysis.clusters, and statistics,
analysis.stats) on constructed data with known answers."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as scipy_stats
import torch

from sst_core.analysis import clusters, stats
from sst_core.analysis import diagnostics as dg
from sst_core.groups import get_group
from sst_core.models import build
from sst_core.tasks.tracking import running_product, vocabulary
from sst_core.theory.error_control import symbolic_basis, symbolic_subspace

pytestmark = pytest.mark.usefixtures("one_thread")


# -- constructed hidden states -----------------------------------------------------------
def two_classes(a: float = 2.0, spreads=(0.5, 1.0, 3.0)):
    """Class 0 at (0, 0), class 1 at (a, 0); at time i each class has two samples at
    ``+-s_i`` along the second axis. So R = s^2, M = a^2 exactly."""
    L = len(spreads)
    h = np.zeros((4, L, 2))  # (b, L, d)
    states = np.array([[0] * L, [0] * L, [1] * L, [1] * L])  # (b, L)
    for i, s in enumerate(spreads):
        h[:, i, 1] = [s, -s, s, -s]
        h[2:, i, 0] = a
    return h, states


def test_centroids_and_presence():
    h, states = two_classes()
    states = states.copy()
    states[2:, 1] = 0  # time index 1: class 1 absent
    c, present = dg.centroids(h, states, n_g=3)
    assert c.shape == (3, 3, 2) and present.shape == (3, 3)
    np.testing.assert_array_equal(present[:, 2], False)  # class 2 never occurs
    assert not present[1, 1] and present[0, 1]
    assert np.isnan(c[1, 1]).all() and np.isnan(c[:, 2]).all()
    np.testing.assert_allclose(c[0, 0], [0, 0])
    np.testing.assert_allclose(c[0, 1], [2, 0])
    np.testing.assert_allclose(c[1, 0], [1, 0])  # all four samples: x = 0, 0, 2, 2


def test_distinguishability_exact():
    spreads = np.array([0.5, 1.0, 3.0])
    h, states = two_classes(a=2.0, spreads=spreads)
    d = dg.distinguishability(torch.tensor(h), torch.tensor(states))
    np.testing.assert_allclose(d.R, spreads ** 2)
    np.testing.assert_allclose(d.M, 4.0)
    np.testing.assert_allclose(d.q, spreads ** 2 / 4)
    np.testing.assert_allclose(d.q_sqrt, spreads / 2)
    # with a readout W = diag(2, 3): R = 9 s^2, M = 4 a^2 = 16
    W = np.diag([2.0, 3.0])
    dw = dg.distinguishability(h, states, W_out=W)
    np.testing.assert_allclose(dw.R, 9 * spreads ** 2)
    np.testing.assert_allclose(dw.M, 16.0)
    np.testing.assert_allclose(dw.q, 9 * spreads ** 2 / 16)
    np.testing.assert_allclose(dw.q_sqrt, 3 * spreads / 4)
    # an nn.Linear works too (its bias cancels)
    lin = torch.nn.Linear(2, 2)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor(W))
    np.testing.assert_allclose(dg.distinguishability(h, states, W_out=lin).q, dw.q)


def test_absent_states_are_skipped():
    # three classes on a line at 0, 1, 10; class 1 absent at time index 1
    L = 2
    h = np.zeros((3, L, 1))
    h[:, :, 0] = [[0, 0], [1, 10], [10, 10]]
    states = np.array([[0, 0], [1, 2], [2, 2]])
    d = dg.distinguishability(h, states, n_g=3)
    np.testing.assert_allclose(d.M, [1.0, 100.0])  # min pair (0,1) then only (0,2)
    np.testing.assert_allclose(d.R, [0.0, 0.0])


def test_single_class_gives_nan_and_no_crossing():
    h = np.random.default_rng(0).normal(size=(5, 4, 3))
    states = np.zeros((5, 4), dtype=np.int64)
    d = dg.distinguishability(h, states)
    assert np.isnan(d.M).all() and np.isnan(d.q).all() and np.isnan(d.q_sqrt).all()
    assert (d.R > 0).all()
    assert dg.T_cross(d.q) is None
    assert dg.failure_mode(d.q) == "none"


def test_T_cross_is_a_one_based_length():
    q = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    assert dg.T_cross(q) == 5  # index 4 = after 5 tokens
    assert dg.T_cross(q, tau=1.0) is None
    assert dg.T_cross(q, tau=0.05) == 1
    assert dg.T_cross(np.array([np.nan, 0.2, 0.7])) == 3
    assert isinstance(dg.T_cross(q), int)


# -- U ----------------------------------------------------------------------------------------
def test_symbolic_subspace_plane_in_R5():
    rng = np.random.default_rng(1)
    basis, _ = np.linalg.qr(rng.normal(size=(5, 2)))  # (5, 2): the plane
    offset = rng.normal(size=5)
    coords = np.array([[0.0, 0.0], [1.0, 0.5], [-0.3, 2.0]])
    c = offset + coords @ basis.T  # (3, 5)
    Q = symbolic_basis(c)
    assert Q.shape == (5, 2)
    np.testing.assert_allclose(Q.T @ Q, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(dg.projector(Q), basis @ basis.T, atol=1e-12)
    # an absent (NaN) row and a masked-out row are skipped
    c4 = np.vstack([c, np.full(5, np.nan)])
    assert symbolic_basis(c4).shape == (5, 2)
    Q1 = symbolic_basis(c, present=np.array([True, True, False]))
    assert Q1.shape == (5, 1)
    u = c[1] - c[0]
    np.testing.assert_allclose(np.abs(Q1[:, 0]), np.abs(u) / np.linalg.norm(u))
    # collinear centroids: rank 1; one valid row or coincident rows: rank 0
    assert symbolic_basis(np.array([[0.0, 0], [1, 1], [2, 2]])).shape == (2, 1)
    assert symbolic_basis(c[:1]).shape == (5, 0)
    assert symbolic_basis(np.array([[1e3, 1.0], [1e3, 1.0 + 1e-13]])).shape == (2, 0)
    # the theory's pair (U, U_perp) is the same U, with its orthonormal complement
    U, U_perp = symbolic_subspace(c)
    np.testing.assert_array_equal(U, Q)
    assert U_perp.shape == (5, 3)
    np.testing.assert_allclose(np.hstack([U, U_perp]).T @ np.hstack([U, U_perp]), np.eye(5),
                               atol=1e-12)
    U, U_perp = symbolic_subspace(c, present=np.array([True, False, False]))
    assert U.shape == (5, 0) and np.array_equal(U_perp, np.eye(5))


def test_q_split_along_U_and_U_perp():
    # classes at 0 and e1 in R^4; residuals +-s along e1 (in U) or e2 (in U_perp)
    s = np.array([0.2, 0.5, 0.9])
    L = len(s)
    base = np.zeros((4, L, 4))
    base[2:, :, 0] = 1.0
    states = np.array([[0] * L, [0] * L, [1] * L, [1] * L])
    sign = np.array([1, -1, 1, -1])[:, None]
    W = np.random.default_rng(2).normal(size=(3, 4))
    for axis, in_U in ((0, True), (1, False)):
        h = base.copy()
        h[:, :, axis] += sign * s
        c, present = dg.centroids(h, states)
        Q = symbolic_basis(c[0], present[0])
        np.testing.assert_allclose(np.abs(Q[:, 0]), [1, 0, 0, 0], atol=1e-12)
        for W_out in (None, W):
            q = dg.distinguishability(h, states, W_out=W_out).q
            per_time = [symbolic_basis(c[i], present[i]) for i in range(L)]
            for QQ in (Q, per_time, np.stack(per_time)):
                q_U, q_perp = dg.q_split(h, states, QQ, W_out=W_out)
                if in_U:
                    np.testing.assert_allclose(q_U, q)
                    np.testing.assert_allclose(q_perp, 0, atol=1e-15)
                else:
                    np.testing.assert_allclose(q_U, 0, atol=1e-15)
                    np.testing.assert_allclose(q_perp, q)
        q = dg.distinguishability(h, states).q
        np.testing.assert_allclose(q, s ** 2)  # W = I: R = s^2, M = 1


# -- models ----------------------------------------------------------------------------------
def rnn(name: str, d: int = 4, n_layers: int = 1, seed: int = 0, n_tokens: int = 3):
    torch.manual_seed(seed)
    return build(name, n_tokens, n_tokens, d_state=d, n_layers=n_layers).double()


def set_W_h(layer, W) -> None:
    with torch.no_grad():
        layer.W_h.copy_(torch.as_tensor(W, dtype=torch.float64))


def orthogonal(d: int, seed: int) -> np.ndarray:
    return np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))[0]


def test_state_trajectory_matches_hidden_states():
    model = rnn("tanh_rnn", d=5)
    tokens = torch.randint(0, 3, (2, 7), generator=torch.Generator().manual_seed(0))
    hs = dg.state_trajectory(model, tokens)
    assert hs.shape == (2, 7, 5)
    torch.testing.assert_close(hs, model.hidden_states(tokens)[-1].detach())


def test_perturbation_recovery_linear_rnn_exact():
    d, rho = 4, 0.8
    model = rnn("linear_rnn", d=d)
    set_W_h(model.layers[0], rho * orthogonal(d, 3))
    tokens = np.random.default_rng(0).integers(0, 3, size=(5, 12))
    out = dg.perturbation_recovery(model, tokens, t0=4)
    assert out.shape == (8,)
    np.testing.assert_allclose(out, rho ** np.arange(1, 9), rtol=1e-10)
    # the ratio of an affine model does not depend on eps or on the seed
    np.testing.assert_allclose(dg.perturbation_recovery(model, tokens, 4, eps=0.3, seed=5),
                               out, rtol=1e-10)
    # direction U along e1 of a diagonal transition: ratio |a_1|^(k+1)
    set_W_h(model.layers[0], np.diag([1.0, 0.5, -0.9, 0.2]))
    e1 = np.eye(d)[:, :1]
    out_U = dg.perturbation_recovery(model, tokens, 4, direction="U", Q=e1)
    np.testing.assert_allclose(out_U, 1.0, rtol=1e-10)  # neutral, as Theorem 1 says on U
    out_3 = dg.perturbation_recovery(model, tokens, 4, direction="U", Q=np.eye(d)[:, 2:3])
    np.testing.assert_allclose(out_3, 0.9 ** np.arange(1, 9), rtol=1e-10)


def test_perturbation_recovery_layers():
    # two decoupled linear layers (layer 2 ignores layer 1's output): W_h = rho_i R_i
    d = 3
    model = rnn("linear_rnn", d=d, n_layers=2)
    set_W_h(model.layers[0], 0.5 * orthogonal(d, 1))
    set_W_h(model.layers[1], 0.9 * orthogonal(d, 2))
    with torch.no_grad():
        model.layers[1].W_x.zero_()
        model.layers[1].b.fill_(0.3)
    tokens = np.random.default_rng(1).integers(0, 3, size=(4, 8))
    k = np.arange(1, 7)
    last = dg.perturbation_recovery(model, tokens, t0=2, layers="last")
    np.testing.assert_allclose(last, 0.9 ** k, rtol=1e-10)
    both = dg.perturbation_recovery(model, tokens, t0=2, layers="all")
    assert (both < 0.9 ** k).all() and (both > 0.5 ** k).all()


def test_perturbation_recovery_tanh_contracts_and_mamba_runs():
    model = rnn("tanh_rnn", d=6)
    set_W_h(model.layers[0], 0.3 * orthogonal(6, 4))
    tokens = np.random.default_rng(2).integers(0, 3, size=(4, 15))
    out = dg.perturbation_recovery(model, tokens, t0=5)
    assert out[0] <= 0.3 + 1e-12 and out[-1] < 1e-3
    assert (np.diff(out) < 0).all()
    torch.manual_seed(0)
    mamba = build("mamba", 3, 3, d_model=4, d_state=2, n_layers=2)
    out = dg.perturbation_recovery(mamba, tokens[:, :8], t0=3)
    assert out.shape == (5,) and np.isfinite(out).all()


def test_state_preserving_words():
    g = get_group("S3")
    words = dg.state_preserving_words(g, length=4, n=50, seed=3)
    assert words.shape == (50, 4) and words.dtype == np.int64
    assert (running_product(g, words)[:, -1] == g.identity).all()
    assert np.isin(words, vocabulary(g, "generators")).all()
    np.testing.assert_array_equal(words, dg.state_preserving_words("S3", 4, 50, seed=3))
    words = dg.state_preserving_words("C6", length=7, n=20, tokens="all", seed=0)
    assert (running_product("C6", words)[:, -1] == 0).all()
    with pytest.raises(ValueError, match="found only 0"):
        dg.state_preserving_words("S3", length=3, n=1, tokens="all", seed=0, max_tries=1)


def test_failure_mode():
    t = np.arange(100)
    assert dg.failure_mode(np.full(100, 0.8)) == "saturation"
    assert dg.failure_mode(0.01 * t) == "climb"  # crosses 0.5 at t = 50
    assert dg.failure_mode(np.full(100, 0.1)) == "none"
    assert dg.failure_mode(np.r_[np.nan, np.nan, np.full(10, 0.9)]) == "saturation"
    assert dg.failure_mode(np.full(5, np.nan)) == "none"
    assert dg.failure_mode(0.01 * t, tau=2.0) == "none"
    # with the training length: where T_cross falls decides (q(1) = 0 does not matter)
    early = np.r_[0.0, np.full(99, 0.9)]
    assert dg.T_cross(early) == 2 and dg.failure_mode(early, t_train=60) == "saturation"
    assert dg.failure_mode(0.01 * t, t_train=40) == "climb"  # crosses at 50, after training
    assert dg.failure_mode(0.01 * t, t_train=60) == "saturation"  # crosses inside training
    assert dg.failure_mode(np.full(100, 0.1), t_train=60) == "none"
    with pytest.raises(ValueError, match="t_train"):
        dg.failure_mode(0.01 * t, t_train=0)



def test_bootstrap_ci():
    x = np.arange(1.0, 102.0)  # median 51
    est, lo, hi = stats.bootstrap_ci(x, n_boot=2000)
    assert est == 51.0 and lo < 51 < hi
    assert (est, lo, hi) == stats.bootstrap_ci(x, n_boot=2000)
    assert 40 < lo and hi < 62
    # a statistic without an axis argument takes the per-resample path
    est2, lo2, hi2 = stats.bootstrap_ci(x, stat=lambda v: float(np.mean(v)), n_boot=500)
    assert est2 == 51.0 and lo2 < 51 < hi2


def test_loglog_pearson_power_law():
    T = np.array([10.0, 20, 40, 80, 160])
    res = stats.loglog_pearson(list(T) + [None, 5.0], list(3 * T ** 1.5) + [100.0, np.nan])
    assert res["n"] == 5 and res["r"] == pytest.approx(1.0) and res["p"] < 1e-6
    with pytest.raises(ValueError, match="at least 3"):
        stats.loglog_pearson([10, None, 30], [1, 2, np.nan])
    with pytest.raises(ValueError, match="same for every pair"):
        stats.loglog_pearson([10, 20, 30], [100, 100, 100])


def _partial_r_by_regression(x, y, groups):
    """Plain reference: the coefficient test of log x in the least-squares fit of log y on
    log x and one indicator per group, and the correlation of the two logs' residuals on
    the indicators."""
    lx, ly = np.log(x), np.log(y)
    names = sorted(set(groups))
    G = np.array([[g == k for k in names] for g in groups], dtype=float)  # (n, g)
    resid = [v - G @ np.linalg.lstsq(G, v, rcond=None)[0] for v in (lx, ly)]
    r = np.corrcoef(*resid)[0, 1]
    X = np.column_stack([lx, G])  # (n, 1 + g)
    beta, *_ = np.linalg.lstsq(X, ly, rcond=None)
    df = len(x) - X.shape[1]
    s2 = np.sum((ly - X @ beta) ** 2) / df
    se = np.sqrt(s2 * np.linalg.inv(X.T @ X)[0, 0])
    p = 2 * scipy_stats.t.sf(abs(beta[0] / se), df)
    return r, p, df


def test_loglog_within_pearson_matches_the_regression_with_group_indicators():
    rng = np.random.default_rng(0)
    groups = ["a"] * 7 + ["b"] * 5 + ["c"] * 9 + ["d"]  # a group of one adds nothing
    n = len(groups)
    shift = {"a": 0.0, "b": 2.0, "c": -1.0, "d": 0.5}
    lx = rng.normal(size=n) + np.array([shift[g] for g in groups])
    ly = 0.6 * lx + rng.normal(scale=0.5, size=n) - 3 * np.array([shift[g] for g in groups])
    res = stats.loglog_within_pearson(np.exp(lx), np.exp(ly), groups)
    r, p, df = _partial_r_by_regression(np.exp(lx), np.exp(ly), groups)
    assert res["n"] == n and res["groups"] == 4 and res["df"] == df == n - 4 - 1
    assert res["r"] == pytest.approx(r, abs=1e-12) and res["p"] == pytest.approx(p, rel=1e-9)
    # Simpson: each group rises, but the groups' levels fall against each other
    x = [1, 2, 3, 10, 20, 30, 100, 200, 300]
    y = [900, 1000, 1100, 90, 100, 110, 9, 10, 11]
    g = ["u"] * 3 + ["v"] * 3 + ["w"] * 3
    assert stats.loglog_pearson(x, y)["r"] < -0.9
    assert stats.loglog_within_pearson(x, y, g)["r"] > 0.99
    # None / NaN pairs are dropped, as by loglog_pearson
    again = stats.loglog_within_pearson(x + [None, 5.0], y + [3.0, np.nan], g + ["u", "v"])
    assert again["n"] == 9 and again["r"] == pytest.approx(
        stats.loglog_within_pearson(x, y, g)["r"])


def test_pearson_p_value_is_scipys():
    rng = np.random.default_rng(1)
    for n in (4, 30, 113):
        x = rng.normal(size=n)
        y = 0.3 * x + rng.normal(size=n)
        res = scipy_stats.pearsonr(x, y)
        assert stats.pearson_p_value(float(res.statistic), n - 2) == pytest.approx(
            res.pvalue, rel=1e-9)
    assert stats.pearson_p_value(1.0, 5) == 0.0
    for r, df in ((1.5, 5), (0.5, 0), (0.5, 2.0)):
        with pytest.raises(ValueError, match="must"):
            stats.pearson_p_value(r, df)


def test_loglog_within_pearson_bad_inputs():
    with pytest.raises(ValueError, match="more runs than groups"):
        stats.loglog_within_pearson([1, 2, 3], [1, 2, 3], ["a", "a", "b"])
    with pytest.raises(ValueError, match="does not vary within"):
        stats.loglog_within_pearson([1, 2, 3, 4, 5], [7, 7, 8, 8, 8], list("aabbb"))
    with pytest.raises(ValueError, match="differ in length"):
        stats.loglog_within_pearson([1, 2], [1, 2], ["a"])
    with pytest.raises(ValueError, match="> 0"):
        stats.loglog_within_pearson([1, 2, 0, 4], [1, 2, 3, 4], list("aabb"))


def test_bad_inputs():
    h, states = two_classes()
    with pytest.raises(ValueError, match="states has shape"):
        dg.distinguishability(h, states[:, :2])
    with pytest.raises(ValueError, match="W_out"):
        dg.distinguishability(h, states, W_out=np.eye(3))
    with pytest.raises(ValueError, match="out of range"):
        dg.centroids(h, states, n_g=1)
    with pytest.raises(ValueError, match=r"\(b, L, d\)"):
        dg.centroids(h[0], states)
    for tau in (0, -1.0):
        with pytest.raises(ValueError, match="tau"):
            dg.T_cross([0.1], tau=tau)
        with pytest.raises(ValueError, match="tau"):
            dg.failure_mode([0.1], tau=tau)
    with pytest.raises(ValueError, match="per-time Q needs L=3"):
        dg.q_split(h, states, [np.eye(2)[:, :1]] * 2)
    with pytest.raises(ValueError, match="orthonormal"):
        dg.q_split(h, states, 2 * np.eye(2)[:, :1])
    model = rnn("linear_rnn", d=3)
    tokens = np.zeros((2, 5), dtype=np.int64)
    with pytest.raises(ValueError, match="'sideways'.*random, U"):
        dg.perturbation_recovery(model, tokens, 2, direction="sideways")
    with pytest.raises(ValueError, match="'first'.*last, all"):
        dg.perturbation_recovery(model, tokens, 2, layers="first")
    for t0 in (-1, 5):
        with pytest.raises(ValueError, match="t0"):
            dg.perturbation_recovery(model, tokens, t0)
    for eps in (0.0, -1e-3):
        with pytest.raises(ValueError, match="eps"):
            dg.perturbation_recovery(model, tokens, 2, eps=eps)
    with pytest.raises(ValueError, match="needs Q"):
        dg.perturbation_recovery(model, tokens, 2, direction="U")
    with pytest.raises(ValueError, match=r"Q must have shape \(D, r\)"):
        dg.perturbation_recovery(model, tokens, 2, direction="U", Q=np.eye(4)[:, :1])
    with pytest.raises(ValueError, match="t0=0"):
        dg.perturbation_recovery(model, tokens, 0)
    with pytest.raises(ValueError, match="tokens must lie"):
        dg.state_trajectory(model, tokens + 3)
    with pytest.raises(ValueError, match="length"):
        dg.state_preserving_words("S3", length=0, n=1)
    with pytest.raises(ValueError, match="level"):
        stats.bootstrap_ci([1.0, 2.0], level=1.5)
    with pytest.raises(ValueError, match="finite"):
        stats.bootstrap_ci([1.0, np.nan])
    with pytest.raises(ValueError, match="> 0"):
        stats.loglog_pearson([1, 2, 0], [1, 2, 3])


# -- the label-free q(t) ------------------------------------------------------------------
def clustered(n_per: int = 20, L: int = 5, noise: float = 0.05, seed: int = 0):
    """Three classes in 3-d around the corners of a simplex, tight clusters; the identity
    readout decodes every sample correctly."""
    rng = np.random.default_rng(seed)
    states = np.repeat(np.arange(3), n_per)[:, None].repeat(L, 1)  # (b, L)
    for i in range(L):  # a different assignment at each time
        states[:, i] = rng.permutation(states[:, i])
    h = 3.0 * np.eye(3)[states] + noise * rng.standard_normal((3 * n_per, L, 3))  # (b, L, 3)
    return h, states


@pytest.mark.parametrize("method", dg.LABEL_FREE_METHODS)
def test_label_free_q_equals_oracle_on_perfect_clusters(method):
    h, states = clustered()
    W = np.eye(3)
    labels = dg.label_free_states(h, W, method=method, n_g=3, seed=1)
    oracle = dg.distinguishability(h, states, W_out=W, n_g=3)
    free = dg.distinguishability(h, labels, W_out=W, n_g=3)
    np.testing.assert_allclose(free.q, oracle.q, rtol=1e-12)
    np.testing.assert_allclose(free.R, oracle.R, rtol=1e-12)


def test_decoded_labels_use_the_readout_bias_and_can_disagree_with_the_oracle():
    h = np.array([[[1.0, 0.0]], [[0.0, 1.0]]])  # (b=2, L=1, d=2)
    W = torch.nn.Linear(2, 2)
    with torch.no_grad():
        W.weight.copy_(torch.eye(2))
        W.bias.copy_(torch.tensor([0.0, 5.0]))  # the bias makes class 1 win everywhere
    assert dg.label_free_states(h, W).tolist() == [[1], [1]]
    assert dg.label_free_states(h, W.weight, b_out=None).tolist() == [[0], [1]]


def test_label_free_states_rejects_bad_input():
    h, _ = clustered(L=1)
    with pytest.raises(ValueError, match="unknown method 'oracle'"):
        dg.label_free_states(h, np.eye(3), method="oracle")
    with pytest.raises(ValueError, match="W_out is needed"):
        dg.label_free_states(h, None)
    with pytest.raises(ValueError, match="n_g must be a positive int"):
        dg.label_free_states(h, np.eye(3), method="clusters", n_g=0)


def test_kmeans_per_time_recovers_separated_clusters_and_is_deterministic():
    rng = np.random.default_rng(0)
    L, n_g, per = 7, 5, 40
    centres = rng.normal(size=(L, n_g, 3)) * 20  # (L, n_g, 3), far apart
    truth = np.tile(np.repeat(np.arange(n_g), per), (L, 1))  # (L, n)
    X = centres[np.arange(L)[:, None], truth] + 0.01 * rng.normal(size=(L, n_g * per, 3))
    lab = clusters.kmeans_per_time(X, n_g, seed=3, chunk=3)  # chunks of 3 slices, one of 1
    for t in range(L):  # the same partition up to renaming
        pairs = set(zip(truth[t].tolist(), lab[t].tolist()))
        assert len(pairs) == n_g and len({a for a, _ in pairs}) == len({b for _, b in pairs}) == n_g
    assert np.array_equal(lab, clusters.kmeans_per_time(X, n_g, seed=3, chunk=3))
    sub = clusters.kmeans_per_time(X, n_g, seed=3, max_fit=60)  # centres from 60 of 200 points
    for t in range(L):
        assert len(set(zip(truth[t].tolist(), sub[t].tolist()))) == n_g


def test_kmeans_per_time_matches_a_plain_lloyd_loop():
    """Numeric twin: from the same centres, one slice of the batched Lloyd equals a plain
    numpy Lloyd loop."""
    import torch

    rng = np.random.default_rng(1)
    x = rng.normal(size=(60, 2))
    C0 = x[[0, 1, 2]].copy()
    Cb, _ = clusters._lloyd(torch.from_numpy(x)[None], torch.from_numpy(C0)[None], 100)
    lab = torch.cdist(torch.from_numpy(x)[None], Cb).argmin(-1)
    C = C0.copy()
    for _ in range(100):
        ref = ((x[:, None] - C[None]) ** 2).sum(-1).argmin(1)
        C = np.stack([x[ref == j].mean(0) if (ref == j).any() else C[j] for j in range(3)])
    assert np.array_equal(lab[0].numpy(), ref)


def test_kmeans_per_time_rejects_bad_shapes():
    with pytest.raises(ValueError, match="shape"):
        clusters.kmeans_per_time(np.zeros((4, 3)), 2)
    with pytest.raises(ValueError, match="n_clusters"):
        clusters.kmeans_per_time(np.zeros((1, 4, 3)), 0)


def test_the_functions_leave_their_inputs_alone():
    """Float64 inputs are used without a copy, so no function may write into them: every
    array passed to the state diagnostics is unchanged afterwards."""
    rng = np.random.default_rng(3)
    h = rng.normal(size=(40, 7, 5))
    s = rng.integers(0, 3, size=(40, 7))
    W = rng.normal(size=(3, 5))
    Q = np.linalg.qr(rng.normal(size=(5, 2)))[0]
    q = rng.uniform(0, 1, size=7)
    before = [a.copy() for a in (h, s, W, Q, q)]
    dg.centroids(h, s, 3)
    dg.distinguishability(h, s, W_out=W, n_g=3)
    dg.q_split(h, s, Q, W_out=W, n_g=3)
    dg.q_split(h, s, [Q] * 7, n_g=3)
    dg.label_free_states(h, W, method="decoded")
    dg.label_free_states(h, W, method="clusters", n_g=3)
    dg.projector(Q)
    dg.T_cross(q)
    for a, b in zip((h, s, W, Q, q), before):
        assert np.array_equal(a, b)


def test_median_ratio_against_a_plain_loop_and_a_heavy_tail():
    """q_median(t) = median_i ||W (h - c_g)||^2 / M(t), checked with explicit loops; a few
    far-out samples move the paper's q (mean spread) and hardly the median."""
    rng = np.random.default_rng(0)
    b, L, d, n_g = 41, 3, 4, 3
    s = rng.integers(0, n_g, (b, L))
    s[:n_g, :] = np.arange(n_g)[:, None]  # every class at every time
    h = rng.standard_normal((b, L, d)) + 3.0 * s[..., None]
    W = rng.standard_normal((2, d))
    got = dg.median_ratio(h, s, W_out=W, n_g=n_g)
    for t in range(L):
        hw = h[:, t] @ W.T
        c = np.stack([hw[s[:, t] == g].mean(0) for g in range(n_g)])
        spread = [float(np.sum((hw[i] - c[s[i, t]]) ** 2)) for i in range(b)]
        M = min(float(np.sum((c[i] - c[j]) ** 2)) for i in range(n_g) for j in range(i + 1, n_g))
        assert got[t] == pytest.approx(np.median(spread) / M, rel=1e-12)
    tail = h.copy()
    tail[-2:, :, :] *= 1e3  # two words far out
    q_mean = dg.distinguishability(tail, s, W_out=W, n_g=n_g).q
    q_med = dg.median_ratio(tail, s, W_out=W, n_g=n_g)
    assert np.all(q_mean > 10 * q_med)
    assert np.isnan(dg.median_ratio(h[:, :1], np.zeros((b, 1), int), n_g=n_g)[0])  # one class


# -- the per-time statistics in blocks of times -------------------------------------------
@pytest.mark.parametrize("b,L,width,budget", [
    (7, 1, 3, 1), (7, 2, 3, 1), (7, 3, 3, 1), (7, 63, 3, 1), (5, 1000, 4, 8 * 5 * 4 * 7),
    (5, 1000, 4, 10 ** 12), (3, 0, 2, 1), (11, 64, 5, 8 * 11 * 5 * 3)])
def test_time_blocks_cover_every_time_once_and_never_one_time_alone(monkeypatch, b, L, width,
                                                                     budget):
    monkeypatch.setattr(dg, "TIME_BLOCK_BYTES", budget)
    blocks = dg._time_blocks(b, L, width)
    times = [t for blk in blocks for t in range(*blk.indices(L))]
    assert times == list(range(L))
    lengths = [blk.stop - blk.start for blk in blocks]
    assert all(n >= 2 for n in lengths) or L < 2
    fits = max(2, budget // (8 * b * width))  # the most times that fit, at least two
    assert all(n <= fits + 1 for n in lengths)  # a last single time joins the block before


@pytest.mark.parametrize("L", [1, 63, 1000])
def test_statistics_in_blocks_of_times_equal_those_of_the_whole_array(monkeypatch, L):
    """Each time's statistics read only that time's samples: computed a few times at a time
    they are those of the whole array; to the bit without a readout (and for q_split and the
    decoded labels), to rounding (a matrix product of another shape) with one."""
    rng = np.random.default_rng(L)
    b, d, n_g = 24, 5, 6
    h = rng.standard_normal((b, L, d)).cumsum(axis=1)
    s = rng.integers(0, n_g, (b, L))
    W = rng.standard_normal((n_g, d))
    Q = np.linalg.qr(rng.standard_normal((d, 2)))[0]

    def everything():
        dist, plain = dg.distinguishability(h, s, W_out=W, n_g=n_g), \
            dg.distinguishability(torch.from_numpy(h).float(), s, n_g=n_g)
        return ([dist.R, dist.M, dist.q, dist.q_sqrt, dg.median_ratio(h, s, W_out=W, n_g=n_g)],
                [plain.R, plain.M, plain.q, *dg.q_split(h, s, Q, W_out=W, n_g=n_g),
                 *dg.q_split(h, s, [Q] * L, n_g=n_g),
                 dg.label_free_states(h, W, 0.1 * np.arange(n_g), method="decoded")])

    monkeypatch.setattr(dg, "TIME_BLOCK_BYTES", 10 ** 12)
    close_whole, exact_whole = everything()
    monkeypatch.setattr(dg, "TIME_BLOCK_BYTES", 8 * b * 3 * d * 3)  # a few times per block
    assert len(dg._time_blocks(b, L, 3 * d)) == max(1, L // 3)  # q_split's: 3 times each
    close_blocks, exact_blocks = everything()
    for whole, blocks in zip(exact_whole, exact_blocks):
        np.testing.assert_array_equal(whole, blocks)
    for whole, blocks in zip(close_whole, close_blocks):
        np.testing.assert_allclose(whole, blocks, rtol=1e-13, atol=0)


def test_the_statistics_of_many_classes_stay_within_the_block_budget(monkeypatch):
    """The readout of a 60-class group (A5) made the whole-array working set (b, L, 60)
    several times the states themselves; in blocks the peak is the budget's order."""
    import tracemalloc

    rng = np.random.default_rng(0)
    b, L, d, n_g = 256, 200, 8, 60
    h = rng.standard_normal((b, L, d))  # 3.3 MB
    s = rng.integers(0, n_g, (b, L))
    W = rng.standard_normal((n_g, d))
    whole = 8 * b * L * n_g  # 24.6 MB: one (b, L, 60) float64 array
    monkeypatch.setattr(dg, "TIME_BLOCK_BYTES", 2 * 2 ** 20)
    for f in (lambda: dg.distinguishability(h, s, W_out=W, n_g=n_g),
              lambda: dg.median_ratio(h, s, W_out=W, n_g=n_g),
              lambda: dg.label_free_states(h, W, method="decoded")):
        tracemalloc.start()
        f()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < whole / 3, f"peak {peak / 2 ** 20:.1f} MiB"
