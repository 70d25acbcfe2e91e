"""sst_core.analysis.spectrum_split: what moving real eigenvalues off the axis does to the
summed memory function (the sum rule's count of distinct eigenvalues) and to the memory
read with noise."""
import numpy as np
import pytest
import torch

from sst_core.analysis.spectrum_split import split_real_axis
from sst_core.models.s4 import S4DLayer, channel_spectra
from sst_core.theory import memory as mf

SIZE = dict(dt_min=1e-3, dt_max=1e-1, disc="zoh")


def test_a_split_doubles_every_channels_count_of_distinct_eigenvalues():
    """Capacity before / after is N/2 / N in every channel, the number of distinct
    eigenvalues of the spectra (the sum rule's numeric twin); the supremum grows, by less
    than the channels' factor 2 where the channels' memory overlaps."""
    H, N, T = 3, 8, 40
    out = split_real_axis(H, N, T, eps=1e-3, noise=(1e-4,), **SIZE)
    assert out["capacity_before"] == [N / 2] and out["capacity_after"] == [N]
    layer = S4DLayer(H, N, init="real", seed=0, **SIZE)
    counts = {len(mf.distinct_eigenvalues(mu)) for mu, _ in channel_spectra(layer)}
    assert counts == {N // 2}
    with torch.no_grad():
        layer.kernel.imag += 1e-3
    assert {len(mf.distinct_eigenvalues(mu)) for mu, _ in channel_spectra(layer)} == {N}
    assert out["sup_ratio"] == pytest.approx(out["sup_after"] / out["sup_before"])
    assert 1.0 < out["sup_ratio"] <= 2.0 + 1e-9
    assert out["noise"] == [1e-4] and len(out["noisy_ratio"]) == 1


def test_the_noisy_read_tends_to_the_exact_count_as_the_noise_vanishes():
    """With a well-separated split and almost no noise, the first channel's noisy sum grows
    by the exact factor 2; with a nearly parallel split and real noise, by far less."""
    exact = split_real_axis(2, 6, 60, eps=0.5, noise=(1e-12,), **SIZE)
    assert exact["noisy_ratio"][0] == pytest.approx(2.0, abs=1e-3)
    near = split_real_axis(2, 6, 60, eps=1e-3, noise=(1e-2,), **SIZE)
    assert near["capacity_after"] == [6.0]  # exact count doubles all the same
    assert near["noisy_ratio"][0] < 1.2


@pytest.mark.parametrize("eps", [0, -1e-3, 1, 2.0, True, "0.1", np.nan])
def test_a_bad_split_is_named(eps):
    with pytest.raises(ValueError, match="eps"):
        split_real_axis(2, 4, 10, eps=eps, noise=(1e-4,), **SIZE)


# -- the record the LRA chapter reads (experiment memory_split) ------------------------------

def _split_cfg(**kw):
    from sst_core.spec.configs import SpectrumSplitConfig

    base = dict(H=2, N=6, T=30, eps=1e-3, noise=(1e-4, 1e-2), profile="smoke", **SIZE)
    return SpectrumSplitConfig(**{**base, **kw})


def test_the_record_holds_what_the_function_computes(tmp_path, monkeypatch):
    """The experiment's record is split_real_axis of its config (its numeric twin), stored
    and read back like any run."""
    from sst_core.experiments.runs import run
    from sst_core.store.records import record_path

    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    cfg = _split_cfg()
    rec = run(cfg)
    assert rec["status"] == "ok" and record_path(cfg).exists()
    want = split_real_axis(2, 6, 30, eps=1e-3, noise=(1e-4, 1e-2), seed=0, **SIZE)
    got = {k: v for k, v in rec["metrics"].items() if k != "compute_s"}
    assert set(got) == set(want)
    for k, v in want.items():
        assert np.allclose(got[k], v, rtol=1e-6), k
    assert run(cfg)["metrics"] == rec["metrics"]  # read back, not computed again


def test_the_grid_is_the_chapters_lra_layer_at_every_profile():
    from sst_core.experiments import paper2
    from sst_core.spec.configs import LRAConfig
    from sst_core.spec.profiles import PROFILES, get_profile

    for name in PROFILES:
        P = get_profile(name)
        (cfg,) = paper2.spectrum_split_grid(P)
        assert (cfg.H, cfg.N, cfg.T, cfg.profile) == (P.lra_H, P.lra_N, P.lra_mf_T, name)
        assert (cfg.dt_min, cfg.dt_max, cfg.disc) == (LRAConfig.dt_min, LRAConfig.dt_max,
                                                      LRAConfig.disc)
        assert cfg.eps == paper2.SPLIT_EPS and cfg.noise == paper2.MEMORY_NOISE


@pytest.mark.parametrize("field,value,allowed", [
    ("H", 0, "an int >= 1"), ("N", 1.5, "an int >= 2"), ("T", True, "an int >= 1"),
    ("seed", -1, "an int >= 0"), ("N", 7, "an even int"), ("eps", 0, r"a number in \(0, 1\)"),
    ("eps", 1.0, r"a number in \(0, 1\)"), ("dt_min", 0.5, "0 < dt_min < dt_max"),
    ("noise", (1e-2, 1e-4), "increasing numbers"), ("noise", (), "non-empty tuple")])
def test_a_bad_split_config_is_named(field, value, allowed):
    from sst_core.spec.profiles import ConfigError

    with pytest.raises(ConfigError, match=rf"SpectrumSplitConfig.*{field}.*{value!r}".replace(
            "(", r"\(").replace(")", r"\)") + ".*" + allowed):
        _split_cfg(**{field: value})
