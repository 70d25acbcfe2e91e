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
