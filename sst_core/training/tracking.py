"""One small training loop for group state tracking (Paper 1, Tables 2 and 3).

Protocol (``TrackingConfig`` holds every number; the profiles size them):

- cross-entropy on the running product ``g_t`` at every position, fresh words every step
  (``sst_core.tasks.tracking.sample``), AdamW with weight decay 0.01, batch 256;
- a curriculum on the word length: start at 2; an *epoch* is ``steps_per_epoch`` steps
  (there is no finite data set); when the epoch's token accuracy is at least 95% for
  ``patience`` epochs in a row the length doubles, capped at 60 (2, 4, 8, 16, 32, 60);
- once the cap has been passed the same way, training goes on at 60 within a step budget,
  with held-out checks, and the run records m_p at fixed checkpoints
  (:mod:`sst_core.training.protocol` states the rule: when 60 is passed, at the peers'
  held-out criterion, at the end of the budget); a run whose curriculum stalls for
  ``plateau_steps`` stops early as not learning;
- evaluation on held-out words at lengths 60, 100, 200, ..., 1000: token accuracy (all
  positions), final-position accuracy and whole-sequence accuracy;
- ``m_p`` is the largest evaluated length with token accuracy >= 90%; ``None`` ("fails")
  when even 60 does not reach it. The record's ``m_p`` (and its weights) are those of the
  checkpoint that ``m_p_at`` names; every checkpoint's m_p is kept.

Training flushes denormal floats to zero (:func:`flushing_denormals`): with trained
weights, decays that underflow produce them, and each costs the CPU tens of cycles.

A loss that becomes NaN or infinite, or that grows past :data:`DIVERGENCE_FACTOR` times the
loss of the run's first step, stops the run with :class:`~sst_core.store.records.RunFailed`, so
that :func:`~sst_core.store.records.cached_run` records it as failed with the reason.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import torch
from torch import nn

from sst_core.groups import get_group
from sst_core.models import build
from sst_core.store.records import RunFailed, write_bytes_atomic
from sst_core.tasks.tracking import sample
from sst_core.training.protocol import CHECKPOINTS, Protocol, headline_checkpoint

EVAL_SEED_OFFSET = 1_000_003  # evaluation words never share a seed with training words
HELDOUT_SEED_OFFSET = 3_000_017  # held-out checks: fresh words at every check, no shared seed

# A tracking run has diverged once a step's loss exceeds DIVERGENCE_FACTOR times the loss
# of its first step. The first step's loss is that of the untrained model, about
# log(|G|) nats (a uniform guess: 0.69 for C2, 1.8 for S3), so the bound is about
# 1e3 log(|G|): a mean cross-entropy that high means logits off by hundreds on average,
# which no run that still learns comes near (a spike of 10-50x does happen at large
# learning rates and recovers). The check only compares the loss already computed, so a
# run that stays below the bound computes exactly what it did without the check.
DIVERGENCE_FACTOR = 1e3


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


# -- curriculum and m_p: plain logic, tested on constructed curves ----------------------

@dataclass
class Curriculum:
    """Doubles the length after ``patience`` epochs at or above ``threshold`` accuracy."""

    start: int = 2
    max_length: int = 60
    threshold: float = 0.95
    patience: int = 5
    length: int = field(init=False)
    streak: int = field(init=False, default=0)
    done: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        if not (1 <= self.start <= self.max_length):
            raise ValueError(f"curriculum start {self.start} must be in 1..max_length={self.max_length}")
        self.length = self.start

    def update(self, epoch_accuracy: float) -> bool:
        """Record one epoch; return True when the length changed or training is done."""
        self.streak = self.streak + 1 if epoch_accuracy >= self.threshold else 0
        if self.streak < self.patience:
            return False
        self.streak = 0
        if self.length >= self.max_length:
            self.done = True
        else:
            self.length = min(2 * self.length, self.max_length)
        return True


def max_passing_length(accuracy: dict[int, float], threshold: float = 0.9) -> int | None:
    """``m_p``: the largest evaluated length whose accuracy is at least ``threshold``.

    ``None`` when the shortest evaluated length already fails (the paper's "fail").
    Lengths beyond a failing one still count if they pass (the paper's wording); the
    record also keeps :func:`max_prefix_length` for the stricter reading.
    """
    lengths = sorted(accuracy)
    if not lengths or accuracy[lengths[0]] < threshold:
        return None
    return max(L for L in lengths if accuracy[L] >= threshold)


def max_prefix_length(accuracy: dict[int, float], threshold: float = 0.9) -> int | None:
    """The largest length such that it and every shorter evaluated length pass."""
    best = None
    for L in sorted(accuracy):
        if accuracy[L] < threshold:
            break
        best = L
    return best


# -- the loop ---------------------------------------------------------------------------

def _lr_factor(schedule: str, step: int, total: int, warmup: int) -> float:
    if step < warmup:
        return (step + 1) / warmup
    if schedule == "constant":
        return 1.0
    if schedule == "cosine":
        progress = (step - warmup) / max(1, total - warmup)
        return 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))
    raise ValueError(f"unknown schedule {schedule!r}; allowed: constant, cosine")


@torch.no_grad()
def evaluate(model: nn.Module, group, lengths: Iterable[int], n: int, tokens: str, seed: int,
             batch: int, device: torch.device, offset: int = EVAL_SEED_OFFSET
             ) -> dict[int, dict[str, float]]:
    """Token, final-position and whole-sequence accuracy per length on held-out words
    (length L's words on seed ``offset + seed + L``)."""
    model.eval()
    out = {}
    for L in lengths:
        words, states = sample(group, n, L, tokens=tokens, seed=offset + seed + L)
        correct_tok, correct_last, correct_seq = 0, 0, 0
        for i in range(0, n, batch):
            x = torch.from_numpy(words[i:i + batch]).to(device)  # (b, L)
            y = torch.from_numpy(states[i:i + batch]).to(device)  # (b, L)
            hit = model(x).argmax(-1) == y  # (b, L)
            correct_tok += int(hit.sum())
            correct_last += int(hit[:, -1].sum())
            correct_seq += int(hit.all(dim=1).sum())
        out[L] = {"token": correct_tok / (n * L), "final": correct_last / n, "sequence": correct_seq / n}
    model.train()
    return out


def build_tracker(cfg) -> nn.Module:
    """The untrained model of a ``TrackingConfig`` (on the CPU)."""
    group = get_group(cfg.group)
    kw = {"phi": cfg.phi} if cfg.phi else {}
    return build(cfg.model, group.order, group.order, d_model=cfg.d_model, d_state=cfg.d_state,
                 n_layers=cfg.n_layers, **kw)


def save_weights(model: nn.Module, path: Path) -> str:
    """The model's ``state_dict`` (on the CPU), written atomically; returns the sha256 of
    the file (the record keeps it as ``weights_sha256``: :func:`sst_core.analysis.trackers.
    load_tracker` refuses weights that are not the run's). :class:`RunFailed` naming the
    first tensor with a non-finite entry instead of writing weights that are NaN or inf."""
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    for name, v in state.items():
        if v.is_floating_point() and not torch.isfinite(v).all():
            raise RunFailed(f"the trained weights are not finite: {name} has "
                            f"{int((~torch.isfinite(v)).sum())} of {v.numel()} entries NaN or "
                            "inf")
    buf = io.BytesIO()
    torch.save(state, buf)
    write_bytes_atomic(Path(path), buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load_weights(cfg, path: Path) -> nn.Module:
    """A model of ``cfg`` with the weights stored at ``path`` (CPU, eval mode)."""
    model = build_tracker(cfg)
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model.eval()


def optimizer_step(loss: torch.Tensor, model: nn.Module, opt: torch.optim.Optimizer,
                   grad_clip: float, where: str, metrics: dict[str, Any]) -> None:
    """Backward, optional gradient clipping and one optimizer step; a NaN or infinite loss
    raises :class:`RunFailed` (naming ``where``) carrying ``metrics`` so far instead."""
    if not torch.isfinite(loss):
        err = RunFailed(f"loss became {loss.item()} at {where}")
        err.metrics = metrics
        raise err
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if grad_clip:
        nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    opt.step()


def loss_failure(loss: float, first_loss: float, where: str) -> str | None:
    """Why a tracking run stops at this step's ``loss``, or None: a NaN or infinite loss, or
    one above ``DIVERGENCE_FACTOR * first_loss`` (``first_loss``: its first step's loss)."""
    if not math.isfinite(loss):
        return f"loss became {loss} at {where}"
    bound = DIVERGENCE_FACTOR * first_loss
    if loss > bound:
        return (f"loss diverged at {where}: {loss:.6g} exceeds the bound {bound:.6g} "
                f"({DIVERGENCE_FACTOR:g} x the first step's loss {first_loss:.6g})")
    return None


def run_failed(reason: str, metrics: dict[str, Any]) -> RunFailed:
    """A :class:`RunFailed` with ``reason`` that carries the metrics so far (``.metrics``)."""
    err = RunFailed(reason)
    err.metrics = metrics
    return err


class EpochLog:
    """The per-epoch record of one run: mean loss and token accuracy every
    ``steps_per_epoch`` steps (``history``), and the step at which each curriculum length
    was first trained (``reached``)."""

    def __init__(self, start_length: int):
        self.history: dict[str, list] = {"step": [], "length": [], "loss": [], "accuracy": []}
        self.reached: dict[int, int] = {start_length: 0}
        self._loss, self._hits, self._count = 0.0, 0, 0

    def add(self, loss: float, hits: int, count: int) -> None:
        self._loss += loss
        self._hits += hits
        self._count += count

    def close(self, step: int, length: int, steps_per_epoch: int) -> float:
        """End the epoch that finished after ``step`` steps; return its token accuracy."""
        acc = self._hits / self._count
        self.history["step"].append(step)
        self.history["length"].append(length)
        self.history["loss"].append(round(self._loss / steps_per_epoch, 6))
        self.history["accuracy"].append(round(acc, 6))
        self._loss, self._hits, self._count = 0.0, 0, 0
        return acc


def checkpoint_eval(cfg, model: nn.Module, step: int, device: torch.device) -> dict[str, Any]:
    """m_p and the held-out accuracies of ``model`` after ``step`` steps (one checkpoint)."""
    evals = evaluate(model, get_group(cfg.group), cfg.eval_lengths, cfg.eval_samples,
                     cfg.tokens, cfg.seed, cfg.eval_batch, device)
    token_acc = {L: v["token"] for L, v in evals.items()}
    return {"step": step, "m_p": max_passing_length(token_acc, cfg.pass_threshold),
            "m_p_prefix": max_prefix_length(token_acc, cfg.pass_threshold),
            "eval": {str(L): v for L, v in evals.items()}}


def heldout_accuracy(cfg, model: nn.Module, step: int, device: torch.device) -> float:
    """Whole-sequence accuracy on ``heldout_samples`` fresh held-out words of the last
    curriculum length (a new sample at every check, on seeds no other words use)."""
    group = get_group(cfg.group)
    acc = evaluate(model, group, [cfg.curriculum_max], cfg.heldout_samples, cfg.tokens,
                   cfg.seed * 1_000_000 + step, cfg.eval_batch, device, HELDOUT_SEED_OFFSET)
    return acc[cfg.curriculum_max]["sequence"]


def make_protocol(cfg) -> Protocol:
    return Protocol(cfg.max_steps, cfg.post_steps, cfg.heldout_every, cfg.heldout_threshold,
                    cfg.heldout_patience, cfg.plateau_steps)


class Checkpoints:
    """The checkpoints of one run (:data:`~sst_core.training.protocol.CHECKPOINTS`) and
    the weights of the one the record's m_p comes from (``m_p_at``)."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.points: dict[str, dict | None] = dict.fromkeys(CHECKPOINTS)
        self.weights: dict[str, dict] = {}

    def take(self, name: str, model: nn.Module, step: int, device: torch.device) -> None:
        self.points[name] = checkpoint_eval(self.cfg, model, step, device)
        if self.cfg.m_p_at == name:  # the record's weights may be these
            self.weights[name] = {k: v.detach().clone() for k, v in model.state_dict().items()}

    def finish(self, model: nn.Module, step: int, device: torch.device) -> str:
        """Take ``end`` and load the headline checkpoint's weights into ``model``; its name."""
        same = [v for v in self.points.values() if v is not None and v["step"] == step]
        self.points["end"] = dict(same[0]) if same else checkpoint_eval(self.cfg, model, step, device)
        head = headline_checkpoint(self.cfg.m_p_at, self.points)
        if head in self.weights:
            model.load_state_dict(self.weights[head])
        return head


def tracking_metrics(cfg, model: nn.Module, curriculum: Curriculum, log: EpochLog, steps: int,
                     train_time: float, device: torch.device, protocol: Protocol,
                     checkpoints: Checkpoints) -> dict[str, Any]:
    """Assemble the metrics of a record: the headline checkpoint's m_p and evaluation, and
    every checkpoint. Loads the headline checkpoint's weights into ``model``."""
    head = checkpoints.finish(model, steps, device)
    point = checkpoints.points[head]
    return {
        "m_p": point["m_p"],
        "m_p_prefix": point["m_p_prefix"],
        "eval": point["eval"],
        "m_p_checkpoint": head,
        "m_p_rule": cfg.m_p_at,
        "checkpoints": {k: (None if v is None else {"step": v["step"], "m_p": v["m_p"],
                                                     "m_p_prefix": v["m_p_prefix"]})
                        for k, v in checkpoints.points.items()},
        "checkpoint_eval": {k: v["eval"] for k, v in checkpoints.points.items() if v},
        "heldout_checks": protocol.checks,
        "stopped_as": protocol.stopped_as,
        "converged": curriculum.done,
        "final_train_length": curriculum.length,
        "length_reached_at_step": {str(k): v for k, v in log.reached.items()},
        "steps": steps,
        "history": log.history,
        "n_params": sum(p.numel() for p in model.parameters()),
        "train_time_s": round(train_time, 3),
        "device": str(device),
    }


def resolve_device(cfg) -> torch.device:
    return run_device(cfg.device)


def run_device(name: str) -> torch.device:
    """The torch device a config names (``"auto"``: CUDA when torch sees it, else the
    CPU); ValueError naming it and what this machine has when it has no such device."""
    if name == "auto":
        return default_device()
    device = torch.device(name)
    if device.type == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if (device.index or 0) >= n:
            have = ", ".join(["auto", "cpu"] + (["cuda"] if n else [])
                             + [f"cuda:{i}" for i in range(n)])
            raise ValueError(f"device {name!r} is not available here: torch sees {n} CUDA "
                             f"device(s); allowed here: {have}")
    return device


def make_curriculum(cfg) -> Curriculum:
    return Curriculum(cfg.curriculum_start, cfg.curriculum_max, cfg.curriculum_threshold,
                      cfg.curriculum_patience)


def lr_at(cfg, step: int) -> float:
    """The learning rate of ``cfg`` at ``step`` (warm-up, then its schedule)."""
    return cfg.lr * _lr_factor(cfg.schedule, step, cfg.max_steps, cfg.warmup_steps)


def train_batch(cfg, step: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """The training words of ``cfg`` at ``step`` (fresh words, a seed per step)."""
    return sample(get_group(cfg.group), cfg.batch, length, tokens=cfg.tokens,
                  seed=cfg.seed * 1_000_000 + step)


_FLUSH = {"on": False}  # what this module last set (torch has no getter; its default: off)


@contextlib.contextmanager
def flushed_denormals():
    """Inside the block, ``torch.set_flush_denormal(True)``: denormal floats (magnitudes
    below 1.2e-38 in float32) are read and written as zero, on the calling thread (the
    CPU's floating-point mode is per thread; the sweep trains on one torch thread per
    worker, where that is the whole computation, and threads started meanwhile inherit
    it). Restored afterwards, also when the block raises. Where the CPU cannot flush
    (torch returns False), or with ``SST_FLUSH_DENORMALS=0`` in the environment (how a
    benchmark times training as it was before, :mod:`sst_core.bench.cases_sweep`),
    nothing changes."""
    if os.environ.get("SST_FLUSH_DENORMALS") == "0":
        yield
        return
    before = _FLUSH["on"]
    _FLUSH["on"] = torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(before)
        _FLUSH["on"] = before


def flushing_denormals(fn):
    """Decorate a training function to run inside :func:`flushed_denormals`."""

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with flushed_denormals():
            return fn(*args, **kwargs)

    return wrapped


@flushing_denormals
def train_tracking(cfg, weights_to: Path | None = None) -> dict[str, Any]:
    """Train one model on one group (a ``TrackingConfig``) and evaluate it; see module doc.

    ``weights_to``: also store the trained weights there (the diagnostics of the
    error-control chapter read them); a run that diverges stores none.
    :func:`sst_core.training.stacked.train_tracking_stacked` trains several configs at once with
    the same results.
    """
    device = resolve_device(cfg)
    torch.manual_seed(cfg.seed)
    group = get_group(cfg.group)
    model = build_tracker(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    curriculum = make_curriculum(cfg)
    protocol = make_protocol(cfg)
    checkpoints = Checkpoints(cfg)
    loss_fn = nn.CrossEntropyLoss()
    log = EpochLog(curriculum.length)
    start = time.perf_counter()
    step = 0
    for step in range(cfg.max_steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(cfg, step)
        words, states = train_batch(cfg, step, curriculum.length)
        x = torch.from_numpy(words).to(device)  # (b, L)
        y = torch.from_numpy(states).to(device)  # (b, L)
        logits = model(x)  # (b, L, n_g)
        loss = loss_fn(logits.reshape(-1, group.order), y.reshape(-1))
        value = loss.item()
        if step == 0:
            first_loss = value
        where = f"step {step} (length {curriculum.length})"
        metrics = {"history": log.history, "steps": step, "diverged_at": step}
        why = loss_failure(value, first_loss, where)
        if why:
            raise run_failed(why, metrics)
        optimizer_step(loss, model, opt, cfg.grad_clip, where, metrics)

        log.add(value, int((logits.detach().argmax(-1) == y).sum()), y.numel())
        done = step + 1
        if done % cfg.steps_per_epoch == 0:
            acc = log.close(done, curriculum.length, cfg.steps_per_epoch)
            if curriculum.update(acc):
                log.reached.setdefault(curriculum.length, done)
                if curriculum.done and protocol.passed_step is None:
                    protocol.passed(done)
                    checkpoints.take("passed_60", model, done, device)
            protocol.curriculum_at(done, curriculum.length)
        if protocol.wants_heldout(done) and protocol.heldout(
                done, heldout_accuracy(cfg, model, done, device)):
            checkpoints.take("heldout", model, done, device)
        if protocol.should_stop(done):
            break
    train_time = time.perf_counter() - start
    metrics = tracking_metrics(cfg, model, curriculum, log, step + 1, train_time, device,
                               protocol, checkpoints)
    if weights_to is not None:  # the weights of the checkpoint the record's m_p is from
        try:
            metrics["weights_sha256"] = save_weights(model, weights_to)
        except RunFailed as err:
            err.metrics = metrics
            raise
    return metrics
