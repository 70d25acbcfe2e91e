"""Code versions verified to give the same results (sst_core.store.equivalence) and the
check that records them (sst_core.sweep.verify, ``sst verify-stale``)."""
import json

import pytest

from sst_core import cli
from sst_core.experiments import registry
from sst_core.experiments.paper1 import table2_grid
from sst_core.experiments.runs import needs_run, run
from sst_core.reports import ledger_text, stale_text
from sst_core.spec.configs import config_dict_hash
from sst_core.spec.profiles import get_profile
from sst_core.store import equivalence
from sst_core.store.records import load_record, record_path
from sst_core.sweep import status as sweep_status
from sst_core.sweep import verify


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    return tmp_path


# -- comparing metrics ----------------------------------------------------------------------

def test_metrics_agree_to_one_unit_in_the_sixth_decimal_and_timings_are_not_compared():
    old = {"acc": 0.992874, "curve": [0.1, 0.2], "steps": 10, "name": "x", "ok": True,
           "none": None, "nested": {"a": [1, 2.5]}, "train_time_s": 100.0,
           "resumed": None, "nan": float("nan")}
    new = dict(old, acc=0.992873, train_time_s=50.0, resumed={"from_epoch": 3},
               nested={"a": [1, 2.5000005]})
    problems, largest = equivalence.compare_metrics(old, new)
    assert problems == []
    assert largest == pytest.approx(1e-6)
    assert equivalence.compare_metrics(old, old) == ([], 0.0)


@pytest.mark.parametrize("change, where", [
    ({"acc": 0.992871}, "metrics.acc"),  # three units in the sixth decimal
    ({"steps": 11}, "metrics.steps"),  # integers exactly
    ({"ok": 1}, "metrics.ok"),  # a boolean is not a number
    ({"name": "y"}, "metrics.name"),
    ({"none": 0.0}, "metrics.none"),
    ({"curve": [0.1]}, "metrics.curve"),  # another length
    ({"curve": [0.1, 0.3]}, "metrics.curve[1]"),
    ({"nested": {"a": [2, 2.5]}}, "metrics.nested.a[0]"),
    ({"extra": None}, "metrics.extra"),  # a key only one side has, even null
    ({"nan": 1.0}, "metrics.nan"),
])
def test_each_kind_of_difference_is_named(change, where):
    old = {"acc": 0.992874, "curve": [0.1, 0.2], "steps": 10, "name": "x", "ok": True,
           "none": None, "nested": {"a": [1, 2.5]}, "nan": float("nan")}
    problems, _ = equivalence.compare_metrics(old, {**old, **change})
    assert len(problems) == 1 and problems[0].startswith(where), problems


# -- the ledger -------------------------------------------------------------------------------

def _entry(**kw):
    return {"experiment": "lra", "from": "aaaa", "to": "bbbb", "profile": "standard",
            "runs": [{"run_id": "r1"}], **kw}


def test_a_ledger_entry_makes_exactly_its_old_hash_current_for_its_experiment(root):
    rec = {"experiment": "lra", "code_hash": "aaaa", "profile": "standard"}
    assert not equivalence.same_code(rec, "bbbb")
    assert equivalence.same_code(rec, "aaaa") and equivalence.same_code(rec, None)
    path = equivalence.add_entry(_entry())
    assert path == root / "code_equivalence.json"
    assert equivalence.same_code(rec, "bbbb")
    assert equivalence.entry_for(rec, "bbbb")["runs"] == [{"run_id": "r1"}]
    assert not equivalence.same_code(rec, "cccc")  # the code changed again: no chaining
    assert not equivalence.same_code({**rec, "experiment": "tracking"}, "bbbb")
    assert not equivalence.same_code({"experiment": "lra", "profile": "standard"}, "bbbb")
    # an entry holds for its profile only: a check passed on quick records of that code
    # says nothing of its standard ones, nor the other way round
    assert not equivalence.same_code({**rec, "profile": "quick"}, "bbbb")
    equivalence.add_entry(_entry(profile="quick", runs=[{"run_id": "q1"}]))
    assert equivalence.entry_for({**rec, "profile": "quick"}, "bbbb")["runs"] == [{"run_id": "q1"}]
    assert equivalence.entry_for(rec, "bbbb")["runs"] == [{"run_id": "r1"}]
    # an entry for the same pair and profile replaces the earlier one
    equivalence.add_entry(_entry(runs=[{"run_id": "r2"}]))
    assert sorted(e["runs"][0]["run_id"] for e in equivalence.load_ledger()) == ["q1", "r2"]


