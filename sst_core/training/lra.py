"""Training S4D classifiers on Long Range Arena tasks, learned against frozen spectra.

Protocol (``LRAConfig`` holds every number; the profiles size them), after
``state-spaces/s4`` (reference section 9):

- AdamW with the SSM spectrum (``log_dt``, ``log_neg_real``, ``imag``) in its own group
  (``ssm_lr``, no weight decay); a frozen spectrum is a set of buffers and in no group;
- a cosine schedule with linear warmup, stepped per batch; cross-entropy loss;
- after every epoch: validation accuracy, test loss and test accuracy; the reported test
  accuracy is the one at the epoch with the best validation accuracy (ties: the earlier);
- the "supremum memory function" of every layer (max over its channels of Paper 2's memory
  function) before and after training;
- a loss that becomes NaN or infinite stops the run with :class:`~sst_core.store.records.RunFailed`.

Resuming (``checkpoint_to``): after every epoch but the last, the run's whole state (model,
optimizer, the batch order's and torch's random generators, step, curves, the best epoch so
far, the seconds spent) is written atomically to that file; a run that finds a state with
its ``checkpoint_key`` there goes on from it, so that a run killed mid-way (a sweep stopped
with its session) loses at most one epoch and ends with the numbers it would have reached
without stopping (bit for bit where the two processes round alike, as in the tests; a run
computed again in a fresh process can drift from a stored one). The file is removed when the run ends (a failed one too). A state
that cannot be read, or one saved under another key (another config, or code that has
changed since: the key holds both), is ignored with a warning. The metrics then say from
which epoch the run went on and the seconds its earlier parts took (``resumed``), which
count in the run's compute.
"""
from __future__ import annotations

import io
import math
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from sst_core.models.s4 import (
    SPECTRUM_NAMES,
    S4DModel,
    optimizer_groups,
    supremum_memory_function,
)
from sst_core.store.records import RunFailed, write_bytes_atomic
from sst_core.training.lra_data import TaskData, load_task
from sst_core.training.tracking import optimizer_step, run_device


def cosine_warmup(step: int, total: int, warmup: int) -> float:
    """The learning-rate factor of ``get_cosine_schedule_with_warmup`` (0.5 cycles)."""
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))


def build_lra_model(cfg, data: TaskData) -> S4DModel:
    return S4DModel(data.d_input, data.n_classes, H=cfg.H, N=cfg.N, n_layers=cfg.n_layers,
                    encoder=data.encoder, prenorm=cfg.prenorm, norm=cfg.norm,
                    decoder=cfg.decoder, bidirectional=cfg.bidirectional, init=cfg.init,
                    disc=cfg.disc, freeze_spectrum=cfg.freeze_spectrum, dropout=cfg.dropout,
                    dt_min=cfg.dt_min, dt_max=cfg.dt_max, seed=cfg.seed)


def _batches(n: int, batch: int, rng: np.random.Generator | None, drop_last: bool):
    order = rng.permutation(n) if rng is not None else np.arange(n)
    stop = n - n % batch if drop_last and n >= batch else n
    for i in range(0, stop, batch):
        yield order[i:i + batch]


@torch.no_grad()
def evaluate_split(model: nn.Module, split, batch: int, device: torch.device) -> dict[str, float]:
    """Mean cross-entropy and accuracy on one split."""
    model.eval()
    loss_sum, hits = 0.0, 0
    for idx in _batches(len(split.y), batch, None, drop_last=False):
        x = torch.as_tensor(split.x[idx]).to(device)  # (b, L) or (b, L, d_input)
        lengths = torch.as_tensor(split.lengths[idx]).to(device)  # (b,)
        y = torch.as_tensor(split.y[idx]).to(device)  # (b,)
        logits = model(x, lengths=lengths)  # (b, n_classes)
        loss_sum += float(nn.functional.cross_entropy(logits, y, reduction="sum"))
        hits += int((logits.argmax(-1) == y).sum())
    model.train()
    n = len(split.y)
    return {"loss": loss_sum / n, "accuracy": hits / n}


