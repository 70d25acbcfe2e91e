"""Bad inputs get a clear error that names the bad value (and the file, where there is one)
and what is allowed; a diverging training run is recorded as failed (issue 17, the lower
layers: trainers, configs, data readers, tasks, theory, model registry)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from sst_core import train
from sst_core.config import TrackingConfig
from sst_core.results import RunFailed, cached_run
from sst_core.stacked import train_tracking_stacked


def tracker(**kw) -> TrackingConfig:
    """A tiny tracking run (smoke sizes, C2, CPU): about a second."""
    base = dict(model="linear_rnn", group="C2", n_layers=1, d_model=8, d_state=8, lr=0.01,
                seed=0, profile="smoke", batch=16, max_steps=30, steps_per_epoch=2,
                curriculum_patience=1, eval_lengths=(60,), eval_samples=16, device="cpu")
    base.update(kw)
    return TrackingConfig(**base)


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
