"""Record versions and the version lock (sst_core.experiments.versions)."""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from sst_core.experiments import registry, runs, versions
from sst_core.spec.configs import config_hash
from sst_core.store.records import load_record, record_path

ROOT = Path(__file__).resolve().parents[2]


def test_the_code_matches_the_version_lock():
    """The tripwire: a change to the code an experiment's runs reach fails here until its
    author decides (bump the version, or `sst lock` it; the message says how)."""
    mismatches = versions.check()
    assert not mismatches, "\n\n".join(m.message() for m in mismatches)


def test_a_changed_fingerprint_fails_with_both_choices(tmp_path):
    entries = versions.read_lock()
    entries["lra"] = {**entries["lra"], "fingerprints": {registry.ALL: "0" * 16}}
    path = versions.write_lock(entries, tmp_path / "versions.lock")
    (m,) = versions.check(["lra", "memory_curve"], path)
    text = m.message()
    assert m.experiment == "lra" and m.changed == [registry.ALL]
    assert "lra: the code its runs reach changed (*)" in text
    assert "raise `version` of lra" in text and "run `sst lock lra`" in text
    assert "1.5e-06" in text
    # one line of the lock per fingerprint: a reviewer sees a one-line diff
    now = versions.LOCK_PATH.read_text().splitlines()
    assert len([a for a, b in zip(now, path.read_text().splitlines()) if a != b]) == 1


def test_a_version_or_an_experiment_missing_from_the_lock_is_named(tmp_path):
    entries = versions.read_lock()
    entries["lra"] = {**entries["lra"], "version": 2}
    del entries["memory_curve"]
    path = versions.write_lock(entries, tmp_path / "versions.lock")
    found = {m.experiment: m.message() for m in versions.check(["lra", "memory_curve"], path)}
    assert "version 1 in the registry, 2 in the lock" in found["lra"]
    assert "memory_curve: not in the version lock" in found["memory_curve"]


@pytest.mark.parametrize("text,match", [
    ("[]", "must be a JSON object"), ("{", "unreadable"),
    ('{"lra": {"version": 0, "fingerprints": {}}}', "entry 'lra' must be"),
    ('{"lra": {"version": 1, "fingerprints": {"*": 3}}}', "entry 'lra' must be"),
])
def test_a_malformed_lock_is_refused_naming_the_file(tmp_path, text, match):
    path = tmp_path / "versions.lock"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        versions.read_lock(path)


# -- sst lock on a tiny constructed experiment --------------------------------------------------

OFFSET = [0.0]  # what the toy run adds: "a change to the code"


@dataclass(frozen=True)
class ToyConfig:
    x: int
    seed: int = 0
    profile: str = "smoke"
    experiment: str = "toy"


def toy_run(cfg: ToyConfig) -> dict:
    return {"y": cfg.x / 3 + OFFSET[0], "n": cfg.x, "hist": [cfg.x, 0.5], "took_s": 9.0}


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The experiment ``toy`` (three stored runs, its lock at fingerprint "old") and a
    function that sets its code's fingerprint."""
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path / "results"))
    OFFSET[0] = 0.0
    entry = registry.Experiment("toy", f"{__name__}:ToyConfig", f"{__name__}:toy_run", ())
    monkeypatch.setitem(registry.EXPERIMENTS, "toy", entry)
    prints = {registry.ALL: "old"}
    monkeypatch.setattr(versions, "fingerprints", lambda name: dict(prints))
    lock_path = tmp_path / "versions.lock"
    versions.write_lock({"toy": {"version": 1, "fingerprints": dict(prints)}}, lock_path)
    records = [runs.run(ToyConfig(x)) for x in (1, 2, 3)]
    yield lock_path, prints, records
    OFFSET[0] = 0.0


def toy_recompute(code, record, stored):
    """The locked code adds nothing; the current one adds OFFSET (in a scratch folder)."""
    import tempfile

    before = OFFSET[0]
    OFFSET[0] = before if code == "current" else 0.0
    try:
        with tempfile.TemporaryDirectory() as scratch:
            return runs.run(registry.config_from_dict(record["config"]), root=Path(scratch))
    finally:
        OFFSET[0] = before


def test_lock_accepts_a_change_that_leaves_every_metric_as_it_was(toy):
    lock_path, prints, records = toy
    assert versions.lock("toy", path=lock_path).action == "unchanged"
    prints[registry.ALL] = "new"
    assert [m.changed for m in versions.check(["toy"], lock_path)] == [[registry.ALL]]
    seen = []
    result = versions.lock("toy", path=lock_path, report=seen.append,
                           recompute_with=toy_recompute)
    assert result.action == "locked" and not result.differences
    assert len(result.checked) == 1 and result.checked[0][0] == "smoke"
    assert result.reproduced == 1  # the locked code gives the stored record here
    assert any("recomputing" in s for s in seen)
    assert versions.read_lock(lock_path)["toy"]["fingerprints"] == {registry.ALL: "new"}
    assert versions.check(["toy"], lock_path) == []
    # the stored records are untouched (the recompute ran in a scratch folder)
    assert [load_record(record_path(ToyConfig(x))) for x in (1, 2, 3)] == records


