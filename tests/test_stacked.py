"""Stacked training (sst_core.training.stacked) equals K separate runs."""
import copy
from dataclasses import replace

import pytest
import torch
from torch import nn

from sst_core.experiments import runs as experiments_runs
from sst_core.models import build
from sst_core.models.registry import REGISTRY
from sst_core.spec.configs import TrackingConfig
from sst_core.store.records import RunFailed, load_record, record_path
from sst_core.training.stacked import (
    StackedTracker,
    clip_rows,
    stack_key,
    train_tracking_stacked,
)
from sst_core.training.tracking import train_tracking


def cfg(model="linear_rnn", **kw) -> TrackingConfig:
    base = dict(model=model, group="C2", n_layers=1, d_model=8, d_state=8, lr=0.01, seed=0,
                profile="smoke", batch=16, max_steps=30, steps_per_epoch=2,
                curriculum_patience=1, eval_lengths=(60, 100), eval_samples=32, device="cpu")
    base.update(kw)
    return TrackingConfig(**base)


def _models(name="mamba", K=3):
    out = []
    for k in range(K):
        torch.manual_seed(k)
        kw = {"phi": "tanh"} if name == "rnn_phi" else {}
        out.append(build(name, 6, 6, d_model=8, d_state=8, n_layers=2, **kw))
    return out


def test_stacked_adamw_equals_torch_adamw_row_by_row():
    torch.manual_seed(0)
    models = _models()
    lrs = [1e-3, 1e-2, 3e-2]
    stack = StackedTracker([copy.deepcopy(m) for m in models], weight_decay=0.01, grad_clip=0)
    opts = [torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=0.01)
            for m, lr in zip(models, lrs)]
    for _ in range(5):
        grads = {n: torch.randn_like(p) for n, p in stack.params.items()}  # (K, ...)
        for n, p in stack.params.items():
            p.grad = grads[n].clone()
        stack.opt.step(lrs)
        for k, (m, opt) in enumerate(zip(models, opts)):
            for n, p in m.named_parameters():
                p.grad = grads[n][k].clone()
            opt.step()
    for k, m in enumerate(models):
        for n, p in m.named_parameters():
            torch.testing.assert_close(stack.params[n][k], p, rtol=1e-6, atol=1e-7)


def test_clip_rows_equals_clip_grad_norm_per_model():
    torch.manual_seed(1)
    models = _models("linear_rnn")
    stack = StackedTracker([copy.deepcopy(m) for m in models], weight_decay=0.0, grad_clip=0)
    scales = [0.01, 1.0, 100.0]  # below, near and above the clipping norm
    for n, p in stack.params.items():
        p.grad = torch.randn_like(p) * torch.tensor(scales).view(-1, *[1] * (p.dim() - 1))
    for k, m in enumerate(models):
        for n, p in m.named_parameters():
            p.grad = stack.params[n].grad[k].clone()
        nn.utils.clip_grad_norm_(m.parameters(), 1.0)
    clip_rows(stack.params, 1.0)
    for k, m in enumerate(models):
        for n, p in m.named_parameters():
            torch.testing.assert_close(stack.params[n].grad[k], p.grad)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_stacked_logits_equal_each_model_and_padding_is_causal(name):
    """vmap over stacked weights gives each model's own logits, and padding words at the
    end leaves the earlier positions unchanged (every model is causal)."""
    models = _models(name)
    stack = StackedTracker(models, weight_decay=0.0, grad_clip=0)
    gen = torch.Generator().manual_seed(2)
    x = torch.randint(0, 6, (3, 4, 9), generator=gen)  # (K, b, L)
    padded = torch.cat([x, torch.randint(0, 6, (3, 4, 7), generator=gen)], 2)  # (K, b, 16)
    with torch.no_grad():
        out = stack.logits(padded)  # (K, b, 16, 6)
        for k, m in enumerate(models):
            torch.testing.assert_close(out[k, :, :9], m(x[k]), rtol=1e-5, atol=1e-5)


