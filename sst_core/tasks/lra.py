"""Readers for Long Range Arena files that a user supplies (nothing is downloaded).

Every reader takes the folder that holds one task's files and returns
``{"train": Split, "val": Split, "test": Split}``.  A ``Split`` has

* ``x``: token ids padded with 0, ``(n, L)`` (``(n, 2, L)`` for the AAN pairs),
  int16 to keep the full sets small; or pixels ``(n, L, c)`` float32 (or
  ``(n, L)`` int64 tokens 0..255 for images read with ``kind="tokens"``);
* ``lengths``: ``(n,)`` int64 (``(n, 2)`` for pairs), tokens before padding;
* ``y``: ``(n,)`` int64 class labels.

``max_length`` truncates and pads to that many tokens; ``None`` pads to the
longest sequence over all splits read.  Layouts (as unpacked from LRA's
``lra_release.gz`` and as the S4 code expects them):

==========  =====================================================================
task        files under ``data_dir``
==========  =====================================================================
ListOps     ``basic_train.tsv``, ``basic_val.tsv``, ``basic_test.tsv``: header
            ``Source<TAB>Target``, one expression and its value 0..9 per row
            (``lra_release/listops-1000``).  Ids as ``listops.encode``
            (``listops.VOCAB``: 16 ids, 0 = pad; LRA's parentheses dropped).
AAN         ``new_aan_pairs.train.tsv``, ``.eval.tsv``, ``.test.tsv``: no header,
            five tab-separated columns ``label, id1, id2, text1, text2``, label
            0/1 (written as a float) (``lra_release/tsv_data``).  "eval" -> "val".
IMDB        ``aclImdb/{train,test}/{pos,neg}/*.txt`` (``data_dir`` may be the
            ``aclImdb`` folder itself); pos = 1, neg = 0.  As in LRA and S4 the
            test split doubles as validation (``val`` is ``test``).
CIFAR-10    ``cifar-10-batches-py/data_batch_1`` .. ``data_batch_5`` and
            ``test_batch`` (python pickles with ``b"data"`` (n, 3072) uint8 and
            ``b"labels"``); validation = 10 % of train, split as S4 does.
Pathfinder  ``pathfinder32/<difficulty>/metadata/<int>.npy`` (text lines
            ``imgs/<batch> sample_<i>.png <nimg> <label> ...``) and
            ``pathfinder32/<difficulty>/imgs/<batch>/sample_<i>.png``;
            ``data_dir`` is the ``pathfinder<res>`` folder.  80/10/10 split as S4.
==========  =====================================================================

Text (IMDB, AAN) is byte-level as in LRA (``tfds ByteTextEncoder``): the UTF-8
bytes of the text plus 1, so ids are 1..256, 0 is padding, vocabulary 257
(``encode_bytes``).  AAN texts are used as stored in the TSV.  S4 builds a
character vocabulary from the training set and appends an end token instead;
neither changes what a model can learn.  Random splits (CIFAR validation,
Pathfinder) copy S4's ``torch.utils.data.random_split`` with
``torch.Generator().manual_seed(42)`` (``s4_split``), so the same files give
S4's splits.

Data files never run code: CIFAR-10's pickles are read by :class:`SafeUnpickler`, which
builds only plain containers, numbers, strings, bytes and numpy arrays and refuses any other
object a pickle asks for (a ``__reduce__`` payload) with a ``DataError`` naming the file;
Pathfinder's ``.npy`` metadata is read with ``allow_pickle=False``.

A missing or malformed file raises ``DataError`` (a ``ValueError``) that names
the path and the expected layout; so do a file that is not UTF-8 text (with
where its first bad byte is), a folder or a broken symbolic link where a file should be,
a file or folder without examples, a ListOps expression longer than ``max_tokens``
(:data:`LISTOPS_MAX_TOKENS` by default: an expression cut short has another value, so none
is truncated unasked) and a Pathfinder image that its metadata names twice (it could land
in train and test). A UTF-8 byte-order mark at the start of a text file is dropped.

:func:`data_files` lists the files a reader reads and :func:`fingerprint` hashes them (their
paths inside ``data_dir`` and their bytes): other data is another fingerprint, and so
another run (``LRAConfig.data_fingerprint``).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sst_core.tasks import listops
from sst_core.tasks.pathfinder import PIXEL_KINDS, as_sequence

__all__ = [
    "DataError", "Split", "BYTE_VOCAB_SIZE", "PATHFINDER_DIFFICULTIES", "encode_bytes",
    "s4_split", "read_listops", "read_aan", "read_imdb", "read_cifar10", "read_pathfinder",
    "LISTOPS_MAX_TOKENS", "READERS", "data_files", "fingerprint",
]

BYTE_VOCAB_SIZE = 257
PATHFINDER_DIFFICULTIES = {"easy": "curv_baseline", "intermediate": "curv_contour_length_9",
                           "hard": "curv_contour_length_14"}
_PATHFINDER_BLACKLIST = {"pathfinder32/curv_baseline/imgs/0/sample_172.png"}  # empty in LRA
CIFAR_GRAY_MEAN, CIFAR_GRAY_STD = 122.6 / 255.0, 61.0 / 255.0  # S4's grayscale CIFAR
CIFAR_RGB_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_RGB_STD = (0.247, 0.243, 0.261)
# ListOps: the longest expression read unless the caller passes max_tokens (LRA's are at
# most 2,000 tokens, S4 reads them with l_max 2048; this is twice that)
LISTOPS_MAX_TOKENS = 4096

_LAYOUT = {
    "listops": "<data_dir>/basic_{train,val,test}.tsv with header 'Source<TAB>Target' and "
               "rows '<expression><TAB><0..9>' (lra_release/listops-1000)",
    "aan": "<data_dir>/new_aan_pairs.{train,eval,test}.tsv without header, rows "
           "'<label 0/1><TAB><id1><TAB><id2><TAB><text1><TAB><text2>' (lra_release/tsv_data)",
    "imdb": "<data_dir>/aclImdb/{train,test}/{pos,neg}/*.txt (or data_dir = the aclImdb folder)",
    "cifar10": "<data_dir>/cifar-10-batches-py/{data_batch_1..data_batch_5,test_batch}: pickles "
               "with b'data' (n, 3072) uint8 and b'labels' (or data_dir = cifar-10-batches-py)",
    "pathfinder": "<data_dir>/<difficulty>/metadata/<int>.npy (text lines 'imgs/<batch> "
                  "sample_<i>.png <nimg> <label> ...') and <data_dir>/<difficulty>/imgs/<batch>/"
                  "sample_<i>.png, data_dir = the pathfinder<res> folder",
}


class DataError(ValueError):
    """A data file or folder is missing or does not have the expected layout."""


def _fail(task: str, path: Path, what: str) -> DataError:
    return DataError(f"{path}: {what}; expected layout: {_LAYOUT[task]}")


@dataclass(frozen=True, eq=False)
class Split:
    """One split: ``x`` (n, ...) inputs, ``lengths`` (n,) or (n, 2), ``y`` (n,) labels."""

    x: np.ndarray
    lengths: np.ndarray
    y: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.y)
        if len(self.x) != n or len(self.lengths) != n:
            raise ValueError(f"x, lengths and y must have the same length, got "
                             f"{len(self.x)}, {len(self.lengths)}, {n}")

    def __len__(self) -> int:
        return len(self.y)


def _check_max_length(max_length: int | None) -> None:
    if max_length is not None and (not isinstance(max_length, (int, np.integer))
                                   or isinstance(max_length, bool) or max_length < 1):
        raise ValueError(f"max_length must be an int >= 1 or None, got {max_length!r}")


def _check_dir(data_dir: object, task: str) -> Path:
    if not isinstance(data_dir, (str, Path)):
        raise ValueError(f"data_dir must be a str or Path, got {type(data_dir).__name__}")
    path = Path(data_dir).expanduser()
    if not path.is_dir():
        raise _fail(task, path, "folder not found")
    return path


def _file(task: str, path: Path) -> Path:
    """``path`` if it is a file; else a :class:`DataError` that says what is there."""
    if path.is_file():
        return path
    if path.is_symlink() and not path.exists():
        raise _fail(task, path, f"a broken symbolic link (to {os.readlink(path)}, which does "
                                "not exist); expected a file")
    if path.is_dir():
        raise _fail(task, path, "a folder, not a file")
    if path.exists():
        raise _fail(task, path, "not a regular file")
    raise _fail(task, path, "file not found")


def _not_utf8(task: str, path: Path) -> DataError:
    """The error for a file that does not decode as UTF-8: where its first bad byte is."""
    blob = path.read_bytes()
    try:
        blob.decode("utf-8")
    except UnicodeDecodeError as err:
        line = blob.count(b"\n", 0, err.start) + 1
        return _fail(task, path, f"not UTF-8 text (line {line}, byte offset {err.start}: "
                                 f"{blob[err.start:err.start + 1]!r}, {err.reason})")
    return _fail(task, path, "not UTF-8 text")


def _no_examples(task: str, path: Path, why: str) -> DataError:
    return DataError(f"no examples in {path} ({why}); expected layout: {_LAYOUT[task]}")


def encode_bytes(text: str) -> np.ndarray:
    """LRA's byte-level ids: UTF-8 bytes + 1, (L,) int16 in 1..256.

    >>> encode_bytes("hi é").tolist()
    [105, 106, 33, 196, 170]
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int16) + 1


