import json
import subprocess
import sys

from sst_core import cli
from sst_core.experiments import paper1
from sst_core.experiments import runs as experiments_runs
from sst_core.spec import profiles


def test_report_json_reads_stored_records(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    for c in paper1.order_sensitivity_grid(profiles.PROFILES["smoke"]):
        experiments_runs.run(c)
    assert cli.main(["report", "groups", "--profile", "smoke", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["rows"]) == 6 and "words of length" in out["note"]


def test_report_list_and_unknown(capsys):
    assert cli.main(["report", "--list"]) == 0
    assert "groups" in capsys.readouterr().out
    assert cli.main(["report", "nope"]) == 2
    assert "'nope'" in capsys.readouterr().err


def test_unknown_profile_is_rejected_by_the_parser(capsys):
    import pytest

    with pytest.raises(SystemExit):
        cli.main(["book", "--profile", "fast"])
    assert "'fast'" in capsys.readouterr().err


def test_unknown_notebook_fails_before_running(capsys):
    assert cli.main(["notebooks", "run", "--profile", "smoke", "--only", "p9_nope"]) == 2
    assert "p9_nope" in capsys.readouterr().err


def test_python_dash_m_entry_point():
    done = subprocess.run([sys.executable, "-m", "sst_core", "--help"], capture_output=True, text=True)
    assert done.returncode == 0
    for word in ("notebooks", "book", "report"):
        assert word in done.stdout


def test_every_registered_report_builds_from_an_empty_store(tmp_path, monkeypatch, capsys):
    """Each report runs without training: missing records show up as missing, not errors."""
    from sst_core.reports import REPORTS

    monkeypatch.setenv("SST_RESULTS_DIR", str(tmp_path))
    for name in REPORTS:
        assert cli.main(["report", name, "--profile", "smoke", "--format", "json"]) == 0, name
        out = json.loads(capsys.readouterr().out)
        assert out["title"] and out["columns"], name


def test_the_command_turns_on_huge_pages_before_torch_loads():
    """``sst`` sets THP_MEM_ALLOC_ENABLE=1 (torch reads it once) unless the user set it."""
    import os

    code = ("import os, sys; from sst_core import cli; cli.main(['report', '--list']); "
            "print('THP=' + os.environ.get('THP_MEM_ALLOC_ENABLE', 'unset'))")
    env = {k: v for k, v in os.environ.items() if k != "THP_MEM_ALLOC_ENABLE"}
    for given, want in ((None, "THP=1"), ("0", "THP=0")):
        if given is not None:
            env["THP_MEM_ALLOC_ENABLE"] = given
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=env, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().splitlines()[-1] == want
