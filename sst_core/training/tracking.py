"""One small training loop for group state tracking (Paper 1, Tables 2 and 3).

Protocol (``TrackingConfig`` holds every number; the profiles size them):

- cross-entropy on the running product ``g_t`` at every position, fresh words every step
  (``sst_core.tasks.tracking.sample``), AdamW with weight decay 0.01, batch 256;
- a curriculum on the word length: start at 2; an *epoch* is ``steps_per_epoch`` steps
  (there is no finite data set); when the epoch's token accuracy is at least 95% for
  ``patience`` epochs in a row the length doubles, capped at 60 (2, 4, 8, 16, 32, 60);
  training stops once the cap has been passed the same way, or after ``max_steps``;
- evaluation on held-out words at lengths 60, 100, 200, ..., 1000: token accuracy (all
  positions), final-position accuracy and whole-sequence accuracy;
- ``m_p`` is the largest evaluated length with token accuracy >= 90%; ``None`` ("fails")
  when even 60 does not reach it.

A loss that becomes NaN or infinite, or that grows past :data:`DIVERGENCE_FACTOR` times the
loss of the run's first step, stops the run with :class:`~sst_core.store.records.RunFailed`, so
that :func:`~sst_core.store.records.cached_run` records it as failed with the reason.
"""
from __future__ import annotations

import io
import math
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

EVAL_SEED_OFFSET = 1_000_003  # evaluation words never share a seed with training words

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
             batch: int, device: torch.device) -> dict[int, dict[str, float]]:
    """Token, final-position and whole-sequence accuracy per length on held-out words."""
    model.eval()
    out = {}
    for L in lengths:
        words, states = sample(group, n, L, tokens=tokens, seed=EVAL_SEED_OFFSET + seed + L)
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


def save_weights(model: nn.Module, path: Path) -> None:
    """The model's ``state_dict`` (on the CPU), written atomically."""
    buf = io.BytesIO()
    torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, buf)
    write_bytes_atomic(Path(path), buf.getvalue())


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


def tracking_metrics(cfg, model: nn.Module, curriculum: Curriculum, log: EpochLog, steps: int,
                     train_time: float, device: torch.device) -> dict[str, Any]:
    """Evaluate a trained tracker and assemble the metrics of its record."""
    evals = evaluate(model, get_group(cfg.group), cfg.eval_lengths, cfg.eval_samples,
                     cfg.tokens, cfg.seed, cfg.eval_batch, device)
    token_acc = {L: v["token"] for L, v in evals.items()}
    return {
        "m_p": max_passing_length(token_acc, cfg.pass_threshold),
        "m_p_prefix": max_prefix_length(token_acc, cfg.pass_threshold),
        "eval": {str(L): v for L, v in evals.items()},
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
    return default_device() if cfg.device == "auto" else torch.device(cfg.device)


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
        if (step + 1) % cfg.steps_per_epoch == 0:
            acc = log.close(step + 1, curriculum.length, cfg.steps_per_epoch)
            if curriculum.update(acc):
                log.reached.setdefault(curriculum.length, step + 1)
                if curriculum.done:
                    break
    train_time = time.perf_counter() - start
    if weights_to is not None:
        save_weights(model, weights_to)
    return tracking_metrics(cfg, model, curriculum, log, step + 1, train_time, device)