def _sup_mf(model: S4DModel, T: int) -> list[list[float]]:
    return [np.round(m, 6).tolist() for m in supremum_memory_function(model, T)]


def diagnose_after_training(diagnostic, *args) -> tuple[Any, str | None]:
    """``(diagnostic(*args), None)``, or ``(None, reason)`` when the memory function of a
    trained spectrum cannot be computed (``ArithmeticError``: no convergence within the
    precision limit), so that the run keeps its accuracy and the record says why the
    memory after training is missing."""
    try:
        return diagnostic(*args), None
    except ArithmeticError as err:
        return None, f"{type(err).__name__}: {err}"


RESUME_SCHEMA = 1


def save_resume_state(path: Path, state: dict[str, Any]) -> None:
    """Write a run's state (:func:`train_lra`) to ``path`` atomically
    (:func:`~sst_core.store.records.write_bytes_atomic`, through ``.<run-id>.<...>.tmp``,
    which a sweep clears when it claims the run): a reader sees the old state or the new
    one, never half of one."""
    buffer = io.BytesIO()
    torch.save({"schema": RESUME_SCHEMA, **state}, buffer)
    write_bytes_atomic(Path(path), buffer.getvalue())


def load_resume_state(path: Path | None, key: str) -> dict[str, Any] | None:
    """The state saved at ``path`` under ``key``, or None: no file, or one that cannot be
    read or was saved under another key (a :class:`RuntimeWarning` names it and why)."""
    if path is None or not Path(path).exists():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(state, dict) or state.get("schema") != RESUME_SCHEMA:
            raise ValueError(f"not a resume state of schema {RESUME_SCHEMA}")
    except Exception as err:  # truncated, not a torch file, another schema
        warnings.warn(f"{path}: unreadable resume state ({type(err).__name__}: {err}); "
                      "starting the run from its beginning", RuntimeWarning, stacklevel=2)
        return None
    if state.get("key") != key:
        warnings.warn(f"{path}: resume state saved under key {state.get('key')!r}, not "
                      f"{key!r} (another config or code); starting the run from its "
                      "beginning", RuntimeWarning, stacklevel=2)
        return None
    return state


