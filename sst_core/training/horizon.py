"""Training a causal S4D classifier on delayed recall: can it learn memory it does not have?

Paper 2's claim in its sharpest form: the readout gradient reaches a delay only through the
memory function, so a delay at which the initial spectrum has forgotten everything
(``M[tau] ~ 0``) gives no teacher signal, and learning the spectrum cannot bring that
memory back. The task (``sst_core.tasks.delayed_recall``) needs exactly the memory of one
delay ``tau``: name the token seen ``tau`` steps before the end.

Protocol (``MemoryHorizonConfig`` holds every number):

- model: :class:`~sst_core.models.s4.S4DModel` with an embedding encoder, causal
  (``bidirectional=False``) pre-norm blocks with layer norm, ZOH, and the *last*
  position's features classified, so nothing but the state at the end sees the target;
- optimiser as :mod:`sst_core.training.lra`: AdamW with the spectrum in its own group
  (``ssm_lr``, no weight decay; a frozen spectrum is buffers, in no group), cosine schedule
  with linear warmup stepped per batch, cross-entropy;
- every step draws ``batch`` fresh sequences; every ``eval_every`` steps and at the end:
  test loss and accuracy on one fixed test set; the reported accuracy is the final one;
- the memory at the task's delay before and after training: per layer, the supremum over
  channels of the memory function of the discretised spectrum over a window of ``L``
  steps, at delay ``tau`` (:func:`sst_core.models.s4.supremum_memory_function`, the one
  implementation the LRA runs use);
- a NaN or infinite loss stops the run with :class:`~sst_core.store.records.RunFailed`.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from torch import nn

from sst_core.models.s4 import S4DModel, optimizer_groups, supremum_memory_function
from sst_core.tasks.delayed_recall import generate
from sst_core.training.lra import cosine_warmup, diagnose_after_training
from sst_core.training.tracking import optimizer_step, run_device


def build_horizon_model(cfg) -> S4DModel:
    return S4DModel(cfg.alphabet, cfg.alphabet, H=cfg.H, N=cfg.N, n_layers=cfg.n_layers,
                    encoder="embedding", prenorm=True, norm="layer", decoder="last",
                    bidirectional=False, init=cfg.init, disc="zoh",
                    freeze_spectrum=cfg.freeze_spectrum, dt_min=cfg.dt_min, dt_max=cfg.dt_max,
                    seed=cfg.seed)


def memory_at(model: nn.Module, T: int, tau: int) -> list[float]:
    """Per S4D layer, ``max_h M_h[tau]`` over a window of ``T`` delays (unrounded)."""
    return [float(m[tau]) for m in supremum_memory_function(model, T)]


@torch.no_grad()
def _evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch: int) -> tuple[float, float]:
    model.eval()
    loss_sum, hits = 0.0, 0
    for i in range(0, len(y), batch):
        logits = model(x[i:i + batch])  # (b, alphabet)
        loss_sum += float(nn.functional.cross_entropy(logits, y[i:i + batch], reduction="sum"))
        hits += int((logits.argmax(-1) == y[i:i + batch]).sum())
    model.train()
    return loss_sum / len(y), hits / len(y)


def train_memory_horizon(cfg) -> dict[str, Any]:
    """Train one model on delayed recall (a ``MemoryHorizonConfig``); see the module docstring."""
    device = run_device(cfg.device)
    torch.manual_seed(cfg.seed)
    L = cfg.length
    model = build_horizon_model(cfg)
    mf_before = memory_at(model, L, cfg.tau)
    model = model.to(device)
    opt = torch.optim.AdamW(optimizer_groups(model, cfg.lr, cfg.weight_decay, ssm_lr=cfg.ssm_lr),
                            lr=cfg.lr, weight_decay=cfg.weight_decay)
    base_lrs = [g["lr"] for g in opt.param_groups]
    warmup = int(round(cfg.warmup_frac * cfg.steps))
    test = generate(cfg.n_test, tau=cfg.tau, margin=cfg.margin, alphabet=cfg.alphabet,
                    seed=np.random.default_rng([cfg.data_seed, 1]))
    x_test = torch.as_tensor(test.x).to(device)  # (n_test, L)
    y_test = torch.as_tensor(test.y).to(device)  # (n_test,)
    rng = np.random.default_rng([cfg.seed, 0])  # the training stream (never the test set's)
    loss_fn = nn.CrossEntropyLoss()
    curves: dict[str, list] = {"step": [], "train_loss": [], "test_loss": [], "test_accuracy": []}
    window: list[float] = []
    start = time.perf_counter()
    for step in range(cfg.steps):
        factor = cosine_warmup(step, cfg.steps, warmup)
        for g, base in zip(opt.param_groups, base_lrs):
            g["lr"] = base * factor
        d = generate(cfg.batch, tau=cfg.tau, margin=cfg.margin, alphabet=cfg.alphabet, seed=rng)
        x, y = torch.as_tensor(d.x).to(device), torch.as_tensor(d.y).to(device)
        loss = loss_fn(model(x), y)
        optimizer_step(loss, model, opt, cfg.grad_clip, f"step {step}",
                       {"curves": curves, "diverged_at": step})
        window.append(loss.item())
        if (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps:
            test_loss, test_acc = _evaluate(model, x_test, y_test, max(cfg.batch, 256))
            curves["step"].append(step + 1)
            curves["train_loss"].append(round(float(np.mean(window)), 6))
            curves["test_loss"].append(round(test_loss, 6))
            curves["test_accuracy"].append(round(test_acc, 6))
            window = []
    train_time = time.perf_counter() - start
    model = model.cpu()
    mf_after, mf_error = diagnose_after_training(memory_at, model, L, cfg.tau)
    return {
        "test_accuracy": curves["test_accuracy"][-1],
        "test_loss": curves["test_loss"][-1],
        "best_test_accuracy": max(curves["test_accuracy"]),
        "chance": cfg.chance,
        "length": L,
        "curves": curves,
        "mf_tau_before": mf_before,  # per layer: sup over channels of M[tau], window L
        "mf_tau_after": mf_after,  # None when it could not be computed (mf_after_error)
        "mf_after_error": mf_error,
        "frozen_share": float(model.frozen_share),
        "n_trainable": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "steps": cfg.steps,
        "train_time_s": round(train_time, 3),
        "device": str(device),
    }