def test_records_of_several_recomputed_versions_share_one_sentence(root, monkeypatch):
    """A chapter's records may rest on many ledger entries (the diagnostics: six versions):
    one sentence counts them and leaves the versions and runs to the ledger."""
    monkeypatch.setattr(registry, "code_hash", lambda experiment, config=None: "cccc")
    monkeypatch.setattr(registry, "is_stale_record", lambda record: False)
    for old, runs in (("aaaa", ["r1", "r2"]), ("bbbb", ["r3"])):
        equivalence.add_entry(_entry(**{"from": old, "to": "cccc", "tolerance": 1e-6,
                                        "runs": [{"run_id": r} for r in runs]}))
    records = [{"experiment": "lra", "profile": "standard", "config": {}, "code_hash": h}
               for h in ("aaaa", "aaaa", "bbbb", "cccc")]
    assert stale_text(records, "lra") == (
        "3 of these 4 records were made by 2 earlier versions of the code that give the same "
        "numbers as the current one: of each version, 1 to 2 of its runs were computed again "
        "under the current code (3 in all) and every metric agreed to within 1e-06 "
        "(`sst verify-stale`; `results/code_equivalence.json` names the versions and the "
        "runs).")
    # the records of one version: its sentence names it and the runs computed again
    assert stale_text(records[:2], "lra") == (
        "2 of these 2 records were made by an earlier version of the code (`aaaa`) that gives "
        "the same numbers as the current one (`cccc`): 2 of them (`r1`, `r2`) were computed "
        "again under the current code and every metric agreed to within 1e-06 "
        "(`sst verify-stale`, `results/code_equivalence.json`).")
    assert stale_text(records[3:], "lra") == ""  # made by the current code


def test_a_broken_ledger_or_entry_is_a_clear_error(root):
    with pytest.raises(ValueError, match="'to'"):
        equivalence.add_entry({"experiment": "lra", "from": "aaaa"})
    with pytest.raises(ValueError, match="aaaa"):
        equivalence.add_entry(_entry(to="aaaa"))
    (root / "code_equivalence.json").write_text("{not json")
    with pytest.raises(ValueError, match="code_equivalence.json: not JSON"):
        equivalence.load_ledger()
    (root / "code_equivalence.json").write_text(json.dumps([{"experiment": "lra"}]))
    with pytest.raises(ValueError, match="expected a list of entries"):
        equivalence.load_ledger()
    entry = _entry()
    del entry["profile"]
    (root / "code_equivalence.json").write_text(json.dumps([entry]))
    with pytest.raises(ValueError, match="'profile'"):
        equivalence.load_ledger()
    with pytest.raises(ValueError, match="'profile'"):
        equivalence.add_entry(entry)


# -- the check, end to end on smoke runs ---------------------------------------------------------

def _made_by_other_code(cfgs):
    """Records of ``cfgs`` computed now, then stamped with another code hash."""
    for cfg in cfgs:
        run(cfg)
        path = record_path(cfg)
        rec = json.loads(path.read_text())
        rec["code_hash"] = "0000000000000000"
        path.write_text(json.dumps(rec))


def test_verify_stale_records_an_equivalence_when_the_recomputed_runs_agree(root):
    cfgs = table2_grid(get_profile("smoke"))[:2]
    _made_by_other_code(cfgs)
    (before,) = sweep_status.status("smoke", ["table2"])
    assert before.stale == 2
    assert all(needs_run(c, retry_stale=True) for c in cfgs)
    stored = [record_path(c).read_text() for c in cfgs]
    files = {p for p in root.rglob("*") if p.is_file()}

    (group,) = verify.verify_stale("table2", "smoke", sample=1)
    # the recompute wrote its record and weights elsewhere: only the ledger is new here
    assert {p for p in root.rglob("*") if p.is_file()} - files == {
        root / "code_equivalence.json"}
    assert group.verified and group.made_by == "0000000000000000"
    assert len(group.checks) == 1 and group.run_ids == sorted(
        load_record(record_path(c))["run_id"] for c in cfgs)
    assert [record_path(c).read_text() for c in cfgs] == stored  # never touched
    (entry,) = equivalence.load_ledger()
    assert (entry["experiment"], entry["from"], entry["to"], entry["records"]) == (
        "tracking", "0000000000000000", group.current, 2)
    assert entry["runs"][0]["run_id"] == group.checks[0].run_id
    # the command as written runs the check again
    assert entry["command"] == ("sst verify-stale table2 --profile smoke --made-by "
                                "0000000000000000 --sample 1")
    # both records of that code now count as current, for status, sweeps and chapters
    (after,) = sweep_status.status("smoke", ["table2"])
    assert after.stale == 0
    assert not any(needs_run(c, retry_stale=True) for c in cfgs)
    records = [load_record(record_path(c)) for c in cfgs]
    assert not any(registry.is_stale_record(r) for r in records)
    text = stale_text(records, "table2")
    assert text.startswith("2 of these 2 records were made by an earlier version of the code "
                           "(`0000000000000000`) that gives the same numbers")
    assert f"`{group.checks[0].run_id}`" in text and "--retry-stale" not in text
    assert "| verified: recorded in" in verify.groups_markdown([group])
    assert ledger_text() == (
        "- `smoke`: 2 records made by an earlier version of the code they depend on count as "
        "current: 2 because runs of their code version were computed again under the current "
        "code and every metric agreed (`sst verify-stale`).")


