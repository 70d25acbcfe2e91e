"""Spectra of learned transitions and return maps (sst_core.analysis.spectra) on constructed models
with known Jacobians, the memory-function wrapper on spectra with known memory, and
run_spectra end to end at smoke size."""
import json

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from sst_core.analysis import spectra
from sst_core.analysis.return_map import return_map_jacobian
from sst_core.experiments.runs import run
from sst_core.figures import spectra as plots_spectra
from sst_core.figures.common import PAGE_WIDTH
from sst_core.spec.names import MODEL_NAMES
from sst_core.models import build  # noqa: E402
from sst_core.spec.configs import SpectraConfig, TrackingConfig, config_dict
from sst_core.theory.memory import memory_function  # noqa: E402


def words(b, L, n_tokens=3, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).integers(0, n_tokens, size=(b, L)))


def sorted_eigs(mu):
    mu = np.asarray(mu, dtype=complex)
    return mu[np.lexsort((np.round(mu.imag, 9), np.round(mu.real, 9)))]


# -- step Jacobians ----------------------------------------------------------------------

def test_linear_rnn_jacobian_is_W_h_everywhere(one_thread):
    W = torch.tensor([[0.5, -0.6, 0.0, 0.2],
                      [0.6, 0.5, 0.0, 0.0],
                      [0.0, 0.0, 0.9, 0.1],
                      [0.0, 0.0, 0.0, -0.3]])  # eigenvalues 0.5 +- 0.6i, 0.9, -0.3
    model = build("linear_rnn", 3, 3, d_state=4)
    with torch.no_grad():
        model.layers[0].W_h.copy_(W)
    J = spectra.step_jacobians(model, words(2, 5))
    assert J.shape == (2, 5, 4, 4) and J.dtype == torch.float64
    W64 = W.double()  # the float32 values, exactly
    assert torch.allclose(J, W64.expand_as(J), atol=0, rtol=0)
    mu = spectra.eigenvalues(J[1, 3])
    np.testing.assert_allclose(sorted_eigs(mu), sorted_eigs(np.linalg.eigvals(W64.numpy())),
                               atol=1e-12)
    np.testing.assert_allclose(sorted_eigs(mu), sorted_eigs([0.5 + 0.6j, 0.5 - 0.6j, 0.9, -0.3]),
                               atol=1e-6)


def test_token_gated_jacobian_is_gate_times_W_h(one_thread):
    torch.manual_seed(1)
    model = build("token_gated_rnn", 3, 3, d_state=6)
    x = words(2, 7, seed=1)
    J = spectra.step_jacobians(model, x)  # (2, 7, 6, 6)
    cell = model.layers[0]
    W_h, W_g, b_g = (p.detach().double() for p in (cell.W_h, cell.W_g, cell.b_g))
    for i in range(2):
        for t in range(7):
            gate = torch.sigmoid(W_g[:, x[i, t]] + b_g)  # (d,): sigma(W_g e(x_t) + b_g)
            torch.testing.assert_close(J[i, t], gate[:, None] * W_h, atol=1e-14, rtol=0)


@pytest.mark.parametrize("name", ["mamba", "negative_mamba"])
def test_mamba_jacobian_is_diagonal_exp_dt_A(name, one_thread):
    torch.manual_seed(2)
    model = build(name, 3, 3, d_model=4, d_state=3)
    x = words(2, 6, seed=2)
    J = spectra.step_jacobians(model, x)  # (2, 6, E N, E N)
    layer = model.layers[0]
    E, N = layer.d_inner, 3
    assert J.shape == (2, 6, E * N, E * N)
    off = J - torch.diag_embed(torch.diagonal(J, dim1=-2, dim2=-1))
    assert off.abs().max() == 0  # diagonal: no channel or state reads another
    m = spectra.float64_copy(model)
    lay = m.layers[0]
    with torch.no_grad():
        u = m.norms[0](m._input(x))  # (b, L, D): the normed block input
        xc, _ = lay.in_proj(u).chunk(2, -1)
        xc = torch.nn.functional.silu(lay.conv.outputs(xc, None))  # (b, L, E)
        dt, A, _, _ = lay._coefficients(xc)  # (b, L, E), (E, N)
        a = torch.exp(dt[..., None] * A)  # (b, L, E, N)
        if name == "negative_mamba":
            a = 2 * a - 1
    torch.testing.assert_close(torch.diagonal(J, dim1=-2, dim2=-1), a.flatten(2),
                               atol=1e-13, rtol=0)