def _same_run(a: dict, b: dict, eval_tol: float = 0.02) -> None:
    assert a["steps"] == b["steps"]
    assert a["stopped_as"] == b["stopped_as"] and a["m_p_checkpoint"] == b["m_p_checkpoint"]
    assert {k: v and v["step"] for k, v in a["checkpoints"].items()} == \
        {k: v and v["step"] for k, v in b["checkpoints"].items()}
    assert [s for s, _ in a["heldout_checks"]] == [s for s, _ in b["heldout_checks"]]
    assert a["final_train_length"] == b["final_train_length"]
    assert a["length_reached_at_step"] == b["length_reached_at_step"]
    assert a["history"]["step"] == b["history"]["step"]
    assert a["history"]["length"] == b["history"]["length"]
    for la, lb in zip(a["history"]["loss"], b["history"]["loss"]):
        assert la == pytest.approx(lb, abs=1e-4)
    for L in a["eval"]:
        for kind in ("token", "final"):
            assert a["eval"][L][kind] == pytest.approx(b["eval"][L][kind], abs=eval_tol)


@pytest.mark.parametrize("model", ["linear_rnn", "mamba", "tanh_rnn", "state_gated_rnn",
                                   "torch_gru", "torch_lstm"])
def test_stacked_training_equals_separate_runs(model, tmp_path):
    """Seeds, learning rates and schedules differ; the curricula advance at different
    steps, so the stack pads; the results and the stored weights match separate runs."""
    cfgs = [cfg(model, seed=0, lr=0.01), cfg(model, seed=1, lr=0.003, schedule="cosine"),
            cfg(model, seed=2, lr=0.03, warmup_steps=5)]
    sep = [train_tracking(c, weights_to=tmp_path / f"sep{i}.pt") for i, c in enumerate(cfgs)]
    st = train_tracking_stacked(cfgs, [tmp_path / f"st{i}.pt" for i in range(3)])
    for i, (a, b) in enumerate(zip(sep, st)):
        _same_run(a, b)
        assert b["stacked"] == 3
        wa = torch.load(tmp_path / f"sep{i}.pt", weights_only=True)
        wb = torch.load(tmp_path / f"st{i}.pt", weights_only=True)
        assert wa.keys() == wb.keys()
        for k in wa:
            torch.testing.assert_close(wb[k], wa[k], rtol=1e-3, atol=1e-4)


def test_a_stack_repeats_its_runs_exactly():
    """The same stack trained twice gives bit-identical runs (what the retrain-noise report
    relies on: a run that moves when trained again moved because its stack changed)."""
    cfgs = [cfg("token_gated_rnn", seed=0, lr=0.01), cfg("token_gated_rnn", seed=1, lr=0.003,
                                                         schedule="cosine")]
    first, again = train_tracking_stacked(cfgs), train_tracking_stacked(cfgs)
    for a, b in zip(first, again):
        assert a["history"] == b["history"] and a["eval"] == b["eval"]
        assert a["steps"] == b["steps"] and a["m_p"] == b["m_p"]


def test_stacked_rows_leave_when_their_curriculum_is_done():
    """A config that finishes early stops training at the same step as its separate run
    while the others go on."""
    fast = cfg("linear_rnn", curriculum_max=4, curriculum_threshold=0.7, seed=3, lr=0.1,
               max_steps=60, post_steps=0)
    slow = replace(fast, seed=4, lr=1e-4)
    a, b = train_tracking(fast), train_tracking(slow)
    sa, sb = train_tracking_stacked([fast, slow])
    assert a["converged"] and a["steps"] < b["steps"]
    _same_run(a, sa)
    _same_run(b, sb)


def test_stacked_rows_follow_the_protocol_after_the_curriculum():
    """Training on at the last length, held-out checks and checkpoints happen at the same
    steps in a stack as in separate runs (one row passes early, one never does)."""
    fast = cfg("linear_rnn", curriculum_max=4, curriculum_threshold=0.7, seed=3, lr=0.1,
               max_steps=60, post_steps=20, heldout_every=4, heldout_samples=32,
               heldout_threshold=0.1)
    slow = replace(fast, seed=4, lr=1e-4)
    a, b = train_tracking(fast), train_tracking(slow)
    sa, sb = train_tracking_stacked([fast, slow])
    assert a["checkpoints"]["passed_60"] and a["stopped_as"] == "budget"
    assert a["steps"] == a["checkpoints"]["passed_60"]["step"] + 20
    assert a["heldout_checks"] and a["checkpoints"]["heldout"]
    assert b["checkpoints"]["passed_60"] is None and b["stopped_as"] == "max_steps"
    _same_run(a, sa)
    _same_run(b, sb)


