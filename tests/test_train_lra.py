"""Paper 2's LRA experiment: task data, the training loop, the grids and the two tables."""
import dataclasses
import math

import numpy as np
import pytest
import torch

from sst_core.experiments import paper2, runs
from sst_core.reports import lra as lra_reports
from sst_core.spec import profiles
from sst_core.spec.configs import LRAConfig
from sst_core.spec.profiles import PROFILES
from sst_core.store.records import cached_run
from sst_core.training.lra import cosine_warmup, train_lra
from sst_core.training.lra_data import data_fingerprint, load_task


def tiny(task="listops", **kw) -> LRAConfig:
    base = dict(task=task, init="inv", freeze_spectrum=False, H=4, N=4, n_layers=1, epochs=2,
                batch=8, seed=0, profile="smoke", n_train=16, max_length=40, image_side=8,
                mf_T=16)
    base.update(kw)
    return LRAConfig(**base)


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("task,encoder,length,n_classes", [
    ("listops", "embedding", 40, 10), ("digits", "linear", 64, 10), ("pathfinder", "linear", 1024, 2)])
def test_generated_tasks(store, task, encoder, length, n_classes):
    d = load_task(tiny(task, n_train=8))
    assert d.encoder == encoder and d.train.x.shape[1] == length
    assert d.n_classes <= n_classes and d.describe["source"] == "generated"
    # n_train, then a quarter each for val and test
    assert (len(d.train.y), len(d.val.y), len(d.test.y)) == (8, 2, 2)
    if encoder == "embedding":
        assert d.train.x.dtype == np.int64 and (d.train.lengths <= 40).all()


def test_generated_data_is_cached_and_a_broken_cache_is_regenerated(store):
    cfg = tiny(n_train=8)
    first = load_task(cfg)
    files = list((store / "smoke" / "lra_data").glob("listops-*.npz"))
    assert len(files) == 1
    np.testing.assert_array_equal(load_task(cfg).train.x, first.train.x)
    files[0].write_bytes(b"not an npz")
    np.testing.assert_array_equal(load_task(cfg).train.x, first.train.x)
    # the model's seed does not change the data of a cell
    np.testing.assert_array_equal(load_task(tiny(n_train=8, seed=5)).train.x, first.train.x)


def test_bad_task_names_and_missing_data_dir(store, monkeypatch):
    with pytest.raises(ValueError, match="'listopz'.*listops"):
        load_task(tiny("listopz"))
    monkeypatch.delenv("SST_LRA_DATA", raising=False)
    with pytest.raises(ValueError, match="lra_imdb.*SST_LRA_DATA"):
        load_task(tiny("lra_imdb"))


def test_cosine_warmup():
    assert cosine_warmup(0, 100, 10) == pytest.approx(0.1)
    assert cosine_warmup(10, 100, 10) == pytest.approx(1.0)
    assert cosine_warmup(100, 100, 10) == pytest.approx(0.0, abs=1e-12)
    assert cosine_warmup(55, 100, 10) == pytest.approx(0.5)


def test_training_records_curves_and_frozen_spectra_keep_their_memory(store, one_thread):
    learned = train_lra(tiny())
    frozen = train_lra(tiny(freeze_spectrum=True))
    for m in (learned, frozen):
        assert 0.0 <= m["test_accuracy"] <= 1.0 and len(m["curves"]["test_loss"]) == 2
        assert m["best_epoch"] in (1, 2) and m["steps"] == 4
    assert frozen["frozen_share"] > 0 and learned["frozen_share"] == 0
    assert frozen["n_trainable"] < frozen["n_params"]
    # a frozen spectrum is a buffer: its memory function is exactly the initial one
    assert frozen["sup_mf_after"] == frozen["sup_mf_before"]
    assert learned["sup_mf_after"] != learned["sup_mf_before"]
    # chance: always answering the test set's most frequent class
    y = load_task(tiny()).test.y
    assert learned["chance_accuracy"] == pytest.approx(np.bincount(y).max() / len(y))


def test_memory_after_training_that_cannot_be_computed_keeps_the_run(
        store, fail_on_second_call, one_thread):
    from sst_core.figures import lra as plots_lra
    from sst_core.training import lra

    calls = fail_on_second_call(  # after training
        lra, "supremum_memory_function",
        ArithmeticError("memory function did not converge up to 2000 digits"))
    cfg = tiny()
    rec = cached_run(cfg, train_lra)
    m = rec["metrics"]
    assert rec["status"] == "ok" and len(calls) == 2 and 0.0 <= m["test_accuracy"] <= 1.0
    assert m["sup_mf_after"] is None and len(m["sup_mf_before"]) == 1
    assert "did not converge" in m["mf_after_error"]
    fig = plots_lra.fig_sup_mf([rec], "listops")
    assert "not computable" in fig.axes[0].get_title()
    assert len(fig.axes[0].get_lines()) == 1  # at init only


def test_divergence_is_recorded_as_failed(store, monkeypatch, one_thread):
    real = torch.nn.CrossEntropyLoss

    class Nan(real):
        def forward(self, a, b):
            return super().forward(a, b) * math.nan

    monkeypatch.setattr(torch.nn, "CrossEntropyLoss", Nan)
    rec = runs.run(tiny())
    assert rec["status"] == "failed" and "nan" in rec["reason"]


def test_grids():
    P = PROFILES["quick"]
    main, abl = paper2.lra_main_grid(P), paper2.lra_ablation_grid(P)
    per_task = len(paper2.LRA_MAIN_INITS) * 2 * len(P.lra_seeds)
    assert len(main) == len(P.lra_tasks) * per_task
    assert len(abl) == len(P.lra_tasks) * len(paper2.LRA_ABLATION_INITS) * 2 * len(P.lra_ablation_seeds)
    assert {c.decoder for c in main if c.task == "pathfinder"} == {"last"}
    shared = set(main) & set(abl)  # seed 0 of S4D-Inv is in both tables: run once
    assert len(shared) == len(P.lra_tasks) * 2 * len(set(P.lra_seeds) & set(P.lra_ablation_seeds))
    # the ablation's "linear" row is the real-axis spectrum, not the main table's S4D-Lin
    assert {c.init for c in abl} == {"random", "real", "step", "inv"}
    from sst_core.spec import paper_values
    assert paper_values.LRA_ABLATION[("Pathfinder", "real", False)] == (0.797, 0.754)
    assert not any(k[1] == "lin" for k in paper_values.LRA_ABLATION)
    assert lra_reports.INIT_NAMES["real"] == "linear (S4D-Real)"  # one name map (spec.names)


def test_tables_from_constructed_records(store):
    from dataclasses import replace

    P = replace(PROFILES["smoke"], lra_seeds=(0, 1))
    # S4D-Inv: frozen 0.10 above learned, seeds 0.02 apart on both sides (Welch t +7.1 with
    # 2 degrees of freedom, z +2.3: holds); S4D-Lin: frozen 0.01 below, its seeds 0.2
    # apart (z -0.1: a tie, not a failure)
    accs = {(False, "inv"): (0.60, 0.62), (True, "inv"): (0.70, 0.72),
            (False, "lin"): (0.50, 0.52), (True, "lin"): (0.40, 0.60)}
    for cfg in paper2.lra_main_grid(P, tasks=("listops",)):
        value = accs[(cfg.freeze_spectrum, cfg.init)][cfg.seed]
        cached_run(cfg, lambda c, v=value: {"test_accuracy": v})
    t = lra_reports.lra_main(P)
    row = next(r for r in t.rows if r[0].startswith("listops"))
    assert row[1] == "0.620 / 0.600 (0.594 / 0.589)" and row[3].startswith("0.720 / 0.700")
    assert row[-1] == "S4D-Inv: +0.100 (z +2.3), holds; S4D-Lin: -0.010 (z -0.1), tie"
    cell = next(d for d in t.data if d["task"] == "listops" and d["init"] == "inv" and d["frozen"])
    assert cell["accuracies"] == [0.7, 0.72] and cell["paper_max_min"] == [0.585, 0.570]
    assert cell["frozen_minus_learned"]["verdict"] == "holds"
    assert abs(cell["frozen_minus_learned"]["diff"] - 0.1) < 1e-12
    abl = lra_reports.lra_ablation(P)
    assert len(abl.rows) == 8 and "smoke" in abl.note


def _listops_release(root):
    """A tiny LRA ListOps folder: listops-1000/basic_{train,val,test}.tsv."""
    from sst_core.tasks import listops

    folder = root / "lra_release" / "listops-1000"
    folder.mkdir(parents=True)
    d = listops.generate(24, min_length=5, max_length=40, seed=1)
    rows = [f"{listops.to_lra_text(listops.parse(t))}\t{y}" for t, y in zip(d.texts, d.y)]
    for name, part in (("train", rows[:16]), ("val", rows[16:20]), ("test", rows[20:])):
        (folder / f"basic_{name}.tsv").write_text("Source\tTarget\n" + "\n".join(part) + "\n")
    return root


