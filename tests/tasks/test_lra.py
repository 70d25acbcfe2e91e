"""Tests for sst_core.tasks.lra: readers for LRA files, on small fixture files."""

from __future__ import annotations

import doctest
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import sst_core.tasks.lra as lra_module
from sst_core.tasks import listops, pathfinder
from sst_core.tasks.lra import (
    BYTE_VOCAB_SIZE,
    DataError,
    Split,
    encode_bytes,
    read_aan,
    read_cifar10,
    read_imdb,
    read_listops,
    read_pathfinder,
    s4_split,
)

# --- ListOps -----------------------------------------------------------------------


def write_listops(root: Path, n: int = 4) -> dict[str, listops.ListOpsData]:
    out = {}
    for i, split in enumerate(("train", "val", "test")):
        data = listops.generate(n + i, min_length=5, max_length=30, seed=i)
        rows = ["Source\tTarget"]
        rows += [f"{listops.to_lra_text(listops.parse(t))}\t{y}" for t, y in zip(data.texts, data.y)]
        (root / f"basic_{split}.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
        out[split] = data
    return out


def test_listops_reader(tmp_path: Path) -> None:
    made = write_listops(tmp_path)
    data = read_listops(tmp_path)
    assert list(data) == ["train", "val", "test"]
    width = max(int(d.lengths.max()) for d in made.values())
    for k, split in data.items():
        assert isinstance(split, Split) and len(split) == len(made[k].y)
        assert split.x.shape == (len(split), width) and split.x.dtype == np.int16
        np.testing.assert_array_equal(split.y, made[k].y)
        np.testing.assert_array_equal(split.lengths, made[k].lengths)
        for row, length, text in zip(split.x, split.lengths, made[k].texts):
            assert listops.decode(row.astype(np.int64)) == text
            assert (row[length:] == 0).all()
    short = read_listops(str(tmp_path), max_length=6)
    assert short["train"].x.shape[1] == 6 and short["train"].lengths.max() == 6


def test_listops_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="folder not found.*basic_"):
        read_listops(tmp_path / "nope")
    write_listops(tmp_path)
    (tmp_path / "basic_val.tsv").unlink()
    with pytest.raises(DataError, match=r"basic_val\.tsv: file not found; expected layout"):
        read_listops(tmp_path)
    (tmp_path / "basic_val.tsv").write_text("src\ttgt\n[MAX 1 2 ]\t2\n")
    with pytest.raises(DataError, match="header 'Source<TAB>Target'"):
        read_listops(tmp_path)
    (tmp_path / "basic_val.tsv").write_text("Source\tTarget\n[MAX 1 2 ]\t12\n")
    with pytest.raises(DataError, match=r"basic_val\.tsv: line 2 is not"):
        read_listops(tmp_path)
    (tmp_path / "basic_val.tsv").write_text("Source\tTarget\n[MAX 1 x ]\t2\n")
    with pytest.raises(DataError, match="line 2: unknown token 'x'"):
        read_listops(tmp_path)
    with pytest.raises(ValueError, match="max_length"):
        read_listops(tmp_path, max_length=0)
    with pytest.raises(ValueError, match="data_dir must be a str or Path"):
        read_listops(3)  # type: ignore[arg-type]


# --- AAN ---------------------------------------------------------------------------


