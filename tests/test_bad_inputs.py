"""Bad inputs get a clear error that names the bad value (and the file, where there is one)
and what is allowed; a diverging training run is recorded as failed (issue 17, the lower
layers: trainers, configs, data readers, tasks, theory, model registry)."""
from __future__ import annotations

import math
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from sst_core.analysis.any_model import DiagnosisUndetermined, StepError
from sst_core.experiments import paper1, paper2
from sst_core.models import build
from sst_core.spec.configs import LRAConfig, TrackingConfig, config_hash
from sst_core.spec.profiles import ConfigError, get_profile
from sst_core.store.records import RunFailed, StoreError, cached_run
from sst_core.tasks.lra import DataError, read_aan, read_imdb, read_listops, read_pathfinder
from sst_core.sweep.runner import parse_stop_by, sweep
from sst_core.tasks.tracking import sample
from sst_core.theory.memory import memory_function
from sst_core.training import tracking as train
from sst_core.training.lra import train_lra
from sst_core.training.tracking import run_device
from sst_core.training.stacked import train_tracking_stacked
from sst_core.book.params import check_parameters
from tests.tasks.test_lra import write_aan, write_imdb, write_listops, write_pathfinder
from tests.test_any_model import SMALL, permutation_map


def tracker(**kw) -> TrackingConfig:
    """A tiny tracking run (smoke sizes, C2, CPU): about a second."""
    base = dict(model="linear_rnn", group="C2", n_layers=1, d_model=8, d_state=8, lr=0.01,
                seed=0, profile="smoke", batch=16, max_steps=30, steps_per_epoch=2,
                curriculum_patience=1, eval_lengths=(60,), eval_samples=16, device="cpu")
    base.update(kw)
    return TrackingConfig(**base)


def lra(**kw) -> LRAConfig:
    base = dict(task="listops", init="inv", freeze_spectrum=False, H=8, N=4, n_layers=1,
                epochs=1, batch=8, seed=0, profile="smoke")
    base.update(kw)
    return LRAConfig(**base)


def diagnostics(**kw):
    """The diagnostics of a tiny tracking run, ``kw`` changed."""
    from sst_core.spec.configs import DiagnosticsConfig

    return DiagnosticsConfig(run=tracker(), **{"n_samples": 32, **kw})


def unchecked(cfg, **changes):
    """``cfg`` with ``changes`` set past the config's own checks: the trainers guard
    themselves against divergence whatever learning rate they are given."""
    for name, value in changes.items():
        object.__setattr__(cfg, name, value)
    return cfg


# -- divergence ----------------------------------------------------------------------------