def test_verify_stale_leaves_records_stale_when_a_recomputed_run_disagrees(root):
    cfgs = table2_grid(get_profile("smoke"))[:1]
    _made_by_other_code(cfgs)
    path = record_path(cfgs[0])
    rec = json.loads(path.read_text())
    rec["metrics"]["steps"] += 1  # what other code would have computed
    path.write_text(json.dumps(rec))
    (group,) = verify.verify_stale("table2", "smoke", sample=1)
    assert not group.verified
    assert any(p.startswith("metrics.steps:") for p in group.checks[0].problems)
    assert equivalence.load_ledger() == [] and ledger_text() == ""
    assert registry.is_stale_record(load_record(path))
    text = verify.groups_markdown([group])
    assert "stale: recompute them" in text and "metrics.steps" in text
    assert stale_text([load_record(path)], "table2").startswith("1 of these 1 records")


def test_verify_stale_recomputes_an_analysis_from_its_stored_tracker(root):
    """An analysis reads its trained tracker: the recompute gets copies of the tracker's
    record and weights in its scratch folder, and the stored ones stay as they are."""
    from sst_core.experiments.paper1 import diagnostics_grid
    from sst_core.store.records import artifact_path

    cfg = diagnostics_grid(get_profile("smoke"))[0]
    run(cfg.run)
    tracker = [record_path(cfg.run).read_bytes(), artifact_path(cfg.run, ".pt").read_bytes()]
    _made_by_other_code([cfg])
    files = {p for p in root.rglob("*") if p.is_file()}
    (group,) = verify.verify_stale("diagnostics", "smoke", sample=1)
    assert group.experiment == "tracking_diagnostics" and group.verified, group.checks[0].problems
    assert [record_path(cfg.run).read_bytes(), artifact_path(cfg.run, ".pt").read_bytes()] == tracker
    assert {p for p in root.rglob("*") if p.is_file()} - files == {root / "code_equivalence.json"}
    assert not registry.is_stale_record(load_record(record_path(cfg)))


def test_verify_stale_dry_run_writes_nothing(root):
    cfgs = table2_grid(get_profile("smoke"))[:1]
    _made_by_other_code(cfgs)
    (group,) = verify.verify_stale("table2", "smoke", sample=1, write=False)
    assert group.verified and group.ledger is None
    assert not (root / "code_equivalence.json").exists()
    assert "verified (not written)" in verify.groups_markdown([group])


def test_verify_stale_cli_and_its_errors(root, capsys):
    assert cli.main(["verify-stale", "table2", "--profile", "smoke"]) == 0
    assert "nothing to verify" in capsys.readouterr().out
    cfgs = table2_grid(get_profile("smoke"))[:1]
    _made_by_other_code(cfgs)
    assert cli.main(["verify-stale", "table2", "--profile", "smoke", "--made-by", "ffff"]) == 2
    err = capsys.readouterr().err
    assert "no stale record of table2 (smoke) holds code hash 'ffff'" in err
    assert "0000000000000000" in err
    assert cli.main(["verify-stale", "table2", "--profile", "smoke", "--run", "nope"]) == 2
    assert "run id(s) nope name no stale record" in capsys.readouterr().err
    rid = load_record(record_path(cfgs[0]))["run_id"]
    assert cli.main(["verify-stale", "table2", "--profile", "smoke", "--run", rid,
                     "--dry-run"]) == 0
    assert f"| tracking | 0000000000000000 |" in capsys.readouterr().out
    # a named run limits the check to its group: a second group is not sampled
    other = table2_grid(get_profile("smoke"))[1]
    run(other)
    rec = json.loads(record_path(other).read_text())
    rec["code_hash"] = "1111111111111111"
    record_path(other).write_text(json.dumps(rec))
    groups = verify.verify_stale("table2", "smoke", run_ids=[rid], write=False)
    assert [g.made_by for g in groups] == ["0000000000000000"]
    assert not (root / "code_equivalence.json").exists()
    with pytest.raises(ValueError, match="sample=0"):
        verify.verify_stale("table2", "smoke", sample=0)