def test_sst_lra_trains_on_user_files_and_prints_the_table(store, tmp_path, monkeypatch, capsys,
                                                           one_thread):
    import dataclasses
    import json

    from sst_core import cli

    monkeypatch.setenv("SST_LRA_DATA", "")  # `sst lra` sets it; monkeypatch restores it
    small = dataclasses.replace(PROFILES["smoke"], lra_seeds=(0,), lra_epochs=1)
    monkeypatch.setitem(profiles.PROFILES, "smoke", small)
    root = _listops_release(tmp_path / "lra")
    rc = cli.main(["lra", "--task", "lra_listops", "--data-dir", str(root), "--profile", "smoke",
                   "--table", "main", "--format", "json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    cells = [d for d in out["data"] if d["task"] == "lra_listops"]
    assert len(cells) == 4 and all(d["n_runs"] == 1 for d in cells)
    assert all(d["paper_max_min"] is not None for d in cells)  # lra_listops stands for ListOps
    # the user's files are not called generated stand-ins; the generated tasks are
    assert "stand-ins" not in out["note"] and "the user's LRA files" in out["note"]
    assert "generated stand-ins" in lra_reports.lra_main(PROFILES["smoke"]).note


def test_sst_lra_on_other_files_computes_other_runs(store, tmp_path, monkeypatch, capsys,
                                                    one_thread):
    """`--data-dir B` after `--data-dir A`: B's files have another fingerprint, so its runs
    have other ids and are computed (A's records were reused as B's before); A again
    computes nothing."""
    import json

    from sst_core import cli
    from sst_core.tasks import lra as lra_files

    monkeypatch.setenv("SST_LRA_DATA", "")  # `sst lra` sets it; monkeypatch restores it
    small = dataclasses.replace(PROFILES["smoke"], lra_seeds=(0,), lra_epochs=1)
    monkeypatch.setitem(profiles.PROFILES, "smoke", small)
    a = _listops_release(tmp_path / "a")
    b = _listops_release(tmp_path / "b")
    test_b = b / "lra_release" / "listops-1000" / "basic_test.tsv"
    lines = test_b.read_text().splitlines()  # B: one test label changed
    expr, label = lines[1].split("\t")
    lines[1] = f"{expr}\t{(int(label) + 1) % 10}"
    test_b.write_text("\n".join(lines) + "\n")
    folder = tmp_path / "res" / "smoke" / "lra"
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path / "res"))

    def sst_lra(root):
        assert cli.main(["lra", "--task", "lra_listops", "--data-dir", str(root), "--profile",
                         "smoke", "--table", "main", "--format", "json"]) == 0
        cells = json.loads(capsys.readouterr().out)["data"]
        return sorted(p.name for p in folder.glob("*.json")), cells

    runs_a, _ = sst_lra(a)
    assert len(runs_a) == 4
    runs_ab, cells_b = sst_lra(b)
    assert len(runs_ab) == 8 and set(runs_a) < set(runs_ab)  # B: four runs of its own
    assert all(d["n_runs"] == 1 for d in cells_b if d["task"] == "lra_listops")
    prints = {json.loads((folder / n).read_text())["config"]["data_fingerprint"] for n in runs_ab}
    assert prints == {lra_files.fingerprint("listops", a / "lra_release" / "listops-1000"),
                      lra_files.fingerprint("listops", b / "lra_release" / "listops-1000")}
    assert sst_lra(a)[0] == runs_ab  # A again: its records, nothing computed


def test_a_config_must_hold_the_fingerprint_of_the_files_it_reads(store, tmp_path,
                                                                  monkeypatch):
    """A lra_* config without a fingerprint, or with another one than its files have, stops
    before training, naming both (no record under an id that does not name its data)."""
    from sst_core.tasks.lra import DataError

    root = _listops_release(tmp_path / "lra")
    monkeypatch.setenv("SST_LRA_DATA", str(root))
    right = data_fingerprint("lra_listops")
    assert load_task(tiny("lra_listops", data_fingerprint=right)).n_classes <= 10
    with pytest.raises(DataError, match=f"no data_fingerprint.*data_fingerprint='{right}'"):
        load_task(tiny("lra_listops"))
    with pytest.raises(DataError, match=f"'0123456789abcdef' is not the fingerprint '{right}'"):
        runs.run(tiny("lra_listops", data_fingerprint="0123456789abcdef"))
    assert not list(store.rglob("*.json"))
    # the grids set it for lra_* tasks only; generated tasks keep their run ids
    grid = paper2.lra_main_grid(PROFILES["smoke"], tasks=("lra_listops", "listops"))
    assert {c.data_fingerprint for c in grid if c.task == "lra_listops"} == {right}
    assert {c.data_fingerprint for c in grid if c.task == "listops"} == {""}


def test_committed_lra_records_keep_their_run_ids():
    """The fingerprint is left out of a generated task's config, so every committed LRA
    record is still the record of its file: the hash of the config it describes."""
    from pathlib import Path

    from sst_core.experiments import registry
    from sst_core.spec.configs import config_dict, config_hash
    from sst_core.store.records import load_record

    root = Path(__file__).resolve().parents[1] / "results"
    files = sorted(root.glob("*/lra/*.json"))
    assert files
    for file in files:
        rec = load_record(file)
        cfg = registry.config_from_dict(rec["config"])
        assert (config_hash(cfg), config_dict(cfg)) == (file.stem, rec["config"]), file


def test_sst_lra_bad_inputs(tmp_path, monkeypatch, capsys):
    from sst_core import cli

    monkeypatch.setenv("SST_LRA_DATA", "")  # `sst lra` sets it; monkeypatch restores it
    assert cli.main(["lra", "--task", "imdb"]) == 2
    assert "'imdb'" in capsys.readouterr().err
    assert cli.main(["lra", "--task", "lra_listops", "--data-dir", str(tmp_path / "nope")]) == 2
    assert "not a folder" in capsys.readouterr().err
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path / "res"))
    (tmp_path / "empty").mkdir()
    assert cli.main(["lra", "--task", "lra_listops", "--data-dir", str(tmp_path / "empty"),
                     "--profile", "smoke", "--table", "main"]) == 2
    assert "basic_train.tsv" in capsys.readouterr().err  # names the expected layout


def test_paper_profile_uses_the_published_task_configs():
    P = PROFILES["paper"]
    by_task = {c.task: c for c in paper2.lra_main_grid(P, tasks=("listops", "pathfinder",
                                                                       "digits", "lra_imdb"))}
    assert (by_task["listops"].H, by_task["listops"].n_layers, by_task["listops"].epochs) == (128, 8, 40)
    assert by_task["pathfinder"].lr == 0.004 and by_task["pathfinder"].decoder == "last"
    assert by_task["digits"].H == 512 and by_task["digits"].dropout == 0.1
    assert by_task["lra_imdb"].batch == 16
    assert len(P.lra_seeds) == 6  # the paper's six seeds


def test_retrieval_on_aan_pairs(store, tmp_path, monkeypatch, one_thread):
    """AAN: two documents per example through the retrieval decoder, from user files."""
    folder = tmp_path / "lra" / "tsv_data"
    folder.mkdir(parents=True)
    rows = [f"{i % 2}.0\tp{i}\tq{i}\tdoc {'ab' * (i + 1)}\tother {'cd' * (2 * i + 1)}" for i in range(8)]
    for name, part in (("train", rows[:6]), ("eval", rows[6:7]), ("test", rows[7:])):
        (folder / f"new_aan_pairs.{name}.tsv").write_text("\n".join(part) + "\n")
    monkeypatch.setenv("SST_LRA_DATA", str(tmp_path / "lra"))
    cfg = tiny("lra_aan", decoder="retrieval", batch=2, epochs=1, mf_T=0,
               data_fingerprint=data_fingerprint("lra_aan"))
    data = load_task(cfg)
    assert data.train.x.shape[1] == 2 and data.describe["pairs"] and data.n_classes == 2
    m = train_lra(cfg)
    assert m["steps"] == 3 and 0.0 <= m["test_accuracy"] <= 1.0
    grid = paper2.lra_main_grid(PROFILES["smoke"], tasks=("lra_aan",))
    assert {c.decoder for c in grid} == {"retrieval"}


def test_retrieval_decoder_checks_its_input():
    from sst_core.models.s4 import S4DModel

    m = S4DModel(10, 2, H=4, N=4, n_layers=1, decoder="retrieval")
    x = torch.randint(1, 10, (3, 2, 7))
    assert m(x, lengths=torch.full((3, 2), 7)).shape == (3, 2)
    with pytest.raises(ValueError, match=r"\(b, 2, L\)"):
        m(torch.randint(1, 10, (3, 7)))


