"""Bad inputs get a clear error that names the bad value (and the file, where there is one)
and what is allowed; a diverging training run is recorded as failed (issue 17, the lower
layers: trainers, configs, data readers, tasks, theory, model registry)."""
from __future__ import annotations

import math
from dataclasses import replace

import pytest

from sst_core import experiments, train
from sst_core.config import ConfigError, LRAConfig, TrackingConfig, config_hash, get_profile
from sst_core.results import RunFailed, cached_run
from sst_core.stacked import train_tracking_stacked


def tracker(**kw) -> TrackingConfig:
    """A tiny tracking run (smoke sizes, C2, CPU): about a second."""
    base = dict(model="linear_rnn", group="C2", n_layers=1, d_model=8, d_state=8, lr=0.01,
                seed=0, profile="smoke", batch=16, max_steps=30, steps_per_epoch=2,
                curriculum_patience=1, eval_lengths=(60,), eval_samples=16, device="cpu")
    base.update(kw)
    return TrackingConfig(**base)


def lra(**kw) -> LRAConfig:
    base = dict(task="listops", init="inv", freeze_spectrum=False, H=8, N=4, n_layers=1,
                epochs=1, batch=8, seed=0, profile="smoke")
    base.update(kw)
    return LRAConfig(**base)


def unchecked(cfg, **changes):
    """``cfg`` with ``changes`` set past the config's own checks: the trainers guard
    themselves against divergence whatever learning rate they are given."""
    for name, value in changes.items():
        object.__setattr__(cfg, name, value)
    return cfg


# -- divergence ----------------------------------------------------------------------------

