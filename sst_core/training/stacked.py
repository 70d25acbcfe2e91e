"""Many trackers of one architecture trained as one computation.

A sweep trains hundreds of small models that differ only in seed and learning rate. One
small model leaves most of the machine idle: every step is dozens of tiny kernels, and the
time goes to launching them. :func:`train_tracking_stacked` trains K such configs at once:

- the K models are built exactly as :func:`sst_core.training.tracking.train_tracking` builds them (same
  seeds), their parameters stacked along a new leading dimension
  (``torch.func.stack_module_state``), and one ``torch.func.vmap`` of the model's
  ``functional_call`` runs all K forward passes as batched operations;
- the loss is the sum of the K per-model losses, so one backward gives every model its
  own gradient (the parameters of different models never meet);
- :class:`StackedAdamW` is ``torch.optim.AdamW`` applied row by row, each row with its own
  learning rate (warm-up and schedule included); gradient clipping is per model as well;
- each model keeps its own curriculum, data stream (the same words as its separate run)
  and epoch log. When the models train at different lengths, shorter words are padded to
  the longest and the padding is left out of the loss; every model of the registry is
  causal, so the padding cannot change the positions that count (a test checks it);
- a model whose curriculum finishes, or whose loss stops being finite or grows past the
  divergence bound of :func:`sst_core.training.tracking.loss_failure`, leaves the stack (its row is
  copied back into its own module), and the rest go on.

The results equal K separate runs up to float rounding: batched matrix products sum in a
different order. ``tests/test_stacked.py`` compares the two. Configs stack when they differ
only in :data:`STACK_FIELDS` (:func:`stack_key`).
"""
from __future__ import annotations

import copy
import time
from dataclasses import fields
from pathlib import Path
from typing import Any, Sequence

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap
from torch.nn import functional as F

from sst_core.groups import get_group
from sst_core.store.records import RunFailed
from sst_core.training.tracking import (
    Checkpoints,
    EpochLog,
    build_tracker,
    flushing_denormals,
    heldout_accuracy,
    loss_failure,
    lr_at,
    make_curriculum,
    make_protocol,
    resolve_device,
    run_failed,
    save_weights,
    tracking_metrics,
    train_batch,
)

__all__ = ["STACK_FIELDS", "stack_key", "StackedAdamW", "StackedTracker",
           "train_tracking_stacked"]

# The fields in which configs of one stack may differ; all others must be equal.
STACK_FIELDS = ("seed", "lr", "schedule", "warmup_steps")


def stack_key(cfg) -> Any:
    """Configs with equal keys can be trained as one stack: their type and every field but
    :data:`STACK_FIELDS`."""
    return (type(cfg).__name__,
            *((f.name, getattr(cfg, f.name)) for f in fields(cfg) if f.name not in STACK_FIELDS))


def _rows(x: torch.Tensor, values: Sequence[float]) -> torch.Tensor:
    """``values`` as a float32 column that broadcasts against the stacked tensor ``x``."""
    return torch.tensor(values, dtype=x.dtype, device=x.device).view(-1, *[1] * (x.dim() - 1))


