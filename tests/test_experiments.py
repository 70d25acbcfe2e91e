import numpy as np
import pytest

from sst_core.experiments import paper1, runs
from sst_core.spec import profiles
from sst_core.spec.configs import OrderSensitivityConfig


def cfg(group, tokens="all", n_words=4000, word_length=12, seed=0):
    return OrderSensitivityConfig(group=group, tokens=tokens, n_words=n_words,
                                  word_length=word_length, seed=seed, profile="smoke")


def test_abelian_group_is_never_order_sensitive():
    m = paper1.order_sensitivity(cfg("C6"))
    assert m["abelian"] is True
    assert m["noncommuting_pairs"] == 0.0
    assert m["swap_changes"] == 0.0


def test_s3_noncommuting_share_is_exact_and_swaps_match_it():
    m = paper1.order_sensitivity(cfg("S3"))
    # centralisers: e commutes with 6, each transposition with 2, each 3-cycle with 3
    assert m["noncommuting_pairs"] == pytest.approx(1 - (6 + 3 * 2 + 2 * 3) / 36)
    # a swap changes the product exactly when the two tokens do not commute
    assert m["swap_changes"] == pytest.approx(0.5, abs=0.03)


def test_state_frequencies_are_distributions_and_tv_matches():
    m = paper1.order_sensitivity(cfg("S3", tokens="generators", word_length=30))
    freq = np.asarray(m["state_freq"])
    assert freq.shape == (30, 6)
    np.testing.assert_allclose(freq.sum(axis=1), 1.0, atol=1e-5)
    tv = 0.5 * np.abs(freq - 1 / 6).sum(axis=1)
    np.testing.assert_allclose(m["tv_uniform"], tv, atol=1e-5)
    assert m["tv_uniform"][-1] < 0.05 < m["tv_uniform"][0]  # S3 mixes within 30 tokens


def test_c2_generators_is_uniform_after_one_token():
    m = paper1.order_sensitivity(cfg("C2", tokens="generators", word_length=3))
    assert m["vocabulary"] == ["0", "1"]
    assert m["tv_uniform"][0] < 0.05


def test_length_one_words_have_no_swap():
    m = paper1.order_sensitivity(cfg("S3", word_length=1, n_words=10))
    assert m["swap_changes"] == 0.0


def test_grid_follows_profile():
    P = profiles.PROFILES["smoke"]
    grid = paper1.order_sensitivity_grid(P)
    assert {(c.group, c.tokens) for c in grid} == {(g, t) for g in ("C2", "C6", "S3")
                                                   for t in ("generators", "all")}
    assert all(c.n_words == P.n_words and c.profile == "smoke" for c in grid)


def test_run_dispatches_and_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    c = cfg("S3", n_words=50)
    rec = runs.run(c)
    assert rec["status"] == "ok" and rec["experiment"] == "groups_order_sensitivity"
    assert runs.run(c)["created_utc"] == rec["created_utc"]


def test_run_unknown_experiment():
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class X:
        experiment: str = "nope"
        profile: str = "smoke"
        seed: int = 0

    with pytest.raises(ValueError, match="'nope'"):
        runs.run(X())


def test_diagnostics_follow_the_profiles_sizes():
    """The smoke profile diagnoses with fewer words and steps (the book's CI build); every
    other profile keeps the sizes its stored records were made with (their run ids)."""
    smoke = profiles.get_profile("smoke")
    run = paper1.s3_runs(smoke)[0]
    cfg = paper1.diagnostics_config(smoke, run)
    assert (cfg.n_perturb, cfg.n_words) == (smoke.diag_n_perturb, smoke.diag_n_preserving)
    assert cfg.perturb_steps == smoke.diag_perturb_steps < 200
    # the error is followed from t0 to the end of the perturbation window
    assert paper1.recovery_steps(smoke) == min(cfg.perturb_steps, cfg.rollout - cfg.t0) == 20
    for name in ("quick", "standard", "paper"):
        P = profiles.get_profile(name)
        cfg = paper1.diagnostics_config(P, paper1.s3_runs(P)[0])
        assert (cfg.perturb_steps, cfg.n_perturb, cfg.n_words) == (200, 128, 8)
        assert paper1.recovery_steps(P) == 200
