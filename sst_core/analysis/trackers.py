"""Loading a trained tracker for an analysis, and reading its hidden states.

Every analysis of a trained tracker (:mod:`sst_core.analysis.error_control`,
:mod:`~sst_core.analysis.label_free`, :mod:`~sst_core.analysis.spectra`) starts the same
way: the training record and its weights from the store, held-out words on a seed no
training or evaluation word uses, and the readout-space hidden states of those words.
Loading only: a tracker without a usable record or weights file is an error naming the
run, since training it is the sweep's job (``sst sweep``; the analysis grids' first phase).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from sst_core.spec.configs import TrackingConfig, config_hash
from sst_core.store.records import (
    RecordError,
    RunFailed,
    artifact_path,
    load_record,
    record_path,
)

DIAG_SEED_OFFSET = 2_000_003  # diagnostic words share no seed with training or evaluation
STATE_BATCH = 256  # words per forward pass when reading hidden states


class TrackerMissing(RuntimeError):
    """The trained tracker an analysis reads has no usable record or weights (an error,
    not a failed analysis: the tracker must be trained first)."""


def load_tracker(cfg: TrackingConfig) -> tuple[dict[str, Any], Any]:
    """The training record of ``cfg`` and its trained model (CPU, eval mode).

    Raises :class:`TrackerMissing` naming the run (and the file) when the record or the
    weights beside it are missing or unreadable, and ``RunFailed`` (the analysis is then
    recorded as failed) when the training run failed.
    """
    from sst_core.training.tracking import file_sha256, load_weights

    rid = config_hash(cfg)
    what = f"training run {rid} ({cfg.model} on {cfg.group}, profile {cfg.profile})"
    path = record_path(cfg)
    if not path.exists():
        raise TrackerMissing(f"{what} has no record at {path}: train it first "
                             f"(sst sweep, or sst_core.experiments.runs.run)")
    try:
        rec = load_record(path)
    except RecordError as err:
        raise TrackerMissing(f"{what}: {err}") from None
    if rec["status"] != "ok":
        raise RunFailed(f"{what} failed: {rec.get('reason')}")
    weights = artifact_path(cfg, ".pt")
    if not weights.exists():
        raise TrackerMissing(f"{what} has no weights at {weights}: retrain it "
                             f"(sst sweep ... --retry-stale, or delete its record)")
    stored = rec["metrics"].get("weights_sha256")  # records older than the hash have none
    if stored is not None and file_sha256(weights) != stored:
        raise TrackerMissing(f"{what}: the weights file {weights} is not the one its record "
                             f"{path} was trained with (sha256 {file_sha256(weights)[:12]}..., "
                             f"the record says {stored[:12]}...): copied from another run? "
                             "retrain it (delete the weights) or put the run's own back")
    try:
        model = load_weights(cfg, weights)
    except (RuntimeError, OSError, EOFError, ValueError) as err:
        raise TrackerMissing(f"{what}: weights file {weights} is unreadable "
                             f"({type(err).__name__}: {err})") from None
    for name, tensor in model.state_dict().items():  # an ok run's weights are finite
        if tensor.is_floating_point() and not bool(tensor.isfinite().all()):
            bad = int((~tensor.isfinite()).sum())
            raise TrackerMissing(f"{what}: weights file {weights} holds non-finite values "
                                 f"({bad} of {tensor.numel()} entries of {name}), so it is not "
                                 "the weights of an ok run: retrain it (delete the weights)")
    return rec, model


def held_out_words(cfg: TrackingConfig, n: int, length: int, seed: int,
                   offset: int = DIAG_SEED_OFFSET) -> tuple[np.ndarray, np.ndarray]:
    """``n`` held-out words of ``length`` over the run's group and vocabulary, and their
    running products: (n, L) tokens, (n, L) states, on the seed ``offset + seed`` (the
    diagnostics' offset by default; an analysis that wants words of its own passes its
    own offset)."""
    from sst_core.groups import get_group
    from sst_core.tasks.tracking import sample

    return sample(get_group(cfg.group), n, length, tokens=cfg.tokens, seed=offset + seed)


def readout_states(model, words: np.ndarray) -> np.ndarray:
    """The last layer's hidden states of ``words`` (b, L): (b, L, d) in the model's dtype.

    Not converted to float64 here: the diagnostics of
    :mod:`sst_core.analysis.diagnostics` convert a block of times at a time, which gives
    the same float64 numbers without a float64 copy of every state (an A5 tracker's 20,480
    words x 1,000 steps x 64 features are 10 GiB in float64, half that as the model keeps
    them)."""
    import torch

    with torch.no_grad():
        if len(words) == 0:  # the model's own shape of an empty batch
            return model.hidden_states(torch.from_numpy(words))[-1].numpy()
        out = None  # (b, L, d), filled a batch of words at a time
        for i in range(0, len(words), STATE_BATCH):
            h = model.hidden_states(torch.from_numpy(words[i:i + STATE_BATCH]))[-1]  # (B, L, d)
            if out is None:
                out = torch.empty((len(words),) + tuple(h.shape[1:]), dtype=h.dtype)
            out[i:i + len(h)] = h
    return out.numpy()
