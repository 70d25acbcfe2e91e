"""The training protocol of the tracking runs (sst_core.training.protocol) on constructed
accuracy sequences, and the checkpoints a real run records."""
import pytest
import torch

from sst_core.spec.configs import TrackingConfig
from sst_core.spec.profiles import ConfigError
from sst_core.training.protocol import Protocol, headline_checkpoint
from sst_core.training.tracking import checkpoint_eval, load_weights, train_tracking


def protocol(**kw) -> Protocol:
    base = dict(max_steps=1000, post_steps=300, heldout_every=50, heldout_threshold=0.99,
                heldout_patience=2)
    base.update(kw)
    return Protocol(**base)


def drive(p: Protocol, passed_at: int | None, heldout: dict[int, float], lengths=None) -> int:
    """Run the protocol over steps 1.. as a trainer would; the step it stops at."""
    for step in range(1, p.max_steps + 1):
        if lengths is not None and step in lengths:
            p.curriculum_at(step, lengths[step])
        if passed_at is not None and step == passed_at:
            p.passed(step)
        if p.wants_heldout(step):
            p.heldout(step, heldout.get(step, 0.0))
        if p.should_stop(step):
            return step
    raise AssertionError("never stopped")


def test_stops_at_the_end_of_the_budget_and_meets_the_criterion_on_the_way():
    p = protocol()
    stop = drive(p, 100, {150: 0.98, 200: 0.995, 250: 0.999, 300: 0.97, 350: 1.0})
    assert stop == 400 and p.stopped_as == "budget"  # passed at 100 + a budget of 300
    assert [s for s, _ in p.checks] == [150, 200, 250]  # no checks once the criterion is met
    assert p.heldout_step == 250  # the second of two consecutive checks at or above 0.99


def test_a_check_below_the_threshold_resets_the_streak():
    p = protocol(post_steps=500)
    drive(p, 100, {150: 0.995, 200: 0.5, 250: 0.995, 300: 0.991})
    assert p.heldout_step == 300


def test_the_budget_never_runs_past_max_steps_and_an_unpassed_run_ends_there():
    p = protocol()
    assert drive(p, 900, {}) == 1000 and p.stopped_as == "budget" and p.heldout_step is None
    q = protocol()
    assert drive(q, None, {}) == 1000 and q.stopped_as == "max_steps" and not q.checks
    r = protocol(post_steps=0)  # the old rule: stop where the curriculum passes
    assert drive(r, 120, {}) == 120 and not r.checks


def test_the_plateau_rule_stops_a_stalled_curriculum_but_not_a_late_jump():
    stalled = protocol(plateau_steps=400)
    assert drive(stalled, None, {}, lengths={20: 4}) == 420 and stalled.stopped_as == "plateau"
    late = protocol(plateau_steps=400)  # a jump after 390 steps at length 4 restarts the clock
    stop = drive(late, 800, {}, lengths={20: 4, 410: 8, 790: 16})
    assert late.stopped_as == "budget" and stop == 1000
    off = protocol()  # 0: never
    assert drive(off, None, {}, lengths={20: 4}) == 1000 and off.stopped_as == "max_steps"
    passed = protocol(plateau_steps=50)  # after passing, the length stays: no plateau stop
    assert drive(passed, 60, {}, lengths={20: 60}) == 360 and passed.stopped_as == "budget"


def test_the_headline_checkpoint_rule():
    some = {"passed_60": {"m_p": 60}, "heldout": {"m_p": 200}, "end": {"m_p": 100}}
    assert headline_checkpoint("heldout", some) == "heldout"
    assert headline_checkpoint("heldout", {**some, "heldout": None}) == "end"
    assert headline_checkpoint("passed_60", some) == "passed_60"
    assert headline_checkpoint("passed_60", {**some, "passed_60": None}) == "end"
    assert headline_checkpoint("end", some) == "end"
    with pytest.raises(ValueError, match="unknown m_p rule 'last'"):
        headline_checkpoint("last", some)


def test_bad_protocol_settings_are_clear_errors():
    with pytest.raises(ValueError, match="heldout_threshold=1.5"):
        protocol(heldout_threshold=1.5)
    base = dict(model="linear_rnn", group="C2", n_layers=1, d_model=8, d_state=8, lr=0.01,
                seed=0, profile="smoke")
    with pytest.raises(ConfigError, match="m_p_at='last' is not allowed: one of heldout"):
        TrackingConfig(**base, m_p_at="last")
    with pytest.raises(ConfigError, match="schedule='linear' is not allowed: one of constant, cosine"):
        TrackingConfig(**base, schedule="linear")
    with pytest.raises(ConfigError, match="post_steps=-1"):
        TrackingConfig(**base, post_steps=-1)


@pytest.mark.parametrize("rule", ["heldout", "passed_60", "end"])
def test_a_run_records_every_checkpoint_and_keeps_the_weights_of_its_m_p(rule, tmp_path):
    torch.set_num_threads(1)
    cfg = TrackingConfig(model="linear_rnn", group="C2", n_layers=1, d_model=8, d_state=8,
                         lr=0.1, seed=3, profile="smoke", batch=16, max_steps=60,
                         steps_per_epoch=2, curriculum_max=4, curriculum_threshold=0.7,
                         curriculum_patience=1, eval_lengths=(4, 8), eval_samples=32,
                         post_steps=20, heldout_every=4, heldout_samples=32,
                         heldout_threshold=0.1, m_p_at=rule, device="cpu")
    path = tmp_path / "w.pt"
    m = train_tracking(cfg, weights_to=path)
    assert set(m["checkpoints"]) == {"passed_60", "heldout", "end"}
    assert all(m["checkpoints"][k] for k in m["checkpoints"])
    assert m["m_p_rule"] == rule and m["m_p_checkpoint"] == rule
    head = m["checkpoints"][rule]
    assert m["m_p"] == head["m_p"] and m["eval"] == m["checkpoint_eval"][rule]
    again = checkpoint_eval(cfg, load_weights(cfg, path), head["step"], torch.device("cpu"))
    assert again["eval"] == m["eval"]  # the stored weights are the headline checkpoint's
    steps = [m["checkpoints"][k]["step"] for k in ("passed_60", "heldout", "end")]
    assert steps == sorted(steps) and m["steps"] == steps[-1]