def test_the_claims_report_on_constructed_records(store):
    """Chance, margin and the four claims from records built to make each hold (listops)
    or not (the other tasks have no runs: '—'): three seeds a cell, learned runs spread
    0.01 apart by seed and frozen ones 0.001."""
    P = dataclasses.replace(PROFILES["smoke"], lra_seeds=(0, 1, 2),
                            lra_ablation_seeds=(0, 1, 2))
    acc = {("inv", False): 0.60, ("inv", True): 0.66, ("lin", False): 0.50,
           ("lin", True): 0.55, ("random", False): 0.40, ("random", True): 0.20,
           ("real", False): 0.45, ("real", True): 0.30, ("step", False): 0.42,
           ("step", True): 0.25}

    def fake(cfg):
        frozen = cfg.freeze_spectrum
        # within 5% of the minimum from epoch 2 or 3 (frozen: seed 2 later) or 4 or 5
        # (learned: seed 1 later), of 8
        at = (2 + (cfg.seed == 2)) if frozen else (4 + (cfg.seed == 1))
        loss = [1.0] * (at - 1) + [0.5] * (9 - at)
        mf = [[1.0, 0.5]]
        return {"test_accuracy": acc[cfg.init, frozen] + cfg.seed * (0.001 if frozen else 0.01),
                "chance_accuracy": 0.16, "task": {"n_test": 400},
                "curves": {"epoch": list(range(1, 9)), "test_loss": loss},
                "sup_mf_before": mf, "sup_mf_after": mf if frozen else [[1.0, 0.55]]}

    for cfg in dict.fromkeys(paper2.lra_main_grid(P, tasks=("listops",))
                             + paper2.lra_ablation_grid(P, tasks=("listops",))):
        cached_run(cfg, fake)
    t = lra_reports.lra_claims(P)
    d = next(x for x in t.data if x["task"] == "listops")
    assert d["chance"] == pytest.approx(0.16) and d["margin"] == pytest.approx(0.46)
    assert d["above_chance"] and d["chance_band"] == pytest.approx(0.16 + 3 * (0.16 * 0.84 / 400) ** 0.5)
    assert d["frozen_as_good"] == "holds" and d["unstructured_worse"] == "holds"
    inv = next(p for p in d["frozen_parts"] if p["init"] == "inv" and p["part"] == "accuracy")
    assert inv["diff"] == pytest.approx(0.661 - 0.61)
    assert inv["se"] == pytest.approx(((0.001 ** 2 + 0.01 ** 2) / 3) ** 0.5)
    spread = next(p for p in d["frozen_parts"] if p["init"] == "inv" and p["part"] == "spread")
    assert spread["diff"] == pytest.approx(math.log(10)) and spread["verdict"] == "holds"
    more = d["unstructured_parts"][-1]  # the gap to the closest: real, 0.15 learned, 0.36 frozen
    assert more["init"] == "real / real" and more["diff"] == pytest.approx(0.36 - 0.15)
    assert t.rows[0][5].startswith("holds (S4D-Inv accuracy z +")
    # claim 3 per spectrum, every one's learned runs growing by 1.55 / 1.5 < 1.1
    assert [p["init"] for p in d["memory_parts"]] == ["inv", "lin", "random", "real", "step"]
    assert all(p["growth"] == pytest.approx(1.55 / 1.5) and p["verdict"] == "holds"
               for p in d["memory_parts"])
    assert d["memory_not_extended"] == "holds"
    # claim 4 per spectrum: epochs (4, 5, 4) learned against (2, 2, 3) frozen, t +4.2
    # with 4 degrees of freedom: z +2.5
    conv = d["convergence_parts"]
    assert [(p["init"], p["learned"], p["frozen"]) for p in conv] == [
        ("inv", pytest.approx(13 / 3), pytest.approx(7 / 3)),
        ("lin", pytest.approx(13 / 3), pytest.approx(7 / 3))]
    assert conv[0]["se"] == pytest.approx((2 * (1 / 3) / 3) ** 0.5)
    assert d["frozen_converges_faster"] == "holds"
    assert t.rows[0][8] == ("holds (S4D-Inv 2.3 vs 4.3 epochs, z +2.5; "
                            "S4D-Lin 2.3 vs 4.3 epochs, z +2.5)")
    other = next(x for x in t.data if x["task"] != "listops")
    assert other["frozen_as_good"] is None and other["chance"] is None
    assert other["frozen_parts"] == [] and other["unstructured_parts"] == []
    assert "—" in t.rows[1]
    # one seed a cell: no standard error, so no claim is judged (one rule for all four)
    one = dataclasses.replace(P, lra_seeds=(0,), lra_ablation_seeds=(0,))
    d1 = next(x for x in lra_reports.lra_claims(one).data if x["task"] == "listops")
    assert d1["frozen_as_good"] is None and d1["unstructured_worse"] is None
    assert d1["memory_not_extended"] is None and d1["frozen_converges_faster"] is None


def test_memory_growth_ratios_skip_frozen_failed_and_uncomputable_runs():
    def rec(before, after, frozen=False, status="ok"):
        return {"status": status, "config": {"freeze_spectrum": frozen},
                "metrics": {"sup_mf_before": before, "sup_mf_after": after}}

    records = [rec([[1.0, 0.5]], [[1.0, 1.0]]),  # 2.0 / 1.5
               rec([[2.0], [1.0]], [[1.5], [1.5]]),  # summed over layers: 3.0 / 3.0
               rec([[1.0]], [[5.0]], frozen=True),  # frozen: its memory cannot change
               rec([[1.0]], None),  # not computable after training
               rec([[0.0]], [[1.0]]),  # no memory at initialisation
               rec([[1.0]], [[9.0]], status="failed")]
    assert lra_reports.mf_growth_ratios(records) == pytest.approx([2.0 / 1.5, 1.0])
    assert lra_reports.mf_growth_ratios([]) == []


def test_claims_are_not_judged_on_a_task_at_chance(store):
    P = PROFILES["smoke"]
    for cfg in paper2.lra_main_grid(P, tasks=("digits",)):
        cached_run(cfg, lambda c: {"test_accuracy": 0.17, "chance_accuracy": 0.16,
                                   "task": {"n_test": 100},
                                   "curves": {"epoch": [1], "test_loss": [1.0]}})
    d = next(x for x in lra_reports.lra_claims(P).data if x["task"] == "digits")
    assert d["above_chance"] is False and d["frozen_as_good"] is None
    row = next(r for r in lra_reports.lra_claims(P).rows if r[0].startswith("digits"))
    assert row[3].endswith("(at chance)") and row[5].startswith("not judged")
    assert row[4] == "—" and d["data_probe"] is None  # no data probe of digits here


def test_probe_tasks_show_their_margin_and_no_claims(store):
    P = dataclasses.replace(PROFILES["smoke"], lra_tasks=("listops",),
                            lra_probe_tasks=("pathfinder",), lra_seeds=(0, 1, 2))
    grid = paper2.lra_probe_grid(P)
    assert [(c.task, c.init, c.freeze_spectrum, c.seed) for c in grid] == \
        [("pathfinder", "inv", False, 0), ("pathfinder", "inv", False, 1)]
    for cfg in grid:
        cached_run(cfg, lambda c: {"test_accuracy": 0.9, "chance_accuracy": 0.5,
                                   "task": {"n_test": 400},
                                   "curves": {"epoch": [1], "test_loss": [1.0]}})
    t = lra_reports.lra_claims(P)
    d = next(x for x in t.data if x["task"] == "pathfinder")
    assert d["probe"] and d["above_chance"] and d["margin"] == pytest.approx(0.4)
    assert d["frozen_as_good"] is None
    row = next(r for r in t.rows if r[0].startswith("pathfinder"))
    assert row[0].endswith("[probe]") and row[5] == "probe only (learned S4D-Inv)"
    assert {c.difficulty for c in paper2.lra_probe_grid(PROFILES["standard"])} == {"easy"}


def test_a_task_with_its_own_training_set_size_and_its_probe_on_the_common_size(store):
    P = dataclasses.replace(PROFILES["smoke"], lra_tasks=("listops", "pathfinder"),
                            lra_task_n_train=(("pathfinder", 96),), lra_n_train=32,
                            lra_probe_tasks=("pathfinder",), lra_data_probe_tasks=(),
                            lra_seeds=(0, 1))
    assert P.lra_train_size("pathfinder") == 96 and P.lra_train_size("listops") == 32
    sizes = {(c.task, c.n_train) for c in paper2.lra_main_grid(P) + paper2.lra_ablation_grid(P)}
    assert sizes == {("listops", 32), ("pathfinder", 96)}
    probes = paper2.lra_probe_grid(P)
    assert [(c.task, c.n_train, c.seed) for c in probes] == [("pathfinder", 32, 0),
                                                            ("pathfinder", 32, 1)]
    assert "lra_task_n_train={pathfinder: 96}" in P.scale("lra_n_train", "lra_task_n_train")
    assert "lra_task_n_train" not in PROFILES["smoke"].scale("lra_n_train", "lra_task_n_train")

    def fake(acc):
        return lambda c: {"test_accuracy": acc, "chance_accuracy": 0.5,
                          "task": {"n_test": 400, "n_train": c.n_train},
                          "curves": {"epoch": [1, 2], "train_loss": [0.7, 0.1],
                                     "test_loss": [0.7, 0.9]}}
    for cfg in probes:
        cached_run(cfg, fake(0.55))
    # the probe is no run of the task's cells: the claims wait for the task's own size
    d = next(x for x in lra_reports.lra_claims(P).data if x["task"] == "pathfinder")
    assert d["learned_inv_best"] is None and not d["probe"]
    main = next(c for c in paper2.lra_main_grid(P) if c.task == "pathfinder"
                and c.init == "inv" and not c.freeze_spectrum and c.seed == 0)
    fit = {(d["task"], d["n_train_asked"]): d for d in lra_reports.lra_fit(P).data}
    assert fit["pathfinder", 32]["best_test_accuracy"] == pytest.approx(0.55)
    assert fit["pathfinder", 32]["chance"] == pytest.approx(0.5)
    assert fit["pathfinder", 32]["overfit"] == 2 and fit["pathfinder", 96]["runs"] == 0
    cached_run(main, fake(0.8))
    d = next(x for x in lra_reports.lra_claims(P).data if x["task"] == "pathfinder")
    assert d["learned_inv_best"] == pytest.approx(0.8)
    fit = {(d["task"], d["n_train_asked"]): d for d in lra_reports.lra_fit(P).data}
    assert fit["pathfinder", 96]["best_test_accuracy"] == pytest.approx(0.8)
    assert fit["pathfinder", 32]["best_test_accuracy"] == pytest.approx(0.55)
    # the scale table: per task the examples its stored runs had, else the profile's ask
    scale = lra_reports.scale_table(P)
    assert scale.columns == ["", "listops", "pathfinder", "paper"]
    assert scale.rows[0][:3] == ["training examples", "32 (asked)", "96"]
    assert [d["n_train"] for d in scale.data] == [None, 96]
    # on the common size, the probes' runs (32 examples, stored) are runs of the task's cells
    assert lra_reports.scale_table(dataclasses.replace(P, lra_task_n_train=())).rows[0][2] == "32"