def test_lock_refuses_a_change_that_moves_a_metric_and_prints_the_differences(toy):
    lock_path, prints, records = toy
    prints[registry.ALL] = "new"
    OFFSET[0] = 1e-3
    result = versions.lock("toy", path=lock_path, sample=2, recompute_with=toy_recompute)
    assert result.action == "refused"
    ids = {d.run_id for d in result.differences}
    assert len(ids) == 2 and ids <= {r["run_id"] for r in records}
    assert {d.metric for d in result.differences} == {"y"}
    table = versions.differences_markdown(result)
    assert "| smoke | " in table and "| y | 0.333333" in table
    assert versions.read_lock(lock_path)["toy"]["fingerprints"] == {registry.ALL: "old"}
    OFFSET[0] = 1e-7  # within the rounding of the sixth decimal: accepted
    assert versions.lock("toy", path=lock_path, recompute_with=toy_recompute).action == "locked"


def test_a_version_bump_is_written_without_recomputing_and_makes_records_stale(toy, monkeypatch):
    lock_path, prints, records = toy
    prints[registry.ALL] = "new"
    OFFSET[0] = 1.0  # what the runs compute changed: the author bumps the version
    bumped = dataclasses.replace(registry.EXPERIMENTS["toy"], version=2)
    monkeypatch.setitem(registry.EXPERIMENTS, "toy", bumped)
    result = versions.lock("toy", path=lock_path)
    assert result.action == "version" and result.checked == []
    assert versions.read_lock(lock_path)["toy"] == {"version": 2,
                                                    "fingerprints": {registry.ALL: "new"}}
    assert all(registry.is_stale_record(r) for r in records)
    fresh = runs.run(ToyConfig(1), retry_stale=True)
    assert fresh["version"] == 2 and fresh["metrics"]["y"] == pytest.approx(1 / 3 + 1)
    down = dataclasses.replace(bumped, version=1)
    monkeypatch.setitem(registry.EXPERIMENTS, "toy", down)
    with pytest.raises(ValueError, match="versions only go up"):
        versions.lock("toy", path=lock_path)


def test_lock_samples_only_current_ok_records_of_the_changed_models(tmp_path, monkeypatch):
    """The cheapest ok current records of each changed model, and each profile's own
    cheapest; failed, stale and other models' records are not sampled."""
    from sst_core.spec.configs import config_dict_hash

    names = {}  # run id -> the letter the test calls it

    def put(profile, name, model, wall, status="ok", version=1):
        config = {"experiment": "tracking", "profile": profile, "model": model, "name": name}
        run_id = config_dict_hash(config)
        names[run_id] = name
        rec = {"schema": 1, "run_id": run_id, "experiment": "tracking", "profile": profile,
               "config": config, "status": status,
               "reason": None if status == "ok" else "RunFailed: constructed",
               "metrics": {"m_p": 60} if status == "ok" else {}, "seed": 0,
               "git_commit": None, "versions": {}, "device": "cpu",
               "wall_time_s": wall, "version": version}
        path = tmp_path / profile / "tracking" / f"{run_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rec))

    put("quick", "a", "mamba", 5.0)
    put("quick", "b", "mamba", 1.0)
    put("quick", "c", "mamba", 0.5, status="failed")
    put("quick", "d", "mamba", 0.1, version=0)
    put("quick", "e", "tanh_rnn", 0.1)
    put("standard", "f", "mamba", 9.0)
    got = [(p, names[r["run_id"]]) for p, r in versions.sample_records(
        "tracking", {"mamba"}, 1, tmp_path)]
    assert got == [("quick", "b"), ("standard", "f")]
    got = [(p, names[r["run_id"]]) for p, r in versions.sample_records(
        "tracking", {"mamba", "tanh_rnn"}, 2, tmp_path)]
    assert got == [("quick", "e"), ("quick", "b"), ("quick", "a"), ("standard", "f")]


def test_lock_checks_its_arguments():
    with pytest.raises(ValueError, match="unknown experiment 'nope'"):
        versions.lock("nope")
    with pytest.raises(ValueError, match="sample=0"):
        versions.lock("lra", sample=0)


# -- comparing metrics ---------------------------------------------------------------------------

