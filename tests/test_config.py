import dataclasses

import pytest

from sst_core.book import params
from sst_core.spec import configs, profiles
from sst_core.spec.profiles import ConfigError


def test_profiles_are_the_four_named():
    assert tuple(profiles.PROFILES) == profiles.PROFILE_NAMES == ("smoke", "quick", "standard",
                                                                  "paper")
    for name, P in profiles.PROFILES.items():
        assert P.name == name


def test_profiles_grow_in_scale():
    s, q, st, p = (profiles.PROFILES[n] for n in ("smoke", "quick", "standard", "paper"))
    for knob in ("n_words", "word_length"):
        assert getattr(s, knob) < getattr(q, knob) < getattr(st, knob) < getattr(p, knob)
    for knob in ("track_d_model", "track_post_steps", "diag_samples", "lra_H", "lra_n_train"):
        assert getattr(q, knob) <= getattr(st, knob) <= getattr(p, knob), knob


def test_standard_profile_meets_its_issue():
    """The CPU-scale grid: both depths, d_model >= 32, state size x lr x schedule, >= 3
    seeds, the width ablation 16 / 32 / 64 (128 is `paper`'s: at d_model 128 the AUSSM and
    Mamba-3 steps cost 4-5x those at 64), six LRA seeds, and beyond-grid axes that are
    Table 2's."""
    st = profiles.PROFILES["standard"]
    assert st.track_depths == (1, 2) and st.track_d_model >= 32
    assert len(st.track_d_states) >= 2 and len(st.track_lrs) >= 2
    assert set(st.track_schedules) == {"constant", "cosine"} and len(st.track_seeds) >= 3
    assert st.width_d_models == (16, 32, 64) and len(st.width_seeds) >= 3
    assert profiles.PROFILES["paper"].width_d_models[-1] >= 128
    assert len(st.lra_seeds) == 6 and st.diag_resample_seeds
    for name, P in profiles.PROFILES.items():
        assert set(P.track_schedules) <= set(configs.SCHEDULES), name
        assert set(P.beyond_schedules) <= set(P.track_schedules), name
        assert set(P.beyond_depths) <= set(P.track_depths), name
        assert set(P.beyond_d_states) <= set(P.track_d_states), name
        assert set(P.beyond_rnn_widths) <= set(P.track_rnn_widths), name


def test_unknown_profile_names_allowed_ones():
    with pytest.raises(ConfigError, match=r"'fast'.*smoke, quick, standard, paper"):
        profiles.get_profile("fast")
    with pytest.raises(ConfigError, match="'fast'"):
        params.settings("p1_groups", profile="fast")


def test_unknown_parameter_is_named_with_allowed():
    with pytest.raises(ConfigError, match=r"'n_word'.*allowed: profile, seed, n_words, word_length"):
        params.check_parameters("p1_groups", {"profile": "smoke", "n_word": 3})


@pytest.mark.parametrize("key,value", [("seed", "1"), ("n_words", 2.5), ("word_length", True),
                                       ("profile", 3)])
def test_wrong_type_is_rejected(key, value):
    with pytest.raises(ConfigError, match=key):
        params.check_parameters("p1_groups", {"profile": "smoke", key: value})


def test_none_means_profile_value_and_overrides_apply():
    P = params.settings("p1_groups", profile="smoke", seed=None, n_words=7)
    assert P.n_words == 7
    assert P.seed == profiles.PROFILES["smoke"].seed
    assert P.word_length == profiles.PROFILES["smoke"].word_length


def test_unknown_notebook():
    with pytest.raises(ConfigError, match="'nope'"):
        params.parameters_of("nope")


def test_from_notebook_catches_injected_typo():
    import numpy as np  # modules and callables in the namespace are not parameters

    ns = {"profile": "smoke", "seed": None, "n_words": None, "word_length": None,
          "np": np, "In": [], "_": None, "get_ipython": lambda: None}
    assert params.from_notebook("p1_groups", ns).name == "smoke"
    with pytest.raises(ConfigError, match="'n_wrods'"):
        params.from_notebook("p1_groups", {**ns, "n_wrods": 5})
    with pytest.raises(ConfigError, match="does not declare"):
        params.from_notebook("p1_groups", {"profile": "smoke"})


def test_config_hash_is_stable_and_sensitive():
    cfg = configs.OrderSensitivityConfig(group="S3", tokens="all", n_words=8, word_length=4,
                                        seed=0, profile="smoke")
    assert configs.config_hash(cfg) == configs.config_hash(dataclasses.replace(cfg))
    assert configs.config_hash(cfg) != configs.config_hash(dataclasses.replace(cfg, seed=1))
    assert len(configs.config_hash(cfg)) == 16


def test_scale_note_names_profile_and_knobs():
    note = profiles.PROFILES["smoke"].scale("n_words")
    assert "smoke" in note and "n_words=256" in note and "meaningless" in note
    assert "meaningless" not in profiles.PROFILES["paper"].scale()