def test_step_jacobians_reject_bad_inputs():
    model = build("linear_rnn", 3, 3, d_state=4)
    with pytest.raises(ValueError, match="h0 must have shape"):
        spectra.step_jacobians(model, words(2, 3), h0=torch.zeros(2, 5))
    with pytest.raises(ValueError, match="tokens must lie"):
        spectra.step_jacobians(model, torch.tensor([[0, 7]]))


# -- return maps: the product of the step Jacobians is the return map's Jacobian -----------

def _state_after(model, prefix):
    h = spectra.float64_copy(model).init_state(1)
    m = spectra.float64_copy(model)
    with torch.no_grad():
        for tok in prefix:
            h = m.step(h, torch.tensor([tok]))
    return h[0]  # (D,)


def _product(J):  # (L, D, D) -> J_L ... J_1
    P = J[0]
    for t in range(1, J.shape[0]):
        P = J[t] @ P
    return P


@pytest.mark.parametrize("name", ["token_gated_rnn", "mamba"])
def test_return_map_jacobian_is_product_of_steps_for_affine(name, one_thread):
    torch.manual_seed(3)
    model = build(name, 3, 3, d_model=4, d_state=3)
    word = [1, 2, 0, 1, 2]
    h = _state_after(model, [2, 1, 1, 0])
    J_s = return_map_jacobian(spectra.float64_copy(model), word, h)
    steps = spectra.step_jacobians(model, torch.tensor([word]), h0=h[None])[0]
    torch.testing.assert_close(J_s, _product(steps), atol=1e-13, rtol=0)
    # affine: the same product from another state (same recent tokens for the conv window)
    h2 = _state_after(model, [0, 0, 2, 1, 1, 0])
    J_s2 = return_map_jacobian(spectra.float64_copy(model), word, h2)
    torch.testing.assert_close(J_s2, J_s, atol=1e-13, rtol=0)


def test_return_map_of_tanh_rnn_depends_on_the_state(one_thread):
    torch.manual_seed(4)
    model = build("tanh_rnn", 3, 3, d_state=5)
    with torch.no_grad():
        model.layers[0].W_h.mul_(3.0)  # leave the linear regime of tanh
    word = [1, 2, 0]
    h = _state_after(model, [2, 1])
    h2 = _state_after(model, [0, 0, 1, 2])
    J_s = return_map_jacobian(spectra.float64_copy(model), word, h)
    at_h = _product(spectra.step_jacobians(model, torch.tensor([word]), h0=h[None])[0])
    at_h2 = _product(spectra.step_jacobians(model, torch.tensor([word]), h0=h2[None])[0])
    torch.testing.assert_close(J_s, at_h, atol=1e-13, rtol=0)  # chain rule
    assert (J_s - at_h2).abs().max() > 1e-3  # state-dependent


# -- eigenvalues and summaries -------------------------------------------------------------

def test_block_eigenvalues_match_numpy():
    rng = np.random.default_rng(5)
    D = 9
    J = np.triu(rng.normal(size=(D, D)), 1)  # couplings one way only
    for lo, hi in ((0, 1), (1, 4), (4, 6), (6, 9)):  # diagonal blocks of sizes 1, 3, 2, 3
        J[lo:hi, lo:hi] = rng.normal(size=(hi - lo, hi - lo))
    perm = rng.permutation(D)
    J = J[perm][:, perm]  # hide the block structure
    stack = np.stack([J, 0.5 * J])  # (2, D, D): the same pattern
    mu = spectra.eigenvalues(stack)
    assert mu.shape == (2, D)
    for k in range(2):
        np.testing.assert_allclose(sorted_eigs(mu[k]), sorted_eigs(np.linalg.eigvals(stack[k])),
                                   atol=1e-10)
    dense = rng.normal(size=(6, 6))
    np.testing.assert_allclose(sorted_eigs(spectra.eigenvalues(torch.from_numpy(dense))),
                               sorted_eigs(np.linalg.eigvals(dense)), atol=1e-10)