def test_a_probe_only_task_trains_at_its_own_size_and_model():
    P = dataclasses.replace(PROFILES["smoke"], lra_tasks=("listops",), lra_n_train=32,
                            lra_task_n_train=(("pathfinder", 96),), lra_H=8, lra_layers=1,
                            lra_task_H=(("pathfinder", 16),), lra_task_layers=(("pathfinder", 3),),
                            lra_probe_tasks=("pathfinder",), lra_seeds=(0, 1))
    assert P.lra_model_size("pathfinder") == (16, 3) and P.lra_model_size("listops") == (8, 1)
    probes = paper2.lra_probe_grid(P)
    assert [(c.task, c.n_train, c.H, c.n_layers, c.seed, c.init, c.freeze_spectrum)
            for c in probes] == [("pathfinder", 96, 16, 3, 0, "inv", False),
                                 ("pathfinder", 96, 16, 3, 1, "inv", False)]
    assert {(c.H, c.n_layers) for c in paper2.lra_main_grid(P)} == {(8, 1)}
    scale = {row[0]: row[1:] for row in lra_reports.scale_table(P).rows}
    assert scale["layers"] == ["1", "3", "6 to 8"] and scale["width H"] == ["8", "16", "128 to 512"]
    # the block and decoder come from the task's configs (state-spaces/s4's per-task settings)
    assert scale["normalisation"] == ["post-norm, batch norm", "pre-norm, batch norm", "—"]
    assert scale["decoder"] == ["mean-pool", "last position", "—"]
    assert scale["seeds per cell"][:2] == ["2 (main table), 1 (ablation)",
                                           "2 (learned S4D-Inv only)"]
    assert lra_reports.scale_table(P).columns == ["", "listops", "pathfinder [probe]", "paper"]
    assert "lra_task_H={pathfinder: 16}, lra_task_layers={pathfinder: 3}" in P.scale(
        "lra_task_H", "lra_task_layers")


def test_data_probes_train_the_first_seed_on_more_examples_and_the_fit_table_shows_both(store):
    P = dataclasses.replace(PROFILES["smoke"], lra_tasks=("listops",), lra_probe_tasks=(),
                            lra_data_probe_tasks=("listops",), lra_data_probe_factor=3,
                            lra_seeds=(4, 5))
    (probe,) = paper2.lra_data_probe_grid(P)
    base = next(c for c in paper2.lra_main_grid(P) if c.init == "inv"
                and not c.freeze_spectrum and c.seed == 4)
    assert (probe.task, probe.init, probe.freeze_spectrum, probe.seed) == ("listops", "inv",
                                                                          False, 4)
    assert probe.n_train == 3 * P.lra_n_train and probe == dataclasses.replace(
        base, n_train=probe.n_train)  # everything else as the main table's run
    assert paper2.lra_data_probe_grid(dataclasses.replace(P, lra_data_probe_tasks=())) == []

    def fake(acc, test_loss):
        return lambda c: {"test_accuracy": acc, "chance_accuracy": 0.2,
                          "task": {"n_test": 100, "n_train": c.n_train},
                          "curves": {"epoch": [1, 2], "train_loss": [2.0, 1.0],
                                     "test_loss": test_loss}}
    cached_run(base, fake(0.3, [1.5, 1.9]))  # memorises: test loss climbs
    t = lra_reports.lra_fit(P)
    rows = {(d["task"], d["n_train_asked"]): d for d in t.data}
    assert rows["listops", P.lra_n_train]["overfit"] == 1
    assert rows["listops", probe.n_train]["runs"] == 0  # the probe is not stored yet
    assert t.rows[-1][1] == "missing"
    cached_run(probe, fake(0.6, [1.2, 1.1]))
    d = next(x for x in lra_reports.lra_fit(P).data if x["n_train_asked"] == probe.n_train)
    assert d["runs"] == 1 and d["overfit"] == 0 and d["n_train"] == probe.n_train
    assert d["best_test_accuracy"] == pytest.approx(0.6) and d["chance"] == pytest.approx(0.2)
    # the claims table shows the probe beside the task's main runs, and judges on those
    claims = lra_reports.lra_claims(P)
    c = next(x for x in claims.data if x["task"] == "listops")
    assert c["data_probe"] == {"best": pytest.approx(0.6), "n_train": probe.n_train,
                               "chance": pytest.approx(0.2), "above_chance": True}
    assert c["learned_inv_best"] == pytest.approx(0.3)  # the main run, not the probe
    row = next(r for r in claims.rows if r[0].startswith("listops"))
    assert row[4] == f"0.600 with {probe.n_train:,} examples (chance 0.200)"
    assert c["margin"] == pytest.approx(0.1)


# -- resuming a stopped run ---------------------------------------------------------------------

class _Stopped(BaseException):
    """A kill right after a state was saved (BaseException: nothing in the loop catches it)."""


def _without_times(m: dict) -> dict:
    return {k: v for k, v in m.items() if k not in ("train_time_s", "resumed")}


def _stop_after_saving(monkeypatch, n: int) -> list:
    from sst_core.training import lra

    real, saved = lra.save_resume_state, []

    def save(path, state):
        real(path, state)
        saved.append(state["epoch"])
        if len(saved) == n:
            raise _Stopped

    monkeypatch.setattr(lra, "save_resume_state", save)
    return saved


@pytest.mark.parametrize("task,kw", [("listops", {}), ("digits", {"dropout": 0.2})])
def test_a_stopped_run_resumes_to_exactly_the_numbers_of_an_unstopped_one(
        store, one_thread, task, kw):
    """Killed after its second epoch's state was saved, a run started again goes on from
    there (the batch order, dropout's generator, the optimizer and the best epoch restored)
    and ends with every number of a run that was never stopped; the state file is gone."""
    cfg = tiny(task, epochs=4, n_train=24, **kw)
    whole = train_lra(cfg)
    state = store / "run.resume.pt"
    with pytest.MonkeyPatch.context() as mp:
        saved = _stop_after_saving(mp, 2)
        with pytest.raises(_Stopped):
            train_lra(cfg, checkpoint_to=state, checkpoint_key="k")
    assert saved == [1, 2] and state.exists()
    resumed = train_lra(cfg, checkpoint_to=state, checkpoint_key="k")
    assert _without_times(resumed) == _without_times(whole)
    assert resumed["resumed"]["from_epoch"] == 2 and resumed["resumed"]["earlier_wall_s"] > 0
    assert whole["resumed"] is None and not state.exists()
    assert not list(store.glob(".*.tmp"))


def test_a_state_of_another_key_or_unreadable_is_ignored_with_a_warning(store, one_thread):
    from sst_core.training import lra

    cfg = tiny(epochs=3)
    whole = train_lra(cfg)
    state = store / "run.resume.pt"
    lra.save_resume_state(state, {"key": "another run or code", "epoch": 1})
    with pytest.warns(RuntimeWarning, match="saved under key 'another run or code', not 'k'"):
        again = train_lra(cfg, checkpoint_to=state, checkpoint_key="k")
    assert _without_times(again) == _without_times(whole) and again["resumed"] is None
    state.write_bytes(b"half a file")
    with pytest.warns(RuntimeWarning, match="unreadable resume state"):
        assert lra.load_resume_state(state, "k") is None
    assert lra.load_resume_state(store / "absent.resume.pt", "k") is None


def test_a_failed_run_leaves_no_state(store, monkeypatch, one_thread):
    from sst_core.store.records import RunFailed
    from sst_core.training import lra

    real, steps = lra.optimizer_step, []

    def fail_in_epoch_two(loss, model, opt, clip, where, metrics):
        steps.append(where)
        if len(steps) > 3:
            raise RunFailed(f"loss became nan at {where}")
        real(loss, model, opt, clip, where, metrics)

    monkeypatch.setattr(lra, "optimizer_step", fail_in_epoch_two)
    state = store / "run.resume.pt"
    with pytest.raises(RunFailed):
        train_lra(tiny(epochs=3, n_train=24), checkpoint_to=state, checkpoint_key="k")
    assert len(steps) == 4 and not state.exists()  # epoch 1 saved its state, then removed


def test_a_sweep_run_resumes_beside_its_record_under_its_run_id_and_code(store, one_thread):
    """Through the sweep's path (``runs.run``): the state lies beside the record and is keyed
    by run id and version; the record says the run resumed, and its compute counts the
    earlier part."""
    from sst_core.experiments.registry import version
    from sst_core.spec.configs import config_hash
    from sst_core.store.records import artifact_path, load_record, record_path, run_compute_s
    from sst_core.training import lra

    cfg = tiny(epochs=3)
    with pytest.MonkeyPatch.context() as mp:
        _stop_after_saving(mp, 1)
        with pytest.raises(_Stopped):
            runs.run(cfg)
    path = artifact_path(cfg, runs.RESUME_SUFFIX)
    assert torch.load(path, weights_only=True)["key"] == \
        f"{config_hash(cfg)}:v{version('lra')}"
    rec = runs.run(cfg)
    assert rec["status"] == "ok" and rec["metrics"]["resumed"]["from_epoch"] == 1
    assert not path.exists() and load_record(record_path(cfg)) == rec
    earlier = rec["metrics"]["resumed"]["earlier_wall_s"]
    assert run_compute_s(rec) == pytest.approx(rec["wall_time_s"] + earlier)