def write_aan(root: Path) -> None:
    rows = {
        "train": ["1.0\tp1\tp2\tb'graph parsing'\tb'tree parsing'", "0.0\tp3\tp4\tabc\tcaf\u00e9 x"],
        "eval": ["1\tp5\tp6\tzz\ty"],
        "test": ["0\tp7\tp8\tq\tlonger text here", "1.0\tp9\tp1\ta\tb", "0.0\tpa\tpb\tc\td"],
    }
    for name, lines in rows.items():
        (root / f"new_aan_pairs.{name}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_aan_reader(tmp_path: Path) -> None:
    write_aan(tmp_path)
    data = read_aan(tmp_path, max_length=None)
    assert {k: len(v) for k, v in data.items()} == {"train": 2, "val": 1, "test": 3}
    tr = data["train"]
    width = len("b'graph parsing'")
    assert tr.x.shape == (2, 2, width) and tr.lengths.shape == (2, 2)
    assert tr.y.tolist() == [1, 0]
    assert tr.lengths.tolist() == [[width, len("b'tree parsing'")], [3, len("café x".encode())]]
    assert bytes((tr.x[1, 1, :7] - 1).astype(np.uint8).tolist()).decode() == "café x"
    assert tr.x.max() < BYTE_VOCAB_SIZE and tr.x[1, 0, 3:].max() == 0
    capped = read_aan(tmp_path)  # LRA's 4000 per document
    assert capped["test"].x.shape == (3, 2, 4000)
    assert read_aan(tmp_path, max_length=2)["test"].lengths.max() == 2


def test_aan_errors(tmp_path: Path) -> None:
    write_aan(tmp_path)
    (tmp_path / "new_aan_pairs.eval.tsv").unlink()
    with pytest.raises(DataError, match=r"new_aan_pairs\.eval\.tsv: file not found.*label.*text2"):
        read_aan(tmp_path)
    (tmp_path / "new_aan_pairs.eval.tsv").write_text("1\tp1\tp2\tonly four\n")
    with pytest.raises(DataError, match="line 1 has 4 tab-separated fields, not 5"):
        read_aan(tmp_path)
    (tmp_path / "new_aan_pairs.eval.tsv").write_text("2.0\tp1\tp2\ta\tb\n")
    with pytest.raises(DataError, match="label '2.0' is not 0 or 1"):
        read_aan(tmp_path)


# --- IMDB --------------------------------------------------------------------------


def write_imdb(root: Path) -> Path:
    base = root / "aclImdb"
    reviews = {("train", "pos"): ["great film", "loved it"], ("train", "neg"): ["bad"],
               ("test", "pos"): ["fine <br />fun"], ("test", "neg"): ["awful", "dull", "no"]}
    for (split, cls), texts in reviews.items():
        folder = base / split / cls
        folder.mkdir(parents=True)
        for i, text in enumerate(texts):
            (folder / f"{i}_{7 if cls == 'pos' else 2}.txt").write_text(text, encoding="utf-8")
    return base


def test_imdb_reader(tmp_path: Path) -> None:
    base = write_imdb(tmp_path)
    for where in (tmp_path, base):
        data = read_imdb(where, max_length=None)
        assert data["val"] is data["test"]
        tr = data["train"]
        assert tr.y.tolist() == [0, 1, 1]  # negatives first, then by file name
        assert tr.x.shape == (3, len("fine <br />fun")) and tr.x.dtype == np.int16
        np.testing.assert_array_equal(tr.x[1, :10], encode_bytes("great film"))
        assert tr.lengths.tolist() == [3, 10, 8]
        assert data["test"].y.tolist() == [0, 0, 0, 1]
    assert read_imdb(tmp_path)["train"].x.shape == (3, 4000)


def test_imdb_errors(tmp_path: Path) -> None:
    base = write_imdb(tmp_path)
    for f in (base / "test" / "neg").iterdir():
        f.unlink()
    with pytest.raises(DataError, match=r"test/neg: no \.txt reviews; expected layout: .*aclImdb"):
        read_imdb(tmp_path)
    (base / "test" / "neg").rmdir()
    with pytest.raises(DataError, match=r"test/neg: folder not found"):
        read_imdb(base)
    (base / "test" / "neg").mkdir()
    (base / "test" / "neg" / "0_1.txt").write_bytes(b"\xff\xfe bad")
    with pytest.raises(DataError, match="not UTF-8"):
        read_imdb(base)


# --- CIFAR-10 ----------------------------------------------------------------------


def write_cifar(root: Path, per_batch: int = 4) -> dict[str, np.ndarray]:
    base = root / "cifar-10-batches-py"
    base.mkdir()
    rng = np.random.default_rng(0)
    out = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = rng.integers(0, 256, size=(per_batch, 3072), dtype=np.uint8)
        labels = rng.integers(0, 10, size=per_batch).tolist()
        with (base / name).open("wb") as f:
            pickle.dump({b"data": data, b"labels": labels, b"batch_label": b"x"}, f)
        out[name] = (data, np.array(labels))
    return out


def test_cifar_reader(tmp_path: Path) -> None:
    made = write_cifar(tmp_path)
    data = read_cifar10(tmp_path, normalize=False)
    n = 20
    n_train = int(n * 0.9)
    tr_idx, va_idx = s4_split(n, (n_train, n - n_train), 42)
    all_data = np.concatenate([made[f"data_batch_{i}"][0] for i in range(1, 6)])
    all_y = np.concatenate([made[f"data_batch_{i}"][1] for i in range(1, 6)])
    assert {k: len(v) for k, v in data.items()} == {"train": n_train, "val": n - n_train, "test": 4}
    np.testing.assert_array_equal(data["val"].y, all_y[va_idx])
    # gray values equal PIL's convert("L") of the same image, row-major
    for k, i in enumerate(tr_idx[:3]):
        rgb = all_data[i].reshape(3, 32, 32).transpose(1, 2, 0)
        gray = np.asarray(Image.fromarray(rgb, "RGB").convert("L"), dtype=np.float32) / 255
        np.testing.assert_allclose(data["train"].x[k, :, 0], gray.reshape(-1), atol=1e-6)
    assert data["train"].x.shape == (n_train, 1024, 1) and (data["train"].lengths == 1024).all()
    norm = read_cifar10(tmp_path / "cifar-10-batches-py")
    np.testing.assert_allclose(norm["test"].x, (data["test"].x - 122.6 / 255) / (61.0 / 255),
                               atol=1e-5)
    rgb = read_cifar10(tmp_path, grayscale=False, normalize=False)
    assert rgb["test"].x.shape == (4, 1024, 3)
    np.testing.assert_allclose(rgb["test"].x[0, 5], made["test_batch"][0][0, [5, 1029, 2053]] / 255,
                               atol=1e-6)


def test_cifar_errors(tmp_path: Path) -> None:
    write_cifar(tmp_path)
    base = tmp_path / "cifar-10-batches-py"
    (base / "test_batch").unlink()
    with pytest.raises(DataError, match=r"test_batch: file not found; expected layout: .*data_batch_1"):
        read_cifar10(tmp_path)
    (base / "test_batch").write_bytes(b"not a pickle")
    with pytest.raises(DataError, match="not a CIFAR-10 python batch"):
        read_cifar10(tmp_path)
    with (base / "test_batch").open("wb") as f:
        pickle.dump({b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}, f)
    with pytest.raises(DataError, match=r"shape \(2, 100\)"):
        read_cifar10(tmp_path)
    with pytest.raises(ValueError, match="val_fraction"):
        read_cifar10(tmp_path, val_fraction=1.0)


class _Payload:
    """What a hostile data file carries: unpickling it would run ``exec``."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return exec, (f"open({str(self.marker)!r}, 'w').write('ran')",)


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_cifar_pickles_are_read_without_running_code(tmp_path: Path, protocol: int) -> None:
    """Real batches (python 2 pickles of dicts, bytes, lists and numpy arrays) and those of
    numpy 2 at every protocol read as before; a payload is refused naming the file and
    what it asked for, and never runs."""
    made = write_cifar(tmp_path)
    base = tmp_path / "cifar-10-batches-py"
    for i in range(1, 6):  # the same batches at this protocol, labels as numpy ints
        data, labels = made[f"data_batch_{i}"]
        with (base / f"data_batch_{i}").open("wb") as f:
            pickle.dump({b"data": data, b"labels": [np.int64(v) for v in labels],
                         b"batch_label": b"x", b"filenames": [b"a.png"] * len(data)}, f,
                        protocol=protocol)
    train = read_cifar10(tmp_path, normalize=False)["train"]
    assert len(train) + len(read_cifar10(tmp_path)["val"]) == 20
    marker = tmp_path / "payload-ran"
    with (base / "data_batch_3").open("wb") as f:
        pickle.dump({b"data": _Payload(marker), b"labels": [0]}, f, protocol=protocol)
    with pytest.raises(DataError) as info:
        read_cifar10(tmp_path)
    builtins = "__builtin__" if protocol < 3 else "builtins"  # python 2's name at protocol 2
    assert (f"{base / 'data_batch_3'}: refused: the pickle asks for {builtins}.exec, which is "
            "not plain data") in str(info.value)
    assert "data files never run code" in str(info.value)
    assert not marker.exists()


# --- Pathfinder --------------------------------------------------------------------


def write_pathfinder(root: Path, n: int = 10, binary_meta: bool = False):
    gen = pathfinder.generate(n, pathfinder.lra_params(32, "easy"), seed=0)
    level = root / "pathfinder32" / "curv_contour_length_14"
    rows = []
    for i in range(n):
        batch = i // 6  # two image folders and two metadata files
        folder = level / "imgs" / str(batch)
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(gen.images[i], "L").save(folder / f"sample_{i}.png")
        rows.append((batch, [f"imgs/{batch}", f"sample_{i}.png", str(i), str(gen.y[i]),
                             "1.0", "14", "4", "2", "0.5", "1", "1"]))
    meta = level / "metadata"
    meta.mkdir()
    for batch in (0, 1):
        lines = [r for b, r in rows if b == batch]
        if binary_meta:
            np.save(meta / f"{batch}.npy", np.array(lines))
        else:
            (meta / f"{batch}.npy").write_text("".join(" ".join(r) + "\n" for r in lines))
    return gen, root / "pathfinder32"


@pytest.mark.parametrize("binary_meta", [False, True])
def test_pathfinder_reader(tmp_path: Path, binary_meta: bool) -> None:
    gen, root = write_pathfinder(tmp_path, binary_meta=binary_meta)
    data = read_pathfinder(root, kind="tokens")
    idx = s4_split(10, (8, 1, 1), 42)
    for split, i in zip(("train", "val", "test"), idx):
        np.testing.assert_array_equal(data[split].x, gen.images[i].reshape(len(i), -1))
        np.testing.assert_array_equal(data[split].y, gen.y[i])
        assert (data[split].lengths == 1024).all()
    norm = read_pathfinder(root, difficulty="curv_contour_length_14")
    assert norm["train"].x.shape == (8, 1024, 1) and norm["train"].x.dtype == np.float32
    np.testing.assert_allclose(norm["train"].x[..., 0],
                               (gen.images[idx[0]].reshape(8, -1) / 255 - 0.5) / 0.5, atol=1e-6)
    few = read_pathfinder(root, max_samples=5, kind="unit")
    assert sum(len(v) for v in few.values()) == 5


def test_pathfinder_blacklist(tmp_path: Path) -> None:
    _, root = write_pathfinder(tmp_path)
    src, dst = root / "curv_contour_length_14", root / "curv_baseline"
    src.rename(dst)
    meta = dst / "metadata" / "0.npy"
    meta.write_text(meta.read_text() + "imgs/0 sample_172.png 172 1\n")  # the empty LRA file
    data = read_pathfinder(root, difficulty="easy")
    assert sum(len(v) for v in data.values()) == 10


def test_pathfinder_errors(tmp_path: Path) -> None:
    _, root = write_pathfinder(tmp_path)
    with pytest.raises(DataError, match=r"curv_baseline/metadata: folder not found; expected layout"):
        read_pathfinder(root, difficulty="easy")
    meta = root / "curv_contour_length_14" / "metadata"
    (meta / "1.npy").write_text("imgs/1 sample_6.png 6\n")
    with pytest.raises(DataError, match=r"1\.npy: row 1 .* 0/1 label"):
        read_pathfinder(root)
    (meta / "1.npy").write_text("imgs/1 sample_99.png 6 1\n")
    with pytest.raises(DataError, match=r"sample_99\.png: file not found"):
        read_pathfinder(root)
    (meta / "1.npy").unlink()
    (meta / "one.npy").write_text("")
    with pytest.raises(DataError, match=r"named <int>\.npy, found \['one\.npy'\]"):
        read_pathfinder(root)
    with pytest.raises(ValueError, match="'medium'"):
        read_pathfinder(root, difficulty="medium")
    with pytest.raises(ValueError, match="'rgb'"):
        read_pathfinder(root, kind="rgb")
    with pytest.raises(ValueError, match="max_samples"):
        read_pathfinder(root, max_samples=0)


# --- shared pieces -----------------------------------------------------------------


def test_fingerprint_names_the_files_read_and_their_bytes(tmp_path: Path) -> None:
    """Other bytes, another file name (IMDB's labels are folder names) or another image in
    Pathfinder's metadata give another fingerprint; the folder's place does not."""
    import shutil

    fp = lra_module.fingerprint
    (tmp_path / "a").mkdir()
    write_listops(tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "moved")
    first = fp("listops", tmp_path / "a")
    assert len(first) == 16 and fp("listops", tmp_path / "moved") == first
    assert lra_module.data_files("listops", tmp_path / "a") == [
        tmp_path / "a" / f"basic_{k}.tsv" for k in ("train", "val", "test")]
    with (tmp_path / "a" / "basic_test.tsv").open("a") as f:
        f.write("[MAX 1 2 ]\t2\n")
    assert fp("listops", tmp_path / "a") != first
    base = write_imdb(tmp_path / "imdb")
    before = fp("imdb", tmp_path / "imdb")
    (base / "train" / "pos" / "0_7.txt").rename(base / "train" / "neg" / "5_2.txt")
    assert fp("imdb", tmp_path / "imdb") != before
    write_aan(tmp_path)
    write_cifar(tmp_path)
    assert len({fp("aan", tmp_path), fp("cifar10", tmp_path), first}) == 3
    _, root = write_pathfinder(tmp_path / "pf")
    files = lra_module.data_files("pathfinder", root)
    assert [p.name for p in files[:2]] == ["0.npy", "1.npy"] and len(files) == 12
    before = fp("pathfinder", root)
    (files[-1]).write_bytes(files[-2].read_bytes())  # one image's pixels changed
    assert fp("pathfinder", root) != before
    with pytest.raises(ValueError, match="unknown reader 'mnist'; allowed: listops, aan"):
        fp("mnist", tmp_path)
    with pytest.raises(DataError, match="folder not found"):
        fp("listops", tmp_path / "nope")


def test_a_byte_order_mark_is_not_text(tmp_path: Path) -> None:
    """A UTF-8 BOM (Notepad, Excel) at the start of a file is dropped: the same splits."""
    for name in ("plain", "bom"):
        (tmp_path / name).mkdir()
        write_listops(tmp_path / name)
    write_aan(tmp_path / "plain")
    write_aan(tmp_path / "bom")
    for path in [*(tmp_path / "bom").glob("*.tsv")]:
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    base = write_imdb(tmp_path / "bom")
    review = base / "train" / "neg" / "0_2.txt"
    review.write_bytes(b"\xef\xbb\xbf" + review.read_bytes())
    for read in (read_listops, read_aan):
        plain, bom = read(tmp_path / "plain"), read(tmp_path / "bom")
        for k in plain:
            np.testing.assert_array_equal(plain[k].x, bom[k].x)
            np.testing.assert_array_equal(plain[k].y, bom[k].y)
    assert read_imdb(base)["train"].lengths[0] == len("bad")


def test_s4_split_matches_torch() -> None:
    got = s4_split(50, (40, 5, 5), 42)
    ref = torch.utils.data.random_split(range(50), (40, 5, 5),
                                        generator=torch.Generator().manual_seed(42))
    for a, b in zip(got, ref):
        assert a.tolist() == list(b.indices)
    with pytest.raises(ValueError, match="add up"):
        s4_split(10, (5, 4))


def test_split_and_bytes() -> None:
    with pytest.raises(ValueError, match="same length"):
        Split(np.zeros((3, 4)), np.zeros(3), np.zeros(2))
    assert encode_bytes("A").tolist() == [66] and encode_bytes("").shape == (0,)
    with pytest.raises(ValueError, match="text must be a str"):
        encode_bytes(b"A")  # type: ignore[arg-type]


def test_module_doctests() -> None:
    result = doctest.testmod(lra_module)
    assert result.attempted > 0 and result.failed == 0
