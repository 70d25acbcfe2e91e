import math

import pytest
import torch

from sst_core.spec.configs import TrackingConfig
from sst_core.store.records import RunFailed, cached_run
from sst_core.training import tracking as train
from sst_core.training.tracking import Curriculum, max_passing_length, max_prefix_length


def test_curriculum_doubles_after_patience_and_caps_at_60():
    c = Curriculum(start=2, max_length=60, threshold=0.95, patience=2)
    seen = [c.length]
    for acc in [0.96, 0.5, 0.96, 0.97] + [0.99] * 20:
        if c.update(acc) and not c.done:
            seen.append(c.length)
        if c.done:
            break
    assert seen == [2, 4, 8, 16, 32, 60]
    assert c.done


def test_curriculum_streak_resets_below_threshold():
    c = Curriculum(start=4, max_length=8, threshold=0.95, patience=3)
    for acc in (0.96, 0.96, 0.949, 0.96, 0.96):
        c.update(acc)
    assert c.length == 4
    c.update(0.95)  # "at or above"
    assert c.length == 8


def test_curriculum_rejects_bad_start():
    with pytest.raises(ValueError, match="start 100"):
        Curriculum(start=100, max_length=60)


@pytest.mark.parametrize("curve,m_p,prefix", [
    ({60: 0.99, 100: 0.95, 200: 0.91, 300: 0.5}, 200, 200),
    ({60: 0.89, 100: 0.95}, None, None),  # fails at the training length
    ({60: 0.9, 100: 0.8, 200: 0.92}, 200, 60),  # non-monotone: both readings kept
    ({60: 1.0, 1000: 1.0}, 1000, 1000),
    ({}, None, None),
])
def test_m_p_on_constructed_curves(curve, m_p, prefix):
    assert max_passing_length(curve) == m_p
    assert max_prefix_length(curve) == prefix


def test_lr_schedule():
    assert train._lr_factor("constant", 10, 100, 0) == 1.0
    assert train._lr_factor("cosine", 0, 100, 0) == pytest.approx(1.0)
    assert train._lr_factor("cosine", 100, 100, 0) == pytest.approx(0.0)
    assert train._lr_factor("constant", 0, 100, 4) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="'linear'"):
        train._lr_factor("linear", 0, 10, 0)


def tiny(**kw) -> TrackingConfig:
    base = dict(model="tanh_rnn", group="C2", n_layers=1, d_model=8, d_state=16, lr=3e-2,
                seed=0, profile="smoke", batch=32, max_steps=400, steps_per_epoch=10,
                curriculum_patience=1, eval_lengths=(60, 100), eval_samples=64)
    base.update(kw)
    return TrackingConfig(**base)


def test_tanh_rnn_learns_parity_end_to_end():
    m = train.train_tracking(tiny())
    assert m["converged"] and m["final_train_length"] == 60
    assert m["m_p"] == 100 and m["eval"]["100"]["token"] >= 0.99
    assert set(m["eval"]["60"]) == {"token", "final", "sequence"}
    assert m["history"]["length"][0] == 2
    assert list(m["length_reached_at_step"]) == ["2", "4", "8", "16", "32", "60"]


def test_divergence_is_recorded_as_failed(tmp_path, monkeypatch):
    real = torch.nn.CrossEntropyLoss

    class Exploding(real):
        calls = 0

        def forward(self, *a):
            Exploding.calls += 1
            out = super().forward(*a)
            return out * math.nan if Exploding.calls >= 3 else out

    monkeypatch.setattr(train.nn, "CrossEntropyLoss", Exploding)
    with pytest.raises(RunFailed, match="loss became nan at step 2"):
        train.train_tracking(tiny(max_steps=5))
    Exploding.calls = 0
    rec = cached_run(tiny(max_steps=5), train.train_tracking, root=tmp_path)
    assert rec["status"] == "failed" and "nan" in rec["reason"]
    assert rec["metrics"]["diverged_at"] == 2


def test_same_seed_same_record_on_cpu():
    a = train.train_tracking(tiny(max_steps=20))
    b = train.train_tracking(tiny(max_steps=20))
    for m in (a, b):
        m.pop("train_time_s")
    assert a == b