def test_results_dir_at_sets_and_restores_the_results_folder(tmp_path, monkeypatch):
    from sst_core.store.records import results_dir, results_dir_at

    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path / "a"))
    with results_dir_at(tmp_path / "b") as where:
        assert where == results_dir() == tmp_path / "b"
    assert results_dir() == tmp_path / "a"
    monkeypatch.delenv("SST_RESULTS_DIR")
    with pytest.raises(RuntimeError):
        with results_dir_at(tmp_path / "c"):
            raise RuntimeError("inside")
    assert "SST_RESULTS_DIR" not in __import__("os").environ


# -- the same build: the block for CPUs without AVX-512 -------------------------------------------

def _restamp(cfg, **fields):
    """Change fields of ``cfg``'s stored record (``host=None``: drop the host)."""
    path = record_path(cfg)
    rec = json.loads(path.read_text())
    rec.update(fields)
    if rec.get("host") is None:
        rec.pop("host", None)
    path.write_text(json.dumps(rec))


def _host(*simd):
    return {"cpu": {"model": "test", "simd": list(simd)}, "cpus": 2}


def test_same_build_vouches_for_records_made_on_avx512_cpus_before_the_block(root, capsys):
    from sst_core.ops import native_selective

    grid = table2_grid(get_profile("smoke"))
    cfgs = [c for c in grid if c.model == "mamba"][:3]
    other = next(c for c in grid if c.model == "tanh_rnn")  # its code never reaches the block
    for cfg in (*cfgs, other):
        run(cfg)
    config = load_record(record_path(cfgs[0]))["config"]
    before = registry.code_hash("tracking", config, contents={
        native_selective.CODE_FILE_NODE:
        native_selective.avx512_source(native_selective.SOURCE.read_bytes())})
    assert before != registry.code_hash("tracking", config)
    _restamp(cfgs[0], code_hash=before, host=_host("avx512f", "avx2"))
    _restamp(cfgs[1], code_hash=before, host=None, created_utc="2026-01-01T00:00:00+00:00")
    _restamp(cfgs[2], code_hash=before, host=_host("avx2", "fma"),
             created_utc="2026-02-01T00:00:00+00:00")
    _restamp(other, host=_host("avx512f"))
    assert sweep_status.status("smoke", ["table2"])[0].stale == 3

    # one record from a CPU without AVX-512: the group stays stale
    (group,) = verify.verify_same_build("table2", "smoke")
    assert not group.verified and group.ledger is None
    assert group.before == group.made_by == before and group.via is None
    assert group.hosts == {"avx512f": 1, "unknown": 1}  # the first is older than the avx2 one
    (problem,) = group.problems
    assert "made on a CPU without AVX-512 (avx2, fma)" in problem
    assert equivalence.load_ledger() == []
    assert "stale: recompute them" in verify.same_build_markdown([group])

    # all on AVX-512 CPUs, but the record without a CPU is younger than an AVX2 record
    _restamp(cfgs[2], host=_host("avx512f"))
    _restamp(other, host=_host("avx2"), created_utc="2025-12-31T00:00:00+00:00")
    (group,) = verify.verify_same_build("table2", "smoke")
    assert [p.split(":")[0] for p in group.problems] == [load_record(record_path(cfgs[1]))["run_id"]]
    assert "not before the first record without AVX-512 (2025-12-31" in group.problems[0]

    # no record older than it from a CPU without AVX-512: the entry is written
    _restamp(other, created_utc="2026-03-01T00:00:00+00:00")
    assert cli.main(["verify-stale", "table2", "--profile", "smoke", "--same-build",
                     "--dry-run"]) == 0
    assert "same build (not written)" in capsys.readouterr().out
    assert not (root / "code_equivalence.json").exists()
    (group,) = verify.verify_same_build("table2", "smoke")
    assert group.verified and group.hosts == {"avx512f": 2, "unknown": 1}
    (entry,) = equivalence.load_ledger()
    assert (entry["from"], entry["to"], entry["evidence"], entry["records"], entry["runs"]) == (
        before, group.current, "same build", 3, [])
    assert entry["command"] == "sst verify-stale table2 --profile smoke --same-build"
    assert entry["unknown_host_before"] == "2026-03-01T00:00:00+00:00"
    assert sweep_status.status("smoke", ["table2"])[0].stale == 0
    records = [load_record(record_path(c)) for c in cfgs]
    text = stale_text(records, "table2")
    assert text.startswith("3 of these 3 records were made by an earlier version of the code "
                           "that differs from the current one only by the selective scan's "
                           "block for CPUs without AVX-512, on CPUs with AVX-512")
    assert text.endswith("; 1 of them are from before records named their CPU, and count as "
                         "made on one with AVX-512 because they are older than every record "
                         "from a CPU without it.")
    assert "--retry-stale" not in text
    assert ledger_text() == (
        "- `smoke`: 3 records made by an earlier version of the code they depend on count as "
        "current: 3 because the only change since is the selective scan's block for CPUs "
        "without AVX-512 and they were made on CPUs with AVX-512, where the library built is "
        "the same (`sst verify-stale --same-build`; 1 of them from before records named their "
        "CPU, older than every record from a CPU without AVX-512).")