def test_claim_counts_skip_probes_and_say_when_no_task_is_judged():
    rows = [{"probe": False, "frozen_as_good": "tie", "unstructured_worse": "fails",
             "memory_not_extended": None, "frozen_converges_faster": "holds"},
            {"probe": False, "frozen_as_good": "holds", "unstructured_worse": None,
             "memory_not_extended": None, "frozen_converges_faster": "holds"},
            {"probe": True, "frozen_as_good": "holds", "unstructured_worse": "holds",
             "memory_not_extended": "holds", "frozen_converges_faster": "holds"}]  # not counted
    rows[1]["frozen_converges_faster"] = "undetermined"
    counts = lra_reports.claim_counts(rows)
    none = {"undetermined": 0}
    assert counts == {
        "frozen_as_good": {"holds": 1, "tie": 1, "fails": 0, **none, "judged": 2},
        "unstructured_worse": {"holds": 0, "tie": 0, "fails": 1, **none, "judged": 1},
        "memory_not_extended": {"holds": 0, "tie": 0, "fails": 0, **none, "judged": 0},
        "frozen_converges_faster": {"holds": 1, "tie": 0, "fails": 0, "undetermined": 1,
                                    "judged": 2}}
    assert list(counts) == list(lra_reports.LRA_CLAIMS)  # the paper's order
    table = lra_reports.claim_counts_table(counts)
    assert table.columns == ["claim", "holds", "ties", "fails", "undetermined", "tasks judged"]
    assert table.rows == [["1: frozen ≥ learned", 1, 1, 0, 0, 2],
                          ["2: unstructured worse", 0, 0, 1, 0, 1],
                          ["3: memory not extended", 0, 0, 0, 0, 0],
                          ["4: frozen converges faster", 1, 0, 0, 1, 2]]
    assert [d["claim"] for d in table.data] == list(lra_reports.LRA_CLAIMS)


def test_claim_one_calls_a_gap_well_inside_the_seeds_noise_a_tie(store):
    """Our ListOps case: the frozen S4D-Inv mean 0.002 below the learned one, with seeds
    0.02 apart: the strict rule said no; the noise rule calls it a tie."""
    P = dataclasses.replace(PROFILES["smoke"], lra_seeds=(0, 1, 2, 3, 4, 5))
    acc = {("inv", False): 0.395, ("inv", True): 0.393, ("lin", False): 0.370,
           ("lin", True): 0.372}
    jitter = (0.02, -0.02, 0.01, -0.01, 0.0, 0.005)

    def fake(cfg):
        return {"test_accuracy": acc[cfg.init, cfg.freeze_spectrum] + jitter[cfg.seed],
                "chance_accuracy": 0.16, "task": {"n_test": 2000},
                "curves": {"epoch": [1, 2], "test_loss": [1.0, 0.9]}}

    for cfg in paper2.lra_main_grid(P, tasks=("listops",)):
        cached_run(cfg, fake)
    d = next(x for x in lra_reports.lra_claims(P).data if x["task"] == "listops")
    assert d["frozen_as_good"] == "tie"
    inv = d["frozen_parts"][0]
    assert (inv["init"], inv["part"], inv["verdict"]) == ("inv", "accuracy", "tie")
    assert inv["diff"] == pytest.approx(-0.002) and abs(inv["z"]) < 1
    assert d["unstructured_worse"] is None  # no ablation runs
    assert lra_reports.binomial_sd(0.5, 100) == pytest.approx(0.05)
    assert lra_reports.at_chance(0.5, 100) == pytest.approx(0.5 + lra_reports.CHANCE_SIGMAS * 0.05)


def test_the_claim_rule_on_constructed_ties_and_reversals():
    assert lra_reports.CLAIM_SES == 2.0
    assert lra_reports.judge(0.21, 0.1) == "holds" and lra_reports.judge(-0.21, 0.1) == "fails"
    assert lra_reports.judge(0.19, 0.1) == "tie" and lra_reports.judge(-0.19, 0.1) == "tie"
    assert [lra_reports.judge(x, 0.0) for x in (1, 0, -1)] == ["holds", "tie", "fails"]
    with pytest.raises(ValueError, match="negative"):
        lra_reports.judge(1.0, -0.1)
    assert lra_reports.combine(["holds", "holds"]) == "holds"
    assert lra_reports.combine(["holds", "tie"]) == "tie"
    assert lra_reports.combine(["holds", "tie", "fails"]) == "fails"
    assert lra_reports.combine([]) is None and lra_reports.combine(["holds", None]) is None
    s = lra_reports.seed_stats([0.5, 0.7])
    assert s == {"n": 2, "mean": pytest.approx(0.6), "sd": pytest.approx(0.1 * 2 ** 0.5)}
    assert lra_reports.seed_stats([0.5])["sd"] is None
    hi, lo = {"n": 4, "mean": 0.9, "sd": 0.01}, {"n": 4, "mean": 0.8, "sd": 0.01}
    assert lra_reports.mean_part(hi, lo, "accuracy")["verdict"] == "holds"  # +14 SE
    assert lra_reports.mean_part(lo, hi, "accuracy")["verdict"] == "fails"  # reversed
    close = {"n": 4, "mean": 0.805, "sd": 0.01}
    assert lra_reports.mean_part(close, lo, "accuracy")["verdict"] == "tie"  # +0.7 SE
    assert lra_reports.mean_part({**hi, "sd": None}, lo, "accuracy")["verdict"] is None
    # spreads: ln(sd ratio), SE sqrt(1/6 + 1/6) with 4 seeds each
    wide = {"n": 4, "mean": 0.8, "sd": 0.1}
    part = lra_reports.spread_part(lo, wide, "spread")
    assert part["diff"] == pytest.approx(math.log(10)) and part["se"] == pytest.approx(
        (1 / 3) ** 0.5) and part["verdict"] == "holds"
    assert lra_reports.spread_part(wide, lo, "spread")["verdict"] == "fails"
    assert lra_reports.spread_part(lo, {**lo, "sd": 0.015}, "spread")["verdict"] == "tie"
    assert lra_reports.spread_part({**lo, "sd": 0.0}, lo, "spread")["verdict"] == "holds"
    # the paper's cells give max / min of 6 seeds: midrange and range / d_2(6)
    r = lra_reports.range_stats(0.9, 0.8)
    assert r == {"n": 6, "mean": pytest.approx(0.85), "sd": pytest.approx(0.1 / 2.534)}
    with pytest.raises(ValueError, match="n=20"):
        lra_reports.range_stats(0.9, 0.8, n=20)


def _curve(at: int, last: int = 10) -> dict:
    """Test loss 1.0 until epoch ``at``, 0.5 from it on: within 5% of its minimum from
    epoch ``at`` (of ``last``)."""
    return {"epoch": list(range(1, last + 1)), "test_loss": [1.0] * (at - 1) + [0.5] * (last - at + 1)}


def test_claims_three_and_four_by_the_claim_rule_on_constructed_ties_reversals_and_runs_that_did_not_converge():
    """Claims 3 and 4 go by the same rule as claims 1 and 2 (judge, combine), per
    spectrum; claim 4 is undetermined where a run had not converged by its end."""
    assert lra_reports.epochs_to_converge(_curve(4)) == 4
    assert lra_reports.epochs_to_converge({"epoch": [1, 2, 3], "test_loss": [1.0, 0.52, 0.5]}) == 2
    assert lra_reports.epochs_to_converge({"epoch": [], "test_loss": []}) is None
    late = lra_reports.LATE_EPOCHS
    assert lra_reports.converged(_curve(10 - late)) is True  # a plateau of LATE_EPOCHS epochs
    assert lra_reports.converged(_curve(10 - late + 1)) is False  # still falling at the end
    assert lra_reports.converged({"epoch": [1], "test_loss": [None]}) is None

    def cells(learned, frozen, lin=None):
        lin = lin or (learned, frozen)
        return {("inv", False): [_curve(a) for a in learned],
                ("inv", True): [_curve(a) for a in frozen],
                ("lin", False): [_curve(a) for a in lin[0]],
                ("lin", True): [_curve(a) for a in lin[1]]}

    def verdict(parts):
        return lra_reports.combine([p["verdict"] for p in parts])

    faster = lra_reports.claim4_parts(cells((5, 6, 5, 6), (2, 3, 2, 3)))
    assert [p["verdict"] for p in faster] == ["holds", "holds"] and verdict(faster) == "holds"
    assert faster[0]["diff"] == pytest.approx(3.0) and faster[0]["learned"] == pytest.approx(5.5)
    # half an epoch apart with seeds an epoch apart (our ListOps case): a tie, not a win
    tie = lra_reports.claim4_parts(cells((5, 6, 4, 5), (5, 4, 6, 4)))
    assert tie[0]["verdict"] == "tie" and abs(tie[0]["z"]) < 2 and verdict(tie) == "tie"
    reversed_ = lra_reports.claim4_parts(cells((2, 3, 2, 3), (5, 6, 5, 6)))
    assert verdict(reversed_) == "fails"
    # one run converging two epochs before its end: its part and the claim undetermined
    open_end = lra_reports.claim4_parts(cells((5, 6, 5, 8), (2, 3, 2, 3),
                                              lin=((5, 6, 5, 6), (2, 3, 2, 3))))
    assert open_end[0]["verdict"] == "undetermined" and open_end[0]["not_converged"] == 1
    assert open_end[0]["runs"] == 8 and open_end[1]["verdict"] == "holds"
    assert verdict(open_end) == "undetermined"
    # ... unless another part fails outright
    mixed = lra_reports.claim4_parts(cells((5, 6, 5, 8), (2, 3, 2, 3),
                                           lin=((2, 3, 2, 3), (5, 6, 5, 6))))
    assert verdict(mixed) == "fails"
    missing = cells((5, 6), (2, 3))
    missing[("lin", True)] = []
    assert lra_reports.claim4_parts(missing) == []

    # claim 3: each spectrum's mean growth below the limit, judged against its seeds' SE
    grow = lra_reports.claim3_parts({"inv": [1.0, 1.0, 1.01], "real": [1.86, 1.87, 1.86],
                                     "step": [1.02, 1.2], "lin": [1.0]})
    by = {p["init"]: p for p in grow}
    assert [p["init"] for p in grow] == ["inv", "lin", "real", "step"]  # CLAIM3_INITS order
    assert by["inv"]["verdict"] == "holds" and by["real"]["verdict"] == "fails"
    assert by["real"]["growth"] == pytest.approx(5.59 / 3)
    assert by["step"]["verdict"] == "tie"  # mean 1.11, seeds 0.18 apart
    assert by["lin"]["verdict"] is None  # one run: no standard error
    assert verdict(grow) is None
    del by["lin"]
    assert lra_reports.combine([p["verdict"] for p in by.values()]) == "fails"
    # two runs 0.02 apart are t = 9 below the limit, but with one degree of freedom that
    # is z 1.8, a tie; a third run makes it z 2.9
    assert verdict(lra_reports.claim3_parts({"inv": [1.0, 1.0], "real": [1.0, 1.02]})) == "tie"
    assert verdict(lra_reports.claim3_parts({"inv": [1.0, 1.0],
                                             "real": [1.0, 1.02, 1.01]})) == "holds"
    assert lra_reports.claim3_parts({}) == []


