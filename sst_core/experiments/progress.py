"""Progress of a chapter's runs, for a terminal that is not the notebook's.

A notebook executed by ``sst notebooks run`` / ``make book`` trains inside a papermill
kernel whose output goes into the executed notebook, so its progress bars are switched off
there (``SST_PROGRESS=0``) and the book keeps only final lines. Instead, when the kernel's
environment names a *progress file* (``SST_PROGRESS_FILE``, set by
:func:`sst_core.book.runner.run_notebook`), :func:`sst_core.experiments.runs.run_all`
writes its state there after every run or stack: what it computes (``desc``), runs done
and total, the current run. The runner reads the file while the notebook executes and
shows a bar with elapsed time and an ETA on its own terminal (:func:`read`).

The file is replaced atomically, so a reader never sees half of it.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

ENV = "SST_PROGRESS_FILE"


def report(desc: str, done: int, total: int, current: str = "") -> None:
    """Write the state of the runs in progress to ``$SST_PROGRESS_FILE`` (nothing when it
    is not set)."""
    target = os.environ.get(ENV)
    if not target:
        return
    from sst_core.store.records import write_bytes_atomic

    state = {"desc": desc, "done": int(done), "total": int(total), "current": current}
    write_bytes_atomic(Path(target), json.dumps(state).encode())


def read(path: Path) -> dict[str, Any] | None:
    """The last state written to ``path``, or None while there is none (or it is not a
    state this module wrote)."""
    try:
        state = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or not {"desc", "done", "total"} <= set(state):
        return None
    return state
