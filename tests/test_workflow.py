"""The GPU workflow that publishes the paper-profile book: it parses, and every command it
runs exists (a Makefile target, an `sst` subcommand with its options, or a script here)."""
import re
import shlex
from pathlib import Path

import yaml

from sst_core import cli

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "paper-book.yml"


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def _commands() -> list[list[str]]:
    out = []
    for job in _workflow()["jobs"].values():
        for step in job["steps"]:
            for line in step.get("run", "").splitlines():
                line = line.strip()
                if line and not line.startswith("#"):
                    out.append(shlex.split(line))
    return out


def _make_targets() -> set[str]:
    return set(re.findall(r"^([A-Za-z_][\w-]*):", (ROOT / "Makefile").read_text(), re.M))


def test_workflow_parses_and_runs_on_the_gpu_runner():
    wf = _workflow()
    assert wf["name"] == "paper-book"
    build = wf["jobs"]["build"]
    assert build["runs-on"] == ["self-hosted", "gpu"]
    uses = [s.get("uses", "") for j in wf["jobs"].values() for s in j["steps"]]
    assert any(u.startswith("actions/upload-pages-artifact") for u in uses)
    assert any(u.startswith("actions/deploy-pages") for u in uses)


def test_every_command_exists():
    parser = cli._parser()
    targets = _make_targets()
    seen = set()
    for argv in _commands():
        prog = argv[0]
        if prog == "make":
            goals = [a for a in argv[1:] if "=" not in a]
            assert goals and set(goals) <= targets, argv
            seen.add("make")
        elif prog.endswith("/sst"):
            parser.parse_args(argv[1:])  # exits (fails the test) on an unknown command/option
            seen.add("sst")
        elif prog.startswith("scripts/"):
            assert (ROOT / prog).is_file() and (ROOT / prog).stat().st_mode & 0o111, argv
            seen.add("script")
        else:
            assert prog == "git", f"unexpected command {argv}"
    assert seen == {"make", "sst", "script"}


def test_the_sweep_covers_every_experiment_under_the_paper_profile():
    sweeps = [a for a in _commands() if a[0].endswith("/sst") and a[1] == "sweep"]
    assert any(a[2] == "all" and "paper" in a for a in sweeps)
    books = [a for a in _commands() if a[:2] == ["make", "book"]]
    assert books == [["make", "book", "PROFILE=paper"]]