def test_the_claim_rule_calls_the_papers_own_rows_consistent_where_it_draws_the_claim():
    from sst_core.reports import get_report
    from sst_core.spec import paper_values

    t = lra_reports.paper_claims()
    by = {d["task"]: d for d in t.data}
    assert set(by) == set(paper_values.LRA_TASK_NAMES)
    for task in paper_values.LRA_CLAIM_TASKS["frozen_as_good"]:  # Retrieval, Path-X
        assert by[task]["cited"]["frozen_as_good"]
        assert by[task]["frozen_as_good"] in ("holds", "tie")
    assert by["Retrieval"]["frozen_as_good"] == "holds"  # 0.906 / 0.901 against 0.863 / 0.760
    # on ListOps the paper's own frozen S4D-Inv lies well below its learned one
    listops = by["ListOps"]["frozen_parts"][0]
    assert listops["diff"] == pytest.approx((0.585 + 0.570) / 2 - (0.594 + 0.589) / 2)
    assert by["ListOps"]["frozen_as_good"] == "fails"
    # claim 2 only where the ablation has the task
    assert by["ListOps"]["unstructured_worse"] is None
    assert by["ListOps"]["unstructured_parts"] == []
    assert all(by[t]["unstructured_worse"] is not None
               for t in ("Retrieval", "Image", "Pathfinder", "Path-X"))
    assert get_report("paper_claims") is lra_reports.paper_claims
    # the paper's spectra carry no mark of ours ("random (ours)") on its own rows
    assert not any("(ours)" in str(cell) for row in t.rows for cell in row)
    assert "random accuracy" in t.rows[2][3] or "random learned" in t.rows[2][3]


def test_a_probe_task_is_judged_once_the_main_tables_grid_on_it_is_stored(store):
    P = dataclasses.replace(PROFILES["smoke"], lra_tasks=("listops",),
                            lra_probe_tasks=("pathfinder",), lra_seeds=(0, 1, 2),
                            lra_ablation_seeds=(0, 1))
    grid = paper2.lra_pathfinder_grid(P)
    assert {(c.task, c.init, c.freeze_spectrum) for c in grid} == {
        ("pathfinder", i, f) for i in ("inv", "lin") for f in (False, True)}
    assert len(grid) == 12 and set(paper2.lra_probe_grid(P)) <= set(grid)
    assert paper2.lra_pathfinder_grid(dataclasses.replace(P, lra_probe_tasks=())) == []
    assert paper2.lra_pathfinder_grid(dataclasses.replace(P, lra_tasks=("pathfinder",))) == []
    # its ablation: every spectrum, learned and frozen, the ablation's seeds, at the same
    # size, sharing the S4D-Inv runs
    ablation = paper2.lra_pathfinder_ablation_grid(P)
    assert {(c.task, c.init, c.freeze_spectrum, c.seed) for c in ablation} == {
        ("pathfinder", i, f, s) for i in paper2.LRA_ABLATION_INITS for f in (False, True)
        for s in P.lra_ablation_seeds}
    assert {c for c in ablation if c.init == "inv"} == {
        c for c in grid if c.init == "inv" and c.seed in P.lra_ablation_seeds}
    assert paper2.lra_pathfinder_ablation_grid(
        dataclasses.replace(P, lra_tasks=("pathfinder",))) == []

    def fake(cfg):
        return {"test_accuracy": 0.8 + 0.01 * cfg.seed, "chance_accuracy": 0.5,
                "task": {"n_test": 400}, "curves": {"epoch": [1], "test_loss": [1.0]}}

    def claims():
        return next(x for x in lra_reports.lra_claims(P).data if x["task"] == "pathfinder")

    def rows(table):
        return [r[0] for r in table.rows]

    for cfg in grid[:-1]:
        cached_run(cfg, fake)
    d = claims()
    assert d["probe"] and d["frozen_as_good"] is None  # one run missing
    assert lra_reports.stored_tasks(grid) == ()
    assert rows(lra_reports.lra_main(P)) == ["listops (ListOps)"]  # not in the main table
    assert "other task" not in lra_reports.other_verdicts([d], P)
    assert lra_reports.other_verdicts([d], P) == (
        "Beyond those two tasks, Pathfinder runs as a probe only (learned S4D-Inv) and is "
        "not judged.")
    scale = lra_reports.scale_table(P)
    assert scale.columns[2] == "pathfinder [probe]"
    assert scale.rows[-1][2] == "2 (learned S4D-Inv only)"
    cached_run(grid[-1], fake)
    assert lra_reports.stored_tasks(grid) == ("pathfinder",)
    d = claims()
    assert not d["probe"] and d["frozen_as_good"] == "tie"  # equal means and spreads
    assert d["unstructured_worse"] is None  # no ablation runs of it
    assert lra_reports.other_verdicts([d], P) == (
        "Beyond those two tasks, on Pathfinder at its own size, claim 1 tie and claim 2 not "
        "judged (runs missing).")
    # the main table takes it, marked, with its runs; the ablation does not yet
    main = lra_reports.lra_main(P)
    assert rows(main) == ["listops (ListOps)", "pathfinder (Pathfinder) [own size]"]
    assert lra_reports.OWN_SIZE_TEXT in main.note
    assert {(x["task"], len(x["accuracies"])) for x in main.data} == {
        ("listops", 0), ("pathfinder", 3)}
    assert [c for c in lra_reports.lra_ablation(P).columns if "pathfinder" in c] == []
    scale = lra_reports.scale_table(P)
    assert scale.columns[2] == "pathfinder [own size]"
    assert scale.rows[-1][2] == "3 (main table)"
    # part of the ablation stored: not read, neither in its table nor in claims 2 and 3
    rest = [c for c in ablation if c.init != "inv"]
    for cfg in rest[:-1]:
        cached_run(cfg, fake)
    assert [c for c in lra_reports.lra_ablation(P).columns if "pathfinder" in c] == []
    d = claims()
    assert d["unstructured_worse"] is None
    assert {p["init"] for p in d["memory_parts"]} <= set(paper2.LRA_MAIN_INITS)
    # all of it stored: a column of the ablation, and claim 2 judged on it
    cached_run(rest[-1], fake)
    ablation_table = lra_reports.lra_ablation(P)
    assert [c for c in ablation_table.columns if "pathfinder" in c] == [
        "pathfinder [own size] (as Pathfinder): ours (paper)"]
    assert {x["task"] for x in ablation_table.data} == {"listops", "pathfinder"}
    d = claims()
    assert d["unstructured_worse"] == "tie"  # every spectrum's runs score alike
    assert {p["init"] for p in d["unstructured_parts"]} >= set(lra_reports.UNSTRUCTURED)
    assert lra_reports.scale_table(P).rows[-1][2] == "3 (main table), 2 (ablation)"


