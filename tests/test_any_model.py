"""The error-control diagnostics on anyone's model (sst_core.analysis.any_model): a
constructed affine map for which Theorem 1 holds exactly, a contracting tanh map, raw
torch GRU / LSTM modules against the registry's torch_gru / torch_lstm and diagnose(cfg)
with the same weights, bad inputs, and diagnose(cfg)'s outputs pinned across the refactor
that gave it and diagnose_any one core."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from sst_core.analysis.any_model import (
    AFFINE_RTOL,
    ForeignTracker,
    as_tracker,
    diagnose_any,
    estimate_affine,
)
from sst_core.analysis.diagnostics import state_trajectory
from sst_core.analysis.error_control import diagnose
from sst_core.analysis.return_map import NORMS
from sst_core.analysis.trackers import load_tracker
from sst_core.experiments import runs as experiments_runs
from sst_core.groups import get_group
from sst_core.models import build
from sst_core.models.torch_rnn import torch_module
from sst_core.spec.configs import DiagnosticsConfig, TrackingConfig
from sst_core.store.codec import curve_value, encode_curve, encode_floats, stored_curve

pytestmark = pytest.mark.usefixtures("one_thread")

SMALL = dict(n_samples=64, rollout=100, t0=30, perturb_steps=30, n_perturb=16, n_words=4)
CURVES = ("R", "M", "q", "q_sqrt", "q_median", "q_U", "q_U_perp", "q_U_identity",
          "q_U_perp_identity")


# -- constructed maps --------------------------------------------------------------------------
def permutation_map(group: str = "S3", D: int = 8, kappa: float = 0.5, seed: int = 0):
    """h -> A_x h on R^D with centroids c_g = O e_g (O: D x |G|, orthonormal columns):
    A_x = O P_x O^T + kappa (I - O O^T) with P_x e_g = e_{g x}, so A_x c_g = c_{g x}
    exactly, A_x is orthogonal on U = span{c_g - c_e} and contracts its complement."""
    g = get_group(group)
    n = g.order
    O = np.linalg.qr(np.random.default_rng(seed).standard_normal((D, n)))[0]  # (D, n)
    P = np.zeros((n, n, n))  # P[x] (n, n): the right action of x
    for x in range(n):
        P[x, g.table[:, x], np.arange(n)] = 1.0
    A = np.stack([O @ P[x] @ O.T + kappa * (np.eye(D) - O @ O.T) for x in range(n)])
    A_t = torch.from_numpy(A)  # (n, D, D)

    def step(h, x):  # h (b, D), x (b,)
        return torch.einsum("bij,bj->bi", A_t.to(h)[x], h)  # (b, D)

    return g, step, torch.from_numpy(O[:, g.identity]), O  # h0 = c_e


class TanhMap(nn.Module):
    """h -> tanh(W h + V e(x)) with ||W|| = 0.1: a contraction."""

    def __init__(self, n_tokens: int = 6, D: int = 6, seed: int = 0):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.W = nn.Parameter(0.1 * torch.linalg.qr(torch.randn(D, D, generator=gen))[0])
        self.V = nn.Parameter(torch.randn(D, n_tokens, generator=gen))
        self.n_tokens = n_tokens

    def init_state(self, b: int) -> torch.Tensor:
        return torch.zeros(b, self.W.shape[0], dtype=self.W.dtype)

    def step(self, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(h @ self.W.T + self.V.T[x])  # (b, D)


def test_an_affine_map_fixing_the_centroids_satisfies_theorem1_exactly():
    g, step, h0, O = permutation_map()
    out = diagnose_any(step, g, h0=h0, n_tokens=g.order, **SMALL)
    assert out["is_affine"] and out["is_affine_source"] == "estimated"
    assert out["affine_estimate"]["affine"]
    assert out["affine_estimate"]["max_relative_difference"] <= AFFINE_RTOL
    t1 = out["theorem1"]
    assert t1["applies"] and t1["dim_U"] == g.order - 1  # U: the simplex's directions
    assert t1["deviation"] == pytest.approx(0, abs=1e-12)  # return maps are I on U
    assert t1["deviation_U"] == pytest.approx(0, abs=1e-12)
    assert t1["gain"] == pytest.approx(1, abs=1e-12)
    assert t1["amplification"] == pytest.approx(1, abs=1e-12)
    assert t1["return_residual"] == pytest.approx(0, abs=1e-12)  # states are the centroids
    # every state is its class's centroid: no spread, q = 0, never a crossing
    assert np.all(out["q"] < 1e-25) and out["T_cross"] is None and out["T_cross_1"] is None
    assert out["failure_mode"] == "none"
    np.testing.assert_allclose(out["M"], 2.0, rtol=1e-12)  # ||e_g - e_g'||^2
    # errors along U are never contracted; off U, kappa^k of them goes
    np.testing.assert_allclose(out["recovery"]["U"], 1.0, rtol=1e-12)
    assert len(out["recovery"]["random"]) == SMALL["perturb_steps"]
    assert np.all(np.diff(out["recovery"]["random"]) <= 1e-12)


def test_a_contracting_tanh_map_has_gain_below_one_and_is_not_affine():
    out = diagnose_any(TanhMap(), "S3", **SMALL)
    assert out["model"] == "TanhMap" and out["state_size"] == 6
    assert not out["is_affine"] and out["is_affine_source"] == "estimated"
    assert out["affine_estimate"]["max_relative_difference"] > 1e-3
    t1 = out["theorem1"]
    assert not t1["applies"] and t1["dim_U"] >= 1
    # ||J|| <= 0.1^6 over a word of 6 tokens: the return map contracts U
    assert t1["gain"] < 1e-5 and t1["amplification"] < 1e-5
    assert t1["deviation"] == pytest.approx(1, abs=1e-5)  # J ~ 0: ||(J - I) Q|| ~ 1
    assert [len(w) for w in (t1["per_word"],)] == [SMALL["n_words"]]
    assert set(NORMS) <= set(t1["per_word"][0])
    assert out["recovery"]["random"][0] < 0.1 and out["recovery"]["random"][-1] < 1e-20
    # it forgets within a few tokens, so the classes merge: q crosses 1/2 at once
    assert out["T_cross"] == 2 and out["failure_mode"] == "saturation"


def test_is_affine_given_is_used_and_the_estimate_still_reported():
    out = diagnose_any(TanhMap(), "S3", is_affine=True, **SMALL)
    assert out["is_affine"] and out["is_affine_source"] == "given"
    assert not out["affine_estimate"]["affine"] and out["theorem1"]["applies"]


@pytest.mark.parametrize("name", ["linear_rnn", "token_gated_rnn", "negative_mamba", "mamba3",
                                  "tanh_rnn", "state_gated_rnn", "torch_gru", "torch_lstm"])
def test_estimate_affine_agrees_with_the_registry(name):
    """At the initial state and at states reached on two words (whose conv windows differ:
    each state is compared with moves of itself, windows held)."""
    torch.manual_seed(0)
    model = build(name, 6, 6, d_model=8, d_state=4, n_layers=1)
    with torch.no_grad():  # off the init (U_g = 0 makes the state gate affine there)
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    reached = state_trajectory(model, torch.randint(0, 6, (2, 9)))[:, -1]  # (2, D)
    for states in (None, reached):
        est = estimate_affine(model, np.arange(6), states, seed=1)
        assert est["affine"] == model.is_affine, (name, est)
        assert (est["max_relative_difference"] <= AFFINE_RTOL) == model.is_affine


def test_a_readout_sets_the_metric_of_q():
    """q is read in the readout's metric: a matrix and an nn.Linear with that weight give
    the same q, the identity (the state itself) another."""
    g, step, h0, O = permutation_map()
    W = np.random.default_rng(1).standard_normal((3, 8))  # (n_classes, D)
    head = nn.Linear(8, 3).double()
    with torch.no_grad():
        head.weight.copy_(torch.from_numpy(W))

    def noisy(h, x):  # no longer exact: the states spread around the centroids
        return step(h, x) + 0.01 * torch.sin(7 * h)

    a = diagnose_any(noisy, g, h0=h0, n_tokens=6, readout=W, **SMALL)
    b = diagnose_any(noisy, g, h0=h0, n_tokens=6, readout=head, **SMALL)
    c = diagnose_any(noisy, g, h0=h0, n_tokens=6, **SMALL)
    for k in ("R", "M", "q"):
        np.testing.assert_allclose(a[k], b[k], rtol=1e-12)
    assert c["q"][1:].max() > 0 and not np.allclose(a["q"][1:], c["q"][1:])


# -- raw torch modules against the registry ---------------------------------------------------
def raw_copy(model, kind: type[nn.RNNBase]):
    """The plain multi-layer torch module of a registry model and an nn.Linear head with
    its readout's weights."""
    raw = torch_module(model)
    assert type(raw) is kind and raw.num_layers == len(model.layers)
    head = nn.Linear(raw.hidden_size, model.n_classes).to(model.W_out.weight.dtype)
    head.load_state_dict(model.W_out.state_dict())
    return raw, head