def _pad(seqs: list[np.ndarray], width: int) -> tuple[np.ndarray, np.ndarray]:
    """Truncate to ``width`` and pad with 0: (n, width) int16 and (n,) int64 lengths."""
    x = np.zeros((len(seqs), width), np.int16)
    lengths = np.zeros(len(seqs), np.int64)
    for i, s in enumerate(seqs):
        m = min(len(s), width)
        x[i, :m] = s[:m]
        lengths[i] = m
    return x, lengths


def _width(max_length: int | None, groups) -> int:
    if max_length is not None:
        return int(max_length)
    return max([1] + [len(s) for seqs in groups for s in seqs])


def s4_split(n: int, lengths: tuple[int, ...], seed: int = 42) -> list[np.ndarray]:
    """Index arrays of ``torch.utils.data.random_split(range(n), lengths, generator=
    torch.Generator().manual_seed(seed))``, S4's way of splitting."""
    if not isinstance(n, (int, np.integer)) or n < 0 or sum(lengths) != n:
        raise ValueError(f"lengths {tuple(lengths)} must add up to n={n!r}")
    if any(not isinstance(k, (int, np.integer)) or k < 0 for k in lengths):
        raise ValueError(f"lengths must be ints >= 0, got {tuple(lengths)}")
    import torch

    perm = torch.randperm(int(n), generator=torch.Generator().manual_seed(int(seed))).numpy()
    bounds = np.cumsum([0, *lengths])
    return [perm[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


# --- ListOps -----------------------------------------------------------------------

def _listops_files(root: Path) -> list[Path]:
    return [root / f"basic_{split}.tsv" for split in ("train", "val", "test")]


def read_listops(data_dir: str | Path, max_length: int | None = None,
                 max_tokens: int = LISTOPS_MAX_TOKENS) -> dict[str, Split]:
    """ListOps TSVs -> splits with ``x`` (n, L) ids in ``listops.VOCAB``, ``y`` 0..9.

    An expression longer than ``max_tokens`` tokens is refused (not cut: a cut expression
    has another value); ``max_length`` then truncates and pads as the module says."""
    _check_max_length(max_length)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, (int, np.integer)) \
            or max_tokens < 1:
        raise ValueError(f"max_tokens must be an int >= 1, got {max_tokens!r}")
    root = _check_dir(data_dir, "listops")
    seqs, labels = {}, {}
    for split, path in zip(("train", "val", "test"), _listops_files(root)):
        try:
            lines = _file("listops", path).read_text(encoding="utf-8-sig").splitlines()
        except UnicodeDecodeError:
            raise _not_utf8("listops", path) from None
        if not lines or lines[0].rstrip("\r").split("\t") != ["Source", "Target"]:
            raise _fail("listops", path, "first line is not the header 'Source<TAB>Target'")
        if not any(line.strip() for line in lines[1:]):
            raise _no_examples("listops", path, "only a header")
        seqs[split], labels[split] = [], []
        for i, line in enumerate(lines[1:], start=2):
            if not line.strip():
                continue
            fields = line.rstrip("\r").split("\t")
            if len(fields) != 2:
                raise _fail("listops", path, f"line {i} is not '<expression><TAB><0..9>': it has "
                                             f"{len(fields)} tab-separated columns, not 2")
            if fields[1].strip() not in [str(d) for d in range(10)]:
                raise _fail("listops", path, f"line {i} is not '<expression><TAB><0..9>': label "
                                             f"{fields[1]!r} is not one of 0..9")
            try:
                ids = listops.encode(fields[0])
            except ValueError as err:
                raise _fail("listops", path, f"line {i}: {err}") from None
            if len(ids) > max_tokens:
                raise _fail("listops", path, f"line {i}: an expression of {len(ids):,} tokens, "
                                             f"above max_tokens={max_tokens:,} (a cut expression "
                                             "has another value, so none is cut; pass a larger "
                                             "max_tokens= to read it)")
            seqs[split].append(ids)
            labels[split].append(int(fields[1]))
    width = _width(max_length, seqs.values())
    return {k: Split(*_pad(seqs[k], width), np.array(labels[k], np.int64)) for k in seqs}


# --- AAN (retrieval) ---------------------------------------------------------------

def _aan_files(root: Path) -> list[Path]:
    return [root / f"new_aan_pairs.{name}.tsv" for name in ("train", "eval", "test")]


def read_aan(data_dir: str | Path, max_length: int | None = 4000) -> dict[str, Split]:
    """AAN pairs -> splits with ``x`` (n, 2, L) byte ids, ``lengths`` (n, 2), ``y`` 0/1."""
    _check_max_length(max_length)
    root = _check_dir(data_dir, "aan")
    texts, labels = {}, {}
    for split, path in zip(("train", "val", "test"), _aan_files(root)):
        _file("aan", path)
        texts[split], labels[split] = [], []
        try:
            with path.open(encoding="utf-8-sig", newline="") as f:
                for i, line in enumerate(f, start=1):
                    line = line.rstrip("\r\n")
                    if not line:
                        continue
                    fields = line.split("\t")
                    if len(fields) != 5:
                        raise _fail("aan", path, f"line {i} has {len(fields)} tab-separated "
                                                 "fields, not 5")
                    try:
                        label = float(fields[0])
                    except ValueError:
                        label = -1.0
                    if label not in (0.0, 1.0):
                        raise _fail("aan", path, f"line {i}: label {fields[0]!r} is not 0 or 1")
                    texts[split] += [encode_bytes(fields[3]), encode_bytes(fields[4])]
                    labels[split].append(int(label))
        except UnicodeDecodeError:
            raise _not_utf8("aan", path) from None
        if not labels[split]:
            raise _no_examples("aan", path, "only blank lines" if path.stat().st_size
                               else "an empty file")
    width = _width(max_length, texts.values())
    out = {}
    for k in texts:
        x, lengths = _pad(texts[k], width)  # (2n, L), (2n,)
        n = len(labels[k])
        out[k] = Split(x.reshape(n, 2, width), lengths.reshape(n, 2), np.array(labels[k], np.int64))
    return out


# --- IMDB --------------------------------------------------------------------------

def _imdb_files(data_dir: str | Path) -> dict[tuple[str, int], list[Path]]:
    """(split, label) -> the review files read, negatives then positives, by file name."""
    root = _check_dir(data_dir, "imdb")
    if (root / "aclImdb").is_dir():
        root = root / "aclImdb"
    out = {}
    for split in ("train", "test"):
        for label, cls in ((0, "neg"), (1, "pos")):
            folder = root / split / cls
            if not folder.is_dir():
                raise _fail("imdb", folder, "folder not found")
            files = sorted(folder.glob("*.txt"))
            if not files:
                raise _fail("imdb", folder, "no .txt reviews")
            out[(split, label)] = files
    return out


def read_imdb(data_dir: str | Path, max_length: int | None = 4000) -> dict[str, Split]:
    """aclImdb reviews -> splits with ``x`` (n, L) byte ids, ``y`` (1 = positive).

    Reviews are ordered negatives then positives, each by file name; ``val`` is
    the ``test`` split (LRA and S4 have no IMDB validation set).
    """
    _check_max_length(max_length)
    seqs, labels = {}, {}
    for (split, label), files in _imdb_files(data_dir).items():
        seqs.setdefault(split, [])
        labels.setdefault(split, [])
        for path in files:
            try:
                text = _file("imdb", path).read_text(encoding="utf-8-sig")
            except UnicodeDecodeError:
                raise _not_utf8("imdb", path) from None
            seqs[split].append(encode_bytes(text))
            labels[split].append(label)
    width = _width(max_length, seqs.values())
    out = {k: Split(*_pad(seqs[k], width), np.array(labels[k], np.int64)) for k in seqs}
    out["val"] = out["test"]
    return {k: out[k] for k in ("train", "val", "test")}


# --- CIFAR-10 ----------------------------------------------------------------------

def _numpy_pickle_globals() -> dict[tuple[str, str], object]:
    """The only callables a pickle of plain data and numpy arrays needs, by the names
    numpy 1 and 2 pickle them under (python 2 byte strings come through ``_codecs``)."""
    import codecs

    try:
        from numpy._core import multiarray, numeric
    except ImportError:  # numpy 1
        from numpy.core import multiarray, numeric
    found = {}
    for pkg in ("numpy.core", "numpy._core"):
        found[(f"{pkg}.multiarray", "_reconstruct")] = multiarray._reconstruct
        found[(f"{pkg}.multiarray", "scalar")] = multiarray.scalar
        found[(f"{pkg}.numeric", "_frombuffer")] = numeric._frombuffer
    found[("numpy", "ndarray")] = np.ndarray
    found[("numpy", "dtype")] = np.dtype
    found[("_codecs", "encode")] = codecs.encode
    return found


class PickleRefused(pickle.UnpicklingError):
    """A pickle asked for an object other than plain data and numpy arrays."""


class SafeUnpickler(pickle.Unpickler):
    """Unpickles dicts, lists, tuples, strings, bytes, numbers and numpy arrays only: any
    other global a pickle names (a class, ``os.system``, ``builtins.eval``, ...) is
    refused with :class:`PickleRefused`, before anything is called."""

    ALLOWED = _numpy_pickle_globals()

    def find_class(self, module: str, name: str) -> object:
        try:
            return self.ALLOWED[(module, name)]
        except KeyError:
            raise PickleRefused(f"the pickle asks for {module}.{name}, which is not plain data "
                                "(allowed: dicts, lists, strings, bytes, numbers and numpy "
                                "arrays); data files never run code") from None

    def persistent_load(self, pid: object) -> object:
        raise PickleRefused(f"the pickle asks for a persistent object {pid!r}; data files "
                            "never run code")


def _cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        with _file("cifar10", path).open("rb") as f:
            batch = SafeUnpickler(f, encoding="bytes").load()
        if not isinstance(batch, dict):
            raise _fail("cifar10", path, f"not a CIFAR-10 python batch (a pickled "
                                         f"{type(batch).__name__}, not a dict)")
        data = np.asarray(batch[b"data"])
        labels = np.asarray(batch[b"labels"], dtype=np.int64)
    except DataError:
        raise
    except PickleRefused as err:
        raise _fail("cifar10", path, f"refused: {err}") from None
    except Exception as err:  # unpickling errors come in many types
        raise _fail("cifar10", path, f"not a CIFAR-10 python batch ({type(err).__name__}: "
                                     f"{err})") from None
    if data.ndim != 2 or data.shape[1] != 3072 or data.dtype != np.uint8 or len(labels) != len(data):
        raise _fail("cifar10", path, f"b'data' has shape {data.shape} and dtype {data.dtype} "
                                     f"with {len(labels)} labels, not (n, 3072) uint8 with n labels")
    if not len(data):
        raise _fail("cifar10", path, "no images (b'data' has 0 rows)")
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise _fail("cifar10", path, "labels outside 0..9")
    return data, labels


def _cifar_files(data_dir: str | Path) -> list[Path]:
    root = _check_dir(data_dir, "cifar10")
    if (root / "cifar-10-batches-py").is_dir():
        root = root / "cifar-10-batches-py"
    return [root / f"data_batch_{i}" for i in range(1, 6)] + [root / "test_batch"]


def read_cifar10(data_dir: str | Path, grayscale: bool = True, normalize: bool = True,
                 val_fraction: float = 0.1, seed: int = 42) -> dict[str, Split]:
    """CIFAR-10 pickles -> splits with ``x`` (n, 1024, c) float32 (c = 1 gray, 3 RGB).

    Gray is PIL's ``convert("L")`` (``(19595 R + 38470 G + 7471 B + 2**15) >> 16``),
    pixels are scaled to [0, 1] and, with ``normalize``, standardised with S4's
    constants (gray: mean 122.6/255, std 61.0/255).  Validation is
    ``val_fraction`` of train, split with ``s4_split(seed)``.
    """
    if not isinstance(grayscale, bool) or not isinstance(normalize, bool):
        raise ValueError(f"grayscale and normalize must be bools, got {grayscale!r}, {normalize!r}")
    if isinstance(val_fraction, bool) or not isinstance(val_fraction, (int, float)) \
            or not 0 <= val_fraction < 1:
        raise ValueError(f"val_fraction must be a number in [0, 1), got {val_fraction!r}")
    *train_files, test_file = _cifar_files(data_dir)
    parts = [_cifar_batch(path) for path in train_files]
    raw = {"train": (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])),
           "test": _cifar_batch(test_file)}

    def pixels(data: np.ndarray) -> np.ndarray:
        rgb = data.reshape(len(data), 3, 1024).transpose(0, 2, 1).astype(np.int64)  # (n, L, 3)
        if grayscale:
            g = (19595 * rgb[..., 0] + 38470 * rgb[..., 1] + 7471 * rgb[..., 2] + 0x8000) >> 16
            x = g[..., None] / 255.0  # (n, L, 1)
            mean, std = np.array([CIFAR_GRAY_MEAN]), np.array([CIFAR_GRAY_STD])
        else:
            x = rgb / 255.0  # (n, L, 3)
            mean, std = np.array(CIFAR_RGB_MEAN), np.array(CIFAR_RGB_STD)
        return ((x - mean) / std if normalize else x).astype(np.float32)

    def make(data, labels):
        return Split(pixels(data), np.full(len(labels), 1024, np.int64), labels)

    n = len(raw["train"][1])
    n_train = int(n * (1.0 - val_fraction))
    tr, va = s4_split(n, (n_train, n - n_train), seed)
    data, labels = raw["train"]
    return {"train": make(data[tr], labels[tr]), "val": make(data[va], labels[va]),
            "test": make(*raw["test"])}