class StackedAdamW:
    """``torch.optim.AdamW`` on stacked parameters ``(K, ...)``, one learning rate per row.

    The arithmetic is torch's single-tensor AdamW step (the CPU default) row by row:
    decoupled decay ``p *= 1 - lr wd``, ``m = lerp(m, g, 1 - beta1)``,
    ``v = beta2 v + (1 - beta2) g^2``, ``p -= lr / (1 - beta1^t) * m / (sqrt(v) /
    sqrt(1 - beta2^t) + eps)``. All rows start together and leave for good, so one step
    count serves them all.
    """

    def __init__(self, params: dict[str, torch.Tensor], weight_decay: float,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        self.params = params
        self.weight_decay, self.betas, self.eps = weight_decay, betas, eps
        self.exp_avg = {k: torch.zeros_like(p) for k, p in params.items()}
        self.exp_avg_sq = {k: torch.zeros_like(p) for k, p in params.items()}
        self.t = 0

    @torch.no_grad()
    def step(self, lrs: Sequence[float]) -> None:
        """One update of every row; ``lrs[i]`` is row i's learning rate now."""
        self.t += 1
        beta1, beta2 = self.betas
        bias1, bias2_sqrt = 1 - beta1 ** self.t, (1 - beta2 ** self.t) ** 0.5
        decay = [1 - lr * self.weight_decay for lr in lrs]
        neg_step = [-lr / bias1 for lr in lrs]
        for name, p in self.params.items():
            if p.grad is None:
                continue
            g, m, v = p.grad, self.exp_avg[name], self.exp_avg_sq[name]
            p.mul_(_rows(p, decay))
            m.lerp_(g, 1 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            denom = (v.sqrt() / bias2_sqrt).add_(self.eps)
            p.add_(torch.mul(m, _rows(p, neg_step)).div_(denom))

    def keep(self, index: torch.Tensor) -> None:
        """Keep only the rows ``index`` of the moment estimates."""
        for state in (self.exp_avg, self.exp_avg_sq):
            for name in state:
                state[name] = state[name][index]


def clip_rows(params: dict[str, torch.Tensor], max_norm: float) -> None:
    """``nn.utils.clip_grad_norm_`` for every row on its own: each model's gradient is
    scaled by ``min(1, max_norm / (||g|| + 1e-6))`` with ``||g||`` over all its parameters."""
    grads = [p.grad for p in params.values() if p.grad is not None]
    norms = torch.stack([torch.linalg.vector_norm(g.flatten(1), 2, dim=1) for g in grads])  # (P, K)
    total = torch.linalg.vector_norm(norms, 2, dim=0)  # (K,)
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)  # (K,)
    for g in grads:
        g.mul_(coef.view(-1, *[1] * (g.dim() - 1)))


class StackedTracker:
    """K models of one architecture as one stacked module; rows can be dropped.

    ``logits(x)`` maps words ``(K, b, L)`` to ``(K, b, L, n_classes)``; ``step`` is one
    training step of every row (per-row losses in, per-row learning rates).
    """

    def __init__(self, models: Sequence[nn.Module], weight_decay: float, grad_clip: float):
        self.models = list(models)
        self.rows = list(range(len(self.models)))  # which model each row holds
        self.base = copy.deepcopy(self.models[0]).to("meta")
        params, buffers = stack_module_state(self.models)  # name -> (K, ...)
        self.params, self.buffers = params, buffers
        self.opt = StackedAdamW(self.params, weight_decay)
        self.grad_clip = grad_clip

    def _call(self, params, buffers, x):
        return functional_call(self.base, (params, buffers), (x,))

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return vmap(self._call)(self.params, self.buffers, x)  # (K, b, L, n_classes)

    def step(self, losses: torch.Tensor, lrs: Sequence[float]) -> None:
        """Backward of ``sum(losses)`` (one loss per row), clipping and one AdamW step."""
        for p in self.params.values():
            p.grad = None
        losses.sum().backward()
        if self.grad_clip:
            clip_rows(self.params, self.grad_clip)
        self.opt.step(lrs)

    @torch.no_grad()
    def write_back(self, row: int) -> nn.Module:
        """Copy row ``row``'s parameters into its own module and return that module."""
        model = self.models[self.rows[row]]
        for name, p in model.named_parameters():
            p.copy_(self.params[name][row])
        for name, b in model.named_buffers():
            if name in self.buffers:
                b.copy_(self.buffers[name][row])
        return model

    def drop(self, rows: Sequence[int]) -> None:
        """Remove ``rows`` from the stack (their modules keep what ``write_back`` put there)."""
        keep = [i for i in range(len(self.rows)) if i not in set(rows)]
        index = torch.tensor(keep, dtype=torch.long,
                             device=next(iter(self.params.values())).device)
        self.params = {k: p.detach()[index].requires_grad_(p.requires_grad)
                       for k, p in self.params.items()}
        self.buffers = {k: b[index] for k, b in self.buffers.items()}
        self.opt.params = self.params
        self.opt.keep(index)
        self.rows = [self.rows[i] for i in keep]


def _padded(batches: Sequence[tuple], device: torch.device
            ) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """Words and states of every row, padded with token 0 to the longest: (K, b, L_max)."""
    lengths = [w.shape[1] for w, _ in batches]
    L = max(lengths)
    x = torch.zeros(len(batches), batches[0][0].shape[0], L, dtype=torch.long)
    y = torch.zeros_like(x)
    for i, (w, s) in enumerate(batches):
        x[i, :, :w.shape[1]] = torch.from_numpy(w)
        y[i, :, :s.shape[1]] = torch.from_numpy(s)
    return x.to(device), y.to(device), lengths


def _row_losses(logits: torch.Tensor, y: torch.Tensor, lengths: list[int]
                ) -> tuple[torch.Tensor, list[int]]:
    """Mean cross-entropy of each row over its own positions, and its correct predictions."""
    K, b, L, n = logits.shape
    if all(l == L for l in lengths):
        ce = F.cross_entropy(logits.reshape(-1, n), y.reshape(-1), reduction="none")
        losses = ce.view(K, -1).mean(1)  # (K,)
        hits = (logits.detach().argmax(-1) == y).flatten(1).sum(1).tolist()
        return losses, hits
    losses, hits = [], []
    for i, l in enumerate(lengths):
        lg, yi = logits[i, :, :l], y[i, :, :l]  # (b, l, n), (b, l)
        losses.append(F.cross_entropy(lg.reshape(-1, n), yi.reshape(-1)))
        hits.append(int((lg.detach().argmax(-1) == yi).sum()))
    return torch.stack(losses), hits


@flushing_denormals
def train_tracking_stacked(cfgs: Sequence[Any], weights_to: Sequence[Path | None] | None = None
                           ) -> list[dict[str, Any] | RunFailed]:
    """Train the ``TrackingConfig``s ``cfgs`` (equal :func:`stack_key`) as one stack.

    Returns, per config and in order, the metrics :func:`sst_core.training.tracking.train_tracking`
    would return, or the :class:`RunFailed` it would raise (a loss that stopped being
    finite or diverged; the exception carries the metrics so far). ``weights_to[i]``: where to store
    model i's trained weights (a failed model stores none).
    """
    cfgs = list(cfgs)
    if not cfgs:
        return []
    keys = {stack_key(c) for c in cfgs}
    if len(keys) != 1:
        raise ValueError(f"configs of one stack may differ only in {', '.join(STACK_FIELDS)}; "
                         f"got {len(keys)} different architectures/settings")
    weights_to = list(weights_to) if weights_to is not None else [None] * len(cfgs)
    first = cfgs[0]
    device = resolve_device(first)
    n_g = get_group(first.group).order
    models = []
    for cfg in cfgs:
        torch.manual_seed(cfg.seed)
        models.append(build_tracker(cfg).to(device))
    stack = StackedTracker(models, first.weight_decay, first.grad_clip)
    curricula = [make_curriculum(c) for c in cfgs]
    protocols = [make_protocol(c) for c in cfgs]
    checkpoints = [Checkpoints(c) for c in cfgs]
    logs = [EpochLog(c.length) for c in curricula]
    results: list[Any] = [None] * len(cfgs)
    finished: dict[int, tuple[int, float]] = {}  # model -> (steps, train time)
    start = time.perf_counter()

    def leave(rows: list[int], steps: int) -> None:
        for r in rows:
            stack.write_back(r)
            finished[stack.rows[r]] = (steps, time.perf_counter() - start)
        stack.drop(rows)

    for step in range(first.max_steps):
        if not stack.rows:
            break
        x, y, lengths = _padded([train_batch(cfgs[k], step, curricula[k].length)
                                 for k in stack.rows], device)
        logits = stack.logits(x)  # (K, b, L, n_g)
        losses, hits = _row_losses(logits, y, lengths)
        values = losses.tolist()
        if step == 0:
            first_loss = dict(zip(stack.rows, values))  # model -> its first step's loss
        why = {r: loss_failure(v, first_loss[k], f"step {step} (length {curricula[k].length})")
               for r, (k, v) in enumerate(zip(stack.rows, values))}
        bad = [r for r, reason in why.items() if reason]
        if bad:
            for r in bad:
                k = stack.rows[r]
                results[k] = run_failed(why[r], {"history": logs[k].history, "steps": step,
                                                 "diverged_at": step})
            stack.drop(bad)
            if not stack.rows:
                break
            keep = [r for r in range(len(lengths)) if r not in bad]
            x, y = x[keep], y[keep]
            lengths = [lengths[r] for r in keep]
            logits = stack.logits(x)
            losses, hits = _row_losses(logits, y, lengths)
        stack.step(losses, [lr_at(cfgs[k], step) for k in stack.rows])

        done = []
        for r, (k, loss) in enumerate(zip(stack.rows, losses.tolist())):
            logs[k].add(loss, hits[r], y.shape[1] * lengths[r])
            n = step + 1
            if n % cfgs[k].steps_per_epoch == 0:
                acc = logs[k].close(n, curricula[k].length, cfgs[k].steps_per_epoch)
                if curricula[k].update(acc):
                    logs[k].reached.setdefault(curricula[k].length, n)
                    if curricula[k].done and protocols[k].passed_step is None:
                        protocols[k].passed(n)
                        stack.write_back(r)  # model k now holds its current weights
                        checkpoints[k].take("passed_60", models[k], n, device)
                protocols[k].curriculum_at(n, curricula[k].length)
            if protocols[k].wants_heldout(n):
                stack.write_back(r)
                if protocols[k].heldout(n, heldout_accuracy(cfgs[k], models[k], n, device)):
                    checkpoints[k].take("heldout", models[k], n, device)
            if protocols[k].should_stop(n):
                done.append(r)
        if done:
            leave(done, step + 1)
    if stack.rows:
        leave(list(range(len(stack.rows))), first.max_steps)

    for k, cfg in enumerate(cfgs):
        if results[k] is not None:
            continue
        steps, train_time = finished[k]
        metrics = tracking_metrics(cfg, models[k], curricula[k], logs[k], steps, train_time,
                                   device, protocols[k], checkpoints[k])
        metrics["stacked"] = len(cfgs)
        if weights_to[k] is not None:  # the weights of the checkpoint its m_p is from
            try:
                metrics["weights_sha256"] = save_weights(models[k], weights_to[k])
            except RunFailed as err:  # non-finite weights: this member fails alone
                err.metrics = metrics
                results[k] = err
                continue
        results[k] = metrics
    return results