def test_the_chapter_items_are_the_tables_grids_and_the_numbers_its_prose_cites(store):
    """What the chapter glues: each table as its grid alone (no title, no note) and the
    numbers its prose cites, from the same functions the tables come from."""
    from sst_core.spec import paper_values

    P = dataclasses.replace(PROFILES["smoke"], lra_tasks=("listops",), lra_seeds=(0, 1),
                            lra_ablation_seeds=(0,), lra_data_probe_tasks=("listops",))
    growth = {"inv": [1.0, 1.2], "lin": [1.0, 1.0], "real": [1.8]}

    def fake(cfg):
        after = growth.get(cfg.init, [1.0])[cfg.seed]
        return {"test_accuracy": 0.5, "chance_accuracy": 0.5, "task": {"n_test": 100},
                "sup_mf_before": [[1.0]],
                "sup_mf_after": [[1.0 if cfg.freeze_spectrum else after]],
                "curves": {"epoch": [1], "train_loss": [1.0], "test_loss": [1.0]}}

    grid = list(dict.fromkeys(paper2.lra_main_grid(P) + paper2.lra_ablation_grid(P)))
    records = [cached_run(c, fake) for c in grid]
    (probe,) = paper2.lra_data_probe_grid(P)  # a learned S4D-Inv run on more data
    records.append(cached_run(probe, lambda c: {"test_accuracy": 0.6, "chance_accuracy": 0.5,
                                                "task": {"n_test": 100}, "sup_mf_before": [[1.0]],
                                                "sup_mf_after": [[5.0]],
                                                "curves": {"epoch": [1], "train_loss": [1.0],
                                                           "test_loss": [1.0]}}))
    items = lra_reports.chapter_items(P, records)
    tables = {"lra_main": lra_reports.lra_main(P), "lra_fit": lra_reports.lra_fit(P),
              "lra_ablation": lra_reports.lra_ablation(P),
              "lra_paper_claims": lra_reports.paper_claims(P),
              "lra_scale": lra_reports.scale_table(P),
              "lra_claims": lra_reports.lra_claims(P).transposed()}
    for name, table in tables.items():
        assert items[name].text == table.grid().text and table.title not in items[name].text
    assert items["lra_claim_counts"].text.startswith("| claim | holds | ties | fails |")
    # per spectrum, the median over the learned runs of the tables; not the data probe's 5.0
    assert items["lra_mf_gain_inv"] == pytest.approx(1.1)
    assert items["lra_mf_gain_lin"] == pytest.approx(1.0)
    assert items["lra_mf_gain_real"] == pytest.approx(1.8)
    assert items["lra_mf_gain_random"] == pytest.approx(1.0)
    assert math.isnan(lra_reports.chapter_items(P, [])["lra_mf_gain_inv"])
    assert items["lra_mf_limit"] == lra_reports.MF_GROWTH_LIMIT
    assert (items["lra_near_min"], items["lra_late_epochs"]) == (
        100 * lra_reports.LOSS_NEAR_MIN, lra_reports.LATE_EPOCHS)
    assert (items["lra_main_seeds"], items["lra_ablation_seeds"]) == (2, 1)
    # each claim's verdict per task: not judged here (every run at chance)
    assert {k: v for k, v in items.items() if k.startswith("lra_verdict_")} == {
        f"lra_verdict_{k}_listops": "not judged"
        for k in (*lra_reports.LRA_CLAIMS, "memory_below_inv")}
    # the sums claim 3's second reading cites are there whether or not it is judged
    assert {f"lra_c3p_{i}_listops" for i in ("inv", *lra_reports.UNSTRUCTURED)} <= set(items)
    assert {f"lra_c3p_{i}_init_listops" for i in lra_reports.UNSTRUCTURED} <= set(items)
    assert items["lra_d2"] == lra_reports.RANGE_TO_SD[paper_values.LRA_SEEDS]
    by = {d["task"]: d["frozen_as_good"] for d in lra_reports.paper_claims(P).data}
    assert (items["lra_paper_c1_retrieval"], items["lra_paper_c1_pathx"],
            items["lra_paper_c1_listops"]) == (by["Retrieval"], by["Path-X"], by["ListOps"])
    c2 = {d["task"]: d["unstructured_worse"] for d in lra_reports.paper_claims(P).data}
    assert items["lra_paper_c2_retrieval"] == c2["Retrieval"]
    # claim 3 per spectrum: nothing judged here, so no spectrum is named either way
    assert (items["lra_c3_kept_names"], items["lra_c3_extended_names"]) == ("none", "none")
    # the window check: its windows named, nothing compared, no growth to show
    windows = lra_reports.claim3_windows(P.lra_mf_T)
    assert items["lra_c3_win_delays"].endswith(str(windows[-1]))
    assert (items["lra_c3_win_parts"], items["lra_c3_win_changed"]) == (0, 0)
    assert items["lra_c3_win_real"] == "— (not judged)"


def test_claim3_names_the_spectra_training_extended_and_those_it_kept(store):
    """On a learned task, the spectra whose claim-3 part fails (memory grew beyond the
    limit by the claim rule) are named as extended, those whose part holds as kept, and a
    spectrum within the noise of the limit as neither."""
    from sst_core.spec.names import INIT_NAMES

    P = dataclasses.replace(PROFILES["smoke"], lra_tasks=("listops",), lra_seeds=(0, 1),
                            lra_ablation_seeds=(0, 1), lra_data_probe_tasks=())
    growth = {"real": [1.80, 1.81], "step": [1.0, 1.3]}  # step: mean 1.15, a tie with 1.1

    def fake(cfg):
        after = growth.get(cfg.init, [1.0, 1.0])[cfg.seed]
        return {"test_accuracy": 0.9, "chance_accuracy": 0.1, "task": {"n_test": 1000},
                "sup_mf_before": [[1.0]],
                "sup_mf_after": [[1.0 if cfg.freeze_spectrum else after]],
                "curves": {"epoch": [1], "train_loss": [1.0], "test_loss": [1.0]}}

    grid = list(dict.fromkeys(paper2.lra_main_grid(P) + paper2.lra_ablation_grid(P)))
    items = lra_reports.chapter_items(P, [cached_run(c, fake) for c in grid])
    assert items["lra_verdict_memory_not_extended_listops"] == "fails"
    assert items["lra_c3_extended_names"] == INIT_NAMES["real"]
    assert items["lra_c3_kept_names"] == ", ".join(
        INIT_NAMES[i] for i in lra_reports.CLAIM3_INITS if i not in ("real", "step"))


def test_the_figures_draw_the_tables_runs_not_the_probes(store):
    """Figure "test loss, every seed" draws the main table's runs; a data probe (the same
    cell on more examples) is no seed of it, nor a panel of the memory figure."""
    P = dataclasses.replace(PROFILES["smoke"], lra_tasks=("listops",), lra_seeds=(0, 1),
                            lra_data_probe_tasks=("listops",))
    fake = lambda c: {"test_accuracy": 0.5, "sup_mf_before": [[1.0]],  # noqa: E731
                      "sup_mf_after": [[1.0]], "curves": {"epoch": [1], "test_loss": [1.0]}}
    main = [cached_run(c, fake) for c in paper2.lra_main_grid(P)]
    (probe,) = paper2.lra_data_probe_grid(P)
    extra = cached_run(probe, fake)
    records = [extra] + main  # the probe first: the first seed of its cell
    drawn = lra_reports.test_loss_runs(P, records)
    assert [r["run_id"] for r in drawn] == [r["run_id"] for r in main]
    chosen = lra_reports.sup_mf_runs(records, "listops", P)
    assert extra["run_id"] not in {r["run_id"] for r in chosen}
    assert lra_reports.sup_mf_runs(records, "listops")[1]["run_id"] == extra["run_id"]


def test_a_claim_of_many_parts_fails_only_beyond_the_shared_threshold():
    """One part of k fails a claim only beyond z = fail_ses(k), the level of z = 2 shared
    among the parts (Bonferroni); holding still needs every part's z beyond 2."""
    from statistics import NormalDist

    assert lra_reports.fail_ses(1) == pytest.approx(lra_reports.CLAIM_SES)
    tail = 1 - NormalDist().cdf(2.0)
    for k in (2, 4, 7):  # k parts, each at tail / k on one side: the one-part level in all
        assert 1 - NormalDist().cdf(lra_reports.fail_ses(k)) == pytest.approx(tail / k)
    assert lra_reports.fail_ses(7) == pytest.approx(2.72, abs=0.005)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="parts"):
            lra_reports.fail_ses(bad)
    with pytest.raises(ValueError, match="fail_ses"):
        lra_reports.judge(-1.0, 0.1, fail_ses=1.5)

    def part(z):
        return {"part": "accuracy", "diff": z * 0.01, "se": 0.01, "z": z,
                "verdict": lra_reports.judge(z * 0.01, 0.01)}

    seven = [part(3.0)] * 6 + [part(-2.05)]  # alone, z -2.05 fails; one of seven, a tie
    assert part(-2.05)["verdict"] == "fails"
    judged = lra_reports.family(seven)
    assert [p["verdict"] for p in judged] == ["holds"] * 6 + ["tie"]
    assert all(p["fail_ses"] == pytest.approx(lra_reports.fail_ses(7)) for p in judged)
    assert lra_reports.combine([p["verdict"] for p in judged]) == "tie"
    reversed_ = lra_reports.family([part(3.0)] * 6 + [part(-2.8)])
    assert lra_reports.combine([p["verdict"] for p in reversed_]) == "fails"
    # holding is not shared: a part at z +2.1 holds in a claim of any size
    assert [p["verdict"] for p in lra_reports.family([part(2.1)] * 7)] == ["holds"] * 7
    # parts judged by sign, unjudged or undetermined keep their verdicts and do not count
    by_sign = {"part": "spread", "diff": None, "se": 0.0, "z": None, "verdict": "fails"}
    open_ = {"part": "epochs", "diff": None, "se": None, "z": None,
             "verdict": lra_reports.UNDETERMINED}
    mixed = lra_reports.family([by_sign, open_, part(-2.05)])
    assert [p["verdict"] for p in mixed] == ["fails", lra_reports.UNDETERMINED, "fails"]
    assert mixed[2]["fail_ses"] == pytest.approx(2.0)