@pytest.mark.parametrize("model,lr", [
    ("linear_rnn", 10.0),  # the largest learning rate a TrackingConfig allows
    ("tanh_rnn", 1000.0),  # the reported run: recorded ok with a final loss of 2.4e30
])
def test_a_diverging_run_is_recorded_as_failed(model, lr, tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    cfg = unchecked(tracker(model=model), lr=lr)
    rec = cached_run(cfg, train.train_tracking)
    assert rec["status"] == "failed"
    reason = rec["reason"]
    step = rec["metrics"]["diverged_at"]
    assert reason.startswith(f"RunFailed: loss diverged at step {step} (length 2): ")
    assert "exceeds the bound" in reason
    assert f"({train.DIVERGENCE_FACTOR:g} x the first step's loss" in reason
    assert rec["metrics"]["steps"] == step and "history" in rec["metrics"]
    assert list((tmp_path / "smoke" / "tracking").glob("*.json"))


def test_loss_failure_names_the_step_the_loss_and_the_bound():
    assert train.loss_failure(2.0, 1.0, "step 3") is None
    assert train.loss_failure(1000.0, 1.0, "step 3") is None  # at the bound: still fine
    why = train.loss_failure(1000.5, 1.0, "step 3 (length 4)")
    assert why == ("loss diverged at step 3 (length 4): 1000.5 exceeds the bound 1000 "
                   "(1000 x the first step's loss 1)")
    assert train.loss_failure(float("nan"), 1.0, "step 7") == "loss became nan at step 7"
    assert train.loss_failure(float("inf"), 1.0, "step 7") == "loss became inf at step 7"


def test_a_diverging_stack_member_fails_alone():
    """The diverged member fails as its separate run does; the other member computes
    exactly what it computes alone."""
    good = tracker(seed=0, lr=0.01)
    bad = replace(good, seed=1, lr=10.0)
    with pytest.raises(RunFailed, match="loss diverged at step") as alone:
        train.train_tracking(bad)
    out_good, out_bad = train_tracking_stacked([good, bad])
    assert isinstance(out_bad, RunFailed)
    assert out_bad.metrics["diverged_at"] == alone.value.metrics["diverged_at"]
    assert str(out_bad).split(":")[0] == str(alone.value).split(":")[0]  # the same step
    assert "exceeds the bound" in str(out_bad)
    ref = train.train_tracking(good)
    assert out_good.pop("stacked") == 2
    for m in (ref, out_good):
        m.pop("train_time_s")
    assert out_good == ref


# -- LRA files (the fixtures of tests/tasks/test_lra.py, one file spoiled) -----------------

def listops_with(tmp: Path, split: str, text: str | bytes) -> Path:
    write_listops(tmp)
    path = tmp / f"basic_{split}.tsv"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def aan_with(tmp: Path, name: str, blob: bytes) -> Path:
    write_aan(tmp)
    (tmp / f"new_aan_pairs.{name}.tsv").write_bytes(blob)
    return tmp


def pathfinder_without_rows(tmp: Path, binary: bool) -> Path:
    _, root = write_pathfinder(tmp, binary_meta=binary)
    meta = root / "curv_contour_length_14" / "metadata" / "1.npy"
    if binary:
        np.save(meta, np.empty((0, 11), dtype="<U16"))
    else:
        meta.write_text("\n")
    return root


def pathfinder_too_small(tmp: Path) -> dict:
    """A Pathfinder release of 8 images: its 80/10/10 split leaves val and test empty."""
    _, root = write_pathfinder(tmp, n=8)
    os.environ["SST_LRA_DATA"] = str(root)  # test_bad_input restores it (monkeypatch)
    return train_lra(lra(task="lra_pathfinder", mf_T=0))


def imdb_with(tmp: Path, how: str) -> Path:
    """An IMDB release with one review spoiled: a folder named ``*.txt`` or a broken
    symbolic link where a review belongs."""
    base = write_imdb(tmp)
    spoiled = base / "train" / "pos" / "9_8.txt"
    if how == "folder":
        spoiled.mkdir()
    else:
        spoiled.symlink_to(tmp / "gone.txt")
    return base


def pathfinder_with(tmp: Path, how: str) -> Path:
    """A Pathfinder release with ``metadata/7.npy`` a folder, or an image named twice."""
    _, root = write_pathfinder(tmp)
    meta = root / "curv_contour_length_14" / "metadata"
    if how == "meta-folder":
        (meta / "7.npy").mkdir()
    else:  # the first row of 0.npy again at the end of 1.npy
        first = (meta / "0.npy").read_text().splitlines()[0]
        (meta / "1.npy").write_text((meta / "1.npy").read_text() + first + "\n")
    return root


def listops_long_line(tmp: Path) -> Path:
    """A ListOps release whose test file holds one expression of 5,002 tokens."""
    return listops_with(tmp, "test", HEADER + "[MAX " + "1 " * 5000 + "]\t1\n").parent


def store_fault(tmp: Path, how: str) -> dict:
    """``cached_run`` of a tiny tracking config (its run writes weights beside the record,
    as a tracker does) with its results folder read-only, the disk full once the weights
    are written, or a folder where its record belongs (the fault applied in-process:
    root ignores a folder's mode, and no test fills a real disk)."""
    import errno
    from unittest import mock

    from sst_core.store import records
    from sst_core.training.tracking import save_weights

    cfg = tracker()
    full = []

    def run(c):
        save_weights(__import__("torch").nn.Linear(2, 2), records.artifact_path(c, ".pt"))
        full.append(True)  # the weights took the disk's last bytes
        return {"m_p": 60}

    real_fsync = os.fsync

    def fsync(fd):
        if full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_fsync(fd)

    def mkstemp(*args, **kw):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    if how == "folder":
        records.record_path(cfg).mkdir(parents=True)
        return cached_run(cfg, run)
    patch = (mock.patch.object(os, "fsync", fsync) if how == "full"
             else mock.patch("tempfile.mkstemp", mkstemp))
    with patch:
        return cached_run(cfg, run)


def stack_with_a_folder() -> list:
    """A stack of two tracking runs, a folder where the second one's record belongs: refused
    before the stack trains."""
    from sst_core.experiments.runs import run_stack
    from sst_core.store.records import record_path

    group = [tracker(seed=0), tracker(seed=1)]
    record_path(group[1]).mkdir(parents=True)
    return run_stack(group)



# -- diagnose_any on hostile recurrences (issue 57): an S3 map that tracks exactly, spoiled --

def any_diag(step=None, group="S3", **kw):
    """diagnose_any of the exact S3 permutation map (or ``step``) at small sizes."""
    import torch

    from sst_core.analysis.any_model import diagnose_any

    g, exact, h0, _ = permutation_map()
    args = dict(h0=h0, n_tokens=g.order, **SMALL)
    args.update(kw)
    return diagnose_any(exact if step is None else step, group, **args)


def spoiled(how: str):
    """The exact map with one fault: ``how`` names it."""
    import torch

    _, exact, _, _ = permutation_map()

    def zero_input(h, x):
        out = exact(h, x)
        h.zero_()
        return out

    return {
        "detach": lambda h, x: exact(h.detach(), x),
        "zero-input": zero_input,
        "random": lambda h, x: exact(h, x) + 1e-3 * torch.randn_like(h),
        "ignore-token": lambda h, x: 0.5 * h + 1,
        "nan": lambda h, x: exact(h, x) * float("nan"),
        "overflow": lambda h, x: exact(h, x) * 1e30,
        "numpy": lambda h, x: np.tanh(h.numpy()),
        "small-table": lambda h, x: torch.tanh(h * torch.ones(3, 8, dtype=h.dtype)[x]),
    }[how]


def any_gru(**module_kw):
    from torch import nn

    from sst_core.analysis.any_model import diagnose_any

    return diagnose_any(nn.GRU(6, 8, batch_first=True, **module_kw), "S3", **SMALL)


# -- the table: one row per bad input ----------------------------------------------------
# (id, call(tmp_path), exception type, what the message must contain)

HEADER = "Source\tTarget\n"

LR_RULE = "a learning rate must be finite and > 0 (at most 10)"
ROWS = [
    # configs
    ("tracking-lr-huge", lambda tmp: tracker(lr=1e39), ConfigError,
     ["TrackingConfig.lr=1e+39 is not allowed", LR_RULE]),
    ("tracking-lr-nan", lambda tmp: tracker(lr=math.nan), ConfigError,
     ["TrackingConfig.lr=nan", LR_RULE]),
    ("tracking-lr-negative", lambda tmp: tracker(lr=-1), ConfigError,
     ["TrackingConfig.lr=-1", LR_RULE]),
    ("tracking-lr-zero", lambda tmp: tracker(lr=0), ConfigError,
     ["TrackingConfig.lr=0", LR_RULE]),
    ("tracking-lr-above-10", lambda tmp: tracker(lr=1000.0), ConfigError,
     ["TrackingConfig.lr=1000.0", LR_RULE]),
    ("tracking-weight-decay", lambda tmp: tracker(weight_decay=-0.1), ConfigError,
     ["TrackingConfig.weight_decay=-0.1", "finite number >= 0"]),
    ("tracking-batch", lambda tmp: tracker(batch=0), ConfigError,
     ["TrackingConfig.batch=0", "an int >= 1"]),
    ("tracking-max-steps-float", lambda tmp: tracker(max_steps=2.5), ConfigError,
     ["TrackingConfig.max_steps=2.5", "an int >= 1"]),
    ("tracking-d-state", lambda tmp: tracker(d_state=-4), ConfigError,
     ["TrackingConfig.d_state=-4", "an int >= 1"]),
    ("tracking-seed", lambda tmp: tracker(seed=-1), ConfigError,
     ["TrackingConfig.seed=-1", "an int >= 0"]),
    ("lra-lr-inf", lambda tmp: lra(lr=math.inf), ConfigError, ["LRAConfig.lr=inf", LR_RULE]),
    ("lra-ssm-lr-zero", lambda tmp: lra(ssm_lr=0.0), ConfigError,
     ["LRAConfig.ssm_lr=0.0", LR_RULE]),
    ("lra-ssm-lr-zero-frozen", lambda tmp: lra(ssm_lr=0.0, freeze_spectrum=True), ConfigError,
     ["LRAConfig.ssm_lr=0.0", LR_RULE]),
    ("lra-weight-decay-nan", lambda tmp: lra(weight_decay=math.nan), ConfigError,
     ["LRAConfig.weight_decay=nan", "finite number >= 0"]),
    ("lra-H", lambda tmp: lra(H=0), ConfigError, ["LRAConfig.H=0", "an int >= 1"]),
    ("lra-epochs", lambda tmp: lra(epochs=True), ConfigError,
     ["LRAConfig.epochs=True", "an int >= 1"]),
    ("lra-mf-T", lambda tmp: lra(mf_T=-1), ConfigError, ["LRAConfig.mf_T=-1", "an int >= 0"]),
    # LRA data readers
    ("listops-train-only-header",
     lambda tmp: read_listops(listops_with(tmp, "train", HEADER).parent), DataError,
     ["no examples in ", "basic_train.tsv (only a header)"]),
    ("listops-test-only-header",
     lambda tmp: read_listops(listops_with(tmp, "test", HEADER + "\n").parent), DataError,
     ["no examples in ", "basic_test.tsv (only a header)"]),
    ("listops-not-utf8",
     lambda tmp: read_listops(listops_with(tmp, "val", HEADER.encode() + b"[MAX 1 \xff ]\t1\n"
                                           ).parent), DataError,
     ["basic_val.tsv: not UTF-8 text (line 2, byte offset 21: b'\\xff'"]),
    ("listops-columns",
     lambda tmp: read_listops(listops_with(tmp, "val", HEADER + "[MAX 1 2 ]\t2\tx\n").parent),
     DataError, ["basic_val.tsv: line 2 is not '<expression><TAB><0..9>'",
                 "3 tab-separated columns, not 2"]),
    ("listops-label-word",
     lambda tmp: read_listops(listops_with(tmp, "val", HEADER + "[MAX 1 2 ]\tnine\n").parent),
     DataError, ["basic_val.tsv: line 2", "label 'nine' is not one of 0..9"]),
    ("listops-label-12",
     lambda tmp: read_listops(listops_with(tmp, "train", HEADER + "[MAX 1 2 ]\t2\n"
                                                         "[MAX 3 4 ]\t12\n").parent),
     DataError, ["basic_train.tsv: line 3", "label '12' is not one of 0..9"]),
    ("aan-empty", lambda tmp: read_aan(aan_with(tmp, "eval", b"")), DataError,
     ["no examples in ", "new_aan_pairs.eval.tsv (an empty file)"]),
    ("aan-blank-lines", lambda tmp: read_aan(aan_with(tmp, "test", b"\n\n")), DataError,
     ["no examples in ", "new_aan_pairs.test.tsv (only blank lines)"]),
    ("aan-not-utf8",
     lambda tmp: read_aan(aan_with(tmp, "train", b"1\tp1\tp2\ta\tb\n0\tp3\tp4\t\xc3(\tc\n")),
     DataError, ["new_aan_pairs.train.tsv: not UTF-8 text (line 2", "invalid continuation byte"]),
    ("pathfinder-empty-metadata-text",
     lambda tmp: read_pathfinder(pathfinder_without_rows(tmp, binary=False)), DataError,
     ["no examples in ", "metadata/1.npy (a metadata file without rows)"]),
    ("pathfinder-empty-metadata-npy",
     lambda tmp: read_pathfinder(pathfinder_without_rows(tmp, binary=True)), DataError,
     ["no examples in ", "metadata/1.npy (a metadata file without rows)"]),
    ("pathfinder-too-few-to-split", pathfinder_too_small, DataError,
     ["task 'lra_pathfinder': no val examples in the data read from ", "pathfinder32",
      "train 8, val 0, test 0"]),
    ("imdb-folder-named-txt", lambda tmp: read_imdb(imdb_with(tmp, "folder")), DataError,
     ["train/pos/9_8.txt: a folder, not a file", "expected layout"]),
    ("imdb-broken-symlink", lambda tmp: read_imdb(imdb_with(tmp, "link")), DataError,
     ["train/pos/9_8.txt: a broken symbolic link (to ", "gone.txt, which does not exist)"]),
    ("pathfinder-metadata-folder", lambda tmp: read_pathfinder(pathfinder_with(tmp, "meta-folder")),
     DataError, ["metadata/7.npy: a folder, not a file", "<int>.npy"]),
    ("pathfinder-image-named-twice",
     lambda tmp: read_pathfinder(pathfinder_with(tmp, "twice")), DataError,
     ["metadata/1.npy: row 5 names the image curv_contour_length_14/imgs/0/sample_0.png, "
      "which 0.npy row 1 names already", "could land in train and test"]),
    ("listops-long-line", lambda tmp: read_listops(listops_long_line(tmp)), DataError,
     ["basic_test.tsv: line 2: an expression of 5,002 tokens, above max_tokens=4,096",
      "pass a larger max_tokens="]),
    ("lra-fingerprint-not-hex", lambda tmp: lra(task="lra_listops", data_fingerprint="xyz"),
     ConfigError, ["LRAConfig.data_fingerprint='xyz' is not allowed", "16 hex digits"]),
    ("lra-fingerprint-generated",
     lambda tmp: lra(task="listops", data_fingerprint="0123456789abcdef"), ConfigError,
     ["data_fingerprint='0123456789abcdef' is not allowed for the generated task 'listops'"]),
    # the store
    ("store-read-only", lambda tmp: store_fault(tmp, "read-only"), StoreError,
     ["cannot write ", "results/smoke/tracking", "Read-only file system",
      "the results folder must be a writable folder with space left"]),
    ("store-disk-full", lambda tmp: store_fault(tmp, "full"), StoreError,
     ["cannot write ", ".json: No space left on device", "removed the run's ",
      ".pt with it"]),
    ("store-record-path-a-folder", lambda tmp: store_fault(tmp, "folder"), StoreError,
     ["cannot write ", "results/smoke/tracking/", ".json: a folder is where the run's record "
      "belongs; remove or rename it"]),
    ("stack-record-path-a-folder", lambda tmp: stack_with_a_folder(), StoreError,
     ["cannot write ", "results/smoke/tracking/", ".json: a folder is where the run's record "
      "belongs", "remove or rename it"]),
    # papermill parameters
    ("papermill-n-words-1e8",
     lambda tmp: check_parameters("p1_groups", {"n_words": 100_000_000}), ConfigError,
     ["parameter n_words=100000000 of notebook 'p1_groups' is above its cap 1,000,000",
      "(10 x its value in profile 'paper')", "set $SST_PARAMETER_CAP_FACTOR"]),
    # group words
    ("sample-seed", lambda tmp: sample("S3", 4, 5, seed=-1), ValueError,
     ["seed=-1 is not allowed", "a non-negative int or None"]),
    ("sample-n", lambda tmp: sample("S3", 0, 5), ValueError,
     ["n=0 is not allowed", "an int >= 1"]),
    ("sample-length", lambda tmp: sample("S3", 4, 2.5), ValueError,
     ["length=2.5 is not allowed", "an int >= 1"]),
    # theory
    ("memory-2d-mu", lambda tmp: memory_function(0.5 * np.eye(3), 8), ValueError,
     ["mu has shape (3, 3)", "a 1-D array of eigenvalues is expected"]),
    # diagnose_any: arguments in the caller's words
    ("any-seed-str", lambda tmp: any_diag(seed="0"), ValueError,
     ["diagnose_any: seed='0' is not allowed", "an int in 0..2147483647"]),
    ("any-seed-negative", lambda tmp: any_diag(seed=-1), ValueError,
     ["diagnose_any: seed=-1 is not allowed", "an int in 0.."]),
    ("any-seed-float", lambda tmp: any_diag(seed=1.5), ValueError,
     ["diagnose_any: seed=1.5 is not allowed", "an int in 0.."]),
    ("any-n-perturb", lambda tmp: any_diag(n_perturb=0), ValueError,
     ["diagnose_any: n_perturb=0 is not allowed", "an int >= 1"]),
    ("any-perturb-steps", lambda tmp: any_diag(perturb_steps=0), ValueError,
     ["diagnose_any: perturb_steps=0 is not allowed", "an int >= 1"]),
    ("any-n-words", lambda tmp: any_diag(n_words=0), ValueError,
     ["diagnose_any: n_words=0 is not allowed", "an int >= 1"]),
    ("any-word-length", lambda tmp: any_diag(word_length=0), ValueError,
     ["diagnose_any: word_length=0 is not allowed", "an int >= 1"]),
    ("any-one-word", lambda tmp: any_diag(n_samples=1), ValueError,
     ["diagnose_any: n_samples=1 is not allowed", "an int >= 2"]),
    ("any-eps-nan", lambda tmp: any_diag(eps=math.nan), ValueError,
     ["diagnose_any: eps=nan is not allowed", "a finite number > 0"]),
    ("any-h0-pair", lambda tmp: any_diag(h0=(np.zeros(8), np.zeros(8))), ValueError,
     ["h0 is a tuple of 2 arrays (an (h, c) pair?)", "one state of shape (D,)"]),
    ("any-trivial-group", lambda tmp: any_diag(group="C1"), ValueError,
     ["group 'C1' has 1 element", "at least 2"]),
    ("any-readout-nan", lambda tmp: any_diag(readout=np.full((6, 8), np.nan)), ValueError,
     ["readout has 48 non-finite entries", "[0, 0] = nan"]),
    ("any-readout-zero", lambda tmp: any_diag(readout=np.zeros((6, 8))), ValueError,
     ["readout is zero (shape (6, 8))", "q is undefined"]),
    # diagnose_any: sizes are checked before anything is allocated
    ("any-huge-state", lambda tmp: any_diag(lambda h, x: 0.5 * h + x[:, None].to(h),
                                            h0=np.zeros(200_000), rollout=1000), ValueError,
     ["n_samples x rollout x d = 64 x 1000 x 200000", "above max_bytes=4294967296",
      "pass a larger max_bytes="]),
    ("any-rollout-1e6", lambda tmp: any_diag(rollout=10**6), ValueError,
     ["diagnose_any: rollout=1000000 is above max_rollout=20000", "pass max_rollout="]),
    # diagnose_any: the model's device and dtype
    ("any-bfloat16-gru", lambda tmp: any_gru(dtype=__import__("torch").bfloat16), ValueError,
     ["the model's tensors are torch.bfloat16", "torch.float32 or torch.float64"]),
    ("any-meta-gru", lambda tmp: any_gru(device="meta"), ValueError,
     ["the model's tensors are on meta", "allowed: cpu"]),
    # diagnose_any: steps that misbehave are named, never given a verdict
    ("any-n-tokens-above-table", lambda tmp: any_diag(spoiled("small-table")), StepError,
     ["step(h, x) raised IndexError", "on token ids [0, 5]", "n_tokens=6"]),
    ("any-numpy-step", lambda tmp: any_diag(spoiled("numpy")), ValueError,
     ["got a numpy.ndarray, not a torch.Tensor"]),
    ("any-detached-step", lambda tmp: any_diag(spoiled("detach")), StepError,
     ["breaks the tangent at the initial state, token 0", "J(h) v has norm 0"]),
    ("any-in-place-step", lambda tmp: any_diag(spoiled("zero-input")), StepError,
     ["changed its input h in place (token 0)"]),
    ("any-random-step", lambda tmp: any_diag(spoiled("random")), StepError,
     ["two different next states for the same h and token 0", "it is random"]),
    ("any-step-ignores-token", lambda tmp: any_diag(spoiled("ignore-token")), StepError,
     ["the same next state for every token id [0, 2, 3]", "ignores its token"]),
    ("any-nan-states", lambda tmp: any_diag(spoiled("nan")), DiagnosisUndetermined,
     ["the state became non-finite (NaN) at step 1 of word 0"]),
    ("any-overflowing-states", lambda tmp: any_diag(spoiled("overflow")), DiagnosisUndetermined,
     ["the state became non-finite (inf) at step 11 of word 0"]),
    ("any-degenerate-sample", lambda tmp: any_diag(group="S5", tokens="all", n_tokens=120, n_samples=2,
                                                   step=lambda h, x: __import__("torch").tanh(
                                                       h + x[:, None].to(h))),
     DiagnosisUndetermined, ["q is undetermined at step 1: the 2 words (n_samples)",
                             "raise n_samples"]),
    # devices: spelled as allowed in every config; available when the run starts
    *[(f"tracking-device-{d or 'empty'}", lambda tmp, d=d: tracker(device=d), ConfigError,
       [f"TrackingConfig.device={d!r} is not allowed", "'auto', 'cpu', 'cuda' or 'cuda:<index>'"])
      for d in ("tpu", "mps", "CPU", "", "meta")],
    ("lra-device-tpu", lambda tmp: lra(device="tpu"), ConfigError,
     ["LRAConfig.device='tpu' is not allowed"]),
    ("run-device-cuda-99", lambda tmp: run_device("cuda:99"), ValueError,
     ["device 'cuda:99' is not available here: torch sees", "allowed here: auto, cpu"]),
    # model options and sizes
    ("mamba-dt-max-inf", lambda tmp: build("mamba", 6, 6, 8, 8, dt_max=math.inf), ValueError,
     ["dt_max=inf is not allowed", "a finite number > 0"]),
    ("mamba3-A-floor-negative", lambda tmp: build("mamba3", 6, 6, 8, 8, A_floor=-5), ValueError,
     ["A_floor=-5 is not allowed", "a finite number > 0"]),
    ("attention-eps-negative", lambda tmp: build("linear_attention", 6, 6, 8, 8, eps=-1),
     ValueError, ["eps=-1 is not allowed", "a finite number > 0"]),
    ("aussm-dt-bias-twice-text", lambda tmp: build("aussm", 6, 6, 8, 8, dt_bias_twice="no"),
     ValueError, ["dt_bias_twice='no' is not allowed", "True or False"]),
    ("mamba-negative-text", lambda tmp: build("mamba", 6, 6, 8, 8, negative="False"), ValueError,
     ["negative='False' is not allowed", "True or False"]),
    ("mamba-dt-min-text", lambda tmp: build("mamba", 6, 6, 8, 8, dt_min="a"), ValueError,
     ["dt_min='a' is not allowed"]),
    ("build-d-state-huge", lambda tmp: build("mamba", 6, 6, 8, 2**20), ValueError,
     ["d_state=1048576 is above the cap 65536", "sst_core.spec.configs.MAX_SIZE"]),
    ("build-d-model-huge", lambda tmp: build("tanh_rnn", 6, 6, 10**6, 8), ValueError,
     ["d_model=1000000 is above the cap 65536"]),
    ("forward-ids-out-of-range",
     lambda tmp: build("mamba", 6, 6, 8, 8)(__import__("torch").tensor([[0, 9]])), ValueError,
     ["tokens must lie in 0..5 (n_tokens=6), got ids 0..9"]),
    ("forward-float-ids",
     lambda tmp: build("tanh_rnn", 6, 6, 8, 8)(__import__("torch").tensor([[0.0, 1.0]])),
     ValueError, ["tokens must be integer ids", "torch.float32"]),
    ("forward-length-0",
     lambda tmp: build("mamba", 6, 6, 8, 8)(__import__("torch").zeros(1, 0, dtype=int)),
     ValueError, ["tokens must have shape (b, L) with L >= 1, got (1, 0)"]),
    ("sample-length-1e9", lambda tmp: sample("S3", 4, 10**9), ValueError,
     ["n x length = 4 x 1000000000", "above the cap 268435456",
      "sst_core.tasks.tracking.MAX_TOKENS"]),
    ("sample-n-2-31", lambda tmp: sample("S3", 2**31, 5), ValueError,
     ["n x length = 2147483648 x 5", "above the cap"]),
    # sweeps
    ("sweep-address-with-local", lambda tmp: sweep("table2", "smoke", address="ray://x:10001"),
     ValueError, ["address='ray://x:10001' is for the ray executor"]),
    ("sweep-workers-1000", lambda tmp: sweep("table2", "smoke", workers=1000), ValueError,
     ["workers=1000 is above", "per core", "MAX_WORKERS_PER_CORE"]),
    ("stop-by-in-the-past", lambda tmp: parse_stop_by("2020-01-01T00:00"), ValueError,
     ["stop time '2020-01-01T00:00' has passed", "give a later one"]),
    # model registry
    # sizes in a config: refused when it is made, before a run asks the allocator
    ("tracking-d-state-cap", lambda tmp: tracker(d_state=2**20), ConfigError,
     ["TrackingConfig.d_state=1048576 is above the cap 65,536",
      "sst_core.spec.configs.MAX_SIZE", "raise it there"]),
    ("tracking-d-model-cap", lambda tmp: tracker(d_model=10**6), ConfigError,
     ["TrackingConfig.d_model=1000000 is above the cap 65,536"]),
    ("tracking-batch-cap", lambda tmp: tracker(batch=2**31), ConfigError,
     ["TrackingConfig.batch=2147483648 is above the cap 4,194,304",
      "sst_core.spec.configs.MAX_EXAMPLES"]),
    ("tracking-eval-length-cap", lambda tmp: tracker(eval_lengths=(60, 10**9)), ConfigError,
     ["TrackingConfig.eval_lengths=(60, 1000000000) is above the cap 65,536",
      "sst_core.spec.configs.MAX_LENGTH"]),
    ("tracking-eval-length-zero", lambda tmp: tracker(eval_lengths=(0,)), ConfigError,
     ["TrackingConfig.eval_lengths=(0,) is not allowed", "a non-empty tuple of ints >= 1"]),
    ("tracking-eval-lengths-empty", lambda tmp: tracker(eval_lengths=()), ConfigError,
     ["TrackingConfig.eval_lengths=() is not allowed"]),
    ("lra-H-cap", lambda tmp: lra(H=10**6), ConfigError,
     ["LRAConfig.H=1000000 is above the cap 65,536", "MAX_SIZE"]),
    ("lra-N-cap", lambda tmp: lra(N=2**20), ConfigError, ["LRAConfig.N=1048576 is above the cap"]),
    ("lra-max-length-cap", lambda tmp: lra(max_length=10**8), ConfigError,
     ["LRAConfig.max_length=100000000 is above the cap 65,536", "MAX_LENGTH"]),
    ("lra-n-train-cap", lambda tmp: lra(n_train=10**9), ConfigError,
     ["LRAConfig.n_train=1000000000 is above the cap 4,194,304", "MAX_EXAMPLES"]),
    ("lra-pathfinder-size-cap", lambda tmp: lra(task="pathfinder", pathfinder_size=1024),
     ConfigError, ["LRAConfig.pathfinder_size=1024 is above the cap: its sequence of 1,048,576 "
                   "pixels is longer than 65,536", "MAX_LENGTH"]),
    ("memory-horizon-N-cap",
     lambda tmp: __import__("sst_core.spec.configs", fromlist=["x"]).MemoryHorizonConfig(
         init="inv", freeze_spectrum=False, tau=4, N=2**20, H=4, steps=2, batch=4, seed=0,
         profile="smoke"), ConfigError, ["MemoryHorizonConfig.N=1048576 is above the cap"]),
    # the analyses of a trained tracker: checked as diagnose_any checks its arguments
    ("diagnostics-one-word", lambda tmp: diagnostics(n_samples=1), ConfigError,
     ["DiagnosticsConfig.n_samples=1 is not allowed", "an int >= 2"]),
    ("diagnostics-no-words", lambda tmp: diagnostics(n_samples=0), ConfigError,
     ["DiagnosticsConfig.n_samples=0 is not allowed"]),
    ("diagnostics-n-perturb", lambda tmp: diagnostics(n_perturb=0), ConfigError,
     ["DiagnosticsConfig.n_perturb=0 is not allowed", "an int >= 1"]),
    ("diagnostics-eps-nan", lambda tmp: diagnostics(eps=math.nan), ConfigError,
     ["DiagnosticsConfig.eps=nan is not allowed", "a finite number > 0"]),
    ("diagnostics-t0-after-rollout", lambda tmp: diagnostics(t0=5000), ConfigError,
     ["DiagnosticsConfig.t0=5000 is not allowed", "in 1..rollout=1000"]),
    ("diagnostics-rollout-cap", lambda tmp: diagnostics(rollout=10**7), ConfigError,
     ["DiagnosticsConfig.rollout=10000000 is above the cap 65,536"]),
    ("torch-module-one-word",
     lambda tmp: __import__("sst_core.spec.configs", fromlist=["x"]).TorchModuleDiagnosticsConfig(
         run=tracker(), n_samples=1), ConfigError,
     ["TorchModuleDiagnosticsConfig.n_samples=1 is not allowed"]),
    ("label-free-window",
     lambda tmp: __import__("sst_core.spec.configs", fromlist=["x"]).LabelFreeConfig(
         run=tracker(), n_samples=16, rollout=100, t_obs=5), ConfigError,
     ["LabelFreeConfig.window_start=10 is not allowed", "below t_obs=5"]),
    ("spread-tail-one-word",
     lambda tmp: __import__("sst_core.spec.configs", fromlist=["x"]).SpreadTailConfig(
         run=tracker(), t=60, n_words=1), ConfigError,
     ["SpreadTailConfig.n_words=1 is not allowed", "int >= 2"]),
    ("spread-tail-time-zero",
     lambda tmp: __import__("sst_core.spec.configs", fromlist=["x"]).SpreadTailConfig(
         run=tracker(), t=0), ConfigError, ["SpreadTailConfig.t=0 is not allowed"]),
    ("spectra-no-words",
     lambda tmp: __import__("sst_core.spec.configs", fromlist=["x"]).SpectraConfig(
         run=tracker(), n_words=0), ConfigError, ["SpectraConfig.n_words=0 is not allowed"]),
    # a data file's token of a megabyte is named, not printed whole
    ("listops-megabyte-token",
     lambda tmp: read_listops(listops_with(tmp, "test", HEADER + "[MAX " + "x" * 10**6
                                           + " ]\t1\n").parent), DataError,
     ["basic_test.tsv: line 2: unknown token 'xxxxxxxxxx", "... (1,000,000 characters) at "
      "position 1"]),
    # a linear step from h0 = 0 never leaves it: the message says so
    ("any-linear-step-from-zero", lambda tmp: any_diag(h0=np.zeros(8)), StepError,
     ["the same next state for every token id", "or every token maps these states alike "
      "(h0 = 0 under a linear step)"]),
    ("build-unknown-keyword", lambda tmp: build("tanh_rnn", 6, 6, dropuot=0.1), ValueError,
     ["unknown keyword(s) dropuot for model 'tanh_rnn'", "allowed: d_model, d_state, n_layers"]),
    ("build-unknown-keyword-phi", lambda tmp: build("rnn_phi", 6, 6, phy="relu"), ValueError,
     ["unknown keyword(s) phy for model 'rnn_phi'", "allowed: d_model, d_state, n_layers, phi"]),
]


@pytest.mark.parametrize("call,error,parts", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_bad_input(call, error, parts, tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("SST_LRA_DATA", "")  # unset; a row may set it, undone after the test
    with pytest.raises(error) as info:
        call(tmp_path)
    for part in parts:
        assert part in str(info.value), f"{part!r} not in {str(info.value)!r}"


def test_valid_configs_keep_their_hashes():
    """Checking fields does not change run ids (LRA ids as computed before the checks).
    The tracking ids changed once on purpose, with the training protocol's fields (post_steps,
    held-out checks, m_p_at: issue 19); these are the ids since."""
    paper = get_profile("paper")
    assert config_hash(TrackingConfig(model="mamba", group="S3", n_layers=2, d_model=64,
                                      d_state=32, lr=5e-4, seed=1, profile="paper")
                       ) == "5aba0630b54dedae"
    assert config_hash(lra(freeze_spectrum=True)) == "3a0687d19b407fbf"
    assert config_hash(paper1.table2_grid(paper)[5]) == "4a2ed1044701df12"
    # the paper profile's grid gained the cosine schedule (issue 19); its constant-schedule
    # runs keep their ids
    last_constant = [c for c in paper1.table3_grid(paper) if c.schedule == "constant"][-1]
    assert config_hash(last_constant) == "3c21b6cae7697345"
    assert config_hash(paper2.lra_main_grid(paper)[0]) == "39e557585b69761e"
    assert lra(ssm_lr=10.0, lr=1e-9, mf_T=0, weight_decay=0).lr == 1e-9  # the range's ends


def test_a_header_only_listops_release_trains_nothing(tmp_path, monkeypatch):
    """`sst lra --data-dir DIR` on a ListOps release whose train file is only a header:
    the run stops before training (it was recorded ok with test accuracy 0.5)."""
    root = tmp_path / "lra_release" / "listops-1000"
    root.mkdir(parents=True)
    listops_with(root, "train", HEADER)
    monkeypatch.setenv("SST_LRA_DATA", str(tmp_path))
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path / "results"))
    with pytest.raises(DataError, match=r"no examples in .*basic_train\.tsv \(only a header\)"):
        cached_run(lra(task="lra_listops", mf_T=0), train_lra)
    assert not (tmp_path / "results").exists() or not list((tmp_path / "results").rglob("*.json"))


def test_a_full_disk_leaves_no_file_behind(tmp_path, monkeypatch):
    """The disk fills after a run wrote its weights: its record cannot be written, and
    neither the weights nor a temporary file are left (the weights would be nobody's)."""
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path / "results"))
    with pytest.raises(StoreError, match="No space left on device"):
        store_fault(tmp_path, "full")
    folder = tmp_path / "results" / "smoke" / "tracking"
    assert folder.is_dir() and sorted(p.name for p in folder.iterdir()) == []
    rec = cached_run(tracker(), lambda c: {"m_p": 60})  # with space again: computed, stored
    assert rec["status"] == "ok" and [p.suffix for p in folder.iterdir()] == [".json"]