def test_same_build_needs_the_block_to_be_the_only_change(root, capsys):
    from sst_core.ops import native_selective

    cfg = next(c for c in table2_grid(get_profile("smoke")) if c.model == "mamba")
    run(cfg)
    _restamp(cfg, code_hash="0000000000000000", host=_host("avx512f"))
    (group,) = verify.verify_same_build("table2", "smoke")
    assert not group.verified and "more than the block changed" in group.problems[0]
    assert cli.main(["verify-stale", "table2", "--profile", "smoke", "--same-build"]) == 1
    assert cli.main(["verify-stale", "table2", "--profile", "smoke", "--same-build",
                     "--made-by", "0000000000000000"]) == 2
    assert "takes no --run or --made-by" in capsys.readouterr().err
    # an earlier entry (by recomputation) from its hash to the code before the block: the
    # new entry goes straight from the record's hash to the current one
    before = registry.code_hash("tracking", load_record(record_path(cfg))["config"], contents={
        native_selective.CODE_FILE_NODE:
        native_selective.avx512_source(native_selective.SOURCE.read_bytes())})
    equivalence.add_entry({"experiment": "tracking", "from": "0000000000000000",
                           "to": before, "profile": "smoke", "runs": []})
    (group,) = verify.verify_same_build("table2", "smoke")
    assert group.verified and group.via["to"] == before
    assert equivalence.load_ledger()[-1]["from"] == "0000000000000000"
    assert not registry.is_stale_record(load_record(record_path(cfg)))


def test_same_build_checks_every_record_of_the_hash_not_only_the_sweeps(root):
    """The entry makes every record of its hash current, so a record of that hash outside
    the sweep's grid, made on a CPU without AVX-512, keeps the whole group stale."""
    from sst_core.ops import native_selective

    cfg = next(c for c in table2_grid(get_profile("smoke")) if c.model == "mamba")
    run(cfg)
    config = load_record(record_path(cfg))["config"]
    before = registry.code_hash("tracking", config, contents={
        native_selective.CODE_FILE_NODE:
        native_selective.avx512_source(native_selective.SOURCE.read_bytes())})
    _restamp(cfg, code_hash=before, host=_host("avx512f"))
    rec = json.loads(record_path(cfg).read_text())
    own = rec["run_id"]
    rec["config"]["seed"] = rec["seed"] = 12345  # in no grid of this profile
    other = config_dict_hash(rec["config"])
    rec.update(run_id=other, host=_host("avx2"))
    (record_path(cfg).parent / (other + ".json")).write_text(json.dumps(rec))
    (group,) = verify.verify_same_build("table2", "smoke")
    assert not group.verified and group.run_ids == sorted([own, other])
    assert any(p.startswith(other + ": made on a CPU without AVX-512") for p in group.problems)
    assert equivalence.load_ledger() == []