def test_a_part_is_judged_on_the_normal_scale_of_its_exact_small_sample_test():
    """A few seeds carry less evidence than a normal reading of their t says: a part's z is
    its Welch t (means) or F (spreads) mapped through its exact distribution to the normal
    scale, and the rule's levels (2, Bonferroni) apply to that z."""
    from scipy import stats

    # the mapping: symmetric, the identity for many degrees of freedom, smaller for few
    assert lra_reports.t_scale(2.0, 1e7) == pytest.approx(2.0, abs=1e-4)
    assert lra_reports.t_scale(-2.5, 5) == pytest.approx(-lra_reports.t_scale(2.5, 5))
    assert lra_reports.t_scale(2.5, 5) == pytest.approx(
        stats.norm.isf(stats.t.sf(2.5, 5)))
    assert 1.5 < lra_reports.t_scale(2.5, 5) < 2.0
    assert lra_reports.t_scale(40.0, 3) == pytest.approx(stats.norm.isf(stats.t.sf(40, 3)))
    assert lra_reports.normal_scale(0.5, 0.5) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="tail"):
        lra_reports.normal_scale(1.5, -0.5)
    # Welch's degrees of freedom: equal cells give 2 (n - 1); a fixed limit gives n - 1
    a = {"n": 6, "mean": 0.8, "sd": 0.02}
    assert lra_reports.welch_df(a, {**a, "mean": 0.7}) == pytest.approx(10.0)
    assert lra_reports.welch_df({"n": 1, "mean": 1.1, "sd": 0.0}, a) == pytest.approx(5.0)
    with pytest.raises(ValueError, match="spread"):
        lra_reports.welch_df({"n": 1, "mean": 1.1, "sd": 0.0}, {"n": 1, "mean": 1, "sd": 0.0})

    # the same t = 2.5 holds with 30 seeds a side and ties with 3
    def cells(n):
        sd = 0.05
        se = (2 * sd ** 2 / n) ** 0.5
        return ({"n": n, "mean": 0.8 + 2.5 * se, "sd": sd}, {"n": n, "mean": 0.8, "sd": sd})

    many, few = (lra_reports.mean_part(*cells(n), "accuracy") for n in (30, 3))
    assert many["t"] == pytest.approx(2.5) and few["t"] == pytest.approx(2.5)
    assert many["verdict"] == "holds" and few["verdict"] == "tie"
    assert few["df"] == pytest.approx(4.0) and few["z"] == pytest.approx(
        lra_reports.t_scale(2.5, 4.0))
    # spreads by the exact F: six seeds a side, the frozen runs 3.6 times wider. A normal
    # reading of ln(ratio) gives -2.86; F(5, 5) gives a one-sided p of 0.0063, z -2.49:
    # alone it fails (beyond 2), as one of four parts it is a tie (2.53 needed)
    narrow, wide = {"n": 6, "mean": 0.8, "sd": 0.01}, {"n": 6, "mean": 0.8, "sd": 0.036}
    part = lra_reports.spread_part(wide, narrow, "spread")  # claimed: frozen (wide) no wider
    ratio = (0.01 / 0.036) ** 2
    assert part["z"] == pytest.approx(stats.norm.ppf(stats.f.cdf(ratio, 5, 5)))
    assert part["diff"] / part["se"] == pytest.approx(-2.86, abs=0.01)
    assert -2.53 < part["z"] < -2.0 and part["verdict"] == "fails"
    other = {"part": "accuracy", "diff": 0.0, "se": 0.01, "z": 0.0, "verdict": "tie"}
    judged = lra_reports.family([part, other, other, other])
    assert judged[0]["verdict"] == "tie" and judged[0]["fail_ses"] == pytest.approx(
        lra_reports.fail_ses(4))


def test_claim_three_as_the_papers_evidence_reads_compares_with_s4d_inv_at_initialisation():
    """Claim 3 read as the paper's evidence states it: each unstructured spectrum's memory
    after training (summed supremum memory function of its learned runs) below S4D-Inv's
    at initialisation, by the claim rule; frozen runs and runs without memory do not count."""
    def run(init, before, after, frozen=False, status="ok"):
        return {"status": status, "config": {"init": init, "freeze_spectrum": frozen},
                "metrics": {"sup_mf_before": [[before / 2], [before / 2]],
                            "sup_mf_after": [[after / 2], [after / 2]]}}

    inv = [run("inv", 100.0, 99.0) for _ in range(3)]
    learned = {"inv": inv,
               "random": [run("random", 50, a) for a in (60.0, 61.0, 62.0)],  # far below
               "real": [run("real", 50, a) for a in (98.0, 101.0, 104.0)],  # around it
               "step": [run("step", 150, a) for a in (150.0, 151.0, 152.0)]}  # above
    parts = {p["init"]: p for p in lra_reports.claim3_paper_parts(learned)}
    assert parts["random"]["inv_init"] == pytest.approx(100.0)  # S4D-Inv before training
    assert parts["random"]["after"] == pytest.approx(61.0)
    assert parts["random"]["before"] == pytest.approx(50.0)  # where it started
    assert parts["step"]["before"] == pytest.approx(150.0)  # above S4D-Inv from the start
    assert [parts[i]["verdict"] for i in ("random", "real", "step")] == [
        "holds", "tie", "fails"]
    assert lra_reports.combine([p["verdict"] for p in parts.values()]) == "fails"
    # frozen runs, failed runs and a spectrum without runs are left out
    learned["random"] += [run("random", 50, 500.0, frozen=True),
                          run("random", 50, 500.0, status="failed")]
    del learned["real"]
    again = {p["init"]: p for p in lra_reports.claim3_paper_parts(learned)}
    assert set(again) == {"random", "step"}
    assert again["random"]["after"] == pytest.approx(61.0)
    assert lra_reports.claim3_paper_parts({"random": learned["random"]}) == []
    with pytest.raises(ValueError, match="when"):
        lra_reports.mf_sums(inv, "during")


def test_memory_growth_over_the_first_delays_only():
    """mf_growth_ratios over a shorter window sums the first ``delays`` delays of every
    layer; a bad window is named."""
    def rec(before, after):
        return {"status": "ok", "config": {"freeze_spectrum": False},
                "metrics": {"sup_mf_before": before, "sup_mf_after": after}}

    records = [rec([[1.0, 0.5], [2.0, 1.0]], [[1.0, 4.0], [1.0, 8.0]])]
    assert lra_reports.mf_growth_ratios(records) == pytest.approx([14.0 / 4.5])
    assert lra_reports.mf_growth_ratios(records, 1) == pytest.approx([2.0 / 3.0])
    assert lra_reports.mf_growth_ratios(records, 5) == pytest.approx([14.0 / 4.5])
    for bad in (0, -1, 2.5, True, "1"):
        with pytest.raises(ValueError, match="delays"):
            lra_reports.mf_sums(records, "after", bad)


def test_claim3_window_check_counts_the_verdicts_the_edge_decides(store):
    """A spectrum whose memory grows only at the window's last delay is extended over the
    whole window and kept over every shorter one (all cut that delay): its verdict changes
    once per window; a spectrum whose growth is spread over the window keeps its verdict."""
    P = dataclasses.replace(PROFILES["smoke"], lra_tasks=("listops",), lra_seeds=(0, 1),
                            lra_ablation_seeds=(0, 1), lra_data_probe_tasks=(),
                            lra_mf_T=20)
    T = P.lra_mf_T
    windows = lra_reports.claim3_windows(T)
    assert windows == (5, 10, 19)
    assert lra_reports.claim3_windows(2) == (1,)  # at least one delay, shorter, once
    assert lra_reports.claim3_windows(1) == ()

    def after(init, seed):
        if init == "real":  # all of its growth at the last delay: x1.9 over the whole window
            return [1.0] * (T - 1) + [1.0 + 0.9 * T + 0.01 * seed]
        if init == "step":  # x1.9 spread evenly: the same at every window
            return [1.9 + 0.01 * seed] * T
        return [1.0] * T

    def fake(cfg):
        return {"test_accuracy": 0.9, "chance_accuracy": 0.1, "task": {"n_test": 1000},
                "sup_mf_before": [[1.0] * T],
                "sup_mf_after": [[1.0] * T if cfg.freeze_spectrum
                                 else after(cfg.init, cfg.seed)],
                "curves": {"epoch": [1], "train_loss": [1.0], "test_loss": [1.0]}}

    grid = list(dict.fromkeys(paper2.lra_main_grid(P) + paper2.lra_ablation_grid(P)))
    records = [cached_run(c, fake) for c in grid]
    table = lra_reports.claim3_window_table(P)
    assert [(d["task"], d["init"]) for d in table.data] == [
        ("listops", i) for i in lra_reports.CLAIM3_INITS]
    real = next(d for d in table.data if d["init"] == "real")["windows"]
    assert [c["delays"] for c in real] == [None, *windows]
    assert [c["verdict"] for c in real] == ["fails", "holds", "holds", "holds"]
    check = lra_reports.claim3_window_check(table, windows)
    n_inits = len(lra_reports.CLAIM3_INITS)
    assert check["windows"] == list(windows)
    assert check["parts"] == n_inits * len(windows)
    assert check["changed"] == len(windows)  # the real axis's, once per window
    assert check["growth"]["real"] == pytest.approx((1.0, 1.90025))  # (38 + 0.01 seed) / 20
    assert check["growth"]["step"] == pytest.approx((1.905, 1.905))
    items = lra_reports.chapter_items(P, records)
    assert items["lra_c3_win_delays"] == "5, 10 or 19"
    assert (items["lra_c3_win_parts"], items["lra_c3_win_changed"]) == (
        n_inits * len(windows), len(windows))
    assert items["lra_c3_win_real"] == "×1.00 to ×1.90"


def test_failing_spectra_names_the_parts_that_fail_on_judged_tasks_once():
    def part(init, verdict):
        return {"init": init, "verdict": verdict}

    def row(task, verdict, parts, probe=False):
        return {"task": task, "probe": probe, "memory_not_extended": verdict,
                "memory_parts": parts}

    from sst_core.spec.names import INIT_NAMES

    data = [row("listops", "fails", [part("inv", "holds"), part("real", "fails")]),
            row("digits", "fails", [part("step / real", "fails"), part("real", "fails")]),
            row("pathfinder", "fails", [part("lin", "fails")], probe=True),  # no judging
            row("image", None, [part("random", "fails")])]  # not judged there
    assert lra_reports.failing_spectra(data, "memory_not_extended") == [
        INIT_NAMES["real"], "step / real"]
    assert lra_reports.failing_spectra(data[:1] + [row("x", "holds", [])],
                                       "memory_not_extended") == [INIT_NAMES["real"]]
    assert lra_reports.failing_spectra([], "memory_not_extended") == []
    with pytest.raises(ValueError, match="claim"):
        lra_reports.failing_spectra(data, "memory")