def same(a: dict, b: dict, rtol: float = 1e-6) -> None:
    """q(t), the other curves, the crossings, the recovery and Theorem 1's numbers agree."""
    for k in CURVES:
        np.testing.assert_allclose(a[k], b[k], rtol=rtol, atol=1e-12, err_msg=k)
    for k in ("T_cross", "T_cross_1", "T_cross_sqrt", "T_cross_sqrt_1", "failure_mode",
              "dim_U_readout"):
        assert a[k] == b[k], k
    for k in ("random", "U"):
        np.testing.assert_allclose(a["recovery"][k], b["recovery"][k], rtol=rtol, atol=1e-12)
    for k in (*NORMS, "dim_U", "applies"):
        assert a["theorem1"][k] == pytest.approx(b["theorem1"][k], rel=rtol, abs=1e-12), k


@pytest.mark.parametrize("name,kind", [("torch_gru", nn.GRU), ("torch_lstm", nn.LSTM)])
@pytest.mark.parametrize("n_layers", [1, 2])
def test_a_raw_torch_rnn_gives_the_registry_models_numbers(name, kind, n_layers):
    torch.manual_seed(0)
    model = build(name, 6, 6, d_state=6, n_layers=n_layers)
    raw, head = raw_copy(model, kind)
    a = diagnose_any(model, "S3", **SMALL)
    b = diagnose_any(raw, "S3", readout=head, **SMALL)
    assert a["is_affine_source"] == "registry" and b["is_affine_source"] == "estimated"
    assert a["is_affine"] is b["is_affine"] is False
    assert a["n_layers"] == b["n_layers"] == n_layers and a["state_size"] == b["state_size"]
    same(a, b)
    # the adapter's step (torch's formulas) continues the fused module's states
    tracker = as_tracker(raw, readout=head)
    tok = torch.randint(0, 6, (3, 40), generator=torch.Generator().manual_seed(0))
    fused = tracker.hidden_states(tok)[0]  # (3, 40, H)
    stepped = tracker.features(state_trajectory(tracker, tok))  # (3, 40, H)
    torch.testing.assert_close(fused, stepped, rtol=1e-5, atol=1e-6)