def test_a_diverging_row_fails_alone():
    good = cfg("linear_rnn", seed=0, lr=0.01, grad_clip=0.0)
    bad = replace(good, seed=1)
    object.__setattr__(bad, "lr", 1e30)  # past TrackingConfig's lr check: the loss turns NaN
    with pytest.raises(RunFailed) as sep_err:
        train_tracking(bad)
    assert "loss became nan" in str(sep_err.value)
    out_good, out_bad = train_tracking_stacked([good, bad])
    assert isinstance(out_bad, RunFailed) and "loss became nan" in str(out_bad)
    assert out_bad.metrics["diverged_at"] == sep_err.value.metrics["diverged_at"]
    _same_run(train_tracking(good), out_good)


def test_stack_key_and_mismatched_stacks():
    assert stack_key(cfg(seed=1, lr=0.1)) == stack_key(cfg(seed=2, lr=0.2, schedule="cosine"))
    assert stack_key(cfg()) != stack_key(cfg(d_state=16))
    with pytest.raises(ValueError, match="differ only in seed, lr"):
        train_tracking_stacked([cfg(), cfg(model="mamba")])
    assert train_tracking_stacked([]) == []


def test_run_all_stacks_missing_runs_and_stores_one_record_each(tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    cfgs = [cfg(seed=s, lr=lr, max_steps=6) for s in (0, 1) for lr in (0.01, 0.03)]
    cfgs.append(cfg(model="mamba", max_steps=6))  # alone in its stack: a plain run
    records = experiments_runs.run_all(cfgs, stack=3)
    assert [r["config"]["seed"] for r in records] == [c.seed for c in cfgs]
    sizes = [r.get("stack", {}).get("size") for r in records]
    assert sizes == [3, 3, 3, None, None]  # 4 linear_rnn runs -> stacks of 3 and 1
    for c, r in zip(cfgs, records):
        assert load_record(record_path(c)) == r
        assert record_path(c).with_suffix(".pt").exists()
    # a rerun reads every record and trains nothing
    again = experiments_runs.run_all(cfgs, stack=3)
    assert [r["created_utc"] for r in again] == [r["created_utc"] for r in records]
    assert experiments_runs.stacks(cfgs, 3) == [cfgs[:3], [cfgs[3]], [cfgs[4]]]


def test_training_flushes_denormals_and_restores_the_mode(monkeypatch):
    """Inside a training run (alone or stacked) denormal floats are flushed to zero (on
    the training thread); afterwards they are not, also when the run raises."""
    from sst_core.training import stacked, tracking

    if not torch.set_flush_denormal(False):
        pytest.skip("this CPU cannot flush denormals")
    tiny = torch.tensor([1e-30])
    seen = []

    def probe(build):  # the denormal 1e-40 as the training function sees it
        def wrapped(cfg):
            seen.append((tiny * 1e-10).item())
            return build(cfg)
        return wrapped

    monkeypatch.setattr(tracking, "build_tracker", probe(tracking.build_tracker))
    monkeypatch.setattr(stacked, "build_tracker", probe(stacked.build_tracker))
    cfg = TrackingConfig(model="linear_rnn", group="C2", n_layers=1, d_model=4, d_state=4,
                         lr=0.01, seed=0, profile="smoke", batch=4, max_steps=2,
                         steps_per_epoch=1, eval_lengths=(60,), eval_samples=4, device="cpu")
    tracking.train_tracking(cfg)
    stacked.train_tracking_stacked([cfg, replace(cfg, seed=1)])
    assert seen == [0.0, 0.0, 0.0]
    assert (tiny * 1e-10).item() != 0.0  # restored

    @tracking.flushing_denormals
    def fails():
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError):
        fails()
    assert (tiny * 1e-10).item() != 0.0


def test_the_environment_can_turn_the_flushing_off(monkeypatch):
    """With ``SST_FLUSH_DENORMALS=0`` (the benchmark's "before") training leaves denormals
    as the CPU does."""
    from sst_core.training import tracking

    if not torch.set_flush_denormal(False):
        pytest.skip("this CPU cannot flush denormals")
    monkeypatch.setenv("SST_FLUSH_DENORMALS", "0")
    tiny = torch.tensor([1e-30])

    @tracking.flushing_denormals
    def inside():
        return (tiny * 1e-10).item()

    assert inside() != 0.0
    monkeypatch.delenv("SST_FLUSH_DENORMALS")
    assert inside() == 0.0 and (tiny * 1e-10).item() != 0.0