def test_compare_metrics_to_the_rounding_of_the_sixth_decimal():
    a = {"m": 0.992874, "n": 3, "ok": True, "s": "x", "l": [1.0, None, math.nan],
         "train_time_s": 1.0, "stacked": 12, "resumed": {"from_epoch": 1}, "d": {"k": 0.5}}
    same = {**a, "m": 0.992873, "train_time_s": 7.0, "stacked": 1, "resumed": None,
            "l": [1.0, None, math.nan]}
    diffs, largest = versions.compare_metrics(a, same)
    assert diffs == [] and largest == pytest.approx(1e-6)
    assert versions.compare_metrics(a, {**same, "weights_sha256": "ab"})[0] == []  # new metric
    cases = [({**a, "m": 0.99287}, "m"), ({**a, "n": 4}, "n"), ({**a, "ok": 1}, "ok"),
             ({**a, "l": [1.0, None]}, "l"), ({**a, "d": {"k": 0.6}}, "d.k"),
             ({**a, "l": [1.0, 0.0, math.nan]}, "l[1]"),
             ({k: v for k, v in a.items() if k != "s"}, "s"),
             ({**a, "m": math.inf}, "m")]
    for other, where in cases:
        diffs, _ = versions.compare_metrics(a, other)
        assert [d[0] for d in diffs] == [where], where


# -- config round trip and the migration ---------------------------------------------------------

def test_every_experiments_config_comes_back_from_its_record():
    for experiment in registry.EXPERIMENTS:
        for profile in ("standard", "quick"):
            files = sorted((ROOT / "results" / profile / experiment).glob("*.json"))[:2]
            for file in files:
                rec = load_record(file)
                assert config_hash(registry.config_from_dict(rec["config"])) == rec["run_id"]


def _migration():
    path = ROOT / "scripts" / "migrate_record_versions.py"
    spec = importlib.util.spec_from_file_location("migrate_record_versions", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_migration_versions_a_copy_of_committed_records_and_changes_nothing_else(tmp_path):
    """Three committed records without their version: one whose code hash is the current
    one, one made current by a ledger entry, one by neither; and one already versioned."""
    migrate = _migration()
    src = sorted((ROOT / "results" / "standard" / "tracking").glob("*.json"))[:4]
    copies = []
    for file in src:
        dst = tmp_path / "standard" / "tracking" / file.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(file, dst)
        copies.append(dst)
    before = []
    for i, dst in enumerate(copies):
        rec = json.loads(dst.read_text())
        if i < 3:
            rec.pop("version", None)
            rec["code_hash"] = ["cur", "old", "gone"][i]
            rec["config"]["model"] = "mamba"
        dst.write_text(json.dumps(rec))
        before.append(rec)
    hashes = {"tracking": {"mamba": "cur"}}
    ledger = [{"experiment": "tracking", "from": "old", "to": "cur", "profile": "standard"},
              {"experiment": "tracking", "from": "gone", "to": "cur", "profile": "quick"}]
    counts = migrate.migrate(tmp_path, hashes, ledger)
    assert counts["current"] == 2 and counts["stale"] == 1
    assert counts["already versioned"] == 1
    after = [json.loads(p.read_text()) for p in copies]
    assert [a.get("version") for a in after[:3]] == [1, 1, 0]
    for b, a in zip(before, after):
        assert {k: v for k, v in a.items() if k != "version"} == \
            {k: v for k, v in b.items() if k != "version"}
    assert migrate.migrate(tmp_path, hashes, ledger)["already versioned"] == 4  # idempotent


def test_every_committed_record_holds_a_version():
    for profile in ("paper", "standard", "quick"):
        for file in (ROOT / "results" / profile).rglob("*.json"):
            assert isinstance(json.loads(file.read_text()).get("version"), int), file


def test_a_record_is_recomputed_in_a_fresh_process_with_a_checkouts_code():
    """What ``sst lock`` runs twice (the locked code and the current one): here with this
    checkout, on a committed record that takes a fraction of a second."""
    file = sorted((ROOT / "results" / "quick" / "memory_curve").glob("*.json"))[0]
    record = load_record(file)
    new = versions.recompute_in(ROOT, record, ROOT / "results")
    assert new["run_id"] == record["run_id"] and new["version"] == record["version"]
    assert versions.compare_records(record, new)[0] == []


def test_the_locked_code_is_the_commit_that_last_wrote_the_lock(tmp_path):
    with versions.locked_checkout("lra") as src:
        assert (src / "sst_core" / "experiments" / "registry.py").is_file()
        assert not (src / "results").exists()
    assert not src.exists()
    entries = versions.read_lock()
    entries["lra"] = {**entries["lra"], "fingerprints": {registry.ALL: "0" * 16}}
    moved = versions.LOCK_PATH.with_name("versions.lock.test")
    try:
        versions.write_lock(entries, moved)
        with pytest.raises(ValueError, match="is not committed"):
            with versions.locked_checkout("lra", moved):
                pass
    finally:
        moved.unlink(missing_ok=True)