def test_an_embedding_input_equals_its_one_hot_fold():
    """GRU(E[x]) is GRU'(one_hot(x)) with W_ih' = W_ih E^T."""
    torch.manual_seed(0)
    E = nn.Embedding(6, 3)
    gru = nn.GRU(3, 5).double()  # sequence first: the adapter transposes
    folded = nn.GRU(6, 5, batch_first=True).double()
    with torch.no_grad():
        folded.load_state_dict({**gru.state_dict(),
                                "weight_ih_l0": gru.weight_ih_l0 @ E.weight.double().T})
    a = diagnose_any(gru, "S3", embedding=E, **SMALL)
    b = diagnose_any(folded, "S3", **SMALL)
    same(a, b, rtol=1e-9)


def tiny_run(model: str, **kw) -> TrackingConfig:
    base = dict(model=model, group="S3", n_layers=1, d_model=8, d_state=8, lr=1e-2, seed=0,
                profile="smoke", batch=16, max_steps=3, steps_per_epoch=1,
                curriculum_patience=1, eval_lengths=(60, 100), eval_samples=16)
    return TrackingConfig(**{**base, **kw})


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    return tmp_path


def diagnostics(run: TrackingConfig) -> DiagnosticsConfig:
    return DiagnosticsConfig(run=run, n_samples=24, rollout=80, t0=20, perturb_steps=30,
                             n_perturb=8, n_words=3, profile="smoke")


def any_options(cfg: DiagnosticsConfig) -> dict:
    """diagnose_any's options for the words and checks of ``cfg``."""
    return dict(tokens=cfg.run.tokens, n_samples=cfg.n_samples, rollout=cfg.rollout,
                t_ref=cfg.t_ref, t0=cfg.t0, eps=cfg.eps, perturb_steps=cfg.perturb_steps,
                n_perturb=cfg.n_perturb, word_length=cfg.word_length, n_words=cfg.n_words,
                tau=cfg.tau, seed=cfg.seed, t_train=cfg.run.curriculum_max)


def encoded(out: dict) -> dict:
    """The curves and recovery of ``out`` as a record stores them."""
    return {**{k: encode_curve(out[k]) for k in CURVES},
            "recovery": {k: encode_floats(v) for k, v in out["recovery"].items()}}