def train_lra(cfg, checkpoint_to: str | Path | None = None,
              checkpoint_key: str = "") -> dict[str, Any]:
    """Train one S4D model on one task (an ``LRAConfig``); see the module docstring.
    ``checkpoint_to``: the file of the run's state after each epoch, from which a killed
    run resumes when its ``checkpoint_key`` matches (None: no resuming)."""
    wall_start = time.perf_counter()
    checkpoint_to = None if checkpoint_to is None else Path(checkpoint_to)
    device = run_device(cfg.device)
    torch.manual_seed(cfg.seed)
    data = load_task(cfg)
    model = build_lra_model(cfg, data).to(device)
    mf_before = _sup_mf(model, cfg.mf_T) if cfg.mf_T else None
    groups = optimizer_groups(model, cfg.lr, cfg.weight_decay, ssm_lr=cfg.ssm_lr)
    opt = torch.optim.AdamW(groups, lr=cfg.lr, weight_decay=cfg.weight_decay)
    base_lrs = [g["lr"] for g in opt.param_groups]
    n_train = len(data.train.y)
    steps_per_epoch = max(1, n_train // cfg.batch)
    total = cfg.epochs * steps_per_epoch
    warmup = int(round(cfg.warmup_frac * total))
    rng = np.random.default_rng(cfg.seed)
    loss_fn = nn.CrossEntropyLoss()
    curves: dict[str, list] = {"epoch": [], "train_loss": [], "val_accuracy": [],
                               "test_loss": [], "test_accuracy": []}
    best = (-1.0, None)  # (val accuracy, epoch index)
    step, first_epoch, resumed = 0, 0, None
    earlier = {"wall_s": 0.0, "train_s": 0.0}  # the seconds of the run's earlier parts
    state = load_resume_state(checkpoint_to, checkpoint_key)
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        rng.bit_generator.state = state["batch_rng"]
        torch.set_rng_state(state["torch_rng"])
        if device.type == "cuda" and state.get("cuda_rng") is not None:
            torch.cuda.set_rng_state(state["cuda_rng"], device)
        curves, step, first_epoch = state["curves"], state["step"], state["epoch"]
        best = (state["best_val"], state["best_epoch"])
        earlier = {"wall_s": state["wall_s"], "train_s": state["train_s"]}
        resumed = {"from_epoch": first_epoch, "earlier_wall_s": round(earlier["wall_s"], 3)}
    start = time.perf_counter()
    try:
        for epoch in range(first_epoch, cfg.epochs):
            epoch_loss, n_batches = 0.0, 0
            for idx in _batches(n_train, cfg.batch, rng, drop_last=True):
                factor = cosine_warmup(step, total, warmup)
                for g, base in zip(opt.param_groups, base_lrs):
                    g["lr"] = base * factor
                x = torch.as_tensor(data.train.x[idx]).to(device)  # (b, L) or (b, L, d_input)
                lengths = torch.as_tensor(data.train.lengths[idx]).to(device)  # (b,)
                y = torch.as_tensor(data.train.y[idx]).to(device)  # (b,)
                loss = loss_fn(model(x, lengths=lengths), y)
                optimizer_step(loss, model, opt, cfg.grad_clip, f"step {step} (epoch {epoch})",
                               {"curves": curves, "diverged_at": step})
                epoch_loss += loss.item()
                n_batches += 1
                step += 1
            val = evaluate_split(model, data.val, cfg.eval_batch, device)
            test = evaluate_split(model, data.test, cfg.eval_batch, device)
            curves["epoch"].append(epoch + 1)
            curves["train_loss"].append(round(epoch_loss / max(1, n_batches), 6))
            curves["val_accuracy"].append(round(val["accuracy"], 6))
            curves["test_loss"].append(round(test["loss"], 6))
            curves["test_accuracy"].append(round(test["accuracy"], 6))
            if val["accuracy"] > best[0]:
                best = (val["accuracy"], epoch)
            if checkpoint_to is not None and epoch + 1 < cfg.epochs:
                now = time.perf_counter()
                save_resume_state(checkpoint_to, {
                    "key": checkpoint_key, "epoch": epoch + 1, "step": step,
                    "model": model.state_dict(), "optimizer": opt.state_dict(),
                    "batch_rng": rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
                    "cuda_rng": (torch.cuda.get_rng_state(device) if device.type == "cuda"
                                 else None),
                    "curves": curves, "best_val": best[0], "best_epoch": best[1],
                    "wall_s": earlier["wall_s"] + now - wall_start,
                    "train_s": earlier["train_s"] + now - start})
    except RunFailed:
        if checkpoint_to is not None:
            checkpoint_to.unlink(missing_ok=True)
        raise
    train_time = earlier["train_s"] + time.perf_counter() - start
    model = model.cpu()
    mf_after, mf_error = (diagnose_after_training(_sup_mf, model, cfg.mf_T) if cfg.mf_T
                          else (None, None))
    n_trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    # a frozen spectrum lives in buffers: count it, so n_params is the same model either way
    n_frozen_spectrum = sum(b.numel() for name, b in model.named_buffers()
                            if name.rsplit(".", 1)[-1] in SPECTRUM_NAMES)
    n_params = sum(p.numel() for p in model.parameters()) + n_frozen_spectrum
    b = best[1]
    if checkpoint_to is not None:
        checkpoint_to.unlink(missing_ok=True)
    return {
        "test_accuracy": curves["test_accuracy"][b],
        "best_epoch": b + 1,
        "val_accuracy": curves["val_accuracy"][b],
        "final_test_accuracy": curves["test_accuracy"][-1],
        # the accuracy of always answering the test set's most frequent class
        "chance_accuracy": float(np.bincount(data.test.y).max() / len(data.test.y)),
        "curves": curves,
        "sup_mf_before": mf_before,
        "sup_mf_after": mf_after,
        "mf_after_error": mf_error,
        "frozen_share": float(model.frozen_share),
        "n_params": n_params,
        "n_trainable": n_trainable,
        "task": data.describe,
        "steps": step,
        "train_time_s": round(train_time, 3),
        "resumed": resumed,
        "device": str(device),
    }