# --- Pathfinder --------------------------------------------------------------------

def _metadata_rows(path: Path) -> list[list[str]]:
    blob = path.read_bytes()
    if blob.startswith(b"\x93NUMPY"):  # snakes2 writes np.save arrays; LRA ships text
        try:
            arr = np.load(path, allow_pickle=False)
        except Exception as err:
            raise _fail("pathfinder", path, f"unreadable .npy ({err})") from None
        return [[str(v) for v in row] for row in np.atleast_2d(arr)] if arr.size else []
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError:
        raise _fail("pathfinder", path, "metadata is neither text nor a .npy array") from None
    return [line.split() for line in text.splitlines() if line.strip()]


def _check_difficulty(difficulty: str) -> str:
    """The folder of a Pathfinder difficulty ("easy", ... or the folder's own name)."""
    folders = set(PATHFINDER_DIFFICULTIES.values())
    if difficulty not in PATHFINDER_DIFFICULTIES and difficulty not in folders:
        raise ValueError(f"unknown difficulty {difficulty!r}; allowed: "
                         f"{tuple(PATHFINDER_DIFFICULTIES)} or {tuple(sorted(folders))}")
    return PATHFINDER_DIFFICULTIES.get(difficulty, difficulty)


def _pathfinder_samples(data_dir: str | Path, difficulty: str
                        ) -> tuple[list[Path], list[tuple[Path, int]]]:
    """The metadata files of a difficulty (by their integer names) and the (image, label)
    pairs their rows name, blacklisted images left out; an image named twice is refused."""
    root = _check_dir(data_dir, "pathfinder")
    level = _check_difficulty(difficulty)
    meta_dir = root / level / "metadata"
    if not meta_dir.is_dir():
        raise _fail("pathfinder", meta_dir, "folder not found")
    metas = list(meta_dir.glob("*.npy"))
    bad = [p.name for p in metas if not p.stem.isdigit()]
    if bad or not metas:
        raise _fail("pathfinder", meta_dir, f"metadata files must be named <int>.npy, found "
                                            f"{bad or 'none'}")
    metas = sorted(metas, key=lambda p: int(p.stem))
    samples: list[tuple[Path, int]] = []
    where: dict[Path, str] = {}  # image -> the metadata row that names it
    for meta in metas:
        rows = _metadata_rows(_file("pathfinder", meta))
        if not rows:
            raise _no_examples("pathfinder", meta, "a metadata file without rows")
        for i, row in enumerate(rows, start=1):
            if len(row) < 4 or row[3] not in ("0", "1"):
                raise _fail("pathfinder", meta, f"row {i} {row[:4]} does not have a subfolder, "
                                                "file name, index and 0/1 label")
            rel = Path(level) / row[0] / row[1]
            if f"{root.name}/{rel.as_posix()}" in _PATHFINDER_BLACKLIST:
                continue
            path = root / rel
            if path in where:
                raise _fail("pathfinder", meta, f"row {i} names the image {rel.as_posix()}, "
                                                f"which {where[path]} names already: one image "
                                                "twice could land in train and test; each "
                                                "image must be named once")
            where[path] = f"{meta.name} row {i}"
            samples.append((path, int(row[3])))
    if not samples:
        raise _no_examples("pathfinder", meta_dir, "every row of its metadata names a "
                                                   "blacklisted (empty) LRA image")
    return metas, samples