@pytest.mark.parametrize("name,kind", [("torch_gru", nn.GRU), ("torch_lstm", nn.LSTM)])
def test_diagnose_of_a_trained_torch_rnn_equals_diagnose_any_of_the_raw_module(store, name,
                                                                                 kind):
    """The registry's path (a trained tracker, its record, diagnose(cfg)) and the entry
    point on a raw nn.GRU / nn.LSTM carrying the trained weights give the same numbers."""
    cfg = diagnostics(tiny_run(name))
    experiments_runs.run(cfg.run)
    rec = diagnose(cfg)
    _, model = load_tracker(cfg.run)
    raw, head = raw_copy(model, kind)
    out = diagnose_any(raw, "S3", readout=head, **any_options(cfg))
    enc = encoded(out)
    for k in CURVES:
        np.testing.assert_allclose(np.array(enc[k], float), np.array(rec[k], float),
                                   rtol=1e-4, err_msg=k)
    for k in ("random", "U"):
        np.testing.assert_allclose(enc["recovery"][k], rec["recovery"][k], rtol=1e-4)
    for k in ("T_cross", "T_cross_1", "T_cross_sqrt", "T_cross_sqrt_1", "failure_mode",
              "dim_U_readout", "recovery_t0"):
        assert out[k] == rec[k], k
    for k in (*NORMS, "dim_U", "applies"):
        assert out["theorem1"][k] == pytest.approx(rec["theorem1"][k], rel=1e-6), k
    # and on the loaded registry model itself: one core, the very same numbers
    same_model = diagnose_any(model, "S3", **any_options(cfg))
    assert encoded(same_model) == {k: rec[k] for k in (*CURVES, "recovery")}
    assert same_model["theorem1"] == rec["theorem1"]


