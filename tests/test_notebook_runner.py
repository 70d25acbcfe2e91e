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