@pytest.mark.parametrize("model,lr", [
    ("linear_rnn", 10.0),  # the largest learning rate a TrackingConfig allows
    ("tanh_rnn", 1000.0),  # the reported run: recorded ok with a final loss of 2.4e30
])
def test_a_diverging_run_is_recorded_as_failed(model, lr, tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    cfg = unchecked(tracker(model=model), lr=lr)
    rec = cached_run(cfg, train.train_tracking)
    assert rec["status"] == "failed"
    reason = rec["reason"]
    step = rec["metrics"]["diverged_at"]
    assert reason.startswith(f"RunFailed: loss diverged at step {step} (length 2): ")
    assert "exceeds the bound" in reason
    assert f"({train.DIVERGENCE_FACTOR:g} x the first step's loss" in reason
    assert rec["metrics"]["steps"] == step and "history" in rec["metrics"]
    assert list((tmp_path / "smoke" / "tracking").glob("*.json"))


def test_loss_failure_names_the_step_the_loss_and_the_bound():
    assert train.loss_failure(2.0, 1.0, "step 3") is None
    assert train.loss_failure(1000.0, 1.0, "step 3") is None  # at the bound: still fine
    why = train.loss_failure(1000.5, 1.0, "step 3 (length 4)")
    assert why == ("loss diverged at step 3 (length 4): 1000.5 exceeds the bound 1000 "
                   "(1000 x the first step's loss 1)")
    assert train.loss_failure(float("nan"), 1.0, "step 7") == "loss became nan at step 7"
    assert train.loss_failure(float("inf"), 1.0, "step 7") == "loss became inf at step 7"


def test_a_diverging_stack_member_fails_alone():
    """The diverged member fails as its separate run does; the other member computes
    exactly what it computes alone."""
    good = tracker(seed=0, lr=0.01)
    bad = replace(good, seed=1, lr=10.0)
    with pytest.raises(RunFailed, match="loss diverged at step") as alone:
        train.train_tracking(bad)
    out_good, out_bad = train_tracking_stacked([good, bad])
    assert isinstance(out_bad, RunFailed)
    assert out_bad.metrics["diverged_at"] == alone.value.metrics["diverged_at"]
    assert str(out_bad).split(":")[0] == str(alone.value).split(":")[0]  # the same step
    assert "exceeds the bound" in str(out_bad)
    ref = train.train_tracking(good)
    assert out_good.pop("stacked") == 2
    for m in (ref, out_good):
        m.pop("train_time_s")
    assert out_good == ref


# -- the table: one row per bad input ----------------------------------------------------
# (id, call(tmp_path), exception type, what the message must contain)

LR_RULE = "a learning rate must be finite and > 0 (at most 10)"
ROWS = [
    # configs
    ("tracking-lr-huge", lambda tmp: tracker(lr=1e39), ConfigError,
     ["TrackingConfig.lr=1e+39 is not allowed", LR_RULE]),
    ("tracking-lr-nan", lambda tmp: tracker(lr=math.nan), ConfigError,
     ["TrackingConfig.lr=nan", LR_RULE]),
    ("tracking-lr-negative", lambda tmp: tracker(lr=-1), ConfigError,
     ["TrackingConfig.lr=-1", LR_RULE]),
    ("tracking-lr-zero", lambda tmp: tracker(lr=0), ConfigError,
     ["TrackingConfig.lr=0", LR_RULE]),
    ("tracking-lr-above-10", lambda tmp: tracker(lr=1000.0), ConfigError,
     ["TrackingConfig.lr=1000.0", LR_RULE]),
    ("tracking-weight-decay", lambda tmp: tracker(weight_decay=-0.1), ConfigError,
     ["TrackingConfig.weight_decay=-0.1", "finite number >= 0"]),
    ("tracking-batch", lambda tmp: tracker(batch=0), ConfigError,
     ["TrackingConfig.batch=0", "an int >= 1"]),
    ("tracking-max-steps-float", lambda tmp: tracker(max_steps=2.5), ConfigError,
     ["TrackingConfig.max_steps=2.5", "an int >= 1"]),
    ("tracking-d-state", lambda tmp: tracker(d_state=-4), ConfigError,
     ["TrackingConfig.d_state=-4", "an int >= 1"]),
    ("tracking-seed", lambda tmp: tracker(seed=-1), ConfigError,
     ["TrackingConfig.seed=-1", "an int >= 0"]),
    ("lra-lr-inf", lambda tmp: lra(lr=math.inf), ConfigError, ["LRAConfig.lr=inf", LR_RULE]),
    ("lra-ssm-lr-zero", lambda tmp: lra(ssm_lr=0.0), ConfigError,
     ["LRAConfig.ssm_lr=0.0", LR_RULE]),
    ("lra-ssm-lr-zero-frozen", lambda tmp: lra(ssm_lr=0.0, freeze_spectrum=True), ConfigError,
     ["LRAConfig.ssm_lr=0.0", LR_RULE]),
    ("lra-weight-decay-nan", lambda tmp: lra(weight_decay=math.nan), ConfigError,
     ["LRAConfig.weight_decay=nan", "finite number >= 0"]),
    ("lra-H", lambda tmp: lra(H=0), ConfigError, ["LRAConfig.H=0", "an int >= 1"]),
    ("lra-epochs", lambda tmp: lra(epochs=True), ConfigError,
     ["LRAConfig.epochs=True", "an int >= 1"]),
    ("lra-mf-T", lambda tmp: lra(mf_T=-1), ConfigError, ["LRAConfig.mf_T=-1", "an int >= 0"]),
]


@pytest.mark.parametrize("call,error,parts", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_bad_input(call, error, parts, tmp_path):
    with pytest.raises(error) as info:
        call(tmp_path)
    for part in parts:
        assert part in str(info.value), f"{part!r} not in {str(info.value)!r}"


def test_valid_configs_keep_their_hashes():
    """Computed before the configs checked their fields: the run ids did not change."""
    paper = get_profile("paper")
    assert config_hash(TrackingConfig(model="mamba", group="S3", n_layers=2, d_model=64,
                                      d_state=32, lr=5e-4, seed=1, profile="paper")
                       ) == "008067686220029f"
    assert config_hash(lra(freeze_spectrum=True)) == "3a0687d19b407fbf"
    assert config_hash(experiments.table2_grid(paper)[5]) == "5f1b5b0e5762faca"
    assert config_hash(experiments.table3_grid(paper)[-1]) == "0d25a0695f94e7cd"
    assert config_hash(experiments.lra_main_grid(paper)[0]) == "39e557585b69761e"
    assert lra(ssm_lr=10.0, lr=1e-9, mf_T=0, weight_decay=0).lr == 1e-9  # the range's ends