# -- diagnose(cfg) across the refactor ----------------------------------------------------------
# computed with diagnose() as it was before error_control_measures existed (the same tiny
# trackers, trained for 3 steps on this configuration): the refactor changed no output
PINNED = {
    "tanh_rnn": dict(T_cross=2, failure_mode="saturation", q9=3.5246, q79=7.199, M59=0.01602,
                     qU30=3.4045, dim_U_readout=5, rec_random=0.03022, rec_U=0.023718,
                     deviation=0.9120272193184721, gain=0.4697637390753347, dim_U=3,
                     applies=False),
    "negative_mamba": dict(T_cross=2, failure_mode="saturation", q9=2.487, q79=34.788,
                           M59=0.31408, qU30=7.0515, dim_U_readout=5, rec_random=0.3411,
                           rec_U=0.13077, deviation=0.906431959301209,
                           gain=0.3756388729767795, dim_U=3, applies=True),
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_diagnose_outputs_are_pinned(store, name):
    cfg = diagnostics(tiny_run(name))
    experiments_runs.run(cfg.run)
    m = diagnose(cfg)
    want = PINNED[name]
    assert list(m) == ["model", "is_affine", "m_p", "training_run", "T_cross", "T_cross_1",
                       "T_cross_sqrt", "T_cross_sqrt_1", "failure_mode", "q_at_m_p",
                       "q_sqrt_at_m_p", "q_median_at_m_p", "curve_t", "R", "M", "q", "q_sqrt",
                       "q_median", "q_U", "q_U_perp",
                       "q_U_identity", "q_U_perp_identity", "dim_U_readout", "recovery",
                       "recovery_t0", "theorem1"]
    assert m["model"] == name and m["recovery_t0"] == 20 and m["m_p"] is None
    for k in ("T_cross", "failure_mode", "dim_U_readout"):
        assert m[k] == want[k], k
    def at(key, t):  # the stored curve at time t (on the stored grid: exact)
        times, y = stored_curve(m, key)
        assert t in times
        return curve_value(times, y, t)

    got = {"q9": at("q", 10), "q79": at("q", 80), "M59": at("M", 60), "qU30": at("q_U", 31),
           "rec_random": m["recovery"]["random"][-1], "rec_U": m["recovery"]["U"][-1],
           "deviation": m["theorem1"]["deviation"], "gain": m["theorem1"]["gain"]}
    for k, v in got.items():
        assert v == pytest.approx(want[k], rel=1e-4), k
    assert m["theorem1"]["dim_U"] == want["dim_U"]
    assert m["theorem1"]["applies"] is want["applies"]


# -- bad inputs -------------------------------------------------------------------------------
def test_bad_inputs_name_the_value():
    g, step, h0, _ = permutation_map()
    with pytest.raises(ValueError, match=r"h0 must have shape \(D,\).*\(1, 8\)"):
        diagnose_any(step, g, h0=h0[None], n_tokens=6, **SMALL)
    with pytest.raises(ValueError, match=r"shape \(b, D\) = \(2, 8\), got \(2, 4\)"):
        diagnose_any(lambda h, x: h[:, :4], g, h0=h0, n_tokens=6, **SMALL)
    with pytest.raises(ValueError, match="dtype torch.float32 for h of dtype torch.float64"):
        diagnose_any(lambda h, x: h.float(), g, h0=h0, n_tokens=6, **SMALL)
    with pytest.raises(ValueError, match="'Q9'"):
        diagnose_any(step, "Q9", h0=h0, n_tokens=6, **SMALL)
    with pytest.raises(ValueError, match=r"ids up to 5.*n_tokens=3"):
        diagnose_any(lambda h, x: h, g, h0=h0, n_tokens=3, tokens="all", **SMALL)
    with pytest.raises(ValueError, match="'some'"):
        diagnose_any(step, g, h0=h0, n_tokens=6, tokens="some", **SMALL)
    with pytest.raises(ValueError, match="h0, the initial state"):
        diagnose_any(step, g, n_tokens=6, **SMALL)
    with pytest.raises(ValueError, match="n_tokens, how many"):
        diagnose_any(step, g, h0=h0, **SMALL)
    with pytest.raises(ValueError, match="n_tokens must be a positive int, got 0"):
        diagnose_any(step, g, h0=h0, n_tokens=0, **SMALL)
    with pytest.raises(ValueError, match=r"readout must be .*d=8.*\(3, 5\)"):
        diagnose_any(step, g, h0=h0, n_tokens=6, readout=np.zeros((3, 5)), **SMALL)
    with pytest.raises(ValueError, match=r"recurrent_mask .*\(8,\)"):
        diagnose_any(step, g, h0=h0, n_tokens=6, recurrent_mask=np.ones(7, bool), **SMALL)
    with pytest.raises(ValueError, match="t_ref=60 and t0=100"):
        diagnose_any(step, g, h0=h0, n_tokens=6, **{**SMALL, "t0": 100})
    with pytest.raises(ValueError, match=r"is_affine must be True, False or None .*got 'yes'"):
        diagnose_any(step, g, h0=h0, n_tokens=6, is_affine="yes", **SMALL)
    with pytest.raises(ValueError, match="str is neither"):
        diagnose_any("gru", g, **SMALL)
    with pytest.raises(ValueError, match="bidirectional=True"):
        diagnose_any(nn.GRU(6, 4, bidirectional=True), g, **SMALL)
    with pytest.raises(ValueError, match="n_tokens == input_size=6, got n_tokens=7"):
        diagnose_any(nn.GRU(6, 4), g, n_tokens=7, **SMALL)
    with pytest.raises(ValueError, match=r"ids up to 5 .*n_tokens=4"):
        diagnose_any(nn.LSTM(4, 4), g, tokens="all", **SMALL)  # one-hot of 4 ids only
    with pytest.raises(ValueError, match="drop readout"):
        diagnose_any(build("tanh_rnn", 6, 6), g, readout=np.eye(16), **SMALL)


def test_a_foreign_tracker_converts_with_double():
    tracker = as_tracker(TanhMap().float())
    assert isinstance(tracker, ForeignTracker) and tracker.h0.dtype == torch.float32
    t64 = tracker.double()
    h = t64.step(t64.init_state(2), torch.tensor([0, 5]))
    assert h.dtype == torch.float64 and t64.module.W.dtype == torch.float64


def test_the_default_readout_is_the_identity_without_a_matrix():
    """A state of 200,000 entries gets no 200,000 x 200,000 readout (320 GB); the identity
    gives the numbers an explicit identity matrix gives."""
    big = as_tracker(lambda h, x: 0.5 * h + x[:, None].to(h), h0=torch.zeros(200_000),
                     n_tokens=2)
    assert big.W_out.weight.numel() == 0 and big.n_classes == 200_000
    g, step, h0, _ = permutation_map()
    implicit = diagnose_any(step, g, h0=h0, n_tokens=g.order, **SMALL)
    explicit = diagnose_any(step, g, h0=h0, n_tokens=g.order, readout=torch.eye(8), **SMALL)
    for name in CURVES:
        np.testing.assert_array_equal(implicit[name], explicit[name])
