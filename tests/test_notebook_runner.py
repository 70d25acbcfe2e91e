"""Where the notebook runner tells the kernels to keep their records."""
from pathlib import Path

import pytest

from sst_core.book import runner as notebooks
from sst_core.store.records import project_root


@pytest.mark.parametrize("env,explicit,expected", [
    (None, None, "ROOT/results"),
    ("/somewhere/else", None, "/somewhere/else"),
    ("/somewhere/else", "/explicit", "/explicit"),
])
def test_results_folder_passed_to_the_kernel(monkeypatch, tmp_path, env, explicit, expected):
    import shutil

    import papermill

    root = tmp_path  # a copy of the chapter: the runner writes its .ipynb beside it
    (root / "notebooks").mkdir()
    shutil.copy(project_root(Path(__file__).parent) / "notebooks" / "p1_groups.py",
                root / "notebooks")
    seen = {}

    def fake_execute(src, out, **kw):
        import os

        seen["dir"] = os.environ["SST_RESULTS_DIR"]

    monkeypatch.setattr(papermill, "execute_notebook", fake_execute)
    monkeypatch.setattr(notebooks, "_tag_injected", lambda out: None)
    if env is None:
        monkeypatch.delenv("SST_RESULTS_DIR", raising=False)
    else:
        monkeypatch.setenv("SST_RESULTS_DIR", env)
    run = notebooks.run_notebook("p1_groups", "smoke", root,
                                 results=Path(explicit) if explicit else None)
    assert run.ok
    assert seen["dir"] == expected.replace("ROOT", str(root))
    import os

    assert os.environ.get("SST_RESULTS_DIR") == env  # restored afterwards


@pytest.fixture
def fake_build(tmp_path, monkeypatch):
    """A project with two sources whose build executes nothing: ``build(profile, fail=False)``
    runs ``build_book`` with notebooks that "ran" and a site that is one index page."""
    root = tmp_path / "project"
    (root / "notebooks").mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\nroot: intro\n")
    (root / "notebooks" / "ch.py").write_text("# %%\n1 + 1\n")
    (root / "sst_core").mkdir()
    (root / "sst_core" / "mod.py").write_text("x = 1\n")
    runs = [notebooks.NotebookRun("ch", "smoke", 1.5, True)]

    def site(root, echo=True):
        (root / "_build" / "html").mkdir(parents=True, exist_ok=True)
        (root / "_build" / "html" / "index.html").write_text("<html></html>")

    monkeypatch.setattr(notebooks, "ensure_vendor", lambda *a, **k: None)
    monkeypatch.setattr(notebooks, "toc_notebooks", lambda root: ["ch"])
    monkeypatch.setattr(notebooks, "run_notebooks", lambda root, profile, **k: [
        notebooks.NotebookRun("ch", profile, 1.5, True)])
    monkeypatch.setattr(notebooks, "jupyter_book_build", site)

    def build(profile="smoke", fail=False):
        if fail:
            monkeypatch.setattr(notebooks, "run_notebooks", lambda root, profile, **k: [
                notebooks.NotebookRun("ch", profile, 0.1, False, "ValueError: boom")])
        return notebooks.build_book(root, profile, results=tmp_path / "results", echo=False)

    return root, runs, build


def test_a_build_leaves_a_manifest_that_says_whether_its_site_is_current(fake_build):
    root, runs, build = fake_build
    assert notebooks.current_build(root, "smoke")[0] is None  # nothing built yet
    assert "does not exist" in notebooks.current_build(root, "smoke")[1]
    assert build() == runs
    found, why = notebooks.current_build(root, "smoke")
    assert found == runs and "built with profile smoke" in why
    # another profile, or a site deleted since, is not that build
    found, why = notebooks.current_build(root, "quick")
    assert found is None and "'smoke', not 'quick'" in why
    (root / "_build" / "html" / "index.html").unlink()
    assert "index.html is missing" in notebooks.current_build(root, "smoke")[1]


@pytest.mark.parametrize("edit", ["notebooks/ch.py", "sst_core/mod.py", "_toc.yml",
                                  "notebooks/new.py"])
def test_a_changed_source_makes_the_site_not_current(fake_build, edit):
    root, runs, build = fake_build
    build()
    path = root / edit
    path.write_text((path.read_text() if path.exists() else "") + "# edited\n")
    found, why = notebooks.current_build(root, "smoke")
    assert found is None and "changed since its site was built" in why


def test_what_a_build_writes_itself_does_not_change_its_inputs(fake_build):
    root, runs, build = fake_build
    build()
    (root / "notebooks" / "ch.ipynb").write_text("{}")  # the executed notebook
    (root / "sst_core" / "__pycache__").mkdir()
    (root / "sst_core" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0")
    assert notebooks.current_build(root, "smoke")[0] == runs


def test_a_failed_build_or_a_broken_manifest_is_not_a_current_site(fake_build):
    root, runs, build = fake_build
    build()
    with pytest.raises(notebooks.BookError, match="boom"):
        build(fail=True)
    assert "does not exist" in notebooks.current_build(root, "smoke")[1]
    (root / notebooks.BUILD_MANIFEST).write_text('{"profile": "smoke"}')
    found, why = notebooks.current_build(root, "smoke")
    assert found is None and "not a build manifest" in why and "KeyError" in why


def test_the_kernel_runs_over_ipc_and_warns_nothing_on_the_terminal(tmp_path, capfd):
    """A kernel over TCP without CurveZMQ keys prints a plain-text-traffic warning per
    chapter into the build's progress lines; the runner starts it on IPC sockets."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("profile = 'smoke'", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("print(6 * 7, profile)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    path = tmp_path / "ch.ipynb"
    nbformat.write(nb, path)
    assert notebooks._execute(path, {"profile": "quick"}, "smoke") is None
    out = nbformat.read(path, 4).cells[-1].outputs
    assert out[0]["text"] == "42 quick\n"
    assert "without encryption" not in capfd.readouterr().err
    assert notebooks.KERNEL_CONFIG["KernelManager"]["transport"] == "ipc"
