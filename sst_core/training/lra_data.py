"""The data of one LRA run, by task name: generated stand-ins or the user's LRA files.

``load_task(cfg)`` returns a :class:`TaskData` with train / val / test :class:`Split` s and
what the model needs to read them (``d_input``, ``encoder``, ``n_classes``):

=================  ===========================================================  ==========
task               data                                                         input
=================  ===========================================================  ==========
``listops``        generated (``listops.generate``), lengths in                 tokens
                   ``[max_length // 4, max_length]``, depth 10, 10 arguments
``pathfinder``     generated 32 x 32 "hard" images (``pathfinder.generate``),   pixels
                   flattened row-major, normalised to [-1, 1] as S4 does
``digits``         scikit-learn's bundled 8 x 8 digits, resized to               pixels
                   ``image_side``, at most ``n_train`` of them for training:
                   a stand-in for sequential CIFAR
``lra_listops``    ``read_listops(<data>/listops-1000)``                        tokens
``lra_pathfinder`` ``read_pathfinder(<data>/pathfinder32)``                     pixels
``lra_imdb``       ``read_imdb(<data>)`` (``aclImdb`` inside; byte level)       tokens
``lra_aan``        ``read_aan(<data>/tsv_data)``: document pairs, byte level     token pairs
``lra_cifar``      ``read_cifar10(<data>)`` (``cifar-10-batches-py`` inside)    pixels
=================  ===========================================================  ==========

``<data>`` is ``$SST_LRA_DATA`` (set by ``sst lra --data-dir``): the folder into which the
LRA release (``lra_release/``) and the IMDB and CIFAR-10 archives were unpacked. The
fingerprint of the files a ``lra_*`` task reads (:func:`data_fingerprint`) is part of its
config (``LRAConfig.data_fingerprint``, set by the grids), so other files are another run;
a run whose config holds another fingerprint than the files it reads (or none) stops with a
``DataError`` naming both, before it trains.

Generated data depends only on the task's own settings and ``data_seed`` (never on the
model's seed), so every run of a table cell sees the same examples. It is generated once
and kept under ``<results>/<profile>/lra_data/`` (an ``.npz`` written atomically);
Pathfinder images take about 0.1 s each, so this matters.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sst_core.spec.configs import LRA_TASKS
from sst_core.store.records import results_dir, write_bytes_atomic
from sst_core.tasks.lra import Split

GENERATED = ("listops", "pathfinder", "digits")
DATA_ENV = "SST_LRA_DATA"
# lra_* task -> its reader in sst_core.tasks.lra
READER_OF = {"lra_listops": "listops", "lra_pathfinder": "pathfinder", "lra_imdb": "imdb",
             "lra_aan": "aan", "lra_cifar": "cifar10"}


@dataclass
class TaskData:
    train: Split
    val: Split
    test: Split
    n_classes: int
    d_input: int  # vocabulary size (tokens) or channels (pixels)
    encoder: str  # "embedding" | "linear"
    describe: dict[str, Any]  # JSON-ready: sizes and source, stored in the run record


def _check_task(task: str) -> None:
    if task not in LRA_TASKS:
        raise ValueError(f"unknown LRA task {task!r}; allowed: {', '.join(LRA_TASKS)}")
    if task.startswith("lra_") and not os.environ.get(DATA_ENV):
        raise ValueError(f"task {task!r} reads the LRA release: point ${DATA_ENV} (or "
                         f"`sst lra --data-dir DIR`) at the folder that holds it")


def _check(cfg) -> None:
    _check_task(cfg.task)
    if cfg.n_train < 4:
        raise ValueError(f"n_train={cfg.n_train} must be at least 4")


def _generated_key(cfg) -> dict[str, Any]:
    key = {"task": cfg.task, "n_train": cfg.n_train, "data_seed": cfg.data_seed}
    if cfg.task == "listops":
        key["max_length"] = cfg.max_length
    elif cfg.task == "pathfinder":
        key.update(size=cfg.pathfinder_size, difficulty=cfg.difficulty)
    else:
        key["image_side"] = cfg.image_side
    return key


def _generate(cfg) -> dict[str, Split]:
    n_eval = max(1, cfg.n_train // 4)
    n_all = cfg.n_train + 2 * n_eval
    if cfg.task == "listops":
        from sst_core.tasks import listops

        lo = max(1, cfg.max_length // 4)
        d = listops.generate(n_all, min_length=lo, max_length=cfg.max_length,
                             seed=cfg.data_seed)
        x, lengths, y = d.x, d.lengths, d.y
    elif cfg.task == "pathfinder":
        from sst_core.tasks import pathfinder

        params = pathfinder.lra_params(cfg.pathfinder_size, cfg.difficulty)
        d = pathfinder.generate(n_all, params, seed=cfg.data_seed)
        x = pathfinder.as_sequence(d.images, kind="normalized").astype(np.float32)  # (n, L, 1)
        lengths = np.full(n_all, x.shape[1], np.int64)
        y = d.y
    else:
        from sst_core.tasks.images import load_digits_sequences

        splits = load_digits_sequences(side=cfg.image_side, seed=cfg.data_seed)
        # at most n_train training images (and a quarter of that for val and test), so the
        # profiles size digits like the generated tasks; 1797 images exist in all
        keep = {"train": cfg.n_train, "val": n_eval, "test": n_eval}
        return {k: Split(s.x[:keep[k]], s.lengths[:keep[k]], s.y[:keep[k]])
                for k, s in splits.items()}
    cut = [cfg.n_train, cfg.n_train + n_eval]
    parts = zip(("train", "val", "test"), np.split(np.arange(n_all), cut))
    return {k: Split(x[i], np.asarray(lengths)[i], np.asarray(y)[i]) for k, i in parts}


def _cached_generated(cfg) -> dict[str, Split]:
    key = _generated_key(cfg)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    path = results_dir() / cfg.profile / "lra_data" / f"{cfg.task}-{digest}.npz"
    if path.exists():
        try:
            with np.load(path) as z:
                return {k: Split(z[f"{k}_x"], z[f"{k}_lengths"], z[f"{k}_y"])
                        for k in ("train", "val", "test")}
        except (OSError, ValueError, KeyError):
            path.unlink(missing_ok=True)  # unreadable cache: generate again
    splits = _generate(cfg)
    buf = io.BytesIO()
    np.savez(buf, **{f"{k}_{f}": getattr(s, f) for k, s in splits.items()
                     for f in ("x", "lengths", "y")})
    write_bytes_atomic(path, buf.getvalue())
    return splits


def data_root() -> Path | None:
    """The user's LRA folder (``$SST_LRA_DATA``), or None."""
    value = os.environ.get(DATA_ENV)
    return Path(value) if value else None