def test_near_unit_counts_on_a_hand_made_spectrum():
    mu = np.array([1.0, 0.995, -1.0, 0.5, 0.999j, 1.2, 0.99 + 0.0j])
    assert spectra.near_unit(mu, eps=0.01) == pytest.approx(4 / 7)  # 1, 0.995, -1, 0.999i
    assert spectra.n_near_one(mu, eps=0.01) == 2  # 1 and 0.995 (0.99 is 0.01 away: not <)
    assert spectra.n_near_one(mu, eps=0.02) == 3
    assert spectra.spectral_radius(mu) == pytest.approx(1.2)
    assert spectra.horizon([1.0, 0.9, 0.6, 0.4, 0.7]) == 3
    assert spectra.horizon([0.8, 0.6]) is None


# -- memory functions --------------------------------------------------------------------

def test_memory_of_a_single_real_eigenvalue():
    mu, T = 0.9, 50
    taus = np.array([0, 1, 7, 49])
    ours = spectra.memory_of_spectrum([mu], T, taus)
    np.testing.assert_allclose(ours, memory_function([mu], T, taus), atol=1e-14)
    closed = mu ** (2 * taus) * (1 - mu ** 2) / (1 - mu ** (2 * T))  # v^2 / ||v||^2
    np.testing.assert_allclose(ours, closed, rtol=1e-12)
    assert spectra.memory_of_spectrum([mu], T, 7) == pytest.approx(closed[2], rel=1e-12)


def test_memory_reduction_steps():
    T = 40
    # |mu| > 1 is moved onto the unit circle: mu = 1 remembers 1/T at every delay
    d = spectra.memory_details([1.2], T)
    assert d["n_outside"] == 1
    np.testing.assert_allclose(d["memory"], 1 / T, atol=1e-14)
    # fast modes collapse to one mode at 0: the impulse at delay 0
    d = spectra.memory_details([0.05, 0.03, -0.02], T)
    assert d["n_fast"] == 3 and d["n_modes"] == 1 and d["horizon"] == 1
    np.testing.assert_allclose(d["memory"], np.eye(T)[0], atol=1e-14)
    # without the merge the spectrum is used as given
    d = spectra.memory_details([0.05], T, r_fast=0.0)
    np.testing.assert_allclose(d["memory"], memory_function([0.05], T), atol=1e-14)
    # a large conjugate-closed spectrum is capped, pairs kept together, slowest mode kept
    rng = np.random.default_rng(6)
    z = np.sqrt(rng.uniform(0.04, 0.8, 40)) * np.exp(1j * rng.uniform(0.1, 3.0, 40))
    mu = np.concatenate([z, z.conj(), [0.97, 0.5, -0.4]])  # 83 eigenvalues
    kept = spectra._farthest_point(mu, 16)
    assert len(kept) <= 16 and 0.97 in kept
    assert np.allclose(sorted_eigs(kept), sorted_eigs(kept.conj()))
    d = spectra.memory_details(mu, T, max_modes=16)
    assert d["reduced"] and d["n_modes"] <= 16
    assert d["capacity"] == pytest.approx(d["n_modes"], abs=1e-8)  # sum rule


def test_state_units_follow_the_layouts():
    mamba = build("mamba", 3, 3, d_model=4, d_state=3)  # E = 8 channels of N = 3
    units = spectra.state_units(mamba)
    assert len(units) == 8 and all(len(u) == 3 for u in units)
    np.testing.assert_array_equal(units[2], [6, 7, 8])
    aussm = build("aussm", 3, 3, d_model=4, d_state=3)  # [Re; Im] x 4 channels x 3 states
    units = spectra.state_units(aussm)
    assert len(units) == 4
    np.testing.assert_array_equal(units[1], [3, 4, 5, 15, 16, 17])
    assert [len(u) for u in spectra.state_units(build("linear_rnn", 3, 3, d_state=5))] == [5]
    deep = build("mamba", 3, 3, d_model=4, d_state=3, n_layers=2)
    units = spectra.state_units(deep)
    assert len(units) == 16 and units[8][0] == 24  # layer 2 starts after layer 1's 24 entries
    # a block of the Jacobian that straddles two units makes the whole state one unit
    assert len(spectra._consistent_units(units[:2], [np.array([0, 3])], 6)) == 1
    assert len(spectra._consistent_units(units[:2], [np.array([0, 1])], 6)) == 2