def read_pathfinder(data_dir: str | Path, difficulty: str = "hard", kind: str = "normalized",
                    max_samples: int | None = None, seed: int = 42) -> dict[str, Split]:
    """Pathfinder PNGs -> splits with pixels as ``pathfinder.as_sequence(kind)``.

    ``difficulty``: "easy", "intermediate", "hard" (S4 uses "hard") or a folder
    name such as "curv_baseline".  ``kind``: "normalized" (S4: (v/255 - 0.5)/0.5),
    "unit" or "tokens".  ``max_samples`` keeps the first rows of the metadata
    (files sorted by their integer names), for quick runs.  Split 80/10/10 with
    ``s4_split(seed)``.
    """
    from PIL import Image

    if kind not in PIXEL_KINDS:
        raise ValueError(f"unknown kind {kind!r}; allowed: {PIXEL_KINDS}")
    _check_difficulty(difficulty)
    if max_samples is not None and (not isinstance(max_samples, (int, np.integer))
                                    or isinstance(max_samples, bool) or max_samples < 1):
        raise ValueError(f"max_samples must be an int >= 1 or None, got {max_samples!r}")
    samples = _pathfinder_samples(data_dir, difficulty)[1]
    samples = samples[:max_samples]
    images = []
    for path, _ in samples:
        try:
            with _file("pathfinder", path).open("rb") as f:
                img = np.asarray(Image.open(f).convert("L"), dtype=np.uint8)
        except DataError:
            raise
        except Exception as err:
            raise _fail("pathfinder", path, f"not a readable image ({err})") from None
        if images and img.shape != images[0].shape or img.shape[0] != img.shape[1]:
            raise _fail("pathfinder", path, f"image of shape {img.shape}; all images must be "
                                            f"square and equal ({images[0].shape if images else ''})")
        images.append(img)
    x = as_sequence(np.stack(images), kind)  # (n, L, 1) or (n, L)
    y = np.array([label for _, label in samples], np.int64)
    n = len(y)
    n_val = n_test = int(0.1 * n)
    idx = s4_split(n, (n - n_val - n_test, n_val, n_test), seed)
    L = x.shape[1]
    return {k: Split(x[i], np.full(len(i), L, np.int64), y[i])
            for k, i in zip(("train", "val", "test"), idx)}