def task_folder(task: str, root: Path) -> Path:
    """Where a ``lra_*`` task's files are under the data folder (the folder itself when it
    already is the task's folder)."""
    sub = {"lra_listops": ("listops-1000", "basic_train.tsv"),
           "lra_pathfinder": ("pathfinder32", None),
           "lra_aan": ("tsv_data", None)}.get(task)
    if sub is None:
        return root
    name, marker = sub
    for candidate in (root / name, root / "lra_release" / name):
        if candidate.is_dir():
            return candidate
    return root


def data_fingerprint(task: str, difficulty: str = "hard") -> str:
    """The fingerprint (``sst_core.tasks.lra.fingerprint``) of the files the ``lra_*``
    ``task`` reads from ``$SST_LRA_DATA`` (``difficulty``: Pathfinder's)."""
    from sst_core.tasks import lra

    _check_task(task)
    if task not in READER_OF:
        raise ValueError(f"task {task!r} is generated and reads no files; allowed: "
                         f"{', '.join(READER_OF)}")
    return lra.fingerprint(READER_OF[task], task_folder(task, data_root()), difficulty)


def _check_fingerprint(cfg) -> None:
    from sst_core.tasks import lra

    found = data_fingerprint(cfg.task, cfg.difficulty)
    if cfg.data_fingerprint == found:
        return
    where = task_folder(cfg.task, data_root())
    if not cfg.data_fingerprint:
        raise lra.DataError(
            f"task {cfg.task!r}: the config has no data_fingerprint; the files at {where} "
            f"have {found!r}: give the config data_fingerprint={found!r} (the grids of "
            "sst_core.experiments.paper2 do), so that its run id names its data")
    raise lra.DataError(
        f"task {cfg.task!r}: the config's data_fingerprint {cfg.data_fingerprint!r} is not "
        f"the fingerprint {found!r} of the files at {where} (other files, or files changed "
        "since the config was made): other data is another run; build the config again")


def _read(cfg) -> dict[str, Split]:
    from sst_core.tasks import lra

    root = task_folder(cfg.task, data_root())
    if cfg.task == "lra_listops":
        splits = lra.read_listops(root)
    elif cfg.task == "lra_pathfinder":
        splits = lra.read_pathfinder(root, difficulty=cfg.difficulty)
    elif cfg.task == "lra_imdb":
        splits = lra.read_imdb(root)
    elif cfg.task == "lra_aan":
        splits = lra.read_aan(root)
    else:
        splits = lra.read_cifar10(root)
    # the readers reject files without examples; a split drawn at random from a small
    # data set (Pathfinder: 80/10/10, CIFAR-10: 10 % of train for validation) can still be
    # empty, and would train nothing or divide by zero when evaluated
    empty = [k for k, s in splits.items() if not len(s)]
    if empty:
        sizes = ", ".join(f"{k} {len(s)}" for k, s in splits.items())
        raise lra.DataError(f"task {cfg.task!r}: no {empty[0]} examples in the data read from "
                            f"{root} (examples per split: {sizes}); a data set this small "
                            "cannot be split for training and evaluation")
    return splits


def load_task(cfg) -> TaskData:
    """The splits and input description of ``cfg.task`` (an ``LRAConfig``)."""
    _check(cfg)
    if cfg.task in GENERATED:
        splits = _cached_generated(cfg)
    else:
        splits = _read(cfg)
        _check_fingerprint(cfg)
    train, val, test = splits["train"], splits["val"], splits["test"]
    pixels = train.x.dtype.kind == "f"
    if pixels:
        encoder = "linear"
        d_input = 1 if train.x.ndim == 2 else int(train.x.shape[-1])
    else:
        encoder = "embedding"
        d_input = int(max(s.x.max(initial=0) for s in (train, val, test))) + 1
        train, val, test = (Split(s.x.astype(np.int64), s.lengths, s.y) for s in (train, val, test))
    n_classes = int(max(s.y.max(initial=0) for s in (train, val, test))) + 1
    describe = {"task": cfg.task, "source": "generated" if cfg.task in GENERATED else "LRA files",
                "n_train": len(train.y), "n_val": len(val.y), "n_test": len(test.y),
                "length": int(train.x.shape[1] if pixels else train.x.shape[-1]),
                "pairs": bool(not pixels and train.x.ndim == 3), "n_classes": n_classes,
                "d_input": d_input, "encoder": encoder}
    return TaskData(train, val, test, n_classes, d_input, encoder, describe)