# -- the record ------------------------------------------------------------------------------

def tiny(model, **kw) -> TrackingConfig:
    base = dict(model=model, group="S3", n_layers=1, d_model=8, d_state=8, lr=1e-2, seed=0,
                profile="smoke", batch=16, max_steps=3, steps_per_epoch=1,
                curriculum_patience=1, eval_lengths=(60, 100), eval_samples=16)
    base.update(kw)
    return TrackingConfig(**base)


def _finite(x) -> bool:
    if isinstance(x, dict):
        return all(_finite(v) for v in x.values())
    if isinstance(x, list):
        return all(_finite(v) for v in x)
    return x is None or isinstance(x, (str, bool)) or np.isfinite(x)


@pytest.mark.parametrize("model,n_layers", [("mamba", 1), ("tanh_rnn", 2)])
def test_run_spectra_smoke(model, n_layers, tmp_path, monkeypatch, one_thread):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    cfg = SpectraConfig(run=tiny(model, n_layers=n_layers), n_words=2, word_length=12,
                        n_preserving=2, preserving_length=4, mem_T=64)
    run(cfg.run)  # the tracker first: an analysis only loads it
    m = spectra.run_spectra(cfg)
    text = json.dumps(m, allow_nan=False)  # JSON-ready: no NaN, no numpy types
    assert len(text) < 200_000 and _finite(json.loads(text))
    assert m["model"] == model and m["n_layers"] == n_layers
    affine = model == "mamba"
    assert m["is_affine"] is affine and m["linearised"] is (not affine or n_layers > 1)
    assert 0 <= m["dim_U"] <= 5 and m["D_rec"] > 0
    assert [t["token"] for t in m["tokens"]] == [0, 2, 3]  # S3: identity + two generators
    for t in m["tokens"]:
        if t["n_positions"]:
            assert len(t["memory_median"]) == len(m["delay"]) and t["radius_median"] > 0
            assert 0 <= t["near_unit_median"] <= 1 and len(t["eig_re"]) == len(t["eig_im"])
    rm = m["return_maps"]
    assert len(rm["n_near_one"]) == 2 and len(rm["memory_median"]) == 2
    assert rm["T"] == 64 // 4 and len(rm["memory_median"][0]) == len(m["return_delay"])
    assert all(0 <= n <= m["D_rec"] for n in rm["n_near_one"])
    if affine:
        assert rm["n_units"] == 16  # Mamba's channels (d_inner = 16), none coupled
    assert list(tmp_path.iterdir())  # the training run went to the temporary store
    # the chapter's figures render from records alone, titled in words, with the papers' names
    record = {"status": "ok", "config": json.loads(json.dumps(config_dict(cfg))),
              "metrics": json.loads(text)}
    for records in ([record], []):
        for fig in (plots_spectra.fig_spectra(records), plots_spectra.fig_memory(records)):
            assert fig._suptitle.get_text() and "profile" not in fig._suptitle.get_text()
            assert fig.get_figwidth() <= PAGE_WIDTH
            titles = [ax.get_title() for ax in fig.axes]
            assert any(MODEL_NAMES[model] in t for t in titles) is bool(records)
            matplotlib.pyplot.close(fig)


def test_failed_units_are_left_out_of_the_summary(monkeypatch):
    real = spectra.memory_details

    def flaky(mu, T, **kw):  # the unit holding 0.5 "does not converge"
        if np.any(np.isclose(np.asarray(mu), 0.5)):
            return {**real([0.9], T), "memory": np.full(T, np.nan), "tol": None,
                    "horizon": None, "capacity": float("nan")}
        return real(mu, T, **kw)

    monkeypatch.setattr(spectra, "memory_details", flaky)
    eig = np.array([0.9, 0.8, 0.5, 0.3])
    units = [np.array([0, 1]), np.array([2, 3])]
    grid = np.arange(10)
    out = spectra._unit_memory(eig, units, 10, grid, {})
    good = real(np.array([0.8, 0.9]), 10)
    assert out["n_failed"] == 1 and out["horizon_median"] == good["horizon"]
    np.testing.assert_allclose(out["memory_median"], good["memory"], rtol=1e-4)
    json.dumps(out, allow_nan=False)