# --- the files a reader reads, and their fingerprint -------------------------------

READERS = ("listops", "aan", "imdb", "cifar10", "pathfinder")


def data_files(task: str, data_dir: str | Path, difficulty: str = "hard") -> list[Path]:
    """The files the reader of ``task`` (one of :data:`READERS`) reads from ``data_dir``,
    in the order it reads them (Pathfinder: the metadata files, then the images their rows
    name; ``difficulty`` as :func:`read_pathfinder`). A missing folder is a
    :class:`DataError` as in the reader; a missing file shows when it is hashed or read."""
    if task == "listops":
        return _listops_files(_check_dir(data_dir, "listops"))
    if task == "aan":
        return _aan_files(_check_dir(data_dir, "aan"))
    if task == "imdb":
        return [p for files in _imdb_files(data_dir).values() for p in files]
    if task == "cifar10":
        return _cifar_files(data_dir)
    if task == "pathfinder":
        metas, samples = _pathfinder_samples(data_dir, difficulty)
        return metas + [path for path, _ in samples]
    raise ValueError(f"unknown reader {task!r}; allowed: {', '.join(READERS)}")


# path -> (what os.stat said, sha256): a file is hashed again when any of them changes
_HASHED: dict[Path, tuple[tuple[int, ...], str]] = {}
_SETTLED_NS = 2_000_000_000  # a file changed in the last 2 s is never taken from _HASHED


def _file_sha256(task: str, path: Path) -> str:
    st = _file(task, path).stat()
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    known = _HASHED.get(path)
    if known is not None and known[0] == key:
        return known[1]
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    # a file written within the clock's resolution of its last hash could keep its
    # stat with other bytes: remember only hashes of files that have settled
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > _SETTLED_NS:
        _HASHED[path] = (key, digest.hexdigest())
    return digest.hexdigest()


def fingerprint(task: str, data_dir: str | Path, difficulty: str = "hard") -> str:
    """16 hex digits of sha256 over the files :func:`data_files` lists: each one's path
    inside ``data_dir`` and the sha256 of its bytes. Other files, other bytes or the same
    bytes under other names (IMDB's labels are folder names) give another fingerprint;
    where ``data_dir`` lies does not."""
    root = Path(data_dir).expanduser()
    outer = hashlib.sha256(f"{task}\n".encode())
    for path in data_files(task, root, difficulty):
        rel = path.relative_to(root).as_posix()
        outer.update(f"{rel}\t{_file_sha256(task, path)}\n".encode())
    return outer.hexdigest()[:16]
